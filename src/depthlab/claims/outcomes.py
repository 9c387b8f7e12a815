"""The outcome rules, the same for every kind of claim (docs/claims_rules.md, "Outcomes").

Pure functions of numbers: a band or an interval, the note's value or direction, its printed
precision h (half a unit of its last digit). Each returns one of SUPPORTED, CONTRADICTED,
INCONCLUSIVE:

- a number the note measured (a sample of its own seeds): the note's value +- h meets the band
  of its statistic at its seed count -> supported, unless the band also holds the value that
  reverses the note's conclusion (its `reference`: a ratio's 1, a slope's 0) -> inconclusive;
  the note's value outside the band -> contradicted;
- a number the note predicts (a theory's constant): the same, with our estimate's 95% interval
  in place of the band;
- a direction: our estimate's interval wholly on the claimed side -> supported, wholly on the
  other -> contradicted, straddling -> inconclusive; for several members, supported if all
  are, contradicted if any is;
- an invariance: every member's interval inside one band of width 2h (around the note's value
  if it states one) -> supported; two members (or a member and the note's value) further
  apart than that -> contradicted; otherwise inconclusive;
- a curve: per k, the interval inside formula(k) (1 +- rel) -> supported at k, disjoint ->
  contradicted at k; the curve as a member claim over k.
"""

from __future__ import annotations

from math import comb

SUPPORTED, CONTRADICTED, INCONCLUSIVE = "supported", "contradicted", "inconclusive"
BY_CONSTRUCTION = "holds by construction"
QUESTION = "question (no claim)"  # a question the note leaves open, answered, never graded
NOT_MEASURABLE, NOT_COMPARABLE, NOT_MEASURED = "not measurable", "not comparable", "not measured"
OUTCOMES = (SUPPORTED, CONTRADICTED, INCONCLUSIVE, BY_CONSTRUCTION, QUESTION, NOT_MEASURABLE,
            NOT_COMPARABLE, NOT_MEASURED)
GRADED = (SUPPORTED, CONTRADICTED, INCONCLUSIVE)  # the outcomes counted as evidence


def number(value: float, h: float, lo: float, hi: float, reference: float | None) -> str:
    """A number against a band (or an interval) [lo, hi] at precision h."""
    if value + h < lo or value - h > hi:
        return CONTRADICTED
    if reference is not None and lo <= reference <= hi:
        return INCONCLUSIVE
    return SUPPORTED


def direction(kind: str, x, lo: float, hi: float) -> str:
    """An interval [lo, hi] against a direction: above x, below x, between [a, b],
    contains x."""
    if kind == "above":
        return SUPPORTED if lo > x else CONTRADICTED if hi < x else INCONCLUSIVE
    if kind == "below":
        return SUPPORTED if hi < x else CONTRADICTED if lo > x else INCONCLUSIVE
    if kind == "between":
        a, b = x
        if a <= lo and hi <= b:
            return SUPPORTED
        return CONTRADICTED if hi < a or lo > b else INCONCLUSIVE
    if kind == "contains":
        return SUPPORTED if lo <= x <= hi else CONTRADICTED
    raise ValueError(f"no direction {kind!r}")


def answer(at: float, lo: float, hi: float) -> str:
    """An open question's answer from an interval [lo, hi] about x = at: 'above', 'below', or
    'open' when the interval holds at."""
    return "above" if lo > at else "below" if hi < at else "open"


def members(outcomes: list[str]) -> str:
    """A claim about several members: supported if all are, contradicted if any is."""
    if CONTRADICTED in outcomes:
        return CONTRADICTED
    return SUPPORTED if all(o == SUPPORTED for o in outcomes) else INCONCLUSIVE


def invariance(value: float | None, h: float, intervals: list[tuple[float, float]]) -> str:
    """Members' intervals against 'the same in every member' (at value, if stated) within h."""
    lo, hi = min(a for a, _ in intervals), max(b for _, b in intervals)
    if value is not None:
        if any(b < value - h or a > value + h for a, b in intervals):
            return CONTRADICTED
        return SUPPORTED if value - h <= lo and hi <= value + h else INCONCLUSIVE
    if min(b for _, b in intervals) < max(a for a, _ in intervals) - 2 * h:
        return CONTRADICTED
    return SUPPORTED if hi - lo <= 2 * h else INCONCLUSIVE


def curve_at(formula: float, rel: float, lo: float, hi: float) -> str:
    """One k of a curve: the interval against formula (1 +- rel)."""
    a, b = sorted((formula * (1 - rel), formula * (1 + rel)))
    if a <= lo and hi <= b:
        return SUPPORTED
    return CONTRADICTED if hi < a or lo > b else INCONCLUSIVE


def excluded(contradicted: int, graded: int, miss: float = 0.05) -> bool:
    """Whether a reading of an open setting is excluded by the note's own numbers: under the
    right reading each of `graded` identifying numbers falls outside its 95% band with
    probability `miss`, so `contradicted` or more of them outside has binomial probability
    P(X >= contradicted); at most 5% excludes it (one number of one: outside its band)."""
    if graded == 0 or contradicted == 0:
        return False
    tail = sum(comb(graded, k) * miss**k * (1 - miss) ** (graded - k)
               for k in range(contradicted, graded + 1))
    return tail <= 0.05 + 1e-12
