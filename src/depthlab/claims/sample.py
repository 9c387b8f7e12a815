"""An entry's fit rows with every seed's values, and the note's statistic of them.

`select` picks the rows a row specification names (one grid point, or a series `along` a
column); `Sample` holds them per seed (paired by seed) with the entry's expression; `estimates`
gives our estimate of the statistic with its 95% interval and `statistic_of` the statistic at
any resampled set of seeds (depthlab.claims.bands draws the note's band from it).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from depthlab.analysis.tables import fmt
from depthlab.claims import bands
from depthlab.claims.expressions import NotInGrid, evaluate
from depthlab.claims.schema import ROW_EXTRA, ClaimsError


def _matches(column: pd.Series, value) -> np.ndarray:
    if value is None:
        return column.isna().to_numpy()
    if isinstance(value, int | float) and not isinstance(value, bool) and \
            pd.api.types.is_numeric_dtype(column):
        return np.isclose(column.astype(float), float(value), rtol=1e-9, atol=0)
    return (column.astype(str) == str(value)).to_numpy()


def _grid(values: pd.Series) -> str:
    shown = sorted({v for v in values.dropna()}, key=lambda v: (str(type(v)), v))
    return ", ".join(fmt(v, 6) if isinstance(v, float) else str(v) for v in shown) or "none"


def select(fit: pd.DataFrame, spec: dict, name: str) -> pd.DataFrame:
    """The rows of `fit` a row spec selects: exactly one, or for `along: column` every grid point
    of that column (within `range: [lo, hi]`), sorted by it. NotInGrid when the grid lacks them;
    ClaimsError for a key that is no column, or several rows for a single selection."""
    where = {k: v for k, v in spec.items() if k not in ROW_EXTRA}
    along = spec.get("along")
    for key in [*where, *([along] if along else [])]:
        if key not in fit.columns:
            raise ClaimsError(f"{name}: no column {key!r} in the fit")
    rows = fit
    for key, value in where.items():
        picked = rows[_matches(rows[key], value)]
        if picked.empty:
            raise NotInGrid(f"{key}={value} (this grid: {_grid(rows[key])})")
        rows = picked
    if along:
        if "range" in spec:
            lo, hi = spec["range"]
            rows = rows[(rows[along] >= lo) & (rows[along] <= hi)]
            if rows.empty:
                raise NotInGrid(f"no {along} in [{lo}, {hi}]")
        rows = rows.sort_values(along)
        if rows[along].duplicated().any():
            raise ClaimsError(f"{name}: several rows per {along}; add a key")
        return rows
    if len(rows) > 1:
        differ = [c for c in rows.columns if c not in ("seeds", "seed_values")
                  and rows[c].astype(str).nunique() > 1][:4]
        raise ClaimsError(f"{name}: selects {len(rows)} rows, not one; add a key (they differ "
                         f"in: {', '.join(differ)})")
    return rows


def seed_arrays(rows: pd.DataFrame, name: str) -> tuple[list[int], np.ndarray]:
    """The seeds and the (S, K) per-seed values of the K selected rows."""
    if "seed_values" not in rows.columns or rows["seed_values"].isna().any():
        raise ClaimsError(f"{name}: the fit rows carry no per-seed values")
    seeds = [list(s) for s in rows["seeds"]]
    if any(s != seeds[0] for s in seeds):
        raise ClaimsError(f"{name}: the rows have different seeds")
    return seeds[0], np.stack([np.asarray(v, dtype=float) for v in rows["seed_values"]], -1)


class Sample:
    """An entry's rows with every seed's values: the per-seed value of its expression and, for
    any set of seeds, the expression on their mean rows."""

    def __init__(self, fit: pd.DataFrame, rows: dict, expression: str | None, name: str):
        self.name, self.rows, self.coords, self.seeds = name, {}, {}, None
        self.arms: dict[str, set[str]] = {}  # per row, the arms its fit rows come from
        self.depth = math.nan  # the deepest stack a row reads
        for row_name, spec in rows.items():
            selected = select(fit, spec, name)
            seeds, values = seed_arrays(selected, f"{name}.{row_name}")
            if self.seeds is not None and seeds != self.seeds:
                raise ClaimsError(f"{name}: rows {list(rows)} have different seeds")
            self.seeds = seeds
            self.arms[row_name] = (set(selected["arm"].astype(str))
                                   if "arm" in selected.columns else set())
            if "depth" in selected.columns and selected["depth"].notna().any():
                self.depth = np.nanmax([self.depth, selected["depth"].max()])
            if spec.get("along"):
                self.coords[f"{row_name}_at"] = selected[spec["along"]].to_numpy(dtype=float)
                self.rows[row_name] = values
            else:
                self.rows[row_name] = values[:, 0]
        self.expression = expression or next(iter(rows))

    def value(self, rows: dict) -> np.ndarray:
        return np.asarray(evaluate(self.expression, {**rows, **self.coords}, self.name),
                          dtype=float)

    def per_seed(self) -> np.ndarray:
        """The expression per seed: (S,) or (S, M) for M members (a scalar for the statistic
        `value`, one number across the seeds)."""
        return self.value(self.rows)

    def pooled(self, idx: np.ndarray) -> np.ndarray:
        """The expression on the mean rows of the seeds each row of idx (B, n) picks: (B,) or
        (B, M)."""
        return self.value({k: v[idx].mean(axis=1) for k, v in self.rows.items()})

    def of_medians(self, idx: np.ndarray) -> np.ndarray:
        """The expression on the median rows of the seeds each row of idx (B, n) picks (a
        note's table of medians, e.g. the bend of its median curve)."""
        return self.value({k: np.median(v[idx], axis=1) for k, v in self.rows.items()})


def statistic_of(sample: Sample, statistic: str):
    """idx (B, n) -> (B,) or (B, M): the note's statistic at the seeds idx picks."""
    if statistic in ("pooled", "of_medians"):
        return getattr(sample, statistic)
    v = sample.per_seed()
    if not np.all(np.isfinite(v)):
        raise ClaimsError(f"{sample.name}: non-finite per-seed values {v}")
    if statistic == "median":
        return lambda idx: np.median(v[idx], axis=1)
    if statistic == "mean":
        return lambda idx: np.mean(v[idx], axis=1)
    if statistic == "seed0":
        return lambda idx: v[idx][:, 0]
    raise ClaimsError(f"{sample.name}: no statistic {statistic!r} over seeds")


def estimates(sample: Sample, statistic: str) -> list[tuple[float, float, float]]:
    """Per member, our estimate of the statistic over all seeds: (point, lo, hi) with its 95%
    interval (median: bootstrap of the median; mean: t-interval; pooled, of_medians: bootstrap
    of the expression on the seed means or medians; seed0: seed 0, no interval)."""
    n = len(sample.seeds)
    if statistic in ("pooled", "of_medians"):
        of = getattr(sample, statistic)
        point = np.atleast_1d(of(np.arange(n)[None, :])[0])
        lo, hi = bands.bootstrap_interval(of, n)
        return [(float(p), float(a), float(b)) for p, a, b in
                zip(point, np.atleast_1d(lo), np.atleast_1d(hi), strict=True)]
    v = sample.per_seed()
    if v.ndim == 0 or v.shape[0] != n:
        raise ClaimsError(f"{sample.name}: the value has shape {v.shape}, not one per seed "
                         f"({n}): does the expression reduce over the seeds?")
    v = v[:, None] if v.ndim == 1 else v
    return [bands.estimate(v[:, i], statistic) for i in range(v.shape[1])]
