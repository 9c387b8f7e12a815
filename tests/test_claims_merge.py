"""One verdict per sentence across the documented runs: docs/RESULTS.md
merges the default, fixes and scale runs' ledgers (depthlab.claims.merge)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from depthlab.claims.ledger import counts, ledger, multiplicity
from depthlab.claims.merge import merge_runs

NOTES = {"stack96": {"title": "t", "seeds": 6, "source": "sample"},
         "theory096": {"title": "t", "source": "prediction"}}
RATE = {"id": "theory096.title.rate", "note": "theory096", "claim": "decays as 1/sqrt(k)",
        "kind": "quantitative", "documented": -0.5, "statistic": "mean",
        "measure": {"fit": "theory096", "rows": {"r": {"quantity": "rate"}}},
        "tolerance": {"half_unit": 0.05, "reason": "one decimal"}}
AGAIN = {"id": "theory096.title.again", "note": "theory096", "claim": "as 1/sqrt(k)",
         "kind": "quantitative", "restates": "theory096.title.rate"}
AT_SCALE = {**copy.deepcopy(RATE), "id": "theory096.title.rate.at_scale",
            "asymptote_of": "theory096.title.rate",
            "measure": {"fit": "scale", "rows": {"r": {"quantity": "rate"}}}}
OTHER = {**copy.deepcopy(RATE), "id": "theory096.other", "documented": -0.3}
CLAIMS = {"claims": [RATE, AGAIN, AT_SCALE, OTHER], "notes": NOTES}


def fit(centre: float) -> pd.DataFrame:
    """A fit with one row `rate` of 12 seeds about `centre` (sd 0.01)."""
    v = centre + 0.01 * np.random.default_rng(3).standard_normal(12)
    return pd.DataFrame([{"quantity": "rate", "seeds": list(range(12)), "seed_values": list(v),
                          "n_seeds": 12, "median": float(np.median(v)),
                          "mean": float(v.mean()), "seed0": float(v[0])}])


def runs() -> dict[str, pd.DataFrame]:
    """The default run measures theory096 at finite depth (-0.3: the rate contradicted, the
    other entry supported), the scale run only the at-scale rate (-0.5)."""
    return {"default": ledger(CLAIMS, {"theory096": fit(-0.3)})[0],
            "scale": ledger(CLAIMS, {"scale": fit(-0.5)})[0]}


def test_each_entry_comes_from_the_run_that_measures_it():
    merged = merge_runs(runs()).set_index("id")
    assert list(merged.index) == [e["id"] for e in CLAIMS["claims"]]
    assert merged.loc["theory096.other", "run"] == "default"
    assert merged.loc["theory096.other", "outcome"] == "supported"
    assert merged.loc["theory096.title.rate.at_scale", "run"] == "scale"
    assert merged.loc["theory096.title.rate.at_scale", "outcome"] == "supported"


def test_an_asymptotic_sentence_is_decided_at_scale_the_finite_depth_described():
    default = runs()["default"].set_index("id")
    assert default.loc["theory096.title.rate", "outcome"] == "contradicted"  # at finite depth
    merged = merge_runs(runs()).set_index("id")
    finite = merged.loc["theory096.title.rate"]
    assert finite["restates"] == "theory096.title.rate.at_scale"
    assert finite["outcome"] == "supported" and finite["claim"] == RATE["claim"]
    assert "at finite depth (default run)" in finite["notes"]
    assert "contradicted" in finite["notes"]
    assert merged.loc["theory096.title.again", "outcome"] == "supported"
    # one counted verdict for the sentence: the at-scale one
    c = counts(merged.reset_index(drop=True), primary_only=True)
    assert (c["supported"], c["contradicted"]) == (2, 0)


def test_without_the_scale_run_the_finite_depth_entry_decides():
    merged = merge_runs({"default": runs()["default"]}).set_index("id")
    assert merged.loc["theory096.title.rate", "outcome"] == "contradicted"
    assert merged.loc["theory096.title.rate.at_scale", "outcome"] == "not measured"
    assert merged.loc["theory096.title.rate", "restates"] == ""


def test_ledgers_of_other_claims_files_are_not_merged():
    other = runs()["scale"].iloc[:3]
    with pytest.raises(ValueError, match="scale run's ledger has other entries"):
        merge_runs({"default": runs()["default"], "scale": other})


def test_multiplicity_applied_again_does_not_repeat_its_note():
    table = runs()["default"].copy()
    table.loc[0, ["outcome", "band_sigma"]] = ["contradicted", 0.5]
    once = multiplicity(table)
    assert once.loc[0, "notes"].count("across the ledger's tests") == 1
    assert multiplicity(once)["notes"].tolist() == once["notes"].tolist()
