#!/usr/bin/env bash
# The device check of a bare GPU machine, in one run (benchmarks/gpu_bench.py does the work and
# says what it measures): the same work on the device (cuda where torch sees one, else the CPU)
# against the CPU threads of the same machine, as seconds and their ratio, with the largest
# float64 difference between the two. A table on stdout, a CSV in $OUT (default
# results/benchmarks/)/gpu_bench.csv; exit status 1 if a part failed or float64 differs by more
# than 1e-10.
#
#   bash benchmarks/gpu_bench.sh [WHEELS_DIR] [--quick] [--device cpu|cuda]
#   bash benchmarks/gpu_bench.sh [WHEELS_DIR] --study config/scale.yaml   # instead of the parts:
#       that config from nothing on the device alone, --cores <CPU count>, on cuda with
#       --resources gpu_mem_mb=<the GPU's memory> (the scale study's 6-minute floor)
#
# Python: $PYTHON, else .venv/bin/python, else python3 on PATH, with the torch it has; nothing
# comes from a network. Without WHEELS_DIR that Python must import torch, snakemake, pandas,
# pyarrow, seaborn, scipy (and depthlab's other runtime packages); depthlab itself comes from
# src/. With WHEELS_DIR (a folder of wheels; `make gpu-wheels` builds one, wheels/, where a
# package index is reached: benchmarks/wheels.py): a venv in a temporary folder with
# --system-site-packages (and the found Python's own site-packages, where it is itself a venv),
# so the machine's torch is kept; what is missing is installed from that folder alone
# (pip --no-index --find-links), then depthlab (--no-deps -e .; the folder needs setuptools 64
# or later, and wheel below setuptools 70.1, unless the venv has them).
#
# How long, by estimate (no GPU run yet): on one H200 with 16 CPU cores about 6 min, 8 at most;
# the CPU side from docs/PERFORMANCE.md's 2-core timings at ~250 GFLOP/s float64 on 16 cores,
# the GPU side mostly the weights, which are drawn on the CPU (part_s in the CSV: the real ones):
#   1. tiny study from nothing, cpu then cuda (18 compute jobs; --cores 16)     ~1.5-2 min
#   2. fig_grad_ratio_by_depth from nothing, cpu then cuda (3.7 TFLOP float64;
#      3 measure jobs of 36 seeds, 5 threads each)                             ~1.5 min
#   3. the scale study's 6 L = 1024 cells at 2 seeds (2.2 TFLOP), CPU then GPU ~1 min
#   4. the training step (L = 24), depthlab and the plain loop, CPU and GPU    ~0.5 min
#   5. the L = 96 cell (36 seeds, 0.6 TFLOP), CPU then GPU, busy fraction, and
#      on the GPU in passes of 12 and of 36 seeds                             ~0.6 min
#   6. one pass of it (3 seeds), its block loop eager on CPU and GPU, compiled
#      on the GPU (torch.compile of one block, forward and backward)           ~1-2 min
#   imports and the dependency check                                           ~0.2 min
# --quick: every part at a toy size (the test suite's run: about a minute on 2 idle cores).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [[ -n "${PYTHON:-}" ]]; then
    py=$PYTHON
elif [[ -x .venv/bin/python ]]; then
    py=.venv/bin/python
else
    py=$(command -v python3) || {
        echo "no python3 on PATH: set PYTHON=/path/to/python" >&2
        exit 1
    }
fi
wheels=
if [[ $# -gt 0 && $1 != -* ]]; then
    wheels=$1
    shift
    [[ -d $wheels ]] || { echo "$wheels: not a folder (of wheels)" >&2; exit 1; }
    wheels=$(cd "$wheels" && pwd)
fi
# depthlab from this checkout (the workflow's copies put their own src/ first for the jobs)
export PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}"

# the distributions, by the module each provides, that the benchmark and the workflow import;
# prints those this Python cannot import
missing() {
    "$1" - <<'EOF'
import importlib
need = {"torch": "torch", "numpy": "numpy", "pandas": "pandas", "scipy": "scipy",
        "pyarrow": "pyarrow", "matplotlib": "matplotlib", "seaborn": "seaborn",
        "tabulate": "tabulate", "yaml": "PyYAML", "jsonschema": "jsonschema", "psutil": "psutil",
        "snakemake": "snakemake", "depthlab": "depthlab"}
gone = []
for module, dist in need.items():
    try:
        importlib.import_module(module)
    except Exception:
        gone.append(dist)
print(" ".join(gone))
EOF
}

lacking=$(missing "$py")
if [[ -n $wheels ]]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/depthlab-gpubench-venv.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    venv=$tmp/venv
    if "$py" -m venv --system-site-packages "$venv" 2>/dev/null; then
        pip=("$venv/bin/python" -m pip)
    else  # no ensurepip (Debian without python3-venv): the found Python's pip installs there
        "$py" -m venv --clear --without-pip --system-site-packages "$venv"
        pip=("$py" -m pip --python "$venv/bin/python")
    fi
    # where the found Python is itself a venv, its packages (torch) are not the system's: its
    # site folders are added as site folders (their own .pth files read), after the venv's
    purelib=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
    "$py" -c 'import site
for d in site.getsitepackages():
    print(f"import site; site.addsitedir({d!r})")' >"$purelib/found-python.pth"
    deps=$(tr ' ' '\n' <<<"$lacking" | grep -vx -e depthlab -e '' || true)
    if [[ -n $deps ]]; then
        echo "installing from $wheels: $(echo $deps)"
        # shellcheck disable=SC2086  # one argument per distribution
        "${pip[@]}" install -q --no-index --find-links "$wheels" $deps
    fi
    # the venv's own setuptools builds depthlab where it can (64 or later; below 70.1 with wheel)
    isolation=--no-build-isolation
    "$venv/bin/python" - 2>/dev/null <<'EOF' || isolation=
import importlib.util, sys
import setuptools
v = tuple(int(p) for p in setuptools.__version__.split(".")[:2])
sys.exit(not (v >= (70, 1) or v >= (64, 0) and importlib.util.find_spec("wheel")))
EOF
    "${pip[@]}" install -q --no-index --find-links "$wheels" --no-deps $isolation -e .
    py=$venv/bin/python
    lacking=$(missing "$py")
fi
if [[ -n $lacking ]]; then
    echo "$py cannot import: $lacking (bash benchmarks/gpu_bench.sh WHEELS_DIR installs them)" >&2
    exit 1
fi

out="${OUT:-results/benchmarks}/gpu_bench.csv"
"$py" -m benchmarks.gpu_bench --out "$out" "$@"
