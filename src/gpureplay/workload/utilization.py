"""Per-job resource usage and the ReclaimIdleResource annotations of PriorityClasses.

Idle-GPU reclaim (``scheduler.preemption: reclaim_idle``, docs/systems.md, "scheduler-plugins") evicts a
running job whose GPUs and CPUs sat idle over a window, and every replay's results say what the GPUs did
from the same usage (:mod:`gpureplay.results.gpu_usage`: busy GPU-hours, idle alerts, energy). What a job
uses comes from the trace where it has it (a ``gpu_util`` column: mean ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``
of its GPUs while it works, 0..1; a ``cpu_util`` column: CPU cores per pod), else from a seeded model in
``workload.utilization``: every job works at ``gpu_active`` / ``cpu_active``, and a seeded ``idle_share``
of the jobs (of ``idle_classes`` only, when given: e.g. notebooks) drops to 0 ``idle_after`` seconds into
each attempt and stays idle until it ends, as an interactive session left open does.

Which jobs a reclaim may take, and when, is set per PriorityClass by the plugin's annotations
(``reclaim-idle-resource.scheduling.x-k8s.io/*``, :class:`ReclaimIdlePolicy`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from gpureplay.engine.state import layout as L
from gpureplay.errors import InputError, Problem


@dataclass(frozen=True)
class ReclaimIdlePolicy:
    """A PriorityClass's ReclaimIdleResource annotations (``reclaim_idle_resource_policy.go``).

    Parameters
    ----------
    minimum_preemptable_priority
        A preemptor of at least this priority may evict the class's jobs whatever their usage; None: the
        class's value + 1 (the plugin's default: plain priority preemption).
    toleration_seconds
        How long after it was scheduled a job is kept from a lower preemptor; negative: forever.
    cpu_idle_seconds, gpu_idle_seconds
        The windows the usage is averaged over (0: the plugin's query has no sample and reads 0).
    cpu_idle_usage_threshold
        CPU cores per pod above which a job is busy.
    gpu_idle_usage_threshold
        GPU engine-active ratio (0..1) above which a job is busy.
    """

    minimum_preemptable_priority: int | None = None
    toleration_seconds: int = 0
    cpu_idle_seconds: int = 0
    gpu_idle_seconds: int = 0
    cpu_idle_usage_threshold: float = 0.0
    gpu_idle_usage_threshold: float = 0.0


@dataclass(frozen=True)
class Utilization:
    """The workload's usage model (``workload.utilization``; see the module notes).

    Parameters
    ----------
    gpu_active
        GPU engine-active ratio (0..1] of a job's GPUs while it works; a trace's ``gpu_util`` wins.
    cpu_active
        CPU cores per pod while it works; None: the pod's CPU request. A trace's ``cpu_util`` wins.
    idle_share
        Seeded share of the jobs (of ``idle_classes``) that go idle.
    idle_after
        Seconds into each attempt when such a job's usage drops to 0.
    idle_classes
        PriorityClass names whose jobs may go idle; empty: any job.
    """

    gpu_active: float = 1.0
    cpu_active: float | None = None
    idle_share: float = 0.0
    idle_after: float = 3600.0
    idle_classes: tuple[str, ...] = ()


#: The job columns that carry a PriorityClass's policy (:func:`policy_columns`).
POLICY_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(ReclaimIdlePolicy))


def policy_columns(policies: Mapping[str, ReclaimIdlePolicy], values: Mapping[str, int]) -> list[pl.Expr]:
    """Expressions adding each job's class policy from its ``priority_class`` (``reclaim_policy`` true).

    ``minimum_preemptable_priority`` is resolved here: null becomes the class's value + 1.
    """
    exprs: list[pl.Expr] = [pl.col("priority_class").is_in(list(policies)).alias("reclaim_policy")]
    for name in POLICY_COLUMNS:
        mapping: dict[str, float] = {}
        for cls, policy in policies.items():
            given = getattr(policy, name)
            if name == "minimum_preemptable_priority" and given is None:
                given = values[cls] + 1
            mapping[cls] = float(given)
        exprs.append(
            pl.col("priority_class").replace_strict(mapping, default=0.0, return_dtype=pl.Float64).alias(name)
        )
    return exprs


def check_policy(policy: ReclaimIdlePolicy, key: str) -> list[Problem]:
    """Range problems of one class's annotations, each naming its config key."""
    problems = []
    for name in ("cpu_idle_seconds", "gpu_idle_seconds"):
        if getattr(policy, name) < 0:
            problems.append(
                Problem(f"must be >= 0 seconds, found {getattr(policy, name)}", "config", key=f"{key}.{name}")
            )
    for name in ("cpu_idle_usage_threshold", "gpu_idle_usage_threshold"):
        value = getattr(policy, name)
        if not (value >= 0 and math.isfinite(value)):
            problems.append(Problem(f"must be a number >= 0, found {value}", "config", key=f"{key}.{name}"))
    return problems


def check_utilization(model: Utilization, classes: Sequence[str], key: str = "workload.utilization") -> None:
    """Refuse an out-of-range usage model, naming the key.

    Raises
    ------
    InputError
        Listing every problem.
    """
    checks = [
        ("gpu_active", 0.0 < model.gpu_active <= 1.0, "must be in (0, 1]"),
        (
            "cpu_active",
            model.cpu_active is None or (model.cpu_active >= 0 and math.isfinite(model.cpu_active)),
            "must be cores >= 0 (null: the request)",
        ),
        ("idle_share", 0.0 <= model.idle_share <= 1.0, "must be in [0, 1]"),
        (
            "idle_after",
            model.idle_after >= 0 and math.isfinite(model.idle_after),
            "must be a finite number of seconds >= 0",
        ),
    ]
    problems = [
        Problem(f"{message}, found {getattr(model, name)}", "config", key=f"{key}.{name}")
        for name, ok, message in checks
        if not ok
    ]
    unknown = sorted(set(model.idle_classes) - set(classes))
    if unknown:
        known = ", ".join(classes) if classes else "none: workload.priority_classes is empty"
        problems.append(
            Problem(
                f"not a PriorityClass of the workload: {', '.join(unknown)} (known: {known})",
                "config",
                key=f"{key}.idle_classes",
            )
        )
    if problems:
        raise InputError(problems)


def _trace_usage(jobs: pl.DataFrame, name: str) -> pl.Expr:
    """A trace's own usage: the column itself, or as a generic CSV keeps a non-canonical one (``source_*``).

    Raises
    ------
    InputError
        On a value that is not a number, naming its row.
    """
    for column in (name, f"source_{name}"):
        if column not in jobs.columns:
            continue
        value = pl.col(column).cast(pl.Float64, strict=False)
        bad = jobs.with_row_index("i").filter(value.is_null() & pl.col(column).is_not_null())
        if bad.height:
            first = bad.row(0, named=True)
            raise InputError.single(
                f"not a number: {first[column]!r} ({bad.height:,} rows)",
                "trace",
                row=int(first.get("source_row") or first["i"] + 1),
                column=column,
            )
        return value
    return pl.lit(None, pl.Float64)


def assign_utilization(jobs: pl.DataFrame, model: Utilization, seed: int) -> pl.DataFrame:
    """Add ``gpu_util``, ``cpu_util`` (a trace's own values win where given: the columns, or a generic
    CSV's ``source_gpu_util`` / ``source_cpu_util``) and ``idle_after`` (inf: never).

    The draw of who goes idle is independent of row order (the i-th job in ``(submit_time, job_id)``
    order gets the i-th draw) and of the other seeded draws.
    """
    order = jobs.select(pl.arg_sort_by("submit_time", "job_id")).to_series().to_numpy()
    draws = np.empty(jobs.height)
    draws[order] = np.random.default_rng([seed, 0x49444C45]).random(jobs.height)
    eligible = (
        pl.col("priority_class").is_in(list(model.idle_classes)).fill_null(False)
        if model.idle_classes
        else pl.lit(True)
    )
    idle = eligible & (pl.Series("draw", draws) < model.idle_share)
    cpu_model = (
        pl.col("cpu_milli").cast(pl.Float64) / 1000.0
        if model.cpu_active is None
        else pl.lit(float(model.cpu_active))
    )
    gpu_model = pl.when(pl.col("gpu_milli") > 0).then(pl.lit(float(model.gpu_active))).otherwise(0.0)
    return jobs.with_columns(
        gpu_util=_trace_usage(jobs, "gpu_util").fill_null(gpu_model),
        cpu_util=_trace_usage(jobs, "cpu_util").fill_null(cpu_model),
        idle_after=pl.when(idle).then(pl.lit(float(model.idle_after))).otherwise(math.inf),
    )


def check_usage(jobs: pl.DataFrame) -> None:
    """Refuse jobs that ``preemption: reclaim_idle`` cannot replay.

    Raises
    ------
    InputError
        When the jobs have no usage columns or no PriorityClass mix (the plugin reads its victims'
        classes), or a trace's own usage is out of range (naming its row).
    """
    missing = [c for c in ("gpu_util", "cpu_util", "idle_after") if c not in jobs.columns]
    if missing:
        raise InputError.config(
            f"preemption: reclaim_idle needs each job's usage (missing columns: {', '.join(missing)}): "
            "the workload's utilisation model adds them (gpureplay.workload.utilization.assign_utilization)",
            "workload.utilization",
        )
    if "reclaim_policy" not in jobs.columns:
        raise InputError.config(
            "preemption: reclaim_idle reads each victim's PriorityClass annotations: give the workload a "
            "PriorityClass mix (workload.priority_classes, each with its reclaim_idle annotations)",
            "workload.priority_classes",
        )
    check_usage_values(jobs)


def check_usage_values(jobs: pl.DataFrame) -> None:
    """Refuse a usage out of range: ``gpu_util`` outside [0, 1], ``cpu_util`` below 0 (naming its row).

    Every timed replay reads the usage (the results' busy GPU-hours and energy, :mod:`gpureplay.results.
    gpu_usage`), so a trace's own values are checked under any scheduler.

    Raises
    ------
    InputError
        Naming the first bad row and the column, with the count of bad rows.
    """
    for column, top in (("gpu_util", 1.0), ("cpu_util", math.inf)):
        bad = jobs.with_row_index("i").filter(~((pl.col(column) >= 0) & (pl.col(column) <= top)))
        if bad.height:
            first = bad.row(0, named=True)
            raise InputError.single(
                f"must be in [0, {top:g}], found {first[column]} ({bad.height:,} rows)",
                "jobs",
                row=int(first.get("source_row") or first["i"] + 1),
                column=column,
            )


def idle_rows(jobs: pl.DataFrame, reclaiming: bool) -> npt.NDArray[np.float64]:
    """The engine's ``jobs.idle`` (``I_*`` rows, one column per job; one column when not ``reclaiming``).

    Raises
    ------
    InputError
        When reclaiming and the jobs have no PriorityClass mix (the plugin reads its victims' classes) or
        no usage columns, or a trace's own usage is out of range.
    """
    if not reclaiming:
        return np.zeros((L.IDLE_FIELDS, 1))
    check_usage(jobs)
    rows = np.zeros((L.IDLE_FIELDS, jobs.height))
    sources: dict[int, Any] = {
        L.I_GPU: pl.col("gpu_util"),
        L.I_CPU: pl.col("cpu_util"),
        L.I_AFTER: pl.col("idle_after"),
        L.I_POLICY: pl.col("reclaim_policy").fill_null(False),
        L.I_MIN_PRIO: pl.col("minimum_preemptable_priority"),
        L.I_TOLERATION: pl.col("toleration_seconds"),
        L.I_CPU_WINDOW: pl.col("cpu_idle_seconds"),
        L.I_GPU_WINDOW: pl.col("gpu_idle_seconds"),
        L.I_CPU_THRESHOLD: pl.col("cpu_idle_usage_threshold"),
        L.I_GPU_THRESHOLD: pl.col("gpu_idle_usage_threshold"),
    }
    frame = jobs.select(*(expr.cast(pl.Float64).alias(str(row)) for row, expr in sources.items()))
    for row in sources:
        rows[row] = frame[str(row)].to_numpy()
    return np.ascontiguousarray(rows)


__all__ = [
    "POLICY_COLUMNS",
    "ReclaimIdlePolicy",
    "Utilization",
    "assign_utilization",
    "check_policy",
    "check_usage",
    "check_usage_values",
    "check_utilization",
    "idle_rows",
    "policy_columns",
]
