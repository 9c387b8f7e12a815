# The docs_* rules write this checkout's committed README.md and docs/: from the default run
# (depthlab.planner.documented), merged with the documented named runs' files where they were
# run (config/fixes.yaml's papers, config/scale.yaml's depths). Any other config gets rules that
# refuse with one line (a tiny run's numbers must not replace the documented ones).
from depthlab.planner.documented import (
    CONFIRM_RUNS,
    DOCUMENTED_NAMED_RUNS,
    documented_configs,
    figure_sources,
    undocumented,
)

NOT_DOCUMENTED = undocumented(
    PLAN.merged, documented_configs(PLAN.depthlab, PLAN.defaults)
)

# the figures README.md and docs/ show (docs/figures/, committed), each from this run or, for a
# study this run does not configure, from the documented named run that drew it
README_FIGURES = (
    "fig_grad_ratio_by_depth",
    "fig_increments_by_layer",
    "fig_omega_vs_theory",
    "fig_fixes_grad_ratio",
    "fig_fixes_grad_readings",
    "fig_fixes_stream_growth",
    "fig_fixes_model_update",
    "fig_fixes_update_response",
    "fig_fixes_lr_sweep",
    "fig_scale_local_exponents",
    "fig_scale_grad_ratio",
    "fig_scale_width",
)
DOC_FIGURES = figure_sources(
    [t for t in PLAN.targets if t.name in README_FIGURES],
    {t.name for t in PLAN.catalogue.targets},
)

# the documented named runs' ledgers, which docs/RESULTS.md merges with this run's: one verdict
# per sentence (depthlab.claims.merge); the exploratory runs' and the confirmatory runs'
# (config/confirm*.yaml), relative to this run's folder, where they were run
DOCUMENTED_LEDGERS = [
    f"runs/{name}/{paths.LEDGER['parquet']}" for name in DOCUMENTED_NAMED_RUNS
]
CONFIRM_LEDGERS = [f"runs/{name}/{paths.LEDGER['parquet']}" for name in CONFIRM_RUNS]


# every figure of the run as thumbnails on one page, to look the run over at a glance (a rule,
# not a declared target: a declaration belongs to one study and draws from its fits, while the
# sheet reads the rendered figures of every study)
rule fig_contact_sheet:
    """every figure of the run as thumbnails on one page (PNG)"""
    input:
        [t.outputs["png"] for t in PLAN.catalogue.targets if t.kind == "figure"],
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


if NOT_DOCUMENTED:

    for name in ("docs_figures", "docs_results", "freeze"):

        rule:
            name:
                name
            log:
                f"logs/{name}.refused.log",
            localrule: True
            params:
                why=f"{name}: {NOT_DOCUMENTED}",
            message:
                "{params.why}"
            shell:
                "echo {params.why:q} | tee {log} >&2; exit 1"

else:

    rule docs_figures:
        """copy the README's key figures to docs/figures/"""
        input:
            list(DOC_FIGURES.values()),
        output:
            [f"docs/figures/{stem}.png" for stem in DOC_FIGURES],
        log:
            "logs/docs_figures.log",
        localrule: True
        conda:
            "../envs/depthlab.yaml"
        message:
            "docs_figures: the README's key figures, copied to docs/figures/"
        script:
            "../scripts/copy_files.py"

    # docs/RESULTS.md from this run's ledger, and (in place, between its markers) the README's
    # summary line: committed, run on the default study, so the prose cannot drift from the data
    rule docs_results:
        """docs/RESULTS.md and the README's summary line from results/claims.parquet"""
        input:
            ledger=paths.LEDGER["parquet"],
            readings=paths.LEDGER["readings"],
            rules=f"{PLAN.depthlab}/docs/claims_rules.md",
            # the confirmatory runs' ledgers (config/confirm*.yaml), the headline where run
            confirm=PLAN.existing(CONFIRM_LEDGERS),
            # the documented named runs' ledgers, merged in where they were run
            runs=PLAN.existing(DOCUMENTED_LEDGERS),
        output:
            results=f"{PLAN.depthlab}/docs/RESULTS.md",
        log:
            "logs/docs_results.log",
        localrule: True
        conda:
            "../envs/depthlab.yaml"
        params:
            # the config files of this run, named in docs/RESULTS.md (which run graded what)
            configs=PLAN.config_files,
        message:
            "docs_results: docs/RESULTS.md and the README's summary line from the ledger"
        script:
            "../scripts/results_doc.py"

    # config/frozen.yaml: the protocol's choices from the exploratory run (its identification of
    # the notes' open settings), the confirmatory pool and the rules' fingerprint; committed
    # before the confirmatory runs (docs/claims_rules.md, "The protocol")
    rule freeze:
        """freeze the exploratory run's choices into config/frozen.yaml (the protocol)"""
        input:
            claims=local(config["claims"]),
            ledger=paths.LEDGER["parquet"],
            readings=paths.LEDGER["readings"],
            runs=PLAN.existing(DOCUMENTED_LEDGERS),
            # the confirmatory ledgers graded at an earlier freeze: its pool is spent
            confirm=PLAN.existing(CONFIRM_LEDGERS),
        output:
            frozen=PLAN.frozen,
        log:
            "logs/freeze.log",
        localrule: True
        conda:
            "../envs/depthlab.yaml"
        params:
            why="the exploratory runs' identification of the notes' open settings",
            # the freeze before this one (its history of spent pools), read when the workflow
            # is parsed: Snakemake removes a job's output before the job runs
            before=PLAN.frozen_before,
        message:
            "freeze: the exploratory run's choices into {output.frozen}"
        script:
            "../scripts/freeze.py"
