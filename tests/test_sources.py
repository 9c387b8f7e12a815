"""One source for every setting and name: the defaults the schema, RunSettings, config/config.yaml
and config/README.md state agree, and every module, attribute or package file the docs name
exists (a rename that leaves a doc behind fails here)."""

from __future__ import annotations

import dataclasses
import importlib
import re

import yaml
from conftest import ROOT

from depthlab.vocabulary.settings import RunSettings
from depthlab.vocabulary.train_settings import TrainSettings

SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
CONFIG_README = (ROOT / "config/README.md").read_text()


def documented_defaults(heading: str) -> dict:
    """key -> default of the table under the config/README.md heading that starts `heading`
    (`| \\`key\\` | default | ...`), the default read as YAML."""
    section = CONFIG_README.split(f"\n## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]*) \|", section, re.M)
    return {key: yaml.safe_load(cell.strip().strip("`")) for key, cell in rows}


def test_top_level_defaults_agree():
    """The schema's default of each top-level key is config/config.yaml's value (where it sets
    the key) and config/README.md's; the device default is RunSettings'."""
    properties = SCHEMA["properties"]
    defaults = {key: spec["default"] for key, spec in properties.items() if "default" in spec}
    # no default for only_studies and at_most: the schema's validation would write them into
    # every config
    assert set(defaults) == set(properties) - {"studies", "only_studies", "at_most"}
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    assert {k: v for k, v in config.items() if k in defaults} == \
        {k: defaults[k] for k in config if k in defaults}
    documented = documented_defaults("Top level")
    assert {k: documented[k] for k in defaults} == defaults
    assert defaults["device"] == RunSettings.device


def test_run_setting_defaults_agree():
    """config/README.md documents the defaults of RunSettings and TrainSettings; the schema's
    settings carry none (validate() would write it into every `settings:` mapping, an arm's
    too, where it would override the study's own value), only a description."""
    fields = {f.name: f.default for f in dataclasses.fields(RunSettings)}
    assert documented_defaults("Run settings") == fields
    training = {f.name: f.default for f in dataclasses.fields(TrainSettings)}
    # the training section's key table (its arm table aside), a row per key
    documented = {k: v for k, v in documented_defaults("training").items() if k in training}
    assert training == {**documented, "checkpoints": tuple(documented["checkpoints"])}
    for kind in ("settings", "training"):
        properties = SCHEMA["$defs"][kind]["properties"]
        assert not [key for key, spec in properties.items() if "default" in spec], kind
        assert all(spec.get("description") for spec in properties.values()), kind


DOCS = ["README.md", "config/README.md", *sorted(p.relative_to(ROOT).as_posix()
                                                for p in (ROOT / "docs").glob("*.md")),
        "workflow/schemas/config.schema.yaml",
        *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "profiles").glob("*/*.yaml"))]
DOTTED = re.compile(r"(?<![\w/.-])depthlab(?:\.\w+)+")
PACKAGE_PATH = re.compile(r"\bsrc/depthlab/[\w./]*\w/?|(?<![\w/.-])depthlab/[\w/]+\.py")


def resolves(name: str) -> bool:
    """Whether `name` (depthlab.x.y...) is an importable module, or an attribute path below
    the longest importable one."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[i:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def test_every_name_the_docs_give_exists():
    missing = []
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        missing += [f"{doc}: {name}" for name in set(DOTTED.findall(text)) if not resolves(name)]
        for path in set(PACKAGE_PATH.findall(text)):
            file = path if path.startswith("src/") else f"src/{path}"
            if not (ROOT / file).exists():
                missing.append(f"{doc}: {path}")
    assert not missing, missing
    assert resolves("depthlab.vocabulary.settings.RunSettings.check")
    assert not resolves("depthlab.settings.RunSettings") and not resolves("depthlab.pipeline.nope")
