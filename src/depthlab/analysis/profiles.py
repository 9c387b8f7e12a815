"""Per-layer probe rows as seed x layer frames, the per-seed numbers read off them, and the
summary of a training study's fit (shared by the fits of the studies that reduce a probe profile
to one number per seed)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.omega import fit_range
from depthlab.analysis.stats import ols_slope, summarise_seeds


def wide(table: pd.DataFrame, metric: str, index: list[str], sublayer: str = "block"
         ) -> pd.DataFrame:
    """One metric of a tidy probe table as an `index` x layer frame, layers ascending (NaN past
    a shallower cell's depth)."""
    sub = table[(table["metric"] == metric) & (table["sublayer"] == sublayer)]
    return sub.pivot(index=index, columns="layer", values="value").sort_index(axis=1)


def last(frame: pd.DataFrame) -> pd.Series:
    """Each row's value at its last measured layer (the cell's depth)."""
    return frame.apply(lambda r: r.dropna().iloc[-1], axis=1)


def omega_slope(row: pd.Series) -> float:
    """Log-log OLS slope of one seed's omega_abs (a block-indexed row) on block k over the
    deepest three quarters of its blocks (theory096's deepest range; the formula gives about
    -0.5); NaN where an omega there is not positive (ReZero at init) or fewer than two blocks
    are in range."""
    row = row.dropna()
    k = row.index.to_numpy(dtype=float)
    lo, hi = fit_range(int(k.max()))[-1]
    keep = (k >= lo) & (k <= hi)
    v = row.to_numpy(dtype=float)[keep]
    if keep.sum() < 2 or not (v > 0).all():
        return float("nan")
    return ols_slope(np.log(k[keep]), np.log(v))[0]


class PerSeed:
    """Collects per-seed numbers as tidy rows (the frame's index columns, metric, value); an
    undefined (NaN) value is left out, not kept as a data point."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []

    def add(self, metric: str, values: pd.Series) -> None:
        frame = values.rename("value").reset_index()
        frame["metric"] = metric
        self.parts.append(frame.dropna(subset=["value"]))

    def frame(self) -> pd.DataFrame:
        return pd.concat(self.parts, ignore_index=True)


def unigram_entropy(fits: pd.DataFrame) -> float:
    """The corpus's unigram entropy (nats/char) a training study's fit records at step 0: the
    loss of a model of the character frequencies alone."""
    return float(fits.loc[fits["quantity"] == "unigram_entropy", "median"].iloc[0])


def summarise_checkpoints(table: pd.DataFrame, derived: pd.DataFrame, keys: list[str]
                          ) -> pd.DataFrame:
    """A training study's fit: every raw metric of its tidy table summarised across seeds per
    (cell `keys`, step, layer), quantity = metric for block and head metrics, else
    metric_sublayer; and its per-seed numbers `derived` (arm, label, seed, step, metric, value)
    per (cell, step)."""
    cells = table.drop_duplicates(["arm", "label"])[keys]
    by_step = [*keys, "step"]
    parts = []
    for (metric, sublayer), sub in table.groupby(["metric", "sublayer"], sort=True):
        shared = sublayer in ("block", "head")
        parts.append(summarise_seeds(sub, [*by_step, "layer"],
                                     metric if shared else f"{metric}_{sublayer}"))
    for metric, sub in derived.merge(cells, on=["arm", "label"]).groupby("metric", sort=True):
        parts.append(summarise_seeds(sub, by_step, metric))
    return pd.concat(parts, ignore_index=True)
