"""The one plotting style of every figure: seaborn's paper theme, curves drawn with seaborn from
the fit tables' seed summaries (a line with the seed spread as a band), a placement's colour,
marker and label from the registry (depthlab.vocabulary.placements), log axes with at most one
label per decade, legends that list only what is drawn, figures one or two journal columns
wide (3.5 or 7 in), and atomic PNG (300 dpi) + SVG + PDF output."""

from __future__ import annotations

import contextlib
import functools
import math
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.font_manager import FontProperties  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from depthlab.core.io import atomic_path  # noqa: E402
from depthlab.vocabulary.metrics import METRICS  # noqa: E402
from depthlab.vocabulary.placements import COLORS, LABELS, MARKERS, ORDER  # noqa: E402
from depthlab.vocabulary.variants import own_style  # noqa: E402

DPI = 300  # of the PNG
sns.set_theme(context="paper", style="ticks", rc={
    "axes.grid": True, "grid.alpha": 0.3, "svg.hashsalt": "depthlab", "pdf.fonttype": 42,
    "figure.constrained_layout.use": True, "legend.frameon": False, "savefig.dpi": DPI,
    "legend.columnspacing": 1.2})  # ems between legend columns (matplotlib's 2 fits fewer)

# the per-seed probe numbers the placement studies plot: quantity -> (axis label, log axis)
PROBE_AXES = {
    "grad_ratio": (METRICS["grad_ratio"].label, METRICS["grad_ratio"].log),
    "stream_growth": ("rms(x_L) / rms(x_0)", True),
    "omega_slope": ("ω log-log slope", False),
    "token_corr_last": ("token cosine, block L", False),
    "branch_ratio_last_mlp": ("MLP branch / skip", True),
    "head_input_sd": (METRICS["head_input_sd"].label, METRICS["head_input_sd"].log),
}
# a seed summary's columns: its band's low end, its line, its band's high end. Every figure
# bands the seeds' range (min to max), around the median or, where the note reads a mean, the
# mean: with n seeds the range holds the population median with probability 1 - 2^(1-n) (75%
# at 3 seeds, 94% at 5, above 99.9% from 11); a one-seed curve has no band.
RANGE = ("min", "median", "max")
MEAN_RANGE = ("min", "mean", "max")
LONG_CURVE = 12  # a curve with more points than this shows its marker on every n-th only


class _DecadeLocator(LogLocator):
    """Major ticks at the powers of ten, thinned to what the axis's length fits (numticks
    "auto": two label heights apart); on an axis that holds fewer than two of them, at 1 and 3
    times them."""

    def tick_values(self, vmin, vmax):
        lo, hi = sorted((max(vmin, 1e-300), max(vmax, 1e-300)))
        decades = math.floor(math.log10(hi)) - math.ceil(math.log10(lo)) + 1
        self.set_params(subs=(1.0,) if decades >= 2 else (1.0, 3.0))
        return super().tick_values(vmin, vmax)


MIN_DECADES = 1.0  # the narrowest span of a log y axis: seed noise around 1 stays flat


def log_scale(ax, *which: str) -> None:
    """Log scale on the named axes ('x', 'y'): labels at powers of ten only (at most one per
    decade; 1 and 3 times them on an axis narrower than two decades), as short plain numbers
    (0.01, 20; 1e-05 below 0.0001), unlabelled minor ticks; a y axis spans at least
    MIN_DECADES around its data (call after drawing; not for a shared y axis, whose later
    panels would fall outside)."""
    for name in which:
        axis = ax.xaxis if name == "x" else ax.yaxis
        (ax.set_xscale if name == "x" else ax.set_yscale)("log")
        if name == "y" and len(ax.get_shared_y_axes().get_siblings(ax)) == 1:
            lo, hi = ax.get_ylim()
            if 0 < lo < hi < lo * 10**MIN_DECADES:
                middle = math.sqrt(lo * hi)
                ax.set_ylim(middle / 10 ** (MIN_DECADES / 2), middle * 10 ** (MIN_DECADES / 2))
        axis.set_major_locator(_DecadeLocator(numticks="auto"))  # as many as its length fits
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_minor_formatter(NullFormatter())


def steps_axis(ax) -> None:
    """Training steps on a symlog x axis (linear to 10, then log), labelled as plain numbers."""
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlim(left=0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))


def empty(ax, why: str) -> None:
    """Say in a panel why it has no curve."""
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, fontsize=7,
            color="0.4", wrap=True)


def _points(frame: pd.DataFrame, x: str, columns: tuple[str, str, str],
            by: str | None = None) -> pd.DataFrame:
    """A seed summary as one row per point (level of `by`, x): `value` the line, the median of
    the point's `columns` (its band's ends and its line; a missing end is the line), `lo` and
    `hi` the band, their least and greatest: what seaborn's median estimator and a min-max
    errorbar give on these rows, computed at once instead of a group at a time."""
    keep = frame.dropna(subset=[columns[1]])
    rows = pd.concat([keep.assign(value=keep[c].fillna(keep[columns[1]])) for c in columns],
                     ignore_index=True).dropna(subset=[x])
    keys = [by, x] if by else [x]
    return rows.groupby(keys)["value"].agg(value="median", lo="min", hi="max").reset_index()


def _fill(ax, points: pd.DataFrame, x: str, color, alpha: float) -> None:
    """The band of one curve's `_points`, in its line's colour, as seaborn draws its bands."""
    ax.fill_between(points[x], points["lo"], points["hi"], color=color, linewidth=0,
                    alpha=alpha)


@contextlib.contextmanager
def _labels_kept(ax):
    """seaborn names the axes after the columns it plots; keep the labels set before."""
    labels = ax.get_xlabel(), ax.get_ylabel()
    yield
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])


def _every(x: pd.Series, by: pd.Series | None = None) -> int | list[int]:
    """markevery for curves over `x` (levels `by`): every point of a short curve; on a long one
    about eight markers, evenly spaced in x (in log x where x spans two decades or more)."""
    groups = x.groupby(by) if by is not None else [(None, x)]
    shortest = min((np.sort(g.unique()) for _, g in groups), key=len)
    if len(shortest) <= LONG_CURVE:
        return 1
    v = np.log(shortest) if shortest[0] > 0 and shortest[-1] / shortest[0] >= 100 else shortest
    targets = np.linspace(v[0], v[-1], 8)
    return sorted({int(np.abs(v - t).argmin()) for t in targets})


def band(ax, frame: pd.DataFrame, x: str, label: str | None = None, color=None,
         spread: tuple[str, str, str] = RANGE, **kw) -> None:
    """One curve of a seed summary with seaborn: the line (median, or mean: `spread`) and the
    seed range as a band in the line's colour; `kw` goes to the line (marker, ls, ...)."""
    if frame.empty:
        return
    if kw.get("marker"):
        kw.setdefault("markevery", _every(frame[x]))
    points = _points(frame, x, spread)
    with _labels_kept(ax):
        sns.lineplot(data=points, x=x, y="value", estimator=None, color=color, label=label,
                     ax=ax, legend=False, **kw)
    _fill(ax, points, x, ax.lines[-1].get_color(), 0.2)


def curves(ax, frame: pd.DataFrame, x: str, by: str = "placement", *,
           style: Mapping[str, Mapping] | None = None, spread: tuple[str, str, str] = RANGE,
           markers: bool = True) -> list[str]:
    """One curve per level of column `by` present in `frame` (hue and marker from `style`:
    level -> {label, color, marker, dashes}; default the placement registry's), in `style`'s
    order, then any own block's (depthlab.vocabulary.variants: a look of its own); returns the
    levels drawn (for `legend`)."""
    style = with_own(style, set(frame[by]))
    levels = [lv for lv in style if lv in set(frame[by])]
    if not levels:
        return []
    data = _points(frame[frame[by].isin(levels)], x, spread, by)
    with _labels_kept(ax):
        sns.lineplot(
            data=data, x=x, y="value", hue=by, style=by, hue_order=levels, style_order=levels,
            palette={lv: style[lv]["color"] for lv in levels},
            markers={lv: style[lv]["marker"] for lv in levels} if markers else False,
            dashes={lv: style[lv].get("dashes", "") for lv in levels}, estimator=None,
            markevery=_every(data[x], data[by]), markersize=4, markeredgewidth=0.4, ax=ax,
            legend=False)
    for lv in levels:
        _fill(ax, data[data[by] == lv], x, style[lv]["color"], 0.15)
    return levels


def handles(levels: Iterable[str], style: Mapping[str, Mapping] | None = None,
            markers: bool = True) -> tuple[list, list[str]]:
    """Legend handles and labels for the levels `curves` drew."""
    levels = list(levels)
    style = with_own(style, levels)
    out = []
    for lv in levels:
        s = style[lv]
        line = Line2D([], [], color=s["color"], marker=s["marker"] if markers else None,
                      markersize=4)
        if s.get("dashes"):
            line.set_dashes(s["dashes"])
        out.append(line)
    return out, [style[lv]["label"] for lv in levels]


LEGEND_ROW_IN = 0.22  # inches of figure height per legend row (9-point text and its spacing)


WRAP_CHARS = 28  # legend labels up to this long stay on one line (every placement's does)
LEGEND_MARGIN_IN = 0.1  # inches of the figure's width left beside a legend, both sides together


def _kept(label: str) -> list[str]:
    """A label's words, a parenthesised part ('(HF layer)') one word ('\\0' for its spaces)."""
    return re.sub(r"\([^()]*\)", lambda m: m.group(0).replace(" ", "\0"), label).split()


def wrap(label: str, limit: float, width: Callable[[str], float] = len) -> str:
    """`label` in lines at most `limit` wide (`width` of a line: its characters, or inches as
    drawn) where its words allow, a parenthesised part ('(HF layer)') kept on one line; a label
    up to WRAP_CHARS characters long stays whole."""
    if len(label) <= WRAP_CHARS or width(label) <= limit:
        return label
    lines: list[str] = []
    for word in _kept(label):
        joined = f"{lines[-1]} {word}" if lines else word
        if lines and width(joined.replace("\0", " ")) <= limit:
            lines[-1] = joined
        else:
            lines.append(word)
    return "\n".join(lines).replace("\0", " ")


def _columns(labels: list[str], ncol: int) -> list[list[str]]:
    """The labels of each column of a legend of `ncol` columns, in order, as matplotlib splits
    them (numpy.array_split: the first len % ncol columns one longer)."""
    return [list(col) for col in np.array_split(np.array(labels, dtype=object), ncol) if len(col)]


def legend_layouts(labels: list[str], across: float, width: Callable[[str], float] = len,
                   entry: float = 5, gap: float = 3) -> list[tuple[int, list[str]]]:
    """The layouts (columns, labels as wrapped) of a legend of `labels` at most `across` wide
    (`width` of a line, `entry` the handle before each label, `gap` between columns, in one
    unit: characters, or inches as drawn), flattest first (fewest lines in its tallest column;
    then more columns, then fewer lines): for each column count the labels longer than
    WRAP_CHARS wrapped as little as lets the columns fit (`wrap` at the widest limit that
    does). One column always: the last resort."""
    long = [lab for lab in labels if len(lab) > WRAP_CHARS]
    # the limits that wrap differently: each long label's first words, widest first
    limits = sorted({width(" ".join(words[:i]).replace("\0", " ")) for lab in long
                     for words in [_kept(lab)] for i in range(1, len(words) + 1)},
                    reverse=True) or [math.inf]
    layouts = []
    for ncol in range(len(labels), 0, -1):
        for limit in limits:
            wrapped = [wrap(lab, limit, width) for lab in labels]
            cols = _columns(wrapped, ncol)
            wide = sum(max(width(line) for lab in col for line in lab.splitlines()) + entry
                       for col in cols) + (len(cols) - 1) * gap
            if wide <= across or (ncol == 1 and limit == limits[-1]):
                lines = [sum(lab.count("\n") + 1 for lab in col) for col in cols]
                layouts.append((max(lines), -len(cols), sum(lines), wrapped))
                break
    return [(-neg, wrapped) for _, neg, _, wrapped in sorted(layouts, key=lambda x: x[:3])]


def legend(fig, levels: Iterable[str], style=None, markers: bool = True, extra=(),
           notes: Iterable[str] = (), ncol: int | None = None) -> None:
    """One legend for the figure, below its panels, listing `levels` (only what is drawn),
    `extra` (handle, label) pairs (references, theory curves) and `notes` (text lines, e.g.
    which curves lie on each other); in the flattest layout the figure's width holds
    (`legend_layouts` on the labels' widths as drawn, at most `ncol` columns), the figure
    growing by its height."""
    hs, labels = handles(list(dict.fromkeys(levels)), style, markers)
    for h, lab in extra:
        hs.append(h)
        labels.append(lab)
    for note in dict.fromkeys(notes):
        hs.append(Line2D([], [], color="none"))
        labels.append(note)
    if not hs:
        return
    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=plt.rcParams["legend.fontsize"])
    em = font.get_size_in_points() / 72  # inches
    per_inch = renderer.points_to_pixels(72.0)

    @functools.cache
    def inches(line: str) -> float:
        return renderer.get_text_width_height_descent(line, font, ismath=False)[0] / per_inch

    rc = plt.rcParams
    layouts = legend_layouts(
        labels, fig.get_figwidth() - LEGEND_MARGIN_IN - 2 * rc["legend.borderpad"] * em, inches,
        (rc["legend.handlelength"] + rc["legend.handletextpad"]) * em,
        rc["legend.columnspacing"] * em)
    # the next layout while the legend, as drawn, is wider than the figure
    for n, wrapped in [(n, w) for n, w in layouts if n <= (ncol or len(labels))]:
        drawn = fig.legend(hs, wrapped, loc="outside lower center", ncol=n)
        if n == 1 or drawn.get_window_extent(renderer).width <= fig.bbox.width:
            break
        drawn.remove()
    # the figure grows by the legend's height beyond the two rows `grid` leaves room for, so
    # that the panels keep their size however many lines the legend holds
    tall = drawn.get_window_extent(renderer).height / fig.dpi
    fig.set_figheight(fig.get_figheight() + max(0.0, tall - 2 * LEGEND_ROW_IN))


def together(groups: Iterable[list[str]], style=None) -> list[str]:
    """Legend notes for `coinciding` groups: 'on each other: Sandwich-LN = Peri-LN'."""
    groups = [list(g) for g in groups]
    style = with_own(style, [lv for g in groups for lv in g])
    return [f"on each other: {' = '.join(style[lv]['label'] for lv in g)}" for g in groups]


def reference(ax, x, y, label: str, ls: str = ":", color: str = "black", **kw):
    """A theory or reference curve; returns (handle, label) for `legend`'s extra."""
    kw.setdefault("lw", 1)
    (line,) = ax.plot(x, y, ls=ls, color=color, label=label, **kw)
    return line, label


def spread_label(frame: pd.DataFrame, spread: tuple[str, str, str] = RANGE) -> str:
    """What a curve's line and band are, for an axis label: 'median, band: 6-seed range'."""
    n = int(frame["n_seeds"].max()) if "n_seeds" in frame and len(frame) else 0
    return f"{spread[1]}, band: {n}-seed range"


def ylabel(ax, what: str, frame: pd.DataFrame | None = None,
           spread: tuple[str, str, str] = RANGE) -> None:
    """The y label: the quantity (with units), and the line's and band's meaning below it."""
    ax.set_ylabel(what if frame is None else f"{what}\n({spread_label(frame, spread)})")


# a journal's single- and double-column widths (inches): every figure is one of them
COLUMN_IN = (3.5, 7.0)
MIN_PANEL_IN = 1.6  # the least panel height, where many panels share a double column
SINGLE_UP_TO_IN = 4.0  # the widest natural width set in a single column


def column_width(natural: float) -> float:
    """The column width (COLUMN_IN) a figure of `natural` width is set at: a single column for
    one panel's width (up to 4 in), else a double column."""
    single, double = COLUMN_IN
    return single if natural <= SINGLE_UP_TO_IN else double


def grid(n_rows: int, n_cols: int, width: float = 2.6, height: float = 2.2, **kw):
    """A figure of panels at a single or double column's width (`column_width` of
    n_cols x `width` inches), each panel keeping the shape width x height (at least
    MIN_PANEL_IN high), with room for a legend row below."""
    total = column_width(width * n_cols)
    panel = max(total / n_cols * height / width, min(height, MIN_PANEL_IN))
    return plt.subplots(n_rows, n_cols, figsize=(total, panel * n_rows + 0.5), squeeze=False,
                        **kw)


def coinciding(frame: pd.DataFrame, x: str, by: str, rtol: float = 0.05) -> list[list[str]]:
    """Groups of `by` levels whose median curves agree within `rtol` at every shared x (they
    lie on each other in a plot): each group in first-appearance order, only groups of two or
    more."""
    curves_ = {lv: sub.set_index(x)["median"] for lv, sub in frame.groupby(by, sort=False)}
    groups: list[list[str]] = []
    for lv, curve in curves_.items():
        for group in groups:
            other = curves_[group[0]]
            shared = curve.index.intersection(other.index)
            if len(shared) and np.allclose(curve[shared], other[shared], rtol=rtol, atol=0):
                group.append(lv)
                break
        else:
            groups.append([lv])
    return [g for g in groups if len(g) > 1]


# an x axis whose label names one of these counts whole things: integer ticks
COUNTED = ("block", "layer", "depth", "step")


def finish(fig) -> None:
    """What every figure gets before it is saved: integer ticks on a linear axis of counted
    things (blocks, layers, depth, steps), then `wrap_labels`; then the layout, as last laid out,
    is kept (layout engine 'none'), so that each format saved and each later draw reuses it
    instead of laying the figure out again. Laid out without rendering: text extents need no
    pixels."""
    for ax in fig.axes:
        if ax.get_xscale() == "linear" and any(w in ax.get_xlabel() for w in COUNTED):
            ax.xaxis.set_major_locator(MaxNLocator(nbins="auto", integer=True,
                                                   steps=[1, 2, 5, 10]))
    if wrap_labels(fig):  # the last round wrapped: lay the new labels out
        fig.draw_without_rendering()
    fig.set_layout_engine("none")


def wrap_labels(fig, rounds: int = 3) -> bool:
    """Each axis label and panel title of `fig` that runs past its axis, as laid out, wrapped
    into lines that fit it (in a column-wide figure a long y label breaks into lines instead of
    leaving the figure); again while a wrap changes the layout so that another label no longer
    fits its (narrower) axis, at most `rounds` times. Whether the last round wrapped a label
    (the layout is then out of date)."""
    for _ in range(rounds):
        if not _wrap_once(fig):
            return False
    return True


# a short parenthesis a label keeps on one line when wrapped: "(own block)", "(HF layer)"
_SHORT_PARENTHESIS = re.compile(r"\([^()\n]{1,20}\)")
_MATH = re.compile(r"\$[^$]*\$")  # a mathtext formula


def _wrap_line(line: str, chars: int) -> str:
    """`line` wrapped into lines of about `chars` characters at its spaces, but not inside a
    short parenthesis or a mathtext formula ($...$, which a line break would leave unclosed)."""
    kept = _SHORT_PARENTHESIS.sub(lambda m: m[0].replace(" ", "\u00a0"), line)
    kept = _MATH.sub(lambda m: m[0].replace(" ", "\u00a0"), kept)
    return textwrap.fill(kept, chars, break_long_words=False).replace("\u00a0", " ")


def _wrap_once(fig) -> bool:
    """wrap_labels on the layout as laid out now; whether any label was wrapped."""
    fig.draw_without_rendering()
    wrapped = False
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        box = ax.get_window_extent(renderer)
        for label, length in ((ax.yaxis.label, box.height), (ax.xaxis.label, box.width),
                              (ax.title, box.width)):
            text = label.get_text()
            extent = label.get_window_extent(renderer)
            size = max(extent.height, extent.width) if text else 0.0
            if size <= length:
                continue
            longest = max(len(line) for line in text.splitlines())
            chars = max(8, int(longest * length / size * 0.95))
            new = "\n".join(_wrap_line(line, chars) for line in text.splitlines())
            wrapped |= new != text
            label.set_text(new)
    return wrapped


def save(fig, outputs: Mapping[str, str | Path]) -> None:
    """`finish` the figure, then `write` it."""
    finish(fig)
    write(fig, outputs)


def write(fig, outputs: Mapping[str, str | Path]) -> None:
    """Save a finished figure in every format of `outputs` (extension -> path; PNG at DPI) at
    its own size (constrained layout keeps labels and legend inside, so a column-wide figure
    stays column-wide), each written atomically (a temporary name, then renamed), without dates
    (SVG, PDF), and close it."""
    meta = {"png": {}, "svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}}
    for fmt, path in outputs.items():
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=DPI, metadata=meta[fmt])
    plt.close(fig)


# the placement registry's look, for `curves` and `handles`
PLACEMENT_STYLE = {name: {"label": LABELS[name], "color": COLORS[name], "marker": MARKERS[name]}
                   for name in ORDER}


def with_own(style: Mapping[str, Mapping] | None, levels: Iterable) -> dict[str, Mapping]:
    """`style` (default the placement registry's) with the look of each own block among
    `levels` (placement keys `<placement>@<module:function>`, depthlab.vocabulary.variants) that
    it lacks, so that an own block is drawn and named as itself, never as its placement."""
    style = dict(style or PLACEMENT_STYLE)
    return {**style, **{k: v for k, v in own_style(str(lv) for lv in levels).items()
                        if k not in style}}


def look(key: str, style: Mapping[str, Mapping] | None = None) -> Mapping:
    """The look (label, color, marker) of one placement key in `style` (default the
    registry's), an own block's included."""
    return with_own(style, [key])[key]
