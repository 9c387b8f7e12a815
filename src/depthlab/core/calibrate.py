"""Layerwise per-branch residual scales calibrated from an unscaled Pre-LN run (varsplit).

An arm with `calibrate_from: <arm>` (checked by depthlab.planner.calibration) is measured in
two DAG stages: `calibrate` reads the shard
of the named arm's job and writes per-layer scales, then the arm's measure job reruns the same
cells with `model.forward(..., branch_scales=...)`. The rule, per cell and branch b:

    alpha_b(l) = sqrt(mean_k delta_b(k) / delta_b(l)),  b in {attn, mlp},

with delta_b(l) the seed-mean variance increment of branch b at block l (probe `delta`). It is
the note's alpha_b(l) proportional to 1/sqrt(delta_b(l)), a separate rule per branch, normalised
so that every scaled increment alpha_b(l)^2 delta_b(l) equals the branch's mean increment: each
branch keeps its total variance budget to first order. One step; the scaled run changes the
stream, so the measured increments are flat only as far as that first-order picture holds.
"""

from __future__ import annotations

import pandas as pd

BRANCHES = ("attn", "mlp")


def calibrate(shard: pd.DataFrame) -> pd.DataFrame:
    """Per cell label, layer and branch: the seed-mean increment `delta` of the unscaled run
    and the scale `alpha` (dimensionless). ValueError naming the cell, layer and branch when a
    mean increment is not positive (no scale gives it the target variance)."""
    delta = shard[(shard["metric"] == "delta") & shard["sublayer"].isin(BRANCHES)]
    if delta.empty:
        raise ValueError("calibration needs the Pre-LN `delta` probe; the shard has none")
    mean = (
        delta.groupby(["label", "sublayer", "layer"])["value"].mean().rename("delta")
        .reset_index().rename(columns={"sublayer": "branch"})
    )
    bad = mean[~(mean["delta"] > 0)]
    if len(bad):
        row = bad.iloc[0]
        raise ValueError(
            f"{row.label}: mean {row.branch} increment at layer {row.layer} is {row.delta:.3g};"
            " the layerwise rule needs positive increments"
        )
    target = mean.groupby(["label", "branch"])["delta"].transform("mean")
    mean["alpha"] = (target / mean["delta"]) ** 0.5
    return mean.sort_values(["label", "branch", "layer"], ignore_index=True)


def branch_scales(calibration: pd.DataFrame) -> dict[str, list[tuple[float, float]]]:
    """The (alpha_attn, alpha_mlp) of blocks 1..L of every cell label, for measure_job."""
    scales = {}
    for label, sub in calibration.groupby("label"):
        wide = sub.pivot(index="layer", columns="branch", values="alpha").sort_index()
        scales[label] = [(float(a), float(m)) for a, m in zip(wide["attn"], wide["mlp"],
                                                                 strict=True)]
    return scales
