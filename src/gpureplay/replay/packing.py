"""Packing mode's Python face: place a pod list once each, in order, and measure the cluster as it fills.

:func:`pack_pods` compiles the tables as a timed replay does
(:mod:`gpureplay.replay.compile`), runs :func:`gpureplay.engine.packing.pack`
and returns per-pod outcomes and the fill curve: one row per whole percent of
arrived GPU demand, as the FGD paper's figures are drawn (Weng et al., ATC'23,
Fig. 7-9; the artifact's ``analysis_allo_discrete.csv`` columns 0..130).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import polars as pl

from gpureplay.engine.packing import PACK_ROWS, PK_ALLOCATED, PK_ARRIVED, PK_FAILED, PK_FAILED_MILLI, pack
from gpureplay.engine.state import layout as L
from gpureplay.errors import InputError
from gpureplay.replay.compile import compile_replay, policy_params, task_bundle
from gpureplay.replay.simulate import _initial, warm_up_tables
from gpureplay.schedulers.policy import Policy
from gpureplay.workload.typical_pods import TypicalPods, typical_pods

__all__ = [
    "PACKING_EVENT_SCHEMA",
    "PACKING_POD_SCHEMA",
    "PACKING_TIMELINE_SCHEMA",
    "Packing",
    "fill_curve",
    "pack_pods",
    "warm_up_packing",
]

#: One row per pod (``jobs.parquet`` of a packing run), arrival order.
PACKING_POD_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "arrival": pl.Int64(),
    "state": pl.String(),
    "node": pl.Int32(),
    "gpu_milli": pl.Int64(),
}

#: One row per whole percent of arrived GPU demand (``timeline.parquet`` of a packing run).
PACKING_TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "arrived_pct": pl.Int32(),
    "pods_in_bin": pl.Int32(),
    "allocated_gpu_pct": pl.Float64(),
    "unallocated_gpu_pct": pl.Float64(),
    "frag_gpu_pct": pl.Float64(),
    "frag_ratio_pct": pl.Float64(),
    "failed_pods": pl.Int64(),
    "failed_gpu_pct": pl.Float64(),
}

#: One row per pod, arrival order: the cluster after it (the simulator's per-event log).
PACKING_EVENT_SCHEMA: dict[str, pl.DataType] = {
    "arrival": pl.Int64(),
    "arrived_gpu_milli": pl.Int64(),
    "allocated_gpu_milli": pl.Int64(),
    "frag_gpu_milli": pl.Float64(),
    "failed_pods": pl.Int64(),
    "failed_gpu_milli": pl.Int64(),
}


@dataclass
class Packing:
    """Result of one packing run.

    Attributes
    ----------
    pods
        :data:`PACKING_POD_SCHEMA`: ``state`` is ``placed`` or ``failed``;
        ``node`` the node's row in the nodes table (null when failed).
    events
        :data:`PACKING_EVENT_SCHEMA`: the cluster after each pod.
    timeline
        :data:`PACKING_TIMELINE_SCHEMA` (see :func:`fill_curve`).
    capacity_milli
        The cluster's GPU milli (the 100 %).
    tasks
        The task classes the fragmentation was measured with.
    stats
        ``kernel_seconds``: wall time of the compiled run.
    """

    pods: pl.DataFrame
    events: pl.DataFrame
    timeline: pl.DataFrame
    capacity_milli: int
    tasks: TypicalPods
    stats: dict[str, float]


def pack_pods(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    policy: Policy,
    *,
    seed: int = 0,
    tasks: TypicalPods | None = None,
    max_pct: int = 130,
) -> Packing:
    """Place ``jobs`` (single pods, ``submit_time`` order) on the empty ``nodes`` under ``policy``'s scorers.

    Parameters
    ----------
    jobs, nodes
        Validated canonical tables; every job has one pod.
    policy
        Only its placement (``node_placement``, ``gpu_placement``) matters:
        there is no queue, no gang and no preemption in packing mode.
    seed
        Key of the random choices (``random`` placement).
    tasks
        FGD's task classes; default: the typical pods of ``jobs``
        (:func:`gpureplay.workload.typical_pods.typical_pods`). Pass the
        original workload's when ``jobs`` was inflated (the simulator builds
        them before tuning).
    max_pct
        Last whole percent of arrived demand recorded.

    Raises
    ------
    InputError
        For a job of several pods, or ``max_pct`` below 0.
    """
    if max_pct < 0:
        raise InputError.single(f"must be >= 0, not {max_pct}", "packing", column="max_pct")
    multi = jobs.filter(pl.col("num_pods") != 1)
    if multi.height:
        row = multi.row(0, named=True)
        raise InputError.single(
            f"packing mode places single pods; job_id {row['job_id']} has {row['num_pods']} pods "
            f"({multi.height} such jobs)",
            "jobs",
            column="num_pods",
        )
    sharing = getattr(policy.gpu_sharing, "name", policy.gpu_sharing)
    if sharing != "none":
        raise InputError.single(
            f"packing mode (the FGD experiment) places pods that never run, so time-slicing and MPS, which "
            f"change how fast pods run, do not apply: use gpu_sharing: none (found {sharing})",
            "config",
            column="scheduler.gpu_sharing",
        )
    mig = getattr(policy.mig_strategy, "name", policy.mig_strategy)
    if mig != "none":
        # FGD over MIG slices is issue 9's open part; the packing kernel measures whole-GPU milli.
        raise InputError.single(
            f"packing mode (the FGD experiment) measures fragmentation of whole GPUs; MIG instances are not "
            f"modelled there yet: use mig_strategy: none (found {mig})",
            "config",
            column="scheduler.mig_strategy",
        )
    if int(nodes["num_gpus"].sum()) == 0:
        raise InputError.single(
            "the cluster has no GPUs: packing mode measures how much of its GPU capacity is allocated",
            "nodes",
            column="num_gpus",
        )
    if tasks is None:
        tasks = typical_pods(jobs)
    params = policy_params(
        policy,
        seed=seed,
        sample_interval=1.0,
        horizon=None,
        window=(np.inf, np.inf),
        max_samples=1,
        debug=False,
    )
    compiled = compile_replay(jobs, nodes, params, tasks)
    num_classes = compiled.classes.ints.shape[1]
    num_nodes = compiled.cluster.node_int.shape[1]
    # Packing measures fragmentation whatever the scorer, and may memoize fgd's answers.
    bundle = task_bundle(tasks, compiled.models)._replace(memo=np.full((num_classes, num_nodes, 2), np.nan))
    classes = compiled.classes._replace(tasks=bundle)
    state = _initial(compiled, 1)
    capacity = int(compiled.cluster.node_int[L.N_GPUS].sum()) * L.WHOLE
    num_pods = compiled.jobs.ints.shape[1]
    events = np.zeros((PACK_ROWS, num_pods), dtype=np.int64)
    frag = np.zeros(num_pods)
    started = time.perf_counter()
    pack(
        compiled.params,
        compiled.jobs,
        classes,
        compiled.cluster,
        state.ix,
        state.js,
        state.sc,
        state.run,
        bundle,
        np.zeros(num_nodes),
        np.zeros(num_classes, dtype=np.int64),
        events,
        frag,
    )
    kernel_seconds = time.perf_counter() - started
    event_table = pl.DataFrame(
        {
            "arrival": np.arange(num_pods),
            "arrived_gpu_milli": events[PK_ARRIVED],
            "allocated_gpu_milli": events[PK_ALLOCATED],
            "frag_gpu_milli": frag,
            "failed_pods": events[PK_FAILED],
            "failed_gpu_milli": events[PK_FAILED_MILLI],
        },
        schema=PACKING_EVENT_SCHEMA,
    )
    return Packing(
        pods=_pods(compiled.jobs.ints, compiled.jobs.arrival, state.js.pod_node),
        events=event_table,
        timeline=fill_curve(event_table, capacity, max_pct),
        capacity_milli=capacity,
        tasks=tasks,
        stats={"kernel_seconds": kernel_seconds},
    )


def warm_up_packing(policy: Policy) -> None:
    """Pack one pod on one node under ``policy``, so numba compiles or loads the packing kernel now."""
    jobs, nodes = warm_up_tables()
    pack_pods(jobs, nodes, policy, max_pct=0)


def fill_curve(events: pl.DataFrame, capacity_milli: int, max_pct: int = 130) -> pl.DataFrame:
    """The fill curve of a packing run: one row per whole percent of arrived GPU demand, 0 .. ``max_pct``.

    Parameters
    ----------
    events
        :data:`PACKING_EVENT_SCHEMA` rows.
    capacity_milli
        The cluster's GPU milli (100 %).
    max_pct
        Last percent kept.

    Returns
    -------
    polars.DataFrame
        :data:`PACKING_TIMELINE_SCHEMA`. Row ``k`` holds the means, over the
        pods whose arrival brought the arrived demand to ``k`` % (rounded
        half to even), of the allocated GPU share, the fragmentation share of
        the capacity and the fragmentation ratio (of idle GPU); the failed
        pods are those failed by the last of them. A percent no pod's
        arrival rounds to takes the pods of ``k - 1 .. k + 1``, and is left
        out when there are none: the artifact's discretisation
        (``experiments/analysis/merge_alloc_discrete_0920.py``, which
        averages values it first rounds to 2 decimals; here the exact values).
    """
    scale = 100.0 / capacity_milli
    per_event = events.select(
        (pl.col("arrived_gpu_milli") * scale).round(0, mode="half_to_even").cast(pl.Int32).alias("pct"),
        (pl.col("allocated_gpu_milli") * scale).alias("alloc"),
        (pl.col("frag_gpu_milli") * scale).alias("frag"),
        pl.when(pl.col("allocated_gpu_milli") < capacity_milli)
        .then(pl.col("frag_gpu_milli") * 100.0 / (capacity_milli - pl.col("allocated_gpu_milli")))
        .alias("ratio"),
        pl.col("failed_pods"),
        (pl.col("failed_gpu_milli") * scale).alias("failed_pct"),
    )
    rows = []
    for k in range(max_pct + 1):
        part = per_event.filter(pl.col("pct") == k)
        if part.height == 0:
            part = per_event.filter(pl.col("pct").is_between(k - 1, k + 1))
        if part.height == 0:
            continue
        alloc = float(part["alloc"].mean())  # type: ignore[arg-type]
        rows.append(
            {
                "arrived_pct": k,
                "pods_in_bin": part.height,
                "allocated_gpu_pct": alloc,
                "unallocated_gpu_pct": 100.0 - alloc,
                "frag_gpu_pct": part["frag"].mean(),
                "frag_ratio_pct": part["ratio"].mean(),
                "failed_pods": part["failed_pods"].max(),
                "failed_gpu_pct": part["failed_pct"].max(),
            }
        )
    return pl.DataFrame(rows, schema=PACKING_TIMELINE_SCHEMA)


def _pods(ints: np.ndarray, arrival: np.ndarray, pod_node: np.ndarray) -> pl.DataFrame:
    order = np.empty_like(arrival)
    order[arrival] = np.arange(arrival.shape[0])
    node = pod_node[ints[L.J_POD0]]
    return pl.DataFrame(
        {
            "job_id": ints[L.J_ID],
            "arrival": order,
            "state": np.where(node >= 0, "placed", "failed"),
            "node": node,
            "gpu_milli": ints[L.J_MILLI] * ints[L.J_PODS],
        },
        schema=PACKING_POD_SCHEMA,
    ).with_columns(pl.when(pl.col("node") >= 0).then(pl.col("node")).alias("node"))
