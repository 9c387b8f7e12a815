"""The fixestraining study's sweep of recipes (rate, warmup): which cells compare placements at
one rate, which form a sweep, each placement's best recipe chosen on the selection seeds and
reported on held-out seeds, and the paired comparisons there, on fit rows built by hand (so
every expected value is written down, not computed by the code under test)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from depthlab.analysis.stats import seed_summary
from depthlab.studies.fits import study_fits
from depthlab.studies.fixestraining import tables
from depthlab.studies.fixestraining.fit import across_arms, at_best_rates
from depthlab.studies.fixestraining.rates import (
    at_shared_rate,
    best_rates,
    held_out,
    shared_rate,
    swept,
)

SEEDS = [0, 1, 2, 3, 4]
HELD_OUT = [500, 501, 502, 503, 504]
ENTROPY = 3.3


def _row(arm, placement, lr, warmup, values, step=200, quantity="val_loss", seeds=SEEDS):
    return {"quantity": quantity, "arm": arm, "label": placement, "placement": placement,
            "depth": 24, "lr": lr, "warmup_steps": warmup, "step": step, "layer": 0,
            "seeds": seeds, "seed_values": list(values), **seed_summary(np.asarray(values))}


def _fits(held: bool = True) -> pd.DataFrame:
    """Post-LN and Pre-LN swept over 4 rates with warmup, Post-LN also with a 50-step warmup, a
    third placement at 1e-3 only (with and without warmup), an earlier step that must not
    count; and (`held`) every swept recipe again on held-out seeds, where Pre-LN's best would
    be another rate."""
    base = np.array([0.0, 0.01, 0.02, 0.03, 0.04])
    post = {1e-4: 3.0, 3e-4: 2.6, 1e-3: 2.8, 3e-3: 3.4}    # best 3e-4, interior
    pre = {1e-3: 2.7, 3e-3: 2.5, 1e-2: 2.45, 3e-2: 2.44}   # best 3e-2, at the edge
    rows = [_row("lr", "post", lr, 20, v + base) for lr, v in post.items()]
    rows += [_row("lr", "pre", lr, 20, v + base[::-1]) for lr, v in pre.items()]
    rows += [_row("warmup", "rezero", 1e-3, 20, 2.9 + base),
             _row("nowarmup", "rezero", 1e-3, 0, 3.0 + base),
             _row("nowarmup", "post", 1e-3, 0, 3.5 + base),
             _row("lr", "post", 1e-4, 20, 1.0 + base, step=100),
             _row("w50", "post", 1e-3, 50, 2.65 + base)]
    if held:
        held_post = {1e-4: 3.1, 3e-4: 2.7, 1e-3: 2.9, 3e-3: 3.5}
        held_pre = {1e-3: 2.8, 3e-3: 2.6, 1e-2: 2.40, 3e-2: 2.50}  # 1e-2 would win here
        rows += [_row("held", "post", lr, 20, v + base, seeds=HELD_OUT)
                 for lr, v in held_post.items()]
        rows += [_row("held", "pre", lr, 20, v + base[::-1], seeds=HELD_OUT)
                 for lr, v in held_pre.items()]
        rows.append(_row("held_w50", "post", 1e-3, 50, 2.75 + base, seeds=HELD_OUT))
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
    # neither the held-out seeds nor the warmup sweep's 50 steps (Post-LN alone) join it
    assert {s[0] for s in kept["seeds"]} == {0} and set(kept["warmup_steps"]) == {0, 20}


def test_the_sweep_is_the_placements_at_two_or_more_rates_and_their_last_step():
    cells = swept(_fits())
    assert sorted(set(cells["placement"])) == ["post", "pre"]
    assert (cells["step"] == 200).all() and len(cells) == 9  # 8 rates, 1 longer warmup
    assert {s[0] for s in cells["seeds"]} == {0}  # the selection seeds only


def test_the_held_out_cells_share_no_seed_with_the_selection():
    cells = held_out(_fits())
    assert len(cells) == 9 and {tuple(s) for s in cells["seeds"]} == {tuple(HELD_OUT)}
    assert held_out(_fits(held=False)).empty


def test_best_rate_is_the_lowest_mean_and_interior_only_with_rates_on_both_sides():
    best = best_rates(swept(_fits())).set_index("placement")
    assert best.loc["post", "lr"] == 3e-4 and bool(best.loc["post", "interior"])
    assert best.loc["pre", "lr"] == 3e-2 and not bool(best.loc["pre", "interior"])
    assert best.loc["post", "mean"] == pytest.approx(2.62)
    assert best.loc["post", "rates"] == [1e-4, 3e-4, 1e-3, 3e-3]
    assert best.loc["post", "warmups"] == [20, 50] and best.loc["pre", "warmups"] == [20]


def test_a_longer_warmup_is_a_recipe_of_the_sweep():
    fits = _fits()
    fits.loc[(fits["arm"] == "w50") | (fits["arm"].str.startswith("w50")), "mean"] = 2.5
    best = best_rates(swept(fits)).set_index("placement")
    assert (best.loc["post", "warmup_steps"], best.loc["post", "lr"]) == (50, 1e-3)
    assert not bool(best.loc["post", "interior"])  # one rate at that warmup


def test_best_rate_rows_for_the_ledger_are_the_held_out_seeds_at_the_chosen_rate():
    """Pre-LN's best rate is chosen on seeds 0-4 (3e-2), though the held-out seeds would pick
    1e-2: the reported loss is the held-out seeds' at 3e-2."""
    rows = at_best_rates(_fits()).set_index("placement")
    assert set(rows["quantity"]) == {"val_loss_best_rate"} and set(rows["arm"]) == {"best_rate"}
    assert rows.loc["pre", "lr"] == 3e-2 and rows.loc["pre", "seeds"] == HELD_OUT
    np.testing.assert_allclose(rows.loc["pre", "seed_values"],
                               [2.54, 2.53, 2.52, 2.51, 2.50])
    assert at_best_rates(_fits(held=False)).empty  # nothing held out: nothing reported


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
    # per held-out seed: Post-LN at 3e-4 (2.70, 2.71, ...) minus Pre-LN at 3e-2 (2.54, 2.53,
    # ...) = 0.16, 0.18, 0.20, 0.22, 0.24: mean 0.20
    assert post["minus Pre-LN, per seed [95% t]"].startswith("0.2 [")
    assert post["interior"] == "yes" and post["seeds < 3.3"] == "5/5"
    assert post["reported on"] == "held-out seeds" and post["selection seeds' mean"] == "2.62"
    pre = table.set_index("placement").loc["Pre-LN"]
    assert pre["interior"] == "no" and pre["resolved (interval > 0)"] == "yes"


def test_ranking_without_held_out_cells_says_it_reports_the_selection_seeds():
    table = tables.best_rate_ranking(_fits(held=False)).set_index("placement")
    assert table.loc["Post-LN", "reported on"].startswith("selection seeds")
    # Post-LN at 3e-4 minus Pre-LN at 3e-2 on seeds 0-4: 0.12 ... 0.20, mean 0.16
    assert table.loc["Post-LN", "minus Pre-LN, per seed [95% t]"].startswith("0.16 [")


def test_sweep_table_marks_one_best_rate_per_placement():
    table = tables.sweep(_fits())
    assert len(table) == 9
    assert table.groupby("placement")["best recipe"].apply(
        lambda s: (s == "yes").sum()).eq(1).all()
    post = table[(table["placement"] == "Post-LN") & (table["warmup steps"] == 20)]
    assert post.set_index("learning rate").loc["0.003", "seeds < 3.3"] == "0/5"


def test_unpaired_seeds_are_an_error():
    fits = _fits()
    index = fits.index[(fits["placement"] == "pre") & (fits["lr"] == 3e-2)
                       & (fits["arm"].str.startswith("held"))][0]
    fits.at[index, "seeds"] = [505, 506, 507, 508, 509]
    with pytest.raises(ValueError, match="unpaired seeds"):
        tables.best_rate_ranking(fits)


def test_first_reach_interpolates_between_evaluations_and_misses_a_level_never_reached():
    steps = np.array([0.0, 10.0, 20.0, 30.0])
    losses = np.array([4.0, 3.0, 2.0, 1.5])
    assert tables.first_reach(steps, losses, 2.5) == pytest.approx(15.0)  # halfway 10 -> 20
    assert tables.first_reach(steps, losses, 4.5) == 0.0                  # at the start
    assert tables.first_reach(steps, losses, 2.0) == 20.0                 # on an evaluation
    assert np.isnan(tables.first_reach(steps, losses, 1.0))


def test_steps_to_loss_finds_each_seeds_crossing_and_the_ratio_to_post_ln():
    """Straight loss curves from 4 nats/char evaluated every 10 steps: Post-LN falls 0.01 per
    step, ReZero twice as fast, so ReZero reaches every level in half the steps (ratio 0.5 per
    seed); the levels run from the entropy (3.3) to the worst final loss (Post-LN's)."""
    steps = np.arange(0, 201, 10)
    rows = []
    for placement, rate in (("post", 0.01), ("rezero", 0.02)):
        for step in steps:
            curve = np.maximum(4.0 - rate * step * np.array([1.0, 1.0, 1.0]), 2.0)
            rows.append(_row("speed", placement, 1e-3, 20, curve, step=int(step),
                             seeds=[0, 1, 2]))
    rows.append(_row("speed", "post", 1e-3, 20, [ENTROPY] * 3, step=0, seeds=[0, 1, 2],
                     quantity="unigram_entropy"))
    table = tables.steps_to_loss(pd.DataFrame(rows)).set_index("placement")
    assert list(table.index) == ["Post-LN", "ReZero"]
    # Post-LN ends at 2.0, the worst final loss: levels 3.3 - f (3.3 - 2.0) for f = .5, .8, .95
    level = 3.3 - 0.95 * 1.3
    column = [c for c in table.columns if c.startswith("steps to") and "95%" in c]
    assert column == [f"steps to {level:.3g} (95% of the way)"]
    expected = (4.0 - level) / 0.01  # 193.5 steps for Post-LN, 96.75 for ReZero (3 digits)
    post = table.loc["Post-LN", column[0]].replace("[", "").replace(",", "").replace("]", "")
    assert [float(v) for v in post.split()] == pytest.approx([expected] * 3, abs=0.5)
    assert float(table.loc["ReZero", column[0]].split()[0]) == pytest.approx(expected / 2,
                                                                            abs=0.05)
    assert table.loc["ReZero", "steps over Post-LN's, per seed [95% t]"].startswith("0.5 ")


def test_steps_to_loss_counts_the_seeds_that_never_reach_a_level():
    rows = [_row("speed", "post", 1e-3, 20, [4.0, 4.0], step=0, seeds=[0, 1]),
            _row("speed", "post", 1e-3, 20, [2.0, 3.2], step=10, seeds=[0, 1]),
            _row("speed", "rezero", 1e-3, 20, [4.0, 4.0], step=0, seeds=[0, 1]),
            _row("speed", "rezero", 1e-3, 20, [2.0, 2.0], step=10, seeds=[0, 1]),
            _row("speed", "post", 1e-3, 20, [ENTROPY] * 2, step=0, seeds=[0, 1],
                 quantity="unigram_entropy")]
    table = tables.steps_to_loss(pd.DataFrame(rows)).set_index("placement")
    # the worst median final loss is Post-LN's 2.6; at 95% of the way (2.635) seed 1 (3.2)
    # never gets there, so the ratio is not given
    level = 3.3 - 0.95 * (3.3 - 2.6)
    assert table.loc["Post-LN", f"steps to {level:.3g} (95% of the way)"].endswith(
        "(1/2 reached)")
    assert table.loc["ReZero", "steps over Post-LN's, per seed [95% t]"] == "—"
