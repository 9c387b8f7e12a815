"""Picking rows out of a tidy or fit table by column values: the one selection helper."""

from __future__ import annotations

import numpy as np
import pandas as pd


def pick(frame: pd.DataFrame, **where) -> pd.DataFrame:
    """The rows of `frame` (in their order) whose columns equal every given value, e.g.
    pick(fits, quantity="grad_ratio", arm="grad", depth=96)."""
    mask = np.ones(len(frame), dtype=bool)
    for key, value in where.items():
        mask &= (frame[key] == value).to_numpy()
    return frame[mask]


def pick_one(frame: pd.DataFrame, **where) -> pd.Series:
    """The single row `pick` selects; KeyError naming the selection and the count otherwise."""
    rows = pick(frame, **where)
    if len(rows) != 1:
        shown = ", ".join(f"{k}={v!r}" for k, v in where.items())
        raise KeyError(f"{shown}: {len(rows)} rows, not one")
    return rows.iloc[0]
