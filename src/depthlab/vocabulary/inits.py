"""The init kinds: how one seed's block of six linear maps (q, k, v, o, W1, W2) and their biases
is drawn, one registry entry each (INIT_KINDS): the init setting's values and the placements'
own inits (a placement names its own by `Placement.init`).

A kind's draw is written against the drawing operations `op` that depthlab.core.draws hands it,
so this module needs no torch: the settings' choices, the tables' labels and the cost model read
the same entries as the engine does.

    op.default()               what building PyTorch's modules draws (nn.Linear per map, or
                               nn.MultiheadAttention's in-projection with attention torch_mha),
                               from the seed's generator
    op.standard_normal(name)   parameter `name` ~ N(0, 1), from the seed's generator
    op.normal(name, std)       re-draws `name` ~ N(0, std²) from the seed's own-init generator
    op.xavier_normal(name, gain), op.xavier_uniform(name, gain)
                               re-draws `name` by nn.init's, from the own-init generator
    op.zero(name), op.divide(name, by)
    op.fan_in(name)            the fan-in of weight `name` (its input width)
    op.depth                   the number of blocks N

Every kind but fan_in draws op.default() first, so the seed's generator draws the same for each
(the input and target that follow it are paired); a re-draw comes from a second generator.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

MAPS = ("q", "k", "v", "o", "1", "2")
WEIGHTS = tuple(f"w{m}" for m in MAPS)


def torch_default(op):
    """PyTorch's default: nn.Linear's U(±1/sqrt(fan_in)) weights and biases (kaiming_uniform_
    with a = sqrt(5)), or nn.MultiheadAttention's xavier_uniform_ in-projection and zero
    biases."""
    op.default()


def fan_in(op):
    """Every weight ~ N(0, 1/fan_in), biases zero: each linear map preserves variance."""
    for m in MAPS:
        op.standard_normal(f"w{m}")
        op.divide(f"w{m}", math.sqrt(op.fan_in(f"w{m}")))
        op.zero(f"b{m}")


def _zero_biases(op) -> None:
    for m in MAPS:
        op.zero(f"b{m}")


def normal(op):
    """GPT-2's and BERT's: every weight N(0, 0.02²), biases zero."""
    op.default()
    for name in WEIGHTS:
        op.normal(name, 0.02)
    _zero_biases(op)


def gpt2(op):
    """`normal` with W_o and W_2 (the maps into the residual) at std 0.02/sqrt(2N) (Radford et
    al. 2019, "Language Models are Unsupervised Multitask Learners", sec. 2.3: 1/sqrt(N) for
    2N residual layers, as nanoGPT's c_proj init)."""
    op.default()
    out = 0.02 / math.sqrt(2 * op.depth)
    for name in WEIGHTS:
        op.normal(name, out if name in ("wo", "w2") else 0.02)
    _zero_biases(op)


def _xavier_normal(op, gains: dict[str, float]) -> None:
    """The default draw, then each named weight re-drawn by xavier_normal_ with its gain, std =
    gain * sqrt(2 / (fan_in + fan_out)), in the given order; every bias zero."""
    op.default()
    for name, gain in gains.items():
        op.xavier_normal(name, gain)
    _zero_biases(op)


def xavier(op):
    """xavier_normal_ with gain 1 for every weight, biases zero (DeepNorm's family, beta = 1)."""
    _xavier_normal(op, dict.fromkeys(WEIGHTS, 1.0))


def fairseq(op):
    """fairseq's init of a transformer layer (facebookresearch/fairseq v0.12.2,
    fairseq/modules/multihead_attention.py:167-185, MultiheadAttention.reset_parameters with
    qkv_same_dim): W_k, W_v, W_q re-drawn by xavier_uniform_ with gain 1/sqrt(2), in that
    order, then W_o by xavier_uniform_ (gain 1) and b_o zero; b_q, b_k, b_v and fc1, fc2 (plain
    nn.Linear, fairseq/modules/transformer_layer.py) keep nn.Linear's default draw."""
    op.default()
    for name in ("wk", "wv", "wq"):
        op.xavier_uniform(name, 1 / math.sqrt(2))
    op.xavier_uniform("wo", 1.0)
    op.zero("bo")


def deepnorm(op):
    """DeepNorm's (Wang et al. 2022, "DeepNet", Fig. 2's deepnorm_init, encoder-only row):
    W_V, W_O, W_1, W_2 ~ xavier_normal_(gain beta = (8N)^(-1/4)), W_Q, W_K gain 1; the paper
    gives no bias init: zero."""
    beta = (8 * op.depth) ** -0.25
    _xavier_normal(op, {"wq": 1.0, "wk": 1.0, "wv": beta, "wo": beta, "w1": beta, "w2": beta})


def torchscale(op):
    """DeepNorm as microsoft/torchscale 0.3.0 draws it (architecture/encoder.py, under
    deepnorm): the default draw, then the weights and biases of v_proj, out_proj, fc1 and fc2
    divided by (8N)^(1/4), computed as it does."""
    op.default()
    scale = math.pow(8.0 * op.depth, 0.25)
    for m in ("v", "o", "1", "2"):
        op.divide(f"w{m}", scale)
        op.divide(f"b{m}", scale)


def t_fixup(op):
    """T-Fixup's (Huang et al. 2020, "Improving Transformer Optimization Through Better
    Initialization", encoder rule): xavier for every weight, W_V, W_O, W_1, W_2 scaled by
    0.67 N^(-1/4); xavier normal (the variance of the paper's xavier uniform), biases zero."""
    scale = 0.67 * op.depth ** -0.25
    _xavier_normal(op, {"wq": 1.0, "wk": 1.0, "wv": scale, "wo": scale, "w1": scale,
                        "w2": scale})


@dataclass(frozen=True)
class Init:
    """One init kind."""

    name: str  # the init setting's value, or what a placement's `init` names
    label: str  # its name in tables and figures
    draw: Callable  # draw(op): the module docstring
    redraws: bool = False  # re-draws from the own-init generator (twice the random numbers)
    own: bool = False  # a placement's own init only, not a value of the init setting


INIT_KINDS: dict[str, Init] = {i.name: i for i in (
    Init("torch_default", "PyTorch default", torch_default),
    Init("fan_in", "fan-in", fan_in),
    Init("normal", "N(0, 0.02²)", normal, redraws=True),
    Init("gpt2", "GPT-2 (W_o, W_2 / √(2L))", gpt2, redraws=True),
    Init("xavier", "xavier", xavier, redraws=True),
    Init("fairseq", "fairseq (xavier-uniform attention)", fairseq, redraws=True),
    Init("deepnorm", "DeepNorm's", deepnorm, redraws=True, own=True),
    Init("torchscale", "torchscale's DeepNorm", torchscale, own=True),
    Init("t_fixup", "T-Fixup's", t_fixup, redraws=True, own=True),
)}
