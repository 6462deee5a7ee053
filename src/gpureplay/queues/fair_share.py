"""Each scheduler's fairness arithmetic, as pure functions over plain numbers.

- :func:`volcano_proportion`: Volcano's proportion plugin, the water-filling of each
  queue's ``deserved`` from weights, requests, capability and guarantee; and
  :func:`volcano_share`, its queue share.
- :func:`kueue_drs`: Kueue's dominant resource share (DRS) of a ClusterQueue or Cohort,
  over a cohort tree given by :class:`KueueNode` records.
- :func:`kai_fair_share`: KAI's fair-share division of one resource among sibling
  queues (deserved quota, then over-quota by priority level and weight with integer
  flooring, then leftovers), and :func:`kai_fair_share_tree` for a queue hierarchy.

Each follows the upstream code line by line (files named in each docstring), including
its quirks, so that the engine can port them to kernels and be tested against them.
Inputs are plain floats and dicts; nothing here reads a manifest or a trace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "KaiQueueShare",
    "KueueDRS",
    "KueueNode",
    "kai_fair_share",
    "kai_fair_share_tree",
    "kueue_drs",
    "kueue_potential_available",
    "kueue_subtree",
    "volcano_proportion",
    "volcano_real_capability",
    "volcano_share",
]

#: Volcano's ``minResource`` (``pkg/scheduler/api/resource_info.go``): amounts closer than this are equal,
#: and a resource whose every dimension is below it is empty. In Volcano's units (milli-CPU, bytes,
#: milli-GPU for scalar resources).
VOLCANO_MIN_RESOURCE = 0.1

_CPU_MEMORY = ("cpu", "memory")

# --------------------------------------------------------------------------- Volcano


def volcano_real_capability(
    total: Mapping[str, float],
    guarantees: Sequence[Mapping[str, float]],
    index: int,
    capability: Mapping[str, float] | None,
) -> dict[str, float]:
    """``realCapability`` of queue ``index``: its capability, capped by what others' guarantees leave.

    Parameters
    ----------
    total
        The cluster's allocatable amount per resource.
    guarantees
        ``spec.guarantee.resource`` of every queue in the cluster (with jobs or not).
    index
        The queue's position in ``guarantees``.
    capability
        Its ``spec.capability``, or ``None`` when unset.

    Returns
    -------
    dict
        ``min(capability, total − Σ guarantee + guarantee_q)`` per resource of ``total``;
        ``math.inf`` where the queue is not capped.

    Notes
    -----
    volcano-sh/volcano ``pkg/scheduler/plugins/proportion/proportion.go`` (``OnSessionOpen``,
    commit 8a56f48) with ``pkg/scheduler/api/helpers/helpers.go`` ``Min``: ``cpu`` and
    ``memory`` left out of a capability (or ``<= 0``) are unbounded (the plugin sets them
    to MaxFloat64); a scalar resource (``nvidia.com/gpu``) left out is
    unbounded only when the capability names no scalar resource at all, and is 0 when it
    names another one (``helpers.Min`` takes the left side's scalar names and reads a
    missing right-side name as 0).
    """
    total_guarantee = {r: sum(g.get(r, 0.0) for g in guarantees) for r in total}
    own = guarantees[index]
    real = {r: total[r] - total_guarantee[r] + own.get(r, 0.0) for r in total}
    if capability is None:
        return real
    names_scalar = any(r not in _CPU_MEMORY for r in capability)
    for r in real:
        if r in _CPU_MEMORY:
            if capability.get(r, 0.0) > 0:  # "<= 0" means unset: MaxFloat64
                real[r] = min(real[r], capability[r])
        elif r in capability:
            real[r] = min(real[r], capability[r])
        elif names_scalar:
            real[r] = 0.0
    return real


def volcano_proportion(
    total: Mapping[str, float],
    weights: Sequence[int],
    requests: Sequence[Mapping[str, float]],
    capabilities: Sequence[Mapping[str, float] | None] | None = None,
    guarantees: Sequence[Mapping[str, float]] | None = None,
    other_guarantees: Sequence[Mapping[str, float]] = (),
    min_resource: float = VOLCANO_MIN_RESOURCE,
) -> list[dict[str, float]]:
    """Volcano proportion plugin: each queue's ``deserved``, by weighted water-filling.

    Parameters
    ----------
    total
        The cluster's allocatable amount per resource (Σ of the nodes' allocatable).
    weights
        ``spec.weight`` of each queue with at least one job in the session.
    requests
        Per queue, allocated + pending requests per resource.
    capabilities
        Per queue, ``spec.capability`` or ``None`` (default: none set).
    guarantees
        Per queue, ``spec.guarantee.resource`` (default: none).
    other_guarantees
        Guarantees of queues without jobs: they still reserve capacity.
    min_resource
        Equality tolerance and emptiness threshold, :data:`VOLCANO_MIN_RESOURCE` in
        Volcano's own units; pass amounts in those units for an exact match.

    Returns
    -------
    list of dict
        ``deserved`` per queue, per resource of ``total``.

    Notes
    -----
    volcano-sh/volcano ``pkg/scheduler/plugins/proportion/proportion.go`` (``OnSessionOpen``,
    commit 8a56f48), docs/systems.md, "Volcano". ``request ≤ deserved`` is ``Resource.LessEqual`` with
    Volcano's tolerance ``minResource`` (``resource_info.go``).
    Rounds repeat until ``remaining`` is empty or unchanged, or every queue is met. In
    each round every unmet queue ``q`` (all against the same ``remaining`` and total
    weight ``W``) does::

        old = deserved_q
        deserved_q += remaining × weight_q / W
        deserved_q  = min(deserved_q, realCapability_q)        # MinDimensionResource(.., Infinity)
        deserved_q  = min(deserved_q, request_q)               # MinDimensionResource(.., Zero)
        if request_q ≤ deserved_q or deserved_q == old: met
        deserved_q  = max(deserved_q, guarantee_q)

    then ``remaining += Σ decreases − Σ increases``. The met test comes before the
    guarantee is applied, as in the code; a queue capped by its capability is met one
    round after it reaches the cap (its deserved stops changing), and what it leaves goes
    to the others by weight in the next rounds.
    """
    n = len(weights)
    caps: Sequence[Mapping[str, float] | None] = capabilities if capabilities is not None else [None] * n
    guars: Sequence[Mapping[str, float]] = guarantees if guarantees is not None else [{}] * n
    everyone = [*guars, *other_guarantees]
    real = [volcano_real_capability(total, everyone, q, caps[q]) for q in range(n)]
    names = list(total)
    deserved = [dict.fromkeys(names, 0.0) for _ in range(n)]
    remaining = dict(total)
    met: set[int] = set()
    while True:
        total_weight = sum(weights[q] for q in range(n) if q not in met)
        if total_weight == 0:
            break
        old_remaining = dict(remaining)
        increased = dict.fromkeys(names, 0.0)
        decreased = dict.fromkeys(names, 0.0)
        for q in range(n):
            if q in met:
                continue
            old = dict(deserved[q])
            # Multi(weight / totalWeight): the ratio first, as in the code, for the same rounding.
            new = {r: old[r] + remaining[r] * (weights[q] / total_weight) for r in names}
            new = {r: min(new[r], real[q][r]) for r in names}
            new = {r: min(new[r], requests[q].get(r, 0.0)) for r in names}
            request_met = all(
                requests[q].get(r, 0.0) < new[r] or abs(requests[q].get(r, 0.0) - new[r]) < min_resource
                for r in names
            )
            if request_met or new == old:
                met.add(q)
            new = {r: max(new[r], guars[q].get(r, 0.0)) for r in names}
            for r in names:
                increased[r] += max(0.0, new[r] - old[r])
                decreased[r] += max(0.0, old[r] - new[r])
            deserved[q] = new
        remaining = {r: remaining[r] - increased[r] + decreased[r] for r in names}
        if all(v < min_resource for v in remaining.values()) or remaining == old_remaining:
            break
    return deserved


def volcano_share(allocated: Mapping[str, float], deserved: Mapping[str, float]) -> float:
    """Volcano proportion share: ``max_r allocated[r] / deserved[r]`` (0/0 → 0, x/0 → 1).

    Notes
    -----
    ``proportion.go`` ``updateShare`` with ``helpers.Share``, over the resources of
    ``deserved``. Queues are ordered by lower share (after higher ``spec.priority``).
    """
    share = 0.0
    for r, d in deserved.items():
        a = allocated.get(r, 0.0)
        s = (0.0 if a == 0 else 1.0) if d == 0 else a / d
        share = max(share, s)
    return share


# --------------------------------------------------------------------------- Kueue

FlavorResource = tuple[str, str]


@dataclass(frozen=True)
class KueueNode:
    """A ClusterQueue or Cohort of a Kueue cohort tree, as plain numbers.

    Parameters
    ----------
    name
        Unique among ClusterQueues and Cohorts of the tree.
    parent
        The parent cohort's name; ``None`` for a root cohort or a ClusterQueue without one.
    is_cohort
        Cohorts get their subtree quota and usage from their children.
    nominal
        ``nominalQuota`` per ``(flavor, resource)``; a Cohort's own quota, if it has one.
    borrowing_limit, lending_limit
        Set limits per ``(flavor, resource)``; a missing key is unset.
    usage
        A ClusterQueue's admitted usage per ``(flavor, resource)`` (ignored for cohorts).
    weight
        ``spec.fairSharing.weight`` (default 1).
    """

    name: str
    parent: str | None = None
    is_cohort: bool = False
    nominal: Mapping[FlavorResource, float] = field(default_factory=dict)
    borrowing_limit: Mapping[FlavorResource, float] = field(default_factory=dict)
    lending_limit: Mapping[FlavorResource, float] = field(default_factory=dict)
    usage: Mapping[FlavorResource, float] = field(default_factory=dict)
    weight: float = 1.0


@dataclass(frozen=True)
class KueueDRS:
    """A node's dominant resource share.

    ``ratio`` is the unweighted ``max_r B_r × 1000 / L_r``; ``weighted`` is
    ``ratio / weight`` (``math.inf`` for weight 0 while borrowing); ``rounded`` is
    ``ceil(weighted)``, the ``status.fairSharing.weightedShare`` Kueue reports.
    """

    ratio: float
    weighted: float
    rounded: int
    dominant_resource: str
    borrowing: bool


def _local_quota(subtree: float, lending_limit: float | None) -> float:
    # resource_node.go guaranteedQuota / localQuota: the part of the quota kept from the parent.
    if lending_limit is None:
        return 0.0
    return max(0.0, subtree - lending_limit)


def kueue_subtree(
    nodes: Sequence[KueueNode],
) -> tuple[dict[str, dict[FlavorResource, float]], dict[str, dict[FlavorResource, float]]]:
    """Subtree quota and usage of every node, accumulated from the leaves up.

    Returns
    -------
    tuple of dict
        ``(subtree_quota, usage)``, each ``name -> {(flavor, resource): amount}``.

    Notes
    -----
    kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go``
    (``updateClusterQueueResourceNode``, ``updateCohortResourceNode``,
    ``accumulateFromChild``): a ClusterQueue's subtree quota is its nominal quota; a
    Cohort's is its own nominal quota plus, for each child, ``child subtree quota − child
    local quota`` (local = ``subtree − lendingLimit`` when a lendingLimit is set, else 0).
    A Cohort's usage is ``Σ max(0, child usage − child local quota)``. Every
    flavor-resource of the tree appears at the root, as 0 if need be.
    """
    by_name = {n.name: n for n in nodes}
    children: dict[str, list[KueueNode]] = {}
    for n in nodes:
        if n.parent is not None:
            children.setdefault(n.parent, []).append(n)
    quota: dict[str, dict[FlavorResource, float]] = {}
    usage: dict[str, dict[FlavorResource, float]] = {}

    def visit(name: str) -> None:
        node = by_name[name]
        q = dict(node.nominal)
        u: dict[FlavorResource, float] = {} if node.is_cohort else dict(node.usage)
        for child in children.get(name, []):
            visit(child.name)
            for fr, amount in quota[child.name].items():
                local = _local_quota(amount, child.lending_limit.get(fr))
                q[fr] = q.get(fr, 0.0) + amount - local
            for fr, amount in usage[child.name].items():
                local = _local_quota(quota[child.name].get(fr, 0.0), child.lending_limit.get(fr))
                u[fr] = u.get(fr, 0.0) + max(0.0, amount - local)
        quota[name], usage[name] = q, u

    for n in nodes:
        if n.parent is None:
            visit(n.name)
    return quota, usage


def kueue_potential_available(
    nodes: Sequence[KueueNode],
    subtree_quota: Mapping[str, Mapping[FlavorResource, float]],
    name: str,
    fr: FlavorResource,
) -> float:
    """Most of ``fr`` node ``name`` could use with no usage anywhere, within borrowing limits.

    Notes
    -----
    ``pkg/cache/scheduler/resource_node.go`` ``potentialAvailable``: at a root, its
    subtree quota; below, ``local quota + potentialAvailable(parent)``, capped at
    ``subtree quota + borrowingLimit`` when a borrowingLimit is set.
    """
    by_name = {n.name: n for n in nodes}
    node = by_name[name]
    quota = subtree_quota[name].get(fr, 0.0)
    if node.parent is None:
        return quota
    available = _local_quota(quota, node.lending_limit.get(fr)) + kueue_potential_available(
        nodes, subtree_quota, node.parent, fr
    )
    limit = node.borrowing_limit.get(fr)
    if limit is not None:
        available = min(quota + limit, available)
    return available


def kueue_drs(
    nodes: Sequence[KueueNode],
    name: str,
    workload: Mapping[FlavorResource, float] | None = None,
) -> KueueDRS:
    """Kueue's dominant resource share of node ``name``, optionally with a workload's request added.

    Parameters
    ----------
    nodes
        Every ClusterQueue and Cohort of the tree.
    name
        The node whose share is computed.
    workload
        A candidate workload's request per ``(flavor, resource)``, added to the node's
        usage (the fair-sharing tournament's "DRS including the workload").

    Returns
    -------
    KueueDRS

    Notes
    -----
    kubernetes-sigs/kueue ``pkg/cache/scheduler/fair_sharing.go`` (commit 02c5bf4)
    ``dominantResourceShare``, ``calculateLendable`` and ``roundedWeightedShare``
    (docs/systems.md, "Kueue")::

        b_fr  = max(0, usage[fr] + workload[fr] − subtreeQuota[fr])   for fr in the node's subtree quota
        B_r   = Σ_f b_(f,r)
        L_r   = Σ_f potentialAvailable(parent, (f, r))  over the root's flavor-resources
        ratio = max_r B_r × 1000 / L_r                  over r with L_r > 0; ties → lower resource name
        weighted = ratio / weight   (weight 0 and borrowing → +inf; not borrowing → 0)

    A node without a parent has DRS 0. A node that borrows only resources with
    ``L_r = 0`` is borrowing with ratio 0.
    """
    by_name = {n.name: n for n in nodes}
    node = by_name[name]
    if node.parent is None:
        return KueueDRS(0.0, 0.0, 0, "", False)
    subtree, usage = kueue_subtree(nodes)
    wl = workload or {}
    borrowed: dict[str, float] = {}
    for fr, quota in subtree[name].items():
        amount = wl.get(fr, 0.0) + usage[name].get(fr, 0.0) - quota
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0.0) + amount
    if not borrowed:
        return KueueDRS(0.0, 0.0, 0, "", False)
    root = node.parent
    while by_name[root].parent is not None:
        root = by_name[root].parent  # type: ignore[assignment]
    lendable: dict[str, float] = {}
    for fr in subtree[root]:
        lendable[fr[1]] = lendable.get(fr[1], 0.0) + kueue_potential_available(
            nodes, subtree, node.parent, fr
        )
    ratio, dominant = 0.0, ""
    for resource, amount in borrowed.items():
        lr = lendable.get(resource, 0.0)
        if lr > 0:
            r = amount * 1000.0 / lr
            if r > ratio or (r == ratio and (dominant == "" or resource < dominant)):
                ratio, dominant = r, resource
    if node.weight == 0:
        return KueueDRS(ratio, math.inf, 2**63 - 1, dominant, True)  # roundedWeightedShare: MaxInt64
    weighted = 0.0 if ratio == 0 else ratio / node.weight
    return KueueDRS(ratio, weighted, math.ceil(weighted), dominant, True)


# --------------------------------------------------------------------------- KAI

#: KAI's "no bound" value for quota (deserved) and limit (``commonconstants.UnlimitedResourceQuantity``).
KAI_UNLIMITED = -1.0

#: Default kValue, the weight of the usage term (``plugins/proportion/proportion.go``).
KAI_K_VALUE = 1.0


@dataclass(frozen=True)
class KaiQueueShare:
    """One queue's input to KAI's division of one resource.

    Parameters
    ----------
    name
        Unique among siblings; the last tie-break of the leftover phase (KAI uses the UID).
    deserved
        ``quota`` (-1: unlimited, i.e. the whole amount being divided).
    over_quota_weight
        ``overQuotaWeight``.
    max_allowed
        ``limit`` (-1: unlimited).
    request
        Allocated + pending request of the queue's jobs.
    priority
        Queue ``priority`` (default 100).
    usage
        Historical usage / cluster capacity (0 without time-based fair share).
    created
        Creation time (any increasing number): the leftover phase's tie-break.
    """

    name: str
    deserved: float
    over_quota_weight: float
    max_allowed: float
    request: float
    priority: int = 100
    usage: float = 0.0
    created: float = 0.0

    def requestable(self) -> float:
        """``GetRequestableShare``: the request capped by the limit (``resource_share.go``)."""
        if self.max_allowed == KAI_UNLIMITED:
            return self.request
        return min(self.max_allowed, self.request)


def _remaining_requested(q: KaiQueueShare, fair: float) -> float:
    return max(0.0, q.requestable() - fair)


def _satisfied(q: KaiQueueShare, fair: float) -> bool:
    # resource_division.go isQueueSatisfied: the raw request (not the limited one), or the limit, reached.
    return q.request <= fair or (q.max_allowed != KAI_UNLIMITED and q.max_allowed <= fair)


def _divide_up_to_fair_share(
    amount: float,
    k_value: float,
    queues: Sequence[KaiQueueShare],
    fair: dict[str, float],
    leftover: dict[str, float],
) -> float:
    """One priority level of phase 2 (``divideUpToFairShare``); returns what is left.

    A queue alone at its level is divided for like any other: it is given its remaining requestable
    amount at most, and the rest goes on to the lower levels. (A branch that gave a lone queue all that
    is left, whatever its request, was a commit marked "WIP", ae18cfd9, of pull request #554, removed
    again by b0ee3c3c "Remove resource division change" on the same branch before it was squash-merged;
    no release has it.)
    """
    while True:
        another_round = False
        round_amount = amount
        total_weight = sum(q.over_quota_weight for q in queues if _remaining_requested(q, fair[q.name]) > 0)
        if total_weight == 0:
            break
        weights: dict[str, float] = {}
        for q in queues:
            if _satisfied(q, fair[q.name]):
                continue
            normalized = q.over_quota_weight / total_weight
            weights[q.name] = max(0.0, normalized + k_value * (normalized - q.usage))
        weight_sum = sum(weights.values())
        if weight_sum == 0:
            break
        for q in queues:
            if amount == 0:
                break
            if _satisfied(q, fair[q.name]) or q.over_quota_weight == 0:
                continue
            requested = _remaining_requested(q, fair[q.name])
            share = round_amount * (weights[q.name] / weight_sum)  # normalise first, as the code does
            if requested <= share:
                give = requested
                leftover.pop(q.name, None)
            else:
                # KAI hands out over-quota shares in whole units "for better usability".
                give = float(math.floor(share)) if share >= 1 else 0.0
                if share - give > 0:
                    leftover[q.name] = share - give
            if give == 0:
                continue
            fair[q.name] += give
            amount -= give
            another_round = another_round or requested < share
        if not another_round or amount == 0:
            break
    return amount


def kai_fair_share(
    total: float, queues: Sequence[KaiQueueShare], k_value: float = KAI_K_VALUE
) -> dict[str, float]:
    """KAI's fair share of one resource among sibling queues.

    Parameters
    ----------
    total
        The amount to divide: the cluster's for top-level queues, the parent's fair
        share for the children of a parent.
    queues
        The siblings, in a fixed order (KAI iterates a Go map; the order only matters
        through floating-point rounding).
    k_value
        Weight of the usage term (``schedulingshard.spec.kValue``, default 1.0).

    Returns
    -------
    dict
        ``name -> fairShare``.

    Notes
    -----
    NVIDIA/KAI-Scheduler ``pkg/scheduler/plugins/proportion/resource_division/resource_division.go``
    (``setResourceShare``; as released in v0.13.0, unchanged since the usage term came in v0.9.0, #494),
    docs/systems.md, "KAI Scheduler":

    1. ``setDeservedResource``: ``fair_q = min(deserved_q (−1 → total), requestable_q)``;
       ``remaining = total − Σ fair``. If nothing remains, stop.
    2. ``divideOverQuotaResource``, per priority level, highest first
       (``divideUpToFairShare``), in rounds with ``R0`` = what remains at the round's start,
       over the queues not satisfied (``request ≤ fair`` or ``limit ≤ fair``), a queue alone
       at its level included::

           nW_q  = OQW_q / Σ OQW over queues with requestable − fair > 0
           sw_q  = max(0, nW_q + k·(nW_q − usage_q))
           share = R0 × sw_q / Σ sw
           give  = requestable − fair  if that is ≤ share (the queue is satisfied)
                   floor(share)        otherwise, keeping share − floor(share) as its leftover

       Another round runs only if some queue was given less than its share.
    3. ``divideRemainingResource``, per priority level, highest first: queues with a
       leftover, largest leftover first (then older, then name), get ``min(1, remaining)``
       each, once.
    """
    fair = {q.name: 0.0 for q in queues}
    remaining = total
    for q in queues:
        deserved = total if q.deserved == KAI_UNLIMITED else q.deserved
        amount = min(deserved, q.requestable())
        fair[q.name] += amount
        remaining -= amount
    if remaining <= 0:
        return fair
    priorities = sorted({q.priority for q in queues}, reverse=True)
    leftovers: dict[int, dict[str, float]] = {}
    for priority in priorities:
        level = [q for q in queues if q.priority == priority]
        leftovers[priority] = {}
        remaining = _divide_up_to_fair_share(remaining, k_value, level, fair, leftovers[priority])
    by_name = {q.name: q for q in queues}
    for priority in priorities:
        if remaining <= 0:
            break
        order = sorted(
            leftovers[priority].items(), key=lambda item: (-item[1], by_name[item[0]].created, item[0])
        )
        for name, _ in order:
            if remaining == 0:
                break
            give = min(1.0, remaining)
            fair[name] += give
            remaining -= give
    return fair


def kai_fair_share_tree(
    total: float,
    queues: Sequence[KaiQueueShare],
    parents: Mapping[str, str | None],
    k_value: float = KAI_K_VALUE,
) -> dict[str, float]:
    """KAI's fair share over a queue hierarchy: top-level queues split ``total``, parents split their share.

    Parameters
    ----------
    total
        The cluster's amount of the resource.
    queues
        Every queue; a parent's ``request`` is replaced by the sum of its children's.
    parents
        ``name -> parentQueue`` (``None`` for a top-level queue).
    k_value
        As in :func:`kai_fair_share`.

    Notes
    -----
    ``pkg/scheduler/plugins/proportion/proportion.go``: ``setFairShareForQueues`` divides
    among the top queues, then recursively gives each queue's fair share to its children
    (``SetResourcesShare`` per level); a job's request is added to its queue and every
    ancestor (``updateQueuesResourceUsageForPendingJob``), so a parent's request is the sum
    of its subtree's. Each level is :func:`kai_fair_share`.
    """
    children: dict[str | None, list[KaiQueueShare]] = {}
    for q in queues:
        children.setdefault(parents.get(q.name), []).append(q)

    def request_of(q: KaiQueueShare) -> float:
        kids = children.get(q.name)
        return q.request if not kids else sum(request_of(k) for k in kids)

    fair: dict[str, float] = {}

    def divide(amount: float, parent: str | None) -> None:
        level = [
            KaiQueueShare(
                q.name,
                q.deserved,
                q.over_quota_weight,
                q.max_allowed,
                request_of(q),
                q.priority,
                q.usage,
                q.created,
            )
            for q in children.get(parent, [])
        ]
        if not level:
            return
        shares = kai_fair_share(amount, level, k_value)
        fair.update(shares)
        for q in level:
            divide(shares[q.name], q.name)

    divide(total, None)
    return fair
