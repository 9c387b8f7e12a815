"""theory096: the change of the normalised Pre-LN state against omega_k, and its assumption.

The note: with independent block outputs of variance sigma^2, the state before block k has
variance (k-1) sigma^2 and D_k = LN(x_{k+1}) - LN(x_k) ~ N(0, omega_k^2 I) with
omega_k^2 = 2 / (sqrt(k) (sqrt(k-1) + sqrt(k))), so E|D_k| = omega_k sqrt(2/pi) = O(1/sqrt k).
Here block k makes the change at layer k (see depthlab.core.probes.omega for the counting).

Input: the aggregated tidy table. Output: one long fit table (quantity, cell keys, layer, the
per-seed summary of depthlab.analysis.stats.seed_summary); the correlation matrix of block
outputs as seed means (quantity block_corr, row i, layer j).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.omega import fit_range, general_abs, independent_abs
from depthlab.analysis.stats import ols_slope, summarise_seeds

KEYS = ["arm", "label", "placement", "depth", "out_scale"]
NOTE_K = 24  # the note: "at k = 24 the per-layer change is about a fifth of its value at k = 1"
def _wide(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One metric as a (arm, label, seed) x layer frame."""
    sub = table[(table["metric"] == metric) & (table["sublayer"] == "block")]
    return sub.pivot_table(index=["arm", "label", "seed"], columns="layer", values="value")


def per_seed(table: pd.DataFrame) -> pd.DataFrame:
    """Per seed and cell: the independence prediction at every block (omega_abs_indep), the
    note's general form 2 - 2 sqrt(V_{k-1}/V_k) with the seed's measured stream variances
    (omega_abs_general, as E|D_k|; left out where V_k < V_{k-1}), the
    log-log slopes of mean |D_k| on k (omega_slope, layer = first block of the range), the
    ratio mean|D| at k = min(24, L) over k = 1 (omega_ratio, layer = that k), and the checks of
    the assumption: (V_L - V_0) / sum_k Var f_k (var_additivity, 1 if uncorrelated), mean
    Var f over the last quarter of blocks / the first quarter (block_var_drift, 1 for one
    sigma), mean corr(f_k, x_{k-1}) (block_stream_corr_mean), and with block_corr the mean
    corr(f_i, f_j) over i != j and over |i - j| = 1 (block_corr_mean, block_corr_lag1)."""
    omega = _wide(table, "omega_abs")
    stream_var = _wide(table, "stream_var")
    block_var = _wide(table, "block_var")
    rows = []

    def add(index, metric, value, layer=np.nan):
        rows.append({**dict(zip(["arm", "label", "seed"], index, strict=True)),
                     "metric": metric, "layer": layer, "value": float(value)})

    for index, w in omega.iterrows():
        w = w.dropna()
        k = w.index.to_numpy()
        depth = int(k.max())
        for lo, hi in fit_range(depth):
            sel = (k >= lo) & (k <= hi)
            add(index, "omega_slope", ols_slope(np.log(k[sel]), np.log(w.to_numpy()[sel]))[0], lo)
        k_ref = min(NOTE_K, depth)
        add(index, "omega_ratio", w.loc[k_ref] / w.loc[1], k_ref)
        if index not in block_var.index:
            continue
        bv = block_var.loc[index].dropna().to_numpy()
        v = stream_var.loc[index].dropna().to_numpy()
        for layer, value in enumerate(independent_abs(v[0], bv), start=1):
            add(index, "omega_abs_indep", value, layer)
        for layer, value in enumerate(general_abs(v), start=1):
            if np.isfinite(value):
                add(index, "omega_abs_general", value, layer)
        add(index, "var_additivity", (v[-1] - v[0]) / bv.sum())
        quarter = max(1, depth // 4)
        add(index, "block_var_drift", bv[-quarter:].mean() / bv[:quarter].mean())
    corr = table[table["metric"] == "block_stream_corr"]
    for index, sub in corr.groupby(["arm", "label", "seed"]):
        add(index, "block_stream_corr_mean", sub["value"].mean())
    pairs = block_pairs(table)
    for index, sub in pairs.groupby(["arm", "label", "seed"]):
        add(index, "block_corr_mean", sub["value"].mean())
        add(index, "block_corr_lag1", sub.loc[sub["layer"] - sub["row"] == 1, "value"].mean())
    return pd.DataFrame(rows)


def block_pairs(table: pd.DataFrame) -> pd.DataFrame:
    """The block_corr rows with the row block i (from sublayer 'f<i>') as an integer column."""
    pairs = table[table["metric"] == "block_corr"].copy()
    pairs["row"] = pairs["sublayer"].str[1:].astype(int)
    return pairs


def block_corr_matrix(table: pd.DataFrame) -> pd.DataFrame:
    """Seed mean of corr(f_i, f_j) for every pair i < j of each cell (quantity block_corr)."""
    pairs = block_pairs(table)
    if pairs.empty:
        return pd.DataFrame()
    out = (pairs.groupby([*KEYS, "row", "layer"])["value"]
           .agg(mean="mean", n_seeds="count", min="min", max="max").reset_index())
    out["quantity"] = "block_corr"
    return out


def fit(table: pd.DataFrame, axes: dict[str, list[str]]) -> pd.DataFrame:
    """All theory096 fits as one long table (quantity, cell keys, layer, seed summary)."""
    parts = [
        summarise_seeds(table[(table["metric"] == m) & (table["sublayer"] == "block")],
                   [*KEYS, "layer"], m)
        for m in ("omega_abs", "omega_var", "block_var", "block_abs", "block_stream_corr",
                  "stream_var")
    ]
    cells = table.drop_duplicates(["arm", "label"])[KEYS]
    derived = per_seed(table).merge(cells, on=["arm", "label"])
    for metric, sub in derived.groupby("metric"):
        if sub["layer"].notna().any():
            parts.append(summarise_seeds(sub, [*KEYS, "layer"], metric))
        else:
            parts.append(summarise_seeds(sub, KEYS, metric))
    parts.append(block_corr_matrix(table))
    return pd.concat(parts, ignore_index=True)
