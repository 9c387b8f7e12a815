"""The straightforward way: a per-seed Python loop over PyTorch's own `nn.TransformerEncoderLayer`
with forward hooks. It is the reference the batched path is tested against and the baseline of
the benchmark (benchmarks/), not what the pipeline runs.

With `attention: torch_mha` depthlab draws its weights in the order these modules do, so seed s
gives the same model here and in depthlab.core.model.build.
"""

from __future__ import annotations

import torch
from torch import nn

from depthlab.core.model import torch_dtype
from depthlab.vocabulary.settings import RunSettings


def per_seed_loop(s: RunSettings) -> dict[str, torch.Tensor]:
    """Per seed: manual_seed, build L encoder layers, draw x and target, forward with hooks,
    MSE loss, backward. Returns grad_norm (S, L) over each layer's parameters and stream_sd
    (S, L) after each layer (unbiased, all entries), in the model's units."""
    if s.placement not in ("pre", "post") or s.loss != "mse" or s.attention != "torch_mha":
        raise ValueError("the reference covers placement pre/post, loss mse, torch_mha attention")
    kw = {"dtype": torch_dtype(s.dtype), "device": s.device}
    grads, sds = [], []
    for seed in s.seed_list():
        torch.manual_seed(seed)
        layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                s.d_model, s.heads, s.ffn_mult * s.d_model, dropout=0.0,
                activation=s.activation, batch_first=True, norm_first=s.placement == "pre", **kw,
            )
            for _ in range(s.depth)
        )
        final = nn.LayerNorm(s.d_model, **kw) if s.uses_final_norm else nn.Identity()
        x = torch.randn(s.batch, s.tokens, s.d_model, dtype=kw["dtype"]).to(s.device)
        target = torch.randn(s.batch, s.tokens, s.d_model, dtype=kw["dtype"]).to(s.device)
        stream: list[torch.Tensor] = []

        def record(_module, _inputs, out, into=stream):
            into.append(out.detach().std())

        hooks = [layer.register_forward_hook(record) for layer in layers]
        mask = nn.Transformer.generate_square_subsequent_mask(s.tokens, **kw) if s.causal else None
        h = x
        for layer in layers:
            h = layer(h, src_mask=mask, is_causal=s.causal)
        loss = ((final(h) - target) ** 2).mean()
        loss.backward()
        for hook in hooks:
            hook.remove()
        grads.append(torch.stack([
            torch.stack([p.grad.pow(2).sum() for p in layer.parameters()]).sum().sqrt()
            for layer in layers
        ]))
        sds.append(torch.stack(stream))
    return {"grad_norm": torch.stack(grads), "stream_sd": torch.stack(sds)}
