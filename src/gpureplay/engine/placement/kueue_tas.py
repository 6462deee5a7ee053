"""Topology-aware gang placement: Kueue's Topology Aware Scheduling (TAS) assignment.

Kueue (KEP-2724, ``pkg/cache/tas_flavor_snapshot.go``) places a whole PodSet
at admission on a tree of topology domains (here spine, rack, NVLink domain,
node: the nodes table's levels, outermost first):

1. every node's capacity in pods of the job is counted and summed up the
   tree (``fillInCounts``);
2. a ``required`` request takes one domain of its level that holds every pod
   or none at all; ``preferred`` tries its level, then each level above, and
   at the top spreads over several domains; ``unconstrained`` (and a job
   with no request: Kueue's implied request) spreads over nodes
   (``findLevelWithFitDomains``);
3. the chosen domains' children are sorted and taken greedily level by level
   down to the nodes (``updateCountsToMinimum``).

Domains are sorted by capacity, most first (ties: path order), or least
first under ``LeastFreeCapacity``. BestFit (the default for required and
preferred requests) then swaps the domain that completes the count for the
tightest one that still holds the rest: free 3, 3, 2, 1 and 7 pods take 3, 3
and 1. The rules in full: docs/engine/placement.md, "Kueue
TAS"; the plain-Python twin is the ``[Topology-aware scheduling]`` code
of ``tests/reference/simulator.py``.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.fit.resources import node_capacity
from gpureplay.engine.fit.scoring import node_score
from gpureplay.engine.jit.config import entry_kernel, kernel
from gpureplay.engine.jobs import place_pod
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
    C_EXACT,
    C_K,
    C_PODS,
    C_TAS_LEVEL,
    C_TAS_MODE,
    C_TAS_SLICE_LEVEL,
    C_TAS_SLICE_SIZE,
    F_WHOLE,
    J_CLASS,
    LEVEL_NODE,
    N_MODEL,
    P_SHARING,
    P_TAS_PROFILE,
    PROFILE_LEAST_FREE,
    PROFILE_MIXED,
    PROFILE_MOST_FREE,
    SHARING_NONE,
    TM_NONE,
    TM_REQUIRED,
    TM_UNCONSTRAINED,
    Int64Array,
)

#: Most pods one node is counted as holding: a pod asking nothing fits any node without end, and sums of
#: ``BIG`` would overflow (Kueue counts the ``pods`` resource too, at most the kubelet's maxPods).
COUNT_CAP = 1 << 40

__all__ = ["fill_counts", "kueue_assign", "leaf_range", "level_capacity", "place_in_leaves"]


@kernel
def fill_counts(tas: Topology, cl: Cluster, cs: Classes, c: int, top: int) -> None:
    """Pods of class ``c`` each node holds now (Kueue's ``CountIn``: not capped at the job's pods), summed up
    the tree into ``tas.state`` from the leaves up to level ``top``."""
    st = tas.state
    for d in range(tas.sizes[LEVEL_NODE]):
        st[LEVEL_NODE, d] = node_capacity(cl, cs, c, tas.leaf_node[d], COUNT_CAP)
    for level in range(LEVEL_NODE - 1, top - 1, -1):
        for d in range(tas.sizes[level]):
            total = 0
            for child in range(tas.child0[level, d], tas.child0[level, d + 1]):
                total += st[level + 1, child]
            st[level, d] = total


@kernel
def _sift_down(a: Int64Array, root: int, end: int) -> None:
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and a[child + 1] > a[child]:
            child += 1
        if a[root] >= a[child]:
            return
        a[root], a[child] = a[child], a[root]
        root = child


@kernel
def sort_prefix(a: Int64Array, n: int) -> None:
    """Sort ``a[:n]`` ascending in place (heapsort: no allocation; numba's sort cannot take a view here)."""
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(a, root, n)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift_down(a, 0, end)


@kernel
def fill_units(tas: Topology, top: int, slice_level: int, size: int) -> None:
    """``tas.units`` from ``tas.state`` (:func:`fill_counts`) for levels ``top`` and below: Kueue's
    ``sliceState`` (``fillInCountsHelper``) for a request in slices of ``size`` pods at ``slice_level``.

    Notes
    -----
    At the slice level a domain holds ``state // size`` slices, above it the
    sum of its children's; below it the search counts pods (each slice's pods
    are spread inside its domain), so ``units`` is ``state`` there. Without
    slices (``size`` 1 at the node level) ``units`` is ``state`` everywhere.
    """
    for level in range(LEVEL_NODE, top - 1, -1):
        for d in range(tas.sizes[level]):
            if level > slice_level:
                tas.units[level, d] = tas.state[level, d]
            elif level == slice_level:
                tas.units[level, d] = tas.state[level, d] // size
            else:
                total = 0
                for child in range(tas.child0[level, d], tas.child0[level, d + 1]):
                    total += tas.units[level + 1, child]
                tas.units[level, d] = total


@kernel
def _before(tas: Topology, level: int, a: int, b: int, ascending: bool) -> bool:
    """Kueue's ``sortedDomains`` order: units descending (ascending under LeastFreeCapacity), then
    pods (state) ascending, then id."""
    ua = tas.units[level, a]
    ub = tas.units[level, b]
    if ua != ub:
        return bool(ua < ub) if ascending else bool(ua > ub)
    sa = tas.state[level, a]
    sb = tas.state[level, b]
    if sa != sb:
        return bool(sa < sb)
    return a < b


@kernel
def _sift_by(tas: Topology, level: int, ids: Int64Array, root: int, end: int, ascending: bool) -> None:
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and _before(tas, level, ids[child], ids[child + 1], ascending):
            child += 1
        if not _before(tas, level, ids[root], ids[child], ascending):
            return
        ids[root], ids[child] = ids[child], ids[root]
        root = child


@kernel
def sort_domains(tas: Topology, level: int, ids: Int64Array, size: int, ascending: bool, sliced: bool) -> int:
    """Sort ``ids[:size]`` (domains of ``level``) by units, most first (least when ``ascending``), ties by
    pods ascending then id (Kueue's ``sortedDomains``).

    Domains with no unit are dropped (they take nothing); returns how many remain. Without slices
    (``sliced`` False) units equal pods, so the order is by pods and id, sorted by one integer key.
    """
    kept = 0
    if not sliced:
        scale = tas.sizes[level] + 1
        for i in range(size):
            d = ids[i]
            s = tas.units[level, d]
            if s > 0:
                tas.key[kept] = (s if ascending else -s) * scale + d
                kept += 1
        sort_prefix(tas.key, kept)
        for i in range(kept):
            ids[i] = tas.key[i] % scale
        return kept
    for i in range(size):
        if tas.units[level, ids[i]] > 0:
            ids[kept] = ids[i]
            kept += 1
    # Heapsort on the comparison (the three keys do not fit one integer: counts reach 2^40).
    for root in range(kept // 2 - 1, -1, -1):
        _sift_by(tas, level, ids, root, kept, ascending)
    for end in range(kept - 1, 0, -1):
        ids[0], ids[end] = ids[end], ids[0]
        _sift_by(tas, level, ids, 0, end, ascending)
    return kept


@kernel
def best_fit_index(tas: Topology, level: int, ids: Int64Array, start: int, size: int, count: int) -> int:
    """Kueue's ``findBestFitDomainBy`` over ``ids[start:size]``: the first domain whose units hold
    ``count`` and are fewer than every domain's before it that does (the first of the tightest); ``start``
    when none does better (on a list sorted least first, never)."""
    best = start
    for i in range(start, size):
        s = tas.units[level, ids[i]]
        if s >= count and s < tas.units[level, ids[best]]:
            best = i
    return best


@kernel
def find_level(
    tas: Topology,
    level: int,
    count: int,
    required: bool,
    unconstrained: bool,
    best_fit: bool,
    ascending: bool,
    sliced: bool,
) -> tuple[int, int]:
    """Kueue's ``findLevelWithFitDomains``: the level the assignment is made at and its domains (``tas.cur``).

    ``count`` is in units (slices of a sliced request, else pods).

    Returns
    -------
    (int, int)
        The level and how many domains were chosen; ``(-1, 0)`` when the
        request cannot be met now.
    """
    ids = tas.nxt
    un = tas.units
    while True:
        for d in range(tas.sizes[level]):
            ids[d] = d
        size = sort_domains(tas, level, ids, tas.sizes[level], ascending, sliced)
        if size == 0:
            return -1, 0
        if ascending:
            # LeastFreeCapacity: the first (least free) domain that holds every unit, if one does.
            for i in range(size):
                if un[level, ids[i]] >= count:
                    tas.cur[0] = ids[i]
                    return level, 1
        top = 0
        if best_fit and un[level, ids[0]] >= count:
            top = best_fit_index(tas, level, ids, 0, size, count)
        if un[level, ids[top]] >= count:
            tas.cur[0] = ids[top]
            return level, 1
        if required:
            return -1, 0
        if level > 0 and not unconstrained:
            level -= 1
            continue
        # At the top (or unconstrained): several domains, the most free first.
        remaining = count
        chosen = 0
        idx = 0
        while remaining > 0 and idx < size:
            pick = idx
            if best_fit and un[level, ids[idx]] >= remaining:
                pick = best_fit_index(tas, level, ids, idx, size, remaining)
            tas.cur[chosen] = ids[pick]
            chosen += 1
            remaining -= un[level, ids[idx]]
            idx += 1
        if remaining > 0:
            return -1, 0
        return level, chosen


@kernel
def update_counts(
    tas: Topology, level: int, ids: Int64Array, size: int, count: int, best_fit: bool, per_unit: int
) -> int:
    """Kueue's ``updateCountsToMinimumGeneric``: take ``ids[:size]`` in order until ``count`` units are
    assigned; each kept domain's units become the units it gets and its state the pods (``per_unit``
    pods a unit). Returns how many domains are kept."""
    un = tas.units
    remaining = count
    for i in range(size):
        d = ids[i]
        if best_fit and un[level, d] >= remaining:
            d = ids[best_fit_index(tas, level, ids, i, size, remaining)]
        if un[level, d] >= remaining:
            un[level, d] = remaining
            tas.state[level, d] = remaining * per_unit
            ids[i] = d
            return i + 1
        tas.state[level, d] = un[level, d] * per_unit
        remaining -= un[level, d]
    return 0


@kernel
def one_exact_pod(tas: Topology, cl: Cluster, cs: Classes, c: int, most: bool) -> int:
    """One unconstrained pod of whole GPUs: what the search gives, without counting every node.

    Notes
    -----
    With one pod every profile takes the node of least capacity (the
    LeastFreeCapacity order, and BestFit's swap) or, under MostFreeCapacity,
    of most, ties by id; a node's capacity is its wholly free GPUs // k. The
    per-model histogram of wholly free GPUs gives that capacity, and the
    first leaf in id order that has it is the node.
    """
    k = cs.ints[C_K, c]
    mask = cs.mask[c]
    width = cl.model_hist.shape[1]
    target = -1
    for model in range(cl.model_hist.shape[0]):
        if ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
            continue
        for i in range(k, width):
            w = width - 1 - (i - k) if most else i
            if cl.model_hist[model, w] > 0:
                q = w // k
                if target < 0 or (q > target if most else q < target):
                    target = q
                break
    if target < 0:
        return 0
    for d in range(tas.sizes[LEVEL_NODE]):
        n = tas.leaf_node[d]
        model = cl.node_int[N_MODEL, n]
        if (
            model >= 0
            and ((mask >> np.uint64(model)) & np.uint64(1)) != np.uint64(0)
            and cl.node_free[F_WHOLE, n] // k == target
        ):
            tas.cur[0] = d
            tas.state[LEVEL_NODE, d] = 1
            return 1
    return 0


@kernel
def kueue_assign(tas: Topology, cl: Cluster, cs: Classes, c: int, profile: int, exact: bool) -> int:
    """Kueue's TAS assignment for one job of class ``c`` on the current state; returns the nodes it uses.

    Returns
    -------
    int
        ``k`` > 0: leaves ``tas.cur[:k]`` (in path order) with ``tas.state[LEVEL_NODE, d]`` pods each;
        0: the request cannot be met now.

    Notes
    -----
    ``profile`` is Kueue's TAS profile (``PROFILE_*``): the default
    ``TASProfileMixed`` uses BestFit for required and preferred requests and
    LeastFreeCapacity (ascending, no best-fit swap) for unconstrained ones;
    ``TASProfileLeastFreeCapacity`` uses it for all, ``TASProfileMostFreeCapacity``
    sorts most free first without the swap. ``exact``: a node's capacity for
    a class marked ``C_EXACT`` is its wholly free GPUs // k (no GPU sharing or
    MIG), which lets a one-pod unconstrained job skip the search.

    A request in slices (KEP-2724, "Two-level Topology Aware scheduling";
    ``findTopologyAssignment``) counts slices down to its slice level: the
    level search and the descent to the slice level take whole slices, then
    each slice-level domain's pods go to its own children, level by level,
    least room first (Kueue's order there: no slice count, pods ascending). A
    slice-only request (no mode) is searched from the top level, unconstrained.
    """
    pods = cs.ints[C_PODS, c]
    mode = cs.ints[C_TAS_MODE, c]
    slice_level = cs.ints[C_TAS_SLICE_LEVEL, c]
    per_slice = cs.ints[C_TAS_SLICE_SIZE, c]
    sliced = per_slice > 1 or slice_level < LEVEL_NODE
    unconstrained = mode in (TM_UNCONSTRAINED, TM_NONE)
    if unconstrained and pods == 1 and cs.ints[C_EXACT, c] == 1 and exact and not sliced:
        return one_exact_pod(tas, cl, cs, c, profile == PROFILE_MOST_FREE)
    # A slice-only request (Kueue's isSliceTopologyOnlyRequest) searches from the top, unconstrained.
    level = (0 if sliced else LEVEL_NODE) if unconstrained else cs.ints[C_TAS_LEVEL, c]
    least = profile == PROFILE_LEAST_FREE or (unconstrained and profile == PROFILE_MIXED)
    best_fit = not (least or profile == PROFILE_MOST_FREE)
    # Unconstrained requests never look above their level; the others may go up to the top.
    top = level if unconstrained else 0
    fill_counts(tas, cl, cs, c, top)
    fill_units(tas, top, slice_level, per_slice)
    count = pods // per_slice
    fit_level, size = find_level(
        tas, level, count, mode == TM_REQUIRED, unconstrained, best_fit, least, sliced
    )
    if size == 0:
        return 0
    size = update_counts(tas, fit_level, tas.cur, size, count, best_fit, per_slice)
    # Down to the slice level: the kept domains' children all together, in slices.
    for lvl in range(fit_level, min(LEVEL_NODE, slice_level)):
        k = 0
        for i in range(size):
            d = tas.cur[i]
            for child in range(tas.child0[lvl, d], tas.child0[lvl, d + 1]):
                tas.nxt[k] = child
                k += 1
        k = sort_domains(tas, lvl + 1, tas.nxt, k, least, sliced)
        size = update_counts(tas, lvl + 1, tas.nxt, k, count, best_fit, per_slice)
        for i in range(size):
            tas.cur[i] = tas.nxt[i]
    # Below it: each domain's own pods over its own children, least room first.
    for lvl in range(max(fit_level, slice_level), LEVEL_NODE):
        k = 0
        for i in range(size):
            d = tas.cur[i]
            first = k
            for child in range(tas.child0[lvl, d], tas.child0[lvl, d + 1]):
                tas.nxt[k] = child
                k += 1
            kept = sort_domains(tas, lvl + 1, tas.nxt[first:], k - first, True, True)
            k = first + update_counts(tas, lvl + 1, tas.nxt[first:], kept, tas.state[lvl, d], best_fit, 1)
        size = k
        for i in range(size):
            tas.cur[i] = tas.nxt[i]
    sort_prefix(tas.cur, size)
    return size


@entry_kernel
def level_capacity(tas: Topology, cl: Cluster, cs: Classes, c: int, level: int, whole: bool) -> int:
    """What one domain of ``level`` holds of class ``c`` now (on the empty cluster: ever), in the class's
    units (its slices, else pods): the most, or (``whole``) the sum over the level's domains."""
    fill_counts(tas, cl, cs, c, 0)
    fill_units(tas, 0, cs.ints[C_TAS_SLICE_LEVEL, c], cs.ints[C_TAS_SLICE_SIZE, c])
    best = 0
    for d in range(tas.sizes[level]):
        best = best + tas.units[level, d] if whole else max(best, tas.units[level, d])
    return best


@kernel
def leaf_range(tas: Topology, level: int, d: int) -> tuple[int, int]:
    """The leaves under domain ``d`` of ``level`` (consecutive ids); the whole cluster for level -1."""
    if level < 0:
        return 0, tas.sizes[LEVEL_NODE]
    first = d
    end = d + 1
    for lvl in range(level, LEVEL_NODE):
        first = tas.child0[lvl, first]
        end = tas.child0[lvl, end]
    return first, end


@kernel
def place_in_leaves(
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
    first: int,
    end: int,
    level: int,
    ranked: bool,
) -> None:
    """Place every pod of job ``j`` on leaves ``[first, end)`` (which hold them all), one at a time.

    Each pod goes to the leaf that takes one more pod with the highest (rank score, node scorer's score),
    ties to the first leaf. The rank score (``ranked`` only) is KAI's ``calculateNodeScores``:
    ``10 (i + 1) // n`` for a node whose ``level`` domain is ``tas.rank[level]`` = i of n.
    """
    count = tas.sizes[level]
    c = jobs.ints[J_CLASS, j]
    for _ in range(cs.ints[C_PODS, c]):
        best = -1
        best_rank = 0
        best_score = 0.0
        for leaf in range(first, end):
            n = tas.leaf_node[leaf]
            if node_capacity(cl, cs, c, n, 1) < 1:
                continue
            rank = (10 * (tas.rank[level, tas.dom[level, n]] + 1)) // count if ranked else 0
            score = node_score(params, cl, cs, c, n)
            if best < 0 or rank > best_rank or (rank == best_rank and score > best_score):
                best = n
                best_rank = rank
                best_score = score
        place_pod(params, jobs, cs, cl, ix, js, sc, run, j, best, t)


@kernel
def kueue_place(
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
    """Place job ``j`` on Kueue's topology assignment (:func:`kueue_assign`); False when it has none now.

    Notes
    -----
    Kueue's TopologyAssignment names the pods per node; the pods are placed
    on them in path order.
    """
    c = jobs.ints[J_CLASS, j]
    size = kueue_assign(tas, cl, cs, c, params.codes[P_TAS_PROFILE], params.codes[P_SHARING] == SHARING_NONE)
    for i in range(size):
        n = tas.leaf_node[tas.cur[i]]
        for _ in range(tas.state[LEVEL_NODE, tas.cur[i]]):
            place_pod(params, jobs, cs, cl, ix, js, sc, run, j, n, t)
    return size > 0
