"""theory096: the omega formula, the omega probe in the theorem's own setting, the independence
probes, and the theory096 study of the tiny workflow."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from depthlab.analysis.omega import formula_abs, general_abs, independent_abs, omega_sq
from depthlab.core.model import Trace, build, forward
from depthlab.core.probes import block_independence, omega, stream_stats
from depthlab.vocabulary.settings import RunSettings

S, N, D, L = 4, 32, 256, 32


def test_omega_formula_hand_values():
    # k = 1: 2 / (1 * (0 + 1)) = 2
    assert omega_sq(1) == pytest.approx(2, rel=1e-15)
    # k = 2: 2 / (sqrt2 (1 + sqrt2)) = 2 - sqrt2
    assert omega_sq(2) == pytest.approx(2 - math.sqrt(2), rel=1e-14)
    # large k: sqrt(k-1) = sqrt(k) (1 - 1/(2k) - ...) so omega^2 = 1 / (k - 1/4) + O(k^-3)
    k = 10**4
    assert omega_sq(k) == pytest.approx(1 / (k - 0.25), rel=1e-9)
    # E|N(0, 2)| = 2 / sqrt(pi); the note's k = 24 over k = 1 is 1/sqrt(sqrt24 (sqrt23 + sqrt24))
    assert formula_abs(1) == pytest.approx(2 / math.sqrt(math.pi), rel=1e-14)
    assert formula_abs(24) / formula_abs(1) == pytest.approx(0.145103, abs=1e-6)
    # counting the input as the first term shifts k by one
    assert formula_abs(5, input_terms=1) == formula_abs(6)


def test_independence_prediction_reduces_to_the_formula():
    k = np.arange(1, 33)
    equal = np.ones(32)
    # input as large as one block: the input is the first term
    np.testing.assert_allclose(independent_abs(np.array(1.0), equal), formula_abs(k, 1),
                               rtol=1e-12)
    # negligible input: the note's counting, omega_k at block k
    np.testing.assert_allclose(independent_abs(np.array(1e-12), equal), formula_abs(k),
                               rtol=1e-5)


def test_general_form_with_linear_variance_is_the_formula():
    """omega_k^2 = 2 - 2 sqrt(V_{k-1}/V_k) with V_k = k sigma^2 is the note's formula; a
    variance that falls leaves the form undefined (NaN), not a negative square."""
    k = np.arange(1, 33)
    np.testing.assert_allclose(general_abs(3.0 * np.arange(0, 33)), formula_abs(k), rtol=1e-12)
    assert np.isnan(general_abs(np.array([1.0, 2.0, 1.5])))[1]
    assert not np.isnan(general_abs(np.array([1.0, 2.0, 1.5])))[0]


def synthetic_stream(block_sd: float = 1.0, depth: int = L) -> list[torch.Tensor]:
    """The theorem's setting: x_k = x_0 + sum of k independent N(0, block_sd^2) block outputs,
    x_0 ~ N(0, 1)."""
    gen = torch.Generator().manual_seed(0)
    stream = [torch.randn(S, N, D, generator=gen, dtype=torch.float64)]
    for _ in range(depth):
        f = block_sd * torch.randn(S, N, D, generator=gen, dtype=torch.float64)
        stream.append(stream[-1] + f)
    return stream


@pytest.mark.parametrize("block_sd, input_terms", [(1.0, 1), (1e3, 0)])
def test_omega_probe_recovers_formula_on_independent_gaussian_blocks(block_sd, input_terms):
    """Blocks as large as the input: the input is one more term (block k gives omega_{k+1});
    blocks 1000 times larger: the input is the note's term 0 (block k gives omega_k, k = 1
    included; an exactly zero input would give LN(0) = 0 and Var D_1 = 1 instead of 2)."""
    probes = {p.metric: p for p in omega(None, Trace(stream=synthetic_stream(block_sd)),
                                         RunSettings(depth=L))}
    k = np.array(probes["omega_abs"].layers)
    assert list(k) == list(range(1, L + 1))
    mean_abs = probes["omega_abs"].values.mean(0).numpy()
    var = probes["omega_var"].values.mean(0).numpy()
    # 5 standard errors of a mean of n Gaussian |z| (cv sqrt(pi/2 - 1)) and z^2 (cv sqrt 2)
    n = S * N * D
    np.testing.assert_allclose(mean_abs, formula_abs(k, input_terms),
                               rtol=5 * math.sqrt(math.pi / 2 - 1) / math.sqrt(n))
    np.testing.assert_allclose(var, omega_sq(k + input_terms), rtol=5 * math.sqrt(2 / n))
    slope = np.polyfit(np.log(k), np.log(mean_abs), 1)[0]
    theory = np.polyfit(np.log(k), np.log(formula_abs(k, input_terms)), 1)[0]
    assert slope == pytest.approx(theory, abs=0.01)


def test_block_corr_is_gated_and_recovers_a_planted_correlation():
    stream = synthetic_stream(depth=2)
    off = block_independence(None, Trace(stream=stream), RunSettings(depth=2))
    assert {p.metric for p in off} == {"block_var", "block_abs", "block_stream_corr"}
    # plant corr(f_2, f_1) = 0.6
    f1, f2 = stream[1] - stream[0], stream[2] - stream[1]
    stream = [stream[0], stream[1], stream[1] + 0.6 * f1 + 0.8 * f2]
    probes = block_independence(None, Trace(stream=stream), RunSettings(depth=2, block_corr=True))
    pair = next(p for p in probes if p.metric == "block_corr")
    assert (pair.sublayer, pair.layers) == ("f1", [2])
    torch.testing.assert_close(pair.values, torch.full((S, 1), 0.6, dtype=torch.float64),
                               rtol=0, atol=5 / math.sqrt(N * D))


def test_independent_blocks_are_uncorrelated():
    probes = block_independence(None, Trace(stream=synthetic_stream()),
                                RunSettings(depth=L, block_corr=True))
    corr = torch.cat([p.values for p in probes if p.metric == "block_corr"], dim=1)
    assert corr.shape == (S, L * (L - 1) // 2)
    assert corr.abs().max() < 5 / math.sqrt(N * D)


def test_stream_variance_telescopes_through_block_var_and_corr():
    """V_k = V_{k-1} + Var f_k + 2 corr(f_k, x_{k-1}) sqrt(V_{k-1} Var f_k), exactly."""
    s = RunSettings(placement="pre", depth=5, d_model=16, heads=4, tokens=8, seeds=2,
                    out_scale=3.0)
    params, draw = build(s, [0, 1])
    with torch.no_grad():
        _, trace = forward(params, draw.x, s)
    got = {p.metric: p.values for p in stream_stats(params, trace, s)
           + block_independence(params, trace, s)}
    v, bv, r = got["stream_var"], got["block_var"], got["block_stream_corr"]
    torch.testing.assert_close(v[:, 1:], v[:, :-1] + bv + 2 * r * (v[:, :-1] * bv).sqrt(),
                               rtol=1e-12, atol=0)


def test_bulky_probe_stays_out_of_default_runs():
    s = RunSettings(placement="pre", depth=3, d_model=16, heads=4, tokens=8, seeds=1)
    params, draw = build(s, [0])
    with torch.no_grad():
        _, trace = forward(params, draw.x, s)
    metrics = {p.metric for p in block_independence(params, trace, s)}
    assert "block_corr" not in metrics
    post = RunSettings(placement="post", depth=3, d_model=16, heads=4, tokens=8, block_corr=True)
    assert block_independence(params, trace, post) == []


@pytest.mark.workflow
def test_tiny_theory096_tables(tiny_run):
    table = pd.read_parquet(tiny_run / "results/tables/theory096.parquet")
    corr = table[table["metric"] == "block_corr"]
    cells = table[["label", "depth", "seeds"]].drop_duplicates()
    expected = sum(d * (d - 1) // 2 * s for d, s in zip(cells["depth"], cells["seeds"],
                                                        strict=True))
    assert len(corr) == expected
    stack96 = pd.read_parquet(tiny_run / "results/tables/stack96.parquet")
    assert "block_corr" not in set(stack96["metric"])
    exponent = pd.read_csv(tiny_run / "results/tables/omega_exponent.csv")
    measured = exponent[exponent.iloc[:, 0].str.startswith("measured")]
    # a row per output scale, then the premise arm's Sandwich-LN
    assert [r.split(" (L=")[0] for r in measured.iloc[:, 0]] == [
        "measured, output scale 1", "measured, output scale 3", "measured, output scale 10",
        "measured, premise: Sandwich-LN"]
    # every cell is set against the theorem under its measured variances too
    assert measured.filter(like="independence prediction").notna().all().all()
    independence = pd.read_csv(tiny_run / "results/tables/block_independence.csv")
    assert len(independence) == len(measured)
    assert independence["(V_L − V_0) / Σ Var f_k"].notna().all()
    slopes = measured.filter(like="slope").to_numpy(float)
    assert np.isfinite(slopes).all()
    # a larger output scale makes blocks comparable to the input: a steeper decay
    assert slopes[0, 0] > slopes[2, 0]
    # the general form per seed: a row per block of each cell, at most one value per seed
    fits = pd.concat([pd.read_parquet(p) for p in (tiny_run / "results/fits/theory096")
                      .glob("*.parquet")])
    general = fits[fits["quantity"] == "omega_abs_general"]
    omega_abs = fits[fits["quantity"] == "omega_abs"]
    assert set(general["layer"]) == set(omega_abs["layer"])
    paired = general.merge(omega_abs, on=["label", "layer"], suffixes=("", "_measured"))
    assert (paired["n_seeds"] <= paired["n_seeds_measured"]).all()


def test_block_abs_is_the_gaussian_mean_absolute_value():
    """For Gaussian block outputs, mean |f_k| = sqrt(2/pi) sd(f_k): the ledger's check of the
    note's Gaussian form reads this ratio."""
    stream = synthetic_stream(depth=4)
    probes = {p.metric: p for p in block_independence(None, Trace(stream=stream),
                                                      RunSettings(depth=4))}
    ratio = probes["block_abs"].values / probes["block_var"].values.sqrt()
    np.testing.assert_allclose(ratio.numpy(), math.sqrt(2 / math.pi), rtol=0.02)
