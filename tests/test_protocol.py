"""The protocol's freeze (depthlab.claims.protocol): what an exploratory run's identification
freezes, which freezes are refused, and how a confirmatory run is held to the freeze, on small
hand-written claims files and identification records."""

from __future__ import annotations

import pytest
import yaml

from depthlab.claims.protocol import (
    CONFIRMATORY,
    EXPLORATORY,
    check_frozen,
    freeze,
    graded_at,
    next_pool,
    rules_fingerprint,
)
from depthlab.claims.schema import ClaimsError

READINGS = [
    {"setting": "activation", "primary": "ReLU", "labels": ["ReLU", "GELU"]},
    {"setting": "init", "primary": "fan_in", "labels": ["fan_in", "default"]},
]
CLAIMS = {"claims": [], "fits": {},
          "notes": {"varsplit": {"title": "t", "source": "sample", "readings": READINGS}}}


def _record(setting, label, excluded):
    return {"note": "varsplit", "setting": setting, "label": label, "excluded": excluded,
            "why": "3 of 6 outside" if excluded else ""}


def _frozen(records, history=()):
    return freeze(records, CLAIMS, "2026-12-06", next_pool(list(history)), {}, list(history),
                  "test")


def test_a_freeze_keeps_what_the_exploratory_run_excluded_and_the_next_pool():
    history = [{"date": "d", "pool": 1000, "fingerprint": "f", "graded": True}]
    frozen = _frozen([_record("activation", "ReLU", True), _record("activation", "GELU", False),
                      _record("init", "fan_in", False), _record("init", "default", True)],
                     history)
    assert frozen["pool"] == 2000  # above the pool a confirmatory run spent
    assert frozen["readings"]["varsplit"]["activation"] == {
        "allowed": ["GELU"], "excluded": {"ReLU": "3 of 6 outside"}}
    assert frozen["readings"]["varsplit"]["init"]["allowed"] == ["fan_in"]
    assert frozen["fingerprint"] == rules_fingerprint(CLAIMS, frozen)


def test_a_setting_measured_only_at_an_excluded_cell_may_allow_none_a_note_may_not():
    """varsplit's init readings were measured at ReLU, which its activation numbers exclude:
    every init label is excluded with it, and the note is graded at GELU. A note whose every
    setting excludes every label grades nothing: refused."""
    frozen = _frozen([_record("activation", "ReLU", True), _record("activation", "GELU", False),
                      _record("init", "fan_in", True), _record("init", "default", True)])
    assert frozen["readings"]["varsplit"]["init"]["allowed"] == []
    with pytest.raises(ClaimsError, match="allows no label of any open setting"):
        _frozen([_record(s["setting"], label, True) for s in READINGS for label in s["labels"]])


def test_a_freeze_naming_a_label_twice_or_an_unknown_setting_is_refused():
    frozen = _frozen([_record("activation", "ReLU", True)])
    twice = {**frozen, "readings": {"varsplit": {"activation": {
        "allowed": ["ReLU", "GELU"], "excluded": {"ReLU": "w"}}}}}
    with pytest.raises(ClaimsError, match="must name each of its labels"):
        check_frozen(twice, CLAIMS)
    unknown = {**frozen, "readings": {"varsplit": {"tokens": {"allowed": ["64"]}}}}
    with pytest.raises(ClaimsError, match="readings.varsplit.tokens is not an open setting"):
        check_frozen(unknown, CLAIMS)
    spent = {**frozen, "pool": 1000,
             "history": [{"date": "d", "pool": 1000, "fingerprint": "f", "graded": True}]}
    with pytest.raises(ClaimsError, match="pool=1000 was seen"):
        check_frozen(spent, CLAIMS)


def test_a_confirmatory_run_is_graded_at_the_freeze_only_while_the_rules_hold(tmp_path):
    path = tmp_path / "frozen.yaml"
    with pytest.raises(ClaimsError, match="needs a freeze"):
        graded_at(CLAIMS, CONFIRMATORY, path)
    frozen = _frozen([_record("activation", "ReLU", True), _record("activation", "GELU", False)])
    path.write_text(yaml.safe_dump(frozen))
    stage = graded_at(CLAIMS, CONFIRMATORY, path)
    assert (stage.pool, stage.fingerprint) == (1000, frozen["fingerprint"])
    assert ("varsplit", "activation", "ReLU") in stage.excluded
    # an exploratory run at the same rules is graded at the freeze's choices too
    assert graded_at(CLAIMS, EXPLORATORY, path).excluded == stage.excluded
    changed = {**CLAIMS, "fits": {"training": {"seeds": 6, "run": "r", "scale": "s"}}}
    with pytest.raises(ClaimsError, match="a rule changed after the freeze"):
        graded_at(changed, CONFIRMATORY, path)
    # ... while an exploratory run at changed rules identifies its readings anew
    assert graded_at(changed, EXPLORATORY, path).excluded is None
