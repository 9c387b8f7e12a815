"""Timings of the workflow itself: the DAG build of a large grid, and a whole study under
`snakemake --cores all` split into in-job compute and start-up/scheduling."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from depthlab.planner.grid import study_jobs
from depthlab.studies import TARGETS
from depthlab.vocabulary import paths

ROOT = Path(__file__).resolve().parents[1]
COPIED = ("Snakefile", "workflow", "config", "src", "envs", "profiles", "data", "docs",
          "README.md")


def workdir(path: Path) -> Path:
    """A fresh copy of the workflow in `path` (no results: the run starts from nothing)."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    for name in COPIED:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, path / name)
    return path


def snakemake(work: Path, *args: str) -> float:
    """Run snakemake in `work`; returns its wall seconds (raises with its output on failure)."""
    cmd = [sys.executable, "-m", "snakemake", *args]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return seconds


def big_grid(n_depths: int, pack: list[str]) -> dict:
    """The stack96 settings with a grad arm of 3 placements x n_depths depths, the axes in
    `pack` looped inside a job."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    study = config["studies"]["stack96"]
    study["arms"] = {"grad": {"axes": {"placement": ["post", "pre", "none"],
                                       "depth": list(range(1, n_depths + 1))},
                              "pack": pack}}
    config["studies"] = {"stack96": study}
    return config


# job layouts of the large grid: every cell its own job, and placements looped inside a job
# (as the default config's sensitivity arms do)
LAYOUTS = {"one_cell_per_job": [], "placement_packed": ["placement"]}


def dag_build(work: Path, cells: int = 5000) -> list[dict]:
    """Seconds of `snakemake -n` for a grid of about `cells` cells in each job layout: start-up
    (the same command on a 3-cell grid: imports, plugin probes, parse), the DAG build and
    dry-run listing of every job beyond that, and what one cluster job pays (parse the big
    config and build the DAG of its own output only)."""
    n_depths = -(-cells // 3)
    (work / "small.yaml").write_text(yaml.safe_dump(big_grid(1, []), sort_keys=False))
    startup = snakemake(work, "-n", "--configfile", "small.yaml")
    rows = []
    for layout, pack in LAYOUTS.items():
        config = big_grid(n_depths, pack)
        jobs = study_jobs(config)
        (work / f"{layout}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        dry_run = snakemake(work, "-n", "--configfile", f"{layout}.yaml")
        one = snakemake(work, "-n", jobs[-1].shard, "--configfile", f"{layout}.yaml")
        rows.append({"layout": layout, "cells": sum(len(j.cells) for j in jobs),
                     "jobs": len(jobs), "startup_s": startup,
                     "dry_run_s": dry_run, "dag_s": dry_run - startup, "one_job_s": one})
    return rows


def _compute_seconds(log: str) -> float:
    match = re.search(r"compute_s=([0-9.]+)", Path(log).read_text())
    if match is None:
        raise RuntimeError(f"{log}: no compute_s line (was the job run by this version?)")
    return float(match[1])


def measure_seconds(work: Path, study: str) -> dict:
    """The measure jobs `study` ran in `work`: how many, the sum of their wall times
    (Snakemake's benchmark files) and of their in-job compute (the compute_s line of each log)."""
    pattern = paths.benchmark("measure").format(study=study, arm="*", job="*")
    jobs = sorted(glob.glob(str(work / pattern)))
    job_wall = sum(float(Path(p).read_text().splitlines()[1].split("\t")[0]) for p in jobs)
    logs = [work / paths.job_log("measure").format(study=study, arm=Path(p).parent.name,
                                                   job=Path(p).stem) for p in jobs]
    return {"jobs": len(jobs), "job_wall_s": job_wall,
            "compute_s": sum(_compute_seconds(p) for p in logs)}


def whole_study(work: Path, study: str = "stack96", cores: int | None = None) -> dict:
    """Run every table and figure of `study` from nothing with the default config; returns the
    wall time, the sum of measure-job wall times (Snakemake's benchmark files), the sum of
    in-job compute (from the job logs) and the share of the wall time that is not compute:
    1 - sum(compute * threads) / (wall * cores)."""
    cores = cores or os.cpu_count() or 1
    targets = [t.name for t in TARGETS if t.study == study]
    wall = snakemake(work, *targets, "--cores", str(cores))
    threads = yaml.safe_load((work / "config/config.yaml").read_text())["threads"]
    jobs = measure_seconds(work, study)
    busy = jobs["compute_s"] * min(threads, cores)
    return {
        "study": study, "cores": cores, "threads_per_job": threads, **jobs, "wall_s": wall,
        "startup_share": 1 - busy / (wall * cores),
    }
