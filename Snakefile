# depthlab: what depth does to a transformer stack, measured reproducibly.
# Stages: measure (fan-out) -> aggregate -> fit -> render, and the claims ledger. See README.md and config/README.md.
from snakemake.utils import min_version

min_version("9.0")


# the full study unless the command line gives a config file (--configfile config/tiny.yaml);
# `--config key=value` alone (e.g. corpus_path=...) still reads it
if "studies" not in config:

    configfile: "config/config.yaml"


# common.smk validates the config (one line naming the bad key and value, then exit) first
include: "workflow/rules/common.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/calibrate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/fit.smk"
include: "workflow/rules/render.smk"
include: "workflow/rules/provenance.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/report.smk"


# `snakemake --report results/report.html`: its first page (the claims), then the figures and
# tables under a category per note
report: "workflow/report/workflow.rst"


rule all:
    """every table, figure and the claims ledger of the configured studies"""
    default_target: True
    input:
        all_targets(),
        "results/provenance.json",
