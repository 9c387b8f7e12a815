"""Whether a figure reads well, checked on its artists once laid out (style.finish, or any
draw): no two texts overlap, every panel's axes are labelled, no code name (snake_case) shows, a
legend covers no data, a log axis labels at most one tick per decade, no band is called an
interval (every figure bands the seeds' range), nothing reaches past the canvas, some panel has
data, and a legend names no placement the fits lack. Every figure target runs these checks when
it is drawn (depthlab.analysis.draw), its job's log saying what failed."""

from __future__ import annotations

import math
import re
from itertools import combinations

import numpy as np
import pandas as pd
from matplotlib.text import Text

from depthlab.vocabulary.placements import LABELS

INTERVAL = re.compile(r"\bCI\b|t-interval|95%")  # a band of another convention than the range
CODE_NAME = re.compile(r"\b[a-z]{2,}_[a-z]{2,}\b")  # delta_attn, grad_ratio: not for readers
MAX_LEGEND_SHARE = 0.05  # of a panel's data points under a legend inside it


def _in_view(axis, loc: float) -> bool:
    lo, hi = sorted(axis.get_view_interval())
    return lo * (1 - 1e-9) <= loc <= hi * (1 + 1e-9) if lo > 0 else lo <= loc <= hi


def tick_labels(axis) -> list:
    """The tick label texts of an axis that are drawn (in view, visible, not empty)."""
    locs = axis.get_majorticklocs()
    ticks = axis.get_major_ticks(len(locs))
    return [t.label1 for t, loc in zip(ticks, locs, strict=True)
            if t.label1.get_visible() and t.label1.get_text() and _in_view(axis, loc)]


def legends(fig) -> list:
    return [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]


def legend_texts(fig) -> list[str]:
    return [t.get_text() for lg in legends(fig) for t in lg.get_texts()]


def data_axes(fig) -> list:
    """The visible panels, colour bars left out."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def text_boxes(fig) -> list[tuple[str, object]]:
    """(what, window extent) of every drawn text of a laid-out figure: titles, axis labels, tick
    labels, legends."""
    renderer = fig.canvas.get_renderer()
    texts = []
    if fig._suptitle is not None:
        texts.append(("suptitle", fig._suptitle))
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        for title in (ax.title, ax._left_title, ax._right_title):
            texts.append((f"axes {i} title", title))
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            texts.append((f"axes {i} {name} label", axis.label))
            texts += [(f"axes {i} {name} tick {t.get_text()}", t) for t in tick_labels(axis)]
    for j, lg in enumerate(legends(fig)):
        texts += [(f"legend {j}: {t.get_text()}", t) for t in lg.get_texts()]
    return [(name, t.get_window_extent(renderer)) for name, t in texts
            if t.get_visible() and t.get_text()]


def overlapping_texts(fig) -> list[tuple[str, str]]:
    boxes = text_boxes(fig)
    return [(a, b) for (a, box_a), (b, box_b) in combinations(boxes, 2)
            if box_a.shrunk(0.98, 0.98).overlaps(box_b.shrunk(0.98, 0.98))]


def unlabelled(fig) -> list[str]:
    """Panels without an x or y label that share that axis with no labelled panel."""
    missing = []
    for i, ax in enumerate(data_axes(fig)):
        for name in ("x", "y"):
            shared = (ax.get_shared_x_axes() if name == "x" else ax.get_shared_y_axes())
            labels = [getattr(a, f"get_{name}label")() for a in shared.get_siblings(ax)
                      if a.get_visible()]
            if not any(labels):
                missing.append(f"axes {i} ({ax.get_title()!r}) has no {name} label")
    return missing


def code_names(fig) -> list[str]:
    """Labels, titles and legend entries that show a code name (snake_case) to the reader."""
    shown = [t for ax in data_axes(fig) for t in (ax.get_xlabel(), ax.get_ylabel(),
                                                  ax.get_title())]
    return [t for t in [*shown, *legend_texts(fig)] if CODE_NAME.search(t)]


def off_canvas(fig) -> list[str]:
    """Texts (titles, labels, ticks, legend entries) of a laid-out figure that reach past its edge
    (a pixel's tolerance): a saved figure would clip them."""
    edge = fig.bbox.padded(1)
    return [name for name, box in text_boxes(fig)
            if box.x0 < edge.x0 or box.x1 > edge.x1 or box.y0 < edge.y0 or box.y1 > edge.y1]


def interval_bands(fig) -> list[str]:
    """Texts that call a band an interval: every figure bands the seeds' range instead."""
    return [t.get_text() for t in fig.findobj(Text) if INTERVAL.search(t.get_text())]


def legend_over_data(fig) -> list[str]:
    """Legends of a laid-out figure that cover more than MAX_LEGEND_SHARE of a panel's data points
    (a legend inside a panel) or any panel at all (a figure legend)."""
    renderer = fig.canvas.get_renderer()
    bad = []
    for lg in fig.legends:
        box = lg.get_window_extent(renderer)
        bad += [f"figure legend over axes {i}" for i, ax in enumerate(data_axes(fig))
                if box.overlaps(ax.get_window_extent(renderer))]
    for i, ax in enumerate(data_axes(fig)):
        if ax.get_legend() is None:
            continue
        box = ax.get_legend().get_window_extent(renderer)
        points = np.concatenate([along(line) for line in ax.lines] or [np.empty((0, 2))])
        inside = ((points[:, 0] >= box.x0) & (points[:, 0] <= box.x1)
                  & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1))
        if len(points) and inside.mean() > MAX_LEGEND_SHARE:
            bad.append(f"legend of axes {i} covers {inside.mean():.0%} of its data")
    return bad


def along(line, per_segment: int = 20) -> np.ndarray:
    """Points along a drawn line in display coordinates (its vertices and between them)."""
    xy = line.get_transform().transform(line.get_xydata())
    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) < 2:
        return xy
    t = np.linspace(0, 1, per_segment)[:, None, None]
    return (xy[:-1] + t * (xy[1:] - xy[:-1])).reshape(-1, 2)


def crowded_log_axes(fig) -> list[str]:
    """Log axes spanning two decades or more with two labels within one decade."""
    bad = []
    for i, ax in enumerate(data_axes(fig)):
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if axis.get_scale() != "log":
                continue
            lo, hi = sorted(axis.get_view_interval())
            values = sorted(float(t.get_position()[0 if name == "x" else 1])
                            for t in tick_labels(axis))
            if math.log10(hi / lo) >= 2 and any(b / a < 9.99 for a, b in
                                                 zip(values, values[1:], strict=False)):
                bad.append(f"axes {i} {name}: {values}")
    return bad


def placements_in_legend(fig, labels: dict[str, str]) -> set[str]:
    """The placements (keys of `labels`) whose label is a legend entry."""
    texts = set(legend_texts(fig))
    return {name for name, label in labels.items() if label in texts}


def problems(fig, fits: pd.DataFrame | None = None) -> list[str]:
    """What keeps a laid-out figure from reading well, one line each (none: it reads well);
    with `fits`, the tidy table it was drawn from, also the legend's placements without rows."""
    found = [f"overlapping texts: {a} and {b}" for a, b in overlapping_texts(fig)]
    found += [f"unlabelled: {m}" for m in unlabelled(fig)]
    found += [f"code name shown: {t!r}" for t in code_names(fig)]
    found += [f"legend over data: {m}" for m in legend_over_data(fig)]
    found += [f"crowded log axis: {m}" for m in crowded_log_axes(fig)]
    found += [f"a band called an interval: {t!r}" for t in interval_bands(fig)]
    found += [f"past the canvas: {m}" for m in off_canvas(fig)]
    if not any(ax.has_data() for ax in fig.axes):
        found.append("no panel has data")
    if fits is not None and "placement" in fits:
        extra = placements_in_legend(fig, LABELS) - set(fits["placement"].dropna())
        found += [f"legend names {LABELS[p]} without data" for p in sorted(extra)]
    return found
