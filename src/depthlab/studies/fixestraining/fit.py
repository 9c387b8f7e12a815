"""Fits of the fixestraining study: losses by step, probes by checkpoint, per placement and
warmup arm.

Input: the aggregated tidy table of the train jobs (one row per seed, step, layer, sublayer,
metric; depthlab.core.train). Output: one long fit table (quantity, cell keys, step, layer, the
per-seed summary of depthlab.analysis.stats.summarise_seeds): every raw metric per (cell,
step, layer), quantity = metric, or metric_sublayer for the per-sublayer metrics; and per
(cell, checkpoint) the probes of the fixes study reduced to one number per seed (DERIVED).
"""

from __future__ import annotations

import pandas as pd

from depthlab.analysis.profiles import PerSeed, last, omega_slope, summarise_checkpoints, wide
from depthlab.studies.fixestraining.rates import reported, swept

KEYS = ["arm", "label", "placement", "depth", "init", "lr", "warmup_steps"]
SEED_KEYS = ["arm", "label", "seed", "step"]

# per (cell, checkpoint), one number per seed: name -> what it is (units)
DERIVED = {
    "grad_ratio": "first/last block gradient ratio ‖g_1‖/‖g_L‖ on the probe batch",
    "stream_growth": "rms(x_L) / rms(x_0): the stream after the last block over the embedding "
                     "(before any final norm)",
    "token_corr_last": "mean pairwise token cosine after the last block",
    "omega_slope": "log-log slope of mean |LN(x_k) − LN(x_{k−1})| on k over the deepest three "
                   "quarters of the blocks (absent where it is 0: ReZero at step 0)",
    "branch_ratio_last_attn": "RMS of what the last block's attention adds over RMS of its skip "
                              "path",
    "branch_ratio_last_mlp": "the same for the MLP",
    "head_input_sd": "sd of what the head reads",
    "head_token_corr": "mean pairwise token cosine of what the head reads",
    "stream_max_abs_peak": "the largest |coordinate| of the stream over every block (before any "
                           "final norm; units of the embedding's sd at step 0): the activation "
                           "growth Peri-LN's and CogView's papers track",
}


def _wide(table: pd.DataFrame, metric: str, sublayer: str = "block") -> pd.DataFrame:
    """One metric as an (arm, label, seed, step) x layer frame."""
    return wide(table, metric, SEED_KEYS, sublayer)


def per_seed(table: pd.DataFrame) -> pd.DataFrame:
    """The DERIVED quantities per seed and checkpoint: columns arm, label, seed, step, metric,
    value (undefined values left out)."""
    out = PerSeed()
    for metric in ("grad_ratio", "head_input_sd", "head_token_corr"):
        out.add(metric, table[table["metric"] == metric].set_index(SEED_KEYS)["value"])
    rms = _wide(table, "stream_rms")
    out.add("stream_growth", last(rms) / rms[0])
    out.add("token_corr_last", last(_wide(table, "token_corr")))
    out.add("stream_max_abs_peak", _wide(table, "stream_max_abs").max(axis=1))
    out.add("omega_slope", _wide(table, "omega_abs").apply(omega_slope, axis=1))
    for sublayer in ("attn", "mlp"):
        ratio = _wide(table, "branch_ratio", sublayer)
        if not ratio.empty:
            out.add(f"branch_ratio_last_{sublayer}", last(ratio))
    return out.frame()


def at_best_rates(fits: pd.DataFrame) -> pd.DataFrame:
    """Each swept placement's final validation loss at its best recipe, chosen on the selection
    seeds and reported on the held-out seeds (rates.reported), as rows of quantity
    `val_loss_best_rate` in arm `best_rate` (label: the placement), lr and warmup_steps its best
    recipe: what the claims ledger reads to compare placements each at its best rate."""
    best = reported(fits)
    if best.empty:
        return fits.iloc[:0]
    best = best.drop(columns=["rates", "warmups", "interior", "chosen_mean"])
    best["quantity"] = "val_loss_best_rate"
    best["arm"] = "best_rate"
    best["label"] = best["placement"]
    return best


def across_arms(fits: pd.DataFrame) -> pd.DataFrame:
    """The rows derived from every arm's fit together (each arm is fitted on its own): the best
    rates of the sweeps (at_best_rates), none where no placement was swept or no held-out cell
    was run."""
    if swept(fits).empty:
        return fits.iloc[:0]
    return at_best_rates(fits)


def fit(table: pd.DataFrame, axes: dict[str, list[str]]) -> pd.DataFrame:
    """Every raw metric summarised per (cell, step, layer) (quantity = metric, or
    metric_sublayer for per-sublayer metrics; the losses and the corpus's unigram_entropy at
    layer 0), and the DERIVED quantities per (cell, step)."""
    return summarise_checkpoints(table, per_seed(table), KEYS)
