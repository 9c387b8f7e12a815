"""A config as what it changes: files and --config values merged key by key onto
config/config.yaml, a null removing a key; the shipped configs are such overlays."""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import ROOT, copy_workflow, run_snakemake

from depthlab.planner.grid import study_jobs
from depthlab.planner.overlay import combined, config_of, overlay, typed, with_base
from depthlab.planner.validate import check_config
from depthlab.studies import STUDIES

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
DEFAULT = yaml.safe_load((ROOT / "config/config.yaml").read_text())


def test_overlay_merges_mappings_replaces_the_rest_and_null_removes():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 2, "c": {"z": 3}}
    change = {"a": {"y": [3], "w": {"v": None, "u": 4}}, "b": None, "d": 5}
    assert overlay(base, change) == {"a": {"x": 1, "y": [3], "w": {"u": 4}},
                                     "c": {"z": 3}, "d": 5}
    assert base == {"a": {"x": 1, "y": [1, 2]}, "b": 2, "c": {"z": 3}}  # untouched
    assert overlay(base, {}) == base and overlay({}, base) == base
    assert overlay({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}


def test_config_files_combine_as_snakemake_merges_them_keeping_nulls():
    first = {"a": {"x": 1, "y": 2}, "b": {"z": 3}}
    then = {"a": {"y": None}, "b": 4}
    assert combined(first, then) == {"a": {"x": 1, "y": None}, "b": 4}
    assert overlay({"a": {"y": 9, "q": 1}}, combined(first, then)) == {"a": {"x": 1, "q": 1},
                                                                      "b": 4}


def test_a_config_with_a_base_changes_that_file_s_config(tmp_path):
    (tmp_path / "mid.yaml").write_text("studies: {stack96: {settings: {seeds: 5, tokens: 9}}}\n")
    (tmp_path / "top.yaml").write_text(
        f"base: {tmp_path / 'mid.yaml'}\nstudies: {{stack96: {{settings: {{seeds: 2}}}}}}\n")
    config = config_of(ROOT, tmp_path / "top.yaml")
    assert "base" not in config
    settings = config["studies"]["stack96"]["settings"]
    assert (settings["seeds"], settings["tokens"]) == (2, 9)
    assert {k: v for k, v in config.items() if k != "studies"} == {
        k: v for k, v in DEFAULT.items() if k != "studies"}
    with pytest.raises(ValueError, match=r"^base='nope.yaml': no config file of that name$"):
        with_base({"base": "nope.yaml"}, ROOT, DEFAULT)
    (tmp_path / "loop.yaml").write_text(f"base: {tmp_path / 'loop.yaml'}\n")
    with pytest.raises(ValueError, match="a chain of bases that comes back to it"):
        config_of(ROOT, tmp_path / "loop.yaml")


def test_command_line_scalars_are_read_as_yaml():
    # what Snakemake's parser gives for --config 'studies={stack96: {settings: {seeds: 5}}}'
    given = {"studies": {"stack96": {"settings": {"seeds": "5", "out_scale": "1.5",
                                                  "causal": "true", "placement": "pre",
                                                  "block": "my_blocks:make"}}},
             "x": ["6", "null"]}
    assert typed(given) == {"studies": {"stack96": {"settings": {
        "seeds": 5, "out_scale": 1.5, "causal": True, "placement": "pre",
        "block": "my_blocks:make"}}}, "x": [6, None]}


def test_a_file_holding_one_setting_is_the_default_config_with_that_setting(tmp_path):
    (tmp_path / "my.yaml").write_text("studies: {stack96: {settings: {seeds: 5}}}\n")
    config = config_of(ROOT, tmp_path / "my.yaml")
    assert config["studies"]["stack96"]["settings"]["seeds"] == 5
    config["studies"]["stack96"]["settings"]["seeds"] = DEFAULT["studies"]["stack96"][
        "settings"]["seeds"]
    assert config == DEFAULT
    jobs = check_config(config_of(ROOT, tmp_path / "my.yaml"), SCHEMA, STUDIES)
    assert len(jobs) == len(study_jobs(DEFAULT))


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "config").glob("*.yaml")
                                        if p.name != "claims.yaml"))
def test_every_shipped_config_merged_onto_the_defaults_is_valid(name):
    config = config_of(ROOT, f"config/{name}")
    # the GPU configs name device cuda: checked here as on a cluster's login node
    assert check_config({**config, "check_device": False}, SCHEMA, STUDIES)


def test_the_tiny_config_shrinks_the_default_and_the_fixes_config_replaces_its_studies():
    tiny, fixes = config_of(ROOT, "config/tiny.yaml"), config_of(ROOT, "config/fixes.yaml")
    assert set(tiny["studies"]) == set(DEFAULT["studies"])
    for study, spec in tiny["studies"].items():
        assert set(spec["arms"]) <= set(DEFAULT["studies"][study]["arms"]) | {"nofinalnorm"}
    cells = lambda c: sum(len(j.cells) for j in study_jobs(c))  # noqa: E731
    assert 0 < cells(tiny) < cells(DEFAULT) / 3
    assert set(fixes["studies"]) == {"fixes", "fixestraining"}
    # the overlay holds only what shrinks: far shorter than the config it changes
    assert len((ROOT / "config/tiny.yaml").read_text().splitlines()) < 110


@pytest.mark.workflow
def test_snakemake_runs_a_one_setting_file_and_a_typed_command_line_value(tmp_path):
    work = copy_workflow(tmp_path)
    (work / "my.yaml").write_text("studies: {stack96: {settings: {seeds: 5}}}\n")
    stats = re.compile(r"^total\s+(\d+)$", re.M)
    default = run_snakemake(work, "-n", "fig_grad_ratio_by_depth").stdout
    mine = run_snakemake(work, "-n", "fig_grad_ratio_by_depth", "--configfile", "my.yaml")
    assert stats.search(mine.stdout)[1] == stats.search(default)[1]
    typed_run = run_snakemake(work, "-n", "fig_grad_ratio_by_depth", "--config",
                              "studies={stack96: {settings: {seeds: 5}}}", check=False)
    assert typed_run.returncode == 0, typed_run.stderr
    wrong = run_snakemake(work, "-n", "--config", "studies={stack96: {settings: {seeds: x}}}",
                          check=False)
    assert wrong.returncode == 1 and "studies.stack96" in wrong.stdout + wrong.stderr
    # a base that names no file: one line naming it, before any job
    (work / "based.yaml").write_text("base: config/nope.yaml\n")
    based = run_snakemake(work, "-n", "--configfile", "based.yaml", check=False)
    output = based.stdout + based.stderr
    assert based.returncode == 1 and "Traceback" not in output
    assert [line for line in output.splitlines() if "error" in line.lower()] == [
        "config error: base='config/nope.yaml': no config file of that name"]
