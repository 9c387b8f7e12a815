# Fan-out: one job per (study, arm, job id); all seeds of its cells run batched inside it.


rule measure:
    input:
        owners=job_owners,
    output:
        paths.SHARD,
    log:
        paths.job_log("measure"),
    benchmark:
        paths.benchmark("measure")
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
        reused=job_reused,
        code=MEASURE_HASH,
    script:
        "../scripts/measure.py"
