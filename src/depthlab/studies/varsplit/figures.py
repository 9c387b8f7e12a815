"""The figures of the varsplit note (seed mean with its 95% t-interval as a band)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.style import band
from depthlab.studies.varsplit.tables import SCHEME_NAMES, alpha_of, cells

BRANCH_COLORS = {"attn": "tab:red", "mlp": "tab:blue"}


def _curve(fits: pd.DataFrame, cell: pd.Series, quantity: str) -> pd.DataFrame:
    """One quantity of one cell by layer."""
    return pick(fits, arm=cell["arm"], label=cell["label"], quantity=quantity).sort_values("layer")


def _title(cell: pd.Series) -> str:
    return f"init {cell['init']}, L = {int(cell['depth'])}"


def _alpha_label(cell: pd.Series) -> str:
    alpha, name = alpha_of(cell)
    return f"alpha = {alpha:.3g}" + (f" ({name})" if name else "")


def increments_by_layer(fits: pd.DataFrame):
    """delta_attn(l) and delta_mlp(l) against the block l for each unscaled cell: seed mean with
    the 95% t-interval, the crossover layer marked."""
    unscaled = cells(fits, ("none",))
    fig, axes = plt.subplots(1, len(unscaled), figsize=(4.6 * len(unscaled), 3.6), squeeze=False)
    for ax, (_, c) in zip(axes[0], unscaled.iterrows(), strict=True):
        for branch, color in BRANCH_COLORS.items():
            band(ax, _curve(fits, c, f"delta_{branch}"), "layer", f"delta_{branch}", color,
                 lo="ci_lo", hi="ci_hi", mid="mean")
        cross = _curve(fits, c, "crossover")
        if len(cross):
            at = cross["mean"].iloc[0]
            ax.axvline(at, color="grey", ls="--", lw=0.8, label=f"crossover, layer {at:g}")
        ax.set_xlabel("block l")
        ax.set_title(_title(c))
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("variance added to the stream")
    n = int(fits["n_seeds"].max())
    fig.suptitle(f"Pre-LN variance increments per sublayer (mean, 95% CI of {n} seeds)")
    return fig


def token_correlation(fits: pd.DataFrame):
    """Mean pairwise token cosine of the stream after block l (0 = the input): the unscaled
    cells, and the cells of the branch-multiplier scheme, one line per alpha."""
    fig, axes = plt.subplots(1, 2, figsize=(9.2, 3.6), sharey=True)
    for i, (_, c) in enumerate(cells(fits, ("none",)).iterrows()):
        band(axes[0], _curve(fits, c, "token_corr"), "layer", _title(c), f"C{i}", lo="ci_lo",
             hi="ci_hi", mid="mean")
    axes[0].set_title("unscaled")
    branch = cells(fits, ("none", "branch"))
    for i, (_, c) in enumerate(branch[branch["init"] == "fan_in"].iterrows()):
        band(axes[1], _curve(fits, c, "token_corr"), "layer", _alpha_label(c), f"C{i}",
             lo="ci_lo", hi="ci_hi", mid="mean")
    axes[1].set_title(SCHEME_NAMES["branch"])
    for ax in axes:
        ax.set_xlabel("layer l (stream after block l)")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("mean pairwise token cosine")
    fig.suptitle("Token correlation over depth (mean, 95% CI across seeds)")
    return fig


def attn_increment_vs_correlation(fits: pd.DataFrame):
    """Seed-mean delta_attn(l) against the seed-mean token correlation of the stream block l
    reads, coloured by l, with the fitted line (mean of per-seed OLS slope and intercept)."""
    unscaled = cells(fits, ("none",))
    fig, axes = plt.subplots(1, len(unscaled), figsize=(4.6 * len(unscaled), 3.8), squeeze=False)
    for ax, (_, c) in zip(axes[0], unscaled.iterrows(), strict=True):
        attn = _curve(fits, c, "delta_attn").set_index("layer")["mean"]
        corr = _curve(fits, c, "token_corr").set_index("layer")["mean"]
        x = corr.loc[attn.index - 1].to_numpy()
        points = ax.scatter(x, attn.to_numpy(), c=attn.index, cmap="viridis", s=14)
        slope = _curve(fits, c, "link_slope")["mean"].iloc[0]
        intercept = _curve(fits, c, "link_intercept")["mean"].iloc[0]
        r = _curve(fits, c, "link_r")["mean"].iloc[0]
        grid = np.linspace(x.min(), x.max(), 50)
        ax.plot(grid, intercept + slope * grid, "k--", lw=0.9,
                label=f"{intercept:.3g} {slope:+.3g}·corr (mean r = {r:.2f})")
        fig.colorbar(points, ax=ax, label="block l")
        ax.set_xlabel("token correlation of the stream block l reads")
        ax.set_title(_title(c))
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("delta_attn(l)")
    fig.suptitle("Attention increment against token correlation (seed means)")
    return fig


def _early_mean(curve: pd.DataFrame) -> float:
    """Mean of a per-layer curve over the first quarter of the blocks (the table's 'early')."""
    return float(curve["mean"].iloc[: max(1, len(curve) // 4)].mean())


def residual_scaling(fits: pd.DataFrame):
    """Per-layer increments relative to their early mean (first quarter of the blocks), attention
    (top) and MLP (bottom), one column per scheme with a line per alpha (the unscaled run as
    alpha = 1 in each uniform column), and the layerwise calibrated run; the skip column on a
    symmetric log scale."""
    schemes = [s for s in ("branch", "init", "skip", "layerwise")
               if (fits["scheme"] == s).any()]
    fig, axes = plt.subplots(2, len(schemes), figsize=(3.6 * len(schemes), 6.2), squeeze=False,
                             sharex=True)
    unscaled = cells(fits, ("none",))
    unscaled = unscaled[unscaled["init"] == "fan_in"]
    for col, scheme in enumerate(schemes):
        for _, c in pd.concat([unscaled, cells(fits, (scheme,))]).iterrows():
            label = "calibrated" if scheme == "layerwise" else _alpha_label(c)
            if c["scheme"] == "none":
                label = "unscaled"
            for row, branch in enumerate(("attn", "mlp")):
                curve = _curve(fits, c, f"delta_{branch}")
                axes[row][col].plot(curve["layer"], curve["mean"] / _early_mean(curve),
                                     label=label, lw=1)
        if scheme == "skip":  # the deep increments fall to round-off around 0
            for row in axes:
                row[col].set_yscale("symlog", linthresh=1e-2)
        axes[0][col].set_title(SCHEME_NAMES[scheme], fontsize=8)
        axes[1][col].set_xlabel("block l")
        axes[0][col].legend(fontsize=6)
    axes[0][0].set_ylabel("delta_attn(l) / early mean")
    axes[1][0].set_ylabel("delta_mlp(l) / early mean")
    fig.suptitle("Per-layer contributions under residual scaling (seed means; skip: unit-skip "
                 "frame)")
    return fig
