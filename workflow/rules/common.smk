# Helpers shared by every stage: config parsing, the job catalogue, code hashes.
import json
import sys

sys.path.insert(0, f"{workflow.basedir}/src")

from depthlab.codehash import MEASURE_MODULES, code_hash
from depthlab.grid import study_jobs
from depthlab.settings import ConfigError
from depthlab.targets import TARGETS

try:
    JOBS = {(j.study, j.arm, j.job): j for j in study_jobs(config)}
except ConfigError as err:
    raise ValueError(f"invalid config: {err}") from None

MEASURE_CODE = code_hash(MEASURE_MODULES)
PACKAGE_CODE = code_hash()
STUDY_TARGETS = [t for t in TARGETS if t.study in config["studies"]]


wildcard_constraints:
    study="[A-Za-z0-9]+",
    arm="[A-Za-z0-9_]+",
    job="[^/]+",


def job_cells(wildcards):
    """The cells of one measure job as a sorted JSON string (a change reruns the job)."""
    job = JOBS[(wildcards.study, wildcards.arm, wildcards.job)]
    return json.dumps(
        [{"label": c.label, **c.settings.as_columns()} for c in job.cells],
        sort_keys=True,
    )


def study_shards(wildcards):
    """Every shard of one study."""
    return [j.shard for j in JOBS.values() if j.study == wildcards.study]


def all_targets():
    """Every output of every target whose study is configured."""
    return [path for t in STUDY_TARGETS for path in t.outputs.values()]
