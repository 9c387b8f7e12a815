"""The figures as a reader sees them: drawn in-process from fit tables, then checked on the drawn
artists (after fig.canvas.draw()): the legend lists exactly what has data, no two text boxes
overlap, every axis is labelled (no code names), a legend covers no data, a log axis labels at
most one tick per decade, every band is the seeds' range (no figure names an interval); and
the files: PNG at 300 dpi, SVG, PDF, written atomically.

Fast tests draw synthetic fit tables; the workflow tests draw every figure target of the tiny
studies (config/tiny.yaml and config/tiny_fixes.yaml through the session's shared runs)."""

from __future__ import annotations

import math
import re
from itertools import combinations
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import tiny_targets
from PIL import Image

from depthlab.analysis.draw import contact_sheet
from depthlab.analysis.fits import read_fits
from depthlab.analysis.style import (
    MEAN_RANGE,
    coinciding,
    column_width,
    curves,
    finish,
    grid,
    legend,
    log_scale,
    reference,
    save,
)
from depthlab.studies import TARGETS, drawing
from depthlab.studies.fixes import figures as fixes_figures
from depthlab.studies.fixes.fit import FIX_LABELS
from depthlab.studies.stack96 import figures as stack96_figures
from depthlab.vocabulary import hf
from depthlab.vocabulary.placements import LABELS, ORDER

INTERVAL = re.compile(r"\bCI\b|t-interval|95%")  # a band of another convention than the range
BAND_INTERVAL = re.compile(r"band[^.;]*(\bCI\b|t-interval|95%)")  # a caption's band sentence
CODE_NAME = re.compile(r"\b[a-z]{2,}_[a-z]{2,}\b")  # delta_attn, grad_ratio: not for readers
MAX_LEGEND_SHARE = 0.05  # of a panel's data points under a legend inside it


# --- what a drawn figure shows ------------------------------------------------------------


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
    """(what, window extent) of every drawn text of a drawn figure: titles, axis labels, tick
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
    """Texts (titles, labels, ticks, legend entries) of a drawn figure that reach past its edge
    (a pixel's tolerance): a saved figure would clip them."""
    edge = fig.bbox.padded(1)
    return [name for name, box in text_boxes(fig)
            if box.x0 < edge.x0 or box.x1 > edge.x1 or box.y0 < edge.y0 or box.y1 > edge.y1]


def interval_bands(fig) -> list[str]:
    """Texts that call a band an interval: every figure bands the seeds' range instead."""
    return [t.get_text() for t in fig.findobj(plt.Text) if INTERVAL.search(t.get_text())]


def legend_over_data(fig) -> list[str]:
    """Legends of a drawn figure that cover more than MAX_LEGEND_SHARE of a panel's data points
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


def check_reads_well(fig) -> None:
    """The figure, drawn once as saved, reads well: every check below holds."""
    fig.canvas.draw()
    assert not overlapping_texts(fig), overlapping_texts(fig)
    assert not unlabelled(fig), unlabelled(fig)
    assert not code_names(fig), code_names(fig)
    assert not legend_over_data(fig), legend_over_data(fig)
    assert not crowded_log_axes(fig), crowded_log_axes(fig)
    assert not interval_bands(fig), interval_bands(fig)
    assert not off_canvas(fig), off_canvas(fig)


# --- synthetic fit tables -------------------------------------------------------------------


def summary(median, spread=0.2, n_seeds=6) -> dict:
    median = float(median)
    return {"median": median, "min": median * (1 - spread), "max": median * (1 + spread),
            "mean": median, "ci_lo": median * (1 - spread / 2),
            "ci_hi": median * (1 + spread / 2), "n_seeds": n_seeds}


def grad_fits(placements, depths=(6, 24, 48, 96)) -> pd.DataFrame:
    """stack96-like grad-arm fits: grad_ratio per depth, grad_norm per block."""
    rows = []
    for i, p in enumerate(placements):
        for d in depths:
            rows.append({"quantity": "grad_ratio", "arm": "grad", "placement": p, "fix": p,
                         "depth": d, "layer": np.nan, **summary(0.3 * (i + 1) * d ** 0.2)})
            rows += [{"quantity": "grad_norm", "arm": "grad", "placement": p, "fix": p,
                      "depth": d, "layer": layer, **summary(1 + i + 0.1 * layer)}
                     for layer in range(1, d + 1)]
    return pd.DataFrame(rows)


def test_a_wrapped_label_keeps_a_short_parenthesis_on_one_line():
    """A y label too long for its axis is wrapped (style.finish), never inside "(own
    block)"; a long parenthesis may still break."""
    fig, ax = plt.subplots(figsize=(3.5, 2.2))
    ax.plot([1, 2], [1, 2])
    ax.set_ylabel("the first/last block gradient ratio of make_parallel (own block), at init")
    ax.set_title("a title that is much too long for this narrow panel (seeds 0 to 5, all)")
    finish(fig)
    label, title = ax.get_ylabel(), ax.get_title()
    assert "\n" in label and "(own block)" in label.splitlines()[
        next(i for i, line in enumerate(label.splitlines()) if "(own" in line)]
    assert "\n" in title
    plt.close(fig)


def test_legend_lists_only_the_placements_with_data():
    """The README's first figure once listed all nine registry placements for three curves."""
    three = ("post", "pre", "none")
    fig = stack96_figures.grad_ratio_by_depth(grad_fits(three))
    assert placements_in_legend(fig, LABELS) == set(three)
    check_reads_well(fig)
    plt.close(fig)


@pytest.mark.slow
def test_many_own_blocks_get_a_legend_in_columns_and_keep_the_panel():
    """stack96's grad ratio with the eleven Hugging Face layers of config/models.yaml beside
    Pre-LN (once a 1740 px column, a tiny panel over a one-column legend of 2-3 line labels):
    a legend of two columns or more, no label over two lines nor "(HF layer)" broken, and the
    panel as high as with three placements (a two-row legend, what `grid` leaves room for);
    it reads well."""
    from depthlab.vocabulary.variants import own_key

    layers = [{"hf": f} for f in ("llama", "qwen2", "mistral", "gemma2", "olmo2", "gpt_neox",
                                  "gpt2", "phi")]
    layers += [{"hf": f, "init": "torch_default"} for f in ("llama", "gemma2", "olmo2")]
    keys = ["pre", *(own_key("pre", hf.spec(layer)) for layer in layers)]
    heights = []
    for placements in (["post", "pre", "none"], keys):
        fig = stack96_figures.grad_ratio_by_depth(grad_fits(placements))
        finish(fig)
        fig.canvas.draw()
        heights.append(fig.axes[0].get_window_extent().height / fig.dpi)
    (drawn,) = fig.legends
    texts = legend_texts(fig)
    assert len(texts) == len(keys) + 1 and drawn._ncols >= 2
    assert max(t.count("\n") for t in texts) <= 1
    assert all(line.count("(") == line.count(")") for t in texts for line in t.splitlines())
    assert heights[1] == pytest.approx(heights[0], rel=0.05)
    check_reads_well(fig)
    plt.close(fig)


def test_a_mean_curve_bands_the_seed_range():
    """The one band convention: a curve of the seed mean is banded by the seeds' min and max
    (not the mean's interval), asymmetric where the seeds are."""
    frame = pd.DataFrame([{"placement": "pre", "layer": x, "mean": 2.0 * x, "median": 1.0,
                           "min": 2.0 * x - 1, "max": 2.0 * x + 3, "ci_lo": 2.0 * x - 0.1,
                           "ci_hi": 2.0 * x + 0.1, "n_seeds": 5} for x in (1, 2, 3)])
    fig, axes = grid(1, 1)
    curves(axes[0, 0], frame, "layer", spread=MEAN_RANGE)
    line = axes[0, 0].lines[0]
    assert np.allclose(line.get_ydata(), [2, 4, 6])
    (band,) = axes[0, 0].collections
    ys = band.get_paths()[0].vertices[:, 1]
    assert (ys.min(), ys.max()) == (1.0, 9.0)  # min at x = 1, max at x = 3
    plt.close(fig)


def test_a_wide_legend_stays_on_the_canvas():
    """The scale study's legend (every placement and three references, one long) once ran
    past both edges of a double-column figure: the columns shrink until it fits."""
    fig, axes = grid(1, 2, 3.2, 2.6)
    for ax in axes[0]:
        ax.plot([1, 2], [1, 2])
        ax.set_xlabel("block")
        ax.set_ylabel("value")
    extra = [reference(axes[0, 0], [1, 2], [1, 1], label) for label in (
        "the notes' rate +0.5", "Pre-LN: sqrt(V_0 + l σ²)", "the notes' rate -0.5")]
    shown = ("Post-LN", "Pre-LN", "no residual", "DeepNorm", "ResiDual", "Sandwich-LN",
             "Peri-LN", "ReZero", "LN-Scaling")
    legend(fig, [p for p in ORDER if LABELS[p] in shown], extra=extra)
    finish(fig)
    fig.canvas.draw()
    assert not off_canvas(fig), off_canvas(fig)
    plt.close(fig)


@pytest.mark.slow
def test_fixes_grad_ratio_is_faceted_and_names_coinciding_curves():
    every = list(ORDER)
    fits = grad_fits(every)
    # Peri-LN's curve equals Sandwich-LN's: drawn, and said so in the legend
    peri = fits["placement"] == "peri"
    sandwich = fits[fits["placement"] == "sandwich"]
    fits.loc[peri, ["median", "min", "max"]] = sandwich[["median", "min", "max"]].to_numpy()
    fig = fixes_figures.grad_ratio(fits)
    assert len(fig.axes) == 3  # a panel per family
    assert placements_in_legend(fig, FIX_LABELS) == set(every)
    assert "on each other: Sandwich-LN = Peri-LN" in legend_texts(fig)
    check_reads_well(fig)
    plt.close(fig)


def test_coinciding_groups_curves_within_tolerance():
    frame = pd.DataFrame({"fix": list("aabbcc"), "depth": [1, 2] * 3,
                          "median": [1.0, 2.0, 1.01, 2.02, 1.0, 3.0]})
    assert coinciding(frame, "depth", "fix") == [["a", "b"]]
    assert coinciding(frame, "depth", "fix", rtol=0.001) == []


@pytest.mark.parametrize("lo, hi", [(1e-5, 1e2), (0.2, 40), (0.5, 3)])
def test_log_axis_labels_at_most_one_tick_per_decade(lo, hi):
    fig, ax = plt.subplots()
    ax.plot([1, 2], [lo, hi])
    log_scale(ax, "y")
    fig.canvas.draw()
    values = [t.get_position()[1] for t in tick_labels(ax.yaxis)]
    assert len(values) >= 1
    assert not crowded_log_axes(fig)
    plt.close(fig)


def test_narrow_log_axis_spans_a_decade():
    """Seed noise around 1 (ReZero's band) must not fill a panel."""
    fig, ax = plt.subplots()
    ax.fill_between([0, 1], [0.93, 0.93], [1.13, 1.13])
    log_scale(ax, "y")
    lo, hi = ax.get_ylim()
    assert hi / lo >= 10 * (1 - 1e-9)
    plt.close(fig)


def test_the_checks_can_fail():
    """A figure with the faults the reviewer found fails each check."""
    fig, axes = plt.subplots(1, 2, figsize=(3, 2))
    axes[0].plot([1, 10, 100], [1, 2, 3], label="delta_attn")
    axes[0].set_yscale("log")
    axes[0].set_ylim(0.01, 100)
    axes[0].set_yticks([0.01, 0.02, 0.05, 0.1, 1, 10, 100], ["0.01", "0.02", "0.05", "0.1",
                                                               "1", "10", "100"])
    axes[0].set_title("a title much too long to stay above its own panel only")
    axes[0].legend(loc="center")
    axes[1].plot([0, 1], [0, 1])
    fig.canvas.draw()
    assert overlapping_texts(fig)
    assert unlabelled(fig)
    assert code_names(fig) == ["delta_attn"]
    assert crowded_log_axes(fig)
    axes[1].plot(np.linspace(0, 1, 200), np.full(200, 0.5))
    axes[1].legend(["x"], loc="center", markerscale=20, fontsize=30)
    fig.canvas.draw()
    assert legend_over_data(fig)
    fig.legend(["a legend entry far too long for a figure three inches wide"] * 4, ncol=4)
    fig.canvas.draw()
    assert any(name.startswith("legend") for name in off_canvas(fig))
    axes[1].set_ylabel("mean, band: 95% CI of 5 seeds")
    assert interval_bands(fig) == ["mean, band: 95% CI of 5 seeds"]
    plt.close(fig)


@pytest.mark.slow
def test_save_writes_png_at_300_dpi_svg_and_pdf_atomically(tmp_path):
    fig = stack96_figures.grad_ratio_by_depth(grad_fits(("pre",)))
    outputs = {ext: tmp_path / f"f.{ext}" for ext in ("png", "svg", "pdf")}
    save(fig, outputs)
    with Image.open(outputs["png"]) as png:
        assert round(png.info["dpi"][0]) == 300
    assert outputs["svg"].read_text().lstrip().startswith("<?xml")
    assert outputs["pdf"].read_bytes().startswith(b"%PDF")

    class Interrupted(Exception):
        pass

    fig = stack96_figures.grad_ratio_by_depth(grad_fits(("pre",)))

    def interrupted(path, **kw):
        Path(path).write_bytes(b"\x89PNG half")
        raise Interrupted

    fig.savefig = interrupted
    with pytest.raises(Interrupted):
        save(fig, {"png": tmp_path / "g.png"})
    assert list(tmp_path.glob("*g.png*")) == []  # neither the file nor its temporary


@pytest.mark.slow
def test_contact_sheet_holds_every_figure(tmp_path):
    pngs = []
    for i in range(3):
        fig = stack96_figures.grad_ratio_by_depth(grad_fits(ORDER[: i + 1]))
        save(fig, {"png": tmp_path / f"f{i}.png"})
        pngs.append(tmp_path / f"f{i}.png")
    contact_sheet(pngs, tmp_path / "sheet.png", columns=2)
    with Image.open(tmp_path / "sheet.png") as sheet:
        assert sheet.width > sheet.height  # two columns, two rows of wide panels


# --- every figure target of the tiny studies ------------------------------------------------


def assert_column_wide(png: Path) -> None:
    """A figure a paper takes as it is: one column (3.5 in) or two (7 in) wide, at
    300 dpi."""
    with Image.open(png) as image:
        assert [round(d) for d in image.info["dpi"]] == [300, 300], png
        assert image.width in (1050, 2100), (png, image.width)


def figure_targets(studies) -> list:
    return [t for t in TARGETS if t.kind == "figure" and t.study in studies]


def draw(target, workdir: Path):
    """The target's figure as save() writes it (style.finish: integer ticks, wrapped labels)."""
    fits = sorted((workdir / "results/fits" / target.study).glob("*.parquet"))
    read = [p for p in fits if target.arms([p.stem])]
    fig = drawing(target)(read_fits(read))
    finish(fig)
    return fig


def present(frame: pd.DataFrame) -> set[str]:
    return set(frame["placement"].dropna()) if "placement" in frame else set()


@pytest.mark.workflow
@pytest.mark.parametrize("target", [t for t in tiny_targets() if t.kind == "figure"],
                         ids=lambda t: t.name)
def test_every_tiny_figure_reads_well(tiny_run, target):
    for path in target.outputs.values():
        assert (tiny_run / path).stat().st_size > 0, path
    assert_column_wide(tiny_run / target.outputs["png"])
    fig = draw(target, tiny_run)
    fits = read_fits([p for p in (tiny_run / "results/fits" / target.study).glob("*.parquet")
                      if target.arms([p.stem])])
    assert placements_in_legend(fig, LABELS) <= present(fits)
    assert not BAND_INTERVAL.search(target.caption), target.caption
    check_reads_well(fig)
    plt.close(fig)


FIXES_FIGURES = figure_targets(("fixes", "fixestraining"))


@pytest.mark.workflow
@pytest.mark.parametrize("target", FIXES_FIGURES, ids=lambda t: t.name)
def test_every_fixes_figure_reads_well(tiny_fixes_run, target):
    assert_column_wide(tiny_fixes_run / target.outputs["png"])
    fig = draw(target, tiny_fixes_run)
    assert any(ax.has_data() for ax in fig.axes), target.name
    assert not BAND_INTERVAL.search(target.caption), target.caption
    check_reads_well(fig)
    plt.close(fig)


@pytest.mark.parametrize("natural, width", [(2.6, 3.5), (4.0, 3.5), (4.8, 7.0), (15.6, 7.0)])
def test_a_figure_is_one_or_two_columns_wide(natural, width):
    assert column_width(natural) == width
    fig, _ = grid(1, 3, natural / 3, 2.0)
    assert fig.get_figwidth() == width
    plt.close(fig)
