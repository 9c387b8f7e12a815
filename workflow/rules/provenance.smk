# How the run was made: the config, and every Parquet file's provenance, in one JSON file.

# the config as results/provenance.json records it (the report checks it is this run's)
CONFIG_TEXT = json.dumps(config, sort_keys=True)


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
        config=CONFIG_TEXT,
        code=BASE_HASH,
    script:
        "../scripts/provenance.py"
