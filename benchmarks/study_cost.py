"""What a whole config costs by the request model (depthlab.pipeline.requests), on this kind of
machine, on a Slurm cluster of CPU nodes and on one GPU node:

    python -m benchmarks.study_cost config/scale.yaml [--nodes 1 4 16] [--cores 2]

- CPU: every measure job's predicted seconds on a core of its own; the wall time of `cores`
  cores per node on N nodes is the longest-first schedule of the jobs (a lower bound on what
  Snakemake's scheduler, which does not know the costs, achieves).
- GPU (an estimate from the model, not a measurement: benchmarks/gpu_check.sh measures it where
  a GPU is lent): the CPU-side terms stay (start-up, drawing the weights, which the project does
  on the CPU so that a seed gives the same model on every device, and each block call's
  dispatch as fitted here), the FLOPs run at GPU_FLOPS_PER_S of the dtype and the probes'
  element-wise work is taken as free.
"""

from __future__ import annotations

import argparse
import heapq
from pathlib import Path

from benchmarks.requests import config_jobs
from depthlab.pipeline import requests
from depthlab.pipeline.grid import Job

# an H100/H200-class GPU's dense rates (NVIDIA's data sheet, SXM: FP64 tensor core 67 TFLOP/s,
# FP32 67 TFLOP/s), at half of the peak, which batched products of these small shapes may not
# reach either
GPU_FLOPS_PER_S = {"float64": 0.5 * 67e12, "float32": 0.5 * 67e12}


def measure_jobs(config_files: list[Path]) -> list[tuple[Job, dict]]:
    """The config's measure jobs (not its training), each with the cells it copies."""
    jobs, training, copies = config_jobs(config_files)
    return [(j, copies.get((j.study, j.arm, j.job), {})) for j in jobs
            if (j.study, j.arm) not in training]


def drawing_seconds(job: Job, copied) -> float:
    """The model's seconds a measure job spends drawing its weights (on the CPU)."""
    return requests.measure_terms(job, copied)["drawn"] * requests.DRAW_S_PER_NUMBER


def gpu_seconds(job: Job, copied, dtype: str) -> float:
    """The model's seconds of a measure job on a GPU in `dtype` (module docstring)."""
    terms = requests.measure_terms(job, copied)
    return (requests.STARTUP_S + terms["drawn"] * requests.DRAW_S_PER_NUMBER
            + terms["flops"] / GPU_FLOPS_PER_S[dtype] + terms["calls"] * requests.CALL_S)


def makespan(seconds: list[float], workers: int) -> float:
    """The wall time of the jobs on `workers` cores, longest first, each to the least loaded."""
    loads = [0.0] * workers
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(loads, loads[0] + s)
    return max(loads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+", type=Path)
    parser.add_argument("--nodes", nargs="+", type=int, default=[1, 4, 16])
    parser.add_argument("--cores", type=int, default=2, help="cores per node")
    args = parser.parse_args()
    jobs = measure_jobs(args.configs)
    cpu = [requests.measure_seconds(j, c) for j, c in jobs]
    largest = max(requests.measure_mb(j, c) for j, c in jobs)
    print(f"{len(jobs)} measure jobs, {sum(cpu) / 3600:.2f} core-hours predicted, "
          f"largest predicted peak {largest / 1e3:.2f} GB")
    for n in args.nodes:
        print(f"CPU, {n} node(s) x {args.cores} cores: "
              f"{makespan(cpu, n * args.cores) / 60:.1f} min")
    drawing = sum(drawing_seconds(j, c) for j, c in jobs)
    for dtype in ("float64", "float32"):
        gpu = sum(gpu_seconds(j, c, dtype) for j, c in jobs)
        print(f"one GPU node, {dtype}, the jobs one after another: {gpu / 60:.1f} min, of "
              f"which {drawing / 60:.1f} min drawing the weights on the CPU")


if __name__ == "__main__":
    main()
