"""The claims ledger: each entry of config/claims.yaml measured on the fits, with a verdict.

Pure functions of the entries (depthlab.claims.schema) and the fit tables. Rules, fixed before
the results were seen (docs/RESULTS.md, "How a claim is graded"; changes are in the claims
file's changelog):

1. Per seed first. An entry's rows are fit rows (one grid point each, or a series `along` a
   column); the ledger takes every seed's value of each (`seed_values`, paired by seed) and
   evaluates the entry's `value` expression per seed.
2. The statistic the note quotes, with its 95% interval across seeds: `median` (percentile
   bootstrap of the median, depthlab.analysis.stats.median_interval), `mean` (t-interval),
   `seed0` (the lowest seed, exactly; no interval), `all` (every seed on its own), `value` (a
   number computed across seeds, no interval).
3. The verdict, by kind:
   - quantitative: `reproduced` if the interval meets the note's value ± half a unit of its
     last printed digit; with the note's own 95% interval (its value, ci, n seeds): if the two
     means differ by at most 1.96 sqrt(se² + se_note²) + half_unit (two-sample, 5%). Else
     `not reproduced`; being on the right side of a no-effect value is said in the notes only.
   - directional: `reproduced` if the whole interval (every seed, for `all`; the value, for
     `value`) is on the claimed side: above, below, between, or (contains) the interval holds x.
   - invariance: `reproduced` if one value (within the note's value ± half_unit, if it states
     one) lies within half_unit of every member's interval.
   - curve: per k, agreement if the seed-mean interval meets formula(k) within ±rel;
     `reproduced` if it agrees at every k. The notes name where it agrees.
   - arithmetic: a number the note computes from others (sqrt(96) = 9.80): its value ± half_unit.
   - not_measurable: the reason. A row outside this config's grid: `not measured`.
4. Readings: the same entry under another value of a setting the note leaves open (or another
   statistic). If any reading's verdict differs from the primary one, the verdict is
   `depends on <setting>`, with the value under each reading in the notes.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
from scipy import stats

from depthlab.analysis.stats import median_interval, t_interval
from depthlab.analysis.tables import fmt, ranges, spread
from depthlab.claims.schema import ROW_EXTRA, direction

VERDICTS = ("reproduced", "not reproduced", "depends on", "not measurable", "not measured")


class ClaimError(ValueError):
    """An entry that selects no column, several rows for one, or misaligned seeds (a design
    error of the claims file, not a finding)."""


class NotInGrid(Exception):
    """The entry's rows are not in this config's grid (e.g. depth 96 in config/tiny.yaml)."""


# ---------------------------------------------------------------- selecting rows


def _matches(column: pd.Series, value) -> np.ndarray:
    if value is None:
        return column.isna().to_numpy()
    if isinstance(value, int | float) and not isinstance(value, bool) and \
            pd.api.types.is_numeric_dtype(column):
        return np.isclose(column.astype(float), float(value), rtol=1e-9, atol=0)
    return (column.astype(str) == str(value)).to_numpy()


def _grid(values: pd.Series) -> str:
    shown = sorted({v for v in values.dropna()}, key=lambda v: (str(type(v)), v))
    return ", ".join(fmt(v, 6) if isinstance(v, float) else str(v) for v in shown) or "none"


def select(fit: pd.DataFrame, spec: dict, name: str) -> pd.DataFrame:
    """The rows of `fit` a row spec selects: exactly one, or for `along: column` every grid point
    of that column (within `range: [lo, hi]`), sorted by it. NotInGrid when the grid lacks them;
    ClaimError for a key that is no column, or several rows for a single selection."""
    where = {k: v for k, v in spec.items() if k not in ROW_EXTRA}
    along = spec.get("along")
    for key in [*where, *([along] if along else [])]:
        if key not in fit.columns:
            raise ClaimError(f"{name}: no column {key!r} in the fit")
    rows = fit
    for key, value in where.items():
        picked = rows[_matches(rows[key], value)]
        if picked.empty:
            raise NotInGrid(f"{key}={value} (this grid: {_grid(rows[key])})")
        rows = picked
    if along:
        if "range" in spec:
            lo, hi = spec["range"]
            rows = rows[(rows[along] >= lo) & (rows[along] <= hi)]
        rows = rows.sort_values(along)
        if rows[along].duplicated().any():
            raise ClaimError(f"{name}: several rows per {along}; add a key")
        return rows
    if len(rows) > 1:
        differ = [c for c in rows.columns if c not in ("seeds", "seed_values")
                  and rows[c].astype(str).nunique() > 1][:4]
        raise ClaimError(f"{name}: selects {len(rows)} rows, not one; add a key (they differ "
                         f"in: {', '.join(differ)})")
    return rows


def seed_arrays(rows: pd.DataFrame, name: str) -> tuple[list[int], np.ndarray]:
    """The seeds and the (S, K) per-seed values of the K selected rows."""
    if "seed_values" not in rows.columns or rows["seed_values"].isna().any():
        raise ClaimError(f"{name}: the fit rows carry no per-seed values")
    seeds = [list(s) for s in rows["seeds"]]
    if any(s != seeds[0] for s in seeds):
        raise ClaimError(f"{name}: the rows have different seeds")
    return seeds[0], np.stack([np.asarray(v, dtype=float) for v in rows["seed_values"]], -1)


# ---------------------------------------------------------------- per-seed expressions


def _first(cond: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per seed, the coordinate of the first True along the last axis (NaN if none)."""
    cond = np.asarray(cond, dtype=bool)
    idx = cond.argmax(axis=-1)
    return np.where(cond.any(axis=-1), np.asarray(at, dtype=float)[idx], np.nan)


def _orders(*series: np.ndarray) -> float:
    """How many distinct orders (by value) the given per-seed quantities take across seeds."""
    stacked = np.stack(series, axis=-1)
    return float(len({tuple(np.argsort(row)) for row in stacked}))


def _slope(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per seed, the OLS slope of y (S, K) on x ((K,) or (S, K))."""
    x = np.broadcast_to(np.asarray(x, dtype=float), np.shape(y))
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    return (yc * xc).sum(axis=-1) / (xc**2).sum(axis=-1)


def _quarter(x: np.ndarray, last: bool) -> np.ndarray:
    """Mean over the first (or last) quarter of the last axis: the fits' 'early' ('late')."""
    n = max(1, np.shape(x)[-1] // 4)
    return np.mean(x[..., -n:] if last else x[..., :n], axis=-1)


def _window(x: np.ndarray, at: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Mean of x (S, K) over the coordinates at (K,) within [lo, hi]."""
    keep = (np.asarray(at) >= lo) & (np.asarray(at) <= hi)
    if not keep.any():
        raise NotInGrid(f"no layer in [{lo}, {hi}]")
    return np.mean(x[..., keep], axis=-1)


FUNCTIONS = {
    "log": np.log, "log10": np.log10, "sqrt": np.sqrt, "abs": np.abs, "exp": np.exp,
    "maximum": np.maximum, "minimum": np.minimum, "where": np.where, "pi": np.pi,
    "avg": lambda x: np.mean(x, axis=-1), "total": lambda x: np.sum(x, axis=-1),
    "lowest": lambda x: np.min(x, axis=-1), "highest": lambda x: np.max(x, axis=-1),
    "diff": lambda x: np.diff(x, axis=-1), "frac": lambda c: np.mean(c, axis=-1),
    "every": lambda c: np.all(c, axis=-1), "first": _first, "orders": _orders,
    "slope": _slope, "stack": lambda *xs: np.stack(xs, axis=-1),
    "early": lambda x: _quarter(x, False), "late": lambda x: _quarter(x, True),
    "window": _window, "join": lambda *xs: np.concatenate(xs, axis=-1),
}


def evaluate_rows(fit: pd.DataFrame, rows: dict, expression: str | None, name: str):
    """The entry's value per seed: `expression` (default: the one row) of the rows' per-seed
    values; a series row `x` also gives its coordinates as `x_at`. Returns (seeds, value)."""
    namespace, seeds = dict(FUNCTIONS), None
    for row_name, spec in rows.items():
        selected = select(fit, spec, name)
        row_seeds, values = seed_arrays(selected, f"{name}.{row_name}")
        if seeds is not None and row_seeds != seeds:
            raise ClaimError(f"{name}: rows {list(rows)} have different seeds")
        seeds = row_seeds
        if spec.get("along"):
            namespace[f"{row_name}_at"] = selected[spec["along"]].to_numpy(dtype=float)
        namespace[row_name] = values if spec.get("along") else values[:, 0]
    expression = expression or next(iter(rows))
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = eval(expression, {"__builtins__": {}}, namespace)  # noqa: S307 (trusted)
    except IndexError:
        raise NotInGrid("the series is shorter than the entry reads") from None
    return seeds, np.asarray(value, dtype=float)


# ---------------------------------------------------------------- statistics and verdicts


def summarise(values: np.ndarray, statistic: str) -> tuple[float, float, float]:
    """(point, lo, hi) of per-seed values (S,) by the statistic (module docstring, rule 2)."""
    v = np.asarray(values, dtype=float)
    if statistic == "value":
        point = float(v) if v.ndim == 0 else math.nan
        return point, point, point
    if statistic == "seed0":
        return float(v[0]), float(v[0]), float(v[0])
    if statistic == "median":
        lo, hi = median_interval(v)
        return float(np.median(v)), lo, hi
    if statistic == "all":
        return float(np.mean(v)), float(np.min(v)), float(np.max(v))
    lo, hi = t_interval(v)
    return float(np.mean(v)), lo, hi


def side(documented, lo: float, hi: float) -> bool:
    """Whether the interval [lo, hi] lies on the claimed side of a directional claim."""
    kind = direction(documented)
    x = documented[kind]
    if kind == "above":
        return lo > x
    if kind == "below":
        return hi < x
    if kind == "between":
        return x[0] <= lo and hi <= x[1]
    return lo <= x <= hi


def quantitative(documented, h: float, values: np.ndarray, point: float, lo: float,
                 hi: float, statistic: str) -> bool:
    """Rule 3, quantitative: the interval meets value ± h; or, with the note's own interval,
    the two-sample agreement of means."""
    if isinstance(documented, dict):
        n_note = documented["n"]
        ci_lo, ci_hi = documented["ci"]
        se_note = (ci_hi - ci_lo) / (2 * stats.t.ppf(0.975, n_note - 1))
        v = np.asarray(values, dtype=float)
        se = v.std(ddof=1) / np.sqrt(len(v))
        return abs(point - documented["value"]) <= 1.96 * math.hypot(se, se_note) + h
    return lo <= documented + h and hi >= documented - h


def invariant(value, h: float, intervals: list[tuple[float, float]]) -> bool:
    """Rule 3, invariance: a single value within h of every interval (and within value ± h)."""
    lo = max(a for a, _ in intervals) - h
    hi = min(b for _, b in intervals) + h
    if value is not None:
        lo, hi = max(lo, value - h), min(hi, value + h)
    return lo <= hi


def curve(documented, rel: float, k: np.ndarray, values: np.ndarray) -> tuple[bool, dict]:
    """Rule 3, curve: per-k agreement of the seed-mean interval with the formula within ±rel."""
    kk = k + documented["origin"]
    with np.errstate(divide="ignore", invalid="ignore"):
        formula = np.asarray(eval(documented["formula"], {"__builtins__": {}},  # noqa: S307
                                  {**FUNCTIONS, "k": kk}), dtype=float)
    mean = values.mean(axis=0)
    bounds = np.array([t_interval(values[:, i]) for i in range(values.shape[1])])
    ok = (bounds[:, 0] <= formula * (1 + rel)) & (bounds[:, 1] >= formula * (1 - rel))
    worst = float(np.max(np.abs(mean / formula - 1)))
    return bool(ok.all()), {"point": float(ok.mean()), "lo": float(ok.mean()),
                            "hi": float(ok.mean()), "text": f"agrees at k = {ranges(k, ok)} of "
                            f"1–{int(k[-1])} ({ok.sum()}/{len(ok)}); largest deviation "
                            f"{100 * worst:.0f}%"}


# ---------------------------------------------------------------- one entry


def measure_once(entry: dict, fit: pd.DataFrame, rows: dict, statistic: str,
                 value: str | None, doc) -> dict:
    """The measurement and verdict of an entry with the given rows, statistic, per-seed value
    expression and documented value (a reading may change any of them)."""
    name, kind, tol = entry["id"], entry["kind"], entry["tolerance"]
    seeds, values = evaluate_rows(fit, rows, value, name)
    out = {"n_seeds": len(seeds), "text": ""}
    if kind == "curve":
        series = next(n for n, spec in rows.items() if spec.get("along"))
        ok, shown = curve(doc, tol["rel"], evaluate_k(fit, rows[series], name), values)
        return {**out, **shown, "ok": ok}
    if kind == "invariance":
        members = values if values.ndim == 2 else values[:, None]
        parts = [summarise(members[:, i], statistic) for i in range(members.shape[1])]
        ok = invariant(doc.get("value"), tol["half_unit"], [(lo, hi) for _, lo, hi in parts])
        points = [p for p, _, _ in parts]
        return {**out, "point": float(np.mean(points)), "lo": min(lo for _, lo, _ in parts),
                "hi": max(hi for _, _, hi in parts), "ok": ok, "text": _members(parts)}
    if not np.all(np.isfinite(values)):
        raise ClaimError(f"{name}: non-finite per-seed values {values}")
    if kind == "directional" and values.ndim == 2:  # every member on the claimed side
        parts = [summarise(values[:, i], statistic) for i in range(values.shape[1])]
        held = [side(doc, lo, hi) for _, lo, hi in parts]
        return {**out, "point": min(p for p, _, _ in parts), "lo": min(lo for _, lo, _ in parts),
                "hi": max(hi for _, _, hi in parts), "ok": all(held),
                "text": f"{sum(held)} of {len(held)} members on the claimed side; "
                + _members(parts)}
    point, lo, hi = summarise(values, statistic)
    if kind == "directional":
        if statistic == "all":
            held = [side(doc, v, v) for v in np.atleast_1d(values)]
            return {**out, "point": point, "lo": lo, "hi": hi, "ok": all(held),
                    "text": f"{sum(held)} of {len(held)} seeds on the claimed side"}
        return {**out, "point": point, "lo": lo, "hi": hi, "ok": side(doc, lo, hi)}
    ok = quantitative(doc, tol["half_unit"], values, point, lo, hi, statistic)
    return {**out, "point": point, "lo": lo, "hi": hi, "ok": ok}


def _members(parts: list[tuple[float, float, float]]) -> str:
    """Each member's value [interval], or for a long series the range they span."""
    if len(parts) <= 8:
        return "members: " + ", ".join(f"{fmt(p, 3)} {spread(lo, hi, 3)}" for p, lo, hi in parts)
    points = [p for p, _, _ in parts]
    within = spread(min(lo for _, lo, _ in parts), max(hi for _, _, hi in parts), 4)
    return (f"{len(parts)} members, values {fmt(min(points), 4)} to {fmt(max(points), 4)}, "
            f"intervals within {within}")


def evaluate_k(fit: pd.DataFrame, spec: dict, name: str) -> np.ndarray:
    """The coordinates of a series row."""
    return select(fit, spec, name)[spec["along"]].to_numpy(dtype=float)


def _merged(rows: dict, overrides: dict) -> dict:
    return {n: {**spec, **overrides.get(n, {})} for n, spec in rows.items()}


def _shown(m: dict, statistic: str) -> str:
    """A measurement as text: value [interval] (statistic, n seeds) and its details."""
    if "point" not in m:
        return "—"
    text = fmt(m["point"], 4)
    if statistic in ("median", "mean") and np.isfinite(m["lo"]) and m["lo"] != m["hi"]:
        text += f" {spread(m['lo'], m['hi'], 4)}"
    label = {"median": "median, 95% bootstrap", "mean": "mean, 95% t-interval",
             "seed0": "seed 0", "all": "every seed", "value": "across seeds"}[statistic]
    text += f" ({label}, {m['n_seeds']} seeds)"
    return f"{text}; {m['text']}" if m.get("text") else text


def describe_documented(entry: dict) -> str:
    """The note's value or direction as text."""
    kind, doc = entry["kind"], entry.get("documented")
    if kind == "not_measurable":
        return "—"
    if kind == "directional":
        key = direction(doc)
        x = doc[key]
        if key == "between":
            return f"in {spread(*x, digits=4)}"
        return {"above": "> ", "below": "< ", "contains": "interval holds "}[key] + fmt(x, 4)
    if kind == "invariance":
        return f"the same in every member{', ' + fmt(doc['value'], 4) if 'value' in doc else ''}"
    if kind == "curve":
        return f"{doc['formula']} (k = block + {doc['origin']})"
    if isinstance(doc, dict):
        return f"{fmt(doc['value'], 4)}, 95% CI {spread(*doc['ci'], digits=4)} ({doc['n']} seeds)"
    return fmt(doc, 4)


def describe_tolerance(entry: dict) -> str:
    tol = entry.get("tolerance", {})
    if "half_unit" in tol:
        return f"±{tol['half_unit']:g}"
    if "rel" in tol:
        return f"±{100 * tol['rel']:g}% per k"
    return "whole interval on the claimed side" if entry["kind"] == "directional" else ""


def _base_row(entry: dict) -> dict:
    return {
        "id": entry["id"], "note": entry["note"], "kind": entry["kind"], "claim": entry["claim"],
        "documented": describe_documented(entry), "statistic": entry.get("statistic", ""),
        "measured": math.nan, "measured_lo": math.nan, "measured_hi": math.nan,
        "n_seeds": math.nan, "shown": "—", "verdict": "not measured",
        "tolerance": describe_tolerance(entry),
        "tolerance_reason": entry.get("tolerance", {}).get("reason", ""),
        "readings": "", "restates": entry.get("restates", ""), "notes": "",
        "fit": "", "rows": "",
    }


def evaluate(entry: dict, fits: dict[str, pd.DataFrame]) -> dict:
    """One ledger row: the entry, its measurement under each reading, and its verdict."""
    row = _base_row(entry)
    if entry["kind"] == "not_measurable":
        row.update(verdict="not measurable", notes=entry["why"])
        return row
    measure = entry["measure"]
    if entry["kind"] == "arithmetic":
        value = float(eval(measure["value"], {"__builtins__": {}}, FUNCTIONS))  # noqa: S307
        ok = abs(value - entry["documented"]) <= entry["tolerance"]["half_unit"]
        row.update(measured=value, measured_lo=value, measured_hi=value, shown=fmt(value, 4),
                   verdict="reproduced" if ok else "not reproduced",
                   notes="arithmetic, no measurement")
        return row
    row.update(fit=measure["fit"], rows=json.dumps(measure["rows"], sort_keys=True))
    fit = fits.get(measure["fit"])
    if fit is None:
        row["notes"] = f"study {measure['fit']!r} not in this config"
        return row
    try:
        primary = measure_once(entry, fit, measure["rows"], entry["statistic"],
                               measure.get("value"), entry["documented"])
    except NotInGrid as missing:
        row["notes"] = f"not in this grid: {missing}"
        return row
    readings, absent = [], []
    for r in entry.get("readings", []):
        try:
            readings.append((r, measure_once(
                entry, fit, _merged(measure["rows"], r.get("rows", {})),
                r.get("statistic", entry["statistic"]), r.get("value", measure.get("value")),
                r.get("documented", entry["documented"]))))
        except NotInGrid:
            absent.append(f"{r['setting']} = {r['label']}")
    row.update(measured=primary["point"], measured_lo=primary["lo"],
               measured_hi=primary["hi"], n_seeds=primary["n_seeds"],
               shown=_shown(primary, entry["statistic"]))
    verdict = "reproduced" if primary["ok"] else "not reproduced"
    differ = sorted({r["setting"] for r, m in readings if m["ok"] != primary["ok"]})
    notes = []
    if differ:
        notes.append(f"primary reading {verdict}")
        verdict = f"depends on {', '.join(differ)}"
    row["verdict"] = verdict
    row["readings"] = "; ".join(
        [f"{r['setting']} = {r['label']}: {_shown(m, r.get('statistic', entry['statistic']))} "
         f"({'reproduced' if m['ok'] else 'not reproduced'})" for r, m in readings]
        + [f"{a}: not in this grid" for a in absent])
    width, band = primary["hi"] - primary["lo"], 2 * entry["tolerance"].get("half_unit", 0)
    if primary["ok"] and entry["kind"] == "quantitative" and band and width > 10 * band:
        notes.append(f"consistent only: the 95% interval is {width / band:.0f}x wider than the "
                     "note's precision")
    if "reference" in entry and entry["kind"] == "quantitative":
        doc = entry["documented"]
        value = doc["value"] if isinstance(doc, dict) else doc
        same = np.sign(primary["point"] - entry["reference"]) == np.sign(
            value - entry["reference"])
        notes.append(f"{'on' if same else 'not on'} the note's side of "
                     f"{fmt(entry['reference'], 4)}")
    row["notes"] = "; ".join(notes)
    return row


def ledger(entries: list[dict], fits: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every entry evaluated, in file order; a restatement takes its entry's verdict."""
    rows, by_id = [], {}
    for entry in entries:
        if "restates" in entry:
            source = by_id[entry["restates"]]
            row = {**source, "id": entry["id"], "claim": entry["claim"], "kind": entry["kind"],
                   "note": entry["note"], "restates": entry["restates"],
                   "notes": f"restates {entry['restates']}"}
        else:
            row = evaluate(entry, fits)
        by_id[entry["id"]] = row
        rows.append(row)
    return pd.DataFrame(rows)


def verdict_class(verdict: str) -> str:
    """The counted class of a verdict ('depends on loss' -> 'depends on')."""
    return "depends on" if verdict.startswith("depends on") else verdict


def counts(table: pd.DataFrame, primary_only: bool = False) -> dict[str, int]:
    """Entries per verdict class, in VERDICTS order (restatements left out if primary_only)."""
    if primary_only:
        table = table[table["restates"] == ""]
    classes = table["verdict"].map(verdict_class)
    return {v: int((classes == v).sum()) for v in VERDICTS}
