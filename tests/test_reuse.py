"""Cells measured once: a cell whose numbers another job's cell gives is copied from
its shard, and the copy equals what measuring it would give, bit for bit."""

from __future__ import annotations

import dataclasses

import pandas as pd
import torch
from conftest import ROOT

from depthlab.core.measure import measure_job
from depthlab.core.records import copied_rows
from depthlab.planner.grid import cell
from depthlab.planner.reuse import Source, covers, numbers_key, reuse
from depthlab.vocabulary.jobs import Job
from depthlab.vocabulary.settings import RunSettings

SMALL = {"depth": 3, "d_model": 16, "heads": 2, "tokens": 8, "seeds": 2}


def job(arm: str, **settings) -> Job:
    return Job("s", arm, "j", (cell("c", RunSettings(**{**SMALL, **settings})),))


def test_same_numbers_different_probes_share_and_the_richer_cell_owns():
    grads, forward = RunSettings(**SMALL), RunSettings(**SMALL, grad_of="none")
    assert numbers_key(grads) == numbers_key(forward)
    assert covers(grads, forward) and not covers(forward, grads)
    # final_norm 'auto' is 'on' for Pre-LN: the same computation
    assert numbers_key(RunSettings(**SMALL, final_norm="on")) == numbers_key(grads)
    assert numbers_key(RunSettings(**SMALL, out_scale=3.0)) != numbers_key(grads)
    assert numbers_key(RunSettings(**SMALL, seed_batch=1)) != numbers_key(grads)
    jobs = [job("forward", grad_of="none"), job("grads"), job("again")]
    copies = reuse(jobs, excluded=set())
    assert set(copies) == {("s", "forward", "j"), ("s", "again", "j")}
    assert all(src.arm == "grads" for c in copies.values() for src in c.values())
    # without the first owner, the other cell with gradients owns; one without cannot
    alone = reuse(jobs, excluded={("s", "grads")})
    assert set(alone) == {("s", "forward", "j")} and alone[("s", "forward", "j")]["c"].arm == \
        "again"


def test_the_jacobian_and_update_probes_lend_only_what_they_measured():
    both = RunSettings(**SMALL, jacobian_dirs=2, update_lr=1e-3)
    plain = RunSettings(**SMALL)
    assert numbers_key(both) == numbers_key(plain)
    assert covers(both, plain) and not covers(plain, both)
    for other in ({"jacobian_dirs": 3}, {"update_lr": 1e-2}):
        reader = dataclasses.replace(both, **other)
        assert not covers(both, reader) and not covers(reader, both)
    copies = reuse([job("plain"), job("both", jacobian_dirs=2, update_lr=1e-3)], set())
    assert set(copies) == {("s", "plain", "j")} and copies[("s", "plain", "j")]["c"].arm == "both"


def test_an_update_is_never_read_from_another_optimiser_s():
    """Cells that differ only in update_optimizer have the same numbers but each other's
    update probe never: neither covers the other, each owns its cell (both measured), and a
    cell without the update probe may copy from either."""
    adam = RunSettings(**SMALL, update_lr=1e-3)
    sgd = dataclasses.replace(adam, update_optimizer="sgd")
    plain = RunSettings(**SMALL)
    assert numbers_key(adam) == numbers_key(sgd) == numbers_key(plain)
    assert not covers(adam, sgd) and not covers(sgd, adam)
    assert covers(sgd, plain) and covers(adam, plain)
    # the same optimiser at another lr does not cover either
    assert not covers(dataclasses.replace(sgd, update_lr=1e-4), sgd)
    for order in (("adam", "sgd"), ("sgd", "adam")):
        jobs = [job(name, update_lr=1e-3, update_optimizer=name) for name in order]
        copies = reuse([*jobs, job("plain")], set())
        assert set(copies) == {("s", "plain", "j")}, order
        assert copies[("s", "plain", "j")]["c"].arm == order[0]
    # an arm's packed update_optimizer axis (config/fixes.yaml's update_response): its Adam cell
    # is read from central's (the same lr, and its Jacobian besides), its SGD cell measured
    arm = Job("s", "arm", "j", tuple(cell(name, RunSettings(**SMALL, update_lr=1e-3,
                                                            update_optimizer=name))
                                     for name in ("sgd", "adam")))
    central = job("central", update_lr=1e-3, jacobian_dirs=2)
    assert reuse([arm, central], set()) == {
        ("s", "arm", "j"): {"adam": Source("s", "central", "j", "c")}}


def test_a_copied_cell_equals_the_measured_one_bit_for_bit():
    """Also: the probes that run the model again (jacobian_dirs, update_lr, with either
    update_optimizer) change no number of the others."""
    torch.set_num_threads(1)
    for step in ("adam", "sgd"):
        owner = job("grads", block_corr=True, jacobian_dirs=2, update_lr=1e-3,
                    update_optimizer=step)
        for reader in (job("forward", grad_of="none"), job("plain", block_corr=False)):
            measured = measure_job(reader)
            shard = measure_job(owner)
            copy = copied_rows(shard, "c", reader.cells[0])
            copied = measure_job(reader, copies={"c": copy})
            pd.testing.assert_frame_equal(copied, measured, check_exact=True)


def test_an_own_block_shares_across_seed_batches_and_its_copy_is_exact(monkeypatch):
    """An own block's seeds are measured one at a time: its cells share whatever their seed
    batches (the models study's forward-only stream arm reads its grad arm at every depth,
    though a forward pass holds more seeds), and the copy is what measuring gives, bit for
    bit (examples/encoder_block.py's block)."""
    monkeypatch.chdir(ROOT)
    torch.set_num_threads(1)
    own = {"block": "examples.encoder_block:make_block", "attention": "torch_mha",
           "causal": False}
    assert numbers_key(RunSettings(**SMALL, **own, seed_batch=1)) == numbers_key(
        RunSettings(**SMALL, **own, grad_of="none"))
    assert numbers_key(RunSettings(**SMALL, seed_batch=1)) != numbers_key(RunSettings(**SMALL))
    owner, reader = job("grads", **own, seed_batch=1), job("forward", **own, grad_of="none")
    assert set(reuse([owner, reader], excluded=set())) == {("s", "forward", "j")}
    copy = copied_rows(measure_job(owner), "c", reader.cells[0])
    pd.testing.assert_frame_equal(measure_job(reader, copies={"c": copy}), measure_job(reader),
                                  check_exact=True)


def test_calibrated_and_trained_arms_neither_lend_nor_borrow():
    jobs = [job("a"), job("b")]
    assert reuse(jobs, excluded={("s", "b")}) == {}
    assert dataclasses.astuple(reuse(jobs, set())[("s", "b", "j")]["c"]) == ("s", "a", "j", "c")
