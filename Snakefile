# depthlab: what depth does to a transformer stack, measured reproducibly.
# Stages: measure (fan-out) -> fit (per arm) -> render, and the claims ledger. See README.md and
# config/README.md; docs/ARCHITECTURE.md says where each thing is defined.
from snakemake.utils import min_version

min_version("9.0")

# this workflow's own folder: the paths below are built from it, so the workflow also works as
# a module of another workflow (README.md, "Use depthlab in your own workflow")
DEPTHLAB = workflow.current_basedir


# the full study unless the command line or a host workflow gives a config with `studies`
# (--configfile config/tiny.yaml); `--config key=value` alone (e.g. threads=1) still reads it
if "studies" not in config:

    configfile: f"{DEPTHLAB}/config/config.yaml"


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
