"""Which readings of a note's open settings the note's own numbers allow.

Under the right reading each identifying number falls outside its 95% band 5% of the time; a
reading under which so many fall outside that the probability of so many is at most 5% is
excluded. That probability is joint where the numbers share one pool of at least JOINT_POOL
seeds (the same resampled seeds for every number: cells share seeds, a factor is a quotient of
two sds; the coverage of the joint count is checked at such pools, tests/test_claims_bands.py),
and the binomial otherwise (outcomes.excluded).
"""

from __future__ import annotations

import math

import numpy as np

from depthlab.claims import bands, outcomes
from depthlab.claims.outcomes import CONTRADICTED

JOINT_POOL = 24  # the least common pool the joint miss count is drawn from


def joint_miss_p(draws: list[tuple], outside: int) -> float:
    """P(at least `outside` of these identifying numbers fall outside their bands) under the
    right reading, with the numbers' dependence kept: B resamples of the same seeds for every
    number (cells share seeds; a factor is a quotient of two sds), each number outside its
    central 95% of draws in 5% of them; the miss count's upper tail. `draws`: (statistic of
    idx, n, pool) per number; NaN when their pools differ or hold fewer than JOINT_POOL seeds
    (the binomial rule then)."""
    pools = {pool for _, _, pool in draws}
    if len(pools) != 1 or min(pools) < JOINT_POOL:
        return math.nan
    idx = bands.resamples(draws[0][2], max(n for _, n, _ in draws))
    misses = np.zeros(len(idx), dtype=int)
    for stat, n, _ in draws:
        values = np.asarray(stat(idx[:, :n]), dtype=float).reshape(len(idx))
        lo, hi = np.quantile(values, [(1 - bands.LEVEL) / 2, (1 + bands.LEVEL) / 2])
        misses += (values < lo) | (values > hi)
    return float(np.mean(misses >= outside))


def rules_of(notes: dict) -> list[dict]:
    """The identification rules of the claims file's notes: each open setting with numbers
    that identify it (`by`)."""
    return [{"note": note, **reading} for note, spec in notes.items()
            for reading in spec.get("readings", []) if reading.get("by")]


def identify(rules: list[dict], evaluated: dict) -> tuple[dict, list[dict]]:
    """Which readings of each open setting the note's own numbers exclude: {(note, setting,
    label): why}, and one record per reading (graded, outside, p, excluded, why) for the docs
    and the freeze. A reading is excluded when so many identifying numbers fall outside their
    bands that the joint miss count's tail probability (joint_miss_p: resampled seeds, the
    numbers' dependence kept) is at most 5%; the binomial rule (outcomes.excluded) where the
    numbers have no common pool of JOINT_POOL seeds."""
    excluded, records = {}, []
    for rule in rules:
        tally: dict[str, list[tuple[str, tuple | None]]] = {}
        for entry_id in rule["by"]:
            row, readings = evaluated[entry_id]
            if row["outcome"] in outcomes.MEASURED:
                tally.setdefault(rule["primary"], []).append(
                    (entry_id if row["outcome"] == CONTRADICTED else "", row.get("draw")))
            for r, m in readings:
                if r["setting"] == rule["setting"] and m is not None:
                    tally.setdefault(r["label"], []).append(
                        (entry_id if m["outcome"] == CONTRADICTED else "", m.get("draw")))
        for label, marks in tally.items():
            against = [m for m, _ in marks if m]
            draws = [d for _, d in marks if d is not None]
            p = (1.0 if not against else joint_miss_p(draws, len(against))) \
                if draws and len(draws) == len(marks) else math.nan
            out = p <= 0.05 if np.isfinite(p) else outcomes.excluded(len(against), len(marks))
            why = (f"{len(against)} of {len(marks)} identifying numbers outside their bands, "
                   + (f"joint p = {p:.2g}" if np.isfinite(p) else "binomial"))
            records.append({"note": rule["note"], "setting": rule["setting"], "label": label,
                            "graded": len(marks), "outside": len(against),
                            "p_joint": p, "excluded": out, "by": ", ".join(against),
                            "why": why})
            if out:
                excluded[(rule["note"], rule["setting"], label)] = why
    return excluded, records
