"""Kueue's classical preemption on the engine's arrays: the twin of :mod:`gpureplay.queues.kueue_preemption`.

When a ClusterQueue's head does not fit its quota and the queue's ``spec.preemption`` allows it, the cycle
(:func:`gpureplay.engine.queues.kueue.cycle.kueue_cycle`) asks :func:`kueue_preempt` for the workloads to
evict: kubernetes-sigs/kueue ``pkg/scheduler/preemption`` (``preemption.go`` ``classicalPreemptions``,
``fillBackWorkloads``; ``classical/candidate_generator.go``; ``common/ordering.go``). The rule, stated once in
plain Python, is in that module's docstring; this kernel follows it step for step:

1. the resources that need preemption (above ``available``, within ``potentialAvailable`` and the nominal
   quota, or held by a subtree below the root, or ``borrowWithinCohort`` / ``withinClusterQueue`` set);
   none: no preemption;
2. candidates: jobs holding quota (running or terminating, preemptible) that request such a resource, from
   the ClusterQueue itself (``withinClusterQueue``) and from the other ClusterQueues of its cohort tree that,
   with every cohort up to the lowest common ancestor, are above nominal on one of them
   (``reclaimWithinCohort``; ``classical/hierarchical_preemption.go``); each ClusterQueue keeps the jobs that
   took its quota in a list pruned as it is walked (``KueueState.adm_*``);
3. ordered: evicted first, then hierarchical-reclaim candidates, other ClusterQueues' others, the
   ClusterQueue's own; then lower priority, latest admitted, job id (a heap sort: kernels allocate nothing);
4. greedy runs with and without borrowing, removing candidates from the ClusterQueues' usage
   (``run.queues``) until the job fits, then minimised from the next-to-last target back; the usage is
   restored before returning. Under fair sharing, :func:`_fair_targets` instead (the twin of
   :mod:`gpureplay.queues.kueue_fair_preemption`): target ClusterQueues by highest share, each candidate
   checked against the configured strategies.
"""

from __future__ import annotations

import math

from gpureplay.engine.jit.config import inline_kernel, kernel, when_given
from gpureplay.engine.jobs import evict_job
from gpureplay.engine.placement.kueue_tas import kueue_assign
from gpureplay.engine.preemption.priority import move_pods
from gpureplay.engine.queues.kueue.pods_ready import leave_admitted
from gpureplay.engine.queues.kueue.tree import (
    RESOURCE_ROWS,
    available,
    fits_quota,
    flavor_mask,
    flavor_of,
    local_quota,
    node_usage,
    queue_use,
    request_amount,
    row_amount,
)
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    Jobs,
    JobState,
    KueueState,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
    Topology,
)
from gpureplay.engine.state.layout import (
    D_STATUS,
    FLAVOR_NONE,
    J_CAN_PREEMPT,
    J_CLASS,
    J_ID,
    J_PREEMPTIBLE,
    J_PRIO,
    J_TENANT,
    K_PREEMPT_TRIES,
    KP_BORROW,
    KP_RECLAIM,
    KP_THRESHOLD,
    KP_WITHIN,
    P_SHARING,
    P_TAS_PROFILE,
    QUEUE_FIELDS,
    QUOTA_UNSET,
    S_ADMITTED,
    S_RUNNING,
    S_TERMINATING,
    SHARING_NONE,
    T_ADMITTED,
    T_EVICTED,
    T_KEY2,
)

#: A candidate's state in fair sharing's search (``KueueState.cand_wb``): in the first strategy's pool,
#: taken as a target, set aside for the second strategy, or passed over by it.
FS_POOL = 0
FS_TAKEN = 1
FS_RETRY = 2
FS_USED = 3

#: A classical candidate's ``KueueState.cand_wb``: reclaimable while the preemptor borrows (or in its own
#: ClusterQueue), only without borrowing, or with the preemptor's hierarchical advantage
#: (``HierarchicalReclaim``).
WB_WHILE_BORROWING = 0
WB_WITHOUT_BORROWING = 1
WB_HIERARCHICAL = 2

#: ``FairSharingStrategies`` values (``KueueState.fair[1]``).
FS_BOTH = 0
FS_INITIAL_SHARE = 2


@inline_kernel
def move_usage(jobs: Jobs, js: JobState, run: Run, v: int, sign: int) -> None:
    """Add (``sign`` 1) or remove (-1) job ``v``'s request to / from its ClusterQueue's usage (and, with
    several flavors, its flavors' rows)."""
    c = jobs.ints[J_TENANT, v]
    flavored = run.queues.shape[0] > QUEUE_FIELDS
    for r in range(3):
        f = flavor_of(js, v, r)
        if f == FLAVOR_NONE:
            continue  # a preemption simulation's request leaves the resource out
        amount = sign * request_amount(jobs, v, r)
        run.queues[RESOURCE_ROWS[r], c] += amount
        if flavored:
            run.queues[QUEUE_FIELDS + 3 * f + r, c] += amount


@kernel
def _move_targets(
    qt: KueueState, jobs: Jobs, cs: Classes, cl: Cluster, js: JobState, nt: int, skip: int, take: bool
) -> None:
    """Release (or take back, on their exact GPUs) the pods of ``qt.targets[:nt]`` but ``skip`` (-1: none) on
    the live cluster: the simulated removal of :func:`_tas_fits`, undone before it returns."""
    for i in range(nt):
        if i == skip:
            continue
        move_pods(jobs, cs, cl, js, qt.targets[i], -1, take)


@kernel
def _tas_fits(
    tas: Topology,
    qt: KueueState,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    j: int,
    nt: int,
    skip: int,
) -> bool:
    """Whether job ``j`` gets a topology assignment once ``qt.targets[:nt]`` (but ``skip``) are gone.

    Notes
    -----
    kubernetes-sigs/kueue ``pkg/scheduler/preemption/preemption.go`` ``workloadFits`` (since v0.11.0,
    "Support TAS preemptions within ClusterQueue", #4171): a TAS workload fits when its quota fits **and**
    ``FindTopologyAssignmentsForWorkload`` finds an assignment on the snapshot from which the targets'
    usage was removed (``SimulateWorkloadUsageRemoval``: their TAS usage too, so their nodes' capacity
    counts as free). The targets' pods are released on the cluster, the assignment searched on the nodes
    of ``j``'s assigned flavors (as its admission would), and the pods taken back on their own GPUs, so
    the state is left exactly as it was.
    """
    _move_targets(qt, jobs, cs, cl, js, nt, skip, False)
    c = jobs.ints[J_CLASS, j]
    allowed = cs.mask[c]
    if qt.flv_on[0] != 0:
        cs.mask[c] = allowed & flavor_mask(qt, jobs, js, j)
    found = kueue_assign(tas, cl, cs, c, params.codes[P_TAS_PROFILE], params.codes[P_SHARING] == SHARING_NONE)
    cs.mask[c] = allowed
    _move_targets(qt, jobs, cs, cl, js, nt, skip, True)
    return found > 0


#: The topology part of Kueue's ``workloadFits`` (always True without ``topology_aware: kueue``).
tas_fits = when_given(_tas_fits, True)


@kernel
def _gives(tas: Topology) -> bool:
    return True


#: Whether topology-aware placement is on (``tas`` given).
has_topology = when_given(_gives, False)


@kernel
def _fits(
    qt: KueueState,
    tas: Topology | None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    run: Run,
    j: int,
    borrowing: bool,
    nt: int,
    skip: int,
) -> bool:
    """Kueue's ``workloadFits`` with ``qt.targets[:nt]`` (but ``skip``) removed from the usage: the quota
    (:func:`fits_quota`), then, under ``topology_aware: kueue``, the topology assignment
    (:func:`tas_fits`)."""
    if not fits_quota(qt, jobs, js, run, j, borrowing):
        return False
    return bool(tas_fits(tas, qt, params, jobs, cs, cl, js, j, nt, skip))


@kernel
def list_admitted(qt: KueueState, jobs: Jobs, j: int) -> None:
    """Job ``j`` took its ClusterQueue's quota: a preemption candidate from now on (listed once)."""
    if qt.adm_listed[j] == 0:
        q = jobs.ints[J_TENANT, j]
        qt.adm_listed[j] = 1
        qt.adm_next[j] = qt.adm_head[q]
        qt.adm_head[q] = j


@kernel
def _prune(qt: KueueState, js: JobState, q: int) -> None:
    # Drop the jobs that no longer hold quota (finished, or requeued after their eviction).
    prev = -1
    v = qt.adm_head[q]
    while v >= 0:
        nxt = qt.adm_next[v]
        status = js.dyn[D_STATUS, v]
        # (Admitted by quota alone, a job holds quota before its pods are placed.)
        if status in (S_RUNNING, S_TERMINATING, S_ADMITTED):
            prev = v
        else:
            qt.adm_listed[v] = 0
            if prev < 0:
                qt.adm_head[q] = nxt
            else:
                qt.adm_next[prev] = nxt
        v = nxt


@kernel
def potential(qt: KueueState, r: int, q: int) -> int:
    """``resource_node.go`` ``potentialAvailable``: the most of quota row ``r`` ClusterQueue ``q`` could take
    with no usage anywhere."""
    # The root's subtree quota, then down the path localQuota + the parent's, capped at
    # subtreeQuota + borrowingLimit.
    depth = 0
    n = q
    while n >= 0:
        qt.path[depth] = n
        depth += 1
        n = qt.parent[n]
    value = int(qt.subtree[r, qt.path[depth - 1]])
    for i in range(depth - 2, -1, -1):
        n = qt.path[i]
        lend = qt.lend[r, n]
        local = 0 if lend == QUOTA_UNSET else max(0, int(qt.subtree[r, n] - lend))
        value = local + value
        limit = qt.borrow[r, n]
        if limit != QUOTA_UNSET:
            value = min(value, int(qt.subtree[r, n] + limit))
    return value


@inline_kernel
def _local_left(qt: KueueState, r: int, n: int) -> int:
    # resource_node.go LocalAvailable (qt.used[r] filled): what is left of node n's local quota.
    return max(0, local_quota(qt, r, n) - int(qt.used[r, n]))


@kernel
def _reclaims_in_hierarchy(qt: KueueState, r: int, q: int, amount: int) -> bool:
    """``FindHeightOfLowestSubtreeThatFits``' second value (``qt.used[r]`` filled): whether the lowest node on
    ``q``'s path whose quota holds ``amount`` (less what each node below keeps locally) has a parent."""
    if not (qt.used[r, q] + amount > qt.subtree[r, q] and qt.parent[q] >= 0):
        return bool(qt.parent[q] >= 0)
    remaining = amount - _local_left(qt, r, q)
    n = qt.parent[q]
    while n >= 0:
        if qt.used[r, n] + remaining <= qt.subtree[r, n]:
            return bool(qt.parent[n] >= 0)
        remaining -= _local_left(qt, r, n)
        n = qt.parent[n]
    return False


@kernel
def may_preempt_row(qt: KueueState, r: int, q: int, need: int) -> bool:
    """Whether ``need`` more of quota row ``r``, above what ClusterQueue ``q`` has available and within its
    ``potentialAvailable``, may be had by preemption (``qt.used[r]`` filled).

    Notes
    -----
    kubernetes-sigs/kueue ``flavorassigner.go`` ``fitsResourceQuota``: within the nominal quota, or held
    by a subtree below the root (``FindHeightOfLowestSubtreeThatFits``), or ``withinClusterQueue`` set
    (``canPreemptWithinClusterQueue``), or ``borrowWithinCohort`` set, or under fair sharing
    ``reclaimWithinCohort`` (``canPreemptWhileBorrowing``).
    """
    while_borrowing = qt.pre[KP_BORROW, q] != 0 or (qt.fair[0] != 0 and qt.pre[KP_RECLAIM, q] != 0)
    return bool(
        need <= qt.nominal[r, q]
        or _reclaims_in_hierarchy(qt, r, q, need)
        or while_borrowing
        or qt.pre[KP_WITHIN, q] != 0
    )


@kernel
def _needs_preemption(qt: KueueState, jobs: Jobs, js: JobState, run: Run, j: int, topology: bool) -> bool:
    # Fill qt.need: flavorassigner.go fitsResourceQuota's Preempt mode per quota row (the flavors assigned
    # to j); False on NoFit. Under TAS (topology) a workload that is not NoFit needs preemption on every
    # row it requests: flavorassigner.go turns a quota Fit whose topology assignment fails, and any
    # Preempt, into Preempt for all of the PodSet's flavors (updateMode / updateModeForTASRequests, v0.11+).
    q = jobs.ints[J_TENANT, j]
    found = False
    for r in range(qt.nominal.shape[0]):
        qt.need[r] = 0
    for r in range(qt.nominal.shape[0]):
        need = row_amount(jobs, js, j, r)
        if need == 0 or qt.covered[r, q] == 0:
            continue
        if topology:
            qt.need[r] = 1
            found = True
        node_usage(qt, run, r)
        if need <= available(qt, r, q):
            continue
        if need > potential(qt, r, q) or not may_preempt_row(qt, r, q, need):
            return False
        qt.need[r] = 1
        found = True
    return found


@inline_kernel
def _uses_needed(qt: KueueState, jobs: Jobs, js: JobState, v: int) -> bool:
    for r in range(qt.nominal.shape[0]):  # noqa: SIM110 (no generators in kernels)
        if qt.need[r] != 0 and row_amount(jobs, js, v, r) > 0:
            return True
    return False


@inline_kernel
def _above_nominal(qt: KueueState, run: Run, c: int) -> bool:
    # On some quota row that needs preemption, ClusterQueue c uses more than its nominal quota.
    for r in range(qt.nominal.shape[0]):
        if qt.need[r] != 0 and queue_use(run, r, c) > qt.nominal[r, c]:
            return True
    return False


@kernel
def _lowest_common_ancestor(qt: KueueState, a: int, b: int) -> int:
    """The lowest cohort above both nodes (-1: they share no root)."""
    x = qt.parent[b]
    while x >= 0:
        y = qt.parent[a]
        while y >= 0:
            if y == x:
                return int(x)
            y = qt.parent[y]
        x = qt.parent[x]
    return -1


@kernel
def _still_above(qt: KueueState, run: Run, c: int, lca: int) -> bool:
    """``candidateIsValid``: ClusterQueue ``c`` and every cohort between it and ``lca`` use more than their
    quota on some resource that needs preemption."""
    if not _above_nominal(qt, run, c):
        return False
    n = qt.parent[c]
    if n == lca:
        return True
    for r in range(qt.nominal.shape[0]):
        if qt.need[r] != 0:
            node_usage(qt, run, r)
    while n != lca:
        above = False
        for r in range(qt.nominal.shape[0]):
            if qt.need[r] != 0 and qt.used[r, n] > qt.subtree[r, n]:
                above = True
        if not above:
            return False
        n = qt.parent[n]
    return True


@kernel
def _advantage_at(qt: KueueState, jobs: Jobs, js: JobState, j: int, lca: int) -> bool:
    """``collectCandidatesForHierarchicalReclaim`` (``qt.used`` filled): whether job ``j``'s request fits the
    quota (``QuantitiesFitInQuota``) of its ClusterQueue or of a cohort below ``lca`` on the path, the
    request less what each node below keeps locally (per quota row, in ``qt.ask``; -1: not requested)."""
    q = jobs.ints[J_TENANT, j]
    rows = qt.nominal.shape[0]
    for r in range(rows):
        amount = row_amount(jobs, js, j, r) if qt.covered[r, q] != 0 else 0
        # A requested row is checked even once nothing of it remains (Kueue keeps it in the map).
        qt.ask[r] = amount if amount > 0 else -1
    n = q
    while n != lca:
        fits = True
        for r in range(rows):
            if qt.ask[r] >= 0 and qt.used[r, n] + qt.ask[r] > qt.subtree[r, n]:
                fits = False
        if fits:
            return True
        for r in range(rows):
            if qt.ask[r] >= 0:
                qt.ask[r] = max(0, qt.ask[r] - _local_left(qt, r, n))
        n = qt.parent[n]
    return False


@kernel
def _candidates(qt: KueueState, jobs: Jobs, js: JobState, run: Run, j: int, fair: bool) -> int:
    # Fill qt.cand / qt.cand_wb (WB_*); returns how many. fair: fair sharing's findCandidates (another
    # ClusterQueue of q's tree qualifies when it is above nominal on a row that needs preemption).
    q = jobs.ints[J_TENANT, j]
    prio = jobs.ints[J_PRIO, j]
    stamp = js.time[T_KEY2, j]
    within = qt.pre[KP_WITHIN, q]
    reclaim = qt.pre[KP_RECLAIM, q]
    borrow = qt.pre[KP_BORROW, q]
    threshold = qt.pre[KP_THRESHOLD, q]
    for r in range(qt.nominal.shape[0]):
        node_usage(qt, run, r)
    k = 0
    for c in range(run.queues.shape[1]):
        hierarchical = False
        if c == q:
            if within == 0:
                continue
        else:
            if reclaim == 0:
                continue
            lca = _lowest_common_ancestor(qt, q, c)
            if lca < 0:
                continue
            if fair:
                if not _above_nominal(qt, run, c):
                    continue
            elif not _still_above(qt, run, c, lca):
                continue
            else:
                hierarchical = _advantage_at(qt, jobs, js, j, lca)
        _prune(qt, js, c)
        v = qt.adm_head[c]
        while v >= 0:
            if jobs.ints[J_PREEMPTIBLE, v] != 0 and _uses_needed(qt, jobs, js, v):
                pv = jobs.ints[J_PRIO, v]
                if c == q:
                    newer = within == 2 and pv == prio and stamp < js.time[T_KEY2, v]
                    if pv < prio or newer:
                        qt.cand[k] = v
                        qt.cand_wb[k] = WB_WHILE_BORROWING
                        k += 1
                elif reclaim == 2 or pv < prio:
                    qt.cand[k] = v
                    if hierarchical:
                        qt.cand_wb[k] = WB_HIERARCHICAL
                    elif borrow == 0 or pv >= prio or pv > threshold:
                        qt.cand_wb[k] = WB_WITHOUT_BORROWING
                    else:
                        qt.cand_wb[k] = WB_WHILE_BORROWING
                    k += 1
            v = qt.adm_next[v]
    return k


@inline_kernel
def _group(qt: KueueState, jobs: Jobs, q: int, i: int) -> int:
    # NewCandidateIterator's lists: hierarchical reclaim 0, other ClusterQueues' others 1, q's own 2.
    if jobs.ints[J_TENANT, qt.cand[i]] == q:
        return 2
    return 0 if qt.cand_wb[i] == WB_HIERARCHICAL else 1


@inline_kernel
def _before(qt: KueueState, jobs: Jobs, js: JobState, q: int, a: int, b: int) -> bool:
    # candidate_generator.go's order on candidates a, b (indices into qt.cand): evicted first, then the group
    # (_group), then common/ordering.go CandidatesOrdering: lower priority, most recently admitted, job id.
    va = qt.cand[a]
    vb = qt.cand[b]
    ea = js.dyn[D_STATUS, va] == S_TERMINATING
    eb = js.dyn[D_STATUS, vb] == S_TERMINATING
    if ea != eb:
        return bool(ea)
    ga = _group(qt, jobs, q, a)
    gb = _group(qt, jobs, q, b)
    if ga != gb:
        return ga < gb
    if jobs.ints[J_PRIO, va] != jobs.ints[J_PRIO, vb]:
        return bool(jobs.ints[J_PRIO, va] < jobs.ints[J_PRIO, vb])
    if js.time[T_ADMITTED, va] != js.time[T_ADMITTED, vb]:
        return bool(js.time[T_ADMITTED, va] > js.time[T_ADMITTED, vb])
    return bool(jobs.ints[J_ID, va] < jobs.ints[J_ID, vb])


@kernel
def _sift(qt: KueueState, jobs: Jobs, js: JobState, q: int, root: int, size: int, first_on_top: bool) -> None:
    # A heap on the candidate order over qt.order[0 .. size-1]: the first in order at the top
    # (first_on_top), else the last.
    while True:
        child = 2 * root + 1
        if child >= size:
            return
        if (
            child + 1 < size
            and _before(qt, jobs, js, q, qt.order[child + 1], qt.order[child]) == first_on_top
        ):
            child += 1
        if _before(qt, jobs, js, q, qt.order[child], qt.order[root]) != first_on_top:
            return
        qt.order[root], qt.order[child] = qt.order[child], qt.order[root]
        root = child


@kernel
def _sort_candidates(qt: KueueState, jobs: Jobs, js: JobState, q: int, k: int) -> None:
    """Put the ``k`` candidates' indices in ``qt.order`` in Kueue's candidate order (heap sort)."""
    for i in range(k):
        qt.order[i] = i
    for root in range(k // 2 - 1, -1, -1):
        _sift(qt, jobs, js, q, root, k, False)
    for end in range(k - 1, 0, -1):
        qt.order[0], qt.order[end] = qt.order[end], qt.order[0]
        _sift(qt, jobs, js, q, 0, end, False)


@kernel
def _heap_candidates(qt: KueueState, jobs: Jobs, js: JobState, q: int, k: int) -> None:
    """Make ``qt.order[0 .. k-1]`` a heap with the first candidate in Kueue's order on top (:func:`_nth`)."""
    for i in range(k):
        qt.order[i] = i
    for root in range(k // 2 - 1, -1, -1):
        _sift(qt, jobs, js, q, root, k, True)


@kernel
def _nth(qt: KueueState, jobs: Jobs, js: JobState, q: int, k: int, i: int, taken: int) -> int:
    """Candidate ``i`` (0-based) in Kueue's order, from the heap of :func:`_heap_candidates` of which
    ``taken`` came out so far (held at ``qt.order[k-1]``, ``qt.order[k-2]``, ...): a greedy run mostly
    stops after a few, so the order is drawn as needed, not sorted whole. Call with ``i <= taken``."""
    if i == taken:
        end = k - 1 - taken
        qt.order[0], qt.order[end] = qt.order[end], qt.order[0]
        _sift(qt, jobs, js, q, 0, end, True)
    return int(qt.order[k - 1 - i])


@kernel
def _targets(
    qt: KueueState,
    tas: Topology | None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    run: Run,
    j: int,
    k: int,
    borrowing: bool,
    taken: int,
) -> int:
    """One greedy run over the heap of candidates (``taken`` drawn from it before); the targets (minimised)
    in ``qt.targets``, their count (0 when the job never fits) and the candidates drawn by then, packed as
    ``count * (k + 1) + drawn``. The usage is restored."""
    q = jobs.ints[J_TENANT, j]
    nt = 0
    fit = False
    for i in range(k):
        idx = _nth(qt, jobs, js, q, k, i, taken)
        taken = max(taken, i + 1)
        v = qt.cand[idx]
        c = jobs.ints[J_TENANT, v]
        if c != q:
            if borrowing and qt.cand_wb[idx] == WB_WITHOUT_BORROWING:
                continue
            if not _still_above(qt, run, c, _lowest_common_ancestor(qt, q, c)):
                continue  # its ClusterQueue, or a cohort below the common ancestor, is back within quota
        move_usage(jobs, js, run, v, -1)
        qt.targets[nt] = v
        nt += 1
        if _fits(qt, tas, params, jobs, cs, cl, js, run, j, borrowing, nt, -1):
            fit = True
            break
    if fit:
        nt = _fill_back(qt, tas, params, jobs, cs, cl, js, run, j, nt, borrowing)
    for i in range(nt):
        move_usage(jobs, js, run, qt.targets[i], 1)
    return (nt if fit else 0) * (k + 1) + taken


@kernel
def _fill_back(
    qt: KueueState,
    tas: Topology | None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    run: Run,
    j: int,
    nt: int,
    borrowing: bool,
) -> int:
    """``fillBackWorkloads``: from the next-to-last target back, one whose return still lets ``j`` fit goes.

    The targets' usage is removed on entry and on return (the kept ones'); returns how many are kept.
    """
    for i in range(nt - 2, -1, -1):
        v = qt.targets[i]
        move_usage(jobs, js, run, v, 1)
        if _fits(qt, tas, params, jobs, cs, cl, js, run, j, borrowing, nt, i):
            qt.targets[i] = qt.targets[nt - 1]
            nt -= 1
        else:
            move_usage(jobs, js, run, v, -1)
    return nt


@kernel
def _share_of(qt: KueueState, run: Run, x: int) -> tuple[float, float]:
    """ClusterQueue ``x``'s dominant resource share at ``run.queues`` (weighted, unweighted).

    ``fair_sharing.go`` ``dominantResourceShare``: a ClusterQueue borrows what it uses beyond its nominal
    quota (its subtree quota), a resource's borrowing summed over its flavors; ``DRS.IsZero`` (ratio 0,
    e.g. not borrowing) gives ``(0, 0)``; a zero-weight borrower ``(inf, ratio)``. A cohort's:
    :func:`_cohort_share`.
    """
    if qt.parent[x] < 0:
        return 0.0, 0.0
    ratio = 0.0
    for r in range(3):
        # B_r sums the borrowing over the flavors of resource r (quota rows r, r + 3, ...).
        borrowed_r = 0
        for row in range(r, qt.nominal.shape[0], 3):
            if qt.present[row, x] == 0:
                continue
            borrowed = queue_use(run, row, x) - qt.subtree[row, x]
            if borrowed > 0:
                borrowed_r += borrowed
        if borrowed_r > 0 and qt.lendable[r, x] > 0:
            ratio = max(ratio, borrowed_r * 1000.0 / float(qt.lendable[r, x]))
    return _weighted(qt, x, ratio)


@kernel
def _cohort_share(qt: KueueState, x: int) -> tuple[float, float]:
    """Cohort ``x``'s dominant resource share as :func:`_share_of` states it, its usage what its children
    use beyond their local quotas (``qt.used``: call :func:`_fresh_usage` after the usage last moved)."""
    if qt.parent[x] < 0:
        return 0.0, 0.0
    ratio = 0.0
    for r in range(3):
        borrowed_r = 0
        for row in range(r, qt.nominal.shape[0], 3):
            if qt.present[row, x] == 0:
                continue
            borrowed = int(qt.used[row, x]) - qt.subtree[row, x]
            if borrowed > 0:
                borrowed_r += borrowed
        if borrowed_r > 0 and qt.lendable[r, x] > 0:
            ratio = max(ratio, borrowed_r * 1000.0 / float(qt.lendable[r, x]))
    return _weighted(qt, x, ratio)


@inline_kernel
def _weighted(qt: KueueState, x: int, ratio: float) -> tuple[float, float]:
    # DRS.IsZero at ratio 0; a zero-weight borrower's weighted share is +inf.
    if ratio == 0.0:
        return 0.0, 0.0
    if qt.weight[x] == 0.0:
        return math.inf, ratio
    return ratio / qt.weight[x], ratio


@kernel
def _fresh_usage(qt: KueueState, run: Run) -> None:
    # qt.used for every quota row: the cohorts' usage that _share_of reads.
    for row in range(qt.nominal.shape[0]):
        node_usage(qt, run, row)


@inline_kernel
def _node_share(qt: KueueState, run: Run, x: int) -> tuple[float, float]:
    # Node x's share at the current usage: a ClusterQueue's, or a cohort's with qt.used refreshed.
    if x < run.queues.shape[1]:
        return _share_of(qt, run, x)
    _fresh_usage(qt, run)
    return _cohort_share(qt, x)


@inline_kernel
def _almost_lca(qt: KueueState, x: int, lca: int) -> int:
    # getAlmostLCA: the node on x's path up to lca whose parent is lca.
    while qt.parent[x] != lca:
        x = qt.parent[x]
    return x


@inline_kernel
def _is_above(qt: KueueState, n: int, q: int) -> bool:
    # Whether cohort n is an ancestor of node q.
    x = qt.parent[q]
    while x >= 0:
        if x == n:
            return True
        x = qt.parent[x]
    return False


@inline_kernel
def _compare(aw: float, au: float, bw: float, bu: float) -> int:
    # CompareDRS: zero-weight borrowers (weighted inf) above all others, among themselves by ratio.
    a_inf = math.isinf(aw)
    b_inf = math.isinf(bw)
    x = aw
    y = bw
    if a_inf and b_inf:
        x = au
        y = bu
    elif a_inf:
        return 1
    elif b_inf:
        return -1
    if x > y:
        return 1
    if x < y:
        return -1
    return 0


@kernel
def _next_of(qt: KueueState, jobs: Jobs, k: int, c: int, state: int) -> int:
    """Position in ``qt.order`` of ClusterQueue ``c``'s next candidate in ``state`` (-1: none left)."""
    p: int = qt.fs_next[c]
    while p < k:
        i = qt.order[p]
        if qt.cand_wb[i] == state and jobs.ints[J_TENANT, qt.cand[i]] == c:
            qt.fs_next[c] = p
            return p
        p += 1
    qt.fs_next[c] = k
    return -1


@kernel
def _next_queue(qt: KueueState, jobs: Jobs, run: Run, q: int, k: int, state: int) -> int:
    """``TargetClusterQueueOrdering`` (``nextTarget``) from the root of ``q``'s cohort tree: the ClusterQueue
    whose candidates (in ``state``) come next, or -1 once the root is dropped (``qt.fs_drop``, per node).

    At a cohort: a ClusterQueue with no candidate left or not borrowing (the preemptor's own only when it has
    none left) is dropped, of the others the highest share wins, ties to the one whose next candidate comes
    first in ``CandidatesOrdering``; a child cohort not borrowing and not above ``q`` is dropped, of the
    others the highest share wins, ties to the later. A cohort with neither is dropped and the walk starts
    again from the root; the cohort winner is entered when its share is at least the ClusterQueue winner's.
    """
    if qt.parent[q] < 0:
        if qt.fs_drop[q] != 0 or _next_of(qt, jobs, k, q, state) < 0:
            qt.fs_drop[q] = 1
            return -1
        return q
    num_cq = run.queues.shape[1]
    root = q
    while qt.parent[root] >= 0:
        root = qt.parent[root]
    while qt.fs_drop[root] == 0:
        node = root
        fresh = False
        while True:
            best = -1
            best_w = -1.0
            best_u = -1.0
            best_pos = -1
            sub = -1
            sub_w = -1.0
            sub_u = -1.0
            for x in range(qt.parent.shape[0]):
                if qt.parent[x] != node or qt.fs_drop[x] != 0:
                    continue
                if x < num_cq:
                    w, u = _share_of(qt, run, x)
                    pos = _next_of(qt, jobs, k, x, state)
                    if (u == 0.0 and x != q) or pos < 0:
                        qt.fs_drop[x] = 1
                        continue
                    order = 1 if best < 0 else _compare(w, u, best_w, best_u)
                    if order > 0 or (order == 0 and pos < best_pos):
                        best, best_w, best_u, best_pos = x, w, u, pos
                    continue
                if not fresh:
                    _fresh_usage(qt, run)  # nothing moves during one walk
                    fresh = True
                w, u = _cohort_share(qt, x)
                if u == 0.0 and not _is_above(qt, x, q):
                    qt.fs_drop[x] = 1
                elif sub < 0 or _compare(w, u, sub_w, sub_u) >= 0:
                    sub, sub_w, sub_u = x, w, u
            if best < 0 and sub < 0:
                qt.fs_drop[node] = 1
                break
            if sub >= 0 and (best < 0 or _compare(sub_w, sub_u, best_w, best_u) >= 0):
                node = sub
                continue
            return best
    return -1


@kernel
def _take(
    qt: KueueState,
    tas: Topology | None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    run: Run,
    j: int,
    i: int,
    nt: int,
) -> bool:
    """Candidate ``i`` becomes target ``nt``; whether ``j`` fits now (its own usage set aside to check)."""
    v = qt.cand[i]
    qt.cand_wb[i] = FS_TAKEN
    move_usage(jobs, js, run, v, -1)
    qt.targets[nt] = v
    move_usage(jobs, js, run, j, -1)
    fits = _fits(qt, tas, params, jobs, cs, cl, js, run, j, True, nt + 1, -1)
    move_usage(jobs, js, run, j, 1)
    return fits


@inline_kernel
def _reset_search(qt: KueueState) -> None:
    for n in range(qt.fs_drop.shape[0]):
        qt.fs_drop[n] = 0
    for c in range(qt.fs_next.shape[0]):
        qt.fs_next[c] = 0


@kernel
def _fair_targets(
    qt: KueueState,
    tas: Topology | None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    run: Run,
    j: int,
    k: int,
) -> int:
    """Fair sharing's targets for job ``j`` among the ``k`` sorted candidates (0: it never fits).

    Notes
    -----
    kubernetes-sigs/kueue ``preemption.go`` ``fairPreemptions``, ``fair_strategy.go``
    (``iterateWithFirstFsStrategy``, ``iterateWithSecondFsStrategy``), ``fairsharing/ordering.go``,
    ``fairsharing/strategy.go`` as released in v0.17.0 to v0.19.2 (feature-gate defaults); the plain
    statement is :mod:`gpureplay.queues.kueue_fair_preemption`. The usage is restored before returning.
    """
    q = jobs.ints[J_TENANT, j]
    for i in range(k):
        qt.cand_wb[i] = FS_POOL
    move_usage(jobs, js, run, j, 1)
    # FairSharingPreemptWithinNominal: with its workload, q borrows none of what needs preemption.
    within = True
    for r in range(qt.nominal.shape[0]):
        if qt.need[r] != 0 and queue_use(run, r, q) > qt.nominal[r, q]:
            within = False
    initial_only = qt.fair[1] == FS_INITIAL_SHARE
    nt = 0
    fits = False
    _reset_search(qt)
    while not fits:
        c = _next_queue(qt, jobs, run, q, k, FS_POOL)
        if c < 0:
            break
        if c == q or within:
            fits = _take(qt, tas, params, jobs, cs, cl, js, run, j, qt.order[qt.fs_next[c]], nt)
            nt += 1
            continue
        lca = _lowest_common_ancestor(qt, q, c)
        mine = _almost_lca(qt, q, lca)
        theirs = _almost_lca(qt, c, lca)
        pw, pu = _node_share(qt, run, mine)
        tw, tu = _node_share(qt, run, theirs)
        p = _next_of(qt, jobs, k, c, FS_POOL)
        if math.isinf(pw) and not math.isinf(tw):
            while p >= 0:  # fsStrategyUnsatisfiable: none of its candidates can pass
                qt.cand_wb[qt.order[p]] = FS_RETRY
                p = _next_of(qt, jobs, k, c, FS_POOL)
            continue
        while p >= 0:
            i = qt.order[p]
            if initial_only:
                passed = _compare(pw, pu, tw, tu) < 0
            else:
                v = qt.cand[i]
                move_usage(jobs, js, run, v, -1)
                nw, nu = _node_share(qt, run, theirs)
                move_usage(jobs, js, run, v, 1)
                passed = _compare(pw, pu, nw, nu) <= 0
            if passed:
                fits = _take(qt, tas, params, jobs, cs, cl, js, run, j, i, nt)
                nt += 1
                break
            qt.cand_wb[i] = FS_RETRY
            p = _next_of(qt, jobs, k, c, FS_POOL)
    if not fits and qt.fair[1] == FS_BOTH:
        _reset_search(qt)
        while not fits:
            c = _next_queue(qt, jobs, run, q, k, FS_RETRY)
            if c < 0:
                break
            lca = _lowest_common_ancestor(qt, q, c)
            pw, pu = _node_share(qt, run, _almost_lca(qt, q, lca))
            tw, tu = _node_share(qt, run, _almost_lca(qt, c, lca))
            i = qt.order[qt.fs_next[c]]
            if _compare(pw, pu, tw, tu) < 0:
                fits = _take(qt, tas, params, jobs, cs, cl, js, run, j, i, nt)
                nt += 1
            else:
                qt.cand_wb[i] = FS_USED
            qt.fs_drop[c] = 1
    move_usage(jobs, js, run, j, -1)
    if fits:
        nt = _fill_back(qt, tas, params, jobs, cs, cl, js, run, j, nt, True)
    for i in range(nt):
        move_usage(jobs, js, run, qt.targets[i], 1)
    return nt if fits else 0


@kernel
def kueue_preempt(
    qt: KueueState,
    tas: Topology | None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    pend: Pending,
    tm: Timers,
    sc: Scratch,
    run: Run,
    j: int,
    t: float,
) -> bool:
    """Evict the classical preemption targets of pending job ``j`` at ``t``; whether it did.

    Notes
    -----
    kubernetes-sigs/kueue ``preemption.go`` ``classicalPreemptions`` (run order: borrowing first unless
    ``borrowWithinCohort`` is unset and the ClusterQueue is above nominal, or every other-queue candidate
    may be reclaimed only without borrowing) and ``scheduler.go`` (a preemption whose targets another
    workload evicted in this cycle, i.e. at ``t``, is skipped). Targets already terminating are not evicted
    again. A job whose PriorityClass ``preemptionPolicy`` is ``Never`` does not preempt.

    Under ``topology_aware: kueue`` (``tas`` given) the job preempts when its quota needs preemption or
    its quota fits and its topology assignment does not (``flavorassigner.go``: both are Preempt mode,
    for every resource of the PodSet), and a set of targets makes it fit only when the topology
    assignment is found with them removed too (:func:`tas_fits`). Kueue first rules out a workload that
    would not fit the empty cluster (``WithSimulateEmpty``): no set of candidates makes it fit either, so
    the search returning none is the same outcome.
    """
    if jobs.ints[J_CAN_PREEMPT, j] == 0 or not _needs_preemption(qt, jobs, js, run, j, has_topology(tas)):
        return False
    run.counters[K_PREEMPT_TRIES] += 1
    nt = search_targets(qt, tas, params, jobs, cs, cl, js, run, j)
    return _evict_targets(params, jobs, cs, cl, js, pend, tm, sc, run, qt, j, nt, t)


@kernel
def search_targets(
    qt: KueueState,
    tas: Topology | None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    run: Run,
    j: int,
) -> int:
    """Job ``j``'s preemption targets (``qt.need`` filled) in ``qt.targets``, how many (0: none make it fit):
    fair sharing's strategies under fair sharing, else the classical search. The usage is left as it was.
    ``tas``: the topology whose assignment must fit too (None: quota alone, as Kueue's flavor-fungibility
    oracle ``SimulatePreemption`` checks, with no TAS requests)."""
    if qt.fair[0] == 0:
        return classical_targets(qt, tas, params, jobs, cs, cl, js, run, j)
    k = _candidates(qt, jobs, js, run, j, True)
    if k == 0:
        return 0
    _sort_candidates(qt, jobs, js, jobs.ints[J_TENANT, j], k)
    return _fair_targets(qt, tas, params, jobs, cs, cl, js, run, j, k)


@kernel
def classical_targets(
    qt: KueueState,
    tas: Topology | None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    run: Run,
    j: int,
) -> int:
    """Job ``j``'s classical preemption targets (``qt.need`` filled: the quota rows that need preemption),
    in ``qt.targets``; how many (0: none make it fit). The usage is left as it was.

    Notes
    -----
    kubernetes-sigs/kueue ``preemption.go`` ``classicalPreemptions``: runs with borrowing first unless
    ``borrowWithinCohort`` is unset and the ClusterQueue is above nominal, or every other-queue candidate may
    be reclaimed only without borrowing.
    """
    k = _candidates(qt, jobs, js, run, j, False)
    if k == 0:
        return 0
    q = jobs.ints[J_TENANT, j]
    others = 0
    all_without = True
    for i in range(k):
        if jobs.ints[J_TENANT, qt.cand[i]] != q:
            others += 1
            if qt.cand_wb[i] != WB_WITHOUT_BORROWING:
                all_without = False
    under = True
    for r in range(qt.nominal.shape[0]):
        if qt.need[r] != 0 and queue_use(run, r, q) >= qt.nominal[r, q]:
            under = False
    forbidden = qt.pre[KP_BORROW, q] == 0
    first = True
    second = -1  # -1: a single run
    if others > 0 and not (forbidden and not under):
        if forbidden and all_without:
            first, second = False, 1
        else:
            second = 0
    _heap_candidates(qt, jobs, js, q, k)
    packed = _targets(qt, tas, params, jobs, cs, cl, js, run, j, k, first, 0)
    nt = packed // (k + 1)
    if nt == 0 and second >= 0:
        nt = _targets(qt, tas, params, jobs, cs, cl, js, run, j, k, second == 1, packed % (k + 1)) // (k + 1)
    return nt


@kernel
def _evict_targets(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    pend: Pending,
    tm: Timers,
    sc: Scratch,
    run: Run,
    qt: KueueState,
    j: int,
    nt: int,
    t: float,
) -> bool:
    """Evict ``qt.targets[:nt]`` for job ``j``; whether it did (not when ``nt`` is 0 or a target was chosen
    by another preemption of this cycle: Kueue skips overlapping targets)."""
    if nt == 0:
        return False
    for i in range(nt):
        v = qt.targets[i]
        if js.dyn[D_STATUS, v] == S_TERMINATING and js.time[T_EVICTED, v] == t:
            return False  # another preemption of this cycle chose it: Kueue skips overlapping targets
    for i in range(nt):
        v = qt.targets[i]
        if js.dyn[D_STATUS, v] == S_ADMITTED:
            leave_admitted(qt, v)  # its pods no longer wait for kube-scheduler
        if js.dyn[D_STATUS, v] != S_TERMINATING:
            evict_job(params, jobs, cs, cl, js, pend, tm, sc, run, v, t, j)
    return True


__all__ = [
    "classical_targets",
    "has_topology",
    "kueue_preempt",
    "list_admitted",
    "may_preempt_row",
    "move_usage",
    "potential",
    "search_targets",
]
