"""``gpureplay warmup``: the policies a sweep replays, readied once into a cache its workers share."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpureplay.engine.jit.config import cache_folder
from gpureplay.errors import InputError
from gpureplay.schedulers.presets import preset, preset_names
from gpureplay.warmup import default_workers, sweep_policies

REPO = Path(__file__).resolve().parents[1]


def gpureplay(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpureplay", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )


def test_with_no_override_every_preset_is_readied_once() -> None:
    policies = sweep_policies([])
    assert sorted(points for _, points in policies) == [(f"scheduler={name}",) for name in preset_names()]
    assert [p for p, _ in policies if _ == ("scheduler=kai",)] == [preset("kai")]


def test_a_declared_sweep_readies_each_distinct_policy_of_its_points() -> None:
    # philly-queues: 11 schedulers x 2 loads; the load changes the jobs, not the kernels.
    policies = sweep_policies(["sweep=philly-queues"])
    assert len(policies) == 11
    assert sum(len(points) for _, points in policies) == 22
    kai = [points for policy, points in policies if policy == preset("kai")]
    assert kai == [
        (
            "scheduler=kai workload.load=1.0 sweep=philly-queues",
            "scheduler=kai workload.load=6.0 sweep=philly-queues",
        )
    ]


def test_the_command_line_replaces_a_sweeps_own_values_key_by_key_as_hydra_does() -> None:
    policies = sweep_policies(["sweep=philly-queues", "scheduler=kai"])
    assert [policy for policy, _ in policies] == [preset("kai")]
    # kube-default: fifo's queue order refuses preemption (the config check says so before anything compiles).
    swept = sweep_policies(["scheduler=kube-default", "scheduler.preemption=priority,none"])
    assert [str(p.preemption.name) for p, _ in swept] == ["priority", "none"]


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        (["scheduler=nope"], "config group 'scheduler' has no option 'nope'"),
        (["schedular=fifo"], "schedular"),
        (["scheduler=fifo", "scheduler.preemption=sometimes"], "sometimes"),
    ],
)
def test_a_point_that_cannot_compose_is_refused_before_anything_compiles(
    overrides: list[str], said: str
) -> None:
    with pytest.raises(InputError, match=said):
        sweep_policies(overrides)


def test_the_command_refuses_a_bad_override_with_exit_2_and_no_traceback(tmp_path: Path) -> None:
    proc = gpureplay("warmup", "scheduler=fifo,nope", cwd=tmp_path)
    assert proc.returncode == 2
    assert "gpureplay: error:" in proc.stderr and "has no option 'nope'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_workers_are_one_per_core_within_the_free_memory() -> None:
    assert default_workers(available_bytes=64 * 10**9, cores=4) == 4
    assert default_workers(available_bytes=3 * 10**9, cores=4) == 2
    assert default_workers(available_bytes=10**8, cores=4) == 1


@pytest.mark.slow
def test_a_warmed_cache_serves_a_joblib_sweeps_workers_without_compiling(
    tiny_jobs_csv: Path, tmp_path: Path
) -> None:
    # A cache of its own (other workers may write to the suite's meanwhile), seeded with hard links to
    # what the suite compiled so far: numba replaces a file by renaming a new one over it, so the
    # suite's copy is never touched, and the warm-up compiles whatever the suite has not compiled yet.
    suite = cache_folder()
    if suite.is_dir():
        shutil.copytree(suite, tmp_path / "cache" / suite.name, copy_function=os.link)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    warmed = gpureplay("warmup", "scheduler=fifo", "-j", "1", cwd=tmp_path, env=env)
    assert warmed.returncode == 0, warmed.stderr
    assert "scheduler=fifo: ready in" in warmed.stderr
    written = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.nb[ic]")}
    assert written, "the warm-up compiled nothing into the cache"

    swept = gpureplay(
        "run",
        "-m",
        "trace=csv",
        f"trace.path={tiny_jobs_csv}",
        "cluster=homogeneous",
        "cluster.nodes=1",
        "scheduler=fifo",
        "seed=1,2",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        cwd=tmp_path,
        env=env,
    )
    assert swept.returncode == 0, swept.stderr
    assert len(list((tmp_path / "sweep").rglob("DONE"))) == 2
    # Neither worker compiled: no kernel, index or version was added or rewritten in the shared cache.
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.nb[ic]")} == written
