"""A Kueue quota tree's resource-node arithmetic on the engine's arrays: usage up the tree, ``available``.

kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go`` (reference §4.2); the plain-Python statement
is :mod:`gpureplay.queues.kueue_quota`. Shared by the cycle (:mod:`gpureplay.engine.quota`) and preemption
(:mod:`gpureplay.engine.kueue_preempt`); each queue's heap of class heads serves Volcano's session too
(:mod:`gpureplay.engine.proportion`).
"""

from __future__ import annotations

from gpureplay.engine.bundles import Jobs, JobState, Quotas, Run
from gpureplay.engine.config import inline_kernel, kernel
from gpureplay.engine.heaps import merge_pop, merge_push
from gpureplay.engine.layout import (
    J_CPU,
    J_ID,
    J_MEM,
    J_MILLI,
    J_PODS,
    J_TENANT,
    QU_CPU,
    QU_MEM,
    QU_MILLI,
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
def local_quota(qt: Quotas, r: int, n: int) -> int:
    """``resource_node.go`` ``guaranteedQuota``: node ``n``'s subtree quota it does not lend."""
    lend = qt.lend[r, n]
    if lend == QUOTA_UNSET:
        return 0
    return max(0, int(qt.subtree[r, n] - lend))


@kernel
def node_usage(qt: Quotas, run: Run, r: int) -> None:
    """Fill ``qt.used[r]``: the ClusterQueues' usage of resource ``r`` and, up the tree, the cohorts'.

    Notes
    -----
    A cohort uses what its children use beyond their local quotas (``resource_node.go``
    ``updateCohortResourceNode``); nodes are listed children before parents, so one pass suffices.
    """
    num_cq = run.queues.shape[1]
    for n in range(qt.parent.shape[0]):
        qt.used[r, n] = run.queues[RESOURCE_ROWS[r], n] if n < num_cq else 0
    for n in range(qt.parent.shape[0]):
        p = qt.parent[n]
        if p >= 0:
            qt.used[r, p] += max(0, int(qt.used[r, n] - local_quota(qt, r, n)))


@kernel
def available(qt: Quotas, r: int, q: int) -> int:
    """How much of resource ``r`` ClusterQueue ``q`` may still take (``qt.used[r]``: :func:`node_usage`).

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
def fits_quota(qt: Quotas, jobs: Jobs, run: Run, j: int, borrowing: bool) -> bool:
    """Whether job ``j``'s whole request fits its ClusterQueue: within ``available`` on each covered resource,
    and, unless ``borrowing``, within its nominal quota too.

    Notes
    -----
    Kueue's flavor assigner (``flavorassigner.go`` ``fitsResourceQuota``: nominal quota plus what the cohort
    can lend) with ``borrowing``; ``preemption.go`` ``workloadFits`` either way.
    """
    q = jobs.ints[J_TENANT, j]
    for r in range(3):
        need = request_amount(jobs, j, r)
        if need == 0 or qt.covered[r, q] == 0:
            continue
        if not borrowing and run.queues[RESOURCE_ROWS[r], q] + need > qt.nominal[r, q]:
            return False
        node_usage(qt, run, r)
        if need > available(qt, r, q):
            return False
    return True


@inline_kernel
def push_class_head(qt: Quotas, jobs: Jobs, js: JobState, q: int, c: int, j: int) -> None:
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
def drop_top(qt: Quotas, q: int) -> None:
    """Remove the top class of queue ``q``'s heap of class heads."""
    a = qt.seg[q]
    b = qt.seg[q + 1]
    qt.hsize[q] = merge_pop(qt.hf[:, a:b], qt.hi[:, a:b], qt.hsize[q])


__all__ = [
    "RESOURCE_ROWS",
    "available",
    "drop_top",
    "fits_quota",
    "local_quota",
    "node_usage",
    "push_class_head",
    "request_amount",
]
