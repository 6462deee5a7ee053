"""Throughput of jobs on shared GPUs: time-slicing and MPS slow-downs and MIG instances' SM share, as rates.

NVIDIA k8s-device-plugin advertises each GPU as ``replicas`` devices
(:func:`gpureplay.replay.compile.replicate_devices`); the scheduler only
counts them. What sharing costs shows up at run time: under time-slicing CUDA
gives the active contexts on a GPU turns, so co-located jobs slow each other;
under MPS each client is capped at ``100 // replicas`` percent of the SMs.
A job's rate (:func:`set_rate`) follows from the active
jobs on its GPUs and changes whenever they do (docs/engine/devices.md, "GPU
sharing by replicas"; docs/systems.md, "NVIDIA k8s-device-plugin").

A *process* is one pod of an active (running) job on one physical GPU, with
weight ``w`` = its replicas there and demand ``D = w * d`` (``d``: the share
of a GPU one replica of it would use alone, ``Jobs.demand``). MIG instances
(device plugin ``single`` strategy, :func:`mig_rate`) reuse the same devices
and rates without the interference. A replay that does not share GPUs
returns from :func:`sharers_changed` at once.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.devices.mig import slot_compute
from gpureplay.engine.jit.config import inline_kernel, kernel
from gpureplay.engine.state.bundles import Cluster, Jobs, JobState, Params, Run, Timers
from gpureplay.engine.state.layout import (
    D_GEN,
    D_PLACED,
    D_RATE_MARK,
    D_STATUS,
    J_K,
    J_KIND,
    J_MILLI,
    J_POD0,
    J_SLOT0,
    K_SHARE_CHANGES,
    KIND_SHARE,
    N_GPU0,
    N_MIG_COMPUTE,
    N_MIG_MASK,
    N_MIG_SLICES,
    N_REPLICAS,
    P_SHARING,
    PF_MPS_CAP,
    PF_SWITCH,
    S_RUNNING,
    SHARING_MIG,
    SHARING_MIG_DYNAMIC,
    SHARING_MIG_MIXED,
    SHARING_MPS,
    SHARING_NONE,
    T_DONE,
    T_FINISH,
    T_LEFT,
    T_PROGRESS0,
    T_RATE,
    T_RATE_T,
    T_SHARE_DELAY,
    Float64Array,
)
from gpureplay.engine.state.timers import push_completion


@kernel
def settle(js: JobState, j: int, t: float) -> None:
    """Book running job ``j``'s progress and sharing delay up to ``t`` (its rate then applies from ``t`` on).

    Notes
    -----
    The delay is what the rate below 1 cost: ``(1 - rate) * dt`` over the
    progress time (none during the restart overhead).
    """
    since = max(js.time[T_RATE_T, j], js.time[T_PROGRESS0, j])
    elapsed = max(0.0, t - since)
    rate = js.time[T_RATE, j]
    js.time[T_DONE, j] += elapsed * rate
    js.time[T_SHARE_DELAY, j] += elapsed * (1.0 - rate)
    js.time[T_RATE_T, j] = max(t, js.time[T_PROGRESS0, j])


@kernel
def set_rate(jobs: Jobs, js: JobState, tm: Timers, run: Run, j: int, rate: float, t: float) -> None:
    """Running job ``j`` makes progress at ``rate`` (> 0) from ``t`` on: keep its work, move its finish.

    Notes
    -----
    The completion entry of the old rate is left in the heap, stale (the
    job's generation moves on), and a new one is pushed: lazy deletion
    (:mod:`gpureplay.engine.state.timers`). A rate set during the restart overhead
    applies once the overhead is over.
    """
    settle(js, j, t)
    js.time[T_RATE, j] = rate
    finish = js.time[T_RATE_T, j] + (js.time[T_LEFT, j] - js.time[T_DONE, j]) / rate
    js.time[T_FINISH, j] = finish
    js.dyn[D_GEN, j] += 1
    push_completion(jobs, js, tm, run, j, finish)


@kernel
def weight_on(jobs: Jobs, js: JobState, cl: Cluster, pod: int, j: int, n: int, phys: int) -> int:
    """Replicas pod ``pod`` (of job ``j``, on node ``n``) holds on physical GPU ``phys`` of its node."""
    k = jobs.ints[J_K, j]
    slot0 = jobs.ints[J_SLOT0, j] + (pod - jobs.ints[J_POD0, j]) * k
    reps = cl.node_int[N_REPLICAS, n]
    g0 = cl.node_int[N_GPU0, n]
    w = 0
    for i in range(k):
        if (js.slot_gpu[slot0 + i] - g0) // reps == phys:
            w += 1
    return w


@inline_kernel
def new_gpu(js: JobState, slot0: int, i: int, g0: int, reps: int) -> int:
    """The physical GPU (index on its node) of a pod's slot ``i``; -1 when an earlier slot is on it too."""
    phys = (js.slot_gpu[slot0 + i] - g0) // reps
    for e in range(i):
        if (js.slot_gpu[slot0 + e] - g0) // reps == phys:
            return -1
    return int(phys)


@kernel
def processes_below(
    demand: Float64Array,
    jobs: Jobs,
    js: JobState,
    cl: Cluster,
    n: int,
    phys: int,
    skip: int,
    low: float,
    high: float,
) -> tuple[float, int, int, bool]:
    """Over the active processes on physical GPU ``phys`` of node ``n`` (job ``skip``'s left out):
    the sum and the count of the demands ``<= low``, the count above ``low``, and whether one lies in
    ``(low, high]``.
    """
    below = 0.0
    met = 0
    above = 0
    between = False
    pod = js.node_pods[n]
    while pod >= 0:
        q = jobs.pod_job[pod]
        if q != skip and js.dyn[D_STATUS, q] == S_RUNNING and jobs.ints[J_MILLI, q] > 0:
            w = weight_on(jobs, js, cl, pod, q, n, phys)
            if w > 0:
                need = w * demand[q]
                if need <= low:
                    below += need
                    met += 1
                else:
                    above += 1
                    if need <= high:
                        between = True
        pod = js.pod_next[pod]
    return below, met, above, between


@kernel
def time_slice_share(
    params: Params,
    demand: Float64Array,
    jobs: Jobs,
    js: JobState,
    cl: Cluster,
    n: int,
    phys: int,
    need: float,
    skip: int,
) -> float:
    """The share of physical GPU ``phys`` (node ``n``) a process that needs ``need`` of it gets.

    Notes
    -----
    CUDA time-slicing gives every context with work a turn: capacity 1 (less
    ``switch_overhead`` while two or more share the GPU) divided max-min
    fairly among the active processes (water-filling: a process never gets
    more than its demand, the rest is split among the others). Processes of
    job ``skip`` are left out (it is stopping).
    """
    total, count, _, _ = processes_below(demand, jobs, js, cl, n, phys, skip, np.inf, np.inf)
    capacity = 1.0 if count <= 1 else 1.0 - params.flt[PF_SWITCH]
    if total <= capacity:
        return need  # every demand met
    fair = capacity / count
    # Usually every demand is at least the equal share (always so with whole-GPU demands): 1/N each.
    _, _, _, small = processes_below(demand, jobs, js, cl, n, phys, skip, -1.0, fair)
    if not small:
        return min(need, fair)
    # The water level L with sum(min(D_i, L)) = capacity: every demand at or below a threshold is
    # met; raise the threshold to the level left for the others until no demand lies in between.
    threshold = fair
    while True:
        satisfied, _, others, _ = processes_below(demand, jobs, js, cl, n, phys, skip, threshold, threshold)
        level = (capacity - satisfied) / others
        _, _, _, between = processes_below(demand, jobs, js, cl, n, phys, skip, threshold, level)
        if not between:
            return min(need, level)
        threshold = level


@kernel
def job_rate(
    params: Params, demand: Float64Array, jobs: Jobs, js: JobState, cl: Cluster, j: int, skip: int
) -> float:
    """Rate of running job ``j`` on its shared GPUs now: the least over its processes.

    Notes
    -----
    A synchronous data-parallel job is paced by its slowest worker. On MIG
    instances see :func:`mig_rate`. On a GPU
    where its pod has ``w`` replicas and ``D = w * d``, the rate is
    ``min(1, share / D)`` with the time-slicing share of
    :func:`time_slice_share`, or the MPS cap ``floor(100 / R) / 100`` (the
    control daemon's default active thread percentage; clients do not slow
    each other). Throughput is taken as proportional to the share.
    """
    if jobs.ints[J_MILLI, j] == 0:
        return 1.0
    mode = params.codes[P_SHARING]
    mps = mode == SHARING_MPS
    d = demand[j]
    k = jobs.ints[J_K, j]
    rate = 1.0
    pod0 = jobs.ints[J_POD0, j]
    if mode in (SHARING_MIG, SHARING_MIG_DYNAMIC, SHARING_MIG_MIXED):
        return mig_rate(jobs, js, cl, j, d)
    for p in range(js.dyn[D_PLACED, j]):
        n = js.pod_node[pod0 + p]
        reps = cl.node_int[N_REPLICAS, n]
        g0 = cl.node_int[N_GPU0, n]
        slot0 = jobs.ints[J_SLOT0, j] + p * k
        for i in range(k):
            phys = new_gpu(js, slot0, i, g0, reps)
            if phys < 0:
                continue
            need = weight_on(jobs, js, cl, pod0 + p, j, n, phys) * d
            if mps:
                share = params.flt[PF_MPS_CAP]
            else:
                share = time_slice_share(params, demand, jobs, js, cl, n, phys, need, skip)
            rate = min(rate, min(1.0, share / need))
    return rate


@kernel
def mig_rate(jobs: Jobs, js: JobState, cl: Cluster, j: int, d: float) -> float:
    """Rate of running job ``j`` whose placed pods hold MIG instances or whole GPUs.

    Notes
    -----
    MIG isolates its instances (own SMs, memory and bandwidth: MIG user
    guide), so a job's rate depends on its own instances only: an instance of
    ``c`` of the GPU's ``S`` compute slices gives ``c / S`` of the GPU, and a
    pod that would use ``d`` of a GPU alone runs at ``min(1, (c / S) / d)``
    (throughput taken as proportional to SMs); on a whole GPU at 1. The job
    runs at its slowest pod's rate (docs/engine/devices.md, "MIG instances"). Static
    instances take ``c`` from the node (one profile per node); dynamic ones
    from the pod's slot (:func:`gpureplay.engine.devices.mig.instance_slot`).
    """
    rate = 1.0
    pod0 = jobs.ints[J_POD0, j]
    dynamic_pods = jobs.ints[J_KIND, j] == KIND_SHARE
    for p in range(js.dyn[D_PLACED, j]):
        n = js.pod_node[pod0 + p]
        c = cl.node_int[N_MIG_COMPUTE, n]
        if dynamic_pods and cl.node_int[N_MIG_MASK, n] == 1:
            c = slot_compute(js.slot_gpu[jobs.ints[J_SLOT0, j] + p])
        if c > 0:
            rate = min(rate, min(1.0, c / cl.node_int[N_MIG_SLICES, n] / d))
    return rate


@kernel
def rerate(
    params: Params,
    demand: Float64Array,
    jobs: Jobs,
    js: JobState,
    cl: Cluster,
    tm: Timers,
    run: Run,
    j: int,
    t: float,
) -> None:
    """Give running job ``j`` the rate its shared GPUs allow now, if that changed.

    A job finishing at ``t`` is left alone: a new rate would only move its finish by rounding.
    """
    if js.time[T_FINISH, j] <= t:
        return
    rate = job_rate(params, demand, jobs, js, cl, j, -1)
    if rate != js.time[T_RATE, j]:
        set_rate(jobs, js, tm, run, j, rate, t)


@kernel
def sharers_changed(
    demand: Float64Array,
    params: Params,
    jobs: Jobs,
    js: JobState,
    cl: Cluster,
    tm: Timers,
    run: Run,
    j: int,
    t: float,
) -> None:
    """Job ``j`` starts (running) or stops (not running any more, pods still placed) at ``t``: re-rate.

    Notes
    -----
    Under time-slicing every running job with a pod on one of ``j``'s physical
    GPUs takes its new rate (and ``j`` its own when it starts); under MPS and
    on MIG instances a job's rate depends on its own placement only. Nothing
    happens without sharing or for a GPU-less job.
    """
    # A runtime switch, not a compiled variant: every replay compiles this once (its argument types
    # are the same in all), and one that does not share returns here.
    mode = params.codes[P_SHARING]
    if mode == SHARING_NONE or jobs.ints[J_MILLI, j] == 0:
        return
    running = js.dyn[D_STATUS, j] == S_RUNNING
    if mode in (SHARING_MPS, SHARING_MIG, SHARING_MIG_DYNAMIC, SHARING_MIG_MIXED):
        if running:
            rerate(params, demand, jobs, js, cl, tm, run, j, t)
        return
    run.counters[K_SHARE_CHANGES] += 1
    stamp = run.counters[K_SHARE_CHANGES]
    k = jobs.ints[J_K, j]
    pod0 = jobs.ints[J_POD0, j]
    for p in range(js.dyn[D_PLACED, j]):
        n = js.pod_node[pod0 + p]
        reps = cl.node_int[N_REPLICAS, n]
        g0 = cl.node_int[N_GPU0, n]
        slot0 = jobs.ints[J_SLOT0, j] + p * k
        for i in range(k):
            phys = new_gpu(js, slot0, i, g0, reps)
            if phys < 0:
                continue
            pod = js.node_pods[n]
            while pod >= 0:
                q = jobs.pod_job[pod]
                # Each job once per change: its rate is computed over all of its GPUs.
                if (
                    js.dyn[D_RATE_MARK, q] != stamp
                    and js.dyn[D_STATUS, q] == S_RUNNING
                    and weight_on(jobs, js, cl, pod, q, n, phys) > 0
                ):
                    js.dyn[D_RATE_MARK, q] = stamp
                    rerate(params, demand, jobs, js, cl, tm, run, q, t)
                pod = js.pod_next[pod]
