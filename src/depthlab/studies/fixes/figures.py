"""The figures of the fixes study: one curve per placement (and Pre-LN with calibrated scales)
against depth, or against the block index at the deepest depth, per probe; median across seeds
with the seed range as a band (depthlab.analysis.style)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from depthlab.analysis.omega import formula_abs
from depthlab.analysis.select import pick
from depthlab.analysis.style import PROBE_AXES, band, log_scale
from depthlab.pipeline.placements import LABELS
from depthlab.studies.fixes.fit import CALIBRATED, FIX_COLORS, FIX_LABELS, FIX_ORDER
from depthlab.studies.fixes.tables import width_depth

STYLE = {CALIBRATED: "--"}  # the calibrated Pre-LN variant dashed, every placement solid
# a marker per fix, so that curves that coincide (ResiDual's stream is Post-LN's) stay visible
MARKERS = dict(zip(FIX_ORDER, "osv^DPX*<>ph", strict=False))


def _panels(n: int, width: float = 4.0, height: float = 3.4, **kw):
    return plt.subplots(1, n, figsize=(width * n, height), squeeze=False, **kw)


def _n_seeds(frame: pd.DataFrame) -> str:
    """The seed count of the placements' cells, and the calibrated variant's if it differs."""
    plain = frame.loc[frame["fix"] != CALIBRATED, "n_seeds"]
    calibrated = frame.loc[frame["fix"] == CALIBRATED, "n_seeds"]
    n = int(plain.max()) if len(plain) else int(calibrated.max())
    if len(plain) and len(calibrated) and int(calibrated.max()) != n:
        return f"{n} (calibrated: {int(calibrated.max())} held-out)"
    return str(n)


def _curves(ax, frame: pd.DataFrame, x: str, positive: bool = False, markers: bool = True,
            skipped: list | None = None) -> None:
    """One band per fix in FIX_ORDER present in `frame` (with its marker unless `markers` is
    false). With `positive`, a fix whose median is 0 somewhere is left out (a log axis cannot
    show it) and its name added to `skipped`."""
    for fix in FIX_ORDER:
        sub = frame[frame["fix"] == fix]
        if sub.empty:
            continue
        if positive and not (sub["median"] > 0).all():
            if skipped is not None:
                skipped.append(FIX_LABELS[fix])
            continue
        band(ax, sub, x, FIX_LABELS[fix], FIX_COLORS[fix], ls=STYLE.get(fix, "-"),
             marker=MARKERS.get(fix, "o") if markers else "", ms=3.5, mfc="none")


def _deepest(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the deepest depth."""
    return frame[frame["depth"] == frame["depth"].max()]


def _legend(fig, axes, skipped: list | None = None) -> None:
    """One legend for the figure, right of the panels, with a line for the fixes left out."""
    handles, labels = axes[0][0].get_legend_handles_labels()
    if skipped:
        handles.append(plt.Line2D([], [], color="none"))
        labels.append(f"not shown (0 at init): {', '.join(dict.fromkeys(skipped))}")
    fig.legend(handles, labels, loc="outside right center", fontsize=7)


def grad_ratio(fits: pd.DataFrame):
    """First/last block gradient ratio against depth, log-log."""
    ratio = pick(fits, quantity="grad_ratio")
    fig, axes = _panels(1, 5.0)
    ax = axes[0][0]
    _curves(ax, ratio, "depth")
    ax.axhline(1, color="grey", lw=0.8, ls=":")
    log_scale(ax, "x", "y")
    ax.set_xlabel("depth L")
    ax.set_ylabel("‖g_1‖ / ‖g_L‖")
    ax.set_title(f"First/last block gradient ratio at init\n(median, range of "
                 f"{_n_seeds(ratio)} seeds)")
    _legend(fig, axes)
    return fig


def grad_profile(fits: pd.DataFrame):
    """Gradient norm of each block against its index, a panel per depth (the three deepest),
    log y."""
    grads = pick(fits, quantity="grad_norm")
    depths = sorted(grads["depth"].unique())[-3:]
    fig, axes = _panels(len(depths), 3.6, sharey=True)
    for ax, depth in zip(axes[0], depths, strict=True):
        _curves(ax, grads[grads["depth"] == depth], "layer", markers=False)
        log_scale(ax, "y")
        ax.set_title(f"L = {int(depth)}")
        ax.set_xlabel("block l")
    axes[0][0].set_ylabel("‖∂loss/∂θ_l‖ (Frobenius)")
    fig.suptitle(f"Gradient norm by block at init (median and range of {_n_seeds(grads)} "
                 f"seeds; {LABELS['rezero']}: its alpha's gradient alone)")
    _legend(fig, axes)
    return fig


def stream_growth(fits: pd.DataFrame):
    """Left: rms(x_L)/rms(x_0) against depth, log-log, with sqrt(L) and L^0.39 references;
    right: the stream RMS after each block at the deepest depth."""
    growth = pick(fits, quantity="stream_growth")
    rms = _deepest(pick(fits, quantity="stream_rms"))
    fig, axes = _panels(2, 4.2)
    _curves(axes[0][0], growth, "depth")
    depths = np.sort(growth["depth"].unique())
    axes[0][0].plot(depths, np.sqrt(depths), "k:", lw=0.8, label="√L")
    axes[0][0].set_xlabel("depth L")
    axes[0][0].set_ylabel("rms(x_L) / rms(x_0)")
    axes[0][0].set_title("Stream growth after the last block")
    _curves(axes[0][1], rms, "layer", markers=False)
    axes[0][1].set_xlabel("block l (0 = input)")
    axes[0][1].set_ylabel("rms(x_l)")
    axes[0][1].set_title(f"Stream RMS by block, L = {int(rms['depth'].max())}")
    for ax in axes[0]:
        log_scale(ax, "y")
    log_scale(axes[0][0], "x")
    fig.suptitle(f"Residual-stream growth at init, before any final norm (median, range of "
                 f"{_n_seeds(growth)} seeds)")
    _legend(fig, axes)
    return fig


def omega(fits: pd.DataFrame):
    """Left: mean |D_k| by block at the deepest depth, log-log, with theory096's formula;
    right: its log-log decay rate over the deepest three quarters of the blocks, by depth."""
    om = _deepest(pick(fits, quantity="omega_abs"))
    slope = pick(fits, quantity="omega_slope")
    fig, axes = _panels(2, 4.2)
    skipped: list = []
    _curves(axes[0][0], om, "layer", positive=True, markers=False, skipped=skipped)
    k = np.sort(om["layer"].unique())
    axes[0][0].plot(k, formula_abs(k), "k:", lw=1, label="ω_k·√(2/π) (theory096)")
    log_scale(axes[0][0], "x", "y")
    axes[0][0].set_xlabel("block k")
    axes[0][0].set_ylabel("mean |LN(x_k) − LN(x_{k−1})|")
    axes[0][0].set_title(f"Change of the normalised state, L = {int(om['depth'].max())}")
    _curves(axes[0][1], slope, "depth")
    axes[0][1].axhline(-0.5, color="k", ls=":", lw=1)
    axes[0][1].axhline(0, color="grey", lw=0.8)
    log_scale(axes[0][1], "x")
    axes[0][1].set_xlabel("depth L")
    axes[0][1].set_ylabel("log-log slope, k = L/4..L")
    axes[0][1].set_title("Its decay rate (formula: −0.5)")
    fig.suptitle(f"Omega probe at init (median, range of {_n_seeds(om)} seeds)")
    _legend(fig, axes, skipped)
    return fig


def token_corr(fits: pd.DataFrame):
    """Left: mean pairwise token cosine after the last block against depth; right: by block
    at the deepest depth (rank collapse: toward 1)."""
    last = pick(fits, quantity="token_corr_last")
    by_block = _deepest(pick(fits, quantity="token_corr"))
    fig, axes = _panels(2, 4.2, sharey=True)
    _curves(axes[0][0], last, "depth")
    log_scale(axes[0][0], "x")
    axes[0][0].set_xlabel("depth L")
    axes[0][0].set_ylabel("mean pairwise token cosine")
    axes[0][0].set_title("After the last block")
    _curves(axes[0][1], by_block, "layer", markers=False)
    axes[0][1].set_xlabel("block l (0 = input)")
    axes[0][1].set_title(f"By block, L = {int(by_block['depth'].max())}")
    for ax in axes[0]:
        ax.set_ylim(-0.05, 1.05)
    fig.suptitle(f"Token correlation (rank collapse) at init (median, range of "
                 f"{_n_seeds(last)} seeds)")
    _legend(fig, axes)
    return fig


def branch_ratio(fits: pd.DataFrame):
    """RMS of what the attention (left) and MLP (middle) sublayer of the last block adds over
    the RMS of its skip path, against depth; right: the MLP ratio by block at the deepest
    depth. Log axes; placements without a residual path have none, ReZero's is 0."""
    fig, axes = _panels(3, 3.8, sharey=True)
    skipped: list = []
    for ax, sublayer in zip(axes[0][:2], ("attn", "mlp"), strict=True):
        last = pick(fits, quantity=f"branch_ratio_last_{sublayer}")
        _curves(ax, last, "depth", positive=True, skipped=skipped)
        log_scale(ax, "x", "y")
        ax.set_xlabel("depth L")
        ax.set_title(f"{sublayer} sublayer of block L")
    by_block = _deepest(pick(fits, quantity="branch_ratio_mlp"))
    _curves(axes[0][2], by_block, "layer", positive=True, markers=False, skipped=skipped)
    log_scale(axes[0][2], "y")
    axes[0][2].set_xlabel("block l")
    axes[0][2].set_title(f"mlp sublayer by block, L = {int(by_block['depth'].max())}")
    axes[0][0].set_ylabel("RMS(branch added) / RMS(skip path)")
    fig.suptitle(f"Branch-to-stream ratio at init (median, range of {_n_seeds(by_block)} "
                 f"seeds; {LABELS['none']}: no skip path)")
    _legend(fig, axes, skipped)
    return fig


def head_input(fits: pd.DataFrame):
    """sd of the head's input against depth, log-log."""
    head = pick(fits, quantity="head_input_sd")
    fig, axes = _panels(1, 5.0)
    ax = axes[0][0]
    _curves(ax, head, "depth")
    log_scale(ax, "x", "y")
    ax.set_xlabel("depth L")
    ax.set_ylabel("sd of the head's input")
    ax.set_title(f"Scale of the head's input at init\n(median, range of {_n_seeds(head)} "
                 "seeds)")
    _legend(fig, axes)
    return fig


def carry(fits: pd.DataFrame):
    """ResiDual's second stream x_d: left, its growth sd(x_d,L)/sd(x_0) against depth beside
    the growth of the stream x_a the blocks read and of Pre-LN's stream; right, sd(x_d) by
    block at the deepest depth."""
    fig, axes = _panels(2, 4.2)
    ax = axes[0][0]
    growth = pick(fits, quantity="carry_growth")
    band(ax, growth, "depth", f"{LABELS['resi_dual']} x_d (2nd stream)",
         FIX_COLORS["resi_dual"], marker="o", ms=3)
    streams = pick(fits, quantity="stream_growth")
    for fix, what in (("resi_dual", "x_a (the stream)"), ("pre", "stream")):
        sub = streams[streams["fix"] == fix]
        if not sub.empty:
            band(ax, sub, "depth", f"{FIX_LABELS[fix]} {what}", FIX_COLORS[fix], ls=":",
                 marker="s", ms=3)
    depths = np.sort(growth["depth"].unique())
    ax.plot(depths, np.sqrt(depths), "k:", lw=0.8, label="√L")
    log_scale(ax, "x", "y")
    ax.set_xlabel("depth L")
    ax.set_ylabel("sd after block L / sd of the input")
    ax.set_title("Growth after the last block")
    ax.legend(fontsize=7)
    var = _deepest(pick(fits, quantity="carry_var"))
    sd = var.assign(**{c: np.sqrt(var[c]) for c in ("median", "min", "max")})
    band(axes[0][1], sd, "layer", "sd(x_d)", FIX_COLORS["resi_dual"])
    log_scale(axes[0][1], "y")
    axes[0][1].set_xlabel("block l (0 = input)")
    axes[0][1].set_ylabel("sd of x_d after block l")
    axes[0][1].set_title(f"By block, L = {int(sd['depth'].max())}")
    fig.suptitle(f"{LABELS['resi_dual']}'s second stream at init (median, range of "
                 f"{_n_seeds(growth)} seeds)")
    return fig


WIDTH_PANELS = ("grad_ratio", "stream_growth", "omega_slope", "token_corr_last",
                "branch_ratio_last_mlp", "head_input_sd")


def width(fits: pd.DataFrame):
    """Each probe against the width d at the width arms' depth (L = 24), a panel per probe, a
    curve per placement; log x (and log y for the ratios and scales)."""
    depth = width_depth(fits)
    at_depth = fits[fits["depth"] == depth]
    fig, axes = plt.subplots(2, 3, figsize=(11.5, 6.4), squeeze=False)
    skipped: list = []
    for ax, quantity in zip(axes.flat, WIDTH_PANELS, strict=True):
        ylabel, log_y = PROBE_AXES[quantity]
        frame = pick(at_depth, quantity=quantity)
        _curves(ax, frame, "d_model", positive=log_y, skipped=skipped)
        log_scale(ax, "x", *(("y",) if log_y else ()))
        widths = sorted(frame["d_model"].unique())
        ax.set_xticks(widths, [str(int(d)) for d in widths])
        ax.set_xlabel("width d (heads = d / head size)")
        ax.set_ylabel(ylabel)
    n = _n_seeds(pick(at_depth, quantity="grad_ratio"))
    fig.suptitle(f"The probes against width at L = {depth}, init (median, range of {n} seeds)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if skipped:
        handles.append(plt.Line2D([], [], color="none"))
        labels.append(f"not shown (0 at init): {', '.join(dict.fromkeys(skipped))}")
    fig.legend(handles, labels, loc="outside right center", fontsize=7)
    return fig
