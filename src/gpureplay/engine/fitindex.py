"""Per-model segment trees that pick the node for a whole-GPU pod without scanning the cluster.

For a pod of ``k`` whole GPUs with no CPU, memory or GPU-memory limit (class
flag ``C_EXACT``) a node fits iff its model is allowed and it has ``>= k``
wholly free GPUs. Each GPU model gets a segment tree over its nodes (in node
order); tree entry ``[v, w]`` is the smallest *policy key* among the nodes
under ``v`` that have ``>= w`` wholly free GPUs. The key orders nodes the way
the node policy does, ties by node index, so the answer is the root entry
``[root, k]`` minimised over the allowed models: O(models) per pod instead of
O(nodes), and O(GPUs per node x log nodes) per update.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.config import kernel
from gpureplay.engine.state import BEST_FIT, F_MILLI, F_WHOLE, FIRST_FIT, N_MODEL, Int64Array

#: Entry of a tree cell with no fitting node.
NO_KEY = 1 << 62
_LOW32 = (1 << 32) - 1
_MILLI_CEILING = 1 << 29


@kernel
def index_layout(
    node_int: Int64Array, num_models: int, width: int
) -> tuple[Int64Array, Int64Array, Int64Array]:
    """Allocate the trees: (leaf row of each node or -1, first row of each model's tree, keys).

    Returns
    -------
    tuple of numpy.ndarray
        ``leaf[n]``, ``offset[model]`` and ``keys`` (rows x ``width``, all
        :data:`NO_KEY`). Model ``m``'s tree has ``2P`` rows from ``offset[m]``
        (``P`` = power of two >= its node count), root at ``offset[m] + 1`` and
        leaves at ``offset[m] + P + i``.

    Notes
    -----
    Array-embedded segment trees (Bentley's "decomposable searching", 1979),
    one per GPU model like Slurm's per-feature node bitmaps.
    """
    num_nodes = node_int.shape[1]
    models = max(num_models, 1)
    counts = np.zeros(models, dtype=np.int64)
    for n in range(num_nodes):
        if node_int[N_MODEL, n] >= 0:
            counts[node_int[N_MODEL, n]] += 1
    offset = np.zeros(models, dtype=np.int64)
    leaves = np.zeros(models, dtype=np.int64)
    rows = 0
    for model in range(models):
        size = 1
        while size < counts[model]:
            size *= 2
        offset[model] = rows
        leaves[model] = size
        rows += 2 * size
    leaf = np.full(num_nodes, -1, dtype=np.int64)
    seen = np.zeros(models, dtype=np.int64)
    for n in range(num_nodes):
        model = node_int[N_MODEL, n]
        if model >= 0:
            leaf[n] = offset[model] + leaves[model] + seen[model]
            seen[model] += 1
    keys = np.full((rows, width), NO_KEY, dtype=np.int64)
    return leaf, offset, keys


@kernel
def fit_key(n: int, policy: int, node_free: Int64Array) -> int:
    """Key ordering nodes like ``policy`` (smaller is preferred), ties to the lower node index.

    Notes
    -----
    first fit: the index; best fit (binpack): least free milli after placing,
    which for a fixed pod is least free milli now; worst fit (spread): most.
    """
    if policy == FIRST_FIT:
        return n
    free = node_free[F_MILLI, n]
    if policy == BEST_FIT:
        return int((free << 32) | n)
    return int(((_MILLI_CEILING - free) << 32) | n)


@kernel
def index_update(
    n: int,
    policy: int,
    node_int: Int64Array,
    node_free: Int64Array,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
) -> None:
    """Refresh node ``n``'s leaf and its ancestors after its free GPUs changed.

    Notes
    -----
    O(width x log nodes). Called after every change to the current state's
    free GPUs (placing, completing, undoing), never for the EASY projection.
    """
    row = leaf[n]
    if row < 0:
        return
    base = offset[node_int[N_MODEL, n]]
    key = fit_key(n, policy, node_free)
    whole = node_free[F_WHOLE, n]
    width = keys.shape[1]
    for w in range(width):
        keys[row, w] = key if w <= whole else NO_KEY
    i = (row - base) >> 1
    while i >= 1:
        parent = base + i
        left = base + 2 * i
        for w in range(width):
            a = keys[left, w]
            b = keys[left + 1, w]
            keys[parent, w] = a if a < b else b
        i >>= 1


@kernel
def index_build(
    policy: int,
    node_int: Int64Array,
    node_free: Int64Array,
    leaf: Int64Array,
    offset: Int64Array,
    keys: Int64Array,
) -> None:
    """Fill every tree from the current node state.

    Notes
    -----
    Leaf by leaf through :func:`index_update`; done once per replay, when the
    node policy is not random (random choice scans, as the spec draws among
    all fitting nodes in index order).
    """
    for n in range(node_int.shape[1]):
        index_update(n, policy, node_int, node_free, leaf, offset, keys)


@kernel
def index_query(mask: np.uint64, k: int, offset: Int64Array, keys: Int64Array) -> int:
    """The preferred node of an allowed model with ``>= k`` wholly free GPUs, or -1.

    Notes
    -----
    Same answer as :func:`gpureplay.engine.placement.choose_node` for a
    whole-GPU pod without CPU, memory or GPU-memory limits (Volcano
    ``binpack`` / kube-scheduler ``LeastAllocated`` reduced to GPU milli).
    """
    if k >= keys.shape[1]:
        return -1
    best = NO_KEY
    for model in range(offset.shape[0]):
        if ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
            continue
        key = keys[offset[model] + 1, k]
        if key < best:
            best = key
    if best == NO_KEY:
        return -1
    return best & _LOW32
