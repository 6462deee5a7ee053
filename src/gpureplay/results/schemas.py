"""Explicit schemas of the result files (DESIGN.md, "Results").

Writing through these schemas keeps every run's files identical in column
order and width, so ``scan_parquet`` over a whole sweep never meets mixed
dtypes (``pl.lit(5)`` is Int32, a count may come out UInt32, ...).
"""

from __future__ import annotations

import polars as pl

#: Final states of a job. ``deadlocked``: partly placed pod-by-pod at the end,
#: holding GPUs; ``unfinished``: still pending or running when the replay stopped.
JOB_STATES: tuple[str, ...] = ("finished", "rejected", "deadlocked", "unfinished")

#: ``jobs.parquet``: one row per job of the (transformed) trace. Times are seconds
#: from trace start; null where a job never started or never finished.
JOBS_RESULT_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "queue": pl.String(),
    "user": pl.String(),
    "priority": pl.Int32(),
    "num_pods": pl.Int32(),
    "gpu_milli": pl.Int32(),
    "gpus": pl.Float64(),
    "submit_time": pl.Float64(),
    "duration": pl.Float64(),
    "start_time": pl.Float64(),
    "finish_time": pl.Float64(),
    "wait_time": pl.Float64(),
    "jct": pl.Float64(),
    "run_time": pl.Float64(),
    "preemptions": pl.Int32(),
    "lost_gpu_seconds": pl.Float64(),
    "nodes_spanned": pl.Int32(),
    "held_milli": pl.Int64(),
    "state": pl.Enum(JOB_STATES),
    "reject_reason": pl.String(),
}

#: ``timeline.parquet``: the cluster sampled every ``sample_interval`` seconds.
TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "time": pl.Float64(),
    "allocated_gpus": pl.Int32(),
    "allocated_milli": pl.Int64(),
    "allocated_fraction": pl.Float64(),
    "pending_jobs": pl.Int32(),
    "running_jobs": pl.Int32(),
    "fragmented_gpus": pl.Int32(),
}

#: Headline metrics of ``summary.parquet`` (one row); flattened config keys
#: (``scheduler.name``, ``trace.name``, ``seed``, ...) come first, as strings.
SUMMARY_METRICS_SCHEMA: dict[str, pl.DataType] = {
    "jobs": pl.Int64(),
    "finished": pl.Int64(),
    "rejected": pl.Int64(),
    "deadlocked": pl.Int64(),
    "unfinished": pl.Int64(),
    "total_gpus": pl.Int64(),
    "jct_mean": pl.Float64(),
    "jct_median": pl.Float64(),
    "jct_p95": pl.Float64(),
    "jct_p99": pl.Float64(),
    "wait_mean": pl.Float64(),
    "wait_median": pl.Float64(),
    "wait_p95": pl.Float64(),
    "wait_p99": pl.Float64(),
    "bounded_slowdown_mean": pl.Float64(),
    "makespan": pl.Float64(),
    "gpu_allocation_rate": pl.Float64(),
    "fragmented_gpus_mean": pl.Float64(),
    "replay_seconds": pl.Float64(),
}
