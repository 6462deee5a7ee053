"""Per-job and headline metrics (scheduler-semantics.md §8).

Definitions used here:

- wait (queueing delay) = first start - submit; JCT = finish - submit;
  run time = finish - first start (finished jobs only);
- bounded slowdown (Feitelson) = max(1, (wait + run) / max(run, 10 s));
- makespan = max(finish) - min(submit);
- GPU allocation rate = allocated GPU-seconds / (total GPUs x makespan), with
  fractional pods counted by their milli-GPU share.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from gpureplay.results.schemas import JOBS_RESULT_SCHEMA, SUMMARY_METRICS_SCHEMA, TIMELINE_SCHEMA
from gpureplay.results.writer import conform

#: Run-time floor of the bounded slowdown, seconds (Feitelson's usual tau).
SLOWDOWN_TAU = 10.0


def job_results(jobs: pl.DataFrame, outcome: pl.DataFrame) -> pl.DataFrame:
    """Join the replayed outcome to the canonical jobs and derive per-job metrics.

    Parameters
    ----------
    jobs
        The canonical jobs that were replayed.
    outcome
        The engine's per-job table (``Replay.jobs``), same ``job_id`` values.
    """
    df = jobs.select(
        "job_id", "queue", "user", "priority", "num_pods", "gpu_milli", "submit_time", "duration"
    ).join(outcome, on="job_id", how="left", validate="1:1")
    finished = pl.col("state") == "finished"
    return conform(
        df.with_columns(
            gpus=pl.col("num_pods").cast(pl.Float64) * pl.col("gpu_milli") / 1000.0,
            wait_time=pl.col("start_time") - pl.col("submit_time"),
            jct=pl.when(finished).then(pl.col("finish_time") - pl.col("submit_time")),
            run_time=pl.when(finished).then(pl.col("finish_time") - pl.col("start_time")),
            lost_gpu_seconds=pl.lit(0.0),
        ),
        JOBS_RESULT_SCHEMA,
    )


def timeline_results(timeline: pl.DataFrame, total_gpus: int) -> pl.DataFrame:
    """Add the allocated fraction of GPU capacity and fix the schema."""
    fraction = pl.col("allocated_milli") / (1000.0 * total_gpus) if total_gpus else pl.lit(None, pl.Float64)
    return conform(timeline.with_columns(allocated_fraction=fraction), TIMELINE_SCHEMA)


def summary_metrics(
    jobs: pl.DataFrame,
    timeline: pl.DataFrame,
    gpu_milli_seconds: float,
    total_gpus: int,
    replay_seconds: float,
) -> pl.DataFrame:
    """Return the one-row table of headline metrics (columns of ``SUMMARY_METRICS_SCHEMA``)."""
    finished = jobs.filter(pl.col("state") == "finished")
    started = jobs.filter(pl.col("start_time").is_not_null())
    bounded = pl.max_horizontal(
        pl.lit(1.0),
        (pl.col("wait_time") + pl.col("run_time"))
        / pl.max_horizontal(pl.col("run_time"), pl.lit(SLOWDOWN_TAU)),
    )
    makespan = finished["finish_time"].max()
    span = float(makespan) - float(jobs["submit_time"].min()) if makespan is not None else None  # type: ignore[arg-type]
    row: dict[str, object] = {
        "jobs": jobs.height,
        **{
            state: jobs.filter(pl.col("state") == state).height
            for state in ("finished", "rejected", "deadlocked", "unfinished")
        },
        "total_gpus": total_gpus,
        "jct_mean": finished["jct"].mean(),
        "jct_median": finished["jct"].median(),
        "jct_p95": finished["jct"].quantile(0.95, "linear"),
        "jct_p99": finished["jct"].quantile(0.99, "linear"),
        "wait_mean": started["wait_time"].mean(),
        "wait_median": started["wait_time"].median(),
        "wait_p95": started["wait_time"].quantile(0.95, "linear"),
        "wait_p99": started["wait_time"].quantile(0.99, "linear"),
        "bounded_slowdown_mean": finished.select(bounded.mean()).item(),
        "makespan": span,
        "gpu_allocation_rate": (gpu_milli_seconds / 1000.0) / (total_gpus * span)
        if span and total_gpus
        else None,
        "fragmented_gpus_mean": timeline["fragmented_gpus"].mean() if timeline.height else None,
        "replay_seconds": replay_seconds,
    }
    return pl.DataFrame([row], schema=SUMMARY_METRICS_SCHEMA)


def flatten_config(config: Mapping[str, object], prefix: str = "") -> dict[str, str]:
    """Flatten a nested config into ``{"a.b": "value"}`` strings (None -> "null").

    Examples
    --------
    >>> flatten_config({"trace": {"name": "philly", "cluster_id": None}, "seed": 3})
    {'trace.name': 'philly', 'trace.cluster_id': 'null', 'seed': '3'}
    """
    flat: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_config(value, f"{name}."))
        else:
            flat[name] = "null" if value is None else str(value)
    return flat
