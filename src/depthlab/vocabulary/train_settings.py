"""Settings of a training study (optimiser, schedule, checkpoints), and which studies train.

Light (no torch): the Snakefile reads it at parse time. A study with a `training:` block is a
training study: its jobs are trained on the corpus (workflow/rules/train.smk) instead of
measured at initialisation; the model itself is still described by `RunSettings`. Each training
key is declared once, in its field, as a run setting is (`train_setting`: a Key with its
meaning, summary, bounds and choices); TrainSettings.check enforces them (check_declared, as
RunSettings.check), and depthlab.planner.generated writes the schema's `training:` properties
and config/README.md's table of the training keys from them (a test checks they are current).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from depthlab.vocabulary.corpus import CORPUS_VOCAB
from depthlab.vocabulary.settings import (
    ConfigError,
    Key,
    RunSettings,
    check_declared,
    declarations,
    declared,
    reject_unknown_keys,
)

SCHEDULES = ("cosine", "constant")
# mixed precision of the training step: off, or its forward and loss in bfloat16 (torch.autocast)
AUTOCASTS = ("off", "bfloat16")
# the one group of the training keys (config/README.md's table of them), beside the run
# settings' GROUPS (model, probe, execution), whose tables hold RunSettings' fields only
TRAINING = "training"


def train_setting(default, meaning: str, **declaration):
    """A TrainSettings field with its default and its declaration, as `setting` declares a run
    setting (summary, least, above, most, below, values, choices: the Key's fields), in the
    training keys' group: `steps: int = train_setting(300, "optimiser updates", least=1)`."""
    return declared(default, Key(meaning, TRAINING, **declaration))


@dataclass(frozen=True)
class TrainSettings:
    """How one training run goes: AdamW, a linear warmup then a schedule, probe checkpoints.

    Steps count optimiser updates; checkpoint k probes the weights after k updates. Each field
    is declared with `train_setting(default, meaning, ...)`; the rows carry the fields as
    columns in this order (as_columns).
    """

    steps: int = train_setting(300, "optimiser updates", least=1)
    lr: float = train_setting(1e-3, "peak AdamW learning rate",
                              summary="peak learning rate of AdamW", above=0)
    warmup_steps: int = train_setting(
        0,
        "linear warmup: update k (from 0) uses lr·(k+1)/(warmup_steps+1) for k < warmup_steps;"
        " 0 = off",
        summary="linear warmup steps (at most steps)",
        least=0,
        values="0 to `steps`",
    )
    schedule: str = train_setting(
        "cosine",
        "after the warmup: `cosine` from lr down to lr·`min_lr_ratio` at the last update, or "
        "`constant`",
        summary="learning-rate schedule after the warmup",
        choices=SCHEDULES,
    )
    min_lr_ratio: float = train_setting(
        0.1, "end of the cosine, relative to lr",
        summary="the cosine schedule's final learning rate / lr", least=0, most=1)
    weight_decay: float = train_setting(
        0.1, "AdamW decay of every matrix (embeddings, block weights, head); biases and "
        "LayerNorms none", summary="AdamW's decoupled weight decay", least=0)
    beta1: float = train_setting(0.9, "AdamW's beta1: the decay of its mean of the gradients",
                                 summary="AdamW's beta1", least=0, below=1)
    beta2: float = train_setting(
        0.99, "AdamW's beta2: the decay of its mean of the squared gradients",
        summary="AdamW's beta2", least=0, below=1)
    eps: float = train_setting(
        1e-8, "AdamW's eps: added to the root of the mean of the squared gradients",
        summary="AdamW's eps", above=0, most=1)
    val_fraction: float = train_setting(
        0.1,
        "the share of the characters, the last ones, that are the validation split (0.1: the "
        "last 10%)",
        summary="share of the corpus held out for validation",
        above=0,
        below=1,
    )
    eval_every: int = train_setting(
        25, "validation loss every this many steps (and at every checkpoint)",
        summary="steps between validation losses", least=1)
    eval_batches: int = train_setting(
        4, "fixed validation batches (of `batch` sequences) behind each validation loss",
        summary="batches per validation loss", least=1)
    probe_batch: int = train_setting(
        4, "sequences in the fixed validation batch the probes read",
        summary="sequences the probes read at each checkpoint", least=1)
    checkpoints: tuple[int, ...] = train_setting(
        (0, 10, 30, 100, 300),
        "steps at which every probe runs (0 = initialisation; the last step always)",
        summary="steps after which the probes read the weights (0 = at init)",
        least=0,
        values="increasing, from 0 to at most `steps`",
    )
    autocast: str = train_setting(
        "off",
        "`bfloat16`: the forward pass and loss of each training step run under "
        "`torch.autocast` in bfloat16 (mixed precision: weights, AdamW, the probes and the "
        "validation loss stay in `dtype`)",
        summary="the training step's forward and loss in bfloat16 under torch.autocast "
                "(weights, optimiser, probes and validation stay in dtype)",
        choices=AUTOCASTS,
    )
    update_steps: int = train_setting(
        1,
        "`relative_update`, the output's change from initialisation ||F(θ_t) − F(θ_0)|| / "
        "||F(θ_0)|| on the probe batch, after each of the first this many updates (DeepNet's "
        "model update, Wang et al. 2022, Fig. 5; 1: after the first only)",
        summary="updates after which the output's change from initialisation is recorded",
        least=1,
        values="1 to `steps`",
    )

    @classmethod
    def from_mapping(cls, values: dict, where: str = "training") -> TrainSettings:
        """Build from a config mapping, rejecting unknown keys and bad values."""
        reject_unknown_keys(cls, values, where)
        values = dict(values)
        if "checkpoints" in values:
            if not isinstance(values["checkpoints"], list | tuple):
                raise ConfigError(f"{where}: checkpoints={values['checkpoints']!r} must be a list "
                                  "of increasing steps from 0")
            values["checkpoints"] = tuple(values["checkpoints"])
        settings = cls(**values)
        settings.check(where)
        return settings

    def check(self, where: str = "training") -> None:
        """Raise ConfigError naming the first key whose value is invalid: the choices and
        bounds of the declarations (check_declared), then the rules between keys."""
        check_declared(self, where)
        for key in ("warmup_steps", "update_steps"):  # counts of updates, at most them all
            if getattr(self, key) > self.steps:
                raise ConfigError(
                    f"{where}: {key}={getattr(self, key)!r} must be an integer in "
                    f"[{TRAIN_KEYS[key].least}, steps={self.steps}]"
                )
        ks = self.checkpoints
        if not ks or any(isinstance(k, bool) or not isinstance(k, int) for k in ks) or (
            list(ks) != sorted(set(ks)) or ks[0] != 0 or ks[-1] > self.steps
        ):
            raise ConfigError(
                f"{where}: checkpoints={list(ks)!r} must be increasing integers from 0 to at "
                f"most steps={self.steps}"
            )

    @property
    def probe_steps(self) -> tuple[int, ...]:
        """The steps probed: the checkpoints, and the last step always."""
        return tuple(sorted({*self.checkpoints, self.steps}))

    def lr_factor(self, step: int) -> float:
        """Learning rate of update `step` (counted from 0) relative to `lr`: a linear warmup
        (step+1)/(warmup_steps+1) over the first warmup_steps updates, then constant, or a
        cosine from 1 down to min_lr_ratio at the last update."""
        if step < self.warmup_steps:
            return (step + 1) / (self.warmup_steps + 1)
        if self.schedule == "constant":
            return 1.0
        span = max(self.steps - 1 - self.warmup_steps, 1)
        cosine = 0.5 * (1 + math.cos(math.pi * (step - self.warmup_steps) / span))
        return self.min_lr_ratio + (1 - self.min_lr_ratio) * cosine

    def as_columns(self) -> dict:
        """Every training setting as a flat column mapping (checkpoints as a string)."""
        cols = dataclasses.asdict(self)
        cols["checkpoints"] = ",".join(map(str, self.checkpoints))
        return cols


def is_training_study(spec: dict) -> bool:
    """Whether a study's config block asks for training (it has a `training:` block)."""
    return "training" in spec


def check_model(s: RunSettings, vocab_size: int | None = CORPUS_VOCAB,
                where: str = "settings") -> None:
    """A training model predicts the next character: cross-entropy over the vocabulary (of
    `vocab_size` characters; None: not known yet, so only the loss is checked). Its checkpoints
    take the probes of one pass, not those that run the model again (jacobian_dirs, update_lr:
    probes at initialisation)."""
    for key in ("jacobian_dirs", "update_lr"):
        if getattr(s, key):
            raise ConfigError(f"{where}: {key}={getattr(s, key)!r} is a probe at initialisation; "
                              "a training study's checkpoints do not take it (set it to 0)")
    if s.loss != "cross_entropy" or vocab_size not in (None, s.head_classes):
        raise ConfigError(
            f"{where}: a training study needs loss='cross_entropy' and head_classes="
            f"{vocab_size} (the corpus vocabulary), got loss={s.loss!r}, "
            f"head_classes={s.head_classes}"
        )


def arm_training(config: dict, study: str, arm: str) -> TrainSettings:
    """The training settings of one arm: the study's `training:` block updated by the arm's."""
    spec = config["studies"][study]
    values = {**spec.get("training", {}), **spec["arms"][arm].get("training", {})}
    return TrainSettings.from_mapping(values, f"studies.{study}.arms.{arm}.training")


def training_arms(config: dict, jobs) -> dict[tuple[str, str], TrainSettings]:
    """The training settings of every arm of every training study, keyed by (study, arm);
    raises ConfigError on a bad training value, on an arm `training:` block outside a training
    study, or on a training cell whose model is not a next-character model."""
    arms = {}
    for study, spec in config["studies"].items():
        for arm, arm_spec in spec["arms"].items():
            if is_training_study(spec):
                arms[(study, arm)] = arm_training(config, study, arm)
            elif "training" in arm_spec:
                raise ConfigError(f"studies.{study}.arms.{arm}.training: the study has no "
                                  "training: block, so it is measured at initialisation")
    # another corpus (its own corpus_sha256) has a vocabulary known only once it is read: the
    # train job checks head_classes against it then
    vocab = None if config.get("corpus_sha256") else CORPUS_VOCAB
    for job in jobs:
        if (job.study, job.arm) in arms:
            for cell in job.cells:
                check_model(cell.settings, vocab, f"studies.{job.study}.arms.{job.arm}")
    return arms


# every training key's declaration, in declaration order (an undeclared field: an error here)
TRAIN_KEYS: dict[str, Key] = declarations(TrainSettings)
