# One named rule per table and figure, declared in its study (src/depthlab/studies/<study>/
# targets.py): its fits, its outputs, its caption. In the report (`snakemake --report`) each
# figure's PNG and each table's HTML page sit under their note's category.
from depthlab.planner import built

# the cells and seeds behind every fit a target reads, as this config plans them and, for a
# report (which runs no job), as the fits on disk were measured: the Snakefile refuses a report
# whose fits differ, so that its captions (this config's seeds) are the files' (planner.built)
PLANNED_FITS, STUDY_CELLS = CATALOGUE.fit_cells()
MEASURED_FITS = (
    {fit: built.measured(fit) for fit in PLANNED_FITS}
    if START.command and START.command.report
    else {}
)


for target in CATALOGUE.targets:

    rule:
        name:
            target.name
        input:
            CATALOGUE.target_fits(target),
        output:
            **report_outputs(target),
        log:
            f"logs/render/{target.name}.log",
        localrule: True
        conda:
            "../envs/depthlab.yaml"
        params:
            name=target.name,
            options={
                k: v
                for k, v in config["studies"][target.study].get("analysis", {}).items()
                if k in target.options
            },
            caption=CATALOGUE.caption(target),
            blocks=CATALOGUE.blocks_of(target),
            seeds=CATALOGUE.seeds_of(target),
            tests=", ".join(CATALOGUE.claims_testing(target)) or "none",
            code=STUDY_HASH[target.study],
        message:
            target.description
        script:
            "../scripts/render.py"

    # the description `snakemake --list-target-rules` prints beside the name (found under its
    # own name also when a host workflow renames the rules: `use rule * ... as prefix_*`)
    getattr(rules, target.name).rule.docstring = target.description


# A declared target this config cannot build (its study or arms are not configured) is still a
# rule: asked for on the command line, the Snakefile refuses it in one line naming the config
# files that have it, before any job; asked for otherwise (a host workflow, the Python API), this
# rule fails at once with that line, instead of Snakemake's "no rule to produce"
for target in TARGETS:
    if target not in CATALOGUE.targets:

        rule:
            name:
                target.name
            log:
                f"logs/render/{target.name}.unavailable.log",
            localrule: True
            conda:
                "../envs/depthlab.yaml"
            params:
                why=target.unavailable(CATALOGUE.arms, SHIPPED_CONFIGS),
            message:
                "{params.why}"
            shell:
                "echo {params.why:q} | tee {log} >&2; exit 1"

        getattr(rules, target.name).rule.docstring = (
            f"(not in this config) {target.description}"
        )
