"""Fits of the varsplit study: the attention/MLP split of the Pre-LN variance increments.

Input: the aggregated tidy table (one row per seed, layer, sublayer, metric). Output: one long
fit table, one row per quantity and cell (and layer, for per-layer curves), each a summary of
per-seed values across seeds (stats.seed_summary: median, range, mean and its 95% t-interval).

Per-seed quantities of a cell of depth L (all dimensionless: the input has variance 1):
- delta_attn(l), delta_mlp(l), l = 1..L: the variance each sublayer adds to the stream (the
  `delta` probe), and added_attn(l), added_mlp(l): the same without the cross term, the
  variance of the (scaled) branch output itself (`added_variance`). Every variance
  (increments, branch variances and V_l) is taken in the frame where the skip path has weight
  1, i.e. divided by c^(2k) for a skip scale c, with k = 2l-1 (attention) or 2l (MLP, V_l) the
  sublayers so far. With c = 1 nothing changes; by LayerNorm's scale invariance a skip scale c
  is the same forward pass as a branch multiplier c^-k at sublayer k, so these are the
  variances of that unit-skip stack.
- slope_*: OLS slope of the increment against l (per layer). Every seed has the same layers, so
  the mean of per-seed slopes is also the slope of one fit to all seeds' points (pooled).
- v_ratio: V_L / L (V_l the stream variance after block l, V_0 = 1); mean_increment:
  (V_L - V_0) / L.
- link_r: Pearson r across layers between delta_attn(l) and the token correlation of the
  stream attention l reads, token_corr(l-1); link_slope, link_intercept: the OLS fit of
  delta_attn(l) on token_corr(l-1); link_r_of_means: the same r between the seed-mean curves.
- late_early_*: the mean increment over the last quarter of the blocks over that of the first.
- ratio_first = delta_mlp(1) / delta_attn(1); ratio_deep = delta_attn(l_d) / delta_mlp(l_d) at
  l_d = 3L/4 (the note's layer 48 of 64); per seed, and as ratios of the seed means (*_of_means).
- crossover: the first layer at which the seed-mean attention increment exceeds the seed-mean
  MLP one (one value per cell; no row when they never cross).
The last two only for cells without a skip scale: there the deep branches fall below float64
resolution of the stream (they add exactly 0 for c = 2), so the ratios are undefined.
A non-finite per-seed scalar is an error naming the cell, seed and quantity.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.stats import ols_slope, summarise_seeds

CELL_KEYS = ["arm", "label", "init", "depth", "residual_scale", "out_scale", "skip_scale"]
SCHEME_SETTINGS = {"residual_scale": "branch", "out_scale": "init", "skip_scale": "skip"}


def scheme_of(row: pd.Series, layerwise: bool) -> str:
    """What a cell scales: 'layerwise' (per-layer, per-branch scales), 'branch' (residual_scale,
    the branch output multiplier), 'init' (out_scale, the init std of Wo and W2), 'skip'
    (skip_scale, the skip path as in DeepNorm), 'none', or 'mixed' when several differ from 1."""
    changed = [name for key, name in SCHEME_SETTINGS.items() if row[key] != 1]
    if layerwise:
        changed.insert(0, "layerwise")
    if len(changed) > 1:
        return "mixed"
    return changed[0] if changed else "none"


def unit_skip(table: pd.DataFrame) -> pd.DataFrame:
    """The table with `delta`, `branch_var` and `stream_var` divided by skip_scale^(2k), k the
    sublayers up to the point measured (2l-1 for the attention sublayer of block l, 2l for the
    rest)."""
    attn = table["metric"].isin(["delta", "branch_var"]) & (table["sublayer"] == "attn")
    k = 2 * table["layer"] - attn
    variance = table["metric"].isin(["delta", "branch_var", "stream_var"])
    power = np.where(variance, 2.0 * k, 0.0)
    return table.assign(value=table["value"] / table["skip_scale"].astype(float) ** power)


def increments(table: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, label, seed, layer): delta_attn and delta_mlp, and the token correlation of the
    stream block l reads (token_corr_in = token_corr(l-1))."""
    wide = table[table["metric"] == "delta"].pivot_table(
        index=["arm", "label", "seed", "layer"], columns="sublayer", values="value"
    )
    out = wide[["attn", "mlp"]].set_axis(["delta_attn", "delta_mlp"], axis=1)
    corr = table[table["metric"] == "token_corr"].set_index(
        ["arm", "label", "seed", "layer"])["value"]
    shifted = corr.rename(index=lambda v: v + 1, level="layer")
    out["token_corr_in"] = shifted.reindex(out.index).to_numpy()
    return out.reset_index()


def added_variance(table: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, label, seed, layer): added_attn and added_mlp, the variance of what each
    sublayer adds to the stream without the cross term: Var(branch output) times its scale
    squared (residual_scale, or the layerwise branch_scale of that layer). With the cross term
    2 Cov(stream, branch) it is the increment `delta`."""
    keys = ["arm", "label", "seed", "layer", "sublayer"]
    var = table[table["metric"] == "branch_var"].set_index(keys)
    scale = table[table["metric"] == "branch_scale"].set_index(keys)["value"]
    factor = scale.reindex(var.index).fillna(var["residual_scale"]).astype(float) ** 2
    added = (var["value"] * factor).rename("value").reset_index()
    added["metric"] = "added_" + added["sublayer"]
    return added[["arm", "label", "seed", "layer", "metric", "value"]]


def _window_mean(values: np.ndarray, layers: np.ndarray, last: bool) -> float:
    """Mean over the first (last=False) or last quarter of the blocks 1..L."""
    quarter = max(1, len(layers) // 4)
    order = np.argsort(layers)
    pick = order[-quarter:] if last else order[:quarter]
    return float(values[pick].mean())


def _long(rows: list[tuple[tuple, dict]]) -> pd.DataFrame:
    """(arm, label, seed), {quantity: value} pairs as a long frame; ValueError on a non-finite
    value, naming the cell, seed and quantity."""
    out = []
    for (arm, label, seed), values in rows:
        for quantity, value in values.items():
            if not np.isfinite(value):
                raise ValueError(f"{arm}/{label} seed {seed}: {quantity} = {value}")
            out.append({"arm": arm, "label": label, "seed": seed, "metric": quantity,
                        "value": float(value)})
    return pd.DataFrame(out)


def seed_ratios(inc: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, label, seed): ratio_first and ratio_deep (module docstring)."""
    rows = []
    for key, sub in inc.groupby(["arm", "label", "seed"], sort=True):
        sub = sub.set_index("layer").sort_index()
        deep = 3 * int(sub.index.max()) // 4
        rows.append((key, {
            "ratio_first": sub["delta_mlp"].iloc[0] / sub["delta_attn"].iloc[0],
            "ratio_deep": sub.loc[deep, "delta_attn"] / sub.loc[deep, "delta_mlp"],
        }))
    return _long(rows)


def seed_scalars(inc: pd.DataFrame, var: pd.DataFrame) -> pd.DataFrame:
    """Per (arm, label, seed): slopes, V_L/L, the correlation link and late/early ratios."""
    rows = []
    for (arm, label, seed), sub in inc.groupby(["arm", "label", "seed"], sort=True):
        sub = sub.sort_values("layer")
        layer = sub["layer"].to_numpy()
        depth = int(layer.max())
        a, m = sub["delta_attn"].to_numpy(), sub["delta_mlp"].to_numpy()
        v = var.loc[(arm, label, seed)]
        link_slope, link_intercept = ols_slope(sub["token_corr_in"], a)
        values = {
            "slope_attn": ols_slope(layer, a)[0],
            "slope_mlp": ols_slope(layer, m)[0],
            "v_ratio": float(v.loc[depth]) / depth,
            "mean_increment": float(v.loc[depth] - v.loc[0]) / depth,
            "link_r": float(np.corrcoef(sub["token_corr_in"], a)[0, 1]),
            "link_slope": link_slope,
            "link_intercept": link_intercept,
            "late_early_attn": _window_mean(a, layer, True) / _window_mean(a, layer, False),
            "late_early_mlp": _window_mean(m, layer, True) / _window_mean(m, layer, False),
        }
        rows.append(((arm, label, seed), values))
    return _long(rows)


def _single(keys: dict, quantity: str, value: float, n_seeds: int, layer=None) -> dict:
    """A fit row that is one number computed from seed means (no spread across seeds)."""
    return {**keys, "layer": layer, "quantity": quantity, "n_seeds": n_seeds, "median": value,
            "mean": value, "min": value, "max": value, "ci_lo": np.nan, "ci_hi": np.nan}


def mean_curve_fits(inc: pd.DataFrame) -> pd.DataFrame:
    """Per cell, from the seed-mean curves: the crossover layer, the layer-1 and layer-3L/4
    ratios of seed means, and the correlation link between the mean curves."""
    rows = []
    for (arm, label), sub in inc.groupby(["arm", "label"], sort=True):
        n = sub["seed"].nunique()
        mean = sub.groupby("layer")[["delta_attn", "delta_mlp", "token_corr_in"]].mean()
        mean = mean.sort_index()
        depth = int(mean.index.max())
        keys = {"arm": arm, "label": label}
        first = mean.iloc[0]
        deep = mean.loc[3 * depth // 4]
        rows.append(_single(keys, "ratio_first_of_means",
                            first["delta_mlp"] / first["delta_attn"], n, int(mean.index[0])))
        rows.append(_single(keys, "ratio_deep_of_means",
                            deep["delta_attn"] / deep["delta_mlp"], n, 3 * depth // 4))
        rows.append(_single(keys, "link_r_of_means",
                            float(np.corrcoef(mean["token_corr_in"], mean["delta_attn"])[0, 1]), n))
        above = mean.index[mean["delta_attn"] > mean["delta_mlp"]]
        if len(above):
            rows.append(_single(keys, "crossover", float(above[0]), n))
    return pd.DataFrame(rows)


def fit(table: pd.DataFrame, axes: dict[str, list[str]]) -> pd.DataFrame:
    """All varsplit fits as one long table (quantity, cell keys, scheme, layer, summary)."""
    table = unit_skip(table[table["placement"] == "pre"])
    cells = table.drop_duplicates(["arm", "label"])[CELL_KEYS].copy()
    layerwise = set(table.loc[table["metric"] == "branch_scale", "arm"])
    cells["scheme"] = [scheme_of(r, r["arm"] in layerwise) for _, r in cells.iterrows()]
    inc = increments(table)
    var = table[(table["metric"] == "stream_var")].set_index(
        ["arm", "label", "seed", "layer"])["value"].sort_index()
    long_inc = inc.melt(id_vars=["arm", "label", "seed", "layer"],
                        value_vars=["delta_attn", "delta_mlp"], var_name="metric")
    per_layer = pd.concat([
        long_inc,
        table[table["metric"].isin(["token_corr", "stream_var"])][
            ["arm", "label", "seed", "layer", "metric", "value"]],
        table[table["metric"] == "branch_scale"].assign(
            metric=lambda f: "branch_scale_" + f["sublayer"])[
            ["arm", "label", "seed", "layer", "metric", "value"]],
        added_variance(table),
    ], ignore_index=True)
    parts = [
        summarise_seeds(sub, ["arm", "label", "layer"], metric)
        for metric, sub in per_layer.groupby("metric")
    ]
    unskipped = inc.merge(cells.loc[cells["skip_scale"] == 1, ["arm", "label"]])
    scalars = pd.concat([seed_scalars(inc, var), seed_ratios(unskipped)], ignore_index=True)
    parts += [summarise_seeds(sub, ["arm", "label"], m) for m, sub in scalars.groupby("metric")]
    parts.append(mean_curve_fits(unskipped))
    fits = pd.concat(parts, ignore_index=True)
    return fits.merge(cells, on=["arm", "label"], how="left")
