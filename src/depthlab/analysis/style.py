"""The one plotting style of every figure: constrained layout (the figure title never sits on
the panel titles), log axes with plain-number ticks, the registry's colour per placement
(depthlab.pipeline.placements.COLORS), seed bands, and atomic PNG + SVG output."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from depthlab.core.io import atomic_path  # noqa: E402

plt.rcParams.update({"figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
                     "svg.hashsalt": "depthlab", "font.size": 9,
                     "figure.constrained_layout.use": True})


# the per-seed probe numbers the placement studies plot: quantity -> (axis label, log axis)
PROBE_AXES = {
    "grad_ratio": ("‖g_1‖ / ‖g_L‖", True),
    "stream_growth": ("rms(x_L) / rms(x_0)", True),
    "omega_slope": ("ω decay rate (log-log slope)", False),
    "token_corr_last": ("token cosine after block L", False),
    "branch_ratio_last_mlp": ("MLP branch/stream, block L", True),
    "head_input_sd": ("head input sd", True),
}


def log_scale(ax, *which: str) -> None:
    """Log scale on the named axes ('x', 'y'), with major ticks at 1, 2 and 5 times each power
    of ten (fewer where the axis spans many decades), labelled as short plain numbers (0.5, 20,
    0.0001 rather than 5x10^-1; 1e-05 below that), and no minor labels."""
    for name in which:
        axis = ax.xaxis if name == "x" else ax.yaxis
        (ax.set_xscale if name == "x" else ax.set_yscale)("log")
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0), numticks=12))
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_minor_formatter(NullFormatter())


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
