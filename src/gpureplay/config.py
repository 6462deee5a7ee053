"""Structured-config schemas of the Hydra config tree, registered in Hydra's ConfigStore.

Every YAML option under ``conf/<group>/`` starts from one of these schemas
(``defaults: [/schema/<group>/<kind>@_here_, _self_]``), so a misspelt key or a value of the
wrong type (``seed=abc``, ``cluster.nodes=many``) fails at compose time with
Hydra's own message, before any data is read.

Groups (docs/layout.md):

- ``trace``: which real trace to read and the adapter's options;
- ``cluster``: which node list (or generator) to build;
- ``scheduler``: a :class:`~gpureplay.schedulers.policy.Policy` preset;
- ``workload``: transforms applied to the trace (window, sampling, load scaling);
- ``experiment``: ``@package _global_`` bundles for published comparisons;
- ``sweep``: declared grids for ``-m`` runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig

from gpureplay.schedulers.policy import Policy


class ItpVariant(Enum):
    """ITP file set: ``raw`` (observed fields) or ``elasticflow`` (plus the authors' synthetic fields)."""

    raw = 0
    elasticflow = 1


class OpenbTiming(Enum):
    """``timed``: creation/deletion times; ``packing``: FGD-style arrival order, pods never depart."""

    timed = 0
    packing = 1


class OpenbPending(Enum):
    """What to do with pods that were never scheduled in the real cluster."""

    drop = 0
    keep = 1


class KubectlRunning(Enum):
    """Jobs still running at export: ``keep`` (censored, run until the export) or ``drop``."""

    keep = 0
    drop = 1


class TimeUnit(Enum):
    """Unit of ``submit_time`` and ``duration`` in a generic trace."""

    s = 0
    ms = 1
    us = 2
    min = 3
    h = 4


# --- trace group -------------------------------------------------------------------------------


@dataclass
class TraceConf:
    """Fields every trace option has."""

    name: str = MISSING
    kind: str = MISSING


@dataclass
class PhillyTraceConf(TraceConf):
    """Microsoft Philly job table (Pollux's derivation of cluster_job_log)."""

    name: str = "philly"
    kind: str = "philly"
    path: str = "philly/philly_jobs_pollux.csv.gz"
    max_gpus_per_pod: int = 8


@dataclass
class PhillyRawTraceConf(TraceConf):
    """The raw Philly ``cluster_job_log`` JSON (fetched, not bundled)."""

    name: str = "philly_raw"
    kind: str = "philly_raw"
    path: str = "philly_raw/cluster_job_log"
    max_gpus_per_pod: int = 8


@dataclass
class ItpTraceConf(TraceConf):
    """Microsoft ITP clusters (ElasticFlow release); ``cluster_id`` null = all ten."""

    name: str = "itp"
    kind: str = "itp"
    cluster_id: int | None = None
    variant: ItpVariant = ItpVariant.raw
    root: str = "itp"
    max_gpus_per_pod: int = 8


@dataclass
class OpenbTraceConf(TraceConf):
    """Alibaba openb 2023 pod list (FGD, ATC'23)."""

    name: str = "openb"
    kind: str = "openb"
    path: str = "openb/openb_pod_list_default.csv.gz"
    timing: OpenbTiming = OpenbTiming.timed
    # Pods the real cluster never scheduled are demand a what-if scheduler must face;
    # dropping them would flatter every policy. Their run time is taken as creation→deletion.
    pending: OpenbPending = OpenbPending.keep
    packing_duration: float = 1e9


@dataclass
class Pai2020TraceConf(TraceConf):
    """Alibaba PAI 2020 job, task and instance tables (fetched, not bundled)."""

    name: str = "pai2020"
    kind: str = "pai2020"
    job_table: str = "pai2020/pai_job_table.csv"
    task_table: str = "pai2020/pai_task_table.csv"
    instance_table: str | None = None


@dataclass
class HeliosTraceConf(TraceConf):
    """SenseTime Helios cluster_log.csv (fetched, not bundled)."""

    name: str = "helios"
    kind: str = "helios"
    path: str = "helios/venus/cluster_log.csv"
    gpu_only: bool = True


@dataclass
class CsvTraceConf(TraceConf):
    """Any CSV or Parquet file, columns mapped to canonical names."""

    name: str = "csv"
    kind: str = "csv"
    path: str = MISSING
    columns: dict[str, str] = field(default_factory=dict)
    column_defaults: dict[str, Any] = field(default_factory=dict)
    time_unit: TimeUnit = TimeUnit.s
    datetime_format: str | None = None
    model_separator: str = "|"


@dataclass
class KubectlTraceConf(TraceConf):
    """Your own jobs: ``kubectl get jobs,pytorchjobs,workloads,... -A -o json`` (gpureplay.traces.kubectl)."""

    name: str = "kubectl"
    kind: str = "kubectl"
    path: str = MISSING
    #: Jobs still running at export: keep (replayed until observed_at, a lower bound) or drop.
    running: KubectlRunning = KubectlRunning.keep
    #: When the export was taken (RFC 3339); null: the latest time the file records.
    observed_at: str | None = None
    #: A DCGM exporter scrape (Prometheus query_range JSON or CSV): each job's mean GPU utilisation.
    dcgm: str | None = None
    #: Largest file read, MiB (JSON is read whole, about four times its size in memory).
    max_file_mib: float = 256.0


@dataclass
class SyntheticTraceConf(TraceConf):
    """Synthetic jobs resampled from a real trace's size and duration mix (for scale tests)."""

    name: str = "synthetic"
    kind: str = "synthetic"
    n_jobs: int = 10_000
    #: Offered load on the cluster the trace runs on: arrival rate x mean GPU-seconds per job / its GPUs
    #: (docs/inputs.md, "Synthetic traces"). 0.8 keeps it busy with queues forming; above 1, saturated.
    load: float = 0.8


# --- cluster group -----------------------------------------------------------------------------


@dataclass
class ClusterConf:
    """Fields every cluster option has."""

    name: str = MISSING
    kind: str = MISSING
    #: A topology file (spine / rack / NVLink domain per node, or Crux's topo.csv) replacing the
    #: builder's numbering (gpureplay.cluster.topology); null: the builder's.
    topology: str | None = None
    #: How the file's rows find nodes: by node_name, or in node order.
    topology_match: str = "name"
    #: Price of one node-hour by node type (``gpu_model`` or ``<gpu_model>x<num_gpus>``, the latter winning;
    #: ``cpu-only`` for nodes without GPUs), in any one currency: the run's ``cost`` summary columns
    #: (gpureplay.results.gpu_usage.node_prices). Empty: no prices, and the cost columns are null.
    prices: dict[str, float] = field(default_factory=dict)


@dataclass
class PhillyClusterConf(ClusterConf):
    """Philly machines: the official list, or Qinghao Hu's revised GPU counts."""

    name: str = "philly"
    kind: str = "philly"
    machine_list: str = "philly/cluster_machine_list.csv.gz"
    revised: bool = False
    revised_list: str = "philly/revised_machine_list_qhu.csv.gz"
    rack_size: int = 16
    racks_per_spine: int = 8


@dataclass
class NodeListClusterConf(ClusterConf):
    """A node list read from one file (openb, PAI 2020, spot-GPU)."""

    path: str = MISSING


@dataclass
class KubectlClusterConf(ClusterConf):
    """Your own cluster: the output of ``kubectl get nodes -o json`` (gpureplay.cluster.kubectl)."""

    name: str = "kubectl"
    kind: str = "kubectl"
    path: str = MISSING
    numa_per_node: int = 2
    #: Nodes per rack, in file order, where rack_label is null.
    rack_size: int = 16
    #: Racks per spine where spine_label is null.
    racks_per_spine: int = 8
    #: Node labels naming each node's spine and rack (a Kueue Topology's levels[].nodeLabel); null: numbered.
    spine_label: str | None = None
    rack_label: str | None = None
    #: Node label naming a multi-node NVLink domain (GFD's GPU fabric clique); a node without it is its own.
    nvlink_label: str | None = "nvidia.com/gpu.clique"
    #: Taint keys the replayed pods tolerate; a node with another NoSchedule / NoExecute taint is left out.
    tolerated_taints: list[str] = field(default_factory=lambda: ["nvidia.com/gpu"])


@dataclass
class HomogeneousClusterConf(ClusterConf):
    """``nodes`` identical servers of ``gpus_per_node`` GPUs of one model."""

    name: str = "homogeneous"
    kind: str = "homogeneous"
    nodes: int = 16
    gpus_per_node: int = 8
    gpu_model: str = "A100-80GB"
    cpu_milli: int | None = None
    mem_mib: int | None = None
    numa_per_node: int = 2
    nvlink_domain_size: int | None = None
    rack_size: int = 32
    racks_per_spine: int = 8
    #: A mig-parted config applied to every GPU (``all-3g.40gb``); null: MIG off.
    mig_layout: str | None = None
    #: How many servers (the first ones) get ``mig_layout``; null: all.
    mig_nodes: int | None = None


# --- workload group ----------------------------------------------------------------------------


@dataclass
class ReclaimIdleConf:
    """ReclaimIdleResource annotations of a PriorityClass.

    See :class:`gpureplay.workload.utilization.ReclaimIdlePolicy`. Read under
    ``scheduler.preemption: reclaim_idle`` only (inert otherwise; a warning names them when set).
    """

    minimum_preemptable_priority: int | None = None
    toleration_seconds: int = 0
    cpu_idle_seconds: int = 0
    gpu_idle_seconds: int = 0
    cpu_idle_usage_threshold: float = 0.0
    gpu_idle_usage_threshold: float = 0.0


@dataclass
class PriorityClassConf:
    """A PriorityClass and its share of jobs (:class:`gpureplay.workload.priorities.PriorityClass`)."""

    name: str = MISSING
    value: int = MISSING
    share: float = MISSING
    preemptible: bool = True
    preemption_policy: str = "PreemptLowerPriority"
    reclaim_idle: ReclaimIdleConf = field(default_factory=ReclaimIdleConf)


@dataclass
class UtilizationConf:
    """The jobs' usage model (:class:`gpureplay.workload.utilization.Utilization`).

    Read by every timed replay: the results' busy GPU-hours, energy and idle alerts
    (:mod:`gpureplay.results.gpu_usage`), and the victims of ``scheduler.preemption: reclaim_idle``.

    Parameters
    ----------
    gpu_active
        GPU engine-active ratio of a job's GPUs while it works (a trace's ``gpu_util`` wins).
    cpu_active
        CPU cores per pod while it works; null: the request (a trace's ``cpu_util`` wins).
    idle_share
        Seeded share of jobs (of ``idle_classes``; empty: all) whose usage drops to 0 ``idle_after``
        seconds into each attempt, until they end.
    """

    gpu_active: float = 1.0
    cpu_active: float | None = None
    idle_share: float = 0.0
    idle_after: float = 3600.0
    idle_classes: list[str] = field(default_factory=list)


@dataclass
class CheckpointConf:
    """Checkpointing and restart cost (:class:`gpureplay.workload.priorities.Checkpointing`).

    Parameters
    ----------
    interval
        Seconds of progress between checkpoints; 0: taken at eviction (Lucid,
        Tiresias: only the restart overhead is lost); ``.inf``: never.
    restart_overhead
        Seconds before a restarted job makes progress; null: Lucid's 40 s for
        jobs of at most 8 GPUs, 60 s above.
    """

    interval: float = 0.0
    restart_overhead: float | None = None


@dataclass
class TopologyRequestConf:
    """One topology-request rule (:class:`gpureplay.workload.topology_requests.TopologyRequest`).

    Parameters
    ----------
    min_gpus
        Jobs of at least this many GPUs take the rule (the largest ``min_gpus``
        at or below a job's size wins).
    mode
        ``required``, ``preferred`` or ``unconstrained`` (Kueue's PodSet
        topology annotations).
    level
        ``spine``, ``rack``, ``nvlink_domain`` or ``node``.
    slice_level, slice_size
        Kueue's PodSet slices (``podset-slice-required-topology`` /
        ``podset-slice-size``): every ``slice_size`` pods in one domain of
        ``slice_level``, at or below ``level``; both or neither (null).
    """

    min_gpus: float = MISSING
    mode: str = MISSING
    level: str = "node"
    slice_level: str | None = None
    slice_size: int | None = None


@dataclass
class WorkloadConf:
    """Transforms applied to the canonical jobs before the replay, in this order.

    Parameters
    ----------
    window_start, window_end
        Keep jobs submitted in ``[window_start, window_end)`` seconds (null = open).
    sample_fraction
        Keep a seeded random fraction of jobs (1.0 = all).
    max_jobs
        Keep the first N jobs by submit time (null = all).
    load
        Arrival compression: submit times are divided by ``load`` (2.0 = twice the
        arrival rate, as in load-scaling studies), after re-basing the window at 0.
    priority_classes
        A seeded mix of PriorityClasses for a trace without priorities (empty:
        the trace's own priorities); shares sum to 1.
    priority_override
        Replace priorities the trace has with the mix.
    checkpoint
        Checkpoint interval and restart overhead of every job.
    checkpoint_by_queue
        The same per queue (``queue`` column), overriding ``checkpoint``.
    topology_requests
        Topology requests by job size, for a topology-aware scheduler
        (``scheduler.topology_aware``); a trace's own ``topology_mode`` /
        ``topology_level`` win. Empty: none.
    utilization
        The jobs' GPU / CPU usage over time: read by idle-resource reclaim
        (``scheduler.preemption: reclaim_idle``) and by the results' GPU usage, energy and idle
        alerts (gpureplay.results.gpu_usage).
    """

    name: str = "none"
    window_start: float | None = None
    window_end: float | None = None
    sample_fraction: float = 1.0
    max_jobs: int | None = None
    load: float = 1.0
    priority_classes: list[PriorityClassConf] = field(default_factory=list)
    priority_override: bool = False
    checkpoint: CheckpointConf = field(default_factory=CheckpointConf)
    checkpoint_by_queue: dict[str, CheckpointConf] = field(default_factory=dict)
    topology_requests: list[TopologyRequestConf] = field(default_factory=list)
    utilization: UtilizationConf = field(default_factory=UtilizationConf)


# --- measurement window ------------------------------------------------------------------------


@dataclass
class MeasureConf:
    """The measurement window of the ``window_*`` summary metrics (:mod:`gpureplay.results.metrics`).

    Parameters
    ----------
    start, end
        Seconds of the replayed trace (after the workload transforms); the
        window is ``[start, end]``, capped at the end of the run. Null: the
        first / the last arrival, which leaves out the drain tail after the
        last arrival.
    """

    start: float | None = None
    end: float | None = None


@dataclass
class IdleAlertConf:
    """The idle-GPU alert rule counted in the summary (:class:`gpureplay.results.gpu_usage.IdleAlertRule`).

    Parameters
    ----------
    threshold
        A GPU allocation is idle while its usage is under this share of busy (0.2: 20%).
    window
        Seconds it must stay idle before the alert fires (a Prometheus rule's ``for:``; 1800: 30 min).
    """

    threshold: float = 0.2
    window: float = 1800.0


# --- packing mode -------------------------------------------------------------------------------


class RunMode(Enum):
    """What a run does with the workload.

    ``replay``: the timed replay (queues, runs, departures; the engine's event
    loop). ``packing``: the FGD paper's experiment (Weng et al., ATC'23):
    pods placed once each in a seeded order, failing at once when nothing
    fits, never departing (:mod:`gpureplay.replay.packing`).
    """

    replay = 0
    packing = 1


@dataclass
class PackingConf:
    """Settings of a packing run (``mode: packing``); refused in a timed replay unless left at default.

    Parameters
    ----------
    tune
        Inflate (or trim) the pods, by seeded resampling, to this multiple of
        the cluster's GPU capacity (the FGD artifact's ``-tune``, 1.3 in the
        paper); null keeps the workload as it is.
    shuffle
        Place the original pods in a seeded random order (the artifact's
        ``--shuffle-pod=true``); false keeps the trace order.
    max_pct
        Last whole percent of arrived GPU demand on the fill curve.
    """

    tune: float | None = None
    shuffle: bool = True
    max_pct: int = 130


# --- top level ---------------------------------------------------------------------------------


@dataclass
class Config:
    """The whole run configuration (``conf/config.yaml``).

    Parameters
    ----------
    seed
        Seed of every random choice (sampling, random placement, synthetic traces).
    sample_interval
        Seconds between timeline samples (sample k at k * sample_interval).
    max_samples
        Most timeline rows; beyond it the sample interval doubles (a warning
        says which one was used; the summary's ``sample_interval_used`` too).
    horizon
        Stop the replay at this simulated time (null = run until nothing is left).
    max_time
        Largest submit time, duration and submit time + duration a trace may
        hold, seconds (default 100 years): larger ones are refused when the
        trace is read, naming file, row and column. At most 2**53 s, beyond
        which float64 times step by more than a second.
    max_manifest_mib
        Most YAML read from ``scheduler.manifests`` (all files of a folder
        together), MiB; more is refused before it is read.
    memory_budget_gib
        Memory a run may take, GiB: a run whose estimate (from its nodes, GPUs,
        jobs, pods, queues and timeline samples: :mod:`gpureplay.replay.memory`)
        exceeds it is refused before anything large is allocated (a generated
        cluster before its node table is built), naming the config key that
        sizes the largest part. Null: the memory available when the run starts
        (``MemAvailable`` of ``/proc/meminfo``).
    measure
        The measurement window (:class:`MeasureConf`).
    idle_alert
        The "under 20% busy for 30 minutes" alert rule the summary counts (:class:`IdleAlertConf`).
    debug
        Check the engine's invariants every cycle (slower; always on in tests).
    mode
        :class:`RunMode`: a timed replay or a packing run.
    packing
        :class:`PackingConf`, read in packing mode.
    """

    trace: Any = MISSING
    cluster: Any = MISSING
    scheduler: Policy = field(default_factory=Policy)
    workload: WorkloadConf = field(default_factory=WorkloadConf)
    seed: int = 0
    sample_interval: float = 3600.0
    max_samples: int = 100_000
    horizon: float | None = None
    max_time: float = 3_155_760_000.0
    max_manifest_mib: float = 8.0
    memory_budget_gib: float | None = None
    measure: MeasureConf = field(default_factory=MeasureConf)
    idle_alert: IdleAlertConf = field(default_factory=IdleAlertConf)
    debug: bool = False
    mode: RunMode = RunMode.replay
    packing: PackingConf = field(default_factory=PackingConf)


TRACE_SCHEMAS: dict[str, type[TraceConf]] = {
    "philly": PhillyTraceConf,
    "philly_raw": PhillyRawTraceConf,
    "itp": ItpTraceConf,
    "openb": OpenbTraceConf,
    "pai2020": Pai2020TraceConf,
    "helios": HeliosTraceConf,
    "csv": CsvTraceConf,
    "kubectl": KubectlTraceConf,
    "synthetic": SyntheticTraceConf,
}

CLUSTER_SCHEMAS: dict[str, type[ClusterConf]] = {
    "philly": PhillyClusterConf,
    "node_list": NodeListClusterConf,
    "kubectl": KubectlClusterConf,
    "homogeneous": HomogeneousClusterConf,
}


#: ConfigStore group holding the schemas. They live outside the run's own groups so that Hydra never
#: offers a schema as an option (``scheduler=schema`` would run an unnamed default policy); a YAML
#: option extends its schema with ``defaults: [/schema/<group>/<kind>@_here_, _self_]``.
SCHEMA_GROUP = "schema"


def register_configs() -> None:
    """Register every schema in Hydra's ConfigStore, and the resolver ``gpureplay.point_dir`` that names
    sweep-point folders (:func:`gpureplay.sweep.point_dir`); idempotent."""
    from omegaconf import OmegaConf

    from gpureplay.sweep import point_dir

    if not OmegaConf.has_resolver("gpureplay.point_dir"):
        OmegaConf.register_new_resolver("gpureplay.point_dir", point_dir)
    cs = ConfigStore.instance()
    if "base_config.yaml" in cs.repo:
        return  # stored already in this process: storing converts every dataclass again (0.16 s)
    cs.store(name="base_config", node=Config)
    for kind, trace_schema in TRACE_SCHEMAS.items():
        cs.store(group=f"{SCHEMA_GROUP}/trace", name=kind, node=trace_schema)
    for kind, cluster_schema in CLUSTER_SCHEMAS.items():
        cs.store(group=f"{SCHEMA_GROUP}/cluster", name=kind, node=cluster_schema)
    cs.store(group=f"{SCHEMA_GROUP}/scheduler", name="scheduler", node=Policy)
    cs.store(group=f"{SCHEMA_GROUP}/workload", name="workload", node=WorkloadConf)


def compose_config(overrides: Sequence[str]) -> DictConfig:
    """Compose and check the run config outside ``gpureplay run`` (``trace inspect``, scripts, tests).

    Parameters
    ----------
    overrides
        Hydra overrides, e.g. ``["trace=itp", "trace.cluster_id=4"]``.

    Returns
    -------
    DictConfig
        The config ``gpureplay run`` would replay (without the ``hydra`` node).

    Raises
    ------
    hydra.errors.HydraException
        On a misspelt option or key, or a value of the wrong type
        (:func:`gpureplay.config_check.describe_config_error` words it).
    gpureplay.errors.InputError
        On what composition lets through (:func:`gpureplay.config_check.check_config`).
    """
    from hydra import compose, initialize_config_module

    from gpureplay.config_check import check_config

    register_configs()
    with initialize_config_module(config_module="gpureplay.conf", version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    check_config(cfg)
    return cfg
