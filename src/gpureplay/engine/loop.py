"""The event loop: one replay of a job trace on a cluster, in chunks of simulated time.

:func:`advance` processes event times up to a stop time and returns, so a
caller can report progress (or notice an interrupt) between chunks. One call
with ``t_stop = inf`` is a run in one go, and any sequence of stop times gives
bit-identical results.

Total order of work (the one place it is written down)
------------------------------------------------------
Time is float64 seconds from the trace start. Event times are the submit
times, the finish times of running jobs, the timers (an evicted job's end of
grace period), the sample times ``k * sample_interval`` and, in periodic mode,
the cycle ticks ``k * session_interval`` and, under ``preemption: reclaim_idle``, the
next time a running job stops being exempt from reclaim (:mod:`gpureplay.engine.preemption.idle`; it
counts as a change: the preemption searches that failed run again), or under KAI queues with a
min-runtime, while jobs are pending, the next time a running job's min-runtime ends
(:mod:`gpureplay.engine.queues.kai.evict`; also a change). The loop visits each distinct event
time ``t`` once, in increasing order, and at ``t`` does, in this order:

1. **completions**: every running job with ``finish_time == t`` finishes, in
   ``(finish_time, job_id)`` order, releasing its resources;
   then every MIG GPU whose re-partitioning downtime ends at ``t`` gets its
   new config's instances (:mod:`gpureplay.engine.devices.repartition`);
2. **timers** due at ``t``, in ``(kind, sequence)`` order: an evicted job's
   grace period ends (it releases and re-enters its queue); then the
   ``reclaim_idle`` wake, if due (a change);
3. **arrivals**: every job with ``submit_time == t`` is admitted, in
   ``(submit_time, job_id)`` order: rejected if it cannot run on the empty
   cluster, queued otherwise;
4. **scheduling cycle**: event-driven mode (``session_interval == 0``) runs one
   cycle iff step 1, 2 or 3 did anything (a rejected arrival counts);
   periodic mode runs one iff ``t`` is a tick, whatever changed; with
   ``mig_reconfigure: idle`` the re-partitioning controller follows it; under
   ``reclaim_idle`` the next wake is set after it (:func:`gpureplay.engine.preemption.idle.next_wake`);
5. **sample**: if ``t`` is the next sample time, one timeline row.

If step 4 started jobs that finish at ``t`` (duration 0) or evicted jobs
whose grace period is 0, steps 1, 2 and 4 repeat at the same ``t`` (no new
arrivals, no second sample) until nothing more is due at ``t``. Within a
cycle the order is the queue order of :mod:`gpureplay.engine.cycles`.

The run ends, after some ``t``, when nothing runs, nothing is terminating,
nothing is left to arrive and (periodic mode) a cycle has run since the last
change; its end time is that ``t``. With a horizon, no ``t > horizon`` is
processed, and a run not over by then ends at the horizon itself: a horizon is
a time, not an event, so the end time (and every figure cut there) does not
depend on which event, sample ticks included, came last before it.

Periodic idle ticks
-------------------
A periodic cycle that changed nothing, with nothing changed since, would
repeat itself exactly (same state, same queue, and draws keyed by job, not
consumed), so the loop jumps over such ticks. A nomination that ended at the
end of a cycle is a change: the room it kept is free at the next tick.

Chunks and room
---------------
A chunk processes whole event times only: it stops at the top of the loop,
before the first ``t > t_stop`` is touched, with every loop scalar saved, so
the next call carries on as if it had never stopped. When a result buffer
(timeline, attempts) may not have room for what the next pass can write, the
loop stops with ``ADV_GROW`` - at the top of an event time, or between two
passes of one (``L_MIDPASS``) - the caller grows the buffer and calls again.
"""

from __future__ import annotations

import math

from gpureplay.engine.cycles import cycle
from gpureplay.engine.devices.repartition import finish_repartitions, repartition_idle
from gpureplay.engine.invariants import check_full, check_touched
from gpureplay.engine.jit.config import entry_kernel, inline_kernel, kernel
from gpureplay.engine.jobs import admit_job, complete_job, requeue, terminate_job
from gpureplay.engine.preemption.idle import next_wake
from gpureplay.engine.queues.kueue.pods_ready import ready_timeout_given
from gpureplay.engine.state.bundles import Classes, Cluster, Jobs, Params, Run, State
from gpureplay.engine.state.layout import (
    ADV_DONE,
    ADV_FAILED,
    ADV_GROW,
    ADV_LIVELOCK,
    ADV_PAUSED,
    JF_SUBMIT,
    K_ATTEMPTS,
    K_CYCLES,
    K_EVENTS,
    K_NRUN,
    K_NTERM,
    K_PREEMPTIONS,
    K_PVERSION,
    L_ARRIVAL,
    L_CYCLE_OWED,
    L_FIRST_PASS,
    L_IDLE,
    L_MIDPASS,
    L_PROCESSED,
    L_SAMPLE_K,
    L_SAMPLES,
    L_STATUS,
    L_TICK_K,
    P_GANG,
    P_MAX_EVICTIONS,
    P_MAX_SAMPLES,
    P_MIG_RECONFIG,
    P_PREEMPT,
    PF_HORIZON,
    PF_SESSION,
    PF_WINDOW0,
    PF_WINDOW1,
    PREEMPT_IDLE,
    T_EVICTED,
    TM_BACKOFF,
    TM_PODS_READY,
    TM_READY_BACKOFF,
    TM_TERMINATED,
    TOT_ALLOC,
    X_ERROR_T,
    X_INTEGRAL,
    X_MIG_READY,
    X_NEXT_SAMPLE,
    X_NEXT_T,
    X_NOW,
    X_SAMPLE_INTERVAL,
    X_SEG_LEVEL,
    X_SEG_T,
    X_TICK_T,
    X_WAKE,
    X_WINDOW_INTEGRAL,
    Float64Array,
)
from gpureplay.engine.state.timers import next_completion, next_timer, pop_completion, pop_timer
from gpureplay.engine.timeline import record_sample, widen


@kernel
def first_tick_at_or_after(t: float, interval: float, k: int) -> int:
    """Smallest tick index ``>= k`` whose time ``index * interval`` is ``>= t``.

    Notes
    -----
    Starts from the division and corrects by one step either way, so the
    answer agrees with the exact products ``index * interval`` the loop uses.
    """
    guess = max(k, math.floor(t / interval))
    while guess > k and (guess - 1) * interval >= t:
        guess -= 1
    while guess * interval < t:
        guess += 1
    return guess


@inline_kernel
def integrate_to(clock: Float64Array, t: float, w0: float, w1: float) -> None:
    """Add the open allocation segment, from ``clock[X_SEG_T]`` to ``t``, to the integrals (whole run and
    window ``[w0, w1]``); the segment goes on from ``t``."""
    level, start = clock[X_SEG_LEVEL], clock[X_SEG_T]
    clock[X_INTEGRAL] += level * (t - start)
    clock[X_WINDOW_INTEGRAL] += level * max(0.0, min(t, w1) - max(start, w0))
    clock[X_SEG_T] = t


@inline_kernel
def allocation_from(clock: Float64Array, level: float, t: float, w0: float, w1: float) -> None:
    """The allocation is ``level`` milli-GPU from ``t`` on: a change closes the open segment at ``t``.

    Notes
    -----
    The allocation only changes at event times, so the integrals are exact. They are summed by segments
    of constant allocation, not by event times: sample ticks (events that change nothing) never split a
    sum, so the integrals are bit-identical for every sample interval (and every chunking).
    """
    if level != clock[X_SEG_LEVEL]:
        integrate_to(clock, t, w0, w1)
        clock[X_SEG_LEVEL] = level


@inline_kernel
def attempt_room(jobs: Jobs, run: Run) -> bool:
    """Whether the attempt records can take what one pass may write (one row per job at most)."""
    return bool(run.att_i.shape[1] - run.counters[K_ATTEMPTS] > jobs.ints.shape[1])


@entry_kernel
def advance(params: Params, jobs: Jobs, cs: Classes, cl: Cluster, st: State, t_stop: float) -> int:
    """Process every event time ``t <= t_stop`` of the replay (see the module docstring for the order).

    Parameters
    ----------
    params, jobs, cs
        Policy codes and settings, the static job table, the pending classes.
    cl, st
        The cluster and the rest of the replay's state (:class:`gpureplay.engine.state.bundles.State`),
        updated in place.
    t_stop
        Last simulated time this call may process; ``inf`` runs to the end.

    Returns
    -------
    int
        ``ADV_PAUSED`` (``run.clock[X_NEXT_T]`` is the next event time, ``>
        t_stop``), ``ADV_DONE``, ``ADV_FAILED`` (``run.err`` holds ``[code,
        entity]`` and ``run.clock[X_ERROR_T]`` the time of the failed check),
        ``ADV_GROW`` (a result buffer needs room; grow it and call again) or
        ``ADV_LIVELOCK`` (the evictions passed ``P_MAX_EVICTIONS``: the run
        stops, mid-instant when grace periods are 0). Also
        left in ``run.cursor[L_STATUS]``. At the end ``run.clock[X_INTEGRAL]``
        is the GPU-milli-second integral and ``run.clock[X_NOW]`` the end time.

    Notes
    -----
    The loop structure is SimPy's ``Environment.step`` (pop the earliest event,
    handle it) over five event sources whose next times are each known: the
    arrival cursor, the completion heap, the timer heap, the next sample and
    the next tick. The GPU-milli-second integrals are exact between events
    because allocation only changes at events.
    """
    ix, js, pend, tm, sc, run = st.ix, st.js, st.pend, st.tm, st.sc, st.run
    pods, easy, pre, dbg, tas, numa, quota = st.pods, st.easy, st.pre, st.dbg, st.tas, st.numa, st.quota
    status = run.cursor[L_STATUS]
    if status != ADV_PAUSED and status != ADV_GROW:
        return int(status)
    num_jobs = jobs.ints.shape[1]
    mode = params.codes[P_GANG]
    session = params.flt[PF_SESSION]
    periodic = session > 0.0
    horizon = params.flt[PF_HORIZON]
    w0 = params.flt[PF_WINDOW0]
    w1 = params.flt[PF_WINDOW1]
    max_samples = params.codes[P_MAX_SAMPLES]
    repartitioning = params.codes[P_MIG_RECONFIG] != 0
    reclaiming_idle = params.codes[P_PREEMPT] == PREEMPT_IDLE
    clock = run.clock
    cursor = run.cursor
    counters = run.counters

    t_prev = clock[X_NOW]
    tick_t = clock[X_TICK_T]
    next_arrival = cursor[L_ARRIVAL]
    tick_k = cursor[L_TICK_K]
    cycle_owed = cursor[L_CYCLE_OWED] != 0
    idle = cursor[L_IDLE] != 0
    processed = cursor[L_PROCESSED] != 0
    midpass = cursor[L_MIDPASS] != 0
    first_pass = cursor[L_FIRST_PASS] != 0
    status = ADV_PAUSED
    t = t_prev
    while True:
        if midpass:
            t = t_prev
            midpass = False
        else:
            completion_t = next_completion(js, tm, run)
            timer_t = next_timer(js, tm, run)
            if (
                processed
                and counters[K_NRUN] == 0
                and counters[K_NTERM] == 0
                and math.isinf(timer_t)
                and math.isinf(clock[X_MIG_READY])
                and next_arrival == num_jobs
                and not (periodic and cycle_owed)
            ):
                status = ADV_DONE
                break
            next_sample = clock[X_NEXT_SAMPLE]
            t = min(min(next_sample, completion_t), min(timer_t, clock[X_MIG_READY]))
            t = min(t, clock[X_WAKE])
            if next_arrival < num_jobs:
                t = min(t, jobs.flts[JF_SUBMIT, jobs.arrival[next_arrival]])
            if periodic and not idle:
                t = min(t, tick_t)
            if t > horizon:
                # Before the chunk test: a run whose next event lies past the horizon is over, not
                # paused (a pause there would make one more call that processes nothing).
                if periodic and idle and tick_t <= horizon:
                    # The skipped no-op ticks up to the horizon ran, as cycles that changed nothing.
                    k = first_tick_at_or_after(horizon, session, tick_k)
                    if k * session > horizon:
                        k -= 1
                    counters[K_CYCLES] += k + 1 - tick_k
                # A horizon is a time, not an event: the run is cut at it whatever happened (or was
                # sampled) last, so every figure, allocation included, runs to the horizon.
                allocation_from(clock, float(cl.totals[TOT_ALLOC]), t_prev, w0, w1)
                t_prev = horizon
                status = ADV_DONE
                break
            if t > t_stop:
                # Nothing at t has been touched yet: the next chunk starts from this very point.
                clock[X_NEXT_T] = t
                break
            if t == next_sample and run.cursor[L_SAMPLES] == run.tl_flt.shape[1]:
                if run.tl_flt.shape[1] < max_samples:
                    status = ADV_GROW
                    break
                widen(run)
                clock[X_NEXT_SAMPLE] = run.cursor[L_SAMPLE_K] * clock[X_SAMPLE_INTERVAL]
                continue  # the widened grid may not sample at t: choose the event time again
            if not attempt_room(jobs, run):
                status = ADV_GROW
                break
            if periodic and idle:
                k = first_tick_at_or_after(t, session, tick_k)
                if k > tick_k:
                    counters[K_CYCLES] += k - tick_k
                    tick_k = k
                    tick_t = k * session
            # What the last event time left allocated held until now.
            allocation_from(clock, float(cl.totals[TOT_ALLOC]), t_prev, w0, w1)
            t_prev = t
            processed = True
            counters[K_EVENTS] += 1
            first_pass = True
        while True:
            if not first_pass and not attempt_room(jobs, run):
                midpass = True
                status = ADV_GROW
                break
            changed = False
            while next_completion(js, tm, run) == t:
                j = pop_completion(tm, run)
                complete_job(params, jobs, cs, cl, ix, js, tm, sc, run, j, t)
                changed = True
            if clock[X_MIG_READY] == t:
                finish_repartitions(cl, run, t)
                changed = True
            while next_timer(js, tm, run) == t:
                kind, target = pop_timer(tm, run)
                if kind == TM_TERMINATED:
                    terminate_job(params, jobs, cs, cl, ix, js, pend, sc, run, target, t)
                elif kind == TM_BACKOFF:
                    requeue(params, jobs, cs, js, pend, sc, run, target, t)
                elif kind == TM_READY_BACKOFF:
                    # Kueue orders it by its eviction time (requeuingStrategy.timestamp: Eviction).
                    requeue(params, jobs, cs, js, pend, sc, run, target, js.time[T_EVICTED, target])
                elif kind == TM_PODS_READY:
                    ready_timeout_given(quota, params, jobs, cs, cl, ix, js, sc, run, tm, target, t)
                changed = True
            if clock[X_WAKE] == t:
                # reclaim_idle: a running job stops being exempt now; failed searches may succeed.
                clock[X_WAKE] = math.inf
                counters[K_PVERSION] += 1
                changed = True
            if first_pass:
                while next_arrival < num_jobs and jobs.flts[JF_SUBMIT, jobs.arrival[next_arrival]] == t:
                    admit_job(jobs, cs, js, pend, sc, run, jobs.arrival[next_arrival], t)
                    next_arrival += 1
                    changed = True
            if changed:
                cycle_owed = True
                idle = False
            if (periodic and t == tick_t) or (not periodic and changed):
                changes = cycle(
                    pods, quota, params, jobs, cs, cl, ix, js, pend, tm, sc, run, easy, pre, tas, numa, t
                )
                counters[K_CYCLES] += 1
                if counters[K_PREEMPTIONS] > params.codes[P_MAX_EVICTIONS]:
                    # Jobs evict one another without end (with no grace, all at one instant): stop here.
                    status = ADV_LIVELOCK
                    break
                cycle_owed = False
                if reclaiming_idle:
                    clock[X_WAKE] = next_wake(jobs, js, tm, run, t)
                if repartitioning:
                    changes += repartition_idle(params, cs, cl, pend, run, sc, t)
                if periodic:
                    idle = changes == 0
                if not check_touched(dbg, params, jobs, cs, cl, ix, js, pend, sc, run):
                    clock[X_ERROR_T] = t
                    status = ADV_FAILED
                    break
            if first_pass and t == clock[X_NEXT_SAMPLE]:
                record_sample(jobs, cs, cl, js, pend, tm, run, mode, t)
                clock[X_NEXT_SAMPLE] = run.cursor[L_SAMPLE_K] * clock[X_SAMPLE_INTERVAL]
            first_pass = False
            if not (
                next_completion(js, tm, run) == t or next_timer(js, tm, run) == t or clock[X_MIG_READY] == t
            ):
                break
        if status != ADV_PAUSED:
            break
        if periodic and t == tick_t:
            tick_k += 1
            tick_t = tick_k * session
    if status == ADV_DONE and not check_full(dbg, params, jobs, cs, cl, ix, js, pend, tm, run, t_prev):
        clock[X_ERROR_T] = t_prev
        status = ADV_FAILED
    if status != ADV_PAUSED and status != ADV_GROW:
        # Over: the integrals take the open segment up to the end time (at a horizon, the horizon).
        integrate_to(clock, t_prev, w0, w1)
    clock[X_NOW] = t_prev
    clock[X_TICK_T] = tick_t
    cursor[L_ARRIVAL] = next_arrival
    cursor[L_TICK_K] = tick_k
    cursor[L_CYCLE_OWED] = 1 if cycle_owed else 0
    cursor[L_IDLE] = 1 if idle else 0
    cursor[L_PROCESSED] = 1 if processed else 0
    cursor[L_MIDPASS] = 1 if midpass else 0
    cursor[L_FIRST_PASS] = 1 if first_pass else 0
    cursor[L_STATUS] = status
    return status
