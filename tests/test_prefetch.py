"""Work made ahead (depthlab.core.prefetch): the same results in the same order, the next item
made while the caller works on the current one, and a job's passes drawn ahead giving the same
rows bit for bit."""

from __future__ import annotations

import threading

import pytest
import torch

from depthlab.core.measure import measure_job
from depthlab.core.model import build, forward
from depthlab.core.prefetch import ahead
from depthlab.core.recompute import recomputed_backward
from depthlab.planner.cost import pass_plan
from depthlab.vocabulary.jobs import Cell, Job
from depthlab.vocabulary.settings import RunSettings


@pytest.mark.parametrize("enabled", [False, True])
def test_ahead_gives_every_item_once_in_order(enabled):
    made = []

    def make(item: int) -> int:
        made.append(item)
        return item * item

    assert list(ahead(range(5), make, enabled)) == [(i, i * i) for i in range(5)]
    assert sorted(made) == list(range(5))
    assert list(ahead([], make, enabled)) == []


def test_ahead_makes_the_next_item_while_the_caller_holds_this_one():
    """Enabled, make(k + 1) starts on another thread while the caller works on item k (here
    it waits for it); disabled, nothing is made before it is asked for."""
    started = {i: threading.Event() for i in range(3)}

    def make(item: int) -> int:
        started[item].set()
        return item

    for item, _ in ahead(range(3), make, enabled=True):
        if item < 2:
            assert started[item + 1].wait(timeout=10)
    made = []
    lazy = ahead(range(3), made.append, enabled=False)
    next(lazy)
    assert made == [0]


def test_ahead_raises_what_make_raised():
    def make(item: int) -> int:
        if item == 2:
            raise ValueError("item 2")
        return item

    with pytest.raises(ValueError, match="item 2"):
        list(ahead(range(4), make, enabled=True))


def small(**kw) -> RunSettings:
    return RunSettings(**{"d_model": 16, "heads": 4, "tokens": 8, **kw})


@pytest.mark.slow
def test_a_job_measured_with_passes_drawn_ahead_gives_the_same_rows_bit_for_bit():
    """A job mixing a gradient cell in two passes, a forward-only cell holding its blocks, one
    streaming them and a DeepNorm cell (its own-init generator): the same rows with each pass
    drawn while the one before runs."""
    settings = {
        "grad": small(depth=4, seeds=4, seed_batch=2),
        "held": small(depth=5, seeds=3, grad_of="none"),
        "streamed": small(depth=5, seeds=3, grad_of="none", pass_mb=1, d_model=64, tokens=32),
        "deepnorm": small(depth=3, seeds=2, placement="deepnorm"),
    }
    cells = tuple(Cell(label, s, pass_plan(s)) for label, s in settings.items())
    assert [c.plan.streamed for c in cells] == [False, False, True, False]
    job = Job("s", "a", "j", cells)
    serial = measure_job(job, prefetch=False)
    assert serial["label"].nunique() == 4
    assert serial.equals(measure_job(job, prefetch=True))


@pytest.mark.parametrize("placement", ["pre", "resi_dual", "deepnorm"])
def test_streamed_blocks_drawn_ahead_give_the_same_numbers(placement):
    s = small(placement=placement, depth=5, seeds=3, grad_of="none")
    params, draw = build(s, [0, 1, 2], streamed=True)
    with torch.no_grad():
        y, _ = forward(params, draw.x, s)
        params.blocks.prefetch = True
        y_ahead, _ = forward(params, draw.x, s)
    assert torch.equal(y, y_ahead)


@pytest.mark.slow
@pytest.mark.parametrize("placement", ["pre", "resi_dual", "deepnorm"])
def test_a_recomputed_backward_with_blocks_drawn_ahead_gives_the_same_numbers(placement):
    """The backward pass that draws each block again (depthlab.core.recompute) gives the same
    loss and per-block gradient norms, bit for bit, with block l - 1 drawn while block l runs."""
    s = small(placement=placement, depth=5, seeds=3)
    runs = []
    for prefetch in (False, True):
        params, draw = build(s, [0, 1, 2], streamed=True)
        params.blocks.prefetch = prefetch
        with torch.no_grad():
            _, trace = forward(params, draw.x, s)
        loss = recomputed_backward(params, draw, trace, s)
        runs.append((loss, trace.block_grad_sq))
    (loss, sq), (loss_ahead, sq_ahead) = runs
    assert sq.shape == (3, 5) and bool((sq > 0).all())
    assert torch.equal(loss, loss_ahead) and torch.equal(sq, sq_ahead)
