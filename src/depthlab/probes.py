"""Probes: per-seed statistics read from a trace and the gradients after one backward pass.

Each probe returns `Probe` records: a metric name, a sublayer label, the layer indices and a
(S, n_layers) tensor of values, one row per seed. Layers count blocks from 1; layer 0 is the
input to the first block. All statistics are dimensionless unless said otherwise (the model's
activations are in units of the input's standard deviation, which is 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from depthlab.model import BLOCK_PARAMS, BLOCK_WEIGHTS, StackParams, Trace
from depthlab.settings import RunSettings


@dataclass
class Probe:
    metric: str
    sublayer: str
    layers: list[int]
    values: Tensor  # (S, len(layers))


def _per_seed(fn, tensors: list[Tensor]) -> Tensor:
    return torch.stack([fn(t) for t in tensors], dim=1)


def _var(t: Tensor) -> Tensor:
    """Unbiased variance over all entries of each seed's tensor (S, N, d) -> (S,)."""
    return t.var(dim=(1, 2))


def _sd(t: Tensor) -> Tensor:
    """Unbiased standard deviation over all entries of each seed (as `x.std()` per seed)."""
    return t.std(dim=(1, 2))


def grad_norm(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """The "layer gradient" of block l, per seed, by `grad_of`:

    params:  Frobenius norm of dLoss/dθ over all parameters of the block (attention and FFN
             weights and biases, both LayerNorm gains and biases); the final LayerNorm and the
             head belong to no block.
    weights: the same over the six weight matrices only (Wq, Wk, Wv, Wo, W1, W2).
    input:   Frobenius norm of dLoss/dx over the block's input stream (all tokens).
    Also the first/last ratio ||g_1|| / ||g_L||. Units: loss units per parameter unit.
    """
    L = s.depth
    if s.grad_of == "input":
        norms = _per_seed(lambda t: t.grad.norm(dim=(1, 2)), trace.stream[:L])
    else:
        names = BLOCK_WEIGHTS if s.grad_of == "weights" else BLOCK_PARAMS
        norms = torch.stack(
            [
                torch.stack([b[n].grad.flatten(1).pow(2).sum(1) for n in names]).sum(0).sqrt()
                for b in params.blocks
            ],
            dim=1,
        )
    ratio = (norms[:, 0] / norms[:, -1]).unsqueeze(1)
    return [
        Probe("grad_norm", "block", list(range(1, L + 1)), norms),
        Probe("grad_ratio", "block", [L], ratio),
    ]


def stream_stats(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """Residual-stream sd and variance after every block (layer 0 = the input), before any final
    norm; the Pre-LN variance increments delta_attn(l) = Var(h_l) - Var(x_{l-1}) and
    delta_mlp(l) = Var(x_l) - Var(h_l), which telescope exactly to V_L - V_0; and the variance
    of each raw branch output."""
    layers = list(range(s.depth + 1))
    blocks = list(range(1, s.depth + 1))
    probes = [
        Probe("stream_sd", "block", layers, _per_seed(_sd, trace.stream)),
        Probe("stream_var", "block", layers, _per_seed(_var, trace.stream)),
        Probe("branch_var", "attn", blocks, _per_seed(_var, trace.attn)),
        Probe("branch_var", "mlp", blocks, _per_seed(_var, trace.mlp)),
        Probe("head_input_sd", "head", [s.depth], _sd(trace.head_input).unsqueeze(1)),
    ]
    if s.placement == "pre":
        v_stream = _per_seed(_var, trace.stream)
        v_mid = _per_seed(_var, trace.mid)
        probes += [
            Probe("delta", "attn", blocks, v_mid - v_stream[:, :-1]),
            Probe("delta", "mlp", blocks, v_stream[:, 1:] - v_mid),
        ]
    return probes


def token_correlation(x: Tensor, batch: int) -> Tensor:
    """Mean pairwise cosine between the token vectors of each sequence (off-diagonal mean),
    averaged over the batch: x (S, batch*T, d) -> (S,). 0 for orthogonal tokens, 1 for equal."""
    S, N, d = x.shape
    t = N // batch
    u = torch.nn.functional.normalize(x.reshape(S, batch, t, d), dim=-1)
    gram = u @ u.transpose(-1, -2)
    off = gram.sum(dim=(-1, -2)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)
    return (off / (t * (t - 1))).mean(dim=1)


def token_corr(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """Mean pairwise token cosine of the stream after every block (layer 0 = the input)."""
    values = _per_seed(lambda t: token_correlation(t, s.batch), trace.stream)
    return [Probe("token_corr", "block", list(range(s.depth + 1)), values)]


PROBES = (grad_norm, stream_stats, token_corr)


@torch.no_grad()
def run_probes(params: StackParams, trace: Trace, s: RunSettings) -> list[Probe]:
    """All registered probes on one traced, back-propagated pass."""
    return [p for fn in PROBES for p in fn(params, trace, s)]
