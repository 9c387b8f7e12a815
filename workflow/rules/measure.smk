# Fan-out: one job per (study, arm, job id); all seeds of its cells run batched inside it.


rule measure:
    input:
        owners=PLAN.job_owners,
    output:
        paths.SHARD,
    log:
        paths.job_log("measure"),
    benchmark:
        paths.benchmark("measure")
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
        reused=PLAN.job_reused,
        code=PLAN.measure_hash,
    script:
        "../scripts/measure.py"
