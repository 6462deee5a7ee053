"""Chunked replays and their progress line.

The engine runs in chunks of simulated time so that a long replay can report
progress. Chunks must not change anything: hypothesis draws the cases of the
differential tests (:mod:`tests.reference.strategies`) and each is replayed in
one go and in chunks (tiny ones, ones that end exactly on event times, odd
ones), under every preset-shaped policy, random policies (random placement,
periodic cycles, EASY, backfill depths) and horizons. The chunked run must
equal the one-chunk run bit for bit and agree with the plain-Python reference.
The progress records, the terminal line and its quiet mode are checked too,
down to a real pseudo-terminal running ``gpureplay run``.
"""

from __future__ import annotations

import fcntl
import io
import itertools
import math
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.reference.draws import draws
from tests.reference.simulator import simulate as reference_simulate
from tests.reference.strategies import (
    MECHANISM_PRESETS as PRESETS,
)
from tests.reference.strategies import (
    as_taken_by,
    cases,
    jobs_frame,
    nodes_frame,
    policies,
    sample_intervals,
    seeds,
    windows,
)
from tests.reference.strategies import (
    max_samples as max_samples_choices,
)
from tests.test_differential import differences

from gpureplay.replay.compile import Compiled, compile_replay, policy_params
from gpureplay.replay.progress import (
    ERASE_TO_END,
    Progress,
    ProgressLine,
    format_progress,
    progress_for_terminal,
)
from gpureplay.replay.simulate import DEFAULT_CHUNKS, Replay, default_chunk_seconds, simulate
from gpureplay.schedulers.policy import GpuSharing, Policy

REPO = Path(__file__).resolve().parents[1]


#: Statistics that must not depend on the chunks (everything but wall time).
EXACT_STATS = [
    "events",
    "cycles",
    "placements_tried",
    "preemption_searches",
    "preemptions",
    "end_time",
    "sample_widenings",
]

#: Chunk sizes: fractions of the default chunk (1e-3: about one event time per chunk) or seconds.
chunkings = st.one_of(
    st.sampled_from([("fraction", 1e-3), ("fraction", 1.0), ("seconds", 0.5), ("seconds", 1.0)]),
    st.tuples(st.just("seconds"), st.floats(0.01, 40.0)),
)


class FakeTTY(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def compiled(jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy) -> Compiled:
    """The engine's inputs for a replay (run settings do not change the default chunk)."""
    params = policy_params(
        policy, seed=0, sample_interval=1.0, horizon=None, window=(0.0, 0.0), max_samples=100, debug=False
    )
    return compile_replay(jobs, nodes, params)


def chunk_seconds(
    jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy, chunking: tuple[str, float]
) -> float:
    kind, value = chunking
    if kind == "seconds":
        return value
    default = default_chunk_seconds(compiled(jobs, nodes, policy))
    return value * (default if math.isfinite(default) else 1.0)


def check_progress(calls: list[Progress], result: Replay) -> None:
    """Records are monotone, each chunk did some work, the last one is final and matches the result."""
    assert calls and calls[-1].finished and not any(p.finished for p in calls[:-1])
    for before, after in itertools.pairwise(calls):
        assert before.sim_time <= after.sim_time
        assert before.jobs_done <= after.jobs_done
        assert before.wall_seconds <= after.wall_seconds
        assert before.events < after.events or after.finished  # a paused chunk processed an event time
    assert calls[0].events >= 1 or calls[0].finished
    for p in calls:
        assert p.sim_end_estimate >= p.sim_time
        assert p.jobs_total == result.jobs.height
        assert 0 <= p.jobs_done <= p.jobs_total
    last = calls[-1]
    left = result.jobs.filter(pl.col("state").is_in(["finished", "rejected"])).height
    assert last.jobs_done == left
    assert last.events == result.stats["events"]
    assert last.sim_time == result.stats["end_time"]


def assert_chunks_change_nothing(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    policy: Policy,
    chunking: tuple[str, float],
    *,
    seed: int,
    sample_interval: float,
    horizon: float | None = None,
    window: tuple[float, float] | None = None,
    max_samples: int = 100_000,
) -> None:
    kwargs: dict[str, Any] = {
        "seed": seed,
        "sample_interval": sample_interval,
        "horizon": horizon,
        "window": window,
        "max_samples": max_samples,
    }
    whole = simulate(jobs, nodes, policy, debug=True, chunk_seconds=math.inf, **kwargs)  # one go
    calls: list[Progress] = []
    chunk = chunk_seconds(jobs, nodes, policy, chunking)
    chunked = simulate(jobs, nodes, policy, debug=True, progress=calls.append, chunk_seconds=chunk, **kwargs)
    context = f"policy={policy!r} chunk={chunk!r} {kwargs}"
    assert chunked.jobs.equals(whole.jobs), context
    assert chunked.timeline.equals(whole.timeline), context
    assert chunked.gpu_milli_seconds == whole.gpu_milli_seconds, context
    assert chunked.window_gpu_milli_seconds == whole.window_gpu_milli_seconds, context
    assert chunked.sample_interval == whole.sample_interval, context
    assert {k: chunked.stats[k] for k in EXACT_STATS} == {k: whole.stats[k] for k in EXACT_STATS}, context
    want = reference_simulate(jobs, nodes, policy, debug=True, **kwargs)
    problems = differences(chunked, want, exact_times=policy.gpu_sharing is GpuSharing.none)
    assert not problems, context + "\n" + "\n".join(problems)
    check_progress(calls, chunked)


# --------------------------------------------------------------------------------------------------
# Chunked == one go == reference
# --------------------------------------------------------------------------------------------------


@draws(8)
@given(case=cases(), chunking=chunkings, sample_interval=sample_intervals, seed=seeds)
def test_chunks_change_nothing_under_the_presets(
    case: tuple[pl.DataFrame, pl.DataFrame], chunking: tuple[str, float], sample_interval: float, seed: int
) -> None:
    jobs, nodes = case
    for policy in PRESETS.values():
        assert_chunks_change_nothing(
            as_taken_by(jobs, policy), nodes, policy, chunking, seed=seed, sample_interval=sample_interval
        )


@draws(20)
@given(
    case=cases(),
    policy_list=st.lists(policies(), min_size=4, max_size=4),
    chunking=chunkings,
    sample_interval=sample_intervals,
    seed=seeds,
)
def test_chunks_change_nothing_under_random_policies(
    case: tuple[pl.DataFrame, pl.DataFrame],
    policy_list: list[Policy],
    chunking: tuple[str, float],
    sample_interval: float,
    seed: int,
) -> None:
    jobs, nodes = case
    # Random placement with periodic EASY cycles is the one mode that runs every idle tick: always try it.
    easy_random = replace(PRESETS["easy-backfill"], node_placement="random", gpu_placement="random")
    for policy in [*policy_list, replace(easy_random, session_interval=1.0)]:
        assert_chunks_change_nothing(
            jobs, nodes, policy, chunking, seed=seed, sample_interval=sample_interval
        )


@draws(20)
@given(
    case=cases(),
    preset=st.sampled_from(sorted(PRESETS)),
    policy_list=st.lists(policies(), min_size=2, max_size=2),
    horizon=st.sampled_from([0.0, 3.0, 7.5, 12.0, 20.0]),
    chunking=chunkings,
    sample_interval=sample_intervals,
    seed=seeds,
    window=windows,
    max_samples=max_samples_choices,
)
def test_chunks_change_nothing_with_a_horizon_a_window_and_a_timeline_bound(
    case: tuple[pl.DataFrame, pl.DataFrame],
    preset: str,
    policy_list: list[Policy],
    horizon: float,
    chunking: tuple[str, float],
    sample_interval: float,
    seed: int,
    window: tuple[float, float] | None,
    max_samples: int,
) -> None:
    jobs, nodes = case
    for policy in (PRESETS[preset], *policy_list):
        assert_chunks_change_nothing(
            as_taken_by(jobs, policy), nodes, policy, chunking, seed=seed, sample_interval=sample_interval,
            horizon=horizon, window=window, max_samples=max_samples,
        )  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Progress records
# --------------------------------------------------------------------------------------------------


def staggered_jobs(count: int = 40) -> pl.DataFrame:
    return jobs_frame(
        [
            {"job_id": j, "submit_time": float(3 * j), "duration": 10.0 + j % 7, "num_pods": 1 + j % 3}
            | {"gpu_milli": 1000 if j % 4 else 500}
            for j in range(count)
        ]
    )


def test_progress_reaches_every_job_in_about_the_default_number_of_chunks() -> None:
    jobs, nodes = staggered_jobs(), nodes_frame([{"gpu_model": "V100", "num_gpus": 4}] * 2)
    calls: list[Progress] = []
    result = simulate(jobs, nodes, PRESETS["gang-binpack"], progress=calls.append)
    check_progress(calls, result)
    assert calls[-1].jobs_done == calls[-1].jobs_total == 40
    assert any(0 < p.jobs_done < 40 for p in calls)
    # Default chunk: the submit span (117 s) / 200, so the run (to ~t=133) takes at most one call per chunk.
    chunk = 117.0 / DEFAULT_CHUNKS
    assert len(calls) <= math.ceil(result.stats["end_time"] / chunk) + 1
    assert calls[0].sim_end_estimate == 117.0
    assert calls[-1].sim_end_estimate == result.stats["end_time"] > 117.0


def test_timeline_buffers_that_grow_in_the_middle_of_a_chunked_run_are_kept() -> None:
    # 0.0625 s samples over ~160 s: about 2,600 rows, so the 1,024-row buffers double twice mid-run.
    jobs, nodes = staggered_jobs(), nodes_frame([{"gpu_model": "V100", "num_gpus": 4}])
    whole = simulate(jobs, nodes, PRESETS["gang-binpack"], sample_interval=0.0625, chunk_seconds=math.inf)
    chunked = simulate(jobs, nodes, PRESETS["gang-binpack"], sample_interval=0.0625, chunk_seconds=0.3)
    assert whole.timeline.height > 2048
    assert chunked.timeline.equals(whole.timeline) and chunked.jobs.equals(whole.jobs)


def test_chunk_seconds_alone_chunks_without_a_callback_and_bad_sizes_are_refused() -> None:
    jobs, nodes = staggered_jobs(), nodes_frame([{"gpu_model": "V100", "num_gpus": 4}])
    whole = simulate(jobs, nodes, PRESETS["fifo"], chunk_seconds=math.inf)
    chunked = simulate(jobs, nodes, PRESETS["fifo"], chunk_seconds=0.25)
    assert chunked.jobs.equals(whole.jobs) and chunked.timeline.equals(whole.timeline)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="chunk_seconds"):
            simulate(jobs, nodes, PRESETS["fifo"], chunk_seconds=bad)


def test_default_chunk_falls_back_to_durations_when_every_job_arrives_at_once() -> None:
    at_once = jobs_frame(
        [
            {"job_id": j, "submit_time": 5.0, "duration": 40.0, "num_pods": 1, "gpu_milli": 1000}
            for j in range(3)
        ]
    )
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 1}])
    assert default_chunk_seconds(compiled(at_once, nodes, PRESETS["fifo"])) == 40.0 / DEFAULT_CHUNKS
    calls: list[Progress] = []
    simulate(at_once, nodes, PRESETS["fifo"], progress=calls.append)
    # One event time per chunk: the sample at 0, the arrivals at 5, then one finish each 40 s.
    assert [(p.sim_time, p.jobs_done) for p in calls] == [
        (0.0, 0),
        (5.0, 0),
        (45.0, 1),
        (85.0, 2),
        (125.0, 3),
    ]


# --------------------------------------------------------------------------------------------------
# The terminal line
# --------------------------------------------------------------------------------------------------


def record(done: int, *, sim: float = 93_600.0, wall: float = 2.0, finished: bool = False) -> Progress:
    return Progress(
        sim_time=sim,
        sim_end_estimate=10 * 86_400.0,
        jobs_done=done,
        jobs_total=82_247,
        events=1000,
        wall_seconds=wall,
        finished=finished,
    )


def test_format_progress_shows_sim_time_jobs_rate_and_eta() -> None:
    line = format_progress(record(41_000, wall=2.0))
    # 93,600 s = 1 day 2 hours; 41,000 jobs in 2 s = 20,500 jobs/s; 41,247 left at that rate = 2 s.
    assert line == "replay 1d 02h / ~10d 00h | 41,000/82,247 jobs (49.8%) | 20,500 jobs/s | ETA 0:02"
    assert format_progress(record(0, wall=0.0)).endswith("0/82,247 jobs (0.0%) | 0 jobs/s | ETA ?")
    assert "ETA 1:01:41" in format_progress(record(1, wall=0.045))  # 82,246 x 0.045 s = 3,701 s


def test_progress_line_overwrites_itself_at_most_five_times_a_second_and_clears_at_the_end() -> None:
    now = [100.0]
    tty = FakeTTY()
    line = ProgressLine(tty, clock=lambda: now[0], width=200)
    line(record(10))
    line(record(20))  # same instant: throttled
    now[0] += 0.1
    line(record(30))  # 0.1 s later: still throttled
    now[0] += 0.15
    line(record(40))
    line(record(82_247, finished=True))
    out = tty.getvalue()
    draws = out.split("\r")[1:]
    assert len(draws) == 3  # two lines and the final erase
    assert draws[0].startswith("replay 1d 02h / ~10d 00h | 10/82,247 jobs (0.0%) |")
    assert "40/82,247 jobs" in draws[1] and "jobs/s" in draws[1] and "ETA" in draws[1]
    assert all(d.endswith(ERASE_TO_END) for d in draws)
    assert draws[2] == ERASE_TO_END and "\n" not in out


def test_progress_line_that_never_drew_writes_nothing_at_the_end() -> None:
    tty = FakeTTY()
    ProgressLine(tty)(record(82_247, finished=True))
    assert tty.getvalue() == ""


def test_progress_for_terminal_is_quiet_in_ci_and_off_a_tty() -> None:
    assert isinstance(progress_for_terminal(FakeTTY(), {}), ProgressLine)
    assert progress_for_terminal(io.StringIO(), {}) is None
    assert progress_for_terminal(FakeTTY(), {"CI": "true"}) is None
    assert progress_for_terminal(FakeTTY(), {"CI": "1", "GPUREPLAY_PROGRESS": ""}) is None
    assert isinstance(progress_for_terminal(FakeTTY(), {"CI": ""}), ProgressLine)  # set but empty
    assert progress_for_terminal(FakeTTY(), {"GPUREPLAY_PROGRESS": "0"}) is None
    forced = progress_for_terminal(io.StringIO(), {"CI": "true", "GPUREPLAY_PROGRESS": "1"})
    assert isinstance(forced, ProgressLine)


def test_progress_line_draws_a_real_replay() -> None:
    tty = FakeTTY()
    jobs, nodes = staggered_jobs(), nodes_frame([{"gpu_model": "V100", "num_gpus": 4}] * 2)
    simulate(jobs, nodes, PRESETS["gang-spread"], progress=ProgressLine(tty, width=200))
    out = tty.getvalue()
    assert out.startswith("\rreplay 0d 00h / ~0d 00h | 0/40 jobs (0.0%)")
    assert out.endswith("\r" + ERASE_TO_END)


# --------------------------------------------------------------------------------------------------
# `gpureplay run` on a real terminal and through a pipe
# --------------------------------------------------------------------------------------------------

PHILLY_RUN = ["run", "trace=philly", "cluster=philly", "scheduler=fifo"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GPUREPLAY_PROGRESS")}
    env["NUMBA_CACHE_DIR"] = str(REPO / ".cache" / "numba")
    return env


def set_columns(fd: int, columns: int) -> None:
    """Give the pseudo-terminal ``fd`` a window size, as a terminal emulator does."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))


def test_progress_line_takes_the_width_of_its_terminal() -> None:
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        try:
            line = ProgressLine(terminal)
            assert line.columns() >= 20  # a fresh pty reports 0 columns: a fallback, never a 0-wide line
            set_columns(follower, 50)
            assert line.columns() == 50
            assert len(format_progress(record(41_000))) > 50
            line(record(41_000))  # cut to 49 characters so that it cannot wrap
            terminal.flush()
            shown = os.read(leader, 4096).decode()
            assert shown == "\r" + format_progress(record(41_000))[:49] + ERASE_TO_END
        finally:
            os.close(leader)


def run_in_pty(args: list[str], timeout: float = 120.0) -> tuple[int, str]:
    """Run ``args`` with stdin/stdout/stderr on a new 160-column pseudo-terminal; exit code and output."""
    leader, follower = pty.openpty()
    set_columns(follower, 160)
    proc = subprocess.Popen(args, stdin=follower, stdout=follower, stderr=follower, env=_env(), cwd=REPO)
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: every copy of the follower is closed
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
    return proc.wait(), b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_gpureplay_run_shows_progress_on_a_terminal_and_none_through_a_pipe(tmp_path: Path) -> None:
    code, out = run_in_pty(
        [sys.executable, "-m", "gpureplay", *PHILLY_RUN, f"hydra.run.dir={tmp_path / 'tty'}"]
    )
    assert code == 0, out
    assert "\rreplay " in out and "/82,247 jobs (" in out and "jobs/s | ETA" in out
    assert "\r" + ERASE_TO_END in out  # cleared before the closing log line

    piped = subprocess.run(
        [sys.executable, "-m", "gpureplay", *PHILLY_RUN, f"hydra.run.dir={tmp_path / 'pipe'}"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    for stream in (piped.stdout, piped.stderr):
        assert "jobs/s" not in stream and "\r" not in stream and ERASE_TO_END not in stream
    assert "replayed 82,247 jobs" in piped.stdout + piped.stderr


def test_a_run_whose_next_event_lies_past_the_horizon_ends_without_an_empty_chunk() -> None:
    """Periodic cycles every 4 s, horizon 3 s, samples widened to every 2 s, one tiny job at t=1.

    After the sample at t=2 the next event (the tick at t=4) lies past both the chunk and the
    horizon: the run is over there. It used to pause first, and the next call processed nothing
    (a second progress record at t=2 with no new event time). The run ends at the horizon itself (a
    horizon is a time, not an event): the last record says 3.
    """
    jobs = jobs_frame([{"job_id": 0, "submit_time": 1.0, "duration": 0.0, "num_pods": 1, "gpu_milli": 500}])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 0}])
    periodic = replace(PRESETS["gang-binpack"], session_interval=4.0)
    calls: list[Progress] = []
    result = simulate(
        jobs, nodes, periodic, sample_interval=1.0, horizon=3.0, max_samples=3, debug=True,
        progress=calls.append, chunk_seconds=0.001,
    )  # fmt: skip
    check_progress(calls, result)
    assert [(p.sim_time, p.events, p.finished) for p in calls] == [
        (0.0, 1, False), (1.0, 2, False), (2.0, 3, False), (3.0, 3, True)
    ]  # fmt: skip
