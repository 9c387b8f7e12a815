# depthlab's workflow is workflow/Snakefile (the Snakemake workflow catalog's layout); this file
# lets `snakemake` run from the repository root with the same commands.
include: "workflow/Snakefile"


# an included file's `default_target` does not carry over to the including one: `snakemake`
# with no target builds workflow/Snakefile's `all` through this rule
rule default:
    """`snakemake` from the repository root: everything `all` builds"""
    default_target: True
    input:
        rules.all.input,
