# Per-seed statistics, then across seeds: medians, spreads, CIs, exponents, budgets; one fit per
# arm, so a table or figure depends only on the arms it reads.


rule fit:
    input:
        lambda w: PLAN.catalogue.shards(w.study, [w.arm]),
    output:
        paths.FIT,
    log:
        "logs/fit/{study}/{arm}.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        axes=PLAN.arm_axes,
        code=PLAN.study_code,
    script:
        "../scripts/fit.py"
