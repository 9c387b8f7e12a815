"""The backward pass of a stack too deep to hold: each block recomputed from its stored input.

The forward pass runs without a graph over blocks drawn as it reaches them
(depthlab.core.model.StreamedBlocks) and keeps the trace the probes read (the stream after every
block). The backward pass then walks the blocks from the last to the first: it draws block l
again (on a GPU, ahead of the device), recomputes it from its stored input with a graph, and
back-propagates the gradient of its output, reading the block's gradient norm and handing the
gradient of its input to block l - 1 (activation checkpointing at every block, Chen et al.
2016, arXiv 1604.06174). Memory: the trace and one block's graph (two on a GPU), whatever the
depth; compute: one more forward pass. The numbers are those of the full graph
(tests/test_model.py: 1e-12 relative).
"""

from __future__ import annotations

import torch
from torch import Tensor

from depthlab.core.model import (
    BlockOps,
    Draw,
    StackParams,
    StreamedBlocks,
    Trace,
    head_input,
    per_seed_loss,
)
from depthlab.core.prefetch import ahead
from depthlab.core.probes import counted, sq_norm
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import RunSettings


def _grad_leaf(t: Tensor) -> Tensor:
    return t.detach().requires_grad_(True)


def recomputed_backward(params: StackParams, draw: Draw, trace: Trace, s: RunSettings,
                        branch_scales: list[tuple[float, float]] | None = None) -> Tensor:
    """The per-seed loss (S,) of a forward pass already traced without a graph, and each
    block's squared gradient norm over its parameters (grad_of params) or its six weight
    matrices (weights) in trace.block_grad_sq (S, L), by recomputing one block at a time."""
    if s.grad_of not in ("params", "weights") or not isinstance(params.blocks, StreamedBlocks):
        raise ValueError("recomputed_backward needs grad_of params or weights and streamed "
                         f"blocks (grad_of={s.grad_of!r})")
    placement = PLACEMENTS[s.placement]
    carries = placement.carry
    outputs = [_grad_leaf(trace.stream[-1])] + ([_grad_leaf(trace.carry[-1])] if carries else [])
    with torch.enable_grad():
        y = head_input(outputs[0], outputs[1] if carries else None, params, s)
        loss = per_seed_loss(y, params, draw, s)
        loss.sum().backward()
    grads = [t.grad for t in outputs]
    sq = torch.zeros(loss.shape[0], s.depth, dtype=loss.dtype, device=loss.device)
    uniform = (s.residual_scale, s.residual_scale)
    # on a GPU, block l - 1 is drawn while the device runs block l's backward (StreamedBlocks)
    drawn = ahead(reversed(range(s.depth)), params.blocks.block, params.blocks.prefetch)
    for layer, block in drawn:
        p = {k: _grad_leaf(v) for k, v in block.items()}
        inputs = [_grad_leaf(trace.stream[layer])]
        inputs += [_grad_leaf(trace.carry[layer])] if carries else []
        scale = branch_scales[layer] if branch_scales is not None else uniform
        ops = BlockOps(p, s, scale, Trace(), layer + 1, inputs[1] if carries else None)
        with torch.enable_grad():
            h = placement.block(inputs[0], ops)
            torch.autograd.backward([h, ops.carry] if carries else [h], grads)
        sq[:, layer] = sum(sq_norm(p[name].grad) for name in sorted(counted(s, p)))
        grads = [t.grad for t in inputs]
    trace.block_grad_sq = sq
    return loss.detach()
