"""depthlab's placements against the papers' official modules, with depthlab's weights copied in
(one seed at a time; float64, dropout 0, eval mode):

- ReZero: `rezero.transformer.RZTXEncoderLayer` (PyPI `rezero` 0.1.0, majumderb/rezero,
  rezero/transformer/rztx.py), a test dependency in envs/requirements.txt and the locks;
- DeepNorm: `torchscale.architecture.encoder.EncoderLayer` with `deepnorm=True` (torchscale
  0.3.0, microsoft/torchscale), installed without its declared dependencies from
  envs/nodeps.txt (Makefile): the fixture `torchscale` stands in for the two imports it needs.

Nothing skips: a missing package fails the tests that need it (the fixtures `rztx` and
`torchscale` import them, so the rest of the suite still runs), and the installed versions
must be the pinned ones.
"""

from __future__ import annotations

import importlib.metadata
import math
import re
import sys
import types

import pytest
import torch
import torch.nn.functional as F
from conftest import ROOT, copy_encoder_weights
from torch import nn
from torch.overrides import TorchFunctionMode

from depthlab.core.model import build, forward
from depthlab.vocabulary.settings import RunSettings

SEED = 5  # the seed compared: one seed per stack (depthlab's batch over seeds is tested
# against per-seed runs in test_model.py)


def small(**kw) -> RunSettings:
    base = dict(d_model=16, heads=4, tokens=8, depth=3, seeds=1, batch=2)
    return RunSettings.from_mapping({**base, **kw})


def perturb_norms(params) -> None:
    """Non-trivial LayerNorm gains and biases (1 and 0 at init), so that they are compared."""
    gen = torch.Generator().manual_seed(99)
    with torch.no_grad():
        for b in params.blocks:
            for name, t in b.items():
                if name.startswith("ln"):
                    t.add_(0.3 * torch.randn(t.shape, generator=gen, dtype=t.dtype))


def pinned(path: str, name: str) -> str:
    """The version `name` is pinned to in `path` (a `name==version` line)."""
    match = re.search(rf"^{name}==(\S+)", (ROOT / path).read_text(), re.M)
    assert match, (path, name)
    return match[1]


def test_official_packages_are_the_pinned_versions(rztx, torchscale):
    assert importlib.metadata.version("rezero") == pinned("envs/requirements.txt", "rezero")
    assert importlib.metadata.version("torchscale") == pinned("envs/nodeps.txt", "torchscale")


# --- ReZero -------------------------------------------------------------------------------------

ALPHAS = (0.3, -0.45, 0.6)  # ReZero's alpha of blocks 1..3 (0 at init: the identity)


@pytest.fixture(scope="module")
def rztx():
    """The official ReZero layer class, rezero.transformer.RZTXEncoderLayer."""
    from rezero.transformer import RZTXEncoderLayer

    return RZTXEncoderLayer


def rztx_layer(rztx, p: dict, s: RunSettings, i: int) -> nn.Module:
    """RZTXEncoderLayer carrying the weights of seed i (its index in the seed batch) of
    depthlab's ReZero block p."""
    layer = rztx(s.d_model, s.heads, s.ffn_mult * s.d_model, dropout=0.0,
                 activation=s.activation).double().eval()
    copy_encoder_weights(layer, p, i)
    with torch.no_grad():
        layer.resweight.copy_(p["alpha"][i].reshape(1))
    return layer


@pytest.mark.parametrize("attention", ["linear", "torch_mha"])
@pytest.mark.parametrize("causal, activation", [(True, "relu"), (False, "relu"),
                                                (True, "gelu")])
def test_rezero_equals_rztx_encoder_layer(rztx, attention, causal, activation):
    """depthlab's `rezero` stack equals a stack of the official RZTXEncoderLayer with the same
    weights and a nonzero alpha (ALPHAS, one per block, as RZTX's `resweight`, shared by both
    sublayers), every block's stream to 1e-12, the head input being the last stream (no final
    LN in either). Both of depthlab's attention inits are taken (the maths is the same).

    What the official layer does differently, and whether it matters:
    - its nn.MultiheadAttention is built without batch_first: it reads (tokens, batch, d); the
      test transposes (layout only);
    - it takes no is_causal: causal attention is its `src_mask`, here
      nn.Transformer.generate_square_subsequent_mask (-inf above the diagonal), which is what
      depthlab's scaled_dot_product_attention(is_causal=True) computes;
    - dropout: default 0.1 (depthlab has none), in three places: on the attention weights
      (inside nn.MultiheadAttention), between the activation and linear2, and on each branch
      after it is multiplied by resweight (`src + dropout1(resweight * attn)`; its decoder layer
      has the other order, `dropout(attn) * resweight`). 0 here and in eval mode: no
      difference in the maths;
    - resweight is a (1,)-shaped Parameter per layer, 0 at init, as depthlab's alpha (one per
      seed and block); no LayerNorm anywhere, no final LN (RZTX ships none): the same;
    - init: nn.MultiheadAttention's (xavier_uniform_ on the packed (3d, d) in-projection:
      std 1/sqrt(2d); zero in-projection and out_proj biases) and nn.Linear's for the FFN.
      depthlab's attention='torch_mha' draws exactly these (test_rezero_init_...); its default
      attention='linear' (the fixes study) draws q, k, v as nn.Linear(d, d): std 1/sqrt(3d),
      sqrt(2/3) = 0.816 of the official, with U(-1/sqrt(d), 1/sqrt(d)) biases on q, k, v and o
      instead of 0. At alpha = 0 the stack is the identity either way; the init changes the raw
      branches (branch_var) and alpha's gradient at init, not the stream.
    """
    s = small(placement="rezero", attention=attention, causal=causal, activation=activation)
    params, draw = build(s, [SEED])
    with torch.no_grad():
        for b, alpha in zip(params.blocks, ALPHAS, strict=True):
            b["alpha"].fill_(alpha)
        y, trace = forward(params, draw.x, s)
        mask = nn.Transformer.generate_square_subsequent_mask(s.tokens, dtype=torch.float64)
        x = draw.x[0].transpose(0, 1)  # (tokens, batch, d)
        for layer, p in enumerate(params.blocks):
            x = rztx_layer(rztx, p, s, 0)(x, src_mask=mask if causal else None)
            mine = trace.stream[layer + 1][0].view(s.batch, s.tokens, s.d_model)
            torch.testing.assert_close(mine, x.transpose(0, 1), rtol=1e-12, atol=1e-12)
        head = y[0].view(s.batch, s.tokens, s.d_model)
        torch.testing.assert_close(head, x.transpose(0, 1), rtol=1e-12, atol=1e-12)
        assert not torch.allclose(x.transpose(0, 1), draw.x[0])  # not the identity


def test_rezero_init_with_torch_mha_is_rztx_s_init(rztx):
    """With attention='torch_mha', depthlab's ReZero blocks of seed s are exactly the weights
    of RZTXEncoderLayers built after torch.manual_seed(s) (in float64), alpha 0 as resweight:
    the official init, draw for draw."""
    s = small(placement="rezero", attention="torch_mha")
    params, _ = build(s, [SEED])
    before = torch.get_default_dtype()
    torch.manual_seed(SEED)
    torch.set_default_dtype(torch.float64)
    try:
        layers = [rztx(s.d_model, s.heads, s.ffn_mult * s.d_model) for _ in range(s.depth)]
    finally:
        torch.set_default_dtype(before)
    for layer, p in zip(layers, params.blocks, strict=True):
        sa = layer.self_attn
        assert torch.equal(torch.cat([p[f"w{n}"][0] for n in "qkv"]), sa.in_proj_weight)
        assert torch.equal(torch.cat([p[f"b{n}"][0] for n in "qkv"]), sa.in_proj_bias)
        assert torch.equal(p["wo"][0], sa.out_proj.weight)
        assert torch.equal(p["bo"][0], sa.out_proj.bias)
        for n in (1, 2):
            assert torch.equal(p[f"w{n}"][0], getattr(layer, f"linear{n}").weight)
            assert torch.equal(p[f"b{n}"][0], getattr(layer, f"linear{n}").bias)
        assert torch.equal(p["alpha"][0].reshape(1), layer.resweight)


# --- DeepNorm (torchscale) ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def torchscale():
    """torchscale's config and encoder modules, imported with stand-ins for the two packages
    it declares but that are not installed (envs/nodeps.txt): `fairscale.nn` (checkpoint_wrapper,
    wrap: called only by Encoder.build_encoder_layer under checkpoint_activations or fsdp, both
    off) and `timm.models.layers` (drop_path: called only by DropPath, built only for
    drop_path_rate > 0, here 0). The stand-ins raise if called, so no test passes through them;
    they leave sys.modules once torchscale is imported. Its other imports: torch and numpy (the
    lock), apex, fairseq, tutel (optional, absent: torch.nn.LayerNorm, no MoE backends)."""

    def never(*args, **kwargs):
        raise AssertionError("a stand-in for fairscale or timm was called")

    stand_ins = {"fairscale": {}, "fairscale.nn": {"checkpoint_wrapper": never, "wrap": never},
                 "timm": {}, "timm.models": {}, "timm.models.layers": {"drop_path": never}}
    with pytest.MonkeyPatch.context() as patch:
        for name, attrs in stand_ins.items():
            module = types.ModuleType(name)
            vars(module).update(attrs)
            patch.setitem(sys.modules, name, module)
        from torchscale.architecture import config, encoder
    return types.SimpleNamespace(EncoderConfig=config.EncoderConfig, Encoder=encoder.Encoder,
                                 EncoderLayer=encoder.EncoderLayer)


def deepnorm_config(ts, s: RunSettings):
    """torchscale's EncoderConfig for depthlab's `deepnorm` settings s, each value set:
    - encoder_embed_dim, encoder_attention_heads, encoder_ffn_embed_dim: d_model, heads,
      ffn_mult * d_model (the shapes);
    - encoder_layers = depth N: alpha = (2N)^(1/4) (EncoderLayer), init scale (8N)^(1/4)
      (Encoder);
    - deepnorm=True: alpha on the skip path; the config then forces
      encoder_normalize_before=False (Post-LN: an LN after each residual join) and subln=False
      (no LN inside the attention and FFN branches, which its default subln=True would add
      with Pre-LN: Magneto); both also set here, so a changed default cannot flip them;
    - activation_fn: depthlab's activation (torchscale's default is gelu);
    - dropout, attention_dropout, activation_dropout, drop_path_rate = 0 (the defaults; no
      DropPath is built, so timm is not needed);
    - moe_freq=0 (no MoE layer), multiway=False, xpos_rel_pos=False, rel_pos_buckets=0,
      bert_init=False, checkpoint_activations=False, fsdp=False (the defaults; fairscale not
      needed);
    - layernorm_eps=1e-5: depthlab's LayerNorm eps (the default).
    """
    return ts.EncoderConfig(
        encoder_embed_dim=s.d_model, encoder_attention_heads=s.heads,
        encoder_ffn_embed_dim=s.ffn_mult * s.d_model, encoder_layers=s.depth, deepnorm=True,
        encoder_normalize_before=False, subln=False, activation_fn=s.activation, dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0, drop_path_rate=0.0, moe_freq=0,
        multiway=False, xpos_rel_pos=False, rel_pos_buckets=0, bert_init=False,
        checkpoint_activations=False, fsdp=False, layernorm_eps=1e-5,
    )


# depthlab's block parameter -> torchscale EncoderLayer's submodule
TORCHSCALE = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
              "o": "self_attn.out_proj", "1": "ffn.fc1", "2": "ffn.fc2",
              "ln1": "self_attn_layer_norm", "ln2": "final_layer_norm"}


def torchscale_layer(ts, cfg, p: dict, i: int, index: int) -> nn.Module:
    """torchscale's EncoderLayer `index` (0-based) carrying the weights of seed i (its index
    in the seed batch) of depthlab's DeepNorm block p."""
    layer = ts.EncoderLayer(cfg, index).double().eval()
    with torch.no_grad():
        for name, path in TORCHSCALE.items():
            module = layer.get_submodule(path)
            w, b = (f"{name}_w", f"{name}_b") if name.startswith("ln") else (f"w{name}",
                                                                             f"b{name}")
            module.weight.copy_(p[w][i])
            module.bias.copy_(p[b][i])
    return layer


class Float64Casts(TorchFunctionMode):
    """Keeps torchscale's two float32 casts of a float64 tensor in float64: the attention's
    F.softmax(..., dtype=torch.float32) and the FFN's activation of x.float() (fairseq's
    mixed-precision habit). Nothing else is changed; `seen` records each cast it kept."""

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.float and args[0].dtype == torch.float64:
            self.seen.append("float")
            return args[0]
        if func is F.softmax and kwargs.get("dtype") == torch.float32:
            self.seen.append("softmax")
            kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
        return func(*args, **kwargs)


@pytest.mark.parametrize("placement", ["deepnorm", "deepnorm_torchscale"])
@pytest.mark.parametrize("causal, activation", [(False, "relu"), (True, "relu"),
                                                (False, "gelu")])
def test_deepnorm_equals_torchscale_encoder_layer(torchscale, causal, activation, placement):
    """depthlab's `deepnorm` stack (Post-LN, skip path times alpha = (2N)^(1/4)), under the
    paper's init and under torchscale's (`deepnorm_torchscale`), equals a stack
    of torchscale's EncoderLayer (deepnorm_config) with the same weights, every block's stream
    to 1e-12, the head input being the last stream (no final LN in either: torchscale builds
    its Encoder.layer_norm only with encoder_normalize_before). Its alpha is depthlab's skip
    bit for bit (math.pow(2.0 * N, 0.25)).

    What torchscale does differently, and whether it matters:
    - it computes the softmax in float32 (F.softmax(dtype=torch.float32).type_as) and the FFN's
      activation of x.float(): a float64 run carries float32 rounding, 4e-8 to 6e-8 (max abs)
      from depthlab's streams here (rms 1.1; checked below to 1e-6), against 1e-15 with the
      casts kept in float64. Not the maths, but it caps a float64 comparison; the 1e-12 check
      keeps those two casts in float64 (Float64Casts), the official code otherwise unchanged;
    - it multiplies q by head_dim^(-1/2) before q k^T (depthlab's scaled_dot_product_attention
      scales the product): rounding only;
    - its encoder has no causal option: a float 0/1 attn_mask (1 = masked) becomes -1e8 added
      to the scores (a bool mask would be added as 1: wrong), exactly 0 after the softmax,
      which is depthlab's is_causal;
    - its LayerNorm is apex's FusedLayerNorm where apex imports, else torch.nn.LayerNorm (the
      lock has no apex), with layernorm_eps 1e-5: depthlab's.
    The init differs (not compared here): test_torchscale_deepnorm_init.
    """
    ts = torchscale
    s = small(placement=placement, causal=causal, activation=activation)
    cfg = deepnorm_config(ts, s)
    params, draw = build(s, [SEED])
    perturb_norms(params)
    mask = torch.ones(s.tokens, s.tokens, dtype=torch.float64).triu(1) if causal else None
    with torch.no_grad():
        y, trace = forward(params, draw.x, s)
        x = raw = draw.x[0]  # (batch, tokens, d), torchscale's layout
        for index, p in enumerate(params.blocks):
            layer = torchscale_layer(ts, cfg, p, 0, index)
            assert layer.alpha == s.skip and not layer.normalize_before
            assert layer.drop_path is None and not layer.is_moe_layer
            assert layer.self_attn.inner_attn_ln is None and layer.ffn.ffn_layernorm is None
            assert type(layer.final_layer_norm) is nn.LayerNorm
            assert layer.final_layer_norm.eps == 1e-5
            casts = Float64Casts()
            with casts:
                x, _ = layer(x, None, attn_mask=mask)
            assert casts.seen == ["softmax", "float"]
            raw, _ = layer(raw, None, attn_mask=mask)
            mine = trace.stream[index + 1][0].view_as(x)
            torch.testing.assert_close(mine, x, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(mine, raw, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(y[0].view_as(x), x, rtol=1e-12, atol=1e-12)


def test_torchscale_deepnorm_init(torchscale):
    """How torchscale initialises DeepNorm (encoder only), against depthlab's paper form.

    torchscale: every nn.Linear keeps PyTorch's default init (U(-1/sqrt(fan_in),
    1/sqrt(fan_in)) for weight and bias: std 1/sqrt(3 fan_in)); MultiheadAttention's own
    reset_parameters (xavier_uniform_, gain 1/sqrt(2)) is not called when it is built, nor is
    init_bert_params (bert_init off). Then Encoder.__init__ divides every parameter whose name
    holds fc1, fc2, out_proj or v_proj, biases included, by (8N)^(1/4); q_proj and k_proj keep
    theirs. Checked here: Encoder after torch.manual_seed(0) equals EncoderLayers built after
    the same seed, so divided.

    depthlab (the paper's Fig. 2, DeepNet, Wang et al. 2022): xavier_normal_ with gain
    beta = (8N)^(-1/4) for W_V, W_O, W_1, W_2, gain 1 for W_Q, W_K, all biases zero. The same
    beta, different base distributions; weight std over torchscale's, for d and f = 4d:
    W_Q, W_K: sqrt(2/(2d)) / sqrt(1/(3d)) = sqrt(3) = 1.73; W_V, W_O: beta sqrt(1/d) over
    beta sqrt(1/(3d)) = 1.73; W_1 (d -> 4d): sqrt(2/(5d)) / sqrt(1/(3d)) = sqrt(6/5) = 1.10;
    W_2 (4d -> d): sqrt(2/(5d)) / sqrt(1/(12d)) = sqrt(24/5) = 2.19. Biases: zero in depthlab,
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) in torchscale (times beta for v, o, fc1, fc2). The
    forward maths is the same (test_deepnorm_equals_torchscale_encoder_layer).
    """
    ts = torchscale
    s = small(placement="deepnorm", depth=4)
    cfg = deepnorm_config(ts, s)
    torch.manual_seed(0)
    encoder = ts.Encoder(cfg)
    torch.manual_seed(0)
    layers = [ts.EncoderLayer(cfg, i) for i in range(s.depth)]
    assert encoder.layer_norm is None and encoder.output_projection is None
    scale = math.pow(8.0 * s.depth, 0.25)
    assert scale == pytest.approx((8 * s.depth) ** 0.25, rel=1e-15)
    divided = 0
    for built, plain in zip(encoder.layers, layers, strict=True):
        ours = dict(plain.named_parameters())
        for name, p in built.named_parameters():
            if any(key in name for key in ("fc1", "fc2", "out_proj", "v_proj")):
                assert torch.equal(p, ours[name] / scale), name
                divided += 1
            else:
                assert torch.equal(p, ours[name]), name
    assert divided == 8 * s.depth  # weight and bias of four maps per layer
    q = layers[0].self_attn.q_proj.weight.detach()  # PyTorch's default nn.Linear init
    assert float(q.abs().max()) <= 1 / math.sqrt(s.d_model)


def test_deepnorm_torchscale_init_is_torchscale_s_rule(torchscale):
    """deepnorm_torchscale's weights are PyTorch's default nn.Linear draws (those of
    deepnorm_alpha: DeepNorm's skip, no own init) with W_V, W_O, W_1, W_2 and their biases
    divided by torchscale's init scale, bit for bit, and W_Q, W_K as drawn: the rule
    torchscale's Encoder applies to its default draws (test_torchscale_deepnorm_init). Its
    input and target are every placement's."""
    s = small(placement="deepnorm_torchscale", depth=4, seeds=2)
    params, draw = build(s, [SEED, SEED + 1])
    drawn, same = build(small(placement="deepnorm_alpha", depth=4, seeds=2), [SEED, SEED + 1])
    assert torch.equal(draw.x, same.x) and torch.equal(draw.target, same.target)
    torch.manual_seed(0)
    encoder = torchscale.Encoder(deepnorm_config(torchscale, s))
    torch.manual_seed(0)
    plain = torchscale.EncoderLayer(deepnorm_config(torchscale, s), 0)
    # torchscale's own scale, read off its Encoder: the ratio of a divided map to its draw
    scale = float((plain.ffn.fc1.weight / encoder.layers[0].ffn.fc1.weight).detach()[0, 0])
    assert scale == pytest.approx(math.pow(8.0 * s.depth, 0.25), rel=1e-6)
    for ours, default in zip(params.blocks, drawn.blocks, strict=True):
        for n in "qkvo12":
            for kind in "wb":
                expect = default[f"{kind}{n}"]
                if n in "vo12":
                    expect = expect / math.pow(8.0 * s.depth, 0.25)
                assert torch.equal(ours[f"{kind}{n}"], expect), (kind, n)
