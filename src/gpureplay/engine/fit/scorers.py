"""The scorers' registry: every node and GPU scorer by name, its code and what it may be used for.

Plain Python, without numba: the config check reads it
(:func:`gpureplay.replay.policy_checks.policy_problems`) before anything compiles, and the kernels of
:mod:`gpureplay.engine.fit.scoring` take their codes from it. The functions named below are that
module's kernels.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScorerEntry:
    """A scorer as the replay knows it: its policy name and what it may be used for.

    Its kernel branch is in :func:`node_score` (and :func:`gpu_score` when ``ranks_gpus``), its
    reference twin in ``tests/reference/scoring.py``; its code is its position in :data:`REGISTRY`.

    Attributes
    ----------
    name
        The name a policy gives ``node_placement`` / ``gpu_placement``.
    system
        The scheduler or paper whose rule it is.
    ranks_gpus
        Also chooses the GPU of a shared pod (``gpu_placement``).
    task_classes
        Reads the workload's task classes (the FGD paper's scorers: :func:`uses_tasks`).
    takes_replicas
        May rank nodes whose GPUs are shared by replicas (time-slicing, MPS); the other sharing
        systems' scorers would read replica devices as their own GPUs.
    """

    name: str
    system: str
    ranks_gpus: bool = False
    task_classes: bool = False
    takes_replicas: bool = False


#: Every scorer, in code order; the one list the policy check, the kernels' codes and the derived
#: tuples below come from. ``first_fit``: lowest index. ``best_fit``: least free GPU milli left on
#: the node (GPU) after placing (binpack: Volcano ``binpack``, KAI ``gpupack``, gpushare's bind).
#: ``worst_fit``: most (spread: kube-scheduler ``LeastAllocated``, KAI ``gpuspread``). ``random``:
#: uniform among the candidates. ``balanced_allocation``: kube-scheduler's
#: ``NodeResourcesBalancedAllocation`` over GPU, CPU and memory (see :func:`balance`).
#: ``fgd``: Fragmentation Gradient Descent (Weng et al., ATC'23): the placement that most
#: reduces (least increases) the node's expected fragmentation (see :func:`fgd_choice`).
#: ``dot_product``, ``gpu_packing``, ``gpu_clustering``, ``best_fit_cpu_gpu``: the FGD paper's
#: baselines as its simulator scores them (see :func:`baseline_score`).
#: ``hami_binpack``, ``hami_spread``: HAMi's node and device policies (see :func:`hami_node`,
#: :func:`hami_gpu`). ``kai_binpack``: KAI Scheduler's node order for GPU pods (see :func:`kai_node`).
#: ``best_fit_memory``: least free GPU memory left after placing (gpushare-scheduler-extender's
#: bind). ``kube_cpu_mem``: kube-scheduler's default CPU and memory scoring (see :func:`kube_cpu_mem`).
#: ``most_allocated``: kube-scheduler's ``NodeResourcesFit`` with the ``MostAllocated`` strategy over
#: GPUs, CPU and memory (see :func:`kube_most_allocated`).
REGISTRY: tuple[ScorerEntry, ...] = (
    ScorerEntry("first_fit", "lowest index", ranks_gpus=True, takes_replicas=True),
    ScorerEntry("best_fit", "Volcano binpack, KAI gpupack", ranks_gpus=True, takes_replicas=True),
    ScorerEntry(
        "worst_fit", "kube-scheduler LeastAllocated, KAI gpuspread", ranks_gpus=True, takes_replicas=True
    ),
    ScorerEntry("random", "uniform", ranks_gpus=True, takes_replicas=True),
    ScorerEntry(
        "balanced_allocation",
        "kube-scheduler NodeResourcesBalancedAllocation",
        ranks_gpus=True,
        takes_replicas=True,
    ),
    ScorerEntry("fgd", "FGD (Weng et al., ATC'23)", ranks_gpus=True, task_classes=True),
    ScorerEntry("dot_product", "FGD paper's baseline", task_classes=True),
    ScorerEntry("gpu_packing", "FGD paper's baseline", task_classes=True),
    ScorerEntry("gpu_clustering", "FGD paper's baseline", task_classes=True),
    ScorerEntry("best_fit_cpu_gpu", "FGD paper's baseline", task_classes=True),
    ScorerEntry("hami_binpack", "HAMi node and device binpack", ranks_gpus=True),
    ScorerEntry("hami_spread", "HAMi node and device spread", ranks_gpus=True),
    ScorerEntry("kai_binpack", "KAI Scheduler node order"),
    ScorerEntry("best_fit_memory", "gpushare-scheduler-extender", ranks_gpus=True),
    ScorerEntry("kube_cpu_mem", "kube-scheduler default profile", takes_replicas=True),
    ScorerEntry("most_allocated", "kube-scheduler NodeResourcesFit MostAllocated", takes_replicas=True),
)
#: Scorer names by code.
SCORERS: tuple[str, ...] = tuple(entry.name for entry in REGISTRY)
#: The scorers that also choose the GPU of a shared pod (``gpu_placement``); the FGD paper's
#: baselines rank nodes only (its simulator picks their GPUs by best fit or at random), and so do
#: ``kai_binpack`` and kube-scheduler's (KAI's ``gpupack`` is ``best_fit``).
GPU_SCORERS: tuple[str, ...] = tuple(entry.name for entry in REGISTRY if entry.ranks_gpus)
#: The FGD paper's scorers: a replay whose node scorer is one of them (or whose GPU scorer is
#: ``fgd``) is given the workload's task classes (:func:`uses_tasks`); the others get none.
PAPER_SCORERS: tuple[str, ...] = tuple(entry.name for entry in REGISTRY if entry.task_classes)
#: Scorers that may rank nodes when GPUs are shared by replicas (:attr:`ScorerEntry.takes_replicas`).
REPLICA_NODE_SCORERS: tuple[str, ...] = tuple(entry.name for entry in REGISTRY if entry.takes_replicas)


def scorer_code(name: str) -> int:
    """The code of a scorer name (KeyError listing the names when unknown)."""
    try:
        return SCORERS.index(name)
    except ValueError:
        raise KeyError(f"unknown scorer {name!r}; known: {', '.join(SCORERS)}") from None
