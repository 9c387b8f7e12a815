"""The figures as a reader sees them, checked on the drawn artists by
depthlab.analysis.legibility: the legend lists exactly what has data, no two text boxes overlap,
every axis is labelled (no code names), a legend covers no data, a log axis labels at most one
tick per decade, every band is the seeds' range (no figure names an interval); and the files:
PNG at 300 dpi, SVG, PDF, written atomically.

Fast tests draw synthetic fit tables and check that the checks can fail; the workflow tests
read, for every figure target of the tiny studies (config/tiny.yaml and config/tiny_fixes.yaml
through the session's shared runs), what its job's check of the figure logged."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import tiny_targets
from PIL import Image

from depthlab.analysis import legibility
from depthlab.analysis.draw import contact_sheet, draw
from depthlab.analysis.legibility import (
    code_names,
    crowded_log_axes,
    interval_bands,
    legend_over_data,
    legend_texts,
    off_canvas,
    overlapping_texts,
    placements_in_legend,
    problems,
    tick_labels,
    unlabelled,
)
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
from depthlab.studies import TARGETS
from depthlab.studies.fixes import figures as fixes_figures
from depthlab.studies.fixes.fit import FIX_LABELS
from depthlab.studies.stack96 import figures as stack96_figures
from depthlab.vocabulary import hf
from depthlab.vocabulary.placements import LABELS, ORDER

BAND_INTERVAL = re.compile(r"band[^.;]*(\bCI\b|t-interval|95%)")  # a caption's band sentence


def check_reads_well(fig) -> None:
    """The figure, drawn once as saved, reads well: legibility.problems finds nothing."""
    fig.canvas.draw()
    assert not problems(fig), problems(fig)


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


def test_a_wrapped_label_keeps_a_formula_whole():
    """A line break inside $...$ leaves mathtext unclosed (matplotlib then prints the raw
    TeX): a long label wraps between its words, never inside its formula."""
    fig, ax = plt.subplots(figsize=(3.5, 1.6))
    ax.plot([1, 2], [1, 2])
    formula = r"$\|F(\theta_t) - F(\theta_0)\| \,/\, \|F(\theta_0)\|$"
    ax.set_ylabel(f"{formula} the output's change from init")
    finish(fig)
    label = ax.get_ylabel()
    assert "\n" in label and formula in label.splitlines()
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


def drawn_log(run: Path, target) -> str:
    """What the target's job logged: depthlab.analysis.draw checks the figure, as laid out for
    saving, with legibility.problems (a warning per problem, else a line that it reads well)."""
    return (run / "logs/render" / f"{target.name}.log").read_text()


@pytest.mark.workflow
@pytest.mark.parametrize("target", [t for t in tiny_targets() if t.kind == "figure"],
                         ids=lambda t: t.name)
def test_every_tiny_figure_reads_well(tiny_run, target):
    for path in target.outputs.values():
        assert (tiny_run / path).stat().st_size > 0, path
    assert_column_wide(tiny_run / target.outputs["png"])
    assert not BAND_INTERVAL.search(target.caption), target.caption
    log = drawn_log(tiny_run, target)
    assert f"{target.name} reads well" in log, log


FIXES_FIGURES = figure_targets(("fixes", "fixestraining"))


@pytest.mark.workflow
@pytest.mark.parametrize("target", FIXES_FIGURES, ids=lambda t: t.name)
def test_every_fixes_figure_reads_well(tiny_fixes_run, target):
    assert_column_wide(tiny_fixes_run / target.outputs["png"])
    assert not BAND_INTERVAL.search(target.caption), target.caption
    log = drawn_log(tiny_fixes_run, target)
    assert f"{target.name} reads well" in log, log


def test_a_figure_that_reads_badly_is_written_with_a_warning_per_problem(tmp_path, caplog):
    """draw() checks a figure before writing it: each problem a warning naming the target, no
    "reads well" line, the files written all the same."""
    target = next(t for t in TARGETS if t.name == "fig_grad_ratio_by_depth")
    fits = tmp_path / "grad.parquet"
    grad_fits(["pre"]).to_parquet(fits)

    def unreadable(frame):
        fig, ax = plt.subplots(figsize=(3.5, 2))
        ax.plot(frame["depth"], frame["median"], label="grad_ratio")
        ax.legend()
        return fig

    outputs = {"png": str(tmp_path / "f.png"), "svg": str(tmp_path / "f.svg")}
    with caplog.at_level("INFO"):
        draw(target, unreadable, [fits], {}, outputs)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("unlabelled: axes 0" in w for w in warned), warned
    assert any("code name shown: 'grad_ratio'" in w for w in warned), warned
    assert all(w.startswith("fig_grad_ratio_by_depth does not read well: ") for w in warned)
    assert "reads well:" not in caplog.text
    assert all(Path(p).stat().st_size > 0 for p in outputs.values())


def test_a_fault_of_the_checks_is_a_warning_and_the_figure_is_written(tmp_path, caplog,
                                                                     monkeypatch):
    target = next(t for t in TARGETS if t.name == "fig_grad_ratio_by_depth")
    fits = tmp_path / "grad.parquet"
    grad_fits(["pre"]).to_parquet(fits)

    def broken(fig, frame):
        raise ValueError("no extent")

    monkeypatch.setattr(legibility, "problems", broken)
    outputs = {"png": str(tmp_path / "f.png")}
    draw(target, stack96_figures.grad_ratio_by_depth, [fits], {}, outputs)
    assert ("fig_grad_ratio_by_depth does not read well: the checks failed (ValueError: no "
            "extent)") in caplog.text
    assert Path(outputs["png"]).stat().st_size > 0


@pytest.mark.parametrize("natural, width", [(2.6, 3.5), (4.0, 3.5), (4.8, 7.0), (15.6, 7.0)])
def test_a_figure_is_one_or_two_columns_wide(natural, width):
    assert column_width(natural) == width
    fig, _ = grid(1, 3, natural / 3, 2.0)
    assert fig.get_figwidth() == width
    plt.close(fig)
