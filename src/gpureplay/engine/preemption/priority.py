"""Priority preemption: kube-scheduler's DefaultPreemption, with whole-job victims.

When a pending job cannot be placed, and it may preempt (its PriorityClass's
``preemptionPolicy`` is not ``Never``) and it is not already waiting for
victims it evicted, the engine looks for running (or pod-holding) jobs of
lower priority to evict (docs/systems.md, "kube-scheduler",
``pkg/scheduler/framework/preemption/preemption.go``):

1. the job's unplaced pods are placed one by one on a *trial* state; a pod
   that fits nowhere runs the per-node search below and, on the node chosen,
   its victims leave the trial state and the pod is placed there;
2. per node (candidate nodes from a random offset, stopping once
   ``max(minCandidateNodesAbsolute, numNodes x minCandidateNodesPercentage /
   100)`` feasible nodes were found; nodes the pod cannot fit even empty are
   skipped, "UnschedulableAndUnresolvable"): remove every eligible pod of
   lower priority; if the pod still does not fit, the node is infeasible;
   otherwise reprieve the removed jobs from the most important (higher
   priority, then earlier start) while the pod still fits; the rest are the
   node's victims;
3. the node is chosen by, in order: lowest highest-victim priority, smallest
   sum of (priority + 2^31), fewest victims, latest start among the
   highest-priority victims, first node (no PodDisruptionBudgets are
   modelled, so the PDB criteria are always equal);
4. the trial is undone; if every pod found room (gang mode: the whole gang,
   as kube's workload-aware preemption deletes victims only when the whole
   gang fits; pod-by-pod mode: as many pods as could), the victims are
   evicted (:func:`gpureplay.engine.jobs.evict_job`), the preemptor's tried
   pods are nominated to their nodes (:mod:`gpureplay.engine.preemption.nomination`:
   lower-priority pods cannot take that room meanwhile), and it waits for the
   victims to terminate and binds in a later cycle like any pending job.

A victim is evicted whole (every pod of its job, on every node): a gang is
preempted whole.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.fit.resources import node_capacity, release_pod, take_pod
from gpureplay.engine.fit.scoring import choose_node, refresh_index
from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.jobs import attempt_of, count_in_queue, evict_job, place_pod, touch_node, unlink_pod
from gpureplay.engine.preemption.idle import idle_exempt, may_have_victim
from gpureplay.engine.preemption.nomination import end_nomination, nominate
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    FitIndex,
    Jobs,
    JobState,
    Params,
    Pending,
    PreemptScratch,
    Run,
    Scratch,
    Timers,
)
from gpureplay.engine.state.layout import (
    C_CPU,
    C_GMEM,
    C_K,
    C_KIND,
    C_MEM,
    D_ATTEMPTS,
    D_PLACED,
    D_STATUS,
    J_CLASS,
    J_ID,
    J_K,
    J_MILLI,
    J_POD0,
    J_PODS,
    J_PREEMPTIBLE,
    J_PRIO,
    J_PRIO_RANK,
    J_SLOT0,
    K_PREEMPT_TRIES,
    KIND_NONE,
    KIND_WHOLE,
    N_CPU,
    N_GPU_MEM,
    N_GPUS,
    N_MEM,
    N_MODEL,
    P_CANDIDATE_PCT,
    P_MIN_CANDIDATES,
    P_PREEMPT,
    P_SEED,
    PREEMPT_IDLE,
    S_QUEUED,
    S_RUNNING,
    T_HOLD0,
    T_START,
    TOT_ALLOC,
)
from gpureplay.engine.state.rng import DRAW_PREEMPT_OFFSET, draw

#: kube-scheduler's priority offset in the "sum of priorities" criterion.
PRIORITY_OFFSET = 1 << 31


@inline_kernel
def could_ever_fit(cl: Cluster, cs: Classes, c: int, n: int) -> bool:
    """Whether a pod of class ``c`` fits node ``n`` when the node is empty (else no eviction can help)."""
    if cl.node_int[N_CPU, n] < cs.ints[C_CPU, c] or cl.node_int[N_MEM, n] < cs.ints[C_MEM, c]:
        return False
    kind = cs.ints[C_KIND, c]
    if kind == KIND_NONE:
        return True
    model = cl.node_int[N_MODEL, n]
    if cl.node_int[N_GPUS, n] == 0 or model < 0:
        return False
    if ((cs.mask[c] >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
        return False
    if cl.node_int[N_GPU_MEM, n] < cs.ints[C_GMEM, c]:
        return False
    return bool(kind != KIND_WHOLE or cl.node_int[N_GPUS, n] >= cs.ints[C_K, c])


@inline_kernel
def victim_eligible(
    pre: PreemptScratch, params: Params, jobs: Jobs, js: JobState, v: int, j: int, stamp: int
) -> bool:
    """Whether ``v`` may be evicted for ``j``: preemptible, holding, not yet chosen, and of lower priority.

    Under ``reclaim_idle`` (ReclaimIdleResource) of a priority at most ``j``'s, unless its PriorityClass
    exempts it (:func:`gpureplay.engine.preemption.idle.idle_exempt`).
    """
    if v == j or pre.job_mark[v] == stamp or jobs.ints[J_PREEMPTIBLE, v] == 0:
        return False
    status = js.dyn[D_STATUS, v]
    if not (status == S_RUNNING or (status == S_QUEUED and js.dyn[D_PLACED, v] > 0)):
        return False
    if params.codes[P_PREEMPT] == PREEMPT_IDLE:
        if jobs.ints[J_PRIO, v] > jobs.ints[J_PRIO, j]:
            return False
        return not idle_exempt(jobs, js, v, j, pre.now[0])
    return bool(jobs.ints[J_PRIO, v] < jobs.ints[J_PRIO, j])


@kernel
def move_pods(jobs: Jobs, cs: Classes, cl: Cluster, js: JobState, v: int, n: int, take: bool) -> None:
    """Release (or take back, on their exact GPUs) job ``v``'s pods on node ``n`` (-1: on every node): the
    dry runs of a victim search (per node here; the whole job in Kueue's topology check)."""
    c = jobs.ints[J_CLASS, v]
    k = jobs.ints[J_K, v]
    pod0 = jobs.ints[J_POD0, v]
    for p in range(js.dyn[D_PLACED, v]):
        node = js.pod_node[pod0 + p]
        if n >= 0 and node != n:
            continue
        slot0 = jobs.ints[J_SLOT0, v] + p * k
        if take:
            take_pod(cl, cs, c, node, -1, js.slot_gpu, slot0, True)
        else:
            release_pod(cl, cs, c, node, js.slot_gpu, slot0)


@kernel
def move_job(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    v: int,
    take: bool,
) -> None:
    """Release (or take back) all of job ``v``'s pods on the trial state, keeping the fit index in step."""
    c = jobs.ints[J_CLASS, v]
    k = jobs.ints[J_K, v]
    pod0 = jobs.ints[J_POD0, v]
    for p in range(js.dyn[D_PLACED, v]):
        n = js.pod_node[pod0 + p]
        slot0 = jobs.ints[J_SLOT0, v] + p * k
        if take:
            take_pod(cl, cs, c, n, -1, js.slot_gpu, slot0, True)
        else:
            release_pod(cl, cs, c, n, js.slot_gpu, slot0)
        if jobs.ints[J_MILLI, v] > 0:
            refresh_index(params, cl, ix, n)
        touch_node(params, sc, run, n)


@inline_kernel
def more_important(jobs: Jobs, js: JobState, a: int, b: int) -> bool:
    """kube's victim importance: higher priority first, then the earlier start, then the lower job id."""
    if jobs.ints[J_PRIO, a] != jobs.ints[J_PRIO, b]:
        return bool(jobs.ints[J_PRIO, a] > jobs.ints[J_PRIO, b])
    if started_at(js, a) != started_at(js, b):
        return started_at(js, a) < started_at(js, b)
    return bool(jobs.ints[J_ID, a] < jobs.ints[J_ID, b])


@inline_kernel
def started_at(js: JobState, v: int) -> float:
    """When a candidate victim started (a pod-holding job that never ran: when it began holding)."""
    if js.dyn[D_STATUS, v] == S_RUNNING:
        return float(js.time[T_START, v])
    return float(js.time[T_HOLD0, v])


@kernel
def victims_on_node(
    pre: PreemptScratch,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    j: int,
    c: int,
    n: int,
    stamp: int,
) -> int:
    """DefaultPreemption's SelectVictimsOnNode for one pod of job ``j`` (class ``c``) on node ``n``.

    Returns
    -------
    int
        The number of victims written to ``pre.victims`` (-1: the node is
        infeasible, or has no eligible pod). The node's state is unchanged.
    """
    count = 0
    pod = js.node_pods[n]
    while pod >= 0:
        v = jobs.pod_job[pod]
        if victim_eligible(pre, params, jobs, js, v, j, stamp):
            seen = False
            for i in range(count):
                if pre.victims[i] == v:
                    seen = True
                    break
            if not seen:
                pre.victims[count] = v
                count += 1
        pod = js.pod_next[pod]
    if count == 0:
        return -1
    for i in range(count):
        move_pods(jobs, cs, cl, js, pre.victims[i], n, False)
    if node_capacity(cl, cs, c, n, 1) < 1:
        for i in range(count):
            move_pods(jobs, cs, cl, js, pre.victims[i], n, True)
        return -1
    # Most important first (insertion sort: a node holds a handful of jobs).
    for i in range(1, count):
        v = pre.victims[i]
        k = i
        while k > 0 and more_important(jobs, js, v, pre.victims[k - 1]):
            pre.victims[k] = pre.victims[k - 1]
            k -= 1
        pre.victims[k] = v
    kept = 0
    for i in range(count):
        v = pre.victims[i]
        move_pods(jobs, cs, cl, js, v, n, True)
        if node_capacity(cl, cs, c, n, 1) >= 1:
            continue  # reprieved
        move_pods(jobs, cs, cl, js, v, n, False)
        pre.victims[kept] = v
        kept += 1
    for i in range(kept):
        move_pods(jobs, cs, cl, js, pre.victims[i], n, True)
    return kept


@kernel
def better_candidate(pre: PreemptScratch, jobs: Jobs, js: JobState, count: int, best_count: int) -> bool:
    """Whether the victims in ``pre.victims`` make a better node than those in ``pre.best`` (kube's order)."""
    top = -(1 << 62)
    total = 0
    for i in range(count):
        prio = jobs.ints[J_PRIO, pre.victims[i]]
        top = max(top, prio)
        total += prio + PRIORITY_OFFSET
    best_top = -(1 << 62)
    best_total = 0
    for i in range(best_count):
        prio = jobs.ints[J_PRIO, pre.best[i]]
        best_top = max(best_top, prio)
        best_total += prio + PRIORITY_OFFSET
    if top != best_top:
        return top < best_top
    if total != best_total:
        return total < best_total
    if count != best_count:
        return count < best_count
    earliest = np.inf
    for i in range(count):
        if jobs.ints[J_PRIO, pre.victims[i]] == top:
            earliest = min(earliest, started_at(js, pre.victims[i]))
    best_earliest = np.inf
    for i in range(best_count):
        if jobs.ints[J_PRIO, pre.best[i]] == best_top:
            best_earliest = min(best_earliest, started_at(js, pre.best[i]))
    # The node whose highest-priority victims started latest loses the least work.
    return earliest > best_earliest


@kernel
def select_node(
    pre: PreemptScratch,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    j: int,
    pod: int,
    stamp: int,
) -> tuple[int, int]:
    """The node and victims (in ``pre.best``) for pod ``pod`` of job ``j``; ``(-1, 0)`` when no node works."""
    c = jobs.ints[J_CLASS, j]
    num_nodes = cl.node_int.shape[1]
    wanted = max(params.codes[P_MIN_CANDIDATES], num_nodes * params.codes[P_CANDIDATE_PCT] // 100)
    wanted = min(wanted, num_nodes)
    offset = int(
        draw(params.codes[P_SEED], jobs.ints[J_ID, j], pod, attempt_of(js, j), DRAW_PREEMPT_OFFSET)
        % np.uint64(max(num_nodes, 1))
    )
    best_node = -1
    best_count = 0
    found = 0
    for i in range(num_nodes):
        n = (offset + i) % num_nodes
        if not could_ever_fit(cl, cs, c, n):
            continue
        count = victims_on_node(pre, params, jobs, cs, cl, js, j, c, n, stamp)
        if count < 0:
            continue
        found += 1
        if best_node < 0 or better_candidate(pre, jobs, js, count, best_count):
            best_node = n
            best_count = count
            for k in range(count):
                pre.best[k] = pre.victims[k]
        if found >= wanted:
            break
    return best_node, best_count


@kernel
def victims_could_suffice(
    params: Params,
    jobs: Jobs,
    cl: Cluster,
    js: JobState,
    tm: Timers,
    sc: Scratch,
    run: Run,
    j: int,
    pods: int,
    t: float,
) -> bool:
    """A necessary condition for a search to succeed: some victim, and GPU enough with all of them gone.

    Notes
    -----
    Possible victims are preemptible jobs of lower priority (``reclaim_idle``:
    at most equal) holding pods (:class:`gpureplay.engine.state.bundles.Scratch`
    keeps them per priority rank). The free GPU milli of the cluster plus
    theirs bounds what ``pods`` pods of ``j`` could get; when it is short, the
    search could not succeed and is skipped (its outcome would be the same:
    no victim).
    """
    victims = 0
    milli = 0
    ranks = jobs.ints[J_PRIO_RANK, j] + (1 if params.codes[P_PREEMPT] == PREEMPT_IDLE else 0)
    for rank in range(ranks):
        victims += sc.prio_jobs[rank]
        milli += sc.prio_milli[rank]
    if victims == 0:
        return False
    free = cl.gpu_free.shape[1] * 1000 - cl.totals[TOT_ALLOC]
    if free + milli < pods * jobs.ints[J_MILLI, j]:
        return False
    # Under reclaim_idle most holders are exempt: a search with no eligible candidate is skipped.
    return params.codes[P_PREEMPT] != PREEMPT_IDLE or may_have_victim(jobs, js, tm, sc, run, j, t)


@kernel
def preempt_for(
    pre: PreemptScratch,
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
    whole: bool,
) -> int:
    """Evict lower-priority jobs so that job ``j``'s unplaced pods can be placed; returns the victims evicted.

    Parameters
    ----------
    whole
        Gang mode: evict only if every unplaced pod finds room. Pod-by-pod:
        evict for the pods, in order, that find room.

    Notes
    -----
    The trial placement and the victims' removal happen on the current state
    (keeping every aggregate and the fit index in step) and are undone
    exactly before any eviction: victims keep their resources until their
    grace period ends, and ``j`` is placed by a later cycle.
    """
    c = jobs.ints[J_CLASS, j]
    first = js.dyn[D_PLACED, j]
    target = jobs.ints[J_PODS, j]
    if not victims_could_suffice(params, jobs, cl, js, tm, sc, run, j, (target - first) if whole else 1, t):
        return 0
    pre.now[0] = t
    run.counters[K_PREEMPT_TRIES] += 1
    stamp = run.counters[K_PREEMPT_TRIES]
    chosen = 0
    while js.dyn[D_PLACED, j] < target:
        pod = js.dyn[D_PLACED, j]
        n = choose_node(params, cl, ix, cs, c, jobs.ints[J_ID, j], pod, attempt_of(js, j))
        if n < 0:
            n, count = select_node(pre, params, jobs, cs, cl, js, j, pod, stamp)
            if n < 0:
                break
            for i in range(count):
                v = pre.best[i]
                pre.job_mark[v] = stamp
                pre.chosen[chosen] = v
                chosen += 1
                move_job(params, jobs, cs, cl, ix, js, sc, run, v, False)
        place_pod(params, jobs, cs, cl, ix, js, sc, run, j, n, t)
    complete = js.dyn[D_PLACED, j] == target
    evicting = chosen > 0 and (complete or not whole)
    if evicting:
        nominate(jobs, js, cl, run, j, first)
    began = first == 0 and js.dyn[D_PLACED, j] > 0
    if jobs.ints[J_PREEMPTIBLE, j] != 0:
        # place_pod counted the trial's pods as a possible victim's: take them back.
        rank = jobs.ints[J_PRIO_RANK, j]
        sc.prio_milli[rank] -= (js.dyn[D_PLACED, j] - first) * jobs.ints[J_MILLI, j]
        if began:
            sc.prio_jobs[rank] -= 1
    # Undo the trial: the preemptor's pods, then the victims, in reverse.
    c_j = jobs.ints[J_CLASS, j]
    k = jobs.ints[J_K, j]
    pod0 = jobs.ints[J_POD0, j]
    while js.dyn[D_PLACED, j] > first:
        p = js.dyn[D_PLACED, j] - 1
        n = js.pod_node[pod0 + p]
        release_pod(cl, cs, c_j, n, js.slot_gpu, jobs.ints[J_SLOT0, j] + p * k)
        unlink_pod(js, pod0 + p, n)
        js.dyn[D_PLACED, j] = p
        count_in_queue(jobs, js, run, j, -1)
        if jobs.ints[J_MILLI, j] > 0:
            refresh_index(params, cl, ix, n)
    if began:
        js.dyn[D_ATTEMPTS, j] -= 1
    for i in range(chosen - 1, -1, -1):
        move_job(params, jobs, cs, cl, ix, js, sc, run, pre.chosen[i], True)
    if not evicting:
        return 0
    for i in range(chosen):
        v = pre.chosen[i]
        evict_job(params, jobs, cs, cl, js, pend, tm, sc, run, v, t, j)
        end_nomination(cl, run, v)  # a partly placed victim may itself wait for victims
    return chosen
