"""Shared fixtures: small settings, and the tiny workflow run once per session."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
# the local copy of the training corpus (tests and CI have no internet)
CORPUS = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"


def run_snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 900):
    """Run snakemake on this repository's workflow in `workdir` (a copy of the repo)."""
    return subprocess.run(
        [SNAKEMAKE, *args], cwd=workdir, capture_output=True, text=True, check=check,
        timeout=timeout, env={**os.environ, "PYTHONHASHSEED": "0"},
    )


def copy_workflow(dest: Path, source: Path = ROOT) -> Path:
    """A fresh copy of the workflow (Snakefile, workflow/, config/, profiles/, src/, envs/) of
    this repository, or of another copy `source`."""
    for name in ("Snakefile", "workflow", "config", "profiles", "src", "envs"):
        src = source / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    return dest


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


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """The tiny study run end to end once; returns its working directory."""
    workdir = copy_workflow(tmp_path_factory.mktemp("tiny"))
    run_snakemake(workdir, "--cores", "2", "--configfile", "config/tiny.yaml",
                  "--config", f"corpus_path={CORPUS}")
    return workdir
