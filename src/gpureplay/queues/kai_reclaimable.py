"""KAI's reclaim rules between queues, stated plainly (docs/systems.md, "KAI Scheduler").

The plain statement of :mod:`gpureplay.engine.queues.kai.evict`'s ``_may_reclaim``, ``_may_preempt`` and
``_reclaimable``, used by the reference simulator, over :class:`~gpureplay.queues.kai_order.KaiQueueState`
(resources ``(gpu, cpu, memory)`` in KAI's units, -1 unlimited).

Sources (NVIDIA/KAI-Scheduler): ``plugins/proportion/reclaimable/reclaimable.go`` (``CanReclaimResources``,
``Reclaimable``: ``reclaimResourcesFromReclaimees``, ``reclaimingQueuesRemainWithinBoundaries`` with
``isFairShareSaturationLowerPerResource``, ``getLeveledQueues``; as released from v0.8.0 to v0.13.0),
``reclaimable/strategies/strategies.go``
(MaintainFairShare, GuaranteeDeservedQuota), ``plugins/proportion/capacity_policy``
(``IsNonPreemptibleJobOverQueueQuota``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpureplay.queues.kai_order import KaiQueueState, _le, allocatable
from gpureplay.queues.tree import KAI_UNLIMITED as UNLIMITED

__all__ = ["can_reclaim", "leveled", "preempt_within_quota", "reclaimable"]


def can_reclaim(queue: KaiQueueState, request: Sequence[float], preemptible: bool) -> bool:
    """``CanReclaimResources``: the job's leaf queue stays within its fair share with it; a non-preemptible
    job also keeps the queue's non-preemptible allocation within its quota."""
    for r in range(3):
        if not _le(queue.allocated[r] + request[r], queue.fair[r]):
            return False
        if not preemptible and not _le(queue.non_preemptible[r] + request[r], queue.quota[r]):
            return False
    return True


def preempt_within_quota(
    queues: Sequence[KaiQueueState], leaf: int, request: Sequence[float], preemptible: bool
) -> bool:
    """``IsNonPreemptibleJobOverQueueQuota`` (preempt's check): a non-preemptible job keeps every level's
    non-preemptible allocation within quota in the resources it requests."""
    if preemptible:
        return True
    n = leaf
    while n >= 0:
        q = queues[n]
        for r in range(3):
            if request[r] > 0 and q.quota[r] != UNLIMITED and q.quota[r] < q.non_preemptible[r] + request[r]:
                return False
        n = q.parent
    return True


def _path(queues: Sequence[KaiQueueState], q: int) -> list[int]:
    # From the top level down to q.
    path = []
    while q >= 0:
        path.append(q)
        q = queues[q].parent
    return path[::-1]


def leveled(queues: Sequence[KaiQueueState], a: int, b: int) -> tuple[int, int]:
    """``getLeveledQueues``: along both root paths, the first queues that differ."""
    pa = _path(queues, a)
    pb = _path(queues, b)
    found = (pa[0], pb[0])
    for x, y in zip(pa, pb, strict=False):
        found = (x, y)
        if x != y:
            break
    return found


def _ratio(allocated: float, fair: float) -> float:
    # fairShareSaturationRatio.
    if fair == 0:
        return math.inf if allocated > 0 else 0.0
    if fair == UNLIMITED:
        return 0.0
    return allocated / fair


def reclaimable(
    queues: Sequence[KaiQueueState],
    leaf: int,
    request: Sequence[float],
    preemptible: bool,
    victims: Sequence[tuple[int, Sequence[float]]],
) -> bool:
    """``Reclaimable``: whether a job of ``request`` in queue ``leaf`` may take ``victims`` (each its leaf
    queue and what it holds, in scenario order).

    Victims grouped by queue (queues in index order; KAI walks a Go map), each checked before its
    resources are subtracted from its queue and every ancestor: its queue, at the level below the two
    queues' lowest common ancestor, is above its allocatable share (MaintainFairShare), or the reclaimer's
    queue at that level stays within quota with the job and the victim's is above quota
    (GuaranteeDeservedQuota). Then at every level of the reclaimer's path: its allocation with the job over
    its fair share must stay below each sibling's that lost victims whenever above 1, in the resources
    involved: those the job requests and those the sibling's victims (in it or below it) hold
    (``isFairShareSaturationLowerPerResource`` with ``getInvolvedResourcesNames``; KAI's default saturation
    multiplier 1); and a non-preemptible job keeps the level's non-preemptible allocation within quota.
    (The comparison over every resource was a commit of pull request #374, 69d6414d, before its merge.)
    """
    remaining: dict[int, list[float]] = {}
    involved: dict[int, set[int]] = {}

    def entry(n: int) -> list[float]:
        if n not in remaining:
            remaining[n] = list(queues[n].allocated)
        return remaining[n]

    for e in sorted({q for q, _ in victims}):
        for q, held in victims:
            if q != e:
                continue
            mine, theirs = leveled(queues, leaf, e)
            rest = entry(theirs)
            keeps_share = not all(_le(rest[r], allocatable(queues[theirs], r)) for r in range(3))
            within = all(_le(queues[mine].allocated[r] + request[r], queues[mine].quota[r]) for r in range(3))
            above_quota = not all(_le(rest[r], queues[theirs].quota[r]) for r in range(3))
            if not (keeps_share or (within and above_quota)):
                return False
            n = e
            while n >= 0:
                row = entry(n)
                for r in range(3):
                    row[r] -= held[r]
                    if held[r] > 0:
                        involved.setdefault(n, set()).add(r)
                n = queues[n].parent
    p = leaf
    while p >= 0:
        for r in range(3):
            mine_r = (remaining[p][r] if p in remaining else queues[p].allocated[r]) + request[r]
            for s, rest in remaining.items():
                if s == p or queues[s].parent != queues[p].parent:
                    continue
                fair_p = queues[p].fair[r]
                fair_s = queues[s].fair[r]
                if fair_p == UNLIMITED and fair_s == UNLIMITED:
                    continue
                if request[r] <= 0 and r not in involved.get(s, set()):
                    continue  # neither the job nor s's victims use it
                ratio_p = _ratio(mine_r, fair_p)
                if ratio_p > 1 and fair_s > 0 and ratio_p >= _ratio(rest[r], fair_s):
                    return False
            if not preemptible and not _le(queues[p].non_preemptible[r] + request[r], queues[p].quota[r]):
                return False
        p = queues[p].parent
    return True
