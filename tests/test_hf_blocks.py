"""Hugging Face decoder layers as blocks (`block: {hf: <family>}`, depthlab.core.hf_layers): per
family and seed, depthlab's stack of the layers equals the family's own model run on the same
layers (transformers' forward from `inputs_embeds` to the last hidden state before its final
norm), its per-block gradient norms a plain autograd loop's; the same seed draws the same
weights, the family's init has std initializer_range; a bad family or override is one line."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, planned
from torch import nn

from depthlab.core.measure import measure_cell
from depthlab.core.own_block import check_block, one_seed, resolve
from depthlab.planner.grid import job_id, study_jobs
from depthlab.planner.overlay import config_of
from depthlab.planner.validate import check_config
from depthlab.vocabulary import hf
from depthlab.vocabulary.settings import ConfigError, RunSettings
from depthlab.vocabulary.variants import label, own_key

transformers = pytest.importorskip("transformers")

SETTINGS = RunSettings(depth=3, d_model=32, heads=4, tokens=8, batch=2, seeds=2)
# the family's model (embedding, layers, final norm) and the name of its final norm
MODELS = {"llama": "LlamaModel", "qwen2": "Qwen2Model", "mistral": "MistralModel",
          "gemma2": "Gemma2Model", "olmo2": "Olmo2Model", "gpt_neox": "GPTNeoXModel",
          "gpt2": "GPT2Model", "phi": "PhiModel"}
FINAL_NORM = {"gpt_neox": "final_layer_norm", "gpt2": "ln_f", "phi": "final_layernorm"}


def settings(family: str, **options) -> RunSettings:
    return dataclasses.replace(SETTINGS, block=hf.spec({"hf": family, **options}))


@contextlib.contextmanager
def float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def draws(s: RunSettings, seed: int) -> tuple[list[nn.Module], torch.Tensor, torch.Tensor]:
    """The blocks, the input x and the MSE target of one seed, as one_seed draws them."""
    factory = resolve(s.block)
    with torch.random.fork_rng(devices=[]), float64():
        torch.manual_seed(seed)
        blocks = [factory(s) for _ in range(s.depth)]
        return blocks, torch.randn(s.batch, s.tokens, s.d_model), torch.randn(
            s.batch, s.tokens, s.d_model)


def hf_forward(family: str, blocks: list[nn.Module], x: torch.Tensor) -> torch.Tensor:
    """The family's model on `blocks`' layers: its `layers` (GPT-2: `h`) replaced by them, its
    final norm by the identity, GPT-2's position embeddings zero (they are added to the input,
    outside any layer), from inputs_embeds = x, without a cache (every block is layer 0)."""
    with float64():
        model = getattr(transformers, MODELS[family])(blocks[0].config).eval()
    layers = nn.ModuleList(b.layer for b in blocks)
    if family == "gpt2":
        model.h = layers
        nn.init.zeros_(model.wpe.weight)
    else:
        model.layers = layers
    setattr(model, FINAL_NORM.get(family, "norm"), nn.Identity())
    with torch.no_grad():
        return model(inputs_embeds=x, use_cache=False).last_hidden_state


@pytest.mark.slow
@pytest.mark.parametrize("family", list(hf.FAMILIES))
def test_the_stack_equals_the_family_model(family):
    s = settings(family)
    assert set(MODELS) == set(hf.FAMILIES)
    for seed in (0, 1):
        blocks, x, _ = draws(s, seed)
        h = x
        with torch.no_grad():
            for block in blocks:
                h = block(h)
        expected = hf_forward(family, blocks, x)
        diff = (h - expected).abs().max().item()
        print(f"{family} seed {seed}: max |diff| {diff:.3g}")
        assert h.dtype == torch.float64 and diff <= 1e-12
        # the trace depthlab records: its last stream is the same stack's output
        trace, _ = one_seed(resolve(s.block), s, seed)
        torch.testing.assert_close(trace.stream[-1], h.reshape(1, -1, s.d_model), rtol=0,
                                   atol=1e-12)


@pytest.mark.parametrize("family", ["llama", "gemma2", "gpt_neox", "gpt2"])
def test_block_gradients_equal_a_plain_autograd_loop(family):
    """grad_of params: each block's squared gradient norm over all its parameters, as the
    loss MSE(LayerNorm(stack(x)), target) gives it by autograd on the same layers."""
    s = settings(family)
    trace, _ = one_seed(resolve(s.block), s, 0)
    blocks, x, target = draws(s, 0)
    h = x
    for block in blocks:
        h = block(h)
    final = nn.LayerNorm(s.d_model, dtype=torch.float64)
    ((final(h) - target) ** 2).mean().backward()
    sq = torch.stack([sum(p.grad.pow(2).sum() for p in b.parameters()) for b in blocks])
    torch.testing.assert_close(trace.block_grad_sq[0], sq, rtol=1e-10, atol=0)


@pytest.mark.parametrize("family", list(hf.FAMILIES))
def test_a_seed_draws_the_same_weights_bit_for_bit(family):
    """The factory draws from the seed's generator only: the same seed, the same weights;
    another seed, others. And one block of each family passes depthlab's check (its marked
    points exist, it keeps the stream's shape)."""
    s = settings(family)
    check_block(s.block, s)

    def weights(seed):
        return [p for b in draws(s, seed)[0] for p in b.parameters()]

    first, again, other = weights(3), weights(3), weights(4)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not any(torch.equal(a, b) for a, b in zip(first, other, strict=True) if a.std() > 0)


@pytest.mark.parametrize("family, options, matrix, std", [
    ("llama", {}, "self_attn.q_proj", 0.02),
    ("llama", {"initializer_range": 0.05}, "mlp.down_proj", 0.05),
    ("gpt2", {}, "attn.c_attn", 0.02),
    ("gpt2", {}, "attn.c_proj", 0.02 / math.sqrt(2 * SETTINGS.depth)),  # GPT-2's scaled init
    ("llama", {"init": "torch_default"}, "self_attn.q_proj", 1 / math.sqrt(3 * 64)),
])
def test_the_init_readings_have_their_std(family, options, matrix, std):
    """`own`: the family's _init_weights, normal(0, initializer_range); `torch_default`:
    nn.Linear's kaiming-uniform, std 1/sqrt(3 fan_in). Over d x d = 4096 draws the sample sd is
    within 5% of its value (its relative sd is 1.1%)."""
    s = dataclasses.replace(settings(family, **options), d_model=64)
    blocks, _, _ = draws(s, 0)
    w = blocks[0].layer.get_submodule(matrix).weight
    assert w.std().item() == pytest.approx(std, rel=0.05)
    assert abs(w.mean().item()) < 4 * std / math.sqrt(w.numel())


def test_a_bad_family_or_override_is_one_line_naming_it():
    with pytest.raises(ConfigError, match=r"^here: block\.hf='lama' is not one of \[.*\] \(did "
                                          r"you mean 'llama'\?\)$"):
        RunSettings.from_mapping({"block": {"hf": "lama"}}, "here")
    with pytest.raises(ConfigError, match=r"^here: block\.init='paper' is not one of"):
        RunSettings.from_mapping({"block": {"hf": "llama", "init": "paper"}}, "here")
    s = settings("gemma2", rms_norm_ep=1e-6)
    with pytest.raises(ConfigError, match=r"^settings: block='hf-gemma2;rms_norm_ep=1e-06': "
                                          r"block\.rms_norm_ep=1e-06 is not a key of "
                                          r"Gemma2Config \(did you mean 'rms_norm_eps'\?\)$"):
        check_block(s.block, s)
    s = settings("gpt2", n_embd=64)
    with pytest.raises(ConfigError, match=r"block\.n_embd=64: set by the settings' d_model$"):
        check_block(s.block, s)


def test_overrides_reach_the_config_and_yaml_strings_are_numbers():
    """PyYAML reads 1e-6 as a string; the spec holds it as the number it is."""
    s = RunSettings.from_mapping({"block": {"hf": "gemma2", "rms_norm_eps": "1e-6",
                                            "intermediate_size": 48}})
    assert s.block == "hf-gemma2;intermediate_size=48;rms_norm_eps=1e-06"
    layer = resolve(s.block)(s).layer
    assert layer.mlp.gate_proj.out_features == 48
    assert layer.input_layernorm.eps == 1e-6


def test_the_workflow_plans_a_hugging_face_block_under_its_own_label():
    """tests/data/hf_block.yaml (a stack96 arm of Llama layers) passes the checks before any
    job; its job ids and shards are those of the same arm without the block (no ':' or brace
    in them), and its rows are labelled as the HF layer, never as Pre-LN."""
    config = config_of(ROOT, "tests/data/hf_block.yaml", defaults={})
    jobs = check_config(config, ROOT / "workflow/schemas/config.schema.yaml")
    assert {c.settings.block for j in jobs for c in j.cells} == {"hf-llama"}
    del config["studies"]["stack96"]["settings"]["block"]
    assert [j.shard for j in jobs] == [j.shard for j in study_jobs(config)]
    assert not any(c in j.shard for j in jobs for c in ":{}")
    assert job_id({"placement": "pre", "depth": 96}) == "placement-pre_depth-96"
    assert label(own_key("pre", "hf-llama")) == "Llama (HF layer)"
    default = hf.spec({"hf": "gpt2", "init": "torch_default"})
    assert label(own_key("pre", default)) == "GPT-2, Conv1D init (HF layer)"
    bad = {**config["studies"]["stack96"]["settings"], "block": {"hf": "gpt3"}}
    config["studies"]["stack96"]["settings"] = bad
    with pytest.raises(ConfigError, match=r"^studies\.stack96\.arms\.grad: block\.hf='gpt3' is "
                                          r"not one of .* \(did you mean 'gpt2'\?\)$"):
        check_config(config, ROOT / "workflow/schemas/config.schema.yaml")


@pytest.mark.parametrize("family, parallel", [("llama", False), ("gpt_neox", True)])
def test_a_measured_cell_gets_the_branch_probes(family, parallel):
    """Through the engine's path (setting `block`): the branch probes on the marked points;
    `delta` (the stream between the branches) only where the family has that stream. One
    sequence: Llama's FFN width, 86 at d = 32, times 8 tokens is no multiple of d."""
    s = dataclasses.replace(settings(family), depth=2, batch=1)
    rows = measure_cell(*planned(s))
    assert set(rows["block"]) == {s.block}
    assert {"branch_var", "branch_in_sd", "ffn_active", "grad_ratio"} <= set(rows["metric"])
    assert ("delta" in set(rows["metric"])) is not parallel


@pytest.mark.slow
def test_depthlab_imports_transformers_only_to_build_a_layer():
    code = ("import sys, depthlab.core.measure, depthlab.core.hf_layers, depthlab.planner.validate"
            "\nassert 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
