# Arms with `calibrate_from`: per-layer, per-branch residual scales from another arm's run, then
# the arm's cells measured again with them (depthlab.core.calibrate).
from depthlab.planner.calibration import calibrated_arms
from depthlab.planner.codehash import CALIBRATED_CODE

try:
    CALIBRATED = calibrated_arms(config, JOBS)
except ConfigError as err:
    config_error(err)  # one line (the Snakefile's), before any job runs


rule calibrate:
    input:
        lambda w: JOBS[(w.study, CALIBRATED[(w.study, w.arm)], w.job)].shard,
    output:
        paths.CALIBRATION,
    log:
        "logs/calibrate/{study}/{arm}/{job}.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        code=code_hash(CALIBRATED_CODE),
    script:
        "../scripts/calibrate.py"


# the measure rule of calibrated arms only ("(?!)" matches nothing when there are none)
rule measure_calibrated:
    input:
        calibration=paths.CALIBRATION,
    output:
        paths.SHARD,
    log:
        paths.job_log("measure"),
    benchmark:
        paths.benchmark("measure")
    wildcard_constraints:
        arm="|".join(sorted({arm for _, arm in CALIBRATED})) or "(?!)",
    priority: measure_priority
    conda:
        "../envs/depthlab.yaml"
    threads: config["threads"]
    resources:
        mem_mb=measure_mem_mb,
        gpu_mem_mb=measure_gpu_mem_mb,
        runtime=measure_runtime,
    params:
        cells=job_cells,
        code=code_hash(CALIBRATED_CODE),
    script:
        "../scripts/measure.py"


ruleorder: measure_calibrated > measure
