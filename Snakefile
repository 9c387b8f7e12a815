# depthlab: what depth does to a transformer stack, measured reproducibly.
# Stages: measure (fan-out) -> aggregate -> fit -> render. See README.md and config/README.md.
from snakemake.utils import min_version, validate

min_version("9.0")


# the full study unless the command line gives a config (--configfile config/tiny.yaml)
if not config:

    configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/fit.smk"
include: "workflow/rules/render.smk"


rule all:
    default_target: True
    input:
        all_targets(),
