"""Run settings of one grid cell, each declared once where it is defined, and the checks that
reject a bad one (no torch import).

A setting is one field of RunSettings: its name, type and default, and what `setting(...)`
declares beside them (a Key): its meaning and group (config/README.md's tables: the model, the
probe, the execution), a one-line summary (the
config schema's description), its bounds, which RunSettings.check enforces (check_declared,
which TrainSettings' training keys share), and its allowed values. KEYS and CHOICES are read
from the fields; depthlab.planner.generated writes the schema's settings and config/README.md's
table from them (a test checks they are current)."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from depthlab.vocabulary import hf
from depthlab.vocabulary.inits import INIT_KINDS
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


# the groups of settings: what is built, what is fed to it and measured, how it is computed
MODEL = "model"  # the stack: its placement, size, init and block
PROBE = "probe"  # its input, loss and seeds, and what the probes measure
EXECUTION = "execution"  # where and in which precision and passes it is computed
GROUPS = (MODEL, PROBE, EXECUTION)


@dataclass(frozen=True)
class Key:
    """What a setting declares beside its name, type and default (`setting`; a training key's,
    train_settings.train_setting)."""

    meaning: str  # what it sets (config/README.md; markdown)
    group: str  # one of GROUPS; a training key's, train_settings.TRAINING (config/README.md)
    summary: str = ""  # one line for the config schema's description ("" = the meaning)
    least: float | None = None  # the smallest value allowed (a tuple's: of each item)
    above: float | None = None  # a bound the value must exceed
    most: float | None = None  # the largest value allowed
    below: float | None = None  # a bound the value must stay under
    values: str = ""  # the allowed values in words, where the type and bound do not say it
    also: str = ""  # a JSON type the setting takes beside its own (the config schema)
    choices: tuple = ()  # its fixed set of allowed values (CHOICES; the schema's enum)


def setting(default, meaning: str, *, group: str, summary: str = "",
            least: float | None = None, above: float | None = None,
            most: float | None = None, below: float | None = None, values: str = "",
            also: str = "", choices: tuple = ()):
    """A RunSettings field with its default and its declaration (a Key, the field's
    metadata["key"]): `depth: int = setting(6, "number of blocks L", least=1, group=MODEL)`."""
    if group not in GROUPS:
        raise ValueError(f"setting group={group!r} is not one of {GROUPS}")
    return declared(default, Key(meaning, group, summary, least=least, above=above, most=most,
                                 below=below, values=values, also=also, choices=tuple(choices)))


def declared(default, key: Key):
    """A dataclass field with its default and its declaration `key` (metadata["key"]): what
    `setting` makes of a run setting, and train_settings.train_setting of a training key."""
    return dataclasses.field(default=default, metadata={"key": key})


def declarations(cls: type) -> dict[str, Key]:
    """Each field's Key of dataclass cls (RunSettings, TrainSettings), in declaration order; a
    field declared without one (`setting(default, meaning, ...)`) is an error here, at import."""
    keys = {}
    for f in dataclasses.fields(cls):
        if not isinstance(f.metadata.get("key"), Key):
            raise TypeError(f"{cls.__name__}.{f.name}: declare it with its Key, "
                            "setting(default, meaning, ...)")
        keys[f.name] = f.metadata["key"]
    return keys


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


def interval(key: Key) -> str:
    """The values a number declared by `key` may take, as an interval: `[0, 1]`, `(0, 1)`; no
    lower bound declared: 0, the least of every bounded number."""
    low = f"({key.above:g}" if key.above is not None else f"[{key.least or 0:g}"
    high = (f"{key.most:g}]" if key.most is not None else f"{key.below:g})"
            if key.below is not None else "inf)")
    return f"{low}, {high}"


def _within(value, key: Key) -> bool:
    """Whether number `value` keeps the bounds of `key` (no lower bound declared: at least 0)."""
    return ((value > key.above if key.above is not None else value >= (key.least or 0))
            and (key.most is None or value <= key.most)
            and (key.below is None or value < key.below))


def check_declared(settings, where: str) -> None:
    """ConfigError for the first field of dataclass `settings` (RunSettings, TrainSettings), in
    declaration order, whose value is not one of its Key's `choices`; then for the first whose
    value is not of its default's type (true or false; an integer; a finite number) or breaks
    its Key's bounds (`least`, `above`, `most`, `below`), from those declarations alone. A
    field of another type (a string without choices, a tuple) is its class's `check`'s."""
    fields = dataclasses.fields(settings)
    for field in fields:
        value, allowed = getattr(settings, field.name), field.metadata["key"].choices
        if allowed and value not in allowed:
            raise ConfigError(f"{where}: {field.name}={value!r} is not one of {list(allowed)}")
    for field in fields:
        name, value, bound = field.name, getattr(settings, field.name), field.metadata["key"]
        upper = bound.most is not None or bound.below is not None
        if isinstance(field.default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: {name}={value!r} must be true or false")
        elif isinstance(field.default, int):
            least = bound.least or 0
            if isinstance(value, bool) or not isinstance(value, int) or value < min(least, 1):
                kind = "positive" if least >= 1 else "non-negative"
                raise ConfigError(f"{where}: {name}={value!r} must be a {kind} integer")
            if upper and not _within(value, bound):
                raise ConfigError(f"{where}: {name}={value!r} must be an integer in "
                                  f"{interval(bound)}")
            if value < least:
                raise ConfigError(f"{where}: {name}={value!r} must be at least {least:g}")
        elif isinstance(field.default, float):
            number = not isinstance(value, bool) and isinstance(value, int | float)
            if not (number and math.isfinite(value) and _within(value, bound)):
                kind = "positive" if bound.above is not None else "non-negative"
                raise ConfigError(f"{where}: {name}={value!r} must be " + (
                    f"a number in {interval(bound)}" if upper else f"a {kind} finite number"))


@dataclass(frozen=True)
class RunSettings:
    """Everything that defines one measurement: model, input, loss and seeds.

    Defaults reproduce the stack96 note (see config/README.md for the reason of each). Each
    field is declared with `setting(default, meaning, ...)` (its Key: documentation, bound,
    choices); add a field after the others, as the rows' columns follow this order.
    """

    placement: str = setting(
        "pre",
        "where the LayerNorms and the residual sit (`src/depthlab/vocabulary/placements.py`, "
        "each with its paper)",
        summary="where the LayerNorms and the residual sit (depthlab.vocabulary.placements)",
        choices=tuple(PLACEMENTS),
        group=MODEL,
    )
    depth: int = setting(6, "number of blocks L", least=1, group=MODEL)
    d_model: int = setting(128, "width d", least=1, group=MODEL)
    heads: int = setting(
        4,
        "attention heads",
        summary="attention heads (must divide d_model)",
        least=1,
        values="divides d_model",
        group=MODEL,
    )
    ffn_mult: int = setting(4, "FFN hidden width / d", least=1, group=MODEL)
    activation: str = setting("relu", "FFN non-linearity", choices=ACTIVATIONS, group=MODEL)
    attention: str = setting(
        "linear",
        "whose initialisation the attention weights follow (the maths is the same): four "
        "`nn.Linear(d, d)` with biases, or `nn.MultiheadAttention` (xavier-uniform "
        "in-projection, zero biases)",
        summary="whose init the attention weights follow (four nn.Linear, or "
                "nn.MultiheadAttention)",
        choices=ATTENTIONS,
        group=MODEL,
    )
    causal: bool = setting(True, "causal attention mask", group=MODEL)
    init: str = setting(
        "torch_default",
        "`torch_default`: what `nn.Linear` / `nn.MultiheadAttention` draw; `fan_in`: weights "
        "N(0, 1/fan_in), zero biases; `normal`: weights N(0, 0.02²) (GPT-2's, BERT's), zero "
        "biases; `gpt2`: `normal` with W_o and W_2 at std 0.02/√(2L) (GPT-2's scaled residual"
        " init); `xavier`: `xavier_normal_` gain 1, zero biases; `fairseq`: fairseq's "
        "attention init (W_q, W_k, W_v `xavier_uniform_` gain 1/√2, W_o gain 1, b_o zero) over"
        " the default draw of the other weights and biases. `normal`, `gpt2`, `xavier` and "
        "`fairseq` are drawn after the default draw from the seed's own-init generator, so the"
        " input and target are those of `torch_default` (paired). `paper`: the placement's "
        "paper init (its registry entry's `paper_init`, from its official code), which sets "
        "`init` and `bias` (the rows record them); a placement without one rejects it. "
        "Placements with their own init (`deepnorm`, `deepnorm_beta`, `t_fixup`, ...) need "
        "`torch_default` (or `paper`, the same)",
        summary=(
            "torch_default (what nn.Linear draws), fan_in (N(0, 1/fan_in)), normal (N(0, "
            "0.02^2)), gpt2 (normal, W_o and W_2 at 0.02/sqrt(2L)), xavier (xavier_normal_), "
            "fairseq (fairseq's attention init) or paper (the placement's paper's, sets bias "
            "too); fan_in, normal, gpt2 and xavier zero the biases, fairseq b_o only"
        ),
        choices=INITS,
        group=MODEL,
    )
    bias: bool = setting(
        True,
        "the blocks' linear maps have biases; `false`: they are drawn (so the weights are "
        "those of the cell with biases) and then left out: no bias in the forward pass, none "
        "in the gradient or the optimiser (the official LN-Scaling code has none); "
        "`init: paper` sets it to the paper's",
        summary=(
            "the blocks' linear maps have biases (false: drawn, to keep the weights paired, then "
            "left out)"
        ),
        group=MODEL,
    )
    out_scale: float = setting(
        1.0,
        "multiplies the initial weights of the attention output projection Wo and the second "
        "FFN matrix W2 (not their biases)",
        summary="multiplies the initial attention output projection Wo and second FFN matrix W2",
        above=0,
        group=MODEL,
    )
    residual_scale: float = setting(
        1.0,
        "Pre-LN only: multiplies both branch outputs before they join the stream",
        summary="multiplies both branch outputs before they join the stream",
        above=0,
        group=MODEL,
    )
    skip_scale: float = setting(
        1.0,
        "multiplies the skip path of every sublayer, as DeepNorm's alpha: Pre-LN h = c·x + "
        "a(LN(x)), Post-LN h = LN(c·x + a(x)); not with `none`",
        summary="multiplies the skip path of every sublayer (as DeepNorm's alpha)",
        above=0,
        group=MODEL,
    )
    final_norm: str = setting(
        "auto",
        "a LayerNorm between the last block and the loss; `auto` = Pre-LN only",
        summary="a LayerNorm between the last block and the loss (auto = the placement's own)",
        choices=FINAL_NORMS,
        group=MODEL,
    )
    dtype: str = setting("float64", "precision of weights and activations", choices=DTYPES,
                         group=EXECUTION)
    device: str = setting(
        "cpu",
        "where the run executes (weights and inputs are drawn on the CPU first, so numbers do"
        " not depend on it beyond round-off)",
        summary="where the run executes",
        choices=DEVICES,
        group=EXECUTION,
    )
    batch: int = setting(1, "sequences per seed", least=1, group=PROBE)
    tokens: int = setting(128, "sequence length", least=2, group=PROBE)
    loss: str = setting(
        "mse",
        "MSE to N(0, 1) targets; or a linear head to `head_classes` classes with uniform "
        "random class targets",
        summary="MSE to N(0, 1) targets, or cross-entropy of a linear head",
        choices=LOSSES,
        group=PROBE,
    )
    head_classes: int = setting(64, "classes of the cross-entropy head", least=2, group=PROBE)
    grad_of: str = setting(
        "params",
        "the \"layer gradient\": Frobenius norm over all parameters of the block (LayerNorm "
        "gains and biases included), over its six weight matrices only, or of the gradient at"
        " the block's input stream; `none`: no backward pass and no gradient probes (a "
        "forward-only study, about 3x faster)",
        summary="the layer gradient (all block parameters, its weight matrices, its input) or none",
        choices=GRAD_OF,
        group=PROBE,
    )
    seeds: int = setting(6, "seeds per cell", least=1, group=PROBE)
    seed_offset: int = setting(
        0,
        "seed i of a cell is `torch.manual_seed(seed_offset + i)` "
        "(`depthlab.vocabulary.settings.run_seed`)",
        summary="seed i of a cell is torch.manual_seed(seed_offset + i)",
        least=0,
        group=PROBE,
    )
    seed_batch: int = setting(
        0,
        "seeds per batched pass (0 = as many as `pass_mb` allows); lower it when memory is "
        "tight",
        summary="seeds per batched pass (0 = as many as pass_mb allows)",
        least=0,
        group=EXECUTION,
    )
    pass_mb: int = setting(
        2500,
        "with `seed_batch` 0: the seeds are split into the fewest equal passes whose "
        "estimated memory (`depthlab.planner.cost.pass_bytes`, 1.5x to 2x what a pass holds) "
        "stays under this many MB; 0 = all seeds in one pass. The default splits stack96's L "
        "= 96 cells into 2 passes of 3 seeds (1.4 GB instead of 2.4) and leaves L ≤ 48 whole,"
        " where splitting costs about 10%; the numbers do not change with the split (bit for "
        "bit in passes of 2 to 6 seeds, to round-off, 1e-14, in a pass of one seed: tested)",
        summary="memory bound of one batched pass in MB (0 = all seeds in one pass)",
        least=0,
        group=EXECUTION,
    )
    block_corr: bool = setting(
        False,
        "Pre-LN only: also record corr(f_i, f_j) of every pair of block outputs, L(L−1)/2 "
        "values per seed (theory096); off elsewhere to keep tables small",
        summary="also record the correlation of every pair of block outputs (theory096)",
        group=PROBE,
    )
    jacobian_dirs: int = setting(
        0,
        "k > 0: also record the input-output Jacobian J = d(head input)/dx per seed (ReZero's"
        " dynamical isometry, Bachlechner et al. 2020): `jacobian_rms_sv`, sqrt of the "
        "Hutchinson estimate of the mean squared singular value over k Gaussian directions, "
        "and `jacobian_max_sv`, the largest singular value after k power-iteration steps on "
        "JᵀJ (a lower bound); about 3k + 1 extra forward passes and twice the saved "
        "activations (`depthlab.core.response.jacobian`); needs every block held (not with "
        "`grad_of: none` or a recomputed pass)",
        summary=(
            "also record the input-output Jacobian's rms and largest singular value from this "
            "many random directions and power-iteration steps (0 = off)"
        ),
        least=0,
        group=PROBE,
    )
    update_lr: float = setting(
        0.0,
        "lr > 0: also record how far the first step from init of `update_optimizer` at this "
        "learning rate moves the head input, `model_update`, and the stream after each block, "
        "`update_stream` (rms, input-sd units; DeepNet's bounded update, Wang et al. 2022); "
        "about 4 extra forward passes (`depthlab.core.response.model_update`); needs every "
        "block held, as `jacobian_dirs`",
        summary=(
            "also record how far the first optimiser step at this learning rate moves the head "
            "input and the stream (0 = off)"
        ),
        least=0,
        group=PROBE,
    )
    update_optimizer: str = setting(
        "adam",
        "the first step the update probe (`update_lr`) takes: `adam`, Adam's first step, "
        "Δθ = −lr·g/(abs(g) + 1e-8) ≈ −lr·sign(g) on every parameter (a step of lr whatever "
        "the gradient); `sgd`, Δθ = −lr·g (the linear response DeepNet's bound is about); g "
        "the same gradient of the loss in every parameter "
        "(`depthlab.core.response.first_step`); `sgd` needs `update_lr` > 0",
        summary=(
            "the update probe's first step: adam (−lr·g/(|g| + 1e-8), about −lr·sign(g)) or "
            "sgd (−lr·g)"
        ),
        choices=UPDATE_OPTIMIZERS,
        group=PROBE,
    )
    update_params: str = setting(
        "all",
        "which parameters the update probe's first step (`update_lr`) moves: `all`, every "
        "parameter (the blocks' weights, biases, LayerNorms, gates, and the final LN and "
        "head); `weights`, the six weight matrices of each block (W_q, W_k, W_v, W_o, W_1, "
        "W_2: the θ of DeepNet's bound, Wang et al. 2022, sec. 4); `sublayer`, those and the "
        "linear maps' biases (no norm, gate or head). The others keep their init; the "
        "gradient is that of the same loss (`depthlab.core.response.first_step`), as "
        "`grad_of` picks the parameters of the layer gradient; not `all` needs `update_lr` > 0"
        " and weights that get a gradient at init (not ReZero's)",
        summary="the parameters the update probe's first step moves: all, weights (the six "
                "weight matrices of each block) or sublayer (and their biases)",
        choices=UPDATE_PARAMS,
        group=PROBE,
    )
    block: str = setting(
        "",
        "your own block instead of the placement's: a factory called as `function(settings)` "
        "once per block under the seed's generator, returning an `nn.Module` that maps the "
        "stream (batch, tokens, d) to the stream; its sublayers are recorded where it marks "
        "them (`depthlab_points`), and `placement` names the built-in whose final norm and "
        "telescoping it follows (`depthlab.core.own_block`; README, \"Your own block\"). Or a "
        "Hugging Face decoder layer, `{hf: llama}` with overrides of the family's config "
        "(\"A Hugging Face layer as the block\" below). MSE loss, `grad_of` params, weights or "
        "none",
        summary=(
            "your own block: 'module:function', a factory of an nn.Module "
            "(depthlab.core.own_block), or {hf: <family>, <config key>: <value>}, a Hugging Face "
            "decoder layer (depthlab.core.hf_layers); empty = the placement's built-in block"
        ),
        values="`module:function`, `{hf: <family>}`",
        also="object",
        group=MODEL,
    )

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

    def check(self, where: str = "settings") -> None:
        """Raise ConfigError naming the first key whose value is invalid: the choices and
        bounds of the declarations (check_declared), then the rules between settings."""
        check_declared(self, where)
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


# every setting's declaration, and the allowed values of each that has a fixed set (the
# schema's enums: a test), both in declaration order
KEYS: dict[str, Key] = declarations(RunSettings)
CHOICES: dict[str, tuple] = {name: key.choices for name, key in KEYS.items() if key.choices}
