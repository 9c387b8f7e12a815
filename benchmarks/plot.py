"""The benchmark figure: cost against depth and seeds, and the cell's rates against the limit."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def scaling_figure(scale: pd.DataFrame, cells: pd.DataFrame, path: Path) -> None:
    """Left, middle: seconds of one measure pass against depth and seed count (a straight line
    through 0 is linear cost). Right: GFLOP/s of the L=96 cell by path against the GEMM limit."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, axis in zip(axes[:2], ("depth", "seeds"), strict=True):
        g = scale[scale.axis == axis]
        ax.plot(g.value, g.seconds, "o-")
        ax.set(xlabel=axis, ylabel="seconds per measure pass", xlim=(0, None), ylim=(0, None),
               title=f"cost against {axis}")
    ax = axes[2]
    cpu = cells[cells.device == "cpu"]
    rates = cpu.groupby(["path", "pass"], sort=False).gflop_s.median()
    names = {"measure": "measure", "per_seed_loop": "per-seed loop",
             "plain_allocator": "plain allocator"}
    ax.bar([f"{names[p]}\n{names.get(q, q)}" for p, q in rates.index], rates.values)
    ax.tick_params(axis="x", labelsize=8)
    ax.axhline(cpu.gemm_gflop_s.iloc[0], color="k", ls="--", label="GEMM limit")
    ax.axhline(cpu.gemm_gflop_s.iloc[0] / 2, color="grey", ls=":", label="50% of limit")
    ax.set(ylabel="GFLOP/s (measure: forward+backward;\nloop: the whole loop)",
           title="stack96 L=96 cell, 6 seeds, float64")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
