"""The schema of config/claims.yaml, checked before any job runs (workflow/rules/common.smk).

One entry per numeric or directional claim of the notes:

    - id: stack96.grad_ratio.pre.L96          # unique: letters, digits, . _ -
      note: stack96                           # NOTES
      claim: "Pre-LN's 2.89 starves the late ones by 2.9x"   # one line, quoted from the note
      documented: 2.89                        # a number, {value: x, ci: [lo, hi]}, or a direction:
                                              # {above: x}, {below: x}, {between: [lo, hi]},
                                              # {contains: x} (the measured interval includes x)
      reference: 1                            # optional, numbers only: the no-effect value
      measure:                                # one row of results/fits/<fit>.parquet ...
        fit: stack96
        where: {quantity: grad_ratio, arm: grad, placement: pre, depth: 96, variant: baseline}
        field: median                         # FIELDS
      # ... or  measure: {not_measured: "<why the pipeline cannot measure it>"}
      tolerance:                              # set from the note's precision, before any run
        abs: 0.005                            # numbers: exactly one of rel, abs, documented_ci
        compare: seed_range                   # COMPARES: what of the measurement is compared
        reason: "..."                         # required
      setting_dependent: "..."                # optional: the note leaves a setting open

Light on purpose (PyYAML and the target declarations only): the Snakefile reads it at parse time.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from depthlab.pipeline.settings import ConfigError
from depthlab.studies import STUDIES

NOTES = ("stack96", "varsplit", "theory096", "monitor", "training")
FITS = tuple(sorted(STUDIES))  # the studies the pipeline fits
FIELDS = ("median", "mean", "seed0", "min", "max")
COMPARES = ("point", "seed_range", "ci")
DIRECTIONS = ("above", "below", "between", "contains")
REQUIRED = ("id", "note", "claim", "documented", "measure", "tolerance")
OPTIONAL = ("reference", "setting_dependent")
ID = re.compile(r"^[A-Za-z0-9_.\-]+$")


class ClaimsError(ConfigError):
    """A bad claims file: one line naming the file, the entry id, the key and the value."""


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _pair(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(map(_number, value)) \
        and value[0] <= value[1]


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
    """The direction of a directional claim ('above', ...), None for a numeric one."""
    if isinstance(documented, dict) and len(documented) == 1:
        key = next(iter(documented))
        return key if key in DIRECTIONS else None
    return None


def _check_documented(where: str, doc) -> None:
    if _number(doc):
        return
    if not isinstance(doc, dict):
        raise ClaimsError(f"{where}={doc!r} must be a number or a mapping")
    kind = direction(doc)
    if kind == "between":
        if not _pair(doc[kind]):
            raise ClaimsError(f"{where}.{kind}={doc[kind]!r} must be [lo, hi] with lo <= hi")
    elif kind is not None:
        if not _number(doc[kind]):
            raise ClaimsError(f"{where}.{kind}={doc[kind]!r} must be a number")
    else:
        _keys(where, doc, ("value", "ci", *DIRECTIONS), ("value",))
        if not _number(doc["value"]):
            raise ClaimsError(f"{where}.value={doc['value']!r} must be a number")
        if "ci" in doc and not _pair(doc["ci"]):
            raise ClaimsError(f"{where}.ci={doc['ci']!r} must be [lo, hi] with lo <= hi")
        extra = [k for k in doc if k in DIRECTIONS]
        if extra:
            raise ClaimsError(f"{where}: {extra[0]!r} cannot be combined with 'value'")


def _check_measure(where: str, measure, fits: tuple) -> None:
    if isinstance(measure, dict) and "not_measured" in measure:
        _keys(where, measure, ("not_measured",))
        if not isinstance(measure["not_measured"], str) or not measure["not_measured"].strip():
            raise ClaimsError(f"{where}.not_measured={measure['not_measured']!r} must say why")
        return
    _keys(where, measure, ("fit", "where", "field"), ("fit", "where", "field"))
    if measure["fit"] not in fits:
        raise ClaimsError(f"{where}.fit={measure['fit']!r} is not a fitted study "
                          f"(one of {', '.join(fits)})")
    sel = measure["where"]
    if not isinstance(sel, dict) or "quantity" not in sel:
        raise ClaimsError(f"{where}.where={sel!r} must be a mapping with a 'quantity'")
    for key, value in sel.items():
        if value is not None and not isinstance(value, str | int | float):
            raise ClaimsError(f"{where}.where.{key}={value!r} must be a scalar")
    if measure["field"] not in FIELDS:
        raise ClaimsError(f"{where}.field={measure['field']!r} is not one of {list(FIELDS)}")


def _check_tolerance(where: str, tol, doc) -> None:
    _keys(where, tol, ("rel", "abs", "documented_ci", "compare", "reason"), ("reason",))
    if not isinstance(tol["reason"], str) or not tol["reason"].strip():
        raise ClaimsError(f"{where}.reason={tol['reason']!r} must say why (a non-empty string)")
    compare = tol.get("compare", "point")
    if compare not in COMPARES:
        raise ClaimsError(f"{where}.compare={compare!r} is not one of {list(COMPARES)}")
    bands = [k for k in ("rel", "abs", "documented_ci") if k in tol]
    kind = direction(doc)
    if kind is not None:
        if bands:
            raise ClaimsError(f"{where}.{bands[0]}={tol[bands[0]]!r}: a directional claim "
                              f"({kind}) has no band, only compare")
        if kind == "contains" and compare == "point":
            raise ClaimsError(f"{where}.compare='point': 'contains' needs seed_range or ci")
        return
    if len(bands) != 1:
        raise ClaimsError(f"{where}: needs exactly one of rel, abs, documented_ci, got "
                          f"{bands or 'none'}")
    band = bands[0]
    if band == "documented_ci":
        if tol[band] is not True or not (isinstance(doc, dict) and "ci" in doc):
            raise ClaimsError(f"{where}.documented_ci={tol[band]!r} needs true and a "
                              "documented ci")
    elif not _number(tol[band]) or tol[band] < 0:
        raise ClaimsError(f"{where}.{band}={tol[band]!r} must be a number >= 0")


def check_entry(entry, fits: tuple = FITS) -> None:
    """Raise ClaimsError for the first problem of one entry (message: '<id>: <key>...')."""
    if not isinstance(entry, dict):
        raise ClaimsError(f"entry {entry!r} must be a mapping")
    name = entry.get("id")
    if not isinstance(name, str) or not ID.match(name):
        raise ClaimsError(f"id={name!r} must be a string of letters, digits, '.', '_', '-'")
    _keys(name, entry, REQUIRED + OPTIONAL, REQUIRED)
    if entry["note"] not in NOTES:
        raise ClaimsError(f"{name}: note={entry['note']!r} is not one of {list(NOTES)}")
    if not isinstance(entry["claim"], str) or not entry["claim"].strip():
        raise ClaimsError(f"{name}: claim={entry['claim']!r} must quote the note")
    _check_documented(f"{name}: documented", entry["documented"])
    if "reference" in entry and (not _number(entry["reference"])
                                 or direction(entry["documented"])):
        raise ClaimsError(f"{name}: reference={entry['reference']!r} must be a number, and "
                          "only for a numeric claim")
    _check_measure(f"{name}: measure", entry["measure"], fits)
    _check_tolerance(f"{name}: tolerance", entry["tolerance"], entry["documented"])
    if "setting_dependent" in entry and not isinstance(entry["setting_dependent"], str):
        raise ClaimsError(f"{name}: setting_dependent={entry['setting_dependent']!r} must be "
                          "a string saying which setting")


def check_claims(data, fits: tuple = FITS) -> list[dict]:
    """The entries of a parsed claims file, or ClaimsError for the first problem."""
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ClaimsError("must be a mapping with a list under 'claims'")
    for key in data:
        if key not in ("claims", "reasons"):
            raise ClaimsError(f"unknown top-level key {key!r} (allowed: claims, reasons)")
    seen = set()
    for entry in data["claims"]:
        check_entry(entry, fits)
        if entry["id"] in seen:
            raise ClaimsError(f"id={entry['id']!r} is used twice")
        seen.add(entry["id"])
    return data["claims"]


def load_claims(path: str | Path, fits: tuple = FITS) -> list[dict]:
    """The checked entries of a claims file; ClaimsError (one line, naming the file) if the
    file is missing, not YAML, or has a bad entry."""
    path = Path(path)
    if not path.is_file():
        raise ClaimsError(f"claims={str(path)!r}: no such file")
    try:
        data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as err:
        first = str(err).splitlines()[0]
        raise ClaimsError(f"claims={str(path)!r}: not YAML ({first})") from None
    try:
        return check_claims(data, fits)
    except ClaimsError as err:
        raise ClaimsError(f"claims file {path}: {err}") from None
