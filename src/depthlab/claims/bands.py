"""The note's number as a sample, and our estimate's interval.

A note's "median of six seeds" is one draw of a statistic whose other draws are other seeds'
medians. `prediction_band` gives the 95% band of that statistic at the note's seed count n,
from a pool of N seeds measured here: B draws of n seeds (with replacement) from the pool,
the statistic of each, the 2.5% and 97.5% quantiles about the draws' median, widened by
sqrt(1 + n/N) (the pool's own sampling error: a new n-sample and the pool differ by
sigma^2 (1/n + 1/N)) and by t_{N-1} / z sqrt(N / (N - 1)) (the pool's spread is estimated).
With `log=True` (ratios, spreads, growth factors: positive and log-skewed) the quantiles and
the widening are taken on log(draws) and the band mapped back with exp. Its coverage is checked
by simulation at the notes' seed counts (tests/test_claims_bands.py): 95% +- 2% for medians of
6 from pools of 30-36, means of 24 from 24 and one seed from 36 on normal data, and for medians
of 6 and one seed on log-normal and t3-tailed data. For ratios of seed means (6 of 36, 24 of 24)
on log-normal (log-sd 1) or t3-tailed seeds it covers 89-93% only: a pool that lacks the tail
understates a mean's spread and skew. A smooth statistic of seed means (the ledger's `pooled`)
therefore gets `studentized_band` (`smooth=True`): a bootstrap-t band, no narrower than a
kurtosis-adjusted t, which covers those ratios 93.6-96.1% (95.0-95.5% on normal seeds).
`band_sigma` places a value in a band in band-sigmas (+-1.96 at its edges).

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


def resamples(pool: int, n: int) -> np.ndarray:
    """The (DRAWS, n) seed indices a band of n seeds is drawn with from `pool` seeds (fixed
    stream)."""
    if pool < 2:
        raise ValueError(f"a band needs a pool of at least 2 seeds, not {pool}")
    return _rng().integers(0, pool, size=(DRAWS, n))


def band_of_draws(draws: np.ndarray, n: int, pool: int,
                  log: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, mid, hi) of the 95% band from the statistic's draws on the last axis (any leading
    axes are separate bands): the draws' 2.5% and 97.5% quantiles about their median, each side
    widened by `widening(n, pool)`; with `log`, all on log(draws) and mapped back with exp."""
    draws = np.asarray(draws, dtype=float)
    if not np.all(np.isfinite(draws)):
        raise ValueError("non-finite values in the band's draws")
    if log:
        if not np.all(draws > 0):
            raise ValueError(f"a log band needs positive draws: {np.sum(draws <= 0)} of "
                             f"{draws.size} are <= 0")
        draws = np.log(draws)
    lo, mid, hi = np.quantile(draws, [(1 - LEVEL) / 2, 0.5, (1 + LEVEL) / 2], axis=-1)
    f = widening(n, pool)
    lo, hi = mid - f * (mid - lo), mid + f * (hi - mid)
    return (np.exp(lo), np.exp(mid), np.exp(hi)) if log else (lo, mid, hi)


def kurtosis_df(influence: np.ndarray) -> np.ndarray:
    """The degrees of freedom of a variance estimated from N values (`influence` on the last
    axis): 2 / Var(s^2 / sigma^2) = 2N / (kappa - (N - 3) / (N - 1)) (the exact variance of a
    sample variance, moment-matched to a chi-square as in Box 1953), kappa the kurtosis by the
    adjusted estimator G2 + 3 (Joanes & Gill 1998); N - 1 when kappa <= 3 (normal theory's)."""
    u = np.asarray(influence, dtype=float)
    size = u.shape[-1]
    if size < 4:
        raise ValueError(f"a kurtosis needs at least 4 values, not {size}")
    d = u - u.mean(axis=-1, keepdims=True)
    m2, m4 = np.mean(d**2, axis=-1), np.mean(d**4, axis=-1)
    g2 = np.divide(m4, m2**2, out=np.full_like(m2, 3.0), where=m2 > 0) - 3
    kappa = 3 + ((size + 1) * g2 + 6) * (size - 1) / ((size - 2) * (size - 3))
    excess = np.maximum(kappa - (size - 3) / (size - 1), 2 * size / (size - 1))
    return np.clip(2 * size / excess, 1, size - 1)


def pool_resamples(pool: int) -> np.ndarray:
    """The (DRAWS, pool) resampled pools of a studentized band (a second fixed stream,
    independent of `resamples`)."""
    return _rng_at(1).integers(0, pool, size=(DRAWS, pool))


def studentized_band(statistic: Callable[[np.ndarray], np.ndarray], pool: int, n: int,
                     log: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, mid, hi): the 95% band of a smooth statistic of seed means (the ledger's `pooled`)
    at n fresh seeds, from `pool` seeds; mid the statistic of all of them; with `log`, on log.
    mid + s c [q_lo, q_hi], u the pool's jackknife influence values, s their sd, c =
    sqrt(1/n + 1/pool), q the 2.5% and 97.5% quantiles of the studentized prediction pivot
    (T(n seeds) - T(pool)) / (s c) over resampled seeds and pools (the bootstrap-t, Efron &
    Tibshirani 1993 ch. 12; a resampled pool's s from u at its seeds, the linear approximation
    of Davison & Hinkley 1997 sec. 2.7), each at least t(nu), nu = `kurtosis_df(u)`: the
    pivot keeps a mean's skew (its spread grows with its level), the t the error of s, which a
    pool short of the tail understates. `statistic` maps idx (rows, m) to (..., rows), leading
    axes separate bands. Pools under 4 seeds get `band_of_draws`'s band."""
    if pool < 4:
        return band_of_draws(np.asarray(statistic(resamples(pool, n)), dtype=float), n, pool,
                             log)

    def scaled(idx):
        v = np.asarray(statistic(idx), dtype=float)
        if not np.all(np.isfinite(v)) or (log and not np.all(v > 0)):
            raise ValueError("a studentized band needs finite statistics (positive with log)")
        return np.log(v) if log else v

    seeds = np.arange(pool)
    mid = scaled(seeds[None, :])[..., 0]
    left_out = scaled(np.array([np.delete(seeds, i) for i in seeds]))
    u = (pool - 1) * (left_out.mean(axis=-1, keepdims=True) - left_out)
    s = np.sqrt(np.sum(u**2, axis=-1) / (pool - 1))
    drawn = pool_resamples(pool)
    share = np.bincount((drawn + pool * np.arange(DRAWS)[:, None]).ravel(),
                        minlength=DRAWS * pool).reshape(DRAWS, pool).T / pool
    s_drawn = np.sqrt(np.maximum(u**2 @ share - (u @ share) ** 2, 0) * pool / (pool - 1))
    c = np.sqrt(1 / n + 1 / pool)
    change = scaled(resamples(pool, n)) - scaled(drawn)
    with np.errstate(divide="ignore", invalid="ignore"):  # s = 0: one seed drawn N times
        pivot = np.where(s_drawn > 0, change / (s_drawn * c), np.sign(change) * np.inf)
    pivot = np.nan_to_num(pivot, nan=0.0)  # +-inf as the largest float, 0 / 0 as 0
    q_lo, q_hi = np.quantile(pivot, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=-1)
    t = stats.t.ppf(0.5 + LEVEL / 2, kurtosis_df(u))
    lo = mid + np.minimum(q_lo, -t) * s * c
    hi = mid + np.maximum(q_hi, t) * s * c
    return (np.exp(lo), np.exp(mid), np.exp(hi)) if log else (lo, mid, hi)


def prediction_band_with_centre(statistic: Callable[[np.ndarray], np.ndarray], pool: int,
                                n: int, log: bool = False,
                                smooth: bool = False) -> tuple[float, float, float]:
    """(lo, mid, hi): the 95% band of `statistic` over n seeds, drawn from a pool of `pool`
    seeds, and its centre (the draws' median). `statistic(idx)` maps an index array (B, n) to B
    values; `log` for positive, log-skewed statistics (see `band_of_draws`). `smooth` for a
    smooth statistic of seed means (the ledger's `pooled`): `studentized_band`, its centre the
    statistic of all `pool` seeds."""
    if smooth:
        lo, mid, hi = studentized_band(lambda idx: np.reshape(statistic(idx), len(idx)), pool,
                                       n, log)
        return float(lo), float(mid), float(hi)
    draws = np.asarray(statistic(resamples(pool, n)), dtype=float).ravel()
    lo, mid, hi = band_of_draws(draws, n, pool, log)
    return float(lo), float(mid), float(hi)


def prediction_band(statistic: Callable[[np.ndarray], np.ndarray], pool: int,
                    n: int, log: bool = False, smooth: bool = False) -> tuple[float, float]:
    """(lo, hi): the 95% band of `statistic` over n seeds, drawn from a pool of `pool` seeds
    (`prediction_band_with_centre` without the centre)."""
    lo, _, hi = prediction_band_with_centre(statistic, pool, n, log, smooth)
    return lo, hi


def band_sigma(value: float, lo: float, mid: float, hi: float, log: bool = False) -> float:
    """The signed distance of `value` from the band's centre `mid` in band-sigmas: the half of
    the band on the value's side over z(0.975), so a value on an edge is +-1.96; with `log`, on
    the log scale (all four positive)."""
    v = np.array([value, lo, mid, hi], dtype=float)
    if log:
        if not np.all(v > 0):
            raise ValueError(f"a log band-sigma needs positive values, not {v.tolist()}")
        v = np.log(v)
    value, lo, mid, hi = v
    d = value - mid
    half = hi - mid if d >= 0 else mid - lo
    if d == 0:
        return 0.0
    if half <= 0:
        return float(np.copysign(np.inf, d))
    return float(d / half * stats.norm.ppf(0.5 + LEVEL / 2))


def bootstrap_interval(statistic: Callable[[np.ndarray], np.ndarray],
                       pool: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap 95% interval of `statistic` over all `pool` seeds (per member when
    the statistic gives several). No `log` option: a percentile interval is the same on any
    monotone scale, up to the interpolation between two draws (Efron & Tibshirani 1993, ch. 13)."""
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


def simultaneous_interval(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per member k, the simultaneous 95% interval of the seed mean of values (S, K), a curve's
    points judged together: mean_k +- c se_k, c the 95% quantile over resampled seeds of the
    sup over k of the studentized |mean*_k - mean_k| / se*_k (the bootstrap-t sup band, Montiel
    Olea and Plagborg-Moller 2019), so all K hold at once with 95% probability, not each alone."""
    v = np.asarray(values, dtype=float)
    seeds = v.shape[0]
    if seeds < 2:
        raise ValueError(f"a simultaneous interval needs at least 2 seeds, not {seeds}")
    mean = v.mean(axis=0)
    se = v.std(axis=0, ddof=1) / np.sqrt(seeds)
    sup = np.empty(DRAWS)
    for start in range(0, DRAWS, 500):  # in blocks: (500, S, K) at a time
        idx = _rng_at(start).integers(0, seeds, size=(min(500, DRAWS - start), seeds))
        draw = v[idx]
        se_draw = draw.std(axis=1, ddof=1) / np.sqrt(seeds)
        t = np.abs(draw.mean(axis=1) - mean) / np.where(se_draw > 0, se_draw, np.inf)
        sup[start:start + len(idx)] = np.max(t, axis=-1)
    c = float(np.quantile(sup, LEVEL))
    return mean - c * se, mean + c * se


def _rng_at(start: int) -> np.random.Generator:
    """The fixed stream of the resamples, one block of a long resample at a time."""
    return np.random.default_rng([SEED, start])
