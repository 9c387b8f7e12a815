"""The notes' open settings, read on every entry whose rows they vary (docs/claims_rules.md,
"Readings").

A setting a note leaves open (stack96's loss, varsplit's activation, ...) is declared once, on
the note whose numbers identify it (`notes.<note>.readings` in the claims file): its primary
label, the labels it may be read at, and how each label maps a row. A label maps a row by
`set` (columns the row selects, e.g. `activation: gelu`), `arm` (the arm that holds that cell,
e.g. `grad: sens_loss`; a row of an arm not in the map keeps its arm) and `quantity` (another
fit quantity, e.g. the branch variance for the increment); or it changes the statistic. A
setting varies the rows of its `fits` (default: the declaring note's own study) whose quantity
is one of its `quantities` (default: all), in every entry of every note (or the `entries` it
names): the same measurement gets the same readings whichever note's sentence reads it.

So every entry is read at every label of every setting that varies it: the primary cell is
every setting at its primary label, and each other label changes one setting of that cell.
Pure functions of the claims file's dicts.
"""

from __future__ import annotations


def _varied(reading: dict, spec: dict, fit: str) -> bool:
    quantities = reading.get("quantities")
    return fit in reading.get("fits", [reading["note"]]) and (
        quantities is None or spec.get("quantity") in quantities)


def _applies(reading: dict, entry_id: str) -> bool:
    """Whether a setting's `entries` (ids, or prefixes ending in '.') name the entry."""
    names = reading.get("entries")
    return names is None or any(entry_id == n or (n.endswith(".") and entry_id.startswith(n))
                                for n in names)


def mapped(spec: dict, label: dict) -> dict:
    """One row selection read at a label: its arm renamed where the label's `arm` maps it, its
    quantity where `quantity` does, then the label's `set` columns."""
    out = dict(spec)
    if "arm" in out and out["arm"] in label.get("arm", {}):
        out["arm"] = label["arm"][out["arm"]]
    if out.get("quantity") in label.get("quantity", {}):
        out["quantity"] = label["quantity"][out["quantity"]]
    return {**out, **label.get("set", {})}


def every_setting(notes: dict) -> list[dict]:
    """Every note's open settings, each with the note that declares it (`note`)."""
    return [{"note": note, **r} for note, spec in notes.items()
            for r in spec.get("readings", [])]


def open_settings(entry: dict, notes: dict) -> list[dict]:
    """The open settings (of any note) that vary this entry."""
    measure = entry["measure"]
    return [r for r in every_setting(notes) if _applies(r, entry["id"]) and (
        any((spec or {}).get("statistic") for spec in r["labels"].values())
        and entry["note"] == r["note"]
        or any(_varied(r, spec, measure["fit"]) for spec in measure["rows"].values()))]


def _read(rows: dict, reading: dict, label: str, fit: str) -> dict:
    spec = reading["labels"][label] or {}
    return {name: mapped(row, spec) if _varied(reading, row, fit) else row
            for name, row in rows.items()}


def primary_rows(entry: dict, notes: dict) -> dict:
    """The entry's rows at the primary cell: every open setting that varies it at its primary
    label."""
    rows = entry["measure"]["rows"]
    for reading in open_settings(entry, notes):
        rows = _read(rows, reading, reading["primary"], entry["measure"]["fit"])
    return rows


def note_readings(entry: dict, notes: dict) -> list[dict]:
    """The entry read at every other label of each open setting that varies it, one setting
    changed from the primary cell at a time: readings in the entry-level form (setting, label,
    rows: the full rows at that reading, statistic where the label changes it), each naming the
    note that declares its setting (`owner`)."""
    base = primary_rows(entry, notes)
    out = []
    for reading in open_settings(entry, notes):
        for label, spec in reading["labels"].items():
            if label == reading["primary"]:
                continue
            read = {"setting": reading["setting"], "label": label, "owner": reading["note"],
                    "rows": _read(base, reading, label, entry["measure"]["fit"])}
            if spec and "statistic" in spec:
                read["statistic"] = spec["statistic"]
            out.append(read)
    return out
