"""Timeline sample times, the timeline bound and the window integral: engine and reference, one rule each.

Issue 7, items 4, 5 and 3: sample ``k`` is at ``k * interval`` in both simulators
(``sample_interval=0.1`` gave 21 rows in one and 20 in the other); a replay never
writes more than ``max_samples`` rows (a job of 1e11 s wrote 27,777,778); the GPU
allocation inside a measurement window is integrated exactly.
"""

from __future__ import annotations

import logging

import polars as pl
import pytest
from tests.reference.simulator import simulate as reference_simulate
from tests.reference.strategies import PRESETS, jobs_frame, nodes_frame

from gpureplay.replay.simulate import DEFAULT_MAX_SAMPLES, simulate
from gpureplay.traces.schema import max_time_limit

FIFO = PRESETS["fifo"]


def one_job(duration: float, gpu_milli: int = 1000) -> pl.DataFrame:
    return jobs_frame(
        [{"job_id": 1, "submit_time": 0.0, "duration": duration, "num_pods": 1, "gpu_milli": gpu_milli}]
    )


def one_node(gpus: int = 8) -> pl.DataFrame:
    return nodes_frame([{"gpu_model": "V100", "num_gpus": gpus}])


def test_a_tenth_of_a_second_gives_the_same_21_rows_in_engine_and_reference() -> None:
    jobs, nodes = one_job(2.0), one_node()
    got = simulate(jobs, nodes, FIFO, sample_interval=0.1, debug=True)
    want = reference_simulate(jobs, nodes, FIFO, sample_interval=0.1, debug=True)
    # 0, 0.1, ..., 2.0: k * 0.1 reaches 2.0 exactly; twenty additions of 0.1 overshoot it.
    assert got.timeline.height == want.timeline.height == 21
    assert got.timeline["time"].to_list() == [k * 0.1 for k in range(21)]
    assert got.timeline.equals(want.timeline)


def test_a_huge_duration_gives_a_bounded_timeline_and_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    # The repro: two jobs, one of 1e11 s, hourly samples -> 27,777,778 rows before the bound.
    # (1e11 s is beyond the default max_time of 100 years, so validation is told to accept it.)
    with max_time_limit(1e12):
        jobs = jobs_frame(
            [
                {"job_id": 1, "submit_time": 0.0, "duration": 1e11, "num_pods": 1, "gpu_milli": 1000},
                {"job_id": 2, "submit_time": 0.0, "duration": 60.0, "num_pods": 1, "gpu_milli": 1000},
            ]
        )
    with caplog.at_level(logging.WARNING, logger="gpureplay.replay.simulate"):
        result = simulate(jobs, one_node(), FIFO, sample_interval=3600.0)
    assert result.timeline.height <= DEFAULT_MAX_SAMPLES
    # 1e11 / 3600 = 27.8 M samples: nine doublings bring them to 54,254.
    assert result.sample_interval == 3600.0 * 2**9
    assert result.timeline.height == int(1e11 // result.sample_interval) + 1
    times = result.timeline["time"].to_list()
    assert times == [k * result.sample_interval for k in range(len(times))]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "1.8432e+06 s" in warnings[0].getMessage()


@pytest.mark.parametrize("max_samples", [1, 2, 3, 5, 8])
def test_the_bound_keeps_the_timeline_a_run_at_the_final_interval_writes(max_samples: int) -> None:
    jobs = jobs_frame(
        [
            {"job_id": j, "submit_time": 1.5 * j, "duration": 7.0 + j, "num_pods": 1, "gpu_milli": 1000}
            for j in range(1, 9)
        ]
    )
    nodes = one_node(2)
    bounded = simulate(jobs, nodes, FIFO, sample_interval=0.5, max_samples=max_samples, debug=True)
    reference = reference_simulate(
        jobs, nodes, FIFO, sample_interval=0.5, max_samples=max_samples, debug=True
    )
    assert bounded.timeline.height <= max_samples
    assert bounded.sample_interval > 0.5
    assert bounded.sample_interval == reference.sample_interval
    assert bounded.timeline.equals(reference.timeline)
    direct = simulate(jobs, nodes, FIFO, sample_interval=bounded.sample_interval, debug=True)
    assert bounded.timeline.equals(direct.timeline)
    assert bounded.jobs.equals(direct.jobs)


def test_no_warning_and_the_interval_asked_for_when_within_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="gpureplay.replay.simulate"):
        result = simulate(one_job(10.0), one_node(), FIFO, sample_interval=1.0, max_samples=11)
    assert result.sample_interval == 1.0 and result.timeline.height == 11
    assert not caplog.records


def test_the_window_integral_is_exact_and_matches_the_reference() -> None:
    # 1 GPU from 0 to 100 (job 1), 4 more from 30 to 50 (job 2); window [20, 40].
    jobs = jobs_frame(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 100.0, "num_pods": 1, "gpu_milli": 1000},
            {"job_id": 2, "submit_time": 30.0, "duration": 20.0, "num_pods": 1, "gpu_milli": 4000},
        ]
    )
    kwargs = {"sample_interval": 3600.0, "window": (20.0, 40.0), "debug": True}
    got = simulate(jobs, one_node(), FIFO, **kwargs)  # type: ignore[arg-type]
    want = reference_simulate(jobs, one_node(), FIFO, **kwargs)  # type: ignore[arg-type]
    assert got.window_gpu_milli_seconds == want.window_gpu_milli_seconds == 1000 * 20 + 4000 * 10
    assert got.gpu_milli_seconds == 1000 * 100 + 4000 * 20
    assert simulate(jobs, one_node(), FIFO).window_gpu_milli_seconds is None


def test_the_window_integral_stops_at_the_end_of_the_run() -> None:
    # The run ends when its only job does, at 100: the window's part after it holds nothing.
    jobs = one_job(100.0)
    got = simulate(jobs, one_node(), FIFO, window=(50.0, 500.0))
    assert got.stats["end_time"] == 100.0
    assert got.window_gpu_milli_seconds == 1000 * 50.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_samples": 0}, "max_samples"),
        ({"window": (5.0, 1.0)}, "window"),
        ({"window": (-1.0, 1.0)}, "window"),
        ({"window": (0.0, float("inf"))}, "window"),
    ],
)
def test_bad_bounds_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        simulate(one_job(1.0), one_node(), FIFO, **kwargs)  # type: ignore[arg-type]
