"""Idle-resource reclaim: which running jobs scheduler-plugins' ReclaimIdleResource may evict, and when.

``scheduler.preemption: reclaim_idle`` replaces kube-scheduler's DefaultPreemption with the
ReclaimIdleResource PostFilter plugin (HPE; kubernetes-sigs/scheduler-plugins PR #619, code in
``lalitlouis/scheduler-plugins`` ``pkg/reclaimidleresource``; docs/systems.md, "scheduler-plugins").
Its victim search is DefaultPreemption's (:mod:`gpureplay.engine.preemption.priority`) with two changes:
candidates have a priority *at most* the preemptor's (not strictly lower), and a candidate is left out
when ``ExemptedFromPreemption`` says so, from the annotations of its PriorityClass and its measured usage:

1. no PriorityClass: not exempt;
2. (a preemptor whose ``preemptionPolicy`` is ``Never`` does not search at all);
3. preemptor priority >= ``minimum-preemptable-priority`` (default: the class's value + 1): not exempt;
4. ``toleration-seconds`` < 0: exempt;
5. not scheduled (no ``PodScheduled`` condition: pods held at a gang's Permit): exempt;
6. ``now < scheduledAt + max(cpu-idle-seconds, gpu-idle-seconds, toleration-seconds)``: exempt;
7. mean CPU cores over the last ``cpu-idle-seconds`` above ``cpu-idle-usage-threshold``: exempt; mean
   ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` over the last ``gpu-idle-seconds`` above
   ``gpu-idle-usage-threshold``: exempt;
8. otherwise the job may be reclaimed.

Usage comes from the workload's utilisation model (``jobs.idle``): a job works at a constant level from
each start until ``I_AFTER`` seconds later, then sits at 0 until it ends. The plugin's Prometheus query over
a window of 0 seconds (``[0s]``) returns no sample, which it reads as 0: with a window of 0 a job counts
as idle. Over a window ``W > 0`` ending at ``now >= start + W`` the mean is
``level * clamp(start + after - (now - W), 0, W) / W``, so rules 6 and 7 hold exactly from one time on,
:func:`eligible_from`; the engine compares ``now`` with that time, and wakes a cycle at the next such time
(:func:`next_wake`): no event of the cluster marks it, and a pending pod that failed to preempt would
otherwise not try again (kube-scheduler retries an unschedulable pod at least every 5 minutes; the
replay retries at the moment a victim becomes eligible).
"""

from __future__ import annotations

import math

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.state.bundles import Jobs, JobState, Run, Scratch, Timers
from gpureplay.engine.state.layout import (
    D_GEN,
    D_STATUS,
    I_AFTER,
    I_CPU,
    I_CPU_THRESHOLD,
    I_CPU_WINDOW,
    I_GPU,
    I_GPU_THRESHOLD,
    I_GPU_WINDOW,
    I_MIN_PRIO,
    I_POLICY,
    I_TOLERATION,
    J_PREEMPTIBLE,
    J_PRIO,
    J_PRIO_RANK,
    K_NPEND,
    K_NRUNHEAP,
    S_RUNNING,
    T_START,
)


@inline_kernel
def _quiet_from(level: float, threshold: float, window: float, start: float, after: float) -> float:
    # The first time the mean over the window ending then is at most the threshold (the window begins
    # at or after the start, rule 6): always for a level within the threshold or an empty window.
    if level <= threshold or window <= 0.0:
        return -math.inf
    if math.isinf(after):
        return math.inf
    return start + after + window - threshold * window / level


@kernel
def eligible_from(jobs: Jobs, js: JobState, v: int) -> float:
    """When running job ``v`` stops being exempt by rules 4, 6 and 7 (``inf``: never).

    Notes
    -----
    ``max(start + max(cpu window, gpu window, toleration), quiet_cpu, quiet_gpu)``, where ``quiet_r`` is the
    first time the mean usage of ``r`` over its window is within its threshold (see the module notes).
    """
    tol = jobs.idle[I_TOLERATION, v]
    if tol < 0.0:
        return math.inf
    start = js.time[T_START, v]
    cpu_w = jobs.idle[I_CPU_WINDOW, v]
    gpu_w = jobs.idle[I_GPU_WINDOW, v]
    after = jobs.idle[I_AFTER, v]
    at = start + max(max(cpu_w, gpu_w), tol)
    at = max(at, _quiet_from(jobs.idle[I_CPU, v], jobs.idle[I_CPU_THRESHOLD, v], cpu_w, start, after))
    return float(
        max(at, _quiet_from(jobs.idle[I_GPU, v], jobs.idle[I_GPU_THRESHOLD, v], gpu_w, start, after))
    )


@kernel
def idle_exempt(jobs: Jobs, js: JobState, v: int, j: int, now: float) -> bool:
    """``ExemptedFromPreemption``: whether candidate ``v`` is kept from preemptor ``j`` at ``now``."""
    if jobs.idle[I_POLICY, v] == 0.0:
        return False
    if float(jobs.ints[J_PRIO, j]) >= jobs.idle[I_MIN_PRIO, v]:
        return False
    if js.dyn[D_STATUS, v] != S_RUNNING:
        return True  # rule 4 if it tolerates forever, else rule 5: its pods are not bound
    return now < eligible_from(jobs, js, v)


@kernel
def next_wake(jobs: Jobs, js: JobState, tm: Timers, run: Run, t: float) -> float:
    """The earliest time after ``t`` at which a running, preemptible job stops being exempt (``inf``: none).

    Only while jobs wait: with nothing pending no search can use the new victim.
    """
    if run.counters[K_NPEND] == 0:
        return math.inf
    wake = math.inf
    for i in range(run.counters[K_NRUNHEAP]):
        v = tm.run_i[2, i]
        if tm.run_i[3, i] != js.dyn[D_GEN, v] or js.dyn[D_STATUS, v] != S_RUNNING:
            continue
        if jobs.ints[J_PREEMPTIBLE, v] == 0 or jobs.idle[I_POLICY, v] == 0.0:
            continue
        at = eligible_from(jobs, js, v)
        if t < at < wake:
            wake = at
    return wake


@kernel
def may_have_victim(jobs: Jobs, js: JobState, tm: Timers, sc: Scratch, run: Run, j: int, now: float) -> bool:
    """Whether a job may be evicted for ``j`` at ``now`` under ReclaimIdleResource (False: none can).

    Notes
    -----
    A search whose every candidate is exempt finds no victim on any node, so skipping it changes nothing
    (the node offsets are drawn per job, pod and attempt, not per search). Most jobs holding GPUs are exempt
    most of the time (their toleration has not run out or they are busy), and a search looks at every node
    before it gives up: on Philly at 6x under ``notebooks-idle``, 48,783 searches found 1,678 victims.
    Possible victims are the preemptible jobs holding pods at ``j``'s priority rank or below
    (:class:`gpureplay.engine.state.bundles.Scratch` counts them). The running ones are read from the run
    heap, where each running job has exactly one live entry (an invariant the debug checks hold); a holder
    that is not running (one still placing its pods) may be eligible, and then the answer is True.
    """
    holders = 0
    for rank in range(jobs.ints[J_PRIO_RANK, j] + 1):
        holders += sc.prio_jobs[rank]
    running = 0
    for i in range(run.counters[K_NRUNHEAP]):
        v = tm.run_i[2, i]
        if tm.run_i[3, i] != js.dyn[D_GEN, v] or js.dyn[D_STATUS, v] != S_RUNNING:
            continue
        if (
            v == j
            or jobs.ints[J_PREEMPTIBLE, v] == 0
            or jobs.ints[J_PRIO_RANK, v] > jobs.ints[J_PRIO_RANK, j]
        ):
            continue
        running += 1
        if not idle_exempt(jobs, js, v, j, now):
            return True
    return running < holders
