"""Volcano's scheduling session over its queues (``scheduler.queues: volcano``).

One session per cycle, with Volcano's default actions and plugins (``pkg/scheduler/util.go``: actions
``enqueue, allocate, backfill``; tier 1 ``priority, gang, conformance``, tier 2 ``overcommit, drf,
predicates, proportion, nodeorder``; reference §3.1, §4.1):

1. the proportion plugin's ``deserved`` per queue, by weighted water-filling of the cluster among the
   queues with jobs (:func:`water_fill`, the kernel twin of
   :func:`gpureplay.queues.fair_share.volcano_proportion`);
2. ``enqueue``: queues in queue order, their Pending jobs in job order; a job becomes Inqueue when the
   overcommit plugin (Inqueue requests + its own within ``total × overcommit-factor − used``) and the
   proportion plugin (its queue's allocated + Inqueue + its own within ``realCapability``) both permit;
3. ``allocate``: repeatedly the first queue in queue order that is not overused and has Inqueue jobs; its
   first Inqueue job in job order is placed as a gang if each pod fits the queue's ``deserved − allocated``
   (``Allocatable``), else dropped for this session.

Queue order: higher ``spec.priority``, then lower share (``max_r allocated_r / deserved_r``), then the
queue's index (Volcano compares creation times). Job order: priority, then creation time, then job id
(the replay's queue key). Arithmetic is in Volcano's units (milli-GPU, milli-CPU, bytes), its comparisons
within ``minResource`` 0.1, so that the kernels and the plain statement agree to the bit.
"""

from __future__ import annotations

import math

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.jobs import start_job
from gpureplay.engine.pending import cursor_job, cursor_reset, cursor_step
from gpureplay.engine.placement.gang import try_gang
from gpureplay.engine.queues.kueue.tree import RESOURCE_ROWS, drop_top, push_class_head, request_amount
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
    VolcanoState,
)
from gpureplay.engine.state.layout import (
    C_CPU,
    C_MEM,
    C_MILLI,
    C_PODS,
    C_TENANT,
    CD_FAIL,
    CD_PENDING,
    D_PLACED,
    D_STATUS,
    J_CLASS,
    J_CPU,
    J_MEM,
    J_MILLI,
    J_TENANT,
    K_NACTIVE,
    K_VERSION,
    MAX_SHARE,
    QU_DESERVED,
    QU_PENDING,
    QU_RUNNING,
    QU_SHARE,
    S_QUEUED,
    S_TERMINATING,
)

#: Volcano's ``minResource`` (``resource_info.go``): amounts closer than this are equal.
MIN_RESOURCE = 0.1

#: Bytes per MiB: the engine keeps memory in MiB, Volcano in bytes.
MIB = 1048576.0


@inline_kernel
def _le(a: float, b: float) -> bool:
    # resource_info.go lessEqualFunc: a <= b within minResource.
    return a < b or abs(a - b) < MIN_RESOURCE


@inline_kernel
def _to_volcano(amount: float, r: int) -> float:
    return amount * MIB if r == 2 else amount


@inline_kernel
def _class_pod(cs: Classes, c: int) -> tuple[int, int, int]:
    # A gang class's jobs all have C_PODS pods of its shape (engine units).
    return int(cs.ints[C_MILLI, c]), int(cs.ints[C_CPU, c]), int(cs.ints[C_MEM, c])


@inline_kernel
def _class_request(cs: Classes, c: int, r: int) -> float:
    # One job's whole request, in Volcano's units.
    return _to_volcano(float(cs.ints[C_PODS, c] * _class_pod(cs, c)[r]), r)


@inline_kernel
def _allocated(qt: VolcanoState, run: Run, q: int, r: int) -> float:
    # Volcano's allocated counts Allocated/Binding/Bound/Running pods: a terminating (Releasing) victim of the
    # reclaim action no longer counts, though the engine keeps its pods placed until its grace ends.
    return _to_volcano(float(run.queues[RESOURCE_ROWS[r], q] - qt.v_rel[r, q]), r)


@kernel
def water_fill(qt: VolcanoState) -> None:
    """``qt.v_des``: each queue's ``deserved`` from ``qt.v_req`` among the queues with jobs (``qt.v_on``).

    Notes
    -----
    volcano-sh/volcano ``pkg/scheduler/plugins/proportion/proportion.go`` ``OnSessionOpen`` (reference
    §4.1): rounds over the unmet queues, each (against the round's ``remaining``) adding
    ``remaining × weight / Σ weight``, capped by ``realCapability`` and by its request, met when its request
    fits (within ``minResource``) or its deserved no longer changes, then raised to its guarantee; rounds
    end when ``remaining`` is empty or unchanged. Plain twin:
    :func:`gpureplay.queues.fair_share.volcano_proportion`.
    """
    num_q = qt.v_on.shape[0]
    for q in range(num_q):
        qt.v_met[q] = 0 if qt.v_on[q] != 0 else 1
        for r in range(3):
            qt.v_des[r, q] = 0.0
    rem0 = qt.v_total[0]
    rem1 = qt.v_total[1]
    rem2 = qt.v_total[2]
    while True:
        total_weight = 0
        for q in range(num_q):
            if qt.v_met[q] == 0:
                total_weight += int(qt.weight[q])
        if total_weight == 0:
            break
        inc0 = inc1 = inc2 = 0.0
        dec0 = dec1 = dec2 = 0.0
        for q in range(num_q):
            if qt.v_met[q] != 0:
                continue
            ratio = float(int(qt.weight[q])) / float(total_weight)
            met = True
            same = True
            for r in range(3):
                old = qt.v_des[r, q]
                rem = rem0 if r == 0 else (rem1 if r == 1 else rem2)
                new = min(min(old + rem * ratio, qt.v_real[r, q]), qt.v_req[r, q])
                if not _le(qt.v_req[r, q], new):
                    met = False
                if new != old:
                    same = False
                new = max(new, qt.v_guar[r, q])
                up = max(0.0, new - old)
                down = max(0.0, old - new)
                if r == 0:
                    inc0 += up
                    dec0 += down
                elif r == 1:
                    inc1 += up
                    dec1 += down
                else:
                    inc2 += up
                    dec2 += down
                qt.v_des[r, q] = new
            if met or same:
                qt.v_met[q] = 1
        new0 = rem0 - inc0 + dec0
        new1 = rem1 - inc1 + dec1
        new2 = rem2 - inc2 + dec2
        empty = new0 < MIN_RESOURCE and new1 < MIN_RESOURCE and new2 < MIN_RESOURCE
        unchanged = new0 == rem0 and new1 == rem1 and new2 == rem2
        rem0, rem1, rem2 = new0, new1, new2
        if empty or unchanged:
            break


@inline_kernel
def ratio(a: float, d: float) -> float:
    """Volcano's ``helpers.Share``: ``a / d``, with 0/0 -> 0 and x/0 -> 1."""
    return (0.0 if a == 0.0 else 1.0) if d == 0.0 else a / d


@inline_kernel
def _share(qt: VolcanoState, q: int) -> float:
    # proportion.go updateShare: the largest ratio of allocated to deserved over the resources.
    share = 0.0
    for r in range(3):
        share = max(share, ratio(qt.v_alloc[r, q], qt.v_des[r, q]))
    return share


@inline_kernel
def _update(qt: VolcanoState, run: Run, q: int) -> None:
    for r in range(3):
        qt.v_alloc[r, q] = _allocated(qt, run, q, r)
    qt.v_share[q] = _share(qt, q)


@inline_kernel
def _queue_before(qt: VolcanoState, a: int, b: int) -> bool:
    # QueueOrderFn: priority plugin (higher spec.priority), proportion (lower share), then creation order.
    if qt.v_prio[a] != qt.v_prio[b]:
        return bool(qt.v_prio[a] > qt.v_prio[b])
    if qt.v_share[a] != qt.v_share[b]:
        return bool(qt.v_share[a] < qt.v_share[b])
    return a < b


@inline_kernel
def _overused(qt: VolcanoState, q: int) -> bool:
    # proportion.go AddOverusedFn: deserved <= allocated in every dimension.
    return _le(qt.v_des[0, q], qt.v_alloc[0, q]) and (
        _le(qt.v_des[1, q], qt.v_alloc[1, q]) and _le(qt.v_des[2, q], qt.v_alloc[2, q])
    )


@kernel
def allocatable(qt: VolcanoState, cs: Classes, c: int) -> bool:
    """Whether each pod of a job of class ``c``, allocated in turn, fits its queue's ``deserved − allocated``.

    Notes
    -----
    ``proportion.go`` ``AddAllocatableFn``: a task fits when its request is within ``deserved − allocated``
    (each dimension's positive part, within ``minResource``); the allocate action's statement adds each
    allocated pod to the queue's allocated before the next pod is checked.
    """
    q = cs.ints[C_TENANT, c]
    pods = cs.ints[C_PODS, c]
    for r in range(3):
        pod = _to_volcano(float(_class_pod(cs, c)[r]), r)
        allocated = qt.v_alloc[r, q]
        for _ in range(pods):
            if not _le(pod, max(0.0, qt.v_des[r, q] - allocated)):
                return False
            allocated += pod
    return True


@kernel
def enqueueable(qt: VolcanoState, cs: Classes, c: int) -> bool:
    """Whether the enqueue action moves the next Pending job of class ``c`` to Inqueue now.

    Notes
    -----
    Both tier-2 ``JobEnqueueable`` plugins must permit (reference §3.1). ``overcommit.go``: the Inqueue
    jobs' requests plus its own within ``total × overcommit-factor − used``; ``proportion.go``: its own
    request + its queue's allocated + Inqueue requests within ``realCapability`` (a gang's ``elastic`` part is
    0). The job's ``minResources`` is its whole request (every pod is in its gang's ``minMember``), the same
    for every job of its class.
    """
    q = cs.ints[C_TENANT, c]
    factor = qt.v_total[3]
    for r in range(3):
        own = _class_request(cs, c, r)
        used = 0.0
        inqueue = 0.0
        for x in range(qt.v_on.shape[0]):
            used += qt.v_alloc[r, x]
            inqueue += _to_volcano(float(qt.v_qinq[r, x]), r)
        if not _le(inqueue + own, qt.v_total[r] * factor - used):
            return False
        mine = own + qt.v_alloc[r, q] + _to_volcano(float(qt.v_qinq[r, q]), r)
        if not _le(mine, qt.v_real[r, q]):
            return False
    return True


@kernel
def _next_pending(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: VolcanoState, c: int) -> int:
    # Class c's next job not yet Inqueue (-1: none); the Inqueue jobs it passes are usually none (a
    # class's Inqueue jobs come first: they were enqueued in its order).
    j = cursor_job(jobs, cs, js, pend, c)
    while j >= 0 and qt.v_inq[j] != 0:
        cursor_step(jobs, cs, js, pend, c, j)
        j = cursor_job(jobs, cs, js, pend, c)
    return j


@kernel
def _next_inqueue(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: VolcanoState, c: int) -> int:
    # Class c's next Inqueue job (-1: none); it stops once the class's Inqueue jobs are all passed.
    j = cursor_job(jobs, cs, js, pend, c)
    while j >= 0 and qt.v_seen[c] < qt.v_cinq[c] and qt.v_inq[j] == 0:
        cursor_step(jobs, cs, js, pend, c, j)
        j = cursor_job(jobs, cs, js, pend, c)
    return j if qt.v_seen[c] < qt.v_cinq[c] else -1


@kernel
def _releasing(jobs: Jobs, js: JobState, qt: VolcanoState | KaiState) -> None:
    # qt.v_rel: each queue's reclaim victims still terminating (engine units); the others leave the list.
    qt.v_rel[:, :] = 0
    kept = 0
    for i in range(qt.v_nterm[0]):
        v = qt.v_term[i]
        if js.dyn[D_STATUS, v] != S_TERMINATING:
            continue
        qt.v_term[kept] = v
        kept += 1
        q = jobs.ints[J_TENANT, v]
        placed = js.dyn[D_PLACED, v]
        qt.v_rel[0, q] += placed * jobs.ints[J_MILLI, v]
        qt.v_rel[1, q] += placed * jobs.ints[J_CPU, v]
        qt.v_rel[2, q] += placed * jobs.ints[J_MEM, v]
    qt.v_nterm[0] = kept


@kernel
def _session_open(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: VolcanoState, run: Run) -> None:
    # Which queues take part (jobs running or pending), their allocated and request, deserved, shares.
    num_q = qt.v_on.shape[0]
    _releasing(jobs, js, qt)
    for q in range(num_q):
        qt.v_on[q] = 1 if run.queues[QU_PENDING, q] + run.queues[QU_RUNNING, q] > 0 else 0
        for r in range(3):
            qt.v_alloc[r, q] = _allocated(qt, run, q, r)
            qt.v_req[r, q] = qt.v_alloc[r, q]
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        q = cs.ints[C_TENANT, c]
        n = float(pend.cls[CD_PENDING, c] * cs.ints[C_PODS, c])
        qt.v_req[0, q] += n * float(cs.ints[C_MILLI, c])
        qt.v_req[1, q] += n * float(cs.ints[C_CPU, c])
        qt.v_req[2, q] += n * float(cs.ints[C_MEM, c]) * MIB
    water_fill(qt)
    for q in range(num_q):
        qt.v_share[q] = _share(qt, q)


@kernel
def _enqueue_action(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: VolcanoState, run: Run) -> None:
    """Volcano's ``enqueue`` action (``actions/enqueue/enqueue.go``): Pending jobs to Inqueue.

    Queues are taken in queue order (no allocation happens in this action, so the order holds), each
    queue's Pending jobs in job order; a job refused leaves its class out of the rest of the action (its
    later jobs ask the same against sums that only grow).
    """
    num_q = qt.v_on.shape[0]
    for q in range(num_q):
        qt.hsize[q] = 0
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        # Sums only grow during the action: a class refused now is refused throughout, and its Inqueue jobs
        # need not be walked past.
        if not enqueueable(qt, cs, c):
            continue
        cursor_reset(cs, pend, c)
        j = _next_pending(jobs, cs, js, pend, qt, c)
        if j >= 0:
            push_class_head(qt, jobs, js, cs.ints[C_TENANT, c], c, j)
    for _ in range(num_q):
        q = -1
        for x in range(num_q):
            if qt.hsize[x] > 0 and (q < 0 or _queue_before(qt, x, q)):
                q = x
        if q < 0:
            break
        while qt.hsize[q] > 0:
            c = qt.hi[1, qt.seg[q]]
            j = _next_pending(jobs, cs, js, pend, qt, c)
            drop_top(qt, q)
            if not enqueueable(qt, cs, c):
                continue
            qt.v_inq[j] = 1
            qt.v_cinq[c] += 1
            for r in range(3):
                qt.v_qinq[r, q] += request_amount(jobs, j, r)
            cursor_step(jobs, cs, js, pend, c, j)
            j = _next_pending(jobs, cs, js, pend, qt, c)
            if j >= 0:
                push_class_head(qt, jobs, js, q, c, j)


@kernel
def _left_queue(jobs: Jobs, qt: VolcanoState, j: int) -> None:
    # An Inqueue job left the pending set (it started, or its pods were placed and a kubelet refused them).
    c = jobs.ints[J_CLASS, j]
    q = jobs.ints[J_TENANT, j]
    qt.v_inq[j] = 0
    qt.v_cinq[c] -= 1
    qt.v_seen[c] -= 1
    for r in range(3):
        qt.v_qinq[r, q] -= request_amount(jobs, j, r)


@kernel
def volcano_cycle(
    qt: VolcanoState,
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
    """One Volcano session at ``t`` (enqueue, then allocate); returns jobs started or rejected.

    Notes
    -----
    ``actions/allocate/allocate.go`` (reference §4.1): the queue picked each time is the first in queue
    order among those not overused (``deserved <= allocated``) with Inqueue jobs; its first job in job
    order is popped and placed as a gang when each pod passes ``Allocatable``; a job that fails is dropped
    for the session and the queue is picked again with its next job (the default ``traverse``). Jobs of a
    class dropped for quota (same queue and request) or for placement (at this release version) are left
    out with it: they would fail the same way. ``backfill`` places BestEffort pods only (no requests);
    here such jobs go through allocate, which they always pass, in the same session.
    """
    num_q = qt.v_on.shape[0]
    version = run.counters[K_VERSION]
    _session_open(jobs, cs, js, pend, qt, run)
    _enqueue_action(jobs, cs, js, pend, qt, run)
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        qt.v_seen[c] = 0
        if qt.v_cinq[c] == 0 or pend.cls[CD_FAIL, c] == version or not allocatable(qt, cs, c):
            continue
        cursor_reset(cs, pend, c)
        j = _next_inqueue(jobs, cs, js, pend, qt, c)
        if j >= 0:
            push_class_head(qt, jobs, js, cs.ints[C_TENANT, c], c, j)
    changes = 0
    while True:
        q = -1
        for x in range(num_q):
            if qt.hsize[x] > 0 and not _overused(qt, x) and (q < 0 or _queue_before(qt, x, q)):
                q = x
        if q < 0:
            break
        c = qt.hi[1, qt.seg[q]]
        j = _next_inqueue(jobs, cs, js, pend, qt, c)
        qt.v_seen[c] += 1
        cursor_step(jobs, cs, js, pend, c, j)
        drop_top(qt, q)
        if not allocatable(qt, cs, c):
            continue  # the class's later jobs would not fit the queue's deserved share either
        if try_gang(tas, numa, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t):
            start_job(params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
        if js.dyn[D_STATUS, j] == S_QUEUED:
            pend.cls[CD_FAIL, c] = version
            continue
        # Started, or placed and rejected by a kubelet: it left the queue.
        changes += 1
        _left_queue(jobs, qt, j)
        _update(qt, run, q)
        nxt = _next_inqueue(jobs, cs, js, pend, qt, c)
        if nxt >= 0:
            push_class_head(qt, jobs, js, q, c, nxt)
    for q in range(num_q):
        qt.hsize[q] = 0
        run.queues[QU_DESERVED, q] = math.floor(qt.v_des[0, q] + 0.5)
        run.queues[QU_SHARE, q] = math.floor(min(qt.v_share[q], MAX_SHARE) * 1e6 + 0.5)
    return changes
