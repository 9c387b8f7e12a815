"""The drawing operations the init kinds are written against (depthlab.vocabulary.inits), on one
seed's block parameters: what PyTorch's modules draw, from the seed's generator, and the
re-draws of an init, from the seed's own-init generator."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from depthlab.vocabulary.settings import RunSettings


def linear_init(weight: Tensor, bias: Tensor, g: torch.Generator) -> None:
    """`nn.Linear.reset_parameters` drawing from generator `g`: weight and bias
    ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform_ with a = sqrt(5))."""
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=g)
    bound = 1 / math.sqrt(weight.shape[1])
    nn.init.uniform_(bias, -bound, bound, generator=g)


@dataclass
class DrawOps:
    """One seed's block parameters `w` (contiguous; with torch_mha wq, wk, wv are views of the
    packed `in_proj`), its settings, the seed's generator `g` and its own-init generator."""

    w: dict[str, Tensor]
    s: RunSettings
    g: torch.Generator
    own: torch.Generator

    def default(self) -> None:
        """What building the block's PyTorch modules draws, in their order."""
        w, g = self.w, self.g
        if self.s.attention == "torch_mha":
            # nn.MultiheadAttention: out_proj is built first (an nn.Linear), then the packed
            # in-projection gets xavier_uniform_ and both biases zero
            linear_init(w["wo"], w["bo"], g)
            w["bo"].zero_()
            nn.init.xavier_uniform_(w["in_proj"], generator=g)
            for name in "qkv":
                w[f"b{name}"].zero_()
            linears = ("1", "2")
        else:
            linears = ("q", "k", "v", "o", "1", "2")
        for name in linears:
            linear_init(w[f"w{name}"], w[f"b{name}"], g)

    def standard_normal(self, name: str) -> None:
        self.w[name].normal_(generator=self.g)

    def normal(self, name: str, std: float) -> None:
        self.w[name].normal_(0.0, std, generator=self.own)

    def xavier_normal(self, name: str, gain: float) -> None:
        nn.init.xavier_normal_(self.w[name], gain=gain, generator=self.own)

    def xavier_uniform(self, name: str, gain: float) -> None:
        nn.init.xavier_uniform_(self.w[name], gain=gain, generator=self.own)

    def zero(self, name: str) -> None:
        self.w[name].zero_()

    def divide(self, name: str, by: float) -> None:
        self.w[name].div_(by)

    def fan_in(self, name: str) -> int:
        return self.w[name].shape[1]

    @property
    def depth(self) -> int:
        return self.s.depth
