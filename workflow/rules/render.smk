# One named rule per table and figure (catalogue: src/depthlab/targets.py).

for target in STUDY_TARGETS:

    rule:
        name:
            target.name
        input:
            f"results/fits/{target.study}.parquet",
        output:
            **target.outputs,
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
