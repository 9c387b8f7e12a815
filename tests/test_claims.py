"""The claims ledger: the schema of config/claims.yaml and its changelog, each
outcome rule on small synthetic fit tables (the failures earlier ledgers passed among them), the
fit quantities the claims need, and the claims rule and the report on the tiny study."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import DELETE, ROOT, edited, run_snakemake, started_in, tiny_targets

from depthlab.claims.bands import simultaneous_interval
from depthlab.claims.evidence import benjamini_hochberg, members_p, region_p
from depthlab.claims.identification import joint_miss_p
from depthlab.claims.ledger import ledger
from depthlab.claims.merge import merge_runs
from depthlab.claims.outcomes import GRADED, OUTCOMES, UNINFORMATIVE
from depthlab.claims.protocol import load_frozen, next_pool, rules_fingerprint
from depthlab.claims.publish import (
    outcomes_in,
    replication,
    results_doc,
    summary_line,
    to_html,
    to_markdown,
    transitions,
    verdict_table,
)
from depthlab.claims.schema import (
    ClaimsError,
    check_claims,
    fingerprint,
    load_claims,
    read_claims_file,
)
from depthlab.planner.grid import study_jobs
from depthlab.planner.overlay import config_of
from depthlab.studies.monitor import fit as monitor
from depthlab.studies.stack96 import fit as stack96

CLAIMS = ROOT / "config/claims.yaml"
SEEDS = [0, 1, 2, 3, 4, 5]

# a valid entry; each bad case below edits one key
ENTRY = {
    "id": "stack96.grad_ratio.pre.L96", "note": "stack96", "claim": "Pre-LN's 2.87",
    "kind": "quantitative", "documented": 2.87, "statistic": "median", "reference": 1,
    "measure": {"fit": "stack96",
                "rows": {"r": {"quantity": "grad_ratio", "placement": "pre", "depth": 96}}},
    "tolerance": {"half_unit": 0.05, "reason": "printed to one decimal"},
}


# 1. the schema


def test_the_claims_file_validates_covers_the_four_notes_in_note_order():
    entries = load_claims(CLAIMS)["claims"]
    notes = [e["note"] for e in entries]
    # the notes in their order, then the fixes' papers
    order = ["varsplit", "stack96", "theory096", "monitor", "fixes"]
    assert notes == sorted(notes, key=order.index)
    assert set(notes) == set(order)
    assert len([e for e in entries if "restates" not in e]) >= 110
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    for placement in ("post", "pre", "none"):  # every cell of stack96's second table
        for depth in (6, 24, 48, 96):
            assert f"stack96.grad_ratio.{placement}.L{depth}" in ids
    # sentences the first ledger left out
    for quote in ("changing the seed even reorders them", "holds at 0.245 through forty-eight",
                  "an order of magnitude apart", "far smaller than the stream",
                  "grows about linearly", "cross over", "multiplies every contribution by alpha^2",
                  "it has to differ between the attention branch", "increasingly alike",
                  "fixed-magnitude update", "variance accumulates about linearly",
                  "increase smoothly", "depends on how many blocks you stacked",
                  "no branch is driven into saturation", "pays instead on the gradient side",
                  "warmup is known to be necessary"):
        assert any(quote.lower() in e["claim"].lower() for e in entries), quote


def test_a_rule_cannot_change_without_a_changelog_entry():
    """The last changelog entry carries the fingerprint of every entry's rules (kind, documented
    value, statistic, measurement, tolerance, readings, source), the notes' stated settings,
    domains and open settings, the fits' rules, the protocol's frozen choices and the code of the
    verdicts and estimators: editing any of them without recording the change (date, what,
    why, whether a result had been seen) and its new fingerprint fails."""
    data = read_claims_file(CLAIMS)
    claims = load_claims(CLAIMS)
    last = data["changelog"][-1]
    assert {"date", "change", "why", "results_seen", "fingerprint"} <= set(last)
    frozen = load_frozen(ROOT / "config/frozen.yaml", claims)
    now = rules_fingerprint(claims, frozen)
    assert last["fingerprint"] == now, (
        "a rule of config/claims.yaml, the frozen choices or the verdicts' code changed: add a "
        f"changelog entry (date, change, why, results_seen) with fingerprint: {now}")
    entries, notes, fits_ = claims["claims"], claims["notes"], claims["fits"]
    base = fingerprint(entries, notes, fits_)
    edited_entries = copy.deepcopy(entries)
    edited_entries[0]["tolerance"] = {**edited_entries[0]["tolerance"], "reason": "x"}
    assert fingerprint(edited_entries, notes, fits_) != base
    fewer = {**notes, "stack96": {**notes["stack96"], "seeds": 5}}
    assert fingerprint(entries, fewer, fits_) != base
    other = copy.deepcopy(notes)
    other["stack96"]["readings"][0]["primary"] = "cross-entropy"
    assert fingerprint(entries, other, fits_) != base
    fewer = {**fits_, "training": {**fits_["training"], "seeds": 2}}
    assert fingerprint(entries, notes, fewer) != base
    assert fingerprint(entries, notes, fits_, {"readings": {}, "pool": 2000}) != base


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
    ("unknown_statistic", ("statistic",), "average", ["statistic='average'"]),
    ("unknown_kind", ("kind",), "vibe", ["kind='vibe'"]),
    ("negative_half_unit", ("tolerance", "half_unit"), -1, ["tolerance.half_unit=-1"]),
    ("row_without_quantity", ("measure", "rows"), {"r": {"depth": 96}},
     ["measure.rows.r=", "quantity"]),
    ("two_rows_no_value", ("measure", "rows", "s"), {"quantity": "x"},
     ["several rows need a `value`"]),
    ("unknown_note", ("note",), "stack69", ["note='stack69'"]),
    ("bad_id", ("id",), "has space", ["id='has space'"]),
    ("documented_not_a_number", ("documented",), "2.89", ["documented='2.89'"]),
    ("restates_a_later_entry", ("restates",), "later.one", ["restates='later.one'"]),
    ("reading_of_an_unknown_row", ("readings",), [{"setting": "s", "label": "l",
                                                   "rows": {"x": {"arm": "a"}}}],
     ["readings[0].rows.x: no such row"]),
    # a claims file is data: an expression that walks attributes is rejected, naming the entry
    ("attribute_walk", ("measure", "value"), "r.__class__.__bases__",
     ["stack96.grad_ratio.pre.L96: measure.value", "Attribute is not allowed"]),
    ("call_outside_the_whitelist", ("measure", "value"), "open(r)",
     ["measure.value", "only the ledger's functions may be called"]),
    ("string_constant", ("measure", "value"), "'x'", ["the constant 'x' is not allowed"]),
    ("the_old_every_seed_statistic", ("statistic",), "all", ["statistic='all'"]),
    ("unknown_source", ("source",), "hearsay", ["source='hearsay'"]),
    ("empty_by_construction", ("by_construction",), "", ["by_construction=''"]),
    ("domain_without_reason", ("domain",), {"depth": 96}, ["domain: missing key 'reason'"]),
    ("domain_of_a_fraction", ("domain",), {"depth": 9.5, "reason": "r"},
     ["domain.depth=9.5", "positive integer"]),
    ("extends_a_later_entry", ("extends",), "later.one", ["extends='later.one'"]),
    ("requires_a_later_entry", ("requires",), "later.one", ["requires='later.one'"]),
]


A_NOTE = {"title": "t", "source": "sample", "domain": {"seeds": 6, "reason": "r"}}


@pytest.mark.parametrize("case, path, value, fragments", BAD, ids=[b[0] for b in BAD])
def test_a_bad_entry_is_rejected_naming_id_and_key(case, path, value, fragments):
    entry = with_edit(path, value)
    with pytest.raises(ClaimsError) as err:
        check_claims({"claims": [entry], "notes": {"stack96": A_NOTE}})
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


# 2. outcomes, on small synthetic fit tables (each rule of docs/claims_rules.md)

NOTES = {"stack96": {"title": "t", "seeds": 6, "source": "sample",
                     "settings": {"d_model": 128}},
         "theory096": {"title": "t", "source": "prediction"}}


def row(quantity="grad_ratio", values=(2.2, 2.4, 2.5, 2.5, 2.6, 2.8), **keys) -> dict:
    """One fit row with its per-seed values."""
    v = np.asarray(values, dtype=float)
    return {"quantity": quantity, "placement": "pre", "depth": 96, "layer": np.nan, **keys,
            "seeds": list(range(len(v))), "seed_values": list(v), "n_seeds": len(v),
            "median": float(np.median(v)), "mean": float(v.mean()), "seed0": float(v[0])}


# a pool of 36 seeds from N(2.9, 0.1) (its median 2.854): the median of 6 of them has a 95%
# band of about +-0.1 (sd of a normal median of 6: 0.1 sqrt(pi/2) / sqrt(6) = 0.051)
POOL = 2.9 + 0.1 * np.random.default_rng(7).standard_normal(36)


def fits(*rows) -> dict:
    return {"stack96": pd.DataFrame(list(rows) or [row(values=POOL), row(depth=6)])}


def graded(fit=None, notes=None, settings=None, fit_rules=None, **changes) -> dict:
    """The ledger row of ENTRY with `changes` (its `reference` kept unless changed)."""
    entry = {**copy.deepcopy(ENTRY), **changes}
    table, _ = ledger({"claims": [entry], "notes": NOTES if notes is None else notes,
                       "fits": fit_rules or {}},
                      fits() if fit is None else fit, settings)
    return table.iloc[0].to_dict()


@pytest.mark.parametrize("documented, expected", [
    (2.86, "supported"),  # inside the band of a 6-seed median
    (2.84, "supported"),  # 2.79-2.89: outside our 36-seed interval's upper half, in the band
    (2.92, "inconclusive"),  # 2.87-2.97: across the band's upper edge (2.935)
    (3.05, "contradicted"),  # outside the band
    (2.60, "contradicted"),
])
def test_a_note_s_median_is_compared_with_the_band_of_a_six_seed_median(documented, expected):
    result = graded(documented=documented)
    assert result["outcome"] == expected
    assert result["band_lo"] < 2.9 < result["band_hi"]
    # the band is that of a median of 6, not our interval of 36 seeds' median
    assert result["band_hi"] - result["band_lo"] > 1.5 * (result["measured_hi"] -
                                                           result["measured_lo"])
    assert result["measured_hi"] < 2.92
    assert 0.15 < result["band_hi"] - result["band_lo"] < 0.35


def test_a_band_wider_than_ten_times_the_note_s_precision_is_uninformative():
    """The same band against a note printed to three digits: its last digit is below the noise
    of six seeds, so agreement is consistent (uninformative), never counted; a value outside
    the band is still a contradiction."""
    three_digits = {"half_unit": 0.005, "reason": "printed to 3 digits"}
    result = graded(documented=2.89, tolerance=three_digits)
    assert result["outcome"] == "consistent (uninformative)"
    assert "too wide to tell: these seeds detect deviations beyond ±0." in result["notes"]
    assert graded(documented=3.2, tolerance=three_digits)["outcome"] == "contradicted"
    table, _ = ledger({"claims": [{**ENTRY, "tolerance": three_digits}], "notes": NOTES},
                      fits())
    assert summary_line(table).startswith("0 supported, 0 contradicted, 0 inconclusive")


def test_a_band_that_holds_the_reversing_value_is_inconclusive():
    # a ratio whose seeds straddle 1: the note's 1.1 is inside, but so is 1 (no tilt)
    wide = 1.05 + 0.15 * np.random.default_rng(3).standard_normal(36)
    assert graded(fits(row(values=wide)), documented=1.1)["outcome"] == "inconclusive"
    assert graded(fits(row(values=wide)), documented=1.1, reference=None)["outcome"] == \
        "supported"


def test_seed0_is_judged_against_the_band_of_one_seed():
    # the note's seed 0 is another generator's draw: any value within one seed's spread
    result = graded(statistic="seed0", documented=2.75)
    assert result["outcome"] == "supported" and result["measured"] == pytest.approx(POOL[0])
    assert graded(statistic="seed0", documented=3.4)["outcome"] == "contradicted"


def test_a_prediction_is_compared_with_our_interval_by_the_one_rule():
    """Our 95% interval (about 2.82-2.90) against the note's value +- its margin: inside
    supported, disjoint contradicted, overlapping an edge inconclusive (not 'touching is
    enough'), wider than the margin uninformative."""
    notes = {**NOTES, "stack96": {**NOTES["stack96"], "source": "prediction"}}
    assert graded(notes=notes, documented=3.02)["outcome"] == "contradicted"
    assert graded(notes=notes, documented=2.86)["outcome"] == "supported"
    assert graded(notes=notes, documented=2.92)["outcome"] == "inconclusive"
    narrow = {"half_unit": 0.01, "reason": "r"}
    assert graded(notes=notes, documented=2.86, tolerance=narrow)["outcome"] == \
        "consistent (uninformative)"


def test_a_pool_smaller_than_the_note_s_seeds_or_other_settings_are_not_comparable():
    small = fits(row(values=(2.8, 2.9, 3.0)))
    result = graded(small)
    assert result["outcome"] == "not comparable"
    assert result["verdict"] == "not comparable: seeds 3, note 6"
    settings = {"stack96": {"grad": {"d_model": 64, "heads": 4}}}
    result = graded(fits(row(values=POOL, arm="grad")), settings=settings)
    assert result["verdict"] == "not comparable: d_model 64, note 128"
    same = {"stack96": {"grad": {"d_model": 128}}}
    assert graded(fits(row(values=POOL, arm="grad")), settings=same)["outcome"] == "supported"
    # an arm of an own block is never graded as the built-in placement it follows
    own = {"stack96": {"grad": {"d_model": 128, "placement": "pre", "block": "my.blocks:make"}}}
    result = graded(fits(row(values=POOL, arm="grad")), settings=own)
    assert result["verdict"] == ("not comparable: block my.blocks:make (an own block, not the "
                                 "built-in pre)")
    # the note's stated settings are those of its measurements at init, checked on every row
    # read at init whatever study holds it; a trained study is judged by its own rule
    other = {"training": pd.DataFrame([row(values=POOL, arm="grad")])}
    result = graded(other, settings={"training": settings["stack96"]},
                    measure={**ENTRY["measure"], "fit": "training"})
    assert result["verdict"] == "not comparable: d_model 64, note 128"
    result = graded(other, settings={"training": settings["stack96"]},
                    measure={**ENTRY["measure"], "fit": "training"},
                    fit_rules={"training": {"seeds": 6, "run": "r", "scale": "L = 2"}})
    assert result["outcome"] == "supported" and result["notes"] == "trained at L = 2"
    # a row that names a setting itself (a contrast) chooses it
    named = {**ENTRY["measure"], "rows": {"r": {**ENTRY["measure"]["rows"]["r"], "arm": "grad",
                                                "d_model": 64}}}
    with_column = fits(row(values=POOL, arm="grad", d_model=64))
    assert graded(with_column, settings=settings, measure=named)["outcome"] == "supported"


def test_a_fit_with_fewer_seeds_than_the_claims_file_asks_is_not_graded():
    """`fits: {stack96: {seeds: 40, run: ...}}`: a direction that holds on 6 seeds is not graded
    on a fit with fewer seeds than the claims file asks of it; it names the run that has them."""
    direction = {"kind": "directional", "documented": {"above": 1}, "statistic": "mean",
                 "tolerance": {"reason": "r"}, "reference": None}
    assert graded(fits(row(), row(depth=6)), **direction)["outcome"] == "supported"
    rules = {"stack96": {"seeds": 40, "run": "config/big.yaml"}}
    result = graded(fits(row(), row(depth=6)), fit_rules=rules, **direction)
    assert result["verdict"] == "not comparable: seeds 6, the ledger needs 40 (config/big.yaml)"
    assert graded(fits(row(values=POOL), row(depth=6, values=POOL)), fit_rules=rules,
                  **direction)["outcome"] == "not comparable"
    rules = {"stack96": {"seeds": 36, "run": "config/big.yaml"}}
    assert graded(fits(row(values=POOL), row(depth=6, values=POOL)), fit_rules=rules,
                  **direction)["outcome"] == "supported"


@pytest.mark.parametrize("documented, statistic, expected", [
    ({"above": 1}, "mean", "supported"),  # the whole interval around 2.5 is above 1
    ({"below": 1}, "mean", "contradicted"),  # wholly on the other side
    ({"above": 2.45}, "mean", "inconclusive"),  # the mean is above, its interval straddles
    ({"between": [2, 3]}, "median", "supported"),
    ({"between": [2.45, 3]}, "median", "inconclusive"),
    ({"between": [3, 4]}, "median", "contradicted"),
    ({"between": [2.45, 2.55]}, "mean", "consistent (uninformative)"),  # wider than it
    ({"above": 2.1}, "pooled", "supported"),  # the seed mean, bootstrapped
])
def test_directions_have_the_one_rule_s_outcomes(documented, statistic, expected):
    result = graded(fits(row(), row(depth=6)), kind="directional", documented=documented,
                    statistic=statistic, tolerance={"reason": "r"}, reference=None)
    assert result["outcome"] == expected
    described = "seeds on the claimed side by their own values" in result["shown"]
    assert described == ("between" not in documented)  # a margin describes no single seed


def test_a_seed_averaged_direction_is_not_failed_by_one_noisy_seed():
    # every layer's increment is positive on average; one seed dips below 0 at one layer
    values = np.full((24, 8), 0.1) + np.linspace(0, 0.01, 8)
    values[3, 5] = -0.05
    rows = [row("delta", values[:, i], layer=i + 1) for i in range(8)]
    entry = {"kind": "directional", "documented": {"above": 0}, "statistic": "pooled",
             "tolerance": {"reason": "r"}, "reference": None,
             "measure": {"fit": "stack96", "rows": {"d": {"quantity": "delta", "along": "layer"}},
                         "value": "lowest(d)"}}
    result = graded(fits(*rows), **entry)
    assert result["outcome"] == "supported"
    assert "23 of 24 seeds on the claimed side" in result["shown"]


def invariance(values_by_arm: dict, value=None, half_unit=0.05) -> dict:
    rows = [row("late_early", v, arm=arm) for arm, v in values_by_arm.items()]
    return graded(
        {"stack96": pd.DataFrame(rows)}, kind="invariance", reference=None,
        documented={} if value is None else {"value": value}, statistic="mean",
        tolerance={"half_unit": half_unit, "reason": "r"},
        measure={"fit": "stack96",
                 "rows": {a: {"quantity": "late_early", "arm": a} for a in values_by_arm},
                 "value": f"stack({', '.join(values_by_arm)})"})


def test_an_invariance_follows_the_one_rule():
    same = {"a": (2.398, 2.401, 2.400, 2.402), "b": (2.399, 2.400, 2.401, 2.400)}
    assert invariance(same, value=2.4)["outcome"] == "supported"
    # each arm alone could be 'about 2.4'; together they are not one value
    apart = {"a": (1.45, 1.50, 1.55, 1.50), "b": (3.70, 3.78, 3.85, 3.80)}
    assert invariance(apart)["outcome"] == "contradicted"
    assert invariance(apart, value=2.4)["outcome"] == "contradicted"
    assert "members: 1.5" in invariance(apart)["shown"]
    # wide intervals that overlap: they cannot show the members equal, nor different
    wide = {"a": (2.0, 2.8, 2.2, 2.6), "b": (2.1, 2.9, 2.3, 2.5)}
    assert invariance(wide, value=2.4)["outcome"] == "consistent (uninformative)"
    # narrow intervals, one across the margin's edge: inconclusive
    edge = {"a": (2.44, 2.46, 2.45, 2.45), "b": (2.399, 2.400, 2.401, 2.400)}
    assert invariance(edge, value=2.4)["outcome"] == "inconclusive"


def test_a_curve_is_graded_per_k_and_says_where_it_holds():
    k = np.arange(1, 9)
    formula = 2 / (np.sqrt(k) * (np.sqrt(k - 1) + np.sqrt(k)))
    measured = formula * np.where(k <= 4, 1.0, 1.5)  # right up to k = 4, 50% off after
    rows = [row("omega_var", measured[i] * np.array([0.99, 1.0, 1.01]), layer=int(i + 1))
            for i in range(8)]
    entry = {"kind": "curve", "reference": None, "statistic": "mean",
             "documented": {"formula": "2 / (sqrt(k) * (sqrt(k - 1) + sqrt(k)))", "origin": 0},
             "tolerance": {"rel": 0.1, "reason": "r"},
             "measure": {"fit": "stack96", "rows": {"r": {"quantity": "omega_var",
                                                          "along": "layer"}}}}
    notes = {**NOTES, "stack96": {**NOTES["stack96"], "source": "prediction"}}
    result = graded(fits(*rows), notes=notes, **entry)
    assert result["outcome"] == "contradicted"
    assert "supported at k = 1–4" in result["shown"]
    assert "contradicted at k = 5–8" in result["shown"]
    shifted = {**entry, "documented": {**entry["documented"], "origin": 1}}
    assert "supported at k" not in graded(fits(*rows), notes=notes, **shifted)["shown"]


def with_reading(values, label="cross-entropy", setting="loss") -> list:
    return [{"setting": setting, "label": label, "rows": {"r": {"arm": "sens"}}}]


def loss_notes(by: list | None = None) -> dict:
    """NOTES with stack96's loss an open setting: MSE (arm grad, the primary) or cross-entropy
    (arm sens), identified by the entries `by`."""
    reading = {"setting": "loss", "primary": "MSE", "why": "w",
               "labels": {"MSE": {}, "cross-entropy": {"arm": {"grad": "sens"}}},
               **({"by": by} if by else {})}
    return {**NOTES, "stack96": {**NOTES["stack96"], "readings": [reading]}}


def test_depends_on_only_when_two_allowed_readings_disagree():
    """A note's open setting varies every entry that reads its rows. A reading the note's own
    numbers exclude is sensitivity; one they allow and that disagrees makes the claim
    inconclusive ('depends on'); the numbers that identify the reading are graded too."""
    far = 3.6 + 0.1 * np.random.default_rng(5).standard_normal(36)
    fit = fits(row(values=POOL, arm="grad"), row(values=far, arm="sens"))
    entry = copy.deepcopy(ENTRY)
    entry["measure"]["rows"]["r"]["arm"] = "grad"
    other = {**copy.deepcopy(entry), "id": "other", "documented": 3.6}
    table, _ = ledger({"claims": [entry, other], "notes": loss_notes()}, fit)
    # not identified: both readings allowed, the two entries depend on the loss
    assert set(table["outcome"]) == {"inconclusive"}
    assert table["verdict"].iloc[0] == ("inconclusive: depends on loss (supported at the "
                                        "primary reading)")
    # identified by the first entry (the note's 2.87 excludes cross-entropy): sensitivity; the
    # number that identified the reading is graded at it like every other entry
    table, readings = ledger({"claims": [entry, other], "notes": loss_notes([entry["id"]])},
                             fit)
    assert list(table["outcome"]) == ["supported", "contradicted"]
    assert "reading excluded by the note's numbers" in table["sensitivity"].iloc[0]
    assert readings.set_index("label").loc["cross-entropy", "excluded"]
    assert not readings.set_index("label").loc["MSE", "excluded"]
    # a frozen choice is used as it is, whatever this run's numbers identify
    frozen = {("stack96", "loss", "MSE"): "excluded by the exploratory run (w)"}
    table, _ = ledger({"claims": [entry, other], "notes": loss_notes([entry["id"]])}, fit,
                      frozen=frozen)
    assert table["verdict"].iloc[1].startswith("supported at loss = cross-entropy")


def test_an_experiment_is_listed_beside_the_verdict_not_as_a_reading():
    far = 3.6 + 0.1 * np.random.default_rng(5).standard_normal(36)
    fit = fits(row(values=POOL, arm="grad"), row(values=far, arm="sens"))
    entry = {**copy.deepcopy(ENTRY), "readings": [{**with_reading(far)[0], "experiment": True}]}
    entry["measure"]["rows"]["r"]["arm"] = "grad"
    table, _ = ledger({"claims": [entry], "notes": NOTES}, fit)
    assert table["outcome"].iloc[0] == "supported" and table["readings"].iloc[0] == ""
    assert "loss = cross-entropy" in table["experiments"].iloc[0]


def test_by_construction_is_listed_and_never_counted():
    result = graded(by_construction="an LN output has unit sd")
    assert result["outcome"] == "holds by construction"
    table, _ = ledger({"claims": [{**ENTRY, "by_construction": "x"}], "notes": NOTES}, fits())
    assert summary_line(table).startswith("0 supported, 0 contradicted, 0 inconclusive, "
                                          "1 hold by construction (not counted)")


def test_a_definition_holds_by_construction_and_names_its_test():
    entry = {"id": "d", "note": "stack96", "claim": "c", "kind": "definition",
             "by_construction": "alpha = 0", "test": "tests/test_x.py::test_y"}
    table, _ = ledger({"claims": [entry], "notes": NOTES}, fits())
    assert table["outcome"].iloc[0] == "holds by construction"
    assert table["by_construction"].iloc[0] == "alpha = 0 (checked by tests/test_x.py::test_y)"
    assert summary_line(table).startswith("0 supported, 0 contradicted, 0 inconclusive, "
                                          "1 hold by construction (not counted)")


def test_every_definition_names_a_test_that_exists():
    for entry in load_claims(CLAIMS)["claims"]:
        if entry["kind"] == "definition":
            path, name = entry["test"].split("::")
            assert f"def {name}(" in (ROOT / path).read_text(), entry["id"]


@pytest.mark.parametrize("values, answer", [
    ((2.2, 2.4, 2.5, 2.5, 2.6, 2.8), "answered: up"),  # the interval is above 2
    ((-2.2, -2.4, -2.5, -2.5, -2.6, -2.8), "answered: down"),
    ((-1.0, 1.0, -0.5, 0.5, -0.2, 0.3), "not answered by 6 seeds (the interval holds 0)"),
])
def test_a_question_is_answered_never_graded_or_counted(values, answer):
    question = {"kind": "question", "statistic": "mean", "tolerance": {"reason": "r"},
                "documented": {"at": 0, "below": "down", "above": "up"}, "reference": None}
    result = graded(fits(row(values=values), row(depth=6)), **question)
    assert result["outcome"] == "question (no claim)"
    assert result["verdict"] == f"question (no claim): {answer}"
    table, _ = ledger({"claims": [{**ENTRY, **question}], "notes": NOTES},
                      fits(row(values=values), row(depth=6)))
    line = summary_line(table)
    assert line.startswith("0 supported, 0 contradicted, 0 inconclusive")
    assert "(of 0 claims; 0 more entries restate" in line  # a question restates nothing
    assert "1 open question of the notes measured" in line


def test_rows_outside_the_grid_or_config_are_not_measured():
    missing = graded(measure={"fit": "stack96", "rows": {"r": {"quantity": "grad_ratio",
                                                               "depth": 48}}})
    assert missing["outcome"] == "not measured"
    assert missing["notes"] == "not in this grid: depth=48 (this grid: 6, 96)"
    assert graded(fit={})["notes"] == "study 'stack96' not in this config"


def test_a_misconfigured_entry_raises_instead_of_grading():
    with pytest.raises(ClaimsError, match="selects 2 rows, not one; add a key .*depth"):
        graded(measure={"fit": "stack96", "rows": {"r": {"quantity": "grad_ratio"}}})
    with pytest.raises(ClaimsError, match="no column 'arm'"):
        graded(measure={"fit": "stack96", "rows": {"r": {"quantity": "grad_ratio",
                                                         "arm": "grad"}}})
    # a quantitative entry whose value gives two members is a design error, not a finding
    two = {"fit": "stack96", "rows": {"a": {"quantity": "grad_ratio", "depth": 96},
                                      "b": {"quantity": "grad_ratio", "depth": 6}},
           "value": "stack(a, b)"}
    with pytest.raises(ClaimsError, match="gives 2 values"):
        graded(fits(row(values=POOL), row(values=POOL, depth=6)), measure=two)
    # an expression that reduces over the seeds (`late` already averages a quarter of the
    # layers; `avg` of it averages the seeds) is an error of the entry, not a value
    series = {"fit": "stack96", "rows": {"a": {"quantity": "grad_ratio", "along": "depth"}},
              "value": "avg(late(a))"}
    with pytest.raises(ClaimsError, match=r"shape \(\), not one per seed \(36\)"):
        graded(fits(row(values=POOL), row(values=POOL, depth=6)), measure=series)
    # the note's own arithmetic that does not hold is a contradiction of the note (theory096's
    # "a fifth" at k = 24 by its own omega_k), with the value the arithmetic gives
    wrong = graded(kind="arithmetic", documented=9.7, measure={"value": "sqrt(96)"},
                   tolerance={"half_unit": 0.005, "reason": "r"})
    assert wrong["outcome"] == "contradicted"
    assert wrong["verdict"] == "contradicted: the arithmetic gives 9.798, not 9.7 ± 0.005"


def test_markdown_html_and_results_doc_list_every_entry_with_counts():
    entries = [ENTRY, {"id": "other", "note": "stack96", "claim": "c", "kind": "not_measurable",
                       "why": "no way"},
               {"id": "again", "note": "stack96", "claim": "Pre-LN's 2.89 again",
                "kind": "quantitative", "restates": ENTRY["id"]}]
    table, readings = ledger({"claims": entries, "notes": NOTES}, fits())
    assert list(table["outcome"]) == ["supported", "not measurable", "supported"]
    details = to_markdown(table)
    assert "no way" in details and "restates stack96.grad_ratio.pre.L96" in details
    # claims.md: a line per entry, the note's value, ours, the outcome; the rest in the details
    brief = to_markdown(table, "claims_details.md")
    rows = [line for line in brief.split("## stack96")[1].splitlines() if line.startswith("|")]
    assert [r.split("|")[1].strip() for r in rows[2:]] == list(table["id"])
    assert "no way" not in brief and "Pre-LN's 2.89 again" not in brief
    assert "| id " in brief and "| outcome " in brief and "claims_details.md" in brief
    assert summary_line(table).startswith("1 supported, 0 contradicted, 0 inconclusive")
    assert "(of 2 claims; 1 more entries restate one of them)" in summary_line(table)
    assert to_html(table).count('class="v-supported"') == 2
    doc = results_doc(table, readings, "## How a claim is graded\n\nrules", "a test")
    assert "## stack96" in doc and "`stack96.grad_ratio.pre.L96`" in doc
    assert "band of the note's statistic [" in doc and "**supported**" in doc


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
    entries = load_claims(started_in(tiny_run) / "config/claims.yaml")["claims"]
    assert list(table["id"]) == [e["id"] for e in entries]
    assert set(table["outcome"]) <= set(OUTCOMES)
    # the tiny study (d_model 32, 3 seeds, depth 8) supports none of the notes' estimators:
    # no graded row (theory096's asymptotic rate read "contradicted" on 8 blocks)
    graded_rows = table[table["outcome"].isin(GRADED + (UNINFORMATIVE,))]
    assert graded_rows.empty, graded_rows[["id", "verdict"]].to_string()
    row = table.set_index("id").loc["theory096.title.rate"]
    assert row["outcome"] == "not comparable" and "the estimator needs" in row["verdict"]
    # the tiny study is not the note's stack: no false verdicts, the difference said
    row = table.set_index("id").loc["varsplit.v_ratio"]
    assert row["outcome"] == "not comparable"
    assert row["verdict"] == ("not comparable: depth 8, note 64; seeds 4, note 24; depth 8, the "
                              "estimator needs 64; seeds 4, the estimator needs 6; d_model 16, "
                              "the estimator needs 64")
    # a row outside the tiny grid is not measured, with the reason
    row = table.set_index("id").loc["stack96.grad_ratio.none.L96"]
    assert row["outcome"] == "not measured" and row["notes"].startswith("not in this grid")
    md = (tiny_run / "results/claims.md").read_text()
    assert f"({len(entries)}) |" in md and re.search(r"^\| all\s+\|", md, re.M)
    readings = pd.read_csv(tiny_run / "results/claims_readings.csv")
    assert list(readings.columns) == ["note", "setting", "label", "graded", "outside",
                                      "p_joint", "excluded", "by", "why"]


@pytest.mark.workflow
def test_report_is_self_contained_with_every_figure_and_the_claims(tiny_run):
    run_snakemake(started_in(tiny_run), "--configfile", "config/tiny.yaml", "--report",
                  "results/report.html")
    html = (tiny_run / "results/report.html").read_text()
    results = json.loads(re.search(r"var results = (\{.*?\});\n", html, re.S)[1])
    names = {r["name"] for r in results.values()}
    for target in tiny_targets():
        shown = "png" if target.kind == "figure" else "html"
        assert f"{target.stem}.{shown}" in names, target.name
    assert "claims.html" in names
    assert all(r["data_uri"].startswith("data:") for r in results.values())
    # the first page embeds the ledger
    desc = json.loads(re.search(r"var workflow_desc = (\".*?\");\n", html, re.S)[1])
    assert "Claims of the notes, measured" in desc and "stack96.grad_ratio.pre.L96" in desc


def test_readme_summary_and_results_doc_come_from_the_same_ledger():
    """docs/RESULTS.md and the README's summary line are written by rule docs_results from one
    ledger (prose and data cannot drift): the README's line is RESULTS.md's counts line, and
    RESULTS.md carries the rules of docs/claims_rules.md."""
    readme = (ROOT / "README.md").read_text()
    results = (ROOT / "docs/RESULTS.md").read_text()
    line = re.search(r"<!-- claims-summary -->(.*?)<!-- /claims-summary -->", readme, re.S)[1]
    assert line in results.split("## Counts", 1)[1]
    assert (ROOT / "docs/claims_rules.md").read_text().strip() in results


# 5. the rules of docs/claims_rules.md: an excluded primary, the premise, roles, multiplicity,
# the domain


def identified(documented_first: float) -> pd.DataFrame:
    """Two entries read under loss = MSE (arm grad, about 2.85) or cross-entropy (arm sens,
    about 3.6); the first entry's number identifies the loss."""
    far = 3.6 + 0.1 * np.random.default_rng(5).standard_normal(36)
    fit = fits(row(values=POOL, arm="grad"), row(values=far, arm="sens"))
    first = {**copy.deepcopy(ENTRY), "documented": documented_first}
    first["measure"]["rows"]["r"]["arm"] = "grad"
    second = {**copy.deepcopy(first), "id": "second", "documented": 3.6}
    table, _ = ledger({"claims": [first, second], "notes": loss_notes([first["id"]])}, fit)
    return table.set_index("id")


def test_an_excluded_primary_reading_is_not_graded_the_allowed_one_is():
    table = identified(3.6)  # the note's number excludes MSE and allows cross-entropy
    second = table.loc["second"]
    assert second["outcome"] == "supported"
    assert second["verdict"] == ("supported at loss = cross-entropy (the note's numbers "
                                 "exclude the primary cell: loss = MSE)")
    assert second["measured"] > 3.4  # the allowed reading's measurement, not the primary's
    assert second["sensitivity"].startswith("the primary cell: loss = MSE: ")
    assert "depends on" not in second["verdict"]
    # the identifying number itself is graded at the reading it allows
    assert table.loc[ENTRY["id"], "verdict"].startswith("supported at loss = cross-entropy")
    # a note's number that excludes every reading: its setting could not be identified
    table = identified(5.0)
    assert table.loc["second", "outcome"] == "not comparable"
    assert "could not be identified" in table.loc["second", "verdict"]


def test_a_conditional_theorem_is_graded_under_its_premise():
    far = 3.6 + 0.1 * np.random.default_rng(5).standard_normal(36)
    fit = fits(row(values=POOL, arm="grad"), row(values=far, arm="sens"))
    entry = {**copy.deepcopy(ENTRY), "documented": 3.6, "readings": [
        {"setting": "output scale", "label": "10", "premise": True,
         "rows": {"r": {"arm": "sens"}}}]}
    entry["measure"]["rows"]["r"]["arm"] = "grad"
    result = ledger({"claims": [entry], "notes": NOTES}, fit)[0].iloc[0]
    assert result["outcome"] == "supported"
    assert result["verdict"].startswith("supported under the premise (output scale = 10); at "
                                        "the primary reading, outside the premise: ")
    assert result["verdict"].endswith("(contradicted)")
    missing = copy.deepcopy(entry)
    missing["readings"][0]["rows"] = {"r": {"arm": "nosuch"}}
    with pytest.raises(ClaimsError):  # a typo in a reading's rows is an error, not a grade
        ledger({"claims": [{**missing, "readings": [{**missing["readings"][0],
                                                      "rows": {"r": {"nosuch": 1}}}]}],
                "notes": NOTES}, fit)
    result = ledger({"claims": [missing], "notes": NOTES}, fit)[0].iloc[0]
    assert result["outcome"] == "not measured"
    assert result["verdict"].startswith("not measured under the note's premise")


def test_assumptions_and_one_rate_comparisons_are_measured_not_counted():
    result = graded(role="assumption")
    assert result["outcome"] == "not counted"
    assert result["verdict"] == "not counted (assumption): supported"
    result = graded(not_comparable="one learning rate")
    assert result["verdict"] == "not comparable: one learning rate (measured: supported)"
    table, _ = ledger({"claims": [{**ENTRY, "role": "hypothesis"}], "notes": NOTES}, fits())
    assert summary_line(table).startswith("0 supported, 0 contradicted, 0 inconclusive")
    with pytest.raises(ClaimsError, match="role='claim' is not one of"):
        check_claims({"claims": [{**ENTRY, "role": "claim"}]})
    with pytest.raises(ClaimsError, match=r"documented=\{'contains': 0\} must be one of"):
        check_claims({"claims": [{**ENTRY, "kind": "directional", "documented": {"contains": 0},
                                  "tolerance": {"reason": "r"}}]})


def test_a_sentence_is_graded_only_where_the_premise_it_requires_is_supported():
    """An assumption entry (the premise: measured, not counted) that the data support lets the
    entry requiring it be graded; one they do not support makes it not comparable, the
    premise's outcome and value beside the measurement; a merged ledger keeps the rule."""
    premise = {**copy.deepcopy(ENTRY), "id": "premise", "role": "assumption"}
    claim = {**copy.deepcopy(ENTRY), "requires": "premise"}
    check_claims({"claims": [premise, claim], "notes": {"stack96": A_NOTE}})

    def table(documented_premise):
        entries = [{**premise, "documented": documented_premise}, claim]
        return ledger({"claims": entries, "notes": NOTES}, fits())[0].set_index("id")

    held = table(2.86)  # the premise inside the band: supported, so the sentence is graded
    assert held.loc["premise", "outcome"] == "not counted"
    assert held.loc[ENTRY["id"], "outcome"] == "supported"
    absent = table(3.05)  # the premise contradicted
    assert absent.loc[ENTRY["id"], "outcome"] == "not comparable"
    assert absent.loc[ENTRY["id"], "verdict"].startswith(
        "not comparable: its premise premise is contradicted (")
    assert absent.loc[ENTRY["id"], "verdict"].endswith("(measured: supported)")
    merged = merge_runs({"a": absent.reset_index().assign(fingerprint="f"),
                         "b": held.reset_index().assign(fingerprint="f")})
    assert merged.set_index("id").loc[ENTRY["id"], "outcome"] == "not comparable"


def test_q_values_are_benjamini_hochberg_s():
    # hand-computed: p sorted 0.01, 0.02, 0.03, 0.5 (m = 4): 0.04, 0.04, 0.04, 0.5
    q = benjamini_hochberg(np.array([0.03, np.nan, 0.5, 0.01, 0.02]))
    assert np.isnan(q[1])
    np.testing.assert_allclose(q[[3, 4, 0, 2]], [0.04, 0.04, 0.04, 0.5])


def test_the_p_values_test_the_hypothesis_graded():
    """p_against tests 'the note is right' (the estimate inside the claim's region), p_for 'the
    note is wrong' (TOST of the region's edges), on Student's t with n - 1 degrees of freedom;
    the expected values come from scipy's t directly."""
    from scipy import stats

    t = stats.t.ppf(0.975, 5)
    # an estimate 1.0 with se 0.1 (interval 1 +- t se), region [1.2, inf): 2 se short of it
    against, found = region_p(1.0, 1.0 - 0.1 * t, 1.0 + 0.1 * t, 1.2, np.inf, 5)
    assert against == pytest.approx(stats.t.sf(2.0, 5))
    assert found == pytest.approx(stats.t.cdf(2.0, 5))  # "theta <= 1.2" is not rejected
    # inside the region [0.5, 1.3]: nothing against; TOST's larger one-sided p for
    against, found = region_p(1.0, 1.0 - 0.1 * t, 1.0 + 0.1 * t, 0.5, 1.3, 5)
    assert against == 1.0
    assert found == pytest.approx(max(stats.t.sf(5.0, 5), stats.t.sf(3.0, 5)))
    # every member must hold: the largest p_for; any may fail: Bonferroni's smallest p_against
    assert members_p([(1.0, 0.01), (0.02, 0.5)]) == (pytest.approx(0.04), 0.5)


def test_every_graded_number_carries_its_p_and_q_and_the_gate_counts_only_what_survives():
    edge = graded(documented=3.4)  # far outside the band: many band-sigmas above its centre
    assert edge["outcome"] == "contradicted" and edge["band_sigma"] > 1.96
    assert edge["p_against"] < 1e-3 and edge["q_against"] == pytest.approx(edge["p_against"])
    inside = graded(documented=2.86)
    assert inside["outcome"] == "supported" and abs(inside["band_sigma"]) < 1.0
    assert inside["p_against"] > 0.3
    assert inside["p_for"] < 1e-3  # the band excludes the reversing value 1 by far
    # a contradiction just outside the band, among many right numbers of the same note, is
    # not counted (q against > 0.05 within the note): inconclusive, and says why
    weak = {**copy.deepcopy(ENTRY), "documented": inside["band_hi"] + 0.006,
            "tolerance": {"half_unit": 0.005, "reason": "printed to 3 digits"}}
    many = [weak] + [{**copy.deepcopy(ENTRY), "id": f"e{i}", "documented": 2.86}
                     for i in range(30)]
    table = ledger({"claims": many, "notes": NOTES}, fits())[0].set_index("id")
    row_ = table.loc[ENTRY["id"]]
    assert row_["outcome_rule"] == "contradicted" and row_["q_against"] > 0.05
    assert row_["outcome"] == "inconclusive"
    assert row_["verdict"].endswith("among the stack96 note's graded rows")
    # a support whose test does not survive either: one direction barely above 0 among nine
    # inconclusive ones of its note
    barely = 0.3 + 0.1 * np.random.default_rng(8).standard_normal(36)
    near = [row("x", barely + 0.1 * i, depth=i) for i in range(10)]
    entries = [{**copy.deepcopy(ENTRY), "id": f"d{i}", "kind": "directional",
                "documented": {"above": 0.3 + 0.1 * i if i else 0.25}, "statistic": "mean",
                "reference": None, "tolerance": {"reason": "r"},
                "measure": {"fit": "stack96", "rows": {"r": {"quantity": "x", "depth": i}}}}
               for i in range(10)]
    table = ledger({"claims": entries, "notes": NOTES}, fits(*near))[0].set_index("id")
    assert table.loc["d0", "outcome_rule"] == "supported"
    assert table.loc["d0", "q_for"] > 0.05 and table.loc["d0", "outcome"] == "inconclusive"
    assert (table["outcome_rule"].iloc[1:] == "inconclusive").all()


@pytest.mark.slow
def test_a_curve_s_band_is_simultaneous_and_covers_the_mean_curve():
    """The sup-t band holds the true mean curve at all K points together in 95% +- 3% of
    trials (36 seeds, 8 points, 300 trials: binomial sd 1.3%), where the pointwise intervals
    hold all eight together far less often."""
    rng = np.random.default_rng(11)
    together = pointwise = 0
    for _ in range(300):
        v = rng.standard_normal((36, 8))
        lo, hi = simultaneous_interval(v)
        together += np.all((lo <= 0) & (hi >= 0))
        half = 2.03 * v.std(axis=0, ddof=1) / 6  # t(35) 97.5%: one point at a time
        pointwise += np.all(np.abs(v.mean(axis=0)) <= half)
    assert 0.92 <= together / 300 <= 0.98
    assert pointwise / 300 < 0.8


def test_a_row_outside_the_note_s_domain_is_not_comparable():
    notes = {**NOTES, "stack96": {**NOTES["stack96"],
                                  "domain": {"depth": 24, "seeds": 6, "reason": "r"}}}
    assert graded(notes=notes)["outcome"] == "supported"  # depth 96, 36 seeds
    shallow = {**ENTRY["measure"], "rows": {"r": {"quantity": "grad_ratio", "depth": 6}}}
    result = graded(notes=notes, measure=shallow, documented=2.5)
    assert result["verdict"] == "not comparable: depth 6, the estimator needs 24"
    notes["stack96"]["domain"]["seeds"] = 40
    assert "seeds 36, the estimator needs 40" in graded(notes=notes)["verdict"]


def test_an_entry_s_own_domain_adds_to_its_note_s():
    notes = {**NOTES, "stack96": {**NOTES["stack96"],
                                  "domain": {"depth": 24, "seeds": 6, "reason": "r"}}}
    deep = {"depth": 192, "reason": "an asymptote needs its octave"}
    assert graded(notes=notes, domain=deep)["verdict"] == (
        "not comparable: depth 96, the estimator needs 192")
    assert graded(notes=notes, domain={"d_model": 8, "reason": "r"})["outcome"] == "supported"
    assert graded(notes=NOTES, domain={"seeds": 40, "reason": "r"})["verdict"] == (
        "not comparable: seeds 36, the estimator needs 40")


@pytest.mark.workflow
def test_the_fixes_papers_are_not_graded_on_the_tiny_fixes_grid(tiny_fixes_run):
    """config/tiny_fixes.yaml (d = 8, 3 seeds) exercises the code: no paper's claim is graded
    on it (docs/claims_rules.md, the domain)."""
    table = pd.read_parquet(tiny_fixes_run / "results/claims.parquet")
    fixes = table[table["note"] == "fixes"]
    assert (fixes["outcome"] == "not comparable").sum() >= 5
    assert not table["outcome"].isin([*GRADED, UNINFORMATIVE]).any()


def _offsets(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "seed_offset":
                yield path, value
            yield from _offsets(value, (*path, key))


def _without(node, keys=("seed_offset",)):
    if isinstance(node, dict):
        return {k: _without(v, keys) for k, v in node.items() if k not in keys}
    return node


@pytest.mark.parametrize("confirm, documented", [
    ("config/confirm.yaml", ("config/training_seeds.yaml",)),
    ("config/confirm_scale.yaml", ("config/scale.yaml",)),
    ("config/confirm_fixes.yaml", ("config/fixes.yaml",)),
    ("config/confirm_fixes_recipes.yaml", ("config/fixes_recipes.yaml",)),
    ("config/confirm_rezero_deep.yaml", ("config/rezero_deep.yaml",)),
])
def test_each_confirmatory_config_is_its_documented_run_on_the_frozen_pool(confirm, documented):
    """A confirmatory config merged onto its base: the documented run it confirms, every setting
    the same but the seeds (each offset moved by the protocol's pool, above every seed the
    documented configs draw and every pool spent), in its own named run, graded as
    confirmatory."""
    frozen = yaml.safe_load((ROOT / "config/frozen.yaml").read_text())
    pool = frozen.get("pool") or next_pool(frozen["history"])
    assert pool > max(h["pool"] for h in frozen["history"] if h["graded"])
    fresh = config_of(ROOT, confirm)
    known = config_of(ROOT, *documented)
    assert fresh.pop("protocol") == {"stage": "confirmatory"}
    assert fresh.pop("run")["name"] == Path(confirm).stem
    known.pop("run", None)
    if "only_studies" in fresh and "only_studies" not in known:
        # the studies it confirms: all those of the documented run that the claims read
        only = fresh.pop("only_studies")
        read = set(re.findall(r"^\s*fit: (\w+)", CLAIMS.read_text(), re.M))
        assert read & set(known["studies"]) == set(only), only
        known["studies"] = {k: v for k, v in known["studies"].items() if k in only}
    moved = dict(_offsets(fresh))
    assert moved and {p: v - pool for p, v in moved.items()} == dict(_offsets(known))
    assert all(0 <= v < pool for v in dict(_offsets(known)).values())
    assert _without(fresh) == _without(known)
    # cell by cell as the planner builds them: the same cells, each on the seeds of the
    # documented one moved by the pool (a study that leaves seed_offset at its default too)
    cells = [{(j.study, j.arm, c.label): c.settings for j in study_jobs(config) for c in j.cells}
             for config in (fresh, known)]
    assert cells[0].keys() == cells[1].keys() and cells[0]
    for key, settings in cells[0].items():
        was = cells[1][key]
        assert settings == dataclasses.replace(was, seed_offset=was.seed_offset + pool), key


def test_results_doc_heads_with_the_confirmatory_run_the_exploratory_beside():
    entries = [ENTRY, {**ENTRY, "id": "far", "documented": 3.4}]
    explore, readings = ledger({"claims": entries, "notes": NOTES}, fits())
    fresh = 2.9 + 0.1 * np.random.default_rng(1000).standard_normal(36)
    confirm, _ = ledger({"claims": entries, "notes": NOTES}, fits(row(values=fresh),
                                                                   row(depth=6)))
    confirm.loc[confirm["id"] == "far", ["outcome", "verdict"]] = "inconclusive"  # a change
    table = replication(explore, confirm).set_index("note")
    assert table.loc["stack96", "graded (exploratory)"] == 2
    assert table.loc["stack96", "same outcome"] == 1
    moves = transitions(explore, confirm).set_index("exploratory \\ confirmatory")
    assert moves.loc["contradicted", "inconclusive"] == 1
    assert moves.loc["supported", "supported"] == 1
    assert moves.to_numpy().sum() == 2
    doc = results_doc(explore, readings, "rules", "a test", confirm, "abc")
    assert "## Counts (confirmatory: seeds never seen)" in doc
    assert ("Confirmatory run (seeds never seen, rules frozen at abc): 1 supported, 0 "
            "contradicted, 1 inconclusive") in doc
    assert "Exploratory run: contradicted." in doc and "Exploratory run: the same." in doc
    assert outcomes_in(doc) == {ENTRY["id"]: "supported", "far": "inconclusive"}
    alone = results_doc(explore, readings, "rules", "a test")
    assert "no confirmatory run at this freeze yet" in alone
    assert "Exploratory run (its seeds chose the readings; no confirmatory run at these rules " \
        "yet): 1 supported, 1 contradicted" in alone
    assert outcomes_in(alone) == {ENTRY["id"]: "supported", "far": "contradicted"}
    # FIXES.md's and SCALE.md's tables read the same rows: the documents agree entry by entry
    assert outcomes_in(verdict_table(confirm, explore)) == outcomes_in(doc)


def test_ledgers_graded_under_other_rules_are_not_merged():
    table, _ = ledger({"claims": [ENTRY], "notes": NOTES}, fits())
    same = merge_runs({"default": table.assign(fingerprint="a"),
                       "scale": table.assign(fingerprint="a")})
    assert list(same["run"]) == ["default"]
    with pytest.raises(ValueError, match=r"different rules \(default: a, scale: b\)"):
        merge_runs({"default": table.assign(fingerprint="a"),
                    "scale": table.assign(fingerprint="b")})


def test_the_generated_documents_agree_entry_by_entry():
    """docs/RESULTS.md, docs/FIXES.md and docs/SCALE.md come from one merged ledger: every
    entry two of them list has the same outcome in both."""
    found = {name: outcomes_in((ROOT / "docs" / name).read_text())
             for name in ("RESULTS.md", "FIXES.md", "SCALE.md")}
    assert len(found["RESULTS.md"]) >= 150
    assert found["FIXES.md"] and found["SCALE.md"]
    for name in ("FIXES.md", "SCALE.md"):
        differ = {i: (o, found["RESULTS.md"].get(i)) for i, o in found[name].items()
                  if found["RESULTS.md"].get(i) != o}
        assert not differ, f"{name} and RESULTS.md disagree: {differ}"


def test_the_joint_identification_keeps_the_numbers_dependence():
    """Twelve identifying numbers, three outside their bands: independent numbers make that
    rare (binomial 2%: the reading is excluded); twelve copies of one number (a factor and the
    two sds it is the quotient of are not independent either) fall out together, so three
    misses are one miss: P(at least 3) is about 5%, not 2%."""
    rng = np.random.default_rng(2)
    pools = rng.standard_normal((12, 36))

    def median_of(v):
        return lambda idx: np.median(v[idx], axis=1)

    independent = [(median_of(v), 6, 36) for v in pools]
    same = [(median_of(pools[0]), 6, 36)] * 12
    assert joint_miss_p(independent, 3) < 0.035
    assert joint_miss_p(same, 3) > 0.04
    assert joint_miss_p(same, 0) == 1.0
    assert np.isnan(joint_miss_p([(median_of(pools[0]), 6, 36), (median_of(pools[1]), 6, 24)],
                                 1))  # no common pool: the binomial rule instead


def test_the_fixes_theory096_names_rearrange_rather_than_remove():
    """theory096: "the fixes in the literature are rearrangements rather than removals —
    sandwich and peri-layernorm placements, and this paper's own two streams". Each keeps a
    residual path (the stream telescopes or is carried) and at least Pre-LN's LayerNorms."""
    from depthlab.vocabulary.placements import PLACEMENTS

    pre = PLACEMENTS["pre"]
    for name in ("sandwich", "peri", "resi_dual"):
        fix = PLACEMENTS[name]
        assert fix.residual, name
        assert len(fix.norms) >= len(pre.norms), name
        assert fix.final_norm, name
    assert PLACEMENTS["resi_dual"].carry  # its second stream
