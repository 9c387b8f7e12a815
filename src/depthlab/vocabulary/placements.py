"""The placements: where the LayerNorms and the residual path sit in a block, one registry entry
each (PLACEMENTS, in plotting order).

A placement's block is written against the sublayer operations `op` that depthlab.core.model
hands it, so this module needs no torch: the config schema, validation, tables and figures read
the same entries as the model does.

    op.attn(x), op.mlp(x)     the attention / feed-forward branch of x (recorded in the trace)
    op.norm(name, x)          the block's norm `name` (one of the placement's `norms`, of its
                              norm kind) of x
    op.gate(name, branch)     the block's learnable scalar `name` (one of its `gates`) times branch
    op.add(x, branch, which)  c * x + scale * branch; c = the placement's own skip scale (`skip`)
                              or else the skip_scale setting; scale = the branch scale of
                              sublayer `which` ("attn" or "mlp") where `branch_scales`, else 1
    op.between(h)             marks h as the stream between the two sublayers (trace.mid)
    op.accumulate(branch)     adds branch to the second stream (placements with `carry`)
    op.layer                  the block's index l = 1..L
    op.depth                  the number of blocks L

A placement names its norm kind (depthlab.core.norms: LayerNorm, RMSNorm, DyT) and, where it
has one, its own init kind (depthlab.vocabulary.inits); its colour is the registry's i-th
(`color`). To add a placement: write its block function here, add an entry to PLACEMENTS, and
test it (docs/ARCHITECTURE.md, "Add a placement").
"""

from __future__ import annotations

import colorsys
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass


def post_ln(x, op):
    """Post-LN, the original Transformer (Vaswani et al. 2017, sec. 3.1 of "Attention is all you
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


def deepnorm(x, op):
    """DeepNorm (Wang et al. 2022, "DeepNet: Scaling Transformers to 1,000 Layers", Fig. 2
    pseudocode): Post-LN with the skip path scaled, h = LN1(a x + Attn(x));
    x' = LN2(a h + FFN(h)), a = (2N)^(1/4) for N blocks (op.add's skip), no final LN
    (torchscale builds none under deepnorm). Init (Fig. 2's deepnorm_init; the init kind
    `deepnorm`): W_V, W_O, W_1, W_2 ~ xavier_normal_(gain b = (8N)^(-1/4)), W_Q, W_K
    xavier_normal_(gain 1). a and b are the encoder-only row of the paper's table (its
    decoder-only row with M = N is the same). The paper gives no bias init: zero here.
    torchscale (microsoft/torchscale, encoder.py) differs: it keeps nn.Linear's default init
    and divides fc1, fc2, out_proj and v_proj, biases included, by (8N)^(1/4); the paper's form
    is used here, torchscale's is deepnorm_torchscale."""
    return post_ln(x, op)


def resi_dual(x, op):
    """ResiDual (Xie et al. 2023, "ResiDual: Transformer with Dual Residual Connections",
    arXiv 2304.14802), as microsoft/ResiDual's code (resi_dual_layers.py): per sublayer F,
    x_d <- x_d + F(x_a) and x_a <- LN(x_a + F(x_a)); both start at the input; head input
    y = x_a + LN_final(x_d). trace.stream is x_a (the stream the blocks read), trace.carry x_d;
    skip_scale multiplies x_a's skip path only. The paper's own equations could not be read;
    the form follows the official code (its output scale and input scale at their default 1).
    Paper init (`init: paper`, FAIRSEQ_INIT): the official layers are fairseq 0.12.2's
    (environment.yaml) TransformerEncoderLayerBase, so fairseq's `fairseq` init with biases:
    fairseq/modules/multihead_attention.py:167-185 (reset_parameters) and
    fairseq/modules/transformer_layer.py:185-192 (fc1, fc2 plain nn.Linear); ResiDual's own
    files re-draw nothing."""
    a = op.attn(x)
    op.accumulate(a)
    h = op.between(op.norm("ln1", op.add(x, a, "attn")))
    m = op.mlp(h)
    op.accumulate(m)
    return op.norm("ln2", op.add(h, m, "mlp"))


def sandwich_ln(x, op):
    """Sandwich-LN (Ding et al. 2021, "CogView", arXiv 2105.13290), as THUDM/CogView's code
    (mpu/sparse_transformer.py, scale_normalization): h = x + LN3(Attn(LN1(x)));
    x' = h + LN4(FFN(LN2(h))), and a final LN before the head. CogView's PB-relax (dividing the
    LN input by its max) changes LN(x) only through eps and is left out. Section and equation
    numbers of the paper could not be confirmed. Paper init (`init: paper`): CogView's Megatron
    code, depthlab's `gpt2` with biases: every weight N(0, 0.02^2) and the attention output
    `dense` and `dense_4h_to_h` at 0.02/sqrt(2 num_layers) (mpu/sparse_transformer.py:344-358
    unscaled_/scaled_init_method, :407-408 init_method_std=0.02,
    use_scaled_init_for_output_weights=True, :447), every bias zero (mpu/layers.py:229, 302)."""
    h = op.between(op.add(x, op.norm("ln3", op.attn(op.norm("ln1", x))), "attn"))
    return op.add(h, op.norm("ln4", op.mlp(op.norm("ln2", h))), "mlp")


def peri_ln(x, op):
    """Peri-LN (Kim et al. 2025, "Peri-LN: Revisiting Normalization Layer in the Transformer
    Architecture", arXiv 2502.02732, eq. 3 as quoted in notes on it; the PDF could not be read):
    y = x + Norm(Module(Norm(x))) for both sublayers, the block of Sandwich-LN, with the final
    normalisation and the paper's (optional) initial embedding normalisation y_0 = Norm(x_embed),
    here an LN of the input before block 1 (the registry entry's `embed_norm`, what tells it
    from Sandwich-LN). Whether its main experiments use the embedding LN is not confirmed.
    No paper init (`init: paper` is rejected): there is no official code (the paper trains
    with Megatron-LM) and the paper's stated init could not be read."""
    return sandwich_ln(x, op)


def rezero(x, op):
    """ReZero (Bachlechner et al. 2020, "ReZero is All You Need", arXiv 2003.04887, eq. 1):
    x_{i+1} = x_i + alpha F(x_i), alpha = 0 at init, no LayerNorm anywhere and no final LN; one
    alpha per layer shared by attention and FFN, as the official code (majumderb/rezero,
    rztx.py, `resweight`): h = x + alpha Attn(x); x' = h + alpha FFN(h).

    At init the stack is the identity, so the probes read: stream constant (stream_var,
    stream_rms, token_corr of the input at every layer), delta, block_var, branch_ratio and
    omega 0, block_stream_corr 0 (a zero block output is taken as uncorrelated), branch_var the
    raw branches' variance (nonzero); the block gradient (grad_of params) is alpha's alone, the
    weight gradients being exactly zero."""
    h = op.between(op.add(x, op.gate("alpha", op.attn(x)), "attn"))
    return op.add(h, op.gate("alpha", op.mlp(h)), "mlp")


def lns(x, op):
    """LayerNorm Scaling (Sun et al. 2025, "The Curse of Depth in Large Language Models",
    arXiv 2502.05795, its "LayerNorm Scaling" section): Pre-LN with both LN outputs of block l
    multiplied by 1/sqrt(l), l = 1..L: h = x + Attn(LN1(x)/sqrt(l)); x' = h + FFN(LN2(h)/sqrt(l));
    final LN unscaled. As the official code (lmsdss/LayerNorm-Scaling, modeling_llama.py:
    scale_factor = 1 / math.sqrt(layer_index + 1) on both norms); the paper's section and
    equation numbers could not be confirmed. Paper init (`init: paper`): depthlab's `normal`
    without biases, as the official code: peft_pretraining/modeling_llama.py:857-878
    (_init_weights: every nn.Linear weight N(0, initializer_range^2), initializer_range 0.02
    in configs/llama_*.json; the scaled std only for NORM_TYPE scale_pre / scale_post_pre),
    every q, k, v, o and MLP map bias=False (:154-156, :185-188); its README recommends this
    plain normal init over a scaled one for LNS."""
    c = 1 / math.sqrt(op.layer)
    h = op.between(op.add(x, op.attn(op.norm("ln1", x) * c), "attn"))
    return op.add(h, op.mlp(op.norm("ln2", h) * c), "mlp")


def deepnorm_torchscale(x, op):
    """DeepNorm as microsoft/torchscale initialises it (torchscale 0.3.0, architecture/encoder.py,
    Encoder.__init__ under deepnorm, encoder only): DeepNorm's block and skip weight
    a = (2N)^(1/4), every linear map with PyTorch's default nn.Linear init (its
    MultiheadAttention's reset_parameters is not called when it is built), then the weights
    and biases of v_proj, out_proj, fc1 and fc2 divided by (8N)^(1/4) (the init kind
    `torchscale`); q_proj, k_proj unchanged."""
    return post_ln(x, op)


def deepnorm_alpha(x, op):
    """DeepNorm's skip weight alone (the ablation of Wang et al. 2022's two changes): Post-LN
    with h = LN1(a x + Attn(x)), a = (2N)^(1/4) as DeepNorm, drawn with the init setting
    (no beta)."""
    return post_ln(x, op)


def deepnorm_beta(x, op):
    """DeepNorm's init alone: Post-LN (skip weight 1) with DeepNorm's xavier_normal_ init,
    gain b = (8N)^(-1/4) on W_V, W_O, W_1, W_2 and 1 on W_Q, W_K, zero biases."""
    return post_ln(x, op)


def branch_scaling(x, op):
    """1/sqrt(L) branch scaling, depth-muP's block multiplier (Yang et al. 2024, "Tensor
    Programs VI: Feature Learning in Infinite-Depth Neural Networks", and Bordelon et al. 2024,
    "Depthwise Hyperparameter Transfer in Residual Networks"): Pre-LN with each branch output
    multiplied by 1/sqrt(L) before it joins the stream: h = x + Attn(LN1(x))/sqrt(L);
    x' = h + FFN(LN2(h))/sqrt(L). Not depth-muP itself: its learning-rate rule (Adam's rate
    scaled with depth) is not applied, so the name is the multiplier's alone."""
    c = 1 / math.sqrt(op.depth)
    h = op.between(op.add(x, op.attn(op.norm("ln1", x)) * c, "attn"))
    return op.add(h, op.mlp(op.norm("ln2", h)) * c, "mlp")


MIX_LN_POST_SHARE = 0.25  # Mix-LN's alpha: the share of blocks, from the first, that are Post-LN


def mix_ln(x, op):
    """Mix-LN (Li et al. 2024, "Mix-LN: Unleashing the Power of Deeper Layers by Combining
    Pre-LN and Post-LN", arXiv 2412.13795): blocks l <= floor(alpha L) are Post-LN, the rest
    Pre-LN, alpha = 0.25 (the paper's choice), and a final LN. How the official code rounds
    alpha L could not be confirmed; floor here (at least one Post-LN block from L = 4).
    Paper init (`init: paper`): depthlab's `normal` without biases, as the official code
    (pixeli99/MixLN, peft_pretraining/modeling_llama.py:818-835 _init_weights: every nn.Linear
    weight N(0, 0.02^2), initializer_range 0.02 in configs/llama_*.json; bias=False at
    :154-156, :185-188)."""
    if op.layer <= math.floor(MIX_LN_POST_SHARE * op.depth):
        return post_ln(x, op)
    return pre_ln(x, op)


def t_fixup(x, op):
    """T-Fixup (Huang et al. 2020, "Improving Transformer Optimization Through Better
    Initialization", ICML, its encoder rule): no LayerNorm, x' = x + F(x) per sublayer, every
    weight xavier-initialised and W_V, W_O, W_1, W_2 scaled by 0.67 N^(-1/4) (the init kind
    `t_fixup`), zero biases. Xavier normal here (the same variance as the paper's
    xavier uniform); the input embedding rule does not apply (the input is N(0, 1))."""
    h = op.between(op.add(x, op.attn(x), "attn"))
    return op.add(h, op.mlp(h), "mlp")


def dyt(x, op):
    """DyT (Zhu et al. 2025, "Transformers without Normalization", arXiv 2503.10622, eq. 1):
    Pre-LN with every LayerNorm, the final one included, replaced by the element-wise
    DyT(x) = gamma * tanh(alpha x) + beta, alpha one learnable scalar per norm (alpha_0 = 0.5,
    the paper's default outside LLMs; the norm kind `dyt`), gamma = 1, beta = 0
    at init. Paper init (`init: paper`): that of the runs alpha_0 = 0.5 belongs to, the ViTs
    of the official code (jiachenzhu/DyT main.py:293-304: timm's create_model, then
    convert_ln_to_dyt), timm's default ViT init (timm/models/vision_transformer.py,
    init_weights_vit_timm): every nn.Linear weight trunc_normal_(std=0.02) and bias zero,
    qkv with biases; depthlab's `normal` with biases (the truncation at +-2, 100 std, is
    left out). Its LLaMA runs (other_tasks/LLaMA, fms reset_parameters) draw the same std
    without biases (attn_bias = mlp_bias = False, fms_fsdp/models/llama.py:67-68)."""
    return pre_ln(x, op)


def normformer(x, op):
    """NormFormer (Shleifer, Weston & Ott 2021, "NormFormer: Improved Transformer Pretraining
    with Extra Normalization", arXiv 2110.09456, sec. 2), as fairseq's transformer layer with
    scale_attn, scale_heads and scale_fc (scale_resids off, its default): Pre-LN plus an LN on
    the attention output before it joins the stream (ln3), a learnable scale per attention head
    on its output before the output projection (1 at init: the registry entry's `head_scales`)
    and an LN on the FFN's hidden activation before W2 (`ffn_norm`):
    h = x + LN3(Attn(LN1(x))); x' = h + W2 LN_f(act(W1 LN2(h) + b1)) + b2; a final LN.
    Paper init (`init: paper`, FAIRSEQ_INIT): the official code is fairseq's (transformer_lm_gpt,
    examples/normformer/train_lm.sh), fairseq's `fairseq` init with biases (fairseq v0.12.2
    fairseq/modules/multihead_attention.py:167-185; transformer_layer.py:498-502 fc1, fc2
    plain nn.Linear in TransformerDecoderLayerBase)."""
    h = op.between(op.add(x, op.norm("ln3", op.attn(op.norm("ln1", x))), "attn"))
    return op.add(h, op.mlp(op.norm("ln2", h)), "mlp")


@dataclass(frozen=True)
class PaperInit:
    """The init of a placement's paper (its official code where it has one): what the setting
    `init: paper` draws for it (depthlab.vocabulary.settings resolves it to these two)."""

    init: str  # one of the init setting's concrete values (settings.INITS, not "paper")
    bias: bool  # whether its linear maps have biases (the bias setting)
    source: str  # where it is from, in a line (repository and file, or paper section)


@dataclass(frozen=True)
class Placement:
    """One placement and what the rest of the pipeline needs to know about it."""

    name: str  # the config value (settings.placement)
    label: str  # its name in tables and figures
    marker: str | tuple[int, int, int]  # its matplotlib marker in every figure (shape as well
    #                  as colour; filled: seaborn does not mix filled and line markers)
    family: str  # the panel it shares in faceted figures (FAMILIES)
    block: Callable  # block(x, op) -> the stream after the block (module docstring)
    residual: bool  # has a skip path: skip_scale applies (unless `skip`), branch-to-stream
    #                  ratios exist
    branch_scales: bool  # residual_scale and layerwise branch scales multiply its branches
    telescopes: bool  # x_l = c^2 x_{l-1} + both scaled branches: per-sublayer variance
    #                  increments, block outputs f_l = x_l - c^2 x_{l-1}, their correlations
    final_norm: bool  # final_norm 'auto': a LayerNorm between the last block and the head
    norm: str = "layernorm"  # its norm kind (depthlab.core.norms.NORM_KINDS): every norm of
    #                  its blocks, the final one, an input and an FFN norm
    norms: tuple[str, ...] = ("ln1", "ln2")  # the block's norms (as at init: their kind's)
    gates: tuple[str, ...] = ()  # the block's learnable scalars (one per seed), 0 at init
    skip: Callable[[int], float] | None = None  # its own skip scale from the depth N, which
    #                  replaces skip_scale (then fixed at 1); None: the skip_scale setting
    init: str | None = None  # its own init (an init kind of depthlab.vocabulary.inits), which
    #                  replaces the init setting; None: the init setting's
    carry: bool = False  # a second stream from the input (trace.carry) that the block adds to;
    #                  the head input is the stream plus the final LN (if any) of the carry
    embed_norm: bool = False  # a norm (embed_ln) on the input before block 1
    head_scales: bool = False  # a learnable scale per attention head on its output before
    #                  the output projection (parameter head_scale, 1 at init)
    ffn_norm: bool = False  # a norm (lnf) on the FFN's hidden activation
    paper_init: PaperInit | None = None  # its paper's init of the linear maps, drawn under
    #                  `init: paper`; None: its paper gives none we could confirm (a placement
    #                  with its own init, `own_init`, takes `init: paper` as torch_default)
    summary: str = ""  # its definition in a line (config/README.md's placement row)

    @property
    def own_init(self) -> bool:
        """Whether it draws its own init (its paper's or official code's), which replaces the
        init setting (then fixed at torch_default, which `init: paper` also resolves to)."""
        return self.init is not None


# the first colours of `color`, the i-th the i-th placement's: seaborn's "colorblind" palette
# (Okabe-Ito based) as hex, so that this module needs no seaborn, with six darker hues, a magenta
# and Tol's olive where its ten ran out, in the order the placements took them
LISTED = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4",
          "#949494", "#ece133", "#e7298a", "#7f2704", "#023858", "#00441b", "#54278f",
          "#b2182b", "#56b4e9", "#252525", "#999933")


# the colours `color` draws from after LISTED: 48 hues by 5 lightnesses at one saturation
_CANDIDATES = tuple(
    "#" + "".join(f"{round(255 * c):02x}" for c in colorsys.hls_to_rgb(h / 48, light, 0.7))
    for light in (0.45, 0.3, 0.6, 0.38, 0.52) for h in range(48))


def _rgb(hex_color: str) -> tuple[int, int, int]:
    return tuple(int(hex_color[k:k + 2], 16) for k in (1, 3, 5))


@functools.cache
def _palette() -> tuple[str, ...]:
    """LISTED, then, one at a time, the candidate farthest (RGB distance) from every colour
    taken, until none is left (farthest-point sampling: no new colour sits beside an old one)."""
    taken = list(LISTED)
    rest = [c for c in _CANDIDATES if c not in taken]
    nearest = [min(math.dist(_rgb(c), _rgb(t)) for t in taken) for c in rest]
    while rest:
        best = max(range(len(rest)), key=nearest.__getitem__)
        new = rest.pop(best)
        nearest.pop(best)
        nearest = [min(d, math.dist(_rgb(c), _rgb(new))) for c, d in zip(rest, nearest,
                                                                        strict=True)]
        taken.append(new)
    return tuple(taken)


def color(i: int) -> str:
    """The i-th colour of the figures (the i-th placement's in the registry, the rest free for
    other curves): LISTED's, then the farthest of 240 hues and lightnesses from all before it
    (distinct and apart, not checked for colour blindness); room for 258 colours."""
    return LISTED[i] if i < len(LISTED) else _palette()[i]

# the families of faceted figures: where the LayerNorm sits relative to the skip path
POST = "LN after the residual join"
PRE = "LN inside the branch"
OTHER = "no residual, or no LN"
FAMILIES = (POST, PRE, OTHER)


def _deepnorm_skip(n: int) -> float:
    return (2 * n) ** 0.25


# the paper inits (PaperInit): which of the init setting's drawings each paper's code uses
MEGATRON_INIT = PaperInit("gpt2", True, "THUDM/CogView mpu/sparse_transformer.py:344-358, "
                          ":407-408; mpu/layers.py:229, 302")
LLAMA_NORMAL = "N(0, 0.02^2) every nn.Linear, bias=False: peft_pretraining/modeling_llama.py"
# fairseq's MultiheadAttention.reset_parameters and plain nn.Linear fc1, fc2 (fairseq 0.12.2)
FAIRSEQ_INIT = PaperInit("fairseq", True, "facebookresearch/fairseq v0.12.2 "
                         "fairseq/modules/multihead_attention.py:167-185, transformer_layer.py")


PLACEMENTS: dict[str, Placement] = {p.name: p for p in (
    Placement("post", "Post-LN", "o", POST, post_ln, residual=True,
              branch_scales=False, telescopes=False, final_norm=False,
              summary="x=LN(x+f(x))"),
    Placement("pre", "Pre-LN", "s", PRE, pre_ln, residual=True, branch_scales=True,
              telescopes=True, final_norm=True,
              summary="x=x+f(LN(x))"),
    Placement("none", "no residual", "v", OTHER, no_residual, residual=False,
              branch_scales=False, telescopes=False, final_norm=False,
              summary="x=LN(f(x)), no residual"),
    # Post-LN's flags: the skip path is scaled by its alpha, the branches join unscaled, an LN
    # follows each join (no telescoping), no final LN (torchscale builds none under deepnorm)
    Placement("deepnorm", "DeepNorm", "^", POST, deepnorm, residual=True,
              branch_scales=False, telescopes=False, final_norm=False,
              skip=_deepnorm_skip, init="deepnorm",
              summary="x=LN(αx+f(x)) with DeepNet's α and β init"),
    # the stream x_a is Post-LN's (branches unscaled, an LN after each join); the final LN
    # normalises the carried sum x_d before it joins x_a
    Placement("resi_dual", "ResiDual", "D", POST, resi_dual, residual=True,
              branch_scales=False, telescopes=False, final_norm=True, carry=True,
              paper_init=FAIRSEQ_INIT,
              summary="a Post-LN stream plus an un-normalised one, joined at the output"),
    # Pre-LN's flags: the (normalised) branch outputs are added to an unnormalised stream
    Placement("sandwich", "Sandwich-LN", "P", PRE, sandwich_ln, residual=True,
              branch_scales=True, telescopes=True, final_norm=True,
              norms=("ln1", "ln2", "ln3", "ln4"), paper_init=MEGATRON_INIT,
              summary="x=x+LN(f(LN(x)))"),
    Placement("peri", "Peri-LN", "X", PRE, peri_ln, residual=True, branch_scales=True,
              telescopes=True, final_norm=True, norms=("ln1", "ln2", "ln3", "ln4"),
              embed_norm=True,
              summary="x=x+LN(f(LN(x))) with an LN on the input"),
    # x_l = c^2 x_{l-1} + alpha-gated branches (telescopes); alpha is its branch scale, so
    # residual_scale does not apply; no LN anywhere
    Placement("rezero", "ReZero", "*", OTHER, rezero, residual=True,
              branch_scales=False, telescopes=True, final_norm=False, norms=(),
              gates=("alpha",),
              summary="x=x+α_l f(x), α_l=0 at init, no LN"),
    # Pre-LN's flags (the 1/sqrt(l) sits inside the branch, before Attn / FFN)
    Placement("lns", "LN-Scaling", "<", PRE, lns, residual=True, branch_scales=True,
              telescopes=True, final_norm=True,
              paper_init=PaperInit("normal", False, "lmsdss/LayerNorm-Scaling " + LLAMA_NORMAL
                                   + ":857-878, 154-156, 185-188"),
              summary="Pre-LN with the LN outputs of block l scaled by 1/√l"),
    # DeepNorm's block with torchscale's init (Post-LN's flags)
    Placement("deepnorm_torchscale", "DeepNorm (torchscale init)", (6, 1, 0), POST,
              deepnorm_torchscale, residual=True, branch_scales=False, telescopes=False,
              final_norm=False, skip=_deepnorm_skip, init="torchscale",
              summary="DeepNorm with torchscale's init: the default draw, then v, o, W1, W2 "
                      "divided by (8N)^¼"),
    # DeepNorm's two changes apart (Post-LN's flags): its skip weight, its init
    Placement("deepnorm_alpha", "DeepNorm α only", "p", POST, deepnorm_alpha,
              residual=True, branch_scales=False, telescopes=False, final_norm=False,
              skip=_deepnorm_skip,
              summary="DeepNorm's α alone (init from `init`)"),
    Placement("deepnorm_beta", "DeepNorm β only", "h", POST, deepnorm_beta,
              residual=True, branch_scales=False, telescopes=False, final_norm=False,
              init="deepnorm",
              summary="Post-LN with DeepNorm's β init alone"),
    # Pre-LN's flags (the 1/sqrt(L) multiplies the branch output, as residual_scale does)
    Placement("branch_scaling", "1/√L branch scaling", "d", PRE, branch_scaling, residual=True,
              branch_scales=True, telescopes=True, final_norm=True,
              summary="Pre-LN with each branch times 1/√L"),
    # Post-LN blocks below, Pre-LN above: the stream does not telescope through the Post-LN part
    Placement("mix_ln", "Mix-LN", "8", PRE, mix_ln, residual=True,
              branch_scales=False, telescopes=False, final_norm=True,
              paper_init=PaperInit("normal", False, "pixeli99/MixLN " + LLAMA_NORMAL
                                   + ":818-835, 154-156, 185-188"),
              summary="Post-LN for the first ⌊L/4⌋ blocks, Pre-LN after"),
    # Pre-LN's flags, DyT for each LayerNorm
    Placement("dyt", "DyT", (4, 1, 0), PRE, dyt, residual=True, branch_scales=True,
              telescopes=True, final_norm=True, norm="dyt",
              paper_init=PaperInit("normal", True, "jiachenzhu/DyT main.py:293-304, timm's "
                                   "ViT init_weights_vit_timm: trunc_normal_(std=.02), zero "
                                   "biases"),
              summary="Pre-LN with every LN replaced by DyT, γ·tanh(αx)+β, α=0.5 at init"),
    # Pre-LN's flags, with an LN on the attention output, head scales and an LN in the FFN
    Placement("normformer", "NormFormer", ">", PRE, normformer, residual=True,
              branch_scales=True, telescopes=True, final_norm=True,
              norms=("ln1", "ln2", "ln3"), head_scales=True, ffn_norm=True,
              paper_init=FAIRSEQ_INIT,
              summary="x=x+LN(Attn_γ(LN(x))), heads scaled by γ_h (1 at init), an LN on the "
                      "FFN's hidden activation"),
    # ReZero's flags without gates: x_l = x_{l-1} + both branches, no LN anywhere
    Placement("t_fixup", "T-Fixup", "H", OTHER, t_fixup, residual=True,
              branch_scales=False, telescopes=True, final_norm=False, norms=(),
              init="t_fixup",
              summary="x=x+f(x), no LN, T-Fixup's scaled xavier init"),
)}
ORDER = tuple(PLACEMENTS)  # the plotting and table order
# named sets of placements a config's `placement:` axis may give instead of a list: drawn from
# the registry, so that a new placement joins every set it belongs to without a config edit
PLACEMENT_SETS: dict[str, Callable[[Placement], bool]] = {
    "all": lambda p: True,
    "weighted": lambda p: not p.gates,  # weight gradients nonzero at init (grad_of: weights)
    "common_init": lambda p: not p.own_init,  # takes the init setting
    "common_init_weighted": lambda p: not (p.own_init or p.gates),
    "own_init": lambda p: p.own_init,  # draws its paper's or official code's init
    "paper_init": lambda p: p.own_init or p.paper_init is not None,  # takes `init: paper`
}


def placement_set(name: str) -> list[str]:
    """The placements of the named set (PLACEMENT_SETS), in registry order."""
    keep = PLACEMENT_SETS[name]
    return [n for n, p in PLACEMENTS.items() if keep(p)]
LABELS = {name: p.label for name, p in PLACEMENTS.items()}
COLORS = {name: color(i) for i, name in enumerate(PLACEMENTS)}
MARKERS = {name: p.marker for name, p in PLACEMENTS.items()}
