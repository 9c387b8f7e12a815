"""benchmarks/ at a toy size: the plain scripts the end-to-end comparison times do the same work
as depthlab (the same numbers per seed), the cost report runs on a config, and the GPU machine's
device check runs here on the CPU."""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import sys
import time

import pandas as pd
import pytest
import torch
from conftest import ROOT, snakemake_env

from benchmarks import plain
from depthlab.core.measure import measure_cell
from depthlab.planner.cost import pass_plan
from depthlab.vocabulary.settings import RunSettings


@pytest.mark.parametrize("placement", ["post", "pre", "none"])
def test_the_plain_script_s_gradient_ratio_is_depthlab_s(placement):
    """benchmarks/plain.py (nn.Linear and nn.LayerNorm per seed, torch.manual_seed(seed)) and
    depthlab's seed-batched pass give each seed's first/last gradient ratio to round-off: the
    end-to-end comparison times the same work (stack96's settings, L = 3, seeds 4 and 5)."""
    s = RunSettings(placement=placement, depth=3, seeds=2, seed_offset=4,
                    d_model=plain.D, heads=plain.HEADS, tokens=plain.TOKENS)
    rows = measure_cell(s, pass_plan(s))
    ours = rows[rows["metric"] == "grad_ratio"].set_index("seed")["value"]
    assert sorted(ours.index) == [4, 5]
    threads = torch.get_num_threads()
    try:
        for seed in (4, 5):
            assert plain.grad_ratio(placement, 3, seed) == pytest.approx(ours[seed], rel=1e-10)
    finally:
        torch.set_num_threads(threads)


def test_the_plain_stream_factor_is_depthlab_s():
    s = RunSettings(placement="pre", depth=3, seeds=1, d_model=plain.D, heads=plain.HEADS,
                    tokens=plain.TOKENS, grad_of="none")
    rows = measure_cell(dataclasses.replace(s, out_scale=3.0), pass_plan(s))
    sd = rows[(rows["metric"] == "stream_sd") & (rows["sublayer"] == "block")].set_index("layer")
    ours = sd.loc[3, "value"] / sd.loc[1, "value"]
    assert plain.stream_factor(3, 3.0, 0) == pytest.approx(ours, rel=1e-10)


@pytest.mark.slow
def test_the_cost_report_runs_on_the_tiny_config():
    out = subprocess.run([sys.executable, "-m", "benchmarks.study_cost", "config/tiny.yaml",
                          "--nodes", "1", "2"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    jobs = re.search(r"^(\d+) measure jobs, ([\d.]+) core-hours", out, re.M)
    assert jobs and int(jobs[1]) > 0 and float(jobs[2]) > 0, out
    minutes = [float(m) for m in re.findall(r"cores: ([\d.]+) min", out)]
    assert len(minutes) == 2 and minutes[0] >= minutes[1] > 0, out  # more nodes, no slower


def test_gpu_check_judges_a_difference_against_its_metric_s_size():
    """A difference of 1e-9 on a small value of a metric whose values reach 1e4 (a variance
    increment computed from two variances near 1e4) is round-off; on a metric of size 1 it is
    not (benchmarks/gpu_check.largest_difference)."""
    from benchmarks.gpu_check import largest_difference

    def frame(delta: float, other: float) -> pd.DataFrame:
        return pd.DataFrame({"seed": 0, "layer": [1, 2, 1], "sublayer": "block",
                             "metric": ["delta", "delta", "omega"],
                             "value": [1e-3 + delta, 1e4, 0.5 + other]})

    assert largest_difference(frame(0, 0), frame(1e-9, 0)) == pytest.approx(1e-13)
    assert largest_difference(frame(0, 0), frame(0, 1e-9)) == pytest.approx(2e-9)
    assert largest_difference(frame(0, 0), frame(0, 0)) == 0


@pytest.mark.workflow
def test_the_device_check_runs_on_the_cpu(tmp_path):
    """`bash benchmarks/gpu_bench.sh --quick` (every part at a toy size) with the CPU as the
    device: it exits 0 and prints the six parts, each with a finite ratio, and the float64
    runs of the CPU against the CPU are bit-identical (the pipeline is deterministic)."""
    env = {**snakemake_env(), "PYTHON": sys.executable, "OUT": str(tmp_path)}
    done = subprocess.run(["bash", "benchmarks/gpu_bench.sh", "--quick", "--device", "cpu"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = pd.read_csv(tmp_path / "gpu_bench.csv")
    assert [p.split()[0] for p in table["part"]] == ["1", "2", "3", "4", "5", "6"]
    for part in table["part"]:
        assert part in done.stdout
    assert (table["device"] == "cpu").all()
    assert all(math.isfinite(r) and r > 0 for r in table["ratio"]), table
    differences = table["largest_rel_diff"].dropna()
    assert len(differences) == 5 and (differences == 0).all(), table  # not the training step
    assert "GPU busy n/a (no GPU)" in table["notes"].iloc[4]
    # part 5's larger pass ran, its per-seed numbers within round-off of the CPU's in passes
    # of one seed
    larger = re.search(r"passes of 3: [0-9.e+-]+ s, .*?, ([0-9.e+-]+) from the CPU",
                       table["notes"].iloc[4])
    assert larger and float(larger[1]) < 1e-10, table["notes"].iloc[4]
    assert "torch.compile (eager)" in table["notes"].iloc[5]


def test_part_5_tries_passes_of_four_times_the_seeds_and_of_all_of_them():
    """gpu_bench.larger_passes: 4 times the seeds the cell puts in one pass and all its seeds,
    those above its own; none where one pass holds them all."""
    from benchmarks.gpu_bench import larger_passes

    s = RunSettings(depth=96, seeds=36)  # the stack96 grad arm's L = 96 cell
    assert pass_plan(s).seeds_per_pass == 3
    assert larger_passes(s) == [12, 36]
    assert larger_passes(dataclasses.replace(s, seed_batch=12)) == [36]
    assert larger_passes(dataclasses.replace(s, seed_batch=36)) == []


def test_gpu_check_measures_a_cell_as_measure_cell_does():
    """gpu_check.timed (a job of one cell, as the pipeline measures it) gives measure_cell's
    rows, bit for bit, and its wall seconds."""
    from benchmarks.gpu_check import timed

    s = RunSettings(depth=3, seeds=2, d_model=16, tokens=8)
    keys = ["seed", "layer", "sublayer", "metric"]
    frame, seconds = timed(s)
    alone = measure_cell(s, pass_plan(s))
    assert seconds > 0 and len(frame) == len(alone) > 0
    pd.testing.assert_series_equal(frame.set_index(keys)["value"].sort_index(),
                                   alone.set_index(keys)["value"].sort_index())


@pytest.mark.slow
@pytest.mark.parametrize("placement", ["pre", "post", "deepnorm"])
def test_the_compiled_block_loop_computes_depthlab_s_forward_and_its_gradients(placement):
    """benchmarks/compiled.py: the block loop of one block function gives depthlab's forward
    pass (model.forward's last stream, bit for bit), and compiled by dynamo (eager backend, on
    the CPU) the same block gradient norms, bit for bit, as eager autograd."""
    import torch

    from benchmarks import compiled
    from depthlab.core.model import build, forward
    from depthlab.vocabulary.settings import RunSettings
    s = RunSettings(placement=placement, depth=4, seeds=2, d_model=16, tokens=8)
    params, draw = build(s, [0, 1])
    step = compiled.block_step(s)
    h = draw.x.reshape(2, -1, s.d_model)
    for p in params.blocks:
        h = step(h, p)[0]
    with torch.no_grad():
        _, trace = forward(params, draw.x, s)
    assert torch.equal(h.detach(), trace.stream[-1])
    result = compiled.compare(s, rounds=1)
    assert result["eager_sq"].shape == (2, 4) and bool((result["eager_sq"] > 0).all())
    assert result["backend"] == "eager" and result["largest_rel_diff"] == 0.0


def test_the_busy_sampler_averages_its_samples():
    """benchmarks/gpu_bench.Busy: a reading every `every` seconds while its block runs."""
    from benchmarks.gpu_bench import Busy

    readings = iter([20.0, 40.0] * 100)
    with Busy(lambda: next(readings), every=0.01) as busy:
        time.sleep(0.2)
    assert len(busy.values) >= 4
    assert busy.percent == pytest.approx(sum(busy.values) / len(busy.values))
    assert 20 <= busy.percent <= 40
    assert not busy.thread.is_alive()


def test_the_same_work_config_plans_the_plain_scripts_cells(tmp_path):
    """benchmarks/endtoend.same_work_config, merged onto config/config.yaml as Snakemake merges
    it, plans exactly the plain scripts' cells (benchmarks/plain.py): the gradient table's
    3 placements x 5 depths and the stream table's 3 + 2 cells, each at their 6 seeds, and no
    other stack96 arm."""
    import yaml

    from benchmarks.endtoend import same_work_config
    from depthlab.planner.grid import study_jobs
    from depthlab.planner.overlay import config_of

    (tmp_path / "same.yaml").write_text(yaml.safe_dump(same_work_config(), sort_keys=False))
    jobs = [j for j in study_jobs(config_of(ROOT, str(tmp_path / "same.yaml")))
            if j.study == "stack96"]
    cells = {}
    for job in jobs:
        for cell in job.cells:
            cells.setdefault(job.arm, []).append(cell.settings)
    assert {arm: len(c) for arm, c in cells.items()} == {"grad": 15, "stream": 3,
                                                         "stream_scaled": 2}
    assert all(s.seeds == plain.SEEDS for c in cells.values() for s in c)
    assert {(s.placement, s.depth) for s in cells["grad"]} == {
        (p, d) for p in ("post", "pre", "none") for d in (6, 20, 24, 48, 96)}
    assert sorted((s.depth, s.out_scale) for s in [*cells["stream"], *cells["stream_scaled"]]) \
        == [(6, 1), (24, 1), (96, 1), (96, 3), (96, 10)]


def test_a_block_the_compiler_cannot_build_is_reported_with_the_eager_loop(monkeypatch):
    """benchmarks/compiled.compare: where torch.compile fails, the eager loop's seconds and
    norms come back with the error's first line, so the device check reports it in part 6's
    notes instead of failing the part (depthlab itself runs eagerly)."""
    import torch

    from benchmarks import compiled
    from depthlab.vocabulary.settings import RunSettings

    def refuse(*args, **kwargs):
        raise RuntimeError("no compiler here\nsecond line")

    monkeypatch.setattr(torch, "compile", refuse)
    found = compiled.compare(RunSettings(depth=3, seeds=2, d_model=16, tokens=8), rounds=1)
    assert found["error"] == "RuntimeError: no compiler here"
    assert found["eager_s"] > 0 and found["eager_sq"].shape == (2, 3)
    assert "compiled_s" not in found


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_study_from_nothing_lets_its_jobs_share_the_gpu_by_its_memory(monkeypatch, tmp_path,
                                                                         device):
    """gpu_bench --study: one snakemake run of the config on the device with every core; on
    cuda it passes the GPU's memory (80 GB here, by a stand-in) as --resources gpu_mem_mb, the
    resource every compute job declares; the row holds the run's seconds and jobs."""
    import types

    import torch

    from benchmarks import gpu_bench
    calls = []

    def run(work, *args):
        calls.append(args)
        return 12.5

    monkeypatch.setattr(gpu_bench, "snakemake", run)
    monkeypatch.setattr(gpu_bench, "jobs_run", lambda work: 7)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda index: types.SimpleNamespace(total_memory=80 * 10**9))
    row = gpu_bench.study_from_nothing(tmp_path, device, "config/scale.yaml").iloc[0]
    (args,) = calls
    assert args[:6] == ("--cores", str(gpu_bench.CORES), "--configfile", "config/scale.yaml",
                        "--config", f"device={device}")
    assert args[6:] == (("--resources", "gpu_mem_mb=80000") if device == "cuda" else ())
    assert row["device_s"] == 12.5 and row["notes"].startswith("jobs 7;")
