# kairos: `make run` and `make test` set everything up on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SHARED ?= ../shared
export KAIROS_SHARED := $(abspath $(SHARED))

.PHONY: run test bench lint typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip setuptools wheel

# Stamps make repeated targets instant: they re-install only when pyproject.toml changes.
$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[all,dev]'
	touch $@ $(VENV)/.core

run: $(VENV)/.core
	$(BIN)/kairos trace describe $(SHARED)/data/azure_llm_conv_1h.csv --out results/trace

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(VENV)/.dev
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest -q tests

bench: $(VENV)/.dev
	$(BIN)/python -m benchmarks --out results/bench

clean:
	rm -rf $(VENV) results .mypy_cache .pytest_cache .ruff_cache .hypothesis
