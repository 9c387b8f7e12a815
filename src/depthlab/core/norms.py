"""The norm kinds, one registry entry each (NORM_KINDS, after timm's layers/create_norm.py
`_NORM_MAP`): what parameters a norm has, what they are at init and how it is applied. A
placement names its kind (`Placement.norm`); its blocks' norms, its final norm, an input norm
and an FFN norm are all of that kind. Parameters are seed-batched, `<name>_<suffix>` of shape
(S, ...), over the last axis of x (S, N, width)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


def layer_norm(x: Tensor, w: Tensor, b: Tensor, eps: float = 1e-5) -> Tensor:
    """LayerNorm over the last axis with a per-seed affine w, b of shape (S, d)."""
    return torch.addcmul(b.unsqueeze(1), F.layer_norm(x, x.shape[-1:], eps=eps), w.unsqueeze(1))


@dataclass(frozen=True)
class LayerNorm:
    """nn.LayerNorm (Ba et al. 2016): (x - mean) / sqrt(var + 1e-5) times a gain w plus a bias
    b, 1 and 0 at init."""

    label: str = "LayerNorm"

    def shapes(self, name: str, width: int) -> dict[str, tuple[int, ...]]:
        return {f"{name}_w": (width,), f"{name}_b": (width,)}

    def fill(self, p: dict[str, Tensor], name: str, width: int) -> None:
        p[f"{name}_w"].fill_(1.0)
        p[f"{name}_b"].zero_()

    def __call__(self, x: Tensor, p: dict[str, Tensor], name: str) -> Tensor:
        return layer_norm(x, p[f"{name}_w"], p[f"{name}_b"])


@dataclass(frozen=True)
class RMSNorm:
    """nn.RMSNorm (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization"):
    x / sqrt(mean(x²) + eps) times a gain w (1 at init), no bias; eps the dtype's machine
    epsilon, nn.RMSNorm's default."""

    label: str = "RMSNorm"

    def shapes(self, name: str, width: int) -> dict[str, tuple[int, ...]]:
        return {f"{name}_w": (width,)}

    def fill(self, p: dict[str, Tensor], name: str, width: int) -> None:
        p[f"{name}_w"].fill_(1.0)

    def __call__(self, x: Tensor, p: dict[str, Tensor], name: str) -> Tensor:
        return F.rms_norm(x, x.shape[-1:]) * p[f"{name}_w"].unsqueeze(1)


@dataclass(frozen=True)
class DyT(LayerNorm):
    """DyT (Zhu et al. 2025, "Transformers without Normalization", eq. 1): element-wise
    w * tanh(a x) + b, one learnable scalar a per seed (`<name>_a`, alpha0 at init: 0.5, the
    paper's default outside LLMs), w and b as LayerNorm's."""

    label: str = "DyT"
    alpha0: float = 0.5

    def shapes(self, name: str, width: int) -> dict[str, tuple[int, ...]]:
        return {**super().shapes(name, width), f"{name}_a": ()}

    def fill(self, p: dict[str, Tensor], name: str, width: int) -> None:
        super().fill(p, name, width)
        p[f"{name}_a"].fill_(self.alpha0)

    def __call__(self, x: Tensor, p: dict[str, Tensor], name: str) -> Tensor:
        alpha = p[f"{name}_a"].view(-1, 1, 1)
        return torch.addcmul(p[f"{name}_b"].unsqueeze(1), torch.tanh(alpha * x),
                             p[f"{name}_w"].unsqueeze(1))


NORM_KINDS: dict[str, LayerNorm | RMSNorm] = {
    "layernorm": LayerNorm(),
    "rmsnorm": RMSNorm(),
    "dyt": DyT(),
}
