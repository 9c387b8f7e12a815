"""Atomic file output and provenance metadata (what a file's provenance holds is made by
depthlab.planner.provenance).

Every file is written to a temporary name in its target folder and renamed into place, so an
interrupted job never leaves a file that looks complete. Every Parquet file carries, under the
'depthlab' key of its schema metadata, PROVENANCE_KEYS: how it was made (code hashes, versions,
git commit) and from what (config hash, dtype, device).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

# the keys every Parquet file of the pipeline carries (a test checks them)
PROVENANCE_KEYS = (
    "config_hash", "depthlab_code_hash", "measure_code_hash", "torch_version", "python_version",
    "dtype", "device", "git_commit",
)
# the keys a result inherits from the files it is made from
INHERITED_KEYS = ("config_hash", "dtype", "device")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it to `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make results private to their writer
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_parquet(frame: pd.DataFrame, path: str | Path, meta: dict[str, str]) -> None:
    """Write `frame` atomically with `meta` stored under the 'depthlab' key of the schema;
    `meta` must hold every PROVENANCE_KEYS entry (see provenance)."""
    missing = [k for k in PROVENANCE_KEYS if k not in meta]
    if missing:
        raise ValueError(f"{path}: provenance metadata lacks {missing}")
    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema_meta = dict(table.schema.metadata or {})
    schema_meta[b"depthlab"] = json.dumps(meta, sort_keys=True).encode()
    table = table.replace_schema_metadata(schema_meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_meta(path: str | Path) -> dict[str, str]:
    """The 'depthlab' provenance metadata of a Parquet file."""
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(b"depthlab", b"{}"))


def config_hash(text: str) -> str:
    """sha256 (first 16 hex digits) of a config's canonical JSON text."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def inherited(metas: list[dict[str, str]]) -> dict[str, str]:
    """INHERITED_KEYS of a result made from files with metadata `metas`: a value the inputs share
    is kept; differing config hashes are hashed together (sorted), differing dtypes or devices
    are listed, sorted and comma-separated."""
    out = {}
    for key in INHERITED_KEYS:
        values = sorted({m[key] for m in metas})
        if len(values) == 1:
            out[key] = values[0]
        else:
            out[key] = config_hash(",".join(values)) if key == "config_hash" else ",".join(values)
    return out


def run_summary(paths: list[str], config_text: str) -> dict:
    """What results/provenance.json holds: the config and its hash, the distinct values of each
    provenance key over `paths` (Parquet files), and every file's own metadata."""
    files = {str(p): read_meta(p) for p in sorted(paths)}
    keys = sorted({k for meta in files.values() for k in meta})
    return {
        "config_hash": config_hash(config_text),
        "config": json.loads(config_text),
        "summary": {k: sorted({m[k] for m in files.values() if k in m}) for k in keys},
        "files": files,
    }


def write_text(text: str, path: str | Path) -> None:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
