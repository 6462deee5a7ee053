"""The FGD paper's published packing results, to set beside a packing sweep's own.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent", USENIX ATC'23. The numbers are the artifact's
expected results (hkust-adsl/kubernetes-scheduler-simulator,
``experiments/analysis/expected_results/analysis_allo_discrete.csv``): workload
``openb_pod_list_default`` inflated to 1.3x the GPU capacity (``-tune 1.3``),
pods shuffled (``--shuffle-pod=true``), the GPU nodes of openb (6,212 GPUs),
seeds 42..51. Column ``k`` of that file is the mean allocated GPU share (% of
capacity) over the events whose arrived GPU demand rounds to ``k`` % of the
capacity; the paper plots ``100 - allocated`` as "unallocated GPU (%)".

The seeds are the artifact's seed numbers, but the artifact draws from Go's
``math/rand`` and gpureplay from numpy: seed 42 here is not seed 42 there, so
only statistics over the seeds compare, never one seed with the same-numbered one.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

#: The artifact's seeds (``-tuneseed``), one run each per policy.
SEEDS: tuple[int, ...] = tuple(range(42, 52))

#: GPUs of the cluster the paper packed (openb's GPU nodes).
CAPACITY_GPUS = 6212

#: The paper's policy for each ``scheduler.node_placement`` of gpureplay's presets.
POLICY_OF_PLACEMENT: dict[str, str] = {
    "random": "Random",
    "dot_product": "DotProd",
    "gpu_clustering": "GpuClustering",
    "gpu_packing": "GpuPacking",
    "best_fit_cpu_gpu": "BestFit",
    "fgd": "FGD",
}

#: The paper's policies in its order (least to most allocated); FGD is the paper's own.
POLICIES: tuple[str, ...] = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")

#: Allocated GPU % of capacity at 100 % arrived GPU demand (column 100), per seed 42..51.
ALLOCATED_AT_100: dict[str, tuple[float, ...]] = {
    "Random": (86.17, 86.79, 86.68, 86.33, 86.33, 86.13, 86.73, 85.93, 86.07, 85.87),
    "DotProd": (90.34, 90.56, 90.83, 90.69, 90.55, 90.52, 91.00, 90.68, 90.53, 90.52),
    "GpuClustering": (91.33, 91.69, 91.68, 92.75, 90.62, 91.20, 92.32, 92.09, 91.34, 91.48),
    "GpuPacking": (91.37, 91.78, 91.91, 92.58, 91.12, 91.07, 92.51, 91.83, 91.46, 92.16),
    "BestFit": (92.94, 92.97, 92.89, 92.93, 93.00, 92.84, 92.68, 93.04, 92.64, 92.69),
    "FGD": (95.14, 95.06, 95.29, 95.38, 95.35, 95.14, 95.18, 95.30, 95.15, 95.28),
}

#: Allocated GPU % of capacity at 130 % arrived (column 130, the end of the workload), per seed 42..51.
ALLOCATED_AT_130: dict[str, tuple[float, ...]] = {
    "Random": (87.26, 88.03, 87.83, 87.36, 87.48, 87.41, 87.81, 87.07, 87.31, 87.14),
    "DotProd": (90.54, 90.84, 91.03, 90.89, 90.74, 90.75, 91.28, 90.93, 90.76, 90.73),
    "GpuClustering": (91.53, 91.97, 91.88, 92.96, 90.81, 91.42, 92.60, 92.34, 91.56, 91.71),
    "GpuPacking": (91.57, 92.06, 92.10, 92.79, 91.30, 91.29, 92.78, 92.06, 91.69, 92.38),
    "BestFit": (93.13, 93.25, 93.09, 93.14, 93.19, 93.04, 92.95, 93.21, 92.87, 92.89),
    "FGD": (95.29, 95.32, 95.44, 95.48, 95.49, 95.27, 95.37, 95.47, 95.35, 95.43),
}

#: Mean over seeds of :data:`ALLOCATED_AT_100` as published (two decimals).
MEAN_ALLOCATED_AT_100: dict[str, float] = {
    "Random": 86.30,
    "DotProd": 90.62,
    "GpuClustering": 91.65,
    "GpuPacking": 91.78,
    "BestFit": 92.86,
    "FGD": 95.23,
}

#: Mean over seeds of :data:`ALLOCATED_AT_130` as published (two decimals).
MEAN_ALLOCATED_AT_130: dict[str, float] = {
    "Random": 87.47,
    "DotProd": 90.85,
    "GpuClustering": 91.88,
    "GpuPacking": 92.00,
    "BestFit": 93.08,
    "FGD": 95.39,
}

#: The paper's headline: FGD leaves up to 49 % fewer GPUs unallocated (vs DotProd: 4.77 vs 9.38 %).
HEADLINE = (
    "The paper's headline: FGD leaves up to 49% fewer GPUs unallocated than the baselines "
    "(at 100% arrived, 4.77% of GPUs unallocated vs DotProd's 9.38%, about 290 GPUs of 6,212)."
)

#: What a run must have been configured with to be the paper's setting: (key, test, what it means).
TRACE_SUFFIX = "openb_pod_list_default.csv.gz"
CLUSTER_NAME = "openb_node_list_gpu_node"
TUNE = 1.3

#: The caveat every comparison with the published numbers carries.
SEED_NOTE = (
    "The seeds are the artifact's seed numbers (42..51), but gpureplay draws from numpy's generator, "
    "not Go's math/rand: a seed here is not the same shuffle as the same-numbered seed there, so compare "
    "means (and spreads) over seeds, not single seeds."
)


@dataclass(frozen=True)
class Published:
    """One policy's published values (percent of the cluster's GPUs), from the per-seed columns.

    Attributes
    ----------
    policy
        The paper's name (``"FGD"``).
    unallocated_at_100
        ``100 -`` the published mean allocated share at 100 % arrived.
    unallocated_at_100_median, unallocated_at_100_min, unallocated_at_100_max
        The same over the ten seeds' values.
    unallocated_at_130
        ``100 -`` the published mean at 130 % arrived (the end of the workload).
    """

    policy: str
    unallocated_at_100: float
    unallocated_at_100_median: float
    unallocated_at_100_min: float
    unallocated_at_100_max: float
    unallocated_at_130: float


def published(policy: str) -> Published:
    """The published values of one of :data:`POLICIES`.

    Examples
    --------
    >>> p = published("FGD")
    >>> round(p.unallocated_at_100, 2), round(p.unallocated_at_100_max, 2), round(p.unallocated_at_130, 2)
    (4.77, 4.94, 4.61)
    """
    unallocated = [100.0 - v for v in ALLOCATED_AT_100[policy]]
    return Published(
        policy=policy,
        unallocated_at_100=100.0 - MEAN_ALLOCATED_AT_100[policy],
        unallocated_at_100_median=statistics.median(unallocated),
        unallocated_at_100_min=min(unallocated),
        unallocated_at_100_max=max(unallocated),
        unallocated_at_130=100.0 - MEAN_ALLOCATED_AT_130[policy],
    )


def policy_of(keys: Mapping[str, str]) -> str | None:
    """The paper's policy a run's ``scheduler.node_placement`` stands for, or None.

    Examples
    --------
    >>> placement = "scheduler.node_placement"
    >>> policy_of({placement: "dot_product"}), policy_of({placement: "spread"})
    ('DotProd', None)
    """
    return POLICY_OF_PLACEMENT.get(keys.get("scheduler.node_placement", ""))


def _true(text: str | None) -> bool:
    return (text or "").strip().lower() in ("true", "1", "yes")


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def setting_mismatch(keys: Mapping[str, str]) -> str | None:
    """Why a run is not in the paper's setting, or None when it is (its policy aside).

    The paper's setting: openb's default pod list, inflated to 1.3x the GPU
    capacity, shuffled, on openb's GPU nodes. ``keys`` are a run's config keys as
    text (:class:`gpureplay.report.collect.RunSummary`).

    Examples
    --------
    >>> keys = {"trace.path": "openb/openb_pod_list_default.csv.gz", "packing.tune": "1.3",
    ...         "cluster.path": "openb/openb_node_list_gpu_node.csv.gz", "packing.shuffle": "True"}
    >>> setting_mismatch(keys) is None, setting_mismatch({**keys, "packing.tune": "1.0"})
    (True, 'packing.tune is 1.0, not 1.3')
    """
    trace = keys.get("trace.path") or ""
    if not trace.endswith(TRACE_SUFFIX):
        return f"trace.path is {trace or 'unset'}, not openb's {TRACE_SUFFIX}"
    tune = _number(keys.get("packing.tune"))
    if tune is None or abs(tune - TUNE) > 1e-9:
        return f"packing.tune is {keys.get('packing.tune', 'unset')}, not {TUNE}"
    cluster = keys.get("cluster.path") or ""
    if CLUSTER_NAME not in cluster:
        return f"cluster.path is {cluster or 'unset'}, not openb's {CLUSTER_NAME}"
    if not _true(keys.get("packing.shuffle")):
        return "packing.shuffle is off (the artifact shuffles the pods)"
    return None


def paper_policy(keys: Mapping[str, str]) -> str | None:
    """The paper's policy to set beside a run: its policy when in the paper's setting, else None."""
    return policy_of(keys) if setting_mismatch(keys) is None else None


__all__ = [
    "ALLOCATED_AT_100",
    "ALLOCATED_AT_130",
    "CAPACITY_GPUS",
    "HEADLINE",
    "MEAN_ALLOCATED_AT_100",
    "MEAN_ALLOCATED_AT_130",
    "POLICIES",
    "POLICY_OF_PLACEMENT",
    "SEEDS",
    "SEED_NOTE",
    "Published",
    "paper_policy",
    "policy_of",
    "published",
    "setting_mismatch",
]
