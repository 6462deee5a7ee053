"""KAI's scheduling session over its queues (``scheduler.queues: kai``).

One session per cycle, with KAI's ``allocate`` action and its ``proportion`` plugin (NVIDIA/KAI-Scheduler
``pkg/scheduler/actions/allocate/allocate.go``, ``plugins/proportion``; reference §4.3):

1. every queue's request (what it holds plus its pending jobs'), summed up the tree, and its fair share
   per resource (:func:`divide`, the kernel twin of :func:`gpureplay.queues.fair_share.kai_fair_share`):
   the cluster is divided among the top-level queues, each parent's fair share among its children; quota
   first, then over-quota by priority level and ``overQuotaWeight`` in whole units, then the leftovers;
2. ``allocate``: again and again the job at the head of the best leaf queue, found from the top of the tree
   down by the queue order (:func:`queue_before`, eight criteria) with each subtree's best head job; it is
   placed as a gang when its queue and every ancestor stay within ``limit``, and a non-preemptible job's
   within ``quota`` (the capacity policy); a job that fails is dropped for the session.

Arithmetic is in KAI's units (GPU devices, CPU millicores, memory MB), summed from the engine's integer
counts per queue, so that the kernels and the plain statement agree to the bit.
"""

from __future__ import annotations

import math

import numpy as np

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.jobs import start_job
from gpureplay.engine.pending import cursor_job, cursor_reset, cursor_step
from gpureplay.engine.placement.gang import try_gang
from gpureplay.engine.preemption.nomination import end_nomination
from gpureplay.engine.queues.kueue.tree import RESOURCE_ROWS, drop_top, push_class_head, request_amount
from gpureplay.engine.queues.volcano.session import _releasing
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    FitIndex,
    Jobs,
    JobState,
    KaiState,
    Numa,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
    Topology,
)
from gpureplay.engine.state.layout import (
    C_CPU,
    C_MEM,
    C_MILLI,
    C_PODS,
    C_TENANT,
    CD_FAIL,
    CD_PENDING,
    D_STATUS,
    J_PREEMPTIBLE,
    K_NACTIVE,
    K_VERSION,
    MB_PER_MIB,
    QU_DESERVED,
    QU_NP_CPU,
    QU_NP_MEM,
    QU_NP_MILLI,
    QU_SHARE,
    S_QUEUED,
    Float64Array,
)

#: KAI's value for "no bound" in ``quota`` and ``limit`` (``commonconstants.UnlimitedResourceQuantity``).
UNLIMITED = -1.0

#: ``kValue``, the weight of the usage term (``proportion.go`` default); usage is 0 (no usage database).
K_VALUE = 1.0

#: ``noFairShareDrfMultiplier`` (``queue_resource_share.go``): a resource used with no allocatable share.
NO_SHARE_MULTIPLIER = 1000.0

#: ``run.queues`` rows of each resource's non-preemptible usage.
NP_ROWS = (QU_NP_MILLI, QU_NP_CPU, QU_NP_MEM)


@inline_kernel
def to_kai(amount: int, r: int) -> float:
    """An engine amount of resource ``r`` in KAI's units (milli-GPU -> GPUs, MiB -> MB)."""
    if r == 0:
        return float(amount) / 1000.0
    if r == 2:
        return float(amount) * MB_PER_MIB
    return float(amount)


@inline_kernel
def _requestable(qt: KaiState, r: int, q: int) -> float:
    # resource_share.go GetRequestableShare: the request capped by the limit.
    if qt.k_limit[r, q] == UNLIMITED:
        return float(qt.v_req[r, q])
    return float(min(qt.k_limit[r, q], qt.v_req[r, q]))


@inline_kernel
def _remaining(qt: KaiState, r: int, q: int) -> float:
    return float(max(0.0, _requestable(qt, r, q) - qt.v_des[r, q]))


@inline_kernel
def _satisfied(qt: KaiState, r: int, q: int) -> bool:
    # resource_division.go isQueueSatisfied: the raw request, or the limit, reached.
    fair = qt.v_des[r, q]
    return bool(qt.v_req[r, q] <= fair or (qt.k_limit[r, q] != UNLIMITED and qt.k_limit[r, q] <= fair))


@kernel
def _over_quota_level(qt: KaiState, r: int, a: int, b: int, priority: int, amount: float) -> float:
    """``divideUpToFairShare`` for the children ``qt.k_kids[a:b]`` of priority ``priority``; returns what is
    left (rounds of weighted shares, whole units unless the request is met; a queue alone at its level is
    given no more than its request, as KAI v0.13.0 does)."""
    while True:
        another = False
        round_amount = amount
        total_weight = 0.0
        for i in range(a, b):
            q = qt.k_kids[i]
            if qt.v_prio[q] == priority and _remaining(qt, r, q) > 0:
                total_weight += qt.k_oqw[r, q]
        if total_weight == 0:
            break
        weight_sum = 0.0
        for i in range(a, b):
            q = qt.k_kids[i]
            if qt.v_prio[q] != priority or _satisfied(qt, r, q):
                continue
            normalized = qt.k_oqw[r, q] / total_weight
            qt.k_w[q] = max(0.0, normalized + K_VALUE * (normalized - 0.0))
            weight_sum += qt.k_w[q]
        if weight_sum == 0:
            break
        for i in range(a, b):
            q = qt.k_kids[i]
            if qt.v_prio[q] != priority:
                continue
            if amount == 0:
                break
            if _satisfied(qt, r, q) or qt.k_oqw[r, q] == 0:
                continue
            requested = _remaining(qt, r, q)
            share = round_amount * (qt.k_w[q] / weight_sum)
            if requested <= share:
                give = requested
                qt.k_lset[q] = 0
            else:
                # KAI hands out over-quota shares in whole units.
                give = float(np.floor(share)) if share >= 1 else 0.0
                if share - give > 0:
                    qt.k_left[q] = share - give
                    qt.k_lset[q] = 1
            if give == 0:
                continue
            qt.v_des[r, q] += give
            amount -= give
            another = another or requested < share
        if not another or amount == 0:
            break
    return amount


@kernel
def divide(qt: KaiState, r: int, p: int, total: float) -> None:
    """Fill ``qt.v_des[r, q]`` for the children ``q`` of ``p`` (``p`` = number of queues: the top level) from
    ``total``, KAI's fair share of resource ``r``.

    Notes
    -----
    NVIDIA/KAI-Scheduler ``plugins/proportion/resource_division/resource_division.go`` as released (v0.13.0;
    reference §4.3): ``fair = min(quota (-1: total), requestable)``; what remains is divided per priority
    level, highest first, by ``overQuotaWeight`` in rounds, each queue given its remaining request when that
    fits its share, else the share floored to whole units (the rest kept as its leftover); then, per level,
    the queues with leftovers, largest first (then older), get ``min(1, remaining)`` each. Plain twin:
    :func:`gpureplay.queues.fair_share.kai_fair_share`.
    """
    a = qt.k_kstart[p]
    b = qt.k_kstart[p + 1]
    remaining = total
    for i in range(a, b):
        q = qt.k_kids[i]
        deserved = total if qt.k_quota[r, q] == UNLIMITED else qt.k_quota[r, q]
        amount = min(deserved, _requestable(qt, r, q))
        qt.v_des[r, q] = amount
        qt.k_lset[q] = 0
        remaining -= amount
    if remaining <= 0:
        return
    # Priority levels, highest first.
    levels = 0
    for i in range(a, b):
        prio = qt.v_prio[qt.k_kids[i]]
        known = False
        for x in range(levels):
            if qt.k_levels[x] == prio:
                known = True
        if not known:
            at = levels
            while at > 0 and qt.k_levels[at - 1] < prio:
                qt.k_levels[at] = qt.k_levels[at - 1]
                at -= 1
            qt.k_levels[at] = prio
            levels += 1
    for x in range(levels):
        remaining = _over_quota_level(qt, r, a, b, qt.k_levels[x], remaining)
    for x in range(levels):
        if remaining <= 0:
            break
        prio = qt.k_levels[x]
        while remaining != 0:
            best = -1
            for i in range(a, b):
                q = qt.k_kids[i]
                if qt.v_prio[q] != prio or qt.k_lset[q] != 1:
                    continue
                if (
                    best < 0
                    or qt.k_left[q] > qt.k_left[best]
                    or (qt.k_left[q] == qt.k_left[best] and qt.k_created[q] < qt.k_created[best])
                ):
                    best = q
            if best < 0:
                break
            qt.k_lset[best] = 2  # handed its unit
            give = min(1.0, remaining)
            qt.v_des[r, best] += give
            remaining -= give


@kernel
def fair_shares(qt: KaiState) -> None:
    """Every queue's fair share of every resource: the top level from the cluster, then each parent's down."""
    num = qt.parent.shape[0]
    for r in range(3):
        divide(qt, r, num, qt.v_total[r])
        for n in range(num - 1, -1, -1):
            if qt.k_kstart[n + 1] > qt.k_kstart[n]:
                divide(qt, r, n, qt.v_des[r, n])


@inline_kernel
def _allocatable(qt: KaiState, r: int, q: int) -> float:
    # resource_share.go GetAllocatableShare: max(quota, fair share) capped by the limit; -1: unlimited.
    if qt.k_quota[r, q] == UNLIMITED:
        return float(qt.k_limit[r, q])
    allocatable = max(qt.k_quota[r, q], qt.v_des[r, q])
    if qt.k_limit[r, q] != UNLIMITED:
        allocatable = min(qt.k_limit[r, q], allocatable)
    return float(allocatable)


@inline_kernel
def _le(a: float, b: float) -> bool:
    # resource_share.go compareQuantities(a, b) <= 0, -1 being unlimited.
    if a == UNLIMITED:
        return b == UNLIMITED
    if b == UNLIMITED:
        return True
    return a <= b


@kernel
def dominant_share(qt: KaiState, q: int, add0: float, add1: float, add2: float) -> float:
    """``GetDominantResourceShare`` of queue ``q`` with ``add`` allocated on top: ``max_r allocated_r /
    allocatable_r`` (an unlimited allocatable is the cluster's total; a zero one multiplies by 1000)."""
    share = 0.0
    for r in range(3):
        allocatable = _allocatable(qt, r, q)
        if allocatable == UNLIMITED:
            allocatable = qt.v_total[r]
        allocated = qt.v_alloc[r, q] + (add0 if r == 0 else (add1 if r == 1 else add2))
        value = allocated * NO_SHARE_MULTIPLIER if allocatable == 0 else allocated / allocatable
        share = max(share, value)
    return share


@kernel
def queue_before(qt: KaiState, a: int, ja: Float64Array, b: int, jb: Float64Array) -> bool:
    """Whether queue ``a`` (its best head job requesting ``ja``) goes before queue ``b`` (``jb``).

    Notes
    -----
    ``plugins/proportion/queue_order/queue_order.go`` ``GetQueueOrderResult`` (reference §4.3), in order:
    not over its fair share (allocated above it in every resource) first; within its quota (deserved) with
    the job first; higher priority; not using a resource it has no allocatable share of (with the job);
    lower dominant resource share with the job; the same without it; smaller allocatable share (less in
    one resource, no more in any); older.
    """
    over_a = True
    over_b = True
    for r in range(3):
        if not qt.v_des[r, a] < qt.v_alloc[r, a]:
            over_a = False
        if not qt.v_des[r, b] < qt.v_alloc[r, b]:
            over_b = False
    if over_a != over_b:
        return over_b
    starved_a = True
    starved_b = True
    for r in range(3):
        if not _le(qt.v_alloc[r, a] + ja[r], qt.k_quota[r, a]):
            starved_a = False
        if not _le(qt.v_alloc[r, b] + jb[r], qt.k_quota[r, b]):
            starved_b = False
    if starved_a != starved_b:
        return starved_a
    if qt.v_prio[a] != qt.v_prio[b]:
        return bool(qt.v_prio[a] > qt.v_prio[b])
    zero_a = False
    zero_b = False
    for r in range(3):
        if _allocatable(qt, r, a) == 0 and qt.v_alloc[r, a] + ja[r] > 0:
            zero_a = True
        if _allocatable(qt, r, b) == 0 and qt.v_alloc[r, b] + jb[r] > 0:
            zero_b = True
    if zero_a != zero_b:
        return zero_b
    with_a = dominant_share(qt, a, ja[0], ja[1], ja[2])
    with_b = dominant_share(qt, b, jb[0], jb[1], jb[2])
    if with_a != with_b:
        return with_a < with_b
    share_a = dominant_share(qt, a, 0.0, 0.0, 0.0)
    share_b = dominant_share(qt, b, 0.0, 0.0, 0.0)
    if share_a != share_b:
        return share_a < share_b
    a_le_b = True
    b_le_a = True
    for r in range(3):
        if not _le(_allocatable(qt, r, a), _allocatable(qt, r, b)):
            a_le_b = False
        if not _le(_allocatable(qt, r, b), _allocatable(qt, r, a)):
            b_le_a = False
    # LessInAtLeastOneResource(x, y) is "not y <= x".
    if a_le_b and not b_le_a:
        return True
    if b_le_a and not a_le_b:
        return False
    return bool(qt.k_created[a] < qt.k_created[b])


@inline_kernel
def _class_request(cs: Classes, c: int, out: Float64Array) -> None:
    # One job's whole request in KAI's units (a gang class's jobs all have C_PODS pods of its shape).
    pods = cs.ints[C_PODS, c]
    out[0] = to_kai(pods * cs.ints[C_MILLI, c], 0)
    out[1] = to_kai(pods * cs.ints[C_CPU, c], 1)
    out[2] = to_kai(pods * cs.ints[C_MEM, c], 2)


@kernel
def _pick(qt: KaiState, cs: Classes) -> int:
    """The leaf queue whose head job ``allocate`` pops next (-1: none): from the top level down, at each
    level the child that goes first by the queue order, each compared with its subtree's best head job."""
    num = qt.parent.shape[0]
    num_leaves = qt.hsize.shape[0]
    for n in range(num + 1):
        qt.k_best[n] = -1
        qt.k_bchild[n] = -1
    for n in range(num):
        if n < num_leaves and qt.hsize[n] > 0:
            qt.k_best[n] = n
            _class_request(cs, qt.hi[1, qt.seg[n]], qt.k_req[:, n])
        if qt.k_best[n] < 0:
            continue
        p = qt.parent[n]
        up = num if p < 0 else p
        other = int(qt.k_bchild[up])
        if other < 0 or queue_before(qt, n, qt.k_req[:, qt.k_best[n]], other, qt.k_req[:, qt.k_best[other]]):
            qt.k_bchild[up] = n
            if p >= 0:
                qt.k_best[p] = qt.k_best[n]
    top = qt.k_bchild[num]
    return -1 if top < 0 else int(qt.k_best[top])


@kernel
def within_capacity(qt: KaiState, jobs: Jobs, j: int, q: int) -> bool:
    """Whether job ``j`` may be allocated in leaf queue ``q`` by the capacity policy.

    Notes
    -----
    ``plugins/proportion/capacity_policy`` (``IsJobOverQueueCapacity``, KAI v0.13.0; reference §4.3): the
    queue and every ancestor stay within ``limit`` in each resource the job requests (``resultsOverLimit``,
    ``max_allowed_check.go``); a non-preemptible job keeps each one's non-preemptible allocation within its
    ``quota`` (``resultsWithNonPreemptibleOverQuota``, ``quota_check.go``). A parent's quota alone never
    refuses a preemptible job: the check that did (``checkParentQueueQuotas``) is only in the unmerged pull
    request #112.
    """
    preemptible = jobs.ints[J_PREEMPTIBLE, j] != 0
    n = q
    while n >= 0:
        for r in range(3):
            need = to_kai(request_amount(jobs, j, r), r)
            if need == 0:
                continue
            quota = qt.k_quota[r, n]
            limit = qt.k_limit[r, n]
            if limit != UNLIMITED and limit < qt.v_alloc[r, n] + need:
                return False
            if not preemptible and quota != UNLIMITED and quota < qt.k_np[r, n] + need:
                return False
        n = qt.parent[n]
    return True


@kernel
def _session_open(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: KaiState, run: Run) -> None:
    # Each queue's allocated, non-preemptible allocated and request, leaves from the engine's integer counts,
    # parents as their children's sums; then the fair shares. Victims of the reclaim and preempt actions
    # still terminating count in neither (a Releasing pod is not in KAI's allocated statuses; victims are
    # preemptible, so the non-preemptible counts keep none of them).
    num = qt.parent.shape[0]
    num_leaves = run.queues.shape[1]
    if qt.v_act[0] != 0:
        _releasing(jobs, js, qt)
    for q in range(num_leaves):
        for r in range(3):
            qt.k_ireq[r, q] = run.queues[RESOURCE_ROWS[r], q] - qt.v_rel[r, q]
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        q = cs.ints[C_TENANT, c]
        n = pend.cls[CD_PENDING, c] * cs.ints[C_PODS, c]
        qt.k_ireq[0, q] += n * cs.ints[C_MILLI, c]
        qt.k_ireq[1, q] += n * cs.ints[C_CPU, c]
        qt.k_ireq[2, q] += n * cs.ints[C_MEM, c]
    for n in range(num):
        for r in range(3):
            if n < num_leaves:
                qt.v_alloc[r, n] = to_kai(run.queues[RESOURCE_ROWS[r], n] - qt.v_rel[r, n], r)
                qt.k_np[r, n] = to_kai(run.queues[NP_ROWS[r], n], r)
                qt.v_req[r, n] = to_kai(qt.k_ireq[r, n], r)
            else:
                qt.v_alloc[r, n] = 0.0
                qt.k_np[r, n] = 0.0
                qt.v_req[r, n] = 0.0
    for n in range(num):
        p = qt.parent[n]
        if p >= 0:
            for r in range(3):
                qt.v_alloc[r, p] += qt.v_alloc[r, n]
                qt.k_np[r, p] += qt.k_np[r, n]
                qt.v_req[r, p] += qt.v_req[r, n]
    fair_shares(qt)


@kernel
def _allocated_again(jobs: Jobs, qt: KaiState, run: Run, q: int) -> None:
    # A job of leaf q started (or left): its usage moves, and its ancestors' by the same amounts.
    for r in range(3):
        new = to_kai(run.queues[RESOURCE_ROWS[r], q] - qt.v_rel[r, q], r)  # terminating victims left out
        new_np = to_kai(run.queues[NP_ROWS[r], q], r)
        delta = new - qt.v_alloc[r, q]
        delta_np = new_np - qt.k_np[r, q]
        n = q
        while n >= 0:
            qt.v_alloc[r, n] = new if n == q else qt.v_alloc[r, n] + delta
            qt.k_np[r, n] = new_np if n == q else qt.k_np[r, n] + delta_np
            n = qt.parent[n]


@kernel
def kai_cycle(
    qt: KaiState,
    pods: None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    pend: Pending,
    tm: Timers,
    sc: Scratch,
    run: Run,
    easy: None,
    pre: None,
    tas: Topology | None,
    numa: Numa | None,
    t: float,
) -> int:
    """One KAI session at ``t`` (``allocate``); returns jobs started or rejected.

    Notes
    -----
    ``actions/allocate/allocate.go`` with ``utils/job_order_by_queue.go`` (reference §4.3): jobs are popped
    one at a time from the best leaf queue (:func:`_pick`), each queue's jobs in job order (priority, then
    creation time, then job id: the replay's queue key); a popped job is allocated as a gang when the
    capacity policy permits (:func:`within_capacity`), else discarded for the session. Jobs of a class
    refused for capacity (same queue and request) or placement (at this release version) are left out with
    it: they would fail the same way.
    """
    version = run.counters[K_VERSION]
    _session_open(jobs, cs, js, pend, qt, run)
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        if pend.cls[CD_FAIL, c] == version:
            continue
        cursor_reset(cs, pend, c)
        j = cursor_job(jobs, cs, js, pend, c)
        if j >= 0:
            push_class_head(qt, jobs, js, cs.ints[C_TENANT, c], c, j)
    changes = 0
    while True:
        q = _pick(qt, cs)
        if q < 0:
            break
        c = qt.hi[1, qt.seg[q]]
        j = cursor_job(jobs, cs, js, pend, c)
        cursor_step(jobs, cs, js, pend, c, j)
        drop_top(qt, q)
        if not within_capacity(qt, jobs, j, q):
            continue  # the class's later jobs ask the same of usage that only grows this session
        if try_gang(tas, numa, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t):
            start_job(params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
            end_nomination(cl, run, j)  # a reclaimer's pipelined pods are bound
        if js.dyn[D_STATUS, j] == S_QUEUED:
            pend.cls[CD_FAIL, c] = version
            continue
        changes += 1
        _allocated_again(jobs, qt, run, q)
        nxt = cursor_job(jobs, cs, js, pend, c)
        if nxt >= 0:
            push_class_head(qt, jobs, js, q, c, nxt)
    for q in range(run.queues.shape[1]):
        qt.hsize[q] = 0
        run.queues[QU_DESERVED, q] = math.floor(qt.v_des[0, q] * 1000.0 + 0.5)
        run.queues[QU_SHARE, q] = math.floor(dominant_share(qt, q, 0.0, 0.0, 0.0) * 1e6 + 0.5)
    return changes
