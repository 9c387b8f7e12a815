"""Measure one grid cell: all its seeds, batched, into a tidy table of per-seed probe values."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import torch

from depthlab.grid import Job
from depthlab.model import build, forward, per_seed_loss
from depthlab.probes import Probe, run_probes
from depthlab.settings import RunSettings

log = logging.getLogger(__name__)


class NonFiniteError(RuntimeError):
    """A probe produced NaN or inf; the message names the cell and the seed."""


def check_device(device: str) -> None:
    """Fail early with a clear message when `cuda` is asked for but no GPU is visible."""
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' was requested but torch sees no CUDA device")


def seed_chunks(s: RunSettings) -> list[list[int]]:
    """The cell's seeds split into batches of `seed_batch` (0 = all seeds in one pass)."""
    seeds = s.seed_list()
    size = s.seed_batch or len(seeds)
    return [seeds[i : i + size] for i in range(0, len(seeds), size)]


def run_pass(s: RunSettings, seeds: list[int]) -> tuple[list[Probe], torch.Tensor]:
    """Build, forward, backward and probe one batch of seeds; returns probes and losses (S,)."""
    params, draw = build(s, seeds)
    if s.grad_of == "input":
        draw.x.requires_grad_(True)
    y, trace = forward(params, draw.x, s)
    if s.grad_of == "input":
        for t in trace.stream:
            t.retain_grad()
    loss = per_seed_loss(y, params, draw, s)
    loss.sum().backward()
    return run_probes(params, trace, s), loss.detach()


def _rows(probes: list[Probe], seeds: list[int], loss: torch.Tensor) -> pd.DataFrame:
    frames = []
    extra = [Probe("loss", "head", [0], loss.unsqueeze(1))]
    for p in probes + extra:
        values = p.values.detach().cpu().numpy()
        n_seeds, n_layers = values.shape
        frames.append(
            pd.DataFrame(
                {
                    "seed": np.repeat(seeds, n_layers),
                    "layer": np.tile(p.layers, n_seeds),
                    "sublayer": p.sublayer,
                    "metric": p.metric,
                    "value": values.reshape(-1),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def measure_cell(s: RunSettings, cell: str = "") -> pd.DataFrame:
    """Every probe of every seed of one cell, one row per (seed, layer, sublayer, metric),
    with each setting as a column. Raises NonFiniteError naming the cell and seed on NaN/inf."""
    check_device(s.device)
    parts = []
    for seeds in seed_chunks(s):
        probes, loss = run_pass(s, seeds)
        frame = _rows(probes, seeds, loss)
        bad = frame.loc[~np.isfinite(frame["value"])]
        if len(bad):
            row = bad.iloc[0]
            raise NonFiniteError(
                f"{cell}: non-finite {row.metric} at layer {row.layer} for seed {row.seed}"
            )
        parts.append(frame)
        log.info("%s: seeds %s done", cell, seeds)
    frame = pd.concat(parts, ignore_index=True)
    for key, value in s.as_columns().items():
        frame[key] = value
    return frame


def measure_job(job: Job) -> pd.DataFrame:
    """All cells of one job, tagged with study, arm, job and cell label columns."""
    frames = []
    for cell in job.cells:
        frame = measure_cell(cell.settings, f"{job.study}/{job.arm}/{cell.label}")
        frame.insert(0, "label", cell.label)
        frame.insert(0, "job", job.job)
        frame.insert(0, "arm", job.arm)
        frame.insert(0, "study", job.study)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
