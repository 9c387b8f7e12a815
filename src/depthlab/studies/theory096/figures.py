"""The figures of theory096: measured change of the normalised state against omega_k, and the
correlation matrix of block outputs (median or mean across seeds)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from depthlab.analysis.omega import GAUSS_ABS, formula_abs
from depthlab.analysis.style import band, grid, legend, log_scale, reference, ylabel
from depthlab.studies.theory096.tables import cells, deepest

COUNTING = "k = block index: D_k = LN(x_k) − LN(x_{k−1}), x_0 = the input, LN without affine"


def short(cell: str) -> str:
    """A cell's panel title: its output scale, or its arm (the caption says what it is)."""
    return f"{cell.split(': ')[0]} arm" if ": " in cell else cell


def omega_vs_theory(fits: pd.DataFrame):
    """Per cell (columns: each output scale, then the premise arm): mean |D_k| (top) and
    Var D_k (bottom) against k, log-log, median and seed range, beside the theory, each curve
    named by its source: the note's formula counting the input as term 0 (omega_k) and as
    term 1 (omega_{k+1}); its general form omega_k^2 = 2 - 2 sqrt(V_{k-1}/V_k) with each
    seed's measured stream variances (the fit's omega_abs_general); and the theorem under the
    measured block-output sizes (the fit's omega_abs_indep); the theory curves are medians
    across seeds."""
    omega = {"abs": deepest(fits, "omega_abs"), "var": deepest(fits, "omega_var")}
    indep = deepest(fits, "omega_abs_indep")
    general = deepest(fits, "omega_abs_general")
    names = cells(omega["abs"])
    fig, axes = grid(2, len(names), 2.6, 2.5, sharex=True)
    for col, name in enumerate(names):
        for row, kind in enumerate(("abs", "var")):
            ax = axes[row][col]
            sub = omega[kind][omega[kind]["cell"] == name]
            band(ax, sub, "layer", "measured", "black")
            k = np.sort(sub["layer"].unique())

            def shown(mean_abs, kind=kind):  # a Gaussian's E|D| -> the plotted statistic
                return mean_abs if kind == "abs" else (mean_abs / GAUSS_ABS) ** 2

            for terms, style, what in ((0, "-", "ω_k, input = term 0"),
                                       (1, "--", "ω_{k+1}, input = term 1")):
                reference(ax, k, shown(formula_abs(k, terms)), f"the note: {what}",
                          ls=style, color="#0173b2")
            for frame, label, style, color in (
                    (general, "the note's 2 − 2√(V_{k−1}/V_k), measured V_k", "-", "#d55e00"),
                    (indep, "independent terms, measured Var f_k", ":", "#cc78bc")):
                sub = frame[frame["cell"] == name].sort_values("layer")
                if not sub.empty:
                    reference(ax, sub["layer"], shown(sub["median"]), label, ls=style,
                              color=color, lw=1.2 if style == ":" else 0.7)
            log_scale(ax, "x", "y")
        axes[0][col].set_title(short(name))
        axes[1][col].set_xlabel("block k")
        axes[0][col].set_ylabel("mean |D_k| per coordinate")
        axes[1][col].set_ylabel("Var D_k per coordinate")
    ylabel(axes[0][0], "mean |D_k| per coordinate", omega["abs"])
    legend(fig, [], extra=zip(*axes[0][0].get_legend_handles_labels(), strict=True),
           notes=[COUNTING], ncol=2)
    return fig


def block_output_correlation(fits: pd.DataFrame):
    """Per cell (each output scale, then the premise arm): the seed-mean correlation
    corr(f_i, f_j) of what blocks i and j add to the stream, off-diagonal only, as a seaborn
    heatmap on one symmetric colour scale."""
    corr = deepest(fits, "block_corr")
    names = cells(corr)
    vmax = float(corr["mean"].abs().max())
    n = int(corr["n_seeds"].max())
    cols = min(len(names), 2 if len(names) == 4 else 3)  # four panels: two rows of two
    fig, axes = grid(-(-len(names) // cols), cols, 3.0, 2.8)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, names, strict=False):
        sub = corr[corr["cell"] == name]
        L = int(sub["depth"].iloc[0])
        blocks = np.arange(1, L + 1)
        values = np.full((L, L), np.nan)
        i, j = sub["row"].to_numpy(int) - 1, sub["layer"].to_numpy(int) - 1
        values[i, j] = values[j, i] = sub["mean"].to_numpy()
        matrix = pd.DataFrame(values, index=blocks, columns=blocks)
        step = max(1, L // 6)
        sns.heatmap(matrix, cmap="RdBu_r", vmin=-vmax, vmax=vmax, center=0, square=True,
                    xticklabels=step, yticklabels=step, ax=ax,
                    cbar_kws={"label": f"corr(f_i, f_j), mean of {n} seeds", "shrink": 0.8})
        ax.set_title(f"{short(name)}\nmean off-diagonal {sub['mean'].mean():.1e}")
        ax.set_xlabel("block j")
        ax.set_ylabel("block i")
    return fig
