"""A run's memory estimated from its sizes (gpureplay.replay.memory), and refused over the budget before
anything large is allocated: ``cluster.nodes=100000000`` grew to 20.5 GB and was killed by the kernel.

The estimate is checked against what a replay really allocates: the peak of the arrays a replay holds
(numpy reports its allocations to ``tracemalloc``), and, end to end, a run's peak resident memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gpureplay import experiment
from gpureplay.config import compose_config
from gpureplay.errors import InputError
from gpureplay.experiment import prepare_inputs
from gpureplay.replay.memory import (
    MemoryEstimate,
    available_memory,
    check_memory,
    cluster_size,
    estimate_memory,
    run_sizes,
)
from gpureplay.replay.simulate import simulate

REPO = Path(__file__).resolve().parents[1]


def many_queues_csv(tmp_path: Path, jobs: int = 3000, queues: int = 200) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "queues.csv"
    pl.DataFrame(
        {
            "job_id": np.arange(jobs),
            "submit_time": np.sort(rng.uniform(0, 1e5, jobs)),
            "duration": rng.uniform(10, 1e4, jobs),
            "num_pods": rng.integers(1, 3, jobs),
            "gpu_milli": rng.choice([1000, 2000, 8000], jobs),
            "queue": [f"q{i}" for i in rng.integers(0, queues, jobs)],
        }
    ).write_csv(path)
    return path


@pytest.mark.parametrize(
    "case",
    [
        # nodes dominate; jobs dominate; queues x timeline samples dominate.
        ["trace=synthetic", "trace.n_jobs=100", "cluster.nodes=30000"],
        ["trace=synthetic", "trace.n_jobs=20000", "cluster.nodes=200"],
        ["trace=csv", "trace.path={queues}", "cluster.nodes=100", "sample_interval=100"],
    ],
    ids=["nodes", "jobs", "queues-timeline"],
)
def test_the_estimate_is_within_a_factor_of_two_of_the_arrays_a_replay_allocates(
    tmp_path: Path, case: list[str]
) -> None:
    overrides = [o.format(queues=many_queues_csv(tmp_path)) for o in case]
    cfg = compose_config([*overrides, "cluster=homogeneous", "scheduler=fifo"])
    inputs = prepare_inputs(cfg)
    sizes = run_sizes(
        inputs.jobs, cluster_size(inputs.cluster.nodes), inputs.policy, float(cfg.sample_interval), 100_000
    )
    simulate(inputs.jobs.head(1), inputs.cluster.nodes.head(1), inputs.policy)  # kernels ready, untraced
    tracemalloc.start()
    try:
        simulate(inputs.jobs, inputs.cluster.nodes, inputs.policy, sample_interval=float(cfg.sample_interval))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    estimate = estimate_memory(sizes, inputs.policy, tables=False).total
    assert peak > 8 * 2**20  # large enough for the sizes, not the fixed costs, to decide
    assert 0.5 <= estimate / peak <= 2.0, (estimate, peak, sizes)


def _peak_rss_kib(args: list[str], tmp_path: Path) -> int:
    """Peak resident memory of a `gpureplay run`, KiB: VmHWM of its own process at exit (not getrusage's
    ru_maxrss, which counts the parent's memory at the fork before the exec)."""
    code = (
        "import sys\n"
        "from gpureplay.cli import main\n"
        "try:\n    main(sys.argv[1:])\n"
        "except SystemExit as end:\n    assert end.code == 0, end.code\n"
        "status = open('/proc/self/status').read()\n"
        "print('peak', next(x for x in status.splitlines() if x.startswith('VmHWM:')).split()[1])\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(REPO / ".cache" / "numba")}
    proc = subprocess.run(
        [sys.executable, "-c", code, "run", *args, f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split("peak")[-1].split()[0])


@pytest.mark.slow
@pytest.mark.skipif(
    not Path("/proc/self/status").is_file(), reason="reads a process's peak memory from /proc"
)
def test_the_estimate_is_within_a_factor_of_two_of_a_runs_peak_memory_growth(tmp_path: Path) -> None:
    # End to end, tables, transients and all: the peak of a mid-size run over that of a one-node run.
    base = ["trace=csv", f"trace.path={many_queues_csv(tmp_path, jobs=20_000, queues=1000)}"]
    base += ["cluster=homogeneous", "scheduler=fifo", "sample_interval=200"]
    _peak_rss_kib([*base, "cluster.nodes=1", "workload.max_jobs=1"], tmp_path)  # any kernel compiles here
    small = _peak_rss_kib([*base, "cluster.nodes=1", "workload.max_jobs=1"], tmp_path)
    large = _peak_rss_kib([*base, "cluster.nodes=50000"], tmp_path)
    cfg = compose_config([*base, "cluster.nodes=50000"])
    inputs = prepare_inputs(cfg)
    sizes = run_sizes(inputs.jobs, cluster_size(inputs.cluster.nodes), inputs.policy, 200.0, 100_000)
    estimate = estimate_memory(sizes, inputs.policy, "cluster.nodes").total
    growth = (large - small) * 1024
    assert growth > 150 * 2**20  # far above the allocator's noise of a few MiB
    assert 0.5 <= estimate / growth <= 2.0, (estimate, growth, sizes)


def test_a_cluster_too_large_is_refused_before_its_node_table_is_built(
    tiny_jobs_csv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: object) -> None:
        raise AssertionError("the node table was built")

    monkeypatch.setattr(experiment, "build_cluster", never)
    cfg = compose_config(
        ["trace=csv", f"trace.path={tiny_jobs_csv}", "cluster=homogeneous", "cluster.nodes=100000000"]
    )
    with pytest.raises(InputError) as err:
        prepare_inputs(cfg)
    text = str(err.value)
    assert text.startswith("config key 'cluster.nodes': the replay would need about ")
    assert "cluster of 100,000,000 nodes: " in text and "800,000,000 GPU devices: " in text
    assert "of memory available now (memory_budget_gib: null)" in text


def test_the_budget_is_a_config_key(tiny_jobs_csv: Path) -> None:
    base = ["trace=csv", f"trace.path={tiny_jobs_csv}", "cluster=homogeneous", "cluster.nodes=200000"]
    with pytest.raises(InputError) as err:
        prepare_inputs(compose_config([*base, "memory_budget_gib=0.1"]))
    assert "more than memory_budget_gib = 0.1;" in str(err.value)
    assert str(err.value).startswith("config key 'cluster.nodes'")
    assert prepare_inputs(compose_config([*base, "memory_budget_gib=1"])).cluster.nodes.height == 200_000


def test_a_node_list_is_checked_once_read(tiny_jobs_csv: Path) -> None:
    cfg = compose_config(
        ["trace=csv", f"trace.path={tiny_jobs_csv}", "cluster=philly", "memory_budget_gib=1e-6"]
    )
    with pytest.raises(InputError) as err:
        prepare_inputs(cfg)
    assert str(err.value).startswith("config key 'cluster': the replay would need about ")
    assert "cluster of 552 nodes" in str(err.value)


def test_a_synthetic_trace_too_large_is_refused_before_it_is_made() -> None:
    cfg = compose_config(["trace=synthetic", "trace.n_jobs=2000000000", "cluster=homogeneous"])
    with pytest.raises(InputError) as err:
        prepare_inputs(cfg)
    assert str(err.value).startswith("config key 'trace.n_jobs': the replay would need about ")
    assert "2,000,000,000 jobs" in str(err.value)


def test_the_largest_part_names_the_key() -> None:
    estimate = MemoryEstimate(
        (("cluster", "cluster.nodes", 2**30), ("timeline", "sample_interval", 3 * 2**30))
    )
    with pytest.raises(InputError) as err:
        check_memory(estimate, 1.0)
    assert str(err.value).startswith("config key 'sample_interval': the replay would need about 4.0 GiB")
    assert "timeline: 3.0 GiB; cluster: 1.0 GiB" in str(err.value)
    check_memory(estimate, 4.0)


def test_available_memory_is_the_systems_figure() -> None:
    found = available_memory()
    if Path("/proc/meminfo").is_file():
        line = next(
            x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemAvailable:")
        )
        assert found is not None and abs(found - int(line.split()[1]) * 1024) < 2**30  # it moves a little
    else:
        assert found is None or found > 0
