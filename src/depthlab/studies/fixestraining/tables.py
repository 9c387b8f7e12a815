"""The table of the fixestraining study: which placements train, with and without warmup, and
what training did to the init-time probes."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from depthlab.analysis.profiles import unigram_entropy
from depthlab.analysis.select import pick
from depthlab.analysis.stats import t_interval
from depthlab.analysis.tables import fmt, mean_interval, median_range, spread
from depthlab.studies.fixestraining.rates import at_shared_rate, best_rates, reported, swept
from depthlab.vocabulary.variants import label, order

# the probes shown at step 0 and at the end (fit.DERIVED)
SHOWN = (
    ("grad_ratio", "grad ratio"),
    ("stream_growth", "stream growth"),
    ("token_corr_last", "token corr after block L"),
    ("stream_max_abs_peak", "max |x| over blocks"),
)


def trains(val: pd.Series, entropy: float) -> str:
    """'yes' if every seed's final validation loss is below the corpus's unigram entropy (the
    loss of a model that learned the character frequencies only), else 'no'."""
    return "yes" if max(val["seed_values"]) < entropy else "no"


def summary(fits: pd.DataFrame) -> pd.DataFrame:
    """Per placement, depth and warmup arm: the final validation loss (median, seed range),
    whether it trains (every seed below the unigram entropy), the gap to the same placement's
    other warmup arm at its depth, and the probes at step 0 and at the last step (median, seed
    range); the cells at the rate every placement trained at (rates.shared_rate)."""
    fits = at_shared_rate(fits)
    val = pick(fits, quantity="val_loss")
    entropy = unigram_entropy(fits)
    end = int(val["step"].max())
    final = val[val["step"] == end]
    rows = []
    for placement, depth, warmup in itertools.product(
            order(set(final["placement"])), sorted(final["depth"].unique()),
            sorted(final["warmup_steps"].unique())):
        where = {"placement": placement, "depth": depth, "warmup_steps": warmup}
        loss = pick(final, **where)
        if loss.empty:
            continue
        loss = loss.iloc[0]
        other = pick(final, placement=placement, depth=depth)
        other = other[other["warmup_steps"] != warmup]
        row = {"placement": label(placement), "L": int(depth),
               "warmup steps": int(warmup),
               f"val loss at step {end} (nats/char)": loss["median"],
               "seed range": spread(loss["min"], loss["max"]),
               f"trains (every seed < {entropy:.4g})": trains(loss, entropy),
               "minus the other warmup arm": (loss["median"] - other["median"].iloc[0]
                                              if len(other) else float("nan"))}
        for quantity, name in SHOWN:
            values = pick(fits, quantity=quantity, **where).sort_values("step")
            if values.empty:
                continue
            row[f"{name}, step 0"] = median_range(values.iloc[0])
            end_row = values.iloc[-1]
            row[f"{name}, step {int(end_row['step'])}"] = median_range(end_row)
        rows.append(row)
    return pd.DataFrame(rows)


def ranking(fits: pd.DataFrame) -> pd.DataFrame:
    """Per depth and warmup arm, the placements in order of their median final validation
    loss, and for each the gap to the next one down the ranking: the median of the per-seed
    differences (seeds paired: the same seed draws the same batches and, under the same init,
    the same weights) with its 95% t-interval, and whether that interval excludes 0
    ('resolved': the gap exceeds what the seeds' spread allows) and whether the two seed ranges
    are disjoint; the cells at the rate every placement trained at (rates.shared_rate)."""
    val = pick(at_shared_rate(fits), quantity="val_loss")
    final = val[val["step"] == val["step"].max()]
    depths = sorted(int(d) for d in final["depth"].unique())
    rows = []
    for depth, warmup in itertools.product(depths, sorted(final["warmup_steps"].unique())):
        cells = list(pick(final, depth=depth, warmup_steps=warmup).sort_values(
            "median").itertuples())
        if not cells:  # a depth trained with one of the warmups only
            continue
        for rank, (a, b) in enumerate(zip(cells, [*cells[1:], None], strict=True), 1):
            # the depth a column where several are ranked apart
            row = {"L": depth} if len(depths) > 1 else {}
            row |= {"warmup steps": int(warmup), "rank": rank,
                    "placement": label(a.placement),
                    "val loss (nats/char)": median_range(pd.Series(a._asdict()))}
            if b is not None:
                diff = np.array(b.seed_values) - np.array(a.seed_values)
                lo, hi = t_interval(diff)
                row.update({"next": label(b.placement),
                            "gap to next, per-seed [95% t]": f"{fmt(float(np.median(diff)))} "
                            f"[{fmt(lo)}, {fmt(hi)}]",
                            "resolved (interval > 0)": "yes" if lo > 0 else "no",
                            "seed ranges disjoint": "yes" if b.min > a.max else "no"})
            rows.append(row)
    return pd.DataFrame(rows)


def _paired(a, b) -> tuple[float, float, float]:
    """Seed mean and 95% t-interval of b − a per seed (fit rows with the same seeds)."""
    if list(a["seeds"]) != list(b["seeds"]):
        raise ValueError(f"unpaired seeds: {a['seeds']} against {b['seeds']}")
    diff = np.array(b["seed_values"]) - np.array(a["seed_values"])
    lo, hi = t_interval(diff)
    return float(diff.mean()), lo, hi


def _successes(row, entropy: float) -> str:
    """How many seeds end below the unigram entropy, of how many."""
    values = np.asarray(row["seed_values"])
    return f"{int((values < entropy).sum())}/{len(values)}"


def sweep(fits: pd.DataFrame) -> pd.DataFrame:
    """Per swept placement and recipe (warmup, peak rate), on the selection seeds: the final
    validation loss (seed mean [95% t-interval], seed range), the seeds ending below the
    unigram entropy, and whether it is the placement's best recipe (rates.best_rates)."""
    cells = swept(fits)
    entropy = unigram_entropy(fits)
    best = {b.placement: (b.warmup_steps, b.lr) for b in best_rates(cells).itertuples()}
    rows = []
    for placement in order(set(cells["placement"])):
        for row in pick(cells, placement=placement).sort_values(["warmup_steps", "lr"]).to_dict(
                "records"):
            rows.append({
                "placement": label(placement), "L": int(row["depth"]),
                "warmup steps": int(row["warmup_steps"]), "learning rate": fmt(row["lr"]),
                f"val loss at step {int(row['step'])}, mean [95% t]": mean_interval(row),
                "seed range": spread(row["min"], row["max"]),
                f"seeds < {entropy:.4g}": _successes(row, entropy),
                "best recipe": "yes" if best[placement] == (row["warmup_steps"], row["lr"])
                else ""})
    return pd.DataFrame(rows)


def best_rate_ranking(fits: pd.DataFrame) -> pd.DataFrame:
    """The swept placements each at its best recipe, chosen on the selection seeds and
    reported on the held-out seeds (rates.reported), in order of the held-out seed mean of the
    final validation loss: the recipe, whether its rate is interior, the held-out loss (mean
    [95% t]) with the selection seeds' mean beside it, the held-out seeds below the unigram
    entropy, the paired per-seed difference to Pre-LN at its best recipe and to the next
    placement down (mean [95% t]; resolved where the interval excludes 0). A config without
    held-out cells gets the selection seeds' losses, labelled so (optimistic: chosen on them)."""
    best, on = reported(fits), "held-out seeds"
    if best.empty:
        best, on = best_rates(swept(fits)), "selection seeds (no held-out cells: optimistic)"
        best["chosen_mean"] = best["mean"]
    entropy = unigram_entropy(fits)
    ranked = best.sort_values("mean").to_dict("records")
    pre = next((r for r in ranked if r["placement"] == "pre"), None)
    rows = []
    for rank, (a, b) in enumerate(zip(ranked, [*ranked[1:], None], strict=True), 1):
        row = {"rank": rank, "placement": label(a["placement"]),
               "warmup steps": int(a["warmup_steps"]), "best rate": fmt(a["lr"]),
               "rates swept": ", ".join(fmt(r) for r in a["rates"]),
               "warmups swept": ", ".join(str(w) for w in a["warmups"]),
               "interior": "yes" if a["interior"] else "no", "reported on": on,
               "val loss, mean [95% t]": mean_interval(a),
               "selection seeds' mean": fmt(a["chosen_mean"]),
               f"seeds < {entropy:.4g}": _successes(a, entropy)}
        if pre is not None and a is not pre:
            mean, lo, hi = _paired(pre, a)
            row["minus Pre-LN, per seed [95% t]"] = f"{fmt(mean)} {spread(lo, hi)}"
        if b is not None:
            mean, lo, hi = _paired(a, b)
            row.update({"next": label(b["placement"]),
                        "gap to next, per seed [95% t]": f"{fmt(mean)} {spread(lo, hi)}",
                        "resolved (interval > 0)": "yes" if lo > 0 else "no"})
        rows.append(row)
    return pd.DataFrame(rows)
