# Helpers shared by every stage: config parsing, the job catalogue, code hashes.
import dataclasses
import inspect
import json
import os
import sys

from snakemake.utils import validate

# the package in this workflow's src/ is the one hashed below AND the one jobs import
# (scripts otherwise import whatever `pip install -e` points at)
sys.path.insert(0, f"{workflow.basedir}/src")
os.environ.update(
    PYTHONPATH=os.pathsep.join(
        [f"{workflow.basedir}/src", *filter(None, [os.environ.get("PYTHONPATH")])]
    )
)

from depthlab import cost
from depthlab.claims_schema import load_claims
from depthlab.codehash import MEASURE_MODULES, code_hash
from depthlab.settings import ConfigError
from depthlab.targets import TARGETS
from depthlab.validate import check_config

SCHEMA = f"{workflow.basedir}/workflow/schemas/config.schema.yaml"
# the default claims file is checked too (validate() below would fill it in only afterwards)
config.setdefault("claims", "config/claims.yaml")
try:
    JOBS = {(j.study, j.arm, j.job): j for j in check_config(config, SCHEMA)}
except ConfigError as err:
    sys.exit(f"config error: {err}")  # one line, no traceback, before any job runs
validate(config, SCHEMA)  # passes now; fills the schema's defaults

MEASURE_CODE = code_hash(MEASURE_MODULES)
PACKAGE_CODE = code_hash()
STUDY_TARGETS = [t for t in TARGETS if t.study in config["studies"]]
# the fits the claims ledger reads: its studies that this config fits (none: no ledger)
CLAIMED = {entry["measure"].get("fit") for entry in load_claims(config["claims"])}
CLAIM_FITS = sorted(CLAIMED & {t.study for t in STUDY_TARGETS})
CLAIMS_OUTPUTS = ["results/claims.parquet", "results/claims.md", "results/claims.html"]


wildcard_constraints:
    study="[A-Za-z0-9]+",
    arm="[A-Za-z0-9_]+",
    job="[^/]+",


def signature_cached(fn):
    """Snakemake inspects a job function's signature at every call, several times per job;
    inspect.signature returns fn.__signature__ when set, which keeps the DAG of large grids fast
    (benchmarks/: `snakemake -n` of 5,000 jobs)."""
    fn.__signature__ = inspect.signature(fn)
    return fn


@signature_cached
def job_cells(wildcards):
    """The cells of one measure job as a sorted JSON string (a change reruns the job)."""
    return JOBS[(wildcards.study, wildcards.arm, wildcards.job)].cells_json()


@signature_cached
def measure_mem_mb(wildcards, attempt):
    """Memory request of one measure job in MB (depthlab.cost.mem_mb), more on each retry."""
    return cost.mem_mb(JOBS[(wildcards.study, wildcards.arm, wildcards.job)], attempt)


@signature_cached
def measure_runtime(wildcards, attempt):
    """Runtime request of one measure job in minutes (depthlab.cost.runtime_min)."""
    return cost.runtime_min(
        JOBS[(wildcards.study, wildcards.arm, wildcards.job)], attempt
    )


def job_training(wildcards):
    """The training settings of a train job's arm as a sorted JSON string (TRAINING is set in
    train.smk; a change reruns the job)."""
    settings = TRAINING[(wildcards.study, wildcards.arm)]
    return json.dumps(dataclasses.asdict(settings), sort_keys=True)


def study_shards(wildcards):
    """Every shard of one study."""
    return [j.shard for j in JOBS.values() if j.study == wildcards.study]


def provenance_inputs():
    """Every Parquet file the default target makes: each job's shard, each study's table, and
    the fits of the studies that have targets."""
    fitted = sorted({t.study for t in STUDY_TARGETS})
    return (
        [j.shard for j in JOBS.values()]
        + [f"results/tables/{study}.parquet" for study in config["studies"]]
        + [f"results/fits/{study}.parquet" for study in fitted]
        + (["results/claims.parquet"] if CLAIM_FITS else [])
    )


def all_targets():
    """Every output of every target whose study is configured, and the claims ledger when a
    claim can be measured on this config."""
    targets = [path for t in STUDY_TARGETS for path in t.outputs.values()]
    return targets + (CLAIMS_OUTPUTS if CLAIM_FITS else [])


def report_outputs(target):
    """A target's outputs, the one the report shows (a figure's PNG, a table's HTML page)
    wrapped in report() under its note's category with its caption."""
    shown = "png" if target.kind == "figure" else "html"
    outputs = dict(target.outputs)
    outputs[shown] = report(
        outputs[shown],
        caption=f"../report/{target.name}.rst",
        category=target.study,
        subcategory=f"{target.kind}s",
        labels={"name": target.name, "type": target.kind},
    )
    return outputs
