"""The figures of theory096: measured change of the normalised state against omega_k, and the
correlation matrix of block outputs (median or mean across seeds)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from depthlab.analysis.omega import GAUSS_ABS, formula_abs
from depthlab.analysis.style import band, log_scale
from depthlab.studies.theory096.tables import deepest

COUNTING = (r"k = block index: $D_k = LN(x_k) - LN(x_{k-1})$, $x_0$ = the input, "
            "LN without affine")


def omega_vs_theory(fits: pd.DataFrame):
    """Per output scale (columns): mean |D_k| (top) and Var D_k (bottom) against k, log-log,
    median and seed range, with the note's formula counting the input as term 0 (omega_k) and
    as term 1 (omega_{k+1}), and the theorem under the measured term sizes."""
    omega = {"abs": deepest(fits, "omega_abs"), "var": deepest(fits, "omega_var")}
    indep = deepest(fits, "omega_abs_indep")
    scales = sorted(omega["abs"]["out_scale"].unique())
    fig, axes = plt.subplots(2, len(scales), figsize=(3.8 * len(scales), 6.4), squeeze=False,
                             sharex=True)
    for col, scale in enumerate(scales):
        for row, kind in enumerate(("abs", "var")):
            ax = axes[row][col]
            sub = omega[kind][omega[kind]["out_scale"] == scale]
            band(ax, sub, "layer", "measured", "black")
            k = np.sort(sub["layer"].unique())

            def shown(mean_abs, kind=kind):  # a Gaussian's E|D| -> the plotted statistic
                return mean_abs if kind == "abs" else (mean_abs / GAUSS_ABS) ** 2

            for terms, style, name in ((0, "-", r"$\omega_k$ (input = term 0)"),
                                       (1, "--", r"$\omega_{k+1}$ (input = term 1)")):
                ax.plot(k, shown(formula_abs(k, terms)), style, color="tab:blue",
                        lw=1, label=f"formula {name}")
            ind = indep[indep["out_scale"] == scale].sort_values("layer")
            if not ind.empty:
                ax.plot(ind["layer"], shown(ind["median"]), ":", color="tab:red",
                        lw=1.5, label="independent terms, measured sizes")
            log_scale(ax, "x", "y")
        axes[0][col].set_title(f"output scale {scale:g}")
        axes[1][col].set_xlabel("block k")
    axes[0][0].set_ylabel("mean |D_k| per coordinate")
    axes[1][0].set_ylabel("Var D_k per coordinate")
    axes[0][0].legend(fontsize=7)
    n = int(omega["abs"]["n_seeds"].max())
    fig.suptitle(f"Change of the normalised Pre-LN state at init (median, range of {n} seeds)\n"
                 f"{COUNTING}", fontsize=9)
    return fig


def block_output_correlation(fits: pd.DataFrame):
    """Per output scale: the seed-mean correlation corr(f_i, f_j) of what blocks i and j add
    to the stream, off-diagonal only, on one symmetric colour scale."""
    corr = deepest(fits, "block_corr")
    scales = sorted(corr["out_scale"].unique())
    vmax = float(corr["mean"].abs().max())
    fig, axes = plt.subplots(1, len(scales), figsize=(4.2 * len(scales), 3.8), squeeze=False)
    for ax, scale in zip(axes[0], scales, strict=True):
        sub = corr[corr["out_scale"] == scale]
        L = int(sub["depth"].iloc[0])
        matrix = np.full((L, L), np.nan)
        i, j = sub["row"].to_numpy(int) - 1, sub["layer"].to_numpy(int) - 1
        matrix[i, j] = matrix[j, i] = sub["mean"].to_numpy()
        image = ax.imshow(matrix, cmap="RdBu_r", vmin=-vmax, vmax=vmax,
                          extent=(0.5, L + 0.5, L + 0.5, 0.5), interpolation="nearest")
        ax.grid(False)
        ax.set_title(f"output scale {scale:g}\nmean off-diagonal {sub['mean'].mean():.1e}")
        ax.set_xlabel("block j")
        ax.set_ylabel("block i")
        fig.colorbar(image, ax=ax, shrink=0.8)
    n = int(corr["n_seeds"].max())
    fig.suptitle(r"Correlation of block outputs $f_k = x_k - x_{k-1}$ (Pre-LN, init, mean of "
                 f"{n} seeds)", fontsize=9)
    return fig
