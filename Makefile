# Two entry points: `make run` (the whole study) and `make test` (the test suite).
# Both create .venv with the pinned stack on first use.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/snakemake: envs/requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r envs/requirements.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@

.PHONY: setup run test lint
setup: $(BIN)/snakemake

run: setup
	$(BIN)/snakemake --cores all

test: setup
	$(BIN)/pytest -q

lint: setup
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile workflow
	$(BIN)/ruff check src tests workflow benchmarks
