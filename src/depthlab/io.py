"""Atomic file output and provenance metadata.

Every file is written to a temporary name in its target folder and renamed into place, so an
interrupted job never leaves a file that looks complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from depthlab.codehash import PACKAGE_DIR, code_hash


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it to `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


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
    """Versions and hashes that identify how a result was made."""
    import torch

    info = {
        "depthlab_code_hash": code_hash(),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "pyarrow_version": pa.__version__,
        "git_commit": git_commit(),
    }
    info.update({k: str(v) for k, v in (extra or {}).items()})
    return info


def write_parquet(frame: pd.DataFrame, path: str | Path, meta: dict[str, str]) -> None:
    """Write `frame` atomically with `meta` stored under the 'depthlab' key of the schema."""
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


def write_text(text: str, path: str | Path) -> None:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
