"""Scheduling cycles: gang mode (none / skip / EASY backfill) and pod-by-pod mode, each with preemption.

A cycle walks pending jobs in queue order by merging the heads of the active
classes (:mod:`gpureplay.engine.pending`) in a small heap. Within a cycle
resources are only taken, never released (an eviction releases later, when
the victim's grace period ends), so once a class does not fit, none of its
jobs can fit later in the cycle: the class leaves the merge. A class that
failed keeps that mark until the next release (``K_VERSION``), so cycles after
an arrival only look at what is new. With preemption on, a class leaves only
once a job of it could not preempt either (``CD_PFAIL``, valid until the set
of possible victims grows: ``K_PVERSION``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from numba.core import types
from numba.core.errors import TypingError
from numba.extending import overload

from gpureplay.engine.fit.resources import capacity_bound
from gpureplay.engine.fit.scoring import RANDOM, choose_node
from gpureplay.engine.jit.config import JIT_OPTIONS, inline_kernel, kernel, when_given
from gpureplay.engine.jobs import attempt_of, place_pod, start_job
from gpureplay.engine.pending import admissible, build_merge, cursor_job, cursor_step, push_head
from gpureplay.engine.placement.gang import backfill_past_shadow, keep_reservation, reserve, try_gang
from gpureplay.engine.preemption.nomination import end_nomination, end_stale_nominations
from gpureplay.engine.preemption.priority import preempt_for
from gpureplay.engine.queues.kai.evict import kai_evict
from gpureplay.engine.queues.kai.session import kai_cycle
from gpureplay.engine.queues.kueue.cycle import kueue_cycle
from gpureplay.engine.queues.volcano.preempt import ACT_PREEMPT, ACT_RECLAIM, preempt_action
from gpureplay.engine.queues.volcano.reclaim import reclaim_action
from gpureplay.engine.queues.volcano.session import volcano_cycle
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    EasyScratch,
    FitIndex,
    Jobs,
    JobState,
    KaiState,
    KueueState,
    Numa,
    Params,
    Pending,
    PodScratch,
    PreemptScratch,
    Run,
    Scratch,
    Timers,
    Topology,
    VolcanoState,
)
from gpureplay.engine.state.heaps import event_pop, event_push, merge_pop
from gpureplay.engine.state.layout import (
    BF_NONE,
    BF_SKIP,
    C_CAN_PREEMPT,
    CD_FAIL,
    CD_PFAIL,
    CD_RESV,
    D_PLACED,
    D_STATUS,
    D_WAITING,
    J_CLASS,
    J_ID,
    J_PODS,
    JF_OVERHEAD,
    K_PVERSION,
    K_RESV_HEAD,
    K_STAMP,
    K_TRIED,
    K_VERSION,
    P_BACKFILL,
    P_DEPTH,
    P_GPU,
    P_NODE,
    P_PREEMPT,
    PREEMPT_NONE,
    S_QUEUED,
    T_FIRST_START,
    T_KEY1,
    T_KEY2,
    T_LEFT,
)


@inline_kernel
def class_dead(cs: Classes, pend: Pending, run: Run, c: int, preempting: bool) -> bool:
    """Whether no job of class ``c`` can start or preempt for the rest of this cycle."""
    if pend.cls[CD_FAIL, c] != run.counters[K_VERSION]:
        return False
    if not preempting or cs.ints[C_CAN_PREEMPT, c] == 0:
        return True
    return bool(pend.cls[CD_PFAIL, c] == run.counters[K_PVERSION])


@kernel
def _try_preempt(
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
    """Run preemption for pending job ``j`` if it may; returns the victims evicted (0: none or not allowed).

    Notes
    -----
    A job whose PriorityClass says ``preemptionPolicy: Never`` never evicts;
    a job still waiting for victims it evicted does not preempt again
    (kube-scheduler: a pod with a nominated node and terminating victims).
    A failure is remembered for the class until the victim set can grow.
    """
    c = jobs.ints[J_CLASS, j]
    if cs.ints[C_CAN_PREEMPT, c] == 0 or js.dyn[D_WAITING, j] > 0:
        return 0
    if pend.cls[CD_PFAIL, c] == run.counters[K_PVERSION]:
        return 0
    evicted = preempt_for(pre, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t, whole)
    if evicted == 0:
        pend.cls[CD_PFAIL, c] = run.counters[K_PVERSION]
    return evicted


#: Preemption for a job that cannot be placed (0 victims when preemption is off).
try_preempt = when_given(_try_preempt, 0)


@kernel
def _start_nominated(
    pre: PreemptScratch,
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
    """Start job ``j`` (all pods placed), ending its nomination: its pods are bound."""
    start_job(params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
    end_nomination(cl, run, j)


@kernel
def _start_plain(
    pre: None,
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
    """Start job ``j`` (all pods placed); without preemption nothing is ever nominated."""
    start_job(params, jobs, cs, cl, js, pend, tm, sc, run, j, t)


#: Start a job whose pods are all placed (ending its nomination when preemption is on).
start = when_given(_start_nominated, none_body=_start_plain)


@inline_kernel
def run_time(jobs: Jobs, js: JobState, j: int) -> float:
    """How long job ``j`` would run if started now (restart overhead included)."""
    overhead = 0.0 if math.isnan(js.time[T_FIRST_START, j]) else jobs.flts[JF_OVERHEAD, j]
    return float(overhead + js.time[T_LEFT, j])


@kernel
def gang_cycle(
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
    easy: EasyScratch | None,
    pre: PreemptScratch | None,
    tas: Topology | None,
    numa: Numa | None,
    t: float,
) -> int:
    """One gang-mode scheduling cycle at ``t``; returns jobs started + victims evicted + nominations ended.

    Notes
    -----
    Pending jobs are visited in queue order. ``none``: stop at the first job
    that does not fit (strict FIFO, head-of-line blocking; it may preempt
    first). ``skip``: start every job that fits, as Volcano's ``allocate``
    action and kube-scheduler do (no reservation); ``backfill_depth > 0`` stops
    after that many failures (Slurm ``bf_max_job_test``-style bound). ``easy``:
    EASY backfilling (Lifka 1995; Slurm ``sched/backfill``): jobs start in order
    until the first that does not fit, H; H gets a reservation at the shadow
    time S (:func:`gpureplay.engine.placement.gang.reservation`); a later job J starts iff
    it fits now and either ends by S or H still fits at S with J's placement
    held (``backfill_depth > 0`` bounds how many J are considered).
    """
    backfill = params.codes[P_BACKFILL]
    depth = params.codes[P_DEPTH]
    preempting = params.codes[P_PREEMPT] != PREEMPT_NONE
    randomised = params.codes[P_NODE] == RANDOM or params.codes[P_GPU] == RANDOM
    skip_mode = backfill == BF_SKIP
    size = build_merge(jobs, cs, js, pend, run, False)
    changes = 0
    failures = 0
    head = -1  # EASY: the job holding the reservation
    shadow = 0.0
    hold_total = 0
    considered = 0
    while size > 0:
        c = pend.heap_i[1, 0]
        size = merge_pop(pend.heap_f, pend.heap_i, size)
        if skip_mode and depth == 0 and class_dead(cs, pend, run, c, preempting):
            continue
        j = cursor_job(jobs, cs, js, pend, c)
        cursor_step(jobs, cs, js, pend, c, j)
        # Re-read: an ended nomination bumps the version within a cycle (room for what failed before).
        version = run.counters[K_VERSION]
        known_failed = pend.cls[CD_FAIL, c] == version
        if skip_mode:
            if depth > 0 and failures >= depth:
                break
            if (
                not known_failed
                and admissible(jobs, js, j)
                and try_gang(tas, numa, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t)
            ):
                start(pre, params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
                changes += 1
            elif js.dyn[D_STATUS, j] != S_QUEUED:
                changes += 1  # scheduled, then rejected by a kubelet: it left the queue (not a misfit)
            else:
                failures += 1
                changes += try_preempt(pre, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t, True)
            if depth == 0 and class_dead(cs, pend, run, c, preempting):
                continue  # the rest of the class cannot start or preempt either
        elif head < 0:
            if (
                not known_failed
                and admissible(jobs, js, j)
                and try_gang(tas, numa, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t)
            ):
                start(pre, params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
                changes += 1
            elif js.dyn[D_STATUS, j] != S_QUEUED:
                changes += 1  # scheduled, then rejected by a kubelet: it blocks nothing
            elif backfill == BF_NONE:
                changes += try_preempt(pre, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t, True)
                break
            else:
                head = j
                shadow, hold_total = reserve(easy, jobs, cs, cl, js, tm, run, j, t)
                run.counters[K_STAMP] += 1
                if shadow < 0.0:
                    # H never fits, even on the empty projection: no reservation, like skip.
                    skip_mode = True
                    failures = 1
        else:
            if depth > 0 and considered >= depth:
                break
            considered += 1
            if known_failed:
                if depth == 0:
                    continue
            elif t + run_time(jobs, js, j) <= shadow:
                if admissible(jobs, js, j) and try_gang(
                    tas, numa, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t
                ):
                    start(pre, params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
                    changes += 1
                    run.counters[K_STAMP] += 1
            elif (
                not (not randomised and pend.cls[CD_RESV, c] == run.counters[K_STAMP])
                and admissible(jobs, js, j)
                and try_gang(tas, numa, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t)
            ):
                # J ends after S: hold its exact placement on the projection and ask whether H still fits.
                fits, hold_total = backfill_past_shadow(
                    easy, params, jobs, cs, cl, ix, js, sc, run, head, j, hold_total
                )
                if fits:
                    start(pre, params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
                    changes += 1
                    run.counters[K_STAMP] += 1
                else:
                    # Same class, same states, deterministic placement: same refusal until something starts.
                    pend.cls[CD_RESV, c] = run.counters[K_STAMP]
            elif depth == 0 and pend.cls[CD_FAIL, c] == version:
                continue
        size = push_head(jobs, cs, js, pend, size, c)
    if head >= 0 and not skip_mode:
        keep_reservation(easy, run, head, shadow, hold_total)
    else:
        run.counters[K_RESV_HEAD] = -1
    changes += end_stale_nominations(js, cl, run)
    return changes


@kernel
def pod_cycle(
    pods: PodScratch,
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
    pre: PreemptScratch | None,
    tas: None,
    numa: None,
    t: float,
) -> int:
    """One pod-by-pod cycle at ``t``; returns pods placed + victims evicted + nominations ended.

    Notes
    -----
    kube-scheduler's default behaviour: the scheduling queue (PrioritySort:
    higher priority first, then creation time) holds every unplaced pod; each
    pod is placed on its own and stays placed, so a job whose pods cannot all
    be placed holds what it got (the classic gang deadlock, cf. the
    Coscheduling plugin's motivation). Pods of jobs with the same queue key
    (priority and creation time) interleave by pods placed, then job id:
    within such a group a small heap keyed ``(pods placed, job_id)`` yields
    the pod order. A pod that fits nowhere may preempt (DefaultPreemption, for
    its job's remaining pods).
    """
    preempting = params.codes[P_PREEMPT] != PREEMPT_NONE
    size = build_merge(jobs, cs, js, pend, run, False)
    changes = 0
    while size > 0:
        c = pend.heap_i[1, 0]
        f0 = pend.heap_f[0, 0]
        f1 = pend.heap_f[1, 0]
        f2 = pend.heap_f[2, 0]
        size = merge_pop(pend.heap_f, pend.heap_i, size)
        members = 0
        n_touched = 0
        # Gather the group: every pending job of a live class with this queue key.
        while True:
            if not class_dead(cs, pend, run, c, preempting):
                pods.touched[n_touched] = c
                n_touched += 1
                while True:
                    j = cursor_job(jobs, cs, js, pend, c)
                    if j < 0 or js.time[T_KEY1, j] != f1 or js.time[T_KEY2, j] != f2:
                        break
                    members = event_push(
                        pods.group_f,
                        pods.group_i,
                        members,
                        float(js.dyn[D_PLACED, j]),
                        jobs.ints[J_ID, j],
                        0,
                        j,
                        0,
                    )
                    cursor_step(jobs, cs, js, pend, c, j)
            if size == 0 or pend.heap_f[0, 0] != f0 or pend.heap_f[1, 0] != f1 or pend.heap_f[2, 0] != f2:
                break
            c = pend.heap_i[1, 0]
            size = merge_pop(pend.heap_f, pend.heap_i, size)
        while members > 0:
            j = pods.group_i[2, 0]
            members = event_pop(pods.group_f, pods.group_i, members)
            if js.dyn[D_STATUS, j] != S_QUEUED:
                continue  # evicted for a job placed earlier in this group
            c = jobs.ints[J_CLASS, j]
            n = -1
            version = run.counters[K_VERSION]
            if pend.cls[CD_FAIL, c] != version and admissible(jobs, js, j):
                run.counters[K_TRIED] += 1
                # The per-model bound rules most misses out without a node scan.
                if capacity_bound(cl, cs, c, 1) >= 1:
                    n = choose_node(
                        params, cl, ix, cs, c, jobs.ints[J_ID, j], js.dyn[D_PLACED, j], attempt_of(js, j)
                    )
                if n < 0:
                    pend.cls[CD_FAIL, c] = version
            if n < 0:
                changes += try_preempt(pre, params, jobs, cs, cl, ix, js, pend, tm, sc, run, j, t, False)
                continue
            place_pod(params, jobs, cs, cl, ix, js, sc, run, j, n, t)
            changes += 1
            placed = js.dyn[D_PLACED, j]
            if placed == jobs.ints[J_PODS, j]:
                start(pre, params, jobs, cs, cl, js, pend, tm, sc, run, j, t)
            else:
                members = event_push(
                    pods.group_f, pods.group_i, members, float(placed), jobs.ints[J_ID, j], 0, j, 0
                )
        for i in range(n_touched):
            c = pods.touched[i]
            if not class_dead(cs, pend, run, c, preempting):
                size = push_head(jobs, cs, js, pend, size, c)
    changes += end_stale_nominations(js, cl, run)
    return changes


@kernel
def _volcano_session(
    qt: VolcanoState,
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
    """Gang mode under Volcano's queues: its session's allocate action, then preempt and reclaim."""
    changes = volcano_cycle(
        qt, pods, params, jobs, cs, cl, ix, js, pend, tm, sc, run, easy, pre, tas, numa, t
    )
    if qt.v_act[0] != 0:
        # Evictions change the next session (the victims no longer count as allocated): a periodic
        # scheduler must not idle after them. Pipelined pods are the session's: the preempt action's
        # committed ones hold their nodes' FutureIdle in the reclaim action after it.
        qt.v_pipe[:, :] = 0.0
        if qt.v_act[0] & ACT_PREEMPT != 0:
            changes += preempt_action(qt, params, jobs, cs, cl, js, pend, tm, sc, run, t)
        if qt.v_act[0] & ACT_RECLAIM != 0:
            changes += reclaim_action(qt, params, jobs, cs, cl, js, pend, tm, sc, run, t)
    return changes


@kernel
def _kai_session(
    qt: KaiState,
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
    """Gang mode under KAI's queues: its session's allocate action, then reclaim and preempt."""
    changes = kai_cycle(qt, pods, params, jobs, cs, cl, ix, js, pend, tm, sc, run, easy, pre, tas, numa, t)
    if qt.v_act[0] != 0:
        changes += kai_evict(qt, params, jobs, cs, cl, js, pend, tm, sc, run, t)
        changes += end_stale_nominations(js, cl, run)
    return changes


def cycle(*args: Any) -> int:
    """One scheduling cycle at ``t``, from :func:`gpureplay.engine.loop.advance`.

    ``cycle(pods, quota, params, jobs, cs, cl, ix, js, pend, tm, sc, run, easy, pre, tas, numa, t)``:
    pod by pod (:func:`pod_cycle`) when ``pods`` is given; else gang mode, under the cycle of the queue
    system whose bundle ``quota`` is (:data:`GANG_CYCLES`), or :func:`gang_cycle` without one. numba picks
    it from the argument types when it compiles the loop, and calls it directly: one dispatch, no layer of
    17-argument wrappers compiled per engine variant. Returns the jobs started or rejected.
    """
    raise TypeError("cycle is callable from kernels only")


#: Gang mode's cycle per queue system, by the type of its bundle (each compiled over its own bundle,
#: only in the replays that use it): the bundle, then the cycle's arguments.
GANG_CYCLES: dict[type, Callable[..., int]] = {
    KueueState: kueue_cycle,
    VolcanoState: _volcano_session,
    KaiState: _kai_session,
}


@overload(cycle, jit_options=JIT_OPTIONS)  # type: ignore[arg-type]
def _choose_cycle(*args):  # type: ignore[no-untyped-def]
    pods, quota = args[0], args[1]
    if not isinstance(pods, types.NoneType):
        return lambda *args: pod_cycle(args[0], *args[2:])
    if isinstance(quota, types.NoneType):
        return lambda *args: gang_cycle(args[0], *args[2:])
    body = GANG_CYCLES.get(getattr(quota, "instance_class", None))  # type: ignore[arg-type]
    if body is None:
        known = ", ".join(sorted(c.__name__ for c in GANG_CYCLES))
        raise TypingError(f"cycle: no gang cycle for a {quota} bundle (registered: {known})")
    return lambda *args: body(args[1], args[0], *args[2:])
