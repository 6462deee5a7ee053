"""The headline metrics a report shows, how each is shown, and which one a sentence states.

A run's ``summary.parquet`` holds each delay metric twice: over the whole run
(first arrival to the end of the run) and over the *measurement window*
(by default the jobs submitted between the first and the last arrival, with
GPU allocation over that interval), as trace-replay studies report it: the
warm-up and the drain tail, where the last long jobs run on an emptying
cluster, are left out. The report shows both, and its sentences compare the
window.

Waits and JCTs count every admitted job: a job that never started (or never
finished) is *censored* at the run's end, its value a lower bound. Each such
figure has a count of censored values beside it, so a configuration that
starves jobs cannot look better by dropping them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

#: Prefix of measurement-window columns in ``summary.parquet``.
WINDOW_PREFIX = "window_"

#: Over what a delay metric is taken: the measurement window or the whole run.
Scope = Literal["window", "run"]


@dataclass(frozen=True)
class Metric:
    """A headline metric: its ``summary.parquet`` column and how to show it.

    Attributes
    ----------
    column
        Column of the summary table.
    title
        Table header, with the display unit.
    phrase
        How a sentence names it ("p95 wait").
    better
        ``"lower"`` or ``"higher"`` when one direction is an improvement,
        ``None`` for counts that describe the input (no effect is stated).
    scale
        Stored value / scale = shown value (3600: seconds shown as hours).
    censored
        Column counting this metric's censored values (jobs that never
        started or never finished, counted up to the run's end), or None.
    count
        Whole numbers (jobs): shown without decimals when seeds agree.
    min_change
        Smallest change, in stored units, worth a sentence when the baseline
        is zero and no relative change exists (0 -> 179 deadlocked jobs).
    """

    column: str
    title: str
    phrase: str
    better: Literal["lower", "higher"] | None
    scale: float = 1.0
    censored: str | None = None
    count: bool = False
    min_change: float = 0.0

    @property
    def scope(self) -> Scope:
        """``"window"`` for a measurement-window column, ``"run"`` for a whole-run one."""
        return "window" if self.column.startswith(WINDOW_PREFIX) else "run"

    @property
    def family(self) -> str:
        """The metric without its scope: ``window_wait_mean`` and ``wait_mean`` are both ``wait_mean``."""
        return self.column.removeprefix(WINDOW_PREFIX)


def _delays(prefix: str) -> tuple[Metric, ...]:
    wait, jct = f"{prefix}wait_censored", f"{prefix}jct_censored"
    return (
        Metric(f"{prefix}wait_mean", "mean wait (h)", "mean wait", "lower", 3600.0, wait, min_change=60.0),
        Metric(f"{prefix}wait_p95", "p95 wait (h)", "p95 wait", "lower", 3600.0, wait, min_change=60.0),
        Metric(f"{prefix}jct_mean", "mean JCT (h)", "mean JCT", "lower", 3600.0, jct, min_change=60.0),
        Metric(f"{prefix}jct_p95", "p95 JCT (h)", "p95 JCT", "lower", 3600.0, jct, min_change=60.0),
        Metric(
            f"{prefix}bounded_slowdown_mean",
            "mean bounded slowdown",
            "mean bounded slowdown",
            "lower",
            min_change=0.01,
        ),
        Metric(
            f"{prefix}gpu_allocation_rate",
            "GPU allocation (%)",
            "GPU allocation",
            "higher",
            0.01,
            min_change=0.001,
        ),
    )


#: Delay and allocation metrics over the measurement window (the sentences' default).
WINDOW_METRICS: tuple[Metric, ...] = (
    Metric("window_jobs", "jobs", "jobs in the window", None, count=True),
    *_delays(WINDOW_PREFIX),
)

#: The same over the whole run (first arrival to the end of the run).
RUN_METRICS: tuple[Metric, ...] = (Metric("jobs", "jobs", "jobs", None, count=True), *_delays(""))

#: What became of the jobs, and whole-run properties without a window variant.
OUTCOME_METRICS: tuple[Metric, ...] = (
    Metric("jobs", "jobs", "jobs", None, count=True),
    Metric("finished", "finished", "finished jobs", "higher", count=True, min_change=1.0),
    Metric("never_started", "never started", "jobs never started", "lower", count=True, min_change=1.0),
    Metric("deadlocked", "deadlocked", "deadlocked jobs", "lower", count=True, min_change=1.0),
    # Rejection is decided against the empty cluster, so it never differs between schedulers;
    # jobs left running at a horizon are counted, not compared (never_started says who starved).
    Metric("rejected", "rejected", "rejected jobs", None, count=True),
    Metric("unfinished", "unfinished", "unfinished jobs", None, count=True),
    Metric("makespan", "makespan (h)", "makespan", "lower", 3600.0, min_change=60.0),
    Metric("fragmented_gpus_mean", "fragmented GPUs (mean)", "fragmented GPUs", "lower", min_change=1.0),
)

#: What evictions cost (runs with priority preemption; zero elsewhere).
PREEMPTION_METRICS: tuple[Metric, ...] = (
    Metric("preemptions", "evictions", "evictions", "lower", count=True, min_change=1.0),
    Metric("preempted_jobs", "jobs evicted", "jobs evicted", "lower", count=True, min_change=1.0),
    Metric("lost_gpu_hours", "lost GPU-hours", "GPU-hours lost to evictions", "lower", min_change=0.1),
    Metric("goodput", "goodput (%)", "goodput", "higher", 0.01, min_change=0.0001),
    Metric(
        "pending_time_mean",
        "mean pending, requeues incl. (h)",
        "mean pending time (requeues included)",
        "lower",
        3600.0,
        min_change=60.0,
    ),
)

#: What GPU sharing costs (time-slicing, MPS, MIG instances; 1 and 0 elsewhere).
SHARING_METRICS: tuple[Metric, ...] = (
    Metric("replicas_per_gpu", "replicas per GPU", "replicas per GPU", None, count=True),
    Metric("slowed_jobs", "jobs slowed", "jobs slowed by sharing", "lower", count=True, min_change=1.0),
    Metric(
        "sharing_slowdown_mean",
        "mean sharing slowdown",
        "mean slowdown from sharing",
        "lower",
        min_change=0.01,
    ),
    Metric(
        "sharing_slowdown_p95", "p95 sharing slowdown", "p95 slowdown from sharing", "lower", min_change=0.01
    ),
    Metric(
        "sharing_delay_hours",
        "run time added (h)",
        "run time added by sharing",
        "lower",
        min_change=0.1,
    ),
    Metric("mig_instances", "MIG instances", "MIG instances", None, count=True),
    Metric(
        "mig_stranded_pct",
        "MIG slices stranded (%)",
        "share of MIG compute slices no job can use",
        "lower",
        min_change=0.1,
    ),
    Metric("mig_reconfigurations", "MIG re-partitionings", "MIG re-partitionings", None, count=True),
    Metric(
        "mig_reconfigure_gpu_h",
        "re-partitioning downtime (GPU-h)",
        "GPU-hours idle GPUs spent being re-partitioned",
        "lower",
        min_change=0.01,
    ),
)

#: Where multi-node jobs ran and what spreading cost them (docs/engine/placement.md, "What spreading costs").
TOPOLOGY_METRICS: tuple[Metric, ...] = (
    Metric("multi_node_jobs", "multi-node jobs", "multi-node jobs", None, count=True),
    Metric(
        "one_nvlink_pct",
        "in one NVLink domain (%)",
        "multi-node jobs in one NVLink domain",
        "higher",
        min_change=0.1,
    ),
    Metric("one_rack_pct", "in one rack (%)", "multi-node jobs in one rack", "higher", min_change=0.1),
    Metric("one_spine_pct", "in one spine (%)", "multi-node jobs in one spine", "higher", min_change=0.1),
    Metric(
        "spread_gpu_hours", "GPU-h lost to spreading", "GPU-hours lost to spreading", "lower", min_change=0.1
    ),
    Metric(
        "multi_pod_wait_mean",
        "multi-pod jobs' mean wait (h)",
        "mean wait of multi-pod jobs",
        "lower",
        3600.0,
        min_change=60.0,
    ),
)

#: NUMA alignment at kubelet admission (docs/engine/placement.md, "Kubelet Topology Manager").
NUMA_METRICS: tuple[Metric, ...] = (
    Metric("admission_failures", "kubelet rejections", "rejections", "lower", count=True, min_change=1.0),
    Metric(
        "admission_failed_jobs",
        "jobs rejected by a kubelet",
        "jobs a kubelet rejected",
        "lower",
        count=True,
        min_change=1.0,
    ),
    Metric("failed", "failed (backoffLimit)", "failed jobs", "lower", count=True, min_change=1.0),
    # Shown beside them: a NUMA-aware scheduler rejects at arrival what the kubelets would fail.
    *(m for m in OUTCOME_METRICS if m.column == "rejected"),
)

#: Fairness across the jobs' queues (gpureplay.results.queue_summary).
QUEUE_METRICS: tuple[Metric, ...] = (
    Metric("queues", "queues", "queues", None, count=True),
    Metric(
        "queue_slowdown_jain",
        "Jain's index of queue slowdowns",
        "Jain's index of the queues' slowdowns",
        "higher",
        min_change=0.001,
    ),
    Metric(
        "queue_wait_mean_max",
        "worst queue's mean wait (h)",
        "worst queue's mean wait",
        "lower",
        3600.0,
        min_change=60.0,
    ),
    # Shown, not compared in sentences: a maximum over tens of thousands of jobs (and a mean that a few
    # short jobs held for hours decide) swings by orders of magnitude between runs; the share above 1 is
    # the comparable figure.
    Metric("queue_ftf_max", "worst queue's mean finish-time fairness", "worst queue's mean FTF", None),
    Metric("ftf_max", "largest finish-time fairness", "largest finish-time fairness", None),
    Metric(
        "ftf_unfair_share",
        "jobs with finish-time fairness > 1 (%)",
        "share of jobs slower than on their fair share",
        "lower",
        0.01,
        min_change=0.001,
    ),
)

#: Censoring counts: summarised across seeds like the metrics, shown beside them.
CENSORED_METRICS: tuple[Metric, ...] = tuple(
    Metric(f"{prefix}{what}_censored", f"censored {what}s", f"censored {what}s", None, count=True)
    for prefix in ("", WINDOW_PREFIX)
    for what in ("wait", "jct")
)

#: Every metric a report summarises across seeds, each once.
#: What the GPUs did, not only what was allocated (gpureplay.results.gpu_usage), over the whole run: busy
#: GPU-time, allocations left idle and the idle alerts they raise, energy and cost.
USAGE_METRICS: tuple[Metric, ...] = (
    Metric("gpu_allocation_rate", "GPU allocation (%)", "GPU allocation", "higher", 0.01, min_change=0.001),
    Metric("gpu_busy_rate", "GPUs busy (%)", "GPU busy share", "higher", 0.01, min_change=0.001),
    Metric(
        "idle_allocated_gpu_hours",
        "allocated but idle (GPU-h)",
        "GPU-hours allocated but idle",
        "lower",
        min_change=0.1,
    ),
    Metric("idle_alerts", "idle alerts", "idle-GPU alerts", "lower", count=True, min_change=1.0),
    Metric(
        "idle_alert_gpu_hours",
        "GPU-h under a firing alert",
        "GPU-hours allocated while an idle alert fired",
        "lower",
        min_change=0.1,
    ),
    Metric("energy_kwh", "GPU energy (kWh)", "GPU energy", "lower", min_change=0.01),
    Metric("power_mean_w", "mean GPU power (kW)", "mean GPU power", "lower", 1000.0, min_change=1.0),
    Metric("cost", "cost", "cost of the run", "lower", min_change=0.01),
    Metric(
        "cost_per_useful_gpu_hour",
        "cost per useful GPU-h",
        "cost per useful GPU-hour",
        "lower",
        min_change=0.001,
    ),
)

ALL_METRICS: tuple[Metric, ...] = tuple(
    {
        m.column: m
        for m in (
            *OUTCOME_METRICS,
            *RUN_METRICS,
            *WINDOW_METRICS,
            *CENSORED_METRICS,
            *PREEMPTION_METRICS,
            *SHARING_METRICS,
            *TOPOLOGY_METRICS,
            *NUMA_METRICS,
            *QUEUE_METRICS,
            *USAGE_METRICS,
        )
    }.values()
)

METRICS_BY_COLUMN: dict[str, Metric] = {m.column: m for m in ALL_METRICS}


def compared_metrics(
    scope: Scope,
    preemption: bool = True,
    sharing: bool = False,
    mig: bool = False,
    topology: bool = False,
    numa: bool = False,
    queues: bool = False,
) -> tuple[Metric, ...]:
    """The metrics sentences and the change table compare: delays over ``scope``, outcomes, extras.

    Parameters
    ----------
    scope
        Which delay metrics: over the measurement window or the whole run.
    preemption
        Include what evictions cost; pass False when no run evicted a job, where
        those columns are all zero and the pending time equals the wait.
    sharing
        Include what GPU sharing by replicas cost (:func:`runs_shared`).
    mig
        With ``sharing``, include the MIG figures too (:func:`runs_with_mig`).
    topology
        Include where multi-node jobs ran and what spreading cost (:func:`runs_multi_node`).
    numa
        Include kubelet admission failures (:func:`runs_numa`).
    queues
        Include the fairness across queues (:func:`runs_multi_queue`).

    Examples
    --------
    >>> [m.column for m in compared_metrics("window")][:2]
    ['window_wait_mean', 'window_wait_p95']
    >>> [m.column for m in compared_metrics("run")][-2:]
    ['goodput', 'pending_time_mean']
    >>> [m.column for m in compared_metrics("run", preemption=False)][-1]
    'fragmented_gpus_mean'
    """
    delays = WINDOW_METRICS if scope == "window" else RUN_METRICS
    shared = tuple(m for m in SHARING_METRICS if mig or m.column not in MIG_METRIC_COLUMNS) if sharing else ()
    extra = (*(PREEMPTION_METRICS if preemption else ()), *shared, *(TOPOLOGY_METRICS if topology else ()))
    aligned = tuple(m for m in NUMA_METRICS if m not in OUTCOME_METRICS) if numa else ()
    fair = QUEUE_METRICS if queues else ()
    return tuple(m for m in (*delays, *OUTCOME_METRICS, *extra, *aligned, *fair) if m.better is not None)


def runs_numa(runs: pl.DataFrame) -> bool:
    """True when a run in ``runs`` ran a kubelet Topology Manager policy (the NUMA table shows)."""
    key = "scheduler.topology_manager"
    if key not in runs.columns:
        return False
    return bool((runs.get_column(key).cast(pl.String).fill_null("none") != "none").any())


def runs_multi_queue(runs: pl.DataFrame) -> bool:
    """True when a run in ``runs`` admitted jobs of more than one queue (the queue table shows)."""
    return "queues" in runs.columns and bool((runs.get_column("queues").fill_null(0) > 1).any())


def runs_multi_node(runs: pl.DataFrame) -> bool:
    """True when a run in ``runs`` placed a job on more than one node (the topology table shows)."""
    return "multi_node_jobs" in runs.columns and bool(
        (runs.get_column("multi_node_jobs").fill_null(0) > 0).any()
    )


def runs_with_usage(runs: pl.DataFrame) -> bool:
    """True when a run in ``runs`` has the GPU usage columns (a version that wrote them)."""
    return "busy_gpu_hours" in runs.columns and bool(runs.get_column("busy_gpu_hours").is_not_null().any())


def runs_priced(runs: pl.DataFrame) -> bool:
    """True when a run in ``runs`` was given node prices (``cluster.prices``: its cost is not null)."""
    return "cost" in runs.columns and bool(runs.get_column("cost").is_not_null().any())


def runs_evicted(runs: pl.DataFrame) -> bool:
    """True when some run in ``runs`` (one row per run, the summary's columns) evicted a job."""
    return "preemptions" in runs.columns and bool((runs.get_column("preemptions").fill_null(0) > 0).any())


#: The MIG columns of :data:`SHARING_METRICS`, shown only when some run had MIG GPUs.
MIG_METRIC_COLUMNS: tuple[str, ...] = (
    "mig_instances",
    "mig_stranded_pct",
    "mig_reconfigurations",
    "mig_reconfigure_gpu_h",
)


def runs_with_mig(runs: pl.DataFrame) -> bool:
    """True when some run in ``runs`` had MIG GPUs: static instances, or slice-mask MIG (instances made per
    pod, or layouts re-partitioned), whose ``mig_instances`` is 0 but ``mig_stranded_pct`` is set."""
    static = "mig_instances" in runs.columns and bool(
        (runs.get_column("mig_instances").fill_null(0) > 0).any()
    )
    sliced = "mig_stranded_pct" in runs.columns and bool(
        runs.get_column("mig_stranded_pct").is_not_null().any()
    )
    return static or sliced


def runs_shared(runs: pl.DataFrame) -> bool:
    """True when some run in ``runs`` shared GPUs by replicas (time-slicing or MPS) or MIG instances."""
    replicas = "replicas_per_gpu" in runs.columns and bool(
        (runs.get_column("replicas_per_gpu").fill_null(1) > 1).any()
    )
    return replicas or runs_with_mig(runs)


__all__ = [
    "ALL_METRICS",
    "CENSORED_METRICS",
    "METRICS_BY_COLUMN",
    "MIG_METRIC_COLUMNS",
    "NUMA_METRICS",
    "OUTCOME_METRICS",
    "PREEMPTION_METRICS",
    "QUEUE_METRICS",
    "RUN_METRICS",
    "SHARING_METRICS",
    "TOPOLOGY_METRICS",
    "USAGE_METRICS",
    "WINDOW_METRICS",
    "WINDOW_PREFIX",
    "Metric",
    "Scope",
    "compared_metrics",
    "runs_evicted",
    "runs_multi_node",
    "runs_multi_queue",
    "runs_numa",
    "runs_priced",
    "runs_shared",
    "runs_with_mig",
    "runs_with_usage",
]
