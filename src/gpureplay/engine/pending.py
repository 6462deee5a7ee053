"""The pending set: per-class ordered job sets, class heads merged across tenants, the admission step.

Order
-----
A pending job's queue key is ``(tenant rank, key1, key2, job_id)``, smallest
first. ``key1, key2`` come from the queue order (fifo ``(0, submit)``, sjf
``(duration, submit)``, priority ``(-priority, submit)``: kube-scheduler's
PrioritySort); an evicted job that re-enters the queue under the ``back`` rule
gets ``key2 = `` the time it re-entered (Kueue's ``requeuingStrategy.timestamp:
Eviction``, or a Job controller's new pod). The tenant rank is the tenant
selector's: 0 for every tenant under the global order (v1's orders), so the
merge is one queue across tenants; a fair-share selector re-ranks tenants
between placements and the merge re-keys a tenant's class heads lazily (an
entry's ``stamp`` is the rank version it was pushed under).

Structure
---------
Jobs are laid out *class by class, in static key order* ("class-sorted
positions"); a three-level bitset over those positions holds the pending jobs
that are at their static place. A requeued job with a new key goes to its
class's *overflow list* (sorted by key, removal by tombstone so a cycle's
cursors never shift). The head of a class is the smaller of the first set bit
in its range and the first live overflow entry; a cycle merges class heads in
a heap instead of re-sorting the queue, and a class that cannot fit is dropped
with all of its jobs at once.
"""

from __future__ import annotations

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.state.bundles import Classes, Jobs, JobState, Pending, Run
from gpureplay.engine.state.heaps import bits_clear, bits_next, bits_set, merge_push
from gpureplay.engine.state.layout import (
    C_END,
    C_START,
    C_TENANT,
    CD_APOS,
    CD_CUR,
    CD_FAIL,
    CD_OCUR,
    CD_OVER,
    CD_PENDING,
    D_OVER,
    J_CLASS,
    J_ID,
    J_POS,
    J_TENANT,
    K_NACTIVE,
    K_NPEND,
    K_VERSION,
    QU_PENDING,
    T_KEY1,
    T_KEY2,
)


@inline_kernel
def key_before(js: JobState, jobs: Jobs, a: int, b: int) -> bool:
    """Whether job ``a`` orders before job ``b`` within one class (same tenant): ``(key1, key2, job_id)``."""
    if js.time[T_KEY1, a] != js.time[T_KEY1, b]:
        return bool(js.time[T_KEY1, a] < js.time[T_KEY1, b])
    if js.time[T_KEY2, a] != js.time[T_KEY2, b]:
        return bool(js.time[T_KEY2, a] < js.time[T_KEY2, b])
    return bool(jobs.ints[J_ID, a] < jobs.ints[J_ID, b])


@inline_kernel
def _activate(pend: Pending, run: Run, c: int) -> None:
    if pend.cls[CD_PENDING, c] == 0:
        a = run.counters[K_NACTIVE]
        pend.active[a] = c
        pend.cls[CD_APOS, c] = a
        run.counters[K_NACTIVE] = a + 1
    pend.cls[CD_PENDING, c] += 1
    run.counters[K_NPEND] += 1


@inline_kernel
def _deactivate(pend: Pending, run: Run, c: int) -> None:
    pend.cls[CD_PENDING, c] -= 1
    run.counters[K_NPEND] -= 1
    if pend.cls[CD_PENDING, c] == 0:
        a = pend.cls[CD_APOS, c]
        last = run.counters[K_NACTIVE] - 1
        moved = pend.active[last]
        pend.active[a] = moved
        pend.cls[CD_APOS, moved] = a
        pend.cls[CD_APOS, c] = -1
        run.counters[K_NACTIVE] = last


@kernel
def enqueue(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, run: Run, j: int) -> None:
    """Add job ``j`` to the pending set: at its static place, or (``D_OVER``) in its class's overflow list.

    Notes
    -----
    O(1) at the static place. An overflow insertion first drops the list's
    tombstones, then shifts later entries: O(overflow length), which only
    requeued jobs pay.
    """
    c = jobs.ints[J_CLASS, j]
    if js.dyn[D_OVER, j] == 0:
        bits_set(jobs.ints[J_POS, j], pend.l0, pend.l1, pend.l2)
    else:
        base = cs.ints[C_START, c]
        used = 0
        for i in range(pend.cls[CD_OVER, c]):
            other = pend.over[base + i]
            if other >= 0:
                pend.over[base + used] = other
                used += 1
        i = used
        while i > 0 and key_before(js, jobs, j, pend.over[base + i - 1]):
            pend.over[base + i] = pend.over[base + i - 1]
            i -= 1
        pend.over[base + i] = j
        pend.cls[CD_OVER, c] = used + 1
    _activate(pend, run, c)
    run.queues[QU_PENDING, jobs.ints[J_TENANT, j]] += 1


@kernel
def dequeue(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, run: Run, j: int) -> None:
    """Remove job ``j`` from the pending set (O(1) at its static place; a tombstone in the overflow list)."""
    c = jobs.ints[J_CLASS, j]
    if js.dyn[D_OVER, j] == 0:
        bits_clear(jobs.ints[J_POS, j], pend.l0, pend.l1, pend.l2)
    else:
        base = cs.ints[C_START, c]
        for i in range(pend.cls[CD_OVER, c]):
            if pend.over[base + i] == j:
                pend.over[base + i] = -1
                break
    _deactivate(pend, run, c)
    run.queues[QU_PENDING, jobs.ints[J_TENANT, j]] -= 1


@kernel
def cursor_reset(cs: Classes, pend: Pending, c: int) -> None:
    """Point class ``c``'s cycle cursors at its first pending jobs (static set and overflow list)."""
    pend.cls[CD_CUR, c] = bits_next(cs.ints[C_START, c], cs.ints[C_END, c], pend.l0, pend.l1, pend.l2)
    o = 0
    while o < pend.cls[CD_OVER, c] and pend.over[cs.ints[C_START, c] + o] < 0:
        o += 1
    pend.cls[CD_OCUR, c] = o if o < pend.cls[CD_OVER, c] else -1


@inline_kernel
def cursor_job(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, c: int) -> int:
    """The job under class ``c``'s cursors: the earlier of its static and overflow candidates (-1: none)."""
    p = pend.cls[CD_CUR, c]
    o = pend.cls[CD_OCUR, c]
    a = cs.order[p] if p >= 0 else -1
    b = pend.over[cs.ints[C_START, c] + o] if o >= 0 else -1
    if a < 0:
        return b
    if b < 0:
        return a
    return b if key_before(js, jobs, b, a) else a


@kernel
def cursor_step(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, c: int, j: int) -> None:
    """Move class ``c``'s cursor past job ``j`` (the job :func:`cursor_job` returned).

    Notes
    -----
    The static cursor moves to the next set bit after ``j``'s position (bits
    cleared meanwhile are skipped); the overflow cursor to the next live entry
    (tombstones keep positions stable during a cycle).
    """
    if js.dyn[D_OVER, j] == 0:
        pend.cls[CD_CUR, c] = bits_next(jobs.ints[J_POS, j] + 1, cs.ints[C_END, c], pend.l0, pend.l1, pend.l2)
        return
    base = cs.ints[C_START, c]
    o = pend.cls[CD_OCUR, c] + 1
    while o < pend.cls[CD_OVER, c] and pend.over[base + o] < 0:
        o += 1
    pend.cls[CD_OCUR, c] = o if o < pend.cls[CD_OVER, c] else -1


@inline_kernel
def push_head(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, size: int, c: int) -> int:
    """Push class ``c``'s cursor job onto the merge heap (if any); returns the heap size."""
    j = cursor_job(jobs, cs, js, pend, c)
    if j < 0:
        return size
    return merge_push(
        pend.heap_f,
        pend.heap_i,
        size,
        pend.tenant_rank[cs.ints[C_TENANT, c]],
        js.time[T_KEY1, j],
        js.time[T_KEY2, j],
        jobs.ints[J_ID, j],
        c,
        0,
    )


@kernel
def build_merge(jobs: Jobs, cs: Classes, js: JobState, pend: Pending, run: Run, drop_failed: bool) -> int:
    """Reset every active class's cursors and fill the merge heap with their heads; returns its size.

    Parameters
    ----------
    drop_failed
        Leave out classes known not to fit at the current release version
        (none of their jobs can start).

    Notes
    -----
    A k-way merge of per-class sorted lists (Knuth, TAOCP vol. 3, 5.4.1) stands
    in for kube-scheduler's activeQ heap: only class heads are compared.
    """
    size = 0
    version = run.counters[K_VERSION]
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        if drop_failed and pend.cls[CD_FAIL, c] == version:
            continue
        cursor_reset(cs, pend, c)
        size = push_head(jobs, cs, js, pend, size, c)
    return size


@kernel
def admissible(jobs: Jobs, js: JobState, j: int) -> bool:
    """The admission step before placement: may job ``j`` be placed now?

    Notes
    -----
    Every job is admissible under the v1 policies; quota checks (Kueue
    ClusterQueue nominal quota, Volcano ``capability``/``deserved``, KAI
    ``limit``) plug in here, before any placement is tried.
    """
    return True
