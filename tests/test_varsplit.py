"""varsplit: the increment bookkeeping, what each residual-scaling scheme does to the forward
pass, the layerwise calibration stage, and the fits (small stacks, fixed seeds, seconds)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import planned

from depthlab.core.calibrate import branch_scales, calibrate
from depthlab.core.measure import measure_cell
from depthlab.core.model import build, forward
from depthlab.planner.calibration import calibrated_arms
from depthlab.planner.cost import pass_plan
from depthlab.planner.grid import study_jobs
from depthlab.studies.varsplit import fit as varsplit
from depthlab.vocabulary.settings import ConfigError, RunSettings


def small(**kw) -> RunSettings:
    base = dict(placement="pre", init="fan_in", grad_of="none", d_model=16, heads=2, tokens=16,
                depth=6, seeds=3)
    return RunSettings(**{**base, **kw})


def traced(s: RunSettings, scale_input: float = 1.0, scales=None):
    params, draw = build(s, [0, 1, 2])
    with torch.no_grad():
        return forward(params, scale_input * draw.x, s, scales)[1]


def wide(frame: pd.DataFrame, metric: str, sublayer: str) -> np.ndarray:
    sub = frame[(frame["metric"] == metric) & (frame["sublayer"] == sublayer)]
    return sub.pivot(index="seed", columns="layer", values="value").to_numpy()


@pytest.mark.parametrize("skip", [1.0, 1.7])
def test_increments_add_up_to_the_stream_variance(skip):
    # the probe's identity: V(h_l) = c^2 V_{l-1} + delta_attn(l), V_l = c^2 V(h_l) + delta_mlp(l)
    frame = measure_cell(*planned(small(skip_scale=skip)))
    v = wide(frame, "stream_var", "block")
    a, m = wide(frame, "delta", "attn"), wide(frame, "delta", "mlp")
    rebuilt = v[:, :1].copy()
    for layer in range(a.shape[1]):
        rebuilt = np.hstack([rebuilt, skip**2 * (skip**2 * rebuilt[:, -1:] + a[:, [layer]])
                             + m[:, [layer]]])
    np.testing.assert_allclose(rebuilt, v, rtol=1e-12)
    if skip == 1.0:  # they telescope: V_L = V_0 + sum of all increments
        np.testing.assert_allclose(v[:, -1], v[:, 0] + a.sum(1) + m.sum(1), rtol=1e-12)


def test_uniform_alpha_scales_increments_by_alpha_squared_only_with_the_input():
    alpha = 0.5
    one = measure_cell(*planned(small()))
    # the first block reads the same input, so its branch adds exactly alpha * a
    t1, ta = traced(small()), traced(small(residual_scale=alpha))
    torch.testing.assert_close(ta.mid[0] - ta.stream[0], alpha * t1.attn[0], rtol=1e-12, atol=0)
    # with the input scaled too, the whole stream is alpha times (LayerNorm's scale invariance,
    # up to its eps): every increment is alpha^2 times
    scaled = traced(small(residual_scale=alpha), scale_input=alpha)
    for x1, xa in zip(t1.stream, scaled.stream, strict=True):
        torch.testing.assert_close(xa.var(dim=(1, 2)), alpha**2 * x1.var(dim=(1, 2)), rtol=1e-3,
                                   atol=0)
    # with the input unscaled the input's share changes, and deep increments are not alpha^2 x
    other = measure_cell(*planned(small(residual_scale=alpha)))
    ratio = wide(other, "delta", "attn").mean(0) / wide(one, "delta", "attn").mean(0)
    assert abs(ratio[-1] / alpha**2 - 1) > 0.1


def test_init_std_scheme_equals_branch_multiplier_under_fan_in():
    # out_scale scales Wo and W2; with fan_in's zero biases that is the branch output times alpha
    by_init, by_branch = traced(small(out_scale=0.3)), traced(small(residual_scale=0.3))
    for a, b in zip(by_init.stream, by_branch.stream, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_skip_scale_is_a_geometric_branch_multiplier():
    # skip c at every sublayer == branch multiplier c^-k at sublayer k, stream divided by c^k
    # (LayerNorm's scale invariance; its eps = 1e-5 leaves differences of order 1e-5)
    c, s = 1.5, small()
    scales = [(c ** -(2 * i + 1), c ** -(2 * i + 2)) for i in range(s.depth)]
    skip, geometric = traced(small(skip_scale=c)), traced(s, scales=scales)
    for layer, (a, b) in enumerate(zip(skip.stream, geometric.stream, strict=True)):
        torch.testing.assert_close(a / c ** (2 * layer), b, rtol=1e-4, atol=1e-4)


def test_config_scales_change_the_forward_pass():
    base = traced(small())
    for kw in ({"residual_scale": 0.5}, {"out_scale": 0.5}, {"skip_scale": 2.0}):
        assert not torch.allclose(traced(small(**kw)).stream[-1], base.stream[-1]), kw
    scales = [(0.5 + 0.1 * i, 1.5 - 0.1 * i) for i in range(6)]
    t = traced(small(), scales=scales)
    for layer, (aa, am) in enumerate(scales):
        torch.testing.assert_close(t.mid[layer] - t.stream[layer], aa * t.attn[layer])
        torch.testing.assert_close(t.stream[layer + 1] - t.mid[layer], am * t.mlp[layer])
    with pytest.raises(ConfigError, match="skip_scale"):
        RunSettings(placement="none", skip_scale=2.0).check()


def test_calibration_flattens_the_scaled_first_order_increments():
    frame = measure_cell(*planned(small()))
    frame["label"] = "depth-6"
    cal = calibrate(frame)
    scaled = cal["alpha"] ** 2 * cal["delta"]
    target = cal.groupby("branch")["delta"].transform("mean")
    np.testing.assert_allclose(scaled, target, rtol=1e-12)
    scales = branch_scales(cal)["depth-6"]
    assert len(scales) == 6
    attn = cal[cal["branch"] == "attn"].sort_values("layer")["alpha"].to_numpy()
    assert [a for a, _ in scales] == pytest.approx(attn, rel=0, abs=0)
    bad = frame.copy()
    bad.loc[(bad["metric"] == "delta") & (bad["layer"] == 2), "value"] = -1.0
    with pytest.raises(ValueError, match="layer 2"):
        calibrate(bad)


def test_forward_only_runs_give_the_same_forward_probes():
    with_grad = measure_cell(*planned(small(depth=3, grad_of="params")))
    without = measure_cell(*planned(small(depth=3)))
    assert "grad_norm" in set(with_grad["metric"]) and "grad_norm" not in set(without["metric"])
    np.testing.assert_array_equal(wide(without, "delta", "mlp"), wide(with_grad, "delta", "mlp"))


def test_measured_branch_scales_are_recorded_and_applied():
    s = small(depth=3)
    scales = [(0.5, 2.0), (1.0, 1.0), (2.0, 0.5)]
    frame = measure_cell(s, pass_plan(s), branch_scales=scales)
    recorded = wide(frame, "branch_scale", "attn")
    np.testing.assert_array_equal(recorded, np.tile([0.5, 1.0, 2.0], (3, 1)))
    plain = measure_cell(s, pass_plan(s))
    assert not np.allclose(wide(frame, "delta", "attn"), wide(plain, "delta", "attn"))


def _config(**layerwise):
    arms = {"base": {"axes": {"depth": [4]}},
            "layerwise": {"calibrate_from": "base", "axes": {"depth": [4]}, **layerwise}}
    return {"studies": {"varsplit": {"settings": {"init": "fan_in", "seeds": 2}, "arms": arms}}}


def test_calibrated_arms_checks_its_source():
    config = _config()
    jobs = {(j.study, j.arm, j.job): j for j in study_jobs(config)}
    assert calibrated_arms(config, jobs) == {("varsplit", "layerwise"): "base"}
    for bad, match in (({"axes": {"depth": [5]}}, "jobs"),
                       ({"settings": {"seeds": 3}}, "cell settings"),
                       ({"calibrate_from": "nope"}, "not an uncalibrated arm")):
        config = _config(**bad)
        jobs = {(j.study, j.arm, j.job): j for j in study_jobs(config)}
        with pytest.raises(ConfigError, match=match):
            calibrated_arms(config, jobs)


def test_fit_slopes_ratios_and_crossover_match_direct_computation():
    frame = measure_cell(*planned(small(depth=8, seeds=4)))
    for key, value in {"study": "varsplit", "arm": "base", "job": "all", "label": "x"}.items():
        frame[key] = value
    fits = varsplit.fit(frame, {})

    def q(name):
        return fits[fits["quantity"] == name].iloc[0]

    a, m = wide(frame, "delta", "attn"), wide(frame, "delta", "mlp")
    layers = np.arange(1, 9)
    slopes = [np.polyfit(layers, row, 1)[0] for row in a]
    assert q("slope_attn")["mean"] == pytest.approx(np.mean(slopes), rel=1e-10)
    assert q("ratio_first")["median"] == pytest.approx(np.median(m[:, 0] / a[:, 0]), rel=1e-10)
    late_early = a[:, 6:].mean(1) / a[:, :2].mean(1)
    assert q("late_early_attn")["mean"] == pytest.approx(late_early.mean(), rel=1e-10)
    above = np.flatnonzero(a.mean(0) > m.mean(0))
    crossover = fits[fits["quantity"] == "crossover"]
    assert list(crossover["mean"]) == ([layers[above[0]]] if len(above) else [])
    assert set(fits["scheme"]) == {"none"}


@pytest.mark.workflow
def test_layerwise_arm_runs_with_its_calibration(tiny_run):
    cal = pd.read_parquet(tiny_run / "results/calibration/varsplit/layerwise/depth-8.parquet")
    run = pd.read_parquet(tiny_run / "results/runs/varsplit/layerwise/depth-8.parquet")
    base = pd.read_parquet(tiny_run / "results/runs/varsplit/base/depth-8.parquet")
    applied = run[run["metric"] == "branch_scale"].groupby(["sublayer", "layer"])["value"]
    assert (applied.nunique() == 1).all()
    expect = cal.set_index(["branch", "layer"])["alpha"].sort_index()
    np.testing.assert_array_equal(applied.first().sort_index().to_numpy(), expect.to_numpy())
    assert "branch_scale" not in set(base["metric"])
    # judged on held-out seeds: the calibrated run's seeds follow the base run's
    assert set(run["seed"]).isdisjoint(set(base["seed"]))
    assert min(run["seed"]) == max(base["seed"]) + 1
    table = pd.read_csv(tiny_run / "results/tables/uniform_scale.csv")
    assert table["scheme"].str.startswith("layerwise").sum() == 1
