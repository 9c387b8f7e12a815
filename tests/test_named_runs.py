"""Named runs (`run: {name: <name>}`, PyPSA-Eur's `run: name:`): a run with a name works in
runs/<name>/ of the directory snakemake is started in (the Snakefile's `workdir:`), so that it
overwrites neither the default run's results/ nor the committed docs/; a bad name is rejected
with one line before its folder is made; without `run:` nothing moves."""

from __future__ import annotations

import re
import shutil

import pytest
import yaml
from conftest import ROOT, copy_workflow, run_snakemake

from depthlab.planner.validate import check_config
from depthlab.studies import STUDIES
from depthlab.vocabulary.settings import ConfigError

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
TINY = "config/tiny.yaml"
SMALL = {"studies": {"stack96": {
    "settings": {"d_model": 16, "heads": 4, "tokens": 4, "seeds": 2},
    "arms": {"a": {"axes": {"placement": ["pre"], "depth": [2]}}},
}}}


@pytest.mark.parametrize("run", [{}, {"name": "t1"}, {"name": "confirm_2-B"}])
def test_a_good_run_passes(run):
    assert check_config({**SMALL, "run": run}, SCHEMA, STUDIES)


@pytest.mark.parametrize("run, fragments", [
    ({"name": "a/b"}, ["run.name='a/b'", "does not match"]),
    ({"name": ".."}, ["run.name='..'"]),
    ({"name": "my run"}, ["run.name='my run'"]),
    ({"name": ""}, ["run.name=''"]),
    ({"name": 3}, ["run.name=3", "a string"]),
    ({"nme": "t1"}, ["run: unknown key 'nme'", "did you mean 'name'"]),
    ("t1", ["run='t1'", "a mapping"]),
], ids=["slash", "dots", "space", "empty", "number", "misspelt_key", "not_a_mapping"])
def test_a_bad_run_is_rejected_naming_key_and_value(run, fragments):
    with pytest.raises(ConfigError) as err:
        check_config({**SMALL, "run": run}, SCHEMA, STUDIES)
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A copy of the workflow, with the overlays below beside its config/."""
    work = copy_workflow(tmp_path_factory.mktemp("named"))
    # the config's relative paths are relative to where snakemake is started, not to the run's
    # folder: the claims file is read at parse time (a path left as given fails the dry run)
    # and the corpus by the corpus job
    named = {"run": {"name": "t1"}, "claims": "config/claims.yaml",
             "corpus_path": "data/tinyshakespeare.txt.xz"}
    (work / "t1.yaml").write_text(yaml.safe_dump(named))
    (work / "bad.yaml").write_text(yaml.safe_dump({"run": {"name": "a/b"}}))
    return work


def planned_outputs(output: str) -> set[str]:
    """Every output a dry run lists."""
    return {path for line in re.findall(r"^    output: (.*)$", output, re.M)
            for path in line.split(", ")}


@pytest.mark.workflow
def test_a_named_run_works_in_its_own_folder(workdir):
    dry = run_snakemake(workdir, "-n", "--nolock", "--configfile", TINY, "t1.yaml", check=False)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-4000:]
    planned = planned_outputs(dry.stdout)
    # the paths are the default run's, relative to runs/t1/, whose .snakemake/ is the run's own
    assert {"results/provenance.json", "results/tables/stack96.parquet"} <= planned
    assert all(p.startswith(("results/", "resources/")) for p in planned), planned
    # a dry run (or a listing) creates nothing: it plans in a throwaway folder, as empty as
    # the run's folder will be
    assert not (workdir / "runs").exists()
    # the docs_* rules (README.md, docs/) are the default run's alone
    listed = run_snakemake(workdir, "--list-target-rules", "--configfile", TINY, "t1.yaml").stdout
    assert "fig_grad_ratio_by_depth" in listed
    assert not re.search(r"^\S*docs_", listed, re.M), listed
    assert not (workdir / "runs").exists()
    # one job for real (the corpus, from `corpus_path` as given): its output and log land in
    # runs/t1/, none in the folder snakemake is started in
    run_snakemake(workdir, "resources/tinyshakespeare.txt", "--cores", "1",
                  "--configfile", TINY, "t1.yaml")
    assert (workdir / "runs/t1/resources/tinyshakespeare.txt").stat().st_size > 1_000_000
    assert "corpus from ../../data/" in (workdir / "runs/t1/logs/corpus.log").read_text()
    assert not [name for name in ("results", "logs", "resources") if (workdir / name).exists()]
    # once the run's folder exists, a dry run plans in it: the corpus is there
    again = run_snakemake(workdir, "-n", "resources/tinyshakespeare.txt", "--configfile", TINY,
                          "t1.yaml")
    assert "Nothing to be done" in again.stdout + again.stderr
    # a second name, given on the command line, sits beside it: t1's files stay as they were
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in files_of(workdir / "runs/t1")}
    run_snakemake(workdir, "resources/tinyshakespeare.txt", "--cores", "1",
                  "--configfile", TINY, "t1.yaml", "--config", 'run={"name": "t2"}')
    assert (workdir / "runs/t2/resources/tinyshakespeare.txt").read_bytes() == \
        (workdir / "runs/t1/resources/tinyshakespeare.txt").read_bytes()
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in files_of(workdir / "runs/t1")} \
        == before
    assert sorted(p.name for p in (workdir / "runs").iterdir()) == ["t1", "t2"]


def files_of(folder):
    """Every file under `folder` but Snakemake's own bookkeeping (.snakemake/)."""
    return [p for p in folder.rglob("*") if p.is_file() and ".snakemake" not in p.parts]


@pytest.mark.workflow
def test_a_bad_name_prints_one_line_and_makes_no_folder(workdir):
    run = run_snakemake(workdir, "-n", "--nolock", "--configfile", TINY, "bad.yaml", check=False)
    output = run.stdout + run.stderr
    errors = [line for line in output.splitlines() if "error" in line.lower()]
    assert run.returncode == 1, output
    assert errors == [
        "config error: bad.yaml:2: run.name='a/b': 'a/b' does not match '^[A-Za-z0-9_-]+$'"]
    assert "Traceback" not in output
    assert not (workdir / "runs/a").exists()


@pytest.mark.workflow
def test_without_a_name_nothing_moves(tmp_path):
    work = copy_workflow(tmp_path)
    (work / "unnamed.yaml").write_text("run: null\n")  # the tiny study without its name
    dry = run_snakemake(work, "-n", "--nolock", "--configfile", TINY, "unnamed.yaml",
                        check=False)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-4000:]
    assert {"results/provenance.json", "results/tables/stack96.parquet"} <= \
        planned_outputs(dry.stdout)
    assert not (work / "runs").exists()
    assert (work / ".snakemake").is_dir()


@pytest.mark.workflow
def test_the_scenarios_example_plans_each_scenario_in_its_own_folder(tmp_path):
    """examples/scenarios/Snakefile (config/README.md): depthlab as a module per scenario, one
    command; each scenario's jobs under its own prefix, and nothing made by the dry run."""
    work = copy_workflow(tmp_path)
    (work / "examples").mkdir()
    shutil.copytree(ROOT / "examples/scenarios", work / "examples/scenarios")
    done = run_snakemake(work, "-n", "--cores", "1", "-s", "examples/scenarios/Snakefile")
    counts = dict(re.findall(r"^(seeds[34]_measure)\s+(\d+)$", done.stdout, re.M))
    assert counts["seeds3_measure"] == counts["seeds4_measure"] != "0", done.stdout
    for name in ("seeds3", "seeds4"):
        assert f"runs/{name}/results/claims.md" in done.stdout
    assert not (work / "runs").exists() and not (work / "results").exists()
