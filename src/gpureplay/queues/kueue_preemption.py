"""Kueue's classical preemption: which admitted workloads a pending one evicts to fit its ClusterQueue.

Plain Python, the rule as Kueue states it (kubernetes-sigs/kueue ``pkg/scheduler/preemption``:
``preemption.go``, ``classical/candidate_generator.go``, ``classical/hierarchical_preemption.go``,
``common/ordering.go``, ``common/preemption_policy.go``; scheduler-semantics.md §4.2). The reference
simulator calls it; the engine's kernel (:mod:`gpureplay.engine.kueue_preempt`) states it again on arrays
and the differential tests compare the two. Modelled for ClusterQueues without a cohort or directly in a
root cohort without a quota of its own (Kueue's hierarchical generalisation reduces to this there); other
trees are refused with preemption set (:func:`preemption_problems`).

A workload ``W`` of ClusterQueue ``q`` that does not fit (its request above ``available(q)`` on some covered
resource) may preempt when, on every such resource ``r``, ``request_r <= potentialAvailable(q)`` and
(``request_r <= nominal_r(q)``, or ``borrowWithinCohort`` or ``withinClusterQueue`` is not ``Never``);
those resources are the ones that *need preemption*.

Candidates hold quota (running, or evicted and still terminating) and request a resource that needs
preemption: in ``q`` when ``withinClusterQueue`` allows them (``LowerPriority``: lower priority;
``LowerOrNewerEqualPriority``: also equal priority and queued later), in the cohort's other ClusterQueues
when ``reclaimWithinCohort`` allows them (``LowerPriority`` or ``Any``) and their ClusterQueue uses more than
its nominal quota of a resource that needs preemption. They are taken in ``CandidatesOrdering``: evicted
first, other ClusterQueues before ``q``, lower priority, most recently admitted, then job id (Kueue: UID).

Greedy runs (``classicalPreemptions``): each removes candidates in order (another ClusterQueue's candidate is
skipped once that queue is back at or below nominal on every resource that needs preemption, and, in a run
that allows borrowing, when it may only be reclaimed without borrowing) until ``W`` fits: ``request <=
available(q)`` on every covered resource and, in a run without borrowing, ``usage_r(q) + request_r <=
nominal_r(q)``. Then the targets are minimised: from the next-to-last back to the first, a target whose
return still lets ``W`` fit is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpureplay.queues.kueue_quota import (
    NO_THRESHOLD,
    PR_BORROW,
    PR_RECLAIM,
    PR_THRESHOLD,
    PR_WITHIN,
    PREEMPTION_ROWS,
    RESOURCES,
    KueueQuotas,
    available,
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

    Kueue itself refuses ``borrowWithinCohort`` without ``reclaimWithinCohort`` (``clusterqueue_webhook.go``);
    the replay models ClusterQueues with no cohort or in a root cohort without its own quota (classical
    preemption here, fair sharing's in :mod:`gpureplay.queues.kueue_fair_preemption`).
    """
    table = preemption_table(quotas)
    problems: list[tuple[int, str, str]] = []
    for q in range(quotas.num_cluster_queues):
        within, reclaim, borrow = (int(table[row, q]) for row in (PR_WITHIN, PR_RECLAIM, PR_BORROW))
        if borrow != 0 and reclaim == 0:
            message = "borrowWithinCohort needs reclaimWithinCohort other than Never (Kueue refuses it)"
            problems.append((q, "borrow_within_cohort", message))
        if within == 0 and reclaim == 0:
            continue
        p = int(quotas.parent[q])
        if p >= 0 and (int(quotas.parent[p]) >= 0 or bool((quotas.nominal[:, p] != 0).any())):
            problems.append(
                (
                    q,
                    "reclaim_within_cohort",
                    "preemption is modelled for a ClusterQueue in a root cohort without a quota of its own "
                    "(not a nested cohort or a cohort quota)",
                )
            )
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


def needs_preemption(
    quotas: KueueQuotas, usage: Sequence[Sequence[int]], q: int, request: Sequence[int]
) -> list[int]:
    """Resources on which ``request`` needs preemption in ClusterQueue ``q`` (empty: it may not preempt).

    ``FlavorAssigner.fitsResourceQuota``: a covered resource above ``available`` needs preemption when it
    is at most ``potentialAvailable`` and at most the nominal quota, or the queue's ``borrowWithinCohort``
    or ``withinClusterQueue`` is set, or under fair sharing its ``reclaimWithinCohort``
    (``canPreemptWhileBorrowing``); any other resource above ``available`` makes the workload ``NoFit``.
    """
    table = preemption_table(quotas)
    subtree = quotas.subtree_quota()
    need: list[int] = []
    for r in range(len(RESOURCES)):
        if not quotas.covered[r, q] or request[r] <= 0 or request[r] <= available(quotas, usage, q, r):
            continue
        if request[r] > potential_available(quotas, subtree, q, r):
            return []
        while_borrowing = table[PR_BORROW, q] != 0 or (quotas.fair_sharing and table[PR_RECLAIM, q] != 0)
        if request[r] <= quotas.nominal[r, q] or while_borrowing or table[PR_WITHIN, q] != 0:
            need.append(r)
        else:
            return []
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
    for r in range(len(RESOURCES)):
        if not quotas.covered[r, q] or request[r] <= 0:
            continue
        if not borrowing and usage[r][q] + request[r] > quotas.nominal[r, q]:
            return False
        if request[r] > available(quotas, usage, q, r):
            return False
    return True


def candidates_of(
    quotas: KueueQuotas,
    usage: Sequence[Sequence[int]],
    q: int,
    request: Sequence[int],
    priority: int,
    timestamp: float,
    admitted: Sequence[Admitted],
    need: Sequence[int],
) -> list[tuple[Admitted, bool]]:
    """The preemption candidates of a workload of ClusterQueue ``q``, in ``CandidatesOrdering``.

    Each comes with whether it may be reclaimed only without borrowing (classical preemption's
    ``borrowWithinCohort`` rule; fair sharing ignores it). ``need``: :func:`needs_preemption`.
    """
    table = preemption_table(quotas)
    within, reclaim, borrow = (int(table[row, q]) for row in (PR_WITHIN, PR_RECLAIM, PR_BORROW))
    threshold = int(table[PR_THRESHOLD, q])
    cohort = int(quotas.parent[q])
    # The preemptor stays within its nominal quota on everything it requests ("hierarchical advantage").
    advantage = all(
        usage[r][q] + request[r] <= quotas.nominal[r, q]
        for r in range(len(RESOURCES))
        if quotas.covered[r, q] and request[r] > 0
    )
    candidates: list[tuple[Admitted, bool]] = []
    for c in admitted:
        if not any(c.request[r] > 0 for r in need):
            continue
        if c.cluster_queue == q:
            if _within_allows(within, c, priority, timestamp):
                candidates.append((c, False))
            continue
        other = c.cluster_queue
        if cohort < 0 or int(quotas.parent[other]) != cohort:
            continue
        if not any(usage[r][other] > quotas.nominal[r, other] for r in need):
            continue
        if not _reclaim_allows(reclaim, c, priority):
            continue
        without_borrowing = not advantage and (
            borrow == 0 or c.priority >= priority or c.priority > threshold
        )
        candidates.append((c, without_borrowing))
    candidates.sort(key=lambda e: candidate_rank(e[0], q))
    return candidates


def candidate_rank(c: Admitted, q: int) -> tuple[bool, bool, int, float, int]:
    """``common/ordering.go`` ``CandidatesOrdering`` for a preemptor of ClusterQueue ``q`` (lower first):
    evicted first, other ClusterQueues first, lower priority, most recently admitted, then job id."""
    return (not c.evicted, c.cluster_queue == q, c.priority, -c.admitted, c.job_id)


def preemption_targets(
    quotas: KueueQuotas,
    usage: Sequence[Sequence[int]],
    q: int,
    request: Sequence[int],
    priority: int,
    timestamp: float,
    admitted: Sequence[Admitted],
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

    Returns
    -------
    list of Admitted
        The targets, in the order chosen (after minimisation); some may already be evicted.
    """
    need = needs_preemption(quotas, usage, q, request)
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
    for borrowing in runs:
        left = [list(row) for row in usage]
        targets: list[Admitted] = []
        for c, without_borrowing in candidates:
            if c.cluster_queue != q:
                if borrowing and without_borrowing:
                    continue
                if all(left[r][c.cluster_queue] <= quotas.nominal[r, c.cluster_queue] for r in need):
                    continue
            for r in range(len(RESOURCES)):
                left[r][c.cluster_queue] -= c.request[r]
            targets.append(c)
            if workload_fits(quotas, left, q, request, borrowing):
                return minimised(quotas, left, q, request, borrowing, targets)
    return []


def minimised(
    quotas: KueueQuotas,
    left: list[list[int]],
    q: int,
    request: Sequence[int],
    borrowing: bool,
    targets: list[Admitted],
) -> list[Admitted]:
    # preemption.go fillBackWorkloads: from the next-to-last back, return a target when W still fits.
    kept = list(targets)
    for i in range(len(kept) - 2, -1, -1):
        c = kept[i]
        for r in range(len(RESOURCES)):
            left[r][c.cluster_queue] += c.request[r]
        if workload_fits(quotas, left, q, request, borrowing):
            kept[i] = kept[-1]
            kept.pop()
        else:
            for r in range(len(RESOURCES)):
                left[r][c.cluster_queue] -= c.request[r]
    return kept


__all__ = [
    "Admitted",
    "candidate_rank",
    "candidates_of",
    "minimised",
    "needs_preemption",
    "preemption_problems",
    "preemption_table",
    "preemption_targets",
    "preempts",
    "uniform_table",
    "workload_fits",
]
