"""Tidy rows (one per seed, layer, sublayer and metric; depthlab.core.probes makes them): the
check that none is NaN or inf, the columns that say which study, arm, job and cell a row belongs
to, a job's rows, and a cell's rows copied from another shard. No torch: a job whose cells are all
copies runs without it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from depthlab.vocabulary.jobs import Cell, Job
from depthlab.vocabulary.metrics import (
    BLOCK_CORR_METRICS,
    GRADIENT_METRICS,
    JACOBIAN_METRICS,
    UPDATE_METRICS,
)


class NonFiniteError(RuntimeError):
    """A probe produced NaN or inf; the message names the cell and the seed."""


def check_finite(frame: pd.DataFrame, where: str) -> None:
    """Raise NonFiniteError naming `where`, the metric, layer and seed of the first NaN or inf
    value of a tidy frame."""
    bad = frame.loc[~np.isfinite(frame["value"])]
    if len(bad):
        row = bad.iloc[0]
        raise NonFiniteError(
            f"{where}: non-finite {row.metric} at layer {row.layer} for seed {row.seed}"
        )


def tag(frame: pd.DataFrame, study: str, arm: str, job: str, label: str) -> pd.DataFrame:
    """The frame with study, arm, job and (cell) label as its first columns, in place."""
    for column, value in (("label", label), ("job", job), ("arm", arm), ("study", study)):
        frame.insert(0, column, value)
    return frame


def copied_rows(owner: pd.DataFrame, label: str, cell: Cell) -> pd.DataFrame:
    """The rows a cell would measure, taken from the shard of a cell with the same numbers
    (depthlab.planner.reuse): the owner's rows of `label` without the probes this cell does not
    take (gradients, pairwise block correlations, the Jacobian and the update), with this cell's
    settings as columns, in the column order a measured cell has (tag adds study, arm, job and
    label)."""
    rows = owner[owner["label"] == label]
    s = cell.settings
    dropped = [*(GRADIENT_METRICS if s.grad_of == "none" else ()),
               *(() if s.block_corr else BLOCK_CORR_METRICS),
               *(() if s.jacobian_dirs else JACOBIAN_METRICS),
               *(() if s.update_lr else UPDATE_METRICS)]
    rows = rows[~rows["metric"].isin(dropped)]
    frame = rows[["seed", "layer", "sublayer", "metric", "value"]].reset_index(drop=True)
    for key, value in cell.settings.as_columns().items():
        frame[key] = value
    return frame


def job_rows(job: Job, cell_rows: Callable[[Cell], pd.DataFrame],
             done: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The rows of every cell of a job, cell_rows(cell) each, tagged with study, arm, job and cell
    label columns, in the job's cell order; done(label), if given, is called as each cell
    finishes (a progress line)."""
    frames = []
    for cell in job.cells:
        frames.append(tag(cell_rows(cell), job.study, job.arm, job.job, cell.label))
        if done is not None:
            done(cell.label)
    return pd.concat(frames, ignore_index=True)
