"""The ledger as a reader sees it: results/claims.md and .html, and docs/RESULTS.md (the counts,
the readings each note's numbers allow, and every row with its value, band and outcome)."""

from __future__ import annotations

import html

import pandas as pd

from depthlab.analysis.tables import HTML_STYLE
from depthlab.claims.ledger import counts
from depthlab.claims.outcomes import BY_CONSTRUCTION, OUTCOMES, QUESTION
from depthlab.claims.schema import NOTES

COLUMNS = {"id": "id", "claim": "claim (the note)", "documented": "note", "shown": "measured",
           "verdict": "outcome", "tolerance": "precision", "readings": "allowed readings",
           "sensitivity": "excluded readings (sensitivity)", "experiments": "experiments",
           "by_construction": "by construction", "notes": "notes"}


def count_table(table: pd.DataFrame) -> pd.DataFrame:
    """Outcome counts per note and overall (claims; all entries with restatements in
    brackets)."""
    rows = []
    for note in [*[n for n in NOTES if n in set(table["note"])], "all"]:
        sub = table if note == "all" else table[table["note"] == note]
        every, primary = counts(sub), counts(sub, primary_only=True)
        rows.append({"note": note, **{o: f"{primary[o]} ({every[o]})" for o in OUTCOMES},
                     "entries": f"{int((sub['restates'] == '').sum())} ({len(sub)})"})
    return pd.DataFrame(rows)


def shown(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The ledger as displayed (empty columns dropped), and the distinct tolerance reasons
    referred to as [1], [2]..."""
    reasons = [r for r in dict.fromkeys(table["tolerance_reason"]) if r]
    frame = table[list(COLUMNS)].rename(columns=COLUMNS).copy()
    frame["precision"] = [
        f"{t} [{reasons.index(r) + 1}]" if r else t
        for t, r in zip(table["tolerance"], table["tolerance_reason"], strict=True)]
    keep = [c for c in frame.columns if (frame[c].astype(str) != "").any()]
    return frame[keep], reasons


def _by_note(table: pd.DataFrame):
    for note in [n for n in NOTES if n in set(table["note"])]:
        yield note, table[table["note"] == note]


INTRO = ("Every numeric or directional sentence of the four notes, in note order, then the "
         "claims of the fixes' papers (note 'fixes'), measured on this run's fits and graded "
         "by the rules of depthlab.claims (docs/claims_rules.md), written down before the "
         "results were seen. A number the note measured is compared with the band of its "
         "statistic at its seed count; a direction or a prediction with our 95% interval. "
         "Counts: claims that are not restatements, with all entries in brackets; "
         f"'{BY_CONSTRUCTION}' is listed, never counted as evidence.")


def to_markdown(table: pd.DataFrame) -> str:
    """results/claims.md: the counts, then one table per note with its tolerance reasons."""
    lines = ["# Claims of the notes, measured", "", INTRO, "",
             count_table(table).to_markdown(index=False), ""]
    for note, sub in _by_note(table):
        frame, reasons = shown(sub)
        lines += [f"## {note}", "", frame.to_markdown(index=False), "", "Precision reasons:", ""]
        lines += [f"{i}. {reason}" for i, reason in enumerate(reasons, start=1)] + [""]
    return "\n".join(lines)


CSS = HTML_STYLE + """
<style>
.claims {width: 100%; min-width: 1000px;}
.claims td, .claims th {text-align: left; vertical-align: top;}
.v-supported {background: #d8f0d8;} .v-contradicted {background: #f7d4d4;}
.v-inconclusive {background: #fff3c4;} .v-other {background: #eeeeee;}
</style>"""


def _css(verdict: str) -> str:
    first = verdict.split(":")[0]
    return first if first in ("supported", "contradicted", "inconclusive") else "other"


def _html_table(frame: pd.DataFrame) -> str:
    text = frame.to_html(index=False, classes="depthlab claims", border=0, escape=True)
    for verdict in sorted(set(frame.get("outcome", [])), key=len, reverse=True):
        text = text.replace(f"<td>{html.escape(verdict)}</td>",
                            f'<td class="v-{_css(verdict)}">{html.escape(verdict)}</td>')
    return text


def to_html(table: pd.DataFrame) -> str:
    """results/claims.html: the same as claims.md (the report's first page embeds it)."""
    parts = [CSS, "<h2>Claims of the notes, measured</h2>", f"<p>{html.escape(INTRO)}</p>",
             count_table(table).to_html(index=False, classes="depthlab", border=0)]
    for note, sub in _by_note(table):
        frame, reasons = shown(sub)
        items = "".join(f"<li>{html.escape(r)}</li>" for r in reasons)
        parts += [f"<h3>{note}</h3>", _html_table(frame),
                  f"<p>Precision reasons:</p><ol>{items}</ol>"]
    return "\n".join(parts) + "\n"


def summary_line(table: pd.DataFrame) -> str:
    """One sentence of counts (the README's summary line)."""
    c = counts(table, primary_only=True)
    n = int((table["restates"] == "").sum()) - c[QUESTION]
    parts = [f"{c['supported']} supported", f"{c['contradicted']} contradicted",
             f"{c['inconclusive']} inconclusive",
             f"{c[BY_CONSTRUCTION]} hold by construction (not counted)",
             f"{c['not measurable']} not measurable here"]
    parts += [f"{c[o]} {o}" for o in ("not comparable", "not measured") if c[o]]
    if c[QUESTION]:
        parts.append(f"and {c[QUESTION]} open question{'s' * (c[QUESTION] > 1)} of the notes "
                     "measured (no claim, not counted)")
    restating = int((table["restates"] != "").sum())
    return (", ".join(parts) + f" (of {n} claims; {restating} more entries restate one "
            "of them)")


def _row_line(r: pd.Series) -> str:
    extra = "".join(f" {label}: {r[key]}." for key, label in (
        ("readings", "Allowed readings"), ("sensitivity", "Excluded readings (sensitivity)"),
        ("experiments", "Experiments beside the verdict"),
        ("by_construction", "By construction")) if r[key])
    notes = f" ({r['notes']})" if r["notes"] else ""
    return (f"- `{r['id']}`: “{r['claim']}” — note: {r['documented']}; measured: {r['shown']}; "
            f"**{r['verdict']}**{notes}.{extra}")


def readings_table(readings: pd.DataFrame) -> pd.DataFrame:
    """The readings of each open setting, with how many identifying numbers fall outside."""
    frame = readings.copy()
    frame["allowed"] = ["excluded" if x else "allowed" for x in frame["excluded"]]
    frame["outside / graded"] = [f"{o} / {g}" for o, g in
                                 zip(frame["outside"], frame["graded"], strict=True)]
    return frame[["note", "setting", "label", "outside / graded", "allowed", "by"]]


def results_doc(table: pd.DataFrame, readings: pd.DataFrame, rules: str, source: str) -> str:
    """docs/RESULTS.md: how a claim is graded (`rules`, from docs/claims_rules.md), the
    counts, the readings each note allows, and every row by note with its value and band."""
    lines = ["# Results: the claims of the four notes and of the fixes' papers, measured", "",
             f"Generated by `snakemake --cores all docs_results` from {source}; do not edit by "
             "hand (the rules below come from `docs/claims_rules.md`).", "", rules.strip(), "",
             "## Counts", "", summary_line(table) + ".", "",
             count_table(table).to_markdown(index=False), "",
             "## The readings each note's numbers allow", "",
             readings_table(readings).to_markdown(index=False), ""]
    for note, sub in _by_note(table):
        lines += [f"## {note}", ""]
        lines += [_row_line(r) for _, r in sub.iterrows()] + [""]
    return "\n".join(lines) + "\n"
