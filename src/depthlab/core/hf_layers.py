"""A Hugging Face transformers decoder layer as the block (setting `block: {hf: <family>}`,
depthlab.vocabulary.hf): one layer of the family's own class, built from its config class at the
run's settings, wrapped to map the stream (batch, tokens, d) to the stream as the family's model
runs it between its embedding and its final norm. After transformers 5.x's
transformers/models/<family>/modeling_<family>.py (LlamaModel.forward and its kin): the rotary
position embeddings of the family's rotary module at positions 0..T-1, the causal mask of
transformers/masking_utils.py (`create_causal_mask`, or `create_sliding_window_causal_mask`
where the family's model uses it for the layer), eager attention (its softmax and the rotary
angles in float32 as the family writes them; GPT-2's softmax in the settings' dtype), the
first element of a tuple the layer returns.

The config: hidden size d_model, `heads` attention heads and as many key/value heads, head
size d_model / heads, num_hidden_layers = depth (GPT-2 scales its output projections' init by
it), the intermediate size at the family's default ratio to its hidden size (Llama 11008/4096,
GPT-2 4), every dropout 0; then the block's overrides (`{hf: gemma2, rms_norm_eps: 1e-6}`).
Every block is the family's layer 0 (Gemma 2's: a sliding-window layer, its window, 4096 by
default, past the tokens of any default run). Not in the block: the model's position
embeddings at its input (GPT-2's learned `wpe`), its final norm (the settings' placement names
the final norm, as for any own block).

The init (option `init`): `own`, the family's `PreTrainedModel._init_weights` on every module of
the layer, children first as `PreTrainedModel.initialize_weights` walks them (normal(0,
initializer_range) weights, zero biases, unit norms; Gemma 2's norms zero, as its (1 + w)
scale reads; GPT-2's output projections std / sqrt(2 * n_layer)); `torch_default`, the layer as
its modules construct themselves (nn.Linear's kaiming-uniform; GPT-2's Conv1D normal(0, 0.02)).
Both draw from torch's default generator, which depthlab seeds per seed before a stack's first
block (depthlab.core.own_block.one_seed): the same seed gives the same weights bit for bit.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from depthlab.vocabulary import hf
from depthlab.vocabulary.settings import ConfigError, RunSettings

# the depthlab_points of the families whose layer is Llama's: x + attn(norm(x)), then + mlp(...)
PRE_NORM = {"attn": "layer.self_attn.output", "mlp": "layer.mlp.output",
            "mid": "layer.post_attention_layernorm.input",
            "attn_in": "layer.self_attn.q_proj.input", "mlp_in": "layer.mlp.input",
            "ffn_hidden": "layer.mlp.gate_proj.output"}


@dataclass(frozen=True)
class Family:
    """Where a family's classes are (transformers.models.<module>.modeling_<module>, named
    <prefix>Config, <prefix><layer>, <prefix>PreTrainedModel, <prefix>RotaryEmbedding) and the
    hook points of its layer (attn and mlp: what each branch adds to the stream)."""

    module: str
    prefix: str
    points: dict[str, str]
    layer: str = "DecoderLayer"
    rotary: bool = True
    intermediate: str = "intermediate_size"  # the config's key of the FFN's hidden size
    # the settings' keys of the config: (d_model, heads, depth)
    sizes: tuple[str, str, str] = field(
        default=("hidden_size", "num_attention_heads", "num_hidden_layers"))


FAMILIES = {
    "llama": Family("llama", "Llama", PRE_NORM),
    "qwen2": Family("qwen2", "Qwen2", PRE_NORM),
    "mistral": Family("mistral", "Mistral", PRE_NORM),
    # x + post_norm(attn(pre_norm(x))), then the same with the FFN
    "gemma2": Family("gemma2", "Gemma2", {
        "attn": "layer.post_attention_layernorm.output",
        "mlp": "layer.post_feedforward_layernorm.output",
        "mid": "layer.pre_feedforward_layernorm.input", "attn_in": "layer.self_attn.q_proj.input",
        "mlp_in": "layer.mlp.input", "ffn_hidden": "layer.mlp.gate_proj.output"}),
    # x + norm(attn(x)), then + norm(mlp(.)): the branches read the raw stream
    "olmo2": Family("olmo2", "Olmo2", {
        "attn": "layer.post_attention_layernorm.output",
        "mlp": "layer.post_feedforward_layernorm.output", "mid": "layer.mlp.input",
        "attn_in": "layer.self_attn.q_proj.input", "mlp_in": "layer.mlp.input",
        "ffn_hidden": "layer.mlp.gate_proj.output"}),
    # parallel residual, x + attn(norm1(x)) + mlp(norm2(x)): no stream between the branches
    "gpt_neox": Family("gpt_neox", "GPTNeoX", {
        "attn": "layer.attention.output", "mlp": "layer.mlp.output",
        "attn_in": "layer.attention.query_key_value.input", "mlp_in": "layer.mlp.input",
        "ffn_hidden": "layer.mlp.dense_h_to_4h.output"}, layer="Layer"),
    "gpt2": Family("gpt2", "GPT2", {
        "attn": "layer.attn.output", "mlp": "layer.mlp.output", "mid": "layer.ln_2.input",
        "attn_in": "layer.attn.c_attn.input", "mlp_in": "layer.mlp.input",
        "ffn_hidden": "layer.mlp.c_fc.output"},
        layer="Block", rotary=False, intermediate="n_inner", sizes=("n_embd", "n_head", "n_layer")),
    # parallel residual with one norm, x + attn(norm(x)) + mlp(norm(x))
    "phi": Family("phi", "Phi", {
        "attn": "layer.self_attn.output", "mlp": "layer.mlp.output",
        "attn_in": "layer.self_attn.q_proj.input", "mlp_in": "layer.mlp.input",
        "ffn_hidden": "layer.mlp.fc1.output"}),
}
assert FAMILIES.keys() == hf.FAMILIES.keys()  # the vocabulary names the same families


def _modeling(family: Family):
    try:
        return importlib.import_module(
            f"transformers.models.{family.module}.modeling_{family.module}")
    except ImportError as err:
        raise ConfigError(f"block: a Hugging Face layer needs transformers ({err}; pip install "
                          "transformers)") from None


def check_overrides(family: Family, overrides: dict) -> None:
    """ConfigError naming an override the family's config class does not have (with the
    nearest), or one the settings set (d_model, heads, depth)."""
    cls = getattr(_modeling(family), f"{family.prefix}Config")
    known = {*cls().to_dict(), *cls.attribute_map}
    set_by = dict(zip(family.sizes, ("d_model", "heads", "depth"), strict=True))
    set_by.update({alias: set_by[key] for alias, key in cls.attribute_map.items()
                   if key in set_by})
    for key, value in overrides.items():
        if key in set_by:
            raise ConfigError(f"block.{key}={value!r}: set by the settings' {set_by[key]}")
        if key not in known:
            near = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ConfigError(f"block.{key}={value!r} is not a key of {cls.__name__}{hint}")


def config(family: Family, s: RunSettings, overrides: dict):
    """The family's config at the settings s (the module docstring), then `overrides`."""
    cls = getattr(_modeling(family), f"{family.prefix}Config")
    defaults = cls()
    keys = defaults.to_dict()
    ratio = (getattr(defaults, family.intermediate) or 4 * defaults.hidden_size) \
        / defaults.hidden_size
    values = {**dict(zip(family.sizes, (s.d_model, s.heads, s.depth), strict=True)),
              family.intermediate: round(ratio * s.d_model)}
    head = s.d_model // s.heads
    for key, value in (("num_key_value_heads", s.heads), ("head_dim", head),
                       ("query_pre_attn_scalar", head)):
        if key in keys:
            values[key] = value
    values.update({k: 0.0 for k in keys if k.endswith(("dropout", "pdrop"))})
    return cls(**{**values, **overrides}, attn_implementation="eager")


def _children_first(module: nn.Module) -> Iterator[nn.Module]:
    for child in module.children():
        yield from _children_first(child)
    yield module


class HFLayer(nn.Module):
    """One decoder layer of a family, as its model's forward runs it on the stream x."""

    def __init__(self, family: Family, cfg, init: str):
        super().__init__()
        modeling = _modeling(family)
        self.config = cfg
        self.layer = getattr(modeling, f"{family.prefix}{family.layer}")(cfg, layer_idx=0)
        if init == "own":
            pretrained = getattr(modeling, f"{family.prefix}PreTrainedModel")(cfg)
            with torch.no_grad():
                for module in _children_first(self.layer):
                    pretrained._init_weights(module)
        self.rotary = getattr(modeling, f"{family.prefix}RotaryEmbedding")(config=cfg) \
            if family.rotary else None
        self.depthlab_points = dict(family.points)
        sliding = getattr(cfg, "layer_types", None)
        self.sliding = (sliding[0] == "sliding_attention" if sliding
                        else getattr(cfg, "sliding_window", None) is not None)

    def forward(self, x: Tensor) -> Tensor:
        from transformers import masking_utils

        positions = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
        mask = (masking_utils.create_sliding_window_causal_mask if self.sliding
                else masking_utils.create_causal_mask)(
            config=self.config, inputs_embeds=x, attention_mask=None, cache=None,
            position_ids=positions)
        extra = {} if self.rotary is None else {"position_embeddings": self.rotary(x, positions)}
        out = self.layer(x, attention_mask=mask, position_ids=positions, **extra)
        return out[0] if isinstance(out, tuple) else out


def factory(block: str) -> Callable[[RunSettings], nn.Module]:
    """The block factory of a spec (depthlab.vocabulary.hf): called as factory(settings) once
    per block; its overrides checked against the family's config class first (ConfigError)."""
    name, options = hf.parse(block)
    family = FAMILIES[name]
    init = options.pop("init", "own")
    check_overrides(family, options)

    def build(s: RunSettings) -> nn.Module:
        if not s.causal:
            raise ConfigError(f"block={block!r}: a decoder layer is causal (needs causal=true)")
        return HFLayer(family, config(family, s, options), init)

    build.__qualname__ = block
    return build
