# One named rule per table and figure, declared in its study (src/depthlab/studies/<study>/
# targets.py): its fits, its outputs, its caption. In the report (`snakemake --report`) each
# figure's PNG and each table's HTML page sit under their note's category.


for target in PLAN.catalogue.targets:

    rule:
        name:
            target.name
        input:
            PLAN.catalogue.target_fits(target),
        output:
            **PLAN.report_outputs(target, report),
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
            caption=PLAN.catalogue.caption(target),
            blocks=PLAN.catalogue.blocks_of(target),
            seeds=PLAN.catalogue.seeds_of(target),
            tests=", ".join(PLAN.catalogue.claims_testing(target)) or "none",
            code=PLAN.study_hash[target.study],
        message:
            target.description
        script:
            "../scripts/render.py"

    # the description `snakemake --list-target-rules` prints beside the name (found under its
    # own name also when a host workflow renames the rules: `use rule * ... as prefix_*`)
    getattr(rules, target.name).rule.docstring = target.description


# A declared target this config cannot build (its study or arms are not configured) is still a
# rule: asked for on the command line, the plan refuses it in one line naming the config
# files that have it, before any job; asked for otherwise (a host workflow, the Python API), this
# rule fails at once with that line, instead of Snakemake's "no rule to produce"
for target in PLAN.targets:
    if target not in PLAN.catalogue.targets:

        rule:
            name:
                target.name
            log:
                f"logs/render/{target.name}.unavailable.log",
            localrule: True
            conda:
                "../envs/depthlab.yaml"
            params:
                # a function: the shipped configs are read only if this rule is asked for
                why=lambda wildcards, target=target: target.unavailable(
                    PLAN.catalogue.arms, PLAN.shipped_configs, PLAN.catalogue.grid
                ),
            message:
                "{params.why}"
            shell:
                "echo {params.why:q} | tee {log} >&2; exit 1"

        getattr(rules, target.name).rule.docstring = (
            f"(not in this config) {target.description}"
        )
