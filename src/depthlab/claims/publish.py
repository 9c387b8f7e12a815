"""The ledger as a reader sees it: results/claims.md and .html, and docs/RESULTS.md (the counts,
the readings each note's numbers allow, and every row with its value, band and outcome)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from depthlab.analysis.tables import HTML_STYLE
from depthlab.claims.evidence import FLOOR
from depthlab.claims.ledger import counts
from depthlab.claims.outcomes import (
    BY_CONSTRUCTION,
    GRADED,
    NOT_COUNTED,
    OUTCOMES,
    QUESTION,
    UNINFORMATIVE,
)

DEFAULT_RUN = "default"  # the run without a name (results/), first of a merged ledger

COLUMNS = {"id": "id", "claim": "claim (the note)", "documented": "note", "shown": "measured",
           "verdict": "outcome", "band_sigma": "band σ", "q_against": "q against",
           "q_for": "q for",
           "tolerance": "precision", "readings": "allowed readings",
           "sensitivity": "excluded readings (sensitivity)", "experiments": "experiments",
           "by_construction": "by construction", "notes": "notes"}


def notes_of(table: pd.DataFrame) -> list[str]:
    """The notes of a ledger, in entry order (the claims file's)."""
    return list(dict.fromkeys(table["note"]))


def count_table(table: pd.DataFrame) -> pd.DataFrame:
    """Outcome counts per note and overall (claims; all entries with restatements in
    brackets)."""
    rows = []
    for note in [*notes_of(table), "all"]:
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
    for column in ("q against", "q for"):
        frame[column] = [_p(x) for x in frame[column]]
    frame["precision"] = [
        f"{t} [{reasons.index(r) + 1}]" if r else t
        for t, r in zip(table["tolerance"], table["tolerance_reason"], strict=True)]
    keep = [c for c in frame.columns if (frame[c].astype(str) != "").any()]
    return frame[keep], reasons


def _p(x) -> str:
    """A p or q as printed: two figures, none below evidence.FLOOR."""
    if pd.isna(x):
        return ""
    return "<1e-16" if x <= FLOOR else f"{x:.2g}"


def _by_note(table: pd.DataFrame):
    for note in notes_of(table):
        yield note, table[table["note"] == note]


INTRO = ("Every numeric or directional sentence of the four notes, in note order, then the "
         "claims of the fixes' papers (note 'fixes'), measured on this run's fits and graded "
         "by the rules of depthlab.claims (docs/claims_rules.md). A number the note measured "
         "is compared with the band of its statistic at its seed count; a direction or a "
         "prediction with our 95% interval. band σ: the note's value (a direction's boundary) "
         "from the band's centre in band-sigmas; q against, q for: the Benjamini-Hochberg "
         "q-values, within the note, of 'the note is right' and 'the note is wrong' (a "
         "contradiction counts where the first is at most 0.05, a support where the second "
         "is). "
         "Counts: claims that are not restatements, with all entries in brackets; "
         f"'{BY_CONSTRUCTION}' is listed, never counted as evidence.")


# results/claims.md: one line per entry, the note's value against ours (the rest in the details)
BRIEF = ("id", "note", "measured", "outcome", "q against", "q for")


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
        (NOT_COUNTED, "assumptions, possibilities, hypotheses or other estimators measured"))
        if c[o]]
    parts += [f"{c[o]} {o}" for o in ("not comparable", "not measured") if c[o]]
    if c[QUESTION]:
        parts.append(f"and {c[QUESTION]} open question{'s' * (c[QUESTION] > 1)} of the notes "
                     "measured (no claim, not counted)")
    restating = int((table["restates"] != "").sum())
    return (", ".join(parts) + f" (of {n} claims; {restating} more entries restate one "
            "of them)")


def headline_line(explored: pd.DataFrame, confirmed: pd.DataFrame | None = None,
                  freeze: str = "") -> str:
    """The headline counts with the run they come from (the README's summary line and
    docs/RESULTS.md's): the confirmatory run's at the freeze where graded, else the
    exploratory run's, whose seeds chose the readings."""
    if confirmed is None:
        return ("Exploratory run (its seeds chose the readings; no confirmatory run at these "
                f"rules yet): {summary_line(explored)}.")
    return f"Confirmatory run (seeds never seen, rules frozen at {freeze}): " \
        f"{summary_line(confirmed)}."


def ledger_news(parquet: str | Path, markdown: str, since: float) -> str:
    """One line on the claims ledger at the end of a run: its counts where the run built it
    (`parquet` written after `since`, a time.time()), else where it is, or that there is none."""
    path = Path(parquet)
    if not path.exists():
        return "No claims ledger here yet: `snakemake --cores all` (rule all) builds it."
    if path.stat().st_mtime < since:
        return f"The claims ledger is unchanged: {markdown}"
    return f"Claims: {summary_line(pd.read_parquet(path))}. Each claim: {markdown}"


def _row_line(r: pd.Series, explored: pd.Series | None = None) -> str:
    """One entry of docs/RESULTS.md: its outcome first (machine-readable: `outcomes_in`), the
    note's value, ours, the verdict, the q-values, and the exploratory run's verdict beside."""
    extra = "".join(f" {label}: {r[key]}." for key, label in (
        ("readings", "Allowed readings"), ("sensitivity", "Excluded readings (sensitivity)"),
        ("experiments", "Experiments beside the verdict"),
        ("by_construction", "By construction")) if r[key])
    notes = f" ({r['notes']})" if r["notes"] else ""
    tests = (f" [q against {_p(r['q_against'])}, q for {_p(r['q_for'])}]"
             if pd.notna(r.get("q_against")) else "")
    where = f" ({r['run']} run)" if r.get("run", DEFAULT_RUN) != DEFAULT_RUN else ""
    before = (f" Exploratory run: {explored['verdict']}."
              if explored is not None and explored["verdict"] != r["verdict"] else
              " Exploratory run: the same." if explored is not None else "")
    return (f"- `{r['id']}` (**{r['outcome']}**): “{r['claim']}” — note: {r['documented']}; "
            f"measured: {r['shown']}; {r['verdict']}{where}{tests}{notes}.{extra}{before}")


LINE = re.compile(r"^- `(?P<id>[^`]+)` \(\*\*(?P<outcome>[^*]+)\*\*\)", re.M)
CELL = re.compile(r"^\| `(?P<id>[^`]+)` \|.*?\| (?P<outcome>[^|]+?) \| [^|]* \|$", re.M)


def outcomes_in(markdown: str) -> dict[str, str]:
    """{id: outcome} of every entry a generated document lists (docs/RESULTS.md's lines, the
    verdict tables of FIXES.md and SCALE.md): the documents must agree entry by entry."""
    found = {m["id"]: m["outcome"].strip() for m in LINE.finditer(markdown)}
    for m in CELL.finditer(markdown):
        found.setdefault(m["id"], m["outcome"].strip())
    return found


def verdict_table(table: pd.DataFrame, explored: pd.DataFrame | None = None) -> str:
    """The verdicts of some entries as a Markdown table (FIXES.md's and SCALE.md's, between
    their markers): id, measured, outcome (the headline run's), the exploratory outcome."""
    before = {} if explored is None else dict(zip(explored["id"], explored["outcome"],
                                                  strict=True))
    lines = ["| id | measured | outcome | exploratory |", "|---|---|---|---|"]
    for _, r in table[table["restates"] == ""].iterrows():
        measured = str(r["shown"]).split(";")[0].replace("|", "/")
        lines.append(f"| `{r['id']}` | {measured} | {r['outcome']} | "
                     f"{before.get(r['id'], '—')} |")
    return "\n".join(lines)


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


def transitions(explored: pd.DataFrame, confirmed: pd.DataFrame) -> pd.DataFrame:
    """How each claim's exploratory outcome became its confirmatory one: counts, the
    exploratory outcome by row, the confirmatory by column (claims, not restatements)."""
    both = explored[explored["restates"] == ""][["id", "outcome"]].merge(
        confirmed[["id", "outcome"]], on="id", suffixes=("_explored", "_confirmed"))
    matrix = pd.crosstab(both["outcome_explored"], both["outcome_confirmed"])
    order = [o for o in OUTCOMES if o in matrix.index or o in matrix.columns]
    matrix = matrix.reindex(index=order, columns=order, fill_value=0)
    matrix.index.name = "exploratory \\ confirmatory"
    return matrix.reset_index()


def replication(explored: pd.DataFrame, confirmed: pd.DataFrame) -> pd.DataFrame:
    """Per note, how many claims graded in either run (counted outcomes, not restatements) the
    two runs grade the same, and how the confirmatory run grades them."""
    both = explored[["id", "note", "outcome", "restates"]].merge(
        confirmed[["id", "outcome"]], on="id", suffixes=("", "_confirm"), how="left")
    counted = both[(both["restates"] == "") & (both["outcome"].isin(GRADED)
                                               | both["outcome_confirm"].isin(GRADED))]
    rows = []
    for note in [*notes_of(counted), "all"]:
        sub = counted if note == "all" else counted[counted["note"] == note]
        rows.append({"note": note, "graded (exploratory)": int(sub["outcome"].isin(GRADED).sum()),
                     "graded (confirmatory)": int(sub["outcome_confirm"].isin(GRADED).sum()),
                     "same outcome": int((sub["outcome"] == sub["outcome_confirm"]).sum()),
                     **{f"{o} (confirmatory)": int((sub["outcome_confirm"] == o).sum())
                        for o in GRADED}})
    return pd.DataFrame(rows)


def results_doc(explored: pd.DataFrame, readings: pd.DataFrame, rules: str, source: str,
                confirmed: pd.DataFrame | None = None, freeze: str = "") -> str:
    """docs/RESULTS.md: how a claim is graded (`rules`, from docs/claims_rules.md); the
    headline counts, from the confirmatory runs (`confirmed`, merged) where they were graded at
    the freeze, else from the exploratory runs (`explored`, merged); the other's counts, the
    transition matrix and the replication per note; the readings the exploratory run allowed;
    every entry with its headline verdict and the exploratory one beside it."""
    headline = explored if confirmed is None else confirmed
    lines = ["# Results: the claims of the four notes and of the fixes' papers, measured", "",
             f"Generated by `snakemake --cores all docs_results` from {source}; do not edit by "
             "hand (the rules below come from `docs/claims_rules.md`).", "", rules.strip(), ""]
    if confirmed is None:
        lines += ["## Counts (exploratory: no confirmatory run at this freeze yet)", "",
                  "The confirmatory runs (`config/confirm*.yaml`, seeds never seen) have not been "
                  "graded at the rules below: these counts are the exploratory run's, whose seeds "
                  "chose the readings.", "", headline_line(explored), "",
                  count_table(explored).to_markdown(index=False), ""]
    else:
        lines += ["## Counts (confirmatory: seeds never seen)", "",
                  headline_line(explored, confirmed, freeze), "",
                  count_table(confirmed).to_markdown(index=False), "",
                  "### The exploratory run (the seeds that chose the readings)", "",
                  summary_line(explored) + ".", "",
                  count_table(explored).to_markdown(index=False), "",
                  "### From exploration to confirmation", "",
                  "Each claim's exploratory outcome (row) and confirmatory outcome (column):", "",
                  transitions(explored, confirmed).to_markdown(index=False), "",
                  replication(explored, confirmed).to_markdown(index=False), ""]
    lines += ["## The readings each note's numbers allow (the exploratory run, frozen)", "",
              readings_table(readings).to_markdown(index=False), ""]
    before = None if confirmed is None else explored.set_index("id")
    for note, sub in _by_note(headline):
        lines += [f"## {note}", ""]
        lines += [_row_line(r, None if before is None else before.loc[r["id"]])
                  for _, r in sub.iterrows()] + [""]
    return "\n".join(lines) + "\n"
