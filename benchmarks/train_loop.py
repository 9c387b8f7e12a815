"""The plain PyTorch training loop the training study is compared with (benchmarks/endtoend.py):
the training study's character model (embedding, learned positions, Pre-LN or Post-LN blocks of
nn.Linear and nn.LayerNorm, final LN for Pre-LN, linear head) for one seed, AdamW with the same
groups and settings, the same batch shape; one optimiser step as a function."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from depthlab.vocabulary.settings import RunSettings
from depthlab.vocabulary.train_settings import TrainSettings


class Block(nn.Module):
    def __init__(self, s: RunSettings):
        super().__init__()
        d, self.s = s.d_model, s
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(d, s.ffn_mult * d), nn.Linear(s.ffn_mult * d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def attn(self, x):
        b, t, d = x.shape

        def heads(z):
            return z.view(b, t, self.s.heads, d // self.s.heads).transpose(1, 2)

        o = F.scaled_dot_product_attention(heads(self.q(x)), heads(self.k(x)), heads(self.v(x)),
                                           is_causal=True)
        return self.o(o.transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        if self.s.placement == "pre":
            x = x + self.attn(self.ln1(x))
            return x + self.ff2(F.relu(self.ff1(self.ln2(x))))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.ff2(F.relu(self.ff1(x))))


class CharModel(nn.Module):
    def __init__(self, s: RunSettings):
        super().__init__()
        self.embed = nn.Embedding(s.head_classes, s.d_model)
        self.pos = nn.Parameter(torch.zeros(s.tokens, s.d_model))
        self.blocks = nn.ModuleList(Block(s) for _ in range(s.depth))
        self.final = nn.LayerNorm(s.d_model) if s.placement == "pre" else nn.Identity()
        self.head = nn.Linear(s.d_model, s.head_classes)

    def forward(self, ids):
        h = self.embed(ids) + self.pos[: ids.shape[1]]
        for block in self.blocks:
            h = block(h)
        return self.head(self.final(h))


def stepper(s: RunSettings, ts: TrainSettings) -> Callable[[], None]:
    """One optimiser step of one seed's model (forward, backward, AdamW) on a fixed batch, on
    the settings' device (drawn on the CPU, then moved)."""
    torch.manual_seed(0)
    model = CharModel(s).to(s.device)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": ts.weight_decay},
                             {"params": rest, "weight_decay": 0.0}], lr=ts.lr,
                            betas=(ts.beta1, ts.beta2), eps=ts.eps)
    ids = torch.randint(0, s.head_classes, (s.batch, s.tokens + 1)).to(s.device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        logits = model(ids[:, :-1])
        F.cross_entropy(logits.reshape(-1, s.head_classes), ids[:, 1:].reshape(-1)).backward()
        opt.step()

    return step
