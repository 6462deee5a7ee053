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

Its ``load`` is the offered load on the cluster the trace is replayed on, the
utilisation of queueing theory: ``rho = lambda * E[S] / c`` for arrival rate
``lambda``, mean work per job ``E[S]`` (here GPU-seconds) and ``c`` servers
(here GPUs) (Kleinrock, *Queueing Systems* Vol. 1, 1975; Harchol-Balter,
*Performance Modeling and Design of Computer Systems*, 2013). So the same
``load`` keeps a cluster of any size equally busy: below 1 the cluster can
serve what arrives (allocation tends to ``load``, less what fragmentation and
gang waits lose), above 1 work arrives faster than it can be served and the
queue grows for as long as arrivals last. The cluster starts empty, so the
allocation reaches ``load`` only once the trace spans the jobs' durations:
Philly's long jobs take weeks (docs/inputs.md, "Synthetic traces").
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

    @property
    def mean_gpu_seconds(self) -> float:
        """Mean GPU-seconds one job of the pool asks: ``num_pods * gpu_milli / 1000 * duration``, ``E[S]``."""
        work = pl.col("num_pods").cast(pl.Float64) * pl.col("gpu_milli").cast(pl.Float64) / 1000.0
        return float(self.pool.select((work * pl.col("duration")).mean()).item() or 0.0)

    def arrival_rate(self, load: float, gpus: int) -> float:
        """Arrivals per second that offer ``load`` on ``gpus`` GPUs: ``load * gpus / mean_gpu_seconds``.

        Raises
        ------
        InputError
            When the pool asks no GPU-time at all (no load can be offered).
        """
        work = self.mean_gpu_seconds
        if not work > 0:
            raise InputError.single(
                "the jobs ask no GPU-time (num_pods x gpu_milli x duration is 0): no offered load to set",
                self.source,
            )
        return load * gpus / work


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
    n_jobs: int, seed: int, mix: SyntheticMix | None = None, load: float = 0.8, *, gpus: int
) -> pl.DataFrame:
    """Make ``n_jobs`` canonical jobs with Poisson arrivals and demands resampled from a real trace.

    Parameters
    ----------
    n_jobs
        Number of jobs (config ``trace.n_jobs``), >= 1.
    seed
        Seed of ``numpy.random.Generator(PCG64(seed))`` (config ``seed``), >= 0.
        The same seed, mix, load and GPU count give the same table.
    mix
        The mix to draw from; ``None`` = :func:`default_mix` (bundled Philly).
    load
        Offered load on ``gpus`` GPUs (config ``trace.load``), > 0: arrivals
        come at ``lambda = load * gpus / E[S]`` per second, ``E[S]`` the mix's
        mean GPU-seconds per job (:attr:`SyntheticMix.mean_gpu_seconds`), so
        that ``lambda * E[S] / gpus = load`` (see the module docstring). 0.8
        keeps a cluster busy with queues forming; 1 and above saturate it.
    gpus
        GPUs of the cluster the jobs are replayed on (the ``num_gpus`` of its
        nodes summed), >= 1.

    Returns
    -------
    polars.DataFrame
        A validated canonical jobs table: ``job_id`` 1..n in arrival order,
        ``submit_time`` from 0 (the first job) with exponential gaps of mean
        ``1 / lambda``, every demand column of one real job drawn
        uniformly with replacement, ``source_row`` = ``job_id`` and
        ``source_job_id`` = the real job it copies.

    Raises
    ------
    InputError
        On ``n_jobs`` < 1, a negative seed, a ``load`` that is not a finite
        number > 0 or ``gpus`` < 1, naming the config key.

    Notes
    -----
    Draw order (fixed, so results are reproducible): the ``n_jobs - 1``
    gaps first, then the ``n_jobs`` pool indices. Poisson arrivals follow
    common practice in scheduler evaluations (e.g. Gavel, OSDI'20; Tiresias,
    NSDI'19); see the module docstring for what a synthetic trace cannot show.
    """
    _check_size(n_jobs, seed)
    if not isinstance(load, int | float) or not math.isfinite(load) or load <= 0:
        raise InputError.single(f"must be a finite number > 0 (found {load!r})", "config", key="trace.load")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise InputError.single(f"the cluster must have a GPU (found {gpus!r} GPUs)", "config", key="cluster")
    mix = mix if mix is not None else default_mix()
    source = f"synthetic(n_jobs={n_jobs}, seed={seed}, load={load}, gpus={gpus}, mix={mix.source})"
    return _draw(n_jobs, seed, mix.arrival_rate(load, gpus), mix, source)


def poisson_jobs(n_jobs: int, seed: int, rate: float, mix: SyntheticMix | None = None) -> pl.DataFrame:
    """Make ``n_jobs`` jobs as :func:`synthetic_jobs` does, at ``rate`` arrivals per second on any cluster.

    For inputs fixed apart from any cluster (a benchmark's history): ``rate = mix.rate`` replays the source
    trace's own arrival rate. A run's ``trace.load`` goes through :func:`synthetic_jobs`.

    Parameters
    ----------
    n_jobs, seed, mix
        As :func:`synthetic_jobs`.
    rate
        Mean arrivals per second, a finite number > 0.

    Returns
    -------
    polars.DataFrame
        As :func:`synthetic_jobs`, with exponential gaps of mean ``1 / rate``.

    Raises
    ------
    InputError
        On ``n_jobs`` < 1, a negative seed or a ``rate`` that is not a finite number > 0.
    """
    _check_size(n_jobs, seed)
    if not isinstance(rate, int | float) or not math.isfinite(rate) or rate <= 0:
        raise InputError.single(f"the arrival rate must be a finite number > 0 (found {rate!r})", "synthetic")
    mix = mix if mix is not None else default_mix()
    return _draw(n_jobs, seed, float(rate), mix, f"synthetic(n_jobs={n_jobs}, seed={seed}, rate={rate})")


def _check_size(n_jobs: int, seed: int) -> None:
    """Refuse a job count or seed the generator cannot take, naming its config key (before any work)."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise InputError.single(
            f"must be a whole number >= 1 (found {n_jobs!r})", "config", key="trace.n_jobs"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError.single(f"must be a whole number >= 0 (found {seed!r})", "config", key="seed")


def _draw(n_jobs: int, seed: int, rate: float, mix: SyntheticMix, source: str) -> pl.DataFrame:
    """The jobs of :func:`synthetic_jobs` at ``rate`` arrivals per second (draw order in its Notes)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    gaps = rng.exponential(1.0 / rate, size=n_jobs - 1)
    submit = np.concatenate(([0.0], np.cumsum(gaps)))
    picks = rng.integers(0, mix.pool.height, size=n_jobs)

    job_id = np.arange(1, n_jobs + 1, dtype=np.int64)
    jobs = mix.pool[picks].with_columns(
        pl.Series("job_id", job_id),
        pl.Series("submit_time", submit, dtype=pl.Float64()),
        pl.Series("source_row", job_id),
    )
    return validate_jobs(jobs, source)
