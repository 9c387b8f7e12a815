"""What a fresh machine installs: a lock of the whole stack that agrees with the pinned
versions and is what .venv holds, pins that agree between pip and conda, a Python found by the
Makefile, one version in every release file, and no path outside the repository in any project
file."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from packaging.utils import canonicalize_name
from packaging.version import Version

LOCKS = ("envs/lock-cpu.txt", "envs/lock-cuda.txt")
# conda-forge's names for what the PyPI packages install (no Qt backend, no statsmodels)
CONDA_NAMES = {"matplotlib-base": "matplotlib", "seaborn-base": "seaborn"}


def pins(lines) -> dict[str, str]:
    """name -> version of every `name==version` line (comments dropped, names normalised)."""
    out = {}
    for line in lines:
        match = re.match(r"\s*([A-Za-z0-9_.\-]+)==([^\s#]+)", line.split("#")[0])
        if match:
            out[canonicalize_name(match[1])] = match[2]
    return out


def locked(path: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, sha256 hashes) of every entry of a lock (`uv pip compile
    --generate-hashes`: a `name==version \\` line, then its indented hash and comment lines)."""
    out = {}
    for entry in re.split(r"\n(?=\S)", (ROOT / path).read_text()):
        match = re.match(r"([A-Za-z0-9_.\-]+)==(\S+)", entry)
        if match:
            out[canonicalize_name(match[1])] = (
                match[2], re.findall(r"--hash=sha256:([0-9a-f]{64})\b", entry))
    return out


def required() -> dict[str, str]:
    """The pins of envs/requirements.txt."""
    return pins((ROOT / "envs/requirements.txt").read_text().splitlines())


NODEPS = "envs/nodeps.txt"  # installed after the lock without dependencies (Makefile)
INSTALLER = "envs/uv.txt"  # uv, which installs the lock and NODEPS (Makefile)


@pytest.mark.parametrize("path", LOCKS)
def test_lock_pins_the_requirements_and_hashes_every_entry(path):
    """Each lock holds every package of envs/requirements.txt at its version (the CPU lock's
    torch adds the local label +cpu), and at least one sha256 hash for every entry, so that
    `pip install --require-hashes` takes it."""
    lock = locked(path)
    assert len(lock) > len(required())  # the dependencies too
    for name, version in required().items():
        assert name in lock, name
        assert Version(lock[name][0]).public == str(Version(version)), (name, lock[name][0])
    assert not [name for name, (_, hashes) in lock.items() if not hashes]


def test_locks_differ_in_torch_and_the_cuda_libraries_only():
    """Every package of the CPU lock is in the CUDA lock at the same version, but torch; what
    the CUDA lock adds is CUDA's libraries and triton."""
    cpu, cuda = locked(LOCKS[0]), locked(LOCKS[1])
    assert cpu.keys() <= cuda.keys()
    assert [name for name in cpu if cpu[name][0] != cuda[name][0]] == ["torch"]
    added = cuda.keys() - cpu.keys()
    assert added and all(name.startswith(("nvidia-", "cuda-")) or name == "triton"
                         for name in added), added


def test_gpu_wheels_take_every_pin_of_the_cuda_lock():
    """benchmarks/wheels.py (`make gpu-wheels`) constrains pip by the CUDA lock: its pins are
    every entry of the lock at the lock's version, read here by the lock's own format."""
    from benchmarks.wheels import pins as wheel_pins

    found = dict(line.split("==") for line in wheel_pins(ROOT / LOCKS[1]))
    assert found  # an empty lock would read as equal
    assert {canonicalize_name(n): v for n, v in found.items()} == {
        name: version for name, (version, _) in locked(LOCKS[1]).items()}


def test_venv_holds_exactly_a_lock():
    """The Makefile's .venv holds what one lock names, at its versions, and nothing else but
    depthlab and envs/nodeps.txt's and envs/uv.txt's packages at theirs (the lock whose torch
    is installed: CPU or CUDA)."""
    if Path(sys.prefix).resolve() != ROOT / ".venv":
        pytest.skip(f"not the Makefile's .venv: {sys.prefix}")
    installed = {canonicalize_name(d.metadata["Name"]): d.version
                 for d in importlib.metadata.distributions()}
    installed.pop("depthlab")
    for name, (version, _) in {**locked(NODEPS), **locked(INSTALLER)}.items():
        assert installed.pop(name, None) == version, name
    locks = [{name: version for name, (version, _) in locked(path).items()} for path in LOCKS]
    assert installed in locks, sorted(installed.items() ^ locks[0].items())


@pytest.mark.parametrize("path", [NODEPS, INSTALLER])
def test_extra_installs_are_hashed_and_outside_the_requirements_and_locks(path):
    """envs/nodeps.txt (torchscale: its declared dependencies cannot be installed beside the
    lock's torch) and envs/uv.txt (the installer) pin each package with its hashes, for an
    install with `--no-deps --require-hashes`; none is in envs/requirements.txt, which `make
    lock` resolves with every dependency, nor in a lock."""
    extra = locked(path)
    assert extra and all(hashes for _, hashes in extra.values())
    assert pins((ROOT / path).read_text().splitlines()).keys() == extra.keys()
    assert not extra.keys() & required().keys()
    assert all(not extra.keys() & locked(lock).keys() for lock in LOCKS)


def test_conda_env_pins_the_runtime_packages_of_the_requirements():
    """workflow/envs/depthlab.yaml pins, from conda-forge or pip, the packages the jobs import
    at envs/requirements.txt's versions (torch: +cpu, PyTorch's CPU build)."""
    env = yaml.safe_load((ROOT / "workflow/envs/depthlab.yaml").read_text())
    conda = {CONDA_NAMES.get(name, name): version for name, version
             in pins(d for d in env["dependencies"] if isinstance(d, str)).items()}
    pip = pins(next(d["pip"] for d in env["dependencies"] if isinstance(d, dict)))
    assert not conda.keys() & pip.keys()
    both = conda | pip
    assert all(Version(version).public == str(Version(required()[name]))
               for name, version in both.items()), both
    assert "torch" in pip and "numpy" in conda
    # only what the jobs import: no workflow engine, tests or lint tools in a job's environment
    assert not {"snakemake", "pytest", "ruff", "snakefmt"} & set(both)
    assert {"torch", "numpy", "pandas", "pyarrow", "scipy", "matplotlib"} <= set(both)


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
