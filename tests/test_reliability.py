"""Reliability: determinism, interruption, stale results, numerical faults, provenance.

Workflow tests run Snakemake in a temporary copy of the repository on small configs they write
(study `stack96` with one arm `a`, which no target reads: `rule all` builds its shards, its
table and provenance.json).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from conftest import (
    ROOT,
    SNAKEMAKE,
    copy_workflow,
    run_snakemake,
    snakemake_env,
    started_in,
    whole,
)

from depthlab.core import io
from depthlab.core.measure import measure_job
from depthlab.core.records import NonFiniteError
from depthlab.planner import provenance
from depthlab.planner.codehash import MEASURE_CODE, PACKAGE_DIR, TRAIN_CODE
from depthlab.planner.grid import study_jobs


def small_config(depths=(2, 3), placements=("pre", "post"), **settings) -> dict:
    """Study stack96 with one arm `a` (no target reads it): one job per placement, depths
    packed."""
    base = {"d_model": 16, "heads": 4, "tokens": 8, "seeds": 2, **settings}
    arm = {"axes": {"placement": list(placements), "depth": list(depths)}, "pack": ["depth"]}
    return {"threads": 1, "studies": {"stack96": {"settings": base, "arms": {"a": arm}}}}


def write_config(workdir: Path, config: dict, name: str = "test.yaml") -> str:
    """Write `config` in its key order (axis order makes cell labels and job ids)."""
    (workdir / name).write_text(yaml.safe_dump(config, sort_keys=False))
    return name


def assert_same_parquet(a: Path, b: Path) -> None:
    """Same contents bit for bit (values, dtypes, column order) and same provenance."""
    pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), check_exact=True)
    assert io.read_meta(a) == io.read_meta(b)


def planned_jobs(dry_run_output: str) -> dict[str, int]:
    """rule -> job count from the 'Job stats' table of `snakemake -n` ({} if nothing to do)."""
    counts = {}
    for line in dry_run_output.splitlines():
        match = re.fullmatch(r"(\w+)\s+(\d+)", line.strip())
        if match and match[1] != "total":
            counts[match[1]] = int(match[2])
    return counts


def copy_codehash(workdir: Path):
    """The codehash module of a workflow copy (hashes that copy's src/depthlab)."""
    spec = importlib.util.spec_from_file_location(
        f"codehash_{abs(hash(workdir))}", workdir / "src/depthlab/planner/codehash.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def threads_one(fn, *args):
    """fn(*args) with torch on one thread, as the workflow runs measure jobs here."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn(*args)
    finally:
        torch.set_num_threads(before)


# 1. determinism


@pytest.mark.workflow
def test_same_config_gives_the_same_numbers(tiny_run, tmp_path):
    """Two shards of config/tiny.yaml made again from the same code equal the session's run."""
    shards = sorted((tiny_run / "results/runs/stack96/grad").glob("*.parquet"))[:2]
    assert len(shards) == 2
    paths = [str(p.relative_to(tiny_run)) for p in shards]
    again = copy_workflow(tmp_path, source=started_in(tiny_run))
    # targets name paths in the named run's folder (runs/tiny/)
    run_snakemake(again, *paths, "--cores", "2", "--configfile", "config/tiny.yaml")
    folder = again / tiny_run.relative_to(started_in(tiny_run))
    for path in paths:
        assert_same_parquet(tiny_run / path, folder / path)


def test_adding_a_depth_leaves_existing_cells_unchanged():
    """Seeds are seed_offset + index (depthlab.vocabulary.settings.run_seed), not a function of
    the grid."""
    before = study_jobs(small_config(depths=(2, 3)))
    after = study_jobs(small_config(depths=(4, 2, 3)))
    for old, new in zip(before, after, strict=True):
        old_frame = threads_one(measure_job, old)
        new_frame = threads_one(measure_job, new)
        for label, cell in old_frame.groupby("label"):
            kept = new_frame[new_frame["label"] == label].reset_index(drop=True)
            pd.testing.assert_frame_equal(cell.reset_index(drop=True), kept, check_exact=True)
        assert set(new_frame["depth"]) == {2, 3, 4}


# 2. interruption


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.workflow
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path):
    # one job: 2 cells x 4 seeds, one seed per pass, so it logs progress for a few seconds
    config = small_config(depths=(32, 48), placements=("pre",), d_model=32, tokens=64, seeds=4,
                          seed_batch=1)
    work = copy_workflow(tmp_path)
    name = write_config(work, config)
    logs = work / "logs/measure/stack96/a"
    with open(work / "killed.out", "w") as out:
        proc = subprocess.Popen(
            [SNAKEMAKE, "--cores", "1", *whole(name)], cwd=work, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True, env=snakemake_env(),
        )
    try:
        # a measure job has finished its first seed and is still running
        wait_for(lambda: any("done" in p.read_text() for p in logs.glob("*.log")), 300,
                 "a measure job to start")
        running = [p.stem for p in logs.glob("*.log") if "done" in p.read_text()]
        assert not (work / f"results/runs/stack96/a/{running[0]}.parquet").exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # Snakemake and its job: one process group
        proc.wait()

    # nothing that looks complete is partial: every *.parquet reads, temp files are dot-named
    for path in (work / "results").rglob("*"):
        if path.suffix == ".parquet":
            pq.read_table(path)
        elif path.is_file():
            assert path.name.startswith(".") and path.name.endswith(".tmp"), path

    # the documented resume command (README, Reproducibility)
    run_snakemake(work, "--unlock", *whole(name))
    run_snakemake(work, "--cores", "1", *whole(name))

    config = yaml.safe_load((work / name).read_text())
    expected = pd.concat([threads_one(measure_job, j) for j in study_jobs(config)],
                         ignore_index=True)
    table = pd.read_parquet(work / "results/tables/stack96.parquet")
    pd.testing.assert_frame_equal(table, expected, check_exact=True, check_dtype=False)
    assert not list((work / "results").rglob("*.tmp"))


def test_atomic_path_leaves_no_file_when_killed_mid_write(tmp_path):
    target = tmp_path / "out.parquet"
    code = (
        "import os, signal, sys\n"
        "from depthlab.core.io import atomic_path\n"
        "with atomic_path(sys.argv[1]) as tmp:\n"
        "    tmp.write_bytes(b'PAR1' * 1000)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(target)], check=False)
    assert proc.returncode == -signal.SIGKILL
    assert not target.exists()
    leftovers = list(tmp_path.iterdir())
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".out.parquet.")
    assert leftovers[0].suffix == ".tmp"


def test_atomic_path_on_error_and_success(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with pytest.raises(RuntimeError), io.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert list(target.parent.iterdir()) == []
    io.write_text("whole", target)
    assert target.read_text() == "whole"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # readable like any other output


# 3. stale results


def edit_function(path: Path, name: str) -> None:
    """Insert a statement at the top of function `name`'s body (after its docstring)."""
    lines = path.read_text().splitlines(keepends=True)
    fn = next(n for n in ast.parse("".join(lines)).body
              if isinstance(n, ast.FunctionDef) and n.name == name)
    first = fn.body[0]
    indent = " " * first.col_offset
    lines.insert(first.end_lineno, f"{indent}_edited = True  # a test's edit\n")
    path.write_text("".join(lines))


def first_probe(probes_py: Path) -> str:
    """The name of the first function registered by `@probe(...)`."""
    return next(n.name for n in ast.parse(probes_py.read_text()).body
                if isinstance(n, ast.FunctionDef)
                and any(getattr(getattr(d, "func", None), "id", "") == "probe"
                        for d in n.decorator_list))


@pytest.mark.workflow
def test_probe_edit_reruns_measurements_figure_edit_does_not(tmp_path):
    work = copy_workflow(tmp_path)
    name = write_config(work, small_config(depths=(2,), placements=("pre",)))
    run_snakemake(work, "--cores", "1", *whole(name))
    dry = ("-n", *whole(name))
    assert planned_jobs(run_snakemake(work, *dry).stdout) == {}

    for module in ("analysis/style", "studies/stack96/figures"):
        path = work / f"src/depthlab/{module}.py"
        edit_function(path, next(n.name for n in ast.parse(path.read_text()).body
                                 if isinstance(n, ast.FunctionDef)))
    assert "measure" not in planned_jobs(run_snakemake(work, *dry).stdout)

    before = io.read_meta(work / "results/runs/stack96/a/placement-pre.parquet")
    probes = work / "src/depthlab/core/probes.py"
    edit_function(probes, first_probe(probes))
    assert planned_jobs(run_snakemake(work, *dry).stdout).get("measure") == 1

    # the job imports the copy's edited package (the one hashed), not the editable install
    shard = "results/runs/stack96/a/placement-pre.parquet"
    run_snakemake(work, shard, "--cores", "1", *whole(name))
    after = io.read_meta(work / shard)
    assert after["measure_code_hash"] != before["measure_code_hash"]
    assert after["measure_code_hash"] == copy_codehash(work).code_hash(MEASURE_CODE)


def imported_files(path: str) -> set[str]:
    """The package files (paths relative to it) that the module at `path` imports,
    transitively, itself included (read from the source)."""
    seen, todo = set(), [path]
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        for node in ast.walk(ast.parse((PACKAGE_DIR / rel).read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("depthlab"):
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("depthlab.")]
            for name in names:
                file = Path(*name.split(".")[1:]).with_suffix(".py")
                if name != "depthlab" and (PACKAGE_DIR / file).is_file():
                    todo.append(str(file))
    return seen


def test_code_hashes_cover_every_module_a_measurement_or_training_imports():
    assert imported_files("core/measure.py") <= set(MEASURE_CODE)
    assert imported_files("core/train.py") <= set(TRAIN_CODE)


# 5. numerical faults


def test_non_finite_value_names_study_cell_and_seed():
    job = study_jobs(small_config(depths=(3,), dtype="float32", out_scale=1e30))[0]
    with pytest.raises(NonFiniteError, match=r"^stack96/a/placement-pre_depth-3: non-finite \w+ "
                                              r"at layer \d+ for seed \d+$"):
        threads_one(measure_job, job)


@pytest.mark.workflow
def test_non_finite_job_fails_without_output(tmp_path):
    work = copy_workflow(tmp_path)
    config = small_config(depths=(3,), placements=("pre",), dtype="float32", out_scale=1e30)
    name = write_config(work, config)
    run = run_snakemake(work, "--cores", "1", *whole(name), check=False)
    assert run.returncode != 0
    # in the job's log, which Snakemake prints (profiles/default: show-failed-logs)
    message = r"NonFiniteError: stack96/a/placement-pre_depth-3: non-finite \w+ at layer \d+ for " \
        r"seed \d+"
    assert re.search(message, (work / "logs/measure/stack96/a/placement-pre.log").read_text())
    assert re.search(message, run.stdout + run.stderr)
    assert not list((work / "results/runs").rglob("*.parquet"))
    assert not list((work / "results/runs").rglob("*.tmp"))


# 6. provenance


@pytest.mark.workflow
def test_every_parquet_carries_provenance(tiny_run):
    hashes = copy_codehash(started_in(tiny_run))
    files = sorted((tiny_run / "results").rglob("*.parquet"))
    assert files
    for path in files:
        meta = io.read_meta(path)
        assert set(io.PROVENANCE_KEYS) <= set(meta), path
        assert meta["torch_version"] == torch.__version__
        assert meta["python_version"] == platform.python_version()
        assert meta["depthlab_code_hash"] == hashes.code_hash()
        assert meta["measure_code_hash"] == hashes.code_hash(MEASURE_CODE)
        assert re.fullmatch(r"[0-9a-f]{16}", meta["config_hash"]), path
        if "runs" in path.relative_to(tiny_run).parts:  # a shard (results/runs/)
            frame = pd.read_parquet(path, columns=["dtype", "device"])
            assert meta["dtype"] == ",".join(sorted(set(frame["dtype"])))
            assert meta["device"] == ",".join(sorted(set(frame["device"])))


@pytest.mark.workflow
def test_tables_and_fits_inherit_their_inputs_config(tiny_run):
    """A study's table and each arm's fit carry the hash of their shards' config hashes (each
    job's own cells; one hash where they agree) and the dtypes and devices their shards' rows
    were computed in (read from the rows, not from metadata)."""

    def combined(paths) -> str:
        hashes = sorted({io.read_meta(p)["config_hash"] for p in paths})
        # the documented rule, stated here independently of io: sha256 of the sorted hashes
        # joined by commas, its first 16 hex digits
        joined = ",".join(hashes).encode()
        return hashes[0] if len(hashes) == 1 else hashlib.sha256(joined).hexdigest()[:16]

    for study in ("stack96",):
        shards = sorted((tiny_run / f"results/runs/{study}").rglob("*.parquet"))
        rows = pd.concat([pd.read_parquet(p, columns=["dtype", "device"]) for p in shards])
        table = io.read_meta(tiny_run / f"results/tables/{study}.parquet")
        assert table["config_hash"] == combined(shards)
        assert table["dtype"] == ",".join(sorted(set(rows["dtype"])))
        assert table["device"] == ",".join(sorted(set(rows["device"])))
        assert table["shards"] == str(len(shards))
        for arm_fit in sorted((tiny_run / f"results/fits/{study}").glob("*.parquet")):
            arm = arm_fit.stem
            arm_shards = sorted((tiny_run / f"results/runs/{study}/{arm}").glob("*.parquet"))
            arm_rows = pd.concat([pd.read_parquet(p, columns=["dtype"]) for p in arm_shards])
            fit = io.read_meta(arm_fit)
            assert fit["config_hash"] == combined(arm_shards), arm
            assert fit["dtype"] == ",".join(sorted(set(arm_rows["dtype"]))), arm


@pytest.mark.workflow
def test_provenance_json_summarises_the_run(tiny_run):
    summary = json.loads((tiny_run / "results/provenance.json").read_text())
    config = summary["config"]
    assert summary["config_hash"] == io.config_hash(json.dumps(config, sort_keys=True))
    assert set(config["studies"]) == set(yaml.safe_load(
        (started_in(tiny_run) / "config/tiny.yaml").read_text())["studies"])
    listed = set(summary["files"])
    for study in config["studies"]:
        shards = {str(p.relative_to(tiny_run))
                  for p in (tiny_run / f"results/runs/{study}").rglob("*.parquet")}
        assert shards and shards <= listed, study
        assert f"results/tables/{study}.parquet" in listed
    assert summary["summary"]["torch_version"] == [torch.__version__]
    assert summary["summary"]["python_version"] == [platform.python_version()]


def test_git_commit_when_available():
    commit = provenance.git_commit()
    if (ROOT / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{40}", commit)
    else:
        assert commit == ""


def test_write_parquet_refuses_a_file_without_provenance(tmp_path):
    with pytest.raises(ValueError, match="provenance metadata lacks"):
        io.write_parquet(pd.DataFrame({"x": [1.0]}), tmp_path / "x.parquet", {"dtype": "f"})
    assert not list(tmp_path.iterdir())
