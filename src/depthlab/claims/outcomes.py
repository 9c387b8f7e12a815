"""The outcome rule, one for every kind of claim (docs/claims_rules.md, "Outcomes").

Pure functions of numbers. Every kind that sets an interval against a claim uses `region`: our
interval inside the claim's region -> supported, disjoint from it -> contradicted, overlapping
its edge -> inconclusive. The regions by kind:

- a number the note predicts (a theory's constant, `source: prediction`): value +- its
  tolerance h, an equivalence margin set in advance;
- a direction: the half-line beyond x (above, below); a range [a, b] (between), which is also
  how a sentence of sameness ("stationary", "no trend") is written: an equivalence margin;
- an invariance: value +- h per member (or, with no value, all members within 2h);
- a curve: formula(k) (1 +- rel) per k, on a simultaneous band over k.

A number the note measured (a sample of its own seeds) is the one kind judged the other way
round, as a draw of its statistic: the note's value +- h inside the band of that statistic ->
supported (inconclusive where the band also holds the value that reverses the note's
conclusion, or where value +- h crosses the band's edge), outside -> contradicted.

Where the interval (or band) is wider than the deviation the sentence is about (wider than a
region of finite width, or a band more than NOISE times the note's printed precision), an
outcome that is not a contradiction is UNINFORMATIVE: consistent, never counted.
"""

from __future__ import annotations

from math import comb, inf

SUPPORTED, CONTRADICTED, INCONCLUSIVE = "supported", "contradicted", "inconclusive"
UNINFORMATIVE = "consistent (uninformative)"  # too wide to tell: listed, never counted
BY_CONSTRUCTION = "holds by construction"
QUESTION = "question (no claim)"  # a question the note leaves open, answered, never graded
NOT_COUNTED = "not counted"  # an assumption, possibility or hypothesis: measured, listed
NOT_MEASURABLE, NOT_COMPARABLE, NOT_MEASURED = "not measurable", "not comparable", "not measured"
OUTCOMES = (SUPPORTED, CONTRADICTED, INCONCLUSIVE, UNINFORMATIVE, NOT_COUNTED,
            BY_CONSTRUCTION, QUESTION, NOT_MEASURABLE, NOT_COMPARABLE, NOT_MEASURED)
GRADED = (SUPPORTED, CONTRADICTED, INCONCLUSIVE)  # the outcomes counted as evidence
MEASURED = (*GRADED, UNINFORMATIVE)  # an interval was set against the claim
NOISE = 10  # a band this many times the note's printed precision (2h) cannot test its digit


def region(lo: float, hi: float, a: float, b: float) -> str:
    """Our interval [lo, hi] against the claim's region [a, b] (a, b may be infinite): inside
    supported, disjoint contradicted, overlapping its edge inconclusive; uninformative where
    the region has a finite width and the interval is wider (it can never lie inside)."""
    if hi < a or lo > b:
        return CONTRADICTED
    if a <= lo and hi <= b:
        return SUPPORTED
    return UNINFORMATIVE if hi - lo > b - a else INCONCLUSIVE


def prediction(value: float, h: float, lo: float, hi: float) -> str:
    """A predicted number value +- h (the margin) against our 95% interval [lo, hi]."""
    return region(lo, hi, value - h, value + h)


def sample(value: float, h: float, lo: float, hi: float, reference: float | None) -> str:
    """A number the note measured (value, printed to +- h) against the band [lo, hi] of its
    statistic at its seed count: [value - h, value + h] inside the band supported, disjoint
    from it contradicted, across its edge inconclusive; uninformative where the band is over
    NOISE x 2h wide; inconclusive where the band also holds the reversing value."""
    if value + h < lo or value - h > hi:
        return CONTRADICTED
    if h > 0 and hi - lo > NOISE * 2 * h:
        return UNINFORMATIVE
    if value - h < lo or value + h > hi:
        return INCONCLUSIVE
    if reference is not None and lo <= reference <= hi:
        return INCONCLUSIVE
    return SUPPORTED


def direction_region(kind: str, x) -> tuple[float, float]:
    """The region of a direction: above x, below x, between [a, b]."""
    if kind == "above":
        return x, inf
    if kind == "below":
        return -inf, x
    if kind == "between":
        return x[0], x[1]
    raise ValueError(f"no direction {kind!r}")


def direction(kind: str, x, lo: float, hi: float) -> str:
    """An interval [lo, hi] against a direction: above x, below x, between [a, b]."""
    return region(lo, hi, *direction_region(kind, x))


def answer(at: float, lo: float, hi: float) -> str:
    """An open question's answer from an interval [lo, hi] about x = at: 'above', 'below', or
    'open' when the interval holds at."""
    return "above" if lo > at else "below" if hi < at else "open"


def members(outcomes: list[str]) -> str:
    """A claim about several members: contradicted if any is, supported if all are,
    uninformative if any member is too wide to tell, else inconclusive."""
    if CONTRADICTED in outcomes:
        return CONTRADICTED
    if all(o == SUPPORTED for o in outcomes):
        return SUPPORTED
    return UNINFORMATIVE if UNINFORMATIVE in outcomes else INCONCLUSIVE


def invariance(value: float | None, h: float, intervals: list[tuple[float, float]]) -> str:
    """Members' intervals against 'the same in every member' (at value, if stated) within h."""
    if value is not None:
        return members([region(a, b, value - h, value + h) for a, b in intervals])
    lo, hi = min(a for a, _ in intervals), max(b for _, b in intervals)
    if min(b for _, b in intervals) < max(a for a, _ in intervals) - 2 * h:
        return CONTRADICTED
    if hi - lo <= 2 * h:
        return SUPPORTED
    return UNINFORMATIVE if any(b - a > 2 * h for a, b in intervals) else INCONCLUSIVE


def curve_at(formula: float, rel: float, lo: float, hi: float) -> str:
    """One k of a curve: the interval against formula (1 +- rel)."""
    a, b = sorted((formula * (1 - rel), formula * (1 + rel)))
    return region(lo, hi, a, b)


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
