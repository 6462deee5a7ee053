"""Topology-aware gang placement: KAI Scheduler's topology plugin.

KAI (``NVIDIA/KAI-Scheduler``, ``docs/topology/README.md``;
``pkg/scheduler/plugins/topology``: ``calculateRelevantDomainLevels``,
``getJobAllocatableDomains``, ``sortTree``, ``calculateNodeScores``) places a
gang with a ``required`` and/or ``preferred`` level like this:

1. a domain fits when the pods of the job its nodes can take, summed, hold the
   whole gang (``checkJobDomainFit``; homogeneous pods);
2. the domains of every level from the preferred one (or the required one)
   up to the required one (or the whole cluster) are candidate node sets,
   the lowest level first; inside a level they follow the sorted tree: the
   children of each domain by the job's dominant share of their free
   resources, highest first (bin-pack: least free), ties by id, parent by
   parent (``sortTree``, ``reverseLevelOrder``);
3. the first candidate that fits takes the gang: each pod goes to the node
   whose preferred-level domain ranks latest in the sorted tree (more free
   first: ``calculateNodeScores``, 10 000 per tenth of the rank, above every
   other plugin), then by the node scorer.

The rules in full: docs/engine/placement.md, "KAI topology"; the plain-Python
twin is the ``[KAI topology]`` code of
``tests/reference/simulator.py``.
"""

from __future__ import annotations

from gpureplay.engine.jit.config import kernel
from gpureplay.engine.placement.kueue_tas import fill_counts, leaf_range, place_in_leaves
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    FitIndex,
    Jobs,
    JobState,
    Params,
    Run,
    Scratch,
    Topology,
)
from gpureplay.engine.state.layout import (
    BIG,
    C_CPU,
    C_K,
    C_KIND,
    C_MEM,
    C_MILLI,
    C_PODS,
    C_TAS_LEVEL,
    C_TAS_MODE,
    F_CPU,
    F_MEM,
    F_MILLI,
    F_WHOLE,
    J_CLASS,
    KIND_WHOLE,
    LEVEL_NODE,
    TM_PREFERRED,
    TM_REQUIRED,
    WHOLE,
)

__all__ = ["UNBOUNDED", "bounded", "fill_free", "kai_place"]

#: What a node with no known CPU or memory capacity (``BIG``) counts as, and where domain sums stop: a
#: resource that large is unbounded (its share is 0), and sums of ``BIG`` would overflow.
UNBOUNDED = 1 << 50


@kernel
def bounded(value: int) -> int:
    """A node's free amount, ``UNBOUNDED`` when its capacity is unknown."""
    return UNBOUNDED if value >= BIG // 2 else value


#: The share KAI gives a resource the domain has none of (``requiredResourceNotInDomainRatio``).
NO_RESOURCE_SHARE = 1000.0


@kernel
def fill_free(tas: Topology, cl: Cluster, cs: Classes, c: int) -> None:
    """Free GPU milli, CPU and memory per domain, and the job's dominant share of them (``tas.ratio``)."""
    whole = cs.ints[C_KIND, c] == KIND_WHOLE
    free = tas.free
    for d in range(tas.sizes[LEVEL_NODE]):
        n = tas.leaf_node[d]
        free[0, LEVEL_NODE, d] = cl.node_free[F_WHOLE, n] * WHOLE if whole else cl.node_free[F_MILLI, n]
        free[1, LEVEL_NODE, d] = bounded(cl.node_free[F_CPU, n])
        free[2, LEVEL_NODE, d] = bounded(cl.node_free[F_MEM, n])
    for level in range(LEVEL_NODE - 1, -1, -1):
        for d in range(tas.sizes[level]):
            for r in range(3):
                total = 0
                for child in range(tas.child0[level, d], tas.child0[level, d + 1]):
                    total = min(total + free[r, level + 1, child], UNBOUNDED)
                free[r, level, d] = total
    pods = cs.ints[C_PODS, c]
    gpu = cs.ints[C_K, c] * WHOLE if whole else cs.ints[C_MILLI, c]
    cpu = cs.ints[C_CPU, c]
    mem = cs.ints[C_MEM, c]
    for level in range(LEVEL_NODE + 1):
        for d in range(tas.sizes[level]):
            share = 0.0
            for r in range(3):
                asked = gpu if r == 0 else cpu if r == 1 else mem
                if asked <= 0:
                    continue
                room = free[r, level, d]
                if room >= UNBOUNDED:
                    continue  # a resource the trace gives no capacity for never limits: no share
                part = NO_RESOURCE_SHARE if room <= 0 else pods * asked / room
                share = max(share, part)
            tas.ratio[level, d] = share


@kernel
def sort_group(tas: Topology, level: int, start: int, end: int) -> None:
    """Sort ``tas.order[level, start:end]`` by the job's share, highest first, ties by id (insertion sort:
    a domain's children are few)."""
    row = tas.order[level]
    share = tas.ratio[level]
    for i in range(start + 1, end):
        d = row[i]
        k = i - 1
        while k >= start and (share[row[k]] < share[d] or (share[row[k]] == share[d] and row[k] > d)):
            row[k + 1] = row[k]
            k -= 1
        row[k + 1] = d


@kernel
def sort_tree(tas: Topology, depth: int) -> None:
    """KAI's ``sortTree`` down to ``depth``: each level's domains parent by parent, each parent's children
    sorted (``tas.order``), and every domain's place in its level (``tas.rank``)."""
    for d in range(tas.sizes[0]):
        tas.order[0, d] = d
    sort_group(tas, 0, 0, tas.sizes[0])
    for level in range(1, depth + 1):
        k = 0
        for i in range(tas.sizes[level - 1]):
            parent = tas.order[level - 1, i]
            start = k
            for child in range(tas.child0[level - 1, parent], tas.child0[level - 1, parent + 1]):
                tas.order[level, k] = child
                k += 1
            sort_group(tas, level, start, k)
    for level in range(depth + 1):
        for i in range(tas.sizes[level]):
            tas.rank[level, tas.order[level, i]] = i


@kernel
def node_set(tas: Topology, cs: Classes, c: int) -> tuple[int, int]:
    """The first candidate domain that holds the gang: ``(level, domain)``; level -1 is the whole cluster,
    -2 none (the job waits)."""
    pods = cs.ints[C_PODS, c]
    low = cs.ints[C_TAS_LEVEL, c]
    high = low if cs.ints[C_TAS_MODE, c] == TM_REQUIRED else -1
    for level in range(low, high - 1, -1):
        if level < 0:
            total = 0
            for d in range(tas.sizes[0]):
                total += tas.state[0, d]
            return (-1, 0) if total >= pods else (-2, -1)
        for i in range(tas.sizes[level]):
            d = tas.order[level, i]
            if tas.state[level, d] >= pods:
                return level, d
    return -2, -1


@kernel
def kai_place(
    tas: Topology,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    j: int,
    t: float,
) -> bool:
    """Place job ``j`` (a required or preferred request) by KAI's rules; False when no candidate holds it.

    Notes
    -----
    The first candidate that fits always takes the whole gang (identical
    pods, additive per-node capacity), so no candidate is tried and undone.
    Node order: the preferred-level domain's score ``10 (i + 1) // n`` (its
    place ``i`` of ``n`` in the sorted tree; only with a preferred level),
    then the node scorer, then leaf order.
    """
    c = jobs.ints[J_CLASS, j]
    low = cs.ints[C_TAS_LEVEL, c]
    fill_counts(tas, cl, cs, c, 0)
    fill_free(tas, cl, cs, c)
    sort_tree(tas, low)
    level, d = node_set(tas, cs, c)
    if level < -1:
        return False
    first, end = leaf_range(tas, level, d)
    ranked = cs.ints[C_TAS_MODE, c] == TM_PREFERRED
    place_in_leaves(tas, params, jobs, cs, cl, ix, js, sc, run, j, t, first, end, low, ranked)
    return True
