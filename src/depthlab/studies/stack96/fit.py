"""Fits of the stack96 study: gradient ratios, stream growth and the variance budget.

Input: the aggregated tidy table (one row per seed, layer, sublayer, metric). Output: one long
fit table, one row per quantity and grid point, with per-seed summaries (see stats.seed_summary).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.stats import loglog_slopes, ols_slope, one_depth_exponent, summarise_seeds
from depthlab.planner.grid import job_id

GRID_KEYS = ("placement", "depth", "out_scale")


def variants(table: pd.DataFrame, axes: dict[str, list[str]]) -> dict[tuple[str, str], str]:
    """The open setting each cell (arm, label) changes: its values of the arm's axes other than
    GRID_KEYS, read from the setting columns ('tokens-1024'), or 'baseline' when the arm varies
    only placement, depth and output scale. axes: the axis names of each arm (config)."""
    out = {}
    for _, cell in table.drop_duplicates(["arm", "label"]).iterrows():
        keys = [k for k in axes.get(cell["arm"], ()) if k not in GRID_KEYS]
        values = {k: cell[k].item() if isinstance(cell[k], np.generic) else cell[k] for k in keys}
        out[(cell["arm"], cell["label"])] = job_id(values) if values else "baseline"
    return out


def stream_growth(table: pd.DataFrame) -> pd.DataFrame:
    """Per seed and cell: sd after block 1 and after block L, factor = last / first, the
    one-depth exponent ln(factor)/ln(L), and the variance-budget fit V_l = V_0 + c*l over
    l = 0..L with its predicted sd at L, sqrt(V_0 + c*L)."""
    rows = []
    sd = pick(table, metric="stream_sd", sublayer="block")
    var = pick(table, metric="stream_var", sublayer="block")
    # sorted, so that .loc on the first three levels is a slice (no PerformanceWarning)
    var = var.set_index(["arm", "label", "seed", "layer"])["value"].sort_index()
    for (arm, label, seed), sub in sd.groupby(["arm", "label", "seed"], sort=True):
        sub = sub.set_index("layer")["value"].sort_index()
        depth = int(sub.index.max())
        v = var.loc[(arm, label, seed)].sort_index()
        c, v0 = ols_slope(v.index.to_numpy(), v.to_numpy())
        first, last = float(sub.loc[1]), float(sub.loc[depth])
        base = {"arm": arm, "label": label, "seed": seed}
        for name, value in {
            "sd_first": first,
            "sd_last": last,
            "factor": last / first,
            "exponent_one_depth": one_depth_exponent(last / first, depth),
            "budget_c": c,
            "budget_v0": v0,
            "budget_sd_last": float(np.sqrt(v0 + c * depth)),
        }.items():
            rows.append({**base, "metric": name, "value": value})
    return pd.DataFrame(rows)


def exponent_across_depths(growth: pd.DataFrame) -> pd.DataFrame:
    """Per seed, the slope of ln(factor) against ln(L) across the depths of an arm at fixed
    placement and output scale (needs two or more depths); summarised across seeds."""
    factor = growth[growth["metric"] == "factor"]
    return loglog_slopes(factor, ["arm", "placement", "out_scale"], "depth",
                         "exponent_across_depths")


def _variant_column(frame: pd.DataFrame, variant: dict) -> pd.Series:
    return pd.Series([variant[k] for k in zip(frame["arm"], frame["label"], strict=True)],
                     index=frame.index, dtype=object)


def ratio_depth_trend(table: pd.DataFrame, variant: dict) -> pd.DataFrame:
    """Per seed, how the first/last gradient ratio r(L) moves with depth at fixed arm,
    placement, output scale and variant (summarised across seeds; dimensionless):
    grad_ratio_depth_exponent = OLS slope of ln r on ln L over the depths (two or more; > 0: r
    grows with depth), and at each inner depth L_i (depth column) grad_ratio_bend = the
    log-log slope from L_i to the next depth minus that from the previous depth to L_i
    (< 0: r falls faster past L_i). variant: `variants` of the table."""
    ratio = pick(table, metric="grad_ratio", sublayer="block")
    ratio = ratio.assign(variant=_variant_column(ratio, variant))
    keys = ["arm", "placement", "out_scale", "variant"]
    exponents, bends = [], []
    for group, sub in ratio.groupby([*keys, "seed"], sort=True):
        if len(sub) < 2:
            continue
        sub = sub.sort_values("depth")
        log_l, log_r = np.log(sub["depth"].to_numpy(float)), np.log(sub["value"].to_numpy())
        base = dict(zip([*keys, "seed"], group, strict=True))
        exponents.append({**base, "value": ols_slope(log_l, log_r)[0]})
        slopes = np.diff(log_r) / np.diff(log_l)
        for i in range(1, len(slopes)):
            bends.append({**base, "depth": sub["depth"].iloc[i],
                          "value": slopes[i] - slopes[i - 1]})
    parts = [pd.DataFrame(columns=["variant"])]
    if exponents:
        parts.append(summarise_seeds(pd.DataFrame(exponents), keys, "grad_ratio_depth_exponent"))
    if bends:
        parts.append(summarise_seeds(pd.DataFrame(bends), [*keys, "depth"], "grad_ratio_bend"))
    return pd.concat(parts, ignore_index=True)


def fit(table: pd.DataFrame, axes: dict[str, list[str]]) -> pd.DataFrame:
    """All stack96 fits as one long table (quantity, arm, label, grid keys, variant, layer,
    summary); axes: the axis names of each arm (config), which say each cell's variant."""
    variant = variants(table, axes)
    keys = ["arm", "label", *GRID_KEYS]
    cells = table.drop_duplicates(["arm", "label"])[keys]
    parts = [
        summarise_seeds(pick(table, metric="grad_ratio", sublayer="block"), keys, "grad_ratio"),
        *(summarise_seeds(pick(table, metric=m, sublayer="block"), [*keys, "layer"], m)
          for m in ("grad_norm", "stream_sd", "stream_var", "token_corr")),
    ]
    growth = stream_growth(table).merge(cells, on=["arm", "label"])
    for metric, sub in growth.groupby("metric"):
        parts.append(summarise_seeds(sub, keys, metric))
    parts.append(exponent_across_depths(growth))
    parts.append(ratio_depth_trend(table, variant))
    for sublayer in ("attn", "mlp"):
        branch = pick(table, metric="branch_var", sublayer=sublayer)
        parts.append(summarise_seeds(branch, [*keys, "layer"], f"branch_var_{sublayer}"))
    fits = pd.concat(parts, ignore_index=True)
    # rows of one cell take its variant; rows across depths carry theirs, or else are baseline
    cell = fits["label"].notna()
    fits.loc[cell, "variant"] = _variant_column(fits[cell], variant)
    fits["variant"] = fits["variant"].fillna("baseline")
    return fits
