"""The package's architecture: a folder per layer, imports only downward, studies that
never import each other, light vocabulary and planner layers, one source of truth for settings and
placements, and targets that measure only what they read."""

from __future__ import annotations

import ast
import dataclasses
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, copy_workflow, run_snakemake

from depthlab.planner import generated
from depthlab.studies import TARGETS, drawing
from depthlab.vocabulary import placements
from depthlab.vocabulary.settings import (
    CHOICES,
    GROUPS,
    KEYS,
    ConfigError,
    Key,
    RunSettings,
    declarations,
    setting,
)
from depthlab.vocabulary.train_settings import TRAIN_KEYS, TRAINING, TrainSettings, train_setting

PACKAGE = ROOT / "src/depthlab"
# the layers, lowest first: a module may import its own layer and the ones before it; the
# engine (core) is handed the vocabulary's jobs and pass plans and never asks the planner
LAYERS = ("vocabulary", "core", "planner", "analysis", "studies", "claims")
HEAVY = ("torch", "pandas", "matplotlib", "scipy", "pyarrow")


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(path: Path) -> set[str]:
    """The depthlab modules a file imports (a `from x import y` counts x.y when y is a module)."""
    known, found = modules(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("depthlab"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names
                         if f"{node.module}.{a.name}" in known)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("depthlab"))
    return found & set(known)


def layer(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_imports_go_only_downward_and_studies_stay_apart():
    for module, path in modules().items():
        mine = layer(module)
        for target in imports(path):
            theirs = layer(target)
            if mine == "" or theirs == "":
                continue  # the package's own __init__
            assert LAYERS.index(theirs) <= LAYERS.index(mine), (module, target)
            if mine == "studies" and theirs == "studies" and module.count(".") > 2:
                # a study imports only itself (and never the catalogue of all studies)
                assert target.split(".")[2:3] == module.split(".")[2:3], (module, target)
            if mine == "claims" and theirs == "studies":
                assert target == "depthlab.studies", (module, target)  # the catalogue only


def _imported_at_run_time(path: Path) -> list[str]:
    """The leading text of every importlib.import_module call's module name in a file (an
    f-string's constant prefix; '{__name__}' read as the file's own package)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = package.removesuffix(".__init__")
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            arg, text = node.args[0], ""
            for part in arg.values if isinstance(arg, ast.JoinedStr) else [arg]:
                if isinstance(part, ast.Constant):
                    text += str(part.value)
                elif isinstance(part, ast.FormattedValue) and getattr(
                        part.value, "id", "") == "__name__":
                    text += package
                else:
                    break
            found.append(text)
    return found


def test_run_time_imports_go_only_downward_too():
    """A module looked up by name (a study's fit or drawing function) is held to the layers as a
    static import is: the claims layer receives a study's tables, never imports the study."""
    for module, path in modules().items():
        for name in _imported_at_run_time(path):
            if name.startswith("depthlab.") and layer(name):
                assert LAYERS.index(layer(name)) <= LAYERS.index(layer(module)), (module, name)
                if layer(module) == "claims":
                    assert layer(name) != "studies", (module, name)


def test_the_package_never_imports_snakemake():
    """The workflow hands the package plain values (its argv parser too: planner/startup.py), so
    that every module is tested without running Snakemake."""
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "snakemake" for n in names), module


def test_the_engine_imports_only_the_vocabulary():
    """core/ reads the vocabulary (settings, placements, jobs with their pass plans, metrics)
    and nothing of the planner (grid, cost, reuse, code hashes): the planner resolves a cell's
    pass plan and hands it down."""
    engine = {m: p for m, p in modules().items() if layer(m) == "core"}
    assert len(engine) > 10
    for module, path in engine.items():
        assert {layer(t) for t in imports(path)} <= {"vocabulary", "core"}, module


def test_no_import_cycles():
    graph = {m: imports(p) for m, p in modules().items()}
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in graph[node]:
            assert state.get(nxt) != 1, f"cycle: {' -> '.join([*stack, node, nxt])}"
            if nxt not in state:
                visit(nxt, [*stack, node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])


def test_what_snakemake_imports_while_parsing_is_light():
    """The modules the workflow imports at parse time (workflow/Snakefile, workflow/rules/*.smk:
    the plan, depthlab.planner.load, and what it imports) and the target declarations pull in
    none of torch, pandas, matplotlib, scipy or pyarrow."""
    parsed = set()
    for smk in [ROOT / "workflow/Snakefile", *(ROOT / "workflow/rules").glob("*.smk")]:
        parsed |= set(re.findall(r"^from (depthlab[\w.]*) import", smk.read_text(), re.M))
    assert "depthlab.studies" in parsed and "depthlab.planner.load" in parsed
    code = ("import sys\n" + "".join(f"import {m}\n" for m in sorted(parsed))
            + f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.slow
def test_jobs_that_compute_nothing_import_no_torch():
    """The adapters' top-level imports (workflow/scripts/*.py; the train job aside, and the
    measure job's import of its compute modules is deferred to a job that measures a cell) and
    the provenance every written file carries pull in no torch: its import is 2 s of each of
    the default run's short jobs (aggregate, fit, calibrate, claims) and of a job of copies."""
    imported = set()
    for script in (ROOT / "workflow/scripts").glob("*.py"):
        if script.name != "train_job.py":
            imported |= set(re.findall(r"^from (depthlab[\w.]*) import", script.read_text(), re.M))
    assert {"depthlab.core.records", "depthlab.core.io", "depthlab.claims.ledger"} <= imported
    code = ("import sys\n" + "".join(f"import {m}\n" for m in sorted(imported))
            + "depthlab.planner.provenance.provenance()\nprint('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_a_study_figure_imports_no_other_study():
    code = ("import sys\nfrom depthlab.studies import BY_NAME, drawing\n"
            "drawing(BY_NAME['fig_grad_ratio_by_depth'])\n"
            "print(sorted({m.split('.')[2] for m in sys.modules "
            "if m.startswith('depthlab.studies.') and m.count('.') > 2 "
            "and not m.endswith('.targets')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "['stack96']"


def test_schema_settings_match_run_settings():
    """Every RunSettings field is in the schema (settings and axis names) and in config/README.md,
    with the same choices; nothing else is."""
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    fields = [f.name for f in dataclasses.fields(RunSettings)]
    properties = schema["$defs"]["settings"]["properties"]
    assert list(properties) == fields
    assert schema["$defs"]["setting_name"]["enum"] == fields
    assert properties["placement"]["enum"] == list(placements.PLACEMENTS)
    for key, allowed in CHOICES.items():
        assert properties[key]["enum"] == list(allowed), key
    readme = (ROOT / "config/README.md").read_text()
    for name in fields:
        assert f"| `{name}` |" in readme, name


# RunSettings' fields as main declared them before the declarations moved into the fields
# (70f0643): the rows carry the settings as columns in this order, and the cells' reuse keys
# (planner/reuse.py) read these defaults, so an edit of a declaration must leave them alone
FIELDS = [
    ("placement", "str", "pre"), ("depth", "int", 6), ("d_model", "int", 128),
    ("heads", "int", 4), ("ffn_mult", "int", 4), ("activation", "str", "relu"),
    ("attention", "str", "linear"), ("causal", "bool", True), ("init", "str", "torch_default"),
    ("bias", "bool", True), ("out_scale", "float", 1.0), ("residual_scale", "float", 1.0),
    ("skip_scale", "float", 1.0), ("final_norm", "str", "auto"), ("dtype", "str", "float64"),
    ("device", "str", "cpu"), ("batch", "int", 1), ("tokens", "int", 128),
    ("loss", "str", "mse"), ("head_classes", "int", 64), ("grad_of", "str", "params"),
    ("seeds", "int", 6), ("seed_offset", "int", 0), ("seed_batch", "int", 0),
    ("pass_mb", "int", 2500), ("block_corr", "bool", False), ("jacobian_dirs", "int", 0),
    ("update_lr", "float", 0.0), ("update_optimizer", "str", "adam"),
    ("update_params", "str", "all"), ("block", "str", ""),
]


def test_each_setting_is_declared_in_its_field():
    """A setting is one RunSettings field: its name, type and default, and `setting(...)`'s
    declaration (meaning, summary, bound, allowed values) as the field's metadata; KEYS and
    CHOICES are read from the fields, in their order, and the fields are main's (FIELDS)."""
    fields = dataclasses.fields(RunSettings)
    assert [(f.name, f.type, f.default) for f in fields] == FIELDS
    assert [type(f.default) for f in fields] == [type(d) for _, _, d in FIELDS]  # 1 is not 1.0
    assert KEYS == {f.name: f.metadata["key"] for f in fields}
    assert all(isinstance(key, Key) and key.meaning for key in KEYS.values())
    assert CHOICES == {name: key.choices for name, key in KEYS.items() if key.choices}
    assert (KEYS["depth"].least, KEYS["out_scale"].above, KEYS["heads"].values) == (
        1, 0, "divides d_model")
    assert CHOICES["placement"] == tuple(placements.PLACEMENTS)
    assert not (PACKAGE / "vocabulary/keys.py").exists()
    made = setting(3, "a meaning", least=1, choices=[1, 3], group="probe")
    assert made.default == 3 and made.metadata["key"] == Key("a meaning", "probe", least=1,
                                                             choices=(1, 3))
    # every setting in one of the three groups
    groups = [key.group for key in KEYS.values()]
    assert set(groups) == set(GROUPS) and [KEYS[n].group for n in ("depth", "seeds", "dtype")] == [
        "model", "probe", "execution"]
    with pytest.raises(ValueError, match="group='modle'"):
        setting(3, "a meaning", group="modle")
    upper = setting(0.5, "a share", group="probe", above=0, below=1)
    assert upper.metadata["key"] == Key("a share", "probe", above=0, below=1)


# TrainSettings' fields as main declared them before the declarations moved into the fields:
# the rows carry them as columns in this order (as_columns)
TRAIN_FIELDS = [
    ("steps", "int", 300), ("lr", "float", 1e-3), ("warmup_steps", "int", 0),
    ("schedule", "str", "cosine"), ("min_lr_ratio", "float", 0.1),
    ("weight_decay", "float", 0.1), ("beta1", "float", 0.9), ("beta2", "float", 0.99),
    ("eps", "float", 1e-8), ("val_fraction", "float", 0.1), ("eval_every", "int", 25),
    ("eval_batches", "int", 4), ("probe_batch", "int", 4),
    ("checkpoints", "tuple[int, ...]", (0, 10, 30, 100, 300)), ("autocast", "str", "off"),
    ("update_steps", "int", 1),  # added since, last: the earlier columns keep their order
]


def test_each_training_key_is_declared_in_its_field():
    """A training key is one TrainSettings field declared as a run setting is (train_setting:
    a Key, in the training keys' own group), and its per-field check is the declarations'
    (check_declared): a field declared with a tighter bound is checked by it, with no other
    code; a field declared without a Key fails at import (declarations)."""
    fields = dataclasses.fields(TrainSettings)
    assert [(f.name, f.type, f.default) for f in fields] == TRAIN_FIELDS
    assert [type(f.default) for f in fields] == [type(d) for _, _, d in TRAIN_FIELDS]
    assert TRAIN_KEYS == {f.name: f.metadata["key"] for f in fields}
    assert all(isinstance(key, Key) and key.meaning and key.group == TRAINING
               for key in TRAIN_KEYS.values())
    assert TRAINING not in GROUPS  # the run settings' tables hold no training key
    # every key bounded or a choice, the bounds the schema and the check had before
    bounds = {name: (k.least, k.above, k.most, k.below, k.choices)
              for name, k in TRAIN_KEYS.items()}
    assert bounds == {
        **{name: (1, None, None, None, ()) for name in
           ("steps", "eval_every", "eval_batches", "probe_batch")},
        "lr": (None, 0, None, None, ()), "warmup_steps": (0, None, None, None, ()),
        "schedule": (None, None, None, None, ("cosine", "constant")),
        "min_lr_ratio": (0, None, 1, None, ()), "weight_decay": (0, None, None, None, ()),
        # below 1: torch's AdamW refuses a beta of 1 (a traceback in the job otherwise)
        "beta1": (0, None, None, 1, ()), "beta2": (0, None, None, 1, ()),
        "eps": (None, 0, 1, None, ()), "val_fraction": (None, 0, None, 1, ()),
        "checkpoints": (0, None, None, None, ()),
        "autocast": (None, None, None, None, ("off", "bfloat16")),
        "update_steps": (1, None, None, None, ()),
    }

    @dataclasses.dataclass(frozen=True)
    class Tighter(TrainSettings):
        beta1: float = train_setting(0.9, "beta1", least=0.5, below=0.95)
        steps: int = train_setting(300, "steps", least=1, most=400)

    assert [f.name for f in dataclasses.fields(Tighter)] == [n for n, _, _ in TRAIN_FIELDS]
    TrainSettings(beta1=0.97, steps=500, checkpoints=(0,)).check()
    with pytest.raises(ConfigError,
                       match=r"^training: steps=500 must be an integer in \[1, 400\]$"):
        Tighter(steps=500, checkpoints=(0,)).check()
    for beta1 in (0.97, 0.4):
        with pytest.raises(ConfigError,
                           match=rf"^training: beta1={beta1} must be a number in \[0.5, 0.95\)$"):
            Tighter(beta1=beta1).check()

    @dataclasses.dataclass(frozen=True)
    class Undeclared:
        steps: int = 300

    with pytest.raises(TypeError, match="Undeclared.steps: declare it with its Key"):
        declarations(Undeclared)


def test_the_generated_files_are_current(tmp_path):
    """The config schema's run settings and training keys, config/README.md's tables and the
    light copy of the metrics are written from the vocabulary and the probes' declarations
    (depthlab.planner.generated): a hand edit of them, or a setting, placement or probe added
    without `python -m depthlab.planner.generated`, fails here."""
    assert generated.stale() == []
    readme = ROOT / "config/README.md"
    for path, _, _ in generated.SECTIONS:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((ROOT / path).read_text())
    edited = readme.read_text().replace("| number of blocks L |", "| blocks |")
    (tmp_path / "config/README.md").write_text(edited)
    assert generated.stale(tmp_path) == ["config/README.md"]
    # the training keys' schema entries and table too: a hand-edited bound, a meaning
    schema = "workflow/schemas/config.schema.yaml"
    assert {(path, name) for path, name, _ in generated.SECTIONS} >= {
        (schema, "training"), ("config/README.md", "training")}
    (tmp_path / "config/README.md").write_text(readme.read_text())
    beta1 = '"exclusiveMaximum": 1, "description": "AdamW\'s beta1"'
    assert beta1 in (ROOT / schema).read_text()
    (tmp_path / schema).write_text((ROOT / schema).read_text().replace(
        beta1, '"exclusiveMaximum": 2, "description": "AdamW\'s beta1"'))
    assert generated.stale(tmp_path) == [schema]
    (tmp_path / schema).write_text((ROOT / schema).read_text())
    assert "| `steps` | 300 | ≥1 | optimiser updates |" in readme.read_text()
    (tmp_path / "config/README.md").write_text(readme.read_text().replace(
        "| `steps` | 300 | ≥1 | optimiser updates |", "| `steps` | 300 | ≥1 | updates |"))
    assert generated.stale(tmp_path) == ["config/README.md"]
    with pytest.raises(ValueError, match="config/README.md: no section 'settings'"):
        generated.with_section("no markers\n", "config/README.md", "settings", "x")


def test_placements_are_defined_once():
    """The registry is the one list: labels, colours and order come from it, and every entry
    has a block function whose docstring cites its definition."""
    assert placements.ORDER == tuple(placements.PLACEMENTS)
    # a colour each, and room for far more placements than the registry holds
    assert len(set(placements.COLORS.values())) == len(placements.PLACEMENTS)
    more = [placements.color(i) for i in range(200)]
    assert len(set(more)) == len(more) and all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in more)
    # and apart: each of the twelve colours after the listed ones at least 60 RGB units from
    # every colour before it (an 18th placement's first free colour was once #c32222, 22 from
    # DyT's #b2182b)
    rgb = [tuple(int(c[k:k + 2], 16) for k in (1, 3, 5)) for c in more]
    listed = len(placements.LISTED)
    assert all(math.dist(rgb[i], rgb[j]) >= 60 for i in range(listed, listed + 12)
               for j in range(i)), more[listed:listed + 12]
    # a marker each, so that curves differ in shape as well as colour
    assert len(set(placements.MARKERS.values())) == len(placements.PLACEMENTS)
    assert {p.family for p in placements.PLACEMENTS.values()} == set(placements.FAMILIES)
    for p in placements.PLACEMENTS.values():
        assert p.block.__doc__ and p.label and p.summary
    text = "".join(p.read_text() for p in (PACKAGE / "studies").rglob("*.py"))
    assert '"post", "pre"' not in text and '"pre", "post"' not in text  # no second order


def test_the_placements_keep_their_colours():
    """The figures' colours of the placements as they were drawn before the colours were
    generated (6cd32b4), and the calibrated Pre-LN variant's, the first after the 17 of them
    (the first after an 18th's where there is one)."""
    before = {"post": "#0173b2", "pre": "#de8f05", "none": "#029e73", "deepnorm": "#d55e00",
              "resi_dual": "#cc78bc", "sandwich": "#ca9161", "peri": "#fbafe4",
              "rezero": "#949494", "lns": "#ece133", "deepnorm_torchscale": "#e7298a",
              "deepnorm_alpha": "#7f2704", "deepnorm_beta": "#023858", "branch_scaling": "#00441b",
              "mix_ln": "#54278f", "dyt": "#b2182b", "normformer": "#56b4e9",
              "t_fixup": "#252525"}
    assert {n: placements.COLORS[n] for n in before} == before
    assert placements.color(17) == "#999933"


def test_target_names_and_outputs_are_unique_and_declared_once():
    names = [t.name for t in TARGETS]
    assert len(names) == len(set(names))
    paths = [p for t in TARGETS for p in t.outputs.values()]
    assert len(paths) == len(set(paths))
    for t in TARGETS:
        assert t.caption and t.description and t.reads, t.name
        assert callable(drawing(t)), t.name
        if t.kind == "table":
            assert t.title, t.name


def planned(output: str) -> tuple[dict[str, int], set[str]]:
    """The job count per rule of a dry run (its 'Job stats' table) and the wildcards of its
    measure jobs."""
    stats = output[output.index("Job stats:"):].split("total")[0]
    counts = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)}
    measured = set(re.findall(r"^rule measure:\n(?:    .*\n)*?    wildcards: (.*)$", output, re.M))
    return counts, measured


@pytest.mark.workflow
@pytest.mark.parametrize("target, measured, arms", [
    ("fig_grad_ratio_by_depth",
     {f"study=stack96, arm=grad, job=placement-{p}" for p in ("post", "pre", "none")}, 1),
    ("fig_increments_by_layer", {"study=varsplit, arm=base, job=depth-64",
                                 "study=varsplit, arm=init, job=init-torch_default"}, 2),
])
def test_a_figure_from_nothing_measures_only_what_it_reads(tmp_path, target, measured, arms):
    """The default study's dry run of one figure: the measure jobs of the arms it reads, one fit
    per arm, the figure; nothing else."""
    work = copy_workflow(tmp_path)
    counts, jobs = planned(run_snakemake(work, target, "-n").stdout)
    assert counts == {"measure": len(measured), "fit": arms, target: 1}, counts
    assert jobs == measured
