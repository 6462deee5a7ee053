"""Per-job and headline metrics of one run (docs/systems.md, "Research simulators").

Every figure here is defined over one **run span**, written once (:class:`RunSpan`):

- ``span_start`` = the first arrival, the least ``submit_time`` of the replayed jobs;
- ``span_end`` = the engine's end time (``Replay.stats["end_time"]``): the last
  event time it processed, or the ``horizon`` when the run was not over by
  then (a horizon is a time: the span never depends on the sample interval).

Jobs
----
- **admitted**: arrived during the run (``submit_time <= span_end``; with a
  horizon, later jobs never arrive: ``never_arrived``) and not rejected.
- wait (queueing delay) = first start - submit; JCT = finish - submit;
  run time = finish - first start (finished jobs only), as in ``jobs.parquet``.

Survivorship bias is avoided by **censoring**: a statistic over admitted jobs
includes the ones whose outcome the run did not see, with the value they had
reached at ``span_end`` (a lower bound of the true one), and the count of
such jobs is given beside it:

- ``wait_*`` (mean, median, p95, p99) over all admitted jobs; a job that never
  started counts ``span_end - submit`` (``wait_censored`` = how many; equal to
  ``never_started``, admitted jobs that never started, deadlocked ones included);
- ``jct_*`` over all admitted jobs; a job that did not finish (still pending or
  running at a horizon, or deadlocked) counts ``span_end - submit``
  (``jct_censored`` = how many);
- ``bounded_slowdown_mean`` (Feitelson) = mean over admitted jobs of
  ``max(1, jct / max(run, 10 s))`` with ``run`` = the measured run time of a
  finished job, the requested ``duration`` of any other (its censored JCT
  makes the figure a lower bound, counted by ``jct_censored``);
- ``makespan`` = ``max(finish) - span_start`` when every admitted job finished,
  else ``span_end - span_start`` (censored: then ``jct_censored > 0``); null
  when no job was admitted;
- ``gpu_allocation_rate`` = allocated GPU-seconds / (total GPUs x (span_end -
  span_start)), fractional pods counted by their milli-GPU share. Nothing is
  allocated before the first arrival and the integral stops at ``span_end``, so
  it lies in [0, 1]; null for an empty span or a cluster without GPUs.

The uncensored figures of earlier versions remain under explicit names:
``wait_mean_started`` (started jobs only) and ``jct_mean_finished``
(finished jobs only); they flatter a configuration that starves jobs.

Measurement window
------------------
Trace-replay studies measure a steady state, leaving out the warm-up (an
empty cluster filling) and the drain tail (no arrivals, the longest jobs
finishing). The window (``measure.start``, ``measure.end``; defaults: the first
and the last arrival) is closed ``[window_start, window_end]``, with
``window_end`` capped at ``span_end`` (nothing is simulated after it; a run that
ended before ``window_start`` leaves an empty window, ``window_end = window_start``):

- ``window_jobs``: jobs submitted in the window; ``window_wait_*``,
  ``window_jct_*``, ``window_bounded_slowdown_mean`` and their ``*_censored``
  counts are the figures above over the admitted ones among them (followed to
  ``span_end``, censored there);
- ``window_gpu_allocation_rate`` = allocated GPU-seconds inside the window
  (integrated exactly by the engine, ``Replay.window_gpu_milli_seconds``) /
  (total GPUs x (window_end - window_start)); null for an empty window.

Whole-run figures stay beside the window ones.

Preemption
----------
- ``preemptions``: evictions; ``preempted_jobs``: jobs evicted at least once;
  ``preemptions_per_job``: evictions per admitted job;
- ``lost_gpu_hours``: what the evictions cost, summed over jobs: GPUs x (work
  rolled back to the last checkpoint + restart overheads + grace periods
  held), as Lucid and Tiresias count preemption overhead (docs/systems.md, "Research simulators");
- ``goodput`` = useful GPU-time / allocated GPU-time (cluster level, docs/systems.md, "Research simulators"):
  useful is the work attempts kept (progress minus what was rolled back) times
  their GPUs; allocated is the integral of allocation over the run, so time
  lost to restarts, checkpoints rolled back, grace periods and pods held by a
  job that never ran all count against it; null when nothing was allocated;
- ``pending_time_mean``: mean over admitted jobs of the time spent pending,
  the first wait and every requeue after an eviction (up to ``span_end`` for a
  job still pending).

GPU sharing by replicas
-----------------------
Under time-slicing or MPS every GPU is ``replicas_per_gpu`` devices and the
allocation figures (``gpu_allocation_rate``, the timeline's
``allocated_fraction``) count devices, as the cluster reports
``nvidia.com/gpu``. What sharing costs is a stretch of run times
(docs/engine/devices.md, "GPU sharing by replicas"):

- ``sharing_slowdown_mean``, ``sharing_slowdown_p95``: over admitted jobs that
  made progress, ``(work + delay) / work`` (1 when never slowed);
- ``slowed_jobs``: jobs with a slowdown above 1;
- ``sharing_delay_hours``: the sum of the jobs' ``sharing_delay``, hours.

MIG
---
Under the device plugin's single strategy every MIG instance is one device:
the allocation figures count instances on MIG nodes (whole GPUs elsewhere),
and a job on an instance smaller than its demand is slowed (the sharing
figures above). ``mig_instances`` counts the instances; ``mig_stranded_pct``
is the share of the MIG GPUs' compute slices that no GPU pod of the workload
can ever use: slices outside every instance, and instances no job may take
(docs/engine/devices.md, "MIG instances"; constant under static layouts).
Under dynamic MIG (instances made per pod) ``mig_instances`` is 0 and
``mig_stranded_pct`` the mean share of the dynamic GPUs' memory slices the
timeline's ``mig_stranded_slices`` counts (docs/engine/devices.md,
"Slice-mask MIG"). With ``mig_reconfigure: idle``, ``mig_reconfigurations``
counts the idle GPUs given a new config and ``mig_reconfigure_gpu_h`` the
GPU-hours they served no pod meanwhile (docs/engine/devices.md,
"Re-partitioning idle GPUs"); both 0 otherwise.

Topology
--------
``multi_node_jobs`` counts the admitted jobs whose pods spanned more than one
node (when their last attempt started); ``one_nvlink_pct``, ``one_rack_pct``
and ``one_spine_pct`` the share of them whose pods stayed within one NVLink
domain, rack or spine (null when there are none); ``spread_gpu_hours`` the
GPU-hours spreading added to runs: the sum over jobs of GPUs x
``spread_delay`` (docs/engine/placement.md, "What spreading costs"; 0 unless a
``scheduler.spread_rate_*`` factor is below 1); ``multi_pod_wait_mean`` the
mean censored wait of the admitted jobs of more than one pod (null when there
are none; by pods asked, not by placement, so every configuration counts the
same jobs): what a topology-aware scheduler's tighter placement costs them.

Kubelet admission
-----------------
``failed`` counts the jobs whose pods failed kubelet admission
(TopologyAffinityError) more often than their ``backoff_limit``; they never
ran, and like rejected jobs they are left out of the wait, JCT and slowdown
figures. ``admission_failures`` sums the kubelet rejections over all jobs and
``admission_failed_jobs`` counts the jobs rejected at least once
(docs/engine/placement.md, "Kubelet Topology Manager"); all 0 without a
``scheduler.topology_manager`` policy.

Queues
------
``queues``, ``queue_slowdown_jain``, ``queue_wait_mean_max`` and
``queue_ftf_max``: the fairness across the jobs' queues
(:mod:`gpureplay.results.queue_summary`, which also gives each queue's
figures, ``queue_summary.parquet``). ``ftf_max`` and ``ftf_unfair_share``: the
jobs' finish-time fairness (Themis; the largest ``rho`` and the share of jobs
with ``rho > 1``, :mod:`gpureplay.results.finish_time_fairness`), over the
cluster's devices.

What the GPUs did
-----------------
``busy_gpu_hours``, ``gpu_busy_rate``, ``idle_allocated_gpu_hours``, ``idle_alerts``,
``idle_alert_gpu_hours``, ``energy_kwh``, ``power_mean_w``, ``energy_estimated_share``, ``cost`` and
``cost_per_useful_gpu_hour``: from the jobs' usage and the attempts, defined in
:mod:`gpureplay.results.gpu_usage` (passed in as ``usage``; null without it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import polars as pl
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.nodes import AnyNode, BooleanNode, FloatNode, IntegerNode

from gpureplay.errors import InputError
from gpureplay.results.finish_time_fairness import fairness_figures, finish_time_fairness
from gpureplay.results.gpu_usage import empty_figures
from gpureplay.results.queue_summary import queue_fairness, queue_summary
from gpureplay.results.schemas import (
    ATTEMPTS_RESULT_SCHEMA,
    JOBS_RESULT_SCHEMA,
    SUMMARY_METRICS_SCHEMA,
    TIMELINE_SCHEMA,
)
from gpureplay.results.writer import conform

#: Run-time floor of the bounded slowdown, seconds (Feitelson's usual tau).
SLOWDOWN_TAU = 10.0


@dataclass(frozen=True)
class RunSpan:
    """The interval a run's whole-run figures are measured over (module docstring).

    Attributes
    ----------
    start
        First arrival: the least ``submit_time`` of the replayed jobs.
    end
        The engine's end time, ``Replay.stats["end_time"]``.
    """

    start: float
    end: float

    @property
    def seconds(self) -> float:
        """Length of the span (0 when the run ended before the first arrival, e.g. at a horizon)."""
        return max(0.0, self.end - self.start)


def run_span(jobs: pl.DataFrame, end_time: float) -> RunSpan:
    """The run span of ``jobs`` replayed until ``end_time`` (``Replay.stats["end_time"]``)."""
    first = jobs["submit_time"].min()
    return RunSpan(float(first) if first is not None else 0.0, float(end_time))  # type: ignore[arg-type]


@dataclass(frozen=True)
class MeasurementWindow:
    """The declared measurement window ``[start, end]``, seconds of the replayed trace."""

    start: float
    end: float

    def within(self, span: RunSpan) -> MeasurementWindow:
        """The window as measured: its end capped at the end of the run (empty if the run ended first)."""
        return MeasurementWindow(self.start, max(self.start, min(self.end, span.end)))

    @property
    def seconds(self) -> float:
        """Length of the window (0 when empty)."""
        return max(0.0, self.end - self.start)


def measurement_window(jobs: pl.DataFrame, start: float | None, end: float | None) -> MeasurementWindow:
    """Resolve ``measure.start`` / ``measure.end`` against the replayed jobs.

    Parameters
    ----------
    jobs
        The jobs that will be replayed (after the workload transforms).
    start, end
        Seconds of the replayed trace; None = the first / the last arrival.

    Returns
    -------
    MeasurementWindow
        ``[start, end]`` with the defaults filled in.

    Raises
    ------
    InputError
        Naming ``measure.start`` or ``measure.end`` when a value is negative,
        not finite, or the window would end before it starts.
    """
    for key, value in (("measure.start", start), ("measure.end", end)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise InputError.single(f"must be a finite number of seconds >= 0 or null (found {value})", key)
    first = float(jobs["submit_time"].min()) if jobs.height else 0.0  # type: ignore[arg-type]
    last = float(jobs["submit_time"].max()) if jobs.height else 0.0  # type: ignore[arg-type]
    lo = first if start is None else float(start)
    hi = last if end is None else float(end)
    if hi < lo:
        which = "measure.end" if end is not None else "measure.start"
        raise InputError.single(
            f"the measurement window would end ({hi:g} s{'' if end is not None else ', the last arrival'}) "
            f"before it starts ({lo:g} s{'' if start is not None else ', the first arrival'})",
            which,
        )
    return MeasurementWindow(lo, hi)


def job_results(jobs: pl.DataFrame, outcome: pl.DataFrame) -> pl.DataFrame:
    """Join the replayed outcome to the canonical jobs and derive per-job metrics.

    Parameters
    ----------
    jobs
        The canonical jobs that were replayed.
    outcome
        The engine's per-job table (``Replay.jobs``), same ``job_id`` values.

    Returns
    -------
    polars.DataFrame
        :data:`~gpureplay.results.schemas.JOBS_RESULT_SCHEMA`. ``wait_time``,
        ``jct`` and ``run_time`` are what happened (null when it did not);
        the summary's censored figures are derived from them and the run span.
    """
    if "job_name" not in jobs.columns:  # a table built before job names existed: no names
        jobs = jobs.with_columns(pl.lit(None, pl.String).alias("job_name"))
    if "priority_class" not in jobs.columns:  # no PriorityClass mix was applied
        jobs = jobs.with_columns(pl.lit(None, pl.String).alias("priority_class"))
    # A table built before topology requests (or slices) existed: none.
    for column in ("topology_mode", "topology_level", "topology_slice_level", "topology_slice_size"):
        if column not in jobs.columns:
            jobs = jobs.with_columns(
                pl.lit(None, pl.Int32 if column.endswith("size") else pl.String).alias(column)
            )
    df = jobs.select(
        "job_id",
        "job_name",
        "queue",
        "user",
        "priority",
        "priority_class",
        "preemptible",
        "num_pods",
        "gpu_milli",
        "submit_time",
        "duration",
        "topology_mode",
        "topology_level",
        "topology_slice_level",
        "topology_slice_size",
    ).join(outcome, on="job_id", how="left", validate="1:1")
    finished = pl.col("state") == "finished"
    return conform(
        df.with_columns(
            gpus=pl.col("num_pods").cast(pl.Float64) * pl.col("gpu_milli") / 1000.0,
            wait_time=pl.col("start_time") - pl.col("submit_time"),
            jct=pl.when(finished).then(pl.col("finish_time") - pl.col("submit_time")),
            run_time=pl.when(finished).then(pl.col("finish_time") - pl.col("start_time")),
        ),
        JOBS_RESULT_SCHEMA,
    )


def attempt_results(attempts: pl.DataFrame) -> pl.DataFrame:
    """The engine's attempt records (``Replay.attempts``) with the result schema of ``attempts.parquet``."""
    return conform(attempts, ATTEMPTS_RESULT_SCHEMA)


#: Timeline columns of what the GPUs did (:mod:`gpureplay.results.gpu_usage`), null when not given.
USAGE_TIMELINE_COLUMNS: tuple[str, ...] = ("busy_gpus", "busy_fraction", "power_w")


def timeline_results(
    timeline: pl.DataFrame, total_gpus: int, usage: dict[str, Any] | None = None
) -> pl.DataFrame:
    """Add the allocated fraction of GPU capacity (``total_gpus`` devices) and fix the schema.

    ``usage`` holds the columns of :data:`USAGE_TIMELINE_COLUMNS`, one value per sample
    (:func:`gpureplay.results.gpu_usage.busy_at`); columns it lacks are null.
    """
    fraction = pl.col("allocated_milli") / (1000.0 * total_gpus) if total_gpus else pl.lit(None, pl.Float64)
    given = usage or {}
    columns = [
        pl.Series(name, given[name], dtype=pl.Float64)
        if name in given
        else pl.lit(None, pl.Float64).alias(name)
        for name in USAGE_TIMELINE_COLUMNS
    ]
    return conform(timeline.with_columns(columns).with_columns(allocated_fraction=fraction), TIMELINE_SCHEMA)


def admitted_jobs(jobs: pl.DataFrame, span: RunSpan) -> pl.DataFrame:
    """Admitted jobs with censored wait, JCT and bounded slowdown (module docstring).

    Adds ``wait_c``, ``jct_c``, ``slowdown_c``, ``started`` and ``finished`` to
    the rows of :func:`job_results` that were neither rejected nor failed and
    were submitted by ``span.end``.
    """
    end = pl.lit(span.end, pl.Float64)
    started = pl.col("start_time").is_not_null()
    finished = pl.col("state") == "finished"
    run = pl.when(finished).then(pl.col("run_time")).otherwise(pl.col("duration"))
    return (
        jobs.filter(~pl.col("state").is_in(["rejected", "failed"]) & (pl.col("submit_time") <= span.end))
        .with_columns(
            wait_c=pl.when(started).then(pl.col("wait_time")).otherwise(end - pl.col("submit_time")),
            jct_c=pl.when(finished).then(pl.col("jct")).otherwise(end - pl.col("submit_time")),
            started=started,
            finished=finished,
        )
        .with_columns(
            slowdown_c=pl.max_horizontal(
                pl.lit(1.0), pl.col("jct_c") / pl.max_horizontal(run, pl.lit(SLOWDOWN_TAU))
            )
        )
    )


def _job_figures(admitted: pl.DataFrame, prefix: str) -> dict[str, Any]:
    """Censored wait/JCT/slowdown statistics of ``admitted`` (output of :func:`admitted_jobs`)."""
    row: dict[str, Any] = {}
    for name, column, seen in (("wait", "wait_c", "started"), ("jct", "jct_c", "finished")):
        values = admitted[column]
        row[f"{prefix}{name}_mean"] = values.mean()
        row[f"{prefix}{name}_median"] = values.median()
        row[f"{prefix}{name}_p95"] = values.quantile(0.95, "linear")
        row[f"{prefix}{name}_p99"] = values.quantile(0.99, "linear")
        row[f"{prefix}{name}_censored"] = admitted.height - int(admitted[seen].sum())
    row[f"{prefix}bounded_slowdown_mean"] = admitted["slowdown_c"].mean()
    return row


def _rate(milli_seconds: float | None, total_gpus: int, seconds: float) -> float | None:
    """Allocated GPU-seconds over capacity x time; None when either is zero or unknown."""
    if milli_seconds is None or total_gpus <= 0 or seconds <= 0:
        return None
    return (milli_seconds / 1000.0) / (total_gpus * seconds)


def summary_metrics(
    jobs: pl.DataFrame,
    timeline: pl.DataFrame,
    *,
    span: RunSpan,
    window: MeasurementWindow,
    gpu_milli_seconds: float,
    window_gpu_milli_seconds: float | None,
    total_gpus: int,
    sample_interval: float,
    attempts: pl.DataFrame | None = None,
    replicas_per_gpu: int = 1,
    devices: int | None = None,
    mig_instances: int = 0,
    mig_stranded_pct: float | None = None,
    mig_reconfigurations: int = 0,
    mig_reconfigure_gpu_h: float = 0.0,
    per_queue: pl.DataFrame | None = None,
    usage: dict[str, Any] | None = None,
) -> pl.DataFrame:
    """The one-row table of headline metrics (``SUMMARY_METRICS_SCHEMA``; definitions: module docstring).

    Parameters
    ----------
    jobs
        :func:`job_results` of the run.
    timeline
        :func:`timeline_results` of the run.
    span
        :func:`run_span` of the run.
    window
        The declared measurement window (:func:`measurement_window`); it is
        capped at ``span.end`` here.
    gpu_milli_seconds, window_gpu_milli_seconds
        ``Replay.gpu_milli_seconds`` and ``Replay.window_gpu_milli_seconds``
        (the latter replayed with ``window=(window.start, window.end)``).
    total_gpus
        GPUs in the cluster.
    sample_interval
        ``Replay.sample_interval``: the interval the timeline was sampled at.
    attempts
        :func:`attempt_results` of the run, for ``goodput`` (null without it).
    replicas_per_gpu
        Devices each GPU is advertised as (time-slicing / MPS ``replicas``; 1:
        no sharing by replicas): the allocation rates count devices.
    devices
        ``nvidia.com/gpu`` devices of the cluster when they are not
        ``total_gpus * replicas_per_gpu`` (MIG instances: ``Replay.stats["devices"]``).
    mig_instances, mig_stranded_pct
        ``Replay.stats``' static MIG figures (module docstring, "MIG").
    mig_reconfigurations, mig_reconfigure_gpu_h
        ``Replay.stats``' MIG re-partitioning figures (module docstring, "MIG").
    per_queue
        :func:`gpureplay.results.queue_summary.queue_summary` of the run, for the fairness
        across queues; computed here when not given.
    usage
        :func:`gpureplay.results.gpu_usage.usage_figures` of the run (what the GPUs did: busy
        GPU-hours, idle alerts, energy, cost); null columns when not given.
    """
    if devices is None:
        devices = total_gpus * replicas_per_gpu
    admitted = admitted_jobs(jobs, span)
    finished = admitted.filter(pl.col("finished"))
    measured = window.within(span)
    in_window = (pl.col("submit_time") >= measured.start) & (pl.col("submit_time") <= measured.end)
    if admitted.height == 0:
        makespan = None
    elif finished.height == admitted.height:
        makespan = float(finished["finish_time"].max()) - span.start  # type: ignore[arg-type]
    else:
        makespan = span.seconds
    row: dict[str, Any] = {
        "jobs": jobs.height,
        **{
            state: jobs.filter(pl.col("state") == state).height
            for state in ("finished", "rejected", "deadlocked", "unfinished")
        },
        "never_started": admitted.height - int(admitted["started"].sum()),
        "never_arrived": jobs.filter(pl.col("submit_time") > span.end).height,
        "total_gpus": total_gpus,
        "span_start": span.start,
        "span_end": span.end,
        **_job_figures(admitted, ""),
        "wait_mean_started": admitted.filter(pl.col("started"))["wait_time"].mean(),
        "jct_mean_finished": finished["jct"].mean(),
        "makespan": makespan,
        "gpu_allocation_rate": _rate(gpu_milli_seconds, devices, span.seconds),
        "fragmented_gpus_mean": timeline["fragmented_gpus"].mean() if timeline.height else None,
        "sample_interval_used": sample_interval,
        "window_start": measured.start,
        "window_end": measured.end,
        "window_jobs": jobs.filter(in_window).height,
        **_job_figures(admitted.filter(in_window), "window_"),
        "window_gpu_allocation_rate": _rate(window_gpu_milli_seconds, devices, measured.seconds),
        **_preemption_figures(admitted, attempts, gpu_milli_seconds, span),
        "replicas_per_gpu": replicas_per_gpu,
        **_sharing_figures(admitted),
        **_spread_figures(admitted),
        "mig_instances": mig_instances,
        "mig_stranded_pct": mig_stranded_pct,
        "mig_reconfigurations": mig_reconfigurations,
        "mig_reconfigure_gpu_h": mig_reconfigure_gpu_h,
        "failed": jobs.filter(pl.col("state") == "failed").height,
        "admission_failures": int(jobs["admission_failures"].sum()),
        "admission_failed_jobs": jobs.filter(pl.col("admission_failures") > 0).height,
        **_pods_ready_figures(jobs, attempts),
        **fairness_figures(finish_time_fairness(admitted, devices)),
        **queue_fairness(
            queue_summary(jobs, admitted, attempts, devices=devices) if per_queue is None else per_queue
        ),
        **(empty_figures() if usage is None else usage),
    }
    return pl.DataFrame([row], schema=SUMMARY_METRICS_SCHEMA)


def _pods_ready_figures(jobs: pl.DataFrame, attempts: pl.DataFrame | None) -> dict[str, float | int]:
    # Kueue's waitForPodsReady: timeouts, and the GPU-time their partly placed pods held.
    # (Result folders written before the column existed have none.)
    held = 0.0
    if attempts is not None and attempts.height:
        timed_out = attempts.filter(pl.col("end_reason").cast(pl.String) == "pods_ready_timeout")
        held = float(timed_out["gpu_seconds"].sum()) / 3600.0
    timeouts = int(jobs["pods_ready_timeouts"].sum()) if "pods_ready_timeouts" in jobs.columns else 0
    return {
        "pods_ready_timeouts": timeouts,
        "pods_ready_timeout_gpu_h": held,
    }


def _preemption_figures(
    admitted: pl.DataFrame, attempts: pl.DataFrame | None, gpu_milli_seconds: float, span: RunSpan
) -> dict[str, Any]:
    """Evictions, their cost, goodput and pending time (module docstring, "Preemption")."""
    useful = None
    if attempts is not None and gpu_milli_seconds > 0:
        kept = attempts.select(((pl.col("progress") - pl.col("work_lost")) * pl.col("gpus")).sum()).item()
        useful = float(kept) / (gpu_milli_seconds / 1000.0)
    pending = admitted.select(
        pl.when(pl.col("pending_time").is_null())
        .then(pl.lit(span.end) - pl.col("submit_time"))
        .otherwise(pl.col("pending_time"))
        .mean()
    ).item()
    evictions = int(admitted["preemptions"].sum())
    return {
        "preemptions": evictions,
        "preempted_jobs": admitted.filter(pl.col("preemptions") > 0).height,
        "preemptions_per_job": evictions / admitted.height if admitted.height else None,
        "lost_gpu_hours": float(admitted["lost_gpu_seconds"].sum()) / 3600.0,
        "goodput": useful,
        "pending_time_mean": pending,
    }


def _sharing_figures(admitted: pl.DataFrame) -> dict[str, Any]:
    """Slowdown from GPU sharing by replicas (module docstring, "GPU sharing by replicas")."""
    worked = admitted["sharing_slowdown"].drop_nulls()
    return {
        "slowed_jobs": int((worked > 1.0).sum()),
        "sharing_slowdown_mean": worked.mean(),
        "sharing_slowdown_p95": worked.quantile(0.95, "linear"),
        "sharing_delay_hours": float(admitted["sharing_delay"].sum()) / 3600.0,
    }


def _spread_figures(admitted: pl.DataFrame) -> dict[str, Any]:
    """Where multi-node jobs ran and what spreading cost them (module docstring, "Topology")."""
    multi = admitted.filter(pl.col("nodes_spanned") > 1)

    def within(column: str) -> float | None:
        return 100.0 * float((multi[column] == 1).mean()) if multi.height else None  # type: ignore[arg-type]

    return {
        "multi_node_jobs": multi.height,
        "one_nvlink_pct": within("nvlink_domains_spanned"),
        "one_rack_pct": within("racks_spanned"),
        "one_spine_pct": within("spines_spanned"),
        "spread_gpu_hours": float((admitted["gpus"] * admitted["spread_delay"]).sum()) / 3600.0,
        "multi_pod_wait_mean": admitted.filter(pl.col("num_pods") > 1)["wait_c"].mean(),
    }


def _column(node: Any, value: Any) -> tuple[pl.DataType, Any]:
    """dtype and value of one config leaf: the declared type of a typed node, else the value's own."""
    if isinstance(value, ListConfig | DictConfig):
        return pl.String(), json.dumps(OmegaConf.to_container(value, resolve=True), sort_keys=True)
    declared: pl.DataType | None = None
    if isinstance(node, BooleanNode):
        declared = pl.Boolean()
    elif isinstance(node, IntegerNode):
        declared = pl.Int64()
    elif isinstance(node, FloatNode):
        declared = pl.Float64()
    elif not isinstance(node, AnyNode):  # str, enum, path nodes
        declared = pl.String()
    if value is None:
        return declared or pl.String(), None
    if declared is None:  # an untyped node: the value's own type
        if isinstance(value, bool):
            declared = pl.Boolean()
        elif isinstance(value, int):
            declared = pl.Int64()
        elif isinstance(value, float):
            declared = pl.Float64()
        else:
            declared = pl.String()
    if declared == pl.String():
        value = value.name if hasattr(value, "name") and not isinstance(value, str) else str(value)
    elif declared == pl.Float64():
        value = float(value)
    return declared, value


def _flatten_typed(cfg: DictConfig, prefix: str = "") -> dict[str, tuple[pl.DataType, Any]]:
    """Flatten a composed config into ``{"a.b": (dtype, value)}`` (see :func:`config_frame`)."""
    flat: dict[str, tuple[pl.DataType, Any]] = {}
    for key in cfg:
        name = f"{prefix}{key!s}"
        node = cfg._get_node(key)
        value = cfg[key]
        if isinstance(value, DictConfig) and len(value) > 0:
            flat.update(_flatten_typed(value, f"{name}."))
        else:
            flat[name] = _column(node, value)
    return flat


def config_frame(cfg: DictConfig) -> pl.DataFrame:
    """One row of flattened config keys (``"scheduler.name"``, ``"seed"``, ...), each keeping its type.

    This is the left part of ``summary.parquet``. A key's dtype is the type its
    schema declares (``seed`` Int64, ``horizon`` Float64 even when null,
    booleans Boolean, enums and text String); a key without a declared type
    takes its value's type, and String when null. Lists and empty mappings are
    written as JSON text. Runs stack with ``pl.concat(..., how="diagonal_relaxed")``.

    Examples
    --------
    >>> from omegaconf import OmegaConf
    >>> row = config_frame(OmegaConf.create({"trace": {"name": "philly", "id": None}, "seed": 3}))
    >>> dict(row.schema)
    {'trace.name': String, 'trace.id': String, 'seed': Int64}
    """
    columns = _flatten_typed(cfg)
    return pl.DataFrame(
        [{name: value for name, (_, value) in columns.items()}],
        schema={name: dtype for name, (dtype, _) in columns.items()},
    )
