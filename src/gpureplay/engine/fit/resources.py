"""The resource model: what a pod needs, whether and how often it fits a node, taking and releasing it.

A pod of kind ``KIND_NONE`` asks for CPU and memory only; ``KIND_SHARE`` for
``m`` milli-GPU and ``q`` MiB on one GPU (HAMi / gpushare-style sharing);
``KIND_WHOLE`` for ``k = m / 1000`` wholly free GPUs of one node whose per-GPU
memory is at least ``q``. Every pod also needs ``c`` milli-CPU and ``r`` MiB of
node memory. The fit rule is written once, in :func:`capacity_on`; everything
else (does one pod fit, how many identical pods fit a node or the cluster, the
rejection checks on the empty cluster) is built on it.

*Additive* kinds: for the three kinds above, the number of identical pods a
node can still take drops by exactly one per pod placed there, whatever GPU
the pod gets (each term of :func:`capacity_on` loses exactly the pod's demand).
Placing ``P`` identical pods one by one with any node/GPU choice therefore
succeeds iff the capacities sum to ``>= P``: a gang is decided without trial
placements (:mod:`gpureplay.engine.placement.gang`). A kind for which this does not hold
(MIG slices, where the start slot changes what else fits) must be placed by
trial with an undo log, as preemption's trial placement already does.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.devices.mig import (
    gpu_shape,
    instance_bits,
    instance_slot,
    mig_compute,
    mig_free,
    mig_size,
    pick_instance,
    slot_gpu,
    slot_start,
)
from gpureplay.engine.jit.config import entry_kernel, inline_kernel, kernel
from gpureplay.engine.preemption.nomination import nominated_for, nominated_limit, outranks
from gpureplay.engine.state.bundles import Classes, Cluster
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
    F_WHOLE_LO,
    G_MEM,
    G_MIG,
    G_MILLI,
    G_SLOTS,
    KIND_NONE,
    KIND_SHARE,
    KIND_WHOLE,
    MIG_MEMORY_SLICES,
    MIG_NONE,
    MIG_SLICE_MILLI,
    MIG_WHOLE,
    N_GPU0,
    N_GPU_MEM,
    N_GPUS,
    N_MODEL,
    N_REPLICA_ALLOC,
    N_REPLICAS,
    N_SHARE_MEM,
    NOM_JOB,
    NOM_NODE,
    R_GANG_TOO_LARGE,
    R_NO_MODEL,
    R_NONE,
    R_POD_TOO_LARGE,
    RC_CPU,
    RC_GMEM,
    RC_K,
    RC_MEM,
    RC_MILLI,
    RC_PODS,
    REPLICA_PACKED,
    SHARE_MEM_FULL,
    SHARE_MEM_PROPORTIONAL,
    TOT_ALLOC,
    TOT_FREE_WHOLE,
    WHOLE,
    Int64Array,
    UInt64Array,
)


@inline_kernel
def share_gmem(cl: Cluster, n: int, m: int, q: int) -> int:
    """GPU memory (MiB) a shared pod of ``m`` milli asking ``q`` MiB takes from its GPU on node ``n``.

    Notes
    -----
    A pod that names its memory (``q > 0``) takes that. One that names none
    takes what the node's ``N_SHARE_MEM`` rule says: nothing (only its milli
    is booked), ``m / 1000`` of the GPU's memory floored (HAMi's
    ``nvidia.com/gpumem-percentage``: ``memreq = Totalmem * pct / 100`` in
    integer arithmetic) or the whole GPU's memory (HAMi's own default when a
    pod sets neither ``gpumem`` nor a percentage; docs/systems.md, "HAMi").
    """
    if q > 0:
        return q
    rule = cl.node_int[N_SHARE_MEM, n]
    if rule == SHARE_MEM_PROPORTIONAL:
        return int(m * cl.node_int[N_GPU_MEM, n] // WHOLE)
    if rule == SHARE_MEM_FULL:
        return int(cl.node_int[N_GPU_MEM, n])
    return 0


@inline_kernel
def gpu_fits(cl: Cluster, g: int, m: int, gmem: int) -> bool:
    """Whether GPU ``g`` takes one more shared pod of ``m`` milli and ``gmem`` MiB (from :func:`share_gmem`).

    Notes
    -----
    HAMi's per-device ``Fit``: a free vGPU slot (``Used < Count``), the
    cores and the memory (docs/systems.md, "HAMi"); gpushare's filter is
    the memory test alone.
    """
    return bool(
        cl.gpu_free[G_MILLI, g] >= m and cl.gpu_free[G_MEM, g] >= gmem and cl.gpu_free[G_SLOTS, g] >= 1
    )


@inline_kernel
def capacity_on(
    cl: Cluster,
    n: int,
    kind: int,
    m: int,
    q: int,
    c: int,
    r: int,
    mask: np.uint64,
    k: int,
    shape: int,
    limit: int,
) -> int:
    """How many more identical pods fit on node ``n`` now, capped at ``limit`` (the fit rule).

    Parameters
    ----------
    cl
        The cluster state to look at (current or projected).
    n
        Node index.
    kind, m, q, c, r, mask, k
        Pod demand: ``KIND_*``, milli-GPU, GPU memory per GPU, milli-CPU, node
        memory, allowed GPU models (bit per model code; ignored for
        ``KIND_NONE``), whole GPUs per pod.
    shape
        Dynamic MIG (``classes.mig`` of the pod's class on the node's model):
        ``MIG_NONE`` outside it; ``MIG_WHOLE`` when a fractional pod takes one
        whole GPU (a whole-GPU node of a dynamic-MIG replay); else the
        instance shape it is given (:mod:`gpureplay.engine.devices.mig`).
    limit
        Cap on the answer (a GPU-less pod on an unconstrained node fits
        without bound).

    Returns
    -------
    int
        ``min(limit, capacity)``; ``>= 1`` iff one pod fits the node.

    Notes
    -----
    Capacity is ``min(free_cpu // c, free_mem // r, gpu)`` with ``gpu =
    free_whole // k`` for whole pods and ``sum_g min(free_milli_g // m,
    free_mem_g // q', free_slots_g)`` for shared ones, ``q'`` the memory
    :func:`share_gmem` gives the pod (the per-GPU fit of HAMi's
    ``NvidiaGPUDevices.Fit`` and Alibaba gpushare-scheduler-extender's filter;
    docs/systems.md, "HAMi" and "gpushare-scheduler-extender"). Each term drops by exactly one per pod
    placed, so shared pods stay additive. Whole GPUs are handed out only when
    wholly free (NVIDIA k8s-device-plugin: a GPU is one ``nvidia.com/gpu``).
    A pod on a dynamic-MIG GPU counts the shape's free placements
    (:func:`gpureplay.engine.devices.mig.mig_free`), additive too.
    """
    cap = limit
    if c > 0:
        cap = min(cap, cl.node_free[F_CPU, n] // c)
    if r > 0:
        cap = min(cap, cl.node_free[F_MEM, n] // r)
    if cap <= 0:
        return 0
    if kind == KIND_NONE:
        return cap
    model = cl.node_int[N_MODEL, n]
    if cl.node_int[N_GPUS, n] == 0 or model < 0:
        return 0
    if ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
        return 0
    if kind == KIND_WHOLE or shape == MIG_WHOLE:
        if cl.node_int[N_GPU_MEM, n] < q:
            return 0
        return int(min(cap, cl.node_free[F_WHOLE, n] // k))
    g0 = cl.node_int[N_GPU0, n]
    if shape != MIG_NONE:
        # Instances: memory was matched when the shape was chosen; what fits is the slice mask.
        book = mig_size(shape) * MIG_SLICE_MILLI
        if cl.node_free[F_MILLI, n] < book:
            return 0
        total = 0
        for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
            if cl.gpu_free[G_MILLI, g] >= book and cl.gpu_free[G_SLOTS, g] >= 1:
                total += min(
                    mig_free(cl.gpu_free[G_MIG, g], gpu_shape(cl, g, shape)), cl.gpu_free[G_SLOTS, g]
                )
                if total >= cap:
                    return cap
        return total
    if cl.node_free[F_MILLI, n] < m:
        return 0
    total = 0
    gmem = share_gmem(cl, n, m, q)
    for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
        free = cl.gpu_free[G_MILLI, g]
        if free < m:
            continue
        x = min(free // m, cl.gpu_free[G_SLOTS, g])
        if gmem > 0:
            x = min(x, cl.gpu_free[G_MEM, g] // gmem)
        total += x
        if total >= cap:
            return cap
    return total


@kernel
def node_capacity(cl: Cluster, cs: Classes, c: int, n: int, limit: int) -> int:
    """Identical pods of class ``c`` node ``n`` can still take, capped at ``limit``.

    Nominated pods of a higher priority count as placed
    (:func:`gpureplay.engine.preemption.nomination.nominated_limit`).
    """
    return free_capacity(cl, cs, c, n, nominated_limit(cl, cs, c, n, limit))


@kernel
def free_capacity(cl: Cluster, cs: Classes, c: int, n: int, limit: int) -> int:
    """Like :func:`node_capacity`, on the node's free resources alone (nominations ignored)."""
    return capacity_on(
        cl,
        n,
        cs.ints[C_KIND, c],
        cs.ints[C_MILLI, c],
        cs.ints[C_GMEM, c],
        cs.ints[C_CPU, c],
        cs.ints[C_MEM, c],
        cs.mask[c],
        cs.ints[C_K, c],
        class_mig(cl, cs, c, n),
        limit,
    )


@inline_kernel
def class_mig(cl: Cluster, cs: Classes, c: int, n: int) -> int:
    """The dynamic-MIG shape a pod of class ``c`` is given on node ``n`` (``MIG_NONE``: none)."""
    model = cl.node_int[N_MODEL, n]
    if model < 0:
        return MIG_NONE
    return int(cs.mig[c, model])


@kernel
def cluster_capacity(cl: Cluster, cs: Classes, c: int, limit: int) -> int:
    """Identical pods of class ``c`` the whole cluster can take now, capped at ``limit``.

    Notes
    -----
    For the additive kinds this is exactly the number of pods a gang placement
    of ``limit`` pods places before it fails (or ``limit`` when it succeeds),
    for every node and GPU policy: Volcano's gang plugin (``JobReady``:
    allocated >= minAvailable) decided without trial placements.
    """
    kind = cs.ints[C_KIND, c]
    m = cs.ints[C_MILLI, c]
    q = cs.ints[C_GMEM, c]
    cpu = cs.ints[C_CPU, c]
    mem = cs.ints[C_MEM, c]
    mask = cs.mask[c]
    k = cs.ints[C_K, c]
    total = 0
    for n in range(cl.node_int.shape[1]):
        room = nominated_limit(cl, cs, c, n, limit - total)
        total += capacity_on(cl, n, kind, m, q, cpu, mem, mask, k, class_mig(cl, cs, c, n), room)
        if total >= limit:
            return limit
    return total


@kernel
def capacity_bound(cl: Cluster, cs: Classes, c: int, limit: int) -> int:
    """An upper bound of :func:`cluster_capacity` from per-model aggregates, in O(models x GPUs/node).

    Returns
    -------
    int
        ``>= cluster_capacity``, capped at ``limit``; exact for classes with
        ``C_EXACT`` (whole GPUs, no CPU, memory or GPU-memory limit).

    Notes
    -----
    A free-capacity histogram per GPU model, in the spirit of Slurm's
    ``select/cons_tres`` per-node free counts, dismisses a job that cannot fit
    without scanning nodes.
    """
    kind = cs.ints[C_KIND, c]
    if kind == KIND_NONE:
        return limit
    m = cs.ints[C_MILLI, c]
    k = cs.ints[C_K, c]
    mask = cs.mask[c]
    total = 0
    for model in range(cl.model_hist.shape[0]):
        if ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
            continue
        if kind == KIND_WHOLE:
            for w in range(max(k, cl.model_span[0, model]), cl.model_span[1, model] + 1):
                total += cl.model_hist[model, w] * (w // k)
        else:
            # A pod on a MIG instance books its slices, which may be less than its own milli.
            shape = cs.mig[c, model]
            book = mig_size(shape) * MIG_SLICE_MILLI if shape >= 0 else m
            total += cl.model_milli[model] // book
        if total >= limit:
            return limit
    return total


@kernel
def class_capacity(cl: Cluster, cs: Classes, c: int, limit: int) -> int:
    """Pods of class ``c`` the cluster can take now, capped at ``limit``: the bound first, the scan if needed.

    Notes
    -----
    The histogram bound (:func:`capacity_bound`) answers most attempts: it is
    exact for ``C_EXACT`` classes (less what outranking nominations keep off
    their nodes: :func:`nominated_cut`) and rules a job out whenever it is
    below the limit; only an inconclusive bound costs a node scan.
    """
    bound = capacity_bound(cl, cs, c, limit)
    if bound < limit:
        return bound
    if cs.ints[C_EXACT, c] == 1:
        if not nominated_for(cl, cs, c):
            return bound
        # Exact still: the histogram's count less what the nominations take from their few nodes.
        cut = nominated_cut(cl, cs, c)
        return min(limit, capacity_bound(cl, cs, c, limit + cut) - cut)
    return cluster_capacity(cl, cs, c, limit)


@kernel
def nominated_cut(cl: Cluster, cs: Classes, c: int) -> int:
    """Pods of class ``c`` the nominations that outrank it keep off their nodes (each node counted once)."""
    cut = 0
    for e in range(1, cl.nominees[NOM_JOB, 0] + 1):
        n = cl.nominees[NOM_NODE, e]
        if not outranks(cl, cs, e, c):
            continue
        seen = False
        for f in range(1, e):
            if cl.nominees[NOM_NODE, f] == n and outranks(cl, cs, f, c):
                seen = True
                break
        if not seen:
            cut += free_capacity(cl, cs, c, n, BIG) - node_capacity(cl, cs, c, n, BIG)
    return cut


@kernel
def set_gpu(cl: Cluster, g: int, n: int, milli: int, mem: int) -> None:
    """Set GPU ``g`` (of node ``n``) to ``milli``/``mem`` free, keeping every aggregate in step.

    Notes
    -----
    The per-node wholly-free count and free-milli sum, the per-model histogram
    and the cluster totals change only here, so they are exact by construction
    (the debug invariants recompute them from scratch).
    """
    old = cl.gpu_free[G_MILLI, g]
    cl.gpu_free[G_MILLI, g] = milli
    cl.gpu_free[G_MEM, g] = mem
    if old == milli:
        return
    model = cl.node_int[N_MODEL, n]
    cl.node_free[F_MILLI, n] += milli - old
    cl.model_milli[model] += milli - old
    cl.totals[TOT_ALLOC] -= milli - old
    was_whole = old == WHOLE
    is_whole = milli == WHOLE
    if was_whole != is_whole:
        w = cl.node_free[F_WHOLE, n]
        d = 1 if is_whole else -1
        cl.model_hist[model, w] -= 1
        cl.model_hist[model, w + d] += 1
        # The node moved to the next bucket, which is now occupied: the span stays tight in O(1).
        if w + d < cl.model_span[0, model]:
            cl.model_span[0, model] = w + d
        if w + d > cl.model_span[1, model]:
            cl.model_span[1, model] = w + d
        if cl.model_hist[model, w] == 0:
            if w == cl.model_span[0, model]:
                cl.model_span[0, model] = w + 1
            if w == cl.model_span[1, model]:
                cl.model_span[1, model] = w - 1
        cl.node_free[F_WHOLE, n] = w + d
        cl.totals[TOT_FREE_WHOLE] += d
        if is_whole and g < cl.node_free[F_WHOLE_LO, n]:
            cl.node_free[F_WHOLE_LO, n] = g


@kernel
def take_whole(cl: Cluster, n: int, k: int, slots: Int64Array, slot0: int) -> None:
    """Take the ``k`` lowest-index wholly free GPUs of node ``n``, recording them in ``slots[slot0:]``.

    Notes
    -----
    NVIDIA k8s-device-plugin hands out devices in index order when no
    topology policy applies; a whole GPU is left at 0 milli and 0 memory.
    """
    if cl.node_int[N_REPLICAS, n] > 1:
        for i in range(k):
            g = pick_replica(cl, n, slots, slot0, i)
            set_gpu(cl, g, n, 0, 0)
            cl.gpu_free[G_SLOTS, g] -= 1
            slots[slot0 + i] = g
        return
    # No wholly free GPU lies below F_WHOLE_LO (set_gpu lowers it when one frees), and every GPU the scan
    # passes is busy or taken: the next search starts after the last one taken.
    taken = 0
    for g in range(cl.node_free[F_WHOLE_LO, n], cl.node_int[N_GPU0, n] + cl.node_int[N_GPUS, n]):
        if cl.gpu_free[G_MILLI, g] == WHOLE:
            set_gpu(cl, g, n, 0, 0)
            cl.gpu_free[G_SLOTS, g] -= 1
            slots[slot0 + taken] = g
            taken += 1
            if taken == k:
                cl.node_free[F_WHOLE_LO, n] = g + 1
                return


@kernel
def pick_replica(cl: Cluster, n: int, slots: Int64Array, slot0: int, picked: int) -> int:
    """The free replica device of node ``n`` the device plugin hands out next (the node has one).

    ``slots[slot0 : slot0 + picked]`` are the devices already picked for this pod.

    Notes
    -----
    NVIDIA k8s-device-plugin ``greedyAlloc`` (``internal/rm/allocate.go``),
    ``distributed`` comparator: the physical GPU with the fewest replicas in
    use, counting the ones already picked for this pod (``packed``: the
    most); on a tie the GPU this allocation picked from least
    (``pickedFrom``); then, where Go's heap over a map leaves the order open,
    the lowest GPU index. Within the GPU the lowest free replica (replicas of
    one GPU are alike). Replicas of GPU ``p`` are the node's devices
    ``p * R .. p * R + R - 1`` (docs/engine/devices.md, "GPU sharing by
    replicas").
    """
    reps = cl.node_int[N_REPLICAS, n]
    g0 = cl.node_int[N_GPU0, n]
    packed = cl.node_int[N_REPLICA_ALLOC, n] == REPLICA_PACKED
    best = -1
    best_used = -1
    best_mine = -1
    for p in range(cl.node_int[N_GPUS, n] // reps):
        first_free = -1
        used = 0
        for g in range(g0 + p * reps, g0 + (p + 1) * reps):
            if cl.gpu_free[G_MILLI, g] == WHOLE:
                if first_free < 0:
                    first_free = g
            else:
                used += 1
        if first_free < 0:
            continue
        mine = 0
        for i in range(picked):
            if (slots[slot0 + i] - g0) // reps == p:
                mine += 1
        better = used > best_used if packed else used < best_used
        if best < 0 or better or (used == best_used and mine < best_mine):
            best = first_free
            best_used = used
            best_mine = mine
    return best


@inline_kernel
def held_milli(cl: Cluster, cs: Classes, c: int, n: int) -> int:
    """Milli-GPU a pod of class ``c`` holds on node ``n``: its own, a whole GPU, or its instance's slices."""
    kind = cs.ints[C_KIND, c]
    if kind != KIND_SHARE:
        return int(cs.ints[C_MILLI, c])
    shape = class_mig(cl, cs, c, n)
    if shape == MIG_WHOLE:
        return WHOLE
    if shape != MIG_NONE:
        return mig_size(shape) * MIG_SLICE_MILLI
    return int(cs.ints[C_MILLI, c])


@inline_kernel
def pod_kind(cs: Classes, c: int) -> int:
    """The ``cl.pod_kinds`` row of a GPU pod of class ``c``: 0 shared, ``k`` for ``k`` whole GPUs."""
    return 0 if cs.ints[C_KIND, c] == KIND_SHARE else cs.ints[C_K, c]


@kernel
def take_pod(
    cl: Cluster, cs: Classes, c: int, n: int, g: int, slots: Int64Array, slot0: int, recorded: bool
) -> None:
    """Take one pod of class ``c`` on node ``n`` (which fits it).

    Parameters
    ----------
    g
        The GPU a shared pod goes to (chosen by the GPU scorer); ignored otherwise.
    slots, slot0
        The pod's GPU slots: written, or (``recorded``) read to take exactly
        those GPUs again (EASY's projection and preemption's undo hold a pod's
        exact placement).
    """
    cl.node_free[F_CPU, n] -= cs.ints[C_CPU, c]
    cl.node_free[F_MEM, n] -= cs.ints[C_MEM, c]
    kind = cs.ints[C_KIND, c]
    if kind == KIND_NONE:
        return
    cl.pod_kinds[pod_kind(cs, c), n] += 1
    if kind == KIND_WHOLE:
        k = cs.ints[C_K, c]
        if not recorded:
            take_whole(cl, n, k, slots, slot0)
            return
        for i in range(k):
            set_gpu(cl, slots[slot0 + i], n, 0, 0)
            cl.gpu_free[G_SLOTS, slots[slot0 + i]] -= 1
        return
    shape = class_mig(cl, cs, c, n)
    if shape == MIG_WHOLE:
        if not recorded:
            take_whole(cl, n, 1, slots, slot0)
            return
        set_gpu(cl, slots[slot0], n, 0, 0)
        cl.gpu_free[G_SLOTS, slots[slot0]] -= 1
        return
    if shape != MIG_NONE:
        take_instance(cl, cs, n, shape, slots, slot0, recorded)
        return
    if recorded:
        g = slots[slot0]
    else:
        slots[slot0] = g
    m = cs.ints[C_MILLI, c]
    gmem = share_gmem(cl, n, m, cs.ints[C_GMEM, c])
    set_gpu(cl, g, n, cl.gpu_free[G_MILLI, g] - m, cl.gpu_free[G_MEM, g] - gmem)
    cl.gpu_free[G_SLOTS, g] -= 1


@inline_kernel
def instance_memory(cl: Cluster, n: int, size: int) -> int:
    """GPU memory (MiB) of an instance of ``size`` memory slices on node ``n``: the slices' share, floored."""
    return int(cl.node_int[N_GPU_MEM, n] * size // MIG_MEMORY_SLICES)


@kernel
def take_instance(
    cl: Cluster, cs: Classes, n: int, shape: int, slots: Int64Array, slot0: int, recorded: bool
) -> None:
    """Create an instance of ``shape`` on node ``n`` (which fits one) and record it in ``slots[slot0]``.

    Notes
    -----
    GPU and start are :func:`gpureplay.engine.devices.mig.pick_instance`'s.
    ``recorded`` re-creates the recorded instance (EASY's projection,
    preemption's undo).
    """
    size = mig_size(shape)
    book = size * MIG_SLICE_MILLI
    if recorded:
        v = slots[slot0]
        g = slot_gpu(v)
        start = slot_start(v)
    else:
        g, start = pick_instance(cl, cs, n, shape)
        slots[slot0] = instance_slot(g, start, mig_compute(shape))
    cl.gpu_free[G_MIG, g] |= instance_bits(shape, start)
    gmem = instance_memory(cl, n, size)
    set_gpu(cl, g, n, cl.gpu_free[G_MILLI, g] - book, cl.gpu_free[G_MEM, g] - gmem)
    cl.gpu_free[G_SLOTS, g] -= 1


@kernel
def release_pod(cl: Cluster, cs: Classes, c: int, n: int, slots: Int64Array, slot0: int) -> None:
    """Give back exactly what :func:`take_pod` took.

    Notes
    -----
    Whole GPUs return to 1000 milli and the node's full per-GPU memory; a
    shared pod returns its milli and memory to its GPU.
    """
    cl.node_free[F_CPU, n] += cs.ints[C_CPU, c]
    cl.node_free[F_MEM, n] += cs.ints[C_MEM, c]
    kind = cs.ints[C_KIND, c]
    if kind == KIND_NONE:
        return
    cl.pod_kinds[pod_kind(cs, c), n] -= 1
    if kind == KIND_WHOLE:
        mem = cl.node_int[N_GPU_MEM, n]
        for i in range(cs.ints[C_K, c]):
            set_gpu(cl, slots[slot0 + i], n, WHOLE, mem)
            cl.gpu_free[G_SLOTS, slots[slot0 + i]] += 1
        return
    shape = class_mig(cl, cs, c, n)
    if shape == MIG_WHOLE:
        set_gpu(cl, slots[slot0], n, WHOLE, cl.node_int[N_GPU_MEM, n])
        cl.gpu_free[G_SLOTS, slots[slot0]] += 1
        return
    if shape != MIG_NONE:
        v = slots[slot0]
        g = slot_gpu(v)
        size = mig_size(shape)
        cl.gpu_free[G_MIG, g] &= ~instance_bits(shape, slot_start(v))
        gmem = instance_memory(cl, n, size)
        set_gpu(cl, g, n, cl.gpu_free[G_MILLI, g] + size * MIG_SLICE_MILLI, cl.gpu_free[G_MEM, g] + gmem)
        cl.gpu_free[G_SLOTS, g] += 1
        return
    g = slots[slot0]
    m = cs.ints[C_MILLI, c]
    gmem = share_gmem(cl, n, m, cs.ints[C_GMEM, c])
    set_gpu(cl, g, n, cl.gpu_free[G_MILLI, g] + m, cl.gpu_free[G_MEM, g] + gmem)
    cl.gpu_free[G_SLOTS, g] += 1


@kernel
def copy_cluster(src: Cluster, dst: Cluster) -> None:
    """Copy the free state of ``src`` into ``dst`` (same node table)."""
    # Explicit loops: slice-to-slice assignment drags numba's shape-mismatch machinery into the build.
    for f in range(src.node_free.shape[0]):
        for n in range(src.node_free.shape[1]):
            dst.node_free[f, n] = src.node_free[f, n]
    for f in range(src.gpu_free.shape[0]):
        for g in range(src.gpu_free.shape[1]):
            dst.gpu_free[f, g] = src.gpu_free[f, g]
    for model in range(src.model_hist.shape[0]):
        dst.model_milli[model] = src.model_milli[model]
        dst.model_span[0, model] = src.model_span[0, model]
        dst.model_span[1, model] = src.model_span[1, model]
        for w in range(src.model_hist.shape[1]):
            dst.model_hist[model, w] = src.model_hist[model, w]
    for i in range(src.totals.shape[0]):
        dst.totals[i] = src.totals[i]
    for k in range(src.pod_kinds.shape[0]):
        for n in range(src.pod_kinds.shape[1]):
            dst.pod_kinds[k, n] = src.pod_kinds[k, n]


@inline_kernel
def _type_mig(types: Cluster, shape_mig: Int64Array, s: int, t: int) -> int:
    model = types.node_int[N_MODEL, t]
    return MIG_NONE if model < 0 else int(shape_mig[s, model])


@entry_kernel
def rejection_codes(
    types: Cluster,
    shapes: Int64Array,
    shape_mask: UInt64Array,
    shape_mig: Int64Array,
    type_count: Int64Array,
    out: Int64Array,
) -> None:
    """Why each job shape cannot run even on the empty cluster (``R_NONE`` when it can).

    Parameters
    ----------
    types
        An empty cluster with one node per distinct node configuration.
    shapes, shape_mask, shape_mig
        Distinct job shapes (``RC_*`` rows), their allowed-model masks and
        their dynamic-MIG shapes per model (``classes.mig``'s layout).
    type_count
        How many nodes of each configuration the cluster has.

    out
        Filled with one ``R_*`` code per shape, checks in the spec's order: no
        node of an allowed model, no empty node fits one pod, the empty cluster
        cannot hold all pods.

    Notes
    -----
    The admission checks of Volcano's ``enqueue`` action (``JobValid``: a gang
    that can never reach minMember is not admitted) and Kueue's
    "workload does not fit any flavor", done once per distinct shape with the
    fit rule of :func:`capacity_on` on each empty node type.
    """
    for s in range(shapes.shape[1]):
        out[s] = R_NONE
        m = shapes[RC_MILLI, s]
        k = shapes[RC_K, s]
        kind = KIND_NONE if m == 0 else (KIND_WHOLE if m >= WHOLE else KIND_SHARE)
        q = shapes[RC_GMEM, s]
        cpu = shapes[RC_CPU, s]
        mem = shapes[RC_MEM, s]
        pods = shapes[RC_PODS, s]
        mask = shape_mask[s]
        if m > 0:
            any_model = False
            for t in range(types.node_int.shape[1]):
                model = types.node_int[N_MODEL, t]
                if (
                    types.node_int[N_GPUS, t] > 0
                    and model >= 0
                    and ((mask >> np.uint64(model)) & np.uint64(1)) != np.uint64(0)
                ):
                    any_model = True
                    break
            if not any_model:
                out[s] = R_NO_MODEL
                continue
        one = False
        for t in range(types.node_int.shape[1]):
            shape = _type_mig(types, shape_mig, s, t)
            if capacity_on(types, t, kind, m, q, cpu, mem, mask, k, shape, 1) >= 1:
                one = True
                break
        if not one:
            out[s] = R_POD_TOO_LARGE
            continue
        total = 0
        for t in range(types.node_int.shape[1]):
            shape = _type_mig(types, shape_mig, s, t)
            per_node = capacity_on(types, t, kind, m, q, cpu, mem, mask, k, shape, pods)
            total += min(pods, per_node * type_count[t])
            if total >= pods:
                break
        out[s] = R_NONE if total >= pods else R_GANG_TOO_LARGE


__all__ = [
    "capacity_bound",
    "capacity_on",
    "class_capacity",
    "class_mig",
    "cluster_capacity",
    "copy_cluster",
    "free_capacity",
    "gpu_fits",
    "held_milli",
    "node_capacity",
    "nominated_cut",
    "rejection_codes",
    "release_pod",
    "set_gpu",
    "share_gmem",
    "take_pod",
]
