"""The schema of config/claims.yaml, checked before any job runs (workflow/rules/common.smk).

One entry per numeric or directional sentence of the notes, in note order:

    - id: stack96.grad_ratio.pre.L96          # unique: letters, digits, . _ -
      note: stack96                           # a note of the file's `notes:`
      claim: "Pre-LN's 2.89 starves the late ones by 2.9x"   # quoted from the note
      kind: quantitative                      # KINDS (below)
      documented: 2.89                        # by kind (below)
      statistic: median                       # STATISTICS: what the note quotes of the seeds
      measure:                                # rows of results/fits/<fit>/<arm>.parquet
        fit: stack96
        rows:                                 # named selections; `along` makes a series
          r: {quantity: grad_ratio, arm: grad, placement: pre, depth: 96}
        value: r                              # per-seed expression of the rows (default: the row)
      tolerance:                              # from the note's precision, set before the run
        half_unit: 0.005                      # quantitative, invariance: half a unit of the last
                                              # printed digit; curve: rel (a relative band)
        reason: "..."                         # required
      readings:                               # optional: the same claim under another value of a
        - setting: "depth"                    # setting this entry alone varies (a setting the
          label: "192"                        # note leaves open is the note's, below)
          rows: {r: {depth: 192}}             # overrides of the primary rows
      reference: 1                            # optional: the value that reverses the note's
                                              # conclusion (a band holding it: inconclusive)
      source: prediction                      # optional: the note's `source` (sample|prediction)
      seeds: 6                                # optional: the note's seed count for this number
      by_construction: "why"                  # optional: holds by construction (never counted)
      role: hypothesis                        # optional: assumption | possibility | hypothesis:
                                              # measured and listed, never counted
      scale: log                              # optional: a ratio or scale statistic's band is
                                              # drawn on the log scale (default linear)
      not_comparable: "why"                   # optional: what this run cannot compare (e.g.
                                              # placements at one learning rate): measured, listed
      domain: {depth: 96, reason: "why"}      # optional: the least depth, seeds, d_model this
                                              # entry's estimator needs, over its note's domain
      extends: other.id                       # optional: another estimator of that earlier
                                              # entry's sentence (an asymptote at scale): listed
                                              # beside it, never its verdict, never counted
      requires: other.id                      # optional: an earlier entry stating the premise
                                              # the sentence presumes; graded only where that
                                              # entry's measurement supports it, else not
                                              # comparable (the premise's value beside it)
      restates: other.id                      # instead of measuring: the outcome of that entry

A reading may carry `experiment: true`: a manipulation the note does not mention, listed beside
the outcome and never a reading; or `premise: true`: the setting at which a conditional
theorem's premise holds (theory096 at output scale 10), where the entry is graded, its primary
reading's outcome stated beside it as outside the premise. Top level: `notes:` (each note's
title, seeds, source, stated settings, `domain` (the least depth, seeds and d_model its
estimators need, with the reason; a row outside it reads "not comparable") and `readings`: the
settings it leaves open, each with its primary label, the labels it may be read at (how each
maps a row of the note's study: `set` columns, an `arm` map, a `quantity` map, a `statistic`),
which rows it varies (`quantities`, `fits`, `entries`) and the note's numbers that identify it
(`by`)); and `fits:` (per fit, the fewest seeds its rows need before an entry is graded, the
run that has them and, for a trained study, the scale it trains at: `training: {seeds: 5, run:
"...", scale: "..."}`; fewer seeds read "not comparable").

Kinds and their `documented`:
- quantitative: a number, or {value, ci: [lo, hi], n} when the note gives its own 95% interval
  (statistics: median, mean, pooled (the expression on the seed means), of_medians (on the
  seed medians), seed0, value);
- directional: {above: x}, {below: x} or {between: [lo, hi]} (also a sentence of sameness:
  the range is its equivalence margin, set in advance, its reason in `tolerance.reason`);
- invariance: {} or {value: x}: the rows are one quantity across arms, depths or layers;
- curve: {formula: "<numpy expression in k>", origin: 0 or 1}: per-k agreement of a series;
- arithmetic: a number the note computes (sqrt(96)); `measure: {value: "sqrt(96)"}`;
- definition: a sentence that follows from a placement's definition, no measurement:
  `by_construction: why` and `test: tests/<file>.py::<test>`, the test that checks it;
- question: a question the note leaves open, answered by a measurement but never graded:
  {at: x, below: "what a value below x means", above: "... above x"}, measured as a direction;
- not_measurable: no documented value; `why` says why.

`changelog:` (top level) records every change of a rule, tolerance or measurement with its date,
why, and whether a result had been seen; its last entry carries the `fingerprint` of the entries'
rules (`fingerprint`), so a rule cannot change without an entry (tests/test_claims.py).

Light on purpose (PyYAML and the target declarations only): the Snakefile reads it at parse time.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import yaml

from depthlab.claims.expressions import ExpressionError, parse
from depthlab.studies import STUDIES
from depthlab.vocabulary.settings import ConfigError

FITS = tuple(sorted(STUDIES))  # the studies the pipeline fits
KINDS = ("quantitative", "directional", "invariance", "curve", "arithmetic", "definition",
         "question", "not_measurable")
STATISTICS = ("median", "mean", "seed0", "pooled", "of_medians", "value")
SOURCES = ("sample", "prediction")  # a number the note measured on its seeds, or predicts
DIRECTIONS = ("above", "below", "between")
ROLES = ("assumption", "possibility", "hypothesis")  # measured, listed, never counted
SCALES = ("linear", "log")  # the scale a band of the note's statistic is drawn on
ENTRY_KEYS = ("id", "note", "claim", "kind", "documented", "statistic", "measure", "tolerance",
              "readings", "reference", "restates", "why", "by_construction", "test", "source",
              "seeds", "role", "scale", "not_comparable", "domain", "extends", "requires")
ROW_EXTRA = ("along", "range")  # row-spec keys that are not fit columns
ID = re.compile(r"^[A-Za-z0-9_.\-]+$")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
RULE_KEYS = ("kind", "documented", "statistic", "measure", "tolerance", "readings", "restates",
             "by_construction", "test", "source", "seeds", "role", "scale", "not_comparable",
             "domain", "extends", "requires")
NOTE_KEYS = ("title", "seeds", "source", "settings", "domain", "readings")
DOMAIN_KEYS = ("depth", "seeds", "d_model")  # the least of each an estimator needs
LEAST_SEEDS = 6  # no note's domain holds fewer: a bootstrap of fewer seeds under-covers
# a note's open setting: how each label maps the rows it varies
READING_KEYS = ("setting", "primary", "why", "by", "labels", "quantities", "fits", "entries")
LABEL_KEYS = ("set", "arm", "quantity", "statistic")
# the code the verdicts come from: the fingerprint covers it (and every study's fit.py, the
# estimators of the fit rows), so a rule cannot change unrecorded
# a study's modules that only draw or declare (its fit and the modules the fit uses are the
# estimators, in the fingerprint)
RENDERING = ("__init__.py", "tables.py", "figures.py", "targets.py")
RULE_CODE = ("ledger.py", "outcomes.py", "bands.py", "expressions.py", "merge.py",
             "evidence.py", "readings.py", "protocol.py", "schema.py")


TOP_KEYS = ("changelog", "reasons", "shared", "notes", "fits", "claims")


class ClaimsError(ConfigError):
    """A bad claims file: one line naming the file, the entry id, the key and the value. Raised
    by the schema check before any job, or by the ledger where an entry selects no column,
    several rows for one, misaligned seeds or values the rules cannot grade (a design error of
    the claims file, not a finding)."""


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _pair(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(map(_number, value)) \
        and value[0] <= value[1]


def _text(where: str, value) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ClaimsError(f"{where}={value!r} must be a non-empty string")


def _keys(where: str, node, allowed: tuple, required: tuple = ()) -> None:
    if not isinstance(node, dict):
        raise ClaimsError(f"{where}={node!r} must be a mapping")
    for key in node:
        if key not in allowed:
            raise ClaimsError(f"{where}: unknown key {key!r} (allowed: {', '.join(allowed)})")
    for key in required:
        if key not in node:
            raise ClaimsError(f"{where}: missing key {key!r}")


def direction(documented) -> str | None:
    """The direction of a directional claim ('above', ...), None otherwise."""
    if isinstance(documented, dict) and len(documented) == 1:
        key = next(iter(documented))
        return key if key in DIRECTIONS else None
    return None


def _check_documented(where: str, kind: str, doc) -> None:
    if kind == "quantitative":
        if _number(doc):
            return
        _keys(where, doc, ("value", "ci", "n"), ("value", "ci", "n"))
        if not _number(doc["value"]) or not _pair(doc["ci"]) or not isinstance(doc["n"], int):
            raise ClaimsError(f"{where}={doc!r} must be a number, or value, ci: [lo, hi] and n")
    elif kind == "directional":
        key = direction(doc)
        if key is None:
            raise ClaimsError(f"{where}={doc!r} must be one of {{above|below: x}} or "
                              "{between: [lo, hi]}")
        if not (_pair(doc[key]) if key == "between" else _number(doc[key])):
            raise ClaimsError(f"{where}.{key}={doc[key]!r} is not a number or [lo, hi]")
    elif kind == "question":
        _keys(where, doc, ("at", "below", "above"), ("at", "below", "above"))
        if not _number(doc["at"]) or not all(isinstance(doc[k], str) and doc[k].strip()
                                              for k in ("below", "above")):
            raise ClaimsError(f"{where}={doc!r} must be {{at: x, below: text, above: text}}")
    elif kind == "invariance":
        _keys(where, doc, ("value",))
        if "value" in doc and not _number(doc["value"]):
            raise ClaimsError(f"{where}.value={doc['value']!r} must be a number")
    elif kind == "curve":
        _keys(where, doc, ("formula", "origin"), ("formula", "origin"))
        if not isinstance(doc["formula"], str) or doc["origin"] not in (0, 1):
            raise ClaimsError(f"{where}={doc!r}: formula must be a string, origin 0 or 1")


def _check_spec(where: str, spec) -> None:
    """A row selection's values: scalars, and `range` a pair."""
    for key, value in spec.items():
        if key == "range":
            if not _pair(value):
                raise ClaimsError(f"{where}.range={value!r} must be [lo, hi]")
        elif value is not None and not isinstance(value, str | int | float):
            raise ClaimsError(f"{where}.{key}={value!r} must be a scalar")


def _check_rows(where: str, rows, partial: bool = False) -> None:
    if not isinstance(rows, dict) or not rows:
        raise ClaimsError(f"{where}={rows!r} must be a mapping of named row selections")
    for name, spec in rows.items():
        if not NAME.match(str(name)):
            raise ClaimsError(f"{where}: row name {name!r} must be a lower-case identifier")
        if not isinstance(spec, dict) or (not partial and "quantity" not in spec):
            raise ClaimsError(f"{where}.{name}={spec!r} must be a mapping with a 'quantity'")
        _check_spec(f"{where}.{name}", spec)


def _check_measure(where: str, measure, fits: tuple) -> None:
    _keys(where, measure, ("fit", "rows", "value"), ("fit", "rows"))
    if measure["fit"] not in fits:
        raise ClaimsError(f"{where}.fit={measure['fit']!r} is not a fitted study "
                          f"(one of {', '.join(fits)})")
    _check_rows(f"{where}.rows", measure["rows"])
    if "value" not in measure and len(measure["rows"]) != 1:
        raise ClaimsError(f"{where}: several rows need a `value` expression")
    if "value" in measure:
        _check_expression(f"{where}.value", measure["value"])


def _check_expression(where: str, expression) -> None:
    """An expression string the ledger's whitelist evaluator accepts (expressions.parse)."""
    if not isinstance(expression, str):
        raise ClaimsError(f"{where}={expression!r} must be an expression string")
    try:
        parse(expression, where)
    except ExpressionError as err:
        raise ClaimsError(str(err)) from None


def _check_tolerance(where: str, kind: str, tol) -> None:
    allowed = {"quantitative": ("half_unit",), "invariance": ("half_unit",), "curve": ("rel",),
               "directional": (), "question": ()}[kind]
    _keys(where, tol, (*allowed, "reason"), (*allowed, "reason"))
    if not isinstance(tol["reason"], str) or not tol["reason"].strip():
        raise ClaimsError(f"{where}.reason={tol['reason']!r} must say why (a non-empty string)")
    for key in allowed:
        if not _number(tol[key]) or tol[key] < 0:
            raise ClaimsError(f"{where}.{key}={tol[key]!r} must be a number >= 0")


def _check_readings(where: str, readings, primary: dict, open_settings: set) -> None:
    if not isinstance(readings, list) or not readings:
        raise ClaimsError(f"{where}={readings!r} must be a non-empty list")
    for i, reading in enumerate(readings):
        at = f"{where}[{i}]"
        _keys(at, reading, ("setting", "label", "rows", "statistic", "value", "documented",
                            "experiment", "premise"), ("setting", "label"))
        if reading["setting"] in open_settings and not (reading.get("experiment")
                                                        or reading.get("premise")):
            raise ClaimsError(f"{at}.setting={reading['setting']!r} is a setting a note leaves "
                              "open on these rows: its readings are that note's "
                              "(notes.<note>.readings)")
        for flag in ("experiment", "premise"):
            if not isinstance(reading.get(flag, False), bool):
                raise ClaimsError(f"{at}.{flag}={reading[flag]!r} must be true or false")
        if reading.get("experiment") and reading.get("premise"):
            raise ClaimsError(f"{at}: a reading is an experiment or the premise, not both")
        if "value" in reading:
            _check_expression(f"{at}.value", reading["value"])
        if not {"rows", "statistic", "value", "documented"} & set(reading):
            raise ClaimsError(f"{at}: a reading changes the rows, statistic, value or "
                              "documented value")
        if "rows" in reading:
            _check_rows(f"{at}.rows", reading["rows"], partial=True)
            for name in reading["rows"]:
                if name not in primary:
                    raise ClaimsError(f"{at}.rows.{name}: no such row in measure.rows")
        if reading.get("statistic", "median") not in STATISTICS:
            raise ClaimsError(f"{at}.statistic={reading['statistic']!r} is not one of "
                              f"{list(STATISTICS)}")


def check_entry(entry, fits: tuple = FITS, earlier: set | None = None,
                notes: dict | None = None) -> None:
    """Raise ClaimsError for the first problem of one entry (message: '<id>: <key>...').
    `notes`: the claims file's notes (an entry's note must be one; None: not checked)."""
    if not isinstance(entry, dict):
        raise ClaimsError(f"entry {entry!r} must be a mapping")
    name = entry.get("id")
    if not isinstance(name, str) or not ID.match(name):
        raise ClaimsError(f"id={name!r} must be a string of letters, digits, '.', '_', '-'")
    _keys(name, entry, ENTRY_KEYS, ("note", "claim", "kind"))
    if notes is not None and entry["note"] not in notes:
        raise ClaimsError(f"{name}: note={entry['note']!r} is not one of {list(notes)} "
                          "(the claims file's notes:)")
    if not isinstance(entry["claim"], str) or not entry["claim"].strip():
        raise ClaimsError(f"{name}: claim={entry['claim']!r} must quote the note")
    kind = entry["kind"]
    if kind not in KINDS:
        raise ClaimsError(f"{name}: kind={kind!r} is not one of {list(KINDS)}")
    for key in ("extends", "requires"):
        if key in entry and entry[key] not in (earlier or set()):
            raise ClaimsError(f"{name}: {key}={entry[key]!r} is not an earlier entry")
    if "restates" in entry:
        if entry["restates"] not in (earlier or set()):
            raise ClaimsError(f"{name}: restates={entry['restates']!r} is not an earlier entry")
        extra = [k for k in entry if k not in ("id", "note", "claim", "kind", "restates")]
        if extra:
            raise ClaimsError(f"{name}: a restatement has no {extra[0]!r} of its own")
        return
    if kind == "not_measurable":
        if not isinstance(entry.get("why"), str) or not entry["why"].strip():
            raise ClaimsError(f"{name}: why={entry.get('why')!r} must say why it is not "
                              "measurable")
        extra = [k for k in entry if k in ("documented", "statistic", "measure", "tolerance")]
        if extra:
            raise ClaimsError(f"{name}: a not_measurable entry has no {extra[0]!r}")
        return
    if kind == "definition":
        _keys(name, entry, ("id", "note", "claim", "kind", "by_construction", "test"),
              ("by_construction", "test"))
        for key in ("by_construction", "test"):
            if not isinstance(entry[key], str) or not entry[key].strip():
                raise ClaimsError(f"{name}: {key}={entry[key]!r} must be a non-empty string")
        return
    if kind == "arithmetic":
        _keys(name, entry, ("id", "note", "claim", "kind", "documented", "measure", "tolerance",
                            "extends"), ("documented", "measure", "tolerance"))
        _keys(f"{name}: measure", entry["measure"], ("value",), ("value",))
        _check_expression(f"{name}: measure.value", entry["measure"]["value"])
        if not _number(entry["documented"]):
            raise ClaimsError(f"{name}: documented={entry['documented']!r} must be a number")
        _check_tolerance(f"{name}: tolerance", "quantitative", entry["tolerance"])
        return
    for key in ("documented", "statistic", "measure", "tolerance"):
        if key not in entry:
            raise ClaimsError(f"{name}: missing key {key!r}")
    _check_documented(f"{name}: documented", kind, entry["documented"])
    if kind == "curve":
        _check_expression(f"{name}: documented.formula", entry["documented"]["formula"])
    if "by_construction" in entry and (not isinstance(entry["by_construction"], str)
                                       or not entry["by_construction"].strip()):
        raise ClaimsError(f"{name}: by_construction={entry['by_construction']!r} must say why")
    if entry.get("source", "sample") not in SOURCES:
        raise ClaimsError(f"{name}: source={entry['source']!r} is not one of {list(SOURCES)}")
    if "seeds" in entry and (not isinstance(entry["seeds"], int) or entry["seeds"] < 1):
        raise ClaimsError(f"{name}: seeds={entry['seeds']!r} must be a positive integer")
    if entry["statistic"] not in STATISTICS:
        raise ClaimsError(f"{name}: statistic={entry['statistic']!r} is not one of "
                          f"{list(STATISTICS)}")
    _check_measure(f"{name}: measure", entry["measure"], fits)
    _check_tolerance(f"{name}: tolerance", kind, entry["tolerance"])
    if "readings" in entry:
        open_settings = {r["setting"] for note, spec in (notes or {}).items()
                         for r in spec.get("readings", [])
                         if entry["measure"]["fit"] in r.get("fits", [note])}
        _check_readings(f"{name}: readings", entry["readings"], entry["measure"]["rows"],
                        open_settings)
    if entry.get("role", ROLES[0]) not in ROLES:
        raise ClaimsError(f"{name}: role={entry['role']!r} is not one of {list(ROLES)}")
    if entry.get("scale", SCALES[0]) not in SCALES:
        raise ClaimsError(f"{name}: scale={entry['scale']!r} is not one of {list(SCALES)}")
    if "not_comparable" in entry and (not isinstance(entry["not_comparable"], str)
                                      or not entry["not_comparable"].strip()):
        raise ClaimsError(f"{name}: not_comparable={entry['not_comparable']!r} must say why")
    if "reference" in entry and not _number(entry["reference"]):
        raise ClaimsError(f"{name}: reference={entry['reference']!r} must be a number")
    if "domain" in entry:
        _check_domain(f"{name}: domain", entry["domain"])


def fingerprint(entries: list[dict], notes: dict | None = None, fits: dict | None = None,
                frozen: dict | None = None) -> str:
    """sha256 (16 hex digits) of the rules the verdicts follow: every entry's rules (its kind,
    documented value, statistic, measurement, tolerance, readings, source, what it restates or
    extends), by id; the notes' stated settings, domains and open settings with the numbers
    that identify them; the fits' seed and scale rules; the readings a frozen protocol chose
    (`frozen`: depthlab.claims.protocol); and the code of the verdicts (RULE_CODE) and of the
    studies' fits and the modules they use (their estimators: every study module but those
    that only draw or declare, RENDERING)."""
    rules = {e["id"]: {k: e[k] for k in RULE_KEYS if k in e} for e in entries}
    digest = hashlib.sha256(json.dumps([rules, notes or {}, fits or {}, frozen or {}],
                                       sort_keys=True).encode())
    here = Path(__file__).parent
    estimators = [here.parent / "studies" / "fits.py",
                  *(path for path in sorted(here.parent.glob("studies/*/*.py"))
                    if path.name not in RENDERING)]
    for path in [*(here / name for name in RULE_CODE), *estimators]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _check_changelog(log) -> None:
    if not isinstance(log, list) or not log:
        raise ClaimsError("changelog: must be a non-empty list")
    for i, item in enumerate(log):
        _keys(f"changelog[{i}]", item, ("date", "change", "why", "results_seen", "fingerprint"),
              ("date", "change", "why", "results_seen"))


def check_claims(data, fits: tuple = FITS) -> list[dict]:
    """The entries of a parsed claims file, or ClaimsError for the first problem."""
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ClaimsError("must be a mapping with a list under 'claims'")
    for key in data:
        if key not in TOP_KEYS:
            raise ClaimsError(f"unknown top-level key {key!r} (allowed: {', '.join(TOP_KEYS)})")
    if "changelog" in data:
        _check_changelog(data["changelog"])
    notes = data.get("notes", {})
    _check_notes(notes)
    seen: set[str] = set()
    for entry in data["claims"]:
        check_entry(entry, fits, seen, notes if "notes" in data else None)
        if entry["id"] in seen:
            raise ClaimsError(f"id={entry['id']!r} is used twice")
        seen.add(entry["id"])
    _check_fits(data.get("fits", {}), fits)
    _check_identifying(notes, {e["id"]: e for e in data["claims"]})
    return data["claims"]


def _check_notes(notes) -> None:
    if not isinstance(notes, dict):
        raise ClaimsError(f"notes={notes!r} must map a note to its stated settings")
    for note, spec in notes.items():
        if not NAME.match(str(note)):
            raise ClaimsError(f"notes: {note!r} must be a lower-case identifier")
        _keys(f"notes.{note}", spec, NOTE_KEYS, ("title", "source", "domain"))
        if spec["source"] not in SOURCES:
            raise ClaimsError(f"notes.{note}.source={spec['source']!r} is not one of "
                              f"{list(SOURCES)}")
        if "seeds" in spec and (not isinstance(spec["seeds"], int) or spec["seeds"] < 1):
            raise ClaimsError(f"notes.{note}.seeds={spec['seeds']!r} must be a positive integer")
        if not isinstance(spec.get("settings", {}), dict):
            raise ClaimsError(f"notes.{note}.settings must be a mapping of stated settings")
        _check_domain(f"notes.{note}.domain", spec["domain"])
        if spec["domain"].get("seeds", 0) < LEAST_SEEDS:
            raise ClaimsError(f"notes.{note}.domain.seeds={spec['domain'].get('seeds')!r}: a "
                              f"note's domain holds at least {LEAST_SEEDS} seeds (a bootstrap "
                              "interval of fewer under-covers)")
        for i, reading in enumerate(spec.get("readings", [])):
            _check_open_setting(f"notes.{note}.readings[{i}]", reading)


def _check_open_setting(where: str, reading) -> None:
    """A setting a note leaves open: its primary label among its labels, each label a map of
    the rows it varies (`set` columns, an `arm` rename, a `quantity` rename) or a statistic."""
    _keys(where, reading, READING_KEYS, ("setting", "primary", "why", "labels"))
    _text(f"{where}.why", reading["why"])
    labels = reading["labels"]
    if not isinstance(labels, dict) or reading["primary"] not in labels or len(labels) < 2:
        raise ClaimsError(f"{where}.labels must map the primary label {reading['primary']!r} "
                          "and at least one other to how each reads a row")
    for label, spec in labels.items():
        at = f"{where}.labels.{label}"
        _keys(at, spec or {}, LABEL_KEYS)
        for key in ("set", "arm", "quantity"):
            if key in spec:
                _keys(f"{at}.{key}", spec[key], tuple(spec[key]))
                _check_spec(f"{at}.{key}", spec[key])
        if spec.get("statistic", "median") not in STATISTICS:
            raise ClaimsError(f"{at}.statistic={spec['statistic']!r} is not one of "
                              f"{list(STATISTICS)}")
    for key in ("by", "quantities", "fits", "entries"):
        if key in reading and (not isinstance(reading[key], list) or not reading[key]):
            raise ClaimsError(f"{where}.{key}={reading[key]!r} must be a non-empty list")


def _check_domain(where: str, domain) -> None:
    """{depth, seeds, d_model: the least each, reason: why}: where the estimators apply."""
    _keys(where, domain, (*DOMAIN_KEYS, "reason"), ("reason",))
    if not isinstance(domain["reason"], str) or not domain["reason"].strip():
        raise ClaimsError(f"{where}.reason={domain['reason']!r} must say why")
    for key in DOMAIN_KEYS:
        if key in domain and (isinstance(domain[key], bool) or not isinstance(domain[key], int)
                              or domain[key] < 1):
            raise ClaimsError(f"{where}.{key}={domain[key]!r} must be a positive integer")


def _check_fits(rules, fits: tuple) -> None:
    if not isinstance(rules, dict):
        raise ClaimsError(f"fits={rules!r} must map a fit to {{seeds, run, scale}}")
    for fit, spec in rules.items():
        if fit not in fits:
            raise ClaimsError(f"fits: {fit!r} is not one of {list(fits)}")
        _keys(f"fits.{fit}", spec, ("seeds", "run", "scale"), ("seeds", "run"))
        if isinstance(spec["seeds"], bool) or not isinstance(spec["seeds"], int) \
                or spec["seeds"] < 2:
            raise ClaimsError(f"fits.{fit}.seeds={spec['seeds']!r} must be an integer >= 2")


def _check_identifying(notes: dict, entries: dict) -> None:
    """Each open setting's identifying numbers (`by`) are entries of its note that measure."""
    for note, spec in notes.items():
        for i, reading in enumerate(spec.get("readings", [])):
            for entry_id in reading.get("by", []):
                entry = entries.get(entry_id)
                if entry is None or "restates" in entry or entry.get("note") != note:
                    raise ClaimsError(f"notes.{note}.readings[{i}].by: {entry_id!r} is not an "
                                      f"entry of {note} that measures")


def read_claims_file(path: str | Path) -> dict:
    """The parsed claims file; ClaimsError (one line, naming the file) if missing or not YAML."""
    path = Path(path)
    if not path.is_file():
        raise ClaimsError(f"claims={str(path)!r}: no such file")
    try:
        return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as err:
        first = str(err).splitlines()[0]
        raise ClaimsError(f"claims={str(path)!r}: not YAML ({first})") from None


def load_claims(path: str | Path, fits: tuple = FITS) -> dict:
    """The checked claims file ({claims, notes, fits}); ClaimsError (one line, naming the file)
    if the file is missing, not YAML, or has a bad entry."""
    data = read_claims_file(path)
    try:
        entries = check_claims(data, fits)
    except ClaimsError as err:
        raise ClaimsError(f"claims file {path}: {err}") from None
    return {"claims": entries, "notes": data.get("notes", {}), "fits": data.get("fits", {})}
