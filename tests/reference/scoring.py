"""The reference twin of ``gpureplay.engine.fit.scoring``: one plain function per scorer name.

The engine names its scorers in ``gpureplay.engine.fit.scoring.SCORERS``; the
policy refers to them by name (``node_placement``, ``gpu_placement``). Each
scorer here chooses one candidate, from the candidates that fit, written the
most obvious way; the spec's rules (``docs/engine/fit.md``, Resources):

- ``first_fit``: the lowest index that fits;
- ``best_fit``: the smallest free GPU milli left on the node (GPU) after placing, ties lowest index;
- ``worst_fit``: the largest, ties lowest index;
- ``random``: candidate number ``draw % count`` in index order;
- ``balanced_allocation``: kube-scheduler's NodeResourcesBalancedAllocation,
  ``int((1 - std) * 100)`` of the used fractions, ties lowest index;
- ``fgd``: FGD (Weng et al., ATC'23): ``int(100 * sigmoid((F_before - F_after) / 1000))``
  with ``F`` the node's expected fragmentation over the task classes
  (:mod:`tests.reference.fragmentation`); a shared pod tries each GPU it fits
  and keeps the best (the GPU FGD picks: lowest index among the best);
- ``dot_product``, ``gpu_packing``, ``gpu_clustering``, ``best_fit_cpu_gpu``: the
  FGD paper's baselines as its simulator scores them (see each function).

Ties between equally scored nodes follow the policy's ``node_ties``: the scored
scorers take a ``tie`` function that picks among the tied candidates
(:func:`lowest_index`, the default, or :func:`keyed_tie` for ``random`` and
``seeded_order``). ``first_fit`` and ``random`` have no ties. GPUs always tie
to the lowest index.

Adding a scorer means adding it to the engine's ``scoring.py`` and a function
plus its :data:`SCORERS` entry here (``tests/test_reference.py`` checks that
the two name lists agree).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tests.reference.fragmentation import Node as FragNode
from tests.reference.fragmentation import TaskClass, node_frag

__all__ = [
    "GPU_SCORERS",
    "SCORERS",
    "Candidate",
    "NodeView",
    "PodView",
    "Scorer",
    "balanced_allocation",
    "best_fit",
    "best_fit_cpu_gpu",
    "best_fit_memory",
    "dot_product",
    "fgd",
    "first_fit",
    "gpu_clustering",
    "gpu_packing",
    "hami_binpack",
    "hami_spread",
    "kai_binpack",
    "keyed_tie",
    "kube_cpu_mem",
    "lowest_index",
    "most_allocated",
    "random",
    "tie_key",
    "worst_fit",
]

WHOLE = 1000
#: The FGD simulator's normalising node: 128 cores, 8 GPUs, whatever the node.
MAX_SPEC_CPU = 128000
MAX_SPEC_GPU = 8000
#: The engine's stand-in for an unknown capacity (``layout.BIG``): a node of unknown CPU has
#: ``BIG - used`` milli-CPU free in the baselines' formulas.
BIG = 1 << 62
MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


@dataclass(frozen=True)
class NodeView:
    """The node a candidate is on, as it is now (before placing).

    Attributes
    ----------
    gpu_free, gpu_mem_free
        Free milli and free memory (MiB) of each GPU, in GPU order.
    cpu_free
        Free milli-CPU; ``BIG - used`` when the capacity is unknown.
    model
        GPU model code (index in the sorted model names; -1: none).
    pod_kinds
        GPU pods on the node by kind: 0 shared pods, ``k`` pods of ``k`` whole GPUs.
    gpu_pods, split, gpu_mem
        Pods on each GPU, the pods one GPU may hold (inf: no limit) and the
        memory of one GPU.
    """

    gpu_free: tuple[int, ...]
    gpu_mem_free: tuple[float, ...]
    cpu_free: int
    model: int = 0
    pod_kinds: Mapping[int, int] = field(default_factory=dict)
    gpu_pods: tuple[int, ...] = ()
    split: float = math.inf
    gpu_mem: float = 0.0


@dataclass(frozen=True)
class PodView:
    """The pod being placed, on the candidate's node.

    ``milli`` is its GPU milli (all its GPUs), ``cpu`` its milli-CPU, ``gpu_mem`` the GPU memory
    it names (0: none), ``mem`` its node memory, ``taken`` the GPU memory it takes on the node
    (all its GPUs), ``percentage`` whether that memory comes from the ``proportional`` rule
    (HAMi's gpumem-percentage).
    """

    milli: int
    cpu: int
    gpu_mem: int = 0
    mem: int = 0
    taken: float = 0.0
    percentage: bool = False


@dataclass(frozen=True)
class Candidate:
    """A node (or a GPU of a node) the pod fits.

    Attributes
    ----------
    index
        Node index (row of the nodes table), or GPU index within its node.
    free_after
        Free GPU milli left on the node (the GPU) if the pod went there.
    used_after
        Each resource in use on the candidate if the pod went there: for a
        node (GPU milli, CPU milli, memory MiB), for a GPU (milli, GPU memory
        MiB).
    capacity
        The candidate's capacity of the same resources (``inf``: not known,
        never limiting).
    node, pod, tasks
        The node the candidate is on (for a GPU candidate: the GPU's node),
        the pod, and FGD's task classes (models as codes, like
        :attr:`NodeView.model`); needed by the FGD paper's scorers only.
    gpu
        Whether the candidate is a GPU (of a shared pod) rather than a node.
    """

    index: int
    free_after: int
    used_after: tuple[float, ...]
    capacity: tuple[float, ...]
    node: NodeView | None = None
    pod: PodView | None = None
    tasks: tuple[TaskClass, ...] = ()
    gpu: bool = False


#: Picks one of the equally best candidates (given in index order) -> its index.
Tie = Callable[[Sequence[Candidate]], int]


def lowest_index(tied: Sequence[Candidate]) -> int:
    """``node_ties: lowest_index`` (and every GPU choice): the first of the tied."""
    return min(c.index for c in tied)


def mix64(z: int) -> int:
    """SplitMix64's output function on a Python int, reduced to 64 bits by hand."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def tie_key(base: int, n: int) -> int:
    """Candidate ``n``'s key in a draw ``base``: element ``n + 1`` of the SplitMix64 stream from ``base``."""
    return mix64((base + (n + 1) * GOLDEN) & MASK64)


def keyed_tie(base: int) -> Tie:
    """``node_ties: random`` / ``seeded_order``: the tied candidate with the smallest :func:`tie_key`."""
    return lambda tied: min(tied, key=lambda c: tie_key(base, c.index)).index


#: A scorer: the candidates (index order, never empty), a function giving the decision's 64-bit
#: draw (called only by scorers that need randomness) and optionally the tie rule -> the chosen index.
Scorer = Callable[..., int]


def _best(candidates: Sequence[Candidate], score: Callable[[Candidate], float], tie: Tie) -> int:
    """The candidate with the highest score; the tie rule among those that share it."""
    scores = [score(c) for c in candidates]
    top = max(scores)
    return tie([c for c, s in zip(candidates, scores, strict=True) if s == top])


def first_fit(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """The lowest index that fits (no ties)."""
    return candidates[0].index


def best_fit(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """Least free milli left after placing (binpack); ties by ``tie``."""
    return _best(candidates, lambda c: -c.free_after, tie)


def worst_fit(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """Most free milli left after placing (spread); ties by ``tie``."""
    return _best(candidates, lambda c: c.free_after, tie)


def random(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """Candidate number ``draw % count``, candidates in index order (no ties)."""
    return candidates[draw() % len(candidates)].index


def balanced_allocation(
    candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index
) -> int:
    """kube-scheduler's NodeResourcesBalancedAllocation; ties by ``tie``.

    The fraction of each resource in use after placing (capped at 1; a resource
    of capacity 0 or unknown left out); the score is ``int((1 - std) * 100)``
    with ``std`` the population standard deviation of the fractions
    (``|f0 - f1| / 2`` for two, 0 for fewer), as kube computes it.
    """

    def score(c: Candidate) -> int:
        pairs = zip(c.used_after, c.capacity, strict=True)
        fractions = [min(used / cap, 1.0) for used, cap in pairs if 0 < cap < math.inf]
        if len(fractions) < 2:
            std = 0.0
        elif len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)  # kube's shortcut for two resources
        else:
            mean = sum(fractions) / len(fractions)
            std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
        return int((1.0 - std) * 100.0)

    return _best(candidates, score, tie)


# --------------------------------------------------------------------------------------------------
# FGD and the FGD paper's baselines
# --------------------------------------------------------------------------------------------------


def _frag(node: NodeView, gpu_free: Sequence[int], cpu_free: int, tasks: Sequence[TaskClass]) -> float:
    return node_frag(FragNode(cpu_free, tuple(gpu_free), node.model), tasks)


def fgd_placements(node: NodeView, pod: PodView) -> list[tuple[int | None, tuple[int, ...]]]:
    """Every way ``pod`` can go on ``node``: (its GPU when shared, else None; the GPUs' free milli after)."""
    free = list(node.gpu_free)
    if pod.milli == 0:
        return [(None, tuple(free))]
    if pod.milli >= WHOLE:
        # k wholly free GPUs (which ones does not change the fragmentation): the lowest ones.
        left = pod.milli // WHOLE
        for g, f in enumerate(free):
            if left and f == WHOLE:
                free[g] = 0
                left -= 1
        return [(None, tuple(free))]
    out: list[tuple[int | None, tuple[int, ...]]] = []
    for g, f in enumerate(node.gpu_free):
        if f >= pod.milli and node.gpu_mem_free[g] >= pod.gpu_mem:
            after = list(node.gpu_free)
            after[g] -= pod.milli
            out.append((g, tuple(after)))
    return out


def fgd_points(before: float, after: float) -> int:
    """``int(100 * sigmoid((before - after) / 1000))``: FGD's truncated score of one placement."""
    return int(100.0 / (1.0 + math.exp(-(before - after) / 1000.0)))


def fgd_node(node: NodeView, pod: PodView, tasks: Sequence[TaskClass]) -> tuple[int, int | None]:
    """FGD's score of ``node`` (the best over the pod's placements there) and, for a shared pod, its GPU."""
    before = _frag(node, node.gpu_free, node.cpu_free, tasks)
    best: tuple[int, int | None] | None = None
    for gpu, after in fgd_placements(node, pod):
        points = fgd_points(before, _frag(node, after, node.cpu_free - pod.cpu, tasks))
        if best is None or points > best[0]:  # the first (lowest GPU) of the best
            best = (points, gpu)
    assert best is not None, "the pod fits the node"
    return best


def _parts(c: Candidate) -> tuple[NodeView, PodView]:
    assert c.node is not None and c.pod is not None, "this scorer needs the candidate's node and pod"
    return c.node, c.pod


def fgd(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """FGD: the node (GPU) whose placement most reduces the node's fragmentation; ties by ``tie``.

    As a node scorer a node scores its best placement; as a GPU scorer each
    fitting GPU scores its own placement (the first best GPU is FGD's pick).
    """

    def score(c: Candidate) -> float:
        node, pod = _parts(c)
        if c.gpu:
            before = _frag(node, node.gpu_free, node.cpu_free, c.tasks)
            after = list(node.gpu_free)
            after[c.index] -= pod.milli
            return fgd_points(before, _frag(node, after, node.cpu_free - pod.cpu, c.tasks))
        return fgd_node(node, pod, c.tasks)[0]

    return _best(candidates, score, tie)


def _free_milli(node: NodeView) -> int:
    return sum(node.gpu_free)


def dot_product(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """``int(100 (1 - (node . pod) / 2))``, node (free CPU, free GPU) and pod (CPU, GPU) normalised.

    Normalised by :data:`MAX_SPEC_CPU` and :data:`MAX_SPEC_GPU`; the smaller
    product wins; ties by ``tie``.
    """

    def score(c: Candidate) -> float:
        node, pod = _parts(c)
        dot = (float(node.cpu_free) / MAX_SPEC_CPU) * (float(pod.cpu) / MAX_SPEC_CPU)
        dot += (float(_free_milli(node)) / MAX_SPEC_GPU) * (float(pod.milli) / MAX_SPEC_GPU)
        return int(100.0 * (1.0 - dot / 2.0))

    return _best(candidates, score, tie)


def best_fit_cpu_gpu(
    candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index
) -> int:
    """``int(100 (1 - s))``, ``s`` the mean normalised CPU and GPU left after placing; ties: ``tie``."""

    def score(c: Candidate) -> float:
        node, pod = _parts(c)
        left = 0.5 * float(node.cpu_free - pod.cpu) / MAX_SPEC_CPU
        left += 0.5 * float(_free_milli(node) - pod.milli) / MAX_SPEC_GPU
        return int((1.0 - left) * 100.0)

    return _best(candidates, score, tie)


def gpu_packing(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """GpuPacking's tiers: a share of a used GPU > free GPUs of a used node > an empty node; ties by ``tie``.

    CPU-only pods score 0. A node with every GPU free scores ``max(33 - GPUs,
    GPUs)``. Otherwise the pod's GPUs are the least free that fit it (by
    milli; equal free: lowest index); if any is wholly free the score is
    ``max(50 - wholly free taken, 33)``, else ``max(100 - Σ(free * 100 // 1000)
    // 10, 50)``.
    """

    def score(c: Candidate) -> float:
        node, pod = _parts(c)
        if pod.milli == 0:
            return 0
        ngpu = len(node.gpu_free)
        if all(f == WHOLE for f in node.gpu_free):
            return max(33 - ngpu, ngpu)
        per_gpu, want = (WHOLE, pod.milli // WHOLE) if pod.milli >= WHOLE else (pod.milli, 1)
        fitting = sorted((f, g) for g, f in enumerate(node.gpu_free) if f >= per_gpu)
        taken = [f for f, _ in fitting[:want]]
        whole = sum(1 for f in taken if f == WHOLE)
        if whole:
            return max(50 - whole, 33)
        return max(100 - sum(f * 100 // WHOLE for f in taken) // 10, 50)

    return _best(candidates, score, tie)


def gpu_clustering(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """GpuClustering: nodes running only GPU pods of the pod's kind first; ties by ``tie``.

    The kind is "shared" or "``k`` whole GPUs". With ``B = 25 (8000 - free
    milli) // 8000``: ``75 + B`` when the node's GPU pods are all of the pod's
    kind, ``50 + B`` when some are, ``25 + B`` when it runs none, ``B``
    otherwise. CPU-only pods score 0.
    """

    def score(c: Candidate) -> float:
        node, pod = _parts(c)
        if pod.milli == 0:
            return 0
        base = 25 * (MAX_SPEC_GPU - _free_milli(node)) // MAX_SPEC_GPU
        mine = 0 if pod.milli < WHOLE else pod.milli // WHOLE
        same = node.pod_kinds.get(mine, 0)
        other = sum(count for kind, count in node.pod_kinds.items() if kind != mine)
        if same > 0:
            return (75 if other == 0 else 50) + base
        return (25 if other == 0 else 0) + base

    return _best(candidates, score, tie)


# --------------------------------------------------------------------------------------------------
# The GPU-sharing systems: HAMi, KAI Scheduler, gpushare, kube-scheduler's CPU/memory scores
# --------------------------------------------------------------------------------------------------

HAMI_WEIGHT = 10.0
KAI_GPU_SHARING = 1000.0


def hami_node_score(node: NodeView) -> float:
    """HAMi's node score before the pod: ``10 (used slots + used cores + used memory shares)``."""
    count = len(node.gpu_free)
    if count == 0:
        return 0.0
    score = sum(WHOLE - f for f in node.gpu_free) / (WHOLE * count)
    if math.isfinite(node.split):
        score += sum(node.gpu_pods) / (node.split * count)
    if node.gpu_mem > 0:
        score += sum(node.gpu_mem - f for f in node.gpu_mem_free) / (node.gpu_mem * count)
    return HAMI_WEIGHT * score


def hami_gpu_score(c: Candidate) -> float:
    """HAMi's device score with the pod added; a memory percentage scores as 0 memory (int32 division)."""
    node, pod = _parts(c)
    g = c.index
    score = (WHOLE - node.gpu_free[g] + pod.milli) / WHOLE
    if math.isfinite(node.split):
        score += (node.gpu_pods[g] + 1) / node.split
    if node.gpu_mem > 0:
        scored = 0.0 if pod.percentage else pod.taken
        score += (node.gpu_mem - node.gpu_mem_free[g] + scored) / node.gpu_mem
    return HAMI_WEIGHT * score


def _hami(c: Candidate) -> float:
    return hami_gpu_score(c) if c.gpu else hami_node_score(_parts(c)[0])


def hami_binpack(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """HAMi binpack: the highest node (device) score; ties by ``tie``."""
    return _best(candidates, _hami, tie)


def hami_spread(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """HAMi spread: the lowest node (device) score; ties by ``tie``."""
    return _best(candidates, lambda c: -_hami(c), tie)


def kai_binpack(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """KAI's binpack node order: a shared pod prefers a node where it fits an already-shared GPU
    (``gpusharingorder``), then the fewest wholly free GPUs (``nodeplacement``); CPU-only pods the
    least free CPU; ties by ``tie``."""

    def score(c: Candidate) -> float:
        node, pod = _parts(c)
        if pod.milli == 0:
            return -float(node.cpu_free)
        value = -float(sum(1 for f in node.gpu_free if f == WHOLE))
        shared_fit = any(
            pod.milli <= f < WHOLE and node.gpu_mem_free[g] >= pod.taken and node.gpu_pods[g] < node.split
            for g, f in enumerate(node.gpu_free)
        )
        if pod.milli < WHOLE and shared_fit:
            value += KAI_GPU_SHARING
        return value

    return _best(candidates, score, tie)


def best_fit_memory(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """Least free GPU memory left after placing, on the node or the GPU (gpushare's bind); ties by ``tie``."""

    def score(c: Candidate) -> float:
        node, pod = _parts(c)
        free = node.gpu_mem_free[c.index] if c.gpu else sum(node.gpu_mem_free)
        return -(free - pod.taken)

    return _best(candidates, score, tie)


def kube_cpu_mem(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """kube-scheduler's default CPU/memory scores: LeastAllocated + BalancedAllocation; ties by ``tie``.

    LeastAllocated: the integer mean over CPU and memory of ``(capacity - requested) * 100 //
    capacity`` (0 when over), requested including the pod; BalancedAllocation:
    ``int((1 - |f_cpu - f_mem| / 2) * 100)`` of the used fractions (100 with one resource). A
    resource of unknown capacity is left out; with neither, 0.
    """

    def score(c: Candidate) -> float:
        pairs = zip(c.used_after[1:], c.capacity[1:], strict=True)
        known = [(u, cap) for u, cap in pairs if 0 < cap < math.inf]
        if not known:
            return 0.0
        least = sum(0 if u > cap else int((cap - u) * 100 // cap) for u, cap in known) // len(known)
        fractions = [min(u / cap, 1.0) for u, cap in known]
        std = abs((fractions[0] - fractions[1]) / 2) if len(fractions) == 2 else 0.0
        return float(least + int((1.0 - std) * 100.0))

    return _best(candidates, score, tie)


def most_allocated(candidates: Sequence[Candidate], draw: Callable[[], int], tie: Tie = lowest_index) -> int:
    """kube-scheduler's MostAllocated over GPUs, CPU and memory + BalancedAllocation; ties by ``tie``.

    MostAllocated (kubernetes ``noderesources/most_allocated.go``): the integer mean, weights 1, of
    ``min(requested, capacity) * 100 // capacity`` over GPU milli, CPU and memory, requested including
    the pod; BalancedAllocation over CPU and memory as in :func:`kube_cpu_mem`. A resource of unknown
    or zero capacity is left out; with none, 0.
    """

    def score(c: Candidate) -> float:
        known = [(u, cap) for u, cap in zip(c.used_after, c.capacity, strict=True) if 0 < cap < math.inf]
        if not known:
            return 0.0
        most = sum(int(min(u, cap) * 100 // cap) for u, cap in known) // len(known)
        pairs = zip(c.used_after[1:], c.capacity[1:], strict=True)
        fractions = [min(u / cap, 1.0) for u, cap in pairs if 0 < cap < math.inf]
        std = abs((fractions[0] - fractions[1]) / 2) if len(fractions) == 2 else 0.0
        return float(most + int((1.0 - std) * 100.0))

    return _best(candidates, score, tie)


#: Scorer functions by the name a policy uses.
SCORERS: dict[str, Scorer] = {
    "first_fit": first_fit,
    "best_fit": best_fit,
    "worst_fit": worst_fit,
    "random": random,
    "balanced_allocation": balanced_allocation,
    "fgd": fgd,
    "dot_product": dot_product,
    "gpu_packing": gpu_packing,
    "gpu_clustering": gpu_clustering,
    "best_fit_cpu_gpu": best_fit_cpu_gpu,
    "hami_binpack": hami_binpack,
    "hami_spread": hami_spread,
    "kai_binpack": kai_binpack,
    "best_fit_memory": best_fit_memory,
    "kube_cpu_mem": kube_cpu_mem,
    "most_allocated": most_allocated,
}
#: The scorers a policy may name for ``gpu_placement`` (the baselines, KAI's and kube's rank nodes only).
GPU_SCORERS: tuple[str, ...] = (
    "first_fit",
    "best_fit",
    "worst_fit",
    "random",
    "balanced_allocation",
    "fgd",
    "hami_binpack",
    "hami_spread",
    "best_fit_memory",
)
