"""A config as what it changes: config files and command-line values merged key by key onto
the defaults (config/config.yaml), as Snakemake merges --configfile files onto a workflow's
configfile, with `null` removing a key (a study, an arm, a setting) so that a run can also be
smaller than the defaults (config/tiny.yaml drops what it does not run)."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

# the defaults every config is merged onto, relative to the workflow's root
DEFAULTS = "config/config.yaml"


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


def config_of(root: str | Path, *files: str | Path, defaults: dict | None = None) -> dict:
    """The config a run of `files` (paths relative to `root`, in order) gets: each merged onto
    the defaults (`DEFAULTS` under `root`, or `defaults` where the caller has read them) with
    `overlay`."""
    root = Path(root)
    config = yaml.safe_load((root / DEFAULTS).read_text()) if defaults is None else defaults
    for f in files:
        config = overlay(config, yaml.safe_load((root / f).read_text()) or {})
    return config
