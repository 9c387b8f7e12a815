"""What the engine is handed: a job of cells, each with its settings and its pass plan (how its
seeds are split into passes and whether blocks are drawn as the pass reaches them or recomputed
in the backward pass). The planner (depthlab.planner.grid, .cost) resolves them from a config."""

from __future__ import annotations

import json
from dataclasses import dataclass

from depthlab.vocabulary.paths import SHARD
from depthlab.vocabulary.settings import RunSettings


@dataclass(frozen=True)
class PassPlan:
    """How one cell's seeds are measured: `seeds_per_pass` seeds per forward/backward pass;
    `streamed`: each block drawn when the pass reaches it (depthlab.core.model.StreamedBlocks);
    `recomputes`: the backward pass recomputes one block at a time (depthlab.core.recompute)."""

    seeds_per_pass: int
    streamed: bool
    recomputes: bool

    def chunks(self, seeds: list[int]) -> list[list[int]]:
        """`seeds` split into passes of `seeds_per_pass`, in order."""
        size = self.seeds_per_pass
        return [seeds[i : i + size] for i in range(0, len(seeds), size)]


@dataclass(frozen=True)
class Cell:
    """One grid cell: its label (every axis value of the arm), its settings and its pass plan."""

    label: str
    settings: RunSettings
    plan: PassPlan


@dataclass(frozen=True)
class Job:
    """One measure job: the cells it runs and the shard it writes."""

    study: str
    arm: str
    job: str
    cells: tuple[Cell, ...]

    @property
    def shard(self) -> str:
        return SHARD.format(study=self.study, arm=self.arm, job=self.job)

    def cells_json(self) -> str:
        """The cells as a sorted JSON string: a rule's `params` (a change reruns the job)."""
        return json.dumps(
            [{"label": c.label, **c.settings.as_columns()} for c in self.cells], sort_keys=True
        )
