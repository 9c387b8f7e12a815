"""The tables of theory096: the omega exponent and the independence assumption, per output
scale and for the premise arm."""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.omega import fit_range, formula_abs
from depthlab.analysis.select import pick
from depthlab.analysis.stats import ols_slope
from depthlab.analysis.tables import fmt, ranges, spread
from depthlab.studies.theory096.fit import NOTE_K
from depthlab.vocabulary.variants import label


def cell_name(arm: str, placement: str, out_scale: float) -> str:
    """A cell's name in tables and figures: its output scale, and for another placement than
    the note's Pre-LN (the premise arm's Sandwich-LN) the arm and the placement too."""
    scale = f"output scale {out_scale:g}"
    if placement == "pre":
        return scale
    return f"{arm}: {label(placement)}" + ("" if out_scale == 1 else f", {scale}")


def deepest(fits: pd.DataFrame, quantity: str) -> pd.DataFrame:
    """The rows of one quantity at the deepest depth of each cell (arm, placement, output
    scale), named in column `cell` and ordered Pre-LN first, then by output scale."""
    q = pick(fits, quantity=quantity)
    q = q.assign(cell=[cell_name(*key) for key in zip(q["arm"], q["placement"], q["out_scale"],
                                                      strict=True)])
    top = q.groupby("cell")["depth"].transform("max")
    q = q[q["depth"] == top].assign(_other=q["placement"].ne("pre"))
    return q.sort_values(["_other", "out_scale"], kind="stable").drop(columns="_other")


def cells(frame: pd.DataFrame) -> list[str]:
    """The cells of `deepest`'s rows, in its order."""
    return list(dict.fromkeys(frame["cell"]))


def agreement(k: np.ndarray, measured: np.ndarray, predicted: np.ndarray, tol: float) -> str:
    """The blocks k where |measured / predicted - 1| <= tol, as ranges ('1–3, 20–96')."""
    return ranges(k, np.abs(measured / predicted - 1) <= tol)


def _formula_row(name: str, depth: int, input_terms: int) -> dict:
    k = np.arange(1, depth + 1)
    row = {"": name}
    for lo, hi in fit_range(depth):
        sel = (k >= lo) & (k <= hi)
        row[f"slope k={lo}..{hi}"] = ols_slope(np.log(k[sel]), np.log(
            formula_abs(k[sel], input_terms)))[0]
    ref = min(NOTE_K, depth)
    row[f"mean|D| k={ref} / k=1"] = float(
        formula_abs(ref, input_terms) / formula_abs(1, input_terms))
    return row


def omega_exponent(fits: pd.DataFrame, omega_tolerance: float = 0.1) -> pd.DataFrame:
    """Per cell (output scale, and the premise arm): the log-log slope of mean |D_k| on k
    (mean and 95% CI across seeds) over two block ranges, the ratio at k = 24 over k = 1, and
    the blocks where the measurement agrees within `omega_tolerance` with the formula (input as
    term 0 or 1) and with the theorem under the measured term sizes; the formula's own values
    head the table."""
    omega = deepest(fits, "omega_abs")
    depth = int(omega["depth"].max())
    ref = min(NOTE_K, depth)
    rows = [
        _formula_row("formula, input = term 0 (ω_k)", depth, 0),
        _formula_row("formula, input = term 1 (ω_{k+1})", depth, 1),
        {"": "asymptote O(1/√k)", **{f"slope k={lo}..{hi}": -0.5 for lo, hi in fit_range(depth)},
         f"mean|D| k={ref} / k=1": 1 / np.sqrt(ref)},
    ]
    slopes, ratios = deepest(fits, "omega_slope"), deepest(fits, "omega_ratio")
    indep = deepest(fits, "omega_abs_indep")
    for name in cells(omega):
        cell = omega[omega["cell"] == name].sort_values("layer")
        k, measured = cell["layer"].to_numpy().astype(int), cell["mean"].to_numpy()
        L = int(cell["depth"].iloc[0])
        row = {"": f"measured, {name} (L={L})"}
        for lo, hi in fit_range(L):
            s = slopes[(slopes["cell"] == name) & (slopes["layer"] == lo)].iloc[0]
            row[f"slope k={lo}..{hi}"] = s["mean"]
            row[f"95% CI k={lo}..{hi}"] = spread(s["ci_lo"], s["ci_hi"])
        r = ratios[ratios["cell"] == name].iloc[0]
        row[f"mean|D| k={ref} / k=1"] = r["median"]
        row["seed range"] = spread(r["min"], r["max"])
        label = f"±{fmt(100 * omega_tolerance, 2)}%"
        for term, terms in (("term 0", 0), ("term 1", 1)):
            row[f"within {label} of formula ({term}) at k"] = agreement(
                k, measured, formula_abs(k, terms), omega_tolerance)
        ind = indep[indep["cell"] == name].sort_values("layer")
        if not ind.empty:
            row[f"within {label} of independence prediction at k"] = agreement(
                k, measured, ind["mean"].to_numpy(), omega_tolerance)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(rows[-1]))


def block_independence(fits: pd.DataFrame) -> pd.DataFrame:
    """Per cell (output scale, and the premise arm): sigma^2 (mean Var f_k), its drift over
    depth, V_0 and V_L, the variance additivity (V_L - V_0) / sum Var f_k, and the mean
    correlations of block outputs with the stream they join and with each other (means across
    seeds with 95% CIs)."""
    block_var = deepest(fits, "block_var")
    stream_var = deepest(fits, "stream_var")
    matrix = deepest(fits, "block_corr")
    summaries = [(column, deepest(fits, quantity)) for quantity, column in (
        ("block_var_drift", "Var f: last / first quarter"),
        ("var_additivity", "(V_L − V_0) / Σ Var f_k"),
        ("block_stream_corr_mean", "mean corr(f_k, x_{k−1})"),
        ("block_corr_mean", "mean corr(f_i, f_j), i≠j"),
        ("block_corr_lag1", "mean corr(f_k, f_{k+1})"),
    )]
    rows = []
    for name in cells(block_var):
        bv = block_var[block_var["cell"] == name]
        L = int(bv["depth"].iloc[0])
        v = stream_var[stream_var["cell"] == name].set_index("layer")["mean"]
        row = {"cell": name, "L": L, "σ² = mean Var f_k": bv["mean"].mean(),
               "V_0": v.loc[0], "V_L": v.loc[L]}
        for column, frame in summaries:
            q = frame[frame["cell"] == name]
            if not q.empty:
                row[column] = q["mean"].iloc[0]
                row[f"{column} 95% CI"] = spread(q["ci_lo"].iloc[0], q["ci_hi"].iloc[0])
        m = matrix[matrix["cell"] == name]
        if not m.empty:
            row["max |seed-mean corr(f_i, f_j)|"] = m["mean"].abs().max()
        rows.append(row)
    return pd.DataFrame(rows)
