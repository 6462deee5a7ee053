"""Workload transforms on canonical jobs: window, sample, cap, load scaling.

Each is a function from a canonical jobs table to a canonical jobs table; the
``workload`` config group chains them in the order of :func:`apply_workload`.
Every transform keeps the table sorted by ``(submit_time, job_id)`` and the
first remaining job at time 0.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from gpureplay.errors import InputError


def window(jobs: pl.DataFrame, start: float | None, end: float | None) -> pl.DataFrame:
    """Keep jobs submitted in ``[start, end)`` seconds and re-base times at the first kept job."""
    kept = jobs
    if start is not None:
        kept = kept.filter(pl.col("submit_time") >= start)
    if end is not None:
        kept = kept.filter(pl.col("submit_time") < end)
    return rebase(kept)


def sample(jobs: pl.DataFrame, fraction: float, seed: int) -> pl.DataFrame:
    """Keep a seeded uniform random ``fraction`` of jobs (independent of row order)."""
    if fraction >= 1.0:
        return jobs
    keep = np.random.default_rng(seed).random(jobs.height) < fraction
    return rebase(jobs.filter(pl.Series(keep)))


def first_jobs(jobs: pl.DataFrame, max_jobs: int | None) -> pl.DataFrame:
    """Keep the first ``max_jobs`` jobs by submit time."""
    return jobs if max_jobs is None else jobs.head(max_jobs)


def scale_load(jobs: pl.DataFrame, load: float) -> pl.DataFrame:
    """Compress arrivals: submit times divided by ``load`` (2.0 = jobs arrive twice as fast).

    Notes
    -----
    This is the usual load-scaling of trace-driven studies (e.g. Tiresias,
    Themis): inter-arrival gaps shrink, job sizes and durations are unchanged.
    """
    return jobs if load == 1.0 else jobs.with_columns(pl.col("submit_time") / load)


def rebase(jobs: pl.DataFrame) -> pl.DataFrame:
    """Shift submit times so the first job arrives at 0."""
    if jobs.height == 0:
        return jobs
    return jobs.with_columns(pl.col("submit_time") - pl.col("submit_time").min())


def apply_workload(
    jobs: pl.DataFrame,
    *,
    window_start: float | None = None,
    window_end: float | None = None,
    sample_fraction: float = 1.0,
    max_jobs: int | None = None,
    load: float = 1.0,
    seed: int = 0,
) -> pl.DataFrame:
    """Apply window → sample → cap → load scaling, validating each setting.

    Raises
    ------
    InputError
        Naming the ``workload.*`` key of a value out of range, or when the
        transforms leave no job.
    """
    checks = [
        ("workload.sample_fraction", 0.0 < sample_fraction <= 1.0, "must be in (0, 1]"),
        ("workload.load", load > 0.0, "must be > 0"),
        ("workload.max_jobs", max_jobs is None or max_jobs > 0, "must be > 0 or null"),
        (
            "workload.window_end",
            window_start is None or window_end is None or window_end > window_start,
            "must be greater than workload.window_start",
        ),
    ]
    for key, ok, message in checks:
        if not ok:
            raise InputError.single(message, "config", key=key)
    out = scale_load(
        first_jobs(sample(window(jobs, window_start, window_end), sample_fraction, seed), max_jobs), load
    )
    if out.height == 0:
        raise InputError.single("the workload settings leave no job to replay", "config", key="workload")
    return out
