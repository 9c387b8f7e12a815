"""The coordinate check of a block as a figure: the tidy rows of depthlab.core.own_block's
measure_module (or of any measured cell) drawn per block, a panel per metric, as mup pairs
get_coord_data with plot_coord_data (microsoft/mup, mup/coord_check.py)."""

from __future__ import annotations

import pandas as pd

from depthlab.analysis.stats import summarise_seeds
from depthlab.analysis.style import band, grid, log_scale, ylabel
from depthlab.vocabulary.metrics import METRICS

# the panels drawn by default: the stream's size, each block's gradient, its change to the
# normalised stream (theory096's omega) and the tokens' cosine
COORD_METRICS = ("stream_sd", "grad_norm", "omega_abs", "token_corr")


def plot_module(rows: pd.DataFrame, metrics: tuple[str, ...] = COORD_METRICS,
                sublayer: str = "block"):
    """A figure of `rows` (measure_module's: seed, layer, sublayer, metric, value): a panel per
    metric of `metrics` present at `sublayer`, its value against the block index l, the median
    across seeds with the seeds' range as a band, in the metric's units (METRICS), log where
    the metric is drawn on a log axis. ValueError where none of `metrics` is in the rows."""
    present = [m for m in metrics if len(rows[(rows["metric"] == m)
                                              & (rows["sublayer"] == sublayer)])]
    if not present:
        raise ValueError(f"none of the metrics {list(metrics)} at sublayer {sublayer!r} in the "
                         f"rows (they hold {sorted(set(rows['metric']))})")
    fig, axes = grid(1, len(present), 2.4, 2.2)
    for ax, name in zip(axes[0], present, strict=True):
        metric = METRICS[name]
        one = rows[(rows["metric"] == name) & (rows["sublayer"] == sublayer)]
        summary = summarise_seeds(one, ["layer"], name)
        band(ax, summary, "layer", marker="o", ms=3)
        if metric.log:
            log_scale(ax, "y")
        ax.set_xlabel("block l")
        unit = "" if metric.unit == "1" else f" ({metric.unit})"
        ylabel(ax, f"{metric.label}{unit}", summary)
    return fig
