"""Writing a rendered table as Markdown and CSV (atomically)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from depthlab.io import write_text


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


def write_table(table: pd.DataFrame, md_path: str | Path, csv_path: str | Path, title: str,
                note: str = "") -> None:
    """Write `table` as CSV (full precision) and as a Markdown page with a title and a note."""
    write_text(table.to_csv(index=False), csv_path)
    shown = table.map(lambda v: fmt(v) if isinstance(v, float) else v)
    text = f"# {title}\n\n{shown.to_markdown(index=False)}\n"
    if note:
        text += f"\n{note}\n"
    write_text(text, md_path)
