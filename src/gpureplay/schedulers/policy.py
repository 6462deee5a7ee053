"""The scheduling policy a replay runs under, as plain typed fields.

:class:`Policy` is both the Hydra structured-config schema of the
``scheduler`` group (``conf/scheduler/*.yaml`` extend it) and what the engine
boundary turns into integer codes. Enums keep a bad value (``queue_order=lifo``)
a compose-time error with Hydra's own message.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class QueueOrder(Enum):
    """Order in which pending jobs are considered each cycle.

    ``fifo``: submit time, then job id. ``sjf``: trace duration (an oracle
    baseline, as in Tiresias/Gandiva comparisons), then FIFO. ``priority``:
    higher ``priority`` first, then FIFO (kube-scheduler's PrioritySort).
    """

    fifo = 0
    sjf = 1
    priority = 2


class GangMode(Enum):
    """How a multi-pod job is placed.

    ``gang``: all pods at once or none (Volcano minMember, Kueue all-or-nothing).
    ``pod_by_pod``: kube-scheduler default, pods placed one at a time in the
    pod queue's order; a partly placed job holds what it got and runs only
    when all its pods are placed (the classic gang deadlock).
    """

    gang = 0
    pod_by_pod = 1


class Backfill(Enum):
    """What happens behind a head-of-line job that cannot start.

    ``none``: strict head-of-line blocking. ``easy``: EASY backfill (Lifka 1995;
    Slurm ``sched/backfill``): the head gets a reservation at its earliest
    start and later jobs start only if they do not delay it. ``skip``: later
    jobs may start whenever they fit (kube-scheduler behaviour, no reservation).
    """

    none = 0
    easy = 1
    skip = 2


class Preemption(Enum):
    """What a pending job that cannot be placed may do to running jobs.

    ``none``: nothing. ``priority``: kube-scheduler's DefaultPreemption: evict
    lower-priority, preemptible jobs (whole) so that it fits, choosing victims
    and node by kube's rules (docs/systems.md, "kube-scheduler"); in gang mode only
    when the whole gang then fits. ``reclaim_idle``: scheduler-plugins'
    ReclaimIdleResource in DefaultPreemption's place (docs/systems.md, "scheduler-plugins"): the same search
    over victims of priority at most the preemptor's, less those their
    PriorityClass's annotations exempt (recently scheduled, or busy over the
    idle windows of the workload's usage model).
    """

    none = 0
    priority = 1
    reclaim_idle = 2


class Requeue(Enum):
    """Where an evicted job re-enters its queue when its grace period ends.

    ``back``: with the time it re-entered as its queue timestamp, behind jobs
    already waiting at its priority (Kueue's default
    ``requeuingStrategy.timestamp: Eviction``; a Job controller's new pod).
    ``original``: at its original place (Kueue ``timestamp: Creation``; the
    Tiresias / Lucid simulators).
    """

    back = 0
    original = 1


class NodeTies(Enum):
    """Which node wins among the nodes with the best score.

    ``lowest_index``: the first in node order (deterministic, the engine's
    default). ``random``: uniform among them, drawn afresh for each pod
    (vanilla kube-scheduler's ``selectHost`` samples the highest-scoring
    nodes uniformly). ``seeded_order``: the first in one random order of the
    nodes fixed by the seed: what the FGD artifact's simulator does (it
    renames the nodes with a ``rand.Perm`` prefix and its scheduler keeps the
    first best node in name order; inferred from its published results, which
    this rule reproduces and ``random`` does not - FGD 89.7 % allocated at
    100 % arrived instead of 95.2 %).
    """

    lowest_index = 0
    random = 1
    seeded_order = 2


class SharedGpuMemory(Enum):
    """GPU memory a shared pod takes when its trace gives none (``gpu_mem_mib`` null).

    ``none``: only its GPU milli is booked (the memory of shared pods is not
    modelled). ``proportional``: ``gpu_milli / 1000`` of its GPU's memory,
    floored: the trace's fraction read as HAMi's ``gpumem-percentage`` (and
    gpushare's memory request) alongside its cores. ``full``: the whole GPU's
    memory, HAMi's own default for a pod that sets neither ``gpumem`` nor a
    percentage (``pkg/device/nvidia/device.go``), which makes such pods
    exclusive. docs/systems.md, "HAMi", "gpushare-scheduler-extender".
    """

    none = 0
    proportional = 1
    full = 2


class GpuSharing(Enum):
    """How the NVIDIA device plugin shares each GPU among pods (docs/systems.md, "NVIDIA k8s-device-plugin").

    ``none``: a GPU is one ``nvidia.com/gpu`` (or is shared by the fractional
    systems' own rules: HAMi, KAI, gpushare). ``time_slicing``: each GPU is
    advertised as ``replicas`` devices and CUDA time-slices the pods on it (no
    isolation: active sharers slow each other). ``mps``: ``replicas`` devices,
    each an MPS client capped at ``100 // replicas`` percent of the SMs and
    ``1 / replicas`` of the memory. docs/engine/devices.md, "GPU sharing by replicas".
    """

    none = 0
    time_slicing = 1
    mps = 2


class ReplicaAllocation(Enum):
    """Which replica devices a pod gets (device plugin ``sharedDevicesAllocationPolicy``).

    ``distributed``: each replica from the GPU with the fewest replicas in use
    (``internal/rm/allocate.go`` ``distributedAlloc``, the released default).
    ``packed``: the most in use first (2026 main branch).
    """

    distributed = 0
    packed = 1


class SharingDemand(Enum):
    """How much of a GPU a pod would use alone, in the throughput model of shared GPUs.

    ``whole``: all of it (each of N time-sliced sharers runs at 1/N). ``trace``:
    ``gpu_milli / 1000`` for a fractional pod (openb's share of a GPU), 1 for
    whole-GPU pods: sharers whose demands fit in one GPU do not slow each other.
    """

    whole = 0
    trace = 1


class MigStrategy(Enum):
    """How NVIDIA k8s-device-plugin exposes MIG instances (``--mig-strategy``; docs/systems.md, "NVIDIA
    k8s-device-plugin").

    ``none``: MIG is not modelled; a node with a MIG layout is refused.
    ``single``: every GPU of a node with a ``mig_layout`` holds instances of
    one profile, each one ``nvidia.com/gpu``; the node's product label is
    ``<model>-MIG-<profile>``. ``mixed``: a node's layout may hold several
    profiles, each its own resource ``nvidia.com/mig-<profile>``; a pod asks
    one instance of its ``mig_profile`` (or of the smallest profile that fits
    its demand) and takes a free instance of that profile; whole-GPU pods ask
    ``nvidia.com/gpu``, which MIG GPUs do not offer. ``dynamic``: HAMi's dynamic MIG (its own
    device plugin in ``mig`` mode): a node whose ``mig_layout`` is
    ``all-enabled`` has MIG on and no instance; each GPU pod placed there gets
    an instance made for it on a GPU's free slices (the smallest profile that
    fits its demand, or its ``mig_profile``), destroyed when it leaves.
    docs/engine/devices.md, "MIG instances".
    """

    none = 0
    single = 1
    mixed = 2
    dynamic = 3


class MigPlacement(Enum):
    """Where a dynamic MIG instance goes on its GPU (docs/systems.md, "NVIDIA MIG and mig-parted").

    ``hami``: HAMi's ``orderedMigPlacements``: profiles named ``1g.*`` or
    ``3g.*`` take the highest free allowed start slot, the others the lowest.
    ``lowest_start``: always the lowest free allowed start. ``fgd``: FGD
    over slices, the free placement that grows the GPU's fragmentation least
    (docs/engine/devices.md, "Slice-mask MIG"; beyond Weng et al.,
    ATC'23, whose measure counts milli-GPU).
    """

    hami = 0
    lowest_start = 1
    fgd = 2


class QueueModel(Enum):
    """The multi-tenant queue model jobs are admitted through (issue 11; docs/engine/queues/).

    ``none``: no quotas; one queue order across tenants. ``kueue``: Kueue's ClusterQueues with nominal
    quotas, cohorts, borrowing and lending limits, admitted by its classical cycle (one head per
    ClusterQueue, by borrowing level), gang mode only. ``volcano``: Volcano's queues under its default
    actions (enqueue, allocate, backfill) and plugins: the proportion plugin's weighted ``deserved``, the
    overcommit plugin's enqueue gate, queues taken by priority then share; gang mode only. ``kai``: KAI's
    queue tree under its ``allocate`` action: the proportion plugin's fair share (quota, then over-quota by
    priority and ``overQuotaWeight`` in whole GPUs), its eight-criterion queue order and its capacity
    policy (``limit``; non-preemptible jobs within ``quota``); gang mode only.
    """

    none = 0
    kueue = 1
    volcano = 2
    kai = 3


class KueueAdmission(Enum):
    """What a Kueue admission takes (``queues: kueue``; docs/engine/queues/kueue.md, "Kueue
    waitForPodsReady").

    ``placement``: quota and placement at one instant, the job's pods placed as a gang (as under Kueue's
    topology-aware scheduling). ``quota``: Kueue's own default, quota alone: kube-scheduler then places the
    admitted job's pods one by one, and a job whose pods do not all fit holds what it got (Kueue's
    ``waitForPodsReady`` bounds how long: ``pods_ready_timeout``).
    """

    placement = 0
    quota = 1


class KaiReclaimResolveMethod(Enum):
    """Which queue's ``reclaimMinRuntime`` protects a victim from a reclaimer (KAI's minruntime plugin
    argument ``reclaimResolveMethod``; NVIDIA/KAI-Scheduler ``pkg/scheduler/plugins/minruntime``).

    ``lca`` (KAI's default): across top-level queues the victim's top-level queue's; else from the child of
    the two queues' lowest common ancestor on the victim's path up to the top, the first set. ``queue``: the
    victim's leaf queue's, else its nearest ancestor's.
    """

    lca = 0
    queue = 1


class QuotaSource(Enum):
    """Where a queue model's quotas come from.

    ``none``: unset (needed when ``queues: none``). ``manifests``: the Kubernetes manifests at
    ``scheduler.manifests``. ``gpu_time_share``: one ClusterQueue per trace queue, its nominal GPUs the
    queue's share of the trace's GPU-time of the cluster's GPUs (whole GPUs, largest remainder).
    ``philly_vc_nodes``: Philly's real per-VC node counts x 8 GPUs (``traces/philly/philly_vc_nodes.csv``).
    Under ``queues: volcano`` a derived quota is the queue's ``weight`` (its GPUs, at least 1); under
    ``queues: kai`` its GPU ``quota`` (``overQuotaWeight`` 1, no limit).
    """

    none = 0
    manifests = 1
    gpu_time_share = 2
    philly_vc_nodes = 3


class WithinClusterQueue(Enum):
    """Kueue ``spec.preemption.withinClusterQueue`` of every derived ClusterQueue (manifests give their own).

    ``never`` (Kueue's default); ``lower_priority``: evict its own lower-priority workloads;
    ``lower_or_newer_equal_priority``: also equal-priority ones queued later.
    """

    never = 0
    lower_priority = 1
    lower_or_newer_equal_priority = 2


class ReclaimWithinCohort(Enum):
    """Kueue ``spec.preemption.reclaimWithinCohort`` of every derived ClusterQueue.

    ``never`` (Kueue's default); ``lower_priority`` / ``any``: evict lower-priority (or any) workloads of
    cohort members that use more than their nominal quota, to get back what it lent.
    """

    never = 0
    lower_priority = 1
    any = 2


class BorrowWithinCohort(Enum):
    """Kueue ``spec.preemption.borrowWithinCohort.policy`` of every derived ClusterQueue.

    ``lower_priority``: a workload that will borrow may still reclaim lower-priority workloads (at most
    ``borrow_max_priority``, Kueue's ``maxPriorityThreshold``); needs ``reclaim_within_cohort``.
    """

    never = 0
    lower_priority = 1


class FairSharingStrategies(Enum):
    """Kueue's ``fairSharing.preemptionStrategies`` (its Configuration; KEP-1714 rules S2-a, S2-b).

    ``both`` (Kueue's default): ``[LessThanOrEqualToFinalShare, LessThanInitialShare]``; or one alone. A
    preemptor may evict a workload of another ClusterQueue when its share with its workload admitted is at
    most that queue's share after the eviction (``less_than_or_equal_to_final_share``), or below that
    queue's share before it (``less_than_initial_share``).
    """

    both = 0
    less_than_or_equal_to_final_share = 1
    less_than_initial_share = 2


class MissingQuota(Enum):
    """A trace queue a derived quota table does not name: ``error`` refuses it, ``zero`` gives it 0 GPUs."""

    error = 0
    zero = 1


class MigReconfigure(Enum):
    """Whether MIG GPUs are re-partitioned while the replay runs (docs/engine/devices.md, "Re-partitioning
    idle GPUs").

    ``none``: static layouts. ``idle``: under ``mig_strategy: mixed`` a GPU
    none of whose instances is in use may be given another mig-parted config
    when pending pods ask profiles the free instances cannot serve (the
    config serving most of them, nos' ``UpdateGeometryFor``), after a
    downtime of ``mig_reconfigure_s`` (mig-parted clears and re-makes every
    instance of the GPU; docs/systems.md, "NVIDIA MIG and mig-parted").
    """

    none = 0
    idle = 1


class MigDemand(Enum):
    """Which MIG instances a job may take when its trace names no ``mig_profile``.

    ``any``: any instance (it asks ``nvidia.com/gpu``, as under the single
    strategy), or a whole GPU. ``smallest_fit``: on each MIG model only the
    smallest profile that fits its ``gpu_milli`` and ``gpu_mem_mib``
    (:func:`gpureplay.mig.devices.smallest_profile`; a node selector on the
    product label), or a whole GPU. ``fits``: any instance with at least its
    share of the SMs (``gpu_milli / 1000`` of the compute slices) and its GPU
    memory (a node affinity listing those products), or a whole GPU.
    """

    any = 0
    smallest_fit = 1
    fits = 2


class TopologyAware(Enum):
    """Topology-aware gang placement (docs/engine/placement.md, "Kueue TAS").

    ``none``: topology-blind, the node scorer places each pod (jobs' topology
    requests are not read). ``kueue``: Kueue's Topology Aware Scheduling
    (KEP-2724): every gang gets a topology assignment at admission, its
    ``required`` / ``preferred`` / ``unconstrained`` request honoured by
    Kueue's own search (a job with no request gets Kueue's implied
    unconstrained one); docs/systems.md, "Kueue". ``kai``: KAI Scheduler's
    topology plugin: a ``required`` or ``preferred`` level, domains bin-packed
    by the job's share of their free resources, nodes inside ordered by their
    preferred-level domain, more free first; jobs without a request (or
    ``unconstrained``) are placed by the node scorer; docs/systems.md, "KAI Scheduler". ``volcano``:
    Volcano's network-topology-aware scheduling in hard mode: a ``required``
    level is ``highestTierAllowed`` (tiers: NVLink domain 1, rack 2, spine
    3), HyperNodes tried tier by tier, the best binpack score first; jobs
    without a request are placed by the node scorer; docs/systems.md, "Volcano".
    """

    none = 0
    kueue = 1
    kai = 2
    volcano = 3


class TasProfile(Enum):
    """How Kueue's TAS sorts domains (its ``TASProfile*`` feature gates; docs/systems.md, "Kueue").

    ``mixed`` (Kueue's default since v0.15): BestFit for required and
    preferred requests, LeastFreeCapacity for unconstrained ones.
    ``best_fit``: most free capacity first, the domain that completes the
    count swapped for the tightest that holds the rest (free 3, 3, 2, 1 and 7
    pods take 3, 3, 1). ``least_free_capacity``: least free first (1, 2, 3, ...).
    ``most_free_capacity``: most free first, no swap.
    """

    mixed = 0
    best_fit = 1
    least_free_capacity = 2
    most_free_capacity = 3


class TopologyManager(Enum):
    """The kubelet Topology Manager policy of every node (docs/engine/placement.md, "Kubelet Topology
    Manager").

    ``none``: no NUMA alignment (the kubelet's default). ``best_effort``:
    the kubelet aligns what it can and admits every pod. ``restricted``: it
    rejects a pod whose best merged hint is not preferred (the fewest NUMA
    nodes that could ever hold it are not free). ``single_numa_node``: it
    rejects a pod unless its devices (and exclusive CPUs) fit on one NUMA
    node. A rejected pod fails with TopologyAffinityError after the
    scheduler placed it; docs/systems.md, "Kubelet Topology Manager".
    """

    none = 0
    best_effort = 1
    restricted = 2
    single_numa_node = 3


class TopologyManagerScope(Enum):
    """``topologyManagerScope``: align each ``container`` (default) or the whole ``pod``.

    A pod here is one container, so both scopes align the same request.
    """

    container = 0
    pod = 1


class CpuManager(Enum):
    """The kubelet CPU manager policy: ``none`` (shared pool only) or ``static``.

    ``static``: a Guaranteed pod with whole CPUs gets exclusive CPUs, placed
    on NUMA nodes and giving the Topology Manager a CPU hint; a pod whose
    ``cpu_milli`` is a positive multiple of 1000 is taken as such.
    """

    none = 0
    static = 1


@dataclass
class Policy:
    """A scheduler configuration (the ``scheduler`` config group).

    Parameters
    ----------
    name
        Preset name, copied into results.
    queue_order
        See :class:`QueueOrder`.
    gang
        See :class:`GangMode`.
    node_placement, gpu_placement
        Node-level and GPU-level scorer by name, one of
        ``gpureplay.engine.fit.scoring.SCORERS``: ``first_fit`` (lowest index that
        fits), ``best_fit`` (least free capacity left: binpack; Volcano
        ``binpack``, KAI ``gpupack``), ``worst_fit`` (most: spread;
        kube-scheduler ``LeastAllocated``, KAI ``gpuspread``), ``random``
        (uniform among the candidates, seeded), ``balanced_allocation``
        (kube-scheduler ``NodeResourcesBalancedAllocation`` over GPU, CPU and
        memory). Checked when the replay starts.
    backfill
        See :class:`Backfill`.
    backfill_depth
        How many jobs behind the head are tried per cycle (Slurm
        ``bf_max_job_test``-style bound); 0 means unbounded.
    session_interval
        Seconds between periodic scheduling cycles (Volcano ``schedulePeriod``,
        default 1 s there); 0 runs a cycle at every arrival and completion.
    preemption
        See :class:`Preemption`.
    graceful_termination
        Seconds an evicted job keeps its resources before they are released
        (Kubernetes ``terminationGracePeriodSeconds``, default 30).
    requeue
        See :class:`Requeue`.
    min_candidate_nodes, candidate_nodes_percent
        DefaultPreemption's ``minCandidateNodesAbsolute`` (100) and
        ``minCandidateNodesPercentage`` (10): how many feasible nodes the
        victim search looks at before choosing.
    node_ties
        See :class:`NodeTies`.
    device_split_count
        Pods one GPU may hold at once (HAMi's ``deviceSplitCount``, 10 in its
        chart; a whole-GPU pod takes one slot of each of its GPUs); 0: no
        limit.
    shared_gpu_memory
        See :class:`SharedGpuMemory`.
    gpu_sharing
        See :class:`GpuSharing`.
    replicas
        Devices each GPU is advertised as under time-slicing or MPS (the
        device plugin's ``replicas``, >= 2); 1 without sharing.
    replica_allocation
        See :class:`ReplicaAllocation`.
    fail_requests_greater_than_one
        The device plugin's ``failRequestsGreaterThanOne``: a pod asking more
        than one replica fails at kubelet admission (UnexpectedAdmissionError,
        never retried) instead of running on replicas that do not add compute.
        ``None`` (default): the device plugin's own default, off under
        time-slicing, on under MPS (``api/config/v1``: MPS sets it when
        unset).
    sharing_demand
        See :class:`SharingDemand`.
    switch_overhead
        Time-slicing only: share of a GPU's time lost to context switches
        while two or more pods are active on it, in [0, 1) (0: free).
    mig_strategy
        See :class:`MigStrategy`.
    mig_demand
        See :class:`MigDemand`.
    mig_placement
        See :class:`MigPlacement` (``mig_strategy: dynamic`` only).
    mig_create_s
        ``mig_strategy: dynamic`` only: seconds between a pod's placement and
        the moment its job can run, spent creating its MIG instance (GPU and
        compute instance); paid by every attempt that has a pod on a dynamic
        MIG node, like a restart overhead (0: instant).
    mig_reconfigure
        See :class:`MigReconfigure`.
    mig_reconfigure_s
        ``mig_reconfigure: idle`` only: seconds a re-partitioned GPU serves no
        pod (``None``: 60, within the 30-90 s of docs/systems.md, "NVIDIA MIG and mig-parted").
    mig_reconfigure_layouts
        ``mig_reconfigure: idle`` only: the mig-parted configs a GPU may be
        given, in order of preference on ties (``None``: every standard config
        of the model with instances and no media-extension profile).
    spread_rate_nvlink, spread_rate_rack, spread_rate_spine
        What spreading costs (docs/engine/placement.md, "What spreading costs"): a job whose pods span more
        than one NVLink domain, rack or
        spine when an attempt starts runs at the product of those levels'
        factors, each in (0, 1] (1: no cost, the default). Blox
        (``jobs/model.py``, ``placement_penalty`` 0.6-0.9 by model, median
        0.8) slows a job not consolidated on one server.
    topology_aware
        See :class:`TopologyAware`. Needs ``gang: gang``; not modelled with
        EASY backfill or preemption.
    tas_profile
        See :class:`TasProfile` (``topology_aware: kueue`` only).
    topology_manager
        See :class:`TopologyManager`. Gang mode with whole-GPU jobs only; not
        modelled with EASY backfill, preemption or GPU sharing.
    topology_manager_scope
        See :class:`TopologyManagerScope`.
    cpu_manager
        See :class:`CpuManager` (read under a ``topology_manager`` policy).
    numa_aware_scheduler
        The scheduler filters nodes by NUMA fit (scheduler-plugins'
        NodeResourceTopologyMatch on up-to-date NodeResourceTopology
        reports), so the kubelet never rejects; ``single_numa_node`` only.
    backoff_limit
        A job's ``spec.backoffLimit``: it fails once its pods failed kubelet
        admission more than this many times (Kubernetes default 6; 0 to 10,000).
    queues
        See :class:`QueueModel`.
    quotas
        See :class:`QuotaSource` (read under a queue model).
    manifests
        A file or folder of Kubernetes YAML (``quotas: manifests``).
    quota_missing
        See :class:`MissingQuota` (derived quotas only).
    quota_cohort
        Derived quotas: all ClusterQueues share one cohort and borrow one another's unused quota (Kueue's
        defaults: no borrowing or lending limit); ``false``: each stands alone.
    fair_sharing
        ``queues: kueue`` only: Kueue's fair sharing (its configuration's ``fairSharing.enable``): each
        round's heads are ordered by the tournament of dominant resource shares (``fairSharing.weight``
        read from the manifests) instead of the classical iterator, and preemption follows fair sharing's
        strategies instead of the classical targets.
    fair_sharing_strategies
        See :class:`FairSharingStrategies` (read with ``fair_sharing: true``).
    within_cluster_queue, reclaim_within_cohort, borrow_within_cohort, borrow_max_priority
        Derived quotas only: every ClusterQueue's ``spec.preemption`` (see :class:`WithinClusterQueue`,
        :class:`ReclaimWithinCohort`, :class:`BorrowWithinCohort`; ``borrow_max_priority`` is
        ``borrowWithinCohort.maxPriorityThreshold``, null: unset). Manifests state their own.
    overcommit_factor
        ``queues: volcano`` only: the overcommit plugin's ``overcommit-factor`` (Volcano's default 1.2, at
        least 1): a job enters Inqueue only while the Inqueue jobs' requests and its own fit in the
        cluster's resources times this factor less what is allocated.
    actions
        ``queues: volcano`` only: the session's actions as Volcano's scheduler configuration lists them
        (null: Volcano's default ``enqueue, allocate, backfill``). ``enqueue, allocate, reclaim, backfill``
        adds the reclaim action: a queue below its deserved share evicts pods of queues above theirs;
        ``enqueue, allocate, preempt, backfill`` the preempt action: a starving job evicts jobs of its own
        queue (both: preempt first). See :mod:`gpureplay.queues.volcano_actions`.
    preemptable_plugins
        ``queues: volcano`` with the preempt action only: the plugins whose ``enablePreemptable`` is on,
        from ``priority, gang, conformance, drf`` (null: all, Volcano's built-in configuration; the Helm
        chart's is ``priority, conformance``).
    kueue_admission
        ``queues: kueue`` only: see :class:`KueueAdmission`.
    pods_ready_timeout
        ``kueue_admission: quota`` only: Kueue's ``waitForPodsReady`` with this ``timeout`` in seconds
        (null: off; Kueue's default when on is 30 min): an admitted job whose pods are not all placed this
        long after its admission is evicted and requeued after a back-off.
    pods_ready_block_admission
        ``waitForPodsReady.blockAdmission``: nothing is admitted while an admitted job's pods are not all
        placed (default false).
    kai_default_preempt_min_runtime, kai_default_reclaim_min_runtime, kai_reclaim_resolve_method
        ``queues: kai`` only: the minruntime plugin's arguments ``defaultPreemptMinRuntime``,
        ``defaultReclaimMinRuntime`` (seconds, KAI's default 0) and ``reclaimResolveMethod``
        (:class:`KaiReclaimResolveMethod`), used where no KAI Queue on the resolved path sets
        ``preemptMinRuntime`` / ``reclaimMinRuntime`` (derived quotas set none). Each is refused where the
        action that reads it (preempt, reclaim) is not in ``actions``.
    pods_ready_backoff_limit, pods_ready_backoff_base, pods_ready_backoff_max
        ``waitForPodsReady.requeuingStrategy``'s ``backoffLimitCount`` (null: requeued forever; once a job
        was requeued this many times its next timeout deactivates it, ``failed``), ``backoffBaseSeconds``
        (60) and ``backoffMaxSeconds`` (3600): the n-th requeue comes ``base x 2^(n-1)`` seconds after the
        timeout, at most the maximum. Its ``timestamp`` is ``requeue`` (``back``: Eviction, ``original``:
        Creation).
    """

    name: str = "fifo"
    queue_order: QueueOrder = QueueOrder.fifo
    gang: GangMode = GangMode.gang
    node_placement: str = "first_fit"
    gpu_placement: str = "first_fit"
    backfill: Backfill = Backfill.none
    backfill_depth: int = 0
    session_interval: float = 0.0
    preemption: Preemption = Preemption.none
    graceful_termination: float = 30.0
    requeue: Requeue = Requeue.back
    min_candidate_nodes: int = 100
    candidate_nodes_percent: int = 10
    node_ties: NodeTies = NodeTies.lowest_index
    device_split_count: int = 0
    shared_gpu_memory: SharedGpuMemory = SharedGpuMemory.none
    gpu_sharing: GpuSharing = GpuSharing.none
    replicas: int = 1
    replica_allocation: ReplicaAllocation = ReplicaAllocation.distributed
    fail_requests_greater_than_one: bool | None = None
    sharing_demand: SharingDemand = SharingDemand.whole
    switch_overhead: float = 0.0
    mig_strategy: MigStrategy = MigStrategy.none
    mig_demand: MigDemand = MigDemand.any
    mig_placement: MigPlacement = MigPlacement.hami
    mig_create_s: float = 0.0
    mig_reconfigure: MigReconfigure = MigReconfigure.none
    mig_reconfigure_s: float | None = None
    mig_reconfigure_layouts: list[str] | None = None
    spread_rate_nvlink: float = 1.0
    spread_rate_rack: float = 1.0
    spread_rate_spine: float = 1.0
    topology_aware: TopologyAware = TopologyAware.none
    tas_profile: TasProfile = TasProfile.mixed
    topology_manager: TopologyManager = TopologyManager.none
    topology_manager_scope: TopologyManagerScope = TopologyManagerScope.container
    cpu_manager: CpuManager = CpuManager.none
    numa_aware_scheduler: bool = False
    backoff_limit: int = 6
    queues: QueueModel = QueueModel.none
    quotas: QuotaSource = QuotaSource.none
    manifests: str | None = None
    quota_missing: MissingQuota = MissingQuota.error
    quota_cohort: bool = True
    fair_sharing: bool = False
    fair_sharing_strategies: FairSharingStrategies = FairSharingStrategies.both
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.never
    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.never
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort.never
    borrow_max_priority: int | None = None
    overcommit_factor: float = 1.2
    actions: str | None = None
    preemptable_plugins: str | None = None
    kueue_admission: KueueAdmission = KueueAdmission.placement
    pods_ready_timeout: float | None = None
    pods_ready_block_admission: bool = False
    pods_ready_backoff_limit: int | None = None
    pods_ready_backoff_base: float = 60.0
    pods_ready_backoff_max: float = 3600.0
    kai_default_preempt_min_runtime: float = 0.0
    kai_default_reclaim_min_runtime: float = 0.0
    kai_reclaim_resolve_method: KaiReclaimResolveMethod = KaiReclaimResolveMethod.lca

    def devices_per_gpu(self) -> int:
        """``nvidia.com/gpu`` devices per GPU: ``replicas`` when shared by replicas, else 1."""
        sharing = str(getattr(self.gpu_sharing, "name", self.gpu_sharing))
        return self.replicas if sharing != GpuSharing.none.name else 1
