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

# TEST_WORKERS > 1 spreads the tests over that many processes (pytest-xdist, --dist loadfile
# so a module's experiment fixture runs once), then runs those marked `serial` alone (wall-clock
# judgements, browsers, Ray; tests/conftest.py); both parts always run. The default is one
# process: on two cores the experiment tests already keep both busy (BLAS threads, process
# pools), and two workers made the parallel part slower per test by 2.7x and timed out the
# browser test (measured in a clean-clone CI run, 2026-11-27).
TEST_WORKERS ?= 1
test: lint typecheck
ifeq ($(TEST_WORKERS),1)
	$(BIN)/python -m pytest -q --durations=25 tests
else
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not serial" --durations=25 tests; a=$$?; \
	$(BIN)/python -m pytest -q -m serial --durations=10 tests; b=$$?; \
	test $$a -eq 0 && test $$b -eq 0
endif

bench: $(VENV)/.dev
	$(BIN)/python -m benchmarks --out results/bench

clean:
	rm -rf $(VENV) results .mypy_cache .pytest_cache .ruff_cache .hypothesis
