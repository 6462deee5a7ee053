"""How much memory a replay will take, estimated from its sizes before anything large is allocated.

A replay's memory grows with the cluster (per node: the engine's node rows, its
fit trees, the node table; per GPU or device: the GPU rows), the trace (per job:
the job rows, classes, heaps and timers, the tables polars holds; per pod: the
pod lists), the queues (some arrays of the queue models are queues x queues)
and the timeline (per sample: one row, plus one block per queue). The sizes are
known from the config and the trace before the engine's arrays, or even the
node table, exist: :func:`check_memory` refuses a run whose estimate is over the
budget (``memory_budget_gib``, default the memory available now), naming the
config key that sizes the largest part, instead of letting the kernel kill it
half-way (``cluster.nodes=100000000`` grew to 20.5 GB before it was killed,
leaving its run folder ``running``).

Every per-unit cost is counted from the engine's own layout
(:mod:`gpureplay.engine.state.layout`: the fields of each kind of row) and from how
:mod:`gpureplay.engine.state.bundles` and :mod:`gpureplay.replay.compile` size their
arrays; ``tests/test_memory.py`` checks the estimate against the bytes of the
arrays a replay actually allocates.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from gpureplay.engine.state import layout as L
from gpureplay.errors import InputError
from gpureplay.schedulers.policy import Policy

__all__ = [
    "ClusterSize",
    "MemoryEstimate",
    "RunSizes",
    "available_memory",
    "check_memory",
    "cluster_size",
    "estimate_memory",
    "mig_instances",
    "planned_cluster",
    "run_sizes",
]

#: Bytes of one engine array element (int64, float64 and uint64 alike).
WORD = 8

#: Most MIG instances one GPU holds (seven 1g slices on A100 and H100): each is a device.
MIG_DEVICES_PER_GPU = 7

#: Bytes per node of the canonical node table in polars (twelve columns of 4-8 bytes, a name, the
#: source row) and per GPU of it (the ``numa_of_gpu`` list: one byte and its share of the offsets).
NODE_TABLE_BYTES = 12 * WORD
NODE_TABLE_BYTES_PER_GPU = 1

#: Columns of the job tables polars holds at once: the trace as read (about 25), the workload's
#: columns, the engine's compile frame (about 25) and the results (``JOB_RESULT_SCHEMA``, 19).
JOB_TABLE_COLUMNS = 80

#: Columns of the timeline result and of the per-queue sample table (``QUEUE_SAMPLE_SCHEMA``).
TIMELINE_RESULT_COLUMNS = 20
QUEUE_RESULT_COLUMNS = 14


@dataclass(frozen=True)
class RunSizes:
    """What sizes a replay's memory.

    Attributes
    ----------
    nodes, gpus
        The cluster's nodes and physical GPUs.
    devices, node_devices
        ``nvidia.com/gpu`` devices (GPUs x replicas, or MIG instances) in all and on the largest node.
    jobs, pods, slots
        Jobs, pods (``num_pods`` summed) and the devices they ask in all.
    queues
        Queues (tenants) of the replay.
    samples
        Timeline samples kept (the run's span over ``sample_interval``, at most ``max_samples``).
    """

    nodes: int
    gpus: int
    devices: int
    node_devices: int
    jobs: int
    pods: int
    slots: int
    queues: int
    samples: int


@dataclass(frozen=True)
class MemoryEstimate:
    """The estimate, in bytes, by part: each part with the config keys that size it."""

    parts: tuple[tuple[str, str, int], ...]  # (what, config key, bytes)

    @property
    def total(self) -> int:
        """The whole estimate, bytes."""
        return sum(b for _, _, b in self.parts)

    def largest(self) -> tuple[str, str, int]:
        """The largest part."""
        return max(self.parts, key=lambda p: p[2])

    def describe(self) -> str:
        """``cluster of 10 nodes: 1.2 GiB; 80 GPU devices: 15 MiB; ...``: the parts that count, largest first.

        A part under a thousandth of the whole is left out.
        """
        shown = sorted((p for p in self.parts if p[2] > self.total / 1000), key=lambda p: -p[2])
        return "; ".join(f"{what}: {_gib(b)}" for what, _, b in shown)


def _gib(n: float) -> str:
    """Bytes in words: ``1.2 GiB``, ``15 MiB``, ``300 KiB``."""
    if n >= 2**30 / 10:
        return f"{n / 2**30:,.1f} GiB"
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n / 2**10:,.0f} KiB"


def _next_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _name(value: Any) -> str:
    return str(getattr(value, "name", value))


def estimate_memory(
    sizes: RunSizes,
    policy: Policy,
    node_keys: str = "cluster",
    *,
    job_keys: str = "workload.max_jobs",
    tables: bool = True,
) -> MemoryEstimate:
    """The memory a replay of these sizes under ``policy`` takes, by part.

    Parameters
    ----------
    sizes
        :func:`run_sizes`.
    policy
        The scheduler: its mechanisms (EASY backfill, preemption, queue models, topology, NUMA,
        sharing) allocate their own arrays.
    node_keys, job_keys
        The config keys that size the cluster (``cluster.nodes`` for a generated one) and the jobs
        (``trace.n_jobs`` for a synthetic trace), for the message.
    tables
        Count the tables polars holds (node table, job tables, result tables) as well as the engine's
        arrays; False: the engine's arrays alone.
    """
    table = 1 if tables else 0
    n, d, j, p = sizes.nodes, sizes.devices, sizes.jobs, sizes.pods
    width = sizes.node_devices + 1  # the fit trees' and pod-kind rows' width (compile's hist_width)
    preempting = _name(policy.preemption) != "none"
    easy = _name(policy.backfill) == "easy"
    queues = _name(policy.queues)
    # Per node: its engine row, free row and pod kinds; the scratch marks (node_mark, touched_nodes,
    # touch_mark, node_pods, domain_mark x 3, fit-tree leaf); the fit trees (2 x the next power of two
    # rows of `width`); the node table. EASY keeps a projected copy of the free rows and pod kinds.
    per_node = L.NODE_INT_FIELDS + L.NODE_FREE_FIELDS + width + 8
    if easy:
        per_node += L.NODE_FREE_FIELDS + width + 1
    if _name(policy.topology_aware) != "none":
        per_node += 10 * L.TAS_LEVELS  # the topology tree's per-level rows (bundles.topology_tree)
    if _name(policy.topology_manager) != "none":
        per_node += 3 * L.MAX_NUMA  # NUMA GPUs and CPUs per node (bundles.numa_layout)
    if queues in ("kai", "volcano"):
        per_node += 15  # the evicting actions' per-node scratch (bundles._kai_arrays, _volcano_arrays)
    node_bytes = WORD * (per_node * n + 2 * _next_pow2(n) * width) + table * NODE_TABLE_BYTES * n
    # Per device: its GPU row and ready time (EASY: a projected copy); per physical GPU, the table's list.
    per_device = L.GPU_FREE_FIELDS + 1 + (L.GPU_FREE_FIELDS if easy else 0)
    gpu_bytes = WORD * per_device * d + table * NODE_TABLE_BYTES_PER_GPU * sizes.gpus
    # Per job: its engine rows (static, dynamic, times), class rows (at most one class per job), heaps,
    # bitsets and timers, the attempt rows (2 per job to start with), and the polars tables.
    per_job = (
        L.JOB_INT_FIELDS + L.JOB_FLOAT_FIELDS + L.JOB_DYN_FIELDS + L.JOB_TIME_FIELDS
        + L.CLASS_INT_FIELDS + L.CLASS_DYN_FIELDS + L.RCLASS_INT_FIELDS + 8  # classes, heaps, over
        + 10  # timers: completions and timers, 5 each
        + 2 * (L.ATTEMPT_INT_FIELDS + L.ATTEMPT_FLOAT_FIELDS)
        + table * JOB_TABLE_COLUMNS
    )  # fmt: skip
    if preempting:
        per_job += 4  # victim marks and lists (PreemptScratch)
    if queues in ("kai", "volcano"):
        per_job += 16  # the evicting actions' per-job scratch
    elif queues == "kueue":
        per_job += 8  # admission lists and candidates (bundles.quota_state, room = jobs)
    job_bytes = WORD * per_job * j
    # Per pod: its node, start, list links and job; nominations under preemption; per device asked: its slot.
    per_pod = 5 + (L.NOM_FIELDS if preempting else 0) + (2 if queues == "kai" else 0)
    if _name(policy.topology_manager) != "none":
        per_pod += L.MAX_NUMA
    pod_bytes = WORD * (per_pod * p + sizes.slots)
    # Queue models hold queue x queue tables (Kueue's shares per ClusterQueue and tree node, KAI's
    # reclaim min-runtimes per reclaimer and victim).
    q = sizes.queues
    queue_bytes = WORD * 3 * q * q if queues != "none" else 0
    # The timeline: one engine row per sample (and one block per queue), room grown by doubling up to
    # the samples kept, then the result tables.
    per_sample = 2 * (L.TIMELINE_FLOAT_FIELDS + L.TIMELINE_FIELDS + L.QUEUE_FIELDS * q) + table * (
        TIMELINE_RESULT_COLUMNS + QUEUE_RESULT_COLUMNS * q
    )
    timeline_bytes = WORD * per_sample * sizes.samples
    return MemoryEstimate(
        (
            (f"cluster of {_count(n, 'node')}", node_keys, node_bytes),
            (_count(d, "GPU device"), node_keys if d == sizes.gpus else "scheduler.replicas", gpu_bytes),
            (_count(j, "job"), job_keys, job_bytes),
            (_count(p, "pod"), job_keys, pod_bytes),
            (_count(q, "queue"), "scheduler.queues", queue_bytes),
            (
                f"timeline of {_count(sizes.samples, 'sample')} x {_count(q, 'queue')}",
                "sample_interval",
                timeline_bytes,
            ),
        )
    )


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class ClusterSize:
    """A cluster's nodes, GPUs and the most GPUs of one node, and the config keys that set them."""

    nodes: int
    gpus: int
    node_gpus: int
    keys: str
    #: Devices and the most on one node when the MIG layouts' instances are devices (mig_strategy single).
    mig_devices: int | None = None
    mig_node_devices: int | None = None


def planned_cluster(cluster: Mapping[str, Any]) -> ClusterSize | None:
    """The size of a generated cluster from its config alone (before its node table is built), else None.

    Examples
    --------
    >>> size = planned_cluster({"kind": "homogeneous", "nodes": 100_000_000, "gpus_per_node": 8})
    >>> size.nodes, size.gpus, size.keys
    (100000000, 800000000, 'cluster.nodes')
    >>> planned_cluster({"kind": "philly"}) is None
    True
    """
    if cluster.get("kind") != "homogeneous":
        return None
    nodes, per_node = cluster.get("nodes"), cluster.get("gpus_per_node")
    if not isinstance(nodes, int) or not isinstance(per_node, int) or nodes < 1 or per_node < 1:
        return None  # the builder reports the bad value
    keys = "cluster.nodes" if nodes >= per_node else "cluster.gpus_per_node"
    layout = cluster.get("mig_layout")
    if layout is None:
        return ClusterSize(nodes, nodes * per_node, per_node, keys)
    count = nodes if cluster.get("mig_nodes") is None else int(cluster["mig_nodes"])
    per_gpu = mig_instances(str(cluster.get("gpu_model")), str(layout))
    devices = count * per_node * per_gpu + (nodes - count) * per_node
    return ClusterSize(nodes, nodes * per_node, per_node, keys, devices, per_node * max(per_gpu, 1))


def cluster_size(nodes: pl.DataFrame, keys: str = "cluster") -> ClusterSize:
    """The size of a built node table."""
    total, most = nodes.select(
        pl.col("num_gpus").cast(pl.Int64).sum(), pl.col("num_gpus").max().alias("m")
    ).row(0)
    if "mig_layout" not in nodes.columns or not nodes["mig_layout"].is_not_null().any():
        return ClusterSize(nodes.height, int(total or 0), int(most or 0), keys)
    per_type = nodes.group_by("gpu_model", "mig_layout").agg(
        pl.col("num_gpus").cast(pl.Int64).sum().alias("gpus"), pl.col("num_gpus").max().alias("most")
    )
    devices, node_devices = 0, 0
    for model, layout, gpus, most in per_type.iter_rows():
        per_gpu = 1 if layout is None else mig_instances(str(model), str(layout))
        devices += int(gpus) * per_gpu
        node_devices = max(node_devices, int(most) * per_gpu)
    return ClusterSize(nodes.height, int(total or 0), int(most or 0), keys, devices, node_devices)


@functools.lru_cache(maxsize=64)
def mig_instances(model: str, layout: str) -> int:
    """MIG instances per GPU of ``model`` under the mig-parted config ``layout`` (1: MIG off, or a
    config with no instance, whose GPU stays one device); :data:`MIG_DEVICES_PER_GPU` for a config
    the catalog does not know (the cluster builder refuses it).

    Examples
    --------
    >>> mig_instances("A100-80GB", "all-1g.10gb"), mig_instances("A100-80GB", "all-balanced")
    (7, 4)
    """
    from gpureplay.mig.geometry import MigError, mig_geometry
    from gpureplay.mig.parted import standard_configs

    try:
        entries = standard_configs(mig_geometry(model)).configs.get(layout)
    except MigError:
        return MIG_DEVICES_PER_GPU
    if not entries:
        return MIG_DEVICES_PER_GPU
    return max(max(sum(n for _, n in e.mig_devices), 1) for e in entries)


def run_sizes(
    jobs: pl.DataFrame,
    cluster: ClusterSize,
    policy: Policy,
    sample_interval: float,
    max_samples: int,
) -> RunSizes:
    """The sizes of a replay of ``jobs`` on a cluster of ``cluster``'s size under ``policy``."""
    replicas = policy.devices_per_gpu()
    devices, node_devices = cluster.gpus * replicas, cluster.node_gpus * replicas
    if _name(policy.mig_strategy) == "single" and cluster.mig_devices is not None:
        # Each instance a device (replay.mig.split_mig_devices); dynamic and mixed keep one row per GPU.
        devices, node_devices = cluster.mig_devices, cluster.mig_node_devices or cluster.node_gpus
    stats = jobs.select(
        pods=pl.col("num_pods").cast(pl.Int64).sum(),
        slots=(
            pl.col("num_pods").cast(pl.Int64) * (pl.col("gpu_milli").cast(pl.Int64) // 1000).clip(1)
        ).sum(),
        end=(pl.col("submit_time") + pl.col("duration")).max(),
        queues=pl.col("queue").n_unique(),
    ).row(0, named=True)
    end = float(stats["end"] or 0.0)
    samples = min(max_samples, int(end / sample_interval) + 2) if math.isfinite(end) else max_samples
    return RunSizes(
        nodes=cluster.nodes,
        gpus=cluster.gpus,
        devices=devices,
        node_devices=node_devices,
        jobs=jobs.height,
        pods=int(stats["pods"] or 0),
        slots=int(stats["slots"] or 0),
        queues=max(int(stats["queues"] or 0), 1),
        samples=max(samples, 1),
    )


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now, or None where the system does not say.

    ``MemAvailable`` of ``/proc/meminfo`` (Linux: free memory plus what the page cache would give
    back), else the free physical pages (``os.sysconf``).
    """
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(estimate: MemoryEstimate, budget_gib: float | None) -> None:
    """Refuse a run whose estimate exceeds ``budget_gib`` (None: :func:`available_memory`).

    Raises
    ------
    InputError
        Naming the config key of the largest part, the estimate by part and the budget.
    """
    if budget_gib is not None:
        budget, what = budget_gib * 2**30, f"memory_budget_gib = {budget_gib:g}"
    else:
        found = available_memory()
        if found is None:
            return  # the system does not say: nothing to compare with
        budget, what = float(found), f"the {_gib(found)} of memory available now (memory_budget_gib: null)"
    total = estimate.total
    if total <= budget:
        return
    _, key, _ = estimate.largest()
    raise InputError.config(
        f"the replay would need about {_gib(total)} of memory ({estimate.describe()}), more than {what}; "
        "make it smaller, or set memory_budget_gib if the machine has the room",
        key,
    )
