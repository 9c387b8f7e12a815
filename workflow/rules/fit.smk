# Per-seed statistics, then across seeds: medians, spreads, CIs, exponents, budgets.


rule fit:
    input:
        "results/tables/{study}.parquet",
    output:
        "results/fits/{study}.parquet",
    log:
        "logs/fit/{study}.log",
    localrule: True
    conda:
        "../../envs/depthlab.yaml"
    params:
        code=PACKAGE_CODE,
    script:
        "../scripts/fit.py"
