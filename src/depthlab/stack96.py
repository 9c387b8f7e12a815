"""Fits of the stack96 study: gradient ratios, stream growth and the variance budget.

Input: the aggregated tidy table (one row per seed, layer, sublayer, metric). Output: one long
fit table, one row per quantity and grid point, with per-seed summaries (see stats.seed_summary).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.stats import loglog_slopes, ols_slope, one_depth_exponent, summarise_seeds

GRID_KEYS = ("placement", "depth", "out_scale")


def variant_of(label: str) -> str:
    """The open-setting part of a cell label ('tokens-1024_placement-pre' -> 'tokens-1024');
    'baseline' when the cell differs from the study's settings only in placement/depth/scale."""
    parts = [p for p in label.split("_") if p.split("-")[0] not in GRID_KEYS]
    return "_".join(parts) or "baseline"


def _metric(table: pd.DataFrame, metric: str, sublayer: str = "block") -> pd.DataFrame:
    return table[(table["metric"] == metric) & (table["sublayer"] == sublayer)]


def stream_growth(table: pd.DataFrame) -> pd.DataFrame:
    """Per seed and cell: sd after block 1 and after block L, factor = last / first, the
    one-depth exponent ln(factor)/ln(L), and the variance-budget fit V_l = V_0 + c*l over
    l = 0..L with its predicted sd at L, sqrt(V_0 + c*L)."""
    rows = []
    sd = _metric(table, "stream_sd")
    var = _metric(table, "stream_var").set_index(["arm", "label", "seed", "layer"])["value"]
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


def ratio_depth_trend(table: pd.DataFrame) -> pd.DataFrame:
    """Per seed, how the first/last gradient ratio r(L) moves with depth at fixed arm,
    placement, output scale and variant (summarised across seeds; dimensionless):
    grad_ratio_depth_exponent = OLS slope of ln r on ln L over the depths (two or more; > 0: r
    grows with depth), and at each inner depth L_i (depth column) grad_ratio_bend = the
    log-log slope from L_i to the next depth minus that from the previous depth to L_i
    (< 0: r falls faster past L_i)."""
    ratio = _metric(table, "grad_ratio").assign(variant=lambda f: f["label"].map(variant_of))
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


def fit(table: pd.DataFrame) -> pd.DataFrame:
    """All stack96 fits as one long table (quantity, arm, label, grid keys, layer, summary)."""
    keys = ["arm", "label", *GRID_KEYS]
    cells = table.drop_duplicates(["arm", "label"])[keys]
    parts = [
        summarise_seeds(_metric(table, "grad_ratio"), keys, "grad_ratio"),
        summarise_seeds(_metric(table, "grad_norm"), [*keys, "layer"], "grad_norm"),
        summarise_seeds(_metric(table, "stream_sd"), [*keys, "layer"], "stream_sd"),
        summarise_seeds(_metric(table, "stream_var"), [*keys, "layer"], "stream_var"),
    ]
    growth = stream_growth(table).merge(cells, on=["arm", "label"])
    for metric, sub in growth.groupby("metric"):
        parts.append(summarise_seeds(sub, keys, metric))
    parts.append(exponent_across_depths(growth))
    parts.append(ratio_depth_trend(table))
    for sublayer in ("attn", "mlp"):
        branch = _metric(table, "branch_var", sublayer)
        parts.append(summarise_seeds(branch, [*keys, "layer"], f"branch_var_{sublayer}"))
    fits = pd.concat(parts, ignore_index=True)
    # rows across depths carry their variant; the others take it from their cell label
    fits["variant"] = fits["variant"].fillna(fits["label"].fillna("").map(variant_of))
    return fits
