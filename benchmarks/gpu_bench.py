"""The device check of a GPU machine: six parts timed on the device and on the CPU threads.

The same work on the device (cuda where torch sees one, else the CPU) and on the CPU threads of
the same machine, in one run, as wall seconds and their ratio (CPU seconds / device seconds:
above 1 the device is faster), with the largest float64 difference between the two
(benchmarks/gpu_check.largest_difference: each probe row relative to the largest |value| of its
metric in the cell; 0 where both are the CPU, whose runs are bit-identical).

    bash benchmarks/gpu_bench.sh [WHEELS_DIR] [--quick]   (finds Python; see its header)
    python -m benchmarks.gpu_bench [--quick] [--device cpu|cuda] [--out results/benchmarks/...]
    bash benchmarks/gpu_bench.sh [WHEELS_DIR] --study config/scale.yaml   (a config from nothing)

One row per part:

1. tiny study: config/tiny.yaml by `snakemake --cores <CPU count>` from nothing in a temporary
   copy of the workflow (benchmarks/workflow.py), `--config device=cuda` against device=cpu:
   wall seconds, jobs, the difference over every float64 shard (cell by cell);
2. fig_grad_ratio_by_depth from nothing (default config: the stack96 grad arm's three measure
   jobs at 36 seeds, its fit, the figure) the same way, both runs with the cores shared out
   between the measure jobs (`threads`);
3. the scale study's L = 1024 cells (benchmarks/gpu_check.scale_cells, measured in this process
   by gpu_check.compare: the CPU on all its threads, the device after one warm-up call), summed;
4. one optimiser step of the training study's model (benchmarks/endtoend.train_step, medians),
   depthlab's on the device against on the CPU; the notes hold the plain PyTorch loop's step
   (benchmarks/train_loop.py) on each and depthlab's step over it;
5. the stack96 grad arm's L = 96 Pre-LN cell (36 seeds), measured as a measure job measures it
   (gpu_check.timed: on a GPU the next pass is drawn while the device runs this one), with the
   GPU's busy fraction while the device measures it: the mean of torch.cuda.utilization() (or
   nvidia-smi's utilization.gpu) sampled every 0.2 s; in the notes, the same cell on the
   device in larger passes (4 times the seeds, and all 36 in one: fewer launches per seed),
   each with its seconds, busy fraction and difference from the CPU (where a pass takes at
   most half the memory free on the device);
6. one pass of that cell (the seeds depthlab puts in one), its block loop forward and
   backward, eager on the device against on the CPU, and the same loop with each block
   compiled by torch.compile on the device, in the notes: its seconds over the eager loop's,
   its first call's (the compile), and how far its block gradient norms are from the eager
   ones (benchmarks/compiled.py).

The table (stdout) and the CSV (--out): part, device, device_s, cpu_s, ratio, largest_rel_diff
(empty where it does not apply: the float32 training step), notes; the CSV adds part_s, the
part's own wall seconds (both sides and their set-up), also on stderr as each part ends.

--quick shrinks every part to a toy size (the test suite runs it on a 2-core machine): the tiny
study's theory096 omega arm only, the figure from config/tiny.yaml, the scale cells at L = 4,
the training step at L = 2, the tiny grad arm's L = 8 cell (parts 5 and 6; part 5 one seed
a pass, so that it has larger passes to try). A part that fails
is a row with its error in the notes; the exit status is 1 if any part failed or a float64
difference exceeds gpu_check.TOLERANCE.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import psutil
import torch

from benchmarks import compiled, endtoend, gpu_check
from benchmarks.workflow import ROOT, snakemake, workdir
from depthlab.planner import cost
from depthlab.planner.grid import study_jobs
from depthlab.planner.overlay import config_of
from depthlab.vocabulary.jobs import Job
from depthlab.vocabulary.settings import RunSettings

CORES = os.cpu_count() or 1
TINY = "config/tiny.yaml"


@dataclasses.dataclass(frozen=True)
class Size:
    """What each part runs."""

    tiny_arm: tuple[str, str] | None  # part 1: one (study, arm) of the tiny study, or all of it
    configs: tuple[str, ...]  # parts 2 and 5: config files merged onto config/config.yaml
    scale_depth: int  # part 3: the scale study's L = 1024 cells, at this depth
    train: dict  # part 4: endtoend.train_step's rounds, steps and depth
    seed_batch: int  # part 5: seeds per pass of its cell (0: as the pipeline plans it)


FULL = Size(None, (), 1024, {"rounds": 5, "steps": 4, "depth": 24}, 0)
# part 5's toy cell holds its 3 seeds in one pass: 1 a pass leaves larger passes to try
QUICK = Size(("theory096", "omega"), (TINY,), 4, {"rounds": 1, "steps": 1, "depth": 2}, 1)


def _config_args(configs: tuple[str, ...]) -> list[str]:
    return ["--configfile", *configs] if configs else []


def jobs_run(work: Path) -> int:
    """How many jobs the last Snakemake run in `work` did (its log's last 'N of M steps')."""
    log = max((work / ".snakemake/log").glob("*.snakemake.log"), key=os.path.getmtime)
    done = re.findall(r"(\d+) of \d+ steps", log.read_text())
    return int(done[-1]) if done else 0


def shard_difference(a: Path, b: Path) -> tuple[float, int]:
    """The largest float64 difference between two runs' shards (results/runs/), each cell (and
    training step) by gpu_check.largest_difference, and how many float64 shards there were."""
    worst, shards = 0.0, 0
    for path in sorted((a / "results/runs").rglob("*.parquet")):
        x = pd.read_parquet(path)
        x = x[x["dtype"] == "float64"]
        if x.empty:
            continue
        y = pd.read_parquet(b / path.relative_to(a))
        keys = ["label", "step"] if "step" in x else ["label"]
        other = dict(list(y[y["dtype"] == "float64"].groupby(keys)))
        for key, cell in x.groupby(keys):
            worst = max(worst, gpu_check.largest_difference(cell, other[key]))
        shards += 1
    return worst, shards


def two_runs(base: Path, name: str, device: str, targets: list[str], configs: tuple[str, ...],
             threads: int | None = None) -> dict:
    """`targets` from nothing by `snakemake --cores CORES` in two fresh copies of the workflow,
    device=cpu then device=`device` (`threads` a job where given): the seconds of each, the jobs
    and the shards' largest float64 difference."""
    runs = {}
    for arm, where in (("cpu", "cpu"), ("device", device)):
        work = workdir(base / f"{name}-{arm}")
        # run=null: the default run's folders, whatever name the configs give (tiny's, fixes')
        settings = [f"device={where}", "run=null", *([f"threads={threads}"] if threads else [])]
        seconds = snakemake(work, *targets, "--cores", str(CORES), *_config_args(configs),
                            "--config", *settings)
        runs[arm] = (work, seconds, jobs_run(work))
    worst, shards = shard_difference(runs["cpu"][0], runs["device"][0])
    for work, _, _ in runs.values():
        shutil.rmtree(work)
    return {"device_s": runs["device"][1], "cpu_s": runs["cpu"][1], "largest_rel_diff": worst,
            "notes": f"jobs {runs['device'][2]} on {device}, {runs['cpu'][2]} on cpu; "
                     f"--cores {CORES}; {shards} float64 shards"}


def arm_jobs(configs: tuple[str, ...], study: str, arm: str) -> list:
    """The measure jobs of one arm under `configs` (depthlab.planner.grid.Job)."""
    return [j for j in study_jobs(config_of(ROOT, *configs)) if (j.study, j.arm) == (study, arm)]


def tiny_study(base: Path, device: str, size: Size) -> dict:
    """Part 1: the tiny study (or one arm's shards of it) from nothing."""
    targets = [j.shard for j in arm_jobs((TINY,), *size.tiny_arm)] if size.tiny_arm else []
    row = two_runs(base, "tiny", device, targets, (TINY,))
    if size.tiny_arm:
        row["notes"] += f"; only {'/'.join(size.tiny_arm)}"
    return row


def figure(base: Path, device: str, size: Size) -> dict:
    """Part 2: fig_grad_ratio_by_depth from nothing, the cores shared out between its measure
    jobs."""
    threads = max(1, CORES // len(arm_jobs(size.configs, "stack96", "grad")))
    row = two_runs(base, "figure", device, ["fig_grad_ratio_by_depth"], size.configs, threads)
    row["notes"] += f", threads={threads}"
    return row


def scale(device: str, size: Size) -> dict:
    """Part 3: the scale study's L = 1024 cells (at size.scale_depth), summed."""
    cells = [dataclasses.replace(s, depth=size.scale_depth) for _, s in gpu_check.scale_cells()]
    results = [gpu_check.compare(s, device) for s in cells]
    return {"device_s": sum(r[2] for r in results), "cpu_s": sum(r[1] for r in results),
            "largest_rel_diff": max(r[0] for r in results),
            "notes": f"{len(cells)} cells (Pre-LN, DeepNorm; forward, gradient) at "
                     f"L = {size.scale_depth}, {cells[0].seeds} seeds"}


def train(device: str, size: Size) -> dict:
    """Part 4: depthlab's training step on the device against on the CPU, and the plain loop's."""
    on, cpu = (endtoend.train_step(device=d, **size.train) for d in (device, "cpu"))
    ms = {k: 1000 * on[k] for k in ("depthlab_step_s", "plain_step_s")}
    return {"device_s": on["depthlab_step_s"], "cpu_s": cpu["depthlab_step_s"],
            "largest_rel_diff": math.nan,
            "notes": f"L = {size.train['depth']}, {on['seeds']} seeds, {on['dtype']}; plain loop "
                     f"{ms['plain_step_s']:.1f} ms on {device} (depthlab {on['ratio']:.2f}x "
                     f"its time), {1000 * cpu['plain_step_s']:.1f} ms on cpu "
                     f"({cpu['ratio']:.2f}x)"}


def _utilization() -> Callable[[], float] | None:
    """A reader of the GPU's busy percentage: torch.cuda.utilization (pynvml), else nvidia-smi;
    None where neither answers."""
    def smi() -> float:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             check=True, timeout=5).stdout
        return float(out.split()[0])

    for read in (torch.cuda.utilization, smi):
        try:
            read()
        except Exception:  # no pynvml, no nvidia-smi: try the next
            continue
        return read
    return None


class Busy:
    """The GPU's busy percentage sampled every `every` seconds in a thread while the `with`
    block runs (`percent` the mean of the samples, `samples` how many)."""

    def __init__(self, read: Callable[[], float], every: float = 0.2):
        self.read, self.every, self.values = read, every, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.stop.wait(self.every):
            with contextlib.suppress(Exception):  # a missed sample is not a failed part
                self.values.append(self.read())

    def __enter__(self) -> Busy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()

    @property
    def percent(self) -> float:
        return sum(self.values) / len(self.values) if self.values else math.nan


def deepest_pre_cell(size: Size) -> tuple[Job, RunSettings]:
    """Parts 5 and 6's cell: the stack96 grad arm's Pre-LN job and its deepest cell (L = 96)."""
    job = next(j for j in arm_jobs(size.configs, "stack96", "grad") if j.job == "placement-pre")
    return job, max((c.settings for c in job.cells), key=lambda s: s.depth)


def larger_passes(s: RunSettings) -> list[int]:
    """Part 5's other pass sizes: 4 times the seeds the cell puts in one pass
    (cost.seeds_per_pass), and all its seeds in one, those larger than its own."""
    own = cost.seeds_per_pass(s)
    return sorted({min(4 * own, s.seeds), s.seeds} - {own})


def free_bytes(device: str) -> float:
    """Bytes free on `device`: the GPU's memory (torch.cuda.mem_get_info), or the host's
    available memory."""
    if device == "cuda":
        return float(torch.cuda.mem_get_info()[0])
    return float(psutil.virtual_memory().available)


def busy(device: str, size: Size) -> dict:
    """Part 5: the stack96 grad arm's largest Pre-LN cell (L = 96) of one measure job, with the
    GPU's busy fraction while the device measures it as a job does (gpu_check.timed). In the
    notes, the same cell on the device in larger passes (`larger_passes`: fewer launches per
    seed, less drawing ahead), each with its seconds, busy fraction and difference from the
    CPU's rows, where a pass takes at most half the memory free on the device
    (cost.pass_bytes); not in the part's difference, as the pipeline does not run them."""
    job, s = deepest_pre_cell(size)
    s = dataclasses.replace(s, seed_batch=size.seed_batch or s.seed_batch)
    read = _utilization() if device == "cuda" else None
    watches: list[Busy] = []

    def watch() -> contextlib.AbstractContextManager:
        if read is None:
            return contextlib.nullcontext()
        watches.append(Busy(read))
        return watches[-1]

    def percent() -> str:
        if device != "cuda":
            return "GPU busy n/a (no GPU)"
        if not watches:
            return "GPU busy n/a (neither torch.cuda.utilization nor nvidia-smi answers)"
        return f"GPU busy {watches[-1].percent:.0f}% ({len(watches[-1].values)} samples, 0.2 s)"

    on_cpu, cpu_s, on_device, device_s = gpu_check.compare_frames(s, device, watch)
    notes = [f"L = {s.depth}, {s.seeds} seeds in passes of {cost.seeds_per_pass(s)}, "
             f"{job.study}/{job.arm}/{job.job}; {percent()}"]
    for seeds in larger_passes(s):
        larger = dataclasses.replace(s, device=device, seed_batch=seeds)
        need, free = cost.pass_bytes(larger), free_bytes(device)
        if need > free / 2:  # a pass the device would hardly hold: not tried
            notes.append(f"passes of {seeds}: not tried ({need / 1e9:.1f} GB a pass, "
                         f"{free / 1e9:.1f} GB free on {device})")
            continue
        frame, seconds = gpu_check.timed(larger, watch())
        notes.append(f"passes of {seeds}: {seconds:.3g} s, {percent()}, "
                     f"{gpu_check.largest_difference(on_cpu, frame):.2g} from the CPU")
    return {"device_s": device_s, "cpu_s": cpu_s,
            "largest_rel_diff": gpu_check.largest_difference(on_cpu, on_device),
            "notes": "; ".join(notes)}


def compile_loop(device: str, size: Size) -> dict:
    """Part 6: one pass of part 5's cell (the seeds depthlab puts in one pass,
    cost.seeds_per_pass), its block loop forward and backward, eager and compiled on the device
    (benchmarks/compiled.py); the row's seconds are the eager loop's on the device and on the
    CPU, the notes say what compiling gave on the device."""
    _, cell = deepest_pre_cell(size)
    s = dataclasses.replace(cell, seeds=cost.seeds_per_pass(cell))
    on = compiled.compare(dataclasses.replace(s, device=device))
    cpu_s, cpu_sq = compiled.loop(dataclasses.replace(s, device="cpu"), compiled.block_step(s))
    worst = compiled.relative_difference(cpu_sq, on["eager_sq"])
    if "error" in on:  # depthlab runs eagerly: a block the compiler cannot build fails no part
        compiling = f"failed: {on['error']}"
    else:
        compiling = (f"{on['compiled_s']:.3g} s, {on['eager_s'] / on['compiled_s']:.2f}x the "
                     f"eager loop, first call {on['first_call_s']:.1f} s, compiled against "
                     f"eager {on['largest_rel_diff']:.2g}")
    return {"device_s": on["eager_s"], "cpu_s": cpu_s, "largest_rel_diff": worst,
            "notes": f"L = {s.depth}, {s.seeds} seeds; torch.compile ({on['backend']}) "
                     f"{compiling}"}


def run_parts(base: Path, device: str, size: Size) -> pd.DataFrame:
    """Every part, one row each (a failed part: its error in the notes); progress on stderr."""
    parts = {"1 tiny study": lambda: tiny_study(base, device, size),
             "2 fig_grad_ratio_by_depth": lambda: figure(base, device, size),
             "3 scale L=1024 cells": lambda: scale(device, size),
             "4 training step": lambda: train(device, size),
             "5 measure job L=96": lambda: busy(device, size),
             "6 compiled block loop": lambda: compile_loop(device, size)}
    rows = []
    for name, part in parts.items():
        start = time.perf_counter()
        try:
            row = part()
        except Exception as error:  # the other parts still run: a device check of one go
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            row = {"device_s": math.nan, "cpu_s": math.nan, "largest_rel_diff": math.nan,
                   "notes": f"FAILED: {type(error).__name__}: {first}"[:300]}
        took = time.perf_counter() - start
        print(f"[gpu_bench] part {name}: {took:.1f} s", file=sys.stderr, flush=True)
        rows.append({"part": name, "device": device, "device_s": row["device_s"],
                     "cpu_s": row["cpu_s"], "ratio": row["cpu_s"] / row["device_s"],
                     "largest_rel_diff": row["largest_rel_diff"], "notes": row["notes"],
                     "part_s": took})
    return pd.DataFrame(rows)


def study_from_nothing(base: Path, device: str, config: str) -> pd.DataFrame:
    """`--study CONFIG`: the config run from nothing on the device alone, by `snakemake --cores
    <CPU count>` in a fresh copy of the workflow; on cuda with `--resources gpu_mem_mb=<the
    GPU's memory>`, so that its jobs share the GPU as far as its memory holds (each declares
    its own, depthlab.planner.resources.device_mb). One row: wall seconds and jobs."""
    work = workdir(base / "study")
    args = ["--cores", str(CORES), "--configfile", config, "--config", f"device={device}"]
    if device == "cuda":
        total_mb = torch.cuda.get_device_properties(0).total_memory // 10**6
        args += ["--resources", f"gpu_mem_mb={total_mb}"]
    seconds = snakemake(work, *args)
    return pd.DataFrame([{"part": f"study {config}", "device": device, "device_s": seconds,
                          "cpu_s": math.nan, "ratio": math.nan, "largest_rel_diff": math.nan,
                          "notes": f"jobs {jobs_run(work)}; {' '.join(args)}",
                          "part_s": seconds}])


def machine(device: str) -> str:
    gpu = torch.cuda.get_device_name() if device == "cuda" else "no GPU"
    return (f"{platform.machine()}, {CORES} CPUs, torch {torch.__version__} on "
            f"{torch.get_num_threads()} threads, {gpu}; Python {sys.executable}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every part at a toy size")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/gpu_bench.csv")
    parser.add_argument("--study", metavar="CONFIG",
                        help="instead of the parts, run CONFIG from nothing on the device "
                             "(the scale study's floor: --study config/scale.yaml)")
    args = parser.parse_args()
    size = QUICK if args.quick else FULL
    print(f"gpu_bench{' --quick' if args.quick else ''}: {machine(args.device)}", flush=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="depthlab-gpubench-") as tmp:
        table = (study_from_nothing(Path(tmp), args.device, args.study) if args.study
                 else run_parts(Path(tmp), args.device, size))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    with pd.option_context("display.max_colwidth", None, "display.width", 250,
                           "display.float_format", "{:.4g}".format):
        print(table.drop(columns="part_s").to_string(index=False))
    worst = table["largest_rel_diff"].max()  # NaN for --study, which compares nothing
    print(f"total {time.perf_counter() - start:.0f} s; largest float64 difference {worst:.3g} "
          f"(tolerance {gpu_check.TOLERANCE:g}); table: {args.out}")
    failed = table.loc[table["notes"].str.startswith("FAILED"), "part"].tolist()
    if failed or worst > gpu_check.TOLERANCE:
        raise SystemExit(f"failed: {', '.join(failed)}" if failed else
                         f"float64 differs by {worst:.3g} > {gpu_check.TOLERANCE:g}")


if __name__ == "__main__":
    main()
