# Arms with `calibrate_from`: per-layer, per-branch residual scales from another arm's run, then
# the arm's cells measured again with them (depthlab.core.calibrate; PLAN.calibrated: which arm
# each is calibrated from).


rule calibrate:
    input:
        PLAN.calibration_source,
    output:
        paths.CALIBRATION,
    log:
        "logs/calibrate/{study}/{arm}/{job}.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        code=PLAN.calibrated_hash,
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
        arm=PLAN.calibrated_arms,
    priority: PLAN.measure_priority
    conda:
        "../envs/depthlab.yaml"
    threads: config["threads"]
    resources:
        mem_mb=PLAN.measure_mem_mb,
        gpu_mem_mb=PLAN.measure_gpu_mem_mb,
        runtime=PLAN.measure_runtime,
    params:
        cells=PLAN.job_cells,
        code=PLAN.calibrated_hash,
    script:
        "../scripts/measure.py"


ruleorder: measure_calibrated > measure
