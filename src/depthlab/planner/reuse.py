"""Cells measured once: a cell whose numbers another job's cell already gives is copied from
that job's shard instead of being measured again (e.g. stack96's stream arm at output scale 1 is
its grad arm's Pre-LN cells; monitor's Post-LN cells without a final norm are stack96's).

Two cells give the same numbers when every setting that enters the computation is equal (the
final norm as resolved, the seed batches as resolved: an own block's seeds one at a time,
whatever the pass plan of a built-in would be). What is probed may differ: a cell that
takes no gradients (grad_of none) reads every forward probe of one that does, whose values are
the same (autograd changes no forward number), and a cell without the pairwise block
correlations, the Jacobian probe (jacobian_dirs) or the update probe (update_lr) reads one with
them (with the same directions; the same learning rate and the same first step,
update_optimizer and update_params: an update is never read from another optimiser's or from
a step of other parameters). The owner of a group of such cells is the one with the most
probes (then the first in config order); it is measured, the others copy its rows. Calibrated
arms (their numbers depend on a calibration) and training studies are never shared.
"""

from __future__ import annotations

import dataclasses
import json

from depthlab.planner.cost import seeds_per_pass
from depthlab.vocabulary.jobs import Job
from depthlab.vocabulary.paths import SHARD
from depthlab.vocabulary.settings import RunSettings

# settings that say what is probed, not what is computed
PROBE_OPTIONS = ("grad_of", "block_corr", "jacobian_dirs", "update_lr", "update_optimizer",
                 "update_params")
# settings that say how the seeds are split into passes (the split itself is in the key)
SPLIT_OPTIONS = ("seed_batch", "pass_mb")


FLOATS = {f.name for f in dataclasses.fields(RunSettings) if f.type == "float"}


def numbers_key(s: RunSettings) -> str:
    """The settings that fix every number of a cell's forward pass and its seed batches (a
    scale written 1 is the scale 1.0)."""
    values = {k: float(v) if k in FLOATS else v for k, v in s.as_columns().items()
              if k not in PROBE_OPTIONS + SPLIT_OPTIONS}
    values["final_norm"] = s.uses_final_norm
    values["seeds_per_pass"] = seeds_per_pass(s)  # an own block's: 1, whatever seed_batch says
    return json.dumps(values, sort_keys=True)


def _step(s: RunSettings) -> tuple:
    """What the update probe's first step is: its learning rate, optimiser and parameters."""
    return s.update_lr, s.update_optimizer, s.update_params


def covers(owner: RunSettings, reader: RunSettings) -> bool:
    """Whether the owner's rows hold every probe the reader's cell would measure (an update
    only from a step of the same optimiser at the same learning rate on the same parameters)."""
    gradients = reader.grad_of in ("none", owner.grad_of)
    update = not reader.update_lr or (
        _step(reader) == _step(owner))
    return (gradients and (owner.block_corr or not reader.block_corr)
            and reader.jacobian_dirs in (0, owner.jacobian_dirs) and update)


def _rank(s: RunSettings) -> tuple[bool, ...]:
    return s.grad_of != "none", s.block_corr, bool(s.jacobian_dirs), bool(s.update_lr)


@dataclasses.dataclass(frozen=True)
class Source:
    """Where a copied cell's rows come from: a job's shard and the cell label in it."""

    study: str
    arm: str
    job: str
    label: str

    @property
    def shard(self) -> str:
        return SHARD.format(study=self.study, arm=self.arm, job=self.job)


def reuse(jobs: list[Job], excluded: set[tuple[str, str]]) -> dict[tuple, dict[str, Source]]:
    """For every job (study, arm, job id), the cells it copies: label -> Source; the arms in
    `excluded` (calibrated, trained) neither copy nor lend."""
    cells = [(j, c) for j in jobs if (j.study, j.arm) not in excluded for c in j.cells]
    order = {id(c): i for i, (_, c) in enumerate(cells)}
    groups: dict[str, list] = {}
    for job, cell in cells:
        groups.setdefault(numbers_key(cell.settings), []).append((job, cell))
    copies: dict[tuple, dict[str, Source]] = {}
    for members in groups.values():
        for job, cell in members:
            owners = [(j, c) for j, c in members if covers(c.settings, cell.settings)]
            owner_job, owner = max(owners, key=lambda m: (*_rank(m[1].settings),
                                                          -order[id(m[1])]))
            if owner is not cell:
                copies.setdefault((job.study, job.arm, job.job), {})[cell.label] = Source(
                    owner_job.study, owner_job.arm, owner_job.job, owner.label)
    return copies


def owner_shards(sources) -> list[str]:
    """The shards the cells of one job copy from (Source.shard of each), sorted: the order of
    the measure rule's `owners` input, so the job pairs each input with its source by position
    (a host workflow's module `prefix:` changes the paths, not the order)."""
    return sorted({source.shard for source in sources})
