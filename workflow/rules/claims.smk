# The claims ledger: every claim of config/claims.yaml measured on the fits, with a verdict.


rule claims:
    """every claim of the four notes and the fixes' papers, measured, with a verdict (results/claims.md)"""
    input:
        claims=local(config["claims"]),  # relative to the working directory, not prefixed
        fits=PLAN.catalogue.ledger_fits(),
    output:
        parquet=paths.LEDGER["parquet"],
        md=paths.LEDGER["md"],
        details=paths.LEDGER["details"],
        readings=paths.LEDGER["readings"],
        html=report(
            paths.LEDGER["html"],
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
        code=PLAN.claims_hash,
        settings=PLAN.arm_settings,
        stage=config.get("protocol", {}).get("stage", "exploratory"),
        # the protocol's freeze (depthlab.claims.protocol) and its content's hash (a new freeze
        # regrades); a param, not an input: rule freeze writes it from this rule's output
        frozen=PLAN.frozen,
        frozen_hash=PLAN.frozen_hash,
    message:
        "claims: the ledger of the notes' claims, measured, with verdicts"
    script:
        "../scripts/claims.py"
