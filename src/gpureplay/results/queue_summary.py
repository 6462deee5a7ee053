"""Per-queue figures of a run and the fairness across its queues.

Each job's ``queue`` is its tenant (Philly VC, ITP cluster, ...). Per queue,
over its admitted jobs (not rejected or failed, submitted by the run's end),
with waits and JCTs censored at the run's end as the whole-run figures of
:mod:`gpureplay.results.metrics` are:

- ``jobs``, ``admitted``, ``finished``, ``never_started``;
- ``wait_mean``, ``wait_median``, ``wait_p95``, ``jct_median``, ``jct_p95``
  (seconds) and ``bounded_slowdown_mean`` (Feitelson, tau = 10 s);
- ``gpu_hours``: GPU-time its jobs' attempts held (``attempts.parquet``
  ``gpu_seconds``, evicted attempts and grace periods included), and
  ``gpu_time_share``, its share of all queues' GPU-hours;
- ``ftf_mean``, ``ftf_max``: its jobs' finish-time fairness (Themis;
  :mod:`gpureplay.results.finish_time_fairness`);
- ``preemptions`` (evictions its jobs suffered), ``preempted_jobs`` and
  ``lost_gpu_hours`` (what those evictions cost them); ``preemptions_caused``
  (evictions its jobs' preemptions made, of any queue's jobs: ``attempts.parquet``
  ``evicted_by``).

Across queues, ``queue_slowdown_jain`` is Jain's fairness index (Jain, Chiu
and Hawe, DEC-TR-301, 1984) of the queues' mean bounded slowdowns,
``(sum x)^2 / (n sum x^2)``: 1 when every queue's jobs are slowed alike, down
to ``1/n`` when one queue bears all of it. Slowdown, not wait, is compared
because queues run jobs of different lengths. ``queue_wait_mean_max`` is the
worst queue's mean wait, ``queue_ftf_max`` the worst queue's mean finish-time
fairness (Themis's app-level objective, with the queues as its apps). All take
the queues holding at least 1% of the admitted jobs (:data:`MIN_QUEUE_SHARE`):
real traces have tenants of one or two jobs (Philly has three VCs of at most 3 jobs), whose one slowdown would
otherwise decide the index (a squared term; weighting by jobs does not help).
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from gpureplay.results.finish_time_fairness import finish_time_fairness
from gpureplay.results.schemas import QUEUE_SUMMARY_SCHEMA
from gpureplay.results.writer import conform

#: Smallest share of the admitted jobs a queue holds to count in the fairness across queues.
MIN_QUEUE_SHARE = 0.01


def jain_index(values: pl.Series) -> float | None:
    """Jain's fairness index of ``values`` (nulls dropped); None when none is left or all are 0.

    Examples
    --------
    >>> jain_index(pl.Series([1.0, 3.0]))
    0.8
    """
    x = values.drop_nulls().cast(pl.Float64)
    squares = float((x * x).sum())
    if x.len() == 0 or squares == 0.0:
        return None
    return float(x.sum()) ** 2 / (x.len() * squares)


def _sum(values: pl.Series) -> float:
    """The correctly rounded sum of a group_by's column: its rows come in no fixed order, and a float sum in
    another order can differ in the last bit, which would make a re-run's ``gpu_time_share`` differ."""
    return math.fsum(values.drop_nulls().to_list())


def queue_summary(
    jobs: pl.DataFrame,
    admitted: pl.DataFrame,
    attempts: pl.DataFrame | None,
    samples: pl.DataFrame | None = None,
    devices: int = 0,
) -> pl.DataFrame:
    """One row per queue (:data:`QUEUE_SUMMARY_SCHEMA`), sorted by queue name.

    Parameters
    ----------
    jobs
        The run's job table (``jobs.parquet``: ``queue``, ``state``, ``preemptions``, ...).
    admitted
        Its admitted jobs with censored ``wait_c``, ``jct_c``, ``slowdown_c``, ``started`` and
        ``finished`` (:func:`gpureplay.results.metrics.admitted_jobs`).
    attempts
        The run's attempts (``attempts.parquet``) for the GPU-hours and the evictions caused; None:
        both are null.
    samples
        The run's queue samples (``queues.parquet``): under a queue model the mean of their ``nominal_gpu``
        gives each queue's ``nominal_gpu`` (Kueue's nominal quota; under Volcano, whose deserved share moves,
        its mean deserved GPUs over the samples) and ``quota_share`` (its share of the queues' nominal GPUs,
        to set beside ``gpu_time_share``); None, or no queue model: both null.
    devices
        The cluster's ``nvidia.com/gpu`` devices, for each queue's finish-time fairness (``ftf_mean``,
        ``ftf_max``: :mod:`gpureplay.results.finish_time_fairness`); 0: both null.
    """
    admitted = admitted.with_columns(finish_time_fairness(admitted, devices))
    counts = jobs.group_by("queue").agg(pl.len().alias("jobs"))
    figures = admitted.group_by("queue").agg(
        pl.len().alias("admitted"),
        pl.col("finished").sum().alias("finished"),
        (~pl.col("started")).sum().alias("never_started"),
        pl.col("wait_c").mean().alias("wait_mean"),
        pl.col("wait_c").median().alias("wait_median"),
        pl.col("wait_c").quantile(0.95, "linear").alias("wait_p95"),
        pl.col("jct_c").median().alias("jct_median"),
        pl.col("jct_c").quantile(0.95, "linear").alias("jct_p95"),
        pl.col("slowdown_c").mean().alias("bounded_slowdown_mean"),
        pl.col("preemptions").sum().alias("preemptions"),
        (pl.col("preemptions") > 0).sum().alias("preempted_jobs"),
        (pl.col("lost_gpu_seconds").sum() / 3600.0).alias("lost_gpu_hours"),
        pl.col("ftf").mean().alias("ftf_mean"),
        pl.col("ftf").max().alias("ftf_max"),
    )
    table = counts.join(figures, on="queue", how="left")
    if attempts is not None:
        queue_of = jobs.select("job_id", "queue")
        held = (
            attempts.join(queue_of, on="job_id", how="left")
            .group_by("queue")
            .agg((pl.col("gpu_seconds").sum() / 3600.0).alias("gpu_hours"))
        )
        caused = (
            attempts.filter(pl.col("evicted_by").is_not_null())
            .join(queue_of, left_on="evicted_by", right_on="job_id", how="left")
            .group_by("queue")
            .agg(pl.len().alias("preemptions_caused"))
        )
        table = (
            table.join(held, on="queue", how="left")
            .join(caused, on="queue", how="left")
            .with_columns(pl.col("gpu_hours").fill_null(0.0), pl.col("preemptions_caused").fill_null(0))
        )
    else:
        table = table.with_columns(
            pl.lit(None, pl.Float64).alias("gpu_hours"), pl.lit(None, pl.Int64).alias("preemptions_caused")
        )
    quota = None if samples is None else samples.filter(pl.col("nominal_gpu").is_not_null())
    if quota is not None and quota.height:
        nominal = quota.group_by("queue").agg(pl.col("nominal_gpu").mean())
        quota_total = _sum(nominal["nominal_gpu"])
        nominal = nominal.with_columns(
            (pl.col("nominal_gpu") / quota_total if quota_total else pl.lit(None, pl.Float64)).alias(
                "quota_share"
            )
        )
        table = table.join(nominal, on="queue", how="left")
    else:
        table = table.with_columns(
            pl.lit(None, pl.Float64).alias("nominal_gpu"), pl.lit(None, pl.Float64).alias("quota_share")
        )
    total = _sum(table["gpu_hours"])
    share = pl.col("gpu_hours") / total if total else pl.lit(None, pl.Float64)
    table = table.with_columns(share.alias("gpu_time_share")).with_columns(
        pl.col(c).fill_null(0)
        for c in ("admitted", "finished", "never_started", "preemptions", "preempted_jobs")
    )
    return conform(table, QUEUE_SUMMARY_SCHEMA).sort("queue")


def queue_fairness(per_queue: pl.DataFrame) -> dict[str, Any]:
    """``queues`` (with admitted jobs), ``queue_slowdown_jain``, ``queue_wait_mean_max`` and ``queue_ftf_max``
    (the queues with at least :data:`MIN_QUEUE_SHARE` of the admitted jobs) of :func:`queue_summary`'s
    table."""
    served = per_queue.filter(pl.col("admitted") > 0)
    large = served.filter(pl.col("admitted") >= MIN_QUEUE_SHARE * int(served["admitted"].sum()))
    return {
        "queues": served.height,
        "queue_slowdown_jain": jain_index(large["bounded_slowdown_mean"]),
        "queue_wait_mean_max": large["wait_mean"].max(),
        "queue_ftf_max": large["ftf_mean"].max(),
    }
