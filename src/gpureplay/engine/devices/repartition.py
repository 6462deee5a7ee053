"""Re-partitioning idle MIG GPUs: a GPU no pod uses is given the mig-parted config pending pods need.

Under ``scheduler.mig_reconfigure: idle`` (with ``mig_strategy: mixed``)
each MIG GPU holds the instances of its own config, a layout word
(``G_LAYOUT``: byte ``s`` the instance beginning at slice ``s``). After each
scheduling cycle a controller compares, per GPU model, the instances the
pending pods ask for with the free ones, and gives idle GPUs the candidate
config that serves the most of the shortfall: nos' GPU partitioner
(``nebuly-ai/nos``, ``pkg/gpu/mig/gpu.go``, ``UpdateGeometryFor``: the
allowed geometry providing the most required profiles). As mig-parted does
(``pkg/mig/config/config.go`` clears every instance of a GPU, and a GPU
instance with a live CUDA context cannot be destroyed), only a GPU none of
whose slices is held changes, and as a whole; it then serves no pod for
``mig_reconfigure_s`` (mig-manager pauses the device plugin while it applies
the config: about 30-90 s, docs/systems.md, "NVIDIA MIG and mig-parted"). The rule in full:
docs/engine/devices.md, "Re-partitioning idle GPUs". The plain-Python twin
is the ``[MIG re-partitioning]`` code of ``tests/reference/simulator.py``.
"""

from __future__ import annotations

import math

from gpureplay.engine.devices.mig import bit_count, cut_shape, layout_starts, mig_free
from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.state.bundles import Classes, Cluster, Params, Pending, Run, Scratch
from gpureplay.engine.state.layout import (
    G_LAYOUT,
    G_MIG,
    G_NEXT,
    K_MIG_RECONFIG,
    K_NACTIVE,
    K_VERSION,
    N_GPU0,
    N_GPUS,
    N_MIG_MASK,
    N_MODEL,
    PF_MIG_RECONFIG,
    X_MIG_READY,
)

__all__ = ["finish_repartitions", "layout_count", "repartition_idle"]

#: Rows of ``Scratch.mig_count``: instances asked (R), instances free or coming (S), S without one GPU.
_ASKED = 0
_SUPPLY = 1
_OTHERS = 2


@inline_kernel
def layout_count(word: int, shape: int) -> int:
    """Instances of ``shape``'s profile in a layout word, at starts the shape allows."""
    return bit_count(shape & 0xFF & layout_starts(word, shape))


@kernel
def _served(cs: Classes, sc: Scratch, model: int, width: int, word: int) -> int:
    """Instances of layout ``word`` that pending pods need beyond the supply of the other GPUs."""
    served = 0
    for w in range(width):
        short = sc.mig_count[_ASKED, w] - sc.mig_count[_OTHERS, w]
        if short > 0:
            served += min(layout_count(word, cs.mig_wanted[model, w]), short)
    return served


@kernel
def _asked(cs: Classes, pend: Pending, run: Run, sc: Scratch, model: int, width: int) -> int:
    """Fill row R with the instances of each wanted shape of ``model`` pending pods ask; returns their sum."""
    total = 0
    for w in range(width):
        sc.mig_count[_ASKED, w] = 0
    for a in range(run.counters[K_NACTIVE]):
        c = pend.active[a]
        shape = cs.mig[c, model]
        if shape < 0:
            continue
        for w in range(width):
            if cs.mig_wanted[model, w] == shape:
                pods = sc.unplaced[c]
                sc.mig_count[_ASKED, w] += pods
                total += pods
                break
    return total


@kernel
def _short(sc: Scratch, width: int) -> bool:
    """Whether some wanted shape is asked more than it is supplied."""
    short = False
    for w in range(width):
        short = short or sc.mig_count[_ASKED, w] > sc.mig_count[_SUPPLY, w]
    return short


@kernel
def repartition_idle(
    params: Params, cs: Classes, cl: Cluster, pend: Pending, run: Run, sc: Scratch, t: float
) -> int:
    """Start re-partitioning the idle MIG GPUs whose new config serves more pending pods; returns how many.

    Parameters
    ----------
    params, cs, cl
        Settings (``PF_MIG_RECONFIG``: the downtime), the classes (their shapes
        per model, ``mig_wanted`` and the candidate layouts ``mig_layouts``)
        and the cluster, updated in place.
    pend, run, sc
        The pending classes, the loop's counters and clock, and the work
        space (``mig_count``).
    t
        The time of the scheduling cycle just run.

    Notes
    -----
    Per model: R = instances of each wanted shape asked by the pods of
    pending jobs; S = free instances on GPUs outside downtime plus those of
    the configs being applied. While R > S for some shape, each GPU in GPU
    order with no slice held and not in downtime is given the candidate of
    most served instances (ties: the earlier), iff it serves strictly more
    than its current config. Served counts only the shortfall left by the
    other GPUs, so one GPU is not re-partitioned twice for the same pods.
    """
    started = 0
    width = cs.mig_wanted.shape[1]
    downtime = params.flt[PF_MIG_RECONFIG]
    for model in range(cs.mig_layouts.shape[0]):
        if cs.mig_layouts[model, 0] < 0:
            continue
        if _asked(cs, pend, run, sc, model, width) == 0:
            continue
        for w in range(width):
            sc.mig_count[_SUPPLY, w] = 0
        for n in range(cl.node_int.shape[1]):
            if cl.node_int[N_MIG_MASK, n] == 0 or cl.node_int[N_MODEL, n] != model:
                continue
            g0 = cl.node_int[N_GPU0, n]
            for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
                coming = cl.gpu_free[G_NEXT, g]
                word = coming if coming >= 0 else cl.gpu_free[G_LAYOUT, g]
                for w in range(width):
                    shape = cs.mig_wanted[model, w]
                    if shape >= 0:
                        free = mig_free(cl.gpu_free[G_MIG, g], cut_shape(shape, word))
                        sc.mig_count[_SUPPLY, w] += free
        if not _short(sc, width):
            continue
        for n in range(cl.node_int.shape[1]):
            if cl.node_int[N_MIG_MASK, n] == 0 or cl.node_int[N_MODEL, n] != model:
                continue
            g0 = cl.node_int[N_GPU0, n]
            for g in range(g0, g0 + cl.node_int[N_GPUS, n]):
                if cl.gpu_free[G_MIG, g] != 0 or cl.gpu_free[G_NEXT, g] >= 0:
                    continue
                current = cl.gpu_free[G_LAYOUT, g]
                for w in range(width):
                    shape = cs.mig_wanted[model, w]
                    own = layout_count(current, shape) if shape >= 0 else 0
                    sc.mig_count[_OTHERS, w] = sc.mig_count[_SUPPLY, w] - own
                best = -1
                best_served = _served(cs, sc, model, width, current)
                for i in range(cs.mig_layouts.shape[1]):
                    word = cs.mig_layouts[model, i]
                    if word < 0:
                        break
                    served = _served(cs, sc, model, width, word)
                    if served > best_served:
                        best = word
                        best_served = served
                if best < 0:
                    continue
                for w in range(width):
                    shape = cs.mig_wanted[model, w]
                    own = layout_count(best, shape) if shape >= 0 else 0
                    sc.mig_count[_SUPPLY, w] = sc.mig_count[_OTHERS, w] + own
                cl.gpu_free[G_LAYOUT, g] = 0
                cl.gpu_free[G_NEXT, g] = best
                cl.gpu_ready[g] = t + downtime
                run.clock[X_MIG_READY] = min(run.clock[X_MIG_READY], t + downtime)
                run.counters[K_MIG_RECONFIG] += 1
                started += 1
                if not _short(sc, width):
                    break
            if not _short(sc, width):
                break
    return started


@kernel
def finish_repartitions(cl: Cluster, run: Run, t: float) -> None:
    """Give every GPU whose downtime ends at ``t`` its new config's instances (GPU order).

    Notes
    -----
    New instances are new room: the release version moves on, so classes
    that failed to fit are tried again (as after a completion).
    """
    nearest = math.inf
    for g in range(cl.gpu_ready.shape[0]):
        ready = cl.gpu_ready[g]
        if ready == t:
            cl.gpu_free[G_LAYOUT, g] = cl.gpu_free[G_NEXT, g]
            cl.gpu_free[G_NEXT, g] = -1
            cl.gpu_ready[g] = math.inf
        elif ready < nearest:
            nearest = ready
    run.clock[X_MIG_READY] = nearest
    run.counters[K_VERSION] += 1
