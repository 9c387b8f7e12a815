"""Every check a config must pass before any job runs, as one ConfigError with a one-line message.

Order: the JSON schema (workflow/schemas/config.schema.yaml: unknown keys, types, ranges, empty or
duplicate grids), then the arms as given (an arm name with '@', a setting an own block ignores),
then, each `block` axis split into one arm per block, every cell's RunSettings.check (values
inside axis lists, which the schema leaves untyped, and cross-key rules such as heads dividing
d_model), then the probes that need every block held (reject_unheld_probes), then the device.
(The claims file is checked next by the workflow, depthlab.claims.schema.) Each message names
the offending key as a dotted path and its value. Cheap: torch is imported only when a cell
asks for cuda.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import math
import os
import re
import sys
from pathlib import Path

from jsonschema import Draft202012Validator

from depthlab.planner.cost import recomputes
from depthlab.planner.grid import Job, split_block_axes, study_jobs
from depthlab.planner.overlay import AT_MOST, ONLY, SIZES, load_yaml
from depthlab.vocabulary import hf
from depthlab.vocabulary.settings import ConfigError, RunSettings
from depthlab.vocabulary.variants import SPLIT, origin

SETTING_NAMES = tuple(f.name for f in dataclasses.fields(RunSettings))

TYPE_NAMES = {
    "integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false",
    "array": "a list", "object": "a mapping", "null": "empty",
}


def _dotted(path) -> str:
    out = "config"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out.removeprefix("config.")


def _suggest(name: str, choices) -> str:
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_target(targets, rules) -> str:
    """'' when each of `targets` (the command line's) is a rule name or a path (it holds a '/'
    or a '.'), else one line naming the first that is neither, with the closest rule name."""
    rules = list(rules)
    for target in targets:
        if target not in rules and "/" not in target and "." not in target:
            return (f"no rule or file {target!r}{_suggest(target, rules)}; "
                    "snakemake --list-target-rules lists the targets")
    return ""


def unavailable_target(requested, targets, configured: dict, configs: dict,
                       grid: dict | None = None) -> str:
    """'' unless one of `requested` (the command line's targets) names one of `targets` (the
    declared targets this config cannot build) or one of its files; then why it cannot be built
    and the shipped `configs` that can (Target.unavailable; `grid`: Catalogue.grid)."""
    for name in requested:
        for target in targets:
            if name == target.name or name in target.outputs.values():
                why = target.unavailable(configured, configs, grid)
                if why:
                    return why
    return ""


def unknown_path(requested, outputs, made, exists=os.path.exists) -> str:
    """'' unless one of `requested` (the command line's targets) is a path (a '/' or a '.')
    that is no file and that no rule makes (`made(path)`); then one line naming it, with the
    closest of `outputs` (the workflow's files without wildcards)."""
    for path in requested:
        if ("/" in path or "." in path) and not exists(path) and not made(path):
            return (f"no rule makes {path!r} and there is no such file"
                    f"{_suggest(path, sorted(set(outputs)))}; snakemake --list-target-rules "
                    "lists the targets")
    return ""


def _one_of(value, allowed: list) -> str:
    if len(allowed) > 6:
        hint = _suggest(value, allowed)
        if hint:
            return f"is not allowed{hint}"
    return f"is not one of {allowed}"


def _duplicates(values: list) -> list:
    seen, dups = [], []
    for v in values:
        if v in seen and v not in dups:
            dups.append(v)
        seen.append(v)
    return dups


def _setting_hint(path, key: str) -> str:
    """Where a run setting goes, when one is given at the top level (`--config seeds=3`), in a
    study or in an arm, outside its `settings:`."""
    if key not in SETTING_NAMES or len(path) not in (0, 2, 4):
        return ""
    return " (a run setting: it goes under studies.<study>.settings or an arm's settings)"


def _message(error) -> str:
    """One line naming the key and the value behind a jsonschema ValidationError."""
    where, value = _dotted(error.absolute_path), error.instance
    kind, arg = error.validator, error.validator_value
    if "propertyNames" in error.schema_path:
        # an axis or key name outside the allowed set; the instance is the name itself
        allowed = arg if kind == "enum" else []
        return f"{where}: unknown key {value!r}{_suggest(value, allowed)}"
    if kind == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        patterns = list(error.schema.get("patternProperties", {}))
        extra = [k for k in value if k not in known
                 and not any(re.search(p, k) for p in patterns)]
        if known:
            return (f"{where}: unknown key {extra[0]!r}{_suggest(extra[0], known)}"
                    f"{_setting_hint(error.absolute_path, extra[0])}")
        return f"{where}: name {extra[0]!r} must match {' or '.join(patterns)}"
    if kind == "required":
        missing = [k for k in arg if k not in value]
        return f"{where}: missing key {missing[0]!r}"
    if kind == "type":
        return f"{where}={value!r} must be {TYPE_NAMES.get(arg, arg)}"
    if kind == "enum":
        return f"{where}={value!r} {_one_of(value, arg)}"
    if kind in ("minimum", "exclusiveMinimum"):
        return f"{where}={value!r} must be {'>=' if kind == 'minimum' else '>'} {arg}"
    if kind in ("minItems", "minProperties"):
        return f"{where}={value!r} must not be empty" if arg == 1 else \
            f"{where}={value!r} needs at least {arg} entries"
    if kind == "uniqueItems":
        return f"{where}={value!r} repeats {_duplicates(value)}: grid values must be distinct"
    return f"{where}={value!r}: {error.message}"


def _rank(error) -> tuple:
    # an unknown key usually explains the other errors (e.g. the 'required' one it leaves)
    return (error.validator != "additionalProperties", error.validator == "required",
            -len(error.absolute_path), _dotted(error.absolute_path))


def reject_nonfinite(node, path=()) -> None:
    """Raise ConfigError naming the first NaN or infinite number anywhere in the config (the
    schema's bounds let NaN through: every comparison with it is false)."""
    if isinstance(node, dict):
        for key, value in node.items():
            reject_nonfinite(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            reject_nonfinite(value, (*path, i))
    elif isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{_dotted(path)}={node!r} must be a finite number")


def check_schema(config: dict, schema: dict) -> None:
    """Raise ConfigError for the most telling violation of `schema`, if any."""
    errors = sorted(Draft202012Validator(schema).iter_errors(config), key=_rank)
    if errors:
        raise ConfigError(_message(errors[0]))


def reject_unseen_cuda(config: dict, jobs: list[Job]) -> None:
    """Reject cuda when torch sees no GPU here (skipped with check_device: false, for submit
    hosts whose jobs run on GPU nodes; measure jobs check again where they run)."""
    cuda = [j for j in jobs if any(c.settings.device == "cuda" for c in j.cells)]
    if not cuda or not config.get("check_device", True):
        return
    import torch

    if not torch.cuda.is_available():
        first = f"studies.{cuda[0].study}.arms.{cuda[0].arm}: device"
        where = "device" if config.get("device") == "cuda" else first
        raise ConfigError(
            f"{where}='cuda' but torch {torch.__version__} sees no CUDA device on this machine "
            "(use device: cpu, or check_device: false if jobs run on other machines)"
        )


def reject_unheld_probes(jobs: list[Job]) -> None:
    """Reject the probes that run the model again (jacobian_dirs, update_lr:
    depthlab.core.response) in a cell whose pass does not hold every block's graph: a
    forward-only pass (grad_of 'none') or one whose graph would exceed pass_mb (its blocks
    recomputed one at a time, depthlab.planner.cost.recomputes)."""
    for job in jobs:
        for cell in job.cells:
            s = cell.settings
            on = [key for key in ("jacobian_dirs", "update_lr") if getattr(s, key)]
            if not on or not (s.grad_of == "none" or recomputes(s)):
                continue
            if s.grad_of == "none":
                why = "grad_of='none' keeps no graph"
                fix = "take a gradient: grad_of params, weights or input"
            else:
                why = f"its graph exceeds pass_mb={s.pass_mb}, so its blocks are recomputed"
                fix = "raise pass_mb, or 0 for no bound"
            raise ConfigError(
                f"studies.{job.study}.arms.{job.arm}: {on[0]}={getattr(s, on[0])!r} needs every "
                f"block held in one pass, but in cell {cell.label} {why} ({fix})"
            )


def check_studies(config: dict, known) -> None:
    """Reject a study without a package (depthlab.studies.<name>): it would measure and build
    nothing; and a name of `only_studies` (overlay.ONLY) that is no package's (a typo)."""
    for name in config["studies"]:
        if name not in known:
            raise ConfigError(f"studies.{name}: no study package of that name; known studies: "
                              f"{', '.join(known)}{_suggest(name, known)}")
    for name in config.get(ONLY) or []:
        if name not in known:
            raise ConfigError(f"{ONLY}: {name!r} is no study package's name; known studies: "
                              f"{', '.join(known)}{_suggest(str(name), known)}")


def check_config(config: dict, schema_path: str | Path, studies=None,
                 hook_points: dict | None = None) -> list[Job]:
    """Every measure job of `config`, or ConfigError naming the first bad key and its value.
    studies: the names of the study packages (depthlab.studies.STUDIES), if checked;
    hook_points: study -> the points an own block it measures must mark (HOOK_POINTS). Once the
    config as given passes, its `block` axes are split into one arm per block, in place
    (depthlab.planner.grid.split_block_axes): the later checks and the plan read those arms (a
    config is checked once: the split arms' names, with '@', are refused in a config given)."""
    if not isinstance(config, dict):
        raise ConfigError(f"config: must be a mapping, got {config!r}")
    schema = load_yaml(Path(schema_path).read_text())
    if studies is not None and isinstance(config.get("studies"), dict):
        # first, the well-formed names: an unknown study (a typo) lacks what the schema asks of
        # a study (its arms); an ill-formed name is the schema's to name
        names = list(schema["properties"]["studies"]["patternProperties"])
        check_studies({"studies": {k: v for k, v in config["studies"].items()
                                   if any(re.search(n, str(k)) for n in names)},
                       ONLY: [n for n in config.get(ONLY) or [] if isinstance(n, str)]}, studies)
    reject_unknown_sizes(config)
    check_schema(config, schema)
    reject_nonfinite(config)
    reject_missing_corpus(config)
    reject_split_names(config)
    reject_ignored_settings(config)
    split_block_axes(config)
    jobs = study_jobs(config)
    reject_unheld_probes(jobs)
    reject_unseen_cuda(config, jobs)
    reject_trained_blocks(config, jobs)
    reject_missing_blocks(jobs, hook_points)
    return jobs


def reject_unknown_sizes(config: dict) -> None:
    """ConfigError for a key of `at_most` that is no size setting (overlay.SIZES): a typo would
    leave the size it meant unbounded."""
    caps = config.get(AT_MOST)
    for key in caps if isinstance(caps, dict) else ():
        if key not in SIZES:
            raise ConfigError(f"{AT_MOST}.{key}: no size setting of that name; the sizes: "
                              f"{', '.join(SIZES)}{_suggest(str(key), SIZES)}")


def reject_split_names(config: dict) -> None:
    """ConfigError for an arm name with '@': it is kept for the arms a `block` axis is split
    into (`<arm>@<block>`, depthlab.planner.grid.split_block_axes)."""
    for study, spec in (config.get("studies") or {}).items():
        for arm in ((spec or {}).get("arms") or {}):
            if SPLIT in str(arm):
                raise ConfigError(
                    f"studies.{study}.arms.{arm}: '{SPLIT}' is kept for the arms a block axis "
                    f"is split into ({origin(arm)}{SPLIT}<block>); name the arm with letters, "
                    "digits and _")


# the settings only depthlab's built-in blocks read (an own block draws and scales itself)
BUILT_IN_ONLY = ("init", "out_scale", "residual_scale", "skip_scale", "bias")


def reject_ignored_settings(config: dict) -> None:
    """ConfigError for a setting only built-in blocks read (BUILT_IN_ONLY) that an arm measuring
    an own block (setting `block`, the arm's or its study's, or an own block on its `block`
    axis) sets or varies itself: the block never reads it, so its rows would be labelled by a
    value that changed nothing (varsplit's init arm: two identical rows, fan_in and
    torch_default)."""
    for study, spec in (config.get("studies") or {}).items():
        block = ((spec or {}).get("settings") or {}).get("block")
        for arm, arm_spec in ((spec or {}).get("arms") or {}).items():
            arm_spec = arm_spec or {}
            axis = (arm_spec.get("axes") or {}).get("block")
            own = (arm_spec.get("settings") or {}).get("block", block)
            measures = f"block={own!r}, which builds its own"
            if isinstance(axis, list):
                own = [b for b in axis if b]
                measures = f"the own blocks {own!r} of its block axis, which build their own"
            if not own:
                continue
            for part in ("axes", "settings"):
                for key in BUILT_IN_ONLY:
                    if key in (arm_spec.get(part) or {}):
                        raise ConfigError(
                            f"studies.{study}.arms.{arm}.{part}.{key}="
                            f"{arm_spec[part][key]!r}: only depthlab's built-in blocks read "
                            f"{key}, and this arm measures {measures}; drop the arm, the "
                            "setting or the block")


def reject_trained_blocks(config: dict, jobs: list[Job]) -> None:
    """ConfigError for an own block (setting `block`) in a trained study: training builds
    depthlab's own stack (depthlab.core.train) and never the block, so its runs would be the
    built-in placement's under the block's name."""
    trained = {study for study, spec in (config.get("studies") or {}).items()
               if spec and "training" in spec}
    for job in jobs:
        block = next((c.settings.block for c in job.cells if c.settings.block), "")
        if job.study in trained and block:
            raise ConfigError(
                f"studies.{job.study}.arms.{job.arm}: block={block!r}: an own block is measured "
                f"at initialisation only; the trained study {job.study!r} would train the "
                "built-in stack instead (measure the block in an init-time study)")


def reject_missing_corpus(config: dict) -> None:
    """ConfigError for a `corpus_path` that names no file (relative to the working directory,
    which the workflow sets to where snakemake was started)."""
    path = config.get("corpus_path")
    if path and not Path(path).is_file():
        raise ConfigError(f"corpus_path: no file {path!r} (relative to where snakemake was "
                          "started)")


def reject_missing_blocks(jobs: list[Job], hook_points: dict | None = None) -> None:
    """ConfigError for an own block (setting `block`) whose module (transformers, for a
    Hugging Face layer) cannot be found on the Python path, the working directory first; then
    one block of each is built and run at the settings of each distinct cell that names it
    (depthlab.core.own_block.check_block: torch is imported only where a config names a block),
    so that its mistakes are one line naming the arm before any job, not a traceback inside
    one; a block that does not mark a hook point its study's fit reads (`hook_points`: study
    -> points) is one too. One block is built per distinct settings but the depth and the
    seeds (at the first such cell's depth): the models study's 132 HF cells are 22 checks."""
    # each kind of cell (its settings, seeds and depth aside): the first cell's settings and
    # the arm naming them
    kinds: dict[RunSettings, tuple[RunSettings, Job]] = {}
    for job in jobs:
        for cell in job.cells:
            if cell.settings.block:
                settings = dataclasses.replace(cell.settings, seeds=1, seed_offset=0)
                kinds.setdefault(dataclasses.replace(settings, depth=1), (settings, job))
    cells = list(kinds.values())
    if cells and sys.path[:1] != [os.getcwd()]:
        sys.path.insert(0, os.getcwd())
    # each block's module looked up once (the first arm naming it), then each cell built
    first: dict[str, Job] = {}
    for settings, job in cells:
        first.setdefault(settings.block, job)
    for path, job in first.items():
        module = "transformers" if hf.is_hf(path) else path.partition(":")[0]
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise ConfigError(
                f"studies.{job.study}.arms.{job.arm}: block={path!r}: no module "
                f"{module!r} where snakemake was started or on the Python path"
            )
    if cells:
        from depthlab.core.own_block import check_block

        for settings, job in cells:
            check_block(settings.block, settings, f"studies.{job.study}.arms.{job.arm}",
                        (hook_points or {}).get(job.study, ()))


def reject_off_grid_options(config: dict, jobs: list[Job], targets) -> None:
    """ConfigError for a study's `analysis:` option that names a grid value (a target's
    `on_grid`: option -> run setting) no cell of the arms the target reads has, e.g. stack96's
    `single_depth` off its depth grid (the table would be empty)."""
    for target in targets:
        options = config["studies"].get(target.study, {}).get("analysis") or {}
        for option, setting in target.on_grid:
            if option not in options:
                continue
            arms = target.arms(list(config["studies"][target.study]["arms"]))
            values = sorted({getattr(c.settings, setting) for j in jobs
                             if j.study == target.study and j.arm in arms for c in j.cells})
            if options[option] not in values:
                raise ConfigError(
                    f"studies.{target.study}.analysis.{option}={options[option]!r} is not a "
                    f"{setting} of the arms {target.name} reads ({', '.join(arms)}: "
                    f"{', '.join(map(str, values))})")


def _strings(node) -> set:
    """Every string in a nested mapping or list, keys and values."""
    if isinstance(node, dict):
        return set().union(*(_strings(k) | _strings(v) for k, v in node.items()))
    if isinstance(node, list):
        return set().union(*(_strings(v) for v in node))
    return {node} if isinstance(node, str) else set()


def _arms_named(node) -> set:
    """Every arm an `arm:` key names anywhere in a claims file (rows, readings, the notes'
    readings, which map one arm to another)."""
    if isinstance(node, dict):
        return set().union(_strings(node.get("arm")), *(_arms_named(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_arms_named(v) for v in node))
    return set()


def reject_misspelt_arms(config: dict, targets, claims: dict) -> None:
    """ConfigError for an arm nothing reads (no target of its study, no arm of the claims file,
    no other arm's `calibrate_from`) whose name is close to one that is read: a misspelt arm,
    which the merge onto config/config.yaml adds beside the arm it meant; named with the
    closest name."""
    named = _arms_named(claims)
    for study, spec in (config.get("studies") or {}).items():
        given = spec.get("arms") if isinstance(spec, dict) else None
        if not isinstance(given, dict):
            continue
        arms = list(given)
        read = {arm for t in targets if t.study == study for arm in t.arms(arms)}
        read |= {a.get("calibrate_from") for a in given.values() if isinstance(a, dict)}
        read |= named & set(arms)
        known = [a for a in arms if a in read]
        for arm in arms:
            hint = "" if arm in read else _suggest(arm, known)
            if hint:
                raise ConfigError(f"studies.{study}.arms.{arm}: no table, figure or claim reads "
                                  f"this arm{hint}")
