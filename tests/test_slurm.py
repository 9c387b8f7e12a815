"""Cluster execution: the job cost model behind the Slurm requests, the GPU overlay, the early
failure of a cuda request without a GPU, and a real Slurm run of the tiny study.

The slurm-marked test starts the single-node Slurm 22.05 cluster of tests/slurm (root only: it
installs Debian's packages on first use and writes /etc/slurm, so it runs only with
DEPTHLAB_SLURM_TEST=1, as .ci/run sets), runs config/tiny.yaml through profiles/slurm, cancels
one running job, and always stops the cluster again.
"""

from __future__ import annotations

import dataclasses
import fcntl
import math
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from conftest import ROOT, SNAKEMAKE, STAND_IN, copy_workflow, planned, run_folder, run_snakemake

from depthlab.core.io import read_meta
from depthlab.core.measure import check_device, measure_cell
from depthlab.core.model import _block_shapes, build, forward, per_seed_loss
from depthlab.planner import cost, resources
from depthlab.planner.grid import cell, study_jobs
from depthlab.planner.overlay import config_of
from depthlab.vocabulary.jobs import Job
from depthlab.vocabulary.settings import RunSettings

SLURM_TOOLS = ROOT / "tests/slurm"
# the real-cluster test changes the machine (packages, /etc): it runs only when asked (.ci/run);
# a skip mark, so that a test run that does not ask builds none of its fixtures
ASKED = pytest.mark.skipif(
    os.environ.get("DEPTHLAB_SLURM_TEST") != "1",
    reason="DEPTHLAB_SLURM_TEST=1 runs it (as root): it installs Slurm, MariaDB and munge and "
    "writes /etc/slurm; tests/slurm/README.md says how to remove them")
CANNOT_INSTALL = 3  # start.sh's exit status: Slurm is missing and could not be installed
# the test cluster's partition and account: given on the command line, never in the profile
PARTITION = ACCOUNT = "depthlab_ci"
# poll every second from the start (the plugin's defaults wait 40 s, then back off)
FAST_STATUS = ["--seconds-between-status-checks", "1",
               "--slurm-init-seconds-before-status-checks", "1"]
SUBMITTED = re.compile(r"submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/rule_(\w+)/(\S+)/")


def _job(**settings) -> Job:
    return Job("s", "a", "j", (cell("c", RunSettings(**settings)),))


def _requests(job: Job) -> tuple[int, int]:
    return (resources.mem_mb(resources.measure_mb(job)),
            resources.runtime_min(resources.measure_seconds(job)))


def test_requests_grow_with_depth_seeds_and_attempt():
    small, deep = _job(depth=6, seeds=36), _job(depth=96, seeds=36)
    seeds = _job(depth=6, seeds=600)
    (mem_small, min_small), (mem_deep, min_deep) = _requests(small), _requests(deep)
    mem_seeds, min_seeds = _requests(seeds)
    assert mem_deep > mem_small and mem_seeds > mem_small
    assert min_deep > min_small and min_seeds > min_small
    # seed_batch bounds memory, not runtime
    mem_batched, min_batched = _requests(_job(depth=6, seeds=600, seed_batch=6))
    assert mem_batched < mem_seeds and min_batched == min_seeds
    assert resources.mem_mb(1234.0, attempt=2) == 2 * resources.mem_mb(1234.0) == 2 * 2500
    # 61 s at a 2x margin: 122 s, 3 whole minutes
    assert resources.runtime_min(61.0, attempt=3) == 3 * resources.runtime_min(61.0) == 3 * 3


@pytest.mark.parametrize("placement", ["pre", "deepnorm"])
def test_the_time_model_counts_what_a_pass_draws_and_dispatches(placement):
    """A block's random numbers are its six weight matrices and biases (the shapes the model
    builds; norms and gates are filled, not drawn), twice for a placement that re-draws with its
    own init; a held pass draws them once (a forward-only pass within its budget too), a
    streamed one twice, a recomputed one three times;
    block calls are per pass: forward, backward, recompute."""
    s = RunSettings(placement=placement, depth=5, seeds=3, d_model=16, tokens=8)
    shapes = _block_shapes(s)
    drawn = sum(math.prod(shape) for name, shape in shapes.items()
                if re.fullmatch(r"[wb](q|k|v|o|1|2)", name))
    own = 2 if placement == "deepnorm" else 1
    assert resources.drawn_numbers(s) == s.seeds * s.depth * drawn * own
    forward_only = dataclasses.replace(s, grad_of="none")
    streamed = dataclasses.replace(forward_only, depth=64, d_model=128, tokens=128, pass_mb=1)
    recomputed = dataclasses.replace(streamed, grad_of="params")
    assert cost.recomputes(recomputed) and cost.seeds_per_pass(recomputed) == 1
    assert [resources.draws(x) for x in (s, forward_only, streamed, recomputed)] == [1, 1, 2, 3]
    passes = math.ceil(s.seeds / cost.seeds_per_pass(s))
    assert resources.block_calls(s) == passes * s.depth * 2
    assert resources.block_calls(forward_only) == (
        math.ceil(s.seeds / cost.seeds_per_pass(forward_only)) * s.depth)
    assert resources.block_calls(recomputed) == recomputed.seeds * recomputed.depth * 3


def test_copied_cells_cost_no_time_and_hold_no_memory():
    """A job whose cells are all copies (depthlab.planner.reuse) is predicted its start-up and
    the interpreter only; one copied cell of two removes that cell's share."""
    one, other = RunSettings(depth=48, seeds=6), RunSettings(depth=96, seeds=6)
    job = Job("s", "a", "j", (cell("x", one), cell("y", other)))
    assert resources.measure_seconds(job, {"x", "y"}) == resources.CPU.startup_s
    assert resources.measure_mb(job, {"x", "y"}) == resources.BASE_MB
    alone = Job("s", "a", "j", (cell("y", other),))
    assert resources.measure_seconds(job, {"x"}) == pytest.approx(resources.measure_seconds(alone))
    assert resources.measure_seconds(job) > resources.measure_seconds(job, {"x"})


def test_a_gpu_job_asks_for_its_device_s_fitted_seconds_and_says_when_it_has_none(
        monkeypatch):
    """A cuda job, measure or train, is predicted by the speeds fitted for cuda; with none it
    takes the CPU's, and `unfitted` names the device; a GPU job asks for its largest pass's
    bytes on the device."""
    from depthlab.vocabulary.train_settings import TrainSettings

    s, ts = RunSettings(depth=24, seeds=6), TrainSettings(steps=10)
    on_cpu = Job("s", "a", "j", (cell("x", s),))
    on_gpu = Job("s", "a", "j", (cell("x", dataclasses.replace(s, device="cuda")),))
    monkeypatch.setattr(resources, "FITTED", {"cpu": resources.CPU})
    assert resources.measure_seconds(on_gpu) == resources.measure_seconds(on_cpu)
    assert resources.train_seconds(on_gpu, ts) == resources.train_seconds(on_cpu, ts)
    assert "cuda" in resources.unfitted([on_cpu, on_gpu])
    assert resources.unfitted([on_cpu]) is None
    # hand-set speeds: 2 s to start, 1e12 FLOP/s, 1e-9 s per number drawn, nothing else; a
    # train job at 1e13 FLOP/s and 1e-4 s per block and step
    gpu = resources.Speeds(startup_s=2.0, flops_per_s=1e12, probe_s_per_element=0.0,
                           draw_s_per_number=1e-9, call_s=0.0, train_flops_per_s=1e13,
                           train_s_per_layer_step=1e-4)
    monkeypatch.setitem(resources.FITTED, "cuda", gpu)
    assert resources.unfitted([on_cpu, on_gpu]) is None
    expected = 2.0 + cost.cell_flops(s) / 1e12 + resources.drawn_numbers(s) * 1e-9
    assert resources.measure_seconds(on_gpu) == pytest.approx(expected, rel=1e-12)
    assert resources.measure_seconds(on_cpu, device="cuda") == pytest.approx(expected)
    trained = 2.0 + cost.training_flops(s, ts) / 1e13 + 10 * 24 * 1e-4
    assert resources.train_seconds(on_gpu, ts) == pytest.approx(trained, rel=1e-12)
    assert resources.train_seconds(on_cpu, ts, device="cuda") == pytest.approx(trained)
    assert resources.train_seconds(on_cpu, ts) == pytest.approx(
        resources.CPU.startup_s + cost.training_flops(s, ts) / resources.CPU.train_flops_per_s
        + 10 * 24 * resources.CPU.train_s_per_layer_step)
    assert resources.device_mb(on_cpu) == 0.0
    assert resources.device_mb(on_gpu) == resources.DEVICE_BASE_MB + cost.pass_bytes(s) / 1e6


def test_the_fit_recovers_a_device_s_speeds_from_jobs_that_follow_them():
    """benchmarks/resources.fit on jobs whose seconds are made from hand-set constants (no
    noise) gives those constants back: the least squares a GPU run's logs are fitted by."""
    from benchmarks.resources import fit
    rng = np.random.default_rng(0)
    n = 12
    frame = pd.DataFrame({"kind": "measure", "flops": rng.uniform(1e11, 1e13, n),
                          "elements": rng.uniform(1e6, 1e8, n),
                          "drawn": rng.uniform(1e8, 1e10, n), "calls": rng.uniform(1e2, 1e4, n),
                          "train_flops": 0.0, "layer_steps": 0.0, "graph_mb": 0.0,
                          "train_mb": 0.0, "stream_mb": rng.uniform(100, 3000, n)})
    frame["used_s"] = (3.0 + frame["flops"] / 2e12 + frame["elements"] * 4e-9
                       + frame["drawn"] * 5e-9 + frame["calls"] * 2e-4)
    frame["used_mb"] = 500 + 0.8 * frame["stream_mb"]
    got = fit(frame)
    speeds = got["speeds"]
    assert speeds.startup_s == pytest.approx(3.0, rel=1e-6)
    assert speeds.flops_per_s == pytest.approx(2e12, rel=1e-6)
    assert speeds.probe_s_per_element == pytest.approx(4e-9, rel=1e-6)
    assert speeds.draw_s_per_number == pytest.approx(5e-9, rel=1e-6)
    assert speeds.call_s == pytest.approx(2e-4, rel=1e-6)
    assert got["BASE_MB"] == pytest.approx(500, rel=1e-6)
    assert got["STREAM_SHARE"] == pytest.approx(0.8, rel=1e-6)
    # no train job in the frame: the train constants are the CPU's, and it says so
    assert not got["trained"]
    assert speeds.train_flops_per_s == resources.CPU.train_flops_per_s
    # train jobs beside them, made from hand-set train constants: those come back too
    m = 8
    train = pd.DataFrame({"kind": "train", "flops": 0.0, "elements": 0.0, "drawn": 0.0,
                          "calls": 0.0, "train_flops": rng.uniform(1e12, 1e14, m),
                          "layer_steps": rng.uniform(1e3, 1e5, m), "graph_mb": 0.0,
                          "stream_mb": 0.0, "train_mb": rng.uniform(100, 3000, m)})
    train["used_s"] = 3.0 + train["train_flops"] / 3e13 + train["layer_steps"] * 6e-4
    train["used_mb"] = 500 + 1.5 * train["train_mb"]
    got = fit(pd.concat([frame, train], ignore_index=True))
    assert got["trained"]
    assert got["speeds"].startup_s == pytest.approx(3.0, rel=1e-6)
    assert got["speeds"].train_flops_per_s == pytest.approx(3e13, rel=1e-6)
    assert got["speeds"].train_s_per_layer_step == pytest.approx(6e-4, rel=1e-6)
    assert got["TRAIN_SHARE"] == pytest.approx(1.5, rel=1e-6)


def test_longest_first_ranks_a_job_by_the_longest_chain_that_waits_on_it():
    """A job that other jobs copy cells from ranks by its own seconds plus the longest chain
    of its copiers' (they start after it), so it starts before a job that is longer alone."""
    from depthlab.planner.reuse import Source

    small, large = RunSettings(depth=6, seeds=6), RunSettings(depth=96, seeds=6)
    owner = Job("s", "a", "owner", (cell("x", large),))
    copier = Job("s", "b", "copier", (cell("x", large), cell("y", large)))
    alone = Job("s", "c", "alone", (cell("z", large), cell("w", small)))
    jobs = {(j.study, j.arm, j.job): j for j in (owner, copier, alone)}
    copied = {("s", "b", "copier"): {"x": Source("s", "a", "owner", "x")}}
    rank = resources.LongestFirst(jobs, copied)
    own = {key: resources.measure_seconds(job, copied.get(key, {})) for key, job in jobs.items()}
    assert own[("s", "c", "alone")] > own[("s", "a", "owner")]
    assert rank(("s", "a", "owner")) == own[("s", "a", "owner")] + own[("s", "b", "copier")]
    assert rank(("s", "b", "copier")) == own[("s", "b", "copier")]
    assert rank(("s", "c", "alone")) == own[("s", "c", "alone")]
    assert rank(("s", "a", "owner")) > rank(("s", "c", "alone"))


@pytest.mark.parametrize("budget", [0, 300, 2500])
def test_pass_mb_splits_the_seeds_into_the_fewest_passes_under_it(budget):
    for depth in (6, 48, 96, 192):
        for seeds in (1, 5, 6, 7, 12, 24):
            s = RunSettings(depth=depth, seeds=seeds, pass_mb=budget)
            size, one = cost.seeds_per_pass(s), cost.seed_bytes(s)
            passes = math.ceil(seeds / size)
            assert 1 <= size <= seeds and cost.pass_bytes(s) == size * one
            if budget == 0:
                assert size == seeds
                continue
            assert size * one <= budget * 1e6 or size == 1
            # one pass fewer would hold more than the budget; no pass is emptier than it need be
            assert passes == 1 or math.ceil(seeds / (passes - 1)) * one > budget * 1e6
            assert size == math.ceil(seeds / passes)
    assert cost.seeds_per_pass(RunSettings(depth=96, seed_batch=2, pass_mb=1)) == 2
    assert cost.seeds_per_pass(RunSettings(depth=96)) == 3  # the default: 2 passes of 3 at L=96
    assert cost.seeds_per_pass(RunSettings(depth=48)) == 6


def _held_bytes(s: RunSettings) -> int:
    """Bytes one pass holds at the start of backward: every tensor autograd saved, the trace,
    the weights, plus one gradient per weight (distinct storages, counted once)."""
    storages = {}

    def keep(t: torch.Tensor) -> torch.Tensor:
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    params, draw = build(s, s.seed_list())
    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        y, trace = forward(params, draw.x, s)
        per_seed_loss(y, params, draw, s)
    weights = [*(w for block in params.blocks for w in block.values()), *params.final.values()]
    for tensor in [*weights, *trace.stream, *trace.mid, *trace.attn, *trace.mlp]:
        keep(tensor)
    return sum(storages.values()) + sum(w.untyped_storage().nbytes() for w in weights)


@pytest.mark.parametrize("settings", [
    {"depth": 8, "d_model": 64, "tokens": 64, "seeds": 2},
    {"depth": 4, "d_model": 128, "tokens": 512, "seeds": 2},
    {"depth": 8, "d_model": 64, "tokens": 64, "seeds": 4, "seed_batch": 2, "placement": "post"},
])
def test_memory_model_covers_what_a_pass_holds(settings):
    """pass_bytes is an upper bound on what autograd holds, and not a wild one (1.5x to 2x
    here; the peak RSS growth measured in cost.py's docstring is 0.6x to 0.8x of it)."""
    s = RunSettings(**settings)
    held = _held_bytes(dataclasses.replace(s, seeds=cost.seeds_per_pass(s)))
    assert held <= cost.pass_bytes(s) <= 2.5 * held


# a cell's peak RSS over the interpreter's (the peak reset first: a child inherits its parent's
# ru_maxrss across exec, Linux's /proc/<pid>/clear_refs "5" resets VmHWM)
PEAK = """
import sys
import torch
from depthlab.core.measure import measure_cell
from depthlab.planner.cost import pass_plan
from depthlab.vocabulary.settings import RunSettings

def kb(key):
    status = open("/proc/self/status").read()
    return int(status.split(key + ":")[1].split()[0])

torch.set_num_threads(1)
s = RunSettings(**eval(sys.argv[1]))
open("/proc/self/clear_refs", "w").write("5")
before = kb("VmRSS")
measure_cell(s, pass_plan(s))
print((kb("VmHWM") - before) * 1024)
"""


@pytest.mark.slow
@pytest.mark.parametrize("grad_of", ["none", "params"])
def test_a_streamed_pass_holds_what_the_model_says_not_every_block(grad_of):
    """A forward-only pass (grad_of none) and one over its budget (it recomputes blocks in the
    backward pass) draw each block when they need it: the peak RSS a cell adds is within the
    model's pass_bytes and at least half of it, and under a fifth of the full graph's at L = 128."""
    settings = {"depth": 128, "seeds": 2, "grad_of": grad_of, "pass_mb": 200}
    s = RunSettings(**settings)
    assert grad_of == "none" or cost.recomputes(s)
    out = subprocess.run([sys.executable, "-c", PEAK, repr(settings)], capture_output=True,
                         text=True, check=True)
    grown = int(out.stdout.split()[-1])
    assert grown / 2 <= cost.pass_bytes(s) <= 2 * grown, (grown, cost.pass_bytes(s))
    assert cost.pass_bytes(s) < cost.seeds_per_pass(s) * cost._graph_bytes(s) / 5


@pytest.mark.slow
def test_a_forward_only_pass_that_fits_holds_every_block_as_the_model_says():
    """A forward-only pass within its budget holds every block, drawn once: the peak RSS it
    adds is within the model's pass_bytes and at least half of it, and above what the same
    pass streamed holds."""
    settings = {"depth": 64, "seeds": 2, "grad_of": "none"}
    s = RunSettings(**settings)
    assert not cost.streamed(s) and resources.draws(s) == 1
    out = subprocess.run([sys.executable, "-c", PEAK, repr(settings)], capture_output=True,
                         text=True, check=True)
    grown = int(out.stdout.split()[-1])
    assert grown / 2 <= cost.pass_bytes(s) <= 2 * grown, (grown, cost.pass_bytes(s))
    assert cost.pass_bytes(s) > cost.pass_bytes(RunSettings(**settings, pass_mb=100))


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_gpu_fails_before_any_work():
    with pytest.raises(RuntimeError, match=r"device='cuda' was requested.*profiles/slurm-gpu"):
        check_device("cuda")
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="sees no CUDA device"):
        measure_cell(*planned(RunSettings(device="cuda", depth=96, seeds=64)))
    assert time.perf_counter() - start < 1.0  # failed before building 64 seeds x 96 layers
    check_device("cpu")


@pytest.mark.workflow
def test_requests_cover_the_measured_tiny_jobs(tiny_run):
    """Every measure job of the tiny run stayed within the memory and time it would request,
    and the memory request is not a wild overestimate: at most 4x what the job used (the
    runtime request is whole minutes, far above these seconds-long jobs)."""
    config = config_of(ROOT, "config/tiny.yaml")
    checked = 0
    for job in study_jobs(config):
        bench = tiny_run / f"results/benchmarks/measure/{job.study}/{job.arm}/{job.job}.tsv"
        if bench.exists():
            row = pd.read_csv(bench, sep="\t").iloc[0]
            mem, minutes = _requests(job)
            assert row["max_rss"] <= mem <= 4 * row["max_rss"], (job, row["max_rss"], mem)
            assert row["s"] <= 60 * minutes, job
            checked += 1
    assert checked >= 6


@pytest.mark.workflow
def test_gpu_profile_sends_compute_jobs_to_a_gpu(tmp_path):
    """A dry run with profiles/slurm-gpu alone (self-contained: `--profile` stays free for a
    site's own): every measure job asks for the gpu partition, one GPU, 8 CPUs to draw its
    seeds' weights on (the profile's threads), and the cost model's memory and runtime; the
    train jobs ask for a GPU; no localrule does."""
    work = copy_workflow(tmp_path)
    # a dry run caps each job's threads at --cores (1 unless given); a Slurm run does not
    out = run_snakemake(work, "-n", "--workflow-profile", "profiles/slurm-gpu", "--cores", "16",
                        "--configfile", "config/tiny.yaml").stdout
    trains = re.findall(r"rule train:.*?resources: (.*?)\n", out, re.S)
    assert trains and all("gpu=1" in r and "slurm_partition=gpu" in r for r in trains)
    local = re.findall(r"rule (?:fit|aggregate|claims):.*?resources: (.*?)\n", out, re.S)
    assert local and not any("gpu=" in r for r in local)
    config = {**config_of(ROOT, "config/tiny.yaml"), "device": "cuda"}
    jobs = {f"study={j.study}, arm={j.arm}, job={j.job}": j for j in study_jobs(config)}
    blocks = re.findall(r"rule measure:.*?wildcards: (.*?)\n.*?resources: (.*?)\n", out, re.S)
    assert blocks
    for wildcards, requested in blocks:
        job = jobs[wildcards]
        gpu_mb = resources.mem_mb(resources.device_mb(job), margin=1.0)
        assert gpu_mb > resources.DEVICE_BASE_MB
        for expected in ("slurm_partition=gpu", "gpu=1", "cpus_per_task=8",
                         f"mem_mb={resources.mem_mb(resources.measure_mb(job))},",
                         f"gpu_mem_mb={gpu_mb},",
                         f"runtime={resources.runtime_min(resources.measure_seconds(job))},"):
            assert expected in requested + ",", (wildcards, expected)


# ---------------------------------------------------------------- the real cluster


def test_a_test_finds_the_machine_s_scontrol_not_the_stand_in():
    """Outside the tests' own Snakemake runs the PATH is the machine's, with no stand-in
    `scontrol` (tests/conftest.py) before it, in a pytest-xdist worker too: the Slurm fixture's
    start.sh runs `scontrol ping`, which the stand-in fails."""
    assert not [p for p in os.environ["PATH"].split(os.pathsep)
                if os.path.basename(p).startswith(STAND_IN)]


@pytest.fixture(scope="module")
def slurm_cluster():
    """The local Slurm cluster with the test partition and account; stopped afterwards, always.
    The machine has one cluster: concurrent test runs take turns (a lock file), so that one
    run's stop cannot pull the cluster from under another's jobs. Skipped where it cannot be had:
    not root, or Slurm missing and not installable (no apt-get, no package mirror); installed
    but not coming up is a failure."""
    if os.geteuid() != 0:
        pytest.skip("starting the local Slurm cluster needs root (CI runs as root)")
    env = {**os.environ, "DEPTHLAB_SLURM_PARTITION": PARTITION,
           "DEPTHLAB_SLURM_ACCOUNTS": ACCOUNT}
    with open("/var/tmp/depthlab-slurm-test.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            start = subprocess.run([SLURM_TOOLS / "start.sh"], env=env, text=True,
                                   capture_output=True, timeout=900)
            if start.returncode == CANNOT_INSTALL:  # its last stderr line says why
                pytest.skip((start.stderr.strip().splitlines() or ["cannot install Slurm"])[-1])
            assert start.returncode == 0, f"start.sh failed:\n{start.stdout}{start.stderr}"
            yield
        finally:
            subprocess.run([SLURM_TOOLS / "stop.sh"], env=env, capture_output=True, timeout=600)


def _cancel_first_running(workdir, done: threading.Event, cancelled: list) -> None:
    """scancel the first Slurm job of `workdir` seen running (once); its id goes to `cancelled`."""
    while not done.wait(0.5):
        queue = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i|%Z"],
                               capture_output=True, text=True).stdout.split()
        ours = [line.split("|")[0] for line in queue if line.split("|")[1] == str(workdir)]
        if ours:
            time.sleep(1)  # let it get going
            if subprocess.run(["scancel", ours[0]]).returncode == 0:
                cancelled.append(ours[0])
                return


def _sacct(ids) -> dict[str, dict]:
    fields = ["JobID", "Partition", "Account", "State", "ReqMem", "Timelimit"]
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-o", ",".join(fields), "-j", ",".join(ids)],
        capture_output=True, text=True, check=True,
    ).stdout
    return {row[0]: dict(zip(fields, row, strict=True))
            for row in (line.split("|") for line in out.splitlines())}


def _mb(req_mem: str) -> float:
    """sacct's ReqMem (e.g. '1500M', '3G') in MB."""
    return float(req_mem[:-1]) * {"M": 1, "G": 1024}[req_mem[-1]]


def _minutes(limit: str) -> int:
    """sacct's Timelimit ('HH:MM:SS' or 'D-HH:MM:SS') in minutes."""
    days, _, clock = limit.rpartition("-")
    h, m, _ = (int(x) for x in clock.split(":"))
    return int(days or 0) * 1440 + h * 60 + m


@ASKED
@pytest.mark.slurm
@pytest.mark.workflow
def test_tiny_study_on_slurm(slurm_cluster, tiny_run, tmp_path):
    work = copy_workflow(tmp_path)
    config = config_of(ROOT, "config/tiny.yaml")
    targets = [f"results/tables/{study}.parquet" for study in config["studies"]]
    profile = yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text())
    # the command line replaces the profile's default-resources: keep its entries, add ours
    defaults = {**profile["default-resources"], "slurm_partition": PARTITION,
                "slurm_account": ACCOUNT}
    cmd = ["timeout", "-k", "60", "600", SNAKEMAKE, *targets,
           "--workflow-profile", "profiles/slurm", "--configfile", "config/tiny.yaml",
           "--verbose",  # every job's block on the console (the calm console hides them)
           *FAST_STATUS,
           "--default-resources", *(f"{k}={v}" for k, v in defaults.items())]
    done, cancelled = threading.Event(), []
    watcher = threading.Thread(target=_cancel_first_running, args=(work, done, cancelled))
    watcher.start()
    try:
        run = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=700,
                             env={**os.environ, "PYTHONHASHSEED": "0"})
    finally:
        done.set()
        watcher.join()
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-5000:]

    # every compute job ran as a Slurm job in the test partition and account; no localrule did
    submitted = SUBMITTED.findall(log)
    local_rules = set(re.findall(r"^localrule (\w+):", log, re.M))
    assert "aggregate" in local_rules, log[-5000:]
    assert not local_rules & {rule for _, rule, _ in submitted}, submitted
    acct = _sacct([slurm_id for slurm_id, _, _ in submitted])
    assert len(acct) == len(submitted)
    for row in acct.values():
        assert (row["Partition"], row["Account"]) == (PARTITION, ACCOUNT), row
    completed = {name for slurm_id, _, name in submitted
                 if acct[slurm_id]["State"] == "COMPLETED"}
    run = run_folder(work, "config/tiny.yaml")  # a named run: runs/tiny/
    shards = list((run / "results/runs").glob("*/*/*.parquet"))
    assert len(completed) == len(shards) >= 6
    for shard in shards:
        study, arm, job = shard.relative_to(run / "results/runs").with_suffix("").parts
        assert f"{study}_{arm}_{job}" in completed, shard
        assert read_meta(shard)["device"] == "cpu"  # the run metadata records the device

    # the cancelled job failed, was resubmitted with the attempt-2 requests, and completed
    assert len(cancelled) == 1, "no Slurm job of this run was seen running"
    assert acct[cancelled[0]]["State"].startswith("CANCELLED"), acct[cancelled[0]]
    assert "Trying to restart job" in log
    name = next(name for slurm_id, _, name in submitted if slurm_id == cancelled[0])
    retries = [slurm_id for slurm_id, _, n in submitted if n == name and slurm_id != cancelled[0]]
    assert [acct[r]["State"] for r in retries] == ["COMPLETED"]
    first, retry = acct[cancelled[0]], acct[retries[0]]
    assert _mb(retry["ReqMem"]) == 2 * _mb(first["ReqMem"])
    assert _minutes(retry["Timelimit"]) == 2 * _minutes(first["Timelimit"])

    # the same numbers as the local run
    for target in targets:
        slurm, local = pd.read_parquet(run / target), pd.read_parquet(tiny_run / target)
        pd.testing.assert_frame_equal(slurm, local, check_exact=True)
