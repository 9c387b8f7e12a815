"""Measure one grid cell: all its seeds, batched, into a tidy table of per-seed probe values."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterator

import pandas as pd
import torch

from depthlab.core.model import (
    Draw,
    ReleasedBlocks,
    StackParams,
    Trace,
    build,
    forward,
    per_seed_loss,
)
from depthlab.core.own_block import measure_module
from depthlab.core.prefetch import ahead
from depthlab.core.probes import Probe, backward, measures, pass_rows, run_probes
from depthlab.core.recompute import recomputed_backward
from depthlab.core.records import check_finite, job_rows
from depthlab.core.response import response_probes
from depthlab.vocabulary.jobs import Cell, Job, PassPlan
from depthlab.vocabulary.metrics import Metric
from depthlab.vocabulary.settings import RunSettings

log = logging.getLogger(__name__)


def check_device(device: str) -> None:
    """Fail early with a clear message when `cuda` is asked for but no GPU is visible here
    (on a cluster: the job landed on a node without a GPU, or asked for none)."""
    if device == "cuda" and not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        raise RuntimeError(
            f"device='cuda' was requested but torch {torch.__version__} ({build}) sees no CUDA "
            f"device on host {socket.gethostname()} (CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES')!r}); run on a GPU node (Slurm: "
            "--profile profiles/slurm-gpu) or set device: cpu"
        )


BranchScales = list[tuple[float, float]]


def forward_backward(
    params: StackParams, draw: Draw, s: RunSettings, plan: PassPlan,
    branch_scales: BranchScales | None = None,
) -> tuple[Trace, torch.Tensor]:
    """The forward pass and, unless grad_of is 'none', the backward pass the probes read;
    returns the trace and the per-seed losses (S,). Where the plan recomputes (a seed's graph
    exceeds the pass budget), the forward pass keeps no graph and the backward pass recomputes
    one block at a time (depthlab.core.recompute)."""
    if plan.recomputes:
        with torch.no_grad():
            _, trace = forward(params, draw.x, s, branch_scales)
        return trace, recomputed_backward(params, draw, trace, s, branch_scales)
    if s.grad_of == "input":
        draw.x.requires_grad_(True)
    with torch.set_grad_enabled(s.grad_of != "none"):
        y, trace = forward(params, draw.x, s, branch_scales)
        if s.grad_of == "input":
            for t in trace.stream:
                t.retain_grad()
        loss = per_seed_loss(y, params, draw, s)
    if s.grad_of != "none":
        backward(loss, params, trace, s)
    return trace, loss


def build_pass(s: RunSettings, plan: PassPlan, seeds: list[int]) -> tuple[StackParams, Draw]:
    """The weights, input and target of one pass of `seeds` (depthlab.core.model.build): a pass
    over budget draws each block when it needs it (twice); a forward-only pass that fits draws
    them at once and gives each up as it moves past it (ReleasedBlocks)."""
    params, draw = build(s, seeds, streamed=plan.streamed)
    if s.grad_of == "none" and not plan.streamed:
        params.blocks = ReleasedBlocks(params.blocks)
    return params, draw


@measures(
    Metric("branch_scale", "1", r"$\alpha_l$",
           "the branch scale a calibration stage applied to block l's attn and mlp",
           sublayers="attn, mlp", needs="calibration"),
)
def run_pass(
    s: RunSettings, plan: PassPlan, seeds: list[int], branch_scales: BranchScales | None = None,
    built: tuple[StackParams, Draw] | None = None,
) -> tuple[list[Probe], torch.Tensor]:
    """Build (or take `built`, build_pass's), forward, backward (none with grad_of 'none') and
    probe one batch of seeds, then the probes that run the model again where the settings ask
    for them (jacobian_dirs, update_lr: depthlab.core.response); returns probes and losses (S,).

    branch_scales[l] = (alpha_attn, alpha_mlp) of block l+1 replaces the uniform residual_scale
    (see model.forward); the scales applied are recorded as metric branch_scale."""
    params, draw = build_pass(s, plan, seeds) if built is None else built
    trace, loss = forward_backward(params, draw, s, plan, branch_scales)
    probes = run_probes(params, trace, s)
    del trace  # the response probes run passes of their own: free this one's tensors first
    probes += response_probes(params, draw, s, branch_scales)
    if branch_scales is not None:
        applied = torch.tensor(branch_scales, dtype=torch.float64).T.unsqueeze(1)  # (2, 1, L)
        layers = list(range(1, s.depth + 1))
        probes += [
            Probe("branch_scale", sub, layers, applied[i].expand(len(seeds), -1))
            for i, sub in enumerate(("attn", "mlp"))
        ]
    return probes, loss.detach()


Built = Iterator[tuple[tuple[str, tuple[int, ...]], tuple[StackParams, Draw]]]


def measure_cell(
    s: RunSettings, plan: PassPlan, cell: str = "", branch_scales: BranchScales | None = None,
    built: Built | None = None,
) -> pd.DataFrame:
    """Every probe of every seed of one cell, one row per (seed, layer, sublayer, metric),
    with each setting as a column; the seeds in the plan's passes, each built here or taken
    from `built` ((cell, seeds), build_pass's result: measure_job's passes made ahead). Raises
    NonFiniteError naming the cell and seed on NaN/inf."""
    check_device(s.device)
    if s.block:  # your own nn.Module as the block (depthlab.core.own_block)
        return measure_module(s.block, s, cell)
    parts = []
    for seeds in plan.chunks(s.seed_list()):
        made = None
        if built is not None:
            key, made = next(built)
            assert key == (cell, tuple(seeds)), (key, cell, seeds)
        probes, loss = run_pass(s, plan, seeds, branch_scales, made)
        frame = pass_rows(probes, seeds, loss)
        check_finite(frame, cell)
        parts.append(frame)
        log.info("%s: seeds %s done", cell, seeds)
    frame = pd.concat(parts, ignore_index=True)
    for key, value in s.as_columns().items():
        frame[key] = value
    return frame


def measure_job(job: Job, branch_scales: dict[str, BranchScales] | None = None,
                done: Callable[[str], None] | None = None,
                copies: dict[str, pd.DataFrame] | None = None,
                prefetch: bool | None = None) -> pd.DataFrame:
    """All cells of one job, tagged with study, arm, job and cell label columns;
    branch_scales, if given, holds the per-layer branch scales of every cell by its label;
    copies, the rows of the cells another job's shard already holds (by label; not measured
    again, depthlab.core.records.copied_rows); done(label), if given, is called as each cell
    finishes (a progress line). `prefetch` (default: on a GPU) draws each pass's weights on
    the CPU while the device runs the pass before (depthlab.core.prefetch): the same numbers."""
    measured = [c for c in job.cells if not (copies and c.label in copies) and not c.settings.block]
    if prefetch is None:
        prefetch = any(c.settings.device == "cuda" for c in measured)
    named = {f"{job.study}/{job.arm}/{c.label}": c for c in measured}
    passes = [(name, tuple(seeds)) for name, c in named.items()
              for seeds in c.plan.chunks(c.settings.seed_list())]

    def make(key: tuple[str, tuple[int, ...]]) -> tuple[StackParams, Draw]:
        cell = named[key[0]]
        return build_pass(cell.settings, cell.plan, list(key[1]))

    built = ahead(passes, make, prefetch)

    def cell_rows(cell: Cell) -> pd.DataFrame:
        if copies and cell.label in copies:
            return copies[cell.label]
        scales = None if branch_scales is None else branch_scales[cell.label]
        return measure_cell(cell.settings, cell.plan, f"{job.study}/{job.arm}/{cell.label}",
                            scales, built)

    return job_rows(job, cell_rows, done)
