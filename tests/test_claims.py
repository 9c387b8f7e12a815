"""The claims ledger (issue 5): the schema of config/claims.yaml, the verdict rules on small
synthetic fit tables, the fit quantities the claims added, and the claims rule and the report on
the tiny study."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import DELETE, ROOT, edited, run_snakemake

from depthlab.claims.ledger import ClaimError, evaluate, ledger, to_html, to_markdown, verdict
from depthlab.claims.schema import NOTES, ClaimsError, check_claims, load_claims
from depthlab.studies import TARGETS
from depthlab.studies.monitor import fit as monitor
from depthlab.studies.stack96 import fit as stack96

CLAIMS = ROOT / "config/claims.yaml"

# a valid entry; each bad case below edits one key
ENTRY = {
    "id": "stack96.grad_ratio.pre.L96", "note": "stack96", "claim": "Pre-LN's 2.89",
    "documented": 2.89, "reference": 1,
    "measure": {"fit": "stack96", "field": "median",
                "where": {"quantity": "grad_ratio", "placement": "pre", "depth": 96}},
    "tolerance": {"abs": 0.005, "compare": "seed_range", "reason": "printed to 3 digits"},
}


# 1. the schema


def test_the_claims_file_validates_and_covers_the_four_notes():
    entries = load_claims(CLAIMS)
    notes = {e["note"] for e in entries}
    assert {"stack96", "varsplit", "theory096", "monitor"} <= notes <= set(NOTES)
    assert len(entries) >= 60
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    # every cell of stack96's second table has an entry
    for placement in ("post", "pre", "none"):
        for depth in (6, 24, 48, 96):
            assert f"stack96.grad_ratio.{placement}.L{depth}" in ids


def with_edit(path: tuple, value) -> dict:
    """ENTRY with the key at `path` set to `value` (None: removed)."""
    return edited(ENTRY, {path: DELETE if value is None else value})


BAD = [
    ("unknown_key", ("colour",), "red", ["stack96.grad_ratio.pre.L96", "unknown key 'colour'"]),
    ("verdict_is_not_an_input", ("verdict",), "reproduced", ["unknown key 'verdict'"]),
    ("missing_tolerance", ("tolerance",), None, ["stack96.grad_ratio.pre.L96",
                                                  "missing key 'tolerance'"]),
    ("missing_reason", ("tolerance", "reason"), None, ["tolerance: missing key 'reason'"]),
    ("empty_reason", ("tolerance", "reason"), " ", ["tolerance.reason=' '"]),
    ("unknown_fit", ("measure", "fit"), "nosuchstudy",
     ["stack96.grad_ratio.pre.L96", "measure.fit='nosuchstudy'", "not a fitted study"]),
    ("bad_verdict_field", ("measure", "field"), "average", ["measure.field='average'"]),
    ("bad_compare", ("tolerance", "compare"), "range", ["tolerance.compare='range'"]),
    ("two_bands", ("tolerance", "rel"), 0.1, ["needs exactly one of rel, abs"]),
    ("negative_band", ("tolerance", "abs"), -1, ["tolerance.abs=-1"]),
    ("where_without_quantity", ("measure", "where"), {"depth": 96},
     ["measure.where={'depth': 96}", "quantity"]),
    ("unknown_note", ("note",), "stack69", ["note='stack69'"]),
    ("bad_id", ("id",), "has space", ["id='has space'"]),
    ("documented_not_a_number", ("documented",), "2.89", ["documented='2.89'"]),
    ("direction_with_band", ("documented",), {"above": 1}, ["a directional claim (above)"]),
    ("contains_on_a_point", ("documented",), {"contains": 1}, ["'contains' needs"]),
    ("documented_ci_without_ci", ("tolerance",), {"documented_ci": True, "reason": "x"},
     ["documented_ci=True needs"]),
]


@pytest.mark.parametrize("case, path, value, fragments", BAD, ids=[b[0] for b in BAD])
def test_a_bad_entry_is_rejected_naming_id_and_key(case, path, value, fragments):
    entry = with_edit(path, value)
    if case == "contains_on_a_point":
        entry.pop("reference")
        entry["tolerance"] = {"compare": "point", "reason": "x"}
    if case == "direction_with_band":
        entry.pop("reference")
    with pytest.raises(ClaimsError) as err:
        check_claims({"claims": [entry]})
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_duplicate_ids_and_unknown_top_level_keys_are_rejected(tmp_path):
    with pytest.raises(ClaimsError, match="id='stack96.grad_ratio.pre.L96' is used twice"):
        check_claims({"claims": [ENTRY, ENTRY]})
    with pytest.raises(ClaimsError, match="unknown top-level key 'claimz'"):
        check_claims({"claims": [ENTRY], "claimz": []})
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump({"claims": [with_edit(("measure", "fit"), "nosuchstudy")]}))
    with pytest.raises(ClaimsError, match=r"^claims file .*claims.yaml: stack96.grad_ratio.pre.L96:"
                                          r" measure.fit='nosuchstudy'"):
        load_claims(path)


# 2. verdicts, on a tiny synthetic fit table


def fit_table(**overrides) -> pd.DataFrame:
    """One grad_ratio row at Pre-LN L = 96 (and one at L = 6): median 2.5, seed range
    [2.2, 2.8], mean 2.5 with 95% CI [2.3, 2.7]."""
    row = {"quantity": "grad_ratio", "placement": "pre", "depth": 96.0, "n_seeds": 6,
           "median": 2.5, "mean": 2.5, "min": 2.2, "max": 2.8, "ci_lo": 2.3, "ci_hi": 2.7,
           "seed0": 2.4, **overrides}
    return pd.DataFrame([row, {**row, "depth": 6.0}])


def measured(documented, tolerance, reference=None, fits=None, **measure) -> dict:
    entry = copy.deepcopy(ENTRY)
    entry.update(documented=documented, tolerance={"reason": "test", **tolerance})
    entry.pop("reference")
    if reference is not None:
        entry["reference"] = reference
    entry["measure"].update(measure)
    return evaluate(entry, {"stack96": fit_table()} if fits is None else fits)


@pytest.mark.parametrize("documented, tolerance, reference, expected", [
    (2.5, {"abs": 0.0}, None, "reproduced"),  # the point itself
    (2.6, {"rel": 0.05}, None, "reproduced"),  # 2.6 ± 0.13 covers 2.5
    (2.89, {"abs": 0.005}, 1, "same direction"),  # outside, same side of 1 as 2.89
    (2.89, {"abs": 0.005}, None, "not reproduced"),  # outside, no reference
    (0.5, {"abs": 0.005}, 1, "not reproduced"),  # outside, the other side of 1
    (2.89, {"abs": 0.005, "compare": "seed_range"}, 1, "same direction"),  # range [2.2, 2.8]
    (2.85, {"abs": 0.06, "compare": "seed_range"}, 1, "reproduced"),  # band meets the range
    (2.75, {"abs": 0.0, "compare": "ci"}, None, "not reproduced"),  # CI [2.3, 2.7]
])
def test_numeric_verdicts(documented, tolerance, reference, expected):
    assert measured(documented, tolerance, reference)["verdict"] == expected


def test_the_note_s_own_ci_is_the_band():
    inside = {"value": 2.0, "ci": [2.4, 3.0]}
    outside = {"value": 2.0, "ci": [2.6, 3.0]}
    assert measured(inside, {"documented_ci": True})["verdict"] == "reproduced"
    assert measured(outside, {"documented_ci": True})["verdict"] == "not reproduced"


@pytest.mark.parametrize("documented, compare, expected", [
    ({"above": 1}, "ci", "reproduced"),  # CI [2.3, 2.7] above 1
    ({"above": 2.4}, "ci", "same direction"),  # mean 2.5 above, CI not wholly
    ({"above": 2.4}, "point", "reproduced"),
    ({"above": 3}, "ci", "not reproduced"),
    ({"below": 2.6}, "seed_range", "same direction"),  # median 2.5 below, range [2.2, 2.8]
    ({"between": [2, 3]}, "seed_range", "reproduced"),
    ({"between": [2.4, 3]}, "seed_range", "same direction"),
    ({"between": [3, 4]}, "seed_range", "not reproduced"),
    ({"contains": 2.6}, "ci", "reproduced"),
    ({"contains": 2.0}, "ci", "not reproduced"),
])
def test_directional_verdicts(documented, compare, expected):
    field = "median" if compare == "seed_range" else "mean"
    assert measured(documented, {"compare": compare}, field=field)["verdict"] == expected


def test_verdict_function_is_symmetric_in_sign():
    # a negative documented value with a relative band: -0.5 ± 10% = [-0.55, -0.45]
    assert verdict(-0.5, {"rel": 0.1}, -0.46, -0.46, -0.46) == "reproduced"
    assert verdict(-0.5, {"rel": 0.1}, -0.3, -0.3, -0.3, reference=0) == "same direction"


def test_rows_outside_the_grid_or_config_are_not_measured():
    missing_depth = measured(2.5, {"abs": 0}, where={"quantity": "grad_ratio", "depth": 48})
    assert missing_depth["verdict"] == "not measured"
    assert missing_depth["notes"] == "not in this grid: depth=48 (this grid: 6, 96)"
    missing_quantity = measured(2.5, {"abs": 0}, where={"quantity": "grad_ratio_bend"})
    assert "no quantity 'grad_ratio_bend'" in missing_quantity["notes"]
    no_study = measured(2.5, {"abs": 0}, fits={})
    assert no_study["notes"] == "study 'stack96' not in this config"
    no_ci = measured(2.5, {"abs": 0, "compare": "ci"}, fits={"stack96": fit_table(ci_lo=np.nan)})
    assert no_ci["verdict"] == "not measured" and "needs two or more seeds" in no_ci["notes"]


def test_a_selection_of_several_rows_or_an_unknown_column_is_an_error():
    with pytest.raises(ClaimError, match="selects 2 rows, not one; add a key .*depth"):
        measured(2.5, {"abs": 0}, where={"quantity": "grad_ratio"})
    with pytest.raises(ClaimError, match="measure.where.arm: no such column"):
        measured(2.5, {"abs": 0}, where={"quantity": "grad_ratio", "arm": "grad"})


def test_markdown_and_html_list_every_entry_with_counts():
    entries = [ENTRY, {**ENTRY, "id": "other", "measure": {"not_measured": "no way"}}]
    table = ledger(entries, {"stack96": fit_table()})
    assert list(table["verdict"]) == ["same direction", "not measured"]
    md = to_markdown(table)
    assert "| same direction | 1 |" in md and "| not measured | 1 |" in md
    assert "not measurable here: no way" in md
    html = to_html(table)
    assert html.count('class="v-same-direction"') == 2  # the count row and the claim


# 3. the fit quantities the claims need


def ratio_table(exponents: dict[int, float], seeds=(0, 1, 2)) -> pd.DataFrame:
    """grad_ratio rows of a Post-LN grad arm with r(L) = L^a (seed-scaled by 1 + seed/10)."""
    rows = []
    ratio = 1.0
    depths = sorted(exponents)
    for i, depth in enumerate(depths):
        ratio = ratio * (depth / depths[i - 1]) ** exponents[depth] if i else 1.0
        for seed in seeds:
            rows.append({"arm": "grad", "label": f"placement-post_depth-{depth}",
                         "placement": "post", "depth": depth, "out_scale": 1.0, "seed": seed,
                         "layer": np.nan, "sublayer": "block", "metric": "grad_ratio",
                         "value": ratio * (1 + seed / 10)})
    return pd.DataFrame(rows)


def test_grad_ratio_depth_exponent_and_bend():
    # log-log slope -0.5 up to L = 48, then -2: the bend at 48 is -1.5, at 24 it is 0
    table = ratio_table({6: 0, 24: -0.5, 48: -0.5, 96: -2.0})
    trend = stack96.ratio_depth_trend(table, stack96.variants(table, {"grad": ["depth"]}))
    bend = trend[trend["quantity"] == "grad_ratio_bend"].set_index("depth")
    assert bend.loc[48, "mean"] == pytest.approx(-1.5)
    assert bend.loc[24, "mean"] == pytest.approx(0, abs=1e-12)
    assert bend.loc[48, "n_seeds"] == 3 and set(bend["variant"]) == {"baseline"}
    exponent = trend[trend["quantity"] == "grad_ratio_depth_exponent"]
    assert len(exponent) == 1 and exponent["mean"].iloc[0] < -0.5
    one = ratio_table({6: 0})
    assert stack96.ratio_depth_trend(one, stack96.variants(one, {})).empty  # one depth: none


def test_monitor_growth_exponent_and_branch_ratio_slope():
    keys = {"arm": "blocks", "placement": "pre", "final_norm": "on"}
    growth = pd.DataFrame([{**keys, "label": f"d{d}", "depth": d, "seed": s,
                            "value": (1 + s) * d ** 0.5} for d in (4, 16, 64) for s in (0, 1)])
    exponent = monitor.growth_exponent(growth)
    assert exponent["quantity"].tolist() == ["stream_rms_exponent"]
    assert exponent["mean"].iloc[0] == pytest.approx(0.5)
    ratio = pd.DataFrame([{**keys, "label": "d8", "depth": 8, "seed": s, "layer": k,
                           "value": 0.3 * k ** -1.0} for k in range(1, 9) for s in (0, 1)])
    slope = monitor.branch_ratio_slope(ratio)
    assert slope["mean"].iloc[0] == pytest.approx(-1.0)


# 4. the claims rule and the report on the tiny study



@pytest.mark.workflow
def test_claims_rule_on_the_tiny_study(tiny_run):
    table = pd.read_parquet(tiny_run / "results/claims.parquet")
    entries = load_claims(tiny_run / "config/claims.yaml")
    assert list(table["id"]) == [e["id"] for e in entries]
    assert set(table["verdict"]) <= {"reproduced", "same direction", "not reproduced",
                                     "not measured"}
    # the tiny grid has no L = 96: those rows are not measured, with the reason
    row = table.set_index("id").loc["stack96.grad_ratio.none.L96"]
    assert row["verdict"] == "not measured"
    assert row["notes"].startswith("not in this grid: depth=96")
    # the exponent across the tiny grid's depths is measured, with its CI
    row = table.set_index("id").loc["stack96.stream.not_sqrtL"]
    assert row["verdict"] != "not measured" and row["measured_lo"] <= row["measured"]
    md = (tiny_run / "results/claims.md").read_text()
    assert f"| total | {len(entries)} |" in md


@pytest.mark.workflow
def test_report_is_self_contained_with_every_figure_and_the_claims(tiny_run):
    run_snakemake(tiny_run, "--configfile", "config/tiny.yaml", "--report",
                  "results/report.html")
    html = (tiny_run / "results/report.html").read_text()
    results = json.loads(re.search(r"var results = (\{.*?\});\n", html, re.S)[1])
    names = {r["name"] for r in results.values()}
    for target in TARGETS:
        shown = "png" if target.kind == "figure" else "html"
        assert f"{target.stem}.{shown}" in names, target.name
    assert "claims.html" in names
    assert all(r["data_uri"].startswith("data:") for r in results.values())
    # the first page embeds the ledger
    desc = json.loads(re.search(r"var workflow_desc = (\".*?\");\n", html, re.S)[1])
    assert "Claims of the notes, measured" in desc and "stack96.grad_ratio.pre.L96" in desc
