"""Every placement of the registry: shapes, what it is at init, and agreement with a
straightforward per-seed implementation written here with nn.Linear and nn.LayerNorm."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import planned
from torch import nn

import depthlab.core.model as model
import depthlab.core.norms as norms
from depthlab.core.measure import measure_cell
from depthlab.core.model import OWN_INIT_STREAM, build, forward, per_seed_loss
from depthlab.planner.cost import pass_plan
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import ConfigError, RunSettings

NAMES = list(PLACEMENTS)


def small(**kw) -> RunSettings:
    base = dict(d_model=16, heads=4, tokens=8, depth=3, seeds=2)
    return RunSettings.from_mapping({**base, **kw})


def perturb(params, s: RunSettings) -> None:
    """Non-trivial norms and gates, so that their use is compared too (ReZero's alpha != 0)."""
    gen = torch.Generator().manual_seed(99)
    gates = PLACEMENTS[s.placement].gates
    with torch.no_grad():
        for b in params.blocks:
            for name, t in b.items():
                if name.startswith("ln") or name in gates or name == "head_scale":
                    t.add_(0.3 * torch.randn(t.shape, generator=gen, dtype=t.dtype))
        for t in params.final.values():
            t.add_(0.3 * torch.randn(t.shape, generator=gen, dtype=t.dtype))


class Ref:
    """One seed's block `p` as plain modules: nn.Linear per map, nn.LayerNorm per norm."""

    def __init__(self, p: dict, seed: int, s: RunSettings):
        self.s = s
        self.lin = {n: self._linear(p[f"w{n}"][seed], p[f"b{n}"][seed] if f"b{n}" in p else None)
                    for n in "qkvo12"}
        self.ln = {norm: norm_module(p, norm, seed, s.placement)
                   for norm in {name.rsplit("_", 1)[0] for name in p if name.startswith("ln")}}
        self.alpha = p["alpha"][seed] if "alpha" in p else None
        self.head_scale = p["head_scale"][seed] if "head_scale" in p else None

    @staticmethod
    def _linear(w, b) -> nn.Linear:
        lin = nn.Linear(w.shape[1], w.shape[0], bias=b is not None, dtype=torch.float64)
        with torch.no_grad():
            lin.weight.copy_(w)
            if b is not None:
                lin.bias.copy_(b)
        return lin

    def attn(self, x):
        """Causal multi-head attention with explicit softmax(q k^T / sqrt(dh)) v."""
        s, (n, d) = self.s, x.shape
        h, t = s.heads, s.tokens

        def heads(y):
            return y.view(n // t, t, h, d // h).transpose(1, 2)

        q, k, v = (heads(self.lin[c](x)) for c in "qkv")
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)
        if s.causal:
            scores = scores.masked_fill(torch.ones(t, t).triu(1).bool(), -math.inf)
        o = scores.softmax(-1) @ v
        if self.head_scale is not None:  # NormFormer: each head's output times its scale
            o = o * self.head_scale.view(1, h, 1, 1)
        return self.lin["o"](o.transpose(1, 2).reshape(n, d))

    def mlp(self, x):
        hidden = torch.relu(self.lin["1"](x))
        if "lnf" in self.ln:  # NormFormer: an LN on the hidden activation
            hidden = self.ln["lnf"](hidden)
        return self.lin["2"](hidden)


# the parameters of a norm of each kind, by suffix: gain w, bias b, DyT's alpha a
NORM_SUFFIXES = {"layernorm": "wb", "rmsnorm": "w", "dyt": "wba"}


# each placement's norm by its paper, not by the registry: LayerNorm, but DyT's, which replaces
# every LayerNorm, the final one too, by gamma * tanh(alpha x) + beta (Zhu et al. 2025)
PAPER_NORMS = {"dyt": "dyt"}


def norm_module(p: dict, name: str, seed: int, placement: str):
    """One seed's norm `name` of parameters p, of the kind `placement`'s paper uses
    (PAPER_NORMS): DyT, gamma * tanh(alpha x) + beta; an nn.RMSNorm; else an nn.LayerNorm. The
    parameters must be that kind's (a placement built with another norm fails here)."""
    kind = PAPER_NORMS.get(placement, "layernorm")
    held = "".join(k for k in "wba" if f"{name}_{k}" in p)
    assert held == NORM_SUFFIXES[kind], (placement, name, kind, held)
    w = p[f"{name}_w"][seed]
    if kind == "dyt":
        alpha, b = p[f"{name}_a"][seed], p[f"{name}_b"][seed]
        return lambda x: w * torch.tanh(alpha * x) + b
    if kind == "rmsnorm":
        rms = nn.RMSNorm(w.shape[0], dtype=torch.float64)
        with torch.no_grad():
            rms.weight.copy_(w)
        return rms
    return ln_module(w, p[f"{name}_b"][seed])


def ln_module(w, b) -> nn.LayerNorm:
    norm = nn.LayerNorm(w.shape[0], dtype=torch.float64)
    with torch.no_grad():
        norm.weight.copy_(w)
        norm.bias.copy_(b)
    return norm


def ref_block(name: str, x, r: Ref, layer: int, s: RunSettings, carry):
    """Block `layer` (1..L) of placement `name` on one seed's stream x (N, d): (x', carry')."""
    c, a = s.skip_scale, s.residual_scale
    if name == "mix_ln":  # Post-LN for the first floor(L / 4) blocks, then Pre-LN
        name = "post" if layer <= s.depth // 4 else "pre"
    if name in ("post", "deepnorm", "deepnorm_torchscale", "deepnorm_alpha", "deepnorm_beta"):
        deepnorm_skip = ("deepnorm", "deepnorm_torchscale", "deepnorm_alpha")
        c = (2 * s.depth) ** 0.25 if name in deepnorm_skip else c
        h = r.ln["ln1"](c * x + r.attn(x))
        return r.ln["ln2"](c * h + r.mlp(h)), carry
    if name == "dyt":  # Pre-LN's block; its norms are DyT (Ref.ln)
        name = "pre"
    if name == "branch_scaling":  # Pre-LN, each branch times 1/sqrt(L)
        a = a / math.sqrt(s.depth)
        name = "pre"
    if name == "pre":
        h = c * x + a * r.attn(r.ln["ln1"](x))
        return c * h + a * r.mlp(r.ln["ln2"](h)), carry
    if name == "none":
        return r.ln["ln2"](r.mlp(r.ln["ln1"](r.attn(x)))), carry
    if name == "resi_dual":
        f = r.attn(x)
        carry, h = carry + f, r.ln["ln1"](c * x + f)
        f = r.mlp(h)
        return r.ln["ln2"](c * h + f), carry + f
    if name == "normformer":  # Pre-LN with an LN on the attention output (head scales, FFN LN:
        h = c * x + a * r.ln["ln3"](r.attn(r.ln["ln1"](x)))  # in Ref.attn, Ref.mlp)
        return c * h + a * r.mlp(r.ln["ln2"](h)), carry
    if name in ("sandwich", "peri"):
        h = c * x + a * r.ln["ln3"](r.attn(r.ln["ln1"](x)))
        return c * h + a * r.ln["ln4"](r.mlp(r.ln["ln2"](h))), carry
    if name == "rezero":
        h = c * x + r.alpha * r.attn(x)
        return c * h + r.alpha * r.mlp(h), carry
    if name == "t_fixup":
        h = c * x + r.attn(x)
        return c * h + r.mlp(h), carry
    assert name == "lns"
    h = c * x + a * r.attn(r.ln["ln1"](x) / math.sqrt(layer))
    return c * h + a * r.mlp(r.ln["ln2"](h) / math.sqrt(layer)), carry


def ref_forward(params, x, s: RunSettings, seed: int):
    """One seed's streams after each block and head input, by the papers' equations."""
    final = params.final
    h = x[seed].reshape(-1, s.d_model)
    if s.placement == "peri":  # its initial embedding normalisation
        h = ln_module(final["embed_ln_w"][seed], final["embed_ln_b"][seed])(h)
    streams, carry = [h], h
    for layer, p in enumerate(params.blocks, 1):
        h, carry = ref_block(s.placement, h, Ref(p, seed, s), layer, s, carry)
        streams.append(h)
    norm = norm_module(final, "ln", seed, s.placement)
    if s.placement == "resi_dual":
        return streams, h + norm(carry)
    return streams, norm(h) if s.uses_final_norm else h


def variants(name: str) -> list[dict]:
    """The default, non-causal, without biases, and skip / branch scales where the placement
    takes them; Mix-LN at a depth with Post-LN blocks."""
    p, out = PLACEMENTS[name], [{}, {"causal": False}, {"bias": False}]
    if name == "mix_ln":
        out = [{**o, "depth": 8} for o in out]
    extra = {}
    if p.residual and p.skip is None:
        extra["skip_scale"] = 0.9
    if p.branch_scales:
        extra["residual_scale"] = 0.7
    return out + ([extra] if extra else [])


CASES = [(n, v) for n in NAMES for v in variants(n)]


@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{sorted(v)}" for n, v in CASES])
def test_equals_per_seed_reference(name, options):
    s = small(placement=name, **options)
    params, draw = build(s, [0, 1])
    perturb(params, s)
    with torch.no_grad():
        y, trace = forward(params, draw.x, s)
        for seed in range(2):
            streams, head = ref_forward(params, draw.x, s, seed)
            for mine, ref in zip(trace.stream, streams, strict=True):
                torch.testing.assert_close(mine[seed], ref, rtol=1e-10, atol=1e-12)
            torch.testing.assert_close(y[seed], head, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_block_params(name):
    s = small(placement=name, batch=2)
    params, draw = build(s, [0, 1])
    with torch.no_grad():
        y, trace = forward(params, draw.x, s)
    n, p = s.batch * s.tokens, PLACEMENTS[name]
    assert y.shape == (2, n, s.d_model)
    assert len(trace.stream) == s.depth + 1
    assert len(trace.mid) == len(trace.attn) == len(trace.mlp) == s.depth
    assert len(trace.carry) == (s.depth + 1 if p.carry else 0)
    assert all(t.shape == (2, n, s.d_model) for t in trace.stream + trace.carry + trace.mid)
    norms = {f"{ln}_{k}" for ln in p.norms for k in NORM_SUFFIXES[p.norm]}
    own = {"head_scale"} if p.head_scales else set()
    own |= {f"lnf_{k}" for k in NORM_SUFFIXES[p.norm]} if p.ffn_norm else set()
    expect = {f"{k}{m}" for k in "wb" for m in "qkvo12"} | norms | set(p.gates) | own
    unbiased, _ = build(dataclasses.replace(s, bias=False), [0, 1])
    assert set(unbiased.blocks[0]) == expect - {f"b{m}" for m in "qkvo12"}
    for b in params.blocks:
        assert set(b) == expect
        assert all(b[g].shape == (2,) for g in p.gates)
        init = {"w": 1, "b": 0, "a": 0.5}  # DyT's alpha_0, the paper's default outside LLMs
        assert all(b[k].detach().eq(init[k[-1]]).all() for k in norms | own - {"head_scale"})
        if p.head_scales:  # NormFormer's head scales: one per head and seed, 1 at init
            assert b["head_scale"].shape == (2, s.heads) and b["head_scale"].eq(1).all()
        if p.ffn_norm:
            assert b["lnf_w"].shape == (2, s.ffn_mult * s.d_model)
    assert ("embed_ln_w" in params.final) == p.embed_norm


def test_rezero_is_the_identity_at_init_with_only_alpha_gradients():
    s = small(placement="rezero")
    params, draw = build(s, [0, 1])
    y, trace = forward(params, draw.x, s)
    x = draw.x.reshape(2, -1, s.d_model)
    assert torch.equal(y, x)
    assert all(torch.equal(t, x) for t in trace.stream)
    per_seed_loss(y, params, draw, s).sum().backward()
    for b in params.blocks:
        assert b["alpha"].grad.ne(0).all()
        for name, leaf in b.items():
            if name != "alpha":
                assert leaf.grad is None or not leaf.grad.any(), name


def test_rezero_probes_at_init():
    frame = measure_cell(*planned(small(placement="rezero", block_corr=True)))
    value = frame.set_index(["metric", "sublayer", "seed", "layer"])["value"]
    for metric in ("delta", "block_var", "branch_ratio", "omega_abs", "block_stream_corr",
                   "block_corr"):
        assert (value.loc[metric] == 0).all(), metric
    sd = frame[frame.metric == "stream_sd"].pivot(index="seed", columns="layer", values="value")
    assert (sd.sub(sd[0], axis=0) == 0).all().all()


def test_deepnorm_init_and_skip():
    s = small(placement="deepnorm", d_model=64, depth=4, seeds=4)
    params, draw = build(s, [0, 1, 2, 3])
    beta, alpha = (8 * s.depth) ** -0.25, (2 * s.depth) ** 0.25
    assert s.skip == alpha
    d, f = s.d_model, s.ffn_mult * s.d_model
    fans = {"wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d), "w1": (d, f), "w2": (f, d)}
    for name, (fan_in, fan_out) in fans.items():
        gain = 1.0 if name in ("wq", "wk") else beta
        got = torch.stack([b[name].detach().flatten(1).std(dim=1) for b in params.blocks])
        assert float(got.mean()) == pytest.approx(gain * math.sqrt(2 / (fan_in + fan_out)),
                                                  rel=0.02), name
    assert all(not b[f"b{n}"].detach().any() for b in params.blocks for n in "qkvo12")
    with torch.no_grad():
        _, trace = forward(params, draw.x, s)
        b = params.blocks[0]
        mid = norms.layer_norm(alpha * trace.stream[0] + trace.attn[0], b["ln1_w"], b["ln1_b"])
        torch.testing.assert_close(trace.mid[0], mid, rtol=0, atol=0)
    # the branch-to-stream ratio's skip path is alpha times the stream
    frame = measure_cell(s, pass_plan(s))
    got = frame[(frame.metric == "branch_ratio") & (frame.sublayer == "attn") & (frame.layer == 1)]
    rms = [t.pow(2).mean(dim=(1, 2)).sqrt() for t in (trace.attn[0], trace.stream[0])]
    np.testing.assert_allclose(got.sort_values("seed")["value"], rms[0] / (alpha * rms[1]),
                               rtol=1e-12)


def test_deepnorm_redraws_from_its_own_generator_and_pairs_with_the_others():
    """Per block: the xavier_normal_ re-draws of q, k, v, o, W1, W2 in that order from the
    seed's second generator (seed + OWN_INIT_STREAM); the seed's main generator draws what it
    draws for every other placement, so DeepNorm's input and target are Post-LN's."""
    s = small(placement="deepnorm", depth=2)
    params, draw = build(s, [7])
    own = torch.Generator().manual_seed(7 + OWN_INIT_STREAM)
    beta = (8 * s.depth) ** -0.25
    d, f = s.d_model, s.ffn_mult * s.d_model
    shapes = {"q": (d, d), "k": (d, d), "v": (d, d), "o": (d, d), "1": (f, d), "2": (d, f)}
    for b in params.blocks:
        for n, shape in shapes.items():
            w = torch.empty(shape, dtype=torch.float64)
            nn.init.xavier_normal_(w, gain=1.0 if n in "qk" else beta, generator=own)
            assert torch.equal(b[f"w{n}"][0], w), n
    _, post = build(dataclasses.replace(s, placement="post"), [7])
    assert torch.equal(draw.x, post.x) and torch.equal(draw.target, post.target)


@pytest.mark.parametrize("options, message", [
    ({"skip_scale": 2.0}, "skip_scale"),
    ({"attention": "torch_mha"}, "attention"),
    ({"init": "fan_in"}, "init"),
    ({"residual_scale": 0.5}, "residual_scale"),
])
def test_deepnorm_rejects_what_its_definition_fixes(options, message):
    with pytest.raises(ConfigError, match=message):
        small(placement="deepnorm", **options)


def test_rezero_rejects_weight_gradients_and_residual_scale():
    with pytest.raises(ConfigError, match="grad_of"):
        small(placement="rezero", grad_of="weights")
    with pytest.raises(ConfigError, match="residual_scale"):
        small(placement="rezero", residual_scale=0.5)


def recorded_inputs(monkeypatch) -> list:
    """Patch the model's branches to record their inputs (attn, mlp alternating)."""
    seen = []
    for name in ("attention", "mlp_hidden"):
        fn = getattr(model, name)

        def record(x, p, s, fn=fn):
            seen.append(x)
            return fn(x, p, s)
        monkeypatch.setattr(model, name, record)
    return seen


def per_token_sd(t):
    return t.std(dim=-1, correction=0)


def test_lns_scales_the_branch_input_by_one_over_sqrt_layer(monkeypatch):
    s = small(placement="lns", depth=4)
    params, draw = build(s, [0, 1])
    seen = recorded_inputs(monkeypatch)
    with torch.no_grad():
        forward(params, draw.x, s)
    assert len(seen) == 2 * s.depth
    for i, x in enumerate(seen):
        sd = per_token_sd(x)
        torch.testing.assert_close(sd, torch.full_like(sd, 1 / math.sqrt(i // 2 + 1)),
                                   rtol=1e-4, atol=0)


@pytest.mark.parametrize("name", ["sandwich", "peri"])
def test_sandwich_and_peri_add_unit_variance_outputs(name):
    s = small(placement=name, depth=4)
    params, draw = build(s, [0, 1])
    with torch.no_grad():
        y, trace = forward(params, draw.x, s)
    x = draw.x.reshape(2, -1, s.d_model)
    added = [m - h for m, h in zip(trace.mid, trace.stream[:-1], strict=True)]
    added += [h - m for h, m in zip(trace.stream[1:], trace.mid, strict=True)]
    for t, raw in zip(added, trace.attn + trace.mlp, strict=True):
        # LN's output: mean 0, per-token sd sqrt(v / (v + eps)) of the raw branch's variance v
        v = raw.var(dim=-1, correction=0)
        torch.testing.assert_close(per_token_sd(t), (v / (v + 1e-5)).sqrt(), rtol=1e-8, atol=0)
        torch.testing.assert_close(t.mean(-1), torch.zeros_like(v), rtol=0, atol=1e-12)
    first = trace.stream[0]
    if name == "peri":  # the input LN
        torch.testing.assert_close(per_token_sd(first), torch.ones(2, first.shape[1],
                                   dtype=first.dtype), rtol=1e-4, atol=0)
    else:
        assert torch.equal(first, x)


def test_resi_dual_streams_and_head():
    s = small(placement="resi_dual", depth=4)
    params, draw = build(s, [0, 1])
    with torch.no_grad():
        y, trace = forward(params, draw.x, s)
    x = draw.x.reshape(2, -1, s.d_model)
    assert torch.equal(trace.carry[0], x) and torch.equal(trace.stream[0], x)
    total = x + sum(trace.attn) + sum(trace.mlp)
    torch.testing.assert_close(trace.carry[-1], total, rtol=1e-12, atol=1e-12)
    head = trace.stream[-1] + F.layer_norm(trace.carry[-1], (s.d_model,))
    torch.testing.assert_close(y, head, rtol=1e-12, atol=1e-12)
    frame = measure_cell(s, pass_plan(s))
    carry = frame[frame.metric == "carry_var"].sort_values(["seed", "layer"])["value"]
    expect = torch.stack([t.var(dim=(1, 2)) for t in trace.carry], 1).flatten()
    np.testing.assert_allclose(carry.to_numpy(), expect.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("grad_of", ["params", "none"])
def test_measure_cell_is_finite(name, grad_of):
    """Finite at init, and the probes that apply are those the registry flags say."""
    frame = measure_cell(*planned(small(placement=name, grad_of=grad_of, block_corr=True)))
    assert np.isfinite(frame["value"].to_numpy()).all()
    metrics, p = set(frame.metric), PLACEMENTS[name]
    assert ("grad_norm" in metrics) == (grad_of == "params")
    assert ("delta" in metrics) == ("block_var" in metrics) == p.telescopes
    assert ("branch_ratio" in metrics) == p.residual
    assert ("carry_var" in metrics) == p.carry


@pytest.mark.parametrize("name", NAMES)
def test_block_gradient_norm_is_over_the_blocks_params(name):
    """grad_norm (grad_of params) = per seed, the norm of the gradient of all of a block's
    leaves (gates included), by plain autograd."""
    s = small(placement=name)
    frame = measure_cell(s, pass_plan(s))
    got = frame[frame.metric == "grad_norm"].sort_values(["seed", "layer"])["value"].to_numpy()
    params, draw = build(s, s.seed_list())
    y, _ = forward(params, draw.x, s)
    per_seed_loss(y, params, draw, s).sum().backward()
    expect = torch.stack([
        torch.stack([t.grad.flatten(1).pow(2).sum(1) if t.ndim > 1 else t.grad.pow(2)
                     for t in b.values() if t.grad is not None]).sum(0).sqrt()
        for b in params.blocks
    ], 1)
    np.testing.assert_allclose(got, expect.flatten().numpy(), rtol=1e-10)


def _weight_sd(params, name: str) -> float:
    return float(torch.stack([b[name].detach().flatten(1).std(dim=1) for b in params.blocks])
                 .mean())


@pytest.mark.parametrize("init", ["normal", "gpt2", "xavier"])
def test_common_inits_draw_their_std_over_the_paired_default_draw(init):
    """normal: every weight sd 0.02; gpt2: W_o and W_2 at 0.02/sqrt(2L); xavier: gain 1; all
    biases zero; drawn from the own-init generator, so the input and target are those of the
    default init (paired)."""
    s = small(placement="pre", d_model=64, depth=4, seeds=4, init=init)
    params, draw = build(s, [0, 1, 2, 3])
    d, f = s.d_model, s.ffn_mult * s.d_model
    fans = {"wq": (d, d), "wk": (d, d), "wv": (d, d), "wo": (d, d), "w1": (d, f), "w2": (f, d)}
    for name, (fan_in, fan_out) in fans.items():
        expect = {"normal": 0.02, "xavier": math.sqrt(2 / (fan_in + fan_out)),
                  "gpt2": 0.02 / math.sqrt(2 * s.depth) if name in ("wo", "w2") else 0.02}[init]
        assert _weight_sd(params, name) == pytest.approx(expect, rel=0.02), name
    assert all(not b[f"b{n}"].detach().any() for b in params.blocks for n in "qkvo12")
    _, default = build(dataclasses.replace(s, init="torch_default"), [0, 1, 2, 3])
    assert torch.equal(draw.x, default.x) and torch.equal(draw.target, default.target)


def test_bias_off_keeps_the_weights_and_equals_zero_biases():
    """bias false: the same weights, input and target as with biases, and the forward pass of
    the biased stack with its biases zeroed; no bias gets a gradient."""
    s = small(placement="post", bias=False)
    params, draw = build(s, [0, 1])
    biased, same = build(dataclasses.replace(s, bias=True), [0, 1])
    assert torch.equal(draw.x, same.x) and torch.equal(draw.target, same.target)
    with torch.no_grad():
        for b, ref in zip(params.blocks, biased.blocks, strict=True):
            assert all(torch.equal(b[k], ref[k]) for k in b)
            for n in "qkvo12":
                ref[f"b{n}"].zero_()
        y, _ = forward(params, draw.x, s)
        ref_y, _ = forward(biased, draw.x, s)
    torch.testing.assert_close(y, ref_y, rtol=0, atol=0)


def test_deepnorm_ablations_split_its_two_changes():
    """alpha only: DeepNorm's skip with the init setting (the default's weights); beta only:
    skip 1 with DeepNorm's own init (its weights)."""
    s = small(placement="deepnorm", depth=4)
    alpha = dataclasses.replace(s, placement="deepnorm_alpha")
    beta = dataclasses.replace(s, placement="deepnorm_beta")
    assert alpha.skip == s.skip == (2 * s.depth) ** 0.25 and beta.skip == 1.0
    own, _ = build(s, [0])
    default, _ = build(dataclasses.replace(s, placement="post"), [0])
    for ablation, weights in ((alpha, default), (beta, own)):
        params, _ = build(ablation, [0])
        assert all(torch.equal(b[k], w[k]) for b, w in zip(params.blocks, weights.blocks,
                                                           strict=True) for k in b)


def test_t_fixup_scales_its_xavier_init():
    s = small(placement="t_fixup", d_model=64, depth=4, seeds=4)
    params, _ = build(s, [0, 1, 2, 3])
    d, f = s.d_model, s.ffn_mult * s.d_model
    scale = 0.67 * s.depth ** -0.25
    for name, (fan_in, fan_out), gain in (("wq", (d, d), 1.0), ("wv", (d, d), scale),
                                          ("w1", (d, f), scale), ("w2", (f, d), scale)):
        expect = gain * math.sqrt(2 / (fan_in + fan_out))
        assert _weight_sd(params, name) == pytest.approx(expect, rel=0.02), name
    with pytest.raises(ConfigError, match="init"):
        small(placement="t_fixup", init="normal")
