"""What a job asks a cluster for (Snakemake's `runtime` in minutes and `mem_mb`): a prediction of
what the job uses, times a margin. The predictions are fitted to what this project's jobs used
(Snakemake's `benchmark:` files: single-thread CPU seconds and peak RSS) by
`python -m benchmarks.requests`, which also checks that each is within 2x of every job it saw
(docs/PERFORMANCE.md, "Requests against use"). No torch; not part of the measure code's hash (a
request changes no number).

- measure: CPU seconds = STARTUP_S + FLOPs / MEASURE_FLOPS_PER_S + activation elements x
  PROBE_S_PER_ELEMENT (the probes touch every stream, branch and normalised state of every
  block and seed); peak MB = BASE_MB + PASS_SHARE x the largest pass's bytes
  (depthlab.pipeline.cost.pass_bytes, an upper bound of what autograd holds).
- train: CPU seconds = STARTUP_S + training FLOPs / TRAIN_FLOPS_PER_S + layer steps (steps x
  depth, every cell: the per-block operations each step dispatches whatever the batch) x
  TRAIN_S_PER_LAYER_STEP (the two terms are confounded on these jobs: read them as a model of
  the time, not as a throughput); peak MB = BASE_MB + TRAIN_SHARE x `train_bytes`.
"""

from __future__ import annotations

import math

from depthlab.pipeline import cost
from depthlab.pipeline.grid import Job

# fitted by benchmarks/requests.py on the default, training_seeds and fixes runs of 2026-12-02
# (one thread per job; the fit and its worst ratios are in docs/PERFORMANCE.md)
STARTUP_S = 2.4  # process start, imports, reading the config and writing the shard
MEASURE_FLOPS_PER_S = 70e9  # forward and backward GEMMs, float64
PROBE_S_PER_ELEMENT = 2.0e-7  # per element of one block's activations (seed x token x d)
TRAIN_FLOPS_PER_S = 250e9  # float32 training steps
TRAIN_S_PER_LAYER_STEP = 0.049  # one block's operations in one step, all seeds batched
BASE_MB = 430  # the interpreter with torch and pandas loaded
PASS_SHARE = 0.34  # peak RSS growth per byte of cost.pass_bytes (it bounds a pass from above)
TRAIN_SHARE = 1.0  # peak RSS growth per byte of train_bytes

RUNTIME_MARGIN = 3.0  # covers a job 3x slower than predicted (the worst seen: 2.6x, CPU)
MEM_MARGIN = 2.0  # covers a job at 2x its predicted peak (the worst seen: 1.7x)


def activation_elements(job: Job) -> float:
    """Elements of the block activations every seed of every cell passes through the probes:
    seeds x depth x batch x tokens x d_model, summed over the cells."""
    return sum(s.seeds * s.depth * s.batch * s.tokens * s.d_model
               for s in (c.settings for c in job.cells))


def measure_seconds(job: Job) -> float:
    """Predicted single-thread CPU seconds of a measure job."""
    return (STARTUP_S + cost.job_flops(job) / MEASURE_FLOPS_PER_S
            + activation_elements(job) * PROBE_S_PER_ELEMENT)


def measure_mb(job: Job) -> float:
    """Predicted peak RSS of a measure job in MB: a streamed pass (cost.streamed) holds what its
    bytes model counts (measured: 0.9x of it at L = 1024), a pass over every block's graph a
    share PASS_SHARE of its upper bound."""
    return BASE_MB + max(cost.pass_bytes(c.settings) * (1.0 if cost.streamed(c.settings)
                                                         else PASS_SHARE)
                         for c in job.cells) / 1e6


def layer_steps(job: Job, ts) -> float:
    """Optimiser steps times blocks, summed over the job's cells (ts: its TrainSettings)."""
    return sum(ts.steps * c.settings.depth for c in job.cells)


def train_seconds(job: Job, ts) -> float:
    """Predicted single-thread CPU seconds of a train job (ts: its arm's TrainSettings)."""
    flops = sum(cost.training_flops(c.settings, ts) for c in job.cells)
    return (STARTUP_S + flops / TRAIN_FLOPS_PER_S
            + layer_steps(job, ts) * TRAIN_S_PER_LAYER_STEP)


def train_bytes(job: Job) -> float:
    """Bytes of a train job's largest cell: its seeds in one pass at the training batch
    (cost.seed_bytes), the weights, their gradients and AdamW's two moments."""
    def cell(s) -> float:
        d, f = s.d_model, s.ffn_mult * s.d_model
        weights = s.depth * (4 * d * d + 2 * d * f) + 2 * s.head_classes * d
        return s.seeds * (cost.seed_bytes(s) + 4 * cost.ITEMSIZE[s.dtype] * weights)
    return max(cell(c.settings) for c in job.cells)


def train_mb(job: Job) -> float:
    """Predicted peak RSS of a train job in MB."""
    return BASE_MB + TRAIN_SHARE * train_bytes(job) / 1e6


def runtime_min(seconds: float, attempt: int = 1) -> int:
    """The runtime request in whole minutes for a job predicted to take `seconds`: the margin,
    rounded up, times the attempt number (a retry after a timeout gets more)."""
    return math.ceil(RUNTIME_MARGIN * seconds / 60) * attempt


def mem_mb(mb: float, attempt: int = 1) -> int:
    """The memory request in MB for a job predicted to peak at `mb`: the margin, rounded up to
    100 MB, times the attempt number (a retry after running out gets more)."""
    return int(math.ceil(MEM_MARGIN * mb / 100) * 100) * attempt
