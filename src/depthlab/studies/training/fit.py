"""Fits of the training study: losses by step, probes by checkpoint, and what training did to
each init-time effect.

Input: the aggregated tidy table of the train jobs (one row per seed, step, layer, sublayer,
metric). Output: one long fit table (quantity, cell keys, step, layer, the per-seed summary of
depthlab.analysis.stats.seed_summary). Per seed and checkpoint each effect of the notes is reduced
to one number (SUMMARIES), whose signed deviation from "no effect" (`deviation`) the summary table
compares between step 0 and the last step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.omega import general_abs
from depthlab.analysis.profiles import last, omega_slope, summarise_checkpoints, wide
from depthlab.analysis.stats import ols_slope

KEYS = ["arm", "label", "placement", "depth", "warmup_steps", "final_norm"]
SEED_KEYS = ["arm", "label", "seed", "step"]

# name -> (description with units, how it deviates from "no effect": 'log' = ln(value),
# 'linear' = value), in the order of the summary table
SUMMARIES = {
    "grad_ratio": ("first/last block gradient ratio ‖g_1‖/‖g_L‖ (1 = balanced)", "log"),
    "stream_exponent": ("Pre-LN stream growth exponent ln(sd_L/sd_1)/ln(L)", "linear"),
    "omega_slope": ("log-log slope of mean |LN(x_k) - LN(x_k-1)| on k (formula: -0.5)",
                    "linear"),
    "omega_general_slope": ("the same slope of the general form's E|D_k| from the measured "
                            "stream variances (Pre-LN; independence of block and stream)",
                            "linear"),
    "delta_attn_slope": ("slope of the Pre-LN attention variance increment on layer", "linear"),
    "delta_mlp_slope": ("slope of the Pre-LN MLP variance increment on layer", "linear"),
    "token_corr_last": ("mean pairwise token cosine after the last block", "linear"),
    "branch_ratio_last_first": ("branch-to-stream RMS ratio, last block / first block", "log"),
}


def _wide(table: pd.DataFrame, metric: str, sublayer: str) -> pd.DataFrame:
    """One metric as a (arm, label, seed, step) x layer frame."""
    return wide(table, metric, SEED_KEYS, sublayer)


def _slope(row: pd.Series) -> float:
    """OLS slope of a per-layer row on its layer index."""
    row = row.dropna()
    return ols_slope(row.index.to_numpy(dtype=float), row.to_numpy(dtype=float))[0]


def per_seed(table: pd.DataFrame) -> pd.DataFrame:
    """Each SUMMARIES quantity per seed and checkpoint (columns arm, label, seed, step, metric,
    value): grad_ratio as measured; stream_exponent = ln(sd_L / sd_1) / ln(L) of the stream sd
    (Pre-LN, L > 1); omega_slope = the log-log slope of omega_abs on block k over theory096's
    deepest range; omega_general_slope = the same slope of theory096's general form
    omega_k^2 = 2 - 2 sqrt(V_(k-1) / V_k) with the measured stream variances (Pre-LN: what
    independent block outputs of those variances would give; blocks where V fell, for which the
    form is undefined, leave the fit range: see omega_slope); delta_*_slope = OLS slope of the
    increment on layer (Pre-LN); token_corr_last at layer L; branch_ratio_last_first for the
    whole block (Pre-LN) or the attention sublayer (otherwise)."""
    parts = []

    def add(metric: str, values: pd.Series) -> None:
        frame = values.rename("value").reset_index()
        frame["metric"] = metric
        parts.append(frame)

    ratio = table[table["metric"] == "grad_ratio"].set_index(SEED_KEYS)["value"]
    add("grad_ratio", ratio)
    pre = table[table["placement"] == "pre"]
    sd = _wide(pre, "stream_sd", "block")
    if not sd.empty:
        depth = sd.notna().sum(axis=1) - 1
        deep = depth > 1
        add("stream_exponent", np.log(last(sd)[deep] / sd.loc[deep, 1]) / np.log(depth[deep]))
    omega = _wide(table, "omega_abs", "block")
    if not omega.empty:
        add("omega_slope", omega.apply(omega_slope, axis=1))
    var = _wide(pre, "stream_var", "block")
    if not var.empty:
        general = pd.DataFrame(general_abs(var.to_numpy()), index=var.index,
                               columns=var.columns[1:])
        add("omega_general_slope", general.apply(omega_slope, axis=1))
    for sublayer in ("attn", "mlp"):
        delta = _wide(pre, "delta", sublayer)
        if not delta.empty:
            add(f"delta_{sublayer}_slope", delta.apply(_slope, axis=1))
    corr = _wide(table, "token_corr", "block")
    add("token_corr_last", last(corr))
    for sublayer, placements in (("block", ["pre"]), ("attn", ["post", "none"])):
        branch = _wide(table[table["placement"].isin(placements)], "branch_ratio", sublayer)
        if not branch.empty:
            add("branch_ratio_last_first",
                branch.apply(lambda r: r.dropna().iloc[-1] / r.dropna().iloc[0], axis=1))
    return pd.concat(parts, ignore_index=True)


def deviation(name: str, values: pd.Series) -> pd.Series:
    """Signed deviation of a SUMMARIES quantity from its no-effect value."""
    return np.log(values) if SUMMARIES[name][1] == "log" else values


def fit(table: pd.DataFrame, axes: dict[str, list[str]]) -> pd.DataFrame:
    """All training fits as one long table: every raw metric summarised per (cell, step, layer),
    quantity = metric or metric_sublayer for per-sublayer metrics (the corpus's unigram_entropy
    among them, at step 0); the SUMMARIES quantities per (cell, step)."""
    return summarise_checkpoints(table, per_seed(table), KEYS)
