"""KAI's queues as the replay runs them (``scheduler.queues: kai``).

One :class:`KaiQueues` holds a KAI queue tree (``scheduling.run.ai/v2`` ``Queue``, docs/systems.md, "KAI
Scheduler") in KAI's
own units, so that the proportion plugin's division floors whole GPUs as KAI does: GPUs in devices, CPU in
millicores, memory in MB (10^6 bytes). Only leaf queues hold jobs; they are the replay's tenants (name
order), listed first, then the parent queues, each after all of its children. The queues come from KAI
manifests or from a quota derived from the trace (:mod:`gpureplay.queues.quotas`): one top-level queue per
trace queue, its GPU quota the derived one.

The rules themselves are :func:`gpureplay.queues.fair_share.kai_fair_share_tree` (the division, used by the
reference simulator) and :mod:`gpureplay.engine.queues.kai.session` (the kernels).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from gpureplay.engine.state.layout import MB_PER_MIB, Float64Array, Int64Array
from gpureplay.errors import InputError, Problem
from gpureplay.queues.manifests import ManifestSet
from gpureplay.queues.tree import KAI_DEFAULT_PRIORITY, KAI_RESOURCES, KAI_UNLIMITED, KaiQueue
from gpureplay.schedulers.policy import KaiReclaimResolveMethod
from gpureplay.traces.schema import UNKNOWN_CAPACITY

__all__ = [
    "KAI_NON_PREEMPTIBLE",
    "KaiQueues",
    "MinRuntimeArgs",
    "generated_kai_queues",
    "kai_columns",
    "kai_preemptibility",
    "kai_total",
    "manifest_kai_queues",
    "min_runtimes",
]

log = logging.getLogger(__name__)

#: Jobs whose PriorityClass value is at least this are non-preemptible (``docs/priority``: ``build`` = 100,
#: ``inference`` = 125; docs/systems.md, "KAI Scheduler").
KAI_NON_PREEMPTIBLE = 100


@dataclass(frozen=True)
class KaiQueues:
    """A KAI queue tree in KAI's units (``[resource, node]`` arrays, resources GPU, CPU, memory).

    Attributes
    ----------
    names
        Every queue: the leaf queues first (the tenants, in name order), then the parent queues, each
        after its children.
    num_leaves
        How many of ``names`` are leaf queues (tenants).
    parent
        Per queue, its parent's index (-1: a top-level queue).
    priority
        ``spec.priority`` (higher is divided over-quota resources first and ordered first).
    quota, over_quota_weight, limit
        ``spec.resources.{gpu,cpu,memory}``: ``quota`` and ``limit`` (-1: unlimited), ``overQuotaWeight``.
    created
        Creation order (the manifests' document order; name order when derived): the last tie-break of
        the division's leftovers and of the queue order.
    source
        Where the queues came from, for logs and errors.
    actions
        The eviction actions its sessions run after allocate (``KA_*`` bits of
        :mod:`gpureplay.engine.queues.kai.evict`; ``scheduler.actions``).
    preempt_min_runtime
        Per leaf queue, seconds a job of it runs before the preempt action may evict it (:func:`min_runtimes`;
        None: no queue sets one).
    reclaim_min_runtime
        ``[reclaimer's leaf, victim's leaf]`` seconds a victim runs before a reclaim by that queue may evict
        it (None: no queue sets one).
    """

    names: tuple[str, ...]
    num_leaves: int
    parent: Int64Array
    priority: Int64Array
    quota: Float64Array
    over_quota_weight: Float64Array
    limit: Float64Array
    created: Int64Array
    source: str
    actions: int = 0
    preempt_min_runtime: Float64Array | None = None
    reclaim_min_runtime: Float64Array | None = None

    @property
    def cluster_queues(self) -> tuple[str, ...]:
        """The tenants (leaf queues), in tenant order."""
        return self.names[: self.num_leaves]


def generated_kai_queues(
    gpu_quota: Mapping[str, float], *, source: str, min_runtime: MinRuntimeArgs | None = None
) -> KaiQueues:
    """A top-level queue per trace queue: GPU ``quota`` its derived quota, ``overQuotaWeight`` 1, no limit.

    CPU and memory get quota and limit -1 (unlimited), as KAI's quickstart queues do: the derived quota
    bounds GPUs only. Every queue has KAI's default priority 100 and no min-runtime of its own
    (``min_runtime``: the minruntime plugin's defaults, :func:`min_runtimes`).
    """
    names = tuple(sorted(gpu_quota))
    num = len(names)
    quota = np.full((len(KAI_RESOURCES), num), KAI_UNLIMITED)
    quota[0] = [float(gpu_quota[n]) for n in names]
    args = min_runtime or MinRuntimeArgs()
    # With both defaults 0 nothing is protected: skip the (leaves x leaves) resolution, which a trace with
    # thousands of users as queues would pay for nothing.
    guarded = args.default_preempt > 0 or args.default_reclaim > 0
    preempt_rt: Float64Array | None = None
    reclaim_rt: Float64Array | None = None
    if guarded:
        preempt_rt, reclaim_rt = min_runtimes([KaiQueue(n) for n in names], num, args)
    return KaiQueues(
        names=names,
        num_leaves=num,
        parent=np.full(num, -1, dtype=np.int64),
        priority=np.full(num, KAI_DEFAULT_PRIORITY, dtype=np.int64),
        quota=quota,
        over_quota_weight=np.ones((len(KAI_RESOURCES), num)),
        limit=np.full((len(KAI_RESOURCES), num), KAI_UNLIMITED),
        created=np.arange(num, dtype=np.int64),
        source=source,
        preempt_min_runtime=preempt_rt,
        reclaim_min_runtime=reclaim_rt,
    )


def _tree_order(queues: list[KaiQueue]) -> list[KaiQueue]:
    # Leaves by name, then parents children-first (deepest first, then by name).
    parents = {q.parent_queue for q in queues if q.parent_queue is not None}
    by_name = {q.name: q for q in queues}

    def depth(q: KaiQueue) -> int:
        found = 0
        while q.parent_queue is not None:
            q = by_name[q.parent_queue]
            found += 1
        return found

    leaves = sorted((q for q in queues if q.name not in parents), key=lambda q: q.name)
    inner = sorted((q for q in queues if q.name in parents), key=lambda q: (-depth(q), q.name))
    return leaves + inner


def manifest_kai_queues(
    manifests: ManifestSet, jobs: pl.DataFrame, *, source: str, min_runtime: MinRuntimeArgs | None = None
) -> KaiQueues:
    """The :class:`KaiQueues` of KAI ``Queue`` manifests, for jobs whose ``queue`` names a leaf queue;
    ``min_runtime``: the minruntime plugin's arguments (:func:`min_runtimes`).

    Raises
    ------
    InputError
        When the manifests are not KAI's, or a job's queue names no queue or a parent queue (only leaf
        queues hold jobs), naming file and document, or the job row.
    """
    tree = manifests.tree
    if tree.model != "kai":
        found = "no queue objects" if tree.model is None else f"{tree.model} queues"
        raise InputError.single(
            f"scheduler.queues: kai needs KAI Queue manifests; {source} holds {found}", source
        )
    ordered = _tree_order(list(tree.kai_queues))
    index = {q.name: i for i, q in enumerate(ordered)}
    document = {q.name: (q.origin.source, q.origin.document) for q in tree.kai_queues}
    created_order = sorted(index, key=lambda name: document[name])
    parents = {q.parent_queue for q in ordered if q.parent_queue is not None}
    num_leaves = sum(1 for q in ordered if q.name not in parents)
    num = len(ordered)
    quota = np.zeros((len(KAI_RESOURCES), num))
    weight = np.zeros((len(KAI_RESOURCES), num))
    limit = np.zeros((len(KAI_RESOURCES), num))
    for i, q in enumerate(ordered):
        for r, name in enumerate(KAI_RESOURCES):
            res = q.resource(name)
            quota[r, i] = res.quota
            weight[r, i] = res.over_quota_weight
            limit[r, i] = res.limit
    _refuse_job_queues(jobs, [q.name for q in ordered[:num_leaves]], parents, source)
    preempt_rt, reclaim_rt = min_runtimes(ordered, num_leaves, min_runtime)
    guarded = bool(preempt_rt.any() or reclaim_rt.any())
    return KaiQueues(
        names=tuple(q.name for q in ordered),
        num_leaves=num_leaves,
        parent=np.array(
            [-1 if q.parent_queue is None else index[q.parent_queue] for q in ordered], dtype=np.int64
        ),
        priority=np.array([q.priority for q in ordered], dtype=np.int64),
        quota=quota,
        over_quota_weight=weight,
        limit=limit,
        created=np.array([created_order.index(q.name) for q in ordered], dtype=np.int64),
        source=source,
        preempt_min_runtime=preempt_rt if guarded else None,
        reclaim_min_runtime=reclaim_rt if guarded else None,
    )


def _path(queues: list[KaiQueue], q: int) -> list[int]:
    # Queue q's path from its top-level queue down to itself.
    index = {x.name: i for i, x in enumerate(queues)}
    path = [q]
    while queues[path[0]].parent_queue is not None:
        path.insert(0, index[queues[path[0]].parent_queue])  # type: ignore[index]
    return path


@dataclass(frozen=True)
class MinRuntimeArgs:
    """The minruntime plugin's arguments (``scheduler.kai_default_*_min_runtime``,
    ``scheduler.kai_reclaim_resolve_method``): defaults in seconds, the reclaim resolve method."""

    default_preempt: float = 0.0
    default_reclaim: float = 0.0
    method: KaiReclaimResolveMethod = KaiReclaimResolveMethod.lca


def min_runtimes(
    queues: list[KaiQueue], num_leaves: int, args: MinRuntimeArgs | None = None
) -> tuple[Float64Array, Float64Array]:
    """Per leaf, its preempt min-runtime; per (reclaimer leaf, victim leaf), the reclaim min-runtime.

    Notes
    -----
    NVIDIA/KAI-Scheduler ``pkg/scheduler/plugins/minruntime`` (``resolver.go`` as released from v0.6.0 to
    v0.13.0; ``args``: the plugin's arguments, KAI's defaults 0 s and ``lca``). Preempt: the victim's queue's
    ``preemptMinRuntime``, else its nearest ancestor's, else ``defaultPreemptMinRuntime``. Reclaim, ``lca``:
    when the two queues' top-level queues differ, the victim's top-level queue's ``reclaimMinRuntime``, else
    ``defaultReclaimMinRuntime``; in one tree, from the child of their lowest common ancestor on the victim's
    path (the victim's queue itself when it is that child) up to the top, the first that sets one, else
    ``defaultReclaimMinRuntime`` too. (The plugin's first commit, 1520f950 of #162, fell back to
    ``defaultPreemptMinRuntime`` there; 09b60aa4, #234, changed it before v0.6.0, the first release with the
    plugin.) Reclaim, ``queue``: the victim's queue's, else its nearest ancestor's, else
    ``defaultReclaimMinRuntime``.
    """
    args = args or MinRuntimeArgs()
    preempt = np.zeros(num_leaves)
    reclaim = np.zeros((num_leaves, num_leaves))
    paths = [_path(queues, q) for q in range(num_leaves)]

    def nearest(path: list[int], preempting: bool, default: float) -> float:
        for n in reversed(path):
            found = queues[n].preempt_min_runtime if preempting else queues[n].reclaim_min_runtime
            if found is not None:
                return found
        return default

    for b in range(num_leaves):
        preempt[b] = nearest(paths[b], True, args.default_preempt)
    for a in range(num_leaves):
        for b in range(num_leaves):
            mine, theirs = paths[a], paths[b]
            if args.method is KaiReclaimResolveMethod.queue:
                reclaim[a, b] = nearest(theirs, False, args.default_reclaim)
                continue
            if mine[0] != theirs[0]:
                top = queues[theirs[0]].reclaim_min_runtime
                reclaim[a, b] = args.default_reclaim if top is None else top
                continue
            lca = 0
            for i in range(min(len(mine), len(theirs))):
                if mine[i] != theirs[i]:
                    break
                lca = i
            if lca + 1 < len(theirs):
                lca += 1
            reclaim[a, b] = nearest(theirs[: lca + 1], False, args.default_reclaim)
    return preempt, reclaim


def _refuse_job_queues(jobs: pl.DataFrame, leaves: list[str], parents: set[str], source: str) -> None:
    used = sorted(set(jobs["queue"].to_list()))
    problems: list[Problem] = []
    numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
    for name in used:
        if name in leaves:
            continue
        first = numbered.filter(pl.col("queue") == name).row(0, named=True)
        why = (
            f"queue {name!r} is a parent queue of {source}: only leaf queues hold jobs (KAI docs/queues)"
            if name in parents
            else f"queue {name!r} names no KAI Queue of {source}; leaf queues: {', '.join(leaves[:8])}"
        )
        problems.append(Problem(why, "jobs", row=int(first["source_row"]), column="queue"))
    if problems:
        raise InputError(problems)


def kai_total(nodes: pl.DataFrame) -> Float64Array:
    """The cluster's total in KAI's units (GPU devices, CPU millicores, memory MB).

    A resource the node list does not give (``UNKNOWN_CAPACITY``) bounds nothing: its total is ``inf``, so
    a queue's unlimited quota of it covers whatever its jobs request.
    """
    totals = [float(nodes["num_gpus"].cast(pl.Float64).fill_null(0.0).sum())]
    for column, factor in (("cpu_milli", 1.0), ("mem_mib", MB_PER_MIB)):
        values = nodes[column].cast(pl.Float64).fill_null(0.0)
        unknown = bool((nodes[column] == UNKNOWN_CAPACITY).any())
        totals.append(math.inf if unknown else float(values.sum()) * factor)
    return np.array(totals)


def kai_preemptibility(jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs`` with ``preemptible`` set by KAI's rule: a priority below 100 (docs/systems.md, "KAI
    Scheduler").

    KAI reads preemptibility from the PriorityClass value alone, so a ``preemptible`` column that says
    otherwise is replaced, and the replacement is logged with its count.
    """
    rule = pl.col("priority") < KAI_NON_PREEMPTIBLE
    changed = jobs.filter(pl.col("preemptible") != rule).height
    if changed:
        log.warning(
            "queues: kai: %d jobs' preemptible column disagrees with KAI's rule (priority < %d is "
            "preemptible); KAI's rule is used",
            changed,
            KAI_NON_PREEMPTIBLE,
        )
    return jobs.with_columns(rule.alias("preemptible"))


def kai_columns(
    queues: KaiQueues, usage: np.ndarray, fair_milli: np.ndarray, share_ppm: np.ndarray
) -> dict[str, np.ndarray]:
    """Per leaf queue and sample, the quota columns of ``queues.parquet`` under KAI.

    Parameters
    ----------
    usage
        ``[resource, queue, sample]`` usage in engine units.
    fair_milli, share_ppm
        ``[queue, sample]``: the queue's GPU fair share in milli-GPU and its dominant resource share x 10^6
        at the session before each sample.

    Returns
    -------
    dict
        ``nominal_gpu``: the GPU ``quota`` (KAI's deserved share; null where unlimited); ``borrowed_gpu``:
        GPUs used above it (over-quota use, what reclaim could take back; 0 under an unlimited quota);
        ``fair_gpu``: the GPU fair share (KAI's division of the cluster this session: quota first, then
        over-quota by priority and weight); ``share``: KAI's dominant resource share, ``max_r allocated_r /
        allocatable_r`` with ``allocatable = max(quota, fair share)`` capped by the limit (the queue order's
        sixth criterion); ``lent_gpu`` is not a KAI notion (null).
    """
    gpu = usage[0].astype(np.float64) / 1000.0
    quota = np.broadcast_to(queues.quota[0, : queues.num_leaves, None], gpu.shape)
    unlimited = quota == KAI_UNLIMITED
    return {
        "nominal_gpu": np.where(unlimited, np.nan, quota),
        "borrowed_gpu": np.where(unlimited, 0.0, np.maximum(0.0, gpu - quota)),
        "fair_gpu": fair_milli.astype(np.float64) / 1000.0,
        "share": share_ppm.astype(np.float64) / 1e6,
    }
