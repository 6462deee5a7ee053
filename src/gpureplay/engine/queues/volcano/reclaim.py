"""Volcano's ``reclaim`` action: a queue below its deserved share evicts from queues above theirs.

Run in a session after ``allocate`` when ``scheduler.actions`` lists ``reclaim`` (Volcano's
``enqueue, allocate, reclaim, backfill``); the rules are volcano-sh/volcano
``pkg/scheduler/actions/reclaim/reclaim.go`` (the gang-aware version: one statement per reclaiming job,
committed only when the job is pipelined) with the default plugins (reference §4.1):

- queues in queue order (priority, then proportion share), an overused queue (deserved <= allocated in
  every resource) leaving the action; a queue's Inqueue jobs in job order: priority, then the drf plugin's
  share (``max_r allocated_r / total_r``: a job some of whose pods are already pipelined comes after an
  untouched one), then creation; one pod (task) per turn, the queue re-picked after each;
- a pod is tried only while its queue stays within its deserved share with it (the proportion plugin's
  ``Preemptive``: ``allocated + pod <= deserved`` in the pod's resources), else the job and the queue leave;
  a job whose PriorityClass says ``preemptionPolicy: Never`` makes its queue leave;
- nodes in index order (Volcano walks its node list); on each node the reclaimees are the running,
  preemptible pods of other, ``reclaimable`` queues; the victims among them are the proportion plugin's
  (its ``ReclaimableFn``: walking them, a victim's queue, counted on a copy of its allocation, must still be
  above its deserved share in some resource and hold at least the reclaimer's request in every one; the gang
  plugin's veto in tier 1 returns no victims for a whole gang, which hands the decision to tier 2: it
  protects no gang); the node qualifies when ``pod <= FutureIdle + victims`` (``ValidateVictims``, FutureIdle
  = idle + releasing - pipelined); victims are evicted in victim order (the queue last in queue order
  first, then the job last in job order) until they alone cover the pod, which is then pipelined there;
- a job whose every pod is pipelined commits its statement: its victims are evicted for real. A job that
  cannot place a pod leaves the action; statements not committed by the end are discarded (their
  evictions and pipelined pods counted meanwhile, as Volcano's session does).

The engine evicts a victim job whole (its pods everywhere: a gang restarts whole), so a victim counts
whole against its queue's allocation and as releasing on each of its nodes; the pod it gives on the node
being searched is what it adds to ``reclaimed`` there. A job waiting for victims it evicted is pipelined
on their resources in Volcano (allocate places pods on FutureIdle), so it is not starving and does not
reclaim again. Plain twin: ``_Replay.volcano_reclaim`` in ``tests/reference/simulator.py``.

A shortcut that changes nothing: a job whose first pod found no room on any node, with no eviction or
pipelined pod meanwhile, leaves the rest of its class (same queue, pod and pod count) out until the session's
state changes; they would walk the nodes to the same failure.
"""

from __future__ import annotations

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.jobs import evict_job
from gpureplay.engine.pending import cursor_reset, cursor_step
from gpureplay.engine.preemption.priority import could_ever_fit
from gpureplay.engine.queues.kueue.tree import drop_top, push_class_head
from gpureplay.engine.queues.volcano.session import (
    MIB,
    _class_pod,
    _le,
    _next_inqueue,
    _overused,
    _queue_before,
    _share,
    _to_volcano,
    ratio,
)
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    Jobs,
    JobState,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
    VolcanoState,
)
from gpureplay.engine.state.layout import (
    C_PODS,
    C_TENANT,
    D_PLACED,
    D_STATUS,
    D_WAITING,
    F_CPU,
    F_MEM,
    F_MILLI,
    J_CAN_PREEMPT,
    J_CLASS,
    J_CPU,
    J_ID,
    J_MEM,
    J_MILLI,
    J_PREEMPTIBLE,
    J_PRIO,
    J_TENANT,
    K_NACTIVE,
    S_RUNNING,
    S_TERMINATING,
    T_KEY1,
    T_KEY2,
)

#: ``qt.v_pst`` states of a reclaiming job in one action.
PST_NONE = 0
PST_OPEN = 1  # some pods pipelined, back in its queue's job order
PST_DONE = 2  # committed, or left the action


@inline_kernel
def _job_amount(jobs: Jobs, j: int, pods: int, r: int) -> float:
    # ``pods`` of job j's pods, resource r, in Volcano's units.
    if r == 0:
        return float(pods * jobs.ints[J_MILLI, j])
    if r == 1:
        return float(pods * jobs.ints[J_CPU, j])
    return float(pods * jobs.ints[J_MEM, j]) * MIB


@inline_kernel
def _drf_share(qt: VolcanoState, jobs: Jobs, j: int, pods: int) -> float:
    # drf.go calculateShare: max_r allocated_r / total_r over the cluster's resources (0/0 -> 0, x/0 -> 1).
    share = 0.0
    for r in range(3):
        share = max(share, ratio(_job_amount(jobs, j, pods, r), qt.v_total[r]))
    return share


@inline_kernel
def _job_before(jobs: Jobs, js: JobState, a: int, sa: float, b: int, sb: float) -> bool:
    # JobOrderFn: priority (higher first), gang (both not ready), drf share (lower first), creation, uid.
    if js.time[T_KEY1, a] != js.time[T_KEY1, b]:
        return bool(js.time[T_KEY1, a] < js.time[T_KEY1, b])
    if sa != sb:
        return sa < sb
    if js.time[T_KEY2, a] != js.time[T_KEY2, b]:
        return bool(js.time[T_KEY2, a] < js.time[T_KEY2, b])
    return bool(jobs.ints[J_ID, a] < jobs.ints[J_ID, b])


@inline_kernel
def _victim_before(qt: VolcanoState, jobs: Jobs, js: JobState, a: int, b: int) -> bool:
    # BuildVictimsPriorityQueue: other queues in reverse queue order; one queue's jobs in reverse job order
    # (a running job's drf share is all it holds).
    qa = jobs.ints[J_TENANT, a]
    qb = jobs.ints[J_TENANT, b]
    if qa != qb:
        return not _queue_before(qt, qa, qb)
    if jobs.ints[J_PRIO, a] != jobs.ints[J_PRIO, b]:
        return bool(jobs.ints[J_PRIO, a] < jobs.ints[J_PRIO, b])
    sa = _drf_share(qt, jobs, a, int(js.dyn[D_PLACED, a]))
    sb = _drf_share(qt, jobs, b, int(js.dyn[D_PLACED, b]))
    if sa != sb:
        return sa > sb
    if js.time[T_KEY2, a] != js.time[T_KEY2, b]:
        return bool(js.time[T_KEY2, a] > js.time[T_KEY2, b])
    return bool(jobs.ints[J_ID, a] > jobs.ints[J_ID, b])


@inline_kernel
def _above_deserved(qt: VolcanoState, q: int) -> bool:
    # proportion ReclaimableFn: ``!allocated.LessEqual(deserved)``.
    for r in range(3):  # noqa: SIM110 (no generators in kernels)
        if not _le(qt.v_alloc[r, q], qt.v_des[r, q]):
            return True
    return False


@inline_kernel
def _set_alloc(qt: VolcanoState, q: int, r: int, amount: float) -> None:
    # The session's allocation of queue q moves (an eviction, a pipelined pod): its share follows.
    qt.v_alloc[r, q] = amount
    qt.v_share[q] = _share(qt, q)


@kernel
def _mark(qt: VolcanoState, jobs: Jobs, js: JobState, v: int, owner: int) -> None:
    # Evict v in owner's statement: it stops counting as allocated and its pods become releasing.
    qt.v_mark[v] = owner + 1
    qt.v_mut[0] += 1
    qt.v_vict[qt.v_nvict[0]] = v
    qt.v_nvict[0] += 1
    q = jobs.ints[J_TENANT, v]
    for r in range(3):
        _set_alloc(qt, q, r, qt.v_alloc[r, q] - _job_amount(jobs, v, int(js.dyn[D_PLACED, v]), r))


@kernel
def _node_units(
    qt: VolcanoState, jobs: Jobs, js: JobState, n: int, q: int, within: bool, ordered: bool
) -> int:
    """Gather node ``n``'s candidate victims for queue ``q`` and its releasing resources; their number.

    The candidates: running pods of preemptible jobs of queue ``q`` (``within``: the preempt action), else
    of other queues above their deserved share (the reclaim action). ``qt.v_unit``: the candidate jobs (in
    victim order when ``ordered``, else :func:`_order_units` puts them in it); ``qt.v_ucnt``: their pods on
    ``n``; ``qt.v_node``: what terminating and just evicted jobs hold on ``n``.
    """
    qt.v_walk[0] += 1
    stamp = qt.v_walk[0]
    count = 0
    for r in range(3):
        qt.v_node[r] = 0.0
    pod = js.node_pods[n]
    while pod >= 0:
        v = jobs.pod_job[pod]
        pod = js.pod_next[pod]
        status = js.dyn[D_STATUS, v]
        if status == S_TERMINATING or qt.v_mark[v] != 0:
            for r in range(3):
                qt.v_node[r] += _job_amount(jobs, v, 1, r)
            continue
        if status != S_RUNNING or jobs.ints[J_PREEMPTIBLE, v] == 0:
            continue
        vq = jobs.ints[J_TENANT, v]
        if within:
            if vq != q:
                continue
        elif vq == q or qt.v_over[vq] == 0:
            # Not reclaimable, or at or below its deserved share: the proportion plugin takes none of its
            # pods (its running copy only falls), and leaving them out changes no other victim's order.
            continue
        if qt.v_stamp[v] == stamp:
            qt.v_ucnt[qt.v_slot[v]] += 1
            continue
        qt.v_stamp[v] = stamp
        qt.v_slot[v] = count
        qt.v_unit[count] = v
        qt.v_ucnt[count] = 1
        count += 1
    if ordered:
        _order_units(qt, jobs, js, count)
    return count


@kernel
def _order_units(qt: VolcanoState, jobs: Jobs, js: JobState, count: int) -> None:
    """Put the first ``count`` units (``qt.v_unit``, ``qt.v_ucnt``, ``qt.v_uall``) in victim order."""
    # Insertion sort: a node holds a handful of jobs.
    for i in range(1, count):
        v = qt.v_unit[i]
        k = qt.v_ucnt[i]
        u = qt.v_uall[i]
        m = i
        while m > 0 and _victim_before(qt, jobs, js, v, qt.v_unit[m - 1]):
            qt.v_unit[m] = qt.v_unit[m - 1]
            qt.v_ucnt[m] = qt.v_ucnt[m - 1]
            qt.v_uall[m] = qt.v_uall[m - 1]
            m -= 1
        qt.v_unit[m] = v
        qt.v_ucnt[m] = k
        qt.v_uall[m] = u


@kernel
def _victims(qt: VolcanoState, jobs: Jobs, count: int, pod: tuple[float, float, float]) -> int:
    """The proportion plugin's victims among the ``count`` units (kept in ``qt.v_unit`` order, first ones)."""
    num_q = qt.v_on.shape[0]
    for x in range(num_q):
        qt.v_copied[x] = 0
    kept = 0
    for i in range(count):
        v = qt.v_unit[i]
        vq = jobs.ints[J_TENANT, v]
        if qt.v_copied[vq] == 0:
            qt.v_copied[vq] = 1
            for r in range(3):
                qt.v_copy[r, vq] = qt.v_alloc[r, vq]
        short = False
        over = False
        for r in range(3):
            if qt.v_copy[r, vq] < pod[r]:
                short = True  # LessPartly: the queue holds less than the reclaimer asks
            if not _le(qt.v_copy[r, vq], qt.v_des[r, vq]):
                over = True
        if short or not over:
            continue
        for r in range(3):
            qt.v_copy[r, vq] -= _job_amount(jobs, v, int(qt.v_ucnt[i]), r)
        qt.v_unit[kept] = v
        qt.v_ucnt[kept] = qt.v_ucnt[i]
        kept += 1
    return kept


@kernel
def _reclaim_on(
    qt: VolcanoState, cl: Cluster, jobs: Jobs, js: JobState, j: int, n: int, pod: tuple[float, float, float]
) -> bool:
    """One pod of job ``j`` on node ``n``: find, validate and evict victims; whether the pod was pipelined."""
    q = jobs.ints[J_TENANT, j]
    count = _node_units(qt, jobs, js, n, q, False, True)
    if count == 0:
        return False
    kept = _victims(qt, jobs, count, pod)
    if kept == 0:
        return False
    idle = (
        float(cl.node_free[F_MILLI, n]),
        float(cl.node_free[F_CPU, n]),
        float(cl.node_free[F_MEM, n]) * MIB,
    )
    for r in range(3):
        future = idle[r] + qt.v_node[r] - qt.v_pipe[r, n]
        for i in range(kept):
            future += _job_amount(jobs, qt.v_unit[i], int(qt.v_ucnt[i]), r)
        if not _le(pod[r], future):
            return False  # ValidateVictims
    got0 = 0.0
    got1 = 0.0
    got2 = 0.0
    for i in range(kept):
        v = qt.v_unit[i]
        _mark(qt, jobs, js, v, j)
        got0 += _job_amount(jobs, v, int(qt.v_ucnt[i]), 0)
        got1 += _job_amount(jobs, v, int(qt.v_ucnt[i]), 1)
        got2 += _job_amount(jobs, v, int(qt.v_ucnt[i]), 2)
        if _le(pod[0], got0) and _le(pod[1], got1) and _le(pod[2], got2):
            break
    if not (_le(pod[0], got0) and _le(pod[1], got1) and _le(pod[2], got2)):
        return False
    qt.v_mut[0] += 1
    for r in range(3):
        qt.v_pipe[r, n] += pod[r]
        _set_alloc(qt, q, r, qt.v_alloc[r, q] + pod[r])
    return True


@inline_kernel
def _preemptive(qt: VolcanoState, q: int, pod: tuple[float, float, float]) -> bool:
    # proportion Preemptive: allocated + pod <= deserved, in the resources the pod requests.
    for r in range(3):  # noqa: SIM110 (no generators in kernels)
        if pod[r] > 0.0 and not _le(qt.v_alloc[r, q] + pod[r], qt.v_des[r, q]):
            return False
    return True


@kernel
def _pass(
    jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: VolcanoState, q: int, c: int, j: int
) -> None:
    # Job j, head of queue q's class c, leaves the class heap; the class's next Inqueue job takes its place.
    qt.v_seen[c] += 1
    cursor_step(jobs, cs, js, pend, c, j)
    drop_top(qt, q)
    nxt = _next_inqueue(jobs, cs, js, pend, qt, c)
    if nxt >= 0:
        push_class_head(qt, jobs, js, q, c, nxt)


@kernel
def _next_reclaimer(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: VolcanoState, q: int) -> int:
    """Queue ``q``'s next job in job order: its best open job or the head of its untouched ones (-1: none)."""
    best = -1
    best_share = 0.0
    for i in range(qt.v_npart[0]):
        j = qt.v_part[i]
        if qt.v_pst[j] != PST_OPEN or jobs.ints[J_TENANT, j] != q:
            continue
        s = _drf_share(qt, jobs, j, int(qt.v_pp[j]))
        if best < 0 or _job_before(jobs, js, j, s, best, best_share):
            best = j
            best_share = s
    while qt.hsize[q] > 0:
        c = qt.hi[1, qt.seg[q]]
        j = _next_inqueue(jobs, cs, js, pend, qt, c)
        if j < 0:
            drop_top(qt, q)
            continue
        if js.dyn[D_WAITING, j] > 0:
            # Pipelined on its victims' resources: not starving.
            _pass(jobs, cs, js, pend, qt, q, c, j)
            continue
        if best >= 0 and not _job_before(jobs, js, j, 0.0, best, best_share):
            return best
        _pass(jobs, cs, js, pend, qt, q, c, j)
        if qt.v_cfail[c] == qt.v_mut[0] + 1:
            # Its class found no room for a first pod and nothing changed since: it would fail the same way
            # (the class's jobs passed the Never and Preemptive checks then, with the same queue state).
            continue
        qt.v_pst[j] = PST_OPEN
        qt.v_part[qt.v_npart[0]] = j
        qt.v_npart[0] += 1
        return j
    return best


@kernel
def inqueue_heads(qt: VolcanoState, jobs: Jobs, cs: Classes, js: JobState, pend: Pending, run: Run) -> None:
    """Each queue's heap of class heads over its pending Inqueue jobs, in job order (the actions' start)."""
    for q in range(qt.v_on.shape[0]):
        qt.hsize[q] = 0
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        qt.v_seen[c] = 0
        if qt.v_cinq[c] == 0:
            continue
        cursor_reset(cs, pend, c)
        j = _next_inqueue(jobs, cs, js, pend, qt, c)
        if j >= 0:
            push_class_head(qt, jobs, js, cs.ints[C_TENANT, c], c, j)


@inline_kernel
def _victims_anywhere(qt: VolcanoState) -> bool:
    # ``qt.v_over``: the reclaimable queues above their deserved share, the only ones that give victims;
    # without one, every pod would fail.
    found = False
    for x in range(qt.v_on.shape[0]):
        qt.v_over[x] = 1 if qt.v_recl[x] != 0 and _above_deserved(qt, x) else 0
        found = found or qt.v_over[x] != 0
    return found


@kernel
def reclaim_action(
    qt: VolcanoState,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    pend: Pending,
    tm: Timers,
    sc: Scratch,
    run: Run,
    t: float,
) -> int:
    """Volcano's ``reclaim`` action at ``t`` after ``allocate``; returns the victims evicted.

    Notes
    -----
    volcano-sh/volcano ``pkg/scheduler/actions/reclaim/reclaim.go`` with the proportion, drf, gang and
    priority plugins (module docstring; reference §4.1). The session's allocations (``qt.v_alloc``) and
    shares move with each eviction and pipelined pod, as Volcano's event handlers move them.
    """
    num_q = qt.v_on.shape[0]
    if not _victims_anywhere(qt):
        return 0
    inqueue_heads(qt, jobs, cs, js, pend, run)
    for q in range(num_q):
        qt.v_qin[q] = 1 if qt.hsize[q] > 0 else 0
    qt.v_nvict[0] = 0
    qt.v_npart[0] = 0
    qt.v_mut[0] += 1  # failures remembered by earlier actions expire
    evicted = 0
    seen = -1  # the change counter at the last pick: queue order and victims are as they were then
    q = -1
    while True:
        if qt.v_mut[0] != seen:
            if not _victims_anywhere(qt):
                break
            seen = qt.v_mut[0]
            q = -1
        if q < 0 or qt.v_qin[q] == 0:
            # Shares move only with a change; without one the queue picked last, still in, wins again.
            q = -1
            for x in range(num_q):
                if qt.v_qin[x] != 0 and (q < 0 or _queue_before(qt, x, q)):
                    q = x
            if q < 0:
                break
        if _overused(qt, q):
            qt.v_qin[q] = 0
            continue
        j = _next_reclaimer(jobs, cs, js, pend, qt, q)
        if j < 0:
            qt.v_qin[q] = 0
            continue
        if jobs.ints[J_CAN_PREEMPT, j] == 0:
            # preemptionPolicy Never: its pods are popped one by one with no effect, then the queue leaves.
            qt.v_pst[j] = PST_DONE
            qt.v_qin[q] = 0
            continue
        c = jobs.ints[J_CLASS, j]
        shape = _class_pod(cs, c)
        pod = (
            _to_volcano(float(shape[0]), 0),
            _to_volcano(float(shape[1]), 1),
            _to_volcano(float(shape[2]), 2),
        )
        if not _preemptive(qt, q, pod):
            qt.v_pst[j] = PST_DONE
            qt.v_qin[q] = 0
            continue
        first = qt.v_pp[j] == 0
        before = qt.v_mut[0]
        assigned = False
        for n in range(cl.node_int.shape[1]):
            if could_ever_fit(cl, cs, c, n) and _reclaim_on(qt, cl, jobs, js, j, n, pod):
                assigned = True
                break
        if not assigned:
            if first and qt.v_mut[0] == before:
                qt.v_cfail[c] = before + 1
            qt.v_pst[j] = PST_DONE
            continue
        qt.v_pp[j] += 1
        if qt.v_pp[j] == cs.ints[C_PODS, c]:
            qt.v_pst[j] = PST_DONE
            for i in range(qt.v_nvict[0]):
                v = qt.v_vict[i]
                if qt.v_mark[v] == j + 1:
                    evict_job(params, jobs, cs, cl, js, pend, tm, sc, run, v, t, j)
                    qt.v_term[qt.v_nterm[0]] = v
                    qt.v_nterm[0] += 1
                    evicted += 1
    # Statements not committed are discarded; the committed victims are terminating now.
    for i in range(qt.v_nvict[0]):
        qt.v_mark[qt.v_vict[i]] = 0
    for i in range(qt.v_npart[0]):
        j = qt.v_part[i]
        qt.v_pst[j] = PST_NONE
        qt.v_pp[j] = 0
    for q in range(num_q):
        qt.hsize[q] = 0
    return evicted


__all__ = ["inqueue_heads", "reclaim_action"]
