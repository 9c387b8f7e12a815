"""A seed-batched transformer stack: every weight carries a leading seed axis S.

All seeds of a cell run in one pass with batched matmuls (`torch.baddbmm`), so the per-seed
Python and dispatch overhead of a loop over small matrices is paid once. Seed s of the batch is
exactly the model that `torch.manual_seed(seed_s)` followed by building PyTorch modules gives.

Each block is its placement's block function (depthlab.vocabulary.placements) run on the
sublayer operations of `BlockOps`; the registry entry also says which norms and gates a block
has, whether a placement draws its own init, scales its skip path, carries a second stream or
normalises the input. Pre-LN and Post-LN equal `nn.TransformerEncoderLayer(norm_first=True/False)`
with the same weights and dropout 0 (tested).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from depthlab.core.prefetch import ahead
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import RunSettings

BLOCK_WEIGHTS = ("wq", "wk", "wv", "wo", "w1", "w2")


def torch_dtype(name: str) -> torch.dtype:
    return {"float64": torch.float64, "float32": torch.float32}[name]


class StreamedBlocks:
    """The blocks of a pass that does not hold them, each drawn when it is asked for: block l
    from every seed's generator states before it (`states[l][i]`: the default and the own-init
    generator of seed i), so the numbers are those of `build` without streaming, with one
    block's weights in memory instead of L (two on a GPU, where iterating draws the next block
    while the device runs this one). Iterating gives the blocks in order; `block(l)` draws
    block l (0-based) again (the backward pass that recomputes blocks,
    depthlab.core.recompute)."""

    def __init__(self, s: RunSettings, kw: dict, states: list[list[tuple[Tensor, Tensor]]]):
        self.s, self.kw, self.host, self.states = s, kw, _on_host(s), states
        self.prefetch = s.device == "cuda"  # draw the next block while the device runs this one
        self.shapes, self.drawn = _block_shapes(s), _block_shapes(s, drawn=True)

    def __len__(self) -> int:
        return self.s.depth

    def __iter__(self):
        drawn = ahead(range(self.s.depth), self.block, self.prefetch)
        return (block for _, block in drawn)

    def block(self, layer: int) -> dict[str, Tensor]:
        """Block `layer`'s parameters of every seed, (S, ...) each, on the settings' device."""
        s, seeds = self.s, self.states[layer]
        block = {k: _stacked(len(seeds), shape, self.host) for k, shape in self.shapes.items()}

        def fill(i: int) -> None:
            scratch = _scratch(s, self.drawn, self.kw)
            _draw_block(s, scratch, *(_generator(state) for state in seeds[i]))
            for k, v in block.items():
                _put(v[i], scratch[k])

        with ThreadPoolExecutor(min(len(seeds), torch.get_num_threads())) as pool:
            list(pool.map(fill, range(len(seeds))))
        return {k: _moved(v, s) for k, v in block.items()}


class ReleasedBlocks:
    """The blocks of one forward pass that keeps no graph, drawn at once (the numbers of
    `build`) and each given up as the pass moves past it, so the trace the pass records fills
    the memory the blocks leave: the pass peaks at the larger of the two, not their sum.
    Iterable once."""

    def __init__(self, blocks: list[dict[str, Tensor]]):
        self.blocks, self.depth = blocks, len(blocks)

    def __len__(self) -> int:
        return self.depth

    def __iter__(self):
        if len(self.blocks) < self.depth:
            raise RuntimeError("the blocks were given up by the pass that reached them")
        while self.blocks:
            yield self.blocks.pop(0)


def _generator(state: Tensor) -> torch.Generator:
    g = torch.Generator()
    g.set_state(state)
    return g


@dataclass
class StackParams:
    """Leaf tensors of a seed-batched stack: blocks[l][name] has shape (S, ...) (or blocks drawn
    as a pass reaches them: StreamedBlocks; or given up as one forward pass moves past them:
    ReleasedBlocks); final holds the leaves outside the blocks (final LN, head, an input LN:
    embed_ln_w/b)."""

    blocks: list[dict[str, Tensor]] | StreamedBlocks | ReleasedBlocks
    final: dict[str, Tensor]

    def leaves(self) -> list[Tensor]:
        return [t for b in self.blocks for t in b.values()] + list(self.final.values())


@dataclass
class Draw:
    """One seed-batch of inputs: x (S, B, T, d) and targets (S, B, T, d) or (S, B, T) ints."""

    x: Tensor
    target: Tensor
    rng: list[torch.Generator] = field(default_factory=list)  # each seed's stream after its draws


@dataclass
class Trace:
    """Named hook points of one forward pass, all of shape (S, N, d) with N = batch * tokens.

    stream[l] is the residual stream after block l (stream[0] is the input, after the
    placement's input LN if it has one), mid[l-1] the stream between the two sublayers of block
    l, attn[l-1]/mlp[l-1] the branch outputs of block l before any residual scale, gate or norm,
    carry[l] the second stream after block l of a placement that carries one (carry[0] the
    input; else empty), head_input the tensor the loss head reads.
    """

    stream: list[Tensor] = field(default_factory=list)
    mid: list[Tensor] = field(default_factory=list)
    attn: list[Tensor] = field(default_factory=list)
    mlp: list[Tensor] = field(default_factory=list)
    carry: list[Tensor] = field(default_factory=list)
    # per block, (S,) each: the sd of what the attention and FFN branches read, and the fraction
    # of the FFN's hidden units that are active (act(W1 x + b1) > 0)
    attn_in_sd: list[Tensor] = field(default_factory=list)
    mlp_in_sd: list[Tensor] = field(default_factory=list)
    ffn_active: list[Tensor] = field(default_factory=list)
    head_input: Tensor | None = None
    block_grad_sq: Tensor | None = None  # (S, L) squared gradient norm per block (probes.backward)


def _block_shapes(s: RunSettings, drawn: bool = False) -> dict[str, tuple[int, ...]]:
    """Shape of each block parameter of one seed, in PyTorch's module construction order, then
    the placement's norms and gates (a gate is one scalar). Without biases (setting `bias`
    false) the linear maps' biases are no parameters, but they are still `drawn`, so that the
    weights are those of the cell with biases."""
    placement = PLACEMENTS[s.placement]
    d, f = s.d_model, s.ffn_mult * s.d_model
    shapes: dict[str, tuple[int, ...]] = {}
    for name, (n_out, n_in) in {
        "q": (d, d), "k": (d, d), "v": (d, d), "o": (d, d), "1": (f, d), "2": (d, f)
    }.items():
        shapes[f"w{name}"] = (n_out, n_in)
        if s.bias or drawn:
            shapes[f"b{name}"] = (n_out,)
    for ln in placement.norms:
        shapes[f"{ln}_w"], shapes[f"{ln}_b"] = (d,), (d,)
        if placement.dyt_alpha0 is not None:
            shapes[f"{ln}_a"] = ()
    for gate in placement.gates:
        shapes[gate] = ()
    if placement.head_scales:
        shapes["head_scale"] = (s.heads,)
    if placement.ffn_norm:
        shapes["lnf_w"], shapes["lnf_b"] = (f,), (f,)
    return shapes


# the offset of the generator a placement's own init draws from (far from any seed in use)
OWN_INIT_STREAM = 2**40


def _linear_init(weight: Tensor, bias: Tensor, g: torch.Generator) -> None:
    """`nn.Linear.reset_parameters` drawing from generator `g`: weight and bias
    ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform_ with a = sqrt(5))."""
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=g)
    bound = 1 / math.sqrt(weight.shape[1])
    nn.init.uniform_(bias, -bound, bound, generator=g)


def _redraw(w: dict[str, Tensor], gains: dict[str, float], g: torch.Generator) -> None:
    """A placement's own init (its `init_gains`): each named weight re-drawn from `g` by
    xavier_normal_ with its gain, std = gain * sqrt(2 / (fan_in + fan_out)), in the given
    order; every bias zero (fills draw nothing)."""
    for name, gain in gains.items():
        nn.init.xavier_normal_(w[name], gain=gain, generator=g)
    for name in ("q", "k", "v", "o", "1", "2"):
        w[f"b{name}"].zero_()


def _fairseq_init(w: dict[str, Tensor], g: torch.Generator) -> None:
    """fairseq's init of a transformer layer (facebookresearch/fairseq v0.12.2,
    fairseq/modules/multihead_attention.py:167-185, MultiheadAttention.reset_parameters with
    qkv_same_dim): W_k, W_v, W_q re-drawn by xavier_uniform_ with gain 1/sqrt(2), in that
    order, then W_o by xavier_uniform_ (gain 1) and b_o zero; b_q, b_k, b_v and fc1, fc2
    (W_1, b_1, W_2, b_2: plain nn.Linear, fairseq/modules/transformer_layer.py) keep
    nn.Linear's default draw, here the paired default draw of the seed's main generator."""
    for name in ("wk", "wv", "wq"):
        nn.init.xavier_uniform_(w[name], gain=1 / math.sqrt(2), generator=g)
    nn.init.xavier_uniform_(w["wo"], generator=g)
    w["bo"].zero_()


def _common_init(s: RunSettings, w: dict[str, Tensor], g: torch.Generator) -> None:
    """The init settings drawn over PyTorch's default: `normal`, every weight N(0, 0.02^2)
    (GPT-2's and BERT's); `gpt2`, the same with W_o and W_2 (the maps into the residual) at std
    0.02/sqrt(2L) (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners",
    sec. 2.3, 1/sqrt(N) for N = 2L residual layers, as nanoGPT's c_proj init); `xavier`,
    xavier_normal_ with gain 1 (DeepNorm's family with beta = 1). All biases zero. `fairseq`:
    _fairseq_init (the attention maps re-drawn, the FFN and three biases kept)."""
    if s.init == "fairseq":
        _fairseq_init(w, g)
        return
    if s.init == "xavier":
        _redraw(w, dict.fromkeys(BLOCK_WEIGHTS, 1.0), g)
        return
    out_std = 0.02 / math.sqrt(2 * s.depth) if s.init == "gpt2" else 0.02
    for name in BLOCK_WEIGHTS:
        w[name].normal_(0.0, out_std if name in ("wo", "w2") else 0.02, generator=g)
    for name in ("q", "k", "v", "o", "1", "2"):
        w[f"b{name}"].zero_()


# drawn by _common_init from the own generator
REDRAWN_INITS = ("normal", "gpt2", "xavier", "fairseq")


def _draw_block(s: RunSettings, w: dict[str, Tensor], g: torch.Generator,
                own: torch.Generator) -> None:
    """Fill one seed's block parameters `w` (contiguous, one seed's drawn shapes) in place from
    `g`, drawing exactly what building PyTorch's modules would draw, in their order; then an
    init of REDRAWN_INITS or a placement's own init (DeepNorm's) re-draws from `own`, so that
    `g` draws the same for every placement and init (the input and target that follow are the
    same), or a placement's `init_divisors` divide the default draw (torchscale's DeepNorm);
    then out_scale, then norms 1/0 and gates 0."""
    placement = PLACEMENTS[s.placement]
    if s.init == "fan_in":
        # weights ~ N(0, 1/fan_in), biases zero: each linear map preserves variance
        for name in ("q", "k", "v", "o", "1", "2"):
            weight = w[f"w{name}"]
            weight.normal_(generator=g).div_(math.sqrt(weight.shape[1]))
            w[f"b{name}"].zero_()
    else:
        if s.attention == "torch_mha":
            # nn.MultiheadAttention: out_proj is built first (an nn.Linear), then the packed
            # in-projection gets xavier_uniform_ and both biases zero
            _linear_init(w["wo"], w["bo"], g)
            w["bo"].zero_()
            nn.init.xavier_uniform_(w["in_proj"], generator=g)
            for name in "qkv":
                w[f"b{name}"].zero_()
            linears = ("1", "2")
        else:
            linears = ("q", "k", "v", "o", "1", "2")
        for name in linears:
            _linear_init(w[f"w{name}"], w[f"b{name}"], g)
    if s.init in REDRAWN_INITS:
        _common_init(s, w, own)
    if placement.init_gains is not None:
        _redraw(w, placement.init_gains(s.depth), own)
    if placement.init_divisors is not None:
        for name, divisor in placement.init_divisors(s.depth).items():
            w[f"w{name}"].div_(divisor)
            w[f"b{name}"].div_(divisor)
    if s.out_scale != 1.0:
        w["wo"].mul_(s.out_scale)
        w["w2"].mul_(s.out_scale)
    for ln in placement.norms:
        w[f"{ln}_w"].fill_(1.0)
        w[f"{ln}_b"].zero_()
        if placement.dyt_alpha0 is not None:
            w[f"{ln}_a"].fill_(placement.dyt_alpha0)
    for gate in placement.gates:
        w[gate].zero_()
    if placement.head_scales:
        w["head_scale"].fill_(1.0)
    if placement.ffn_norm:
        w["lnf_w"].fill_(1.0)
        w["lnf_b"].zero_()


def _scratch(s: RunSettings, shapes: dict[str, tuple[int, ...]], kw: dict) -> dict[str, Tensor]:
    """One seed's block parameters, contiguous; with torch_mha wq, wk, wv are views of one
    packed (3d, d) in-projection, as in nn.MultiheadAttention."""
    packed = ("wq", "wk", "wv")
    scratch = {k: torch.empty(shape, **kw) for k, shape in shapes.items() if k not in packed}
    scratch["in_proj"] = torch.empty(3 * s.d_model, s.d_model, **kw)
    scratch.update(zip(packed, scratch["in_proj"].chunk(3), strict=True))
    return scratch


def _stacked(S: int, shape: tuple[int, ...], kw: dict) -> Tensor:
    """An uninitialised (S, *shape) tensor; a weight (S, out, in) is laid out as (S, in, out) in
    memory, so `w.transpose(1, 2)` in `linear` is contiguous and autograd hands back its
    gradient without a strided copy."""
    if len(shape) == 2:
        return torch.empty(S, shape[1], shape[0], **kw).transpose(1, 2)
    return torch.empty(S, *shape, **kw)


def _on_host(s: RunSettings) -> dict:
    """Allocation keywords of what is drawn on the CPU and then moved to `s.device`: its dtype,
    and page-locked (pinned) memory where the device is cuda, so that `_moved` is a DMA copy
    the drawing thread does not wait for."""
    kw = {"dtype": torch_dtype(s.dtype)}
    return {**kw, "pin_memory": True} if s.device == "cuda" else kw


def _moved(t: Tensor, s: RunSettings) -> Tensor:
    """`t` (allocated by `_on_host`) on `s.device`. To cuda the copy is queued on the thread's
    current stream, the device's default one for every thread, so it runs before any kernel
    that reads the result, and returns at once; PyTorch's pinned-memory allocator keeps `t`'s
    block from reuse until the copy is done. `t` is drawn into pinned memory, not pinned after
    (`pin_memory()` is a second copy: PyTorch's tutorial "A guide on good usage of non_blocking
    and pin_memory()")."""
    return t.to(s.device, non_blocking=s.device == "cuda")


def _put(slot: Tensor, drawn: Tensor) -> None:
    """Copy one seed's drawn parameter into its slice of the stacked tensor (`_stacked`): a
    weight's slice is the transpose of a contiguous (in, out) block, so the copy is made as
    one transposed pair, which PyTorch copies in cache-sized tiles (4x faster for W_2 at
    d = 128 than copying into the strided slice element by element; the same numbers)."""
    if slot.dim() == 2:
        slot.t().copy_(drawn.t())
    else:
        slot.copy_(drawn)


def build(s: RunSettings, seeds: list[int], streamed: bool = False
          ) -> tuple[StackParams, Draw]:
    """Weights, input and target for each seed, from the seed's own generator
    (`torch.Generator().manual_seed(seed)`, the stream `torch.manual_seed(seed)` starts): the
    blocks as PyTorch's modules draw them, the loss head, then x, then the target. An init of
    REDRAWN_INITS or a placement's own init (DeepNorm's) re-draws the weights from a second
    generator, `manual_seed(seed + OWN_INIT_STREAM)`, so every placement and init draws the
    same input and target, and the same weights where the init is the same: rows are paired.

    Each parameter is allocated once with its seed axis; the seeds are filled in parallel, on
    as many threads as torch's intra-op thread count (each writes its own slices, so the numbers
    do not depend on the thread count). Everything is drawn on the CPU (so a seed gives the same
    numbers on every device), then moved. `Draw.rng` holds each seed's generator after its
    draws. `streamed`: the blocks are StreamedBlocks, drawn again when
    a pass asks for them; here they are drawn only to record each block's generator states and
    to advance the generators to the head and input, which follow them.
    """
    kw, host = {"dtype": torch_dtype(s.dtype)}, _on_host(s)
    d, S = s.d_model, len(seeds)
    shapes = _block_shapes(s)
    blocks = [] if streamed else [{k: _stacked(S, shape, host) for k, shape in shapes.items()}
                                  for _ in range(s.depth)]
    final = {"ln_w": torch.ones(S, d, **host), "ln_b": torch.zeros(S, d, **host)}
    if PLACEMENTS[s.placement].dyt_alpha0 is not None:
        final["ln_a"] = torch.full((S,), PLACEMENTS[s.placement].dyt_alpha0, **host)
    if PLACEMENTS[s.placement].embed_norm:
        final["embed_ln_w"] = torch.ones(S, d, **host)
        final["embed_ln_b"] = torch.zeros(S, d, **host)
    if s.loss == "cross_entropy":
        final["head_w"] = torch.empty(S, s.head_classes, d, **host)
        final["head_b"] = torch.empty(S, s.head_classes, **host)
        target = torch.empty(S, s.batch, s.tokens, **{**host, "dtype": torch.int64})
    else:
        target = torch.empty(S, s.batch, s.tokens, d, **host)
    x = torch.empty(S, s.batch, s.tokens, d, **host)
    rng = [torch.Generator().manual_seed(seed) for seed in seeds]
    own = [torch.Generator().manual_seed(seed + OWN_INIT_STREAM) for seed in seeds]
    # streamed: each block's generator states, per seed (StreamedBlocks draws from them)
    states = [[None] * S for _ in range(s.depth)] if streamed else []

    def draw_seed(i: int) -> None:
        g, scratch = rng[i], _scratch(s, _block_shapes(s, drawn=True), kw)
        for layer in range(s.depth):
            if streamed:
                states[layer][i] = (g.get_state(), own[i].get_state())
            _draw_block(s, scratch, g, own[i])
            for k, v in ([] if streamed else blocks[layer].items()):
                _put(v[i], scratch[k])
        if s.loss == "cross_entropy":
            _linear_init(final["head_w"][i], final["head_b"][i], g)
        x[i].normal_(generator=g)
        if s.loss == "cross_entropy":
            target[i].random_(s.head_classes, generator=g)
        else:
            target[i].normal_(generator=g)

    with ThreadPoolExecutor(min(S, torch.get_num_threads())) as pool:
        list(pool.map(draw_seed, range(S)))

    def leaf(t: Tensor) -> Tensor:
        return _moved(t, s).requires_grad_(True)

    params = StackParams(
        StreamedBlocks(s, kw, states) if streamed
        else [{k: leaf(v) for k, v in b.items()} for b in blocks],
        {k: leaf(v) for k, v in final.items()},
    )
    return params, Draw(_moved(x, s), _moved(target, s), rng)


def linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """Seed-batched x @ w.T + b: x (S, N, in), w (S, out, in), b (S, out) or None (no bias)
    -> (S, N, out)."""
    if b is None:
        return torch.bmm(x, w.transpose(1, 2))
    return torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))


def layer_norm(x: Tensor, w: Tensor, b: Tensor, eps: float = 1e-5) -> Tensor:
    """LayerNorm over the last axis with a per-seed affine w, b of shape (S, d)."""
    return torch.addcmul(b.unsqueeze(1), F.layer_norm(x, x.shape[-1:], eps=eps), w.unsqueeze(1))


def dyt(x: Tensor, w: Tensor, b: Tensor, alpha: Tensor) -> Tensor:
    """DyT(x) = w * tanh(alpha x) + b element-wise (Zhu et al. 2025), per seed: alpha (S,),
    w and b (S, d)."""
    return torch.addcmul(b.unsqueeze(1), torch.tanh(alpha.view(-1, 1, 1) * x), w.unsqueeze(1))


def norm(x: Tensor, p: dict[str, Tensor], name: str) -> Tensor:
    """The norm `name` of parameters p (a block's, or the final ones with name 'ln'): DyT
    where p holds its alpha (`<name>_a`), else a LayerNorm."""
    if f"{name}_a" in p:
        return dyt(x, p[f"{name}_w"], p[f"{name}_b"], p[f"{name}_a"])
    return layer_norm(x, p[f"{name}_w"], p[f"{name}_b"])


def attention(x: Tensor, p: dict[str, Tensor], s: RunSettings) -> Tensor:
    """Multi-head self-attention of x (S, N, d), N = batch * tokens (biases where present)."""
    S, N, d = x.shape
    h, dh = s.heads, d // s.heads

    def heads(t: Tensor) -> Tensor:
        return t.view(S * s.batch, s.tokens, h, dh).transpose(1, 2)

    q, k, v = (heads(linear(x, p[f"w{n}"], p.get(f"b{n}"))) for n in "qkv")
    o = F.scaled_dot_product_attention(q, k, v, is_causal=s.causal)
    if "head_scale" in p:  # NormFormer's head scales: each head's output times its own
        o = (o.view(S, s.batch, h, s.tokens, dh) * p["head_scale"].view(S, 1, h, 1, 1)).view(
            S * s.batch, h, s.tokens, dh)
    o = o.transpose(1, 2).reshape(S, N, d)
    return linear(o, p["wo"], p.get("bo"))


def mlp_hidden(x: Tensor, p: dict[str, Tensor], s: RunSettings) -> Tensor:
    """The feed-forward branch's hidden activation act(W1 x + b1), (S, N, ffn width)."""
    act = F.relu_ if s.activation == "relu" else F.gelu  # in place: baddbmm's grad needs no output
    return act(linear(x, p["w1"], p.get("b1")))


def ffn_normed(hidden: Tensor, p: dict[str, Tensor]) -> Tensor:
    """The hidden activation through the FFN's own LayerNorm where the block has one
    (NormFormer's `lnf`), else unchanged."""
    return layer_norm(hidden, p["lnf_w"], p["lnf_b"]) if "lnf_w" in p else hidden


def _join(x: Tensor, skip: float, branch: Tensor, scale: float) -> Tensor:
    """skip * x + scale * branch, skipping multiplications by 1 (same numbers, less memory)."""
    x = x if skip == 1.0 else skip * x
    if scale == 1.0:
        return x + branch
    return torch.add(x, branch, alpha=scale)


@dataclass
class BlockOps:
    """The sublayer operations a placement's block function is written against (see
    depthlab.vocabulary.placements) for one block: its parameters p, the settings, the branch
    scales (a_attn, a_mlp), the trace that records mid, attn and mlp, the block's index
    (1..L) and the second stream it adds to (placements with `carry`, else None)."""

    p: dict[str, Tensor]
    s: RunSettings
    scale: tuple[float, float]
    trace: Trace
    layer: int
    carry: Tensor | None = None

    def attn(self, x: Tensor) -> Tensor:
        self.trace.attn_in_sd.append(x.detach().std(dim=(1, 2)))
        a = attention(x, self.p, self.s)
        self.trace.attn.append(a)
        return a

    def mlp(self, x: Tensor) -> Tensor:
        self.trace.mlp_in_sd.append(x.detach().std(dim=(1, 2)))
        hidden = mlp_hidden(x, self.p, self.s)
        self.trace.ffn_active.append((hidden.detach() > 0).mean(dim=(1, 2), dtype=x.dtype))
        m = linear(ffn_normed(hidden, self.p), self.p["w2"], self.p.get("b2"))
        self.trace.mlp.append(m)
        return m

    def norm(self, name: str, x: Tensor) -> Tensor:
        return norm(x, self.p, name)

    def gate(self, name: str, branch: Tensor) -> Tensor:
        """The block's scalar `name` (one per seed, shape (S,)) times branch."""
        return self.p[name].view(-1, 1, 1) * branch

    def add(self, x: Tensor, branch: Tensor, which: str) -> Tensor:
        """c * x + the branch times its scale (1 unless the placement scales branches);
        c = s.skip, skip_scale or the placement's own (DeepNorm's alpha)."""
        scaled = PLACEMENTS[self.s.placement].branch_scales
        scale = self.scale[0 if which == "attn" else 1] if scaled else 1.0
        return _join(x, self.s.skip, branch, scale)

    @property
    def depth(self) -> int:
        return self.s.depth

    def between(self, h: Tensor) -> Tensor:
        self.trace.mid.append(h)
        return h

    def accumulate(self, branch: Tensor) -> None:
        """Adds branch to the carried second stream (ResiDual's x_d)."""
        self.carry = self.carry + branch


def forward(
    params: StackParams,
    x: Tensor,
    s: RunSettings,
    branch_scales: list[tuple[float, float]] | None = None,
    removed: int | None = None,
) -> tuple[Tensor, Trace]:
    """Run the stack on x (S, B, T, d); returns the head input (S, N, d) and the trace.

    Each block is its placement's block function on BlockOps; branch_scales[l] = (alpha_attn,
    alpha_mlp) of block l+1 multiplies its branch outputs before they join the stream
    (placements with branch_scales), default residual_scale for both; s.skip multiplies the skip
    path of both sublayers. The head input is the last stream after the final LN (if any), or
    for a placement that carries a second stream, the last stream plus the final LN of it.
    `removed` = l (1-based) ablates block l: the streams pass it unchanged (the identity map), and
    every other block keeps its own index (placements whose constants depend on it).
    """
    placement = PLACEMENTS[s.placement]
    S = x.shape[0]
    h = x.reshape(S, -1, s.d_model)
    if placement.embed_norm:
        h = layer_norm(h, params.final["embed_ln_w"], params.final["embed_ln_b"])
    trace = Trace(stream=[h], carry=[h] if placement.carry else [])
    uniform = (s.residual_scale, s.residual_scale)
    for layer, p in enumerate(params.blocks):
        if layer + 1 == removed:
            trace.stream.append(h)
            if placement.carry:
                trace.carry.append(trace.carry[-1])
            continue
        scale = branch_scales[layer] if branch_scales is not None else uniform
        ops = BlockOps(p, s, scale, trace, layer + 1, trace.carry[-1] if placement.carry else None)
        h = placement.block(h, ops)
        trace.stream.append(h)
        if placement.carry:
            trace.carry.append(ops.carry)
    trace.head_input = head_input(h, trace.carry[-1] if placement.carry else None, params, s)
    return trace.head_input, trace


def head_input(h: Tensor, carry: Tensor | None, params: StackParams, s: RunSettings
               ) -> Tensor:
    """What the loss head reads from the last stream h: h after the final LN (if the settings
    use one), or for a placement that carries a second stream, h plus the final LN of it."""
    if carry is not None:
        return h + (_final_norm(carry, params) if s.uses_final_norm else carry)
    return _final_norm(h, params) if s.uses_final_norm else h


def _final_norm(h: Tensor, params: StackParams) -> Tensor:
    return norm(h, params.final, "ln")


def per_seed_loss(y: Tensor, params: StackParams, draw: Draw, s: RunSettings) -> Tensor:
    """The loss of each seed, shape (S,): MSE to N(0,1) targets, or cross-entropy of a linear
    head against uniform random classes."""
    S = y.shape[0]
    if s.loss == "mse":
        return ((y - draw.target.reshape(S, -1, s.d_model)) ** 2).mean(dim=(1, 2))
    logits = linear(y, params.final["head_w"], params.final["head_b"])
    flat = F.cross_entropy(
        logits.reshape(-1, s.head_classes), draw.target.reshape(-1), reduction="none"
    )
    return flat.view(S, -1).mean(dim=1)
