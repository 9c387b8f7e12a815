"""The files written from the vocabulary and the engine's declarations, not by hand: the config
schema's run settings and training keys (their names, types, bounds, choices and summaries),
config/README.md's tables of them (defaults, allowed values, meanings, every placement with its
definition) and of the metrics a shard holds, and the light copy of the metrics
(vocabulary/metrics.py's METRICS). Each is a marked section of its file; `python -m
depthlab.planner.generated` rewrites the sections, and tests/test_architecture.py fails where
one is stale. Sources: RunSettings' and TrainSettings' fields with their declarations (their
Keys: KEYS and CHOICES of vocabulary.settings, TRAIN_KEYS of vocabulary.train_settings),
PLACEMENTS and PLACEMENT_SETS (vocabulary.placements), the metrics the engine declares
(core.probes.METRICS, `@probe` and `@measures`)."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from depthlab.core import measure, train  # noqa: F401  (their imports declare every metric)
from depthlab.core.probes import METRICS
from depthlab.vocabulary.placements import PLACEMENT_SETS, PLACEMENTS
from depthlab.vocabulary.settings import GROUPS, Key, RunSettings, interval
from depthlab.vocabulary.train_settings import TrainSettings

ROOT = Path(__file__).resolve().parents[3]  # the repository of a checkout
SCHEMA_TYPES = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}
TUPLE = re.compile(r"tuple\[(\w+), \.\.\.\]")  # a tuple field's type: its items'


def _fields(cls: type = RunSettings) -> list[dataclasses.Field]:
    return list(dataclasses.fields(cls))


def _key(f: dataclasses.Field) -> Key:
    return f.metadata["key"]


def schema_setting_names() -> str:
    """The schema's enum of setting names (an axis or `fixed:` names one)."""
    return "enum: " + json.dumps([f.name for f in _fields()])


def _bounds(key: Key) -> dict:
    """The JSON schema's bounds of a number declared by `key`."""
    bounds = {"minimum": key.least, "exclusiveMinimum": key.above, "maximum": key.most,
              "exclusiveMaximum": key.below}
    return {word: bound for word, bound in bounds.items() if bound is not None}


def _schema_property(f: dataclasses.Field) -> dict:
    """The schema's entry of a field: its enum (its choices) or JSON type, its bounds and its
    summary; a tuple field is a non-empty list of distinct items, each of its items' type and
    the bounds (checkpoints: integers, at least 0)."""
    key = _key(f)
    if key.choices:
        prop: dict = {"enum": list(key.choices)}
    elif items := TUPLE.fullmatch(f.type):
        prop = {"type": "array", "items": {"type": SCHEMA_TYPES[items[1]], **_bounds(key)},
                "minItems": 1, "uniqueItems": True}
    else:
        prop = {"type": [SCHEMA_TYPES[f.type], key.also] if key.also else SCHEMA_TYPES[f.type],
                **_bounds(key)}
    prop["description"] = key.summary or key.meaning.replace("`", "")
    return prop


def _schema_properties(cls: type) -> str:
    """One flow mapping per field of cls (RunSettings, TrainSettings), in their order."""
    return "\n".join(f"{f.name}: {json.dumps(_schema_property(f), ensure_ascii=False)}"
                     for f in _fields(cls))


def schema_settings() -> str:
    """The schema's properties of `settings`: one flow mapping per RunSettings field."""
    return _schema_properties(RunSettings)


def schema_training() -> str:
    """The schema's properties of `training`: one flow mapping per TrainSettings field."""
    return _schema_properties(TrainSettings)


def schema_placement_sets() -> str:
    """The names an arm's `placement` axis may give instead of a list."""
    return "- " + json.dumps({"enum": list(PLACEMENT_SETS)})


def _default(value) -> str:
    """A default as a config gives it (YAML): a string YAML would read otherwise quoted
    (`'off'`), a tuple as a list, a float in an exponent with its point (`1.0e-8`)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"`{value if yaml.safe_load(value) == value else repr(value)}`" if value else \
            '`""`'
    if isinstance(value, tuple):
        return json.dumps(list(value))
    if isinstance(value, float) and "e" in repr(value):
        mantissa, exponent = repr(value).split("e")
        return f"{float(mantissa)}e{int(exponent):+d}"
    return str(value)


def _values(f: dataclasses.Field) -> str:
    key = _key(f)
    if key.choices:
        return ", ".join(f"`{c}`" for c in key.choices)
    if key.values:
        return key.values
    if f.type == "bool":
        return "bool"
    if key.most is not None or key.below is not None:
        return interval(key)
    if key.least is not None:
        return f"≥{key.least}"
    return f">{key.above}" if key.above is not None else "any"


def _meaning(f: dataclasses.Field) -> str:
    meaning = _key(f).meaning
    if f.name == "placement":
        meaning += ": " + "; ".join(f"`{p.name}` {p.summary}" for p in PLACEMENTS.values())
    if f.name == "init":
        meaning += ". The paper inits: " + "; ".join(
            f"`{p.name}` `{p.paper_init.init}`{'' if p.paper_init.bias else ', no biases'} "
            f"({p.paper_init.source})" for p in PLACEMENTS.values() if p.paper_init)
    return meaning


def _table(fields: list[dataclasses.Field]) -> list[str]:
    """The rows of a table of settings: key, default, allowed values, meaning."""
    return ["| key | default | values | meaning |", "| --- | --- | --- | --- |",
            *(f"| `{f.name}` | {_default(f.default)} | {_values(f)} | {_meaning(f)} |"
              for f in fields)]


def readme_settings_table() -> str:
    """config/README.md's tables of run settings, one per group (the model, the probe, the
    execution), each in the fields' order."""
    return "\n\n".join(
        "\n".join([f"**The {group}**", "", *_table([f for f in _fields()
                                                    if _key(f).group == group])])
        for group in GROUPS)


def readme_training_table() -> str:
    """config/README.md's table of the training keys, in TrainSettings' fields' order."""
    return "\n".join(_table(_fields(TrainSettings)))


def readme_metrics_table() -> str:
    """config/README.md's table of the metrics a shard holds."""
    rows = ["| metric | sublayer | unit | needs | meaning |", "| --- | --- | --- | --- | --- |"]
    rows += [f"| `{m.name}` | {m.sublayers} | {m.unit} | {m.needs or '-'} | {m.meaning} |"
             for m in METRICS.values()]
    return "\n".join(rows)


def metrics_copy() -> str:
    """vocabulary/metrics.py's METRICS: the engine's declarations, a metric a line."""
    return "\n".join(["METRICS: dict[str, Metric] = {m.name: m for m in (",
                      *(f"    {m!r}," for m in METRICS.values()), ")}"])


# (file, section name, its text)
SECTIONS: tuple[tuple[str, str, Callable[[], str]], ...] = (
    ("workflow/schemas/config.schema.yaml", "placement sets", schema_placement_sets),
    ("workflow/schemas/config.schema.yaml", "setting names", schema_setting_names),
    ("workflow/schemas/config.schema.yaml", "settings", schema_settings),
    ("workflow/schemas/config.schema.yaml", "training", schema_training),
    ("config/README.md", "settings", readme_settings_table),
    ("config/README.md", "training", readme_training_table),
    ("config/README.md", "metrics", readme_metrics_table),
    ("src/depthlab/vocabulary/metrics.py", "metrics", metrics_copy),
)


def _marker(path: str, name: str, end: bool = False) -> str:
    text = (f"<<< generated: {name}" if end else
            f">>> generated: {name} (python -m depthlab.planner.generated; do not edit)")
    return f"<!-- {text} -->" if path.endswith(".md") else f"# {text}"


def with_section(text: str, path: str, name: str, body: str) -> str:
    """`text` (of file `path`) with its section `name` holding `body`, indented as its
    markers."""
    begin, end = _marker(path, name), _marker(path, name, end=True)
    found = re.search(rf"^([ \t]*){re.escape(begin)}\n.*?^[ \t]*{re.escape(end)}$", text,
                      re.S | re.M)
    if found is None:
        raise ValueError(f"{path}: no section '{name}' (markers {begin!r} ... {end!r})")
    pad = found[1]
    block = "".join(f"{pad}{line}\n" for line in [begin, *body.splitlines()]) + pad + end
    return text[:found.start()] + block + text[found.end():]


def regenerated(root: Path = ROOT) -> dict[str, str]:
    """Each file with generated sections, as it should read."""
    files: dict[str, str] = {}
    for path, name, render in SECTIONS:
        text = files.get(path) or (root / path).read_text()
        files[path] = with_section(text, path, name, render())
    return files


def stale(root: Path = ROOT) -> list[str]:
    """The files whose generated sections are not current."""
    return [p for p, text in regenerated(root).items() if (root / p).read_text() != text]


def main(root: Path = ROOT) -> None:
    """Rewrite every generated section; print the files that changed."""
    for path, text in regenerated(root).items():
        if (root / path).read_text() != text:
            (root / path).write_text(text)
            print(f"rewrote {path}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
