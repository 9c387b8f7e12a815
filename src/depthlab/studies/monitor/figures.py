"""The figures of the monitor note: stream norm and branch-to-stream ratio by block."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.style import band, log_scale
from depthlab.pipeline.placements import COLORS, LABELS, ORDER
from depthlab.studies.monitor.fit import one_final_norm


def _panels(n: int, width: float):
    """A row of n panels sharing the y axis."""
    return plt.subplots(1, n, figsize=(width * n, 3.6), squeeze=False, sharey=True)


def _finish(fig, axes, ylabel: str, title: str) -> None:
    axes[0][0].set_ylabel(ylabel)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)


def stream_norm_by_block(fits: pd.DataFrame):
    """Residual-stream RMS after each block (block 0 = the input, before any final norm): a
    panel per placement, a line per depth, median and seed range, log scale. Seed i draws the
    same first blocks at every depth, so shorter stacks lie under the deepest one."""
    rms = one_final_norm(pick(fits, quantity="stream_rms"))
    placements = [p for p in ORDER if p in set(rms["placement"])]
    fig, axes = _panels(len(placements), 4.2)
    for ax, placement in zip(axes[0], placements, strict=True):
        sub = rms[rms["placement"] == placement]
        for i, depth in enumerate(sorted(sub["depth"].unique())):
            band(ax, sub[sub["depth"] == depth], "layer", f"L = {int(depth)}", f"C{i}")
        log_scale(ax, "y")
        ax.set_title(LABELS[placement])
        ax.set_xlabel("block l (0 = input)")
    _finish(fig, axes, "stream RMS √mean(x_l²)",
            f"Residual-stream norm by block at init (median and range of "
            f"{int(rms['n_seeds'].max())} seeds)")
    return fig


def branch_to_stream_ratio(fits: pd.DataFrame):
    """RMS of what each sublayer adds over RMS of the stream it joins, by block: a panel per
    depth, colour = placement, line style = sublayer (Pre-LN also the whole block)."""
    ratio = one_final_norm(fits[fits["quantity"].str.startswith("branch_ratio_")])
    depths = sorted(ratio["depth"].unique())
    styles = {"attn": "-", "mlp": "--", "block": ":"}
    fig, axes = _panels(len(depths), 3.6)
    for ax, depth in zip(axes[0], depths, strict=True):
        for placement in ORDER:
            for sublayer, style in styles.items():
                sub = ratio[(ratio["depth"] == depth) & (ratio["placement"] == placement)
                            & (ratio["quantity"] == f"branch_ratio_{sublayer}")]
                if not sub.empty:
                    band(ax, sub, "layer", f"{LABELS[placement]} {sublayer}",
                         COLORS[placement], ls=style)
        log_scale(ax, "y")
        ax.set_title(f"L = {int(depth)}")
        ax.set_xlabel("block l")
    _finish(fig, axes, "RMS(branch added) / RMS(stream it joins)",
            f"Branch-to-stream ratio by block at init (median and range of "
            f"{int(ratio['n_seeds'].max())} seeds)")
    return fig
