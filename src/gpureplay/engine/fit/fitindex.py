"""Per-model segment trees that pick the node for a whole-GPU pod without scanning the cluster.

For a pod of ``k`` whole GPUs with no CPU, memory or GPU-memory limit (class
flag ``C_EXACT``) a node fits iff its model is allowed and it has ``>= k``
wholly free GPUs. Each GPU model gets a segment tree over its nodes (in node
order); tree entry ``[v, w]`` is the smallest *key* among the nodes under ``v``
that have ``>= w`` wholly free GPUs. The key is the node's rank under an
indexable scorer (:func:`gpureplay.engine.fit.scoring.index_key`), ties by node
index, so the answer is the root entry ``[root, k]`` minimised over the allowed
models: O(models) per pod instead of O(nodes), and O(GPUs per node x log
nodes) per update.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.jit.config import kernel
from gpureplay.engine.state.bundles import FitIndex
from gpureplay.engine.state.layout import N_MODEL, Int64Array

#: Entry of a tree cell with no fitting node.
NO_KEY = 1 << 62
#: Low bits of a key hold the node index.
LOW32 = (1 << 32) - 1


def index_layout(node_int: Int64Array, num_models: int, width: int) -> FitIndex:
    """Allocate the trees: leaf row of each node (-1: no GPU model), first row of each model's tree, keys.

    Notes
    -----
    Array-embedded segment trees (Bentley's "decomposable searching", 1979),
    one per GPU model like Slurm's per-feature node bitmaps. Model ``m``'s tree
    has ``2P`` rows from ``offset[m]`` (``P`` = power of two >= its node count),
    root at ``offset[m] + 1`` and leaves at ``offset[m] + P + i``.
    """
    num_nodes = node_int.shape[1]
    models = max(num_models, 1)
    node_model = node_int[N_MODEL]
    counts = np.bincount(node_model[node_model >= 0], minlength=models).astype(np.int64)
    leaves = np.ones(models, dtype=np.int64)
    for model in range(models):
        while leaves[model] < counts[model]:
            leaves[model] *= 2
    offset = np.zeros(models, dtype=np.int64)
    if models > 1:
        offset[1:] = np.cumsum(2 * leaves)[:-1]
    leaf = np.full(num_nodes, -1, dtype=np.int64)
    seen = np.zeros(models, dtype=np.int64)
    for n in range(num_nodes):
        model = node_model[n]
        if model >= 0:
            leaf[n] = offset[model] + leaves[model] + seen[model]
            seen[model] += 1
    keys = np.full((int((2 * leaves).sum()), width), NO_KEY, dtype=np.int64)
    return FitIndex(leaf, offset, keys)


@kernel
def index_set(ix: FitIndex, n: int, model: int, key: int, whole: int) -> None:
    """Set node ``n``'s leaf to ``key`` for widths ``<= whole`` and refresh its ancestors.

    Notes
    -----
    O(width x log nodes). Called after every change to the current state's
    free GPUs of an indexed replay, never for a projection or trial state.
    """
    row = ix.leaf[n]
    if row < 0:
        return
    base = ix.offset[model]
    width = ix.keys.shape[1]
    for w in range(width):
        ix.keys[row, w] = key if w <= whole else NO_KEY
    i = (row - base) >> 1
    while i >= 1:
        parent = base + i
        left = base + 2 * i
        for w in range(width):
            a = ix.keys[left, w]
            b = ix.keys[left + 1, w]
            ix.keys[parent, w] = a if a < b else b
        i >>= 1


@kernel
def index_query(ix: FitIndex, mask: np.uint64, k: int) -> int:
    """The lowest-key node of an allowed model with ``>= k`` wholly free GPUs, or -1."""
    if k >= ix.keys.shape[1]:
        return -1
    best = NO_KEY
    for model in range(ix.offset.shape[0]):
        if ((mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0):
            continue
        key = ix.keys[ix.offset[model] + 1, k]
        if key < best:
            best = key
    if best == NO_KEY:
        return -1
    return best & LOW32
