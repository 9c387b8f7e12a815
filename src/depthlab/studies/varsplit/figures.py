"""The figures of the varsplit note (seed mean with the seeds' range as a band)."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib import transforms

from depthlab.analysis.select import pick
from depthlab.analysis.style import MEAN_RANGE, band, grid, legend, ylabel
from depthlab.studies.varsplit.tables import SCHEME_NAMES, alpha_of, cells
from depthlab.vocabulary.inits import INIT_KINDS
from depthlab.vocabulary.placements import color
from depthlab.vocabulary.variants import label as placement_label
from depthlab.vocabulary.variants import own_key

# the two sublayers' look: (label, colour, marker) from the colour-blind palette
BRANCHES = {"attn": ("attention", color(3), "o"), "mlp": ("MLP", color(0), "s")}
INCREMENT = "variance added by the sublayer\n(input-variance units)"


def _curve(fits: pd.DataFrame, cell: pd.Series, quantity: str) -> pd.DataFrame:
    """One quantity of one cell by layer."""
    return pick(fits, arm=cell["arm"], label=cell["label"], quantity=quantity).sort_values("layer")


def _title(cell: pd.Series) -> str:
    if cell.get("block"):  # an own block: its name, not an init it may not read
        return f"{placement_label(own_key('pre', cell['block']))}, L = {int(cell['depth'])}"
    return f"{INIT_KINDS[cell['init']].label} init, L = {int(cell['depth'])}"


def _scheme_title(scheme: str) -> str:
    """A scheme's name for a panel title, without the config key it sets."""
    return SCHEME_NAMES[scheme].split(" (")[0]


def _alpha_label(cell: pd.Series) -> str:
    alpha, name = alpha_of(cell)
    return f"alpha = {alpha:.3g}" + (f" ({name})" if name else "")


def increments_by_layer(fits: pd.DataFrame):
    """The variance the attention and the MLP sublayer of block l add to the stream against l,
    a panel per unscaled cell: seed mean with the seed range, the crossover layer marked."""
    unscaled = cells(fits, ("none",))
    fig, axes = grid(1, len(unscaled), 3.0, 2.6)
    extra = []
    for ax, (_, c) in zip(axes[0], unscaled.iterrows(), strict=True):
        for branch, (label, hue, marker) in BRANCHES.items():
            band(ax, _curve(fits, c, f"delta_{branch}"), "layer", label, hue, MEAN_RANGE,
                 marker=marker, ms=3.5)
        cross = _curve(fits, c, "crossover")
        if len(cross):
            at = cross["mean"].iloc[0]
            ax.axvline(at, color="grey", ls="--", lw=0.8)
            ax.annotate(f"crossover\nblock {at:g}", (at, 1), xycoords=("data", "axes fraction"),
                        xytext=(3, -3), textcoords="offset points", va="top", fontsize=7)
        ax.set_xlabel("block l")
        ylabel(ax, INCREMENT, fits, MEAN_RANGE)
        ax.set_title(_title(c))
        extra = zip(*ax.get_legend_handles_labels(), strict=True)
    legend(fig, [], extra=extra)
    return fig


def _legend_below(fig, ax, **kw) -> None:
    """The panel's legend under its x label, however short the panel (an offset in points), so
    that it covers none of the curves."""
    below = transforms.offset_copy(ax.transAxes, fig=fig, y=-34, units="points")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below, **kw)


def token_correlation(fits: pd.DataFrame):
    """Mean pairwise token cosine of the stream after block l (0 = the input): the unscaled
    cells, and the cells of the branch-multiplier scheme, one line per alpha."""
    fig, axes = grid(1, 2, 3.0, 2.6, sharey=True)
    branch = cells(fits, ("none", "branch"))
    panels = ((cells(fits, ("none",)), _title, "unscaled"),
              (branch[branch["init"] == "fan_in"], _alpha_label, _scheme_title("branch")))
    for ax, (chosen, name, title) in zip(axes[0], panels, strict=True):
        for i, (_, c) in enumerate(chosen.iterrows()):
            band(ax, _curve(fits, c, "token_corr"), "layer", name(c),
                 color(i), MEAN_RANGE)
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("layer l (stream after block l)")
        _legend_below(fig, ax, fontsize=6)
    ylabel(axes[0][0], "mean pairwise token cosine", fits, MEAN_RANGE)
    return fig


def attn_increment_vs_correlation(fits: pd.DataFrame):
    """Seed-mean attention increment against the seed-mean token correlation of the stream
    block l reads, coloured by l (seaborn scatter), with the fitted line (mean of per-seed OLS
    slope and intercept)."""
    unscaled = cells(fits, ("none",))
    fig, axes = grid(1, len(unscaled), 3.2, 2.8)
    for ax, (_, c) in zip(axes[0], unscaled.iterrows(), strict=True):
        attn = _curve(fits, c, "delta_attn").set_index("layer")["mean"]
        corr = _curve(fits, c, "token_corr").set_index("layer")["mean"]
        points = pd.DataFrame({"corr": corr.loc[attn.index - 1].to_numpy(),
                               "attn": attn.to_numpy(), "block l": attn.index})
        sns.scatterplot(points, x="corr", y="attn", hue="block l", palette="viridis", s=14,
                        linewidth=0, legend=False, ax=ax)
        slope = _curve(fits, c, "link_slope")["mean"].iloc[0]
        intercept = _curve(fits, c, "link_intercept")["mean"].iloc[0]
        r = _curve(fits, c, "link_r")["mean"].iloc[0]
        x = np.linspace(points["corr"].min(), points["corr"].max(), 50)
        ax.plot(x, intercept + slope * x, "k--", lw=0.9,
                label=f"{intercept:.3g} {slope:+.3g}·corr\n(mean r = {r:.2f})")
        scale = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(1, attn.index.max()))
        fig.colorbar(scale, ax=ax, label="block l")
        ax.set_xlabel("token cosine of the stream block l reads")
        ax.set_ylabel("attention increment\n(input-variance units, seed mean)")
        ax.set_title(_title(c))
        ax.legend(fontsize=6)
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
    fig, axes = grid(2, len(schemes), 2.5, 2.2, sharex=True)
    unscaled = cells(fits, ("none",))
    unscaled = unscaled[unscaled["init"] == "fan_in"]
    for col, scheme in enumerate(schemes):
        for i, (_, c) in enumerate(pd.concat([unscaled, cells(fits, (scheme,))]).iterrows()):
            label = "calibrated" if scheme == "layerwise" else _alpha_label(c)
            if c["scheme"] == "none":
                label = "unscaled"
            for row, branch in enumerate(("attn", "mlp")):
                curve = _curve(fits, c, f"delta_{branch}")
                sns.lineplot(x=curve["layer"].to_numpy(),
                             y=(curve["mean"] / _early_mean(curve)).to_numpy(),
                             color=color(i), label=label, lw=1, legend=False,
                             ax=axes[row][col])
        if scheme == "skip":  # the deep increments fall to round-off around 0
            for row in axes:
                row[col].set_yscale("symlog", linthresh=1e-2, linscale=2)
                row[col].yaxis.get_major_locator().set_params(numticks=4)  # labels apart
        # two lines at most in a quarter of a double column (a narrower panel would wrap more)
        axes[0][col].set_title(textwrap.fill(_scheme_title(scheme), 14), fontsize=7)
        axes[1][col].set_xlabel("block l")
        handles, labels = axes[1][col].get_legend_handles_labels()
        _legend_below(fig, axes[1][col], handles=handles,
                      labels=[textwrap.fill(lab, 22) for lab in labels], fontsize=5.5)
        for row, branch in enumerate(("attention", "MLP")):
            axes[row][col].set_ylabel(f"{branch} increment / early mean")
    return fig
