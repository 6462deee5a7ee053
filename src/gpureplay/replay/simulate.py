"""Replay a canonical trace on a canonical cluster under a policy: the engine's Python face.

:func:`simulate` compiles the tables once (:mod:`gpureplay.replay.compile`),
runs the numba event loop (:func:`gpureplay.engine.loop.advance`) always in
chunks of simulated time (so that progress can be shown and Ctrl-C is seen
within a fraction of a second), grows its result buffers when it asks for
room, and turns its
arrays back into polars tables with explicit schemas: one row per job, one per
run attempt, and the sampled timeline. The event order is written down once,
in :mod:`gpureplay.engine.loop`; the semantics in ``docs/engine/index.md``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import numpy as np
import polars as pl

from gpureplay.engine import loop
from gpureplay.engine.fit.fitindex import index_layout
from gpureplay.engine.fit.resources import rejection_codes
from gpureplay.engine.fit.scoring import build_index
from gpureplay.engine.jit.compile_once import compiled_for
from gpureplay.engine.jit.config import is_cached
from gpureplay.engine.loop import advance
from gpureplay.engine.state import layout as L
from gpureplay.engine.state.bundles import (
    JobState,
    QueueState,
    Run,
    State,
    initial_state,
    kai_state,
    quota_state,
    volcano_state,
)
from gpureplay.errors import InputError
from gpureplay.interrupts import PendingSignal, deferred
from gpureplay.queues.kai_queues import KaiQueues, kai_columns, kai_preemptibility, kai_total
from gpureplay.queues.kueue_preemption import preemption_table
from gpureplay.queues.kueue_quota import KueueQuotas, flavor_tables, lendable, model_columns, present
from gpureplay.queues.manifests import read_manifests
from gpureplay.queues.tree import GPU_RESOURCE
from gpureplay.queues.volcano_queues import VolcanoQueues, volcano_columns
from gpureplay.replay.compile import Compiled, compile_replay, policy_params
from gpureplay.replay.progress import Progress
from gpureplay.replay.queue_model import kai_queues, kueue_quotas, manifest_path, tenant_jobs, volcano_queues
from gpureplay.results.schemas import QUEUE_SAMPLE_SCHEMA
from gpureplay.schedulers.policy import Policy, QuotaSource
from gpureplay.traces.schema import JOBS_SCHEMA, NODES_SCHEMA, UNKNOWN_CAPACITY
from gpureplay.workload.typical_pods import TypicalPods, typical_pods
from gpureplay.workload.utilization import ReclaimIdlePolicy, Utilization, assign_utilization, policy_columns

__all__ = [
    "ATTEMPT_SCHEMA",
    "DEFAULT_CHUNKS",
    "DEFAULT_MAX_SAMPLES",
    "JOB_RESULT_SCHEMA",
    "QUEUE_SAMPLE_SCHEMA",
    "TIMELINE_SCHEMA",
    "Replay",
    "kernels_cached",
    "queue_rows",
    "simulate",
    "warm_up",
]

log = logging.getLogger(__name__)

#: A replay's queues under a queue model (``scheduler.queues``).
QueueModelQueues = KueueQuotas | VolcanoQueues | KaiQueues

#: Chunks a replay is cut into by default (over the submit span).
DEFAULT_CHUNKS = 200

#: Wall seconds one default-sized chunk may take before the next ones are made smaller: the longest a
#: Ctrl-C waits (signals are seen between chunks only).
MAX_CHUNK_WALL_SECONDS = 0.2

#: Smallest chunk, as a fraction of the default one (a chunk of one busy event time cannot be cut).
MAX_CHUNK_SPLITS = 1024.0
#: Most timeline rows a run keeps by default (the interval widens beyond).
DEFAULT_MAX_SAMPLES = 100_000
#: Timeline rows allocated before the first growth.
TIMELINE_START_CAPACITY = 1024

#: Per-job result columns, in order.
JOB_RESULT_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "start_time": pl.Float64(),
    "finish_time": pl.Float64(),
    "state": pl.String(),
    "reject_reason": pl.String(),
    "nodes_spanned": pl.Int32(),
    "held_milli": pl.Int64(),
    "preemptions": pl.Int32(),
    "attempts": pl.Int32(),
    "admission_failures": pl.Int32(),
    "pods_ready_timeouts": pl.Int32(),
    "pending_time": pl.Float64(),
    "lost_gpu_seconds": pl.Float64(),
    "sharing_delay": pl.Float64(),
    "sharing_slowdown": pl.Float64(),
    "nvlink_domains_spanned": pl.Int32(),
    "racks_spanned": pl.Int32(),
    "spines_spanned": pl.Int32(),
    "spread_delay": pl.Float64(),
}

#: One row per run attempt (``attempts.parquet``).
ATTEMPT_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "attempt": pl.Int32(),
    "hold_start": pl.Float64(),
    "start": pl.Float64(),
    "evicted": pl.Float64(),
    "end": pl.Float64(),
    "gpus": pl.Float64(),
    "pods": pl.Int32(),
    "nodes": pl.Int32(),
    "end_reason": pl.String(),
    "progress": pl.Float64(),
    "work_lost": pl.Float64(),
    "restart_overhead": pl.Float64(),
    "gpu_seconds": pl.Float64(),
    "evicted_by": pl.Int64(),
}

#: Timeline columns, in order.
TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "time": pl.Float64(),
    "allocated_gpus": pl.Int32(),
    "allocated_milli": pl.Int64(),
    "pending_jobs": pl.Int32(),
    "running_jobs": pl.Int32(),
    "fragmented_gpus": pl.Int32(),
    "preemptions": pl.Int64(),
    "terminating_jobs": pl.Int32(),
    "lost_gpu_seconds": pl.Float64(),
    "mig_stranded_slices": pl.Int32(),
}

#: ``state`` of ``Replay.jobs`` by the code :func:`_job_results` gives it.
_JOB_STATES = {0: "unfinished", 1: "finished", 2: "rejected", 3: "failed", 4: "deadlocked"}

_REJECT_REASONS = {
    L.R_NO_MODEL: "no_model",
    L.R_POD_TOO_LARGE: "pod_too_large",
    L.R_GANG_TOO_LARGE: "gang_too_large",
    L.R_SHARED_TOO_LARGE: "shared_request_too_large",
    L.R_TOPOLOGY_TOO_LARGE: "topology_too_large",
    L.R_NUMA_TOO_LARGE: "numa_too_large",
    L.R_SLICE_SIZE: "slice_size_invalid",
}

_VIOLATIONS = {
    L.E_GPU_MILLI_RANGE: "GPU {i} has free milli outside [0, 1000]",
    L.E_GPU_MEM_RANGE: "GPU {i} has free memory outside [0, its memory]",
    L.E_NODE_CPU: "node {i} has free CPU outside [0, its capacity]",
    L.E_NODE_MEM: "node {i} has free memory outside [0, its capacity]",
    L.E_GPU_MILLI_SUM: "GPU {i}'s free milli differs from 1000 minus the demands placed on it",
    L.E_GPU_MEM_SUM: "GPU {i}'s free memory differs from its memory minus the demands placed on it",
    L.E_NODE_CPU_SUM: "node {i}'s free CPU differs from its capacity minus the pods placed on it",
    L.E_NODE_MEM_SUM: "node {i}'s free memory differs from its capacity minus the pods placed on it",
    L.E_NODE_WHOLE: "node {i}'s wholly-free GPU count is out of step with its GPUs",
    L.E_NODE_MILLI: "node {i}'s free-milli sum is out of step with its GPUs",
    L.E_TOTALS: "cluster totals (free GPUs, allocated milli) are out of step with the nodes",
    L.E_HISTOGRAM: "model {i}'s free milli, histogram or histogram span is out of step with the nodes",
    L.E_STATUS: "job {i} has an impossible state / pod count",
    L.E_COUNTS: "running/pending/terminating counts or the completion heap disagree with job states ({i})",
    L.E_QUEUE: "the pending set disagrees with job states (class/job {i})",
    L.E_FINISH: "running job {i} should already have finished",
    L.E_INDEX: "the whole-GPU fit index is out of step with node {i}'s free GPUs",
    L.E_NODE_PODS: "node {i}'s pod list disagrees with the jobs' placements",
    L.E_GPU_SLOTS: "GPU {i} has fewer than 0 free pod slots, or not its split count minus the pods on it",
    L.E_GPU_MIG: "GPU {i}'s MIG slice mask is not the union of its instances, or two instances overlap",
    L.E_QUEUE_COUNTS: "queue {i}'s requested GPUs or pending / running jobs disagree with its jobs' states",
    L.E_NODE_WHOLE_LO: "node {i} has a wholly free GPU below the index its search for whole GPUs starts at",
}


@dataclass
class Replay:
    """Result of one replay.

    Attributes
    ----------
    jobs
        One row per input job, input order (:data:`JOB_RESULT_SCHEMA`).
        ``state`` is ``finished``, ``rejected``, ``deadlocked`` (pod by pod: some
        but not all pods placed at the end) or ``unfinished``.
    attempts
        One row per run attempt (:data:`ATTEMPT_SCHEMA`): ``end_reason`` is
        ``finished``, ``preempted``, ``unfinished`` (still running at the end)
        or ``deadlocked`` (holding pods at the end without running).
    timeline
        Sampled cluster state (:data:`TIMELINE_SCHEMA`).
    queues
        Each queue at each sample time (:data:`QUEUE_SAMPLE_SCHEMA`), rows by time then queue name.
    gpu_milli_seconds
        Integral of allocated milli-GPU over the run (up to ``stats["end_time"]``).
    window_gpu_milli_seconds
        The same integral restricted to the measurement window passed to
        :func:`simulate` (and to the run: nothing after the end time counts);
        None when no window was given.
    sample_interval
        The interval the timeline was sampled at: the one asked for, doubled
        as often as needed to stay within ``max_samples`` rows.
    stats
        ``events``, ``cycles``, ``placements_tried``, ``preemption_searches``,
        ``end_time``, ``kernel_seconds`` (wall time of the compiled loop),
        ``devices`` (``nvidia.com/gpu`` devices: GPUs, replicas or MIG
        instances), ``mig_instances`` and ``mig_stranded_pct`` (NaN without
        MIG; docs/engine/devices.md, "MIG instances"; under dynamic MIG the
        mean over the timeline of ``mig_stranded_slices`` as a share of the
        dynamic GPUs' memory slices), ``mig_reconfigurations`` and
        ``mig_reconfigure_gpu_h`` (re-partitionings started, and GPU-hours in
        their downtime up to the end; docs/engine/devices.md,
        "Re-partitioning idle GPUs").
    """

    jobs: pl.DataFrame
    attempts: pl.DataFrame
    timeline: pl.DataFrame
    queues: pl.DataFrame
    gpu_milli_seconds: float
    window_gpu_milli_seconds: float | None
    sample_interval: float
    stats: dict[str, float]


def kernels_cached() -> bool:
    """False when the engine's entry kernels will compile before this replay (a first run, ~1 min).

    See :func:`gpureplay.engine.jit.config.is_cached`.
    """
    return all(is_cached(k) for k in (advance, rejection_codes, build_index))


def default_chunk_seconds(compiled: Compiled) -> float:
    """Simulated seconds per chunk: the submit span / :data:`DEFAULT_CHUNKS` (``inf``: one chunk)."""
    submit = compiled.jobs.flts[L.JF_SUBMIT]
    if submit.shape[0] == 0:
        return math.inf
    span = float(submit.max() - submit.min())
    if span <= 0.0:
        span = float(compiled.jobs.flts[L.JF_WORK].max())
    return span / DEFAULT_CHUNKS if span > 0.0 else math.inf


def simulate(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    policy: Policy,
    *,
    seed: int = 0,
    sample_interval: float = 3600.0,
    horizon: float | None = None,
    window: tuple[float, float] | None = None,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    debug: bool = False,
    progress: Callable[[Progress], None] | None = None,
    chunk_seconds: float | None = None,
    tasks: TypicalPods | None = None,
) -> Replay:
    """Replay ``jobs`` on ``nodes`` under ``policy``.

    Parameters
    ----------
    jobs, nodes
        Validated canonical tables (``validate_jobs`` / ``validate_nodes``),
        with the workload's optional ``checkpoint_interval``,
        ``restart_overhead`` and ``preemption_policy`` columns.
    policy
        Queue order, gang mode, placement, backfill, cycle period, preemption.
    seed
        Key of the counter-based generator behind every random choice.
    sample_interval
        Seconds between timeline samples (samples at ``k * sample_interval``).
    horizon
        Process no event later than this time; jobs still running are ``unfinished``.
    window
        ``(start, end)`` seconds of a measurement window: the allocation inside
        it is integrated exactly, as ``Replay.window_gpu_milli_seconds``.
    max_samples
        Most timeline rows. When one more would exceed it, the sample interval
        doubles and only the samples on the new grid are kept (a warning, once,
        gives the interval used; ``Replay.sample_interval`` records it).
    debug
        Check the engine invariants after every cycle (incrementally) and all
        of them at the end, and the GPU-second accounting identity.
    progress
        Called with a :class:`~gpureplay.replay.progress.Progress` after each
        chunk of simulated time, and once more with ``finished=True`` (also
        when the run stops on an error or a signal).
    chunk_seconds
        Simulated seconds per chunk. Default: :func:`default_chunk_seconds`
        (the submit span / 200), halved while a chunk takes more than
        :data:`MAX_CHUNK_WALL_SECONDS` of wall time (and grown back when
        chunks are quick), so that a signal is seen soon whatever the trace.
        A chunk ends at the first multiple of its size at or after the next
        event, so each chunk processes at least one event time. ``math.inf``:
        one chunk (no progress and no signal seen until the end).
    tasks
        FGD's task classes for the ``fgd`` scorer; default: the typical pods
        of ``jobs`` (:func:`gpureplay.workload.typical_pods.typical_pods`)
        when a scorer is ``fgd``, none otherwise.

    Raises
    ------
    gpureplay.errors.InputError
        On a policy or setting out of range, naming its config key.
    AssertionError
        With ``debug=True``, when an invariant is violated (what, and at which time).
    KeyboardInterrupt, gpureplay.interrupts.Interrupted
        On SIGINT (Ctrl-C) or SIGTERM, at the end of the chunk running when it
        came (:func:`gpureplay.interrupts.deferred`).
    """
    if not (math.isfinite(sample_interval) and sample_interval > 0):
        raise ValueError(f"sample_interval must be a finite number > 0, got {sample_interval}")
    if horizon is not None and (math.isnan(horizon) or horizon < 0):
        raise ValueError(f"horizon must be >= 0 or None, got {horizon}")
    if chunk_seconds is not None and not (chunk_seconds > 0):
        raise ValueError(f"chunk_seconds must be > 0 or None, got {chunk_seconds}")
    if max_samples < 1:
        raise ValueError(f"max_samples must be >= 1, got {max_samples}")
    if window is not None and not (
        math.isfinite(window[0]) and math.isfinite(window[1]) and 0 <= window[0] <= window[1]
    ):
        raise ValueError(f"window must be (start, end) with 0 <= start <= end, finite; got {window}")
    params = policy_params(
        policy,
        seed=seed,
        sample_interval=sample_interval,
        horizon=horizon,
        # No window: (inf, inf) overlaps no interval, so the kernel's window integral stays 0.
        window=(math.inf, math.inf) if window is None else (float(window[0]), float(window[1])),
        max_samples=max_samples,
        debug=debug,
    )
    # Under dynamic MIG the fgd scorer weighs instance shapes (Classes.mig_weight), not task classes.
    slices = getattr(policy.mig_strategy, "name", policy.mig_strategy) == "dynamic"
    if tasks is None and not slices and "fgd" in (policy.node_placement, policy.gpu_placement):
        tasks = typical_pods(jobs)
    quotas = kueue_quotas(policy, jobs, nodes)
    volcano = volcano_queues(policy, jobs, nodes)
    kai = kai_queues(policy, jobs, nodes)
    jobs = tenant_jobs(jobs, quotas)
    if kai is not None:
        jobs = kai_preemptibility(jobs)
    model: QueueModelQueues | None = (
        quotas if quotas is not None else (volcano if volcano is not None else kai)
    )
    tenants = None if model is None else model.cluster_queues
    compiled = compile_replay(
        jobs,
        nodes,
        params,
        tasks,
        policy.mig_reconfigure_layouts,
        tenants,
        reserving=kai is not None and kai.actions != 0,
    )
    state = _initial(compiled, min(TIMELINE_START_CAPACITY, max_samples), model, nodes)
    started = time.perf_counter()
    adaptive = chunk_seconds is None
    if chunk_seconds is None:
        chunk_seconds = default_chunk_seconds(compiled)
    with deferred() as pending:
        state = _run(compiled, state, chunk_seconds, adaptive, progress, pending, horizon, started)
    kernel_seconds = time.perf_counter() - started
    js, run = state.js, state.run
    clock = run.clock
    if run.err[0] != L.E_OK:
        what = _VIOLATIONS.get(int(run.err[0]), "invariant {i} violated").format(i=int(run.err[1]))
        raise AssertionError(f"engine invariant violated at t={clock[L.X_ERROR_T]!r}: {what}")
    end_time = float(clock[L.X_NOW])
    downtime_gpu_h = _downtime_gpu_h(compiled, state, end_time)
    # The result tables read only the jobs' state, the run's buffers and the jobs' ints and rejections: the
    # fit index, heaps, timers, scratch and the jobs' other static arrays go before the tables are built,
    # so that a large replay's peak memory does not hold both.
    del state
    static = compiled.jobs
    compiled = dataclasses.replace(
        compiled,
        jobs=static._replace(
            **{f: _released(getattr(static, f)) for f in static._fields if f not in ("ints", "reject")}
        ),
    )
    del static
    attempts = _attempts(compiled, js, run, end_time)
    # Read into `attempts`: the attempt buffers (sized for twice the jobs) are not held beside the job table.
    run = run._replace(att_i=_released(run.att_i), att_f=_released(run.att_f))
    gpu_milli_seconds = float(clock[L.X_INTEGRAL])
    if debug:
        accounted = float(attempts["gpu_seconds"].sum()) * 1000.0
        if not math.isclose(gpu_milli_seconds, accounted, rel_tol=1e-9, abs_tol=1e-6):
            raise AssertionError(
                f"GPU-second accounting broken at end t={end_time!r}: integral "
                f"{gpu_milli_seconds / 1000.0!r} != sum over attempts {accounted / 1000.0!r}"
            )
    samples = int(run.cursor[L.L_SAMPLES])
    used_interval = float(clock[L.X_SAMPLE_INTERVAL])
    if used_interval != sample_interval:
        log.warning(
            "timeline: more than max_samples=%d samples at sample_interval=%g s; sampled every %g s "
            "instead (k * %g s)",
            max_samples, sample_interval, used_interval, used_interval,
        )  # fmt: skip
    return Replay(
        jobs=_job_results(compiled, js, end_time),
        attempts=attempts,
        timeline=_timeline(run, samples),
        queues=_queues(run, samples, compiled.tenants, model),
        gpu_milli_seconds=gpu_milli_seconds,
        window_gpu_milli_seconds=None if window is None else float(clock[L.X_WINDOW_INTEGRAL]),
        sample_interval=used_interval,
        stats={
            "events": float(run.counters[L.K_EVENTS]),
            "cycles": float(run.counters[L.K_CYCLES]),
            "placements_tried": float(run.counters[L.K_TRIED]),
            "preemption_searches": float(run.counters[L.K_PREEMPT_TRIES]),
            "preemptions": float(run.counters[L.K_PREEMPTIONS]),
            "end_time": end_time,
            "kernel_seconds": kernel_seconds,
            "sample_widenings": float(run.cursor[L.L_WIDENINGS]),
            "devices": float(compiled.devices),
            "mig_instances": float(compiled.mig.instances),
            "mig_stranded_pct": _stranded_pct(compiled, run, samples),
            "mig_reconfigurations": float(run.counters[L.K_MIG_RECONFIG]),
            "mig_reconfigure_gpu_h": downtime_gpu_h,
        },
    )


def _released(array: np.ndarray) -> np.ndarray:
    """An empty array of ``array``'s dtype and rank, to stand in for it once it is no longer read.

    A new array, not an empty slice: a slice is a view that would keep the whole buffer alive.
    """
    return np.empty_like(array, shape=(0,) * array.ndim)


def _downtime_gpu_h(compiled: Compiled, state: State, end_time: float) -> float:
    """GPU-hours MIG GPUs spent in re-partitioning downtime up to the end of the run."""
    started = float(state.run.counters[L.K_MIG_RECONFIG])
    ready = compiled.cluster.gpu_ready
    # A horizon may stop the run inside a downtime: only its part up to the end counts.
    unfinished = ready[np.isfinite(ready)]
    seconds = started * float(compiled.params.flt[L.PF_MIG_RECONFIG]) - float((unfinished - end_time).sum())
    return seconds / 3600.0


def _stranded_pct(compiled: Compiled, run: Run, samples: int) -> float:
    """The summary's ``mig_stranded_pct``: the static figure, or under dynamic MIG the timeline's mean share
    of the dynamic GPUs' memory slices that were stranded (NaN without MIG)."""
    node_int = compiled.cluster.node_int
    dynamic = node_int[L.N_MIG_MASK] == 1
    if dynamic.any():
        slices = int(node_int[L.N_GPUS][dynamic].sum()) * L.MIG_MEMORY_SLICES
        if samples == 0 or slices == 0:
            return math.nan
        return 100.0 * float(run.tl_rows[L.TL_MIG_STRANDED, :samples].mean()) / slices
    return math.nan if compiled.mig.stranded_pct is None else compiled.mig.stranded_pct


def warm_up(policy: Policy, *, debug: bool = False) -> None:
    """Replay one job on one node under ``policy``, so numba compiles or loads its kernels now.

    The kernels a replay compiles depend on the policy's mechanisms (gang or
    pod-by-pod mode, EASY, preemption, GPU sharing), not on the trace, so
    this tiny replay readies them for the real one; a caller times it apart
    from the replay (``timing.json``'s ``compile_seconds``). It costs
    milliseconds when numba's cache is warm.
    """
    jobs, nodes = warm_up_tables()
    if str(getattr(policy.preemption, "name", policy.preemption)) == "reclaim_idle":
        # ReclaimIdleResource reads its victims' PriorityClass and usage: one class, the default model.
        classed = jobs.with_columns(priority_class=pl.lit("warm-up"))
        classed = classed.with_columns(policy_columns({"warm-up": ReclaimIdlePolicy()}, {"warm-up": 0}))
        jobs = assign_utilization(classed, Utilization(), seed=0)
    # The candidate MIG configs are data, not kernel types, and the warm-up node has no MIG to check them on.
    policy = dataclasses.replace(policy, mig_reconfigure_layouts=None)
    if str(getattr(policy.queues, "name", policy.queues)) == "kai":
        # KAI's manifests name no queue of the warm-up job, and its kernels do not depend on where the
        # queues come from: derived ones stand in.
        policy = dataclasses.replace(policy, quotas=QuotaSource.gpu_time_share, manifests=None)
    elif str(getattr(policy.queues, "name", policy.queues)) == "kueue" and policy.manifests is not None:
        # Kueue's manifests need not name the warm-up job's queue: it joins a ClusterQueue that covers GPUs
        # (so that the manifests' preemption policies compile with it), on a node of its flavor's GPU model;
        # every other GPU model a flavor selects gets a node too (a flavor that selects none is refused).
        queue, models = _warm_up_cluster_queue(policy)
        jobs = jobs.with_columns(queue=pl.lit(queue))
        if models:
            nodes = pl.concat(
                [
                    nodes.with_columns(
                        node_id=pl.lit(i, dtype=nodes.schema["node_id"]),
                        node_name=pl.lit(f"warm-up-{i}"),
                        nvlink_domain=pl.lit(i, dtype=nodes.schema["nvlink_domain"]),
                        gpu_model=pl.lit(m),
                    )
                    for i, m in enumerate(models)
                ]
            )
    simulate(jobs, nodes, policy, sample_interval=1.0, window=(0.0, 1.0), debug=debug)


def _warm_up_cluster_queue(policy: Policy) -> tuple[str, list[str]]:
    # The first ClusterQueue of the manifests that covers GPUs and the GPU models the flavors select, its
    # first flavor's first ("default" when none covers GPUs: the replay itself then reports what is wrong
    # with the manifests).
    tree = read_manifests(manifest_path(policy)).tree
    models = {f.name: f.gpu_model for f in tree.flavors}
    barred = {f.name for f in tree.flavors if f.untolerated()}  # never assigned: no place for the job
    selected = list(dict.fromkeys(m for m in models.values() if m is not None))
    for cq in tree.cluster_queues:
        for group in cq.resource_groups:
            usable = [f for f in group.flavors if f.name not in barred]
            if GPU_RESOURCE in group.covered_resources and usable:
                first = models.get(usable[0].name)
                ordered = [first] if first is not None else []
                return cq.name, ordered + [m for m in selected if m != first]
    return "default", selected


def warm_up_tables() -> tuple[pl.DataFrame, pl.DataFrame]:
    """One whole-GPU job and one one-GPU node: the smallest replay, to compile kernels with."""
    jobs = pl.DataFrame(
        {
            "job_id": [1], "job_name": [None], "submit_time": [0.0], "duration": [1.0], "num_pods": [1],
            "gpu_milli": [1000], "gpu_mem_mib": [None], "gpu_models": [None], "mig_profile": [None],
            "cpu_milli": [0], "mem_mib": [0], "queue": ["default"], "user": [None], "priority": [0],
            "preemptible": [True], "topology_mode": [None], "topology_level": [None],
            "topology_slice_level": [None], "topology_slice_size": [None],
        },
        schema=JOBS_SCHEMA,
    )  # fmt: skip
    nodes = pl.DataFrame(
        {
            "node_id": [0], "node_name": ["warm-up"], "gpu_model": ["V100"], "num_gpus": [1],
            "gpu_mem_mib": [16_384], "cpu_milli": [1000], "mem_mib": [1024], "numa_of_gpu": [None],
            "nvlink_domain": [0], "rack": [0], "spine": [0], "mig_layout": [None],
        },
        schema=NODES_SCHEMA,
    )  # fmt: skip
    return jobs, nodes


def _initial(
    compiled: Compiled,
    timeline_capacity: int,
    quotas: QueueModelQueues | None = None,
    nodes: pl.DataFrame | None = None,
) -> State:
    """The replay's mutable state at time 0 (fit trees built when the node scorer is indexable).

    ``nodes``: the cluster's node table (needed under Volcano's queues: its total resources).
    """
    ix = index_layout(compiled.cluster.node_int, len(compiled.models), compiled.hist_width)
    build_index(compiled.params, compiled.cluster, ix)
    quota: QueueState | None = None
    if isinstance(quotas, KaiQueues):
        if nodes is None:
            raise ValueError("KAI's queues need the node table (the cluster's total resources)")
        quota = kai_state(
            quotas.parent,
            quotas.num_leaves,
            quotas.priority,
            quotas.quota,
            quotas.over_quota_weight,
            quotas.limit,
            quotas.created,
            kai_total(nodes),
            compiled.classes.ints[L.C_TENANT],
            quotas.actions,
            compiled.jobs.ints.shape[1],
            compiled.cluster.node_int.shape[1],
            compiled.jobs.pod_job.shape[0],
            None
            if quotas.preempt_min_runtime is None or quotas.reclaim_min_runtime is None
            else (quotas.preempt_min_runtime, quotas.reclaim_min_runtime),
        )
    elif isinstance(quotas, VolcanoQueues):
        if nodes is None:
            raise ValueError("Volcano's queues need the node table (the cluster's total resources)")
        total = volcano_total(nodes)
        quota = volcano_state(
            quotas.weight,
            quotas.real_capability(total),
            quotas.guarantee,
            quotas.priority,
            total,
            quotas.overcommit,
            compiled.classes.ints[L.C_TENANT],
            compiled.jobs.ints.shape[1],
            quotas.reclaimable,
            compiled.cluster.node_int.shape[1],
            quotas.actions.bits(),
            quotas.actions.plugin_bits(),
            int(compiled.classes.ints[L.C_PODS].max(initial=0)),
        )
    elif quotas is not None:
        quota = quota_state(
            quotas.parent,
            quotas.nominal,
            quotas.borrowing_limit,
            quotas.lending_limit,
            quotas.subtree_quota(),
            quotas.covered,
            quotas.strict_fifo,
            compiled.classes.ints[L.C_TENANT],
            quotas.fair_sharing,
            present(quotas),
            lendable(quotas),
            quotas.weight,
            preemption_table(quotas),
            compiled.jobs.ints.shape[1],
            quotas.fair_strategies.value,
            bool(compiled.params.codes[L.P_QUOTA_ONLY]),
            flavor_tables(quotas, compiled.models),
        )
    return initial_state(
        compiled.params,
        compiled.jobs,
        compiled.classes,
        compiled.cluster,
        ix,
        len(compiled.tenants),
        timeline_capacity,
        compiled.numa,
        quota,
    )


def _grow(run: Run, max_samples: int) -> Run:
    """A Run with room for more timeline rows (up to ``max_samples``) and attempts."""
    tl_cap = run.tl_flt.shape[1]
    if run.cursor[L.L_SAMPLES] == tl_cap and tl_cap < max_samples:
        cap = min(2 * tl_cap, max_samples)
        tl_flt = np.zeros((run.tl_flt.shape[0], cap))
        tl_rows = np.zeros((run.tl_rows.shape[0], cap), dtype=np.int64)
        tl_flt[:, :tl_cap] = run.tl_flt
        tl_rows[:, :tl_cap] = run.tl_rows
        run = run._replace(tl_flt=tl_flt, tl_rows=tl_rows)
    att_cap = run.att_i.shape[1]
    cap = 2 * att_cap
    att_i = np.zeros((run.att_i.shape[0], cap), dtype=np.int64)
    att_f = np.zeros((run.att_f.shape[0], cap))
    att_i[:, :att_cap] = run.att_i
    att_f[:, :att_cap] = run.att_f
    return run._replace(att_i=att_i, att_f=att_f)


def _next_stop(previous: float, next_event: float, chunk: float) -> float:
    """End of the next chunk: the first multiple of ``chunk`` past ``previous``, at or after ``next_event``.

    Examples
    --------
    >>> _next_stop(0.0, 0.0, 10.0), _next_stop(10.0, 12.0, 10.0), _next_stop(10.0, 95.0, 10.0)
    (10.0, 20.0, 100.0)
    >>> _next_stop(0.0, 5.0, math.inf)
    inf
    """
    if math.isinf(chunk):
        return math.inf
    k = max(math.floor(previous / chunk) + 1, math.ceil(next_event / chunk))
    stop = k * chunk
    if stop < next_event or stop <= previous:  # rounding of the divisions
        stop = (k + 1) * chunk
    return stop


def _run(
    compiled: Compiled,
    state: State,
    chunk_seconds: float,
    adaptive: bool,
    progress: Callable[[Progress], None] | None,
    pending: PendingSignal,
    horizon: float | None,
    started: float,
) -> State:
    """Advance the engine chunk by chunk (growing buffers on request), reporting and checking signals.

    Chunk boundaries are multiples of the chunk size; after a pause the next
    boundary is the first one at or after the next event time, so a gap in the
    trace costs one call, not one per empty chunk. With ``adaptive``, the size
    is halved after a chunk slower than :data:`MAX_CHUNK_WALL_SECONDS` (down to
    ``chunk_seconds / MAX_CHUNK_SPLITS``) and doubled back (up to
    ``chunk_seconds``) after a chunk ten times quicker.
    """
    c = compiled
    max_samples = int(c.params.codes[L.P_MAX_SAMPLES])
    submit = c.jobs.flts[L.JF_SUBMIT]
    last_submit = float(submit.max()) if submit.shape[0] else 0.0
    if horizon is not None:
        last_submit = min(last_submit, horizon)
    total = int(c.jobs.ints.shape[1])
    chunk = chunk_seconds
    t_stop = -math.inf
    status = L.ADV_PAUSED
    reported = -1
    # On a cold cache, wait for a process compiling this variant instead of compiling it alongside (the
    # kernel itself, not `advance`, which a test may wrap).
    compiled_for(loop.advance, (c.params, c.jobs, c.classes, c.cluster, state, t_stop))
    try:
        while True:
            if status == L.ADV_PAUSED:
                t_stop = _next_stop(max(t_stop, 0.0), float(state.run.clock[L.X_NEXT_T]), chunk)
            tick = time.perf_counter()
            status = int(advance(c.params, c.jobs, c.classes, c.cluster, state, t_stop))
            pending.check()
            if status == L.ADV_GROW:
                state = state._replace(run=_grow(state.run, max_samples))
                continue
            if status == L.ADV_LIVELOCK:
                _raise_livelock(c, state)
            if status != L.ADV_PAUSED:
                break
            if adaptive:
                took = time.perf_counter() - tick
                if took > MAX_CHUNK_WALL_SECONDS:
                    chunk = max(chunk / 2.0, chunk_seconds / MAX_CHUNK_SPLITS)
                elif took < MAX_CHUNK_WALL_SECONDS / 10.0 and chunk < chunk_seconds:
                    chunk = min(chunk * 2.0, chunk_seconds)
            # A chunk may end having processed no event time (a widened sample grid can drop the one it
            # stopped for): nothing new to report then.
            events = int(state.run.counters[L.K_EVENTS])
            if progress is not None and events > reported:
                reported = events
                progress(_progress(state.run, total, last_submit, started, False))
    finally:
        if progress is not None:
            progress(_progress(state.run, total, last_submit, started, True))
    return state


def _raise_livelock(compiled: Compiled, state: State) -> NoReturn:
    """Stop a replay whose preemptions evict without end (the engine returned ``ADV_LIVELOCK``).

    Raises
    ------
    InputError
        Always, on ``scheduler.preemption``: the evictions passed
        :data:`gpureplay.replay.compile.LIVELOCK_EVICTIONS_PER_JOB` per job, the same jobs evicting one
        another over and over (e.g. a low-priority job re-takes room its
        evictor was waiting for), so the replay would never end.
    """
    evictions = int(state.run.counters[L.K_PREEMPTIONS])
    num_jobs = int(compiled.jobs.ints.shape[1])
    times = state.js.dyn[L.D_PREEMPTIONS]
    worst = np.argsort(-times, kind="stable")[:3]
    ids = compiled.jobs.ints[L.J_ID]
    most = ", ".join(f"job {int(ids[j])} {int(times[j]):,} times" for j in worst if times[j] > 0)
    now = float(state.run.clock[L.X_NOW])
    message = (
        f"preemption livelock: {evictions:,} evictions for {num_jobs:,} jobs by t={now:,.0f} s "
        f"(most evicted: {most}); the same jobs evict one another without end, so the replay stops "
        "(docs/engine/preemption.md, 'Nominated nodes'). Change the preemption settings or the jobs' "
        "priorities."
    )
    raise InputError.config(message, "scheduler.preemption")


def _progress(run: Run, total: int, last_submit: float, started: float, finished: bool) -> Progress:
    """The :class:`Progress` record of the engine's state now."""
    now = float(run.clock[L.X_NOW])
    counters = run.counters
    # Every admitted job is pending, running, terminating, finished or rejected.
    done = int(run.cursor[L.L_ARRIVAL] - counters[L.K_NPEND] - counters[L.K_NRUN] - counters[L.K_NTERM])
    return Progress(
        sim_time=now,
        sim_end_estimate=max(last_submit, now),
        jobs_done=done,
        jobs_total=total,
        events=int(counters[L.K_EVENTS]),
        wall_seconds=time.perf_counter() - started,
        finished=finished,
    )


def _open_attempts(compiled: Compiled, js: JobState, end_time: float) -> dict[str, np.ndarray]:
    """Attempts still holding resources at the end (running, or pod-holding without running), by column."""
    ints = compiled.jobs.ints
    status = js.dyn[L.D_STATUS]
    placed = js.dyn[L.D_PLACED]
    holding = ((status == L.S_RUNNING) | (status == L.S_QUEUED) | (status == L.S_ADMITTED)) & (placed > 0)
    idx = np.flatnonzero(holding)
    running = status[idx] == L.S_RUNNING
    pod0 = ints[L.J_POD0][idx]
    # Sum of the placement times of each job's placed pods.
    owner = np.repeat(np.arange(idx.shape[0]), placed[idx])
    offsets = np.arange(owner.shape[0]) - np.repeat(_starts(placed[idx]), placed[idx])
    hold_sum = np.bincount(owner, weights=js.pod_time[pod0[owner] + offsets], minlength=idx.shape[0])
    milli = ints[L.J_MILLI][idx].astype(np.float64)
    gpu_seconds = (end_time * placed[idx] - hold_sum) * milli / 1000.0
    if compiled.params.codes[L.P_SHARING] in (L.SHARING_MIG_DYNAMIC, L.SHARING_MIG_MIXED):
        # Pods on MIG instances hold their slices, a fractional pod on a whole-GPU node the GPU.
        for i, j in enumerate(idx):
            pods = range(int(pod0[i]), int(pod0[i] + placed[j]))
            held = [_held_milli(compiled, int(j), int(js.pod_node[p])) for p in pods]
            gpu_seconds[i] = (
                sum((end_time - js.pod_time[p]) * h for p, h in zip(pods, held, strict=True)) / 1000.0
            )
    creation = _creation(compiled, js, (status == L.S_RUNNING))[idx]
    start = np.where(running, js.time[L.T_START][idx], np.nan)
    # Progress begins after the restart overhead and then the instances' creation (no restart overhead).
    progress0 = js.time[L.T_PROGRESS0][idx]
    since = np.maximum(js.time[L.T_RATE_T][idx], progress0)
    done = js.time[L.T_DONE][idx] + np.maximum(0.0, end_time - since) * js.time[L.T_RATE][idx]
    return {
        "job": idx,
        "attempt": js.dyn[L.D_ATTEMPTS][idx] - 1,
        "hold_start": js.time[L.T_HOLD0][idx],
        "start": start,
        "evicted": np.full(idx.shape[0], np.nan),
        "end": np.full(idx.shape[0], end_time),
        "pods": placed[idx],
        "nodes": np.where(running, js.dyn[L.D_SPANNED][idx], 0),
        "end_reason": np.where(running, "unfinished", "deadlocked"),
        "evictor": np.full(idx.shape[0], -1, dtype=np.int64),
        "progress": np.where(running, done, 0.0),
        "work_lost": np.zeros(idx.shape[0]),
        "restart_overhead": np.where(
            running, np.maximum(0.0, np.minimum(end_time, progress0 - creation) - start), 0.0
        ),
        "gpu_seconds": gpu_seconds,
    }


def _starts(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(counts.shape[0], dtype=np.int64)
    if counts.shape[0] > 1:
        np.cumsum(counts[:-1], out=out[1:])
    return out


def _attempts(compiled: Compiled, js: JobState, run: Run, end_time: float) -> pl.DataFrame:
    """Every attempt, by job and attempt: the engine's records (clamped at the end of the run), the open ones.

    Built column by column from the engine's buffers, each sorted once and handed to polars as it is made:
    a million-attempt table is never held twice (as numpy columns and a frame, or a frame and its sorted
    copy).
    """
    n = int(run.counters[L.K_ATTEMPTS])
    ai = run.att_i[:, :n]
    af = run.att_f[:, :n]
    end = af[L.AF_END]
    overrun = np.maximum(0.0, end - end_time)  # an eviction whose grace period outlasts the run
    ints = compiled.jobs.ints
    milli = ints[L.J_MILLI][ai[L.A_JOB]].astype(np.float64)
    recorded: dict[str, Callable[[], np.ndarray]] = {
        "job": lambda: ai[L.A_JOB],
        "attempt": lambda: ai[L.A_NUMBER],
        "hold_start": lambda: af[L.AF_HOLD0],
        "start": lambda: af[L.AF_START],
        "evicted": lambda: af[L.AF_EVICTED],
        "end": lambda: np.minimum(end, end_time),
        "pods": lambda: ai[L.A_PODS],
        "nodes": lambda: ai[L.A_NODES],
        "end_reason": lambda: np.select(
            [ai[L.A_REASON] == L.END_FINISHED, ai[L.A_REASON] == L.END_PODS_READY],
            ["finished", "pods_ready_timeout"],
            "preempted",
        ),
        "evictor": lambda: ai[L.A_EVICTOR],
        "progress": lambda: af[L.AF_PROGRESS],
        "work_lost": lambda: af[L.AF_LOST],
        "restart_overhead": lambda: af[L.AF_OVERHEAD],
        "gpu_seconds": lambda: af[L.AF_GPU_S] - overrun * ai[L.A_PODS] * milli / 1000.0,
    }
    still_open = _open_attempts(compiled, js, end_time)

    def column(name: str) -> np.ndarray:
        return np.concatenate((recorded[name](), still_open[name]))

    job = column("job")
    # By job, then attempt number (each pair once, so the order is the one sort("job", "attempt") gives).
    order = np.lexsort((column("attempt"), job))
    job = job[order]
    ids, job_milli = ints[L.J_ID], ints[L.J_MILLI].astype(np.float64)
    evictor = column("evictor")[order]
    pods = column("pods")[order]
    series: list[pl.Series] = []
    for name, dtype in ATTEMPT_SCHEMA.items():
        if name == "job_id":
            values = ids[job]
        elif name == "evicted_by":  # the evicting job's id (the engine's index -1 means none)
            values = np.where(evictor >= 0, ids[np.maximum(evictor, 0)], 0)
            series.append(pl.Series(name, values, dtype=dtype).set(pl.Series(evictor < 0), None))
            continue
        elif name == "gpus":
            values = pods.astype(np.float64) * job_milli[job] / 1000.0
        elif name == "pods":
            values = pods
        else:
            values = column(name)[order]
        series.append(pl.Series(name, values, nan_to_null=True).cast(dtype, strict=True))
    return pl.DataFrame(series)


def _held_milli(compiled: Compiled, j: int, n: int) -> int:
    """Milli-GPU a pod of job ``j`` holds on node ``n``
    (:func:`gpureplay.engine.fit.resources.held_milli`)."""
    ints = compiled.jobs.ints
    milli = int(ints[L.J_MILLI, j])
    model = int(compiled.cluster.node_int[L.N_MODEL, n])
    if ints[L.J_KIND, j] != L.KIND_SHARE or model < 0:
        return milli
    shape = int(compiled.classes.mig[ints[L.J_CLASS, j], model])
    if shape == L.MIG_WHOLE:
        return L.WHOLE
    if shape >= 0:
        return ((shape >> L.MIG_SIZE_SHIFT) & 15) * L.MIG_SLICE_MILLI
    return milli


def _creation(compiled: Compiled, js: JobState, running: np.ndarray) -> np.ndarray:
    """Per job, the MIG instance creation its running attempt waits (not lost work; 0 elsewhere)."""
    out = np.zeros(running.shape[0])
    create = float(compiled.params.flt[L.PF_MIG_CREATE])
    if create == 0.0 or compiled.params.codes[L.P_SHARING] != L.SHARING_MIG_DYNAMIC:
        return out
    ints = compiled.jobs.ints
    dynamic = compiled.cluster.node_int[L.N_MIG_MASK]
    for j in np.flatnonzero(running & (ints[L.J_MILLI] > 0)):
        pod0 = ints[L.J_POD0, j]
        if dynamic[js.pod_node[pod0 : pod0 + js.dyn[L.D_PLACED, j]]].any():
            out[j] = create
    return out


def _job_results(compiled: Compiled, js: JobState, end_time: float) -> pl.DataFrame:
    ints = compiled.jobs.ints
    status = js.dyn[L.D_STATUS]
    placed = js.dyn[L.D_PLACED]
    # Pods held by a job that never ran: pod by pod, or admitted by Kueue's quota alone.
    deadlocked = ((status == L.S_QUEUED) | (status == L.S_ADMITTED)) & (placed > 0)
    running = status == L.S_RUNNING
    terminating = status == L.S_TERMINATING
    ran = ~np.isnan(js.time[L.T_FIRST_START])
    spanned = np.where(ran, js.dyn[L.D_SPANNED], 0)  # when its last attempt that ran started
    levels = (L.N_NVLINK, L.N_RACK, L.N_SPINE)
    domains = [np.where(ran, js.dyn[L.D_NVLINKS + i], 0) for i in range(len(levels))]
    node_int = compiled.cluster.node_int
    held = np.zeros(status.shape[0], dtype=np.int64)
    if deadlocked.any():
        idx = np.flatnonzero(deadlocked)
        for j in idx:  # few jobs: nodes they hold
            pod0 = ints[L.J_POD0, j]
            nodes = js.pod_node[pod0 : pod0 + placed[j]]
            spanned[j] = np.unique(nodes).shape[0]
            for i, row in enumerate(levels):
                domains[i][j] = np.unique(node_int[row, nodes]).shape[0]
            held[j] = sum(_held_milli(compiled, int(j), int(n)) for n in nodes)
    # A code per job, named by polars (a Python string per job would cost a list as long as the trace).
    state = np.zeros(status.shape[0], dtype=np.int8)
    state[status == L.S_FINISHED] = 1
    state[status == L.S_REJECTED] = 2
    state[status == L.S_FAILED] = 3
    state[deadlocked] = 4
    rejected_now = np.where(status == L.S_REJECTED, compiled.jobs.reject, L.R_NONE)
    reason = pl.Series("reject_reason", rejected_now, dtype=pl.Int64).replace_strict(
        _REJECT_REASONS, default=None, return_dtype=pl.String
    )
    pending_since = js.time[L.T_PEND_SINCE]
    # A job backing off (a kubelet rejection, a waitForPodsReady timeout) or admitted with pods still
    # unplaced waits too.
    waiting = ((status == L.S_QUEUED) | (status == L.S_BACKOFF) | (status == L.S_ADMITTED)) & ~np.isnan(
        pending_since
    )
    pending = js.time[L.T_PENDING] + np.where(waiting, end_time - np.where(waiting, pending_since, 0.0), 0.0)
    gpus = placed * ints[L.J_MILLI] / 1000.0
    # Lost GPU-seconds charged so far, plus what the end of the run leaves uncharged: the restart
    # overhead a running attempt has spent and the grace period a terminating job has held.
    start = js.time[L.T_START]
    restart_end = js.time[L.T_PROGRESS0] - _creation(compiled, js, running)
    overhead_open = np.where(running, np.maximum(0.0, np.minimum(end_time, restart_end) - start), 0.0)
    grace_open = np.where(terminating, end_time - js.time[L.T_EVICTED], 0.0)
    lost = js.time[L.T_LOST] + gpus * (np.nan_to_num(overhead_open) + np.nan_to_num(grace_open))
    # Work and sharing delay booked at the attempts' ends, plus what a running attempt has done so far.
    since = np.maximum(js.time[L.T_RATE_T], js.time[L.T_PROGRESS0])
    elapsed = np.where(running, np.maximum(0.0, end_time - np.where(running, since, 0.0)), 0.0)
    rate = np.where(running, js.time[L.T_RATE], 1.0)
    delay = js.time[L.T_SHARE_DELAY] + elapsed * (1.0 - rate)
    work = js.time[L.T_WORK_DONE] + np.where(running, js.time[L.T_DONE], 0.0) + elapsed * rate
    # Spreading costs are refused with GPU sharing, so when they are on every stretch is theirs.
    spread_on = bool((compiled.params.flt[L.PF_SPREAD_NVLINK : L.PF_SPREAD_SPINE + 1] < 1.0).any())
    spread_delay = delay if spread_on else np.zeros_like(delay)
    if spread_on:
        delay = np.zeros_like(delay)
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(work > 0.0, (work + delay) / work, np.nan)
    columns: dict[str, np.ndarray | pl.Series] = {
        "job_id": ints[L.J_ID],
        "start_time": np.where(ran, js.time[L.T_FIRST_START], np.nan),
        "finish_time": np.where(status == L.S_FINISHED, js.time[L.T_END], np.nan),
        "state": pl.Series(state).replace_strict(_JOB_STATES, return_dtype=pl.String),
        "reject_reason": reason,
        "nodes_spanned": spanned,
        "held_milli": held,
        "preemptions": js.dyn[L.D_PREEMPTIONS],
        "attempts": js.dyn[L.D_ATTEMPTS],
        "admission_failures": js.dyn[L.D_ADMIT_FAILS],
        "pods_ready_timeouts": js.dyn[L.D_READY_TIMEOUTS],
        "pending_time": np.where((status == L.S_REJECTED) | (status == L.S_FAILED), np.nan, pending),
        "lost_gpu_seconds": lost,
        "sharing_delay": delay,
        "sharing_slowdown": slowdown,
        "nvlink_domains_spanned": domains[0],
        "racks_spanned": domains[1],
        "spines_spanned": domains[2],
        "spread_delay": spread_delay,
    }
    del state, reason, pending, lost, delay, work, slowdown, spread_delay, domains, spanned, held
    # Column by column, each numpy column dropped once polars holds it: never the whole table twice.
    series = []
    for name, dtype in JOB_RESULT_SCHEMA.items():
        values = columns.pop(name)
        if isinstance(values, pl.Series):
            series.append(values.alias(name).cast(dtype, strict=True))
        else:
            series.append(pl.Series(name, values, nan_to_null=True).cast(dtype, strict=True))
        del values
    return pl.DataFrame(series)


def _queues(
    run: Run, samples: int, tenants: tuple[str, ...], quotas: QueueModelQueues | None
) -> pl.DataFrame:
    """Each queue's ``QU_*`` rows of the timeline as one row per (sample, queue), with its quota columns."""
    num = len(tenants)
    base = L.TIMELINE_FIELDS
    width = run.queues.shape[0]
    # rows[q, f, s]: field f of queue q at sample s
    rows = run.tl_rows[base : base + width * num, :samples].reshape(num, width, samples)
    usage = np.stack([rows[:, L.QU_MILLI, :], rows[:, L.QU_CPU, :], rows[:, L.QU_MEM, :]])
    # Kueue with several flavors: the usage per flavor and resource (quota rows) follows QUEUE_FIELDS.
    per_flavor = rows[:, L.QUEUE_FIELDS :, :].transpose(1, 0, 2) if width > L.QUEUE_FIELDS else None
    return queue_rows(
        run.tl_flt[L.TLF_TIME, :samples],
        tenants,
        usage,
        rows[:, L.QU_PENDING, :],
        rows[:, L.QU_RUNNING, :],
        quotas,
        (rows[:, L.QU_DESERVED, :], rows[:, L.QU_SHARE, :]),
        per_flavor,
    )


def volcano_total(nodes: pl.DataFrame) -> np.ndarray:
    """The cluster's total in Volcano's units (milli-GPU, milli-CPU, bytes): ``ssn.TotalResource``."""
    # A node whose CPU or memory the node list does not give (UNKNOWN_CAPACITY) bounds nothing: nor does the
    # cluster's total of that resource.
    totals = [float(nodes["num_gpus"].cast(pl.Float64).fill_null(0.0).sum()) * 1000.0]
    for column, factor in (("cpu_milli", 1.0), ("mem_mib", float(2**20))):
        values = nodes[column].cast(pl.Float64).fill_null(0.0)
        unknown = bool((nodes[column] == UNKNOWN_CAPACITY).any())
        totals.append(math.inf if unknown else float(values.sum()) * factor)
    return np.array(totals)


def queue_rows(
    times: np.ndarray,
    tenants: tuple[str, ...],
    usage: np.ndarray,
    pending: np.ndarray,
    running: np.ndarray,
    quotas: QueueModelQueues | None,
    proportion: tuple[np.ndarray, np.ndarray] | None = None,
    quota_usage: np.ndarray | None = None,
) -> pl.DataFrame:
    """``queues.parquet`` rows from per-queue samples (``usage[resource, queue, sample]`` in engine units).

    The quota columns come from :func:`gpureplay.queues.kueue_quota.model_columns` under Kueue (with
    several flavors from ``quota_usage[row, queue, sample]``, the usage per flavor and resource); under
    Volcano from ``proportion``: ``[queue, sample]`` deserved milli-GPU and share x 10^6 at each sample
    (:func:`gpureplay.queues.volcano_queues.volcano_columns`). They are null without a queue model.
    """
    num, samples = len(tenants), len(times)
    columns: dict[str, object] = {
        "time": np.tile(np.asarray(times, dtype=np.float64), num),
        "queue": pl.Series([name for name in tenants for _ in range(samples)], dtype=pl.String),
        "usage_gpu": np.asarray(usage[0], dtype=np.float64).reshape(-1) / 1000.0,
        "pending_jobs": np.asarray(pending).reshape(-1),
        "running_jobs": np.asarray(running).reshape(-1),
    }
    if isinstance(quotas, VolcanoQueues | KaiQueues):
        if proportion is None:
            raise ValueError("Volcano's and KAI's queue columns need the sampled fair share and share")
        if isinstance(quotas, KaiQueues):
            found = kai_columns(
                quotas, np.asarray(usage), np.asarray(proportion[0]), np.asarray(proportion[1])
            )
        else:
            found = volcano_columns(np.asarray(usage), np.asarray(proportion[0]), np.asarray(proportion[1]))
    elif quotas is not None:
        found = model_columns(quotas, np.asarray(usage if quota_usage is None else quota_usage))
    else:
        found = {}
    for name, values in found.items():
        columns[name] = values.reshape(-1)
    return (
        pl.DataFrame(columns, nan_to_null=True)  # NaN: no quota (KAI's -1)
        .with_columns(
            pl.lit(None, pl.Float64).alias(name)
            for name in ("nominal_gpu", "borrowed_gpu", "lent_gpu", "share", "fair_gpu")
            if name not in columns
        )
        .cast(QUEUE_SAMPLE_SCHEMA)  # type: ignore[arg-type]
        .select(list(QUEUE_SAMPLE_SCHEMA))
        .sort("time", "queue", maintain_order=True)
    )


def _timeline(run: Run, samples: int) -> pl.DataFrame:
    rows = run.tl_rows[:, :samples]
    return pl.DataFrame(
        {
            "time": run.tl_flt[L.TLF_TIME, :samples],
            "allocated_gpus": rows[L.TL_GPUS],
            "allocated_milli": rows[L.TL_MILLI],
            "pending_jobs": rows[L.TL_PENDING],
            "running_jobs": rows[L.TL_RUNNING],
            "fragmented_gpus": rows[L.TL_FRAGMENTED],
            "preemptions": rows[L.TL_PREEMPTIONS],
            "terminating_jobs": rows[L.TL_TERMINATING],
            "lost_gpu_seconds": run.tl_flt[L.TLF_LOST, :samples],
            "mig_stranded_slices": rows[L.TL_MIG_STRANDED],
        },
        schema=TIMELINE_SCHEMA,
    )
