"""Packing mode: pods arrive one by one, are placed at once or fail, and never leave (the FGD experiment).

Weng et al. (USENIX ATC'23, §5) evaluate placement policies by *packing*:
the public simulator (hkust-adsl/kubernetes-scheduler-simulator) creates the
workload's pods in a seeded order on an empty cluster; each pod is scheduled
once, by the same filter-and-score step as a real scheduler; a pod that fits
nowhere fails for good (there is no queue); nothing ever departs. The
policies are compared by how much of the cluster's GPU they allocate, and how
fragmented it is, as the arrived demand grows past the cluster's capacity.

:func:`pack` runs that on the engine's own state and placement hook
(:func:`gpureplay.engine.fit.scoring.choose_node`,
:func:`gpureplay.engine.jobs.place_pod`), so every node scorer of a timed
replay is a packing policy too. Its plain-Python twin is
``tests/reference/packing.py``.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.fit.fragmentation import node_frag
from gpureplay.engine.fit.scoring import choose_node
from gpureplay.engine.jit.config import entry_kernel, kernel
from gpureplay.engine.jobs import attempt_of, place_pod
from gpureplay.engine.state.bundles import (
    Classes,
    Cluster,
    FitIndex,
    Jobs,
    JobState,
    Params,
    Run,
    Scratch,
    Tasks,
)
from gpureplay.engine.state.layout import (
    F_CPU,
    G_MILLI,
    J_CLASS,
    J_ID,
    J_MILLI,
    J_PODS,
    JF_SUBMIT,
    N_GPU0,
    N_GPUS,
    N_MODEL,
    R_NONE,
    TK_CPU,
    TK_GPUS,
    TK_MILLI,
    TOT_ALLOC,
    Float64Array,
    Int64Array,
)

# Rows of pack's per-pod output (``events``), in arrival order.
PK_ARRIVED = 0  # arrived GPU milli so far (placed and failed pods)
PK_ALLOCATED = 1  # allocated GPU milli after the pod
PK_FAILED = 2  # pods failed so far
PK_FAILED_MILLI = 3  # GPU milli of the pods failed so far
PACK_ROWS = 4


@entry_kernel
def pack(
    params: Params,
    jobs: Jobs,
    cs: Classes,
    cl: Cluster,
    ix: FitIndex,
    js: JobState,
    sc: Scratch,
    run: Run,
    tasks: Tasks,
    node_frag_now: Float64Array,
    hopeless: Int64Array,
    events: Int64Array,
    frag: Float64Array,
) -> None:
    """Place every pod once, in arrival order, recording the cluster after each one.

    Parameters
    ----------
    params, jobs, cs, cl, ix, js, sc, run
        The replay's bundles, at time 0 (:func:`gpureplay.engine.state.bundles.initial_state`).
        Every job has one pod (checked by the caller).
    tasks
        The task classes the fragmentation is measured with, also
        ``cs.tasks`` (the scorers'); its ``memo`` may be empty or ``[classes,
        nodes, 2]`` of NaN: then the ``fgd`` scorer answers from it while a
        node is unchanged.
    node_frag_now
        One entry per node: work space for each node's FGD fragmentation.
    hopeless
        One entry per class: work space (1: a pod of the class fitted nowhere).
    events
        ``PACK_ROWS x pods``: column ``i`` is the cluster after the ``i``-th
        pod to arrive (``PK_*`` rows).
    frag
        One entry per pod: the cluster's FGD fragmentation (milli-GPU, the
        nodes' :func:`gpureplay.engine.fit.fragmentation.node_frag` over
        ``tasks`` added in node order, as ``cluster_frag``) after it.

    Notes
    -----
    A pod's demand arrives whether it is placed or not (the simulator's
    arrived workload counts failed pods). A pod that cannot run even on the
    empty cluster (``jobs.reject``) fails like any other. Each pod is placed
    at its ``submit_time``; no time passes otherwise. Only the node a pod
    lands on changes, so only its fragmentation is recomputed; and resources
    are never released, so once a pod fits nowhere every later pod of its
    class fails without a search.
    """
    for n in range(cl.node_int.shape[1]):
        node_frag_now[n] = _node_frag_of(cl, tasks, n)
    arrived = 0
    failed = 0
    failed_milli = 0
    # Nothing is ever released, so a class that fitted nowhere never fits again.
    hopeless[:] = 0
    for i in range(jobs.arrival.shape[0]):
        j = jobs.arrival[i]
        demand = jobs.ints[J_MILLI, j] * jobs.ints[J_PODS, j]
        c = jobs.ints[J_CLASS, j]
        n = -1
        if jobs.reject[j] == R_NONE and hopeless[c] == 0:
            n = choose_node(params, cl, ix, cs, c, jobs.ints[J_ID, j], 0, attempt_of(js, j))
            hopeless[c] = 1 if n < 0 else 0
        if n >= 0:
            place_pod(params, jobs, cs, cl, ix, js, sc, run, j, n, jobs.flts[JF_SUBMIT, j])
            # Node n changed: what the fgd scorer knew of it no longer holds.
            for k in range(tasks.memo.shape[0]):
                tasks.memo[k, n, 0] = np.nan
            node_frag_now[n] = _node_frag_of(cl, tasks, n)
        else:
            failed += 1
            failed_milli += demand
        arrived += demand
        events[PK_ARRIVED, i] = arrived
        events[PK_ALLOCATED, i] = cl.totals[TOT_ALLOC]
        events[PK_FAILED, i] = failed
        events[PK_FAILED_MILLI, i] = failed_milli
        total = 0.0
        for m in range(node_frag_now.shape[0]):
            total += node_frag_now[m]
        frag[i] = total


@kernel
def _node_frag_of(cl: Cluster, tasks: Tasks, n: int) -> float:
    """Node ``n``'s FGD fragmentation now, over the task classes."""
    return node_frag(
        cl.node_free[F_CPU, n],
        cl.gpu_free[G_MILLI],
        cl.node_int[N_GPU0, n],
        cl.node_int[N_GPUS, n],
        cl.node_int[N_MODEL, n],
        tasks.ints[TK_CPU],
        tasks.ints[TK_GPUS],
        tasks.ints[TK_MILLI],
        tasks.mask,
        tasks.pop,
    )


__all__ = [
    "PACK_ROWS",
    "PK_ALLOCATED",
    "PK_ARRIVED",
    "PK_FAILED",
    "PK_FAILED_MILLI",
    "pack",
]
