"""The fan-out: which jobs a config asks for, and which cells each job measures (no torch).

A study has base `settings` and named `arms`; an arm crosses the lists in its `axes`. Every
combination is a cell. Axes named in the arm's `pack` list are looped inside one job, the others
each give a job of their own, so a job is (study, arm, job id) and writes one Parquet shard. A
`block` axis is one arm per block (`split_block_axes`), so that each block is fitted on its own.
"""

from __future__ import annotations

import copy
import itertools
import json

from depthlab.planner.cost import pass_plan
from depthlab.vocabulary.jobs import Cell, Job
from depthlab.vocabulary.placements import PLACEMENT_SETS, placement_set
from depthlab.vocabulary.settings import ConfigError, RunSettings
from depthlab.vocabulary.variants import arm_names


def cell(label: str, settings: RunSettings) -> Cell:
    """The cell of `settings` with the pass plan the cost model resolves for it."""
    return Cell(label, settings, pass_plan(settings))


def job_from_json(study: str, arm: str, job: str, cells: str) -> Job:
    """The job a rule describes by its wildcards and its `cells` param (Job.cells_json)."""
    return Job(study, arm, job, tuple(
        cell(c.pop("label"), RunSettings(**c)) for c in json.loads(cells)
    ))


def _fmt(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def job_id(values: dict) -> str:
    """A readable, path-safe id for the non-packed axis values, e.g. 'placement-pre_depth-96'."""
    if not values:
        return "all"
    return "_".join(f"{k}-{_fmt(v)}" for k, v in values.items())


def expand_axes(axes: dict) -> dict:
    """An arm's axes with a named set of placements (`placement: all`, `weighted`, ...:
    depthlab.vocabulary.placements.PLACEMENT_SETS) replaced by its placements (written once, in
    the registry, instead of copied into every config)."""
    named = axes.get("placement")
    if isinstance(named, str):
        if named not in PLACEMENT_SETS:
            raise ConfigError(f"axes.placement={named!r} is not a list nor one of "
                              f"{list(PLACEMENT_SETS)}")
        return {**axes, "placement": placement_set(named)}
    return axes


def _check_axes(where: str, axes) -> None:
    if not isinstance(axes, dict) or not axes:
        raise ConfigError(f"{where}.axes: an arm needs at least one axis, got {axes!r}")
    for key, values in axes.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}.axes.{key}: must be a non-empty list, got {values!r}")
        if len({repr(v) for v in values}) != len(values):
            raise ConfigError(f"{where}.axes.{key}: duplicate values in {values!r}")


def split_arms(spec: dict) -> dict:
    """A study's arms (`spec`, its config) with each arm's `block` axis split into one arm per
    block, in the axis's order where the arm stood (named by variants.arm_names: the built-in
    keeps the arm's name where the arm measures it without the axis): each the arm with that
    block as a setting and the axis dropped (from `pack` too; an arm whose only axis it was
    keeps its placement as one). A `placement` axis varies the built-in block only: an own
    block has no placement, and is measured once at the arm's `placement` setting (which names
    the final norm it is read through), so that built-in placements stand beside own blocks in
    one arm. The fits are computed per arm, some across an arm's cells (a slope across depths),
    so the blocks' rows never merge. The arms without one are as given."""
    arms = spec.get("arms") or {}
    if not any("block" in ((a or {}).get("axes") or {}) for a in arms.values()):
        return arms
    study_block = (spec.get("settings") or {}).get("block", "")
    out = {}
    for arm, arm_spec in arms.items():
        axes = (arm_spec or {}).get("axes") or {}
        if not isinstance(axes.get("block"), list):
            out[arm] = arm_spec
            continue
        settings = dict(arm_spec.get("settings") or {})
        measured = settings.get("block", study_block)
        placement = settings.get(
            "placement", (spec.get("settings") or {}).get("placement", RunSettings().placement))
        rest = {k: v for k, v in axes.items() if k != "block"} or {"placement": [placement]}
        for name, block in zip(arm_names(arm, axes["block"], measured), axes["block"],
                               strict=True):
            own = {**rest, "placement": [placement]} if block and "placement" in rest else rest
            one = copy.deepcopy({**arm_spec, "axes": own})
            if block or measured:
                one["settings"] = {**settings, "block": block}
            if "pack" in arm_spec:
                one["pack"] = [k for k in arm_spec["pack"] if k != "block"]
            out[name] = one
    return out


def split_block_axes(config: dict) -> None:
    """Every study's `block` axes split into one arm per block (`split_arms`), in place: the
    one place that does it, before the jobs are planned, so that everything reading the
    config's arms (the catalogue, the targets, the fits' axes, calibration, training) reads
    the split arms."""
    for spec in (config.get("studies") or {}).values():
        if isinstance(spec, dict) and isinstance(spec.get("arms"), dict):
            spec["arms"] = split_arms(spec)


def study_jobs(config: dict) -> list[Job]:
    """Every measure job of a validated config, in a stable order.

    Raises ConfigError (naming the key and value) for any cell whose settings are invalid. Its
    `block` axes are split (`split_arms`; check_config splits the config itself).
    """
    jobs = []
    device = config.get("device")
    for study, spec in config["studies"].items():
        base = dict(spec.get("settings", {}))
        for arm, arm_spec in split_arms(spec).items():
            where = f"studies.{study}.arms.{arm}"
            axes = arm_spec.get("axes")
            axes = expand_axes(axes) if isinstance(axes, dict) else axes
            _check_axes(where, axes)
            pack = arm_spec.get("pack", [])
            for key in pack:
                if key not in axes:
                    raise ConfigError(f"{where}.pack: '{key}' is not one of the arm's axes")
            overrides = {**base, **arm_spec.get("settings", {})}
            if device is not None:
                overrides["device"] = device
            outer = [k for k in axes if k not in pack]
            inner = [k for k in axes if k in pack]
            for outer_values in itertools.product(*(axes[k] for k in outer)):
                fixed = dict(zip(outer, outer_values, strict=True))
                cells = []
                for inner_values in itertools.product(*(axes[k] for k in inner)):
                    axis_values = {**fixed, **dict(zip(inner, inner_values, strict=True))}
                    settings = RunSettings.from_mapping({**overrides, **axis_values}, where)
                    cells.append(cell(job_id({k: axis_values[k] for k in axes}), settings))
                jobs.append(Job(study, arm, job_id(fixed), tuple(cells)))
    return jobs


def arm_settings(jobs: list[Job]) -> dict[str, dict[str, dict]]:
    """{study: {arm: the settings every cell of the arm shares}} (an axis the arm varies is
    left out): what the claims ledger compares with each note's stated settings."""
    shared: dict[str, dict[str, dict]] = {}
    for job in jobs:
        for cell in job.cells:
            columns = cell.settings.as_columns()
            arm = shared.setdefault(job.study, {}).setdefault(job.arm, None)
            if arm is None:
                shared[job.study][job.arm] = dict(columns)
            else:
                for key in [k for k, v in arm.items() if columns.get(k) != v]:
                    del arm[key]
    return shared
