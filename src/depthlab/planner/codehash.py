"""Hashes of the package source, passed to rules as params so code edits rerun what they affect.

Snakemake does not see edits to a module a script imports; a rule that gets the hash of the code
behind its result as a `params:` entry is rerun when any of it changes. A part is a module or a
folder of the package, as a path relative to it ('core/model.py', 'studies/stack96'). Cheap (no
heavy imports): the Snakefile calls it at parse time.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]

# the layers every result rests on (a study's fits and renders add its own folder)
BASE = ("__init__.py", "vocabulary", "planner", "core", "analysis")
# the code a measurement's numbers come from, and a training run's
MEASURE_CODE = ("vocabulary/settings.py", "vocabulary/paths.py", "vocabulary/placements.py",
                "vocabulary/jobs.py", "vocabulary/metrics.py", "planner/grid.py",
                "planner/reuse.py", "planner/cost.py", "core/model.py", "core/probes.py",
                "core/recompute.py", "core/response.py", "core/measure.py", "core/records.py",
                "core/own_block.py", "core/prefetch.py", "core/draws.py", "core/norms.py",
                "vocabulary/inits.py", "core/hf_layers.py", "vocabulary/hf.py")
TRAIN_CODE = (*MEASURE_CODE, "vocabulary/train_settings.py", "vocabulary/corpus.py",
              "core/corpus.py", "core/train.py", "core/adamw.py", "core/io.py", "core/logs.py",
              "planner/codehash.py", "planner/provenance.py")
CALIBRATED_CODE = (*MEASURE_CODE, "core/calibrate.py")


def files_of(parts: tuple[str, ...]) -> list[Path]:
    """The .py files of the named modules and folders (recursively) that exist, sorted (a study
    without a package of its own, e.g. one a user adds to measure only, adds none)."""
    files = set()
    for part in parts:
        path = PACKAGE_DIR / part
        files.update(path.rglob("*.py") if path.is_dir() else [path] if path.is_file() else [])
    return sorted(files)


def code_hash(parts: tuple[str, ...] | None = None) -> str:
    """sha256 (first 16 hex digits) of the source files of `parts` (default: the package)."""
    digest = hashlib.sha256()
    for f in files_of(parts or ("",)):
        digest.update(str(f.relative_to(PACKAGE_DIR)).encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def study_code_hash(study: str) -> str:
    """The hash of what a study's fits and renders run: the base layers and its own package."""
    return code_hash((*BASE, f"studies/{study}"))
