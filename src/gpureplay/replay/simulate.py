"""Replay a canonical trace on a canonical cluster under a policy: the engine's Python face.

:func:`simulate` compiles the tables once (:mod:`gpureplay.replay.compile`),
runs the numba event loop (:func:`gpureplay.engine.loop.advance`, in chunks of
simulated time when someone watches its progress) and turns its arrays back
into polars tables with explicit schemas. The semantics are the ones of the
engine v1 spec; the event order is written down once, in
:mod:`gpureplay.engine.loop`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from gpureplay.engine import state as S
from gpureplay.engine.loop import EngineState, advance, init_state
from gpureplay.engine.placement import rejection_codes
from gpureplay.replay.compile import CompiledReplay, compile_replay
from gpureplay.replay.progress import Progress
from gpureplay.schedulers.policy import Policy
from gpureplay.traces.schema import JOBS_SCHEMA, NODES_SCHEMA

__all__ = [
    "DEFAULT_CHUNKS",
    "DEFAULT_MAX_SAMPLES",
    "JOB_RESULT_SCHEMA",
    "TIMELINE_SCHEMA",
    "Replay",
    "default_chunk_seconds",
    "simulate",
    "warm_up",
]

log = logging.getLogger(__name__)

#: Chunks a replay with a progress callback is cut into by default (over the submit span).
DEFAULT_CHUNKS = 200

#: Most timeline rows a replay writes by default; beyond it the sample interval doubles.
DEFAULT_MAX_SAMPLES = 100_000

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
}

#: Timeline columns, in order.
TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "time": pl.Float64(),
    "allocated_gpus": pl.Int32(),
    "allocated_milli": pl.Int64(),
    "pending_jobs": pl.Int32(),
    "running_jobs": pl.Int32(),
    "fragmented_gpus": pl.Int32(),
}

_REJECT_REASONS = {
    S.R_NO_MODEL: "no_model",
    S.R_POD_TOO_LARGE: "pod_too_large",
    S.R_GANG_TOO_LARGE: "gang_too_large",
}

_STATES = {S.S_FINISHED: "finished", S.S_REJECTED: "rejected", -1: "deadlocked"}

_VIOLATIONS = {
    S.E_GPU_MILLI_RANGE: "GPU {i} has free milli outside [0, 1000]",
    S.E_GPU_MEM_RANGE: "GPU {i} has free memory outside [0, its memory]",
    S.E_NODE_CPU: "node {i} has free CPU outside [0, its capacity]",
    S.E_NODE_MEM: "node {i} has free memory outside [0, its capacity]",
    S.E_GPU_MILLI_SUM: "GPU {i}'s free milli differs from 1000 minus the demands placed on it (or job {i} "
    "recorded a GPU outside its node)",
    S.E_GPU_MEM_SUM: "GPU {i}'s free memory differs from its memory minus the demands placed on it",
    S.E_NODE_CPU_SUM: "node {i}'s free CPU differs from its capacity minus the pods placed on it",
    S.E_NODE_MEM_SUM: "node {i}'s free memory differs from its capacity minus the pods placed on it",
    S.E_NODE_WHOLE: "node {i}'s wholly-free GPU count is out of step with its GPUs",
    S.E_NODE_MILLI: "node {i}'s free-milli sum is out of step with its GPUs",
    S.E_TOTALS: "cluster totals (free GPUs, allocated milli) are out of step with the GPUs",
    S.E_HISTOGRAM: "per-model aggregates of model {i} are out of step with the nodes",
    S.E_STATUS: "job {i} has an impossible state / pod count",
    S.E_COUNTS: "running/pending counts or the completion heap disagree with job states (job {i})",
    S.E_QUEUE: "the pending set disagrees with job states (class/job {i})",
    S.E_FINISH: "running job {i} should already have finished",
    S.E_INDEX: "the whole-GPU fit index is out of step with node {i}'s free GPUs",
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
    timeline
        Sampled cluster state (:data:`TIMELINE_SCHEMA`), one row at each ``k * sample_interval``.
    gpu_milli_seconds
        Integral of allocated milli-GPU over time, up to the end of the run
        (``stats["end_time"]``).
    window_gpu_milli_seconds
        The same integral restricted to the measurement window passed to
        :func:`simulate` (and to the run: nothing after the end time counts);
        None when no window was given.
    sample_interval
        The interval the timeline was sampled at: the one asked for, doubled
        as often as needed to stay within ``max_samples`` rows.
    stats
        ``events``, ``cycles``, ``placements_tried``, ``rng_draws``,
        ``end_time`` and ``kernel_seconds`` (wall time of the compiled loop, all chunks and
        progress calls included).
    """

    jobs: pl.DataFrame
    timeline: pl.DataFrame
    gpu_milli_seconds: float
    window_gpu_milli_seconds: float | None
    sample_interval: float
    stats: dict[str, float]


def default_chunk_seconds(job_float: np.ndarray) -> float:
    """Simulated seconds per chunk when the caller gives none: the submit span / :data:`DEFAULT_CHUNKS`.

    Parameters
    ----------
    job_float
        The compiled ``JF_*`` rows of the jobs.

    Returns
    -------
    float
        Span of the submit times over :data:`DEFAULT_CHUNKS`; when every job
        is submitted at once, the longest duration over it instead; ``inf``
        (one chunk) when that is 0 too.
    """
    submit = job_float[S.JF_SUBMIT]
    if submit.shape[0] == 0:
        return math.inf
    span = float(submit.max() - submit.min())
    if span <= 0.0:
        span = float(job_float[S.JF_DURATION].max())
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
) -> Replay:
    """Replay ``jobs`` on ``nodes`` under ``policy``.

    Parameters
    ----------
    jobs, nodes
        Validated canonical tables (``validate_jobs`` / ``validate_nodes``).
    policy
        Queue order, gang mode, placement, backfill and cycle period.
    seed
        Seed of the splitmix64 generator used by ``random`` placement (taken mod 2**64).
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
        Check the engine invariants after every cycle and the GPU-milli-second
        accounting identity at the end.
    progress
        Called with a :class:`~gpureplay.replay.progress.Progress` after each
        chunk of simulated time, and once more with ``finished=True`` at the
        end (also when the run stops on an error). None: no chunks, no calls.
    chunk_seconds
        Simulated seconds per chunk. Default: one chunk without ``progress``,
        else :func:`default_chunk_seconds` (the submit span / 200). Chunk ``k``
        ends at the first multiple of ``chunk_seconds`` at or after the next
        event, so each chunk processes at least one event time.

    Returns
    -------
    Replay
        Per-job outcome, timeline, GPU-milli-seconds and run statistics.

    Raises
    ------
    ValueError
        On a non-positive ``sample_interval``, ``max_samples`` or
        ``chunk_seconds``, a negative/NaN ``horizon``, or a window that is not
        ``0 <= start <= end`` with finite bounds.
    AssertionError
        With ``debug=True``, when an invariant is violated (what, and at which time).

    Notes
    -----
    The same inputs and seed always give identical results (DESIGN.md,
    "Determinism"), whatever the chunks: the engine stops only between event
    times and keeps all of its state (:func:`gpureplay.engine.loop.advance`).
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
    # No window: (inf, inf) overlaps no interval, so the kernel's window integral stays 0.
    window_start, window_end = (
        (math.inf, math.inf) if window is None else (float(window[0]), float(window[1]))
    )
    compiled = compile_replay(jobs, nodes, policy)
    rng = np.array([seed % 2**64, 0], dtype=np.uint64)
    started = time.perf_counter()
    job_reject = rejection_codes(compiled.rclass_int, compiled.rclass_mask, compiled.node_type)[
        compiled.job_int[S.J_RCLASS]
    ]
    inputs = (
        compiled.policy, compiled.session_interval, float(sample_interval), int(max_samples),
        math.inf if horizon is None else float(horizon), window_start, window_end, bool(debug),
        compiled.job_int, compiled.job_float,
        compiled.job_mask, np.ascontiguousarray(job_reject), compiled.arrival, compiled.class_int,
        compiled.class_mask, compiled.class_jobs, compiled.node_int, rng,
    )  # fmt: skip
    state = EngineState(
        *init_state(
            compiled.policy, compiled.job_int, compiled.class_int, compiled.node_int, compiled.num_models,
            compiled.hist_width, compiled.num_pods, compiled.num_slots, compiled.bitset_sizes,
        )
    )  # fmt: skip
    if chunk_seconds is None and progress is not None:
        chunk_seconds = default_chunk_seconds(compiled.job_float)
    if chunk_seconds is None or (progress is None and math.isinf(chunk_seconds)):
        _status, state = _advance(inputs, state, math.inf)
    else:
        state = _run_chunks(compiled, inputs, state, chunk_seconds, progress, horizon, started)
    kernel_seconds = time.perf_counter() - started
    err, clock = state.err, state.clock
    if err[0] != S.E_OK:
        what = _VIOLATIONS.get(int(err[0]), "invariant {i} violated").format(i=int(err[1]))
        raise AssertionError(f"engine invariant violated at t={clock[S.X_ERROR_T]!r}: {what}")
    gpu_milli_seconds = float(clock[S.X_INTEGRAL])
    end_time = float(clock[S.X_NOW])
    samples = int(state.cursor[S.L_SAMPLES])
    used_interval = float(sample_interval) * 2.0 ** int(state.cursor[S.L_WIDEN])
    if used_interval != sample_interval:
        log.warning(
            "timeline: more than max_samples=%d samples at sample_interval=%g s; sampled every %g s "
            "instead (k * %g s)",
            max_samples, sample_interval, used_interval, used_interval,
        )  # fmt: skip
    if debug:
        _check_accounting(
            compiled, state.job_dyn, state.job_time, state.pod_time, end_time, gpu_milli_seconds
        )
    return Replay(
        jobs=_job_results(compiled, job_reject, state.job_dyn, state.job_time, state.pod_node),
        timeline=_timeline(state.tl_time[:samples], state.tl_rows[:, :samples]),
        gpu_milli_seconds=gpu_milli_seconds,
        window_gpu_milli_seconds=None if window is None else float(clock[S.X_WINDOW_INTEGRAL]),
        sample_interval=used_interval,
        stats={
            "events": float(state.counters[S.K_EVENTS]),
            "cycles": float(state.counters[S.K_CYCLES]),
            "placements_tried": float(state.counters[S.K_TRIED]),
            "rng_draws": float(rng[1]),
            "end_time": end_time,
            "kernel_seconds": kernel_seconds,
        },
    )


def warm_up(policy: Policy, *, debug: bool = False) -> None:
    """Replay one job on one node under ``policy``, so numba compiles or loads every kernel now.

    Every kernel takes the same argument types whatever the trace, so this tiny
    replay readies them for the real one; a caller times it apart from the
    replay (``timing.json``'s ``compile_seconds``). It costs milliseconds when
    numba's cache is warm.
    """
    jobs = pl.DataFrame(
        {
            "job_id": [1], "job_name": [None], "submit_time": [0.0], "duration": [1.0], "num_pods": [1],
            "gpu_milli": [1000], "gpu_mem_mib": [None], "gpu_models": [None], "mig_profile": [None],
            "cpu_milli": [0], "mem_mib": [0], "queue": ["default"], "user": [None], "priority": [0],
            "preemptible": [True],
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
    simulate(jobs, nodes, policy, sample_interval=1.0, window=(0.0, 1.0), debug=debug)


def _advance(inputs: tuple[Any, ...], state: EngineState, t_stop: float) -> tuple[int, EngineState]:
    """One :func:`~gpureplay.engine.loop.advance` call: its outcome and the state with current buffers."""
    arguments: tuple[Any, ...] = (*inputs, *state, t_stop)
    status, tl_time, tl_rows = advance(*arguments)
    return int(status), state._replace(tl_time=tl_time, tl_rows=tl_rows)


def _run_chunks(
    compiled: CompiledReplay,
    inputs: tuple[Any, ...],
    state: EngineState,
    chunk_seconds: float,
    progress: Callable[[Progress], None] | None,
    horizon: float | None,
    started: float,
) -> EngineState:
    """Advance the engine chunk by chunk, reporting after each; the final state.

    Chunk boundaries are multiples of ``chunk_seconds``; after a pause the next
    boundary is the first one at or after the next event time, so a gap in the
    trace costs one call, not one per empty chunk.
    """
    submit = compiled.job_float[S.JF_SUBMIT]
    last_submit = float(submit.max()) if submit.shape[0] else 0.0
    if horizon is not None:
        last_submit = min(last_submit, horizon)
    total = int(compiled.job_int.shape[1])
    counters, clock, cursor = state.counters, state.clock, state.cursor
    k = 0
    status = S.ADV_PAUSED
    try:
        while status == S.ADV_PAUSED:
            k = max(k + 1, math.ceil(clock[S.X_NEXT_T] / chunk_seconds))
            t_stop = k * chunk_seconds
            if t_stop < clock[S.X_NEXT_T]:  # rounding of the division
                k += 1
                t_stop = k * chunk_seconds
            status, state = _advance(inputs, state, t_stop)
            if progress is not None and status == S.ADV_PAUSED:
                progress(_progress(counters, clock, cursor, total, last_submit, started, False))
    finally:
        if progress is not None:
            progress(_progress(counters, clock, cursor, total, last_submit, started, True))
    return state


def _progress(
    counters: np.ndarray,
    clock: np.ndarray,
    cursor: np.ndarray,
    total: int,
    last_submit: float,
    started: float,
    finished: bool,
) -> Progress:
    """The :class:`Progress` record of the engine's state now."""
    now = float(clock[S.X_NOW])
    # Every admitted job is pending, running, finished or rejected: done = admitted - pending - running.
    done = int(cursor[S.L_ARRIVAL] - counters[S.K_NPEND] - counters[S.K_NRUN])
    return Progress(
        sim_time=now,
        sim_end_estimate=max(last_submit, now),
        jobs_done=done,
        jobs_total=total,
        events=int(counters[S.K_EVENTS]),
        wall_seconds=time.perf_counter() - started,
        finished=finished,
    )


def _placed_pods(compiled: CompiledReplay, job_dyn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(job index, pod slot) of every placed pod."""
    pods = compiled.job_int[S.J_PODS]
    owner = np.repeat(np.arange(pods.shape[0], dtype=np.int64), pods)
    index = np.arange(owner.shape[0], dtype=np.int64) - compiled.job_int[S.J_POD0][owner]
    placed = index < job_dyn[S.D_PLACED][owner]
    return owner[placed], np.flatnonzero(placed)


def _check_accounting(
    compiled: CompiledReplay,
    job_dyn: np.ndarray,
    job_time: np.ndarray,
    pod_time: np.ndarray,
    end_time: float,
    gpu_milli_seconds: float,
) -> None:
    """The spec's identity: integral of allocated milli == sum over placed pods of hold time x milli."""
    owner, pods = _placed_pods(compiled, job_dyn)
    finished = job_dyn[S.D_STATUS][owner] == S.S_FINISHED
    until = np.where(finished, job_time[S.T_FINISH][owner], end_time)
    held = (until - pod_time[pods]) * compiled.job_int[S.J_MILLI][owner]
    accounted = float(held.sum())
    if not math.isclose(gpu_milli_seconds, accounted, rel_tol=1e-9, abs_tol=1e-6):
        raise AssertionError(
            f"GPU-milli-second accounting broken at end t={end_time!r}: integral {gpu_milli_seconds!r} "
            f"!= sum over jobs {accounted!r}"
        )


def _job_results(
    compiled: CompiledReplay,
    job_reject: np.ndarray,
    job_dyn: np.ndarray,
    job_time: np.ndarray,
    pod_node: np.ndarray,
) -> pl.DataFrame:
    status = job_dyn[S.D_STATUS]
    placed = job_dyn[S.D_PLACED]
    deadlocked = (status == S.S_QUEUED) & (placed > 0)
    started = (status == S.S_RUNNING) | (status == S.S_FINISHED)
    spanned = np.where(started, job_dyn[S.D_SPANNED], 0)
    if deadlocked.any():
        owner, pods = _placed_pods(compiled, job_dyn)
        held = pl.DataFrame({"job": owner, "node": pod_node[pods]}).filter(pl.Series(deadlocked[owner]))
        per_job = held.group_by("job").agg(pl.col("node").n_unique())
        spanned[per_job["job"].to_numpy()] = per_job["node"].to_numpy()
    state_code = np.where(deadlocked, -1, status)
    state = pl.Series("state", state_code, dtype=pl.Int64).replace_strict(
        _STATES, default="unfinished", return_dtype=pl.String
    )
    rejected_now = np.where(status == S.S_REJECTED, job_reject, S.R_NONE)
    reason = pl.Series("reject_reason", rejected_now, dtype=pl.Int64).replace_strict(
        _REJECT_REASONS, default=None, return_dtype=pl.String
    )
    return pl.DataFrame(
        {
            "job_id": compiled.job_int[S.J_ID],
            "start_time": np.where(started, job_time[S.T_START], np.nan),
            "finish_time": np.where(status == S.S_FINISHED, job_time[S.T_FINISH], np.nan),
            "state": state,
            "reject_reason": reason,
            "nodes_spanned": spanned,
            "held_milli": np.where(deadlocked, placed * compiled.job_int[S.J_MILLI], 0),
            "preemptions": np.zeros(status.shape[0], dtype=np.int32),
        },
        schema=JOB_RESULT_SCHEMA,
        nan_to_null=True,
    )


def _timeline(tl_time: np.ndarray, tl_rows: np.ndarray) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "time": tl_time,
            "allocated_gpus": tl_rows[S.TL_GPUS],
            "allocated_milli": tl_rows[S.TL_MILLI],
            "pending_jobs": tl_rows[S.TL_PENDING],
            "running_jobs": tl_rows[S.TL_RUNNING],
            "fragmented_gpus": tl_rows[S.TL_FRAGMENTED],
        },
        schema=TIMELINE_SCHEMA,
    )
