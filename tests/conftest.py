"""Shared fixtures: small settings, and the tiny workflow run once per session."""

from __future__ import annotations

import os

# each pytest-xdist worker takes its share of the cores for its torch and BLAS threads (and so
# do the runs it starts): two workers of two threads each on two cores spent a third more CPU
# time on the same tests (threads waiting for a core); set before torch or numpy is imported
if workers := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")):
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))

import atexit
import contextlib
import copy
import fcntl
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from depthlab.core.corpus import fetch_corpus
from depthlab.planner.cost import pass_plan
from depthlab.planner.overlay import config_of
from depthlab.studies import TARGETS
from depthlab.vocabulary.corpus import CORPUS_SHA256, SHIPPED

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
# the training corpus shipped with the project (compressed), and a small one of the tests' own
SHIPPED_CORPUS = ROOT / SHIPPED
SMALL_CORPUS = ROOT / "tests" / "data" / "corpus_small.txt"


# Snakemake imports every installed executor plugin when it starts; where Slurm is installed
# (tests/test_slurm.py installs it in CI) the Slurm plugin asks `scontrol show config` for
# MinJobAge, which waits about 9 s for a controller that is not running. The tests' runs (but
# the one on a real Slurm cluster, tests/test_slurm.py) find this `scontrol` first: it answers
# at once, as on a machine without Slurm.
STAND_IN = "depthlab-no-slurmctld-"  # the name of a NO_CONTROLLER folder starts so
NO_CONTROLLER = Path(tempfile.mkdtemp(prefix=STAND_IN))
(NO_CONTROLLER / "scontrol").write_text("#!/bin/sh\nexit 1\n")
(NO_CONTROLLER / "scontrol").chmod(0o755)
atexit.register(shutil.rmtree, NO_CONTROLLER, ignore_errors=True)
# the same wait in each pytest process, which imports Snakemake's command line (its plugins) as
# it collects tests/test_load.py and test_startup.py: NO_CONTROLLER first on the PATH while
# pytest collects, the PATH as it was after (pytest_collection_finish). pytest-xdist's workers
# inherit the PATH of the process that starts them, which never collects: its NO_CONTROLLER is
# left out too (a worker's Slurm test ran the stand-in's `scontrol ping`: CI at d5037d4)
PATH = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                       if not Path(p).name.startswith(STAND_IN))
os.environ["PATH"] = f"{NO_CONTROLLER}{os.pathsep}{PATH}"


def pytest_collection_finish(session) -> None:
    os.environ["PATH"] = PATH


def snakemake_env() -> dict[str, str]:
    """The environment of a test's Snakemake run: hash seed fixed, NO_CONTROLLER on the PATH."""
    return {**os.environ, "PYTHONHASHSEED": "0",
            "PATH": f"{NO_CONTROLLER}{os.pathsep}{os.environ.get('PATH', '')}"}


def run_snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 900):
    """Run snakemake on this repository's workflow in `workdir` (a copy of the repo)."""
    return subprocess.run(
        [SNAKEMAKE, *args], cwd=workdir, capture_output=True, text=True, check=check,
        timeout=timeout, env=snakemake_env(),
    )


WORKFLOW_PARTS = ("Snakefile", "workflow", "config", "profiles", "src", "envs", "data")


def copy_workflow(dest: Path, source: Path = ROOT) -> Path:
    """A fresh copy of the workflow (WORKFLOW_PARTS) of this repository, or of another copy
    `source`."""
    for name in WORKFLOW_PARTS:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def tiny_targets() -> list:
    """The declared targets of the studies config/tiny.yaml runs (merged onto the defaults)."""
    studies = config_of(ROOT, "config/tiny.yaml")["studies"]
    return [t for t in TARGETS if t.study in studies]


DELETE = object()  # an edit that removes the key


def edited(base: dict, edits: dict) -> dict:
    """A deep copy of `base` with `edits` applied: {key path (tuple): new value or DELETE}."""
    out = copy.deepcopy(base)
    for path, value in edits.items():
        node = out
        for key in path[:-1]:
            node = node[key]
        if value is DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
    return out


# the fixtures that measure (module, fixture): every test using one is marked slow
SLOW_FIXTURES = {("test_fixes", "measured"), ("test_claims_truth", "table"),
                 ("test_scale", "fits")}


def pytest_collection_modifyitems(items) -> None:
    """Mark `slow` each test that uses a fixture of SLOW_FIXTURES (make test-fast skips them)."""
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        if any((module, f) in SLOW_FIXTURES for f in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


CONSOLE = "console.txt"  # in a shared run's folder


@contextlib.contextmanager
def session_lock(tmp_path_factory, worker_id: str, name: str):
    """The folder every pytest-xdist worker of this session shares (the session's own base
    folder when there are no workers), held under lock `name` while the block runs: the first
    worker to ask makes what `name` names, the others wait for it."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield shared


def shared_frame(tmp_path_factory, worker_id: str, name: str, compute) -> pd.DataFrame:
    """`compute()` (a DataFrame) once for the whole test session, shared by every pytest-xdist
    worker as `shared_run` shares a run (`session_lock`), read back from Parquet (exact)."""
    with session_lock(tmp_path_factory, worker_id, name) as shared:
        path = shared / f"{name}.parquet"
        if not path.exists():
            tmp = path.with_suffix(".partial")
            compute().to_parquet(tmp)
            tmp.rename(path)
    return pd.read_parquet(path)


def run_folder(workdir: Path, config: str) -> Path:
    """Where a run of `config` started in `workdir` writes its results/: runs/<name>/ for a
    named run (`run: {name: ...}`), else `workdir` itself."""
    name = (config_of(workdir, config).get("run") or {}).get("name")
    return workdir / "runs" / name if name else workdir


def started_in(run: Path) -> Path:
    """The folder snakemake was started in for a run whose results/ are in `run` (a named
    run's runs/<name>/, or that folder itself)."""
    return run.parents[1] if run.parent.name == "runs" else run


def shared_run(tmp_path_factory, worker_id: str, config: str) -> Path:
    """`config` run end to end once for the whole test session by `.venv/bin/snakemake --cores
    all --configfile <config>` (README's command), shared by every pytest-xdist worker (the
    first to ask runs it while the others wait on a lock); returns the folder that holds its
    results/ (`run_folder`), where CONSOLE holds what the run printed (stdout, then stderr)."""
    with session_lock(tmp_path_factory, worker_id, Path(config).stem) as shared:
        workdir = shared / Path(config).stem
        run = run_folder(ROOT, config).relative_to(ROOT)
        if not (workdir / run / CONSOLE).exists():
            if workdir.exists():  # a run that failed part-way: start again
                shutil.rmtree(workdir)
            workdir.mkdir()
            copy_workflow(workdir)
            done = run_snakemake(workdir, "--cores", "all", "--configfile", config)
            (workdir / run / CONSOLE).write_text(done.stdout + done.stderr)
    return workdir / run


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, worker_id) -> Path:
    """The tiny study (config/tiny.yaml), run once for the session (`shared_run`)."""
    return shared_run(tmp_path_factory, worker_id, "config/tiny.yaml")


@pytest.fixture(scope="session")
def tiny_fixes_run(tmp_path_factory, worker_id) -> Path:
    """The tiny fixes study (config/tiny_fixes.yaml), run once for the session (`shared_run`)."""
    return shared_run(tmp_path_factory, worker_id, "config/tiny_fixes.yaml")


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory) -> Path:
    """The shipped Tiny Shakespeare, decompressed and sha256-checked."""
    path = tmp_path_factory.mktemp("corpus") / "tinyshakespeare.txt"
    fetch_corpus(path, SHIPPED_CORPUS, CORPUS_SHA256)
    return path


def copy_encoder_weights(layer, p: dict, i: int) -> None:
    """Copy seed i's attention and FFN weights of depthlab's block p into a PyTorch-style
    encoder layer (`self_attn` an nn.MultiheadAttention with its packed in-projection,
    `linear1`, `linear2`), as nn.TransformerEncoderLayer and rezero's RZTXEncoderLayer have."""
    import torch  # here: the conftest itself does not need torch

    with torch.no_grad():
        sa = layer.self_attn
        sa.in_proj_weight.copy_(torch.cat([p[f"w{n}"][i] for n in "qkv"]))
        sa.in_proj_bias.copy_(torch.cat([p[f"b{n}"][i] for n in "qkv"]))
        sa.out_proj.weight.copy_(p["wo"][i])
        sa.out_proj.bias.copy_(p["bo"][i])
        for n in (1, 2):
            getattr(layer, f"linear{n}").weight.copy_(p[f"w{n}"][i])
            getattr(layer, f"linear{n}").bias.copy_(p[f"b{n}"][i])


def planned(s):
    """(settings, the pass plan the planner resolves for them): the engine's first two
    arguments (depthlab.core.measure.measure_cell, run_pass), as a measure job hands them."""
    return s, pass_plan(s)


def whole(config: str | Path) -> tuple[str, ...]:
    """The arguments that run `config` as the whole config, not merged onto config/config.yaml
    (Snakemake's --replace-workflow-config): a test's small config of its own."""
    return ("--replace-workflow-config", "--configfile", str(config))


PDFLATEX = shutil.which("pdflatex")  # LaTeX tables are compiled where it is installed


def compile_latex(tex: str, folder: Path) -> str:
    """`tex` (a table written by depthlab.analysis.tables.table_latex), input into an article
    whose preamble loads T1 fonts, utf8 input and the packages the table's first line names,
    compiled by pdflatex in `folder`; the log (AssertionError where pdflatex fails)."""
    needs = re.findall(r"\\usepackage\{(\w+)\}", tex.splitlines()[0])
    (folder / "table.tex").write_text(tex)
    (folder / "doc.tex").write_text("\n".join([
        r"\documentclass{article}", r"\usepackage[T1]{fontenc}", r"\usepackage[utf8]{inputenc}",
        *(rf"\usepackage{{{name}}}" for name in needs), r"\begin{document}", r"\input{table}",
        r"\end{document}", ""]))
    done = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=folder, capture_output=True, text=True, timeout=120)
    log = (folder / "doc.log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    return log
