"""Which jobs ask a topology-aware scheduler to keep their pods together, and how tightly.

Kueue users write it as PodSet annotations (``kueue.x-k8s.io/podset-required-topology:
<level>``, ``podset-preferred-topology``, ``podset-unconstrained-topology``;
KEP-2724), KAI users as ``kai.scheduler/topology-required-placement`` /
``-preferred-placement``. A trace rarely records them, so the workload
config gives rules by job size: each job takes the rule with the largest
``min_gpus`` at or below its GPU count (``num_pods x gpu_milli / 1000``), e.g.
``{min_gpus: 16, mode: required, level: spine}`` keeps every job of 16 GPUs or
more inside one spine (a SuperPOD scalable unit). A trace that carries its own
``topology_mode`` / ``topology_level`` columns keeps them; the rules fill only
the jobs it leaves null.

Kueue's two-level requests (KEP-2724, "Two-level Topology Aware scheduling")
add ``podset-slice-required-topology: <level>`` and ``podset-slice-size: <n>``:
the job's pods split into slices of ``n`` pods, each slice inside one domain
of the slice level, at or below the job's own level. Here they are the
``topology_slice_level`` / ``topology_slice_size`` columns, or a rule's
``slice_level`` / ``slice_size``. A slice request without a mode is Kueue's
slice-only request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import polars as pl

from gpureplay.errors import InputError, Problem
from gpureplay.traces.schema import JOBS_SCHEMA

__all__ = ["TOPOLOGY_LEVELS", "TOPOLOGY_MODES", "TopologyRequest", "assign_topology_requests"]

#: Request modes, as Kueue's annotations name them.
TOPOLOGY_MODES: tuple[str, ...] = ("required", "preferred", "unconstrained")
#: Levels a request may name, outermost first: the nodes table's topology columns, and the node itself
#: (Kueue's ``kubernetes.io/hostname`` level). ``spine`` is a SuperPOD's scalable unit or a cloud's block.
TOPOLOGY_LEVELS: tuple[str, ...] = ("spine", "rack", "nvlink_domain", "node")


@dataclass(frozen=True)
class TopologyRequest:
    """One rule: jobs of at least ``min_gpus`` GPUs ask ``mode`` at ``level``.

    Parameters
    ----------
    min_gpus
        Smallest job (in GPUs) the rule applies to.
    mode
        ``required``: one domain of ``level`` or keep waiting; ``preferred``:
        that level if possible, else the smallest level above that holds the
        job, else spread; ``unconstrained``: any nodes (Kueue still packs them).
    level
        One of :data:`TOPOLOGY_LEVELS` (ignored by ``unconstrained``).
    slice_level, slice_size
        Kueue's PodSet slices: every ``slice_size`` pods inside one domain of
        ``slice_level`` (at or below ``level``); both or neither.
    """

    min_gpus: float
    mode: str
    level: str = "node"
    slice_level: str | None = None
    slice_size: int | None = None


def _problems(rules: Sequence[TopologyRequest], key: str) -> list[Problem]:
    problems = []
    seen: set[float] = set()
    for i, rule in enumerate(rules):
        where = f"{key}[{i}]"
        if not rule.min_gpus >= 0:
            problems.append(
                Problem(f"must be >= 0 (found {rule.min_gpus})", "config", column=f"{where}.min_gpus")
            )
        if rule.min_gpus in seen:
            problems.append(
                Problem(f"two rules for min_gpus {rule.min_gpus}", "config", column=f"{where}.min_gpus")
            )
        seen.add(rule.min_gpus)
        if rule.mode not in TOPOLOGY_MODES:
            problems.append(
                Problem(
                    f"unknown mode {rule.mode!r}; known: {', '.join(TOPOLOGY_MODES)}",
                    "config",
                    column=f"{where}.mode",
                )
            )
        if rule.level not in TOPOLOGY_LEVELS:
            problems.append(
                Problem(
                    f"unknown level {rule.level!r}; known: {', '.join(TOPOLOGY_LEVELS)}",
                    "config",
                    column=f"{where}.level",
                )
            )
        problems += _slice_problems(rule, where)
    return problems


def _slice_problems(rule: TopologyRequest, where: str) -> list[Problem]:
    """A rule's slices: both fields or neither, a known level at or below the rule's, a size of at least 1."""
    if rule.slice_level is None and rule.slice_size is None:
        return []
    if rule.slice_level is None or rule.slice_size is None:
        given, missing = (
            ("slice_size", "slice_level") if rule.slice_level is None else ("slice_level", "slice_size")
        )
        why = f"{given} needs {missing} (Kueue's podset-slice annotations go together)"
        return [Problem(why, "config", column=f"{where}.{missing}")]
    if rule.slice_level not in TOPOLOGY_LEVELS:
        known = ", ".join(TOPOLOGY_LEVELS)
        return [
            Problem(
                f"unknown level {rule.slice_level!r}; known: {known}", "config", column=f"{where}.slice_level"
            )
        ]
    problems = []
    if not (isinstance(rule.slice_size, int) and rule.slice_size >= 1):
        problems.append(
            Problem(
                f"must be a whole number >= 1 (found {rule.slice_size})",
                "config",
                column=f"{where}.slice_size",
            )
        )
    leveled = rule.mode in ("required", "preferred") and rule.level in TOPOLOGY_LEVELS
    if leveled and TOPOLOGY_LEVELS.index(rule.slice_level) < TOPOLOGY_LEVELS.index(rule.level):
        problems.append(
            Problem(
                f"slice level {rule.slice_level!r} is above the request's level {rule.level!r} (Kueue: "
                "the slice topology must be at or below the PodSet's)",
                "config",
                column=f"{where}.slice_level",
            )
        )
    return problems


#: The jobs table's request columns, in the order the rules fill them.
REQUEST_COLUMNS: tuple[str, ...] = (
    "topology_mode",
    "topology_level",
    "topology_slice_level",
    "topology_slice_size",
)


def with_request_columns(jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs`` with every request column (:data:`REQUEST_COLUMNS`), the missing ones null: a trace may give
    the mode and level without slices, or slices alone (Kueue's slice-only requests)."""
    missing = [c for c in REQUEST_COLUMNS if c not in jobs.columns]
    return jobs.with_columns(pl.lit(None, JOBS_SCHEMA[c]).alias(c) for c in missing)


def check_trace_requests(jobs: pl.DataFrame, source: str) -> None:
    """A trace's own ``topology_mode`` / ``topology_level`` (and slice) columns: known values; a
    ``required`` or ``preferred`` mode names its level, a level goes with a mode (``unconstrained`` needs
    none); a slice level and size go together, the size at least 1, the level at or below the request's.

    Raises
    ------
    InputError
        Naming the column and the first row at fault.
    """
    _check_pairs(jobs, source)
    if not any(c in jobs.columns for c in REQUEST_COLUMNS):
        return
    jobs = with_request_columns(jobs)
    # Rows as the error messages number them: the source file's, else 1-based in table order.
    indexed = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
    # (rows at fault, column named, message from the first such row), checked in this order.
    checks: list[tuple[pl.Expr, str, Callable[[dict[str, Any]], str]]] = []
    for column, known in (
        ("topology_mode", TOPOLOGY_MODES),
        ("topology_level", TOPOLOGY_LEVELS),
        ("topology_slice_level", TOPOLOGY_LEVELS),
    ):
        if column in indexed.columns:
            checks.append(
                (
                    pl.col(column).is_not_null() & ~pl.col(column).is_in(known),
                    column,
                    partial(_unknown_value, column, known),
                )
            )
    leveled = pl.col("topology_mode").is_in(["required", "preferred"])
    checks += [
        (
            leveled & pl.col("topology_level").is_null(),
            "topology_level",
            lambda row: f"a {row['topology_mode']} request needs a topology_level",
        ),
        (
            pl.col("topology_mode").is_null() & pl.col("topology_level").is_not_null(),
            "topology_mode",
            lambda row: "a topology_level needs a topology_mode",
        ),
    ]
    if "topology_slice_level" in indexed.columns:
        size, level = pl.col("topology_slice_size"), pl.col("topology_slice_level")
        rank = {name: i for i, name in enumerate(TOPOLOGY_LEVELS)}
        above = level.replace_strict(rank, default=None) < pl.col("topology_level").replace_strict(
            rank, default=None
        )
        checks += [
            (
                level.is_null() & size.is_not_null(),
                "topology_slice_level",
                lambda row: "a topology_slice_size needs a topology_slice_level",
            ),
            (
                level.is_not_null() & size.is_null(),
                "topology_slice_size",
                lambda row: "a topology_slice_level needs a topology_slice_size",
            ),
            (
                size < 1,
                "topology_slice_size",
                lambda row: f"a slice holds at least 1 pod (found {row['topology_slice_size']})",
            ),
            (
                leveled & above.fill_null(False),
                "topology_slice_level",
                lambda row: (
                    f"slice level {row['topology_slice_level']!r} is above the request's level "
                    f"{row['topology_level']!r} (Kueue: the slice topology must be at or below the PodSet's)"
                ),
            ),
        ]
    for bad, column, message in checks:
        rows = indexed.filter(bad)
        if rows.height:
            first = rows.row(0, named=True)
            raise InputError.single(message(first), source, row=int(first["source_row"]), column=column)


def _unknown_value(column: str, known: tuple[str, ...], row: dict[str, Any]) -> str:
    return f"unknown value {row[column]!r}; known: {', '.join(known)}"


def _check_pairs(jobs: pl.DataFrame, source: str) -> None:
    """Request columns come in pairs: mode with level, slice level with slice size."""
    problems = []
    for first, second in (
        ("topology_mode", "topology_level"),
        ("topology_slice_level", "topology_slice_size"),
    ):
        if (first in jobs.columns) != (second in jobs.columns):
            given, missing = (first, second) if first in jobs.columns else (second, first)
            problems.append(Problem(f"given without {missing}", source, column=given))
    if problems:
        raise InputError(problems)


def assign_topology_requests(
    jobs: pl.DataFrame, rules: Sequence[TopologyRequest], key: str = "workload.topology_requests"
) -> pl.DataFrame:
    """Add the request columns (:data:`REQUEST_COLUMNS`; null: no request) from the rules, keeping a trace's
    own: a row that gives any of them keeps all of its own.

    Raises
    ------
    InputError
        On a bad rule (naming ``key[i].field``) or a bad trace value.
    """
    problems = _problems(rules, key)
    if problems:
        raise InputError(problems)
    check_trace_requests(jobs, "jobs")
    gpus = pl.col("num_pods").cast(pl.Float64) * pl.col("gpu_milli").cast(pl.Float64) / 1000.0
    taken: dict[str, pl.Expr] = {c: pl.lit(None, JOBS_SCHEMA[c]) for c in REQUEST_COLUMNS}
    # The largest min_gpus at or below the job's size wins: apply the rules smallest first.
    for rule in sorted(rules, key=lambda r: r.min_gpus):
        applies = gpus >= rule.min_gpus
        values = (rule.mode, rule.level, rule.slice_level, rule.slice_size)
        for column, value in zip(REQUEST_COLUMNS, values, strict=True):
            taken[column] = pl.when(applies).then(pl.lit(value, JOBS_SCHEMA[column])).otherwise(taken[column])
    given = [c for c in REQUEST_COLUMNS if c in jobs.columns]
    if given:
        own = pl.any_horizontal(pl.col(c).is_not_null() for c in given)
        for column in given:
            taken[column] = pl.when(own).then(pl.col(column)).otherwise(taken[column])
    return jobs.with_columns(**{c: e.cast(JOBS_SCHEMA[c]) for c, e in taken.items()})
