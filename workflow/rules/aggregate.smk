# Collect the shards of one study into one tidy table (results/tables/<study>.parquet).


rule aggregate:
    input:
        lambda w: CATALOGUE.shards(w.study),
    output:
        paths.TABLE,
    log:
        "logs/aggregate/{study}.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        code=BASE_HASH,
    script:
        "../scripts/aggregate.py"
