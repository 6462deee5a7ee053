"""Kueue's quota tree as the replay runs it: ClusterQueues and Cohorts as arrays, and the admission rule.

A replay under ``scheduler.queues: kueue`` turns its queue tree (real manifests, or one generated from the
trace's queues and declared quotas) into a :class:`KueueQuotas`: one node per ClusterQueue (its tenant index,
the order of the jobs' ``queue`` values) followed by the cohorts, children before parents, with
``nominalQuota``, ``borrowingLimit`` and ``lendingLimit`` per resource. Resources are the three the jobs
request, in the engine's units: ``nvidia.com/gpu`` in milli-GPU, ``cpu`` in milli-CPU, ``memory`` in MiB.

:func:`available` and :func:`fits` are the plain-Python statement of Kueue's rule (docs/systems.md, "Kueue":
from
kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_node.go``); the engine's kernels
(:mod:`gpureplay.engine.queues.kueue.cycle`) compute the same and the reference simulator uses these to check
them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from gpureplay.cluster.catalog import label_model
from gpureplay.engine.state.layout import (
    ALL_MODELS,
    FLAVOR_NONE,
    FP_BORROW_NEXT,
    FP_MODES,
    FP_PREEMPT_NEXT,
    FP_PREEMPTION_OVER,
    KP_BORROW,
    KP_RECLAIM,
    KP_ROWS,
    KP_THRESHOLD,
    KP_WITHIN,
    Int64Array,
)
from gpureplay.errors import InputError, Problem
from gpureplay.queues.manifests import ManifestSet
from gpureplay.queues.tree import (
    GPU_RESOURCE,
    KUEUE_BORROW,
    KUEUE_RECLAIM,
    KUEUE_WITHIN_CQ,
    ClusterQueue,
    Cohort,
    QueueTree,
    ResourceFlavor,
)
from gpureplay.schedulers.policy import FairSharingStrategies

__all__ = [
    "RESOURCES",
    "UNSET",
    "KueueQuotas",
    "assign_flavors",
    "available",
    "borrow_height",
    "borrow_level",
    "first_flavors",
    "fits",
    "flavor_nodes",
    "flavor_tables",
    "generated_quotas",
    "manifest_quotas",
    "request_of",
    "row_request",
]

#: Kubernetes resource names in the engine's resource order, with each one's unit in the engine.
RESOURCES: tuple[tuple[str, str, float], ...] = (
    (GPU_RESOURCE, "milli-GPU", 1000.0),
    ("cpu", "milli-CPU", 1000.0),
    ("memory", "MiB", 1.0 / 2.0**20),
)

#: Largest quota amount, in engine units (milli-GPU, milli-CPU, MiB): 2**53, exact in a float64 (shares
#: divide it) and summed over up to 1024 quotas of a cohort tree without overflowing int64.
MAX_ENGINE_AMOUNT = 2**53

#: An unset ``borrowingLimit`` / ``lendingLimit``, or a resource a node has no quota for.
UNSET = -1

#: A resource group: the resources it covers (indices into :data:`RESOURCES`) and its flavors' slots, in the
#: order the flavor assigner tries them.
FlavorGroup = tuple[tuple[int, ...], tuple[int, ...]]

#: Rows of :attr:`KueueQuotas.preemption`: per ClusterQueue, its three policies (the index of the value in
#: ``tree.KUEUE_WITHIN_CQ`` / ``KUEUE_RECLAIM`` / ``KUEUE_BORROW``) and ``maxPriorityThreshold``.
PR_WITHIN, PR_RECLAIM, PR_BORROW, PR_THRESHOLD = KP_WITHIN, KP_RECLAIM, KP_BORROW, KP_THRESHOLD
PREEMPTION_ROWS = KP_ROWS

#: An unset ``borrowWithinCohort.maxPriorityThreshold``: every priority below the preemptor's qualifies.
NO_THRESHOLD = int(np.iinfo(np.int64).max)


@dataclass(frozen=True)
class KueueQuotas:
    """A Kueue quota tree in engine units.

    Attributes
    ----------
    names
        ClusterQueue names (node ``q`` < ``len(cluster_queues)`` is tenant ``q``), then cohort names.
        Quota arrays have one row per flavor and resource (Kueue's ``FlavorResource``): row ``3 f + r`` is
        resource ``r`` of :data:`RESOURCES` in flavor slot ``f`` of :attr:`flavors`; quotas of different
        flavors never mix (a cohort lends each flavor's quota for that flavor only).
    parent
        Each node's parent cohort (``-1``: a root). Cohorts come after their children.
    nominal
        ``[row, node]`` nominal quota (0 where a node names none); a cohort's own quota.
    borrowing_limit, lending_limit
        ``[row, node]``; :data:`UNSET` where the manifest leaves it unset.
    covered
        ``[row, cluster queue]``: 1 where one of the ClusterQueue's resource groups covers the row's
        resource and lists its flavor (``coveredResources``). A resource it does not cover
        does not limit its admissions (generated trees cover GPUs only; manifests whose jobs request a
        resource their ClusterQueue does not cover are refused, as Kueue would never admit them).
    strict_fifo
        Per ClusterQueue: ``queueingStrategy: StrictFIFO`` (the head blocks its queue).
    weight
        Per node: ``spec.fairSharing.weight`` (read by fair sharing only).
    queue_map
        The jobs' ``queue`` value -> ClusterQueue name (LocalQueue names resolved).
    source
        Where the tree came from, for logs and results.
    fair_sharing
        Kueue's fair sharing (``fairSharing.enable`` in its configuration): the tournament orders each
        round's heads instead of the classical iterator, and preemption follows its strategies
        (:mod:`gpureplay.queues.kueue_fair_preemption`).
    fair_strategies
        ``fairSharing.preemptionStrategies`` (read under fair sharing).
    preemption
        ``[row, cluster queue]`` ``spec.preemption`` policies (:mod:`gpureplay.queues.kueue_preemption`
        ``PR_*`` rows); None: ``Never`` everywhere.
    flavors
        The ResourceFlavor of each flavor slot (generated trees: one unnamed flavor).
    flavor_models
        Per flavor slot, the cluster's GPU models its ``nodeLabels`` select (None: every node).
    groups
        Per ClusterQueue its resource groups (:data:`FlavorGroup`); empty: one group of the covered
        resources with flavor slot 0.
    try_next_flavor
        Per ClusterQueue, ``flavorFungibility.whenCanBorrow: TryNextFlavor`` (else ``MayStopSearch``,
        Kueue's default ``Borrow`` in v1beta1); empty: the default everywhere.
    try_next_on_preempt
        Per ClusterQueue, ``flavorFungibility.whenCanPreempt: TryNextFlavor`` (Kueue's default; else
        ``MayStopSearch``, v1beta1 ``Preempt``); empty: the default everywhere.
    preemption_over_borrowing
        Per ClusterQueue, ``flavorFungibility.preference: PreemptionOverBorrowing`` (else Kueue's default
        ``BorrowingOverPreemption``); empty: the default everywhere.
    """

    names: tuple[str, ...]
    num_cluster_queues: int
    parent: Int64Array
    nominal: Int64Array
    borrowing_limit: Int64Array
    lending_limit: Int64Array
    covered: Int64Array
    strict_fifo: Int64Array
    weight: np.ndarray
    queue_map: Mapping[str, str]
    source: str
    fair_sharing: bool = False
    fair_strategies: FairSharingStrategies = FairSharingStrategies.both
    preemption: np.ndarray | None = None
    flavors: tuple[str, ...] = ("",)
    flavor_models: tuple[frozenset[str] | None, ...] = (None,)
    groups: tuple[tuple[FlavorGroup, ...], ...] = ()
    try_next_flavor: tuple[bool, ...] = ()
    try_next_on_preempt: tuple[bool, ...] = ()
    preemption_over_borrowing: tuple[bool, ...] = ()

    @property
    def rows(self) -> int:
        """Quota rows: one per flavor slot and resource."""
        return len(self.flavors) * len(RESOURCES)

    def flavor_groups(self, q: int) -> tuple[FlavorGroup, ...]:
        """ClusterQueue ``q``'s resource groups: covered resources and flavor slots in assignment order."""
        if self.groups:
            return self.groups[q]
        covered = tuple(r for r in range(len(RESOURCES)) if self.covered[r, q])
        return ((covered, (0,)),) if covered else ()

    def preempts_in_flavors(self, q: int) -> bool:
        """Whether ClusterQueue ``q`` may preempt (``withinClusterQueue`` or ``reclaimWithinCohort`` set) and
        lists several flavors in a resource group: its flavor assignment weighs preemption modes
        (:mod:`gpureplay.queues.kueue_fungibility`)."""
        if self.preemption is None or not (self.preemption[PR_WITHIN, q] or self.preemption[PR_RECLAIM, q]):
            return False
        return any(len(slots) > 1 for _, slots in self.flavor_groups(q))

    def covers(self, q: int, r: int) -> bool:
        """Whether ClusterQueue ``q`` covers resource ``r`` (in any flavor)."""
        return any(r in resources for resources, _ in self.flavor_groups(q))

    @property
    def cluster_queues(self) -> tuple[str, ...]:
        """The ClusterQueue names in tenant order."""
        return self.names[: self.num_cluster_queues]

    def subtree_quota(self) -> Int64Array:
        """``[resource, node]`` subtree quota: a node's nominal plus its children's lendable parts.

        Notes
        -----
        ``resource_node.go`` ``updateCohortResourceNode``: a child contributes ``subtree − localQuota``,
        ``localQuota = subtree − lendingLimit`` when the child sets a lendingLimit (else 0).
        """
        quota = self.nominal.copy()
        for n in range(len(self.names)):
            p = int(self.parent[n])
            if p >= 0:
                quota[:, p] += quota[:, n] - self.local_quota(quota, n)
        return quota

    def heights(self) -> Int64Array:
        """Per node, its height in the cohort tree: the longest path from it down to a node without children
        (0 for a ClusterQueue, 1 for a cohort of ClusterQueues alone).

        Notes
        -----
        kubernetes-sigs/kueue ``pkg/scheduler/preemption/classical/hierarchical_preemption.go``
        ``getNodeHeight`` (v0.12.0 to v0.19.2): a cohort with children is 1 high, or one more than its highest
        child cohort when that is more; a node is as high as its farthest descendant is far below it.
        """
        height = np.zeros(len(self.names), dtype=np.int64)
        for n in range(len(self.names)):
            p, steps = int(self.parent[n]), 1
            while p >= 0:
                height[p] = max(height[p], steps)
                p, steps = int(self.parent[p]), steps + 1
        return height

    def local_quota(self, subtree: Int64Array, n: int) -> Int64Array:
        """Per resource, the part of node ``n``'s subtree quota kept from its parent (``guaranteedQuota``)."""
        lend = self.lending_limit[:, n]
        return np.where(lend == UNSET, 0, np.maximum(0, subtree[:, n] - lend))


def request_of(pods: int, gpu_milli: int, cpu_milli: int, mem_mib: int) -> tuple[int, int, int]:
    """A workload's quota request: its pods' requests summed, per resource in :data:`RESOURCES` order."""
    return (pods * gpu_milli, pods * cpu_milli, pods * mem_mib)


def _usage_tree(quotas: KueueQuotas, usage: Sequence[Sequence[int]], subtree: Int64Array) -> list[list[int]]:
    # A cohort's usage is what its children use beyond their local quotas (resource_node.go).
    num_nodes = len(quotas.names)
    used = [[0] * num_nodes for _ in range(quotas.rows)]
    for r in range(quotas.rows):
        for q in range(quotas.num_cluster_queues):
            used[r][q] = int(usage[r][q])
    for n in range(num_nodes):
        p = int(quotas.parent[n])
        if p >= 0:
            local = quotas.local_quota(subtree, n)
            for r in range(quotas.rows):
                used[r][p] += max(0, used[r][n] - int(local[r]))
    return used


def available(quotas: KueueQuotas, usage: Sequence[Sequence[int]], node: int, r: int) -> int:
    """How much of quota row ``r`` (a flavor's resource) ClusterQueue (or cohort) ``node`` may still take.

    Parameters
    ----------
    usage
        ``[row][cluster queue]`` admitted usage.

    Notes
    -----
    kubernetes-sigs/kueue ``resource_node.go`` ``available``: at a root ``subtreeQuota − usage``; below it
    ``max(0, localQuota − usage) + available(parent)``, where a set ``borrowingLimit`` caps the parent's part
    at ``(subtreeQuota − localQuota) − max(0, usage − localQuota) + borrowingLimit``.
    """
    subtree = quotas.subtree_quota()
    used = _usage_tree(quotas, usage, subtree)

    def of(n: int) -> int:
        quota = int(subtree[r, n])
        p = int(quotas.parent[n])
        if p < 0:
            return quota - used[r][n]
        local = int(quotas.local_quota(subtree, n)[r])
        parent_part = of(p)
        limit = int(quotas.borrowing_limit[r, n])
        if limit != UNSET:
            parent_part = min(parent_part, (quota - local) - max(0, used[r][n] - local) + limit)
        return max(0, local - used[r][n]) + parent_part

    return of(node)


def fits(quotas: KueueQuotas, usage: Sequence[Sequence[int]], q: int, request: Sequence[int]) -> bool:
    """Whether ClusterQueue ``q`` can admit ``request`` (per quota row: :func:`row_request`):
    ``request <= available`` on each covered row."""
    return all(
        request[r] <= available(quotas, usage, q, r)
        for r in range(quotas.rows)
        if quotas.covered[r, q] and request[r] > 0
    )


def borrow_level(quotas: KueueQuotas, usage: Sequence[Sequence[int]], q: int, request: Sequence[int]) -> int:
    """The borrowing level of admitting ``request`` (per quota row: :func:`row_request`) in ClusterQueue
    ``q``: the highest over its covered rows of :func:`borrow_height` (0: within its nominal quota).

    Notes
    -----
    kubernetes-sigs/kueue ``flavorassigner.go`` ``Assignment.Borrowing`` (an integer since v0.12.0): the
    largest borrowing level of the assigned flavors' resources. The classical iterator orders a cycle's
    heads by it before priority (``scheduler.go``).
    """
    return max(
        (
            borrow_height(quotas, usage, q, r, request[r])
            for r in range(quotas.rows)
            if quotas.covered[r, q] and request[r] > 0
        ),
        default=0,
    )


def row_request(quotas: KueueQuotas, request: Sequence[int], flavors: Sequence[int]) -> tuple[int, ...]:
    """A request per resource (:func:`request_of`) as a request per quota row, resource ``r`` charged to
    flavor slot ``flavors[r]``."""
    out = [0] * quotas.rows
    for r, amount in enumerate(request):
        out[flavors[r] * len(RESOURCES) + r] += int(amount)
    return tuple(out)


def borrow_height(quotas: KueueQuotas, usage: Sequence[Sequence[int]], q: int, r: int, amount: int) -> int:
    """The borrowing level of ``amount`` more of quota row ``r`` in ClusterQueue ``q``: the height
    (:meth:`KueueQuotas.heights`) of the lowest node on ``q``'s path whose quota holds it (0 within ``q``'s
    own nominal quota or without a cohort; the root's height when none holds it).

    Notes
    -----
    kubernetes-sigs/kueue ``hierarchical_preemption.go`` ``FindHeightOfLowestSubtreeThatFits`` (v0.12.0 to
    v0.19.2), the flavor assigner's borrowing level: each node up the path holds what its quota has beyond
    its usage, less what the nodes below still keep locally. The level is that node's height in the tree,
    not its distance above ``q``: a ClusterQueue directly in a root whose other child is a cohort borrows
    at level 2 from it. Along one path heights grow with the distance, so comparing one ClusterQueue's
    levels (its flavors) is the same either way; comparing different ClusterQueues' (the classical
    iterator) is not.
    """
    subtree = quotas.subtree_quota()
    used = _usage_tree(quotas, usage, subtree)
    if used[r][q] + amount <= subtree[r, q] or quotas.parent[q] < 0:
        return 0
    heights = quotas.heights()
    remaining = amount - max(0, int(quotas.local_quota(subtree, q)[r]) - used[r][q])
    n = int(quotas.parent[q])
    while True:
        if used[r][n] + remaining <= subtree[r, n] or quotas.parent[n] < 0:
            return int(heights[n])
        remaining -= max(0, int(quotas.local_quota(subtree, n)[r]) - used[r][n])
        n = int(quotas.parent[n])


def assign_flavors(
    quotas: KueueQuotas, usage: Sequence[Sequence[int]], q: int, request: Sequence[int]
) -> tuple[int, ...] | None:
    """The flavor slot Kueue's flavor assigner gives each resource of ``request`` in ClusterQueue ``q``
    (resources it does not request or cover: slot 0), or None when some resource group has no flavor
    that fits (``NoFit``, or fits only by preemption).

    Notes
    -----
    kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner/flavorassigner.go`` ``findFlavorForPodSets``
    (docs/systems.md, "Kueue"): each resource group's flavors are tried in order; a flavor's mode is the worst
    over
    the group's requested resources, ``Fit`` at a borrowing level (:func:`borrow_height`) when the request
    is at most ``available``. The search stops at the first flavor that fits without borrowing, or that
    fits at all under ``whenCanBorrow: MayStopSearch`` (``Borrow``, the default); under ``TryNextFlavor``
    it goes on and keeps the flavor of the lowest borrowing level (the first of equals). A preempting
    ClusterQueue with several flavors in a group weighs preemption modes too
    (:func:`gpureplay.queues.kueue_fungibility.assign_with_modes`).
    """
    chosen = [0] * len(RESOURCES)
    try_next = bool(quotas.try_next_flavor[q]) if quotas.try_next_flavor else False
    for resources, slots in quotas.flavor_groups(q):
        asked = [r for r in resources if request[r] > 0]
        if not asked:
            continue
        best, best_height = -1, 0
        for f in slots:
            height = 0
            for r in asked:
                row = f * len(RESOURCES) + r
                if request[r] > available(quotas, usage, q, row):
                    height = -1
                    break
                height = max(height, borrow_height(quotas, usage, q, row, request[r]))
            if height < 0:
                continue
            if height == 0 or not try_next:
                best = f
                break
            if best < 0 or height < best_height:
                best, best_height = f, height
        if best < 0:
            return None
        for r in asked:
            chosen[r] = best
    return tuple(chosen)


def first_flavors(quotas: KueueQuotas, q: int, request: Sequence[int]) -> tuple[int, ...]:
    """Each resource group's first flavor for the resources ``request`` asks for (slot 0 for the others): the
    assignment of a workload that fits no flavor (a ClusterQueue of one flavor per group preempts there)."""
    chosen = [0] * len(RESOURCES)
    for resources, slots in quotas.flavor_groups(q):
        for r in resources:
            if request[r] > 0 and slots:
                chosen[r] = slots[0]
    return tuple(chosen)


def _arrays(num_nodes: int, num_flavors: int = 1) -> tuple[Int64Array, Int64Array, Int64Array]:
    shape = (len(RESOURCES) * num_flavors, num_nodes)
    return (
        np.zeros(shape, dtype=np.int64),
        np.full(shape, UNSET, dtype=np.int64),
        np.full(shape, UNSET, dtype=np.int64),
    )


def generated_quotas(gpu_quota: Mapping[str, float], *, cohort: bool, source: str) -> KueueQuotas:
    """A ClusterQueue per queue with ``nominalQuota`` GPUs, all in one cohort ``all`` when ``cohort``.

    Limits stay unset (Kueue's defaults: borrow without bound, lend everything); queues are
    ``BestEffortFIFO`` (Kueue's default); CPU and memory are not covered, so only GPUs limit admission.
    """
    queues = sorted(gpu_quota)
    names = (*queues, "all") if cohort else tuple(queues)
    nominal, borrow, lend = _arrays(len(names))
    for q, name in enumerate(queues):
        nominal[0, q] = round(gpu_quota[name] * 1000)
    parent = np.full(len(names), -1, dtype=np.int64)
    if cohort:
        parent[: len(queues)] = len(queues)
    return KueueQuotas(
        names=names,
        num_cluster_queues=len(queues),
        parent=parent,
        nominal=nominal,
        borrowing_limit=borrow,
        lending_limit=lend,
        covered=np.array([[1] * len(queues), [0] * len(queues), [0] * len(queues)], dtype=np.int64),
        strict_fifo=np.zeros(len(queues), dtype=np.int64),
        weight=np.ones(len(names)),
        queue_map={q: q for q in queues},
        source=source,
    )


def _engine_amount(value: float, r: int) -> int:
    return round(value * RESOURCES[r][2])


def _resource_index(name: str) -> int | None:
    for r, (resource, _, _) in enumerate(RESOURCES):
        if resource == name:
            return r
    return None


def _model_key(name: str) -> str:
    return label_model(name) or name.strip().casefold()


def flavor_nodes(flavor: ResourceFlavor | None, gpu_models: Sequence[str]) -> frozenset[str] | None:
    """The cluster's GPU models a flavor's ``nodeLabels`` select (None: it names no GPU model, every node).

    Label values are matched to the node list's models through the GPU catalog
    (:func:`gpureplay.cluster.catalog.label_model`), so ``NVIDIA-A100-SXM4-80GB`` selects the nodes a
    trace calls ``A100-80GB``.
    """
    if flavor is None or flavor.gpu_model is None:
        return None
    key = _model_key(flavor.gpu_model)
    return frozenset(m for m in gpu_models if _model_key(m) == key)


def _flavor_problems(
    node: ClusterQueue | Cohort, gpu_models: Sequence[str], tree: QueueTree
) -> list[Problem]:
    problems: list[Problem] = []
    flavors = {f.name: f for f in tree.flavors}
    for g, group in enumerate(node.resource_groups):
        for f, flavor in enumerate(group.flavors):
            selected = flavor_nodes(flavors.get(flavor.name), gpu_models)
            if selected is not None and not selected:
                problems.append(
                    node.origin.problem(
                        f"flavor {flavor.name!r} selects {flavors[flavor.name].gpu_model} nodes, and the "
                        f"cluster has none (its GPU models: {', '.join(gpu_models) or 'none'})",
                        f"spec.resourceGroups[{g}].flavors[{f}].name",
                    )
                )
            for k, res in enumerate(flavor.resources):
                path = f"spec.resourceGroups[{g}].flavors[{f}].resources[{k}]"
                r = _resource_index(res.name)
                if r is None:
                    problems.append(
                        node.origin.problem(
                            f"quota for {res.name!r}: the replay's jobs request only "
                            f"{', '.join(name for name, _, _ in RESOURCES)}",
                            f"{path}.name",
                        )
                    )
                    continue
                amounts = (
                    ("nominalQuota", res.nominal_quota),
                    ("borrowingLimit", res.borrowing_limit),
                    ("lendingLimit", res.lending_limit),
                )
                for field, amount in amounts:
                    if amount is not None and abs(amount * RESOURCES[r][2]) > MAX_ENGINE_AMOUNT:
                        problems.append(
                            node.origin.problem(
                                f"{amount:g} is more than the replay counts: at most "
                                f"{MAX_ENGINE_AMOUNT / RESOURCES[r][2]:.4g} {res.name} (it counts "
                                f"{RESOURCES[r][1]} in 64-bit integers, summed over the cohort tree)",
                                f"{path}.{field}",
                            )
                        )
    return problems


def _preemption_rows(cqs: Sequence[ClusterQueue]) -> Int64Array:
    """``[PR_* row, cluster queue]`` of the ClusterQueues' ``spec.preemption``."""
    table = np.zeros((PREEMPTION_ROWS, len(cqs)), dtype=np.int64)
    for q, cq in enumerate(cqs):
        p = cq.preemption
        table[PR_WITHIN, q] = KUEUE_WITHIN_CQ.index(p.within_cluster_queue)
        table[PR_RECLAIM, q] = KUEUE_RECLAIM.index(p.reclaim_within_cohort)
        table[PR_BORROW, q] = KUEUE_BORROW.index(p.borrow_within_cohort)
        table[PR_THRESHOLD, q] = (
            NO_THRESHOLD if p.max_priority_threshold is None else p.max_priority_threshold
        )
    return table


def _fill(
    node: ClusterQueue | Cohort,
    n: int,
    arrays: tuple[Int64Array, Int64Array, Int64Array],
    slots: Mapping[str, int],
) -> None:
    nominal, borrow, lend = arrays
    for group in node.resource_groups:
        for flavor in group.flavors:
            base = slots[flavor.name] * len(RESOURCES)
            for res in flavor.resources:
                r = _resource_index(res.name)
                if r is None:
                    continue
                nominal[base + r, n] = _engine_amount(res.nominal_quota, r)
                if res.borrowing_limit is not None:
                    borrow[base + r, n] = _engine_amount(res.borrowing_limit, r)
                if res.lending_limit is not None:
                    lend[base + r, n] = _engine_amount(res.lending_limit, r)


def _flavor_slots(cqs: Sequence[ClusterQueue], cohorts: Sequence[Cohort]) -> dict[str, int]:
    # One slot per flavor named by a quota, in the order the ClusterQueues (by name), then cohorts, name them.
    slots: dict[str, int] = {}
    nodes: list[ClusterQueue | Cohort] = [*cqs, *cohorts]
    for node in nodes:
        for group in node.resource_groups:
            for flavor in group.flavors:
                slots.setdefault(flavor.name, len(slots))
    return slots or {"": 0}


def _queue_map(tree: QueueTree, jobs: pl.DataFrame, source: str) -> dict[str, str]:
    by_name: dict[str, str] = {cq.name: cq.name for cq in tree.cluster_queues}
    for lq in tree.local_queues:
        by_name[f"{lq.namespace}/{lq.name}"] = lq.cluster_queue
        by_name.setdefault(lq.name, lq.cluster_queue)
    queues = sorted(set(jobs["queue"].to_list()))
    unknown = [q for q in queues if q not in by_name]
    if unknown:
        numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
        first = numbered.filter(pl.col("queue") == unknown[0]).row(0, named=True)
        raise InputError.single(
            f"queue {unknown[0]!r} names no ClusterQueue or LocalQueue of {source} ({len(unknown)} such "
            f"queues: {', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''}); known: "
            f"{', '.join(sorted(by_name)[:8])}",
            "jobs",
            row=int(first["source_row"]),
            column="queue",
        )
    return {q: by_name[q] for q in queues}


def _check_covered(
    jobs: pl.DataFrame,
    queue_map: Mapping[str, str],
    cqs: Sequence[ClusterQueue],
    covered: Int64Array,
    source: str,
) -> None:
    covered = covered.reshape(-1, len(RESOURCES), covered.shape[1]).max(axis=0)
    # Kueue's flavor assigner finds no flavor for a resource the ClusterQueue does not cover: such a
    # workload is never admitted, which a replay reports as an input error instead.
    index = {cq.name: q for q, cq in enumerate(cqs)}
    numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
    for r, (resource, _, _) in enumerate(RESOURCES):
        column = ("gpu_milli", "cpu_milli", "mem_mib")[r]
        uncovered = [q for q, cq in queue_map.items() if not covered[r, index[cq]]]
        if not uncovered:
            continue
        bad = numbered.filter(pl.col("queue").is_in(uncovered) & (pl.col(column) > 0))
        if bad.height:
            first = bad.row(0, named=True)
            cq = queue_map[first["queue"]]
            raise InputError.single(
                f"ClusterQueue {cq!r} of {source} does not cover {resource!r}, which {bad.height} "
                f"of its jobs request: Kueue would never admit them (add it to "
                "spec.resourceGroups[].coveredResources)",
                "jobs",
                row=int(first["source_row"]),
                column=column,
            )


def _check_tolerated(
    jobs: pl.DataFrame,
    queue_map: Mapping[str, str],
    cqs: Sequence[ClusterQueue],
    flavors: Mapping[str, ResourceFlavor],
    source: str,
) -> None:
    # Kueue never assigns a flavor whose NoSchedule / NoExecute taints the pods do not tolerate; a group left
    # with none would keep its ClusterQueue's jobs pending for ever, which a replay reports instead.
    numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
    problems: list[Problem] = []
    for cq in cqs:
        queues = [name for name, target in queue_map.items() if target == cq.name]
        for g, group in enumerate(cq.resource_groups):
            resources = [r for r in map(_resource_index, group.covered_resources) if r is not None]
            barred = [flavors[f.name] for f in group.flavors if f.name in flavors]
            if not queues or not resources or not barred or not all(f.untolerated() for f in barred):
                continue
            columns = [("gpu_milli", "cpu_milli", "mem_mib")[r] for r in resources]
            asking = numbered.filter(pl.col("queue").is_in(queues) & pl.any_horizontal(pl.col(columns) > 0))
            if not asking.height:
                continue
            taints = sorted({f"{t.key}={t.value}:{t.effect}" for f in barred for t in f.untolerated()})
            asked = ", ".join(RESOURCES[r][0] for r in resources)
            problems.append(
                cq.origin.problem(
                    f"every flavor of this resource group taints its nodes ({', '.join(taints)}) and the "
                    f"trace's jobs carry no tolerations: Kueue would never admit the {asking.height} jobs of "
                    f"{cq.name!r} that ask for {asked} (add a matching toleration to the ResourceFlavor's "
                    "spec.tolerations)",
                    f"spec.resourceGroups[{g}].flavors",
                )
            )
    if problems:
        raise InputError(problems)


def manifest_quotas(
    manifests: ManifestSet, jobs: pl.DataFrame, gpu_models: Sequence[str], source: str
) -> KueueQuotas:
    """The :class:`KueueQuotas` of Kueue manifests, for the jobs whose ``queue`` names their queues.

    A job's ``queue`` names a ClusterQueue, or a LocalQueue as ``namespace/name`` or by its name alone.
    Every ClusterQueue of the manifests is a tenant, in name order, whether jobs use it or not (it lends).

    Raises
    ------
    InputError
        When the manifests are not Kueue's, use what is not modelled (a flavor that selects a GPU model the
        cluster lacks, more flavors than the engine packs, a resource group left with no tolerated flavor),
        name a resource the jobs cannot request, or a job's queue names no queue of them (naming the file
        and document, or the job row).
    """
    tree = manifests.tree
    if tree.model != "kueue":
        found = "no queue objects" if tree.model is None else f"{tree.model} queues"
        raise InputError.single(
            f"scheduler.queues: kueue needs Kueue manifests; {source} holds {found}", source
        )
    problems: list[Problem] = []
    for cq in tree.cluster_queues:
        problems += _flavor_problems(cq, gpu_models, tree)
    for cohort in tree.cohorts:
        problems += _flavor_problems(cohort, gpu_models, tree)
    if problems:
        raise InputError(problems)
    queue_map = _queue_map(tree, jobs, source)
    cqs = sorted(tree.cluster_queues, key=lambda c: c.name)
    cohort_names = tree.cohort_names()
    depth: dict[str, int] = {}
    for name in cohort_names:
        d, at = 0, tree.cohort_parent(name)
        while at is not None:
            d, at = d + 1, tree.cohort_parent(at)
        depth[name] = d
    # Children before parents: deeper cohorts first.
    cohorts_sorted = sorted(cohort_names, key=lambda c: (-depth[c], c))
    names = (*(c.name for c in cqs), *cohorts_sorted)
    index = {name: i for i, name in enumerate(names)}
    explicit = {c.name: c for c in tree.cohorts}
    slots = _flavor_slots(cqs, [explicit[name] for name in cohorts_sorted if name in explicit])
    if len(slots) > FLAVOR_NONE:
        # The engine packs a job's flavor per resource in FLAVOR_BITS bits, the top value meaning none.
        raise InputError(
            [
                Problem(
                    f"{len(slots)} ResourceFlavors hold quota in spec.resourceGroups; the replay models at "
                    f"most {FLAVOR_NONE}",
                    source,
                )
            ]
        )
    arrays = _arrays(len(names), len(slots))
    parent = np.full(len(names), -1, dtype=np.int64)
    weight = np.ones(len(names))
    for q, cq in enumerate(cqs):
        _fill(cq, q, arrays, slots)
        parent[q] = index[cq.cohort] if cq.cohort is not None else -1
        weight[q] = cq.fair_sharing_weight
    for name in cohorts_sorted:
        n = index[name]
        up = tree.cohort_parent(name)
        parent[n] = index[up] if up is not None else -1
        if name in explicit:
            _fill(explicit[name], n, arrays, slots)
            weight[n] = explicit[name].fair_sharing_weight
    covered = np.zeros((len(RESOURCES) * len(slots), len(cqs)), dtype=np.int64)
    by_name = {f.name: f for f in tree.flavors}
    # A flavor whose nodeTaints the jobs do not tolerate is never assigned; its quota still counts and lends.
    barred = {name for name, flavor in by_name.items() if flavor.untolerated()}
    groups: list[tuple[FlavorGroup, ...]] = []
    for q, cq in enumerate(cqs):
        in_groups: list[FlavorGroup] = []
        for group in cq.resource_groups:
            resources = tuple(
                r for r in (_resource_index(name) for name in group.covered_resources) if r is not None
            )
            for f in group.flavors:
                for r in resources:
                    covered[slots[f.name] * len(RESOURCES) + r, q] = 1
            if resources and group.flavors:
                in_groups.append(
                    (resources, tuple(slots[f.name] for f in group.flavors if f.name not in barred))
                )
        groups.append(tuple(in_groups))
    _check_covered(jobs, queue_map, cqs, covered, source)
    _check_tolerated(jobs, queue_map, cqs, by_name, source)
    return KueueQuotas(
        names=names,
        num_cluster_queues=len(cqs),
        parent=parent,
        nominal=arrays[0],
        borrowing_limit=arrays[1],
        lending_limit=arrays[2],
        covered=covered,
        strict_fifo=np.array(
            [1 if cq.queueing_strategy == "StrictFIFO" else 0 for cq in cqs], dtype=np.int64
        ),
        weight=weight,
        queue_map=queue_map,
        source=source,
        preemption=_preemption_rows(cqs),
        flavors=tuple(slots),
        flavor_models=tuple(flavor_nodes(by_name.get(name), gpu_models) for name in slots),
        groups=tuple(groups),
        try_next_flavor=tuple(cq.when_can_borrow == "TryNextFlavor" for cq in cqs),
        try_next_on_preempt=tuple(cq.when_can_preempt == "TryNextFlavor" for cq in cqs),
        preemption_over_borrowing=tuple(cq.preference == "PreemptionOverBorrowing" for cq in cqs),
    )


def flavor_tables(
    quotas: KueueQuotas, models: Sequence[str]
) -> tuple[Int64Array, Int64Array, np.ndarray, Int64Array]:
    """The engine's flavor arrays (``KueueState.flv_slots``, ``flv_group``, ``flv_mask``, ``flv_policy``).

    ``models``: the cluster's GPU models by code (bit ``i`` of a mask is model ``i``).
    """
    num_cq = quotas.num_cluster_queues
    groups = [quotas.flavor_groups(q) for q in range(num_cq)]
    longest = max((len(slots) for found in groups for _, slots in found), default=1)
    slots = np.full((max(num_cq, 1), len(RESOURCES), longest), -1, dtype=np.int64)
    group_of = np.full((len(RESOURCES), max(num_cq, 1)), -1, dtype=np.int64)
    for q, found in enumerate(groups):
        for g, (resources, flavor_slots) in enumerate(found):
            slots[q, g, : len(flavor_slots)] = flavor_slots
            for r in resources:
                group_of[r, q] = g
    masks = np.full(len(quotas.flavors), ALL_MODELS, dtype=np.uint64)
    for f, selected in enumerate(quotas.flavor_models):
        if selected is not None:
            masks[f] = np.uint64(sum(1 << i for i, m in enumerate(models) if m in selected))
    policy = np.zeros(max(num_cq, 1), dtype=np.int64)
    for q in range(num_cq):
        if quotas.try_next_flavor and quotas.try_next_flavor[q]:
            policy[q] |= FP_BORROW_NEXT
        if not quotas.try_next_on_preempt or quotas.try_next_on_preempt[q]:
            policy[q] |= FP_PREEMPT_NEXT
        if quotas.preemption_over_borrowing and quotas.preemption_over_borrowing[q]:
            policy[q] |= FP_PREEMPTION_OVER
        if quotas.preempts_in_flavors(q):
            policy[q] |= FP_MODES
    return slots, group_of, masks, policy


def potential_available(quotas: KueueQuotas, subtree: Int64Array, node: int, r: int) -> int:
    """Most of resource ``r`` node ``node`` could take with no usage anywhere (``potentialAvailable``).

    Notes
    -----
    ``resource_node.go``: at a root its subtree quota; below, ``localQuota + potentialAvailable(parent)``,
    capped at ``subtreeQuota + borrowingLimit`` when a borrowingLimit is set.
    """
    p = int(quotas.parent[node])
    if p < 0:
        return int(subtree[r, node])
    value = int(quotas.local_quota(subtree, node)[r]) + potential_available(quotas, subtree, p, r)
    limit = int(quotas.borrowing_limit[r, node])
    if limit != UNSET:
        value = min(value, int(subtree[r, node]) + limit)
    return value


def model_columns(quotas: KueueQuotas, usage: np.ndarray) -> dict[str, np.ndarray]:
    """Per ClusterQueue and sample, the quota columns of ``queues.parquet``.

    Parameters
    ----------
    usage
        ``[row, cluster queue, sample]`` usage in engine units (a row per flavor and resource).

    Returns
    -------
    dict
        ``nominal_gpu``, ``borrowed_gpu``, ``lent_gpu``, ``share``, each ``[cluster queue, sample]``.

    Notes
    -----
    Each GPU column sums over the flavors. ``borrowed_gpu``: GPUs used above the ClusterQueue's nominal
    quota, flavor by flavor. ``lent_gpu``: the GPUs its cohort
    siblings borrow, attributed to the lenders in proportion to each one's unused lendable quota (its unused
    nominal, at most its ``lendingLimit``; a cohort's own quota is a lender too); Kueue itself does not
    attribute borrowing to lenders, so this is the replay's convention. ``share``: Kueue's weighted dominant
    resource share (``fair_sharing.go`` ``dominantResourceShare`` divided by ``fairSharing.weight``; Kueue
    reports its ceiling as ``status.fairSharing.weightedShare``): ``max_r B_r × 1000 / L_r`` over covered
    resources, ``B_r`` the usage above the subtree quota and ``L_r`` the parent's ``potentialAvailable``;
    0 without a cohort or while not borrowing, +inf for weight 0 while borrowing.
    """
    num_cq = quotas.num_cluster_queues
    subtree = quotas.subtree_quota()
    samples = usage.shape[2]
    share = np.zeros((num_cq, samples))
    width = len(RESOURCES)
    lend = lendable(quotas)
    for q in range(num_cq):
        if int(quotas.parent[q]) < 0:
            continue
        for r in range(width):
            # fair_sharing.go: B_r sums over the flavors of resource r, L_r over the tree's.
            rows = [row for row in range(r, quotas.rows, width) if quotas.covered[row, q]]
            if not rows or lend[r, q] <= 0:
                continue
            borrowed = sum(np.maximum(0, usage[row, q] - subtree[row, q]) for row in rows)
            share[q] = np.maximum(share[q], borrowed * 1000.0 / float(lend[r, q]))
        weight = float(quotas.weight[q])
        borrowing = (usage[:, q] > subtree[:, q, None]).any(axis=0) & (quotas.covered[:, q, None] != 0).any(
            axis=0
        )
        share[q] = np.where(borrowing, np.inf, 0.0) if weight == 0 else share[q] / weight
    gpu_rows = list(range(0, quotas.rows, width))
    gpu_f = usage[gpu_rows].astype(np.float64)  # [flavor, cluster queue, sample]
    nominal_f = quotas.nominal[gpu_rows, :num_cq].astype(np.float64)[:, :, None]
    lend_f = quotas.lending_limit[gpu_rows, :num_cq].astype(np.float64)[:, :, None]
    over_f = np.maximum(0.0, gpu_f - nominal_f)
    unused_f = np.maximum(0.0, np.minimum(nominal_f - gpu_f, np.where(lend_f == UNSET, nominal_f, lend_f)))
    lent_f = np.zeros_like(gpu_f)
    for p in sorted({int(x) for x in quotas.parent[:num_cq] if x >= 0}):
        members = [q for q in range(num_cq) if int(quotas.parent[q]) == p]
        for f, row in enumerate(gpu_rows):
            borrowed = over_f[f, members].sum(axis=0)
            pool = unused_f[f, members].sum(axis=0) + float(quotas.nominal[row, p])
            with np.errstate(divide="ignore", invalid="ignore"):
                part = np.where(pool > 0, np.minimum(borrowed, pool) / pool, 0.0)
            for q in members:
                lent_f[f, q] = unused_f[f, q] * part
    nominal = nominal_f.sum(axis=0)
    return {
        "nominal_gpu": np.broadcast_to(nominal / 1000.0, gpu_f.shape[1:]).copy(),
        "borrowed_gpu": over_f.sum(axis=0) / 1000.0,
        "lent_gpu": lent_f.sum(axis=0) / 1000.0,
        "share": share,
    }


def node_usage(quotas: KueueQuotas, usage: Sequence[Sequence[int]]) -> list[list[int]]:
    """``[resource][node]`` usage of every node: the ClusterQueues' own, the cohorts' from their children."""
    return _usage_tree(quotas, usage, quotas.subtree_quota())


def present(quotas: KueueQuotas) -> Int64Array:
    """``[row, node]``: 1 where the node's subtree quota names the row's flavor and resource (``SubtreeQuota``
    keys).

    A ClusterQueue names its covered resources; a cohort, what its children name and its own quota.
    """
    num_cq = quotas.num_cluster_queues
    names = np.zeros((quotas.rows, len(quotas.names)), dtype=np.int64)
    names[:, :num_cq] = quotas.covered
    names[:, num_cq:] = quotas.nominal[:, num_cq:] > 0
    for n in range(len(quotas.names)):
        p = int(quotas.parent[n])
        if p >= 0:
            names[:, p] |= names[:, n]
    return names


def lendable(quotas: KueueQuotas) -> Int64Array:
    """``[resource, node]``: what the node's parent could lend of the resource at no usage, over all flavors
    (``calculateLendable``: the parent's ``potentialAvailable`` summed over the flavor-resources of the
    tree's root, which holds every one named in the tree); 0 at a root."""
    subtree = quotas.subtree_quota()
    names = present(quotas)
    width = len(RESOURCES)
    out = np.zeros((width, len(quotas.names)), dtype=np.int64)
    for n in range(len(quotas.names)):
        p = int(quotas.parent[n])
        if p < 0:
            continue
        root = p
        while int(quotas.parent[root]) >= 0:
            root = int(quotas.parent[root])
        for row in range(quotas.rows):
            if names[row, root]:
                out[row % width, n] += potential_available(quotas, subtree, p, row)
    return out


def share(quotas: KueueQuotas, used: Sequence[Sequence[int]], node: int) -> tuple[float, float]:
    """Node ``node``'s weighted dominant resource share at node usage ``used``: ``(weighted, unweighted)``.

    Notes
    -----
    kubernetes-sigs/kueue ``pkg/cache/scheduler/fair_sharing.go`` ``dominantResourceShare`` and
    ``PreciseWeightedShare``: 0 at a root or while not borrowing; ``+inf`` for weight 0 while borrowing
    (such nodes then compare by their unweighted ratio, ``CompareDRS``).
    """
    if int(quotas.parent[node]) < 0:
        return (0.0, 0.0)
    subtree = quotas.subtree_quota()
    names = present(quotas)
    lend = lendable(quotas)
    borrowing = False
    ratio = 0.0
    width = len(RESOURCES)
    for r in range(width):
        # B_r sums the borrowing over the flavors of resource r; L_r (lendable) is summed already.
        borrowed_r = 0
        for row in range(r, quotas.rows, width):
            borrowed = used[row][node] - int(subtree[row, node])
            if names[row, node] and borrowed > 0:
                borrowing = True
                borrowed_r += borrowed
        if borrowed_r > 0 and lend[r, node] > 0:
            ratio = max(ratio, borrowed_r * 1000.0 / float(lend[r, node]))
    weight = float(quotas.weight[node])
    if not borrowing:
        return (0.0, 0.0)
    if weight == 0:
        return (math.inf, ratio)
    return (0.0 if ratio == 0 else ratio / weight, ratio)
