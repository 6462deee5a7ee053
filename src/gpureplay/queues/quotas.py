"""Per-queue GPU quotas derived from a trace, as declared choices (issue 11, item 1).

A trace's tenants are its ``queue`` column (Philly's virtual clusters, ITP's clusters, Helios VCs). When the
user gives no quota per queue, two derivations are offered, each a stated assumption:

- :func:`vc_node_quotas`: Philly's real per-VC node counts (``traces/philly/philly_vc_nodes.csv``, the
  Helios artifact's ``philly_vc.csv``) times GPUs per node. The Helios QSSF simulator builds each VC as that
  many homogeneous nodes of ``--num_gpus_per_node`` GPUs, 8 by default (``framework/QSSF Service/
  simulator.py``, ``cluster.py``; HeliosArtifact commit bdaae10): 352 nodes, 2,816 GPUs for the 11 VCs.
- :func:`gpu_time_quotas`: each queue's share of the trace's GPU-time (``num_pods x gpu_milli / 1000 x
  duration``) of a cluster's GPUs, rounded to whole GPUs by the largest remainder (Hamilton's method), so the
  quotas sum to the cluster's GPUs exactly.

:func:`quota_of_each_queue` then gives every queue of a jobs table its quota, refusing (or, declared,
zeroing) a queue the quotas do not name: Philly's job table has 15 VCs, the node list 11 (the other four hold
18 jobs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import polars as pl

from gpureplay.errors import InputError, Problem

__all__ = [
    "HELIOS_GPUS_PER_NODE",
    "gpu_time_quotas",
    "quota_of_each_queue",
    "read_vc_nodes",
    "vc_node_quotas",
]

#: GPUs per node the Helios QSSF simulator gives every Philly VC node (``--num_gpus_per_node`` default).
HELIOS_GPUS_PER_NODE = 8

_VC_COLUMNS = ("vc", "node num")


def read_vc_nodes(path: str | Path) -> dict[str, int]:
    """Read a VC node-count table (``vc,node num``, one row per virtual cluster) in file order.

    Raises
    ------
    InputError
        On a missing file or column, an empty or repeated VC name, or a node count that is not a
        whole number >= 1, naming the file, the 1-based data row and the column.
    """
    source = str(path)
    try:
        table = pl.read_csv(path, infer_schema=False)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise InputError.single(f"cannot read the VC node counts: {err}", source) from err
    missing = [c for c in _VC_COLUMNS if c not in table.columns]
    if missing:
        raise InputError.single(
            f"missing column(s) {', '.join(repr(c) for c in missing)}; a VC table has {_VC_COLUMNS}", source
        )
    problems: list[Problem] = []
    counts: dict[str, int] = {}
    for row, (vc, nodes) in enumerate(table.select(_VC_COLUMNS).iter_rows(), start=1):
        name = (vc or "").strip()
        if not name:
            problems.append(Problem("empty VC name", source, row=row, column="vc"))
        elif name in counts:
            problems.append(Problem(f"VC {name!r} appears twice", source, row=row, column="vc"))
        try:
            count = int((nodes or "").strip())
        except ValueError:
            count = 0
        if count < 1:
            why = f"node count must be a whole number >= 1 (found {nodes!r})"
            problems.append(Problem(why, source, row=row, column="node num"))
        if name and name not in counts:
            counts[name] = count
    if problems:
        raise InputError(problems)
    return counts


def vc_node_quotas(
    vc_nodes: Mapping[str, int], gpus_per_node: int = HELIOS_GPUS_PER_NODE
) -> dict[str, float]:
    """GPU quota per VC: its node count times ``gpus_per_node`` (Helios's homogeneous VCs)."""
    if gpus_per_node < 1:
        raise InputError.single(f"must be >= 1 (found {gpus_per_node})", "config", column="gpus_per_node")
    return {vc: float(nodes * gpus_per_node) for vc, nodes in vc_nodes.items()}


def gpu_time_quotas(jobs: pl.DataFrame, total_gpus: int) -> dict[str, float]:
    """Whole-GPU quotas proportional to each queue's share of the jobs' GPU-time, summing to ``total_gpus``.

    Notes
    -----
    GPU-time of a job = ``num_pods x gpu_milli / 1000 x duration``. The exact shares ``total_gpus x
    share`` are floored and the GPUs left go one each to the largest remainders (ties: the queue that
    comes first by name), so no queue gets more than one GPU above its exact share. A queue with no
    GPU-time gets 0.
    """
    if total_gpus < 0:
        raise InputError.single(f"must be >= 0 (found {total_gpus})", "config", column="total_gpus")
    per_queue = (
        jobs.group_by("queue")
        .agg((pl.col("num_pods").cast(pl.Float64) * pl.col("gpu_milli") / 1000.0 * pl.col("duration")).sum())
        .sort("queue")
    )
    names = per_queue["queue"].to_list()
    used = per_queue.to_series(1).to_list()
    total = math.fsum(used)
    if total <= 0:
        raise InputError.single(
            "the jobs hold no GPU-time: a GPU-time share cannot give quotas", "jobs", column="gpu_milli"
        )
    exact = [total_gpus * u / total for u in used]
    quotas = [math.floor(e) for e in exact]
    left = total_gpus - sum(quotas)
    by_remainder = sorted(range(len(names)), key=lambda i: (-(exact[i] - quotas[i]), names[i]))
    for i in by_remainder[:left]:
        quotas[i] += 1
    return {name: float(q) for name, q in zip(names, quotas, strict=True)}


def quota_of_each_queue(
    jobs: pl.DataFrame, quotas: Mapping[str, float], missing: Literal["error", "zero"] = "error"
) -> dict[str, float]:
    """Every queue of ``jobs`` with its quota, in name order.

    Parameters
    ----------
    missing
        A queue ``quotas`` does not name: ``error`` refuses it (naming the first job row in that queue);
        ``zero`` gives it quota 0 (it runs only on what it may borrow), a choice to state with the results.

    Raises
    ------
    InputError
        Under ``error``, for the first queue without a quota.
    """
    queues = sorted(set(jobs["queue"].to_list()))
    unknown = [q for q in queues if q not in quotas]
    if unknown and missing == "error":
        numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
        first = numbered.filter(pl.col("queue").is_in(unknown)).row(0, named=True)
        raise InputError.single(
            f"queue {first['queue']!r} has no quota ({len(unknown)} queues without one: "
            f"{', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''}); give them quotas or take "
            "missing: zero",
            "jobs",
            row=int(first["source_row"]),
            column="queue",
        )
    return {q: float(quotas.get(q, 0.0)) for q in queues}
