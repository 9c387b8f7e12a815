"""The table of the fixestraining study: which placements train, with and without warmup, and
what training did to the init-time probes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.stats import t_interval
from depthlab.analysis.tables import fmt, median_range, spread
from depthlab.vocabulary.placements import LABELS, ORDER

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
    """Per placement and warmup arm: the final validation loss (median, seed range), whether
    it trains (every seed below the unigram entropy), the gap to the same placement's other
    warmup arm, and the probes at step 0 and at the last step (median, seed range)."""
    val = pick(fits, quantity="val_loss")
    entropy = float(pick(fits, quantity="unigram_entropy")["median"].iloc[0])
    end = int(val["step"].max())
    final = val[val["step"] == end]
    rows = []
    for placement in [p for p in ORDER if p in set(final["placement"])]:
        for warmup in sorted(final["warmup_steps"].unique()):
            where = {"placement": placement, "warmup_steps": warmup}
            loss = pick(final, **where)
            if loss.empty:
                continue
            loss = loss.iloc[0]
            other = final[(final["placement"] == placement) & (final["warmup_steps"] != warmup)]
            row = {"placement": LABELS[placement], "L": int(loss["depth"]),
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
    """Per warmup arm, the placements in order of their median final validation loss, and for
    each the gap to the next one down the ranking: the median of the per-seed differences
    (seeds paired: the same seed draws the same batches and, under the same init, the same
    weights) with its 95% t-interval, and whether that interval excludes 0 ('resolved': the
    gap exceeds what the seeds' spread allows) and whether the two seed ranges are disjoint."""
    val = pick(fits, quantity="val_loss")
    final = val[val["step"] == val["step"].max()]
    rows = []
    for warmup in sorted(final["warmup_steps"].unique()):
        arm = final[final["warmup_steps"] == warmup].sort_values("median")
        cells = list(arm.itertuples())
        for rank, (a, b) in enumerate(zip(cells, [*cells[1:], None], strict=True), 1):
            row = {"warmup steps": int(warmup), "rank": rank,
                   "placement": LABELS[a.placement],
                   "val loss (nats/char)": median_range(pd.Series(a._asdict()))}
            if b is not None:
                diff = np.array(b.seed_values) - np.array(a.seed_values)
                lo, hi = t_interval(diff)
                row.update({"next": LABELS[b.placement],
                            "gap to next, per-seed [95% t]": f"{fmt(float(np.median(diff)))} "
                            f"[{fmt(lo)}, {fmt(hi)}]",
                            "resolved (interval > 0)": "yes" if lo > 0 else "no",
                            "seed ranges disjoint": "yes" if b.min > a.max else "no"})
            rows.append(row)
    return pd.DataFrame(rows)
