"""Settings of a training study (optimiser, schedule, checkpoints), and which studies train.

Light (no torch): the Snakefile reads it at parse time. A study with a `training:` block is a
training study: its jobs are trained on the corpus (workflow/rules/train.smk) instead of
measured at initialisation; the model itself is still described by `RunSettings`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from depthlab.vocabulary.corpus import CORPUS_VOCAB
from depthlab.vocabulary.settings import ConfigError, RunSettings, reject_unknown_keys

SCHEDULES = ("cosine", "constant")
# mixed precision of the training step: off, or its forward and loss in bfloat16 (torch.autocast)
AUTOCASTS = ("off", "bfloat16")


@dataclass(frozen=True)
class TrainSettings:
    """How one training run goes: AdamW, a linear warmup then a schedule, probe checkpoints.

    Steps count optimiser updates; checkpoint k probes the weights after k updates.
    """

    steps: int = 300
    lr: float = 1e-3
    warmup_steps: int = 0
    schedule: str = "cosine"
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-8
    val_fraction: float = 0.1
    eval_every: int = 25
    eval_batches: int = 4
    probe_batch: int = 4
    checkpoints: tuple[int, ...] = (0, 10, 30, 100, 300)
    autocast: str = "off"

    @classmethod
    def from_mapping(cls, values: dict, where: str = "training") -> TrainSettings:
        """Build from a config mapping, rejecting unknown keys and bad values."""
        reject_unknown_keys(cls, values, where)
        values = dict(values)
        if "checkpoints" in values:
            values["checkpoints"] = tuple(values["checkpoints"])
        settings = cls(**values)
        settings.check(where)
        return settings

    def check(self, where: str = "training") -> None:
        """Raise ConfigError naming the first key whose value is invalid."""
        for key in ("steps", "eval_every", "eval_batches", "probe_batch"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{where}: {key}={value!r} must be a positive integer")
        if isinstance(self.warmup_steps, bool) or not isinstance(self.warmup_steps, int) or not (
            0 <= self.warmup_steps <= self.steps
        ):
            raise ConfigError(
                f"{where}: warmup_steps={self.warmup_steps!r} must be an integer in "
                f"[0, steps={self.steps}]"
            )
        if self.autocast not in AUTOCASTS:
            raise ConfigError(
                f"{where}: autocast={self.autocast!r} is not one of {list(AUTOCASTS)}"
            )
        if self.schedule not in SCHEDULES:
            raise ConfigError(
                f"{where}: schedule={self.schedule!r} is not one of {list(SCHEDULES)}"
            )
        bounds = {
            "lr": (0, math.inf), "min_lr_ratio": (0, 1), "weight_decay": (0, math.inf),
            "beta1": (0, 1), "beta2": (0, 1), "eps": (0, 1), "val_fraction": (0, 1),
        }
        for key, (lo, hi) in bounds.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                lo <= value <= hi
            ) or (key in ("lr", "eps", "val_fraction") and value == 0):
                raise ConfigError(f"{where}: {key}={value!r} must be a number in [{lo}, {hi}]")
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
