# gpureplay: `make run` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# numba's on-disk cache lives outside the source tree (never commit it; CI starts empty).
export NUMBA_CACHE_DIR ?= $(CURDIR)/.cache/numba
export HYDRA_FULL_ERROR ?= 0

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The main job: the full real Philly trace on Philly's machines, strict FIFO vs Volcano-like gang-binpack.
run: $(STAMP)
	rm -rf results/make-run
	$(BIN)/gpureplay run trace=philly cluster=philly scheduler=fifo hydra.run.dir=results/make-run/fifo
	$(BIN)/gpureplay run trace=philly cluster=philly scheduler=gang-binpack hydra.run.dir=results/make-run/gang-binpack
	$(BIN)/gpureplay compare results/make-run

lint: $(STAMP)
	$(BIN)/ruff check src tests asv_benchmarks
	$(BIN)/ruff format --check src tests asv_benchmarks
	$(BIN)/mypy src

test: $(STAMP) lint
	$(BIN)/python -m pytest -q src tests

bench: $(STAMP)
	$(BIN)/asv run --config asv_benchmarks/asv.conf.json --python=same --quick --show-stderr \
		--set-commit-hash $$(git rev-parse HEAD)

clean:
	rm -rf .cache results reports/_build .pytest_cache .mypy_cache .ruff_cache
