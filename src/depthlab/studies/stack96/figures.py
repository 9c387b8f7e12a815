"""The figures of the stack96 note: median across seeds with the seed range as a band, a curve
per placement in the registry's colour and marker (depthlab.analysis.style)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.style import (
    band,
    curves,
    empty,
    grid,
    legend,
    log_scale,
    reference,
    spread_label,
    ylabel,
)
from depthlab.vocabulary.variants import is_own, label, order, per_placement

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


PANELS_PER_ROW = 4  # a stream figure's panels to a row where each placement key has one


def _panels(keys: list[str], scales: list) -> tuple[int, int, list[tuple[str, float, int, int]]]:
    """The grid of a stream figure, (rows, columns, [(key, output scale, row, column)]): a row
    of panels per placement key, a panel per output scale; where there is one output scale and
    several keys, a panel per key, PANELS_PER_ROW to a row."""
    if len(scales) > 1 or len(keys) == 1:
        return len(keys), len(scales), [(key, scale, i, j) for i, key in enumerate(keys)
                                        for j, scale in enumerate(scales)]
    columns = min(len(keys), PANELS_PER_ROW)
    return (-(-len(keys) // columns), columns,
            [(key, scales[0], i // columns, i % columns) for i, key in enumerate(keys)])


def _who(key: str, scale: float, scales: list, named: bool) -> str:
    """What a stream panel shows: its output scale, led by its placement key's label
    (depthlab.vocabulary.variants.label; an own block's kind, "(HF layer)", on a line of its
    own) where the figure is drawn per placement (`named`); the label alone where every panel
    has the one output scale."""
    if not named:
        return f"output scale {scale:g}"
    name = label(key).replace(" (", "\n(") if is_own(key) else label(key)
    return name if len(scales) == 1 else f"{name}, output scale {scale:g}"


def _ylabels(firsts: list, what: tuple[str, str], frame: pd.DataFrame,
             named: bool) -> list[str]:
    """Each row's first panel's y label: what[0] with the seeds' line and band below it, or,
    drawn per placement (many small panels), the shorter what[1], the line and band then a
    note of the legend (returned)."""
    for first in firsts:
        ylabel(first, what[1] if named else what[0], None if named else frame)
    return [spread_label(frame)] if named else []


def _stream_grid(frame: pd.DataFrame, sharey: bool = False):
    """A stream figure's panels for the placement keys and output scales of `frame` (`_panels`):
    the figure, whether it is drawn per placement (variants.per_placement), the output scales,
    the rows' first panels and [(ax, key, scale)]; panels the grid leaves over are hidden."""
    keys = order(frame["placement"])
    scales = sorted(frame["out_scale"].unique())
    n_rows, n_cols, cells = _panels(keys, scales)
    fig, axes = grid(n_rows, n_cols, 2.6, 2.6, sharey=sharey)
    for ax in axes.flat[len(cells):]:
        ax.set_visible(False)
    panels = [(axes[i][j], key, scale) for key, scale, i, j in cells]
    return fig, per_placement(keys), scales, [row[0] for row in axes], panels


def _drawn(panels: list):
    """The first of a stream figure's panels with curves (their legend entries)."""
    return next((ax for ax, _, _ in panels if ax.lines), panels[0][0])


def stream_sd(fits: pd.DataFrame):
    """Residual-stream sd after each block, a panel per output scale, a line per depth; beside
    the measurement the finite-depth prediction sd_l = sd_0 sqrt((V_0 + l σ²) / V_0), σ² =
    (V_L - V_0) / L the mean per-block variance increment of the deepest stack (medians of the
    fit's stream_var), and the note's sqrt(l) law anchored at block 1. Pre-LN alone (the
    default configs): a row of panels; other placement keys (several placements, own blocks:
    variants.per_placement): a row of panels per key (one output scale: a panel per key), each
    titled with its label."""
    sd = pick(fits, quantity="stream_sd", arm="stream")
    var = pick(fits, quantity="stream_var", arm="stream")
    depths = sorted(sd["depth"].unique())
    shades = dict(zip(depths, np.linspace(0.75, 0.15, len(depths)), strict=True))
    fig, named, scales, firsts, panels = _stream_grid(sd, sharey=True)
    extra = []
    for ax, key, scale in panels:
        cell = sd[(sd["placement"] == key) & (sd["out_scale"] == scale)]
        ax.set_title(_who(key, scale, scales, named))
        ax.set_xlabel("block l")
        if cell.empty:
            empty(ax, "not measured")
            continue
        sub = cell[cell["layer"] >= 1]
        for depth in depths:
            band(ax, sub[sub["depth"] == depth], "layer", f"measured, L = {int(depth)}",
                 str(shades[depth]))
        deep = cell["depth"].max()
        deepest = cell[cell["depth"] == deep]
        v = pick(var, placement=key, out_scale=scale, depth=deep).set_index("layer")["median"]
        sigma2 = (v.iloc[-1] - v.loc[0]) / deep
        layers = np.arange(1, deep + 1)
        sd0 = deepest.set_index("layer")["median"].loc[0]
        extra = [
            reference(ax, layers, sd0 * np.sqrt((v.loc[0] + layers * sigma2) / v.loc[0]),
                      "finite depth: sd_0·√((V_0 + l·σ²)/V_0), σ² = (V_L − V_0)/L measured",
                      ls="--", color="#d55e00"),
            reference(ax, layers, deepest.set_index("layer")["median"].loc[1] * np.sqrt(layers),
                      "the note: sd_1·√l", ls=":", color="#0173b2"),
        ]
        log_scale(ax, "x", "y")
    notes = _ylabels(firsts, ("stream sd after block l\n(input-sd units)",
                              "stream sd\n(input sd)"), sd, named)
    handles, labels = _drawn(panels).get_legend_handles_labels()
    legend(fig, [], extra=[*zip(handles[:len(depths)], labels[:len(depths)], strict=True),
                           *extra], notes=notes, ncol=2)
    return fig


def variance_budget(fits: pd.DataFrame):
    """Measured stream variance V_l against V_0 + the running sum of branch variances
    (independent-branch bookkeeping, where the block marks its branches) and the linear fit
    V_0 + c·l, at the deepest stream depth: a panel per output scale, for Pre-LN alone (the
    default configs); for other placement keys (several placements, own blocks:
    variants.per_placement) a row of panels per key (one output scale: a panel per key), each
    titled with its label."""
    arm = "stream"
    var = pick(fits, quantity="stream_var", arm=arm)
    depth = var["depth"].max()
    fig, named, scales, firsts, panels = _stream_grid(var)
    extra = {}
    for ax, key, scale in panels:
        def cell(q, key=key, scale=scale):
            f = pick(fits, quantity=q, arm=arm, placement=key)
            return f[(f["depth"] == depth) & (f["out_scale"] == scale)].sort_values("layer")

        v = cell("stream_var")
        ax.set_xlabel("block l")
        ax.set_ylabel("V_l" if named else "stream variance V_l")
        if v.empty:
            ax.set_title(_who(key, scale, scales, named))
            empty(ax, f"not measured at L = {int(depth)}")
            continue
        band(ax, v, "layer", "measured V_l", "black")
        branch = (cell("branch_var_attn")["mean"].to_numpy()
                  + cell("branch_var_mlp")["mean"].to_numpy())
        v0 = v["mean"].iloc[0]
        c = cell("budget_c")["median"].iloc[0]
        b0 = cell("budget_v0")["median"].iloc[0]
        if len(branch) == len(v) - 1:  # a branch variance at every block: its branches marked
            line = reference(ax, v["layer"], v0 + np.concatenate([[0], np.cumsum(branch)]),
                             "V_0 + Σ Var(branch), independent branches", ls="--",
                             color="#d55e00")
            extra[line[1]] = line
        line = reference(ax, v["layer"], b0 + c * v["layer"], "linear fit V_0 + c·l",
                         color="#0173b2")
        extra[line[1]] = line
        ax.set_title(f"L = {int(depth)}, output scale {scale:g}\nc = {c:.3g} per block"
                     if not named else f"{_who(key, scale, scales, named)}\nc = {c:.3g}")
    notes = _ylabels(firsts, ("stream variance V_l\n(input-variance units)",
                              "V_l\n(input variance)"), var, named)
    if named:  # the panels' titles name the block and c alone
        notes.insert(0, f"at L = {int(depth)}; c: the fit's slope per block")
    h, lab = _drawn(panels).get_legend_handles_labels()
    legend(fig, [], extra=[(h[0], lab[0]), *extra.values()], notes=notes, ncol=3)
    return fig
