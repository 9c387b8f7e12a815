"""Which config a set of files was made with: the committed docs/ document the default run
(config/config.yaml, alone or with the training seeds), and a run's results/provenance.json
records the config that built its results/. The docs_* rules and the report refuse a run whose
config differs, naming the first key that differs."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from depthlab.planner.overlay import DEFAULTS, config_of

# the command lines whose config the committed docs/ document (--configfile files, merged onto
# config/config.yaml in order): the default run, and the same with the training study's seeds
DOCUMENTED_RUNS = ((), ("config/training_seeds.yaml",))
# the named runs whose files the default run's docs merge in (an entry that several measure is
# taken from the first): config/fixes_recipes.yaml's best recipes on held-out seeds (with the
# cells of the entry that reads them beside others), config/fixes.yaml's papers,
# config/scale.yaml's depths, config/rezero_deep.yaml's ReZero at L = 128 (runs/<name>/,
# relative to the default run's folder)
DOCUMENTED_NAMED_RUNS = ("fixes_recipes", "fixes", "scale", "rezero_deep")
# the confirmatory named runs (config/confirm*.yaml: the documented runs on seeds never seen,
# graded at the protocol's freeze), the headline of docs/RESULTS.md where they were run
CONFIRM_RUNS = ("confirm", "confirm_fixes_recipes", "confirm_fixes", "confirm_scale",
                "confirm_rezero_deep")
SHOWN = 40  # characters of a value shown in a message


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else f"{text[:SHOWN - 3]}..."


def first_difference(given: object, expected: object, path: str = "") -> str:
    """Where `given` differs from `expected` first, as 'key.path=given, not expected' ('' where
    they are equal): mappings compared key by key in sorted order, anything else by ==."""
    if isinstance(given, dict) and isinstance(expected, dict):
        for key in sorted(set(given) | set(expected), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in given:
                return f"{where} is absent, not {_shown(expected[key])}"
            if key not in expected:
                return f"{where}={_shown(given[key])}, not absent"
            found = first_difference(given[key], expected[key], where)
            if found:
                return found
        return ""
    if given == expected:
        return ""
    return f"{path or 'the config'}={_shown(given)}, not {_shown(expected)}"


def documented_configs(root: str | Path, defaults: dict) -> dict[str, dict]:
    """The configs the committed docs/ document (`DOCUMENTED_RUNS` under `root`, merged onto
    `defaults`), keyed by the command line that makes each."""
    return {
        " ".join(["snakemake --cores all", *(["--configfile", DEFAULTS, *files] if files else [])]):
        config_of(root, *files, defaults=defaults)
        for files in DOCUMENTED_RUNS
    }


def shipped_configs(root: str | Path, defaults: dict | None = None) -> dict[str, dict]:
    """The config files shipped in `root`/config/, each as the run it gives (merged onto its
    base and `defaults`), by path: where a target a config cannot build is suggested. Not the
    claims file, nor a confirmatory run's (its seeds are the protocol's pool, spent once)."""
    shipped = {f"config/{path.name}": config_of(root, f"config/{path.name}", defaults=defaults)
               for path in sorted(Path(root, "config").glob("*.yaml"))
               if path.name != "claims.yaml"}
    return {name: c for name, c in shipped.items()
            if (c.get("protocol") or {}).get("stage") != "confirmatory"}


class ShippedConfigs(Mapping):
    """`shipped_configs(root, defaults)`, read when first looked into: only a target that a
    config cannot build needs them (reading the sixteen files took about 0.25 s of a Snakemake
    start's 2.3 s of CPU)."""

    def __init__(self, root: str | Path, defaults: dict | None = None):
        self._where = (root, defaults)

    @functools.cached_property
    def _configs(self) -> dict[str, dict]:
        return shipped_configs(*self._where)

    def __getitem__(self, name: str) -> dict:
        return self._configs[name]

    def __iter__(self):
        return iter(self._configs)

    def __len__(self) -> int:
        return len(self._configs)


def undocumented(config: dict, documented: dict[str, dict]) -> str:
    """'' when `config` equals one of the `documented` configs (keyed by the command line that
    makes each), else why not: where it differs from the first of them."""
    if any(not first_difference(config, known) for known in documented.values()):
        return ""
    command, known = next(iter(documented.items()))
    return (f"docs/ documents the default run ({' or '.join(documented)}); this config "
            f"differs from `{command}` at {first_difference(config, known)}")


def built_elsewhere(config: dict, built_with: dict, where: str) -> str:
    """'' when `config` is the config recorded in `where` (a run's provenance.json), else a
    line saying where they differ first."""
    found = first_difference(config, built_with)
    return f"{where} was built with another config (here {found})" if found else ""


def figure_sources(targets: Iterable, drawn_here: set[str]) -> dict[str, str]:
    """Where docs/figures/ copies each of `targets`' PNG from, by its stem: this run's file for
    a target this run draws (`drawn_here`, names), else the first documented named run's that
    exists; a target no run here has drawn is left out."""
    sources = {}
    for target in targets:
        png = target.outputs["png"]
        runs = [f"runs/{name}/{png}" for name in DOCUMENTED_NAMED_RUNS]
        found = [png] if target.name in drawn_here else [p for p in runs if os.path.exists(p)]
        if found:
            sources[target.stem] = found[0]
    return sources
