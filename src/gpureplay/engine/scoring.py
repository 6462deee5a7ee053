"""The placement hook: filter the nodes a pod fits, score them, take the best (and the GPU on it).

A node scorer is a code in ``params.codes[P_NODE]``; a GPU scorer (the GPU a
shared pod goes to) one in ``params.codes[P_GPU]``. Every scorer is written
here, in :func:`node_score` / :func:`gpu_score`, and named in
:data:`SCORERS`; the policy refers to it by that name. Adding a scorer means
adding its name, its branch in the score functions and its reference twin
(``tests/reference/scoring.py``) - nothing else.

Rules shared by every scorer: the highest score wins, ties go to the lowest
node (GPU) index; ``random`` draws a candidate uniformly (the counter-based
generator of :mod:`gpureplay.engine.rng`, candidates in index order);
``first_fit`` is the lowest index that fits. A scorer that ranks nodes by
their own free capacity only may declare itself *indexable*: then whole-GPU
pods without CPU, memory or GPU-memory limits are placed through the
per-model fit trees of :mod:`gpureplay.engine.fitindex`, decided in one place
(:func:`uses_index`).
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.bundles import Classes, Cluster, FitIndex, Params
from gpureplay.engine.config import entry_kernel, inline_kernel, kernel
from gpureplay.engine.fitindex import index_query, index_set
from gpureplay.engine.layout import (
    BIG,
    C_CPU,
    C_EXACT,
    C_K,
    C_MEM,
    C_MILLI,
    F_CPU,
    F_MEM,
    F_MILLI,
    F_WHOLE,
    G_MEM,
    G_MILLI,
    N_CPU,
    N_GPU0,
    N_GPU_MEM,
    N_GPUS,
    N_MEM,
    N_MODEL,
    P_GPU,
    P_NODE,
    P_SEED,
)
from gpureplay.engine.resources import node_capacity
from gpureplay.engine.rng import DRAW_GPU, DRAW_NODE, draw

#: Scorer names by code. ``first_fit``: lowest index. ``best_fit``: least free
#: GPU milli left on the node (GPU) after placing (binpack: Volcano
#: ``binpack``, KAI ``gpupack``, gpushare's bind). ``worst_fit``: most
#: (spread: kube-scheduler ``LeastAllocated``, KAI ``gpuspread``). ``random``:
#: uniform among the candidates. ``balanced_allocation``: kube-scheduler's
#: ``NodeResourcesBalancedAllocation`` over GPU, CPU and memory (see
#: :func:`balance`).
SCORERS: tuple[str, ...] = ("first_fit", "best_fit", "worst_fit", "random", "balanced_allocation")
FIRST_FIT = 0
BEST_FIT = 1
WORST_FIT = 2
RANDOM = 3
BALANCED = 4

_MILLI_CEILING = 1 << 29


def scorer_code(name: str) -> int:
    """The code of a scorer name (KeyError listing the names when unknown)."""
    try:
        return SCORERS.index(name)
    except ValueError:
        raise KeyError(f"unknown scorer {name!r}; known: {', '.join(SCORERS)}") from None


@inline_kernel
def indexable(scorer: int) -> bool:
    """Whether a node scorer ranks nodes by a key of their own free capacity (fit-tree eligible)."""
    return scorer in (FIRST_FIT, BEST_FIT, WORST_FIT)


@inline_kernel
def index_key(scorer: int, cl: Cluster, n: int) -> int:
    """Node ``n``'s key under an indexable scorer: smaller is preferred, the node index in the low bits.

    Notes
    -----
    For a fixed pod, "free milli after placing" ranks nodes like their free
    milli now, which is what the key holds.
    """
    if scorer == FIRST_FIT:
        return n
    free = cl.node_free[F_MILLI, n]
    if scorer == BEST_FIT:
        return int((free << 32) | n)
    return int(((_MILLI_CEILING - free) << 32) | n)


@inline_kernel
def uses_index(params: Params) -> bool:
    """Whether the replay keeps the fit trees (the one place this is decided)."""
    return indexable(params.codes[P_NODE])


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


@kernel
def node_score(params: Params, cl: Cluster, cs: Classes, c: int, n: int) -> float:
    """Score of placing one pod of class ``c`` on node ``n`` (which fits it); higher is better.

    Notes
    -----
    ``best_fit`` / ``worst_fit`` score the node's free GPU milli after placing
    (negated for best fit): Volcano ``binpack`` / KAI ``gpupack`` and
    kube-scheduler ``LeastAllocated`` / KAI ``gpuspread`` reduced to the GPU
    resource (scheduler-semantics.md §2.2). ``balanced_allocation`` scores
    the GPU, CPU and memory in use after placing (:func:`balance`).
    """
    scorer = params.codes[P_NODE]
    after = float(cl.node_free[F_MILLI, n] - cs.ints[C_MILLI, c])
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
    return 0.0


@kernel
def choose_node(
    params: Params, cl: Cluster, ix: FitIndex, cs: Classes, c: int, job: int, pod: int, attempt: int
) -> int:
    """The node for one pod of class ``c`` (job id ``job``, pod ``pod``, run attempt ``attempt``); -1: none.

    Notes
    -----
    Filter then score, as kube-scheduler's framework runs Filter plugins and
    then Score plugins on the feasible nodes. Random choice draws only when
    some node fits.
    """
    scorer = params.codes[P_NODE]
    if cs.ints[C_EXACT, c] == 1 and uses_index(params):
        return index_query(ix, cs.mask[c], cs.ints[C_K, c])
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
    best = -1
    best_score = 0.0
    for n in range(num_nodes):
        if node_capacity(cl, cs, c, n, 1) < 1:
            continue
        if scorer == FIRST_FIT:
            return n
        score = node_score(params, cl, cs, c, n)
        if best < 0 or score > best_score:
            best = n
            best_score = score
    return best


@kernel
def gpu_score(params: Params, cl: Cluster, n: int, g: int, m: int, q: int) -> float:
    """Score of putting a shared pod of ``m`` milli and ``q`` MiB on GPU ``g`` of node ``n`` (it fits).

    Higher is better.

    Notes
    -----
    ``best_fit`` is Alibaba gpushare-scheduler-extender's bind rule (the GPU
    with the least free capacity that fits); ``worst_fit`` spreads;
    ``balanced_allocation`` balances the GPU's compute and memory shares.
    """
    scorer = params.codes[P_GPU]
    after = float(cl.gpu_free[G_MILLI, g] - m)
    if scorer == BEST_FIT:
        return -after
    if scorer == WORST_FIT:
        return after
    if scorer == BALANCED:
        mem_capacity = cl.node_int[N_GPU_MEM, n]
        used_mem = float(mem_capacity - cl.gpu_free[G_MEM, g] + q)
        return balance(_fraction(1000.0 - after, 1000), _fraction(used_mem, mem_capacity), -1.0)
    return 0.0


@kernel
def choose_gpu(params: Params, cl: Cluster, n: int, m: int, q: int, job: int, pod: int, attempt: int) -> int:
    """The GPU of node ``n`` for a shared pod of ``m`` milli and ``q`` MiB (the node is known to fit it)."""
    scorer = params.codes[P_GPU]
    g0 = cl.node_int[N_GPU0, n]
    g1 = g0 + cl.node_int[N_GPUS, n]
    if scorer == RANDOM:
        count = 0
        for g in range(g0, g1):
            if cl.gpu_free[G_MILLI, g] >= m and cl.gpu_free[G_MEM, g] >= q:
                count += 1
        pick = int(draw(params.codes[P_SEED], job, pod, attempt, DRAW_GPU) % np.uint64(count))
        for g in range(g0, g1):
            if cl.gpu_free[G_MILLI, g] >= m and cl.gpu_free[G_MEM, g] >= q:
                if pick == 0:
                    return g
                pick -= 1
        return -1
    best = -1
    best_score = 0.0
    for g in range(g0, g1):
        if cl.gpu_free[G_MILLI, g] < m or cl.gpu_free[G_MEM, g] < q:
            continue
        if scorer == FIRST_FIT:
            return g
        score = gpu_score(params, cl, n, g, m, q)
        if best < 0 or score > best_score:
            best = g
            best_score = score
    return best
