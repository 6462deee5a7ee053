"""Volcano's ``preempt`` action: a starving job evicts running jobs of its own queue.

Run in a session after ``allocate`` (and before ``reclaim``) when ``scheduler.actions`` lists ``preempt``;
the rules are volcano-sh/volcano ``pkg/scheduler/actions/preempt/preempt.go`` (``normalPreempt``, the
default without topology-aware preemption) with the plugins of the scheduler configuration (reference §4.1):

- the preemptors are the Inqueue jobs still pending after allocate (``JobStarving``; a job waiting for
  victims it already evicted is pipelined on their resources and is not starving), taken queue by queue
  (Volcano walks a Go map of queues, in no set order: the replay takes them in queue index order), a
  queue's jobs in job order (priority, drf share, creation, id); one statement per job, its pods in turn;
- a pod of a job whose PriorityClass says ``preemptionPolicy: Never`` is not eligible
  (``taskEligibleToPreempt``); nodes in index order, those the pod could ever fit; on each node the
  preemptees are the running pods of the queue's other, preemptible jobs;
- the victims are decided by ``Session.Preemptable``'s tier rule over the plugins whose
  ``enablePreemptable`` is on (``scheduler.preemptable_plugins``): tier 1 ``priority`` (jobs of lower
  priority), ``gang`` (pods above a job's minAvailable: none of a whole gang), ``conformance`` (every pod
  here); an empty list ends a tier undecided; tier 2 ``drf`` (a preemptee whose job's dominant share after
  losing the pod stays at or above the preemptor's after gaining it, within 1e-6);
- the node qualifies when ``pod <= FutureIdle + victims`` (``ValidateVictims``); victims are evicted in
  victim order (lower priority, larger drf share, later creation, higher id first) until the queue can take
  the pod (the proportion plugin's ``Allocatable``: allocated + pod <= deserved in the pod's resources) and
  it fits the node's FutureIdle (idle + releasing - pipelined), and the pod is pipelined there; otherwise
  the evictions stay in the statement and the next node is tried;
- a job whose every pod is pipelined commits its statement (its victims are evicted for real); otherwise
  the statement is discarded at once (evictions and pipelined pods undone).

The engine evicts a victim job whole, as in the reclaim action
(:mod:`gpureplay.engine.queues.volcano.reclaim`): it stops counting its whole allocation to its queue and
becomes releasing on each of its nodes, while the victim test counts the pods Volcano would take (the drf test
may keep some of a job's pods on a node). Each of a job's pods is tried once, as Volcano pops each pending
task once; a pod that found no node and evicted nothing ends the job's turn early (its other pods would walk
the same nodes to the same failure). Plain twin: ``_Replay.volcano_preempt`` in
``tests/reference/simulator.py``.

Shortcuts that change nothing: a job whose turn failed with no commit since leaves the rest of its class
(same queue, pod and pod count) of the same priority out: they would fail the same way; a job for which no
plugin can name a victim anywhere (no running job of its queue has a lower priority, and its drf share of
one pod is above every such job's less a pod) is passed over without walking the nodes.

Under ``topology_aware: volcano`` a job with a network-topology request (``required``: hard mode,
``preferred``: soft mode) never preempts: ``preempt.go`` skips every job whose PodGroup (or a subgroup) has a
``networkTopology`` (released in v1.14.0; issue #4374). Such a job may still be a victim, and the reclaim
action (:mod:`gpureplay.engine.queues.volcano.reclaim`) does not skip it: ``reclaim.go`` (v1.14 to v1.15.1)
never reads the job's network topology, it reclaims and pipelines pod by pod on single nodes, and allocate
then places the job by its HyperNode rule once the victims are gone.
"""

from __future__ import annotations

import math

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.jobs import evict_job
from gpureplay.engine.preemption.priority import could_ever_fit
from gpureplay.engine.queues.kueue.tree import drop_top
from gpureplay.engine.queues.volcano.reclaim import (
    _drf_share,
    _job_amount,
    _mark,
    _node_units,
    _order_units,
    _pass,
    _preemptive,
    _set_alloc,
    inqueue_heads,
)
from gpureplay.engine.queues.volcano.session import MIB, _class_pod, _le, _next_inqueue, _to_volcano
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    Jobs,
    JobState,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
    VolcanoState,
)
from gpureplay.engine.state.layout import (
    C_PODS,
    C_TAS_MODE,
    D_PLACED,
    D_STATUS,
    D_WAITING,
    F_CPU,
    F_MEM,
    F_MILLI,
    J_CAN_PREEMPT,
    J_PREEMPTIBLE,
    J_PRIO,
    J_TENANT,
    P_TAS,
    S_RUNNING,
    TAS_VOLCANO,
    TM_PREFERRED,
    TM_REQUIRED,
)

#: ``qt.v_act[0]`` bits: the actions a session runs after allocate.
ACT_RECLAIM = 1
ACT_PREEMPT = 2
#: ``qt.v_act[1]`` bits: the plugins whose ``enablePreemptable`` is on.
PF_PRIORITY = 1
PF_GANG = 2
PF_CONFORMANCE = 4
PF_DRF = 8
#: drf.go ``shareDelta``.
SHARE_DELTA = 0.000001


@inline_kernel
def _tier_one_silent(flags: int) -> bool:
    # Tier 1 never names a victim: gang is on (its list is always empty for whole gangs), or no tier-1
    # plugin is.
    return flags & PF_GANG != 0 or flags & (PF_PRIORITY | PF_CONFORMANCE) == 0


@kernel
def _tier_one(qt: VolcanoState, jobs: Jobs, count: int, j: int) -> int:
    """Tier 1 (priority, gang, conformance) over the ``count`` preemptees: the victims kept first, or -1
    when the tier decides nothing (no plugin on, or one of them returned an empty list)."""
    flags = qt.v_act[1]
    if _tier_one_silent(flags) or count == 0:
        return -1
    if flags & PF_PRIORITY == 0:
        return count  # conformance alone: no kube-system critical pod among the jobs
    kept = 0
    for i in range(count):
        v = qt.v_unit[i]
        if jobs.ints[J_PRIO, v] < jobs.ints[J_PRIO, j]:
            qt.v_unit[kept] = v
            qt.v_ucnt[kept] = qt.v_ucnt[i]
            qt.v_uall[kept] = qt.v_uall[i]
            kept += 1
    return kept if kept > 0 else -1


@inline_kernel
def _tier_one_may(qt: VolcanoState, jobs: Jobs, j: int, q: int) -> bool:
    # Whether tier 1 can name a victim of job j (queue q) anywhere: only while a running preemptible job
    # of q holds pods (``qt.v_qbound`` >= 0), of lower priority (``qt.v_qminp``) when priority is on.
    flags = qt.v_act[1]
    if _tier_one_silent(flags):
        return False
    if flags & PF_PRIORITY == 0:
        return bool(qt.v_qbound[q] >= 0.0)
    return bool(qt.v_qminp[q] < float(jobs.ints[J_PRIO, j]))


@inline_kernel
def _tier_one_anywhere(qt: VolcanoState, sc: Scratch) -> bool:
    # With priority deciding tier 1: whether a preemptible job of a priority below the highest holds pods
    # (``sc.prio_jobs`` has a slot per priority rank).
    if qt.v_act[1] & PF_PRIORITY == 0:
        return True
    for rank in range(sc.prio_jobs.shape[0] - 1):  # noqa: SIM110 (no generators in kernels)
        if sc.prio_jobs[rank] > 0:
            return True
    return False


@kernel
def _queue_bounds(qt: VolcanoState, cl: Cluster, jobs: Jobs, js: JobState) -> None:
    """Per queue ``q`` over its running preemptible jobs: ``qt.v_qbound[q]`` the largest drf share one
    keeps after losing a pod (-1: none), ``qt.v_qminp[q]`` the lowest priority (inf: none). drf names a
    victim only when that share reaches the preemptor's, at least its share of one pod; the priority plugin
    only a job of lower priority; both only fall as the action evicts."""
    for q in range(qt.v_qbound.shape[0]):
        qt.v_qbound[q] = -1.0
        qt.v_qminp[q] = math.inf
    for n in range(cl.node_int.shape[1]):
        pod = js.node_pods[n]
        while pod >= 0:
            v = jobs.pod_job[pod]
            pod = js.pod_next[pod]
            if js.dyn[D_STATUS, v] != S_RUNNING or jobs.ints[J_PREEMPTIBLE, v] == 0:
                continue
            q = jobs.ints[J_TENANT, v]
            qt.v_qbound[q] = max(qt.v_qbound[q], _drf_share(qt, jobs, v, int(js.dyn[D_PLACED, v]) - 1))
            qt.v_qminp[q] = min(qt.v_qminp[q], float(jobs.ints[J_PRIO, v]))


@kernel
def _tier_two(qt: VolcanoState, jobs: Jobs, js: JobState, count: int, j: int) -> int:
    """Tier 2's drf plugin over the ``count`` preemptees: the victims kept first, ``qt.v_ucnt`` the pods
    of each that pass (drf.go ``preemptableFn``: the victim job's allocation falls pod by pod)."""
    if qt.v_act[1] & PF_DRF == 0:
        return 0
    mine = _drf_share(qt, jobs, j, int(qt.v_pp[j]) + 1)
    kept = 0
    for i in range(count):
        v = qt.v_unit[i]
        placed = int(js.dyn[D_PLACED, v])
        passed = 0
        for k in range(1, int(qt.v_ucnt[i]) + 1):
            theirs = _drf_share(qt, jobs, v, placed - k)
            if not (mine < theirs or abs(mine - theirs) <= SHARE_DELTA):
                break
            passed += 1
        if passed > 0:
            qt.v_unit[kept] = v
            qt.v_ucnt[kept] = passed
            qt.v_uall[kept] = qt.v_uall[i]
            kept += 1
    return kept


@inline_kernel
def _fits_future(pod: tuple[float, float, float], future: tuple[float, float, float]) -> bool:
    return _le(pod[0], future[0]) and _le(pod[1], future[1]) and _le(pod[2], future[2])


@kernel
def _preempt_on(
    qt: VolcanoState, cl: Cluster, jobs: Jobs, js: JobState, j: int, n: int, pod: tuple[float, float, float]
) -> bool:
    """One pod of job ``j`` on node ``n``: find, validate and evict victims; whether the pod was pipelined."""
    q = jobs.ints[J_TENANT, j]
    # Gathered unordered: the plugins' victims do not depend on the order, and most nodes fail
    # ValidateVictims; only a node that passes sorts its victims.
    count = _node_units(qt, jobs, js, n, q, True, False)
    for i in range(count):
        qt.v_uall[i] = qt.v_ucnt[i]
    kept = _tier_one(qt, jobs, count, j)
    if kept < 0:
        kept = _tier_two(qt, jobs, js, count, j)
    if kept == 0:
        return False  # ValidateVictims: no victims
    f0 = float(cl.node_free[F_MILLI, n]) + qt.v_node[0] - qt.v_pipe[0, n]
    f1 = float(cl.node_free[F_CPU, n]) + qt.v_node[1] - qt.v_pipe[1, n]
    f2 = float(cl.node_free[F_MEM, n]) * MIB + qt.v_node[2] - qt.v_pipe[2, n]
    g0 = f0
    g1 = f1
    g2 = f2
    for i in range(kept):
        g0 += _job_amount(jobs, qt.v_unit[i], int(qt.v_ucnt[i]), 0)
        g1 += _job_amount(jobs, qt.v_unit[i], int(qt.v_ucnt[i]), 1)
        g2 += _job_amount(jobs, qt.v_unit[i], int(qt.v_ucnt[i]), 2)
    if not _fits_future(pod, (g0, g1, g2)):
        return False  # ValidateVictims
    _order_units(qt, jobs, js, kept)
    for i in range(kept):
        if _preemptive(qt, q, pod) and _fits_future(pod, (f0, f1, f2)):
            break
        v = qt.v_unit[i]
        _mark(qt, jobs, js, v, j)
        f0 += _job_amount(jobs, v, int(qt.v_uall[i]), 0)
        f1 += _job_amount(jobs, v, int(qt.v_uall[i]), 1)
        f2 += _job_amount(jobs, v, int(qt.v_uall[i]), 2)
    if not (_preemptive(qt, q, pod) and _fits_future(pod, (f0, f1, f2))):
        return False  # the evictions stay in the statement
    for r in range(3):
        qt.v_pipe[r, n] += pod[r]
        _set_alloc(qt, q, r, qt.v_alloc[r, q] + pod[r])
    qt.v_snode[int(qt.v_pp[j])] = n
    qt.v_pp[j] += 1
    return True


@kernel
def _discard(
    qt: VolcanoState, jobs: Jobs, js: JobState, j: int, first: int, pod: tuple[float, float, float]
) -> None:
    # Statement.Discard: the victims marked since ``first`` count again, the pipelined pods leave.
    for i in range(first, qt.v_nvict[0]):
        v = qt.v_vict[i]
        qt.v_mark[v] = 0
        vq = jobs.ints[J_TENANT, v]
        for r in range(3):
            _set_alloc(qt, vq, r, qt.v_alloc[r, vq] + _job_amount(jobs, v, int(js.dyn[D_PLACED, v]), r))
    qt.v_nvict[0] = first
    q = jobs.ints[J_TENANT, j]
    for k in range(int(qt.v_pp[j])):
        n = qt.v_snode[k]
        for r in range(3):
            qt.v_pipe[r, n] -= pod[r]
            _set_alloc(qt, q, r, qt.v_alloc[r, q] - pod[r])
    qt.v_pp[j] = 0


@kernel
def preempt_action(
    qt: VolcanoState,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    pend: Pending,
    tm: Timers,
    sc: Scratch,
    run: Run,
    t: float,
) -> int:
    """Volcano's ``preempt`` action at ``t`` after ``allocate``; returns the victims evicted.

    Notes
    -----
    volcano-sh/volcano ``pkg/scheduler/actions/preempt/preempt.go`` with ``framework/session_plugins.go``
    ``Preemptable`` and the priority, gang, conformance and drf plugins' ``PreemptableFn`` (module
    docstring; reference §4.1). The session's allocations (``qt.v_alloc``) and shares move with each
    eviction and pipelined pod, as Volcano's event handlers move them; ``qt.v_pipe`` keeps the committed
    statements' pipelined pods for the actions after this one.
    """
    num_q = qt.v_on.shape[0]
    flags = qt.v_act[1]
    drf_only = _tier_one_silent(flags)
    if flags & PF_DRF == 0 and (drf_only or not _tier_one_anywhere(qt, sc)):
        return 0  # no plugin can name a victim this session
    inqueue_heads(qt, jobs, cs, js, pend, run)
    qt.v_nvict[0] = 0
    qt.v_mut[0] += 1  # failures remembered by earlier actions expire
    evicted = 0
    _queue_bounds(qt, cl, jobs, js)
    for q in range(num_q):
        while qt.hsize[q] > 0:
            c = qt.hi[1, qt.seg[q]]
            j = _next_inqueue(jobs, cs, js, pend, qt, c)
            if j < 0:
                drop_top(qt, q)
                continue
            if drf_only and _drf_share(qt, jobs, j, 1) > qt.v_qbound[q] + SHARE_DELTA:
                # Only drf can name victims, and none for this class's pods (the bound only falls).
                drop_top(qt, q)
                continue
            _pass(jobs, cs, js, pend, qt, q, c, j)
            if js.dyn[D_WAITING, j] > 0 or jobs.ints[J_CAN_PREEMPT, j] == 0:
                continue  # pipelined on its victims' resources; or not eligible (preemptionPolicy Never)
            if params.codes[P_TAS] == TAS_VOLCANO and cs.ints[C_TAS_MODE, c] in (TM_REQUIRED, TM_PREFERRED):
                # preempt.go (v1.14.0+) skips a job with a networkTopology, hard or soft
                # (JobInfo.ContainsNetworkTopology; volcano-sh/volcano issue #4374): it never preempts.
                continue
            if qt.v_alloc[0, q] <= 0.0 and qt.v_alloc[1, q] <= 0.0 and qt.v_alloc[2, q] <= 0.0:
                continue  # nothing of its queue runs: no preemptee anywhere
            if not _tier_one_may(qt, jobs, j, q) and (
                flags & PF_DRF == 0 or _drf_share(qt, jobs, j, 1) > qt.v_qbound[q] + SHARE_DELTA
            ):
                continue  # no plugin names a victim of its queue anywhere
            if qt.v_cfail[c] == qt.v_mut[0] + 1 and qt.v_cprio[c] == jobs.ints[J_PRIO, j]:
                continue  # its class failed at this priority with nothing committed since
            shape = _class_pod(cs, c)
            pod = (
                _to_volcano(float(shape[0]), 0),
                _to_volcano(float(shape[1]), 1),
                _to_volcano(float(shape[2]), 2),
            )
            first = qt.v_nvict[0]
            pods = cs.ints[C_PODS, c]
            for _ in range(pods):  # each pending pod (task) once, while the job starves
                if qt.v_pp[j] == pods:
                    break
                marked = qt.v_nvict[0]
                assigned = False
                for n in range(cl.node_int.shape[1]):
                    if could_ever_fit(cl, cs, c, n) and _preempt_on(qt, cl, jobs, js, j, n, pod):
                        assigned = True
                        break
                if not assigned and qt.v_nvict[0] == marked:
                    break  # nothing changed: the job's other pods would walk to the same failure
            if qt.v_pp[j] < pods:
                _discard(qt, jobs, js, j, first, pod)
                qt.v_cfail[c] = qt.v_mut[0] + 1
                qt.v_cprio[c] = jobs.ints[J_PRIO, j]
                continue
            qt.v_pp[j] = 0
            qt.v_mut[0] += 1
            for i in range(first, qt.v_nvict[0]):
                v = qt.v_vict[i]
                evict_job(params, jobs, cs, cl, js, pend, tm, sc, run, v, t, j)
                qt.v_term[qt.v_nterm[0]] = v
                qt.v_nterm[0] += 1
                evicted += 1
    for i in range(qt.v_nvict[0]):
        qt.v_mark[qt.v_vict[i]] = 0
    qt.v_nvict[0] = 0
    for q in range(num_q):
        qt.hsize[q] = 0
    return evicted


__all__ = [
    "ACT_PREEMPT",
    "ACT_RECLAIM",
    "PF_CONFORMANCE",
    "PF_DRF",
    "PF_GANG",
    "PF_PRIORITY",
    "preempt_action",
]
