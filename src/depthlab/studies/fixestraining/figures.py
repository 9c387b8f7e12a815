"""The figures of the fixestraining study: loss curves per placement, and the probes at the
checkpoints, with and without warmup (median across seeds, seed range as a band or bars), in the
registry's colour and marker per placement."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from depthlab.analysis.profiles import unigram_entropy
from depthlab.analysis.select import pick
from depthlab.analysis.style import (
    PLACEMENT_STYLE,
    PROBE_AXES,
    curves,
    empty,
    grid,
    legend,
    log_scale,
    look,
    spread_label,
    steps_axis,
)
from depthlab.studies.fixestraining.rates import at_shared_rate, best_rates, swept
from depthlab.vocabulary.placements import FAMILIES, PLACEMENTS
from depthlab.vocabulary.variants import base, order
from depthlab.vocabulary.variants import label as placement_label

WARMUP_DASHES = ("", (4, 1.5), (1, 1), (4, 1, 1, 1))  # solid, dashed, dotted, dash-dot


def _warmups(frame: pd.DataFrame) -> list[int]:
    return sorted(int(w) for w in frame["warmup_steps"].unique())


def _warmup_handles(warmups: list[int], color: str = "black", marker=None) -> list:
    """Legend entries for the warmup arms' line styles."""
    out = []
    for i, warmup in enumerate(warmups):
        line = Line2D([], [], color=color, marker=marker, lw=1)
        if WARMUP_DASHES[i % len(WARMUP_DASHES)]:
            line.set_dashes(WARMUP_DASHES[i % len(WARMUP_DASHES)])
        out.append((line, f"warmup {warmup} steps"))
    return out


def _placement_depths(frame: pd.DataFrame) -> list[tuple[str, int]]:
    """The (placement, depth) pairs of `frame`, in the registry's order, then by depth."""
    pairs = set(zip(frame["placement"], frame["depth"].astype(int), strict=True))
    return [(p, d) for p in order({p for p, _ in pairs}) for d in sorted(
        d for q, d in pairs if q == p)]


def _depths(frame: pd.DataFrame) -> list[int | None]:
    """The depths to facet `frame` by: each of several, or [None] (no facet) for one."""
    depths = sorted(int(d) for d in frame["depth"].unique())
    return depths if len(depths) > 1 else [None]


def loss(fits: pd.DataFrame):
    """A panel per placement and depth: the train loss (10-step running median of the per-step
    seed medians) and the validation loss (markers, seed range as bars) against step, a line
    style per warmup arm; the grey line is the corpus's unigram entropy; the cells at the rate
    every placement trained at."""
    fits = at_shared_rate(fits)
    train = pick(fits, quantity="train_loss")
    val = pick(fits, quantity="val_loss")
    entropy = unigram_entropy(fits)
    panels = _placement_depths(train)
    warmups = _warmups(train)
    cols = min(3, len(panels))
    rows = int(np.ceil(len(panels) / cols))
    fig, axes = grid(rows, cols, 2.3, 1.9, sharex=True, sharey=True)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (placement, depth) in zip(axes.flat, panels, strict=False):
        for i, warmup in enumerate(warmups):
            dashes = WARMUP_DASHES[i % len(WARMUP_DASHES)]
            where = {"placement": placement, "depth": depth, "warmup_steps": warmup}
            t = pick(train, **where).sort_values("step")
            line = sns.lineplot(x=t["step"].to_numpy(),
                                y=t["median"].rolling(10, min_periods=1).median().to_numpy(),
                                color=look(placement)["color"], lw=0.9, ax=ax, legend=False)
            if dashes:
                line.lines[-1].set_dashes(dashes)
            v = pick(val, **where).sort_values("step")
            ax.errorbar(v["step"], v["median"], [v["median"] - v["min"], v["max"] - v["median"]],
                        marker=look(placement)["marker"], ls="none", color=look(placement)["color"],
                        mfc="white" if i else None, ms=3, lw=0.8)
        ax.axhline(entropy, color="grey", lw=0.8, ls="-.")
        ax.set_title(f"{placement_label(placement)}, L = {depth}")
        ax.set_xlabel("step")
        ax.set_ylabel("loss (nats/char)")
        ax.label_outer()
    n = int(val["n_seeds"].max())
    legend(fig, [], extra=[
        *_warmup_handles(warmups),
        (Line2D([], [], color="black", marker="o", ls="none", ms=3),
         f"validation: median, bars: {n}-seed range (open: warmup)"),
        (Line2D([], [], color="grey", ls="-.", lw=0.8), "unigram entropy of the corpus"),
    ], ncol=2)
    return fig


PROBES = ("grad_ratio", "stream_growth", "token_corr_last", "omega_slope",
          "branch_ratio_last_mlp")


def probes(fits: pd.DataFrame):
    """Rows: the probes at each checkpoint against step (symlog x); columns: the placement
    families (and depths, where there are several); a curve per placement (colour, marker) and
    warmup arm (line style); a quantity that is 0 at a checkpoint is left out of a log panel;
    the cells at the rate every placement trained at."""
    fits = at_shared_rate(fits)
    warmups = _warmups(pick(fits, quantity="grad_ratio"))
    present = set(fits["placement"])
    families = [f for f in FAMILIES if any(PLACEMENTS[base(p)].family == f for p in present)]
    columns = [(f, d) for d in _depths(fits) for f in families]
    fig, axes = grid(len(PROBES), len(columns), 2.4, 1.8, sharex=True, sharey="row")
    drawn = []
    for r, quantity in enumerate(PROBES):
        label, log_y = PROBE_AXES[quantity]
        for c, (family, depth) in enumerate(columns):
            ax = axes[r][c]
            frame = pick(fits, quantity=quantity)
            if depth is not None:
                frame = pick(frame, depth=depth)
            frame = frame[frame["placement"].map(lambda p: PLACEMENTS[base(p)].family) == family]
            if log_y:
                frame = frame[frame["median"] > 0]
            for i, warmup in enumerate(warmups):
                dashes = WARMUP_DASHES[i % len(WARMUP_DASHES)]
                style = {p: {**s, "dashes": dashes} for p, s in PLACEMENT_STYLE.items()}
                drawn += curves(ax, pick(frame, warmup_steps=warmup), "step", style=style)
            steps_axis(ax)
            if frame.empty:
                empty(ax, "not defined\nor 0")
            if log_y:
                log_scale(ax, "y")
            if r == 0:
                ax.set_title(family if depth is None else f"{family}, L = {depth}")
            ax.set_ylabel(label)
            ax.set_xlabel("step")
            ax.label_outer()
    legend(fig, order(drawn),
           extra=_warmup_handles(warmups), notes=[
               f"{spread_label(pick(fits, quantity=PROBES[0]))}; probe batch of the "
               "validation split"])
    return fig


def lr_sweep(fits: pd.DataFrame):
    """The final validation loss on the selection seeds against the learning rate (log x), a
    curve per swept placement (seed mean, seed range as a band), its best recipe circled, a
    panel per warmup length; the grey line is the corpus's unigram entropy."""
    cells = swept(fits)
    entropy = unigram_entropy(fits)
    best = best_rates(cells)
    warmups = _warmups(cells)
    fig, axes = grid(1, len(warmups), 3.2, 2.4, sharey=True)
    drawn = []
    for ax, warmup in zip(axes[0], warmups, strict=True):
        drawn += curves(ax, pick(cells, warmup_steps=warmup), "lr", spread=("min", "mean", "max"))
        for row in pick(best, warmup_steps=warmup).itertuples():
            ax.plot(row.lr, row.mean, "o", ms=9, mfc="none", mec=look(row.placement)["color"],
                    mew=1)
        ax.axhline(entropy, color="grey", lw=0.8, ls="-.")
        log_scale(ax, "x")
        depth = int(cells["depth"].iloc[0])
        ax.set_title(f"L = {depth}, warmup {warmup} steps")
        ax.set_xlabel("peak learning rate (AdamW)")
        ax.set_ylabel(f"val loss at step {int(cells['step'].max())} (nats/char)")
        ax.label_outer()
    n = int(cells["n_seeds"].max())
    legend(fig, order(drawn), extra=[
        (Line2D([], [], color="black", marker="o", ms=9, mfc="none", ls="none"),
         "each placement's best recipe (lowest mean)"),
        (Line2D([], [], color="grey", ls="-.", lw=0.8), "unigram entropy of the corpus"),
    ], notes=[f"line: mean of {n} seeds; band: seed range"])
    return fig


def model_change(fits: pd.DataFrame):
    """DeepNet's model update over the first steps (Wang et al. 2022, Fig. 5): the relative
    change of what the head reads on the probe batch from initialisation, ||F(θ_t) − F(θ_0)|| /
    ||F(θ_0)||, against the update t (symlog x, log y), a panel per depth, a curve per
    placement (median, seed range as a band), a line style per warmup arm."""
    change = pick(fits, quantity="relative_update")
    depths = sorted(int(d) for d in change["depth"].unique())
    warmups = _warmups(change)
    fig, axes = grid(1, len(depths), 2.4, 2.2, sharey=True)
    drawn = []
    for ax, depth in zip(axes[0], depths, strict=True):
        for i, warmup in enumerate(warmups):
            dashes = WARMUP_DASHES[i % len(WARMUP_DASHES)]
            style = {p: {**s, "dashes": dashes} for p, s in PLACEMENT_STYLE.items()}
            drawn += curves(ax, pick(change, depth=depth, warmup_steps=warmup), "step",
                            style=style)
        steps_axis(ax)
        log_scale(ax, "y")
        ax.set_title(f"L = {depth}")
        ax.set_xlabel("step t (AdamW updates)")
        ax.set_ylabel(r"$\|F_t - F_0\| \,/\, \|F_0\|$ (output's change from init)")
        ax.label_outer()
    legend(fig, order(set(drawn)), extra=_warmup_handles(warmups) if len(warmups) > 1 else (),
           notes=[f"{spread_label(change)}; probe batch of the validation split"])
    return fig
