"""The summary table of the training study: each init-time effect at step 0 and at the end."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.profiles import unigram_entropy
from depthlab.analysis.select import pick
from depthlab.analysis.tables import spread
from depthlab.studies.training.fit import SUMMARIES, deviation
from depthlab.vocabulary.variants import label


def verdict(name: str, init: pd.Series, end: pd.Series, tol: float) -> tuple[float, str]:
    """What training did to effect `name` between two seed summaries (median, min, max): the
    change |dev(median_end)| / |dev(median_init)| and a verdict. An effect is clear when its
    seed range of deviations excludes zero. Both clear: 'reversed' on a change of sign, else
    'amplified' / 'reduced' when the change is above 1 + tol / below 1 - tol, 'preserved'
    within. Otherwise 'emerged' (clear only at the end), 'vanished' (only at step 0) or
    'absent' (neither)."""
    dev = {k: deviation(name, pd.Series([row["median"], row["min"], row["max"]]))
           for k, row in (("init", init), ("end", end))}
    change = float(abs(dev["end"][0]) / abs(dev["init"][0]))
    clear = {k: bool(np.sign(d[1]) == np.sign(d[2]) != 0) for k, d in dev.items()}
    if not clear["init"]:
        return change, "emerged" if clear["end"] else "absent"
    if not clear["end"]:
        return change, "vanished"
    if np.sign(dev["init"][0]) != np.sign(dev["end"][0]):
        return change, "reversed"
    if change > 1 + tol:
        return change, "amplified"
    if change < 1 - tol:
        return change, "reduced"
    return change, "preserved"


def _row(init: pd.Series, end: pd.Series) -> dict:
    return {"step 0": init["median"], "step 0 seeds": spread(init["min"], init["max"]),
            "end": end["median"], "end seeds": spread(end["min"], end["max"]),
            "end step": int(end["step"])}


def summary(fits: pd.DataFrame, preserved_within: float = 0.2) -> pd.DataFrame:
    """Per placement, depth, warmup, final norm (auto: the placement's own; off) and effect:
    the median at step 0 and at the last step with the seed range, the change and the verdict
    (see `verdict`); then the validation loss (change = end / step 0) against the corpus's
    unigram entropy."""
    rows = []
    entropy = unigram_entropy(fits)
    for (placement, depth, warmup, final_norm), _ in pick(fits, quantity="val_loss").groupby(
            ["placement", "depth", "warmup_steps", "final_norm"]):
        base = {"placement": label(placement), "L": int(depth),
                "warmup steps": int(warmup), "final norm": final_norm}
        where = {"placement": placement, "depth": depth, "warmup_steps": warmup,
                 "final_norm": final_norm}
        for name, (description, _) in SUMMARIES.items():
            values = pick(fits, quantity=name, **where).sort_values("step")
            if values.empty:
                continue
            init, end = values.iloc[0], values.iloc[-1]
            change, word = verdict(name, init, end, preserved_within)
            rows.append({**base, "effect": description, **_row(init, end), "change": change,
                         "verdict": word})
        loss = pick(fits, quantity="val_loss", **where).sort_values("step")
        init, end = loss.iloc[0], loss.iloc[-1]
        below = "below" if end["max"] < entropy else "not below"
        rows.append({**base, "effect": "validation loss (nats/char)", **_row(init, end),
                     "change": end["median"] / init["median"],
                     "verdict": f"{below} the unigram entropy {entropy:.4g}"})
    return pd.DataFrame(rows)
