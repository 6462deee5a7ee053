"""The placement hook: filter the nodes a pod fits, score them, take the best (and the GPU on it).

A node scorer is a code in ``params.codes[P_NODE]``; a GPU scorer (the GPU a
shared pod goes to) one in ``params.codes[P_GPU]``. Every scorer is an entry of
:data:`~gpureplay.engine.fit.scorers.REGISTRY` (its code is its position; the policy names it), a branch of
:func:`node_score` (and of :func:`gpu_score` when it ranks GPUs) and a reference
twin in ``tests/reference/scoring.py``: adding a scorer is those three and a
preset, nothing else. A code without a branch raises in the replay rather than
score as some other scorer.

Rules shared by every scorer: the highest score wins, ties go to the lowest
node (GPU) index; ``random`` draws a candidate uniformly (the counter-based
generator of :mod:`gpureplay.engine.state.rng`, candidates in index order);
``first_fit`` is the lowest index that fits. A scorer that ranks nodes by
their own free capacity only may declare itself *indexable*: then whole-GPU
pods without CPU, memory or GPU-memory limits are placed through the
per-model fit trees of :mod:`gpureplay.engine.fit.fitindex`, decided in one place
(:func:`uses_index`).
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.devices.mig import mig_fgd_score
from gpureplay.engine.fit.fitindex import index_query, index_set
from gpureplay.engine.fit.fragmentation import frag_after, node_frag
from gpureplay.engine.fit.resources import gpu_fits, held_milli, node_capacity, pod_kind, share_gmem
from gpureplay.engine.fit.scorers import (
    GPU_SCORERS,
    PAPER_SCORERS,
    REGISTRY,
    REPLICA_NODE_SCORERS,
    SCORERS,
    ScorerEntry,
    scorer_code,
)
from gpureplay.engine.jit.config import entry_kernel, inline_kernel, kernel
from gpureplay.engine.preemption.nomination import nominated_for, nominated_limit
from gpureplay.engine.state.bundles import Classes, Cluster, FitIndex, Params, Tasks
from gpureplay.engine.state.layout import (
    BIG,
    C_CPU,
    C_EXACT,
    C_GMEM,
    C_K,
    C_KIND,
    C_MEM,
    C_MILLI,
    F_CPU,
    F_MEM,
    F_MILLI,
    F_WHOLE,
    G_MEM,
    G_MILLI,
    G_SLOTS,
    KIND_NONE,
    KIND_SHARE,
    KIND_WHOLE,
    N_CPU,
    N_GPU0,
    N_GPU_MEM,
    N_GPUS,
    N_MEM,
    N_MODEL,
    N_SHARE_MEM,
    N_SLOTS,
    P_GPU,
    P_NODE,
    P_SEED,
    P_SHARING,
    P_TIES,
    SHARE_MEM_PROPORTIONAL,
    SHARING_MIG_DYNAMIC,
    TIES_LOWEST,
    TIES_RANDOM,
    TIES_SEEDED_ORDER,
    TK_CPU,
    TK_GPUS,
    TK_MILLI,
    WHOLE,
)
from gpureplay.engine.state.rng import DRAW_GPU, DRAW_NODE, DRAW_NODE_ORDER, draw, tie_key

__all__ = [
    "GPU_SCORERS",
    "PAPER_SCORERS",
    "REGISTRY",
    "REPLICA_NODE_SCORERS",
    "SCORERS",
    "ScorerEntry",
    "scorer_code",
]

FIRST_FIT = scorer_code("first_fit")
BEST_FIT = scorer_code("best_fit")
WORST_FIT = scorer_code("worst_fit")
RANDOM = scorer_code("random")
BALANCED = scorer_code("balanced_allocation")
FGD = scorer_code("fgd")
DOT_PRODUCT = scorer_code("dot_product")
GPU_PACKING = scorer_code("gpu_packing")
GPU_CLUSTERING = scorer_code("gpu_clustering")
BEST_FIT_CPU_GPU = scorer_code("best_fit_cpu_gpu")
HAMI_BINPACK = scorer_code("hami_binpack")
HAMI_SPREAD = scorer_code("hami_spread")
KAI_BINPACK = scorer_code("kai_binpack")
BEST_FIT_MEMORY = scorer_code("best_fit_memory")
KUBE_CPU_MEM = scorer_code("kube_cpu_mem")
MOST_ALLOCATED = scorer_code("most_allocated")
#: The FGD paper's scorers' codes (:func:`paper_score`) and the sharing systems' and kube-scheduler's
#: (:func:`sharing_node_score`).
PAPER_CODES: tuple[int, ...] = tuple(scorer_code(name) for name in PAPER_SCORERS)
SYSTEM_CODES: tuple[int, ...] = (
    HAMI_BINPACK,
    HAMI_SPREAD,
    KAI_BINPACK,
    BEST_FIT_MEMORY,
    KUBE_CPU_MEM,
    MOST_ALLOCATED,
)

#: HAMi's score weight (``Weight`` in ``pkg/scheduler/policy``).
HAMI_WEIGHT = 10.0
#: KAI's ``gpusharingorder`` bonus (``scores.GpuSharing``: 1000 in NVIDIA/KAI-Scheduler, 10000 in
#: later trees; either dominates the 0..9 node-placement score, so the order is the same).
KAI_GPU_SHARING = 1000.0

#: The FGD simulator's normalising node size (``MaxSpecCpu``, ``MaxSpecGpu`` in
#: ``pkg/type/open-gpu-share/utils/const.go``): 128 cores and 8 GPUs, whatever the node.
MAX_SPEC_CPU = 128000
MAX_SPEC_GPU = 8000

_MILLI_CEILING = 1 << 29


def uses_tasks(node_code: int, gpu_code: int) -> bool:
    """Whether a replay with these scorer codes needs ``Classes.tasks`` (the FGD paper's scorers)."""
    return REGISTRY[node_code].task_classes or REGISTRY[gpu_code].task_classes


@inline_kernel
def indexable(scorer: int) -> bool:
    """Whether a node scorer ranks nodes by a key of their own free capacity (fit-tree eligible)."""
    return scorer in (FIRST_FIT, BEST_FIT, WORST_FIT, KAI_BINPACK)


@inline_kernel
def index_key(scorer: int, cl: Cluster, n: int) -> int:
    """Node ``n``'s key under an indexable scorer: smaller is preferred, the node index in the low bits.

    Notes
    -----
    For a fixed pod, "free milli after placing" ranks nodes like their free
    milli now, which is what the key holds. ``kai_binpack`` ranks a whole-GPU
    pod's nodes by their wholly free GPUs (:func:`kai_node`), its key.
    """
    if scorer == FIRST_FIT:
        return n
    if scorer == KAI_BINPACK:
        return int((cl.node_free[F_WHOLE, n] << 32) | n)
    free = cl.node_free[F_MILLI, n]
    if scorer == BEST_FIT:
        return int((free << 32) | n)
    return int(((_MILLI_CEILING - free) << 32) | n)


@inline_kernel
def uses_index(params: Params) -> bool:
    """Whether the replay keeps the fit trees (the one place this is decided).

    Notes
    -----
    The trees answer with the lowest-index node among equal keys, so they
    serve only the ``lowest_index`` tie rule.
    """
    return indexable(params.codes[P_NODE]) and params.codes[P_TIES] == TIES_LOWEST


@kernel
def refresh_index(params: Params, cl: Cluster, ix: FitIndex, n: int) -> None:
    """Bring node ``n``'s fit-tree entry up to date after its free GPUs changed (no-op when unindexed)."""
    if uses_index(params):
        scorer = params.codes[P_NODE]
        index_set(ix, n, cl.node_int[N_MODEL, n], index_key(scorer, cl, n), cl.node_free[F_WHOLE, n])


@entry_kernel
def build_index(params: Params, cl: Cluster, ix: FitIndex) -> None:
    """Fill the fit trees from the current state (once per replay)."""
    for n in range(cl.node_int.shape[1]):
        refresh_index(params, cl, ix, n)


@inline_kernel
def _fraction(used: float, capacity: int) -> float:
    """Share of a resource in use, capped at 1; -1.0 when the capacity is 0 or unknown (not scored)."""
    if capacity <= 0 or capacity >= BIG:
        return -1.0
    return min(used / capacity, 1.0)


@kernel
def balance(f0: float, f1: float, f2: float) -> float:
    """kube-scheduler's balanced-allocation score of up to three resource fractions (-1.0: absent).

    Notes
    -----
    ``NodeResourcesBalancedAllocation`` (``balancedResourceScorer`` in
    kubernetes ``pkg/scheduler/framework/plugins/noderesources``): with the
    fractions ``f_i = min(requested_i / allocatable_i, 1)`` of the scored
    resources after placing (a resource with no allocatable amount skipped),
    ``std`` is ``|f_0 - f_1| / 2`` for two, the population standard deviation
    for more, 0 for fewer; the score is ``int((1 - std) * 100)``
    (``MaxNodeScore``), so nearly balanced nodes tie and the lowest index wins
    (kube-scheduler draws among tied nodes instead). The plugin's default
    resources are CPU and memory; here the GPU is scored too, as a GPU cluster
    configures it. kube skips pods that request none of the resources; here
    they are scored like any other.
    """
    count = 0
    total = 0.0
    for f in (f0, f1, f2):
        if f >= 0.0:
            count += 1
            total += f
    std = 0.0
    if count == 2:
        first = f0 if f0 >= 0.0 else f1
        second = f2 if f2 >= 0.0 else f1
        std = abs((first - second) / 2.0)
    elif count == 3:
        mean = total / 3.0
        std = np.sqrt(((f0 - mean) ** 2 + (f1 - mean) ** 2 + (f2 - mean) ** 2) / 3.0)
    return float(int((1.0 - std) * 100.0))


@inline_kernel
def fgd_points(before: float, after: float) -> float:
    """FGD's integer score of a placement that takes a node's fragmentation from ``before`` to ``after``.

    Notes
    -----
    ``int64(sigmoid(ΔF / 1000) * MaxNodeScore)`` with ``ΔF = before - after``
    in milli-GPU and ``MaxNodeScore = 100`` (``fgd_score.go``): truncated, so
    placements whose ΔF differ by a fraction of a GPU often tie.
    """
    return float(int(100.0 / (1.0 + np.exp(-(before - after) / 1000.0))))


@kernel
def fgd_choice(tasks: Tasks, cl: Cluster, cs: Classes, c: int, n: int) -> tuple[float, int]:
    """FGD's score of node ``n`` for one pod of class ``c`` (which fits), and the GPU it would take.

    Returns
    -------
    tuple of (float, int)
        The best :func:`fgd_points` over the pod's placements on the node, and
        for a shared pod the lowest-index GPU reaching it (-1 otherwise).

    Notes
    -----
    ``calculateGpuShareFragExtendScore`` (``fgd_score.go``): a shared pod
    (one GPU, under 1000 milli) tries every GPU it fits, keeping the first
    best score; any other pod is scored by taking its GPUs from the node
    (``k`` wholly free GPUs: which ones does not change ``F_n``). The task
    classes are ``tasks``. GPUs with equal free milli give equal
    scores, so each distinct free amount is evaluated once, at its first GPU.
    """
    g0 = cl.node_int[N_GPU0, n]
    ngpu = cl.node_int[N_GPUS, n]
    model = cl.node_int[N_MODEL, n]
    cpu = cl.node_free[F_CPU, n]
    gpu_free = cl.gpu_free[G_MILLI]
    task = tasks.ints
    before = node_frag(
        cpu, gpu_free, g0, ngpu, model, task[TK_CPU], task[TK_GPUS], task[TK_MILLI], tasks.mask, tasks.pop
    )
    take_cpu = cs.ints[C_CPU, c]
    kind = cs.ints[C_KIND, c]
    if kind != KIND_SHARE:
        count = cs.ints[C_K, c] if kind == KIND_WHOLE else 0
        after = frag_after(
            cpu, gpu_free, g0, ngpu, model, take_cpu, WHOLE, WHOLE, count,
            task[TK_CPU], task[TK_GPUS], task[TK_MILLI], tasks.mask, tasks.pop,
        )  # fmt: skip
        return fgd_points(before, after), -1
    m = cs.ints[C_MILLI, c]
    gmem = share_gmem(cl, n, m, cs.ints[C_GMEM, c])
    best = -1
    best_score = 0.0
    for g in range(g0, g0 + ngpu):
        free = gpu_free[g]
        if not gpu_fits(cl, g, m, gmem):
            continue
        seen = False
        for h in range(g0, g):
            if gpu_free[h] == free and gpu_fits(cl, h, m, gmem):
                seen = True
                break
        if seen:
            continue
        after = frag_after(
            cpu, gpu_free, g0, ngpu, model, take_cpu, free, m, 1,
            task[TK_CPU], task[TK_GPUS], task[TK_MILLI], tasks.mask, tasks.pop,
        )  # fmt: skip
        score = fgd_points(before, after)
        if best < 0 or score > best_score:
            best = g
            best_score = score
    return best_score, best


@kernel
def fgd_memoized(tasks: Tasks, cl: Cluster, cs: Classes, c: int, n: int) -> tuple[float, int]:
    """:func:`fgd_choice`, answered from ``tasks.memo`` when it holds the answer (packing mode)."""
    memo = tasks.memo
    if memo.shape[0] == 0:
        return fgd_choice(tasks, cl, cs, c, n)
    if np.isnan(memo[c, n, 0]):
        score, g = fgd_choice(tasks, cl, cs, c, n)
        memo[c, n, 0] = score
        memo[c, n, 1] = g
    return memo[c, n, 0], int(memo[c, n, 1])


@kernel
def baseline_score(scorer: int, cl: Cluster, cs: Classes, c: int, n: int) -> float:
    """The FGD paper's baseline scores of node ``n`` for one pod of class ``c`` (which fits it), 0..100.

    Notes
    -----
    As the artifact's simulator computes them (hkust-adsl/kubernetes-scheduler-simulator,
    ``pkg/simulator/plugin/``), each an integer, truncated; ``S`` is the
    node's free GPU milli, CPU and GPU normalised by :data:`MAX_SPEC_CPU` and
    :data:`MAX_SPEC_GPU`:

    - ``dot_product`` (``dot_product_score.go``, ``merge`` / ``max``):
      ``100 (1 - (node . pod) / 2)`` with node ``(cpu_free, S)`` and pod
      ``(cpu, GPU milli)`` normalised: the smaller product wins;
    - ``gpu_packing`` (``gpu_packing_score.go``): a node with every GPU free
      scores ``max(33 - free GPUs, free GPUs)``; else the pod's GPUs, taken
      from the least free that fit (ties lowest index), score
      ``max(50 - wholly free ones taken, 33)`` if any is wholly free, else
      ``max(100 - Σ(free_i * 100 // 1000) // 10, 50)``; CPU-only pods 0;
    - ``gpu_clustering`` (``gpu_clustering_score.go``): with
      ``B = 25 (8000 - S) // 8000``, ``75 + B`` when the node's GPU pods are
      all of the pod's kind (shared, or ``k`` whole GPUs), ``50 + B`` when
      some are, ``25 + B`` when it has none, ``B`` otherwise; CPU-only pods 0;
    - ``best_fit_cpu_gpu`` (``best_fit_score.go``): ``100 (1 - s)`` with
      ``s`` the mean of the normalised CPU and GPU left after placing. The
      plugin's min-max NormalizeScore maps integer scores one-to-one, so it
      does not change which node wins and is left out.
    """
    kind = cs.ints[C_KIND, c]
    free_gpu = cl.node_free[F_MILLI, n]
    free_cpu = cl.node_free[F_CPU, n]
    cpu = cs.ints[C_CPU, c]
    milli = cs.ints[C_MILLI, c]
    if scorer == DOT_PRODUCT:
        dot = (free_cpu / MAX_SPEC_CPU) * (cpu / MAX_SPEC_CPU)
        dot += (free_gpu / MAX_SPEC_GPU) * (milli / MAX_SPEC_GPU)
        return float(int(100.0 * (1.0 - dot / 2.0)))
    if scorer == BEST_FIT_CPU_GPU:
        left = 0.5 * (free_cpu - cpu) / MAX_SPEC_CPU + 0.5 * (free_gpu - milli) / MAX_SPEC_GPU
        return float(int((1.0 - left) * 100.0))
    if kind == KIND_NONE:
        return 0.0
    g0 = cl.node_int[N_GPU0, n]
    ngpu = cl.node_int[N_GPUS, n]
    if scorer == GPU_CLUSTERING:
        base = 25 * (MAX_SPEC_GPU - free_gpu) // MAX_SPEC_GPU
        mine = pod_kind(cs, c)
        same = cl.pod_kinds[mine, n]
        other = 0
        for k in range(cl.pod_kinds.shape[0]):
            if k != mine:
                other += cl.pod_kinds[k, n]
        if same > 0:
            return float((75 if other == 0 else 50) + base)
        return float((25 if other == 0 else 0) + base)
    if scorer != GPU_PACKING:
        raise AssertionError("baseline_score: not one of the FGD paper's baselines")
    if cl.node_free[F_WHOLE, n] == ngpu:
        return float(max(33 - ngpu, ngpu))
    per_gpu = WHOLE if kind == KIND_WHOLE else milli
    want = cs.ints[C_K, c]
    whole_taken = 0
    percent_sum = 0
    last = -1
    last_g = -1
    for _ in range(want):
        # The next GPU in (free, index) order that fits: the least free first.
        pick = -1
        for g in range(g0, g0 + ngpu):
            free = cl.gpu_free[G_MILLI, g]
            if free < per_gpu or free < last or (free == last and g <= last_g):
                continue
            if pick < 0 or free < cl.gpu_free[G_MILLI, pick]:
                pick = g
        last = cl.gpu_free[G_MILLI, pick]
        last_g = pick
        if last == WHOLE:
            whole_taken += 1
        percent_sum += last * 100 // WHOLE
    if whole_taken > 0:
        return float(max(50 - whole_taken, 33))
    return float(max(100 - percent_sum // 10, 50))


@kernel
def paper_score(tasks: Tasks, scorer: int, cl: Cluster, cs: Classes, c: int, n: int) -> float:
    """Node score under one of the FGD paper's scorers."""
    if scorer == FGD:
        return fgd_memoized(tasks, cl, cs, c, n)[0]
    return baseline_score(scorer, cl, cs, c, n)


@kernel
def fgd_gpu(tasks: Tasks, cl: Cluster, cs: Classes, c: int, n: int) -> int:
    """The GPU the ``fgd`` scorer gives a shared pod on node ``n``."""
    return fgd_memoized(tasks, cl, cs, c, n)[1]


@kernel
def hami_node(cl: Cluster, n: int) -> float:
    """HAMi's node score: how full node ``n``'s GPUs are now (before the pod is added).

    Notes
    -----
    ``10 (sum Used / sum Count + sum Usedcores / sum Totalcore + sum Usedmem / sum Totalmem)``
    over the node's GPUs (``NodeScore.ComputeDefaultScore``, HAMi
    ``pkg/scheduler/policy/node_policy.go``, ``Weight = 10``;
    docs/systems.md, "HAMi"): ``Used`` pods (vGPU slots), cores as
    milli-GPU in use, memory in use. ``scoreNode`` computes it *before*
    adding the candidate pod, unlike the design doc's ``(request + used) /
    allocatable``. A whole-GPU pod books its GPUs' cores and memory in full
    (a whole card in the trace is ``gpucores: 100``). With no split limit
    the slot term is left out; a GPU-less node scores 0.
    """
    g0 = cl.node_int[N_GPU0, n]
    ngpu = cl.node_int[N_GPUS, n]
    if ngpu == 0:
        return 0.0
    slots = cl.node_int[N_SLOTS, n]
    mem = cl.node_int[N_GPU_MEM, n]
    used = 0
    cores = 0
    used_mem = 0
    for g in range(g0, g0 + ngpu):
        used += slots - cl.gpu_free[G_SLOTS, g]
        cores += WHOLE - cl.gpu_free[G_MILLI, g]
        used_mem += mem - cl.gpu_free[G_MEM, g]
    score = cores / (WHOLE * ngpu)
    if slots < BIG:
        score += used / (slots * ngpu)
    if mem > 0:
        score += used_mem / (mem * ngpu)
    return float(HAMI_WEIGHT * score)


@kernel
def hami_gpu(cl: Cluster, n: int, g: int, m: int, q: int, gmem: int) -> float:
    """HAMi's device score of GPU ``g`` of node ``n`` with a shared pod added (``m`` milli, ``gmem`` MiB).

    Notes
    -----
    ``10 ((1 + Used) / Count + (cores + Usedcores) / Totalcore + (mem + Usedmem) / Totalmem)``
    (``DeviceListsScore.ComputeScore``, HAMi ``pkg/scheduler/policy/gpu_policy.go``;
    docs/systems.md, "HAMi"), the request included. ``mem`` is what the
    pod names (``q``); a memory *percentage* is scored as ``Totalmem *
    (pct / 100.0)`` in int32 arithmetic there, i.e. ``Totalmem * (pct / 100)``
    with integer division: 0 below 100 %, so the pods of the ``proportional``
    rule add no memory to the score (their memory still counts in ``Usedmem``
    and in the fit), those of the ``full`` rule (100 %) all of it.
    """
    slots = cl.node_int[N_SLOTS, n]
    mem = cl.node_int[N_GPU_MEM, n]
    score = (WHOLE - cl.gpu_free[G_MILLI, g] + m) / WHOLE
    if slots < BIG:
        score += (slots - cl.gpu_free[G_SLOTS, g] + 1) / slots
    if mem > 0:
        scored = gmem
        if q == 0 and cl.node_int[N_SHARE_MEM, n] == SHARE_MEM_PROPORTIONAL:
            scored = 0
        score += (mem - cl.gpu_free[G_MEM, g] + scored) / mem
    return float(HAMI_WEIGHT * score)


@kernel
def kai_node(cl: Cluster, cs: Classes, c: int, n: int) -> float:
    """KAI Scheduler's node order for one pod of class ``c`` (binpack), as a score; higher is better.

    Notes
    -----
    KAI sums its node-order plugins (docs/systems.md, "KAI Scheduler";
    ``pkg/scheduler/plugins/``): ``gpusharingorder`` adds ``GpuSharing``
    (:data:`KAI_GPU_SHARING`) once when a fractional pod fits a GPU that
    already holds fractions (``IsTaskFitOnGpuGroup``); ``nodeplacement``
    binpack adds ``9 (1 - (free - min) / (max - min))`` with ``free`` the
    node's wholly free GPUs (a shared GPU counts as none) and ``min`` /
    ``max`` over every GPU node (9 when they are equal, 0 when ``max`` is 0).
    For a fixed pod that term falls strictly with ``free`` and never reaches
    the bonus, so ``bonus - free`` orders the nodes the same way and is what
    is returned; equal scores go to the lowest node index (KAI: the smaller
    node name). A CPU-only pod is packed by free CPU (the CPU strategy, also
    binpack by default).
    """
    kind = cs.ints[C_KIND, c]
    if kind == KIND_NONE:
        return -float(cl.node_free[F_CPU, n])
    score = -float(cl.node_free[F_WHOLE, n])
    if kind == KIND_SHARE:
        m = cs.ints[C_MILLI, c]
        gmem = share_gmem(cl, n, m, cs.ints[C_GMEM, c])
        g0 = cl.node_int[N_GPU0, n]
        for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
            if cl.gpu_free[G_MILLI, g] < WHOLE and gpu_fits(cl, g, m, gmem):
                return score + KAI_GPU_SHARING
    return score


@inline_kernel
def _least_requested(requested: int, capacity: int) -> int:
    """kube-scheduler's ``leastRequestedScore``: ``(capacity - requested) * 100 // capacity``, 0 when over."""
    if requested > capacity:
        return 0
    return (capacity - requested) * 100 // capacity


@kernel
def kube_cpu_mem(cl: Cluster, cs: Classes, c: int, n: int) -> float:
    """kube-scheduler's default scores of CPU and memory for node ``n`` with one pod of class ``c`` added.

    Notes
    -----
    The default profile's resource scorers, weight 1 each:
    ``NodeResourcesFit`` ``LeastAllocated`` over CPU and memory (resource
    weights 1: the integer mean of ``(capacity - requested) * 100 //
    capacity``) plus ``NodeResourcesBalancedAllocation`` over the same two
    (:func:`balance`). A GPU requested as an extended resource (gpushare's
    ``aliyun.com/gpu-mem``) is not among the default scored resources, so a
    gpushare cluster's node choice comes from these alone
    (docs/systems.md, "gpushare-scheduler-extender"). A resource of unknown capacity is left
    out; a node with neither known scores 0. kube counts a pod that requests
    no CPU or memory as 100 millicores / 200 MiB when scoring; here it counts
    what it asks.
    """
    cpu_cap = cl.node_int[N_CPU, n]
    mem_cap = cl.node_int[N_MEM, n]
    cpu_req = cpu_cap - cl.node_free[F_CPU, n] + cs.ints[C_CPU, c]
    mem_req = mem_cap - cl.node_free[F_MEM, n] + cs.ints[C_MEM, c]
    total = 0
    count = 0
    if 0 < cpu_cap < BIG:
        total += _least_requested(cpu_req, cpu_cap)
        count += 1
    if 0 < mem_cap < BIG:
        total += _least_requested(mem_req, mem_cap)
        count += 1
    if count == 0:
        return 0.0
    balanced = balance(_fraction(float(cpu_req), cpu_cap), _fraction(float(mem_req), mem_cap), -1.0)
    return float(total // count) + balanced


@inline_kernel
def _most_requested(requested: int, capacity: int) -> int:
    """kube-scheduler's ``mostRequestedScore``: ``requested * 100 // capacity``, requested capped."""
    return min(requested, capacity) * 100 // capacity


@kernel
def kube_most_allocated(cl: Cluster, cs: Classes, c: int, n: int) -> float:
    """kube-scheduler's bin-packing scores for node ``n`` with one pod of class ``c`` added.

    Notes
    -----
    A profile whose ``NodeResourcesFit`` takes the ``MostAllocated`` scoring strategy with
    ``nvidia.com/gpu``, ``cpu`` and ``memory`` at weight 1 (the "resource bin packing" configuration
    of the Kubernetes docs, with the GPU as the extended resource), beside the default
    ``NodeResourcesBalancedAllocation`` over CPU and memory, each plugin at weight 1.
    ``mostResourceScorer`` (kubernetes ``pkg/scheduler/framework/plugins/noderesources/
    most_allocated.go``): the weighted integer mean of ``min(requested, capacity) * 100 //
    capacity``, requested including the pod. GPUs count in milli-GPU: for whole GPUs the same
    integer as counting devices (``3000 * 100 // 8000 == 3 * 100 // 8``). A resource of unknown
    capacity, or none, is left out (kube skips a resource a node does not have); a node with none
    known scores 0. kube counts a pod that requests no CPU or memory as 100 millicores / 200 MiB
    when scoring; here it counts what it asks (as :func:`kube_cpu_mem`).
    """
    gpu_cap = WHOLE * cl.node_int[N_GPUS, n]
    cpu_cap = cl.node_int[N_CPU, n]
    mem_cap = cl.node_int[N_MEM, n]
    gpu_req = gpu_cap - cl.node_free[F_MILLI, n] + held_milli(cl, cs, c, n)
    cpu_req = cpu_cap - cl.node_free[F_CPU, n] + cs.ints[C_CPU, c]
    mem_req = mem_cap - cl.node_free[F_MEM, n] + cs.ints[C_MEM, c]
    total = 0
    count = 0
    if gpu_cap > 0:
        total += _most_requested(gpu_req, gpu_cap)
        count += 1
    if 0 < cpu_cap < BIG:
        total += _most_requested(cpu_req, cpu_cap)
        count += 1
    if 0 < mem_cap < BIG:
        total += _most_requested(mem_req, mem_cap)
        count += 1
    if count == 0:
        return 0.0
    balanced = balance(_fraction(float(cpu_req), cpu_cap), _fraction(float(mem_req), mem_cap), -1.0)
    return float(total // count) + balanced


@kernel
def gpu_mem_after(cl: Cluster, cs: Classes, c: int, n: int) -> int:
    """Free GPU memory (MiB) left on node ``n`` if one pod of class ``c`` went there."""
    g0 = cl.node_int[N_GPU0, n]
    free = 0
    for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
        free += cl.gpu_free[G_MEM, g]
    kind = cs.ints[C_KIND, c]
    if kind == KIND_WHOLE:
        return int(free - cs.ints[C_K, c] * cl.node_int[N_GPU_MEM, n])
    if kind == KIND_SHARE:
        return free - share_gmem(cl, n, cs.ints[C_MILLI, c], cs.ints[C_GMEM, c])
    return free


@kernel
def sharing_node_score(scorer: int, cl: Cluster, cs: Classes, c: int, n: int) -> float:
    """Node score under the GPU-sharing systems' and kube-scheduler's scorers (HAMi, KAI, gpushare, kube)."""
    if scorer == HAMI_BINPACK:
        return hami_node(cl, n)
    if scorer == HAMI_SPREAD:
        return -hami_node(cl, n)
    if scorer == KAI_BINPACK:
        return kai_node(cl, cs, c, n)
    if scorer == BEST_FIT_MEMORY:
        return -float(gpu_mem_after(cl, cs, c, n))
    if scorer == KUBE_CPU_MEM:
        return kube_cpu_mem(cl, cs, c, n)
    if scorer == MOST_ALLOCATED:
        return kube_most_allocated(cl, cs, c, n)
    raise AssertionError(
        "sharing_node_score: a scorer code without a branch (engine/fit/scoring.py REGISTRY)"
    )


@kernel
def node_score(params: Params, cl: Cluster, cs: Classes, c: int, n: int) -> float:
    """Score of placing one pod of class ``c`` on node ``n`` (which fits it); higher is better.

    Notes
    -----
    ``best_fit`` / ``worst_fit`` score the node's free GPU milli after placing
    (negated for best fit): Volcano ``binpack`` / KAI ``gpupack`` and
    kube-scheduler ``LeastAllocated`` / KAI ``gpuspread`` reduced to the GPU
    resource (docs/systems.md, "KAI Scheduler"). ``balanced_allocation`` scores
    the GPU, CPU and memory in use after placing (:func:`balance`). ``fgd``
    under dynamic MIG scores slices (:func:`gpureplay.engine.devices.mig.mig_fgd_score`).
    """
    scorer = params.codes[P_NODE]
    if scorer == FGD and params.codes[P_SHARING] == SHARING_MIG_DYNAMIC:
        return float(mig_fgd_score(cl, cs, c, n))
    if scorer in PAPER_CODES:
        return float(paper_score(cs.tasks, scorer, cl, cs, c, n))
    if scorer in SYSTEM_CODES:
        return sharing_node_score(scorer, cl, cs, c, n)
    # What the pod books there: its milli, or on slice-mask MIG its instance's slices or a whole GPU.
    after = float(cl.node_free[F_MILLI, n] - held_milli(cl, cs, c, n))
    if scorer == BEST_FIT:
        return -after
    if scorer == WORST_FIT:
        return after
    if scorer == BALANCED:
        gpu_capacity = 1000 * cl.node_int[N_GPUS, n]
        cpu_capacity = cl.node_int[N_CPU, n]
        mem_capacity = cl.node_int[N_MEM, n]
        return balance(
            _fraction(float(gpu_capacity) - after, gpu_capacity),
            _fraction(float(cpu_capacity - cl.node_free[F_CPU, n] + cs.ints[C_CPU, c]), cpu_capacity),
            _fraction(float(mem_capacity - cl.node_free[F_MEM, n] + cs.ints[C_MEM, c]), mem_capacity),
        )
    if scorer in (FIRST_FIT, RANDOM):  # every node ties: the index (or the draw) decides
        return 0.0
    raise AssertionError("node_score: a scorer code without a branch (engine/fit/scoring.py REGISTRY)")


@kernel
def choose_node(
    params: Params, cl: Cluster, ix: FitIndex, cs: Classes, c: int, job: int, pod: int, attempt: int
) -> int:
    """The node for one pod of class ``c`` (job id ``job``, pod ``pod``, run attempt ``attempt``); -1: none.

    Notes
    -----
    Filter then score, as kube-scheduler's framework runs Filter plugins and
    then Score plugins on the feasible nodes. Random choice draws only when
    some node fits. The fit trees ignore nominations: when a nomination that
    outranks the pod rules out the trees' answer, the nodes are scanned.
    """
    scorer = params.codes[P_NODE]
    if cs.ints[C_EXACT, c] == 1 and uses_index(params):
        n = index_query(ix, cs.mask[c], cs.ints[C_K, c])
        # The best node of all that fit is the best of those that fit beside the nominations, if it is one.
        if n < 0 or not nominated_for(cl, cs, c) or nominated_limit(cl, cs, c, n, 1) >= 1:
            return n
    num_nodes = cl.node_int.shape[1]
    if scorer == RANDOM:
        count = 0
        for n in range(num_nodes):
            if node_capacity(cl, cs, c, n, 1) >= 1:
                count += 1
        if count == 0:
            return -1
        pick = int(draw(params.codes[P_SEED], job, pod, attempt, DRAW_NODE) % np.uint64(count))
        for n in range(num_nodes):
            if node_capacity(cl, cs, c, n, 1) >= 1:
                if pick == 0:
                    return n
                pick -= 1
        return -1
    rule = params.codes[P_TIES]
    ties = rule != TIES_LOWEST
    base = np.uint64(0)
    if rule == TIES_RANDOM:
        base = draw(params.codes[P_SEED], job, pod, attempt, DRAW_NODE)
    elif rule == TIES_SEEDED_ORDER:
        # One key per node for the whole replay: a fixed random order of the nodes.
        base = draw(params.codes[P_SEED], 0, 0, 0, DRAW_NODE_ORDER)
    best = -1
    best_score = 0.0
    best_key = np.uint64(0)
    for n in range(num_nodes):
        if node_capacity(cl, cs, c, n, 1) < 1:
            continue
        if scorer == FIRST_FIT:
            return n
        score = node_score(params, cl, cs, c, n)
        if best < 0 or score > best_score:
            best = n
            best_score = score
            if ties:
                best_key = tie_key(base, n)
        elif ties and score == best_score:
            # Uniform among the tied nodes: the one whose key is smallest.
            key = tie_key(base, n)
            if key < best_key:
                best = n
                best_key = key
    return best


@kernel
def gpu_score(params: Params, cl: Cluster, n: int, g: int, m: int, q: int, gmem: int) -> float:
    """Score of putting a shared pod of ``m`` milli on GPU ``g`` of node ``n`` (it fits); higher is better.

    ``q`` is the memory the pod names (0: none), ``gmem`` what it takes
    (:func:`gpureplay.engine.fit.resources.share_gmem`).

    Notes
    -----
    ``best_fit`` takes the GPU with the least free milli that fits (KAI's
    ``gpupack``: the most used shared GPU first, a wholly free one last);
    ``worst_fit`` spreads; ``balanced_allocation`` balances the GPU's
    compute and memory shares; ``hami_binpack`` / ``hami_spread`` are HAMi's
    device policies (:func:`hami_gpu`, highest / lowest; HAMi orders by NUMA
    node first, not modelled: a node's GPUs count as one NUMA node);
    ``best_fit_memory`` is gpushare-scheduler-extender's bind
    (``allocateGPUID``: the least free memory that fits, ties lowest index).
    """
    scorer = params.codes[P_GPU]
    after = float(cl.gpu_free[G_MILLI, g] - m)
    if scorer == BEST_FIT:
        return -after
    if scorer == WORST_FIT:
        return after
    if scorer == BALANCED:
        mem_capacity = cl.node_int[N_GPU_MEM, n]
        used_mem = float(mem_capacity - cl.gpu_free[G_MEM, g] + gmem)
        return balance(_fraction(1000.0 - after, 1000), _fraction(used_mem, mem_capacity), -1.0)
    if scorer == HAMI_BINPACK:
        return hami_gpu(cl, n, g, m, q, gmem)
    if scorer == HAMI_SPREAD:
        return -hami_gpu(cl, n, g, m, q, gmem)
    if scorer == BEST_FIT_MEMORY:
        return -float(cl.gpu_free[G_MEM, g] - gmem)
    if scorer in (FIRST_FIT, RANDOM):
        return 0.0
    raise AssertionError("gpu_score: a GPU scorer code without a branch (engine/fit/scoring.py REGISTRY)")


@kernel
def choose_gpu(
    params: Params, cl: Cluster, cs: Classes, c: int, n: int, job: int, pod: int, attempt: int
) -> int:
    """The GPU of node ``n`` for a shared pod of class ``c`` (the node is known to fit it)."""
    scorer = params.codes[P_GPU]
    if scorer == FGD:
        return int(fgd_gpu(cs.tasks, cl, cs, c, n))
    m = cs.ints[C_MILLI, c]
    q = cs.ints[C_GMEM, c]
    gmem = share_gmem(cl, n, m, q)
    g0 = cl.node_int[N_GPU0, n]
    g1 = g0 + cl.node_int[N_GPUS, n]
    if scorer == RANDOM:
        count = 0
        for g in range(g0, g1):
            if gpu_fits(cl, g, m, gmem):
                count += 1
        pick = int(draw(params.codes[P_SEED], job, pod, attempt, DRAW_GPU) % np.uint64(count))
        for g in range(g0, g1):
            if gpu_fits(cl, g, m, gmem):
                if pick == 0:
                    return g
                pick -= 1
        return -1
    best = -1
    best_score = 0.0
    for g in range(g0, g1):
        if not gpu_fits(cl, g, m, gmem):
            continue
        if scorer == FIRST_FIT:
            return g
        score = gpu_score(params, cl, n, g, m, q, gmem)
        if best < 0 or score > best_score:
            best = g
            best_score = score
    return best
