"""Which queues wait longest in each configuration, and why.

A queue's jobs wait for one of two things: quota (the queue already holds its nominal quota, or
under Volcano its deserved share, and the cohort lends it nothing more) or free GPUs (the queue is
below its quota but the cluster, or a gang's placement, has no room). Evictions add to both: a
reclaimed job waits again. The per-queue figures the report sets side by side:

- ``wait_mean``, ``admitted``, ``preemptions``, ``lost_gpu_hours``, ``preemptions_caused`` and
  ``quota_share`` from each run's ``queue_summary.parquet`` (:mod:`gpureplay.results.queue_summary`);
- ``demand_share``: the queue's share of the GPU-time its jobs ask for (``gpus`` x ``duration``
  of ``jobs.parquet``), to set beside its quota share; ``job_gpus``: the mean GPUs its jobs ask
  for, ``all_job_gpus``: all queues' (large gangs wait longest for whole free nodes);
- ``at_quota``: of the queue's pending jobs summed over the timeline samples (``queues.parquet``
  ``pending_jobs``), the part seen while its quota had no room left for the queue's smallest job
  (usage + that job > quota), so a sample with ten waiting jobs weighs ten times one with one;
  ``borrowed_waiting``: the GPUs it held above its quota, and ``others_borrowed_waiting``: those
  all other queues held above theirs, over the same weights; ``allocated_waiting``: the
  cluster's allocated share (``timeline.parquet``) over them.

Each figure is taken per run, then averaged over seeds. Queues holding less than
:data:`gpureplay.results.queue_summary.MIN_QUEUE_SHARE` of the admitted jobs are left out, as they
are from the worst-queue metric, so the first row of a configuration is the queue that metric names.
"""

from __future__ import annotations

import polars as pl

from gpureplay.report.collect import CONFIG_COLUMN, RUN_COLUMN, Collection
from gpureplay.results.queue_summary import MIN_QUEUE_SHARE

#: Queues shown per configuration, longest mean wait first.
QUEUES_SHOWN = 3

#: A queue counts as held by its quota when at least this share of its waiting was seen at its quota.
QUOTA_BOUND = 0.5

#: Usage within this many GPUs of the quota counts as at the quota (float sums of milli-GPUs).
AT_QUOTA_TOLERANCE = 1e-6

#: A queue whose mean wait is shorter is not listed: nothing held it worth explaining.
MIN_WAIT = 60.0

#: The pending-job-weighted columns (null for a queue whose jobs never waited at a sample time).
WAITING_COLUMNS = ("at_quota", "borrowed_waiting", "others_borrowed_waiting", "allocated_waiting")

#: Columns of :func:`longest_waits`.
WAIT_COLUMNS = (
    CONFIG_COLUMN,
    "queue",
    "admitted",
    "wait_mean",
    "demand_share",
    "job_gpus",
    "all_job_gpus",
    "quota_share",
    "at_quota",
    "borrowed_waiting",
    "others_borrowed_waiting",
    "allocated_waiting",
    "preemptions",
    "lost_gpu_hours",
    "preemptions_caused",
)


def longest_waits(collection: Collection, shown: int = QUEUES_SHOWN) -> pl.DataFrame:
    """The ``shown`` queues with the longest mean wait in each configuration (:data:`WAIT_COLUMNS`).

    Empty when no run wrote ``queue_summary.parquet``. Rows follow the report's configuration
    order, then the mean wait, longest first. ``quota_share``, ``at_quota`` and
    ``borrowed_waiting`` are null without a queue model; ``at_quota`` and the ``*_waiting``
    columns are null for a queue whose jobs never waited at a sample time.
    """
    summaries = collection.queue_summaries
    if summaries is None:
        return pl.DataFrame(schema={c: pl.Float64 for c in WAIT_COLUMNS}).with_columns(
            pl.col(CONFIG_COLUMN, "queue").cast(pl.String)
        )
    per_run = summaries.with_columns(
        (pl.col("admitted") / pl.col("admitted").sum().over(RUN_COLUMN)).alias("_admitted_share")
    )
    demand = (
        collection.jobs.group_by(RUN_COLUMN, "queue")
        .agg(
            (pl.col("gpus") * pl.col("duration")).sum().alias("_asked"),
            pl.col("gpus").sum().alias("_gpus"),
            pl.len().alias("_jobs"),
        )
        .with_columns(
            (pl.col("_asked") / pl.col("_asked").sum().over(RUN_COLUMN)).alias("demand_share"),
            (pl.col("_gpus") / pl.col("_jobs")).alias("job_gpus"),
            (pl.col("_gpus").sum().over(RUN_COLUMN) / pl.col("_jobs").sum().over(RUN_COLUMN)).alias(
                "all_job_gpus"
            ),
        )
        .drop("_asked", "_gpus", "_jobs")
    )
    per_run = per_run.join(demand, on=[RUN_COLUMN, "queue"], how="left")
    if collection.queue_samples is not None:
        per_run = per_run.join(_waiting(collection), on=[RUN_COLUMN, "queue"], how="left")
    else:
        per_run = per_run.with_columns(pl.lit(None, pl.Float64).alias(c) for c in WAITING_COLUMNS)
    means = (
        per_run.group_by(CONFIG_COLUMN, "queue")
        .agg(
            pl.col("_admitted_share").mean(),
            *(pl.col(c).cast(pl.Float64).mean() for c in WAIT_COLUMNS if c not in (CONFIG_COLUMN, "queue")),
        )
        .filter(pl.col("_admitted_share") >= MIN_QUEUE_SHARE, pl.col("wait_mean") >= MIN_WAIT)
        .collect()
    )
    order = {c: i for i, c in enumerate(collection.configs.get_column(CONFIG_COLUMN).to_list())}
    return (
        means.with_columns(
            pl.col(CONFIG_COLUMN).cast(pl.String),
            pl.col(CONFIG_COLUMN)
            .cast(pl.String)
            .replace_strict(order, return_dtype=pl.Int64)
            .alias("_order"),
        )
        .sort("_order", "wait_mean", "queue", descending=[False, True, False])
        .group_by("_order", maintain_order=True)
        .head(shown)
        .select(WAIT_COLUMNS)
    )


def _waiting(collection: Collection) -> pl.LazyFrame:
    """Per run and queue, pending-job-weighted over the samples: :data:`WAITING_COLUMNS`."""
    assert collection.queue_samples is not None
    allocated = collection.timeline.select(RUN_COLUMN, "time", "allocated_fraction")
    smallest = (
        collection.jobs.filter(pl.col("gpus") > 0)
        .group_by(RUN_COLUMN, "queue")
        .agg(pl.col("gpus").min().alias("_smallest"))
    )
    samples = (
        collection.queue_samples.join(allocated, on=[RUN_COLUMN, "time"], how="left")
        .join(smallest, on=[RUN_COLUMN, "queue"], how="left")
        .with_columns(
            (pl.col("borrowed_gpu").sum().over(RUN_COLUMN, "time") - pl.col("borrowed_gpu")).alias(
                "_others_borrowed"
            ),
        )
    )
    # At its quota: no room left under it for the queue's smallest job (Volcano's Allocatable and Kueue's
    # quota check both refuse a pod that does not fit whole), so 6.7 deserved GPUs with 6 used is full
    # for a queue of 1-GPU jobs.
    at_quota = (
        pl.col("usage_gpu") + pl.col("_smallest").fill_null(0.0) > pl.col("nominal_gpu") + AT_QUOTA_TOLERANCE
    )
    return (
        samples.filter(pl.col("pending_jobs") > 0)
        .group_by(RUN_COLUMN, "queue")
        .agg(
            _weighted(at_quota.cast(pl.Float64)).alias("at_quota"),
            _weighted(pl.col("borrowed_gpu")).alias("borrowed_waiting"),
            _weighted(pl.col("_others_borrowed")).alias("others_borrowed_waiting"),
            _weighted(pl.col("allocated_fraction")).alias("allocated_waiting"),
        )
    )


def _weighted(value: pl.Expr) -> pl.Expr:
    """Mean of ``value`` over the samples where it is known, weighted by the pending jobs; null if none."""
    weight = pl.col("pending_jobs").cast(pl.Float64)
    known = weight.filter(value.is_not_null()).sum()
    return pl.when(known > 0).then((value * weight).sum() / known).otherwise(None)


def _share(value: float) -> str:
    return f"{100.0 * value:.0f}%"


def _number(row: dict[str, object], key: str) -> float | None:
    value = row.get(key)
    return float(value) if isinstance(value, int | float) else None


def _gpus(row: dict[str, object], key: str, template: str) -> str:
    """``template`` with ``row[key]`` as "N GPU(s)" where it rounds to at least one GPU, else ""."""
    value = _number(row, key)
    if value is None or round(value) < 1:
        return ""
    return template.format(f"{value:,.0f} GPU" + ("s" if round(value) != 1 else ""))


def _sizes(row: dict[str, object]) -> str | None:
    mine, everyone = _number(row, "job_gpus"), _number(row, "all_job_gpus")
    if mine is None or everyone is None:
        return None
    return f"its jobs ask {mine:,.1f} GPUs on average (all queues' {everyone:,.1f})"


def why(row: dict[str, object]) -> str:
    """The reading of one :func:`longest_waits` row in words: what its jobs waited for.

    Examples
    --------
    >>> quota_bound = {"demand_share": 0.4, "quota_share": 0.2, "at_quota": 0.9, "borrowed_waiting": 120.0}
    >>> for part in why(quota_bound).split("; "):
    ...     print(part)
    quota: asks 40% of the GPU-time on 20% of the quota
    at its quota in 90% of its waiting (borrowing 120 GPUs then)
    >>> no_quotas = {"demand_share": 0.1, "allocated_waiting": 0.95, "preemptions": 3.0}
    >>> for part in why({**no_quotas, "quota_share": None, "lost_gpu_hours": 12.5}).split("; "):
    ...     print(part)
    free GPUs (no quotas): cluster 95% allocated while it waited
    asks 10% of the GPU-time
    evicted 3 times, 12 GPU-h lost
    """
    demand, quota, at_quota = (
        _number(row, "demand_share"),
        _number(row, "quota_share"),
        _number(row, "at_quota"),
    )
    allocated = _number(row, "allocated_waiting")
    asks = f"asks {_share(demand)} of the GPU-time" if demand is not None else None
    full = f"cluster {_share(allocated)} allocated while it waited" if allocated is not None else None
    parts: list[str | None]
    if quota is None:
        parts = ["free GPUs (no quotas)" + (f": {full}" if full else ""), asks, _sizes(row)]
    else:
        on_quota = (f"{asks} on " if asks else "") + f"{_share(quota)} of the quota"
        if at_quota is None:
            parts = [on_quota]
        elif at_quota >= QUOTA_BOUND:
            seen = f"at its quota in {_share(at_quota)} of its waiting"
            parts = [f"quota: {on_quota}", seen + _gpus(row, "borrowed_waiting", " (borrowing {} then)")]
        else:
            below = f"below its quota in {_share(1.0 - at_quota)} of its waiting"
            others = _gpus(row, "others_borrowed_waiting", ", while other queues held {} above theirs")
            parts = ["free GPUs" + (f": {full}" if full else ""), on_quota, below + others, _sizes(row)]
    evictions, lost = _number(row, "preemptions"), _number(row, "lost_gpu_hours")
    if evictions:
        parts.append(f"evicted {evictions:,.0f} times" + (f", {lost:,.0f} GPU-h lost" if lost else ""))
    return "; ".join(p for p in parts if p)


__all__ = ["QUEUES_SHOWN", "QUOTA_BOUND", "WAIT_COLUMNS", "longest_waits", "why"]
