"""Which cells of the fixestraining study compare placements at one learning rate, and which
form a sweep of training recipes (peak rate, warmup length); each swept placement's best
recipe, chosen on one seed set and reported on another.

The rule (issue 53, fixed before the held-out seeds' first run): a placement's best recipe is
the recipe of its sweep with the lowest seed mean of the final validation loss (nats/char) on
the selection seeds (the study's own, seed_offset 0); it is interior when rates below and
above it were swept at its warmup. The loss reported at the best recipe is that of the held-out
cell of the same placement and recipe (seeds disjoint from the selection seeds), so the choice
does not select on the seeds it is reported on. Comparisons pair seeds (the same seed draws the
same batches and, under the same init, the same weights).
"""

from __future__ import annotations

import pandas as pd

from depthlab.analysis.select import pick

RECIPE = ["lr", "warmup_steps"]


def _first_seed(fits: pd.DataFrame) -> pd.Series:
    return fits["seeds"].map(lambda seeds: int(seeds[0]))


def _at_main_init(fits: pd.DataFrame) -> pd.DataFrame:
    """The fit rows at the init most of the study's cells train at (the `paper_*` arms'
    papers' inits are graded on their own, never swept or ranked beside them)."""
    if "init" not in fits:
        return fits
    inits = pick(fits, quantity="val_loss").groupby("init")["label"].nunique()
    return fits[fits["init"] == inits.idxmax()]


def _finals(fits: pd.DataFrame) -> pd.DataFrame:
    """The validation loss at each cell's last step (one fit row per cell)."""
    val = pick(_at_main_init(fits), quantity="val_loss")
    last = val.groupby(["arm", "label"])["step"].transform("max")
    return val[val["step"] == last]


def selection_seed(fits: pd.DataFrame) -> int:
    """The first seed of the selection set: the lowest first seed of any compared cell."""
    return int(_first_seed(_finals(fits)).min())


def compared(fits: pd.DataFrame) -> pd.DataFrame:
    """The fit rows of the cells the study compares placements and recipes on: at the study's
    main init (_at_main_init), on the selection seeds."""
    fits = _at_main_init(fits)
    if fits.empty or "seeds" not in fits:
        return fits
    return fits[_first_seed(fits) == selection_seed(fits)]


def final_losses(fits: pd.DataFrame) -> pd.DataFrame:
    """The validation loss at each compared cell's last step (one fit row per cell)."""
    return _finals(compared(fits))


def held_out(fits: pd.DataFrame) -> pd.DataFrame:
    """The final validation losses of the held-out cells: at the main init, on seeds disjoint
    from the selection seeds (one row per cell)."""
    finals = _finals(fits)
    chosen = set().union(*(set(s) for s in final_losses(fits)["seeds"]))
    return finals[[not chosen & set(s) for s in finals["seeds"]]]


def shared_rate(fits: pd.DataFrame) -> float:
    """The learning rate at which the most placements trained (ties: the lowest rate): the
    rate of the study's comparison of every placement with and without warmup."""
    counts = final_losses(fits).groupby("lr")["placement"].nunique()
    return float(counts[counts == counts.max()].index.min())


def at_shared_rate(fits: pd.DataFrame) -> pd.DataFrame:
    """The fit rows of the compared cells trained at the shared rate, without warmup or with
    the study's warmup (the length most cells train with; the warmup sweep's others left
    out)."""
    fits = compared(fits)
    warmup = int(final_losses(fits)["warmup_steps"].mode().max())
    return fits[(fits["lr"] == shared_rate(fits)) & fits["warmup_steps"].isin([0, warmup])]


def swept(fits: pd.DataFrame) -> pd.DataFrame:
    """The final validation losses of the sweeps on the selection seeds: the placements
    trained at two or more rates at one warmup length, with every recipe they trained at the
    warmup of the no-warmup comparison or longer (one row per placement and recipe)."""
    final = final_losses(fits)
    final = final[final["warmup_steps"] > 0]
    rates = final.groupby(["warmup_steps", "placement"])["lr"].transform("nunique")
    swept_placements = set(final.loc[rates > 1, "placement"])
    return final[final["placement"].isin(swept_placements)]


def best_rates(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per swept placement, the row of its best recipe (lowest seed mean of the final
    validation loss), with columns `rates` (the rates swept at its warmup, ascending),
    `warmups` (the warmup lengths swept, ascending) and `interior` (a lower and a higher rate
    were swept at its warmup)."""
    rows = []
    for _, cells in sweep.groupby("placement", sort=True):
        best = cells.loc[cells["mean"].idxmin()].copy()
        rates = sorted(float(r) for r in
                       cells.loc[cells["warmup_steps"] == best["warmup_steps"], "lr"])
        best["rates"] = rates
        best["warmups"] = sorted(int(w) for w in set(cells["warmup_steps"]))
        best["interior"] = rates[0] < best["lr"] < rates[-1]
        rows.append(best)
    return pd.DataFrame(rows).reset_index(drop=True)


def reported(fits: pd.DataFrame) -> pd.DataFrame:
    """Each swept placement's best recipe (best_rates, chosen on the selection seeds) with the
    held-out cell's loss at that recipe: the held-out row, its `rates`, `warmups`, `interior`,
    and `chosen_mean` (the selection seeds' mean). Placements whose held-out cell was not run
    are left out."""
    best = best_rates(swept(fits))
    held = held_out(fits)
    rows = []
    for choice in best.to_dict("records"):
        cell = held[(held["placement"] == choice["placement"])
                    & (held["lr"] == choice["lr"])
                    & (held["warmup_steps"] == choice["warmup_steps"])]
        if len(cell) != 1:
            continue
        row = cell.iloc[0].copy()
        for key in ("rates", "warmups", "interior"):
            row[key] = choice[key]
        row["chosen_mean"] = choice["mean"]
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)
