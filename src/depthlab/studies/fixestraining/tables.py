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


# the loss levels of steps_to_loss: fractions of the way from the corpus's unigram entropy down
# to the highest median final validation loss among the cells compared (ReZero's "56% faster
# to 1.2 BPB": a level every placement reaches; from the loss at the first evaluation where a
# cell ends above the entropy)
LEVELS = (0.5, 0.8, 0.95)


def first_reach(steps: np.ndarray, losses: np.ndarray, level: float) -> float:
    """The first step at which a loss curve (losses at ascending `steps`) falls to `level`,
    linearly interpolated between the two evaluations around the crossing (optimiser steps);
    nan where it never does."""
    below = np.flatnonzero(losses <= level)
    if not below.size:
        return float("nan")
    i = int(below[0])
    if i == 0:
        return float(steps[0])
    s0, s1, l0, l1 = steps[i - 1], steps[i], losses[i - 1], losses[i]
    return float(s0 + (s1 - s0) * (l0 - level) / (l0 - l1))


def _reached(steps: np.ndarray) -> str:
    """Steps to a level across seeds: 'median [min, max]' of the seeds that reached it, with
    how many did where some did not."""
    hit = steps[~np.isnan(steps)]
    if not hit.size:
        return f"not reached (0/{len(steps)})"
    text = median_range({"median": float(np.median(hit)), "min": hit.min(), "max": hit.max()})
    return text if hit.size == len(steps) else f"{text} ({hit.size}/{len(steps)} reached)"


def steps_to_loss(fits: pd.DataFrame) -> pd.DataFrame:
    """Per cell (placement, depth, warmup, peak rate): the final validation loss (median, seed
    range) and the optimiser steps each seed takes to reach each loss level (LEVELS; median
    [seed range]), and for each cell beside a Post-LN cell of the same depth and recipe, the
    per-seed ratio of its steps to Post-LN's at the lowest level (seeds paired: the same seed
    draws the same batches; mean [95% t]): ReZero's "converges 56% faster than the vanilla
    Transformer" (Bachlechner et al. 2020, sec. 1) is a ratio of 1/1.56 = 0.64."""
    val = pick(fits, quantity="val_loss")
    entropy = unigram_entropy(fits)
    cells = []
    for _, cell in val.groupby(["arm", "label"], sort=False):
        cell = cell.sort_values("step")
        cells.append((cell.iloc[-1], cell["step"].to_numpy(dtype=float),
                      np.stack([np.asarray(v, dtype=float) for v in cell["seed_values"]], 1)))
    worst = max(final["median"] for final, _, _ in cells)
    # from the unigram entropy; from the loss at the first evaluation where a cell ends above it
    top = entropy if worst < entropy else max(float(np.median(c[:, 0])) for _, _, c in cells)
    levels = [top - f * (top - worst) for f in LEVELS]
    reach = [np.array([[first_reach(steps, seed, level) for seed in curves] for level in levels])
             for _, steps, curves in cells]
    keys = ("depth", "warmup_steps", "lr")
    rank = {p: i for i, p in enumerate(order({final["placement"] for final, _, _ in cells}))}
    rows = []
    for i in sorted(range(len(cells)), key=lambda i: (
            rank[cells[i][0]["placement"]], *(cells[i][0][k] for k in keys))):
        final, steps, _ = cells[i]
        row = {"placement": label(final["placement"]), "L": int(final["depth"]),
               "warmup steps": int(final["warmup_steps"]), "learning rate": fmt(final["lr"]),
               f"val loss at step {int(final['step'])} (nats/char)": median_range(final)}
        for fraction, level, steps_at in zip(LEVELS, levels, reach[i], strict=True):
            row[f"steps to {fmt(level)} ({fraction:.0%} of the way)"] = _reached(steps_at)
        post = [j for j, (other, _, _) in enumerate(cells) if other["placement"] == "post"
                and all(other[k] == final[k] for k in keys)
                and list(other["seeds"]) == list(final["seeds"])]
        if post and final["placement"] != "post":
            ratio = reach[i][-1] / reach[post[0]][-1]
            row["steps over Post-LN's, per seed [95% t]"] = (
                "—" if np.isnan(ratio).any()
                else f"{fmt(float(ratio.mean()))} {spread(*t_interval(ratio))}")
        rows.append(row)
    return pd.DataFrame(rows)


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
