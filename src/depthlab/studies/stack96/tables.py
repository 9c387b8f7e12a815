"""The four tables of the stack96 note, and the sensitivity of its gradient-ratio table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.select import pick, pick_one
from depthlab.analysis.tables import spread
from depthlab.vocabulary.variants import block_of, ignored, is_own, label, order, per_placement


def twenty_layers(fits: pd.DataFrame, single_depth: int = 20) -> pd.DataFrame:
    """Layer-1 and layer-L gradient norm and their ratio for seed 0, and the median ratio
    across seeds with its seed range, per placement, at one depth (the note's L = 20)."""
    depth = single_depth
    rows = []
    for placement in order(fits["placement"].dropna()):
        grads = pick(fits, quantity="grad_norm", arm="grad", placement=placement, depth=depth)
        ratio = pick(fits, quantity="grad_ratio", arm="grad", placement=placement, depth=depth)
        if grads.empty:
            continue
        first = grads.loc[grads["layer"] == 1, "seed0"].iloc[0]
        last = grads.loc[grads["layer"] == depth, "seed0"].iloc[0]
        r = ratio.iloc[0]
        rows.append({
            "placement": label(placement),
            "layer 1 grad (seed 0)": first,
            f"layer {depth} grad (seed 0)": last,
            "ratio (seed 0)": r["seed0"],
            f"ratio (median of {int(r['n_seeds'])})": r["median"],
            "seed range": spread(r["min"], r["max"]),
        })
    return pd.DataFrame(rows)


def grad_ratio_by_depth(fits: pd.DataFrame, arm: str = "grad",
                        depths: list[int] | None = None) -> pd.DataFrame:
    """Median first/last gradient ratio by depth (rows) and placement (columns), each with the
    seed range beside it."""
    ratio = pick(fits, quantity="grad_ratio", arm=arm)
    depths = depths or sorted(ratio["depth"].unique())
    rows = []
    for depth in depths:
        row = {"L": int(depth)}
        for placement in order(ratio["placement"]):
            r = ratio[(ratio["depth"] == depth) & (ratio["placement"] == placement)]
            if r.empty:
                continue
            name = label(placement)
            row[name] = r["median"].iloc[0]
            row[f"{name} seed range"] = spread(r["min"].iloc[0], r["max"].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


def stream_growth(fits: pd.DataFrame, out_scale: float = 1.0) -> pd.DataFrame:
    """Per placement key of the stream arm (a built-in placement or an own block,
    depthlab.vocabulary.variants.with_blocks) and depth, at output scale `out_scale`: the stream
    sd after block 1 and block L (medians), factor, sqrt(L), the one-depth exponent
    ln(factor)/ln(L), and the variance-budget prediction sqrt(V_0 + c L). A row per depth
    where the fits hold Pre-LN alone (the default configs); else a row per key and depth, led
    by a `placement` column (its label; variants.per_placement)."""
    rows = []
    factors = pick(fits, quantity="factor", arm="stream", out_scale=out_scale)
    keys = order(factors["placement"])
    named = per_placement(keys)
    for key in keys:
        for depth in sorted(pick(factors, placement=key)["depth"].unique()):
            cell = {"arm": "stream", "placement": key, "depth": depth, "out_scale": out_scale}

            def get(q, cell=cell):
                return pick_one(fits, quantity=q, **cell)

            factor = get("factor")
            rows.append({
                **({"placement": label(key)} if named else {}),
                "L": int(depth),
                "layer 1 sd": get("sd_first")["median"],
                "last sd": get("sd_last")["median"],
                "factor": factor["median"],
                "factor seed range": spread(factor["min"], factor["max"]),
                "sqrt(L)": float(np.sqrt(depth)),
                "exponent ln(factor)/ln(L)": get("exponent_one_depth")["median"],
                "budget c (V_l = V_0 + c l)": get("budget_c")["median"],
                "budget sd_L = sqrt(V_0 + c L)": get("budget_sd_last")["median"],
            })
    return pd.DataFrame(rows)


def output_scale(fits: pd.DataFrame) -> pd.DataFrame:
    """Per placement key of the stream arm (as in `stream_growth`) and output scale: the growth
    factor and one-depth exponent at the arm's deepest depth, and the exponent fitted across
    depths (slope of ln factor on ln L, 95% CI across seeds). A row per output scale where the
    fits hold Pre-LN alone; else a row per key and output scale, led by a `placement` column
    (a key not measured at the deepest depth has none), an own block's output scale marked as
    only given to it (variants.ignored: depthlab's built-in blocks alone apply it)."""
    factors = pick(fits, quantity="factor", arm="stream")
    depth = factors["depth"].max()
    keys = order(factors["placement"])
    named = per_placement(keys)
    rows = []
    for key in keys:
        for scale in sorted(pick(factors, placement=key)["out_scale"].unique()):
            cell = {"arm": "stream", "placement": key, "depth": depth, "out_scale": scale}
            if pick(fits, quantity="factor", **cell).empty:
                continue
            factor = pick_one(fits, quantity="factor", **cell)
            row = {
                **({"placement": label(key)} if named else {}),
                "output scale": (ignored("out_scale", block_of(key), f"{scale:g}")
                                 if is_own(key) else scale),
                f"factor at L={int(depth)}": factor["median"],
                "factor seed range": spread(factor["min"], factor["max"]),
                "exponent ln(factor)/ln(L)":
                    pick_one(fits, quantity="exponent_one_depth", **cell)["median"],
            }
            across = pick(fits, quantity="exponent_across_depths", arm="stream", placement=key,
                          out_scale=scale)
            if not across.empty:
                a = across.iloc[0]
                row["exponent across depths (mean)"] = a["mean"]
                row["95% CI"] = spread(a["ci_lo"], a["ci_hi"])
            rows.append(row)
    return pd.DataFrame(rows)


def grad_ratio_sensitivity(fits: pd.DataFrame) -> pd.DataFrame:
    """Median gradient ratio per open-setting variant (rows) and placement x depth (columns);
    'baseline' is the study's default settings."""
    ratio = fits[(fits["quantity"] == "grad_ratio") & fits["arm"].str.match(r"^(grad|sens_)")]
    depths = sorted(ratio[ratio["arm"] != "grad"]["depth"].unique()) or sorted(
        ratio["depth"].unique())
    ratio = ratio[ratio["depth"].isin(depths)]
    rows = []
    for variant, sub in ratio.groupby("variant", sort=False):
        row = {"variant": variant}
        for placement in order(ratio["placement"]):
            for depth in depths:
                r = sub[(sub["placement"] == placement) & (sub["depth"] == depth)]
                if not r.empty:
                    row[f"{label(placement)} L={int(depth)}"] = r["median"].iloc[0]
        rows.append(row)
    table = pd.DataFrame(rows)
    first = table["variant"] == "baseline"
    return pd.concat([table[first], table[~first]], ignore_index=True)
