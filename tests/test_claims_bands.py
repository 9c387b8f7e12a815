"""The ledger's rules on known truth (issue 23): the band of a note's statistic covers the
statistic of a fresh sample at the nominal rate, the outcome rules table-driven, the binomial
rule that excludes a reading, and the whitelist evaluator of the claims file's expressions."""

from __future__ import annotations

import numpy as np
import pytest

from depthlab.claims import bands, outcomes
from depthlab.claims.expressions import ExpressionError, NotInGrid, evaluate

STATISTICS = {
    "median": lambda x: np.median(x, axis=-1),
    "mean": lambda x: np.mean(x, axis=-1),
    "seed0": lambda x: x[..., 0],
}


@pytest.mark.parametrize("statistic, n, pool", [
    ("median", 6, 36),  # stack96: a median of 6 seeds against our pool of 36
    ("median", 6, 30),
    ("mean", 24, 24),  # varsplit: a mean of 24 seeds against our 24
    ("seed0", 1, 36),  # a note's seed 0 against our pool
])
def test_the_band_covers_a_fresh_sample_s_statistic_95_percent_of_the_time(statistic, n, pool):
    """Known truth: pool and note sample drawn from one normal distribution; the 95% band
    from the pool must hold the note's statistic in 95% +- 2% of 2,000 replications (the
    plain bootstrap quantiles, without the widening, cover 91-94% here)."""
    rng = np.random.default_rng(11)
    stat = STATISTICS[statistic]
    hits = 0
    reps = 2000
    for _ in range(reps):
        values = rng.normal(3.0, 0.2, size=pool)
        note = float(stat(rng.normal(3.0, 0.2, size=n)))
        lo, hi = bands.prediction_band(lambda idx, v=values: stat(v[idx]), pool, n)
        hits += lo <= note <= hi
    assert 0.93 <= hits / reps <= 0.97, hits / reps


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


@pytest.mark.parametrize("value, h, lo, hi, reference, expected", [
    (2.89, 0.005, 2.79, 3.12, 1, S),  # inside the band, 1 far outside it
    (2.89, 0.005, 2.95, 3.12, 1, C),  # outside the band
    (2.94, 0.05, 2.95, 3.12, 1, S),  # within the note's precision of the band
    (0.773, 0.0005, 0.47, 1.10, 1, U),  # inside, but the band holds 1 (no tilt)
    (0.773, 0.0005, 0.47, 1.10, None, S),
    (0.031, 0.0005, 0.05, 0.30, 1, C),
])
def test_number_outcomes(value, h, lo, hi, reference, expected):
    assert outcomes.number(value, h, lo, hi, reference) == expected


@pytest.mark.parametrize("kind, x, lo, hi, expected", [
    ("above", 0, 0.1, 0.2, S), ("above", 0, -0.2, -0.1, C), ("above", 0, -0.1, 0.1, U),
    ("below", 1, 0.2, 0.9, S), ("below", 1, 1.1, 1.3, C), ("below", 1, 0.9, 1.1, U),
    ("between", [1, 2], 1.2, 1.8, S), ("between", [1, 2], 2.1, 2.5, C),
    ("between", [1, 2], 1.5, 2.5, U), ("contains", 0, -0.1, 0.1, S),
    ("contains", 0, 0.1, 0.2, C),
])
def test_direction_outcomes(kind, x, lo, hi, expected):
    assert outcomes.direction(kind, x, lo, hi) == expected


@pytest.mark.parametrize("value, h, intervals, expected", [
    (1.0, 0.05, [(0.98, 1.02), (0.97, 1.01)], S),
    (1.0, 0.05, [(0.98, 1.02), (1.10, 1.20)], C),
    (1.0, 0.05, [(0.90, 1.10), (0.97, 1.01)], U),
    (None, 0.05, [(2.30, 2.35), (2.33, 2.38)], S),
    (None, 0.05, [(1.28, 1.71), (3.22, 4.33)], C),
    (None, 0.05, [(2.0, 2.8), (2.1, 2.9)], U),
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
