"""One measurement of an entry: its sample under a statistic and a documented value, with the
outcome of the one rule (depthlab.claims.outcomes), where the note's value lies in our band or
interval (band_sigma) and the p-values of the hypotheses the outcome rests on
(depthlab.claims.evidence)."""

from __future__ import annotations

import math

import numpy as np

from depthlab.analysis.tables import fmt, ranges, spread
from depthlab.claims import bands, evidence, outcomes
from depthlab.claims.expressions import evaluate
from depthlab.claims.outcomes import QUESTION, SUPPORTED
from depthlab.claims.sample import Sample, estimates, statistic_of
from depthlab.claims.schema import ClaimsError, direction


def _seeds_on_side(doc, values: np.ndarray) -> str:
    """How many seeds' own values lie on the claimed side (a description, not graded)."""
    kind, x = direction(doc), doc[direction(doc)]
    v = values[:, None] if values.ndim == 1 else values
    held = [all(outcomes.direction(kind, x, a, a) == SUPPORTED for a in seed) for seed in v]
    return f"{sum(held)} of {len(held)} seeds on the claimed side by their own values"


def _members_text(parts: list[tuple[float, float, float]]) -> str:
    """Each member's value [interval], or for a long series the range they span."""
    if len(parts) <= 8:
        return "members: " + ", ".join(f"{fmt(p, 3)} {spread(lo, hi, 3)}" for p, lo, hi in parts)
    points = [p for p, _, _ in parts]
    within = spread(min(lo for _, lo, _ in parts), max(hi for _, _, hi in parts), 4)
    return (f"{len(parts)} members, values {fmt(min(points), 4)} to {fmt(max(points), 4)}, "
            f"intervals within {within}")


def _curve(entry: dict, sample: Sample, doc) -> dict:
    """Per k, the seed mean's simultaneous (sup-t) 95% band over all k against formula(k)
    (1 +- rel): the curve is one claim about all its k."""
    series = next(n for n, spec in entry["measure"]["rows"].items() if spec.get("along"))
    k = sample.coords[f"{series}_at"]
    formula = np.broadcast_to(np.asarray(evaluate(
        doc["formula"], {"k": k + doc["origin"]}, entry["id"]), dtype=float), k.shape)
    values = sample.per_seed()
    rel = entry["tolerance"]["rel"]
    los, his = bands.simultaneous_interval(values)
    per_k = np.array([outcomes.curve_at(float(f), rel, lo, hi)
                      for f, lo, hi in zip(formula, los, his, strict=True)])
    mean = values.mean(axis=0)
    worst = float(np.max(np.abs(mean / formula - 1)))
    text = "; ".join(f"{o} at k = {ranges(k, per_k == o)}" for o in outcomes.MEASURED
                     if (per_k == o).any())
    share = float((per_k == SUPPORTED).mean())
    df = len(sample.seeds) - 1
    p = evidence.members_p([evidence.region_p(m, lo, hi, *sorted((f * (1 - rel), f * (1 + rel))),
                                              df)
                            for m, f, lo, hi in zip(mean, formula, los, his, strict=True)])
    return {"outcome": outcomes.members(list(per_k)), "point": share, "lo": share, "hi": share,
            "p": p,
            "text": f"{text} (of 1–{int(k[-1])}, simultaneous 95% band); largest deviation of "
                    f"the mean {100 * worst:.0f}%"}


def _one(entry: dict, parts: list) -> tuple[float, float, float]:
    """The one (point, lo, hi) of an entry that gives one value."""
    if len(parts) != 1:
        raise ClaimsError(f"{entry['id']}: a {entry['kind']} entry gives {len(parts)} values")
    return parts[0]


def _sigma(value: float, lo: float, mid: float, hi: float, log: bool = False) -> float:
    """band_sigma of a value against a band or interval about mid (NaN where it has no width)."""
    if not all(np.isfinite([value, lo, mid, hi])) or hi <= lo:
        return math.nan
    return bands.band_sigma(value, lo, mid, hi, log=log)


def _worst(x, parts: list[tuple[float, float, float]], kind: str) -> float:
    """The band_sigma of a direction's boundary x against the member furthest on the wrong
    side (the smallest distance on the claimed side); a range's nearer edge."""
    def against(p, lo, hi):
        edges = x if kind == "between" else [x]
        sig = [_sigma(e, lo, p, hi) for e in edges]
        return min(sig, key=lambda s: abs(s) if np.isfinite(s) else math.inf)
    sigmas = [against(*part) for part in parts]
    sign = {"above": 1, "below": -1}.get(kind, 0)
    finite = [s for s in sigmas if np.isfinite(s)]
    if not finite:
        return math.nan
    return max(finite, key=lambda s: sign * s) if sign else min(finite, key=abs)


def _invariance_p(value, h: float, parts: list, df: float) -> tuple[float, float]:
    """(p_against, p_for) of 'the same in every member': each member against value +- h, or
    with no value the two members furthest apart against a difference within 2h (their
    standard errors combined), Bonferroni over the pairs."""
    if value is not None:
        return evidence.members_p([evidence.region_p(p, lo, hi, value - h, value + h, df)
                                   for p, lo, hi in parts])
    hi_i = max(range(len(parts)), key=lambda i: parts[i][0])
    lo_i = min(range(len(parts)), key=lambda i: parts[i][0])
    (p1, a1, b1), (p2, a2, b2) = parts[hi_i], parts[lo_i]
    gap = p1 - p2
    half = math.hypot(p1 - a1, b2 - p2), math.hypot(b1 - p1, p2 - a2)
    against, found = evidence.region_p(gap, gap - half[0], gap + half[1], -2 * h, 2 * h, df)
    pairs = len(parts) * (len(parts) - 1) / 2
    return min(1.0, pairs * against), found


def measure_once(entry: dict, sample: Sample, statistic: str, doc, n_note: int,
                 source: str) -> dict:
    """The measurement and outcome of an entry's sample under a statistic and documented value
    (a reading may change any of them), with band_sigma (where the note's value, a direction's
    boundary, lies in our band or interval, in band-sigmas) and `p`: (p_against, p_for) of the
    hypotheses the outcome rests on (depthlab.claims.evidence)."""
    kind, tol = entry["kind"], entry["tolerance"]
    h = tol.get("half_unit", 0.0)
    df = len(sample.seeds) - 1
    out = {"n_seeds": len(sample.seeds), "text": "", "band": None, "half_band": None,
           "sigma": math.nan, "p": (math.nan, math.nan)}
    if kind == "curve":
        return {**out, **_curve(entry, sample, doc)}
    if statistic == "value":  # one number across seeds (no interval)
        point = float(sample.per_seed())
        found = outcomes.direction(direction(doc), doc[direction(doc)], point, point)
        return {**out, "point": point, "lo": point, "hi": point, "outcome": found}
    parts = estimates(sample, statistic)
    lo_all, hi_all = min(p[1] for p in parts), max(p[2] for p in parts)
    if kind == "invariance":
        found = outcomes.invariance(doc.get("value"), h, [(lo, hi) for _, lo, hi in parts])
        return {**out, "point": float(np.mean([p for p, _, _ in parts])), "lo": lo_all,
                "hi": hi_all, "outcome": found, "text": _members_text(parts),
                "p": _invariance_p(doc.get("value"), h, parts, df)}
    if kind == "question":
        point, lo, hi = _one(entry, parts)
        side = outcomes.answer(doc["at"], lo, hi)
        found = (f"answered: {doc[side]}" if side != "open"
                 else f"not answered by {len(sample.seeds)} seeds (the interval holds {doc['at']})")
        return {**out, "point": point, "lo": lo, "hi": hi, "outcome": QUESTION,
                "text": _seeds_on_side({"above": doc["at"]}, sample.per_seed()),
                "answer": found}
    if kind == "directional":
        key, x = direction(doc), doc[direction(doc)]
        each = [outcomes.direction(key, x, lo, hi) for _, lo, hi in parts]
        region = outcomes.direction_region(key, x)
        # a range (between) is a margin of sameness: a single seed's value describes nothing
        text = "" if key == "between" else _seeds_on_side(doc, sample.per_seed())
        if len(parts) > 1:
            text = "; ".join(filter(None, [
                f"{each.count(SUPPORTED)} of {len(each)} members on the claimed side",
                _members_text(parts), text]))
        return {**out, "point": min(p for p, _, _ in parts), "lo": lo_all, "hi": hi_all,
                "outcome": outcomes.members(each), "text": text,
                "sigma": _worst(x, parts, key),
                "p": evidence.members_p([evidence.region_p(p, lo, hi, *region, df)
                                         for p, lo, hi in parts])}
    point, lo, hi = _one(entry, parts)
    value = doc["value"] if isinstance(doc, dict) else doc
    reference = entry.get("reference")
    if source == "prediction":
        return {**out, "point": point, "lo": lo, "hi": hi,
                "outcome": outcomes.prediction(value, h, lo, hi),
                "sigma": _sigma(value, lo, point, hi),
                "p": evidence.region_p(point, lo, hi, value - h, value + h, df),
                "detectable": (hi - lo) / 2}
    log = entry.get("scale") == "log"
    stat = statistic_of(sample, statistic)
    n = 1 if statistic == "seed0" else n_note
    # a smooth statistic of seed means (pooled) gets the studentized band (bands.py: the plain
    # draws' band under-covers a mean of skewed or heavy-tailed seeds)
    smooth = statistic == "pooled"
    band_lo, mid, band_hi = bands.prediction_band_with_centre(stat, len(sample.seeds), n, log,
                                                              smooth)
    half = len(sample.seeds) // 2
    half_band = bands.prediction_band(stat, half, n, log, smooth) if half >= n else None
    return {**out, "point": point, "lo": lo, "hi": hi, "band": (band_lo, band_hi),
            "half_band": half_band, "draw": (stat, n, len(sample.seeds)),
            "outcome": outcomes.sample(value, h, band_lo, band_hi, reference),
            "sigma": _sigma(value, band_lo, mid, band_hi, log),
            "p": evidence.sample_p(value, h, band_lo, mid, band_hi, df, reference, log),
            "detectable": (band_hi - band_lo) / 2}


def shown(m: dict, statistic: str) -> str:
    """A measurement as text: value [interval] (statistic, n seeds), the band, details."""
    if "point" not in m:
        return "—"
    text = fmt(m["point"], 4)
    if np.isfinite(m["lo"]) and m["lo"] != m["hi"]:
        text += f" {spread(m['lo'], m['hi'], 4)}"
    label = {"median": "median, 95% bootstrap", "mean": "mean, 95% t-interval",
             "seed0": "seed 0", "pooled": "seed-averaged, 95% bootstrap",
             "of_medians": "of the seed medians, 95% bootstrap",
             "value": "across seeds"}[statistic]
    text += f" ({label}, {m['n_seeds']} seeds)"
    if m.get("band"):
        text += f"; band of the note's statistic {spread(*m['band'], 4)}"
    return f"{text}; {m['text']}" if m.get("text") else text
