"""Kueue's quota admission and its classical scheduling cycle (``scheduler.queues: kueue``).

Nodes ``0 .. T-1`` of the :class:`~gpureplay.engine.state.bundles.KueueState` tree are the ClusterQueues
(tenant ``q`` is node ``q``); the cohorts follow, children before parents. A ClusterQueue's usage is what its
jobs' placed pods request (``run.queues`` ``QU_MILLI`` / ``QU_CPU`` / ``QU_MEM``): Kueue reserves a workload's
quota at admission and frees it when the workload finishes or its eviction completes, which in the replay's
gang mode is exactly when the pods are placed and released. The plain-Python statement of the same rules is
:mod:`gpureplay.queues.kueue_quota` (the reference simulator uses it).
"""

from __future__ import annotations

import math

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.jobs import start_job
from gpureplay.engine.pending import cursor_job, cursor_reset, cursor_step, key_before
from gpureplay.engine.placement.gang import try_gang
from gpureplay.engine.queues.kueue.flavor_modes import AM_FIT, AM_NO_FIT, assign_by_modes
from gpureplay.engine.queues.kueue.pods_ready import admit_by_quota, blocked, place_admitted
from gpureplay.engine.queues.kueue.preempt import has_topology, kueue_preempt, list_admitted
from gpureplay.engine.queues.kueue.tree import (
    assign_flavors,
    borrow_height,
    drop_top,
    fits_quota,
    flavor_mask,
    local_quota,
    node_usage,
    push_class_head,
    queue_use,
    row_amount,
)
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    FitIndex,
    Jobs,
    JobState,
    KueueState,
    Numa,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
    Topology,
)
from gpureplay.engine.state.layout import (
    C_TENANT,
    CD_FAIL,
    D_STATUS,
    FP_MODES,
    J_CAN_PREEMPT,
    J_CLASS,
    J_TENANT,
    K_NACTIVE,
    K_VERSION,
    P_QUOTA_ONLY,
    S_QUEUED,
    S_RUNNING,
    T_ADMITTED,
)


@kernel
def quota_fits(qt: KueueState, jobs: Jobs, js: JobState, run: Run, j: int) -> bool:
    """Whether job ``j``'s ClusterQueue can admit its whole request now, in the flavors assigned to it
    (:func:`gpureplay.engine.queues.kueue.tree.assign_flavors`; each covered resource fits).

    Notes
    -----
    Kueue's flavor assigner (``flavorassigner.go`` ``fitsResourceQuota``): a request fits when it is at
    most what the ClusterQueue has available, nominal quota and what the cohort can lend together.
    """
    return fits_quota(qt, jobs, js, run, j, True)


@kernel
def borrow_level(qt: KueueState, jobs: Jobs, js: JobState, run: Run, j: int) -> int:
    """The borrowing level of admitting job ``j`` now in its assigned flavors: the highest over its covered
    quota rows of :func:`gpureplay.engine.queues.kueue.tree.borrow_height` (0: within nominal quota).

    Notes
    -----
    kubernetes-sigs/kueue ``flavorassigner.go`` ``Assignment.Borrowing`` (an integer since v0.12.0), which
    ``scheduler.go``'s classical iterator compares before priority. Plain statement:
    :func:`gpureplay.queues.kueue_quota.borrow_level`.
    """
    q = jobs.ints[J_TENANT, j]
    if qt.parent[q] < 0:
        return 0
    level = 0
    for r in range(qt.nominal.shape[0]):
        need = row_amount(jobs, js, j, r)
        if need > 0 and qt.covered[r, q] != 0 and queue_use(run, r, q) + need > qt.nominal[r, q]:
            node_usage(qt, run, r)
            level = max(level, borrow_height(qt, r, q, need))
    return level


@kernel
def place_in_flavors(
    qt: KueueState,
    tas: Topology | None,
    numa: Numa | None,
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
    j: int,
    t: float,
) -> bool:
    """Place job ``j`` as a gang on the nodes its assigned flavors select (:func:`try_gang`).

    Kueue injects each assigned flavor's ``nodeLabels`` into the pods' node selector; the replay narrows
    the class's allowed GPU models for the attempt.
    """
    if qt.flv_on[0] == 0:
        return try_gang(tas, numa, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t)
    c = jobs.ints[J_CLASS, j]
    allowed = cs.mask[c]
    cs.mask[c] = allowed & flavor_mask(qt, jobs, js, j)
    placed = try_gang(tas, numa, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t)
    cs.mask[c] = allowed
    return placed


@inline_kernel
def _entry_before(qt: KueueState, jobs: Jobs, js: JobState, a: int, b: int) -> bool:
    # Classical iterator: lower borrowing level first (0: not borrowing), then the queue key (priority, then
    # FIFO timestamp), then id.
    if qt.borrowing[a] != qt.borrowing[b]:
        return bool(qt.borrowing[a] < qt.borrowing[b])
    return key_before(js, jobs, qt.entries[a], qt.entries[b])


@kernel
def _drs(qt: KueueState, x: int) -> tuple[float, float]:
    # fair_sharing.go dominantResourceShare of node x at usage qt.path_used: (weighted, unweighted).
    # B_r sums the borrowing over the flavors of resource r (quota rows r, r + 3, ...); qt.lendable is L_r.
    borrowing = False
    ratio = 0.0
    for r in range(3):
        borrowed_r = 0
        for row in range(r, qt.nominal.shape[0], 3):
            borrowed = qt.path_used[row, x] - qt.subtree[row, x]
            if qt.present[row, x] != 0 and borrowed > 0:
                borrowing = True
                borrowed_r += borrowed
        if borrowed_r > 0 and qt.lendable[r, x] > 0:
            ratio = max(ratio, borrowed_r * 1000.0 / float(qt.lendable[r, x]))
    if not borrowing:
        return 0.0, 0.0
    if qt.weight[x] == 0.0:
        return math.inf, ratio
    return (0.0 if ratio == 0.0 else ratio / qt.weight[x]), ratio


@kernel
def _path_shares(qt: KueueState, jobs: Jobs, js: JobState, i: int) -> None:
    """``qt.share[i, p]``: the share of entry ``i``'s node below ``p`` on its path, its workload admitted.

    Notes
    -----
    Kueue's ``computeDRS`` (``pkg/scheduler/fair_sharing_iterator.go``): the workload's usage is added to
    its ClusterQueue, then each node's share on the path to the root is what its parent's tournament
    compares. ``qt.used`` holds every node's usage (:func:`node_usage`, all resources).
    """
    j = qt.entries[i]
    x = jobs.ints[J_TENANT, j]
    rows = qt.nominal.shape[0]
    for r in range(rows):
        qt.path_used[r, x] = qt.used[r, x] + row_amount(jobs, js, j, r)
    p = qt.parent[x]
    while p >= 0:
        qt.share[i, p], qt.share2[i, p] = _drs(qt, x)
        for r in range(rows):
            before = max(0, int(qt.used[r, x] - local_quota(qt, r, x)))
            after = max(0, int(qt.path_used[r, x] - local_quota(qt, r, x)))
            qt.path_used[r, p] = qt.used[r, p] - before + after
        x = p
        p = qt.parent[x]


@inline_kernel
def _fairer(qt: KueueState, jobs: Jobs, js: JobState, a: int, b: int, p: int) -> bool:
    # Tournament order at cohort p (entryComparer.less, CompareDRS): lower share (a zero-weight borrower
    # last, among them lower unweighted ratio), then higher priority, then FIFO, then job id.
    if qt.share[a, p] != qt.share[b, p]:
        return bool(qt.share[a, p] < qt.share[b, p])
    if math.isinf(qt.share[a, p]) and qt.share2[a, p] != qt.share2[b, p]:
        return bool(qt.share2[a, p] < qt.share2[b, p])
    return key_before(js, jobs, qt.entries[a], qt.entries[b])


@kernel
def tournament(qt: KueueState, jobs: Jobs, js: JobState, run: Run, first: int, n: int) -> int:
    """The entry Kueue's fair sharing considers next among the round's entries ``first .. n-1``.

    ``qt.entry_of`` maps each of their ClusterQueues to its entry.

    Notes
    -----
    ``runTournament`` (``pkg/scheduler/fair_sharing_iterator.go``): at each cohort, children before
    parents, the child whose share with its candidate workload admitted is lowest wins (ties: priority,
    then FIFO); the winner of a child cohort is its candidate at the next level. Entries of different root
    cohorts (and of ClusterQueues without a cohort) never compete for quota; Kueue takes them in no set
    order, the replay in queue order (priority, FIFO, job id).
    """
    for r in range(qt.nominal.shape[0]):
        node_usage(qt, run, r)
    num_cq = run.queues.shape[1]
    num_nodes = qt.parent.shape[0]
    for i in range(first, n):
        _path_shares(qt, jobs, js, i)
    for x in range(num_nodes):
        qt.winner[x] = -1
    best = -1
    for x in range(num_nodes):
        cand = qt.entry_of[x] if x < num_cq else qt.winner[x]
        if cand < 0:
            continue
        p = qt.parent[x]
        if p < 0:
            if best < 0 or key_before(js, jobs, qt.entries[cand], qt.entries[best]):
                best = cand
        elif qt.winner[p] < 0 or _fairer(qt, jobs, js, cand, qt.winner[p], p):
            qt.winner[p] = cand
    return best


@inline_kernel
def _push_class(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: KueueState, q: int, c: int) -> None:
    # Class c's cursor job into ClusterQueue q's heap.
    j = cursor_job(jobs, cs, js, pend, c)
    if j >= 0:
        push_class_head(qt, jobs, js, q, c, j)


@kernel
def _head(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: KueueState, run: Run, q: int) -> int:
    """ClusterQueue ``q``'s head: the first job of its live classes in queue order (-1: none).

    A class set aside at this release version (its quota or its placement failed) is dropped whole: every
    job of it would be set aside too (same ClusterQueue, same request; usage only grows until a release).
    """
    version = run.counters[K_VERSION]
    while qt.hsize[q] > 0:
        c = qt.hi[1, qt.seg[q]]
        if pend.cls[CD_FAIL, c] != version:
            return cursor_job(jobs, cs, js, pend, c)
        drop_top(qt, q)
    return -1


@kernel
def _set_aside(pend: Pending, qt: KueueState, run: Run, q: int, c: int, block: bool) -> None:
    # BestEffortFIFO: the head's class leaves the cycle (known inadmissible until a release);
    # StrictFIFO, or a head that preempted (Kueue keeps it as its queue's head until admitted): the
    # ClusterQueue takes nothing more until a release.
    pend.cls[CD_FAIL, c] = run.counters[K_VERSION]
    if block or qt.strict[q] != 0:
        qt.blocked[q] = run.counters[K_VERSION]
        qt.hsize[q] = 0
    else:
        drop_top(qt, q)


@kernel
def _fill_heaps(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, qt: KueueState, run: Run) -> None:
    # Every live pending class's head into its ClusterQueue's heap (O(classes), not O(jobs)).
    version = run.counters[K_VERSION]
    for q in range(run.queues.shape[1]):
        qt.hsize[q] = 0
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        q = cs.ints[C_TENANT, c]
        if pend.cls[CD_FAIL, c] == version or qt.blocked[q] == version:
            continue
        cursor_reset(cs, pend, c)
        _push_class(jobs, cs, js, pend, qt, q, c)


@kernel
def kueue_cycle(
    qt: KueueState,
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
    """Kueue's scheduling at ``t`` (no preemption); returns jobs started or rejected.

    Notes
    -----
    kubernetes-sigs/kueue ``pkg/scheduler/scheduler.go`` (reference §4.2), one Kueue cycle per round,
    rounds repeated until every ClusterQueue's pending jobs are admitted or set aside:

    1. heads: the first job of each ClusterQueue not yet admitted or set aside (its queue order:
       priority, then FIFO timestamp); a job whose ClusterQueue already set aside a job of the same
       request at this release version is passed over (it would be set aside too);
    2. nominate against the usage at the round's start: a head whose request does not fit its
       ClusterQueue's available quota is inadmissible and set aside until the next release
       (``BestEffortFIFO``); under ``StrictFIFO`` it blocks its ClusterQueue until then;
    3. order the nominated heads: the classical iterator takes the lower borrowing level first
       (:func:`borrow_level`, 0 when not borrowing), then priority, then FIFO; under fair sharing the
       :func:`tournament` picks each next head at the current usage;
    4. admit in that order against the updated usage: a head that no longer fits (an earlier admission
       took the room) stays head for the next round; one that fits is placed as a gang (quota and
       placement at one instant, as under Kueue's topology-aware admission); a placement failure sets
       it aside.

    Under ``kueue_admission: quota`` step 4 reserves the quota alone
    (:func:`gpureplay.engine.queues.kueue.pods_ready.admit_by_quota`) and kube-scheduler then places the
    admitted jobs' pods one by one (:func:`gpureplay.engine.queues.kueue.pods_ready.place_admitted`); under
    ``waitForPodsReady``'s ``blockAdmission`` nothing more is admitted while an admitted job's pods are not
    all placed.
    """
    quota_only = params.codes[P_QUOTA_ONLY] != 0
    changes = 0
    if quota_only and blocked(params, qt):
        # blockAdmission: the admitted job's pods first; admissions resume once it is Ready.
        changes += place_admitted(params, qt, jobs, cs, cl, ix, js, pend, tm, sc, run, t)
        if blocked(params, qt):
            return changes
    _fill_heaps(jobs, cs, js, pend, qt, run)
    num_cq = run.queues.shape[1]
    fair = qt.fair[0] != 0
    while True:
        n = 0
        heads = 0
        for q in range(num_cq):
            j = _head(jobs, cs, js, pend, qt, run, q)
            if j < 0:
                continue
            heads += 1
            mode = AM_FIT
            if qt.flv_policy[q] & FP_MODES != 0 and jobs.ints[J_CAN_PREEMPT, j] != 0:
                # A preempting ClusterQueue with several flavors in a group weighs their preemption modes.
                mode = assign_by_modes(qt, params, jobs, cs, cl, js, run, j)
                fits = mode == AM_FIT
            else:
                fits = assign_flavors(qt, jobs, js, run, j) and quota_fits(qt, jobs, js, run, j)
            if not fits:
                # A preemptor's queue waits for its victims (their release ends the block).
                preempted = (
                    qt.pre_on[0] != 0
                    and mode != AM_NO_FIT
                    and kueue_preempt(qt, tas, params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
                )
                _set_aside(pend, qt, run, q, jobs.ints[J_CLASS, j], preempted)
                continue
            qt.entries[n] = j
            qt.entry_cls[n] = jobs.ints[J_CLASS, j]
            qt.borrowing[n] = borrow_level(qt, jobs, js, run, j)
            n += 1
        if heads == 0:
            break
        if not fair:
            # Insertion sort: at most one entry per ClusterQueue.
            for i in range(1, n):
                k = i
                while k > 0 and _entry_before(qt, jobs, js, k, k - 1):
                    qt.entries[k], qt.entries[k - 1] = qt.entries[k - 1], qt.entries[k]
                    qt.borrowing[k], qt.borrowing[k - 1] = qt.borrowing[k - 1], qt.borrowing[k]
                    k -= 1
        for i in range(n):
            if fair:
                # The tournament picks the next entry at the current usage; it moves to position i.
                for k in range(i, n):
                    qt.entry_of[jobs.ints[J_TENANT, qt.entries[k]]] = k
                w = tournament(qt, jobs, js, run, i, n)
                for k in range(i, n):
                    qt.entry_of[jobs.ints[J_TENANT, qt.entries[k]]] = -1
                qt.entries[i], qt.entries[w] = qt.entries[w], qt.entries[i]
            j = qt.entries[i]
            q = jobs.ints[J_TENANT, j]
            c = jobs.ints[J_CLASS, j]
            if not quota_fits(qt, jobs, js, run, j):
                continue  # an admission before it in this round took the room: head again next round
            # (A class set aside at this release version never reaches here: _head drops it.)
            if quota_only:
                admit_by_quota(params, qt, jobs, cs, js, pend, tm, sc, run, j, t)
                list_admitted(qt, jobs, j)
                changes += 1
                drop_top(qt, q)
                cursor_step(jobs, cs, js, pend, c, j)
                _push_class(jobs, cs, js, pend, qt, q, c)
                if blocked(params, qt):
                    # blockAdmission: its pods are placed now; unless all are, nothing else is admitted.
                    changes += place_admitted(params, qt, jobs, cs, cl, ix, js, pend, tm, sc, run, t)
                    if blocked(params, qt):
                        return changes
                continue
            if place_in_flavors(qt, tas, numa, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t):
                start_job(params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
                if js.dyn[D_STATUS, j] == S_RUNNING:
                    js.time[T_ADMITTED, j] = t  # admitted as placed (preemption orders by it)
                    list_admitted(qt, jobs, j)
            elif js.dyn[D_STATUS, j] == S_QUEUED:
                # Under TAS the quota fits and the topology assignment does not: Kueue's Preempt mode
                # (flavorassigner.go), so a preempting ClusterQueue looks for targets that make both fit.
                preempted = (
                    qt.pre_on[0] != 0
                    and has_topology(tas)
                    and kueue_preempt(qt, tas, params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
                )
                _set_aside(pend, qt, run, q, c, preempted)
                continue
            # Started, or placed and rejected by a kubelet (it left the queue): its class's next job.
            changes += 1
            drop_top(qt, q)
            cursor_step(jobs, cs, js, pend, c, j)
            _push_class(jobs, cs, js, pend, qt, q, c)
    if quota_only:
        changes += place_admitted(params, qt, jobs, cs, cl, ix, js, pend, tm, sc, run, t)
    # No end_stale_nominations: a queue model refuses preemption, so no pod holds a nomination.
    return changes
