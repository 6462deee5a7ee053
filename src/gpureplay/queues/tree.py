"""The queue tree of a multi-tenant GPU cluster: Kueue, Volcano or KAI objects, validated.

One :class:`QueueTree` holds the objects of one model: Kueue ``ResourceFlavor`` /
``ClusterQueue`` / ``Cohort`` / ``LocalQueue``, Volcano ``Queue``, or KAI
``Queue``, plus ``PriorityClass`` objects, which every model reads. Each object
keeps the :class:`Origin` (file and document) it was read from, so that
:func:`validate_tree` names the file, the document and the field of each problem.

The fields and their defaults follow the real APIs (docs/systems.md, "Kueue"):

- Kueue ``kueue.x-k8s.io/v1beta1`` and ``v1beta2`` (``apis/kueue/v1beta1/clusterqueue_types.go``,
  ``cohort_types.go``, ``localqueue_types.go``, ``resourceflavor_types.go``, and the same files under
  ``apis/kueue/v1beta2``); one object of either version reads into the same dataclass.
- Volcano ``scheduling.volcano.sh/v1beta1`` ``Queue``
  (``staging/src/volcano.sh/apis/pkg/apis/scheduling/v1beta1/types.go``).
- KAI ``scheduling.run.ai/v2`` ``Queue`` (``pkg/apis/scheduling/v2/queue_types.go``,
  ``docs/queues/README.md``).
- ``scheduling.k8s.io/v1`` ``PriorityClass``.

Amounts are plain floats in the model's own units: Kueue and Volcano quantities are
parsed from Kubernetes quantity strings (GPUs and CPUs in units, memory in bytes);
KAI amounts are kept as written (GPU devices, CPU millicores, memory in MB).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from gpureplay.errors import InputError, Problem

__all__ = [
    "GPU_RESOURCE",
    "KAI_DEFAULT_PRIORITY",
    "KAI_UNLIMITED",
    "ClusterQueue",
    "Cohort",
    "FlavorQuotas",
    "KaiQueue",
    "KaiResource",
    "KueuePreemption",
    "LocalQueue",
    "Model",
    "Origin",
    "PriorityClass",
    "QueueTree",
    "ResourceFlavor",
    "ResourceGroup",
    "ResourceQuota",
    "VolcanoQueue",
    "describe_tree",
    "validate_tree",
]

#: The extended resource name of a whole GPU (NVIDIA device plugin).
GPU_RESOURCE = "nvidia.com/gpu"

#: KAI's value for "no bound" in ``quota`` and ``limit`` (``commonconstants.UnlimitedResourceQuantity``).
KAI_UNLIMITED = -1.0

#: A KAI queue's ``priority`` when its manifest leaves it out (``queue_types.go`` default).
KAI_DEFAULT_PRIORITY = 100

Model = Literal["kueue", "volcano", "kai"]

#: Node labels that name the GPU model of a ResourceFlavor's nodes (NVIDIA GPU feature discovery first).
GPU_MODEL_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "gpu-model", "gpu.model")

#: Volcano ``spec.weight`` range (``v1beta1/types.go``: +kubebuilder:validation:Minimum=1, Maximum=65535).
VOLCANO_WEIGHT_RANGE = (1, 65535)

#: Largest ``value`` of a user PriorityClass (``pkg/apis/scheduling/types.go``, HighestUserDefinablePriority).
HIGHEST_USER_PRIORITY = 1_000_000_000


@dataclass(frozen=True)
class Origin:
    """Where an object was read: a file and the 1-based index of its YAML document."""

    source: str = "<memory>"
    document: int = 1

    def where(self) -> str:
        """``file, document N``: the ``source`` of a :class:`~gpureplay.errors.Problem`."""
        return f"{self.source}, document {self.document}"

    def problem(self, message: str, key: str | None = None) -> Problem:
        """A problem at ``key`` (a dotted field path such as ``spec.cohort``) of this document."""
        return Problem(message, self.where(), key=key)


# --------------------------------------------------------------------------- Kueue


#: Taint effects (``corev1.TaintEffect``); Kueue's flavor check counts the first two only.
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
#: Toleration operators (``corev1.TolerationOperator``; empty means Equal).
TOLERATION_OPERATORS = ("Equal", "Exists")


@dataclass(frozen=True)
class Taint:
    """A ``spec.nodeTaints[]`` entry of a ResourceFlavor."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    """A ``spec.tolerations[]`` entry of a ResourceFlavor (empty key with Exists: every taint; empty effect:
    every effect)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """``corev1.Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return bool(self.key) and self.value == taint.value


@dataclass(frozen=True)
class ResourceFlavor:
    """Kueue ``ResourceFlavor``: a kind of node, here the GPU model its nodes carry.

    ``gpu_model`` is read from the first of :data:`GPU_MODEL_LABELS` found in
    ``spec.nodeLabels``; ``None`` means a flavor without a GPU-model label (CPU nodes,
    or any GPU). ``node_taints`` / ``tolerations``: ``spec.nodeTaints`` and the tolerations Kueue adds
    to the pods it admits with the flavor.
    """

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    gpu_model: str | None = None
    origin: Origin = field(default_factory=Origin)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()

    def untolerated(self) -> tuple[Taint, ...]:
        """The taints that keep a workload off this flavor: ``flavorassigner.go`` ``checkFlavorForPodSets``
        (``FindMatchingUntoleratedTaint`` over NoSchedule and NoExecute taints, with the pod's tolerations
        and the flavor's own). A trace's jobs carry no tolerations of their own."""
        return tuple(
            t
            for t in self.node_taints
            if t.effect in ("NoSchedule", "NoExecute") and not any(x.tolerates(t) for x in self.tolerations)
        )


@dataclass(frozen=True)
class ResourceQuota:
    """One ``flavors[].resources[]`` entry of a ClusterQueue or Cohort.

    ``borrowing_limit`` / ``lending_limit`` ``None`` mean unset: borrow without bound
    and lend all (``clusterqueue_types.go``).
    """

    name: str
    nominal_quota: float
    borrowing_limit: float | None = None
    lending_limit: float | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    """The quotas of one flavor in a resource group (``flavors[]``), resources in file order."""

    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True)
class ResourceGroup:
    """``spec.resourceGroups[]``: covered resources and the flavors tried for them, in order."""

    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True)
class KueuePreemption:
    """``ClusterQueue.spec.preemption`` with Kueue's defaults (all ``Never``)."""

    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


KUEUE_WITHIN_CQ = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
KUEUE_RECLAIM = ("Never", "LowerPriority", "Any")
KUEUE_BORROW = ("Never", "LowerPriority")
KUEUE_STRATEGIES = ("StrictFIFO", "BestEffortFIFO")
#: ``flavorFungibility`` values of v1beta1, which :func:`validate_tree` accepts from any version: v1beta1's
#: ``Borrow`` / ``Preempt`` are deprecated names of ``MayStopSearch`` and mean the same.
KUEUE_WHEN_CAN_BORROW = ("Borrow", "TryNextFlavor", "MayStopSearch")
KUEUE_WHEN_CAN_PREEMPT = ("Preempt", "TryNextFlavor", "MayStopSearch")
#: The same in ``kueue.x-k8s.io/v1beta2`` (``apis/kueue/v1beta2/clusterqueue_types.go`` enums), which
#: drops the old names; the manifest reader checks a v1beta2 document against these.
KUEUE_V1BETA2_WHEN_CAN_BORROW = ("MayStopSearch", "TryNextFlavor")
KUEUE_V1BETA2_WHEN_CAN_PREEMPT = ("MayStopSearch", "TryNextFlavor")
#: ``flavorFungibility.preference`` (unset: ``BorrowingOverPreemption``).
KUEUE_PREFERENCES = ("BorrowingOverPreemption", "PreemptionOverBorrowing")


@dataclass(frozen=True)
class ClusterQueue:
    """Kueue ``ClusterQueue``.

    ``cohort`` is ``spec.cohort`` (v1beta1) or ``spec.cohortName`` (v1beta2); a cohort name that
    no ``Cohort`` object defines is an implicit cohort, as in Kueue
    (``clusterqueue_types.go``: "A cohort is a name that links CQs together, but it doesn't
    reference any object"). ``when_can_borrow`` / ``when_can_preempt`` are
    ``spec.flavorFungibility`` as written, or defaulted by the document's version: ``Borrow`` /
    ``TryNextFlavor`` in v1beta1 (the dataclass defaults), ``MayStopSearch`` / ``TryNextFlavor`` in v1beta2.
    ``Borrow`` and ``MayStopSearch`` (``Preempt`` and ``MayStopSearch``) mean the same.
    ``preference`` is its ``preference`` (None: unset, which Kueue reads as ``BorrowingOverPreemption``).
    """

    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    queueing_strategy: str = "BestEffortFIFO"
    preemption: KueuePreemption = field(default_factory=KueuePreemption)
    fair_sharing_weight: float = 1.0
    when_can_borrow: str = "Borrow"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None
    origin: Origin = field(default_factory=Origin)


@dataclass(frozen=True)
class Cohort:
    """Kueue ``Cohort`` object: an explicit node of a cohort tree.

    ``parent`` is ``spec.parentName`` (v1beta1, v1beta2) or ``spec.parent`` (v1alpha1), named by
    ``parent_key`` in messages. A parent that no Cohort object defines is an implicit root
    cohort (``cohort_types.go``: "References a non-existent Cohort").
    """

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_sharing_weight: float = 1.0
    parent_key: str = "spec.parentName"
    origin: Origin = field(default_factory=Origin)


@dataclass(frozen=True)
class LocalQueue:
    """Kueue ``LocalQueue``: the namespaced name jobs use, pointing at a ClusterQueue."""

    namespace: str
    name: str
    cluster_queue: str
    origin: Origin = field(default_factory=Origin)


# --------------------------------------------------------------------------- Volcano


@dataclass(frozen=True)
class VolcanoQueue:
    """Volcano ``Queue`` (``v1beta1/types.go``).

    Resource maps hold only the dimensions the manifest sets: an unset ``capability``
    dimension is unbounded, an unset ``guarantee`` dimension is 0 (docs/systems.md, "Volcano").
    ``reclaimable`` defaults to true (nil pointer), ``weight`` to 1.
    """

    name: str
    weight: int = 1
    capability: Mapping[str, float] = field(default_factory=dict)
    guarantee: Mapping[str, float] = field(default_factory=dict)
    deserved: Mapping[str, float] = field(default_factory=dict)
    reclaimable: bool = True
    priority: int = 0
    parent: str | None = None
    origin: Origin = field(default_factory=Origin)


# --------------------------------------------------------------------------- KAI


@dataclass(frozen=True)
class KaiResource:
    """``spec.resources.{gpu,cpu,memory}`` of a KAI queue.

    Fields left out of a manifest are Go's zero value 0 (``QueueResource`` has no
    defaults): quota 0 is no guaranteed share, and limit 0 caps the queue at 0, which is
    why KAI's quickstart queues write ``limit: -1``. ``-1`` is unlimited for quota and limit.
    """

    quota: float = 0.0
    over_quota_weight: float = 0.0
    limit: float = 0.0


KAI_RESOURCES = ("gpu", "cpu", "memory")


@dataclass(frozen=True)
class KaiQueue:
    """KAI ``Queue`` (``scheduling.run.ai/v2``): ``parentQueue``, ``priority`` (default 100), resources, and
    ``preemptMinRuntime`` / ``reclaimMinRuntime`` in seconds (None: unset, inherited from the parent)."""

    name: str
    parent_queue: str | None = None
    priority: int = KAI_DEFAULT_PRIORITY
    gpu: KaiResource = field(default_factory=KaiResource)
    cpu: KaiResource = field(default_factory=KaiResource)
    memory: KaiResource = field(default_factory=KaiResource)
    preempt_min_runtime: float | None = None
    reclaim_min_runtime: float | None = None
    origin: Origin = field(default_factory=Origin)

    def resource(self, name: str) -> KaiResource:
        """The :class:`KaiResource` of ``gpu``, ``cpu`` or ``memory``."""
        found: KaiResource = getattr(self, name)
        return found


# --------------------------------------------------------------------------- PriorityClass


@dataclass(frozen=True)
class PriorityClass:
    """``scheduling.k8s.io/v1`` ``PriorityClass`` (docs/systems.md, "kube-scheduler")."""

    name: str
    value: int
    preemption_policy: str = "PreemptLowerPriority"
    global_default: bool = False
    origin: Origin = field(default_factory=Origin)


@dataclass(frozen=True)
class QueueTree:
    """The queue objects of one model, in the order they were read.

    ``model`` is ``None`` when the input held only PriorityClasses.
    """

    model: Model | None = None
    flavors: tuple[ResourceFlavor, ...] = ()
    cluster_queues: tuple[ClusterQueue, ...] = ()
    cohorts: tuple[Cohort, ...] = ()
    local_queues: tuple[LocalQueue, ...] = ()
    volcano_queues: tuple[VolcanoQueue, ...] = ()
    kai_queues: tuple[KaiQueue, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()

    def cohort_names(self) -> list[str]:
        """Every cohort name, explicit (a Cohort object) or implicit (named by a queue or parent)."""
        names = [c.name for c in self.cohorts]
        for c in self.cohorts:
            if c.parent is not None:
                names.append(c.parent)
        for cq in self.cluster_queues:
            if cq.cohort is not None:
                names.append(cq.cohort)
        return list(dict.fromkeys(names))

    def cohort_parent(self, name: str) -> str | None:
        """The parent cohort of cohort ``name`` (``None`` for a root or an implicit cohort)."""
        for c in self.cohorts:
            if c.name == name:
                return c.parent
        return None


# --------------------------------------------------------------------------- validation


def _duplicates(names: Iterable[tuple[str, Origin]], kind: str) -> list[Problem]:
    seen: dict[str, Origin] = {}
    found = []
    for name, origin in names:
        if name in seen:
            first = seen[name]
            found.append(
                origin.problem(
                    f"{kind} {name!r} is defined twice (first in {first.where()})", "metadata.name"
                )
            )
        else:
            seen[name] = origin
    return found


def _cycle(start: str, parent_of: Mapping[str, str | None]) -> list[str] | None:
    """The names on the parent chain from ``start`` back to ``start``, or ``None`` if it reaches a root."""
    path = [start]
    node = parent_of.get(start)
    while node is not None:
        if node == start:
            return [*path, start]
        if node in path:
            return None  # a cycle further up: reported from one of its own members
        path.append(node)
        node = parent_of.get(node)
    return None


def _groups_problems(
    groups: tuple[ResourceGroup, ...], origin: Origin, has_cohort: bool, cohort_field: str = "cohort"
) -> list[Problem]:
    # The rules of Kueue's ClusterQueue webhook (pkg/webhooks/clusterqueue_webhook.go,
    # validateResourceGroups / validateResourceQuantity) and the CRD's CEL rules.
    found: list[Problem] = []
    covered_elsewhere: set[str] = set()
    for g, group in enumerate(groups):
        base = f"spec.resourceGroups[{g}]"
        for name in group.covered_resources:
            if name in covered_elsewhere:
                found.append(origin.problem(f"resource {name!r} is covered by two resource groups", base))
            covered_elsewhere.add(name)
        for f, flavor in enumerate(group.flavors):
            fbase = f"{base}.flavors[{f}]"
            names = tuple(r.name for r in flavor.resources)
            if names != group.covered_resources:
                found.append(
                    origin.problem(
                        f"resources {list(names)} must be the coveredResources "
                        f"{list(group.covered_resources)}, in the same order",
                        f"{fbase}.resources",
                    )
                )
            for r, quota in enumerate(flavor.resources):
                rbase = f"{fbase}.resources[{r}]"
                for what, value in (
                    ("nominalQuota", quota.nominal_quota),
                    ("borrowingLimit", quota.borrowing_limit),
                    ("lendingLimit", quota.lending_limit),
                ):
                    if value is not None and value < 0:
                        found.append(origin.problem(f"must be >= 0 (found {value:g})", f"{rbase}.{what}"))
                if quota.lending_limit is not None and quota.lending_limit > quota.nominal_quota:
                    found.append(
                        origin.problem(
                            f"must be less than or equal to the nominalQuota ({quota.lending_limit:g} > "
                            f"{quota.nominal_quota:g})",
                            f"{rbase}.lendingLimit",
                        )
                    )
                if not has_cohort:
                    for what, limit in (
                        ("borrowingLimit", quota.borrowing_limit),
                        ("lendingLimit", quota.lending_limit),
                    ):
                        if limit is not None:
                            found.append(
                                origin.problem(f"must be nil when {cohort_field} is empty", f"{rbase}.{what}")
                            )
    return found


def _kueue_problems(tree: QueueTree) -> list[Problem]:
    found = _duplicates(((f.name, f.origin) for f in tree.flavors), "ResourceFlavor")
    found += _duplicates(((q.name, q.origin) for q in tree.cluster_queues), "ClusterQueue")
    found += _duplicates(((c.name, c.origin) for c in tree.cohorts), "Cohort")
    found += _duplicates(((f"{q.namespace}/{q.name}", q.origin) for q in tree.local_queues), "LocalQueue")
    flavors = {f.name for f in tree.flavors}
    queues = {q.name for q in tree.cluster_queues}
    for cq in tree.cluster_queues:
        found += _groups_problems(cq.resource_groups, cq.origin, cq.cohort is not None)
        for g, group in enumerate(cq.resource_groups):
            for f, flavor in enumerate(group.flavors):
                if flavor.name not in flavors:
                    # Kueue keeps such a ClusterQueue inactive (FlavorNotFound): it admits nothing.
                    found.append(
                        cq.origin.problem(
                            f"ResourceFlavor {flavor.name!r} is not defined",
                            f"spec.resourceGroups[{g}].flavors[{f}].name",
                        )
                    )
        if cq.queueing_strategy not in KUEUE_STRATEGIES:
            found.append(
                cq.origin.problem(
                    f"must be one of {list(KUEUE_STRATEGIES)} (found {cq.queueing_strategy!r})",
                    "spec.queueingStrategy",
                )
            )
        p = cq.preemption
        enums: list[tuple[str, str, tuple[str, ...]]] = [
            ("spec.flavorFungibility.whenCanBorrow", cq.when_can_borrow, KUEUE_WHEN_CAN_BORROW),
            ("spec.flavorFungibility.whenCanPreempt", cq.when_can_preempt, KUEUE_WHEN_CAN_PREEMPT),
            ("spec.preemption.withinClusterQueue", p.within_cluster_queue, KUEUE_WITHIN_CQ),
            ("spec.preemption.reclaimWithinCohort", p.reclaim_within_cohort, KUEUE_RECLAIM),
            ("spec.preemption.borrowWithinCohort.policy", p.borrow_within_cohort, KUEUE_BORROW),
        ]
        if cq.preference is not None:
            enums.append(("spec.flavorFungibility.preference", cq.preference, KUEUE_PREFERENCES))
        for key, value, allowed in enums:
            if value not in allowed:
                found.append(cq.origin.problem(f"must be one of {list(allowed)} (found {value!r})", key))
        if cq.preference is not None and (cq.when_can_borrow, cq.when_can_preempt) != (
            "TryNextFlavor",
            "TryNextFlavor",
        ):
            # clusterqueue_types.go's CEL rule on FlavorFungibility.
            found.append(
                cq.origin.problem(
                    "preference can only be set when both whenCanBorrow and whenCanPreempt are "
                    f"TryNextFlavor (found {cq.when_can_borrow}/{cq.when_can_preempt})",
                    "spec.flavorFungibility.preference",
                )
            )
        if p.borrow_within_cohort != "Never" and p.reclaim_within_cohort == "Never":
            # clusterqueue_types.go CEL rule on ClusterQueuePreemption.
            found.append(
                cq.origin.problem(
                    "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
                    "spec.preemption.borrowWithinCohort.policy",
                )
            )
        if cq.fair_sharing_weight < 0:
            found.append(
                cq.origin.problem(
                    f"must be >= 0 (found {cq.fair_sharing_weight:g})", "spec.fairSharing.weight"
                )
            )
    for c in tree.cohorts:
        # cohort_types.go: limits "must only be set when the Cohort has a parent".
        found += _groups_problems(c.resource_groups, c.origin, c.parent is not None, "parent")
        if c.fair_sharing_weight < 0:
            found.append(
                c.origin.problem(f"must be >= 0 (found {c.fair_sharing_weight:g})", "spec.fairSharing.weight")
            )
        if c.parent == c.name:
            found.append(c.origin.problem(f"cohort {c.name!r} is its own parent", c.parent_key))
    parent_of = {c.name: c.parent for c in tree.cohorts}
    for c in tree.cohorts:
        cycle = _cycle(c.name, parent_of)
        if cycle is not None and c.parent != c.name:
            # Kueue marks every cohort of a cycle inactive (pkg/cache/scheduler, cycle checker).
            found.append(c.origin.problem(f"cohort cycle: {' -> '.join(cycle)}", c.parent_key))
    for lq in tree.local_queues:
        if lq.cluster_queue not in queues:
            found.append(
                lq.origin.problem(f"ClusterQueue {lq.cluster_queue!r} is not defined", "spec.clusterQueue")
            )
    return found


def _volcano_problems(tree: QueueTree) -> list[Problem]:
    found = _duplicates(((q.name, q.origin) for q in tree.volcano_queues), "Queue")
    names = {q.name for q in tree.volcano_queues}
    low, high = VOLCANO_WEIGHT_RANGE
    for q in tree.volcano_queues:
        if not low <= q.weight <= high:
            found.append(q.origin.problem(f"must be in {low}..{high} (found {q.weight})", "spec.weight"))
        if q.priority < 0:
            found.append(q.origin.problem(f"must be >= 0 (found {q.priority})", "spec.priority"))
        for key, amounts in (
            ("spec.capability", q.capability),
            ("spec.guarantee.resource", q.guarantee),
            ("spec.deserved", q.deserved),
        ):
            for r, v in amounts.items():
                if v < 0:
                    found.append(q.origin.problem(f"must be >= 0 (found {v:g})", f"{key}.{r}"))
        # Volcano's queue webhook (pkg/webhooks/admission/queues/validate/validate_queue.go):
        # capability >= deserved >= guarantee, on the dimensions both set.
        for key, small, big, what in (
            ("spec.deserved", q.deserved, q.capability, "deserved should less equal than capability"),
            (
                "spec.guarantee.resource",
                q.guarantee,
                q.capability,
                "guarantee should less equal than capability",
            ),
            ("spec.guarantee.resource", q.guarantee, q.deserved, "guarantee should less equal than deserved"),
        ):
            for r, v in small.items():
                if r in big and v > big[r]:
                    found.append(q.origin.problem(f"{what} ({v:g} > {big[r]:g})", f"{key}.{r}"))
        if q.parent is not None and q.parent not in names and q.parent != "root":
            found.append(q.origin.problem(f"parent queue {q.parent!r} is not defined", "spec.parent"))
    parent_of = {q.name: q.parent for q in tree.volcano_queues}
    for q in tree.volcano_queues:
        cycle = _cycle(q.name, parent_of)
        if cycle is not None:
            found.append(q.origin.problem(f"queue cycle: {' -> '.join(cycle)}", "spec.parent"))
    return found


def _kai_problems(tree: QueueTree) -> list[Problem]:
    found = _duplicates(((q.name, q.origin) for q in tree.kai_queues), "Queue")
    names = {q.name for q in tree.kai_queues}
    for q in tree.kai_queues:
        for r in KAI_RESOURCES:
            res = q.resource(r)
            base = f"spec.resources.{r}"
            for key, value in (("quota", res.quota), ("limit", res.limit)):
                if value < 0 and value != KAI_UNLIMITED:
                    found.append(
                        q.origin.problem(
                            f"must be >= 0 or -1 for unlimited (found {value:g})", f"{base}.{key}"
                        )
                    )
            if res.over_quota_weight < 0:
                found.append(
                    q.origin.problem(
                        f"must be >= 0 (found {res.over_quota_weight:g})", f"{base}.overQuotaWeight"
                    )
                )
            if 0 <= res.limit < res.quota:
                # Not found in KAI's queue validation (UNCERTAIN whether the API rejects it); a finite
                # limit below the quota means the queue can never use its quota, so it is an input error here.
                found.append(
                    q.origin.problem(
                        f"limit {res.limit:g} is below quota {res.quota:g}, so the quota can never be used",
                        f"{base}.limit",
                    )
                )
        if q.parent_queue is not None and q.parent_queue not in names:
            found.append(
                q.origin.problem(f"parent queue {q.parent_queue!r} is not defined", "spec.parentQueue")
            )
    parent_of = {q.name: q.parent_queue for q in tree.kai_queues}
    for q in tree.kai_queues:
        cycle = _cycle(q.name, parent_of)
        if cycle is not None:
            found.append(q.origin.problem(f"queue cycle: {' -> '.join(cycle)}", "spec.parentQueue"))
    return found


def _priority_problems(tree: QueueTree) -> list[Problem]:
    found = _duplicates(((p.name, p.origin) for p in tree.priority_classes), "PriorityClass")
    for p in tree.priority_classes:
        if p.value > HIGHEST_USER_PRIORITY and not p.name.startswith("system-"):
            found.append(p.origin.problem(f"must be <= {HIGHEST_USER_PRIORITY} (found {p.value})", "value"))
        if p.preemption_policy not in ("PreemptLowerPriority", "Never"):
            found.append(
                p.origin.problem(
                    f"must be PreemptLowerPriority or Never (found {p.preemption_policy!r})",
                    "preemptionPolicy",
                )
            )
    return found


def validate_tree(tree: QueueTree) -> QueueTree:
    """Check a queue tree's references and amounts; return it unchanged or raise.

    Parameters
    ----------
    tree
        The objects read from the manifests.

    Returns
    -------
    QueueTree
        ``tree``, when every check passes.

    Raises
    ------
    InputError
        Listing every problem, each naming file, document and field path: a LocalQueue
        or a flavor entry naming an object that is not defined, a cohort or queue cycle,
        an unknown parent queue (Volcano, KAI), a negative quota or limit, a
        ``lendingLimit`` above ``nominalQuota`` or a limit set without a cohort
        (Kueue's ClusterQueue webhook), ``capability >= deserved >= guarantee`` broken
        (Volcano's queue webhook), a Volcano weight outside 1..65535.

    Notes
    -----
    A cohort name that no ``Cohort`` object defines is valid: Kueue creates it
    implicitly. Volcano's ``root`` queue is built in, so ``parent: root`` is valid.
    """
    problems = (
        _kueue_problems(tree) + _volcano_problems(tree) + _kai_problems(tree) + _priority_problems(tree)
    )
    if problems:
        raise InputError(problems, shown=len(problems))
    return tree


# --------------------------------------------------------------------------- printing


def _amount(resource: str, value: float | None) -> str:
    if value is None:
        return "-"
    if resource == "memory" and value >= 2**30:
        return f"{value / 2**30:g}Gi"
    return f"{value:g}"


def _amounts(values: Mapping[str, float]) -> str:
    return "{" + ", ".join(f"{r}: {_amount(r, v)}" for r, v in values.items()) + "}"


def _quota_lines(groups: tuple[ResourceGroup, ...], indent: str) -> list[str]:
    lines = []
    for group in groups:
        for flavor in group.flavors:
            for q in flavor.resources:
                lines.append(
                    f"{indent}{flavor.name}/{q.name}: nominal {_amount(q.name, q.nominal_quota)}, "
                    f"borrowingLimit {_amount(q.name, q.borrowing_limit)}, "
                    f"lendingLimit {_amount(q.name, q.lending_limit)}"
                )
    return lines


def _children(parent_of: Mapping[str, str | None], names: Iterable[str]) -> dict[str | None, list[str]]:
    found: dict[str | None, list[str]] = {}
    known = set(names)
    for name in names:
        parent = parent_of.get(name)
        found.setdefault(parent if parent in known else None, []).append(name)
    return found


def _kueue_lines(tree: QueueTree) -> list[str]:
    lines = [
        f"ResourceFlavor {f.name}"
        + (f" (GPU model {f.gpu_model})" if f.gpu_model else "")
        + (
            f"; untolerated taints {', '.join(f'{t.key}={t.value}:{t.effect}' for t in f.untolerated())}: "
            "never assigned"
            if f.untolerated()
            else ""
        )
        for f in tree.flavors
    ]
    cohorts = tree.cohort_names()
    explicit = {c.name: c for c in tree.cohorts}
    by_cohort: dict[str | None, list[ClusterQueue]] = {}
    for cq in tree.cluster_queues:
        by_cohort.setdefault(cq.cohort, []).append(cq)
    local: dict[str, list[LocalQueue]] = {}
    for lq in tree.local_queues:
        local.setdefault(lq.cluster_queue, []).append(lq)
    children = _children({c: tree.cohort_parent(c) for c in cohorts}, cohorts)

    def cq_lines(cq: ClusterQueue, indent: str) -> list[str]:
        p = cq.preemption
        borrow = p.borrow_within_cohort
        if p.max_priority_threshold is not None:
            borrow += f" (maxPriorityThreshold {p.max_priority_threshold})"
        out = [
            f"{indent}ClusterQueue {cq.name}: {cq.queueing_strategy}, "
            f"fairSharing weight {cq.fair_sharing_weight:g}, "
            f"preemption withinClusterQueue {p.within_cluster_queue}, reclaimWithinCohort "
            f"{p.reclaim_within_cohort}, borrowWithinCohort {borrow}, flavorFungibility "
            f"{cq.when_can_borrow}/{cq.when_can_preempt}" + (f" ({cq.preference})" if cq.preference else "")
        ]
        out += _quota_lines(cq.resource_groups, indent + "    ")
        out += [f"{indent}    LocalQueue {lq.namespace}/{lq.name}" for lq in local.get(cq.name, [])]
        return out

    def cohort_lines(name: str, indent: str) -> list[str]:
        c = explicit.get(name)
        what = "" if c is not None else " (implicit)"
        weight = f", fairSharing weight {c.fair_sharing_weight:g}" if c is not None else ""
        out = [f"{indent}Cohort {name}{what}{weight}"]
        if c is not None:
            out += _quota_lines(c.resource_groups, indent + "    ")
        for child in children.get(name, []):
            out += cohort_lines(child, indent + "  ")
        for cq in by_cohort.get(name, []):
            out += cq_lines(cq, indent + "  ")
        return out

    for root in children.get(None, []):
        lines += cohort_lines(root, "")
    for cq in by_cohort.get(None, []):
        lines += cq_lines(cq, "")
    return lines


def _volcano_lines(tree: QueueTree) -> list[str]:
    queues = {q.name: q for q in tree.volcano_queues}
    children = _children({q.name: q.parent for q in tree.volcano_queues}, list(queues))

    def lines_of(name: str, indent: str) -> list[str]:
        q = queues[name]
        parts = [
            f"weight {q.weight}",
            f"priority {q.priority}",
            "reclaimable" if q.reclaimable else "not reclaimable",
        ]
        for what, values in (
            ("capability", q.capability),
            ("guarantee", q.guarantee),
            ("deserved", q.deserved),
        ):
            if values:
                parts.append(f"{what} {_amounts(values)}")
        out = [f"{indent}Queue {name}: {', '.join(parts)}"]
        for child in children.get(name, []):
            out += lines_of(child, indent + "  ")
        return out

    return [line for root in children.get(None, []) for line in lines_of(root, "")]


def _kai_limit(value: float) -> str:
    return "unlimited" if value == KAI_UNLIMITED else f"{value:g}"


def _kai_lines(tree: QueueTree) -> list[str]:
    queues = {q.name: q for q in tree.kai_queues}
    children = _children({q.name: q.parent_queue for q in tree.kai_queues}, list(queues))

    def lines_of(name: str, indent: str) -> list[str]:
        q = queues[name]
        head = f"{indent}Queue {name}: priority {q.priority}"
        for label, seconds in (
            ("preemptMinRuntime", q.preempt_min_runtime),
            ("reclaimMinRuntime", q.reclaim_min_runtime),
        ):
            if seconds is not None:
                head += f", {label} {seconds:g} s"
        out = [head]
        for r in KAI_RESOURCES:
            res = q.resource(r)
            out.append(
                f"{indent}    {r}: quota {_kai_limit(res.quota)}, overQuotaWeight {res.over_quota_weight:g}, "
                f"limit {_kai_limit(res.limit)}"
            )
        for child in children.get(name, []):
            out += lines_of(child, indent + "  ")
        return out

    return [line for root in children.get(None, []) for line in lines_of(root, "")]


def describe_tree(tree: QueueTree) -> list[str]:
    """The tree as indented lines: each queue under its parent with its quotas, weights and limits.

    Parameters
    ----------
    tree
        A validated tree (:func:`validate_tree`).

    Returns
    -------
    list of str
        A header line naming the model, then the queues, then the PriorityClasses.
    """
    lines = [f"model: {tree.model or 'none (PriorityClasses only)'}"]
    if tree.model == "kueue":
        lines += _kueue_lines(tree)
    elif tree.model == "volcano":
        lines += _volcano_lines(tree)
    elif tree.model == "kai":
        lines += _kai_lines(tree)
    for p in sorted(tree.priority_classes, key=lambda p: -p.value):
        default = ", globalDefault" if p.global_default else ""
        lines.append(
            f"PriorityClass {p.name}: value {p.value}, preemptionPolicy {p.preemption_policy}{default}"
        )
    return lines
