"""The ledger's outcome rules on known truth (benchmarks/rule_truth.py): where the simulated note
is right a contradiction is rare (about the 5% a 95% rule allows), where it is wrong a support is
rare, and where it is right the rules can support it (their power at the note's seed count)."""

from __future__ import annotations

import pytest

from benchmarks.rule_truth import CASES, rates

TRIALS = 60  # per case and truth: a 5% rate has a binomial sd of 2.8% here


@pytest.fixture(scope="module")
def table():
    return rates(TRIALS, seed=1).set_index(["rule", "the note is"])


@pytest.mark.parametrize("rule", list(CASES))
def test_a_right_note_is_rarely_contradicted_a_wrong_one_rarely_supported(table, rule):
    right, wrong = table.loc[(rule, "right")], table.loc[(rule, "wrong")]
    assert right["contradicted"] <= 0.12
    assert wrong["supported"] <= 0.10
    assert right["supported"] >= 0.4  # the rule has power at the note's seed count
    assert wrong["contradicted"] >= right["contradicted"]
