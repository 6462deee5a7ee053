"""Topology-aware gang placement: Volcano's network-topology-aware scheduling (HyperNodes), hard mode.

Volcano (``volcano-sh/volcano``, design "Network Topology Aware Scheduling";
``pkg/scheduler/actions/allocate/allocate.go`` ``allocateForJob``,
``plugins/network-topology-aware`` ``getSubJobHyperNodeBinPackingScore``)
groups nodes into HyperNodes by tier, tier 1 the closest to the nodes. Here
the tiers are the topology levels above the node: NVLink domain (1), rack (2),
spine (3). A job with ``networkTopology: {mode: hard, highestTierAllowed: T}``
(a ``required`` request of the level of tier T):

1. tiers are tried in ascending order up to T; in each, every HyperNode whose
   nodes hold the whole gang is a candidate (Volcano dry-runs the gang on
   each; identical pods make that the summed per-node capacity);
2. the first tier with a candidate decides: the candidate with the highest
   binpack score, ``sum_r w_r (used_r + asked_r) / allocatable_r / sum_r w_r``
   over the resources the pod asks (GPU, CPU, memory, weight 1 each), ties
   to the lowest id;
3. the pods go to its nodes by the node scorer. No candidate up to T: the job
   waits (no escalation, no partial placement).

The rules in full: docs/engine/placement.md, "Volcano HyperNodes"; the plain-Python
twin is the ``[Volcano HyperNode]`` code of
``tests/reference/simulator.py``.
"""

from __future__ import annotations

from gpureplay.engine.jit.config import kernel
from gpureplay.engine.placement.kai_tas import UNBOUNDED, bounded, fill_free
from gpureplay.engine.placement.kueue_tas import fill_counts, leaf_range, place_in_leaves
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    FitIndex,
    Jobs,
    JobState,
    Params,
    Run,
    Scratch,
    Topology,
)
from gpureplay.engine.state.layout import (
    C_CPU,
    C_K,
    C_KIND,
    C_MEM,
    C_MILLI,
    C_PODS,
    C_TAS_LEVEL,
    C_TAS_MODE,
    J_CLASS,
    KIND_WHOLE,
    LEVEL_NODE,
    N_CPU,
    N_GPUS,
    N_MEM,
    TM_PREFERRED,
    WHOLE,
)

__all__ = ["volcano_place"]


@kernel
def binpack_score(tas: Topology, cl: Cluster, cs: Classes, c: int, level: int, d: int) -> float:
    """Volcano's HyperNode binpack score of domain ``d`` for the whole gang of class ``c`` (0: overflow)."""
    pods = cs.ints[C_PODS, c]
    whole = cs.ints[C_KIND, c] == KIND_WHOLE
    asked_gpu = pods * (cs.ints[C_K, c] * WHOLE if whole else cs.ints[C_MILLI, c])
    asked_cpu = pods * cs.ints[C_CPU, c]
    asked_mem = pods * cs.ints[C_MEM, c]
    first, end = leaf_range(tas, level, d)
    total = 0.0
    weights = 0
    for r in range(3):
        asked = asked_gpu if r == 0 else asked_cpu if r == 1 else asked_mem
        if asked <= 0:
            continue
        capacity = 0
        for leaf in range(first, end):
            n = tas.leaf_node[leaf]
            if r == 0:
                capacity += cl.node_int[N_GPUS, n] * WHOLE
            elif r == 1:
                capacity = min(capacity + bounded(cl.node_int[N_CPU, n]), UNBOUNDED)
            else:
                capacity = min(capacity + bounded(cl.node_int[N_MEM, n]), UNBOUNDED)
        weights += 1
        if capacity >= UNBOUNDED:
            continue  # no known capacity: (used + asked) / capacity is 0
        used = capacity - tas.free[r, level, d]
        if capacity <= 0 or used + asked > capacity:
            return 0.0
        total += (used + asked) / capacity
    return total / weights if weights > 0 else 0.0


@kernel
def volcano_place(
    tas: Topology,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    j: int,
    t: float,
) -> bool:
    """Place job ``j`` by Volcano's rules; False: it waits.

    Hard mode (``required`` L) searches the tiers up to L's; soft mode (``preferred``, any level) every
    tier and then the whole cluster, as Volcano's master turns a soft spec into a hard one whose
    ``highestTierAllowed`` is the virtual top tier above the highest HyperNode
    (``convertSoftToHardTopology``, PR #5206): the cluster is the last candidate, so a soft job waits
    only when the cluster cannot hold it.
    """
    c = jobs.ints[J_CLASS, j]
    pods = cs.ints[C_PODS, c]
    soft = cs.ints[C_TAS_MODE, c] == TM_PREFERRED
    top = 0 if soft else cs.ints[C_TAS_LEVEL, c]
    fill_counts(tas, cl, cs, c, 0)
    fill_free(tas, cl, cs, c)
    for level in range(LEVEL_NODE - 1, top - 1, -1):
        best = -1
        best_score = 0.0
        for d in range(tas.sizes[level]):
            if tas.state[level, d] < pods:
                continue
            score = binpack_score(tas, cl, cs, c, level, d)
            if best < 0 or score > best_score:
                best = d
                best_score = score
        if best >= 0:
            first, end = leaf_range(tas, level, best)
            place_in_leaves(tas, params, jobs, cs, cl, ix, js, sc, run, j, t, first, end, level, False)
            return True
    if soft:
        held = 0
        for d in range(tas.sizes[0]):
            held += tas.state[0, d]
        if held >= pods:
            place_in_leaves(
                tas, params, jobs, cs, cl, ix, js, sc, run, j, t, 0, tas.sizes[LEVEL_NODE], 0, False
            )
            return True
    return False
