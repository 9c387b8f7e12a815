"""Hashes of the package source, passed to rules as params so code edits rerun what they affect.

Snakemake does not see edits to a module a script imports; a rule that gets the hash of the
modules behind its result as a `params:` entry is rerun when any of them changes. Cheap (no
heavy imports): the Snakefile calls it at parse time.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent

# the modules a measurement depends on; fits and renders depend on the whole package
MEASURE_MODULES = ("settings", "grid", "model", "probes", "measure")


def code_hash(modules: tuple[str, ...] | None = None) -> str:
    """sha256 (first 16 hex digits) of the package's source files, or of the named modules."""
    files = sorted(PACKAGE_DIR.glob("*.py"))
    if modules is not None:
        files = [f for f in files if f.stem in modules]
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()[:16]
