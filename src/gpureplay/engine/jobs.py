"""Job-level steps: place a whole job, start it, complete it, undo it, admit it.

Each kernel changes one job and keeps every per-node, per-class and cluster
counter in step through :mod:`gpureplay.engine.placement` and
:mod:`gpureplay.engine.queueing`.
"""

from __future__ import annotations

from gpureplay.engine.config import kernel
from gpureplay.engine.fitindex import index_query, index_update
from gpureplay.engine.placement import (
    capacity_bound,
    choose_node,
    cluster_capacity,
    release_pod,
    take_pod,
)
from gpureplay.engine.queueing import dequeue, enqueue, heap_push
from gpureplay.engine.rng import rng_skip
from gpureplay.engine.state import (
    C_CPU,
    C_EXACT,
    C_GMEM,
    C_K,
    C_MEM,
    C_MILLI,
    C_PODS,
    CD_FAIL,
    D_PLACED,
    D_SPANNED,
    D_STATUS,
    J_CLASS,
    J_CPU,
    J_GMEM,
    J_ID,
    J_K,
    J_MEM,
    J_MILLI,
    J_POD0,
    J_SLOT0,
    JF_DURATION,
    K_NRUN,
    K_STARTS,
    K_TRIED,
    K_VERSION,
    P_GPU,
    P_NODE,
    R_NONE,
    RANDOM,
    S_FINISHED,
    S_QUEUED,
    S_REJECTED,
    S_RUNNING,
    T_FINISH,
    T_START,
    WHOLE,
    Float64Array,
    Int64Array,
    UInt64Array,
)


@kernel
def class_capacity(
    c: int,
    limit: int,
    exact: bool,
    class_int: Int64Array,
    class_mask: UInt64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
) -> int:
    """Pods of class ``c`` the cluster can take now (capped at ``limit``).

    Parameters
    ----------
    exact
        Whether a value below ``limit`` must be exact. With ``False`` it may be
        an over-estimate and only "fits or not" is meaningful; ``True`` is
        needed when a failure must consume the random draws of the pods the
        spec's attempt would have placed.

    Notes
    -----
    The per-model bound (:func:`gpureplay.engine.placement.capacity_bound`)
    answers most attempts; the node scan runs only when the bound cannot
    decide.
    """
    m = class_int[C_MILLI, c]
    k = class_int[C_K, c]
    mask = class_mask[c]
    bound = capacity_bound(m, mask, k, limit, model_hist, model_milli)
    if class_int[C_EXACT, c] == 1 or bound == 0 or (bound < limit and not exact):
        return bound
    return cluster_capacity(
        m,
        class_int[C_GMEM, c],
        class_int[C_CPU, c],
        class_int[C_MEM, c],
        mask,
        k,
        limit,
        node_int,
        node_free,
        gpu_free,
    )


@kernel
def place_pods(
    j: int,
    first: int,
    last: int,
    t: float,
    policy: Int64Array,
    rng: UInt64Array,
    job_int: Int64Array,
    job_mask: UInt64Array,
    pod_node: Int64Array,
    pod_time: Float64Array,
    slot_gpu: Int64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
    indexed: bool,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
) -> bool:
    """Place pods ``first .. last-1`` of job ``j`` one by one with the node policy.

    Parameters
    ----------
    indexed
        The pod is a plain whole-GPU pod and the node policy deterministic,
        so the per-model trees of :mod:`gpureplay.engine.fitindex` pick the node.

    Returns
    -------
    bool
        False (earlier pods stay placed) when a pod fits nowhere; gang callers
        only call it once the job is known to fit.

    Notes
    -----
    Each pod sees the state left by the previous one, so several pods may land
    on one node, as in Volcano's ``allocate`` statement.
    """
    m = job_int[J_MILLI, j]
    q = job_int[J_GMEM, j]
    c = job_int[J_CPU, j]
    r = job_int[J_MEM, j]
    k = job_int[J_K, j]
    mask = job_mask[j]
    for p in range(first, last):
        if indexed:
            n = index_query(mask, k, offset, keys)
        else:
            n = choose_node(m, q, c, r, mask, k, policy[P_NODE], rng, node_int, node_free, gpu_free)
        if n < 0:
            return False
        pod = job_int[J_POD0, j] + p
        pod_node[pod] = n
        pod_time[pod] = t
        take_pod(
            n,
            m,
            q,
            c,
            r,
            k,
            policy[P_GPU],
            rng,
            slot_gpu,
            job_int[J_SLOT0, j] + p * k,
            node_int,
            node_free,
            gpu_free,
            model_hist,
            model_milli,
            counters,
        )
        if m > 0 and policy[P_NODE] != RANDOM:
            index_update(n, policy[P_NODE], node_int, node_free, leaf, offset, keys)
    return True


@kernel
def reindex_pods(
    j: int,
    first: int,
    last: int,
    policy: Int64Array,
    job_int: Int64Array,
    pod_node: Int64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
) -> None:
    """Refresh the fit index for the nodes of pods ``first .. last-1`` of job ``j`` (after a release).

    Notes
    -----
    GPU-less pods change no GPU and are skipped; with random node choice no
    index is kept.
    """
    if job_int[J_MILLI, j] == 0 or policy[P_NODE] == RANDOM:
        return
    for p in range(first, last):
        index_update(
            pod_node[job_int[J_POD0, j] + p], policy[P_NODE], node_int, node_free, leaf, offset, keys
        )


@kernel
def release_pods(
    j: int,
    first: int,
    last: int,
    job_int: Int64Array,
    pod_node: Int64Array,
    slot_gpu: Int64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
) -> None:
    """Release pods ``first .. last-1`` of job ``j`` on the given state arrays.

    Notes
    -----
    Works on the current state (completion, EASY undo) or on the EASY
    projection, which is why it does not touch the fit index.
    """
    k = job_int[J_K, j]
    for p in range(first, last):
        release_pod(
            pod_node[job_int[J_POD0, j] + p],
            job_int[J_MILLI, j],
            job_int[J_GMEM, j],
            job_int[J_CPU, j],
            job_int[J_MEM, j],
            k,
            slot_gpu,
            job_int[J_SLOT0, j] + p * k,
            node_int,
            node_free,
            gpu_free,
            model_hist,
            model_milli,
            counters,
        )


@kernel
def try_gang(
    j: int,
    t: float,
    policy: Int64Array,
    rng: UInt64Array,
    job_int: Int64Array,
    job_mask: UInt64Array,
    job_dyn: Int64Array,
    pod_node: Int64Array,
    pod_time: Float64Array,
    slot_gpu: Int64Array,
    class_int: Int64Array,
    class_mask: UInt64Array,
    class_dyn: Int64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
) -> bool:
    """Place all pods of job ``j`` or none; True when placed (the caller starts or undoes it).

    Notes
    -----
    All-or-nothing allocation as in Volcano's ``allocate`` action with the gang
    plugin (a statement committed only when ``JobReady``) and Kueue's
    all-or-nothing admission. The spec places pods one by one and undoes them
    on failure without rewinding the RNG; by :func:`node_capacity`'s argument
    such an attempt places exactly ``capacity`` pods first, so a failure is
    decided from the capacity alone and the draws those pods would have made
    are skipped (:func:`gpureplay.engine.rng.rng_skip`). A failed class is
    remembered for the current release version, so identical jobs are not
    retried until something is released (skipped only when no draw is lost).
    """
    c = job_int[J_CLASS, j]
    pods = class_int[C_PODS, c]
    # Random draws one placed pod costs: node choice, then GPU choice for a fractional pod.
    m = class_int[C_MILLI, c]
    draws = (1 if policy[P_NODE] == RANDOM else 0) + (1 if policy[P_GPU] == RANDOM and 0 < m < WHOLE else 0)
    counters[K_TRIED] += 1
    cap = class_capacity(
        c, pods, draws > 0, class_int, class_mask, node_int, node_free, gpu_free, model_hist, model_milli
    )
    if cap >= pods:
        place_pods(
            j,
            0,
            pods,
            t,
            policy,
            rng,
            job_int,
            job_mask,
            pod_node,
            pod_time,
            slot_gpu,
            node_int,
            node_free,
            gpu_free,
            model_hist,
            model_milli,
            counters,
            class_int[C_EXACT, c] == 1 and policy[P_NODE] != RANDOM,
            leaf,
            offset,
            keys,
        )
        job_dyn[D_PLACED, j] = pods
        return True
    if draws > 0 and cap > 0:
        rng_skip(rng, cap * draws)
    else:
        class_dyn[CD_FAIL, c] = counters[K_VERSION]
    return False


@kernel
def start_job(
    j: int,
    t: float,
    job_int: Int64Array,
    job_float: Float64Array,
    job_dyn: Int64Array,
    job_time: Float64Array,
    pod_node: Int64Array,
    node_mark: Int64Array,
    class_dyn: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    run_f: Float64Array,
    run_i: Int64Array,
    counters: Int64Array,
) -> None:
    """Job ``j`` (all pods placed) starts at ``t``: leave the queue, join the completion heap.

    Notes
    -----
    ``finish_time = t + duration`` (the trace's run time when the job gets
    what it asked for). ``nodes_spanned`` counts distinct nodes of its pods.
    """
    finish = t + job_float[JF_DURATION, j]
    job_dyn[D_STATUS, j] = S_RUNNING
    counters[K_STARTS] += 1
    job_time[T_START, j] = t
    job_time[T_FINISH, j] = finish
    dequeue(j, job_int, class_dyn, active, l0, l1, l2, counters)
    counters[K_NRUN] = heap_push(run_f, run_i, counters[K_NRUN], finish, job_int[J_ID, j], j)
    spanned = 0
    pod0 = job_int[J_POD0, j]
    for p in range(job_dyn[D_PLACED, j]):
        n = pod_node[pod0 + p]
        if node_mark[n] != j:
            node_mark[n] = j
            spanned += 1
    job_dyn[D_SPANNED, j] = spanned


@kernel
def complete_job(
    j: int,
    policy: Int64Array,
    job_int: Int64Array,
    job_dyn: Int64Array,
    pod_node: Int64Array,
    slot_gpu: Int64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
) -> None:
    """Job ``j`` (already popped from the completion heap) finishes and releases everything.

    Notes
    -----
    Bumps the release version, which invalidates every "class does not fit"
    mark: released resources may let any class fit again.
    """
    release_pods(
        j,
        0,
        job_dyn[D_PLACED, j],
        job_int,
        pod_node,
        slot_gpu,
        node_int,
        node_free,
        gpu_free,
        model_hist,
        model_milli,
        counters,
    )
    reindex_pods(
        j, 0, job_dyn[D_PLACED, j], policy, job_int, pod_node, node_int, node_free, leaf, offset, keys
    )
    job_dyn[D_STATUS, j] = S_FINISHED
    counters[K_VERSION] += 1


@kernel
def admit_job(
    j: int,
    job_reject: Int64Array,
    job_int: Int64Array,
    job_dyn: Int64Array,
    class_dyn: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    counters: Int64Array,
) -> None:
    """Job ``j`` is submitted: rejected if it cannot run on the empty cluster, else queued.

    Notes
    -----
    Rejection codes are computed once per job shape before the loop
    (:func:`gpureplay.engine.placement.rejection_codes`).
    """
    if job_reject[j] != R_NONE:
        job_dyn[D_STATUS, j] = S_REJECTED
        return
    job_dyn[D_STATUS, j] = S_QUEUED
    enqueue(j, job_int, class_dyn, active, l0, l1, l2, counters)
