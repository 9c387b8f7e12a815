"""Shared figure helpers: style, seed bands, and atomic PNG + SVG output."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from depthlab.io import atomic_path  # noqa: E402

PLACEMENT_COLORS = {"post": "tab:blue", "pre": "tab:orange", "none": "tab:green"}
PLACEMENT_NAMES = {"post": "Post-LN", "pre": "Pre-LN", "none": "no residual"}
plt.rcParams.update({"figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
                     "svg.hashsalt": "depthlab", "font.size": 9})


def band(ax, frame: pd.DataFrame, x: str, label: str, color=None, lo="min", hi="max",
         mid="median", **kw) -> None:
    """A median line with a shaded band between the seed extremes (or other summary columns)."""
    frame = frame.sort_values(x)
    ax.plot(frame[x], frame[mid], label=label, color=color, **kw)
    ax.fill_between(frame[x], frame[lo], frame[hi], color=color, alpha=0.2, linewidth=0)


def save(fig, png: str | Path, svg: str | Path) -> None:
    """Save a figure as PNG and SVG, each written atomically, and close it."""
    for path, fmt, meta in ((png, "png", {}), (svg, "svg", {"Date": None})):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, bbox_inches="tight", metadata=meta)
    plt.close(fig)
