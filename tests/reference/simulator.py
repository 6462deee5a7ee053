"""A slow, obviously-correct replay simulator: the oracle the numba engine is tested against.

Every rule of the engine v2 spec (``docs/engine/index.md``) is written here
in the plainest way Python allows: the cluster is a list of :class:`Node`
objects, the queue is re-sorted whenever it is looked at, every node is
scanned for every pod, a gang placement or a preemption search is tried on a
copy of the cluster, and EASY's projection is another copy. Section names in
the comments (``[Resources]``, ``[Priority preemption]``, ...) are the
headings of the spec, so a reader can check each line against it.

Nothing here is imported from the engine except the result type and the
schemas it must produce: the counter-based draw is written again from the
spec's formula, and the scorers live in the twin module
:mod:`tests.reference.scoring`.

Speed is not a goal; it only has to be fast enough for the hypothesis cases of
the differential tests (tens of nodes, a few hundred jobs).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import polars as pl
from tests.reference.fragmentation import PodShape, TaskClass, typical_classes
from tests.reference.scoring import (
    BIG,
    GPU_SCORERS,
    SCORERS,
    Candidate,
    NodeView,
    PodView,
    Scorer,
    Tie,
    keyed_tie,
    lowest_index,
)

from gpureplay.engine.state.layout import MAX_SHARE, MB_PER_MIB
from gpureplay.mig.devices import single_strategy_devices, smallest_profile
from gpureplay.mig.geometry import MigGeometry, MigProfile, mig_geometry
from gpureplay.mig.parted import find_placement, standard_configs
from gpureplay.queues.fair_share import (
    VOLCANO_MIN_RESOURCE,
    KaiQueueShare,
    kai_fair_share_tree,
    volcano_proportion,
    volcano_share,
)
from gpureplay.queues.kai_order import (
    KaiQueueState,
    dominant_share,
    queue_before,
    victim_first,
    within_capacity,
)
from gpureplay.queues.kai_queues import KaiQueues, kai_preemptibility, kai_total
from gpureplay.queues.kai_reclaimable import can_reclaim, preempt_within_quota, reclaimable
from gpureplay.queues.kueue_fair_preemption import fair_preemption_targets
from gpureplay.queues.kueue_fungibility import (
    FIT,
    NO_CANDIDATES,
    NO_FIT,
    PREEMPT,
    RECLAIM,
    Mode,
    Simulate,
    assign_with_modes,
)
from gpureplay.queues.kueue_preemption import Admitted, TopologyFit, preemption_targets, preempts
from gpureplay.queues.kueue_quota import (
    KueueQuotas,
    assign_flavors,
    available,
    borrow_height,
    borrow_level,
    first_flavors,
    fits,
    node_usage,
    request_of,
    row_request,
    share,
)
from gpureplay.queues.volcano_queues import VOLCANO_RESOURCES, VolcanoQueues
from gpureplay.replay.queue_model import kai_queues, kueue_quotas, tenant_jobs, volcano_queues
from gpureplay.replay.simulate import (
    ATTEMPT_SCHEMA,
    JOB_RESULT_SCHEMA,
    QUEUE_SAMPLE_SCHEMA,
    TIMELINE_SCHEMA,
    Replay,
    queue_rows,
    volcano_total,
)
from gpureplay.schedulers.policy import (
    Backfill,
    GangMode,
    GpuSharing,
    KueueAdmission,
    MigDemand,
    MigPlacement,
    MigReconfigure,
    MigStrategy,
    NodeTies,
    Policy,
    Preemption,
    QueueOrder,
    ReplicaAllocation,
    Requeue,
    SharingDemand,
    TasProfile,
    TopologyAware,
)
from gpureplay.traces.schema import UNKNOWN_CAPACITY

__all__ = [
    "ATTEMPT_SCHEMA",
    "DEFAULT_MAX_SAMPLES",
    "JOB_RESULT_SCHEMA",
    "QUEUE_SAMPLE_SCHEMA",
    "TIMELINE_SCHEMA",
    "Replay",
    "draw",
    "mix64",
    "rejection_reason",
    "simulate",
    "task_classes",
]

WHOLE_GPU = 1000  # milli-GPU of one whole card
DEFAULT_MAX_SAMPLES = 100_000
#: Restart overhead when the jobs table gives none (Lucid's simulator): 40 s up to 8 GPUs, else 60 s.
LUCID_SMALL, LUCID_LARGE, LUCID_SMALL_GPUS = 40.0, 60.0, 8
#: kube-scheduler's offset in the "sum of victim priorities" node criterion.
PRIORITY_OFFSET = 2**31
#: [Dynamic MIG] the mig-parted config of a dynamic node (MIG on, no instance), and a MIG GPU's memory
#: slices: an instance of ``size`` slices books ``size`` eighths of the GPU (125 milli each).
MIG_ENABLED = "all-enabled"
MIG_MEMORY_SLICES = 8
ALL_SLICES = (1 << MIG_MEMORY_SLICES) - 1
SLICE_MILLI = WHOLE_GPU // MIG_MEMORY_SLICES

# --------------------------------------------------------------------------------------------------
# Draws  [Resources] "Draws (counter-based)"
# --------------------------------------------------------------------------------------------------

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
DECISION_NODE, DECISION_GPU, DECISION_PREEMPT_OFFSET = 0, 1, 2
DECISION_NODE_ORDER = 3  # [Resources] node_ties: seeded_order's one order of the nodes (job, pod, attempt 0)


#: Evictions per job beyond which a replay is taken for a preemption livelock.
LIVELOCK_EVICTIONS_PER_JOB = 100
#: [Kueue waitForPodsReady] timer kinds (the engine's TM_READY_BACKOFF, TM_PODS_READY): a requeue back-off
#: ends; a readiness timeout ends.
READY_BACKOFF = 2
READY_TIMEOUT = 3


def mix64(z: int) -> int:
    """SplitMix64's output function, every product reduced modulo 2**64 by hand."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def draw(seed: int, job_id: int, pod: int, attempt: int, decision: int) -> int:
    """The spec's hash of ``(seed, job_id, pod, attempt, decision)``: a 64-bit word."""
    h = mix64((seed % 2**63) + GOLDEN)
    h = mix64(h ^ (((job_id & MASK64) + 2 * GOLDEN) & MASK64))
    h = mix64(h ^ ((pod + 3 * GOLDEN) & MASK64))
    h = mix64(h ^ ((attempt + 4 * GOLDEN) & MASK64))
    return mix64(h ^ ((decision + 5 * GOLDEN) & MASK64))


# --------------------------------------------------------------------------------------------------
# Cluster state  [Resources]
# --------------------------------------------------------------------------------------------------


def _capacity(value: int) -> float:
    """UNKNOWN_CAPACITY never constrains: model it as infinitely large."""
    return math.inf if value == UNKNOWN_CAPACITY else float(value)


@dataclass
class Gpu:
    free_milli: int
    free_mem: float
    pods: int = 0  # pods on it (whole or shared): what the device split count limits
    # [Dynamic MIG] the memory slices held on it (bit i: slice i): its instances', all of them when a
    # whole-GPU pod holds it.
    mig_mask: int = 0
    # [MIG re-partitioning] each GPU of a re-partitioning node holds its own layout: the config's name
    # (during a downtime: the config being applied), its instances' starts by profile (empty during a
    # downtime: no instance) and when the downtime ends (None: not in downtime). ``starts`` None: the
    # node's ``mig_starts`` apply.
    layout: str | None = None
    starts: dict[str, tuple[int, ...]] | None = None
    down_until: float | None = None


@dataclass
class Node:
    index: int
    model: str | None
    gpu_mem: float  # memory of one GPU (node gpu_mem_mib)
    cpu: float  # capacity (inf when unknown)
    mem: float
    free_cpu: float
    free_mem: float  # node memory, MiB
    gpus: list[Gpu]
    model_code: int = -1  # index of the model in the cluster's sorted model names (FGD's classes)
    cpu_used: int = 0  # milli-CPU requested by the pods on it (the baselines read BIG - used when unknown)
    pod_kinds: dict[int, int] = field(default_factory=dict)  # GPU pods by kind: 0 shared, k: k whole GPUs
    split: float = math.inf  # pods one GPU may hold (device_split_count; inf: no limit)
    share_rule: str = "none"  # shared_gpu_memory: memory of a shared pod that names none
    # [GPU sharing by replicas] devices per physical GPU (1: no sharing; ``gpus`` are then the
    # replica devices, device p*R + i = replica i of physical GPU p) and the device plugin's rule.
    replicas: int = 1
    packed: bool = False
    # [MIG instances] the base GPU model (``model`` is then the product ``<model>-MIG-<profile>``), the
    # instances' profile (None: whole GPUs), their share of the GPU's SMs c / S, and the GPU's memory.
    base_model: str | None = None
    mig_profile: str | None = None
    mig_share: float = 1.0
    full_gpu_mem: float = 0.0
    # [Dynamic MIG] ``dynamic_mig``: a dynamic node (``model`` is the product ``<model>-MIG``), its GPUs'
    # instances made per pod at the start ``mig_placement`` (hami | lowest_start) picks. ``mig_whole``: a
    # whole-GPU node of a dynamic-MIG replay, where a fractional pod takes one whole GPU.
    dynamic_mig: bool = False
    mig_whole: bool = False
    mig_placement: str = "hami"
    # [Slice-mask MIG] mixed strategy: profile -> the start slots of its instances in the node's layout (the
    # only placements a pod of that profile may take); None on dynamic nodes (every allowed start).
    mig_starts: dict[str, tuple[int, ...]] | None = None
    # [MIG FGD] "FGD over MIG slices": the wanted shapes of the node's product with their weights,
    # (allowed starts, memory slices, pods that ask it); set on dynamic nodes under mig_placement fgd.
    mig_weights: tuple[tuple[tuple[int, ...], int, int], ...] = ()
    # [MIG re-partitioning] the candidate configs of the node's model, in order, each as its instances'
    # starts by profile (empty: the node's GPUs keep the node's layout).
    mig_candidates: dict[str, dict[str, tuple[int, ...]]] = field(default_factory=dict)
    # [Kubelet Topology Manager] "NUMA layout" (set only under a topology_manager policy): each GPU's NUMA
    # node, each NUMA node's whole CPUs (inf when the CPU capacity is unknown) and its free exclusive CPUs.
    numa_of_gpu: tuple[int, ...] = ()
    numa_cpus: tuple[float, ...] = (math.inf,)
    numa_free: list[float] = field(default_factory=lambda: [math.inf])

    def free_gpu_milli(self) -> int:
        return sum(g.free_milli for g in self.gpus)

    def wholly_free(self) -> list[int]:
        return [i for i, g in enumerate(self.gpus) if g.free_milli == WHOLE_GPU]

    def copy(self) -> Node:
        gpus = [
            Gpu(g.free_milli, g.free_mem, g.pods, g.mig_mask, g.layout, g.starts, g.down_until)
            for g in self.gpus
        ]
        return Node(
            self.index,
            self.model,
            self.gpu_mem,
            self.cpu,
            self.mem,
            self.free_cpu,
            self.free_mem,
            gpus,
            self.model_code,
            self.cpu_used,
            dict(self.pod_kinds),
            self.split,
            self.share_rule,
            self.replicas,
            self.packed,
            self.base_model,
            self.mig_profile,
            self.mig_share,
            self.full_gpu_mem,
            self.dynamic_mig,
            self.mig_whole,
            self.mig_placement,
            self.mig_starts,
            self.mig_weights,
            self.mig_candidates,
            self.numa_of_gpu,
            self.numa_cpus,
            list(self.numa_free),
        )

    def view(self) -> NodeView:
        """What the FGD paper's scorers read of the node."""
        cpu_free = int(self.free_cpu) if math.isfinite(self.cpu) else BIG - self.cpu_used
        return NodeView(
            tuple(g.free_milli for g in self.gpus),
            tuple(g.free_mem for g in self.gpus),
            cpu_free,
            self.model_code,
            {k: v for k, v in self.pod_kinds.items() if v},
            tuple(g.pods for g in self.gpus),
            self.split,
            self.gpu_mem,
        )


Cluster = list[Node]


@dataclass(frozen=True)
class Pod:
    """What one pod of a job asks for (all pods of a job are identical)."""

    milli: int
    gpu_mem: int  # per GPU; null in the trace means 0
    cpu: int
    mem: int
    models: frozenset[str] | None  # None: any model
    # [MIG instances] the profile the job names (a product selector), mig_demand: smallest_fit, and the
    # trace's gpu_milli (what the smallest fit is computed from; ``milli`` is then whole devices).
    mig_profile: str | None = None
    mig_demand: str = "any"
    trace_milli: int = 0


@dataclass(frozen=True)
class PodPlacement:
    """Where one pod went, with what it took, so it can be released exactly."""

    node: int
    gpus: tuple[int, ...]  # whole pod: its k GPUs; shared: one GPU; gpu_milli 0: none
    milli: int  # taken from each GPU in ``gpus``
    gpu_mem: float  # taken from each GPU in ``gpus``
    cpu: int
    mem: int
    time: float  # when it was placed (its hold starts)
    # [Dynamic MIG] the memory slices it holds on each GPU in ``gpus`` (its instance's; every slice for a
    # whole-GPU pod on a dynamic node; 0 elsewhere) and its instance's compute slices (0: no instance).
    slices: int = 0
    compute: int = 0
    # [Kubelet Topology Manager] "Exclusive CPUs": the exclusive CPUs it took on each NUMA node of its node
    # (empty: none; ``cpu`` is taken from the node's CPU either way).
    numa_cpu: tuple[float, ...] = ()

    @property
    def held_milli(self) -> int:
        """[Accounting] Milli-GPU the pod holds: ``milli`` on each of its GPUs."""
        return self.milli * len(self.gpus)


def empty_cluster(
    nodes: list[dict[str, Any]],
    split: int = 0,
    share_rule: str = "none",
    replicas: int = 1,
    mps: bool = False,
    packed: bool = False,
    mig: bool = False,
    dynamic: bool = False,
    mig_placement: str = "hami",
    mixed: bool = False,
    repartition: bool = False,
    repartition_layouts: list[str] | None = None,
) -> Cluster:
    """The cluster with nothing allocated; node index = row of the nodes table.

    ``split`` is the policy's ``device_split_count`` (0: no limit), ``share_rule`` its
    ``shared_gpu_memory``: the device plugin's settings, the same on every node.

    [GPU sharing by replicas] ``replicas`` R > 1: every GPU is advertised as R devices, and
    ``gpus`` lists the devices (``num_gpus * R``; device p*R + i is replica i of physical GPU p).
    A device's memory is the GPU's under time-slicing, ``gpu_mem_mib // R`` under MPS (``mps``).
    ``packed``: the device plugin's ``packed`` replica allocation (else ``distributed``).

    [MIG instances] ``mig``: a node's ``mig_layout`` (other than all-disabled) makes each GPU its I
    instances of one profile: devices p*I .. p*I + I - 1 of GPU p, each with the instance's memory,
    the node's model the product ``<model>-MIG-<profile>``, replicas' ``packed`` rule.

    [Dynamic MIG] ``dynamic``: a node whose ``mig_layout`` is all-enabled is a dynamic node of
    product ``<model>-MIG`` (its GPUs whole, no instance yet; ``mig_placement`` the start rule),
    every other node a whole-GPU node where a fractional pod takes one GPU.

    [Slice-mask MIG] ``mixed``: a node whose ``mig_layout`` is a config with instances holds them at
    ``find_placement``'s starts, product ``<model>-MIG-<layout>``; null or all-disabled: whole GPUs.

    [MIG re-partitioning] ``repartition`` (with ``mixed``): every GPU of a MIG node holds its own layout
    (initially the node's), chosen among its model's candidate configs (:func:`candidate_configs`, from
    ``repartition_layouts``); product ``<model>-MIG``.
    """
    cluster: Cluster = []
    if mixed and repartition:
        candidates = {}
        for row in nodes:
            layout = row.get("mig_layout")
            if layout is not None and layout != "all-disabled":
                model = mig_geometry(row["gpu_model"]).model
                if model not in candidates:
                    candidates[model] = candidate_configs(nodes, model, repartition_layouts)
        check_repartition_layouts(repartition_layouts, candidates)
        return [
            repartition_node(index, row, candidates)
            if row.get("mig_layout") not in (None, "all-disabled")
            else dynamic_mig_node(index, row, mig_placement, mixed)
            for index, row in enumerate(nodes)
        ]
    if dynamic or mixed:
        return [dynamic_mig_node(index, row, mig_placement, mixed) for index, row in enumerate(nodes)]
    layouts = [
        single_strategy_devices(r["gpu_model"], r["mig_layout"], int(r["gpu_mem_mib"]))
        if mig and r.get("mig_layout") is not None
        else None
        for r in nodes
    ]
    names = [r["gpu_model"] if d is None else d.product for r, d in zip(nodes, layouts, strict=True)]
    codes = {name: i for i, name in enumerate(sorted(set(names) - {None}))}
    for index, row in enumerate(nodes):
        devices = layouts[index]
        if devices is not None:
            node = Node(
                index,
                devices.product,
                float(devices.memory_mib),
                _capacity(row["cpu_milli"]),
                _capacity(row["mem_mib"]),
                _capacity(row["cpu_milli"]),
                _capacity(row["mem_mib"]),
                [Gpu(WHOLE_GPU, float(devices.memory_mib)) for _ in range(row["num_gpus"] * devices.per_gpu)],
                codes[devices.product],
            )
            node.split = math.inf
            node.replicas = devices.per_gpu
            node.packed = True
            node.base_model = devices.model
            node.mig_profile = devices.profile
            node.mig_share = devices.compute_slices / devices.gpu_compute_slices
            node.full_gpu_mem = float(row["gpu_mem_mib"])
            cluster.append(node)
            continue
        gpu_mem = float(row["gpu_mem_mib"])
        if mps:
            gpu_mem = float(int(row["gpu_mem_mib"]) // replicas)
        cpu, mem = _capacity(row["cpu_milli"]), _capacity(row["mem_mib"])
        gpus = [Gpu(WHOLE_GPU, gpu_mem) for _ in range(row["num_gpus"] * replicas)]
        code = codes.get(row["gpu_model"], -1)
        node = Node(index, row["gpu_model"], gpu_mem, cpu, mem, cpu, mem, gpus, code)
        node.split = float(split) if split > 0 else math.inf
        node.share_rule = share_rule
        node.replicas = replicas
        node.packed = packed
        node.base_model = row["gpu_model"]
        node.full_gpu_mem = float(row["gpu_mem_mib"])
        cluster.append(node)
    return cluster


def dynamic_mig_node(index: int, row: dict[str, Any], mig_placement: str, mixed: bool = False) -> Node:
    """[Dynamic MIG] "Nodes": node ``index`` of a dynamic-MIG replay, from its table row.

    ``all-enabled``: a dynamic node, product ``<model>-MIG``; null or ``all-disabled``: whole GPUs.
    Any other layout is refused (instances made in advance, or no config of the model).
    """
    layout = row.get("mig_layout")
    cpu, mem = _capacity(row["cpu_milli"]), _capacity(row["mem_mib"])
    gpu_mem = float(row["gpu_mem_mib"])
    gpus = [Gpu(WHOLE_GPU, gpu_mem) for _ in range(row["num_gpus"])]
    node = Node(index, row["gpu_model"], gpu_mem, cpu, mem, cpu, mem, gpus)
    node.base_model = row["gpu_model"]
    node.full_gpu_mem = gpu_mem
    if layout is None or layout == "all-disabled":
        node.mig_whole = True
        return node
    if mixed:
        # [Slice-mask MIG] "Mixed strategy": the layout's instances, each profile its own resource.
        geometry = mig_geometry(row["gpu_model"])
        if layout == MIG_ENABLED:
            raise ValueError(f"node {index}: {MIG_ENABLED} has no instance (refused under mixed)")
        node.model = f"{geometry.model}-MIG-{layout}"
        node.base_model = geometry.model
        node.dynamic_mig = True
        node.mig_placement = "lowest_start"
        node.mig_starts = config_starts(geometry, layout)
        return node
    if layout != MIG_ENABLED:
        raise ValueError(
            f"node {index}: mig_layout {layout!r} under mig_strategy: dynamic (only {MIG_ENABLED})"
        )
    geometry = mig_geometry(row["gpu_model"])  # raises for a model without MIG
    node.model = f"{geometry.model}-MIG"
    node.base_model = geometry.model
    node.dynamic_mig = True
    node.mig_placement = mig_placement
    return node


def config_starts(geometry: MigGeometry, layout: str) -> dict[str, tuple[int, ...]]:
    """[Slice-mask MIG] "Mixed strategy": a config's instances on one GPU, as their starts by profile.

    ``find_placement``'s starts (widest profile first, lowest start that lets the rest fit); an
    unknown config name raises KeyError.
    """
    entries = standard_configs(geometry).configs[layout]
    counts = {p: c for p, c in entries[0].mig_devices if c > 0}
    placed = find_placement(geometry, counts)
    assert placed is not None
    return {p: tuple(sorted(i.start for i in placed if i.profile == p)) for p in counts}


# --------------------------------------------------------------------------------------------------
# Re-partitioning idle GPUs  [MIG re-partitioning]
# --------------------------------------------------------------------------------------------------

#: [MIG re-partitioning] "Settings": the downtime when the policy gives none (mig_reconfigure_s null).
DEFAULT_RECONFIGURE_S = 60.0


def plain_config(geometry: MigGeometry, layout: str) -> bool:
    """[MIG re-partitioning] A config with instances and no media-extension profile (a default candidate)."""
    starts = config_starts(geometry, layout)
    return bool(starts) and not any(geometry.profile(p).media_extensions for p in starts)


def candidate_configs(
    nodes: list[dict[str, Any]], model: str, listed: list[str] | None
) -> dict[str, dict[str, tuple[int, ...]]]:
    """[MIG re-partitioning] "Settings": the configs a GPU of ``model`` may be given, in order.

    The ``listed`` names the model has (None: every standard config with instances and no
    media-extension profile, in ``standard_configs``' order), then every node's initial layout of the
    model that is not listed (node order). Each as its instances' starts by profile.
    """
    geometry = mig_geometry(model)
    standard = standard_configs(geometry).configs
    if listed is None:
        names = [name for name in standard if plain_config(geometry, name)]
    else:
        names = [name for name in listed if name in standard]
    for row in nodes:
        layout = row.get("mig_layout")
        if layout in (None, "all-disabled") or mig_geometry(row["gpu_model"]).model != model:
            continue
        if layout not in names:
            names.append(layout)
    return {name: config_starts(geometry, name) for name in names}


def check_repartition_layouts(
    listed: list[str] | None, candidates: dict[str, dict[str, dict[str, tuple[int, ...]]]]
) -> None:
    """[MIG re-partitioning] "Settings" config errors: a listed name no MIG model of the cluster has, a
    config of media-extension profiles (ValueError naming the key); and (the spec does not say; the
    engine refuses it) a config without instances (all-enabled, all-disabled), which could never serve."""
    for name in listed or []:
        models = [model for model, configs in candidates.items() if name in configs]
        if not models:
            raise ValueError(f"mig_reconfigure_layouts: {name!r} is no config of the cluster's MIG models")
        for model in models:
            if not candidates[model][name]:
                raise ValueError(f"mig_reconfigure_layouts: {name!r} makes no MIG instance")
            geometry = mig_geometry(model)
            if any(geometry.profile(p).media_extensions for p in candidates[model][name]):
                raise ValueError(f"mig_reconfigure_layouts: {name!r} has media-extension profiles")


def repartition_node(
    index: int, row: dict[str, Any], candidates: dict[str, dict[str, dict[str, tuple[int, ...]]]]
) -> Node:
    """[MIG re-partitioning] "Nodes": MIG node ``index`` whose GPUs each hold their own layout.

    The product is ``<model>-MIG``; each GPU starts with the node's ``mig_layout``. The node's
    ``mig_starts`` holds every profile of some candidate config (with the starts its instances may
    have in any of them): a pod asking another profile is not allowed here.
    """
    layout = row["mig_layout"]
    if layout == MIG_ENABLED:
        raise ValueError(f"node {index}: {MIG_ENABLED} has no instance (refused under mixed)")
    geometry = mig_geometry(row["gpu_model"])
    configs = candidates[geometry.model]
    gpu_mem = float(row["gpu_mem_mib"])
    cpu, mem = _capacity(row["cpu_milli"]), _capacity(row["mem_mib"])
    gpus = [Gpu(WHOLE_GPU, gpu_mem, layout=layout, starts=configs[layout]) for _ in range(row["num_gpus"])]
    node = Node(index, f"{geometry.model}-MIG", gpu_mem, cpu, mem, cpu, mem, gpus)
    node.base_model = geometry.model
    node.full_gpu_mem = gpu_mem
    node.dynamic_mig = True
    node.mig_placement = "lowest_start"  # the mixed rule: the lowest free instance
    union: dict[str, set[int]] = {}
    for starts in configs.values():
        for profile, at in starts.items():
            union.setdefault(profile, set()).update(at)
    node.mig_starts = {profile: tuple(sorted(at)) for profile, at in union.items()}
    node.mig_candidates = configs
    return node


def clone(cluster: Cluster) -> Cluster:
    """An independent copy of the cluster state."""
    return [node.copy() for node in cluster]


def model_allowed(node: Node, pod: Pod) -> bool:
    """[Resources] the job's ``gpu_models``; [MIG instances] "Products": names base models, and a
    ``mig_profile`` (or the smallest fit) selects the MIG nodes of that profile."""
    if pod.models is not None and node.base_model not in pod.models:
        return False
    if node.mig_whole:
        return pod.mig_profile is None  # [Dynamic MIG] a job naming a profile runs on dynamic nodes only
    if node.dynamic_mig:
        if pod.milli >= WHOLE_GPU:
            return node.mig_starts is None  # [Slice-mask MIG] mixed: MIG GPUs offer no nvidia.com/gpu
        return instance_profile(node, pod) is not None
    if pod.mig_profile is not None:
        return node.mig_profile == pod.mig_profile
    if node.mig_profile is None or node.base_model is None or pod.mig_demand == "any":
        return True
    geometry = mig_geometry(node.base_model)
    if pod.mig_demand == "smallest_fit":
        fit = smallest_profile(geometry, pod.trace_milli, pod.gpu_mem, int(node.full_gpu_mem))
        return node.mig_profile == fit.name
    # fits: the instance has the pod's share of the SMs and its GPU memory.
    compute = geometry.profile(node.mig_profile).compute_slices
    share_ok = compute * WHOLE_GPU >= min(pod.trace_milli, WHOLE_GPU) * geometry.compute_slices
    return share_ok and node.gpu_mem >= pod.gpu_mem


# --------------------------------------------------------------------------------------------------
# Dynamic MIG  [Dynamic MIG]
# --------------------------------------------------------------------------------------------------


def instance_profile(node: Node, pod: Pod) -> MigProfile | None:
    """[Dynamic MIG] "Which instance": a fractional pod's profile on dynamic ``node`` (None: not allowed).

    Its ``mig_profile`` (when the node's model has it), else the smallest profile that fits its demand
    on one GPU; the node is allowed when that instance's memory >= the pod's GPU memory.
    """
    geometry = mig_geometry(str(node.base_model))
    if pod.mig_profile is not None:
        if pod.mig_profile not in {p.name for p in geometry.profiles}:
            return None
        profile = geometry.profile(pod.mig_profile)
    else:
        profile = smallest_profile(geometry, pod.milli, pod.gpu_mem, int(node.full_gpu_mem))
    if instance_memory(node, profile) < pod.gpu_mem:
        return None
    if node.mig_starts is not None and profile.name not in node.mig_starts:
        return None  # [Slice-mask MIG] mixed: the layout has no instance of that profile
    return profile


def instance_memory(node: Node, profile: MigProfile) -> float:
    """GPU memory of an instance: its memory slices' share of the GPU's, floored (MiB)."""
    return float(int(node.full_gpu_mem) * profile.memory_slices // MIG_MEMORY_SLICES)


def slice_bits(profile: MigProfile, start: int) -> int:
    """[Dynamic MIG] "State": the slices [start, start + size) of an instance of ``profile`` at ``start``."""
    return ((1 << profile.memory_slices) - 1) << start


def allowed_starts(node: Node, profile: MigProfile, gpu: Gpu | None = None) -> tuple[int, ...]:
    """[Slice-mask MIG] The starts an instance of ``profile`` may take on ``node``: the profile's, or under
    mixed its instances' in the layout.

    [MIG re-partitioning] On ``gpu`` of a re-partitioning node: its instances' in the GPU's own layout
    (none during a downtime).
    """
    if gpu is not None and gpu.starts is not None:
        return gpu.starts.get(profile.name, ())
    return profile.starts if node.mig_starts is None else node.mig_starts[profile.name]


def free_starts(node: Node, gpu: Gpu, profile: MigProfile) -> list[int]:
    """The allowed starts of ``profile`` on ``gpu`` none of whose slices is held, lowest first."""
    return [s for s in allowed_starts(node, profile, gpu) if gpu.mig_mask & slice_bits(profile, s) == 0]


def free_instances(node: Node, profile: MigProfile) -> int:
    """[Dynamic MIG] "Where": instances of ``profile`` the node can still take (its GPUs' free placements).

    A profile's allowed placements never overlap one another, so each free one holds one more instance.
    """
    return sum(len(free_starts(node, gpu, profile)) for gpu in node.gpus)


def pick_instance(node: Node, profile: MigProfile) -> tuple[int, int]:
    """[Dynamic MIG] "Where": (GPU, start) of a new instance of ``profile`` on ``node`` (which has room).

    The lowest-index GPU with a free placement; on it, under ``hami``, the highest free start for a
    profile named ``1g.*`` or ``3g.*`` and the lowest for the others; under ``lowest_start`` the lowest.
    [MIG FGD] under ``fgd``: the free placement of least fragmentation growth (:func:`fgd_instance`).
    """
    if node.mig_placement == "fgd":
        _, g, start = fgd_instance(node, profile)
        return g, start
    for g, gpu in enumerate(node.gpus):
        starts = free_starts(node, gpu, profile)
        if starts:
            high = node.mig_placement == "hami" and profile.name.startswith(("1g.", "3g."))
            return g, starts[-1] if high else starts[0]
    raise AssertionError("pick_instance called on a node without a free placement")


def booked_milli(node: Node, pod: Pod) -> int:
    """[Dynamic MIG] "Booking": milli-GPU a pod takes from ``node``.

    125 per slice of its instance on a dynamic node, one whole GPU for a fractional pod on a whole-GPU
    node of the replay, else its own milli.
    """
    if 0 < pod.milli < WHOLE_GPU and node.dynamic_mig:
        profile = instance_profile(node, pod)
        assert profile is not None, "booked_milli called for a pod the node does not allow"
        return SLICE_MILLI * profile.memory_slices
    if 0 < pod.milli < WHOLE_GPU and node.mig_whole:
        return WHOLE_GPU
    return pod.milli


#: [Dynamic MIG] "Results": a placement a pod would take on a dynamic GPU, (profile, allowed starts, memory
#: slices); the profile is "" for a whole GPU. [MIG re-partitioning] the profile finds the starts in a
#: GPU's own layout.
Wanted = tuple[str, tuple[int, ...], int]


def wanted_placements(empty: Cluster, pods: list[Pod]) -> dict[int, list[Wanted]]:
    """[Dynamic MIG] "Results": per dynamic node, the placements the workload's pods may take there.

    The instance of each fractional pod the node allows, and all 8 slices at start 0 for a whole-GPU
    pod it allows.
    """
    wanted: dict[int, list[Wanted]] = {}
    for node in empty:
        if not node.dynamic_mig:
            continue
        shapes: set[Wanted] = set()
        for pod in pods:
            if pod.milli == 0 or not model_allowed(node, pod):
                continue
            if pod.milli >= WHOLE_GPU:
                shapes.add(("", (0,), MIG_MEMORY_SLICES))
                continue
            profile = instance_profile(node, pod)
            assert profile is not None  # the node allows the pod
            shapes.add((profile.name, allowed_starts(node, profile), profile.memory_slices))
        wanted[node.index] = sorted(shapes)
    return wanted


def stranded_slices(cluster: Cluster, wanted: dict[int, list[Wanted]]) -> int:
    """[Dynamic MIG] "Results" ``mig_stranded_slices``: free dynamic slices no wanted placement can cover now.

    A free slice is usable when some allowed placement of some wanted shape covers it and overlaps no
    held slice. A GPU taken whole holds every slice: nothing of it is stranded.
    [MIG re-partitioning] "Results": the allowed placements on a GPU are its own layout's instances; a GPU
    in downtime has 8 stranded slices (free, no instance).
    """
    total = 0
    for node in cluster:
        if not node.dynamic_mig:
            continue
        for gpu in node.gpus:
            if gpu.down_until is not None:
                total += MIG_MEMORY_SLICES
                continue
            usable = 0
            for name, starts, size in wanted[node.index]:
                if gpu.starts is not None:
                    starts = gpu.starts.get(name, ())
                for start in starts:
                    span = ((1 << size) - 1) << start
                    if gpu.mig_mask & span == 0:
                        usable |= span
            total += bin(ALL_SLICES & ~gpu.mig_mask & ~usable).count("1")
    return total


# --------------------------------------------------------------------------------------------------
# FGD over MIG slices  [MIG FGD]
# --------------------------------------------------------------------------------------------------


def mig_fgd_weights(
    empty: Cluster, jobs: list[Job]
) -> dict[int, tuple[tuple[tuple[int, ...], int, int], ...]]:
    """[MIG FGD] Per dynamic node: its product's wanted shapes, each with its weight w.

    A shape is (allowed starts, memory slices), as for ``mig_stranded_slices``: the instance a
    fractional pod gets on the node, or all 8 slices at start 0 for a whole-GPU pod. w = how many of the
    replay's pods ask it there (every job of the table, ``num_pods`` each; FGD's task popularity as a
    count). Two profiles of one shape (7g.40gb and a whole GPU) add up: F only sees the shape.
    """
    weights: dict[int, tuple[tuple[tuple[int, ...], int, int], ...]] = {}
    for node in empty:
        if not node.dynamic_mig:
            continue
        count: dict[tuple[tuple[int, ...], int], int] = {}
        for job in jobs:
            pod = job.pod
            if pod.milli == 0 or not model_allowed(node, pod):
                continue
            if pod.milli >= WHOLE_GPU:
                shape: tuple[tuple[int, ...], int] = ((0,), MIG_MEMORY_SLICES)
            else:
                profile = instance_profile(node, pod)
                assert profile is not None  # the node allows the pod
                shape = (allowed_starts(node, profile), profile.memory_slices)
            count[shape] = count.get(shape, 0) + job.num_pods
        weights[node.index] = tuple((starts, size, w) for (starts, size), w in sorted(count.items()))
    return weights


def slice_frag(node: Node, mask: int) -> int:
    """[MIG FGD] F(h) of a dynamic GPU holding slices ``mask``.

    Sum over the wanted shapes i of w_i x (free slices that no free allowed placement of i covers); a
    GPU taken whole has no free slice: 0.
    """
    free = ALL_SLICES & ~mask
    total = 0
    for starts, size, weight in node.mig_weights:
        covered = 0
        for start in starts:
            span = ((1 << size) - 1) << start
            if span & mask == 0:
                covered |= span
        total += weight * bin(free & ~covered).count("1")
    return total


def fgd_instance(node: Node, profile: MigProfile) -> tuple[int, int, int]:
    """[MIG FGD] (growth, GPU, start) of the free placement of ``profile`` on ``node`` that grows F least.

    Over the node's GPUs with 125 x size milli and a device slot free (always so when an allowed start
    is free: free milli is the free slices', and MIG GPUs have no split count) and their free allowed
    starts: growth F(h | slices) - F(h); ties the lowest GPU, then the lowest start (the scan order with
    a strict ``<``).
    """
    best: tuple[int, int, int] | None = None
    need = SLICE_MILLI * profile.memory_slices
    for g, gpu in enumerate(node.gpus):
        if gpu.free_milli < need or gpu.pods >= node.split:
            continue
        before = slice_frag(node, gpu.mig_mask)
        for start in free_starts(node, gpu, profile):
            growth = slice_frag(node, gpu.mig_mask | slice_bits(profile, start)) - before
            if best is None or growth < best[0]:
                best = (growth, g, start)
    assert best is not None, "fgd_instance called on a node without a free placement"
    return best


def mig_fgd_score(node: Node, pod: Pod) -> int:
    """[MIG FGD] "Node scorer fgd with dynamic MIG": the score of ``pod`` on ``node`` (which fits it).

    Minus the growth of F the pod causes there. A fractional pod on a dynamic node: the growth of the
    placement it would get (:func:`pick_instance`: the least growth under ``mig_placement: fgd``, under
    ``hami`` / ``lowest_start`` the rule's GPU and start); a pod taking k wholly free GPUs of a dynamic
    node: -k x F(empty GPU) (they leave the measure); a pod on a whole-GPU node, or one asking no GPU: 0.
    Higher is better.
    """
    if not node.dynamic_mig or pod.milli == 0:
        return 0
    if pod.milli < WHOLE_GPU:
        profile = instance_profile(node, pod)
        assert profile is not None
        g, start = pick_instance(node, profile)
        held = node.gpus[g].mig_mask
        return -(slice_frag(node, held | slice_bits(profile, start)) - slice_frag(node, held))
    return -(pod.milli // WHOLE_GPU) * slice_frag(node, 0)


def choose_node_mig_fgd(
    cluster: Cluster, pod: Pod, tie: Tie = lowest_index, room: Callable[[Node], bool] = lambda node: True
) -> int | None:
    """[MIG FGD] :func:`choose_node` with the ``fgd`` node scorer under dynamic MIG: the highest
    :func:`mig_fgd_score` among the nodes the pod fits, ties by the policy's tie rule."""
    fits = [n for n in cluster if pod_fits(n, pod) and room(n)]
    if not fits:
        return None
    scores = [mig_fgd_score(n, pod) for n in fits]
    top = max(scores)
    return tie([node_candidate(n, pod) for n, s in zip(fits, scores, strict=True) if s == top])


def share_mem(node: Node, pod: Pod) -> float:
    """[Resources] GPU memory a shared pod takes on ``node``: what it names, else the share rule's.

    ``proportional``: ``milli / 1000`` of the GPU's memory, floored (HAMi's gpumem-percentage);
    ``full``: all of it (HAMi's default); ``none``: nothing.
    """
    if pod.gpu_mem > 0:
        return float(pod.gpu_mem)
    if node.share_rule == "proportional":
        return float(pod.milli * int(node.gpu_mem) // WHOLE_GPU)
    if node.share_rule == "full":
        return node.gpu_mem
    return 0.0


def fitting_gpus(node: Node, pod: Pod) -> list[int]:
    """GPUs of ``node`` a shared pod could use, lowest index first: milli, memory and a free pod slot."""
    need = share_mem(node, pod)
    return [
        i
        for i, g in enumerate(node.gpus)
        if g.free_milli >= pod.milli and g.free_mem >= need and g.pods < node.split
    ]


def pod_fits(node: Node, pod: Pod) -> bool:
    """[Resources] "A pod ... fits node n iff ..."."""
    if node.free_cpu < pod.cpu or node.free_mem < pod.mem:
        return False
    if pod.milli == 0:
        return True  # GPU model constraint ignored, GPU-less nodes allowed
    if not model_allowed(node, pod):
        return False
    if pod.milli < WHOLE_GPU and node.dynamic_mig:
        # [Dynamic MIG] a free placement of its instance (memory was matched by the profile).
        profile = instance_profile(node, pod)
        return profile is not None and free_instances(node, profile) > 0
    if pod.milli < WHOLE_GPU and node.mig_whole:
        # [Dynamic MIG] a fractional pod on a whole-GPU node takes one whole GPU.
        return len(node.wholly_free()) >= 1 and node.gpu_mem >= pod.gpu_mem
    if pod.milli < WHOLE_GPU:
        return len(fitting_gpus(node, pod)) > 0
    # Whole GPUs are wholly free, so their memory is the node's per-GPU memory.
    return len(node.wholly_free()) >= pod.milli // WHOLE_GPU and node.gpu_mem >= pod.gpu_mem


def _kind(placement: PodPlacement) -> int | None:
    """A placement's pod kind: None without GPUs, 0 shared, ``k`` for ``k`` whole GPUs."""
    if not placement.gpus:
        return None
    return 0 if placement.milli < WHOLE_GPU else len(placement.gpus)


def take(node: Node, placement: PodPlacement) -> None:
    """Subtract a placement's resources from its node (whole GPUs end at free_milli 0, free_mem 0)."""
    node.free_cpu -= placement.cpu
    node.free_mem -= placement.mem
    node.cpu_used += placement.cpu
    kind = _kind(placement)
    if kind is not None:
        node.pod_kinds[kind] = node.pod_kinds.get(kind, 0) + 1
    for g in placement.gpus:
        node.gpus[g].free_milli -= placement.milli
        node.gpus[g].free_mem -= placement.gpu_mem
        node.gpus[g].pods += 1
        # [Dynamic MIG] an instance is valid only if none of its slices is held.
        assert node.gpus[g].mig_mask & placement.slices == 0, "overlapping MIG instances"
        node.gpus[g].mig_mask |= placement.slices
    for u, cpus in enumerate(placement.numa_cpu):
        node.numa_free[u] -= cpus  # [Kubelet Topology Manager] exclusive CPUs


def release(node: Node, placement: PodPlacement) -> None:
    """Give back exactly what :func:`take` took."""
    node.free_cpu += placement.cpu
    node.free_mem += placement.mem
    node.cpu_used -= placement.cpu
    kind = _kind(placement)
    if kind is not None:
        node.pod_kinds[kind] -= 1
    for g in placement.gpus:
        node.gpus[g].free_milli += placement.milli
        node.gpus[g].free_mem += placement.gpu_mem
        node.gpus[g].pods -= 1
        node.gpus[g].mig_mask &= ~placement.slices  # [Dynamic MIG] the instance is destroyed
    for u, cpus in enumerate(placement.numa_cpu):
        node.numa_free[u] += cpus  # [Kubelet Topology Manager] exclusive CPUs


def place_on(
    cluster: Cluster,
    index: int,
    pod: Pod,
    gpu_scorer: Scorer,
    gpu_draw: Callable[[], int],
    time: float,
    tasks: tuple[TaskClass, ...] = (),
) -> PodPlacement:
    """Place ``pod`` on node ``index`` (which fits it): the GPUs, then take them."""
    node = cluster[index]
    gpus: tuple[int, ...]
    slices = compute = 0
    if pod.milli == 0:
        gpus, milli, gpu_mem = (), 0, 0.0
    elif pod.milli < WHOLE_GPU and node.dynamic_mig:
        # [Dynamic MIG] "Booking": an instance made for the pod, 125 milli and 1/8 of the memory per slice.
        profile = instance_profile(node, pod)
        assert profile is not None
        g, start = pick_instance(node, profile)
        gpus, milli, gpu_mem = (g,), SLICE_MILLI * profile.memory_slices, instance_memory(node, profile)
        slices, compute = slice_bits(profile, start), profile.compute_slices
    elif pod.milli < WHOLE_GPU and node.mig_whole:
        # [Dynamic MIG] a fractional pod on a whole-GPU node: the lowest-index wholly free GPU.
        gpus, milli, gpu_mem = whole_gpus(node, 1), WHOLE_GPU, node.gpu_mem
    elif pod.milli >= WHOLE_GPU:
        # The k lowest-index wholly free GPUs, whatever gpu_placement says; under GPU sharing the
        # device plugin's replica rule.
        gpus = whole_gpus(node, pod.milli // WHOLE_GPU)
        milli, gpu_mem = WHOLE_GPU, node.gpu_mem
        if node.dynamic_mig:
            slices = ALL_SLICES  # [Dynamic MIG] a whole GPU leaves no slice for an instance
    else:
        candidates = [gpu_candidate(node, g, pod, tasks) for g in fitting_gpus(node, pod)]
        gpus = (gpu_scorer(candidates, gpu_draw),)
        milli, gpu_mem = pod.milli, share_mem(node, pod)
    placement = PodPlacement(index, gpus, milli, gpu_mem, pod.cpu, pod.mem, time, slices, compute)
    take(node, placement)
    return placement


def whole_gpus(node: Node, k: int) -> tuple[int, ...]:
    """[Resources] The ``k`` GPUs (devices) a whole pod gets on ``node``, which has them free.

    Without sharing: the k lowest-index wholly free GPUs. [GPU sharing by replicas] "Which
    devices": one pick at a time, the physical GPU with a free replica that has the fewest
    replicas in use (``distributed``) or the most (``packed``), counting this pod's earlier
    picks; ties to the GPU this pod picked from least, then the lowest physical index; within it
    its lowest-index free replica.
    """
    free = node.wholly_free()
    if node.replicas == 1:
        return tuple(free[:k])
    r = node.replicas
    picked: list[int] = []
    for _ in range(k):
        best: tuple[tuple[int, int], int] | None = None  # (key, device)
        for p in range(len(node.gpus) // r):
            replicas = [d for d in range(p * r, p * r + r) if d in free and d not in picked]
            if not replicas:
                continue
            in_use = r - len(replicas)
            mine = sum(1 for d in picked if d // r == p)  # picked from this GPU in this allocation
            key = (-in_use if node.packed else in_use, mine)
            if best is None or key < best[0]:  # strict: ties keep the lowest physical index
                best = (key, replicas[0])
        assert best is not None, "whole_gpus called on a node without k free devices"
        picked.append(best[1])
    return tuple(picked)


def pod_view(pod: Pod, node: Node) -> PodView:
    """The pod as the scorers see it on ``node`` (the GPU memory it would take there included)."""
    taken = 0.0
    if 0 < pod.milli < WHOLE_GPU:
        taken = share_mem(node, pod)
    elif pod.milli >= WHOLE_GPU:
        taken = node.gpu_mem * (pod.milli // WHOLE_GPU)
    percentage = pod.gpu_mem == 0 and node.share_rule == "proportional"
    return PodView(pod.milli, pod.cpu, pod.gpu_mem, pod.mem, taken, percentage)


def node_candidate(node: Node, pod: Pod, tasks: tuple[TaskClass, ...] = ()) -> Candidate:
    """[Resources] Node ``node`` as a scorer sees it if ``pod`` went there."""
    # Every kind of pod removes exactly ``milli`` from its node's free GPU milli ([Dynamic MIG] what
    # it books there).
    gpu_capacity = float(WHOLE_GPU * len(node.gpus))
    free_after = node.free_gpu_milli() - booked_milli(node, pod)
    return Candidate(
        node.index,
        free_after,
        (gpu_capacity - free_after, node.cpu - node.free_cpu + pod.cpu, node.mem - node.free_mem + pod.mem),
        (gpu_capacity, node.cpu, node.mem),
        node.view(),
        pod_view(pod, node),
        tasks,
    )


def gpu_candidate(node: Node, g: int, pod: Pod, tasks: tuple[TaskClass, ...] = ()) -> Candidate:
    """[Resources] GPU ``g`` of ``node`` as a scorer sees it if a shared ``pod`` went there."""
    gpu = node.gpus[g]
    return Candidate(
        g,
        gpu.free_milli - pod.milli,
        (float(WHOLE_GPU - gpu.free_milli + pod.milli), node.gpu_mem - gpu.free_mem + share_mem(node, pod)),
        (float(WHOLE_GPU), node.gpu_mem),
        node.view(),
        pod_view(pod, node),
        tasks,
        gpu=True,
    )


def choose_node(
    cluster: Cluster,
    pod: Pod,
    node_scorer: Scorer,
    node_draw: Callable[[], int],
    tie: Tie = lowest_index,
    tasks: tuple[TaskClass, ...] = (),
    room: Callable[[Node], bool] = lambda node: True,
) -> int | None:
    """[Resources] The node for one pod among the nodes it fits (None: it fits nowhere).

    ``room`` is the nominated-pods filter (:meth:`_Replay.room_beside_nominees`).
    """
    candidates = [node_candidate(n, pod, tasks) for n in cluster if pod_fits(n, pod) and room(n)]
    if not candidates:
        return None
    return node_scorer(candidates, node_draw, tie)


def node_tie(rule: Any, seed: int, node_draw: Callable[[], int]) -> Tie:
    """[Resources] ``node_ties``: the rule that picks among equally scored nodes for one pod.

    ``lowest_index``: the first. ``random``: the smallest :func:`tie_key` keyed by the pod's
    node draw. ``seeded_order``: the smallest keyed by the replay's one draw
    ``draw(seed, 0, 0, 0, DECISION_NODE_ORDER)``, the same for every pod.
    """
    ties = NodeTies[str(getattr(rule, "name", rule))]
    if ties is NodeTies.lowest_index:
        return lowest_index
    if ties is NodeTies.random:
        return lambda tied: keyed_tie(node_draw())(tied)
    return keyed_tie(draw(seed, 0, 0, 0, DECISION_NODE_ORDER))


def task_classes(
    jobs: pl.DataFrame, nodes: pl.DataFrame | list[dict[str, Any]], shapes: Any = None
) -> tuple[TaskClass, ...]:
    """FGD's task classes, models as the cluster's model codes: the typical pods of ``jobs``.

    ``shapes`` (``typical_classes``' answer) replaces the jobs' own typical pods when given. A
    pod's shape (``PodShape``): its CPU, milli per GPU, GPU count and accepted model names joined
    by ``|`` (empty: any model; CPU-only pods: empty); one shape per pod.
    """
    if shapes is None:
        pods: list[PodShape] = []
        for r in jobs.iter_rows(named=True):
            milli = int(r["gpu_milli"])
            num = milli // WHOLE_GPU if milli >= WHOLE_GPU else int(milli > 0)
            models = r.get("gpu_models") or []
            text = "|".join(models) if num > 0 else ""
            pods += [PodShape(int(r["cpu_milli"]), min(milli, WHOLE_GPU), num, text)] * int(r["num_pods"])
        shapes = typical_classes(pods)
    rows = nodes.iter_rows(named=True) if isinstance(nodes, pl.DataFrame) else nodes
    codes = {name: i for i, name in enumerate(sorted({r["gpu_model"] for r in rows} - {None}))}
    out = []
    for shape, popularity in shapes:
        models = None
        if shape.num_gpu > 0 and shape.gpu_type:
            models = frozenset(codes[m] for m in shape.gpu_type.split("|") if m in codes)
        out.append(TaskClass(shape.cpu_milli, shape.num_gpu, shape.gpu_milli, models, popularity))
    return tuple(out)


def rejection_reason(empty: Cluster, pod: Pod, num_pods: int) -> str | None:
    """[Rejection at arrival] The first check the job fails on the EMPTY cluster, or None."""
    if pod.milli > 0 and not any(len(n.gpus) > 0 and model_allowed(n, pod) for n in empty):
        return "no_model"
    if not any(pod_fits(n, pod) for n in empty):
        return "pod_too_large"
    total = 0
    for node in empty:
        # Greedy packing of identical pods on this empty node (capped: a 0-GPU pod on a node with
        # unknown CPU/memory would fit forever).
        alone = [node.copy()]
        alone[0].index = 0
        count = 0
        first = SCORERS["first_fit"]
        while count < num_pods and pod_fits(alone[0], pod):
            place_on(alone, 0, pod, first, lambda: 0, 0.0)
            count += 1
        total += count
    return "gang_too_large" if total < num_pods else None


def fits_gang(cluster: Cluster, pod: Pod, pods: int) -> bool:
    """Would ``pods`` identical pods fit ``cluster`` (first fit on a copy; no draws)?"""
    trial = clone(cluster)
    first = SCORERS["first_fit"]
    for _ in range(pods):
        n = choose_node(trial, pod, first, lambda: 0)
        if n is None:
            return False
        place_on(trial, n, pod, first, lambda: 0, 0.0)
    return True


# --------------------------------------------------------------------------------------------------
# Jobs  [Runs, attempts, checkpoints]
# --------------------------------------------------------------------------------------------------


@dataclass
class Attempt:
    """One run attempt: from its first pod placed to its finish, eviction or the end of the run."""

    number: int
    hold_start: float
    start: float | None  # None: never ran (pod by pod, evicted or left partly placed)
    placements: list[PodPlacement]
    nodes: int
    end_reason: str
    evicted: float | None = None
    end: float = math.nan  # clamped to the end of the run when the results are built
    progress: float = 0.0
    work_lost: float = 0.0
    restart_overhead: float = 0.0
    evicted_by: int | None = None  # [Results] the preemptor's job_id


@dataclass(frozen=True)
class IdleUse:
    """[Idle-resource reclaim] a job's usage (levels while it works, then 0 from ``after`` s into each
    attempt) and its PriorityClass's ReclaimIdleResource annotations (``policy``: it has a class)."""

    gpu: float
    cpu: float
    after: float
    policy: bool
    min_prio: float
    toleration: float
    cpu_window: float
    gpu_window: float
    cpu_threshold: float
    gpu_threshold: float


def quiet(level: float, window: float, threshold: float, start: float, after: float) -> float:
    """[Idle-resource reclaim] "quiet(u, W, h)": the first time the mean over the window is within ``h``."""
    if level <= threshold or window <= 0.0:
        return -math.inf
    if math.isinf(after):
        return math.inf
    return start + after + window - threshold * window / level


def mean_usage(level: float, window: float, start: float, after: float, now: float) -> float:
    """The mean of a resource's usage over (now - window, now] (needs now - window >= start); 0 for an
    empty window (the plugin's query then reads no sample): the definition ``quiet`` solves."""
    if window <= 0.0:
        return 0.0
    active = min(max(start + after - (now - window), 0.0), window)
    return level * active / window


def eligible_from(use: IdleUse, start: float) -> float:
    """[Idle-resource reclaim] rule 5: "eligible"."""
    if use.toleration < 0:
        return math.inf
    return max(
        start + max(use.cpu_window, use.gpu_window, use.toleration),
        quiet(use.cpu, use.cpu_window, use.cpu_threshold, start, use.after),
        quiet(use.gpu, use.gpu_window, use.gpu_threshold, start, use.after),
    )


@dataclass
class Job:
    row: int  # position in the input table
    job_id: int
    submit: float
    duration: float
    num_pods: int
    priority: int
    preemptible: bool
    can_preempt: bool  # preemption_policy != Never
    checkpoint: float
    overhead: float
    pod: Pod
    queue: str  # [Queue row (sampled)] its tenant
    # future, pending, running, terminating, finished, rejected; [Kubelet Topology Manager] backoff (out of
    # the queue after an admission failure), failed
    state: str = "future"
    reject_reason: str | None = None
    key2: float = 0.0  # queue timestamp: submit time, or the requeue time under requeue: back
    placements: list[PodPlacement] = field(default_factory=list)  # the current attempt's pods
    attempts_begun: int = 0
    records: list[Attempt] = field(default_factory=list)
    work_left: float = 0.0
    first_start: float | None = None
    start: float = math.nan  # the current attempt's start
    progress0: float = math.nan  # start + restart overhead: progress begins
    # [Dynamic MIG] "Creation time": progress begins mig_create_s after the restart overhead ends.
    overhead_end: float = math.nan  # start + restart overhead
    finish: float = math.nan
    hold_start: float = math.nan
    nodes_spanned: int = 0  # nodes of the last attempt that ran
    pending_since: float = math.nan
    pending_total: float = 0.0
    lost: float = 0.0
    preemptions: int = 0
    evicted_at: float = math.nan
    waiting: int = 0  # victims it evicted that still terminate
    nominator: Job | None = None
    nominated: list[int] = field(default_factory=list)  # [Nominated nodes] one node per nominated pod
    kai_reserved: bool = False  # [KAI reclaim] its nominations are a KAI preemptor's pipelined pods
    # [GPU sharing by replicas] "Throughput": the running attempt progresses at ``rate`` from
    # ``since`` (>= progress0) on, with ``done`` seconds of work made before ``since``; so
    # progress(t) = done + (t - since) * rate and finish = since + (work_left - done) / rate.
    demand: float = 1.0  # d: share of a GPU one replica of a pod uses alone (sharing_demand)
    rate: float = 1.0
    since: float = math.nan
    done: float = 0.0
    work_done: float = 0.0  # [Results] progress made by the attempts that ended (lost work included)
    delay: float = 0.0  # [Results] integral of (1 - rate / spread) over the progress time up to ``since``
    # [Spreading cost] the running attempt's f (1: one domain at every level, or no cost), fixed at its
    # start and folded into ``rate`` (never with GPU sharing or MIG: refused); the d_L of the last attempt
    # that ran (nvlink domains, racks, spines); spread_delay of the attempts that ended.
    spread: float = 1.0
    domains_spanned: tuple[int, int, int] = (0, 0, 0)
    spread_delay: float = 0.0
    # [Topology-aware scheduling] "Requests": its request (None unless topology_aware is on; a job
    # without one then holds the implied unconstrained request).
    topology: TasRequest | None = None
    # [Kubelet Topology Manager] "Results": kubelet rejections of its placements (TopologyAffinityError).
    admission_failures: int = 0
    # [Kueue quotas] when Kueue last admitted it (by quota alone, or placed); [Kueue waitForPodsReady] its
    # admissions that timed out; whether its quota reservation still counts its unplaced pods.
    admitted_at: float = math.nan
    ready_timeouts: int = 0
    reserved: bool = False
    # [Kueue flavors] the flavor slot its admission assigned to each resource (GPU, CPU, memory).
    flavors: tuple[int, int, int] = (0, 0, 0)
    # [Idle-resource reclaim] its usage and PriorityClass annotations (None unless preemption: reclaim_idle).
    idle: IdleUse | None = None

    @property
    def gpus(self) -> float:
        """GPUs its placed pods hold."""
        return len(self.placements) * self.pod.milli / 1000.0

    def attempt_number(self) -> int:
        """[Draws] The run attempt a pod placed now belongs to (0 for the first)."""
        return self.attempts_begun - 1 if self.placements else self.attempts_begun

    def nodes_held(self) -> int:
        return len({p.node for p in self.placements})

    def overhead_spent(self, t: float) -> float:
        """The restart overhead the running attempt has spent by ``t`` ([Dynamic MIG] the instances'
        creation that follows it is no restart overhead)."""
        return min(t, self.overhead_end) - self.start

    def progress_at(self, t: float) -> float:
        """The running attempt's progress at ``t`` (none during its restart overhead)."""
        return self.done + max(0.0, t - self.since) * self.rate

    def delay_at(self, t: float) -> float:
        """[Results] sharing_delay up to ``t`` (the running attempt's stretch included).

        [Spreading cost] the stretch of spreading is not sharing's: the rate is divided by the attempt's f
        (f / f == 1 exactly; under sharing f == 1, so the rate is sharing's alone).
        """
        return self.delay + max(0.0, t - self.since) * (1.0 - self.rate / self.spread)

    def spread_delay_at(self, t: float) -> float:
        """[Spreading cost] "Results": spread_delay up to ``t``: the attempts that ended, plus the running
        attempt's progress time by ``t`` x (1 - f)."""
        return self.spread_delay + max(0.0, t - self.progress0) * (1.0 - self.spread)

    def set_rate(self, t: float, rate: float) -> None:
        """[GPU sharing by replicas] The job takes ``rate`` at ``t``: the work done is kept, the finish moves.

        t' = max(t, end of the restart overhead); finish = t' + (work left - done) / rate.
        """
        t = max(t, self.progress0)
        self.delay = self.delay_at(t)
        self.done = self.progress_at(t)
        self.since = t
        self.rate = rate
        self.finish = t + (self.work_left - self.done) / rate


def idle_use(r: dict[str, Any]) -> IdleUse:
    """[Idle-resource reclaim] a job row's usage columns and PriorityClass annotations."""
    policy = bool(r.get("reclaim_policy") or False)
    return IdleUse(
        gpu=float(r["gpu_util"]),
        cpu=float(r["cpu_util"]),
        after=float(r["idle_after"]),
        policy=policy,
        min_prio=float(r["minimum_preemptable_priority"]) if policy else 0.0,
        toleration=float(r["toleration_seconds"]) if policy else 0.0,
        cpu_window=float(r["cpu_idle_seconds"]) if policy else 0.0,
        gpu_window=float(r["gpu_idle_seconds"]) if policy else 0.0,
        cpu_threshold=float(r["cpu_idle_usage_threshold"]) if policy else 0.0,
        gpu_threshold=float(r["gpu_idle_usage_threshold"]) if policy else 0.0,
    )


def _jobs_from_table(jobs: pl.DataFrame, policy: Policy | None = None) -> list[Job]:
    out = []
    columns = set(jobs.columns)
    sharing = policy is not None and policy.gpu_sharing is not GpuSharing.none
    # [MIG instances] instances are devices too: a fractional pod takes one.
    mig = policy is not None and policy.mig_strategy is MigStrategy.single
    mig_demand = policy.mig_demand.name if mig and policy is not None else "any"
    for row, r in enumerate(jobs.iter_rows(named=True)):
        milli = int(r["gpu_milli"])
        models = r["gpu_models"]
        # [GPU sharing by replicas] "Demand": a fractional pod asks 1 replica, a whole pod k = m / 1000;
        # d = min(1, m / 1000) of the trace under sharing_demand: trace, else 1.
        demand = 1.0
        if policy is not None and policy.sharing_demand is SharingDemand.trace:
            demand = min(1.0, milli / WHOLE_GPU)
        device_milli = WHOLE_GPU if (sharing or mig) and 0 < milli < WHOLE_GPU else milli
        pod = Pod(
            milli=device_milli,
            gpu_mem=int(r["gpu_mem_mib"] or 0),  # null gpu_mem_mib -> 0
            cpu=int(r["cpu_milli"]),
            mem=int(r["mem_mib"]),
            models=None if models is None else frozenset(models),  # null -> any model
            mig_profile=r.get("mig_profile"),
            mig_demand=mig_demand,
            trace_milli=milli,
        )
        gpus = int(r["num_pods"]) * milli / 1000.0  # the trace's GPUs (the workload's default)
        overhead = r["restart_overhead"] if "restart_overhead" in columns else None
        if overhead is None:
            overhead = LUCID_SMALL if gpus <= LUCID_SMALL_GPUS else LUCID_LARGE
        preemption = r["preemption_policy"] if "preemption_policy" in columns else "PreemptLowerPriority"
        if preemption not in ("PreemptLowerPriority", "Never"):
            raise ValueError(f"unknown preemption_policy {preemption!r} (job {r['job_id']})")
        checkpoint = float(r["checkpoint_interval"]) if "checkpoint_interval" in columns else 0.0
        topology = None
        if policy is not None and policy.topology_aware is not TopologyAware.none:
            # [Topology-aware scheduling] "Requests": from the jobs table's topology_mode / topology_level.
            topology = topology_request(
                r.get("topology_mode"),
                r.get("topology_level"),
                int(r["job_id"]),
                r.get("topology_slice_level"),
                r.get("topology_slice_size"),
            )
        out.append(
            Job(
                row=row,
                job_id=int(r["job_id"]),
                submit=float(r["submit_time"]),
                duration=float(r["duration"]),
                num_pods=int(r["num_pods"]),
                priority=int(r["priority"]),
                preemptible=bool(r["preemptible"]),
                can_preempt=preemption != "Never",
                checkpoint=checkpoint,
                overhead=float(overhead),
                pod=pod,
                queue=str(r["queue"]) if r.get("queue") is not None else "default",
                key2=float(r["submit_time"]),
                work_left=float(r["duration"]),
                demand=demand,
                topology=topology,
                idle=idle_use(r)
                if policy is not None and policy.preemption is Preemption.reclaim_idle
                else None,
            )
        )
    if policy is not None and policy.topology_aware is TopologyAware.volcano:
        check_volcano_requests(jobs)
    return out


# --------------------------------------------------------------------------------------------------
# GPU sharing by replicas  [GPU sharing by replicas]
# --------------------------------------------------------------------------------------------------

#: Node scorers of other sharing systems, refused with replicas: FGD's five, HAMi's, KAI's, gpushare's.
NOT_WITH_REPLICAS = frozenset(
    {
        "fgd",
        "dot_product",
        "gpu_packing",
        "gpu_clustering",
        "best_fit_cpu_gpu",
        "hami_binpack",
        "hami_spread",
        "kai_binpack",
        "best_fit_memory",
    }
)


def check_gpu_sharing(policy: Policy) -> None:
    """The settings the spec refuses (config errors): ValueError naming the key."""
    sharing = policy.gpu_sharing is not GpuSharing.none
    if not 0.0 <= policy.switch_overhead < 1.0:
        raise ValueError("switch_overhead must be in [0, 1)")
    if not sharing:
        if policy.replicas != 1:
            raise ValueError("replicas must be 1 without gpu_sharing")
        if policy.replica_allocation is not ReplicaAllocation.distributed:
            raise ValueError("replica_allocation needs gpu_sharing")
        if policy.sharing_demand is not SharingDemand.whole and policy.mig_strategy is MigStrategy.none:
            raise ValueError("sharing_demand needs gpu_sharing or mig_strategy: single or dynamic")
        if policy.switch_overhead != 0.0:
            raise ValueError("switch_overhead needs gpu_sharing: time_slicing")
        if policy.fail_requests_greater_than_one is not None:
            raise ValueError("fail_requests_greater_than_one needs gpu_sharing")
        return
    if policy.replicas < 2:
        raise ValueError("gpu_sharing takes replicas >= 2")
    if policy.backfill is Backfill.easy:
        raise ValueError("gpu_sharing takes no EASY backfill (sharers stretch run times)")
    if policy.gpu_sharing is GpuSharing.mps and policy.switch_overhead != 0.0:
        raise ValueError("switch_overhead is for gpu_sharing: time_slicing only")
    if policy.gpu_sharing is GpuSharing.mps and policy.replicas > 100:
        # floor(100 / R) = 0: every client capped at no SM at all, nothing would ever progress.
        raise ValueError("gpu_sharing: mps takes replicas <= 100")
    if policy.device_split_count != 0:
        raise ValueError("gpu_sharing does not take device_split_count")
    if policy.shared_gpu_memory.name != "none":
        raise ValueError("gpu_sharing does not take shared_gpu_memory")
    if policy.gpu_placement != "first_fit":
        raise ValueError("gpu_sharing takes gpu_placement: first_fit (the device plugin picks devices)")
    if policy.node_placement in NOT_WITH_REPLICAS:
        raise ValueError(f"gpu_sharing does not take node_placement: {policy.node_placement}")


def check_mig(policy: Policy) -> None:
    """[MIG instances] [Dynamic MIG] The settings the spec refuses (config errors): ValueError naming it."""
    dynamic = policy.mig_strategy is MigStrategy.dynamic
    # [MIG re-partitioning] "Settings": idle needs mixed; its settings need idle; a finite downtime >= 0.
    idle = policy.mig_reconfigure is MigReconfigure.idle
    if idle and policy.mig_strategy is not MigStrategy.mixed:
        raise ValueError("mig_reconfigure: idle needs mig_strategy: mixed")
    if not idle and policy.mig_reconfigure_s is not None:
        raise ValueError("mig_reconfigure_s needs mig_reconfigure: idle")
    if not idle and policy.mig_reconfigure_layouts is not None:
        raise ValueError("mig_reconfigure_layouts needs mig_reconfigure: idle")
    downtime = policy.mig_reconfigure_s
    if downtime is not None and not (math.isfinite(downtime) and downtime >= 0.0):
        raise ValueError("mig_reconfigure_s must be a finite number of seconds >= 0")
    if not dynamic:
        # [Dynamic MIG] its settings are refused without it.
        if policy.mig_placement is not MigPlacement.hami:
            raise ValueError("mig_placement needs mig_strategy: dynamic")
        if policy.mig_create_s != 0.0:
            raise ValueError("mig_create_s needs mig_strategy: dynamic")
    if policy.mig_strategy is MigStrategy.none:
        if policy.mig_demand is not MigDemand.any:
            raise ValueError("mig_demand needs mig_strategy: single or dynamic")
        return
    strategy = policy.mig_strategy.name
    if policy.backfill is Backfill.easy:
        raise ValueError(f"mig_strategy: {strategy} takes no EASY backfill (run times are not full speed)")
    if policy.gpu_sharing is not GpuSharing.none:
        raise ValueError(f"mig_strategy: {strategy} takes gpu_sharing: none")
    if policy.device_split_count != 0 or policy.shared_gpu_memory.name != "none":
        raise ValueError(f"mig_strategy: {strategy} takes no fractional sharing")
    if policy.gpu_placement != "first_fit":
        raise ValueError(f"mig_strategy: {strategy} takes gpu_placement: first_fit")
    # [MIG FGD] fgd scores MIG slices under dynamic MIG (whatever the start rule).
    slices_fgd = dynamic and policy.node_placement == "fgd"
    if policy.node_placement in NOT_WITH_REPLICAS and not slices_fgd:
        raise ValueError(f"mig_strategy: {strategy} does not take node_placement: {policy.node_placement}")
    if dynamic or policy.mig_strategy is MigStrategy.mixed:
        # [Dynamic MIG] "Refused with mig_strategy dynamic or mixed".
        if policy.preemption is not Preemption.none:
            raise ValueError(f"mig_strategy: {strategy} takes preemption: none (not modelled yet)")
        if policy.mig_demand is not MigDemand.smallest_fit:
            raise ValueError(f"mig_strategy: {strategy} takes mig_demand: smallest_fit")
        if not (math.isfinite(policy.mig_create_s) and policy.mig_create_s >= 0.0):
            raise ValueError("mig_create_s must be a finite number of seconds >= 0")


def gpu_rates(policy: Policy, demands: list[float]) -> list[float]:
    """[GPU sharing by replicas] "Throughput": the rate of each process on one physical GPU.

    ``demands``: D = w x d of each active process on the GPU. time_slicing: capacity 1 alone,
    1 - switch_overhead when shared, water-filled in increasing D (each process gets
    min(D, left / processes left); processes of equal D get the same share, as max-min fairness
    gives them, not the float noise of a second division); rate min(1, share / D). mps: each
    process capped at s = floor(100 / R) / 100 alone or not: rate min(1, s / D).
    """
    if policy.gpu_sharing is GpuSharing.mps:
        cap = (100 // policy.replicas) / 100
        return [min(1.0, cap / d) for d in demands]
    n = len(demands)
    left = 1.0 if n == 1 else 1.0 - policy.switch_overhead
    shares = [0.0] * n
    order = sorted(range(n), key=lambda i: demands[i])
    previous: tuple[float, float] | None = None  # (D, share) of the previous process
    for position, i in enumerate(order):
        if previous is not None and previous[0] == demands[i]:
            share = previous[1]
        else:
            share = min(demands[i], left / (n - position))
        shares[i] = share
        left -= share
        previous = (demands[i], share)
    return [min(1.0, shares[i] / demands[i]) for i in range(n)]


# --------------------------------------------------------------------------------------------------
# What spreading costs  [Spreading cost]
# --------------------------------------------------------------------------------------------------

#: [Spreading cost] "Levels": the nodes table's columns, in the order of the results' *_spanned columns
#: and of the policy's factors.
SPREAD_LEVELS: tuple[tuple[str, str], ...] = (
    ("nvlink_domain", "spread_rate_nvlink"),
    ("rack", "spread_rate_rack"),
    ("spine", "spread_rate_spine"),
)


def check_spread(policy: Policy) -> None:
    """[Spreading cost] "Refused": a factor outside (0, 1]; a factor below 1 with GPU sharing or MIG."""
    for _, key in SPREAD_LEVELS:
        factor = getattr(policy, key)
        if not 0.0 < factor <= 1.0:  # NaN fails too
            raise ValueError(f"{key} must be in (0, 1]")
        if factor < 1.0 and policy.gpu_sharing is not GpuSharing.none:
            raise ValueError(f"{key} below 1 takes gpu_sharing: none (sharing sets the rates)")
        if factor < 1.0 and policy.mig_strategy is not MigStrategy.none:
            raise ValueError(f"{key} below 1 takes mig_strategy: none (MIG sets the rates)")


def domains_spanned(placements: list[PodPlacement], topology: list[tuple[int, ...]]) -> tuple[int, int, int]:
    """[Spreading cost] "Rate": d_L, the distinct domains at each level of the pods' nodes (every pod's
    node, as ``nodes_spanned`` counts them; ids compared as given, level by level)."""
    nodes = {p.node for p in placements}
    d = [len({topology[n][level] for n in nodes}) for level in range(len(SPREAD_LEVELS))]
    return d[0], d[1], d[2]


def spread_rate(policy: Policy, spanned: tuple[int, int, int]) -> float:
    """[Spreading cost] "Rate": f = product over the levels with d_L > 1 of ``spread_rate_L`` (in level
    order nvlink, rack, spine; 1 when none is spanned)."""
    f = 1.0
    for d, (_, key) in zip(spanned, SPREAD_LEVELS, strict=True):
        if d > 1:
            f *= getattr(policy, key)
    return f


# --------------------------------------------------------------------------------------------------
# Topology-aware scheduling  [Topology-aware scheduling]
# --------------------------------------------------------------------------------------------------

#: [Topology-aware scheduling] "Tree": "Levels outermost first: spine, rack, nvlink_domain, node" (the
#: names a jobs table's ``topology_level`` takes; a level's number is its position here).
TAS_LEVELS: tuple[str, ...] = ("spine", "rack", "nvlink_domain", "node")
TAS_NODE_LEVEL = len(TAS_LEVELS) - 1
#: [Topology-aware scheduling] "Requests": the modes a jobs table's ``topology_mode`` takes.
TAS_MODES: tuple[str, ...] = ("required", "preferred", "unconstrained")

#: A domain: its path from the top (Kueue's domain ID), e.g. ``(spine, rack)`` for a rack; a node's is
#: ``(spine, rack, nvlink_domain, node index)``. Tuples of ints compare as the spec's "id order".
Domain = tuple[int, ...]


@dataclass(frozen=True)
class TasRequest:
    """[Topology-aware scheduling] "Requests": ``required`` L, ``preferred`` L or ``unconstrained``.

    ``level`` is a position in :data:`TAS_LEVELS`; "Unconstrained requests are searched at the node
    level", so an unconstrained request holds the node level whatever the table names. "Slices": every
    ``slice_size`` pods in one domain of ``slice_level`` (the node and 1: no slices).
    """

    mode: str
    level: int
    slice_level: int = TAS_NODE_LEVEL
    slice_size: int = 1

    @property
    def sliced(self) -> bool:
        """[Topology-aware scheduling] "Slices": a request with slices (a level above the node, or more
        than one pod a slice)."""
        return self.slice_level < TAS_NODE_LEVEL or self.slice_size > 1


def check_topology_aware(policy: Policy) -> None:
    """[Topology-aware scheduling] "Gang mode only; refused (config errors naming
    ``scheduler.topology_aware``) with ``gang: pod_by_pod``, ``backfill: easy`` and
    ``preemption: priority``". [KAI topology] "Same ... refusals as Kueue's; ``tas_profile`` is Kueue's
    (refused unless ``mixed``) and ``node_placement: random`` is refused". [Volcano HyperNode] "Same ...
    refusals ...; ``tas_profile`` refused unless ``mixed``", "``node_placement: random`` is refused"."""
    system = policy.topology_aware
    if system is TopologyAware.none:
        return
    if system not in (TopologyAware.kueue, TopologyAware.kai, TopologyAware.volcano):
        # A system not written here must not silently run as another.
        raise ValueError(f"topology_aware: {system.name} is not in the reference")
    name = system.name
    if policy.gang is GangMode.pod_by_pod:
        raise ValueError(f"topology_aware: {name} assigns whole gangs: it takes gang: gang, not pod_by_pod")
    if policy.backfill is Backfill.easy:
        raise ValueError(f"topology_aware: {name} is not modelled with backfill: easy")
    if policy.preemption is not Preemption.none:
        raise ValueError(f"topology_aware: {name} is not modelled with preemption: priority")
    if system is not TopologyAware.kueue and policy.node_placement == "random":
        raise ValueError(f"node_placement: random is refused under topology_aware: {name} (nodes are ranked)")
    if system is not TopologyAware.kueue and policy.tas_profile is not TasProfile.mixed:
        raise ValueError(f"tas_profile is Kueue's: {policy.tas_profile.name} is refused under {name}")


def topology_request(
    mode: str | None,
    level: str | None,
    job_id: int,
    slice_level: str | None = None,
    slice_size: int | None = None,
) -> TasRequest:
    """[Topology-aware scheduling] "Requests": the job's request from its ``topology_mode`` /
    ``topology_level``: "``required`` L, ``preferred`` L, ``unconstrained``, or none". "No request = Kueue's
    implied request for a ClusterQueue of TAS flavors: unconstrained. Unconstrained requests are searched at
    the node level." "Slices": ``topology_slice_level`` / ``topology_slice_size``, "both or neither, the
    size at least 1, the level at or below a required or preferred request's"; "a slice request without a
    mode (or unconstrained) is Kueue's slice-only request".

    A required or preferred mode names its level L; a level without a mode, or a value outside
    :data:`TAS_MODES` / :data:`TAS_LEVELS`, is an error (the workload's rules for a trace's own columns).
    """
    if mode is not None and mode not in TAS_MODES:
        raise ValueError(f"job {job_id}: unknown topology_mode {mode!r}")
    for column, named in (("topology_level", level), ("topology_slice_level", slice_level)):
        if named is not None and named not in TAS_LEVELS:
            raise ValueError(f"job {job_id}: unknown {column} {named!r}")
    if (slice_level is None) != (slice_size is None):
        raise ValueError(f"job {job_id}: a slice level and a slice size go together")
    slices = (TAS_NODE_LEVEL, 1)
    if slice_level is not None and slice_size is not None:
        if slice_size < 1:
            raise ValueError(f"job {job_id}: a slice holds at least 1 pod")
        slices = (TAS_LEVELS.index(slice_level), slice_size)
    if mode is None:
        if level is not None:
            raise ValueError(f"job {job_id}: a topology_level needs a topology_mode")
        return TasRequest("unconstrained", TAS_NODE_LEVEL, *slices)  # the implied request
    if mode == "unconstrained":
        return TasRequest(mode, TAS_NODE_LEVEL, *slices)
    if level is None:
        raise ValueError(f"job {job_id}: a {mode} request needs a topology_level")
    if slices[0] < TAS_LEVELS.index(level):
        raise ValueError(f"job {job_id}: the slice level is above the request's")
    return TasRequest(mode, TAS_LEVELS.index(level), *slices)


@dataclass(frozen=True)
class DomainTree:
    """[Topology-aware scheduling] "Tree": each node's path (spine, rack, nvlink_domain, node index).

    "A domain is its path from the top (Kueue's domain ID), so a rack id under two spines is two
    racks. Domains are numbered in path order (spine, rack, nvlink_domain, node index, compared as
    numbers)": a domain of level L is a node's path cut after L, and id order is tuple order.
    """

    paths: tuple[Domain, ...]  # by node index

    def domains(self, level: int) -> list[Domain]:
        """The domains of ``level``, in id order."""
        return sorted({path[: level + 1] for path in self.paths})

    def children(self, domain: Domain) -> list[Domain]:
        """The domains one level below ``domain`` (the paths that go through it), in id order."""
        depth = len(domain)
        return sorted({path[: depth + 1] for path in self.paths if path[:depth] == domain})

    def states(self, counts: Sequence[float]) -> dict[Domain, float]:
        """Spec, "Counts (phase 1)": state(node) = ``counts[node]``; state(domain) = the sum over its
        children (every node's count added to each domain on its path)."""
        state: dict[Domain, float] = {}
        for path, count in zip(self.paths, counts, strict=True):
            for level in range(len(TAS_LEVELS)):
                state[path[: level + 1]] = state.get(path[: level + 1], 0) + count
        return state


def domain_tree(nodes: list[dict[str, Any]]) -> DomainTree:
    """[Topology-aware scheduling] "Tree": the nodes table's spine, rack and nvlink_domain, then the node."""
    return DomainTree(
        tuple(
            (int(row["spine"]), int(row["rack"]), int(row["nvlink_domain"]), index)
            for index, row in enumerate(nodes)
        )
    )


def pods_fitting(node: Node, pod: Pod) -> float:
    """How many identical ``pod`` fit ``node`` now: packed greedily (first fit) on a copy of the node, as
    [Rejection at arrival] counts them; the node is untouched.

    [Resources] "UNKNOWN_CAPACITY never constrains": a GPU-less pod that asks no CPU (memory) or sits on a
    node of unknown CPU (memory) fits without bound: ``math.inf``.
    """
    if not pod_fits(node, pod):
        return 0
    cpu_free = pod.cpu == 0 or math.isinf(node.free_cpu)
    if pod.milli == 0 and cpu_free and (pod.mem == 0 or math.isinf(node.free_mem)):
        return math.inf
    alone = [node.copy()]
    alone[0].index = 0
    count = 0
    first = SCORERS["first_fit"]
    while pod_fits(alone[0], pod):
        place_on(alone, 0, pod, first, lambda: 0, 0.0)
        count += 1
    return count


#: [Topology-aware scheduling] "Counts (phase 1)": "at most 2^40 (a pod asking nothing a node has a limit on
#: fits it without end; Kueue's own count is bounded by the ``pods`` resource, the kubelet's maxPods)".
TAS_COUNT_CAP = 2**40


def tas_count(node: Node, pod: Pod) -> int:
    """[Topology-aware scheduling] "Counts (phase 1)": state(node) = "pods of the job that fit the node now
    (the gang rule's per-node capacity, NOT capped at the job's pods: Kueue's ``CountIn``), at most 2^40"."""
    return int(min(pods_fitting(node, pod), TAS_COUNT_CAP))


def slice_units(tree: DomainTree, state: dict[Domain, float], request: TasRequest) -> dict[Domain, int]:
    """[Topology-aware scheduling] "Slices": units(d) = "state(d) // slice size at the slice level, the sum
    over its children above it, state(d) below it" (Kueue's ``sliceState``); without slices units = state."""
    units: dict[Domain, int] = {}
    for level in range(TAS_NODE_LEVEL, -1, -1):
        for d in tree.domains(level):
            if level > request.slice_level:
                units[d] = int(state[d])
            elif level == request.slice_level:
                units[d] = int(state[d]) // request.slice_size
            else:
                units[d] = sum(units[child] for child in tree.children(d))
    return units


def sort_domains(
    domains: list[Domain], units: dict[Domain, int], state: dict[Domain, float], least: bool
) -> list[Domain]:
    """[Topology-aware scheduling] "Sorting": "sorted(list) = the list's domains with units > 0, by units
    descending, then state ascending, then id; under LeastFreeCapacity, by units ascending, then state
    ascending, then id" (without slices units = state, so: by state, ties by id)."""
    held = [d for d in domains if units[d] > 0]
    if least:
        return sorted(held, key=lambda d: (units[d], state[d], d))
    return sorted(held, key=lambda d: (-units[d], state[d], d))


def best_fit_index(listed: list[Domain], units: dict[Domain, int], start: int, n: int) -> int:
    """[Topology-aware scheduling] "BestFit index bf(list, from, n)": in ``listed[start:]``
    (``listed[start]`` holding ``n``), "the first of the smallest units that still hold n"."""
    holding = [i for i in range(start, len(listed)) if units[listed[i]] >= n]
    assert holding and holding[0] == start, "bf is asked only where list[from] holds n"
    tightest = min(units[listed[i]] for i in holding)
    return next(i for i in holding if units[listed[i]] == tightest)


@dataclass(frozen=True)
class TasSearch:
    """[Topology-aware scheduling] "Profile": how one request is searched.

    ``best_fit``: sorted descending with the BestFit swap; ``least``: sorted ascending
    (LeastFreeCapacity, never with the swap); neither: descending without the swap
    (MostFreeCapacity).
    """

    best_fit: bool
    least: bool


def tas_search(profile: TasProfile, request: TasRequest) -> TasSearch:
    """[Topology-aware scheduling] "Profile": ``mixed`` (default): BestFit for required and preferred,
    LeastFreeCapacity for unconstrained; ``best_fit``: BestFit for all; ``least_free_capacity``:
    LeastFreeCapacity for all (no BestFit swap); ``most_free_capacity``: descending, no swap."""
    if profile is TasProfile.mixed:
        if request.mode == "unconstrained":
            return TasSearch(best_fit=False, least=True)
        return TasSearch(best_fit=True, least=False)
    if profile is TasProfile.best_fit:
        return TasSearch(best_fit=True, least=False)
    if profile is TasProfile.least_free_capacity:
        return TasSearch(best_fit=False, least=True)
    return TasSearch(best_fit=False, least=False)


def find_level(
    tree: DomainTree,
    units: dict[Domain, int],
    state: dict[Domain, float],
    request: TasRequest,
    count: int,
    search: TasSearch,
) -> tuple[int, list[Domain]] | None:
    """[Topology-aware scheduling] "Level search (phase 2a)": the level the assignment is made at and its
    domains, in pick order (None: no fit now). ``count``: the job's units ("pods, or its slices: pods //
    slice size")."""
    # "Slices": "a slice-only request starts at the top level, unconstrained".
    level = 0 if request.sliced and request.mode == "unconstrained" else request.level
    while True:
        # "S = sorted(domains of L). None: no fit."
        listed = sort_domains(tree.domains(level), units, state, search.least)
        if not listed:
            return None
        # "Under LeastFreeCapacity, the first domain of S (the least free) whose units >= count, if any, is
        # chosen: the assignment is made at L on it."
        if search.least:
            holding = [d for d in listed if units[d] >= count]
            if holding:
                return level, [holding[0]]
        # "Else top = S[0]; with BestFit and units(S[0]) >= count, top = S[bf(S, 0, count)]."
        top = listed[0]
        if search.best_fit and units[listed[0]] >= count:
            top = listed[best_fit_index(listed, units, 0, count)]
        # "If units(top) >= count: the assignment is made at L on [top]."
        if units[top] >= count:
            return level, [top]
        # "Else: required -> no fit (the job waits); preferred and L is not the top level -> search
        # level L-1"
        if request.mode == "required":
            return None
        if request.mode == "preferred" and level > 0:
            level -= 1
            continue
        # "otherwise (top level, or unconstrained) take S greedily: i = 0, remaining = count; while
        # remaining > 0 and i < |S|: pick S[i], or with BestFit and units(S[i]) >= remaining pick
        # S[bf(S, i, remaining)]; remaining -= units(S[i]); i++."
        picked: list[Domain] = []
        remaining, i = count, 0
        while remaining > 0 and i < len(listed):
            pick = listed[i]
            if search.best_fit and units[listed[i]] >= remaining:
                pick = listed[best_fit_index(listed, units, i, remaining)]
            picked.append(pick)
            remaining -= units[listed[i]]
            i += 1
        # "remaining > 0 -> no fit; else the assignment is made at L on the picked domains, in pick order."
        if remaining > 0:
            return None
        return level, picked


def counts_to_minimum(
    listed: list[Domain], units: dict[Domain, int], count: int, search: TasSearch
) -> list[tuple[Domain, int]]:
    """[Topology-aware scheduling] "Counts to minimum": "walking a list in order with remaining = count:
    with BestFit and units(d) >= remaining, d = list[bf(list, i, remaining)]; if units(d) >= remaining, d
    is assigned ``remaining`` and the walk stops; else d is assigned units(d), remaining -= units(d). The
    assigned domains are kept, in walk order." Returns the kept domains with their units."""
    kept: list[tuple[Domain, int]] = []
    remaining = count
    for i, d in enumerate(listed):
        if search.best_fit and units[d] >= remaining:
            d = listed[best_fit_index(listed, units, i, remaining)]
        if units[d] >= remaining:
            kept.append((d, remaining))
            return kept
        kept.append((d, units[d]))  # finite: less than remaining
        remaining -= units[d]
    raise AssertionError("the listed domains hold the job's units by construction")


def kueue_assignment(
    tree: DomainTree, counts: Sequence[float], request: TasRequest, pods: int, profile: TasProfile
) -> dict[int, int] | None:
    """[Topology-aware scheduling] The job's assignment: node index -> pods, or None (no fit now).

    ``counts``: "Counts (phase 1)", the pods of the job each node holds now, "NOT capped at the job's
    pods: Kueue's ``CountIn``", at most 2^40 (:func:`tas_count`).
    """
    search = tas_search(profile, request)
    state = tree.states(counts)
    units = slice_units(tree, state, request)
    count = pods // request.slice_size
    found = find_level(tree, units, state, request, count, search)
    if found is None:
        return None
    level, chosen = found
    # "Descent (phase 2b). The chosen domains get counts to minimum; then level by level down to the
    # slice level (the nodes without slices): the children of the kept domains (their phase-1 units) are
    # sorted and get counts to minimum."
    kept = counts_to_minimum(chosen, units, count, search)
    while level < request.slice_level:
        children = [child for domain, _ in kept for child in tree.children(domain)]
        kept = counts_to_minimum(sort_domains(children, units, state, search.least), units, count, search)
        level += 1
    # "A kept domain holds its units x slice size pods. Below the slice level, each kept domain's pods go
    # to its own children: sorted least first (units = state there) and counts to minimum of its pods."
    placed = [(domain, got * request.slice_size) for domain, got in kept]
    while level < TAS_NODE_LEVEL:
        placed = [
            share
            for domain, held in placed
            for share in counts_to_minimum(
                sort_domains(tree.children(domain), units, state, True), units, held, search
            )
        ]
        level += 1
    # "The kept nodes and their counts are the assignment."
    return {domain[-1]: got for domain, got in placed}


def level_holds(tree: DomainTree, counts: Sequence[float], request: TasRequest, pods: int) -> bool:
    """[Topology-aware scheduling] "Rejection at arrival": does one domain of the request's level hold
    the job (a required request), or all top-level domains together its slices (a sliced one), each node
    holding ``counts[node]``?"""
    state = tree.states(counts)
    units = slice_units(tree, state, request)
    count = pods // request.slice_size
    if request.mode == "required":
        return any(units[d] >= count for d in tree.domains(request.level))
    return sum(units[d] for d in tree.domains(0)) >= count


# --------------------------------------------------------------------------------------------------
# KAI Scheduler's topology plugin  [KAI topology]
# --------------------------------------------------------------------------------------------------

#: [KAI topology] "Share": "(1000 when free <= 0)" (KAI's ``requiredResourceNotInDomainRatio``).
KAI_NO_ROOM_SHARE = 1000.0


def pod_asks(pod: Pod) -> tuple[int, int, int]:
    """[KAI topology] "Share": what one pod asks of each resource: "GPU milli per pod = 1000 k or
    gpu_milli; cpu_milli; mem_mib" (``pod.milli`` is 1000 k for a pod of k whole GPUs)."""
    return (pod.milli, pod.cpu, pod.mem)


def free_resources(node: Node, pod: Pod) -> tuple[float, float, float]:
    """[KAI topology] "Share": a node's "free GPU = 1000 x its wholly free GPUs for a whole-GPU job (the free
    milli of its GPUs for a fractional one), free CPU milli, free memory" (``inf`` when unknown:
    [Resources] "UNKNOWN_CAPACITY never constrains")."""
    whole = pod.milli >= WHOLE_GPU
    gpu = WHOLE_GPU * len(node.wholly_free()) if whole else node.free_gpu_milli()
    return (float(gpu), node.free_cpu, node.free_mem)


def domain_nodes(tree: DomainTree, domain: Domain) -> list[int]:
    """The node indices under ``domain``, in id (path) order."""
    return sorted(
        (n for n, path in enumerate(tree.paths) if path[: len(domain)] == domain), key=tree.paths.__getitem__
    )


def kai_share(free: tuple[float, float, float], pod: Pod, pods: int) -> float:
    """[KAI topology] "Share": "max over the resources the pod asks ... of pods x ask / free (1000 when free
    <= 0)" (0 when the pod asks nothing). "A node whose CPU or memory capacity the source does not give is
    unbounded there: a domain holding one has no share of that resource (it is left out of the max)": its
    free sum is ``inf`` and pods x ask / inf = 0, which leaves the max (>= 0) as it is."""
    share = 0.0
    for ask, room in zip(pod_asks(pod), free, strict=True):
        if ask <= 0:
            continue
        share = max(share, KAI_NO_ROOM_SHARE if room <= 0 else pods * ask / room)
    return share


def kai_sorted_tree(tree: DomainTree, share: dict[Domain, float], depth: int) -> list[list[Domain]]:
    """[KAI topology] "Sorted tree (down to L)": level by level from the spines down to ``depth``: "the
    spines sorted by share descending, ties by id; each next level's list = for each domain of the level
    above, in that list's order, its children sorted the same way (parent by parent, not one sort of the
    whole level)"."""

    def by_share(domains: list[Domain]) -> list[Domain]:
        return sorted(domains, key=lambda d: (-share[d], d))

    levels = [by_share(tree.domains(0))]
    for _ in range(depth):
        levels.append([child for parent in levels[-1] for child in by_share(tree.children(parent))])
    return levels


def kai_node_set(
    tree: DomainTree, levels: list[list[Domain]], state: dict[Domain, float], request: TasRequest, pods: int
) -> list[int] | None:
    """[KAI topology] "Node set": the nodes (id order) of the first candidate that fits, or None (the job
    waits).

    "Levels from L up (L, L-1, ..., spine; then the whole cluster for a preferred request); inside a level
    the sorted-tree order; the first domain that fits is the node set." "Fit. ... a domain fits when the sum
    over its nodes is >= the job's pods ...; the whole cluster fits when the sum over all nodes does."
    "Requests. ``required`` L: candidate levels L only. ``preferred`` L: L, then every level above it, then
    the whole cluster."
    """
    candidate_levels = [request.level] if request.mode == "required" else range(request.level, -1, -1)
    for level in candidate_levels:
        for domain in levels[level]:
            if state[domain] >= pods:
                return domain_nodes(tree, domain)
    if request.mode == "preferred" and sum(state[d] for d in tree.domains(0)) >= pods:
        return domain_nodes(tree, ())
    return None


def kai_topology_scores(levels: list[list[Domain]], level: int) -> dict[Domain, int]:
    """[KAI topology] "Pods": "Topology score (preferred requests only): floor(10 (i + 1) / n) for a node
    whose level-L domain is i-th (from 0) of the n level-L domains in the sorted-tree order: more free
    first"."""
    listed = levels[level]
    return {domain: 10 * (i + 1) // len(listed) for i, domain in enumerate(listed)}


# --------------------------------------------------------------------------------------------------
# Volcano's network-topology-aware scheduling, hard mode  [Volcano HyperNode]
# --------------------------------------------------------------------------------------------------

#: [Volcano HyperNode] "HyperNodes. The domains above the node: tier 1 = nvlink_domain, tier 2 = rack,
#: tier 3 = spine": a tree level by its tier.
VOLCANO_TIER_LEVELS: dict[int, int] = {
    1: TAS_LEVELS.index("nvlink_domain"),
    2: TAS_LEVELS.index("rack"),
    3: TAS_LEVELS.index("spine"),
}


def check_volcano_requests(jobs: pl.DataFrame) -> None:
    """[Volcano HyperNode] "Requests. ... Refused (input errors naming the jobs column and row): ``required``
    at level ``node`` (no HyperNode tier there)" and slices ("Kueue's")."""
    rows = list(jobs.iter_rows(named=True))
    for row, r in enumerate(rows, start=1):
        if r.get("topology_slice_level") is not None:
            raise ValueError(f"jobs row {row} (job {r['job_id']}): slices under volcano")
    for row, r in enumerate(rows, start=1):
        if r.get("topology_mode") == "required" and r.get("topology_level") == "node":
            raise ValueError(f"jobs row {row} (job {r['job_id']}): topology_level 'node' under volcano")


def node_allocatable(node: Node) -> tuple[float, float, float]:
    """[Volcano HyperNode] "Choice": a node's allocatable GPU milli (1000 per GPU), CPU and memory (``inf``
    when unknown)."""
    return (float(WHOLE_GPU * len(node.gpus)), node.cpu, node.mem)


def volcano_binpack(nodes: list[Node], pod: Pod, pods: int) -> float:
    """[Volcano HyperNode] "Choice": the HyperNode's binpack score for the whole gang.

    "over the resources the gang asks (GPU milli: pods x (1000 k or gpu_milli); CPU milli; memory), s_r =
    (used_r + asked_r) / allocatable_r with used = allocatable - free (free GPU as in KAI's share: 1000 per
    wholly free GPU for a whole-GPU job), score = mean of s_r (weight 1 each ...); 0 when some used_r +
    asked_r > allocatable_r". "A CPU or memory allocatable the source does not give (on some node of the
    HyperNode) is unbounded: s_r = 0, weight kept" (the sum is ``inf``).
    """
    total, weights = 0.0, 0
    for r, ask in enumerate(pod_asks(pod)):
        asked = pods * ask
        if asked <= 0:
            continue
        allocatable = sum(node_allocatable(n)[r] for n in nodes)
        weights += 1
        if math.isinf(allocatable):
            continue  # s_r = asked / inf = 0
        used = allocatable - sum(free_resources(n, pod)[r] for n in nodes)
        if used + asked > allocatable:
            return 0.0
        total += (used + asked) / allocatable
    return total / weights if weights else 0.0


def volcano_hypernode(
    tree: DomainTree, cluster: Cluster, state: dict[Domain, float], request: TasRequest, pod: Pod, pods: int
) -> list[int] | None:
    """[Volcano HyperNode] "Search" and "Choice": the chosen HyperNode's nodes (id order), or None (the job
    waits).

    "For tier 1, 2, ... up to tier(L): the candidates are the HyperNodes of that tier whose nodes take the
    whole gang (sum over its nodes of the pods each takes now, as Kueue's counts ...). The first tier with a
    candidate decides; none up to tier(L): the job waits (no partial placement, no higher tier)." "Among the
    tier's candidates, the highest binpack score ... Ties: the lowest id". "Soft mode (``preferred`` L, any
    L): every tier, then the whole cluster (the virtual top tier) when the sum over all nodes of the pods
    each takes now is >= the job's pods".
    """
    soft = request.mode == "preferred"
    for tier in sorted(VOLCANO_TIER_LEVELS):
        level = VOLCANO_TIER_LEVELS[tier]
        if level < request.level and not soft:
            break  # above tier(L)
        best: tuple[float, list[int]] | None = None
        for domain in tree.domains(level):  # id order: a later domain must score strictly higher
            if state[domain] < pods:
                continue
            nodes = domain_nodes(tree, domain)
            score = volcano_binpack([cluster[n] for n in nodes], pod, pods)
            if best is None or score > best[0]:
                best = (score, nodes)
        if best is not None:
            return best[1]
    if soft and sum(state[d] for d in tree.domains(0)) >= pods:
        return sorted(range(len(tree.paths)), key=lambda n: tree.paths[n])
    return None


# --------------------------------------------------------------------------------------------------
# Kubelet Topology Manager  [Kubelet Topology Manager]
# --------------------------------------------------------------------------------------------------

#: "NUMA layout": "U > 8 is refused under a policy other than none (the kubelet's
#: ``max-allowable-numa-nodes``, 8)".
MAX_NUMA_NODES = 8
#: "When": "the Job controller's back-off min(10 x 2^(f-1), 600) s (``MaxJobPodFailureBackOff``, 10 min in
#: current Kubernetes; 6 min before)".
BACKOFF_FIRST_S, BACKOFF_MAX_S = 10.0, 600.0
#: "When": "``backoff_limit`` (default 6, the Job's ``spec.backoffLimit``, ...; 0 to 10,000 here)".
DEFAULT_BACKOFF_LIMIT, MAX_BACKOFF_LIMIT = 6, 10_000
TM_POLICIES: tuple[str, ...] = ("none", "best_effort", "restricted", "single_numa_node")

#: A topology hint: (NUMA mask, preferred), bit u of the mask = NUMA node u; mask None = "any NUMA" (the
#: kubelet's nil affinity: all NUMA nodes).
Hint = tuple[int | None, bool]


def _name(value: Any) -> str:
    """A policy field given as an enum member or as its name."""
    return str(getattr(value, "name", value))


def topology_manager_name(policy: Policy) -> str:
    """``policy.topology_manager`` by name: none, best_effort, restricted or single_numa_node."""
    name = _name(policy.topology_manager)
    if name not in TM_POLICIES:
        raise ValueError(f"topology_manager: {name} is not in the reference")
    return name


def cpu_manager_static(policy: Policy) -> bool:
    """``policy.cpu_manager`` is ``static`` (else ``none``)."""
    name = _name(policy.cpu_manager)
    if name not in ("none", "static"):
        raise ValueError(f"cpu_manager: {name} is not in the reference")
    return name == "static"


def check_topology_manager(policy: Policy) -> None:
    """ "Refused (config errors): a policy other than none with ``gang: pod_by_pod``, EASY backfill,
    preemption, GPU sharing (``gpu_sharing``, ``mig_strategy``) ...; ``numa_aware_scheduler`` without
    ``single_numa_node`` (the filter acts only there), or with ``topology_aware``; ``node_placement: random``
    or ``node_ties`` other than lowest_index with ``numa_aware_scheduler``; ``cpu_manager: static`` or a
    ``backoff_limit`` other than 6 with ``topology_manager: none``." Each error names its key
    (``scheduler.<key>``); the jobs' fractional GPUs are :meth:`_Replay.check_whole_gpus`'."""
    manager = topology_manager_name(policy)
    static = cpu_manager_static(policy)
    aware = bool(policy.numa_aware_scheduler)
    if not 0 <= policy.backoff_limit <= MAX_BACKOFF_LIMIT:
        raise ValueError(f"scheduler.backoff_limit must be between 0 and 10,000: {policy.backoff_limit}")
    if aware and manager != "single_numa_node":
        raise ValueError(
            f"scheduler.numa_aware_scheduler: the filter acts only under topology_manager: single_numa_node, "
            f"not {manager}"
        )
    if manager == "none":
        if static:
            raise ValueError("scheduler.cpu_manager: static is read only under a topology_manager policy")
        if policy.backoff_limit != DEFAULT_BACKOFF_LIMIT:
            raise ValueError("scheduler.backoff_limit is read only under a topology_manager policy")
        return
    if policy.gang is GangMode.pod_by_pod:
        raise ValueError(f"scheduler.topology_manager: {manager} is modelled with gang: gang, not pod_by_pod")
    if policy.backfill is Backfill.easy:
        raise ValueError(f"scheduler.topology_manager: {manager} is not modelled with backfill: easy")
    if policy.preemption is not Preemption.none:
        raise ValueError(f"scheduler.topology_manager: {manager} is not modelled with preemption: priority")
    if policy.gpu_sharing is not GpuSharing.none or policy.mig_strategy is not MigStrategy.none:
        raise ValueError(f"scheduler.topology_manager: {manager} is not modelled with GPU sharing or MIG")
    if aware:
        if policy.topology_aware is not TopologyAware.none:
            raise ValueError("scheduler.numa_aware_scheduler is not modelled with topology_aware")
        if policy.node_placement == "random":
            raise ValueError("scheduler.node_placement: random is refused with numa_aware_scheduler")
        if NodeTies[_name(policy.node_ties)] is not NodeTies.lowest_index:
            raise ValueError("scheduler.node_ties: only lowest_index with numa_aware_scheduler")


def bits(mask: int) -> int:
    """The number of NUMA nodes in ``mask``."""
    return bin(mask).count("1")


def set_numa_layout(node: Node, row: dict[str, Any]) -> None:
    """ "NUMA layout. A node's NUMA nodes are u = 0..U-1 with U = 1 + the largest ``numa_of_gpu`` (1 for a
    GPU-less node or a null list) ... GPU g sits on ``numa_of_gpu[g]``. Its whole CPUs C = cpu_milli // 1000
    are split evenly, NUMA u holding C // U plus one for u < C % U (an unknown CPU capacity never
    constrains)." A null list puts every GPU on NUMA node 0 (the only one)."""
    listed = row.get("numa_of_gpu")
    node.numa_of_gpu = tuple(int(u) for u in listed) if listed is not None else (0,) * len(node.gpus)
    assert len(node.numa_of_gpu) == len(node.gpus)
    count = 1 + max(node.numa_of_gpu) if node.numa_of_gpu else 1
    if count > MAX_NUMA_NODES:
        raise ValueError(
            f"cluster.numa_per_node: node {node.index} has {count} NUMA nodes; the Topology Manager takes at "
            f"most {MAX_NUMA_NODES}"
        )
    if row["cpu_milli"] == UNKNOWN_CAPACITY:
        node.numa_cpus = (math.inf,) * count
    else:
        cpus = int(row["cpu_milli"]) // 1000
        node.numa_cpus = tuple(float(cpus // count + (1 if u < cpus % count else 0)) for u in range(count))
    node.numa_free = list(node.numa_cpus)


def exclusive_cpus(pod: Pod, static: bool) -> int:
    """ "Exclusive CPUs (``cpu_manager: static``...): a pod whose cpu_milli is a positive multiple of 1000 is
    taken as Guaranteed QoS with x = cpu_milli / 1000 exclusive CPUs ...; any other pod runs on the shared
    pool (node-level CPU only, no hint)." 0: no exclusive CPU."""
    if static and pod.cpu > 0 and pod.cpu % 1000 == 0:
        return pod.cpu // 1000
    return 0


def kubelet_masks(count: int) -> list[int]:
    """The non-empty masks of ``count`` NUMA nodes in "the kubelet's mask order (fewer NUMA nodes first, then
    lexicographic by NUMA ids: {0}, {1}, {0,1}, {0,2}, {1,2}, ...)"."""

    def ids(mask: int) -> tuple[int, ...]:
        return tuple(u for u in range(count) if mask >> u & 1)

    return sorted(range(1, 1 << count), key=lambda mask: (bits(mask), ids(mask)))


def provider_hints(
    count: int, request: float, free: Callable[[int], float], capacity: Callable[[int], float]
) -> list[Hint]:
    """ "Hints, per pod": one provider's hints for its ``request`` on a node of ``count`` NUMA nodes.

    "For each non-empty mask M of the node's NUMA nodes, a provider with a request gives the hint (M,
    preferred) when what is free in M holds the request, with preferred = (|M| == the fewest NUMA nodes
    whose whole capacity, free or not, holds the request)" ... "A provider with a request and no hint gives
    (none, not preferred)." ``free(M)`` / ``capacity(M)``: what is free in M / its whole capacity.
    """
    masks = kubelet_masks(count)
    fewest = count  # the kubelet's minAffinitySize starts at the number of NUMA nodes
    for mask in masks:
        if capacity(mask) >= request:
            fewest = min(fewest, bits(mask))
    hints: list[Hint] = [(mask, bits(mask) == fewest) for mask in masks if free(mask) >= request]
    return hints if hints else [(None, False)]


def pod_hints(node: Node, pod: Pod, static: bool) -> list[list[Hint]]:
    """ "Hints, per pod": the device provider's and the CPU provider's hints for one pod on ``node`` now.

    "devices = its k whole GPUs (wholly free GPUs on M); CPUs = its x exclusive CPUs (free exclusive CPUs on
    M). A pod asking no GPUs (no exclusive CPUs) gives no device (CPU) hint: 'any NUMA, preferred'."
    """
    count = len(node.numa_cpus)

    def on(mask: int, u: int) -> bool:
        return bool(mask >> u & 1)

    k = pod.milli // WHOLE_GPU
    devices: list[Hint] = [(None, True)]
    if k > 0:
        free = node.wholly_free()
        devices = provider_hints(
            count,
            k,
            lambda m: sum(1 for g in free if on(m, node.numa_of_gpu[g])),
            lambda m: sum(1 for g in range(len(node.gpus)) if on(m, node.numa_of_gpu[g])),
        )
    x = exclusive_cpus(pod, static)
    cpus: list[Hint] = [(None, True)]
    if x > 0:
        cpus = provider_hints(
            count,
            x,
            lambda m: sum(node.numa_free[u] for u in range(count) if on(m, u)),
            lambda m: sum(node.numa_cpus[u] for u in range(count) if on(m, u)),
        )
    return [devices, cpus]


def single_numa_hints(hints: list[Hint]) -> list[Hint]:
    """ "``single_numa_node`` first keeps only each provider's preferred hints of one NUMA node" (and, as the
    kubelet's filterSingleNumaHints, a preferred "any NUMA": a provider without a request)."""
    return [(mask, preferred) for mask, preferred in hints if preferred and (mask is None or bits(mask) == 1)]


def narrower(a: int, b: int) -> bool:
    """Is mask ``a`` narrower than ``b``: fewer NUMA nodes, or as many and a lower mask (bits as a number)."""
    return (bits(a), a) < (bits(b), b)


def candidate_wins(current: tuple[int, bool], candidate: tuple[int, bool], target: int) -> bool:
    """ "Merge": "The best, updated candidate by candidate in that order: preferred over not; two preferred:
    the candidate wins iff it has fewer NUMA nodes, or as many and a lower mask (bits as a number); two not
    preferred, with B = [``target``] and c, k the current's and the candidate's counts: c > B: the narrower
    wins (as for preferred); c == B: the candidate wins iff k == B and it is narrower; c < B: the candidate
    wins iff k == B, or c < k < B, or k == c and it is narrower."
    """
    (mask, preferred), (new, new_preferred) = current, candidate
    if preferred != new_preferred:
        return new_preferred
    if preferred:
        return narrower(new, mask)
    c, k = bits(mask), bits(new)
    if c > target:
        return narrower(new, mask)
    if c == target:
        return k == target and narrower(new, mask)
    return k == target or c < k < target or (k == c and narrower(new, mask))


def merge_hints(providers: list[list[Hint]], count: int) -> tuple[int, bool]:
    """ "Merge (the kubelet's HintMerger, ``policy.go``): every combination of one hint per provider, devices'
    hints outer, CPUs' inner, each provider's hints in the kubelet's mask order ...; its mask = the AND of
    the masks (none = all NUMA nodes), an empty mask is dropped; it is preferred iff every hint is preferred
    and all its masks other than none are equal ... The best, updated candidate by candidate in that order
    (:func:`candidate_wins`) ... None left: (all NUMA nodes, not preferred)."

    ``providers``: the devices' hints, then the CPUs', each in the kubelet's mask order. B = "the largest over
    the providers with a request of their narrowest hint's NUMA count" (a provider whose hints are all "none"
    has no narrowest hint).
    """
    everything = (1 << count) - 1
    masks = [[m for m, _ in hints if m is not None] for hints in providers]
    target = max((min(bits(m) for m in listed) for listed in masks if listed), default=0)
    best: tuple[int, bool] | None = None
    for combination in itertools.product(*providers):  # the first provider outer
        mask, preferred = everything, True
        named = {m for m, _ in combination if m is not None}
        for hint_mask in named:
            mask &= hint_mask
        preferred = all(p for _, p in combination) and len(named) <= 1
        if mask == 0:
            continue
        if best is None or candidate_wins(best, (mask, preferred), target):
            best = (mask, preferred)
    return best if best is not None else (everything, False)


def kubelet_admit(node: Node, pod: Pod, manager: str, static: bool, time: float) -> PodPlacement | None:
    """ "Admission": the kubelet of ``node`` admits one pod on its state now: the placement it takes (None:
    rejected, TopologyAffinityError).

    "``best_effort`` admits every pod; ``restricted`` and ``single_numa_node`` admit a pod iff its best hint
    is preferred. An admitted whole-GPU pod takes its k wholly free GPUs first from the best mask's NUMA
    nodes, lowest index first, then from the others, lowest index first ... Its exclusive CPUs come first from
    the mask's NUMA nodes, then from the others, each group taken NUMA node by NUMA node, fewest free CPUs
    first (ties lowest id), as far as each has free ones"."""
    providers = pod_hints(node, pod, static)
    if manager == "single_numa_node":
        providers = [single_numa_hints(hints) for hints in providers]
    count = len(node.numa_cpus)
    mask, preferred = merge_hints(providers, count)
    if manager in ("restricted", "single_numa_node") and not preferred:
        return None

    def outside(u: int) -> bool:
        return not mask >> u & 1

    k = pod.milli // WHOLE_GPU
    # "first from the best mask's NUMA nodes, lowest index first, then from the others, lowest index first"
    order = sorted(node.wholly_free(), key=lambda g: (outside(node.numa_of_gpu[g]), g))
    assert len(order) >= k, "the scheduler placed a pod on a node without its GPUs"
    gpus = tuple(order[:k])
    x = exclusive_cpus(pod, static)
    numa_cpu: tuple[float, ...] = ()
    if x > 0:
        # "first from the mask's NUMA nodes, then from the others, each group taken NUMA node by NUMA node,
        # fewest free CPUs first (ties lowest id), as far as each has free ones"
        took = [0.0] * count
        left = float(x)
        for u in sorted(range(count), key=lambda u: (outside(u), node.numa_free[u], u)):
            took[u] = min(node.numa_free[u], left)
            left -= took[u]
        assert left == 0, "the scheduler placed a pod on a node without its CPUs"
        numa_cpu = tuple(took)
    milli, gpu_mem = (WHOLE_GPU, node.gpu_mem) if k > 0 else (0, 0.0)
    placement = PodPlacement(node.index, gpus, milli, gpu_mem, pod.cpu, pod.mem, time, numa_cpu=numa_cpu)
    take(node, placement)
    return placement


def numa_holds(node: Node, pod: Pod, static: bool) -> bool:
    """ "NUMA-aware scheduling": "one NUMA node u holds it alone (wholly free GPUs on u >= k and, for an
    exclusive pod, free exclusive CPUs on u >= x)"."""
    k, x = pod.milli // WHOLE_GPU, exclusive_cpus(pod, static)
    free = node.wholly_free()
    for u in range(len(node.numa_cpus)):
        gpus = sum(1 for g in free if node.numa_of_gpu[g] == u)
        if gpus >= k and (x == 0 or node.numa_free[u] >= x):
            return True
    return False


def numa_room(node: Node, pod: Pod, static: bool) -> float:
    """ "NUMA-aware scheduling": pods like ``pod`` the node's NUMA nodes hold now, one NUMA node each: "sum
    over u of min(GPUs on u // k, CPUs on u // x) (a term without a request is unbounded)"."""
    k, x = pod.milli // WHOLE_GPU, exclusive_cpus(pod, static)
    free = node.wholly_free()
    total = 0.0
    for u in range(len(node.numa_cpus)):
        room = math.inf
        if k > 0:
            room = min(room, sum(1 for g in free if node.numa_of_gpu[g] == u) // k)
        if x > 0 and not math.isinf(node.numa_free[u]):
            room = min(room, node.numa_free[u] // x)
        total += room
    return total


def backoff_seconds(failures: int) -> float:
    """ "When": the Job controller's back-off after admission failure f: min(10 x 2^(f-1), 600) s."""
    return min(BACKOFF_FIRST_S * 2 ** (failures - 1), BACKOFF_MAX_S)


# --------------------------------------------------------------------------------------------------
# The replay
# --------------------------------------------------------------------------------------------------


#: [Volcano queues] resource names in the engine's order, and bytes per MiB (Volcano counts bytes).
VOLCANO_NAMES = tuple(name for name, _ in VOLCANO_RESOURCES)


def volcano_le(a: float, b: float) -> bool:
    """[Volcano queues] Volcano's ``a <= b`` within ``minResource``."""
    return a < b or abs(a - b) < VOLCANO_MIN_RESOURCE


MIB = float(2**20)


class _Replay:
    def __init__(
        self,
        jobs: list[Job],
        nodes: list[dict[str, Any]],
        policy: Policy,
        seed: int,
        debug: bool,
        tasks: tuple[TaskClass, ...] = (),
        kueue: KueueQuotas | None = None,
        volcano: VolcanoQueues | None = None,
        volcano_total: Any = None,
        kai: KaiQueues | None = None,
    ) -> None:
        for key, known in (("node_placement", tuple(SCORERS)), ("gpu_placement", GPU_SCORERS)):
            if getattr(policy, key) not in known:
                name = getattr(policy, key)
                raise KeyError(f"unknown scorer {name!r} for {key}; known: {', '.join(known)}")
        if policy.preemption is not Preemption.none and policy.backfill is Backfill.easy:
            raise ValueError("EASY backfill with preemption is not modelled")
        if policy.gang is GangMode.pod_by_pod and (
            policy.queue_order is not QueueOrder.priority
            or policy.backfill is not Backfill.skip
            or policy.backfill_depth != 0
        ):
            raise ValueError(
                "gang: pod_by_pod takes queue_order: priority, backfill: skip, backfill_depth: 0"
            )
        check_gpu_sharing(policy)
        check_mig(policy)
        check_spread(policy)
        check_topology_aware(policy)
        check_topology_manager(policy)
        self.jobs = jobs
        self.queue_names = sorted({job.queue for job in jobs}) or ["default"]
        # [Queues] under queues: kueue every ClusterQueue is a queue, in name order, with jobs or not.
        self.kueue = kueue
        # [Kueue quotas] releases so far (a completion, the end of a grace period), and what was set aside
        # or blocked at which release count.
        self.release_version = 0
        self.kueue_aside: dict[tuple[Any, ...], int] = {}
        self.kueue_blocked: dict[int, int] = {}
        if kueue is not None:
            self.queue_names = list(kueue.cluster_queues)
        # [Volcano queues] every queue is a queue, in name order; a job is Inqueue once enqueued, until it
        # leaves the pending set; a class whose placement failed is set aside until the next release. Each
        # queue's deserved milli-GPU and share x 10^6 at the last session, for the samples.
        self.volcano = volcano
        self.volcano_inqueue: set[int] = set()
        self.volcano_aside: dict[tuple[Any, ...], int] = {}
        self.volcano_deserved: list[int] = []
        self.volcano_share: list[int] = []
        if volcano is not None:
            self.queue_names = list(volcano.names)
            self.volcano_deserved = [0] * len(volcano.names)
            self.volcano_share = [0] * len(volcano.names)
            self.volcano_total = volcano_total
        # [KAI queues] the leaf queues are the queues, in name order; a job class (queue and class key)
        # whose placement failed is set aside until the next release. The last session's fair share
        # (milli-GPU) and dominant share x 10^6 go to the samples, as Volcano's deserved and share.
        self.kai = kai
        self.kai_aside: dict[tuple[Any, ...], int] = {}
        if kai is not None:
            self.queue_names = list(kai.cluster_queues)
            self.volcano_deserved = [0] * kai.num_leaves
            self.volcano_share = [0] * kai.num_leaves
            self.volcano_total = volcano_total
        # [Spreading cost] "Levels": each node's (nvlink_domain, rack, spine), by node index.
        self.topology = [tuple(int(row[col]) for col, _ in SPREAD_LEVELS) for row in nodes]
        # [Topology-aware scheduling] "Tree": each node's (spine, rack, nvlink_domain, node index) path.
        self.tas = policy.topology_aware is not TopologyAware.none
        self.tree = domain_tree(nodes)
        sharing = (
            policy.device_split_count,
            policy.shared_gpu_memory.name,
            policy.replicas,
            policy.gpu_sharing is GpuSharing.mps,
            policy.replica_allocation is ReplicaAllocation.packed,
            policy.mig_strategy is MigStrategy.single,
            policy.mig_strategy is MigStrategy.dynamic,
            policy.mig_placement.name,
            policy.mig_strategy is MigStrategy.mixed,
        )
        # [MIG re-partitioning] idle: each MIG GPU holds its own layout, among its model's candidates.
        self.repartitioning = policy.mig_reconfigure is MigReconfigure.idle
        layouts = policy.mig_reconfigure_layouts
        self.empty = empty_cluster(nodes, *sharing, self.repartitioning, layouts)
        self.cluster = empty_cluster(nodes, *sharing, self.repartitioning, layouts)
        downtime = policy.mig_reconfigure_s
        self.reconfigure_s = DEFAULT_RECONFIGURE_S if downtime is None else float(downtime)
        # [MIG re-partitioning] "Results": every re-partitioning started, as (downtime start, end).
        self.reconfigurations: list[tuple[float, float]] = []
        self.cluster_models = frozenset(n.model for n in self.empty if n.model is not None)
        # [Kubelet Topology Manager] "``topology_manager: none`` (default) is everything above: no NUMA is
        # read."
        self.manager = topology_manager_name(policy)
        self.cpu_static = cpu_manager_static(policy)
        self.numa_aware = bool(policy.numa_aware_scheduler)
        if self.manager != "none":
            self.check_whole_gpus()
            for cluster in (self.empty, self.cluster):
                for node, row in zip(cluster, nodes, strict=True):
                    set_numa_layout(node, row)
        self.policy = policy
        self.node_scorer = SCORERS[policy.node_placement]
        self.gpu_scorer = SCORERS[policy.gpu_placement]
        self.pod_mode = policy.gang is GangMode.pod_by_pod
        self.tasks = tasks
        self.seed = seed
        self.debug = debug
        self.now = 0.0
        self.cycles = 0
        self.searches = 0
        self.evictions = 0
        self.lost_charged = 0.0  # lost GPU-seconds charged so far (timeline column)
        self.timers: list[tuple[float, int, Job]] = []  # (time, order set, evicted job)
        self.timer_seq = 0
        # [Kueue waitForPodsReady] (time, kind, order set, job): requeue back-offs (kind 2) and readiness
        # timeouts (kind 3); at one time after the timers above, in (kind, order set) order.
        self.ready_timers: list[tuple[float, int, int, Job]] = []
        # [Kueue waitForPodsReady] the jobs admitted by quota whose pods are not all placed, in
        # kube-scheduler's order.
        self.admitted: list[Job] = []
        self.quota_only = _name(policy.kueue_admission) == KueueAdmission.quota.name
        # [Priority preemption] "a class that failed to find victims is not searched again until a
        # job starts or resources are released": the version counts those events.
        self.version = 0
        self.wake = math.inf  # [Idle-resource reclaim] "Wake"
        self.search_failed: dict[tuple[Any, ...], int] = {}
        self.nominees: list[Job] = []  # jobs with nominated pods
        # [Dynamic MIG] "Results": the placements the workload may take on each dynamic node.
        self.mig_wanted = wanted_placements(self.empty, [job.pod for job in jobs])
        # [MIG FGD] the wanted shapes' weights on each dynamic node (read by the fgd start rule and the fgd
        # node scorer), and whether fgd scores nodes by them.
        dynamic = self.policy.mig_strategy is MigStrategy.dynamic
        self.mig_fgd_nodes = dynamic and policy.node_placement == "fgd"
        if dynamic and (policy.mig_placement.name == "fgd" or self.mig_fgd_nodes):
            weights = mig_fgd_weights(self.empty, jobs)
            for cluster in (self.empty, self.cluster):
                for node in cluster:
                    node.mig_weights = weights.get(node.index, ())

    def check_whole_gpus(self) -> None:
        """[Kubelet Topology Manager] "Refused ...: a policy other than none ... with jobs asking a fraction
        of a GPU (an input error naming the jobs column ``gpu_milli`` and a row)"."""
        for job in sorted(self.jobs, key=lambda j: j.row):
            if 0 < job.pod.trace_milli < WHOLE_GPU:
                raise ValueError(
                    f"jobs row {job.row + 1} (job {job.job_id}): gpu_milli {job.pod.trace_milli} is a "
                    f"fraction of a GPU, refused under topology_manager: {self.manager}"
                )

    # -- views ---------------------------------------------------------------------------------

    def with_state(self, state: str) -> list[Job]:
        return [j for j in self.jobs if j.state == state]

    def queue_key(self, job: Job) -> tuple[float, float, int]:
        """[Queue order] ``(key1, key2, job_id)``; pod-by-pod mode always uses the priority key."""
        order = QueueOrder.priority if self.pod_mode else self.policy.queue_order
        if order is QueueOrder.fifo:
            return (0.0, job.key2, job.job_id)
        if order is QueueOrder.sjf:
            return (job.duration, job.key2, job.job_id)
        return (float(-job.priority), job.key2, job.job_id)

    def pod_queue_key(self, job: Job) -> tuple[float, float, int, int]:
        """[Pod-by-pod mode] ``(queue key, pods already placed, job_id)`` of a job's next pod."""
        key1, key2, job_id = self.queue_key(job)
        return (key1, key2, len(job.placements), job_id)

    def pending_in_queue_order(self) -> list[Job]:
        key = self.pod_queue_key if self.pod_mode else self.queue_key
        return sorted(self.with_state("pending"), key=key)

    def class_key(self, job: Job) -> tuple[Any, ...]:
        """[Priority preemption] A job's class: same demand, priority and preemption policy.

        The demand is the pod (models it may use, as the names the cluster has; GPU-less pods use no
        GPU memory or model) and, in gang mode, the number of pods.
        """
        pod = job.pod
        if pod.milli == 0:
            models: Any = "any"
            gpu_mem = 0
        else:
            models = "any" if pod.models is None else pod.models & self.cluster_models
            if self.policy.mig_strategy is MigStrategy.single:
                # [MIG instances] the products it may use: a selector changes the nodes, not the name.
                models = frozenset(n.model for n in self.empty if model_allowed(n, pod))
            gpu_mem = pod.gpu_mem
        demand = (pod.milli, gpu_mem, pod.cpu, pod.mem, models)
        pods = None if self.pod_mode else job.num_pods
        return (demand, pods, job.priority, job.can_preempt)

    # -- placement -----------------------------------------------------------------------------

    def drawer(self, job: Job, pod: int, attempt: int, decision: int) -> Callable[[], int]:
        return lambda: draw(self.seed, job.job_id, pod, attempt, decision)

    def choose(self, cluster: Cluster, job: Job, pod_index: int, attempt: int) -> int | None:
        """[Resources] The node of one pod of ``job`` with the node scorer and the tie rule.

        [Kubelet Topology Manager] "NUMA-aware scheduling": "a node fits a pod only if one NUMA node u holds
        it alone ... besides the usual fit".
        """
        node_draw = self.drawer(job, pod_index, attempt, DECISION_NODE)
        tie = node_tie(self.policy.node_ties, self.seed, node_draw)

        def room(node: Node) -> bool:
            if self.numa_aware and not numa_holds(node, job.pod, self.cpu_static):
                return False
            return self.room_beside_nominees(node, job)

        if self.mig_fgd_nodes:
            return choose_node_mig_fgd(cluster, job.pod, tie, room)
        return choose_node(cluster, job.pod, self.node_scorer, node_draw, tie, self.tasks, room)

    # -- nominated nodes  [Nominated nodes] -----------------------------------------------------

    def room_beside_nominees(self, node: Node, job: Job) -> bool:
        """Does ``job``'s pod fit ``node`` with the pods nominated there by higher priorities added?

        kube's NodeResourcesFit on the node's totals with the nominated pods' requests added, for
        each resource the pod requests: CPU, memory, milli-GPU, and whole GPUs for a whole-GPU pod.
        """
        entries = [
            other.pod
            for other in self.nominees
            if other.priority > job.priority
            or (other.kai_reserved and self.kai_class(other) != self.kai_class(job))
            for n in other.nominated
            if n == node.index
        ]
        if not entries:
            return True
        pod = job.pod
        if pod.cpu > 0 and node.free_cpu - sum(p.cpu for p in entries) < pod.cpu:
            return False
        if pod.mem > 0 and node.free_mem - sum(p.mem for p in entries) < pod.mem:
            return False
        if pod.milli == 0:
            return True
        if node.free_gpu_milli() - sum(p.milli for p in entries) < pod.milli:
            return False
        if pod.milli < WHOLE_GPU:
            return True
        whole = sum(p.milli // WHOLE_GPU for p in entries if p.milli >= WHOLE_GPU)
        return len(node.wholly_free()) - whole >= pod.milli // WHOLE_GPU

    def nominate(self, job: Job, nodes: list[int]) -> None:
        """The preemptor's tried pods are nominated to their nodes while its victims terminate;
        lower-priority nominations on those nodes are cleared (kube's prepareCandidate)."""
        self.end_nomination(job)  # a search after its victims were gone replaces its nomination
        job.nominated = nodes
        self.nominees.append(job)
        cleared = False
        for other in list(self.nominees):
            if other.priority >= job.priority:
                continue
            kept = [n for n in other.nominated if n not in nodes]
            if len(kept) < len(other.nominated):
                cleared = True
                other.nominated = kept
                if not kept:
                    self.nominees.remove(other)
        if cleared:
            # The room the cleared nominations hid may fit pods and classes that failed: new versions (the
            # engine's room_back bumps both).
            self.version += 1
            self.release_version += 1

    def end_nomination(self, job: Job) -> None:
        """Drop ``job``'s nominations: the room they hid is free for everyone (new search and release
        versions: classes set aside for placement may fit now)."""
        job.kai_reserved = False
        if job.nominated:
            job.nominated = []
            self.nominees.remove(job)
            self.version += 1
            self.release_version += 1

    def kai_class(self, job: Job) -> tuple[Any, ...]:
        """[KAI reclaim] the engine's class of a job: its queue's jobs of one demand, priority and policy."""
        return (job.queue, *self.class_key(job))

    def place(self, cluster: Cluster, node: int, job: Job, pod_index: int, attempt: int) -> PodPlacement:
        if self.numa_aware:
            # [Kubelet Topology Manager] "NUMA-aware scheduling": "Pods are placed and admitted one by one, so
            # the kubelet never rejects": the kubelet takes the pod's GPUs (and exclusive CPUs) now.
            placement = kubelet_admit(cluster[node], job.pod, self.manager, self.cpu_static, self.now)
            assert placement is not None, "the NUMA filter passed a pod the kubelet rejects"
            return placement
        gpu_draw = self.drawer(job, pod_index, attempt, DECISION_GPU)
        return place_on(cluster, node, job.pod, self.gpu_scorer, gpu_draw, self.now, self.tasks)

    def place_next_pod(self, job: Job) -> PodPlacement | None:
        """[Pod-by-pod mode] Place the job's next pod on the current state with the scorers (None: no fit)."""
        pod_index = len(job.placements)
        attempt = job.attempt_number()
        node = self.choose(self.cluster, job, pod_index, attempt)
        if node is None:
            return None
        return self.place(self.cluster, node, job, pod_index, attempt)

    def try_gang(self, job: Job) -> bool:
        """[Gang mode] Place all pods of ``job`` or none (on a copy, committed on success)."""
        if self.tas:
            return self.try_topology_gang(job)
        return self.try_scored_gang(job)

    def try_scored_gang(self, job: Job) -> bool:
        """[Gang mode] Topology-blind: each pod in turn on the node the node scorer picks (on a copy)."""
        trial = clone(self.cluster)
        placements: list[PodPlacement] = []
        attempt = job.attempt_number()
        for pod_index in range(job.num_pods):
            node = self.choose(trial, job, pod_index, attempt)
            if node is None:
                return False  # the copy is dropped: the state is untouched
            placements.append(self.place(trial, node, job, pod_index, attempt))
        self.cluster[:] = trial
        self.begin_attempt(job)
        job.placements = placements
        return True

    def tas_counts(self, cluster: Cluster, job: Job) -> list[int]:
        """[Topology-aware scheduling] "Counts (phase 1)": state(node) = pods of the job that fit the node
        now (the gang rule's per-node capacity, NOT capped at the job's pods; at most 2^40), by node index.
        [KAI topology] and [Volcano HyperNode] count the same way."""
        return [tas_count(node, job.pod) for node in cluster]

    def try_topology_gang(self, job: Job) -> bool:
        """[Topology-aware scheduling] Place the job on its TAS assignment, or leave it pending.

        "Placement. The job's pods go to the assigned nodes in id order, each node getting its count (pod
        i to the i-th slot of that sequence), GPUs chosen by the GPU scorer as for any pod. No fit: the job
        stays pending." "Not topology-aware: node_placement (the node scorer) is not used for gangs".
        """
        assert job.topology is not None
        system = self.policy.topology_aware
        if system is TopologyAware.kai:
            return self.try_kai_gang(job)
        if system is TopologyAware.volcano:
            return self.try_volcano_gang(job)
        counts = self.tas_counts(self.cluster, job)
        assigned = kueue_assignment(self.tree, counts, job.topology, job.num_pods, self.policy.tas_profile)
        if assigned is None:
            return False
        trial = clone(self.cluster)
        placements: list[PodPlacement] = []
        attempt = job.attempt_number()
        # id order of the nodes = order of their paths
        for node in sorted(assigned, key=lambda n: self.tree.paths[n]):
            for _ in range(assigned[node]):
                placements.append(self.place(trial, node, job, len(placements), attempt))
        self.cluster[:] = trial
        self.begin_attempt(job)
        job.placements = placements
        return True

    def choose_in(
        self,
        trial: Cluster,
        nodes: list[int],
        job: Job,
        pod_index: int,
        attempt: int,
        top: Callable[[int], int],
    ) -> int:
        """[KAI topology] / [Volcano HyperNode] "Pods": the node of ``nodes`` (id order) for one pod: among
        those that take one more pod, the highest ``top`` (KAI's topology score; 0 for Volcano), then the
        node scorer's choice, "ties to the first in id (path) order" (whatever ``node_ties`` says)."""
        fitting = [n for n in nodes if pod_fits(trial[n], job.pod)]
        assert fitting, "the node set holds every pod of the job"
        best = max(top(n) for n in fitting)
        fitting = [n for n in fitting if top(n) == best]
        rank = {n: i for i, n in enumerate(nodes)}

        def first_in_id_order(tied: Sequence[Candidate]) -> int:
            return min(tied, key=lambda c: rank[c.index]).index

        subset = [trial[n] for n in fitting]
        if self.mig_fgd_nodes:
            node = choose_node_mig_fgd(subset, job.pod, first_in_id_order)
        else:
            node_draw = self.drawer(job, pod_index, attempt, DECISION_NODE)
            node = choose_node(subset, job.pod, self.node_scorer, node_draw, first_in_id_order, self.tasks)
        assert node is not None
        return node

    def place_in(self, job: Job, nodes: list[int], top: Callable[[int], int]) -> None:
        """Place every pod of ``job`` on ``nodes`` (which hold them all), one at a time by
        :meth:`choose_in`, and start its attempt."""
        trial = clone(self.cluster)
        placements: list[PodPlacement] = []
        attempt = job.attempt_number()
        for pod_index in range(job.num_pods):
            node = self.choose_in(trial, nodes, job, pod_index, attempt, top)
            placements.append(self.place(trial, node, job, pod_index, attempt))
        self.cluster[:] = trial
        self.begin_attempt(job)
        job.placements = placements

    def try_kai_gang(self, job: Job) -> bool:
        """[KAI topology] Place the job in its node set, or leave it pending.

        "No request, or ``unconstrained``: the pods are placed by the node scorer as in topology-blind gang
        mode."
        """
        request = job.topology
        assert request is not None
        if request.mode not in ("required", "preferred"):
            return self.try_scored_gang(job)
        pods = job.num_pods
        state = self.tree.states(self.tas_counts(self.cluster, job))
        # "Share. For a domain: free GPU ..., free CPU milli, free memory, summed over its nodes".
        free = [free_resources(node, job.pod) for node in self.cluster]
        share: dict[Domain, float] = {}
        for level in range(request.level + 1):
            for domain in self.tree.domains(level):
                under = domain_nodes(self.tree, domain)
                gpu, cpu, mem = (sum(free[n][r] for n in under) for r in range(3))
                share[domain] = kai_share((gpu, cpu, mem), job.pod, pods)
        levels = kai_sorted_tree(self.tree, share, request.level)
        nodes = kai_node_set(self.tree, levels, state, request, pods)
        if nodes is None:
            return False
        if request.mode == "preferred":
            scores = kai_topology_scores(levels, request.level)
            level = request.level
            self.place_in(job, nodes, lambda n: scores[self.tree.paths[n][: level + 1]])
        else:
            self.place_in(job, nodes, lambda n: 0)
        return True

    def try_volcano_gang(self, job: Job) -> bool:
        """[Volcano HyperNode] Place the job in the chosen HyperNode, or leave it pending.

        "No request, or ``unconstrained``: placed by the node scorer as topology-blind." "Pods. Each pod in
        turn goes to the HyperNode's node that takes one more pod with the best node scorer's score, ties to
        the first in id (path) order."
        """
        request = job.topology
        assert request is not None
        if request.mode not in ("required", "preferred"):
            return self.try_scored_gang(job)
        state = self.tree.states(self.tas_counts(self.cluster, job))
        nodes = volcano_hypernode(self.tree, self.cluster, state, request, job.pod, job.num_pods)
        if nodes is None:
            return False
        self.place_in(job, nodes, lambda n: 0)
        return True

    def begin_attempt(self, job: Job) -> None:
        """An attempt begins when its first pod is placed (and kept)."""
        job.attempts_begun += 1
        job.hold_start = self.now

    def undo_gang(self, job: Job) -> None:
        """Take back a gang placement that was only tried (EASY's refused backfill)."""
        for placement in job.placements:
            release(self.cluster[placement.node], placement)
        job.placements = []
        job.attempts_begun -= 1
        job.hold_start = math.nan

    def kubelets_admit(self, job: Job) -> bool:
        """[Kubelet Topology Manager] "When. Gang mode: the scheduler places all of a job's pods (the node
        scorer, or the topology-aware placement) not knowing NUMA; then each node's kubelet admits the job's
        pods on it in pod order, each on the state the earlier admitted ones left. If any pod is rejected
        (TopologyAffinityError) the placement is undone whole (nothing starts; no attempt is counted) and
        the job leaves the queue".

        ``job`` was just placed (an attempt begun). True: every pod admitted, on the GPUs (and exclusive
        CPUs) its kubelet took. False: undone, the job backs off or fails. A node's kubelet sees only its
        node, so the nodes may go in any order: pod order over the whole job is pod order on each node.
        """
        if self.manager == "none" or self.numa_aware:
            return True  # NUMA-aware: already admitted pod by pod (``place``)
        scheduled = job.placements
        for placement in scheduled:
            release(self.cluster[placement.node], placement)
        admitted: list[PodPlacement] = []
        for placement in scheduled:
            node = self.cluster[placement.node]
            kept = kubelet_admit(node, job.pod, self.manager, self.cpu_static, self.now)
            if kept is None:
                for done in admitted:
                    release(self.cluster[done.node], done)
                job.placements = []
                job.attempts_begun -= 1  # "no attempt is counted"
                job.hold_start = math.nan
                self.admission_failed(job)
                return False
            admitted.append(kept)
        job.placements = admitted
        return True

    def admission_failed(self, job: Job) -> None:
        """[Kubelet Topology Manager] "its admission failures f grow by one and it comes back after the Job
        controller's back-off min(10 x 2^(f-1), 600) s ... Once f > ``backoff_limit`` ... the job ends
        ``failed`` at that failure. A job backing off is not in the queue ... but its wait goes
        on." (``pending_since`` is kept.)"""
        job.admission_failures += 1
        limit = self.policy.backoff_limit
        if job.admission_failures > limit:
            job.state = "failed"
            return
        job.state = "backoff"
        self.timers.append((self.now + backoff_seconds(job.admission_failures), self.timer_seq, job))
        self.timer_seq += 1

    def end_backoff(self, job: Job) -> None:
        """[Kubelet Topology Manager] The back-off ends: the job re-enters its queue, "key2 = that time under
        ``requeue: back``" ([Queue order]: its original key under ``requeue: original``)."""
        job.state = "pending"
        job.key2 = self.now if self.policy.requeue is Requeue.back else job.submit
        self.version += 1

    # -- a job's life ---------------------------------------------------------------------------

    def admit(self, job: Job) -> None:
        """[Rejection at arrival] rejected, or appended to the pending jobs."""
        reason = rejection_reason(self.rejection_cluster(job.pod), job.pod, job.num_pods)
        # [GPU sharing by replicas] "Requests of more than one replica": a pod of k > 1 replicas fails kubelet
        # admission when failRequestsGreaterThanOne is on (default: on under MPS, off under time-slicing).
        refuse = self.policy.fail_requests_greater_than_one
        if refuse is None:
            refuse = self.policy.gpu_sharing is GpuSharing.mps
        sharing = self.policy.gpu_sharing is not GpuSharing.none
        if reason is None and sharing and refuse and job.pod.milli // WHOLE_GPU > 1:
            reason = "shared_request_too_large"
        # [Topology-aware scheduling] "Rejection at arrival (after the other reasons): slice_size_invalid, a
        # slice size that does not divide the job's pods (Kueue deactivates the workload); then
        # topology_too_large, a required job none of whose level's domains holds it on the empty cluster,
        # or a sliced job whose slices all top-level domains together cannot hold."
        request = job.topology
        if reason is None and request is not None and job.num_pods % request.slice_size != 0:
            reason = "slice_size_invalid"
        if reason is None and request is not None and (request.mode == "required" or request.sliced):
            empty = self.rejection_cluster(job.pod)
            if not level_holds(self.tree, self.tas_counts(empty, job), request, job.num_pods):
                reason = "topology_too_large"
        # [Rejection at arrival] "6. ``numa_too_large`` (numa_aware_scheduler on): the empty cluster cannot
        # hold the job's pods one NUMA node each" ([Kubelet Topology Manager] "NUMA-aware scheduling": "the
        # sum over nodes of min(usual capacity, sum over u of min(GPUs on u // k, CPUs on u // x))", every
        # node empty).
        if reason is None and self.numa_aware:
            empty = self.rejection_cluster(job.pod)
            held = sum(min(pods_fitting(n, job.pod), numa_room(n, job.pod, self.cpu_static)) for n in empty)
            if held < job.num_pods:
                reason = "numa_too_large"
        if reason is not None:
            job.state = "rejected"
            job.reject_reason = reason
            return
        job.state = "pending"
        job.pending_since = self.now

    def start(self, job: Job) -> None:
        """[Runs] All pods placed: the attempt runs; a restart first spends the restart overhead."""
        self.end_nomination(job)
        t = self.now
        job.state = "running"
        job.pending_total += t - job.pending_since
        overhead = 0.0
        if job.first_start is None:
            job.first_start = t
        else:
            overhead = job.overhead
        job.start = t
        # [Dynamic MIG] "Creation time": an attempt with a GPU pod on a dynamic node waits mig_create_s.
        on_dynamic = self.policy.mig_strategy is MigStrategy.dynamic and any(
            p.gpus and self.cluster[p.node].dynamic_mig for p in job.placements
        )
        job.overhead_end = t + overhead
        job.progress0 = job.overhead_end + (self.policy.mig_create_s if on_dynamic else 0.0)
        job.nodes_spanned = job.nodes_held()
        # [Spreading cost] "Rate": d_L of the pods' nodes now; f for the whole attempt (rates() gives it).
        job.domains_spanned = domains_spanned(job.placements, self.topology)
        job.spread = spread_rate(self.policy, job.domains_spanned)
        # [GPU sharing by replicas] it takes its own rate (1 without sharing): finish = t' + work left / rate
        # with t' the end of its restart overhead; the jobs it now shares GPUs with take theirs.
        # [Spreading cost] the rate is f: finish = start + overhead + work left / f.
        job.since, job.done, job.rate = job.progress0, 0.0, 1.0
        job.set_rate(t, self.rates()[job.row])
        self.rerate()
        self.version += 1

    def release_all(self, job: Job) -> None:
        for placement in job.placements:
            release(self.cluster[placement.node], placement)
        job.placements = []

    def charge(self, job: Job, gpu_seconds: float) -> None:
        job.lost += gpu_seconds
        self.lost_charged += gpu_seconds

    def complete(self, job: Job) -> None:
        """[Time and events] 1. a running job reaches its finish time and releases everything."""
        overhead = job.overhead_spent(job.progress0)
        record = Attempt(
            number=job.attempts_begun - 1,
            hold_start=job.hold_start,
            start=job.start,
            placements=list(job.placements),
            nodes=job.nodes_spanned,
            end_reason="finished",
            end=self.now,
            progress=job.work_left,
            restart_overhead=overhead,
        )
        job.records.append(record)
        # [Accounting] the restart overhead of an attempt that was not evicted.
        self.charge(job, job.gpus * overhead)
        # [GPU sharing by replicas] Results: the attempt's stretch and work; its sharers speed up.
        job.delay = job.delay_at(self.now)
        job.spread_delay = job.spread_delay_at(self.now)  # [Spreading cost] progress time x (1 - f)
        job.work_done += job.work_left
        self.release_all(job)
        job.state = "finished"
        job.finish = self.now
        job.work_left = 0.0
        self.rerate()
        self.version += 1
        self.release_version += 1

    def evict(self, victim: Job, preemptor: Job) -> None:
        """[Priority preemption] "Eviction at t": stop, keep the checkpointed progress, hold for the grace."""
        t = self.now
        grace = self.policy.graceful_termination
        progress = lost = overhead = 0.0
        ran = victim.state == "running"
        if ran:
            # [GPU sharing by replicas] progress follows the rate history (t - progress0 at rate 1).
            # [Spreading cost] work done = f x progress time (the rate is f), stretched by (1 - f) x it.
            progress = victim.progress_at(t)
            victim.delay = victim.delay_at(t)
            victim.spread_delay = victim.spread_delay_at(t)
            victim.work_done += progress
            overhead = victim.overhead_spent(t)
            interval = victim.checkpoint
            if interval == 0:
                saved = progress
            elif math.isinf(interval):
                saved = 0.0
            else:
                saved = math.floor(progress / interval) * interval
            lost = progress - saved
            victim.work_left -= saved
        else:
            # A partly placed pod-by-pod job: it leaves the queue, so its pending time stops here.
            # [Kueue waitForPodsReady] so does an admitted one, which leaves kube-scheduler's list.
            victim.pending_total += t - victim.pending_since
            if victim.state == "admitted":
                self.leave_admitted(victim)
        if victim.placements or victim.state == "running":  # an admitted job with no pod placed: no attempt
            victim.records.append(
                Attempt(
                    number=victim.attempts_begun - 1,
                    hold_start=victim.hold_start,
                    start=victim.start if ran else None,
                    placements=list(victim.placements),
                    nodes=victim.nodes_spanned if ran else 0,
                    end_reason="preempted",
                    evicted=t,
                    end=t + grace,
                    progress=progress,
                    work_lost=lost,
                    restart_overhead=overhead,
                    evicted_by=preemptor.job_id,
                )
            )
        # [Accounting] lost work and the restart overhead spent now; the grace period when it ends.
        self.charge(victim, victim.gpus * (lost + overhead))
        victim.state = "terminating"
        self.rerate()  # [GPU sharing by replicas] it is no longer active: its sharers take their rates
        victim.evicted_at = t
        victim.preemptions += 1
        victim.nominator = preemptor
        preemptor.waiting += 1
        self.evictions += 1
        self.timers.append((t + grace, self.timer_seq, victim))
        self.timer_seq += 1
        if self.evictions > LIVELOCK_EVICTIONS_PER_JOB * len(self.jobs):
            # A test oracle must fail, not hang: no generated case comes near this many evictions.
            raise RuntimeError(f"{self.evictions} evictions for {len(self.jobs)} jobs: a preemption livelock")

    def terminate(self, job: Job) -> None:
        """[Time and events] 2. an evicted job's grace period ends: release, re-enter the queue."""
        self.charge(job, job.gpus * (self.now - job.evicted_at))
        self.release_all(job)
        job.reserved = False  # [Kueue waitForPodsReady] the reservation of its unplaced pods ends too
        if job.nominator is not None:
            job.nominator.waiting -= 1
            job.nominator = None
        job.state = "pending"
        job.pending_since = self.now
        # [Queue order] requeue: back -> key2 is the time it re-entered; original -> its submit time.
        job.key2 = self.now if self.policy.requeue is Requeue.back else job.submit
        self.version += 1
        self.release_version += 1

    # -- throughput  [GPU sharing by replicas] ---------------------------------------------------

    def rates(self) -> dict[int, float]:
        """Every active (running) job's rate, by job row: the least over its processes.

        A process = one pod on one physical GPU it has replicas on, weight w = those replicas,
        demand D = w x d. Without sharing (or without GPU pods) a job runs at 1.
        [Spreading cost] ... or at its attempt's f (which is 1 whenever sharing or MIG is on: refused).
        """
        running = self.with_state("running")
        rate = {job.row: job.spread for job in running}
        if self.policy.mig_strategy in (MigStrategy.dynamic, MigStrategy.mixed):
            # [Dynamic MIG] "Throughput": as MIG instances, c the compute slices of the pod's instance.
            for job in running:
                for placement in job.placements:
                    if placement.compute > 0:
                        geometry = mig_geometry(str(self.cluster[placement.node].base_model))
                        share = placement.compute / geometry.compute_slices
                        rate[job.row] = min(rate[job.row], min(1.0, share / job.demand))
            return rate
        if self.policy.mig_strategy is MigStrategy.single:
            # [MIG instances] "Throughput": isolated instances, min(1, (c / S) / d) per pod, whole GPUs 1.
            for job in running:
                for placement in job.placements:
                    node = self.cluster[placement.node]
                    if placement.gpus and node.mig_profile is not None:
                        rate[job.row] = min(rate[job.row], min(1.0, node.mig_share / job.demand))
            return rate
        if self.policy.gpu_sharing is GpuSharing.none:
            return rate
        r = self.policy.replicas
        processes: dict[tuple[int, int], list[tuple[Job, float]]] = {}  # (node, physical GPU) -> (job, D)
        for job in running:
            for placement in job.placements:
                weights: dict[int, int] = {}
                for device in placement.gpus:
                    weights[device // r] = weights.get(device // r, 0) + 1
                for gpu, w in weights.items():
                    processes.setdefault((placement.node, gpu), []).append((job, w * job.demand))
        for procs in processes.values():
            for (job, _), process_rate in zip(
                procs, gpu_rates(self.policy, [d for _, d in procs]), strict=True
            ):
                rate[job.row] = min(rate[job.row], process_rate)
        return rate

    def rerate(self) -> None:
        """The active jobs on a GPU changed: every running job whose rate changed takes it now.

        Recomputing every job is the spec's "every active job with a process on that GPU": a job
        on no changed GPU keeps its rate, and "a rate that does not change leaves the job alone".
        A job due to finish at this very time is left alone too (it completes now; the new rate
        would only move its finish by float noise). [Spreading cost] a job's f never changes while
        it runs, so it is never re-rated.
        """
        rates = self.rates()
        for job in self.with_state("running"):
            rate = rates[job.row]
            if rate != job.rate and job.finish != self.now:
                job.set_rate(self.now, rate)

    # -- scheduling cycle ----------------------------------------------------------------------

    def cycle(self) -> None:
        self.cycles += 1
        if self.volcano is not None:
            self.volcano_cycle(self.volcano)
        elif self.kai is not None:
            self.kai_cycle(self.kai)
        elif self.kueue is not None:
            self.kueue_cycle(self.kueue)
            if self.debug:
                # [Kueue quotas] admissions never take a queue past what its quota tree allows.
                usage = self.kueue_usage()
                for q in range(self.kueue.num_cluster_queues):
                    for r in range(self.kueue.rows):
                        if self.kueue.covered[r, q]:
                            assert available(self.kueue, usage, q, r) >= 0, (q, r, usage)
        elif self.pod_mode:
            self.pod_by_pod_cycle()
        elif self.policy.backfill is Backfill.none:
            self.head_of_line_cycle()
        elif self.policy.backfill is Backfill.skip:
            self.skip_cycle(self.pending_in_queue_order(), failed=0)
        else:
            self.easy_cycle()
        # [Nominated nodes] a job whose victims are all gone had this cycle to bind: its nomination ends.
        for job in list(self.nominees):
            if job.waiting == 0:
                self.end_nomination(job)
        if self.repartitioning:
            # [MIG re-partitioning] "The controller, run right after every scheduling cycle at t".
            self.repartition()
        if self.debug:
            self.check_capacity()

    def head_of_line_cycle(self) -> None:
        """[Gang mode] backfill none: stop at the first job that does not fit (it may preempt first)."""
        for job in self.pending_in_queue_order():
            if not self.try_gang(job):
                self.maybe_preempt(job, whole=True)
                return
            # [Kubelet Topology Manager] a job the kubelets reject was placed: it leaves the queue and the
            # cycle goes on.
            if self.kubelets_admit(job):
                self.start(job)

    def skip_cycle(self, order: list[Job], failed: int) -> None:
        """[Gang mode] backfill skip: start every job that fits; stop after ``backfill_depth`` failures."""
        depth = self.policy.backfill_depth
        for job in order:
            if depth > 0 and failed >= depth:
                return
            if self.try_gang(job):
                # [Kubelet Topology Manager] a job the kubelets reject was placed (no failure to fit).
                if self.kubelets_admit(job):
                    self.start(job)
                continue
            failed += 1
            self.maybe_preempt(job, whole=True)

    def kueue_usage(self) -> list[list[int]]:
        """[Kueue quotas] ``[row][cluster queue]``: what each ClusterQueue's placed pods request, each
        resource in the flavor its admission assigned ([Kueue flavors]: a row per flavor and resource).

        [Kueue waitForPodsReady] a job admitted by quota reserves all of its pods' requests.
        """
        assert self.kueue is not None
        usage = [[0] * len(self.queue_names) for _ in range(self.kueue.rows)]
        index = {name: q for q, name in enumerate(self.queue_names)}
        for job in self.jobs:
            held = job.num_pods if job.reserved else len(job.placements)
            if held:
                q = index[job.queue]
                for r, amount in enumerate((job.pod.milli, job.pod.cpu, job.pod.mem)):
                    usage[3 * job.flavors[r] + r][q] += held * amount
        return usage

    def kueue_request3(self, job: Job) -> tuple[int, int, int]:
        return request_of(job.num_pods, job.pod.milli, job.pod.cpu, job.pod.mem)

    def kueue_request(self, job: Job) -> tuple[int, ...]:
        """[Kueue flavors] the job's request per quota row, in the flavors assigned to it."""
        assert self.kueue is not None
        return row_request(self.kueue, self.kueue_request3(job), job.flavors)

    def in_flavors(self, job: Job) -> Pod:
        """[Kueue flavors] the job's pod narrowed to the GPU models its assigned flavors select (their
        ``nodeLabels``; GPU-less pods use no model)."""
        quotas = self.kueue
        assert quotas is not None
        q = self.queue_names.index(job.queue)
        allowed = job.pod.models
        for r, amount in enumerate(self.kueue_request3(job)):
            selected = quotas.flavor_models[job.flavors[r]]
            if amount > 0 and quotas.covers(q, r) and selected is not None:
                allowed = selected if allowed is None else allowed & selected
        return job.pod if allowed is job.pod.models else replace(job.pod, models=frozenset(allowed or ()))

    def try_gang_in_flavors(self, job: Job) -> bool:
        """[Kueue flavors] ``try_gang`` with the pod narrowed to its flavors' nodes."""
        pod = job.pod
        job.pod = self.in_flavors(job)
        try:
            return self.try_gang(job)
        finally:
            job.pod = pod

    def kueue_class(self, job: Job) -> tuple[Any, ...]:
        """[Kueue quotas] jobs that get the same answer: one queue's jobs of one request (demand, pods)
        and preemption policy."""
        return (job.queue, self.class_key(job)[0], job.num_pods, job.can_preempt)

    def kueue_holders(self) -> tuple[dict[int, Job], list[Admitted]]:
        """[Kueue preemption] the preemptible jobs holding quota (by id) and their :class:`Admitted`
        records."""
        index = {name: n for n, name in enumerate(self.queue_names)}
        # [Kueue waitForPodsReady] a job admitted by quota alone holds quota before its pods are placed.
        holders = {
            j.job_id: j
            for j in self.jobs
            if (j.placements or j.reserved)
            and j.preemptible
            and j.state in ("running", "terminating", "admitted")
        }
        admitted = [
            Admitted(
                job_id=j.job_id,
                cluster_queue=index[j.queue],
                priority=j.priority,
                timestamp=j.key2,
                admitted=j.admitted_at,
                evicted=j.state == "terminating",
                request=self.kueue_request(j),
            )
            for j in holders.values()
        ]
        return holders, admitted

    def kueue_simulate(self, quotas: KueueQuotas, q: int, job: Job) -> Simulate:
        """[Kueue flavor fungibility] ``SimulatePreemption`` for ``job``: the target search (classical, or
        fair sharing's) for one quota row alone (none when the job may not preempt), its mode and the
        borrowing level after."""
        usage = self.kueue_usage()
        _, admitted = self.kueue_holders()

        def simulate(row: int, amount: int) -> Mode:
            one = [0] * quotas.rows
            one[row] = amount
            # [Kueue preemption] under fair sharing the oracle runs fair sharing's strategies.
            search = (
                partial(fair_preemption_targets, strategies=quotas.fair_strategies)
                if quotas.fair_sharing
                else preemption_targets
            )
            targets = (
                search(quotas, usage, q, one, job.priority, job.key2, admitted) if job.can_preempt else []
            )
            if not targets:
                return Mode(NO_CANDIDATES, borrow_height(quotas, usage, q, row, amount))
            left = [list(line) for line in usage]
            for t in targets:
                for r in range(quotas.rows):
                    left[r][t.cluster_queue] -= t.request[r]
            own = any(t.cluster_queue == q for t in targets)
            return Mode(PREEMPT if own else RECLAIM, borrow_height(quotas, left, q, row, amount))

        return simulate

    def kueue_preempt(self, quotas: KueueQuotas, q: int, job: Job) -> bool:
        """[Kueue preemption] evict the classical targets of ``job`` (ClusterQueue ``q``); whether it did.

        No preemption when the job may not preempt, when no targets make it fit, or when a target was
        evicted at this instant by another workload (Kueue skips overlapping preemptions in a cycle).
        """
        if not job.can_preempt or not preempts(quotas):
            return False
        holders, admitted = self.kueue_holders()
        # [Kueue preemption] fair sharing's strategies in place of the classical targets.
        search = (
            partial(fair_preemption_targets, strategies=quotas.fair_strategies)
            if quotas.fair_sharing
            else preemption_targets
        )
        targets = search(
            quotas,
            self.kueue_usage(),
            q,
            self.kueue_request(job),
            job.priority,
            job.key2,
            admitted,
            topology=self.kueue_topology_fit(job, holders),
        )
        if not targets or any(t.evicted and holders[t.job_id].evicted_at == self.now for t in targets):
            return False
        for target in targets:
            if not target.evicted:
                self.evict(holders[target.job_id], job)
        return True

    def kueue_topology_fit(self, job: Job, holders: dict[int, Job]) -> TopologyFit | None:
        """[Kueue TAS preemption] ``workloadFits``' topology part for ``job`` (None without
        ``topology_aware: kueue``): whether its TAS assignment, on its flavors' nodes, is found once the given
        targets' pods are released (on a copy of the cluster)."""
        if not self.tas:
            return None
        pod = self.in_flavors(job)
        assert job.topology is not None
        request = job.topology

        def fits(targets: Sequence[Admitted]) -> bool:
            trial = clone(self.cluster)
            for target in targets:
                for placement in holders[target.job_id].placements:
                    release(trial[placement.node], placement)
            counts = [tas_count(node, pod) for node in trial]
            found = kueue_assignment(self.tree, counts, request, job.num_pods, self.policy.tas_profile)
            return found is not None

        return fits

    def kueue_cycle(self, quotas: KueueQuotas) -> None:
        """[Kueue quotas] rounds of one head per ClusterQueue until each pending job is admitted or set aside.

        Each round nominates the heads against the usage at its start (a head that does not fit its
        available quota is set aside: the next job of its queue is head next round, or under StrictFIFO none
        is until a release), orders them by borrowing level (the height of the lowest subtree that holds each
        one's request, :func:`borrow_level`; 0 first), then by queue key (fair sharing: by tournament), and
        admits each that still fits and can be placed as a gang; one that no longer fits stays head; one that
        cannot be placed is set aside. A job of the same queue and request as one set aside since the last
        release is passed over (it would be set aside too).
        """
        if self.quota_only and self.admission_blocked():
            self.kueue_place_admitted()  # [Kueue waitForPodsReady] admissions resume once it is Ready
            if self.admission_blocked():
                return
        index = {name: q for q, name in enumerate(self.queue_names)}
        queued: list[list[Job]] = [[] for _ in self.queue_names]
        for job in self.pending_in_queue_order():
            queued[index[job.queue]].append(job)
        heads = [0] * len(queued)
        now = self.release_version

        def head(q: int) -> Job | None:
            if self.kueue_blocked.get(q) == now:
                return None
            while heads[q] < len(queued[q]):
                job = queued[q][heads[q]]
                if self.kueue_aside.get(self.kueue_class(job)) != now:
                    return job
                heads[q] += 1
            return None

        def set_aside(q: int, job: Job) -> None:
            self.kueue_aside[self.kueue_class(job)] = now
            if quotas.strict_fifo[q]:
                self.kueue_blocked[q] = now
            else:
                heads[q] += 1

        while True:
            usage = self.kueue_usage()
            entries = []
            any_head = False
            for q in range(len(queued)):
                job = head(q)
                if job is None:
                    continue
                any_head = True
                # [Kueue flavors] the flavor assigner picks each resource group's flavor first.
                asked = self.kueue_request3(job)
                mode = FIT
                if quotas.preempts_in_flavors(q) and job.can_preempt:
                    # [Kueue flavor fungibility] a preempting ClusterQueue weighs each flavor's preemption.
                    assigned, mode = assign_with_modes(
                        quotas, usage, q, asked, self.kueue_simulate(quotas, q, job)
                    )
                else:
                    assigned = assign_flavors(quotas, usage, q, asked)
                # One that fits nowhere keeps each group's first flavor (where preemption searches).
                flavors = assigned if assigned is not None else first_flavors(quotas, q, asked)
                job.flavors = (flavors[0], flavors[1], flavors[2])
                request = self.kueue_request(job)
                if assigned is None or mode != FIT or not fits(quotas, usage, q, request):
                    if mode != NO_FIT and self.kueue_preempt(quotas, q, job):
                        # Kueue keeps a preemptor as its queue's head until admitted: the queue waits for
                        # its victims (their release ends the block).
                        self.kueue_aside[self.kueue_class(job)] = now
                        self.kueue_blocked[q] = now
                    else:
                        set_aside(q, job)
                    continue
                entries.append((borrow_level(quotas, usage, q, request), self.queue_key(job), q, job))
            if not any_head:
                break
            entries.sort(key=lambda e: (e[0], e[1]))
            if quotas.fair_sharing:
                entries = self.fair_order(quotas, entries)
            for _, _, q, job in entries:
                if not fits(quotas, self.kueue_usage(), q, self.kueue_request(job)):
                    continue  # an admission earlier in this round took the room: head again next round
                if self.quota_only:
                    # [Kueue waitForPodsReady] admitted by quota; under blockAdmission its pods are placed
                    # now and, unless all are, nothing more is admitted.
                    self.admit_by_quota(job)
                    heads[q] += 1
                    if self.admission_blocked():
                        self.kueue_place_admitted()
                        if self.admission_blocked():
                            return
                    continue
                if self.try_gang_in_flavors(job):
                    if self.kubelets_admit(job):
                        self.start(job)
                        job.admitted_at = self.now
                    heads[q] += 1
                elif self.tas and self.kueue_preempt(quotas, q, job):
                    # [Kueue TAS preemption] the quota fits, the topology assignment does not: Preempt mode;
                    # the preemptor's queue waits for its victims.
                    self.kueue_aside[self.kueue_class(job)] = now
                    self.kueue_blocked[q] = now
                else:
                    set_aside(q, job)
        if self.quota_only:
            self.kueue_place_admitted()

    # -- [Kueue waitForPodsReady] -----------------------------------------------------------------

    def admission_blocked(self) -> bool:
        """[Kueue waitForPodsReady] blockAdmission: an admitted job whose pods are not all placed."""
        return self.policy.pods_ready_block_admission and bool(self.admitted)

    def admit_by_quota(self, job: Job) -> None:
        """[Kueue waitForPodsReady] Kueue admits ``job`` by quota alone: it leaves the queue, reserves all
        of its pods' requests and waits for kube-scheduler; the readiness timeout starts."""
        job.state = "admitted"
        job.reserved = True
        job.admitted_at = self.now
        self.admitted.append(job)
        self.admitted.sort(key=lambda j: (-j.priority, j.admitted_at, j.job_id))
        timeout = self.policy.pods_ready_timeout
        if timeout is not None:
            self.ready_timers.append((self.now + timeout, READY_TIMEOUT, self.timer_seq, job))
            self.timer_seq += 1

    def kueue_place_admitted(self) -> None:
        """[Kueue waitForPodsReady] kube-scheduler: each admitted job in order (priority, admission time,
        job id) places its next pods one by one until one fits nowhere (they stay); all placed: it starts,
        and its readiness timeout is dropped."""
        for job in list(self.admitted):
            while len(job.placements) < job.num_pods:
                pod = job.pod
                job.pod = self.in_flavors(job)  # [Kueue flavors] on its flavors' nodes
                try:
                    placement = self.place_next_pod(job)
                finally:
                    job.pod = pod
                if placement is None:
                    break
                if not job.placements:
                    self.begin_attempt(job)
                job.placements.append(placement)
            if len(job.placements) == job.num_pods:
                self.leave_admitted(job)
                job.reserved = False
                self.start(job)

    def ready_timeout(self, job: Job) -> None:
        """[Kueue waitForPodsReady] the timeout ends with pods unplaced: evict (placed pods released at once,
        their GPU-time lost, an attempt ending ``pods_ready_timeout``), then requeue after the back-off, or
        deactivate (``failed``) once it was requeued ``backoff_limit`` times."""
        t = self.now
        self.admitted.remove(job)
        job.reserved = False
        if job.placements:
            job.records.append(
                Attempt(
                    number=job.attempts_begun - 1,
                    hold_start=job.hold_start,
                    start=None,
                    placements=list(job.placements),
                    nodes=0,
                    end_reason="pods_ready_timeout",
                    evicted=t,
                    end=t,
                )
            )
            self.charge(job, sum((t - p.time) * job.pod.milli for p in job.placements) / 1000.0)
            self.release_all(job)
        self.version += 1
        self.release_version += 1
        count = job.ready_timeouts
        job.ready_timeouts += 1
        limit = self.policy.pods_ready_backoff_limit
        if limit is not None and count >= limit:
            job.state = "failed"
            job.pending_total += t - job.pending_since
            return
        job.state = "backoff"
        job.evicted_at = t
        delay = self.policy.pods_ready_backoff_base * 2.0**count
        delay = min(delay, self.policy.pods_ready_backoff_max)
        self.ready_timers.append((t + delay, READY_BACKOFF, self.timer_seq, job))
        self.timer_seq += 1

    def leave_admitted(self, job: Job) -> None:
        """[Kueue waitForPodsReady] it leaves kube-scheduler's list (started, or evicted by a preemption):
        its readiness timeout is dropped."""
        self.admitted.remove(job)
        self.ready_timers = [tm for tm in self.ready_timers if not (tm[1] == READY_TIMEOUT and tm[3] is job)]

    def end_ready_backoff(self, job: Job) -> None:
        """[Kueue waitForPodsReady] the requeue back-off ends: back in its queue, ordered by its eviction time
        under ``requeue: back`` (Kueue's Eviction timestamp), by its submit time under ``original``."""
        job.state = "pending"
        job.key2 = job.evicted_at if self.policy.requeue is Requeue.back else job.submit

    def volcano_request(self, job: Job, pods: int) -> dict[str, float]:
        """[Volcano queues] ``pods`` of ``job``'s pods in Volcano's units (milli-GPU, milli-CPU, bytes)."""
        return {
            VOLCANO_NAMES[0]: float(pods * job.pod.milli),
            VOLCANO_NAMES[1]: float(pods * job.pod.cpu),
            VOLCANO_NAMES[2]: float(pods * job.pod.mem) * MIB,
        }

    def volcano_cycle(self, vq: VolcanoQueues) -> None:
        """[Volcano queues] one session: the proportion plugin's deserved, then enqueue, then allocate.

        Deserved: :func:`volcano_proportion` over the queues with running or pending jobs (their requests:
        what they hold plus every pending job's). Queue order: higher priority, lower share, then index.
        Enqueue: queues in that order, each one's Pending jobs in queue order, Inqueue when the overcommit
        test (Inqueue requests + own within total x factor - used) and the proportion test (own + queue's
        allocated + Inqueue within realCapability) pass. Allocate: again and again the first queue in order
        that is not overused (deserved <= allocated, every resource) and has Inqueue jobs not yet tried;
        its next one is placed as a gang if each pod in turn fits deserved - allocated.
        """
        names = VOLCANO_NAMES
        total = {name: float(self.volcano_total[r]) for r, name in enumerate(names)}
        index = {name: q for q, name in enumerate(self.queue_names)}
        num = len(self.queue_names)
        alloc = [dict.fromkeys(names, 0.0) for _ in range(num)]
        request = [dict.fromkeys(names, 0.0) for _ in range(num)]
        on = [False] * num
        for job in self.jobs:
            q = index[job.queue]
            if job.state in ("running", "pending"):
                on[q] = True
            if job.state == "terminating":
                continue  # [Volcano reclaim] a Releasing victim is not allocated
            for name, amount in self.volcano_request(job, len(job.placements)).items():
                alloc[q][name] += amount
                request[q][name] += amount
        queued = self.pending_in_queue_order()
        for job in queued:
            for name, amount in self.volcano_request(job, job.num_pods).items():
                request[index[job.queue]][name] += amount

        def capability(q: int) -> dict[str, float] | None:
            found = {n: float(vq.capability[r, q]) for r, n in enumerate(names)}
            return {n: v for n, v in found.items() if math.isfinite(v)} or None

        def guarantee(q: int) -> dict[str, float]:
            return {n: float(vq.guarantee[r, q]) for r, n in enumerate(names) if vq.guarantee[r, q] > 0}

        part = [q for q in range(num) if on[q]]
        found = volcano_proportion(
            total,
            [int(vq.weight[q]) for q in part],
            [request[q] for q in part],
            [capability(q) for q in part],
            [guarantee(q) for q in part],
            [guarantee(q) for q in range(num) if not on[q]],
        )
        deserved = [dict.fromkeys(names, 0.0) for _ in range(num)]
        for q, values in zip(part, found, strict=True):
            deserved[q] = values
        share = [volcano_share(alloc[q], deserved[q]) for q in range(num)]
        real = vq.real_capability(self.volcano_total)
        le = volcano_le

        def order(q: int) -> tuple[int, float, int]:
            return (-int(vq.priority[q]), share[q], q)

        per_queue: list[list[Job]] = [[] for _ in range(num)]
        for job in queued:
            per_queue[index[job.queue]].append(job)
        # enqueue
        for q in sorted(range(num), key=order):
            for job in per_queue[q]:
                if job.job_id in self.volcano_inqueue:
                    continue
                own = self.volcano_request(job, job.num_pods)
                inqueued = [
                    self.volcano_request(j, j.num_pods) for j in queued if j.job_id in self.volcano_inqueue
                ]
                ok = True
                for r, n in enumerate(names):
                    used = sum(a[n] for a in alloc)
                    everyone = sum(i[n] for i in inqueued)
                    mine = sum(
                        self.volcano_request(j, j.num_pods)[n]
                        for j in per_queue[q]
                        if j.job_id in self.volcano_inqueue
                    )
                    if not le(everyone + own[n], total[n] * vq.overcommit - used):
                        ok = False
                    if not le(own[n] + alloc[q][n] + mine, float(real[r, q])):
                        ok = False
                if ok:
                    self.volcano_inqueue.add(job.job_id)
        # allocate
        now = self.release_version
        tried = [0] * num
        candidates = [[job for job in per_queue[q] if job.job_id in self.volcano_inqueue] for q in range(num)]

        def overused(q: int) -> bool:
            return all(le(deserved[q][n], alloc[q][n]) for n in names)

        while True:
            ready = [q for q in range(num) if tried[q] < len(candidates[q]) and not overused(q)]
            if not ready:
                break
            q = min(ready, key=order)
            job = candidates[q][tried[q]]
            tried[q] += 1
            if self.volcano_aside.get(self.kueue_class(job)) == now:
                continue
            pod = self.volcano_request(job, 1)
            fits = True
            for n in names:
                held = alloc[q][n]
                for _ in range(job.num_pods):
                    if not le(pod[n], max(0.0, deserved[q][n] - held)):
                        fits = False
                    held += pod[n]
            if not fits:
                continue
            if not self.try_gang(job):
                self.volcano_aside[self.kueue_class(job)] = now
                continue
            if self.kubelets_admit(job):
                self.start(job)
            self.volcano_inqueue.discard(job.job_id)
            for n, amount in self.volcano_request(job, len(job.placements)).items():
                alloc[q][n] += amount
            share[q] = volcano_share(alloc[q], deserved[q])
        for q in range(num):
            self.volcano_deserved[q] = math.floor(deserved[q][names[0]] + 0.5)
            self.volcano_share[q] = math.floor(min(share[q], MAX_SHARE) * 1e6 + 0.5)
        if vq.actions.preempt or vq.actions.reclaim:
            waiting = [
                [j for j in candidates[q] if j.state == "pending" and j.job_id in self.volcano_inqueue]
                for q in range(num)
            ]
            pipe = [[0.0, 0.0, 0.0] for _ in self.cluster]  # the session's pipelined pods per node
            if vq.actions.preempt:
                self.volcano_preempt(vq, deserved, alloc, waiting, pipe)
            if vq.actions.reclaim:
                self.volcano_reclaim(vq, deserved, alloc, waiting, pipe)

    def volcano_amount(self, job: Job, pods: int) -> list[float]:
        """[Volcano preempt] [Volcano reclaim] ``pods`` of the job's pods, per resource in Volcano's units."""
        request = self.volcano_request(job, pods)
        return [request[n] for n in VOLCANO_NAMES]

    def volcano_drf(self, job: Job, pods: int) -> float:
        """[Volcano preempt] [Volcano reclaim] the drf plugin's share of ``pods`` of the job's pods:
        ``max_r amount_r / total_r`` (0/0: 0, x/0: 1)."""
        found = 0.0
        for r, a in enumerate(self.volcano_amount(job, pods)):
            total = float(self.volcano_total[r])
            found = max(found, (0.0 if a == 0.0 else 1.0) if total == 0.0 else a / total)
        return found

    def volcano_candidates(self, n: int, marked: dict[int, Job]) -> tuple[list[float], list[tuple[Job, int]]]:
        """[Volcano preempt] [Volcano reclaim] node ``n``'s releasing resources (terminating and marked
        jobs' pods there) and its running jobs with their pods there."""
        releasing = [0.0, 0.0, 0.0]
        running: list[tuple[Job, int]] = []
        for other in self.jobs:
            here = sum(1 for p in other.placements if p.node == n)
            if here == 0:
                continue
            if other.state == "terminating" or other.job_id in marked:
                request = self.volcano_request(other, here)
                for r, name in enumerate(VOLCANO_NAMES):
                    releasing[r] += request[name]
            elif other.state == "running":
                running.append((other, here))
        return releasing, running

    def volcano_preempt(
        self,
        vq: VolcanoQueues,
        deserved: list[dict[str, float]],
        alloc: list[dict[str, float]],
        waiting: list[list[Job]],
        pipe: list[list[float]],
    ) -> None:
        """[Volcano preempt] the preempt action after allocate (``preempt.go`` ``normalPreempt``).

        Queues in index order; a queue's starving jobs (Inqueue, pending, not waiting for victims) in job
        order (priority, creation, id), each with its own statement, each pod tried once: nodes in index
        order; preemptees: the queue's other running preemptible jobs with pods on the node; victims by the
        tier rule over the plugins ``vq.actions.preemptable`` (tier 1 priority / gang / conformance, an empty
        list ending the tier; tier 2 drf, pod by pod on the victim's falling allocation); the node
        qualifies when the pod fits FutureIdle plus the victims; victims (whole jobs) evicted in victim
        order until the queue can take the pod (``Allocatable``) and it fits FutureIdle; then pipelined.
        A job pipelined whole commits (victims evicted for real), any other is undone at once.
        """
        names = VOLCANO_NAMES
        num = len(self.queue_names)
        index = {name: q for q, name in enumerate(self.queue_names)}
        plugins = set(vq.actions.preemptable)

        le, amount, drf = volcano_le, self.volcano_amount, self.volcano_drf

        def allocatable(q: int, pod: list[float]) -> bool:
            return all(pod[r] == 0.0 or le(alloc[q][n] + pod[r], deserved[q][n]) for r, n in enumerate(names))

        def victim_rank(v: Job) -> tuple[Any, ...]:
            return (v.priority, -drf(v, len(v.placements)), -v.key2, -v.job_id)

        marked: dict[int, Job] = {}
        statement: list[Job] = []  # the victims of the job whose turn it is

        def victims_of(
            job: Job, ordered: list[tuple[Job, int]], pipelined: int
        ) -> list[tuple[Job, int, int]]:
            # Session.Preemptable's tiers: (victim, pods Volcano would take, pods on the node).
            tier: list[tuple[Job, int, int]] | None = None
            for plugin in ("priority", "gang", "conformance"):
                if plugin not in plugins:
                    continue
                if plugin == "priority":
                    found = [(v, h, h) for v, h in ordered if v.priority < job.priority]
                elif plugin == "gang":
                    found = []  # a whole gang never has ready pods above its minAvailable
                else:
                    found = [(v, h, h) for v, h in ordered]
                if not found:
                    tier = None
                    break
                tier = found if tier is None else [u for u in tier if u in found]
            if tier:
                return tier
            if "drf" not in plugins:
                return []
            mine = drf(job, pipelined + 1)
            taken: list[tuple[Job, int, int]] = []
            for v, h in ordered:
                passed = 0
                for k in range(1, h + 1):
                    theirs = drf(v, len(v.placements) - k)
                    if not (mine < theirs or abs(mine - theirs) <= 0.000001):
                        break
                    passed += 1
                if passed:
                    taken.append((v, passed, h))
            return taken

        def try_node(job: Job, n: int, pod: list[float], pipelined: int) -> bool:
            q = index[job.queue]
            releasing, running = self.volcano_candidates(n, marked)
            ordered = sorted(
                ((v, h) for v, h in running if index[v.queue] == q and v.preemptible),
                key=lambda u: victim_rank(u[0]),
            )
            victims = victims_of(job, ordered, pipelined) if ordered else []
            if not victims:
                return False
            node = self.cluster[n]
            free = [float(node.free_gpu_milli()), float(node.free_cpu), float(node.free_mem) * MIB]
            future = [free[r] + releasing[r] - pipe[n][r] for r in range(3)]
            if not all(le(pod[r], future[r] + sum(amount(v, m)[r] for v, m, _ in victims)) for r in range(3)):
                return False
            for victim, _, here in victims:
                if allocatable(q, pod) and all(le(pod[r], future[r]) for r in range(3)):
                    break
                marked[victim.job_id] = job
                statement.append(victim)
                vqi = index[victim.queue]
                for r, a in enumerate(amount(victim, len(victim.placements))):
                    alloc[vqi][names[r]] -= a
                for r, a in enumerate(amount(victim, here)):
                    future[r] += a
            if not (allocatable(q, pod) and all(le(pod[r], future[r]) for r in range(3))):
                return False
            for r in range(3):
                pipe[n][r] += pod[r]
                alloc[q][names[r]] += pod[r]
            return True

        for q in range(num):
            queue = sorted(
                (j for j in waiting[q] if j.waiting == 0), key=lambda j: (-j.priority, j.key2, j.job_id)
            )
            for job in queue:
                if not job.can_preempt:
                    continue  # taskEligibleToPreempt: preemptionPolicy Never
                if (
                    self.policy.topology_aware is TopologyAware.volcano
                    and job.topology is not None
                    and job.topology.mode in ("required", "preferred")
                ):
                    continue  # [Volcano preempt] a job with a networkTopology never preempts (issue #4374)
                pod = amount(job, 1)
                statement.clear()
                nodes: list[int] = []
                for _ in range(job.num_pods):
                    if len(nodes) == job.num_pods:
                        break
                    for n in range(len(self.cluster)):
                        if pod_fits(self.empty[n], job.pod) and try_node(job, n, pod, len(nodes)):
                            nodes.append(n)
                            break
                if len(nodes) == job.num_pods:
                    for victim in statement:
                        self.evict(victim, job)
                    continue
                for victim in statement:  # Statement.Discard
                    del marked[victim.job_id]
                    vqi = index[victim.queue]
                    for r, a in enumerate(amount(victim, len(victim.placements))):
                        alloc[vqi][names[r]] += a
                for n in nodes:
                    for r in range(3):
                        pipe[n][r] -= pod[r]
                        alloc[q][names[r]] -= pod[r]

    def volcano_reclaim(
        self,
        vq: VolcanoQueues,
        deserved: list[dict[str, float]],
        alloc: list[dict[str, float]],
        waiting: list[list[Job]],
        pipe: list[list[float]],
    ) -> None:
        """[Volcano reclaim] the reclaim action after allocate (``reclaim.go``, gang-aware statements).

        ``alloc`` is the session's allocation after allocate; ``waiting`` each queue's Inqueue pending jobs in
        queue order. Queues by (priority, share, index); a queue's jobs by (priority, drf share of its
        pipelined pods, creation, id), one pod per turn. A pod needs its queue within deserved with it;
        nodes in index order; reclaimees: running, preemptible jobs of other reclaimable queues with pods on
        the node, in victim order (reverse queue order, then reverse job order with the whole job's drf
        share); the proportion filter walks them on per-queue copies of the allocation; the node qualifies
        when the pod fits FutureIdle (free + releasing - pipelined) plus the victims; victims are taken
        until they alone cover the pod. A job whose pods are all pipelined evicts its victims for real.
        """
        names = VOLCANO_NAMES
        num = len(self.queue_names)
        index = {name: q for q, name in enumerate(self.queue_names)}
        le, amount, drf = volcano_le, self.volcano_amount, self.volcano_drf

        def share(q: int) -> float:
            return volcano_share(alloc[q], deserved[q])

        def queue_rank(q: int) -> tuple[int, float, int]:
            return (-int(vq.priority[q]), share(q), q)

        def above(q: int, held: list[float]) -> bool:
            return any(not le(held[r], deserved[q][n]) for r, n in enumerate(names))

        marked: dict[int, Job] = {}  # victim job_id -> the reclaiming job whose statement evicted it
        victims_of: dict[int, list[Job]] = {}
        pipelined: dict[int, int] = {}
        open_jobs: list[Job] = []
        untouched = [list(w) for w in waiting]
        live = [bool(untouched[q]) for q in range(num)]

        def anywhere() -> bool:
            return any(vq.reclaimable[q] and above(q, [alloc[q][n] for n in names]) for q in range(num))

        def next_job(q: int) -> Job | None:
            while untouched[q] and untouched[q][0].waiting > 0:
                untouched[q].pop(0)  # pipelined on its victims' resources: not starving
            mine = [j for j in open_jobs if index[j.queue] == q]
            options = [(j.key2, drf(j, pipelined[j.job_id]), j) for j in mine]
            if untouched[q]:
                options.append((untouched[q][0].key2, 0.0, untouched[q][0]))
            if not options:
                return None
            _, _, best = min(options, key=lambda o: (-o[2].priority, o[1], o[0], o[2].job_id))
            if untouched[q] and best is untouched[q][0]:
                untouched[q].pop(0)
                open_jobs.append(best)
                pipelined[best.job_id] = 0
            return best

        def victim_rank(v: Job) -> tuple[Any, ...]:
            q = index[v.queue]
            rank = queue_rank(q)
            # Reverse queue order, then reverse job order.
            return (
                (-rank[0], -rank[1], -rank[2]),
                v.priority,
                -drf(v, len(v.placements)),
                -v.key2,
                -v.job_id,
            )

        def try_node(job: Job, n: int, pod: list[float]) -> bool:
            q = index[job.queue]
            releasing, running = self.volcano_candidates(n, marked)
            ordered = sorted(
                (
                    (other, here)
                    for other, here in running
                    if other.preemptible and index[other.queue] != q and vq.reclaimable[index[other.queue]]
                ),
                key=lambda u: victim_rank(u[0]),
            )
            if not ordered:
                return False
            copies: dict[int, list[float]] = {}
            chosen: list[tuple[Job, int]] = []
            for victim, here in ordered:
                vq_index = index[victim.queue]
                held = copies.setdefault(vq_index, [alloc[vq_index][nm] for nm in names])
                if any(held[r] < pod[r] for r in range(3)) or not above(vq_index, held):
                    continue
                for r, a in enumerate(amount(victim, here)):
                    held[r] -= a
                chosen.append((victim, here))
            if not chosen:
                return False
            node = self.cluster[n]
            free = [float(node.free_gpu_milli()), float(node.free_cpu), float(node.free_mem) * MIB]
            for r in range(3):
                future = free[r] + releasing[r] - pipe[n][r] + sum(amount(v, h)[r] for v, h in chosen)
                if not le(pod[r], future):
                    return False
            got = [0.0, 0.0, 0.0]
            for victim, here in chosen:
                marked[victim.job_id] = job
                victims_of.setdefault(job.job_id, []).append(victim)
                vqi = index[victim.queue]
                for r, a in enumerate(amount(victim, len(victim.placements))):
                    alloc[vqi][names[r]] -= a
                for r, a in enumerate(amount(victim, here)):
                    got[r] += a
                if all(le(pod[r], got[r]) for r in range(3)):
                    break
            if not all(le(pod[r], got[r]) for r in range(3)):
                return False
            for r in range(3):
                pipe[n][r] += pod[r]
                alloc[q][names[r]] += pod[r]
            return True

        while anywhere():
            ready = [q for q in range(num) if live[q]]
            if not ready:
                break
            q = min(ready, key=queue_rank)
            if all(le(deserved[q][n], alloc[q][n]) for n in names):
                live[q] = False  # overused
                continue
            job = next_job(q)
            if job is None:
                live[q] = False
                continue
            if not job.can_preempt:
                open_jobs.remove(job)
                live[q] = False
                continue
            pod = amount(job, 1)
            if any(
                pod[r] > 0.0 and not le(alloc[q][n] + pod[r], deserved[q][n]) for r, n in enumerate(names)
            ):
                open_jobs.remove(job)
                live[q] = False
                continue
            if not any(
                pod_fits(self.empty[n], job.pod) and try_node(job, n, pod) for n in range(len(self.cluster))
            ):
                open_jobs.remove(job)
                continue
            pipelined[job.job_id] += 1
            if pipelined[job.job_id] == job.num_pods:
                open_jobs.remove(job)
                for victim in victims_of.get(job.job_id, []):
                    if victim.state != "terminating":
                        self.evict(victim, job)

    def kai_cycle(self, kq: KaiQueues) -> None:
        """[KAI queues] one session: fair shares, then allocate.

        Requests: per leaf queue what its jobs hold plus its pending jobs' whole requests, summed in engine
        units and then turned into KAI's (GPUs, millicores, MB); a parent's are its children's sums (in
        queue order). Fair shares: :func:`kai_fair_share_tree` per resource. Allocate: again and again the
        leaf whose best pending job (first in job order not set aside) wins the queue order from the top of
        the tree down (children compared in queue order, the first kept unless a later one goes before it);
        that job is popped and allocated as a gang when :func:`within_capacity` allows; a class refused for
        capacity is dropped for the session, one refused placement set aside until the next release.
        """
        num = len(kq.names)
        leaves = kq.num_leaves
        index = {name: q for q, name in enumerate(kq.cluster_queues)}

        def holdings(name: str) -> tuple[list[int], list[int]]:
            # What the queue's jobs hold, and its non-preemptible jobs, in engine units.
            found = [0, 0, 0]
            fixed = [0, 0, 0]
            for job in self.jobs:
                # [KAI reclaim] a terminating victim's pods are Releasing: not in KAI's allocated statuses.
                if job.queue == name and job.state != "terminating":
                    n = len(job.placements)
                    for r, amount in enumerate((n * job.pod.milli, n * job.pod.cpu, n * job.pod.mem)):
                        found[r] += amount
                        if not job.preemptible:
                            fixed[r] += amount
            return found, fixed

        held, fixed = map(list, zip(*(holdings(name) for name in kq.cluster_queues), strict=True))
        queued = self.pending_in_queue_order()
        asked = [list(h) for h in held]
        for job in queued:
            for r, amount in enumerate(self.kueue_request3(job)):
                asked[index[job.queue]][r] += amount

        def kai(amount: int, r: int) -> float:
            if r == 0:
                return float(amount) / 1000.0
            return float(amount) * MB_PER_MIB if r == 2 else float(amount)

        alloc = [[kai(held[n][r], r) if n < leaves else 0.0 for r in range(3)] for n in range(num)]
        np_alloc = [[kai(fixed[n][r], r) if n < leaves else 0.0 for r in range(3)] for n in range(num)]
        request = [[kai(asked[n][r], r) if n < leaves else 0.0 for r in range(3)] for n in range(num)]
        for n in range(num):
            p = int(kq.parent[n])
            if p >= 0:
                for r in range(3):
                    alloc[p][r] += alloc[n][r]
                    np_alloc[p][r] += np_alloc[n][r]
        parents = {
            kq.names[n]: (kq.names[int(kq.parent[n])] if kq.parent[n] >= 0 else None) for n in range(num)
        }
        fair = [[0.0, 0.0, 0.0] for _ in range(num)]
        total = [float(v) for v in self.volcano_total]
        for r in range(3):
            shares = kai_fair_share_tree(
                total[r],
                [
                    KaiQueueShare(
                        kq.names[n],
                        float(kq.quota[r, n]),
                        float(kq.over_quota_weight[r, n]),
                        float(kq.limit[r, n]),
                        request[n][r],
                        int(kq.priority[n]),
                        created=float(kq.created[n]),
                    )
                    for n in range(num)
                ],
                parents,
            )
            for n in range(num):
                fair[n][r] = shares[kq.names[n]]
        state = [
            KaiQueueState(
                quota=(float(kq.quota[0, n]), float(kq.quota[1, n]), float(kq.quota[2, n])),
                limit=(float(kq.limit[0, n]), float(kq.limit[1, n]), float(kq.limit[2, n])),
                fair=(fair[n][0], fair[n][1], fair[n][2]),
                allocated=(alloc[n][0], alloc[n][1], alloc[n][2]),
                non_preemptible=(np_alloc[n][0], np_alloc[n][1], np_alloc[n][2]),
                priority=int(kq.priority[n]),
                created=int(kq.created[n]),
                parent=int(kq.parent[n]),
            )
            for n in range(num)
        ]
        per_queue: list[list[Job]] = [[] for _ in range(leaves)]
        for job in queued:
            per_queue[index[job.queue]].append(job)
        now = self.release_version
        tried = [0] * leaves
        dropped: set[tuple[Any, ...]] = set()

        def klass(job: Job) -> tuple[Any, ...]:
            # The engine's class: one queue's jobs of one demand, preemption policy and preemptibility.
            demand, pods, _, can_preempt = self.class_key(job)
            return (job.queue, demand, pods, can_preempt, job.preemptible)

        def head(q: int) -> Job | None:
            while tried[q] < len(per_queue[q]):
                job = per_queue[q][tried[q]]
                if klass(job) not in dropped and self.kai_aside.get(klass(job)) != now:
                    return job
                tried[q] += 1
            return None

        def need(job: Job) -> tuple[float, float, float]:
            milli, cpu, mem = self.kueue_request3(job)
            return (kai(milli, 0), kai(cpu, 1), kai(mem, 2))

        while True:
            q = self.kai_pick(kq, state, total, head, need)
            if q is None:
                break
            job = head(q)
            assert job is not None
            tried[q] += 1
            if not within_capacity(state, q, need(job), job.preemptible):
                dropped.add(klass(job))
                continue
            if not self.try_gang(job):
                self.kai_aside[klass(job)] = now
                continue
            if self.kubelets_admit(job):
                self.start(job)
            # Its usage moves, and its ancestors' by the same amounts.
            now_held, now_fixed = holdings(job.queue)
            for r in range(3):
                new = kai(now_held[r], r)
                new_np = kai(now_fixed[r], r)
                delta = new - alloc[q][r]
                delta_np = new_np - np_alloc[q][r]
                n = q
                while n >= 0:
                    alloc[n][r] = new if n == q else alloc[n][r] + delta
                    np_alloc[n][r] = new_np if n == q else np_alloc[n][r] + delta_np
                    n = int(kq.parent[n])
            for n in range(num):
                state[n].allocated = (alloc[n][0], alloc[n][1], alloc[n][2])
                state[n].non_preemptible = (np_alloc[n][0], np_alloc[n][1], np_alloc[n][2])
        if kq.actions:
            self.kai_evict(kq, state, alloc, np_alloc, total, klass)
        for q in range(leaves):
            self.volcano_deserved[q] = math.floor(fair[q][0] * 1000.0 + 0.5)
            self.volcano_share[q] = math.floor(dominant_share(state[q], total) * 1e6 + 0.5)

    def kai_evict(
        self,
        kq: KaiQueues,
        state: list[KaiQueueState],
        alloc: list[list[float]],
        np_alloc: list[list[float]],
        total: list[float],
        klass: Callable[[Job], tuple[Any, ...]],
    ) -> None:
        """[KAI reclaim] the reclaim then the preempt action after allocate (``reclaim.go``, ``preempt.go``
        with the job solver).

        Jobs: the pending ones, each once, picked as allocate picks (queue order from the top of the tree,
        then job order); a job waiting for its victims is skipped; one that may not take part (reclaim: its
        queue over its fair share with it; preempt: a non-preemptible job over quota) or that finds no
        scenario drops its class for the action. Victims: running preemptible jobs of other leaf queues
        (reclaim) or of the job's queue with a lower priority (preempt), popped by :func:`victim_first` down
        the tree, each leaf's in reverse job order. Solver: probes of k pods (1, 2, 4, ..., then halves),
        each from the recorded victims of the last solved probe, adding victims one at a time and trying
        for each node of the one added the recorded victims plus the added ones on that node; k pods fit
        when the feasible nodes' idle whole GPUs, CPU and memory plus the victims' hold k of them; reclaim
        scenarios must pass :func:`reclaimable`. A solved job evicts its victims (whole) and its pods take
        node room, the victims' nodes first.
        """
        num = len(kq.names)
        leaves = kq.num_leaves
        index = {name: q for q, name in enumerate(kq.cluster_queues)}

        def kai(amount: int, r: int) -> float:
            if r == 0:
                return float(amount) / 1000.0
            return float(amount) * MB_PER_MIB if r == 2 else float(amount)

        def held(job: Job, pods: int) -> tuple[float, float, float]:
            return (kai(pods * job.pod.milli, 0), kai(pods * job.pod.cpu, 1), kai(pods * job.pod.mem, 2))

        def refresh() -> None:
            for n in range(num):
                state[n].allocated = (alloc[n][0], alloc[n][1], alloc[n][2])
                state[n].non_preemptible = (np_alloc[n][0], np_alloc[n][1], np_alloc[n][2])

        def move(q: int, amounts: Sequence[float], fixed: bool) -> None:
            for r in range(3):
                n = q
                while n >= 0:
                    alloc[n][r] += amounts[r]
                    np_alloc[n][r] += amounts[r] if fixed else 0.0
                    n = int(kq.parent[n])
            refresh()

        def shape(job: Job) -> tuple[int, int, int]:
            return (job.pod.milli // 1000, int(job.pod.cpu), int(job.pod.mem))

        def cap(job: Job, room: Sequence[float]) -> int:
            # An unknown CPU or memory capacity (inf) never runs out.
            fits = [
                math.floor(room[r] / need)
                for r, need in enumerate(shape(job))
                if need > 0 and room[r] < math.inf
            ]
            return min([job.num_pods, *fits])

        reclaim_on = kq.actions & 1 != 0
        preempt_on = kq.actions & 2 != 0

        def action(within: bool) -> None:
            room = [[float(len(node.wholly_free())), node.free_cpu, node.free_mem] for node in self.cluster]
            for other in self.nominees:  # earlier preemptors' pipelined pods keep their room
                for n in other.nominated:
                    for r, amount in enumerate(shape(other)):
                        room[n][r] -= amount
            queued = self.pending_in_queue_order()
            per_queue: list[list[Job]] = [[] for _ in range(leaves)]
            for job in queued:
                per_queue[index[job.queue]].append(job)
            tried = [0] * leaves
            dropped: set[tuple[Any, ...]] = set()

            def head(q: int) -> Job | None:
                while tried[q] < len(per_queue[q]):
                    job = per_queue[q][tried[q]]
                    if klass(job) not in dropped:
                        return job
                    tried[q] += 1
                return None

            def need(job: Job) -> tuple[float, float, float]:
                return held(job, job.num_pods)

            running = [j for j in self.jobs if j.state == "running" and j.preemptible and j.placements]
            while True:
                q = self.kai_pick(kq, state, total, head, need)
                if q is None:
                    break
                job = head(q)
                assert job is not None
                tried[q] += 1
                if job.waiting > 0:
                    continue  # pipelined on its victims' resources by allocate
                request = need(job)
                allowed = (
                    preempt_within_quota(state, q, request, job.preemptible)
                    if within
                    else can_reclaim(state[q], request, job.preemptible)
                )
                victims = (
                    self.kai_solve(kq, state, total, job, q, request, within, running, room, cap)
                    if allowed
                    else None
                )
                if victims is None:
                    dropped.add(klass(job))
                    continue
                # Commit: the victims' pods free their nodes, the job's take room (victims' nodes first).
                touched: list[int] = []
                for v in victims:
                    for p in v.placements:
                        if p.node not in touched:
                            touched.append(p.node)
                        for r, amount in enumerate(shape(v)):
                            room[p.node][r] += amount
                left = job.num_pods
                pipelined: list[int] = []
                for n in touched + [n for n in range(len(self.cluster))]:
                    if left == 0:
                        break
                    if not pod_fits(self.empty[n], job.pod):
                        continue
                    take = min(left, cap(job, room[n]))
                    if take <= 0:
                        continue
                    for r, amount in enumerate(shape(job)):
                        room[n][r] -= take * amount
                    left -= take
                    pipelined += [n] * take
                # Its pods are pipelined there: their room is hidden from every other class until it starts
                # (or the first cycle after its victims are gone ends), as KAI's allocate pipelines it on the
                # releasing resources session after session.
                self.end_nomination(job)
                job.nominated = pipelined
                job.kai_reserved = True
                self.nominees.append(job)
                for v in victims:
                    move(index[v.queue], [-a for a in held(v, len(v.placements))], False)
                    self.evict(v, job)
                move(q, request, not job.preemptible)

        for within in [w for w, on in ((False, reclaim_on), (True, preempt_on)) if on]:
            action(within)
        if kq.preempt_min_runtime is not None:
            self.wake = self.kai_protection_wake(kq)

    def kai_min_runtime(self, kq: KaiQueues, q: int, vq: int, within: bool) -> float:
        """[KAI min-runtime] the protection of a job of leaf ``vq`` against the preempt action (``within``)
        or a reclaim by leaf ``q``, in seconds."""
        if kq.preempt_min_runtime is None or kq.reclaim_min_runtime is None:
            return 0.0
        return float(kq.preempt_min_runtime[vq] if within else kq.reclaim_min_runtime[q, vq])

    def kai_protected(self, kq: KaiQueues, q: int, v: Job, within: bool) -> bool:
        """[KAI min-runtime] ``v`` is no victim until its last start plus its min-runtime."""
        index = {name: n for n, name in enumerate(kq.cluster_queues)}
        return self.now < v.start + self.kai_min_runtime(kq, q, index[v.queue], within)

    def kai_protection_wake(self, kq: KaiQueues) -> float:
        """[KAI min-runtime] "Wake": while jobs are pending, the next time a running preemptible job's
        protection ends for some queue of an action that is on (KAI's periodic sessions would try again)."""
        if not self.with_state("pending"):
            return math.inf
        index = {name: n for n, name in enumerate(kq.cluster_queues)}
        ends: list[float] = []
        for v in self.with_state("running"):
            if not v.preemptible or not v.placements:
                continue
            b = index[v.queue]
            if kq.actions & 1:
                ends += [
                    v.start + self.kai_min_runtime(kq, a, b, False) for a in range(kq.num_leaves) if a != b
                ]
            if kq.actions & 2:
                ends.append(v.start + self.kai_min_runtime(kq, b, b, True))
        return min((e for e in ends if e > self.now), default=math.inf)

    def kai_solve(
        self,
        kq: KaiQueues,
        state: list[KaiQueueState],
        total: list[float],
        job: Job,
        q: int,
        request: tuple[float, float, float],
        within: bool,
        running: list[Job],
        room: list[list[float]],
        cap: Callable[[Job, Sequence[float]], int],
    ) -> list[Job] | None:
        """[KAI reclaim] ``JobSolver.Solve`` for ``job`` of leaf ``q``: its whole gang's victims, or None."""
        num = len(kq.names)
        leaves = kq.num_leaves
        index = {name: n for n, name in enumerate(kq.cluster_queues)}
        feasible = [pod_fits(self.empty[n], job.pod) for n in range(len(self.cluster))]
        base = sum(cap(job, room[n]) for n in range(len(self.cluster)) if feasible[n])

        def held(v: Job) -> tuple[float, float, float]:
            pods = len(v.placements)
            return (
                pods * v.pod.milli / 1000.0,
                float(pods * v.pod.cpu),
                float(pods * v.pod.mem) * MB_PER_MIB,
            )

        # The victim order, generated as far as a probe needs it.
        lists: list[list[Job]] = [[] for _ in range(leaves)]
        for v in running:
            vq = index[v.queue]
            if v.state != "running":
                continue  # evicted earlier in this action
            if (
                (vq == q) == within
                and (not within or v.priority < job.priority)
                and not self.kai_protected(kq, q, v, within)  # [KAI min-runtime]
            ):
                lists[vq].append(v)
        for vq in range(leaves):
            lists[vq].sort(key=self.queue_key, reverse=True)
        taken: list[list[float]] = [[0.0, 0.0, 0.0] for _ in range(leaves)]
        order: list[Job] = []

        def victim(i: int) -> Job | None:
            while len(order) <= i:
                best: list[int | None] = [None] * num
                chosen: dict[int, int] = {}
                for n in range(num):
                    if n < leaves and lists[n]:
                        best[n] = n
                    leaf = best[n]
                    if leaf is None:
                        continue
                    up = num if kq.parent[n] < 0 else int(kq.parent[n])
                    other = chosen.get(up)
                    if other is None:
                        chosen[up] = n
                    else:
                        rival = best[other]
                        assert rival is not None
                        mine = [taken[leaf][r] + held(lists[leaf][0])[r] for r in range(3)]
                        theirs = [taken[rival][r] + held(lists[rival][0])[r] for r in range(3)]
                        if victim_first(state[n], mine, state[other], theirs, total):
                            chosen[up] = n
                    if up < num and chosen[up] == n:
                        best[up] = leaf
                top = chosen.get(num)
                if top is None:
                    return None
                leaf = best[top]
                assert leaf is not None
                v = lists[leaf].pop(0)
                for r in range(3):
                    taken[leaf][r] += held(v)[r]
                order.append(v)
            return order[i]

        def fits(scenario: list[Job], k: int) -> bool:
            freed: dict[int, list[float]] = {}
            for v in scenario:
                for p in v.placements:
                    row = freed.setdefault(p.node, [0.0, 0.0, 0.0])
                    row[0] += v.pod.milli // 1000
                    row[1] += int(v.pod.cpu)
                    row[2] += int(v.pod.mem)
            # common.AllocateJob's capacity check on the simulated state: the victims' allocations gone.
            after = [replace(s) for s in state]
            for v in scenario:
                n = index[v.queue]
                while n >= 0:
                    a = after[n].allocated
                    h = held(v)
                    after[n].allocated = (a[0] - h[0], a[1] - h[1], a[2] - h[2])
                    n = after[n].parent
            pods = (k * job.pod.milli / 1000.0, float(k * job.pod.cpu), float(k * job.pod.mem) * MB_PER_MIB)
            if not within_capacity(after, q, pods, job.preemptible):
                return False
            count = base
            for n, extra in freed.items():
                if feasible[n]:
                    count += cap(job, [room[n][r] + extra[r] for r in range(3)]) - cap(job, room[n])
            if count < k:
                return False
            if within:
                return True
            return reclaimable(
                state, q, request, job.preemptible, [(index[v.queue], held(v)) for v in scenario]
            )

        def probe(k: int, recorded: list[Job]) -> list[Job] | None:
            if recorded and fits(recorded, k):
                return list(recorded)
            added: list[Job] = []
            i = 0
            while True:
                v = victim(i)
                i += 1
                if v is None:
                    return None
                if v in recorded:
                    continue
                added.append(v)
                for n in sorted({p.node for p in v.placements}):
                    scenario = recorded + [u for u in added if any(p.node == n for p in u.placements)]
                    if fits(scenario, k):
                        return scenario

        # searchMaxSolvableK: doubling, then halving, then the whole job.
        recorded: list[Job] = []
        lo, hi, k = 0, 0, 1
        while True:
            got = probe(k, recorded)
            if got is None:
                hi = k
                break
            recorded, lo = got, k
            if k == job.num_pods:
                break
            k = min(2 * k, job.num_pods)
        while lo < job.num_pods and hi - lo > 1:
            k = (lo + hi) // 2
            got = probe(k, recorded)
            if got is None:
                hi = k
            else:
                recorded, lo = got, k
        if lo == 0:
            return None
        return probe(job.num_pods, recorded)

    def kai_pick(
        self,
        kq: KaiQueues,
        state: list[KaiQueueState],
        total: list[float],
        head: Callable[[int], Job | None],
        need: Callable[[Job], tuple[float, float, float]],
    ) -> int | None:
        """[KAI queues] The leaf whose head job is popped next: from the top down, at each level the child
        first in :func:`queue_before` with its subtree's best head job (a later child wins only when it goes
        strictly before)."""
        num = len(kq.names)
        best: list[int | None] = [None] * num  # best leaf in each subtree
        chosen: dict[int, int] = {}  # parent (num: the top) -> best child
        for n in range(num):
            if n < kq.num_leaves and head(n) is not None:
                best[n] = n
            leaf = best[n]
            if leaf is None:
                continue
            up = num if kq.parent[n] < 0 else int(kq.parent[n])
            other = chosen.get(up)
            if other is None:
                chosen[up] = n
            else:
                mine, theirs = head(leaf), head(best[other])  # type: ignore[arg-type]
                assert mine is not None and theirs is not None
                if queue_before(state[n], need(mine), state[other], need(theirs), total):
                    chosen[up] = n
            if up < num and chosen[up] == n:
                best[up] = leaf
        top = chosen.get(num)
        return None if top is None else best[top]

    def fair_order(self, quotas: KueueQuotas, entries: list[Any]) -> Iterator[Any]:
        """[Kueue quotas] fair sharing: each next head is the tournament's winner at the current usage."""
        left = list(entries)
        while left:
            winner = self.tournament(quotas, left)
            left.remove(winner)
            yield winner

    def tournament(self, quotas: KueueQuotas, entries: list[Any]) -> Any:
        """[Kueue quotas] Kueue's ``runTournament``: per cohort, the child with the lowest share after its
        workload's admission wins (then priority, FIFO); across roots, queue order."""
        usage = self.kueue_usage()
        values: dict[tuple[int, int], tuple[float, float]] = {}
        for _, _, q, job in entries:
            request = self.kueue_request(job)
            added = [
                [u + (request[r] if n == q else 0) for n, u in enumerate(row)] for r, row in enumerate(usage)
            ]
            nodes = node_usage(quotas, added)
            x, p = q, int(quotas.parent[q])
            while p >= 0:
                weighted, ratio = share(quotas, nodes, x)
                values[(job.job_id, p)] = (weighted, ratio if math.isinf(weighted) else 0.0)
                x, p = p, int(quotas.parent[p])
        by_queue = {e[2]: e for e in entries}
        children: dict[int, list[int]] = {}
        for n in range(len(quotas.names)):
            children.setdefault(int(quotas.parent[n]), []).append(n)

        def play(cohort: int) -> Any:
            candidates = []
            for child in children.get(cohort, []):
                if child >= quotas.num_cluster_queues:
                    winner = play(child)
                    if winner is not None:
                        candidates.append(winner)
                elif child in by_queue:
                    candidates.append(by_queue[child])
            if not candidates:
                return None
            return min(candidates, key=lambda e: (values[(e[3].job_id, cohort)], e[1]))

        finalists = []
        for root in children.get(-1, []):
            winner = play(root) if root >= quotas.num_cluster_queues else by_queue.get(root)
            if winner is not None:
                finalists.append(winner)
        return min(finalists, key=lambda e: e[1])

    def run_time(self, job: Job) -> float:
        """How long ``job`` would run if started now (restart overhead included)."""
        return (0.0 if job.first_start is None else job.overhead) + job.work_left

    def easy_cycle(self) -> None:
        """[Gang mode] EASY backfill (Lifka 1995): only the first blocked job H holds a reservation."""
        order = self.pending_in_queue_order()
        for position, head in enumerate(order):
            if self.try_gang(head):
                self.start(head)
                continue
            rest = order[position + 1 :]
            shadow, projected = self.reservation(head)
            if shadow is None or projected is None:
                # H cannot fit even on the projected empty state: no reservation, like skip.
                self.skip_cycle(rest, failed=1)
                return
            if self.policy.backfill_depth > 0:
                rest = rest[: self.policy.backfill_depth]
            for job in rest:
                if not self.try_gang(job):
                    continue
                if self.now + self.run_time(job) <= shadow:
                    self.start(job)
                    continue
                # J ends after S: its resources count as held at S on the projected state.
                with_job = clone(projected)
                for placement in job.placements:
                    take(with_job[placement.node], placement)
                if fits_gang(with_job, head.pod, head.num_pods):
                    projected = with_job
                    self.start(job)
                else:
                    self.undo_gang(job)
            return

    def reservation(self, head: Job) -> tuple[float | None, Cluster | None]:
        """Shadow time S and the projected state at S for the blocked head job H."""
        projected = clone(self.cluster)
        running = sorted(self.with_state("running"), key=lambda j: (j.finish, j.job_id))
        for job in running:
            for placement in job.placements:
                release(projected[placement.node], placement)
            # Stop at the first release that lets H fit: other jobs ending at the same time stay held.
            if fits_gang(projected, head.pod, head.num_pods):
                return job.finish, projected
        return None, None

    def pod_by_pod_cycle(self) -> None:
        """[Pod-by-pod mode] One pass over the pod queue; placed pods stay placed.

        The pass takes, each time, the first pod in ``(queue key, pods placed, job_id)`` order among
        the pending jobs not yet skipped this cycle: the same order as sorting the whole pod queue
        once, since a placed pod's successor sorts after it.
        """
        skipped: set[int] = set()
        while True:
            queue = [j for j in self.with_state("pending") if j.row not in skipped]
            if not queue:
                return
            job = min(queue, key=self.pod_queue_key)
            placement = self.place_next_pod(job)
            if placement is None:
                skipped.add(job.row)
                self.maybe_preempt(job, whole=False)
                continue
            if not job.placements:
                self.begin_attempt(job)
            job.placements.append(placement)
            if len(job.placements) == job.num_pods:
                self.start(job)

    # -- re-partitioning idle GPUs  [MIG re-partitioning] -----------------------------------------

    def repartition(self) -> None:
        """[MIG re-partitioning] "The controller": for each MIG model (code order: names sorted), its GPUs."""
        for model in sorted({str(n.base_model) for n in self.cluster if n.mig_candidates}):
            self.repartition_model([n for n in self.cluster if n.mig_candidates and n.base_model == model])

    def repartition_model(self, nodes: list[Node]) -> None:
        """[MIG re-partitioning] "The controller" on the re-partitioning ``nodes`` of one model, at now.

        R[P] = the unplaced pods of pending jobs that may use the model and get P there; S[P] = the free
        instances of P on its GPUs outside downtime plus the instances of P in the configs being applied.
        While some R[P] > S[P], the GPUs in order: one holding no slice and not in downtime, of config C,
        goes to the candidate L of greatest served(L) (ties the earlier) when served(L) > served(C), with
        S' = S minus C's instances; it is then down until now + mig_reconfigure_s and S = S' + L's.
        """
        first = nodes[0]
        configs = first.mig_candidates  # one model: the same candidates on every node
        geometry = mig_geometry(str(first.base_model))
        asked: dict[str, int] = {}  # R
        for job in self.with_state("pending"):
            pod = job.pod
            if not 0 < pod.milli < WHOLE_GPU or not model_allowed(first, pod):
                continue
            profile = instance_profile(first, pod)
            assert profile is not None  # the model allows the pod
            asked[profile.name] = asked.get(profile.name, 0) + job.num_pods - len(job.placements)
        supply = {p: 0 for p in asked}  # S
        for node in nodes:
            for gpu in node.gpus:
                for p in supply:
                    if gpu.down_until is not None:
                        supply[p] += len(configs[str(gpu.layout)].get(p, ()))
                    else:
                        supply[p] += len(free_starts(node, gpu, geometry.profile(p)))
        for node in nodes:
            for gpu in node.gpus:
                if not any(asked[p] > supply[p] for p in asked):
                    return
                if gpu.mig_mask != 0 or gpu.down_until is not None:
                    continue  # a pod uses one of its instances, or it is being re-partitioned
                current = str(gpu.layout)
                rest = {p: supply[p] - len(configs[current].get(p, ())) for p in asked}  # S'
                best, best_served = current, -1
                for name in configs:  # candidate order: a tie keeps the earlier
                    count = served(configs[name], asked, rest)
                    if count > best_served:
                        best, best_served = name, count
                if best_served <= served(configs[current], asked, rest):
                    continue  # no strict improvement: nothing changes, S stays
                gpu.layout = best
                gpu.starts = {}  # no instance during the downtime: nothing fits the GPU
                gpu.down_until = self.now + self.reconfigure_s
                self.reconfigurations.append((self.now, gpu.down_until))
                supply = {p: rest[p] + len(configs[best].get(p, ())) for p in asked}

    def end_downtimes(self) -> bool:
        """[MIG re-partitioning] "Event" (step 1b): every GPU whose downtime ends now gets its new config's
        instances, in GPU order. True when one did (a change: a cycle follows)."""
        changed = False
        for node in self.cluster:
            for gpu in node.gpus:
                if gpu.down_until is not None and gpu.down_until == self.now:
                    gpu.starts = node.mig_candidates[str(gpu.layout)]
                    gpu.down_until = None
                    changed = True
        return changed

    def downtime_ends(self) -> list[float]:
        """[MIG re-partitioning] When each GPU now in downtime gets its instances (event times)."""
        return [g.down_until for n in self.cluster for g in n.gpus if g.down_until is not None]

    def rejection_cluster(self, pod: Pod) -> Cluster:
        """[Rejection at arrival] The EMPTY cluster a job is checked on.

        [MIG re-partitioning] (the spec does not say which layouts the empty cluster has): a GPU may be
        given any candidate config, so each re-partitioning GPU holds the candidate with the most
        instances of the profile the pod gets there (ties the earlier candidate).
        """
        if not self.repartitioning or not 0 < pod.milli < WHOLE_GPU:
            return self.empty
        empty = clone(self.empty)
        for node in empty:
            if not node.mig_candidates or not model_allowed(node, pod):
                continue
            profile = instance_profile(node, pod)
            assert profile is not None
            best, most = "", -1
            for name, starts in node.mig_candidates.items():
                if len(starts.get(profile.name, ())) > most:
                    best, most = name, len(starts.get(profile.name, ()))
            for gpu in node.gpus:
                gpu.layout, gpu.starts = best, node.mig_candidates[best]
        return empty

    # -- priority preemption  [Priority preemption] -----------------------------------------------

    def maybe_preempt(self, job: Job, *, whole: bool) -> None:
        """Who may preempt: not ``Never``, not waiting for its victims, its class not known to fail."""
        if self.policy.preemption is Preemption.none or not job.can_preempt or job.waiting > 0:
            return
        key = self.class_key(job)
        if self.search_failed.get(key) == self.version:
            return
        self.searches += 1
        if self.preempt_for(job, whole) == 0:
            self.search_failed[key] = self.version

    def eligible(self, victim: Job, preemptor: Job, chosen: list[Job]) -> bool:
        """Victims: holding pods, preemptible, strictly lower priority, not terminating, not chosen yet.

        [Idle-resource reclaim] priority at most the preemptor's, and not exempt.
        """
        holding = victim.state == "running" or (victim.state == "pending" and len(victim.placements) > 0)
        if not (
            victim is not preemptor
            and holding
            and victim.preemptible
            and not any(victim is c for c in chosen)
        ):
            return False
        if self.policy.preemption is Preemption.reclaim_idle:
            return victim.priority <= preemptor.priority and not self.exempt(victim, preemptor)
        return victim.priority < preemptor.priority

    def exempt(self, victim: Job, preemptor: Job) -> bool:
        """[Idle-resource reclaim] rules 1-5."""
        use = victim.idle
        assert use is not None
        if not use.policy or preemptor.priority >= use.min_prio:
            return False
        if use.toleration < 0 or victim.state != "running":
            return True
        return self.now < eligible_from(use, victim.start)

    def next_wake(self) -> float:
        """[Idle-resource reclaim] "Wake": the smallest eligible > now, inf with nothing pending."""
        if not self.with_state("pending"):
            return math.inf
        times = [
            eligible_from(j.idle, j.start)
            for j in self.with_state("running")
            if j.preemptible and j.idle is not None and j.idle.policy
        ]
        return min((at for at in times if at > self.now), default=math.inf)

    def started_at(self, victim: Job) -> float:
        """A running job's attempt start; a partly placed job's hold start."""
        return victim.start if victim.state == "running" else victim.hold_start

    def importance(self, victim: Job) -> tuple[int, float, int]:
        """Sort key, most important first: higher priority, then earlier start, then lower job_id."""
        return (-victim.priority, self.started_at(victim), victim.job_id)

    def victims_on_node(self, trial: Cluster, n: int, preemptor: Job, chosen: list[Job]) -> list[Job] | None:
        """Step 2: remove every eligible victim's pods on node n, then reprieve; None: infeasible."""
        pod = preemptor.pod
        candidates = [
            v
            for v in self.jobs
            if self.eligible(v, preemptor, chosen) and any(p.node == n for p in v.placements)
        ]
        if not candidates:
            return None
        node = trial[n].copy()
        for v in candidates:
            for p in v.placements:
                if p.node == n:
                    release(node, p)
        if not (pod_fits(node, pod) and self.room_beside_nominees(node, preemptor)):
            return None
        victims = []
        for v in sorted(candidates, key=self.importance):
            mine = [p for p in v.placements if p.node == n]
            for p in mine:
                take(node, p)
            if pod_fits(node, pod) and self.room_beside_nominees(node, preemptor):
                continue  # reprieved
            for p in mine:
                release(node, p)
            victims.append(v)
        return victims

    def node_rank(self, victims: list[Job]) -> tuple[int, int, int, float]:
        """Step 3, smaller first: top victim priority, sum of (priority + 2^31), count, -earliest start."""
        top = max(v.priority for v in victims)
        total = sum(v.priority + PRIORITY_OFFSET for v in victims)
        earliest = min(self.started_at(v) for v in victims if v.priority == top)
        return (top, total, len(victims), -earliest)

    def select_node(
        self, trial: Cluster, preemptor: Job, pod_index: int, attempt: int, chosen: list[Job]
    ) -> tuple[int, list[Job]] | None:
        """Steps 1-3 for one pod that fits nowhere on the trial state."""
        num_nodes = len(trial)
        wanted = max(self.policy.min_candidate_nodes, num_nodes * self.policy.candidate_nodes_percent // 100)
        wanted = min(wanted, num_nodes)
        offset = draw(self.seed, preemptor.job_id, pod_index, attempt, DECISION_PREEMPT_OFFSET) % max(
            num_nodes, 1
        )
        best: tuple[int, list[Job]] | None = None
        found = 0
        for i in range(num_nodes):
            n = (offset + i) % num_nodes
            if not pod_fits(self.empty[n], preemptor.pod):
                continue  # the pod does not fit this node even when it is empty
            victims = self.victims_on_node(trial, n, preemptor, chosen)
            if victims is None:
                continue
            found += 1
            if best is None or self.node_rank(victims) < self.node_rank(best[1]):
                best = (n, victims)
            if found >= wanted:
                break
        return best

    def preempt_for(self, job: Job, whole: bool) -> int:
        """The search on a trial copy; evicts (for real) and returns the number of victims, or 0."""
        trial = clone(self.cluster)
        chosen: list[Job] = []
        placed = list(job.placements)  # the trial placements of the preemptor, after its real ones
        attempt = job.attempt_number()
        while len(placed) < job.num_pods:
            pod_index = len(placed)
            node = self.choose(trial, job, pod_index, attempt)
            if node is None:
                selected = self.select_node(trial, job, pod_index, attempt, chosen)
                if selected is None:
                    break
                node, victims = selected
                for v in victims:
                    chosen.append(v)
                    for p in v.placements:  # every pod of the victim leaves the trial state
                        release(trial[p.node], p)
            placed.append(self.place(trial, node, job, pod_index, attempt))
        complete = len(placed) == job.num_pods
        if not chosen or (whole and not complete):
            return 0
        self.nominate(job, [p.node for p in placed[len(job.placements) :]])
        for v in chosen:
            self.evict(v, job)
            self.end_nomination(v)  # a partly placed victim may itself wait for victims
        return len(chosen)

    # -- measurements --------------------------------------------------------------------------

    def allocated_milli(self) -> int:
        return sum(WHOLE_GPU - g.free_milli for n in self.cluster for g in n.gpus)

    def sample(self) -> dict[str, Any]:
        """[Timeline row (sampled)], with each queue's row under ``queues``."""
        gpus = [g for n in self.cluster for g in n.gpus]
        queued = self.pending_in_queue_order()
        gpu_pods = [job.pod for job in queued if job.pod.milli > 0]
        fragmented = 0
        if gpu_pods:
            smallest = min(gpu_pods, key=lambda pod: pod.milli)  # first of equals = queue order
            fragmented = sum(len(n.wholly_free()) for n in self.cluster if not pod_fits(n, smallest))
        return {
            "time": self.now,
            "allocated_gpus": sum(1 for g in gpus if g.free_milli < WHOLE_GPU),
            "allocated_milli": self.allocated_milli(),
            "pending_jobs": len(queued),
            "running_jobs": len(self.with_state("running")),
            "fragmented_gpus": fragmented,
            "preemptions": self.evictions,
            "terminating_jobs": len(self.with_state("terminating")),
            "lost_gpu_seconds": self.lost_charged + sum(uncharged(job, self.now) for job in self.jobs),
            "mig_stranded_slices": stranded_slices(self.cluster, self.mig_wanted),
            "queues": self.sample_queues(),
        }

    def sample_queues(self) -> list[dict[str, Any]]:
        """[Queue row (sampled)] one row per queue, by name."""
        rows = []
        # [Kueue flavors] the usage per flavor and resource (quota rows), with several flavors.
        per_row = self.kueue_usage() if self.kueue is not None and len(self.kueue.flavors) > 1 else None
        for name in self.queue_names:
            mine = [job for job in self.jobs if job.queue == name]
            # [Kueue waitForPodsReady] an admitted job's reservation counts all of its pods.
            held = {job.row: job.num_pods if job.reserved else len(job.placements) for job in mine}
            rows.append(
                {
                    "time": self.now,
                    "queue": name,
                    "usage_milli": sum(held[job.row] * job.pod.milli for job in mine),
                    "usage_cpu": sum(held[job.row] * job.pod.cpu for job in mine),
                    "usage_mem": sum(held[job.row] * job.pod.mem for job in mine),
                    "pending_jobs": sum(1 for job in mine if job.state == "pending"),
                    "running_jobs": sum(1 for job in mine if job.state == "running"),
                    # [Volcano queues] the last session's deserved milli-GPU and share x 10^6.
                    "deserved": self.volcano_deserved[len(rows)] if self.volcano_deserved else 0,
                    "share_ppm": self.volcano_share[len(rows)] if self.volcano_share else 0,
                    "usage_rows": [] if per_row is None else [row[len(rows)] for row in per_row],
                }
            )
        return rows

    def check_capacity(self) -> None:
        """Nothing allocated twice or beyond capacity."""
        for node in self.cluster:
            assert 0 <= node.free_cpu <= node.cpu and 0 <= node.free_mem <= node.mem, node
            for g in node.gpus:
                assert 0 <= g.free_milli <= WHOLE_GPU and 0 <= g.free_mem <= node.gpu_mem, node
                assert 0 <= g.pods <= node.split, node
                if node.dynamic_mig:  # [Dynamic MIG] a GPU's free milli is its free slices' (exact)
                    assert g.free_milli == WHOLE_GPU - SLICE_MILLI * bin(g.mig_mask).count("1"), node
                if g.down_until is not None:  # [MIG re-partitioning] no pod on a GPU in downtime
                    assert g.mig_mask == 0 and g.pods == 0 and g.down_until >= self.now, node
            # [Kubelet Topology Manager] exclusive CPUs within each NUMA node's
            assert all(0 <= f <= c for f, c in zip(node.numa_free, node.numa_cpus, strict=True)), node

    # -- event loop  [Time and events] -------------------------------------------------------------

    def run(
        self, sample_interval: float, horizon: float | None, window: tuple[float, float], max_samples: int
    ) -> tuple[list[dict[str, float | int]], float, float, float]:
        periodic = self.policy.session_interval > 0
        session = self.policy.session_interval
        arrivals = sorted(self.jobs, key=lambda j: (j.submit, j.job_id))
        next_arrival = 0  # index into ``arrivals``
        sample_k = 0  # next sample at sample_k * interval
        interval = sample_interval
        tick = 0  # next periodic cycle at tick * session_interval
        cycle_owed = False  # periodic: a change happened that no cycle has seen yet
        processed = False
        rows: list[dict[str, float | int]] = []
        integral = window_integral = 0.0
        end = math.inf if horizon is None else horizon

        def due(t: float) -> bool:
            return (
                any(j.finish == t for j in self.with_state("running"))
                or any(tm[0] == t for tm in self.timers)
                or any(tm[0] == t for tm in self.ready_timers)
                or t in self.downtime_ends()  # [MIG re-partitioning] mig_reconfigure_s = 0
            )

        while True:
            idle = not self.with_state("running") and not self.with_state("terminating")
            # [Kubelet Topology Manager] a job backing off comes back: the run goes on for it.
            idle = idle and not self.with_state("backoff")
            idle = idle and not self.ready_timers  # [Kueue waitForPodsReady] a timeout or back-off to come
            # [MIG re-partitioning] "The run does not end while a GPU is in downtime."
            idle = idle and not self.downtime_ends()
            if processed and idle and next_arrival == len(arrivals) and not (periodic and cycle_owed):
                break
            while True:
                candidates = [sample_k * interval]
                candidates += [j.finish for j in self.with_state("running")]
                candidates += [tm[0] for tm in self.timers]
                candidates += [tm[0] for tm in self.ready_timers]
                candidates += self.downtime_ends()  # [MIG re-partitioning] step 1b
                if next_arrival < len(arrivals):
                    candidates.append(arrivals[next_arrival].submit)
                if periodic:
                    candidates.append(tick * session)
                candidates.append(self.wake)  # [Idle-resource reclaim] "Wake"
                t = min(candidates)
                if t == sample_k * interval and len(rows) == max_samples and t <= end:
                    # [Samples] the row would exceed max_samples: double the interval, keep even k.
                    rows = rows[::2]
                    interval *= 2
                    sample_k = (sample_k + 1) // 2
                    continue  # the new grid may not sample at t
                break
            # allocated_milli is constant between events: integrate exactly.
            alloc = self.allocated_milli()
            if t > end:
                # [Time and events] a run not over by the horizon ends at the horizon itself.
                integral += alloc * (end - self.now)
                window_integral += alloc * max(0.0, min(end, window[1]) - max(self.now, window[0]))
                self.now = end
                break
            integral += alloc * (t - self.now)
            window_integral += alloc * max(0.0, min(t, window[1]) - max(self.now, window[0]))
            self.now = t
            processed = True

            first_pass = True
            while True:
                changed = False
                # 1. completions, in job_id order
                for job in sorted(self.with_state("running"), key=lambda j: j.job_id):
                    if job.finish == t:
                        self.complete(job)
                        changed = True
                # 1b. [MIG re-partitioning] downtimes ending at t, in GPU order (a change)
                if self.end_downtimes():
                    changed = True
                # 2. timers due at t, in (kind, order set) order
                for timer in sorted(tm for tm in self.timers if tm[0] == t):
                    self.timers.remove(timer)
                    if timer[2].state == "backoff":
                        self.end_backoff(timer[2])  # [Kubelet Topology Manager] its back-off ends
                    else:
                        self.terminate(timer[2])
                    changed = True
                # [Kueue waitForPodsReady] then its back-offs and timeouts, in (kind, order set) order; a
                # back-off of 0 s set by a timeout fires in this pass too.
                while any(tm[0] == t for tm in self.ready_timers):
                    ready = min((tm for tm in self.ready_timers if tm[0] == t), key=lambda tm: tm[1:3])
                    self.ready_timers.remove(ready)
                    if ready[1] == READY_BACKOFF:
                        self.end_ready_backoff(ready[3])
                    else:
                        self.ready_timeout(ready[3])
                    changed = True
                if self.wake == t:  # [Idle-resource reclaim] "Wake": a change and a release
                    self.wake = math.inf
                    self.version += 1
                    changed = True
                # 3. arrivals, in (submit_time, job_id) order
                while first_pass and next_arrival < len(arrivals) and arrivals[next_arrival].submit == t:
                    self.admit(arrivals[next_arrival])
                    next_arrival += 1
                    changed = True  # a rejected arrival counts too
                cycle_owed = cycle_owed or changed
                # 4. scheduling cycle
                if (periodic and t == tick * session) or (not periodic and changed):
                    self.cycle()
                    cycle_owed = False
                    if self.policy.preemption is Preemption.reclaim_idle:
                        self.wake = self.next_wake()
                # 5. sample (once per time, in the first pass)
                if first_pass and t == sample_k * interval:
                    rows.append(self.sample())
                    sample_k += 1
                first_pass = False
                # Duration-0 jobs started now and grace-0 evictions: more passes at the same t.
                if not due(t):
                    break
            if periodic and t == tick * session:
                tick += 1
        return rows, integral, window_integral, interval


def served(config: dict[str, tuple[int, ...]], asked: dict[str, int], rest: dict[str, int]) -> int:
    """[MIG re-partitioning] served(L) = sum over P of min(instances of P in L, max(0, R[P] - S'[P]))."""
    return sum(min(len(config.get(p, ())), max(0, asked[p] - rest[p])) for p in asked)


def _final_state(job: Job) -> str:
    """[Time and events] Final states."""
    if job.state in ("finished", "rejected", "failed"):  # failed: [Kubelet Topology Manager]
        return job.state
    if job.state in ("pending", "admitted") and job.placements:
        return "deadlocked"  # [Kueue waitForPodsReady] admitted by quota, some pods placed
    return "unfinished"


def _attempt_rows(job: Job, end: float) -> list[dict[str, Any]]:
    """Every attempt of ``job``: its records (clamped at the end of the run) and the open one."""
    records = list(job.records)
    if job.state == "running":
        records.append(
            Attempt(
                number=job.attempts_begun - 1,
                hold_start=job.hold_start,
                start=job.start,
                placements=list(job.placements),
                nodes=job.nodes_spanned,
                end_reason="unfinished",
                end=end,
                progress=job.progress_at(end),
                restart_overhead=job.overhead_spent(end),
            )
        )
    elif job.state in ("pending", "admitted") and job.placements:
        records.append(
            Attempt(
                number=job.attempts_begun - 1,
                hold_start=job.hold_start,
                start=None,
                placements=list(job.placements),
                nodes=0,
                end_reason="deadlocked",
                end=end,
            )
        )
    rows = []
    for a in records:
        until = min(a.end, end)  # a grace period may outlast the run
        rows.append(
            {
                "job_id": job.job_id,
                "attempt": a.number,
                "hold_start": a.hold_start,
                "start": a.start,
                "evicted": a.evicted,
                "end": until,
                "gpus": len(a.placements) * job.pod.milli / 1000.0,
                "pods": len(a.placements),
                "nodes": a.nodes,
                "end_reason": a.end_reason,
                "progress": a.progress,
                "work_lost": a.work_lost,
                "restart_overhead": a.restart_overhead,
                # [Accounting] what each pod holds ([Dynamic MIG] its instance's slices, or a whole GPU).
                "gpu_seconds": sum((until - p.time) * p.held_milli for p in a.placements) / 1000.0,
                "evicted_by": a.evicted_by,
            }
        )
    return rows


def uncharged(job: Job, t: float) -> float:
    """[Accounting] Lost GPU-seconds spent by ``t`` and not charged yet: charges come when they end.

    The restart overhead a running attempt has spent, the grace period a
    terminating job has held.
    """
    if job.state == "running":
        return job.gpus * job.overhead_spent(t)
    if job.state == "terminating":
        return job.gpus * (t - job.evicted_at)
    return 0.0


def _job_row(job: Job, end: float, topology: list[tuple[int, ...]]) -> dict[str, Any]:
    """[Time and events] Final states and the per-job measures.

    ``topology``: each node's (nvlink_domain, rack, spine) ([Spreading cost]: a deadlocked job's are
    those of the nodes it holds).
    """
    state = _final_state(job)
    deadlocked = state == "deadlocked"
    if deadlocked:
        spanned = job.nodes_held()
        # [Spreading cost] "Results": as nodes_spanned, the domains of the nodes it holds.
        levels = domains_spanned(job.placements, topology)
    elif job.first_start is not None:
        spanned = job.nodes_spanned  # when its last attempt started running
        levels = job.domains_spanned  # [Spreading cost] d_L when its last attempt started
    else:
        spanned = 0
        levels = (0, 0, 0)
    pending: float | None = None
    # [Kubelet Topology Manager] "Results": a failed job's wait is null; a backing-off one's goes on.
    if state not in ("rejected", "failed"):
        waiting = job.state in ("pending", "backoff", "admitted")
        pending = job.pending_total + (end - job.pending_since if waiting else 0.0)
    lost = job.lost + uncharged(job, end)
    # [GPU sharing by replicas] Results: over all attempts, a running one up to the end of the run.
    delay, work = job.delay, job.work_done
    spread = job.spread_delay  # [Spreading cost] "Results": over all attempts, a running one up to the end
    if job.state == "running":
        delay, work = job.delay_at(end), work + job.progress_at(end)
        spread = job.spread_delay_at(end)
    slowdown = (work + delay) / work if work > 0 else None
    return {
        "job_id": job.job_id,
        "start_time": job.first_start,
        "finish_time": job.finish if state == "finished" else None,
        "state": state,
        "reject_reason": job.reject_reason,
        "nodes_spanned": spanned,
        # [Spreading cost] "Results": d_L when its last attempt started, as nodes_spanned.
        "nvlink_domains_spanned": levels[0],
        "racks_spanned": levels[1],
        "spines_spanned": levels[2],
        "held_milli": sum(p.held_milli for p in job.placements) if deadlocked else 0,
        "preemptions": job.preemptions,
        "attempts": job.attempts_begun,
        "pending_time": pending,
        "lost_gpu_seconds": lost,
        "sharing_delay": delay,
        "sharing_slowdown": slowdown,
        "spread_delay": spread,  # [Spreading cost] "Results": progress time x (1 - f), all attempts
        "admission_failures": job.admission_failures,  # [Kubelet Topology Manager] "Results"
        "pods_ready_timeouts": job.ready_timeouts,  # [Kueue waitForPodsReady]
    }


def simulate(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    policy: Policy,
    *,
    seed: int = 0,
    sample_interval: float = 3600.0,
    horizon: float | None = None,
    window: tuple[float, float] | None = None,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    debug: bool = False,
    progress: Callable[[Any], None] | None = None,
    chunk_seconds: float | None = None,
    tasks: Any = None,
) -> Replay:
    """Replay ``jobs`` on ``nodes`` under ``policy`` -- the reference semantics, slowly.

    Same signature and result type as ``gpureplay.replay.simulate.simulate``.
    ``progress`` and ``chunk_seconds`` only exist for the same signature: the
    spec says chunk boundaries never change a result, and the reference runs
    in one piece. ``debug`` checks capacities after every cycle and the
    accounting identity at the end. ``tasks``: FGD's task classes as
    ``tests.reference.fragmentation.typical_classes`` gives them; default (when
    a scorer is ``fgd``) the typical pods of ``jobs``, as the engine.
    """
    if not (math.isfinite(sample_interval) and sample_interval > 0):
        raise ValueError("sample_interval must be a finite number > 0")
    if max_samples < 1:
        raise ValueError("max_samples must be >= 1")
    del progress, chunk_seconds
    declared = window
    if window is None:
        submits = jobs["submit_time"].to_list()
        window = (float(min(submits)), float(max(submits))) if submits else (0.0, 0.0)
    # [Queues] the quota tree, and each job's queue as its ClusterQueue.
    quotas = kueue_quotas(policy, jobs, nodes)
    volcano = volcano_queues(policy, jobs, nodes)
    kai = kai_queues(policy, jobs, nodes)
    jobs = tenant_jobs(jobs, quotas)
    if kai is not None:
        jobs = kai_preemptibility(jobs)
    job_list = _jobs_from_table(jobs, policy)
    classes: tuple[TaskClass, ...] = ()
    if tasks is not None or "fgd" in (policy.node_placement, policy.gpu_placement):
        classes = task_classes(jobs, nodes, tasks)
    total = volcano_total(nodes) if volcano is not None else (kai_total(nodes) if kai is not None else None)
    node_rows = list(nodes.iter_rows(named=True))
    replay = _Replay(job_list, node_rows, policy, seed, debug, classes, quotas, volcano, total, kai)
    rows, integral, window_integral, interval = replay.run(sample_interval, horizon, window, max_samples)
    end = replay.now
    per_sample = [row.pop("queues") for row in rows]
    num_queues = len(replay.queue_names)
    usage = np.zeros((3, num_queues, len(rows)), dtype=np.int64)
    counts = np.zeros((4, num_queues, len(rows)), dtype=np.int64)
    for s, sample in enumerate(per_sample):
        for q, queue in enumerate(sample):
            usage[:, q, s] = (queue["usage_milli"], queue["usage_cpu"], queue["usage_mem"])
            counts[:, q, s] = (
                queue["pending_jobs"],
                queue["running_jobs"],
                queue["deserved"],
                queue["share_ppm"],
            )
    times = np.array([row["time"] for row in rows], dtype=np.float64)
    model = next((m for m in (quotas, volcano, kai) if m is not None), None)
    # [Kueue flavors] the quota columns from the usage per flavor and resource.
    per_flavor = None
    if quotas is not None and len(quotas.flavors) > 1:
        per_flavor = np.zeros((quotas.rows, num_queues, len(rows)), dtype=np.int64)
        for s, sample in enumerate(per_sample):
            for q, queue in enumerate(sample):
                per_flavor[:, q, s] = queue["usage_rows"]
    queues = queue_rows(
        times,
        tuple(replay.queue_names),
        usage,
        counts[0],
        counts[1],
        model,
        (counts[2], counts[3]),
        per_flavor,
    )

    attempt_rows = [row for job in job_list for row in _attempt_rows(job, end)]
    # Only the columns the engine's schema has (the sharing columns land there with the engine change).
    job_rows = [
        {key: value for key, value in _job_row(job, end, replay.topology).items() if key in JOB_RESULT_SCHEMA}
        for job in job_list
    ]
    attempts = (
        pl.DataFrame(attempt_rows, schema=ATTEMPT_SCHEMA)
        if attempt_rows
        else pl.DataFrame(schema=ATTEMPT_SCHEMA)
    )
    if debug:
        accounted = sum(r["gpu_seconds"] for r in attempt_rows) * 1000.0
        assert math.isclose(integral, accounted, rel_tol=1e-9, abs_tol=1e-6), (integral, accounted)
    # [MIG re-partitioning] "Results": GPU-seconds in downtime, each one's up to the end of the run.
    downtime = sum(min(until, end) - since for since, until in replay.reconfigurations)
    stats = {
        "end_time": end,
        "cycles": float(replay.cycles),
        "preemption_searches": float(replay.searches),
        "preemptions": float(replay.evictions),
        # [MIG re-partitioning] "Results": re-partitionings started, and GPU-hours in downtime.
        "mig_reconfigurations": float(len(replay.reconfigurations)),
        "mig_reconfigure_gpu_h": downtime / 3600.0,
    }
    return Replay(
        jobs=pl.DataFrame(job_rows, schema=JOB_RESULT_SCHEMA),
        attempts=attempts,
        timeline=pl.DataFrame(rows, schema=TIMELINE_SCHEMA) if rows else pl.DataFrame(schema=TIMELINE_SCHEMA),
        queues=queues,
        gpu_milli_seconds=float(integral),
        window_gpu_milli_seconds=None if declared is None else float(window_integral),
        sample_interval=interval,
        stats=stats,
    )
