"""Debug checks of the engine state: incremental after every cycle, complete at the end.

*After a cycle* only what the cycle could have broken is recomputed: each node
whose state changed (the touched list kept by :func:`gpureplay.engine.jobs.touch_node`)
is checked against the pods its pod list holds, and the cluster aggregates,
the per-model histogram and the pending counts against the nodes and classes
- O(touched pods + nodes + classes), not O(jobs). *At the end* of the run
everything is recomputed from first principles: every job's state, the
pending set, the completion heap, every node and the fit trees.

A violation is an ``E_*`` code plus the index of the offending entity; the
Python boundary turns it into an AssertionError naming what and when.
"""

from __future__ import annotations

from gpureplay.engine.devices.mig import instance_bits, mig_size, slot_gpu, slot_start
from gpureplay.engine.fit.fitindex import NO_KEY
from gpureplay.engine.fit.resources import class_mig, instance_memory, share_gmem
from gpureplay.engine.fit.scoring import index_key, uses_index
from gpureplay.engine.jit.config import kernel
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    DebugScratch,
    FitIndex,
    Jobs,
    JobState,
    Params,
    Pending,
    Run,
    Scratch,
    Timers,
)
from gpureplay.engine.state.heaps import bits_test
from gpureplay.engine.state.layout import (
    C_CPU,
    C_END,
    C_GMEM,
    C_KIND,
    C_MEM,
    C_MILLI,
    C_START,
    CD_APOS,
    CD_OVER,
    CD_PENDING,
    D_GEN,
    D_OVER,
    D_PLACED,
    D_RESERVED,
    D_STATUS,
    E_COUNTS,
    E_FINISH,
    E_GPU_MEM_RANGE,
    E_GPU_MEM_SUM,
    E_GPU_MIG,
    E_GPU_MILLI_RANGE,
    E_GPU_MILLI_SUM,
    E_GPU_SLOTS,
    E_HISTOGRAM,
    E_INDEX,
    E_NODE_CPU,
    E_NODE_CPU_SUM,
    E_NODE_MEM,
    E_NODE_MEM_SUM,
    E_NODE_MILLI,
    E_NODE_PODS,
    E_NODE_WHOLE,
    E_NODE_WHOLE_LO,
    E_OK,
    E_QUEUE,
    E_QUEUE_COUNTS,
    E_STATUS,
    E_TOTALS,
    F_CPU,
    F_MEM,
    F_MILLI,
    F_WHOLE,
    F_WHOLE_LO,
    G_MEM,
    G_MIG,
    G_MILLI,
    G_SLOTS,
    GANG,
    J_CLASS,
    J_CPU,
    J_K,
    J_MEM,
    J_MILLI,
    J_POD0,
    J_PODS,
    J_POS,
    J_PREEMPTIBLE,
    J_SLOT0,
    J_TENANT,
    K_NACTIVE,
    K_NPEND,
    K_NRUN,
    K_NRUNHEAP,
    K_NTERM,
    K_NTOUCHED,
    KIND_NONE,
    KIND_SHARE,
    KIND_WHOLE,
    MIG_NONE,
    MIG_SLICE_MILLI,
    MIG_WHOLE,
    N_CPU,
    N_GPU0,
    N_GPU_MEM,
    N_GPUS,
    N_MEM,
    N_MODEL,
    N_SLOTS,
    P_DEBUG,
    P_GANG,
    P_NODE,
    QU_COUNTED,
    QU_CPU,
    QU_MEM,
    QU_MILLI,
    QU_NP_CPU,
    QU_NP_MEM,
    QU_NP_MILLI,
    QU_PENDING,
    QU_RUNNING,
    S_ADMITTED,
    S_QUEUED,
    S_RUNNING,
    S_TERMINATING,
    T_FINISH,
    TOT_ALLOC,
    TOT_FREE_WHOLE,
    WHOLE,
    Int64Array,
)


@kernel
def _fail(err: Int64Array, code: int, entity: int) -> bool:
    err[0] = code
    err[1] = entity
    return False


@kernel
def check_node(
    dbg: DebugScratch,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    n: int,
    err: Int64Array,
) -> bool:
    """Node ``n``'s free capacity equals its capacity minus the pods on its pod list; its aggregates agree."""
    g0 = cl.node_int[N_GPU0, n]
    gpus = cl.node_int[N_GPUS, n]
    cap_mem = cl.node_int[N_GPU_MEM, n]
    used = dbg.check_gpu
    for i in range(gpus):
        used[0, i] = 0
        used[1, i] = 0
        used[2, i] = 0
        used[3, i] = 0
    used_cpu = 0
    used_mem = 0
    pod = js.node_pods[n]
    while pod >= 0:
        j = jobs.pod_job[pod]
        c = jobs.ints[J_CLASS, j]
        p = pod - jobs.ints[J_POD0, j]
        status = js.dyn[D_STATUS, j]
        holder = status in (S_RUNNING, S_TERMINATING, S_QUEUED, S_ADMITTED)
        if js.pod_node[pod] != n or p >= js.dyn[D_PLACED, j] or not holder:
            return _fail(err, E_NODE_PODS, n)
        used_cpu += cs.ints[C_CPU, c]
        used_mem += cs.ints[C_MEM, c]
        kind = cs.ints[C_KIND, c]
        k = jobs.ints[J_K, j]
        shape = class_mig(cl, cs, c, n) if kind == KIND_SHARE else MIG_NONE
        for i in range(k if kind != KIND_NONE else 0):
            g = js.slot_gpu[jobs.ints[J_SLOT0, j] + p * k + i]
            if shape >= 0:
                v = g
                g = slot_gpu(v)
                if g < g0 or g >= g0 + gpus:
                    return _fail(err, E_GPU_MILLI_SUM, g)
                bits = instance_bits(shape, slot_start(v))
                if used[3, g - g0] & bits:
                    return _fail(err, E_GPU_MIG, g)
                used[3, g - g0] |= bits
                used[2, g - g0] += 1
                used[0, g - g0] += mig_size(shape) * MIG_SLICE_MILLI
                used[1, g - g0] += instance_memory(cl, n, mig_size(shape))
                continue
            if g < g0 or g >= g0 + gpus:
                return _fail(err, E_GPU_MILLI_SUM, g)
            used[2, g - g0] += 1
            if kind == KIND_WHOLE or shape == MIG_WHOLE:
                used[0, g - g0] += WHOLE
                used[1, g - g0] += cap_mem
            else:
                used[0, g - g0] += cs.ints[C_MILLI, c]
                used[1, g - g0] += share_gmem(cl, n, cs.ints[C_MILLI, c], cs.ints[C_GMEM, c])
        pod = js.pod_next[pod]
    free_cpu = cl.node_free[F_CPU, n]
    free_mem = cl.node_free[F_MEM, n]
    if free_cpu < 0 or free_cpu > cl.node_int[N_CPU, n]:
        return _fail(err, E_NODE_CPU, n)
    if free_mem < 0 or free_mem > cl.node_int[N_MEM, n]:
        return _fail(err, E_NODE_MEM, n)
    if free_cpu != cl.node_int[N_CPU, n] - used_cpu:
        return _fail(err, E_NODE_CPU_SUM, n)
    if free_mem != cl.node_int[N_MEM, n] - used_mem:
        return _fail(err, E_NODE_MEM_SUM, n)
    whole = 0
    free_milli = 0
    for i in range(gpus):
        g = g0 + i
        fm = cl.gpu_free[G_MILLI, g]
        if fm < 0 or fm > WHOLE:
            return _fail(err, E_GPU_MILLI_RANGE, g)
        if fm == WHOLE and g < cl.node_free[F_WHOLE_LO, n]:
            return _fail(err, E_NODE_WHOLE_LO, n)
        if cl.gpu_free[G_MEM, g] < 0 or cl.gpu_free[G_MEM, g] > cap_mem:
            return _fail(err, E_GPU_MEM_RANGE, g)
        if fm != WHOLE - used[0, i]:
            return _fail(err, E_GPU_MILLI_SUM, g)
        if cl.gpu_free[G_MEM, g] != cap_mem - used[1, i]:
            return _fail(err, E_GPU_MEM_SUM, g)
        if cl.gpu_free[G_SLOTS, g] < 0 or cl.gpu_free[G_SLOTS, g] != cl.node_int[N_SLOTS, n] - used[2, i]:
            return _fail(err, E_GPU_SLOTS, g)
        if cl.gpu_free[G_MIG, g] != used[3, i]:
            return _fail(err, E_GPU_MIG, g)
        if fm == WHOLE:
            whole += 1
        free_milli += fm
    if whole != cl.node_free[F_WHOLE, n]:
        return _fail(err, E_NODE_WHOLE, n)
    if free_milli != cl.node_free[F_MILLI, n]:
        return _fail(err, E_NODE_MILLI, n)
    if uses_index(params) and ix.leaf[n] >= 0:
        key = index_key(params.codes[P_NODE], cl, n)
        for w in range(ix.keys.shape[1]):
            want = key if w <= whole else NO_KEY
            if ix.keys[ix.leaf[n], w] != want:
                return _fail(err, E_INDEX, n)
    return True


@kernel
def check_aggregates(
    dbg: DebugScratch, cs: Classes, cl: Cluster, pend: Pending, run: Run, err: Int64Array
) -> bool:
    """Cluster totals and the per-model histogram agree with the nodes; pending counts with the classes."""
    free_whole = 0
    alloc = 0
    hist = dbg.check_hist
    milli = dbg.check_milli
    for model in range(hist.shape[0]):
        milli[model] = 0
        for w in range(hist.shape[1]):
            hist[model, w] = 0
    for n in range(cl.node_int.shape[1]):
        free_whole += cl.node_free[F_WHOLE, n]
        alloc += cl.node_int[N_GPUS, n] * WHOLE - cl.node_free[F_MILLI, n]
        model = cl.node_int[N_MODEL, n]
        if model >= 0:
            hist[model, cl.node_free[F_WHOLE, n]] += 1
            milli[model] += cl.node_free[F_MILLI, n]
    if free_whole != cl.totals[TOT_FREE_WHOLE] or alloc != cl.totals[TOT_ALLOC]:
        return _fail(err, E_TOTALS, -1)
    for model in range(cl.model_hist.shape[0]):
        if milli[model] != cl.model_milli[model]:
            return _fail(err, E_HISTOGRAM, model)
        low = cl.model_hist.shape[1]
        high = -1
        for w in range(cl.model_hist.shape[1]):
            if hist[model, w] != cl.model_hist[model, w]:
                return _fail(err, E_HISTOGRAM, model)
            if hist[model, w] > 0:
                low = min(low, w)
                high = w
        if cl.model_span[0, model] != low or cl.model_span[1, model] != high:
            return _fail(err, E_HISTOGRAM, model)
    pending = 0
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        if pend.cls[CD_APOS, c] != a or pend.cls[CD_PENDING, c] <= 0:
            return _fail(err, E_QUEUE, c)
        pending += pend.cls[CD_PENDING, c]
    if pending != run.counters[K_NPEND]:
        return _fail(err, E_QUEUE, -1)
    return True


@kernel
def _check_touched(
    dbg: DebugScratch,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    pend: Pending,
    sc: Scratch,
    run: Run,
) -> bool:
    """The incremental check after a cycle: touched nodes, aggregates; clears the touched list."""
    ok = True
    for i in range(run.counters[K_NTOUCHED]):
        n = sc.touched_nodes[i]
        sc.touch_mark[n] = 0
        if ok and not check_node(dbg, params, jobs, cs, cl, ix, js, n, run.err):
            ok = False
    run.counters[K_NTOUCHED] = 0
    if not ok:
        return False
    return check_aggregates(dbg, cs, cl, pend, run, run.err)


@kernel
def _check_full(
    dbg: DebugScratch,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    pend: Pending,
    tm: Timers,
    run: Run,
    t: float,
) -> bool:
    """Every invariant, recomputed from first principles (run at the end of a debug run).

    Notes
    -----
    The engine's invariants (docs/engine/loop.md): no GPU beyond 1000 milli or its
    memory, no node beyond its CPU or memory, every job in exactly one state
    (and in the pending set iff queued), running jobs each with one live
    completion, and the allocation of every GPU and node equal to the sum of
    the demands of the pods placed on it.
    """
    err = run.err
    num_jobs = jobs.ints.shape[1]
    mode = params.codes[P_GANG]
    queued = 0
    running = 0
    terminating = 0
    listed = 0
    # Each queue's counts, recounted: what its jobs' placed pods request, its pending and running jobs.
    queues = dbg.check_queue
    queues[:, :] = 0
    pending_of = dbg.check_class
    for c in range(cs.ints.shape[1]):
        pending_of[c] = 0
    for j in range(num_jobs):
        status = js.dyn[D_STATUS, j]
        placed = js.dyn[D_PLACED, j]
        pods = jobs.ints[J_PODS, j]
        if status < 0 or status > S_ADMITTED or placed < 0 or placed > pods:
            return _fail(err, E_STATUS, j)
        if status == S_RUNNING:
            ok = placed == pods
        elif status == S_TERMINATING:
            ok = placed == pods or (mode != GANG and placed > 0)
        elif status == S_QUEUED:
            # Gang mode places a job whole or not at all; pod by pod may hold part of it.
            ok = placed == 0 or (mode != GANG and placed < pods)
        elif status == S_ADMITTED:
            # Kueue admitted it by quota: kube-scheduler places its pods one by one.
            ok = placed < pods
        else:
            ok = placed == 0
        if not ok:
            return _fail(err, E_STATUS, j)
        c = jobs.ints[J_CLASS, j]
        if js.dyn[D_OVER, j] == 0:
            member = bits_test(jobs.ints[J_POS, j], pend.l0)
        else:
            member = False
            for i in range(pend.cls[CD_OVER, c]):
                if pend.over[cs.ints[C_START, c] + i] == j:
                    member = True
        if (status == S_QUEUED) != member:
            return _fail(err, E_QUEUE, j)
        if status == S_QUEUED:
            queued += 1
            pending_of[c] += 1
        elif status == S_RUNNING:
            running += 1
            if js.time[T_FINISH, j] < t:
                return _fail(err, E_FINISH, j)
        elif status == S_TERMINATING:
            terminating += 1
        listed += placed
        q = jobs.ints[J_TENANT, j]
        # An admitted job's quota reservation counts for all of its pods, placed or not.
        counted = pods if js.dyn[D_RESERVED, j] != 0 else placed
        queues[QU_MILLI, q] += counted * jobs.ints[J_MILLI, j]
        queues[QU_CPU, q] += counted * jobs.ints[J_CPU, j]
        queues[QU_MEM, q] += counted * jobs.ints[J_MEM, j]
        if jobs.ints[J_PREEMPTIBLE, j] == 0:
            queues[QU_NP_MILLI, q] += counted * jobs.ints[J_MILLI, j]
            queues[QU_NP_CPU, q] += counted * jobs.ints[J_CPU, j]
            queues[QU_NP_MEM, q] += counted * jobs.ints[J_MEM, j]
        queues[QU_PENDING, q] += 1 if status == S_QUEUED else 0
        queues[QU_RUNNING, q] += 1 if status == S_RUNNING else 0
    if (
        queued != run.counters[K_NPEND]
        or running != run.counters[K_NRUN]
        or terminating != run.counters[K_NTERM]
    ):
        return _fail(err, E_COUNTS, -1)
    for q in range(queues.shape[1]):
        for f in range(QU_COUNTED):
            if queues[f, q] != run.queues[f, q]:
                return _fail(err, E_QUEUE_COUNTS, q)
    for c in range(cs.ints.shape[1]):
        if pending_of[c] != pend.cls[CD_PENDING, c]:
            return _fail(err, E_QUEUE, c)
        if cs.ints[C_START, c] > cs.ints[C_END, c]:
            return _fail(err, E_QUEUE, c)
    live = dbg.check_job
    for j in range(num_jobs):
        live[j] = 0
    for i in range(run.counters[K_NRUNHEAP]):
        j = tm.run_i[2, i]
        if tm.run_i[3, i] == js.dyn[D_GEN, j] and js.dyn[D_STATUS, j] == S_RUNNING:
            live[j] += 1
    for j in range(num_jobs):
        if live[j] != (1 if js.dyn[D_STATUS, j] == S_RUNNING else 0):
            return _fail(err, E_COUNTS, j)
    on_lists = 0
    for n in range(cl.node_int.shape[1]):
        if not check_node(dbg, params, jobs, cs, cl, ix, js, n, err):
            return False
        pod = js.node_pods[n]
        while pod >= 0:
            on_lists += 1
            pod = js.pod_next[pod]
    if on_lists != listed:
        return _fail(err, E_NODE_PODS, -1)
    if not check_aggregates(dbg, cs, cl, pend, run, err):
        return False
    if uses_index(params):
        width = ix.keys.shape[1]
        for model in range(ix.offset.shape[0]):
            base = ix.offset[model]
            end = ix.offset[model + 1] if model + 1 < ix.offset.shape[0] else ix.keys.shape[0]
            half = (end - base) // 2
            for i in range(1, half):
                for w in range(width):
                    if ix.keys[base + i, w] != min(ix.keys[base + 2 * i, w], ix.keys[base + 2 * i + 1, w]):
                        return _fail(err, E_INDEX, model)
    err[0] = E_OK
    return True


@kernel
def check_touched(
    dbg: DebugScratch,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    pend: Pending,
    sc: Scratch,
    run: Run,
) -> bool:
    """The incremental check after a cycle; True at once when checks are off (``debug`` false).

    Notes
    -----
    A runtime switch, not a compiled variant: the checks cost a branch per
    cycle when off, and debug and plain replays of one policy share one
    compiled engine (a variant costs half a minute to compile).
    """
    if params.codes[P_DEBUG] == 0:
        return True
    return _check_touched(dbg, params, jobs, cs, cl, ix, js, pend, sc, run)


@kernel
def check_full(
    dbg: DebugScratch,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    pend: Pending,
    tm: Timers,
    run: Run,
    t: float,
) -> bool:
    """The complete check at the end of a run; True at once when checks are off."""
    if params.codes[P_DEBUG] == 0:
        return True
    return _check_full(dbg, params, jobs, cs, cl, ix, js, pend, tm, run, t)
