"""Event heaps: completions and timers, each with lazy deletion.

A running job's completion is an entry ``(finish time, job_id) -> (job,
generation)``; a timer is ``(time, kind, sequence) -> (target job,
generation)``. Removing a running job (an eviction, later a failure or a
slow-down that moves its finish time) bumps the job's generation
(``D_GEN``); entries of an older generation are stale and are dropped when
they reach the top, so nothing ever has to be found inside a heap. When a
heap fills up with stale entries it is compacted (rebuilt from its live
entries), so each heap needs room for one live entry per job only.
"""

from __future__ import annotations

import math

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.state.bundles import Jobs, JobState, Run, Timers
from gpureplay.engine.state.heaps import event_pop, event_push
from gpureplay.engine.state.layout import (
    D_GEN,
    D_STATUS,
    J_ID,
    K_NRUNHEAP,
    K_NTIMERS,
    K_TIMER_SEQ,
    S_RUNNING,
    Float64Array,
    Int64Array,
)


@kernel
def _compact(js: JobState, hf: Float64Array, hi: Int64Array, size: int) -> int:
    """Rebuild a heap from its live entries (payload generation == the job's); returns the new size."""
    live = 0
    for i in range(size):
        if hi[3, i] == js.dyn[D_GEN, hi[2, i]]:
            hf[live] = hf[i]
            for r in range(4):
                hi[r, live] = hi[r, i]
            live += 1
    # Re-heapify by pushing each live entry in turn (entries [0, i) already form a heap).
    out = 0
    for i in range(live):
        key = hf[i]
        t0 = hi[0, i]
        t1 = hi[1, i]
        p0 = hi[2, i]
        p1 = hi[3, i]
        out = event_push(hf, hi, out, key, t0, t1, p0, p1)
    return out


@kernel
def push_completion(jobs: Jobs, js: JobState, tm: Timers, run: Run, j: int, finish: float) -> None:
    """Schedule running job ``j``'s completion at ``finish`` (under its current generation).

    Notes
    -----
    Ties at one time break by job id: the v1 order of completions.
    """
    size = run.counters[K_NRUNHEAP]
    if size == tm.run_f.shape[0]:
        size = _compact(js, tm.run_f, tm.run_i, size)
    run.counters[K_NRUNHEAP] = event_push(
        tm.run_f, tm.run_i, size, finish, jobs.ints[J_ID, j], 0, j, js.dyn[D_GEN, j]
    )


@kernel
def next_completion(js: JobState, tm: Timers, run: Run) -> float:
    """Time of the earliest live completion (stale entries on top are dropped); ``inf`` when none."""
    size = run.counters[K_NRUNHEAP]
    while size > 0:
        j = tm.run_i[2, 0]
        if tm.run_i[3, 0] == js.dyn[D_GEN, j] and js.dyn[D_STATUS, j] == S_RUNNING:
            run.counters[K_NRUNHEAP] = size
            return float(tm.run_f[0])
        size = event_pop(tm.run_f, tm.run_i, size)
    run.counters[K_NRUNHEAP] = 0
    return math.inf


@inline_kernel
def pop_completion(tm: Timers, run: Run) -> int:
    """Remove the top completion (live: call :func:`next_completion` first); returns its job."""
    j = tm.run_i[2, 0]
    run.counters[K_NRUNHEAP] = event_pop(tm.run_f, tm.run_i, run.counters[K_NRUNHEAP])
    return int(j)


@kernel
def push_timer(js: JobState, tm: Timers, run: Run, kind: int, time: float, target: int) -> None:
    """Schedule a timer of ``kind`` for job ``target`` at ``time``.

    Notes
    -----
    At one time, timers fire in ``(kind, sequence)`` order: lower kinds first,
    then in the order they were set.
    """
    size = run.counters[K_NTIMERS]
    if size == tm.tm_f.shape[0]:
        size = _compact(js, tm.tm_f, tm.tm_i, size)
    seq = run.counters[K_TIMER_SEQ]
    run.counters[K_TIMER_SEQ] = seq + 1
    run.counters[K_NTIMERS] = event_push(
        tm.tm_f, tm.tm_i, size, time, kind, seq, target, js.dyn[D_GEN, target]
    )


@kernel
def next_timer(js: JobState, tm: Timers, run: Run) -> float:
    """Time of the earliest live timer (stale ones on top are dropped); ``inf`` when none."""
    size = run.counters[K_NTIMERS]
    while size > 0:
        if tm.tm_i[3, 0] == js.dyn[D_GEN, tm.tm_i[2, 0]]:
            run.counters[K_NTIMERS] = size
            return float(tm.tm_f[0])
        size = event_pop(tm.tm_f, tm.tm_i, size)
    run.counters[K_NTIMERS] = 0
    return math.inf


@inline_kernel
def pop_timer(tm: Timers, run: Run) -> tuple[int, int]:
    """Remove the top timer (live: call :func:`next_timer` first); returns ``(kind, target)``."""
    kind = tm.tm_i[0, 0]
    target = tm.tm_i[2, 0]
    run.counters[K_NTIMERS] = event_pop(tm.tm_f, tm.tm_i, run.counters[K_NTIMERS])
    return kind, target
