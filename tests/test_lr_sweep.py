"""The fixestraining study's learning-rate sweep: which cells compare placements at one rate,
which form a sweep, each placement's best rate, and the paired comparisons at the best rates,
on fit rows built by hand (so every expected value is written down, not computed by the code
under test)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from depthlab.analysis.stats import seed_summary
from depthlab.claims.fits import study_fits
from depthlab.studies.fixestraining import tables
from depthlab.studies.fixestraining.fit import across_arms, at_best_rates
from depthlab.studies.fixestraining.rates import (
    at_shared_rate,
    best_rates,
    shared_rate,
    swept,
)

SEEDS = [0, 1, 2, 3, 4]
ENTROPY = 3.3


def _row(arm, placement, lr, warmup, values, step=200, quantity="val_loss"):
    return {"quantity": quantity, "arm": arm, "label": placement, "placement": placement,
            "depth": 24, "lr": lr, "warmup_steps": warmup, "step": step, "layer": 0,
            "seeds": SEEDS, "seed_values": list(values), **seed_summary(np.asarray(values))}


def _fits() -> pd.DataFrame:
    """Post-LN and Pre-LN swept over 4 rates with warmup, a third placement at 1e-3 only (with
    and without warmup), an earlier step that must not count."""
    base = np.array([0.0, 0.01, 0.02, 0.03, 0.04])
    post = {1e-4: 3.0, 3e-4: 2.6, 1e-3: 2.8, 3e-3: 3.4}    # best 3e-4, interior
    pre = {1e-3: 2.7, 3e-3: 2.5, 1e-2: 2.45, 3e-2: 2.44}   # best 3e-2, at the edge
    rows = [_row("lr", "post", lr, 20, v + base) for lr, v in post.items()]
    rows += [_row("lr", "pre", lr, 20, v + base[::-1]) for lr, v in pre.items()]
    rows += [_row("warmup", "rezero", 1e-3, 20, 2.9 + base),
             _row("nowarmup", "rezero", 1e-3, 0, 3.0 + base),
             _row("nowarmup", "post", 1e-3, 0, 3.5 + base),
             _row("lr", "post", 1e-4, 20, 1.0 + base, step=100)]
    rows.append(_row("warmup", "rezero", 1e-3, 20, [ENTROPY] * 5, step=0,
                     quantity="unigram_entropy"))
    frame = pd.DataFrame(rows)
    # every cell has its own (arm, label): the rate in the label, as the planner's cells
    frame["arm"] = frame["arm"] + frame["lr"].map(str) + frame["warmup_steps"].map(str)
    return frame


def test_the_shared_rate_is_the_one_every_placement_trained_at():
    fits = _fits()
    assert shared_rate(fits) == 1e-3
    kept = at_shared_rate(fits)
    assert set(kept["lr"]) == {1e-3}
    assert set(kept["placement"]) == {"post", "pre", "rezero"}


def test_the_sweep_is_the_placements_at_two_or_more_rates_and_their_last_step():
    cells = swept(_fits())
    assert sorted(set(cells["placement"])) == ["post", "pre"]
    assert (cells["step"] == 200).all() and len(cells) == 8


def test_best_rate_is_the_lowest_mean_and_interior_only_with_rates_on_both_sides():
    best = best_rates(swept(_fits())).set_index("placement")
    assert best.loc["post", "lr"] == 3e-4 and bool(best.loc["post", "interior"])
    assert best.loc["pre", "lr"] == 3e-2 and not bool(best.loc["pre", "interior"])
    assert best.loc["post", "mean"] == pytest.approx(2.62)
    assert best.loc["post", "rates"] == [1e-4, 3e-4, 1e-3, 3e-3]


def test_best_rate_rows_for_the_ledger_carry_the_seeds_at_that_rate():
    rows = at_best_rates(_fits()).set_index("placement")
    assert set(rows["quantity"]) == {"val_loss_best_rate"} and set(rows["arm"]) == {"best_rate"}
    np.testing.assert_allclose(rows.loc["pre", "seed_values"],
                               [2.48, 2.47, 2.46, 2.45, 2.44])


def test_the_ledger_reads_the_best_rates_derived_across_the_arms_fits(tmp_path):
    """Each arm is fitted on its own, so no arm's fit holds a sweep: the ledger's reading of a
    study's fits derives the best rates from all of them together."""
    fits = _fits()
    paths = []
    for arm, rows in fits.groupby("arm"):
        paths.append(tmp_path / f"{arm}.parquet")
        rows.to_parquet(paths[-1])
        assert across_arms(rows).empty  # one arm alone holds no sweep
    read = study_fits("fixestraining", paths)
    best = read[read["quantity"] == "val_loss_best_rate"].set_index("placement")
    assert best["lr"].to_dict() == {"post": 3e-4, "pre": 3e-2}
    assert len(read) == len(fits) + 2


def test_ranking_at_best_rates_pairs_seeds():
    table = tables.best_rate_ranking(_fits())
    assert table["placement"].tolist() == ["Pre-LN", "Post-LN"]
    post = table.set_index("placement").loc["Post-LN"]
    # per seed: Post-LN at 3e-4 (2.60, 2.61, ...) minus Pre-LN at 3e-2 (2.48, 2.47, ...)
    # = 0.12, 0.14, 0.16, 0.18, 0.20: mean 0.16
    assert post["minus Pre-LN, per seed [95% t]"].startswith("0.16 [")
    assert post["interior"] == "yes" and post["seeds < 3.3"] == "5/5"
    pre = table.set_index("placement").loc["Pre-LN"]
    assert pre["interior"] == "no" and pre["resolved (interval > 0)"] == "yes"


def test_sweep_table_marks_one_best_rate_per_placement():
    table = tables.sweep(_fits())
    assert len(table) == 8
    assert table.groupby("placement")["best rate"].apply(lambda s: (s == "yes").sum()).eq(1).all()
    post = table[table["placement"] == "Post-LN"].set_index("learning rate")
    assert post.loc["0.003", "seeds < 3.3"] == "0/5"


def test_unpaired_seeds_are_an_error():
    fits = _fits()
    index = fits.index[(fits["placement"] == "pre") & (fits["lr"] == 3e-2)][0]
    fits.at[index, "seeds"] = [5, 6, 7, 8, 9]
    with pytest.raises(ValueError, match="unpaired seeds"):
        tables.best_rate_ranking(fits)
