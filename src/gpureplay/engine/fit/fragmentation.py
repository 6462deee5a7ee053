"""FGD's GPU fragmentation measure: how much of a node's idle GPU the workload's tasks could not use.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent" (USENIX ATC'23, §3.2): for a task class ``m``
(a typical pod, :mod:`gpureplay.workload.typical_pods`) the fragment
``F_n(m)`` of node ``n`` is the idle GPU milli that ``m`` cannot use there; the
node's fragmentation is its expectation over the workload, ``F_n = Σ_m p_m
F_n(m)``, and the cluster's is ``Σ_n F_n`` (docs/systems.md, "FGD"). The
rules follow the public simulator (hkust-adsl/kubernetes-scheduler-simulator,
``pkg/utils/frag.go``): :func:`frag_quadrant` is ``GetNodePodFrag``,
:func:`pod_frag` the per-class amount of ``NodeGpuShareFragAmount`` and
:func:`node_frag` its ``FragAmountSumExceptQ3``, the value FGD's score plugin
(``pkg/simulator/plugin/fgd_score.go``) compares before and after a placement.

The kernels take arrays and scalars only, so the placement scorer can call
them on the engine's state (``cl.gpu_free[G_MILLI]``, ``cl.node_free[F_CPU]``,
``cl.node_int[N_GPU0 / N_GPUS / N_MODEL]``) or on a scratch copy of one node.
Their plain-Python twin is ``tests/reference/fragmentation.py``.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.jit.config import entry_kernel, inline_kernel, kernel
from gpureplay.engine.state.layout import ALL_MODELS, Float64Array, Int64Array, UInt64Array

# Quadrants of a (node, task class) pair; the codes are the simulator's bucket
# indices (``FragRatioDataMap`` in pkg/utils/frag.go), which fix the order in
# which node_frag adds the buckets.
Q1_LACK_BOTH = 0  # GPU task: neither the GPUs nor the CPU suffice
Q2_LACK_GPU = 1  # GPU task: the CPU suffices, the GPUs do not
Q3_SATISFIED = 2  # GPU task: it fits
Q4_LACK_CPU = 3  # GPU task: the GPUs suffice, the CPU does not
XL_SATISFIED = 4  # CPU-only task: the CPU suffices
XR_LACK_CPU = 5  # CPU-only task: the CPU does not suffice
NO_ACCESS = 6  # GPU task that may not run on this node's GPU model
QUADRANTS: tuple[str, ...] = (
    "q1_lack_both",
    "q2_lack_gpu",
    "q3_satisfied",
    "q4_lack_cpu",
    "xl_satisfied",
    "xr_lack_cpu",
    "no_access",
)

_ANY_MODEL = np.uint64(ALL_MODELS)


@inline_kernel
def _quadrant(
    cpu_free: int, fitting: int, model: int, c_cpu: int, c_gpus: int, c_milli: int, c_mask: np.uint64
) -> int:
    """The quadrant of a class on a node with ``fitting`` GPUs of ``free >= c_milli`` (see frag_quadrant)."""
    cpu_ok = cpu_free >= c_cpu
    if c_milli == 0:
        return XL_SATISFIED if cpu_ok else XR_LACK_CPU
    if c_mask != _ANY_MODEL and (model < 0 or ((c_mask >> np.uint64(model)) & np.uint64(1)) == np.uint64(0)):
        return NO_ACCESS
    # The simulator counts the request down and answers at the first GPU that takes it to 0,
    # so a class asking for 0 GPUs still needs one GPU with enough free milli.
    if fitting >= max(c_gpus, 1):
        return Q3_SATISFIED if cpu_ok else Q4_LACK_CPU
    return Q2_LACK_GPU if cpu_ok else Q1_LACK_BOTH


@kernel
def frag_quadrant(
    cpu_free: int,
    gpu_free: Int64Array,
    g0: int,
    ngpu: int,
    model: int,
    c_cpu: int,
    c_gpus: int,
    c_milli: int,
    c_mask: np.uint64,
) -> int:
    """Where one task class stands on one node: a quadrant code (``Q1_LACK_BOTH`` .. ``NO_ACCESS``).

    Parameters
    ----------
    cpu_free
        The node's free milli-CPU (capacity minus requests; ``BIG`` when unknown).
    gpu_free
        Free milli-GPU by GPU; the node's GPUs are ``gpu_free[g0 : g0 + ngpu]``
        (``cl.gpu_free[G_MILLI]`` with ``N_GPU0``/``N_GPUS``, or a node's own
        slice with ``g0 = 0``).
    g0, ngpu
        First GPU of the node in ``gpu_free`` and its GPU count.
    model
        The node's GPU model code (``N_MODEL``; -1: no GPU model).
    c_cpu, c_gpus, c_milli, c_mask
        The class: milli-CPU per pod, GPUs per pod, milli-GPU per GPU (0: a
        CPU-only class), allowed models (bit per model code, ``ALL_MODELS``:
        any; :meth:`gpureplay.workload.typical_pods.TypicalPods.model_mask`).

    Returns
    -------
    int
        The quadrant code.

    Notes
    -----
    ``GetNodePodFrag`` (pkg/utils/frag.go): a class with no milli-GPU is XL or
    XR by CPU alone; otherwise a model the class does not accept is NoAccess
    (``IsNodeAccessibleToPodByType``, pkg/utils/utils.go: a class naming no
    model accepts every node, one naming models never a node without GPU
    model); otherwise the GPUs fit when at least ``c_gpus`` of them (at least
    one) have ``free >= c_milli`` (``CanNodeHostPodOnGpuMemory``), and the CPU
    fits when ``cpu_free >= c_cpu``. Memory plays no part.
    """
    fitting = 0
    for g in range(g0, g0 + ngpu):
        if gpu_free[g] >= c_milli:
            fitting += 1
    return _quadrant(cpu_free, fitting, model, c_cpu, c_gpus, c_milli, c_mask)


@kernel
def pod_frag(
    cpu_free: int,
    gpu_free: Int64Array,
    g0: int,
    ngpu: int,
    model: int,
    c_cpu: int,
    c_gpus: int,
    c_milli: int,
    c_mask: np.uint64,
) -> int:
    """The fragment ``F_n(m)`` of one node for one task class, in milli-GPU.

    Parameters
    ----------
    cpu_free, gpu_free, g0, ngpu, model
        The node, as in :func:`frag_quadrant`.
    c_cpu, c_gpus, c_milli, c_mask
        The class, as in :func:`frag_quadrant`.

    Returns
    -------
    int
        When the class fits (Q3): the free milli of the GPUs too small for it,
        ``Σ_{g: free_g < c_milli} free_g``. Otherwise (Q1, Q2, Q4, XL, XR,
        NoAccess): all the node's free milli, ``Σ_g free_g``.

    Notes
    -----
    ``NodeGpuShareFragAmount`` with ``GetGpuFragMilliByNodeResAndPodRes``
    (pkg/utils/frag.go). A CPU-only class counts every idle GPU as a fragment
    even where it fits (XL): such a task can never use a GPU.
    """
    quadrant = frag_quadrant(cpu_free, gpu_free, g0, ngpu, model, c_cpu, c_gpus, c_milli, c_mask)
    amount = 0
    for g in range(g0, g0 + ngpu):
        if quadrant != Q3_SATISFIED or gpu_free[g] < c_milli:
            amount += gpu_free[g]
    return amount


@kernel
def node_frag(
    cpu_free: int,
    gpu_free: Int64Array,
    g0: int,
    ngpu: int,
    model: int,
    cls_cpu: Int64Array,
    cls_gpus: Int64Array,
    cls_milli: Int64Array,
    cls_mask: UInt64Array,
    cls_pop: Float64Array,
) -> float:
    """A node's expected fragmentation ``F_n = Σ_m p_m · F_n(m)`` over the task classes, in milli-GPU.

    Parameters
    ----------
    cpu_free, gpu_free, g0, ngpu, model
        The node, as in :func:`frag_quadrant`.
    cls_cpu, cls_gpus, cls_milli, cls_mask, cls_pop
        The classes (one entry each): milli-CPU per pod, GPUs per pod,
        milli-GPU per GPU, allowed models, popularity ``p_m``
        (:class:`gpureplay.workload.typical_pods.TypicalPods`).

    Returns
    -------
    float
        ``F_n`` (0 for a node without free GPU milli).

    Notes
    -----
    ``NodeGpuShareFragAmountScore`` (pkg/utils/frag.go): each term
    ``p_m · F_n(m)`` is added to its quadrant's bucket (a fitting class's to
    Q2's), and the buckets are added in code order skipping Q3
    (``FragAmountSumExceptQ3``). Adding in the simulator's order keeps the
    float result identical to its score input, so FGD's integer scores
    truncate the same way. The node as it is: :func:`frag_after` taking
    nothing.
    """
    return frag_after(
        cpu_free, gpu_free, g0, ngpu, model, 0, 0, 0, 0, cls_cpu, cls_gpus, cls_milli, cls_mask, cls_pop
    )


@kernel
def frag_after(
    cpu_free: int,
    gpu_free: Int64Array,
    g0: int,
    ngpu: int,
    model: int,
    take_cpu: int,
    value: int,
    take: int,
    count: int,
    cls_cpu: Int64Array,
    cls_gpus: Int64Array,
    cls_milli: Int64Array,
    cls_mask: UInt64Array,
    cls_pop: Float64Array,
) -> float:
    """``F_n`` of a node after a placement: ``take_cpu`` milli-CPU and ``take`` milli from ``count`` GPUs.

    Parameters
    ----------
    cpu_free, gpu_free, g0, ngpu, model
        The node before the placement, as in :func:`frag_quadrant`.
    take_cpu
        Milli-CPU the placed pod takes.
    value, take, count
        The pod takes ``take`` milli from each of ``count`` GPUs that now have
        ``value`` free (a shared pod: 1 GPU; ``k`` whole GPUs: ``k`` GPUs of
        1000 taking 1000; a CPU-only pod or no placement: 0). Which of the
        equally free GPUs does not matter to ``F_n``.
    cls_cpu, cls_gpus, cls_milli, cls_mask, cls_pop
        The task classes, as in :func:`node_frag`.

    Returns
    -------
    float
        ``F_n`` of the node after the placement, summed as :func:`node_frag`
        sums it (identical to ``node_frag`` of the changed node).

    Notes
    -----
    A class's fragment is ``Σ_g free_g`` less, when it fits (Q3), the free
    milli of the GPUs big enough for it; both follow from the count and sum
    of those GPUs, which the placement changes by its ``count`` GPUs only.
    This is what FGD's score plugin evaluates for every candidate node and
    GPU (``calculateGpuShareFragExtendScore``, ``fgd_score.go``), without
    copying the node.
    """
    total = -count * take
    for g in range(g0, g0 + ngpu):
        total += gpu_free[g]
    after = value - take
    cpu = cpu_free - take_cpu
    q1 = 0.0
    q2 = 0.0
    q4 = 0.0
    xl = 0.0
    xr = 0.0
    na = 0.0
    for c in range(cls_cpu.shape[0]):
        need = cls_milli[c]
        fitting = 0
        fit_sum = 0
        for g in range(g0, g0 + ngpu):
            if gpu_free[g] >= need:
                fitting += 1
                fit_sum += gpu_free[g]
        if value >= need:
            fitting -= count
            fit_sum -= count * value
        if after >= need:
            fitting += count
            fit_sum += count * after
        quadrant = _quadrant(cpu, fitting, model, cls_cpu[c], cls_gpus[c], need, cls_mask[c])
        amount = total - fit_sum if quadrant == Q3_SATISFIED else total
        term = cls_pop[c] * float(amount)
        # A fitting class's fragment (its too-small GPUs) is booked as lacking GPU.
        bucket = Q2_LACK_GPU if quadrant == Q3_SATISFIED else quadrant
        if bucket == Q1_LACK_BOTH:
            q1 += term
        elif bucket == Q2_LACK_GPU:
            q2 += term
        elif bucket == Q4_LACK_CPU:
            q4 += term
        elif bucket == XL_SATISFIED:
            xl += term
        elif bucket == XR_LACK_CPU:
            xr += term
        else:
            na += term
    return q1 + q2 + q4 + xl + xr + na


@entry_kernel
def cluster_frag(
    gpu_free: Int64Array,
    node_gpu0: Int64Array,
    node_gpus: Int64Array,
    node_cpu_free: Int64Array,
    node_model: Int64Array,
    cls_cpu: Int64Array,
    cls_gpus: Int64Array,
    cls_milli: Int64Array,
    cls_mask: UInt64Array,
    cls_pop: Float64Array,
) -> float:
    """The cluster's fragmentation ``F = Σ_n F_n``, in milli-GPU (callable from Python).

    Parameters
    ----------
    gpu_free
        Free milli-GPU of every GPU (``cl.gpu_free[G_MILLI]``).
    node_gpu0, node_gpus
        Each node's first GPU in ``gpu_free`` and GPU count (``N_GPU0``, ``N_GPUS``).
    node_cpu_free
        Each node's free milli-CPU (``cl.node_free[F_CPU]``).
    node_model
        Each node's GPU model code (``N_MODEL``; -1: none).
    cls_cpu, cls_gpus, cls_milli, cls_mask, cls_pop
        The task classes, as in :func:`node_frag`.

    Returns
    -------
    float
        ``Σ_n F_n`` over the nodes in index order. The simulator's fragmentation
        rate (``frag_gpu_milli / idle_gpu_milli``) divides it by
        ``gpu_free.sum()``.

    Notes
    -----
    The ``frag_gpu_milli`` of the simulator's ``ClusterAnalysis``
    (pkg/simulator/analysis.go): it adds the nodes' quadrant buckets in the
    order its goroutines finish (not defined), then sums the buckets except
    Q3; here each node's :func:`node_frag` is added in node index order, so the
    two agree up to last-bit rounding.
    """
    total = 0.0
    for n in range(node_gpu0.shape[0]):
        total += node_frag(
            node_cpu_free[n],
            gpu_free,
            node_gpu0[n],
            node_gpus[n],
            node_model[n],
            cls_cpu,
            cls_gpus,
            cls_milli,
            cls_mask,
            cls_pop,
        )
    return total
