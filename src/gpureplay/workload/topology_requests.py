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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from gpureplay.errors import InputError, Problem

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
    """

    min_gpus: float
    mode: str
    level: str = "node"


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
    return problems


def check_trace_requests(jobs: pl.DataFrame, source: str) -> None:
    """A trace's own ``topology_mode`` / ``topology_level`` columns: known values; a ``required`` or
    ``preferred`` mode names its level, a level goes with a mode (``unconstrained`` needs none).

    Raises
    ------
    InputError
        Naming the column and the first row at fault.
    """
    if "topology_mode" not in jobs.columns and "topology_level" not in jobs.columns:
        return
    problems = []
    for column in ("topology_mode", "topology_level"):
        if column not in jobs.columns:
            other = "topology_level" if column == "topology_mode" else "topology_mode"
            problems.append(Problem(f"given without {column}", source, column=other))
    if problems:
        raise InputError(problems)
    # Rows as the error messages number them: the source file's, else 1-based in table order.
    indexed = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
    for column, known in (("topology_mode", TOPOLOGY_MODES), ("topology_level", TOPOLOGY_LEVELS)):
        bad = indexed.filter(pl.col(column).is_not_null() & ~pl.col(column).is_in(known))
        if bad.height:
            problems.append(
                Problem(
                    f"unknown value {bad[column][0]!r}; known: {', '.join(known)}",
                    source,
                    row=int(bad["source_row"][0]),
                    column=column,
                )
            )
    leveled = pl.col("topology_mode").is_in(["required", "preferred"])
    no_level = indexed.filter(leveled & pl.col("topology_level").is_null())
    if no_level.height:
        problems.append(
            Problem(
                f"a {no_level['topology_mode'][0]} request needs a topology_level",
                source,
                row=int(no_level["source_row"][0]),
                column="topology_level",
            )
        )
    no_mode = indexed.filter(pl.col("topology_mode").is_null() & pl.col("topology_level").is_not_null())
    if no_mode.height:
        problems.append(
            Problem(
                "a topology_level needs a topology_mode",
                source,
                row=int(no_mode["source_row"][0]),
                column="topology_mode",
            )
        )
    if problems:
        raise InputError(problems)


def assign_topology_requests(
    jobs: pl.DataFrame, rules: Sequence[TopologyRequest], key: str = "workload.topology_requests"
) -> pl.DataFrame:
    """Add ``topology_mode`` and ``topology_level`` (null: no request) from the rules, keeping a trace's own.

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
    mode: pl.Expr = pl.lit(None, pl.String)
    level: pl.Expr = pl.lit(None, pl.String)
    # The largest min_gpus at or below the job's size wins: apply the rules smallest first.
    for rule in sorted(rules, key=lambda r: r.min_gpus):
        applies = gpus >= rule.min_gpus
        mode = pl.when(applies).then(pl.lit(rule.mode)).otherwise(mode)
        level = pl.when(applies).then(pl.lit(rule.level)).otherwise(level)
    if "topology_mode" in jobs.columns:
        own = pl.col("topology_mode").is_not_null()
        mode = pl.when(own).then(pl.col("topology_mode")).otherwise(mode)
        level = pl.when(own).then(pl.col("topology_level")).otherwise(level)
    return jobs.with_columns(topology_mode=mode.cast(pl.String), topology_level=level.cast(pl.String))
