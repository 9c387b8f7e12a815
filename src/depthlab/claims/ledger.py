"""The claims ledger: each entry of config/claims.yaml measured on the fits, with an outcome.

Pure functions of the claims file (depthlab.claims.schema) and the fit tables; the rules are
in docs/claims_rules.md (changes: the claims file's changelog, whose fingerprint covers this
module's source):

1. Per seed first. An entry's rows are fit rows (depthlab.claims.sample) with every seed's
   value, paired by seed; its `value` expression gives a per-seed value, or for the statistic
   `pooled` the value of the seeds' mean rows (the note's seed-averaged estimator).
2. The note's statistic at the note's seed count (depthlab.claims.measurement): a number the
   note measured against the band of that statistic drawn from our pool, a prediction or a
   direction against our estimate's 95% interval, a curve against a simultaneous band; the
   outcome by the one rule of depthlab.claims.outcomes.
3. Readings. Every entry is read at every label of its note's open settings
   (depthlab.claims.readings). Which labels the note's own numbers allow is identified by the
   exploratory run (depthlab.claims.identification) and frozen (depthlab.claims.protocol); an
   entry whose primary cell is excluded is graded at the allowed reading(s), or reads "not
   measured at the identified reading" where that cell was not run. Allowed readings that
   disagree make it inconclusive ("depends on <setting>"). The identifying numbers are graded
   like every other entry.
4. Evidence (depthlab.claims.evidence): per graded row, p-values of "the note is right" and
   "the note is wrong", Benjamini-Hochberg within each note; a support or contradiction whose
   q exceeds 0.05 is not counted (inconclusive, with the reason).
5. Not comparable: where a row was measured under settings other than its note states (each
   row checked, whatever study it reads), outside the note's domain (the depth, seeds and width
   its estimators need) or with fewer seeds than the note's statistic or the fit's rule needs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from depthlab.analysis.tables import fmt, spread
from depthlab.claims import evidence, outcomes, readings
from depthlab.claims.expressions import NotInGrid, evaluate
from depthlab.claims.identification import identify, rules_of
from depthlab.claims.measurement import measure_once, shown
from depthlab.claims.outcomes import (
    BY_CONSTRUCTION,
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_COMPARABLE,
    NOT_COUNTED,
    NOT_MEASURABLE,
    NOT_MEASURED,
    QUESTION,
    SUPPORTED,
    UNINFORMATIVE,
)
from depthlab.claims.sample import Sample
from depthlab.claims.schema import DOMAIN_KEYS, ClaimsError, direction

# ---------------------------------------------------------------- text


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
        "half_band_hi": math.nan, "band_sigma": math.nan, "p_against": math.nan,
        "p_for": math.nan, "q_against": math.nan, "q_for": math.nan, "detectable": math.nan,
        "n_seeds": math.nan, "shown": "—",
        "outcome": NOT_MEASURED,
        "verdict": NOT_MEASURED, "tolerance": describe_tolerance(entry),
        "half_unit": entry.get("tolerance", {}).get("half_unit", 0.0),
        "tolerance_reason": entry.get("tolerance", {}).get("reason", ""),
        "by_construction": entry.get("by_construction", ""),
        "readings": "", "sensitivity": "", "experiments": "",
        "restates": entry.get("restates", ""), "role": entry.get("role", ""),
        "extends": entry.get("extends", ""),
        "why_not": entry.get("not_comparable", ""), "notes": "",
        "requires": entry.get("requires", ""), "outcome_graded": NOT_MEASURED,
        "fit": "", "rows": "",
    }


# ---------------------------------------------------------------- one entry


def _merged(rows: dict, overrides: dict) -> dict:
    return {n: {**spec, **overrides.get(n, {})} for n, spec in rows.items()}


def comparable(note: dict, sample: Sample, specs: dict, arms: dict | None) -> str:
    """'' if every row was measured under its note's stated settings, else what differs (first
    few). A row that names a setting itself (a contrast: Post-LN beside Pre-LN) chooses it; the
    others are checked on the settings of each arm the row reads (`arms`: {arm: settings}). An
    arm of a user's own block (setting `block`) is never the built-in placement it follows."""
    if not arms:
        return ""
    stated = note.get("settings", {})
    differ = []
    for name, spec in specs.items():
        for arm in sorted(sample.arms.get(name, ())):
            have = arms.get(arm, {})
            if have.get("block"):
                differ.append(f"block {have['block']} (an own block, not the built-in "
                              f"{have.get('placement', 'placement')})")
            differ += [f"{k} {have[k]}, note {v}" for k, v in stated.items()
                       if k not in spec and k in have and have[k] != v]
    return "; ".join(dict.fromkeys(differ))


def outside_domain(domain: dict, sample: Sample, arms: dict) -> str:
    """'' if the sample lies in the domain (the least depth, seeds and d_model its note's
    estimators need, or the entry's own where it needs more), else what falls short: an
    asymptotic rate read on eight blocks, a band on three seeds, a Gaussian limit at width 8
    are not the note's quantities."""
    short = []
    every_arm = sorted(set().union(*sample.arms.values())) if sample.arms else []
    for key in [k for k in DOMAIN_KEYS if k in domain]:
        least = domain[key]
        if key == "seeds":
            have = [len(sample.seeds)]
        elif key == "depth":
            have = [sample.depth] if np.isfinite(sample.depth) else []
        else:
            have = [arms.get(arm, {}).get(key) for arm in every_arm]
        have = [h for h in have if isinstance(h, int | float) and not isinstance(h, bool)]
        if have and min(have) < least:
            short.append(f"{key} {fmt(min(have), 4)}, the estimator needs {least}")
    return "; ".join(short)


def _adopt(row: dict, m: dict, statistic: str) -> None:
    """Take a measurement as the row's: the primary reading's, or the reading graded in its
    place (an excluded primary cell, a conditional theorem's premise)."""
    band = m["band"] or (math.nan, math.nan)
    row.update(measured=m["point"], measured_lo=m["lo"], measured_hi=m["hi"], band_lo=band[0],
               band_hi=band[1], n_seeds=m["n_seeds"], shown=shown(m, statistic),
               band_sigma=m["sigma"], detectable=m.get("detectable", math.nan),
               p_against=m["p"][0], p_for=m["p"][1])


def _unseen(sample: Sample, pool: int | None, entry_id: str) -> None:
    """A confirmatory run grades only seeds from its pool on: ClaimsError otherwise."""
    if pool is not None and min(sample.seeds) < pool:
        raise ClaimsError(f"{entry_id}: seeds from {min(sample.seeds)}: a confirmatory run "
                          f"grades only seeds never seen, from the frozen pool {pool} on "
                          "(each study's seed_offset)")


def evaluate_entry(entry: dict, fits: dict[str, pd.DataFrame], notes: dict,
                   settings: dict | None = None, fit_rules: dict | None = None,
                   pool: int | None = None) -> tuple[dict, list]:
    """One ledger row at the primary cell, and [(reading, measurement)] of its readings (the
    entry's own, then its note's open settings); the final outcome waits for the readings
    the note allows (ledger). `fit_rules`: the claims file's `fits:` (the fewest seeds a fit's
    rows need); `pool`: a confirmatory run's frozen pool (no seed below it is graded)."""
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
    if entry["kind"] == "arithmetic":  # the note's own arithmetic: it holds, or it does not
        value = float(evaluate(measure["value"], {}, entry["id"]))
        row.update(measured=value, measured_lo=value, measured_hi=value, shown=fmt(value, 4))
        if abs(value - entry["documented"]) <= entry["tolerance"]["half_unit"]:
            row.update(outcome=BY_CONSTRUCTION, verdict=BY_CONSTRUCTION,
                       by_construction="the note's own arithmetic, no measurement")
        else:
            row.update(outcome=CONTRADICTED, verdict=f"{CONTRADICTED}: the arithmetic gives "
                       f"{fmt(value, 4)}, not {fmt(entry['documented'], 4)} ± "
                       f"{fmt(entry['tolerance']['half_unit'], 2)}")
        if row["extends"]:  # the arithmetic of a sentence that a measured entry grades
            row.update(outcome=NOT_COUNTED, verdict=f"{NOT_COUNTED} (the arithmetic beside "
                       f"{row['extends']}'s verdict): {row['verdict']}")
        return row, []
    rows = readings.primary_rows(entry, notes)
    row.update(fit=measure["fit"], rows=json.dumps(rows, sort_keys=True))
    fit = fits.get(measure["fit"])
    if fit is None:
        row["notes"] = f"study {measure['fit']!r} not in this config"
        return row, []
    statistic, source = entry["statistic"], row["source"]
    n_note = int(row["n_note"]) if np.isfinite(row["n_note"]) else 1
    try:
        sample = Sample(fit, rows, measure.get("value"), entry["id"])
    except NotInGrid as missing:
        row["notes"] = f"not in this grid: {missing}"
        return row, []
    _unseen(sample, pool, entry["id"])
    arms = (settings or {}).get(measure["fit"])
    trained = measure["fit"] in (fit_rules or {})  # a trained study: its own seed rule
    # the note's stated settings are those of its measurements at init, checked on every row
    # the entry reads at init, whatever study holds it
    differ = "" if trained else comparable(note, sample, measure["rows"], arms)
    pool_size = len(sample.seeds)
    needs = n_note if source == "sample" and entry["kind"] == "quantitative" \
        and statistic != "seed0" else 2
    if pool_size < needs:
        differ = "; ".join(filter(None, [differ, f"seeds {pool_size}, note {needs}"]))
    domain = {**note.get("domain", {}), **entry.get("domain", {})}
    # the domain of the note's estimators, and where an entry's own estimator needs more, the
    # entry's, wherever they are measured (a trained study is judged by its own rule, `fits:`)
    if not trained:
        differ = "; ".join(filter(None, [differ, outside_domain(domain, sample, arms or {})]))
    least = (fit_rules or {}).get(measure["fit"])
    if least and pool_size < least["seeds"]:
        differ = "; ".join(filter(None, [differ, f"seeds {pool_size}, the ledger needs "
                                                 f"{least['seeds']} ({least['run']})"]))
    if differ:
        row.update(outcome=NOT_COMPARABLE, verdict=f"{NOT_COMPARABLE}: {differ}",
                   n_seeds=pool_size)
        return row, []
    try:
        primary = measure_once(entry, sample, statistic, entry["documented"], n_note, source)
    except NotInGrid as missing:
        row["notes"] = f"not in this grid: {missing}"
        return row, []
    found = []
    for r in [*entry.get("readings", []), *readings.note_readings(entry, notes)]:
        try:
            other = Sample(fit, _merged(rows, r.get("rows", {})),
                           r.get("value", measure.get("value")), entry["id"])
            _unseen(other, pool, entry["id"])
            found.append((r, measure_once(
                entry, other, r.get("statistic", statistic),
                r.get("documented", entry["documented"]), n_note, source)))
        except NotInGrid:
            found.append((r, None))
    half = primary["half_band"] or (math.nan, math.nan)
    _adopt(row, primary, statistic)
    row.update(half_band_lo=half[0], half_band_hi=half[1], outcome=primary["outcome"])
    if entry["kind"] == "question":
        row["verdict"] = f"{QUESTION}: {primary['answer']}"
    if least and least.get("scale"):  # a trained study says at which scale it was graded
        row["notes"] = f"trained at {least['scale']}"
    row["draw"] = primary.get("draw")  # for the joint identification; dropped from the table
    return row, found


def _reading_text(r: dict, m: dict | None, statistic: str) -> str:
    if m is None:
        return f"{r['setting']} = {r['label']}: not in this grid"
    return (f"{r['setting']} = {r['label']}: {shown(m, r.get('statistic', statistic))} "
            f"({m['outcome']})")


def _differ(a: str, b: str) -> bool:
    """Two graded outcomes that disagree (an uninformative one disagrees with nothing)."""
    return a != b and a in outcomes.GRADED and b in outcomes.GRADED


def finish(row: dict, found: list, excluded: dict, primaries: dict | None = None) -> dict:
    """The row's outcome and verdict once the excluded readings are known. Where the note's
    numbers exclude the primary reading of a setting, the entry is graded at the allowed
    reading(s) of that setting, and says so; where that cell was not run it is not measured at
    the identified reading; where the numbers allow no reading, the setting could not be
    identified. Allowed readings that disagree make it inconclusive ('depends on <setting>');
    excluded ones are sensitivity, experiments are listed beside it. An assumption,
    possibility or hypothesis (`role`) and another estimator of an entry's sentence
    (`extends`) are measured and not counted."""
    if row["outcome"] not in outcomes.MEASURED:  # not measured, not comparable, ...
        return row
    primaries = primaries or {}
    note, statistic = row["note"], row["statistic"]
    allowed, sensitivity, experiments, by_setting, premise, unmeasured = [], [], [], {}, [], []
    owner = {r["setting"]: r.get("owner", note) for r, _ in found}
    for r, m in found:
        text = _reading_text(r, m, statistic)
        if r.get("premise"):
            premise.append((r, m))
        elif r.get("experiment"):
            experiments.append(text)
        elif (owner[r["setting"]], r["setting"], r["label"]) in excluded:
            why = excluded[(owner[r["setting"]], r["setting"], r["label"])]
            sensitivity.append(f"{text}; reading excluded by the note's numbers ({why})")
        else:
            allowed.append(text)
            if m is not None:
                by_setting.setdefault(r["setting"], []).append((r, m))
            else:
                unmeasured.append(r)
    settings = {r["setting"] for r, _ in found if not (r.get("experiment") or r.get("premise"))}
    dropped = [s for s in sorted(settings)
               if (owner[s], s, primaries.get((owner[s], s))) in excluded]
    # a verdict that already says why (the note's arithmetic) is kept
    verdict = row["verdict"] if row["verdict"].startswith(row["outcome"]) else row["outcome"]
    notes = [row["notes"]] if row["notes"] else []
    depends, graded_at = [], "the primary reading"
    if dropped:  # the primary cell is excluded: each allowed reading is another cell
        label = "the primary cell: " + ", ".join(f"{s} = {primaries[(owner[s], s)]}"
                                                 for s in dropped)
        sensitivity.insert(0, f"{label}: {row['shown']} ({row['outcome']}); "
                              f"reading excluded by the note's numbers")
        alternatives = [pair for pairs in by_setting.values() for pair in pairs]
        by_setting = {}
        if not alternatives:
            at = ", ".join(f"{r['setting']} = {r['label']}" for r in unmeasured)
            row.update(sensitivity="; ".join(sensitivity), experiments="; ".join(experiments))
            if at:
                row.update(outcome=NOT_MEASURED, verdict=f"{NOT_MEASURED} at the identified "
                           f"reading ({at}; the note's numbers exclude {label})")
            else:
                row.update(outcome=NOT_COMPARABLE, verdict=f"{NOT_COMPARABLE}: the note's "
                           f"setting could not be identified (its numbers exclude {label} and "
                           "every other reading measured)")
            return row
        graded = [m["outcome"] for _, m in alternatives]
        _adopt(row, alternatives[0][1], alternatives[0][0].get("statistic", statistic))
        row["outcome"], graded_at = graded[0], "the reading graded"
        if any(_differ(f, graded[0]) for f in graded):
            depends += [r["setting"] for r, _ in alternatives]
        at = ", ".join(f"{r['setting']} = {r['label']}" for r, _ in alternatives)
        verdict = f"{graded[0]} at {at} (the note's numbers exclude {label})"
    if premise:  # a conditional theorem: graded where its premise holds
        r, m = premise[0]
        outside = f"{row['shown']} ({row['outcome']})"
        if m is None:
            row.update(outcome=NOT_MEASURED, verdict=f"{NOT_MEASURED} under the note's "
                       f"premise ({r['setting']} = {r['label']}); outside it: {row['outcome']}")
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
    row["outcome_graded"] = row["outcome"]  # what a later entry's `requires` reads
    if row["role"] or row["extends"]:
        what = row["role"] or f"another estimator of {row['extends']}, beside its verdict"
        verdict = f"{NOT_COUNTED} ({what}): {verdict}"
        row["outcome"] = NOT_COUNTED
    elif row["why_not"]:
        verdict = f"{NOT_COMPARABLE}: {row['why_not']} (measured: {verdict})"
        row["outcome"] = NOT_COMPARABLE
    row.update(verdict=verdict, readings="; ".join(allowed), sensitivity="; ".join(sensitivity),
               experiments="; ".join(experiments), notes="; ".join(notes))
    return row


# ---------------------------------------------------------------- the ledger


def ledger(claims: dict, fits: dict[str, pd.DataFrame], settings: dict | None = None,
           frozen: dict | None = None, pool: int | None = None
           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every entry evaluated, in file order (a restatement takes its entry's outcome), and the
    identification of each note's open settings on this run's numbers. `settings`: {study:
    {arm: settings}} of the run (None: not checked). The readings excluded are a freeze's
    (`frozen`, depthlab.claims.protocol.excluded_by) where one holds, else this run's own
    identification; `pool`: a confirmatory run's frozen pool (no seed below it is graded)."""
    notes = claims.get("notes", {})
    evaluated = {}
    for entry in claims["claims"]:
        if "restates" not in entry:
            evaluated[entry["id"]] = evaluate_entry(entry, fits, notes, settings,
                                                    claims.get("fits"), pool)
    rules = rules_of(notes)
    identified, records = identify(rules, evaluated)
    excluded = identified if frozen is None else frozen
    primaries = {(note, r["setting"]): r["primary"] for note, spec in notes.items()
                 for r in spec.get("readings", [])}
    rows, by_id = [], {}
    for entry in claims["claims"]:
        if "restates" in entry:
            source = by_id[entry["restates"]]
            row = {**source, "id": entry["id"], "claim": entry["claim"], "kind": entry["kind"],
                   "note": entry["note"], "restates": entry["restates"],
                   "notes": f"restates {entry['restates']}"}
        else:
            row = finish(*evaluated[entry["id"]], excluded, primaries)
        by_id[entry["id"]] = row
        rows.append({k: v for k, v in row.items() if k != "draw"})
    return premised(evidence.gate(pd.DataFrame(rows))), pd.DataFrame(
        records, columns=["note", "setting", "label", "graded", "outside", "p_joint", "excluded",
                          "by", "why"])


def premised(table: pd.DataFrame) -> pd.DataFrame:
    """The ledger with every entry that `requires` a premise (an earlier entry) graded only
    where the premise's measurement supports it (its outcome before any role, gate aside): else
    not comparable, the premise's outcome and value beside the measurement."""
    if "requires" not in table:  # a ledger graded before premises existed
        return table
    table = table.copy()
    by_id = table.set_index("id")
    for i in np.flatnonzero((table["requires"] != "").to_numpy()):
        required = table["requires"].iat[i]
        premise = by_id.loc[required]
        outcome = table["outcome"].iat[i]
        if premise["outcome_graded"] == SUPPORTED or outcome not in outcomes.MEASURED:
            continue
        table.loc[table.index[i], "verdict"] = (
            f"{NOT_COMPARABLE}: its premise {required} is {premise['outcome_graded']} "
            f"({premise['shown']}) (measured: {table['verdict'].iat[i]})")
        table.loc[table.index[i], "outcome"] = NOT_COMPARABLE
    return table


def counts(table: pd.DataFrame, primary_only: bool = False) -> dict[str, int]:
    """Entries per outcome, in OUTCOMES order (restatements left out if primary_only)."""
    if primary_only:
        table = table[table["restates"] == ""]
    return {o: int((table["outcome"] == o).sum()) for o in outcomes.OUTCOMES}
