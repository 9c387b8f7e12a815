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


def table_latex(shown: pd.DataFrame, title: str, note: str = "") -> str:
    """A formatted table as a LaTeX table environment to \\input into a paper: plain ASCII
    (maths in $...$, so no inputenc or fontenc is needed), booktabs rules, the title as caption,
    the note below, the tabular scaled down to the line width where it is wider (graphicx's
    \\resizebox); the packages it needs are named in its first line."""
    cols = "l" + "r" * (shown.shape[1] - 1)
    rows = [" & ".join(latex_text(v) for v in row) + r" \\" for row in shown.to_numpy()]
    needs = ", ".join(rf"\usepackage{{{package}}}" for package in LATEX_PACKAGES)
    lines = [f"% needs {needs} (booktabs rules; graphicx scales a wide table to the line width)",
             r"\begin{table}", r"\centering", rf"\caption{{{latex_text(title)}}}",
             r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
             rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
             " & ".join(latex_text(c) for c in shown.columns) + r" \\", r"\midrule", *rows,
             r"\bottomrule", r"\end{tabular}}"]
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
