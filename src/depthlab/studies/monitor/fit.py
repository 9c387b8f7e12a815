"""monitor: what to log in a deep stack, Pre-LN against Post-LN, at initialisation.

The note's three curves: the residual-stream norm per block, each block's branch-to-stream
ratio, and the scale of the head's input across depths with and without the final LayerNorm.
Fits: per-seed summaries of each (depthlab.analysis.stats.seed_summary).
"""

from __future__ import annotations

import pandas as pd

from depthlab.analysis.stats import loglog_slopes, summarise_seeds

KEYS = ["arm", "label", "placement", "depth", "final_norm"]


def fit(table: pd.DataFrame, axes: dict[str, list[str]]) -> pd.DataFrame:
    """Per cell and block: stream_rms, branch_ratio_<attn|mlp|block>, branch_in_sd_<attn|mlp>
    (the sd of what each branch reads) and ffn_active_mlp (the FFN's active fraction); per cell:
    the head
    input sd (head_input_sd), the stream growth rms(x_L) / rms(x_0) (stream_rms_growth) and
    the slope of the block's branch ratio over depth (branch_ratio_slope) and its mean over the
    blocks (branch_ratio_block_mean: a block's average share of influence, Pre-LN); across
    depths: the growth exponent (stream_rms_exponent)."""
    parts = [
        summarise_seeds(table[table["metric"] == "stream_rms"], [*KEYS, "layer"], "stream_rms"),
        summarise_seeds(table[table["metric"] == "head_input_sd"], KEYS, "head_input_sd"),
    ]
    ratio = table[table["metric"] == "branch_ratio"]
    for metric in ("branch_ratio", "branch_in_sd", "ffn_active"):
        for sublayer, sub in table[table["metric"] == metric].groupby("sublayer"):
            parts.append(summarise_seeds(sub, [*KEYS, "layer"], f"{metric}_{sublayer}"))
    rms = table[table["metric"] == "stream_rms"]
    first = rms[rms["layer"] == 0].set_index([*KEYS, "seed"])["value"]
    last = rms[rms["layer"] == rms["depth"]].set_index([*KEYS, "seed"])["value"]
    growth = (last / first).rename("value").reset_index()
    parts.append(summarise_seeds(growth, KEYS, "stream_rms_growth"))
    parts.append(growth_exponent(growth))
    block = ratio[ratio["sublayer"] == "block"]
    parts.append(branch_ratio_slope(block))
    mean = block.groupby([*KEYS, "seed"])["value"].mean().reset_index()
    parts.append(summarise_seeds(mean, KEYS, "branch_ratio_block_mean"))
    return pd.concat(parts, ignore_index=True)


def growth_exponent(growth: pd.DataFrame) -> pd.DataFrame:
    """stream_rms_exponent: per seed, the slope of ln(rms(x_L) / rms(x_0)) on ln L across the
    depths of a placement and final_norm (0.5 = sqrt(L) growth, 0 = none); no depth column."""
    return loglog_slopes(growth, ["arm", "placement", "final_norm"], "depth",
                          "stream_rms_exponent")


def branch_ratio_slope(ratio: pd.DataFrame) -> pd.DataFrame:
    """branch_ratio_slope: per seed and cell, the slope of ln(branch-to-stream ratio of the
    whole block) on ln(block index) over blocks 1..L (< 0: deeper blocks change the stream
    relatively less). Needs the 'block' ratio (Pre-LN)."""
    return loglog_slopes(ratio, KEYS, "layer", "branch_ratio_slope")


def one_final_norm(fits: pd.DataFrame) -> pd.DataFrame:
    """The rows of one final_norm value: everything but the head input is the same for both
    (the final norm sits after the last block; tests/test_monitor.py checks it)."""
    return fits[fits["final_norm"] == sorted(fits["final_norm"].unique())[0]]
