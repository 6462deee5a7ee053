"""Targeted scenarios for the numba replay engine, each worked out by hand from the v2 semantics.

Every replay runs with ``debug=True`` (invariants after each cycle, accounting
identity at the end). The differential tests against the plain-Python
reference live elsewhere; these pin down behaviours a reader can check on
paper: the pod-by-pod deadlock, head-of-line blocking vs skip vs EASY,
packing, constraints, rejections, orders, placements, ticks and samples, and
priority preemption with checkpoint/restart cost (docs/engine/index.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
import polars as pl
import pytest

from gpureplay.engine import invariants
from gpureplay.engine.fit.scoring import GPU_SCORERS, SCORERS
from gpureplay.engine.jit.config import python_callable
from gpureplay.engine.loop import advance
from gpureplay.engine.state import heaps, rng
from gpureplay.engine.state import layout as L
from gpureplay.engine.state.heaps import bitset_words
from gpureplay.engine.state.rng import DRAW_NODE
from gpureplay.errors import InputError
from gpureplay.replay.compile import compile_replay, policy_params
from gpureplay.replay.simulate import (
    ATTEMPT_SCHEMA,
    JOB_RESULT_SCHEMA,
    TIMELINE_SCHEMA,
    Replay,
    _initial,
    simulate,
)
from gpureplay.schedulers.policy import Backfill, GangMode, Policy, Preemption, QueueOrder, Requeue
from gpureplay.traces.schema import (
    JOB_DEFAULTS,
    JOBS_SCHEMA,
    NODES_SCHEMA,
    UNKNOWN_CAPACITY,
    validate_jobs,
    validate_nodes,
)

GANG_FIFO = Policy("fifo")
GANG_SKIP = Policy("skip", backfill=Backfill.skip)
GANG_EASY = Policy("easy", backfill=Backfill.easy)
POD_BY_POD = Policy("kube", queue_order=QueueOrder.priority, gang=GangMode.pod_by_pod, backfill=Backfill.skip)


def make_jobs(rows: Sequence[Mapping[str, Any]], **extra: Any) -> pl.DataFrame:
    """Canonical jobs from dicts; ``num_pods`` defaults to 1 and ``gpu_milli`` to one GPU.

    ``extra`` adds workload columns to every job (``checkpoint_interval=600.0``, ...).
    """
    full = []
    for row in rows:
        values = {c: row.get(c, JOB_DEFAULTS.get(c)) for c in JOBS_SCHEMA}
        values["num_pods"] = row.get("num_pods", 1)
        values["gpu_milli"] = row.get("gpu_milli", 1000)
        full.append(values)
    jobs = validate_jobs(pl.DataFrame(full, schema=JOBS_SCHEMA).with_row_index("source_row", offset=1), "t")
    for name, value in extra.items():
        if isinstance(value, Mapping):
            jobs = jobs.with_columns(pl.col("job_id").replace_strict(dict(value)).alias(name))
        else:
            jobs = jobs.with_columns(pl.lit(value).alias(name))
    return jobs


def make_nodes(
    *gpus: int, models: Sequence[str] | None = None, gpu_mem: int = 16384, **extra: Any
) -> pl.DataFrame:
    """One node per argument with that many GPUs (V100 unless ``models``), CPU/memory unknown unless given."""
    rows = [
        {
            "node_id": i,
            "node_name": f"n{i}",
            "gpu_model": models[i] if models else "V100",
            "num_gpus": g,
            "gpu_mem_mib": gpu_mem,
            "cpu_milli": extra.get("cpu_milli", UNKNOWN_CAPACITY),
            "mem_mib": extra.get("mem_mib", UNKNOWN_CAPACITY),
            "numa_of_gpu": None,
            "nvlink_domain": i,
            "rack": 0,
            "spine": 0,
            "mig_layout": None,
        }
        for i, g in enumerate(gpus)
    ]
    return validate_nodes(pl.DataFrame(rows, schema=NODES_SCHEMA).with_row_index("source_row", offset=1), "n")


def run(jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy, **kwargs: Any) -> Replay:
    return simulate(jobs, nodes, policy, debug=True, **kwargs)


def by_id(replay: Replay, column: str) -> dict[int, Any]:
    return dict(zip(replay.jobs["job_id"].to_list(), replay.jobs[column].to_list(), strict=True))


# --------------------------------------------------------------------------------------------------
# Gang vs pod by pod
# --------------------------------------------------------------------------------------------------


def test_two_full_node_jobs_deadlock_pod_by_pod_but_run_in_turn_as_gangs() -> None:
    nodes = make_nodes(8)
    jobs = make_jobs([{"job_id": j, "submit_time": 0.0, "duration": 10.0, "num_pods": 8} for j in (1, 2)])

    pods = run(jobs, nodes, POD_BY_POD)
    assert by_id(pods, "state") == {1: "deadlocked", 2: "deadlocked"}
    assert by_id(pods, "held_milli") == {1: 4000, 2: 4000}  # pods interleave A0 B0 A1 B1 ...
    assert by_id(pods, "start_time") == {1: None, 2: None}
    assert pods.timeline.row(0, named=True)["allocated_milli"] == 8000

    gang = run(jobs, nodes, GANG_FIFO)
    assert by_id(gang, "state") == {1: "finished", 2: "finished"}
    assert by_id(gang, "start_time") == {1: 0.0, 2: 10.0}
    assert by_id(gang, "held_milli") == {1: 0, 2: 0}
    assert gang.gpu_milli_seconds == 2 * 8 * 1000 * 10.0


def three_free_slots(blocker_duration: float) -> pl.DataFrame:
    # One 4-GPU node; a 1-GPU blocker leaves 3 free, then A (4 pods) arrives before B (3 pods).
    return make_jobs(
        [
            {"job_id": 10, "submit_time": 0.0, "duration": blocker_duration},
            {"job_id": 1, "submit_time": 1.0, "duration": 20.0, "num_pods": 4},
            {"job_id": 2, "submit_time": 2.0, "duration": 50.0, "num_pods": 3},
        ]
    )


def test_pod_by_pod_holds_three_pods_of_the_earlier_job_while_the_later_one_waits() -> None:
    nodes = make_nodes(4)
    replay = run(three_free_slots(100.0), nodes, POD_BY_POD)
    # A holds 3 GPUs from t=1; the blocker's GPU goes to A's 4th pod at t=100; B runs after A.
    assert by_id(replay, "start_time") == {10: 0.0, 1: 100.0, 2: 120.0}
    assert by_id(replay, "state") == {10: "finished", 1: "finished", 2: "finished"}

    stuck = run(three_free_slots(1000.0), nodes, POD_BY_POD, horizon=500.0, sample_interval=100.0)
    assert by_id(stuck, "state") == {10: "unfinished", 1: "deadlocked", 2: "unfinished"}
    assert by_id(stuck, "held_milli") == {10: 0, 1: 3000, 2: 0}
    assert by_id(stuck, "nodes_spanned") == {10: 1, 1: 1, 2: 0}


def test_gang_skip_runs_the_smaller_later_job_in_the_three_free_slots() -> None:
    replay = run(three_free_slots(100.0), make_nodes(4), GANG_SKIP)
    # B fits the 3 free GPUs at t=2 and ends at 52; A needs all 4, free once the blocker ends.
    assert by_id(replay, "start_time") == {10: 0.0, 2: 2.0, 1: 100.0}


# --------------------------------------------------------------------------------------------------
# Resources and constraints
# --------------------------------------------------------------------------------------------------


def test_fractional_pods_pack_one_gpu_up_to_1000_milli() -> None:
    jobs = make_jobs(
        [{"job_id": j, "submit_time": 0.0, "duration": 10.0, "gpu_milli": 250} for j in range(5)]
    )
    replay = run(jobs, make_nodes(1), GANG_SKIP, sample_interval=5.0)
    assert by_id(replay, "start_time") == {0: 0.0, 1: 0.0, 2: 0.0, 3: 0.0, 4: 10.0}
    first = replay.timeline.row(0, named=True)
    assert (first["allocated_gpus"], first["allocated_milli"], first["pending_jobs"]) == (1, 1000, 1)
    assert replay.gpu_milli_seconds == 5 * 250 * 10.0


def test_gpu_memory_keeps_two_small_pods_off_one_gpu() -> None:
    jobs = make_jobs(
        [
            {"job_id": j, "submit_time": 0.0, "duration": 10.0, "gpu_milli": 300, "gpu_mem_mib": 10000}
            for j in (1, 2)
        ]
    )
    assert by_id(run(jobs, make_nodes(1), GANG_SKIP), "start_time") == {1: 0.0, 2: 10.0}
    assert by_id(run(jobs, make_nodes(2), GANG_SKIP), "start_time") == {1: 0.0, 2: 0.0}
    # A whole-GPU pod asking for more memory than a GPU has can never run.
    big = make_jobs([{"job_id": 1, "submit_time": 0.0, "duration": 1.0, "gpu_mem_mib": 20000}])
    assert by_id(run(big, make_nodes(2), GANG_SKIP), "reject_reason") == {1: "pod_too_large"}


def test_model_constraint_limits_jobs_to_their_nodes() -> None:
    nodes = make_nodes(4, 1, models=["V100", "T4"])
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 10.0, "gpu_models": ["T4"]},
            {"job_id": 2, "submit_time": 0.0, "duration": 10.0, "gpu_models": ["T4"]},
            {"job_id": 3, "submit_time": 0.0, "duration": 10.0, "gpu_models": ["T4", "V100"]},
            {"job_id": 4, "submit_time": 0.0, "duration": 10.0, "gpu_models": ["H100-80GB"]},
            {"job_id": 5, "submit_time": 0.0, "duration": 10.0, "gpu_milli": 0, "gpu_models": ["H100-80GB"]},
        ]
    )
    replay = run(jobs, nodes, GANG_SKIP)
    # The one T4 serialises the T4-only jobs although V100s are idle; a GPU-less pod ignores models.
    assert by_id(replay, "start_time") == {1: 0.0, 2: 10.0, 3: 0.0, 4: None, 5: 0.0}
    assert by_id(replay, "reject_reason") == {1: None, 2: None, 3: None, 4: "no_model", 5: None}


def test_cpu_and_memory_limit_pods_per_node() -> None:
    nodes = make_nodes(8, cpu_milli=4000, mem_mib=65536)
    jobs = make_jobs(
        [{"job_id": j, "submit_time": 0.0, "duration": 10.0, "cpu_milli": 1500} for j in range(3)]
        + [{"job_id": 9, "submit_time": 0.0, "duration": 1.0, "gpu_milli": 0, "mem_mib": 70000}]
    )
    replay = run(jobs, nodes, GANG_SKIP)
    assert by_id(replay, "start_time") == {0: 0.0, 1: 0.0, 2: 10.0, 9: None}
    assert by_id(replay, "reject_reason")[9] == "pod_too_large"


def test_rejection_reasons_in_order() -> None:
    nodes = make_nodes(8, 8)
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 1.0, "gpu_models": ["P100"], "gpu_milli": 16000},
            {"job_id": 2, "submit_time": 0.0, "duration": 1.0, "gpu_milli": 16000},
            {"job_id": 3, "submit_time": 0.0, "duration": 1.0, "gpu_milli": 8000, "num_pods": 3},
            {"job_id": 4, "submit_time": 0.0, "duration": 1.0, "gpu_milli": 8000, "num_pods": 2},
            {"job_id": 5, "submit_time": 0.0, "duration": 1.0, "gpu_milli": 500, "num_pods": 33},
        ]
    )
    replay = run(jobs, nodes, GANG_SKIP)
    assert by_id(replay, "reject_reason") == {
        1: "no_model",
        2: "pod_too_large",
        3: "gang_too_large",
        4: None,
        5: "gang_too_large",  # 2 pods per GPU x 16 GPUs = 32 < 33
    }
    assert by_id(replay, "state") == {
        1: "rejected",
        2: "rejected",
        3: "rejected",
        4: "finished",
        5: "rejected",
    }
    assert by_id(replay, "start_time")[1] is None


# --------------------------------------------------------------------------------------------------
# Backfill and queue order
# --------------------------------------------------------------------------------------------------


def backfill_case() -> pl.DataFrame:
    # 4-GPU node; r holds 1 GPU until 100. H (4 GPUs) is blocked; S (short) and L (long) fit now.
    return make_jobs(
        [
            {"job_id": 0, "submit_time": 0.0, "duration": 100.0},  # r
            {"job_id": 1, "submit_time": 1.0, "duration": 10.0, "num_pods": 4},  # H
            {"job_id": 2, "submit_time": 2.0, "duration": 50.0},  # S: ends at 52 <= 100
            {"job_id": 3, "submit_time": 3.0, "duration": 500.0},  # L: ends at 503 > 100
        ]
    )


def test_fifo_blocks_behind_the_head() -> None:
    replay = run(backfill_case(), make_nodes(4), GANG_FIFO)
    assert by_id(replay, "start_time") == {0: 0.0, 1: 100.0, 2: 110.0, 3: 110.0}


def test_skip_starts_everything_that_fits_and_delays_the_head() -> None:
    replay = run(backfill_case(), make_nodes(4), GANG_SKIP)
    assert by_id(replay, "start_time") == {0: 0.0, 1: 503.0, 2: 2.0, 3: 3.0}


def test_easy_backfills_the_short_job_but_not_the_one_that_would_delay_the_head() -> None:
    replay = run(backfill_case(), make_nodes(4), GANG_EASY)
    # Shadow time 100 (r ends); S ends by then, L would hold a GPU H needs at 100.
    assert by_id(replay, "start_time") == {0: 0.0, 1: 100.0, 2: 2.0, 3: 110.0}


def test_easy_backfills_a_long_job_that_leaves_room_for_the_head() -> None:
    # 6 GPUs: r holds 2 until 100, H needs 4 at the shadow time, so a long 1-GPU job still fits beside it.
    jobs = make_jobs(
        [
            {"job_id": 0, "submit_time": 0.0, "duration": 100.0, "gpu_milli": 2000},
            {"job_id": 1, "submit_time": 0.0, "duration": 300.0, "gpu_milli": 3000},
            {"job_id": 2, "submit_time": 1.0, "duration": 10.0, "gpu_milli": 4000},
            {"job_id": 3, "submit_time": 2.0, "duration": 500.0},
        ]
    )
    replay = run(jobs, make_nodes(6), GANG_EASY)
    assert by_id(replay, "start_time") == {0: 0.0, 1: 0.0, 2: 300.0, 3: 2.0}


def test_backfill_depth_bounds_the_jobs_tried_behind_a_failure() -> None:
    jobs = make_jobs(
        [
            {"job_id": 0, "submit_time": 0.0, "duration": 100.0, "gpu_milli": 3000},
            {"job_id": 1, "submit_time": 1.0, "duration": 10.0, "gpu_milli": 2000},
            {"job_id": 2, "submit_time": 1.0, "duration": 10.0, "gpu_milli": 2000},
            {"job_id": 3, "submit_time": 1.0, "duration": 10.0},
        ]
    )
    unbounded = run(jobs, make_nodes(4), GANG_SKIP)
    assert by_id(unbounded, "start_time")[3] == 1.0
    bounded = run(jobs, make_nodes(4), Policy("skip2", backfill=Backfill.skip, backfill_depth=2))
    # Two failures (jobs 1, 2) end the t=1 cycle before job 3 is tried; at 100 jobs 1, 2 take all 4 GPUs.
    assert by_id(bounded, "start_time") == {0: 0.0, 1: 100.0, 2: 100.0, 3: 110.0}


def queued_behind_blocker() -> pl.DataFrame:
    return make_jobs(
        [
            {"job_id": 0, "submit_time": 0.0, "duration": 10.0},
            {"job_id": 1, "submit_time": 1.0, "duration": 30.0, "priority": 0},
            {"job_id": 2, "submit_time": 2.0, "duration": 20.0, "priority": 5},
            {"job_id": 3, "submit_time": 3.0, "duration": 5.0, "priority": 1},
        ]
    )


@pytest.mark.parametrize(
    ("order", "starts"),
    [
        (QueueOrder.fifo, {1: 10.0, 2: 40.0, 3: 60.0}),
        (QueueOrder.sjf, {3: 10.0, 2: 15.0, 1: 35.0}),
        (QueueOrder.priority, {2: 10.0, 3: 30.0, 1: 35.0}),
    ],
)
def test_queue_order(order: QueueOrder, starts: dict[int, float]) -> None:
    replay = run(queued_behind_blocker(), make_nodes(1), Policy("o", queue_order=order))
    assert by_id(replay, "start_time") == {0: 0.0, **starts}


def test_pod_by_pod_orders_pods_by_priority() -> None:
    replay = run(queued_behind_blocker(), make_nodes(1), POD_BY_POD)
    assert by_id(replay, "start_time") == {0: 0.0, 2: 10.0, 3: 30.0, 1: 35.0}


# --------------------------------------------------------------------------------------------------
# Placement
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("placement", "j2_start", "j3_start"),
    [
        ("first_fit", 1.0, 100.0),  # J1 on the 4-GPU node 0: J3 finds no 4 free GPUs
        ("best_fit", 1.0, 2.0),  # J1 on the 2-GPU node 2: both big jobs fit
        ("worst_fit", 502.0, 2.0),  # J1 and then J3 on the 8-GPU node 1: J2 waits for both
    ],
)
def test_node_placement(placement: str, j2_start: float, j3_start: float) -> None:
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 100.0},
            {"job_id": 2, "submit_time": 1.0, "duration": 500.0, "gpu_milli": 8000},
            {"job_id": 3, "submit_time": 2.0, "duration": 500.0, "gpu_milli": 4000},
        ]
    )
    policy = Policy("p", backfill=Backfill.skip, node_placement=placement)
    replay = run(jobs, make_nodes(4, 8, 2), policy)
    assert by_id(replay, "start_time") == {1: 0.0, 2: j2_start, 3: j3_start}


@pytest.mark.parametrize(("placement", "spanned"), [("best_fit", 1), ("worst_fit", 2)])
def test_binpack_keeps_pods_together_spread_splits_them(placement: str, spanned: int) -> None:
    jobs = make_jobs([{"job_id": 1, "submit_time": 0.0, "duration": 1.0, "num_pods": 2}])
    replay = run(jobs, make_nodes(4, 4), Policy("p", node_placement=placement))
    assert by_id(replay, "nodes_spanned") == {1: spanned}


@pytest.mark.parametrize(
    ("placement", "j4_start", "j5_start"),
    [
        ("first_fit", 3.0, 100.0),  # J3 on GPU 0 (800 -> 700): no room left for J5's 800
        ("best_fit", 3.0, 4.0),  # J3 on GPU 1 (100 -> 0): GPU 0 keeps 800 for J5
        ("worst_fit", 100.0, 4.0),  # J3 on GPU 2 (1000 -> 900): no whole GPU left for J4
    ],
)
def test_gpu_placement(placement: str, j4_start: float, j5_start: float) -> None:
    # One 3-GPU node. J1 (200) and J2 (900) leave GPUs at 800 / 100 / 1000 free whatever the policy.
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 100.0, "gpu_milli": 200},
            {"job_id": 2, "submit_time": 1.0, "duration": 100.0, "gpu_milli": 900},
            {"job_id": 3, "submit_time": 2.0, "duration": 100.0, "gpu_milli": 100},
            {"job_id": 4, "submit_time": 3.0, "duration": 100.0, "gpu_milli": 1000},
            {"job_id": 5, "submit_time": 4.0, "duration": 100.0, "gpu_milli": 800},
        ]
    )
    replay = run(jobs, make_nodes(3), Policy("g", backfill=Backfill.skip, gpu_placement=placement))
    assert by_id(replay, "start_time") == {1: 0.0, 2: 1.0, 3: 2.0, 4: j4_start, 5: j5_start}


def random_case() -> pl.DataFrame:
    return make_jobs(
        [
            {"job_id": j, "submit_time": float(j), "duration": 1000.0, "gpu_milli": 500, "num_pods": 3}
            for j in range(12)
        ]
    )


def test_random_placement_is_deterministic_per_seed_and_depends_on_it() -> None:
    policy = Policy("r", backfill=Backfill.skip, node_placement="random", gpu_placement="random")
    nodes = make_nodes(2, 2, 2, 2)
    first = run(random_case(), nodes, policy, seed=7)
    again = run(random_case(), nodes, policy, seed=7)
    assert first.jobs.equals(again.jobs) and first.timeline.equals(again.timeline)
    spans = {tuple(run(random_case(), nodes, policy, seed=seed).jobs["nodes_spanned"]) for seed in range(6)}
    assert len(spans) > 1


# --------------------------------------------------------------------------------------------------
# Time: ticks, zero durations, horizon, samples
# --------------------------------------------------------------------------------------------------


def test_periodic_sessions_start_jobs_only_at_ticks() -> None:
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 3.0, "duration": 22.0},
            {"job_id": 2, "submit_time": 4.0, "duration": 5.0},
        ]
    )
    replay = run(jobs, make_nodes(1), Policy("p", session_interval=10.0))
    # Tick 10 starts job 1 (ends 32); tick 40 is the first after it ends. Job 2 ends at 45, and the
    # run ends with the tick after that last change.
    assert by_id(replay, "start_time") == {1: 10.0, 2: 40.0}
    assert replay.stats["end_time"] == 50.0


def test_zero_duration_jobs_finish_at_start_and_free_their_slot_at_once() -> None:
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 5.0, "duration": 0.0},
            {"job_id": 2, "submit_time": 5.0, "duration": 10.0},
        ]
    )
    replay = run(jobs, make_nodes(1), GANG_FIFO, sample_interval=5.0)
    assert by_id(replay, "start_time") == {1: 5.0, 2: 5.0}
    assert by_id(replay, "finish_time") == {1: 5.0, 2: 15.0}
    # The sample at 5 is taken once, after the first pass: the zero-length job still runs then.
    at5 = replay.timeline.filter(pl.col("time") == 5.0).row(0, named=True)
    assert (at5["running_jobs"], at5["pending_jobs"]) == (1, 1)
    assert replay.gpu_milli_seconds == 1000 * 10.0


def test_horizon_leaves_running_jobs_unfinished() -> None:
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 100.0},
            {"job_id": 2, "submit_time": 60.0, "duration": 1.0},
        ]
    )
    replay = run(jobs, make_nodes(1), GANG_FIFO, horizon=50.0, sample_interval=10.0)
    assert by_id(replay, "state") == {1: "unfinished", 2: "unfinished"}
    assert by_id(replay, "start_time") == {1: 0.0, 2: None}
    assert by_id(replay, "finish_time") == {1: None, 2: None}
    assert replay.timeline["time"].to_list() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    assert replay.gpu_milli_seconds == 1000 * 50.0


def test_timeline_rows_at_samples() -> None:
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 25.0, "gpu_milli": 500},
            {"job_id": 2, "submit_time": 0.0, "duration": 15.0, "gpu_milli": 3000},
            {"job_id": 3, "submit_time": 5.0, "duration": 10.0, "gpu_milli": 4000},
        ]
    )
    replay = run(jobs, make_nodes(4, 2), GANG_FIFO, sample_interval=10.0)
    assert replay.timeline.schema == pl.Schema(TIMELINE_SCHEMA)
    rows = [row[:6] for row in replay.timeline.rows()]
    # t=0: 500 on node 0 GPU 0 and 3 whole GPUs (node 0 GPUs 1-3), node 1 idle.
    # t=10: job 3 (4 GPUs) waits; node 1's 2 idle GPUs cannot host it -> fragmented.
    # t=20: job 2 ended at 15 but node 0 still has job 1's 500 milli: job 3 waits, 2 + 3 GPUs idle.
    # t=30: job 1 ended at 25, job 3 started then; it ends at 35; the run ends there.
    assert rows == [
        (0.0, 4, 3500, 0, 2, 0),
        (10.0, 4, 3500, 1, 2, 2),
        (20.0, 1, 500, 1, 1, 5),
        (30.0, 4, 4000, 0, 1, 0),
    ]
    assert by_id(replay, "start_time") == {1: 0.0, 2: 0.0, 3: 25.0}
    assert replay.gpu_milli_seconds == 500 * 25.0 + 3000 * 15.0 + 4000 * 10.0


def test_results_are_identical_across_runs_and_typed() -> None:
    jobs = backfill_case()
    one = run(jobs, make_nodes(4), GANG_EASY, sample_interval=7.0)
    two = run(jobs, make_nodes(4), GANG_EASY, sample_interval=7.0)
    assert one.jobs.equals(two.jobs) and one.timeline.equals(two.timeline)
    assert one.attempts.equals(two.attempts)
    assert one.gpu_milli_seconds == two.gpu_milli_seconds
    assert one.jobs.schema == pl.Schema(JOB_RESULT_SCHEMA)
    assert one.attempts.schema == pl.Schema(ATTEMPT_SCHEMA)
    assert one.jobs["job_id"].to_list() == jobs["job_id"].to_list()  # input order


def test_bad_arguments_are_refused() -> None:
    jobs = backfill_case()
    with pytest.raises(ValueError, match="sample_interval"):
        simulate(jobs, make_nodes(4), GANG_FIFO, sample_interval=0.0)
    with pytest.raises(ValueError, match="horizon"):
        simulate(jobs, make_nodes(4), GANG_FIFO, horizon=-1.0)


# --------------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------------


def test_mig_columns_are_refused_not_dropped() -> None:
    # MIG is not in the engine yet: a job asking for a profile or a partitioned node would run as whole GPUs.
    jobs = make_jobs([{"job_id": 1, "submit_time": 0.0, "duration": 1.0}] * 1)
    with_profile = jobs.with_columns(pl.lit("1g.10gb").alias("mig_profile"))
    with pytest.raises(
        InputError, match=r"jobs table, row 1, column 'mig_profile': job_id 1: mig_profile '1g.10gb'"
    ):
        simulate(with_profile, make_nodes(1), GANG_FIFO)
    nodes = make_nodes(1, 1).with_columns(pl.Series("mig_layout", [None, "all-1g.10gb"]))
    with pytest.raises(InputError, match=r"nodes table, row 2, column 'mig_layout': node_name n1"):
        simulate(jobs, nodes, GANG_FIFO)


def test_internal_kernels_refuse_python_calls() -> None:
    # They have no Python entry point: numba would jump to a missing one (a crash) if asked.
    with pytest.raises(TypeError, match="callable from kernels only"):
        rng.mix64(np.uint64(1))


def test_draws_are_a_pure_function_of_their_key() -> None:
    mix64, draw = python_callable(rng.mix64), python_callable(rng.draw)
    # SplitMix64's finalizer is a bijection with full avalanche: known value of mix(0 + golden gamma).
    assert int(mix64(np.uint64(0x9E3779B97F4A7C15))) == 0xE220A8397B1DCDAF
    a = int(draw(7, 3, 0, 0, DRAW_NODE))
    assert a == int(draw(7, 3, 0, 0, DRAW_NODE))
    neighbours = {int(draw(7, 3, 0, 0, d)) for d in range(3)} | {int(draw(7, j, 0, 0, 0)) for j in range(4)}
    assert len(neighbours) == 6  # the key's every word changes the draw


def test_bitset_next_matches_a_plain_scan() -> None:
    bits_set, bits_clear = python_callable(heaps.bits_set), python_callable(heaps.bits_clear)
    bits_next = python_callable(heaps.bits_next)
    size = 300_000
    words = bitset_words(size)
    l0, l1, l2 = (np.zeros(w, dtype=np.uint64) for w in words)
    rng = np.random.default_rng(3)
    marked = np.zeros(size, dtype=bool)
    for p in rng.choice(size, 2000, replace=False):
        bits_set(int(p), l0, l1, l2)
        marked[p] = True
    for p in rng.choice(np.flatnonzero(marked), 1000, replace=False):
        bits_clear(int(p), l0, l1, l2)
        marked[p] = False
    where = np.flatnonzero(marked)
    for start in [*rng.integers(0, size, 300).tolist(), 0, size - 1]:
        end = start + int(rng.integers(1, 200_000))
        later = where[(where >= start) & (where < end)]
        assert bits_next(start, end, l0, l1, l2) == (int(later[0]) if later.size else -1)


def _prepared(jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy, debug: bool = True) -> Any:
    params = policy_params(
        policy, seed=0, sample_interval=100.0, horizon=None, window=(0.0, 0.0), max_samples=1000, debug=debug
    )
    compiled = compile_replay(jobs, nodes, params)
    return compiled, _initial(compiled, 16)


def test_node_check_reports_a_corrupted_gpu() -> None:
    compiled, state = _prepared(backfill_case(), make_nodes(4, 2), Policy("b", node_placement="best_fit"))
    c = compiled
    err = np.zeros(2, dtype=np.int64)
    check_node = python_callable(invariants.check_node)

    def check(n: int) -> tuple[bool, list[int]]:
        ok = check_node(state.dbg, c.params, c.jobs, c.classes, c.cluster, state.ix, state.js, n, err)
        return bool(ok), err.tolist()

    assert check(1) == (True, [0, 0])
    c.cluster.gpu_free[L.G_MILLI, 5] = 400  # node 1's second GPU loses milli nobody holds
    assert check(1) == (False, [L.E_GPU_MILLI_SUM, 5])
    c.cluster.gpu_free[L.G_MILLI, 5] = 1000
    c.cluster.node_free[L.F_WHOLE, 0] = 3
    assert check(0) == (False, [L.E_NODE_WHOLE, 0])


def test_advance_stops_after_the_last_event_time_at_or_before_the_stop_and_resumes_there() -> None:
    # One GPU: job 1 runs 0-10, job 2 arrives at 10 and runs 10-15. Event times 0, 10, 15.
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 10.0},
            {"job_id": 2, "submit_time": 10.0, "duration": 5.0},
        ]
    )
    c, state = _prepared(jobs, make_nodes(1), GANG_FIFO)

    def step(t_stop: float) -> tuple[int, float, float, int, list[int]]:
        status = advance(c.params, c.jobs, c.classes, c.cluster, state, t_stop)
        run = state.run
        return (
            int(status), float(run.clock[L.X_NOW]), float(run.clock[L.X_NEXT_T]),
            int(run.counters[L.K_EVENTS]), state.js.dyn[L.D_STATUS].tolist(),
        )  # fmt: skip

    running, finished = L.S_RUNNING, L.S_FINISHED
    # The stop time is inclusive: the completion and the arrival at 10 are both handled.
    assert step(10.0) == (L.ADV_PAUSED, 10.0, 15.0, 2, [finished, running])
    assert step(12.0) == (L.ADV_PAUSED, 10.0, 15.0, 2, [finished, running])  # nothing in (10, 12]
    assert step(np.inf)[:2] == (L.ADV_DONE, 15.0)
    done = step(np.inf)  # a finished run stays finished
    assert (done[0], done[1], done[3]) == (L.ADV_DONE, 15.0, 3)
    assert int(state.run.cursor[L.L_SAMPLES]) == 1 and state.run.clock[L.X_INTEGRAL] == 1000 * 15.0


def test_only_the_mechanisms_a_policy_uses_are_allocated() -> None:
    jobs = backfill_case()
    _, plain = _prepared(jobs, make_nodes(4), GANG_SKIP, debug=False)
    assert (plain.pods, plain.easy, plain.pre) == (None, None, None)
    # The debug checks are a runtime switch (one compiled engine for both): off, their work space
    # is one column per array; on, sized to the cluster and the jobs.
    assert max(a.shape[-1] for a in plain.dbg) == 1
    _, easy = _prepared(jobs, make_nodes(4), GANG_EASY, debug=True)
    assert easy.easy is not None and easy.pre is None
    assert easy.dbg.check_job.size == jobs.height > 1
    pod_preempt = replace(POD_BY_POD, queue_order=QueueOrder.priority, preemption=Preemption.priority)
    _, pods = _prepared(jobs, make_nodes(4), pod_preempt)
    assert pods.pods is not None and pods.pre is not None and pods.easy is None


def test_every_scorer_name_is_a_valid_node_and_gpu_placement() -> None:
    jobs = make_jobs(
        [
            {"job_id": j, "submit_time": 0.0, "duration": 10.0, "gpu_milli": 500, "num_pods": 2}
            for j in range(4)
        ]
    )
    for name in SCORERS:
        gpu = name if name in GPU_SCORERS else "best_fit"
        replay = run(jobs, make_nodes(2, 2), Policy(name, node_placement=name, gpu_placement=gpu))
        assert replay.jobs["state"].to_list() == ["finished"] * 4


def test_node_only_scorers_are_refused_as_gpu_placement() -> None:
    from gpureplay.errors import InputError

    assert set(GPU_SCORERS) < set(SCORERS)
    for name in sorted(set(SCORERS) - set(GPU_SCORERS)):
        with pytest.raises(InputError, match=r"scheduler\.gpu_placement"):
            run(backfill_case(), make_nodes(4), Policy(name, gpu_placement=name))


def test_pod_by_pod_refuses_a_queue_order_or_backfill_it_would_ignore() -> None:
    from gpureplay.errors import InputError

    for key, bad in (
        ("queue_order", replace(POD_BY_POD, queue_order=QueueOrder.fifo)),
        ("backfill", replace(POD_BY_POD, backfill=Backfill.easy)),
        ("backfill", replace(POD_BY_POD, backfill_depth=3)),
    ):
        with pytest.raises(InputError, match=rf"scheduler\.{key}.*pod_by_pod"):
            run(backfill_case(), make_nodes(4), bad)


def test_balanced_allocation_scores_gpu_and_cpu_as_kube_scheduler_does() -> None:
    """kube-scheduler NodeResourcesBalancedAllocation, worked by hand on two 4-GPU, 32-core nodes.

    Job 1 (2 GPUs, 2 cores): both nodes score int((1 - |0.5 - 0.0625| / 2) * 100) = 78, node 0 wins
    the tie. Job 2 (1 GPU, 2 cores): node 0 would be at (0.75, 0.125) -> 68, node 1 at (0.25, 0.0625)
    -> 90, so it goes to node 1, where best_fit would pack it onto node 0. Job 3 (4 GPUs) then has no
    empty node until job 1 ends at 100; after best_fit it starts at once on node 1.
    """
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 100.0, "gpu_milli": 2000, "cpu_milli": 2000},
            {"job_id": 2, "submit_time": 1.0, "duration": 100.0, "gpu_milli": 1000, "cpu_milli": 2000},
            {"job_id": 3, "submit_time": 2.0, "duration": 10.0, "gpu_milli": 4000},
        ]
    )
    nodes = make_nodes(4, 4, cpu_milli=32_000)
    balanced = run(jobs, nodes, Policy("balanced", node_placement="balanced_allocation"))
    packed = run(jobs, nodes, Policy("packed", node_placement="best_fit"))
    assert by_id(balanced, "start_time") == {1: 0.0, 2: 1.0, 3: 100.0}
    assert by_id(packed, "start_time") == {1: 0.0, 2: 1.0, 3: 2.0}


def test_unknown_scorer_or_bad_preemption_settings_are_config_errors() -> None:
    from gpureplay.errors import InputError

    jobs = backfill_case()
    with pytest.raises(InputError, match=r"scheduler\.node_placement"):
        run(jobs, make_nodes(4), Policy("x", node_placement="tightest"))
    with pytest.raises(InputError, match=r"scheduler\.preemption"):
        run(jobs, make_nodes(4), replace(GANG_EASY, preemption=Preemption.priority))
    with pytest.raises(InputError, match=r"scheduler\.graceful_termination"):
        run(jobs, make_nodes(4), replace(GANG_SKIP, graceful_termination=-1.0))


# --------------------------------------------------------------------------------------------------
# Priority preemption, checkpoints and restarts
# --------------------------------------------------------------------------------------------------

GANG_PREEMPT = replace(
    GANG_SKIP, name="preempt", queue_order=QueueOrder.priority, preemption=Preemption.priority
)
POD_PREEMPT = replace(
    POD_BY_POD, name="kube-preempt", queue_order=QueueOrder.priority, preemption=Preemption.priority
)


def three_jobs() -> pl.DataFrame:
    """The issue's hand-worked example: a low-priority 8-GPU job preempted by a high-priority one."""
    return make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 3600.0, "gpu_milli": 8000, "priority": 0},
            {"job_id": 2, "submit_time": 1000.0, "duration": 1000.0, "gpu_milli": 8000, "priority": 100},
            {"job_id": 3, "submit_time": 1500.0, "duration": 500.0, "gpu_milli": 8000, "priority": 0},
        ],
        checkpoint_interval=600.0,
    )


def test_three_job_preemption_with_checkpoints_gives_the_times_worked_out_on_paper() -> None:
    replay = run(three_jobs(), make_nodes(8), GANG_PREEMPT, sample_interval=500.0)
    # A (low) runs from 0. B (high) arrives at 1000 and does not fit: A is evicted at 1000 with 1000 s
    # of progress, of which the checkpoint at 600 s is kept (400 s lost), and holds its GPUs for the
    # 30 s grace period. B starts at 1030 and ends at 2030. A (requeued at 1030, ahead of C submitted
    # at 1500) restarts at 2030, spends Lucid's 40 s restart overhead (8 GPUs), then 3000 s of work:
    # it ends at 5070. C runs 5070-5570.
    assert by_id(replay, "start_time") == {1: 0.0, 2: 1030.0, 3: 5070.0}
    assert by_id(replay, "finish_time") == {1: 5070.0, 2: 2030.0, 3: 5570.0}
    assert by_id(replay, "preemptions") == {1: 1, 2: 0, 3: 0}
    assert by_id(replay, "attempts") == {1: 2, 2: 1, 3: 1}
    assert by_id(replay, "pending_time") == {1: 1000.0, 2: 30.0, 3: 3570.0}
    # Lost: 8 GPUs x (400 s rolled back + 30 s grace + 40 s restart overhead).
    assert by_id(replay, "lost_gpu_seconds") == {1: 8 * 470.0, 2: 0.0, 3: 0.0}
    first, second = replay.attempts.filter(pl.col("job_id") == 1).iter_rows(named=True)
    assert (first["start"], first["evicted"], first["end"], first["end_reason"]) == (
        0.0,
        1000.0,
        1030.0,
        "preempted",
    )
    assert (first["progress"], first["work_lost"], first["gpu_seconds"]) == (1000.0, 400.0, 8 * 1030.0)
    assert (second["start"], second["end"], second["restart_overhead"], second["progress"]) == (
        2030.0, 5070.0, 40.0, 3000.0,
    )  # fmt: skip
    # The node is allocated from 0 to 5570 without a gap; useful work is 8 GPUs x (3600 + 1000 + 500) s.
    assert replay.gpu_milli_seconds == 8000 * 5570.0
    useful = 8 * (3600.0 + 1000.0 + 500.0)
    assert useful / (replay.gpu_milli_seconds / 1000) == pytest.approx(40800 / 44560)
    at = {row["time"]: row for row in replay.timeline.iter_rows(named=True)}
    assert (at[1000.0]["preemptions"], at[1000.0]["terminating_jobs"], at[1000.0]["pending_jobs"]) == (
        1,
        1,
        1,
    )
    assert at[1500.0]["terminating_jobs"] == 0


@pytest.mark.parametrize(
    ("interval", "a_finish", "lost"),
    [
        (0.0, 2030.0 + 40.0 + 2600.0, 8 * (0.0 + 30.0 + 40.0)),  # checkpoint at eviction: nothing rolled back
        (math.inf, 2030.0 + 40.0 + 3600.0, 8 * (1000.0 + 30.0 + 40.0)),  # never checkpoints: all lost
    ],
)
def test_checkpoint_interval_bounds_the_work_lost(interval: float, a_finish: float, lost: float) -> None:
    jobs = three_jobs().with_columns(checkpoint_interval=pl.lit(interval))
    replay = run(jobs, make_nodes(8), GANG_PREEMPT)
    assert by_id(replay, "finish_time")[1] == a_finish
    assert by_id(replay, "lost_gpu_seconds")[1] == lost


def test_requeue_back_or_original_decides_who_runs_after_the_preemptor() -> None:
    # As the three-job example, but C arrives at 900, before A is evicted: under `back` A re-enters
    # behind C (requeued at 1030 > 900); under `original` ahead of it (submitted at 0).
    jobs = three_jobs().with_columns(
        pl.when(pl.col("job_id") == 3).then(900.0).otherwise(pl.col("submit_time")).alias("submit_time")
    )
    back = run(jobs, make_nodes(8), GANG_PREEMPT)
    assert by_id(back, "start_time") == {1: 0.0, 2: 1030.0, 3: 2030.0}
    assert by_id(back, "finish_time")[1] == 2530.0 + 40.0 + 3000.0
    original = run(jobs, make_nodes(8), replace(GANG_PREEMPT, requeue=Requeue.original))
    assert by_id(original, "start_time")[3] == 5070.0


def test_never_policy_non_preemptible_and_equal_priority_jobs_are_not_evicted() -> None:
    base = three_jobs()
    never = base.with_columns(
        preemption_policy=pl.when(pl.col("job_id") == 2)
        .then(pl.lit("Never"))
        .otherwise(pl.lit("PreemptLowerPriority"))
    )
    # B may not preempt: it waits for A like anyone else (but sorts ahead of C).
    assert by_id(run(never, make_nodes(8), GANG_PREEMPT), "start_time") == {1: 0.0, 2: 3600.0, 3: 4600.0}
    shielded = base.with_columns(preemptible=pl.col("job_id") != 1)
    assert by_id(run(shielded, make_nodes(8), GANG_PREEMPT), "preemptions")[1] == 0
    equal = base.with_columns(priority=pl.lit(0, pl.Int32))
    assert by_id(run(equal, make_nodes(8), GANG_PREEMPT), "preemptions")[1] == 0


def test_grace_zero_binds_the_preemptor_at_the_eviction_time() -> None:
    replay = run(three_jobs(), make_nodes(8), replace(GANG_PREEMPT, graceful_termination=0.0))
    assert by_id(replay, "start_time") == {1: 0.0, 2: 1000.0, 3: 5040.0}
    assert by_id(replay, "lost_gpu_seconds")[1] == 8 * (400.0 + 40.0)


def test_victims_are_the_lowest_priority_and_a_gang_needs_room_for_all_its_pods() -> None:
    # Two 4-GPU nodes, each full with one job: low (prio 1) on node 0, mid (prio 5) on node 1.
    # A prio-10 job of 4 GPUs evicts the low one only (kube: lowest highest-victim priority).
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 1000.0, "gpu_milli": 4000, "priority": 1},
            {"job_id": 2, "submit_time": 0.0, "duration": 1000.0, "gpu_milli": 4000, "priority": 5},
            {"job_id": 3, "submit_time": 10.0, "duration": 100.0, "gpu_milli": 4000, "priority": 10},
            {
                "job_id": 4,
                "submit_time": 20.0,
                "duration": 100.0,
                "gpu_milli": 4000,
                "priority": 3,
                "num_pods": 2,
            },
        ]
    )
    replay = run(jobs, make_nodes(4, 4), GANG_PREEMPT)
    assert by_id(replay, "start_time")[3] == 40.0  # 10 + 30 s grace
    # Job 4 (prio 3, two pods of 4 GPUs) could evict job 1 (prio 1) but not job 2 (prio 5): while job 2
    # runs its gang cannot fit, so nobody is evicted for it, and job 1 restarts on node 0 when job 3 ends
    # (140). When job 2 ends (1000) the gang fits once job 1 goes: job 1 is evicted a second time.
    assert by_id(replay, "preemptions") == {1: 2, 2: 0, 3: 0, 4: 0}
    assert by_id(replay, "start_time")[4] == 1030.0
    assert replay.attempts.filter(pl.col("job_id") == 1)["start"].to_list() == [0.0, 140.0, 1030.0 + 100.0]


def test_reprieve_keeps_the_most_important_victims() -> None:
    # One 4-GPU node with four 1-GPU jobs of priorities 1, 2, 3, 4 (started in that order). A 2-GPU job
    # of priority 9 needs two of them gone: the reprieve gives back the most important first (4, then 3),
    # so the victims are the priority-1 and priority-2 jobs.
    jobs = make_jobs(
        [{"job_id": p, "submit_time": float(p), "duration": 1000.0, "priority": p} for p in (1, 2, 3, 4)]
        + [{"job_id": 9, "submit_time": 10.0, "duration": 10.0, "gpu_milli": 2000, "priority": 9}]
    )
    replay = run(jobs, make_nodes(4), GANG_PREEMPT)
    assert by_id(replay, "preemptions") == {1: 1, 2: 1, 3: 0, 4: 0, 9: 0}


def test_pod_by_pod_preemption_evicts_a_partly_placed_lower_priority_job() -> None:
    # kube-scheduler default with preemption, two 4-GPU nodes. A priority-20 job takes node 0 whole; a
    # low job of 8 one-GPU pods holds node 1's 4 GPUs without running (partly placed). A priority-10 job
    # of 2 pods arrives at 10: its pods can only preempt the holder (evicted whole); once the holder's
    # 30 s grace period ends both pods bind (40), and the holder re-queues and takes the 2 GPUs left.
    jobs = make_jobs(
        [
            {"job_id": 0, "submit_time": 0.0, "duration": 1000.0, "gpu_milli": 4000, "priority": 20},
            {"job_id": 1, "submit_time": 0.0, "duration": 50.0, "num_pods": 8, "priority": 0},
            {"job_id": 2, "submit_time": 10.0, "duration": 50.0, "num_pods": 2, "priority": 10},
        ]
    )
    replay = run(jobs, make_nodes(4, 4), POD_PREEMPT, horizon=500.0)
    assert by_id(replay, "start_time") == {0: 0.0, 1: None, 2: 40.0}
    assert by_id(replay, "preemptions") == {0: 0, 1: 1, 2: 0}
    first, second = replay.attempts.filter(pl.col("job_id") == 1).sort("attempt").iter_rows(named=True)
    assert (first["end_reason"], first["start"], first["pods"], first["end"]) == ("preempted", None, 4, 40.0)
    # After job 2 ends (90) the holder gets node 1 whole again: 4 pods held at the horizon, deadlocked.
    assert (second["end_reason"], second["pods"], second["hold_start"]) == ("deadlocked", 4, 40.0)
    assert by_id(replay, "state")[1] == "deadlocked"
    # It never ran, so it lost no work: only the 4 GPUs it held through the grace period.
    assert by_id(replay, "lost_gpu_seconds")[1] == 4 * 30.0


def test_accounting_identity_holds_with_evictions_and_a_horizon() -> None:
    # The debug run checks sum over attempts of held GPU-seconds == the allocation integral at the end.
    # With a horizon inside the grace period the run ends at the horizon, and the evicted attempt's end
    # (due at 1030) is clamped to it: it held its 8 GPUs to 1010.
    replay = run(three_jobs(), make_nodes(8), GANG_PREEMPT, horizon=1010.0)
    attempts = replay.attempts.filter(pl.col("job_id") == 1)
    assert attempts["end"].to_list() == [1010.0]
    assert attempts["gpu_seconds"].to_list() == [8 * 1010.0]
    assert replay.gpu_milli_seconds == 8000 * 1010.0
    assert by_id(replay, "state") == {1: "unfinished", 2: "unfinished", 3: "unfinished"}


def test_timeline_widens_its_interval_to_stay_under_the_bound() -> None:
    jobs = make_jobs([{"job_id": 1, "submit_time": 0.0, "duration": 1000.0}])
    bounded = run(jobs, make_nodes(1), GANG_FIFO, sample_interval=1.0, max_samples=100)
    plain = run(jobs, make_nodes(1), GANG_FIFO, sample_interval=16.0)
    assert bounded.sample_interval == 16.0  # 1 -> 2 -> 4 -> 8 -> 16: 63 rows
    assert bounded.timeline.equals(plain.timeline)


def test_window_integral_counts_allocation_inside_the_window_only() -> None:
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 100.0, "gpu_milli": 2000},
            {"job_id": 2, "submit_time": 50.0, "duration": 100.0},
        ]
    )
    replay = run(jobs, make_nodes(4), GANG_SKIP, window=(25.0, 75.0))
    assert replay.window_gpu_milli_seconds == 2000 * 50.0 + 1000 * 25.0
    assert replay.gpu_milli_seconds == 2000 * 100.0 + 1000 * 100.0


def test_a_rate_change_keeps_the_work_done_and_moves_the_finish() -> None:
    from gpureplay.engine.devices import sharing

    settle, set_rate = python_callable(sharing.settle), python_callable(sharing.set_rate)

    # One job of 100 s of work starts at 0 (rate 1). At 40 it is slowed to half speed: 40 s done,
    # 60 s left at 0.5 s/s -> finishes at 160. Evicted at 100 with a checkpoint every 25 s of work:
    # done 40 + 60 x 0.5 = 70, kept 50, lost 20.
    jobs = make_jobs([{"job_id": 1, "submit_time": 0.0, "duration": 100.0}], checkpoint_interval=25.0)
    c, state = _prepared(jobs, make_nodes(1), GANG_PREEMPT)
    assert advance(c.params, c.jobs, c.classes, c.cluster, state, 0.0) == L.ADV_PAUSED
    js, tm, run = state.js, state.tm, state.run
    assert js.time[L.T_FINISH, 0] == 100.0
    set_rate(c.jobs, js, tm, run, 0, 0.5, 40.0)
    assert js.time[L.T_FINISH, 0] == 160.0
    probe = js.time.copy()
    settle(js._replace(time=probe), 0, 100.0)
    assert probe[L.T_DONE, 0] == 70.0 and probe[L.T_SHARE_DELAY, 0] == 30.0
    # The old completion (100) is stale: the loop skips it and finishes the job at 160.
    assert advance(c.params, c.jobs, c.classes, c.cluster, state, np.inf) == L.ADV_DONE
    assert js.time[L.T_END, 0] == 160.0
    assert state.run.clock[L.X_INTEGRAL] == 1000.0 * 160.0
    # 120 s at half speed cost 60 s: the sharing delay booked at the end.
    assert js.time[L.T_SHARE_DELAY, 0] == 60.0 and js.time[L.T_WORK_DONE, 0] == 100.0


class _Unregistered(NamedTuple):
    x: np.ndarray


def test_a_bundle_no_queue_system_registered_is_a_typing_error_not_another_systems_cycle() -> None:
    """The queue systems' dispatch (``by_bundle``, the loop's ``cycle``) names an unknown bundle type."""
    from numba import njit
    from numba.core.errors import TypingError

    from gpureplay.engine.cycles import cycle
    from gpureplay.engine.jit.config import by_bundle
    from gpureplay.engine.state.bundles import KueueState

    timeout = by_bundle("a test's timeout", {KueueState: None}, False)
    bundle = _Unregistered(np.zeros(1))

    with pytest.raises(TypingError, match=r"a test.s timeout: no body for a .*_Unregistered"):
        njit(lambda b: timeout(b))(bundle)
    assert njit(lambda b: timeout(b))(None) is False
    with pytest.raises(TypingError, match=r"cycle: no gang cycle for a .*_Unregistered"):
        njit(lambda b: cycle(None, b, 0))(bundle)
