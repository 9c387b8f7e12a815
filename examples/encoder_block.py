"""An own block for depthlab: PyTorch's Pre-LN encoder layer, with the points depthlab records.

A config names it as `block: "examples.encoder_block:make_block"` (run from the repository's
root); depthlab calls make_block(settings) once per block under each seed's generator.
"""

from torch import nn

from depthlab.core.own_block import ENCODER_LAYER_POINTS


def make_block(s) -> nn.Module:
    """One Pre-LN block of width s.d_model: attention, then a feed-forward of s.ffn_mult times
    the width, each behind a LayerNorm, dropout off."""
    layer = nn.TransformerEncoderLayer(
        s.d_model, s.heads, s.ffn_mult * s.d_model, dropout=0.0, activation=s.activation,
        batch_first=True, norm_first=True,
    )
    layer.depthlab_points = ENCODER_LAYER_POINTS  # attn, mlp, mid, branch inputs, FFN hidden
    return layer
