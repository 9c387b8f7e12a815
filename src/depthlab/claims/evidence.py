"""The p-values of the hypotheses a verdict rests on, and their multiplicity control.

Every graded row (supported, contradicted, inconclusive) tests two hypotheses about the
quantity θ its interval estimates, against the claim's region R (docs/claims_rules.md,
"Evidence"):

- `p_against`: H0 "the note is right" (θ in R). The distance from our estimate to R in units
  of its standard error, on Student's t with n - 1 degrees of freedom (one-sided: R is a
  region, so only a shortfall on its outside counts); 1 when the estimate lies in R. A
  contradiction needs it small.
- `p_for`: H0 "the note is wrong" (θ outside R): the two one-sided tests of R's edges
  (Schuirmann 1987, TOST), the larger p; for a half-line region (a direction) the one edge
  it has. A support needs it small.

A claim about several members ("every member above x", "the same at every depth") is the
intersection of its members' claims: supported only if every member is (intersection-union
test, Berger 1982: `p_for` is the largest member's), contradicted if any member is (`p_against`
the smallest member's times the number of members, Bonferroni). A number the note measured (a
sample of its own seeds) is a draw of its statistic: `p_against` is the two-sided predictive
p-value of the note's value under the band (its scale on each side the band's half over the t
quantile it was widened to), and `p_for` the one-sided predictive p-value of the value that
reverses the note's conclusion (its `reference`), undefined where the entry has none.

Multiplicity: Benjamini-Hochberg within each note, over every graded row of it that is not a
restatement, separately for `p_against` and `p_for`. A support whose `q_for`, or a
contradiction whose `q_against`, exceeds 0.05 is not counted: it becomes inconclusive and says
why. No p below FLOOR is reported: the t tails of five or six seeds say nothing that far out.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from depthlab.claims.outcomes import CONTRADICTED, GRADED, INCONCLUSIVE, SUPPORTED

LEVEL = 0.95
ALPHA = 0.05  # the false discovery rate at which a support or a contradiction is counted
FLOOR = 1e-16  # the smallest p reported


def _tq(df: float) -> float:
    return float(stats.t.ppf(0.5 + LEVEL / 2, max(df, 1)))


def _se(point: float, lo: float, hi: float, toward: float, df: float) -> float:
    """The standard error of an estimate on the side of `toward`, from its 95% interval (a
    bootstrap interval may be skewed: each side is read on its own)."""
    half = hi - point if toward >= point else point - lo
    return max(half, 0.0) / _tq(df)


def _tail(distance: float, se: float, df: float) -> float:
    """P(T >= distance / se) on Student's t with df degrees of freedom (a positive distance is
    evidence; with se = 0 a positive distance is certain, any other none)."""
    if se <= 0:
        return 0.0 if distance > 0 else 1.0
    return float(stats.t.sf(distance / se, max(df, 1)))


def region_p(point: float, lo: float, hi: float, a: float, b: float,
             df: float) -> tuple[float, float]:
    """(p_against, p_for) of an estimate with its 95% interval [lo, hi] against the region
    [a, b] (either edge may be infinite)."""
    if not all(np.isfinite([point, lo, hi])):
        return math.nan, math.nan
    if point < a:
        against = _tail(a - point, _se(point, lo, hi, a, df), df)
    elif point > b:
        against = _tail(point - b, _se(point, lo, hi, b, df), df)
    else:
        against = 1.0
    # TOST: reject "theta <= a" and "theta >= b"; an infinite edge is rejected outright
    low = 0.0 if a == -math.inf else _tail(point - a, _se(point, lo, hi, a, df), df)
    high = 0.0 if b == math.inf else _tail(b - point, _se(point, lo, hi, b, df), df)
    return against, max(low, high)


def members_p(parts: list[tuple[float, float]]) -> tuple[float, float]:
    """(p_against, p_for) of a claim about every member: Bonferroni's smallest p_against,
    the largest p_for (intersection-union)."""
    against = [a for a, _ in parts if np.isfinite(a)]
    found = [f for _, f in parts if np.isfinite(f)]
    if not against:
        return math.nan, math.nan
    return min(1.0, len(parts) * min(against)), (max(found) if found else math.nan)


def sample_p(value: float, h: float, lo: float, mid: float, hi: float, df: float,
             reference: float | None, log: bool = False) -> tuple[float, float]:
    """(p_against, p_for) of a note's measured number value +- h as a draw of the statistic
    whose 95% prediction band is [lo, hi] about mid, the band widened to the t quantile of df
    degrees of freedom; on the log scale where the band is."""
    f = np.log if log else (lambda x: x)
    ok = (lambda x: x > 0) if log else (lambda x: True)
    if not all(np.isfinite([value, lo, mid, hi])) or not all(
            ok(x) for x in (lo, mid, hi, max(value - h, 0) if log else value)):
        return math.nan, math.nan
    near = min(max(mid, value - h), value + h)  # the point of [v - h, v + h] nearest the centre
    if log and near <= 0:
        return math.nan, math.nan
    m, a, b = f(mid), f(lo), f(hi)
    x = f(near)
    scale = (b - m if x >= m else m - a) / _tq(df)
    against = min(1.0, 2 * _tail(abs(x - m), scale, df)) if x != m else 1.0
    if reference is None or (log and reference <= 0):
        return against, math.nan
    r = f(reference)
    scale = (b - m if r >= m else m - a) / _tq(df)
    return against, _tail(abs(r - m), scale, df)


def floor(p: float) -> float:
    """p, reported no smaller than FLOOR (NaN stays NaN)."""
    return p if not np.isfinite(p) else max(p, FLOOR)


def benjamini_hochberg(p) -> np.ndarray:
    """Benjamini-Hochberg q-values of p-values (NaN stays NaN): the smallest false discovery
    rate at which each would be declared (Benjamini & Hochberg 1995)."""
    p = np.asarray(p, dtype=float)
    q = np.full_like(p, math.nan)
    finite = np.flatnonzero(np.isfinite(p))
    if finite.size:
        order = finite[np.argsort(p[finite], kind="stable")]
        ranked = p[order] * finite.size / np.arange(1, finite.size + 1)
        q[order] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    return q


def gate(table: pd.DataFrame) -> pd.DataFrame:
    """The ledger with its q-values and the gate: per note, Benjamini-Hochberg over the graded
    rows that are not restatements (`q_against` of p_against, `q_for` of p_for); a support
    whose q_for, or a contradiction whose q_against, exceeds ALPHA becomes inconclusive and
    says why. p and q are reported no smaller than FLOOR; restatements take their entry's.
    The outcome and verdict before the gate are kept (`outcome_rule`, `verdict_rule`), so that
    a merged ledger is gated anew from them."""
    table = table.copy()
    for column in ("outcome", "verdict"):
        if f"{column}_rule" not in table:
            table[f"{column}_rule"] = table[column]
        table[column] = table[f"{column}_rule"]
    for column in ("p_against", "p_for"):
        table[column] = [floor(p) for p in table[column].astype(float)]
    own = (table["restates"] == "") & table["outcome"].isin(GRADED)
    for which in ("against", "for"):
        q = np.full(len(table), math.nan)
        for _, index in table[own].groupby("note").groups.items():
            rows = table.index.get_indexer(index)
            q[rows] = benjamini_hochberg(table[f"p_{which}"].to_numpy()[rows])
        table[f"q_{which}"] = [floor(x) for x in q]
    for i in np.flatnonzero(own.to_numpy()):
        outcome = table["outcome"].iat[i]
        q = table["q_for"].iat[i] if outcome == SUPPORTED else table["q_against"].iat[i]
        if outcome in (SUPPORTED, CONTRADICTED) and np.isfinite(q) and q > ALPHA:
            table.loc[table.index[i], "verdict"] = (
                f"{INCONCLUSIVE}: {table['verdict'].iat[i]}, but q = {q:.2g} > {ALPHA} among "
                f"the {table['note'].iat[i]} note's graded rows")
            table.loc[table.index[i], "outcome"] = INCONCLUSIVE
    by_id = table.set_index("id")
    restating = table["restates"] != ""
    for column in ("outcome", "verdict", "p_against", "p_for", "q_against", "q_for"):
        table.loc[restating, column] = [by_id.at[r, column] for r in table.loc[restating,
                                                                             "restates"]]
    return table
