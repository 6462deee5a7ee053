"""Workload transforms on canonical jobs: window, sample, cap, load scaling.

Each is a function from a canonical jobs table to a canonical jobs table; the
``workload`` config group chains them in the order of :func:`apply_workload`.
Every transform keeps the table sorted by ``(submit_time, job_id)`` and the
first remaining job at time 0.
"""

from __future__ import annotations

import logging

import numpy as np
import polars as pl

from gpureplay.errors import InputError
from gpureplay.traces.schema import SECOND_RESOLUTION_LIMIT, too_coarse

log = logging.getLogger(__name__)


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
    out = jobs
    if window_start is not None or window_end is not None:
        what = f"window [{_seconds(window_start)}, {_seconds(window_end)}) s"
        out = _kept(out, window(out, window_start, window_end), what, "workload.window_start")
    if sample_fraction < 1.0:
        out = _kept(
            out,
            sample(out, sample_fraction, seed),
            f"sample_fraction {sample_fraction:g}",
            "workload.sample_fraction",
        )
    if max_jobs is not None:
        out = _kept(out, first_jobs(out, max_jobs), f"max_jobs {max_jobs}", "workload.max_jobs")
    out = scale_load(out, load)
    end = pl.col("submit_time") + (pl.col("duration") if "duration" in out.columns else 0.0)
    last_end = float(out.select(end.max()).item())
    if last_end >= SECOND_RESOLUTION_LIMIT:  # the trace's own times were checked when it was read
        raise InputError.config(
            f"{load:g} spreads the arrivals until {last_end:g} s, too late to replay to the second; "
            f"{too_coarse(last_end)}",
            "workload.load",
        )
    return out


def _kept(before: pl.DataFrame, after: pl.DataFrame, what: str, key: str) -> pl.DataFrame:
    """``after``, logging how many of ``before``'s jobs ``what`` kept; refused (naming ``key``) when none.

    A window that keeps 1 job of 82,247 is most often a window given in the wrong unit: the log says so.
    """
    log.info("workload: %s kept %s of %s jobs", what, f"{after.height:,}", f"{before.height:,}")
    if after.height == 0:
        span = _span(before) if key == "workload.window_start" else ""
        raise InputError.config(f"the {what} keeps none of the {before.height:,} jobs{span}", key)
    return after


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _span(jobs: pl.DataFrame) -> str:
    """`` (submitted from 0 to 1e+07 s)``: where the trace's jobs are, for an empty window."""
    if jobs.height == 0:
        return ""
    first, last = jobs.select(
        pl.col("submit_time").min().alias("a"), pl.col("submit_time").max().alias("b")
    ).row(0)
    return f" (submitted from {first:g} to {last:g} s)"
