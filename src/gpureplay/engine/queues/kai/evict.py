"""KAI's ``reclaim`` (between queues) and ``preempt`` (within a queue) actions.

Run in a KAI session after ``allocate`` when ``scheduler.actions`` lists them (KAI's action order: reclaim,
then preempt). The rules are NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/reclaim/reclaim.go``,
``actions/preempt/preempt.go``, the job solver ``actions/common/solvers`` (``job_solver.go``,
``pod_scenario_builder.go``, ``by_pod_solver.go``), the victim order of
``actions/utils/job_order_by_queue.go`` with ``plugins/proportion/queue_order``, and
``plugins/proportion/reclaimable`` (reference §4.3):

- the jobs: every pending job, in the allocate action's order (queue by queue from the top of the tree,
  each queue's jobs by priority, then creation); one not yet pipelined (a job waiting for victims it
  evicted is pipelined on their resources by allocate, so not pending) is tried once;
- reclaim takes a job only when its queue stays within its fair share with it (``CanReclaimResources``;
  a non-preemptible job also keeps the queue's non-preemptible allocation within its quota); preempt takes
  a non-preemptible job only when it keeps every ancestor's non-preemptible allocation within quota;
- the victims: running preemptible jobs of the other leaf queues (reclaim), or of the job's queue with a
  lower priority (preempt), in the victim order: the queue tree walked with the queue order reversed, a
  queue's dominant share counted without the victims already taken from it, and each queue's jobs in
  reverse job order;
- the solver: the largest ``k`` of the job's pods it can place is searched (``k`` = 1, 2, 4, ... then by
  halves), each probe from the victims the last solved probe recorded, then all its pods; a probe adds
  victims one job at a time in victim order and, for each node of the job just added, tries the recorded
  victims plus the added ones on that node: the pods fit when the idle resources plus the victims' hold
  ``k`` of them, and the scenario must pass the action's validator;
- reclaim's validator (``reclaimable.go``): each victim, its queue compared at the level below the two
  queues' lowest common ancestor, keeps that queue above its allocatable share (MaintainFairShare) or, the
  reclaimer's queue within its quota with the job, above its quota (GuaranteeDeservedQuota), counting the
  victims before it; then at every level of the reclaimer's path its fair-share saturation with the job
  must stay below each sibling's that loses victims whenever it is above 1, in each resource the job
  requests or that sibling's victims hold (the involved resources), and a non-preemptible
  reclaimer keeps each level's non-preemptible allocation within quota. Preempt's validator (minruntime,
  elastic jobs only) passes every whole-gang scenario;
- a solved job commits: its victims are evicted, it waits for them and allocate places it once they are
  gone; a job that fails (or may not reclaim) leaves the rest of its class out of the action, as KAI's
  scheduling signatures skip a job no easier than one of its queue that failed.

Engine differences, stated in the docs: victims are evicted whole (KAI evicts the pods on the tested node
and its stale-gang eviction ends the rest); the simulation frees whole victims; nodes are tried in index
order (KAI: map order) and victim queues are validated in index order (a Go map); the job's pods count as
placed when the nodes' idle resources plus the freed ones hold them (whole-GPU pods), where KAI runs its
allocate on the simulated state, re-placing victims that order before the job first; releasing resources of
earlier sessions' victims are not counted as free (the engine's allocate does not pipeline on them).
Plain twin: ``_Replay.kai_evict`` in ``tests/reference/simulator.py``.
"""

from __future__ import annotations

import math

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.jobs import evict_job
from gpureplay.engine.pending import cursor_job, cursor_reset, cursor_step
from gpureplay.engine.preemption.nomination import end_nomination
from gpureplay.engine.preemption.priority import could_ever_fit
from gpureplay.engine.queues.kai.session import (
    UNLIMITED,
    _allocatable,
    _le,
    _pick,
    dominant_share,
    to_kai,
)
from gpureplay.engine.queues.kueue.tree import drop_top, push_class_head
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    Jobs,
    JobState,
    KaiState,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
)
from gpureplay.engine.state.layout import (
    C_PODS,
    C_TENANT,
    D_PLACED,
    D_STATUS,
    D_WAITING,
    F_CPU,
    F_MEM,
    F_WHOLE,
    J_CLASS,
    J_CPU,
    J_ID,
    J_K,
    J_MEM,
    J_MILLI,
    J_POD0,
    J_PODS,
    J_PREEMPTIBLE,
    J_PRIO,
    J_PRIO_RANK,
    J_TENANT,
    K_NACTIVE,
    K_NPEND,
    NOM_ALL,
    NOM_CLASS,
    NOM_CPU,
    NOM_JOB,
    NOM_MEM,
    NOM_MILLI,
    NOM_NODE,
    NOM_PRIO,
    NOM_WHOLE,
    QU_RUNNING,
    QU_SHARE,
    S_RUNNING,
    T_KEY1,
    T_KEY2,
    T_START,
    X_WAKE,
)

#: ``qt.v_act[0]`` bits under KAI: the actions a session runs after allocate.
KA_RECLAIM = 1
KA_PREEMPT = 2

#: A node's pod capacity when the pod asks for nothing it could run out of.
_MANY = 1 << 40


@inline_kernel
def _job_kai(jobs: Jobs, j: int, pods: int, r: int) -> float:
    # ``pods`` of job j's pods, resource r, in KAI's units.
    if r == 0:
        return to_kai(pods * jobs.ints[J_K, j] * 1000, 0)
    if r == 1:
        return to_kai(pods * jobs.ints[J_CPU, j], 1)
    return to_kai(pods * jobs.ints[J_MEM, j], 2)


@inline_kernel
def _held(jobs: Jobs, js: JobState, v: int, r: int) -> float:
    # What running job v holds of resource r (KAI's units).
    return _job_kai(jobs, v, int(js.dyn[D_PLACED, v]), r)


@inline_kernel
def _cap(qt: KaiState, jobs: Jobs, j: int, n: int, g: int, c: int, m: int) -> int:
    # How many of job j's pods fit node n's idle resources plus (g GPUs, c milli-CPU, m MiB).
    best = _MANY
    if jobs.ints[J_K, j] > 0:
        best = min(best, (qt.k_fut[0, n] + g) // jobs.ints[J_K, j])
    if jobs.ints[J_CPU, j] > 0:
        best = min(best, (qt.k_fut[1, n] + c) // jobs.ints[J_CPU, j])
    if jobs.ints[J_MEM, j] > 0:
        best = min(best, (qt.k_fut[2, n] + m) // jobs.ints[J_MEM, j])
    return int(best)


@kernel
def _base_room(qt: KaiState, cl: Cluster, cs: Classes, jobs: Jobs, j: int, c: int) -> int:
    """Job ``j``'s pods (class ``c``) the feasible nodes' idle resources hold; ``qt.k_feas`` marks them."""
    total = 0
    for n in range(cl.node_int.shape[1]):
        if could_ever_fit(cl, cs, c, n):
            qt.k_feas[n] = 1
            total += min(_cap(qt, jobs, j, n, 0, 0, 0), jobs.ints[J_PODS, j])
        else:
            qt.k_feas[n] = 0
    return total


@kernel
def _room(qt: KaiState, jobs: Jobs, js: JobState, j: int, base: int, count: int) -> int:
    """Job ``j``'s pods that fit once the ``count`` victims in ``qt.k_scn`` are gone (base: none gone)."""
    qt.k_tstamp[0] += 1
    stamp = qt.k_tstamp[0]
    touched = 0
    for i in range(count):
        v = qt.k_scn[i]
        p0 = jobs.ints[J_POD0, v]
        for p in range(p0, p0 + int(js.dyn[D_PLACED, v])):
            n = js.pod_node[p]
            if qt.k_tmark[n] != stamp:
                qt.k_tmark[n] = stamp
                qt.k_touch[touched] = n
                touched += 1
                qt.k_freed[0, n] = 0
                qt.k_freed[1, n] = 0
                qt.k_freed[2, n] = 0
            qt.k_freed[0, n] += jobs.ints[J_K, v]
            qt.k_freed[1, n] += jobs.ints[J_CPU, v]
            qt.k_freed[2, n] += jobs.ints[J_MEM, v]
    qt.k_ntouch[0] = touched
    room = base
    pods = jobs.ints[J_PODS, j]
    for i in range(touched):
        n = qt.k_touch[i]
        if qt.k_feas[n] == 0:
            continue
        before = min(_cap(qt, jobs, j, n, 0, 0, 0), pods)
        after = min(_cap(qt, jobs, j, n, qt.k_freed[0, n], qt.k_freed[1, n], qt.k_freed[2, n]), pods)
        room += after - before
    return room


@inline_kernel
def _job_before(js: JobState, jobs: Jobs, a: int, b: int) -> bool:
    # The job order (priority, creation, id: the replay's queue key).
    if js.time[T_KEY1, a] != js.time[T_KEY1, b]:
        return bool(js.time[T_KEY1, a] < js.time[T_KEY1, b])
    if js.time[T_KEY2, a] != js.time[T_KEY2, b]:
        return bool(js.time[T_KEY2, a] < js.time[T_KEY2, b])
    return bool(jobs.ints[J_ID, a] < jobs.ints[J_ID, b])


@inline_kernel
def _cand_before(js: JobState, jobs: Jobs, a: int, b: int) -> bool:
    # Candidates by leaf queue, each queue's in reverse job order.
    qa = jobs.ints[J_TENANT, a]
    qb = jobs.ints[J_TENANT, b]
    if qa != qb:
        return bool(qa < qb)
    return _job_before(js, jobs, b, a)


@kernel
def _sort_candidates(qt: KaiState, jobs: Jobs, js: JobState, count: int) -> None:
    """Bottom-up merge sort of ``qt.k_cand[:count]`` by :func:`_cand_before` (``qt.k_tmp`` as buffer)."""
    width = 1
    in_tmp = False  # whether the sorted runs are in the buffer
    while width < count:
        src = qt.k_tmp if in_tmp else qt.k_cand
        dst = qt.k_cand if in_tmp else qt.k_tmp
        for lo in range(0, count, 2 * width):
            mid = min(lo + width, count)
            hi = min(lo + 2 * width, count)
            a = lo
            b = mid
            for out in range(lo, hi):
                if a < mid and (b >= hi or not _cand_before(js, jobs, src[b], src[a])):
                    dst[out] = src[a]
                    a += 1
                else:
                    dst[out] = src[b]
                    b += 1
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        for i in range(count):
            qt.k_cand[i] = qt.k_tmp[i]


@kernel
def _running_preemptible(qt: KaiState, cl: Cluster, jobs: Jobs, js: JobState) -> int:
    """The running preemptible jobs with pods placed, each once, into ``qt.k_cand``; how many."""
    qt.k_tstamp[0] += 1
    stamp = qt.k_tstamp[0]
    count = 0
    for n in range(cl.node_int.shape[1]):
        pod = js.node_pods[n]
        while pod >= 0:
            v = jobs.pod_job[pod]
            pod = js.pod_next[pod]
            if js.dyn[D_STATUS, v] != S_RUNNING or jobs.ints[J_PREEMPTIBLE, v] == 0:
                continue
            if qt.k_jmark[v] == stamp:
                continue
            qt.k_jmark[v] = stamp
            qt.k_cand[count] = v
            count += 1
    return count


@kernel
def _gather(qt: KaiState, cl: Cluster, jobs: Jobs, js: JobState) -> None:
    """The running preemptible jobs, sorted by leaf queue and reverse job order into ``qt.k_cand``, each
    leaf's run ``qt.k_cand[qt.k_cstart[q] : qt.k_cstart[q + 1]]``."""
    count = _running_preemptible(qt, cl, jobs, js)
    _sort_candidates(qt, jobs, js, count)
    num_leaves = qt.k_cstart.shape[0] - 1
    for q in range(num_leaves + 1):
        qt.k_cstart[q] = 0
    for i in range(count):
        qt.k_cstart[jobs.ints[J_TENANT, qt.k_cand[i]] + 1] += 1
    for q in range(num_leaves):
        qt.k_cstart[q + 1] += qt.k_cstart[q]


@kernel
def _victim_first(
    qt: KaiState, a: int, va: tuple[float, float, float], b: int, vb: tuple[float, float, float]
) -> bool:
    """Whether queue ``a`` (its victims so far holding ``va``) gives its next victim before queue ``b``.

    Notes
    -----
    ``JobsOrderByQueues`` with ``VictimQueue``: the queue order of ``queue_order.go`` reversed, with no
    job (criteria 2 and 4 on the allocation alone) and the dominant share of criterion 5 counted without
    the victims (:func:`gpureplay.engine.queues.kai.session.queue_before` is the allocate order).
    """
    over_a = True
    over_b = True
    for r in range(3):
        if not qt.v_des[r, a] < qt.v_alloc[r, a]:
            over_a = False
        if not qt.v_des[r, b] < qt.v_alloc[r, b]:
            over_b = False
    if over_a != over_b:
        return over_a
    starved_a = True
    starved_b = True
    for r in range(3):
        if not _le(qt.v_alloc[r, a], qt.k_quota[r, a]):
            starved_a = False
        if not _le(qt.v_alloc[r, b], qt.k_quota[r, b]):
            starved_b = False
    if starved_a != starved_b:
        return starved_b
    if qt.v_prio[a] != qt.v_prio[b]:
        return bool(qt.v_prio[a] < qt.v_prio[b])
    zero_a = False
    zero_b = False
    for r in range(3):
        if _allocatable(qt, r, a) == 0 and qt.v_alloc[r, a] > 0:
            zero_a = True
        if _allocatable(qt, r, b) == 0 and qt.v_alloc[r, b] > 0:
            zero_b = True
    if zero_a != zero_b:
        return zero_a
    with_a = dominant_share(qt, a, -va[0], -va[1], -va[2])
    with_b = dominant_share(qt, b, -vb[0], -vb[1], -vb[2])
    if with_a != with_b:
        return with_a > with_b
    share_a = dominant_share(qt, a, 0.0, 0.0, 0.0)
    share_b = dominant_share(qt, b, 0.0, 0.0, 0.0)
    if share_a != share_b:
        return share_a > share_b
    a_le_b = True
    b_le_a = True
    for r in range(3):
        if not _le(_allocatable(qt, r, a), _allocatable(qt, r, b)):
            a_le_b = False
        if not _le(_allocatable(qt, r, b), _allocatable(qt, r, a)):
            b_le_a = False
    if a_le_b and not b_le_a:
        return False
    if b_le_a and not a_le_b:
        return True
    return bool(qt.k_created[a] >= qt.k_created[b])


@inline_kernel
def _min_runtime(qt: KaiState, q: int, vq: int, within: bool) -> float:
    # The minruntime plugin's protection of a job of leaf vq against the preempt action (within) or a
    # reclaim by leaf q.
    return float(qt.k_minrt[qt.k_cstart.shape[0] - 1 if within else q, vq])


@inline_kernel
def _protected(qt: KaiState, jobs: Jobs, js: JobState, q: int, v: int, within: bool) -> bool:
    """Whether running job ``v`` is within its min-runtime against a job of leaf ``q`` (``minruntime.go``
    ``isPreemptMinRuntimeProtected`` / ``isReclaimMinRuntimeProtected``: now before its last start plus the
    min-runtime)."""
    if qt.k_minrt_on[0] == 0:
        return False
    return bool(qt.k_rtnow[0] < js.time[T_START, v] + _min_runtime(qt, q, jobs.ints[J_TENANT, v], within))


@kernel
def _protection_wake(qt: KaiState, cl: Cluster, jobs: Jobs, js: JobState, run: Run, t: float) -> None:
    """Set the loop's wake (``run.clock[X_WAKE]``) to the next time a running preemptible job's min-runtime
    ends for some queue, while jobs are pending (inf otherwise): KAI's periodic sessions would try again
    then, and the replay's event-driven sessions run one."""
    wake = math.inf
    if run.counters[K_NPEND] > 0:
        num_leaves = qt.k_cstart.shape[0] - 1
        for i in range(_running_preemptible(qt, cl, jobs, js)):
            v = qt.k_cand[i]
            b = jobs.ints[J_TENANT, v]
            for a in range(num_leaves + 1):
                if a == b and a < num_leaves:
                    continue  # reclaim is between queues
                if a < num_leaves and qt.v_act[0] & KA_RECLAIM == 0:
                    continue
                if a == num_leaves and qt.v_act[0] & KA_PREEMPT == 0:
                    continue
                end = js.time[T_START, v] + qt.k_minrt[a, b]
                if end > t:
                    wake = min(wake, end)
    run.clock[X_WAKE] = wake


@kernel
def _next_victim(qt: KaiState, jobs: Jobs, js: JobState, j: int, within: bool) -> int:
    """Pop the next victim for job ``j`` (-1: none left): the tree walked from the top by
    :func:`_victim_first`, each queue compared with its best leaf's victims so far plus that leaf's next."""
    num = qt.parent.shape[0]
    num_leaves = qt.k_cstart.shape[0] - 1
    q = jobs.ints[J_TENANT, j]
    for n in range(num + 1):
        qt.k_best[n] = -1
        qt.k_bchild[n] = -1
    for n in range(num):
        if n < num_leaves:
            if within != (n == q):
                continue
            # The leaf's next candidate: still running, of a lower priority within the queue, and past its
            # min-runtime.
            while qt.k_ccur[n] < qt.k_cstart[n + 1]:
                v = qt.k_cand[qt.k_ccur[n]]
                if (
                    js.dyn[D_STATUS, v] == S_RUNNING
                    and (not within or jobs.ints[J_PRIO, v] < jobs.ints[J_PRIO, j])
                    and not _protected(qt, jobs, js, q, v, within)
                ):
                    break
                qt.k_ccur[n] += 1
            if qt.k_ccur[n] >= qt.k_cstart[n + 1]:
                continue
            v = qt.k_cand[qt.k_ccur[n]]
            for r in range(3):
                qt.k_req[r, n] = qt.k_pop[r, n] + _held(jobs, js, v, r)
            qt.k_best[n] = n
        if qt.k_best[n] < 0:
            continue
        p = qt.parent[n]
        up = num if p < 0 else p
        other = int(qt.k_bchild[up])
        leaf = qt.k_best[n]
        if other < 0:
            take = True
        else:
            rival = qt.k_best[other]
            take = _victim_first(
                qt,
                n,
                (qt.k_req[0, leaf], qt.k_req[1, leaf], qt.k_req[2, leaf]),
                other,
                (qt.k_req[0, rival], qt.k_req[1, rival], qt.k_req[2, rival]),
            )
        if take:
            qt.k_bchild[up] = n
            if p >= 0:
                qt.k_best[p] = leaf
    top = qt.k_bchild[num]
    if top < 0:
        return -1
    leaf = qt.k_best[top]
    v = int(qt.k_cand[qt.k_ccur[leaf]])
    qt.k_ccur[leaf] += 1
    for r in range(3):
        qt.k_pop[r, leaf] += _held(jobs, js, v, r)
    return int(v)


@kernel
def _victim_at(qt: KaiState, jobs: Jobs, js: JobState, j: int, within: bool, i: int) -> int:
    """The ``i``-th victim of job ``j``'s victim order (-1: fewer), generated once per job."""
    while qt.k_nseq[0] <= i:
        v = _next_victim(qt, jobs, js, j, within)
        if v < 0:
            return -1
        qt.k_seq[qt.k_nseq[0]] = v
        qt.k_nseq[0] += 1
    return int(qt.k_seq[i])


@kernel
def _leveled(qt: KaiState, a: int, b: int) -> tuple[int, int]:
    """``getLeveledQueues``: the ancestors of ``a`` and ``b`` just below their lowest common one."""
    da = 0
    n = a
    while n >= 0:
        da += 1
        n = qt.parent[n]
    db = 0
    n = b
    while n >= 0:
        db += 1
        n = qt.parent[n]
    while da > db:
        a = qt.parent[a]
        da -= 1
    while db > da:
        b = qt.parent[b]
        db -= 1
    while qt.parent[a] != qt.parent[b]:
        a = qt.parent[a]
        b = qt.parent[b]
    return a, b


@inline_kernel
def _remaining(qt: KaiState, n: int, stamp: int) -> None:
    # The remaining map's entry of queue n starts at its allocation.
    if qt.k_rset[n] != stamp:
        qt.k_rset[n] = stamp
        for r in range(3):
            qt.k_rem[r, n] = qt.v_alloc[r, n]


@inline_kernel
def _ratio(allocated: float, fair: float) -> float:
    # reclaimable.go fairShareSaturationRatio.
    if fair == 0:
        return math.inf if allocated > 0 else 0.0
    if fair == UNLIMITED:
        return 0.0
    return allocated / fair


@kernel
def _involved(qt: KaiState, jobs: Jobs, js: JobState, s: int, r: int, count: int) -> bool:
    """Whether one of the ``count`` victims in ``qt.k_scn`` holds resource ``r`` in queue ``s`` or below it
    (``reclaimable.go`` ``getInvolvedResourcesNames``, gathered up the tree by
    ``subtractReclaimedResources``)."""
    for i in range(count):
        v = qt.k_scn[i]
        if not _held(jobs, js, v, r) > 0:
            continue
        n = jobs.ints[J_TENANT, v]
        while n >= 0:
            if n == s:
                return True
            n = qt.parent[n]
    return False


@kernel
def _reclaimable(
    qt: KaiState, jobs: Jobs, js: JobState, j: int, req: tuple[float, float, float], count: int
) -> bool:
    """``ReclaimScenarioValidator``: whether job ``j`` (requesting ``req``) may take the ``count`` victims
    in ``qt.k_scn`` (``reclaimable.go`` ``Reclaimable`` as released, KAI v0.8.0 to v0.13.0; module
    docstring). The saturation comparison with a sibling covers only the resources involved: those the job
    requests and those the sibling's victims hold (``isFairShareSaturationLowerPerResource``, with KAI's
    default ``relcaimerSaturationMultiplier`` of 1)."""
    q = jobs.ints[J_TENANT, j]
    num_leaves = qt.k_cstart.shape[0] - 1
    qt.k_rstamp[0] += 1
    stamp = qt.k_rstamp[0]
    for e in range(num_leaves):
        for i in range(count):
            v = qt.k_scn[i]
            if jobs.ints[J_TENANT, v] != e:
                continue
            mine, theirs = _leveled(qt, q, e)
            _remaining(qt, theirs, stamp)
            over_allocatable = False
            over_quota = False
            within_quota = True
            for r in range(3):
                if not _le(qt.k_rem[r, theirs], _allocatable(qt, r, theirs)):
                    over_allocatable = True
                if not _le(qt.k_rem[r, theirs], qt.k_quota[r, theirs]):
                    over_quota = True
                if not _le(qt.v_alloc[r, mine] + req[r], qt.k_quota[r, mine]):
                    within_quota = False
            if not (over_allocatable or (within_quota and over_quota)):
                return False
            n = e
            while n >= 0:
                _remaining(qt, n, stamp)
                for r in range(3):
                    qt.k_rem[r, n] -= _held(jobs, js, v, r)
                n = qt.parent[n]
    preemptible = jobs.ints[J_PREEMPTIBLE, j] != 0
    num = qt.parent.shape[0]
    p = q
    while p >= 0:
        for r in range(3):
            mine_r = (qt.k_rem[r, p] if qt.k_rset[p] == stamp else qt.v_alloc[r, p]) + req[r]
            for s in range(num):
                if s == p or qt.k_rset[s] != stamp or qt.parent[s] != qt.parent[p]:
                    continue
                fair_p = qt.v_des[r, p]
                fair_s = qt.v_des[r, s]
                if fair_p == UNLIMITED and fair_s == UNLIMITED:
                    continue
                ratio_p = _ratio(mine_r, fair_p)
                ratio_s = _ratio(qt.k_rem[r, s], fair_s)
                # The involvement is looked up last: a resource neither the job nor s's victims use is
                # not compared.
                if (
                    ratio_p > 1
                    and fair_s > 0
                    and ratio_p >= ratio_s
                    and (req[r] > 0 or _involved(qt, jobs, js, s, r, count))
                ):
                    return False
            if not preemptible and not _le(qt.k_np[r, p] + req[r], qt.k_quota[r, p]):
                return False
        p = qt.parent[p]
    return True


@kernel
def _within_capacity(qt: KaiState, jobs: Jobs, js: JobState, j: int, k: int, count: int) -> bool:
    """``IsJobOverQueueCapacity`` for ``k`` of job ``j``'s pods once the ``count`` victims in ``qt.k_scn``
    left their queues (``common.AllocateJob`` checks it on the simulated state): the kernel
    :func:`gpureplay.engine.queues.kai.session.within_capacity` with the victims' allocations gone and ``k``
    pods."""
    q = jobs.ints[J_TENANT, j]
    qt.k_rstamp[0] += 1
    stamp = qt.k_rstamp[0]
    for i in range(count):
        v = qt.k_scn[i]
        n = jobs.ints[J_TENANT, v]
        while n >= 0:
            _remaining(qt, n, stamp)
            for r in range(3):
                qt.k_rem[r, n] -= _held(jobs, js, v, r)
            n = qt.parent[n]
    preemptible = jobs.ints[J_PREEMPTIBLE, j] != 0
    n = q
    while n >= 0:
        for r in range(3):
            need = _job_kai(jobs, j, k, r)
            if need == 0:
                continue
            quota = qt.k_quota[r, n]
            limit = qt.k_limit[r, n]
            held = qt.k_rem[r, n] if qt.k_rset[n] == stamp else qt.v_alloc[r, n]
            if limit != UNLIMITED and limit < held + need:
                return False
            if not preemptible and quota != UNLIMITED and quota < qt.k_np[r, n] + need:
                return False
        n = qt.parent[n]
    return True


@kernel
def _scenario_ok(
    qt: KaiState,
    jobs: Jobs,
    js: JobState,
    j: int,
    req: tuple[float, float, float],
    k: int,
    base: int,
    count: int,
    within: bool,
) -> bool:
    # The scenario in qt.k_scn[:count] places k of j's pods and passes the action's validator.
    if not within:
        for i in range(count):
            if qt.k_poison[jobs.ints[J_TENANT, qt.k_scn[i]]] != 0:
                return False  # a victim no strategy allows: the validator refuses the scenario
    if not _within_capacity(qt, jobs, js, j, k, count):
        return False
    if _room(qt, jobs, js, j, base, count) < k:
        return False
    return within or _reclaimable(qt, jobs, js, j, req, count)


@kernel
def _probe(
    qt: KaiState,
    jobs: Jobs,
    js: JobState,
    j: int,
    req: tuple[float, float, float],
    k: int,
    base: int,
    within: bool,
) -> int:
    """``solvePartialJob`` for ``k`` of job ``j``'s pods from the recorded victims ``qt.k_rec``: the solved
    scenario's size (its victims in ``qt.k_scn``), or -1."""
    nrec = qt.k_nrec[0]
    qt.k_tstamp[0] += 1
    rec = qt.k_tstamp[0]
    for i in range(nrec):
        qt.k_scn[i] = qt.k_rec[i]
        qt.k_jmark[qt.k_rec[i]] = rec
    if nrec > 0 and _scenario_ok(qt, jobs, js, j, req, k, base, nrec, within):
        return int(nrec)
    added = 0
    entries = 0
    qt.k_tstamp[0] += 1
    listed = qt.k_tstamp[0]
    i = 0
    while True:
        v = _victim_at(qt, jobs, js, j, within, i)
        i += 1
        if v < 0:
            return -1
        if qt.k_jmark[v] == rec:
            continue  # a recorded victim: no new scenario
        added += 1
        # Append v to the added-victim list of each of its nodes, then try those nodes in index order.
        p0 = jobs.ints[J_POD0, v]
        first = -1
        for p in range(p0, p0 + int(js.dyn[D_PLACED, v])):
            n = js.pod_node[p]
            if qt.k_nstamp[n] == listed and qt.k_ejob[qt.k_ntail[n]] == v:
                continue  # v is already on n's list
            qt.k_ejob[entries] = v
            qt.k_enext[entries] = -1
            if qt.k_nstamp[n] != listed:
                qt.k_nstamp[n] = listed
                qt.k_nhead[n] = entries
            else:
                qt.k_enext[qt.k_ntail[n]] = entries
            qt.k_ntail[n] = entries
            entries += 1
            if first < 0 or n < first:
                first = n
        last = -1
        while True:
            n = -1
            for p in range(p0, p0 + int(js.dyn[D_PLACED, v])):
                m = js.pod_node[p]
                if m > last and (n < 0 or m < n):
                    n = m
            if n < 0:
                break
            last = n
            count = nrec
            e = qt.k_nhead[n]
            while e >= 0:
                qt.k_scn[count] = qt.k_ejob[e]
                count += 1
                e = qt.k_enext[e]
            if _scenario_ok(qt, jobs, js, j, req, k, base, count, within):
                return int(count)


@kernel
def _record(qt: KaiState, count: int) -> None:
    # A solved probe's victims become the recorded ones.
    for i in range(count):
        qt.k_rec[i] = qt.k_scn[i]
    qt.k_nrec[0] = count


@kernel
def _solve(
    qt: KaiState, jobs: Jobs, js: JobState, j: int, req: tuple[float, float, float], base: int, within: bool
) -> int:
    """``JobSolver.Solve`` for job ``j``: the victims of its whole gang (in ``qt.k_scn``), or -1.

    Notes
    -----
    ``job_solver.go`` ``searchMaxSolvableK``: probes at ``k`` = 1, 2, 4, ... (capped at the job's pods)
    until one fails, then by halves between the last solved and the first failed; each solved probe records
    its victims for the next; then the whole job is probed from the last recorded victims.
    """
    n = jobs.ints[J_PODS, j]
    qt.k_nrec[0] = 0
    qt.k_nseq[0] = 0
    lo = 0
    hi = 0
    k = 1
    while True:  # exponential phase
        got = _probe(qt, jobs, js, j, req, k, base, within)
        if got >= 0:
            _record(qt, got)
            lo = k
            if k == n:
                break
            k = min(2 * k, n)
            continue
        hi = k
        break
    if lo < n and hi - lo > 1:
        while hi - lo > 1:  # binary phase
            k = (lo + hi) // 2
            got = _probe(qt, jobs, js, j, req, k, base, within)
            if got >= 0:
                _record(qt, got)
                lo = k
            else:
                hi = k
    if lo == 0:
        return -1
    return _probe(qt, jobs, js, j, req, n, base, within)


@kernel
def _may_reclaim(qt: KaiState, jobs: Jobs, j: int, q: int, req: tuple[float, float, float]) -> bool:
    # reclaimable.go CanReclaimResources: the queue within its fair share with the job; a non-preemptible
    # job also keeps its non-preemptible allocation within quota.
    for r in range(3):
        if not _le(qt.v_alloc[r, q] + req[r], qt.v_des[r, q]):
            return False
        if jobs.ints[J_PREEMPTIBLE, j] == 0 and not _le(qt.k_np[r, q] + req[r], qt.k_quota[r, q]):
            return False
    return True


@kernel
def _may_preempt(qt: KaiState, jobs: Jobs, j: int, q: int, req: tuple[float, float, float]) -> bool:
    # IsNonPreemptibleJobOverQueueQuota: a non-preemptible job keeps every level's non-preemptible
    # allocation within quota.
    if jobs.ints[J_PREEMPTIBLE, j] != 0:
        return True
    n = q
    while n >= 0:
        for r in range(3):
            if req[r] > 0 and qt.k_quota[r, n] != UNLIMITED and qt.k_quota[r, n] < qt.k_np[r, n] + req[r]:
                return False
        n = qt.parent[n]
    return True


@kernel
def _reclaim_hope(qt: KaiState, run: Run, q: int, req: tuple[float, float, float]) -> bool:
    """Whether some running job of another leaf queue could be a victim of a job of queue ``q`` requesting
    ``req``: its queue passes a strategy before losing anything (``qt.k_poison`` marks the leaves that do
    not; the validator refuses any scenario with one of their jobs, as a queue's remaining share only falls
    within a scenario)."""
    hope = False
    num_leaves = run.queues.shape[1]
    for e in range(num_leaves):
        qt.k_poison[e] = 1
        if e == q:
            continue
        mine, theirs = _leveled(qt, q, e)
        over_allocatable = False
        over_quota = False
        within_quota = True
        for r in range(3):
            if not _le(qt.v_alloc[r, theirs], _allocatable(qt, r, theirs)):
                over_allocatable = True
            if not _le(qt.v_alloc[r, theirs], qt.k_quota[r, theirs]):
                over_quota = True
            if not _le(qt.v_alloc[r, mine] + req[r], qt.k_quota[r, mine]):
                within_quota = False
        if over_allocatable or (within_quota and over_quota):
            qt.k_poison[e] = 0
            if run.queues[QU_RUNNING, e] > 0:
                hope = True
    return hope


@inline_kernel
def _preempt_hope(sc: Scratch, jobs: Jobs, j: int) -> bool:
    # Some preemptible job of a lower priority holds pods (``sc.prio_jobs`` counts them per priority rank).
    for rank in range(jobs.ints[J_PRIO_RANK, j]):  # noqa: SIM110 (no generators in kernels)
        if sc.prio_jobs[rank] > 0:
            return True
    return False


@kernel
def _may(
    qt: KaiState,
    sc: Scratch,
    run: Run,
    jobs: Jobs,
    j: int,
    q: int,
    req: tuple[float, float, float],
    within: bool,
) -> bool:
    """Whether job ``j`` of queue ``q`` takes part in the action and some victim could serve it."""
    if within:
        return _may_preempt(qt, jobs, j, q, req) and _preempt_hope(sc, jobs, j)
    return _may_reclaim(qt, jobs, j, q, req) and _reclaim_hope(qt, run, q, req)


@kernel
def _move(qt: KaiState, q: int, r: int, amount: float, np_amount: float) -> None:
    # Queue q's allocation (and non-preemptible allocation) moves by the amounts, and its ancestors'.
    n = q
    while n >= 0:
        qt.v_alloc[r, n] += amount
        qt.k_np[r, n] += np_amount
        n = qt.parent[n]


@kernel
def _pipeline(qt: KaiState, cl: Cluster, run: Run, jobs: Jobs, js: JobState, j: int, count: int) -> None:
    """Commit's node accounting: the victims' pods free their nodes, then job ``j``'s pods take room, the
    victims' nodes first (in the order touched), then the other feasible nodes in index order; each pod is
    nominated there (``NOM_ALL``: hidden from every other class until the job starts, or until the end of
    the first session after its victims are gone), as KAI's allocate pipelines a pending job on releasing
    resources session after session."""
    end_nomination(cl, run, j)
    for i in range(count):
        v = qt.k_scn[i]
        p0 = jobs.ints[J_POD0, v]
        for p in range(p0, p0 + int(js.dyn[D_PLACED, v])):
            n = js.pod_node[p]
            qt.k_fut[0, n] += jobs.ints[J_K, v]
            qt.k_fut[1, n] += jobs.ints[J_CPU, v]
            qt.k_fut[2, n] += jobs.ints[J_MEM, v]
    left = jobs.ints[J_PODS, j]
    touched = qt.k_ntouch[0]
    for x in range(touched + cl.node_int.shape[1]):
        if left == 0:
            break
        n = qt.k_touch[x] if x < touched else x - touched
        if qt.k_feas[n] == 0:
            continue
        take = min(left, _cap(qt, jobs, j, n, 0, 0, 0))
        if take <= 0:
            continue
        qt.k_fut[0, n] -= take * jobs.ints[J_K, j]
        qt.k_fut[1, n] -= take * jobs.ints[J_CPU, j]
        qt.k_fut[2, n] -= take * jobs.ints[J_MEM, j]
        left -= take
        for _ in range(take):
            e = cl.nominees[NOM_JOB, 0] + 1
            cl.nominees[NOM_JOB, e] = j
            cl.nominees[NOM_NODE, e] = n
            cl.nominees[NOM_PRIO, e] = NOM_ALL
            cl.nominees[NOM_CPU, e] = jobs.ints[J_CPU, j]
            cl.nominees[NOM_MEM, e] = jobs.ints[J_MEM, j]
            cl.nominees[NOM_MILLI, e] = jobs.ints[J_MILLI, j]
            cl.nominees[NOM_WHOLE, e] = jobs.ints[J_K, j]
            cl.nominees[NOM_CLASS, e] = jobs.ints[J_CLASS, j]
            cl.nominees[NOM_JOB, 0] = e


@kernel
def _action(
    qt: KaiState,
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
    within: bool,
) -> int:
    """One of the two actions (``within``: preempt, else reclaim); returns the victims evicted."""
    num_leaves = qt.k_cstart.shape[0] - 1
    # Whether any pending class may take part at all before walking the nodes (a class's jobs ask alike).
    anyone = False
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        cursor_reset(cs, pend, c)
        j = cursor_job(jobs, cs, js, pend, c)
        if j < 0:
            continue
        pods = cs.ints[C_PODS, c]
        req = (_job_kai(jobs, j, pods, 0), _job_kai(jobs, j, pods, 1), _job_kai(jobs, j, pods, 2))
        if _may(qt, sc, run, jobs, j, cs.ints[C_TENANT, c], req, within):
            anyone = True
            break
    if not anyone:
        return 0
    for n in range(cl.node_int.shape[1]):
        qt.k_fut[0, n] = cl.node_free[F_WHOLE, n]
        qt.k_fut[1, n] = cl.node_free[F_CPU, n]
        qt.k_fut[2, n] = cl.node_free[F_MEM, n]
    for e in range(1, cl.nominees[NOM_JOB, 0] + 1):
        # Earlier preemptors' pipelined pods keep their room.
        n = cl.nominees[NOM_NODE, e]
        qt.k_fut[0, n] -= cl.nominees[NOM_WHOLE, e]
        qt.k_fut[1, n] -= cl.nominees[NOM_CPU, e]
        qt.k_fut[2, n] -= cl.nominees[NOM_MEM, e]
    gathered = False
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        cursor_reset(cs, pend, c)
        j = cursor_job(jobs, cs, js, pend, c)
        if j >= 0:
            push_class_head(qt, jobs, js, cs.ints[C_TENANT, c], c, j)
    evicted = 0
    while True:
        q = _pick(qt, cs)
        if q < 0:
            break
        c = qt.hi[1, qt.seg[q]]
        j = cursor_job(jobs, cs, js, pend, c)
        cursor_step(jobs, cs, js, pend, c, j)
        drop_top(qt, q)
        pods = cs.ints[C_PODS, c]
        req = (_job_kai(jobs, j, pods, 0), _job_kai(jobs, j, pods, 1), _job_kai(jobs, j, pods, 2))
        solved = -1
        if js.dyn[D_WAITING, j] > 0:
            solved = -2  # pipelined on its victims' resources: not pending
        elif _may(qt, sc, run, jobs, j, q, req, within):
            if not gathered:
                _gather(qt, cl, jobs, js)
                gathered = True
            for x in range(num_leaves):
                qt.k_ccur[x] = qt.k_cstart[x]
                for r in range(3):
                    qt.k_pop[r, x] = 0.0
            base = _base_room(qt, cl, cs, jobs, j, c)
            solved = _solve(qt, jobs, js, j, req, base, within)
        if solved == -1:
            continue  # the class's other jobs are no easier: they leave the action with it
        if solved >= 0:
            _pipeline(qt, cl, run, jobs, js, j, solved)
            for i in range(solved):
                v = qt.k_scn[i]
                vq = jobs.ints[J_TENANT, v]
                for r in range(3):
                    _move(qt, vq, r, -_held(jobs, js, v, r), 0.0)
                evict_job(params, jobs, cs, cl, js, pend, tm, sc, run, v, t, j)
                qt.v_term[qt.v_nterm[0]] = v
                qt.v_nterm[0] += 1
                evicted += 1
            np_share = 1.0 if jobs.ints[J_PREEMPTIBLE, j] == 0 else 0.0
            for r in range(3):
                _move(qt, q, r, req[r], req[r] * np_share)
        nxt = cursor_job(jobs, cs, js, pend, c)
        if nxt >= 0:
            push_class_head(qt, jobs, js, q, c, nxt)
    for q in range(run.queues.shape[1]):
        qt.hsize[q] = 0
    return evicted


@kernel
def kai_evict(
    qt: KaiState,
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
    """KAI's reclaim then preempt action at ``t``, as ``qt.v_act[0]`` lists them; returns the victims evicted.

    Notes
    -----
    NVIDIA/KAI-Scheduler ``actions/reclaim/reclaim.go``, ``actions/preempt/preempt.go`` and the job solver
    (module docstring; reference §4.3). The session's queue state (``qt.v_alloc``, ``qt.k_np``, fair shares
    ``qt.v_des``) is allocate's, moved by each commit as KAI's event handlers move it.
    """
    evicted = 0
    qt.k_rtnow[0] = t
    if qt.v_act[0] & KA_RECLAIM != 0:
        evicted += _action(qt, params, jobs, cs, cl, js, pend, tm, sc, run, t, False)
    if qt.v_act[0] & KA_PREEMPT != 0:
        evicted += _action(qt, params, jobs, cs, cl, js, pend, tm, sc, run, t, True)
    for q in range(run.queues.shape[1]):
        # The session's dominant shares once its actions moved allocations (pipelined jobs count).
        run.queues[QU_SHARE, q] = math.floor(dominant_share(qt, q, 0.0, 0.0, 0.0) * 1e6 + 0.5)
    if qt.k_minrt_on[0] != 0:
        _protection_wake(qt, cl, jobs, js, run, t)
    return evicted


__all__ = ["KA_PREEMPT", "KA_RECLAIM", "kai_evict"]
