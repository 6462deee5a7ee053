"""Canonical tables + policy -> the engine's static bundles (:mod:`gpureplay.engine.state.bundles`).

Everything the kernels need is normalised here, once: integer codes instead
of strings and enums, ``int64``/``float64``/``uint64`` C-contiguous writeable
arrays (polars' zero-copy output can be read-only, and a read-only or strided
array would compile a second kernel signature), nulls replaced by their
meaning, GPU model names by bits of a per-job allowed-model mask, queues by
tenant indices, and the static orders the engine relies on (queue keys,
arrival order, class-sorted layout) computed with vectorised sorts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from gpureplay.engine.fit.resources import rejection_codes
from gpureplay.engine.fit.scoring import scorer_code, uses_tasks
from gpureplay.engine.placement.kueue_tas import level_capacity
from gpureplay.engine.state import layout as L
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    Jobs,
    Numa,
    Params,
    Tasks,
    empty_cluster,
    numa_layout,
    topology_tree,
)
from gpureplay.engine.state.layout import Int64Array
from gpureplay.errors import InputError
from gpureplay.replay.mig import (
    MigFigures,
    dynamic_mig_nodes,
    dynamic_shapes,
    mig_figures,
    mig_nodes,
    refuse_mig,
    selector_masks,
    split_mig_devices,
    wanted_shapes,
)
from gpureplay.replay.policy_checks import policy_axes, policy_problems
from gpureplay.replay.repartition import repartition_plan
from gpureplay.schedulers.policy import (
    GpuSharing,
    KueueAdmission,
    MigPlacement,
    MigReconfigure,
    MigStrategy,
    NodeTies,
    Policy,
    QueueModel,
    QueueOrder,
    Requeue,
    TasProfile,
    TopologyAware,
    TopologyManager,
)
from gpureplay.traces.schema import PREEMPTION_POLICIES, UNKNOWN_CAPACITY, lucid_overhead
from gpureplay.workload.topology_requests import (
    REQUEST_COLUMNS,
    TOPOLOGY_LEVELS,
    TOPOLOGY_MODES,
    check_trace_requests,
    with_request_columns,
)
from gpureplay.workload.typical_pods import TypicalPods
from gpureplay.workload.utilization import idle_rows

#: ``P_QUEUES`` per queue model: how the engine keys its job classes (1: per tenant, as every queue model
#: admits per queue; 2: KAI, per tenant and preemptibility, as its quota counts the two apart).
QUEUE_CLASS_KEYS: dict[QueueModel, int] = {
    QueueModel.none: 0,
    QueueModel.kueue: 1,
    QueueModel.volcano: 1,
    QueueModel.kai: 2,
}


@dataclass(frozen=True)
class Compiled:
    """Engine-ready static inputs for one (jobs, nodes, policy) triple.

    Attributes
    ----------
    params, jobs, classes
        The static bundles.
    cluster
        The empty cluster.
    models
        GPU model names by code.
    tenants
        Queue names by tenant index.
    hist_width
        1 + most GPUs on a node (fit-tree width).
    devices
        ``nvidia.com/gpu`` devices of the cluster: GPUs, replicas or MIG instances.
    mig
        The static MIG figures (zero without MIG).
    numa
        The nodes' NUMA layout, under a ``topology_manager`` policy.
    """

    params: Params
    jobs: Jobs
    classes: Classes
    cluster: Cluster
    models: tuple[str, ...]
    tenants: tuple[str, ...]
    hist_width: int
    devices: int = 0
    mig: MigFigures = dataclasses.field(default_factory=MigFigures)
    numa: Numa | None = None


def policy_params(
    policy: Policy,
    *,
    seed: int,
    sample_interval: float,
    horizon: float | None,
    window: tuple[float, float],
    max_samples: int,
    debug: bool,
) -> Params:
    """``P_*`` codes and ``PF_*`` settings of a policy and the run settings.

    Raises
    ------
    InputError
        On a value out of range, naming its config key.
    """
    problems = policy_problems(policy)
    if problems:
        raise InputError(problems)
    axes = policy_axes(policy)
    codes = np.zeros(L.POLICY_FIELDS, dtype=np.int64)
    codes[L.P_ORDER] = axes.order.value
    codes[L.P_GANG] = axes.gang.value
    codes[L.P_NODE] = scorer_code(policy.node_placement)
    codes[L.P_GPU] = scorer_code(policy.gpu_placement)
    codes[L.P_BACKFILL] = axes.backfill.value
    codes[L.P_DEPTH] = policy.backfill_depth
    codes[L.P_PREEMPT] = axes.preemption.value
    codes[L.P_REQUEUE] = Requeue[str(getattr(policy.requeue, "name", policy.requeue))].value
    codes[L.P_MIN_CANDIDATES] = policy.min_candidate_nodes
    codes[L.P_CANDIDATE_PCT] = policy.candidate_nodes_percent
    codes[L.P_SELECTOR] = L.SELECT_GLOBAL
    codes[L.P_QUEUES] = QUEUE_CLASS_KEYS[QueueModel[str(getattr(policy.queues, "name", policy.queues))]]
    codes[L.P_DEBUG] = 1 if debug else 0
    codes[L.P_MAX_SAMPLES] = max_samples
    codes[L.P_SEED] = seed % (1 << 63)
    codes[L.P_TIES] = NodeTies[str(getattr(policy.node_ties, "name", policy.node_ties))].value
    codes[L.P_SPLIT] = policy.device_split_count
    codes[L.P_SHARE_MEM] = axes.share_mem.value
    codes[L.P_SHARING] = {
        MigStrategy.single: L.SHARING_MIG,
        MigStrategy.dynamic: L.SHARING_MIG_DYNAMIC,
        MigStrategy.mixed: L.SHARING_MIG_MIXED,
    }.get(axes.mig, axes.sharing.value)
    codes[L.P_MIG_DEMAND] = axes.mig_demand.value
    codes[L.P_MIG_PLACEMENT] = {
        MigPlacement.hami: L.MIG_HAMI,
        MigPlacement.lowest_start: L.MIG_LOWEST_START,
        MigPlacement.fgd: L.MIG_FGD_PLACEMENT,
    }[axes.mig_placement]
    codes[L.P_REPLICA_ALLOC] = axes.allocation.value
    codes[L.P_REPLICAS] = policy.replicas
    fail_multi = policy.fail_requests_greater_than_one
    codes[L.P_FAIL_MULTI] = int(axes.sharing is GpuSharing.mps if fail_multi is None else bool(fail_multi))
    codes[L.P_DEMAND] = axes.demand.value
    flt = np.zeros(L.PARAM_FLOAT_FIELDS)
    flt[L.PF_SESSION] = float(policy.session_interval)
    flt[L.PF_SAMPLE] = float(sample_interval)
    flt[L.PF_HORIZON] = math.inf if horizon is None else float(horizon)
    flt[L.PF_GRACE] = float(policy.graceful_termination)
    flt[L.PF_WINDOW0] = float(window[0])
    flt[L.PF_WINDOW1] = float(window[1])
    flt[L.PF_SWITCH] = float(policy.switch_overhead)
    # The MPS control daemon's set_default_active_thread_percentage: 100 / replicas, integer division.
    flt[L.PF_MPS_CAP] = (100 // policy.replicas) / 100.0 if axes.sharing is GpuSharing.mps else 1.0
    flt[L.PF_MIG_CREATE] = float(policy.mig_create_s)
    codes[L.P_MIG_RECONFIG] = int(axes.reconfigure is MigReconfigure.idle)
    downtime = policy.mig_reconfigure_s
    flt[L.PF_MIG_RECONFIG] = DEFAULT_RECONFIGURE_S if downtime is None else float(downtime)
    flt[L.PF_SPREAD_NVLINK] = float(policy.spread_rate_nvlink)
    flt[L.PF_SPREAD_RACK] = float(policy.spread_rate_rack)
    flt[L.PF_SPREAD_SPINE] = float(policy.spread_rate_spine)
    codes[L.P_TAS] = {
        TopologyAware.none: L.TAS_NONE,
        TopologyAware.kueue: L.TAS_KUEUE,
        TopologyAware.kai: L.TAS_KAI,
        TopologyAware.volcano: L.TAS_VOLCANO,
    }[axes.topology]
    codes[L.P_TOPO_MGR] = {
        TopologyManager.none: L.TOPO_MGR_NONE,
        TopologyManager.best_effort: L.TOPO_MGR_BEST_EFFORT,
        TopologyManager.restricted: L.TOPO_MGR_RESTRICTED,
        TopologyManager.single_numa_node: L.TOPO_MGR_SINGLE_NUMA,
    }[axes.manager]
    codes[L.P_CPU_MGR] = int(axes.cpu_static)
    codes[L.P_NUMA_AWARE] = int(bool(policy.numa_aware_scheduler))
    codes[L.P_BACKOFF_LIMIT] = policy.backoff_limit
    # Kueue's admission by quota and waitForPodsReady (checked by the queue model's keys).
    admission = str(getattr(policy.kueue_admission, "name", policy.kueue_admission))
    codes[L.P_QUOTA_ONLY] = int(admission == KueueAdmission.quota.name)
    timeout = policy.pods_ready_timeout
    flt[L.PF_READY_TIMEOUT] = math.inf if timeout is None else float(timeout)
    codes[L.P_BLOCK_ADMISSION] = int(bool(policy.pods_ready_block_admission))
    limit = policy.pods_ready_backoff_limit
    codes[L.P_READY_LIMIT] = -1 if limit is None else int(limit)
    flt[L.PF_READY_BASE] = float(policy.pods_ready_backoff_base)
    flt[L.PF_READY_MAX] = float(policy.pods_ready_backoff_max)
    codes[L.P_TAS_PROFILE] = {
        TasProfile.mixed: L.PROFILE_MIXED,
        TasProfile.best_fit: L.PROFILE_BEST_FIT,
        TasProfile.least_free_capacity: L.PROFILE_LEAST_FREE,
        TasProfile.most_free_capacity: L.PROFILE_MOST_FREE,
    }[axes.profile]
    return Params(codes, flt)


#: Device-plugin modes that advertise each GPU as ``replicas`` devices.
REPLICA_MODES: tuple[int, ...] = (L.SHARING_TIME_SLICING, L.SHARING_MPS)


#: Seconds a re-partitioned MIG GPU serves no pod when ``mig_reconfigure_s`` is not set: within the 30-90 s
#: docs/systems.md, "NVIDIA MIG and mig-parted" gives for mig-manager (a secondary source's estimate).
DEFAULT_RECONFIGURE_S = 60.0


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


def compile_nodes(nodes: pl.DataFrame) -> tuple[Int64Array, tuple[str, ...], int]:
    """Node table -> (``node_int``, model names by code, histogram width).

    Raises
    ------
    InputError
        When the cluster has more than 64 GPU models (one mask bit each).
    """
    models = tuple(sorted(nodes["gpu_model"].drop_nulls().unique().to_list()))
    if len(models) > L.MAX_MODELS:
        raise InputError.single(
            f"at most {L.MAX_MODELS} distinct GPU models are supported, found {len(models)}", "nodes", None,
            "gpu_model",
        )  # fmt: skip
    codes = {name: i for i, name in enumerate(models)}
    big = pl.lit(L.BIG, pl.Int64)
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
    node_int = np.empty((L.NODE_INT_FIELDS, df.height), dtype=np.int64)
    node_int[L.N_GPUS] = df["num_gpus"].to_numpy()
    node_int[L.N_GPU_MEM] = df["gpu_mem_mib"].to_numpy()
    node_int[L.N_CPU] = df["cpu_milli"].to_numpy()
    node_int[L.N_MEM] = df["mem_mib"].to_numpy()
    node_int[L.N_MODEL] = df["model"].to_numpy()
    node_int[L.N_GPU0] = _exclusive_cumsum(node_int[L.N_GPUS])
    node_int[L.N_SLOTS] = L.BIG
    node_int[L.N_SHARE_MEM] = L.SHARE_MEM_NONE
    node_int[L.N_REPLICAS] = 1
    node_int[L.N_REPLICA_ALLOC] = L.REPLICA_DISTRIBUTED
    node_int[L.N_MIG_COMPUTE] = 0
    node_int[L.N_MIG_SLICES] = 0
    node_int[L.N_MIG_MASK] = 0
    # Topology levels as dense ids (what spreading costs counts distinct domains with a mark per id).
    for row, column in ((L.N_NVLINK, "nvlink_domain"), (L.N_RACK, "rack"), (L.N_SPINE, "spine")):
        values = nodes[column].to_numpy() if column in nodes.columns else np.zeros(df.height, dtype=np.int64)
        node_int[row] = np.unique(values, return_inverse=True)[1] if df.height else values
    hist_width = int(node_int[L.N_GPUS].max(initial=0)) + 1
    return node_int, models, hist_width


#: Engine codes of the topology request modes and levels (the jobs' ``topology_mode`` / ``topology_level``),
#: in the order the workload names them.
REQUEST_MODE_CODES: dict[str, int] = dict(
    zip(TOPOLOGY_MODES, (L.TM_REQUIRED, L.TM_PREFERRED, L.TM_UNCONSTRAINED), strict=True)
)
REQUEST_LEVEL_CODES: dict[str, int] = dict(
    zip(TOPOLOGY_LEVELS, (L.LEVEL_SPINE, L.LEVEL_RACK, L.LEVEL_NVLINK, L.LEVEL_NODE), strict=True)
)


def _topology_columns(jobs: pl.DataFrame, system: int) -> list[pl.Expr]:
    """``tas_mode`` / ``tas_level`` codes of each job's topology request (``TM_NONE`` when off or none), and
    its slices' ``tas_slice_level`` / ``tas_slice_size`` (``LEVEL_NODE`` and 1: none).

    Raises
    ------
    InputError
        On a mode or level that is not known, or (Volcano) a request its hard mode cannot express, or
        (Volcano, KAI) slices, which are Kueue's, naming the column.
    """
    none = [
        pl.lit(L.LEVEL_NODE, pl.Int64).alias("tas_slice_level"),
        pl.lit(1, pl.Int64).alias("tas_slice_size"),
    ]
    if system == L.TAS_NONE or not any(c in jobs.columns for c in REQUEST_COLUMNS):
        return [
            pl.lit(L.TM_NONE, pl.Int64).alias("tas_mode"),
            pl.lit(L.LEVEL_NODE, pl.Int64).alias("tas_level"),
            *none,
        ]
    check_trace_requests(jobs, "jobs")
    jobs = with_request_columns(jobs)
    if system == L.TAS_VOLCANO:
        _volcano_requests(jobs)
    if system != L.TAS_KUEUE:
        _refuse_slices(jobs, "Volcano" if system == L.TAS_VOLCANO else "KAI")
    mode = pl.col("topology_mode").replace_strict(
        REQUEST_MODE_CODES, default=L.TM_NONE, return_dtype=pl.Int64
    )
    level = pl.col("topology_level").replace_strict(
        REQUEST_LEVEL_CODES, default=L.LEVEL_NODE, return_dtype=pl.Int64
    )
    unconstrained = mode.is_in([L.TM_NONE, L.TM_UNCONSTRAINED])
    # Unconstrained requests and jobs without one are searched at the node level whatever they name
    # (the engine starts a slice-only request at the top).
    columns = [
        mode.alias("tas_mode"),
        pl.when(unconstrained).then(L.LEVEL_NODE).otherwise(level).alias("tas_level"),
    ]
    return [
        *columns,
        pl.col("topology_slice_level")
        .replace_strict(REQUEST_LEVEL_CODES, default=L.LEVEL_NODE, return_dtype=pl.Int64)
        .alias("tas_slice_level"),
        pl.col("topology_slice_size").fill_null(1).cast(pl.Int64).alias("tas_slice_size"),
    ]


def _refuse_slices(jobs: pl.DataFrame, system: str) -> None:
    """Slices (``podset-slice-required-topology``) are Kueue's: refused under another system."""
    numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
    bad = numbered.filter(pl.col("topology_slice_level").is_not_null())
    if bad.height:
        raise InputError.single(
            f"PodSet slices are Kueue's (podset-slice-required-topology): {system}'s topology-aware "
            f"scheduling has none ({bad.height:,} jobs ask them; from the trace's columns or "
            "workload.topology_requests)",
            "jobs",
            row=int(bad["source_row"][0]),
            column="topology_slice_level",
        )


def _volcano_requests(jobs: pl.DataFrame) -> None:
    """Requests Volcano can express: hard mode (``required``) at a level with HyperNodes (not the node);
    soft mode (``preferred``) at any level, as Volcano overwrites a soft spec's tier."""
    numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
    bad = numbered.filter((pl.col("topology_mode") == "required") & (pl.col("topology_level") == "node"))
    if bad.height:
        raise InputError.single(
            "'node' under topology_aware: volcano: Volcano's HyperNode tiers start above the node "
            f"(nvlink_domain, rack, spine) ({bad.height:,} jobs; requests come from the trace's columns or "
            "workload.topology_requests)",
            "jobs",
            row=int(bad["source_row"][0]),
            column="topology_level",
        )


def _reject_topology(reject: Int64Array, job_class: Int64Array, cluster: Cluster, classes: Classes) -> None:
    """Reject (in place) the jobs the empty cluster cannot hold as they ask: a required level none of
    whose domains holds them, or slices that even all domains together cannot hold (Kueue, whose
    validation deactivates a workload whose slice size does not divide its pods: ``R_SLICE_SIZE``)."""
    tree = topology_tree(cluster.node_int)
    cls = classes.ints
    size = cls[L.C_TAS_SLICE_SIZE]
    sliced = (size > 1) | (cls[L.C_TAS_SLICE_LEVEL] < L.LEVEL_NODE)
    bad_size = cls[L.C_PODS] % size != 0
    too_large = np.zeros(cls.shape[1], dtype=bool)
    for c in np.flatnonzero(((cls[L.C_TAS_MODE] == L.TM_REQUIRED) | sliced) & ~bad_size):
        required = cls[L.C_TAS_MODE, c] == L.TM_REQUIRED
        level = int(cls[L.C_TAS_LEVEL, c]) if required else 0
        held = level_capacity(tree, cluster, classes, int(c), level, not required)
        too_large[c] = held < cls[L.C_PODS, c] // size[c]
    reject[(reject == L.R_NONE) & bad_size[job_class]] = L.R_SLICE_SIZE
    reject[(reject == L.R_NONE) & too_large[job_class]] = L.R_TOPOLOGY_TOO_LARGE


def _numa_layout(jobs: pl.DataFrame, nodes: pl.DataFrame, node_int: Int64Array, num_pods: int) -> Numa:
    """The NUMA layout the kubelets align on; refuses what the Topology Manager here does not model."""
    numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
    shared = numbered.filter(pl.col("gpu_milli") % 1000 != 0)
    if shared.height:
        raise InputError.single(
            f"a fraction of a GPU under topology_manager: the device manager's NUMA hints are for whole "
            f"devices, fractional sharing is not modelled with it ({shared.height:,} jobs)",
            "jobs",
            row=int(shared["source_row"][0]),
            column="gpu_milli",
        )
    numa_of_gpu = nodes["numa_of_gpu"].to_list()
    widest = max((max(v) + 1 for v in numa_of_gpu if v), default=1)
    if widest > L.MAX_NUMA:
        raise InputError.single(
            f"a node has {widest} NUMA nodes: the kubelet's Topology Manager refuses more than "
            f"{L.MAX_NUMA} (max-allowable-numa-nodes)",
            "config",
            column="cluster.numa_per_node",
        )
    return numa_layout(numa_of_gpu, node_int[L.N_GPUS], node_int[L.N_CPU], num_pods)


def _reject_numa(
    reject: Int64Array,
    job_class: Int64Array,
    node_int: Int64Array,
    classes: Classes,
    numa: Numa,
    cpu_static: bool,
) -> None:
    """Reject (in place) the jobs whose pods, one NUMA node each, the empty cluster cannot hold."""
    cls = classes.ints
    too_large = np.zeros(cls.shape[1], dtype=bool)
    for c in range(cls.shape[1]):
        k = int(cls[L.C_K, c]) if cls[L.C_KIND, c] == L.KIND_WHOLE else 0
        cpu = int(cls[L.C_CPU, c])
        x = cpu // 1000 if cpu_static and cpu > 0 and cpu % 1000 == 0 else 0
        if k == 0 and x == 0:
            continue
        allowed = np.ones(node_int.shape[1], dtype=bool)
        if k > 0:
            bits = classes.mask[c] >> np.maximum(node_int[L.N_MODEL], 0).astype(np.uint64)
            allowed = (node_int[L.N_MODEL] >= 0) & ((bits & np.uint64(1)) == np.uint64(1))
        room = np.full(node_int.shape[1], BIG_ROOM, dtype=np.int64)
        if k > 0:
            room = np.minimum(room, node_int[L.N_GPUS] // k)
            room = np.where(node_int[L.N_GPU_MEM] >= cls[L.C_GMEM, c], room, 0)
        for row, ask in ((L.N_CPU, cpu), (L.N_MEM, int(cls[L.C_MEM, c]))):
            if ask > 0:
                room = np.minimum(room, node_int[row] // ask)
        per_numa = np.full(numa.numa_gpus.shape, BIG_ROOM, dtype=np.int64)
        if k > 0:
            per_numa = np.minimum(per_numa, numa.numa_gpus // k)
        if x > 0:
            per_numa = np.minimum(per_numa, numa.numa_cpus // x)
        width = np.arange(L.MAX_NUMA)[None, :] < numa.node_numas[:, None]
        room = np.minimum(room, np.where(width, per_numa, 0).sum(axis=1))
        too_large[c] = int(np.where(allowed, room, 0).sum()) < cls[L.C_PODS, c]
    reject[(reject == L.R_NONE) & too_large[job_class]] = L.R_NUMA_TOO_LARGE


#: Room that never limits (pods a node could take of a resource the class does not ask).
BIG_ROOM = 1 << 40


def replicate_devices(node_int: Int64Array, replicas: int, allocation: int, *, mps: bool) -> int:
    """Advertise every GPU of ``node_int`` as ``replicas`` devices, in place; the new histogram width.

    Notes
    -----
    NVIDIA k8s-device-plugin's time-slicing and MPS sharing: a node of G GPUs
    reports G x replicas ``nvidia.com/gpu`` and kube-scheduler sees nothing
    else. Device ``p * replicas + i`` is replica ``i`` of GPU ``p``. Under MPS
    each client's pinned device memory is the GPU's memory / replicas
    (docs/systems.md, "NVIDIA k8s-device-plugin").
    """
    node_int[L.N_GPUS] *= replicas
    node_int[L.N_GPU0] = _exclusive_cumsum(node_int[L.N_GPUS])
    node_int[L.N_REPLICAS] = replicas
    node_int[L.N_REPLICA_ALLOC] = allocation
    if mps:
        node_int[L.N_GPU_MEM] //= replicas
    return int(node_int[L.N_GPUS].max(initial=0)) + 1


def _node_types(node_int: Int64Array, num_models: int, hist_width: int) -> tuple[Cluster, Int64Array]:
    """An empty cluster with one node per distinct node configuration, and how many nodes each stands for."""
    fields = [
        L.N_MODEL,
        L.N_GPUS,
        L.N_GPU_MEM,
        L.N_CPU,
        L.N_MEM,
        L.N_SLOTS,
        L.N_SHARE_MEM,
        L.N_REPLICAS,
        L.N_REPLICA_ALLOC,
        L.N_MIG_MASK,
    ]
    config = node_int[fields].T
    types, counts = (
        np.unique(config, axis=0, return_counts=True) if config.shape[0] else (config, np.zeros(0, np.int64))
    )
    type_int = np.zeros((L.NODE_INT_FIELDS, types.shape[0]), dtype=np.int64)
    for i, f in enumerate(fields):
        type_int[f] = types[:, i]
    type_int[L.N_GPU0] = _exclusive_cumsum(type_int[L.N_GPUS])
    return empty_cluster(type_int, num_models, hist_width), np.ascontiguousarray(counts, dtype=np.int64)


#: Evictions per job beyond which a replay is taken for a preemption livelock (the reference's bound).
LIVELOCK_EVICTIONS_PER_JOB = 100


def compile_replay(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    params: Params,
    tasks: TypicalPods | None = None,
    mig_layouts: Sequence[str] | None = None,
    tenants: Sequence[str] | None = None,
    reserving: bool = False,
) -> Compiled:
    """Turn validated canonical tables and the policy's codes into the engine's static bundles.

    Parameters
    ----------
    jobs, nodes
        Canonical tables (:func:`gpureplay.traces.schema.validate_jobs` /
        ``validate_nodes`` output). Optional job columns the workload adds:
        ``checkpoint_interval`` (s of progress between checkpoints; 0: taken
        at eviction, nothing lost; inf: never), ``restart_overhead`` (s) and
        ``preemption_policy`` (``PreemptLowerPriority`` or ``Never``); under
        ``preemption: reclaim_idle`` the usage and PriorityClass annotation
        columns of :mod:`gpureplay.workload.utilization`.
    nodes
        Canonical nodes.
    params
        From :func:`policy_params`.
    tasks
        FGD's task classes (the workload's typical pods); required by the
        ``fgd`` node scorer, ignored otherwise.
    mig_layouts
        ``scheduler.mig_reconfigure_layouts`` (read under ``mig_reconfigure:
        idle`` only; :func:`gpureplay.replay.repartition.repartition_plan`).
    tenants
        The queues by tenant index (a queue model's ClusterQueues, every job's ``queue`` among them);
        default: the jobs' queues in name order.
    reserving
        KAI's reclaim or preempt action is on: its preemptors' pipelined pods keep their room as
        nominations (room for every pod of the trace).

    Notes
    -----
    Queue keys follow the spec: fifo ``(0, submit_time)``, sjf ``(duration,
    submit_time)``, priority ``(-priority, submit_time)`` (kube-scheduler
    PrioritySort), then ``job_id``; pod-by-pod mode always uses the priority
    key. Classes group pending jobs that fit or fail together: the pod shape
    (and, in gang mode, ``num_pods``), plus priority and preemption rights
    when preemption is on.
    """
    codes = params.codes
    mig = mig_nodes(nodes) if codes[L.P_SHARING] == L.SHARING_MIG else None
    mixed = codes[L.P_SHARING] == L.SHARING_MIG_MIXED
    sliced = codes[L.P_SHARING] == L.SHARING_MIG_DYNAMIC or mixed
    repartition = codes[L.P_MIG_RECONFIG] != 0
    dyn = dynamic_mig_nodes(nodes, mixed=mixed, repartition=repartition) if sliced else None
    plan = repartition_plan(dyn, mig_layouts) if dyn is not None and repartition else None
    if plan is not None:
        dyn = plan.dyn
    if mig is None and dyn is None:
        refuse_mig(jobs, nodes)
    table = mig.nodes if mig is not None else dyn.nodes if dyn is not None else nodes
    node_int, models, hist_width = compile_nodes(table)
    if dyn is not None:
        node_int[L.N_MIG_MASK] = dyn.dynamic
        node_int[L.N_MIG_SLICES] = [
            dyn.geometry[str(p)].compute_slices if flag else 0
            for p, flag in zip(table["gpu_model"], dyn.dynamic, strict=True)
        ]
    physical_gpus = node_int[L.N_GPUS].copy()
    # The device plugin's sharing settings are the policy's, the same on every node.
    node_int[L.N_SLOTS] = codes[L.P_SPLIT] if codes[L.P_SPLIT] > 0 else L.BIG
    node_int[L.N_SHARE_MEM] = codes[L.P_SHARE_MEM]
    replicas = int(codes[L.P_REPLICAS]) if codes[L.P_SHARING] in REPLICA_MODES else 1
    if replicas > 1:
        hist_width = replicate_devices(
            node_int, replicas, int(codes[L.P_REPLICA_ALLOC]), mps=codes[L.P_SHARING] == L.SHARING_MPS
        )
    if mig is not None:
        hist_width = split_mig_devices(node_int, mig.devices)
    # Replicas and MIG instances are devices: a GPU pod asks whole ones, and the rate code runs.
    devices = replicas > 1 or mig is not None
    # Every unplaced pod of a preemptor may be nominated to a node while its victims terminate (KAI's
    # evicting actions too: ``reserving``).
    nominating = codes[L.P_PREEMPT] != L.PREEMPT_NONE or reserving
    nominees = int(jobs["num_pods"].sum()) if nominating else 0
    cluster = empty_cluster(node_int, len(models), hist_width, nominees)
    if plan is not None:
        # Each GPU starts with its node's config (MIG nodes have no replicas: GPUs are devices).
        cluster.gpu_free[L.G_LAYOUT] = np.repeat(plan.node_words, physical_gpus)
    bits = {name: 1 << i for i, name in enumerate(models)}
    cluster_bits = sum(bits.values())
    trace_m = pl.col("gpu_milli").cast(pl.Int64)
    # Shared by replicas, every GPU pod asks whole devices: a fractional one takes one replica.
    m = pl.when(trace_m.is_between(1, L.WHOLE - 1)).then(L.WHOLE).otherwise(trace_m) if devices else trace_m
    if dyn is not None:
        dyn_masks, job_mig = dynamic_shapes(jobs, dyn, models, hami=codes[L.P_MIG_PLACEMENT] == L.MIG_HAMI)
        if codes[L.P_MIG_PLACEMENT] == L.MIG_FGD_PLACEMENT:
            job_mig[job_mig >= 0] |= L.MIG_FGD
    else:
        dyn_masks, job_mig = None, np.full((jobs.height, max(len(models), 1)), L.MIG_NONE, dtype=np.int64)
    # Jobs that get the same instance shapes share a key (a class must get one shape per model).
    _, mig_key = np.unique(job_mig, axis=0, return_inverse=True) if jobs.height else (None, np.zeros(0))
    allowed = (
        pl.lit(pl.Series(selector_masks(jobs, mig, models, int(codes[L.P_MIG_DEMAND]))), pl.UInt64)
        if mig is not None
        else pl.lit(pl.Series(dyn_masks), pl.UInt64)
        if dyn_masks is not None
        else pl.when(pl.col("gpu_models").is_null())
        .then(pl.lit(L.ALL_MODELS, pl.UInt64))
        .otherwise(
            pl.col("gpu_models")
            .list.unique()
            .list.eval(pl.element().replace_strict(bits, default=0, return_dtype=pl.UInt64))
            .list.sum()
            .cast(pl.UInt64)
        )
    )
    gpus = pl.col("num_pods").cast(pl.Float64) * trace_m.cast(pl.Float64) / 1000.0
    ckpt = (
        pl.col("checkpoint_interval").cast(pl.Float64)
        if "checkpoint_interval" in jobs.columns
        else pl.lit(0.0, pl.Float64)
    )
    overhead = (
        pl.col("restart_overhead").cast(pl.Float64)
        if "restart_overhead" in jobs.columns
        else lucid_overhead(gpus)
    )
    if "preemption_policy" in jobs.columns:
        bad = jobs.filter(~pl.col("preemption_policy").is_in(PREEMPTION_POLICIES))
        if bad.height:
            raise InputError.single(
                f"unknown preemptionPolicy {bad['preemption_policy'][0]!r}; "
                f"known: {', '.join(PREEMPTION_POLICIES)}",
                "jobs",
                column="preemption_policy",
            )
        can_preempt = (pl.col("preemption_policy") != "Never").cast(pl.Int64)
    else:
        can_preempt = pl.lit(1, pl.Int64)
    if tenants is None:
        tenants = tuple(sorted(jobs["queue"].unique().to_list())) if jobs.height else ("default",)
    else:
        tenants = tuple(tenants)
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
        .then(pl.lit(L.ALL_MODELS, pl.UInt64))
        .otherwise(allowed & pl.lit(cluster_bits, pl.UInt64))
        .alias("mask"),
        pl.when(m >= L.WHOLE).then(m // L.WHOLE).when(m > 0).then(1).otherwise(0).cast(pl.Int64).alias("k"),
        pl.when(m >= L.WHOLE)
        .then(L.KIND_WHOLE)
        .when(m > 0)
        .then(L.KIND_SHARE)
        .otherwise(L.KIND_NONE)
        .cast(pl.Int64)
        .alias("kind"),
        pl.col("queue")
        .replace_strict({q: i for i, q in enumerate(tenants)}, return_dtype=pl.Int64)
        .alias("tenant"),
        can_preempt.alias("can_preempt"),
        pl.col("preemptible").cast(pl.Int64).alias("preemptible"),
        ckpt.alias("checkpoint"),
        overhead.alias("overhead"),
        (
            pl.min_horizontal(trace_m.cast(pl.Float64) / L.WHOLE, pl.lit(1.0))
            if codes[L.P_DEMAND] == L.DEMAND_TRACE
            else pl.lit(1.0, pl.Float64)
        ).alias("demand"),
        pl.lit(pl.Series(np.asarray(mig_key, dtype=np.int64).reshape(-1)), pl.Int64).alias("mig_key"),
        *_topology_columns(jobs, int(codes[L.P_TAS])),
    )
    bad_ckpt = df.filter(
        ~(pl.col("checkpoint") >= 0) | ~(pl.col("overhead") >= 0) | pl.col("overhead").is_infinite()
    )
    if bad_ckpt.height:
        raise InputError.single(
            "checkpoint_interval must be >= 0 (inf: never) and restart_overhead a finite number >= 0",
            "jobs",
            column="checkpoint_interval",
        )
    num_jobs = df.height
    pod_mode = codes[L.P_GANG] == L.POD_BY_POD
    preempting = codes[L.P_PREEMPT] != L.PREEMPT_NONE
    shape = ["gpu_milli", "gpu_mem", "cpu_milli", "mem_mib", "mask", "mig_key"]
    if not pod_mode:
        shape.append("num_pods")
    if preempting:
        shape += ["priority", "can_preempt"]
    if codes[L.P_TAS] != L.TAS_NONE:
        shape += ["tas_mode", "tas_level", "tas_slice_level", "tas_slice_size"]
    if codes[L.P_QUEUES]:
        # A queue model admits per tenant: a class is one tenant's jobs of one shape (same quota answer) and
        # preemption policy (under Kueue preemption, preemptionPolicy Never does not preempt).
        shape.append("tenant")
        if not preempting:
            shape.append("can_preempt")
        if codes[L.P_QUEUES] == 2:
            # KAI's capacity policy holds non-preemptible jobs to the quota: another answer.
            shape.append("preemptible")
    (qclass, num_classes), (rclass, num_rclasses) = _dense_classes(
        df, shape, ["gpu_milli", "gpu_mem", "cpu_milli", "mem_mib", "mask", "mig_key", "num_pods"]
    )

    ints = np.zeros((L.JOB_INT_FIELDS, num_jobs), dtype=np.int64)
    base = _rows(
        df,
        [
            "job_id",
            "num_pods",
            "gpu_milli",
            "gpu_mem",
            "cpu_milli",
            "mem_mib",
            "priority",
            "k",
            "kind",
            "tenant",
        ],
    )
    ints[[L.J_ID, L.J_PODS, L.J_MILLI, L.J_GMEM, L.J_CPU, L.J_MEM, L.J_PRIO, L.J_K, L.J_KIND, L.J_TENANT]] = (
        base
    )
    ints[L.J_CAN_PREEMPT] = df["can_preempt"].to_numpy()
    ints[L.J_PRIO_RANK] = df.select(pl.col("priority").rank("dense") - 1).to_series().to_numpy()
    ints[L.J_PREEMPTIBLE] = df["preemptible"].to_numpy()
    ints[L.J_CLASS] = qclass
    ints[L.J_RCLASS] = rclass
    flts = np.zeros((L.JOB_FLOAT_FIELDS, num_jobs), dtype=np.float64)
    flts[L.JF_SUBMIT] = df["submit_time"].to_numpy()
    flts[L.JF_WORK] = df["duration"].to_numpy()
    flts[L.JF_CKPT] = df["checkpoint"].to_numpy()
    flts[L.JF_OVERHEAD] = df["overhead"].to_numpy()
    order = QueueOrder.priority.value if pod_mode else int(codes[L.P_ORDER])
    if order == QueueOrder.fifo.value:
        flts[L.JF_KEY1] = 0.0
    elif order == QueueOrder.sjf.value:
        flts[L.JF_KEY1] = flts[L.JF_WORK]
    else:
        flts[L.JF_KEY1] = -ints[L.J_PRIO].astype(np.float64)
    flts[L.JF_KEY2] = flts[L.JF_SUBMIT]
    mask = np.ascontiguousarray(df["mask"].to_numpy(), dtype=np.uint64).copy()

    keyed = pl.DataFrame(
        {
            "cls": qclass,
            "k1": flts[L.JF_KEY1],
            "k2": flts[L.JF_KEY2],
            "id": ints[L.J_ID],
            "submit": flts[L.JF_SUBMIT],
        }
    )
    sorts = (
        keyed.lazy()
        .select(
            pl.arg_sort_by(["cls", "k1", "k2", "id"]).alias("layout"),
            pl.arg_sort_by(["submit", "id"]).alias("arrival"),
        )
        .collect()
    )
    layout = np.ascontiguousarray(sorts["layout"].to_numpy(), dtype=np.int64)
    arrival = np.ascontiguousarray(sorts["arrival"].to_numpy(), dtype=np.int64)
    ints[L.J_POS, layout] = np.arange(num_jobs, dtype=np.int64)
    per_class = np.bincount(qclass, minlength=num_classes).astype(np.int64)
    ints[L.J_POD0] = _exclusive_cumsum(ints[L.J_PODS])
    ints[L.J_SLOT0] = _exclusive_cumsum(ints[L.J_PODS] * ints[L.J_K])

    cls = np.zeros((L.CLASS_INT_FIELDS, num_classes), dtype=np.int64)
    for row, field in (
        (L.C_MILLI, L.J_MILLI),
        (L.C_GMEM, L.J_GMEM),
        (L.C_CPU, L.J_CPU),
        (L.C_MEM, L.J_MEM),
        (L.C_K, L.J_K),
        (L.C_KIND, L.J_KIND),
        (L.C_PRIO, L.J_PRIO),
        (L.C_CAN_PREEMPT, L.J_CAN_PREEMPT),
    ):
        cls[row] = _per_class(qclass, num_classes, ints[field])
    cls[L.C_PODS] = 1 if pod_mode else _per_class(qclass, num_classes, ints[L.J_PODS])
    cls[L.C_TAS_MODE] = _per_class(qclass, num_classes, df["tas_mode"].to_numpy())
    cls[L.C_TAS_LEVEL] = _per_class(qclass, num_classes, df["tas_level"].to_numpy())
    cls[L.C_TAS_SLICE_LEVEL] = _per_class(qclass, num_classes, df["tas_slice_level"].to_numpy())
    cls[L.C_TAS_SLICE_SIZE] = _per_class(qclass, num_classes, df["tas_slice_size"].to_numpy())
    cls[L.C_START] = _exclusive_cumsum(per_class)
    cls[L.C_END] = cls[L.C_START] + per_class
    # Under the global order tenants do not rank jobs: every class is tenant 0 (jobs keep theirs); under a
    # queue model each class belongs to one tenant (its rank stays 0: the merge order is the queue order).
    cls[L.C_TENANT] = _per_class(qclass, num_classes, ints[L.J_TENANT]) if codes[L.P_QUEUES] else 0
    gpu_nodes = node_int[L.N_GPUS] > 0
    min_gpu_mem = int(node_int[L.N_GPU_MEM][gpu_nodes].min(initial=0)) if gpu_nodes.any() else 0
    cls[L.C_EXACT] = (
        (cls[L.C_KIND] == L.KIND_WHOLE)
        & (cls[L.C_CPU] == 0)
        & (cls[L.C_MEM] == 0)
        & (cls[L.C_GMEM] <= min_gpu_mem)
    )
    class_mask = _per_class(qclass, num_classes, mask).astype(np.uint64)
    class_mig = np.full((num_classes, job_mig.shape[1]), L.MIG_NONE, dtype=np.int64)
    class_mig[qclass] = job_mig
    if dyn is not None:
        pods = ints[L.J_PODS]
        mig_wanted, mig_weight = wanted_shapes(job_mig, ints[L.J_MILLI], pods, mask, models, dyn.geometry)
    else:
        mig_wanted = np.full((max(len(models), 1), 1), -1, dtype=np.int64)
        mig_weight = np.zeros_like(mig_wanted)

    shapes = np.zeros((L.RCLASS_INT_FIELDS, num_rclasses), dtype=np.int64)
    for row, field in (
        (L.RC_MILLI, L.J_MILLI),
        (L.RC_GMEM, L.J_GMEM),
        (L.RC_CPU, L.J_CPU),
        (L.RC_MEM, L.J_MEM),
        (L.RC_PODS, L.J_PODS),
        (L.RC_K, L.J_K),
    ):
        shapes[row] = _per_class(rclass, num_rclasses, ints[field])
    shape_mask = _per_class(rclass, num_rclasses, mask).astype(np.uint64)
    shape_mig = np.full((num_rclasses, job_mig.shape[1]), L.MIG_NONE, dtype=np.int64)
    shape_mig[rclass] = job_mig
    types, type_count = _node_types(node_int, len(models), hist_width)
    codes_by_shape = np.zeros(num_rclasses, dtype=np.int64)
    if plan is not None:
        # GPUs are re-partitioned to what pods need: a job is judged against the config that suits it best.
        shape_mig = plan.rejection_shapes(shape_mig, models)
    rejection_codes(types, shapes, shape_mask, shape_mig, type_count, codes_by_shape)
    reject = np.ascontiguousarray(codes_by_shape[ints[L.J_RCLASS]])
    classes = Classes(
        cls,
        np.ascontiguousarray(class_mask),
        layout,
        class_mig,
        mig_wanted,
        mig_weight,
        plan.layouts_array(models) if plan is not None else np.full((max(len(models), 1), 1), -1, np.int64),
        _tasks(params, tasks, models),
    )
    # A replay past this many evictions is a preemption livelock (gpureplay.replay.simulate stops it).
    codes[L.P_MAX_EVICTIONS] = LIVELOCK_EVICTIONS_PER_JOB * num_jobs
    if codes[L.P_FAIL_MULTI] and codes[L.P_SHARING] in REPLICA_MODES:
        # The device plugin's Allocate refuses a request of more than one shared device: the pod fails
        # kubelet admission (UnexpectedAdmissionError) and is not retried, so the job never runs.
        # A pod the scheduler can never place fails scheduling first and keeps that reason.
        reject[(reject == L.R_NONE) & (ints[L.J_K] > 1)] = L.R_SHARED_TOO_LARGE
    if codes[L.P_TAS] != L.TAS_NONE:
        _reject_topology(reject, ints[L.J_CLASS], cluster, classes)
    numa = None
    if codes[L.P_TOPO_MGR] != L.TOPO_MGR_NONE:
        numa = _numa_layout(jobs, nodes, node_int, int(ints[L.J_PODS].sum()))
        if codes[L.P_NUMA_AWARE]:
            _reject_numa(reject, ints[L.J_CLASS], node_int, classes, numa, bool(codes[L.P_CPU_MGR]))
    pod_job = np.repeat(np.arange(num_jobs, dtype=np.int64), ints[L.J_PODS])
    return Compiled(
        params=params,
        jobs=Jobs(
            ints,
            flts,
            mask,
            arrival,
            reject,
            np.ascontiguousarray(pod_job),
            # A copy: polars may hand out a read-only view, a type of its own to numba (one more variant).
            np.array(df["demand"].to_numpy(), dtype=np.float64, order="C"),
            idle_rows(jobs, codes[L.P_PREEMPT] == L.PREEMPT_IDLE),
        ),
        classes=classes,
        cluster=cluster,
        models=models,
        tenants=tenants,
        hist_width=hist_width,
        devices=int(node_int[L.N_GPUS].sum()),
        numa=numa,
        mig=MigFigures()
        if mig is None
        else mig_figures(
            mig,
            physical_gpus,
            node_int[L.N_MODEL],
            df.filter(pl.col("gpu_milli") > 0)["mask"].to_numpy(),
            df.filter(pl.col("gpu_milli") > 0)["gpu_mem"].to_numpy(),
        ),
    )


def task_bundle(tasks: TypicalPods | None, models: tuple[str, ...]) -> Tasks:
    """FGD's task classes as engine rows (none when not given), with an empty memo."""
    count = 0 if tasks is None else len(tasks)
    task_int = np.zeros((L.TASK_INT_FIELDS, count), dtype=np.int64)
    task_mask = np.zeros(count, dtype=np.uint64)
    task_pop = np.zeros(count)
    if tasks is not None:
        task_int[L.TK_CPU] = tasks.cpu_milli
        task_int[L.TK_GPUS] = tasks.num_gpu
        task_int[L.TK_MILLI] = tasks.gpu_milli
        task_mask[:] = tasks.model_mask(models)
        task_pop[:] = tasks.popularity
    return Tasks(task_int, task_mask, task_pop, np.zeros((0, 0, 2)))


def _tasks(params: Params, tasks: TypicalPods | None, models: tuple[str, ...]) -> Tasks:
    """``Classes.tasks``: the workload's task classes when a scorer is one of the FGD paper's, else none.

    Under dynamic MIG the ``fgd`` node scorer weighs slices (``Classes.mig_weight``), not task classes.

    Always a bundle (empty when unused), never ``None``: every kernel takes ``Classes``, so an
    optional bundle there would compile the whole engine once more for the FGD scorers (76 s cold,
    measured), while their own code is a small share of it.
    """
    dynamic = params.codes[L.P_SHARING] == L.SHARING_MIG_DYNAMIC
    if dynamic or not uses_tasks(int(params.codes[L.P_NODE]), int(params.codes[L.P_GPU])):
        return task_bundle(None, models)
    return task_bundle(tasks, models)


__all__ = [
    "LIVELOCK_EVICTIONS_PER_JOB",
    "PREEMPTION_POLICIES",
    "Compiled",
    "compile_nodes",
    "compile_replay",
    "lucid_overhead",
    "policy_params",
    "task_bundle",
]
