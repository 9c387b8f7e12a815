"""Probes: per-seed statistics read from a trace and the gradients after one backward pass.

Each probe returns `Probe` records: a metric name, a sublayer label, the layer indices and a
(S, n_layers) tensor of values, one row per seed. A probe is registered where it is defined, by
`@probe` with the metrics it declares and the hook points it reads (after timm's
`@register_model`); a function that makes rows outside the probes of every pass declares its
metrics by `@measures`. Layers count blocks from 1; layer 0 is the
input to the first block. All statistics are dimensionless unless said otherwise (the model's
activations are in units of the input's standard deviation, which is 1). A probe that does not
apply to a placement (by its registry flags) returns nothing. probe_rows and pass_rows turn
them into tidy rows (depthlab.core.records).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from depthlab.core.model import StackParams, Trace, head_input
from depthlab.vocabulary.inits import WEIGHTS
from depthlab.vocabulary.metrics import INPUT_SD, Metric
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import RunSettings

# every metric the engine makes rows of, by name, filled as the modules that declare them are
# imported (depthlab.vocabulary.metrics.METRICS is its light copy)
METRICS: dict[str, Metric] = {}
# the probes of every pass, in the order their rows are made, each with the hook points it reads
# beyond the stream (depthlab.core.own_block.POINTS: it runs on a block that marks them)
PROBES: dict[Callable, tuple[str, ...]] = {}


def measures(*metrics: Metric) -> Callable:
    """Declare the metrics whose rows the decorated function makes (into METRICS)."""
    def register(fn: Callable) -> Callable:
        for m in metrics:
            if m.name in METRICS:
                raise ValueError(f"metric {m.name!r} is declared twice")
            METRICS[m.name] = m
        return fn
    return register


def probe(*metrics: Metric, points: tuple[str, ...] = ()) -> Callable:
    """Register fn(params, trace, s) -> list[Probe] as a probe of every pass (PROBES), with
    the metrics it makes and the hook points it reads beyond the stream."""
    def register(fn: Callable) -> Callable:
        PROBES[fn] = points
        return measures(*metrics)(fn)
    return register


@dataclass
class Probe:
    metric: str  # a name of METRICS
    sublayer: str
    layers: list[int]
    values: Tensor  # (S, len(layers))

    def __post_init__(self):
        if self.metric not in METRICS:
            raise ValueError(f"a probe of metric {self.metric!r}, which no @probe or @measures "
                             "declares")


def _per_seed(fn, tensors: list[Tensor]) -> Tensor:
    return torch.stack([fn(t) for t in tensors], dim=1)


def _var(t: Tensor) -> Tensor:
    """Unbiased variance over all entries of each seed's tensor (S, N, d) -> (S,)."""
    return t.var(dim=(1, 2))


def _sd(t: Tensor) -> Tensor:
    """Unbiased standard deviation over all entries of each seed (as `x.std()` per seed)."""
    return t.std(dim=(1, 2))


@probe(
    Metric("grad_norm", "loss / parameter unit", r"$\|g_l\|$",
           "Frobenius norm of the loss gradient of block l (grad_of: its parameters, its six "
           "weight matrices, or its input stream)", log=True, needs="gradient"),
    Metric("grad_ratio", "1", r"$\|g_1\| \,/\, \|g_L\|$",
           "first over last block's gradient norm (1 = balanced), at layer L", log=True,
           needs="gradient"),
)
def grad_norm(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """The "layer gradient" of block l, per seed, by `grad_of`:

    params:  Frobenius norm of dLoss/dθ over all parameters of the block (attention and FFN
             weights and biases, its LayerNorms' gains and biases, its gates); the final (and
             an input) LayerNorm and the head belong to no block.
    weights: the same over the six weight matrices only (Wq, Wk, Wv, Wo, W1, W2).
    input:   Frobenius norm of dLoss/dx over the block's input stream (all tokens).
    none:    no gradients were taken; no probe.
    Also the first/last ratio ||g_1|| / ||g_L||. Units: loss units per parameter unit.
    """
    if s.grad_of == "none":
        return []
    L = s.depth
    if s.grad_of == "input":
        norms = _per_seed(lambda t: t.grad.norm(dim=(1, 2)), trace.stream[:L])
    else:
        norms = trace.block_grad_sq.sqrt()
    ratio = (norms[:, 0] / norms[:, -1]).unsqueeze(1)
    return [
        Probe("grad_norm", "block", list(range(1, L + 1)), norms),
        Probe("grad_ratio", "block", [L], ratio),
    ]


def sq_norm(t: Tensor) -> Tensor:
    """Squared Frobenius norm of each seed's slice of t (S, ...) -> (S,); a gate (S,) squared
    (vector_norm over no dims would reduce all seeds)."""
    dims = tuple(range(1, t.ndim))
    return torch.linalg.vector_norm(t, dim=dims).square() if dims else t.square()


def counted(s: RunSettings, block: dict[str, Tensor]) -> set[str]:
    """The names of a block's parameters its gradient norm counts: the six weight matrices
    (grad_of weights) or all of them (params)."""
    return set(WEIGHTS if s.grad_of == "weights" else block)


def backward(loss: Tensor, params: StackParams, trace: Trace, s: RunSettings) -> None:
    """loss.sum().backward(), reading each block's gradient as autograd delivers it.

    With grad_of params or weights, a hook adds the per-seed squared Frobenius norm of each
    block parameter's gradient (all of them, or the six weight matrices) into
    trace.block_grad_sq (S, L) and then drops that gradient, so only a block's worth of
    gradients is alive at a time (less memory to allocate and touch than keeping all of them).
    """
    if s.grad_of not in ("params", "weights"):
        loss.sum().backward()
        return
    names = counted(s, params.blocks[0])
    sq = torch.zeros(loss.shape[0], s.depth, dtype=loss.dtype, device=loss.device)

    def reader(layer: int, name: str):
        def read(leaf: Tensor) -> None:
            if name in names:
                sq[:, layer] += sq_norm(leaf.grad)
            leaf.grad = None
        return read

    handles = [
        leaf.register_post_accumulate_grad_hook(reader(layer, name))
        for layer, block in enumerate(params.blocks) for name, leaf in block.items()
    ]
    try:
        loss.sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    trace.block_grad_sq = sq


@probe(
    Metric("stream_sd", INPUT_SD, r"sd$(x_l)$",
           "sd of the residual stream after block l (layer 0 the input), before any final "
           "norm", log=True),
    Metric("stream_var", f"({INPUT_SD})²", r"Var$(x_l)$",
           "variance of the residual stream after block l", log=True),
    Metric("stream_max_abs", INPUT_SD, r"max$|x_l|$",
           "largest absolute coordinate of the stream after block l (activation growth)", log=True),
    Metric("head_input_sd", INPUT_SD, "head input sd",
           "sd of what the head reads (after the final norm; ResiDual's x_a + LN(x_d))",
           sublayers="head", log=True),
    Metric("branch_var", f"({INPUT_SD})²", "branch variance",
           "variance of each raw branch output of block l", sublayers="attn, mlp", log=True),
    Metric("carry_var", f"({INPUT_SD})²", r"Var$(x_{d,l})$",
           "variance of a second stream after block l (ResiDual's x_d)", log=True),
)
def stream_stats(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """Residual-stream sd, variance and largest |coordinate| (stream_max_abs: the activation
    growth Peri-LN's and CogView's papers track) after every block (layer 0 = the input), before
    any final norm, in input-sd units; the variance of each raw branch output; and where a
    placement carries a second stream (ResiDual's x_d), its variance after every block
    (carry_var, layer 0 = the input)."""
    placement = PLACEMENTS[s.placement]
    layers = list(range(s.depth + 1))
    blocks = list(range(1, s.depth + 1))
    v_stream = _per_seed(_var, trace.stream)
    probes = [
        Probe("stream_sd", "block", layers, v_stream.sqrt()),  # x.std() to 1 ulp
        Probe("stream_var", "block", layers, v_stream),
        Probe("stream_max_abs", "block", layers,
              torch.stack([t.abs().amax(dim=(1, 2)) for t in trace.stream], 1)),
        Probe("head_input_sd", "head", [s.depth], _sd(trace.head_input).unsqueeze(1)),
    ]
    if trace.attn:  # an own block whose branches are not marked has none (core.own_block)
        probes[3:3] = [Probe("branch_var", "attn", blocks, _per_seed(_var, trace.attn)),
                       Probe("branch_var", "mlp", blocks, _per_seed(_var, trace.mlp))]
    if placement.carry:
        probes.append(Probe("carry_var", "block", layers, _per_seed(_var, trace.carry)))
    return probes


@probe(
    Metric("delta", f"({INPUT_SD})²", r"$\delta_l$",
           "variance a branch adds on top of its skip path, where the stream telescopes "
           "(Pre-LN)", sublayers="attn, mlp"),
    points=("mid",),
)
def stream_increments(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """Where the stream telescopes (Pre-LN), the variance increments delta_attn(l) = Var(h_l)
    - c^2 Var(x_{l-1}) and delta_mlp(l) = Var(x_l) - c^2 Var(h_l), the variance a branch adds
    on top of its skip path (c = s.skip, 1 by default, when they telescope to V_L - V_0), in
    input-variance units; h_l is the stream between the two sublayers (hook point mid)."""
    if not (PLACEMENTS[s.placement].telescopes and trace.mid):
        return []
    blocks = list(range(1, s.depth + 1))
    v_stream, v_mid = _per_seed(_var, trace.stream), _per_seed(_var, trace.mid)
    return [Probe("delta", "attn", blocks, v_mid - s.skip**2 * v_stream[:, :-1]),
            Probe("delta", "mlp", blocks, v_stream[:, 1:] - s.skip**2 * v_mid)]


def token_correlation(x: Tensor, batch: int) -> Tensor:
    """Mean pairwise cosine between the token vectors of each sequence (off-diagonal mean),
    averaged over the batch: x (S, batch*T, d) -> (S,). 0 for orthogonal tokens, 1 for equal."""
    S, N, d = x.shape
    t = N // batch
    u = torch.nn.functional.normalize(x.reshape(S, batch, t, d), dim=-1)
    gram = u @ u.transpose(-1, -2)
    off = gram.sum(dim=(-1, -2)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)
    return (off / (t * (t - 1))).mean(dim=1)


@probe(
    Metric("token_corr", "1", "token cosine",
           "mean pairwise cosine of the token vectors of the stream after block l"),
    Metric("head_token_corr", "1", "token cosine (head)",
           "mean pairwise token cosine of what the head reads", sublayers="head"),
)
def token_corr(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """Mean pairwise token cosine of the stream after every block (layer 0 = the input), and
    of what the head reads (`head_token_corr`: after the final norm; ResiDual's x_a + LN(x_d))."""
    values = _per_seed(lambda t: token_correlation(t, s.batch), trace.stream)
    head = token_correlation(trace.head_input, s.batch).unsqueeze(1)
    return [Probe("token_corr", "block", list(range(s.depth + 1)), values),
            Probe("head_token_corr", "head", [s.depth], head)]


def rms(t: Tensor) -> Tensor:
    """Root mean square over all entries of each seed's tensor (S, N, d) -> (S,)."""
    return t.pow(2).mean(dim=(1, 2)).sqrt()


def _unit(norm: Tensor) -> Tensor:
    """A norm to divide by: a zero norm (a constant tensor, e.g. ReZero's block output at init)
    becomes the smallest positive float, so a zero tensor has correlation 0, not 0/0."""
    return norm.clamp_min(torch.finfo(norm.dtype).tiny)


def _corr(a: Tensor, b: Tensor) -> Tensor:
    """Pearson correlation of two (S, N, d) tensors over all their entries, per seed -> (S,);
    0 where either is constant."""
    a = a - a.mean(dim=(1, 2), keepdim=True)
    b = b - b.mean(dim=(1, 2), keepdim=True)
    return (a * b).sum(dim=(1, 2)) / _unit(a.norm(dim=(1, 2)) * b.norm(dim=(1, 2)))


def _mean_abs(t: Tensor) -> Tensor:
    """Mean absolute value of each seed's tensor (S, N, d) -> (S,)."""
    return t.abs().mean(dim=(1, 2))


def _normed_changes(states: list[Tensor]) -> list[Tensor]:
    """LN(x_k) - LN(x_{k-1}) of consecutive states x_0..x_L (S, N, d), LN over d without affine
    (eps 1e-5): the change of the normalised state, k = 1..L."""
    normed = [torch.nn.functional.layer_norm(x, x.shape[-1:]) for x in states]
    return [b - a for a, b in pairwise(normed)]


@probe(
    Metric("omega_abs", "1", r"$\omega_k$",
           "mean absolute value of LN(x_k) - LN(x_{k-1}): the change of the normalised state "
           "made by block k (theory096's omega_k)", log=True),
    Metric("omega_var", "1", r"Var$(\Delta \mathrm{LN})$",
           "variance of LN(x_k) - LN(x_{k-1})", log=True),
)
def omega(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """The change of the normalised state made by block k, D_k = LN(x_k) - LN(x_{k-1}) with
    x_k = stream[k] (x_0 the input) and LN over d without affine (eps 1e-5): per seed, the
    mean |D_k| (omega_abs) and the unbiased variance of D_k (omega_var) over all tokens and
    coordinates, at layer k = 1..L.

    Counting: layer k is the k-th block, theory096's omega_k when the input is its term 0 (the
    note's x_1, of variance (k-1) sigma^2 = 0); if the input counts as a first independent term,
    block k is omega_{k+1}. Units: the sd of a normalised coordinate (1)."""
    diffs = _normed_changes(trace.stream)
    blocks = list(range(1, s.depth + 1))
    return [
        Probe("omega_abs", "block", blocks, _per_seed(_mean_abs, diffs)),
        Probe("omega_var", "block", blocks, _per_seed(_var, diffs)),
    ]


@probe(
    Metric("head_omega_abs", "1", r"$\omega_k$ of the head input",
           "mean absolute value of LN(y_k) - LN(y_{k-1}), y_k what the head would read after "
           "block k (ResiDual's x_a + LN(x_d)): the change block k makes to the output "
           "(ResiDual's representation collapse)", log=True),
)
def head_omega(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """Representation collapse as ResiDual states it (Xie et al. 2023, "ResiDual: Transformer
    with Dual Residual Connections", sec. 3.2): the change that block k makes to what the head
    reads, E_k = LN(y_k) - LN(y_{k-1}), y_k the head input of the stack cut after block k
    (model.head_input of the stream and, for ResiDual, the second stream after block k: x_a +
    LN_final(x_d); after the final norm where there is one; y_0 from the input), LN over d
    without affine: per seed the mean |E_k| (head_omega_abs) at k = 1..L. A stack whose deep
    blocks no longer move its output collapses: head_omega_abs decays in k. Units: the sd of a
    normalised coordinate (1)."""
    carry = trace.carry or [None] * len(trace.stream)
    heads = [head_input(h, c, params, s) for h, c in zip(trace.stream, carry, strict=True)]
    return [Probe("head_omega_abs", "block", list(range(1, s.depth + 1)),
                  _per_seed(_mean_abs, _normed_changes(heads)))]


@probe(
    Metric("block_var", f"({INPUT_SD})²", r"Var$(f_k)$",
           "variance of what block k adds, f_k = x_k - c² x_{k-1} (telescoping streams)",
           log=True),
    Metric("block_abs", INPUT_SD, r"mean$|f_k|$", "mean absolute value of f_k, what block k adds",
           log=True),
    Metric("block_stream_corr", "1", r"corr$(f_k, x_{k-1})$",
           "correlation of what block k adds with the stream it is added to"),
    Metric("block_corr", "1", r"corr$(f_i, f_j)$",
           "correlation of the outputs of blocks i < j (sublayer f<i>, layer j)",
           sublayers="f1, f2, ...", needs="block_corr"),
)
def block_independence(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """Placements whose stream telescopes (Pre-LN), theory096's independence assumption. For what
    block k adds to the stream, f_k = x_k - c^2 x_{k-1} (c = s.skip, 1 by default): its
    variance (block_var), its mean absolute value (block_abs: sqrt(2/pi) sqrt(block_var) for
    zero-mean Gaussian coordinates) and its correlation with the stream it is added to,
    corr(f_k, x_{k-1}) (block_stream_corr; with c = 1, V_k = V_{k-1} + Var f_k + 2 cov exactly).
    With the `block_corr` setting also corr(f_i, f_j) for every pair i < j: metric block_corr,
    sublayer 'f<i>', layer j (L(L-1)/2 values per seed, so off by default). Correlations are
    Pearson over all tokens and coordinates, per seed (0 for a constant f, see _unit)."""
    if not PLACEMENTS[s.placement].telescopes:
        return []
    f = [b - s.skip**2 * a for a, b in pairwise(trace.stream)]
    blocks = list(range(1, s.depth + 1))
    probes = [
        Probe("block_var", "block", blocks, _per_seed(_var, f)),
        Probe("block_abs", "block", blocks, _per_seed(_mean_abs, f)),
        Probe("block_stream_corr", "block", blocks,
              torch.stack([_corr(fk, x) for fk, x in zip(f, trace.stream, strict=False)], 1)),
    ]
    if s.block_corr:
        flat = torch.stack([t.flatten(1) for t in f], dim=1)  # (S, L, N*d)
        flat = flat - flat.mean(dim=2, keepdim=True)
        flat = flat / _unit(flat.norm(dim=2, keepdim=True))
        corr = flat @ flat.transpose(1, 2)
        probes += [
            Probe("block_corr", f"f{i}", blocks[i:], corr[:, i - 1, i:]) for i in blocks[:-1]
        ]
    return probes


@probe(
    Metric("stream_rms", INPUT_SD, r"rms$(x_l)$",
           "root mean square of the stream after block l", log=True),
)
def stream_size(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """The monitor note's stream curve: sqrt(mean x_l^2) of the residual stream after block l
    (layer 0 = the input; before any final norm), in input-sd units. It reads the stream alone,
    so an own block that marks no other point has it too (the fixes study's stream growth)."""
    return [Probe("stream_rms", "block", list(range(s.depth + 1)), _per_seed(rms, trace.stream))]


@probe(
    Metric("branch_ratio", "1", "branch / stream",
           "rms of what a sublayer adds over rms of the stream it is added to",
           sublayers="attn, mlp, block", log=True),
    points=("mid", "attn", "mlp"),
)
def branch_to_stream(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """The monitor note's per-block ratio (placements with a residual path): RMS of what a
    sublayer adds over RMS of the stream it is added to, attn over x_{l-1}, mlp over the mid
    stream h_l, and where the stream telescopes (Pre-LN) the whole block, f_l over x_{l-1}. A
    telescoping stream gets the scaled branch outputs (h - c x, x' - c h), any other (Post-LN)
    the raw ones before its norm; the stream they join is the skip path, c times the stream
    (c = s.skip, 1 by default). Dimensionless."""
    placement = PLACEMENTS[s.placement]
    if not placement.residual:
        return []
    c = s.skip
    x_in, x_out = trace.stream[:-1], trace.stream[1:]
    if placement.telescopes:
        added = {
            "attn": [h - c * x for h, x in zip(trace.mid, x_in, strict=True)],
            "mlp": [y - c * h for y, h in zip(x_out, trace.mid, strict=True)],
            "block": [y - c**2 * x for y, x in zip(x_out, x_in, strict=True)],
        }
    else:
        added = {"attn": trace.attn, "mlp": trace.mlp}
    skip = {"attn": (x_in, c), "mlp": (trace.mid, c), "block": (x_in, c**2)}
    blocks = list(range(1, s.depth + 1))
    probes = []
    for sublayer, parts in added.items():
        base, factor = skip[sublayer]
        ratio = torch.stack(
            [rms(a) / (factor * rms(b)) for a, b in zip(parts, base, strict=True)], 1
        )
        probes.append(Probe("branch_ratio", sublayer, blocks, ratio))
    return probes


@probe(
    Metric("branch_in_sd", INPUT_SD, "branch input sd",
           "sd of the tensor the attention or FFN branch reads", sublayers="attn, mlp"),
    Metric("ffn_active", "1", "active FFN units",
           "fraction of the FFN's hidden units with a positive pre-activation", sublayers="mlp"),
    points=("attn_in", "mlp_in", "ffn_hidden"),
)
def branch_inputs(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """What each branch operates on, per block (the monitor note's 'no branch is driven into
    saturation'): branch_in_sd, the sd of the tensor the attention (sublayer attn) and FFN (mlp)
    branch reads, in input-sd units; ffn_active, the fraction of the FFN's hidden units with a
    positive pre-activation (ReLU/GELU active side; 0.5 for a symmetric input)."""
    blocks = list(range(1, s.depth + 1))
    return [
        Probe("branch_in_sd", "attn", blocks, torch.stack(trace.attn_in_sd, 1)),
        Probe("branch_in_sd", "mlp", blocks, torch.stack(trace.mlp_in_sd, 1)),
        Probe("ffn_active", "mlp", blocks, torch.stack(trace.ffn_active, 1)),
    ]


@torch.no_grad()
def run_probes(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """All registered probes on one traced, back-propagated pass."""
    return [p for fn in PROBES for p in fn(params, trace, s)]


def probe_rows(probes: list[Probe], seeds: list[int]) -> pd.DataFrame:
    """One row per seed and layer of every probe: columns seed, layer, sublayer, metric, value."""
    frames = []
    for p in probes:
        values = p.values.detach().cpu().numpy()
        n_seeds, n_layers = values.shape
        frames.append(
            pd.DataFrame(
                {
                    "seed": np.repeat(seeds, n_layers),
                    "layer": np.tile(p.layers, n_seeds),
                    "sublayer": p.sublayer,
                    "metric": p.metric,
                    "value": values.reshape(-1),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


@measures(
    Metric("loss", "loss units", "loss", "the pass's loss per seed (mse or nats)",
           sublayers="head"),
)
def pass_rows(probes: list[Probe], seeds: list[int], loss: Tensor) -> pd.DataFrame:
    """probe_rows of one pass's probes plus each seed's loss (metric loss, sublayer head,
    layer 0); loss is a (S,) tensor."""
    return probe_rows([*probes, Probe("loss", "head", [0], loss.unsqueeze(1))], seeds)
