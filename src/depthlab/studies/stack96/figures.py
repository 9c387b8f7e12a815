"""The figures of the stack96 note (median across seeds with the seed range as a band)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.style import band, log_scale
from depthlab.pipeline.placements import COLORS, LABELS, ORDER


def grad_profile(fits: pd.DataFrame):
    """Gradient norm of each block against its layer index: a panel per depth, a line per
    placement, median with seed-range band, log scale."""
    grads = pick(fits, quantity="grad_norm", arm="grad")
    depths = sorted(grads["depth"].unique())
    fig, axes = plt.subplots(1, len(depths), figsize=(3.2 * len(depths), 3.2), squeeze=False)
    for ax, depth in zip(axes[0], depths, strict=True):
        for placement in ORDER:
            sub = grads[(grads["depth"] == depth) & (grads["placement"] == placement)]
            if not sub.empty:
                band(ax, sub, "layer", LABELS[placement], COLORS[placement])
        log_scale(ax, "y")
        ax.set_title(f"L = {int(depth)}")
        ax.set_xlabel("block l")
    axes[0][0].set_ylabel("‖∂loss/∂θ_l‖ (Frobenius)")
    axes[0][0].legend()
    n = int(grads["n_seeds"].max())
    fig.suptitle(f"Gradient norm by block at initialisation (median and range of {n} seeds)")
    return fig


def grad_ratio_by_depth(fits: pd.DataFrame):
    """First/last block gradient ratio against depth per placement, log-log, seed band."""
    ratio = pick(fits, quantity="grad_ratio", arm="grad")
    fig, ax = plt.subplots(figsize=(4.8, 3.6))
    for placement in ORDER:
        sub = ratio[ratio["placement"] == placement]
        band(ax, sub, "depth", LABELS[placement], COLORS[placement],
             marker="o")
    ax.axhline(1, color="grey", lw=0.8, ls="--")
    log_scale(ax, "x", "y")
    ax.set_xlabel("depth L")
    ax.set_ylabel("‖g_1‖ / ‖g_L‖")
    ax.legend()
    n = int(ratio["n_seeds"].max())
    ax.set_title(f"First/last gradient ratio (median, range of {n} seeds)")
    return fig


def stream_sd(fits: pd.DataFrame):
    """Pre-LN residual-stream sd after each block, a panel per output scale, a line per depth,
    with the sqrt(l) reference anchored at block 1."""
    sd = pick(fits, quantity="stream_sd", arm="stream")
    sd = sd[sd["layer"] >= 1]
    scales = sorted(sd["out_scale"].unique())
    fig, axes = plt.subplots(1, len(scales), figsize=(3.6 * len(scales), 3.4), squeeze=False)
    for ax, scale in zip(axes[0], scales, strict=True):
        sub = sd[sd["out_scale"] == scale]
        for depth in sorted(sub["depth"].unique()):
            band(ax, sub[sub["depth"] == depth], "layer", f"L = {int(depth)}")
        deepest = sub[sub["depth"] == sub["depth"].max()].sort_values("layer")
        first = deepest["median"].iloc[0]
        ax.plot(deepest["layer"], first * np.sqrt(deepest["layer"]), "k--", lw=0.8,
                label="sd_1·√l")
        log_scale(ax, "x", "y")
        ax.set_title(f"output scale {scale:g}")
        ax.set_xlabel("block l")
    axes[0][0].set_ylabel("stream sd after block l")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Pre-LN residual-stream growth (median and seed range)")
    return fig


def variance_budget(fits: pd.DataFrame):
    """Measured stream variance V_l against V_0 + the running sum of branch variances
    (independent-branch bookkeeping) and the linear fit V_0 + c·l, per output scale at the
    deepest stream depth."""
    arm = "stream"
    var = pick(fits, quantity="stream_var", arm=arm)
    depth = var["depth"].max()
    scales = sorted(var["out_scale"].unique())
    fig, axes = plt.subplots(1, len(scales), figsize=(3.6 * len(scales), 3.4), squeeze=False)
    for ax, scale in zip(axes[0], scales, strict=True):
        def cell(q, scale=scale):
            f = pick(fits, quantity=q, arm=arm)
            return f[(f["depth"] == depth) & (f["out_scale"] == scale)].sort_values("layer")

        v = cell("stream_var")
        band(ax, v, "layer", "measured V_l", "black")
        branch = (cell("branch_var_attn")["mean"].to_numpy()
                  + cell("branch_var_mlp")["mean"].to_numpy())
        v0 = v["mean"].iloc[0]
        ax.plot(v["layer"], v0 + np.concatenate([[0], np.cumsum(branch)]), "--",
                color="tab:red", label="V_0 + Σ Var(branch)")
        c = cell("budget_c")["median"].iloc[0]
        b0 = cell("budget_v0")["median"].iloc[0]
        ax.plot(v["layer"], b0 + c * v["layer"], ":", color="tab:blue",
                label=f"fit V_0 + c·l, c = {c:.3g}")
        ax.set_title(f"L = {int(depth)}, output scale {scale:g}")
        ax.set_xlabel("block l")
    axes[0][0].set_ylabel("stream variance")
    for ax in axes[0]:
        ax.legend(fontsize=7)
    fig.suptitle("Pre-LN variance budget")
    return fig
