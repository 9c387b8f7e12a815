# Helpers shared by every stage: config parsing, the job catalogue, code hashes.
import dataclasses
import hashlib
import inspect
import json
import os
import sys
from pathlib import Path

import yaml

from snakemake.utils import validate

# (the Snakefile puts this workflow's src/ first on sys.path and PYTHONPATH: the package hashed
# below is the one jobs import)
from depthlab.claims.schema import load_claims
from depthlab.vocabulary import paths
from depthlab.planner import resources
from depthlab.planner.catalogue import Catalogue, unshared
from depthlab.planner.codehash import BASE, MEASURE_CODE, code_hash, study_code_hash
from depthlab.planner.grid import arm_settings
from depthlab.planner.documented import shipped_configs
from depthlab.planner.reuse import owner_shards, reuse
from depthlab.planner.startup import anchored
from depthlab.vocabulary.settings import ConfigError
from depthlab.planner.validate import (
    check_config,
    reject_misspelt_arms,
    reject_off_grid_options,
)
from depthlab.studies import STUDIES, TARGETS

# a named run works in its own folder (the Snakefile's `workdir:`): the config's relative paths
# name files relative to where snakemake was started, so they are made relative to that folder
# (absolute from a dry run's throwaway folder, which lies elsewhere)
anchored(config, STARTED_IN, absolute=THROWAWAY)
# the default claims file (this workflow's own), checked too (validate() fills defaults later)
config.setdefault(
    "claims",
    (
        os.path.relpath(f"{DEPTHLAB}/config/claims.yaml")
        if DEPTHLAB
        else str(workflow.source_path("../../config/claims.yaml"))
    ),
)
try:
    CLAIMS = load_claims(config["claims"])
    reject_misspelt_arms(config, TARGETS, CLAIMS)
    CATALOGUE = Catalogue(
        config, check_config(config, SCHEMA, STUDIES), TARGETS, CLAIMS["claims"]
    )
    reject_off_grid_options(config, list(CATALOGUE.jobs.values()), CATALOGUE.targets)
except ConfigError as err:
    config_error(err)  # one line (the Snakefile's), before any job runs
validate(config, SCHEMA)  # passes now; fills the schema's defaults
if config.get("run") == {}:
    # no named run: the config that provenance records stays as it was before `run` existed
    del config["run"]
JOBS = CATALOGUE.jobs

# cells whose numbers another job's cell gives are copied from its shard, not measured again
# (depthlab.planner.reuse); calibrated arms and training studies are never shared
REUSED = reuse(list(JOBS.values()), unshared(config))
MEASURE_HASH = code_hash(MEASURE_CODE)
BASE_HASH = code_hash(BASE)
STUDY_HASH = {study: study_code_hash(study) for study in config["studies"]}
CLAIMS_HASH = code_hash((*BASE, "claims"))
# the protocol's freeze (config/frozen.yaml beside the claims file), read by the claims rule:
# an exploratory run is graded at it where it holds, a confirmatory run only at it
FROZEN = os.path.join(os.path.dirname(config["claims"]), "frozen.yaml")


def file_hash(path):
    """sha256 of a file's bytes (16 hex digits), '' where it does not exist."""
    if not os.path.exists(path):
        return ""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


# the config files shipped in config/ (a target this config cannot build names those that can)
# (none where the workflow is loaded by URL: its config/ cannot be listed)
SHIPPED_CONFIGS = shipped_configs(DEPTHLAB, DEFAULT_CONFIG) if DEPTHLAB else {}
# what each arm's cells share, as sorted JSON: the ledger's comparability with the notes
ARM_SETTINGS = json.dumps(arm_settings(list(JOBS.values())), sort_keys=True)


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


def job_of(wildcards):
    """The measure or train job a rule's wildcards name."""
    return JOBS[(wildcards.study, wildcards.arm, wildcards.job)]


@signature_cached
def job_cells(wildcards):
    """The cells of one measure job as a sorted JSON string (a change reruns the job)."""
    return job_of(wildcards).cells_json()


def copied_cells(wildcards):
    """The cells a measure job copies from other jobs' shards, label -> Source (REUSED)."""
    return REUSED.get((wildcards.study, wildcards.arm, wildcards.job), {})


@signature_cached
def job_owners(wildcards):
    """The shards a measure job copies cells from (their owners measure them), in the order
    of depthlab.planner.reuse.owner_shards."""
    return owner_shards(copied_cells(wildcards).values())


@signature_cached
def job_reused(wildcards):
    """The cells a measure job copies, label -> [study, arm, job, label] of the owner, as
    sorted JSON (a change reruns the job)."""
    copies = copied_cells(wildcards)
    return json.dumps(
        {label: dataclasses.astuple(source) for label, source in copies.items()},
        sort_keys=True,
    )


@signature_cached
def measure_mem_mb(wildcards, attempt):
    """Memory request of one measure job in MB (depthlab.planner.resources), more on each
    retry."""
    job, copied = job_of(wildcards), copied_cells(wildcards)
    return resources.mem_mb(resources.measure_mb(job, copied), attempt)


@signature_cached
def measure_gpu_mem_mb(wildcards, attempt):
    """Device memory of one measure job on a GPU in MB (depthlab.planner.resources.device_mb,
    a bound: no margin), more on each retry; 0 on the CPU."""
    job, copied = job_of(wildcards), copied_cells(wildcards)
    return resources.mem_mb(resources.device_mb(job, copied), attempt, margin=1.0)


# each measure job's predicted seconds, and its priority: the scheduler starts the ready jobs
# of highest priority, so the longest chains of measure jobs go first and short jobs fill the
# cores at the end of a run, not a long one alone on a core
LONGEST_FIRST = resources.LongestFirst(JOBS, REUSED)


@signature_cached
def measure_runtime(wildcards, attempt):
    """Runtime request of one measure job in minutes (depthlab.planner.resources)."""
    key = (wildcards.study, wildcards.arm, wildcards.job)
    return resources.runtime_min(LONGEST_FIRST.own(key), attempt)


@signature_cached
def measure_priority(wildcards):
    """A measure job's predicted seconds plus the longest chain of jobs that copy from it."""
    return round(LONGEST_FIRST((wildcards.study, wildcards.arm, wildcards.job)))


def train_mem_mb(wildcards, attempt):
    """Memory request of one train job in MB (depthlab.planner.resources)."""
    return resources.mem_mb(resources.train_mb(job_of(wildcards)), attempt)


def train_gpu_mem_mb(wildcards, attempt):
    """Device memory of one train job on a GPU in MB (resources.train_device_mb); 0 on the
    CPU."""
    return resources.mem_mb(
        resources.train_device_mb(job_of(wildcards)), attempt, margin=1.0
    )


def train_seconds(wildcards):
    """Predicted seconds of one train job on a core, or on its device by the speeds fitted
    there (depthlab.planner.resources; TRAINING is set in train.smk)."""
    job = job_of(wildcards)
    return resources.train_seconds(job, TRAINING[(job.study, job.arm)])


def train_runtime(wildcards, attempt):
    """Runtime request of one train job in minutes."""
    return resources.runtime_min(train_seconds(wildcards), attempt)


@signature_cached
def train_priority(wildcards):
    """Longest first, on measure_priority's scale: the predicted seconds."""
    return round(train_seconds(wildcards))


def job_training(wildcards):
    """The training settings of a train job's arm as a sorted JSON string (TRAINING is set in
    train.smk; a change reruns the job)."""
    settings = TRAINING[(wildcards.study, wildcards.arm)]
    return json.dumps(dataclasses.asdict(settings), sort_keys=True)


def arm_axes(wildcards):
    """The axis names of every arm of the study, as sorted JSON (the fit reads them)."""
    arms = config["studies"][wildcards.study]["arms"]
    return json.dumps(
        {arm: list(spec["axes"]) for arm, spec in arms.items()}, sort_keys=True
    )


def report_outputs(target):
    """A target's outputs, the one the report shows (a figure's PNG, a table's HTML page)
    wrapped in report() under its note's category; its caption is the declaration's
    (workflow/report/target.rst renders params.caption)."""
    shown = "png" if target.kind == "figure" else "html"
    outputs = dict(target.outputs)
    outputs[shown] = report(
        outputs[shown],
        caption="../report/target.rst",
        category=target.study,
        subcategory=f"{target.kind}s",
        labels={"name": target.name, "type": target.kind},
    )
    return outputs


def remeasured_shards():
    """(shard, whether its cells' settings changed) for each measure or train job that runs
    again because its params changed since its shard was made (Snakemake's reason for it);
    called once the jobs are planned (the console's `planned`)."""
    out = []
    for job in workflow.dag.needrun_jobs():
        if job.rule.name not in ("measure", "measure_calibrated", "train"):
            continue
        changed = workflow.dag.reason(job).params_changed
        if changed:
            code = str(job.params.code)
            out.append(
                (job.output[0], any(code not in str(v) for v in changed.only_new))
            )
    return out


def existing(files):
    """The files of a list that exist (an input function: read when the DAG is built)."""
    return lambda w: [p for p in files if os.path.exists(p)]
