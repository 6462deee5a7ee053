"""``run_experiment(cfg, out_dir)``: load → transform → compile → simulate → write.

This is the importable function behind the Hydra entry (``app.py``): keeping
the work here, not in the module that holds ``@hydra.main``, lets joblib/Ray
workers import it and hit numba's on-disk cache instead of recompiling.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import polars as pl
from omegaconf import DictConfig, OmegaConf

from gpureplay import __version__
from gpureplay.cluster.nodes import ClusterNodes
from gpureplay.cluster.registry import build_cluster
from gpureplay.errors import InputError
from gpureplay.replay.memory import (
    ClusterSize,
    RunSizes,
    check_memory,
    cluster_size,
    estimate_memory,
    planned_cluster,
    run_sizes,
)
from gpureplay.results.gpu_usage import IdleAlertRule, node_prices, run_usage
from gpureplay.results.metrics import (
    admitted_jobs,
    attempt_results,
    config_frame,
    job_results,
    measurement_window,
    run_span,
    summary_metrics,
    timeline_results,
)
from gpureplay.results.queue_summary import queue_summary
from gpureplay.results.timing import TIMING_FILE
from gpureplay.results.writer import PACKING_FILES, RESULT_FILES, clear_run, write_results
from gpureplay.schedulers.policy import Policy
from gpureplay.traces.adapted import AdaptedTrace
from gpureplay.traces.registry import load_trace, needs_cluster
from gpureplay.traces.schema import max_time_limit
from gpureplay.workload.priorities import (
    Checkpointing,
    PriorityClass,
    assign_checkpointing,
    assign_priority_classes,
)
from gpureplay.workload.topology_requests import TopologyRequest, assign_topology_requests
from gpureplay.workload.transforms import apply_workload
from gpureplay.workload.tune import tune_pods
from gpureplay.workload.typical_pods import typical_pods
from gpureplay.workload.utilization import (
    ReclaimIdlePolicy,
    Utilization,
    assign_utilization,
    check_usage,
    check_usage_values,
    check_utilization,
)
from gpureplay.yaml_input import yaml_size_limit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    """What a run wrote: its folder and the headline row of ``summary.parquet``."""

    out_dir: Path
    summary: dict[str, Any]


def _policy(cfg: DictConfig) -> Policy:
    return cast(Policy, OmegaConf.to_object(cfg.scheduler))


@dataclass(frozen=True)
class ReplayInputs:
    """What a composed config replays: the adapted trace, its jobs after the workload, cluster and policy."""

    trace: AdaptedTrace
    jobs: pl.DataFrame
    cluster: ClusterNodes
    policy: Policy


def load_trace_of(cfg: DictConfig) -> AdaptedTrace:
    """The adapted trace ``cfg.trace`` names (before the workload's transforms).

    A trace generated for its cluster (``trace=synthetic``, whose ``load`` is offered load on the cluster)
    is given the GPU count of ``cfg.cluster`` (:func:`cluster_gpus`); no other trace reads the cluster.
    """
    resolved = cast(dict[str, Any], OmegaConf.to_container(cfg.trace, resolve=True, enum_to_str=True))
    gpus = cluster_gpus(cfg) if needs_cluster(resolved) else None
    with max_time_limit(float(cfg.max_time)):
        return load_trace(resolved, int(cfg.seed), cluster_gpus=gpus)


def cluster_gpus(cfg: DictConfig) -> int:
    """GPUs of ``cfg.cluster`` (its nodes' ``num_gpus`` summed), before the trace is loaded.

    A generated cluster's count comes from its config alone; a node list is built for it (and built
    again by the run: the trace comes first, and reading a node list is cheap beside a replay).

    Raises
    ------
    gpureplay.errors.InputError
        On a bad cluster config or node list.
    """
    resolved = cast(dict[str, Any], OmegaConf.to_container(cfg.cluster, resolve=True, enum_to_str=True))
    planned = planned_cluster(resolved)
    if planned is not None:
        return planned.gpus
    return int(build_cluster(resolved).nodes["num_gpus"].cast(pl.Int64).sum())


def prepare_inputs(cfg: DictConfig, trace: AdaptedTrace | None = None) -> ReplayInputs:
    """Load ``cfg.trace``, apply ``cfg.workload`` (load, window, priority classes, checkpoints, topology
    requests, usage under idle-resource reclaim) and build ``cfg.cluster`` and the policy, logging each.

    Parameters
    ----------
    cfg
        A composed config.
    trace
        ``cfg``'s trace, already loaded (:func:`load_trace_of`); default: loaded here.

    Raises
    ------
    gpureplay.errors.InputError
        On any bad trace, node list or workload value.
    """
    resolved = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    seed = int(cfg.seed)
    if trace is None:
        _check_synthetic_memory(cfg, resolved)
        trace = load_trace_of(cfg)
    with rows_of(trace):
        return _prepare(cfg, resolved, trace, seed)


@contextmanager
def rows_of(trace: AdaptedTrace) -> Iterator[None]:
    """Name the trace file in errors about a row of its jobs (raised as rows of ``"jobs"``, the table).

    The jobs keep the file's row numbers (``source_row``) through the workload and the replay, so
    ``trace.csv, row 7, column 'queue'`` points at the line to open. Traces built from several files
    or generated keep ``jobs``.
    """
    try:
        yield
    except InputError as err:
        if not Path(trace.source).is_file():
            raise
        raise err.in_file(trace.source) from err


def _prepare(cfg: DictConfig, resolved: dict[str, Any], trace: AdaptedTrace, seed: int) -> ReplayInputs:
    log.info("trace %s: %s jobs from %s", cfg.trace.name, f"{trace.jobs.height:,}", trace.source)
    for reason, count in trace.changes.most_common():
        log.info("  adapter: %s rows: %s", f"{count:,}", reason)
    jobs = apply_workload(trace.jobs, **_workload_args(resolved["workload"]), seed=seed)
    jobs = _priorities_and_checkpoints(jobs, resolved["workload"], seed)
    rules = [TopologyRequest(**r) for r in resolved["workload"]["topology_requests"]]
    jobs = assign_topology_requests(jobs, rules)
    policy = _policy(cfg)
    # A generated cluster's size is known from its config: a run too large for the memory is refused
    # before its node table is built; a node list's, once it is read (its file bounds it).
    planned = planned_cluster(resolved["cluster"])
    if planned is not None:
        _check_memory(cfg, jobs, planned, policy)
    cluster = build_cluster(resolved["cluster"])
    total_gpus = int(cluster.nodes["num_gpus"].sum())
    log.info(
        "cluster %s: %s nodes, %s GPUs", cfg.cluster.name, f"{cluster.nodes.height:,}", f"{total_gpus:,}"
    )
    for reason, count in cluster.changes.most_common():
        log.info("  cluster: %s nodes: %s", f"{count:,}", reason)
    if planned is None:
        _check_memory(cfg, jobs, cluster_size(cluster.nodes), policy)
    # Prices against the node types the cluster has: a bad or unread price fails before the replay.
    node_prices(cluster.nodes, resolved["cluster"].get("prices") or {})
    jobs = _usage(jobs, resolved["workload"], policy, seed)
    _note_topology_requests(jobs, policy)
    _note_topology_manager(policy)
    return ReplayInputs(trace, jobs, cluster, policy)


def check_inputs(cfg: DictConfig, trace: AdaptedTrace | None = None) -> ReplayInputs:
    """Every check a run makes before its kernels compile, without replaying: the trace, the workload, the
    cluster, MIG layouts and the queue model's inputs (manifests against the cluster and the jobs).

    ``gpureplay run`` meets these first; a local sweep runs them for every point before any point runs
    (:mod:`gpureplay.launcher`), so a point that would fail on its inputs stops the sweep at once.

    Parameters
    ----------
    cfg
        A composed config that passed :func:`gpureplay.config_check.check_config`.
    trace
        ``cfg``'s trace, already loaded (:func:`load_trace_of`); default: loaded here.

    Raises
    ------
    gpureplay.errors.InputError
        Naming the bad input (file, row, column, config key).
    """
    with yaml_size_limit(float(cfg.max_manifest_mib), "the config key max_manifest_mib"):
        inputs = prepare_inputs(cfg, trace)
        if cfg.mode.name != "packing":
            with rows_of(inputs.trace):
                _check_replay_inputs(inputs)
    return inputs


def _check_replay_inputs(inputs: ReplayInputs) -> None:
    """The checks of a timed replay's inputs that need no kernel: MIG layouts, the queue model's inputs."""
    from gpureplay.replay.mig import check_mig_inputs, dynamic_mig_nodes
    from gpureplay.replay.queue_model import kai_queues, kueue_quotas, volcano_queues
    from gpureplay.replay.repartition import repartition_plan

    jobs, nodes, policy = inputs.jobs, inputs.cluster.nodes, inputs.policy
    strategy = str(getattr(policy.mig_strategy, "name", policy.mig_strategy))
    check_mig_inputs(jobs, nodes, strategy)
    if strategy == "mixed" and str(getattr(policy.mig_reconfigure, "name", policy.mig_reconfigure)) == "idle":
        mig = dynamic_mig_nodes(nodes, mixed=True, repartition=True)
        repartition_plan(mig, policy.mig_reconfigure_layouts)
    # The queue models read their manifests and check them against the cluster and the jobs here too.
    for build in (kueue_quotas, volcano_queues, kai_queues):
        build(policy, jobs, nodes)


def run_experiment(cfg: DictConfig, out_dir: Path) -> RunOutcome:
    """Replay ``cfg.trace`` on ``cfg.cluster`` under ``cfg.scheduler`` and write results to ``out_dir``.

    The tables are built by :func:`replay_tables` (what :func:`gpureplay.api.run` returns in memory);
    this writes them, and nothing else differs between the two.

    Parameters
    ----------
    cfg
        A composed config (schema :class:`gpureplay.config.Config`).
    out_dir
        Folder for ``jobs.parquet``, ``timeline.parquet``, ``summary.parquet``,
        ``timing.json`` (wall-clock seconds, kept out of the Parquet files so a
        re-run is byte-identical) and the ``DONE`` marker. Existing result
        files there are removed first (marker first), so a failed run never
        leaves a folder that looks complete.

    Raises
    ------
    gpureplay.errors.InputError
        On any bad trace, node list or config value; nothing is written then.
    """
    run_started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    clear_run(out_dir, (*RESULT_FILES, *PACKING_FILES, TIMING_FILE))
    result = replay_tables(cfg)
    write_results(
        out_dir, result.tables, result.metadata, result.compile_seconds, result.replay_seconds, run_started
    )
    log.info("%s -> %s", result.outcome, out_dir)
    return RunOutcome(out_dir, result.summary_row)


@dataclass(frozen=True)
class RunTables:
    """A run's result tables in memory: what :func:`run_experiment` writes, :func:`gpureplay.api.run` returns.

    Attributes
    ----------
    tables
        File name -> table, in the order they are written (summary last): :data:`RESULT_FILES` for a
        timed replay, :data:`PACKING_FILES` for a packing run (``mode=packing``).
    metadata
        Parquet key-value metadata of every file (the resolved config, version, input checksums, seed).
    compile_seconds, replay_seconds
        Wall-clock seconds of the kernels' warm-up and of the replay (the run's ``timing.json``).
    outcome
        One line saying what the run did (jobs replayed or pods packed, and how they ended).
    """

    tables: dict[str, pl.DataFrame]
    metadata: dict[str, str]
    compile_seconds: float
    replay_seconds: float
    outcome: str

    @property
    def summary_row(self) -> dict[str, Any]:
        """The headline row of ``summary.parquet``."""
        return self.tables["summary.parquet"].row(0, named=True)


def replay_tables(cfg: DictConfig) -> RunTables:
    """Replay ``cfg`` (or run its packing experiment) and build its result tables, writing nothing.

    Parameters
    ----------
    cfg
        A composed config that passed :func:`gpureplay.config_check.check_config`.

    Raises
    ------
    gpureplay.errors.InputError
        On any bad trace, node list or config value.
    """
    _check_run_keys(cfg)
    with yaml_size_limit(float(cfg.max_manifest_mib), "the config key max_manifest_mib"):
        inputs = prepare_inputs(cfg)
        with rows_of(inputs.trace):
            return _replay(cfg, inputs)


def _replay(cfg: DictConfig, inputs: ReplayInputs) -> RunTables:
    """The replay (or the packing run) of prepared inputs, and its result tables (see replay_tables)."""
    from gpureplay.engine.jit.config import cache_folder
    from gpureplay.replay.progress import compile_notice, progress_for_terminal
    from gpureplay.replay.simulate import (  # numba import deferred: `--help` stays fast
        kernels_cached,
        simulate,
        warm_up,
    )

    seed = int(cfg.seed)
    trace, jobs, cluster, policy = inputs.trace, inputs.jobs, inputs.cluster, inputs.policy
    total_gpus = int(cluster.nodes["num_gpus"].sum())
    if cfg.mode.name == "packing":
        return _run_packing(cfg, trace, jobs, cluster.nodes, cluster.sha256 or "")
    window = measurement_window(jobs, cfg.measure.start, cfg.measure.end)

    # Bad inputs fail before the kernels compile (minutes on a first run).
    _check_replay_inputs(inputs)
    # Kernels compile (first run) or load from numba's cache here, timed apart from the replay.
    started = time.perf_counter()
    queue_model = str(getattr(policy.queues, "name", policy.queues))
    with compile_notice(str(cache_folder()), queue_model, cold=not kernels_cached()):
        warm_up(policy, debug=bool(cfg.debug))
    compile_seconds = time.perf_counter() - started
    started = time.perf_counter()
    replay = simulate(
        jobs,
        cluster.nodes,
        policy,
        seed=seed,
        sample_interval=float(cfg.sample_interval),
        max_samples=int(cfg.max_samples),
        horizon=None if cfg.horizon is None else float(cfg.horizon),
        window=(window.start, window.end),
        debug=bool(cfg.debug),
        progress=progress_for_terminal(),
    )
    replay_seconds = time.perf_counter() - started

    job_table = job_results(jobs, replay.jobs)
    # The engine's job rows are in job_table now: not held beside it while the summary is computed.
    replay = dataclasses.replace(replay, jobs=replay.jobs.clear())
    attempts = attempt_results(replay.attempts)
    # Shared by replicas or split into MIG instances, the cluster counts devices (nvidia.com/gpu).
    replicas = policy.devices_per_gpu()
    devices = int(replay.stats["devices"])
    stranded = replay.stats["mig_stranded_pct"]
    span = run_span(jobs, replay.stats["end_time"])
    # What the GPUs did (busy, idle alerts, energy, cost) from the jobs' usage and the attempts.
    usage = run_usage(
        jobs,
        attempts,
        cluster.nodes,
        times=replay.timeline["time"].to_numpy(),
        total_gpus=total_gpus,
        devices=devices,
        span_seconds=span.seconds,
        rule=IdleAlertRule(float(cfg.idle_alert.threshold), float(cfg.idle_alert.window)),
        prices=dict(cfg.cluster.get("prices") or {}),
    )
    timeline = timeline_results(replay.timeline, devices, usage.timeline)
    per_queue = queue_summary(job_table, admitted_jobs(job_table, span), attempts, replay.queues, devices)
    metrics = summary_metrics(
        job_table,
        timeline,
        span=span,
        window=window,
        gpu_milli_seconds=replay.gpu_milli_seconds,
        window_gpu_milli_seconds=replay.window_gpu_milli_seconds,
        total_gpus=total_gpus,
        sample_interval=replay.sample_interval,
        attempts=attempts,
        replicas_per_gpu=replicas,
        devices=devices,
        mig_instances=int(replay.stats["mig_instances"]),
        mig_stranded_pct=None if math.isnan(stranded) else stranded,
        mig_reconfigurations=int(replay.stats["mig_reconfigurations"]),
        mig_reconfigure_gpu_h=float(replay.stats["mig_reconfigure_gpu_h"]),
        per_queue=per_queue,
        usage=usage.figures,
    )
    summary = config_frame(cfg).hstack(metrics)

    metadata = {
        "config": OmegaConf.to_yaml(cfg, resolve=True),
        "version": __version__,
        "trace_sha256": trace.sha256,
        "trace_source": trace.source,
        "cluster_sha256": cluster.sha256 or "",
        "seed": str(seed),
        "sample_interval": repr(replay.sample_interval),
    }
    tables = {
        "jobs.parquet": job_table,
        "attempts.parquet": attempts,
        "timeline.parquet": timeline,
        "queues.parquet": replay.queues,
        "queue_summary.parquet": per_queue,
        "summary.parquet": summary,
    }
    row = summary.row(0, named=True)
    # Kubelet admission failures only happen under a Topology Manager policy: named when they did.
    admission = (
        f", {row['failed']:,} failed ({row['admission_failures']:,} kubelet admission failures)"
        if row["admission_failures"]
        else ""
    )
    # Kueue's waitForPodsReady evictions, when there were any.
    if row["pods_ready_timeouts"]:
        admission += (
            f", {row['pods_ready_timeouts']:,} waitForPodsReady timeouts "
            f"({row['pods_ready_timeout_gpu_h']:,.0f} GPU-hours held by their pods)"
        )
    outcome = (
        f"replayed {row['jobs']:,} jobs in {replay_seconds:.2f} s "
        f"(kernels ready in {compile_seconds:.2f} s): "
        f"{row['finished']:,} finished, {row['rejected']:,} rejected, {row['deadlocked']:,} deadlocked, "
        f"{row['unfinished']:,} unfinished{admission}"
    )
    return RunTables(tables, metadata, compile_seconds, replay_seconds, outcome)


def _run_packing(
    cfg: DictConfig, trace: AdaptedTrace, jobs: pl.DataFrame, nodes: pl.DataFrame, cluster_sha256: str
) -> RunTables:
    """The FGD experiment on the loaded workload: tune, pack, the ``PACKING_FILES`` tables (replay_tables)."""
    from gpureplay.replay.packing import pack_pods, warm_up_packing
    from gpureplay.results.packing import packing_summary

    seed = int(cfg.seed)
    policy = _policy(cfg)
    capacity = int(nodes["num_gpus"].sum()) * 1000
    # The task classes come from the workload as given, before tuning (the simulator's order).
    tasks = typical_pods(jobs)
    tuned, counts = tune_pods(
        jobs,
        capacity,
        None if cfg.packing.tune is None else float(cfg.packing.tune),
        seed,
        shuffle=bool(cfg.packing.shuffle),
    )
    log.info(
        "packing: %s pods (%s original, %s clones, %s removed) on %s GPUs; %d task classes cover %.1f%%",
        f"{tuned.height:,}", f"{counts['original']:,}", f"{counts['cloned']:,}", f"{counts['removed']:,}",
        f"{capacity // 1000:,}", len(tasks), 100.0 * tasks.coverage,
    )  # fmt: skip
    started = time.perf_counter()
    warm_up_packing(policy)
    compile_seconds = time.perf_counter() - started
    started = time.perf_counter()
    result = pack_pods(tuned, nodes, policy, seed=seed, tasks=tasks, max_pct=int(cfg.packing.max_pct))
    replay_seconds = time.perf_counter() - started
    summary = config_frame(cfg).hstack(packing_summary(result))
    metadata = {
        "config": OmegaConf.to_yaml(cfg, resolve=True),
        "version": __version__,
        "trace_sha256": trace.sha256,
        "trace_source": trace.source,
        "cluster_sha256": cluster_sha256,
        "seed": str(seed),
        "mode": "packing",
    }
    tables = {
        "jobs.parquet": result.pods,
        "events.parquet": result.events,
        "timeline.parquet": result.timeline,
        "summary.parquet": summary,
    }
    row = summary.row(0, named=True)
    outcome = (
        f"packed {row['pods']:,} pods in {replay_seconds:.2f} s "
        f"(kernel {result.stats['kernel_seconds']:.2f} s): "
        f"{row['placed']:,} placed, {row['failed']:,} failed; allocated "
        f"{row['allocated_gpu_pct_at_100'] or float('nan'):.2f}% of GPUs at 100% arrived"
    )
    return RunTables(tables, metadata, compile_seconds, replay_seconds, outcome)


def load_summary(out_dir: Path) -> dict[str, Any]:
    """The headline row of a complete run folder's ``summary.parquet``."""
    return pl.read_parquet(Path(out_dir) / "summary.parquet").row(0, named=True)


def _note_topology_requests(jobs: pl.DataFrame, policy: Policy) -> None:
    """Say how many jobs ask a topology, and that a topology-blind scheduler does not read it."""
    asking = jobs.filter(
        pl.col("topology_mode").is_not_null() | pl.col("topology_slice_level").is_not_null()
    ).height
    if not asking:
        return
    aware = str(getattr(policy.topology_aware, "name", policy.topology_aware))
    if aware == "none":
        log.info(
            "topology requests: %s jobs ask one; topology_aware: none places them topology-blind",
            f"{asking:,}",
        )
    else:
        log.info("topology requests: %s jobs ask one (topology_aware: %s)", f"{asking:,}", aware)
    sliced = jobs.filter(pl.col("topology_slice_level").is_not_null()).height
    if sliced:
        log.info("topology requests: %s jobs ask Kueue PodSet slices", f"{sliced:,}")
    soft = jobs.filter(pl.col("topology_mode") == "preferred").height
    if aware == "volcano" and soft:
        log.info(
            "topology requests: %s preferred jobs run in Volcano's soft mode, which names no tier: every "
            "tier is searched, then the whole cluster (their topology_level is not used)",
            f"{soft:,}",
        )


def _note_topology_manager(policy: Policy) -> None:
    """Say what the kubelets align, and that both Topology Manager scopes align one container here."""
    manager = str(getattr(policy.topology_manager, "name", policy.topology_manager))
    if manager == "none":
        return
    scope = str(getattr(policy.topology_manager_scope, "name", policy.topology_manager_scope))
    cpus = str(getattr(policy.cpu_manager, "name", policy.cpu_manager))
    log.info(
        "kubelet Topology Manager: %s, scope %s (a pod here is one container: both scopes align the same "
        "request), cpu_manager %s%s",
        manager,
        scope,
        cpus,
        ", NUMA-aware scheduler" if policy.numa_aware_scheduler else "",
    )


def _budget(cfg: DictConfig) -> float | None:
    budget = cfg.get("memory_budget_gib")
    return None if budget is None else float(budget)


def _check_memory(cfg: DictConfig, jobs: pl.DataFrame, cluster: ClusterSize, policy: Policy) -> None:
    """Refuse a replay whose estimated memory (:mod:`gpureplay.replay.memory`) is over the budget."""
    sizes = run_sizes(jobs, cluster, policy, float(cfg.sample_interval), int(cfg.max_samples))
    estimate = estimate_memory(sizes, policy, cluster.keys)
    log.info("memory: about %s estimated (%s)", f"{estimate.total / 2**30:.2f} GiB", estimate.describe())
    check_memory(estimate, _budget(cfg))


def _check_synthetic_memory(cfg: DictConfig, resolved: Mapping[str, Any]) -> None:
    """Refuse a synthetic trace (sized by a config key) too large for the memory before it is made."""
    trace = resolved["trace"]
    if trace.get("kind") != "synthetic":
        return
    n = int(trace["n_jobs"])
    sizes = RunSizes(nodes=0, gpus=0, devices=0, node_devices=0, jobs=n, pods=n, slots=n, queues=1, samples=1)
    check_memory(estimate_memory(sizes, _policy(cfg), job_keys="trace.n_jobs"), _budget(cfg))


def _check_run_keys(cfg: DictConfig) -> None:
    """Top-level keys the schema types but cannot range-check, each named in its error."""
    if int(cfg.max_samples) < 1:
        raise InputError.single(f"must be >= 1 (found {cfg.max_samples})", "max_samples")
    max_time = float(cfg.max_time)
    if not (max_time > 0 and max_time < float("inf")):
        raise InputError.single(f"must be a finite number of seconds > 0 (found {cfg.max_time})", "max_time")


def _priorities_and_checkpoints(jobs: pl.DataFrame, workload: Mapping[str, Any], seed: int) -> pl.DataFrame:
    """The workload's PriorityClass mix (when it has one) and every job's checkpointing settings."""
    classes = [
        PriorityClass(**{**c, "reclaim_idle": ReclaimIdlePolicy(**c["reclaim_idle"])})
        for c in workload["priority_classes"]
    ]
    jobs = assign_priority_classes(jobs, classes, seed, override=bool(workload["priority_override"]))
    by_queue = {q: Checkpointing(**c) for q, c in workload["checkpoint_by_queue"].items()}
    return assign_checkpointing(jobs, Checkpointing(**workload["checkpoint"]), by_queue)


def _usage(jobs: pl.DataFrame, workload: Mapping[str, Any], policy: Policy, seed: int) -> pl.DataFrame:
    """Every job's usage (``workload.utilization``, a trace's own ``gpu_util`` winning): read by the results'
    GPU usage, energy and idle alerts under any scheduler, and by idle-resource reclaim's victim search.

    The PriorityClasses' reclaim_idle annotations are read by that plugin only: under any other preemption
    they are inert (as on a cluster without the plugin) and a warning names them.
    """
    given = workload["utilization"]
    model = Utilization(**{**given, "idle_classes": tuple(given["idle_classes"])})
    check_utilization(model, [str(c["name"]) for c in workload["priority_classes"]])
    jobs = assign_utilization(jobs, model, seed)
    reclaiming = str(getattr(policy.preemption, "name", policy.preemption)) == "reclaim_idle"
    if not reclaiming:
        keys = [
            f"workload.priority_classes[{i}].reclaim_idle"
            for i, c in enumerate(workload["priority_classes"])
            if ReclaimIdlePolicy(**c["reclaim_idle"]) != ReclaimIdlePolicy()
        ]
        if keys:
            # Inert, as on a cluster without the plugin: a sweep compares one workload across schedulers.
            log.warning(
                "not read under scheduler.preemption: %s (only reclaim_idle reads them, as only the "
                "ReclaimIdleResource plugin reads the annotations): %s",
                str(getattr(policy.preemption, "name", policy.preemption)),
                ", ".join(keys),
            )
        check_usage_values(jobs)  # now, before the kernels compile
    else:
        check_usage(jobs)
    idle = jobs.filter(pl.col("idle_after").is_finite()).height
    if idle:
        log.info(
            "usage: %s of %s jobs go idle %g s into each attempt%s",
            f"{idle:,}",
            f"{jobs.height:,}",
            model.idle_after,
            " (idle-resource reclaim)" if reclaiming else "",
        )
    return jobs


def _workload_args(workload: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("window_start", "window_end", "sample_fraction", "max_jobs", "load")
    return {k: workload[k] for k in keys}


__all__ = [
    "PACKING_FILES",
    "RESULT_FILES",
    "ReplayInputs",
    "RunOutcome",
    "RunTables",
    "cluster_gpus",
    "load_summary",
    "prepare_inputs",
    "replay_tables",
    "run_experiment",
]
