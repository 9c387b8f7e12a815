"""Statistics across seeds: medians with spread, t-intervals, per-seed slopes and exponents."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import stdtrit

LEVEL = 0.95  # of every t-interval


def seed_summary(values: pd.Series | np.ndarray) -> dict[str, float]:
    """Median, min, max and the 95% t-interval of the mean of per-seed values."""
    v = np.asarray(values, dtype=float)
    return {"n_seeds": len(v), **{k: float(a[0]) for k, a in _summaries(v[None]).items()}}


def _summaries(rows: np.ndarray) -> dict[str, np.ndarray]:
    """seed_summary's numbers (but n_seeds) of each row of `rows` (groups x seeds); numpy reduces
    each row as it reduces one group's values alone, so a row's numbers are bit for bit its
    own."""
    mean = rows.mean(axis=1)
    half = _t_half(rows) if rows.shape[1] >= 2 else np.full(len(rows), np.nan)
    return {"median": np.median(rows, axis=1), "min": rows.min(axis=1),
            "max": rows.max(axis=1), "mean": mean, "ci_lo": mean - half, "ci_hi": mean + half}


def _t_half(rows: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """Half the width of the two-sided t-interval of the mean of each row of `rows` (two values
    or more a row)."""
    n = rows.shape[1]
    # Student's t quantile: stdtrit(df, q) is scipy.stats.t.ppf(q, df) bit for bit, without the
    # 0.75 s a job takes to import scipy.stats
    return stdtrit(n - 1, 0.5 + level / 2) * rows.std(axis=1, ddof=1) / np.sqrt(n)


def t_interval(v: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Two-sided t confidence interval of the mean of v (NaN for fewer than two values)."""
    v = np.asarray(v, dtype=float)
    if len(v) < 2:
        return float("nan"), float("nan")
    half = _t_half(v[None], level)[0]
    return float(v.mean() - half), float(v.mean() + half)


def ols_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope and intercept of y against x."""
    slope, intercept = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    return float(slope), float(intercept)


def one_depth_exponent(factor: float, depth: int) -> float:
    """The notes' one-depth growth exponent ln(factor) / ln(L)."""
    return float(np.log(factor) / np.log(depth))


def summarise_seeds(frame: pd.DataFrame, keys: list[str], quantity: str) -> pd.DataFrame:
    """seed_summary of `value` (one row per seed) per group of keys, plus the value of the
    lowest seed (seed0) and every seed's value in seed order (`seeds`, `seed_values`: the claims
    ledger pairs rows by seed and bootstraps from them), tagged with the quantity: one fit row
    per group."""
    # the groups in groupby's order (sorted keys; rows with a missing key left out), each
    # group's rows in frame order, then by seed as sort_values sorts them (numpy's quicksort);
    # the numbers of all groups of one size at once (_summaries)
    number = frame.groupby(keys, sort=True).ngroup().to_numpy(dtype=float)
    kept = np.flatnonzero(~np.isnan(number))
    order = kept[np.argsort(number[kept], kind="stable")]
    starts = np.flatnonzero(np.diff(number[order], prepend=-1))
    seeds, values = frame["seed"].to_numpy(), frame["value"].to_numpy(dtype=float)
    groups = [m[np.argsort(seeds[m], kind="quicksort")]
              for m in (np.split(order, starts[1:]) if len(order) else [])]
    if not groups:
        return pd.DataFrame()
    first = np.array([m[0] for m in groups], dtype=int)
    sizes = np.array([len(m) for m in groups], dtype=int)
    stats: dict[str, np.ndarray] = {}
    for n in np.unique(sizes):
        at = np.flatnonzero(sizes == n)
        for k, a in _summaries(values[np.stack([groups[i] for i in at])]).items():
            stats.setdefault(k, np.full(len(groups), np.nan))[at] = a
    return pd.DataFrame({
        **{k: frame[k].to_numpy()[first] for k in keys},
        "n_seeds": sizes, **stats,
        "seed0": values[first],
        "seeds": [seeds[m].astype(int).tolist() for m in groups],
        "seed_values": [values[m].tolist() for m in groups],
        "quantity": quantity,
    })


def median_interval(values, level: float = 0.95, resamples: int = 10_000,
                    seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the median of `values`: the seeds resampled with
    replacement `resamples` times (numpy's default_rng(seed), so the interval is the same on
    every run), the `level` central range of the resampled medians (NaN for fewer than two)."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float("nan"), float("nan")
    draws = np.random.default_rng(seed).integers(0, len(v), size=(resamples, len(v)))
    medians = np.median(v[draws], axis=1)
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(medians, [tail, 100 - tail])
    return float(lo), float(hi)


def loglog_slopes(frame: pd.DataFrame, keys: list[str], x: str, quantity: str) -> pd.DataFrame:
    """Per group of keys and seed, the OLS slope of ln(value) on ln(x) (groups with two or
    more x), summarised across seeds as `quantity` (summarise_seeds); empty if no group has."""
    rows = [
        {**dict(zip([*keys, "seed"], group, strict=True)),
         "value": ols_slope(np.log(sub[x].to_numpy(float)), np.log(sub["value"]))[0]}
        for group, sub in frame.groupby([*keys, "seed"], sort=True) if sub[x].nunique() > 1
    ]
    return summarise_seeds(pd.DataFrame(rows), keys, quantity) if rows else pd.DataFrame()
