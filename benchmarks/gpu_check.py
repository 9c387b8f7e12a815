"""CPU against GPU on the same cells: the numbers (float64: every probe row to 1e-10 of the
largest value of its metric in the cell) and the seconds, for the tiny study's cells and the
scale study's L = 1024 cells.

    .venv/bin/python -m benchmarks.gpu_check [--out results/benchmarks/gpu_check.csv]

benchmarks/gpu_bench.sh (the device check of a GPU machine) reuses its cells, `compare` and
`largest_difference`. Run alone on a machine with a GPU; on one without, it compares the CPU
with a second CPU run (every difference 0). Each cell is drawn on the CPU
(depthlab.core.model.build: a seed gives the same weights on every device), then measured on
each device; the table has one row per cell: the largest relative difference of any probe
row, the seconds on each device and their ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from depthlab.core.measure import measure_job
from depthlab.planner.grid import cell, study_jobs
from depthlab.planner.overlay import config_of
from depthlab.vocabulary.jobs import Job
from depthlab.vocabulary.settings import RunSettings

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-10  # float64: the same operations in another order on another device


def tiny_cells() -> list[tuple[str, RunSettings]]:
    """The tiny study's cells: the first cell of each of its measure jobs."""
    tiny = config_of(ROOT, "config/tiny.yaml")
    return [(f"tiny/{j.study}/{j.arm}/{j.job}", j.cells[0].settings) for j in study_jobs(tiny)
            if "training" not in tiny["studies"][j.study]]


def scale_cells(depth: int = 1024) -> list[tuple[str, RunSettings]]:
    """The scale study's cells at `depth` of Pre-LN and DeepNorm at 2 seeds, forward-only and
    with the gradient."""
    found = []
    for job in study_jobs(config_of(ROOT, "config/scale.yaml")):
        for c in job.cells:
            s = c.settings
            if s.depth == depth and s.placement in ("pre", "deepnorm"):
                found.append((f"scale/{job.arm}/{c.label}", dataclasses.replace(s, seeds=2)))
    return found


def cells() -> list[tuple[str, RunSettings]]:
    """The tiny study's cells and the scale study's L = 1024 cells."""
    return tiny_cells() + scale_cells()


def largest_difference(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """The largest |a - b| over the probe rows, each relative to the largest |value| of its
    metric in the cell: a difference is judged against the size of the terms it came from, not
    against itself (varsplit's delta is Var(h_l) - Var(x_{l-1}) with both near 1e4 at
    skip_scale 2, so round-off of 1e-12 of them is a relative 1e-8 of a small delta)."""
    keys = ["seed", "layer", "sublayer", "metric"]
    x = a.set_index(keys)["value"]
    y = b.set_index(keys)["value"].loc[x.index]
    scale = np.maximum(x.abs(), y.abs()).groupby(level="metric").transform("max")
    return float(((x - y).abs() / scale.where(scale > 0, 1.0)).max())


def timed(s: RunSettings, around: AbstractContextManager | None = None
          ) -> tuple[pd.DataFrame, float]:
    """One cell measured as a measure job measures it (a job of this one cell: on a GPU the
    next pass is drawn while the device runs this one), inside `around`: its rows, and its
    wall seconds."""
    job = Job("gpu_check", "cell", "cell", (cell("cell", s),))
    with around or contextlib.nullcontext():
        start = time.perf_counter()
        frame = measure_job(job)
        if s.device == "cuda":
            torch.cuda.synchronize()
        return frame, time.perf_counter() - start


def compare_frames(s: RunSettings, device: str,
                   watch: Callable[[], AbstractContextManager] = contextlib.nullcontext,
                   ) -> tuple[pd.DataFrame, float, pd.DataFrame, float]:
    """One cell measured on the CPU, then on `device` (after one warm-up call there unless it is
    the CPU; `watch()` entered around its timed call), each as a job measures it (`timed`):
    the rows and the seconds of each."""
    on_cpu, cpu_s = timed(dataclasses.replace(s, device="cpu"))
    run = dataclasses.replace(s, device=device)
    if device != "cpu":
        timed(run)  # warm-up: kernels, allocator
    return on_cpu, cpu_s, *timed(run, watch())


def compare(s: RunSettings, device: str,
            watch: Callable[[], AbstractContextManager] = contextlib.nullcontext,
            ) -> tuple[float, float, float]:
    """`compare_frames`' largest relative difference (`largest_difference`) and the seconds on
    the CPU and on `device`."""
    on_cpu, cpu_s, on_device, device_s = compare_frames(s, device, watch)
    return largest_difference(on_cpu, on_device), cpu_s, device_s


def check(device: str) -> pd.DataFrame:
    """One row per cell: the largest relative difference of `device` against the CPU, and the
    seconds of each (`compare`)."""
    rows = []
    for name, s in cells():
        worst, cpu_s, device_s = compare(s, device)
        rows.append({"cell": name, "dtype": s.dtype, "largest_rel_diff": worst,
                     "cpu_s": cpu_s, f"{device}_s": device_s, "speedup": cpu_s / device_s})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/gpu_check.csv")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    table = check(args.device)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))
    worst = table.loc[table["dtype"] == "float64", "largest_rel_diff"].max()
    print(f"largest relative difference (float64): {worst:.3g} (tolerance {TOLERANCE:g})")
    if worst > TOLERANCE:
        raise SystemExit(f"float64 differs by {worst:.3g} > {TOLERANCE:g}")


if __name__ == "__main__":
    main()
