"""What the workflow decides while Snakemake parses it (depthlab.planner.load), with plain
stand-ins for Snakemake's objects (its `workflow`, `validate`, `source_path`, `report`, DAG and
rules): the config merged and checked, the jobs and their input functions as the rules read
them, a host workflow's and a URL's differences, and the one-line refusals before any job."""

from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import ROOT
from snakemake.cli import get_argument_parser

from depthlab.claims.schema import load_claims
from depthlab.planner import load
from depthlab.planner.codehash import MEASURE_CODE, TRAIN_CODE, code_hash
from depthlab.planner.overlay import config_of
from depthlab.studies import STUDIES, TARGETS
from depthlab.vocabulary.corpus import SHIPPED

TINY = yaml.safe_load((ROOT / "config/tiny.yaml").read_text())
UNNAMED = {**TINY, "run": None}  # the tiny study in results/ (a null drops the run's name)


class Module:
    """A modifier: the main workflow's (no base Snakefile) or a host's module's."""

    def __init__(self, main: bool):
        self.main = main

    def is_main_snakefile(self) -> bool:
        return self.main


def workflow(basedir=ROOT / "workflow", main=True, configfiles=(), rules=(),
             dag=None) -> SimpleNamespace:
    """A stand-in for Snakemake's `workflow` with what the plan reads of it."""
    return SimpleNamespace(
        current_basedir=basedir, modifier=Module(main), dryrun=False,
        config_settings=SimpleNamespace(config={}, configfiles=list(configfiles),
                                        replace_workflow_config=False),
        output_settings=SimpleNamespace(verbose=False), configfiles=list(configfiles),
        rules=list(rules), dag=dag)


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A start in `tmp_path`: the environment and sys.path the plan changes restored after."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEPTHLAB_STARTED_IN", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", "elsewhere")
    monkeypatch.setattr(sys, "path", list(sys.path))
    return tmp_path


def plan_of(config: dict, argv=("snakemake",), source=None, validated=None, **given) -> load.Plan:
    """A Plan of `config` (as Snakemake read it from the --configfile files), steps 1 and 2."""
    def validate(config, schema):
        (validated if validated is not None else []).append(schema)

    plan = load.Plan(workflow(**given), dict(config), list(argv), get_argument_parser,
                     validate, source or (lambda path: pytest.fail(f"source_path({path})")))
    if not plan.run_folder:
        plan.plan(STUDIES, TARGETS, load_claims)
    return plan


def wildcards(key: tuple[str, str, str]) -> SimpleNamespace:
    return SimpleNamespace(study=key[0], arm=key[1], job=key[2])


@pytest.mark.slow
def test_a_checkout_plans_the_config_with_its_own_files(here):
    validated = []
    plan = plan_of(UNNAMED, validated=validated)
    assert plan.depthlab == str(ROOT) and plan.documents and not plan.as_module
    assert os.environ["PYTHONPATH"] == os.pathsep.join([f"{ROOT}/src", "elsewhere", str(here)])
    assert validated == [f"{ROOT}/workflow/schemas/config.schema.yaml"]
    # the config as merged onto config/config.yaml, its claims file relative to the run's folder
    tiny = config_of(ROOT, "config/tiny.yaml")  # with the default studies it does not name
    assert set(plan.config["studies"]) == set(tiny["studies"]) and "run" not in plan.config
    assert plan.config["claims"] == os.path.relpath(ROOT / "config/claims.yaml")
    assert plan.run_folder is None and plan.run_prefix == ""
    assert plan.measure_hash == code_hash(MEASURE_CODE)
    assert plan.train_hash == code_hash(TRAIN_CODE)
    assert plan.shipped_corpus == f"{ROOT}/{SHIPPED}"
    assert plan.frozen == os.path.join(os.path.dirname(plan.config["claims"]), "frozen.yaml")
    assert plan.shipped_configs and json.loads(plan.config_text) == plan.config
    assert plan.training and plan.training_studies == "|".join(
        sorted({study for study, _ in plan.training}))
    assert plan.calibrated_arms == ("|".join(sorted({arm for _, arm in plan.calibrated}))
                                    or "(?!)")


def test_the_rules_functions_are_the_jobs_and_plain_functions(here):
    """What the rules read of a job, by its wildcards; each a plain function whose signature
    Snakemake reads at once (the name of each argument is what it hands over)."""
    plan = plan_of(UNNAMED)
    key, job = next((k, j) for k, j in plan.jobs.items() if k[:2] in plan.training)
    assert plan.job_cells(wildcards(key)) == job.cells_json()
    assert json.loads(plan.job_training(wildcards(key)))
    assert plan.train_runtime(wildcards(key), 1) >= 1 and plan.train_mem_mb(wildcards(key), 1)
    # a measure job that copies cells from other jobs' shards, and one that copies none
    copier = next(k for k in plan.jobs if plan.reused.get(k))
    owners = plan.job_owners(wildcards(copier))
    assert owners and set(owners) <= {job.shard for job in plan.jobs.values()}
    assert json.loads(plan.job_reused(wildcards(copier))).keys() == plan.reused[copier].keys()
    measured = next(k for k in plan.jobs if k[:2] not in plan.training and not plan.reused.get(k))
    assert plan.job_owners(wildcards(measured)) == []
    assert plan.job_reused(wildcards(measured)) == "{}"
    assert plan.measure_priority(wildcards(measured)) >= 0
    assert json.loads(plan.arm_axes(wildcards(measured)))
    assert plan.study_code(wildcards(measured)) == plan.study_hash[measured[0]]
    for name, arguments in [("job_cells", ["wildcards"]), ("measure_priority", ["wildcards"]),
                            ("measure_mem_mb", ["wildcards", "attempt"])]:
        function = getattr(plan, name)
        assert inspect.isfunction(function) and getattr(plan, name) is function
        assert "__signature__" in vars(function)
        assert list(inspect.signature(function).parameters) == arguments


def test_a_host_workflow_keeps_its_console_default_target_and_folders(here):
    plan = plan_of(TINY, argv=["snakemake", "-n"], main=False)
    assert plan.as_module and plan.start.command is None and plan.console is None
    # its named run is the host's business: no folder, no prefix, no docs_* rules
    assert plan.run_name == "tiny" and plan.run_folder is None and plan.run_prefix == ""
    assert not plan.documents
    plan.summary(lambda *args: pytest.fail("a host's run ends with its own lines"))


def test_a_workflow_loaded_by_url_reads_its_files_through_source_path(here):
    asked = []

    def source(path):
        asked.append(path)
        return os.path.normpath(ROOT / "workflow" / path)

    plan = plan_of(UNNAMED, source=source, basedir=object())
    assert plan.depthlab is None and plan.defaults_file is None and not plan.documents
    assert os.environ["PYTHONPATH"] == os.pathsep.join(["elsewhere", str(here)])
    assert asked == ["schemas/config.schema.yaml", "../config/config.yaml",
                     "../config/claims.yaml", f"../{SHIPPED}"]
    assert plan.shipped_configs == {} and plan.shipped_corpus == str(ROOT / SHIPPED)


def test_a_bad_config_is_one_line_before_any_job(here):
    bad = {**UNNAMED, "studies": {"stack96": {"settings": {"depht": 3}}}}
    with pytest.raises(SystemExit) as exit_:
        plan_of(bad)
    message = str(exit_.value)
    assert message.startswith("config error: ") and "depht" in message and "\n" not in message


def test_a_named_run_works_in_its_folder_and_a_dry_run_plans_elsewhere(here):
    plan = plan_of(TINY)
    assert plan.run_folder == str(here / "runs/tiny") and plan.run_prefix == "runs/tiny/"
    assert not plan.documents
    dry = plan_of(TINY, argv=["snakemake", "-n"])
    assert not dry.run_folder.startswith(str(here)) and dry.start.throwaway


class Output(str):
    def contains_wildcard(self) -> bool:
        return "{" in self


def rule(name: str, *outputs: str) -> SimpleNamespace:
    return SimpleNamespace(name=name, output=[Output(o) for o in outputs],
                           is_producer=lambda path: path in outputs)


@pytest.mark.slow
def test_last_checks_refuse_a_mistyped_target_in_one_line(here):
    plan = plan_of(UNNAMED, argv=["snakemake", "fig_grad_ratio_by_dept"])
    plan.workflow.rules = [rule("all"), rule("fig_grad_ratio_by_depth", "results/figures/a.png")]
    with pytest.raises(SystemExit) as exit_:
        plan.last_checks()
    assert str(exit_.value).startswith("target error: ") and "fig_grad_ratio_by_depth" in str(
        exit_.value)
    plan_of(UNNAMED, argv=["snakemake", "all"], rules=[rule("all")]).last_checks()


@pytest.mark.slow
def test_last_checks_refuse_a_report_of_results_built_with_another_config(here):
    (here / "results").mkdir()
    (here / "results/provenance.json").write_text(json.dumps({"config": {"threads": 99}}))
    plan = plan_of(UNNAMED, argv=["snakemake", "--report", "results/report.html"])
    with pytest.raises(SystemExit) as exit_:
        plan.last_checks()
    assert str(exit_.value).startswith(
        "report: results/provenance.json was built with another config")


def test_the_shards_measured_again_are_those_whose_params_changed(here):
    def job(rule_name, output, changed=(), code="c1"):
        return SimpleNamespace(rule=SimpleNamespace(name=rule_name), output=[output],
                               params=SimpleNamespace(code=code), changed=changed)

    jobs = [job("measure", "a.parquet", ["cells", "c2"], code="c2"),  # its cells changed
            job("measure", "b.parquet", ["c2"], code="c2"),  # only its code hash
            job("measure", "c.parquet"),  # not for its params
            job("fit", "d.parquet", ["x"])]
    dag = SimpleNamespace(
        needrun_jobs=lambda: jobs,
        reason=lambda j: SimpleNamespace(params_changed=j.changed and SimpleNamespace(
            only_new=j.changed)))
    plan = plan_of(UNNAMED, dag=dag)
    assert plan.remeasured_shards() == [("a.parquet", True), ("b.parquet", False)]


def test_a_target_s_shown_output_goes_to_the_report_under_its_note():
    target = next(t for t in TARGETS if t.kind == "figure")
    outputs = load.Plan.report_outputs(target, lambda path, **how: ("report", path, how))
    assert outputs["png"] == ("report", target.outputs["png"], {
        "caption": "../report/target.rst", "category": target.study,
        "subcategory": "figures", "labels": {"name": target.name, "type": "figure"}})
    assert {k: v for k, v in outputs.items() if k != "png"} == {
        k: v for k, v in target.outputs.items() if k != "png"}


def test_existing_files_and_file_hashes(tmp_path):
    (tmp_path / "a").write_text("x")
    files = [str(tmp_path / "a"), str(tmp_path / "b")]
    assert load.existing(files)(None) == files[:1]
    assert len(load.file_hash(files[0])) == 16 and load.file_hash(files[1]) == ""
    assert load.checkout(Path("/x/workflow")) == "/x" and load.checkout(object()) is None


def test_the_summary_names_the_jobs_the_ledger_and_the_report(here, capsys):
    plan = plan_of(UNNAMED, argv=["snakemake", "--cores", "1"])
    asked = []
    plan.summary(lambda *args: asked.append(args) or "the ledger's news")
    assert asked[0][:2] == ("results/claims.parquet", "results/claims.md")
    assert "the ledger's news" in capsys.readouterr().err
