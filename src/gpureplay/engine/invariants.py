"""Debug checks of the engine state, run after every cycle when ``debug`` is on.

Each check recomputes a quantity from first principles (the jobs' recorded
placements, the raw per-GPU arrays) and compares it with what the incremental
structures say. A violation is reported as an ``E_*`` code plus the index of
the offending entity; the Python boundary turns it into an AssertionError
naming what and when.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.config import kernel
from gpureplay.engine.fitindex import NO_KEY, fit_key
from gpureplay.engine.state import (
    C_END,
    C_START,
    CD_APOS,
    CD_PENDING,
    D_PLACED,
    D_STATUS,
    E_COUNTS,
    E_FINISH,
    E_GPU_MEM_RANGE,
    E_GPU_MEM_SUM,
    E_GPU_MILLI_RANGE,
    E_GPU_MILLI_SUM,
    E_HISTOGRAM,
    E_INDEX,
    E_NODE_CPU,
    E_NODE_CPU_SUM,
    E_NODE_MEM,
    E_NODE_MEM_SUM,
    E_NODE_MILLI,
    E_NODE_WHOLE,
    E_OK,
    E_QUEUE,
    E_STATUS,
    E_TOTALS,
    F_CPU,
    F_MEM,
    F_MILLI,
    F_WHOLE,
    G_MEM,
    G_MILLI,
    J_CLASS,
    J_CPU,
    J_GMEM,
    J_K,
    J_MEM,
    J_MILLI,
    J_POD0,
    J_PODS,
    J_POS,
    J_SLOT0,
    K_ALLOC,
    K_FREE_WHOLE,
    K_NACTIVE,
    K_NPEND,
    K_NRUN,
    N_CPU,
    N_GPU0,
    N_GPU_MEM,
    N_GPUS,
    N_MEM,
    N_MODEL,
    P_NODE,
    POD_BY_POD,
    RANDOM,
    S_FINISHED,
    S_QUEUED,
    S_REJECTED,
    S_RUNNING,
    T_FINISH,
    WHOLE,
    Float64Array,
    Int64Array,
    UInt64Array,
)


@kernel
def check_state(
    t: float,
    mode: int,
    job_int: Int64Array,
    job_dyn: Int64Array,
    job_time: Float64Array,
    pod_node: Int64Array,
    slot_gpu: Int64Array,
    class_int: Int64Array,
    class_dyn: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    model_hist: Int64Array,
    model_milli: Int64Array,
    counters: Int64Array,
    run_i: Int64Array,
    policy: Int64Array,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
    err: Int64Array,
) -> bool:
    """Check every invariant; on the first violation fill ``err`` = (code, entity) and return False.

    Notes
    -----
    The invariants of DESIGN.md ("Engine"): no GPU beyond 1000 milli or its
    memory, no node beyond its CPU or memory, every job in exactly one state
    (and in the pending set iff queued), and the allocation of every GPU and
    node equal to the sum of the demands of the running (and, pod by pod,
    partly placed) jobs recorded on it.
    """
    num_nodes = node_int.shape[1]
    num_gpus = gpu_free.shape[1]
    num_jobs = job_int.shape[1]
    used_milli = np.zeros(num_gpus, dtype=np.int64)
    used_gmem = np.zeros(num_gpus, dtype=np.int64)
    used_cpu = np.zeros(num_nodes, dtype=np.int64)
    used_mem = np.zeros(num_nodes, dtype=np.int64)
    queued = 0
    running = 0
    pending_of = np.zeros(class_int.shape[1], dtype=np.int64)
    for j in range(num_jobs):
        status = job_dyn[D_STATUS, j]
        placed = job_dyn[D_PLACED, j]
        if status < 0 or status > S_REJECTED or placed < 0 or placed > job_int[J_PODS, j]:
            err[0] = E_STATUS
            err[1] = j
            return False
        pods = job_int[J_PODS, j]
        if status in (S_RUNNING, S_FINISHED):
            consistent = placed == pods
        elif status == S_QUEUED:
            # Gang mode places a job whole or not at all; pod by pod may hold part of it.
            consistent = placed == 0 or (mode == POD_BY_POD and placed < pods)
        else:
            consistent = placed == 0
        if not consistent:
            err[0] = E_STATUS
            err[1] = j
            return False
        pos = job_int[J_POS, j]
        pending_bit = ((l0[pos >> 6] >> np.uint64(pos & 63)) & np.uint64(1)) != np.uint64(0)
        if (status == S_QUEUED) != pending_bit:
            err[0] = E_QUEUE
            err[1] = j
            return False
        if status == S_QUEUED:
            queued += 1
            pending_of[job_int[J_CLASS, j]] += 1
        if status == S_RUNNING:
            running += 1
            if job_time[T_FINISH, j] < t:
                err[0] = E_FINISH
                err[1] = j
                return False
        if status != S_RUNNING and status != S_QUEUED:
            continue  # finished jobs keep their placement record but hold nothing
        m = job_int[J_MILLI, j]
        k = job_int[J_K, j]
        for p in range(placed):
            n = pod_node[job_int[J_POD0, j] + p]
            used_cpu[n] += job_int[J_CPU, j]
            used_mem[n] += job_int[J_MEM, j]
            for i in range(k):
                g = slot_gpu[job_int[J_SLOT0, j] + p * k + i]
                if g < node_int[N_GPU0, n] or g >= node_int[N_GPU0, n] + node_int[N_GPUS, n]:
                    err[0] = E_GPU_MILLI_SUM
                    err[1] = j
                    return False
                if m >= WHOLE:
                    used_milli[g] += WHOLE
                    used_gmem[g] += node_int[N_GPU_MEM, n]
                else:
                    used_milli[g] += m
                    used_gmem[g] += job_int[J_GMEM, j]
    if queued != counters[K_NPEND] or running != counters[K_NRUN]:
        err[0] = E_COUNTS
        err[1] = -1
        return False
    seen = np.zeros(num_jobs, dtype=np.int64)
    for i in range(counters[K_NRUN]):
        j = run_i[1, i]
        if job_dyn[D_STATUS, j] != S_RUNNING or seen[j] != 0:
            err[0] = E_COUNTS
            err[1] = j
            return False
        seen[j] = 1
    n_active = 0
    for c in range(class_int.shape[1]):
        if pending_of[c] != class_dyn[CD_PENDING, c]:
            err[0] = E_QUEUE
            err[1] = c
            return False
        if pending_of[c] > 0:
            n_active += 1
            a = class_dyn[CD_APOS, c]
            if a < 0 or a >= counters[K_NACTIVE] or active[a] != c:
                err[0] = E_QUEUE
                err[1] = c
                return False
        elif class_dyn[CD_APOS, c] != -1:
            err[0] = E_QUEUE
            err[1] = c
            return False
        if class_int[C_START, c] > class_int[C_END, c]:
            err[0] = E_QUEUE
            err[1] = c
            return False
    if n_active != counters[K_NACTIVE]:
        err[0] = E_QUEUE
        err[1] = -1
        return False
    free_whole_total = 0
    alloc_total = 0
    hist = np.zeros_like(model_hist)
    milli = np.zeros_like(model_milli)
    for n in range(num_nodes):
        free_cpu = node_free[F_CPU, n]
        free_mem = node_free[F_MEM, n]
        if free_cpu < 0 or free_cpu > node_int[N_CPU, n]:
            err[0] = E_NODE_CPU
            err[1] = n
            return False
        if free_mem < 0 or free_mem > node_int[N_MEM, n]:
            err[0] = E_NODE_MEM
            err[1] = n
            return False
        if free_cpu != node_int[N_CPU, n] - used_cpu[n]:
            err[0] = E_NODE_CPU_SUM
            err[1] = n
            return False
        if free_mem != node_int[N_MEM, n] - used_mem[n]:
            err[0] = E_NODE_MEM_SUM
            err[1] = n
            return False
        whole = 0
        free_milli = 0
        g0 = node_int[N_GPU0, n]
        cap_mem = node_int[N_GPU_MEM, n]
        for g in range(g0, g0 + node_int[N_GPUS, n]):
            fm = gpu_free[G_MILLI, g]
            if fm < 0 or fm > WHOLE:
                err[0] = E_GPU_MILLI_RANGE
                err[1] = g
                return False
            if gpu_free[G_MEM, g] < 0 or gpu_free[G_MEM, g] > cap_mem:
                err[0] = E_GPU_MEM_RANGE
                err[1] = g
                return False
            if fm != WHOLE - used_milli[g]:
                err[0] = E_GPU_MILLI_SUM
                err[1] = g
                return False
            if gpu_free[G_MEM, g] != cap_mem - used_gmem[g]:
                err[0] = E_GPU_MEM_SUM
                err[1] = g
                return False
            if fm == WHOLE:
                whole += 1
            free_milli += fm
            alloc_total += WHOLE - fm
        if whole != node_free[F_WHOLE, n] or free_milli != node_free[F_MILLI, n]:
            err[0] = E_NODE_WHOLE if whole != node_free[F_WHOLE, n] else E_NODE_MILLI
            err[1] = n
            return False
        free_whole_total += whole
        model = node_int[N_MODEL, n]
        if model >= 0:
            hist[model, whole] += 1
            milli[model] += free_milli
    if free_whole_total != counters[K_FREE_WHOLE] or alloc_total != counters[K_ALLOC]:
        err[0] = E_TOTALS
        err[1] = -1
        return False
    for model in range(model_hist.shape[0]):
        if milli[model] != model_milli[model]:
            err[0] = E_HISTOGRAM
            err[1] = model
            return False
        for w in range(model_hist.shape[1]):
            if hist[model, w] != model_hist[model, w]:
                err[0] = E_HISTOGRAM
                err[1] = model
                return False
    if policy[P_NODE] != RANDOM:
        # Every leaf equals its node's key row and every inner cell the min of its children.
        width = keys.shape[1]
        for n in range(num_nodes):
            row = leaf[n]
            if row < 0:
                continue
            key = fit_key(n, policy[P_NODE], node_free)
            for w in range(width):
                want = key if w <= node_free[F_WHOLE, n] else NO_KEY
                if keys[row, w] != want:
                    err[0] = E_INDEX
                    err[1] = n
                    return False
        for model in range(offset.shape[0]):
            base = offset[model]
            end = offset[model + 1] if model + 1 < offset.shape[0] else keys.shape[0]
            half = (end - base) // 2
            for i in range(1, half):
                for w in range(width):
                    if keys[base + i, w] != min(keys[base + 2 * i, w], keys[base + 2 * i + 1, w]):
                        err[0] = E_INDEX
                        err[1] = model
                        return False
    err[0] = E_OK
    return True
