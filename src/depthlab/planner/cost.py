"""What a job computes and holds: FLOPs of a measure pass and of a training run, the bytes one
seed adds to a pass, and how many seeds one pass holds under the `pass_mb` memory budget (no
torch). The cluster requests built on these are depthlab.planner.resources.

`pass_bytes` is an upper bound of what a pass holds when backward starts (autograd's saved
tensors, the trace, the weights and their gradients): 1.5x to 2x of it (tests/test_slurm.py
checks the bound); the peak RSS grows by about half of it (depthlab.planner.resources).
"""

from __future__ import annotations

import math

from depthlab.vocabulary.jobs import Job, PassPlan
from depthlab.vocabulary.settings import RunSettings

ITEMSIZE = {"float64": 8, "float32": 4}
# (N, d) tensors a streamed pass holds per layer: the trace (stream, mid, attn, mlp, a second
# stream) and the probes' derived profiles; measured 8.9 at L = 1024 (Pre-LN, d = 128, 2 seeds:
# peak RSS 2.68 GB over a 0.29 GB interpreter, forward-only and recomputed alike)
TRACE_PER_LAYER = 10


def forward_flops(s: RunSettings, batch: int | None = None) -> float:
    """Floating-point operations of one block's forward pass for one seed: the q, k, v, o and
    FFN matrix products, plus the two T x T attention products (dense, the causal mask counted
    in full), for `batch` sequences (default: the setting)."""
    d, f, b = s.d_model, s.ffn_mult * s.d_model, s.batch if batch is None else batch
    n = b * s.tokens
    return 2 * n * (4 * d * d + 2 * d * f) + 4 * b * s.tokens**2 * d


def response_passes(s: RunSettings) -> float:
    """Forward-pass equivalents of the probes that run the model again (depthlab.core.response),
    about one per forward, backward-to-the-input or double-backward pass: the Jacobian's graph
    (a forward pass and a backward pass that keeps its own graph, 3) and its 2k - 1 products
    J v and k - 1 products J^T u (k = jacobian_dirs); the update's forward and backward pass
    over every parameter (3) and its forward pass after the step (1)."""
    jacobian = 3 * s.jacobian_dirs + 1 if s.jacobian_dirs else 0
    return jacobian + (4 if s.update_lr else 0)


def layer_flops(s: RunSettings) -> float:
    """Floating-point operations of one block for one seed in a measure pass: forward plus
    backward (3x forward; 4x where the backward pass recomputes the block, `recomputes`), or the
    forward alone when no gradient is taken (grad_of none), plus `response_passes`."""
    passes = 1.0 if s.grad_of == "none" else 4.0 if recomputes(s) else 3.0
    return (passes + response_passes(s)) * forward_flops(s)


def sequence_flops(s: RunSettings) -> float:
    """Floating-point operations of the forward pass of the stack and the loss head over one
    sequence of `tokens` characters, for one seed."""
    head = 2 * s.tokens * s.d_model * s.head_classes
    return s.depth * forward_flops(s, batch=1) + head


def step_flops(s: RunSettings) -> float:
    """Floating-point operations of one training step of every seed: forward and backward
    (3x forward) over `batch` sequences (the optimiser's element-wise update not counted)."""
    return 3 * s.seeds * s.batch * sequence_flops(s)


def training_flops(s: RunSettings, ts) -> float:
    """Floating-point operations of one training cell (every seed): each step's
    (`step_flops`), the validation loss (forward, eval_batches batches) at every eval_every
    steps and checkpoint, and a probe pass (forward and backward, probe_batch sequences) at
    each checkpoint. ts: its TrainSettings."""
    per_sequence = sequence_flops(s)
    evals = len(set(range(0, ts.steps + 1, ts.eval_every)) | set(ts.probe_steps))
    validation = evals * ts.eval_batches * s.batch * per_sequence
    probes = 3 * len(ts.probe_steps) * ts.probe_batch * per_sequence
    return ts.steps * step_flops(s) + s.seeds * (validation + probes)


def _graph_bytes(s: RunSettings) -> float:
    """Bytes one seed's pass holds with every block's graph: per layer the block weights three
    times (leaves, gradients, margin), the saved activations of N = batch*tokens rows (12 d + 2
    FFN widths) and the attention weights (batch*heads*tokens^2)."""
    return ITEMSIZE[s.dtype] * s.depth * (3 * _weights(s) + _activations(s))


def _weights(s: RunSettings) -> int:
    d, f = s.d_model, s.ffn_mult * s.d_model
    return 4 * d * d + 2 * d * f


def _activations(s: RunSettings) -> int:
    d, f, n = s.d_model, s.ffn_mult * s.d_model, s.batch * s.tokens
    return n * (12 * d + 2 * f) + s.batch * s.heads * s.tokens**2


def recomputes(s: RunSettings) -> bool:
    """Whether a pass recomputes each block in its backward pass (depthlab.core.recompute):
    a gradient of block parameters where one seed with every block's graph would exceed the
    `pass_mb` budget; never an own block's (depthlab.core.own_block holds every block)."""
    return (s.grad_of in ("params", "weights") and bool(s.pass_mb) and not s.block
            and _graph_bytes(s) > s.pass_mb * 1e6)


def streamed(s: RunSettings) -> bool:
    """Whether a pass draws each block when it needs it (depthlab.core.model.StreamedBlocks),
    drawing every block twice (once to reach the input, which the generator draws after the
    blocks, and once as the pass reaches it): one that recomputes blocks in its backward pass,
    or a forward-only pass (grad_of none) whose seeds would exceed `pass_mb` with every block
    held. A forward-only pass that fits holds its blocks, drawn once: the same numbers. Never
    an own block's pass, which holds every block."""
    if recomputes(s):
        return True
    if s.grad_of != "none" or not s.pass_mb or s.block:
        return False
    seeds = (min(s.seed_batch, s.seeds) if s.seed_batch
             else _fewest(s, _forward_bytes(s, held=False)))
    return seeds * _forward_bytes(s, held=True) > s.pass_mb * 1e6


def _forward_bytes(s: RunSettings, held: bool) -> float:
    """Peak bytes one seed adds to a forward-only pass. Streamed: per layer TRACE_PER_LAYER
    (N, d) tensors (the trace's stream, mid and branches, and what the probes derive from
    them), one block's activations, and one block's weights as it is drawn and stacked. Held:
    every block's weights at the start, which the pass gives up as the trace fills
    (depthlab.core.model.ReleasedBlocks): the larger of the two."""
    trace = s.depth * TRACE_PER_LAYER * s.batch * s.tokens * s.d_model
    streamed = ITEMSIZE[s.dtype] * (trace + 2 * _weights(s) + _activations(s))
    if not held:
        return streamed
    return max(ITEMSIZE[s.dtype] * (s.depth * _weights(s) + _activations(s)), streamed)


def seed_bytes(s: RunSettings) -> float:
    """Peak bytes one seed adds to a pass beyond the interpreter: every block's graph
    (`_graph_bytes`); a forward-only pass's (`_forward_bytes`: its blocks held, or streamed);
    or, where the backward pass recomputes blocks, the trace and one block at a time (its
    weights drawn and stacked, and its graph). The Jacobian probe (jacobian_dirs) adds the
    graph of a forward pass and of its backward pass (twice the saved activations) on top of
    every block's graph."""
    if s.grad_of == "none":
        return _forward_bytes(s, held=not streamed(s))
    if recomputes(s):
        trace = s.depth * TRACE_PER_LAYER * s.batch * s.tokens * s.d_model
        return ITEMSIZE[s.dtype] * (trace + 3 * _weights(s) + _activations(s))
    jacobian = 2 * s.depth * _activations(s) if s.jacobian_dirs else 0
    return _graph_bytes(s) + ITEMSIZE[s.dtype] * jacobian


def _fewest(s: RunSettings, one: float) -> int:
    """Seeds per pass that split the seeds into the fewest passes of at most `pass_mb` MB,
    `one` bytes a seed, as evenly as a fixed size allows (a seed over the budget: one per
    pass)."""
    largest = max(1, min(s.seeds, int(s.pass_mb * 1e6 // one)))
    return math.ceil(s.seeds / math.ceil(s.seeds / largest))


def seeds_per_pass(s: RunSettings) -> int:
    """How many seeds one forward/backward pass holds: `seed_batch` if set, else the size that
    splits the seeds into the fewest passes of at most `pass_mb` MB of `pass_bytes` each, as
    evenly as a fixed size allows (pass_mb 0: one pass; a seed over the budget: one per pass);
    an own block's seeds: one a pass (depthlab.core.own_block.measure_module)."""
    if s.block:
        return 1
    if s.seed_batch:
        return min(s.seed_batch, s.seeds)
    if not s.pass_mb:
        return s.seeds
    return _fewest(s, seed_bytes(s))


def pass_plan(s: RunSettings) -> PassPlan:
    """The pass plan the engine is handed for a cell of `s`: `seeds_per_pass`, `streamed`,
    `recomputes`."""
    return PassPlan(seeds_per_pass(s), streamed(s), recomputes(s))


def pass_bytes(s: RunSettings) -> float:
    """Peak bytes of one pass beyond the interpreter: `seed_bytes` times the seeds it holds."""
    return seeds_per_pass(s) * seed_bytes(s)


def cell_flops(s: RunSettings) -> float:
    """Floating-point operations of one cell: every layer of every seed."""
    return layer_flops(s) * s.depth * s.seeds


def job_flops(job: Job) -> float:
    """Floating-point operations of a whole job: every cell."""
    return sum(cell_flops(c.settings) for c in job.cells)
