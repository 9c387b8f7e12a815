"""The figures of the stack96 note: median across seeds with the seed range as a band, a curve
per placement in the registry's colour and marker (depthlab.analysis.style)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.style import band, curves, grid, legend, log_scale, reference, ylabel

GRADIENT = "‖∂loss/∂θ_l‖ (Frobenius)"
RATIO = "‖g_1‖ / ‖g_L‖"


def grad_profile(fits: pd.DataFrame):
    """Gradient norm of each block against its layer index: a panel per depth, a curve per
    placement with data, median with seed-range band, log y."""
    grads = pick(fits, quantity="grad_norm", arm="grad")
    depths = sorted(grads["depth"].unique())
    fig, axes = grid(1, len(depths), 2.4, 2.4, sharey=True)
    drawn = []
    for ax, depth in zip(axes[0], depths, strict=True):
        drawn += curves(ax, grads[grads["depth"] == depth], "layer")
        log_scale(ax, "y")
        ax.set_title(f"L = {int(depth)}")
        ax.set_xlabel("block l")
    ylabel(axes[0][0], GRADIENT, grads)
    legend(fig, drawn)
    return fig


def grad_ratio_by_depth(fits: pd.DataFrame):
    """First/last block gradient ratio against depth, a curve per placement with data,
    log-log, seed band; 1 = balanced."""
    ratio = pick(fits, quantity="grad_ratio", arm="grad")
    fig, axes = grid(1, 1, 3.4, 2.8)
    ax = axes[0][0]
    drawn = curves(ax, ratio, "depth")
    balanced = ax.axhline(1, color="grey", ls="--", lw=0.8), "1 = balanced"
    log_scale(ax, "x", "y")
    ax.set_xlabel("depth L (blocks)")
    ylabel(ax, RATIO, ratio)
    legend(fig, drawn, extra=[balanced])
    return fig


def stream_sd(fits: pd.DataFrame):
    """Pre-LN residual-stream sd after each block, a panel per output scale, a line per
    depth; beside the measurement the finite-depth prediction sd_l = sd_0 sqrt((V_0 + l σ²) /
    V_0), σ² = (V_L - V_0) / L the mean per-block variance increment of the deepest stack
    (medians of the fit's stream_var), and the note's sqrt(l) law anchored at block 1."""
    sd = pick(fits, quantity="stream_sd", arm="stream")
    var = pick(fits, quantity="stream_var", arm="stream")
    scales = sorted(sd["out_scale"].unique())
    depths = sorted(sd["depth"].unique())
    shades = dict(zip(depths, np.linspace(0.75, 0.15, len(depths)), strict=True))
    fig, axes = grid(1, len(scales), 2.6, 2.6, sharey=True)
    extra = []
    for ax, scale in zip(axes[0], scales, strict=True):
        sub = sd[(sd["out_scale"] == scale) & (sd["layer"] >= 1)]
        for depth in depths:
            band(ax, sub[sub["depth"] == depth], "layer", f"measured, L = {int(depth)}",
                 str(shades[depth]))
        deepest = sd[(sd["out_scale"] == scale) & (sd["depth"] == depths[-1])]
        v = pick(var, out_scale=scale, depth=depths[-1]).set_index("layer")["median"]
        sigma2 = (v.iloc[-1] - v.loc[0]) / depths[-1]
        layers = np.arange(1, depths[-1] + 1)
        sd0 = deepest.set_index("layer")["median"].loc[0]
        extra = [
            reference(ax, layers, sd0 * np.sqrt((v.loc[0] + layers * sigma2) / v.loc[0]),
                      "finite depth: sd_0·√((V_0 + l·σ²)/V_0), σ² = (V_L − V_0)/L measured",
                      ls="--", color="#d55e00"),
            reference(ax, layers, deepest.set_index("layer")["median"].loc[1] * np.sqrt(layers),
                      "the note: sd_1·√l", ls=":", color="#0173b2"),
        ]
        log_scale(ax, "x", "y")
        ax.set_title(f"output scale {scale:g}")
        ax.set_xlabel("block l")
    ylabel(axes[0][0], "stream sd after block l\n(input-sd units)", sd)
    handles, labels = axes[0][0].get_legend_handles_labels()
    legend(fig, [], extra=[*zip(handles[:len(depths)], labels[:len(depths)], strict=True),
                           *extra], ncol=2)
    return fig


def variance_budget(fits: pd.DataFrame):
    """Measured stream variance V_l against V_0 + the running sum of branch variances
    (independent-branch bookkeeping) and the linear fit V_0 + c·l, per output scale at the
    deepest stream depth."""
    arm = "stream"
    var = pick(fits, quantity="stream_var", arm=arm)
    depth = var["depth"].max()
    scales = sorted(var["out_scale"].unique())
    fig, axes = grid(1, len(scales), 2.6, 2.6)
    extra = []
    for ax, scale in zip(axes[0], scales, strict=True):
        def cell(q, scale=scale):
            f = pick(fits, quantity=q, arm=arm)
            return f[(f["depth"] == depth) & (f["out_scale"] == scale)].sort_values("layer")

        v = cell("stream_var")
        band(ax, v, "layer", "measured V_l", "black")
        branch = (cell("branch_var_attn")["mean"].to_numpy()
                  + cell("branch_var_mlp")["mean"].to_numpy())
        v0 = v["mean"].iloc[0]
        c = cell("budget_c")["median"].iloc[0]
        b0 = cell("budget_v0")["median"].iloc[0]
        extra = [
            reference(ax, v["layer"], v0 + np.concatenate([[0], np.cumsum(branch)]),
                      "V_0 + Σ Var(branch), independent branches", ls="--", color="#d55e00"),
            reference(ax, v["layer"], b0 + c * v["layer"], "linear fit V_0 + c·l",
                      color="#0173b2"),
        ]
        ax.set_title(f"L = {int(depth)}, output scale {scale:g}\nc = {c:.3g} per block")
        ax.set_xlabel("block l")
        ax.set_ylabel("stream variance V_l")
    ylabel(axes[0][0], "stream variance V_l\n(input-variance units)", var)
    h, lab = axes[0][0].get_legend_handles_labels()
    legend(fig, [], extra=[(h[0], lab[0]), *extra], ncol=3)
    return fig
