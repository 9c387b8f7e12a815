# Copies of the key figures for the README (docs/figures/, committed): those of the configured
# studies (the default run's three; the fixes study's with config/fixes.yaml; the scale study's
# with config/scale.yaml)
README_FIGURES = (
    "fig_grad_ratio_by_depth",
    "fig_increments_by_layer",
    "fig_omega_vs_theory",
    "fig_fixes_grad_ratio",
    "fig_fixes_grad_readings",
    "fig_fixes_stream_growth",
    "fig_fixes_model_update",
    "fig_scale_local_exponents",
    "fig_scale_grad_ratio",
    "fig_scale_width",
)
DOC_FIGURES = [t for t in CATALOGUE.targets if t.name in README_FIGURES]


rule docs_figures:
    """copy the README's key figures from results/figures/ to docs/figures/"""
    input:
        [t.outputs["png"] for t in DOC_FIGURES],
    output:
        [f"docs/figures/{t.stem}.png" for t in DOC_FIGURES],
    log:
        "logs/docs_figures.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    message:
        "docs_figures: the README's key figures, copied to docs/figures/"
    script:
        "../scripts/copy_files.py"


# every figure of the run as thumbnails on one page, to look the run over at a glance (a rule,
# not a declared target: a declaration belongs to one study and draws from its fits, while the
# sheet reads the rendered figures of every study)
rule fig_contact_sheet:
    """every figure of the run as thumbnails on one page (PNG)"""
    input:
        [t.outputs["png"] for t in CATALOGUE.targets if t.kind == "figure"],
    output:
        "results/figures/contact_sheet.png",
    log:
        "logs/render/fig_contact_sheet.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    message:
        "fig_contact_sheet: every figure of the run on one page"
    script:
        "../scripts/contact_sheet.py"


# the ledger of the named run `confirm` (config/confirm.yaml), relative to this run's folder
CONFIRM_LEDGER = f"runs/confirm/{paths.LEDGER['parquet']}"
# the documented named runs whose ledgers docs/RESULTS.md merges with this run's, one verdict
# per sentence (depthlab.claims.merge): config/fixes.yaml's papers, config/scale.yaml's depths
DOCUMENTED_LEDGERS = [
    f"runs/{name}/{paths.LEDGER['parquet']}" for name in ("fixes", "scale")
]


# docs/RESULTS.md from this run's ledger, and (in place, between its markers) the README's
# summary line: committed, run on the default study, so the prose cannot drift from the data
rule docs_results:
    """docs/RESULTS.md and the README's summary line from results/claims.parquet"""
    input:
        ledger=paths.LEDGER["parquet"],
        readings=paths.LEDGER["readings"],
        rules=f"{DEPTHLAB}/docs/claims_rules.md",
        # the confirmatory run's ledger (config/confirm.yaml), set beside it where it was run
        confirm=lambda w: [CONFIRM_LEDGER] if os.path.exists(CONFIRM_LEDGER) else [],
        # the documented named runs' ledgers, merged in where they were run
        runs=lambda w: [p for p in DOCUMENTED_LEDGERS if os.path.exists(p)],
    output:
        results=f"{DEPTHLAB}/docs/RESULTS.md",
    log:
        "logs/docs_results.log",
    localrule: True
    conda:
        "../envs/depthlab.yaml"
    params:
        # the config files of this run, named in docs/RESULTS.md (which run graded what)
        configs=[os.path.relpath(f, DEPTHLAB) for f in workflow.configfiles],
    message:
        "docs_results: docs/RESULTS.md and the README's summary line from the ledger"
    script:
        "../scripts/results_doc.py"
