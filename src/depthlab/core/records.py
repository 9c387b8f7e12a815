"""Tidy rows: probe values as one row per (seed, layer, sublayer, metric), the check that none is
NaN or inf, and the columns that say which study, arm, job and cell a row belongs to."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.core.probes import Probe
from depthlab.pipeline.grid import Cell
from depthlab.pipeline.reuse import GRADIENT_METRICS


class NonFiniteError(RuntimeError):
    """A probe produced NaN or inf; the message names the cell and the seed."""


def probe_rows(probes: list[Probe], seeds: list[int]) -> pd.DataFrame:
    """One row per seed and layer of every probe: columns seed, layer, sublayer, metric, value."""
    frames = []
    for p in probes:
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


def pass_rows(probes: list[Probe], seeds: list[int], loss) -> pd.DataFrame:
    """probe_rows of one pass's probes plus each seed's loss (metric loss, sublayer head,
    layer 0); loss is a (S,) tensor."""
    return probe_rows([*probes, Probe("loss", "head", [0], loss.unsqueeze(1))], seeds)


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
    (depthlab.pipeline.reuse): the owner's rows of `label` without the probes this cell does not
    take (gradients, pairwise block correlations), with this cell's settings as columns, in the
    column order a measured cell has (tag adds study, arm, job and label)."""
    rows = owner[owner["label"] == label]
    dropped = [*(GRADIENT_METRICS if cell.settings.grad_of == "none" else ()),
               *(() if cell.settings.block_corr else ("block_corr",))]
    rows = rows[~rows["metric"].isin(dropped)]
    frame = rows[["seed", "layer", "sublayer", "metric", "value"]].reset_index(drop=True)
    for key, value in cell.settings.as_columns().items():
        frame[key] = value
    return frame
