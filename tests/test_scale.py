"""The scale study (docs/SCALE.md): its fit's local exponents against analytic values, its tables
and figures from a small grid, and the shipped config's cells within the memory bound."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from depthlab.core.measure import measure_job
from depthlab.planner import cost
from depthlab.planner.grid import study_jobs
from depthlab.planner.overlay import config_of
from depthlab.planner.validate import check_config
from depthlab.studies import STUDIES
from depthlab.studies.scale import figures, tables
from depthlab.studies.scale.fit import fit, local_exponents, omega_local

SMALL = {"d_model": 8, "heads": 2, "tokens": 8, "seeds": 3}


def small_config() -> dict:
    forward = {"grad_of": "none"}
    return {"studies": {"scale": {"settings": SMALL, "arms": {
        "depth": {"settings": forward, "axes": {"placement": ["pre", "post", "rezero"],
                                                "depth": [8, 16]}, "pack": ["depth"]},
        "grad": {"axes": {"placement": ["pre", "post"], "depth": [4, 8, 16]},
                 "pack": ["depth"]},
        "grad_weights": {"settings": {"grad_of": "weights"},
                         "axes": {"placement": ["pre"], "depth": [4, 8]}, "pack": ["depth"]},
        "width_8": {"settings": {**forward, "depth": 8},
                    "axes": {"placement": ["pre"], "d_model": [8, 16]}, "pack": ["d_model"]},
    }}}}


@pytest.fixture(scope="module")
def fits() -> pd.DataFrame:
    jobs = study_jobs(small_config())
    return fit(pd.concat([measure_job(job) for job in jobs], ignore_index=True), {})


def test_local_exponents_of_known_profiles():
    """sd growing as l^a gives a at every octave; V_l = V_0 + l sigma² gives the prediction's
    closed form; omega ~ k^-1/2 gives -1/2."""
    layers = np.arange(0, 65)
    rms = pd.Series(np.r_[1.0, layers[1:] ** 0.3], index=layers)
    var = pd.Series(1.0 + 0.1 * layers, index=layers)
    found = local_exponents(rms, var)
    assert set(found["stream_local_exponent"]) == {8, 16, 32, 64}
    assert all(v == pytest.approx(0.3, rel=1e-12) for v in found["stream_local_exponent"].values())
    expected = 0.5 * np.log((1 + 6.4) / (1 + 3.2)) / np.log(2)
    assert found["stream_local_prediction"][64] == pytest.approx(expected, rel=1e-12)
    omega = pd.Series(layers[1:] ** -0.5, index=layers[1:])
    assert all(v == pytest.approx(-0.5, rel=1e-12) for v in omega_local(omega).values())
    assert omega_local(pd.Series(0.0, index=layers[1:])) == {}  # ReZero at init: left out


def test_post_ln_stream_does_not_grow_and_pre_ln_does(fits):
    local = fits[(fits["quantity"] == "stream_local_exponent") & (fits["arm"] == "depth")
                 & (fits["depth"] == 16)]
    post = local[local["placement"] == "post"]
    assert set(post["layer"]) == {8, 16}
    assert np.allclose(post["mean"], 0, atol=1e-4)  # an LN output: unit rms at every block
    pre = local[local["placement"] == "pre"].set_index("layer")["mean"]
    assert pre[16] > 0.05  # the stream grows over the deepest octave


def test_grad_ratio_and_its_local_exponent_per_reading(fits):
    ratio = fits[fits["quantity"] == "grad_ratio"]
    assert set(zip(ratio["grad_of"], ratio["placement"], ratio["depth"], strict=True)) >= {
        ("params", "pre", 16), ("params", "post", 4), ("weights", "pre", 8)}
    local = fits[fits["quantity"] == "grad_ratio_local_exponent"]
    pre = local[(local["placement"] == "pre") & (local["grad_of"] == "params")]
    assert sorted(pre["depth"]) == [8, 16]  # between consecutive depths, at the deeper one
    r = ratio[(ratio["placement"] == "pre") & (ratio["grad_of"] == "params")].set_index("depth")
    seeds = np.array(r.loc[8, "seed_values"]), np.array(r.loc[4, "seed_values"])
    expected = np.mean(np.log(seeds[0] / seeds[1]) / np.log(2))
    assert pre.set_index("depth").loc[8, "mean"] == pytest.approx(expected, rel=1e-12)


def test_tables_and_figures_draw_from_the_small_grid(fits):
    exponents = tables.local_exponents(fits)
    assert set(exponents["placement"]) == {"Pre-LN", "Post-LN", "ReZero"}
    assert "—" in set(exponents.loc[exponents["placement"] == "ReZero", "ω slope"])
    grad = tables.grad_ratio_by_depth(fits)
    assert set(grad["gradient"]) == {"all parameters", "weight matrices"}
    for draw in (figures.local_exponents, figures.grad_ratio, figures.width):
        fig = draw(fits)
        drawn = [ax for ax in fig.axes if ax.has_data()]
        assert drawn and all(ax.get_xlabel() for ax in drawn)


def test_shipped_scale_config_stays_within_4_gb_per_cell():
    """Every cell of config/scale.yaml passes under 4 GB by the memory model (streamed blocks,
    recomputed backward where the graph would not fit)."""
    config = config_of(ROOT, "config/scale.yaml")
    jobs = check_config(config, ROOT / "workflow/schemas/config.schema.yaml", STUDIES)
    deepest = [c.settings for j in jobs for c in j.cells if c.settings.depth == 1024]
    assert deepest and all(cost.pass_bytes(s) < 4e9 for j in jobs for c in j.cells
                           for s in [c.settings])
    assert any(cost.recomputes(s) for s in deepest if s.grad_of != "none")
