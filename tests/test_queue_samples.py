"""Per-queue samples (``queues.parquet``): each queue's requested GPUs, pending and running jobs over time.

docs/engine/loop.md, "Queue row". A hand-computed case with an
eviction, checked on the engine and its reference twin; the generated cases of
tests/test_differential.py compare the two on every row and check that the
queues' usage sums to the timeline's allocated milli-GPU.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl
from tests.reference.simulator import simulate as reference_simulate
from tests.reference.strategies import PREEMPT_VARIANTS, jobs_frame, nodes_frame

from gpureplay.replay.simulate import simulate
from gpureplay.results.schemas import QUEUE_SAMPLE_SCHEMA

GANG = replace(PREEMPT_VARIANTS["gang-binpack+preempt"], graceful_termination=30.0)


def test_an_evicted_queue_holds_its_gpus_through_the_grace_period() -> None:
    """vc-a's 2-GPU job runs from 0; vc-b's higher-priority 1-GPU job evicts it at 10.

    Hand-computed on one 2-GPU node, sampled every 20 s: at 20 vc-a still holds 2 GPUs (terminating, not
    running) while vc-b's job pends; at 40 the grace ends, vc-b's job starts on 1 GPU and vc-a's requeued
    job pends (2 GPUs do not fit) until vc-b's finishes at 90, so at 100 vc-a runs again on both GPUs.
    """
    jobs = jobs_frame(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 100.0, "num_pods": 1, "gpu_milli": 2000,
             "queue": "vc-a", "priority": 0},
            {"job_id": 2, "submit_time": 10.0, "duration": 50.0, "num_pods": 1, "gpu_milli": 1000,
             "queue": "vc-b", "priority": 5},
        ]
    )  # fmt: skip
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 2}])
    want = {
        # time: (vc-a usage, pending, running), (vc-b usage, pending, running)
        0.0: ((2.0, 0, 1), (0.0, 0, 0)),
        20.0: ((2.0, 0, 0), (0.0, 1, 0)),
        40.0: ((0.0, 1, 0), (1.0, 0, 1)),
        60.0: ((0.0, 1, 0), (1.0, 0, 1)),
        80.0: ((0.0, 1, 0), (1.0, 0, 1)),
        100.0: ((2.0, 0, 1), (0.0, 0, 0)),
    }
    for replay in (
        simulate(jobs, nodes, GANG, debug=True, sample_interval=20.0),
        reference_simulate(jobs, nodes, GANG, debug=True, sample_interval=20.0),
    ):
        assert dict(replay.queues.schema) == QUEUE_SAMPLE_SCHEMA
        rows = replay.queues.filter(pl.col("time") <= 100.0)
        columns = ("usage_gpu", "pending_jobs", "running_jobs")
        got = {
            t: tuple(row for row in group.select(columns).iter_rows())
            for (t,), group in rows.group_by("time", maintain_order=True)
        }
        assert got == want
        assert rows["queue"].to_list()[:2] == ["vc-a", "vc-b"]


def test_a_trace_without_queues_has_one_default_queue() -> None:
    jobs = jobs_frame([{"job_id": 1, "submit_time": 0.0, "duration": 5.0, "num_pods": 2, "gpu_milli": 500}])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 1}])
    queues = simulate(jobs, nodes, GANG, sample_interval=10.0).queues
    # No queue model: its quota columns are null.
    assert queues.rows() == [(0.0, "default", 1.0, 0, 1, None, None, None, None, None)]
