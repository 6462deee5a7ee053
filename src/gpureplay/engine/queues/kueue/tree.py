"""A Kueue quota tree's resource-node arithmetic on the engine's arrays: usage up the tree, ``available``.

kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go`` (reference §4.2); the plain-Python statement is
:mod:`gpureplay.queues.kueue_quota`. Shared by the cycle (:mod:`gpureplay.engine.queues.kueue.cycle`) and
preemption (:mod:`gpureplay.engine.queues.kueue.preempt`); each queue's heap of class heads serves Volcano's
session too (:mod:`gpureplay.engine.queues.volcano.session`).
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.state.bundles import Jobs, JobState, KueueState, QueueState, Run
from gpureplay.engine.state.heaps import merge_pop, merge_push
from gpureplay.engine.state.layout import (
    ALL_MODELS,
    D_FLAVOR,
    FLAVOR_BITS,
    FP_BORROW_NEXT,
    J_CPU,
    J_ID,
    J_MEM,
    J_MILLI,
    J_PODS,
    J_TENANT,
    QU_CPU,
    QU_MEM,
    QU_MILLI,
    QUEUE_FIELDS,
    QUOTA_UNSET,
    T_KEY1,
    T_KEY2,
)

#: ``run.queues`` rows of each quota resource (GPU milli, CPU milli, memory MiB).
RESOURCE_ROWS = (QU_MILLI, QU_CPU, QU_MEM)


@inline_kernel
def request_amount(jobs: Jobs, j: int, r: int) -> int:
    """Job ``j``'s whole request of resource ``r`` (0 GPU milli, 1 CPU milli, 2 memory MiB)."""
    per_pod = jobs.ints[J_MILLI, j] if r == 0 else (jobs.ints[J_CPU, j] if r == 1 else jobs.ints[J_MEM, j])
    return int(jobs.ints[J_PODS, j] * per_pod)


@inline_kernel
def flavor_of(js: JobState, j: int, r: int) -> int:
    """The flavor slot job ``j``'s admission assigned to resource ``r`` (``D_FLAVOR``; 0 with one flavor)."""
    return int((js.dyn[D_FLAVOR, j] >> (FLAVOR_BITS * r)) & ((1 << FLAVOR_BITS) - 1))


@inline_kernel
def row_amount(jobs: Jobs, js: JobState, j: int, row: int) -> int:
    """Job ``j``'s request on quota row ``row`` (resource ``row % 3`` of flavor slot ``row // 3``): its whole
    request of the resource in the flavor it was assigned, else 0."""
    r = row % 3
    if flavor_of(js, j, r) != row // 3:
        return 0
    return request_amount(jobs, j, r)


@inline_kernel
def queue_use(run: Run, row: int, q: int) -> int:
    """ClusterQueue ``q``'s usage of quota row ``row``: ``run.queues``' per-flavor rows with several flavors,
    else its total of the resource."""
    if run.queues.shape[0] > QUEUE_FIELDS:
        return int(run.queues[QUEUE_FIELDS + row, q])
    return int(run.queues[RESOURCE_ROWS[row], q])


@inline_kernel
def local_quota(qt: KueueState, r: int, n: int) -> int:
    """``resource_node.go`` ``guaranteedQuota``: node ``n``'s subtree quota it does not lend."""
    lend = qt.lend[r, n]
    if lend == QUOTA_UNSET:
        return 0
    return max(0, int(qt.subtree[r, n] - lend))


@kernel
def node_usage(qt: KueueState, run: Run, r: int) -> None:
    """Fill ``qt.used[r]``: the ClusterQueues' usage of quota row ``r`` and, up the tree, the cohorts'.

    Notes
    -----
    A cohort uses what its children use beyond their local quotas (``resource_node.go``
    ``updateCohortResourceNode``); nodes are listed children before parents, so one pass suffices.
    """
    num_cq = run.queues.shape[1]
    for n in range(qt.parent.shape[0]):
        qt.used[r, n] = queue_use(run, r, n) if n < num_cq else 0
    for n in range(qt.parent.shape[0]):
        p = qt.parent[n]
        if p >= 0:
            qt.used[r, p] += max(0, int(qt.used[r, n] - local_quota(qt, r, n)))


@kernel
def available(qt: KueueState, r: int, q: int) -> int:
    """How much of quota row ``r`` ClusterQueue ``q`` may still take (``qt.used[r]``: :func:`node_usage`).

    Notes
    -----
    kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go`` ``available`` (reference §4.2), unrolled
    from the root down: at a root ``subtreeQuota − usage``; at each node below,
    ``max(0, localQuota − usage) + A``, ``A`` the parent's value capped by a set ``borrowingLimit`` at
    ``(subtreeQuota − localQuota) − max(0, usage − localQuota) + borrowingLimit``.
    """
    # The path from q to its root, in qt.path (root last).
    depth = 0
    n = q
    while n >= 0:
        qt.path[depth] = n
        depth += 1
        n = qt.parent[n]
    root = qt.path[depth - 1]
    value = int(qt.subtree[r, root] - qt.used[r, root])
    for i in range(depth - 2, -1, -1):
        n = qt.path[i]
        local = local_quota(qt, r, n)
        limit = qt.borrow[r, n]
        if limit != QUOTA_UNSET:
            cap = int(qt.subtree[r, n] - local) - max(0, int(qt.used[r, n] - local)) + int(limit)
            value = min(value, cap)
        value = max(0, local - int(qt.used[r, n])) + value
    return value


@kernel
def fits_quota(qt: KueueState, jobs: Jobs, js: JobState, run: Run, j: int, borrowing: bool) -> bool:
    """Whether job ``j``'s whole request, in the flavors assigned to it, fits its ClusterQueue: within
    ``available`` on each covered quota row, and, unless ``borrowing``, within its nominal quota too.

    Notes
    -----
    Kueue's flavor assigner (``flavorassigner.go`` ``fitsResourceQuota``: nominal quota plus what the cohort
    can lend) with ``borrowing``; ``preemption.go`` ``workloadFits`` either way.
    """
    q = jobs.ints[J_TENANT, j]
    for r in range(qt.nominal.shape[0]):
        need = row_amount(jobs, js, j, r)
        if need == 0 or qt.covered[r, q] == 0:
            continue
        if not borrowing and queue_use(run, r, q) + need > qt.nominal[r, q]:
            return False
        node_usage(qt, run, r)
        if need > available(qt, r, q):
            return False
    return True


@kernel
def borrow_height(qt: KueueState, r: int, q: int, amount: int) -> int:
    """The borrowing level of ``amount`` more of quota row ``r`` in ClusterQueue ``q``: the height
    (``qt.height``) of the lowest node on its path whose quota holds it (0: within its own quota, or without
    a cohort; the root's height when none does; ``qt.used[r]``: :func:`node_usage`).

    Notes
    -----
    kubernetes-sigs/kueue ``hierarchical_preemption.go`` ``FindHeightOfLowestSubtreeThatFits`` (v0.12.0 to
    v0.19.2): the flavor assigner's borrowing level, which the classical iterator also orders heads by. Plain
    statement: :func:`gpureplay.queues.kueue_quota.borrow_height`.
    """
    if qt.used[r, q] + amount <= qt.subtree[r, q] or qt.parent[q] < 0:
        return 0
    remaining = amount - max(0, local_quota(qt, r, q) - int(qt.used[r, q]))
    n = qt.parent[q]
    while qt.used[r, n] + remaining > qt.subtree[r, n] and qt.parent[n] >= 0:
        remaining -= max(0, local_quota(qt, r, n) - int(qt.used[r, n]))
        n = qt.parent[n]
    return int(qt.height[n])


@kernel
def assign_flavors(qt: KueueState, jobs: Jobs, js: JobState, run: Run, j: int) -> bool:
    """Assign job ``j`` a flavor per resource group of its ClusterQueue (``D_FLAVOR``); False when some group
    has no flavor where the request fits (the job is inadmissible now).

    Notes ----- kubernetes-sigs/kueue ``flavorassigner.go`` ``findFlavorForPodSets`` (reference §4.2): a
    group's flavors are tried in order, a flavor fitting when each requested resource of the group is within
    ``available``, at the worst borrowing level of them (:func:`borrow_height`). The first flavor that fits
    without borrowing is taken, or the first that fits at all under ``whenCanBorrow: MayStopSearch``; under
    ``TryNextFlavor`` the one of the lowest level (the first of equals). With one flavor slot the assignment
    is that slot and :func:`fits_quota` decides alone. A job that fits nowhere is given each group's first
    flavor (a ClusterQueue of one flavor per group preempts there; one that preempts with several flavors in a
    group assigns by :func:`gpureplay.engine.queues.kueue.flavor_modes.assign_by_modes`). Plain statement:
    :func:`gpureplay.queues.kueue_quota.assign_flavors`.
    """
    if qt.flv_mask.shape[0] <= 1:
        return True
    q = jobs.ints[J_TENANT, j]
    packed = 0
    for g in range(3):
        if not group_asked(qt, jobs, q, j, g):
            continue
        best = -1
        best_height = 0
        for k in range(qt.flv_slots.shape[2]):
            f = qt.flv_slots[q, g, k]
            if f < 0:
                break
            height = 0
            for r in range(3):
                need = request_amount(jobs, j, r)
                if qt.flv_group[r, q] != g or need == 0:
                    continue
                row = 3 * f + r
                node_usage(qt, run, row)
                if need > available(qt, row, q):
                    height = -1
                    break
                height = max(height, borrow_height(qt, row, q, need))
            if height < 0:
                continue
            if height == 0 or qt.flv_policy[q] & FP_BORROW_NEXT == 0:
                best = f
                break
            if best < 0 or height < best_height:
                best = f
                best_height = height
        if best < 0:
            # Each group's first flavor: the assignment a job that fits nowhere keeps (with one flavor per
            # group, Kueue's Preempt mode is in that flavor).
            js.dyn[D_FLAVOR, j] = first_flavors(qt, jobs, q, j)
            return False
        packed |= group_bits(qt, jobs, q, j, g, best)
    js.dyn[D_FLAVOR, j] = packed
    return True


@inline_kernel
def group_asked(qt: KueueState, jobs: Jobs, q: int, j: int, g: int) -> bool:
    """Whether job ``j`` requests a resource of ClusterQueue ``q``'s resource group ``g``."""
    for r in range(3):  # noqa: SIM110 (no generators in kernels)
        if qt.flv_group[r, q] == g and request_amount(jobs, j, r) > 0:
            return True
    return False


@inline_kernel
def group_bits(qt: KueueState, jobs: Jobs, q: int, j: int, g: int, f: int) -> int:
    """``D_FLAVOR`` bits giving flavor slot ``f`` to the resources job ``j`` requests of group ``g``."""
    bits = 0
    for r in range(3):
        if qt.flv_group[r, q] == g and request_amount(jobs, j, r) > 0:
            bits |= f << (FLAVOR_BITS * r)
    return bits


@inline_kernel
def first_flavors(qt: KueueState, jobs: Jobs, q: int, j: int) -> int:
    """``D_FLAVOR`` with each of ClusterQueue ``q``'s groups' first flavor for the resources job ``j``
    requests (the assignment of a job that fits no flavor)."""
    packed = 0
    for g in range(3):
        if qt.flv_slots[q, g, 0] >= 0:
            packed |= group_bits(qt, jobs, q, j, g, qt.flv_slots[q, g, 0])
    return packed


@inline_kernel
def flavor_mask(qt: KueueState, jobs: Jobs, js: JobState, j: int) -> np.uint64:
    """The GPU models job ``j``'s pods may use in the flavors assigned to it (their ``nodeLabels``)."""
    q = jobs.ints[J_TENANT, j]
    mask = np.uint64(ALL_MODELS)
    for r in range(3):
        if qt.flv_group[r, q] >= 0 and request_amount(jobs, j, r) > 0:
            mask &= qt.flv_mask[flavor_of(js, j, r)]
    return mask


@inline_kernel
def push_class_head(qt: QueueState, jobs: Jobs, js: JobState, q: int, c: int, j: int) -> None:
    """Push class ``c`` into queue ``q``'s heap of class heads, keyed by its head job ``j``'s queue key.

    Each queue's heap (``qt.hf``, ``qt.hi`` columns ``qt.seg[q] .. qt.seg[q+1]``, ``qt.hsize[q]`` entries)
    gives its next job in queue order (priority, then FIFO, then job id) across its classes.
    """
    a = qt.seg[q]
    b = qt.seg[q + 1]
    key1 = js.time[T_KEY1, j]
    key2 = js.time[T_KEY2, j]
    qt.hsize[q] = merge_push(
        qt.hf[:, a:b], qt.hi[:, a:b], qt.hsize[q], 0.0, key1, key2, jobs.ints[J_ID, j], c, 0
    )


@inline_kernel
def drop_top(qt: QueueState, q: int) -> None:
    """Remove the top class of queue ``q``'s heap of class heads."""
    a = qt.seg[q]
    b = qt.seg[q + 1]
    qt.hsize[q] = merge_pop(qt.hf[:, a:b], qt.hi[:, a:b], qt.hsize[q])


__all__ = [
    "RESOURCE_ROWS",
    "assign_flavors",
    "available",
    "borrow_height",
    "drop_top",
    "first_flavors",
    "fits_quota",
    "flavor_mask",
    "flavor_of",
    "group_asked",
    "group_bits",
    "local_quota",
    "node_usage",
    "push_class_head",
    "queue_use",
    "request_amount",
    "row_amount",
]
