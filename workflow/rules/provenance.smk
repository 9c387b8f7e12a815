# How the run was made: the config, and every Parquet file's provenance, in one JSON file.


rule provenance:
    """the config and every Parquet file's provenance (results/provenance.json)"""
    input:
        CATALOGUE.provenance_inputs(),
    output:
        paths.PROVENANCE,
    log:
        "logs/provenance.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        config=json.dumps(config, sort_keys=True),
        code=BASE_HASH,
    script:
        "../scripts/provenance.py"
