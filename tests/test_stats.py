"""depthlab.analysis.stats.summarise_seeds against pandas' own group statistics and scipy's
t-interval: one row per group of keys in sorted order, seeds in order, missing keys left out."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from depthlab.analysis.stats import summarise_seeds


def test_a_group_s_summary_is_pandas_and_scipy_s_over_its_seeds_in_order():
    rng = np.random.default_rng(3)
    rows = [{"placement": p, "layer": layer, "seed": seed, "value": rng.normal()}
            for p in ("pre", "post") for layer in (2.0, 1.0, np.nan) for seed in (4, 0, 2, 1)]
    frame = pd.DataFrame(rows).sample(frac=1, random_state=1)  # rows in no order
    out = summarise_seeds(frame, ["placement", "layer"], "q")
    kept = frame.dropna(subset=["layer"])  # a missing key: left out
    groups = kept.groupby(["placement", "layer"])["value"]
    assert list(zip(out["placement"], out["layer"], strict=True)) == sorted(groups.groups)
    for _, row in out.iterrows():
        sub = kept[(kept["placement"] == row["placement"]) & (kept["layer"] == row["layer"])]
        sub = sub.sort_values("seed", kind="stable")
        v = sub["value"].to_numpy()
        assert row["seeds"] == [0, 1, 2, 4] and row["seed_values"] == v.tolist()
        assert row["seed0"] == v[0] and row["n_seeds"] == 4 and row["quantity"] == "q"
        assert (row["median"], row["min"], row["max"]) == (np.median(v), v.min(), v.max())
        assert row["mean"] == pytest.approx(v.mean(), rel=1e-15)
        lo, hi = stats.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=stats.sem(v))
        assert (row["ci_lo"], row["ci_hi"]) == pytest.approx((lo, hi), rel=1e-12)


def test_no_group_is_an_empty_table():
    frame = pd.DataFrame({"placement": ["pre"], "layer": [np.nan], "seed": [0], "value": [1.0]})
    assert summarise_seeds(frame, ["placement", "layer"], "q").empty
