"""The folder of wheels that `bash benchmarks/gpu_bench.sh WHEELS_DIR` installs from on a GPU
machine that reaches no package index, built here, where one is reached.

What the device check needs beyond the numerical stack a GPU image already holds (torch, numpy,
pandas, scipy, pyarrow, matplotlib, seaborn): snakemake and jsonschema with every dependency,
and the small packages gpu_bench.sh checks for (tabulate, PyYAML, psutil), plus setuptools and
wheel to install depthlab itself. Versions are the CUDA lock's (envs/lock-cuda.txt); the
dependencies are resolved by this Python's pip, then each is fetched for the GPU machine's
CPython (`--python-version`, Linux x86_64): its binary wheel, or, where the index has only a
source archive (connection_pool), a pure-Python wheel built here.

    make gpu-wheels                     # wheels/ for CPython 3.12 (the GPU image's Python)
    python -m benchmarks.wheels OUT [--python-version 3.12]

Then, with the device tool, `carry` the folder and run `bash benchmarks/gpu_bench.sh wheels`.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ("snakemake", "jsonschema", "tabulate", "PyYAML", "psutil", "setuptools", "wheel")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux_2_5_x86_64", "manylinux1_x86_64")


def pins(lock: Path) -> list[str]:
    """The `name==version` lines of a hashed lock (its hashes and comments dropped)."""
    return re.findall(r"^([A-Za-z0-9_.-]+==[^\s\\]+)", lock.read_text(), flags=re.M)


def pip(*args: str) -> subprocess.CompletedProcess:
    """This Python's pip, its output captured."""
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


def closure(lock: Path) -> list[str]:
    """NEEDED with every dependency, as `name==version`, resolved by pip (a dry run that
    installs nothing) under the lock's pins."""
    with tempfile.TemporaryDirectory() as tmp:
        constraints, report = Path(tmp, "constraints.txt"), Path(tmp, "report.json")
        constraints.write_text("\n".join(pins(lock)) + "\n")
        done = pip("install", "-q", "--dry-run", "--ignore-installed", "--report", str(report),
                   "-c", str(constraints), *NEEDED)
        if done.returncode:
            raise SystemExit(f"pip could not resolve {' '.join(NEEDED)}:\n{done.stderr}")
        found = json.loads(report.read_text())["install"]
    return sorted(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in found)


def fetch(requirement: str, out: Path, python_version: str) -> str:
    """One requirement's wheel into `out` for CPython `python_version` on Linux x86_64: the
    index's binary wheel, else one built here from its source, which must be pure Python (a
    wheel built here for another CPU or Python would not install there). Says which."""
    abi = "cp" + python_version.replace(".", "")
    tags = [a for p in PLATFORMS for a in ("--platform", p)]
    done = pip("download", "-q", "--no-deps", "--only-binary=:all:", "--implementation", "cp",
               "--python-version", python_version, "--abi", abi, "--abi", "abi3", "--abi", "none",
               *tags, "-d", str(out), requirement)
    if not done.returncode:
        return "downloaded"
    with tempfile.TemporaryDirectory() as tmp:
        built = pip("wheel", "-q", "--no-deps", "-w", tmp, requirement)
        wheels = list(Path(tmp).glob("*.whl"))
        if built.returncode or not wheels or not wheels[0].name.endswith("-none-any.whl"):
            raise SystemExit(f"{requirement}: no wheel for CPython {python_version} on the index, "
                             f"and none pure Python built here:\n{done.stderr}{built.stderr}")
        wheels[0].rename(out / wheels[0].name)
    return "built here (pure Python)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder of wheels (made if absent)")
    parser.add_argument("--python-version", default="3.12",
                        help="the GPU machine's CPython, major.minor (default 3.12)")
    parser.add_argument("--lock", type=Path, default=ROOT / "envs" / "lock-cuda.txt")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for requirement in closure(args.lock):
        print(f"{requirement}: {fetch(requirement, args.out, args.python_version)}")
    size = sum(f.stat().st_size for f in args.out.glob("*.whl"))
    print(f"{args.out}: {len(list(args.out.glob('*.whl')))} wheels, {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
