"""Reading fits: the per-arm fit tables of a study (results/fits/<study>/<arm>.parquet) as one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def read_fits(paths: list[str | Path]) -> pd.DataFrame:
    """The fit tables at `paths`, concatenated in the order of their arm names (the file stems),
    so a table reads the same rows in the same order however the arms are listed."""
    ordered = sorted(paths, key=lambda p: Path(p).stem)
    return pd.concat([pd.read_parquet(p) for p in ordered], ignore_index=True)
