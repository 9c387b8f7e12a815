"""The plain way of doing stack96's two tables, the baseline of benchmarks/endtoend.py: a per-seed
Python loop over blocks built from nn.Linear and nn.LayerNorm, one process per table.

    python -m benchmarks.plain grad     # gradient ratio: 3 placements x 5 depths x 6 seeds
    python -m benchmarks.plain stream   # Pre-LN stream sd: L = 6, 24, 96 and output scales 3, 10

What a researcher would write without depthlab: the same settings (d = 128, 4 heads, 4x FFN,
PyTorch's default init, float64, 128 tokens, causal, MSE to N(0, 1) targets), each seed its own
model under torch.manual_seed(seed), and the medians printed.
"""

from __future__ import annotations

import statistics
import sys

import torch
import torch.nn.functional as F
from torch import nn

D, HEADS, TOKENS, SEEDS = 128, 4, 128, 6


class Block(nn.Module):
    """One block of the given placement, from nn.Linear and nn.LayerNorm."""

    def __init__(self, placement: str, out_scale: float = 1.0):
        super().__init__()
        self.placement = placement
        kw = {"dtype": torch.float64}  # drawn in float64, as depthlab draws (the same numbers)
        self.q, self.k, self.v, self.o = (nn.Linear(D, D, **kw) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(D, 4 * D, **kw), nn.Linear(4 * D, D, **kw)
        self.ln1, self.ln2 = nn.LayerNorm(D, **kw), nn.LayerNorm(D, **kw)
        with torch.no_grad():
            self.o.weight.mul_(out_scale)
            self.ff2.weight.mul_(out_scale)

    def attn(self, x):
        def heads(t):
            return t.view(1, TOKENS, HEADS, D // HEADS).transpose(1, 2)

        o = F.scaled_dot_product_attention(heads(self.q(x)), heads(self.k(x)), heads(self.v(x)),
                                           is_causal=True)
        return self.o(o.transpose(1, 2).reshape(1, TOKENS, D))

    def mlp(self, x):
        return self.ff2(F.relu(self.ff1(x)))

    def forward(self, x):
        if self.placement == "pre":
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        if self.placement == "post":
            x = self.ln1(x + self.attn(x))
            return self.ln2(x + self.mlp(x))
        return self.ln2(self.mlp(self.ln1(self.attn(x))))


def grad_ratio(placement: str, depth: int, seed: int) -> float:
    """First over last block gradient norm (all block parameters) of one seed's model."""
    torch.manual_seed(seed)
    blocks = nn.ModuleList(Block(placement) for _ in range(depth))
    final = nn.LayerNorm(D, dtype=torch.float64) if placement == "pre" else nn.Identity()
    x = torch.randn(1, TOKENS, D, dtype=torch.float64)
    target = torch.randn(1, TOKENS, D, dtype=torch.float64)
    h = x
    for block in blocks:
        h = block(h)
    ((final(h) - target) ** 2).mean().backward()
    norms = [torch.sqrt(sum(p.grad.pow(2).sum() for p in b.parameters())) for b in blocks]
    return float(norms[0] / norms[-1])


@torch.no_grad()
def stream_factor(depth: int, out_scale: float, seed: int) -> float:
    """sd of the Pre-LN stream after the last block over that after the first, one seed."""
    torch.manual_seed(seed)
    blocks = nn.ModuleList(Block("pre", out_scale) for _ in range(depth))
    h = torch.randn(1, TOKENS, D, dtype=torch.float64)
    sds = []
    for block in blocks:
        h = block(h)
        sds.append(float(h.std()))
    return sds[-1] / sds[0]


def main(table: str) -> None:
    if table == "grad":
        for placement in ("post", "pre", "none"):
            for depth in (6, 20, 24, 48, 96):
                ratios = [grad_ratio(placement, depth, s) for s in range(SEEDS)]
                print(placement, depth, statistics.median(ratios))
    else:
        for depth, scale in ((6, 1.0), (24, 1.0), (96, 1.0), (96, 3.0), (96, 10.0)):
            factors = [stream_factor(depth, scale, s) for s in range(SEEDS)]
            print("pre", depth, scale, statistics.median(factors))


if __name__ == "__main__":
    torch.set_num_threads(2)
    main(sys.argv[1])
