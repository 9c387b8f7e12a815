"""The ledger as a reader sees it: results/claims.md and .html, and docs/RESULTS.md (the counts
and every row that is not reproduced or depends on a setting, with its value)."""

from __future__ import annotations

import html

import pandas as pd

from depthlab.analysis.tables import HTML_STYLE
from depthlab.claims.ledger import VERDICTS, counts, verdict_class
from depthlab.claims.schema import NOTES

COLUMNS = {"id": "id", "claim": "claim (the note)", "documented": "note", "shown": "measured",
           "verdict": "verdict", "tolerance": "tolerance", "readings": "other readings",
           "notes": "notes"}


def count_table(table: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per note and overall (all entries; restatements in brackets)."""
    rows = []
    for note in [*[n for n in NOTES if n in set(table["note"])], "all"]:
        sub = table if note == "all" else table[table["note"] == note]
        every, primary = counts(sub), counts(sub, primary_only=True)
        rows.append({"note": note, **{v: f"{primary[v]} ({every[v]})" for v in VERDICTS},
                     "entries": f"{int((sub['restates'] == '').sum())} ({len(sub)})"})
    return pd.DataFrame(rows)


def shown(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The ledger as displayed, and the distinct tolerance reasons referred to as [1], [2]..."""
    reasons = [r for r in dict.fromkeys(table["tolerance_reason"]) if r]
    frame = table[list(COLUMNS)].rename(columns=COLUMNS).copy()
    frame["tolerance"] = [
        f"{t} [{reasons.index(r) + 1}]" if r else t
        for t, r in zip(table["tolerance"], table["tolerance_reason"], strict=True)]
    return frame, reasons


def _by_note(table: pd.DataFrame):
    for note in [n for n in NOTES if n in set(table["note"])]:
        yield note, table[table["note"] == note]


INTRO = ("Every numeric or directional sentence of the four notes, in note order, then the "
         "claims of the fixes' papers (note 'fixes'), measured on this run's fits and graded "
         "by the rules of depthlab.claims.ledger (docs/RESULTS.md, 'How a claim is graded'), "
         "which were written down before the results were seen. Counts: entries that are not "
         "restatements, with all entries in brackets.")


def to_markdown(table: pd.DataFrame) -> str:
    """results/claims.md: the counts, then one table per note with its tolerance reasons."""
    lines = ["# Claims of the notes, measured", "", INTRO, "",
             count_table(table).to_markdown(index=False), ""]
    for note, sub in _by_note(table):
        frame, reasons = shown(sub)
        lines += [f"## {note}", "", frame.to_markdown(index=False), "", "Tolerance reasons:", ""]
        lines += [f"{i}. {reason}" for i, reason in enumerate(reasons, start=1)] + [""]
    return "\n".join(lines)


CSS = HTML_STYLE + """
<style>
.claims {width: 100%; min-width: 1000px;}
.claims td, .claims th {text-align: left; vertical-align: top;}
.v-reproduced {background: #d8f0d8;} .v-not-reproduced {background: #f7d4d4;}
.v-depends-on {background: #fff3c4;} .v-not-measurable, .v-not-measured {background: #eeeeee;}
</style>"""


def _html_table(frame: pd.DataFrame) -> str:
    text = frame.to_html(index=False, classes="depthlab claims", border=0, escape=True)
    for verdict in sorted(set(frame.get("verdict", [])), key=len, reverse=True):
        css = verdict_class(verdict).replace(" ", "-")
        text = text.replace(f"<td>{html.escape(verdict)}</td>",
                            f'<td class="v-{css}">{html.escape(verdict)}</td>')
    return text


def to_html(table: pd.DataFrame) -> str:
    """results/claims.html: the same as claims.md (the report's first page embeds it)."""
    parts = [CSS, "<h2>Claims of the notes, measured</h2>", f"<p>{html.escape(INTRO)}</p>",
             count_table(table).to_html(index=False, classes="depthlab", border=0)]
    for note, sub in _by_note(table):
        frame, reasons = shown(sub)
        items = "".join(f"<li>{html.escape(r)}</li>" for r in reasons)
        parts += [f"<h3>{note}</h3>", _html_table(frame),
                  f"<p>Tolerance reasons:</p><ol>{items}</ol>"]
    return "\n".join(parts) + "\n"


def summary_line(table: pd.DataFrame) -> str:
    """One sentence of counts (the README's summary line)."""
    c = counts(table, primary_only=True)
    n = int((table["restates"] == "").sum())
    return (f"{c['reproduced']} reproduced, {c['not reproduced']} not reproduced, "
            f"{c['depends on']} depend on a setting the note leaves open, "
            f"{c['not measurable']} not measurable at initialisation"
            + (f", {c['not measured']} not measured in this grid" if c["not measured"] else "")
            + f" (of {n} claims; {len(table) - n} more entries restate one of them)")


def results_doc(table: pd.DataFrame, rules: str, source: str) -> str:
    """docs/RESULTS.md: how a claim is graded (`rules`, from docs/claims_rules.md), the
    counts, and every row that is not reproduced or depends on a setting, with its value."""
    lines = ["# Results: the claims of the four notes and of the fixes' papers, measured", "",
             f"Generated by `snakemake --cores all docs_results` from {source}; do not edit by "
             "hand (the rules below come from `docs/claims_rules.md`).", "", rules.strip(), "",
             "## Counts", "", summary_line(table) + ".", "",
             count_table(table).to_markdown(index=False), ""]
    for title, keep in (("Not reproduced", lambda v: v == "not reproduced"),
                        ("Depends on a setting the note leaves open",
                         lambda v: v.startswith("depends on"))):
        sub = table[table["verdict"].map(keep) & (table["restates"] == "")]
        lines += [f"## {title} ({len(sub)})", ""]
        for _, r in sub.iterrows():
            extra = f" Other readings: {r['readings']}." if r["readings"] else ""
            notes = f" ({r['notes']})" if r["notes"] else ""
            lines.append(f"- `{r['id']}` ({r['note']}): “{r['claim']}” — note: "
                         f"{r['documented']}; measured: {r['shown']}; {r['verdict']}{notes}."
                         f"{extra}")
        lines.append("")
    sub = table[(table["verdict"] == "not measurable") & (table["restates"] == "")]
    lines += [f"## Not measurable at initialisation ({len(sub)})", ""]
    lines += [f"- `{r['id']}`: “{r['claim']}” — {r['notes']}" for _, r in sub.iterrows()]
    return "\n".join(lines) + "\n"
