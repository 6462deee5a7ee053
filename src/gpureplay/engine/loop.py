"""The event loop: one replay of a job trace on a cluster, in chunks of simulated time.

:func:`init_state` allocates everything a replay mutates (:class:`EngineState`);
:func:`advance` then processes event times up to a stop time and returns, so a
caller can report progress between chunks. One call with ``t_stop = inf`` is a
run in one go, and any sequence of stop times gives bit-identical results.

Total order of work (the one place it is written down)
------------------------------------------------------
Time is float64 seconds from the trace start. Event times are the submit
times, the finish times of running jobs, the sample times ``k * interval``
(k = 0, 1, ...; see "Sample times") and, in periodic mode, the cycle ticks ``k *
session_interval``. The loop visits each distinct event time ``t`` once, in
increasing order, and at ``t`` does, in this order:

1. **completions**: every running job with ``finish_time == t`` finishes, in
   ``(finish_time, job_id)`` order (the completion heap's key), releasing its
   resources;
2. **arrivals**: every job with ``submit_time == t`` is admitted, in
   ``(submit_time, job_id)`` order: rejected if it cannot run on the empty
   cluster, queued otherwise;
3. **scheduling cycle**: event-driven mode (``session_interval == 0``) runs one
   cycle iff step 1 or 2 did anything (a rejected arrival counts); periodic
   mode runs one iff ``t`` is a tick, whatever changed;
4. **sample**: if ``t`` is the next sample time, one timeline row.

Sample times
------------
Sample ``k`` is at ``k * interval`` (k = 0, 1, ...), computed by that
product, never by accumulating ``+=`` (which drifts: ten additions of 0.1 are
not 1.0). ``interval`` starts at ``sample_interval``; when one more row would
make the timeline longer than ``max_samples`` rows, the interval doubles and
only the rows on the new grid (even ``k``) are kept, before the row due now
is considered (it is kept iff its time is on the new grid). The timeline is
therefore always the one a replay with the final interval would write.

GPU allocation integrals
------------------------
Allocation only changes at events, so between two processed event times
``t_prev < t`` it is constant and ``integral += allocated * (t - t_prev)`` is
exact. The window integral adds ``allocated * |[t_prev, t] & [window_start,
window_end]|`` the same way: the allocation inside a measurement window, with
no sampling error.

If step 3 started jobs of duration 0 they finish at ``t``: steps 1-3 repeat at
the same ``t`` (no new arrivals, no second sample) until no running job ends
at ``t``. Within a cycle the order is the queue order of
:mod:`gpureplay.engine.cycles` (ties by job id, pods of a pod-by-pod group by
pod index then job id). Random choices draw node first, then GPU.

The run ends, after some ``t``, when nothing runs, nothing is left to arrive
and (periodic mode) a cycle has run since the last completion or arrival; its
end time is that ``t``. With a horizon, no ``t > horizon`` is processed and the
end time is the last ``t`` processed (a skipped idle tick counts as processed).

Periodic idle ticks
-------------------
A periodic cycle that placed nothing, with no completion or arrival since,
would repeat itself exactly (same state, same queue); the loop jumps over such
ticks and advances the RNG by the draws the skipped cycles would have made
(failed gang attempts draw a fixed number of times). EASY backfill with random
placement is the exception (its outcome depends on the draws), so there every
tick runs.

Chunks
------
A chunk (one :func:`advance` call) processes whole event times only: it stops
at the top of the loop, before the first ``t > t_stop`` is touched, with every
loop scalar saved, so the next call carries on as if it had never stopped. The
end of the run (including the horizon's skipped ticks) is decided by the first
call that reaches it.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from gpureplay.engine.config import kernel
from gpureplay.engine.cycles import gang_cycle, pod_cycle
from gpureplay.engine.fitindex import index_build, index_layout
from gpureplay.engine.invariants import check_state
from gpureplay.engine.jobs import admit_job, complete_job
from gpureplay.engine.queueing import heap_pop
from gpureplay.engine.rng import rng_skip
from gpureplay.engine.state import (
    ADV_DONE,
    ADV_FAILED,
    ADV_PAUSED,
    BF_EASY,
    CD_APOS,
    CD_FAIL,
    CD_RESV,
    CLASS_DYN_FIELDS,
    CLOCK_FIELDS,
    CURSOR_FIELDS,
    D_STATUS,
    F_CPU,
    F_MEM,
    F_MILLI,
    F_WHOLE,
    G_MEM,
    G_MILLI,
    GANG,
    JF_SUBMIT,
    JOB_DYN_FIELDS,
    JOB_TIME_FIELDS,
    K_ALLOC,
    K_CYCLES,
    K_EVENTS,
    K_FREE_WHOLE,
    K_NRUN,
    K_RESV_HEAD,
    L_ARRIVAL,
    L_CYCLE_OWED,
    L_IDLE,
    L_IDLE_DRAWS,
    L_PROCESSED,
    L_SAMPLE_K,
    L_SAMPLES,
    L_STATUS,
    L_TICK_K,
    L_WIDEN,
    N_COUNTERS,
    N_CPU,
    N_GPU0,
    N_GPU_MEM,
    N_GPUS,
    N_MEM,
    N_MODEL,
    NODE_FREE_FIELDS,
    P_BACKFILL,
    P_GANG,
    P_GPU,
    P_NODE,
    RANDOM,
    S_FUTURE,
    TIMELINE_FIELDS,
    WHOLE,
    X_ERROR_T,
    X_INTEGRAL,
    X_NEXT_SAMPLE,
    X_NEXT_T,
    X_NOW,
    X_TICK_T,
    X_WINDOW_INTEGRAL,
    Float64Array,
    Int64Array,
    UInt64Array,
)
from gpureplay.engine.timeline import record_sample, thin_timeline


@kernel
def init_cluster(
    node_int: Int64Array, num_models: int, hist_width: int
) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array, Int64Array]:
    """The empty cluster: free arrays per node and GPU, per-model aggregates, counters.

    Returns
    -------
    tuple of numpy.ndarray
        ``node_free`` (``F_*`` rows), ``gpu_free`` (``G_*`` rows), the per-model
        histogram of wholly free GPUs per node, free milli per model, counters.

    Notes
    -----
    Every GPU starts at 1000 milli and its node's per-GPU memory; unknown CPU or
    memory was mapped to ``BIG`` at the boundary and never constrains.
    """
    num_nodes = node_int.shape[1]
    num_gpus = 0
    for n in range(num_nodes):
        num_gpus += node_int[N_GPUS, n]
    node_free = np.zeros((NODE_FREE_FIELDS, num_nodes), dtype=np.int64)
    gpu_free = np.zeros((2, num_gpus), dtype=np.int64)
    model_hist = np.zeros((max(num_models, 1), hist_width), dtype=np.int64)
    model_milli = np.zeros(max(num_models, 1), dtype=np.int64)
    counters = np.zeros(N_COUNTERS, dtype=np.int64)
    for n in range(num_nodes):
        gpus = node_int[N_GPUS, n]
        node_free[F_CPU, n] = node_int[N_CPU, n]
        node_free[F_MEM, n] = node_int[N_MEM, n]
        node_free[F_WHOLE, n] = gpus
        node_free[F_MILLI, n] = gpus * WHOLE
        for g in range(node_int[N_GPU0, n], node_int[N_GPU0, n] + gpus):
            gpu_free[G_MILLI, g] = WHOLE
            gpu_free[G_MEM, g] = node_int[N_GPU_MEM, n]
        model = node_int[N_MODEL, n]
        if model >= 0:
            model_hist[model, gpus] += 1
            model_milli[model] += gpus * WHOLE
    counters[K_FREE_WHOLE] = num_gpus
    counters[K_ALLOC] = 0
    counters[K_RESV_HEAD] = -1
    return node_free, gpu_free, model_hist, model_milli, counters


@kernel
def overlap(a: float, b: float, lo: float, hi: float) -> float:
    """Length of ``[a, b] & [lo, hi]`` (0 when they do not meet; ``lo = hi = inf``: always 0)."""
    return max(0.0, min(b, hi) - max(a, lo))


@kernel
def first_tick_at_or_after(t: float, interval: float, k: int) -> int:
    """Smallest tick index ``>= k`` whose time ``index * interval`` is ``>= t``.

    Notes
    -----
    Ticks are computed as ``index * interval`` (never by accumulation), like
    Volcano's fixed ``schedulePeriod``, so jumping over idle ticks lands on
    exactly the times stepping would.
    """
    guess = max(k, math.floor(t / interval))
    while guess * interval < t:
        guess += 1
    while guess > k and (guess - 1) * interval >= t:
        guess -= 1
    return guess


class EngineState(NamedTuple):
    """Every array the event loop mutates, in the order :func:`init_state` returns them.

    A plain tuple on the Python side: :func:`advance` takes the fields as
    positional arguments (``advance(*inputs, *state, t_stop)``), so numba sees
    arrays only. ``tl_time``/``tl_rows`` may be replaced by larger buffers
    during a chunk; :func:`advance` returns the current ones.
    """

    node_free: Int64Array
    gpu_free: Int64Array
    model_hist: Int64Array
    model_milli: Int64Array
    counters: Int64Array
    job_dyn: Int64Array
    job_time: Float64Array
    pod_node: Int64Array
    pod_time: Float64Array
    slot_gpu: Int64Array
    node_mark: Int64Array
    class_dyn: Int64Array
    active: Int64Array
    l0: UInt64Array
    l1: UInt64Array
    l2: UInt64Array
    run_f: Float64Array
    run_i: Int64Array
    merge_f: Float64Array
    merge_i: Int64Array
    scan_f: Float64Array
    scan_i: Int64Array
    touched: Int64Array
    proj_node: Int64Array
    proj_gpu: Int64Array
    proj_hist: Int64Array
    proj_milli: Int64Array
    proj_counters: Int64Array
    hold: Int64Array
    kept_shadow: Float64Array
    leaf: Int64Array
    offset: Int64Array
    keys: Int64Array
    tl_time: Float64Array
    tl_rows: Int64Array
    err: Int64Array
    clock: Float64Array
    cursor: Int64Array


#: Timeline rows allocated before the first sample; the buffers double when full.
TIMELINE_START_CAPACITY = 1024


@kernel
def init_state(
    policy: Int64Array,
    job_int: Int64Array,
    class_int: Int64Array,
    node_int: Int64Array,
    num_models: int,
    hist_width: int,
    num_pods: int,
    num_slots: int,
    bitset_sizes: Int64Array,
) -> tuple[npt.NDArray[Any], ...]:
    """Allocate and initialise everything one replay mutates: the fields of :class:`EngineState`.

    Parameters
    ----------
    policy
        ``P_*`` codes (the node policy decides whether the fit index is built).
    job_int, class_int, node_int
        Static job, class and node tables (``J_*``, ``C_*``, ``N_*`` rows).
    num_models, hist_width
        GPU model count, 1 + most GPUs on a node.
    num_pods, num_slots
        Sizes of the per-pod and per-GPU-slot placement records.
    bitset_sizes
        Word counts of the pending-set bitset levels.

    Returns
    -------
    tuple of numpy.ndarray
        The :class:`EngineState` fields in order: the empty cluster, every job
        not yet submitted, empty queues and heaps, scratch space for cycles,
        empty timeline buffers, a clean error record, the loop scalars at time 0.

    Notes
    -----
    Allocating once, outside :func:`advance`, is what makes the loop resumable:
    a chunk ends with all of its state in these arrays, so the next chunk
    continues exactly where it stopped (SimPy's ``Environment.run(until=...)``
    followed by another ``run``).
    """
    num_jobs = job_int.shape[1]
    num_classes = class_int.shape[1]
    num_nodes = node_int.shape[1]
    node_free, gpu_free, model_hist, model_milli, counters = init_cluster(node_int, num_models, hist_width)
    job_dyn = np.zeros((JOB_DYN_FIELDS, num_jobs), dtype=np.int64)
    job_dyn[D_STATUS, :] = S_FUTURE
    job_time = np.full((JOB_TIME_FIELDS, num_jobs), np.nan)
    pod_node = np.full(num_pods, -1, dtype=np.int64)
    pod_time = np.full(num_pods, np.nan)
    slot_gpu = np.full(num_slots, -1, dtype=np.int64)
    node_mark = np.full(num_nodes, -1, dtype=np.int64)
    class_dyn = np.zeros((CLASS_DYN_FIELDS, num_classes), dtype=np.int64)
    class_dyn[CD_APOS, :] = -1
    class_dyn[CD_FAIL, :] = -1
    class_dyn[CD_RESV, :] = -1
    active = np.zeros(max(num_classes, 1), dtype=np.int64)
    l0 = np.zeros(bitset_sizes[0], dtype=np.uint64)
    l1 = np.zeros(bitset_sizes[1], dtype=np.uint64)
    l2 = np.zeros(bitset_sizes[2], dtype=np.uint64)
    heap_len = max(num_jobs, num_classes, 1)
    run_f = np.zeros(heap_len)
    run_i = np.zeros((2, heap_len), dtype=np.int64)
    merge_f = np.zeros(heap_len)
    merge_i = np.zeros((2, heap_len), dtype=np.int64)
    scan_f = np.zeros(heap_len)
    scan_i = np.zeros((2, heap_len), dtype=np.int64)
    touched = np.zeros(max(num_classes, 1), dtype=np.int64)
    proj_node = np.zeros_like(node_free)
    proj_gpu = np.zeros_like(gpu_free)
    proj_hist = np.zeros_like(model_hist)
    proj_milli = np.zeros_like(model_milli)
    proj_counters = np.zeros_like(counters)
    hold = np.zeros(max(num_nodes, 1), dtype=np.int64)
    kept_shadow = np.zeros(1)
    leaf, offset, keys = index_layout(node_int, num_models, hist_width)
    if policy[P_NODE] != RANDOM:
        index_build(policy[P_NODE], node_int, node_free, leaf, offset, keys)
    tl_time = np.zeros(TIMELINE_START_CAPACITY)
    tl_rows = np.zeros((TIMELINE_FIELDS, TIMELINE_START_CAPACITY), dtype=np.int64)
    err = np.zeros(2, dtype=np.int64)
    clock = np.zeros(CLOCK_FIELDS)
    cursor = np.zeros(CURSOR_FIELDS, dtype=np.int64)
    cursor[L_STATUS] = ADV_PAUSED
    return (
        node_free, gpu_free, model_hist, model_milli, counters, job_dyn, job_time, pod_node, pod_time,
        slot_gpu, node_mark, class_dyn, active, l0, l1, l2, run_f, run_i, merge_f, merge_i, scan_f, scan_i,
        touched, proj_node, proj_gpu, proj_hist, proj_milli, proj_counters, hold, kept_shadow, leaf, offset,
        keys, tl_time, tl_rows, err, clock, cursor,
    )  # fmt: skip


@kernel
def advance(
    policy: Int64Array,
    session_interval: float,
    sample_interval: float,
    max_samples: int,
    horizon: float,
    window_start: float,
    window_end: float,
    debug: bool,
    job_int: Int64Array,
    job_float: Float64Array,
    job_mask: UInt64Array,
    job_reject: Int64Array,
    arrival: Int64Array,
    class_int: Int64Array,
    class_mask: UInt64Array,
    class_jobs: Int64Array,
    node_int: Int64Array,
    rng: UInt64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
    job_dyn: Int64Array,
    job_time: Float64Array,
    pod_node: Int64Array,
    pod_time: Float64Array,
    slot_gpu: Int64Array,
    node_mark: Int64Array,
    class_dyn: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    run_f: Float64Array,
    run_i: Int64Array,
    merge_f: Float64Array,
    merge_i: Int64Array,
    scan_f: Float64Array,
    scan_i: Int64Array,
    touched: Int64Array,
    proj_node: Int64Array,
    proj_gpu: Int64Array,
    proj_hist: Int64Array,
    proj_milli: Int64Array,
    proj_counters: Int64Array,
    hold: Int64Array,
    kept_shadow: Float64Array,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
    tl_time: Float64Array,
    tl_rows: Int64Array,
    err: Int64Array,
    clock: Float64Array,
    cursor: Int64Array,
    t_stop: float,
) -> tuple[int, Float64Array, Int64Array]:
    """Process every event time ``t <= t_stop`` of the replay (see the module docstring for the order).

    Parameters
    ----------
    policy
        ``P_*`` codes: queue order, gang mode, node and GPU placement, backfill, depth.
    session_interval, sample_interval, horizon
        Seconds; ``horizon = inf`` means none. ``sample_interval`` is the
        interval asked for; the one in use is ``sample_interval * 2**cursor[L_WIDEN]``.
    max_samples
        Most timeline rows (>= 1); the sample interval doubles rather than exceed it.
    window_start, window_end
        Measurement window (seconds) of ``clock[X_WINDOW_INTEGRAL]``; ``inf, inf`` for none.
    debug
        Check the invariants after every cycle and at the end.
    job_int, job_float, job_mask, job_reject, arrival
        Static job table (``J_*``/``JF_*`` rows), allowed-model masks, rejection
        code per job, job indices in ``(submit_time, job_id)`` order.
    class_int, class_mask, class_jobs
        Queue classes (``C_*`` rows) and the class-sorted job list.
    node_int
        Static node table (``N_*`` rows).
    rng
        ``[state, draws]`` of splitmix64, updated in place.
    node_free, gpu_free, ..., cursor
        The :class:`EngineState` fields from :func:`init_state`, updated in place.
    t_stop
        Last simulated time this call may process; ``inf`` runs to the end.

    Returns
    -------
    tuple
        The outcome (``ADV_PAUSED``, ``ADV_DONE`` or ``ADV_FAILED``, also left
        in ``cursor[L_STATUS]``) and the current timeline buffers ``tl_time``,
        ``tl_rows`` (replaced by larger ones when they filled up; rows
        ``[0, cursor[L_SAMPLES])`` are written). When paused,
        ``clock[X_NEXT_T]`` is the next event time (``> t_stop``). At the end
        ``clock[X_INTEGRAL]`` is the GPU-milli-second integral,
        ``clock[X_WINDOW_INTEGRAL]`` its part inside the window and
        ``clock[X_NOW]`` the end time; on failure ``err`` holds ``[code,
        entity]`` and ``clock[X_ERROR_T]`` the time of the failed check.

    Notes
    -----
    The loop structure is SimPy's ``Environment.step`` (pop the earliest event,
    handle it) specialised to four event sources whose next times are each
    known: the arrival cursor, the completion heap's top, the next sample and
    the next tick. The GPU-milli-second integral is exact between events
    because allocation only changes at events.

    A chunk stops only between two event times, before the next one is
    touched, and every scalar the loop carries is saved in ``clock`` and
    ``cursor`` (held in locals while the chunk runs, so the hot loop is the
    same as a run in one go). Results are therefore bit-identical whatever
    the chunk boundaries, like SimPy's ``run(until=...)`` called repeatedly.
    """
    status = cursor[L_STATUS]
    if status != ADV_PAUSED:
        return status, tl_time, tl_rows
    num_jobs = job_int.shape[1]
    mode = policy[P_GANG]
    periodic = session_interval > 0.0
    randomised = policy[P_NODE] == RANDOM or policy[P_GPU] == RANDOM
    jumpable = not (mode == GANG and policy[P_BACKFILL] == BF_EASY and randomised)
    total_gpus = gpu_free.shape[1]

    integral = clock[X_INTEGRAL]
    window_integral = clock[X_WINDOW_INTEGRAL]
    widen = cursor[L_WIDEN]
    interval = sample_interval
    for _ in range(widen):
        interval *= 2.0
    t_prev = clock[X_NOW]
    next_sample = clock[X_NEXT_SAMPLE]
    tick_t = clock[X_TICK_T]
    next_arrival = cursor[L_ARRIVAL]
    sample_k = cursor[L_SAMPLE_K]
    tick_k = cursor[L_TICK_K]
    cycle_owed = cursor[L_CYCLE_OWED] != 0  # periodic: a completion or arrival no cycle has seen yet
    idle = cursor[L_IDLE] != 0  # periodic: the last cycle placed nothing and nothing changed since
    idle_draws = np.uint64(cursor[L_IDLE_DRAWS])
    processed = cursor[L_PROCESSED] != 0
    samples = cursor[L_SAMPLES]
    capacity = tl_time.shape[0]
    while True:
        if processed and counters[K_NRUN] == 0 and next_arrival == num_jobs and not (periodic and cycle_owed):
            status = ADV_DONE
            break
        t = next_sample
        if next_arrival < num_jobs:
            t = min(t, job_float[JF_SUBMIT, arrival[next_arrival]])
        if counters[K_NRUN] > 0:
            t = min(t, run_f[0])
        if periodic and not idle:
            t = min(t, tick_t)
        if t > t_stop:
            # Nothing at t has been touched yet: the next chunk starts from this very point.
            clock[X_NEXT_T] = t
            break
        if t > horizon:
            if periodic and idle and tick_t <= horizon:
                # The skipped no-op ticks up to the horizon are still events: the run ends at the last one.
                k = first_tick_at_or_after(horizon, session_interval, tick_k)
                if k * session_interval > horizon:
                    k -= 1
                rng_skip(rng, int(np.uint64(k + 1 - tick_k) * idle_draws))
                counters[K_CYCLES] += k + 1 - tick_k
                counters[K_EVENTS] += 1
                last_tick = k * session_interval
                integral += float(counters[K_ALLOC]) * (last_tick - t_prev)
                window_integral += float(counters[K_ALLOC]) * overlap(
                    t_prev, last_tick, window_start, window_end
                )
                t_prev = last_tick
            status = ADV_DONE
            break
        if periodic and idle:
            k = first_tick_at_or_after(t, session_interval, tick_k)
            if k > tick_k:
                rng_skip(rng, int(np.uint64(k - tick_k) * idle_draws))
                counters[K_CYCLES] += k - tick_k
                tick_k = k
                tick_t = k * session_interval
        integral += float(counters[K_ALLOC]) * (t - t_prev)
        window_integral += float(counters[K_ALLOC]) * overlap(t_prev, t, window_start, window_end)
        t_prev = t
        processed = True
        counters[K_EVENTS] += 1
        first_pass = True
        while True:
            changed = False
            while counters[K_NRUN] > 0 and run_f[0] == t:
                j = run_i[1, 0]
                counters[K_NRUN] = heap_pop(run_f, run_i, counters[K_NRUN])
                complete_job(
                    j, policy, job_int, job_dyn, pod_node, slot_gpu, node_int, node_free, gpu_free,
                    model_hist, model_milli, counters, leaf, offset, keys,
                )  # fmt: skip
                changed = True
            if first_pass:
                while next_arrival < num_jobs and job_float[JF_SUBMIT, arrival[next_arrival]] == t:
                    admit_job(
                        arrival[next_arrival], job_reject, job_int, job_dyn, class_dyn, active, l0, l1, l2,
                        counters,
                    )  # fmt: skip
                    next_arrival += 1
                    changed = True
            if changed:
                cycle_owed = True
                idle = False
            if (periodic and t == tick_t) or (not periodic and changed):
                draws_before = rng[1]
                if mode == GANG:
                    placed = gang_cycle(
                        t, policy, rng, job_int, job_float, job_mask, job_dyn, job_time, pod_node, pod_time,
                        slot_gpu, node_mark, class_int, class_mask, class_jobs, class_dyn, active, l0, l1,
                        l2, node_int, node_free, gpu_free, model_hist, model_milli, counters, run_f, run_i,
                        merge_f, merge_i, scan_f, scan_i, proj_node, proj_gpu, proj_hist, proj_milli,
                        proj_counters, hold, kept_shadow, leaf, offset, keys,
                    )  # fmt: skip
                else:
                    placed = pod_cycle(
                        t, policy, rng, job_int, job_float, job_mask, job_dyn, job_time, pod_node, pod_time,
                        slot_gpu, node_mark, class_int, class_mask, class_jobs, class_dyn, active, l0, l1,
                        l2, node_int, node_free, gpu_free, model_hist, model_milli, counters, run_f, run_i,
                        merge_f, merge_i, scan_f, scan_i, touched, leaf, offset, keys,
                    )  # fmt: skip
                counters[K_CYCLES] += 1
                cycle_owed = False
                if periodic:
                    idle = jumpable and placed == 0
                    idle_draws = rng[1] - draws_before
                if debug and not check_state(
                    t, mode, job_int, job_dyn, job_time, pod_node, slot_gpu, class_int, class_dyn, active,
                    l0, node_int, node_free, gpu_free, model_hist, model_milli, counters, run_i, policy,
                    leaf, offset, keys, err,
                ):  # fmt: skip
                    clock[X_ERROR_T] = t
                    status = ADV_FAILED
                    break
            if first_pass and t == next_sample and samples == max_samples:
                # One more row would exceed max_samples: double the interval, keep the even-k rows.
                samples = thin_timeline(tl_time, tl_rows, samples)
                widen += 1
                interval *= 2.0
                sample_k = samples
                next_sample = sample_k * interval
            if first_pass and t == next_sample:
                if samples == capacity:
                    capacity = min(2 * capacity, max(max_samples, 1))
                    grown_time = np.zeros(capacity)
                    grown_rows = np.zeros((TIMELINE_FIELDS, capacity), dtype=np.int64)
                    for i in range(samples):
                        grown_time[i] = tl_time[i]
                        for f in range(TIMELINE_FIELDS):
                            grown_rows[f, i] = tl_rows[f, i]
                    tl_time = grown_time
                    tl_rows = grown_rows
                tl_time[samples] = t
                record_sample(
                    samples, mode, total_gpus, job_int, job_dyn, class_int, class_mask, class_jobs, active,
                    l0, l1, l2, node_int, node_free, gpu_free, counters, tl_rows,
                )  # fmt: skip
                samples += 1
                sample_k += 1
                next_sample = sample_k * interval
            first_pass = False
            if not (counters[K_NRUN] > 0 and run_f[0] == t):
                break
        if status == ADV_FAILED:
            break
        if periodic and t == tick_t:
            tick_k += 1
            tick_t = tick_k * session_interval
    if (
        status == ADV_DONE
        and debug
        and not check_state(
            t_prev, mode, job_int, job_dyn, job_time, pod_node, slot_gpu, class_int, class_dyn, active, l0,
            node_int, node_free, gpu_free, model_hist, model_milli, counters, run_i, policy, leaf, offset,
            keys, err,
        )
    ):  # fmt: skip
        clock[X_ERROR_T] = t_prev
        status = ADV_FAILED

    clock[X_INTEGRAL] = integral
    clock[X_WINDOW_INTEGRAL] = window_integral
    clock[X_NOW] = t_prev
    clock[X_NEXT_SAMPLE] = next_sample
    clock[X_TICK_T] = tick_t
    cursor[L_ARRIVAL] = next_arrival
    cursor[L_SAMPLE_K] = sample_k
    cursor[L_TICK_K] = tick_k
    cursor[L_CYCLE_OWED] = 1 if cycle_owed else 0
    cursor[L_IDLE] = 1 if idle else 0
    cursor[L_IDLE_DRAWS] = np.int64(idle_draws)
    cursor[L_PROCESSED] = 1 if processed else 0
    cursor[L_SAMPLES] = samples
    cursor[L_STATUS] = status
    cursor[L_WIDEN] = widen
    return status, tl_time, tl_rows
