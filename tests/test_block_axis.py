"""A `block` axis: one arm per block (depthlab.planner.grid.split_block_axes), each fitted on its
own, drawn as a curve and a column of the arm it comes from under its block's name, with a band
of its own, and never graded as the built-in placement it follows."""

from __future__ import annotations

import copy
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, copy_workflow, run_snakemake, whole

from depthlab.analysis.draw import draw
from depthlab.analysis.fits import read_fits
from depthlab.analysis.select import pick
from depthlab.claims.ledger import ledger
from depthlab.claims.outcomes import GRADED, NOT_COMPARABLE
from depthlab.claims.schema import load_claims
from depthlab.core.measure import measure_cell
from depthlab.planner.catalogue import Catalogue
from depthlab.planner.grid import arm_settings, split_block_axes, study_jobs
from depthlab.planner.overlay import config_of
from depthlab.planner.validate import check_config
from depthlab.studies import BY_NAME, STUDIES, TARGETS, drawing
from depthlab.studies.fits import study_fits
from depthlab.studies.stack96.fit import fit
from depthlab.vocabulary import hf
from depthlab.vocabulary.placements import COLORS, MARKERS
from depthlab.vocabulary.settings import ConfigError
from depthlab.vocabulary.variants import arm_names, label, own_key, own_style, with_blocks

EXAMPLE = "examples.encoder_block:make_block"  # examples/encoder_block.py, from the root
OWN = "make_block (own block)"
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
ARM_NAME = yaml.safe_load(SCHEMA.read_text())["$defs"]["study"]["properties"]["arms"][
    "patternProperties"]


@pytest.fixture(autouse=True)
def _from_the_root(monkeypatch):
    """Run from the repository's root, where a config's `block` module is looked up."""
    monkeypatch.chdir(ROOT)


def stack96(block=None, settings=None) -> dict:
    """stack96's grad arm at toy size (Pre-LN, depths 2 and 3, d_model 16, 2 seeds), with a
    `block` axis and arm settings if given."""
    grad = {"axes": {"placement": ["pre"], "depth": [2, 3]}, "pack": ["depth"]}
    if block is not None:
        grad["axes"]["block"] = block
    if settings:
        grad["settings"] = settings
    return {"studies": {"stack96": {
        "analysis": {"single_depth": 2},
        "settings": {"d_model": 16, "heads": 2, "tokens": 8, "batch": 2, "seeds": 2},
        "arms": {"grad": grad}}}}


def catalogue(config: dict) -> Catalogue:
    claims = load_claims(ROOT / "config/claims.yaml")["claims"]
    return Catalogue(config, check_config(config, SCHEMA, STUDIES), TARGETS, claims)


def test_a_block_s_arm_is_named_by_the_block_never_with_a_colon():
    assert arm_names("grad", ["", "mywork.blocks:make_parallel", {"hf": "llama"},
                              "hf-gemma2;rms_norm_eps=1e-06"]) == [
        "grad", "grad@make_parallel", "grad@hf_llama", "grad@hf_gemma2"]
    # the built-in keeps the arm's name only where the arm measures it without the axis
    assert arm_names("grad", ["", "a:f"], measured="a:f") == ["grad@built_in", "grad@f"]
    # two factories of one name: their modules tell them apart
    names = arm_names("g", ["a.x:make", "b.y:make", "a_x:make"])
    assert names == ["g@a_x_make_1", "g@b_y_make", "g@a_x_make_3"]
    for name in names:
        assert ":" not in name and any(re.fullmatch(p, name) for p in ARM_NAME)


def test_a_block_axis_plans_one_arm_per_block():
    config, plain = stack96(["", EXAMPLE]), stack96()
    cat = catalogue(config)
    arms = config["studies"]["stack96"]["arms"]
    assert list(arms) == ["grad", "grad@make_block"]
    blocks = {(j.arm, j.job): {c.settings.block for c in j.cells} for j in cat.jobs.values()}
    assert blocks == {("grad", "placement-pre"): {""},
                      ("grad@make_block", "placement-pre"): {EXAMPLE}}
    labels = [c.label for j in cat.jobs.values() for c in j.cells]
    assert labels and not any(":" in x or "block" in x for x in labels)
    # the built-in's arm is the arm without the axis: the same jobs of the same cells
    before = catalogue(plain)
    assert [j.cells_json() for j in cat.jobs.values() if j.arm == "grad"] == [
        j.cells_json() for j in before.jobs.values()]
    # every target that reads grad reads both; its caption names the block, and cites the
    # built-in's claims alone, as without the axis
    assert {t.name for t in cat.targets} == {t.name for t in before.targets}
    for target in cat.targets:
        assert set(target.arms(list(arms))) in ({"grad", "grad@make_block"}, set())
    target = BY_NAME["fig_grad_ratio_by_depth"]
    assert cat.target_fits(target) == ["results/fits/stack96/grad.parquet",
                                       "results/fits/stack96/grad@make_block.parquet"]
    assert cat.blocks_of(target) == {"grad@make_block": EXAMPLE}
    assert (f"make_block ({EXAMPLE}; arm grad@make_block, following the final norm of "
            "Pre-LN)") in cat.caption(target)
    assert cat.claims_testing(target) == before.claims_testing(target) != []


def test_a_placement_axis_varies_the_built_in_and_an_own_block_is_measured_once():
    """Built-in placements beside own blocks in one arm: the placement axis gives the built-in
    a job per placement, while the own block (it has no placement) is measured once, at the
    arm's placement setting, which names the final norm it is read through."""
    config = stack96(["", EXAMPLE])
    config["studies"]["stack96"]["arms"]["grad"]["axes"]["placement"] = ["post", "pre", "peri"]
    cat = catalogue(config)
    jobs = sorted((j.arm, j.job) for j in cat.jobs.values())
    assert jobs == [("grad", "placement-peri"), ("grad", "placement-post"),
                    ("grad", "placement-pre"), ("grad@make_block", "placement-pre")]
    # at another placement setting, the own block follows it (its final norm: Post-LN's none)
    config = stack96(["", EXAMPLE], settings={"placement": "post"})
    config["studies"]["stack96"]["arms"]["grad"]["axes"]["placement"] = ["post", "pre"]
    own = [c.settings for j in catalogue(config).jobs.values() if j.arm == "grad@make_block"
           for c in j.cells]
    assert own and {(s.placement, s.uses_final_norm) for s in own} == {("post", False)}


def test_the_models_config_plans_an_arm_per_layer_each_labelled_by_its_family():
    """config/models.yaml (docs/MODELS.md), planned dry (no layer built): one arm per block,
    12; its figure labels each Hugging Face layer by its family and init reading, in a hue and
    marker of its family that no placement has, its init as the dash, no two alike."""
    from matplotlib.colors import to_hex

    config = config_of(ROOT, "config/models.yaml")
    split_block_axes(config)
    cat = Catalogue(config, study_jobs(config), TARGETS, [])
    blocks = cat.blocks_of(BY_NAME["fig_grad_ratio_by_depth"])
    assert len(cat.arms["stack96"]) == 24 and len(blocks) == 11
    assert "grad" in cat.arms["stack96"] and "grad" not in blocks
    # the stream arm over the same blocks (one list, a YAML anchor), with no output scale axis
    stream = cat.blocks_of(BY_NAME["fig_stream_sd"])
    assert sorted(stream.values()) == sorted(blocks.values())
    assert {a.partition("@")[2] for a in stream} == {a.partition("@")[2] for a in blocks}
    assert {c.settings.out_scale for j in cat.jobs.values() if j.arm.startswith("stream")
            for c in j.cells} == {1.0}
    assert len(cat.placement_keys(BY_NAME["table_stream_growth"])) == 4 + 11
    keys = [own_key("pre", block) for block in blocks.values()]
    nn_linear = ("Llama", "Gemma 2", "OLMo 2")
    assert sorted(map(label, keys)) == sorted(
        [f"{name} (HF layer)" for name in hf.FAMILIES.values()]
        + [f"{name}, nn.Linear init (HF layer)" for name in nn_linear])
    looks = own_style(keys)
    assert len({(to_hex(s["color"]), s["marker"], s["dashes"]) for s in looks.values()}) == 11
    assert not {to_hex(s["color"]) for s in looks.values()} & set(map(to_hex, COLORS.values()))
    assert not {s["marker"] for s in looks.values()} & set(MARKERS.values())
    for key, look in looks.items():  # a family's hue and marker; its init, the dash
        family = hf.parse(key.partition("@")[2])[0]
        assert (look["color"], look["marker"]) == (looks[f"pre@hf-{family}"]["color"],
                                                   looks[f"pre@hf-{family}"]["marker"])
        assert look["dashes"] == ((4, 1.5) if "torch_default" in key else "")
    # a further Gemma 2 layer (an override) and a factory beside them: still none alike
    more = [*keys, own_key("pre", hf.spec({"hf": "gemma2", "rms_norm_eps": 1e-6})),
            own_key("pre", EXAMPLE)]
    assert len({(to_hex(s["color"]), s["marker"], s["dashes"])
                for s in own_style(more).values()}) == 13


def test_an_arm_that_measures_an_own_block_cites_no_claim_with_a_block_axis():
    """Without its axis the arm measures an own block, so none of its arms is graded: the
    built-in is arm grad@built_in, which no claim reads."""
    cat = catalogue(stack96(["", EXAMPLE], settings={"block": EXAMPLE}))
    target = BY_NAME["table_grad_ratio_by_depth"]
    assert cat.target_fits(target) == ["results/fits/stack96/grad@built_in.parquet",
                                       "results/fits/stack96/grad@make_block.parquet"]
    assert cat.blocks_of(target) == {"grad@make_block": EXAMPLE}
    assert cat.claims_testing(target) == []


STREAM_TARGETS = ("table_stream_growth", "table_output_scale", "fig_stream_sd",
                  "fig_variance_budget")


def stream_arm(block=None) -> dict:
    """stack96's stream arm at toy size: forward only, Pre-LN and Post-LN at depths 2 and 3,
    with a `block` axis if given."""
    axes = {"placement": ["pre", "post"], "depth": [2, 3]}
    if block is not None:
        axes["block"] = block
    return {"settings": {"grad_of": "none"}, "axes": axes, "pack": ["placement", "depth"]}


def test_the_stream_captions_name_pre_ln_only_where_it_is_drawn_alone():
    """The stream targets' captions describe Pre-LN, the default configs' one placement: where
    the arm holds more (another placement, an own block), each is drawn per placement, under
    its own label, and the caption says so and names no own block as Pre-LN."""
    alone = stack96()
    alone["studies"]["stack96"]["arms"]["stream"] = {**stream_arm(), "axes": {
        "placement": ["pre"], "depth": [2, 3]}}
    several = stack96()
    several["studies"]["stack96"]["arms"]["stream"] = stream_arm(["", EXAMPLE])
    before, cat = catalogue(alone), catalogue(several)
    for name in STREAM_TARGETS:
        target = BY_NAME[name]
        assert before.placement_keys(target) == ["pre"]
        assert before.caption(target) == target.caption
        assert cat.placement_keys(target) == ["post", "pre", own_key("pre", EXAMPLE)]
        caption = cat.caption(target)
        assert caption.startswith(target.per_placement[1]) and "per placement" in caption
        assert "Pre-LN" not in caption.replace("following the final norm of Pre-LN", "")
        assert caption.endswith(f"make_block ({EXAMPLE}; arm stream@make_block, following the "
                                "final norm of Pre-LN).")
        assert target.title_for(["pre"]) == target.title
        assert target.title_for(["pre", "post"]) == target.per_placement[0]


def test_block_axis_mistakes_are_one_line_naming_the_arm():
    config = stack96()
    config["studies"]["stack96"]["arms"]["grad@mine"] = config["studies"]["stack96"]["arms"][
        "grad"]
    with pytest.raises(ConfigError, match=r"^studies\.stack96\.arms\.grad@mine: '@' is kept for "
                                          r"the arms a block axis is split into"):
        check_config(config, SCHEMA, STUDIES)
    # a setting only built-in blocks read, varied beside a block axis with an own block
    config = stack96(["", EXAMPLE])
    config["studies"]["stack96"]["arms"]["grad"]["axes"]["init"] = ["fan_in", "torch_default"]
    with pytest.raises(ConfigError, match=r"^studies\.stack96\.arms\.grad\.axes\.init=\['fan_in'"
                                          r", 'torch_default'\]: only depthlab's built-in blocks "
                                          r"read init, and this arm measures the own blocks "):
        check_config(config, SCHEMA, STUDIES)
    # beside an axis of the built-in alone, it is read
    config = stack96([""])
    config["studies"]["stack96"]["arms"]["grad"]["axes"]["init"] = ["fan_in", "torch_default"]
    assert {j.arm for j in check_config(config, SCHEMA, STUDIES)} == {"grad"}


def measured_fits(folder, config: dict) -> tuple[list, list]:
    """Every arm of `config` measured in process and fitted as the fit rule does (the arms'
    axes as its `axes` param): the fit paths and the jobs."""
    jobs = check_config(config, SCHEMA, STUDIES)
    arms = config["studies"]["stack96"]["arms"]
    axes = {arm: list(spec["axes"]) for arm, spec in arms.items()}
    folder.mkdir()
    paths = []
    for arm in arms:
        table = pd.concat([measure_cell(c.settings, c.plan).assign(arm=j.arm, label=c.label)
                           for j in jobs if j.arm == arm for c in j.cells], ignore_index=True)
        paths.append(folder / f"{arm}.parquet")
        fit(table, axes).to_parquet(paths[-1])
    return paths, jobs


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """The toy grad arm over the axis ["", EXAMPLE], and the arm measured with EXAMPLE as its
    setting (as before axes of blocks): their fits."""
    base = tmp_path_factory.mktemp("block_axis")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        split = measured_fits(base / "axis", stack96(["", EXAMPLE]))
        setting = measured_fits(base / "setting", stack96(settings={"block": EXAMPLE}))
    return split, setting


def table(folder, paths, blocks) -> pd.DataFrame:
    target = BY_NAME["table_grad_ratio_by_depth"]
    outputs = {ext: str(folder / f"t.{ext}") for ext in ("md", "csv")}
    draw(target, drawing(target), paths, {}, outputs, blocks)
    return pd.read_csv(outputs["csv"])


def test_the_table_has_a_labelled_column_per_block(fitted, tmp_path):
    (paths, _), (same, _) = fitted
    out = table(tmp_path, paths, {"grad@make_block": EXAMPLE})
    assert list(out.columns) == ["L", "Pre-LN", "Pre-LN seed range", OWN, f"{OWN} seed range"]
    assert list(out["L"]) == [2, 3]
    assert not np.allclose(out["Pre-LN"], out[OWN])
    # the built-in's column is the grad arm's own fit; the block's that of the block measured
    # as the arm's setting
    builtin = pick(read_fits(paths[:1]), quantity="grad_ratio").sort_values("depth")
    np.testing.assert_allclose(out["Pre-LN"], builtin["median"], rtol=1e-12)
    before = table(tmp_path, same, {"grad": EXAMPLE})
    assert list(before.columns) == ["L", OWN, f"{OWN} seed range"]
    np.testing.assert_allclose(out[OWN], before[OWN], rtol=1e-12)
    assert list(out[f"{OWN} seed range"]) == list(before[f"{OWN} seed range"])


def test_the_figure_has_a_curve_and_a_band_per_block(fitted):
    (paths, _), _ = fitted
    fits = with_blocks(read_fits(paths), {"grad@make_block": EXAMPLE})
    assert set(fits["arm"]) == {"grad"}  # the studies' renders pick the arm by name
    fig = drawing(BY_NAME["fig_grad_ratio_by_depth"])(fits)
    texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert texts == ["Pre-LN", OWN, "1 = balanced"]
    ax = fig.axes[0]
    curves = [line for line in ax.get_lines() if list(line.get_xdata()) == [2, 3]]
    assert len(curves) == 2
    assert not np.allclose(*(line.get_ydata() for line in curves))
    # one band per curve, each spanning its own seed range only
    ratio = pick(fits, quantity="grad_ratio")
    ranges = sorted((sub["min"].min(), sub["max"].max())
                    for _, sub in ratio.groupby("placement"))
    bands = sorted((p.vertices[:, 1].min(), p.vertices[:, 1].max())
                   for c in ax.collections for p in c.get_paths())
    assert len(bands) == 2 and ranges[0] != ranges[1]
    np.testing.assert_allclose(bands, ranges, rtol=1e-12)
    plt.close(fig)


def test_the_ledger_grades_no_row_of_an_own_block(fitted):
    """A claim on the built-in's arm is graded as without the block's arm; one that names the
    block's arm (which config/claims.yaml never does) is not comparable."""
    (paths, jobs), _ = fitted
    fits = study_fits("stack96", paths)
    value = pick(fits, quantity="grad_ratio", arm="grad", depth=3)["median"].item()

    def entry(arm):
        return {"id": f"ratio.{arm}", "note": "stack96", "claim": "c", "kind": "quantitative",
                "documented": round(value, 2), "statistic": "median",
                "measure": {"fit": "stack96", "rows": {"r": {
                    "quantity": "grad_ratio", "arm": arm, "placement": "pre", "depth": 3}}},
                "tolerance": {"half_unit": 0.5, "reason": "r"}}

    claims = {"claims": [entry("grad"), entry("grad@make_block")], "fits": {},
              "notes": {"stack96": {"title": "t", "seeds": 2, "source": "sample",
                                    "settings": {"d_model": 16}}}}
    settings = arm_settings(jobs)
    graded, _ = ledger(claims, {"stack96": fits}, settings)
    builtin, own = graded.iloc[0], graded.iloc[1]
    assert builtin["outcome"] in GRADED
    assert own["outcome"] == NOT_COMPARABLE
    assert own["verdict"].startswith(f"not comparable: block {EXAMPLE} (an own block")
    alone, _ = ledger({**claims, "claims": [entry("grad")]},
                      {"stack96": study_fits("stack96", paths[:1])}, settings)
    for key in ("outcome", "verdict", "measured", "band_lo", "band_hi"):
        assert alone.iloc[0][key] == builtin[key]


OWN_BLOCKS = '''"""Two own blocks of a block axis."""
from torch import nn


class Parallel(nn.Module):
    """x + attn(LN x) + mlp(LN x): a parallel residual."""

    def __init__(self, s):
        super().__init__()
        self.norm = nn.LayerNorm(s.d_model)
        self.attn = nn.MultiheadAttention(s.d_model, s.heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(s.d_model, 4 * s.d_model), nn.GELU(),
                                 nn.Linear(4 * s.d_model, s.d_model))

    def forward(self, x):
        h = self.norm(x)
        return x + self.attn(h, h, h, need_weights=False)[0] + self.mlp(h)


def make_parallel(s):
    return Parallel(s)
'''


OWN_PARALLEL = "make_parallel (own block)"
AXIS_OUTPUTS = ("results/tables/grad_ratio_by_depth.csv", "results/figures/grad_ratio_by_depth.svg",
                "results/claims.parquet")
STREAM_OUTPUTS = ("results/tables/stream_growth.csv", "results/tables/output_scale.csv",
                  "results/figures/stream_sd.svg", "results/figures/variance_budget.svg")


@pytest.fixture(scope="module")
def axis_run(tmp_path_factory):
    """snakemake, once for this module, on the toy grad arm over ["", ownblocks:make_parallel]
    and the toy stream arm (Pre-LN and Post-LN) over the same axis: the run's folder."""
    work = copy_workflow(tmp_path_factory.mktemp("axis_run"))
    (work / "ownblocks.py").write_text(OWN_BLOCKS)
    config = copy.deepcopy(stack96(["", "ownblocks:make_parallel"]))
    config["studies"]["stack96"]["arms"]["stream"] = stream_arm(["", "ownblocks:make_parallel"])
    (work / "axis.yaml").write_text(yaml.safe_dump(config))
    done = run_snakemake(work, *AXIS_OUTPUTS, *STREAM_OUTPUTS, "--cores", "1",
                         *whole("axis.yaml"), check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return work


@pytest.mark.workflow
def test_the_workflow_draws_each_block_of_an_axis(axis_run):
    """snakemake on the toy grad arm over ["", ownblocks:make_parallel]: a shard and a fit per
    block (no ':' in a path), the table's column and the figure's legend entry of each, and a
    ledger that reads no arm of the own block."""
    for arm in ("grad", "grad@make_parallel"):
        assert (axis_run / f"results/fits/stack96/{arm}.parquet").exists()
        assert (axis_run / f"results/runs/stack96/{arm}/placement-pre.parquet").exists()
    out = pd.read_csv(axis_run / AXIS_OUTPUTS[0])
    assert [c for c in out.columns if "seed range" not in c] == ["L", "Pre-LN", OWN_PARALLEL]
    assert not np.allclose(out["Pre-LN"], out[OWN_PARALLEL])
    svg = (axis_run / AXIS_OUTPUTS[1]).read_text()
    assert svg.count(f"<!-- {OWN_PARALLEL} -->") == 1 and svg.count("<!-- Pre-LN -->") == 1
    ledger_rows = pd.read_parquet(axis_run / AXIS_OUTPUTS[2])
    assert len(ledger_rows) and not ledger_rows["rows"].str.contains("@").any()


@pytest.mark.workflow
def test_the_stream_targets_draw_each_placement_and_block_under_its_label(axis_run):
    """The same run's stream arm, Pre-LN and Post-LN beside ownblocks:make_parallel (measured at
    Pre-LN's final norm): each table a labelled group of rows per placement key, the built-in's
    from the stream arm's fit and the block's from its own; each figure a panel per key,
    titled with its label; the own block never under Pre-LN's name."""
    keys = ["Post-LN", "Pre-LN", OWN_PARALLEL]  # the registry's order, the block after Pre-LN
    growth = pd.read_csv(axis_run / STREAM_OUTPUTS[0])
    assert list(growth.columns[:2]) == ["placement", "L"]
    assert list(growth["placement"]) == [k for k in keys for _ in (2, 3)]
    assert list(growth["L"]) == [2, 3] * 3
    fits = {arm: read_fits([axis_run / f"results/fits/stack96/{arm}.parquet"])
            for arm in ("stream", "stream@make_parallel")}
    for name, arm, placement in (("Pre-LN", "stream", "pre"), ("Post-LN", "stream", "post"),
                                 (OWN_PARALLEL, "stream@make_parallel", "pre")):
        factor = pick(fits[arm], quantity="factor", placement=placement).sort_values("depth")
        np.testing.assert_allclose(growth.loc[growth["placement"] == name, "factor"],
                                   factor["median"], rtol=1e-12)
    scale = pd.read_csv(axis_run / STREAM_OUTPUTS[1])
    assert list(scale["placement"]) == keys and "factor at L=3" in scale
    assert scale["output scale"].iloc[2].startswith("1 (given to make_parallel")
    md = (axis_run / "results/tables/stream_growth.md").read_text()
    assert md.startswith("# Residual-stream growth per placement")
    for svg in STREAM_OUTPUTS[2:]:  # a panel title per key, an own block's kind below its name
        text = (axis_run / svg).read_text()
        titles = re.findall(r"<!-- (Post-LN|Pre-LN|make_parallel|\(own block\)) -->", text)
        assert titles == ["Post-LN", "Pre-LN", "make_parallel", "(own block)"], (svg, titles)
