"""The figures of the training study (medians across seeds, seed range as a band or bars)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from depthlab.analysis.omega import formula_abs
from depthlab.analysis.profiles import unigram_entropy
from depthlab.analysis.select import pick
from depthlab.analysis.style import band, grid, legend, log_scale, look, steps_axis, ylabel
from depthlab.vocabulary.variants import label as placement_label
from depthlab.vocabulary.variants import order

NAMES = {"delta_attn": "attention increment", "delta_mlp": "MLP increment"}  # for readers
WARMUP_STYLES = ("-", "--", ":", "-.")


def _grid(n_rows: int, n_cols: int, size=(2.6, 2.1)):
    """Panels sharing x by column and y by row (one quantity and placement per row)."""
    return grid(n_rows, n_cols, *size, sharex="col", sharey="row")


def _step_colors(steps) -> dict[int, tuple]:
    cmap = plt.get_cmap("viridis")
    steps = sorted(steps)
    return {s: cmap(i / max(len(steps) - 1, 1)) for i, s in enumerate(steps)}


def _cells(frame: pd.DataFrame) -> list[tuple[int, int]]:
    """The (depth, warmup_steps) pairs present, in order."""
    pairs = frame[["depth", "warmup_steps"]].drop_duplicates().astype(int)
    return sorted(map(tuple, pairs.to_numpy()))


def _normed(fits: pd.DataFrame) -> pd.DataFrame:
    """The cells with their final norm (the figures compare placements and warmup; an arm
    without the final norm is read in the summary table and the claims ledger)."""
    return fits[fits["final_norm"] != "off"]


def _by_checkpoint(fits: pd.DataFrame, quantities: list[str], placements: list[str],
                   label: str, title: str, log_x: bool = False, log_y: bool = True,
                   reference=None, reference_label: str = ""):
    """Rows = quantity x placement, columns = (depth, warmup); one line per checkpoint step
    (colour) of the median by layer, seed range as a band; y label `label`. `reference(layers)`
    draws a black dashed curve on each panel."""
    fits = _normed(fits)
    rows = [(q, p) for q in quantities for p in placements
            if not pick(fits, quantity=q, placement=p).empty]
    cells = _cells(pd.concat([pick(fits, quantity=q, placement=p) for q, p in rows]))
    colors = _step_colors(pd.concat([pick(fits, quantity=q) for q in quantities])["step"].unique())
    fig, axes = _grid(len(rows), len(cells))
    for r, (quantity, placement) in enumerate(rows):
        for c, (depth, warmup) in enumerate(cells):
            ax = axes[r][c]
            sub = pick(fits, quantity=quantity, placement=placement, depth=depth,
                       warmup_steps=warmup)
            for step, curve in sub.groupby("step"):
                band(ax, curve, "layer", f"step {int(step)}", colors[step])
            if reference is not None and not sub.empty:
                layers = np.sort(sub["layer"].unique())
                ax.plot(layers, reference(layers), "k--", lw=0.8, label=reference_label)
            if log_y:
                log_scale(ax, "y")
            if log_x:
                log_scale(ax, "x")
            ax.set_title(f"{placement_label(placement)}, L = {depth}, warmup {warmup}",
                         fontsize=8)
            ax.set_ylabel(label.format(quantity=NAMES.get(quantity, quantity)))
            ax.set_xlabel("layer")
            ax.label_outer()
    ylabel(axes[0][0], label.format(quantity=NAMES.get(rows[0][0], rows[0][0])),
           pick(fits, quantity=rows[0][0]))
    legend(fig, [], extra=_unique(axes), ncol=4)
    fig.suptitle(title)
    return fig


def _unique(axes) -> list:
    """The (handle, label) pairs of the panels' labelled lines, one per label."""
    pairs = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            pairs.setdefault(label, handle)
    return [(h, lab) for lab, h in pairs.items()]


def loss(fits: pd.DataFrame):
    """Train loss (10-step running median of the per-step seed medians) and validation loss
    (markers, seed range as a band) against step; a panel per placement (row) and depth
    (column), a line style per warmup arm; the grey line is the corpus's unigram entropy."""
    train = pick(_normed(fits), quantity="train_loss")
    val = pick(_normed(fits), quantity="val_loss")
    entropy = unigram_entropy(fits)
    placements = order(set(train["placement"]))
    depths = sorted(train["depth"].unique())
    warmups = sorted(train["warmup_steps"].unique())
    fig, axes = _grid(len(placements), len(depths), size=(3.6, 2.8))
    for r, placement in enumerate(placements):
        for c, depth in enumerate(depths):
            ax = axes[r][c]
            for i, warmup in enumerate(warmups):
                style = WARMUP_STYLES[i % len(WARMUP_STYLES)]
                where = {"placement": placement, "depth": depth, "warmup_steps": warmup}
                t = pick(train, quantity="train_loss", **where).sort_values("step")
                smooth = t["median"].rolling(10, min_periods=1).median()
                band(ax, t.assign(median=smooth, min=smooth, max=smooth), "step",
                     f"train, warmup {int(warmup)}", look(placement)["color"], ls=style, lw=0.8)
                v = pick(val, quantity="val_loss", **where).sort_values("step")
                band(ax, v, "step", f"validation, warmup {int(warmup)}", "black", ls=style,
                     lw=0.8, marker="o", ms=2.5)
            ax.axhline(entropy, color="grey", lw=0.8, ls="-.", label="unigram entropy")
            ax.set_title(f"{placement_label(placement)}, L = {int(depth)}", fontsize=8)
            ax.set_ylabel("loss (nats/char)")
            ax.set_xlabel("step")
            ax.label_outer()
    ylabel(axes[0][0], "loss (nats/char)", val)
    legend(fig, [], extra=_unique(axes), ncol=3)
    fig.suptitle("Character-level loss on Tiny Shakespeare")
    return fig


def grad_ratio(fits: pd.DataFrame):
    """First/last block gradient ratio against step (symlog x), a panel per depth, a colour per
    placement and a line style per warmup arm; seed range as a band."""
    ratio = pick(_normed(fits), quantity="grad_ratio")
    depths = sorted(ratio["depth"].unique())
    warmups = sorted(ratio["warmup_steps"].unique())
    fig, axes = _grid(1, len(depths), size=(3.8, 3.2))
    for ax, depth in zip(axes[0], depths, strict=True):
        for placement in order(ratio["placement"]):
            for i, warmup in enumerate(warmups):
                sub = pick(ratio, quantity="grad_ratio", depth=depth, placement=placement,
                         warmup_steps=warmup)
                if not sub.empty:
                    band(ax, sub, "step", f"{placement_label(placement)}, warmup {int(warmup)}",
                         look(placement)["color"], ls=WARMUP_STYLES[i % len(WARMUP_STYLES)],
                         marker=look(placement)["marker"], ms=3.5)
        ax.axhline(1, color="grey", lw=0.8, ls="--")
        steps_axis(ax)
        log_scale(ax, "y")
        ax.set_xlabel("step")
        ax.set_title(f"L = {int(depth)}")
        ax.label_outer()
    ylabel(axes[0][0], "‖g_1‖ / ‖g_L‖ (probe batch)", ratio)
    legend(fig, [], extra=_unique(axes), ncol=2)
    return fig


def stream_growth(fits: pd.DataFrame):
    """Residual-stream sd after each block (layer 0 = the embedding) at each checkpoint."""
    return _by_checkpoint(fits, ["stream_sd"], order(fits["placement"]), "stream sd",
                          "Residual-stream sd by layer at each checkpoint")


def increments(fits: pd.DataFrame):
    """Pre-LN variance increments delta_attn (top row) and delta_mlp (bottom) by layer at each
    checkpoint (linear scale: an increment is negative where a branch anti-correlates with the
    stream)."""
    return _by_checkpoint(fits, ["delta_attn", "delta_mlp"], ["pre"], "{quantity}",
                          "Pre-LN variance increments by layer at each checkpoint", log_y=False)


def omega(fits: pd.DataFrame):
    """Mean |LN(x_k) - LN(x_k-1)| per coordinate by block k at each checkpoint, log-log, against
    theory096's E|D_k| = omega_k sqrt(2/pi) (input counted as term 0)."""
    return _by_checkpoint(fits, ["omega_abs"], order(fits["placement"]), "mean |ΔLN(x)| per coord",
                          "Change of the normalised state by block at each checkpoint",
                          log_x=True, reference=formula_abs,
                          reference_label="ω_k·√(2/π), k = block")
