"""Headline metrics over one run span, censored for jobs the run did not see through, and a window.

Issue 7, items 1-3: the GPU allocation rate could exceed 100% (two jobs with
``horizon=50`` gave 3.0); wait and JCT were means over started / finished jobs
only; nothing measured the steady state between the first and the last arrival.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.reference.draws import draws
from tests.reference.strategies import PRESETS, as_taken_by, cases, jobs_frame, nodes_frame, windows

from gpureplay.errors import InputError
from gpureplay.replay.simulate import Replay, simulate
from gpureplay.results.metrics import (
    MeasurementWindow,
    job_results,
    measurement_window,
    run_span,
    summary_metrics,
    timeline_results,
)
from gpureplay.schedulers.policy import Policy
from gpureplay.traces.schema import JOBS_SCHEMA


def summarise(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    preset: str = "fifo",
    *,
    window: MeasurementWindow | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Replay and summarise as ``run_experiment`` does; the summary row."""
    window = window or measurement_window(jobs, None, None)
    policy = PRESETS[preset]
    replay = simulate(jobs, nodes, policy, window=(window.start, window.end), debug=True, **kwargs)
    return summary_of(jobs, nodes, policy, replay, window)


def summary_of(
    jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy, replay: Replay, window: MeasurementWindow
) -> dict[str, Any]:
    """The summary row of a replay, as ``run_experiment`` writes it."""
    total_gpus = int(nodes["num_gpus"].sum())
    # Shared by replicas, the cluster counts devices (as run_experiment does).
    replicas = policy.devices_per_gpu()
    return summary_metrics(
        job_results(jobs, replay.jobs),
        timeline_results(replay.timeline, total_gpus * replicas),
        span=run_span(jobs, replay.stats["end_time"]),
        window=window,
        gpu_milli_seconds=replay.gpu_milli_seconds,
        window_gpu_milli_seconds=replay.window_gpu_milli_seconds,
        total_gpus=total_gpus,
        sample_interval=replay.sample_interval,
        replicas_per_gpu=replicas,
    ).row(0, named=True)


def job(job_id: int, submit: float, duration: float, milli: int = 1000, pods: int = 1) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "submit_time": submit,
        "duration": duration,
        "num_pods": pods,
        "gpu_milli": milli,
    }


EIGHT_GPUS = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])


def test_two_jobs_cut_by_a_horizon_allocate_at_most_the_whole_cluster() -> None:
    # The repro: 4 + 4 GPUs from 0; one ends at 10, the other runs past the horizon (50).
    # The old rate divided the integral to t=50 (240 GPU-s) by 8 GPUs x the finished jobs' makespan
    # (10 s): 3.0.
    jobs = jobs_frame([job(1, 0.0, 10.0, 4000), job(2, 0.0, 1000.0, 4000)])
    row = summarise(jobs, EIGHT_GPUS, "gang-binpack", sample_interval=10.0, horizon=50.0)
    assert (row["span_start"], row["span_end"]) == (0.0, 50.0)
    assert row["gpu_allocation_rate"] == pytest.approx((4 * 10 + 4 * 50) / (8 * 50))
    assert row["makespan"] == 50.0  # censored: job 2 is still running
    assert (row["finished"], row["unfinished"], row["jct_censored"], row["never_started"]) == (1, 1, 1, 0)
    assert row["jct_mean"] == pytest.approx((10 + 50) / 2)
    assert row["jct_mean_finished"] == 10.0


def test_a_horizon_cuts_the_run_at_its_time_whatever_the_sampling() -> None:
    # Issue 43, item 1: job 1 runs 0-100 on 8 GPUs, job 2 arrives at 10 and waits; horizon 50. With hourly
    # samples the run used to end at the last event it processed (10): span_end 10, job 1's attempt cut at
    # 10 (80 GPU-s), job 2's wait censored at 0. A horizon is a time: every figure is cut at 50.
    jobs = jobs_frame([job(1, 0.0, 100.0, 8000), job(2, 10.0, 5.0, 8000)])
    for interval in (3600.0, 5.0, 7.0):
        row = summarise(jobs, EIGHT_GPUS, "fifo", horizon=50.0, sample_interval=interval)
        assert (row["span_end"], row["never_started"], row["wait_censored"]) == (50.0, 1, 1), interval
        assert row["wait_mean"] == pytest.approx((0.0 + 40.0) / 2)
        assert row["gpu_allocation_rate"] == 1.0
    replay = simulate(jobs, EIGHT_GPUS, PRESETS["fifo"], horizon=50.0, sample_interval=3600.0, debug=True)
    assert replay.stats["end_time"] == 50.0
    attempt = replay.attempts.row(0, named=True)
    assert (attempt["job_id"], attempt["end"], attempt["gpu_seconds"]) == (1, 50.0, 400.0)
    assert replay.gpu_milli_seconds == 8000 * 50.0


#: Summary columns read off the timeline: the only ones the sample interval may change.
SAMPLED_COLUMNS = ("fragmented_gpus_mean", "sample_interval_used")


@draws(40)
@given(
    case=cases(),
    preset=st.sampled_from(sorted(PRESETS)),
    horizon=st.sampled_from([None, 0.0, 3.0, 7.5, 12.0, 30.0]),
    intervals=st.lists(st.sampled_from([0.3, 1.0, 2.5, 4.0, 3600.0]), min_size=2, max_size=2, unique=True),
)
def test_results_do_not_depend_on_the_sample_interval(
    case: tuple[pl.DataFrame, pl.DataFrame], preset: str, horizon: float | None, intervals: list[float]
) -> None:
    # Sampling looks at the run; it never changes it: jobs, attempts and every summary figure not read off
    # the timeline are the same for any two sample intervals, with or without a horizon.
    jobs, nodes = case
    jobs = as_taken_by(jobs, PRESETS[preset])
    window = measurement_window(jobs, None, None)
    seen = []
    for interval in intervals:
        replay = simulate(
            jobs,
            nodes,
            PRESETS[preset],
            window=(window.start, window.end),
            horizon=horizon,
            sample_interval=interval,
            debug=True,
        )
        row = summary_of(jobs, nodes, PRESETS[preset], replay, window)
        seen.append(
            (replay.jobs, replay.attempts, {k: v for k, v in row.items() if k not in SAMPLED_COLUMNS})
        )
    (jobs_a, attempts_a, row_a), (jobs_b, attempts_b, row_b) = seen
    assert jobs_a.equals(jobs_b)
    assert attempts_a.equals(attempts_b)
    assert row_a == row_b


@draws(60)
@given(
    case=cases(),
    preset=st.sampled_from(sorted(PRESETS)),
    horizon=st.sampled_from([None, 0.0, 3.0, 12.0, 30.0]),
    window=windows,
    sample_interval=st.sampled_from([0.3, 2.5, 3600.0]),
)
def test_rates_lie_in_0_1_and_censored_counts_add_up(
    case: tuple[pl.DataFrame, pl.DataFrame],
    preset: str,
    horizon: float | None,
    window: tuple[float, float] | None,
    sample_interval: float,
) -> None:
    jobs, nodes = case
    declared = MeasurementWindow(*window) if window else None
    jobs = as_taken_by(jobs, PRESETS[preset])
    row = summarise(jobs, nodes, preset, window=declared, horizon=horizon, sample_interval=sample_interval)
    for rate in ("gpu_allocation_rate", "window_gpu_allocation_rate"):
        if row[rate] is not None:
            assert 0.0 <= row[rate] <= 1.0 + 1e-12, (rate, row[rate])
    # Jobs failed by kubelet admission never ran, and like rejected ones are not admitted.
    admitted = row["jobs"] - row["rejected"] - row["failed"] - row["never_arrived"]
    assert row["wait_censored"] == row["never_started"] <= admitted
    assert row["jct_censored"] == row["deadlocked"] + row["unfinished"] - row["never_arrived"]
    if admitted:
        # A censored wait is never negative: the admitted jobs' total wait is at least the started jobs'.
        # (Their mean may be lower: a job arriving just before the run's end is censored at a short wait.)
        started = admitted - row["never_started"]
        if started:
            assert row["wait_mean"] * admitted >= row["wait_mean_started"] * started - 1e-6
        assert row["makespan"] is not None and row["makespan"] <= row["span_end"] - row["span_start"] + 1e-9
    assert row["window_start"] <= row["window_end"] <= max(row["span_end"], row["window_start"])


def test_starved_jobs_count_in_the_wait_with_their_count_beside_it() -> None:
    # Strict FIFO: job 2 (8 GPUs) waits behind job 1 (which holds 1 GPU for 1000 s) and blocks job 3.
    # A horizon at 100 ends the run with both still waiting: a started-only mean would say "no wait".
    jobs = jobs_frame([job(1, 0.0, 1000.0), job(2, 1.0, 10.0, 8000), job(3, 2.0, 10.0)])
    row = summarise(jobs, EIGHT_GPUS, "fifo", horizon=100.0, sample_interval=50.0)
    assert row["wait_mean_started"] == 0.0
    assert row["never_started"] == row["wait_censored"] == 2
    assert row["wait_mean"] == pytest.approx((0 + (100 - 1) + (100 - 2)) / 3)
    assert row["wait_p99"] > 90.0


def test_the_default_window_leaves_the_drain_tail_out() -> None:
    # Arrivals at 0, 10, 20 (one GPU each, 8 GPUs); the last job runs until 1020: a long idle tail.
    jobs = jobs_frame([job(1, 0.0, 30.0), job(2, 10.0, 30.0), job(3, 20.0, 1000.0)])
    row = summarise(jobs, EIGHT_GPUS)
    assert (row["window_start"], row["window_end"], row["window_jobs"]) == (0.0, 20.0, 3)
    # Inside [0, 20]: 1 GPU for 10 s, then 2 GPUs for 10 s (job 3 starts at 20, the window's end).
    assert row["window_gpu_allocation_rate"] == pytest.approx((10 * 1 + 10 * 2) / (8 * 20))
    assert row["gpu_allocation_rate"] == pytest.approx((30 + 30 + 1000) / (8 * 1020))
    assert row["window_gpu_allocation_rate"] > row["gpu_allocation_rate"]


def test_a_declared_window_selects_its_jobs_and_is_capped_at_the_end_of_the_run() -> None:
    jobs = jobs_frame([job(1, 0.0, 30.0), job(2, 10.0, 30.0), job(3, 20.0, 5.0)])
    row = summarise(jobs, EIGHT_GPUS, window=measurement_window(jobs, 5.0, 500.0))
    assert (row["window_start"], row["window_end"], row["window_jobs"]) == (5.0, 40.0, 2)
    assert row["window_jct_mean"] == pytest.approx((30 + 5) / 2)
    inside = 1 * 5 + 2 * 10 + 3 * 5 + 2 * 5 + 1 * 10  # GPUs x seconds in [5, 40]
    assert row["window_gpu_allocation_rate"] == pytest.approx(inside / (8 * 35))


@pytest.mark.parametrize(
    ("start", "end", "key"),
    [(-1.0, None, "measure.start"), (None, float("nan"), "measure.end"), (50.0, 10.0, "measure.end"),
     (30.0, None, "measure.start")],
)  # fmt: skip
def test_a_window_that_cannot_be_measured_is_a_config_error(
    start: float | None, end: float | None, key: str
) -> None:
    jobs = jobs_frame([job(1, 0.0, 30.0), job(2, 20.0, 30.0)])
    with pytest.raises(InputError, match=key):
        measurement_window(jobs, start, end)


def test_job_names_reach_the_job_results() -> None:
    jobs = jobs_frame([job(1, 0.0, 1.0), job(2, 0.0, 1.0)]).with_columns(
        pl.Series("job_name", ["jobA", "jobB"], dtype=JOBS_SCHEMA["job_name"])
    )
    replay = simulate(jobs, EIGHT_GPUS, PRESETS["fifo"])
    assert job_results(jobs, replay.jobs)["job_name"].to_list() == ["jobA", "jobB"]
