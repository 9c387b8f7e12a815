"""The note's number as a sample, and our estimate's interval.

A note's "median of six seeds" is one draw of a statistic whose other draws are other seeds'
medians. `prediction_band` gives the 95% band of that statistic at the note's seed count n,
from a pool of N seeds measured here: B draws of n seeds (with replacement) from the pool,
the statistic of each, the 2.5% and 97.5% quantiles about the draws' median, widened by
sqrt(1 + n/N) (the pool's own sampling error: a new n-sample and the pool differ by
sigma^2 (1/n + 1/N)) and by t_{N-1} / z sqrt(N / (N - 1)) (the pool's spread is estimated).
Its coverage is checked by simulation at the notes' seed counts (tests/test_claims_bands.py):
95% +- 2% for medians of 6 from pools of 30-36, means of 24 from 24 and one seed from 36, on
normal data.

`estimate` (per-seed statistics) and `bootstrap_interval` (any statistic of a set of seeds,
e.g. the entry's expression on the seeds' mean rows) give our own estimate's 95% interval, which
directions and predictions (a theory's constant) are judged by.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats

from depthlab.analysis.stats import median_interval, t_interval

DRAWS = 4000  # resamples of seeds for a band or a bootstrap interval
LEVEL = 0.95
SEED = 20261201  # the fixed stream of the resamples: same fits, same bands


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def widening(n: int, pool: int) -> float:
    """The factor a band drawn from `pool` seeds is widened by, for a statistic of n seeds."""
    z = stats.norm.ppf(0.5 + LEVEL / 2)
    t = stats.t.ppf(0.5 + LEVEL / 2, pool - 1)
    return float(np.sqrt(1 + n / pool) * t / z * np.sqrt(pool / (pool - 1)))


def prediction_band(statistic: Callable[[np.ndarray], np.ndarray], pool: int,
                    n: int) -> tuple[float, float]:
    """The 95% band of `statistic` over n seeds, drawn from a pool of `pool` seeds.
    `statistic(idx)` maps an index array (B, n) to B values."""
    if pool < 2:
        raise ValueError(f"a band needs a pool of at least 2 seeds, not {pool}")
    draws = np.asarray(statistic(_rng().integers(0, pool, size=(DRAWS, n))), dtype=float)
    if not np.all(np.isfinite(draws)):
        raise ValueError("non-finite values in the band's draws")
    lo, mid, hi = np.quantile(draws, [(1 - LEVEL) / 2, 0.5, (1 + LEVEL) / 2])
    f = widening(n, pool)
    return float(mid - f * (mid - lo)), float(mid + f * (hi - mid))


def bootstrap_interval(statistic: Callable[[np.ndarray], np.ndarray],
                       pool: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap 95% interval of `statistic` over all `pool` seeds (per member when
    the statistic gives several)."""
    draws = np.asarray(statistic(_rng().integers(0, pool, size=(DRAWS, pool))), dtype=float)
    lo, hi = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
    return lo, hi


def estimate(values: np.ndarray, name: str) -> tuple[float, float, float]:
    """(point, lo, hi): our estimate of the statistic over all seeds, with its 95% interval
    (seed0: the lowest seed, no interval)."""
    v = np.asarray(values, dtype=float)
    if name == "median":
        lo, hi = median_interval(v)
        return float(np.median(v)), lo, hi
    if name == "mean":
        lo, hi = t_interval(v)
        return float(np.mean(v)), lo, hi
    if name == "seed0":
        return float(v[0]), float(v[0]), float(v[0])
    raise ValueError(f"no per-seed statistic {name!r}")
