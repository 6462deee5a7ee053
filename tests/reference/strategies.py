"""Canonical input builders and hypothesis strategies for engine-vs-reference tests.

The strategies aim at the corners of the semantics rather than at realism:
ties in submit time, jobs larger than any node, zero-GPU pods, fractional pods
with and without GPU memory, multi-pod gangs, GPU-model constraints naming
models the cluster lacks, zero durations, priorities, CPU/memory limits.
Times are integers or halves and intervals are dyadic, so every sum the two
simulators compute is exact in float64 and results compare with ``==``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
from hypothesis import strategies as st

from gpureplay.cluster.catalog import gpu_model
from gpureplay.schedulers.policy import Backfill, GangMode, Placement, Policy, QueueOrder
from gpureplay.traces.schema import (
    JOB_DEFAULTS,
    JOBS_SCHEMA,
    NODES_SCHEMA,
    UNKNOWN_CAPACITY,
    validate_jobs,
    validate_nodes,
)

#: Models the random clusters are built from (different memory sizes: 16, 40, 80 GiB).
CLUSTER_MODELS: tuple[str, ...] = ("V100", "T4", "A100-40GB", "A100-80GB")
#: Models jobs may ask for: the cluster's plus some no node of a random cluster has.
REQUESTABLE_MODELS: tuple[str, ...] = (*CLUSTER_MODELS, "H100-80GB", "P100")


# --------------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------------


def jobs_frame(rows: Sequence[Mapping[str, Any]], source: str = "test-jobs") -> pl.DataFrame:
    """A validated canonical jobs table from dicts (optional columns take :data:`JOB_DEFAULTS`).

    Each row needs ``job_id``, ``submit_time``, ``duration``, ``num_pods`` and ``gpu_milli``.
    """
    full = [{c: row.get(c, JOB_DEFAULTS.get(c)) for c in JOBS_SCHEMA} for row in rows]
    df = pl.DataFrame(full, schema=JOBS_SCHEMA)
    return validate_jobs(df.with_row_index("source_row", offset=1), source)


def nodes_frame(rows: Sequence[Mapping[str, Any]], source: str = "test-nodes") -> pl.DataFrame:
    """A validated canonical nodes table from dicts with ``gpu_model`` and ``num_gpus``.

    ``gpu_mem_mib`` defaults to the catalog's memory of the model, ``cpu_milli`` and
    ``mem_mib`` to ``UNKNOWN_CAPACITY``; ``node_id`` is the row index.
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
                "nvlink_domain": i,
                "rack": 0,
                "spine": 0,
                "mig_layout": None,
            }
        )
    df = pl.DataFrame(full, schema=NODES_SCHEMA)
    return validate_nodes(df.with_row_index("source_row", offset=1), source)


# --------------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------------


@st.composite
def node_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    """1-5 nodes, 0-8 GPUs each, of 1-3 catalog models, CPU/memory finite or unknown."""
    models = draw(st.lists(st.sampled_from(CLUSTER_MODELS), min_size=1, max_size=3, unique=True))
    n = draw(st.integers(1, 5))
    rows = []
    for _ in range(n):
        num_gpus = draw(st.sampled_from([0, 1, 2, 2, 3, 4, 4, 8, 8]))
        model: str | None = draw(st.sampled_from(models))
        if num_gpus == 0 and draw(st.booleans()):
            model = None  # a CPU-only node with no GPU model at all
        row: dict[str, Any] = {"gpu_model": model, "num_gpus": num_gpus}
        row["cpu_milli"] = draw(st.sampled_from([UNKNOWN_CAPACITY, UNKNOWN_CAPACITY, 4000, 16000, 64000]))
        row["mem_mib"] = draw(st.sampled_from([UNKNOWN_CAPACITY, UNKNOWN_CAPACITY, 16384, 131072]))
        rows.append(row)
    return rows


#: Times and durations: small integers and halves (exact in float64), with many ties.
_times = st.one_of(st.integers(0, 12).map(float), st.integers(0, 60).map(lambda x: x / 2))
_durations = st.one_of(st.just(0.0), st.integers(1, 40).map(float), st.sampled_from([0.5, 2.5, 100.0]))


@st.composite
def job_rows(draw: st.DrawFn, max_jobs: int = 25) -> list[dict[str, Any]]:
    """1-``max_jobs`` jobs in arbitrary input order with unique, non-contiguous job ids."""
    n = draw(st.integers(1, max_jobs))
    ids = draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n, unique=True))
    rows = []
    for job_id in ids:
        milli = draw(
            st.sampled_from([0, 0, 100, 250, 300, 500, 700, 1000, 1000, 1000, 2000, 3000, 4000, 8000, 16000])
        )
        models: list[str] | None = None
        if draw(st.integers(0, 3)) == 0:
            models = draw(st.lists(st.sampled_from(REQUESTABLE_MODELS), min_size=0, max_size=2, unique=True))
        rows.append(
            {
                "job_id": job_id,
                "submit_time": draw(_times),
                "duration": draw(_durations),
                "num_pods": draw(st.sampled_from([1, 1, 1, 2, 2, 3, 4, 6, 8])),
                "gpu_milli": milli,
                "gpu_mem_mib": draw(st.sampled_from([None, None, None, 0, 4096, 12000, 16384, 20000, 40960])),
                "gpu_models": models,
                "cpu_milli": draw(st.sampled_from([0, 0, 0, 500, 2000, 8000, 32000])),
                "mem_mib": draw(st.sampled_from([0, 0, 0, 1024, 8192, 65536])),
                "priority": draw(st.sampled_from([0, 0, 1, 2, 3])),
            }
        )
    return rows


@st.composite
def cases(draw: st.DrawFn, max_jobs: int = 25) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A validated (jobs, nodes) pair."""
    nodes = nodes_frame(draw(node_rows()))
    jobs = jobs_frame(draw(job_rows(max_jobs)))
    return jobs, nodes


#: Preset-shaped policies (the conf/scheduler presets), by name.
PRESETS: dict[str, Policy] = {
    "fifo": Policy("fifo", queue_order=QueueOrder.fifo, gang=GangMode.gang, backfill=Backfill.none),
    "sjf": Policy("sjf", queue_order=QueueOrder.sjf, gang=GangMode.gang, backfill=Backfill.none),
    "kube-default": Policy(
        "kube-default",
        queue_order=QueueOrder.priority,
        gang=GangMode.pod_by_pod,
        node_placement=Placement.worst_fit,
        gpu_placement=Placement.worst_fit,
    ),
    "gang-binpack": Policy(
        "gang-binpack",
        queue_order=QueueOrder.priority,
        gang=GangMode.gang,
        node_placement=Placement.best_fit,
        gpu_placement=Placement.best_fit,
        backfill=Backfill.skip,
    ),
    "gang-spread": Policy(
        "gang-spread",
        queue_order=QueueOrder.priority,
        gang=GangMode.gang,
        node_placement=Placement.worst_fit,
        gpu_placement=Placement.worst_fit,
        backfill=Backfill.skip,
    ),
    "easy-backfill": Policy(
        "easy-backfill", queue_order=QueueOrder.fifo, gang=GangMode.gang, backfill=Backfill.easy
    ),
    "easy-backfill-depth2": Policy(
        "easy-backfill-depth2",
        queue_order=QueueOrder.fifo,
        gang=GangMode.gang,
        backfill=Backfill.easy,
        backfill_depth=2,
    ),
}


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    """Any combination of the policy enums, random placement weighted up, periodic cycles included."""
    placements = st.sampled_from([*Placement, Placement.random, Placement.random])
    return Policy(
        name="random",
        queue_order=draw(st.sampled_from(list(QueueOrder))),
        gang=draw(st.sampled_from(list(GangMode))),
        node_placement=draw(placements),
        gpu_placement=draw(placements),
        backfill=draw(st.sampled_from(list(Backfill))),
        backfill_depth=draw(st.sampled_from([0, 0, 1, 2, 3])),
        session_interval=draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 3.0, 4.0])),
    )


#: Sample intervals, non-dyadic ones included: sample k is at ``k * interval`` in both simulators.
sample_intervals = st.sampled_from([0.1, 0.3, 1.0, 2.5, 4.0, 10.0, 3600.0])

#: Timeline bounds: small ones make the sample interval double (often more than once) mid-run.
max_samples_choices = st.sampled_from([1, 2, 3, 7, 100_000])


@st.composite
def windows(draw: st.DrawFn) -> tuple[float, float] | None:
    """A measurement window ``(start, end)`` over the drawn traces' times (about 0-40 s), or None."""
    if draw(st.booleans()):
        return None
    a = draw(st.sampled_from([0.0, 0.5, 1.0, 3.0, 7.5, 12.0, 25.0]))
    b = draw(st.sampled_from([0.0, 2.0, 5.0, 11.0, 20.0, 60.0]))
    return (min(a, b), max(a, b))


seeds = st.sampled_from([0, 1, 42, 123_456_789, 2**63 - 1])


# --------------------------------------------------------------------------------------------------
# Hand-made corner cases
# --------------------------------------------------------------------------------------------------


def _job(job_id: int, submit: float, duration: float, pods: int, milli: int, **extra: Any) -> dict[str, Any]:
    row = {"job_id": job_id, "submit_time": submit, "duration": duration, "num_pods": pods}
    return row | {"gpu_milli": milli} | extra


_EIGHT_V100 = [{"gpu_model": "V100", "num_gpus": 8}]

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
    # Pod queue order: priority, then submit time, then pod index (pods interleave).
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
}
