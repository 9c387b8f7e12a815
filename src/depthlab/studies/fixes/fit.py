"""Fits of the fixes study: every placement of the registry on every probe the notes measure, at
initialisation.

Input: the aggregated tidy table of one or more arms (one row per seed, layer, sublayer, metric;
depthlab.core.probes). Output: one long fit table, one row per quantity and grid point, each
with the per-seed summary of depthlab.analysis.stats.summarise_seeds (median, range, mean,
t-interval and every seed's value). A cell is identified by its `fix`: the placement's registry
name, or CALIBRATED for the Pre-LN cells run with layerwise branch scales from a calibration
stage (an arm with `calibrate_from`, recognised by its `branch_scale` rows).

Quantities (QUANTITIES says each one's meaning and units): per block, the raw probes; per cell,
one number per seed (gradient ratio, stream growth, omega's decay rate, ...; where the arm sets
jacobian_dirs and update_lr, the Jacobian's singular values and the update after the first step
of update_optimizer, Adam's or SGD's, and that update per unit learning rate); across the
learning rates of an arm, how far that response is from linear (update_linearity); across the
depths of an arm, log-log exponents.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.profiles import PerSeed, last, omega_slope, wide
from depthlab.analysis.stats import loglog_slopes, summarise_seeds
from depthlab.vocabulary.placements import LABELS, ORDER

CALIBRATED = "pre_calibrated"  # Pre-LN with branch scales from a calibration stage
FIX_ORDER = (*ORDER, CALIBRATED)  # the table and plotting order: the registry's, then it
FIX_LABELS = {**LABELS, CALIBRATED: f"{LABELS['pre']} + calibrated scales"}

KEYS = ["arm", "label", "fix", "placement", "depth", "d_model", "heads", "init", "bias",
        "grad_of", "update_lr", "update_optimizer", "update_params"]
SEED_KEYS = ["arm", "label", "seed"]
ACROSS_KEYS = ["arm", "fix", "placement", "d_model", "heads", "init", "bias",
               "grad_of", "update_lr", "update_optimizer", "update_params"]  # a curve over depth
# the update_linearity ratio of dF/η between neighbouring learning rates (a decade apart in the
# update_response arm) is "linear" within this of 1. Where dF/η = a + bη + O(η²), the ratio
# of η over η/10 is about 1 + 0.9 bη/a, so within 5% the step's beyond-linear part is at most
# about 5.5% of dF/η at the larger lr: it moves a log-log exponent across depths 6 to 192 by
# at most ln(1.055)/ln(32) ≈ 0.015 (were it all at one end), small beside what the exponent
# tells apart (0 for an update bounded in depth, 0.5 for √L growth)
LINEAR_TOLERANCE = 0.05

# per block: (metric, sublayer) of the probes -> quantity
LAYER_QUANTITIES = {
    ("grad_norm", "block"): "grad_norm",
    ("stream_rms", "block"): "stream_rms",
    ("stream_var", "block"): "stream_var",
    ("omega_abs", "block"): "omega_abs",
    ("head_omega_abs", "block"): "head_omega_abs",
    ("token_corr", "block"): "token_corr",
    ("branch_ratio", "attn"): "branch_ratio_attn",
    ("branch_ratio", "mlp"): "branch_ratio_mlp",
    ("branch_ratio", "block"): "branch_ratio_block",
    ("carry_var", "block"): "carry_var",
    ("branch_scale", "attn"): "branch_scale_attn",
    ("branch_scale", "mlp"): "branch_scale_mlp",
    ("update_stream", "block"): "update_stream",
}

# every quantity: what it is, in which units (layer 0 = the input, l = 1..L the blocks)
QUANTITIES = {
    "grad_norm": "Frobenius norm of dLoss/dθ over all parameters of block l (its gates "
                 "included: ReZero's is its alpha's alone at init)",
    "stream_rms": "sqrt(mean x_l²) of the stream after block l, before any final norm (input "
                  "sd units; ResiDual: x_a, the stream the blocks read)",
    "stream_var": "variance of the stream after block l (input variance units)",
    "omega_abs": "mean |LN(x_l) − LN(x_{l−1})| per coordinate (LN without affine), theory096's "
                 "omega probe (units of a normalised coordinate)",
    "head_omega_abs": "mean |LN(y_l) − LN(y_{l−1})| per coordinate, y_l the head input of the "
                      "stack cut after block l (after the final norm; ResiDual: x_a + "
                      "LN(x_d)): ResiDual's representation collapse (units of a normalised "
                      "coordinate)",
    "token_corr": "mean pairwise cosine between the token vectors after block l (0 orthogonal, "
                  "1 collapsed to one direction)",
    "branch_ratio_attn": "RMS of what the attention sublayer adds over RMS of the skip path it "
                         "joins (dimensionless)",
    "branch_ratio_mlp": "the same for the MLP sublayer",
    "branch_ratio_block": "RMS of what the whole block adds, f_l = x_l − c²x_{l−1}, over "
                          "RMS(c²x_{l−1}) (placements whose stream telescopes)",
    "carry_var": "variance of ResiDual's second stream x_d after block l (input variance units)",
    "branch_scale_attn": "the calibrated per-layer scale of the attention branch (Pre-LN + "
                         "calibrated scales only)",
    "branch_scale_mlp": "the calibrated per-layer scale of the MLP branch",
    "update_stream": "rms(x_l(θ + Δθ) − x_l(θ)): how far the first step of update_optimizer "
                     "from init moves the stream after block l (input-sd units; the arms with "
                     "an update_lr, at it)",
    "grad_ratio": "first/last block gradient ratio ‖g_1‖/‖g_L‖ (1 balanced; below 1 the early "
                  "blocks starve, above 1 the late ones)",
    "grad_log_sd": "sd across blocks of ln ‖g_l‖ (0 = every block the same gradient)",
    "grad_mean": "mean across blocks of ‖g_l‖",
    "stream_growth": "rms(x_L) / rms(x_0): the stream after the last block over the input "
                     "(before any final norm)",
    "stream_exponent_one_depth": "ln(stream_growth) / ln(L), the notes' one-depth exponent",
    "carry_growth": "sd of ResiDual's x_d after the last block over the input's, "
                    "sqrt(carry_var_L / carry_var_0)",
    "omega_last": "omega_abs at the last block",
    "omega_slope": "log-log OLS slope of omega_abs on k over the deepest three quarters of the "
                   "blocks, k = ceil(L/4)..L (theory096's formula: about −0.5; absent where "
                   "omega is 0, ReZero at init)",
    "head_omega_last": "head_omega_abs at the last block",
    "head_omega_slope": "log-log OLS slope of head_omega_abs on k over k = ceil(L/4)..L, as "
                        "omega_slope (a decay in k: the deep blocks move the output less)",
    "token_corr_last": "token_corr after the last block",
    "branch_ratio_last_attn": "branch_ratio_attn at the last block",
    "branch_ratio_last_mlp": "branch_ratio_mlp at the last block",
    "branch_ratio_last_block": "branch_ratio_block at the last block",
    "head_input_sd": "sd of what the loss head reads (after the final norm if any; ResiDual: "
                     "x_a + LN(x_d))",
    "head_token_corr": "mean pairwise token cosine of what the loss head reads (ResiDual: "
                       "x_a + LN(x_d), where its second stream's diversity would show)",
    "stream_exponent": "across the depths of an arm: per seed the OLS slope of "
                       "ln(stream_growth) on ln L (0.5 = sqrt(L) growth, 0 = none)",
    "carry_exponent": "the same for ResiDual's carry_growth",
    "grad_ratio_exponent": "the same for grad_ratio (< 0: the ratio falls with depth)",
    "jacobian_rms_sv": "rms singular value of the input-output Jacobian d(head input)/dx, "
                       "Hutchinson's estimate over jacobian_dirs Gaussian directions (1 = an "
                       "isometry on average; dimensionless)",
    "jacobian_max_sv": "its largest singular value after jacobian_dirs power-iteration steps on "
                       "JᵀJ (a lower bound)",
    "model_update": "rms(F(θ + Δθ) − F(θ)) over the head input F after the first step of "
                    "update_optimizer from init at lr = update_lr on the parameters "
                    "update_params names (all: every one; weights: each block's six weight "
                    "matrices, DeepNet's θ; adam: "
                    "Δθ = −lr g/(|g| + 1e-8); sgd: Δθ = −lr g; input-sd units)",
    "update_response": "dF/η = model_update / update_lr per seed: the head input's change per "
                       "unit learning rate (input-sd units per unit lr); the same at every "
                       "small enough lr where the step is a linear response",
    "update_linearity": "per seed, update_response at the cell's update_lr over update_response "
                        "at the next smaller update_lr of the arm (same placement, optimiser, "
                        "parameters, depth and seed; 1 = linear, the lr in the linear regime "
                        "where every seed's ratio is within LINEAR_TOLERANCE, 5%, of 1); no row "
                        "at the smallest lr",
    "model_update_exponent": "across the depths of an arm at one update_lr, "
                             "update_optimizer and update_params: per seed the OLS slope of "
                             "ln(model_update) on ln L, the same as that of "
                             "ln(update_response) (the lr cancels; 0 = an update bounded in "
                             "depth)",
}


def fix_column(table: pd.DataFrame) -> pd.Series:
    """Each row's fix: its placement, or CALIBRATED for a cell (arm, label) with branch_scale
    rows (measured with calibrated layerwise branch scales; the calibration needs Pre-LN)."""
    calibrated = table.loc[table["metric"] == "branch_scale", ["arm", "label"]].drop_duplicates()
    marked = pd.MultiIndex.from_frame(calibrated)
    is_calibrated = pd.MultiIndex.from_frame(table[["arm", "label"]]).isin(marked)
    return pd.Series(np.where(is_calibrated, CALIBRATED, table["placement"].astype(str)),
                     index=table.index)


def _wide(table: pd.DataFrame, metric: str, sublayer: str = "block") -> pd.DataFrame:
    """One metric as an (arm, label, seed) x layer frame."""
    return wide(table, metric, SEED_KEYS, sublayer)


def _depths(frame: pd.DataFrame, cells: pd.DataFrame) -> pd.Series:
    """The depth of each row's cell."""
    depth = cells.set_index(["arm", "label"])["depth"]
    return pd.Series(depth.reindex(frame.index.droplevel("seed")).to_numpy(), index=frame.index)


def per_seed(table: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """The per-cell quantities of QUANTITIES, one value per seed: columns arm, label, seed,
    metric, value (undefined values left out)."""
    out = PerSeed()
    for metric in ("grad_ratio", "head_input_sd", "head_token_corr", "jacobian_rms_sv",
                   "jacobian_max_sv", "model_update"):
        sub = table[table["metric"] == metric]
        if not sub.empty:
            out.add(metric, sub.set_index(SEED_KEYS)["value"])
    update = table[table["metric"] == "model_update"].set_index(SEED_KEYS)
    if not update.empty:
        out.add("update_response", update["value"] / update["update_lr"])
    grads = _wide(table, "grad_norm")
    if not grads.empty:
        logs = np.log(grads.to_numpy())
        out.add("grad_log_sd", pd.Series(np.nanstd(logs, axis=1), index=grads.index))
        out.add("grad_mean", pd.Series(np.nanmean(grads.to_numpy(), axis=1), index=grads.index))
    rms = _wide(table, "stream_rms")
    depth = _depths(rms, cells)
    growth = last(rms) / rms[0]
    out.add("stream_growth", growth)
    deep = depth > 1
    out.add("stream_exponent_one_depth", np.log(growth[deep]) / np.log(depth[deep]))
    carry = _wide(table, "carry_var")
    if not carry.empty:
        out.add("carry_growth", np.sqrt(last(carry) / carry[0]))
    for name in ("omega", "head_omega"):
        omega = _wide(table, f"{name}_abs")
        if not omega.empty:
            out.add(f"{name}_last", last(omega))
            out.add(f"{name}_slope", omega.apply(omega_slope, axis=1))
    out.add("token_corr_last", last(_wide(table, "token_corr")))
    for sublayer in ("attn", "mlp", "block"):
        ratio = _wide(table, "branch_ratio", sublayer)
        if not ratio.empty:
            out.add(f"branch_ratio_last_{sublayer}", last(ratio))
    return out.frame()


def linearity(derived: pd.DataFrame) -> pd.DataFrame:
    """update_linearity from the per-seed quantities with their cells' keys (per_seed merged
    with the cells): each seed's update_response over that at the next smaller update_lr of
    the same arm, placement, optimiser, parameters moved and depth, on the row of the larger
    lr's cell."""
    curve = [k for k in KEYS if k not in ("label", "update_lr")] + ["seed"]
    response = derived[derived["metric"] == "update_response"].sort_values([*curve, "update_lr"])
    smaller = response.groupby(curve, sort=False)["value"].shift()
    ratio = response.assign(metric="update_linearity", value=response["value"] / smaller)
    return ratio[smaller.notna()]


def linear(row) -> bool:
    """Whether a seed summary of update_linearity says linear: every seed's ratio within
    LINEAR_TOLERANCE of 1."""
    return bool(max(abs(row["min"] - 1), abs(row["max"] - 1)) <= LINEAR_TOLERANCE)


def fit(table: pd.DataFrame, axes: dict[str, list[str]]) -> pd.DataFrame:
    """All fixes fits as one long table (quantity, KEYS, layer, the seed summary): the probes
    per block, the per-cell quantities (per_seed) and the update's linearity across the
    learning rates (`linearity`), and across the depths of an arm the exponents
    stream_exponent, carry_exponent, grad_ratio_exponent and model_update_exponent (no depth or
    label; with the t-interval of the seed mean, ci_lo and ci_hi).
    `axes` (the axis names of each arm) is not needed: a cell's keys are its setting columns."""
    table = table.assign(fix=fix_column(table))
    cells = table.drop_duplicates(["arm", "label"])[KEYS]
    # only the columns a summary reads: a group then slices a few columns, not every setting
    # (and as plain objects: slicing Arrow-backed strings group by group is slow)
    slim = table[[*KEYS, "seed", "layer", "metric", "sublayer", "value"]].astype(
        {key: object for key in ("arm", "label", "fix", "placement")})
    parts = []
    for (metric, sublayer), sub in slim.groupby(["metric", "sublayer"], sort=True):
        quantity = LAYER_QUANTITIES.get((metric, sublayer))
        if quantity is not None:
            parts.append(summarise_seeds(sub, [*KEYS, "layer"], quantity))
    derived = per_seed(slim, cells).merge(cells, on=["arm", "label"])
    derived = pd.concat([derived, linearity(derived)], ignore_index=True)
    for metric, sub in derived.groupby("metric", sort=True):
        parts.append(summarise_seeds(sub, KEYS, metric))
    for metric, name in (("stream_growth", "stream_exponent"), ("carry_growth", "carry_exponent"),
                         ("grad_ratio", "grad_ratio_exponent"),
                         ("model_update", "model_update_exponent")):
        parts.append(loglog_slopes(derived[derived["metric"] == metric], ACROSS_KEYS, "depth",
                                   name))
    return pd.concat(parts, ignore_index=True)
