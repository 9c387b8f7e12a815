"""The fixes study (docs/FIXES.md): every placement on every probe at init, and the trained runs.

The fit on a small measured table (shapes, every placement present, what each fix must give at
init by its definition), the tables and figures on it, the configs, and the tiny study end to
end through Snakemake."""

from __future__ import annotations

from itertools import product

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, shared_frame

from benchmarks.study_cost import gpu_train_seconds
from depthlab.core.calibrate import branch_scales, calibrate
from depthlab.core.measure import measure_job
from depthlab.planner.documented import CONFIRM_RUNS, DOCUMENTED_NAMED_RUNS
from depthlab.planner.grid import expand_axes, study_jobs
from depthlab.planner.overlay import config_of
from depthlab.planner.validate import check_config
from depthlab.studies import BY_NAME, TARGETS
from depthlab.studies.fixes import tables
from depthlab.studies.fixes.fit import CALIBRATED, FIX_LABELS, LINEAR_TOLERANCE, QUANTITIES, fit
from depthlab.vocabulary.placements import ORDER, PLACEMENTS
from depthlab.vocabulary.settings import ConfigError
from depthlab.vocabulary.train_settings import training_arms

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
DEPTHS = (2, 4)
SMALL = {"d_model": 8, "heads": 2, "tokens": 8, "seeds": 3, "grad_of": "params"}
WEIGHTED = [p for p in ORDER if p != "rezero"]  # ReZero's weights get no gradient at init
OWN_INIT = [p for p in ORDER if PLACEMENTS[p].own_init]  # their papers' or official code's init
COMMON_INIT = [p for p in ORDER if p not in OWN_INIT]  # the placements the init axis covers
# the update as a linear response (arm update_response): its placements, lrs and first steps
RESPONSE_PLACEMENTS = ["post", "pre", "deepnorm", "deepnorm_torchscale"]
LRS = [1e-5, 1e-4, 1e-3]
STEPS = ["sgd", "adam"]
# each paper's comparison at its init: ResiDual's, NormFormer's and DeepNet's at fairseq's
# (trained: DeepNorm draws its own), Peri-LN's at Megatron-LM's (gpt2)
PAPER_ARMS = {"fairseq": ["post", "pre", "resi_dual", "normformer"],
              "gpt2": ["post", "pre", "peri"]}


def small_config() -> dict:
    """A depth arm of every placement, a width arm, a calibrated Pre-LN arm, the central
    claims' arm (the Jacobian and update probes) and the update as a linear response (two
    placements, every lr and first step), all small."""
    every = list(ORDER)
    calib = {"d_model": 16, "tokens": 16, "seeds": 6}
    return {"studies": {"fixes": {"settings": SMALL, "arms": {
        "depth": {"axes": {"placement": every, "depth": list(DEPTHS)},
                  "pack": ["placement", "depth"]},
        "grad_weights": {"settings": {"grad_of": "weights"},
                         "axes": {"placement": WEIGHTED, "depth": [4]},
                         "pack": ["placement", "depth"]},
        "grad_ce": {"settings": {"loss": "cross_entropy"},
                    "axes": {"placement": every, "depth": [4]}, "pack": ["placement", "depth"]},
        "width_16": {"settings": {"d_model": 16, "heads": 4, "depth": 4},
                     "axes": {"placement": every}, "pack": ["placement"]},
        "calib_base": {"settings": calib, "axes": {"placement": ["pre"], "depth": [4]}},
        "calibrated": {"settings": {**calib, "seed_offset": 6}, "calibrate_from": "calib_base",
                       "axes": {"placement": ["pre"], "depth": [4]}},
        "central": {"settings": {"jacobian_dirs": 2, "update_lr": 1e-3},
                    "axes": {"placement": every, "depth": list(DEPTHS)},
                    "pack": ["placement", "depth"]},
        "update_response": {"axes": {"placement": ["pre", "deepnorm"], "depth": list(DEPTHS),
                                     "update_lr": LRS, "update_optimizer": STEPS},
                            "pack": ["placement", "depth", "update_lr", "update_optimizer"]},
        "update_theta": {"settings": {"update_optimizer": "sgd", "update_params": "weights"},
                         "axes": {"placement": ["pre", "deepnorm"], "depth": list(DEPTHS),
                                  "update_lr": LRS[:2]},
                         "pack": ["placement", "depth", "update_lr"]},
    }}}}


def measure_small_config() -> pd.DataFrame:
    """The small config measured as the workflow would: the calibrated arm with the scales of
    its source's shard."""
    frames = {}
    for job in study_jobs(small_config()):
        scales = None
        if job.arm == "calibrated":
            scales = branch_scales(calibrate(frames[("calib_base", job.job)]))
        frames[(job.arm, job.job)] = measure_job(job, scales)
    return pd.concat(frames.values(), ignore_index=True)


@pytest.fixture(scope="session")
def measured(tmp_path_factory, worker_id) -> pd.DataFrame:
    """`measure_small_config`, once for the session (`shared_frame`: about 18 s)."""
    return shared_frame(tmp_path_factory, worker_id, "fixes_small", measure_small_config)


@pytest.fixture(scope="session")
def fits(measured) -> pd.DataFrame:
    return fit(measured, {})


def rows(fits, quantity, **where) -> pd.DataFrame:
    out = fits[fits["quantity"] == quantity]
    for key, value in where.items():
        out = out[out[key] == value]
    return out


def test_every_placement_has_every_cell_quantity(fits):
    for quantity in ("grad_ratio", "stream_growth", "omega_last", "token_corr_last",
                     "head_input_sd", "grad_log_sd"):
        depth = rows(fits, quantity, arm="depth")
        assert set(zip(depth["fix"], depth["depth"], strict=True)) == {
            (p, d) for p in ORDER for d in DEPTHS}, quantity
        assert set(rows(fits, quantity, arm="width_16")["fix"]) == set(ORDER), quantity
    assert set(fits["quantity"]) <= set(QUANTITIES)


def test_rows_carry_every_seed(fits):
    seeds = list(range(SMALL["seeds"]))
    for _, row in fits[fits["arm"] == "depth"].iterrows():
        assert list(row["seeds"]) == seeds and len(row["seed_values"]) == len(seeds)
        assert row["n_seeds"] == len(seeds)
        assert row["min"] <= row["median"] <= row["max"]


def test_per_block_quantities_have_one_row_per_block(fits):
    for placement in ORDER:
        for depth in DEPTHS:
            where = {"arm": "depth", "fix": placement, "depth": depth}
            assert sorted(rows(fits, "stream_rms", **where)["layer"]) == list(range(depth + 1))
            assert sorted(rows(fits, "grad_norm", **where)["layer"]) == list(range(1, depth + 1))
            assert sorted(rows(fits, "omega_abs", **where)["layer"]) == list(range(1, depth + 1))


def test_rezero_is_the_identity_at_init(fits):
    where = {"arm": "depth", "fix": "rezero"}
    for quantity, value in (("stream_growth", 1.0), ("omega_last", 0.0),
                            ("branch_ratio_last_attn", 0.0), ("branch_ratio_last_mlp", 0.0)):
        found = rows(fits, quantity, **where)
        assert len(found) > 0, quantity
        for _, row in found.iterrows():
            assert list(row["seed_values"]) == [value] * SMALL["seeds"], quantity
    assert rows(fits, "omega_abs", **where)["max"].max() == 0
    assert list(rows(fits, "stream_exponent", **where)["seed_values"].iloc[0]) == [0.0] * 3
    # omega's decay rate is undefined where omega is 0: absent, not NaN
    assert rows(fits, "omega_slope", **where).empty
    assert fits["median"].notna().all()


def test_post_ln_stream_is_normalised_and_resi_dual_reads_it(fits):
    post = rows(fits, "stream_rms", arm="depth", fix="post")
    blocks = post[post["layer"] >= 1]
    # LN output without affine: rms = sqrt(var / (var + eps)), 1 to about eps / 2
    for values in blocks["seed_values"]:
        assert np.allclose(values, 1.0, atol=1e-4)
    # ResiDual's x_a is Post-LN's stream exactly (same draws per seed); its second stream grows
    resi = rows(fits, "stream_rms", arm="depth", fix="resi_dual")
    assert np.array_equal(np.stack(resi["seed_values"]), np.stack(post["seed_values"]))
    carry = rows(fits, "carry_growth", arm="depth")
    assert set(carry["fix"]) == {"resi_dual"} and (carry["min"] > 1).all()


def test_probes_follow_the_registry_flags(fits):
    ratio = rows(fits, "branch_ratio_last_attn", arm="depth")
    assert set(ratio["fix"]) == {p for p, e in PLACEMENTS.items() if e.residual}
    block = rows(fits, "branch_ratio_last_block", arm="depth")
    assert set(block["fix"]) == {p for p, e in PLACEMENTS.items() if e.telescopes}
    # Pre-LN's stream grows, Post-LN's does not (its growth is 1/rms of the input)
    pre = rows(fits, "stream_growth", arm="depth", fix="pre", depth=4)
    assert (pre["min"] > 1).all()


def test_exponents_are_per_seed_loglog_slopes(fits):
    growth = rows(fits, "stream_growth", arm="depth", fix="pre").sort_values("depth")
    values = np.log(np.stack(growth["seed_values"]))  # (depths, seeds)
    slopes = (values[1] - values[0]) / np.log(DEPTHS[1] / DEPTHS[0])
    exponent = rows(fits, "stream_exponent", arm="depth", fix="pre").iloc[0]
    assert np.allclose(exponent["seed_values"], slopes, rtol=1e-10)
    assert pd.isna(exponent["depth"])


def test_calibrated_cells_are_their_own_fix(fits):
    calibrated = rows(fits, "stream_growth", arm="calibrated")
    assert calibrated["fix"].tolist() == [CALIBRATED]
    assert calibrated["placement"].tolist() == ["pre"]
    assert list(calibrated["seeds"].iloc[0]) == list(range(6, 12))  # held-out seeds
    assert rows(fits, "stream_growth", arm="calib_base")["fix"].tolist() == ["pre"]
    scales = rows(fits, "branch_scale_attn", arm="calibrated")
    assert len(scales) == 4 and not rows(fits, "branch_scale_attn", arm="depth").size


def test_tables_have_a_row_per_placement(fits):
    table = tables.probes_at_depth(fits[fits["arm"].isin(["depth", "calibrated"])], 4)
    assert table["placement"].tolist() == [FIX_LABELS[p] for p in (*ORDER, CALIBRATED)]
    rezero = table.set_index("placement").loc[FIX_LABELS["rezero"]]
    assert rezero["stream growth rms(x_L)/rms(x_0)"] == "1 [1, 1]"
    assert rezero["ω decay rate (log-log slope)"] == "—"
    width = tables.width(fits[fits["arm"].isin(["depth", "width_16"])])
    assert len(width) == 2 * len(ORDER) and sorted(width["d"].unique()) == [8, 16]


def test_central_table_has_every_placement_at_every_depth(fits):
    """The Jacobian and update columns at each depth of the arm and the update's exponent; the
    exponent is the per-seed log-log slope of the update on L, with its t-interval; ReZero's
    Jacobian is the identity at init."""
    table = tables.central(fits[fits["arm"] == "central"])
    assert table["placement"].tolist() == [FIX_LABELS[p] for p in ORDER]
    assert list(table.columns[1:]) == [
        f"{column}, L = {depth}" for depth in DEPTHS for _, column in tables.CENTRAL
    ] + [tables.UPDATE_EXPONENT[1]]
    rezero = table.set_index("placement").loc[FIX_LABELS["rezero"]]
    for depth in DEPTHS:
        assert rezero[f"Jacobian rms σ, L = {depth}"] == "1 [1, 1]"
        assert rezero[f"Jacobian max σ, L = {depth}"] == "1 [1, 1]"
    assert not table.isin(["—"]).any().any()
    update = rows(fits, "model_update", arm="central", fix="pre").sort_values("depth")
    values = np.log(np.stack(update["seed_values"]))
    slopes = (values[1] - values[0]) / np.log(DEPTHS[1] / DEPTHS[0])
    exponent = rows(fits, "model_update_exponent", arm="central", fix="pre").iloc[0]
    assert np.allclose(exponent["seed_values"], slopes, rtol=1e-10)
    assert exponent["ci_lo"] < exponent["mean"] < exponent["ci_hi"]
    assert sorted(rows(fits, "update_stream", arm="central", fix="pre", depth=4)["layer"]) == \
        list(range(5))
    assert rows(fits, "model_update", arm="depth").empty  # the other arms do not take it


def test_the_update_response_is_the_update_per_unit_lr_and_its_linearity(fits):
    """update_response is model_update / update_lr seed by seed; update_linearity its ratio
    between neighbouring lrs (none at the smallest); the exponent is per optimiser and lr; the
    table has a row per placement x first step x lr, linear where SGD is (d = 8: every lr)."""
    arm = {"arm": "update_response", "fix": "pre", "depth": 4, "update_optimizer": "sgd"}
    per_lr = {}
    for lr in LRS:
        update = rows(fits, "model_update", **arm, update_lr=lr).iloc[0]
        response = rows(fits, "update_response", **arm, update_lr=lr).iloc[0]
        assert np.allclose(response["seed_values"], np.array(update["seed_values"]) / lr,
                           rtol=1e-14)
        per_lr[lr] = np.array(response["seed_values"])
    linearity = rows(fits, "update_linearity", **arm).sort_values("update_lr")
    assert linearity["update_lr"].tolist() == LRS[1:]
    for (_, row), lo, hi in zip(linearity.iterrows(), LRS, LRS[1:], strict=False):
        assert np.allclose(row["seed_values"], per_lr[hi] / per_lr[lo], rtol=1e-14)
    exponents = rows(fits, "model_update_exponent", arm="update_response", fix="deepnorm")
    assert sorted(zip(exponents["update_optimizer"], exponents["update_lr"], strict=True)) == \
        sorted((s, lr) for s in STEPS for lr in LRS)
    assert len(rows(fits, "model_update_exponent", arm="central", fix="deepnorm")) == 1
    table = tables.update_response(fits[fits["arm"] == "update_response"])
    assert list(zip(table["placement"], table["first step"], table["η"], strict=True)) == [
        (FIX_LABELS[p], tables.STEP_NAMES[s], lr) for p in ("pre", "deepnorm")
        for s in ("adam", "sgd") for lr in LRS]
    assert set(table["moves"]) == {"every parameter"}
    assert list(table.columns) == ["placement", "first step", "moves", "η",
                                   *(f"dF/η, L = {d}" for d in DEPTHS),
                                   "exponent across depths", "linear regime"]
    assert (table.loc[table["first step"] == "SGD", "linear regime"] == "yes").all()
    assert not table.isin(["—"]).any().any()


def test_the_theorem_s_update_moves_the_weight_matrices_alone(fits):
    """Arm update_theta (update_params weights, DeepNet's θ): its update is its own row, not
    the every-parameter step of the same cell (Pre-LN's norms have gradients at init, so the
    two steps differ); its exponent is per placement and lr; the table names what it moves."""
    cell = {"fix": "pre", "depth": 4, "update_lr": 1e-5, "update_optimizer": "sgd"}
    theta = rows(fits, "model_update", arm="update_theta", **cell)
    every = rows(fits, "model_update", arm="update_response", **cell)
    assert len(theta) == len(every) == 1
    assert set(theta["update_params"]) == {"weights"} and set(every["update_params"]) == {"all"}
    assert not np.allclose(theta["seed_values"].iloc[0], every["seed_values"].iloc[0])
    exponents = rows(fits, "model_update_exponent", arm="update_theta")
    assert sorted(zip(exponents["fix"], exponents["update_lr"], strict=True)) == sorted(
        (f, lr) for f in ("deepnorm", "pre") for lr in LRS[:2])
    table = tables.update_response(fits[fits["arm"].isin(["update_response", "update_theta"])])
    moved = table[table["moves"] == tables.MOVED_NAMES["weights"]]
    assert list(zip(moved["placement"], moved["η"], strict=True)) == [
        (FIX_LABELS[p], lr) for p in ("pre", "deepnorm") for lr in LRS[:2]]
    assert not moved.isin(["—"]).any().any()


def synthetic_update_table(exponent: float, depths=(6, 12, 24, 48), seeds: int = 4,
                           bent: float = 1.2) -> pd.DataFrame:
    """A tidy table of the update_response arm, the forward probes the fit needs (constant
    profiles) and model_update with dF/η = c_seed L^exponent for every placement, first step
    and lr, but Adam's at lr 1e-3 from L = 24 on, which is `bent` times that (beyond the linear
    regime)."""
    out = []
    for placement, depth, lr, step in product(("pre", "deepnorm"), depths, LRS, STEPS):
        cell = {"arm": "update_response", "label": f"{placement}-{depth}-{lr}-{step}",
                "placement": placement, "depth": depth, "d_model": 8, "heads": 2,
                "init": "torch_default", "bias": True, "grad_of": "params", "update_lr": lr,
                "update_optimizer": step, "update_params": "all"}
        profiles = {"stream_rms": {k: 1 + 0.01 * k for k in range(depth + 1)},
                    "omega_abs": {k: 0.5 / k for k in range(1, depth + 1)},
                    "token_corr": {k: 0.1 for k in range(depth + 1)}}
        bend = bent if (step, lr) == ("adam", 1e-3) and depth >= 24 else 1.0
        for seed in range(seeds):
            out += [{**cell, "seed": seed, "layer": k, "sublayer": "block", "metric": metric,
                     "value": value}
                    for metric, profile in profiles.items() for k, value in profile.items()]
            out.append({**cell, "seed": seed, "layer": depth, "sublayer": "head",
                        "metric": "model_update",
                        "value": lr * (1 + 0.1 * seed) * depth ** exponent * bend})
    return pd.DataFrame(out)


@pytest.mark.slow
@pytest.mark.parametrize("exponent", [0.0, 0.574, -0.5])
def test_the_update_exponent_recovers_a_power_law(exponent):
    """On a synthetic table with dF/η = c L^a per seed, the fit's exponent across depths is a
    for every seed, placement, first step and lr (the lr cancels) with an interval of width 0;
    a response 1.2 times as large from L = 24 on is not linear there (ratio 1.2 > 1 +
    LINEAR_TOLERANCE), and its lr's exponent moves by the OLS slope of that step."""
    fits = fit(synthetic_update_table(exponent), {})
    exponents = rows(fits, "model_update_exponent")
    assert len(exponents) == 2 * len(LRS) * len(STEPS)
    straight = exponents[~((exponents["update_optimizer"] == "adam")
                           & (exponents["update_lr"] == 1e-3))]
    for _, row in straight.iterrows():
        assert np.allclose(row["seed_values"], exponent, rtol=0, atol=1e-12)
        assert row["ci_lo"] == pytest.approx(exponent, abs=1e-12)
        assert row["ci_hi"] == pytest.approx(exponent, abs=1e-12)
    bent = exponents[(exponents["update_optimizer"] == "adam") & (exponents["update_lr"] == 1e-3)]
    x = np.log([6, 12, 24, 48])
    shift = np.polyfit(x, np.log([1, 1, 1.2, 1.2]), 1)[0]
    assert np.allclose(np.stack(bent["seed_values"]), exponent + shift, atol=1e-12)
    assert LINEAR_TOLERANCE == 0.05
    table = tables.update_response(fits).set_index(["placement", "first step", "η"])
    regime = table["linear regime"]
    assert regime[(FIX_LABELS["pre"], "Adam", 1e-3)] == "no at L = 24, 48"
    assert regime[(FIX_LABELS["pre"], "Adam", 1e-4)] == "yes"
    assert (regime.drop(index=(FIX_LABELS["pre"], "Adam", 1e-3)).drop(
        index=(FIX_LABELS["deepnorm"], "Adam", 1e-3)) == "yes").all()
    assert table["exponent across depths"].str.fullmatch(r"\S+ \[\S+, \S+\]").all()


def test_gradient_readings_table_has_every_placement_under_every_reading(fits):
    """Each placement at the depth the reading arms share, under each reading measured; the
    all-parameters MSE cell is the depth arm's (the same cell as probes_at_depth's); ReZero's
    weight-matrix readings are 0/0 by construction, not a measurement."""
    table = tables.grad_readings(fits)
    assert table["L"].unique().tolist() == [4]
    assert table["placement"].tolist() == [FIX_LABELS[p] for p in ORDER]
    by = table.set_index("placement")
    probes = tables.probes_at_depth(fits[fits["arm"] == "depth"], 4).set_index("placement")
    assert (by["all parameters, MSE"] == probes["grad ratio ‖g_1‖/‖g_L‖"]).all()
    assert by.loc[FIX_LABELS["rezero"], "weight matrices, MSE"] == "0/0 by construction"
    assert by.loc[FIX_LABELS["pre"], "weight matrices, CE"] == "—"  # no such arm here
    assert not (by.drop(FIX_LABELS["rezero"])["weight matrices, MSE"].str.contains("—|0/0")).any()
    # the readings differ: the block's LN gains count under one and not the other
    post = by.loc[FIX_LABELS["post"]]
    assert post["all parameters, MSE"] != post["weight matrices, MSE"]


def test_configs_have_the_same_keys_and_every_placement():
    full = config_of(ROOT, "config/fixes.yaml")
    tiny = config_of(ROOT, "config/tiny_fixes.yaml")
    # the same keys, but the full run's name (its folder, runs/fixes/)
    assert [k for k in full if k != "run"] == list(tiny) and full["run"] == {"name": "fixes"}
    assert list(full["studies"]) == list(tiny["studies"])
    # and the arms of the named run of DeepNet's Fig. 5, at tiny depths of their own
    named = config_of(ROOT, "config/deepnet_update.yaml")["studies"]["fixestraining"]["arms"]
    fig5 = [a for a, spec in named.items() if spec]
    assert fig5 == ["update", "update_deepnorm"]
    # and those of the best recipes' named run (config/fixes_recipes.yaml) that are its own
    study = config_of(ROOT, "config/fixes_recipes.yaml")["studies"]["fixestraining"]
    recipes = [a for a, spec in study["arms"].items()
               if spec and a not in full["studies"]["fixestraining"]["arms"]]
    assert len(recipes) == 10, recipes
    for study in full["studies"]:
        f, t = full["studies"][study], tiny["studies"][study]
        assert list(f) == list(t) and list(f["settings"]) == list(t["settings"]), study
        assert [a for a in f["arms"] if not a.startswith("width")] + (
            recipes + fig5 if study == "fixestraining" else []) == [
            a for a in t["arms"] if not a.startswith("width")], study
        for arm, spec in (*f["arms"].items(), *t["arms"].items()):
            axes = expand_axes(spec["axes"])
            placements = axes["placement"]
            if arm in fig5:  # DeepNet against Post-LN and Pre-LN
                assert expand_axes(named[arm]["axes"])["placement"] == placements, arm
                assert spec["training"]["update_steps"] > 1, arm
                continue
            weights = spec.get("settings", {}).get("grad_of") == "weights"
            if "init" in axes:  # every placement that takes the init setting
                common = [p for p in COMMON_INIT if p in WEIGHTED or not weights]
                assert placements == common, placements
                continue
            if "update_optimizer" in axes:  # the update as a linear response
                assert placements == RESPONSE_PLACEMENTS, placements
                assert axes["update_lr"] == LRS and axes["update_optimizer"] == STEPS
                continue
            if spec.get("settings", {}).get("init") in PAPER_ARMS:  # a paper's comparison
                paper = PAPER_ARMS[spec["settings"]["init"]]
                assert placements == paper if study == "fixes" else set(placements) <= set(
                    paper), placements
                continue
            if spec.get("settings", {}).get("update_params") == "weights":  # DeepNet's θ
                assert placements == ["post", "pre", "deepnorm"], placements
                assert axes["update_lr"] == LRS[:2]
                continue
            if {"lr", "warmup_steps"} & set(spec.get("training", {})) and spec.get(
                    "training", {}).get("warmup_steps") != 0 or spec.get(
                    "settings", {}).get("seed_offset") == HELD_OUT:  # the sweep, held out too
                assert set(placements) <= set(SWEPT), placements
                continue
            assert placements in (list(ORDER), ["pre"], OWN_INIT,
                                  *([WEIGHTED] if weights else [])), placements
    for config in (full, tiny):
        jobs = check_config(config, SCHEMA)
        arms = sum(len(study["arms"]) for study in config["studies"].values())
        assert len(jobs) == arms  # packed: one job per arm, not one per cell
    # the full study's settings are stack96's (config/config.yaml)
    stack96 = yaml.safe_load((ROOT / "config/config.yaml").read_text())["studies"]["stack96"]
    for key, value in stack96["settings"].items():  # but its seeds: the stack96 note's 6,
        if key != "seeds":                          # not the claims' pool of 36
            assert full["studies"]["fixes"]["settings"][key] == value, key
    assert full["studies"]["fixes"]["settings"]["seeds"] == 6


SWEPT = ["post", "deepnorm", "pre", "rezero"]  # one placement per family, and DeepNorm
HELD_OUT = 500  # the held-out seeds' offset


def _recipes(study: dict, held_out: bool) -> set[tuple]:
    """(placement, peak rate, warmup) of every swept placement's cell with warmup, on the
    selection seeds or the held-out ones."""
    out = set()
    for spec in study["arms"].values():
        offset = {**study["settings"], **spec.get("settings", {})}["seed_offset"]
        training = {**study["training"], **spec.get("training", {})}
        if (offset == HELD_OUT) != held_out or training["warmup_steps"] == 0 or spec.get(
                "settings", {}).get("init"):
            continue
        out |= {(p, training["lr"], training["warmup_steps"])
                for p in expand_axes(spec["axes"])["placement"] if p in SWEPT}
    return out


def test_the_held_out_seeds_train_every_recipe_of_the_sweep():
    """config/fixes_recipes.yaml: every (placement, rate, warmup) the sweep chooses among on
    seeds 0-4 is trained again on seeds 500-504, and nothing else is, so the best recipe's loss
    is reported on seeds that took no part in choosing it; Post-LN and DeepNorm also sweep the
    warmup (20, 50, 100 steps). Its recipes with config/fixes.yaml's warmup are that run's
    sweep, cell for cell (the same settings), and it trains no other cell."""
    full = config_of(ROOT, "config/fixes.yaml")["studies"]["fixestraining"]
    study = config_of(ROOT, "config/fixes_recipes.yaml")["studies"]["fixestraining"]
    chosen, held = _recipes(study, False), _recipes(study, True)
    assert chosen == held and len(chosen) == 20
    for placement in ("post", "deepnorm"):
        assert {w for p, _, w in chosen if p == placement} == {20, 50, 100}
    warmup = full["training"]["warmup_steps"]
    assert {c for c in chosen if c[2] == warmup} == _recipes(full, False)
    for arm, spec in study["arms"].items():
        if spec and arm in full["arms"]:
            same = {**full["arms"][arm], "axes": spec["axes"]}
            assert spec == same and set(expand_axes(spec["axes"])["placement"]) <= set(SWEPT)
    assert study["settings"] == full["settings"] and study["training"] == full["training"]


def test_the_recipes_run_trains_every_cell_of_the_entries_reading_the_best_recipes():
    """docs/RESULTS.md takes an entry from the first documented run that measures it,
    config/fixes_recipes.yaml's before config/fixes.yaml's: each entry that reads the best
    recipes (arm best_rate) reads, at every reading, only cells that run trains or best
    recipes of placements it sweeps, so its whole row comes from that one run."""
    claims = yaml.safe_load((ROOT / "config/claims.yaml").read_text())
    study = config_of(ROOT, "config/fixes_recipes.yaml")["studies"]["fixestraining"]
    cells = {(arm, p) for arm, spec in study["arms"].items() if spec
             for p in expand_axes(spec["axes"])["placement"]}
    swept = {p for p, _, _ in _recipes(study, True)}
    read = [e for e in claims["claims"] if "best_rate" in yaml.safe_dump(
        [e.get("measure"), e.get("readings")])]
    assert len(read) == 2 and swept == set(SWEPT)
    for entry in read:
        primary = entry["measure"]["rows"]
        for reading in [{}, *(r["rows"] for r in entry.get("readings", []))]:
            for name, row in primary.items():
                row = {**row, **reading.get(name, {})}
                assert (row["placement"] in swept if row["arm"] == "best_rate" else
                        (row["arm"], row["placement"]) in cells), (entry["id"], row)
    for runs in (DOCUMENTED_NAMED_RUNS, CONFIRM_RUNS):
        names = [n.removeprefix("confirm_") for n in runs]
        assert names.index("fixes_recipes") < names.index("fixes")


def test_the_sweep_gives_each_swept_placement_four_rates_half_a_decade_apart():
    """config/fixes.yaml: each swept placement trains at 4 peak rates with the same warmup
    (the warmup arm's rate among them), consecutive rates a factor 3 to 3.4 apart."""
    study = config_of(ROOT, "config/fixes.yaml")["studies"]["fixestraining"]
    warmup = study["training"]["warmup_steps"]
    assert warmup == study["training"]["steps"] // 10
    rates = {p: set() for p in SWEPT}
    for spec in study["arms"].values():
        training = {**study["training"], **spec.get("training", {})}
        if training["warmup_steps"] != warmup:
            continue
        for placement in expand_axes(spec["axes"])["placement"]:
            if placement in rates:
                rates[placement].add(training["lr"])
    for placement, swept in rates.items():
        swept = sorted(swept)
        assert len(swept) == 4, (placement, swept)
        steps = np.diff(np.log10(swept))
        assert ((steps > 0.47) & (steps < 0.53)).all(), (placement, swept)


def test_named_placement_sets_come_from_the_registry():
    assert expand_axes({"placement": "all"})["placement"] == list(ORDER)
    assert expand_axes({"placement": "weighted"})["placement"] == WEIGHTED
    assert expand_axes({"placement": "own_init"})["placement"] == OWN_INIT
    assert "normformer" in expand_axes({"placement": "common_init_weighted"})["placement"]
    with pytest.raises(ConfigError, match=r"axes.placement='weighed' is not a list nor one of"):
        expand_axes({"placement": "weighed"})


def test_targets_are_named_and_read_configured_arms():
    """Each fixes target reads arms of config/fixes.yaml, or of the named run based on it that
    it was built for (DeepNet's Fig. 5: config/deepnet_update.yaml; the best recipes on held-out
    seeds: config/fixes_recipes.yaml; ReZero's speed: config/rezero_speed.yaml)."""
    runs = [config_of(ROOT, f"config/{name}.yaml")
            for name in ("fixes", "deepnet_update", "fixes_recipes", "rezero_speed")]
    for target in TARGETS:
        if target.study in ("fixes", "fixestraining"):
            assert target.name.startswith(("fig_fixes_", "table_fixes_")), target.name
            assert any(target.arms(list((run["studies"].get(target.study) or {}).get("arms", {})))
                       for run in runs), target.name
    assert BY_NAME["table_fixes_probes_L96"].reads == ("depth", "calibrated")


@pytest.mark.workflow
def test_tiny_fixes_study_end_to_end(tiny_fixes_run):
    work = tiny_fixes_run
    tiny = config_of(ROOT, "config/tiny_fixes.yaml")["studies"]
    left = []  # a target of a named run whose arms the tiny config does not shrink
    for target in TARGETS:
        if target.study in ("fixes", "fixestraining"):
            if not target.arms(list(tiny[target.study]["arms"])):
                left.append(target.name)
                continue
            for path in target.outputs.values():
                assert (work / path).stat().st_size > 0, path
    # ReZero's speed (config/rezero_speed.yaml: its arms would join the sweep's cells at the
    # tiny depth); its table is tested on fit rows in tests/test_lr_sweep.py
    assert left == ["table_fixes_steps_to_loss"]
    central = pd.read_csv(work / "results/tables/fixes_central.csv").set_index("placement")
    assert central.index.tolist() == [FIX_LABELS[p] for p in ORDER]
    assert central.loc[FIX_LABELS["rezero"], "Jacobian rms σ, L = 96"] == "1 [1, 1]"
    assert "update exponent across depths" in central.columns
    at96 = pd.read_csv(work / "results/tables/fixes_probes_L96.csv")
    assert at96["placement"].tolist() == [FIX_LABELS[p] for p in ORDER]
    assert at96.set_index("placement").loc[FIX_LABELS["rezero"],
                                           "stream growth rms(x_L)/rms(x_0)"] == "1 [1, 1]"
    response = pd.read_csv(work / "results/tables/fixes_update_response.csv")
    # every parameter: each first step and lr; DeepNet's θ (arm update_theta): SGD, two lrs
    theta = {"post", "pre", "deepnorm"}
    assert list(zip(response["placement"], response["first step"], response["moves"],
                    response["η"], strict=True)) == [
        (FIX_LABELS[p], tables.STEP_NAMES[s], tables.MOVED_NAMES[m], lr)
        for p in RESPONSE_PLACEMENTS for s in ("adam", "sgd") for m in ("all", "weights")
        for lr in (LRS if m == "all" else LRS[:2] if s == "sgd" and p in theta else [])]
    assert {"dF/η, L = 2", "dF/η, L = 8", "exponent across depths"} <= set(response.columns)
    assert response["linear regime"].notna().all()
    for ext in ("png", "svg", "pdf"):
        assert (work / f"results/figures/fixes_update_response.{ext}").stat().st_size > 0
    trained = pd.read_csv(work / "results/tables/fixes_training.csv")
    # every placement with and without warmup at L = 2, and DeepNorm's Fig. 5 cells (its own
    # init, the study's main one; no warmup) at L = 3 and 4: a row per depth, none merged
    assert len(trained) == 2 * len(ORDER) + 2
    assert sorted(trained["warmup steps"].unique()) == [0, 3]
    deeper = trained[trained["L"] > 2]
    assert deeper["placement"].tolist() == [FIX_LABELS["deepnorm"]] * 2
    assert deeper["L"].tolist() == [3, 4] and (deeper["warmup steps"] == 0).all()
    ranked = pd.read_csv(work / "results/tables/fixes_training_ranking.csv")
    assert ranked.groupby(["L", "warmup steps"]).size().to_dict() == {
        (2, 0): len(ORDER), (2, 3): len(ORDER), (3, 0): 1, (4, 0): 1}
    # DeepNet's Fig. 5: the output's change from init after each of the first 4 updates
    change = pd.concat(pd.read_parquet(work / f"results/fits/fixestraining/{arm}.parquet")
                       for arm in ("update", "update_deepnorm"))
    change = change[change["quantity"] == "relative_update"]
    assert change.groupby(["placement", "depth"])["step"].apply(sorted).map(tuple).to_dict() == {
        (p, d): (1, 2, 3, 4) for p in ("deepnorm", "post", "pre") for d in (3, 4)}
    assert (change["min"] > 0).all()
    # the sweep: 4 rates for each swept placement (and 2 longer warmups for Post-LN and
    # DeepNorm), one best recipe, ranked at the best recipes on the held-out seeds
    sweep = pd.read_csv(work / "results/tables/fixes_lr_sweep.csv")
    assert sweep.groupby("placement").size().to_dict() == {
        FIX_LABELS[p]: 6 if p in ("post", "deepnorm") else 4 for p in SWEPT}
    assert (sweep.groupby("placement")["best recipe"].count() == 1).all()
    best = pd.read_csv(work / "results/tables/fixes_best_rate.csv")
    assert sorted(best["placement"]) == sorted(FIX_LABELS[p] for p in SWEPT)
    assert set(best["reported on"]) == {"held-out seeds"}
    assert best["rank"].tolist() == [1, 2, 3, 4]
    assert best["minus Pre-LN, per seed [95% t]"].isna().sum() == 1  # Pre-LN's own row
    fits = pd.read_parquet(work / "results/fits/fixestraining/nowarmup.parquet")
    steps = fits.loc[fits["quantity"] == "grad_ratio", "step"]
    assert sorted(steps.unique()) == [0, 3, 8]


def test_gpu_config_is_the_training_comparison_deeper_within_8_minutes():
    """config/fixes_gpu.yaml: config/fixes.yaml's fixestraining study (the same arms but the
    no-warmup and paper-init ones; the same rate sweep) at L = 96,
    d = 128, with a 10% warmup, in its own run folder, and within 8 minutes on one GPU by the
    request model; it validates (on a machine without a GPU, with check_device false)."""
    full = config_of(ROOT, "config/fixes.yaml")["studies"]["fixestraining"]
    gpu = config_of(ROOT, "config/fixes_gpu.yaml")
    assert gpu["run"] == {"name": "fixes_gpu"} and gpu["device"] == "cuda"
    assert [s for s, spec in gpu["studies"].items() if spec] == ["fixestraining"]
    study = gpu["studies"]["fixestraining"]
    assert study["settings"]["depth"] == 96 and study["settings"]["d_model"] == 128
    assert study["training"]["warmup_steps"] == study["training"]["steps"] // 10
    left_out = {a for a in full["arms"] if a.endswith("nowarmup") or a == "paper_warmup"}
    assert {a: s for a, s in study["arms"].items() if s} == {
        a: s for a, s in full["arms"].items() if a not in left_out}
    config = {**gpu, "check_device": False}
    jobs = check_config(config, SCHEMA)
    assert len(jobs) == len(full["arms"]) - len(left_out)
    arms = training_arms(config, jobs)
    minutes = sum(gpu_train_seconds(job, arms[(job.study, job.arm)]) for job in jobs) / 60
    assert 1 < minutes <= 8


def test_a_fixes_figure_names_every_own_block_it_draws():
    """The fixes figures' legends list the placements in the registry's order, the calibrated
    Pre-LN variant, then each own block drawn (an HF layer of config/models_collapse.yaml was
    drawn without a legend entry before)."""
    from depthlab.studies.fixes.figures import drawn_order

    llama, gemma = "pre@hf-llama", "pre@hf-gemma2"
    drawn = ["pre", gemma, "post", CALIBRATED, llama, "pre", gemma]
    assert drawn_order(drawn) == ["post", "pre", CALIBRATED, llama, gemma]
    assert drawn_order(["post", "pre"]) == ["post", "pre"]
