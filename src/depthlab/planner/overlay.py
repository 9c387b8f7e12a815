"""A config as what it changes: config files and command-line values merged key by key onto
the defaults (config/config.yaml), as Snakemake merges --configfile files onto a workflow's
configfile, with `null` removing a key (a study, an arm, a setting) so that a run can also be
smaller than the defaults (config/tiny.yaml drops what it does not run). A config with a `base:`
(a config file's path) is merged onto that file's config instead: config/tiny_fixes.yaml holds
only what shrinks config/fixes.yaml.

Study settings and arm settings: an arm's own `settings:` (and a training arm's `training:`)
and its axes override its study's, key by key, whichever file gives them; a study setting that
a config gives and some arm of the merged config overrides (with an arm setting the config
does not give itself) is one warning line naming those arms (`overridden`)."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import yaml

from depthlab.vocabulary.settings import RunSettings
from depthlab.vocabulary.train_settings import TrainSettings

# the defaults every config is merged onto, relative to the workflow's root
DEFAULTS = "config/config.yaml"
# libyaml's parser where PyYAML has it: the same values as the pure Python one, in a fraction
# of its time (a Snakemake start reads the configs and the schema)
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
BASE = "base"  # a config's key naming the config file it changes
# a config's key listing the studies it runs: the others its base configures are left out, so
# that a study added to the defaults runs in no named run that does not list it
ONLY = "only_studies"
# a study's mappings that its arms override key by key (run settings, training settings)
SCOPED = ("settings", "training")
# a config's key of the largest sizes its studies run at (`capped`): config/tiny.yaml's, so that
# a study of the defaults that it does not name runs small there too
AT_MOST = "at_most"
# the settings `at_most` may bound: the sizes, the run and training settings that count (in
# integers) layers, units, tokens, seeds or steps; seed_offset, which places seeds, is none
SIZES = tuple(f.name for cls in (RunSettings, TrainSettings) for f in dataclasses.fields(cls)
              if f.type in ("int", "tuple[int, ...]") and f.name != "seed_offset")


def overlay(base: dict, change: dict) -> dict:
    """`base` with `change` merged onto it key by key: a mapping merges into a mapping, any
    other value (a list, a number, a string) replaces, None removes the key (and a None with
    no key to remove is dropped). Neither input is modified."""
    out = copy.deepcopy(base)
    for key, value in change.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = overlay(out[key] if isinstance(out.get(key), dict) else {}, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def typed(value):
    """A --config value with the scalars inside it read as YAML ('5' -> 5, 'null' -> None,
    'on' stays a string only where YAML keeps it one): Snakemake reads the inside of a nested
    --config value with YAML's base loader, which keeps every scalar a string."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    if isinstance(value, str):
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        return value if isinstance(parsed, (dict, list)) else parsed
    return value


def read_config_words(words: list[str]) -> dict:
    """The --config words (`key=value`, as typed on the command line) as YAML reads each value
    (`seeds: "5"` stays the string it was typed as, which Snakemake's reading cannot tell from
    5: `typed`); entries for the same key merge into one mapping, as Snakemake merges them; an
    empty value is null; a value YAML cannot read stays the string typed."""
    out: dict = {}
    for word in words:
        key, _, value = word.partition("=")
        try:
            parsed = yaml.safe_load(value) if value else None
        except yaml.YAMLError:
            parsed = value
        out = keeping_nulls(out, {key: parsed})
    return out


def keeping_nulls(base: dict, change: dict) -> dict:
    """`base` with `change` merged into it key by key, mappings into mappings, a None kept (it
    removes the key from the defaults when the config is overlaid onto them: `overlay`)."""
    out = dict(base)
    for key, value in change.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = keeping_nulls(out[key], value) if both else value
    return out


def workflow_file(root: str | Path | Callable[[str], str], name: str) -> Path | None:
    """The workflow's own file `name` (config/tiny.yaml): under its folder `root`, or where
    `root(name)` puts it (a workflow loaded by URL: Snakemake's workflow.source_path, which
    fetches it into its source cache); None where it cannot be had."""
    if not callable(root):
        return Path(root) / name
    try:
        return Path(root(name))
    except Exception:  # noqa: BLE001 (a file the URL does not serve, however it fails)
        return None


def with_base(given: dict, root: str | Path | Callable[[str], str], defaults: dict,
              seen: tuple = (), read: list | None = None) -> dict:
    """`given` merged onto what it changes: the defaults, or, where it names a `base:` file
    (relative to where snakemake runs, else one of the workflow's own files: `workflow_file`
    of `root`), that file's config, itself resolved the same way, its sizes first bounded by
    `given`'s `at_most` (`capped`); then, once the chain is merged, only its `only_studies`
    (`running`). A base that names no file, or a chain of bases that loops, raises ValueError
    naming it. The base files read are appended to `read` (absolute, nearest first)."""
    if BASE not in given:
        base = defaults
    else:
        name = given[BASE]
        found = [p for p in (Path(str(name)), workflow_file(root, str(name)))
                 if p is not None and p.is_file()]
        if not isinstance(name, str) or not found:
            raise ValueError(f"{BASE}={name!r}: no config file of that name")
        if name in seen:
            raise ValueError(f"{BASE}={name!r}: a chain of bases that comes back to it")
        if read is not None:
            read.append(found[0].absolute())
        base = with_base(read_config(found[0]), root, defaults, (*seen, name), read)
    own = {k: v for k, v in given.items() if k != BASE}
    merged = overlay(capped(base, given.get(AT_MOST)), own)
    return merged if seen else running(merged)


def running(config: dict) -> dict:
    """`config` without the studies its `only_studies` list leaves out (a listed study it does
    not configure is left out too: a base may list it and a file on it drop it; a name that is no
    study package's is an error, validate.check_studies); all of them without the list."""
    only = config.get(ONLY)
    if not isinstance(only, list) or not isinstance(config.get("studies"), dict):
        return config
    return {**config, "studies": {k: v for k, v in config["studies"].items() if k in only}}


def capped(config: dict, caps) -> dict:
    """`config` with its studies no larger than `caps` (a size setting -> its largest value; a
    config's `at_most`, applied to what it is merged onto, never to the values it gives): a
    study's or an arm's setting or training value above it lowered to it, and an axis's or a
    list's values lowered to it, repeats dropped (depth [2, 24, 96] at most 8: [2, 8]);
    `config` itself without caps."""
    if not isinstance(caps, dict) or not isinstance(config.get("studies"), dict):
        return config

    def lower(key, value):
        cap = caps.get(key)
        if isinstance(cap, bool) or not isinstance(cap, int):
            return value
        if isinstance(value, list):
            return list(dict.fromkeys(lower(key, v) for v in value))
        return min(value, cap) if isinstance(value, int) and not isinstance(value, bool) \
            else value

    def within(spec, scopes):
        if not isinstance(spec, dict):
            return spec
        return {**spec, **{s: {k: lower(k, v) for k, v in spec[s].items()}
                           for s in scopes if isinstance(spec.get(s), dict)}}

    studies = {}
    for name, study in config["studies"].items():
        study = within(study, SCOPED)
        if isinstance(study, dict) and isinstance(study.get("arms"), dict):
            study["arms"] = {arm: within(a, (*SCOPED, "axes")) for arm, a in study["arms"].items()}
        studies[name] = study
    return {**config, "studies": studies}


def load_yaml(text: str):
    """YAML text as Python values, parsed by FAST_LOADER; where it cannot parse, parsed again by
    PyYAML's pure Python parser, whose error (raised) names the problem in more words."""
    try:
        return yaml.load(text, Loader=FAST_LOADER)
    except yaml.YAMLError:
        return yaml.safe_load(text)


def read_config(path: str | Path) -> dict:
    """The config a YAML file holds (an empty file: {}). A file YAML cannot parse, or one that
    holds no mapping, raises ValueError as one line `<file>:<line>: <problem>`."""
    try:
        loaded = load_yaml(Path(path).read_text())
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        context = err.context_mark
        within = (f" ({err.context} at line {context.line + 1})"
                  if err.context and context and mark and context.line != mark.line
                  else f" ({err.context})" if err.context else "")
        raise ValueError(f"{where}: {err.problem or err}{within}") from None
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: {' '.join(str(err).split())}") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise ValueError(f"{path}:1: a config file holds a mapping of keys, not a "
                         f"{type(loaded).__name__}")
    return loaded or {}


def config_of(root: str | Path, *files: str | Path, defaults: dict | None = None) -> dict:
    """The config a run of `files` (paths relative to `root`, in order) gets: the files merged
    key by key in order, onto the defaults (`DEFAULTS` under `root`, or `defaults` where the
    caller has read them) or onto the `base:` they name (`with_base`)."""
    root = Path(root)
    config = load_yaml((root / DEFAULTS).read_text()) if defaults is None else defaults
    given: dict = {}
    for f in files:
        given = combined(given, read_config(root / f))
    return with_base(given, root, config)


def combined(first: dict, then: dict) -> dict:
    """Two config files as Snakemake merges --configfile files (snakemake.utils.update_config):
    `then` onto `first` key by key, a mapping into a mapping, any other value (a null too)
    replacing; the nulls stay, for `overlay` to remove what they name."""
    out = copy.deepcopy(first)
    for key, value in then.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = combined(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def overridden(given: dict, config: dict) -> list[str]:
    """One line per study setting of `given` (a config as given: its files and --config
    values, not what they are merged onto) that arms of the merged `config` override: with an
    own value in the same mapping (`SCOPED`) that `given` does not set in that arm itself, or,
    for a run setting, on the axes of every arm (then no cell reads it). Each line names the
    setting, its value, the arms and their values."""
    lines = []
    studies = given.get("studies")
    for name, study in (studies.items() if isinstance(studies, dict) else ()):
        spec = (config.get("studies") or {}).get(name)
        arms = spec.get("arms") if isinstance(spec, dict) else None
        if not isinstance(study, dict) or not isinstance(arms, dict) or not arms:
            continue
        given_arms = study.get("arms") if isinstance(study.get("arms"), dict) else {}
        for scope in SCOPED:
            mapping = study.get(scope)
            for key, value in (mapping.items() if isinstance(mapping, dict) else ()):
                if value is None:
                    continue
                own = {arm: a[scope][key] for arm, a in arms.items()
                       if isinstance(a, dict) and isinstance(a.get(scope), dict)
                       and key in a[scope] and a[scope][key] != value
                       and key not in ((given_arms.get(arm) or {}).get(scope) or {})}
                where = f"studies.{name}.{scope}.{key}={value!r}"
                if own:
                    kept = ", ".join(f"{arm} ({v!r})" for arm, v in own.items())
                    lines.append(
                        f"{where} does not reach arm{'s' if len(own) > 1 else ''} {kept}, "
                        f"whose own {scope} set it (set it under "
                        f"studies.{name}.arms.<arm>.{scope} to change them)")
                elif scope == "settings" and all(
                        isinstance(a, dict) and key in (a.get("axes") or {})
                        for a in arms.values()):
                    lines.append(f"{where} is read by no cell: every arm varies {key} on "
                                 f"its axes ({', '.join(arms)})")
    return lines


# the key a config error names first: a dotted path with [i] indices, before its `=` or `:`
# (`studies.stack96.arms.a.axes.depth=[2, 3, 2]`, `run.name='a/b'`, `corpus_path: no file`)
_KEY_PATH = re.compile(r"^([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+|\[\d+\])*)(?=[=:])")


def error_keys(message: str) -> list:
    """The key path a config error's message names (keys, and ints for list indices), the
    unknown key it names appended: `studies.s.settings: unknown key 'x'` -> [studies, s,
    settings, x]; [] where it names none."""
    found = _KEY_PATH.match(message)
    keys: list = [int(p[1:-1]) if p.startswith("[") else p
                  for p in re.findall(r"\[\d+\]|[^.\[\]]+", found[1])] if found else []
    unknown = re.search(r"unknown key '([^']+)'", message)
    return [*keys, unknown[1]] if unknown else keys


def _depth(node, keys: list) -> int:
    """How many of `keys`, in order, lead into `node` (a parsed config)."""
    for depth, key in enumerate(keys):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            node = node[key]
        else:
            return depth
    return len(keys)


def _line(path: str | Path, keys: list) -> int | None:
    """The line of `path` (a YAML file) where the last of `keys` is given, None where its
    nodes cannot be followed."""
    try:
        node = yaml.compose(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    line = None
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if k.value == str(key)]
            if not match:
                return line
            line, node = match[-1][0].start_mark.line + 1, match[-1][1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) \
                and 0 <= key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def origin(message: str, sources: list) -> str:
    """Where the key a config error names was given: `<file>:<line>` (or the source's label
    alone, such as `--config`) of the first of `sources` ((label, parsed config, YAML file or
    None), the one that wins first) that holds the most of its key path; '' where the message
    names no key or no source holds it."""
    keys = error_keys(message)
    depths = [_depth(config, keys) for _, config, _ in sources]
    if not keys or not depths or max(depths) == 0:
        return ""
    label, _, path = sources[depths.index(max(depths))]
    line = _line(path, keys[:max(depths)]) if path else None
    return f"{label}:{line}" if line else label
