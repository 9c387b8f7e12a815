"""The job catalogue of one config: its jobs, arms, targets and the files each stage reads.

The Snakemake rules ask it which shards a fit reads, which fits a target or the ledger reads and
what `rule all` builds; the paths come from depthlab.vocabulary.paths.
"""

from __future__ import annotations

from depthlab.vocabulary.jobs import Job
from depthlab.vocabulary.paths import FIT, LEDGER, TABLE
from depthlab.vocabulary.targets import Target
from depthlab.vocabulary.variants import caption_note, order, own_key


def unshared(config: dict) -> set[tuple[str, str]]:
    """The (study, arm) pairs whose cells are neither copied nor lent
    (depthlab.planner.reuse): calibrated arms, whose numbers depend on a calibration, and
    every arm of a training study."""
    return {(study, arm) for study, spec in config["studies"].items()
            for arm, arm_spec in spec["arms"].items()
            if "calibrate_from" in arm_spec or "training" in spec}


class Catalogue:
    """The jobs of a checked config (depthlab.planner.validate.check_config), the declared
    `targets` and the claims entries (config/claims.yaml's `claims:` list)."""

    def __init__(self, config: dict, jobs: list[Job], targets: list[Target],
                 claims: list[dict]):
        self.jobs = {(j.study, j.arm, j.job): j for j in jobs}
        # the arms of each study, in config order
        self.arms = {study: list(spec["arms"]) for study, spec in config["studies"].items()}
        # study -> arm -> setting -> the values its cells take, for the settings targets are `at`
        named = {setting for t in targets for setting, _ in t.at}
        self.grid: dict[str, dict[str, dict[str, set]]] = {}
        for job in jobs:
            values = self.grid.setdefault(job.study, {}).setdefault(job.arm, {})
            for setting in named:
                values.setdefault(setting, set()).update(
                    getattr(c.settings, setting) for c in job.cells)
        # each target of a configured study that reads a configured arm, has those it needs
        # and the grid values it is at
        self.targets = [t for t in targets
                        if t.study in self.arms and t.builds(self.arms[t.study])
                        and not t.off_grid(self.grid.get(t.study, {}))]
        self.claims = claims
        claimed = {entry.get("measure", {}).get("fit") for entry in claims}
        # the fits the ledger reads: its studies that this config fits (none: no ledger)
        self.claim_fits = sorted(claimed & {t.study for t in self.targets})

    def shards(self, study: str, arms: list[str] | None = None) -> list[str]:
        """The shards of a study's jobs, of the given arms only if named."""
        return [j.shard for j in self.jobs.values()
                if j.study == study and (arms is None or j.arm in arms)]

    def study_fits(self, study: str) -> list[str]:
        """The fits of every arm of a study."""
        return [FIT.format(study=study, arm=arm) for arm in self.arms[study]]

    def target_fits(self, target: Target) -> list[str]:
        """The fits a target reads: one per arm it reads."""
        return [FIT.format(study=target.study, arm=arm)
                for arm in target.arms(self.arms[target.study])]

    def ledger_fits(self) -> list[str]:
        """The fits the claims ledger reads."""
        return [path for study in self.claim_fits for path in self.study_fits(study)]

    def seeds_of(self, target: Target) -> str:
        """The seed counts of the cells a target reads, e.g. '6' or '6, 12'."""
        arms = set(target.arms(self.arms[target.study]))
        counts = {c.settings.seeds for j in self.jobs.values()
                  if j.study == target.study and j.arm in arms for c in j.cells}
        return ", ".join(map(str, sorted(counts)))

    def fit_cells(self) -> tuple[dict[str, dict[str, int]], dict[str, set[str]]]:
        """{fit file: {cell label: seeds}} of every fit a target reads, what this config
        measures behind each figure and table, and {fit file: the cell labels of every arm of
        its study} (a fit may read other arms): depthlab.planner.built compares a report's."""
        read = {(t.study, arm) for t in self.targets for arm in t.arms(self.arms[t.study])}
        planned: dict[str, dict[str, int]] = {}
        labels: dict[str, set[str]] = {}  # study -> the cell labels of all its arms
        study_of: dict[str, str] = {}  # fit -> its study
        for j in self.jobs.values():  # one pass over the jobs
            labels.setdefault(j.study, set()).update(c.label for c in j.cells)
            if (j.study, j.arm) in read:
                fit = FIT.format(study=j.study, arm=j.arm)
                study_of[fit] = j.study
                planned.setdefault(fit, {}).update({c.label: c.settings.seeds for c in j.cells})
        return planned, {fit: labels[study] for fit, study in study_of.items()}

    def blocks_of(self, target: Target) -> dict[str, str]:
        """{arm: module:function} of each arm a target reads that is measured with an own block
        (setting `block`; one per arm: a `block` axis is one arm per block,
        depthlab.planner.grid.split_block_axes), for its labels."""
        arms = set(target.arms(self.arms[target.study]))
        return {j.arm: c.settings.block for j in self.jobs.values()
                if j.study == target.study and j.arm in arms for c in j.cells
                if c.settings.block}

    def placements_of(self, target: Target) -> dict[str, list[str]]:
        """{arm: placements} of each arm of an own block a target reads (the placements it
        follows, for its caption)."""
        blocks = self.blocks_of(target)
        out: dict[str, list[str]] = {}
        for j in self.jobs.values():
            if j.study == target.study and j.arm in blocks:
                for c in j.cells:
                    out.setdefault(j.arm, [])
                    if c.settings.placement not in out[j.arm]:
                        out[j.arm].append(c.settings.placement)
        return out

    def placement_keys(self, target: Target) -> list[str]:
        """The placement keys of the cells a target reads (a built-in placement, an own block's
        `<placement>@<block>`: depthlab.vocabulary.variants.own_key), in `order`: those its fits
        hold after with_blocks."""
        arms = set(target.arms(self.arms[target.study]))
        return order({own_key(c.settings.placement, c.settings.block)
                      for j in self.jobs.values() if j.study == target.study and j.arm in arms
                      for c in j.cells})

    def caption(self, target: Target) -> str:
        """A target's report caption: its declared one for the placement keys it reads
        (Target.caption_for), and where it reads own blocks, a sentence naming each
        (depthlab.vocabulary.variants.caption_note)."""
        caption = (target.caption_for(self.placement_keys(target)) if target.per_placement
                   else target.caption)
        note = caption_note(self.blocks_of(target), self.placements_of(target))
        return f"{caption} {note}" if note else caption

    def claims_testing(self, target: Target) -> list[str]:
        """The ids of the claims measured on the arms a target reads (its report caption); not
        one that reads an arm of an own block (the ledger grades none of those: "not
        comparable"), so that a caption never cites a built-in's claim for an own block."""
        arms = set(target.arms(self.arms[target.study]))
        own = {j.arm for j in self.jobs.values()
               if j.study == target.study and any(c.settings.block for c in j.cells)}
        out = []
        for e in self.claims:
            read = {r.get("arm") for r in e.get("measure", {}).get("rows", {}).values()}
            if (e.get("measure", {}).get("fit") == target.study and read & arms
                    and not read & own):
                out.append(e["id"])
        return out

    def provenance_inputs(self) -> list[str]:
        """Every Parquet file the default target makes: each job's shard, each study's table,
        the fits of every arm of the studies that have targets, and the ledger."""
        fitted = sorted({t.study for t in self.targets})
        return ([j.shard for j in self.jobs.values()]
                + [TABLE.format(study=study) for study in self.arms]
                + [path for study in fitted for path in self.study_fits(study)]
                + ([LEDGER["parquet"]] if self.claim_fits else []))

    def all_targets(self) -> list[str]:
        """Every output of every target this config can build, and the claims ledger's when a
        claim can be measured on it."""
        outputs = [path for t in self.targets for path in t.outputs.values()]
        return outputs + (list(LEDGER.values()) if self.claim_fits else [])
