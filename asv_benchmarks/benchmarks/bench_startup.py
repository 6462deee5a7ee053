"""Start-up of ``gpureplay run`` as a user meets it: a process, from the command line to DONE.

- ``ColdStart.track_cold_start``: the first run on a machine, numba's cache empty, so every kernel the
  preset's engine variant uses compiles (``gpureplay run`` says so on a terminal), for one preset of
  each family: whole-card (``fifo``), and each queue system (``kueue``, ``volcano``, ``kai``), which
  compiles its own wing. Tracked as one wall-clock figure each: far too long to repeat.
- ``WarmStart.time_replay_one_job``: any later run, here of a one-job CSV, so the figure is all
  overhead: interpreter and imports, Hydra composing the config (twice: it composes once to learn the
  run mode), loading the compiled kernels from the cache, reading the trace and writing the results.
- ``WarmStart.time_config_only``: ``gpureplay run --cfg job``, the imports and one composition only,
  which shows how much of the warm start is the replay's own part.
- ``WarmStart.track_peak_mib_one_job``: the one-job run's peak resident memory, of that process alone
  (issue 46: <= 150 MB beside <= 0.5 s).

Each call is a fresh ``python -m gpureplay`` process (the interpreter asv runs in).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

#: The one-job trace of the warm and cold starts (the ``trace=csv`` contract).
ONE_JOB_CSV = "job_id,submit_time,duration,num_pods,gpu_milli\n1,0,100,1,1000\n"


def _env(cache_dir: str | None) -> dict[str, str]:
    env = {**os.environ, "GPUREPLAY_PROGRESS": "0"}
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    return env


def _one_job_command(work: Path, scheduler: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gpureplay",
        "run",
        "trace=csv",
        f"trace.path={work / 'one_job.csv'}",
        "cluster=homogeneous",
        "cluster.nodes=1",
        f"scheduler={scheduler}",
        f"hydra.run.dir={work / 'run'}",
    ]


def _replay_one_job(work: Path, env: dict[str, str], scheduler: str = "fifo") -> None:
    subprocess.run(
        _one_job_command(work, scheduler),
        cwd=work,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _peak_mib_of_one_job(work: Path, env: dict[str, str]) -> float:
    """Peak resident memory (MiB) of one one-job run, from the kernel's accounting of that child alone."""
    proc = subprocess.Popen(
        _one_job_command(work, "fifo"),
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, proc.args)
    return usage.ru_maxrss / 1024.0  # kilobytes on Linux


class WarmStart:
    """A one-job replay with the kernels already in numba's cache (the environment's, or the default)."""

    timeout = 600
    number = 1
    repeat = (3, 10, 60.0)
    warmup_time = 0.0

    def setup(self) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="gpureplay-bench-"))
        (self.work / "one_job.csv").write_text(ONE_JOB_CSV)
        self.env = _env(os.environ.get("NUMBA_CACHE_DIR"))
        _replay_one_job(self.work, self.env)  # fills the cache if this machine never compiled

    def teardown(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    def time_replay_one_job(self) -> None:
        _replay_one_job(self.work, self.env)

    def track_peak_mib_one_job(self) -> float:
        return _peak_mib_of_one_job(self.work, self.env)

    track_peak_mib_one_job.unit = "MiB"  # type: ignore[attr-defined]

    def time_config_only(self) -> None:
        subprocess.run(
            [sys.executable, "-m", "gpureplay", "run", "--cfg", "job"],
            cwd=self.work,
            env=self.env,
            check=True,
            stdout=subprocess.DEVNULL,
        )


class ColdStart:
    """The first run of a preset family: an empty numba cache, its engine variant compiled."""

    timeout = 900
    params: ClassVar[list[list[str]]] = [["fifo", "kueue", "volcano", "kai"]]
    param_names: ClassVar[list[str]] = ["preset"]

    def setup(self, preset: str) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="gpureplay-bench-"))
        (self.work / "one_job.csv").write_text(ONE_JOB_CSV)

    def teardown(self, preset: str) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    def track_cold_start(self, preset: str) -> float:
        env = _env(str(self.work / "empty-numba-cache"))
        started = time.perf_counter()
        _replay_one_job(self.work, env, preset)
        return time.perf_counter() - started

    track_cold_start.unit = "seconds"  # type: ignore[attr-defined]
