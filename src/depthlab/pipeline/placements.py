"""The placements: where the LayerNorms and the residual path sit in a block, one registry entry
each (PLACEMENTS, in plotting order).

A placement's block is written against the sublayer operations `op` that depthlab.core.model
hands it (`op.attn`, `op.mlp`, `op.norm`, `op.add`, `op.between`), so this module needs no torch:
the config schema, validation, tables and figures read the same entries as the model does.

    op.attn(x), op.mlp(x)     the attention / feed-forward branch of x (recorded in the trace)
    op.norm(name, x)          the block's LayerNorm `name` ("ln1", "ln2") applied to x
    op.add(x, branch, which)  skip_scale * x + scale * branch; scale = the branch scale of
                              sublayer `which` ("attn" or "mlp") where `branch_scales`, else 1
    op.between(h)             marks h as the stream between the two sublayers (trace.mid)

To add a placement: write its block function here, add an entry to PLACEMENTS, and test it
(docs/ARCHITECTURE.md, "Add a placement").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def post_ln(x, op):
    """Post-LN, the original Transformer (Vaswani et al. 2017, sec. 5.4 of "Attention is all you
    need"): h = LN1(x + Attn(x)); x' = LN2(h + FFN(h)). Equals
    nn.TransformerEncoderLayer(norm_first=False) with the same weights (tested)."""
    h = op.between(op.norm("ln1", op.add(x, op.attn(x), "attn")))
    return op.norm("ln2", op.add(h, op.mlp(h), "mlp"))


def pre_ln(x, op):
    """Pre-LN (Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture",
    eq. of the Pre-LN Transformer): h = x + Attn(LN1(x)); x' = h + FFN(LN2(h)), and one final LN
    before the head. Equals nn.TransformerEncoderLayer(norm_first=True) (tested)."""
    h = op.between(op.add(x, op.attn(op.norm("ln1", x)), "attn"))
    return op.add(h, op.mlp(op.norm("ln2", h)), "mlp")


def no_residual(x, op):
    """No residual path, a LayerNorm after each sublayer (the stack96 note's third row):
    h = LN1(Attn(x)); x' = LN2(FFN(h))."""
    h = op.between(op.norm("ln1", op.attn(x)))
    return op.norm("ln2", op.mlp(h))


@dataclass(frozen=True)
class Placement:
    """One placement and what the rest of the pipeline needs to know about it."""

    name: str  # the config value (settings.placement)
    label: str  # its name in tables and figures
    color: str  # its matplotlib colour, the same in every figure
    block: Callable  # block(x, op) -> the stream after the block (module docstring)
    residual: bool  # has a skip path: skip_scale applies, branch-to-stream ratios exist
    branch_scales: bool  # residual_scale and layerwise branch scales multiply its branches
    telescopes: bool  # x_l = c^2 x_{l-1} + both scaled branches: per-sublayer variance
    #                  increments, block outputs f_l = x_l - c^2 x_{l-1}, their correlations
    final_norm: bool  # final_norm 'auto': a LayerNorm between the last block and the head


PLACEMENTS: dict[str, Placement] = {p.name: p for p in (
    Placement("post", "Post-LN", "tab:blue", post_ln, residual=True, branch_scales=False,
              telescopes=False, final_norm=False),
    Placement("pre", "Pre-LN", "tab:orange", pre_ln, residual=True, branch_scales=True,
              telescopes=True, final_norm=True),
    Placement("none", "no residual", "tab:green", no_residual, residual=False,
              branch_scales=False, telescopes=False, final_norm=False),
)}
ORDER = tuple(PLACEMENTS)  # the plotting and table order
LABELS = {name: p.label for name, p in PLACEMENTS.items()}
COLORS = {name: p.color for name, p in PLACEMENTS.items()}
