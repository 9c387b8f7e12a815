"""A seed-batched transformer stack: every weight carries a leading seed axis S.

All seeds of a cell run in one pass with batched matmuls (`torch.baddbmm`), so the per-seed
Python and dispatch overhead of a loop over small matrices is paid once. Seed s of the batch is
exactly the model that `torch.manual_seed(seed_s)` followed by building PyTorch modules gives.

Each block is its placement's block function (depthlab.vocabulary.placements) run on the
sublayer operations of `BlockOps`; the registry entry also says which norms (of which norm kind,
depthlab.core.norms) and gates a block has, whether it draws its own init (an init kind,
depthlab.vocabulary.inits, drawn on `DrawOps`), scales its skip path, carries a second stream or
normalises the input. Pre-LN and Post-LN equal `nn.TransformerEncoderLayer(norm_first=True/False)`
with the same weights and dropout 0 (tested).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from depthlab.core.draws import DrawOps, linear_init
from depthlab.core.norms import NORM_KINDS
from depthlab.core.prefetch import ahead
from depthlab.vocabulary.inits import INIT_KINDS
from depthlab.vocabulary.placements import PLACEMENTS, Placement
from depthlab.vocabulary.settings import RunSettings


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
    the placement's norms (its norm kind's parameters), gates (a gate is one scalar), head
    scales and FFN norm. Without biases (setting `bias` false) the linear maps' biases are no
    parameters, but they are still `drawn`, so that the weights are those of the cell with
    biases."""
    placement = PLACEMENTS[s.placement]
    kind = NORM_KINDS[placement.norm]
    d, f = s.d_model, s.ffn_mult * s.d_model
    shapes: dict[str, tuple[int, ...]] = {}
    for name, (n_out, n_in) in {
        "q": (d, d), "k": (d, d), "v": (d, d), "o": (d, d), "1": (f, d), "2": (d, f)
    }.items():
        shapes[f"w{name}"] = (n_out, n_in)
        if s.bias or drawn:
            shapes[f"b{name}"] = (n_out,)
    for ln in placement.norms:
        shapes.update(kind.shapes(ln, d))
    for gate in placement.gates:
        shapes[gate] = ()
    if placement.head_scales:
        shapes["head_scale"] = (s.heads,)
    if placement.ffn_norm:
        shapes.update(kind.shapes("lnf", f))
    return shapes


# the offset of the generator a placement's own init draws from (far from any seed in use)
OWN_INIT_STREAM = 2**40


def _draw_block(s: RunSettings, w: dict[str, Tensor], g: torch.Generator,
                own: torch.Generator) -> None:
    """Fill one seed's block parameters `w` (contiguous, one seed's drawn shapes) in place: the
    init kind (the placement's own, else the init setting's) draws the linear maps from `g` and
    re-draws from `own` (depthlab.vocabulary.inits), so that `g` draws the same for every
    placement and init (the input and target that follow are the same); then out_scale, then
    the norms as their kind is at init, gates 0 and head scales 1."""
    placement = PLACEMENTS[s.placement]
    INIT_KINDS[placement.init or s.init].draw(DrawOps(w, s, g, own))
    if s.out_scale != 1.0:
        w["wo"].mul_(s.out_scale)
        w["w2"].mul_(s.out_scale)
    kind, f = NORM_KINDS[placement.norm], s.ffn_mult * s.d_model
    for ln in placement.norms:
        kind.fill(w, ln, s.d_model)
    if placement.ffn_norm:
        kind.fill(w, "lnf", f)
    for gate in placement.gates:
        w[gate].zero_()
    if placement.head_scales:
        w["head_scale"].fill_(1.0)


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
    blocks as PyTorch's modules draw them, the loss head, then x, then the target. An init that
    re-draws (depthlab.vocabulary.inits: the init setting's or a placement's own) re-draws the
    weights from a second generator, `manual_seed(seed + OWN_INIT_STREAM)`, so every placement
    and init draws the same input and target, and the same weights where the init is the same:
    rows are paired.

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
    final = _final_norms(s, S, host)
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
            linear_init(final["head_w"][i], final["head_b"][i], g)
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


def _final_norms(s: RunSettings, S: int, host: dict) -> dict[str, Tensor]:
    """The norms outside the blocks, as their kind is at init, (S, ...) each: the final norm
    (ln) and an input norm (embed_ln) where the placement has one."""
    placement = PLACEMENTS[s.placement]
    kind = NORM_KINDS[placement.norm]
    names = ("ln", "embed_ln") if placement.embed_norm else ("ln",)
    final = {k: torch.empty(S, *shape, **host)
             for name in names for k, shape in kind.shapes(name, s.d_model).items()}
    for name in names:
        kind.fill(final, name, s.d_model)
    return final


def linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """Seed-batched x @ w.T + b: x (S, N, in), w (S, out, in), b (S, out) or None (no bias)
    -> (S, N, out)."""
    if b is None:
        return torch.bmm(x, w.transpose(1, 2))
    return torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))


def norm(x: Tensor, p: dict[str, Tensor], name: str, s: RunSettings) -> Tensor:
    """The norm `name` of parameters p (a block's, or the final ones: 'ln', 'embed_ln'), of the
    placement's norm kind."""
    return NORM_KINDS[PLACEMENTS[s.placement].norm](x, p, name)


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
    probed: bool = True  # the per-block sds and active fractions recorded (`forward`)

    def attn(self, x: Tensor) -> Tensor:
        if self.probed:
            self.trace.attn_in_sd.append(x.detach().std(dim=(1, 2)))
        a = attention(x, self.p, self.s)
        self.trace.attn.append(a)
        return a

    def mlp(self, x: Tensor) -> Tensor:
        if self.probed:
            self.trace.mlp_in_sd.append(x.detach().std(dim=(1, 2)))
        hidden = mlp_hidden(x, self.p, self.s)
        if self.probed:
            self.trace.ffn_active.append((hidden.detach() > 0).mean(dim=(1, 2), dtype=x.dtype))
        if self.placement.ffn_norm:  # NormFormer's norm of the hidden activation
            hidden = self.norm("lnf", hidden)
        m = linear(hidden, self.p["w2"], self.p.get("b2"))
        self.trace.mlp.append(m)
        return m

    def norm(self, name: str, x: Tensor) -> Tensor:
        return norm(x, self.p, name, self.s)

    def gate(self, name: str, branch: Tensor) -> Tensor:
        """The block's scalar `name` (one per seed, shape (S,)) times branch."""
        return self.p[name].view(-1, 1, 1) * branch

    def add(self, x: Tensor, branch: Tensor, which: str) -> Tensor:
        """c * x + the branch times its scale (1 unless the placement scales branches);
        c = s.skip, skip_scale or the placement's own (DeepNorm's alpha)."""
        scaled = self.placement.branch_scales
        scale = self.scale[0 if which == "attn" else 1] if scaled else 1.0
        return _join(x, self.s.skip, branch, scale)

    @property
    def depth(self) -> int:
        return self.s.depth

    @property
    def placement(self) -> Placement:
        return PLACEMENTS[self.s.placement]

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
    probed: bool = True,
) -> tuple[Tensor, Trace]:
    """Run the stack on x (S, B, T, d); returns the head input (S, N, d) and the trace.

    Each block is its placement's block function on BlockOps; branch_scales[l] = (alpha_attn,
    alpha_mlp) of block l+1 multiplies its branch outputs before they join the stream
    (placements with branch_scales), default residual_scale for both; s.skip multiplies the skip
    path of both sublayers. The head input is the last stream after the final LN (if any), or
    for a placement that carries a second stream, the last stream plus the final LN of it.
    `removed` = l (1-based) ablates block l: the streams pass it unchanged (the identity map), and
    every other block keeps its own index (placements whose constants depend on it).
    `probed` False leaves out of the trace the per-block reductions only probes read (the sd of
    each branch's input, the FFN's active fraction): a training step's or a validation loss's
    forward, the same numbers without them (about a sixth of a training step's time).
    """
    placement = PLACEMENTS[s.placement]
    S = x.shape[0]
    h = x.reshape(S, -1, s.d_model)
    if placement.embed_norm:
        h = norm(h, params.final, "embed_ln", s)
    trace = Trace(stream=[h], carry=[h] if placement.carry else [])
    uniform = (s.residual_scale, s.residual_scale)
    for layer, p in enumerate(params.blocks):
        if layer + 1 == removed:
            trace.stream.append(h)
            if placement.carry:
                trace.carry.append(trace.carry[-1])
            continue
        scale = branch_scales[layer] if branch_scales is not None else uniform
        ops = BlockOps(p, s, scale, trace, layer + 1, trace.carry[-1] if placement.carry else None,
                       probed)
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
        return h + (norm(carry, params.final, "ln", s) if s.uses_final_norm else carry)
    return norm(h, params.final, "ln", s) if s.uses_final_norm else h


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
