"""Dynamic MIG: instances created per pod on a GPU's memory-slice mask, and destroyed when it leaves.

Under ``scheduler.mig_strategy: dynamic`` (HAMi's dynamic MIG, device plugin
mode ``mig``; docs/systems.md, "NVIDIA MIG and mig-parted") a node's GPUs have MIG on and
no instance until a pod needs one. Each GPU keeps the memory slices its
instances hold as an 8-bit mask (``G_MIG``); an instance of a profile is
placed at one of the profile's allowed start slots whose slices are all free
(the MIG user guide's placement rule: a set of instances is valid iff their
slice ranges do not overlap). Which free start is taken matters: a 3g
instance at start 0 leaves no room for a 4g one (start 0 only), at start 4 it
does. Two rules: HAMi's (``mig_topology.go``: profiles named ``1g.*`` and
``3g.*`` take the highest free start, the others the lowest) and lowest start
first (the bit ``MIG_HIGH_FIRST`` of the shape).

A *shape* packs what the kernels need of a profile into one integer (see
:mod:`gpureplay.engine.state.layout`, ``classes.mig``): allowed starts, memory
slices, compute slices, start order. A pod on an instance is booked 125
milli-GPU per memory slice (exact: 8 slices make 1000) and the slice share of
the GPU's memory, so a GPU's free milli is ``1000 - 125 x slices held`` and the
aggregates of :func:`gpureplay.engine.fit.resources.set_gpu` stay exact. The pod's
GPU slot records the GPU, the start and the compute slices
(:func:`instance_slot`).

For identical pods the count of instances a GPU can still take (the free
allowed placements of the shape: a profile's placements never overlap one
another) drops by exactly one per pod placed, whichever start it takes, so a
gang of one class is still decided without trial placements. The plain-Python
twin is ``tests/reference/simulator.py`` (``mig_free`` / ``mig_pick``).

``mig_placement: fgd`` (bit ``MIG_FGD`` of the shape) places by FGD's
measure over slices instead (:func:`fgd_instance`), and the ``fgd`` node
scorer scores nodes by it (:func:`mig_fgd_score`).
"""

from __future__ import annotations

from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.state.bundles import Classes, Cluster
from gpureplay.engine.state.layout import (
    C_K,
    C_KIND,
    G_LAYOUT,
    G_MIG,
    G_MILLI,
    G_SLOTS,
    KIND_SHARE,
    KIND_WHOLE,
    MIG_COMPUTE_SHIFT,
    MIG_FGD,
    MIG_HIGH_FIRST,
    MIG_MEMORY_SLICES,
    MIG_SIZE_SHIFT,
    MIG_SLICE_MILLI,
    N_GPU0,
    N_GPUS,
    N_MIG_MASK,
    N_MODEL,
)

__all__ = [
    "cut_shape",
    "fgd_instance",
    "gpu_fragmentation",
    "gpu_shape",
    "instance_bits",
    "instance_slot",
    "layout_starts",
    "mig_compute",
    "mig_fgd_score",
    "mig_free",
    "mig_pick",
    "mig_size",
    "pick_instance",
    "slot_compute",
    "slot_gpu",
    "slot_start",
    "stranded_slices",
    "usable_bits",
]


@inline_kernel
def mig_size(shape: int) -> int:
    """Memory slices of an instance of ``shape``."""
    return (shape >> MIG_SIZE_SHIFT) & 15


@inline_kernel
def mig_compute(shape: int) -> int:
    """Compute slices of an instance of ``shape``."""
    return (shape >> MIG_COMPUTE_SHIFT) & 15


@inline_kernel
def instance_bits(shape: int, start: int) -> int:
    """The memory-slice mask of an instance of ``shape`` at ``start``: bits ``[start, start + size)``."""
    return ((1 << mig_size(shape)) - 1) << start


@inline_kernel
def mig_free(held: int, shape: int) -> int:
    """How many instances of ``shape`` still fit a GPU whose held slices are ``held``.

    Notes
    -----
    The allowed placements of one profile are disjoint (MIG user guide,
    ``nvidia-smi mig -lgipp``: starts ``{0, 4}`` of size 4, ``{0, 2, 4}`` of
    size 2, ...), so each free placement holds one more instance.
    """
    count = 0
    for s in range(MIG_MEMORY_SLICES):
        if (shape >> s) & 1 and (held & instance_bits(shape, s)) == 0:
            count += 1
    return count


@inline_kernel
def mig_pick(held: int, shape: int) -> int:
    """The start the instance gets on a GPU whose held slices are ``held``; -1 when none is free.

    Notes
    -----
    With ``MIG_HIGH_FIRST`` the highest free allowed start (HAMi,
    ``orderedMigPlacements``, for ``1g.*`` and ``3g.*`` profiles), else the
    lowest; the first placement that overlaps no held slice wins
    (``selectMigPlacement``).
    """
    high = (shape & MIG_HIGH_FIRST) != 0
    for i in range(MIG_MEMORY_SLICES):
        s = MIG_MEMORY_SLICES - 1 - i if high else i
        if (shape >> s) & 1 and (held & instance_bits(shape, s)) == 0:
            return s
    return -1


@inline_kernel
def instance_slot(g: int, start: int, compute: int) -> int:
    """The GPU-slot value of a pod on an instance: its GPU, start slot and compute slices."""
    return (g * MIG_MEMORY_SLICES + start) * 16 + compute


@inline_kernel
def slot_gpu(v: int) -> int:
    """The GPU of an instance slot (:func:`instance_slot`)."""
    return v // (MIG_MEMORY_SLICES * 16)


@inline_kernel
def slot_start(v: int) -> int:
    """The start slot of an instance slot."""
    return (v // 16) % MIG_MEMORY_SLICES


@inline_kernel
def slot_compute(v: int) -> int:
    """The compute slices of an instance slot."""
    return v % 16


@inline_kernel
def layout_starts(word: int, shape: int) -> int:
    """The starts of a GPU's layout word (``G_LAYOUT``) where an instance of ``shape``'s profile begins.

    Notes
    -----
    Byte ``s`` of the word is the instance beginning at slice ``s``:
    memory slices | compute slices << 4 (0: none), which tells a profile from
    one of the same memory and fewer compute slices (3g.20gb from 4g.20gb).
    """
    code = mig_size(shape) | mig_compute(shape) << 4
    starts = 0
    for s in range(MIG_MEMORY_SLICES):
        if (word >> (8 * s)) & 0xFF == code:
            starts |= 1 << s
    return starts


@inline_kernel
def cut_shape(shape: int, word: int) -> int:
    """``shape`` with its allowed starts cut to the instances of layout ``word`` (-1: unchanged)."""
    if word < 0:
        return shape
    return (shape & ~0xFF) | (shape & layout_starts(word, shape))


@inline_kernel
def gpu_shape(cl: Cluster, g: int, shape: int) -> int:
    """``shape`` with its allowed starts cut to the instances GPU ``g``'s own layout holds.

    Notes
    -----
    Under ``mig_reconfigure: idle`` each GPU holds the instances of its own
    mig-parted config (:mod:`gpureplay.engine.devices.repartition`); elsewhere the
    word is -1 and the shape's starts apply unchanged.
    """
    return cut_shape(shape, cl.gpu_free[G_LAYOUT, g])


@inline_kernel
def usable_bits(held: int, shape: int) -> int:
    """The free slices an instance of ``shape`` could take on a GPU whose held slices are ``held``."""
    bits = 0
    for s in range(MIG_MEMORY_SLICES):
        if (shape >> s) & 1:
            span = instance_bits(shape, s)
            if (held & span) == 0:
                bits |= span
    return bits


@kernel
def stranded_slices(cl: Cluster, cs: Classes) -> int:
    """Free memory slices of dynamic-MIG GPUs that no instance the workload asks for could take now.

    Notes
    -----
    The MIG fragmentation of the dynamic strategy: a free slice is stranded
    when no allowed placement of any shape the workload's pods get on the
    GPU's model (``classes.mig_wanted``: the fractional pods' instances, and
    the whole GPU a whole-GPU pod needs) covers it without overlapping a held
    slice. E.g. with only 3g and 4g pods, a GPU holding a 1g instance at 6
    strands slices 4, 5 and 7. A GPU taken whole holds nothing to strand.
    """
    total = 0
    full = (1 << MIG_MEMORY_SLICES) - 1
    for n in range(cl.node_int.shape[1]):
        if cl.node_int[N_MIG_MASK, n] == 0:
            continue
        model = cl.node_int[N_MODEL, n]
        g0 = cl.node_int[N_GPU0, n]
        for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
            if cl.gpu_free[G_MILLI, g] == 0:
                continue
            held = cl.gpu_free[G_MIG, g]
            usable = 0
            for w in range(cs.mig_wanted.shape[1]):
                shape = cs.mig_wanted[model, w]
                if shape < 0:
                    break
                usable |= usable_bits(held, gpu_shape(cl, g, shape))
            free = full & ~held & ~usable
            while free:
                total += free & 1
                free >>= 1
    return total


@inline_kernel
def bit_count(bits: int) -> int:
    """Number of set bits of a slice mask (8 bits)."""
    count = 0
    while bits:
        count += bits & 1
        bits >>= 1
    return count


@kernel
def gpu_fragmentation(held: int, cs: Classes, model: int) -> int:
    """FGD's fragmentation of a dynamic GPU of product ``model`` holding slices ``held``, counted in slices.

    Notes
    -----
    ``F(h) = sum_i w_i x |free slices no free placement of shape i covers|``
    over the shapes the workload asks of the product (``cs.mig_wanted``),
    ``w_i`` the pods asking each (``cs.mig_weight``): Weng et al.'s
    ``F_n = sum_m p_m F_n(m)`` (FGD, ATC'23 §3) with popularity as a count
    and slices instead of milli-GPU, so every value is an exact integer.
    """
    free = ((1 << MIG_MEMORY_SLICES) - 1) & ~held
    total = 0
    for w in range(cs.mig_wanted.shape[1]):
        shape = cs.mig_wanted[model, w]
        if shape < 0:
            break
        total += cs.mig_weight[model, w] * bit_count(free & ~usable_bits(held, shape))
    return total


@kernel
def fgd_instance(cl: Cluster, cs: Classes, n: int, shape: int) -> tuple[int, int, int]:
    """The free placement of ``shape`` on node ``n`` that grows its GPU's fragmentation least.

    Returns
    -------
    growth, gpu, start
        ``F(h | slices) - F(h)`` (:func:`gpu_fragmentation`), the GPU and the
        start; ties go to the lowest GPU, then the lowest start. ``gpu`` is
        -1 when no placement is free.
    """
    model = cl.node_int[N_MODEL, n]
    book = mig_size(shape) * MIG_SLICE_MILLI
    best = 0
    best_gpu = -1
    best_start = -1
    g0 = cl.node_int[N_GPU0, n]
    for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
        if cl.gpu_free[G_MILLI, g] < book or cl.gpu_free[G_SLOTS, g] < 1:
            continue
        held = cl.gpu_free[G_MIG, g]
        before = -1
        for s in range(MIG_MEMORY_SLICES):
            bits = instance_bits(shape, s)
            if (shape >> s) & 1 and (held & bits) == 0:
                if before < 0:
                    before = gpu_fragmentation(held, cs, model)
                growth = gpu_fragmentation(held | bits, cs, model) - before
                if best_gpu < 0 or growth < best:
                    best = growth
                    best_gpu = g
                    best_start = s
    return best, best_gpu, best_start


@kernel
def pick_instance(cl: Cluster, cs: Classes, n: int, shape: int) -> tuple[int, int]:
    """The GPU and start an instance of ``shape`` gets on node ``n`` (which has a free placement).

    Notes
    -----
    With ``MIG_FGD`` in the shape: :func:`fgd_instance`'s. Otherwise the
    lowest-index GPU with a free placement (and the milli and device slot it
    needs; first fit: the GPU-level rule of HAMi's binpack for a node's MIG
    devices is not modelled), at :func:`mig_pick`'s start.
    """
    if shape & MIG_FGD:
        return fgd_instance(cl, cs, n, shape)[1:]
    book = mig_size(shape) * MIG_SLICE_MILLI
    g0 = cl.node_int[N_GPU0, n]
    for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
        if cl.gpu_free[G_MILLI, g] >= book and cl.gpu_free[G_SLOTS, g] >= 1:
            start = mig_pick(cl.gpu_free[G_MIG, g], gpu_shape(cl, g, shape))
            if start >= 0:
                return g, start
    return -1, -1


@kernel
def mig_fgd_score(cl: Cluster, cs: Classes, c: int, n: int) -> int:
    """The ``fgd`` node score of a pod of class ``c`` on node ``n`` (which fits it) under dynamic MIG.

    Notes
    -----
    Minus the growth of the slice fragmentation (:func:`gpu_fragmentation`)
    the pod causes: its instance's on a dynamic node, placed as
    :func:`pick_instance` places it (the least growth under ``mig_placement:
    fgd``), ``-k F(0)`` for ``k`` wholly free GPUs taken whole there (they
    leave the measure), 0 on a whole-GPU node (no slices). FGD's node score
    (Weng et al., ATC'23 §4) over slices.
    """
    if cl.node_int[N_MIG_MASK, n] == 0:
        return 0
    model = cl.node_int[N_MODEL, n]
    kind = cs.ints[C_KIND, c]
    if kind == KIND_WHOLE:
        return -int(cs.ints[C_K, c]) * gpu_fragmentation(0, cs, model)
    shape = cs.mig[c, model] if kind == KIND_SHARE else -1
    if shape < 0:
        return 0
    g, start = pick_instance(cl, cs, n, shape)
    held = cl.gpu_free[G_MIG, g]
    after = gpu_fragmentation(held | instance_bits(shape, start), cs, model)
    return gpu_fragmentation(held, cs, model) - after
