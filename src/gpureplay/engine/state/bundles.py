"""The named bundles the engine's state travels in, and their allocation.

A kernel names what it reads and writes by bundle and field
(``cl.node_free``, ``js.dyn``) instead of taking dozens of positional arrays
of the same dtype and shape, so a misordered argument is a type error at
compile time, not silently corrupted state. Bundles are ``NamedTuple`` s of
arrays (numba compiles attribute access to a field offset); the arrays are
mutated in place and never replaced inside a kernel. Row layouts are the
constants of :mod:`gpureplay.engine.state.layout`.

Allocation happens here, in numpy, once per replay: a chunked run keeps all
of its state in these arrays between :func:`gpureplay.engine.loop.advance`
calls, which is what makes it resumable.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpureplay.engine.state import layout as L
from gpureplay.engine.state.heaps import bitset_words
from gpureplay.engine.state.layout import Float64Array, Int64Array, UInt64Array


class Params(NamedTuple):
    """Scalars of a replay: policy codes (``P_*``) and float settings (``PF_*``)."""

    codes: Int64Array
    flt: Float64Array


class Jobs(NamedTuple):
    """The static job table.

    Attributes
    ----------
    ints, flts
        ``J_*`` and ``JF_*`` rows, one column per job (input order).
    mask
        Allowed GPU models per job (a bit per model code).
    arrival
        Job indices in ``(submit_time, job_id)`` order.
    reject
        ``R_*`` rejection code per job (computed once per shape).
    pod_job
        The job of each global pod.
    demand
        On shared devices (time-slicing and MPS replicas, MIG instances): the
        share of a GPU one device of each job would use alone (1: all of it);
        read only when the replay shares (:mod:`gpureplay.engine.devices.sharing`).
    idle
        ``I_*`` rows, one column per job under ``preemption: reclaim_idle``
        (one column otherwise): each job's usage model and its PriorityClass's
        ReclaimIdleResource annotations (:mod:`gpureplay.engine.preemption.idle`).
    """

    ints: Int64Array
    flts: Float64Array
    mask: UInt64Array
    arrival: Int64Array
    reject: Int64Array
    pod_job: Int64Array
    demand: Float64Array
    idle: Float64Array


class Tasks(NamedTuple):
    """The workload's task classes FGD weighs (:mod:`gpureplay.workload.typical_pods`).

    Filled (``Classes.tasks``) only for replays whose scorers are the FGD
    paper's (:data:`gpureplay.engine.fit.scoring.PAPER_SCORERS`) and for packing
    runs; the other replays get an empty bundle (no classes), so that all
    replays share one compiled ``Classes`` type.

    Attributes
    ----------
    ints, mask, pop
        ``TK_*`` rows, allowed-model masks and popularity, one column per
        class (none when no scorer is ``fgd``).
    memo
        ``[job class, node, (score, gpu)]``: the ``fgd`` scorer's answers
        while a node is unchanged (NaN: not known). Only packing mode keeps
        one (it forgets a node's answers when it places a pod there);
        elsewhere it is empty, because trial placements and projections
        score other states.
    """

    ints: Int64Array
    mask: UInt64Array
    pop: Float64Array
    memo: Float64Array


class Classes(NamedTuple):
    """Job classes: ``C_*`` rows, allowed-model masks, class-sorted static job order, dynamic-MIG shapes
    per model (``mig[class, model]``, ``MIG_NONE`` without dynamic MIG), the shapes the workload asks
    of each model (``mig_wanted[model, i]``, -1 after the last) and how many pods ask each
    (``mig_weight[model, i]``: FGD's popularity over slices); the layouts a MIG GPU of each model may be
    re-partitioned to, in order (``mig_layouts[model, i]``, words as ``G_LAYOUT``, -1 after the last; all -1
    unless ``mig_reconfigure: idle``); FGD's task classes."""

    ints: Int64Array
    mask: UInt64Array
    order: Int64Array
    mig: Int64Array
    mig_wanted: Int64Array
    mig_weight: Int64Array
    mig_layouts: Int64Array
    tasks: Tasks


class Cluster(NamedTuple):
    """Free capacity of the cluster (the current state, or the EASY projection of it).

    Attributes
    ----------
    node_int
        Static node table (``N_*`` rows), shared by every Cluster of a replay.
    node_free, gpu_free
        ``F_*`` rows per node, ``G_*`` rows per GPU.
    model_hist
        ``[model, w]``: nodes of that model with ``w`` wholly free GPUs.
    model_milli
        Free milli-GPU per model.
    totals
        ``TOT_*``: cluster-wide wholly free GPUs and allocated milli-GPU.
    pod_kinds
        ``[kind, node]``: GPU pods placed on each node by kind: row 0 shared
        pods, row ``k`` pods of ``k`` whole GPUs (what the ``gpu_clustering``
        scorer groups by).
    nominees
        ``NOM_*`` rows: the pods nominated to nodes by preemptors whose
        victims still terminate (:mod:`gpureplay.engine.preemption.nomination`); the
        count is ``nominees[0, 0]``, entries are columns ``1..count``. One
        array shared by the current state and the EASY projection.
    gpu_ready
        Per GPU: when its MIG re-partitioning downtime ends (``inf``: not
        in downtime; :mod:`gpureplay.engine.devices.repartition`).
    model_span
        ``[0, model]`` / ``[1, model]``: the lowest and highest ``w`` with nodes in ``model_hist[model, w]``
        (the histogram's width and -1 for a model no node has). The capacity bound sums only between them,
        so one node of thousands of GPUs costs one bucket of the histogram, not thousands (issue 46).
    """

    node_int: Int64Array
    node_free: Int64Array
    gpu_free: Int64Array
    model_hist: Int64Array
    model_milli: Int64Array
    totals: Int64Array
    pod_kinds: Int64Array
    nominees: Int64Array
    gpu_ready: Float64Array
    model_span: Int64Array


class FitIndex(NamedTuple):
    """Per-model segment trees over nodes (:mod:`gpureplay.engine.fit.fitindex`)."""

    leaf: Int64Array
    offset: Int64Array
    keys: Int64Array


class JobState(NamedTuple):
    """Per-job and per-pod dynamic state.

    Attributes
    ----------
    dyn, time
        ``D_*`` and ``T_*`` rows, one column per job.
    pod_node, pod_time
        Node of each placed pod (-1: not placed) and when it was placed.
    slot_gpu
        GPU of each GPU slot of a placed pod.
    pod_next, pod_prev, node_pods
        Doubly linked list of the placed pods on each node (``node_pods[n]``
        is the first, -1 when none): what preemption looks at on a node.
    """

    dyn: Int64Array
    time: Float64Array
    pod_node: Int64Array
    pod_time: Float64Array
    slot_gpu: Int64Array
    pod_next: Int64Array
    pod_prev: Int64Array
    node_pods: Int64Array


class Pending(NamedTuple):
    """The pending set (:mod:`gpureplay.engine.pending`).

    Attributes
    ----------
    cls
        ``CD_*`` rows per class.
    active
        Classes with pending jobs (first ``K_NACTIVE`` entries, no order).
    l0, l1, l2
        Bitset over class-sorted static positions: pending jobs at their static place.
    over
        Per class, from ``C_START``: its overflow list (requeued jobs with a new
        key), sorted by key.
    heap_f, heap_i
        The cycle's merge heap of class heads.
    tenant_rank
        The tenant selector's current rank per tenant (0 for the global order).
    """

    cls: Int64Array
    active: Int64Array
    l0: UInt64Array
    l1: UInt64Array
    l2: UInt64Array
    over: Int64Array
    heap_f: Float64Array
    heap_i: Int64Array
    tenant_rank: Float64Array


class Timers(NamedTuple):
    """Event heaps with lazy deletion (:mod:`gpureplay.engine.state.timers`).

    Attributes
    ----------
    run_f, run_i
        Completion heap: key ``(finish time, job_id, 0)``, payload ``(job, generation)``.
    tm_f, tm_i
        Timer heap: key ``(time, kind, sequence)``, payload ``(target, generation)``.
    """

    run_f: Float64Array
    run_i: Int64Array
    tm_f: Float64Array
    tm_i: Int64Array


class Scratch(NamedTuple):
    """Work space every replay uses.

    Attributes
    ----------
    node_mark
        Per node: the start (``K_STARTS`` stamp) that last counted it (nodes spanned).
    touched_nodes, touch_mark
        Debug runs: nodes whose state changed since the last check, and a
        per-node flag saying a node is in that list.
    prio_jobs, prio_milli
        Per priority rank: preemptible jobs holding pods (not terminating) and
        the milli-GPU they hold, so a preemption search that cannot succeed
        (no possible victim, or not enough GPU even with every one of them
        gone) is dismissed at once.
    domain_mark
        ``[level, domain]``: the start (``K_STARTS`` stamp) that last counted
        an NVLink domain, rack or spine (:mod:`gpureplay.engine.placement.spread`).
    unplaced
        Per class: the pods of its pending jobs not placed yet (what the MIG
        re-partitioning controller counts as asked).
    mig_count
        ``[row, wanted shape]``: the MIG re-partitioning controller's counts
        of instances asked, supplied, and supplied by the other GPUs
        (:mod:`gpureplay.engine.devices.repartition`).
    """

    node_mark: Int64Array
    touched_nodes: Int64Array
    touch_mark: Int64Array
    prio_jobs: Int64Array
    prio_milli: Int64Array
    domain_mark: Int64Array
    unplaced: Int64Array
    mig_count: Int64Array


class PodScratch(NamedTuple):
    """Pod-by-pod mode's work space (None in gang mode).

    Attributes
    ----------
    group_f, group_i
        The heap of one queue-key group's jobs, keyed ``(pods placed, job_id)``.
    touched
        Classes gathered into a group.
    """

    group_f: Float64Array
    group_i: Int64Array
    touched: Int64Array


class EasyScratch(NamedTuple):
    """EASY backfill's reservation (None unless ``backfill: easy``).

    Attributes
    ----------
    proj
        The projected state at the shadow time.
    hold
        The reserved job's pod capacity per node on the projection.
    scan_f, scan_i
        A copy of the completion heap, consumed to project releases.
    kept_shadow
        The reservation's shadow time kept between cycles.
    """

    proj: Cluster
    hold: Int64Array
    scan_f: Float64Array
    scan_i: Int64Array
    kept_shadow: Float64Array


class Topology(NamedTuple):
    """The cluster's topology tree for topology-aware gang placement, and its work space (None unless
    ``topology_aware`` is on; :mod:`gpureplay.engine.placement.kueue_tas`).

    Attributes
    ----------
    dom
        ``[level, node]``: the node's domain at each ``LEVEL_*`` (spine, rack,
        NVLink domain, node). A domain is named by its path from the top (Kueue's
        domain ID), and ids run in path order, so the children of a domain are
        consecutive ids one level down.
    child0
        ``[level, d]``: the first child (at ``level + 1``) of domain ``d``;
        ``child0[level, sizes[level]]`` is ``sizes[level + 1]``.
    leaf_node
        The node of each leaf (``LEVEL_NODE`` domain).
    sizes
        Domains per level.
    state
        ``[level, d]``: pods of the job being placed that fit in ``d``, then the
        pods assigned to it.
    units
        ``[level, d]``: what the search counts in ``d``: Kueue's ``sliceState``
        (slices that fit, then slices assigned) at and above a sliced request's
        slice level, ``state`` elsewhere and for a request without slices.
    cur, nxt, key
        Domain lists and sort keys of the search.
    free, ratio
        KAI: ``[resource, level, d]`` free GPU milli (whole GPUs: 1000 per
        wholly free GPU), CPU milli and memory of each domain, and the job's
        requests over them (``[level, d]``, the dominant share).
    order, rank
        KAI: ``[level, i]`` the domains of each level in its sorted tree's
        order (parent-major), and each domain's place in its level's order.
    """

    dom: Int64Array
    child0: Int64Array
    leaf_node: Int64Array
    sizes: Int64Array
    state: Int64Array
    units: Int64Array
    cur: Int64Array
    nxt: Int64Array
    key: Int64Array
    free: Int64Array
    ratio: Float64Array
    order: Int64Array
    rank: Int64Array


def topology_tree(node_int: Int64Array) -> Topology:
    """The :class:`Topology` of a node table (its ``N_SPINE``, ``N_RACK``, ``N_NVLINK`` rows)."""
    num_nodes = node_int.shape[1]
    paths = np.stack(
        [node_int[L.N_SPINE], node_int[L.N_RACK], node_int[L.N_NVLINK], np.arange(num_nodes, dtype=np.int64)]
    )
    order = np.lexsort(paths[::-1])
    ordered = paths[:, order]
    dom = np.zeros((L.TAS_LEVELS, num_nodes), dtype=np.int64)
    count = np.zeros(L.TAS_LEVELS, dtype=np.int64)
    for level in range(L.TAS_LEVELS):
        # A new domain wherever the path down to this level differs from the previous node's.
        new = np.ones(num_nodes, dtype=bool)
        new[1:] = (ordered[: level + 1, 1:] != ordered[: level + 1, :-1]).any(axis=0)
        ids = np.cumsum(new) - 1
        dom[level, order] = ids
        count[level] = int(ids[-1]) + 1 if num_nodes else 0
    widest = max(int(count.max(initial=0)), 1)
    child0 = np.zeros((L.TAS_LEVELS - 1, widest + 1), dtype=np.int64)
    for level in range(L.TAS_LEVELS - 1):
        parents, children = dom[level, order], dom[level + 1, order]
        first = np.full(count[level] + 1, count[level + 1], dtype=np.int64)
        np.minimum.at(first, parents, children)
        child0[level, : count[level] + 1] = first
    return Topology(
        dom=dom,
        child0=child0,
        leaf_node=np.ascontiguousarray(order.astype(np.int64)),
        sizes=count,
        state=np.zeros((L.TAS_LEVELS, widest), dtype=np.int64),
        units=np.zeros((L.TAS_LEVELS, widest), dtype=np.int64),
        cur=np.zeros(widest, dtype=np.int64),
        nxt=np.zeros(widest, dtype=np.int64),
        key=np.zeros(widest, dtype=np.int64),
        free=np.zeros((3, L.TAS_LEVELS, widest), dtype=np.int64),
        ratio=np.zeros((L.TAS_LEVELS, widest)),
        order=np.zeros((L.TAS_LEVELS, widest), dtype=np.int64),
        rank=np.zeros((L.TAS_LEVELS, widest), dtype=np.int64),
    )


class Numa(NamedTuple):
    """The nodes' NUMA layout and what the kubelet's Topology Manager works with (None unless
    ``topology_manager`` is on; :mod:`gpureplay.engine.placement.numa`).

    Attributes
    ----------
    gpu_numa
        The NUMA node of each GPU on its node (the nodes table's ``numa_of_gpu``).
    node_numas
        NUMA nodes per node (``U``; 1 + the largest ``numa_of_gpu``, 1 without GPUs).
    numa_gpus, numa_cpus
        ``[node, u]``: GPUs and whole CPUs on each NUMA node (CPUs split
        evenly; ``UNBOUNDED`` when the node's CPU capacity is unknown).
    pod_cpu
        ``[pod, u]``: the exclusive CPUs each placed pod took on each NUMA
        node of its node (the CPU manager's static policy).
    mask_order
        Every non-empty mask of ``MAX_NUMA`` NUMA nodes in the kubelet's
        ``IterateBitMasks`` order: fewer NUMA nodes first, then lexicographic
        by NUMA ids.
    free_gpu, free_cpu, hint_mask, hint_pref, counts
        Work space: a node's free GPUs and CPUs per NUMA node, two
        providers' hints, and the providers' hint counts.
    """

    gpu_numa: Int64Array
    node_numas: Int64Array
    numa_gpus: Int64Array
    numa_cpus: Int64Array
    pod_cpu: Int64Array
    mask_order: Int64Array
    free_gpu: Int64Array
    free_cpu: Int64Array
    hint_mask: Int64Array
    hint_pref: Int64Array
    counts: Int64Array


def numa_layout(
    numa_of_gpu: list[list[int] | None], num_gpus: Int64Array, cpu: Int64Array, num_pods: int
) -> Numa:
    """The :class:`Numa` bundle of a nodes table (its ``numa_of_gpu`` lists, GPU counts and CPU capacities).

    Parameters
    ----------
    numa_of_gpu
        Per node, the NUMA node of each GPU (null: one NUMA node).
    num_gpus, cpu
        Per node, GPUs and CPU capacity (milli; ``BIG`` when unknown).
    num_pods
        Pods of the whole trace (rows of ``pod_cpu``).
    """
    num_nodes = len(num_gpus)
    gpu_numa = np.zeros(max(int(num_gpus.sum()), 1), dtype=np.int64)
    node_numas = np.ones(num_nodes, dtype=np.int64)
    numa_gpus = np.zeros((num_nodes, L.MAX_NUMA), dtype=np.int64)
    numa_cpus = np.zeros((num_nodes, L.MAX_NUMA), dtype=np.int64)
    g = 0
    for n in range(num_nodes):
        sockets = numa_of_gpu[n] or [0] * int(num_gpus[n])
        for u in sockets:
            gpu_numa[g] = u
            numa_gpus[n, u] += 1
            g += 1
        u_count = max(sockets, default=0) + 1
        node_numas[n] = u_count
        if cpu[n] >= L.BIG // 2:
            numa_cpus[n, :u_count] = L.UNBOUNDED_CPUS
        else:
            whole = int(cpu[n]) // 1000
            numa_cpus[n, :u_count] = whole // u_count
            numa_cpus[n, : whole % u_count] += 1
    # The kubelet's IterateBitMasks order: by size, then lexicographic by NUMA ids.
    masks = sorted(
        range(1, 1 << L.MAX_NUMA),
        key=lambda m: (bin(m).count("1"), [u for u in range(L.MAX_NUMA) if m >> u & 1]),
    )
    return Numa(
        gpu_numa=gpu_numa,
        node_numas=node_numas,
        numa_gpus=numa_gpus,
        numa_cpus=numa_cpus,
        pod_cpu=np.zeros((max(num_pods, 1), L.MAX_NUMA), dtype=np.int64),
        mask_order=np.array(masks, dtype=np.int64),
        free_gpu=np.zeros(L.MAX_NUMA, dtype=np.int64),
        free_cpu=np.zeros(L.MAX_NUMA, dtype=np.int64),
        hint_mask=np.zeros((2, 1 << L.MAX_NUMA), dtype=np.int64),
        hint_pref=np.zeros((2, 1 << L.MAX_NUMA), dtype=np.int64),
        counts=np.zeros(2, dtype=np.int64),
    )


class KueueState(NamedTuple):
    """A Kueue quota tree and its cycle's work space (``queues: kueue``;
    :mod:`gpureplay.engine.queues.kueue.cycle`).

    Attributes
    ----------
    parent
        Per node (ClusterQueues ``0 .. T-1`` in tenant order, then cohorts, children before parents):
        its parent cohort, -1 at a root.
    nominal, borrow, lend
        ``[resource, node]`` nominal quota, ``borrowingLimit`` and ``lendingLimit`` (``QUOTA_UNSET``:
        unset), resources GPU milli, CPU milli, memory MiB.
    subtree
        ``[resource, node]`` subtree quota (static).
    height
        Per node, its height in the tree (static): the longest path down from it (0: a ClusterQueue; Kueue's
        ``getNodeHeight``, the borrowing level of a request that node's quota holds).
    covered
        ``[resource, cluster queue]``: 1 where the ClusterQueue's quota limits the resource.
    strict
        Per ClusterQueue: 1 under ``StrictFIFO``.
    used, path
        Work space: nodes' usage of one resource; a node's path to its root.
    seg, hf, hi, hsize, blocked
        Work space: per ClusterQueue a heap of its pending classes' heads (keys ``hf``, ``hi`` in columns
        ``seg[q] .. seg[q+1]``, ``hsize[q]`` of them), so that its head is one look away; the release
        version at which a StrictFIFO ClusterQueue's head was found inadmissible (-1: never).
    entries, entry_cls, borrowing
        Work space: one round's nominated heads, their classes and each one's borrowing level (0: none).
    fair
        ``[2]``: 1 under Kueue's fair sharing (the tournament orders a round's heads); its
        ``fairSharing.preemptionStrategies`` (``FairSharingStrategies`` value).
    present, lendable, weight
        Fair sharing: ``[row, node]`` the flavor-resources named by the node's subtree quota; ``[resource,
        node]`` what its parent could lend at no usage, over all flavors; ``[node]`` ``fairSharing.weight``.
    share, share2, winner, entry_of, path_used
        Fair sharing's work space: ``[entry, node]`` the weighted (``share``) and unweighted share of the
        entry's child on the path below ``node``, its workload included; each cohort's tournament winner
        (an entry); each ClusterQueue's entry (-1: none); ``[resource, node]`` usage with a workload added.
    pre, pre_on
        ``[KP_* row, cluster queue]`` ``spec.preemption``; ``[1]``: 1 when some ClusterQueue may preempt.
    adm_head, adm_next, adm_listed
        Per ClusterQueue a list of the jobs that took its quota (first job; per job the next, -1 ends it;
        whether listed), pruned of jobs that no longer hold quota as it is walked.
    need, ask, cand, cand_wb, order, targets
        Preemption's work space: ``[row]`` 1 where the preemptor needs preemption, and its request left at a
        node of the hierarchical-advantage walk; candidates, whether
        each may be reclaimed only without borrowing (fair sharing: each one's state in the search); their
        order; the targets chosen.
    fs_drop, fs_next
        Fair sharing's preemption work space: per node, dropped from the search; per ClusterQueue, the
        position (in ``order``) from which its next candidate is looked for.
    flv_slots, flv_group, flv_mask, flv_policy, flv_on
        Kueue's ResourceFlavors (:mod:`gpureplay.engine.queues.kueue.tree`): ``[cluster queue, group, k]`` the
        flavor slots each resource group tries, in order (-1 after the last); ``[resource, cluster queue]``
        the group covering the resource (-1: none); per flavor slot the GPU models its ``nodeLabels`` select
        (a model mask); per ClusterQueue its flavor fungibility (``layout.FP_*`` bits); ``[1]``: 1 when some
        flavor selects nodes (placements are narrowed to the assigned flavors' models). The quota arrays above
        have one row per flavor slot and resource (``3 f + r``).
    w_jobs, w_n, w_mark
        Kueue's admission by quota (``params.codes[P_QUOTA_ONLY]``;
        :mod:`gpureplay.engine.queues.kueue.pods_ready`): the admitted jobs whose pods are not all placed yet,
        in kube-scheduler's order (priority, then admission time, then job id), ``w_n[0]`` of them; ``w_n[1]``
        a counter of placement passes and, per class, the pass in which one of its pods fitted nowhere.
    """

    parent: Int64Array
    nominal: Int64Array
    borrow: Int64Array
    lend: Int64Array
    subtree: Int64Array
    height: Int64Array
    covered: Int64Array
    strict: Int64Array
    used: Int64Array
    path: Int64Array
    seg: Int64Array
    hf: Float64Array
    hi: Int64Array
    hsize: Int64Array
    blocked: Int64Array
    entries: Int64Array
    entry_cls: Int64Array
    borrowing: Int64Array
    fair: Int64Array
    present: Int64Array
    lendable: Int64Array
    weight: Float64Array
    share: Float64Array
    share2: Float64Array
    winner: Int64Array
    entry_of: Int64Array
    path_used: Int64Array
    pre: Int64Array
    pre_on: Int64Array
    adm_head: Int64Array
    adm_next: Int64Array
    adm_listed: Int64Array
    need: Int64Array
    ask: Int64Array
    cand: Int64Array
    cand_wb: Int64Array
    order: Int64Array
    targets: Int64Array
    fs_drop: Int64Array
    fs_next: Int64Array
    flv_slots: Int64Array
    flv_group: Int64Array
    flv_mask: UInt64Array
    flv_policy: Int64Array
    flv_on: Int64Array
    w_jobs: Int64Array
    w_n: Int64Array
    w_mark: Int64Array


class VolcanoState(NamedTuple):
    """Volcano's queues and a session's work space (``queues: volcano``;
    :mod:`gpureplay.engine.queues.volcano.session`).

    Each queue system owns its bundle, so a kernel of one system is compiled over its own arrays only
    (numba passes a bundle field by field, and a kernel's compile time grows with their number).

    Attributes
    ----------
    seg, hf, hi, hsize
        Work space: per queue a heap of its pending classes' heads (keys ``hf``, ``hi`` in columns
        ``seg[q] .. seg[q+1]``, ``hsize[q]`` of them), so that its head is one look away.
    weight
        Per queue its ``spec.weight``.
    v_real, v_guar, v_prio, v_total
        Volcano, in its units (milli-GPU, milli-CPU, bytes): ``[resource, queue]`` ``realCapability``
        (``inf``: unbounded) and ``guarantee``; ``[queue]`` ``spec.priority``; ``[resource]`` the cluster's
        total, then at ``[3]`` the ``overcommit-factor``.
    v_des, v_req, v_alloc, v_share, v_on, v_met
        A session's proportion state: ``deserved``, ``request`` and ``allocated`` per resource and queue; the
        queue's share; whether it takes part (has jobs); whether its water-filling is met.
    v_inq, v_cinq, v_qinq
        The enqueue action's state: per job 1 while Inqueue and pending; per class its Inqueue pending jobs;
        ``[resource, queue]`` their requests (engine units).
    v_seen
        Work space: per class the Inqueue jobs the allocate action went past.
    v_act, v_recl, v_rel, v_term, v_nterm
        Volcano's preempt and reclaim actions (:mod:`gpureplay.engine.queues.volcano.preempt`,
        :mod:`gpureplay.engine.queues.volcano.reclaim`): ``[0]`` the actions run after allocate (bits
        ``ACT_PREEMPT``, ``ACT_RECLAIM``), ``[1]`` the plugins whose ``enablePreemptable`` is on (bits
        ``PF_*``); each queue's ``spec.reclaimable``; what its terminating victims still hold (engine units;
        Volcano's allocated leaves Releasing pods out) and the list of those victims.
    v_mark, v_vict, v_nvict, v_pp, v_pst, v_part, v_npart, v_qin, v_pipe, v_node, v_walk, v_stamp, v_slot,
    v_unit, v_ucnt, v_copy, v_copied, v_mut, v_cfail, v_over, v_uall, v_snode, v_cprio, v_qbound, v_qminp
        The preempt and reclaim actions' work space: each victim's statement (evicting job + 1) and the
        list of victims; each evicting job's pipelined pods and state, and the list of those jobs; queues
        still in the action; pipelined resources per node; a node's releasing resources; the node walk's
        candidate jobs, their pods on the node and the proportion plugin's per-queue copy of the
        allocation; a counter of the session's changes (evictions, pipelined pods) and, per class, the
        counter + 1 at which a job's first pod found no room; the reclaimable queues above their deserved
        share at the last change; the preempt action's count of each unit's pods on the node, the nodes
        of a statement's pipelined pods, per class the priority its failure (``v_cfail``) was found at, and
        per queue the largest drf share a running job keeps after losing a pod and the lowest priority of
        its running jobs.
    """

    seg: Int64Array
    hf: Float64Array
    hi: Int64Array
    hsize: Int64Array
    weight: Float64Array
    v_real: Float64Array
    v_guar: Float64Array
    v_prio: Int64Array
    v_total: Float64Array
    v_des: Float64Array
    v_req: Float64Array
    v_alloc: Float64Array
    v_share: Float64Array
    v_on: Int64Array
    v_met: Int64Array
    v_inq: Int64Array
    v_cinq: Int64Array
    v_qinq: Int64Array
    v_seen: Int64Array
    v_act: Int64Array
    v_recl: Int64Array
    v_rel: Int64Array
    v_term: Int64Array
    v_nterm: Int64Array
    v_mark: Int64Array
    v_vict: Int64Array
    v_nvict: Int64Array
    v_pp: Int64Array
    v_pst: Int64Array
    v_part: Int64Array
    v_npart: Int64Array
    v_qin: Int64Array
    v_pipe: Float64Array
    v_node: Float64Array
    v_walk: Int64Array
    v_stamp: Int64Array
    v_slot: Int64Array
    v_unit: Int64Array
    v_ucnt: Int64Array
    v_copy: Float64Array
    v_copied: Int64Array
    v_mut: Int64Array
    v_over: Int64Array
    v_cfail: Int64Array
    v_uall: Int64Array
    v_snode: Int64Array
    v_cprio: Int64Array
    v_qbound: Float64Array
    v_qminp: Float64Array


class KaiState(NamedTuple):
    """KAI's queue tree and its session's work space (``queues: kai``;
    :mod:`gpureplay.engine.queues.kai.session`).

    Its ``v_*`` arrays mean what Volcano's do (:class:`VolcanoState`): a session's allocation, request and
    fair share per resource and queue, the eviction actions' bits and terminating victims; ``parent`` links
    the queues and the class heaps are one per leaf queue.

    Attributes
    ----------
    parent
        Per queue (leaves ``0 .. T-1`` in tenant order, then parents children-first): its parent, -1 at
        the top level.
    seg, hf, hi, hsize
        Work space: per leaf queue a heap of its pending classes' heads (keys ``hf``, ``hi`` in columns
        ``seg[q] .. seg[q+1]``, ``hsize[q]`` of them), so that its head is one look away.
    v_real, v_guar, v_prio, v_total
        Volcano, in its units (milli-GPU, milli-CPU, bytes): ``[resource, queue]`` ``realCapability``
        (``inf``: unbounded) and ``guarantee``; ``[queue]`` ``spec.priority``; ``[resource]`` the cluster's
        total, then at ``[3]`` the ``overcommit-factor``.
    v_des, v_req, v_alloc, v_share, v_on, v_met
        A session's proportion state: ``deserved``, ``request`` and ``allocated`` per resource and queue; the
        queue's share; whether it takes part (has jobs); whether its water-filling is met.
    v_act, v_rel, v_term, v_nterm
        Volcano's preempt and reclaim actions (:mod:`gpureplay.engine.queues.volcano.preempt`,
        :mod:`gpureplay.engine.queues.volcano.reclaim`): ``[0]`` the actions run after allocate (bits
        ``ACT_PREEMPT``, ``ACT_RECLAIM``), ``[1]`` the plugins whose ``enablePreemptable`` is on (bits
        ``PF_*``); each queue's ``spec.reclaimable``; what its terminating victims still hold (engine units;
        Volcano's allocated leaves Releasing pods out) and the list of those victims.
    k_quota, k_oqw, k_limit, k_created, k_kstart, k_kids
        KAI (:mod:`gpureplay.engine.queues.kai.session`), in its units (GPUs, millicores, MB), over its queues
        (leaves first, in tenant order, then parents children-first; ``parent`` links them, ``v_prio`` is
        each one's priority, ``v_total[:3]`` the cluster's total): ``[resource, queue]`` ``quota``,
        ``overQuotaWeight`` and ``limit`` (-1: unlimited); creation order; each queue's children
        ``k_kids[k_kstart[q] : k_kstart[q + 1]]`` (index ``num queues``: the top level). A session's
        ``v_alloc``, ``v_req`` and ``v_des`` (fair share) cover every queue.
    k_np, k_ireq, k_w, k_left, k_lset, k_levels, k_best, k_bchild, k_req
        KAI's work space: non-preemptible allocated per resource and queue; leaves' requests in engine
        units; the division's weights, leftovers (set: 1, handed: 2) and priority levels; the queue
        order's best leaf and best child per queue (index ``num queues``: the top level) and each leaf's
        head job request.
    k_fut, k_freed, k_touch, k_tmark, k_ntouch, k_tstamp, k_feas, k_cand, k_tmp, k_jmark, k_cstart, k_ccur,
    k_pop, k_seq, k_nseq, k_rec, k_nrec, k_scn, k_rem, k_rset, k_rstamp, k_nstamp, k_nhead, k_ntail, k_ejob,
    k_enext, k_poison
        KAI's reclaim and preempt actions (:mod:`gpureplay.engine.queues.kai.evict`; per-job and per-node
        arrays only when one is on, ``v_act[0]`` its bits): per node the idle whole GPUs, milli-CPU and MiB
        left to the action, a scenario's freed resources, the nodes it touched and their stamps, whether the
        job could ever fit; the running preemptible jobs by leaf queue in reverse job order, a merge buffer,
        per-job stamps, each leaf's run and cursor and the resources of its victims taken so far; the job's
        victim order so far, its recorded victims, a scenario's victims; the validator's remaining allocation
        per queue and its stamps; per node the list (head, tail, stamp) of a probe's added victims with pods
        there, the lists' entries (victim, next); per leaf queue whether no reclaim strategy allows taking
        from it for the job at hand.
    k_minrt, k_minrt_on, k_rtnow
        KAI's minruntime plugin: ``[reclaimer's leaf, victim's leaf]`` reclaim min-runtimes (seconds) and, in
        the last row, per victim leaf its preempt min-runtime; ``[0]`` 1 when some queue sets one; ``[0]`` the
        session's time.
    """

    parent: Int64Array
    seg: Int64Array
    hf: Float64Array
    hi: Int64Array
    hsize: Int64Array
    v_act: Int64Array
    v_alloc: Float64Array
    v_des: Float64Array
    v_guar: Float64Array
    v_met: Int64Array
    v_nterm: Int64Array
    v_on: Int64Array
    v_prio: Int64Array
    v_real: Float64Array
    v_rel: Int64Array
    v_req: Float64Array
    v_share: Float64Array
    v_term: Int64Array
    v_total: Float64Array
    k_quota: Float64Array
    k_oqw: Float64Array
    k_limit: Float64Array
    k_created: Int64Array
    k_kstart: Int64Array
    k_kids: Int64Array
    k_np: Float64Array
    k_ireq: Int64Array
    k_w: Float64Array
    k_left: Float64Array
    k_lset: Int64Array
    k_levels: Int64Array
    k_best: Int64Array
    k_bchild: Int64Array
    k_req: Float64Array
    k_fut: Int64Array
    k_freed: Int64Array
    k_touch: Int64Array
    k_tmark: Int64Array
    k_ntouch: Int64Array
    k_tstamp: Int64Array
    k_feas: Int64Array
    k_cand: Int64Array
    k_tmp: Int64Array
    k_jmark: Int64Array
    k_cstart: Int64Array
    k_ccur: Int64Array
    k_pop: Float64Array
    k_seq: Int64Array
    k_nseq: Int64Array
    k_rec: Int64Array
    k_nrec: Int64Array
    k_scn: Int64Array
    k_rem: Float64Array
    k_rset: Int64Array
    k_rstamp: Int64Array
    k_nstamp: Int64Array
    k_nhead: Int64Array
    k_ntail: Int64Array
    k_ejob: Int64Array
    k_enext: Int64Array
    k_poison: Int64Array
    k_minrt: Float64Array
    k_minrt_on: Int64Array
    k_rtnow: Float64Array


#: The queue system's bundle in :class:`State` (``None`` without a queue model).
QueueState = KueueState | VolcanoState | KaiState


def _class_heaps(class_tenant: Int64Array, num_queues: int) -> dict[str, np.ndarray]:
    """Per queue a heap of its pending classes' heads (:mod:`gpureplay.engine.queues.kueue.tree`), empty."""
    return {
        "seg": np.concatenate(([0], np.cumsum(np.bincount(class_tenant, minlength=num_queues)))).astype(
            np.int64
        ),
        "hf": np.zeros((3, max(len(class_tenant), 1))),
        "hi": np.zeros((3, max(len(class_tenant), 1)), dtype=np.int64),
        "hsize": np.zeros(max(num_queues, 1), dtype=np.int64),
    }


def _kai_arrays(
    num_queues: int, num_leaves: int, num_jobs: int = 0, num_nodes: int = 0, num_pods: int = 0
) -> dict[str, np.ndarray]:
    # num_nodes > 0: a KAI eviction action is on (its per-job, per-pod and per-node work space is
    # allocated).
    n = max(num_queues, 1)
    room = max(num_jobs, 1) if num_nodes > 0 else 1
    pods = max(num_pods, 1) if num_nodes > 0 else 1
    nodes = max(num_nodes, 1)
    return {
        "k_nstamp": np.zeros(nodes, dtype=np.int64),
        "k_nhead": np.zeros(nodes, dtype=np.int64),
        "k_ntail": np.zeros(nodes, dtype=np.int64),
        "k_ejob": np.zeros(pods, dtype=np.int64),
        "k_enext": np.zeros(pods, dtype=np.int64),
        "k_poison": np.zeros(n, dtype=np.int64),
        "k_fut": np.zeros((3, nodes), dtype=np.int64),
        "k_freed": np.zeros((3, nodes), dtype=np.int64),
        "k_touch": np.zeros(nodes, dtype=np.int64),
        "k_tmark": np.zeros(nodes, dtype=np.int64),
        "k_ntouch": np.zeros(1, dtype=np.int64),
        "k_tstamp": np.zeros(1, dtype=np.int64),
        "k_feas": np.zeros(nodes, dtype=np.int64),
        "k_cand": np.zeros(room, dtype=np.int64),
        "k_tmp": np.zeros(room, dtype=np.int64),
        "k_jmark": np.zeros(room, dtype=np.int64),
        "k_cstart": np.zeros(max(num_leaves, 1) + 1, dtype=np.int64),
        "k_ccur": np.zeros(max(num_leaves, 1), dtype=np.int64),
        "k_pop": np.zeros((3, max(num_leaves, 1))),
        "k_seq": np.zeros(room, dtype=np.int64),
        "k_nseq": np.zeros(1, dtype=np.int64),
        "k_rec": np.zeros(room, dtype=np.int64),
        "k_nrec": np.zeros(1, dtype=np.int64),
        "k_scn": np.zeros(room, dtype=np.int64),
        "k_rem": np.zeros((3, n)),
        "k_rset": np.zeros(n, dtype=np.int64),
        "k_rstamp": np.zeros(1, dtype=np.int64),
        "k_quota": np.full((3, n), -1.0),
        "k_oqw": np.zeros((3, n)),
        "k_limit": np.full((3, n), -1.0),
        "k_created": np.arange(n, dtype=np.int64),
        "k_kstart": np.zeros(n + 2, dtype=np.int64),
        "k_kids": np.zeros(n, dtype=np.int64),
        "k_np": np.zeros((3, n)),
        "k_ireq": np.zeros((3, max(num_leaves, 1)), dtype=np.int64),
        "k_w": np.zeros(n),
        "k_left": np.zeros(n),
        "k_lset": np.zeros(n, dtype=np.int64),
        "k_levels": np.zeros(n, dtype=np.int64),
        "k_best": np.full(n + 1, -1, dtype=np.int64),
        "k_bchild": np.full(n + 1, -1, dtype=np.int64),
        "k_req": np.zeros((3, n)),
        "k_minrt": np.zeros((max(num_leaves, 1) + 1, max(num_leaves, 1))),
        "k_minrt_on": np.zeros(1, dtype=np.int64),
        "k_rtnow": np.zeros(1),
    }


def kai_state(
    parent: Int64Array,
    num_leaves: int,
    priority: Int64Array,
    quota: Float64Array,
    over_quota_weight: Float64Array,
    limit: Float64Array,
    created: Int64Array,
    total: Float64Array,
    class_tenant: Int64Array,
    actions: int = 0,
    num_jobs: int = 0,
    num_nodes: int = 0,
    num_pods: int = 0,
    min_runtimes: tuple[Float64Array, Float64Array] | None = None,
) -> KaiState:
    """The :class:`KaiState` bundle of a KAI queue tree (``queues: kai``), arrays as
    :class:`gpureplay.queues.kai_queues.KaiQueues` (leaves first, then parents children-first).

    ``actions``: the eviction actions after allocate (bits ``KA_RECLAIM``, ``KA_PREEMPT`` of
    :mod:`gpureplay.engine.queues.kai.evict`), which need ``num_jobs`` (the trace's jobs), ``num_nodes`` and
    ``num_pods`` (the trace's pods). ``min_runtimes``: per leaf the preempt min-runtime and per (reclaimer,
    victim) leaf the reclaim min-runtime, in seconds (None: no protection).
    """
    if actions != 0 and num_nodes <= 0:
        raise ValueError("KAI's reclaim and preempt actions need the cluster's node count")
    num = parent.shape[0]
    evicting = num_nodes if actions != 0 else 0
    arrays: dict[str, np.ndarray] = {
        **_class_heaps(class_tenant, num_leaves),
        **_volcano_arrays(num, 0, num_jobs, evicting),
        **_kai_arrays(num, num_leaves, num_jobs, evicting, num_pods),
    }
    arrays["v_act"][0] = actions
    arrays["v_prio"][:num] = priority
    arrays["v_total"][:3] = total
    arrays["k_quota"][:, :num] = quota
    arrays["k_oqw"][:, :num] = over_quota_weight
    arrays["k_limit"][:, :num] = limit
    arrays["k_created"][:num] = created
    if min_runtimes is not None and num_leaves > 0:
        preempt, reclaim = min_runtimes
        arrays["k_minrt"][:num_leaves, :num_leaves] = reclaim
        arrays["k_minrt"][num_leaves, :num_leaves] = preempt
        arrays["k_minrt_on"][0] = 1
    # Children lists, the top level (parent -1) at index num; children in queue order.
    owner = np.where(parent < 0, num, parent)
    counts = np.bincount(owner, minlength=num + 1)
    arrays["k_kstart"][1:] = np.cumsum(counts)
    arrays["k_kids"][:num] = np.argsort(owner, kind="stable")
    arrays["parent"] = parent.astype(np.int64)
    return KaiState(**{name: arrays[name] for name in KaiState._fields})


def _volcano_arrays(
    num_queues: int, num_classes: int, num_jobs: int, num_nodes: int = 0, max_pods: int = 0
) -> dict[str, np.ndarray]:
    # num_nodes > 0: Volcano's preempt or reclaim action is on (its per-job and per-node scratch is
    # allocated); max_pods: the most pods of a job.
    q = max(num_queues, 1)
    return {
        "v_real": np.full((3, q), np.inf),
        "v_guar": np.zeros((3, q)),
        "v_prio": np.zeros(q, dtype=np.int64),
        "v_total": np.zeros(4),
        "v_des": np.zeros((3, q)),
        "v_req": np.zeros((3, q)),
        "v_alloc": np.zeros((3, q)),
        "v_share": np.zeros(q),
        "v_on": np.zeros(q, dtype=np.int64),
        "v_met": np.zeros(q, dtype=np.int64),
        "v_inq": np.zeros(max(num_jobs, 1), dtype=np.int64),
        "v_cinq": np.zeros(max(num_classes, 1), dtype=np.int64),
        "v_qinq": np.zeros((3, q), dtype=np.int64),
        "v_seen": np.zeros(max(num_classes, 1), dtype=np.int64),
        # Volcano's preempt and reclaim actions (gpureplay.engine.queues.volcano.preempt, volcano_reclaim):
        # per-job arrays only when one is on.
        "v_act": np.zeros(2, dtype=np.int64),
        "v_recl": np.ones(q, dtype=np.int64),
        "v_rel": np.zeros((3, q), dtype=np.int64),
        "v_nterm": np.zeros(1, dtype=np.int64),
        "v_nvict": np.zeros(1, dtype=np.int64),
        "v_npart": np.zeros(1, dtype=np.int64),
        "v_qin": np.zeros(q, dtype=np.int64),
        "v_pipe": np.zeros((3, max(num_nodes, 1))),
        "v_node": np.zeros(3),
        "v_walk": np.zeros(1, dtype=np.int64),
        "v_copy": np.zeros((3, q)),
        "v_copied": np.zeros(q, dtype=np.int64),
        "v_mut": np.zeros(1, dtype=np.int64),
        "v_over": np.zeros(q, dtype=np.int64),
        "v_cfail": np.zeros(max(num_classes, 1), dtype=np.int64),
        "v_cprio": np.zeros(max(num_classes, 1), dtype=np.int64),
        "v_qbound": np.zeros(q),
        "v_qminp": np.zeros(q),
        "v_snode": np.zeros(max(max_pods, 1), dtype=np.int64),
        **{
            name: np.zeros(max(num_jobs, 1) if num_nodes > 0 else 1, dtype=np.int64)
            for name in (
                "v_term",
                "v_mark",
                "v_vict",
                "v_pp",
                "v_pst",
                "v_part",
                "v_stamp",
                "v_slot",
                "v_unit",
                "v_ucnt",
                "v_uall",
            )
        },
    }


def volcano_state(
    weight: Int64Array,
    real_capability: Float64Array,
    guarantee: Float64Array,
    priority: Int64Array,
    total: Float64Array,
    overcommit: float,
    class_tenant: Int64Array,
    num_jobs: int,
    reclaimable: Int64Array | None = None,
    num_nodes: int = 0,
    actions: int = 0,
    preemptable: int = 0,
    max_pods: int = 0,
) -> VolcanoState:
    """The :class:`VolcanoState` bundle of Volcano's queues (``queues: volcano``), in Volcano's units.

    ``real_capability``, ``guarantee``: ``[resource, queue]``; ``total``: ``[resource]`` the cluster's;
    ``reclaimable``: ``[queue]`` 1 where ``spec.reclaimable`` lets the reclaim action take from the queue;
    ``actions``: the actions after allocate (bits ``ACT_PREEMPT``, ``ACT_RECLAIM`` of
    :mod:`gpureplay.engine.queues.volcano.preempt`), which need ``num_nodes`` (the cluster's node count) and
    ``max_pods`` (the most pods of a job); ``preemptable``: the plugins whose ``enablePreemptable`` is on
    (bits ``PF_*``).
    """
    num_q = weight.shape[0]
    if actions != 0 and num_nodes <= 0:
        raise ValueError("Volcano's preempt and reclaim actions need the cluster's node count")
    arrays = _volcano_arrays(num_q, len(class_tenant), num_jobs, num_nodes if actions else 0, max_pods)
    arrays["v_act"][0] = actions
    arrays["v_act"][1] = preemptable
    if reclaimable is not None:
        arrays["v_recl"][:num_q] = reclaimable
    arrays["v_real"][:, :num_q] = real_capability
    arrays["v_guar"][:, :num_q] = guarantee
    arrays["v_prio"][:num_q] = priority
    arrays["v_total"][:3] = total
    arrays["v_total"][3] = overcommit
    arrays.update(_class_heaps(class_tenant, num_q))
    arrays["weight"] = weight.astype(np.float64)
    return VolcanoState(**{name: arrays[name] for name in VolcanoState._fields})


def tree_heights(parent: Int64Array) -> Int64Array:
    """Per node of a tree given by ``parent`` (-1: a root), its height: the longest path down from it.

    Notes
    -----
    kubernetes-sigs/kueue ``hierarchical_preemption.go`` ``getNodeHeight`` (v0.12.0 to v0.19.2): a cohort
    with children is 1 high, or one more than its highest child cohort when that is more; a ClusterQueue
    is 0. Plain statement: :meth:`gpureplay.queues.kueue_quota.KueueQuotas.heights`.
    """
    height = np.zeros(parent.shape[0], dtype=np.int64)
    for n in range(parent.shape[0]):
        p, steps = int(parent[n]), 1
        while p >= 0:
            height[p] = max(height[p], steps)
            p, steps = int(parent[p]), steps + 1
    return height


def quota_state(
    parent: Int64Array,
    nominal: Int64Array,
    borrow: Int64Array,
    lend: Int64Array,
    subtree: Int64Array,
    covered: Int64Array,
    strict: Int64Array,
    class_tenant: Int64Array,
    fair: bool = False,
    present: Int64Array | None = None,
    lendable: Int64Array | None = None,
    weight: Float64Array | None = None,
    preemption: Int64Array | None = None,
    num_jobs: int = 0,
    fair_strategies: int = 0,
    quota_only: bool = False,
    flavors: tuple[Int64Array, Int64Array, UInt64Array, Int64Array] | None = None,
) -> KueueState:
    """The :class:`KueueState` of a quota tree (arrays as ``gpureplay.queues.kueue_quota.KueueQuotas``).

    ``preemption``: ``[KP_* row, cluster queue]`` (None: Never everywhere); ``num_jobs``: the trace's jobs
    (preemption candidates); ``fair_strategies``: ``FairSharingStrategies`` value; ``quota_only``: Kueue
    admits by quota alone (the admitted jobs' list is sized for every job); ``flavors``: the flavor arrays
    ``flv_slots``, ``flv_group``, ``flv_mask``, ``flv_policy`` (None: one flavor that selects every node,
    each ClusterQueue's covered resources in one group).
    """
    num_nodes = parent.shape[0]
    num_cq = strict.shape[0]
    rows = nominal.shape[0]
    if flavors is None:
        group = np.where(covered[:3, :num_cq] != 0, 0, -1).astype(np.int64)
        flavors = (
            np.zeros((max(num_cq, 1), 3, 1), dtype=np.int64),
            group if num_cq else np.full((3, 1), -1, dtype=np.int64),
            np.full(1, L.ALL_MODELS, dtype=np.uint64),
            np.zeros(max(num_cq, 1), dtype=np.int64),
        )
    flv_slots, flv_group, flv_mask, flv_policy = flavors
    if preemption is None:
        preemption = np.zeros((L.KP_ROWS, num_cq), dtype=np.int64)
    preempting = bool((preemption[L.KP_WITHIN] != 0).any() or (preemption[L.KP_RECLAIM] != 0).any())
    room = max(num_jobs, 1)
    return KueueState(
        parent=parent.astype(np.int64),
        nominal=nominal.astype(np.int64),
        borrow=borrow.astype(np.int64),
        lend=lend.astype(np.int64),
        subtree=subtree.astype(np.int64),
        height=tree_heights(parent),
        covered=covered.astype(np.int64),
        strict=strict.astype(np.int64),
        used=np.zeros((rows, num_nodes), dtype=np.int64),
        path=np.zeros(num_nodes + 1, dtype=np.int64),
        **_class_heaps(class_tenant, num_cq),
        blocked=np.full(max(num_cq, 1), -1, dtype=np.int64),
        entries=np.zeros(max(num_cq, 1), dtype=np.int64),
        entry_cls=np.zeros(max(num_cq, 1), dtype=np.int64),
        borrowing=np.zeros(max(num_cq, 1), dtype=np.int64),
        fair=np.array([1 if fair else 0, fair_strategies], dtype=np.int64),
        present=(np.zeros((rows, num_nodes)) if present is None else present).astype(np.int64),
        lendable=(np.zeros((3, num_nodes)) if lendable is None else lendable).astype(np.int64),
        weight=(np.ones(num_nodes) if weight is None else weight).astype(np.float64),
        share=np.zeros((max(num_cq, 1), num_nodes)),
        share2=np.zeros((max(num_cq, 1), num_nodes)),
        winner=np.full(num_nodes, -1, dtype=np.int64),
        entry_of=np.full(max(num_cq, 1), -1, dtype=np.int64),
        path_used=np.zeros((rows, num_nodes), dtype=np.int64),
        pre=preemption.astype(np.int64),
        pre_on=np.array([1 if preempting else 0], dtype=np.int64),
        adm_head=np.full(max(num_cq, 1), -1, dtype=np.int64),
        adm_next=np.full(room, -1, dtype=np.int64),
        adm_listed=np.zeros(room, dtype=np.int64),
        need=np.zeros(rows, dtype=np.int64),
        ask=np.zeros(rows, dtype=np.int64),
        cand=np.zeros(room, dtype=np.int64),
        cand_wb=np.zeros(room, dtype=np.int64),
        order=np.zeros(room, dtype=np.int64),
        targets=np.zeros(room, dtype=np.int64),
        fs_drop=np.zeros(max(num_nodes, 1), dtype=np.int64),
        fs_next=np.zeros(max(num_cq, 1), dtype=np.int64),
        flv_slots=flv_slots.astype(np.int64),
        flv_group=flv_group.astype(np.int64),
        flv_mask=flv_mask.astype(np.uint64),
        flv_policy=flv_policy.astype(np.int64),
        flv_on=np.array([1 if bool((flv_mask != np.uint64(L.ALL_MODELS)).any()) else 0], dtype=np.int64),
        w_jobs=np.zeros(room if quota_only else 1, dtype=np.int64),
        w_n=np.zeros(2, dtype=np.int64),
        w_mark=np.full(max(len(class_tenant), 1) if quota_only else 1, -1, dtype=np.int64),
    )


class PreemptScratch(NamedTuple):
    """Preemption's work space (None unless preemption is on).

    Attributes
    ----------
    job_mark
        Per job: the preemption search that chose it as a victim.
    victims, best
        Victims on the node being evaluated, and of the best node so far.
    chosen
        Victims chosen so far for one preemptor (a gang needs several nodes).
    now
        The time of the search under way (``reclaim_idle`` victims depend on it).
    """

    job_mark: Int64Array
    victims: Int64Array
    best: Int64Array
    chosen: Int64Array
    now: Float64Array


class DebugScratch(NamedTuple):
    """Room for the debug checks' recomputations (one column per array unless ``debug``).

    Kernels allocate nothing (they run without numba's reference counting),
    so the recomputed per-GPU use of one node, per-model aggregates and
    per-class, per-job and per-queue counts live here.
    """

    check_gpu: Int64Array
    check_hist: Int64Array
    check_milli: Int64Array
    check_class: Int64Array
    check_job: Int64Array
    check_queue: Int64Array


class Run(NamedTuple):
    """Loop scalars and result buffers.

    Attributes
    ----------
    counters, clock, cursor
        ``K_*``, ``X_*`` and ``L_*`` scalars.
    err
        ``[E_* code, entity]`` of a failed debug check.
    tl_flt, tl_rows
        Timeline samples (``TLF_*`` and ``TL_*`` rows, then each queue's ``QU_*`` rows); replaced
        by larger ones between :func:`advance` calls when they fill up (``ADV_GROW``).
    queues
        ``QU_*`` rows per queue (tenant): what its jobs request and how many pend and run.
    att_i, att_f
        Attempt records (``A_*`` / ``AF_*`` rows), grown the same way.
    """

    counters: Int64Array
    clock: Float64Array
    cursor: Int64Array
    err: Int64Array
    tl_flt: Float64Array
    tl_rows: Int64Array
    queues: Int64Array
    att_i: Int64Array
    att_f: Float64Array


def empty_cluster(node_int: Int64Array, num_models: int, hist_width: int, max_nominees: int = 0) -> Cluster:
    """The cluster with nothing allocated.

    Notes
    -----
    Every GPU starts at 1000 milli and its node's per-GPU memory; unknown CPU
    or memory was mapped to ``BIG`` at the boundary and never constrains.
    ``max_nominees`` is the room for nominated pods (the trace's pods when
    preemption is on, else 0).
    """
    num_nodes = node_int.shape[1]
    gpus = node_int[L.N_GPUS]
    num_gpus = int(gpus.sum())
    node_free = np.zeros((L.NODE_FREE_FIELDS, num_nodes), dtype=np.int64)
    node_free[L.F_CPU] = node_int[L.N_CPU]
    node_free[L.F_MEM] = node_int[L.N_MEM]
    node_free[L.F_WHOLE] = gpus
    node_free[L.F_MILLI] = gpus * L.WHOLE
    node_free[L.F_WHOLE_LO] = node_int[L.N_GPU0]
    gpu_free = np.zeros((L.GPU_FREE_FIELDS, num_gpus), dtype=np.int64)
    gpu_free[L.G_MILLI] = L.WHOLE
    gpu_free[L.G_MEM] = np.repeat(node_int[L.N_GPU_MEM], gpus)
    gpu_free[L.G_SLOTS] = np.repeat(node_int[L.N_SLOTS], gpus)
    gpu_free[L.G_LAYOUT] = -1
    gpu_free[L.G_NEXT] = -1
    models = max(num_models, 1)
    model_hist = np.zeros((models, hist_width), dtype=np.int64)
    model_milli = np.zeros(models, dtype=np.int64)
    has_model = node_int[L.N_MODEL] >= 0
    np.add.at(model_hist, (node_int[L.N_MODEL][has_model], gpus[has_model]), 1)
    np.add.at(model_milli, node_int[L.N_MODEL][has_model], gpus[has_model] * L.WHOLE)
    totals = np.zeros(L.TOTAL_FIELDS, dtype=np.int64)
    totals[L.TOT_FREE_WHOLE] = num_gpus
    pod_kinds = np.zeros((hist_width, num_nodes), dtype=np.int64)
    nominees = np.zeros((L.NOM_FIELDS, max_nominees + 1), dtype=np.int64)
    gpu_ready = np.full(num_gpus, np.inf)
    return Cluster(
        node_int,
        node_free,
        gpu_free,
        model_hist,
        model_milli,
        totals,
        pod_kinds,
        nominees,
        gpu_ready,
        histogram_span(model_hist),
    )


def histogram_span(model_hist: Int64Array) -> Int64Array:
    """``Cluster.model_span`` of a histogram: per model, the lowest and highest occupied ``w``.

    Examples
    --------
    >>> histogram_span(np.array([[0, 2, 0, 1], [0, 0, 0, 0]])).tolist()
    [[1, 4], [3, -1]]
    """
    models, width = model_hist.shape
    span = np.empty((2, models), dtype=np.int64)
    occupied = model_hist > 0
    any_node = occupied.any(axis=1)
    span[0] = np.where(any_node, occupied.argmax(axis=1), width)
    span[1] = np.where(any_node, width - 1 - occupied[:, ::-1].argmax(axis=1), -1)
    return span


class State(NamedTuple):
    """Everything a replay mutates, grouped as :func:`gpureplay.engine.loop.advance` takes it."""

    ix: FitIndex
    js: JobState
    pend: Pending
    tm: Timers
    sc: Scratch
    run: Run
    pods: PodScratch | None
    easy: EasyScratch | None
    pre: PreemptScratch | None
    dbg: DebugScratch
    tas: Topology | None
    numa: Numa | None
    quota: QueueState | None


def initial_state(
    params: Params,
    jobs: Jobs,
    classes: Classes,
    cluster: Cluster,
    ix: FitIndex,
    num_tenants: int,
    timeline_capacity: int,
    numa: Numa | None = None,
    quota: QueueState | None = None,
) -> State:
    """Everything a replay mutates, at time 0: nothing submitted, empty queues and heaps.

    Parameters
    ----------
    params, jobs, classes, cluster
        The static inputs and the empty cluster (:func:`empty_cluster`).
    ix
        The fit trees (built by the caller when the node scorer is indexable).
    num_tenants
        Number of queues.
    timeline_capacity
        Initial room for timeline rows (grown on demand up to the bound).
    numa
        The NUMA layout (:func:`numa_layout`), given when ``topology_manager`` is on.
    quota
        The Kueue quota tree (:func:`quota_state`), given under ``queues: kueue``.

    Notes
    -----
    The optional work spaces are allocated only for the mechanisms the
    policy uses; the others are ``None``, which keeps their code out of the
    compiled replay (:func:`gpureplay.engine.jit.config.when_given`).
    """
    codes = params.codes
    num_jobs = jobs.ints.shape[1]
    num_classes = classes.ints.shape[1]
    num_nodes = cluster.node_int.shape[1]
    num_pods = int(jobs.ints[L.J_PODS].sum())
    num_slots = int((jobs.ints[L.J_PODS] * jobs.ints[L.J_K]).sum())
    dyn = np.zeros((L.JOB_DYN_FIELDS, num_jobs), dtype=np.int64)
    dyn[L.D_STATUS] = L.S_FUTURE
    dyn[L.D_NOMINATOR] = -1
    time = np.full((L.JOB_TIME_FIELDS, num_jobs), np.nan)
    time[L.T_PENDING] = 0.0
    time[L.T_LOST] = 0.0
    time[L.T_WORK_DONE] = 0.0
    time[L.T_SHARE_DELAY] = 0.0
    time[L.T_LEFT] = jobs.flts[L.JF_WORK]
    time[L.T_KEY1] = jobs.flts[L.JF_KEY1]
    time[L.T_KEY2] = jobs.flts[L.JF_KEY2]
    js = JobState(
        dyn=dyn,
        time=time,
        pod_node=np.full(num_pods, -1, dtype=np.int64),
        pod_time=np.full(num_pods, np.nan),
        slot_gpu=np.full(num_slots, -1, dtype=np.int64),
        pod_next=np.full(num_pods, -1, dtype=np.int64),
        pod_prev=np.full(num_pods, -1, dtype=np.int64),
        node_pods=np.full(num_nodes, -1, dtype=np.int64),
    )
    cls = np.zeros((L.CLASS_DYN_FIELDS, num_classes), dtype=np.int64)
    cls[L.CD_APOS] = -1
    cls[L.CD_FAIL] = -1
    cls[L.CD_RESV] = -1
    cls[L.CD_PFAIL] = -1
    w0, w1, w2 = bitset_words(num_jobs)
    heap_len = max(num_classes, 1)
    pend = Pending(
        cls=cls,
        active=np.zeros(heap_len, dtype=np.int64),
        l0=np.zeros(w0, dtype=np.uint64),
        l1=np.zeros(w1, dtype=np.uint64),
        l2=np.zeros(w2, dtype=np.uint64),
        over=np.full(max(num_jobs, 1), -1, dtype=np.int64),
        heap_f=np.zeros((3, heap_len)),
        heap_i=np.zeros((3, heap_len), dtype=np.int64),
        tenant_rank=np.zeros(max(num_tenants, 1)),
    )
    # Each job has at most one live completion and one live timer; stale entries are compacted away.
    event_len = max(num_jobs, 1) + 1
    timers = Timers(
        run_f=np.zeros(event_len),
        run_i=np.zeros((4, event_len), dtype=np.int64),
        tm_f=np.zeros(event_len),
        tm_i=np.zeros((4, event_len), dtype=np.int64),
    )
    scratch = Scratch(
        node_mark=np.full(max(num_nodes, 1), -1, dtype=np.int64),
        touched_nodes=np.zeros(max(num_nodes, 1) + 1, dtype=np.int64),
        touch_mark=np.zeros(max(num_nodes, 1), dtype=np.int64),
        prio_jobs=np.zeros(int(jobs.ints[L.J_PRIO_RANK].max(initial=0)) + 1, dtype=np.int64),
        prio_milli=np.zeros(int(jobs.ints[L.J_PRIO_RANK].max(initial=0)) + 1, dtype=np.int64),
        domain_mark=np.full(
            (3, int(cluster.node_int[L.N_NVLINK : L.N_SPINE + 1].max(initial=0)) + 1), -1, dtype=np.int64
        ),
        unplaced=np.zeros(max(num_classes, 1), dtype=np.int64),
        mig_count=np.zeros((3, classes.mig_wanted.shape[1]), dtype=np.int64),
    )
    pods = None
    if codes[L.P_GANG] == L.POD_BY_POD:
        pods = PodScratch(
            group_f=np.zeros(event_len),
            group_i=np.zeros((4, event_len), dtype=np.int64),
            touched=np.zeros(heap_len, dtype=np.int64),
        )
    easy = None
    if codes[L.P_GANG] == L.GANG and codes[L.P_BACKFILL] == L.BF_EASY:
        proj = Cluster(
            cluster.node_int,
            np.zeros_like(cluster.node_free),
            np.zeros_like(cluster.gpu_free),
            np.zeros_like(cluster.model_hist),
            np.zeros_like(cluster.model_milli),
            np.zeros_like(cluster.totals),
            np.zeros_like(cluster.pod_kinds),
            cluster.nominees,
            cluster.gpu_ready,
            np.zeros_like(cluster.model_span),
        )
        easy = EasyScratch(
            proj=proj,
            hold=np.zeros(max(num_nodes, 1), dtype=np.int64),
            scan_f=np.zeros(event_len),
            scan_i=np.zeros((4, event_len), dtype=np.int64),
            kept_shadow=np.zeros(1),
        )
    pre = None
    if codes[L.P_PREEMPT] != L.PREEMPT_NONE:
        pre = PreemptScratch(
            job_mark=np.full(max(num_jobs, 1), -1, dtype=np.int64),
            victims=np.zeros(max(num_jobs, 1) + 1, dtype=np.int64),
            best=np.zeros(max(num_jobs, 1) + 1, dtype=np.int64),
            chosen=np.zeros(max(num_jobs, 1) + 1, dtype=np.int64),
            now=np.zeros(1),
        )
    # Always a work space (one column per array when checks are off): debug is a runtime switch,
    # so that debug and plain replays share one compiled engine.
    checking = codes[L.P_DEBUG] != 0
    dbg = DebugScratch(
        check_gpu=np.zeros((4, cluster.model_hist.shape[1] + 1 if checking else 1), dtype=np.int64),
        check_hist=np.zeros_like(cluster.model_hist) if checking else np.zeros((1, 1), dtype=np.int64),
        check_milli=np.zeros_like(cluster.model_milli) if checking else np.zeros(1, dtype=np.int64),
        check_class=np.zeros(heap_len if checking else 1, dtype=np.int64),
        check_job=np.zeros(max(num_jobs, 1) if checking else 1, dtype=np.int64),
        check_queue=np.zeros((L.QUEUE_FIELDS, max(num_tenants, 1) if checking else 1), dtype=np.int64),
    )
    counters = np.zeros(L.N_COUNTERS, dtype=np.int64)
    counters[L.K_RESV_HEAD] = -1
    clock = np.zeros(L.CLOCK_FIELDS)
    clock[L.X_SAMPLE_INTERVAL] = params.flt[L.PF_SAMPLE]
    clock[L.X_MIG_READY] = np.inf
    clock[L.X_WAKE] = np.inf
    cursor = np.zeros(L.CURSOR_FIELDS, dtype=np.int64)
    cursor[L.L_STATUS] = L.ADV_PAUSED
    attempts = 2 * num_jobs + 16
    queues = max(num_tenants, 1)
    # Kueue with several flavors: each ClusterQueue's usage per flavor and resource follows QUEUE_FIELDS.
    flavors = quota.flv_mask.shape[0] if isinstance(quota, KueueState) else 1
    flavor_rows = 3 * flavors if flavors > 1 else 0
    width = L.QUEUE_FIELDS + flavor_rows
    run = Run(
        counters=counters,
        clock=clock,
        cursor=cursor,
        err=np.zeros(2, dtype=np.int64),
        tl_flt=np.zeros((L.TIMELINE_FLOAT_FIELDS, timeline_capacity)),
        tl_rows=np.zeros((L.TIMELINE_FIELDS + width * queues, timeline_capacity), dtype=np.int64),
        queues=np.zeros((width, queues), dtype=np.int64),
        att_i=np.zeros((L.ATTEMPT_INT_FIELDS, attempts), dtype=np.int64),
        att_f=np.zeros((L.ATTEMPT_FLOAT_FIELDS, attempts)),
    )
    tas = topology_tree(cluster.node_int) if codes[L.P_TAS] != L.TAS_NONE else None
    return State(ix, js, pend, timers, scratch, run, pods, easy, pre, dbg, tas, numa, quota)
