# How the run was made: the config, and every Parquet file's provenance, in one JSON file.


rule provenance:
    """the config and every Parquet file's provenance (results/provenance.json)"""
    input:
        PLAN.catalogue.provenance_inputs(),
    output:
        paths.PROVENANCE,
    log:
        "logs/provenance.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        config=PLAN.config_text,
        code=PLAN.base_hash,
    script:
        "../scripts/provenance.py"
