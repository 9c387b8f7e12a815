"""What a start of snakemake decides before any job (depthlab.planner.startup), from plain
values: the command line as Snakemake's own parser reads it, whether it only plans, where a
config key comes from, a named run's folder, the one-line exits and the target errors."""

from __future__ import annotations

import argparse
import json
import os

import pytest
import yaml
from conftest import ROOT
from snakemake.cli import get_argument_parser

from depthlab.planner import startup
from depthlab.vocabulary.settings import ConfigError

SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
DEFAULTS = {"threads": 1, "studies": {"s": {"settings": {"seeds": 2, "depth": 3}}}}


def start(tmp_path, argv=("snakemake",), **given) -> startup.Start:
    """A start of snakemake in `tmp_path` with the command line `argv`."""
    return startup.Start(**{
        "command": startup.command_line(list(argv), get_argument_parser),
        "as_module": False, "started_in": str(tmp_path), "cli_config": {}, "configfiles": [],
        "defaults": DEFAULTS, "defaults_file": None, **given})


@pytest.mark.parametrize("words, only", [
    (["-n"], True), (["--dry-run", "all"], True), (["--list-target-rules"], True),
    (["--lint"], True), (["--dag"], True), (["--summary"], True),
    (["--cores", "2"], False), (["--cores", "1", "all"], False), ([], False),
    (["--report", "results/report.html"], False),
])
def test_a_command_that_runs_no_job_only_plans(words, only):
    command = startup.command_line(["/venv/bin/snakemake", *words], get_argument_parser)
    assert command is not None
    assert startup.plans_only(command) is only


def test_every_plans_only_flag_is_one_snakemake_knows():
    """A flag Snakemake renamed would silently never count: each is a dest of its parser."""
    dests = {action.dest for action in get_argument_parser()._actions}
    assert set(startup.PLANS_ONLY) <= dests


def test_the_command_line_gives_targets_and_config_words():
    command = startup.command_line(
        ["snakemake", "-n", "all", "results/claims.md", "--config", "threads=2"],
        get_argument_parser)
    assert list(command.targets) == ["all", "results/claims.md"]
    assert list(command.config) == ["threads=2"]


def test_no_command_line_where_snakemake_did_not_start_this_workflow():
    """A host workflow's module, a job Snakemake spawns (python -m snakemake ...), the Python
    API, or words argparse rejects (Snakemake itself says why): no command line, no plan."""
    def rejecting():
        parser = argparse.ArgumentParser()
        parser.add_argument("--cores", type=int)
        return parser

    assert startup.command_line(["snakemake", "-n"], get_argument_parser, main=False) is None
    assert startup.command_line(["python", "-m", "snakemake", "-n"], get_argument_parser) is None
    assert startup.command_line([], get_argument_parser) is None
    assert startup.command_line(["snakemake", "--cores", "two"], rejecting) is None
    assert startup.plans_only(None) is False


def test_the_source_that_gives_a_key_wins_in_priority_order(tmp_path):
    """--config over the last --configfile over the first over its base over the defaults: a
    config error names the file and line of the first source, in that order, that holds it."""
    (tmp_path / "base.yaml").write_text("studies:\n  s:\n    settings:\n      depth: 5\n")
    (tmp_path / "first.yaml").write_text(
        "base: base.yaml\nstudies:\n  s:\n    settings:\n      seeds: 3\n      depth: 4\n")
    (tmp_path / "second.yaml").write_text("\n\nstudies:\n  s:\n    settings: {seeds: 4}\n")
    files = [str(tmp_path / "first.yaml"), str(tmp_path / "second.yaml")]
    run = start(tmp_path, cli_config={"threads": "two"}, configfiles=files)
    config = {"base": "base.yaml", "studies": {"s": {"settings": {"seeds": 4, "depth": 4}}}}
    given, merged = run.merge(config, str(tmp_path))
    assert given["threads"] == "two" and merged["studies"]["s"]["settings"] == \
        {"seeds": 4, "depth": 4}
    assert [label for label, _, _ in run.sources()] == [
        "--config", "second.yaml", "first.yaml", "base.yaml", "config/config.yaml"]

    def line(message):
        return startup.config_error_line(ConfigError(message), run.sources())

    assert line("threads='two' must be an integer") == \
        "config error: --config: threads='two' must be an integer"
    assert line("studies.s.settings.seeds=4 is wrong").startswith("config error: second.yaml:5:")
    assert line("studies.s.settings.depth=4 is wrong").startswith("config error: first.yaml:6:")
    assert line("studies.s: unknown key 'x'").startswith("config error: second.yaml:4:")
    assert line("colour: unknown") == "config error: colour: unknown"


def test_the_defaults_are_no_source_when_replaced_nor_any_in_a_host_workflow(tmp_path):
    assert [s[0] for s in start(tmp_path, replaced=True).sources()] == ["--config"]
    _, merged = start(tmp_path, replaced=True).merge({"threads": 2}, str(tmp_path))
    assert merged == {"threads": 2}
    host = start(tmp_path, as_module=True, replaced=True, cli_config={"threads": 9})
    assert host.sources() == [] and not host.replaced
    given, merged = host.merge({"threads": 2}, str(tmp_path))
    assert given == {"threads": 2} and merged["studies"] == DEFAULTS["studies"]


def test_a_base_that_names_no_file_is_one_line_naming_where(tmp_path):
    (tmp_path / "mine.yaml").write_text("threads: 1\nbase: nope.yaml\n")
    run = start(tmp_path, configfiles=[str(tmp_path / "mine.yaml")])
    with pytest.raises(SystemExit) as leaving:
        run.merge({"threads": 1, "base": "nope.yaml"}, str(tmp_path))
    assert leaving.value.code == \
        "config error: mine.yaml:2: base='nope.yaml': no config file of that name"


def test_a_base_yaml_cannot_read_is_one_line_naming_its_file_and_line(tmp_path):
    (tmp_path / "broken.yaml").write_text("studies:\n  s:\n    settings: {seeds: 3\n")
    (tmp_path / "mine.yaml").write_text("base: broken.yaml\n")
    run = start(tmp_path, configfiles=[str(tmp_path / "mine.yaml")])
    with pytest.raises(SystemExit) as leaving:
        run.merge({"base": str(tmp_path / "broken.yaml")}, str(tmp_path))
    assert leaving.value.code.startswith(
        f"config error: {tmp_path / 'broken.yaml'}:4: expected ',' or '}}'")
    assert "\n" not in leaving.value.code


def test_leaving_removes_the_empty_folders_this_start_made(tmp_path):
    made = [str(tmp_path / "runs"), str(tmp_path / "runs" / "t1")]
    os.makedirs(made[1])
    with pytest.raises(SystemExit, match="^target error: x$"):
        startup.leave("target error: x", made)
    assert not (tmp_path / "runs").exists()
    os.makedirs(made[1])
    (tmp_path / "runs" / "t1" / "kept.txt").write_text("")
    with pytest.raises(SystemExit):
        startup.leave("x", made)
    assert (tmp_path / "runs" / "t1" / "kept.txt").exists()


def test_a_named_run_is_checked_before_its_folder_is_made(tmp_path):
    assert startup.named_run({"run": {"name": "t1"}}, SCHEMA) == "t1"
    assert startup.named_run({"threads": 1}, SCHEMA) == ""
    with pytest.raises(ConfigError, match=r"run\.name='a/b'"):
        startup.named_run({"run": {"name": "a/b"}}, SCHEMA)
    run = start(tmp_path)
    with pytest.raises(SystemExit, match=r"^config error: .*run\.name='a/b'"):
        run.named_run({"run": {"name": "a/b"}}, SCHEMA)
    assert run.made == [] and not (tmp_path / "runs").exists()


def test_a_dry_run_of_a_named_run_not_yet_run_plans_in_a_throwaway_folder(tmp_path):
    planning = start(tmp_path, argv=("snakemake", "-n"))
    folder = planning.run_folder("t1")
    assert planning.throwaway and os.path.isdir(folder) and os.listdir(folder) == []
    assert not folder.startswith(str(tmp_path)) and planning.made == []
    os.rmdir(folder)  # (removed at exit too)
    # a real run works in runs/<name>/, which `workdir:` makes: an early exit removes it
    running = start(tmp_path, argv=("snakemake", "--cores", "1"))
    assert running.run_folder("t1") == str(tmp_path / "runs" / "t1")
    assert not running.throwaway
    assert running.made == [str(tmp_path / "runs"), str(tmp_path / "runs" / "t1")]
    # a dry run of a named run already run plans in its folder, as the next run would
    (tmp_path / "runs" / "t1").mkdir(parents=True)
    again = start(tmp_path, argv=("snakemake", "-n"))
    assert again.run_folder("t1") == str(tmp_path / "runs" / "t1")
    assert not again.throwaway and again.made == []
    # no named run, or a host workflow (which chooses its folders): no folder
    assert start(tmp_path).run_folder("") is None
    assert start(tmp_path, as_module=True).run_folder("t1") is None


def test_relative_paths_are_anchored_where_snakemake_was_started(tmp_path, monkeypatch):
    run_folder = tmp_path / "runs" / "t1"
    run_folder.mkdir(parents=True)
    given = {"claims": "config/claims.yaml", "corpus_path": "/abs/c.txt", "threads": "x"}
    config = dict(given)
    monkeypatch.chdir(tmp_path)
    startup.anchored(config, str(tmp_path), absolute=False)
    assert config == given  # started here: nothing moves
    monkeypatch.chdir(run_folder)
    startup.anchored(config, str(tmp_path), absolute=False)
    assert config == {**given, "claims": "../../config/claims.yaml"}
    config = dict(given)
    startup.anchored(config, str(tmp_path), absolute=True)
    assert config == {**given, "claims": str(tmp_path / "config/claims.yaml")}


OUTPUTS = ["results/figures/grad_ratio_by_depth.png", "results/claims.md"]
RULES = ["all", "fig_grad_ratio_by_depth", "claims"]


def target_error(tmp_path, *targets):
    run = start(tmp_path, argv=("snakemake", "-n", *targets))
    return run.target_error(RULES, OUTPUTS, lambda path: path in OUTPUTS, [], {}, {})


def test_a_target_path_no_rule_makes_gets_the_closest_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert target_error(tmp_path, "results/figures/grad_ratio_by_dept.png").startswith(
        "no rule makes 'results/figures/grad_ratio_by_dept.png' and there is no such file "
        "(did you mean 'results/figures/grad_ratio_by_depth.png'?)")
    assert target_error(tmp_path, "fig_grad_ratio_by_dept").startswith(
        "no rule or file 'fig_grad_ratio_by_dept' (did you mean 'fig_grad_ratio_by_depth'?)")
    assert target_error(tmp_path, "all", "results/claims.md") == ""
    assert target_error(tmp_path) == ""
    # without a command line (a host workflow, the Python API) there is nothing to judge
    assert start(tmp_path, argv=("python",)).target_error(RULES, [], lambda p: False, [], {},
                                                         {}) == ""


def test_the_report_refuses_results_built_with_another_config(tmp_path):
    provenance = tmp_path / "provenance.json"
    provenance.write_text(json.dumps({"config": {"threads": 1}}))
    reporting = start(tmp_path, argv=("snakemake", "--report", "results/report.html"))
    assert reporting.report_refusal(json.dumps({"threads": 1}), str(provenance)) == ""
    refusal = reporting.report_refusal(json.dumps({"threads": 2}), str(provenance))
    assert refusal.startswith(f"report: {provenance} was built with another config")
    assert refusal.endswith("; build it with that run's --configfile files")
    assert start(tmp_path).report_refusal(json.dumps({"threads": 2}), str(provenance)) == ""
    assert reporting.report_refusal("{}", str(tmp_path / "none.json")) == ""


def test_the_report_command_repeats_how_the_run_was_started(tmp_path):
    run = start(tmp_path, argv=("snakemake", "all", "--config", "threads=2"),
                configfiles=["config/tiny.yaml"])
    assert run.report_command("snakemake", "runs/t1/") == (
        "snakemake all --configfile=config/tiny.yaml --config threads=2 --report "
        "results/report.html (writes runs/t1/results/report.html)")


def test_config_warnings_need_a_command_line(tmp_path):
    given = {"studies": {"s": {"settings": {"depth": 4}}}}
    merged = {"studies": {"s": {"settings": {"depth": 4},
                                "arms": {"a": {"axes": {"depth": [2, 3]}}}}}}
    lines = start(tmp_path).warnings(given, merged)
    assert lines and all(line.startswith("config warning: ") for line in lines)
    assert start(tmp_path, argv=("python",)).warnings(given, merged) == []
