"""Per-queue figures (``queue_summary.parquet``) and the fairness across queues in the summary.

Definitions: :mod:`gpureplay.results.queue_summary`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import polars as pl
import pytest
from tests.reference.strategies import PREEMPT_VARIANTS, jobs_frame, nodes_frame

from gpureplay.replay.simulate import simulate
from gpureplay.results.metrics import admitted_jobs, attempt_results, job_results, run_span
from gpureplay.results.queue_summary import jain_index, queue_fairness, queue_summary
from gpureplay.results.schemas import QUEUE_SUMMARY_SCHEMA

GANG = replace(PREEMPT_VARIANTS["gang-binpack+preempt"], graceful_termination=30.0)


@pytest.mark.parametrize(
    ("values", "index"),
    [([2.0, 2.0, 2.0], 1.0), ([3.0, 0.0, 0.0], 1 / 3), ([1.0, 3.0], 16 / 20), ([], None), ([0.0], None)],
)
def test_jain_index(values: list[float], index: float | None) -> None:
    got = jain_index(pl.Series(values, dtype=pl.Float64))
    assert got == pytest.approx(index) if index is not None else got is None


def test_a_tiny_queue_does_not_decide_the_fairness() -> None:
    """A 1-job queue slowed 1000x beside queues of 500 jobs each: only the latter count (>= 1% of jobs)."""
    per_queue = pl.DataFrame(
        {
            "queue": ["big-a", "big-b", "tiny"],
            "admitted": [500, 500, 1],
            "bounded_slowdown_mean": [2.0, 4.0, 1000.0],
            "wait_mean": [60.0, 600.0, 90_000.0],
            "ftf_mean": [1.2, 0.9, 50.0],
        }
    )
    fairness = queue_fairness(per_queue)
    assert fairness["queues"] == 3
    assert fairness["queue_slowdown_jain"] == pytest.approx(36.0 / 40.0)
    assert fairness["queue_wait_mean_max"] == 600.0
    assert fairness["queue_ftf_max"] == 1.2


def test_each_queue_gets_its_waits_evictions_and_gpu_hours() -> None:
    """vc-a's 2-GPU job is evicted at 10 by vc-b's 1-GPU job (grace 30 s) on one 2-GPU node.

    vc-b's job waits 30 s (10 to 40) and runs 50 s: 50 GPU-seconds, slowdown 80 / 50. vc-a's job holds
    2 GPUs from 0 to 40 (its grace included), then again from 90 to its finish; its eviction and what
    it cost are vc-a's. The GPU-time shares sum to 1 and Jain's index is that of the two slowdowns.
    """
    rows = [
        {"job_id": 1, "submit_time": 0.0, "duration": 100.0, "num_pods": 1, "gpu_milli": 2000,
         "queue": "vc-a", "priority": 0},
        {"job_id": 2, "submit_time": 10.0, "duration": 50.0, "num_pods": 1, "gpu_milli": 1000,
         "queue": "vc-b", "priority": 5},
        {"job_id": 3, "submit_time": 0.0, "duration": 1.0, "num_pods": 1, "gpu_milli": 4000,
         "queue": "vc-c"},  # needs 4 GPUs: rejected, so vc-c has no admitted job
    ]  # fmt: skip
    jobs = jobs_frame(rows)
    replay = simulate(jobs, nodes_frame([{"gpu_model": "V100", "num_gpus": 2}]), GANG, sample_interval=20.0)
    table = job_results(jobs, replay.jobs)
    attempts = attempt_results(replay.attempts)
    per_queue = queue_summary(table, admitted_jobs(table, run_span(jobs, replay.stats["end_time"])), attempts)
    assert dict(per_queue.schema) == QUEUE_SUMMARY_SCHEMA
    assert per_queue["nominal_gpu"].null_count() == per_queue["quota_share"].null_count() == 3  # no model
    a, b, c = per_queue.iter_rows(named=True)
    assert (a["queue"], b["queue"], c["queue"]) == ("vc-a", "vc-b", "vc-c")
    assert (b["wait_mean"], b["jct_median"], b["gpu_hours"]) == (30.0, 80.0, 50.0 / 3600.0)
    assert b["bounded_slowdown_mean"] == pytest.approx(80.0 / 50.0)
    assert (b["preemptions"], a["preemptions"], a["preempted_jobs"]) == (0, 1, 1)
    assert (a["preemptions_caused"], b["preemptions_caused"], c["preemptions_caused"]) == (0, 1, 0)
    evicted = attempts.filter(pl.col("evicted_by").is_not_null())
    assert evicted.select("job_id", "evicted_by").rows() == [(1, 2)]
    finish = table.filter(pl.col("job_id") == 1)["finish_time"].item()
    assert a["gpu_hours"] == pytest.approx(2 * (40.0 + finish - 90.0) / 3600.0)
    assert a["lost_gpu_hours"] == pytest.approx(
        table.filter(pl.col("job_id") == 1)["lost_gpu_seconds"].item() / 3600
    )
    assert (c["jobs"], c["admitted"], c["gpu_hours"], c["wait_mean"]) == (1, 0, 0.0, None)
    assert math.isclose(per_queue["gpu_time_share"].sum(), 1.0)
    fairness = queue_fairness(per_queue)
    slowdowns = [a["bounded_slowdown_mean"], b["bounded_slowdown_mean"]]
    assert fairness["queues"] == 2
    assert fairness["queue_slowdown_jain"] == pytest.approx(
        sum(slowdowns) ** 2 / (2 * sum(x * x for x in slowdowns))
    )
    assert fairness["queue_wait_mean_max"] == a["wait_mean"] == 0.0 or fairness["queue_wait_mean_max"] == 30.0
    # Finish-time fairness on the node's 2 GPUs: vc-b's job contends with vc-a's (2 + 1 GPUs asked) all
    # its life (10 to 90): its share is 2/3 of its GPU, isolated JCT 50 / (2/3) = 75, rho = 80 / 75. vc-a's
    # job asks 2 alone (0-10), 3 (10-90), then 2 again until it finishes at F.
    assert (a["ftf_mean"], b["ftf_mean"]) == (None, None)  # no device count given
    per_queue = queue_summary(
        table, admitted_jobs(table, run_span(jobs, replay.stats["end_time"])), attempts, devices=2
    )
    a, b, _ = per_queue.iter_rows(named=True)
    assert b["ftf_mean"] == b["ftf_max"] == pytest.approx(80.0 / 75.0)
    demand = (2 * 10 + 3 * 80 + 2 * (finish - 90.0)) / finish
    assert a["ftf_mean"] == pytest.approx(finish / (100.0 / min(1.0, 2 / demand)))
