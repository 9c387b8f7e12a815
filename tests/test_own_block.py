"""Your own block (README, "Probe your own block"): a stack of PyTorch's
nn.TransformerEncoderLayer(norm_first=True), through the Python entry point and through the
`block` setting, equals the built-in Pre-LN placement (attention torch_mha) per seed on every
probe its hooks reach."""

from __future__ import annotations

import dataclasses
import logging
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, planned
from torch import nn

from depthlab.analysis.coord import COORD_METRICS, plot_module
from depthlab.analysis.fits import read_fits
from depthlab.analysis.style import PLACEMENT_STYLE
from depthlab.core.measure import measure_cell
from depthlab.core.own_block import POINTS, check_block, measure_module, resolve
from depthlab.core.probes import PROBES
from depthlab.planner.cost import pass_bytes, pass_plan
from depthlab.planner.overlay import config_of
from depthlab.planner.validate import check_config
from depthlab.vocabulary.jobs import PassPlan
from depthlab.vocabulary.settings import ConfigError, RunSettings
from depthlab.vocabulary.variants import base, label, order, own_key, own_style, with_blocks

SETTINGS = RunSettings(placement="pre", attention="torch_mha", causal=False, depth=3,
                       d_model=16, heads=2, tokens=8, batch=2, seeds=3, block_corr=True)
KEY = ["seed", "layer", "sublayer", "metric"]
EXAMPLE = "examples.encoder_block:make_block"  # examples/encoder_block.py, from the root


@pytest.fixture(autouse=True)
def _from_the_root(monkeypatch):
    """Run from the repository's root, where a config's `block` module is looked up."""
    monkeypatch.chdir(ROOT)


def make_block(s):
    return resolve(EXAMPLE)(s)


def assert_same_rows(own, built):
    """The same probes (every metric the built-in gives) with the same values to round-off."""
    assert set(own["metric"]) == set(built["metric"])
    merged = built.merge(own, on=KEY, suffixes=("_built", "_own"), validate="1:1")
    assert len(merged) == len(built) == len(own) > 0
    np.testing.assert_allclose(merged["value_own"], merged["value_built"], rtol=1e-10,
                               atol=1e-13)


@pytest.mark.parametrize("grad_of, activation", [("params", "relu"), ("weights", "gelu"),
                                                 ("none", "relu")])
def test_pytorch_encoder_layers_equal_the_built_in_pre_ln(grad_of, activation):
    s = dataclasses.replace(SETTINGS, grad_of=grad_of, activation=activation)
    assert_same_rows(measure_module(make_block, s), measure_cell(*planned(s)))


def test_the_block_setting_takes_the_same_path():
    s = dataclasses.replace(SETTINGS, block=EXAMPLE)
    own = measure_cell(*planned(s))
    assert set(own["block"]) == {EXAMPLE}
    assert_same_rows(own.drop(columns="block"), measure_cell(*planned(SETTINGS)))


def test_every_probe_reads_points_a_block_can_mark():
    """A probe registered with a hook point no block can mark would never run on one."""
    assert all(set(points) <= set(POINTS) for points in PROBES.values())


def test_a_block_without_marked_points_gets_the_stream_probes_only(caplog):
    def bare(s):
        return make_block(s).__class__(s.d_model, s.heads, 2 * s.d_model, dropout=0.0,
                                       batch_first=True, norm_first=True)

    with caplog.at_level(logging.INFO, logger="depthlab.core.own_block"):
        own = measure_module(bare, SETTINGS)
    # the stream's rms too (the fixes study's stream growth reads it): it needs no point
    assert {"stream_sd", "stream_rms", "grad_ratio", "omega_abs", "token_corr"} <= set(
        own["metric"])
    assert not {"branch_var", "delta", "branch_in_sd", "branch_ratio"} & set(own["metric"])
    rms = own[own["metric"] == "stream_rms"]
    assert sorted(rms["layer"].unique()) == list(range(SETTINGS.depth + 1))
    # the job's log says, once, which probes were skipped and the points each needs
    said = [r.getMessage() for r in caplog.records if "probes skipped" in r.getMessage()]
    assert len(said) == 1
    for fn, points in PROBES.items():
        if points:
            assert f"{fn.__name__} (needs {', '.join(sorted(points))})" in said[0]


def test_a_bad_block_name_is_one_line_naming_the_key():
    with pytest.raises(ConfigError, match=r"block='my_blocks' is not 'module:function'"):
        dataclasses.replace(SETTINGS, block="my_blocks").check()


def test_the_readme_example_runs_as_written():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Your own block", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)[1]
    assert len(code.strip().splitlines()) <= 25
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102
    rows = namespace["rows"]
    assert {"grad_ratio", "stream_sd"} <= set(rows["metric"]) and rows["value"].notna().all()
    assert len(namespace["fig"].axes) == len(COORD_METRICS)


class _Wider(nn.Module):
    """d -> 2d: not a block of a residual stream."""

    def __init__(self, s):
        super().__init__()
        self.lin = nn.Linear(s.d_model, 2 * s.d_model)

    def forward(self, x):
        return self.lin(x)


class _Pair(nn.Module):
    """Returns (x, None), as Hugging Face's decoder layers return a tuple."""

    def __init__(self, s):
        super().__init__()
        self.lin = nn.Linear(s.d_model, s.d_model)

    def forward(self, x):
        return x + self.lin(x), None


class _Typo(_Pair):
    depthlab_points = {"mpl": "lin.output"}

    def forward(self, x):
        return x + self.lin(x)


class _NoSubmodule(_Typo):
    depthlab_points = {"attn": "attn.output"}


BROKEN = [
    (lambda s: _Wider(s), r"maps a stream of shape \(1, 8, 16\) to \(1, 8, 32\)"),
    (lambda s: _Pair(s), r"returns a tuple; return the stream"),
    (lambda s: nn.Identity(), r"has no parameters"),
    (lambda s: nn.Linear(s.d_model, s.d_model).weight, r"returned a Parameter, not an nn.Module"),
    (lambda s: _Typo(s), r"depthlab_points key 'mpl' is not one of .* \(did you mean "
                         r"'mlp'\?\)"),
    (lambda s: _NoSubmodule(s), r"depthlab_points\['attn'\] = 'attn.output': the block has no "
                                r"submodule 'attn'"),
    (lambda s: 1 / 0, r"building a block raised ZeroDivisionError: division by zero"),
]


@pytest.mark.parametrize("factory, message", BROKEN)
def test_a_broken_block_is_one_line_before_it_is_measured(factory, message):
    """Each mistake a block can make is one ConfigError line naming where and the block, from
    check_block and from measure_module, before any probe runs."""
    for call in (lambda: check_block(factory, SETTINGS, "studies.s.arms.a"),
                 lambda: measure_module(factory, SETTINGS)):
        with pytest.raises(ConfigError, match=message) as err:
            call()
        assert "\n" not in str(err.value) and "block=" in str(err.value)


def test_a_missing_function_is_named():
    with pytest.raises(ConfigError, match=r"block='examples.encoder_block:make_blok': module "
                                          r"'examples.encoder_block' has no 'make_blok'"):
        check_block("examples.encoder_block:make_blok", SETTINGS)


def test_measure_module_checks_its_settings_first():
    for bad, message in (({"depth": -1}, r"depth=-1 must be a positive integer"),
                         ({"heads": 5}, r"heads"), ({"seeds": 0}, r"seeds=0")):
        with pytest.raises(ConfigError, match=message):
            measure_module(make_block, dataclasses.replace(SETTINGS, **bad))


def test_the_workflow_rejects_a_broken_block_before_any_job(tmp_path, monkeypatch):
    """The tiny config with stack96's blocks from a factory that widens the stream:
    check_config's one line names the study, an arm and the block, before any job."""
    config = config_of(ROOT, "config/tiny.yaml")
    config["studies"]["stack96"]["arms"]["grad"].setdefault("settings", {})["block"] = (
        "wide_blocks:make")
    (tmp_path / "wide_blocks.py").write_text(
        "from torch import nn\n\n\ndef make(s):\n    return nn.Linear(s.d_model, 2 * s.d_model)\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^studies\.stack96\.arms\.grad: block='wide_blocks:"
                                          r"make': the block maps a stream of shape"):
        check_config(config, ROOT / "workflow/schemas/config.schema.yaml")


def test_a_block_without_the_points_a_study_reads_is_refused_before_any_job(tmp_path,
                                                                            monkeypatch):
    """varsplit's fit reads the variance increments, which need the stream between the two
    sublayers (hook point mid): a parallel block that marks only its branches is one line
    naming the arm and the point, not a KeyError in the fit after measuring. stack96 reads no
    point, so the same block passes there."""
    from depthlab.studies import HOOK_POINTS, STUDIES

    (tmp_path / "parallel_blocks.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Parallel(nn.Module):\n"
        "    def __init__(self, d):\n        super().__init__()\n"
        "        self.norm = nn.LayerNorm(d)\n        self.attn = nn.Linear(d, d)\n"
        "        self.mlp = nn.Linear(d, d)\n"
        "        self.depthlab_points = {'attn': 'attn.output', 'mlp': 'mlp.output'}\n\n"
        "    def forward(self, x):\n        h = self.norm(x)\n"
        "        return x + self.attn(h) + self.mlp(h)\n\n\n"
        "def make(s):\n    return Parallel(s.d_model)\n")
    monkeypatch.chdir(tmp_path)
    assert HOOK_POINTS["varsplit"] == ("mid",)
    config = config_of(ROOT, "config/tiny.yaml")
    config["studies"]["varsplit"]["settings"]["block"] = "parallel_blocks:make"
    arms = config["studies"]["varsplit"]["arms"]
    config["studies"]["varsplit"]["arms"] = {"base": arms["base"]}  # no built-in-only axis
    with pytest.raises(ConfigError, match=r"^studies\.varsplit\.arms\.\w+: block='parallel_"
                                          r"blocks:make': the study's fit reads the hook "
                                          r"point\(s\) mid, which the block does not mark"):
        check_config(config, ROOT / "workflow/schemas/config.schema.yaml", STUDIES,
                     HOOK_POINTS)
    config = config_of(ROOT, "config/tiny.yaml")
    config["studies"]["stack96"]["arms"]["grad"].setdefault("settings", {})["block"] = (
        "parallel_blocks:make")
    assert check_config(config, ROOT / "workflow/schemas/config.schema.yaml", STUDIES,
                        HOOK_POINTS)


def test_a_setting_only_built_in_blocks_read_is_refused_beside_an_own_block():
    """varsplit's init arm varies init, which an own block never reads: its rows would be two
    identical measurements labelled fan_in and torch_default. One line naming the arm."""
    config = config_of(ROOT, "config/tiny.yaml")
    config["studies"]["varsplit"]["settings"]["block"] = EXAMPLE
    config["studies"]["varsplit"]["arms"]["init"] = {"axes": {"init": ["fan_in",
                                                                       "torch_default"]}}
    with pytest.raises(ConfigError, match=r"^studies\.varsplit\.arms\.init\.axes\.init=\["
                                          r"'fan_in', 'torch_default'\]: only depthlab's "
                                          r"built-in blocks read init"):
        check_config(config, ROOT / "workflow/schemas/config.schema.yaml")
    # an arm's own setting too, and where the arm alone names the block
    config = config_of(ROOT, "config/tiny.yaml")
    config["studies"]["stack96"]["arms"]["stream"]["settings"] = {"block": EXAMPLE}
    with pytest.raises(ConfigError, match=r"^studies\.stack96\.arms\.stream\.axes\."
                                          r"out_scale=\[1, 3\]"):
        check_config(config, ROOT / "workflow/schemas/config.schema.yaml")


def test_an_own_block_in_a_trained_study_is_refused_before_any_job():
    """Training builds depthlab's own stack, never the block: one line, not a run of the
    built-in under the block's name."""
    config = config_of(ROOT, "config/tiny.yaml")
    config["studies"]["training"].setdefault("settings", {})["block"] = EXAMPLE
    with pytest.raises(ConfigError, match=r"^studies\.training\.arms\.\w+: block='[^']+': an "
                                          r"own block is measured at initialisation only"):
        check_config(config, ROOT / "workflow/schemas/config.schema.yaml")


@pytest.mark.slow
def test_plot_module_draws_each_metric_s_seed_median_by_block():
    """A panel per metric, x the block index, its line the median across seeds of each layer
    (computed here from the rows), its axis labelled with the metric and the band's meaning."""
    rows = measure_module(make_block, SETTINGS)
    fig = plot_module(rows)
    assert len(fig.axes) == len(COORD_METRICS)
    for ax, name in zip(fig.axes, COORD_METRICS, strict=True):
        one = rows[(rows["metric"] == name) & (rows["sublayer"] == "block")]
        median = one.groupby("layer")["value"].median()
        line = ax.lines[0]
        np.testing.assert_allclose(line.get_xdata(), median.index.to_numpy())
        np.testing.assert_allclose(line.get_ydata(), median.to_numpy(), rtol=1e-12)
        assert ax.get_xlabel() == "block l" and "3-seed range" in ax.get_ylabel()
    plt.close(fig)
    with pytest.raises(ValueError, match="none of the metrics"):
        plot_module(rows, metrics=("no_such_metric",))


# --- an own block in the outputs: its own label, look and caption, never the built-in's ------


def _stack96_fits(tmp_path, arm: str, s: RunSettings):
    """One stack96 arm measured at depths 2 and 4, fitted and written as its fit table."""
    from depthlab.studies.stack96.fit import fit

    table = pd.concat([measure_cell(*planned(dataclasses.replace(s, depth=depth)))
                       .assign(arm=arm, label=f"depth-{depth}") for depth in (2, 4)],
                      ignore_index=True)
    path = tmp_path / f"{arm}.parquet"
    fit(table, {arm: ["depth"]}).to_parquet(path)
    return path


def test_tables_and_figures_label_an_own_block_by_its_name(tmp_path):
    """stack96's grad arm measured with an own block that follows Pre-LN: the table's column
    and the figure's legend name the block, never "Pre-LN", and its curve is not Pre-LN's
    colour; without the arm's block the same fits read as Pre-LN."""
    from depthlab.analysis.draw import draw
    from depthlab.studies import BY_NAME, drawing

    s = dataclasses.replace(SETTINGS, seeds=2, block=EXAMPLE)
    paths = [_stack96_fits(tmp_path, "grad", s)]
    target = BY_NAME["table_grad_ratio_by_depth"]
    for blocks, name, other in (({"grad": EXAMPLE}, "make_block (own block)", "Pre-LN"),
                                ({}, "Pre-LN", "make_block (own block)")):
        outputs = {ext: str(tmp_path / f"t.{ext}") for ext in ("md", "csv")}
        draw(target, drawing(target), paths, {}, outputs, blocks)
        table = pd.read_csv(outputs["csv"])
        assert name in table.columns and other not in table.columns
        assert f"{name} seed range" in table.columns
    fits = pd.read_parquet(paths[0])
    assert set(with_blocks(fits, {"grad": EXAMPLE})["placement"]) == {f"pre@{EXAMPLE}"}
    assert set(with_blocks(fits, {"other": EXAMPLE})["placement"]) == {"pre"}

    fig = drawing(BY_NAME["fig_grad_ratio_by_depth"])(with_blocks(read_fits(paths),
                                                                  {"grad": EXAMPLE}))
    texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "make_block (own block)" in texts and "Pre-LN" not in texts
    colors = {line.get_color() for ax in fig.axes for line in ax.get_lines()
              if line.get_label() != "_nolegend_" and len(line.get_xdata()) == 2}
    assert PLACEMENT_STYLE["pre"]["color"] not in colors
    plt.close(fig)


def test_the_label_is_derived_once():
    key = own_key("pre", "mywork.blocks:make_parallel")
    assert label(key) == "make_parallel (own block)" and label("pre") == "Pre-LN"
    assert base(key) == "pre" and order([key, "post", "pre"]) == ["post", "pre", key]
    assert own_style([key])[key]["color"] not in set(PLACEMENT_STYLE[p]["color"]
                                                     for p in PLACEMENT_STYLE)


def test_a_setting_given_to_an_own_block_says_it_may_be_ignored():
    """varsplit's rows are labelled by init: an own block's say that it only was given it."""
    from depthlab.studies.varsplit.tables import init_of

    own = pd.Series({"init": "fan_in", "block": "mywork.blocks:make_parallel"})
    assert init_of(own) == "fan_in (given to make_parallel, which may ignore it)"
    assert init_of(pd.Series({"init": "fan_in", "block": ""})) == "fan_in"
    assert init_of(pd.Series({"init": "fan_in"})) == "fan_in"


@pytest.mark.slow
def test_a_caption_names_the_own_block_and_cites_no_built_in_claim():
    """An arm of an own block in stack96's grad arm: the caption of every target reading it
    names the block, and cites no claim (the ledger grades none of them)."""
    from depthlab.claims.schema import load_claims
    from depthlab.planner.catalogue import Catalogue
    from depthlab.studies import BY_NAME, STUDIES, TARGETS

    config = config_of(ROOT, "config/tiny.yaml")
    claims = load_claims(ROOT / "config/claims.yaml")["claims"]
    schema = ROOT / "workflow/schemas/config.schema.yaml"
    target = BY_NAME["fig_grad_ratio_by_depth"]
    before = Catalogue(config, check_config(config, schema, STUDIES), TARGETS, claims)
    assert "own block" not in before.caption(target)
    assert before.claims_testing(target)
    config["studies"]["stack96"]["arms"]["grad"].setdefault("settings", {})["block"] = EXAMPLE
    config["studies"]["stack96"]["arms"]["grad"]["settings"]["attention"] = "torch_mha"
    cat = Catalogue(config, check_config(config, schema, STUDIES), TARGETS, claims)
    assert cat.blocks_of(target) == {"grad": EXAMPLE}
    assert ("make_block (examples.encoder_block:make_block; arm grad, following the final norm "
            "of Post-LN, Pre-LN, no residual)") in cat.caption(target)
    assert cat.claims_testing(target) == []


def test_an_own_block_cell_is_planned_as_it_runs_one_seed_a_pass_every_block_held():
    """measure_module runs an own block's seeds one at a time with every block and its graph
    held: its plan says so however deep (the built-in's blocks would be recomputed), and its
    bytes hold at least every block's weights and gradients (12 d^2 a block, float64)."""
    deep = RunSettings(depth=1024, d_model=256, seeds=6, block=EXAMPLE)
    assert pass_plan(dataclasses.replace(deep, block="")).recomputes
    assert pass_plan(deep) == PassPlan(seeds_per_pass=1, streamed=False, recomputes=False)
    assert pass_bytes(deep) > 2 * 8 * 12 * 256**2 * 1024
