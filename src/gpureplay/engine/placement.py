"""Fit tests, node and GPU choice, placing and releasing pods (gang-free building blocks).

A pod asks for ``m`` milli-GPU (``0``: none; ``0 < m < 1000``: a share of one
GPU; ``m >= 1000``: ``k = m / 1000`` whole GPUs on one node), ``q`` MiB of
memory on each GPU it uses, ``c`` milli-CPU and ``r`` MiB of node memory.

The key fact the cycle kernels rely on (proved in :func:`node_capacity`): the
number of identical pods node ``n`` can still take drops by exactly one per pod
placed there, whatever GPU the pod gets. So placing ``P`` identical pods one by
one with *any* node/GPU choice succeeds iff the capacities sum to ``>= P``, and
a failing attempt places exactly that sum before failing.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.config import kernel
from gpureplay.engine.rng import rng_next
from gpureplay.engine.state import (
    BEST_FIT,
    F_CPU,
    F_MEM,
    F_MILLI,
    F_WHOLE,
    FIRST_FIT,
    G_MEM,
    G_MILLI,
    K_ALLOC,
    K_FREE_WHOLE,
    N_GPU0,
    N_GPU_MEM,
    N_GPUS,
    N_MODEL,
    NT_COUNT,
    NT_CPU,
    NT_GPU_MEM,
    NT_GPUS,
    NT_MEM,
    NT_MODEL,
    R_GANG_TOO_LARGE,
    R_NO_MODEL,
    R_NONE,
    R_POD_TOO_LARGE,
    RANDOM,
    RC_CPU,
    RC_GMEM,
    RC_K,
    RC_MEM,
    RC_MILLI,
    RC_PODS,
    WHOLE,
    WORST_FIT,
    Int64Array,
    UInt64Array,
)


@kernel
def node_capacity(
    n: int,
    m: int,
    q: int,
    c: int,
    r: int,
    mask: np.uint64,
    k: int,
    limit: int,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
) -> int:
    """How many more identical pods fit on node ``n`` now, capped at ``limit``.

    Parameters
    ----------
    n
        Node index.
    m, q, c, r
        Pod demand: milli-GPU, GPU memory per GPU, milli-CPU, node memory.
    mask
        Allowed GPU models (bit per model code); ignored when ``m == 0``.
    k
        Whole GPUs per pod (``m // 1000`` when ``m >= 1000``).
    limit
        Cap on the answer (a GPU-less pod on an unconstrained node fits
        without bound).
    node_int, node_free, gpu_free
        Static node table and current free capacity.

    Returns
    -------
    int
        ``min(limit, capacity)``; ``>= 1`` iff one pod fits the node.

    Notes
    -----
    Capacity is ``min(free_cpu // c, free_mem // r, gpu)`` where ``gpu`` is
    ``free_whole // k`` for whole pods and ``sum_g min(free_milli_g // m,
    free_mem_g // q)`` for fractional ones (HAMi/gpushare per-GPU fit, Alibaba
    gpushare-scheduler-extender ``designs.md``). Placing a pod lowers ``c``, ``r``
    and one GPU term by exactly the pod's demand, so each term (and the min)
    drops by exactly one: greedy placement of identical pods never strands
    capacity, whatever node and GPU the policy picks.
    """
    cap = limit
    if c > 0:
        cap = min(cap, node_free[F_CPU, n] // c)
    if r > 0:
        cap = min(cap, node_free[F_MEM, n] // r)
    if cap <= 0:
        return 0
    if m == 0:
        return cap
    model = node_int[N_MODEL, n]
    if node_int[N_GPUS, n] == 0 or model < 0:
        return 0
    if ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
        return 0
    if m >= WHOLE:
        if node_int[N_GPU_MEM, n] < q:
            return 0
        return int(min(cap, node_free[F_WHOLE, n] // k))
    if node_free[F_MILLI, n] < m:
        return 0
    total = 0
    g0 = node_int[N_GPU0, n]
    for g in range(g0, g0 + node_int[N_GPUS, n]):
        free = gpu_free[G_MILLI, g]
        if free < m:
            continue
        x = free // m
        if q > 0:
            x = min(x, gpu_free[G_MEM, g] // q)
        total += x
        if total >= cap:
            return cap
    return total


@kernel
def cluster_capacity(
    m: int,
    q: int,
    c: int,
    r: int,
    mask: np.uint64,
    k: int,
    limit: int,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
) -> int:
    """Identical pods the whole cluster can take now, capped at ``limit`` (stops early there).

    Notes
    -----
    By :func:`node_capacity`'s argument this is exactly the number of pods a
    gang placement of ``limit`` pods places before it fails (or ``limit`` when it
    succeeds), for every node and GPU policy: Volcano's gang plugin
    (``JobReady``: allocated >= minAvailable) decided without trial placements.
    The per-node rule of :func:`node_capacity` is written out in the loop
    because numba does not inline calls into this hot loop.
    """
    total = 0
    for n in range(node_int.shape[1]):
        cap = limit - total
        if c > 0:
            cap = min(cap, node_free[F_CPU, n] // c)
        if r > 0:
            cap = min(cap, node_free[F_MEM, n] // r)
        if cap <= 0:
            continue
        if m > 0:
            model = node_int[N_MODEL, n]
            if model < 0 or ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
                continue
            if m >= WHOLE:
                if node_int[N_GPU_MEM, n] < q:
                    continue
                cap = min(cap, node_free[F_WHOLE, n] // k)
            else:
                if node_free[F_MILLI, n] < m:
                    continue
                gpu_cap = 0
                g0 = node_int[N_GPU0, n]
                for g in range(g0, g0 + node_int[N_GPUS, n]):
                    free = gpu_free[G_MILLI, g]
                    if free < m:
                        continue
                    x = free // m
                    if q > 0:
                        x = min(x, gpu_free[G_MEM, g] // q)
                    gpu_cap += x
                    if gpu_cap >= cap:
                        break
                cap = min(cap, gpu_cap)
        total += cap
        if total >= limit:
            return limit
    return total


@kernel
def capacity_bound(
    m: int, mask: np.uint64, k: int, limit: int, model_hist: Int64Array, model_milli: Int64Array
) -> int:
    """An upper bound of :func:`cluster_capacity` from per-model aggregates, in O(models x GPUs/node).

    Parameters
    ----------
    model_hist
        ``model_hist[model, w]`` = nodes of that model with ``w`` wholly free GPUs.
    model_milli
        Free milli-GPU per model.

    Returns
    -------
    int
        ``>= cluster_capacity``, capped at ``limit``; exact for whole-GPU pods
        with no CPU, memory or GPU-memory limit (class flag ``C_EXACT``).

    Notes
    -----
    A free-capacity histogram per GPU model, in the spirit of Slurm's
    ``select/cons_tres`` per-node free counts, lets a cycle dismiss a job that
    cannot fit without scanning nodes.
    """
    if m == 0:
        return limit
    total = 0
    for model in range(model_hist.shape[0]):
        if ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
            continue
        if m >= WHOLE:
            for w in range(k, model_hist.shape[1]):
                total += model_hist[model, w] * (w // k)
        else:
            total += model_milli[model] // m
        if total >= limit:
            return limit
    return total


@kernel
def scan_nodes(
    m: int,
    q: int,
    c: int,
    r: int,
    mask: np.uint64,
    k: int,
    policy: int,
    target: int,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
) -> int:
    """One pass over the nodes a pod fits (the fit rule of :func:`node_capacity`, written inline).

    Parameters
    ----------
    policy
        FIRST/BEST/WORST_FIT: return the chosen node (-1: none). ``RANDOM``:
        with ``target < 0`` return the number of fitting nodes, with
        ``target >= 0`` the fitting node number ``target`` in index order.

    Notes
    -----
    Written as one loop because numba does not inline the per-node helper
    here. Filter-then-score as in kube-scheduler's framework (Filter, then
    Score plugins).
    """
    best = -1
    best_free = 0
    count = 0
    for n in range(node_int.shape[1]):
        if node_free[F_CPU, n] < c or node_free[F_MEM, n] < r:
            continue
        if m > 0:
            model = node_int[N_MODEL, n]
            if model < 0 or ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
                continue
            if m >= WHOLE:
                if node_free[F_WHOLE, n] < k or node_int[N_GPU_MEM, n] < q:
                    continue
            else:
                if node_free[F_MILLI, n] < m:
                    continue
                some = False
                g0 = node_int[N_GPU0, n]
                for g in range(g0, g0 + node_int[N_GPUS, n]):
                    if gpu_free[G_MILLI, g] >= m and gpu_free[G_MEM, g] >= q:
                        some = True
                        break
                if not some:
                    continue
        if policy == FIRST_FIT:
            return n
        if policy == RANDOM:
            if count == target:
                return n
            count += 1
            continue
        free = node_free[F_MILLI, n]
        if (
            best < 0
            or (policy == BEST_FIT and free < best_free)
            or (policy == WORST_FIT and free > best_free)
        ):
            best = n
            best_free = free
    if policy == RANDOM:
        return count if target < 0 else -1
    return best


@kernel
def choose_node(
    m: int,
    q: int,
    c: int,
    r: int,
    mask: np.uint64,
    k: int,
    policy: int,
    rng: UInt64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
) -> int:
    """Pick the node for one pod, or -1 when it fits nowhere (no random draw then).

    Parameters
    ----------
    policy
        ``FIRST_FIT``: lowest index. ``BEST_FIT``: least free GPU milli on the
        node after placing, ties to the lowest index. ``WORST_FIT``: most, ties
        to the lowest index. ``RANDOM``: candidate ``rng() % count`` in index order.

    Notes
    -----
    Every pod removes exactly ``m`` from its node's free milli, so "after
    placing" ranks nodes like the current free milli. Best fit is Volcano's
    ``binpack`` / KAI ``gpupack`` scoring reduced to one resource; worst fit is
    kube-scheduler ``LeastAllocated`` / KAI ``gpuspread``.
    """
    if policy != RANDOM:
        return scan_nodes(m, q, c, r, mask, k, policy, -1, node_int, node_free, gpu_free)
    count = scan_nodes(m, q, c, r, mask, k, RANDOM, -1, node_int, node_free, gpu_free)
    if count == 0:
        return -1
    pick = int(rng_next(rng) % np.uint64(count))  # the spec's rng() % count
    return scan_nodes(m, q, c, r, mask, k, RANDOM, pick, node_int, node_free, gpu_free)


@kernel
def choose_gpu(
    n: int, m: int, q: int, policy: int, rng: UInt64Array, node_int: Int64Array, gpu_free: Int64Array
) -> int:
    """Pick the GPU of node ``n`` for a fractional pod (the node is known to fit it).

    Notes
    -----
    Among GPUs with ``free_milli >= m`` and ``free_mem >= q``: first fit takes
    the lowest index; best fit the least free milli (Alibaba
    gpushare-scheduler-extender's bind: the GPU with the least free memory that
    fits, ties to the lowest index); worst fit the most; random draws one.
    """
    g0 = node_int[N_GPU0, n]
    g1 = g0 + node_int[N_GPUS, n]
    if policy == RANDOM:
        count = 0
        for g in range(g0, g1):
            if gpu_free[G_MILLI, g] >= m and gpu_free[G_MEM, g] >= q:
                count += 1
        pick = int(rng_next(rng) % np.uint64(count))
        for g in range(g0, g1):
            if gpu_free[G_MILLI, g] >= m and gpu_free[G_MEM, g] >= q:
                if pick == 0:
                    return g
                pick -= 1
        return -1
    best = -1
    best_free = 0
    for g in range(g0, g1):
        free = gpu_free[G_MILLI, g]
        if free < m or gpu_free[G_MEM, g] < q:
            continue
        if policy == FIRST_FIT:
            return g
        if (
            best < 0
            or (policy == BEST_FIT and free < best_free)
            or (policy == WORST_FIT and free > best_free)
        ):
            best = g
            best_free = free
    return best


@kernel
def set_gpu(
    g: int,
    n: int,
    milli: int,
    mem: int,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
) -> None:
    """Set GPU ``g`` (of node ``n``) to ``milli``/``mem`` free, keeping every aggregate in step.

    Notes
    -----
    The per-node wholly-free count and free-milli sum, the per-model histogram
    and the cluster totals change only here, so they are exact by construction
    (the debug invariants recompute them from scratch).
    """
    old = gpu_free[G_MILLI, g]
    gpu_free[G_MILLI, g] = milli
    gpu_free[G_MEM, g] = mem
    if old == milli:
        return
    model = node_int[N_MODEL, n]
    node_free[F_MILLI, n] += milli - old
    model_milli[model] += milli - old
    counters[K_ALLOC] -= milli - old
    was_whole = old == WHOLE
    is_whole = milli == WHOLE
    if was_whole != is_whole:
        w = node_free[F_WHOLE, n]
        d = 1 if is_whole else -1
        model_hist[model, w] -= 1
        model_hist[model, w + d] += 1
        node_free[F_WHOLE, n] = w + d
        counters[K_FREE_WHOLE] += d


@kernel
def take_pod(
    n: int,
    m: int,
    q: int,
    c: int,
    r: int,
    k: int,
    gpu_policy: int,
    rng: UInt64Array,
    slots: Int64Array,
    slot0: int,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
) -> None:
    """Place one pod on node ``n`` (which fits it), writing its GPUs to ``slots[slot0:]``.

    Notes
    -----
    Whole pods take the ``k`` lowest-index wholly free GPUs (NVIDIA
    k8s-device-plugin hands out devices in index order) and leave them at
    0 milli and 0 memory; a fractional pod takes ``m``/``q`` from the GPU
    :func:`choose_gpu` picks.
    """
    node_free[F_CPU, n] -= c
    node_free[F_MEM, n] -= r
    if m == 0:
        return
    if m >= WHOLE:
        g0 = node_int[N_GPU0, n]
        taken = 0
        for g in range(g0, g0 + node_int[N_GPUS, n]):
            if gpu_free[G_MILLI, g] == WHOLE:
                set_gpu(g, n, 0, 0, node_int, node_free, gpu_free, model_hist, model_milli, counters)
                slots[slot0 + taken] = g
                taken += 1
                if taken == k:
                    return
        return
    g = choose_gpu(n, m, q, gpu_policy, rng, node_int, gpu_free)
    set_gpu(
        g,
        n,
        gpu_free[G_MILLI, g] - m,
        gpu_free[G_MEM, g] - q,
        node_int,
        node_free,
        gpu_free,
        model_hist,
        model_milli,
        counters,
    )
    slots[slot0] = g


@kernel
def take_at(
    n: int,
    m: int,
    q: int,
    c: int,
    r: int,
    k: int,
    slots: Int64Array,
    slot0: int,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
) -> None:
    """Take a pod's resources on the GPUs already recorded in ``slots`` (same node, same GPUs).

    Notes
    -----
    Holds a backfilled job's exact placement in the EASY projection (Lifka
    1995: a backfilled job must not take what the reservation needs).
    """
    node_free[F_CPU, n] -= c
    node_free[F_MEM, n] -= r
    if m == 0:
        return
    if m >= WHOLE:
        for i in range(k):
            g = slots[slot0 + i]
            set_gpu(g, n, 0, 0, node_int, node_free, gpu_free, model_hist, model_milli, counters)
        return
    g = slots[slot0]
    set_gpu(
        g,
        n,
        gpu_free[G_MILLI, g] - m,
        gpu_free[G_MEM, g] - q,
        node_int,
        node_free,
        gpu_free,
        model_hist,
        model_milli,
        counters,
    )


@kernel
def release_pod(
    n: int,
    m: int,
    q: int,
    c: int,
    r: int,
    k: int,
    slots: Int64Array,
    slot0: int,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
) -> None:
    """Give back exactly what :func:`take_pod` (or :func:`take_at`) took.

    Notes
    -----
    Whole GPUs return to 1000 milli and the node's full per-GPU memory; a
    fractional pod returns its milli and memory to its GPU.
    """
    node_free[F_CPU, n] += c
    node_free[F_MEM, n] += r
    if m == 0:
        return
    if m >= WHOLE:
        mem = node_int[N_GPU_MEM, n]
        for i in range(k):
            g = slots[slot0 + i]
            set_gpu(g, n, WHOLE, mem, node_int, node_free, gpu_free, model_hist, model_milli, counters)
        return
    g = slots[slot0]
    set_gpu(
        g,
        n,
        gpu_free[G_MILLI, g] + m,
        gpu_free[G_MEM, g] + q,
        node_int,
        node_free,
        gpu_free,
        model_hist,
        model_milli,
        counters,
    )


@kernel
def empty_node_capacity(
    m: int, q: int, c: int, r: int, mask: np.uint64, k: int, limit: int, node_type: Int64Array, t: int
) -> int:
    """Identical pods that fit an *empty* node of type ``t`` (greedy packing), capped at ``limit``.

    Notes
    -----
    The same capacity rule as :func:`node_capacity` on a node with nothing
    allocated; used by the admission checks.
    """
    cap = limit
    if c > 0:
        cap = min(cap, node_type[NT_CPU, t] // c)
    if r > 0:
        cap = min(cap, node_type[NT_MEM, t] // r)
    if cap <= 0:
        return 0
    if m == 0:
        return cap
    gpus = node_type[NT_GPUS, t]
    model = node_type[NT_MODEL, t]
    if gpus == 0 or model < 0 or ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
        return 0
    gpu_mem = node_type[NT_GPU_MEM, t]
    if gpu_mem < q:
        return 0
    if m >= WHOLE:
        return int(min(cap, gpus // k))
    per_gpu = WHOLE // m
    if q > 0:
        per_gpu = min(per_gpu, gpu_mem // q)
    return int(min(cap, per_gpu * gpus))


@kernel
def rejection_codes(rclass_int: Int64Array, rclass_mask: UInt64Array, node_type: Int64Array) -> Int64Array:
    """Why each job shape cannot run even on the empty cluster (``R_NONE`` when it can).

    Parameters
    ----------
    rclass_int, rclass_mask
        Distinct job shapes (``RC_*`` rows) and their allowed-model masks.
    node_type
        Distinct node configurations with their counts (``NT_*`` rows).

    Returns
    -------
    numpy.ndarray
        One ``R_*`` code per shape, checks in the spec's order: no node of an
        allowed model, no empty node fits one pod, the empty cluster cannot hold
        all pods.

    Notes
    -----
    The admission checks of Volcano's ``enqueue`` action (``JobValid``: a gang
    that can never reach minMember is not admitted) and Kueue's
    "workload does not fit any flavor" rejection, done once per distinct shape.
    """
    shapes = rclass_int.shape[1]
    types = node_type.shape[1]
    out = np.zeros(shapes, dtype=np.int64)
    for s in range(shapes):
        m = rclass_int[RC_MILLI, s]
        q = rclass_int[RC_GMEM, s]
        c = rclass_int[RC_CPU, s]
        r = rclass_int[RC_MEM, s]
        pods = rclass_int[RC_PODS, s]
        k = rclass_int[RC_K, s]
        mask = rclass_mask[s]
        if m > 0:
            any_model = False
            for t in range(types):
                model = node_type[NT_MODEL, t]
                if node_type[NT_GPUS, t] == 0 or model < 0:
                    continue
                if ((mask >> np.uint64(model)) & np.uint64(1)) != np.uint64(0):
                    any_model = True
                    break
            if not any_model:
                out[s] = R_NO_MODEL
                continue
        one = False
        for t in range(types):
            if empty_node_capacity(m, q, c, r, mask, k, 1, node_type, t) >= 1:
                one = True
                break
        if not one:
            out[s] = R_POD_TOO_LARGE
            continue
        total = 0
        for t in range(types):
            per_node = empty_node_capacity(m, q, c, r, mask, k, pods, node_type, t)
            total += min(pods, per_node * node_type[NT_COUNT, t])
            if total >= pods:
                break
        out[s] = R_NONE if total >= pods else R_GANG_TOO_LARGE
    return out
