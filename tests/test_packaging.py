"""What a fresh machine installs: pinned versions that agree between pip and conda, a Python
found by the Makefile, one version in every release file, and no path outside the repository
in any project file."""

from __future__ import annotations

import re
import subprocess
import tomllib

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


def test_nothing_points_outside_the_repository():
    """No project file refers to the shared folder beside the repository, not even in a
    comment or a doc: the notes are named by their titles (config/README.md), not by a path
    outside the repository."""
    pointer = "/".join(("..", "shared"))  # spelt in parts: this file holds no pointer either
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    outside = [name for name in tracked
               if pointer in (ROOT / name).read_text(errors="replace")]
    assert not outside, outside


def test_makefile_finds_a_python_of_3_11_or_newer():
    out = subprocess.run(["make", "-s", "-C", str(ROOT), "print-python"], capture_output=True,
                         text=True, check=True).stdout.strip()
    version = subprocess.run([out, "-c", "import sys; print(sys.version_info[:2] >= (3, 11))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == "True", out


def test_release_files_give_one_version():
    """pyproject.toml, CITATION.cff and the newest entry of CHANGELOG.md name the same version;
    CITATION.cff's release date is that entry's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    newest = re.search(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$",
                       (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert newest, "CHANGELOG.md: no '## [x.y.z] - date' entry"
    assert project == str(citation["version"]) == newest[1]
    assert str(citation["date-released"]) == newest[2]


def test_catalog_file_has_the_catalogs_current_keys():
    """.snakemake-workflow-catalog.yml: the keys of the catalog's current template (apptainer,
    not the old singularity; report under software-stack-deployment), each set to a bool."""
    usage = yaml.safe_load((ROOT / ".snakemake-workflow-catalog.yml").read_text())["usage"]
    assert set(usage["mandatory-flags"]) == {"desc", "flags"}
    stack = usage["software-stack-deployment"]
    assert set(stack) == {"conda", "apptainer", "apptainer+conda", "report"}
    assert all(isinstance(v, bool) for v in stack.values())
