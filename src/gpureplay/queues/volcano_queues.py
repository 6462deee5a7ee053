"""Volcano's queues as the replay runs them (``scheduler.queues: volcano``).

One :class:`VolcanoQueues` holds every queue's ``weight``, ``capability``, ``guarantee`` and ``priority``
(``scheduling.volcano.sh/v1beta1`` Queue, docs/systems.md, "Volcano") in Volcano's own units, so that the
proportion
plugin's arithmetic and its tolerance (``minResource`` 0.1) are Volcano's: ``nvidia.com/gpu`` in milli-GPU,
``cpu`` in milli-CPU, ``memory`` in bytes. The queues come from Volcano manifests or from a quota derived
from the trace (:mod:`gpureplay.queues.quotas`), which becomes each queue's weight.

The rules themselves are :func:`gpureplay.queues.fair_share.volcano_proportion` (plain, used by the
reference simulator) and :mod:`gpureplay.engine.queues.volcano.session` (the kernels).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from gpureplay.engine.state.layout import Float64Array, Int64Array
from gpureplay.errors import InputError, Problem
from gpureplay.queues.fair_share import volcano_real_capability
from gpureplay.queues.manifests import ManifestSet
from gpureplay.queues.tree import GPU_RESOURCE, VOLCANO_WEIGHT_RANGE, VolcanoQueue
from gpureplay.queues.volcano_actions import DEFAULT_ACTIONS, VolcanoActions

__all__ = [
    "MAX_WEIGHT",
    "VOLCANO_RESOURCES",
    "VolcanoQueues",
    "generated_volcano_queues",
    "manifest_volcano_queues",
    "volcano_columns",
]

#: Kubernetes resource names in the engine's resource order, with the factor from a manifest quantity (GPUs,
#: CPU cores, bytes) to Volcano's units (milli-GPU, milli-CPU, bytes).
VOLCANO_RESOURCES: tuple[tuple[str, float], ...] = ((GPU_RESOURCE, 1000.0), ("cpu", 1000.0), ("memory", 1.0))

#: ``spec.weight``'s largest value (``v1beta1/types.go``; manifests are checked in the tree).
MAX_WEIGHT = VOLCANO_WEIGHT_RANGE[1]


@dataclass(frozen=True)
class VolcanoQueues:
    """Volcano's queues in its units (``[resource, queue]`` arrays, resources as :data:`VOLCANO_RESOURCES`).

    Attributes
    ----------
    names
        Queue names; queue ``q`` is tenant ``q`` (name order, which also breaks Volcano's queue-order ties:
        it compares creation times).
    weight
        ``spec.weight`` per queue.
    capability
        ``spec.capability`` per resource; ``inf`` where it does not bound the resource.
    guarantee
        ``spec.guarantee.resource`` per resource (0 where unset).
    priority
        ``spec.priority`` (higher is taken first).
    overcommit
        The overcommit plugin's ``overcommit-factor``.
    source
        Where the queues came from, for logs and errors.
    reclaimable
        ``spec.reclaimable`` (1: the reclaim action may evict the queue's pods; Volcano's default).
    actions
        What the sessions run after ``allocate`` (``scheduler.actions``, ``scheduler.preemptable_plugins``).
    """

    names: tuple[str, ...]
    weight: Int64Array
    capability: Float64Array
    guarantee: Float64Array
    priority: Int64Array
    overcommit: float
    source: str
    reclaimable: Int64Array
    actions: VolcanoActions = DEFAULT_ACTIONS

    @property
    def cluster_queues(self) -> tuple[str, ...]:
        """The tenants, in tenant order (named as in Kueue's trees: either model is a tenant list)."""
        return self.names

    def real_capability(self, total: Float64Array) -> Float64Array:
        """``[resource, queue]`` ``realCapability``: the capability, capped by what the others' guarantees
        leave of ``total`` (:func:`~gpureplay.queues.fair_share.volcano_real_capability`)."""
        names = [name for name, _ in VOLCANO_RESOURCES]
        totals = {name: float(total[r]) for r, name in enumerate(names)}
        guarantees = [
            {name: float(self.guarantee[r, q]) for r, name in enumerate(names) if self.guarantee[r, q] > 0}
            for q in range(len(self.names))
        ]
        real = np.zeros((len(names), len(self.names)))
        for q in range(len(self.names)):
            given = {name: float(self.capability[r, q]) for r, name in enumerate(names)}
            capability = {name: v for name, v in given.items() if math.isfinite(v)}
            found = volcano_real_capability(totals, guarantees, q, capability or None)
            for r, name in enumerate(names):
                real[r, q] = found[name]
        return real


def generated_volcano_queues(
    gpu_quota: Mapping[str, float],
    *,
    overcommit: float,
    source: str,
    actions: VolcanoActions = DEFAULT_ACTIONS,
) -> VolcanoQueues:
    """A queue per trace queue, its ``weight`` its quota in GPUs (rounded, within Volcano's 1..65535).

    No capability or guarantee: the proportion plugin alone divides the cluster, by weight, among the
    queues with jobs. A quota of 0 GPUs (``quota_missing: zero``) is weight 1, Volcano's least.
    """
    names = tuple(sorted(gpu_quota))
    weight = np.array([min(MAX_WEIGHT, max(1, round(gpu_quota[n]))) for n in names], dtype=np.int64)
    num = len(names)
    return VolcanoQueues(
        names=names,
        weight=weight,
        capability=np.full((len(VOLCANO_RESOURCES), num), math.inf),
        guarantee=np.zeros((len(VOLCANO_RESOURCES), num)),
        priority=np.zeros(num, dtype=np.int64),
        overcommit=overcommit,
        source=source,
        reclaimable=np.ones(num, dtype=np.int64),
        actions=actions,
    )


def _amounts(
    queue: VolcanoQueue, field: str, values: Mapping[str, float], problems: list[Problem]
) -> list[float]:
    known = dict(VOLCANO_RESOURCES)
    for name in values:
        if name not in known:
            problems.append(
                queue.origin.problem(
                    f"names resource {name!r}, which the replay's jobs cannot request (they request "
                    f"{', '.join(known)})",
                    f"{field}.{name}",
                )
            )
    return [values[name] * factor if name in values else math.nan for name, factor in VOLCANO_RESOURCES]


def manifest_volcano_queues(
    manifests: ManifestSet,
    jobs: pl.DataFrame,
    *,
    overcommit: float,
    source: str,
    actions: VolcanoActions = DEFAULT_ACTIONS,
) -> VolcanoQueues:
    """The :class:`VolcanoQueues` of Volcano ``Queue`` manifests, for jobs whose ``queue`` names them.

    Every queue of the manifests is a tenant (in name order), with jobs or not: its guarantee still
    reserves capacity. Jobs of queue ``default`` run in Volcano's ``default`` queue (weight 1, created with
    every Volcano install) when the manifests do not define it.

    Raises
    ------
    InputError
        When the manifests are not Volcano's, set what the proportion plugin does not read (``deserved``
        and ``parent`` belong to the capacity plugin, not modelled), name a resource the jobs cannot
        request, or a job's queue names no queue (naming file and document, or the job row).
    """
    tree = manifests.tree
    if tree.model != "volcano":
        found = "no queue objects" if tree.model is None else f"{tree.model} queues"
        raise InputError.single(
            f"scheduler.queues: volcano needs Volcano Queue manifests; {source} holds {found}", source
        )
    problems: list[Problem] = []
    queues = sorted(tree.volcano_queues, key=lambda v: v.name)
    for queue in queues:
        if queue.deserved:
            problems.append(
                queue.origin.problem(
                    "is read by Volcano's capacity plugin, which the replay does not model (it models the "
                    "proportion plugin: weight, capability, guarantee)",
                    "spec.deserved",
                )
            )
        if queue.parent is not None:
            problems.append(
                queue.origin.problem(
                    "hierarchical queues belong to Volcano's capacity plugin, not modelled by the replay",
                    "spec.parent",
                )
            )
    capability = np.full((len(VOLCANO_RESOURCES), len(queues)), math.inf)
    guarantee = np.zeros((len(VOLCANO_RESOURCES), len(queues)))
    for q, queue in enumerate(queues):
        cap = _amounts(queue, "spec.capability", queue.capability, problems)
        gua = _amounts(queue, "spec.guarantee.resource", queue.guarantee, problems)
        for r in range(len(VOLCANO_RESOURCES)):
            # proportion.go: a capability's cpu / memory <= 0 is unbounded; GPUs left out of it are unbounded
            # here because no other scalar resource may be named (refused above).
            if not math.isnan(cap[r]) and (r == 0 or cap[r] > 0):
                capability[r, q] = cap[r]
            if not math.isnan(gua[r]):
                guarantee[r, q] = gua[r]
    if problems:
        raise InputError(problems)
    names = [queue.name for queue in queues]
    weights = [queue.weight for queue in queues]
    priorities = [queue.priority for queue in queues]
    reclaimable = [int(queue.reclaimable) for queue in queues]
    used = sorted(set(jobs["queue"].to_list()))
    if "default" in used and "default" not in names:
        # Volcano's admission controller creates queue "default" (weight 1) at install.
        at = sorted([*names, "default"]).index("default")
        names.insert(at, "default")
        weights.insert(at, 1)
        priorities.insert(at, 0)
        reclaimable.insert(at, 1)
        capability = np.insert(capability, at, math.inf, axis=1)
        guarantee = np.insert(guarantee, at, 0.0, axis=1)
    unknown = [q for q in used if q not in names]
    if unknown:
        numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
        first = numbered.filter(pl.col("queue") == unknown[0]).row(0, named=True)
        raise InputError.single(
            f"queue {unknown[0]!r} names no Volcano Queue of {source} ({len(unknown)} such queues: "
            f"{', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''}); known: {', '.join(names[:8])}",
            "jobs",
            row=int(first["source_row"]),
            column="queue",
        )
    return VolcanoQueues(
        names=tuple(names),
        weight=np.array(weights, dtype=np.int64),
        capability=capability,
        guarantee=guarantee,
        priority=np.array(priorities, dtype=np.int64),
        overcommit=overcommit,
        source=source,
        reclaimable=np.array(reclaimable, dtype=np.int64),
        actions=actions,
    )


def volcano_columns(usage: np.ndarray, deserved: np.ndarray, share_ppm: np.ndarray) -> dict[str, np.ndarray]:
    """Per queue and sample, the quota columns of ``queues.parquet`` under Volcano.

    Parameters
    ----------
    usage
        ``[resource, queue, sample]`` usage in engine units.
    deserved, share_ppm
        ``[queue, sample]``: the proportion plugin's deserved milli-GPU and the queue's share x 10^6 at the
        session before each sample.

    Returns
    -------
    dict
        ``nominal_gpu``: deserved GPUs (Volcano has no nominal quota: its deserved share moves with the
        queues' requests); ``borrowed_gpu``: GPUs used above it (a queue keeps what it was allocated when its
        deserved share falls, unless the reclaim action runs and takes it back); ``share``: the
        proportion share, ``max_r allocated_r / deserved_r``; ``fair_gpu``: the deserved GPUs again (Volcano's
        fair share); ``lent_gpu`` is not a Volcano notion (null).
    """
    gpu = usage[0].astype(np.float64)
    des = deserved.astype(np.float64)
    return {
        "nominal_gpu": des / 1000.0,
        "fair_gpu": des / 1000.0,
        "borrowed_gpu": np.maximum(0.0, gpu - des) / 1000.0,
        "share": share_ppm.astype(np.float64) / 1e6,
    }
