"""What every file the pipeline writes says about how it was made: code hashes, versions and
the git commit, and for a compute job's shard the hash of the config text that defines it
(depthlab.core.io.PROVENANCE_KEYS). Versions come from installed metadata, so that the jobs
that only read and write tables import no torch for it."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess

from depthlab.core.io import config_hash
from depthlab.planner.codehash import MEASURE_CODE, PACKAGE_DIR, code_hash


def git_commit() -> str:
    """The commit of the working tree, or '' outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=PACKAGE_DIR,
            check=False, timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def provenance(extra: dict | None = None) -> dict[str, str]:
    """Versions and hashes that identify how a result was made; `extra` adds what it was made
    from (config_hash, dtype, device: depthlab.core.io.inherited)."""
    info = {
        "depthlab_code_hash": code_hash(),
        "measure_code_hash": code_hash(MEASURE_CODE),
        "torch_version": importlib.metadata.version("torch"),
        "python_version": platform.python_version(),
        "pyarrow_version": importlib.metadata.version("pyarrow"),
        "git_commit": git_commit(),
    }
    info.update({k: str(v) for k, v in (extra or {}).items()})
    return info


def job_provenance(job, config_text: str, threads: int) -> dict[str, str]:
    """provenance() of a compute job's shard: the hash of the config text that defines the job
    (its cells, and its training settings for a train job), the dtype and device of its first
    cell, and the threads it ran on."""
    first = job.cells[0].settings
    return provenance({"config_hash": config_hash(config_text), "dtype": first.dtype,
                       "device": first.device, "threads": threads})
