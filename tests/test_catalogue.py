"""The job catalogue and the path patterns (depthlab.planner.catalogue, .paths): what each stage
reads, computed from a config without Snakemake."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from depthlab.claims.schema import load_claims
from depthlab.planner.catalogue import Catalogue
from depthlab.planner.overlay import config_of
from depthlab.planner.reuse import reuse
from depthlab.planner.validate import check_config
from depthlab.studies import STUDIES, TARGETS
from depthlab.vocabulary import paths

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
CLAIMS = load_claims(ROOT / "config/claims.yaml")["claims"]


def catalogue(name: str, drop: tuple[str, ...] = ()) -> Catalogue:
    config = config_of(ROOT, f"config/{name}")
    for study in drop:
        del config["studies"][study]
    return Catalogue(config, check_config(config, SCHEMA, STUDIES), TARGETS, CLAIMS)


def pattern(template: str) -> re.Pattern:
    """A path pattern as a regex: each {wildcard} one path component."""
    return re.compile(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)))


@pytest.mark.parametrize("name", ["config.yaml", "fixes.yaml", "tiny.yaml"])
def test_every_shard_is_unique_and_follows_the_pattern(name):
    cat = catalogue(name)
    shards = [j.shard for j in cat.jobs.values()]
    assert len(shards) == len(set(shards)) > 0
    assert all(pattern(paths.SHARD).fullmatch(s) for s in shards)
    # a copied cell's source names the shard its owner job writes
    copies = reuse(list(cat.jobs.values()), set())
    owners = {s.shard for cells in copies.values() for s in cells.values()}
    assert owners <= set(shards)


@pytest.mark.parametrize("name", ["config.yaml", "fixes.yaml"])
def test_stages_read_exactly_the_files_the_catalogue_lists(name):
    cat = catalogue(name)
    for study, arms in cat.arms.items():
        assert sorted(cat.shards(study)) == sorted(
            s for arm in arms for s in cat.shards(study, [arm]))
    for target in cat.targets:
        fits = cat.target_fits(target)
        assert fits and set(fits) <= set(cat.study_fits(target.study))
    # provenance lists every shard once, every study's table and the ledger iff there is one
    listed = cat.provenance_inputs()
    assert len(listed) == len(set(listed))
    assert {j.shard for j in cat.jobs.values()} <= set(listed)
    assert (paths.LEDGER["parquet"] in listed) == bool(cat.claim_fits)
    built = cat.all_targets()
    assert set(paths.LEDGER.values()) <= set(built)
    assert set(cat.ledger_fits()) == {f for s in cat.claim_fits for f in cat.study_fits(s)}


def test_a_study_left_out_has_no_targets_fits_or_ledger_rows():
    full, part = catalogue("config.yaml"), catalogue("config.yaml", drop=("stack96",))
    assert any(t.study == "stack96" for t in full.targets)
    assert not any(t.study == "stack96" for t in part.targets)
    assert "stack96" in full.claim_fits and "stack96" not in part.claim_fits
    assert not [p for p in part.all_targets() if "stack96" in p]


def test_seeds_of_a_target_are_the_seed_counts_of_its_cells():
    cat = catalogue("tiny.yaml")
    config = config_of(ROOT, "config/tiny.yaml")
    for target in cat.targets:
        study = config["studies"][target.study]
        expected = {study["arms"][arm].get("settings", {}).get(
            "seeds", study.get("settings", {}).get("seeds"))
            for arm in target.arms(cat.arms[target.study])}
        if None not in expected:  # seeds set in the config, not by RunSettings' default
            assert cat.seeds_of(target) == ", ".join(map(str, sorted(expected)))


def test_benchmark_patterns_name_their_rule():
    assert pattern(paths.benchmark("measure")).fullmatch(
        "results/benchmarks/measure/stack96/grad/placement-pre.tsv")
    assert not pattern(paths.benchmark("train")).fullmatch(
        "results/benchmarks/measure/stack96/grad/placement-pre.tsv")
