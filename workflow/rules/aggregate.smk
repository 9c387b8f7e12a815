# Collect the shards of one study into one tidy table (results/tables/<study>.parquet).


rule aggregate:
    input:
        lambda w: shards(w.study),
    output:
        "results/tables/{study}.parquet",
    log:
        "logs/aggregate/{study}.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        code=BASE_HASH,
    script:
        "../scripts/aggregate.py"
