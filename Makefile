# Two entry points: `make run` (the whole study) and `make test` (the test suite); `make lint`
# runs the three linters. All create .venv on first use, and anew when its lock changes, from a
# lock of the whole stack (every package pinned with its hashes): envs/lock-cpu.txt (torch's
# CPU build) or, with TORCH=cuda, envs/lock-cuda.txt (PyPI's torch, CUDA 13.0, Linux x86_64);
# then envs/nodeps.txt (hashed too, installed without dependencies: torchscale); then depthlab
# itself. `make lock` regenerates both locks from envs/requirements.txt. .venv gets the
# first Python 3.11 or newer on PATH; `make PY=/path/to/python3.12 test` chooses another (the
# CPU lock holds torch's wheel for CPython 3.11 only). torch: docs/INSTALL.md.
PY ?= $(shell for p in python3 python3.14 python3.13 python3.12 python3.11; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	2>/dev/null && { command -v $$p; break; }; done)
TORCH ?= cpu
LOCK := envs/lock-$(TORCH).txt
# TORCH_INDEX: an extra index for the CPU lock's torch wheel where pip's find-links lack it,
# https://download.pytorch.org/whl/cpu (whatever the index, only locked hashes are installed)
TORCH_INDEX ?=
VENV := .venv
BIN := $(VENV)/bin

# the installer: uv (envs/uv.txt: pinned and hashed, installed into .venv by pip), which installs
# the lock in about half pip's time (bytecode compiled); it finds torch's CPU wheel where pip
# does: PIP_FIND_LINKS, or else pip's configured find-links (this project's machines keep the
# wheel in /opt/wheels), and TORCH_INDEX
FIND_LINKS ?= $(or $(PIP_FIND_LINKS),$(shell $(PY) -m pip config get global.find-links 2>/dev/null))
INSTALL = $(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode --require-hashes \
	--no-deps $(FIND_LINKS:%=--find-links %) $(TORCH_INDEX:%=--extra-index-url %)

# .venv from nothing (venv --clear) whenever the lock, envs/nodeps.txt, envs/uv.txt or TORCH
# changes: exactly the lock (complete, so without resolving), then envs/nodeps.txt: torchscale
# (DeepNorm's official layer, for tests/test_official.py), whose declared dependencies
# (fairscale, timm and through it torchvision, which pins another torch) cannot go into the lock
# and are never called by the layer the tests build; hashed like the lock, and not in
# envs/requirements.txt (`make lock`)
$(VENV)/.lock-$(TORCH): $(LOCK) envs/nodeps.txt envs/uv.txt
	@test -n "$(PY)" || { echo "no Python 3.11 or newer found on PATH; set PY=/path/to/python3" >&2; exit 1; }
	$(PY) -m venv --clear $(VENV)
	$(BIN)/pip install -q --require-hashes -r envs/uv.txt
	$(INSTALL) -r $(LOCK)
	$(INSTALL) -r envs/nodeps.txt
	touch $@

# depthlab itself, editable; its dependencies are the lock's
$(VENV)/.depthlab: $(VENV)/.lock-$(TORCH) pyproject.toml
	$(BIN)/pip install -q --no-deps -e .
	touch $@

.PHONY: setup run test test-fast lint lock gpu-wheels print-python
setup: $(VENV)/.depthlab

run: setup
	$(BIN)/snakemake --cores all

test: setup
	$(BIN)/pytest -q -n auto

# the inner loop: the tests that start no Snakemake run (marker `workflow`) and take under
# about a second (marker `slow`)
test-fast: setup
	$(BIN)/pytest -q -n auto -m "not workflow and not slow"

lint: setup
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile workflow
	$(BIN)/ruff check src tests workflow benchmarks

# `make lock`: uv (on PATH) resolves envs/requirements.txt for CPython 3.11 on Linux x86_64 and
# writes the hashes of every wheel of each version (CPython 3.12 and 3.13 install from the CUDA
# lock too); a pin already in a lock stays unless envs/requirements.txt moves it
# (LOCK_UPGRADE=--upgrade moves them all). CPU_WHEELS: where uv finds torch's CPU build: this
# project's machines keep it in /opt/wheels; elsewhere --extra-index-url
# https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match (not tried here).
UV ?= uv
CPU_WHEELS ?= --find-links /opt/wheels
COMPILE = $(strip $(UV) pip compile envs/requirements.txt --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28 --generate-hashes $(LOCK_UPGRADE))
lock:
	$(COMPILE) $(CPU_WHEELS) -o envs/lock-cpu.txt \
		--custom-compile-command "$(COMPILE) $(CPU_WHEELS) -o envs/lock-cpu.txt" >/dev/null
	$(COMPILE) -o envs/lock-cuda.txt \
		--custom-compile-command "$(COMPILE) -o envs/lock-cuda.txt" >/dev/null
	sed -i '2a # torch: the CPU build, hashed from the one wheel found (CPython 3.11, Linux x86_64).' \
		envs/lock-cpu.txt
	sed -i '2a # torch: the build on PyPI, CUDA 13.0 (cuda-toolkit, nvidia-*), Linux x86_64.' \
		envs/lock-cuda.txt
	sed -i '2a # Regenerate: `make lock` (this command; pins stay unless envs/requirements.txt moves them).' \
		envs/lock-cpu.txt envs/lock-cuda.txt

# `make gpu-wheels`: the folder of wheels benchmarks/gpu_bench.sh installs from on a GPU machine
# that reaches no package index (snakemake, jsonschema and their dependencies, the CUDA lock's
# versions, for that machine's CPython: GPU_PYTHON); benchmarks/wheels.py says what and how
WHEELS ?= wheels
GPU_PYTHON ?= 3.12
gpu-wheels: setup
	$(BIN)/python -m benchmarks.wheels $(WHEELS) --python-version $(GPU_PYTHON)

print-python:
	@echo $(PY)
