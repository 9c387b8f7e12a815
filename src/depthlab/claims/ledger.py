"""The claims ledger: each entry of config/claims.yaml measured on the fits, with an outcome.

Pure functions of the claims file (depthlab.claims.schema) and the fit tables; the rules are
in docs/claims_rules.md (changes: the claims file's changelog, whose fingerprint covers this
module's source):

1. Per seed first. An entry's rows are fit rows (one grid point each, or a series `along` a
   column) with every seed's value (paired by seed); its `value` expression
   (depthlab.claims.expressions) gives a per-seed value, or, for the statistic `pooled`, the
   value of the seeds' mean rows (the note's seed-averaged estimator).
2. The note's statistic at the note's seed count: `median`, `mean`, `pooled` (the expression
   on the seed means), `of_medians` (on the seed medians), `seed0` (one seed), `value` (one
   number across seeds). A number the note measured is compared with the band of that
   statistic at n seeds drawn from our pool (depthlab.claims.bands; `scale: log` for ratios
   and scales); a number the note predicts, and every direction, with our estimate's 95%
   interval; a curve with a simultaneous band over its points.
3. The outcome by the one rule of depthlab.claims.outcomes, with band_sigma, p and the
   Benjamini-Hochberg q across the ledger (`multiplicity`); `by_construction` entries are
   listed as holding by construction, `role` entries (assumptions, possibilities,
   hypotheses) as not counted, `not_comparable` ones with their reason.
4. Readings: the same entry under another value of a setting the note leaves open. The
   note's own numbers decide which readings are allowed (`identify:`, a joint miss-count test
   over resampled seeds, `identify`), and are not graded again; an entry whose primary cell
   they exclude is graded at the allowed readings. An excluded reading is sensitivity; an
   `experiment` is listed beside the verdict; a `premise` reading is where a conditional
   theorem is graded; an entry is inconclusive ("depends on <setting>") only when two allowed
   readings disagree.
5. Not comparable: where the arm an entry reads differs from the note's stated settings
   (d_model, heads, ...), lies outside the note's domain (depth, seeds, width its estimators
   need) or has fewer seeds than the note's statistic needs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
from scipy import stats

from depthlab.analysis.tables import fmt, ranges, spread
from depthlab.claims import bands, outcomes
from depthlab.claims.expressions import NotInGrid, evaluate
from depthlab.claims.outcomes import (
    BY_CONSTRUCTION,
    CONTRADICTED,
    IDENTIFIES,
    INCONCLUSIVE,
    NOT_COMPARABLE,
    NOT_COUNTED,
    NOT_MEASURABLE,
    NOT_MEASURED,
    QUESTION,
    SUPPORTED,
    UNINFORMATIVE,
)
from depthlab.claims.schema import DOMAIN_KEYS, ROW_EXTRA, ClaimsError, direction

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
    ClaimsError for a key that is no column, or several rows for a single selection."""
    where = {k: v for k, v in spec.items() if k not in ROW_EXTRA}
    along = spec.get("along")
    for key in [*where, *([along] if along else [])]:
        if key not in fit.columns:
            raise ClaimsError(f"{name}: no column {key!r} in the fit")
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
            if rows.empty:
                raise NotInGrid(f"no {along} in [{lo}, {hi}]")
        rows = rows.sort_values(along)
        if rows[along].duplicated().any():
            raise ClaimsError(f"{name}: several rows per {along}; add a key")
        return rows
    if len(rows) > 1:
        differ = [c for c in rows.columns if c not in ("seeds", "seed_values")
                  and rows[c].astype(str).nunique() > 1][:4]
        raise ClaimsError(f"{name}: selects {len(rows)} rows, not one; add a key (they differ "
                         f"in: {', '.join(differ)})")
    return rows


def seed_arrays(rows: pd.DataFrame, name: str) -> tuple[list[int], np.ndarray]:
    """The seeds and the (S, K) per-seed values of the K selected rows."""
    if "seed_values" not in rows.columns or rows["seed_values"].isna().any():
        raise ClaimsError(f"{name}: the fit rows carry no per-seed values")
    seeds = [list(s) for s in rows["seeds"]]
    if any(s != seeds[0] for s in seeds):
        raise ClaimsError(f"{name}: the rows have different seeds")
    return seeds[0], np.stack([np.asarray(v, dtype=float) for v in rows["seed_values"]], -1)


class Sample:
    """An entry's rows with every seed's values: the per-seed value of its expression and, for
    any set of seeds, the expression on their mean rows."""

    def __init__(self, fit: pd.DataFrame, rows: dict, expression: str | None, name: str):
        self.name, self.rows, self.coords, self.seeds, self.arms = name, {}, {}, None, set()
        self.depth = math.nan  # the deepest stack a row reads
        for row_name, spec in rows.items():
            selected = select(fit, spec, name)
            seeds, values = seed_arrays(selected, f"{name}.{row_name}")
            if self.seeds is not None and seeds != self.seeds:
                raise ClaimsError(f"{name}: rows {list(rows)} have different seeds")
            self.seeds = seeds
            if "arm" in selected.columns:
                self.arms |= set(selected["arm"].astype(str))
            if "depth" in selected.columns and selected["depth"].notna().any():
                self.depth = np.nanmax([self.depth, selected["depth"].max()])
            if spec.get("along"):
                self.coords[f"{row_name}_at"] = selected[spec["along"]].to_numpy(dtype=float)
                self.rows[row_name] = values
            else:
                self.rows[row_name] = values[:, 0]
        self.expression = expression or next(iter(rows))

    def value(self, rows: dict) -> np.ndarray:
        return np.asarray(evaluate(self.expression, {**rows, **self.coords}, self.name),
                          dtype=float)

    def per_seed(self) -> np.ndarray:
        """The expression per seed: (S,) or (S, M) for M members (a scalar for the statistic
        `value`, one number across the seeds)."""
        return self.value(self.rows)

    def pooled(self, idx: np.ndarray) -> np.ndarray:
        """The expression on the mean rows of the seeds each row of idx (B, n) picks: (B,) or
        (B, M)."""
        return self.value({k: v[idx].mean(axis=1) for k, v in self.rows.items()})

    def of_medians(self, idx: np.ndarray) -> np.ndarray:
        """The expression on the median rows of the seeds each row of idx (B, n) picks (a
        note's table of medians, e.g. the bend of its median curve)."""
        return self.value({k: np.median(v[idx], axis=1) for k, v in self.rows.items()})


# ---------------------------------------------------------------- the statistic


def statistic_of(sample: Sample, statistic: str):
    """idx (B, n) -> (B,) or (B, M): the note's statistic at the seeds idx picks."""
    if statistic in ("pooled", "of_medians"):
        return getattr(sample, statistic)
    v = sample.per_seed()
    if not np.all(np.isfinite(v)):
        raise ClaimsError(f"{sample.name}: non-finite per-seed values {v}")
    if statistic == "median":
        return lambda idx: np.median(v[idx], axis=1)
    if statistic == "mean":
        return lambda idx: np.mean(v[idx], axis=1)
    if statistic == "seed0":
        return lambda idx: v[idx][:, 0]
    raise ClaimsError(f"{sample.name}: no statistic {statistic!r} over seeds")


def estimates(sample: Sample, statistic: str) -> list[tuple[float, float, float]]:
    """Per member, our estimate of the statistic over all seeds: (point, lo, hi) with its 95%
    interval (median: bootstrap of the median; mean: t-interval; pooled, of_medians: bootstrap
    of the expression on the seed means or medians; seed0: seed 0, no interval)."""
    n = len(sample.seeds)
    if statistic in ("pooled", "of_medians"):
        of = getattr(sample, statistic)
        point = np.atleast_1d(of(np.arange(n)[None, :])[0])
        lo, hi = bands.bootstrap_interval(of, n)
        return [(float(p), float(a), float(b)) for p, a, b in
                zip(point, np.atleast_1d(lo), np.atleast_1d(hi), strict=True)]
    v = sample.per_seed()
    if v.ndim == 0 or v.shape[0] != n:
        raise ClaimsError(f"{sample.name}: the value has shape {v.shape}, not one per seed "
                         f"({n}): does the expression reduce over the seeds?")
    v = v[:, None] if v.ndim == 1 else v
    return [bands.estimate(v[:, i], statistic) for i in range(v.shape[1])]


# ---------------------------------------------------------------- one measurement


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
    return {"outcome": outcomes.members(list(per_k)), "point": share, "lo": share, "hi": share,
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


def measure_once(entry: dict, sample: Sample, statistic: str, doc, n_note: int,
                 source: str) -> dict:
    """The measurement and outcome of an entry's sample under a statistic and documented value
    (a reading may change any of them), with band_sigma: where the note's value (a
    direction's boundary) lies in our band or interval, in band-sigmas."""
    kind, tol = entry["kind"], entry["tolerance"]
    h = tol.get("half_unit", 0.0)
    out = {"n_seeds": len(sample.seeds), "text": "", "band": None, "half_band": None,
           "sigma": math.nan}
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
                "hi": hi_all, "outcome": found, "text": _members_text(parts)}
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
        # a range (between) is a margin of sameness: a single seed's value describes nothing
        text = "" if key == "between" else _seeds_on_side(doc, sample.per_seed())
        if len(parts) > 1:
            text = "; ".join(filter(None, [
                f"{each.count(SUPPORTED)} of {len(each)} members on the claimed side",
                _members_text(parts), text]))
        return {**out, "point": min(p for p, _, _ in parts), "lo": lo_all, "hi": hi_all,
                "outcome": outcomes.members(each), "text": text,
                "sigma": _worst(x, parts, key)}
    point, lo, hi = _one(entry, parts)
    value = doc["value"] if isinstance(doc, dict) else doc
    reference = entry.get("reference")
    if source == "prediction":
        return {**out, "point": point, "lo": lo, "hi": hi,
                "outcome": outcomes.prediction(value, h, lo, hi),
                "sigma": _sigma(value, lo, point, hi),
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
            "detectable": (band_hi - band_lo) / 2}


# ---------------------------------------------------------------- text


def _shown(m: dict, statistic: str) -> str:
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


def describe_documented(entry: dict) -> str:
    """The note's value or direction as text."""
    kind, doc = entry["kind"], entry.get("documented")
    if kind in ("not_measurable", "definition"):
        return "—"
    if kind == "question":
        return (f"open (below {fmt(doc['at'], 4)}: {doc['below']}; above: {doc['above']})")
    if kind == "directional":
        key = direction(doc)
        x = doc[key]
        if key == "between":
            return f"in {spread(*x, digits=4)}"
        return {"above": "> ", "below": "< "}[key] + fmt(x, 4)
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
    return "whole interval on one side" if entry["kind"] in ("directional", "question") else ""


def _base_row(entry: dict, note: dict) -> dict:
    return {
        "id": entry["id"], "note": entry["note"], "kind": entry["kind"], "claim": entry["claim"],
        "documented": describe_documented(entry), "statistic": entry.get("statistic", ""),
        "source": entry.get("source", note.get("source", "")),
        "n_note": entry.get("seeds", note.get("seeds", math.nan)),
        "measured": math.nan, "measured_lo": math.nan, "measured_hi": math.nan,
        "band_lo": math.nan, "band_hi": math.nan, "half_band_lo": math.nan,
        "half_band_hi": math.nan, "band_sigma": math.nan, "p_value": math.nan,
        "q_value": math.nan, "detectable": math.nan, "n_seeds": math.nan, "shown": "—",
        "outcome": NOT_MEASURED,
        "verdict": NOT_MEASURED, "tolerance": describe_tolerance(entry),
        "half_unit": entry.get("tolerance", {}).get("half_unit", 0.0),
        "tolerance_reason": entry.get("tolerance", {}).get("reason", ""),
        "by_construction": entry.get("by_construction", ""),
        "readings": "", "sensitivity": "", "experiments": "",
        "restates": entry.get("restates", ""), "role": entry.get("role", ""),
        "asymptote_of": entry.get("asymptote_of", ""),
        "why_not": entry.get("not_comparable", ""), "notes": "",
        "fit": "", "rows": "",
    }


# ---------------------------------------------------------------- one entry


def _merged(rows: dict, overrides: dict) -> dict:
    return {n: {**spec, **overrides.get(n, {})} for n, spec in rows.items()}


def comparable(note: dict, arms: set[str], settings: dict | None) -> str:
    """'' if every arm read has the note's stated settings, else what differs (first few)."""
    if not settings:
        return ""
    stated = note.get("settings", {})
    differ = []
    for arm in sorted(arms):
        have = settings.get(arm, {})
        differ += [f"{k} {have[k]}, note {v}" for k, v in stated.items()
                   if k in have and have[k] != v]
    return "; ".join(dict.fromkeys(differ))


def outside_domain(domain: dict, sample: Sample, arms: dict) -> str:
    """'' if the sample lies in the domain (the least depth, seeds and d_model its note's
    estimators need, or the entry's own where it needs more), else what falls short: an
    asymptotic rate read on eight blocks, a band on three seeds, a Gaussian limit at width 8
    are not the note's quantities."""
    short = []
    for key in [k for k in DOMAIN_KEYS if k in domain]:
        least = domain[key]
        if key == "seeds":
            have = [len(sample.seeds)]
        elif key == "depth":
            have = [sample.depth] if np.isfinite(sample.depth) else []
        else:
            have = [arms.get(arm, {}).get(key) for arm in sorted(sample.arms)]
        have = [h for h in have if isinstance(h, int | float) and not isinstance(h, bool)]
        if have and min(have) < least:
            short.append(f"{key} {fmt(min(have), 4)}, the estimator needs {least}")
    return "; ".join(short)


def _adopt(row: dict, m: dict, statistic: str) -> None:
    """Take a measurement as the row's: the primary reading's, or the reading graded in its
    place (an excluded primary cell, a conditional theorem's premise)."""
    band = m["band"] or (math.nan, math.nan)
    row.update(measured=m["point"], measured_lo=m["lo"], measured_hi=m["hi"], band_lo=band[0],
               band_hi=band[1], n_seeds=m["n_seeds"], shown=_shown(m, statistic),
               band_sigma=m["sigma"], detectable=m.get("detectable", math.nan))


def evaluate_entry(entry: dict, fits: dict[str, pd.DataFrame], notes: dict,
                   settings: dict | None = None, fit_rules: dict | None = None
                   ) -> tuple[dict, list]:
    """One ledger row under the primary reading, and [(reading, measurement)] of its
    readings; the final outcome waits for the identification of readings (ledger).
    `fit_rules`: the claims file's `fits:` (the fewest seeds a fit's rows need)."""
    note = notes.get(entry["note"], {})
    row = _base_row(entry, note)
    if entry["kind"] == "not_measurable":
        row.update(outcome=NOT_MEASURABLE, verdict=NOT_MEASURABLE, notes=entry["why"])
        return row, []
    if entry["kind"] == "definition":
        row.update(outcome=BY_CONSTRUCTION, verdict=BY_CONSTRUCTION,
                   by_construction=f"{entry['by_construction']} (checked by {entry['test']})")
        return row, []
    measure = entry["measure"]
    if entry["kind"] == "arithmetic":
        value = float(evaluate(measure["value"], {}, entry["id"]))
        ok = abs(value - entry["documented"]) <= entry["tolerance"]["half_unit"]
        if not ok:
            raise ClaimsError(f"{entry['id']}: the note's arithmetic gives {value:.6g}, not "
                             f"{entry['documented']} (a design error of the entry)")
        row.update(measured=value, measured_lo=value, measured_hi=value, shown=fmt(value, 4),
                   outcome=BY_CONSTRUCTION, verdict=BY_CONSTRUCTION,
                   by_construction="the note's own arithmetic, no measurement")
        return row, []
    row.update(fit=measure["fit"], rows=json.dumps(measure["rows"], sort_keys=True))
    fit = fits.get(measure["fit"])
    if fit is None:
        row["notes"] = f"study {measure['fit']!r} not in this config"
        return row, []
    statistic, source = entry["statistic"], row["source"]
    n_note = int(row["n_note"]) if np.isfinite(row["n_note"]) else 1
    try:
        sample = Sample(fit, measure["rows"], measure.get("value"), entry["id"])
    except NotInGrid as missing:
        row["notes"] = f"not in this grid: {missing}"
        return row, []
    # the note's stated settings are those of its own measurements: an entry graded on another
    # study (a training-time claim on the training study) states its setting in its reason
    own = measure["fit"] == entry["note"]
    differ = comparable(note, sample.arms, (settings or {}).get(measure["fit"])) if own else ""
    pool = len(sample.seeds)
    needs = n_note if source == "sample" and entry["kind"] == "quantitative" \
        and statistic != "seed0" else 2
    if pool < needs:
        differ = "; ".join(filter(None, [differ, f"seeds {pool}, note {needs}"]))
    domain = {**note.get("domain", {}), **entry.get("domain", {})}
    # the domain of the note's estimators, and where an entry's own estimator needs more, the
    # entry's, wherever they are measured (a study with a seed rule of its own in the claims
    # file's `fits:`, the training study, is judged by that)
    if domain and measure["fit"] not in (fit_rules or {}):
        differ = "; ".join(filter(None, [differ, outside_domain(
            domain, sample, (settings or {}).get(measure["fit"], {}))]))
    least = (fit_rules or {}).get(measure["fit"])
    if least and pool < least["seeds"]:
        differ = "; ".join(filter(None, [differ, f"seeds {pool}, the ledger needs "
                                                 f"{least['seeds']} ({least['run']})"]))
    if differ:
        row.update(outcome=NOT_COMPARABLE, verdict=f"{NOT_COMPARABLE}: {differ}",
                   n_seeds=pool)
        return row, []
    try:
        primary = measure_once(entry, sample, statistic, entry["documented"], n_note, source)
    except NotInGrid as missing:
        row["notes"] = f"not in this grid: {missing}"
        return row, []
    readings = []
    for r in entry.get("readings", []):
        try:
            other = Sample(fit, _merged(measure["rows"], r.get("rows", {})),
                           r.get("value", measure.get("value")), entry["id"])
            readings.append((r, measure_once(
                entry, other, r.get("statistic", statistic),
                r.get("documented", entry["documented"]), n_note, source)))
        except NotInGrid:
            readings.append((r, None))
    half = primary["half_band"] or (math.nan, math.nan)
    _adopt(row, primary, statistic)
    row.update(half_band_lo=half[0], half_band_hi=half[1], outcome=primary["outcome"])
    if entry["kind"] == "question":
        row["verdict"] = f"{QUESTION}: {primary['answer']}"
    row["draw"] = primary.get("draw")  # for the joint identification; dropped from the table
    return row, readings


def _reading_text(r: dict, m: dict | None, statistic: str) -> str:
    if m is None:
        return f"{r['setting']} = {r['label']}: not in this grid"
    return (f"{r['setting']} = {r['label']}: {_shown(m, r.get('statistic', statistic))} "
            f"({m['outcome']})")


def _differ(a: str, b: str) -> bool:
    """Two graded outcomes that disagree (an uninformative one disagrees with nothing)."""
    return a != b and a in outcomes.GRADED and b in outcomes.GRADED


def finish(row: dict, readings: list, excluded: dict, primaries: dict | None = None,
           identifying: dict | None = None) -> dict:
    """The row's outcome and verdict once the excluded readings are known. Where the note's
    numbers exclude the primary reading of a setting, the entry is graded at the allowed
    reading(s) of that setting, and says so; where they allow none, the setting could not be
    identified. Allowed readings that disagree make it inconclusive ('depends on <setting>');
    excluded ones are sensitivity, experiments are listed beside it. A number that identifies
    a reading (`identifying`: {id: settings}) is not graded again, an assumption, possibility
    or hypothesis (`role`) is measured and not counted."""
    if row["outcome"] not in outcomes.MEASURED:  # not measured, not comparable, ...
        return row
    primaries, identifying = primaries or {}, identifying or {}
    note, statistic = row["note"], row["statistic"]
    allowed, sensitivity, experiments, by_setting, premise = [], [], [], {}, []
    for r, m in readings:
        text = _reading_text(r, m, statistic)
        if r.get("premise"):
            premise.append((r, m))
        elif r.get("experiment"):
            experiments.append(text)
        elif (note, r["setting"], r["label"]) in excluded:
            why = excluded[(note, r["setting"], r["label"])]
            sensitivity.append(f"{text}; reading excluded by the note's numbers ({why})")
        else:
            allowed.append(text)
            if m is not None:
                by_setting.setdefault(r["setting"], []).append((r, m))
    settings = {r["setting"] for r, _ in readings
                if not (r.get("experiment") or r.get("premise"))}
    dropped = [s for s in sorted(settings) if (note, s, primaries.get((note, s))) in excluded]
    verdict, notes = row["outcome"], [row["notes"]] if row["notes"] else []
    depends, graded_at = [], "the primary reading"
    if dropped:  # the primary cell is excluded: each allowed reading is another cell
        label = "the primary cell: " + ", ".join(f"{s} = {primaries[(note, s)]}"
                                                 for s in dropped)
        sensitivity.insert(0, f"{label}: {row['shown']} ({row['outcome']}); "
                              f"reading excluded by the note's numbers")
        alternatives = [pair for pairs in by_setting.values() for pair in pairs]
        by_setting = {}
        if not alternatives:
            row.update(outcome=NOT_COMPARABLE, verdict=f"{NOT_COMPARABLE}: the note's setting "
                       f"could not be identified (its numbers exclude {label} and every other "
                       "reading measured)", sensitivity="; ".join(sensitivity),
                       experiments="; ".join(experiments))
            return row
        found = [m["outcome"] for _, m in alternatives]
        _adopt(row, alternatives[0][1], alternatives[0][0].get("statistic", statistic))
        row["outcome"], graded_at = found[0], "the reading graded"
        if any(_differ(f, found[0]) for f in found):
            depends += [r["setting"] for r, _ in alternatives]
        at = ", ".join(f"{r['setting']} = {r['label']}" for r, _ in alternatives)
        verdict = f"{found[0]} at {at} (the note's numbers exclude {label})"
    if premise:  # a conditional theorem: graded where its premise holds
        r, m = premise[0]
        outside = f"{row['shown']} ({row['outcome']})"
        if m is None:
            row.update(outcome=NOT_COMPARABLE, verdict=f"{NOT_COMPARABLE}: graded under the "
                       f"note's premise ({r['setting']} = {r['label']}), not in this grid; "
                       f"outside it: {row['outcome']}")
            return row
        _adopt(row, m, r.get("statistic", statistic))
        row["outcome"], graded_at = m["outcome"], "the premise"
        verdict = (f"{m['outcome']} under the premise ({r['setting']} = {r['label']}); at the "
                   f"primary reading, outside the premise: {outside}")
    for setting, pairs in by_setting.items():
        if any(_differ(m["outcome"], row["outcome"]) for _, m in pairs):
            depends.append(setting)
    if depends:
        verdict = (f"{INCONCLUSIVE}: depends on {', '.join(dict.fromkeys(depends))} "
                   f"({row['outcome']} at {graded_at})")
        row["outcome"] = INCONCLUSIVE
    if row["outcome"] == UNINFORMATIVE and np.isfinite(row["detectable"]):
        notes.append(f"too wide to tell: these seeds detect deviations beyond "
                     f"±{fmt(row['detectable'], 3)} only, the sentence is about "
                     f"{row['tolerance'] or 'its margin'}")
    if row["by_construction"]:
        if row["outcome"] == SUPPORTED:
            row["outcome"], verdict = BY_CONSTRUCTION, BY_CONSTRUCTION
        else:
            notes.append(f"listed as holding by construction ({row['by_construction']}), "
                         f"but measured {row['outcome']}")
    if row["id"] in identifying:
        verdict = (f"{IDENTIFIES} ({', '.join(identifying[row['id']])}): {row['outcome']} "
                   f"at the reading graded, not graded again")
        row["outcome"] = IDENTIFIES
    elif row["role"]:
        verdict = f"{NOT_COUNTED} ({row['role']}): {verdict}"
        row["outcome"] = NOT_COUNTED
    elif row["why_not"]:
        verdict = f"{NOT_COMPARABLE}: {row['why_not']} (measured: {verdict})"
        row["outcome"] = NOT_COMPARABLE
    row.update(verdict=verdict, readings="; ".join(allowed), sensitivity="; ".join(sensitivity),
               experiments="; ".join(experiments), notes="; ".join(notes))
    return row


# ---------------------------------------------------------------- identification, the ledger


def joint_miss_p(draws: list[tuple], outside: int) -> float:
    """P(at least `outside` of these identifying numbers fall outside their bands) under the
    right reading, with the numbers' dependence kept: B resamples of the same seeds for every
    number (cells share seeds; a factor is a quotient of two sds), each number outside its
    central 95% of draws in 5% of them; the miss count's upper tail. `draws`: (statistic of
    idx, n, pool) per number; NaN when their pools differ (the binomial rule then)."""
    if len({pool for _, _, pool in draws}) != 1:
        return math.nan
    idx = bands.resamples(draws[0][2], max(n for _, n, _ in draws))
    misses = np.zeros(len(idx), dtype=int)
    for stat, n, _ in draws:
        values = np.asarray(stat(idx[:, :n]), dtype=float).reshape(len(idx))
        lo, hi = np.quantile(values, [(1 - bands.LEVEL) / 2, (1 + bands.LEVEL) / 2])
        misses += (values < lo) | (values > hi)
    return float(np.mean(misses >= outside))


def identify(rules: list[dict], evaluated: dict) -> tuple[dict, list[dict]]:
    """Which readings of each open setting the note's own numbers exclude: {(note, setting,
    label): why}, and one record per reading (graded, outside, p, excluded) for the docs. A
    reading is excluded when so many identifying numbers fall outside their bands that the
    joint miss count's tail probability (joint_miss_p: resampled seeds, the numbers'
    dependence kept) is at most 5%; the binomial rule (outcomes.excluded) where the numbers
    have no common pool."""
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
            records.append({"note": rule["note"], "setting": rule["setting"], "label": label,
                            "graded": len(marks), "outside": len(against),
                            "p_joint": p, "excluded": out, "by": ", ".join(against)})
            if out:
                excluded[(rule["note"], rule["setting"], label)] = (
                    f"{len(against)} of {len(marks)} identifying numbers outside their bands"
                    + (f", joint p = {p:.2g}" if np.isfinite(p) else ""))
    return excluded, records


WEAK_Q = "across the ledger's tests"  # a contradiction's note where q > 0.05


def q_values(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values of p-values (NaN stays NaN): the smallest false discovery
    rate at which each would be declared (Benjamini & Hochberg 1995)."""
    p = np.asarray(p, dtype=float)
    q = np.full_like(p, math.nan)
    finite = np.flatnonzero(np.isfinite(p))
    if finite.size:
        order = finite[np.argsort(p[finite])]
        ranked = p[order] * finite.size / np.arange(1, finite.size + 1)
        q[order] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    return q


def multiplicity(table: pd.DataFrame) -> pd.DataFrame:
    """p_value (two-sided, from band_sigma as a normal deviate) and q_value (Benjamini-Hochberg
    across every graded or uninformative entry that is not a restatement); a contradiction
    whose q exceeds 0.05 says so (anew where the ledger had it: a merged ledger's)."""
    table = table.copy()
    own = (table["restates"] == "") & table["outcome"].isin(outcomes.MEASURED)
    sigma = table["band_sigma"].astype(float)
    table["p_value"] = np.where(own, 2 * stats.norm.sf(np.abs(sigma)), math.nan)
    table["q_value"] = q_values(table["p_value"].to_numpy())
    weak = own & (table["outcome"] == CONTRADICTED) & (table["q_value"] > 0.05)
    notes = ["; ".join(part for part in str(n).split("; ") if not part.endswith(WEAK_Q))
             for n in table["notes"]]
    for i in np.flatnonzero(weak.to_numpy()):
        notes[i] = "; ".join(filter(None, [notes[i], f"q = {table['q_value'].iat[i]:.2g}"
                                                     f" > 0.05 {WEAK_Q}"]))
    table["notes"] = notes
    return table


def ledger(claims: dict, fits: dict[str, pd.DataFrame],
           settings: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every entry evaluated, in file order (a restatement takes its entry's outcome), and the
    readings each note's numbers allow. `settings`: {study: {arm: settings}} of the run, for
    the comparability of each row with its note's stated settings (None: not checked)."""
    notes = claims.get("notes", {})
    evaluated = {}
    for entry in claims["claims"]:
        if "restates" not in entry:
            evaluated[entry["id"]] = evaluate_entry(entry, fits, notes, settings,
                                                    claims.get("fits"))
    rules = claims.get("identify", [])
    excluded, records = identify(rules, evaluated)
    primaries = {(rule["note"], rule["setting"]): rule["primary"] for rule in rules}
    identifying: dict[str, list[str]] = {}
    for rule in rules:
        for entry_id in rule["by"]:
            identifying.setdefault(entry_id, []).append(rule["setting"])
    rows, by_id = [], {}
    for entry in claims["claims"]:
        if "restates" in entry:
            source = by_id[entry["restates"]]
            row = {**source, "id": entry["id"], "claim": entry["claim"], "kind": entry["kind"],
                   "note": entry["note"], "restates": entry["restates"],
                   "notes": f"restates {entry['restates']}"}
        else:
            row = finish(*evaluated[entry["id"]], excluded, primaries, identifying)
        by_id[entry["id"]] = row
        rows.append({k: v for k, v in row.items() if k != "draw"})
    return multiplicity(pd.DataFrame(rows)), pd.DataFrame(
        records, columns=["note", "setting", "label", "graded", "outside", "p_joint", "excluded",
                          "by"])


def counts(table: pd.DataFrame, primary_only: bool = False) -> dict[str, int]:
    """Entries per outcome, in OUTCOMES order (restatements left out if primary_only)."""
    if primary_only:
        table = table[table["restates"] == ""]
    return {o: int((table["outcome"] == o).sum()) for o in outcomes.OUTCOMES}
