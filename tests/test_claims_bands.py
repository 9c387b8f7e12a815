"""The ledger's rules on known truth: the band of a note's statistic covers the
statistic of a fresh sample at the nominal rate (on log for positive skewed statistics),
band-sigmas by hand, the outcome rules table-driven, the binomial rule that excludes a
reading, and the whitelist evaluator of the claims file's expressions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from depthlab.claims import bands, outcomes
from depthlab.claims.expressions import ExpressionError, NotInGrid, evaluate

STATISTICS = {
    "median": lambda x: np.median(x, axis=-1),
    "mean": lambda x: np.mean(x, axis=-1),
    "seed0": lambda x: x[..., 0],
    "ratio": lambda a, b: a.mean(axis=-1) / b.mean(axis=-1),  # a pooled ratio of seed means
}


def _t3(rng, shape, cut=-9.5):
    """Student t, 3 degrees of freedom, truncated below `cut` (keeps 2 + 0.2 t > 0)."""
    return stats.t.ppf(rng.uniform(stats.t.cdf(cut, 3), 1, size=shape), 3)


def _lognormal_pair(rng, shape):
    """Paired positive per-seed arrays (a, b): b log-normal (log-sd 0.5), the per-seed ratio
    a / b log-normal about 0.023 with log-sd 1 (a gradient-norm ratio)."""
    b = np.exp(0.5 * rng.normal(size=shape))
    return 0.023 * b * np.exp(rng.normal(size=shape)), b


def _t3_pair(rng, shape):
    """Paired positive per-seed arrays (a, b) with t3 tails, a / b about 1.5."""
    b = 2.0 + 0.2 * _t3(rng, shape)
    return b * (1.5 + 0.15 * _t3(rng, shape)), b


def _normal_pair(rng, shape):
    """Paired positive per-seed arrays (a, b), normal, a / b about 1.5."""
    b = rng.normal(2.0, 0.2, size=shape)
    return b * rng.normal(1.5, 0.15, size=shape), b


POOLS = {  # per-seed values of `shape` (trials, seeds), as a tuple of paired arrays
    "normal": lambda rng, shape: (rng.normal(3.0, 0.2, size=shape),),
    "normal pair": _normal_pair,
    "lognormal": lambda rng, shape: (0.023 * np.exp(rng.normal(size=shape)),),
    "lognormal pair": _lognormal_pair,
    "t3": lambda rng, shape: (3.0 + 0.2 * rng.standard_t(3, size=shape),),
    "exp t3": lambda rng, shape: (0.023 * np.exp(rng.standard_t(3, size=shape)),),
    "t3 pair": _t3_pair,
}
TRIALS = 4000


def _pooled_ratio(a, b):
    """The ledger's `pooled` statistic of paired pools a, b (trials, seeds): idx (rows, m) ->
    (trials, rows), the ratio of the seed means at idx (by each seed's count in a row: a matrix
    product in place of a gather, the same numbers)."""
    def statistic(idx):
        rows, seeds = len(idx), a.shape[-1]
        counts = np.bincount((idx + seeds * np.arange(rows)[:, None]).ravel(),
                             minlength=rows * seeds).reshape(rows, seeds).T.astype(float)
        return (a @ counts) / (b @ counts)
    return statistic


def _coverage(pools, statistic, n, pool, log, trials=TRIALS, chunk=None, seed=11):
    """The fraction of trials whose fresh n-sample statistic lies in the band drawn from an
    independent pool: prediction_band's computation (the statistic at bands.resamples, then
    bands.band_of_draws; for the ratio of seed means, the ledger's `pooled`, the studentized
    band) for a chunk of trials at once (100; 400 for the studentized band, whose fixed work
    per chunk is larger)."""
    chunk = chunk or (400 if statistic == "ratio" else 100)
    rng = np.random.default_rng(seed)
    make, stat = POOLS[pools], STATISTICS[statistic]
    idx = bands.resamples(pool, n)
    inside = 0
    for start in range(0, trials, chunk):
        size = min(chunk, trials - start)
        ours = make(rng, (size, pool))
        note = stat(*make(rng, (size, n)))
        if statistic == "ratio":
            lo, _, hi = bands.studentized_band(_pooled_ratio(*ours), pool, n, log)
        else:
            lo, _, hi = bands.band_of_draws(stat(*(x[:, idx] for x in ours)), n, pool, log)
        inside += np.sum((lo <= note) & (note <= hi))
    return inside / trials


@pytest.mark.parametrize("pools, statistic, n, pool, log", [
    ("normal", "median", 6, 36, False),  # stack96: a median of 6 seeds against our pool of 36
    ("normal", "median", 6, 30, False),
    ("normal", "mean", 24, 24, False),  # varsplit: a mean of 24 seeds against our 24
    ("normal", "seed0", 1, 36, False),  # a note's seed 0 against our pool
    ("lognormal", "median", 6, 36, True),
    ("lognormal pair", "ratio", 6, 36, True),  # a pooled ratio of seed means: studentized band
    ("lognormal pair", "ratio", 24, 24, True),
    ("lognormal", "seed0", 1, 36, True),  # one seed: exactly the normal seed0 case, on log
    ("t3", "median", 6, 36, False),
    ("t3", "seed0", 1, 36, False),
    ("exp t3", "median", 6, 36, True),
    ("exp t3", "seed0", 1, 36, True),
    ("t3 pair", "ratio", 6, 36, True),
    ("t3 pair", "ratio", 24, 24, True),
    ("normal pair", "ratio", 6, 36, True),  # and not too wide on well-behaved seeds
])
@pytest.mark.slow
def test_the_band_covers_a_fresh_sample_s_statistic_95_percent_of_the_time(
        pools, statistic, n, pool, log):
    """Known truth: pool and note sample drawn from one distribution (normal and t3 with the
    linear band; log-normal, exp(t3) and the positive ratio pairs with the log band); the 95%
    band from the pool must hold the note's statistic in 95% +- 2% of 4,000 replications (the
    plain bootstrap quantiles, without the widening, cover 91-94% on normal data; the widened
    ones 88.8-93.2% for the ratios, the studentized band 93.6-96.1%, simulation seeds 11-13)."""
    coverage = _coverage(pools, statistic, n, pool, log)
    assert 0.93 <= coverage <= 0.97, coverage


def test_prediction_band_is_the_vectorised_band_of_each_pool():
    a, b = _lognormal_pair(np.random.default_rng(3), (2, 36))
    stat, idx = STATISTICS["ratio"], bands.resamples(36, 6)
    lo, mid, hi = bands.band_of_draws(stat(a[:, idx], b[:, idx]), 6, 36, log=True)
    for t in range(2):
        one = lambda i, t=t: stat(a[t][i], b[t][i])  # noqa: E731
        assert bands.prediction_band_with_centre(one, 36, 6, log=True) == pytest.approx(
            (lo[t], mid[t], hi[t]), rel=1e-12)
        assert bands.prediction_band(one, 36, 6, log=True) == pytest.approx((lo[t], hi[t]),
                                                                             rel=1e-12)
    assert not np.allclose(bands.prediction_band(one, 36, 6), (lo[1], hi[1]))
    lo, mid, hi = bands.studentized_band(_pooled_ratio(a, b), 36, 6, log=True)
    for t in range(2):
        # the ledger's statistic: a gather of the seeds
        one = lambda i, t=t: stat(a[t][i], b[t][i])  # noqa: E731
        assert bands.prediction_band_with_centre(one, 36, 6, log=True, smooth=True) == (
            pytest.approx((lo[t], mid[t], hi[t]), rel=1e-12))
        assert bands.prediction_band(one, 36, 6, log=True, smooth=True) == pytest.approx(
            (lo[t], hi[t]), rel=1e-12)
        assert mid[t] == pytest.approx(a[t].mean() / b[t].mean(), rel=1e-12)


def test_the_kurtosis_df_by_hand():
    # -2, 0 x 6, 2: m2 = 1, m4 = 4, g2 = 1, G2 = (9 g2 + 6) 7 / (6 5) = 3.5, kappa = 6.5,
    # nu = 16 / (6.5 - 5 / 7) = 112 / 40.5; +-1 alternating: kappa < 3, nu = N - 1 = 7
    u = np.array([[-2.0, 0, 0, 0, 0, 0, 0, 2], [-1, 1, -1, 1, -1, 1, -1, 1]])
    assert bands.kurtosis_df(u) == pytest.approx([112 / 40.5, 7], rel=1e-12)
    with pytest.raises(ValueError, match="at least 4 values"):
        bands.kurtosis_df(np.ones(3))


def test_the_studentized_band_of_a_mean_by_hand():
    """A mean is linear: its jackknife influence values are the seeds' deviations, a resampled
    pool's s is its seeds' sd, so the band is the bootstrap-t from its definition (on this
    skewed pool the upper edge is the bootstrap-t's, the lower the kurtosis t's); with log, a
    geometric mean is the same on log(values)."""
    v = np.array([0.8, 1.0, 1.1, 1.2, 1.3, 1.5, 1.6, 1.9, 2.2, 2.6, 3.5, 5.0])
    fresh, pools, c = bands.resamples(12, 6), bands.pool_resamples(12), np.sqrt(1 / 6 + 1 / 12)
    for w, log in [(v, False), (np.log(v), True)]:
        pivot = (w[fresh].mean(1) - w[pools].mean(1)) / (w[pools].std(1, ddof=1) * c)
        q_lo, q_hi = np.quantile(pivot, [0.025, 0.975])
        t = stats.t.ppf(0.975, bands.kurtosis_df(w))
        assert q_lo > -t and q_hi > t
        half = w.std(ddof=1) * c
        band = np.array([w.mean() - t * half, w.mean(), w.mean() + q_hi * half])
        stat = (lambda i, w=w: np.exp(w[i].mean(-1))) if log else (lambda i: v[i].mean(-1))
        assert bands.studentized_band(stat, 12, 6, log) == pytest.approx(
            np.exp(band) if log else band, rel=1e-12)
    few = lambda i: v[i].mean(-1)  # noqa: E731 (a pool of 3: the percentile band)
    assert bands.studentized_band(few, 3, 2) == pytest.approx(
        bands.band_of_draws(few(bands.resamples(3, 2)), 2, 3), rel=1e-12)


def test_the_log_band_widens_the_log_draws_and_maps_them_back():
    # draws exp(x), x evenly from -1 to 1: quantiles of x at 2.5/50/97.5% are -0.95, 0, 0.95
    draws = np.exp(np.linspace(-1, 1, 1001))
    f = np.sqrt(1 + 6 / 36) * 2.0301 / 1.9600 * np.sqrt(36 / 35)  # printed t and z tables
    assert bands.band_of_draws(draws, 6, 36, log=True) == pytest.approx(
        (np.exp(-0.95 * f), 1.0, np.exp(0.95 * f)), rel=1e-4)
    assert bands.band_of_draws(draws, 6, 36) == pytest.approx(
        (1 - f * (1 - np.exp(-0.95)), 1.0, 1 + f * (np.exp(0.95) - 1)), rel=1e-4)
    v = np.linspace(-1.0, 1.0, 36)
    with pytest.raises(ValueError, match=r"log band needs positive draws: \d+ of 4000"):
        bands.prediction_band(lambda idx: v[idx][:, 0], 36, 1, log=True)
    lo, hi = bands.prediction_band(lambda idx: v[idx][:, 0], 36, 1)
    assert lo < -1 and hi > 1


Z = 1.959964  # z(0.975) from printed tables


@pytest.mark.parametrize("value, lo, mid, hi, log, expected", [
    (4.0, 1.0, 2.0, 4.0, False, Z),  # on the upper edge
    (1.0, 1.0, 2.0, 4.0, False, -Z),  # on the lower edge
    (3.0, 1.0, 2.0, 4.0, False, Z / 2),  # halfway up: sigma = (4 - 2) / z
    (1.5, 1.0, 2.0, 4.0, False, -Z / 2),  # halfway down: sigma = (2 - 1) / z
    (6.0, 1.0, 2.0, 4.0, False, 2 * Z),
    (2.0, 1.0, 2.0, 4.0, False, 0.0),
    (4.0, 1.0, 2.0, 4.0, True, Z),  # symmetric on log: log 2 each side
    (1.0, 1.0, 2.0, 4.0, True, -Z),
    (8.0, 1.0, 2.0, 4.0, True, 2 * Z),
    (2 * np.sqrt(2), 1.0, 2.0, 4.0, True, Z / 2),  # log(sqrt 2) = half of log 2
    (2 * np.sqrt(2), 1.0, 2.0, 4.0, False, (2 * np.sqrt(2) - 2) / 2 * Z),
    (np.sqrt(2), 1.0, 2.0, 4.0, True, -Z / 2),
    (0.01, 0.005, 0.023, 0.09, True, -np.log(2.3) / np.log(4.6) * Z),
    (5.0, 1.0, 2.0, 2.0, False, np.inf),  # no upper half: any value above is infinitely out
])
def test_band_sigma_is_the_distance_in_the_half_band_on_the_value_s_side(
        value, lo, mid, hi, log, expected):
    assert bands.band_sigma(value, lo, mid, hi, log=log) == pytest.approx(expected, rel=1e-6)


def test_band_sigma_on_log_needs_positive_numbers():
    with pytest.raises(ValueError, match="log band-sigma needs positive values"):
        bands.band_sigma(0.0, 0.005, 0.023, 0.09, log=True)


def test_the_widening_grows_as_the_pool_shrinks():
    # t(0.975, 35) = 2.0301 and z(0.975) = 1.9600 from printed tables
    expected = np.sqrt(1 + 6 / 36) * 2.0301 / 1.9600 * np.sqrt(36 / 35)
    assert bands.widening(6, 36) == pytest.approx(expected, rel=1e-4)
    assert bands.widening(6, 6) > bands.widening(6, 12) > bands.widening(6, 36) > 1
    with pytest.raises(ValueError, match="at least 2 seeds"):
        bands.prediction_band(lambda idx: idx.sum(-1), 1, 6)


def test_estimate_is_the_note_s_statistic_with_our_interval():
    v = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    point, lo, hi = bands.estimate(v, "median")
    assert point == 3.0 and lo <= 3.0 <= hi
    point, lo, hi = bands.estimate(v, "mean")
    assert point == 4.0 and lo < 4.0 < hi
    assert bands.estimate(v, "seed0") == (1.0, 1.0, 1.0)


S, C, U = outcomes.SUPPORTED, outcomes.CONTRADICTED, outcomes.INCONCLUSIVE  # U: undecided
W = outcomes.UNINFORMATIVE  # too wide to tell


@pytest.mark.parametrize("value, h, lo, hi, reference, expected", [
    (2.89, 0.05, 2.79, 3.12, 1, S),  # inside the band, 1 far outside it
    (2.89, 0.005, 2.95, 3.12, 1, C),  # outside the band
    (2.94, 0.05, 2.95, 3.12, 1, U),  # its precision crosses the band's edge: not inside
    (3.00, 0.05, 2.95, 3.12, 1, S),  # its precision inside the band
    (0.773, 0.05, 0.47, 1.10, 1, U),  # inside, but the band holds 1 (no tilt)
    (0.773, 0.05, 0.47, 1.10, None, S),
    (0.031, 0.0005, 0.05, 0.30, 1, C),
    (2.89, 0.005, 2.79, 3.12, 1, W),  # inside, but the band is 33x the printed precision
    (0.773, 0.0005, 0.47, 1.10, 1, W),  # a wide band that holds 1 is uninformative too
])
def test_a_sample_number_against_its_band(value, h, lo, hi, reference, expected):
    assert outcomes.sample(value, h, lo, hi, reference) == expected


@pytest.mark.parametrize("value, h, lo, hi, expected", [
    (-0.5, 0.05, -0.52, -0.47, S),  # our interval inside the margin
    (-0.5, 0.05, -0.667, -0.435, W),  # wider than the margin: cannot lie inside it
    (1.0, 0.5, 1.115, 1.539, U),  # overlapping the edge is not support
    (1.0, 0.05, 0.940, 1.051, W),
    (1.0, 0.05, 1.06, 1.08, C),
])
def test_a_prediction_against_our_interval(value, h, lo, hi, expected):
    assert outcomes.prediction(value, h, lo, hi) == expected


@pytest.mark.parametrize("kind, x, lo, hi, expected", [
    ("above", 0, 0.1, 0.2, S), ("above", 0, -0.2, -0.1, C), ("above", 0, -0.1, 0.1, U),
    ("below", 1, 0.2, 0.9, S), ("below", 1, 1.1, 1.3, C), ("below", 1, 0.9, 1.1, U),
    ("between", [1, 2], 1.2, 1.8, S), ("between", [1, 2], 2.1, 2.5, C),
    ("between", [1, 2], 1.5, 2.5, U), ("between", [-0.1, 0.1], -0.055, 0.48, W),
])
def test_direction_outcomes(kind, x, lo, hi, expected):
    assert outcomes.direction(kind, x, lo, hi) == expected


def test_the_interval_holds_zero_is_no_direction():
    with pytest.raises(ValueError, match="no direction 'contains'"):
        outcomes.direction("contains", 0, -0.1, 0.1)


@pytest.mark.parametrize("value, h, intervals, expected", [
    (1.0, 0.05, [(0.98, 1.02), (0.97, 1.01)], S),
    (1.0, 0.05, [(0.98, 1.02), (1.10, 1.20)], C),
    (1.0, 0.05, [(0.90, 1.10), (0.97, 1.01)], W),  # one member wider than the margin
    (1.0, 0.05, [(1.04, 1.06), (0.97, 1.01)], U),  # one across the margin's edge
    (None, 0.05, [(2.30, 2.35), (2.33, 2.38)], S),
    (None, 0.05, [(1.28, 1.71), (3.22, 4.33)], C),
    (None, 0.05, [(2.0, 2.8), (2.1, 2.9)], W),
])
def test_invariance_outcomes(value, h, intervals, expected):
    assert outcomes.invariance(value, h, intervals) == expected


def test_members_and_curve_points():
    assert outcomes.members([S, S]) == S
    assert outcomes.members([S, U]) == U
    assert outcomes.members([U, C, S]) == C
    assert outcomes.curve_at(1.0, 0.1, 0.95, 1.05) == S
    assert outcomes.curve_at(1.0, 0.1, 1.2, 1.3) == C
    assert outcomes.curve_at(1.0, 0.1, 1.05, 1.2) == U
    assert outcomes.curve_at(-1.0, 0.1, -1.05, -0.95) == S  # a negative formula


@pytest.mark.parametrize("outside, graded, expected", [
    (0, 12, False), (2, 12, False), (3, 12, True),  # P(X >= 3 | 12, 0.05) = 0.02
    (1, 1, True), (1, 4, False), (2, 6, True), (0, 0, False),
])
def test_a_reading_is_excluded_when_too_many_identifying_numbers_fall_outside(
        outside, graded, expected):
    assert outcomes.excluded(outside, graded) == expected


def test_expressions_evaluate_per_seed_and_reject_anything_else():
    x = np.arange(12.0).reshape(3, 4)
    names = {"x": x, "x_at": np.arange(1.0, 5.0)}
    assert evaluate("slope(x, x_at)", names, "e").tolist() == [1.0, 1.0, 1.0]
    assert evaluate("x[..., 0] > 3", names, "e").tolist() == [False, True, True]
    assert evaluate("windows(x, 2)", names, "e").tolist() == [[0.5, 2.5], [4.5, 6.5],
                                                              [8.5, 10.5]]
    for bad, fragment in [("().__class__.__bases__", "Attribute is not allowed"),
                          ("x.sum()", "only the ledger's functions"),
                          ("__import__('os')", "only the ledger's functions"),
                          ("[a for a in x]", "ListComp is not allowed"),
                          ("lambda: 0", "Lambda is not allowed"),
                          ("y + 1", "unknown name 'y'")]:
        with pytest.raises(ExpressionError, match=fragment):
            evaluate(bad, names, "entry.id")
    with pytest.raises(NotInGrid):
        evaluate("window(x, x_at, 10, 20)", names, "e")
