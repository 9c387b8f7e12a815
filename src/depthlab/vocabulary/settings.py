"""Run settings of one grid cell, and the checks that reject a bad one (no torch import)."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from depthlab.vocabulary import hf
from depthlab.vocabulary.inits import INIT_KINDS
from depthlab.vocabulary.keys import KEYS
from depthlab.vocabulary.placements import PLACEMENTS, Placement

ACTIVATIONS = ("relu", "gelu")
ATTENTIONS = ("linear", "torch_mha")
# `paper`: the placement's paper init (Placement.paper_init), resolved to one of the others
# and a bias setting when the settings are built (RunSettings.__post_init__)
PAPER = "paper"
INITS = (*(name for name, kind in INIT_KINDS.items() if not kind.own), PAPER)
DTYPES = ("float64", "float32")
DEVICES = ("cpu", "cuda")
LOSSES = ("mse", "cross_entropy")
GRAD_OF = ("params", "weights", "input", "none")
FINAL_NORMS = ("auto", "on", "off")
UPDATE_OPTIMIZERS = ("adam", "sgd")  # the first step of the update probe (update_lr)
# which parameters that first step moves: every leaf (all), the blocks' six weight matrices
# (weights, DeepNet's θ), or those and the linear maps' biases (sublayer)
UPDATE_PARAMS = ("all", "weights", "sublayer")
# the allowed values of each setting that has a fixed set (the schema's enums match: a test)
CHOICES = {
    "placement": tuple(PLACEMENTS),
    "activation": ACTIVATIONS,
    "attention": ATTENTIONS,
    "init": INITS,
    "dtype": DTYPES,
    "device": DEVICES,
    "loss": LOSSES,
    "grad_of": GRAD_OF,
    "final_norm": FINAL_NORMS,
    "update_optimizer": UPDATE_OPTIMIZERS,
    "update_params": UPDATE_PARAMS,
}


class ConfigError(ValueError):
    """A bad configuration value; the message names the key and the offending value."""


def run_seed(seed_offset: int, index: int) -> int:
    """The torch seed of the `index`-th seed of a cell: `seed_offset + index`.

    It depends on neither the study nor the cell's place in the grid, so adding a depth or an
    arm leaves the numbers of the cells already there unchanged, and seed i of every cell is the
    note's "seed i" (common random numbers across depths and placements).
    """
    return seed_offset + index


def reject_unknown_keys(cls: type, values: dict, where: str) -> None:
    """Raise ConfigError naming the first key of `values` that is not a field of dataclass cls."""
    known = {f.name for f in dataclasses.fields(cls)}
    for key in values:
        if key not in known:
            raise ConfigError(f"{where}: unknown key '{key}'")


@dataclass(frozen=True)
class RunSettings:
    """Everything that defines one measurement: model, input, loss and seeds.

    Defaults reproduce the stack96 note (see config/README.md for the reason of each).
    """

    placement: str = "pre"
    depth: int = 6
    d_model: int = 128
    heads: int = 4
    ffn_mult: int = 4
    activation: str = "relu"
    attention: str = "linear"
    causal: bool = True
    init: str = "torch_default"
    bias: bool = True
    out_scale: float = 1.0
    residual_scale: float = 1.0
    skip_scale: float = 1.0
    final_norm: str = "auto"
    dtype: str = "float64"
    device: str = "cpu"
    batch: int = 1
    tokens: int = 128
    loss: str = "mse"
    head_classes: int = 64
    grad_of: str = "params"
    seeds: int = 6
    seed_offset: int = 0
    seed_batch: int = 0
    pass_mb: int = 2500
    block_corr: bool = False
    jacobian_dirs: int = 0
    update_lr: float = 0.0
    update_optimizer: str = "adam"
    update_params: str = "all"
    block: str = ""

    def __post_init__(self) -> None:
        """A `block` mapping (a Hugging Face layer, `{hf: llama}`) held as its spec string
        (depthlab.vocabulary.hf). `init: paper` resolved to what the placement's paper draws:
        its own init (torch_default) for a placement with one, else its paper_init's init and
        bias, so the settings (and the rows) say what was drawn. Left as is where there is none
        (check rejects it)."""
        if isinstance(self.block, Mapping):
            object.__setattr__(self, "block", hf.spec(self.block))
        if self.init != PAPER or self.placement not in PLACEMENTS:
            return
        placement = PLACEMENTS[self.placement]
        if placement.own_init:
            object.__setattr__(self, "init", "torch_default")
        elif placement.paper_init is not None:
            object.__setattr__(self, "init", placement.paper_init.init)
            object.__setattr__(self, "bias", placement.paper_init.bias)

    @classmethod
    def from_mapping(cls, values: dict, where: str = "settings") -> RunSettings:
        """Build settings from a config mapping, rejecting unknown keys and bad values (and a
        bias given with `init: paper` that is not the paper's: `paper` sets both)."""
        reject_unknown_keys(cls, values, where)
        settings = cls(**values)
        if values.get("init") == PAPER and "bias" in values and values["bias"] != settings.bias:
            raise ConfigError(
                f"{where}: bias={values['bias']!r} with init='paper' for placement "
                f"{settings.placement!r}, whose paper init sets bias={settings.bias!r}"
            )
        settings.check(where)
        return settings

    def _check_bounds(self, where: str) -> None:
        """ConfigError for the first setting, in declaration order, whose value is not of its
        default's type (true or false; an integer; a finite number) or breaks its bound
        (depthlab.vocabulary.keys.KEYS: `least`, `above`), from those declarations alone."""
        for field in dataclasses.fields(self):
            key, value, bound = field.name, getattr(self, field.name), KEYS[field.name]
            if isinstance(field.default, bool):
                if not isinstance(value, bool):
                    raise ConfigError(f"{where}: {key}={value!r} must be true or false")
            elif isinstance(field.default, int):
                least = bound.least or 0
                if isinstance(value, bool) or not isinstance(value, int) or value < min(least, 1):
                    kind = "positive" if least >= 1 else "non-negative"
                    raise ConfigError(f"{where}: {key}={value!r} must be a {kind} integer")
                if value < least:
                    raise ConfigError(f"{where}: {key}={value!r} must be at least {least:g}")
            elif isinstance(field.default, float):
                number = not isinstance(value, bool) and isinstance(value, int | float)
                if not (number and math.isfinite(value)
                        and (value > bound.above if bound.above is not None
                             else value >= (bound.least or 0))):
                    kind = "positive" if bound.above is not None else "non-negative"
                    raise ConfigError(f"{where}: {key}={value!r} must be a {kind} finite number")

    def check(self, where: str = "settings") -> None:
        """Raise ConfigError naming the first key whose value is invalid."""
        for key, allowed in CHOICES.items():
            value = getattr(self, key)
            if value not in allowed:
                raise ConfigError(f"{where}: {key}={value!r} is not one of {list(allowed)}")
        self._check_bounds(where)
        for key, default in (("update_optimizer", "adam"), ("update_params", "all")):
            if getattr(self, key) != default and not self.update_lr:
                raise ConfigError(
                    f"{where}: {key}={getattr(self, key)!r} takes a step only with "
                    "update_lr > 0 (the update probe is off)"
                )
        placement = PLACEMENTS[self.placement]
        if not placement.residual and self.skip_scale != 1:
            raise ConfigError(
                f"{where}: skip_scale={self.skip_scale!r} needs a residual path "
                f"(placement {self.placement!r} has none)"
            )
        if not placement.branch_scales and self.residual_scale != 1:
            raise ConfigError(
                f"{where}: residual_scale={self.residual_scale!r} does not apply to placement "
                f"{self.placement!r} (its branches are not scaled)"
            )
        self._check_placement_owns(placement, where)
        if self.init == PAPER:  # not resolved by __post_init__: the placement has no paper init
            raise ConfigError(
                f"{where}: init='paper' does not apply to placement {self.placement!r}: no init "
                "of its paper is known (Placement.paper_init)"
            )
        if self.init == "fairseq" and self.attention != "linear":
            raise ConfigError(
                f"{where}: attention={self.attention!r} with init='fairseq', which keeps four "
                "nn.Linear's q, k, v biases (needs attention='linear')"
            )
        if self.block and hf.is_hf(self.block):
            if problem := hf.problem(self.block):
                raise ConfigError(f"{where}: {problem}")
        elif self.block and not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", self.block):
            raise ConfigError(f"{where}: block={self.block!r} is not 'module:function' (a "
                              "factory of your nn.Module, docs/ARCHITECTURE.md) nor "
                              "{hf: <family>} (a Hugging Face layer)")
        if self.d_model % self.heads:
            raise ConfigError(
                f"{where}: heads={self.heads} does not divide d_model={self.d_model}"
            )

    def _check_placement_owns(self, placement: Placement, where: str) -> None:
        """Reject a setting that a placement's own definition fixes: its skip scale (DeepNorm's
        alpha), its init, or weight gradients that its gates zero at init (ReZero)."""
        if placement.skip is not None and self.skip_scale != 1:
            raise ConfigError(
                f"{where}: skip_scale={self.skip_scale!r} does not apply to placement "
                f"{self.placement!r} (its skip scale is fixed by its definition)"
            )
        if placement.own_init:
            for key, default in (("init", "torch_default"), ("attention", "linear")):
                if getattr(self, key) != default:
                    raise ConfigError(
                        f"{where}: {key}={getattr(self, key)!r} does not apply to placement "
                        f"{self.placement!r}, which has its own init of q, k, v, o, W1, W2 "
                        f"(needs {key}={default!r})"
                    )
        if placement.gates and self.grad_of == "weights":
            raise ConfigError(
                f"{where}: grad_of='weights' with placement {self.placement!r}: its weight "
                "gradients are exactly zero at init (gates 0), so their first/last ratio is "
                "undefined; use grad_of='params' (includes the gates)"
            )
        if placement.gates and self.update_params != "all":
            raise ConfigError(
                f"{where}: update_params={self.update_params!r} with placement "
                f"{self.placement!r}: its weight and bias gradients are exactly zero at init "
                "(gates 0), so that step moves nothing; use update_params='all' (moves the gates)"
            )

    @property
    def skip(self) -> float:
        """The skip path's multiplier c of every sublayer: the placement's own (DeepNorm's
        alpha, from the depth), else skip_scale."""
        own = PLACEMENTS[self.placement].skip
        return self.skip_scale if own is None else own(self.depth)

    @property
    def uses_final_norm(self) -> bool:
        """Whether a LayerNorm sits between the last block and the loss ('auto': the
        placement's own choice, depthlab.vocabulary.placements)."""
        if self.final_norm == "auto":
            return PLACEMENTS[self.placement].final_norm
        return self.final_norm == "on"

    def seed_list(self) -> list[int]:
        """The torch seeds of this cell, in order (see run_seed)."""
        return [run_seed(self.seed_offset, i) for i in range(self.seeds)]

    def as_columns(self) -> dict:
        """Every setting as a flat column mapping (for tidy tables). All fields are scalars, so
        no deep copy (dataclasses.asdict) is needed: this runs once per job at DAG build."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
