"""Canonical input builders and hypothesis strategies for engine-vs-reference tests.

The strategies aim at the corners of the semantics rather than at realism:
ties in submit time, jobs larger than any node, zero-GPU pods, fractional pods
with and without GPU memory, multi-pod gangs, GPU-model constraints naming
models the cluster lacks, zero durations, CPU/memory limits, priority mixes
with preemptible and non-preemptible jobs and ``preemptionPolicy: Never``,
checkpoint intervals (0, finite, never), restart overheads, grace periods
(0 included), both requeue rules, horizons, windows, and ``max_samples`` small
enough to force the timeline to widen. Cluster sizes go from one node to
about fifty (several GPU models, node counts that are not powers of two, so
the engine's per-model fit trees have several levels) and, in a few cases,
more than 64 nodes of one model.

Times are integers or halves and intervals are dyadic, so every sum the two
simulators compute is exact in float64 and most results compare with ``==``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import polars as pl
from hypothesis import strategies as st
from tests.reference.scoring import GPU_SCORERS, SCORERS
from tests.reference.simulator import TAS_LEVELS, TAS_MODES

from gpureplay.cluster.catalog import gpu_model
from gpureplay.schedulers.policy import (
    Backfill,
    GangMode,
    GpuSharing,
    MigDemand,
    MigPlacement,
    MigReconfigure,
    MigStrategy,
    NodeTies,
    Policy,
    Preemption,
    QueueOrder,
    ReclaimWithinCohort,
    ReplicaAllocation,
    Requeue,
    SharingDemand,
    TopologyAware,
    WithinClusterQueue,
)
from gpureplay.schedulers.presets import preset, preset_names
from gpureplay.traces.schema import (
    JOB_DEFAULTS,
    JOBS_SCHEMA,
    NODES_SCHEMA,
    UNKNOWN_CAPACITY,
    validate_jobs,
    validate_nodes,
)
from gpureplay.workload.utilization import ReclaimIdlePolicy, policy_columns

#: Models the random clusters are built from (different memory sizes: 16, 40, 80, 24 GiB).
CLUSTER_MODELS: tuple[str, ...] = ("V100", "T4", "A100-40GB", "A100-80GB", "A10")
#: Models jobs may ask for: the cluster's plus some no node of a random cluster has.
REQUESTABLE_MODELS: tuple[str, ...] = (*CLUSTER_MODELS, "H100-80GB", "P100")
#: The optional job columns the workload adds (docs/engine/state.md, Inputs).
OPTIONAL_JOB_COLUMNS: tuple[str, ...] = ("checkpoint_interval", "restart_overhead", "preemption_policy")

# --------------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------------


def lucid_overhead(num_pods: int, gpu_milli: int) -> float:
    """The spec's default restart overhead: 40 s for jobs of at most 8 GPUs, else 60 s."""
    return 40.0 if num_pods * gpu_milli / 1000 <= 8 else 60.0


def jobs_frame(rows: Sequence[Mapping[str, Any]], source: str = "test-jobs") -> pl.DataFrame:
    """A validated canonical jobs table from dicts (optional columns take :data:`JOB_DEFAULTS`).

    Each row needs ``job_id``, ``submit_time``, ``duration``, ``num_pods`` and
    ``gpu_milli``. The workload's optional columns (``checkpoint_interval``,
    ``restart_overhead``, ``preemption_policy``) are added after validation when
    any row gives them; rows that do not take the spec's default.
    """
    full = [{c: row.get(c, JOB_DEFAULTS.get(c)) for c in JOBS_SCHEMA} for row in rows]
    df = pl.DataFrame(full, schema=JOBS_SCHEMA)
    out = validate_jobs(df.with_row_index("source_row", offset=1), source)
    defaults: dict[str, Any] = {
        "checkpoint_interval": lambda r: 0.0,
        "restart_overhead": lambda r: lucid_overhead(r["num_pods"], r["gpu_milli"]),
        "preemption_policy": lambda r: "PreemptLowerPriority",
    }
    dtypes = {
        "checkpoint_interval": pl.Float64,
        "restart_overhead": pl.Float64,
        "preemption_policy": pl.String,
    }
    for column in OPTIONAL_JOB_COLUMNS:
        if any(column in row for row in rows):
            values = [row.get(column, defaults[column](row)) for row in rows]
            out = out.with_columns(pl.Series(column, values, dtype=dtypes[column]))
    return out


def nodes_frame(rows: Sequence[Mapping[str, Any]], source: str = "test-nodes") -> pl.DataFrame:
    """A validated canonical nodes table from dicts with ``gpu_model`` and ``num_gpus``.

    ``gpu_mem_mib`` defaults to the catalog's memory of the model, ``cpu_milli`` and
    ``mem_mib`` to ``UNKNOWN_CAPACITY``; ``node_id`` is the row index; ``nvlink_domain`` defaults to
    the row index (one domain per server), ``rack`` and ``spine`` to 0.
    """
    full = []
    for i, row in enumerate(rows):
        model = row.get("gpu_model")
        full.append(
            {
                "node_id": i,
                "node_name": f"node-{i}",
                "gpu_model": model,
                "num_gpus": row["num_gpus"],
                "gpu_mem_mib": row.get("gpu_mem_mib", gpu_model(model).memory_mib if model else 0),
                "cpu_milli": row.get("cpu_milli", UNKNOWN_CAPACITY),
                "mem_mib": row.get("mem_mib", UNKNOWN_CAPACITY),
                "numa_of_gpu": None,
                "nvlink_domain": row.get("nvlink_domain", i),
                "rack": row.get("rack", 0),
                "spine": row.get("spine", 0),
                "mig_layout": row.get("mig_layout"),
            }
        )
    df = pl.DataFrame(full, schema=NODES_SCHEMA)
    return validate_nodes(df.with_row_index("source_row", offset=1), source)


# --------------------------------------------------------------------------------------------------
# Clusters
# --------------------------------------------------------------------------------------------------

_CPUS = st.sampled_from([UNKNOWN_CAPACITY, UNKNOWN_CAPACITY, 4000, 16000, 64000])
_MEMS = st.sampled_from([UNKNOWN_CAPACITY, UNKNOWN_CAPACITY, 16384, 131072])


@st.composite
def node_rows(draw: st.DrawFn, max_nodes: int = 5) -> list[dict[str, Any]]:
    """1-``max_nodes`` nodes, 0-8 GPUs each, of 1-3 catalog models, CPU/memory finite or unknown."""
    models = draw(st.lists(st.sampled_from(CLUSTER_MODELS), min_size=1, max_size=3, unique=True))
    n = draw(st.integers(1, max_nodes))
    rows = []
    for _ in range(n):
        num_gpus = draw(st.sampled_from([0, 1, 2, 2, 3, 4, 4, 8, 8]))
        model: str | None = draw(st.sampled_from(models))
        if num_gpus == 0 and draw(st.booleans()):
            model = None  # a CPU-only node with no GPU model at all
        rows.append(
            {"gpu_model": model, "num_gpus": num_gpus, "cpu_milli": draw(_CPUS), "mem_mib": draw(_MEMS)}
        )
    return rows


@st.composite
def big_node_rows(draw: st.DrawFn, min_nodes: int = 6, max_nodes: int = 50) -> list[dict[str, Any]]:
    """Clusters of several GPU models in groups whose sizes are rarely powers of two.

    Each model's group gets 1-33 nodes (the engine keeps one segment tree per
    model, so a group of 5, 12 or 33 nodes makes a tree of several levels with
    padding); groups are interleaved or in blocks; a few nodes have finite
    CPU/memory or no GPUs. Up to ``max_nodes`` nodes in all.
    """
    models = draw(st.lists(st.sampled_from(CLUSTER_MODELS), min_size=1, max_size=4, unique=True))
    rows: list[dict[str, Any]] = []
    for model in models:
        count = draw(st.sampled_from([1, 3, 5, 7, 12, 17, 33]))
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        for _ in range(count):
            rows.append({"gpu_model": model, "num_gpus": draw(st.sampled_from([gpus, gpus, gpus, 2, 8]))})
    if draw(st.booleans()):
        rows.append({"gpu_model": None, "num_gpus": 0, "cpu_milli": 64000})
    rows = rows[:max_nodes]
    while len(rows) < min_nodes:
        rows.append({"gpu_model": models[0], "num_gpus": 4})
    if draw(st.booleans()):
        rows = draw(st.permutations(rows))
    for row in draw(st.lists(st.sampled_from(rows), max_size=4)):  # some finite CPU/memory
        row["cpu_milli"] = draw(_CPUS)
        row["mem_mib"] = draw(_MEMS)
    return rows


@st.composite
def wide_node_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    """More than 64 nodes of one model (65-80, 1-2 GPUs each) next to a few of another."""
    count = draw(st.integers(65, 80))
    rows = [{"gpu_model": "V100", "num_gpus": draw(st.sampled_from([1, 2]))} for _ in range(count)]
    rows += [{"gpu_model": "A100-80GB", "num_gpus": 8} for _ in range(draw(st.integers(0, 3)))]
    return rows


# --------------------------------------------------------------------------------------------------
# Jobs
# --------------------------------------------------------------------------------------------------

#: Times and durations: small integers and halves (exact in float64), with many ties.
_times = st.one_of(st.integers(0, 12).map(float), st.integers(0, 60).map(lambda x: x / 2))
_durations = st.one_of(st.just(0.0), st.integers(1, 40).map(float), st.sampled_from([0.5, 2.5, 100.0]))
_MILLI = [0, 0, 100, 250, 300, 500, 700, 1000, 1000, 1000, 2000, 3000, 4000, 8000, 16000]

#: Priority mixes: all equal, a few levels, a rare high class, negative values.
PRIORITY_MIXES: tuple[tuple[int, ...], ...] = (
    (0,),
    (0, 0, 1, 2, 3),
    (0, 0, 0, 0, 100),
    (-5, 0, 5),
    (0, 1),
)
CHECKPOINTS = (0.0, 0.0, 1.0, 2.5, 4.0, math.inf)
OVERHEADS = (0.0, 0.5, 2.0, 3.0)


@st.composite
def job_rows(
    draw: st.DrawFn, max_jobs: int = 25, times: st.SearchStrategy[float] = _times
) -> list[dict[str, Any]]:
    """1-``max_jobs`` jobs in arbitrary input order with unique, non-contiguous job ids.

    About half of the traces carry the preemption columns: a priority mix,
    some non-preemptible jobs, some ``preemptionPolicy: Never``, checkpoint
    intervals and restart overheads (or none, for Lucid's default). Most carry a
    ``queue`` column of one to three queues (``queues.parquet`` per queue).
    """
    n = draw(st.integers(1, max_jobs))
    ids = draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n, unique=True))
    priorities = draw(st.sampled_from(PRIORITY_MIXES))
    preemption_columns = draw(st.booleans())
    overhead_column = preemption_columns and draw(st.booleans())
    never_share = draw(st.sampled_from([0, 0, 1, 4]))  # 1 in never_share jobs (0: none)
    queues = draw(st.sampled_from([None, ("vc-a",), ("vc-a", "vc-b"), ("vc-a", "vc-b", "vc-c")]))
    rows = []
    for job_id in ids:
        milli = draw(st.sampled_from(_MILLI))
        models: list[str] | None = None
        if draw(st.integers(0, 3)) == 0:
            models = draw(st.lists(st.sampled_from(REQUESTABLE_MODELS), min_size=0, max_size=2, unique=True))
        row: dict[str, Any] = {
            "job_id": job_id,
            "submit_time": draw(times),
            "duration": draw(_durations),
            "num_pods": draw(st.sampled_from([1, 1, 1, 2, 2, 3, 4, 6, 8])),
            "gpu_milli": milli,
            "gpu_mem_mib": draw(st.sampled_from([None, None, None, 0, 4096, 12000, 16384, 20000, 40960])),
            "gpu_models": models,
            "cpu_milli": draw(st.sampled_from([0, 0, 0, 500, 2000, 8000, 32000])),
            "mem_mib": draw(st.sampled_from([0, 0, 0, 1024, 8192, 65536])),
            "priority": draw(st.sampled_from(priorities)),
            "preemptible": draw(st.sampled_from([True, True, True, True, False])),
        }
        if preemption_columns:
            row["checkpoint_interval"] = draw(st.sampled_from(CHECKPOINTS))
            if never_share and draw(st.integers(0, never_share - 1)) == 0:
                row["preemption_policy"] = "Never"
            else:
                row["preemption_policy"] = "PreemptLowerPriority"
        if overhead_column:
            row["restart_overhead"] = draw(st.sampled_from(OVERHEADS))
        if queues is not None:
            row["queue"] = draw(st.sampled_from(queues))
        rows.append(row)
    return rows


@st.composite
def cases(draw: st.DrawFn, max_jobs: int = 25) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A small validated (jobs, nodes) pair: 1-5 nodes, up to ``max_jobs`` jobs."""
    nodes = nodes_frame(draw(node_rows()))
    jobs = jobs_frame(draw(job_rows(max_jobs)))
    return jobs, nodes


#: Submit times of the big cases: spread over 0-200 s in halves, so hundreds of jobs still queue.
_big_times = st.integers(0, 400).map(lambda x: x / 2)


@st.composite
def big_cases(draw: st.DrawFn, max_jobs: int = 300, wide: bool = False) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A (jobs, nodes) pair of 6-50 nodes (``wide``: 65-83) and up to ``max_jobs`` jobs."""
    rows = draw(wide_node_rows() if wide else big_node_rows())
    nodes = nodes_frame(rows)
    jobs = jobs_frame(draw(job_rows(max_jobs, times=_big_times)))
    return jobs, nodes


# --------------------------------------------------------------------------------------------------
# Policies
# --------------------------------------------------------------------------------------------------

#: Every preset shipped in ``conf/scheduler/`` (read from the YAML files), by name.
PRESETS: dict[str, Policy] = {name: preset(name) for name in preset_names()}
#: The fractional GPU-sharing presets (HAMi, KAI, gpushare: placement and booking rules only, no change
#: of mechanics; time-slicing and MPS change run times and are mechanism presets).
SHARING_PRESETS: tuple[str, ...] = ("hami-binpack", "hami-spread", "kai-shared", "gpushare")


#: The annotations every PriorityClass gets in :func:`as_taken_by` under ``preemption: reclaim_idle``.
TAKEN_IDLE_POLICY = ReclaimIdlePolicy(toleration_seconds=3, gpu_idle_seconds=2, cpu_idle_seconds=2)


def as_taken_by(jobs: pl.DataFrame, policy: Policy) -> pl.DataFrame:
    """``jobs`` as ``policy`` can replay them: under a kubelet Topology Manager policy, which refuses a
    fraction of a GPU, or KAI's reclaim and preempt actions (whole-GPU pods only), a fractional job asks the
    whole GPUs its fraction rounds up to; under
    ``preemption: reclaim_idle`` each priority is a PriorityClass (:data:`TAKEN_IDLE_POLICY`) and jobs of
    odd id go idle 1 s into each attempt (the others work at full GPU, their CPU request in cores)."""
    if policy.preemption is Preemption.reclaim_idle:
        values = {f"p{v}": int(v) for v in jobs["priority"].unique().to_list()}
        jobs = jobs.with_columns(
            priority_class=pl.format("p{}", pl.col("priority")),
            gpu_util=pl.when(pl.col("gpu_milli") > 0).then(1.0).otherwise(0.0),
            cpu_util=pl.col("cpu_milli").cast(pl.Float64) / 1000.0,
            idle_after=pl.when(pl.col("job_id") % 2 == 1).then(1.0).otherwise(math.inf),
        )
        jobs = jobs.with_columns(policy_columns(dict.fromkeys(values, TAKEN_IDLE_POLICY), values))
    kai_actions = str(getattr(policy.queues, "name", policy.queues)) == "kai" and policy.actions is not None
    if str(getattr(policy.topology_manager, "name", policy.topology_manager)) == "none" and not kai_actions:
        return jobs
    whole = ((pl.col("gpu_milli") + 999) // 1000 * 1000).cast(jobs.schema["gpu_milli"])
    return jobs.with_columns(gpu_milli=whole)


#: Kueue presets that differ from ``kueue`` only in their quotas (derived from Philly's VC list, which
#: generated queues are not in) or in the order fair sharing gives heads: the generated Kueue trees of
#: ``kueue_manifests`` draw both on their own (suite time).
QUOTA_VARIANTS: frozenset[str] = frozenset({"kueue-fair", "kueue-philly-vcs", "kueue-philly-vcs-isolated"})

#: The presets that differ in their mechanics (queue order, gang, backfill, preemption): the FGD
#: paper's and the GPU-sharing systems' presets differ from these in placement scorers and sharing
#: settings only, which chunk boundaries do not touch (tests/test_progress.py).
MECHANISM_PRESETS: dict[str, Policy] = {
    name: policy
    for name, policy in PRESETS.items()
    if not name.startswith("fgd") and name not in SHARING_PRESETS and name not in QUOTA_VARIANTS
}


def preemptive(policy: Policy, **changes: Any) -> Policy:
    """``policy`` with priority preemption (and ``changes``), named after it."""
    changes.setdefault("name", f"{policy.name}+preempt")
    return replace(policy, preemption=Preemption.priority, **changes)


def _preset_or_default(name: str, fallback: Policy) -> Policy:
    return PRESETS.get(name, fallback)


_GANG = _preset_or_default(
    "gang-binpack",
    Policy(
        "gang-binpack", QueueOrder.priority, GangMode.gang, "best_fit", "best_fit", backfill=Backfill.skip
    ),
)
_KUBE = _preset_or_default(
    "kube-default",
    Policy(
        "kube-default",
        QueueOrder.priority,
        GangMode.pod_by_pod,
        "worst_fit",
        "worst_fit",
        backfill=Backfill.skip,
    ),
)
_FIFO = _preset_or_default("fifo", Policy("fifo"))

#: Preemption variants of the gang and pod-by-pod presets (the shipped preemption presets, when
#: present, are in :data:`PRESETS` too): grace periods, requeue rules, few candidate nodes, random
#: scorers, head-of-line blocking.
PREEMPT_VARIANTS: dict[str, Policy] = {
    p.name: p
    for p in (
        preemptive(_GANG, graceful_termination=2.0),
        preemptive(_KUBE, graceful_termination=2.0),
        preemptive(
            _GANG, name="gang-preempt-grace0-original", graceful_termination=0.0, requeue=Requeue.original
        ),
        preemptive(_KUBE, name="kube-preempt-grace0", graceful_termination=0.0),
        preemptive(
            _GANG,
            name="gang-preempt-random-few-candidates",
            node_placement="random",
            gpu_placement="random",
            min_candidate_nodes=1,
            candidate_nodes_percent=0,
        ),
        preemptive(
            _KUBE,
            name="kube-preempt-random-2-candidates",
            node_placement="random",
            gpu_placement="random",
            min_candidate_nodes=2,
            requeue=Requeue.original,
        ),
    )
}


#: Queue models with their own system's topology-aware placement in the suite's policies: ONE variant (each
#: is a compile variant the suite's warm-up builds), the most representative pair: Kueue's derived quotas with
#: Kueue TAS and its classical preemption (withinClusterQueue LowerPriority, reclaimWithinCohort Any).
#: tests/test_differential.py ``queue_tas_cases`` draws every modelled pair with its evictions.
QUEUE_TAS_VARIANTS: dict[str, Policy] = (
    {
        "kueue-queues-tas-preempt": replace(
            PRESETS["kueue"],
            name="kueue-queues-tas-preempt",
            topology_aware=TopologyAware.kueue,
            within_cluster_queue=WithinClusterQueue.lower_priority,
            reclaim_within_cohort=ReclaimWithinCohort.any,
        )
    }
    if "kueue" in PRESETS
    else {}
)


#: Topology requests (mode, level) jobs draw under Kueue TAS: none (most often: the implied request) or any
#: mode at any level. Shared by tests/test_tas.py and tests/test_differential.py (module level: a strategy
#: module imported while a Hypothesis test draws would define tests inside it).
TAS_REQUESTS = st.sampled_from(
    [(None, None), (None, None)] + [(mode, level) for mode in TAS_MODES for level in TAS_LEVELS]
)


@st.composite
def tas_nodes(draw: st.DrawFn, max_nodes: int = 8, known: bool = False) -> list[dict[str, Any]]:
    """1-``max_nodes`` nodes with small, repeating spine / rack / NVLink ids (a rack id under two spines,
    an NVLink id under two racks), V100 or T4, 0-8 GPUs; CPU and memory finite or (unless ``known``)
    unknown (a node of unknown CPU or memory holds a GPU-less pod that asks it 2**40 times: "Counts (phase
    1)")."""
    cpus = [8000, 32000] if known else [UNKNOWN_CAPACITY, UNKNOWN_CAPACITY, 8000, 32000]
    mems = [16384, 131072] if known else [UNKNOWN_CAPACITY, 16384]
    rows = []
    for _ in range(draw(st.integers(1, max_nodes))):
        rows.append(
            {
                "gpu_model": draw(st.sampled_from(["V100", "V100", "T4"])),
                "num_gpus": draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4, 8])),
                "spine": draw(st.integers(0, 1)),
                "rack": draw(st.integers(0, 2)),
                "nvlink_domain": draw(st.integers(0, 3)),
                "cpu_milli": draw(st.sampled_from(cpus)),
                "mem_mib": draw(st.sampled_from(mems)),
            }
        )
    return rows


#: Requests under KAI's topology plugin and Volcano's HyperNode placement (tests/test_tas_kai_volcano.py).
KAI_TAS_REQUESTS = st.sampled_from(
    [(None, None), (None, None), ("unconstrained", "node")]
    + [(mode, level) for mode in ("required", "preferred") for level in TAS_LEVELS]
)
VOLCANO_TAS_REQUESTS = st.sampled_from(
    [(None, None), (None, None), ("unconstrained", "node"), ("preferred", "rack"), ("preferred", "node")]
    + [("required", level) for level in ("spine", "rack", "nvlink_domain")]
)


#: The scorers :func:`policies` drew before the FGD paper's were added (drawn first, as then).
CLASSIC_SCORERS: tuple[str, ...] = ("first_fit", "best_fit", "worst_fit", "random", "balanced_allocation")
#: The FGD paper's scorers, drawn after every older field. The GPU-sharing systems' scorers are
#: not drawn here (a longer list would change every later draw): ``tests/test_sharing.py`` draws
#: them with the sharing settings.
PAPER_SCORERS: tuple[str, ...] = ("fgd", "dot_product", "gpu_packing", "gpu_clustering", "best_fit_cpu_gpu")


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    """Any combination of the policy settings (EASY without preemption), random scorers weighted up.

    Scorers come from :data:`CLASSIC_SCORERS` and :data:`PAPER_SCORERS`;
    ``gpu_placement`` from the GPU-capable ones
    (:data:`tests.reference.scoring.GPU_SCORERS`).

    The fields are drawn in the order they were first drawn in: the scorers
    first from the original five (:data:`CLASSIC_SCORERS`), then, after every
    older field, ``node_ties`` and a quarter of the time a later scorer in
    place of each; so an older field keeps its draws (a changed draw order
    once turned a big generated case into one the reference replays very
    slowly).
    """
    scorers = st.sampled_from([*CLASSIC_SCORERS, "random"])
    gpu_scorers = scorers
    backfill = draw(st.sampled_from(list(Backfill)))
    preemptions = [Preemption.none, Preemption.priority]  # reclaim_idle: tests/test_reclaim_idle.py
    preemption = Preemption.none if backfill is Backfill.easy else draw(st.sampled_from(preemptions))
    # Preemption is refused without the priority order (kube-scheduler's PrioritySort).
    orders = list(QueueOrder) if preemption is Preemption.none else [QueueOrder.priority]
    policy = Policy(
        name="random",
        queue_order=draw(st.sampled_from(orders)),
        gang=draw(st.sampled_from(list(GangMode))),
        node_placement=draw(scorers),
        gpu_placement=draw(gpu_scorers),
        backfill=backfill,
        backfill_depth=draw(st.sampled_from([0, 0, 1, 2, 3])),
        session_interval=draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 3.0, 4.0])),
        preemption=preemption,
        graceful_termination=draw(st.sampled_from([0.0, 0.5, 2.0, 30.0])),
        requeue=draw(st.sampled_from(list(Requeue))),
        min_candidate_nodes=draw(st.sampled_from([1, 2, 100])),
        candidate_nodes_percent=draw(st.sampled_from([0, 10, 50, 100])),
    )
    ties = [NodeTies.lowest_index, NodeTies.lowest_index, NodeTies.random, NodeTies.seeded_order]
    policy = replace(policy, node_ties=draw(st.sampled_from(ties)))
    if policy.gang is GangMode.pod_by_pod:
        # Pods are placed in PrioritySort order and never block each other (the only settings that
        # mode takes); drawn as before, so every later draw is unchanged.
        policy = replace(policy, queue_order=QueueOrder.priority, backfill=Backfill.skip, backfill_depth=0)
    # The FGD paper's scorers are compiled into their own variant of the replay (with the task
    # classes) per mechanism; drawn for one mechanism set only (gang, no EASY, no preemption) to keep
    # the suite's compilations few. The draws are made in every case, so later fields keep theirs.
    paper_ok = (
        policy.gang is GangMode.gang and backfill is not Backfill.easy and preemption is Preemption.none
    )
    later = [name for name in SCORERS if name in PAPER_SCORERS]
    if later and draw(st.integers(0, 3)) == 0:
        node = draw(st.sampled_from(later))
        if paper_ok:
            policy = replace(policy, node_placement=node)
    later_gpu = [name for name in GPU_SCORERS if name in PAPER_SCORERS]
    if later_gpu and draw(st.integers(0, 3)) == 0:
        gpu = draw(st.sampled_from(later_gpu))
        if paper_ok:
            policy = replace(policy, gpu_placement=gpu)
    # [Spreading cost] a third of the time spreading costs something (drawn last: earlier fields keep
    # their draws); the shared-device policies built on this one set the factors back to 1 (refused there).
    if draw(st.integers(0, 2)) == 0:
        policy = replace(
            policy,
            spread_rate_nvlink=draw(st.sampled_from([0.5, 0.8, 1.0])),
            spread_rate_rack=draw(st.sampled_from([0.9, 1.0])),
            spread_rate_spine=draw(st.sampled_from([0.75, 1.0])),
        )
    # [Scorers] a sixth of the time kube-scheduler's MostAllocated ranks the nodes (drawn after every older
    # field, which keep their draws; a scorer code, not a compile variant: any mechanism set takes it).
    if draw(st.integers(0, 5)) == 0:
        policy = replace(policy, node_placement="most_allocated")
    return policy


#: What spreading costs nothing: the factors a policy on shared devices (replicas, MIG) must keep.
NO_SPREAD_COST: dict[str, float] = {
    "spread_rate_nvlink": 1.0,
    "spread_rate_rack": 1.0,
    "spread_rate_spine": 1.0,
}


#: Node scorers that take replica devices (the others model other GPU-sharing systems).
REPLICA_SCORERS: tuple[str, ...] = ("first_fit", "best_fit", "worst_fit", "random", "balanced_allocation")


@st.composite
def _device_base(draw: st.DrawFn) -> tuple[Policy, str]:
    """A random policy for shared devices (replicas, MIG instances) and a node scorer that takes them.

    The two mechanism sets the sharing presets compile: gang with priority preemption (with equal
    priorities a plain gang replay) and pod by pod without; EASY drawn as skip; a node scorer of
    another sharing system swapped for one of :data:`REPLICA_SCORERS`.
    """
    base = replace(draw(policies()), **NO_SPREAD_COST)
    if base.backfill is Backfill.easy:
        base = replace(base, backfill=Backfill.skip, backfill_depth=0)
    if base.gang is GangMode.gang:
        base = replace(base, preemption=Preemption.priority, queue_order=QueueOrder.priority)
    else:
        base = replace(base, preemption=Preemption.none)
    node = base.node_placement
    if node not in REPLICA_SCORERS:
        node = draw(st.sampled_from(REPLICA_SCORERS))
    return base, node


@st.composite
def sharing_policies(draw: st.DrawFn) -> Policy:
    """A random policy (:func:`policies`) on GPUs shared by replicas: time-slicing or MPS, 2 to 4 replicas.

    The device plugin picks the replicas (``gpu_placement`` first_fit); a node scorer of another
    sharing system is swapped for one of :data:`REPLICA_SCORERS`. Each mechanism set is a replay
    compiled apart and the suite's budget holds two with sharing: gang with priority preemption
    (with equal priorities a plain gang replay) and pod by pod without (the presets' own); EASY is
    drawn as skip. All four sets and EASY agreed on 60 cases each when this was written.
    """
    base, node = draw(_device_base())
    mode = draw(st.sampled_from([GpuSharing.time_slicing, GpuSharing.mps]))
    overhead = 0.0
    if mode is GpuSharing.time_slicing:
        overhead = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))
    return replace(
        base,
        name=f"random+{mode.name}",
        node_placement=node,
        gpu_placement="first_fit",
        gpu_sharing=mode,
        replicas=draw(st.integers(2, 4)),
        replica_allocation=draw(st.sampled_from(list(ReplicaAllocation))),
        sharing_demand=draw(st.sampled_from(list(SharingDemand))),
        switch_overhead=overhead,
    )


#: MIG layouts the single strategy accepts, per MIG model of :data:`CLUSTER_MODELS` (mig-parted's
#: standard configs of one profile; all-disabled keeps whole GPUs).
MIG_LAYOUTS: dict[str, tuple[str, ...]] = {
    "A100-40GB": ("all-1g.5gb", "all-1g.10gb", "all-2g.10gb", "all-3g.20gb", "all-4g.20gb", "all-7g.40gb",
                  "all-1g.5gb.me", "all-disabled"),
    "A100-80GB": ("all-1g.10gb", "all-1g.20gb", "all-2g.20gb", "all-3g.40gb", "all-4g.40gb", "all-7g.80gb",
                  "all-disabled"),
}  # fmt: skip
#: Profiles jobs may name: some every layout above has, some no node has.
MIG_PROFILES: tuple[str, ...] = ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")


@st.composite
def mig_cases(draw: st.DrawFn, max_jobs: int = 25) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A (jobs, nodes) pair on 1-5 nodes of A100s under random single-strategy MIG layouts, and V100s.

    About one GPU job in three names a ``mig_profile`` (:data:`MIG_PROFILES`).
    """
    rows = []
    for _ in range(draw(st.integers(1, 5))):
        model = draw(st.sampled_from(["A100-40GB", "A100-80GB", "A100-80GB", "V100"]))
        layout = draw(st.sampled_from(MIG_LAYOUTS[model])) if model in MIG_LAYOUTS else None
        rows.append({"gpu_model": model, "num_gpus": draw(st.integers(1, 4)), "mig_layout": layout})
    nodes = nodes_frame(rows)
    jobs = draw(job_rows(max_jobs))
    for row in jobs:
        if row["gpu_milli"] > 0 and draw(st.integers(0, 2)) == 0:
            row["mig_profile"] = draw(st.sampled_from(MIG_PROFILES))
    return jobs_frame(jobs), nodes


@st.composite
def mig_policies(draw: st.DrawFn) -> Policy:
    """A random policy (:func:`policies`) on MIG instances (device plugin single strategy).

    As :func:`sharing_policies`: the gang + priority preemption and pod-by-pod mechanism sets the
    sharing presets compile (EASY drawn as skip), a replica-compatible node scorer, first_fit GPUs;
    random ``mig_demand`` and ``sharing_demand``.
    """
    base, node = draw(_device_base())
    return replace(
        base,
        name="random+mig",
        node_placement=node,
        gpu_placement="first_fit",
        mig_strategy=MigStrategy.single,
        mig_demand=draw(st.sampled_from(list(MigDemand))),
        sharing_demand=draw(st.sampled_from(list(SharingDemand))),
    )


MIG_ENABLED = "all-enabled"
#: [Dynamic MIG] models of the dynamic-MIG clusters: MIG models (all-enabled: dynamic; null or all-disabled:
#: whole GPUs) and a model without MIG.
DYNAMIC_MIG_MODELS: tuple[str, ...] = ("A100-40GB", "A100-80GB", "H100-80GB", "V100")
#: Profiles jobs may name under dynamic MIG: every plain profile of those models (some on one model only,
#: ``1g.10gb`` of 2 slices on the A100-40GB and of 1 on the others).
DYNAMIC_MIG_PROFILES: tuple[str, ...] = (
    "1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb",
    "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
)  # fmt: skip


#: [Slice-mask MIG] mixed-strategy layouts per model: several profiles (all-balanced) or one.
MIXED_MIG_LAYOUTS: dict[str, tuple[str, ...]] = {
    "A100-40GB": ("all-balanced", "all-balanced", "all-3g.20gb", "all-1g.10gb", "all-2g.10gb"),
    "A100-80GB": ("all-balanced", "all-balanced", "all-3g.40gb", "all-1g.20gb"),
    "H100-80GB": ("all-balanced", "all-balanced", "all-2g.20gb", "all-7g.80gb"),
}


@st.composite
def dynamic_mig_cases(
    draw: st.DrawFn, max_jobs: int = 25, *, mixed: bool = False
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A (jobs, nodes) pair on 1-5 nodes: dynamic A100-40GB / A100-80GB / H100 nodes and whole-GPU ones.

    MIG models are mostly ``all-enabled`` (dynamic), else null or all-disabled (whole GPUs); V100s and
    now and then a CPU-only node keep whole GPUs. About half the fractional jobs name a profile
    (:data:`DYNAMIC_MIG_PROFILES`); whole-GPU and CPU-only jobs never do (an input error). ``mixed``:
    MIG nodes take a layout of :data:`MIXED_MIG_LAYOUTS` instead of all-enabled.
    """
    rows: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 5))):
        model: str | None = draw(st.sampled_from(DYNAMIC_MIG_MODELS))
        layout = None
        if model != "V100":
            enabled = draw(st.sampled_from(MIXED_MIG_LAYOUTS[model])) if mixed else MIG_ENABLED
            layout = draw(st.sampled_from([enabled, enabled, enabled, None, "all-disabled"]))
        num_gpus = draw(st.integers(1, 4))
        if draw(st.integers(0, 9)) == 0:
            model, layout, num_gpus = None, None, 0
        rows.append(
            {
                "gpu_model": model,
                "num_gpus": num_gpus,
                "mig_layout": layout,
                "cpu_milli": draw(_CPUS),
                "mem_mib": draw(_MEMS),
            }
        )
    nodes = nodes_frame(rows)
    jobs = draw(job_rows(max_jobs))
    for row in jobs:
        if 0 < row["gpu_milli"] < 1000 and draw(st.booleans()):
            row["mig_profile"] = draw(st.sampled_from(DYNAMIC_MIG_PROFILES))
    return jobs_frame(jobs), nodes


@st.composite
def dynamic_mig_policies(draw: st.DrawFn, *, mixed: bool = False) -> Policy:
    """A random policy (:func:`policies`) on dynamic MIG, in mechanism sets the suite compiles anyway.

    Gang (the ``fifo`` preset's set: backfill none or skip) or pod by pod (``mig-single``'s), never
    preemption or EASY (refused with dynamic MIG); a replica-compatible node scorer, first_fit GPUs;
    random start rule (hami, lowest_start or [MIG FGD] fgd), creation time and ``sharing_demand``
    (``mixed``: the mixed strategy, whose instances exist: no start rule or creation time; [MIG
    re-partitioning] half the time idle GPUs are re-partitioned, with a random downtime). [MIG FGD]
    Under dynamic MIG the node scorer is sometimes ``fgd`` (FGD over slices scoring nodes, with any start
    rule; mostly with the fgd one).
    """
    base = replace(draw(policies()), **NO_SPREAD_COST)
    if base.backfill is Backfill.easy:
        base = replace(base, backfill=Backfill.skip, backfill_depth=0)
    node = base.node_placement
    if node not in REPLICA_SCORERS:
        node = draw(st.sampled_from(REPLICA_SCORERS))
    placement = MigPlacement.hami if mixed else draw(st.sampled_from(list(MigPlacement)))
    if not mixed and draw(st.sampled_from([False, False, placement.name == "fgd", True])):
        node = "fgd"
    repartition = mixed and draw(st.booleans())
    return replace(
        base,
        name="random+mixed-mig" if mixed else "random+dynamic-mig",
        node_placement=node,
        gpu_placement="first_fit",
        preemption=Preemption.none,
        mig_strategy=MigStrategy.mixed if mixed else MigStrategy.dynamic,
        mig_demand=MigDemand.smallest_fit,
        mig_placement=placement,
        mig_create_s=0.0 if mixed else draw(st.sampled_from([0.0, 0.0, 0.5, 3.0])),
        sharing_demand=draw(st.sampled_from(list(SharingDemand))),
        mig_reconfigure=MigReconfigure.idle if repartition else MigReconfigure.none,
        mig_reconfigure_s=draw(st.sampled_from([0.0, 0.5, 3.0, 60.0])) if repartition else None,
    )


#: Sample intervals: dyadic so ``k * interval`` stays exact.
sample_intervals = st.sampled_from([1.0, 2.5, 4.0, 10.0, 3600.0])
#: Row bounds: mostly the default, sometimes small enough to widen the timeline.
max_samples = st.sampled_from([100_000, 100_000, 2, 3, 5])
seeds = st.sampled_from([0, 1, 42, 123_456_789, 2**63 - 1])
horizons = st.sampled_from([None, None, 0.0, 3.0, 7.5, 12.0, 20.0])
windows = st.sampled_from([None, None, (0.0, 5.0), (2.5, 20.0), (10.0, 10.0)])


# --------------------------------------------------------------------------------------------------
# Hand-made corner cases
# --------------------------------------------------------------------------------------------------


def _job(job_id: int, submit: float, duration: float, pods: int, milli: int, **extra: Any) -> dict[str, Any]:
    row = {"job_id": job_id, "submit_time": submit, "duration": duration, "num_pods": pods}
    return row | {"gpu_milli": milli} | extra


_EIGHT_V100 = [{"gpu_model": "V100", "num_gpus": 8}]
_CKPT = {"checkpoint_interval": 4.0, "restart_overhead": 1.0}

#: Small cases that random generation rarely reaches, by name: (job rows, node rows).
CORNER_CASES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    # Two 8-pod jobs at the same second on one 8-GPU node: the pod-by-pod deadlock.
    "gang-deadlock": ([_job(1, 0, 10, 8, 1000), _job(2, 0, 10, 8, 1000)], _EIGHT_V100),
    # Job A (4 pods) before job B (3 pods) with 3 GPUs free.
    "three-free-slots": (
        [_job(1, 0, 100, 1, 5000), _job(2, 10, 50, 4, 1000), _job(3, 11, 50, 3, 1000)],
        _EIGHT_V100,
    ),
    # EASY: B would delay the wide head A, C ends before the shadow time.
    "backfill": (
        [
            _job(1, 0, 100, 1, 5000),
            _job(2, 10, 50, 6, 1000),
            _job(3, 11, 200, 3, 1000),
            _job(4, 12, 30, 2, 1000),
        ],
        _EIGHT_V100,
    ),
    # EASY: two running jobs end at the shadow time; only the first is released in the projection.
    "easy-same-finish-time": (
        [
            _job(1, 0, 100, 1, 2000),
            _job(2, 0, 100, 1, 2000),
            _job(3, 0, 200, 1, 3000),
            _job(4, 10, 50, 3, 1000),
            _job(5, 11, 500, 1, 1000),
        ],
        _EIGHT_V100,
    ),
    # EASY: J (backfilled at t=1) ends exactly at the shadow time, after the release that lets the
    # head fit, so a reservation recomputed at t=2 holds J's GPU at S and refuses K; one kept from
    # t=1 (which never held J) would let K start.
    "easy-backfill-ends-at-shadow": (
        [
            _job(1, 0, 10, 1, 4000),
            _job(2, 0, 100, 1, 2000),
            _job(3, 1, 10, 1, 5000),
            _job(4, 1, 9, 1, 1000),
            _job(5, 2, 50, 1, 1000),
        ],
        _EIGHT_V100,
    ),
    # Zero-duration jobs that each free the GPU for the next one: several passes at one time.
    "zero-duration-chain": (
        [_job(i, 0, 0, 1, 1000) for i in range(1, 5)] + [_job(9, 0, 5, 1, 1000), _job(10, 5, 0, 2, 500)],
        [{"gpu_model": "T4", "num_gpus": 1}],
    ),
    # Every rejection reason and their order, on a mixed cluster with a CPU-only node.
    "rejections": (
        [
            _job(1, 0, 5, 1, 1000, gpu_models=["A100-80GB"]),
            _job(2, 0, 5, 1, 8000),
            _job(3, 0, 5, 3, 4000),
            _job(4, 0, 5, 1, 1000, gpu_mem_mib=20000),
            _job(5, 0, 5, 1, 0, cpu_milli=100_000),
            _job(6, 0, 5, 3, 1000, gpu_models=["T4"]),
            _job(7, 0, 5, 1, 0, gpu_models=["A100-80GB"], cpu_milli=32000),
            _job(8, 0, 5, 4, 500, gpu_models=["T4"]),
            _job(9, 0, 5, 3, 600, gpu_models=["T4"]),
            _job(10, 0, 5, 3, 250, gpu_mem_mib=10000, gpu_models=["T4"]),
            _job(11, 0, 5, 6, 0, cpu_milli=16000),
            _job(12, 0, 5, 7, 0, cpu_milli=16000),
            _job(13, 0, 5, 1, 250, gpu_models=[]),
        ],
        [
            {"gpu_model": "V100", "num_gpus": 4, "cpu_milli": 16000},
            {"gpu_model": "T4", "num_gpus": 2, "cpu_milli": 16000},
            {"gpu_model": None, "num_gpus": 0, "cpu_milli": 64000},
        ],
    ),
    # Fractional pods limited by GPU memory next to whole-GPU pods, binpack vs spread.
    "fractional-memory": (
        [
            _job(1, 0, 10, 3, 300),
            _job(2, 0, 10, 1, 1000),
            _job(3, 1, 10, 2, 250, gpu_mem_mib=10000),
            _job(4, 2, 10, 1, 4000),
            _job(5, 2, 3, 4, 100),
        ],
        [{"gpu_model": "V100", "num_gpus": 2}, {"gpu_model": "A100-80GB", "num_gpus": 4}],
    ),
    # Pod queue order: priority, then submit time, then pods placed (pods interleave).
    "pod-queue-order": (
        [
            _job(1, 0, 10, 1, 4000),
            _job(2, 1, 10, 2, 1000, priority=0),
            _job(3, 2, 10, 2, 1000, priority=1),
            _job(4, 2, 10, 2, 1000, priority=1),
            _job(5, 2, 100, 1, 1000, priority=1),
        ],
        [{"gpu_model": "V100", "num_gpus": 4}],
    ),
    # The three-job example, scaled down: a low-priority 8-GPU job preempted, restarted.
    "three-job-preemption": (
        [
            _job(1, 0, 36, 1, 8000, priority=0, checkpoint_interval=6.0, restart_overhead=0.5),
            _job(2, 10, 10, 1, 8000, priority=100, checkpoint_interval=6.0, restart_overhead=0.5),
            _job(3, 15, 5, 1, 8000, priority=0, checkpoint_interval=6.0, restart_overhead=0.5),
        ],
        [{"gpu_model": "A100-80GB", "num_gpus": 8}],
    ),
    # Two victims on one node with equal priority and start time: the reprieve order decides.
    "reprieve-tie": (
        [
            _job(1, 0, 50, 1, 4000, **_CKPT),
            _job(2, 0, 50, 1, 4000, **_CKPT),
            _job(3, 5, 10, 1, 4000, priority=10, **_CKPT),
        ],
        _EIGHT_V100,
    ),
    # Victims spread over three nodes with different priorities and starts: the node-choice order.
    "node-choice": (
        [
            _job(1, 0, 50, 1, 4000, priority=1, **_CKPT),
            _job(2, 1, 50, 1, 4000, priority=0, **_CKPT),
            _job(3, 2, 50, 1, 4000, priority=0, **_CKPT),
            _job(4, 3, 50, 2, 2000, priority=0, **_CKPT),
            _job(5, 4, 50, 1, 4000, priority=0, preemptible=False, **_CKPT),
            _job(6, 10, 10, 1, 4000, priority=5, **_CKPT),
            _job(7, 11, 10, 2, 4000, priority=5, **_CKPT),
        ],
        [{"gpu_model": "V100", "num_gpus": 4}] * 3,
    ),
    # Pod by pod: a low-priority job holds 3 of 4 pods (deadlocked) until a high one evicts it.
    "partly-placed-victim": (
        [
            _job(1, 0, 20, 1, 1000, priority=0, **_CKPT),
            _job(2, 1, 10, 4, 1000, priority=0, **_CKPT),
            _job(3, 2, 10, 2, 1000, priority=9, **_CKPT),
            _job(4, 2, 10, 1, 1000, priority=9, preemption_policy="Never", **_CKPT),
        ],
        [{"gpu_model": "T4", "num_gpus": 4}],
    ),
    # Pod by pod: L runs, is evicted by H1, comes back partly placed behind X and is evicted by H2 while
    # holding one pod (its second evicted attempt never ran).
    "evicted-twice": (
        [
            _job(1, 0, 50, 2, 1000, priority=0, **_CKPT),
            _job(2, 1, 10, 4, 1000, priority=5, **_CKPT),
            _job(3, 4, 100, 1, 3000, priority=1, **_CKPT),
            _job(4, 20, 5, 1, 1000, priority=5, **_CKPT),
        ],
        [{"gpu_model": "T4", "num_gpus": 4}],
    ),
    # V is evicted by H; H starts elsewhere when A ends; V restarts on its old node, where nothing
    # else started meanwhile (it spans that node again).
    "restart-same-node": (
        [
            _job(1, 0, 5, 1, 4000, priority=9, **_CKPT),
            _job(2, 0, 50, 1, 4000, priority=0, **_CKPT),
            _job(3, 1, 10, 1, 4000, priority=5, **_CKPT),
        ],
        [{"gpu_model": "T4", "num_gpus": 4}, {"gpu_model": "T4", "num_gpus": 4}],
    ),
    # Nothing can be preempted: non-preemptible victims, Never preemptors, equal priorities.
    "no-victims": (
        [
            _job(1, 0, 20, 1, 2000, priority=0, preemptible=False),
            _job(2, 0, 20, 1, 2000, priority=5),
            _job(3, 1, 5, 1, 4000, priority=5, preemption_policy="Never"),
            _job(4, 2, 5, 1, 2000, priority=5),
        ],
        [{"gpu_model": "T4", "num_gpus": 4}],
    ),
}


# --------------------------------------------------------------------------- Kueue quota trees

_KUEUE_FLAVOR = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: f\n"


def _kueue_quota_lines(gpus: int, cpus: int, memory: str, limits: str) -> str:
    return (
        "  resourceGroups:\n"
        '  - coveredResources: ["nvidia.com/gpu", "cpu", "memory"]\n'
        "    flavors:\n"
        "    - name: f\n"
        "      resources:\n"
        f"      - name: nvidia.com/gpu\n        nominalQuota: {gpus}\n{limits}"
        f"      - name: cpu\n        nominalQuota: {cpus}\n"
        f"      - name: memory\n        nominalQuota: {memory}\n"
    )


def _kueue_flavored_lines(
    draw: st.DrawFn, gpus: int, cpus: int, memory: str, limits: str, flavors: tuple[str, ...]
) -> str:
    # [Kueue flavors] GPUs over 1-3 of the flavors in a drawn order (each with its own quota), CPU and memory
    # in the same group or in a second one of flavor "f".
    chosen = draw(st.lists(st.sampled_from(flavors), min_size=1, max_size=3, unique=True))
    apart = draw(st.booleans())
    covered = '["nvidia.com/gpu"]' if apart else '["nvidia.com/gpu", "cpu", "memory"]'
    lines = f"  resourceGroups:\n  - coveredResources: {covered}\n    flavors:\n"
    for name in chosen:
        amount = draw(st.sampled_from([gpus, gpus, 0, 2, 8]))
        lines += f"    - name: {name}\n      resources:\n"
        # The limits were drawn for gpus (a lendingLimit may not exceed the nominal quota).
        kept = limits if amount == gpus else ""
        lines += f"      - name: nvidia.com/gpu\n        nominalQuota: {amount}\n{kept}"
        if not apart:
            lines += f"      - name: cpu\n        nominalQuota: {cpus}\n"
            lines += f"      - name: memory\n        nominalQuota: {memory}\n"
    if apart:
        lines += '  - coveredResources: ["cpu", "memory"]\n    flavors:\n    - name: f\n      resources:\n'
        lines += f"      - name: cpu\n        nominalQuota: {cpus}\n"
        lines += f"      - name: memory\n        nominalQuota: {memory}\n"
    return lines


@st.composite
def flavor_fungibility(draw: st.DrawFn) -> str:
    """A ClusterQueue's ``spec.flavorFungibility`` lines: ``whenCanBorrow`` and ``whenCanPreempt`` drawn in
    either API spelling, and, when both are TryNextFlavor (Kueue's CEL rule), sometimes a ``preference``."""
    borrow = draw(st.sampled_from(["Borrow", "TryNextFlavor", "MayStopSearch"]))
    preempt = draw(st.sampled_from(["Preempt", "TryNextFlavor", "TryNextFlavor", "MayStopSearch"]))
    lines = f"  flavorFungibility:\n    whenCanBorrow: {borrow}\n    whenCanPreempt: {preempt}\n"
    if borrow == preempt == "TryNextFlavor" and draw(st.booleans()):
        preference = draw(st.sampled_from(["BorrowingOverPreemption", "PreemptionOverBorrowing"]))
        lines += f"    preference: {preference}\n"
    return lines


@st.composite
def kueue_manifests(
    draw: st.DrawFn,
    queues: tuple[str, ...],
    preemption: bool = False,
    models: tuple[str, ...] | None = None,
) -> str:
    """Kueue manifests for ``queues`` (plus, sometimes, an idle ClusterQueue that only lends).

    No cohort, one flat cohort, or a two-level tree (a root Cohort with its own GPU quota and an inner
    one); nominal GPU, CPU and memory quotas, GPU borrowing and lending limits inside cohorts, and
    either queueing strategy. ``preemption``: each ClusterQueue draws its ``spec.preemption``
    (withinClusterQueue, reclaimWithinCohort, borrowWithinCohort with or without a maxPriorityThreshold).
    ``models``: the cluster's GPU models; given (even empty), [Kueue flavors] 2-3 ResourceFlavors select one
    of them each (or any node), every ClusterQueue's GPUs draw 1-3 of them in its own order, with its
    flavor fungibility drawn (:func:`flavor_fungibility`).
    """
    shape = draw(st.sampled_from(["none", "flat", "flat", "nested", "nested"]))
    names = list(queues) + (["idle"] if draw(st.booleans()) else [])
    docs = [_KUEUE_FLAVOR]
    flavors: tuple[str, ...] = ()
    if models is not None:
        picks = draw(st.lists(st.sampled_from([*models, None]), min_size=2, max_size=3))
        flavors = tuple(f"g{i}" for i in range(len(picks)))
        for name, model in zip(flavors, picks, strict=True):
            labels = f"spec:\n  nodeLabels:\n    nvidia.com/gpu.product: {model}\n" if model else ""
            head = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n"
            docs.append(f"{head}  name: {name}\n{labels}")
    if shape == "nested":
        root_gpus = draw(st.sampled_from([0, 2]))
        docs.append(
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata:\n  name: root\nspec:\n"
            + (_kueue_quota_lines(root_gpus, 0, "0", "") if root_gpus else "")
        )
        docs.append(
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata:\n  name: inner\n"
            "spec:\n  parentName: root\n"
        )
    for name in names:
        cohort = {"none": None, "flat": "c"}.get(shape) or draw(st.sampled_from(["root", "inner"]))
        gpus = draw(st.sampled_from([0, 1, 2, 4, 8, 16]))
        limits = ""
        if cohort is not None:
            borrow = draw(st.sampled_from([None, None, 0, 1, 4]))
            lend = draw(st.sampled_from([None, None, 0, gpus // 2, gpus]))
            if borrow is not None:
                limits += f"        borrowingLimit: {borrow}\n"
            if lend is not None:
                limits += f"        lendingLimit: {lend}\n"
        strategy = draw(st.sampled_from(["BestEffortFIFO", "BestEffortFIFO", "StrictFIFO"]))
        preempt = ""
        if preemption:
            within = draw(st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]))
            reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
            preempt = f"  preemption:\n    withinClusterQueue: {within}\n    reclaimWithinCohort: {reclaim}\n"
            if reclaim != "Never" and draw(st.booleans()):
                threshold = draw(st.sampled_from([None, 0, 1, 3]))
                preempt += "    borrowWithinCohort:\n      policy: LowerPriority\n" + (
                    "" if threshold is None else f"      maxPriorityThreshold: {threshold}\n"
                )
        cpus = draw(st.sampled_from([8, 64, 1000]))
        memory = draw(st.sampled_from(["64Gi", "1Ti", "10Ti"]))
        fungibility = ""
        if flavors:
            fungibility = draw(flavor_fungibility())
        docs.append(
            f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n"
            + (f"  cohort: {cohort}\n" if cohort else "")
            + preempt
            + fungibility
            + f"  fairSharing:\n    weight: {draw(st.sampled_from([1, 1, 0, 0.5, 2]))}\n"
            + f"  queueingStrategy: {strategy}\n"
            + (
                _kueue_flavored_lines(draw, gpus, cpus, memory, limits, flavors)
                if flavors
                else _kueue_quota_lines(gpus, cpus, memory, limits)
            )
        )
    return "---\n".join(docs)
