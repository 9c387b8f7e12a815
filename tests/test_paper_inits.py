"""`init: paper`, each fix paper's own init, and the `fairseq` init it needs: what the papers'
official code draws (as read there, restated here, not taken from the registry), the drawn
weights' spread against those formulas, the settings that reject it, and the inits that were
there before drawing exactly what they drew (recomputed here with torch.nn.init)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from torch import nn

from depthlab.core.model import OWN_INIT_STREAM, build
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import INITS, ConfigError, RunSettings

# (init, biases) of each paper's official code: CogView (Megatron) N(0, 0.02^2) with the
# attention output and dense_4h_to_h at 0.02/sqrt(2L), zero biases; LN-Scaling's and Mix-LN's
# LLaMA code N(0, 0.02^2) without biases; DyT's ViTs (timm) N(0, 0.02^2), zero biases;
# ResiDual's and NormFormer's fairseq layers fairseq's attention init over nn.Linear's FFN
PAPERS = {
    "sandwich": ("gpt2", True),
    "lns": ("normal", False),
    "mix_ln": ("normal", False),
    "dyt": ("normal", True),
    "resi_dual": ("fairseq", True),
    "normformer": ("fairseq", True),
}
NO_PAPER_INIT = [n for n, p in PLACEMENTS.items() if not p.own_init and n not in PAPERS]
OWN_INIT = [n for n, p in PLACEMENTS.items() if p.own_init]
MAPS = "qkvo12"


def small(**kw) -> RunSettings:
    base = dict(d_model=16, heads=4, tokens=8, depth=3, seeds=2)
    return RunSettings.from_mapping({**base, **kw})


def fans(s: RunSettings) -> dict[str, tuple[int, int]]:
    """(fan_in, fan_out) of each map."""
    d, f = s.d_model, s.ffn_mult * s.d_model
    return {"q": (d, d), "k": (d, d), "v": (d, d), "o": (d, d), "1": (d, f), "2": (f, d)}


def pooled(params, name: str) -> torch.Tensor:
    """Every seed's and block's entries of parameter `name`, flattened."""
    return torch.cat([b[name].detach().flatten() for b in params.blocks])


def xavier_std(gain: float, fan_in: int, fan_out: int) -> float:
    return gain * math.sqrt(2 / (fan_in + fan_out))


def expected_std(init: str, name: str, fan_in: int, fan_out: int, depth: int) -> float:
    """The std each paper's drawing gives weight w<name> / bias b<name>."""
    if name.startswith("b"):
        if init != "fairseq" or name == "bo":
            return 0.0
        return 1 / math.sqrt(3 * fan_in)  # nn.Linear's U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    if init == "normal":
        return 0.02
    if init == "gpt2":
        return 0.02 / math.sqrt(2 * depth) if name in ("wo", "w2") else 0.02
    # fairseq: xavier_uniform_ gain 1/sqrt(2) on q, k, v, 1 on o; fc1, fc2 nn.Linear's default
    if name in ("wq", "wk", "wv"):
        return xavier_std(1 / math.sqrt(2), fan_in, fan_out)
    if name == "wo":
        return xavier_std(1.0, fan_in, fan_out)
    return 1 / math.sqrt(3 * fan_in)


def test_the_registry_holds_each_papers_init():
    got = {n: (p.paper_init.init, p.paper_init.bias)
           for n, p in PLACEMENTS.items() if p.paper_init is not None}
    assert got == PAPERS
    for p in PLACEMENTS.values():
        if p.paper_init is not None:
            assert p.paper_init.init in INITS and p.paper_init.init != "paper"
            assert p.paper_init.source and "\n" not in p.paper_init.source
            assert not p.own_init  # one init per placement: its own or its paper's


@pytest.mark.parametrize("name", list(PAPERS))
def test_paper_init_draws_the_papers_spread(name):
    """The settings record the concrete init and bias; every weight's std is its paper's
    formula within sampling error; biases zero, nn.Linear's (fairseq: b_q, b_k, b_v, b_1, b_2)
    or absent (bias false)."""
    init, bias = PAPERS[name]
    s = small(placement=name, init="paper", d_model=64, depth=4, seeds=4)
    assert (s.init, s.bias) == (init, bias)
    assert s.as_columns()["init"] == init and s.as_columns()["bias"] == bias
    params, _ = build(s, s.seed_list())
    for n, (fan_in, fan_out) in fans(s).items():
        w = pooled(params, f"w{n}")
        expect = expected_std(init, f"w{n}", fan_in, fan_out, s.depth)
        assert float(w.std()) == pytest.approx(expect, rel=0.02), n
        assert abs(float(w.mean())) < 4 * expect / math.sqrt(w.numel()), n
        if not bias:
            assert all(f"b{n}" not in b for b in params.blocks)
            continue
        b = pooled(params, f"b{n}")
        expect = expected_std(init, f"b{n}", fan_in, fan_out, s.depth)
        if expect == 0:
            assert not b.any(), n
        else:  # 4 seeds x 4 blocks x fan_out entries: a few percent sampling error
            assert float(b.std()) == pytest.approx(expect, rel=0.1), n


def test_fairseq_draws_uniform_maps_within_their_bounds():
    """xavier_uniform_ and nn.Linear's kaiming_uniform_ are uniform: every entry within the
    bound gain * sqrt(6 / (fan_in + fan_out)) (resp. 1/sqrt(fan_in)), the largest close to it
    (a normal draw of the same std would exceed it)."""
    s = small(placement="normformer", init="fairseq", d_model=64, depth=2, seeds=2)
    params, _ = build(s, s.seed_list())
    for n, (fan_in, fan_out) in fans(s).items():
        if n in "qkv":
            bound = math.sqrt(6 / (fan_in + fan_out)) / math.sqrt(2)
        elif n == "o":
            bound = math.sqrt(6 / (fan_in + fan_out))
        else:
            bound = 1 / math.sqrt(fan_in)
        top = float(pooled(params, f"w{n}").abs().max())
        assert 0.99 * bound < top <= bound, n


@pytest.mark.parametrize("name", NO_PAPER_INIT)
def test_paper_init_is_rejected_where_there_is_none(name):
    with pytest.raises(ConfigError, match=rf"init='paper' does not apply to placement '{name}'"):
        small(placement=name, init="paper")


def test_paper_init_sets_the_bias_and_rejects_another():
    assert small(placement="lns", init="paper", bias=False).bias is False
    with pytest.raises(ConfigError, match=r"bias=True with init='paper' for placement 'lns'"):
        small(placement="lns", init="paper", bias=True)


@pytest.mark.parametrize("name", OWN_INIT)
def test_paper_init_of_a_placement_with_its_own_is_its_own(name):
    """DeepNorm's, T-Fixup's, torchscale's: `paper` is torch_default, the weights the same."""
    s = small(placement=name, init="paper")
    assert s.init == "torch_default"
    mine, _ = build(s, [3])
    own, _ = build(dataclasses.replace(s, init="torch_default"), [3])
    assert all(torch.equal(b[k], o[k]) for b, o in zip(mine.blocks, own.blocks, strict=True)
               for k in b)


def test_fairseq_needs_four_linear_maps():
    with pytest.raises(ConfigError, match="attention='torch_mha' with init='fairseq'"):
        small(placement="normformer", init="fairseq", attention="torch_mha")


def _by_hand(s: RunSettings, seed: int) -> tuple[list[dict[str, torch.Tensor]], torch.Tensor]:
    """Each block's weights and biases and the input of one seed, drawn here: nn.Linear's
    default (kaiming_uniform_ a = sqrt(5), bias U(+-1/sqrt(fan_in))) for q, k, v, o, W1, W2 in
    turn from torch.Generator().manual_seed(seed) (fan_in: N(0, 1/fan_in) weights, no bias
    draw), then the re-drawn inits from a generator seeded seed + 2^40, then the input."""
    g = torch.Generator().manual_seed(seed)
    own = torch.Generator().manual_seed(seed + 2**40)
    blocks = []
    for _ in range(s.depth):
        w: dict[str, torch.Tensor] = {}
        for n, (fan_in, fan_out) in fans(s).items():
            weight = torch.empty(fan_out, fan_in, dtype=torch.float64)
            b = torch.zeros(fan_out, dtype=torch.float64)
            if s.init == "fan_in":
                weight.normal_(generator=g).div_(math.sqrt(fan_in))
            else:
                nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=g)
                nn.init.uniform_(b, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in), generator=g)
            w[f"w{n}"], w[f"b{n}"] = weight, b
        if s.init in ("normal", "gpt2"):
            for n in MAPS:
                std = 0.02 / math.sqrt(2 * s.depth) if (s.init, n) in (("gpt2", "o"),
                                                                      ("gpt2", "2")) else 0.02
                nn.init.normal_(w[f"w{n}"], 0.0, std, generator=own)
                w[f"b{n}"].zero_()
        elif s.init == "xavier":
            for n in MAPS:
                nn.init.xavier_normal_(w[f"w{n}"], generator=own)
                w[f"b{n}"].zero_()
        elif s.init == "fairseq":  # fairseq's reset_parameters order: k, v, q, then out_proj
            for n in "kvq":
                nn.init.xavier_uniform_(w[f"w{n}"], gain=1 / math.sqrt(2), generator=own)
            nn.init.xavier_uniform_(w["wo"], generator=own)
            w["bo"].zero_()
        blocks.append(w)
    x = torch.empty(s.batch, s.tokens, s.d_model, dtype=torch.float64).normal_(generator=g)
    return blocks, x


@pytest.mark.parametrize("init", [i for i in INITS if i != "paper"])
@pytest.mark.parametrize("placement", ["pre", "lns"])
def test_each_init_draws_what_torch_init_draws_by_hand(init, placement):
    """The inits (those there before `fairseq` unchanged, same seed, same numbers): the block
    parameters and the input of seed 5 equal those drawn by hand in the documented order."""
    s = small(placement=placement, init=init, depth=2, seeds=1, seed_offset=5)
    params, draw = build(s, s.seed_list())
    blocks, x = _by_hand(s, 5)
    assert torch.equal(draw.x[0], x)
    for b, ref in zip(params.blocks, blocks, strict=True):
        for k, v in ref.items():
            assert torch.equal(b[k][0].detach(), v), (init, k)
    assert OWN_INIT_STREAM == 2**40
