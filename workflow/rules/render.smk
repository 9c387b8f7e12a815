# One named rule per table and figure (catalogue: src/depthlab/targets.py). In the report
# (`snakemake --report`) each figure's PNG and each table's HTML page sit under their note's
# category, with the caption workflow/report/<rule name>.rst.

for target in STUDY_TARGETS:

    rule:
        name:
            target.name
        input:
            f"results/fits/{target.study}.parquet",
        output:
            **report_outputs(target),
        log:
            f"logs/render/{target.name}.log",
        localrule: True
        conda:
            "../../envs/depthlab.yaml"
        params:
            name=target.name,
            analysis=config["studies"][target.study].get("analysis", {}),
            code=PACKAGE_CODE,
        message:
            target.description
        script:
            "../scripts/render.py"

    # the description `snakemake --list-target-rules` prints beside the name
    workflow.get_rule(target.name).docstring = target.description
