# Two entry points: `make run` (the whole study) and `make test` (the test suite); `make lint`
# runs the three linters. All create .venv with the pinned stack (envs/requirements.txt) on
# first use, with the first Python 3.11 or newer on PATH; `make PY=/path/to/python3.12 test`
# chooses another. torch: README.md, "Install" (CPU or CUDA build).
PY ?= $(shell for p in python3 python3.14 python3.13 python3.12 python3.11; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	2>/dev/null && { command -v $$p; break; }; done)
# TORCH_INDEX: a PyTorch wheel index for torch's build, e.g. https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/snakemake: envs/requirements.txt pyproject.toml
	@test -n "$(PY)" || { echo "no Python 3.11 or newer found on PATH; set PY=/path/to/python3" >&2; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(if $(TORCH_INDEX),$(BIN)/pip install -q --index-url $(TORCH_INDEX) $$(grep '^torch==' envs/requirements.txt))
	$(BIN)/pip install -q -r envs/requirements.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@

.PHONY: setup run test lint print-python
setup: $(BIN)/snakemake

run: setup
	$(BIN)/snakemake --cores all

test: setup
	$(BIN)/pytest -q

lint: setup
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile workflow
	$(BIN)/ruff check src tests workflow benchmarks

print-python:
	@echo $(PY)
