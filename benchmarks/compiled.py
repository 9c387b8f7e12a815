"""The block loop compiled: one measure pass's forward and backward through the stack, each block
run eagerly (as depthlab runs it) or by `torch.compile` of one block's function, which every
block of the stack reuses (its shapes are the same), on one device.

A placement's block function (depthlab.vocabulary.placements) on BlockOps, with the branch
outputs and the stream between the sublayers that the trace records returned as outputs; then
the per-seed loss (squared head input), and its gradients with respect to every block
parameter. What is compared: the seconds of the loop (median of `rounds` after a first,
compiling call) and each block's squared gradient norm per seed, compiled against eager,
relative to the largest of them (benchmarks/gpu_check.largest_difference's rule).

On cuda `torch.compile`'s default backend (inductor: fused kernels, fewer launches); on the CPU
dynamo's `eager` backend, which checks the harness and needs no C compiler, so its time says
nothing about compiling. benchmarks/gpu_bench.py runs it as part 6.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from torch import Tensor

from depthlab.core.model import BlockOps, Trace, build
from depthlab.core.probes import sq_norm
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import RunSettings


def block_step(s: RunSettings) -> Callable:
    """One block of the placement of `s`: (stream in, the block's parameters) -> (stream out,
    the attention branch, the FFN branch, the stream between the sublayers), with the
    settings' uniform residual scale."""
    placement = PLACEMENTS[s.placement]
    if placement.carry:
        raise ValueError(f"{s.placement}: a placement with a second stream is not compiled here")
    scale = (s.residual_scale, s.residual_scale)

    def step(h: Tensor, p: dict[str, Tensor]) -> tuple[Tensor, ...]:
        trace = Trace()
        out = placement.block(h, BlockOps(p, s, scale, trace, 1))
        return out, *trace.attn, *trace.mlp, *trace.mid

    return step


def loop(s: RunSettings, step: Callable) -> tuple[float, Tensor]:
    """Seconds of one forward and backward pass through the stack of `s` (on its device; the
    weights drawn before the clock starts) and each block's squared gradient norm (S, L)."""
    params, draw = build(s, list(range(s.seeds)))
    blocks = list(params.blocks)
    sync = torch.cuda.synchronize if s.device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    # the input takes a gradient too, so that every block sees the same kind of input and the
    # compiled block is compiled once
    h = draw.x.reshape(s.seeds, -1, s.d_model).requires_grad_(True)
    for p in blocks:
        h = step(h, p)[0]
    loss = h.square().mean(dim=(1, 2)).sum()
    grads = iter(torch.autograd.grad(loss, [t for p in blocks for t in p.values()]))
    sq = torch.stack([sum(sq_norm(next(grads)) for _ in p) for p in blocks], 1)
    sync()
    return time.perf_counter() - start, sq.detach().cpu()


def compare(s: RunSettings, rounds: int = 3) -> dict:
    """Eager against compiled on the device of `s`: the median seconds of each over `rounds`
    (eager first), the first compiled call's (the compile), the backend, the largest relative
    difference of the block gradient norms, and the eager loop's norms (eager_sq, on the CPU).
    Where compiling fails, the eager results and the error's first line (`error`)."""
    backend = "inductor" if s.device == "cuda" else "eager"
    eager = [loop(s, block_step(s)) for _ in range(rounds)]
    found = {"eager_s": statistics.median(r[0] for r in eager), "eager_sq": eager[0][1],
             "backend": backend}
    try:
        step = torch.compile(block_step(s), backend=backend, fullgraph=True)
        first_s, _ = loop(s, step)
        runs = [loop(s, step) for _ in range(rounds)]
    except Exception as error:  # a compiler that cannot build the block is what is measured
        lines = str(error).strip().splitlines() or [""]
        return {**found, "error": f"{type(error).__name__}: {lines[0]}"[:200]}
    return {**found, "compiled_s": statistics.median(r[0] for r in runs),
            "first_call_s": first_s,
            "largest_rel_diff": relative_difference(eager[0][1], runs[0][1])}


def relative_difference(a: Tensor, b: Tensor) -> float:
    """The largest |a - b| relative to the largest |a| (block gradient norms of one loop)."""
    return float(((a - b).abs() / a.abs().max()).max())
