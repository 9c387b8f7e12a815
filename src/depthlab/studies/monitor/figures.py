"""The figures of the monitor note: stream norm and branch-to-stream ratio by block (median
across seeds, seed range as a band)."""

from __future__ import annotations

import pandas as pd
from matplotlib.lines import Line2D

from depthlab.analysis.select import pick
from depthlab.analysis.style import (
    PLACEMENT_STYLE,
    band,
    curves,
    grid,
    legend,
    log_scale,
    ylabel,
)
from depthlab.studies.monitor.fit import one_final_norm
from depthlab.vocabulary.placements import color
from depthlab.vocabulary.variants import label, order


def stream_norm_by_block(fits: pd.DataFrame):
    """Residual-stream RMS after each block (block 0 = the input, before any final norm): a
    panel per placement, a line per depth, median and seed range, log scale. Seed i draws the
    same first blocks at every depth, so shorter stacks lie under the deepest one."""
    rms = one_final_norm(pick(fits, quantity="stream_rms"))
    placements = order(set(rms["placement"]))
    depths = sorted(rms["depth"].unique())
    fig, axes = grid(1, len(placements), 2.4, 2.4, sharey=True)
    for ax, placement in zip(axes[0], placements, strict=True):
        sub = rms[rms["placement"] == placement]
        for i, depth in enumerate(depths):
            band(ax, sub[sub["depth"] == depth], "layer", f"L = {int(depth)}", color(i))
        log_scale(ax, "y")
        ax.set_title(label(placement))
        ax.set_xlabel("block l (0 = input)")
    ylabel(axes[0][0], "stream RMS √mean(x_l²)\n(input-sd units)", rms)
    legend(fig, [], extra=[(Line2D([], [], color=color(i)), f"L = {int(d)}")
                           for i, d in enumerate(depths)])
    return fig


SUBLAYER_DASHES = {"attn": "", "mlp": (4, 1.5), "block": (1, 1)}


def branch_to_stream_ratio(fits: pd.DataFrame):
    """RMS of what each sublayer adds over RMS of the stream it joins, by block: a panel per
    depth, colour and marker = placement, line style = sublayer (Pre-LN also the whole
    block)."""
    ratio = one_final_norm(fits[fits["quantity"].str.startswith("branch_ratio_")])
    depths = sorted(ratio["depth"].unique())
    fig, axes = grid(1, len(depths), 2.4, 2.4, sharey=True)
    drawn, sublayers = [], []
    for ax, depth in zip(axes[0], depths, strict=True):
        for sublayer, dashes in SUBLAYER_DASHES.items():
            sub = ratio[(ratio["depth"] == depth)
                        & (ratio["quantity"] == f"branch_ratio_{sublayer}")]
            style = {p: {**s, "dashes": dashes} for p, s in PLACEMENT_STYLE.items()}
            levels = curves(ax, sub, "layer", style=style)
            drawn += levels
            sublayers += [sublayer] if levels else []
        log_scale(ax, "y")
        ax.set_title(f"L = {int(depth)}")
        ax.set_xlabel("block l")
    ylabel(axes[0][0], "RMS(branch added) /\nRMS(stream it joins)", ratio)
    names = {"attn": "attention", "mlp": "MLP", "block": "whole block"}
    extra = []
    for sublayer in dict.fromkeys(sublayers):
        line = Line2D([], [], color="black", lw=1)
        if SUBLAYER_DASHES[sublayer]:
            line.set_dashes(SUBLAYER_DASHES[sublayer])
        extra.append((line, names[sublayer]))
    legend(fig, order(drawn), extra=extra)
    return fig
