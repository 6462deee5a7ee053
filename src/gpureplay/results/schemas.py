"""Explicit schemas of the result files (docs/results.md).

Writing through these schemas keeps every run's files identical in column
order and width, so ``scan_parquet`` over a whole sweep never meets mixed
dtypes (``pl.lit(5)`` is Int32, a count may come out UInt32, ...).
"""

from __future__ import annotations

import polars as pl

#: Final states of a job. ``deadlocked``: partly placed pod-by-pod at the end,
#: holding GPUs; ``unfinished``: still pending or running when the replay stopped;
#: ``failed``: its pods failed kubelet admission more often than its ``backoff_limit``.
JOB_STATES: tuple[str, ...] = ("finished", "rejected", "deadlocked", "unfinished", "failed")

#: ``jobs.parquet``: one row per job of the (transformed) trace. Times are seconds
#: from trace start; null where a job never started or never finished.
JOBS_RESULT_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "job_name": pl.String(),  # the trace's own id when it is text ("jobA"), else null
    "queue": pl.String(),
    "user": pl.String(),
    "priority": pl.Int32(),
    "priority_class": pl.String(),  # from the workload's PriorityClass mix; null: the trace's priorities
    "preemptible": pl.Boolean(),
    "num_pods": pl.Int32(),
    "gpu_milli": pl.Int32(),
    "gpus": pl.Float64(),
    "submit_time": pl.Float64(),
    "duration": pl.Float64(),
    "start_time": pl.Float64(),
    "finish_time": pl.Float64(),
    "wait_time": pl.Float64(),
    "jct": pl.Float64(),
    "run_time": pl.Float64(),
    "preemptions": pl.Int32(),
    "attempts": pl.Int32(),
    "admission_failures": pl.Int32(),  # kubelet rejections of its placements (Topology Manager)
    # Kueue waitForPodsReady: its admissions evicted before all of its pods were placed
    "pods_ready_timeouts": pl.Int32(),
    "pending_time": pl.Float64(),  # every interval spent pending: first wait and each requeue
    "lost_gpu_seconds": pl.Float64(),  # what evictions cost it: rolled-back work, restart overheads, grace
    "sharing_delay": pl.Float64(),  # seconds its runs were stretched by time-slicing / MPS sharing
    "sharing_slowdown": pl.Float64(),  # (work + sharing_delay) / work; 1: never slowed; null: no work done
    "nodes_spanned": pl.Int32(),
    # what spreading costs: NVLink domains, racks and spines its pods spanned (as nodes_spanned), and the
    # seconds its runs were stretched by spreading (docs/engine/placement.md, "What spreading costs")
    "nvlink_domains_spanned": pl.Int32(),
    "racks_spanned": pl.Int32(),
    "spines_spanned": pl.Int32(),
    "spread_delay": pl.Float64(),
    # the job's topology request (trace or workload.topology_requests; null: none), read by topology_aware
    "topology_mode": pl.String(),
    "topology_level": pl.String(),
    "topology_slice_level": pl.String(),  # Kueue's PodSet slices: slice_size pods per domain of slice_level
    "topology_slice_size": pl.Int32(),
    "held_milli": pl.Int64(),
    "state": pl.Enum(JOB_STATES),
    "reject_reason": pl.String(),
}

#: ``timeline.parquet``: the cluster sampled every ``sample_interval`` seconds.
TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "time": pl.Float64(),
    "allocated_gpus": pl.Int32(),
    "allocated_milli": pl.Int64(),
    "allocated_fraction": pl.Float64(),
    "pending_jobs": pl.Int32(),
    "running_jobs": pl.Int32(),
    "fragmented_gpus": pl.Int32(),
    "preemptions": pl.Int64(),  # evictions so far
    "terminating_jobs": pl.Int32(),
    "lost_gpu_seconds": pl.Float64(),  # so far
    "mig_stranded_slices": pl.Int32(),  # dynamic MIG: free slices no instance the workload asks for fits
    # What the GPUs did at the sample time (gpureplay.results.gpu_usage; exact values of the jobs' usage
    # model, not a DCGM scrape): busy GPU-equivalents (usage x GPUs, physical GPUs), their share of the
    # cluster's GPUs (beside allocated_fraction) and the cluster's GPU power by the catalog's idle / TDP
    # figures (null: a model without them).
    "busy_gpus": pl.Float64(),
    "busy_fraction": pl.Float64(),
    "power_w": pl.Float64(),
}

#: ``queues.parquet``: each queue (the trace's ``queue`` column: Philly VCs, ITP clusters, ...) at each
#: timeline sample. ``usage_gpu`` counts what its jobs' placed pods request in GPUs (the queue models'
#: unit: a time-sliced replica or a MIG instance is one device of its pod's request, milli / 1000), held
#: by running, partly placed and terminating jobs alike.
QUEUE_SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "time": pl.Float64(),
    "queue": pl.String(),
    "usage_gpu": pl.Float64(),
    "pending_jobs": pl.Int32(),
    "running_jobs": pl.Int32(),
    # Under a queue model (null without one): gpureplay.queues.kueue_quota.model_columns (Kueue),
    # gpureplay.queues.volcano_queues.volcano_columns (Volcano: nominal_gpu is the deserved share) or
    # gpureplay.queues.kai_queues.kai_columns (KAI: nominal_gpu is the GPU quota).
    "nominal_gpu": pl.Float64(),
    "borrowed_gpu": pl.Float64(),
    "lent_gpu": pl.Float64(),
    "share": pl.Float64(),
    # The model's fair share of GPUs at the last session (Volcano's deserved, KAI's fair share; null under
    # Kueue, whose entitlement is the nominal quota).
    "fair_gpu": pl.Float64(),
}

#: ``queue_summary.parquet``: one row per queue, by name (:mod:`gpureplay.results.queue_summary`).
QUEUE_SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "queue": pl.String(),
    "jobs": pl.Int64(),
    "admitted": pl.Int64(),
    "finished": pl.Int64(),
    "never_started": pl.Int64(),
    "wait_mean": pl.Float64(),
    "wait_median": pl.Float64(),
    "wait_p95": pl.Float64(),
    "jct_median": pl.Float64(),
    "jct_p95": pl.Float64(),
    "bounded_slowdown_mean": pl.Float64(),
    "gpu_hours": pl.Float64(),
    "gpu_time_share": pl.Float64(),
    # Under a queue model (null without one): the nominal GPU quota (Volcano: the mean deserved share) and its
    # share of all queues' nominal.
    "nominal_gpu": pl.Float64(),
    "quota_share": pl.Float64(),
    "preemptions": pl.Int64(),
    "preempted_jobs": pl.Int64(),
    "lost_gpu_hours": pl.Float64(),
    "preemptions_caused": pl.Int64(),
    # Finish-time fairness of its jobs (gpureplay.results.finish_time_fairness): mean and largest rho.
    "ftf_mean": pl.Float64(),
    "ftf_max": pl.Float64(),
}

#: Why a run attempt ended (``attempts.parquet``): finished; evicted (``preempted``); still running when the
#: replay stopped (``unfinished``); holding pods without running at the end (pod by pod, ``deadlocked``).
#: Kueue's waitForPodsReady evicted an admission whose pods were not all placed in time
#: (``pods_ready_timeout``).
ATTEMPT_END_REASONS: tuple[str, ...] = (
    "finished",
    "preempted",
    "unfinished",
    "deadlocked",
    "pods_ready_timeout",
)

#: ``attempts.parquet``: one row per run attempt. An attempt holds resources from its first pod's placement
#: (``hold_start``) to ``end``; it runs from ``start`` (all pods placed; null if it never ran). ``evicted``:
#: when it was evicted (its resources are released a grace period later, at ``end``). ``progress``: seconds of
#: work done (after ``restart_overhead``), of which ``work_lost`` were rolled back to the last checkpoint.
#: ``gpu_seconds``: GPU-seconds held, pod by pod.
ATTEMPTS_RESULT_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "attempt": pl.Int32(),
    "hold_start": pl.Float64(),
    "start": pl.Float64(),
    "evicted": pl.Float64(),
    "end": pl.Float64(),
    "gpus": pl.Float64(),
    "pods": pl.Int32(),
    "nodes": pl.Int32(),
    "end_reason": pl.Enum(ATTEMPT_END_REASONS),
    "progress": pl.Float64(),
    "work_lost": pl.Float64(),
    "restart_overhead": pl.Float64(),
    "gpu_seconds": pl.Float64(),
    "evicted_by": pl.Int64(),  # job_id of the job whose preemption evicted it (null: not evicted)
}

#: Headline metrics of ``summary.parquet`` (one row; definitions in :mod:`gpureplay.results.metrics`).
#: The flattened config keys come first, each with its declared type (:func:`~gpureplay.results.metrics.
#: config_columns`); wall-clock timings are not here (they are in ``timing.json``), so a re-run is
#: byte-identical.
SUMMARY_METRICS_SCHEMA: dict[str, pl.DataType] = {
    # Job counts. never_started: admitted jobs that never started (deadlocked included);
    # never_arrived: jobs submitted after the run's end (a horizon), counted in unfinished.
    "jobs": pl.Int64(),
    "finished": pl.Int64(),
    "rejected": pl.Int64(),
    "deadlocked": pl.Int64(),
    "unfinished": pl.Int64(),
    "never_started": pl.Int64(),
    "never_arrived": pl.Int64(),
    "total_gpus": pl.Int64(),
    # The run span: first arrival, engine end time.
    "span_start": pl.Float64(),
    "span_end": pl.Float64(),
    # Whole run, over admitted jobs, censored at span_end (the counts say how many were).
    "wait_mean": pl.Float64(),
    "wait_median": pl.Float64(),
    "wait_p95": pl.Float64(),
    "wait_p99": pl.Float64(),
    "wait_censored": pl.Int64(),
    "jct_mean": pl.Float64(),
    "jct_median": pl.Float64(),
    "jct_p95": pl.Float64(),
    "jct_p99": pl.Float64(),
    "jct_censored": pl.Int64(),
    "bounded_slowdown_mean": pl.Float64(),
    # Uncensored means, explicitly named: started / finished jobs only.
    "wait_mean_started": pl.Float64(),
    "jct_mean_finished": pl.Float64(),
    "makespan": pl.Float64(),
    "gpu_allocation_rate": pl.Float64(),
    "fragmented_gpus_mean": pl.Float64(),
    # The timeline's interval: sample_interval, doubled as often as max_samples required.
    "sample_interval_used": pl.Float64(),
    # The measurement window [window_start, window_end] (end capped at span_end).
    "window_start": pl.Float64(),
    "window_end": pl.Float64(),
    "window_jobs": pl.Int64(),
    "window_wait_mean": pl.Float64(),
    "window_wait_median": pl.Float64(),
    "window_wait_p95": pl.Float64(),
    "window_wait_p99": pl.Float64(),
    "window_wait_censored": pl.Int64(),
    "window_jct_mean": pl.Float64(),
    "window_jct_median": pl.Float64(),
    "window_jct_p95": pl.Float64(),
    "window_jct_p99": pl.Float64(),
    "window_jct_censored": pl.Int64(),
    "window_bounded_slowdown_mean": pl.Float64(),
    "window_gpu_allocation_rate": pl.Float64(),
    # Preemption: evictions, jobs evicted at least once, evictions per admitted job, GPU-hours the
    # evictions cost (rolled-back work, restart overheads, grace periods), goodput (useful GPU-time /
    # allocated GPU-time) and the mean time admitted jobs spent pending, requeues included.
    "preemptions": pl.Int64(),
    "preempted_jobs": pl.Int64(),
    "preemptions_per_job": pl.Float64(),
    "lost_gpu_hours": pl.Float64(),
    "goodput": pl.Float64(),
    "pending_time_mean": pl.Float64(),
    # GPU sharing by replicas (time-slicing, MPS): devices each GPU is advertised as (1: none; the
    # allocation rates count devices), jobs slowed by sharing, their mean and p95 slowdown over jobs
    # that did work, and the hours their runs were stretched.
    "replicas_per_gpu": pl.Int64(),
    "slowed_jobs": pl.Int64(),
    "sharing_slowdown_mean": pl.Float64(),
    "sharing_slowdown_p95": pl.Float64(),
    "sharing_delay_hours": pl.Float64(),
    # MIG (device plugin single strategy): instances in the cluster (0: none; the allocation rates count
    # them as devices) and the share of the MIG GPUs' compute slices no job can ever use (null: no MIG).
    "mig_instances": pl.Int64(),
    "mig_stranded_pct": pl.Float64(),
    # MIG re-partitioning (mig_reconfigure: idle): re-partitionings started, and GPU-hours the GPUs spent
    # in their downtime (0 without it).
    "mig_reconfigurations": pl.Int64(),
    "mig_reconfigure_gpu_h": pl.Float64(),
    # What spreading costs: jobs that ran on more than one node, the share of them within one NVLink domain,
    # rack and spine (null: none), and the GPU-hours spreading added to their runs.
    "multi_node_jobs": pl.Int64(),
    "one_nvlink_pct": pl.Float64(),
    "one_rack_pct": pl.Float64(),
    "one_spine_pct": pl.Float64(),
    "spread_gpu_hours": pl.Float64(),
    # Mean (censored) wait of the jobs of more than one pod: what keeping them together costs them.
    "multi_pod_wait_mean": pl.Float64(),
    # The kubelet Topology Manager: jobs that failed (more admission failures than backoff_limit), kubelet
    # rejections (TopologyAffinityError) over all jobs, and the jobs rejected at least once.
    "failed": pl.Int64(),
    "admission_failures": pl.Int64(),
    "admission_failed_jobs": pl.Int64(),
    # Kueue's waitForPodsReady: admissions evicted because their pods were not all placed within the
    # timeout, and the GPU-hours their placed pods held meanwhile.
    "pods_ready_timeouts": pl.Int64(),
    "pods_ready_timeout_gpu_h": pl.Float64(),
    # Queues (the jobs' queue column) with admitted jobs, Jain's index of their mean bounded slowdowns
    # (1: every queue slowed alike) and the worst queue's mean wait (gpureplay.results.queue_summary).
    "queues": pl.Int64(),
    "queue_slowdown_jain": pl.Float64(),
    "queue_wait_mean_max": pl.Float64(),
    # Finish-time fairness (Themis; gpureplay.results.finish_time_fairness): the largest rho over jobs, the
    # share of jobs with rho > 1, and the worst queue's mean rho (the queues counted as for the wait).
    "ftf_max": pl.Float64(),
    "ftf_unfair_share": pl.Float64(),
    "queue_ftf_max": pl.Float64(),
    # What the GPUs did, not only what was allocated (gpureplay.results.gpu_usage), over the run span:
    # busy GPU-hours (usage x GPUs x time) and their share of the cluster's GPU-time (beside
    # gpu_allocation_rate); GPU-hours allocated but idle; the idle alerts ("under idle_alert.threshold busy
    # for idle_alert.window": allocations that raised one) and the GPU-hours allocated while one fired;
    # energy of the cluster's GPUs (kWh) and their mean power (W) by the catalog's idle / TDP figures (null: a
    # model without them), with the share of busy time whose GPU model was a mean over the models a job
    # allowed; cost of the run from cluster.prices (null: no prices given) and per useful GPU-hour.
    "busy_gpu_hours": pl.Float64(),
    "gpu_busy_rate": pl.Float64(),
    "idle_allocated_gpu_hours": pl.Float64(),
    "idle_alerts": pl.Int64(),
    "idle_alert_gpu_hours": pl.Float64(),
    "energy_kwh": pl.Float64(),
    "power_mean_w": pl.Float64(),
    "energy_estimated_share": pl.Float64(),
    "cost": pl.Float64(),
    "cost_per_useful_gpu_hour": pl.Float64(),
}
