"""The norm kinds (depthlab.core.norms) against PyTorch's own modules, one seed at a time, at init
and with parameters moved off it; and the registries every placement names."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from depthlab.core.norms import NORM_KINDS
from depthlab.vocabulary.inits import INIT_KINDS
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import INITS, PAPER

S, N, D = 3, 5, 8


def seeded(kind, name: str, moved: bool) -> dict[str, torch.Tensor]:
    """A kind's parameters `name` for S seeds, as at init or moved off it."""
    p = {k: torch.empty(S, *shape, dtype=torch.float64)
         for k, shape in kind.shapes(name, D).items()}
    kind.fill(p, name, D)
    if moved:
        gen = torch.Generator().manual_seed(3)
        for t in p.values():
            t.add_(0.3 * torch.randn(t.shape, generator=gen, dtype=t.dtype))
    return p


def module(kind_name: str, p: dict[str, torch.Tensor], name: str, seed: int):
    """PyTorch's module (DyT: its defining formula) with seed `seed`'s parameters."""
    if kind_name == "dyt":
        w, b, a = (p[f"{name}_{k}"][seed] for k in "wba")
        return lambda x: w * torch.tanh(a * x) + b
    m = (nn.LayerNorm(D, dtype=torch.float64) if kind_name == "layernorm"
         else nn.RMSNorm(D, dtype=torch.float64))
    with torch.no_grad():
        m.weight.copy_(p[f"{name}_w"][seed])
        if kind_name == "layernorm":
            m.bias.copy_(p[f"{name}_b"][seed])
    return m


@pytest.mark.parametrize("kind_name", list(NORM_KINDS))
@pytest.mark.parametrize("moved", [False, True])
def test_a_norm_kind_is_pytorch_s_module_per_seed(kind_name, moved):
    kind = NORM_KINDS[kind_name]
    p = seeded(kind, "ln1", moved)
    x = 3 * torch.randn(S, N, D, dtype=torch.float64) + 1
    y = kind(x, p, "ln1")
    for seed in range(S):
        torch.testing.assert_close(y[seed], module(kind_name, p, "ln1", seed)(x[seed]),
                                   rtol=1e-12, atol=1e-12)


def test_the_norm_kinds_at_init():
    """nn.LayerNorm's and nn.RMSNorm's parameters at init (gain 1, bias 0), and DyT's alpha_0
    = 0.5 (Zhu et al. 2025, the default outside LLMs), with one alpha per seed."""
    for kind_name in ("layernorm", "rmsnorm"):
        torch_module = nn.LayerNorm(D) if kind_name == "layernorm" else nn.RMSNorm(D)
        p = seeded(NORM_KINDS[kind_name], "ln", moved=False)
        assert sorted(p) == sorted(f"ln_{n[0]}" for n, _ in torch_module.named_parameters())
        for n, t in torch_module.named_parameters():
            assert torch.equal(p[f"ln_{n[0]}"], t.detach().double().expand(S, D))
    p = seeded(NORM_KINDS["dyt"], "ln", moved=False)
    assert p["ln_a"].shape == (S,) and p["ln_a"].eq(0.5).all()


def test_every_placement_names_registered_kinds():
    """Its norm kind, and its own init (an init kind that is no value of the init setting);
    the init setting's values are the other kinds, and `paper`."""
    for p in PLACEMENTS.values():
        assert p.norm in NORM_KINDS, p.name
        assert p.init is None or INIT_KINDS[p.init].own, p.name
    assert set(INITS) == {n for n, k in INIT_KINDS.items() if not k.own} | {PAPER}
