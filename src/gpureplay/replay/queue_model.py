"""The queue model of a replay (``scheduler.queues``): its config checks and its quota tree.

Under ``queues: kueue`` every job's ``queue`` names a ClusterQueue (directly, or through a LocalQueue of
the manifests); :func:`kueue_quotas` builds the tree from ``scheduler.manifests`` or from quotas derived
from the trace (:mod:`gpureplay.queues.quotas`), and :func:`tenant_jobs` rewrites the jobs' queues to
their ClusterQueues, the tenants the engine counts.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path

import polars as pl

from gpureplay.errors import InputError
from gpureplay.paths import bundled_traces_dir, resolve_data_path
from gpureplay.queues.kai_actions import kai_action_bits, kai_actions
from gpureplay.queues.kai_queues import KaiQueues, MinRuntimeArgs, generated_kai_queues, manifest_kai_queues
from gpureplay.queues.kueue_preemption import preemption_problems, preempts, uniform_table
from gpureplay.queues.kueue_quota import KueueQuotas, generated_quotas, manifest_quotas
from gpureplay.queues.manifests import ManifestSet, read_manifests
from gpureplay.queues.quotas import gpu_time_quotas, quota_of_each_queue, read_vc_nodes, vc_node_quotas
from gpureplay.queues.volcano_actions import VolcanoActions, volcano_actions, volcano_preemptable
from gpureplay.queues.volcano_queues import VolcanoQueues, generated_volcano_queues, manifest_volcano_queues
from gpureplay.schedulers.policy import (
    Backfill,
    BorrowWithinCohort,
    FairSharingStrategies,
    GangMode,
    GpuSharing,
    KaiReclaimResolveMethod,
    MigStrategy,
    MissingQuota,
    Policy,
    Preemption,
    QueueModel,
    QueueOrder,
    QuotaSource,
    ReclaimWithinCohort,
    WithinClusterQueue,
)

__all__ = [
    "DEFAULT_OVERCOMMIT",
    "kai_queues",
    "kueue_quotas",
    "queue_model_problems",
    "tenant_jobs",
    "volcano_queues",
]

#: Volcano's overcommit plugin's default ``overcommit-factor`` (``plugins/overcommit/overcommit.go``).
DEFAULT_OVERCOMMIT = 1.2
#: Kueue's waitForPodsReady.requeuingStrategy defaults (backoffBaseSeconds, backoffMaxSeconds).
DEFAULT_READY_BACKOFF_BASE = 60.0
DEFAULT_READY_BACKOFF_MAX = 3600.0

log = logging.getLogger(__name__)


def _name(value: object) -> str:
    return str(getattr(value, "name", value))


def queue_model_problems(
    policy: Policy,
    order: QueueOrder,
    gang: GangMode,
    backfill: Backfill,
    preemption: Preemption,
    sharing: GpuSharing,
    mig: MigStrategy,
) -> list[tuple[str, str]]:
    """``(config key, message)`` for each queue-model setting the replay cannot honour.

    Keys read only under a queue model are refused without one (a key the engine ignored would be a
    silent no-op); a queue model is refused with what it does not model yet.
    """
    model = QueueModel[_name(policy.queues)]
    source = QuotaSource[_name(policy.quotas)]
    problems: list[tuple[str, str]] = []
    if model is not QueueModel.volcano and policy.overcommit_factor != DEFAULT_OVERCOMMIT:
        problems.append(("scheduler.overcommit_factor", "is read under queues: volcano only"))
    if model not in (QueueModel.volcano, QueueModel.kai) and policy.actions is not None:
        problems.append(
            ("scheduler.actions", "is read under queues: volcano or kai only (the scheduler's actions)")
        )
    if model is not QueueModel.volcano and policy.preemptable_plugins is not None:
        problems.append(
            (
                "scheduler.preemptable_plugins",
                "is read under queues: volcano only, with the preempt action in scheduler.actions",
            )
        )
    if model is not QueueModel.kai:
        problems += [
            (f"scheduler.{key}", "is KAI's minruntime plugin argument: read under queues: kai only")
            for key, unset in _kai_keys_unset(policy)
            if not unset
        ]
    if model is QueueModel.none:
        for key, unset in (
            ("quotas", source is QuotaSource.none),
            ("manifests", policy.manifests is None),
            ("quota_missing", MissingQuota[_name(policy.quota_missing)] is MissingQuota.error),
            *_kueue_keys_unset(policy),
        ):
            if not unset:
                problems.append(
                    (f"scheduler.{key}", "is read under a queue model only: set scheduler.queues")
                )
        return problems
    system = {QueueModel.kueue: "Kueue", QueueModel.volcano: "Volcano", QueueModel.kai: "KAI"}[model]
    if source is QuotaSource.none:
        problems.append(
            (
                "scheduler.quotas",
                f"queues: {model.name} needs quotas: manifests, gpu_time_share or philly_vc_nodes",
            )
        )
    if (source is QuotaSource.manifests) != (policy.manifests is not None):
        problems.append(
            (
                "scheduler.manifests",
                "give a manifests path exactly when quotas: manifests"
                f" (quotas: {source.name}, manifests: {policy.manifests!r})",
            )
        )
    if model is QueueModel.volcano:
        problems += _volcano_key_problems(policy)
    elif model is QueueModel.kai:
        problems += [
            (f"scheduler.{key}", "is Kueue's: read under queues: kueue only")
            for key, unset in _kueue_keys_unset(policy)
            if not unset
        ]
        try:
            kai_actions(policy.actions)
        except ValueError as error:
            problems.append(("scheduler.actions", str(error)))
        else:
            problems += _kai_min_runtime_problems(policy)
    elif source is QuotaSource.manifests:
        for key, unset in _preemption_keys_unset(policy):
            if not unset:
                problems.append(
                    (
                        f"scheduler.{key}",
                        "applies to derived quotas only: the manifests state each ClusterQueue's "
                        "spec.preemption",
                    )
                )
    elif policy.borrow_max_priority is not None and _name(policy.borrow_within_cohort) == "never":
        problems.append(
            ("scheduler.borrow_max_priority", "is read with borrow_within_cohort: lower_priority only")
        )
    strategies = _name(policy.fair_sharing_strategies)
    if model is QueueModel.kueue and not policy.fair_sharing and strategies != "both":
        problems.append(
            (
                "scheduler.fair_sharing_strategies",
                "is read with fair_sharing: true only (Kueue's fairSharing.preemptionStrategies)",
            )
        )
    if model is QueueModel.kueue:
        problems += _pods_ready_problems(policy)
    if gang is not GangMode.gang:
        problems.append(("scheduler.gang", f"{system} admits whole workloads (gangs): use gang: gang"))
    if backfill is not Backfill.skip or policy.backfill_depth != 0:
        passes = (
            "Kueue's cycle passes over inadmissible heads (BestEffortFIFO) or blocks per ClusterQueue "
            "(StrictFIFO, from the manifests)"
            if model is QueueModel.kueue
            else f"{system}'s allocate action drops a job that does not fit and goes on"
            + (" (dequeueStrategy traverse)" if model is QueueModel.volcano else "")
        )
        problems.append(("scheduler.backfill", f"{passes}: use backfill: skip with backfill_depth: 0"))
    if order is not QueueOrder.priority:
        problems.append(
            (
                "scheduler.queue_order",
                f"{system} orders a queue's jobs by priority, then creation time: use priority "
                f"(found {order.name})",
            )
        )
    if preemption is not Preemption.none:
        how = (
            "Kueue preempts by its ClusterQueues' own policies: use preemption: none with "
            "within_cluster_queue / reclaim_within_cohort (or the manifests' spec.preemption)"
            if model is QueueModel.kueue
            else "Volcano evicts by its own actions: use preemption: none with scheduler.actions (within a "
            "queue: 'enqueue, allocate, preempt, backfill'; between queues: 'enqueue, allocate, reclaim, "
            "backfill'; both: 'enqueue, allocate, preempt, reclaim, backfill')"
            if model is QueueModel.volcano
            else "KAI evicts by its own actions: use preemption: none with scheduler.actions ('allocate, "
            "reclaim, preempt': reclaim between queues, preempt within a queue)"
        )
        problems.append(("scheduler.preemption", how))
    problems += _topology_problems(policy, model)
    if sharing is not GpuSharing.none or mig is not MigStrategy.none:
        problems.append(
            (
                "scheduler.queues",
                f"{system} queues over shared GPUs or MIG resources are not modelled: use gpu_sharing: "
                "none and mig_strategy: none",
            )
        )
    return problems


#: Where each system's topology-aware placement runs: the queue model that owns it, and why another
#: queue model cannot drive it.
_TAS_OWNER = {
    "kueue": (
        QueueModel.kueue,
        "Kueue's TAS assigns a workload's topology inside Kueue's own admission (a ResourceFlavor's "
        "topologyName; quota and topology assignment admitted together, KEP-2724)",
    ),
    "volcano": (
        QueueModel.volcano,
        "Volcano's HyperNode placement is a plugin (network-topology-aware) of the Volcano scheduler's "
        "own sessions, which also run its queues",
    ),
    "kai": (
        QueueModel.kai,
        "KAI's topology plugin runs inside KAI's scheduler sessions (its SubsetNodesFn), which also run "
        "its queues",
    ),
}


def _topology_problems(policy: Policy, model: QueueModel) -> list[tuple[str, str]]:
    """A queue model with topology-aware placement: the pairs and actions the real systems run together.

    Notes
    -----
    Each system's topology-aware placement lives inside its own scheduler: Kueue's TAS in Kueue's admission
    (kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner/flavorassigner.go``, KEP-2724), Volcano's
    HyperNode plugin in Volcano's session (``pkg/scheduler/plugins/network-topology-aware``), KAI's
    topology plugin in KAI's session (``pkg/scheduler/plugins/topology``). So a system's topology pairs with
    its own queues only. Kueue's TAS assigns the pods' nodes at admission, so ``kueue_admission: quota``
    (kube-scheduler places the pods later) does not apply; KAI's reclaim and preempt simulate the
    preemptor's allocation through its allocate with the topology plugin's ``SubsetNodesFn``
    (``actions/common/action.go`` ``TryToVirtuallyAllocatePreemptorAndGetVictims`` →
    ``actions/common/allocate.go``, v0.9.3+), which the engine's KAI solver (nodes' free pods counted one
    by one) does not model.
    """
    topology = _name(policy.topology_aware)
    if topology == "none":
        return []
    owner, why = _TAS_OWNER[topology]
    if owner is not model:
        return [
            (
                "scheduler.topology_aware",
                f"topology_aware: {topology} does not run under queues: {model.name}: {why}; use "
                f"topology_aware: {model.name} (or none) with queues: {model.name}",
            )
        ]
    problems: list[tuple[str, str]] = []
    if model is QueueModel.kueue and _name(policy.kueue_admission) == "quota":
        problems.append(
            (
                "scheduler.kueue_admission",
                "Kueue's TAS assigns the pods' nodes at admission (the TopologyAssignment), so admission "
                "by quota alone with kube-scheduler placing the pods later does not apply: use "
                "kueue_admission: placement with topology_aware: kueue",
            )
        )
    if model is QueueModel.kai:
        try:
            reclaim, preempt = kai_actions(policy.actions)
        except ValueError:
            return problems  # said under scheduler.actions
        if reclaim or preempt:
            problems.append(
                (
                    "scheduler.actions",
                    "KAI's reclaim and preempt with topology_aware: kai are not modelled: KAI's solvers "
                    "simulate the preemptor's allocation through its allocate action with the topology "
                    "plugin's SubsetNodesFn (actions/common/allocate.go), which the replay's KAI solver, "
                    "counting free pods node by node, does not do (it would evict victims for a job that "
                    "then fits no domain); use scheduler.actions: allocate with topology_aware: kai",
                )
            )
    return problems


def _volcano_key_problems(policy: Policy) -> list[tuple[str, str]]:
    problems = [
        (f"scheduler.{key}", "is Kueue's: read under queues: kueue only")
        for key, unset in _kueue_keys_unset(policy)
        if not unset
    ]
    try:
        preempt, _ = volcano_actions(policy.actions)
    except ValueError as error:
        problems.append(("scheduler.actions", str(error)))
        preempt = True  # say what is wrong with preemptable_plugins too
    if policy.preemptable_plugins is not None and not preempt:
        problems.append(
            (
                "scheduler.preemptable_plugins",
                "is read by Volcano's preempt action only: add preempt to scheduler.actions (e.g. 'enqueue, "
                "allocate, preempt, backfill')",
            )
        )
    try:
        volcano_preemptable(policy.preemptable_plugins)
    except ValueError as error:
        problems.append(("scheduler.preemptable_plugins", str(error)))
    factor = policy.overcommit_factor
    if not (math.isfinite(factor) and factor >= 1.0):
        problems.append(
            (
                "scheduler.overcommit_factor",
                f"must be a number >= 1 (Volcano's overcommit-factor; found {factor})",
            )
        )
    return problems


def _kai_keys_unset(policy: Policy) -> list[tuple[str, bool]]:
    """KAI's minruntime plugin arguments, each with whether it is at KAI's default."""
    method = KaiReclaimResolveMethod[_name(policy.kai_reclaim_resolve_method)]
    return [
        ("kai_default_preempt_min_runtime", float(policy.kai_default_preempt_min_runtime) == 0.0),
        ("kai_default_reclaim_min_runtime", float(policy.kai_default_reclaim_min_runtime) == 0.0),
        ("kai_reclaim_resolve_method", method is KaiReclaimResolveMethod.lca),
    ]


def _kai_min_runtime_problems(policy: Policy) -> list[tuple[str, str]]:
    """The minruntime plugin's arguments: seconds >= 0, each read by an action in ``scheduler.actions``."""
    reclaim, preempt = kai_actions(policy.actions)
    problems: list[tuple[str, str]] = []
    for key, action, runs in (
        ("kai_default_preempt_min_runtime", "preempt", preempt),
        ("kai_default_reclaim_min_runtime", "reclaim", reclaim),
    ):
        value = float(getattr(policy, key))
        if not (math.isfinite(value) and value >= 0):
            problems.append((f"scheduler.{key}", f"must be seconds >= 0 (found {value:g})"))
        elif value > 0 and not runs:
            problems.append(
                (f"scheduler.{key}", f"is read by KAI's {action} action: add it to scheduler.actions")
            )
    method = KaiReclaimResolveMethod[_name(policy.kai_reclaim_resolve_method)]
    if method is not KaiReclaimResolveMethod.lca and not reclaim:
        problems.append(
            (
                "scheduler.kai_reclaim_resolve_method",
                "is read by KAI's reclaim action: add it to scheduler.actions",
            )
        )
    return problems


def kai_min_runtime_args(policy: Policy) -> MinRuntimeArgs:
    """The minruntime plugin's arguments of ``policy`` (checked by :func:`queue_model_problems`)."""
    return MinRuntimeArgs(
        default_preempt=float(policy.kai_default_preempt_min_runtime),
        default_reclaim=float(policy.kai_default_reclaim_min_runtime),
        method=KaiReclaimResolveMethod[_name(policy.kai_reclaim_resolve_method)],
    )


def _kueue_keys_unset(policy: Policy) -> list[tuple[str, bool]]:
    return [
        ("quota_cohort", bool(policy.quota_cohort)),
        ("fair_sharing", not policy.fair_sharing),
        ("fair_sharing_strategies", _name(policy.fair_sharing_strategies) == "both"),
        *_preemption_keys_unset(policy),
        ("kueue_admission", _name(policy.kueue_admission) == "placement"),
        *_pods_ready_keys_unset(policy),
    ]


def _pods_ready_keys_unset(policy: Policy) -> list[tuple[str, bool]]:
    return [
        ("pods_ready_timeout", policy.pods_ready_timeout is None),
        ("pods_ready_block_admission", not policy.pods_ready_block_admission),
        ("pods_ready_backoff_limit", policy.pods_ready_backoff_limit is None),
        ("pods_ready_backoff_base", policy.pods_ready_backoff_base == DEFAULT_READY_BACKOFF_BASE),
        ("pods_ready_backoff_max", policy.pods_ready_backoff_max == DEFAULT_READY_BACKOFF_MAX),
    ]


def _pods_ready_problems(policy: Policy) -> list[tuple[str, str]]:
    # Kueue's waitForPodsReady (configuration validation: timeout and the back-off's numbers >= 0).
    problems: list[tuple[str, str]] = []
    quota_only = _name(policy.kueue_admission) == "quota"
    timeout = policy.pods_ready_timeout
    if timeout is None:
        problems += [
            (f"scheduler.{key}", "is read with pods_ready_timeout set only (Kueue's waitForPodsReady)")
            for key, unset in _pods_ready_keys_unset(policy)[1:]
            if not unset
        ]
    elif not quota_only:
        problems.append(
            (
                "scheduler.pods_ready_timeout",
                "needs kueue_admission: quota (with placement at admission a job's pods are all placed, "
                "so Ready, when it is admitted)",
            )
        )
    elif not (math.isfinite(timeout) and timeout >= 0):
        problems.append(
            ("scheduler.pods_ready_timeout", f"must be a number of seconds >= 0 (found {timeout})")
        )
    elif timeout == 0 and min(policy.pods_ready_backoff_base, policy.pods_ready_backoff_max) == 0:
        problems.append(
            (
                "scheduler.pods_ready_timeout",
                "0 with a back-off of 0 s (pods_ready_backoff_base or _max) evicts and requeues a job that "
                "cannot be placed at once without end at one instant: give either a positive value",
            )
        )
    limit = policy.pods_ready_backoff_limit
    if limit is not None and limit < 0:
        problems.append(("scheduler.pods_ready_backoff_limit", f"must be >= 0 or null (found {limit})"))
    for key, value in (
        ("pods_ready_backoff_base", policy.pods_ready_backoff_base),
        ("pods_ready_backoff_max", policy.pods_ready_backoff_max),
    ):
        if not (math.isfinite(value) and value >= 0):
            problems.append((f"scheduler.{key}", f"must be a number of seconds >= 0 (found {value})"))
    if quota_only and _name(policy.topology_manager) != "none":
        problems.append(
            (
                "scheduler.topology_manager",
                "kubelet admission of pods placed one by one after a Kueue admission by quota is not "
                "modelled: use topology_manager: none with kueue_admission: quota",
            )
        )
    if quota_only and policy.numa_aware_scheduler:
        problems.append(
            (
                "scheduler.numa_aware_scheduler",
                "NUMA-aware placement of pods after a Kueue admission by quota is not modelled",
            )
        )
    return problems


def _preemption_keys_unset(policy: Policy) -> list[tuple[str, bool]]:
    return [
        ("within_cluster_queue", _name(policy.within_cluster_queue) == "never"),
        ("reclaim_within_cohort", _name(policy.reclaim_within_cohort) == "never"),
        ("borrow_within_cohort", _name(policy.borrow_within_cohort) == "never"),
        ("borrow_max_priority", policy.borrow_max_priority is None),
    ]


def kueue_quotas(policy: Policy, jobs: pl.DataFrame, nodes: pl.DataFrame) -> KueueQuotas | None:
    """The Kueue quota tree of a replay (``None`` unless ``scheduler.queues: kueue``).

    Raises
    ------
    InputError
        On unreadable or unmodelled manifests, or a queue without a quota (naming file, document and
        field, or the job row).
    """
    if QueueModel[_name(policy.queues)] is not QueueModel.kueue:
        return None
    source = QuotaSource[_name(policy.quotas)]
    manifests: ManifestSet | None = None
    if source is QuotaSource.manifests:
        manifests, path = _read_manifests(policy)
        models = sorted(set(nodes.filter(pl.col("num_gpus") > 0)["gpu_model"].drop_nulls().to_list()))
        quotas = manifest_quotas(manifests, jobs, models, path)
    else:
        per_queue, described = _derived_per_queue(policy, jobs, nodes)
        quotas = generated_quotas(
            per_queue,
            cohort=bool(policy.quota_cohort),
            source=described,
        )
    if source is not QuotaSource.manifests:
        table = uniform_table(
            quotas.num_cluster_queues,
            WithinClusterQueue[_name(policy.within_cluster_queue)],
            ReclaimWithinCohort[_name(policy.reclaim_within_cohort)],
            BorrowWithinCohort[_name(policy.borrow_within_cohort)],
            policy.borrow_max_priority,
        )
        quotas = dataclasses.replace(quotas, preemption=table)
    quotas = dataclasses.replace(
        quotas,
        fair_sharing=bool(policy.fair_sharing),
        fair_strategies=FairSharingStrategies[_name(policy.fair_sharing_strategies)],
    )
    _refuse_unmodelled_preemption(quotas, manifests)
    if quotas.fair_strategies is not FairSharingStrategies.both and not preempts(quotas):
        # Read only by a preempting ClusterQueue: with none, a chosen strategy would change nothing.
        raise InputError.single(
            "is read when some ClusterQueue may preempt (within_cluster_queue / reclaim_within_cohort, or "
            "the manifests' spec.preemption); none does here",
            "config",
            column="scheduler.fair_sharing_strategies",
        )
    log.info(
        "queues: kueue%s, %d ClusterQueues (%s), %s",
        " with fair sharing" if quotas.fair_sharing else "",
        quotas.num_cluster_queues,
        quotas.source,
        _cohorts_described(quotas),
    )
    return quotas


def _cohorts_described(quotas: KueueQuotas) -> str:
    cohorts = len(quotas.names) - quotas.num_cluster_queues
    if cohorts == 0:
        return "no cohort"
    roots = int((quotas.parent[quotas.num_cluster_queues :] < 0).sum())
    if cohorts == roots:
        return "one cohort" if cohorts == 1 else f"{cohorts} cohorts"
    return f"{cohorts} cohorts in {'a tree' if roots == 1 else f'{roots} trees'}"


def volcano_queues(policy: Policy, jobs: pl.DataFrame, nodes: pl.DataFrame) -> VolcanoQueues | None:
    """Volcano's queues of a replay (``None`` unless ``scheduler.queues: volcano``).

    Raises
    ------
    InputError
        On unreadable or unmodelled manifests, or a job whose queue names no queue (naming file, document
        and field, or the job row).
    """
    if QueueModel[_name(policy.queues)] is not QueueModel.volcano:
        return None
    factor = float(policy.overcommit_factor)
    preempt, reclaim = volcano_actions(policy.actions)
    actions = VolcanoActions(preempt, reclaim, volcano_preemptable(policy.preemptable_plugins))
    if QuotaSource[_name(policy.quotas)] is QuotaSource.manifests:
        manifests, path = _read_manifests(policy)
        queues = manifest_volcano_queues(manifests, jobs, overcommit=factor, source=path, actions=actions)
    else:
        per_queue, described = _derived_per_queue(policy, jobs, nodes)
        queues = generated_volcano_queues(
            per_queue, overcommit=factor, source=f"weights from {described}", actions=actions
        )
    log.info(
        "queues: volcano, %d queues (%s), overcommit-factor %g, actions %s",
        len(queues.names),
        queues.source,
        factor,
        actions.describe(),
    )
    return queues


def kai_queues(policy: Policy, jobs: pl.DataFrame, nodes: pl.DataFrame) -> KaiQueues | None:
    """KAI's queues of a replay (``None`` unless ``scheduler.queues: kai``).

    Raises
    ------
    InputError
        On unreadable or unmodelled manifests, or a job whose queue names no leaf queue (naming file,
        document and field, or the job row).
    """
    if QueueModel[_name(policy.queues)] is not QueueModel.kai:
        return None
    if QuotaSource[_name(policy.quotas)] is QuotaSource.manifests:
        manifests, path = _read_manifests(policy)
        queues = manifest_kai_queues(manifests, jobs, source=path, min_runtime=kai_min_runtime_args(policy))
    else:
        per_queue, described = _derived_per_queue(policy, jobs, nodes)
        queues = generated_kai_queues(
            per_queue, source=f"GPU quotas from {described}", min_runtime=kai_min_runtime_args(policy)
        )
    queues = dataclasses.replace(queues, actions=kai_action_bits(policy.actions))
    if queues.actions:
        _refuse_fractional(jobs)
    log.info(
        "queues: kai, %d leaf queues of %d (%s), actions %s",
        queues.num_leaves,
        len(queues.names),
        queues.source,
        policy.actions or "allocate",
    )
    return queues


def _refuse_fractional(jobs: pl.DataFrame) -> None:
    """KAI's reclaim and preempt actions count pods on whole free GPUs: a fractional GPU pod is refused."""
    numbered = jobs if "source_row" in jobs.columns else jobs.with_row_index("source_row", offset=1)
    bad = numbered.filter(pl.col("gpu_milli") % 1000 != 0)
    if bad.height:
        first = bad.row(0, named=True)
        raise InputError.single(
            f"gpu_milli {first['gpu_milli']} is a fraction of a GPU ({bad.height:,} such jobs): KAI's "
            "reclaim and preempt actions (scheduler.actions) are modelled for whole-GPU pods; drop them from "
            "scheduler.actions or replay whole-GPU jobs",
            "jobs",
            row=int(first["source_row"]),
            column="gpu_milli",
        )


def _read_manifests(policy: Policy) -> tuple[ManifestSet, str]:
    """The manifests at ``scheduler.manifests`` and their path, the fields ignored logged."""
    path = manifest_path(policy)
    manifests = read_manifests(path)
    for ignored in manifests.ignored:
        log.info("manifests: ignored (does not change scheduling): %s", ignored)
    return manifests, str(path)


def _derived_per_queue(
    policy: Policy, jobs: pl.DataFrame, nodes: pl.DataFrame
) -> tuple[dict[str, float], str]:
    """Each trace queue's derived GPU quota (``scheduler.quotas``, ``quota_missing``), and its derivation."""
    derived, described = _derived_quotas(QuotaSource[_name(policy.quotas)], jobs, nodes)
    missing = MissingQuota[_name(policy.quota_missing)]
    return quota_of_each_queue(jobs, derived, "zero" if missing is MissingQuota.zero else "error"), described


def manifest_path(policy: Policy) -> Path:
    """``scheduler.manifests`` as read: a folder whole, a file not found here looked up in the data roots.

    Raises
    ------
    InputError
        Naming ``scheduler.manifests`` when it is empty (``Path("")`` is the current folder, which
        would be read recursively, run folders and all) or names nothing that exists.
    """
    text = str(policy.manifests)
    if not text.strip():
        raise InputError.config("is empty: give a manifest file or a folder of them", "scheduler.manifests")
    given = Path(text).expanduser()
    if given.is_dir():
        return given
    try:
        return resolve_data_path(given, "manifest file or folder")
    except FileNotFoundError as err:
        raise InputError.config(str(err), "scheduler.manifests") from None


def _derived_quotas(
    source: QuotaSource, jobs: pl.DataFrame, nodes: pl.DataFrame
) -> tuple[dict[str, float], str]:
    """Each trace queue's quota in GPUs from a declared source, and how it was derived."""
    if source is QuotaSource.gpu_time_share:
        total = int(nodes["num_gpus"].sum())
        return _gpu_time_or_even(jobs, total), f"gpu_time_share of {total:,} GPUs"
    if source is QuotaSource.philly_vc_nodes:
        path = bundled_traces_dir() / "philly" / "philly_vc_nodes.csv"
        return vc_node_quotas(read_vc_nodes(path)), f"philly_vc_nodes ({path.name}) x 8 GPUs"
    raise InputError.single("a queue model needs quotas", "config", column="scheduler.quotas")


def _refuse_unmodelled_preemption(quotas: KueueQuotas, manifests: ManifestSet | None) -> None:
    problems = preemption_problems(quotas)
    if not problems:
        return
    if manifests is None:
        # Derived quotas give every ClusterQueue the same policies: the first problem stands for all.
        _, key, message = problems[0]
        raise InputError.single(message, "config", column=f"scheduler.{key}")
    by_name = {cq.name: cq for cq in manifests.tree.cluster_queues}
    field = {"borrow_within_cohort": "spec.preemption.borrowWithinCohort"}
    raise InputError(
        [
            by_name[quotas.names[q]].origin.problem(message, field.get(key, "spec.preemption"))
            for q, key, message in problems
        ]
    )


def _gpu_time_or_even(jobs: pl.DataFrame, total: int) -> dict[str, float]:
    # Jobs that hold no GPU-time (CPU-only) are not limited by GPU quotas: an even split stands in.
    held = (pl.col("num_pods").cast(pl.Float64) * pl.col("gpu_milli") * pl.col("duration")).sum()
    if jobs.height and jobs.select(held).item() > 0:
        return gpu_time_quotas(jobs, total)
    queues = sorted(set(jobs["queue"].to_list())) or ["default"]
    log.warning("quotas: gpu_time_share: the jobs hold no GPU-time; %d GPUs split evenly", total)
    return {q: total / len(queues) for q in queues}


def tenant_jobs(jobs: pl.DataFrame, quotas: KueueQuotas | None) -> pl.DataFrame:
    """``jobs`` with each ``queue`` replaced by its ClusterQueue (unchanged without a queue model)."""
    if quotas is None:
        return jobs
    return jobs.with_columns(pl.col("queue").replace_strict(dict(quotas.queue_map), return_dtype=pl.String))
