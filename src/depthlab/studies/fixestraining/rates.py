"""Which cells of the fixestraining study compare placements at one learning rate, and which
form a learning-rate sweep; each swept placement's best rate.

The rule, fixed before the sweep's first run (2026-12-05): a placement's best rate is the rate
of its sweep with the lowest seed mean of the final validation loss (nats/char); it is interior
when rates below and above it were swept. Comparisons at the best rates pair seeds (the same
seed draws the same batches and, under the same init, the same weights). The best rate is
chosen on the seeds it is then reported on, so its loss is an optimistic estimate of a fresh
run's at that rate (the same selection for every placement).
"""

from __future__ import annotations

import pandas as pd

from depthlab.analysis.select import pick


def compared(fits: pd.DataFrame) -> pd.DataFrame:
    """The fit rows of the cells the study compares placements and rates on: those at the init
    most of its cells train at (the `paper_*` arms' papers' inits are graded on their own, never
    swept or ranked beside them)."""
    if "init" not in fits:
        return fits
    inits = pick(fits, quantity="val_loss").groupby("init")["label"].nunique()
    return fits[fits["init"] == inits.idxmax()]


def final_losses(fits: pd.DataFrame) -> pd.DataFrame:
    """The validation loss at each compared cell's last step (one fit row per cell)."""
    val = pick(compared(fits), quantity="val_loss")
    last = val.groupby(["arm", "label"])["step"].transform("max")
    return val[val["step"] == last]


def shared_rate(fits: pd.DataFrame) -> float:
    """The learning rate at which the most placements trained (ties: the lowest rate): the
    rate of the study's comparison of every placement with and without warmup."""
    counts = final_losses(fits).groupby("lr")["placement"].nunique()
    return float(counts[counts == counts.max()].index.min())


def at_shared_rate(fits: pd.DataFrame) -> pd.DataFrame:
    """The fit rows of the compared cells trained at the shared rate."""
    fits = compared(fits)
    return fits[fits["lr"] == shared_rate(fits)]


def swept(fits: pd.DataFrame) -> pd.DataFrame:
    """The final validation losses of the sweeps: per warmup length, the placements trained at
    two or more rates (one row per placement and rate)."""
    final = final_losses(fits)
    rates = final.groupby(["warmup_steps", "placement"])["lr"].transform("nunique")
    return final[rates > 1]


def best_rates(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per warmup length and swept placement, the row of its best rate (lowest seed mean of
    the final validation loss), with columns `rates` (the rates swept, ascending) and
    `interior` (a lower and a higher rate were swept)."""
    rows = []
    for _, cells in sweep.groupby(["warmup_steps", "placement"], sort=True):
        best = cells.loc[cells["mean"].idxmin()].copy()
        rates = sorted(float(r) for r in cells["lr"])
        best["rates"] = rates
        best["interior"] = rates[0] < best["lr"] < rates[-1]
        rows.append(best)
    return pd.DataFrame(rows).reset_index(drop=True)
