"""The committed docs/ document the default run, and a report shows the run it was built from:
docs_figures and docs_results refuse any other config with one line, and `snakemake --report`
refuses results/ whose provenance records another config (depthlab.planner.documented)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, copy_workflow, run_snakemake, started_in

from depthlab.planner.documented import (
    built_elsewhere,
    documented_configs,
    figure_sources,
    first_difference,
    undocumented,
)
from depthlab.planner.overlay import config_of
from depthlab.studies import BY_NAME

DEFAULT = yaml.safe_load((ROOT / "config/config.yaml").read_text())


@pytest.mark.parametrize("given, expected, found", [
    ({"a": {"b": 1}}, {"a": {"b": 1}}, ""),
    ({"a": {"b": 1, "c": [1, 2]}}, {"a": {"b": 1, "c": [1, 3]}}, "a.c=[1, 2], not [1, 3]"),
    ({"a": {}}, {"a": {"b": 1}}, "a.b is absent, not 1"),
    ({"a": 1, "z": 2}, {"a": 1}, "z=2, not absent"),
    ({"a": 1, "b": 2}, {"a": 0, "b": 3}, "a=1, not 0"),  # the first key in sorted order
    (3, 4, "the config=3, not 4"),
    ({"a": "x" * 50}, {"a": "y"}, f"a='{'x' * 36}..., not 'y'"),
])
def test_the_first_difference_names_the_key_and_both_values(given, expected, found):
    assert first_difference(given, expected) == found


def test_only_the_default_run_and_its_training_seeds_are_documented():
    documented = documented_configs(ROOT, DEFAULT)
    assert list(documented) == [
        "snakemake --cores all",
        "snakemake --cores all --configfile config/config.yaml config/training_seeds.yaml"]
    assert undocumented(DEFAULT, documented) == ""
    seeds = config_of(ROOT, "config/training_seeds.yaml")
    assert seeds != DEFAULT and undocumented(seeds, documented) == ""
    why = undocumented(config_of(ROOT, "config/tiny.yaml"), documented)
    assert why.startswith("docs/ documents the default run (snakemake --cores all or ")
    # the first key that differs, in sorted order: tiny bounds its studies' sizes
    assert "differs from `snakemake --cores all` at at_most={'depth': 8, " in why
    assert "\n" not in why


def test_a_report_refuses_results_built_with_another_config():
    built = config_of(ROOT, "config/tiny.yaml")
    assert built_elsewhere(built, built, "results/provenance.json") == ""
    why = built_elsewhere(DEFAULT, built, "results/provenance.json")
    assert why.startswith("results/provenance.json was built with another config (here at_most "
                          "is absent, not {'depth': 8, ")


def test_docs_figures_come_from_this_run_or_the_named_run_that_drew_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    here, fixes, scale = (BY_NAME[n] for n in ("fig_grad_ratio_by_depth", "fig_fixes_grad_ratio",
                                               "fig_scale_width"))
    drawn = tmp_path / "runs/fixes" / fixes.outputs["png"]
    drawn.parent.mkdir(parents=True)
    drawn.write_bytes(b"png")
    assert figure_sources([here, fixes, scale], {here.name}) == {
        here.stem: here.outputs["png"], fixes.stem: f"runs/fixes/{fixes.outputs['png']}"}


@pytest.mark.workflow
def test_docs_rules_refuse_a_tiny_config_with_one_line(tmp_path):
    work = copy_workflow(tmp_path)
    (work / "unnamed.yaml").write_text("run: null\n")  # the tiny study in results/
    run = run_snakemake(work, "--cores", "1", "docs_results", "docs_figures",
                        "--configfile", "config/tiny.yaml", "unnamed.yaml", check=False)
    output = run.stdout + run.stderr
    refused = [line for line in output.splitlines() if line.startswith(
        ("docs_figures: ", "docs_results: "))]
    assert run.returncode == 1, output
    assert refused and all(": docs/ documents the default run (" in line for line in refused)
    assert "Traceback" not in output
    assert not (work / "docs").exists() and not (work / "results").exists()


def refused_report(started: Path) -> str:
    """The one `report:` line of a report asked, in `started`, of the tiny run's results with
    another config (7 seeds per cell), which it refuses before writing anything."""
    run = run_snakemake(started, "--configfile=config/tiny.yaml", "--config",
                        "studies={stack96: {settings: {seeds: 7}}}", "--report",
                        "results/refused.html", check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    refused = [line for line in output.splitlines() if line.startswith("report: ")]
    assert len(refused) == 1 and "Traceback" not in output, output
    assert not list(started.rglob("refused.html"))
    return refused[0]


@pytest.mark.workflow
def test_the_report_of_a_run_refuses_another_config(tiny_run):
    assert refused_report(started_in(tiny_run)).startswith(
        "report: results/provenance.json was built with another config (here studies.")


@pytest.mark.workflow
def test_a_report_without_provenance_refuses_fits_of_another_config(tiny_run, tmp_path):
    # a target-limited run writes no results/provenance.json: the fits themselves say what
    # they were measured with (3 seeds per cell), and a report asked with 7 is refused
    work = copy_workflow(tmp_path)
    run = work / tiny_run.relative_to(started_in(tiny_run))
    shutil.copytree(tiny_run / "results/fits", run / "results/fits")
    refused = refused_report(work)
    assert refused.startswith("report: results/fits/stack96/"), refused
    assert refused.endswith(" was measured with 3 seeds per cell (this config: 7); build it "
                            "with that run's --configfile files")
