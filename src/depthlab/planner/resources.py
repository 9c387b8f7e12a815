"""What a job asks a cluster for (Snakemake's `runtime` in minutes and `mem_mb`): a prediction of
what the job uses, times a margin. The predictions are fitted to what this project's jobs used
(the CPU seconds and peak RSS each job logs, depthlab.core.usage.log_use; one thread a job, so
its seconds on a core of its own) by `python -m benchmarks.resources`, which also checks each
against every job it saw (docs/PERFORMANCE.md, "Requests against use"). No torch; not part of
the measure code's hash (a request changes no number).

- measure: seconds = startup_s + FLOPs / flops_per_s + activation elements x
  probe_s_per_element (the probes touch every stream, branch and normalised state of every
  block and seed) + random numbers drawn for the weights (`drawn_numbers`: a streamed pass
  draws each block two or three times) x draw_s_per_number + block calls (`block_calls`, per
  pass whatever the seeds it holds) x call_s, by the device's Speeds; cells copied
  from another job's shard (depthlab.planner.reuse) cost nothing. Peak MB = BASE_MB + the
  largest pass's bytes (depthlab.planner.cost.pass_bytes) x PASS_SHARE (a pass over every
  block's graph, which the bytes bound from above) or STREAM_SHARE (a pass that keeps no such
  graph: streamed, cost.streamed, or forward-only).
- train: seconds = startup_s + training FLOPs / train_flops_per_s + layer steps (steps x
  depth, every cell: the per-block operations each step dispatches whatever the batch) x
  train_s_per_layer_step, by the device's Speeds (the two terms are confounded on the CPU's
  jobs: read them as a model of the time, not as a throughput); peak MB = BASE_MB +
  TRAIN_SHARE x `train_bytes`.
- on a GPU, also its device memory (`device_mb`, Snakemake resource `gpu_mem_mb`), so that jobs
  share a GPU as far as its memory allows (`--resources gpu_mem_mb=...`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from depthlab.planner import cost
from depthlab.planner.reuse import Source
from depthlab.vocabulary.inits import INIT_KINDS
from depthlab.vocabulary.jobs import Job
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import RunSettings


@dataclass(frozen=True)
class Speeds:
    """The constants of a job's seconds on one kind of device: a measure job's
    (`measure_seconds`) and a train job's (`train_seconds`)."""

    startup_s: float  # process start, imports, reading the config and writing the shard
    flops_per_s: float  # forward and backward GEMMs
    probe_s_per_element: float  # per element of one block's activations (seed x token x d)
    draw_s_per_number: float  # per random number drawn for the blocks' weights
    call_s: float  # per seed-batched block operation dispatched (forward, backward, recompute)
    train_flops_per_s: float  # a train job's FLOPs (cost.training_flops)
    train_s_per_layer_step: float  # per block and optimiser step (`layer_steps`)


# fitted by benchmarks/resources.py on the 85 measure and train jobs of the default, fixes and scale
# runs of 2026-12-03 (one thread per job): every prediction within 0.57-1.43x of the job's CPU
# seconds and 0.72-1.22x of its peak memory (docs/PERFORMANCE.md, "Requests against use")
CPU = Speeds(startup_s=1.85, flops_per_s=26.8e9,  # float64
             probe_s_per_element=1.85e-7, draw_s_per_number=1.27e-8, call_s=1.08e-3,
             train_flops_per_s=44e9,  # float32 training steps
             train_s_per_layer_step=0.0)  # 0 on these jobs, whose FLOPs explain them
BASE_MB = 342  # the interpreter with torch and pandas loaded
PASS_SHARE = 0.50  # peak RSS growth per byte of cost.pass_bytes (it bounds a pass from above)
STREAM_SHARE = 0.93  # the same for a streamed or forward-only pass, whose bytes model is closer
# (a forward-only pass holding its blocks: 1.10 at L = 96, 6 seeds, d = 128; 2026-12-05)
TRAIN_SHARE = 1.30  # peak RSS growth per byte of train_bytes

# the devices whose jobs have been logged and fitted (`python -m benchmarks.resources
# RUN:configs --fit`; a GPU job's seconds are its wall seconds: the device and the CPU threads
# that draw its weights work at once). A device not here asks for the CPU's seconds on one
# core (`unfitted` says so when a run starts), which were above a GPU job's in every part
# measured so far (docs/PERFORMANCE.md, "On a GPU"). No GPU run has been logged yet.
FITTED: dict[str, Speeds] = {"cpu": CPU}
# device memory of a GPU job beside its tensors: the CUDA context and library workspaces
# (an allowance of 1 GB, not a fit: no GPU job's use has been logged yet)
DEVICE_BASE_MB = 1000

RUNTIME_MARGIN = 2.0  # covers a job 2x slower than predicted (the worst seen: 1.75x)
MEM_MARGIN = 2.0  # covers a job at 2x its predicted peak (the worst seen: 1.39x)


def draws(s: RunSettings) -> int:
    """How often a pass draws each block's weights from the seed's generator: once where it
    holds every block; a streamed pass (cost.streamed) once to record the generator states and
    once as the forward pass reaches the block, and once more where the backward pass
    recomputes it (cost.recomputes)."""
    return 1 + cost.streamed(s) + cost.recomputes(s)


def drawn_numbers(s: RunSettings) -> float:
    """Random numbers a cell draws for its blocks: every seed's block weights and biases times
    `draws`, twice where the placement's own init re-draws (DeepNorm's)."""
    d, f = s.d_model, s.ffn_mult * s.d_model
    per_block = 4 * d * d + 2 * d * f + 5 * d + f
    own_init = PLACEMENTS[s.placement].init
    own = 2 if own_init is not None and INIT_KINDS[own_init].redraws else 1
    return s.seeds * s.depth * per_block * draws(s) * own


def block_calls(s: RunSettings) -> float:
    """Seed-batched block operations a cell dispatches: per pass (cost.seeds_per_pass), each
    block once forward, once backward where a gradient is taken, once more where it is
    recomputed, and once per pass of the probes that run the model again
    (cost.response_passes); their fixed cost does not shrink with the seeds a pass holds."""
    passes = math.ceil(s.seeds / cost.seeds_per_pass(s))
    return passes * s.depth * (1 + (s.grad_of != "none") + cost.recomputes(s)
                               + cost.response_passes(s))


def measured(job: Job, copied: Collection[str] = ()) -> list[RunSettings]:
    """The settings of the job's cells it measures, not those it copies (labels in `copied`,
    depthlab.planner.reuse)."""
    return [c.settings for c in job.cells if c.label not in copied]


def measure_terms(job: Job, copied: Collection[str] = ()) -> dict[str, float]:
    """The predictors of a measure job's time, summed over the cells it measures: FLOPs
    (cost.cell_flops), activation elements the probes touch (seeds x depth x batch x tokens x
    d_model), random numbers drawn (`drawn_numbers`) and block calls (`block_calls`)."""
    cells = measured(job, copied)
    return {"flops": sum(cost.cell_flops(s) for s in cells),
            "elements": sum(s.seeds * s.depth * s.batch * s.tokens * s.d_model for s in cells),
            "drawn": sum(drawn_numbers(s) for s in cells),
            "calls": sum(block_calls(s) for s in cells)}


def device_of(job: Job) -> str:
    """The device a job computes on: cuda if any of its cells does, else cpu."""
    return "cuda" if any(c.settings.device == "cuda" for c in job.cells) else "cpu"


def speeds_of(job: Job, device: str | None = None) -> Speeds:
    """The constants fitted for the job's device (`device_of`, or `device` where given):
    FITTED's, the CPU's where it has none."""
    return FITTED.get(device or device_of(job), CPU)


def measure_seconds(job: Job, copied: Collection[str] = (), device: str | None = None
                    ) -> float:
    """Predicted seconds of a measure job, whose cells labelled in `copied` are copied from
    another job's shard (they cost nothing but reading it): on a core of its own (one thread),
    or on its device (`device_of`, or `device` where given) by that device's fitted constants
    (FITTED; the CPU's where it has none)."""
    terms, k = measure_terms(job, copied), speeds_of(job, device)
    return (k.startup_s + terms["flops"] / k.flops_per_s + terms["elements"]
            * k.probe_s_per_element + terms["drawn"] * k.draw_s_per_number
            + terms["calls"] * k.call_s)


def unfitted(jobs: Iterable[Job]) -> str | None:
    """A line saying which devices of `jobs` have no fitted constants (FITTED), so that their
    runtime requests are the CPU model's; None where every device has them."""
    missing = sorted({device_of(j) for j in jobs} - FITTED.keys())
    if not missing:
        return None
    return (f"depthlab: the request model has no speeds fitted for {', '.join(missing)} jobs "
            "yet, so they ask for the CPU model's runtime on one core (docs/PERFORMANCE.md, "
            "\"Requests against use\": how to fit them from a run's logs)")


class LongestFirst:
    """The priority a scheduler that starts the highest first needs to run the longest chains
    first (list scheduling by critical path): a measure job's predicted seconds (`own`) plus
    the longest chain of the jobs that copy cells from its shard (depthlab.planner.reuse: they
    start only after it). `jobs` and `copied` by (study, arm, job id); seconds, memoised."""

    def __init__(self, jobs: Mapping[tuple, Job], copied: Mapping[tuple, Mapping[str, Source]]):
        self.jobs, self.copied, self.own_s, self.chain_s = jobs, copied, {}, {}
        self.copiers: dict[tuple, set[tuple]] = {}
        for key, sources in copied.items():
            for source in sources.values():
                self.copiers.setdefault((source.study, source.arm, source.job), set()).add(key)

    def own(self, key: tuple) -> float:
        """The job's predicted seconds on a core (measure_seconds, its copied cells free)."""
        if key not in self.own_s:
            self.own_s[key] = measure_seconds(self.jobs[key], self.copied.get(key, {}))
        return self.own_s[key]

    def __call__(self, key: tuple) -> float:
        if key not in self.chain_s:
            after = max(map(self, self.copiers.get(key, ())), default=0.0)
            self.chain_s[key] = self.own(key) + after
        return self.chain_s[key]


def measure_mb(job: Job, copied: Collection[str] = ()) -> float:
    """Predicted peak RSS of a measure job in MB: BASE_MB plus the largest pass's bytes
    (cost.pass_bytes) times STREAM_SHARE for a streamed pass (cost.streamed), PASS_SHARE for a
    pass over every block's graph (its bytes bound that from above); cells in `copied` hold
    nothing."""
    return BASE_MB + max((pass_share(s) * cost.pass_bytes(s) for s in measured(job, copied)),
                         default=0.0) / 1e6


def device_mb(job: Job, copied: Collection[str] = (), device: str | None = None) -> float:
    """Predicted peak device memory of a measure job on a GPU in MB: DEVICE_BASE_MB plus the
    largest pass's bytes (cost.pass_bytes: every tensor of a pass lives on the device, and the
    bytes bound what a pass holds from above); 0 for a job on the CPU (`device_of`, or
    `device` where given)."""
    if (device or device_of(job)) == "cpu":
        return 0.0
    return DEVICE_BASE_MB + max((cost.pass_bytes(s) for s in measured(job, copied)),
                                default=0.0) / 1e6


def train_device_mb(job: Job, device: str | None = None) -> float:
    """Predicted peak device memory of a train job on a GPU in MB (`train_bytes`, its
    weights, gradients, AdamW's moments and one pass of its largest cell); 0 on the CPU
    (`device_of`, or `device` where given)."""
    if (device or device_of(job)) == "cpu":
        return 0.0
    return DEVICE_BASE_MB + train_bytes(job) / 1e6


def pass_share(s) -> float:
    """The share of a pass's modelled bytes that shows in the peak RSS: STREAM_SHARE for a
    pass that keeps no graph of every block (streamed, or forward-only), else PASS_SHARE."""
    return STREAM_SHARE if cost.streamed(s) or s.grad_of == "none" else PASS_SHARE


def layer_steps(job: Job, ts) -> float:
    """Optimiser steps times blocks, summed over the job's cells (ts: its TrainSettings)."""
    return sum(ts.steps * c.settings.depth for c in job.cells)


def train_seconds(job: Job, ts, device: str | None = None) -> float:
    """Predicted seconds of a train job (ts: its arm's TrainSettings) on a core of its own, or
    its wall seconds on a GPU, by the constants fitted for its device (`device_of`, or `device`
    where given; FITTED, the CPU's where it has none)."""
    k = speeds_of(job, device)
    flops = sum(cost.training_flops(c.settings, ts) for c in job.cells)
    return (k.startup_s + flops / k.train_flops_per_s
            + layer_steps(job, ts) * k.train_s_per_layer_step)


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


def mem_mb(mb: float, attempt: int = 1, margin: float = MEM_MARGIN) -> int:
    """The memory request in MB for a job predicted to peak at `mb`: the margin, rounded up to
    100 MB, times the attempt number (a retry after running out gets more). A device memory
    request (`device_mb`, already a bound from above) takes margin 1."""
    return int(math.ceil(margin * mb / 100) * 100) * attempt
