"""The figures of the scale study: local exponents against depth per placement (the stream's
and omega's, beside the finite-depth prediction and the notes' rates), the gradient ratio
against depth under both readings, and the probes against width."""

from __future__ import annotations

import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.style import MEAN_RANGE, curves, grid, legend, log_scale, reference, ylabel
from depthlab.studies.scale.fit import deepest
from depthlab.studies.scale.tables import GRAD_READING

BLOCK = "octave end l (blocks; the octave l/2–l)"


def local_exponents(fits: pd.DataFrame):
    """Two panels over the octave ends of the deepest depth-arm cell: the stream's local
    exponent (0.5 = sqrt(depth)) with Pre-LN's finite-depth prediction, and omega's local
    log-log slope (theory096's −0.5); a curve per placement, mean with the seed range."""
    deep = deepest(fits, "depth")
    fig, axes = grid(1, 2, 3.2, 2.6)
    drawn, extra = [], []
    for ax, quantity, what, rate in (
        (axes[0, 0], "stream_local_exponent", "d ln rms(x_l) / d ln l", 0.5),
        (axes[0, 1], "omega_local_slope", "ω log-log slope, octave l/2–l", -0.5),
    ):
        rows = pick(deep, quantity=quantity)
        drawn += curves(ax, rows, "layer", spread=MEAN_RANGE)
        extra.append(reference(ax, sorted(rows["layer"].unique()), [rate] * rows["layer"].nunique(),
                               f"the notes' rate {rate:+.1f}"))
        if quantity == "stream_local_exponent":
            pred = pick(deep, quantity="stream_local_prediction", placement="pre")
            extra.append(reference(ax, pred["layer"], pred["mean"], "Pre-LN: sqrt(V_0 + l σ²)",
                                   ls="--"))
        log_scale(ax, "x")
        ax.set_xlabel(BLOCK)
        ylabel(ax, what, rows, MEAN_RANGE)
    legend(fig, drawn, extra=extra)
    return fig


def grad_ratio(fits: pd.DataFrame):
    """‖g_1‖/‖g_L‖ against depth L, a panel per reading of a block's gradient (all its
    parameters; its weight matrices), a curve per placement, median with the seed range."""
    ratios = pick(fits, quantity="grad_ratio")
    ratios = ratios[ratios["arm"] != "depth"]
    readings = [g for g in GRAD_READING if g in set(ratios["grad_of"])]
    fig, axes = grid(1, max(1, len(readings)), 3.2, 2.6)
    drawn = []
    for ax, grad_of in zip(axes[0], readings, strict=False):
        rows = ratios[ratios["grad_of"] == grad_of]
        drawn += curves(ax, rows, "depth")
        extra = reference(ax, sorted(rows["depth"].unique()), [1] * rows["depth"].nunique(),
                          "balanced (1)")
        log_scale(ax, "x", "y")
        ax.set_title(GRAD_READING[grad_of])
        ax.set_xlabel("depth L (blocks)")
        ylabel(ax, "‖g_1‖ / ‖g_L‖", rows)
    legend(fig, drawn, extra=[extra] if readings else ())
    return fig


def width(fits: pd.DataFrame):
    """The stream's growth and the last token correlation against width d, a row per depth of
    the width arms, a curve per placement, median with the seed range."""
    rows = fits[fits["arm"].str.startswith("width")]
    depths = sorted(rows["depth"].unique())
    fig, axes = grid(len(depths), 2, 3.2, 2.4)
    drawn = []
    for r, depth in enumerate(depths):
        for c, (quantity, what) in enumerate((("stream_growth", "rms(x_L) / rms(x_0)"),
                                              ("token_corr_last", "token cosine, block L"))):
            ax = axes[r, c]
            sub = pick(rows, quantity=quantity, depth=depth)
            drawn += curves(ax, sub, "d_model")
            log_scale(ax, "x")
            ax.set_xlabel("width d")
            ax.set_title(f"L = {int(depth)}")
            ylabel(ax, what, sub)
    legend(fig, drawn)
    return fig
