# The claims ledger: every claim of config/claims.yaml measured on the fits, with a verdict.


rule claims:
    """every claim of the four notes and the fixes' papers, measured, with a verdict (results/claims.md)"""
    input:
        claims=local(config["claims"]),  # relative to the working directory, not prefixed
        fits=[path for study in CLAIM_FITS for path in study_fits(study)],
    output:
        parquet="results/claims.parquet",
        md="results/claims.md",
        readings="results/claims_readings.csv",
        html=report(
            "results/claims.html",
            caption="../report/claims.rst",
            category="claims",
            subcategory="ledger",
            labels={"name": "claims", "type": "table"},
        ),
    log:
        "logs/claims.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        code=CLAIMS_HASH,
        settings=ARM_SETTINGS,
    message:
        "claims: the ledger of the notes' claims, measured, with verdicts"
    script:
        "../scripts/claims.py"
