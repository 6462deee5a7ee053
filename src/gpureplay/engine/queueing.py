"""Pending-job structures: per-class ordered sets, the completion heap, small merge heaps.

Queue order never changes after a job is submitted (fifo, sjf and priority keys
are static), so every job gets its queue rank once, at compile time. Jobs are
laid out *class by class, in rank order* ("class-sorted positions"); the
pending jobs are a three-level bitset over those positions. The head of a
class is then the next set bit in its range, found in O(levels), and a cycle
merges the heads of the classes with a small heap instead of re-sorting the
queue: a class that cannot fit is dropped with all its jobs at once.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gpureplay.engine.config import kernel
from gpureplay.engine.state import (
    CD_APOS,
    CD_PENDING,
    J_CLASS,
    J_POS,
    K_NACTIVE,
    K_NPEND,
    Float64Array,
    Int64Array,
    UInt64Array,
)

_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)


def _debruijn_table() -> npt.NDArray[np.int64]:
    table = np.zeros(64, dtype=np.int64)
    for i in range(64):
        table[((1 << i) * 0x03F79D71B4CB0A89 % (1 << 64)) >> 58] = i
    return table


_CTZ = _debruijn_table()


@kernel
def ctz64(x: np.uint64) -> int:
    """Index of the lowest set bit of a non-zero ``x``.

    Notes
    -----
    De Bruijn multiplication (Leiserson, Prokop & Randall, "Using de Bruijn
    sequences to index a 1 in a computer word", 1998).
    """
    low = x & (~x + np.uint64(1))
    return int(_CTZ[int((low * _DEBRUIJN) >> np.uint64(58))])


def bitset_words(size: int) -> tuple[int, int, int]:
    """Word counts of the three levels of a bitset over ``size`` positions."""
    w0 = max(1, (size + 63) // 64)
    w1 = max(1, (w0 + 63) // 64)
    w2 = max(1, (w1 + 63) // 64)
    return w0, w1, w2


@kernel
def bits_set(p: int, l0: UInt64Array, l1: UInt64Array, l2: UInt64Array) -> None:
    """Mark position ``p`` (and its summary bits).

    Notes
    -----
    O(1): one word per level (see :func:`bits_next`).
    """
    w0 = p >> 6
    l0[w0] |= np.uint64(1) << np.uint64(p & 63)
    w1 = w0 >> 6
    l1[w1] |= np.uint64(1) << np.uint64(w0 & 63)
    l2[w1 >> 6] |= np.uint64(1) << np.uint64(w1 & 63)


@kernel
def bits_clear(p: int, l0: UInt64Array, l1: UInt64Array, l2: UInt64Array) -> None:
    """Unmark position ``p``, clearing summary bits whose word became empty.

    Notes
    -----
    O(1): stops at the first level whose word is still non-empty.
    """
    w0 = p >> 6
    l0[w0] &= ~(np.uint64(1) << np.uint64(p & 63))
    if l0[w0] != np.uint64(0):
        return
    w1 = w0 >> 6
    l1[w1] &= ~(np.uint64(1) << np.uint64(w0 & 63))
    if l1[w1] != np.uint64(0):
        return
    l2[w1 >> 6] &= ~(np.uint64(1) << np.uint64(w1 & 63))


@kernel
def bits_next(p: int, end: int, l0: UInt64Array, l1: UInt64Array, l2: UInt64Array) -> int:
    """First marked position in ``[p, end)``, or -1.

    Notes
    -----
    A 64-ary summary tree (van Emde Boas-style layout of Linux's ``find_next_bit``
    over two summary levels): O(3) word operations plus a scan of the top level,
    which has one word per 262,144 positions.
    """
    if p >= end:
        return -1
    w0 = p >> 6
    x = l0[w0] & (_ONES << np.uint64(p & 63))
    if x == np.uint64(0):
        i1 = w0 + 1
        w1 = i1 >> 6
        y = np.uint64(0)
        if w1 < l1.shape[0]:
            y = l1[w1] & (_ONES << np.uint64(i1 & 63))
        if y == np.uint64(0):
            i2 = w1 + 1
            w2 = i2 >> 6
            if w2 >= l2.shape[0]:
                return -1
            z = l2[w2] & (_ONES << np.uint64(i2 & 63))
            while z == np.uint64(0):
                w2 += 1
                if w2 >= l2.shape[0]:
                    return -1
                z = l2[w2]
            w1 = (w2 << 6) + ctz64(z)
            y = l1[w1]
        w0 = (w1 << 6) + ctz64(y)
        x = l0[w0]
    found = (w0 << 6) + ctz64(x)
    return found if found < end else -1


@kernel
def heap_push(hf: Float64Array, hi: Int64Array, size: int, key: float, tie: int, value: int) -> int:
    """Insert ``value`` with key ``(key, tie)`` (smallest first); returns the new size.

    Notes
    -----
    Array binary heap (Williams 1964); the ``(time, tie)`` key is SimPy's
    ``(time, priority, counter)`` total order with the job id as the tie.
    """
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if hf[parent] < key or (hf[parent] == key and hi[0, parent] < tie):
            break
        hf[i] = hf[parent]
        hi[0, i] = hi[0, parent]
        hi[1, i] = hi[1, parent]
        i = parent
    hf[i] = key
    hi[0, i] = tie
    hi[1, i] = value
    return size + 1


@kernel
def heap_pop(hf: Float64Array, hi: Int64Array, size: int) -> int:
    """Remove the top entry (read it first at index 0); returns the new size.

    Notes
    -----
    Sift-down of an array binary heap (Williams 1964).
    """
    size -= 1
    if size == 0:
        return 0
    key = hf[size]
    tie = hi[0, size]
    value = hi[1, size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and (
            hf[right] < hf[child] or (hf[right] == hf[child] and hi[0, right] < hi[0, child])
        ):
            child = right
        if key < hf[child] or (key == hf[child] and tie < hi[0, child]):
            break
        hf[i] = hf[child]
        hi[0, i] = hi[0, child]
        hi[1, i] = hi[1, child]
        i = child
    hf[i] = key
    hi[0, i] = tie
    hi[1, i] = value
    return size


@kernel
def enqueue(
    j: int,
    job_int: Int64Array,
    class_dyn: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    counters: Int64Array,
) -> None:
    """Add job ``j`` to the pending set (its class becomes active if it was empty).

    Notes
    -----
    O(1); the class joins the active list that cycles merge over.
    """
    c = job_int[J_CLASS, j]
    bits_set(job_int[J_POS, j], l0, l1, l2)
    if class_dyn[CD_PENDING, c] == 0:
        a = counters[K_NACTIVE]
        active[a] = c
        class_dyn[CD_APOS, c] = a
        counters[K_NACTIVE] = a + 1
    class_dyn[CD_PENDING, c] += 1
    counters[K_NPEND] += 1


@kernel
def dequeue(
    j: int,
    job_int: Int64Array,
    class_dyn: Int64Array,
    active: Int64Array,
    l0: UInt64Array,
    l1: UInt64Array,
    l2: UInt64Array,
    counters: Int64Array,
) -> None:
    """Remove job ``j`` from the pending set (swap-remove its class from the active list if emptied).

    Notes
    -----
    O(1); the active list's order carries no meaning (the merge orders by rank).
    """
    c = job_int[J_CLASS, j]
    bits_clear(job_int[J_POS, j], l0, l1, l2)
    class_dyn[CD_PENDING, c] -= 1
    counters[K_NPEND] -= 1
    if class_dyn[CD_PENDING, c] == 0:
        a = class_dyn[CD_APOS, c]
        last = counters[K_NACTIVE] - 1
        moved = active[last]
        active[a] = moved
        class_dyn[CD_APOS, moved] = a
        class_dyn[CD_APOS, c] = -1
        counters[K_NACTIVE] = last
