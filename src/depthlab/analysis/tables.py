"""Writing a rendered table as Markdown, CSV, HTML and LaTeX (atomically)."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from depthlab.analysis.notation import latex_text
from depthlab.core.io import write_text


def fmt(value: float, digits: int = 3) -> str:
    """A number with `digits` significant figures (scientific outside [1e-3, 1e4))."""
    if pd.isna(value):
        return "—"
    if value != 0 and not 1e-3 <= abs(value) < 1e4:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}g}"


def spread(lo: float, hi: float, digits: int = 3) -> str:
    """A seed range as '[lo, hi]'."""
    return f"[{fmt(lo, digits)}, {fmt(hi, digits)}]"


def median_range(row) -> str:
    """A seed summary row as 'median [seed min, max]'."""
    return f"{fmt(row['median'])} {spread(row['min'], row['max'])}"


def mean_interval(row) -> str:
    """A seed summary row as 'mean [95% t-interval]'."""
    return f"{fmt(row['mean'])} {spread(row['ci_lo'], row['ci_hi'])}"


def ranges(k, ok) -> str:
    """The values of k (integers) where ok holds, as ranges ('1–3, 20–96'), or 'none'."""
    out, start = [], None
    for i, good in enumerate(ok):
        if good and start is None:
            start = i
        if start is not None and (not good or i == len(ok) - 1):
            end = i if good else i - 1
            out.append(f"{int(k[start])}" if start == end else f"{int(k[start])}–{int(k[end])}")
            start = None
    return ", ".join(out) or "none"


HTML_STYLE = """<meta charset="utf-8"><style>
.depthlab {font-family: sans-serif; font-size: 13px; border-collapse: collapse;}
.depthlab td, .depthlab th {border: 1px solid #ccc; padding: 3px 6px; text-align: right;}
.depthlab th {background: #eee;}
</style>"""


def table_html(shown: pd.DataFrame, title: str, note: str = "") -> str:
    """An HTML page of a formatted table with its title and note (for the Snakemake report)."""
    body = shown.to_html(index=False, border=0, classes="depthlab", escape=True)
    text = f"{HTML_STYLE}\n<h3>{html.escape(title)}</h3>\n{body}\n"
    return text + (f"<p>{html.escape(note)}</p>\n" if note else "")


# what a LaTeX table written here needs from the document's preamble
LATEX_PACKAGES = ("booktabs", "graphicx")
# a LaTeX cell's lines: at most CELL_CHARS characters (where it has spaces to break at), a
# heading's at most as many as its column's longest cell line, and never fewer than HEAD_CHARS
CELL_CHARS, HEAD_CHARS = 16, 10


def _lines(text: str, width: int) -> list[str]:
    """`text` broken at its spaces outside brackets into lines of at most `width` characters (a
    word longer stays whole), so that no maths (ω_{k + 1}, √(2/π)) is split."""
    words, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth = max(0, depth + (c in "([{") - (c in ")]}"))
        if c == " " and depth == 0:
            words.append(text[start:i])
            start = i + 1
    lines = []
    for word in [*words, text[start:]]:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _cell(lines: list[str], align: str, valign: str) -> str:
    """A table cell of one or more lines as LaTeX (a nested tabular, aligned `valign` on the
    row: t for a body cell, b for a heading); `{}` keeps a line that opens with [ from being read
    as the optional argument of the \\ before it."""
    text = [("{}" if line.startswith("[") else "") + latex_text(line) for line in lines]
    if len(text) == 1:
        return text[0]
    stacked = r" \\ ".join(text)
    return rf"\begin{{tabular}}[{valign}]{{@{{}}{align}@{{}}}}{stacked}\end{{tabular}}"


def table_latex(shown: pd.DataFrame, title: str, note: str = "") -> str:
    r"""A formatted table as a LaTeX table environment to \input into a paper: plain ASCII
    (maths in $...$, so no inputenc or fontenc is needed: depthlab.analysis.notation), booktabs
    rules, the title as caption, the note below; the packages it needs in its first line.

    Its width: a text cell longer than CELL_CHARS and a heading longer than its column's cells
    break into lines (a heading over a column of numbers is most of a wide table's width), then
    the tabular is scaled down to the line width only where it is still wider (graphicx's
    \resizebox, the test done by TeX, which alone knows the width). Line breaking first keeps the
    wide tables' type readable, where scaling alone shrinks a 16-column table to a quarter;
    tabularx would need each column's width chosen in advance and cannot break a number."""
    aligns = "l" + "r" * (shown.shape[1] - 1)
    body = [[_lines(str(v), CELL_CHARS) for v in row] for row in shown.to_numpy()]
    widths = [max([HEAD_CHARS, *(len(line) for row in body for line in row[j])])
              for j in range(shown.shape[1])]
    heads = [_cell(_lines(str(c), w), a, "b") for c, w, a in zip(shown.columns, widths, aligns,
                                                                  strict=True)]
    rows = [" & ".join(_cell(lines, a, "t") for lines, a in zip(row, aligns, strict=True))
            + r" \\" for row in body]
    needs = ", ".join(rf"\usepackage{{{package}}}" for package in LATEX_PACKAGES)
    lines = [f"% needs {needs} (booktabs rules; graphicx scales a wide table to the line width)",
             r"\begin{table}", r"\centering", rf"\caption{{{latex_text(title)}}}",
             r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
             rf"\begin{{tabular}}{{{aligns}}}", r"\toprule", " & ".join(heads) + r" \\",
             r"\midrule", *rows, r"\bottomrule", r"\end{tabular}}"]
    if note:
        lines.append(rf"\par\smallskip\footnotesize {latex_text(note)}")
    return "\n".join([*lines, r"\end{table}", ""])


def write_table(table: pd.DataFrame, md_path: str | Path, csv_path: str | Path, title: str,
                note: str = "", html_path: str | Path | None = None,
                tex_path: str | Path | None = None) -> None:
    """Write `table` as CSV (full precision), as a Markdown page with a title and a note, and
    (given `html_path`, `tex_path`) as the same page in HTML and as a LaTeX table."""
    write_text(table.to_csv(index=False), csv_path)
    shown = table.map(lambda v: fmt(v) if isinstance(v, float) else v)
    text = f"# {title}\n\n{shown.to_markdown(index=False)}\n"
    if note:
        text += f"\n{note}\n"
    write_text(text, md_path)
    if html_path is not None:
        write_text(table_html(shown, title, note), html_path)
    if tex_path is not None:
        write_text(table_latex(shown, title, note), tex_path)
