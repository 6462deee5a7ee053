"""Canonical tables + policy -> the flat, typed arrays the engine kernels take.

Everything the kernels need is normalised here, once: integer codes instead of
strings and enums, ``int64``/``float64``/``uint64`` C-contiguous writeable
arrays (polars' zero-copy output can be read-only, and a read-only or strided
array would compile a second kernel signature), nulls replaced by their
meaning, GPU model names by bits of a per-job allowed-model mask, and the
static orders the engine relies on (queue rank, arrival order, class-sorted
layout) computed with vectorised sorts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt
import polars as pl

from gpureplay.engine import state as S
from gpureplay.engine.queueing import bitset_words
from gpureplay.engine.state import Float64Array, Int64Array, UInt64Array
from gpureplay.errors import InputError
from gpureplay.schedulers.policy import Backfill, GangMode, Placement, Policy, QueueOrder
from gpureplay.traces.schema import UNKNOWN_CAPACITY


@dataclass(frozen=True)
class CompiledReplay:
    """Engine-ready arrays for one (jobs, nodes, policy) triple.

    Row layouts are the ``J_*``, ``JF_*``, ``C_*``, ``RC_*``, ``N_*`` and ``NT_*``
    constants of :mod:`gpureplay.engine.state`; columns are jobs in input order,
    classes, nodes in table order, node types.
    """

    policy: Int64Array
    session_interval: float
    job_int: Int64Array
    job_float: Float64Array
    job_mask: UInt64Array
    arrival: Int64Array
    class_int: Int64Array
    class_mask: UInt64Array
    class_jobs: Int64Array
    rclass_int: Int64Array
    rclass_mask: UInt64Array
    node_int: Int64Array
    node_type: Int64Array
    num_models: int
    hist_width: int
    num_pods: int
    num_slots: int
    bitset_sizes: Int64Array
    models: tuple[str, ...]


def _code(enum: type[Enum], value: object) -> int:
    """The integer code of a policy field given as an enum member or its name."""
    member = value if isinstance(value, enum) else enum[str(value)]
    return int(member.value)


def policy_codes(policy: Policy) -> Int64Array:
    """``P_*`` codes of a :class:`Policy` (enum values; see :mod:`gpureplay.engine.state`)."""
    if policy.backfill_depth < 0:
        raise InputError.single(f"must be >= 0 (found {policy.backfill_depth})", "scheduler.backfill_depth")
    if not (np.isfinite(policy.session_interval) and policy.session_interval >= 0):
        raise InputError.single(
            f"must be a finite number >= 0 (found {policy.session_interval})", "scheduler.session_interval"
        )
    codes = np.zeros(S.POLICY_FIELDS, dtype=np.int64)
    codes[S.P_ORDER] = _code(QueueOrder, policy.queue_order)
    codes[S.P_GANG] = _code(GangMode, policy.gang)
    codes[S.P_NODE] = _code(Placement, policy.node_placement)
    codes[S.P_GPU] = _code(Placement, policy.gpu_placement)
    codes[S.P_BACKFILL] = _code(Backfill, policy.backfill)
    codes[S.P_DEPTH] = policy.backfill_depth
    return codes


def _rows(df: pl.DataFrame, columns: list[str]) -> Int64Array:
    """Stack int64 columns of ``df`` as the rows of a C-contiguous writeable array."""
    out = np.empty((len(columns), df.height), dtype=np.int64)
    for i, name in enumerate(columns):
        out[i] = df[name].to_numpy()
    return out


def _exclusive_cumsum(values: Int64Array) -> Int64Array:
    out = np.zeros(values.shape[0], dtype=np.int64)
    if values.shape[0] > 1:
        np.cumsum(values[:-1], out=out[1:])
    return out


def _dense_classes(df: pl.DataFrame, *keys: list[str]) -> list[tuple[Int64Array, int]]:
    """For each key (a list of columns): dense ids 0..C-1 of its distinct value combinations, and C.

    Each column is dense-ranked on its own and the ranks are packed into one
    integer (mixed radix), which ranks far faster than a struct; a struct rank
    (of the per-column ranks) is the fallback when the packed key would not
    fit in 62 bits.
    """
    if df.height == 0:
        return [(np.zeros(0, dtype=np.int64), 0) for _ in keys]
    columns = sorted({c for key in keys for c in key})
    ranks = df.select((pl.col(c).rank("dense").cast(pl.Int64) - 1).alias(c) for c in columns)
    sizes = {c: int(np.max(ranks[c].to_numpy())) + 1 for c in columns}
    exprs = []
    for i, key in enumerate(keys):
        if math.prod(sizes[c] for c in key) < 2**62:
            packed = pl.lit(0, pl.Int64)
            for c in key:
                packed = packed * sizes[c] + pl.col(c)
        else:
            packed = pl.struct(key)
        exprs.append((packed.rank("dense").cast(pl.Int64) - 1).alias(f"k{i}"))
    ids_frame = ranks.select(exprs)
    out = []
    for i in range(len(keys)):
        ids = np.ascontiguousarray(ids_frame[f"k{i}"].to_numpy(), dtype=np.int64)
        out.append((ids, int(ids.max()) + 1))
    return out


def _per_class(ids: Int64Array, count: int, values: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    """The value each class's members share (all members are identical on the class key)."""
    out = np.zeros(count, dtype=values.dtype)
    out[ids] = values
    return out


def compile_nodes(nodes: pl.DataFrame) -> tuple[Int64Array, Int64Array, tuple[str, ...], int]:
    """Node table -> (``node_int``, ``node_type``, model names by code, histogram width).

    Raises
    ------
    InputError
        When the cluster has more than 64 GPU models (one mask bit each).
    """
    models = tuple(sorted(nodes["gpu_model"].drop_nulls().unique().to_list()))
    if len(models) > S.MAX_MODELS:
        raise InputError.single(
            f"at most {S.MAX_MODELS} distinct GPU models are supported, found {len(models)}", "nodes", None,
            "gpu_model",
        )  # fmt: skip
    codes = {name: i for i, name in enumerate(models)}
    big = pl.lit(S.BIG, pl.Int64)
    df = nodes.select(
        pl.col("num_gpus").cast(pl.Int64),
        pl.col("gpu_mem_mib").cast(pl.Int64),
        pl.when(pl.col("cpu_milli") == UNKNOWN_CAPACITY)
        .then(big)
        .otherwise(pl.col("cpu_milli").cast(pl.Int64))
        .alias("cpu_milli"),
        pl.when(pl.col("mem_mib") == UNKNOWN_CAPACITY)
        .then(big)
        .otherwise(pl.col("mem_mib").cast(pl.Int64))
        .alias("mem_mib"),
        pl.col("gpu_model").replace_strict(codes, default=-1, return_dtype=pl.Int64).alias("model"),
    )
    node_int = np.empty((S.NODE_INT_FIELDS, df.height), dtype=np.int64)
    node_int[S.N_GPUS] = df["num_gpus"].to_numpy()
    node_int[S.N_GPU_MEM] = df["gpu_mem_mib"].to_numpy()
    node_int[S.N_CPU] = df["cpu_milli"].to_numpy()
    node_int[S.N_MEM] = df["mem_mib"].to_numpy()
    node_int[S.N_MODEL] = df["model"].to_numpy()
    node_int[S.N_GPU0] = _exclusive_cumsum(node_int[S.N_GPUS])
    config = node_int[[S.N_MODEL, S.N_GPUS, S.N_GPU_MEM, S.N_CPU, S.N_MEM]].T
    types, counts = np.unique(config, axis=0, return_counts=True)
    node_type = np.empty((S.NODE_TYPE_FIELDS, types.shape[0]), dtype=np.int64)
    node_type[S.NT_MODEL] = types[:, 0]
    node_type[S.NT_GPUS] = types[:, 1]
    node_type[S.NT_GPU_MEM] = types[:, 2]
    node_type[S.NT_CPU] = types[:, 3]
    node_type[S.NT_MEM] = types[:, 4]
    node_type[S.NT_COUNT] = counts
    hist_width = int(node_int[S.N_GPUS].max(initial=0)) + 1
    return node_int, node_type, models, hist_width


def compile_replay(jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy) -> CompiledReplay:
    """Turn validated canonical tables and a policy into :class:`CompiledReplay`.

    Parameters
    ----------
    jobs, nodes
        Canonical tables (:func:`gpureplay.traces.schema.validate_jobs` /
        ``validate_nodes`` output).
    policy
        The scheduler configuration.

    Returns
    -------
    CompiledReplay
        Arrays whose dtypes and layouts never vary, so every kernel compiles once.

    Notes
    -----
    Queue ranks follow the spec: fifo ``(submit_time, job_id)``, sjf
    ``(duration, submit_time, job_id)``, priority ``(-priority, submit_time,
    job_id)`` (kube-scheduler PrioritySort); pod-by-pod mode always uses the
    priority key, its pod queue interleaving same-(priority, submit) groups.
    """
    codes = policy_codes(policy)
    node_int, node_type, models, hist_width = compile_nodes(nodes)
    bits = {name: 1 << i for i, name in enumerate(models)}
    cluster_bits = sum(bits.values())
    m = pl.col("gpu_milli").cast(pl.Int64)
    allowed = (
        pl.when(pl.col("gpu_models").is_null())
        .then(pl.lit(S.ALL_MODELS, pl.UInt64))
        .otherwise(
            pl.col("gpu_models")
            .list.unique()
            .list.eval(pl.element().replace_strict(bits, default=0, return_dtype=pl.UInt64))
            .list.sum()
            .cast(pl.UInt64)
        )
    )
    df = jobs.select(
        pl.col("job_id").cast(pl.Int64),
        pl.col("submit_time").cast(pl.Float64),
        pl.col("duration").cast(pl.Float64),
        pl.col("num_pods").cast(pl.Int64),
        m.alias("gpu_milli"),
        # A GPU-less pod has no GPU memory or model constraint: normalising them merges its classes.
        pl.when(m == 0).then(0).otherwise(pl.col("gpu_mem_mib").fill_null(0)).cast(pl.Int64).alias("gpu_mem"),
        pl.col("cpu_milli").cast(pl.Int64),
        pl.col("mem_mib").cast(pl.Int64),
        pl.col("priority").cast(pl.Int64),
        pl.when(m == 0)
        .then(pl.lit(S.ALL_MODELS, pl.UInt64))
        .otherwise(allowed & pl.lit(cluster_bits, pl.UInt64))
        .alias("mask"),
        pl.when(m >= S.WHOLE).then(m // S.WHOLE).when(m > 0).then(1).otherwise(0).cast(pl.Int64).alias("k"),
    )
    num_jobs = df.height
    pod_mode = codes[S.P_GANG] == S.POD_BY_POD
    shape = ["gpu_milli", "gpu_mem", "cpu_milli", "mem_mib", "mask"]
    (qclass, num_classes), (rclass, num_rclasses) = _dense_classes(
        df, shape if pod_mode else [*shape, "num_pods"], [*shape, "num_pods"]
    )

    job_int = np.zeros((S.JOB_INT_FIELDS, num_jobs), dtype=np.int64)
    base = _rows(df, ["job_id", "num_pods", "gpu_milli", "gpu_mem", "cpu_milli", "mem_mib", "priority", "k"])
    job_int[[S.J_ID, S.J_PODS, S.J_MILLI, S.J_GMEM, S.J_CPU, S.J_MEM, S.J_PRIO, S.J_K]] = base
    job_int[S.J_CLASS] = qclass
    job_int[S.J_RCLASS] = rclass
    job_float = np.empty((S.JOB_FLOAT_FIELDS, num_jobs), dtype=np.float64)
    job_float[S.JF_SUBMIT] = df["submit_time"].to_numpy()
    job_float[S.JF_DURATION] = df["duration"].to_numpy()
    job_mask = np.ascontiguousarray(df["mask"].to_numpy(), dtype=np.uint64).copy()

    order = codes[S.P_ORDER]
    keys = {
        QueueOrder.fifo.value: ["submit_time", "job_id"],
        QueueOrder.sjf.value: ["duration", "submit_time", "job_id"],
        QueueOrder.priority.value: ["neg_priority", "submit_time", "job_id"],
    }
    sorts = (
        df.lazy()
        .select(pl.col("priority").neg().alias("neg_priority"), "submit_time", "job_id", "duration")
        .select(
            pl.arg_sort_by(keys[QueueOrder.priority.value if pod_mode else int(order)]).alias("queue"),
            pl.arg_sort_by(keys[QueueOrder.fifo.value]).alias("arrival"),
        )
        .collect()
    )
    queue = sorts["queue"].to_numpy().astype(np.int64)
    arrival = np.ascontiguousarray(sorts["arrival"].to_numpy(), dtype=np.int64)
    job_int[S.J_RANK, queue] = np.arange(num_jobs, dtype=np.int64)
    if pod_mode and num_jobs:
        # (priority, submit_time) groups of the pod queue are contiguous runs of the queue order.
        p_sorted = job_int[S.J_PRIO][queue]
        s_sorted = job_float[S.JF_SUBMIT][queue]
        is_start = np.ones(num_jobs, dtype=np.int64)
        is_start[1:] = (p_sorted[1:] != p_sorted[:-1]) | (s_sorted[1:] != s_sorted[:-1])
        starts = np.flatnonzero(is_start)
        ends = np.append(starts[1:], num_jobs).astype(np.int64)
        job_int[S.J_GROUP_END, queue] = ends[np.cumsum(is_start) - 1]
    else:
        job_int[S.J_GROUP_END] = job_int[S.J_RANK] + 1

    # Class by class, queue order within a class (a stable sort of the queue order by class).
    layout = np.ascontiguousarray(queue[np.argsort(qclass[queue], kind="stable")], dtype=np.int64)
    class_jobs = layout
    job_int[S.J_POS, layout] = np.arange(num_jobs, dtype=np.int64)
    per_class = np.bincount(qclass, minlength=num_classes).astype(np.int64)
    job_int[S.J_POD0] = _exclusive_cumsum(job_int[S.J_PODS])
    job_int[S.J_SLOT0] = _exclusive_cumsum(job_int[S.J_PODS] * job_int[S.J_K])

    class_int = np.zeros((S.CLASS_INT_FIELDS, num_classes), dtype=np.int64)
    for row, field in (
        (S.C_MILLI, S.J_MILLI),
        (S.C_GMEM, S.J_GMEM),
        (S.C_CPU, S.J_CPU),
        (S.C_MEM, S.J_MEM),
        (S.C_K, S.J_K),
    ):
        class_int[row] = _per_class(qclass, num_classes, job_int[field])
    class_int[S.C_PODS] = 1 if pod_mode else _per_class(qclass, num_classes, job_int[S.J_PODS])
    class_int[S.C_START] = _exclusive_cumsum(per_class)
    class_int[S.C_END] = class_int[S.C_START] + per_class
    gpu_nodes = node_int[S.N_GPUS] > 0
    min_gpu_mem = int(node_int[S.N_GPU_MEM][gpu_nodes].min(initial=0)) if gpu_nodes.any() else 0
    class_int[S.C_EXACT] = (
        (class_int[S.C_MILLI] >= S.WHOLE)
        & (class_int[S.C_CPU] == 0)
        & (class_int[S.C_MEM] == 0)
        & (class_int[S.C_GMEM] <= min_gpu_mem)
    )
    class_mask = _per_class(qclass, num_classes, job_mask).astype(np.uint64)

    rclass_int = np.zeros((S.RCLASS_INT_FIELDS, num_rclasses), dtype=np.int64)
    for row, field in (
        (S.RC_MILLI, S.J_MILLI),
        (S.RC_GMEM, S.J_GMEM),
        (S.RC_CPU, S.J_CPU),
        (S.RC_MEM, S.J_MEM),
        (S.RC_PODS, S.J_PODS),
        (S.RC_K, S.J_K),
    ):
        rclass_int[row] = _per_class(rclass, num_rclasses, job_int[field])
    rclass_mask = _per_class(rclass, num_rclasses, job_mask).astype(np.uint64)

    return CompiledReplay(
        policy=codes,
        session_interval=float(policy.session_interval),
        job_int=job_int,
        job_float=job_float,
        job_mask=job_mask,
        arrival=arrival,
        class_int=class_int,
        class_mask=class_mask,
        class_jobs=class_jobs,
        rclass_int=rclass_int,
        rclass_mask=rclass_mask,
        node_int=node_int,
        node_type=node_type,
        num_models=len(models),
        hist_width=hist_width,
        num_pods=int(job_int[S.J_PODS].sum()),
        num_slots=int((job_int[S.J_PODS] * job_int[S.J_K]).sum()),
        bitset_sizes=np.array(bitset_words(num_jobs), dtype=np.int64),
        models=models,
    )
