"""Shared pytest set-up: numba cache outside the tree, small canonical tables."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".cache" / "numba"))
# LLVM at -O1 compiles the engine's variants in half the time of the default -O3, and the suite is
# mostly compilation (small cases): set before numba is imported, inherited by the CLI subprocesses.
# The engine caches code of each level in its own folder (engine.config.cache_folder), so benchmarks
# and users' runs never load it.
os.environ.setdefault("NUMBA_OPT", "1")

REPO = Path(__file__).resolve().parents[1]

#: Whether this session runs the differential tests, which replay every preset's compiled variant.
_DIFFERENTIAL = pytest.StashKey[bool]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[_DIFFERENTIAL] = any(item.nodeid.startswith("tests/test_differential.py") for item in items)


@pytest.fixture(scope="session", autouse=True)
def _engine_variants(request: pytest.FixtureRequest) -> None:
    """Compile every engine variant first thing, each worker its own share, when the differential tests run.

    Left to the tests, the first test of a worker that needs a variant another worker is compiling waits
    for it (gpureplay.engine.jit.compile_once) with its core idle: on 2 cores about 7 of the 27 minutes of a
    cold ``make test``. Sessions without the differential tests compile only what their tests use.
    """
    if request.config.stash.get(_DIFFERENTIAL, False):
        from tests.test_differential import warm_every_variant

        warm_every_variant()


@pytest.fixture(params=["engine", "reference"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scenario runs on both the numba engine and the plain-Python reference: the test module's
    ``simulate`` is its ``IMPLEMENTATIONS[name]`` for the test (modules mark such tests ``on_both``)."""
    monkeypatch.setattr(request.module, "simulate", request.module.IMPLEMENTATIONS[request.param])


@pytest.fixture
def tiny_jobs_csv(tmp_path: Path) -> Path:
    """A 4-job canonical CSV (the `trace=csv` contract)."""
    path = tmp_path / "jobs.csv"
    pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4],
            "submit_time": [0.0, 0.0, 10.0, 20.0],
            "duration": [100.0, 50.0, 30.0, 5.0],
            "num_pods": [1, 2, 1, 1],
            "gpu_milli": [1000, 4000, 500, 0],
            "queue": ["a", "b", "a", "b"],
        }
    ).write_csv(path)
    return path
