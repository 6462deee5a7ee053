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
    "job_name": pl.String(),  # the trace's own id when it is text ("jobA"), else null
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

#: Headline metrics of ``summary.parquet`` (one row; definitions in :mod:`gpureplay.results.metrics`).
#: The flattened config keys come first, each with its declared type (:func:`~gpureplay.results.metrics.
#: config_columns`); wall-clock timings are not here (they are in ``timing.json``), so a re-run is
#: byte-identical.
SUMMARY_METRICS_SCHEMA: dict[str, pl.DataType] = {
    # Job counts. never_started: admitted jobs that never started (deadlocked included);
    # never_arrived: jobs submitted after the run's end (a horizon), counted in unfinished.
    "jobs": pl.Int64(),
    "finished": pl.Int64(),
    "rejected": pl.Int64(),
    "deadlocked": pl.Int64(),
    "unfinished": pl.Int64(),
    "never_started": pl.Int64(),
    "never_arrived": pl.Int64(),
    "total_gpus": pl.Int64(),
    # The run span: first arrival, engine end time.
    "span_start": pl.Float64(),
    "span_end": pl.Float64(),
    # Whole run, over admitted jobs, censored at span_end (the counts say how many were).
    "wait_mean": pl.Float64(),
    "wait_median": pl.Float64(),
    "wait_p95": pl.Float64(),
    "wait_p99": pl.Float64(),
    "wait_censored": pl.Int64(),
    "jct_mean": pl.Float64(),
    "jct_median": pl.Float64(),
    "jct_p95": pl.Float64(),
    "jct_p99": pl.Float64(),
    "jct_censored": pl.Int64(),
    "bounded_slowdown_mean": pl.Float64(),
    # Uncensored means, explicitly named: started / finished jobs only.
    "wait_mean_started": pl.Float64(),
    "jct_mean_finished": pl.Float64(),
    "makespan": pl.Float64(),
    "gpu_allocation_rate": pl.Float64(),
    "fragmented_gpus_mean": pl.Float64(),
    # The timeline's interval: sample_interval, doubled as often as max_samples required.
    "sample_interval_used": pl.Float64(),
    # The measurement window [window_start, window_end] (end capped at span_end).
    "window_start": pl.Float64(),
    "window_end": pl.Float64(),
    "window_jobs": pl.Int64(),
    "window_wait_mean": pl.Float64(),
    "window_wait_median": pl.Float64(),
    "window_wait_p95": pl.Float64(),
    "window_wait_p99": pl.Float64(),
    "window_wait_censored": pl.Int64(),
    "window_jct_mean": pl.Float64(),
    "window_jct_median": pl.Float64(),
    "window_jct_p95": pl.Float64(),
    "window_jct_p99": pl.Float64(),
    "window_jct_censored": pl.Int64(),
    "window_bounded_slowdown_mean": pl.Float64(),
    "window_gpu_allocation_rate": pl.Float64(),
}
