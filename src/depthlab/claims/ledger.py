"""The claims ledger: each claim of config/claims.yaml measured on the fits, with a verdict.

Pure functions of the claims (depthlab.claims.schema) and the fit tables; the verdict comes from
the data and the entry's tolerance alone:

- numeric claim: band = documented ± tolerance (rel: ±rel·|d|, abs: ±abs) or the note's own CI;
  measured = the selected field, and the interval the tolerance compares (a point, the seed
  range [min, max] or the 95% t-interval [ci_lo, ci_hi]). `reproduced` if the measured
  interval meets the band; else `same direction` if the entry has a reference (the no-effect
  value) and the measured value lies on the same side of it as the documented one; else
  `not reproduced`.
- directional claim: above/below x: `reproduced` if the whole measured interval lies on the
  claimed side, `same direction` if only the measured value does, else `not reproduced`;
  between [a, b]: the same with "inside"; contains x: `reproduced` if the interval includes x.
- `not measured`: the entry says the pipeline cannot measure it, its study is not in this
  config, or its row is not in this grid (e.g. depth 96 in config/tiny.yaml); the reason is in
  `notes`.
"""

from __future__ import annotations

import html
import json
import math

import numpy as np
import pandas as pd

from depthlab.analysis.tables import HTML_STYLE, fmt, spread
from depthlab.claims.schema import NOTES, direction

VERDICTS = ("reproduced", "same direction", "not reproduced", "not measured")
INTERVALS = {"point": None, "seed_range": ("min", "max"), "ci": ("ci_lo", "ci_hi")}
INTERVAL_NAMES = {"point": "seed range", "seed_range": "seed range", "ci": "95% CI"}


class ClaimError(ValueError):
    """A claims entry that selects no column or several rows of its fit (a design error)."""


def _matches(column: pd.Series, value) -> pd.Series:
    if value is None:
        return column.isna()
    if isinstance(value, int | float) and not isinstance(value, bool) and \
            pd.api.types.is_numeric_dtype(column):
        return pd.Series(np.isclose(column.astype(float), float(value), rtol=1e-9, atol=0),
                         index=column.index)
    return column.astype(str) == str(value)


def _grid(values: pd.Series) -> str:
    shown = sorted({v for v in values.dropna()}, key=lambda v: (str(type(v)), v))
    return ", ".join(fmt(v, 6) if isinstance(v, float) else str(v) for v in shown) or "none"


def select(fit: pd.DataFrame, where: dict, name: str) -> pd.Series | str:
    """The one row of `fit` that `where` selects, or the reason it is not in this grid.
    ClaimError when a key is not a column of the fit or several rows match."""
    for key in where:
        if key not in fit.columns:
            raise ClaimError(f"{name}: measure.where.{key}: no such column in the fit "
                             f"(columns: {', '.join(map(str, fit.columns))})")
    rows = fit[_matches(fit["quantity"], where["quantity"])]
    if rows.empty:
        return f"not in this grid: the fit has no quantity {where['quantity']!r}"
    for key, value in where.items():
        if not _matches(rows[key], value).any():
            return f"not in this grid: {key}={value} (this grid: {_grid(rows[key])})"
    for key, value in where.items():
        rows = rows[_matches(rows[key], value)]
    if rows.empty:
        return "not in this grid: no row with " + ", ".join(f"{k}={v}" for k, v in where.items())
    if len(rows) > 1:
        differ = [c for c in rows.columns if rows[c].astype(str).nunique() > 1
                  and c not in ("median", "mean", "min", "max", "ci_lo", "ci_hi", "seed0")]
        raise ClaimError(f"{name}: measure.where selects {len(rows)} rows, not one; add a key "
                         f"(they differ in: {', '.join(differ)})")
    return rows.iloc[0]


def band(documented, tolerance: dict) -> tuple[float, float]:
    """The documented value ± its tolerance, or the note's own CI."""
    if tolerance.get("documented_ci"):
        lo, hi = documented["ci"]
        return float(lo), float(hi)
    d = float(documented["value"] if isinstance(documented, dict) else documented)
    half = tolerance["rel"] * abs(d) if "rel" in tolerance else tolerance["abs"]
    return d - half, d + half


def documented_value(documented) -> float:
    """The documented number (NaN for a directional claim)."""
    if direction(documented):
        return math.nan
    return float(documented["value"] if isinstance(documented, dict) else documented)


def verdict(documented, tolerance: dict, value: float, lo: float, hi: float,
            reference: float | None = None) -> str:
    """The verdict of one claim given the measured value and the compared interval [lo, hi]
    (lo = hi = value for a point comparison); module docstring for the rules."""
    kind = direction(documented)
    if kind == "contains":
        x = documented[kind]
        return "reproduced" if lo <= x <= hi else "not reproduced"
    if kind in ("above", "below"):
        x = documented[kind]
        whole, point = (lo > x, value > x) if kind == "above" else (hi < x, value < x)
    elif kind == "between":
        a, b = documented[kind]
        whole, point = a <= lo and hi <= b, a <= value <= b
    else:
        b_lo, b_hi = band(documented, tolerance)
        if lo <= b_hi and hi >= b_lo:
            return "reproduced"
        d = documented_value(documented)
        same = reference is not None and np.sign(value - reference) == np.sign(d - reference) != 0
        return "same direction" if same else "not reproduced"
    return "reproduced" if whole else "same direction" if point else "not reproduced"


def describe_documented(documented) -> str:
    """The documented value or direction as text ('0.306', '> 1', 'in [0.333, 3]', ...)."""
    kind = direction(documented)
    if kind == "above":
        return f"> {fmt(documented[kind], 4)}"
    if kind == "below":
        return f"< {fmt(documented[kind], 4)}"
    if kind == "between":
        return f"in {spread(*documented[kind], digits=4)}"
    if kind == "contains":
        return f"interval includes {fmt(documented[kind], 4)}"
    if isinstance(documented, dict):
        text = fmt(documented["value"], 4)
        return f"{text}, CI {spread(*documented['ci'], digits=4)}" if "ci" in documented else text
    return fmt(documented, 4)


def describe_tolerance(tolerance: dict, documented) -> str:
    """The tolerance as text ('±5%, seed range', 'whole 95% CI', ...)."""
    compare = tolerance.get("compare", "point")
    against = {"point": "value", "seed_range": "seed range", "ci": "95% CI"}[compare]
    if direction(documented):
        return against if documented.get("contains") is not None else f"whole {against}"
    if "rel" in tolerance:
        text = f"±{100 * tolerance['rel']:g}%"
    elif "abs" in tolerance:
        text = f"±{tolerance['abs']:g}"
    else:
        text = "the note's CI"
    return f"{text} vs {against}"


def measure_row(row: pd.Series, field: str, compare: str) -> dict:
    """The measured value, the compared interval and what to show beside it."""
    value = float(row[field])
    n = row.get("n_seeds", math.nan)
    names = INTERVALS[compare] or INTERVALS["seed_range"]
    shown = tuple(float(row[c]) if c in row.index else math.nan for c in names)
    lo, hi = shown if compare != "point" else (value, value)
    return {"measured": value, "measured_lo": shown[0], "measured_hi": shown[1],
            "interval": INTERVAL_NAMES[compare], "n_seeds": float(n), "compared_lo": lo,
            "compared_hi": hi}


def evaluate(entry: dict, fits: dict[str, pd.DataFrame]) -> dict:
    """One ledger row: the entry, its measurement (if any) and its verdict."""
    documented, tolerance = entry["documented"], entry["tolerance"]
    row = {
        "id": entry["id"], "note": entry["note"], "claim": entry["claim"],
        "documented": describe_documented(documented),
        "documented_value": documented_value(documented),
        "reference": float(entry.get("reference", math.nan)),
        "measured": math.nan, "measured_lo": math.nan, "measured_hi": math.nan,
        "interval": "", "n_seeds": math.nan, "verdict": "not measured",
        "tolerance": describe_tolerance(tolerance, documented),
        "tolerance_reason": tolerance["reason"],
        "setting_dependent": entry.get("setting_dependent", ""),
        "fit": "", "where": "", "field": "", "notes": "",
    }
    measure = entry["measure"]
    if "not_measured" in measure:
        row["notes"] = f"not measurable here: {measure['not_measured']}"
        return row
    row.update(fit=measure["fit"], field=measure["field"],
               where=json.dumps(measure["where"], sort_keys=True))
    if measure["fit"] not in fits:
        row["notes"] = f"study {measure['fit']!r} not in this config"
        return row
    found = select(fits[measure["fit"]], measure["where"], entry["id"])
    if isinstance(found, str):
        row["notes"] = found
        return row
    m = measure_row(found, measure["field"], tolerance.get("compare", "point"))
    lo, hi = m.pop("compared_lo"), m.pop("compared_hi")
    row.update(m)
    if not all(map(np.isfinite, (m["measured"], lo, hi))):
        row["notes"] = f"no finite {row['interval']} (needs two or more seeds)"
        return row
    reference = entry.get("reference")
    row["verdict"] = verdict(documented, tolerance, m["measured"], lo, hi, reference)
    return row


def ledger(entries: list[dict], fits: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every entry evaluated, in file order."""
    return pd.DataFrame([evaluate(e, fits) for e in entries])


def counts(table: pd.DataFrame) -> dict[str, int]:
    """Entries per verdict, in VERDICTS order."""
    return {v: int((table["verdict"] == v).sum()) for v in VERDICTS}


def shown(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The ledger as displayed (one text column per field) and the distinct tolerance reasons
    its `tolerance` column refers to as [1], [2], ..."""
    def measured(r):
        if not np.isfinite(r["measured"]):
            return "—"
        text = fmt(r["measured"], 4)
        if np.isfinite(r["measured_lo"]) and r["n_seeds"] > 1:
            text += f" {spread(r['measured_lo'], r['measured_hi'], 4)} ({r['interval']}, " \
                    f"{int(r['n_seeds'])} seeds)"
        return text

    reasons = list(dict.fromkeys(table["tolerance_reason"]))
    notes = [
        "; ".join(filter(None, [r["notes"], f"setting: {r['setting_dependent']}"
                                if r["setting_dependent"] else ""]))
        for _, r in table.iterrows()
    ]
    frame = pd.DataFrame({
        "id": table["id"], "claim": table["claim"], "documented": table["documented"],
        "measured": [measured(r) for _, r in table.iterrows()], "verdict": table["verdict"],
        "tolerance": [f"{t} [{reasons.index(r) + 1}]"
                      for t, r in zip(table["tolerance"], table["tolerance_reason"], strict=True)],
        "notes": notes,
    })
    return frame, reasons


def _by_note(table: pd.DataFrame):
    order = [n for n in NOTES if n in set(table["note"])]
    for note in order:
        yield note, table[table["note"] == note]


def to_markdown(table: pd.DataFrame) -> str:
    """results/claims.md: the verdict counts, then one table per note with its tolerance
    reasons below."""
    total = counts(table)
    lines = ["# Claims of the notes, measured", "",
             "Verdicts from the measured value and the tolerance written in config/claims.yaml "
             "before the run (depthlab.claims.ledger).", "",
             "| verdict | claims |", "| --- | --- |"]
    lines += [f"| {v} | {n} |" for v, n in total.items()]
    lines += [f"| total | {len(table)} |", ""]
    for note, sub in _by_note(table):
        frame, reasons = shown(sub)
        lines += [f"## {note}", "", frame.to_markdown(index=False), "", "Tolerance reasons:", ""]
        lines += [f"{i}. {reason}" for i, reason in enumerate(reasons, start=1)] + [""]
    return "\n".join(lines)


CSS = HTML_STYLE + """
<style>
.claims {width: 100%; min-width: 1000px;}
.claims td, .claims th {text-align: left; vertical-align: top;}
.v-reproduced {background: #d8f0d8;} .v-same-direction {background: #fff3c4;}
.v-not-reproduced {background: #f7d4d4;} .v-not-measured {background: #eeeeee;}
</style>"""


def _html_table(frame: pd.DataFrame) -> str:
    text = frame.to_html(index=False, classes="depthlab claims", border=0, escape=True)
    for v in VERDICTS:
        text = text.replace(f"<td>{v}</td>", f'<td class="v-{v.replace(" ", "-")}">{v}</td>')
    return text


def to_html(table: pd.DataFrame) -> str:
    """results/claims.html: the same as claims.md as an HTML fragment (the report's first page
    embeds it)."""
    total = pd.DataFrame([{"verdict": v, "claims": n} for v, n in counts(table).items()])
    parts = [CSS, "<h2>Claims of the notes, measured</h2>", _html_table(total)]
    for note, sub in _by_note(table):
        frame, reasons = shown(sub)
        items = "".join(f"<li>{html.escape(r)}</li>" for r in reasons)
        parts += [f"<h3>{note}</h3>", _html_table(frame),
                  f"<p>Tolerance reasons:</p><ol>{items}</ol>"]
    return "\n".join(parts) + "\n"
