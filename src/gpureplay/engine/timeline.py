"""Timeline samples: allocation, queue lengths and whole-GPU fragmentation at one instant.

Sample ``k`` is taken at ``k * interval`` (never by accumulating ``+=``), so
every sample time is exact whatever ``k``. When a replay would write more
than ``max_samples`` rows the interval doubles and :func:`thin_timeline`
keeps the rows on the coarser grid (the even ``k``): the rule stays ``k *
interval`` and the rows kept are exactly those a replay run with the wider
interval from the start would have written.
"""

from __future__ import annotations

from gpureplay.engine.config import kernel
from gpureplay.engine.placement import node_capacity
from gpureplay.engine.queueing import bits_next
from gpureplay.engine.state import (
    C_CPU,
    C_END,
    C_GMEM,
    C_K,
    C_MEM,
    C_MILLI,
    C_START,
    D_PLACED,
    F_WHOLE,
    GANG,
    J_GROUP_END,
    J_ID,
    J_RANK,
    K_ALLOC,
    K_FREE_WHOLE,
    K_NACTIVE,
    K_NPEND,
    K_NRUN,
    TIMELINE_FIELDS,
    TL_FRAGMENTED,
    TL_GPUS,
    TL_MILLI,
    TL_PENDING,
    TL_RUNNING,
    Float64Array,
    Int64Array,
    UInt64Array,
)


@kernel
def smallest_pending_class(
    mode: int,
    job_int: Int64Array,
    job_dyn: Int64Array,
    class_int: Int64Array,
    class_jobs: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    counters: Int64Array,
) -> int:
    """Class of the pending pod with the least ``gpu_milli > 0``, ties by queue order (-1: none).

    Notes
    -----
    Gang mode compares class heads by queue rank; pod-by-pod mode by the pod
    queue key ``(group, pods placed, job_id)`` of each job's next unplaced pod
    (kube-scheduler's queue holds pods, not jobs). O(active classes).
    """
    best = -1
    best_m = 0
    best_a = 0
    best_b = 0
    best_c = 0
    for i in range(counters[K_NACTIVE]):
        c = active[i]
        m = class_int[C_MILLI, c]
        if m <= 0 or (best >= 0 and m > best_m):
            continue
        p = bits_next(class_int[C_START, c], class_int[C_END, c], l0, l1, l2)
        j = class_jobs[p]
        if mode == GANG:
            a = job_int[J_RANK, j]
            b = 0
            d = 0
        else:
            a = job_int[J_GROUP_END, j]
            b = job_dyn[D_PLACED, j]
            d = job_int[J_ID, j]
            while True:
                p = bits_next(p + 1, class_int[C_END, c], l0, l1, l2)
                if p < 0 or job_int[J_RANK, class_jobs[p]] >= a:
                    break
                other = class_jobs[p]
                if job_dyn[D_PLACED, other] < b or (
                    job_dyn[D_PLACED, other] == b and job_int[J_ID, other] < d
                ):
                    b = job_dyn[D_PLACED, other]
                    d = job_int[J_ID, other]
        if (
            best < 0
            or m < best_m
            or a < best_a
            or (a == best_a and (b < best_b or (b == best_b and d < best_c)))
        ):  # m > best_m was skipped above, so m == best_m here unless m < best_m
            best = c
            best_m = m
            best_a = a
            best_b = b
            best_c = d
    return best


@kernel
def record_sample(
    row: int,
    mode: int,
    total_gpus: int,
    job_int: Int64Array,
    job_dyn: Int64Array,
    class_int: Int64Array,
    class_mask: UInt64Array,
    class_jobs: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    node_int: Int64Array,
    node_free: Int64Array,
    gpu_free: Int64Array,
    counters: Int64Array,
    out: Int64Array,
) -> None:
    """Write timeline row ``row`` (``TL_*`` rows of ``out``).

    Notes
    -----
    ``fragmented_gpus`` counts wholly free GPUs on nodes where the smallest
    pending GPU pod cannot fit now: idle cards that the queue cannot use, a
    whole-GPU simplification of FGD's fragmentation measure (Weng et al.,
    ATC'23, ``pkg/utils/frag.go``: a node's free GPU is a fragment for a task
    that cannot be placed there).
    """
    out[TL_GPUS, row] = total_gpus - counters[K_FREE_WHOLE]
    out[TL_MILLI, row] = counters[K_ALLOC]
    out[TL_PENDING, row] = counters[K_NPEND]
    out[TL_RUNNING, row] = counters[K_NRUN]
    c = smallest_pending_class(mode, job_int, job_dyn, class_int, class_jobs, active, l0, l1, l2, counters)
    fragmented = 0
    if c >= 0:
        for n in range(node_int.shape[1]):
            if node_free[F_WHOLE, n] == 0:
                continue
            fits = node_capacity(
                n, class_int[C_MILLI, c], class_int[C_GMEM, c], class_int[C_CPU, c], class_int[C_MEM, c],
                class_mask[c], class_int[C_K, c], 1, node_int, node_free, gpu_free,
            )  # fmt: skip
            if fits == 0:
                fragmented += node_free[F_WHOLE, n]
    out[TL_FRAGMENTED, row] = fragmented


@kernel
def thin_timeline(tl_time: Float64Array, tl_rows: Int64Array, samples: int) -> int:
    """Keep the rows of even sample index (the grid of twice the interval), in place; their count.

    Parameters
    ----------
    tl_time, tl_rows
        Timeline buffers whose rows ``[0, samples)`` hold samples ``k = 0 .. samples - 1``.
    samples
        Rows written.

    Returns
    -------
    int
        Rows kept, ``ceil(samples / 2)``: row ``i`` now holds old row ``2 i``.

    Notes
    -----
    ``(k // 2) * (2 * interval) == k * interval`` exactly in floating point for
    even ``k`` (doubling is exact and both sides round the same real number),
    so the kept times are on the new grid bit for bit.
    """
    kept = 0
    for i in range(0, samples, 2):
        tl_time[kept] = tl_time[i]
        for f in range(TIMELINE_FIELDS):
            tl_rows[f, kept] = tl_rows[f, i]
        kept += 1
    return kept
