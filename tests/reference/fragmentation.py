"""The reference twin of ``gpureplay.engine.fit.fragmentation`` and ``gpureplay.workload.typical_pods``.

FGD's fragmentation measure (Weng et al., ATC'23; docs/systems.md, "FGD"),
written from the public simulator's rules (hkust-adsl/kubernetes-scheduler-simulator,
``pkg/utils/frag.go``) the most obvious way, with plain lists and loops:

- a task class on a node is in one quadrant (``GetNodePodFrag``): a CPU-only
  class is ``xl_satisfied`` or ``xr_lack_cpu`` by CPU alone; a GPU class whose
  models exclude the node's is ``no_access``; otherwise it is ``q3_satisfied``
  (GPUs and CPU fit), ``q4_lack_cpu``, ``q2_lack_gpu`` or ``q1_lack_both``. The
  GPUs fit when at least ``num_gpu`` of them (at least one) have
  ``free >= gpu_milli`` (``CanNodeHostPodOnGpuMemory``);
- the fragment ``F_n(m)`` is the free milli of the GPUs too small for the class
  when it fits (Q3), and all free milli otherwise (``NodeGpuShareFragAmount``);
- ``F_n = Σ_m p_m F_n(m)``, added bucket by bucket in quadrant order, Q3's
  bucket left out (``FragAmountSumExceptQ3``); ``F = Σ_n F_n``.

:func:`typical_classes` follows ``GetTypicalPods`` over a plain list of pods.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "QUADRANTS",
    "Node",
    "PodShape",
    "TaskClass",
    "cluster_frag",
    "node_frag",
    "pod_frag",
    "quadrant",
    "typical_classes",
]

#: Quadrant names in the simulator's bucket order (``FragRatioDataMap``).
QUADRANTS: tuple[str, ...] = (
    "q1_lack_both",
    "q2_lack_gpu",
    "q3_satisfied",
    "q4_lack_cpu",
    "xl_satisfied",
    "xr_lack_cpu",
    "no_access",
)


@dataclass(frozen=True)
class Node:
    """A node's free resources: milli-CPU, milli-GPU per GPU, and its GPU model code (-1: none)."""

    cpu_free: int
    gpu_free: tuple[int, ...]
    model: int = 0


@dataclass(frozen=True)
class TaskClass:
    """A typical pod: milli-CPU, GPUs, milli-GPU per GPU, accepted model codes (None: any), popularity."""

    cpu_milli: int
    num_gpu: int
    gpu_milli: int
    models: frozenset[int] | None = None
    popularity: float = 1.0


def quadrant(node: Node, task: TaskClass) -> str:
    """The quadrant of ``task`` on ``node`` (a name of :data:`QUADRANTS`)."""
    cpu_enough = node.cpu_free >= task.cpu_milli
    if task.gpu_milli == 0:
        return "xl_satisfied" if cpu_enough else "xr_lack_cpu"
    if task.models is not None and node.model not in task.models:
        return "no_access"
    big_enough = [free for free in node.gpu_free if free >= task.gpu_milli]
    gpus_enough = len(big_enough) >= max(task.num_gpu, 1)
    if gpus_enough:
        return "q3_satisfied" if cpu_enough else "q4_lack_cpu"
    return "q2_lack_gpu" if cpu_enough else "q1_lack_both"


def pod_frag(node: Node, task: TaskClass) -> int:
    """``F_n(m)``: the node's free GPU milli the class cannot use."""
    if quadrant(node, task) == "q3_satisfied":
        return sum(free for free in node.gpu_free if free < task.gpu_milli)
    return sum(node.gpu_free)


def node_frag(node: Node, tasks: Sequence[TaskClass]) -> float:
    """``F_n = Σ_m p_m F_n(m)``, summed per quadrant bucket, then across buckets without Q3."""
    buckets = dict.fromkeys(QUADRANTS, 0.0)
    for task in tasks:
        where = quadrant(node, task)
        # A fitting class's fragment (its too-small GPUs) goes to the lack-GPU bucket.
        bucket = "q2_lack_gpu" if where == "q3_satisfied" else where
        buckets[bucket] += task.popularity * float(pod_frag(node, task))
    total = 0.0
    for name in QUADRANTS:
        if name != "q3_satisfied":
            total += buckets[name]
    return total


def cluster_frag(nodes: Sequence[Node], tasks: Sequence[TaskClass]) -> float:
    """``F = Σ_n F_n`` in node order."""
    total = 0.0
    for node in nodes:
        total += node_frag(node, tasks)
    return total


@dataclass(frozen=True)
class PodShape:
    """One pod as the simulator's ``PodResource`` sees it: the class key."""

    cpu_milli: int
    gpu_milli: int
    num_gpu: int
    gpu_type: str = ""


def typical_classes(
    pods: Sequence[PodShape],
    threshold: float = 95.0,
    step: int = 1,
    include_cpu_pods: bool = True,
    gpu_res_weight: float = 0.0,
) -> list[tuple[PodShape, float]]:
    """The kept classes and their popularity, most popular first (``GetTypicalPods``).

    Count the pods of each shape (a whole-GPU pod ``1 + num_gpu *
    gpu_res_weight`` times when that weight is positive), sort by count, ties
    by the shape's fields compared larger first; add classes ``step`` at a time
    until the kept count reaches ``threshold`` percent of all; popularity is a
    class's count over the kept count (over all when every class is kept).
    """
    counts: dict[PodShape, float] = {}
    total = 0.0
    for pod in pods:
        if not include_cpu_pods and pod.num_gpu == 0:
            continue
        weight = 1.0
        if gpu_res_weight > 0 and pod.gpu_milli == 1000:
            weight = 1.0 + pod.num_gpu * gpu_res_weight
        counts[pod] = counts.get(pod, 0.0) + weight
        total += weight

    def order(item: tuple[PodShape, float]) -> tuple[float, int, int, int, str]:
        shape, count = item
        return (count, shape.cpu_milli, shape.gpu_milli, shape.num_gpu, shape.gpu_type)

    ranked = sorted(counts.items(), key=order, reverse=True)
    expected = threshold * total / 100.0
    kept, cum, block_end = 0, 0.0, 0
    while cum < expected and kept < len(ranked):
        block_end += step
        while kept < block_end and kept < len(ranked):
            cum += ranked[kept][1]
            kept += 1
    if kept >= len(ranked):
        return [(shape, count / total) for shape, count in ranked]
    return [(shape, (count / total) / (cum / total)) for shape, count in ranked[:kept]]
