"""A job's life: admitted, pods placed, started, finished - or evicted, terminating, requeued.

Work and time
-------------
A job needs ``JF_WORK`` seconds of work (its trace duration: run time when
it gets what it asked for). An attempt begins when its first pod is placed
and runs once all pods are placed; a restart (an attempt after one that ran)
first spends the job's restart overhead (``JF_OVERHEAD``: reading the
checkpoint, cold start) and only then makes progress, at one second of work
per second (its *rate*, 1). So a job started at ``t`` finishes at ``t +
overhead + work left``. A mechanism that slows a running job down (a GPU
shared by time-slicing, a gang spread over a slow link) changes its rate with
:func:`gpureplay.engine.devices.sharing.set_rate`: the work done so far is kept and the finish time
moves.

Eviction and checkpoints
------------------------
An evicted job stops making progress at once and keeps its resources for the
termination grace period (kube-scheduler: the preemptor waits for the
victims' graceful termination before binding; docs/systems.md, "kube-scheduler"),
then releases them and re-enters its queue. Of the progress its attempt made
it keeps what was checkpointed: checkpoints are taken every ``JF_CKPT``
seconds of progress (``inf``: never, everything is lost; 0: continuously,
nothing is). Lost GPU-seconds add up, per eviction, the GPUs held times (the
progress rolled back + the restart overhead that attempt spent + the grace
period): Lucid / Tiresias' preemption cost (docs/systems.md, "Research simulators").
"""

from __future__ import annotations

import math

from gpureplay.engine.devices.sharing import settle, sharers_changed
from gpureplay.engine.fit.resources import class_mig, held_milli, release_pod, take_pod
from gpureplay.engine.fit.scoring import choose_gpu, choose_node, refresh_index
from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.pending import dequeue, enqueue
from gpureplay.engine.placement.spread import spread_rate
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    FitIndex,
    Jobs,
    JobState,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
)
from gpureplay.engine.state.layout import (
    A_EVICTOR,
    A_JOB,
    A_NODES,
    A_NUMBER,
    A_PODS,
    A_REASON,
    AF_END,
    AF_EVICTED,
    AF_GPU_S,
    AF_HOLD0,
    AF_LOST,
    AF_OVERHEAD,
    AF_PROGRESS,
    AF_START,
    BACKOFF_BASE_S,
    BACKOFF_MAX_S,
    D_ADMIT_FAILS,
    D_ATTEMPTS,
    D_FLAVOR,
    D_GEN,
    D_NOMINATOR,
    D_OVER,
    D_PLACED,
    D_PREEMPTIONS,
    D_RESERVED,
    D_SPANNED,
    D_STATUS,
    D_WAITING,
    END_FINISHED,
    END_PREEMPTED,
    FLAVOR_BITS,
    J_CLASS,
    J_CPU,
    J_ID,
    J_K,
    J_MEM,
    J_MILLI,
    J_POD0,
    J_PODS,
    J_PREEMPTIBLE,
    J_PRIO_RANK,
    J_SLOT0,
    J_TENANT,
    JF_CKPT,
    JF_OVERHEAD,
    K_ATTEMPTS,
    K_NRUN,
    K_NTERM,
    K_NTOUCHED,
    K_PREEMPTIONS,
    K_PVERSION,
    K_REQUEUE_SEQ,
    K_STARTS,
    K_VERSION,
    MIG_NONE,
    N_MIG_MASK,
    P_BACKOFF_LIMIT,
    P_DEBUG,
    P_REQUEUE,
    P_SHARING,
    PF_GRACE,
    PF_MIG_CREATE,
    QU_CPU,
    QU_MEM,
    QU_MILLI,
    QU_NP_CPU,
    QU_NP_MEM,
    QU_NP_MILLI,
    QU_RUNNING,
    QUEUE_FIELDS,
    R_NONE,
    REQUEUE_BACK,
    S_BACKOFF,
    S_FAILED,
    S_FINISHED,
    S_QUEUED,
    S_REJECTED,
    S_RUNNING,
    S_TERMINATING,
    SHARING_MIG_DYNAMIC,
    T_DONE,
    T_END,
    T_EVICTED,
    T_FINISH,
    T_FIRST_START,
    T_HOLD0,
    T_KEY2,
    T_LEFT,
    T_LOST,
    T_PEND_SINCE,
    T_PENDING,
    T_PROGRESS0,
    T_RATE,
    T_RATE_T,
    T_START,
    T_WORK_DONE,
    TM_BACKOFF,
    TM_TERMINATED,
    X_LOST,
)
from gpureplay.engine.state.timers import push_completion, push_timer


@inline_kernel
def touch_node(params: Params, sc: Scratch, run: Run, n: int) -> None:
    """Remember that node ``n`` changed (debug runs check touched nodes after each cycle)."""
    if params.codes[P_DEBUG] != 0 and sc.touch_mark[n] == 0:
        sc.touch_mark[n] = 1
        sc.touched_nodes[run.counters[K_NTOUCHED]] = n
        run.counters[K_NTOUCHED] += 1


@inline_kernel
def link_pod(js: JobState, pod: int, n: int) -> None:
    """Add a placed pod to node ``n``'s pod list."""
    head = js.node_pods[n]
    js.pod_prev[pod] = -1
    js.pod_next[pod] = head
    if head >= 0:
        js.pod_prev[head] = pod
    js.node_pods[n] = pod


@inline_kernel
def unlink_pod(js: JobState, pod: int, n: int) -> None:
    """Remove a pod from node ``n``'s pod list."""
    prev = js.pod_prev[pod]
    nxt = js.pod_next[pod]
    if prev >= 0:
        js.pod_next[prev] = nxt
    else:
        js.node_pods[n] = nxt
    if nxt >= 0:
        js.pod_prev[nxt] = prev
    js.pod_prev[pod] = -1
    js.pod_next[pod] = -1


@inline_kernel
def count_in_queue(jobs: Jobs, js: JobState, run: Run, j: int, pods: int) -> None:
    """Add ``pods`` placed pods of job ``j`` (negative: removed) to its queue's ``run.queues`` resources.

    Non-preemptible jobs' pods are counted apart too: KAI's capacity policy bounds them by the quota. Under
    Kueue with several flavors each resource is counted in the flavor its admission assigned
    (``D_FLAVOR``) too.
    """
    tenant = jobs.ints[J_TENANT, j]
    milli = pods * jobs.ints[J_MILLI, j]
    cpu = pods * jobs.ints[J_CPU, j]
    mem = pods * jobs.ints[J_MEM, j]
    run.queues[QU_MILLI, tenant] += milli
    run.queues[QU_CPU, tenant] += cpu
    run.queues[QU_MEM, tenant] += mem
    if run.queues.shape[0] > QUEUE_FIELDS:
        slots = js.dyn[D_FLAVOR, j]
        low = (1 << FLAVOR_BITS) - 1
        run.queues[QUEUE_FIELDS + 3 * (slots & low), tenant] += milli
        run.queues[QUEUE_FIELDS + 3 * ((slots >> FLAVOR_BITS) & low) + 1, tenant] += cpu
        run.queues[QUEUE_FIELDS + 3 * ((slots >> (2 * FLAVOR_BITS)) & low) + 2, tenant] += mem
    if jobs.ints[J_PREEMPTIBLE, j] == 0:
        run.queues[QU_NP_MILLI, tenant] += milli
        run.queues[QU_NP_CPU, tenant] += cpu
        run.queues[QU_NP_MEM, tenant] += mem


@inline_kernel
def attempt_of(js: JobState, j: int) -> int:
    """The run attempt a pod placed for job ``j`` now belongs to (0-based; the rng key's ``attempt``)."""
    if js.dyn[D_PLACED, j] > 0:
        return int(js.dyn[D_ATTEMPTS, j] - 1)
    return int(js.dyn[D_ATTEMPTS, j])


@kernel
def place_pod(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    j: int,
    n: int,
    t: float,
) -> None:
    """Place job ``j``'s next pod on node ``n`` (which fits it) at ``t``: GPU choice, take, bookkeeping.

    Notes
    -----
    The first pod of an attempt begins the attempt (``D_ATTEMPTS``, hold start).
    """
    c = jobs.ints[J_CLASS, j]
    p = js.dyn[D_PLACED, j]
    attempt = attempt_of(js, j)
    if p == 0:
        js.dyn[D_ATTEMPTS, j] += 1
        js.time[T_HOLD0, j] = t
        if jobs.ints[J_PREEMPTIBLE, j] != 0:
            sc.prio_jobs[jobs.ints[J_PRIO_RANK, j]] += 1
    if jobs.ints[J_PREEMPTIBLE, j] != 0:
        sc.prio_milli[jobs.ints[J_PRIO_RANK, j]] += jobs.ints[J_MILLI, j]
    pod = jobs.ints[J_POD0, j] + p
    g = -1
    m = jobs.ints[J_MILLI, j]
    if 0 < m < 1000 and class_mig(cl, cs, c, n) == MIG_NONE:
        g = choose_gpu(params, cl, cs, c, n, jobs.ints[J_ID, j], p, attempt)
    take_pod(cl, cs, c, n, g, js.slot_gpu, jobs.ints[J_SLOT0, j] + p * jobs.ints[J_K, j], False)
    js.pod_node[pod] = n
    js.pod_time[pod] = t
    link_pod(js, pod, n)
    js.dyn[D_PLACED, j] = p + 1
    count_in_queue(jobs, js, run, j, 1)
    if js.dyn[D_STATUS, j] == S_QUEUED:
        sc.unplaced[c] -= 1
    if m > 0:
        refresh_index(params, cl, ix, n)
    touch_node(params, sc, run, n)


@kernel
def place_pods(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    j: int,
    last: int,
    t: float,
) -> bool:
    """Place job ``j``'s pods up to ``last`` one by one with the node scorer; False when a pod fits nowhere.

    Notes
    -----
    Each pod sees the state left by the previous one, so several pods may land
    on one node, as in Volcano's ``allocate`` statement. Earlier pods stay
    placed on failure; gang callers only call it once the job is known to fit.
    """
    c = jobs.ints[J_CLASS, j]
    while js.dyn[D_PLACED, j] < last:
        n = choose_node(params, cl, ix, cs, c, jobs.ints[J_ID, j], js.dyn[D_PLACED, j], attempt_of(js, j))
        if n < 0:
            return False
        place_pod(params, jobs, cs, cl, ix, js, sc, run, j, n, t)
    return True


@inline_kernel
def count_unplaced(jobs: Jobs, js: JobState, sc: Scratch, j: int, sign: int) -> None:
    """Add (``sign`` 1) or remove (-1) pending job ``j``'s unplaced pods from its class's count."""
    sc.unplaced[jobs.ints[J_CLASS, j]] += sign * (jobs.ints[J_PODS, j] - js.dyn[D_PLACED, j])


@kernel
def forget_victim(jobs: Jobs, js: JobState, sc: Scratch, j: int) -> None:
    """Job ``j`` (preemptible, holding pods) stops being a possible victim: released or evicted."""
    placed = js.dyn[D_PLACED, j]
    if placed > 0:
        rank = jobs.ints[J_PRIO_RANK, j]
        sc.prio_jobs[rank] -= 1
        sc.prio_milli[rank] -= placed * jobs.ints[J_MILLI, j]


@kernel
def release_job_pods(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    j: int,
) -> None:
    """Release every placed pod of job ``j`` on the current state."""
    if jobs.ints[J_PREEMPTIBLE, j] != 0 and js.dyn[D_STATUS, j] != S_TERMINATING:
        forget_victim(jobs, js, sc, j)
    c = jobs.ints[J_CLASS, j]
    k = jobs.ints[J_K, j]
    pod0 = jobs.ints[J_POD0, j]
    if js.dyn[D_STATUS, j] == S_QUEUED:
        sc.unplaced[c] += js.dyn[D_PLACED, j]
    for p in range(js.dyn[D_PLACED, j]):
        pod = pod0 + p
        n = js.pod_node[pod]
        release_pod(cl, cs, c, n, js.slot_gpu, jobs.ints[J_SLOT0, j] + p * k)
        unlink_pod(js, pod, n)
        if jobs.ints[J_MILLI, j] > 0:
            refresh_index(params, cl, ix, n)
        touch_node(params, sc, run, n)
    count_in_queue(jobs, js, run, j, -js.dyn[D_PLACED, j])
    js.dyn[D_PLACED, j] = 0


@inline_kernel
def pod_hold_sum(jobs: Jobs, js: JobState, j: int) -> float:
    """Sum of the placement times of job ``j``'s placed pods."""
    total = 0.0
    pod0 = jobs.ints[J_POD0, j]
    for p in range(js.dyn[D_PLACED, j]):
        total += js.pod_time[pod0 + p]
    return total


@kernel
def record_attempt(
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    run: Run,
    j: int,
    reason: int,
    evicted: float,
    end: float,
    progress: float,
    lost: float,
    overhead: float,
) -> None:
    """Append job ``j``'s current attempt to the attempt records (room is guaranteed by the loop).

    Notes
    -----
    GPU-seconds count what each pod holds (:func:`gpureplay.engine.fit.resources.held_milli`):
    its milli-GPU, or on dynamic MIG its instance's slices.
    """
    a = run.counters[K_ATTEMPTS]
    placed = js.dyn[D_PLACED, j]
    run.att_i[A_JOB, a] = j
    run.att_i[A_NUMBER, a] = js.dyn[D_ATTEMPTS, j] - 1
    run.att_i[A_REASON, a] = reason
    run.att_i[A_PODS, a] = placed
    running = js.dyn[D_STATUS, j] == S_RUNNING
    # Nodes when the attempt started running; an attempt that never ran (partly placed) has none.
    run.att_i[A_NODES, a] = js.dyn[D_SPANNED, j] if running else 0
    run.att_i[A_EVICTOR, a] = -1
    run.att_f[AF_HOLD0, a] = js.time[T_HOLD0, j]
    run.att_f[AF_START, a] = js.time[T_START, j] if running else math.nan
    run.att_f[AF_EVICTED, a] = evicted
    run.att_f[AF_END, a] = end
    run.att_f[AF_PROGRESS, a] = progress
    run.att_f[AF_LOST, a] = lost
    run.att_f[AF_OVERHEAD, a] = overhead
    milli = jobs.ints[J_MILLI, j]
    c = jobs.ints[J_CLASS, j]
    pod0 = jobs.ints[J_POD0, j]
    uniform = True
    for p in range(placed):
        if held_milli(cl, cs, c, js.pod_node[pod0 + p]) != milli:
            uniform = False
            break
    if uniform:
        run.att_f[AF_GPU_S, a] = (end * placed - pod_hold_sum(jobs, js, j)) * milli / 1000.0
    else:
        held = 0.0
        for p in range(placed):
            pod = pod0 + p
            held += (end - js.pod_time[pod]) * held_milli(cl, cs, c, js.pod_node[pod])
        run.att_f[AF_GPU_S, a] = held / 1000.0
    run.counters[K_ATTEMPTS] = a + 1


@kernel
def start_job(
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
) -> None:
    """Job ``j`` (all pods placed) starts running at ``t``: leave the queue, schedule its completion.

    Notes
    -----
    ``finish = t + overhead + work left``; the overhead is paid by every
    attempt after one that ran (a restart from a checkpoint), plus the time
    to create its dynamic MIG instances (:func:`instance_creation`). ``D_SPANNED``
    counts the distinct nodes of its pods. On GPUs shared by replicas the
    job and its co-located sharers take their rates
    (:func:`gpureplay.engine.devices.sharing.sharers_changed`).
    """
    if js.dyn[D_STATUS, j] == S_QUEUED:
        # (A job Kueue admitted by quota left the queue at its admission:
        # gpureplay.engine.queues.kueue.pods_ready.)
        dequeue(jobs, cs, js, pend, run, j)
        count_unplaced(jobs, js, sc, j, -1)
    js.dyn[D_STATUS, j] = S_RUNNING
    js.time[T_PENDING, j] += t - js.time[T_PEND_SINCE, j]
    overhead = 0.0
    if math.isnan(js.time[T_FIRST_START, j]):
        js.time[T_FIRST_START, j] = t
    else:
        overhead = jobs.flts[JF_OVERHEAD, j]
    overhead += instance_creation(params, jobs, js, cl, j)
    run.counters[K_STARTS] += 1
    # Spread over several NVLink domains, racks or spines, it runs slower for this whole attempt.
    rate = spread_rate(params, jobs, js, cl, sc, run, j)
    js.time[T_START, j] = t
    js.time[T_PROGRESS0, j] = t + overhead
    js.time[T_RATE, j] = rate
    js.time[T_RATE_T, j] = t + overhead
    js.time[T_DONE, j] = 0.0
    finish = t + overhead + js.time[T_LEFT, j] / rate
    js.time[T_FINISH, j] = finish
    run.counters[K_NRUN] += 1
    run.queues[QU_RUNNING, jobs.ints[J_TENANT, j]] += 1
    run.counters[K_PVERSION] += 1
    push_completion(jobs, js, tm, run, j, finish)
    spanned = 0
    pod0 = jobs.ints[J_POD0, j]
    # A stamp unique to this start: a restart on the nodes of an earlier attempt counts them again.
    stamp = run.counters[K_STARTS]
    for p in range(js.dyn[D_PLACED, j]):
        n = js.pod_node[pod0 + p]
        if sc.node_mark[n] != stamp:
            sc.node_mark[n] = stamp
            spanned += 1
    js.dyn[D_SPANNED, j] = spanned
    sharers_changed(jobs.demand, params, jobs, js, cl, tm, run, j, t)


@kernel
def instance_creation(params: Params, jobs: Jobs, js: JobState, cl: Cluster, j: int) -> float:
    """Seconds job ``j`` waits for its dynamic MIG instances before it runs (0 without dynamic MIG).

    Notes
    -----
    A pod on a dynamic MIG node gets an instance made for it when it is
    placed (HAMi dynamic MIG); its pods' instances are made side by side,
    so the job waits ``mig_create_s`` once per attempt.
    """
    if params.codes[P_SHARING] != SHARING_MIG_DYNAMIC or jobs.ints[J_MILLI, j] == 0:
        return 0.0
    pod0 = jobs.ints[J_POD0, j]
    for p in range(js.dyn[D_PLACED, j]):
        if cl.node_int[N_MIG_MASK, js.pod_node[pod0 + p]] == 1:
            return float(params.flt[PF_MIG_CREATE])
    return 0.0


@kernel
def complete_job(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    tm: Timers,
    sc: Scratch,
    run: Run,
    j: int,
    t: float,
) -> None:
    """Job ``j`` (its completion popped) finishes at ``t`` and releases everything.

    Notes
    -----
    Bumps the release version, which invalidates every "class does not fit"
    mark: released resources may let any class fit again.
    """
    # Creating MIG instances is not a restart overhead: only the latter is lost work.
    overhead = js.time[T_PROGRESS0, j] - js.time[T_START, j] - instance_creation(params, jobs, js, cl, j)
    record_attempt(jobs, cs, cl, js, run, j, END_FINISHED, math.nan, t, js.time[T_LEFT, j], 0.0, overhead)
    cost = js.dyn[D_PLACED, j] * jobs.ints[J_MILLI, j] / 1000.0 * overhead
    js.time[T_LOST, j] += cost
    run.clock[X_LOST] += cost
    settle(js, j, t)
    js.time[T_WORK_DONE, j] += js.time[T_LEFT, j]
    js.dyn[D_STATUS, j] = S_FINISHED
    sharers_changed(jobs.demand, params, jobs, js, cl, tm, run, j, t)
    release_job_pods(params, jobs, cs, cl, ix, js, sc, run, j)
    js.time[T_FINISH, j] = t
    js.time[T_END, j] = t
    js.time[T_LEFT, j] = 0.0
    run.counters[K_NRUN] -= 1
    run.queues[QU_RUNNING, jobs.ints[J_TENANT, j]] -= 1
    run.counters[K_VERSION] += 1
    run.counters[K_PVERSION] += 1


@kernel
def admit_job(
    jobs: Jobs, cs: Classes, js: JobState, pend: Pending, sc: Scratch, run: Run, j: int, t: float
) -> None:
    """Job ``j`` is submitted at ``t``: rejected if it cannot run on the empty cluster, else queued.

    Notes
    -----
    Rejection codes are computed once per job shape before the loop
    (:func:`gpureplay.engine.fit.resources.rejection_codes`).
    """
    if jobs.reject[j] != R_NONE:
        js.dyn[D_STATUS, j] = S_REJECTED
        return
    js.dyn[D_STATUS, j] = S_QUEUED
    js.time[T_PEND_SINCE, j] = t
    enqueue(jobs, cs, js, pend, run, j)
    count_unplaced(jobs, js, sc, j, 1)


@kernel
def evict_job(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    pend: Pending,
    tm: Timers,
    sc: Scratch,
    run: Run,
    v: int,
    t: float,
    nominator: int,
) -> None:
    """Evict job ``v`` at ``t`` for ``nominator``: it stops, holds its resources for the grace, requeues.

    Notes
    -----
    A gang is evicted whole (all of its pods), as Volcano's gang plugin never
    breaks a running gang below minMember and kube's workload-aware preemption
    deletes a gang's pods together. A partly placed pod-by-pod job (holding
    pods, not yet running) leaves the queue the same way.
    """
    status = js.dyn[D_STATUS, v]
    forget_victim(jobs, js, sc, v)
    progress = 0.0
    lost = 0.0
    overhead = 0.0
    if status == S_RUNNING:
        start = js.time[T_START, v]
        begin = js.time[T_PROGRESS0, v]
        settle(js, v, t)
        progress = js.time[T_DONE, v]
        js.time[T_WORK_DONE, v] += progress
        overhead = min(t, begin) - start
        interval = jobs.flts[JF_CKPT, v]
        if interval <= 0.0:
            saved = progress
        elif math.isinf(interval):
            saved = 0.0
        else:
            saved = math.floor(progress / interval) * interval
        lost = progress - saved
        js.time[T_LEFT, v] -= saved
        run.counters[K_NRUN] -= 1
        run.queues[QU_RUNNING, jobs.ints[J_TENANT, v]] -= 1
    else:
        # A partly placed job leaves the queue (one Kueue admitted by quota left it at its admission): its
        # pending time stops here.
        if status == S_QUEUED:
            dequeue(jobs, cs, js, pend, run, v)
            count_unplaced(jobs, js, sc, v, -1)
        js.time[T_PENDING, v] += t - js.time[T_PEND_SINCE, v]
    grace = params.flt[PF_GRACE]
    if js.dyn[D_PLACED, v] > 0:
        # (An admitted job with no pod placed yet began no attempt.)
        record_attempt(jobs, cs, cl, js, run, v, END_PREEMPTED, t, t + grace, progress, lost, overhead)
        run.att_i[A_EVICTOR, run.counters[K_ATTEMPTS] - 1] = nominator
    gpus = js.dyn[D_PLACED, v] * jobs.ints[J_MILLI, v] / 1000.0
    cost = gpus * (lost + overhead)
    js.time[T_LOST, v] += cost
    run.clock[X_LOST] += cost
    js.dyn[D_STATUS, v] = S_TERMINATING
    js.dyn[D_GEN, v] += 1
    js.dyn[D_PREEMPTIONS, v] += 1
    js.dyn[D_NOMINATOR, v] = nominator
    js.time[T_EVICTED, v] = t
    js.dyn[D_WAITING, nominator] += 1
    run.counters[K_PREEMPTIONS] += 1
    run.counters[K_NTERM] += 1
    push_timer(js, tm, run, TM_TERMINATED, t + grace, v)
    if status == S_RUNNING:
        sharers_changed(jobs.demand, params, jobs, js, cl, tm, run, v, t)


@kernel
def terminate_job(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    pend: Pending,
    sc: Scratch,
    run: Run,
    v: int,
    t: float,
) -> None:
    """Evicted job ``v``'s grace period ends at ``t``: release its resources and put it back in its queue.

    Notes
    -----
    Under ``requeue: back`` it re-enters with ``key2 = t`` (behind jobs
    already waiting at its priority; Kueue's default
    ``requeuingStrategy.timestamp: Eviction``, or a Job controller's new pod),
    under ``requeue: original`` at its original place.
    """
    gpus = js.dyn[D_PLACED, v] * jobs.ints[J_MILLI, v] / 1000.0
    held = gpus * (t - js.time[T_EVICTED, v])
    js.time[T_LOST, v] += held
    run.clock[X_LOST] += held
    if js.dyn[D_RESERVED, v] != 0:
        # Admitted by Kueue's quota alone: its reservation of the unplaced pods ends with the eviction.
        count_in_queue(jobs, js, run, v, js.dyn[D_PLACED, v] - jobs.ints[J_PODS, v])
        js.dyn[D_RESERVED, v] = 0
    release_job_pods(params, jobs, cs, cl, ix, js, sc, run, v)
    run.counters[K_NTERM] -= 1
    run.counters[K_VERSION] += 1
    run.counters[K_PVERSION] += 1
    run.counters[K_REQUEUE_SEQ] += 1
    nominator = js.dyn[D_NOMINATOR, v]
    if nominator >= 0:
        js.dyn[D_WAITING, nominator] -= 1
    js.dyn[D_NOMINATOR, v] = -1
    js.time[T_PEND_SINCE, v] = t
    requeue(params, jobs, cs, js, pend, sc, run, v, t)


@kernel
def requeue(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    js: JobState,
    pend: Pending,
    sc: Scratch,
    run: Run,
    v: int,
    t: float,
) -> None:
    """Job ``v`` re-enters its queue at ``t``: behind those waiting (``requeue: back``) or at its old place.

    Notes
    -----
    Kueue's ``requeuingStrategy.timestamp: Eviction`` and a Job controller's
    new pod both enter with ``key2 = t``; ``requeue: original`` keeps the key
    it was submitted with.
    """
    js.dyn[D_STATUS, v] = S_QUEUED
    if params.codes[P_REQUEUE] == REQUEUE_BACK:
        js.time[T_KEY2, v] = t
        js.dyn[D_OVER, v] = 1
    else:
        js.dyn[D_OVER, v] = 0
    enqueue(jobs, cs, js, pend, run, v)
    count_unplaced(jobs, js, sc, v, 1)


@kernel
def back_off(
    params: Params,
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
    """Job ``j``'s pods failed kubelet admission at ``t`` (nothing placed): it leaves the queue, or fails.

    Notes
    -----
    The pod ends Failed with TopologyAffinityError; the Job controller
    creates its replacement after the pod-failure back-off, 10 s doubled per
    failure up to 10 minutes (``pkg/controller/job``:
    ``DefaultJobPodFailureBackOff``, ``MaxJobPodFailureBackOff``), and
    marks the Job failed once its failed pods exceed ``spec.backoffLimit``
    (``failed > backoffLimit``). The job's wait goes on meanwhile.
    """
    failures = js.dyn[D_ADMIT_FAILS, j] + 1
    js.dyn[D_ADMIT_FAILS, j] = failures
    dequeue(jobs, cs, js, pend, run, j)
    count_unplaced(jobs, js, sc, j, -1)
    limit = params.codes[P_BACKOFF_LIMIT]
    if failures > limit:
        js.dyn[D_STATUS, j] = S_FAILED
        js.time[T_END, j] = t
        js.time[T_PENDING, j] += t - js.time[T_PEND_SINCE, j]
        return
    js.dyn[D_STATUS, j] = S_BACKOFF
    delay = BACKOFF_BASE_S
    for _ in range(1, failures):
        delay = min(2.0 * delay, BACKOFF_MAX_S)
    push_timer(js, tm, run, TM_BACKOFF, t + delay, j)


@kernel
def undo_placement(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    j: int,
) -> None:
    """Take back a placement that was only tried (EASY's refused backfill, a preemption trial).

    Notes
    -----
    The state is restored exactly; the attempt the first pod began is
    withdrawn, so attempt numbers (and the draws keyed by them) count only
    placements that were kept.
    """
    if js.dyn[D_PLACED, j] == 0:
        return
    release_job_pods(params, jobs, cs, cl, ix, js, sc, run, j)
    js.dyn[D_ATTEMPTS, j] -= 1
