"""Kueue's flavor assigner with preemption modes on the engine's arrays: the twin of
:mod:`gpureplay.queues.kueue_fungibility`.

A preempting ClusterQueue whose resource group lists several flavors (``KueueState.flv_policy`` bit
``FP_MODES``) weighs each flavor's preemption mode before choosing one: kubernetes-sigs/kueue
``flavorassigner.go`` ``findFlavorForPodSets`` / ``fitsResourceQuota`` / ``isPreferred`` /
``shouldTryNextFlavor`` and ``preemption_oracle.go`` ``SimulatePreemption`` (the target search of
:mod:`gpureplay.engine.queues.kueue.preempt` for one flavor-resource alone). The rule is stated once, in plain
Python, in that module's docstring; these kernels follow it step for step.
"""

from __future__ import annotations

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.queues.kueue.preempt import may_preempt_row, move_usage, potential, search_targets
from gpureplay.engine.queues.kueue.tree import (
    available,
    borrow_height,
    first_flavors,
    group_asked,
    group_bits,
    node_usage,
    request_amount,
)
from gpureplay.engine.state.bundles import Classes, Cluster, Jobs, JobState, KueueState, Params, Run
from gpureplay.engine.state.layout import (
    D_FLAVOR,
    FLAVOR_BITS,
    FLAVOR_NONE,
    FP_BORROW_NEXT,
    FP_PREEMPT_NEXT,
    FP_PREEMPTION_OVER,
    J_TENANT,
)

#: ``flavorassigner.go`` ``preemptionMode``, worst to best.
PM_NO_FIT = 0
PM_NO_CANDIDATES = 1
PM_PREEMPT = 2
PM_RECLAIM = 3
PM_FIT = 4

#: The assignment's representative mode (``FlavorAssignmentMode``): no flavor in some group, preemption may
#: admit it (targets or not), it fits.
AM_NO_FIT = 0
AM_PREEMPT = 1
AM_FIT = 2

#: ``worstGranularMode``'s borrowing level.
_WORST_BORROW = 1 << 62


@inline_kernel
def preferred(am: int, ab: int, bm: int, bb: int, over: bool) -> bool:
    """``isPreferred``: whether mode ``am`` at borrowing level ``ab`` is better than ``bm`` at ``bb``
    (``over``: ``preference: PreemptionOverBorrowing``)."""
    if am == PM_NO_FIT:
        return False
    if bm == PM_NO_FIT:
        return True
    if (am == PM_NO_CANDIDATES) != (bm == PM_NO_CANDIDATES):
        return bm == PM_NO_CANDIDATES
    if over and ab != bb:
        return ab < bb
    if am != bm:
        return am > bm
    return ab < bb


@inline_kernel
def _tries_next(mode: int, borrow: int, policy: int) -> bool:
    # shouldTryNextFlavor.
    if mode == PM_NO_FIT or mode == PM_NO_CANDIDATES:  # noqa: SIM109 (plain comparisons in kernels)
        return True
    if (mode == PM_PREEMPT or mode == PM_RECLAIM) and policy & FP_PREEMPT_NEXT != 0:  # noqa: SIM109
        return True
    return borrow > 0 and policy & FP_BORROW_NEXT != 0


@kernel
def simulate_preemption(
    qt: KueueState,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    js: JobState,
    run: Run,
    j: int,
    row: int,
) -> tuple[int, int]:
    """``SimulatePreemption`` of job ``j`` on quota row ``row`` alone: its preemption mode (``PM_*``) and
    the borrowing level once the targets' usage is removed (now, when there are none).

    Notes
    -----
    kubernetes-sigs/kueue ``preemption_oracle.go``: the target search (fair sharing's strategies under fair
    sharing, else the classical one) with only this flavor-resource needing preemption and the job's
    request of it alone (``D_FLAVOR`` set to the row's flavor for its resource and
    :data:`~gpureplay.engine.state.layout.FLAVOR_NONE` for the others during the search); ``Preempt`` when a
    target is in the job's own ClusterQueue, else ``Reclaim``.
    """
    q = jobs.ints[J_TENANT, j]
    r = row % 3
    saved = js.dyn[D_FLAVOR, j]
    packed = 0
    for x in range(3):
        packed |= (row // 3 if x == r else FLAVOR_NONE) << (FLAVOR_BITS * x)
    js.dyn[D_FLAVOR, j] = packed
    for x in range(qt.need.shape[0]):
        qt.need[x] = 0
    qt.need[row] = 1
    # SimulatePreemption (preemption_oracle.go) passes no TAS requests: quota alone.
    nt = search_targets(qt, None, params, jobs, cs, cl, js, run, j)
    js.dyn[D_FLAVOR, j] = saved
    own = False
    for i in range(nt):
        v = qt.targets[i]
        own = own or jobs.ints[J_TENANT, v] == q
        move_usage(jobs, js, run, v, -1)
    node_usage(qt, run, row)
    borrow = borrow_height(qt, row, q, request_amount(jobs, j, r))
    for i in range(nt):
        move_usage(jobs, js, run, qt.targets[i], 1)
    if nt == 0:
        return PM_NO_CANDIDATES, borrow
    return (PM_PREEMPT if own else PM_RECLAIM), borrow


@kernel
def assign_by_modes(
    qt: KueueState, params: Params, jobs: Jobs, cs: Classes, cl: Cluster, js: JobState, run: Run, j: int
) -> int:
    """Assign job ``j`` a flavor per resource group of its ClusterQueue weighing preemption modes
    (``D_FLAVOR``); the assignment's mode (``AM_*``; on ``AM_NO_FIT`` each group's first flavor).

    Notes
    -----
    kubernetes-sigs/kueue ``flavorassigner.go`` ``findFlavorForPodSets``: a flavor's mode is the worst of
    its requested resources' (``fitsResourceQuota``: ``NoFit`` above ``potentialAvailable`` or when
    preemption may not help, ``Fit`` within ``available`` at its borrowing level, else
    :func:`simulate_preemption`); the search stops at the first flavor ``shouldTryNextFlavor`` does not
    pass, else keeps the best seen (``isPreferred``, first of equals). Plain statement:
    :func:`gpureplay.queues.kueue_fungibility.assign_with_modes`.
    """
    q = jobs.ints[J_TENANT, j]
    policy = qt.flv_policy[q]
    over = policy & FP_PREEMPTION_OVER != 0
    packed = 0
    result = AM_FIT
    for g in range(3):
        if not group_asked(qt, jobs, q, j, g):
            continue
        best = -1
        best_mode = PM_NO_FIT
        best_borrow = _WORST_BORROW
        for k in range(qt.flv_slots.shape[2]):
            f = qt.flv_slots[q, g, k]
            if f < 0:
                break
            mode = PM_FIT
            borrow = 0
            for r in range(3):
                need = request_amount(jobs, j, r)
                if qt.flv_group[r, q] != g or need == 0:
                    continue
                row = 3 * f + r
                node_usage(qt, run, row)
                found = PM_NO_FIT
                level = 0
                if need <= potential(qt, row, q):
                    level = borrow_height(qt, row, q, need)
                    if need <= available(qt, row, q):
                        found = PM_FIT
                    elif may_preempt_row(qt, row, q, need):
                        found, level = simulate_preemption(qt, params, jobs, cs, cl, js, run, j, row)
                if preferred(mode, borrow, found, level, over):
                    mode = found
                    borrow = level
                if mode == PM_NO_FIT:
                    break
            if not _tries_next(mode, borrow, policy):
                best = f
                best_mode = mode
                best_borrow = borrow
                break
            if preferred(mode, borrow, best_mode, best_borrow, over):
                best = f
                best_mode = mode
                best_borrow = borrow
        if best < 0:
            js.dyn[D_FLAVOR, j] = first_flavors(qt, jobs, q, j)
            return AM_NO_FIT
        packed |= group_bits(qt, jobs, q, j, g, best)
        if best_mode != PM_FIT:
            result = AM_PREEMPT
    js.dyn[D_FLAVOR, j] = packed
    return result


__all__ = ["AM_FIT", "AM_NO_FIT", "AM_PREEMPT", "assign_by_modes", "preferred", "simulate_preemption"]
