"""Probes that run the model again: how the head input responds to a change of the input (the
input-output Jacobian) or of the weights (one optimiser step, Adam's or SGD's). Both are opt-in
settings (`jacobian_dirs`, `update_lr`) and need every block held (a pass that is neither
streamed nor recomputed: depthlab.planner.validate rejects the others). They run their own
passes on the cell's weights and input, so no other probe's numbers change.

Units: the input x ~ N(0, 1), so activations and their changes are in input-sd units; a
Jacobian maps input-sd units to input-sd units (dimensionless).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from depthlab.core.model import Draw, StackParams, Trace, forward, per_seed_loss
from depthlab.core.probes import Probe, measures, rms, sq_norm
from depthlab.vocabulary.inits import WEIGHTS
from depthlab.vocabulary.metrics import INPUT_SD, Metric
from depthlab.vocabulary.settings import RunSettings

BranchScales = list[tuple[float, float]]  # as depthlab.core.measure: (attn, mlp) per block
ADAM_EPS = 1e-8  # torch.optim.Adam's default eps


def _detached(params: StackParams) -> StackParams:
    """The same weights as constants (no gradient path to them)."""
    return StackParams([{k: v.detach() for k, v in b.items()} for b in params.blocks],
                       {k: v.detach() for k, v in params.final.items()})


def _normalised(v: Tensor) -> Tensor:
    """Each seed's slice of v (S, ...) divided by its Euclidean norm."""
    return v / sq_norm(v).sqrt().view(-1, *[1] * (v.ndim - 1))


def directions(draw: Draw, k: int) -> Tensor:
    """k Gaussian directions in input space per seed, (k, S, B, T, d): seed i's from a copy of
    its generator after its draws (Draw.rng[i]), so they are fixed by the seed and leave every
    other number of the pass unchanged; drawn on the CPU, as the weights and input."""
    S, *shape = draw.x.shape
    out = torch.empty(S, k, *shape, dtype=draw.x.dtype)
    for i, g in enumerate(draw.rng):
        copy = torch.Generator()
        copy.set_state(g.get_state())
        out[i].normal_(generator=copy)
    return out.transpose(0, 1).to(draw.x.device)


def linearised(params: StackParams, x: Tensor, s: RunSettings,
               branch_scales: BranchScales | None = None
               ) -> tuple[Callable[[Tensor], Tensor], Callable[[Tensor], Tensor]]:
    """The Jacobian J of the head input at the input x (S, B, T, d), per seed, as two maps on
    one retained graph: jvp(v) = J v (v like x -> (S, N, d)) and vjp(u) = J^T u ((S, N, d) ->
    like x). J^T u is a backward pass; J v the backward pass of that backward pass (J^T u is
    linear in u, so d(v . J^T u)/du = J v: the double-backward trick), about one forward pass
    each, a third of what forward-mode AD costs here. Attention runs on the math SDPA backend, whose
    backward pass is differentiable (the fused kernels' is not). Seeds are independent, so one
    pass over the summed seeds gives each seed's product."""
    x = x.detach().requires_grad_(True)
    with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH):
        y, _ = forward(params, x, s, branch_scales)
        u = torch.zeros_like(y, requires_grad=True)
        (back,) = torch.autograd.grad(y, x, u, create_graph=True)

    def jvp(v: Tensor) -> Tensor:
        return torch.autograd.grad(back, u, v, retain_graph=True)[0]

    def vjp(w: Tensor) -> Tensor:
        return torch.autograd.grad(y, x, w, retain_graph=True)[0]

    return jvp, vjp


@measures(
    Metric("jacobian_rms_sv", "1", "Jacobian rms singular value",
           "rms singular value of the input-output Jacobian (random directions)",
           sublayers="head", log=True, needs="jacobian"),
    Metric("jacobian_max_sv", "1", "Jacobian largest singular value",
           "largest singular value of the input-output Jacobian (power iteration)",
           sublayers="head", log=True, needs="jacobian"),
)
def jacobian(params: StackParams, draw: Draw, s: RunSettings,
             branch_scales: BranchScales | None = None) -> list[Probe]:
    """The input-output Jacobian J = d(head input) / dx of each seed, x the drawn input (before
    any input LN), an (N d) x (N d) map; ReZero's "dynamical isometry" (Bachlechner et al.
    2020, "ReZero is All You Need", arXiv 2003.04887): all singular values near 1. With
    k = jacobian_dirs Gaussian directions v_1..v_k (`directions`):

    jacobian_rms_sv: sqrt of the Hutchinson estimate of the mean squared singular value,
                     mean_j ||J v_j||² / ||v_j||² (unbiased: v/||v|| is uniform on the sphere);
    jacobian_max_sv: the largest singular value by k steps of power iteration on J^T J from
                     v_1: ||J v|| of the last unit iterate, a lower bound that rises to it.

    J v and J^T u by `linearised`: 2k - 1 products J v and k - 1 products J^T u. Sublayer
    'head', layer L; dimensionless (input-sd units to input-sd units)."""
    k = s.jacobian_dirs
    jvp, vjp = linearised(_detached(params), draw.x, s, branch_scales)
    dirs = directions(draw, k)
    images = [jvp(v) for v in dirs]
    gains = torch.stack([sq_norm(w) / sq_norm(v) for w, v in zip(images, dirs, strict=True)])
    image = images[0] / sq_norm(dirs[0]).sqrt().view(-1, 1, 1)  # J of the unit v_1
    for _ in range(k - 1):
        image = jvp(_normalised(vjp(image)))
    return [Probe("jacobian_rms_sv", "head", [s.depth], gains.mean(dim=0).sqrt().unsqueeze(1)),
            Probe("jacobian_max_sv", "head", [s.depth], sq_norm(image).sqrt().unsqueeze(1))]


# each optimiser's first step from init, Δθ / lr, written in place into the gradient g
FIRST_STEPS: dict[str, Callable[[Tensor], Tensor]] = {
    "adam": lambda g: g.div_(g.abs().add_(ADAM_EPS)),  # g / (|g| + eps), about sign(g)
    "sgd": lambda g: g,  # g itself
}


# the block parameters each update_params moves (`all`: every leaf, StackParams.leaves): the
# six weight matrices (DeepNet's θ), or those and the linear maps' biases (bq for wq, ...)
UPDATE_NAMES = {"weights": WEIGHTS, "sublayer": (*WEIGHTS, *(f"b{w[1:]}" for w in WEIGHTS))}


def moving(params: StackParams, s: RunSettings) -> list[Tensor]:
    """The leaves the first step moves, by s.update_params: every leaf (`all`), or the named
    parameters of every block (UPDATE_NAMES; a bias left out by `bias: false` is none)."""
    if s.update_params == "all":
        return params.leaves()
    names = UPDATE_NAMES[s.update_params]
    return [t for b in params.blocks for k, t in b.items() if k in names]


def first_step(params: StackParams, draw: Draw, s: RunSettings,
               branch_scales: BranchScales | None = None) -> tuple[StackParams, Tensor, Trace]:
    """The weights after the first step from init of the optimiser s.update_optimizer at
    learning rate s.update_lr on the parameters s.update_params names (`moving`; the others
    keep their init), and the head input and trace of the pass at init that gives the
    gradient g (of the summed per-seed loss in those parameters; with `all` every parameter:
    blocks and final, StackParams.leaves; one without a gradient, such as an unused final LN,
    does not move):

    adam: Adam's first step. With the bias-corrected moments m = g and v = g²,
          Δθ = −lr g / (|g| + eps) (eps 1e-8, Adam's default; no weight decay): about
          −lr sign(g), a step of lr on every weight whatever its gradient;
    sgd:  plain gradient descent, Δθ = −lr g: the small-step, linear response of DeepNet's
          bounded update (Wang et al. 2022, "DeepNet: Scaling Transformers to 1,000 Layers",
          arXiv 2203.00555: ||ΔF|| = O(η)).

    Its own autograd pass: the gradients the probes read are untouched."""
    leaves = moving(params, s)
    with torch.enable_grad():
        y, trace = forward(params, draw.x.detach(), s, branch_scales)
        loss = per_seed_loss(y, params, draw, s).sum()
        grads = torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
    step = FIRST_STEPS[s.update_optimizer]
    # in place: each gradient's memory becomes its moved parameter, θ − lr step(g)
    moved = {id(t): step(g).mul_(-s.update_lr).add_(t.detach())
             for t, g in zip(leaves, grads, strict=True)}
    blocks = [{k: moved.get(id(v), v) for k, v in b.items()} for b in params.blocks]
    final = {k: moved.get(id(v), v) for k, v in params.final.items()}
    return StackParams(blocks, final), y, trace


@measures(
    Metric("model_update", INPUT_SD, r"rms$(\Delta F)$",
           "how far the first optimiser step moves what the head reads", sublayers="head",
           log=True, needs="update"),
    Metric("update_stream", INPUT_SD, r"rms$(\Delta x_l)$",
           "how far the first optimiser step moves the stream after block l", log=True,
           needs="update"),
)
@torch.no_grad()
def model_update(params: StackParams, draw: Draw, s: RunSettings,
                 branch_scales: BranchScales | None = None) -> list[Probe]:
    """DeepNet's bounded model update (Wang et al. 2022, "DeepNet: Scaling Transformers to
    1,000 Layers", arXiv 2203.00555: the magnitude of the model update ||ΔF||; the section
    could not be confirmed): how far the first step of update_optimizer at learning rate
    update_lr from init (`first_step`: Adam's, or SGD's) moves the model on the same input x,
    per seed:

    model_update:  rms(F(θ + Δθ) − F(θ)) over the head input F (sublayer 'head', layer L), Δθ
                   on the parameters update_params names (every one by default);
    update_stream: rms(x_l(θ + Δθ) − x_l(θ)) of the stream after block l (sublayer 'block',
                   l = 0..L; l = 0 moves only where an input LN has weights).

    Input-sd units (x ~ N(0, 1)); to first order proportional to update_lr."""
    stepped, y, before = first_step(params, draw, s, branch_scales)
    moved_y, after = forward(stepped, draw.x, s, branch_scales)
    streams = [rms(b - a) for a, b in zip(before.stream, after.stream, strict=True)]
    return [Probe("model_update", "head", [s.depth], rms(moved_y - y).unsqueeze(1)),
            Probe("update_stream", "block", list(range(s.depth + 1)), torch.stack(streams, 1))]


def response_probes(params: StackParams, draw: Draw, s: RunSettings,
                    branch_scales: BranchScales | None = None) -> list[Probe]:
    """The probes of this module the settings ask for (none by default)."""
    probes = []
    if s.jacobian_dirs:
        probes += jacobian(params, draw, s, branch_scales)
    if s.update_lr:
        probes += model_update(params, draw, s, branch_scales)
    return probes
