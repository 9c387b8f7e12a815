"""The benchmark suite, one command: `python -m benchmarks.run` (docs/PERFORMANCE.md). Writes
results/benchmarks/*.csv, scaling.png and summary.md.

In order, from one run: end to end (benchmarks/endtoend.py: the GEMM rates the floors use, the
same work by depthlab and by plain scripts, Snakemake's start-up, two figures from nothing, the
training step against a plain loop, the whole default run against its FLOP floor; leave the
default run out with --skip-default-run), the DAG build of a 5,000-cell grid and the whole
stack96 study (benchmarks/workflow.py), then in this process the stack96 L=96 cell with 6
seeds by the measure path and by the straightforward per-seed loop, and the cost against depth
and seed count. On a machine with CUDA the cell is also timed on the GPU in float64 and float32.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
from pathlib import Path

import pandas as pd
import torch

from benchmarks import compute, endtoend, plot, workflow
from depthlab.core.runtime import start_compute_job
from depthlab.planner.cost import cell_flops
from depthlab.vocabulary.settings import RunSettings

OUT = workflow.ROOT / "results/benchmarks"
# the stack96 L=96 Pre-LN cell at the study's defaults
CELL = RunSettings(placement="pre", depth=96, seeds=6)


def machine() -> str:
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    return (f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
            f"torch {torch.__version__}, {gpu}")


def cell_rows(s: RunSettings, repeats: int) -> tuple[list[dict], list[dict]]:
    """The cell by the straightforward per-seed loop (with the C allocator as a plain script has
    it, then as depthlab's jobs set it) and by the measure path (its first pass after the
    allocator is set, as in a fresh job, then warm repeats); analytic FLOPs and the GEMM limit
    at the cell's sizes."""
    flops = cell_flops(s)
    gemm = compute.gemm_rates(s)
    limit = statistics.harmonic_mean([r["gflop_s"] for r in gemm])
    loop_cell = RunSettings(**{**s.as_columns(), "attention": "torch_mha"})
    n_loop = max(1, repeats // 2)
    rows = [{"path": "per_seed_loop", "pass": "plain_allocator",
             "total_s": compute.naive_loop(loop_cell)} for _ in range(n_loop)]
    start_compute_job(torch.get_num_threads())  # as every measure job does (depthlab.core.runtime)
    passes = [compute.measure_path(s) for _ in range(repeats + 1)]
    rows += [{"path": "measure", "pass": "cold" if i == 0 else "warm", **p,
              "total_s": sum(p.values())} for i, p in enumerate(passes)]
    rows += [{"path": "per_seed_loop", "pass": "warm",
              "total_s": compute.naive_loop(loop_cell)} for _ in range(n_loop)]
    for row in rows:
        # gflop_s: over forward+backward alone (the measure path) or the whole loop
        seconds = row.get("forward_backward_s", row["total_s"])
        row.update(device=s.device, dtype=s.dtype, gflop=flops / 1e9, gemm_gflop_s=limit,
                   gflop_s=flops / seconds / 1e9, effective_gflop_s=flops / row["total_s"] / 1e9)
        row["share_of_gemm"] = row["gflop_s"] / limit
    return gemm, rows


def summary(cells: pd.DataFrame, gemm: pd.DataFrame, scale: pd.DataFrame, dag: list | None,
            study: dict | None) -> str:
    """The headline ratios as markdown."""
    lines = [f"Machine: {machine()}", ""]
    for (device, dtype), c in cells.groupby(["device", "dtype"]):
        m = c[c.path == "measure"]
        warm = m[m["pass"] == "warm"]
        loops = c[c.path == "per_seed_loop"].groupby("pass").total_s.median()
        loop = loops["warm"]
        lines += [
            f"## Cell: stack96 L=96 Pre-LN, 6 seeds, {device} {dtype} "
            f"({m.gflop.iloc[0]:.1f} GFLOP forward+backward)",
            f"- GEMM limit at the stack's sizes: {m.gemm_gflop_s.iloc[0]:.1f} GFLOP/s",
            f"- measure path, forward+backward: cold {m.gflop_s.iloc[0]:.1f} GFLOP/s "
            f"({m.share_of_gemm.iloc[0]:.0%} of GEMM), warm median "
            f"{warm.gflop_s.median():.1f} GFLOP/s ({warm.share_of_gemm.median():.0%})",
            f"- whole pass (build {warm.build_s.median():.2f} s + forward/backward "
            f"{warm.forward_backward_s.median():.2f} s + probes {warm.probes_s.median():.2f} s)"
            f": {warm.total_s.median():.2f} s warm, {m.total_s.iloc[0]:.2f} s cold",
            f"- per-seed nn.TransformerEncoderLayer loop (build, forward, backward, norms): "
            f"{loops['plain_allocator']:.2f} s with the default allocator, {loop:.2f} s with "
            f"depthlab's; speed-up of the measure path's whole pass: "
            f"{loops['plain_allocator'] / warm.total_s.median():.1f}x and "
            f"{loop / warm.total_s.median():.1f}x; first pass: "
            f"{loops['plain_allocator'] / m.total_s.iloc[0]:.1f}x",
            "",
        ]
    for axis, g in scale.groupby("axis"):
        per = g.seconds / g.gflop
        lines.append(f"- seconds per GFLOP against {axis} {list(g.value)}: "
                     + ", ".join(f"{v:.3f}" for v in per))
    for row in dag or []:
        lines.append(
            f"- `snakemake -n` of {row['cells']} cells as {row['jobs']} jobs ({row['layout']}): "
            f"{row['dry_run_s']:.1f} s, of which {row['startup_s']:.1f} s start-up (the same "
            f"on a 3-cell grid) and {row['dag_s']:.1f} s DAG build and listing; one job's "
            f"re-parse on a cluster (`snakemake -n <its shard>`): {row['one_job_s']:.1f} s")
    if study:
        lines.append(
            f"- whole {study['study']} study, `snakemake --cores {study['cores']}`: "
            f"{study['wall_s']:.0f} s wall, {study['jobs']} measure jobs, {study['job_wall_s']:.0f}"
            f" s job wall, {study['compute_s']:.0f} s in-job compute; start-up and scheduling "
            f"{study['startup_share']:.1%} of the wall time")
    return "\n".join(lines) + "\n"


def end_to_end(base: Path, args) -> dict:
    """The figures of benchmarks/endtoend.py from one run, flattened into one row."""
    out = {f"gemm_{k}_gflop_s": v for k, v in endtoend.gemm_limits().items()}  # the limit first
    same, start = endtoend.same_work(base), endtoend.startup(base)
    same.update(endtoend.same_work_bound(same, start))
    out.update({f"same_work_{k}": v for k, v in same.items()})
    out.update({f"startup_{k}": v for k, v in start.items()})
    for target in ("fig_grad_ratio_by_depth", "fig_increments_by_layer"):
        out[f"{target}_from_nothing_s"] = endtoend.from_nothing(base, target)["wall_s"]
    out.update({f"train_{k}": v for k, v in endtoend.train_step().items()})
    limits = {k: out[f"gemm_{k}_gflop_s"] for k in ("float64", "float32")}
    for who in ("depthlab", "plain"):  # the step's share of the float32 GEMM limit
        rate = out["train_step_gflop"] / out[f"train_{who}_step_s"]
        out[f"train_{who}_gemm_share"] = rate / limits["float32"]
    out.update({f"default_{k}": v for k, v in endtoend.default_floor(limits).items()})
    if not args.skip_default_run:
        out.update({f"default_{k}": v for k, v in endtoend.default_run(base).items()})
        out["default_over_floor"] = out["default_wall_s"] / out["default_floor_s"]
    return out


def end_to_end_summary(e: dict) -> str:
    """The end-to-end figures as markdown, ratios first."""
    rates = [f"{t} {e[f'gemm_{t}_gflop_s']:.1f} GFLOP/s ({e[f'gemm_{t}_one_process_gflop_s']:.1f}"
             f" and {e[f'gemm_{t}_side_by_side_gflop_s']:.1f})" for t in ("float64", "float32")]
    lines = [
        "## End to end",
        "- GEMM rates at the work's shapes (the limit: the higher of one process on all "
        "threads and single-threaded processes side by side): " + ", ".join(rates),
        f"- same work (stack96's two tables; run depthlab, plain, plain, depthlab; means): "
        f"depthlab {e['same_work_depthlab_wall_s']:.1f} s wall "
        f"({e['same_work_depthlab_walls_s']}), plain scripts {e['same_work_plain_wall_s']:.1f} s "
        f"({e['same_work_plain_walls_s']}): "
        f"{e['same_work_speedup_wall']:.2f}x faster; CPU {e['same_work_cpu_ratio']:.2f}x; peak "
        f"memory of the largest process {e['same_work_depthlab_peak_mb']:.0f} MB against "
        f"{e['same_work_plain_peak_mb']:.0f} MB ({e['same_work_memory_ratio']:.2f}x), of all "
        f"processes together {e['same_work_depthlab_together_peak_mb']:.0f} MB against "
        f"{e['same_work_plain_together_peak_mb']:.0f} MB "
        f"({e['same_work_together_memory_ratio']:.2f}x)",
        f"- same work, depthlab's {e['same_work_depthlab_jobs']} measure jobs: "
        f"{e['same_work_depthlab_job_wall_s']:.1f} s of job wall, "
        f"{e['same_work_depthlab_compute_s']:.1f} s of in-job compute; with nothing spent per "
        f"job (start-up, then that compute spread evenly over the cores) "
        f"{e['same_work_bound_s']:.1f} s: at most {e['same_work_bound_speedup']:.2f}x faster "
        f"than the plain scripts, {e['same_work_bound_speedup_without_plugin']:.2f}x without "
        "the Slurm plugin's wait",
        f"- Snakemake start-up (`-n`, nothing to run): {e['startup_dry_run_s']:.1f} s, of which "
        f"the Slurm plugin's import {e['startup_plugin_import_s']:.1f} s; without it "
        f"{e['startup_dry_run_without_plugin_s']:.1f} s",
        f"- from nothing: fig_grad_ratio_by_depth {e['fig_grad_ratio_by_depth_from_nothing_s']:.0f}"
        f" s, fig_increments_by_layer {e['fig_increments_by_layer_from_nothing_s']:.0f} s",
        f"- training step (L = 24, {e['train_seeds']} seeds): depthlab "
        f"{1000 * e['train_depthlab_step_s']:.0f} ms, plain loop "
        f"{1000 * e['train_plain_step_s']:.0f} ms for the same seeds: {e['train_ratio']:.2f}x; "
        f"{e['train_step_gflop']:.1f} GFLOP a step: {100 * e['train_depthlab_gemm_share']:.0f}%"
        f" and {100 * e['train_plain_gemm_share']:.0f}% of the float32 GEMM limit",
        f"- default run's FLOP floor: {e['default_init_tflop']:.1f} TFLOP float64 + "
        f"{e['default_training_tflop']:.1f} TFLOP float32 = {e['default_floor_s'] / 60:.1f} min",
    ]
    if "default_wall_s" in e:
        lines.append(f"- default run (`snakemake --cores 2` from nothing): "
                     f"{e['default_wall_s'] / 60:.1f} min, {e['default_over_floor']:.2f}x its "
                     f"floor; CPU {e['default_cpu_s'] / 60:.1f} min; peak memory "
                     f"{e['default_peak_mb']:.0f} MB (largest process), "
                     f"{e['default_together_peak_mb']:.0f} MB (all together)")
    return "\n".join(lines) + "\n\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-study", action="store_true", help="leave out the whole study")
    parser.add_argument("--skip-dag", action="store_true", help="leave out the 5,000-cell DAG")
    parser.add_argument("--skip-default-run", action="store_true",
                        help="leave out the whole default run (about 30 minutes)")
    parser.add_argument("--repeats", type=int, default=3, help="warm passes per measurement")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--study-dir", type=Path, help="run the whole study here and keep it "
                        "(default: a temporary folder)")
    parser.add_argument("--work-dir", type=Path, help="run the end-to-end parts (the default "
                        "run among them) here and keep them (default: a temporary folder)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    # the workflow first, while this process holds no memory (it keeps what it frees, as the
    # measure jobs do, and page faults cost seconds per GB on VMs)
    with tempfile.TemporaryDirectory(prefix="depthlab-bench-") as tmp:
        e2e = end_to_end(args.work_dir or Path(tmp), args)
        dag = None if args.skip_dag else workflow.dag_build(workflow.workdir(Path(tmp) / "dag"))
        study = None if args.skip_study else workflow.whole_study(
            workflow.workdir(args.study_dir or Path(tmp) / "study"))
    pd.DataFrame([e2e]).to_csv(args.out / "endtoend.csv", index=False)
    devices = [("cpu", "float64")]
    if torch.cuda.is_available():
        devices += [("cuda", "float64"), ("cuda", "float32")]
    gemm_rows, cell_frames = [], []
    for device, dtype in devices:
        s = RunSettings(**{**CELL.as_columns(), "device": device, "dtype": dtype})
        gemm, rows = cell_rows(s, args.repeats)
        gemm_rows += [{"device": device, "dtype": dtype, **g} for g in gemm]
        cell_frames.append(pd.DataFrame(rows))
    cells, gemm = pd.concat(cell_frames), pd.DataFrame(gemm_rows)
    scale = pd.DataFrame(compute.scaling(RunSettings(placement="pre", depth=24, seeds=6),
                                         depths=[6, 12, 24, 48, 96], seeds=[1, 2, 4, 6, 12]))
    cells.to_csv(args.out / "cell.csv", index=False)
    gemm.to_csv(args.out / "gemm.csv", index=False)
    scale.to_csv(args.out / "scaling.csv", index=False)
    for name, rows in (("dag", dag), ("study", [study] if study else None)):
        if rows:
            pd.DataFrame(rows).to_csv(args.out / f"{name}.csv", index=False)
    plot.scaling_figure(scale, cells, args.out / "scaling.png")
    text = end_to_end_summary(e2e) + summary(cells, gemm, scale, dag, study)
    (args.out / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
