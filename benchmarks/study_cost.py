"""What a whole config costs by the request model (depthlab.planner.resources), on this kind of
machine, on a Slurm cluster of CPU nodes and on one GPU node:

    python -m benchmarks.study_cost config/scale.yaml [--nodes 1 4 16] [--cores 2]

- CPU: every measure job's predicted seconds on a core of its own; the wall time of `cores`
  cores per node on N nodes is the longest-first schedule of the jobs (a lower bound on what
  Snakemake's scheduler, which does not know the costs, achieves).
- GPU (an estimate from the model, not a measurement: benchmarks/gpu_bench.sh measures it where
  a GPU is lent): the CPU-side terms stay (start-up, drawing the weights, which the project does
  on the CPU so that a seed gives the same model on every device, and each block call's
  dispatch as fitted here), the FLOPs run at GPU_FLOPS_PER_S of the dtype and the probes'
  element-wise work is taken as free.
"""

from __future__ import annotations

import argparse
import heapq
from pathlib import Path

from benchmarks.resources import config_jobs
from depthlab.planner import cost, resources
from depthlab.vocabulary.jobs import Job

# an H100/H200-class GPU's dense rates (NVIDIA's data sheet, SXM: FP64 tensor core 67 TFLOP/s,
# FP32 67 TFLOP/s), at half of the peak, which batched products of these small shapes may not
# reach either
GPU_FLOPS_PER_S = {"float64": 0.5 * 67e12, "float32": 0.5 * 67e12}


# a training step's per-block kernel launches on a GPU (forward, backward, AdamW; an assumption
# of about 40 launches of 10 us, not a fit: these small shapes are launch-bound)
GPU_S_PER_LAYER_STEP = 4e-4


def config_cost_jobs(config_files: list[Path]) -> tuple[list[tuple[Job, dict]], list[tuple]]:
    """The config's measure jobs, each with the cells it copies, and its train jobs, each with
    its arm's TrainSettings."""
    jobs, training, copies = config_jobs(config_files)
    measure = [(j, copies.get((j.study, j.arm, j.job), {})) for j in jobs
               if (j.study, j.arm) not in training]
    train = [(j, training[(j.study, j.arm)]) for j in jobs if (j.study, j.arm) in training]
    return measure, train


def gpu_train_seconds(job: Job, ts) -> float:
    """The model's seconds of a train job on a GPU: start-up, its FLOPs at the float32 rate
    (bfloat16 autocast taken at the same rate) and GPU_S_PER_LAYER_STEP per block and step."""
    flops = sum(cost.training_flops(c.settings, ts) for c in job.cells)
    return (resources.CPU.startup_s + flops / GPU_FLOPS_PER_S["float32"]
            + resources.layer_steps(job, ts) * GPU_S_PER_LAYER_STEP)


def drawing_seconds(job: Job, copied) -> float:
    """The model's seconds a measure job spends drawing its weights (on the CPU)."""
    return resources.measure_terms(job, copied)["drawn"] * resources.CPU.draw_s_per_number


def gpu_seconds(job: Job, copied, dtype: str) -> float:
    """The model's seconds of a measure job on a GPU in `dtype` (module docstring)."""
    terms = resources.measure_terms(job, copied)
    cpu = resources.CPU
    return (cpu.startup_s + terms["drawn"] * cpu.draw_s_per_number
            + terms["flops"] / GPU_FLOPS_PER_S[dtype] + terms["calls"] * cpu.call_s)


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
    jobs, train = config_cost_jobs(args.configs)
    cpu = [resources.measure_seconds(j, c) for j, c in jobs]
    cpu_train = [resources.train_seconds(j, ts) for j, ts in train]
    largest = max([resources.measure_mb(j, c) for j, c in jobs]
                  + [resources.train_mb(j) for j, _ in train])
    print(f"{len(jobs)} measure jobs, {sum(cpu) / 3600:.2f} core-hours predicted; "
          f"{len(train)} train jobs, {sum(cpu_train) / 3600:.2f} core-hours; "
          f"largest predicted peak {largest / 1e3:.2f} GB")
    for n in args.nodes:
        print(f"CPU, {n} node(s) x {args.cores} cores: "
              f"{makespan(cpu + cpu_train, n * args.cores) / 60:.1f} min")
    drawing = sum(drawing_seconds(j, c) for j, c in jobs)
    gpu_train = sum(gpu_train_seconds(j, ts) for j, ts in train)
    for dtype in ("float64", "float32"):
        gpu = sum(gpu_seconds(j, c, dtype) for j, c in jobs)
        print(f"one GPU node, measure jobs in {dtype}, then the train jobs, one after another: "
              f"{(gpu + gpu_train) / 60:.1f} min, of which {drawing / 60:.1f} min drawing the "
              f"weights on the CPU and {gpu_train / 60:.1f} min training")


if __name__ == "__main__":
    main()
