"""Gang placement (all pods or none) and EASY backfill's reservation.

Both rest on the additive capacity argument of :mod:`gpureplay.engine.fit.resources`:
a gang of ``P`` identical pods can be placed iff the cluster's capacity for
its class is ``>= P``, so a job that does not fit is dismissed without placing
anything, and the reserved job's "does it still fit at the shadow time" is a
running sum of per-node capacities.
"""

from __future__ import annotations

from gpureplay.engine.fit.resources import class_capacity, copy_cluster, node_capacity, release_pod, take_pod
from gpureplay.engine.jit.config import inline_kernel, kernel, when_given
from gpureplay.engine.jobs import back_off, place_pods, undo_placement
from gpureplay.engine.placement.kai_tas import kai_place
from gpureplay.engine.placement.kueue_tas import kueue_place
from gpureplay.engine.placement.numa import admit_gang, numa_place
from gpureplay.engine.placement.volcano_tas import volcano_place
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    EasyScratch,
    FitIndex,
    Jobs,
    JobState,
    Numa,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
    Topology,
)
from gpureplay.engine.state.heaps import event_pop
from gpureplay.engine.state.layout import (
    C_PODS,
    C_TAS_MODE,
    CD_FAIL,
    D_GEN,
    D_PLACED,
    D_STATUS,
    J_CLASS,
    J_K,
    J_POD0,
    J_PODS,
    J_SLOT0,
    K_NRUNHEAP,
    K_RESV_HEAD,
    K_RESV_HOLD,
    K_RESV_STARTS,
    K_SHARE_CHANGES,
    K_STARTS,
    K_TRIED,
    K_VERSION,
    P_NUMA_AWARE,
    P_TAS,
    S_RUNNING,
    TAS_KAI,
    TAS_KUEUE,
    TM_PREFERRED,
    TM_REQUIRED,
)


@kernel
def _capacity_gang(
    tas: None,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    j: int,
    t: float,
) -> bool:
    """Topology-blind: place job ``j``'s pods with the node scorer if the cluster holds them all."""
    c = jobs.ints[J_CLASS, j]
    pods = cs.ints[C_PODS, c]
    if class_capacity(cl, cs, c, pods) >= pods:
        place_pods(params, jobs, cs, cl, ix, js, sc, run, j, pods, t)
        return True
    return False


@kernel
def _topology_gang(
    tas: Topology,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    j: int,
    t: float,
) -> bool:
    """Topology-aware: place job ``j``'s pods by Kueue's, KAI's or Volcano's rules, if the job fits."""
    c = jobs.ints[J_CLASS, j]
    pods = cs.ints[C_PODS, c]
    if class_capacity(cl, cs, c, pods) < pods:
        return False
    system = params.codes[P_TAS]
    mode = cs.ints[C_TAS_MODE, c]
    if system == TAS_KUEUE:
        return kueue_place(tas, params, jobs, cs, cl, ix, js, sc, run, j, t)
    if mode in (TM_REQUIRED, TM_PREFERRED):
        if system == TAS_KAI:
            return kai_place(tas, params, jobs, cs, cl, ix, js, sc, run, j, t)
        # Volcano: hard mode (required) and soft mode (preferred).
        return volcano_place(tas, params, jobs, cs, cl, ix, js, sc, run, j, t)
    # A request the system does not read (KAI, Volcano: none or unconstrained): placed as any pods.
    place_pods(params, jobs, cs, cl, ix, js, sc, run, j, pods, t)
    return True


#: Place a whole gang now if it fits: on its topology assignment under ``topology_aware``, else with the
#: node scorer.
place_gang = when_given(_topology_gang, none_body=_capacity_gang)


#: The kubelets admit a placed gang's pods (always, without a Topology Manager).
kubelet_admits = when_given(admit_gang, True)


@kernel
def _numa_aware(numa: Numa, params: Params) -> bool:
    return bool(params.codes[P_NUMA_AWARE] != 0)


#: Whether the scheduler places pods by NUMA fit (NodeResourceTopologyMatch).
numa_aware = when_given(_numa_aware, False)

#: NUMA-aware placement of a whole gang (never called without a Topology Manager).
place_numa = when_given(numa_place, False)


@kernel
def try_gang(
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
    """Place all pods of job ``j`` or none; True when placed (the caller starts or undoes it).

    Notes
    -----
    All-or-nothing allocation as in Volcano's ``allocate`` action with the gang
    plugin (a statement committed only when ``JobReady``) and Kueue's
    all-or-nothing admission. A class that does not fit is remembered for the
    current release version: identical jobs are not retried until something
    is released (draws are keyed, not consumed, so nothing is lost by not
    trying). Under a Topology Manager the placed pods then pass kubelet
    admission, or the placement is undone and the job backs off
    (:func:`gpureplay.engine.jobs.back_off`); its class is not marked, since
    it fits.
    """
    run.counters[K_TRIED] += 1
    if numa_aware(numa, params):
        if place_numa(numa, params, jobs, cs, cl, ix, js, sc, run, j, t):
            return True
    elif place_gang(tas, params, jobs, cs, cl, ix, js, sc, run, j, t):
        if kubelet_admits(numa, params, jobs, cs, cl, ix, js, j):
            return True
        undo_placement(params, jobs, cs, cl, ix, js, sc, run, j)
        back_off(params, jobs, cs, js, pend, tm, sc, run, j, t)
        return False
    pend.cls[CD_FAIL, jobs.ints[J_CLASS, j]] = run.counters[K_VERSION]
    return False


@kernel
def hold_capacity(easy: EasyScratch, cs: Classes, c: int, pods: int, n: int) -> int:
    """Recompute the reserved class's pod capacity on projected node ``n``; returns the change."""
    new = node_capacity(easy.proj, cs, c, n, pods)
    change = new - easy.hold[n]
    easy.hold[n] = new
    return int(change)


@kernel
def project_pods(jobs: Jobs, cs: Classes, js: JobState, proj: Cluster, j: int, take: bool) -> None:
    """Take (or release) job ``j``'s exact placement on the projection."""
    c = jobs.ints[J_CLASS, j]
    k = jobs.ints[J_K, j]
    pod0 = jobs.ints[J_POD0, j]
    for p in range(js.dyn[D_PLACED, j]):
        n = js.pod_node[pod0 + p]
        slot0 = jobs.ints[J_SLOT0, j] + p * k
        if take:
            take_pod(proj, cs, c, n, -1, js.slot_gpu, slot0, True)
        else:
            release_pod(proj, cs, c, n, js.slot_gpu, slot0)


@kernel
def refresh_hold(easy: EasyScratch, jobs: Jobs, cs: Classes, js: JobState, h: int, j: int) -> int:
    """Update the reserved job ``h``'s capacity on the nodes of job ``j``'s pods; returns the total change."""
    ch = jobs.ints[J_CLASS, h]
    pods = jobs.ints[J_PODS, h]
    change = 0
    pod0 = jobs.ints[J_POD0, j]
    for p in range(js.dyn[D_PLACED, j]):
        change += hold_capacity(easy, cs, ch, pods, js.pod_node[pod0 + p])
    return change


@kernel
def reservation(
    easy: EasyScratch, jobs: Jobs, cs: Classes, cl: Cluster, js: JobState, tm: Timers, run: Run, h: int
) -> tuple[float, int]:
    """Shadow time of the blocked head job ``h`` and its pod capacity on the projected state at it.

    Returns
    -------
    (float, int)
        The shadow time ``S`` (-1.0 when ``h`` never fits) and ``h``'s pod
        capacity on the projection. ``easy.proj`` holds the projected state and
        ``easy.hold[n]`` ``h``'s capacity per node on it.

    Notes
    -----
    EASY backfilling (Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995;
    Slurm ``sched/backfill``): running jobs are ended in ``(finish_time,
    job_id)`` order on a copy of the state until the head fits; that finish
    time is the head's reservation. Only nodes a released job touched change
    the head's capacity, so each release costs its pods, not the cluster.
    """
    copy_cluster(cl, easy.proj)
    ch = jobs.ints[J_CLASS, h]
    need = jobs.ints[J_PODS, h]
    total = 0
    for n in range(cl.node_int.shape[1]):
        easy.hold[n] = 0
        total += hold_capacity(easy, cs, ch, need, n)
    size = run.counters[K_NRUNHEAP]
    for i in range(size):
        easy.scan_f[i] = tm.run_f[i]
        for r in range(4):
            easy.scan_i[r, i] = tm.run_i[r, i]
    while size > 0:
        finish = easy.scan_f[0]
        j = easy.scan_i[2, 0]
        live = easy.scan_i[3, 0] == js.dyn[D_GEN, j] and js.dyn[D_STATUS, j] == S_RUNNING
        size = event_pop(easy.scan_f, easy.scan_i, size)
        if not live:
            continue
        project_pods(jobs, cs, js, easy.proj, j, False)
        total += refresh_hold(easy, jobs, cs, js, h, j)
        if total >= need:
            return finish, total
    return -1.0, total


@inline_kernel
def reservation_stamp(run: Run) -> int:
    """What must not change for a kept reservation to stay valid: attempts started (a start changes the
    running set) and starts / stops on shared GPUs (they re-rate running jobs, moving their finish times)."""
    return int(run.counters[K_STARTS] + run.counters[K_SHARE_CHANGES])


@kernel
def _reserve(
    easy: EasyScratch,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    tm: Timers,
    run: Run,
    h: int,
    t: float,
) -> tuple[float, int]:
    """The blocked head ``h``'s reservation at ``t``: kept from an earlier cycle if still valid, or computed.

    Notes
    -----
    A reservation computed for the same head, with nothing started and no shared GPU re-rated since
    (:func:`reservation_stamp`), and whose shadow time is still ahead, is the one recomputing would give:
    only completions (each already released on the projection, in finish order, before ``S``) and arrivals
    happened. A start after the computation (a job backfilled because its estimated run time ends by ``S``
    may in fact run longer: spread over nodes, slowed by sharing) or a shadow time reached without the head
    starting (the projection's first-fit test found room that the head's own placement rule did not) makes
    the next cycle compute it anew, as the reference simulator does every cycle.
    """
    if (
        run.counters[K_RESV_HEAD] == h
        and run.counters[K_RESV_STARTS] == reservation_stamp(run)
        and easy.kept_shadow[0] > t
    ):
        return easy.kept_shadow[0], run.counters[K_RESV_HOLD]
    run.counters[K_RESV_STARTS] = reservation_stamp(run)
    return reservation(easy, jobs, cs, cl, js, tm, run, h)


#: EASY's reservation for head ``h`` (``(-1.0, 0)``: no reservation, when EASY is off).
reserve = when_given(_reserve, (-1.0, 0))


@kernel
def _backfill_past_shadow(
    easy: EasyScratch,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    head: int,
    j: int,
    hold_total: int,
) -> tuple[bool, int]:
    """Job ``j`` (placed now) ends after the shadow time: may it start? Returns (start it, head's capacity).

    Notes
    -----
    Its exact placement is held on the projection; if the reserved head no
    longer fits at the shadow time, the placement is undone on both states.
    """
    project_pods(jobs, cs, js, easy.proj, j, True)
    hold_total += refresh_hold(easy, jobs, cs, js, head, j)
    if hold_total >= jobs.ints[J_PODS, head]:
        return True, hold_total
    project_pods(jobs, cs, js, easy.proj, j, False)
    hold_total += refresh_hold(easy, jobs, cs, js, head, j)
    undo_placement(params, jobs, cs, cl, ix, js, sc, run, j)
    return False, hold_total


#: EASY's test for a job that would run past the shadow time (never called when EASY is off).
backfill_past_shadow = when_given(_backfill_past_shadow, (False, 0))


@kernel
def _keep_reservation(easy: EasyScratch, run: Run, head: int, shadow: float, hold_total: int) -> None:
    """Keep the cycle's reservation for later cycles (valid while :func:`_reserve`'s conditions hold)."""
    run.counters[K_RESV_HEAD] = head
    run.counters[K_RESV_HOLD] = hold_total
    easy.kept_shadow[0] = shadow


#: Keep the reservation (no-op when EASY is off).
keep_reservation = when_given(_keep_reservation)
