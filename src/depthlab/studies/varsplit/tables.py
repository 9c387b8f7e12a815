"""The tables of the varsplit note: increment slopes, the contribution ratio, residual scaling."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.select import pick, pick_one
from depthlab.analysis.tables import spread
from depthlab.vocabulary.variants import ignored

SCHEME_NAMES = {
    "none": "none (alpha = 1)",
    "branch": "branch output multiplier (residual_scale)",
    "init": "init std of Wo and W2 (out_scale)",
    "skip": "skip path, as DeepNorm (skip_scale = 1/alpha)",
    "layerwise": "layerwise per branch (calibrated)",
    "mixed": "several scales at once",
}
SCHEME_ORDER = list(SCHEME_NAMES)


def cells(fits: pd.DataFrame, schemes: tuple[str, ...] | None = None) -> pd.DataFrame:
    """One row per measured cell (arm, label) with its settings and scheme, in scheme order."""
    keys = ["arm", "label", "scheme", "init", "depth", "residual_scale", "out_scale",
            "skip_scale"]
    out = fits.drop_duplicates(["arm", "label"])[keys + (["block"] if "block" in fits else [])]
    if schemes is not None:
        out = out[out["scheme"].isin(schemes)]
    order = out["scheme"].map(SCHEME_ORDER.index)
    return out.assign(_o=order).sort_values(["_o", "arm", "label"]).drop(columns="_o")


def init_of(cell: pd.Series) -> str:
    """A cell's init as its rows are labelled: an own block's (column `block`) says that it is
    only given the setting (depthlab.vocabulary.variants.ignored)."""
    return ignored("init", cell.get("block", "") or "", cell["init"])


def get(fits: pd.DataFrame, cell: pd.Series, quantity: str, **where) -> pd.Series:
    """The fit row of one quantity of one cell (arm, label), and of a layer if given."""
    return pick_one(fits, arm=cell["arm"], label=cell["label"], quantity=quantity, **where)


def _ci(row: pd.Series) -> str:
    return spread(row["ci_lo"], row["ci_hi"])


def alpha_of(cell: pd.Series) -> tuple[float, str]:
    """The uniform scale alpha of a cell (residual_scale, out_scale or 1/skip_scale: the branch
    weight relative to the skip path) and its name where it is a known scheme's value, else ''."""
    if cell["scheme"] == "none":
        return 1.0, "unscaled"
    alpha = {"branch": cell["residual_scale"], "init": cell["out_scale"],
             "skip": 1 / cell["skip_scale"]}.get(cell["scheme"], np.nan)
    n = cell["depth"]
    names = {
        "1/sqrt(2L)": 1 / np.sqrt(2 * n),
        "DeepNet beta (8N)^-1/4": (8 * n) ** -0.25,
        "DeepNorm skip: 1/(2N)^(1/4)": (2 * n) ** -0.25,
    }
    for name, value in names.items():
        if np.isclose(alpha, value, rtol=1e-6):
            return float(alpha), name
    return float(alpha), ""


def increment_slopes(fits: pd.DataFrame) -> pd.DataFrame:
    """Per unscaled cell: the OLS slope of each increment against the layer (mean of per-seed
    slopes = pooled slope, 95% t-interval across seeds), V_L/L, the mean increment, and the link
    between delta_attn(l) and the token correlation of the stream it reads."""
    rows = []
    for _, c in cells(fits, ("none",)).iterrows():
        def q(name, c=c):
            return get(fits, c, name)

        depth = int(c["depth"])
        corr = pick(fits, arm=c["arm"], label=c["label"], quantity="token_corr").set_index(
            "layer")["mean"]
        mlp, attn, v, link = q("slope_mlp"), q("slope_attn"), q("v_ratio"), q("link_r")
        rows.append({
            "init": init_of(c),
            "L": depth,
            "seeds": int(mlp["n_seeds"]),
            "MLP slope": mlp["mean"],
            "MLP 95% CI": _ci(mlp),
            "attention slope": attn["mean"],
            "attention 95% CI": _ci(attn),
            "V_L/L": v["mean"],
            "V_L/L 95% CI": _ci(v),
            "(V_L - V_0)/L": q("mean_increment")["mean"],
            "r(delta_attn, token corr)": link["mean"],
            "r 95% CI": _ci(link),
            "r of seed-mean curves": q("link_r_of_means")["mean"],
            "delta_attn per unit token corr": q("link_slope")["mean"],
            "token corr layer 0": corr.loc[0],
            f"token corr layer {depth}": corr.loc[depth],
        })
    return pd.DataFrame(rows)


def contribution_ratio(fits: pd.DataFrame) -> pd.DataFrame:
    """Per unscaled cell: delta_mlp/delta_attn at layer 1 and delta_attn/delta_mlp at layer 3L/4
    (the note's 48 of 64), as ratios of seed means and as the median of per-seed ratios with the
    seed range, and the first layer where the mean attention increment exceeds the MLP one."""
    rows = []
    for _, c in cells(fits, ("none",)).iterrows():
        first = get(fits, c, "ratio_first")
        deep = get(fits, c, "ratio_deep")
        of_means = get(fits, c, "ratio_deep_of_means")
        deep_layer = int(of_means["layer"])
        cross = pick(fits, arm=c["arm"], label=c["label"], quantity="crossover")
        rows.append({
            "init": init_of(c),
            "L": int(c["depth"]),
            "layer 1 MLP/attn (ratio of means)":
                get(fits, c, "ratio_first_of_means")["mean"],
            "layer 1 median per seed": first["median"],
            "layer 1 seed range": spread(first["min"], first["max"]),
            f"layer {deep_layer} attn/MLP (ratio of means)": of_means["mean"],
            f"layer {deep_layer} median per seed": deep["median"],
            f"layer {deep_layer} seed range": spread(deep["min"], deep["max"]),
            "crossover layer": int(cross["mean"].iloc[0]) if len(cross) else "none",
        })
    return pd.DataFrame(rows)


def uniform_scale(fits: pd.DataFrame) -> pd.DataFrame:
    """Per scaled cell: the scheme (what it scales), alpha, and the late/early increment ratio
    of each branch (mean over the last quarter of the blocks over the first quarter; mean of
    per-seed ratios with its 95% t-interval), V_L/L and the last token correlation."""
    rows = []
    for _, c in cells(fits).iterrows():
        if c["scheme"] == "none" and c["init"] != "fan_in":
            continue

        def q(name, c=c):
            return get(fits, c, name)

        alpha, name = alpha_of(c)
        attn, mlp = q("late_early_attn"), q("late_early_mlp")
        depth = int(c["depth"])
        rows.append({
            "scheme": SCHEME_NAMES[c["scheme"]],
            "alpha": alpha,
            "alpha is": name or ("—" if np.isnan(alpha) else "plain value"),
            "late/early attn": attn["mean"],
            "attn 95% CI": _ci(attn),
            "late/early MLP": mlp["mean"],
            "MLP 95% CI": _ci(mlp),
            "V_L/L": q("v_ratio")["mean"],
            "token corr at L": get(fits, c, "token_corr", layer=depth)["mean"],
            "attention slope": q("slope_attn")["mean"],
        })
    table = pd.DataFrame(rows)
    rank = table["scheme"].map(list(SCHEME_NAMES.values()).index)
    return table.assign(_r=rank).sort_values(["_r", "alpha"], kind="stable").drop(columns="_r")
