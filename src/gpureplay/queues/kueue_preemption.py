"""Kueue's classical preemption: which admitted workloads a pending one evicts to fit its ClusterQueue.

Plain Python, the rule as Kueue states it (kubernetes-sigs/kueue ``pkg/scheduler/preemption``:
``preemption.go``, ``classical/candidate_generator.go``, ``classical/hierarchical_preemption.go``,
``common/ordering.go``, ``common/preemption_policy.go``; ``flavorassigner.go`` ``fitsResourceQuota``;
docs/systems.md, "Kueue"). The reference simulator calls it; the engine's kernel
(:mod:`gpureplay.engine.queues.kueue.preempt`) states it again on arrays and the differential tests compare
the two. Both are modelled in any cohort tree (nested cohorts, cohorts with quotas of their own); fair
sharing's is :mod:`gpureplay.queues.kueue_fair_preemption`.

Usage and quota of a node: a ClusterQueue's own usage and nominal quota; a cohort's usage is what its children
use beyond their local quotas and its quota is its subtree quota (``resource_node.go``). A node is *within
nominal* on a set of resources when its usage is at most its quota on each.

A workload ``W`` of ClusterQueue ``q`` that does not fit (its request above ``available(q)`` on some covered
resource) may preempt when, on every such resource ``r``, ``request_r <= potentialAvailable(q)`` and
(``request_r <= nominal_r(q)``, or the lowest subtree on ``q``'s path that holds the request is not the root
(``FindHeightOfLowestSubtreeThatFits``), or ``borrowWithinCohort`` or ``withinClusterQueue`` is not
``Never``); those resources are the ones that *need preemption*.

Candidates hold quota (running, or evicted and still terminating) and request a resource that needs
preemption: in ``q`` when ``withinClusterQueue`` allows them (``LowerPriority``: lower priority;
``LowerOrNewerEqualPriority``: also equal priority and queued later); in the other ClusterQueues of ``q``'s
cohort tree when ``reclaimWithinCohort`` allows them (``LowerPriority`` or ``Any``), their ClusterQueue and
every cohort between it and the lowest common ancestor with ``q`` above nominal on a resource that needs
preemption. Walking ``q``'s ancestors from its parent up, the preemptor has a *hierarchical advantage* at an
ancestor once it fits within the quota of ``q`` (usage + request <= nominal) or of an ancestor below it
(with the request less what each node below still had of its local quota); a candidate whose lowest common
ancestor with ``q`` is such an ancestor is reclaimed freely (``HierarchicalReclaim``), any other from another
ClusterQueue only without borrowing unless ``borrowWithinCohort`` allows its priority. They are taken in
order: evicted ones first; then hierarchical-reclaim candidates, other ClusterQueues' others, ``q``'s own;
each group in ``CandidatesOrdering`` (lower priority, most recently admitted, then job id, Kueue: UID).

Greedy runs (``classicalPreemptions``): each removes candidates in order (another ClusterQueue's candidate is
skipped once that queue, or a cohort between it and the lowest common ancestor, is back within nominal on the
resources that need preemption, and, in a run that allows borrowing, when it may only be reclaimed without
borrowing) until ``W`` fits: ``request <= available(q)`` on every covered resource and, in a run without
borrowing, ``usage_r(q) + request_r <= nominal_r(q)``. Then the targets are minimised: from the next-to-last
back to the first, a target whose return still lets ``W`` fit is dropped.

Under Kueue's Topology Aware Scheduling (``topology_aware: kueue``; ``flavorassigner.go`` and
``preemption.go`` since v0.11.0, "Support TAS preemptions within ClusterQueue", #4171) a workload whose
quota fits but whose topology assignment does not is in Preempt mode too, and in Preempt mode every
resource of the PodSet needs preemption; ``W`` fits only when its topology assignment is also found with
the targets' pods removed (``workloadFits`` calls ``FindTopologyAssignmentsForWorkload``). The caller
states that test as a function of the targets (``topology``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpureplay.engine.state.layout import Int64Array
from gpureplay.queues.kueue_quota import (
    NO_THRESHOLD,
    PR_BORROW,
    PR_RECLAIM,
    PR_THRESHOLD,
    PR_WITHIN,
    PREEMPTION_ROWS,
    KueueQuotas,
    available,
    node_usage,
    potential_available,
)
from gpureplay.schedulers.policy import BorrowWithinCohort, ReclaimWithinCohort, WithinClusterQueue


def uniform_table(
    num_cluster_queues: int,
    within: WithinClusterQueue,
    reclaim: ReclaimWithinCohort,
    borrow: BorrowWithinCohort,
    threshold: int | None,
) -> np.ndarray:
    """``[PREEMPTION_ROWS, cluster queue]``: the same policies for every ClusterQueue."""
    table = np.zeros((PREEMPTION_ROWS, num_cluster_queues), dtype=np.int64)
    table[PR_WITHIN] = within.value
    table[PR_RECLAIM] = reclaim.value
    table[PR_BORROW] = borrow.value
    table[PR_THRESHOLD] = NO_THRESHOLD if threshold is None else threshold
    return table


def preemption_table(quotas: KueueQuotas) -> np.ndarray:
    """``[PREEMPTION_ROWS, cluster queue]`` policies of ``quotas`` (all ``Never`` when it sets none)."""
    if quotas.preemption is not None:
        return quotas.preemption
    return uniform_table(
        quotas.num_cluster_queues,
        WithinClusterQueue.never,
        ReclaimWithinCohort.never,
        BorrowWithinCohort.never,
        None,
    )


def preempts(quotas: KueueQuotas) -> bool:
    """Whether some ClusterQueue may preempt (``withinClusterQueue`` or ``reclaimWithinCohort`` set)."""
    table = preemption_table(quotas)
    return bool((table[PR_WITHIN] != 0).any() or (table[PR_RECLAIM] != 0).any())


def preemption_problems(quotas: KueueQuotas) -> list[tuple[int, str, str]]:
    """``(cluster queue, config key, message)`` per ClusterQueue whose preemption the replay cannot model.

    Kueue itself refuses ``borrowWithinCohort`` without ``reclaimWithinCohort`` (``clusterqueue_webhook.go``).
    Classical and fair sharing's preemption (:mod:`gpureplay.queues.kueue_fair_preemption`) are modelled in
    any cohort tree, with any number of ResourceFlavors (flavors chosen by the flavor assigner's preemption
    modes, :mod:`gpureplay.queues.kueue_fungibility`).
    """
    table = preemption_table(quotas)
    problems: list[tuple[int, str, str]] = []
    for q in range(quotas.num_cluster_queues):
        reclaim, borrow = (int(table[row, q]) for row in (PR_RECLAIM, PR_BORROW))
        if borrow != 0 and reclaim == 0:
            message = "borrowWithinCohort needs reclaimWithinCohort other than Never (Kueue refuses it)"
            problems.append((q, "borrow_within_cohort", message))
    return problems


@dataclass(frozen=True)
class Admitted:
    """A workload holding quota: a preemption candidate.

    Attributes
    ----------
    job_id
        Its id (Kueue's last tie-break is the UID).
    cluster_queue
        Its ClusterQueue (tenant index).
    priority
        Its priority.
    timestamp
        Its queue-order timestamp (submission, or its last requeue under ``requeuingStrategy: Eviction``).
    admitted
        When it took its quota (``QuotaReserved``).
    evicted
        Evicted and still terminating (it holds its quota until its pods are gone).
    request
        Its request per resource, engine units.
    """

    job_id: int
    cluster_queue: int
    priority: int
    timestamp: float
    admitted: float
    evicted: bool
    request: tuple[int, int, int]


def ancestors(quotas: KueueQuotas, n: int) -> list[int]:
    # The cohorts above node n, its parent first.
    path: list[int] = []
    p = int(quotas.parent[n])
    while p >= 0:
        path.append(p)
        p = int(quotas.parent[p])
    return path


def _local_available(
    quotas: KueueQuotas, subtree: Int64Array, used: Sequence[Sequence[int]], n: int, r: int
) -> int:
    # resource_node.go LocalAvailable: what is left of node n's local (guaranteed) quota.
    return max(0, int(quotas.local_quota(subtree, n)[r]) - used[r][n])


def _reclaims_in_hierarchy(
    quotas: KueueQuotas, subtree: Int64Array, used: Sequence[Sequence[int]], q: int, r: int, amount: int
) -> bool:
    # hierarchical_preemption.go FindHeightOfLowestSubtreeThatFits, its second value: whether the lowest node
    # on q's path whose quota holds the amount (beyond what each node below keeps locally) has a parent.
    if not (used[r][q] + amount > subtree[r, q] and quotas.parent[q] >= 0):
        return bool(quotas.parent[q] >= 0)
    remaining = amount - _local_available(quotas, subtree, used, q, r)
    for n in ancestors(quotas, q):
        if used[r][n] + remaining <= subtree[r, n]:
            return bool(quotas.parent[n] >= 0)
        remaining -= _local_available(quotas, subtree, used, n, r)
    return False


#: Whether the preemptor's topology assignment is found once the given targets are removed (Kueue TAS).
TopologyFit = Callable[[Sequence["Admitted"]], bool]


def needs_preemption(
    quotas: KueueQuotas,
    usage: Sequence[Sequence[int]],
    q: int,
    request: Sequence[int],
    topology: bool = False,
) -> list[int]:
    """Resources on which ``request`` needs preemption in ClusterQueue ``q`` (empty: it may not preempt).

    ``FlavorAssigner.fitsResourceQuota``: a covered resource above ``available`` needs preemption when it
    is at most ``potentialAvailable`` and at most the nominal quota, or a subtree below the root holds it
    (``FindHeightOfLowestSubtreeThatFits``), or the queue's ``borrowWithinCohort`` or ``withinClusterQueue``
    is set, or under fair sharing its ``reclaimWithinCohort`` (``canPreemptWhileBorrowing``); any other
    resource above ``available`` makes the workload ``NoFit``. Under TAS (``topology``) a workload that is not
    ``NoFit`` needs preemption on every covered resource it requests (``updateModeForTASRequests``).
    """
    table = preemption_table(quotas)
    subtree = quotas.subtree_quota()
    used = node_usage(quotas, usage)
    need: list[int] = []
    for r in range(quotas.rows):
        if not quotas.covered[r, q] or request[r] <= 0 or request[r] <= available(quotas, usage, q, r):
            continue
        if request[r] > potential_available(quotas, subtree, q, r):
            return []
        while_borrowing = table[PR_BORROW, q] != 0 or (quotas.fair_sharing and table[PR_RECLAIM, q] != 0)
        if (
            request[r] <= quotas.nominal[r, q]
            or _reclaims_in_hierarchy(quotas, subtree, used, q, r, request[r])
            or while_borrowing
            or table[PR_WITHIN, q] != 0
        ):
            need.append(r)
        else:
            return []
    if topology:
        return [r for r in range(quotas.rows) if quotas.covered[r, q] and request[r] > 0]
    return need


def _within_allows(policy: int, candidate: Admitted, priority: int, timestamp: float) -> bool:
    # common/preemption_policy.go: LowerPriority; LowerOrNewerEqualPriority (equal and queued later too).
    if policy == WithinClusterQueue.never.value:
        return False
    if candidate.priority < priority:
        return True
    newer = candidate.priority == priority and timestamp < candidate.timestamp
    return policy == WithinClusterQueue.lower_or_newer_equal_priority.value and newer


def _reclaim_allows(policy: int, candidate: Admitted, priority: int) -> bool:
    # common/preemption_policy.go: LowerPriority, Any.
    if policy == ReclaimWithinCohort.any.value:
        return True
    return policy == ReclaimWithinCohort.lower_priority.value and candidate.priority < priority


def workload_fits(
    quotas: KueueQuotas, usage: list[list[int]], q: int, request: Sequence[int], borrowing: bool
) -> bool:
    # preemption.go workloadFits: the request within available; without borrowing, within nominal too.
    for r in range(quotas.rows):
        if not quotas.covered[r, q] or request[r] <= 0:
            continue
        if not borrowing and usage[r][q] + request[r] > quotas.nominal[r, q]:
            return False
        if request[r] > available(quotas, usage, q, r):
            return False
    return True


def fits_with(
    quotas: KueueQuotas,
    usage: list[list[int]],
    q: int,
    request: Sequence[int],
    borrowing: bool,
    targets: Sequence[Admitted],
    topology: TopologyFit | None,
) -> bool:
    """``workloadFits`` with ``targets`` removed (``usage`` already without them): the quota, then under TAS
    the topology assignment."""
    if not workload_fits(quotas, usage, q, request, borrowing):
        return False
    return topology is None or topology(targets)


#: Candidate groups in Kueue's order (``NewCandidateIterator``): hierarchical reclaim, other ClusterQueues'
#: others (priority-based), the preemptor's own ClusterQueue.
HIERARCHICAL, PRIORITY, SAME_QUEUE = 0, 1, 2


def lowest_common_ancestor(quotas: KueueQuotas, a: int, b: int) -> int:
    above = set(ancestors(quotas, a))
    for n in ancestors(quotas, b):
        if n in above:
            return n
    return -1


def _still_above(
    quotas: KueueQuotas,
    used: Sequence[Sequence[int]],
    subtree: Int64Array,
    c: int,
    lca: int,
    need: Sequence[int],
) -> bool:
    # candidate_generator.go candidateIsValid: ClusterQueue c and each cohort between it and lca exceed their
    # quota on some resource that needs preemption.
    n = c
    while n != lca:
        if all(used[r][n] <= subtree[r, n] for r in need):
            return False
        n = int(quotas.parent[n])
    return True


def _advantages(
    quotas: KueueQuotas, used: Sequence[Sequence[int]], subtree: Int64Array, q: int, request: Sequence[int]
) -> dict[int, bool]:
    # hierarchical_preemption.go collectCandidatesForHierarchicalReclaim: per ancestor of q, whether the
    # preemptor has the advantage there (QuantitiesFitInQuota at q or at an ancestor below it).
    requested = [r for r in range(quotas.rows) if quotas.covered[r, q] and request[r] > 0]
    remaining = {r: int(request[r]) for r in requested}
    advantage = False
    node = q
    out: dict[int, bool] = {}
    for a in ancestors(quotas, q):
        advantage = advantage or all(used[r][node] + remaining[r] <= subtree[r, node] for r in requested)
        remaining = {
            r: max(0, v - _local_available(quotas, subtree, used, node, r)) for r, v in remaining.items()
        }
        out[a] = advantage
        node = a
    return out


def candidates_of(
    quotas: KueueQuotas,
    usage: Sequence[Sequence[int]],
    q: int,
    request: Sequence[int],
    priority: int,
    timestamp: float,
    admitted: Sequence[Admitted],
    need: Sequence[int],
    fair: bool = False,
) -> list[tuple[Admitted, bool]]:
    """The preemption candidates of a workload of ClusterQueue ``q``, in Kueue's candidate order.

    Each comes with whether it may be reclaimed only without borrowing (classical preemption's
    ``borrowWithinCohort`` rule; fair sharing ignores it). ``need``: :func:`needs_preemption`. ``fair``:
    fair sharing's candidates (``preemption.go`` ``findCandidates``): another ClusterQueue's anywhere in
    ``q``'s cohort tree when that queue borrows (usage above nominal) on a resource that needs preemption,
    whatever its cohorts do; no hierarchical-reclaim group.
    """
    table = preemption_table(quotas)
    within, reclaim, borrow = (int(table[row, q]) for row in (PR_WITHIN, PR_RECLAIM, PR_BORROW))
    threshold = int(table[PR_THRESHOLD, q])
    subtree = quotas.subtree_quota()
    used = node_usage(quotas, usage)
    advantage = _advantages(quotas, used, subtree, q, request)
    ranked: list[tuple[tuple[bool, int, int, float, int], Admitted, bool]] = []
    for c in admitted:
        if not any(c.request[r] > 0 for r in need):
            continue
        if c.cluster_queue == q:
            if _within_allows(within, c, priority, timestamp):
                ranked.append((candidate_rank(c, SAME_QUEUE), c, False))
            continue
        lca = lowest_common_ancestor(quotas, q, c.cluster_queue)
        if reclaim == 0 or lca < 0 or not _reclaim_allows(reclaim, c, priority):
            continue
        if fair:
            if any(usage[r][c.cluster_queue] > quotas.nominal[r, c.cluster_queue] for r in need):
                ranked.append((candidate_rank(c, PRIORITY), c, False))
            continue
        if not _still_above(quotas, used, subtree, c.cluster_queue, lca, need):
            continue
        if advantage[lca]:
            ranked.append((candidate_rank(c, HIERARCHICAL), c, False))
            continue
        without_borrowing = borrow == 0 or c.priority >= priority or c.priority > threshold
        ranked.append((candidate_rank(c, PRIORITY), c, without_borrowing))
    ranked.sort(key=lambda e: e[0])
    return [(c, without_borrowing) for _, c, without_borrowing in ranked]


def candidate_rank(c: Admitted, group: int) -> tuple[bool, int, int, float, int]:
    """Kueue's candidate order (lower first): evicted first, then the group (:data:`HIERARCHICAL`,
    :data:`PRIORITY`, :data:`SAME_QUEUE`), then ``common/ordering.go`` ``CandidatesOrdering``: lower
    priority, most recently admitted, then job id."""
    return (not c.evicted, group, c.priority, -c.admitted, c.job_id)


def preemption_targets(
    quotas: KueueQuotas,
    usage: Sequence[Sequence[int]],
    q: int,
    request: Sequence[int],
    priority: int,
    timestamp: float,
    admitted: Sequence[Admitted],
    topology: TopologyFit | None = None,
) -> list[Admitted]:
    """The workloads a pending workload of ClusterQueue ``q`` evicts to fit (empty: none will do).

    Parameters
    ----------
    usage
        ``[resource][cluster queue]`` quota in use (evicted workloads still hold theirs).
    request, priority, timestamp
        The pending workload's request (engine units), priority and queue-order timestamp.
    admitted
        Every workload holding quota.
    topology
        Under Kueue TAS: whether the workload's topology assignment is found with the given targets removed.

    Returns
    -------
    list of Admitted
        The targets, in the order chosen (after minimisation); some may already be evicted.
    """
    need = needs_preemption(quotas, usage, q, request, topology is not None)
    if not need:
        return []
    table = preemption_table(quotas)
    borrow = int(table[PR_BORROW, q])
    candidates = candidates_of(quotas, usage, q, request, priority, timestamp, admitted, need)
    others = [e for e in candidates if e[0].cluster_queue != q]
    under_nominal = all(usage[r][q] < quotas.nominal[r, q] for r in need)
    if not others or (borrow == 0 and not under_nominal):
        runs = [True]
    elif borrow == 0 and all(e[1] for e in others):
        runs = [False, True]
    else:
        runs = [True, False]
    subtree = quotas.subtree_quota()
    for borrowing in runs:
        left = [list(row) for row in usage]
        targets: list[Admitted] = []
        for c, without_borrowing in candidates:
            if c.cluster_queue != q:
                if borrowing and without_borrowing:
                    continue
                lca = lowest_common_ancestor(quotas, q, c.cluster_queue)
                if not _still_above(quotas, node_usage(quotas, left), subtree, c.cluster_queue, lca, need):
                    continue
            for r in range(quotas.rows):
                left[r][c.cluster_queue] -= c.request[r]
            targets.append(c)
            if fits_with(quotas, left, q, request, borrowing, targets, topology):
                return minimised(quotas, left, q, request, borrowing, targets, topology)
    return []


def minimised(
    quotas: KueueQuotas,
    left: list[list[int]],
    q: int,
    request: Sequence[int],
    borrowing: bool,
    targets: list[Admitted],
    topology: TopologyFit | None = None,
) -> list[Admitted]:
    # preemption.go fillBackWorkloads: from the next-to-last back, return a target when W still fits.
    kept = list(targets)
    for i in range(len(kept) - 2, -1, -1):
        c = kept[i]
        for r in range(quotas.rows):
            left[r][c.cluster_queue] += c.request[r]
        if fits_with(quotas, left, q, request, borrowing, kept[:i] + kept[i + 1 :], topology):
            kept[i] = kept[-1]
            kept.pop()
        else:
            for r in range(quotas.rows):
                left[r][c.cluster_queue] -= c.request[r]
    return kept


__all__ = [
    "Admitted",
    "ancestors",
    "candidate_rank",
    "candidates_of",
    "fits_with",
    "lowest_common_ancestor",
    "minimised",
    "needs_preemption",
    "preemption_problems",
    "preemption_table",
    "preemption_targets",
    "preempts",
    "uniform_table",
    "workload_fits",
]
