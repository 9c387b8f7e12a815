"""The probes that run the model again (depthlab.core.response): the input-output Jacobian's
products against autograd's and against the dense Jacobian, ReZero's identity at init, the input
LN's scale invariance, and the update after the first optimiser step against its first-order
form, against a hand-written step (SGD's) and against Adam's written out."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.nn.attention import SDPBackend, sdpa_kernel

from depthlab.core.measure import run_pass
from depthlab.core.model import Draw, build, forward, per_seed_loss
from depthlab.core.probes import rms
from depthlab.core.response import directions, first_step, jacobian, linearised, model_update
from depthlab.planner.cost import pass_plan
from depthlab.vocabulary.placements import ORDER
from depthlab.vocabulary.settings import ConfigError, RunSettings


def tiny(**kw) -> RunSettings:
    base = dict(d_model=8, heads=2, tokens=4, depth=2, seeds=2)
    return RunSettings(**{**base, **kw})


def values(probes, metric: str) -> torch.Tensor:
    """One probe's values (S, layers)."""
    return next(p.values for p in probes if p.metric == metric)


def head(x: torch.Tensor, params, s: RunSettings) -> torch.Tensor:
    return forward(params, x, s)[0]


@pytest.mark.parametrize("placement", ORDER)
@pytest.mark.parametrize("activation", ["relu", "gelu"])
# torch's forward-mode decompositions, imported on first use, call torch.jit.script
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_jvp_and_vjp_equal_autograd_s(placement, activation):
    """J v (double backward) against torch.autograd.functional.jvp and forward-mode AD, J^T u
    against functional.vjp, every placement, float64."""
    s = tiny(placement=placement, activation=activation)
    params, draw = build(s, [0, 1])
    jvp, vjp = linearised(params, draw.x, s)
    v = directions(draw, 1)[0]
    u = torch.randn(2, s.batch * s.tokens, s.d_model, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(7))
    with sdpa_kernel(SDPBackend.MATH):
        _, ref_jv = torch.autograd.functional.jvp(lambda x: head(x, params, s), draw.x, v)
        _, ref_vj = torch.autograd.functional.vjp(lambda x: head(x, params, s), draw.x, u)
        with torch.no_grad(), fwAD.dual_level():
            forward_mode = fwAD.unpack_dual(head(fwAD.make_dual(draw.x, v), params, s)).tangent
    for got, ref in ((jvp(v), ref_jv), (jvp(v), forward_mode), (vjp(u), ref_vj)):
        assert torch.allclose(got, ref, rtol=1e-12, atol=1e-12 * ref.abs().max())


def test_rezero_at_init_is_an_isometry():
    """ReZero at init is the identity map (alpha = 0, no final norm): J = I, every singular
    value 1, so both estimates are 1 whatever the directions."""
    s = tiny(placement="rezero", depth=4, jacobian_dirs=3)
    probes, _ = run_pass(s, pass_plan(s), [0, 1])
    for metric in ("jacobian_rms_sv", "jacobian_max_sv"):
        assert torch.allclose(values(probes, metric), torch.ones(2, 1, dtype=torch.float64), rtol=0,
                              atol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("placement", ["pre", "post", "deepnorm"])
def test_estimates_match_the_dense_jacobian(placement):
    """Hutchinson's estimate is exactly the mean of ||J v_j||² / ||v_j||² over the seed's
    directions, and the power iteration's value is that of the dense J^T J from v_1: a lower
    bound of the largest singular value, close to it after 40 steps (DeepNorm's gap is the
    smallest: 0.1% short)."""
    k = 40
    s = tiny(placement=placement, jacobian_dirs=k)
    params, draw = build(s, [0, 1])
    probes = jacobian(params, draw, s)
    dirs = directions(draw, k).flatten(2)  # (k, S, n)
    for seed in range(2):
        with sdpa_kernel(SDPBackend.MATH):
            dense = torch.autograd.functional.jacobian(
                lambda x, i=seed: head(x.expand(2, -1, -1, -1), params, s)[i],
                draw.x[seed:seed + 1])
        J = dense.reshape(s.tokens * s.d_model, -1)
        v = dirs[:, seed]
        gains = (v @ J.T).square().sum(1) / v.square().sum(1)
        assert values(probes, "jacobian_rms_sv")[seed, 0] == pytest.approx(
            gains.mean().sqrt().item(), rel=1e-12)
        unit = v[0] / v[0].norm()
        for _ in range(k - 1):
            unit = J.T @ (J @ unit)
            unit = unit / unit.norm()
        estimate = values(probes, "jacobian_max_sv")[seed, 0].item()
        assert estimate == pytest.approx((J @ unit).norm().item(), rel=1e-10)
        top = torch.linalg.svdvals(J)[0].item()
        assert estimate <= top * (1 + 1e-12) and estimate == pytest.approx(top, rel=1e-2)


def test_an_input_layernorm_makes_the_jacobian_scale_as_one_over_the_input():
    """Peri-LN normalises the input first, so F(c x) = F(x) and J(c x) = J(x) / c (up to the
    LN's eps): doubling the input halves both singular-value estimates."""
    s = tiny(placement="peri", jacobian_dirs=3)
    params, draw = build(s, [0, 1])
    once = jacobian(params, draw, s)
    twice = jacobian(params, dataclasses.replace(draw, x=2 * draw.x), s)
    for metric in ("jacobian_rms_sv", "jacobian_max_sv"):
        assert torch.allclose(values(twice, metric), values(once, metric) / 2, rtol=1e-4)


@pytest.mark.parametrize("placement", ["pre", "post", "deepnorm", "rezero"])
def test_the_update_is_linear_in_a_small_learning_rate(placement):
    s = tiny(placement=placement, depth=3)
    params, draw = build(s, [0, 1])
    small, double = (model_update(params, draw, dataclasses.replace(s, update_lr=lr))
                     for lr in (1e-7, 2e-7))
    for metric in ("model_update", "update_stream"):
        ratio = values(double, metric)[:, -1] / values(small, metric)[:, -1]
        assert torch.allclose(ratio, torch.full_like(ratio, 2.0), rtol=1e-2), metric


def test_rezero_s_update_is_its_alphas_times_the_branches():
    """ReZero at init: the weights get no gradient (alpha = 0), so Adam's step moves only each
    block's alpha, by −lr·sign(dL/dalpha), and to first order the head input moves by
    sum_l alpha_l (Attn_l(x) + FFN_l(x)), every branch read at the input (the stream is x)."""
    lr = 1e-7
    s = tiny(placement="rezero", depth=3, update_lr=lr)
    params, draw = build(s, [0, 1])
    y, trace = forward(params, draw.x, s)
    alphas = [b["alpha"] for b in params.blocks]
    grads = torch.autograd.grad(per_seed_loss(y, params, draw, s).sum(), alphas)
    moved = sum(-lr * torch.sign(g).view(-1, 1, 1) * (a + m)
                for g, a, m in zip(grads, trace.attn, trace.mlp, strict=True))
    expected = moved.square().mean(dim=(1, 2)).sqrt()
    probes = model_update(params, draw, s)
    assert torch.allclose(values(probes, "model_update")[:, 0], expected.detach(), rtol=1e-5)
    streams = values(probes, "update_stream")
    assert (streams[:, 0] == 0).all()  # no input LN: the input does not move
    assert torch.equal(streams[:, -1], values(probes, "model_update")[:, 0])  # no final norm


def hand_step(params, draw, s: RunSettings, step) -> tuple[list, torch.Tensor]:
    """The leaves after one step written out by hand, θ + step(g) for each leaf θ and its
    gradient g (torch.autograd.grad of the summed per-seed loss on a pass of its own), and the
    head input at init."""
    leaves = params.leaves()
    y, _ = forward(params, draw.x, s)
    grads = torch.autograd.grad(per_seed_loss(y, params, draw, s).sum(), leaves,
                                allow_unused=True)
    moved = [t.detach() + (torch.zeros_like(t) if g is None else step(g))
             for t, g in zip(leaves, grads, strict=True)]
    return moved, y.detach()


def moved_head(params, moved: list, draw, s: RunSettings) -> torch.Tensor:
    """The head input with the leaves replaced by `moved` (in StackParams.leaves' order)."""
    it = iter(moved)
    blocks = [{k: next(it) for k in b} for b in params.blocks]
    final = {k: next(it) for k in params.final}
    with torch.no_grad():
        return forward(type(params)(blocks, final), draw.x, s)[0]


@pytest.mark.parametrize("placement", ["post", "pre", "deepnorm", "deepnorm_torchscale"])
def test_sgd_s_first_step_is_theta_minus_lr_times_the_gradient(placement):
    """update_optimizer sgd: every leaf moves to θ − lr·g, g from torch.autograd.grad of the
    same loss, to round-off; the update probe is the rms change of the head input it makes."""
    lr = 1e-3
    s = tiny(placement=placement, depth=3, update_lr=lr, update_optimizer="sgd")
    params, draw = build(s, [0, 1])
    moved, y = hand_step(params, draw, s, lambda g: -lr * g)
    stepped, _, _ = first_step(params, draw, s)
    for got, want in zip(stepped.leaves(), moved, strict=True):
        assert torch.allclose(got, want, rtol=1e-15, atol=1e-17)
    expected = rms(moved_head(params, moved, draw, s) - y)
    update = values(model_update(params, draw, s), "model_update")[:, 0]
    assert torch.allclose(update, expected, rtol=1e-12, atol=0)


# the parameters each update_params moves, by their names in a block (written out here, not
# read from the code): DeepNet's θ, the six weight matrices; and those with their biases
THETA = {"weights": {"wq", "wk", "wv", "wo", "w1", "w2"},
         "sublayer": {"wq", "wk", "wv", "wo", "w1", "w2", "bq", "bk", "bv", "bo", "b1", "b2"}}


@pytest.mark.slow
@pytest.mark.parametrize("placement", ["post", "pre", "deepnorm", "resi_dual"])
@pytest.mark.parametrize("update_params", ["weights", "sublayer"])
def test_update_params_moves_its_parameters_alone(placement, update_params):
    """update_params weights (DeepNet's θ) or sublayer: SGD moves exactly those leaves to
    θ − lr·g, g the full gradient of the same loss (torch.autograd.grad), and every other leaf
    (the norms' gains and biases, the final LN) stays at its init, bit for bit; the probe is
    the rms change of the head input that step makes."""
    lr = 1e-3
    s = tiny(placement=placement, depth=3, update_lr=lr, update_optimizer="sgd",
             update_params=update_params)
    params, draw = build(s, [0, 1])
    moved, y = hand_step(params, draw, s, lambda g: -lr * g)
    names = [k for b in params.blocks for k in b] + list(params.final)
    theta = THETA[update_params]
    want = [m if k in theta else t.detach()
            for k, m, t in zip(names, moved, params.leaves(), strict=True)]
    stepped, _, _ = first_step(params, draw, s)
    assert {k for k in names if k in theta} == theta
    for k, got, w, t in zip(names, stepped.leaves(), want, params.leaves(), strict=True):
        if k in theta:
            assert torch.allclose(got, w, rtol=1e-15, atol=1e-17), k
            # (the key's bias has no gradient: it shifts a query's scores alike)
            assert k.startswith("b") or not torch.equal(got, t), k
        else:
            assert torch.equal(got, t), k
    expected = rms(moved_head(params, want, draw, s) - y)
    update = values(model_update(params, draw, s), "model_update")[:, 0]
    assert torch.allclose(update, expected, rtol=1e-12, atol=0)


def test_update_params_needs_the_update_probe_and_gradients():
    with pytest.raises(ConfigError, match="update_params='weights'"):
        tiny(update_params="weights").check()
    with pytest.raises(ConfigError, match="update_params='weights'"):
        tiny(placement="rezero", update_lr=1e-3, update_params="weights").check()


@pytest.mark.slow
@pytest.mark.parametrize("placement", ["post", "pre", "deepnorm", "deepnorm_torchscale"])
def test_sgd_s_update_per_unit_lr_converges_as_lr_goes_to_zero(placement):
    """A linear response: dF/η = model_update / η under SGD tends to a limit as η → 0, so its
    ratio between η = 1e-5 and 1e-6 is 1 to within 1e-3 (float64; the departure is of order η
    times the curvature of F along the step)."""
    s = tiny(placement=placement, depth=4, update_optimizer="sgd")
    params, draw = build(s, [0, 1])
    per_lr = [values(model_update(params, draw, dataclasses.replace(s, update_lr=lr)),
                     "model_update")[:, 0] / lr for lr in (1e-6, 1e-5)]
    assert torch.allclose(per_lr[1] / per_lr[0], torch.ones(2, dtype=torch.float64), atol=1e-3)


@pytest.mark.parametrize("placement", ["post", "pre", "deepnorm", "rezero"])
def test_adam_s_update_is_the_sign_step_written_out(placement):
    """update_optimizer adam (the default) gives the model_update of Adam's first step written
    out, Δθ = −lr·g/(|g| + 1e-8) (bias-corrected moments m = g, v = g²), bit for bit: the
    numbers measured before the optimiser became a setting."""
    lr = 1e-3
    s = tiny(placement=placement, depth=3, update_lr=lr)
    assert s.update_optimizer == "adam"
    params, draw = build(s, [0, 1])
    moved, y = hand_step(params, draw, s, lambda g: (g / (g.abs() + 1e-8)) * -lr)
    change = moved_head(params, moved, draw, s) - y
    expected = change.pow(2).mean(dim=(1, 2)).sqrt()
    assert torch.equal(values(model_update(params, draw, s), "model_update")[:, 0], expected)


def test_directions_are_the_seed_s_and_change_no_draw():
    s = tiny()
    _, draw = build(s, [0, 1])
    state = [g.get_state() for g in draw.rng]
    first = directions(draw, 2)
    assert torch.equal(first, directions(draw, 2))
    assert all(torch.equal(g.get_state(), st) for g, st in zip(draw.rng, state, strict=True))
    _, one = build(s, [1])
    assert torch.equal(directions(one, 2)[:, 0], first[:, 1])  # seed 1 alone or in a batch
    assert isinstance(draw, Draw)
