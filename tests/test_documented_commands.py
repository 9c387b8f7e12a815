"""Every command in the shell blocks of README.md and config/README.md runs as written: each
snakemake command in a fresh copy of the workflow as a dry run (`-n` added; the tiny study
itself runs for real, from the README's own words, in the suite's tiny run, conftest.shared_run),
the report command for real on that tiny run, and each make target with `make -n` (its recipe
resolves; CI runs make setup, lint and test themselves)."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
from conftest import ROOT, copy_workflow, run_snakemake, started_in

DOCS = ("README.md", "config/README.md")


def documented_commands() -> list[tuple[str, str]]:
    """(document, command) for each line of each bash block, its comment cut off."""
    out = []
    for doc in DOCS:
        for block in re.findall(r"```bash\n(.*?)```", (ROOT / doc).read_text(), re.S):
            out += [(doc, line.split("#", 1)[0].strip()) for line in block.splitlines()
                    if line.split("#", 1)[0].strip()]
    return out


COMMANDS = documented_commands()
SNAKEMAKE = [c for c in COMMANDS if c[1].split()[0].endswith("snakemake")]
MAKE = [c for c in COMMANDS if c[1].split()[0] == "make"]


def test_every_documented_command_is_one_this_module_runs():
    assert SNAKEMAKE and MAKE and len(SNAKEMAKE) + len(MAKE) == len(COMMANDS)
    # the venv's snakemake, as `make setup` installs it (a bare `snakemake` may be another)
    assert all(command.startswith(".venv/bin/snakemake ") for _, command in SNAKEMAKE)


@pytest.mark.parametrize("doc, command", MAKE, ids=[c for _, c in MAKE])
def test_each_make_command_resolves(doc, command):
    done = subprocess.run(["make", "-n", *shlex.split(command)[1:]], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.workflow
@pytest.mark.parametrize("doc, command", SNAKEMAKE, ids=[c for _, c in SNAKEMAKE])
def test_each_snakemake_command_runs_as_written(doc, command, tmp_path, tiny_run):
    words = shlex.split(command)[1:]
    if "--report" in words:  # a report of the tiny run's results, as the README says
        done = run_snakemake(started_in(tiny_run), *words, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert (tiny_run / words[words.index("--report") + 1]).stat().st_size > 0
        return
    work = copy_workflow(tmp_path)
    done = run_snakemake(work, *words, "-n", check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in output, output
    assert not (work / "results").exists() and not (work / "runs").exists()
