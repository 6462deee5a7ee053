"""What the engine refuses of a scheduler policy on its own: values out of range and settings it does not
combine, each naming its ``scheduler.*`` key.

Plain Python (no numba, no inputs): :func:`gpureplay.config_check.check_config` meets these from the config
alone, before a trace is read or a kernel compiles, and :func:`gpureplay.replay.compile.policy_params`
refuses them again for a policy given in Python. What a policy refuses only against its inputs (manifests,
the cluster's MIG layouts, the jobs) is checked where those are read.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import NamedTuple, TypeVar

from gpureplay.engine.fit.scorers import GPU_SCORERS, REPLICA_NODE_SCORERS, SCORERS
from gpureplay.errors import Problem
from gpureplay.replay.queue_model import queue_model_problems
from gpureplay.schedulers.policy import (
    Backfill,
    GangMode,
    GpuSharing,
    MigDemand,
    MigPlacement,
    MigReconfigure,
    MigStrategy,
    Policy,
    Preemption,
    QueueOrder,
    ReplicaAllocation,
    SharedGpuMemory,
    SharingDemand,
    TasProfile,
    TopologyAware,
    TopologyManager,
)

#: Most kubelet admission failures a job may retry after (``scheduler.backoff_limit``): 10,000 retries
#: 10 minutes apart are about 70 days of one job knocking on kubelets.
MAX_BACKOFF_LIMIT = 10_000


#: Most MPS clients one GPU serves (Volta and later; the MIG user guide's comparison of MIG, MPS
#: and time-slicing).
MPS_MAX_CLIENTS = 48


#: The policy keys of what spreading costs, by topology level.
SPREAD_KEYS: tuple[str, ...] = ("spread_rate_nvlink", "spread_rate_rack", "spread_rate_spine")


class PolicyAxes(NamedTuple):
    """A policy's enum-valued settings, parsed once (a :class:`Policy` holds enum members, or their names
    when built from a mapping)."""

    order: QueueOrder
    gang: GangMode
    backfill: Backfill
    preemption: Preemption
    sharing: GpuSharing
    allocation: ReplicaAllocation
    demand: SharingDemand
    share_mem: SharedGpuMemory
    mig: MigStrategy
    mig_demand: MigDemand
    mig_placement: MigPlacement
    reconfigure: MigReconfigure
    topology: TopologyAware
    profile: TasProfile
    manager: TopologyManager
    cpu_static: bool


E = TypeVar("E", bound=Enum)


def _member(kind: type[E], value: object) -> E:
    return kind[str(getattr(value, "name", value))]


def policy_axes(policy: Policy) -> PolicyAxes:
    """The enum members of ``policy``'s settings (:class:`PolicyAxes`)."""
    return PolicyAxes(
        order=_member(QueueOrder, policy.queue_order),
        gang=_member(GangMode, policy.gang),
        backfill=_member(Backfill, policy.backfill),
        preemption=_member(Preemption, policy.preemption),
        sharing=_member(GpuSharing, policy.gpu_sharing),
        allocation=_member(ReplicaAllocation, policy.replica_allocation),
        demand=_member(SharingDemand, policy.sharing_demand),
        share_mem=_member(SharedGpuMemory, policy.shared_gpu_memory),
        mig=_member(MigStrategy, policy.mig_strategy),
        mig_demand=_member(MigDemand, policy.mig_demand),
        mig_placement=_member(MigPlacement, policy.mig_placement),
        reconfigure=_member(MigReconfigure, policy.mig_reconfigure),
        topology=_member(TopologyAware, policy.topology_aware),
        profile=_member(TasProfile, policy.tas_profile),
        manager=_member(TopologyManager, policy.topology_manager),
        cpu_static=str(getattr(policy.cpu_manager, "name", policy.cpu_manager)) == "static",
    )


def policy_problems(policy: Policy) -> list[Problem]:
    """Every problem of ``policy`` on its own: values out of range and settings the engine does not combine.

    Needs nothing but the policy, so a run meets these before its trace is read
    (:func:`gpureplay.config_check.check_config`);
    :func:`gpureplay.replay.compile.policy_params` raises them again for a policy given in Python.

    Returns
    -------
    list of Problem
        Each naming its ``scheduler.*`` config key; empty when the policy can be replayed.
    """
    axes = policy_axes(policy)
    problems: list[tuple[str, str]] = []
    if policy.backfill_depth < 0:
        problems.append(("scheduler.backfill_depth", f"must be >= 0 (found {policy.backfill_depth})"))
    if not (math.isfinite(policy.session_interval) and policy.session_interval >= 0):
        problems.append(
            ("scheduler.session_interval", f"must be a finite number >= 0 (found {policy.session_interval})")
        )
    if not (math.isfinite(policy.graceful_termination) and policy.graceful_termination >= 0):
        problems.append(
            (
                "scheduler.graceful_termination",
                f"must be a finite number >= 0 (found {policy.graceful_termination})",
            )
        )
    if policy.min_candidate_nodes < 1:
        problems.append(
            ("scheduler.min_candidate_nodes", f"must be >= 1 (found {policy.min_candidate_nodes})")
        )
    if policy.device_split_count < 0:
        problems.append(
            (
                "scheduler.device_split_count",
                f"must be >= 0, 0 for no limit (found {policy.device_split_count})",
            )
        )
    if not 0 <= policy.candidate_nodes_percent <= 100:
        problems.append(
            (
                "scheduler.candidate_nodes_percent",
                f"must be in [0, 100] (found {policy.candidate_nodes_percent})",
            )
        )
    for key, name, known in (
        ("scheduler.node_placement", policy.node_placement, SCORERS),
        ("scheduler.gpu_placement", policy.gpu_placement, GPU_SCORERS),
    ):
        if name in SCORERS and name not in known:
            problems.append((key, f"{name!r} scores nodes only; the GPU scorers are: {', '.join(known)}"))
        elif name not in known:
            problems.append((key, f"unknown scorer {name!r}; known: {', '.join(known)}"))
    if axes.preemption is not Preemption.none and axes.backfill is Backfill.easy:
        problems.append(
            (
                "scheduler.preemption",
                "EASY backfill with preemption is not modelled: use backfill: skip or none",
            )
        )
    if axes.gang is GangMode.pod_by_pod:
        # kube-scheduler's pod queue is PrioritySort and a pod that does not fit never blocks the
        # next one: pod-by-pod placement has no other order or backfill rule to honour.
        if axes.order is not QueueOrder.priority:
            problems.append(
                (
                    "scheduler.queue_order",
                    f"gang: pod_by_pod places pods in PrioritySort order (kube-scheduler's pod queue), "
                    f"not {axes.order.name}: use queue_order: priority, or gang: gang",
                )
            )
        if axes.backfill is not Backfill.skip or policy.backfill_depth != 0:
            problems.append(
                (
                    "scheduler.backfill",
                    "gang: pod_by_pod always goes on to the next pod when one does not fit (kube-scheduler): "
                    f"use backfill: skip with backfill_depth: 0 (found {axes.backfill.name}, depth "
                    f"{policy.backfill_depth}), or gang: gang",
                )
            )
    if axes.preemption is not Preemption.none and axes.order is not QueueOrder.priority:
        # kube-scheduler pairs DefaultPreemption with PrioritySort (and a nominated node): under
        # another order a lower-priority job ahead of the preemptor retakes the victims' resources
        # at every release and is evicted again, without end.
        problems.append(
            (
                "scheduler.queue_order",
                "preemption needs queue_order: priority (kube-scheduler's PrioritySort); "
                f"found {axes.order.name}",
            )
        )
    easy = axes.backfill is Backfill.easy
    problems += _sharing_problems(
        policy, axes.sharing, axes.allocation, axes.demand, axes.share_mem, axes.mig, easy
    )
    problems += _mig_problems(policy, axes.sharing, axes.share_mem, axes.mig, axes.mig_demand, easy)
    problems += _dynamic_mig_problems(policy, axes.mig, axes.mig_demand, axes.mig_placement, axes.preemption)
    problems += _repartition_problems(policy, axes.mig, axes.reconfigure)
    problems += _spread_problems(policy, axes.sharing, axes.mig)
    problems += _topology_problems(axes.topology, axes.gang, axes.backfill, axes.preemption)
    problems += _numa_problems(
        policy, axes.manager, axes.cpu_static, axes.gang, axes.backfill, axes.preemption
    )
    if axes.manager is not TopologyManager.none and (
        axes.sharing is not GpuSharing.none or axes.mig is not MigStrategy.none
    ):
        problems.append(
            (
                "scheduler.topology_manager",
                "the kubelet's NUMA alignment of shared GPUs (replicas, MIG instances) is not modelled: "
                "use gpu_sharing: none and mig_strategy: none",
            )
        )
    if policy.numa_aware_scheduler and axes.topology is not TopologyAware.none:
        problems.append(
            (
                "scheduler.numa_aware_scheduler",
                f"NUMA-aware node filtering inside topology_aware: {axes.topology.name}'s domains is not "
                "modelled",
            )
        )
    if axes.topology in (TopologyAware.kai, TopologyAware.volcano) and policy.node_placement == "random":
        # Inside a domain nodes are ranked by score (KAI's and Volcano's plugins), ties in domain order.
        problems.append(
            (
                "scheduler.node_placement",
                f"topology_aware: {axes.topology.name} ranks nodes by score: not random",
            )
        )
    if axes.topology is not TopologyAware.kueue and axes.profile is not TasProfile.mixed:
        problems.append(
            (
                "scheduler.tas_profile",
                f"is read by topology_aware: kueue only (found {axes.topology.name}): leave it mixed",
            )
        )
    problems += queue_model_problems(
        policy, axes.order, axes.gang, axes.backfill, axes.preemption, axes.sharing, axes.mig
    )
    return [Problem(message, "config", key=key) for key, message in problems]


def _numa_problems(
    policy: Policy,
    manager: TopologyManager,
    cpu_static: bool,
    gang: GangMode,
    backfill: Backfill,
    preemption: Preemption,
) -> list[tuple[str, str]]:
    """The kubelet Topology Manager's settings: what they need and what they are not modelled with."""
    problems = []
    if not 0 <= policy.backoff_limit <= MAX_BACKOFF_LIMIT:
        # A Job's backoffLimit has no "unlimited"; a bound keeps a job no kubelet ever admits from retrying
        # (every 10 minutes) for ever.
        problems.append(
            (
                "scheduler.backoff_limit",
                f"must be between 0 and {MAX_BACKOFF_LIMIT:,} (found {policy.backoff_limit})",
            )
        )
    if manager is TopologyManager.none:
        if cpu_static:
            problems.append(
                (
                    "scheduler.cpu_manager",
                    "static gives NUMA hints only to a Topology Manager: set topology_manager",
                )
            )
        if policy.numa_aware_scheduler:
            problems.append(
                (
                    "scheduler.numa_aware_scheduler",
                    "filters by NUMA fit under topology_manager: single_numa_node only",
                )
            )
        if policy.backoff_limit != 6:
            problems.append(
                (
                    "scheduler.backoff_limit",
                    "counts kubelet admission failures, which only a topology_manager policy causes",
                )
            )
        return problems
    if gang is not GangMode.gang:
        problems.append(
            (
                "scheduler.topology_manager",
                f"kubelet admission failures are modelled for whole gangs: use gang: gang (not {gang.name})",
            )
        )
    if backfill is Backfill.easy:
        problems.append(
            (
                "scheduler.topology_manager",
                "EASY backfill's reservation does not know kubelet admission: use backfill: skip or none",
            )
        )
    if preemption is not Preemption.none:
        problems.append(
            (
                "scheduler.topology_manager",
                "preemption with kubelet NUMA admission is not modelled yet: use preemption: none",
            )
        )
    if policy.numa_aware_scheduler:
        if manager is not TopologyManager.single_numa_node:
            problems.append(
                (
                    "scheduler.numa_aware_scheduler",
                    "NodeResourceTopologyMatch filters only under topology_manager: single_numa_node "
                    f"(found {manager.name})",
                )
            )
        if policy.node_placement == "random":
            problems.append(
                ("scheduler.node_placement", "NUMA-aware placement ranks nodes by score: not random")
            )
        if str(getattr(policy.node_ties, "name", policy.node_ties)) != "lowest_index":
            problems.append(("scheduler.node_ties", "NUMA-aware placement breaks ties by lowest index"))
    return problems


def _topology_problems(
    topology: TopologyAware, gang: GangMode, backfill: Backfill, preemption: Preemption
) -> list[tuple[str, str]]:
    """Topology-aware placement assigns whole gangs at admission; what it is not modelled with."""
    if topology is TopologyAware.none:
        return []
    problems = []
    if gang is not GangMode.gang:
        problems.append(
            (
                "scheduler.topology_aware",
                f"{topology.name} assigns a whole job's pods at admission: it needs gang: gang "
                f"(found {gang.name})",
            )
        )
    if backfill is Backfill.easy:
        problems.append(
            (
                "scheduler.topology_aware",
                "EASY backfill's reservation is not topology-aware here: use backfill: skip or none",
            )
        )
    if preemption is not Preemption.none:
        problems.append(
            (
                "scheduler.topology_aware",
                "preemption with topology-aware placement is not modelled yet (kube's victim search "
                "ignores domains): use preemption: none",
            )
        )
    return problems


def _sharing_problems(
    policy: Policy,
    sharing: GpuSharing,
    allocation: ReplicaAllocation,
    demand: SharingDemand,
    share_mem: SharedGpuMemory,
    mig: MigStrategy,
    easy: bool,
) -> list[tuple[str, str]]:
    """What is wrong with the sharing settings (docs/engine/devices.md, "GPU sharing by replicas")."""
    problems: list[tuple[str, str]] = []
    overhead = policy.switch_overhead
    if sharing is GpuSharing.none:
        # Settings of a mode that is off would be silently ignored: refuse them instead. MIG
        # instances run at a share of a GPU too: sharing_demand sets what a pod needs there.
        demand_off = SharingDemand.whole if mig is not MigStrategy.none else demand
        for key, value, default in (
            ("replicas", policy.replicas, 1),
            ("replica_allocation", allocation, ReplicaAllocation.distributed),
            ("sharing_demand", demand_off, SharingDemand.whole),
            ("switch_overhead", overhead, 0.0),
            ("fail_requests_greater_than_one", policy.fail_requests_greater_than_one, None),
        ):
            if value != default:
                shown = getattr(value, "name", value)
                modes = "time_slicing or mps"
                if key == "sharing_demand":
                    modes += " (or a mig_strategy)"
                problems.append((f"scheduler.{key}", f"applies to gpu_sharing: {modes} only (found {shown})"))
        return problems
    if policy.replicas < 2:
        problems.append(
            (
                "scheduler.replicas",
                f"gpu_sharing: {sharing.name} needs replicas >= 2 (found {policy.replicas})",
            )
        )
    if sharing is GpuSharing.mps and policy.replicas > MPS_MAX_CLIENTS:
        problems.append(
            (
                "scheduler.replicas",
                f"MPS serves at most {MPS_MAX_CLIENTS} clients per GPU (found {policy.replicas})",
            )
        )
    if not (math.isfinite(overhead) and 0.0 <= overhead < 1.0):
        problems.append(("scheduler.switch_overhead", f"must be in [0, 1) (found {overhead})"))
    elif sharing is GpuSharing.mps and overhead != 0.0:
        problems.append(
            (
                "scheduler.switch_overhead",
                f"models time-slicing's context switches; MPS clients run side by side (found {overhead})",
            )
        )
    if easy:
        problems.append(
            (
                "scheduler.backfill",
                f"EASY's reservations assume full-speed run times; with gpu_sharing: {sharing.name} "
                "sharers stretch them and a backfilled job could delay the head: use backfill: skip or none",
            )
        )
    if policy.device_split_count != 0:
        problems.append(
            (
                "scheduler.device_split_count",
                f"HAMi's split count does not combine with gpu_sharing: {sharing.name} "
                f"(found {policy.device_split_count}); replicas set the devices per GPU",
            )
        )
    if share_mem is not SharedGpuMemory.none:
        problems.append(
            (
                "scheduler.shared_gpu_memory",
                f"applies to fractional pods; with gpu_sharing: {sharing.name} every GPU pod takes whole "
                f"replicas (found {share_mem.name})",
            )
        )
    if policy.gpu_placement != "first_fit":
        problems.append(
            (
                "scheduler.gpu_placement",
                f"with gpu_sharing: {sharing.name} the device plugin picks the replicas "
                f"(replica_allocation), not a GPU scorer: use first_fit (found {policy.gpu_placement})",
            )
        )
    if policy.node_placement not in REPLICA_NODE_SCORERS and policy.node_placement in SCORERS:
        problems.append(
            (
                "scheduler.node_placement",
                f"{policy.node_placement!r} models another GPU-sharing system; with gpu_sharing: "
                f"{sharing.name} use one of {', '.join(REPLICA_NODE_SCORERS)}",
            )
        )
    return problems


def _mig_problems(
    policy: Policy,
    sharing: GpuSharing,
    share_mem: SharedGpuMemory,
    mig: MigStrategy,
    mig_demand: MigDemand,
    easy: bool,
) -> list[tuple[str, str]]:
    """What is wrong with the MIG settings (docs/engine/devices.md, "MIG instances")."""
    if mig is MigStrategy.none:
        if mig_demand is not MigDemand.any:
            found = mig_demand.name
            return [("scheduler.mig_demand", f"applies with a mig_strategy only (found {found})")]
        return []
    problems: list[tuple[str, str]] = []
    if easy:
        problems.append(
            (
                "scheduler.backfill",
                "EASY's reservations assume full-speed run times; on MIG instances a job runs at its "
                "instance's share of the SMs: use backfill: skip or none",
            )
        )
    if sharing is not GpuSharing.none:
        problems.append(
            (
                "scheduler.gpu_sharing",
                f"{sharing.name} on MIG instances is not modelled (MPS does not combine with MIG; "
                "time-slicing of MIG devices needs the mixed strategy): use gpu_sharing: none with "
                f"mig_strategy: {mig.name}",
            )
        )
    if policy.device_split_count != 0 or share_mem is not SharedGpuMemory.none:
        problems.append(
            (
                f"scheduler.{'device_split_count' if policy.device_split_count else 'shared_gpu_memory'}",
                f"fractional sharing does not combine with mig_strategy: {mig.name}: every GPU pod takes "
                "whole MIG instances",
            )
        )
    if policy.gpu_placement != "first_fit":
        problems.append(
            (
                "scheduler.gpu_placement",
                f"with mig_strategy: {mig.name} the device plugin hands out the instances, not a GPU "
                f"scorer: use first_fit (found {policy.gpu_placement})",
            )
        )
    # fgd scores MIG slices under dynamic MIG (docs/engine/devices.md, "Slice-mask MIG").
    slices_fgd = mig is MigStrategy.dynamic and policy.node_placement == "fgd"
    other = policy.node_placement not in REPLICA_NODE_SCORERS and policy.node_placement in SCORERS
    if other and not slices_fgd:
        allowed = ", ".join(REPLICA_NODE_SCORERS)
        also = " (and fgd with mig_strategy: dynamic)" if mig is not MigStrategy.dynamic else ", or fgd"
        problems.append(
            (
                "scheduler.node_placement",
                f"{policy.node_placement!r} models another GPU-sharing system; with mig_strategy: "
                f"{mig.name} use one of {allowed}{also}",
            )
        )
    return problems


def _spread_problems(policy: Policy, sharing: GpuSharing, mig: MigStrategy) -> list[tuple[str, str]]:
    """What is wrong with the spreading-cost factors (docs/engine/placement.md, "What spreading costs")."""
    problems: list[tuple[str, str]] = []
    for key in SPREAD_KEYS:
        value = float(getattr(policy, key))
        if not (math.isfinite(value) and 0.0 < value <= 1.0):
            problems.append((f"scheduler.{key}", f"must be a rate factor in (0, 1] (found {value})"))
        elif value < 1.0 and (sharing is not GpuSharing.none or mig is not MigStrategy.none):
            what = (
                f"gpu_sharing: {sharing.name}"
                if sharing is not GpuSharing.none
                else f"mig_strategy: {mig.name}"
            )
            message = (
                f"a spreading cost ({value}) does not combine with {what}, whose rates are the sharing "
                "model's: use 1.0"
            )
            problems.append((f"scheduler.{key}", message))
    return problems


def _repartition_problems(
    policy: Policy, mig: MigStrategy, reconfigure: MigReconfigure
) -> list[tuple[str, str]]:
    """What is wrong with the MIG re-partitioning settings (docs/engine/devices.md, "Re-partitioning idle
    GPUs")."""
    problems: list[tuple[str, str]] = []
    downtime = policy.mig_reconfigure_s
    if reconfigure is MigReconfigure.none:
        for key, value in (
            ("mig_reconfigure_s", downtime),
            ("mig_reconfigure_layouts", policy.mig_reconfigure_layouts),
        ):
            if value is not None:
                problems.append(
                    (f"scheduler.{key}", f"applies to mig_reconfigure: idle only (found {value})")
                )
        return problems
    if mig is not MigStrategy.mixed:
        message = (
            "re-partitions the configs of MIG GPUs, which only mig_strategy: mixed keeps (the instances of a "
            f"node's mig-parted config per GPU); found mig_strategy: {mig.name}"
        )
        problems.append(("scheduler.mig_reconfigure", message))
    if downtime is not None and not (math.isfinite(float(downtime)) and float(downtime) >= 0.0):
        problems.append(
            ("scheduler.mig_reconfigure_s", f"must be a finite number of seconds >= 0 (found {downtime})")
        )
    layouts = policy.mig_reconfigure_layouts
    if layouts is not None and len(layouts) == 0:
        problems.append(("scheduler.mig_reconfigure_layouts", "an empty list leaves no config to give a GPU"))
    return problems


def _dynamic_mig_problems(
    policy: Policy,
    mig: MigStrategy,
    mig_demand: MigDemand,
    placement: MigPlacement,
    preemption: Preemption,
) -> list[tuple[str, str]]:
    """What is wrong with the slice-mask MIG settings (dynamic, mixed; the single strategy's rules too)."""
    problems: list[tuple[str, str]] = []
    create = float(policy.mig_create_s)
    if mig is not MigStrategy.dynamic:
        if placement is not MigPlacement.hami:
            problems.append(
                ("scheduler.mig_placement", f"applies to mig_strategy: dynamic only (found {placement.name})")
            )
        if create != 0.0:
            message = f"applies to mig_strategy: dynamic only (found {create})"
            problems.append(("scheduler.mig_create_s", message))
    elif not (math.isfinite(create) and create >= 0.0):
        message = f"must be a finite number of seconds >= 0 (found {create})"
        problems.append(("scheduler.mig_create_s", message))
    if mig not in (MigStrategy.dynamic, MigStrategy.mixed):
        return problems
    if mig_demand is not MigDemand.smallest_fit:
        what = "made for" if mig is MigStrategy.dynamic else "asked by"
        problems.append(
            (
                "scheduler.mig_demand",
                f"with mig_strategy: {mig.name} the instance {what} a pod is its mig_profile or the smallest "
                f"profile that fits its demand: set mig_demand: smallest_fit (found {mig_demand.name})",
            )
        )
    if preemption is not Preemption.none:
        problems.append(
            (
                "scheduler.preemption",
                f"preemption on mig_strategy: {mig.name} instances is not modelled yet (a victim's slices "
                f"would have to free the exact placement the preemptor needs): use preemption: none",
            )
        )
    return problems
