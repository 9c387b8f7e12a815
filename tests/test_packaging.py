"""What a fresh machine installs: pinned versions that agree between pip and conda, a Python
found by the Makefile, and no path outside the repository in what the tests and the default
run read."""

from __future__ import annotations

import ast
import re
import subprocess

import yaml
from conftest import ROOT


def pins(lines) -> dict[str, str]:
    """name -> version of every `name==version` line (comments dropped)."""
    out = {}
    for line in lines:
        match = re.match(r"\s*([A-Za-z0-9_.\-]+)==([^\s#]+)", line.split("#")[0])
        if match:
            out[match[1].lower()] = match[2]
    return out


def test_conda_env_pins_the_runtime_packages_of_the_requirements():
    required = pins((ROOT / "envs/requirements.txt").read_text().splitlines())
    env = yaml.safe_load((ROOT / "workflow/envs/depthlab.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda = pins(pip)
    assert conda and all(required[name] == version for name, version in conda.items()), conda
    # only what the jobs import: no workflow engine, tests or lint tools in a job's environment
    assert not {"snakemake", "pytest", "ruff", "snakefmt"} & set(conda)
    assert {"torch", "numpy", "pandas", "pyarrow", "scipy", "matplotlib"} <= set(conda)


def strings(node):
    """Every string value of a parsed YAML document."""
    if isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)
    elif isinstance(node, str):
        yield node


def code_strings(source: str) -> list[str]:
    """The string literals of a Python file that are not docstrings."""
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs]


def test_nothing_points_outside_the_repository():
    """No code, rule or config value the tests or the workflow run refers to ../shared (the
    notes may be named in comments and docs: they are the specification, not an input)."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    for name in tracked:
        text = (ROOT / name).read_text(errors="replace")
        if name.endswith((".yaml", ".yml")):
            assert not [s for s in strings(yaml.safe_load(text)) if "../shared" in s], name
        elif name.endswith(".py") and name != "tests/test_packaging.py":
            assert not [s for s in code_strings(text) if "../shared" in s], name
        elif name.endswith((".smk", ".toml", ".sh")) or name in ("Makefile", "Snakefile",
                                                                  ".ci/run"):
            code = "\n".join(line.split("#")[0] for line in text.splitlines())
            assert "../shared" not in code, name


def test_makefile_finds_a_python_of_3_11_or_newer():
    out = subprocess.run(["make", "-s", "-C", str(ROOT), "print-python"], capture_output=True,
                         text=True, check=True).stdout.strip()
    version = subprocess.run([out, "-c", "import sys; print(sys.version_info[:2] >= (3, 11))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == "True", out
