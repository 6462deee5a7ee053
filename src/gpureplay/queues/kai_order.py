"""KAI's queue order and capacity policy, stated plainly (docs/systems.md, "KAI Scheduler").

The plain statement of :mod:`gpureplay.engine.queues.kai.session`'s ``queue_before`` and ``within_capacity``,
used by the reference simulator: one :class:`KaiQueueState` per queue with its resources as ``(gpu, cpu,
memory)`` in KAI's units (GPUs, millicores, MB) and ``-1`` for unlimited, as KAI writes them.

Sources (NVIDIA/KAI-Scheduler): ``plugins/proportion/queue_order/queue_order.go``,
``plugins/proportion/resource_share/resource_share.go`` and ``queue_resource_share.go``,
``plugins/proportion/capacity_policy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpureplay.queues.tree import KAI_UNLIMITED as UNLIMITED

__all__ = [
    "NO_SHARE_MULTIPLIER",
    "KaiQueueState",
    "allocatable",
    "dominant_share",
    "queue_before",
    "victim_first",
    "within_capacity",
]

#: ``noFairShareDrfMultiplier``: a resource used with no allocatable share weighs 1000 x its use.
NO_SHARE_MULTIPLIER = 1000.0

Amounts = tuple[float, float, float]


@dataclass
class KaiQueueState:
    """One queue in a session: its spec and its state, per resource ``(gpu, cpu, memory)``.

    ``quota`` is KAI's ``deserved``; ``fair`` the proportion plugin's fair share this session;
    ``allocated`` what its jobs hold, ``non_preemptible`` the part non-preemptible jobs hold.
    """

    quota: Amounts
    limit: Amounts
    fair: Amounts
    allocated: Amounts
    non_preemptible: Amounts
    priority: int
    created: int
    parent: int


def _le(a: float, b: float) -> bool:
    # compareQuantities(a, b) <= 0 with -1 as unlimited.
    if a == UNLIMITED:
        return b == UNLIMITED
    if b == UNLIMITED:
        return True
    return a <= b


def allocatable(q: KaiQueueState, r: int) -> float:
    """``GetAllocatableShare``: ``max(quota, fair share)`` capped by the limit (-1: unlimited)."""
    if q.quota[r] == UNLIMITED:
        return q.limit[r]
    found = max(q.quota[r], q.fair[r])
    if q.limit[r] != UNLIMITED:
        found = min(q.limit[r], found)
    return found


def dominant_share(q: KaiQueueState, total: Sequence[float], add: Sequence[float] = (0.0, 0.0, 0.0)) -> float:
    """``GetDominantResourceShare`` with ``add`` allocated on top: ``max_r allocated_r / allocatable_r``.

    An unlimited allocatable share is the cluster's ``total``; a zero one weighs ``allocated x 1000``.
    """
    share = 0.0
    for r in range(3):
        room = allocatable(q, r)
        if room == UNLIMITED:
            room = total[r]
        held = q.allocated[r] + add[r]
        share = max(share, held * NO_SHARE_MULTIPLIER if room == 0 else held / room)
    return share


def queue_before(
    a: KaiQueueState, job_a: Sequence[float], b: KaiQueueState, job_b: Sequence[float], total: Sequence[float]
) -> bool:
    """Whether queue ``a`` (its best pending job requesting ``job_a``) goes before ``b`` (``job_b``).

    ``GetQueueOrderResult``, criterion by criterion:

    1. a queue not over its fair share goes first ("over": fair share < allocated in *every* resource,
       ``ResourceQuantities.Less``, so a resource nobody uses keeps every queue "not over");
    2. one that stays within its quota with the job (``LessEqual``, -1 unlimited);
    3. higher ``priority``;
    4. one that uses no resource it has zero allocatable share of (with the job);
    5. lower dominant resource share with the job;
    6. lower dominant resource share without it;
    7. smaller allocatable share (no more in any resource, less in one);
    8. older (``a`` first only when created strictly earlier).
    """
    return _order(a, job_a, job_a, b, job_b, job_b, total)


def victim_first(
    a: KaiQueueState,
    taken_a: Sequence[float],
    b: KaiQueueState,
    taken_b: Sequence[float],
    total: Sequence[float],
) -> bool:
    """Whether queue ``a`` gives its next victim before ``b``, ``taken_*`` what its victims so far and its
    next one hold.

    ``JobsOrderByQueues`` with ``VictimQueue`` (``actions/utils/job_order_by_queue.go``): the queue order
    reversed, with no job (criteria 2 and 4 on the allocation alone) and criterion 5's dominant share
    counted without the victims.
    """
    zero = (0.0, 0.0, 0.0)
    return not _order(a, zero, [-x for x in taken_a], b, zero, [-x for x in taken_b], total)


def _order(
    a: KaiQueueState,
    job_a: Sequence[float],
    more_a: Sequence[float],
    b: KaiQueueState,
    job_b: Sequence[float],
    more_b: Sequence[float],
    total: Sequence[float],
) -> bool:
    # GetQueueOrderResult: job_* for criteria 2 and 4, more_* added for criterion 5.
    over_a = all(a.fair[r] < a.allocated[r] for r in range(3))
    over_b = all(b.fair[r] < b.allocated[r] for r in range(3))
    if over_a != over_b:
        return over_b
    starved_a = all(_le(a.allocated[r] + job_a[r], a.quota[r]) for r in range(3))
    starved_b = all(_le(b.allocated[r] + job_b[r], b.quota[r]) for r in range(3))
    if starved_a != starved_b:
        return starved_a
    if a.priority != b.priority:
        return a.priority > b.priority
    zero_a = any(allocatable(a, r) == 0 and a.allocated[r] + job_a[r] > 0 for r in range(3))
    zero_b = any(allocatable(b, r) == 0 and b.allocated[r] + job_b[r] > 0 for r in range(3))
    if zero_a != zero_b:
        return zero_b
    for share_a, share_b in (
        (dominant_share(a, total, more_a), dominant_share(b, total, more_b)),
        (dominant_share(a, total), dominant_share(b, total)),
    ):
        if share_a != share_b:
            return share_a < share_b
    a_le_b = all(_le(allocatable(a, r), allocatable(b, r)) for r in range(3))
    b_le_a = all(_le(allocatable(b, r), allocatable(a, r)) for r in range(3))
    if a_le_b != b_le_a:
        return a_le_b
    return a.created < b.created


def within_capacity(
    queues: Sequence[KaiQueueState], leaf: int, request: Sequence[float], preemptible: bool
) -> bool:
    """The capacity policy for a job of ``request`` in queue ``leaf`` (``queues`` indexed by ``parent``).

    ``IsJobOverQueueCapacity`` (KAI v0.13.0, ``capacity_policy.go``), up the tree from the leaf:
    allocated + request above a ``limit`` refuses it (``resultsOverLimit``, ``max_allowed_check.go``); a
    non-preemptible job's non-preemptible allocated + request above a ``quota`` refuses it
    (``resultsWithNonPreemptibleOverQuota``, ``quota_check.go``). Resources the job does not request are
    not checked. A parent's quota below the request refuses nothing else: that check
    (``checkParentQueueQuotas``) exists only in KAI's unmerged pull request #112.
    """
    n = leaf
    while n >= 0:
        q = queues[n]
        for r in range(3):
            need = request[r]
            if need == 0:
                continue
            if q.limit[r] != UNLIMITED and q.limit[r] < q.allocated[r] + need:
                return False
            if not preemptible and q.quota[r] != UNLIMITED and q.quota[r] < q.non_preemptible[r] + need:
                return False
        n = q.parent
    return True
