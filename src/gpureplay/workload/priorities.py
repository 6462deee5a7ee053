"""Priority classes and checkpointing: the job properties preemption acts on.

Priorities come from the trace where it has them (openb's QoS classes); a
trace without them (Philly, ITP, Helios, PAI) gets a seeded mix of
PriorityClasses from the workload config, e.g. 20% of jobs in a
high-priority class that may preempt and 80% in a preemptible low one.
Checkpointing (how much work an eviction rolls back) and the restart overhead
are set per job, with per-queue overrides.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from gpureplay.errors import InputError, Problem
from gpureplay.traces.schema import PREEMPTION_POLICIES, lucid_overhead
from gpureplay.workload.utilization import ReclaimIdlePolicy, check_policy, policy_columns


@dataclass(frozen=True)
class PriorityClass:
    """A Kubernetes PriorityClass and the share of jobs that get it.

    Parameters
    ----------
    name
        Class name (kept in results as ``priority_class``).
    value
        The priority (int32; user classes up to 1,000,000,000, docs/systems.md, "kube-scheduler").
    share
        Fraction of jobs in this class; the shares of a mix sum to 1.
    preemptible
        Whether its jobs may be evicted by higher-priority ones.
    preemption_policy
        ``PreemptLowerPriority`` or ``Never`` (sorts ahead in the queue but never evicts).
    reclaim_idle
        Its ReclaimIdleResource annotations (read under ``preemption: reclaim_idle`` only).
    """

    name: str
    value: int
    share: float
    preemptible: bool = True
    preemption_policy: str = "PreemptLowerPriority"
    reclaim_idle: ReclaimIdlePolicy = field(default_factory=ReclaimIdlePolicy)


@dataclass(frozen=True)
class Checkpointing:
    """How a job checkpoints and what a restart costs.

    Parameters
    ----------
    interval
        Seconds of progress between checkpoints; 0: a checkpoint is taken at
        eviction (Lucid / Tiresias: nothing but the restart overhead is lost);
        ``inf``: never (an eviction loses the attempt's work).
    restart_overhead
        Seconds a restarted job spends before it makes progress again; None:
        Lucid's 40 s for jobs of at most 8 GPUs, 60 s above.
    """

    interval: float = 0.0
    restart_overhead: float | None = None


def check_classes(classes: Sequence[PriorityClass], key: str = "workload.priority_classes") -> None:
    """Refuse a mix whose shares do not sum to 1, or with a bad value, naming the config key.

    Raises
    ------
    InputError
        Listing every problem.
    """
    problems = []
    names: set[str] = set()
    for i, c in enumerate(classes):
        where = f"{key}[{i}]"
        if c.name in names:
            problems.append(Problem(f"class name {c.name!r} is used twice", "config", column=f"{where}.name"))
        names.add(c.name)
        if not (0.0 <= c.share <= 1.0):
            problems.append(
                Problem(f"share must be in [0, 1], found {c.share}", "config", column=f"{where}.share")
            )
        if not (-(2**31) <= c.value <= 1_000_000_000):
            problems.append(
                Problem(
                    f"value must be an int32 of at most 1,000,000,000 (user classes), found {c.value}",
                    "config",
                    column=f"{where}.value",
                )
            )
        if c.preemption_policy not in PREEMPTION_POLICIES:
            problems.append(
                Problem(
                    f"unknown preemption_policy {c.preemption_policy!r}; "
                    f"known: {', '.join(PREEMPTION_POLICIES)}",
                    "config",
                    column=f"{where}.preemption_policy",
                )
            )
        problems += check_policy(c.reclaim_idle, f"{where}.reclaim_idle")
    total = sum(c.share for c in classes)
    if classes and not math.isclose(total, 1.0, abs_tol=1e-9):
        problems.append(Problem(f"shares must sum to 1, they sum to {total:g}", "config", column=key))
    if problems:
        raise InputError(problems)


def assign_priority_classes(
    jobs: pl.DataFrame, classes: Sequence[PriorityClass], seed: int, *, override: bool = False
) -> pl.DataFrame:
    """Give every job a priority class drawn from ``classes`` by share (seeded), when the trace has none.

    Parameters
    ----------
    jobs
        Canonical jobs.
    classes
        The mix; empty: keep the trace's priorities.
    seed
        Seed of the draw (independent of row order: the draw of the i-th job in
        ``(submit_time, job_id)`` order).
    override
        Replace priorities the trace has (more than one distinct value).

    Returns
    -------
    polars.DataFrame
        ``jobs`` with ``priority``, ``preemptible``, ``preemption_policy`` and
        ``priority_class`` set (when the trace's own priorities are kept: its
        ``source_priority_class`` where it names classes, else null); with a mix
        also each class's ReclaimIdleResource annotations
        (:func:`gpureplay.workload.utilization.policy_columns`).

    Raises
    ------
    InputError
        When the trace has its own priorities and ``override`` is off, or the mix is invalid.
    """
    if not classes:
        # A trace that names its jobs' classes (kubectl exports: source_priority_class) keeps the names.
        named = "source_priority_class" in jobs.columns
        return jobs.with_columns(
            priority_class=pl.col("source_priority_class").cast(pl.String)
            if named
            else pl.lit(None, pl.String),
            preemption_policy=pl.lit(PREEMPTION_POLICIES[0]),
        )
    check_classes(classes)
    if not override and jobs["priority"].n_unique() > 1:
        raise InputError.single(
            "the trace has its own priorities (e.g. openb's QoS classes); set "
            "workload.priority_override=true to replace them with the configured mix",
            "config",
            column="workload.priority_classes",
        )
    order = jobs.select(pl.arg_sort_by("submit_time", "job_id")).to_series().to_numpy()
    draws = np.empty(jobs.height)
    draws[order] = np.random.default_rng([seed, 0x5052494F]).random(jobs.height)
    edges = np.cumsum([c.share for c in classes])
    edges[-1] = 1.0
    index = np.minimum(np.searchsorted(edges, draws, side="right"), len(classes) - 1)
    pick = pl.Series("class", index)
    return jobs.with_columns(
        priority=pick.replace_strict({i: c.value for i, c in enumerate(classes)}, return_dtype=pl.Int32),
        preemptible=pick.replace_strict(
            {i: c.preemptible for i, c in enumerate(classes)}, return_dtype=pl.Boolean
        ),
        preemption_policy=pick.replace_strict(
            {i: c.preemption_policy for i, c in enumerate(classes)}, return_dtype=pl.String
        ),
        priority_class=pick.replace_strict(
            {i: c.name for i, c in enumerate(classes)}, return_dtype=pl.String
        ),
    ).with_columns(
        policy_columns({c.name: c.reclaim_idle for c in classes}, {c.name: c.value for c in classes})
    )


def assign_checkpointing(
    jobs: pl.DataFrame, default: Checkpointing, by_queue: Mapping[str, Checkpointing] | None = None
) -> pl.DataFrame:
    """Add ``checkpoint_interval`` and ``restart_overhead`` per job: the queue's setting, else the default.

    Raises
    ------
    InputError
        On a negative or NaN interval or overhead, or an infinite overhead, naming the config key.
    """
    by_queue = dict(by_queue or {})
    problems = []
    for key, setting in [
        ("workload.checkpoint", default),
        *((f"workload.checkpoint_by_queue.{q}", s) for q, s in by_queue.items()),
    ]:
        if not setting.interval >= 0:
            problems.append(
                Problem(
                    f"interval must be >= 0 (.inf: never), found {setting.interval}",
                    "config",
                    column=f"{key}.interval",
                )
            )
        given = setting.restart_overhead
        if given is not None and not (given >= 0 and math.isfinite(given)):
            problems.append(
                Problem(
                    f"restart_overhead must be a finite number >= 0, found {given}",
                    "config",
                    column=f"{key}.restart_overhead",
                )
            )
    if problems:
        raise InputError(problems)
    gpus = pl.col("num_pods").cast(pl.Float64) * pl.col("gpu_milli").cast(pl.Float64) / 1000.0

    def overhead_of(setting: Checkpointing) -> pl.Expr:
        if setting.restart_overhead is None:
            return lucid_overhead(gpus)
        return pl.lit(float(setting.restart_overhead))

    interval: pl.Expr = pl.lit(float(default.interval))
    overhead: pl.Expr = overhead_of(default)
    for queue, setting in by_queue.items():
        mine = pl.col("queue") == queue
        interval = pl.when(mine).then(pl.lit(float(setting.interval))).otherwise(interval)
        overhead = pl.when(mine).then(overhead_of(setting)).otherwise(overhead)
    return jobs.with_columns(
        checkpoint_interval=interval.cast(pl.Float64), restart_overhead=overhead.cast(pl.Float64)
    )


__all__ = [
    "Checkpointing",
    "PriorityClass",
    "assign_checkpointing",
    "assign_priority_classes",
    "check_classes",
]
