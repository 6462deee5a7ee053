# gpureplay: `make run` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# numba's compiled kernels: in $NUMBA_CACHE_DIR when it is set, else in the per-user folder gpureplay picks
# (~/.cache/gpureplay/numba), the one `.venv/bin/gpureplay` uses too: the README's commands after `make run`
# load what it compiled. The suite keeps its own in .cache/numba (tests/conftest.py; .ci/run starts it empty).
export HYDRA_FULL_ERROR ?= 0

.PHONY: run test suite lint docs bench bench-scale soak clean chromium slurm

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,ray,slurm]'
	touch $(STAMP)

# The main job: real Philly jobs on Philly's machines, fifo vs gang-binpack vs easy-backfill x 2 seeds
# (sweep=philly-schedulers), a comparison table, then the report. Re-running resumes the sweep.
run: $(STAMP)
	$(BIN)/gpureplay run -m sweep=philly-schedulers
	$(BIN)/gpureplay compare results/sweeps/philly-schedulers
	$(BIN)/gpureplay report results/sweeps/philly-schedulers -o reports/philly-schedulers

lint: $(STAMP)
	$(BIN)/ruff check src tests asv_benchmarks
	$(BIN)/ruff format --check src tests asv_benchmarks
	$(BIN)/mypy src

# The documentation site (mkdocs.yml, docs/) into site/, strict: a broken link or anchor is an error.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The browser test needs Debian's chromium; install it when missing and we may (root with apt).
chromium:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		(apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || \
		echo "chromium not installed: the browser test will be skipped"; }

# The Slurm sweep test (tests/test_sweep.py, tests/slurm_cluster.py) starts its own one-node cluster from
# Debian's slurm-wlm and munge; install them when missing and we may (root with apt): 9 packages without
# recommends, 11-16 s here. A policy-rc.d held only for the install keeps the packages from starting the
# system's munge and Slurm services: the test runs its own daemons, and CI must leave none behind.
SLURM_PROGRAMS := munged slurmctld slurmd sbatch srun
slurm:
	@if PATH="$$PATH:/usr/sbin:/sbin" sh -c 'for p in $(SLURM_PROGRAMS); do command -v $$p >/dev/null || exit 1; done'; \
	then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		held=; [ -e /usr/sbin/policy-rc.d ] || { held=1; printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; \
			chmod +x /usr/sbin/policy-rc.d; }; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			-o DPkg::Lock::Timeout=120 slurm-wlm munge >/dev/null; } || \
			echo "slurm-wlm and munge failed to install: the Slurm sweep test will be skipped"; \
		[ -z "$$held" ] || rm -f /usr/sbin/policy-rc.d; \
	else echo "slurm-wlm and munge not installed: the Slurm sweep test will be skipped"; fi

# The suite runs on every core (pytest-xdist; TEST_WORKERS=0 runs it in one process); it lists its 15
# slowest steps, to keep .ci/run within its 15 minutes. tests/conftest.py sets NUMBA_OPT=1 (LLVM -O1:
# half the compile time, which is most of the suite's); that code is cached apart from `make bench`'s.
TEST_WORKERS ?= auto
# Lint and types run beside the suite (make -j2): mypy alone would hold one core for about a minute on a
# clean checkout while the other idles; make still fails when either fails.
test: $(STAMP) chromium slurm
	@$(MAKE) --no-print-directory -j2 lint suite

suite: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --durations=15 src tests

# The differential and property tests with fresh random draws (CI replays fixed ones), SOAK_SCALE times
# their examples a round, round after round for SOAK_SECONDS; a failing round prints how to replay it.
SOAK_SECONDS ?= 3600
SOAK_SCALE ?= 5
soak: $(STAMP)
	$(BIN)/python tests/soak.py --seconds $(SOAK_SECONDS) --scale $(SOAK_SCALE)

bench: $(STAMP)
	$(BIN)/asv machine --yes --config asv_benchmarks/asv.conf.json >/dev/null
	$(BIN)/asv run --config asv_benchmarks/asv.conf.json --python=same --quick --show-stderr \
		--set-commit-hash $$(git rev-parse HEAD) $(BENCH_ARGS)

# The 10M-job scale replays (issue 46's target) that make bench leaves n/a: minutes per preset, about 13 GB.
bench-scale:
	GPUREPLAY_BENCH_SCALE=1 $(MAKE) bench BENCH_ARGS="--bench ScaleReplay"

clean:
	rm -rf .cache results reports/_build site .pytest_cache .mypy_cache .ruff_cache
