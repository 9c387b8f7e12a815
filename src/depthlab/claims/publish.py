"""The ledger as a reader sees it: results/claims.md and .html, and docs/RESULTS.md (the counts,
the readings each note's numbers allow, and every row with its value, band and outcome)."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from depthlab.analysis.tables import HTML_STYLE
from depthlab.claims.ledger import counts
from depthlab.claims.outcomes import (
    BY_CONSTRUCTION,
    GRADED,
    IDENTIFIES,
    NOT_COUNTED,
    OUTCOMES,
    QUESTION,
    UNINFORMATIVE,
)
from depthlab.claims.schema import NOTES

DEFAULT_RUN = "default"  # the run without a name (results/), first of a merged ledger

COLUMNS = {"id": "id", "claim": "claim (the note)", "documented": "note", "shown": "measured",
           "verdict": "outcome", "band_sigma": "band σ", "q_value": "q",
           "tolerance": "precision", "readings": "allowed readings",
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
    frame["band σ"] = [f"{x:+.2f}" if pd.notna(x) else "" for x in table["band_sigma"]]
    frame["q"] = [f"{x:.2g}" if pd.notna(x) else "" for x in table["q_value"]]
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
         "band_sigma: the note's value (a direction's boundary) from the band's centre in "
         "band-sigmas; q: its Benjamini-Hochberg q-value across the ledger. "
         "Counts: claims that are not restatements, with all entries in brackets; "
         f"'{BY_CONSTRUCTION}' is listed, never counted as evidence.")


# results/claims.md: one line per entry, the note's value against ours (the rest in the details)
BRIEF = ("id", "note", "measured", "outcome", "band σ", "q")


def to_markdown(table: pd.DataFrame, details: str = "") -> str:
    """results/claims.md: the counts, then per note one line per entry (`BRIEF`: id, the note's
    value, ours with its band, outcome, band σ, q); with `details` (that file's name) a pointer
    to it. Without, every column and the precision reasons (results/claims_details.md)."""
    lines = ["# Claims of the notes, measured", "", INTRO, ""]
    if details:
        lines += [f"The claim's words, its precision, readings and notes: {details}.", ""]
    lines += [count_table(table).to_markdown(index=False), ""]
    for note, sub in _by_note(table):
        frame, reasons = shown(sub)
        if details:
            frame = frame[[c for c in BRIEF if c in frame]]
        lines += [f"## {note}", "", frame.to_markdown(index=False), ""]
        if not details:
            lines += ["Precision reasons:", ""]
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
    parts += [f"{c[o]} {what} (not counted)" for o, what in (
        (UNINFORMATIVE, "consistent but uninformative"),
        (IDENTIFIES, "identify a reading of an open setting"),
        (NOT_COUNTED, "assumptions, possibilities or hypotheses measured")) if c[o]]
    parts += [f"{c[o]} {o}" for o in ("not comparable", "not measured") if c[o]]
    if c[QUESTION]:
        parts.append(f"and {c[QUESTION]} open question{'s' * (c[QUESTION] > 1)} of the notes "
                     "measured (no claim, not counted)")
    restating = int((table["restates"] != "").sum())
    return (", ".join(parts) + f" (of {n} claims; {restating} more entries restate one "
            "of them)")


def ledger_news(parquet: str | Path, markdown: str, since: float) -> str:
    """One line on the claims ledger at the end of a run: its counts where the run built it
    (`parquet` written after `since`, a time.time()), else where it is, or that there is none."""
    path = Path(parquet)
    if not path.exists():
        return "No claims ledger here yet: `snakemake --cores all` (rule all) builds it."
    if path.stat().st_mtime < since:
        return f"The claims ledger is unchanged: {markdown}"
    return f"Claims: {summary_line(pd.read_parquet(path))}. Each claim: {markdown}"


def _row_line(r: pd.Series, confirmed: str | None = None) -> str:
    extra = "".join(f" {label}: {r[key]}." for key, label in (
        ("readings", "Allowed readings"), ("sensitivity", "Excluded readings (sensitivity)"),
        ("experiments", "Experiments beside the verdict"),
        ("by_construction", "By construction")) if r[key])
    notes = f" ({r['notes']})" if r["notes"] else ""
    tests = (f" [band_sigma {r['band_sigma']:+.2f}, q {r['q_value']:.2g}]"
             if pd.notna(r.get("q_value")) and pd.notna(r.get("band_sigma")) else "")
    again = f" Confirmatory run: {confirmed}." if confirmed else ""
    where = f" ({r['run']} run)" if r.get("run", DEFAULT_RUN) != DEFAULT_RUN else ""
    return (f"- `{r['id']}`: “{r['claim']}” — note: {r['documented']}; measured: {r['shown']}; "
            f"**{r['verdict']}**{where}{tests}{notes}.{extra}{again}")


def readings_table(readings: pd.DataFrame) -> pd.DataFrame:
    """The readings of each open setting, with how many identifying numbers fall outside and
    the joint probability of so many under the right reading (the binomial where they have no
    common pool, or none fall outside)."""
    frame = readings.copy()
    frame["allowed"] = ["excluded" if x else "allowed" for x in frame["excluded"]]
    frame["outside / graded"] = [f"{o} / {g}" for o, g in
                                 zip(frame["outside"], frame["graded"], strict=True)]
    joint = pd.to_numeric(frame["p_joint"], errors="coerce")  # "" from a CSV: none
    frame["P(so many outside)"] = [f"{x:.2g}" if pd.notna(x) else "binomial" for x in joint]
    return frame[["note", "setting", "label", "outside / graded", "P(so many outside)",
                  "allowed", "by"]]


def replication(table: pd.DataFrame, confirm: pd.DataFrame) -> pd.DataFrame:
    """Per note, how many claims graded in the exploratory run (counted outcomes, not
    restatements) the confirmatory run grades the same, and how it grades them."""
    both = table[["id", "note", "outcome", "restates"]].merge(
        confirm[["id", "outcome"]], on="id", suffixes=("", "_confirm"), how="left")
    counted = both[(both["restates"] == "") & both["outcome"].isin(GRADED)]
    rows = []
    for note in [*[n for n in NOTES if n in set(counted["note"])], "all"]:
        sub = counted if note == "all" else counted[counted["note"] == note]
        rows.append({"note": note, "graded (exploratory)": len(sub),
                     "graded (confirmatory)": int(sub["outcome_confirm"].isin(GRADED).sum()),
                     "same outcome": int((sub["outcome"] == sub["outcome_confirm"]).sum()),
                     **{f"{o} (confirmatory)": int((sub["outcome_confirm"] == o).sum())
                        for o in GRADED}})
    return pd.DataFrame(rows)


def results_doc(table: pd.DataFrame, readings: pd.DataFrame, rules: str, source: str,
                confirm: pd.DataFrame | None = None) -> str:
    """docs/RESULTS.md: how a claim is graded (`rules`, from docs/claims_rules.md), the
    counts, the readings each note allows, how many verdicts the confirmatory run (`confirm`,
    its ledger) replicates, and every row by note with its value, band and both outcomes.
    `table`: the default run's ledger, or the documented runs' merged (claims.merge), whose
    rows name the run that graded them."""
    lines = ["# Results: the claims of the four notes and of the fixes' papers, measured", "",
             f"Generated by `snakemake --cores all docs_results` from {source}; do not edit by "
             "hand (the rules below come from `docs/claims_rules.md`).", "", rules.strip(), "",
             "## Counts", "", summary_line(table) + ".", "",
             count_table(table).to_markdown(index=False), "",
             "## The readings each note's numbers allow", "",
             readings_table(readings).to_markdown(index=False), "",
             "## The confirmatory run", ""]
    if confirm is None:
        lines += ["Not run with this ledger (`snakemake --cores all --configfile "
                  "config/confirm.yaml`, then `docs_results`).", ""]
    else:
        lines += ["The same rules on a fresh seed pool (`config/confirm.yaml`, seeds from "
                  "1000): " + summary_line(confirm) + ".", "",
                  replication(table, confirm).to_markdown(index=False), ""]
    again = {} if confirm is None else dict(zip(confirm["id"], confirm["verdict"], strict=True))
    for note, sub in _by_note(table):
        lines += [f"## {note}", ""]
        lines += [_row_line(r, again.get(r["id"])) for _, r in sub.iterrows()] + [""]
    return "\n".join(lines) + "\n"
