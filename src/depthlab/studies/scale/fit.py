"""Fits of the scale study: the notes' probes at initialisation at depths to 1024 and widths to
1024, and where each placement's trend bends.

Input: the aggregated tidy table (one row per seed, layer, sublayer, metric; depthlab.core.probes).
Output: one long fit table (quantity, KEYS, layer, the seed summary of
depthlab.analysis.stats.summarise_seeds). QUANTITIES says what each quantity is, in which units.
A local exponent is read over one octave of depth, l/2 to l, at the octave ends l = 8, 16, ...,
1024 of a cell's own profile (the stream after block l of an L-block Pre-LN stack is that of an
l-block stack: the blocks after l do not act on it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from depthlab.analysis.profiles import PerSeed, last, omega_slope, wide
from depthlab.analysis.stats import ols_slope, summarise_seeds

KEYS = ["arm", "label", "placement", "depth", "d_model", "grad_of"]
SEED_KEYS = ["arm", "label", "seed"]
ACROSS_KEYS = ["arm", "placement", "d_model", "grad_of"]  # a curve over depth
OCTAVE_ENDS = tuple(2**j for j in range(3, 11))  # 8 ... 1024

QUANTITIES = {
    "stream_rms": "sqrt(mean x_l²) of the stream after block l, before any final norm (input "
                  "sd units)",
    "omega_abs": "mean |LN(x_l) − LN(x_{l−1})| per coordinate (theory096's probe; units of a "
                 "normalised coordinate)",
    "token_corr": "mean pairwise cosine of the token vectors after block l",
    "grad_norm": "Frobenius norm of dLoss/dθ of block l (grad_of: all its parameters or its "
                 "six weight matrices)",
    "stream_local_exponent": "d ln rms(x_l) / d ln l over the octave l/2..l (layer = l): 0.5 "
                             "is sqrt(depth) growth",
    "stream_local_prediction": "the same exponent of the finite-depth prediction "
                               "sqrt(V_0 + l sigma²), sigma² = (V_L − V_0)/L of the seed",
    "omega_local_slope": "log-log OLS slope of omega_abs on k over the octave l/2..l (layer = "
                         "l): theory096's rate is −0.5",
    "omega_slope": "the same over the deepest three quarters of the blocks",
    "stream_growth": "rms(x_L) / rms(x_0)",
    "token_corr_last": "token_corr after the last block",
    "grad_ratio": "first/last block gradient ratio ‖g_1‖/‖g_L‖",
    "grad_ratio_local_exponent": "d ln grad_ratio / d ln L between an arm's consecutive depths "
                                 "(depth = the deeper one): above 0 the ratio still grows",
}


def deepest(fits: pd.DataFrame, arm: str) -> pd.DataFrame:
    """The fit rows of an arm's deepest cells."""
    rows = fits[fits["arm"] == arm]
    return rows[rows["depth"] == rows["depth"].max()]


def _octave_ends(depth: int) -> list[int]:
    return [end for end in OCTAVE_ENDS if end <= depth]


def local_exponents(rms: pd.Series, var: pd.Series) -> dict[str, dict[int, float]]:
    """One seed's stream profile (rms and variance by layer, 0 = the input) reduced to its local
    exponent and the finite-depth prediction's at every octave end."""
    depth = int(rms.index.max())
    sigma2 = (var[depth] - var[0]) / depth
    measured, predicted = {}, {}
    for end in _octave_ends(depth):
        measured[end] = float(np.log(rms[end] / rms[end // 2]) / np.log(2))
        ratio = (var[0] + end * sigma2) / (var[0] + end // 2 * sigma2)
        predicted[end] = float(0.5 * np.log(ratio) / np.log(2))
    return {"stream_local_exponent": measured, "stream_local_prediction": predicted}


def omega_local(omega: pd.Series) -> dict[int, float]:
    """One seed's omega_abs profile (by block) reduced to its log-log slope over every octave
    (NaN-free: octaves where omega is not positive, ReZero at init, are left out)."""
    out = {}
    for end in _octave_ends(int(omega.index.max())):
        window = omega.loc[end // 2:end]
        if (window > 0).all():
            k = window.index.to_numpy(dtype=float)
            out[end] = ols_slope(np.log(k), np.log(window.to_numpy(dtype=float)))[0]
    return out


def per_seed(table: pd.DataFrame) -> pd.DataFrame:
    """Per-seed numbers (arm, label, seed, layer, metric, value): per cell (layer = its depth)
    and at each octave end of its profile (layer = the end)."""
    out = PerSeed()
    rms = wide(table, "stream_rms", SEED_KEYS)
    var = wide(table, "stream_var", SEED_KEYS)
    omega = wide(table, "omega_abs", SEED_KEYS)
    rows = []
    for index in rms.index:
        profile = rms.loc[index].dropna()
        found = local_exponents(profile, var.loc[index].dropna())
        if index in omega.index:
            found["omega_local_slope"] = omega_local(omega.loc[index].dropna())
        rows += [(*index, end, metric, value) for metric, values in found.items()
                 for end, value in values.items()]
    local = pd.DataFrame(rows, columns=[*SEED_KEYS, "layer", "metric", "value"])
    growth = last(rms) / rms[0]
    out.add("stream_growth", growth)
    out.add("omega_slope", omega.apply(omega_slope, axis=1))
    out.add("token_corr_last", last(wide(table, "token_corr", SEED_KEYS)))
    ratio = table[table["metric"] == "grad_ratio"]
    if not ratio.empty:
        out.add("grad_ratio", ratio.set_index(SEED_KEYS)["value"])
    cells = out.frame()
    return pd.concat([local, cells.assign(layer=np.nan)], ignore_index=True)


def local_depth_exponents(ratios: pd.DataFrame) -> pd.DataFrame:
    """grad_ratio per seed (ACROSS_KEYS, depth, seed, value) -> its local exponent between
    consecutive depths of each curve, per seed, at the deeper depth."""
    parts = []
    for _, curve in ratios.groupby(ACROSS_KEYS, sort=True):
        wide_ = curve.pivot(index="seed", columns="depth", values="value").sort_index(axis=1)
        depths = list(wide_.columns)
        for shallow, deep in zip(depths, depths[1:], strict=False):
            value = np.log(wide_[deep] / wide_[shallow]) / np.log(deep / shallow)
            parts.append(curve[curve["depth"] == deep].drop(columns="value").merge(
                value.rename("value").reset_index(), on="seed"))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def fit(table: pd.DataFrame, axes: dict[str, list[str]]) -> pd.DataFrame:
    """All scale fits as one long table: the probes per block, the per-seed numbers of
    `per_seed` per cell and octave end, and grad_ratio_local_exponent across depths. `axes` is
    not needed: a cell's keys are its setting columns."""
    cells = table.drop_duplicates(["arm", "label"])[KEYS]
    slim = table[[*KEYS, "seed", "layer", "metric", "sublayer", "value"]].astype(
        {key: object for key in ("arm", "label", "placement", "grad_of")})
    slim = slim[slim["sublayer"] == "block"]
    parts = [summarise_seeds(sub, [*KEYS, "layer"], metric)
             for metric, sub in slim.groupby("metric", sort=True)
             if metric in ("stream_rms", "omega_abs", "token_corr", "grad_norm")]
    derived = per_seed(slim).merge(cells, on=["arm", "label"])
    local = derived[derived["layer"].notna()]
    for metric, sub in local.groupby("metric", sort=True):
        parts.append(summarise_seeds(sub, [*KEYS, "layer"], metric))
    per_cell = derived[derived["layer"].isna()].drop(columns="layer")
    for metric, sub in per_cell.groupby("metric", sort=True):
        parts.append(summarise_seeds(sub, KEYS, metric))
    ratios = local_depth_exponents(per_cell[per_cell["metric"] == "grad_ratio"])
    if not ratios.empty:
        parts.append(summarise_seeds(ratios, KEYS, "grad_ratio_local_exponent"))
    return pd.concat(parts, ignore_index=True)
