"""End to end, as a user runs it: the same work done by depthlab and by plain scripts,
the whole default run against its FLOP floor, one figure from nothing, the training step against
a plain training loop, and Snakemake's own start-up."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil
import torch
import yaml

from benchmarks import compute, plain, train_loop
from benchmarks.workflow import ROOT, measure_seconds, snakemake, workdir
from depthlab.core.model import torch_dtype
from depthlab.core.train import build_model, model_loss, optimizer
from depthlab.planner import cost
from depthlab.planner.grid import study_jobs
from depthlab.vocabulary.settings import RunSettings
from depthlab.vocabulary.train_settings import TrainSettings, training_arms


def _tree_rss(proc: psutil.Process) -> int:
    """Resident bytes of every process below `proc`, summed (0 for those already gone)."""
    total = 0
    for child in proc.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += child.memory_info().rss
    return total


def run(cmd: list[str], cwd: Path) -> dict:
    """Wall and CPU seconds of a command, the peak resident memory (MB) of its largest process
    (Linux's RUSAGE_CHILDREN, of a fresh subprocess so earlier runs do not count) and the peak
    of all its processes' memory together (sampled every 0.1 s: jobs run side by side)."""
    probe = [sys.executable, "-c",
             "import resource, subprocess, sys, time; t = time.perf_counter(); "
             "subprocess.run(sys.argv[1:], check=True, capture_output=True); "
             "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "print(time.perf_counter() - t, r.ru_utime + r.ru_stime, r.ru_maxrss / 1024)",
             *cmd]
    proc = subprocess.Popen(probe, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    watched, together = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            together = max(together, _tree_rss(watched))
        time.sleep(0.1)
    out, err = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{err[-3000:]}")
    wall, cpu, peak = map(float, out.split())
    return {"wall_s": wall, "cpu_s": cpu, "peak_mb": peak, "together_peak_mb": together / 2**20}


def same_work_config() -> dict:
    """The stack96 study cut to exactly the two tables' cells, at the plain scripts' 6 seeds:
    the grad arm (3 placements x L = 6, 20, 24, 48, 96) and the stream arm (Pre-LN L = 6, 24,
    96 at output scale 1, and scales 3 and 10 at L = 96; forward only)."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    study = config["studies"]["stack96"]
    stream = {"settings": {"grad_of": "none", "seeds": plain.SEEDS},
              "axes": {"placement": ["pre"], "depth": [6, 24, 96], "out_scale": [1]},
              "pack": ["placement", "depth", "out_scale"]}
    scaled = {"settings": {"grad_of": "none", "seeds": plain.SEEDS},
              "axes": {"placement": ["pre"], "depth": [96], "out_scale": [3, 10]},
              "pack": ["placement", "depth", "out_scale"]}
    # the plain scripts' seed count in every arm: the config's stack96 runs a 36-seed pool for
    # the ledger
    grad = {**study["arms"]["grad"],
            "settings": {**study["arms"]["grad"].get("settings", {}), "seeds": plain.SEEDS}}
    # a config file is merged onto config/config.yaml key by key: null removes the other arms
    study["arms"] = {**dict.fromkeys(study["arms"]), "grad": grad, "stream": stream,
                     "stream_scaled": scaled}
    return {"threads": config["threads"], "studies": {"stack96": study}}


def _depthlab_same_work(base: Path) -> dict:
    """One depthlab run of the same work from nothing (`run`), with its measure jobs: how many,
    their summed wall and in-job compute seconds."""
    work = workdir(base / "same_work")
    (work / "same.yaml").write_text(yaml.safe_dump(same_work_config(), sort_keys=False))
    # the target before --configfile, which takes every path after it as a config file
    out = run([sys.executable, "-m", "snakemake", "results/tables/stack96.parquet", "--cores", "2",
               "--configfile", "same.yaml"], work)
    return {**out, **measure_seconds(work, "stack96")}


def _plain_same_work() -> dict:
    """One run of the plain scripts, one process per table one after the other: summed wall and
    CPU seconds, the larger peaks."""
    parts = [run([sys.executable, "-m", "benchmarks.plain", table], ROOT)
             for table in ("grad", "stream")]
    return {"wall_s": sum(p["wall_s"] for p in parts), "cpu_s": sum(p["cpu_s"] for p in parts),
            **{k: max(p[k] for p in parts) for k in ("peak_mb", "together_peak_mb")}}


def same_work(base: Path) -> dict:
    """depthlab (`snakemake --cores 2` from nothing to results/tables/stack96.parquet) against
    the plain scripts (benchmarks/plain.py), run A, B, B, A so that a drift of the machine's
    speed falls on both alike: the means of the two runs of each (the larger peaks), the
    ratios, and depthlab's measure jobs (how many, summed wall and in-job compute seconds)."""
    first = _depthlab_same_work(base)
    plain = [_plain_same_work(), _plain_same_work()]
    runs = {"depthlab": [first, _depthlab_same_work(base)], "plain": plain}
    a, b = ({k: (max if "peak" in k else statistics.mean)([r[k] for r in rs]) for k in rs[0]}
            for rs in runs.values())
    return {**{f"depthlab_{k}": v for k, v in a.items()}, **{f"plain_{k}": v for k, v in b.items()},
            "depthlab_walls_s": " ".join(f"{r['wall_s']:.1f}" for r in runs["depthlab"]),
            "plain_walls_s": " ".join(f"{r['wall_s']:.1f}" for r in plain),
            "speedup_wall": b["wall_s"] / a["wall_s"], "cpu_ratio": a["cpu_s"] / b["cpu_s"],
            "memory_ratio": a["peak_mb"] / b["peak_mb"],
            "together_memory_ratio": a["together_peak_mb"] / b["together_peak_mb"]}


def same_work_bound(same: dict, start: dict, cores: int = 2) -> dict:
    """What the same work would take with nothing spent per job: Snakemake's start-up (`start`),
    then the measure jobs' in-job compute (`same`) spread evenly over `cores` (no process start,
    imports, writing, aggregate or idle core); and the speed-up over the plain scripts that
    would give, with the Slurm plugin's wait and without it."""
    threads = same_work_config()["threads"]
    bound = start["dry_run_s"] + same["depthlab_compute_s"] * threads / cores
    plain = same["plain_wall_s"]
    return {"bound_s": bound, "bound_speedup": plain / bound,
            "bound_speedup_without_plugin": plain / (bound - start["plugin_import_s"])}


def startup(base: Path) -> dict:
    """Snakemake's start-up on this machine: `snakemake -n` with nothing to run, and the part of
    it the Slurm executor plugin takes at import (it probes sinfo/sacct/squeue; with Slurm
    installed and its controller stopped that waits)."""
    work = workdir(base / "startup")
    (work / "same.yaml").write_text(yaml.safe_dump(same_work_config(), sort_keys=False))
    dry = min(run([sys.executable, "-m", "snakemake", "-n", "--configfile", "same.yaml"],
                  work)["wall_s"] for _ in range(2))
    plugin = min(run([sys.executable, "-c", "import snakemake_executor_plugin_slurm"],
                     work)["wall_s"] for _ in range(2))
    python = min(run([sys.executable, "-c", "pass"], work)["wall_s"] for _ in range(2))
    return {"dry_run_s": dry, "plugin_import_s": plugin - python,
            "dry_run_without_plugin_s": dry - (plugin - python)}


def from_nothing(base: Path, target: str) -> dict:
    """Wall seconds of one target of the default config from an empty results/."""
    work = workdir(base / target)
    return {"target": target, "wall_s": snakemake(work, "--cores", "2", target)}


# the work's shapes: the init studies' (6 seeds x 128 tokens, d = 128, float64) and the
# training study's (2 seeds x 8 x 64 tokens, float32)
# (2 to 3 s of products each at this machine's rates)
GEMM_SHAPES = {"float64": ({"seeds": 6}, 500),
               "float32": ({"seeds": 2, "dtype": "float32", "batch": 8, "tokens": 64}, 2000)}


def gemm_rate(dtype: str, start_at: float = 0.0) -> float:
    """GFLOP/s of the batched products of a block at the work's shapes, harmonic mean; from
    wall-clock time `start_at` on (so that processes side by side overlap)."""
    shape, repeats = GEMM_SHAPES[dtype]
    s = RunSettings(**shape)
    compute.gemm_rates(s, repeats=5)  # warm
    time.sleep(max(0.0, start_at - time.time()))
    return statistics.harmonic_mean(r["gflop_s"] for r in compute.gemm_rates(s, repeats))


def gemm_limits() -> dict:
    """The GEMM rates the floors use (GFLOP/s): per dtype the higher of this process on all its
    threads and one single-threaded process per core side by side, summed (the jobs run so)."""
    cores = os.cpu_count() or 1
    script = ("import sys, torch; torch.set_num_threads(1); from benchmarks.endtoend import "
              "gemm_rate; print(gemm_rate(sys.argv[1], float(sys.argv[2])))")
    out = {}
    for dtype in GEMM_SHAPES:
        start_at = str(time.time() + 8)  # after every process's imports
        procs = [subprocess.Popen([sys.executable, "-c", script, dtype, start_at], cwd=ROOT,
                                  text=True, stdout=subprocess.PIPE) for _ in range(cores)]
        side_by_side = sum(float(p.communicate()[0]) for p in procs)
        together = gemm_rate(dtype)
        out.update({dtype: max(together, side_by_side), f"{dtype}_one_process": together,
                    f"{dtype}_side_by_side": side_by_side})
    return out


def default_floor(limits: dict) -> dict:
    """The FLOP floor of the whole default run (depthlab.planner.cost: the init cells' passes
    and the training runs) at the measured GEMM rates, in seconds on one core-set."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    jobs = study_jobs(config)
    training = training_arms(config, jobs)
    init = sum(cost.job_flops(j) for j in jobs if (j.study, j.arm) not in training)
    trained = sum(cost.training_flops(c.settings, training[(j.study, j.arm)])
                  for j in jobs if (j.study, j.arm) in training for c in j.cells)
    seconds = init / (limits["float64"] * 1e9) + trained / (limits["float32"] * 1e9)
    return {"init_tflop": init / 1e12, "training_tflop": trained / 1e12, "floor_s": seconds}


def default_run(base: Path) -> dict:
    """`snakemake --cores 2` (what `make run` runs) from nothing: wall and CPU seconds, peak
    memory of the largest process and of all together (`run`)."""
    work = workdir(base / "default")
    return run([sys.executable, "-m", "snakemake", "--cores", "2"], work)


def train_step(rounds: int = 5, steps: int = 4, device: str = "cpu", depth: int = 24) -> dict:
    """Seconds per optimiser step on `device` of the training study's model (L = `depth`,
    Pre-LN, both seeds in one batched step) by depthlab.core.train and by the plain loop (one
    seed's model; times the seed count for the same work): medians over `rounds` rounds of
    `steps` steps of each, alternating, so that the machine's drift falls on both alike; and the
    step's FLOPs (cost.step_flops)."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    spec = config["studies"]["training"]
    s = RunSettings(**{**spec["settings"], "placement": "pre", "depth": depth, "device": device})
    ts = TrainSettings.from_mapping({**spec["training"], "warmup_steps": 0})
    model = build_model(s, s.seed_list())
    opt = optimizer(model, ts)
    ids = torch.randint(0, s.head_classes, (s.seeds, s.batch, s.tokens + 1)).to(device)

    def depthlab_step() -> None:
        opt.zero_grad()
        loss, _ = model_loss(model, ids, s)
        loss.sum().backward()
        opt.step(ts.lr)

    steppers = {"depthlab": depthlab_step,
                "plain": train_loop.stepper(RunSettings(**{**s.as_columns(), "seeds": 1}), ts)}
    times = {name: [] for name in steppers}
    for round_ in range(rounds + 1):  # the first round warms up
        for name, step in steppers.items():
            seconds = [compute.timed(step, device) for _ in range(steps)]
            if round_:
                times[name] += seconds
    depthlab = statistics.median(times["depthlab"])
    plain = statistics.median(times["plain"]) * s.seeds
    return {"dtype": str(torch_dtype(s.dtype)), "seeds": s.seeds, "depthlab_step_s": depthlab,
            "plain_step_s": plain, "ratio": depthlab / plain,
            "step_gflop": cost.step_flops(s) / 1e9}
