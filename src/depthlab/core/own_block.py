"""Any nn.Module as a block: the stack built per seed from a factory a config names, traced with
forward hooks into the same Trace the built-in placements fill, so every probe, fit, table,
figure and the ledger apply unchanged. After mup's coordinate check (microsoft/mup,
mup/coord_check.py: forward hooks on any nn.Module into a tidy table); per seed, as
depthlab.core.reference's plain loop.

The factory is `module:function` (setting `block`; or a Hugging Face decoder layer,
`{hf: <family>}`: depthlab.core.hf_layers), called as function(settings) -> nn.Module
once per block, under the seed's generator, in the settings' dtype; the module maps the stream
(batch, tokens, d) to the stream. Where it marks them in `depthlab_points` (hook point ->
"submodule.output" or "submodule.input"), its sublayers are recorded too:

    attn      the attention branch's output (a tuple's first element)
    mlp       the FFN branch's output
    mid       the stream between the two sublayers
    attn_in   what the attention branch reads
    mlp_in    what the FFN reads
    ffn_hidden  the FFN's hidden pre-activation (its active fraction: > 0)

ENCODER_LAYER_POINTS are those of PyTorch's nn.TransformerEncoderLayer(norm_first=True). The
settings' `placement` names the built-in placement whose conventions the block follows: its
final norm, and whether its stream telescopes (the variance increments, the block terms).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import logging
import os
import sys
from collections.abc import Callable

import pandas as pd
import torch
from torch import Tensor, nn

from depthlab.core.model import StackParams, Trace, torch_dtype
from depthlab.core.probes import PROBES, Probe, pass_rows
from depthlab.core.records import check_finite
from depthlab.vocabulary import hf
from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.settings import ConfigError, RunSettings

BlockFactory = Callable[[RunSettings], nn.Module]

# the hook points a block may mark, and the Trace field each fills (the branch inputs and the
# FFN's hidden units as per-seed numbers: sd, active fraction)
POINTS = {"attn": "attn", "mlp": "mlp", "mid": "mid", "attn_in": "attn_in_sd",
          "mlp_in": "mlp_in_sd", "ffn_hidden": "ffn_active"}
# nn.TransformerEncoderLayer(norm_first=True): x + sa(norm1(x)), then + ff(norm2(.))
ENCODER_LAYER_POINTS = {
    "attn": "self_attn.output", "mlp": "linear2.output", "mid": "norm2.input",
    "attn_in": "self_attn.input", "mlp_in": "linear1.input", "ffn_hidden": "linear1.output",
}
UNSUPPORTED = {"loss": "cross_entropy", "grad_of": "input"}
log = logging.getLogger(__name__)
_SAID: set = set()  # the skipped probes already logged by this process, per block


def resolve(path: str) -> BlockFactory:
    """The factory `module:function` names, its module imported from the working directory
    first (as `python -m` does), then the Python path; or a Hugging Face layer's
    (depthlab.vocabulary.hf's spec, depthlab.core.hf_layers)."""
    if hf.is_hf(path):
        from depthlab.core.hf_layers import factory

        return factory(path)
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"block: {path!r} is not 'module:function'")
    if sys.path[:1] != [os.getcwd()]:
        sys.path.insert(0, os.getcwd())
    return getattr(importlib.import_module(module), name)


def _line(err: Exception) -> str:
    """An exception as one line: its type and the first line of its message."""
    return f"{type(err).__name__}: {(str(err).splitlines() or [''])[0]}"


def _check_points(block: nn.Module, prefix: str) -> None:
    """ConfigError where `depthlab_points` names a point POINTS does not have (with the nearest
    one) or a submodule the block does not have."""
    for point, where in getattr(block, "depthlab_points", {}).items():
        if point not in POINTS:
            near = difflib.get_close_matches(point, POINTS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ConfigError(f"{prefix}: depthlab_points key {point!r} is not one of "
                              f"{list(POINTS)}{hint}")
        name, _, side = where.rpartition(".")
        try:
            block.get_submodule(name)
        except AttributeError:
            raise ConfigError(f"{prefix}: depthlab_points[{point!r}] = {where!r}: the block has "
                              f"no submodule {name!r}") from None
        if side not in ("output", "input"):
            raise ConfigError(f"{prefix}: depthlab_points[{point!r}] = {where!r}: not "
                              "'submodule.output' or 'submodule.input'")


def check_block(factory: BlockFactory | str, s: RunSettings, where: str = "settings",
                points: tuple[str, ...] = ()) -> BlockFactory:
    """The factory, once one block of it has been built and run on a (1, tokens, d) stream at
    the settings s; else a one-line ConfigError naming `where` and the block: a module without
    the function, a factory that raises or returns no nn.Module, a block without parameters
    (its gradient norm, the unit of the gradient probes, would be 0), a depthlab_points key or
    submodule that does not exist, a forward that raises, returns a tuple or changes the
    stream's shape, or does not mark each of `points` (the hook points a study's fit reads).
    Before any job (the workflow's validate) and in measure_module."""
    name = factory if isinstance(factory, str) else getattr(factory, "__qualname__",
                                                            repr(factory))
    prefix = f"{where}: block={name!r}"
    if isinstance(factory, str):
        module, _, function = factory.partition(":")
        try:
            factory = resolve(factory)
        except ConfigError as err:
            raise ConfigError(f"{prefix}: {err}") from None
        except ValueError as err:
            raise ConfigError(f"{prefix}: {err}") from None
        except ImportError as err:
            raise ConfigError(f"{prefix}: importing {module!r} raised {_line(err)}") from None
        except AttributeError:
            raise ConfigError(f"{prefix}: module {module!r} has no {function!r}") from None
    x = torch.zeros(1, s.tokens, s.d_model, dtype=torch_dtype(s.dtype))
    with torch.random.fork_rng(devices=[]), _default_dtype(x.dtype):
        torch.manual_seed(0)
        try:
            block = factory(s)
        except ConfigError as err:
            raise ConfigError(f"{prefix}: {err}") from None
        except Exception as err:  # noqa: BLE001 (any error of the user's code, as one line)
            raise ConfigError(f"{prefix}: building a block raised {_line(err)}") from None
        if not isinstance(block, nn.Module):
            raise ConfigError(f"{prefix}: the factory returned a {type(block).__name__}, not "
                              "an nn.Module")
        if next(block.parameters(), None) is None:
            raise ConfigError(f"{prefix}: the block has no parameters (its gradient norm, the "
                              "gradient probes' unit, would be 0)")
        _check_points(block, prefix)
        missing = [p for p in points if p not in getattr(block, "depthlab_points", {})]
        if missing:
            raise ConfigError(f"{prefix}: the study's fit reads the hook point(s) "
                              f"{', '.join(missing)}, which the block does not mark "
                              "(depthlab_points: point -> 'submodule.input' or '.output')")
        x.normal_()
        try:
            with torch.no_grad():
                out = block.to(x.dtype)(x)
        except Exception as err:  # noqa: BLE001
            raise ConfigError(f"{prefix}: its forward on a stream of shape {tuple(x.shape)} "
                              f"raised {_line(err)}") from None
    if isinstance(out, tuple):
        raise ConfigError(f"{prefix}: the block returns a tuple; return the stream (a layer "
                          "that returns a tuple: wrap it and return its first element)")
    if not isinstance(out, Tensor) or out.shape != x.shape:
        shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ConfigError(f"{prefix}: the block maps a stream of shape {tuple(x.shape)} to "
                          f"{shape}; it must keep the stream's shape (batch, tokens, d)")
    return factory


def _first(value) -> Tensor:
    return value[0] if isinstance(value, tuple) else value


class _Recorder:
    """Forward hooks on one block's marked submodules, appending each point's tensor."""

    def __init__(self, block: nn.Module):
        self.seen: dict[str, Tensor] = {}
        self.handles = []
        for point, where in getattr(block, "depthlab_points", {}).items():
            name, _, side = where.rpartition(".")
            sub = block.get_submodule(name)
            if side == "output":
                hook = (lambda p: lambda _m, _i, out: self.seen.__setitem__(p, _first(out)))(point)
                self.handles.append(sub.register_forward_hook(hook))
            elif side == "input":
                hook = (lambda p: lambda _m, inputs: self.seen.__setitem__(p, inputs[0]))(point)
                self.handles.append(sub.register_forward_pre_hook(hook))
            else:
                raise ValueError(f"depthlab_points[{point!r}] = {where!r}: not "
                                 "'submodule.output' or 'submodule.input'")

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def one_seed(factory: BlockFactory, s: RunSettings, seed: int) -> tuple[Trace, Tensor]:
    """One seed's traced pass: L blocks from the factory under the seed's generator (drawn on
    the CPU), x and the MSE target, forward, backward (grad_of params: every parameter of a
    block; weights: its matrices); the trace (1, N, d) per point, and the loss (1,)."""
    dtype = torch_dtype(s.dtype)
    with torch.random.fork_rng(devices=[]), _default_dtype(dtype):
        torch.manual_seed(seed)
        blocks = nn.ModuleList(factory(s) for _ in range(s.depth)).to(dtype)
        final = nn.LayerNorm(s.d_model) if s.uses_final_norm else nn.Identity()
        x = torch.randn(s.batch, s.tokens, s.d_model)
        target = torch.randn(s.batch, s.tokens, s.d_model)
    blocks, final = blocks.to(s.device).train(), final.to(s.device)
    x, target = x.to(s.device), target.to(s.device)
    flat = lambda t: t.reshape(1, -1, s.d_model)  # noqa: E731
    trace = Trace(stream=[flat(x)])
    with torch.set_grad_enabled(s.grad_of != "none"):
        h = x
        for block in blocks:
            recorder = _Recorder(block)
            try:
                h = block(h)
            finally:
                recorder.remove()
            seen = recorder.seen
            trace.stream.append(flat(h))
            for point in ("attn", "mlp", "mid"):
                if point in seen:
                    getattr(trace, point).append(flat(seen[point]))
            for point, into in (("attn_in", trace.attn_in_sd), ("mlp_in", trace.mlp_in_sd)):
                if point in seen:
                    into.append(flat(seen[point]).detach().std(dim=(1, 2)))
            if "ffn_hidden" in seen:  # of any width (Llama's 11008/4096 d: not a multiple of d)
                hidden = seen["ffn_hidden"].detach().reshape(1, -1)
                trace.ffn_active.append((hidden > 0).mean(dim=1, dtype=h.dtype))
        trace.head_input = flat(final(h))
        loss = ((trace.head_input - flat(target)) ** 2).mean(dim=(1, 2))
    if s.grad_of in ("params", "weights"):
        loss.sum().backward()
        trace.block_grad_sq = torch.stack([
            sum(p.grad.pow(2).sum() for p in block.parameters()
                if p.grad is not None and (s.grad_of == "params" or p.dim() >= 2))
            for block in blocks]).unsqueeze(0)
    return _detached(trace), loss.detach()


def _detached(trace: Trace) -> Trace:
    """The trace without its autograd graph: the graph's leaves are the seed's blocks and their
    gradients, which it would keep alive for as long as the trace (a job's seeds together: 14 GB
    for six seeds of OLMo 2's layer at L = 192, d_model 256, instead of one seed's 2.4 GB)."""
    for name, value in vars(trace).items():
        if isinstance(value, Tensor):
            setattr(trace, name, value.detach())
        elif isinstance(value, list):
            setattr(trace, name, [t.detach() for t in value])
    return trace


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype):
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def _stacked(traces: list[Trace]) -> Trace:
    """The seeds' traces as one trace of S seeds (each point concatenated on the seed axis)."""
    first = traces[0]
    out = Trace(head_input=torch.cat([t.head_input for t in traces]))
    for name in ("stream", "mid", "attn", "mlp", "attn_in_sd", "mlp_in_sd", "ffn_active"):
        setattr(out, name, [torch.cat(parts) for parts in zip(*(getattr(t, name) for t in traces),
                                                                 strict=True)]
                if getattr(first, name) else [])
    if first.block_grad_sq is not None:
        out.block_grad_sq = torch.cat([t.block_grad_sq for t in traces])
    return out


def module_probes(factory: BlockFactory, s: RunSettings, seeds: list[int]
                  ) -> tuple[list[Probe], Tensor]:
    """Every probe whose hook points the block marks (PROBES), over `seeds`; and the losses
    (S,)."""
    for key, value in UNSUPPORTED.items():
        if getattr(s, key) == value:
            raise ValueError(f"{key}: {value!r} is not measured on an own block")
    if s.jacobian_dirs or s.update_lr:
        raise ValueError("jacobian_dirs and update_lr are not measured on an own block")
    if PLACEMENTS[s.placement].norm != "layernorm":  # one_seed's final norm is nn.LayerNorm
        raise ValueError(f"placement {s.placement!r}: an own block follows a placement whose "
                         "norms are LayerNorms")
    pairs = [one_seed(factory, s, seed) for seed in seeds]
    trace = _stacked([t for t, _ in pairs])
    marked = {point for point, field in POINTS.items() if getattr(trace, field)}
    # the final LayerNorm `one_seed` builds, as it is at init (gain 1, bias 0): what head_input
    # reads to cut the stack after each block (head_omega)
    S, d = len(seeds), s.d_model
    like = trace.head_input
    final = StackParams([], {"ln_w": like.new_ones(S, d), "ln_b": like.new_zeros(S, d)})
    probes = [p for fn, points in PROBES.items() if set(points) <= marked
              for p in fn(final, trace, s)]
    skipped = skipped_probes(marked)
    if skipped and (s.block, skipped) not in _SAID:  # once per job (a process) and block
        _SAID.add((s.block, skipped))
        log.info("block %s: probes skipped, each for the points it needs (depthlab_points): %s",
                 s.block or "(a factory)", skipped)
    return probes, torch.cat([loss for _, loss in pairs])


def skipped_probes(marked: set[str]) -> str:
    """The probes (PROBES) a block marking the hook points `marked` cannot run, each with the
    points it lacks: 'mid_terms (needs mid), ...'; '' where it runs them all."""
    return ", ".join(f"{fn.__name__} (needs {', '.join(sorted(set(points) - marked))})"
                     for fn, points in PROBES.items() if not set(points) <= marked)


def measure_module(factory: BlockFactory | str, s: RunSettings, cell: str = "") -> pd.DataFrame:
    """The tidy rows (seed, layer, sublayer, metric, value and every setting) of a stack of
    the factory's blocks, as measure_cell gives for a built-in placement: depthlab's probes on
    your own nn.Module, without Snakemake (as mup's get_coord_data). The settings and one
    block are checked first (RunSettings.check, check_block: one-line ConfigErrors)."""
    s.check()
    factory = check_block(factory, s)
    probes, loss = module_probes(factory, s, s.seed_list())
    frame = pass_rows(probes, s.seed_list(), loss)
    check_finite(frame, cell)
    for key, value in s.as_columns().items():
        frame[key] = value
    return frame
