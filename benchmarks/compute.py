"""In-process timings: the GEMM limit, one cell by the measure path and by the per-seed loop,
and how a cell's cost grows with depth and with the number of seeds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

from depthlab.core import model, probes
from depthlab.core.measure import forward_backward, run_pass
from depthlab.core.reference import per_seed_loop
from depthlab.planner.cost import cell_flops, pass_plan
from depthlab.vocabulary.settings import RunSettings


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], object], device: str = "cpu") -> float:
    """Wall seconds of one call of fn (device work included)."""
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - start


def gemm_rates(s: RunSettings, repeats: int = 50) -> list[dict]:
    """FLOP/s of the seed-batched matrix products one block does, at the cell's own sizes
    (S seeds, N = batch*tokens rows): x W^T for the d x d maps, W1 and W2."""
    S, n, d, f = s.seeds, s.batch * s.tokens, s.d_model, s.ffn_mult * s.d_model
    kw = {"dtype": model.torch_dtype(s.dtype), "device": s.device}
    rows = []
    for name, (k, m) in {"d_by_d": (d, d), "ffn_in": (d, f), "ffn_out": (f, d)}.items():
        a, b = torch.randn(S, n, k, **kw), torch.randn(S, k, m, **kw)
        out = torch.empty(S, n, m, **kw)
        torch.bmm(a, b, out=out)
        seconds = timed(lambda a=a, b=b, out=out: [torch.bmm(a, b, out=out)
                                                   for _ in range(repeats)], s.device)
        rows.append({"shape": f"{S}x({n}x{k})@({k}x{m})", "product": name,
                     "gflop_s": 2 * S * n * k * m * repeats / seconds / 1e9})
    return rows


def measure_path(s: RunSettings) -> dict[str, float]:
    """Seconds of the stages of depthlab.core.measure.run_pass on one cell, all seeds in one pass:
    build (weights, inputs), forward_backward (with the gradient-norm hooks), probes."""
    out = {}
    start = time.perf_counter()
    params, draw = model.build(s, s.seed_list())
    _sync(s.device)
    out["build_s"] = time.perf_counter() - start
    start = time.perf_counter()
    trace, _ = forward_backward(params, draw, s, pass_plan(s))
    _sync(s.device)
    out["forward_backward_s"] = time.perf_counter() - start
    out["probes_s"] = timed(lambda: probes.run_probes(params, trace, s), s.device)
    return out


def naive_loop(s: RunSettings) -> float:
    """Seconds of the same cell done the straightforward way (depthlab.core.reference)."""
    return timed(lambda: per_seed_loop(s), s.device)


def scaling(base: RunSettings, depths: list[int], seeds: list[int], repeats: int = 2) -> list[dict]:
    """Median seconds of a whole measure pass (build, forward, backward, probes) against depth
    at base.seeds seeds and against the seed count at base.depth layers."""
    rows = []
    for axis, values in (("depth", depths), ("seeds", seeds)):
        for value in values:
            s = RunSettings(**{**base.as_columns(), axis: value})
            plan = pass_plan(s)
            run_pass(s, plan, s.seed_list())  # warm: allocator and caches as in a job's later cells
            t = statistics.median(timed(lambda s=s, p=plan: run_pass(s, p, s.seed_list()),
                                        s.device) for _ in range(repeats))
            rows.append({"axis": axis, "value": value, "depth": s.depth, "seeds": s.seeds,
                         "seconds": t, "gflop": cell_flops(s) / 1e9})
    return rows
