"""Scheduling cycles: gang mode (none / skip / EASY backfill) and pod-by-pod mode.

A cycle walks pending jobs in queue order by merging the heads of the active
classes (:mod:`gpureplay.engine.queueing`) in a small heap keyed by queue rank.
Within one cycle resources are only taken, never released, so once a class
does not fit, none of its jobs can fit later in the cycle: the class leaves the
merge. A class that failed keeps that mark until the next release (the
``K_VERSION`` counter), so cycles after an arrival only look at what is new.
"""

from __future__ import annotations

from gpureplay.engine.config import kernel
from gpureplay.engine.fitindex import index_query, index_update
from gpureplay.engine.jobs import reindex_pods, release_pods, start_job, try_gang
from gpureplay.engine.placement import capacity_bound, choose_node, node_capacity, take_at, take_pod
from gpureplay.engine.queueing import bits_next, heap_pop, heap_push
from gpureplay.engine.state import (
    BF_NONE,
    BF_SKIP,
    C_CPU,
    C_END,
    C_EXACT,
    C_GMEM,
    C_K,
    C_MEM,
    C_MILLI,
    C_START,
    CD_CUR,
    CD_FAIL,
    CD_RESV,
    D_PLACED,
    J_CLASS,
    J_CPU,
    J_GMEM,
    J_GROUP_END,
    J_ID,
    J_K,
    J_MEM,
    J_MILLI,
    J_POD0,
    J_PODS,
    J_RANK,
    J_SLOT0,
    JF_DURATION,
    K_NACTIVE,
    K_NRUN,
    K_RESV_HEAD,
    K_RESV_HOLD,
    K_RESV_STARTS,
    K_STAMP,
    K_STARTS,
    K_TRIED,
    K_VERSION,
    P_BACKFILL,
    P_DEPTH,
    P_GPU,
    P_NODE,
    RANDOM,
    Float64Array,
    Int64Array,
    UInt64Array,
)


@kernel
def build_merge(
    drop_failed: bool,
    job_int: Int64Array,
    class_jobs: Int64Array,
    class_int: Int64Array,
    class_dyn: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    merge_f: Float64Array,
    merge_i: Int64Array,
    counters: Int64Array,
) -> int:
    """Fill the merge heap with the head of every active class; returns its size.

    Parameters
    ----------
    drop_failed
        Leave out classes known not to fit at the current release version
        (their jobs cannot start and, in that mode, need not be counted).

    Returns
    -------
    int
        Heap size; entries are keyed by the head's queue rank.

    Notes
    -----
    A k-way merge of per-class sorted lists (Knuth, TAOCP vol. 3, 5.4.1) stands
    in for kube-scheduler's activeQ heap: only class heads are compared.
    """
    size = 0
    version = counters[K_VERSION]
    for a in range(counters[K_NACTIVE]):
        c = active[a]
        if drop_failed and class_dyn[CD_FAIL, c] == version:
            continue
        p = bits_next(class_int[C_START, c], class_int[C_END, c], l0, l1, l2)
        class_dyn[CD_CUR, c] = p
        size = heap_push(merge_f, merge_i, size, float(job_int[J_RANK, class_jobs[p]]), 0, c)
    return size


@kernel
def hold_capacity(
    h: int,
    n: int,
    job_int: Int64Array,
    job_mask: UInt64Array,
    hold: Int64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
) -> int:
    """Recompute the reserved job ``h``'s pod capacity on node ``n``; returns the change.

    Notes
    -----
    Keeps EASY's "does the head still fit at the shadow time" test
    incremental: only nodes a release or a backfill touched are re-evaluated
    (the capacity argument of :func:`gpureplay.engine.placement.node_capacity`).
    """
    new = node_capacity(
        n,
        job_int[J_MILLI, h],
        job_int[J_GMEM, h],
        job_int[J_CPU, h],
        job_int[J_MEM, h],
        job_mask[h],
        job_int[J_K, h],
        job_int[J_PODS, h],
        node_int,
        node_free,
        gpu_free,
    )
    change = new - hold[n]
    hold[n] = new
    return int(change)


@kernel
def reservation(
    h: int,
    job_int: Int64Array,
    job_mask: UInt64Array,
    job_dyn: Int64Array,
    pod_node: Int64Array,
    slot_gpu: Int64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
    run_f: Float64Array,
    run_i: Int64Array,
    proj_node: Int64Array,
    proj_gpu: Int64Array,
    proj_hist: Int64Array,
    proj_milli: Int64Array,
    proj_counters: Int64Array,
    hold: Int64Array,
    scan_f: Float64Array,
    scan_i: Int64Array,
) -> tuple[float, int]:
    """Shadow time of the blocked head job ``h`` and the projected state at it.

    Returns
    -------
    (float, int)
        The shadow time ``S`` (-1.0 when ``h`` never fits) and ``h``'s pod
        capacity on the projected state. ``proj_*`` hold the projected state and
        ``hold[n]`` ``h``'s capacity per node on it.

    Notes
    -----
    EASY backfilling (Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995;
    Slurm ``sched/backfill``): running jobs are ended in ``(finish_time,
    job_id)`` order on a copy of the state until the head fits; that finish time
    is the head's reservation. Only nodes a released job touched change the
    head's capacity, so each release costs its pods, not the cluster.
    """
    # Explicit copies: slice-to-slice assignment drags numba's shape-mismatch machinery into the build.
    for n in range(node_free.shape[1]):
        for f in range(node_free.shape[0]):
            proj_node[f, n] = node_free[f, n]
    for g in range(gpu_free.shape[1]):
        proj_gpu[0, g] = gpu_free[0, g]
        proj_gpu[1, g] = gpu_free[1, g]
    for model in range(model_hist.shape[0]):
        proj_milli[model] = model_milli[model]
        for w in range(model_hist.shape[1]):
            proj_hist[model, w] = model_hist[model, w]
    for i in range(counters.shape[0]):
        proj_counters[i] = counters[i]
    need = job_int[J_PODS, h]
    total = 0
    for n in range(node_int.shape[1]):
        hold[n] = 0
        total += hold_capacity(h, n, job_int, job_mask, hold, node_int, proj_node, proj_gpu)
    size = counters[K_NRUN]
    for i in range(size):
        scan_f[i] = run_f[i]
        scan_i[0, i] = run_i[0, i]
        scan_i[1, i] = run_i[1, i]
    while size > 0:
        finish = scan_f[0]
        j = scan_i[1, 0]
        size = heap_pop(scan_f, scan_i, size)
        placed = job_dyn[D_PLACED, j]
        release_pods(
            j, 0, placed, job_int, pod_node, slot_gpu, node_int, proj_node, proj_gpu, proj_hist, proj_milli,
            proj_counters,
        )  # fmt: skip
        pod0 = job_int[J_POD0, j]
        for p in range(placed):
            total += hold_capacity(
                h, pod_node[pod0 + p], job_int, job_mask, hold, node_int, proj_node, proj_gpu
            )
        if total >= need:
            return finish, total
    return -1.0, total


@kernel
def gang_cycle(
    t: float,
    policy: Int64Array,
    rng: UInt64Array,
    job_int: Int64Array,
    job_float: Float64Array,
    job_mask: UInt64Array,
    job_dyn: Int64Array,
    job_time: Float64Array,
    pod_node: Int64Array,
    pod_time: Float64Array,
    slot_gpu: Int64Array,
    node_mark: Int64Array,
    class_int: Int64Array,
    class_mask: UInt64Array,
    class_jobs: Int64Array,
    class_dyn: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
    run_f: Float64Array,
    run_i: Int64Array,
    merge_f: Float64Array,
    merge_i: Int64Array,
    scan_f: Float64Array,
    scan_i: Int64Array,
    proj_node: Int64Array,
    proj_gpu: Int64Array,
    proj_hist: Int64Array,
    proj_milli: Int64Array,
    proj_counters: Int64Array,
    hold: Int64Array,
    kept_shadow: Float64Array,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
) -> int:
    """One gang-mode scheduling cycle at time ``t``; returns the number of jobs started.

    Notes
    -----
    Pending jobs are visited in queue order (fifo, sjf or priority ranks).
    ``none``: stop at the first job that does not fit (strict FIFO, head-of-line
    blocking). ``skip``: start every job that fits, as Volcano's ``allocate``
    action and kube-scheduler do (no reservation); ``backfill_depth > 0`` stops
    after that many failures (Slurm ``bf_max_job_test``-style bound).
    ``easy``: EASY backfilling (Lifka 1995; Slurm ``sched/backfill``): jobs start
    in order until the first that does not fit, H; H gets a reservation at the
    shadow time S (:func:`reservation`); a later job J starts iff it fits now and
    either ends by S or H still fits at S with J's placement held
    (``backfill_depth > 0`` bounds how many J are considered).
    """
    backfill = policy[P_BACKFILL]
    depth = policy[P_DEPTH]
    version = counters[K_VERSION]
    randomised = policy[P_NODE] == RANDOM or policy[P_GPU] == RANDOM
    skip_mode = backfill == BF_SKIP
    size = build_merge(
        skip_mode and depth == 0, job_int, class_jobs, class_int, class_dyn, active, l0, l1, l2, merge_f,
        merge_i, counters,
    )  # fmt: skip
    started = 0
    failures = 0
    head = -1  # EASY: the job holding the reservation
    shadow = 0.0
    hold_total = 0
    considered = 0
    while size > 0:
        c = merge_i[1, 0]
        size = heap_pop(merge_f, merge_i, size)
        p = class_dyn[CD_CUR, c]
        j = class_jobs[p]
        following = bits_next(p + 1, class_int[C_END, c], l0, l1, l2)
        known_failed = class_dyn[CD_FAIL, c] == version
        if skip_mode:
            if depth > 0 and failures >= depth:
                break
            if known_failed:
                failures += 1
            elif try_gang(
                j, t, policy, rng, job_int, job_mask, job_dyn, pod_node, pod_time, slot_gpu, class_int,
                class_mask, class_dyn, node_int, node_free, gpu_free, model_hist, model_milli, counters,
                leaf, offset, keys,
            ):  # fmt: skip
                start_job(
                    j, t, job_int, job_float, job_dyn, job_time, pod_node, node_mark, class_dyn, active, l0,
                    l1, l2, run_f, run_i, counters,
                )  # fmt: skip
                started += 1
            else:
                failures += 1
            if depth == 0 and class_dyn[CD_FAIL, c] == version:
                continue  # the rest of the class cannot fit either
        elif head < 0:
            if not known_failed and try_gang(
                j, t, policy, rng, job_int, job_mask, job_dyn, pod_node, pod_time, slot_gpu, class_int,
                class_mask, class_dyn, node_int, node_free, gpu_free, model_hist, model_milli, counters,
                leaf, offset, keys,
            ):  # fmt: skip
                start_job(
                    j, t, job_int, job_float, job_dyn, job_time, pod_node, node_mark, class_dyn, active, l0,
                    l1, l2, run_f, run_i, counters,
                )  # fmt: skip
                started += 1
            elif backfill == BF_NONE:
                break
            else:
                head = j
                if counters[K_RESV_HEAD] == j and counters[K_RESV_STARTS] == counters[K_STARTS]:
                    # Same head and nothing started since the last cycle kept its reservation: only
                    # completions (already released in the projection) and arrivals happened, so
                    # recomputing would give the same shadow time and projected state.
                    shadow = kept_shadow[0]
                    hold_total = counters[K_RESV_HOLD]
                else:
                    shadow, hold_total = reservation(
                        j, job_int, job_mask, job_dyn, pod_node, slot_gpu, node_int, node_free, gpu_free,
                        model_hist, model_milli, counters, run_f, run_i, proj_node, proj_gpu, proj_hist,
                        proj_milli, proj_counters, hold, scan_f, scan_i,
                    )  # fmt: skip
                counters[K_STAMP] += 1
                if shadow < 0.0:
                    # H never fits, even on the empty projection: no reservation, like skip.
                    skip_mode = True
                    failures = 1
        else:
            if depth > 0 and considered >= depth:
                break
            considered += 1
            if known_failed:
                if depth == 0:
                    continue
            elif t + job_float[JF_DURATION, j] <= shadow:
                if try_gang(
                    j, t, policy, rng, job_int, job_mask, job_dyn, pod_node, pod_time, slot_gpu, class_int,
                    class_mask, class_dyn, node_int, node_free, gpu_free, model_hist, model_milli, counters,
                    leaf, offset, keys,
                ):  # fmt: skip
                    start_job(
                        j, t, job_int, job_float, job_dyn, job_time, pod_node, node_mark, class_dyn, active,
                        l0, l1, l2, run_f, run_i, counters,
                    )  # fmt: skip
                    started += 1
                    counters[K_STAMP] += 1
            elif not (not randomised and class_dyn[CD_RESV, c] == counters[K_STAMP]) and try_gang(
                j, t, policy, rng, job_int, job_mask, job_dyn, pod_node, pod_time, slot_gpu, class_int,
                class_mask, class_dyn, node_int, node_free, gpu_free, model_hist, model_milli, counters,
                leaf, offset, keys,
            ):  # fmt: skip
                # J ends after S: hold its exact placement on the projection and ask whether H still fits.
                pods = job_dyn[D_PLACED, j]
                pod0 = job_int[J_POD0, j]
                k = job_int[J_K, j]
                for q in range(pods):
                    n = pod_node[pod0 + q]
                    take_at(
                        n, job_int[J_MILLI, j], job_int[J_GMEM, j], job_int[J_CPU, j], job_int[J_MEM, j], k,
                        slot_gpu, job_int[J_SLOT0, j] + q * k, node_int, proj_node, proj_gpu, proj_hist,
                        proj_milli, proj_counters,
                    )  # fmt: skip
                    hold_total += hold_capacity(
                        head, n, job_int, job_mask, hold, node_int, proj_node, proj_gpu
                    )
                if hold_total >= job_int[J_PODS, head]:
                    start_job(
                        j, t, job_int, job_float, job_dyn, job_time, pod_node, node_mark, class_dyn, active,
                        l0, l1, l2, run_f, run_i, counters,
                    )  # fmt: skip
                    started += 1
                    counters[K_STAMP] += 1
                else:
                    release_pods(
                        j, 0, pods, job_int, pod_node, slot_gpu, node_int, proj_node, proj_gpu, proj_hist,
                        proj_milli, proj_counters,
                    )  # fmt: skip
                    for q in range(pods):
                        hold_total += hold_capacity(
                            head, pod_node[pod0 + q], job_int, job_mask, hold, node_int, proj_node, proj_gpu
                        )
                    release_pods(
                        j, 0, pods, job_int, pod_node, slot_gpu, node_int, node_free, gpu_free, model_hist,
                        model_milli, counters,
                    )  # fmt: skip
                    reindex_pods(
                        j, 0, pods, policy, job_int, pod_node, node_int, node_free, leaf, offset, keys
                    )
                    job_dyn[D_PLACED, j] = 0
                    # Same class, same states, deterministic placement: same refusal until something starts.
                    class_dyn[CD_RESV, c] = counters[K_STAMP]
            elif depth == 0 and class_dyn[CD_FAIL, c] == version:
                continue
        if following >= 0:
            class_dyn[CD_CUR, c] = following
            size = heap_push(merge_f, merge_i, size, float(job_int[J_RANK, class_jobs[following]]), 0, c)
    if head >= 0 and not skip_mode:
        counters[K_RESV_HEAD] = head
        counters[K_RESV_STARTS] = counters[K_STARTS]
        counters[K_RESV_HOLD] = hold_total
        kept_shadow[0] = shadow
    else:
        counters[K_RESV_HEAD] = -1
    return started


@kernel
def pod_cycle(
    t: float,
    policy: Int64Array,
    rng: UInt64Array,
    job_int: Int64Array,
    job_float: Float64Array,
    job_mask: UInt64Array,
    job_dyn: Int64Array,
    job_time: Float64Array,
    pod_node: Int64Array,
    pod_time: Float64Array,
    slot_gpu: Int64Array,
    node_mark: Int64Array,
    class_int: Int64Array,
    class_mask: UInt64Array,
    class_jobs: Int64Array,
    class_dyn: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
    run_f: Float64Array,
    run_i: Int64Array,
    merge_f: Float64Array,
    merge_i: Int64Array,
    group_f: Float64Array,
    group_i: Int64Array,
    touched: Int64Array,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
) -> int:
    """One pod-by-pod cycle at time ``t``; returns the number of pods placed.

    Notes
    -----
    kube-scheduler's default behaviour: the scheduling queue (PrioritySort:
    higher priority first, then creation time) holds every unplaced pod; each
    pod is placed on its own and stays placed, so a job whose pods cannot all
    be placed holds what it got (the classic gang deadlock, cf. the
    Coscheduling plugin's motivation). Pods of jobs with the same priority and
    submit time interleave by pod index, then job id. Jobs are visited group by
    group ((priority, submit_time) groups are contiguous in rank); within a
    group a small heap keyed ``(pods placed, job_id)`` yields the pod order.
    """
    version = counters[K_VERSION]
    size = build_merge(
        True, job_int, class_jobs, class_int, class_dyn, active, l0, l1, l2, merge_f, merge_i, counters
    )
    placed_pods = 0
    while size > 0:
        c = merge_i[1, 0]
        size = heap_pop(merge_f, merge_i, size)
        group_end = job_int[J_GROUP_END, class_jobs[class_dyn[CD_CUR, c]]]
        members = 0
        n_touched = 0
        # Gather the group: every pending job of a live class whose rank falls in it.
        while True:
            touched[n_touched] = c
            n_touched += 1
            p = class_dyn[CD_CUR, c]
            while p >= 0 and job_int[J_RANK, class_jobs[p]] < group_end:
                j = class_jobs[p]
                members = heap_push(
                    group_f, group_i, members, float(job_dyn[D_PLACED, j]), job_int[J_ID, j], j
                )
                p = bits_next(p + 1, class_int[C_END, c], l0, l1, l2)
            class_dyn[CD_CUR, c] = p
            if size == 0 or merge_f[0] >= float(group_end):
                break
            c = merge_i[1, 0]
            size = heap_pop(merge_f, merge_i, size)
        while members > 0:
            j = group_i[1, 0]
            members = heap_pop(group_f, group_i, members)
            c = job_int[J_CLASS, j]
            if class_dyn[CD_FAIL, c] == version:
                continue
            counters[K_TRIED] += 1
            m = class_int[C_MILLI, c]
            k = class_int[C_K, c]
            mask = class_mask[c]
            bound = capacity_bound(m, mask, k, 1, model_hist, model_milli)
            n = -1
            if bound >= 1:
                # The per-model bound rules most misses out without a node scan (and without a draw,
                # as the spec draws only when some node fits).
                if class_int[C_EXACT, c] == 1 and policy[P_NODE] != RANDOM:
                    n = index_query(mask, k, offset, keys)
                else:
                    n = choose_node(
                        m, class_int[C_GMEM, c], class_int[C_CPU, c], class_int[C_MEM, c], mask, k,
                        policy[P_NODE], rng, node_int, node_free, gpu_free,
                    )  # fmt: skip
            if n < 0:
                class_dyn[CD_FAIL, c] = version
                continue
            placed = job_dyn[D_PLACED, j]
            pod = job_int[J_POD0, j] + placed
            pod_node[pod] = n
            pod_time[pod] = t
            take_pod(
                n, m, class_int[C_GMEM, c], class_int[C_CPU, c], class_int[C_MEM, c], k, policy[P_GPU], rng,
                slot_gpu, job_int[J_SLOT0, j] + placed * k, node_int, node_free, gpu_free, model_hist,
                model_milli, counters,
            )  # fmt: skip
            if m > 0 and policy[P_NODE] != RANDOM:
                index_update(n, policy[P_NODE], node_int, node_free, leaf, offset, keys)
            placed += 1
            job_dyn[D_PLACED, j] = placed
            placed_pods += 1
            if placed == job_int[J_PODS, j]:
                start_job(
                    j, t, job_int, job_float, job_dyn, job_time, pod_node, node_mark, class_dyn, active, l0,
                    l1, l2, run_f, run_i, counters,
                )  # fmt: skip
            else:
                members = heap_push(group_f, group_i, members, float(placed), job_int[J_ID, j], j)
        for i in range(n_touched):
            c = touched[i]
            p = class_dyn[CD_CUR, c]
            if p >= 0 and class_dyn[CD_FAIL, c] != version:
                size = heap_push(merge_f, merge_i, size, float(job_int[J_RANK, class_jobs[p]]), 0, c)
    return placed_pods
