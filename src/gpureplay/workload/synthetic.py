"""Synthetic jobs resampled from a real trace: Poisson arrivals, real (size, duration) pairs.

A synthetic trace complements a real one and never replaces it. Resampling
keeps each real job's demand whole (pods, GPU share, duration, queue, ...)
so the size mix, the duration mix and the correlation between size and
duration are those of the source trace. What it loses is everything that
lives between jobs: the diurnal and weekly cycle, bursts of submissions,
users resubmitting the same job, and the drift of the mix over months, since
arrivals here are a memoryless Poisson process. Use it to scale a workload
(a million jobs from an 82 k-job trace), to sweep load, or to test the engine;
report results on the real trace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import polars as pl

from gpureplay.errors import InputError
from gpureplay.traces.schema import JOBS_SCHEMA, validate_jobs, with_job_defaults

#: Columns drawn together from one real job: everything but its identity and arrival.
DEMAND_COLUMNS: tuple[str, ...] = tuple(
    c for c in JOBS_SCHEMA if c not in ("job_id", "job_name", "submit_time")
)


@dataclass(frozen=True)
class SyntheticMix:
    """The empirical job mix and arrival rate of a real trace.

    Parameters
    ----------
    pool
        One row per real job: the columns of :data:`DEMAND_COLUMNS` plus
        ``source_job_id`` (the real job's id). Sampling a row samples the
        joint distribution of (``num_pods``, ``gpu_milli``, ``duration``,
        ``queue``, ...) exactly as observed.
    rate
        Mean arrivals per second of the real trace: ``(n - 1) / (last - first submit)``.
    source
        What the mix was fitted to, for messages and result metadata.
    """

    pool: pl.DataFrame
    rate: float
    source: str


def fit_philly_mix(jobs: pl.DataFrame, source: str = "jobs") -> SyntheticMix:
    """Fit the empirical job mix and mean arrival rate of a canonical jobs table.

    Named for Philly, the default source, but any canonical jobs table works
    (openb, ITP, ...): the fit makes no assumption about the trace.

    Parameters
    ----------
    jobs
        A canonical jobs table (``validate_jobs`` output); optional columns
        that are absent take their defaults.
    source
        Name of the table, for messages and :attr:`SyntheticMix.source`.

    Returns
    -------
    SyntheticMix
        The jobs' demand columns as a resampling pool and their arrival rate.

    Raises
    ------
    InputError
        When a required column is missing, or there are fewer than two jobs or
        all arrive at one instant (no rate can be estimated).

    Notes
    -----
    The rate is the maximum-likelihood estimate of a Poisson process's rate
    from its inter-arrival gaps (their count over their sum). The mix is the
    empirical distribution itself (a bootstrap, Efron 1979), not a parametric
    fit like Gavel's "Philly distribution" (Narayanan et al., OSDI'20), so no
    size or duration class is invented or lost.
    """
    needed = ("job_id", "submit_time", "duration", "num_pods", "gpu_milli")
    missing = [c for c in needed if c not in jobs.columns]
    if missing:
        raise InputError.single(f"missing column(s) {', '.join(missing)}", source)
    if jobs.height < 2:
        raise InputError.single(
            f"a mix needs at least 2 jobs to estimate an arrival rate (found {jobs.height})", source
        )
    first, last = jobs.select(
        pl.col("submit_time").min().alias("first"), pl.col("submit_time").max().alias("last")
    ).row(0)
    span = float(last) - float(first)
    if not math.isfinite(span) or span <= 0:
        raise InputError.single(
            "every job arrives at the same time: no arrival rate to fit", source, column="submit_time"
        )
    pool = with_job_defaults(jobs).select(
        *(pl.col(c).cast(JOBS_SCHEMA[c]) for c in DEMAND_COLUMNS),
        pl.col("job_id").cast(pl.Int64()).alias("source_job_id"),
    )
    return SyntheticMix(pool=pool.rechunk(), rate=(jobs.height - 1) / span, source=source)


@cache
def default_mix() -> SyntheticMix:
    """The mix of the bundled Philly table (:func:`gpureplay.traces.philly.load_philly`), fitted once."""
    from gpureplay.traces.philly import load_philly

    trace = load_philly()
    return fit_philly_mix(trace.jobs, source=trace.source)


def synthetic_jobs(
    n_jobs: int, seed: int, mix: SyntheticMix | None = None, load: float = 1.0
) -> pl.DataFrame:
    """Make ``n_jobs`` canonical jobs with Poisson arrivals and demands resampled from a real trace.

    Parameters
    ----------
    n_jobs
        Number of jobs (config ``trace.n_jobs``), >= 1.
    seed
        Seed of ``numpy.random.Generator(PCG64(seed))`` (config ``seed``), >= 0.
        The same seed, mix and load give the same table.
    mix
        The mix to draw from; ``None`` = :func:`default_mix` (bundled Philly).
    load
        Arrival-rate multiplier (config ``trace.load``), > 0: arrivals come at
        ``load * mix.rate`` per second, so 2.0 offers twice the real load.

    Returns
    -------
    polars.DataFrame
        A validated canonical jobs table: ``job_id`` 1..n in arrival order,
        ``submit_time`` from 0 (the first job) with exponential gaps of mean
        ``1 / (load * mix.rate)``, every demand column of one real job drawn
        uniformly with replacement, ``source_row`` = ``job_id`` and
        ``source_job_id`` = the real job it copies.

    Raises
    ------
    InputError
        On ``n_jobs`` < 1, a negative seed, or a ``load`` that is not a finite
        number > 0, naming the config key.

    Notes
    -----
    Draw order (fixed, so results are reproducible): the ``n_jobs - 1``
    gaps first, then the ``n_jobs`` pool indices. Poisson arrivals follow
    common practice in scheduler evaluations (e.g. Gavel, OSDI'20; Tiresias,
    NSDI'19); see the module docstring for what a synthetic trace cannot show.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise InputError.single(
            f"must be a whole number >= 1 (found {n_jobs!r})", "config", key="trace.n_jobs"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError.single(f"must be a whole number >= 0 (found {seed!r})", "config", key="seed")
    if not isinstance(load, int | float) or not math.isfinite(load) or load <= 0:
        raise InputError.single(f"must be a finite number > 0 (found {load!r})", "config", key="trace.load")
    mix = mix if mix is not None else default_mix()

    rng = np.random.Generator(np.random.PCG64(seed))
    gaps = rng.exponential(1.0 / (load * mix.rate), size=n_jobs - 1)
    submit = np.concatenate(([0.0], np.cumsum(gaps)))
    picks = rng.integers(0, mix.pool.height, size=n_jobs)

    job_id = np.arange(1, n_jobs + 1, dtype=np.int64)
    jobs = mix.pool[picks].with_columns(
        pl.Series("job_id", job_id),
        pl.Series("submit_time", submit, dtype=pl.Float64()),
        pl.Series("source_row", job_id),
    )
    source = f"synthetic(n_jobs={n_jobs}, seed={seed}, load={load}, mix={mix.source})"
    return validate_jobs(jobs, source)
