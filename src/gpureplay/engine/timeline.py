"""Timeline samples: allocation, queue lengths, fragmentation and preemption at one instant.

Samples are taken at ``k * interval`` (k = 0, 1, ...): each sample time is an
event time of the loop. The number of rows is bounded: when the buffer holds
``max_samples`` rows the interval doubles and every other row is dropped, so
the rows kept are exactly the samples of the doubled grid and the rule stays
``k * interval``.
"""

from __future__ import annotations

from gpureplay.engine.devices.mig import stranded_slices
from gpureplay.engine.fit.resources import free_capacity
from gpureplay.engine.jit.config import kernel
from gpureplay.engine.pending import cursor_job, cursor_reset, cursor_step
from gpureplay.engine.state.bundles import Classes, Cluster, Jobs, JobState, Pending, Run, Timers
from gpureplay.engine.state.layout import (
    C_MILLI,
    C_TENANT,
    D_GEN,
    D_PLACED,
    D_STATUS,
    F_WHOLE,
    GANG,
    J_CLASS,
    J_ID,
    J_MILLI,
    K_NACTIVE,
    K_NPEND,
    K_NRUN,
    K_NRUNHEAP,
    K_NTERM,
    K_NTIMERS,
    K_PREEMPTIONS,
    L_SAMPLE_K,
    L_SAMPLES,
    L_WIDENINGS,
    S_RUNNING,
    S_TERMINATING,
    T_EVICTED,
    T_KEY1,
    T_KEY2,
    T_PROGRESS0,
    T_START,
    TIMELINE_FIELDS,
    TL_FRAGMENTED,
    TL_GPUS,
    TL_MIG_STRANDED,
    TL_MILLI,
    TL_PENDING,
    TL_PREEMPTIONS,
    TL_RUNNING,
    TL_TERMINATING,
    TLF_LOST,
    TLF_TIME,
    TM_TERMINATED,
    TOT_ALLOC,
    TOT_FREE_WHOLE,
    X_LOST,
    X_SAMPLE_INTERVAL,
)


@kernel
def smallest_pending_class(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, run: Run, mode: int) -> int:
    """Class of the pending pod with the least ``gpu_milli > 0``, ties by queue order (-1: none).

    Notes
    -----
    Gang mode compares class heads by queue key; pod-by-pod mode by the pod
    queue key ``(queue key, pods placed, job_id)`` of each job's next unplaced
    pod (kube-scheduler's queue holds pods, not jobs). O(active classes).
    """
    best = -1
    best_m = 0
    best_j = -1
    best_placed = 0
    for i in range(run.counters[K_NACTIVE]):
        c = pend.active[i]
        m = cs.ints[C_MILLI, c]
        if m <= 0 or (best >= 0 and m > best_m):
            continue
        cursor_reset(cs, pend, c)
        j = cursor_job(jobs, cs, js, pend, c)
        placed = js.dyn[D_PLACED, j]
        if mode != GANG:
            # Among the class's jobs with the head's key, the pod queue takes the fewest placed, then id.
            k1 = js.time[T_KEY1, j]
            k2 = js.time[T_KEY2, j]
            cursor_step(jobs, cs, js, pend, c, j)
            while True:
                other = cursor_job(jobs, cs, js, pend, c)
                if other < 0 or js.time[T_KEY1, other] != k1 or js.time[T_KEY2, other] != k2:
                    break
                if js.dyn[D_PLACED, other] < placed or (
                    js.dyn[D_PLACED, other] == placed and jobs.ints[J_ID, other] < jobs.ints[J_ID, j]
                ):
                    j = other
                    placed = js.dyn[D_PLACED, other]
                cursor_step(jobs, cs, js, pend, c, other)
        if best < 0 or m < best_m or queue_before(jobs, js, pend, cs, mode, j, placed, best_j, best_placed):
            best = c
            best_m = m
            best_j = j
            best_placed = placed
    return best


@kernel
def queue_before(
    jobs: Jobs,
    js: JobState,
    pend: Pending,
    cs: Classes,
    mode: int,
    a: int,
    placed_a: int,
    b: int,
    placed_b: int,
) -> bool:
    """Whether job ``a``'s next pod is ahead of job ``b``'s in the queue."""
    ra = pend.tenant_rank[cs.ints[C_TENANT, jobs.ints[J_CLASS, a]]]
    rb = pend.tenant_rank[cs.ints[C_TENANT, jobs.ints[J_CLASS, b]]]
    if ra != rb:
        return bool(ra < rb)
    if js.time[T_KEY1, a] != js.time[T_KEY1, b]:
        return bool(js.time[T_KEY1, a] < js.time[T_KEY1, b])
    if js.time[T_KEY2, a] != js.time[T_KEY2, b]:
        return bool(js.time[T_KEY2, a] < js.time[T_KEY2, b])
    if mode != GANG and placed_a != placed_b:
        return placed_a < placed_b
    return bool(jobs.ints[J_ID, a] < jobs.ints[J_ID, b])


@kernel
def uncharged_lost(jobs: Jobs, js: JobState, tm: Timers, run: Run, t: float) -> float:
    """Lost GPU-seconds spent by ``t`` but charged only when they end (restart overheads, grace periods).

    Notes
    -----
    A running attempt's restart overhead and an evicted job's grace period
    are charged to ``X_LOST`` when they end; a sample adds what they have
    spent so far, so the timeline's running total agrees with the job table
    at every instant. Running jobs are found in the completion heap and
    terminating ones in the timer heap (live entries only). Without an
    eviction no job restarts or terminates, and nothing is scanned.
    """
    if run.counters[K_PREEMPTIONS] == 0:
        return 0.0
    lost = 0.0
    for i in range(run.counters[K_NRUNHEAP]):
        j = tm.run_i[2, i]
        if tm.run_i[3, i] == js.dyn[D_GEN, j] and js.dyn[D_STATUS, j] == S_RUNNING:
            spent = min(t, js.time[T_PROGRESS0, j]) - js.time[T_START, j]
            if spent > 0.0:
                lost += js.dyn[D_PLACED, j] * jobs.ints[J_MILLI, j] / 1000.0 * spent
    for i in range(run.counters[K_NTIMERS]):
        j = tm.tm_i[2, i]
        if (
            tm.tm_i[0, i] == TM_TERMINATED
            and tm.tm_i[3, i] == js.dyn[D_GEN, j]
            and js.dyn[D_STATUS, j] == S_TERMINATING
        ):
            lost += js.dyn[D_PLACED, j] * jobs.ints[J_MILLI, j] / 1000.0 * (t - js.time[T_EVICTED, j])
    return lost


@kernel
def record_sample(
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    pend: Pending,
    tm: Timers,
    run: Run,
    mode: int,
    t: float,
) -> None:
    """Append the timeline row at ``t`` (the caller makes room first).

    Notes
    -----
    ``fragmented_gpus`` counts wholly free GPUs on nodes where the smallest
    pending GPU pod cannot fit now: idle cards that the queue cannot use, a
    whole-GPU simplification of FGD's fragmentation measure (Weng et al.,
    ATC'23, ``pkg/utils/frag.go``: a node's free GPU is a fragment for a task
    that cannot be placed there). ``mig_stranded_slices``:
    :func:`gpureplay.engine.devices.mig.stranded_slices`. Each queue's ``QU_*`` counts
    follow (``queues.parquet``).
    """
    row = run.cursor[L_SAMPLES]
    run.tl_flt[TLF_TIME, row] = t
    run.tl_flt[TLF_LOST, row] = run.clock[X_LOST] + uncharged_lost(jobs, js, tm, run, t)
    out = run.tl_rows
    out[TL_GPUS, row] = cl.gpu_free.shape[1] - cl.totals[TOT_FREE_WHOLE]
    out[TL_MILLI, row] = cl.totals[TOT_ALLOC]
    out[TL_PENDING, row] = run.counters[K_NPEND]
    out[TL_RUNNING, row] = run.counters[K_NRUN]
    out[TL_PREEMPTIONS, row] = run.counters[K_PREEMPTIONS]
    out[TL_TERMINATING, row] = run.counters[K_NTERM]
    c = smallest_pending_class(jobs, cs, js, pend, run, mode)
    fragmented = 0
    if c >= 0:
        for n in range(cl.node_int.shape[1]):
            if cl.node_free[F_WHOLE, n] == 0:
                continue
            if free_capacity(cl, cs, c, n, 1) == 0:
                fragmented += cl.node_free[F_WHOLE, n]
    out[TL_FRAGMENTED, row] = fragmented
    out[TL_MIG_STRANDED, row] = stranded_slices(cl, cs)
    width = run.queues.shape[0]
    for q in range(run.queues.shape[1]):
        for f in range(width):
            out[TIMELINE_FIELDS + width * q + f, row] = run.queues[f, q]
    run.cursor[L_SAMPLES] = row + 1
    run.cursor[L_SAMPLE_K] += 1


@kernel
def widen(run: Run) -> None:
    """Double the sample interval, keeping the rows that fall on the doubled grid (every other one).

    Notes
    -----
    Rows ``0 .. S-1`` are the samples ``k = 0 .. S-1`` of the current grid, so
    the rows kept are ``k = 0, 2, 4, ...`` and the next sample is the first
    even ``k`` not yet taken: ``ceil(next_k / 2)`` on the new grid.
    """
    samples = run.cursor[L_SAMPLES]
    kept = 0
    for i in range(0, samples, 2):
        for f in range(run.tl_flt.shape[0]):
            run.tl_flt[f, kept] = run.tl_flt[f, i]
        for f in range(run.tl_rows.shape[0]):
            run.tl_rows[f, kept] = run.tl_rows[f, i]
        kept += 1
    run.cursor[L_SAMPLES] = kept
    run.cursor[L_SAMPLE_K] = (run.cursor[L_SAMPLE_K] + 1) // 2
    run.clock[X_SAMPLE_INTERVAL] *= 2.0
    run.cursor[L_WIDENINGS] += 1
