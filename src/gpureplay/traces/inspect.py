"""Describe a canonical jobs table: counts, demand histogram, time span, queues."""

from __future__ import annotations

import polars as pl

from gpureplay.traces.adapted import AdaptedTrace


def demand_histogram(jobs: pl.DataFrame) -> pl.DataFrame:
    """Jobs per total GPU demand (``num_pods * gpu_milli / 1000``), fractional and CPU-only apart.

    Examples
    --------
    >>> jobs = pl.DataFrame({"num_pods": [1, 1, 2, 1], "gpu_milli": [1000, 250, 4000, 0]})
    >>> demand_histogram(jobs).rows()
    [('0 (CPU only)', 1), ('fractional (<1)', 1), ('1', 1), ('8', 1)]
    """
    total = pl.col("num_pods").cast(pl.Int64) * pl.col("gpu_milli")
    label = (
        pl.when(total == 0)
        .then(pl.lit("0 (CPU only)"))
        .when(pl.col("gpu_milli") < 1000)
        .then(pl.lit("fractional (<1)"))
        .otherwise((total // 1000).cast(pl.String))
    )
    order = pl.when(total == 0).then(-2).when(pl.col("gpu_milli") < 1000).then(-1).otherwise(total // 1000)
    return (
        jobs.group_by(label.alias("gpus"), order.alias("_order"))
        .agg(pl.len().alias("jobs"))
        .sort("_order")
        .select("gpus", pl.col("jobs").cast(pl.Int64))
    )


def describe(trace: AdaptedTrace) -> str:
    """A human-readable account of a trace (what ``gpureplay trace inspect`` prints)."""
    jobs = trace.jobs
    span = float(jobs["submit_time"].max()) - float(jobs["submit_time"].min())  # type: ignore[arg-type]
    gpu_seconds = jobs.select(
        (pl.col("num_pods").cast(pl.Float64) * pl.col("gpu_milli") / 1000 * pl.col("duration")).sum()
    ).item()
    lines = [
        f"source:      {trace.source}",
        f"sha256:      {trace.sha256 or '-'}",
        f"jobs:        {jobs.height:,}",
        f"pods:        {int(jobs['num_pods'].sum()):,}",
        f"fractional:  {jobs.filter((pl.col('gpu_milli') > 0) & (pl.col('gpu_milli') < 1000)).height:,} jobs",
        f"queues:      {jobs['queue'].n_unique():,}",
        f"submit span: {span:,.0f} s ({span / 86400:,.1f} days)",
        f"duration:    median {float(jobs['duration'].median()):,.0f} s, "  # type: ignore[arg-type]
        f"max {float(jobs['duration'].max()):,.0f} s",  # type: ignore[arg-type]
        f"GPU-hours:   {gpu_seconds / 3600:,.0f} (demand x duration)",
        "",
        "schema:",
        *(f"  {name:<22} {dtype}" for name, dtype in jobs.schema.items()),
        "",
        "demand histogram (GPUs per job):",
        *(f"  {gpus:>16}  {count:>9,}" for gpus, count in demand_histogram(jobs).iter_rows()),
        "",
        "adapter changes:",
        *(f"  {line}" for line in trace.describe_changes().splitlines()),
    ]
    return "\n".join(lines)
