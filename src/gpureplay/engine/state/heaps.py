"""Array heaps and a three-level bitset: the ordered containers every other engine module uses.

Two heap shapes cover the engine:

- *event heaps* (the completion heap, the timer heap, small work heaps):
  key ``(time, tie0, tie1)``, two payload integers; ``hi`` has 4 rows
  ``[tie0, tie1, payload0, payload1]``;
- the *merge heap* of class heads: key ``(f0, f1, f2, tie)`` (tenant rank,
  then the job's queue key, then its id), payload ``[class, stamp]``; ``hf``
  has 3 rows, ``hi`` 3 rows ``[tie, class, stamp]``.

Both are array binary heaps (Williams 1964) with a lexicographic key; the
event key is SimPy's ``(time, priority, counter)`` total order.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.state.layout import Float64Array, Int64Array, UInt64Array

_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)


def _debruijn_table() -> npt.NDArray[np.int64]:
    table = np.zeros(64, dtype=np.int64)
    for i in range(64):
        table[((1 << i) * 0x03F79D71B4CB0A89 % (1 << 64)) >> 58] = i
    return table


_CTZ = _debruijn_table()


@inline_kernel
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
    """Mark position ``p`` (and its summary bits); O(1)."""
    w0 = p >> 6
    l0[w0] |= np.uint64(1) << np.uint64(p & 63)
    w1 = w0 >> 6
    l1[w1] |= np.uint64(1) << np.uint64(w0 & 63)
    l2[w1 >> 6] |= np.uint64(1) << np.uint64(w1 & 63)


@kernel
def bits_clear(p: int, l0: UInt64Array, l1: UInt64Array, l2: UInt64Array) -> None:
    """Unmark position ``p``, clearing summary bits whose word became empty; O(1)."""
    w0 = p >> 6
    l0[w0] &= ~(np.uint64(1) << np.uint64(p & 63))
    if l0[w0] != np.uint64(0):
        return
    w1 = w0 >> 6
    l1[w1] &= ~(np.uint64(1) << np.uint64(w0 & 63))
    if l1[w1] != np.uint64(0):
        return
    l2[w1 >> 6] &= ~(np.uint64(1) << np.uint64(w1 & 63))


@inline_kernel
def bits_test(p: int, l0: UInt64Array) -> bool:
    """Whether position ``p`` is marked."""
    return bool(((l0[p >> 6] >> np.uint64(p & 63)) & np.uint64(1)) != np.uint64(0))


@kernel
def bits_next(p: int, end: int, l0: UInt64Array, l1: UInt64Array, l2: UInt64Array) -> int:
    """First marked position in ``[p, end)``, or -1.

    Notes
    -----
    A 64-ary summary tree (the layout of Linux's ``find_next_bit`` over two
    summary levels): O(3) word operations plus a scan of the top level, which
    has one word per 262,144 positions.
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


@inline_kernel
def _event_less(hf: Float64Array, hi: Int64Array, a: int, key: float, t0: int, t1: int) -> bool:
    """Entry ``a`` orders strictly before key ``(key, t0, t1)``."""
    if hf[a] != key:
        return bool(hf[a] < key)
    if hi[0, a] != t0:
        return bool(hi[0, a] < t0)
    return bool(hi[1, a] < t1)


@kernel
def event_push(
    hf: Float64Array, hi: Int64Array, size: int, key: float, t0: int, t1: int, p0: int, p1: int
) -> int:
    """Insert payload ``(p0, p1)`` under key ``(key, t0, t1)`` (smallest first); returns the new size."""
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if _event_less(hf, hi, parent, key, t0, t1):
            break
        hf[i] = hf[parent]
        for r in range(4):
            hi[r, i] = hi[r, parent]
        i = parent
    hf[i] = key
    hi[0, i] = t0
    hi[1, i] = t1
    hi[2, i] = p0
    hi[3, i] = p1
    return size + 1


@kernel
def event_pop(hf: Float64Array, hi: Int64Array, size: int) -> int:
    """Remove the top entry (read it first at index 0); returns the new size."""
    size -= 1
    if size == 0:
        return 0
    key = hf[size]
    t0 = hi[0, size]
    t1 = hi[1, size]
    p0 = hi[2, size]
    p1 = hi[3, size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _event_less(hf, hi, right, hf[child], hi[0, child], hi[1, child]):
            child = right
        if not _event_less(hf, hi, child, key, t0, t1):
            break
        hf[i] = hf[child]
        for r in range(4):
            hi[r, i] = hi[r, child]
        i = child
    hf[i] = key
    hi[0, i] = t0
    hi[1, i] = t1
    hi[2, i] = p0
    hi[3, i] = p1
    return size


@inline_kernel
def _merge_less(hf: Float64Array, hi: Int64Array, a: int, f0: float, f1: float, f2: float, tie: int) -> bool:
    """Entry ``a`` orders strictly before key ``(f0, f1, f2, tie)``."""
    if hf[0, a] != f0:
        return bool(hf[0, a] < f0)
    if hf[1, a] != f1:
        return bool(hf[1, a] < f1)
    if hf[2, a] != f2:
        return bool(hf[2, a] < f2)
    return bool(hi[0, a] < tie)


@kernel
def merge_push(
    hf: Float64Array,
    hi: Int64Array,
    size: int,
    f0: float,
    f1: float,
    f2: float,
    tie: int,
    value: int,
    stamp: int,
) -> int:
    """Insert ``value`` (a class) under key ``(f0, f1, f2, tie)``; returns the new size."""
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if _merge_less(hf, hi, parent, f0, f1, f2, tie):
            break
        for r in range(3):
            hf[r, i] = hf[r, parent]
            hi[r, i] = hi[r, parent]
        i = parent
    hf[0, i] = f0
    hf[1, i] = f1
    hf[2, i] = f2
    hi[0, i] = tie
    hi[1, i] = value
    hi[2, i] = stamp
    return size + 1


@kernel
def merge_pop(hf: Float64Array, hi: Int64Array, size: int) -> int:
    """Remove the top entry (read it first at column 0); returns the new size."""
    size -= 1
    if size == 0:
        return 0
    f0 = hf[0, size]
    f1 = hf[1, size]
    f2 = hf[2, size]
    tie = hi[0, size]
    value = hi[1, size]
    stamp = hi[2, size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _merge_less(
            hf, hi, right, hf[0, child], hf[1, child], hf[2, child], hi[0, child]
        ):
            child = right
        if not _merge_less(hf, hi, child, f0, f1, f2, tie):
            break
        for r in range(3):
            hf[r, i] = hf[r, child]
            hi[r, i] = hi[r, child]
        i = child
    hf[0, i] = f0
    hf[1, i] = f1
    hf[2, i] = f2
    hi[0, i] = tie
    hi[1, i] = value
    hi[2, i] = stamp
    return size
