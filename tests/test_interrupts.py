"""Signals during a replay: seen between chunks of simulated time, raised as clean stops, chunks always on."""

from __future__ import annotations

import importlib
import math
import os
import signal
from collections.abc import Iterator
from typing import Any

import polars as pl
import pytest
from tests.reference.strategies import PRESETS, jobs_frame, nodes_frame

from gpureplay.interrupts import Interrupted, deferred, exit_status, terminate_raises
from gpureplay.replay.progress import Progress

# The module, not the function of the same name that gpureplay.replay exports.
sim = importlib.import_module("gpureplay.replay.simulate")


def staggered_jobs(count: int = 60) -> pl.DataFrame:
    return jobs_frame(
        [
            {"job_id": j, "submit_time": float(3 * j), "duration": 10.0 + j % 7, "num_pods": 1 + j % 3}
            | {"gpu_milli": 1000}
            for j in range(count)
        ]
    )


NODES = nodes_frame([{"gpu_model": "V100", "num_gpus": 4}] * 2)


@pytest.fixture(autouse=True)
def default_handlers() -> Iterator[None]:
    # A test run in the background inherits SIGINT ignored; these tests need Python's own handler.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_quiet_replay_still_runs_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []
    real = sim.advance

    def counting(*args: Any) -> int:
        calls.append(args[-1])  # t_stop, the kernel's last argument
        return int(real(*args))

    monkeypatch.setattr(sim, "advance", counting)
    quiet = sim.simulate(staggered_jobs(), NODES, PRESETS["gang-binpack"])  # no progress callback
    assert len(calls) > 10 and all(math.isfinite(t) for t in calls[:-1])
    calls.clear()
    whole = sim.simulate(staggered_jobs(), NODES, PRESETS["gang-binpack"], chunk_seconds=math.inf)
    assert len(calls) == 1
    assert quiet.jobs.equals(whole.jobs) and quiet.timeline.equals(whole.timeline)


@pytest.mark.parametrize(
    ("signum", "stop"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Interrupted)]
)
def test_a_signal_stops_the_replay_at_the_end_of_the_chunk(signum: int, stop: type[BaseException]) -> None:
    calls: list[Progress] = []

    def progress(p: Progress) -> None:
        calls.append(p)
        if len(calls) == 2:
            os.kill(os.getpid(), signum)  # arrives while the next chunk is about to run

    with terminate_raises(), pytest.raises(stop):
        sim.simulate(staggered_jobs(), NODES, PRESETS["gang-binpack"], progress=progress)
    assert calls[-1].finished and len(calls) == 3  # stopped after one more chunk, the display closed
    assert calls[-1].jobs_done < calls[-1].jobs_total
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored


def test_slow_chunks_are_made_smaller(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,000 arrivals 0.1 s apart: a default chunk (span / 200 = 1 s) holds about ten event times.
    jobs = jobs_frame(
        [
            {"job_id": j, "submit_time": 0.1 * j, "duration": 0.5, "num_pods": 1, "gpu_milli": 1000}
            for j in range(2000)
        ]
    )
    normal: list[Progress] = []
    sim.simulate(jobs, NODES, PRESETS["fifo"], progress=normal.append)
    ticks = iter(range(10**9))
    monkeypatch.setattr(sim.time, "perf_counter", lambda: float(next(ticks)))  # every chunk takes seconds
    slow: list[Progress] = []
    result = sim.simulate(jobs, NODES, PRESETS["fifo"], progress=slow.append)
    assert len(slow) > len(normal)
    monkeypatch.undo()
    assert result.jobs.equals(sim.simulate(jobs, NODES, PRESETS["fifo"], chunk_seconds=math.inf).jobs)


def test_deferred_holds_a_signal_until_checked_and_a_second_ctrl_c_stops_at_once() -> None:
    with pytest.raises(KeyboardInterrupt), deferred() as pending:
        os.kill(os.getpid(), signal.SIGINT)
        assert pending.signum == signal.SIGINT  # held, not raised
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        pending.check()
    with deferred() as pending:
        pass
    assert pending.signum is None


def test_exit_status_is_128_plus_the_signal() -> None:
    assert exit_status(KeyboardInterrupt()) == 130
    assert exit_status(Interrupted(signal.SIGTERM)) == 143
    assert str(Interrupted(signal.SIGTERM)) == "stopped by SIGTERM"
