# Collect the shards of one study into one tidy table.


rule aggregate:
    input:
        study_shards,
    output:
        "results/tables/{study}.parquet",
    log:
        "logs/aggregate/{study}.log",
    localrule: True
    conda:
        "../../envs/depthlab.yaml"
    params:
        code=PACKAGE_CODE,
    script:
        "../scripts/aggregate.py"
