"""The kubelet Topology Manager: NUMA hints, merging, admission, NUMA-aware device and CPU choice.

After the scheduler binds a pod, the kubelet of its node admits it: the
device manager (GPUs) and the CPU manager's static policy (exclusive CPUs)
each give *hints* (masks of NUMA nodes that could hold the request, preferred
when as narrow as the request could ever be), the Topology Manager merges
them and its policy admits or rejects the pod (TopologyAffinityError). The
scheduler does not see NUMA: a rejected job goes back to its Job controller,
which retries after a back-off. scheduler-plugins' NodeResourceTopologyMatch
filter (``numa_aware_scheduler``) lets the scheduler skip nodes whose NUMA
nodes cannot hold a pod under ``single-numa-node``.

Sources: docs/systems.md, "Kubelet Topology Manager"; Kubernetes
``pkg/kubelet/cm/topologymanager/policy.go`` (``mergePermutation``,
``HintMerger.compare``), ``policy_single_numa_node.go``,
``devicemanager/topology_hints.go``, ``cpumanager/policy_static.go``;
docs/engine/placement.md, "Kubelet Topology Manager".
"""

from __future__ import annotations

from gpureplay.engine.fit.resources import class_capacity, node_capacity, release_pod, take_pod
from gpureplay.engine.fit.scoring import FIRST_FIT, node_score, refresh_index
from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.jobs import place_pod
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    FitIndex,
    Jobs,
    JobState,
    Numa,
    Params,
    Run,
    Scratch,
)
from gpureplay.engine.state.layout import (
    C_CPU,
    C_K,
    C_KIND,
    C_PODS,
    G_MILLI,
    J_CLASS,
    J_K,
    J_POD0,
    J_SLOT0,
    KIND_WHOLE,
    N_GPU0,
    N_GPUS,
    P_CPU_MGR,
    P_NODE,
    P_NUMA_AWARE,
    P_TOPO_MGR,
    TOPO_MGR_BEST_EFFORT,
    TOPO_MGR_SINGLE_NUMA,
    WHOLE,
    Int64Array,
)

#: A hint with no mask ("any NUMA node": the provider has no request).
NO_MASK = -1


@inline_kernel
def popcount(mask: int) -> int:
    """NUMA nodes in a mask."""
    count = 0
    while mask:
        mask &= mask - 1
        count += 1
    return count


@inline_kernel
def mask_total(values: Int64Array, mask: int, width: int) -> int:
    """The sum of ``values[u]`` over the NUMA nodes ``u < width`` in ``mask``."""
    total = 0
    for u in range(width):
        if (mask >> u) & 1:
            total += values[u]
    return total


@inline_kernel
def narrower(a: int, b: int) -> bool:
    """The kubelet's ``IsNarrowerThan``: fewer NUMA nodes, or as many and a lower mask."""
    ca = popcount(a)
    cb = popcount(b)
    return ca < cb or (ca == cb and a < b)


@inline_kernel
def exclusive_cpus(params: Params, cs: Classes, c: int) -> int:
    """Exclusive CPUs a pod of class ``c`` gets under the CPU manager's static policy (0: shared pool).

    Notes
    -----
    Only a Guaranteed pod asking whole CPUs gets exclusive ones
    (``guaranteedCPUs``); a pod whose milli-CPU is a positive multiple of 1000
    is taken as one.
    """
    cpu = cs.ints[C_CPU, c]
    if params.codes[P_CPU_MGR] == 0 or cpu <= 0 or cpu % 1000 != 0:
        return 0
    return int(cpu // 1000)


@inline_kernel
def whole_gpus(cs: Classes, c: int) -> int:
    """Whole GPUs a pod of class ``c`` asks the device manager for (0: none)."""
    return int(cs.ints[C_K, c]) if cs.ints[C_KIND, c] == KIND_WHOLE else 0


@kernel
def fill_free(numa: Numa, cl: Cluster, js: JobState, n: int) -> None:
    """Node ``n``'s wholly free GPUs and free exclusive CPUs per NUMA node into ``numa.free_gpu/free_cpu``."""
    for u in range(numa.node_numas[n]):
        numa.free_gpu[u] = 0
        numa.free_cpu[u] = numa.numa_cpus[n, u]
    g0 = cl.node_int[N_GPU0, n]
    for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
        if cl.gpu_free[G_MILLI, g] == WHOLE:
            numa.free_gpu[numa.gpu_numa[g]] += 1
    pod = js.node_pods[n]
    while pod >= 0:
        for u in range(numa.node_numas[n]):
            numa.free_cpu[u] -= numa.pod_cpu[pod, u]
        pod = js.pod_next[pod]


@kernel
def provider_hints(numa: Numa, i: int, n: int, ask: int, cpus: bool, single: bool) -> int:
    """Hints of provider ``i`` (0 devices, 1 CPUs) for ``ask`` units on node ``n``; returns B's term.

    Returns
    -------
    int
        The NUMA count of the provider's narrowest hint (0 for a provider with
        no request, whose one hint has no mask): the term of the kubelet's
        ``maxOfMinAffinityCounts``.

    Notes
    -----
    Device manager ``generateDeviceTopologyHints`` and the CPU manager's
    ``generateCPUTopologyHints``: a mask is a hint when what is free in it
    holds the request, preferred when it has as few NUMA nodes as the fewest
    whose whole capacity holds the request. No hint at all: one "any NUMA
    node, not preferred". ``single``: single-numa-node keeps only preferred
    hints of one NUMA node (``filterSingleNumaHints``).
    """
    if ask == 0:
        numa.hint_mask[i, 0] = NO_MASK
        numa.hint_pref[i, 0] = 1
        numa.counts[i] = 1
        return 0
    width = numa.node_numas[n]
    top = 1 << width
    whole = numa.numa_cpus[n] if cpus else numa.numa_gpus[n]
    free = numa.free_cpu if cpus else numa.free_gpu
    least = width + 1
    for mask in numa.mask_order:
        if mask < top and mask_total(whole, mask, width) >= ask:
            least = min(least, popcount(mask))
    count = 0
    narrowest = width + 1
    for mask in numa.mask_order:
        if mask >= top or mask_total(free, mask, width) < ask:
            continue
        preferred = popcount(mask) == least
        if single and not (preferred and popcount(mask) == 1):
            continue
        numa.hint_mask[i, count] = mask
        numa.hint_pref[i, count] = 1 if preferred else 0
        narrowest = min(narrowest, popcount(mask))
        count += 1
    if count == 0 and not single:
        numa.hint_mask[i, 0] = NO_MASK
        numa.hint_pref[i, 0] = 0
        numa.counts[i] = 1
        return 0
    numa.counts[i] = count
    return narrowest if count > 0 else 0


@kernel
def better_hint(mask: int, preferred: bool, best: int, best_pref: bool, bound: int) -> bool:
    """Whether merged candidate ``(mask, preferred)`` replaces the best so far (the kubelet's ``compare``).

    Notes
    -----
    Preferred beats not preferred; two preferred: the narrower. Two not
    preferred aim at ``bound`` NUMA nodes (the largest of the providers'
    narrowest hints): above it the narrower wins; at it only a candidate at
    it that is narrower; below it a candidate at the bound, or between the
    current and the bound, or as wide and narrower.
    """
    if best < 0:
        return True
    if preferred != best_pref:
        return preferred
    if preferred:
        return narrower(mask, best)
    c = popcount(best)
    k = popcount(mask)
    if c > bound:
        return narrower(mask, best)
    if c == bound:
        return k == bound and narrower(mask, best)
    if k == bound:
        return True
    if k > bound:
        return False
    if k != c:
        return k > c
    return narrower(mask, best)


@kernel
def best_hint(numa: Numa, n: int, bound: int) -> tuple[int, bool]:
    """Merge the two providers' hints on node ``n``: the best ``(mask, preferred)`` (``mergePermutation``)."""
    everything = (1 << numa.node_numas[n]) - 1
    best = -1
    best_pref = False
    for a in range(numa.counts[0]):
        ma = numa.hint_mask[0, a]
        for b in range(numa.counts[1]):
            mb = numa.hint_mask[1, b]
            mask = everything
            if ma != NO_MASK:
                mask &= ma
            if mb != NO_MASK:
                mask &= mb
            if mask == 0:
                continue
            # Preferred only if both are and the masks that are given agree.
            preferred = numa.hint_pref[0, a] == 1 and numa.hint_pref[1, b] == 1
            if ma != NO_MASK and mb != NO_MASK and ma != mb:
                preferred = False
            if better_hint(mask, preferred, best, best_pref, bound):
                best = mask
                best_pref = preferred
    if best < 0:
        return everything, False
    return best, best_pref


@kernel
def take_cpus(numa: Numa, pod: int, n: int, mask: int, ask: int) -> None:
    """Record the ``ask`` exclusive CPUs pod ``pod`` takes on node ``n``: mask first, fewest free first.

    Notes
    -----
    The static policy's ``allocateCPUs`` takes the aligned CPUs first, then
    the rest; ``takeByTopologyNUMAPacked`` fills the fullest NUMA node first
    (here at NUMA granularity; ties lowest id).
    """
    left = ask
    for inside in (True, False):
        while left > 0:
            pick = -1
            for u in range(numa.node_numas[n]):
                if (((mask >> u) & 1) == 1) != inside or numa.free_cpu[u] <= 0:
                    continue
                if pick < 0 or numa.free_cpu[u] < numa.free_cpu[pick]:
                    pick = u
            if pick < 0:
                break
            took = min(left, numa.free_cpu[pick])
            numa.pod_cpu[pod, pick] += took
            numa.free_cpu[pick] -= took
            left -= took


@kernel
def admit_pod(
    numa: Numa,
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    j: int,
    p: int,
    held: bool,
) -> bool:
    """The kubelet admits pod ``p`` of job ``j`` (placed) under its Topology Manager policy; False: rejected.

    Parameters
    ----------
    held
        Whether the pod holds the GPUs its placement took (else they were
        given back before admission began).

    Notes
    -----
    On admission the pod's GPUs are chosen again, in the best hint's NUMA
    nodes first (lowest index), and its exclusive CPUs recorded per NUMA
    node. On rejection the pod holds GPUs again (the ones it had, or the
    lowest-index free ones), so that its placement can be undone whole.
    """
    c = jobs.ints[J_CLASS, j]
    pod = jobs.ints[J_POD0, j] + p
    n = js.pod_node[pod]
    k = whole_gpus(cs, c)
    x = exclusive_cpus(params, cs, c)
    for u in range(numa.node_numas[n]):
        numa.pod_cpu[pod, u] = 0
    if k == 0 and x == 0:
        return True
    slot0 = jobs.ints[J_SLOT0, j] + p * jobs.ints[J_K, j]
    if k > 0 and held:
        release_pod(cl, cs, c, n, js.slot_gpu, slot0)
    fill_free(numa, cl, js, n)
    single = params.codes[P_TOPO_MGR] == TOPO_MGR_SINGLE_NUMA
    bound = max(provider_hints(numa, 0, n, k, False, single), provider_hints(numa, 1, n, x, True, single))
    mask, preferred = best_hint(numa, n, bound)
    if not preferred and params.codes[P_TOPO_MGR] != TOPO_MGR_BEST_EFFORT:
        if k > 0:
            take_pod(cl, cs, c, n, -1, js.slot_gpu, slot0, held)
        return False
    if k > 0:
        g0 = cl.node_int[N_GPU0, n]
        taken = 0
        for inside in (True, False):
            for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
                in_mask = ((mask >> numa.gpu_numa[g]) & 1) == 1
                if taken < k and cl.gpu_free[G_MILLI, g] == WHOLE and in_mask == inside:
                    js.slot_gpu[slot0 + taken] = g
                    taken += 1
        take_pod(cl, cs, c, n, -1, js.slot_gpu, slot0, True)
        refresh_index(params, cl, ix, n)
    if x > 0:
        take_cpus(numa, pod, n, mask, x)
    return True


@kernel
def admit_gang(
    numa: Numa, params: Params, jobs: Jobs, cs: Classes, cl: Cluster, ix: FitIndex, js: JobState, j: int
) -> bool:
    """Each node's kubelet admits job ``j``'s placed pods in pod order; False at the first rejection.

    Notes
    -----
    Under ``numa_aware_scheduler`` the pods were admitted as they were placed
    (:func:`numa_place`).
    """
    if params.codes[P_NUMA_AWARE] != 0:
        return True
    c = jobs.ints[J_CLASS, j]
    pod0 = jobs.ints[J_POD0, j]
    pods = cs.ints[C_PODS, c]
    k = whole_gpus(cs, c)
    # The kubelet sees a pod's predecessors admitted and its successors not yet there: their GPUs are given
    # back first, and they hold no exclusive CPUs (their rows may be an earlier attempt's).
    for p in range(pods):
        n = js.pod_node[pod0 + p]
        for u in range(numa.node_numas[n]):
            numa.pod_cpu[pod0 + p, u] = 0
        if k > 0:
            release_pod(cl, cs, c, n, js.slot_gpu, jobs.ints[J_SLOT0, j] + p * jobs.ints[J_K, j])
    for p in range(pods):
        if not admit_pod(numa, params, jobs, cs, cl, ix, js, j, p, False):
            for q in range(p + 1, pods):
                if k > 0:
                    n = js.pod_node[pod0 + q]
                    take_pod(
                        cl, cs, c, n, -1, js.slot_gpu, jobs.ints[J_SLOT0, j] + q * jobs.ints[J_K, j], False
                    )
            return False
    return True


@kernel
def numa_room(numa: Numa, cl: Cluster, js: JobState, n: int, k: int, x: int, limit: int) -> int:
    """Pods of ``k`` GPUs and ``x`` exclusive CPUs node ``n``'s NUMA nodes hold, one per NUMA node, capped."""
    fill_free(numa, cl, js, n)
    total = 0
    for u in range(numa.node_numas[n]):
        room = limit
        if k > 0:
            room = min(room, numa.free_gpu[u] // k)
        if x > 0:
            room = min(room, numa.free_cpu[u] // x)
        total += room
        if total >= limit:
            return limit
    return total


@kernel
def numa_capacity(
    numa: Numa, params: Params, cs: Classes, cl: Cluster, js: JobState, c: int, limit: int
) -> int:
    """Pods of class ``c`` the cluster holds under NodeResourceTopologyMatch's single-NUMA filter, capped."""
    # The usual capacity bounds it, and its histogram bound dismisses most jobs that cannot fit in O(models).
    usual = class_capacity(cl, cs, c, limit)
    if usual < limit:
        return usual
    k = whole_gpus(cs, c)
    x = exclusive_cpus(params, cs, c)
    total = 0
    for n in range(cl.node_int.shape[1]):
        room = node_capacity(cl, cs, c, n, limit - total)
        if room > 0 and (k > 0 or x > 0):
            room = numa_room(numa, cl, js, n, k, x, room)
        total += room
        if total >= limit:
            return limit
    return total


@kernel
def numa_node(numa: Numa, params: Params, cs: Classes, cl: Cluster, js: JobState, c: int) -> int:
    """The node for one pod of class ``c`` among those that pass the NUMA filter: best score, lowest index."""
    k = whole_gpus(cs, c)
    x = exclusive_cpus(params, cs, c)
    best = -1
    best_score = 0.0
    for n in range(cl.node_int.shape[1]):
        if node_capacity(cl, cs, c, n, 1) < 1:
            continue
        if (k > 0 or x > 0) and numa_room(numa, cl, js, n, k, x, 1) < 1:
            continue
        if params.codes[P_NODE] == FIRST_FIT:
            return n
        score = node_score(params, cl, cs, c, n)
        if best < 0 or score > best_score:
            best = n
            best_score = score
    return best


@kernel
def numa_place(
    numa: Numa,
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
    """NUMA-aware scheduling: place and admit job ``j``'s pods one by one if the cluster holds them all.

    Notes
    -----
    scheduler-plugins' NodeResourceTopologyMatch Filter (single-numa-node,
    ``pkg/noderesourcetopology/filter.go``) on up-to-date reports: a node
    passes when one NUMA node holds the pod; each pod is admitted as placed,
    so the next sees its NUMA node taken, and the kubelet never rejects.
    """
    c = jobs.ints[J_CLASS, j]
    pods = cs.ints[C_PODS, c]
    if numa_capacity(numa, params, cs, cl, js, c, pods) < pods:
        return False
    for p in range(pods):
        n = numa_node(numa, params, cs, cl, js, c)
        place_pod(params, jobs, cs, cl, ix, js, sc, run, j, n, t)
        admit_pod(numa, params, jobs, cs, cl, ix, js, j, p, True)
    return True
