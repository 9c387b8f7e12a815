"""Statistics across seeds: medians with spread, t-intervals, per-seed slopes and exponents."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import stdtrit

LEVEL = 0.95  # of every t-interval
SUMMARY = ("median", "min", "max", "mean", "ci_lo", "ci_hi")  # seed_summary, but n_seeds


def seed_summary(values: pd.Series | np.ndarray) -> dict[str, float]:
    """Median, min, max and the 95% t-interval of the mean of per-seed values."""
    v = np.asarray(values, dtype=float)
    lo, hi = t_interval(v)
    return {
        "n_seeds": len(v),
        "median": float(np.median(v)),
        "min": float(v.min()),
        "max": float(v.max()),
        "mean": float(v.mean()),
        "ci_lo": lo,
        "ci_hi": hi,
    }


def t_interval(v: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Two-sided t confidence interval of the mean of v (NaN for fewer than two values)."""
    v = np.asarray(v, dtype=float)
    if len(v) < 2:
        return float("nan"), float("nan")
    # Student's t quantile: stdtrit(df, q) is scipy.stats.t.ppf(q, df) bit for bit, without the
    # 0.75 s a job takes to import scipy.stats
    half = stdtrit(len(v) - 1, 0.5 + level / 2) * v.std(ddof=1) / np.sqrt(len(v))
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
    # seed_summary's numbers computed for all groups of one size at once (numpy reduces each
    # row of a (groups, seeds) array as it reduces one group's values: the same numbers)
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
    stats = {k: np.full(len(groups), np.nan) for k in SUMMARY}
    for n in np.unique(sizes):
        at = np.flatnonzero(sizes == n)
        v = values[np.stack([groups[i] for i in at])]
        stats["median"][at] = np.median(v, axis=1)
        stats["min"][at], stats["max"][at], stats["mean"][at] = (v.min(axis=1), v.max(axis=1),
                                                                  v.mean(axis=1))
        if n >= 2:
            half = stdtrit(n - 1, 0.5 + LEVEL / 2) * v.std(axis=1, ddof=1) / np.sqrt(n)
            stats["ci_lo"][at], stats["ci_hi"][at] = (stats["mean"][at] - half,
                                                      stats["mean"][at] + half)
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
