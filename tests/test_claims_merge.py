"""One verdict per sentence across the documented runs: docs/RESULTS.md merges the default,
fixes and scale runs' ledgers (depthlab.claims.merge); another estimator of a sentence (an
asymptote at scale) is listed beside its verdict, never the verdict."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from depthlab.claims.evidence import gate
from depthlab.claims.ledger import counts, ledger
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
            "extends": "theory096.title.rate",
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
    return {name: ledger(CLAIMS, fits)[0].assign(fingerprint="f") for name, fits in (
        ("default", {"theory096": fit(-0.3)}), ("scale", {"scale": fit(-0.5)}))}


def test_each_entry_comes_from_the_run_that_measures_it():
    merged = merge_runs(runs()).set_index("id")
    assert list(merged.index) == [e["id"] for e in CLAIMS["claims"]]
    assert merged.loc["theory096.other", "run"] == "default"
    assert merged.loc["theory096.other", "outcome"] == "supported"
    assert merged.loc["theory096.title.rate.at_scale", "run"] == "scale"


def test_an_asymptote_is_listed_beside_the_verdict_never_the_verdict():
    """The note's estimator at the note's depth decides the sentence; the at-scale estimator is
    measured, its outcome shown, and not counted."""
    merged = merge_runs(runs()).set_index("id")
    finite = merged.loc["theory096.title.rate"]
    assert finite["outcome"] == "contradicted" and finite["restates"] == ""
    scale = merged.loc["theory096.title.rate.at_scale"]
    assert scale["outcome"] == "not counted"
    assert scale["verdict"].startswith("not counted (another estimator of theory096.title.rate"
                                       ", beside its verdict): supported")
    assert merged.loc["theory096.title.again", "outcome"] == "contradicted"
    c = counts(merged.reset_index(drop=True), primary_only=True)
    assert (c["supported"], c["contradicted"], c["not counted"]) == (1, 1, 1)


def test_ledgers_of_other_claims_files_are_not_merged():
    other = runs()["scale"].iloc[:3]
    with pytest.raises(ValueError, match="scale run's ledger has other entries"):
        merge_runs({"default": runs()["default"], "scale": other})


def test_the_gate_applied_again_starts_from_the_rule_s_outcome():
    """A merged ledger is gated anew from each row's outcome before the gate: gating twice
    changes nothing, and a row the first gate turned inconclusive is judged again."""
    table = runs()["default"]
    once = gate(table)
    twice = gate(once)
    assert once["verdict"].tolist() == twice["verdict"].tolist()
    assert (once["outcome_rule"] == table["outcome"]).all()
