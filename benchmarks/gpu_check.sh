#!/usr/bin/env bash
# On a machine with a GPU: install the CUDA lock, then compare every tiny-study cell and the
# scale study's L = 1024 cells between the CPU and the GPU (float64: to 1e-10 relative) and time
# them (benchmarks/gpu_check.py; the table goes to $OUT or results/benchmarks/).
set -euo pipefail
cd "$(dirname "$0")/.."
make TORCH=cuda setup
out="${OUT:-results/benchmarks}/gpu_check.csv"
.venv/bin/python -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0))'
.venv/bin/python -m benchmarks.gpu_check --out "$out"
