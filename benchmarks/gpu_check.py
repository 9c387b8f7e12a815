"""CPU against GPU on the same cells: the numbers (float64: every probe row to 1e-10 of the
largest value of its metric in the cell) and the seconds, for the tiny study's cells and the
scale study's L = 1024 cells.

    .venv/bin/python -m benchmarks.gpu_check [--out results/benchmarks/gpu_check.csv]

Run by benchmarks/gpu_check.sh on a machine with a GPU; on one without, it compares the CPU
with itself (every difference 0) so the script is tested here. Each cell is drawn on the CPU
(depthlab.core.model.build: a seed gives the same weights on every device), then measured on
each device; the table has one row per cell: the largest relative difference of any probe row,
the seconds on each device and their ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from depthlab.core.measure import measure_cell
from depthlab.planner.cost import pass_plan
from depthlab.planner.grid import study_jobs
from depthlab.planner.overlay import config_of
from depthlab.vocabulary.settings import RunSettings

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-10  # float64: the same operations in another order on another device


def cells() -> list[tuple[str, RunSettings]]:
    """The tiny study's cells (its first cell of each job) and the scale study's L = 1024 cells
    of Pre-LN and DeepNorm at 2 seeds, forward-only and with the gradient."""
    tiny = config_of(ROOT, "config/tiny.yaml")
    found = [(f"tiny/{j.study}/{j.arm}/{j.job}", j.cells[0].settings) for j in study_jobs(tiny)
             if "training" not in tiny["studies"][j.study]]
    scale = config_of(ROOT, "config/scale.yaml")
    for job in study_jobs(scale):
        for cell in job.cells:
            s = cell.settings
            if s.depth == 1024 and s.placement in ("pre", "deepnorm"):
                found.append((f"scale/{job.arm}/{cell.label}", dataclasses.replace(s, seeds=2)))
    return found


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


def check(device: str) -> pd.DataFrame:
    """One row per cell: the largest relative difference of `device` against the CPU, and the
    seconds of each (the device's measured after one warm-up call of the cell)."""
    rows = []
    for name, s in cells():
        frames, seconds = {}, {}
        for where in ("cpu", device):
            run = dataclasses.replace(s, device=where)
            if where != "cpu":
                measure_cell(run, pass_plan(run))  # warm-up: kernels, allocator
            start = time.perf_counter()
            frames[where] = measure_cell(run, pass_plan(run))
            if where == "cuda":
                torch.cuda.synchronize()
            seconds[where] = time.perf_counter() - start
        rows.append({"cell": name, "dtype": s.dtype, "largest_rel_diff":
                     largest_difference(frames["cpu"], frames[device]),
                     "cpu_s": seconds["cpu"], f"{device}_s": seconds[device],
                     "speedup": seconds["cpu"] / seconds[device]})
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
