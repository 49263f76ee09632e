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

$(VENV)/.serve: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[engine,serve]'
	touch $@ $(VENV)/.core

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[all,dev]'
	touch $@ $(VENV)/.core $(VENV)/.serve

# The Andes serving stack on the built-in model: chat page, OpenAI API and /metrics.
HOST ?= 127.0.0.1
PORT ?= 8000
run: $(VENV)/.serve
	$(BIN)/kairos serve --host $(HOST) --port $(PORT)

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(VENV)/.dev
	$(BIN)/mypy

# Most tests spread over TEST_WORKERS processes; those marked `serial` (wall-clock judgements,
# Ray; tests/conftest.py) run alone afterwards. Both parts always run; either failing fails.
# --dist loadfile keeps a file on one worker, so a module fixture (an experiment) runs once.
TEST_WORKERS ?= 2
test: lint typecheck
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not serial" --durations=25 tests; a=$$?; \
	$(BIN)/python -m pytest -q -m serial --durations=10 tests; b=$$?; \
	test $$a -eq 0 && test $$b -eq 0

bench: $(VENV)/.dev
	$(BIN)/python -m benchmarks --out results/bench

clean:
	rm -rf $(VENV) results .mypy_cache .pytest_cache .ruff_cache .hypothesis
