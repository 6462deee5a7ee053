"""Kueue's admission by quota alone, kube-scheduler's placement of the admitted pods, ``waitForPodsReady``.

Without topology-aware scheduling, Kueue admits a workload by quota only: it reserves the quota and
unsuspends the Job; the Job's pods are then created and kube-scheduler places them one by one, like any
pods. A workload whose pods do not all fit holds the ones it got and the quota for all of them: two such
workloads can deadlock (``site/.../setup_wait_for_pods_ready.md``). ``waitForPodsReady`` bounds that: a
workload whose pods are not all Ready ``timeout`` seconds after its admission is evicted (its pods deleted,
its quota released) and requeued after an exponential back-off, or deactivated once its requeues reach
``backoffLimitCount`` (reference §3.2; kubernetes-sigs/kueue KEP-1282 "Pods Ready Requeue Strategy").

In the replay a pod is Ready when it is placed, so a workload is Ready when its job starts. Under
``scheduler.kueue_admission: quota`` the job's reservation counts in its ClusterQueue's usage
(``run.queues``) for its unplaced pods; each placed pod moves from the reservation to the pods' count. The
plain-Python twin is ``_Replay.kueue_place_admitted`` / ``ready_timeout`` of the reference simulator.
"""

from __future__ import annotations

import math

from gpureplay.engine.fit.resources import capacity_bound
from gpureplay.engine.jit.config import by_bundle, inline_kernel, kernel
from gpureplay.engine.jobs import (
    count_in_queue,
    count_unplaced,
    place_pods,
    pod_hold_sum,
    record_attempt,
    release_job_pods,
    start_job,
)
from gpureplay.engine.pending import dequeue
from gpureplay.engine.queues.kueue.tree import flavor_mask
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    FitIndex,
    Jobs,
    JobState,
    KaiState,
    KueueState,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
    VolcanoState,
)
from gpureplay.engine.state.layout import (
    D_GEN,
    D_PLACED,
    D_READY_TIMEOUTS,
    D_RESERVED,
    D_STATUS,
    END_PODS_READY,
    J_CLASS,
    J_ID,
    J_MILLI,
    J_PODS,
    J_PRIO,
    K_PVERSION,
    K_VERSION,
    P_BLOCK_ADMISSION,
    P_READY_LIMIT,
    PF_READY_BASE,
    PF_READY_MAX,
    PF_READY_TIMEOUT,
    S_ADMITTED,
    S_BACKOFF,
    S_FAILED,
    T_ADMITTED,
    T_END,
    T_EVICTED,
    T_LOST,
    T_PEND_SINCE,
    T_PENDING,
    TM_PODS_READY,
    TM_READY_BACKOFF,
    X_LOST,
)
from gpureplay.engine.state.timers import push_timer


@inline_kernel
def _kube_before(jobs: Jobs, js: JobState, a: int, b: int) -> bool:
    # kube-scheduler's PrioritySort: higher priority, then the earlier pod (created at admission), then id.
    pa = jobs.ints[J_PRIO, a]
    pb = jobs.ints[J_PRIO, b]
    if pa != pb:
        return bool(pa > pb)
    ta = js.time[T_ADMITTED, a]
    tb = js.time[T_ADMITTED, b]
    if ta != tb:
        return bool(ta < tb)
    return bool(jobs.ints[J_ID, a] < jobs.ints[J_ID, b])


@kernel
def admit_by_quota(
    params: Params,
    qt: KueueState,
    jobs: Jobs,
    cs: Classes,
    js: JobState,
    pend: Pending,
    tm: Timers,
    sc: Scratch,
    run: Run,
    j: int,
    t: float,
) -> None:
    """Kueue admits job ``j`` at ``t`` by quota alone: it reserves the quota and leaves the queue.

    Notes
    -----
    kubernetes-sigs/kueue ``pkg/scheduler/scheduler.go``: an admission sets ``QuotaReserved`` and
    ``Admitted``; the job's pods are created and wait for kube-scheduler (:func:`place_admitted`). Under
    ``waitForPodsReady`` the readiness timeout starts now.
    """
    dequeue(jobs, cs, js, pend, run, j)
    count_unplaced(jobs, js, sc, j, -1)
    js.dyn[D_STATUS, j] = S_ADMITTED
    js.dyn[D_RESERVED, j] = 1
    js.time[T_ADMITTED, j] = t
    count_in_queue(jobs, js, run, j, jobs.ints[J_PODS, j])
    k = qt.w_n[0]
    while k > 0 and _kube_before(jobs, js, j, qt.w_jobs[k - 1]):
        qt.w_jobs[k] = qt.w_jobs[k - 1]
        k -= 1
    qt.w_jobs[k] = j
    qt.w_n[0] += 1
    timeout = params.flt[PF_READY_TIMEOUT]
    if not math.isinf(timeout):
        push_timer(js, tm, run, TM_PODS_READY, t + timeout, j)


@inline_kernel
def blocked(params: Params, qt: KueueState) -> bool:
    """``waitForPodsReady.blockAdmission``: an admitted workload not Ready yet stops every admission."""
    return bool(params.codes[P_BLOCK_ADMISSION] != 0 and qt.w_n[0] > 0)


@kernel
def place_admitted(
    params: Params,
    qt: KueueState,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    pend: Pending,
    tm: Timers,
    sc: Scratch,
    run: Run,
    t: float,
) -> int:
    """kube-scheduler places the admitted jobs' pods at ``t``; returns the pods placed.

    Notes
    -----
    The admitted jobs are taken in kube-scheduler's queue order (PrioritySort: priority, then the pods'
    creation, i.e. admission, time, then job id) and each one's unplaced pods are placed one by one with
    the node scorer until one fits nowhere; the pods placed stay (kube-scheduler has no gang), so a job
    may hold part of its pods. A job whose pods are all placed starts: its workload is Ready. Once a pod
    of a class fitted nowhere, the other jobs of that class are passed over in this pass (placements only
    take room).
    """
    qt.w_n[1] += 1
    stamp = qt.w_n[1]
    placed_now = 0
    kept = 0
    for i in range(qt.w_n[0]):
        j = qt.w_jobs[i]
        c = jobs.ints[J_CLASS, j]
        pods = jobs.ints[J_PODS, j]
        # With flavors that select nodes, jobs of one class may be bound to different GPU models: the pass
        # over a class whose pod fitted nowhere holds only without them.
        if qt.w_mark[c] != stamp or qt.flv_on[0] != 0:
            before = js.dyn[D_PLACED, j]
            # The reservation stands for the unplaced pods: a placed pod moves from it to the pods' count.
            count_in_queue(jobs, js, run, j, before - pods)
            allowed = cs.mask[c]
            if qt.flv_on[0] != 0:
                cs.mask[c] = allowed & flavor_mask(qt, jobs, js, j)  # the assigned flavors' nodeLabels
            done = capacity_bound(cl, cs, c, 1) >= 1 and place_pods(
                params, jobs, cs, cl, ix, js, sc, run, j, pods, t
            )
            cs.mask[c] = allowed
            count_in_queue(jobs, js, run, j, pods - js.dyn[D_PLACED, j])
            placed_now += js.dyn[D_PLACED, j] - before
            if done:
                # Ready: its readiness timer goes stale (a new generation) before the completion is set.
                js.dyn[D_GEN, j] += 1
                js.dyn[D_RESERVED, j] = 0
                start_job(params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
                continue
            qt.w_mark[c] = stamp
        qt.w_jobs[kept] = j
        kept += 1
    qt.w_n[0] = kept
    return placed_now


@kernel
def leave_admitted(qt: KueueState, j: int) -> None:
    """Admitted job ``j`` leaves kube-scheduler's list (timed out, or evicted by a Kueue preemption)."""
    n = qt.w_n[0]
    k = 0
    while qt.w_jobs[k] != j:
        k += 1
    for i in range(k, n - 1):
        qt.w_jobs[i] = qt.w_jobs[i + 1]
    qt.w_n[0] = n - 1


@inline_kernel
def ready_backoff(params: Params, count: int) -> float:
    """Seconds before the ``count``-th requeue: ``backoffBaseSeconds x 2^(count-1)``, at most the maximum."""
    delay = params.flt[PF_READY_BASE]
    for _ in range(1, count):
        delay = min(2.0 * delay, params.flt[PF_READY_MAX])
    return float(min(delay, params.flt[PF_READY_MAX]))


@kernel
def ready_timeout(
    qt: KueueState,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    tm: Timers,
    j: int,
    t: float,
) -> bool:
    """``waitForPodsReady.timeout`` after job ``j``'s admission ends at ``t``: evict it unless it is Ready.

    Returns
    -------
    bool
        Whether it was evicted (False: it started, or the timer belongs to an earlier admission).

    Notes
    -----
    kubernetes-sigs/kueue ``pkg/controller/core/workload_controller.go`` (KEP-1282): the workload is
    evicted with reason ``PodsReadyTimeout``; its pods are deleted (released at once here; the GPU-time
    they held is lost) and its quota released. Its ``requeueState.count`` grows by one and it is requeued
    ``backoffBaseSeconds x 2^(count - 1)`` seconds later (capped at ``backoffMaxSeconds``; Kueue's jitter
    of 0.0001 left out), ordered by its eviction time under ``requeuingStrategy.timestamp: Eviction``
    (``requeue: back``); once the count has reached ``backoffLimitCount`` a further timeout deactivates it
    (the job ends ``failed``). The job's wait goes on through the back-off.
    """
    timeout = params.flt[PF_READY_TIMEOUT]
    if js.dyn[D_STATUS, j] != S_ADMITTED or js.time[T_ADMITTED, j] + timeout != t:
        return False
    leave_admitted(qt, j)
    placed = js.dyn[D_PLACED, j]
    count_in_queue(jobs, js, run, j, placed - jobs.ints[J_PODS, j])
    js.dyn[D_RESERVED, j] = 0
    if placed > 0:
        record_attempt(jobs, cs, cl, js, run, j, END_PODS_READY, t, t, 0.0, 0.0, 0.0)
        held = (t * placed - pod_hold_sum(jobs, js, j)) * jobs.ints[J_MILLI, j] / 1000.0
        js.time[T_LOST, j] += held
        run.clock[X_LOST] += held
        release_job_pods(params, jobs, cs, cl, ix, js, sc, run, j)
    run.counters[K_VERSION] += 1
    run.counters[K_PVERSION] += 1
    count = js.dyn[D_READY_TIMEOUTS, j]
    js.dyn[D_READY_TIMEOUTS, j] = count + 1
    limit = params.codes[P_READY_LIMIT]
    if 0 <= limit <= count:
        js.dyn[D_STATUS, j] = S_FAILED
        js.time[T_END, j] = t
        js.time[T_PENDING, j] += t - js.time[T_PEND_SINCE, j]
        return True
    js.dyn[D_STATUS, j] = S_BACKOFF
    js.time[T_EVICTED, j] = t
    push_timer(js, tm, run, TM_READY_BACKOFF, t + ready_backoff(params, count + 1), j)
    return True


#: :func:`ready_timeout` under Kueue (the loop's timers); Volcano and KAI have no ``waitForPodsReady``, and
#: without a queue model no such timer exists.
ready_timeout_given = by_bundle(
    "waitForPodsReady timeout", {KueueState: ready_timeout, VolcanoState: None, KaiState: None}, False
)
