"""AdamW (Loshchilov & Hutter 2019, decoupled weight decay) as torch.optim.AdamW computes it
by default on the CPU (its single-tensor path, PyTorch 2.13), bit for bit (tests/test_training.py
compares the two), with the learning rate given at each step. torch.optim.Optimizer imports
torch._dynamo on first use, about a second of a training job's CPU that the update never
needs."""

from __future__ import annotations

import torch
from torch import Tensor


class AdamW:
    """AdamW over parameter groups (parameters, weight decay), moments from zero; a parameter
    without a gradient is left as it is, its step count too (as torch.optim skips it)."""

    def __init__(self, groups: list[tuple[list[Tensor], float]], betas: tuple[float, float],
                 eps: float) -> None:
        self.groups = groups
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.state: dict[Tensor, tuple[Tensor, Tensor, list[int]]] = {}

    def zero_grad(self) -> None:
        """Drop every gradient (set_to_none, as torch.optim's default)."""
        for params, _ in self.groups:
            for p in params:
                p.grad = None

    @torch.no_grad()
    def step(self, lr: float) -> None:
        """One update at learning rate `lr` of every parameter that has a gradient."""
        beta1, beta2 = self.beta1, self.beta2
        for params, weight_decay in self.groups:
            for p in params:
                if p.grad is None:
                    continue
                if p not in self.state:
                    self.state[p] = (torch.zeros_like(p, memory_format=torch.preserve_format),
                                     torch.zeros_like(p, memory_format=torch.preserve_format), [0])
                exp_avg, exp_avg_sq, count = self.state[p]
                count[0] += 1
                step = float(count[0])
                if weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                exp_avg.lerp_(p.grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                step_size = lr / (1 - beta1**step)
                denom = (exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(self.eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)
