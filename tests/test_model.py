"""The model against PyTorch's own encoder layer, the stream decomposition, and the init."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from conftest import copy_encoder_weights
from torch import nn

from depthlab.core.measure import measure_cell
from depthlab.core.model import StackParams, build, forward
from depthlab.core.probes import METRICS, Probe, measures, run_probes
from depthlab.core.reference import per_seed_loop
from depthlab.planner.cost import pass_plan
from depthlab.vocabulary.metrics import GRADIENT_METRICS, UPDATE_METRICS
from depthlab.vocabulary.placements import ORDER
from depthlab.vocabulary.settings import RunSettings


def small(**kw) -> RunSettings:
    base = dict(d_model=16, heads=4, tokens=8, depth=3, seeds=2)
    return RunSettings(**{**base, **kw})


def torch_layer(p: dict, s: RunSettings, seed: int, norm_first: bool) -> nn.Module:
    """nn.TransformerEncoderLayer carrying seed `seed`'s weights of block p."""
    layer = nn.TransformerEncoderLayer(
        s.d_model, s.heads, s.ffn_mult * s.d_model, dropout=0.0, activation="relu",
        batch_first=True, norm_first=norm_first, dtype=torch.float64,
    )
    copy_encoder_weights(layer, p, seed)
    with torch.no_grad():
        for i in (1, 2):
            getattr(layer, f"norm{i}").weight.copy_(p[f"ln{i}_w"][seed])
            getattr(layer, f"norm{i}").bias.copy_(p[f"ln{i}_b"][seed])
    return layer


@pytest.mark.parametrize("placement, norm_first", [("pre", True), ("post", False)])
@pytest.mark.parametrize("causal", [True, False])
def test_blocks_match_torch_encoder_layer(placement, norm_first, causal):
    s = small(placement=placement, causal=causal, depth=3)
    params, draw = build(s, [0, 1])
    with torch.no_grad():
        # non-trivial LayerNorm affine, so gains and biases are compared too
        for b in params.blocks:
            for name in ("ln1_w", "ln1_b", "ln2_w", "ln2_b"):
                b[name].add_(0.1 * torch.randn_like(b[name]))
        _, trace = forward(params, draw.x, s)
        mask = nn.Transformer.generate_square_subsequent_mask(s.tokens, dtype=torch.float64)
        for seed in range(2):
            x = draw.x[seed]
            for layer, p in enumerate(params.blocks):
                ref = torch_layer(p, s, seed, norm_first).train()
                x = ref(x, src_mask=mask if causal else None, is_causal=causal)
                mine = trace.stream[layer + 1][seed].view_as(x)
                torch.testing.assert_close(mine, x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("placement", ["pre", "post", "none"])
def test_stream_decomposition_is_exact(placement):
    s = small(placement=placement)
    params, draw = build(s, [0, 1])
    with torch.no_grad():
        _, trace = forward(params, draw.x, s)
    for layer in range(s.depth):
        x, h, a, m = (trace.stream[layer], trace.mid[layer], trace.attn[layer], trace.mlp[layer])
        if placement == "pre":
            assert torch.equal(h, x + a)
            assert torch.equal(trace.stream[layer + 1], h + m)
        else:  # the stream is the second LN (gain 1, bias 0 at init, nn.LayerNorm's eps) of
            z = h + m if placement == "post" else m  # h + m (Post-LN), of m (no residual)
            expected = torch.nn.functional.layer_norm(z, (s.d_model,), eps=1e-5)
            torch.testing.assert_close(trace.stream[layer + 1], expected, rtol=1e-12,
                                       atol=1e-12)
            assert not torch.allclose(trace.stream[layer + 1], h + m)


def test_pre_ln_branch_ignores_the_stream_scale():
    """A Pre-LN branch reads Norm(x): scaling the stream by 10 leaves the attention branch's
    output unchanged (up to LN's eps) and the MLP's within its own scale (it reads Norm(x + a),
    whose direction moves as a's share shrinks), so what a block adds is set by its branches'
    own parameters, not by the stream's size (the monitor note's 'a jump at one block ... a
    branch whose learned scale has run away')."""
    s = small(placement="pre")
    params, draw = build(s, [0, 1])
    with torch.no_grad():
        _, base = forward(params, draw.x, s)
        _, scaled = forward(params, 10 * draw.x, s)
    for layer in range(s.depth):
        rms = [t.mlp[layer].square().mean().sqrt() for t in (base, scaled)]
        assert 0.5 < rms[1] / rms[0] < 2  # not 10x: the branch's size does not follow the stream
    torch.testing.assert_close(scaled.attn[0], base.attn[0], rtol=1e-4, atol=1e-5)  # eps
    assert not torch.allclose(scaled.stream[1], base.stream[1], rtol=0.5)


@pytest.mark.parametrize("placement", ORDER)
@pytest.mark.parametrize("options", [{}, {"loss": "cross_entropy", "attention": "torch_mha"},
                                     {"init": "fan_in", "out_scale": 3.0}])
def test_streamed_blocks_give_the_stored_numbers_bit_for_bit(placement, options):
    """A forward-only pass that draws each block as it reaches it (StreamedBlocks) gives the
    numbers of the pass over blocks drawn all at once, bit for bit, every placement (DeepNorm's
    own-init generator, ResiDual's second stream, the head and input drawn after the blocks)."""
    s = small(placement=placement, depth=5, seeds=3, **options)
    stored, draw = build(s, [0, 1, 2])
    streamed, streamed_draw = build(s, [0, 1, 2], streamed=True)
    assert torch.equal(draw.x, streamed_draw.x) and torch.equal(draw.target, streamed_draw.target)
    assert all(torch.equal(stored.final[k], streamed.final[k]) for k in stored.final)
    with torch.no_grad():
        y, trace = forward(stored, draw.x, s)
        for _ in range(2):  # each pass over the blocks draws them again, the same
            y_streamed, trace_streamed = forward(streamed, streamed_draw.x, s)
            assert torch.equal(y, y_streamed)
            for name in ("stream", "mid", "attn", "mlp", "carry"):
                pairs = zip(getattr(trace, name), getattr(trace_streamed, name), strict=True)
                assert all(torch.equal(a, b) for a, b in pairs), name
    assert len(streamed.blocks) == s.depth and not isinstance(streamed.blocks, list)


def test_released_blocks_give_each_block_up_to_the_one_pass_that_reaches_it():
    """ReleasedBlocks yields the drawn blocks in order, holds none once the pass is through,
    and refuses a second pass rather than give it no blocks."""
    from depthlab.core.model import ReleasedBlocks

    s = small(grad_of="none", depth=4)
    params, draw = build(s, [0, 1])
    stored = list(params.blocks)
    released = ReleasedBlocks(list(stored))
    assert len(released) == 4
    assert [b is a for b, a in zip(released, stored, strict=True)] == [True] * 4
    assert released.blocks == [] and len(released) == 4
    with pytest.raises(RuntimeError, match="given up"):
        next(iter(released))


def test_a_forward_only_cell_holds_its_blocks_when_they_fit_and_streams_them_when_not():
    """A forward-only cell (grad_of none) holds every block, drawn once, where its pass fits
    pass_mb so, and draws each block as the pass reaches it where it does not: the same rows
    either way."""
    from depthlab.planner import cost

    s = small(grad_of="none", depth=4, seeds=3, block_corr=True)
    held = pass_plan(s)
    assert not held.streamed and not held.recomputes
    # at d = 64 one seed's 4 blocks hold 1.6 MB of weights, over a 1 MB budget
    assert cost.streamed(small(grad_of="none", depth=4, d_model=64, tokens=32, pass_mb=1))
    rows = measure_cell(s, held)
    assert rows.equals(measure_cell(s, dataclasses.replace(held, streamed=True)))


@pytest.mark.parametrize("placement", ORDER)
@pytest.mark.parametrize("options", [{"grad_of": "params"},
                                     {"grad_of": "weights", "loss": "cross_entropy"}])
@pytest.mark.slow
def test_recomputed_backward_gives_the_full_graph_s_gradients(placement, options):
    """The backward pass that recomputes one block at a time from its stored input
    (depthlab.core.recompute) gives every block's gradient norm and the loss of the full graph's
    backward pass (probes.backward), to 1e-12 relative, every placement."""
    from depthlab.core.measure import forward_backward
    from depthlab.core.recompute import recomputed_backward

    if placement == "rezero" and options["grad_of"] == "weights":
        pytest.skip("RunSettings rejects weight gradients for ReZero (0 by construction)")
    s = small(placement=placement, depth=5, seeds=3, **options)
    full, loss = forward_backward(*build(s, [0, 1, 2]), s, pass_plan(s))
    params, draw = build(s, [0, 1, 2], streamed=True)
    with torch.no_grad():
        _, trace = forward(params, draw.x, s)
    recomputed = recomputed_backward(params, draw, trace, s)
    assert torch.equal(recomputed, loss)
    torch.testing.assert_close(trace.block_grad_sq, full.block_grad_sq, rtol=1e-12, atol=0)
    assert (full.block_grad_sq > 0).all()  # ReZero's too: its gates' gradient at alpha = 0


def test_a_cell_over_the_pass_budget_recomputes_and_gives_the_same_rows():
    """measure_cell recomputes blocks where one seed's graph exceeds pass_mb (the planner's
    pass plan, depthlab.planner.cost.recomputes): the same rows as the full graph, to 1e-12."""
    from depthlab.planner import cost

    s = small(depth=6, seeds=2, pass_mb=1, d_model=64, tokens=32)
    assert cost.recomputes(s) and not cost.recomputes(RunSettings(depth=6, pass_mb=1,
                                                                  grad_of="none"))
    plan = pass_plan(s)
    assert plan.recomputes and plan.streamed
    recomputed = measure_cell(s, plan)
    full = measure_cell(s, dataclasses.replace(plan, recomputes=False, streamed=False))
    torch.testing.assert_close(torch.tensor(recomputed["value"].to_numpy()),
                               torch.tensor(full["value"].to_numpy()), rtol=1e-12, atol=1e-15)
    assert recomputed.drop(columns="value").equals(full.drop(columns="value"))


def test_seed_batch_equals_single_seed_runs():
    s = small(placement="pre")
    batched, draw = build(s, [3, 4])
    with torch.no_grad():
        y, _ = forward(batched, draw.x, s)
        for i, seed in enumerate([3, 4]):
            single, d1 = build(s, [seed])
            y1, _ = forward(single, d1.x, s)
            torch.testing.assert_close(y[i], y1[0], rtol=1e-13, atol=1e-13)


def _values(s: RunSettings, threads: int) -> torch.Tensor:
    """Every probe value of a cell measured on `threads` torch threads, in a fixed row order."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        frame = measure_cell(s, pass_plan(s))
    finally:
        torch.set_num_threads(before)
    keys = ["seed", "layer", "sublayer", "metric"]
    return torch.tensor(frame.sort_values(keys, kind="stable")["value"].to_numpy())


@pytest.mark.slow
@pytest.mark.parametrize("placement", ["pre", "post"])
def test_numbers_do_not_depend_on_threads_or_seed_split(placement):
    """A job's numbers are the same bit for bit when it runs again on the same threads and
    when its seeds run in passes of two instead of one pass; on 1 against 2 threads, and in a
    pass of a single seed, they agree to round-off (MKL may split a product's sum differently
    by thread count: on the project's 2-core runner, MKL 2024.2, 2 of 188 values differ by
    1 ulp). The config's `threads`, `seed_batch` and `pass_mb` change speed and memory, not
    the numbers beyond round-off."""
    s = small(placement=placement, d_model=128, tokens=128, depth=2, seeds=4)  # sizes that thread
    whole = _values(s, 2)

    def split(size: int) -> torch.Tensor:
        return _values(RunSettings(**{**s.as_columns(), "seed_batch": size}), 2)

    assert torch.equal(whole, _values(s, 2))
    assert torch.equal(_values(s, 1), _values(s, 1))
    torch.testing.assert_close(_values(s, 1), whole, rtol=1e-14, atol=1e-15)
    assert torch.equal(whole, split(2))
    for size in (1, 3):  # passes of one seed: 4 x 1, and 3 + 1
        torch.testing.assert_close(split(size), whole, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("threads", [1, 2])
def test_build_draws_what_torch_modules_draw_after_manual_seed(threads):
    """Seed s's weights, input and target are exactly what torch.manual_seed(s), building
    nn.TransformerEncoderLayers, then torch.randn give, whatever the number of threads the
    seeds are drawn on; Draw.rng continues each seed's stream."""
    s = small(attention="torch_mha", depth=2, seeds=3)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        params, draw = build(s, [5, 6, 7])
    finally:
        torch.set_num_threads(before)
    for i, seed in enumerate([5, 6, 7]):
        torch.manual_seed(seed)
        layers = [torch_layer_init(s) for _ in range(s.depth)]
        for layer, p in zip(layers, params.blocks, strict=True):
            sa = layer.self_attn
            assert torch.equal(torch.cat([p[f"w{n}"][i] for n in "qkv"]), sa.in_proj_weight)
            assert torch.equal(p["wo"][i], sa.out_proj.weight)
            assert torch.equal(p["w1"][i], layer.linear1.weight)
            assert torch.equal(p["b2"][i], layer.linear2.bias)
        x = torch.randn(s.batch, s.tokens, s.d_model, dtype=torch.float64)
        target = torch.randn(s.batch, s.tokens, s.d_model, dtype=torch.float64)
        assert torch.equal(draw.x[i], x) and torch.equal(draw.target[i], target)
        assert torch.equal(torch.randn(4, generator=draw.rng[i]), torch.randn(4))


def torch_layer_init(s: RunSettings) -> nn.Module:
    """A freshly initialised nn.TransformerEncoderLayer of settings s (global RNG)."""
    return nn.TransformerEncoderLayer(
        s.d_model, s.heads, s.ffn_mult * s.d_model, dropout=0.0, batch_first=True,
        dtype=torch.float64,
    )


def _std(t: torch.Tensor) -> float:
    return float(t.detach().flatten(1).std(dim=1).mean())


def test_init_std_matches_nn_linear_default():
    s = small(d_model=64, heads=4, depth=4, seeds=4)
    params, _ = build(s, [0, 1, 2, 3])
    d, f = s.d_model, s.ffn_mult * s.d_model
    # nn.Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) -> std 1/sqrt(3 fan_in)
    expect = {"wq": d, "wk": d, "wv": d, "wo": d, "w1": d, "w2": f}
    for name, fan_in in expect.items():
        got = sum(_std(b[name]) for b in params.blocks) / s.depth
        assert got == pytest.approx(1 / math.sqrt(3 * fan_in), rel=0.02), name


def test_out_scale_multiplies_exactly_wo_and_w2():
    base, _ = build(small(), [0])
    scaled, _ = build(small(out_scale=3.0), [0])
    for b0, b3 in zip(base.blocks, scaled.blocks, strict=True):
        for name in b0:
            factor = 3.0 if name in ("wo", "w2") else 1.0
            torch.testing.assert_close(b3[name], b0[name] * factor, rtol=0, atol=0)


def test_torch_mha_init_is_xavier_for_in_proj():
    s = small(attention="torch_mha", d_model=64, depth=4, seeds=2)
    params, _ = build(s, [0, 1])
    d = s.d_model
    xavier = math.sqrt(2 / (d + 3 * d))  # xavier_uniform_ of the (3d, d) in_proj
    got = sum(_std(b["wq"]) for b in params.blocks) / s.depth
    assert got == pytest.approx(xavier, rel=0.03)
    assert all(not b["bq"].detach().any() for b in params.blocks)


def test_final_norm_changes_only_head_input():
    on, draw = build(small(placement="pre", final_norm="on"), [0])
    s_on, s_off = small(placement="pre", final_norm="on"), small(placement="pre", final_norm="off")
    with torch.no_grad():
        y_on, t_on = forward(on, draw.x, s_on)
        y_off, t_off = forward(on, draw.x, s_off)
    for a, b in zip(t_on.stream, t_off.stream, strict=True):
        assert torch.equal(a, b)
    assert torch.equal(y_off, t_off.stream[-1])
    assert not torch.equal(y_on, y_off)
    sd = y_on.std(dim=-1, correction=0)
    torch.testing.assert_close(sd, torch.ones_like(sd), rtol=1e-3, atol=0)


@pytest.mark.parametrize("placement", ["pre", "post"])
@pytest.mark.parametrize("causal", [True, False])
def test_batched_path_equals_per_seed_encoder_layer_loop(placement, causal):
    """The seed-batched measure path gives the per-seed nn.TransformerEncoderLayer loop's
    gradient norms and stream sds to float64 round-off."""
    s = small(placement=placement, causal=causal, attention="torch_mha", depth=5, seeds=3)
    ref = per_seed_loop(s)
    frame = measure_cell(s, pass_plan(s))
    for metric in ("grad_norm", "stream_sd"):
        rows = frame[(frame.metric == metric) & (frame.layer >= 1)].sort_values(["seed", "layer"])
        got = torch.tensor(rows["value"].to_numpy()).view(s.seeds, s.depth)
        torch.testing.assert_close(got, ref[metric], rtol=1e-11, atol=0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("placement", ["post", "pre", "deepnorm", "resi_dual"])
def test_a_cell_on_the_gpu_equals_the_cpu_s(placement):
    """A seed gives the same weights on every device (they are drawn on the CPU), so a float64
    cell measured on the GPU equals the CPU's to round-off: each value within 1e-9 of the
    largest magnitude of its metric in the cell (a difference judged against the size of the
    terms it came from, not against itself)."""
    s = small(placement=placement, seeds=2)
    on_gpu = dataclasses.replace(s, device="cuda")
    keys = ["seed", "layer", "sublayer", "metric"]
    cpu = measure_cell(s, pass_plan(s)).set_index(keys)["value"]
    gpu = measure_cell(on_gpu, pass_plan(on_gpu)).set_index(keys)["value"]
    assert len(cpu) > 0 and sorted(gpu.index) == sorted(cpu.index)
    scale = cpu.abs().groupby(level="metric").transform("max")
    assert ((cpu - gpu.loc[cpu.index]).abs() <= 1e-9 * scale).all()


@pytest.mark.parametrize("shape", [(128, 512), (512, 128), (128, 128), (8, 4), (128,)])
def test_a_drawn_parameter_lands_in_its_stacked_slice_as_a_plain_copy_would(shape):
    """_put (a weight copied as a transposed pair, PyTorch's tiled path at d = 128) writes the
    numbers and the layout that copying into the strided slice element by element writes."""
    from depthlab.core.model import _put, _stacked
    drawn = torch.randn(shape, dtype=torch.float64)
    tiled, plain = (_stacked(3, shape, {"dtype": torch.float64}).zero_() for _ in range(2))
    _put(tiled[1], drawn)
    plain[1].copy_(drawn)
    assert torch.equal(tiled, plain) and tiled.stride() == plain.stride()
    assert torch.equal(tiled[1], drawn) and not torch.equal(tiled[0], drawn)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("placement", ORDER)
@pytest.mark.parametrize("streamed", [False, True])
def test_the_gpu_gets_the_cpu_s_weights_and_input_bit_for_bit(placement, streamed):
    """Drawn on the CPU into pinned memory and copied without waiting (model._moved), a seed's
    weights, input and target on cuda are the CPU's, bit for bit, held or streamed (each block
    drawn ahead of the device)."""
    s = small(placement=placement, depth=4, d_model=64)
    cpu, cpu_draw = build(s, [0, 1], streamed=streamed)
    gpu, gpu_draw = build(dataclasses.replace(s, device="cuda"), [0, 1], streamed=streamed)
    for want, got in zip(cpu.blocks, gpu.blocks, strict=True):
        assert want.keys() == got.keys()
        assert all(got[k].is_cuda and torch.equal(got[k].cpu(), want[k]) for k in want)
    assert all(torch.equal(gpu.final[k].cpu(), v) for k, v in cpu.final.items())
    assert torch.equal(gpu_draw.x.cpu(), cpu_draw.x)
    assert torch.equal(gpu_draw.target.cpu(), cpu_draw.target)


def test_a_probe_of_an_undeclared_metric_is_an_error():
    with pytest.raises(ValueError, match="metric 'grad_rato', which no @probe or @measures"):
        Probe("grad_rato", "block", [1], torch.zeros(1, 1))
    with pytest.raises(ValueError, match="metric 'loss' is declared twice"):
        measures(METRICS["loss"])(print)
    assert set(GRADIENT_METRICS) == {"grad_norm", "grad_ratio"}
    assert set(UPDATE_METRICS) == {"model_update", "update_stream"}


@pytest.mark.parametrize("placement", ["resi_dual", "pre", "post", "peri", "dyt"])
def test_head_omega_reads_the_head_input_of_the_stack_cut_after_each_block(placement):
    """head_omega_abs at block k is the mean |LN(y_k) − LN(y_{k−1})|, y_k the head input of the
    stack of the same seed's first k blocks run on the same input (a shorter forward pass, not
    the trace it is read from); for Pre-LN (final LN at init) it is omega_abs to LN's eps."""
    s = small(placement=placement, depth=4, grad_of="none")
    params, draw = build(s, [0, 1])
    with torch.no_grad():
        _, trace = forward(params, draw.x, s)
        probes = {p.metric: p for p in run_probes(params, trace, s)}
        heads = [forward(StackParams(params.blocks[:k], params.final), draw.x, s)[0]
                 for k in range(s.depth + 1)]
    normed = [nn.functional.layer_norm(y, y.shape[-1:]) for y in heads]
    for k in range(1, s.depth + 1):
        expected = (normed[k] - normed[k - 1]).abs().mean(dim=(1, 2))
        torch.testing.assert_close(probes["head_omega_abs"].values[:, k - 1], expected,
                                   rtol=1e-12, atol=1e-14)
    if placement == "pre":
        torch.testing.assert_close(probes["head_omega_abs"].values,
                                   probes["omega_abs"].values, rtol=1e-4, atol=0)
