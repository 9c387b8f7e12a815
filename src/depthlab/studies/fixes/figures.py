"""The figures of the fixes study: small multiples, a panel per placement family (where the
LayerNorm sits: depthlab.vocabulary.placements.FAMILIES) and a row per view (against depth, or
against the block index at the deepest depth); a curve per placement with data (and Pre-LN with
calibrated scales), median across seeds with the seed range as a band. Curves that lie on each
other are named in the legend."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from depthlab.analysis.omega import formula_abs
from depthlab.analysis.select import pick
from depthlab.analysis.style import (
    MEAN_RANGE,
    PLACEMENT_STYLE,
    PROBE_AXES,
    band,
    coinciding,
    curves,
    empty,
    grid,
    legend,
    log_scale,
    look,
    reference,
    spread_label,
    together,
    with_own,
    ylabel,
)
from depthlab.studies.fixes.fit import CALIBRATED, FIX_LABELS
from depthlab.studies.fixes.tables import (
    GRAD_READINGS,
    ZERO_BY_CONSTRUCTION,
    fix_label,
    reading_ratios,
    width_depth,
)
from depthlab.vocabulary.placements import FAMILIES, LABELS, PLACEMENTS, color
from depthlab.vocabulary.settings import UPDATE_OPTIMIZERS, UPDATE_PARAMS
from depthlab.vocabulary.variants import base

# the placements' look, and the calibrated Pre-LN variant's: the first colour no placement
# takes, dashed
FIX_STYLE = {**PLACEMENT_STYLE, CALIBRATED: {
    "label": FIX_LABELS[CALIBRATED],
    "color": color(len(PLACEMENTS)),
    "marker": ">",
    "dashes": (4, 1.5)}}
_FAMILIES = {**{name: p.family for name, p in PLACEMENTS.items()},
             CALIBRATED: PLACEMENTS["pre"].family}


def drawn_order(drawn: list[str]) -> list[str]:
    """The fixes drawn, for the legend, in the order `curves` draws them: FIX_STYLE's, then
    each own block's (style.with_own), so that every curve is named."""
    seen = set(drawn)
    return [f for f in with_own(FIX_STYLE, seen) if f in seen]


def family_of(fix: str) -> str:
    """The family panel a fix is drawn in: its placement's (an own block's: the one it
    follows)."""
    return _FAMILIES[fix] if fix in _FAMILIES else _FAMILIES[base(fix)]
DEPTH = "depth L (blocks)"
BLOCK = "block l (0 = input)"


@dataclass(frozen=True)
class Row:
    """One row of family panels: a fit quantity's rows against column `x`."""

    frame: pd.DataFrame
    x: str
    xlabel: str
    ylabel: str
    log_x: bool = True
    log_y: bool = True
    title: str = ""  # the panels' title (the first row's under the family's)


def _deepest(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the deepest depth."""
    return frame[frame["depth"] == frame["depth"].max()]


def _families(rows: list[Row], references=None):
    """A row of panels per Row, a column per family with data; a curve per fix of the family
    (a fix that is 0 somewhere on a log axis is left out and named in the legend), curves that
    lie on each other named in the legend. `references(ax, row)` draws theory lines and returns
    (handle, label) pairs."""
    present = {family_of(f) for row in rows for f in row.frame["fix"].unique()}
    families = [f for f in FAMILIES if f in present]
    fig, axes = grid(len(rows), len(families), 2.5, 2.1)
    drawn, notes, extra = [], [], {}
    for r, row in enumerate(rows):
        for c, family in enumerate(families):
            ax = axes[r][c]
            frame = row.frame[row.frame["fix"].map(family_of) == family]
            if row.log_y:
                zero = frame.groupby("fix")["median"].transform(lambda m: (m <= 0).any())
                notes += [f"not shown (0 at init): {fix_label(f)}"
                          for f in frame.loc[zero, "fix"].unique()]
                frame = frame[~zero]
            drawn += curves(ax, frame, row.x, by="fix", style=FIX_STYLE)
            if frame.empty:
                empty(ax, "not defined\nor 0 at init")
            notes += together(coinciding(frame, row.x, "fix"), FIX_STYLE)
            if references is not None and not frame.empty:
                extra.update((label, h) for h, label in references(ax, row) or ())
            if row.log_x:
                log_scale(ax, "x")
            if row.log_y:
                log_scale(ax, "y")
            ax.set_title("\n".join(filter(None, (family if r == 0 else "", row.title))))
            ax.set_xlabel(row.xlabel)
            ax.set_ylabel(row.ylabel)
    spreads = [spread_label(row.frame) for row in rows]
    if len(set(spreads)) > 1:  # say which row has which seed count
        spreads = [f"{row.ylabel}: {spread}" for row, spread in zip(rows, spreads, strict=True)]
    legend(fig, drawn_order(drawn), FIX_STYLE, extra=[(h, label) for label, h in extra.items()],
           notes=[*notes, *spreads])
    return fig


def _balanced(ax, row):
    return [(ax.axhline(1, color="grey", ls="--", lw=0.8), "1 = balanced")]


def grad_ratio(fits: pd.DataFrame):
    """First/last block gradient ratio against depth, log-log, a panel per family."""
    return _families([Row(pick(fits, quantity="grad_ratio"), "depth", DEPTH,
                          "‖g_1‖ / ‖g_L‖")], _balanced)


def grad_profile(fits: pd.DataFrame):
    """Gradient norm of each block against its index, a row per depth (the three deepest), a
    panel per family, log y (ReZero: its alpha's gradient alone)."""
    grads = pick(fits, quantity="grad_norm")
    depths = sorted(grads["depth"].unique())[-3:]
    return _families([Row(grads[grads["depth"] == d], "layer", "block l",
                          "‖∂loss/∂θ_l‖ (Frobenius)", log_x=False, title=f"L = {int(d)}")
                      for d in depths])


def grad_readings(fits: pd.DataFrame):
    """The first/last block gradient ratio under each reading (which parameters count, which
    loss: GRAD_READINGS) at each depth the reading arms share, a panel per depth, a curve per
    placement across the readings, log y."""
    ratio, depths = reading_ratios(fits)
    order = list(GRAD_READINGS)
    ratio = ratio.assign(reading=ratio["arm"].map(order.index))
    fig, axes = grid(1, len(depths), 4.2, 2.8, sharey=True)
    drawn, balanced = [], []
    for ax, depth in zip(axes[0], depths, strict=True):
        drawn += curves(ax, ratio[ratio["depth"] == depth], "reading", by="fix", style=FIX_STYLE)
        balanced = _balanced(ax, None)
        log_scale(ax, "y")
        ax.set_xticks(range(len(order)), [GRAD_READINGS[a].replace("all parameters", "params")
                                          .replace("weight matrices", "weights")
                                          .replace(", ", "\n") for a in order])
        ax.set_xlabel("block gradient over (params: all; weights: matrices), loss")
        ax.set_ylabel("‖g_1‖ / ‖g_L‖")
        ax.set_title(f"L = {int(depth)}")
    zero = [fix_label(f) for f in ZERO_BY_CONSTRUCTION if f in set(ratio["fix"])]
    notes = [f"{', '.join(zero)}: no weights reading (0/0)"] if zero else []
    legend(fig, drawn_order(drawn), FIX_STYLE, extra=balanced,
           notes=[*notes, spread_label(ratio)])
    return fig


def _sqrt_depth(ax, row):
    if row.x != "depth":
        return None
    depths = np.sort(row.frame["depth"].unique())
    return [reference(ax, depths, np.sqrt(depths), "√L (the notes' Pre-LN law)")]


def stream_growth(fits: pd.DataFrame):
    """Top: rms(x_L)/rms(x_0) against depth, log-log, with sqrt(L); bottom: the stream RMS
    after each block at the deepest depth; a panel per family."""
    rms = _deepest(pick(fits, quantity="stream_rms"))
    return _families([
        Row(pick(fits, quantity="stream_growth"), "depth", DEPTH, "rms(x_L) / rms(x_0)"),
        Row(rms, "layer", BLOCK, "rms(x_l) (input-sd units)", log_x=False,
            title=f"L = {int(rms['depth'].max())}"),
    ], _sqrt_depth)


def _omega_formula(definition: str):
    """The references of an omega figure: theory096's formula by block (with `definition`,
    what is drawn) and its slope −0.5 by depth."""
    def add(ax, row):
        if row.x != "layer":
            return [(ax.axhline(-0.5, color="black", ls=":", lw=1), "theory096: slope −0.5")]
        k = np.sort(row.frame["layer"].unique())
        return [reference(ax, k, formula_abs(k), "theory096: ω_k·√(2/π)"),
                (plt.Line2D([], [], color="none"), definition)]
    return add


def _omega_rows(fits: pd.DataFrame, name: str, what: str) -> list[Row]:
    """The two rows of an omega figure of quantity `name` (omega, head_omega): mean |change| by
    block at the deepest depth, log-log, and its log-log slope over k = L/4..L by depth."""
    om = _deepest(pick(fits, quantity=f"{name}_abs"))
    return [Row(om, "layer", "block k", f"mean |{what}| per coordinate",
                title=f"L = {int(om['depth'].max())}"),
            Row(pick(fits, quantity=f"{name}_slope"), "depth", DEPTH, "log-log slope, k = L/4..L",
                log_y=False)]


def omega(fits: pd.DataFrame):
    """Top: mean |D_k| by block at the deepest depth, log-log, with theory096's formula;
    bottom: its log-log decay rate over the deepest three quarters of the blocks, by depth."""
    return _families(_omega_rows(fits, "omega", "D_k"),
                     _omega_formula("D_k = LN(x_k) − LN(x_{k−1})"))


def head_omega(fits: pd.DataFrame):
    """ResiDual's representation collapse: as `omega`, of what the head reads (E_k = LN(y_k) −
    LN(y_{k−1}), y_k the head input after block k), with theory096's formula for reference."""
    return _families(_omega_rows(fits, "head_omega", "E_k"),
                     _omega_formula("E_k = LN(y_k) − LN(y_{k−1})"))


def token_corr(fits: pd.DataFrame):
    """Mean pairwise token cosine after the last block against depth (top) and after each block
    at the deepest depth (bottom); toward 1 = rank collapse."""
    by_block = _deepest(pick(fits, quantity="token_corr"))
    fig = _families([
        Row(pick(fits, quantity="token_corr_last"), "depth", DEPTH,
            "token cosine after block L", log_y=False),
        Row(by_block, "layer", BLOCK, "token cosine after block l", log_x=False, log_y=False,
            title=f"L = {int(by_block['depth'].max())}"),
    ])
    for ax in fig.axes:
        ax.set_ylim(-0.05, 1.05)
    return fig


def branch_ratio(fits: pd.DataFrame):
    """RMS of what the attention (top) and MLP (middle) sublayer of the last block adds over
    the RMS of its skip path, against depth; bottom: the MLP ratio by block at the deepest
    depth. Log axes; no residual has no skip path, ReZero's is 0 at init."""
    by_block = _deepest(pick(fits, quantity="branch_ratio_mlp"))
    return _families([
        *(Row(pick(fits, quantity=f"branch_ratio_last_{s}"), "depth", DEPTH,
              f"{name} branch / skip, block L") for s, name in (("attn", "attention"),
                                                                 ("mlp", "MLP"))),
        Row(by_block, "layer", "block l", "MLP branch / skip", log_x=False,
            title=f"L = {int(by_block['depth'].max())}"),
    ])


def head_input_sd(fits: pd.DataFrame):
    """sd of the head's input against depth, log-log, a panel per family."""
    return _families([Row(pick(fits, quantity="head_input_sd"), "depth", DEPTH,
                          "head input sd (input-sd units)")])


def model_update(fits: pd.DataFrame):
    """How far Adam's first step from init moves the head input, rms(F(θ + Δθ) − F(θ)), against
    depth, log-log, a panel per family (DeepNet's bounded update: flat in L where bounded)."""
    return _families([Row(pick(fits, quantity="model_update"), "depth", DEPTH,
                          "rms(F(θ+Δθ) − F(θ))\n(input-sd units)")])


# the update_response figure: a line style per learning rate (the largest solid), a panel per
# first step (update_optimizer) and the parameters it moves (update_params), titled with its Δθ
LR_DASHES = ("", (4, 1.5), (1, 1.5), (5, 1.5, 1, 1.5))
STEP_TITLES = {"adam": "Adam's step", "sgd": "SGD's step"}  # Δθ: in the caption
MOVED_TITLES = {"all": "every parameter", "weights": "DeepNet's θ", "sublayer": "θ and biases"}


def update_response(fits: pd.DataFrame):
    """The head input's change per unit learning rate, dF/η = rms(F(θ + Δθ) − F(θ)) / η,
    against depth, log-log, a panel per first step (Adam's, SGD's) and the parameters it moves
    (every one, or the weight matrices: DeepNet's θ), a curve per placement (the registry's
    colour and marker) and learning rate η (line style); the mean across seeds with the
    seeds' range as a band. Where η is in the linear regime the curves of its
    η lie on each other."""
    response = pick(fits, quantity="update_response")
    panels = [(step, moved) for step in UPDATE_OPTIMIZERS for moved in UPDATE_PARAMS
              if len(pick(response, update_optimizer=step, update_params=moved))]
    lrs = sorted(response["update_lr"].unique(), reverse=True)
    dashes = {lr: LR_DASHES[i % len(LR_DASHES)] for i, lr in enumerate(lrs)}
    # a curve per (placement, η), named 'fix η'; its style the placement's, dashed by η
    style = {f"{fix} {lr:g}": {**FIX_STYLE[fix], "dashes": dashes[lr]} for fix in FIX_STYLE
             for lr in lrs}
    response = response.assign(curve=[f"{fix} {lr:g}" for fix, lr in zip(
        response["fix"], response["update_lr"], strict=True)])
    fig, axes = grid(1, len(panels), 2.6, 2.4)
    drawn = []
    for ax, (step, moved) in zip(axes[0], panels, strict=True):
        frame = pick(response, update_optimizer=step, update_params=moved)
        drawn += [c.split()[0] for c in curves(ax, frame, "depth", by="curve", style=style,
                                               spread=MEAN_RANGE)]
        log_scale(ax, "x", "y")
        ax.set_title(f"{STEP_TITLES[step]}, {MOVED_TITLES[moved]}")
        ax.set_xlabel(DEPTH)
        ax.set_ylabel("rms(F(θ+Δθ) − F(θ)) / η\n(input-sd units per unit η)")
    rates = [(Line2D([], [], color="0.3", lw=1, **({"dashes": dashes[lr]} if dashes[lr] else {})),
              f"η = {lr:g}") for lr in lrs]
    placements = [f for f in FIX_STYLE if f in drawn]
    # two rows: the columns the legend asks matplotlib for are then the ones it lays out
    legend(fig, placements, FIX_STYLE, extra=rates, notes=[spread_label(response, MEAN_RANGE)],
           ncol=-(-(len(placements) + len(rates) + 1) // 2))
    return fig


def carry(fits: pd.DataFrame):
    """ResiDual's second stream x_d: left, its growth sd(x_d,L)/sd(x_0) against depth beside
    the growth of the stream x_a the blocks read and of Pre-LN's stream; right, sd(x_d) by
    block at the deepest depth."""
    fig, axes = grid(1, 2, 2.8, 2.5)
    ax = axes[0][0]
    growth = pick(fits, quantity="carry_growth")
    dual = FIX_STYLE["resi_dual"]
    band(ax, growth, "depth", f"{LABELS['resi_dual']} x_d (2nd stream)", dual["color"],
         marker=dual["marker"], ms=4)
    streams = pick(fits, quantity="stream_growth")
    for fix, what in (("resi_dual", "x_a (the stream)"), ("pre", "stream")):
        sub = streams[streams["fix"] == fix]
        band(ax, sub, "depth", f"{fix_label(fix)} {what}", look(fix, FIX_STYLE)["color"], ls=":",
             marker=FIX_STYLE[fix]["marker"], ms=4)
    depths = np.sort(growth["depth"].unique())
    reference(ax, depths, np.sqrt(depths), "√L")
    log_scale(ax, "x", "y")
    ax.set_xlabel(DEPTH)
    ylabel(ax, "sd after block L / sd of the input", growth)
    ax.set_title("Growth after the last block")
    var = _deepest(pick(fits, quantity="carry_var"))
    sd = var.assign(**{c: np.sqrt(var[c]) for c in ("median", "min", "max")})
    band(axes[0][1], sd, "layer", None, dual["color"])
    log_scale(axes[0][1], "y")
    axes[0][1].set_xlabel(BLOCK)
    axes[0][1].set_ylabel("sd of x_d after block l\n(input-sd units)")
    axes[0][1].set_title(f"By block, L = {int(sd['depth'].max())}")
    legend(fig, [], extra=zip(*ax.get_legend_handles_labels(), strict=True), ncol=2)
    return fig


WIDTH_PANELS = ("grad_ratio", "stream_growth", "omega_slope", "token_corr_last",
                "branch_ratio_last_mlp", "head_input_sd")


def width(fits: pd.DataFrame):
    """Each probe against the width d at the width arms' depth (L = 24), a panel per probe, a
    curve per placement; log x (and log y for the ratios and scales)."""
    depth = width_depth(fits)
    at_depth = fits[fits["depth"] == depth]
    fig, axes = grid(2, 3, 2.5, 2.2)
    drawn, notes = [], []
    for ax, quantity in zip(axes.flat, WIDTH_PANELS, strict=True):
        label, log_y = PROBE_AXES[quantity]
        frame = pick(at_depth, quantity=quantity)
        if log_y:
            zero = frame.groupby("fix")["median"].transform(lambda m: (m <= 0).any())
            notes += [f"not shown (0 at init): {fix_label(f)}"
                      for f in frame.loc[zero, "fix"].unique()]
            frame = frame[~zero]
        drawn += curves(ax, frame, "d_model", by="fix", style=FIX_STYLE)
        log_scale(ax, "x", *(("y",) if log_y else ()))
        widths = sorted(frame["d_model"].unique())
        ax.set_xticks(widths, [str(int(d)) for d in widths])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("width d (heads = d / 32)")
        ax.set_ylabel(label)
        ax.set_title(f"L = {depth}")
    notes.append(spread_label(pick(at_depth, quantity="grad_ratio")))
    legend(fig, drawn_order(drawn), FIX_STYLE, notes=notes)
    return fig
