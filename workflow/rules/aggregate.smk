# Collect the shards of one study into one tidy table (results/tables/<study>.parquet).


rule aggregate:
    input:
        lambda w: PLAN.catalogue.shards(w.study),
    output:
        paths.TABLE,
    log:
        "logs/aggregate/{study}.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        code=PLAN.base_hash,
    script:
        "../scripts/aggregate.py"
