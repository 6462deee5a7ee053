"""Targeted scenarios for the numba replay engine, each worked out by hand from the v1 semantics.

Every replay runs with ``debug=True`` (invariants after each cycle, accounting
identity at the end). The differential tests against the plain-Python
reference live elsewhere; these pin down behaviours a reader can check on
paper: the pod-by-pod deadlock, head-of-line blocking vs skip vs EASY,
packing, constraints, rejections, orders, placements, ticks and samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
import pytest

from gpureplay.engine import state as S
from gpureplay.engine.fitindex import index_build, index_layout
from gpureplay.engine.invariants import check_state
from gpureplay.engine.loop import EngineState, advance, init_cluster, init_state
from gpureplay.engine.placement import rejection_codes
from gpureplay.engine.queueing import bits_clear, bits_next, bits_set, bitset_words
from gpureplay.engine.rng import rng_next, rng_skip
from gpureplay.replay.compile import compile_replay
from gpureplay.replay.simulate import JOB_RESULT_SCHEMA, TIMELINE_SCHEMA, Replay, simulate
from gpureplay.schedulers.policy import Backfill, GangMode, Placement, Policy, QueueOrder
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
POD_BY_POD = Policy("kube", gang=GangMode.pod_by_pod)


def make_jobs(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """Canonical jobs from dicts; ``num_pods`` defaults to 1 and ``gpu_milli`` to one GPU."""
    full = []
    for row in rows:
        values = {c: row.get(c, JOB_DEFAULTS.get(c)) for c in JOBS_SCHEMA}
        values["num_pods"] = row.get("num_pods", 1)
        values["gpu_milli"] = row.get("gpu_milli", 1000)
        full.append(values)
    return validate_jobs(pl.DataFrame(full, schema=JOBS_SCHEMA).with_row_index("source_row", offset=1), "t")


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
        (Placement.first_fit, 1.0, 100.0),  # J1 on the 4-GPU node 0: J3 finds no 4 free GPUs
        (Placement.best_fit, 1.0, 2.0),  # J1 on the 2-GPU node 2: both big jobs fit
        (Placement.worst_fit, 502.0, 2.0),  # J1 and then J3 on the 8-GPU node 1: J2 waits for both
    ],
)
def test_node_placement(placement: Placement, j2_start: float, j3_start: float) -> None:
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


@pytest.mark.parametrize(("placement", "spanned"), [(Placement.best_fit, 1), (Placement.worst_fit, 2)])
def test_binpack_keeps_pods_together_spread_splits_them(placement: Placement, spanned: int) -> None:
    jobs = make_jobs([{"job_id": 1, "submit_time": 0.0, "duration": 1.0, "num_pods": 2}])
    replay = run(jobs, make_nodes(4, 4), Policy("p", node_placement=placement))
    assert by_id(replay, "nodes_spanned") == {1: spanned}


@pytest.mark.parametrize(
    ("placement", "j4_start", "j5_start"),
    [
        (Placement.first_fit, 3.0, 100.0),  # J3 on GPU 0 (800 -> 700): no room left for J5's 800
        (Placement.best_fit, 3.0, 4.0),  # J3 on GPU 1 (100 -> 0): GPU 0 keeps 800 for J5
        (Placement.worst_fit, 100.0, 4.0),  # J3 on GPU 2 (1000 -> 900): no whole GPU left for J4
    ],
)
def test_gpu_placement(placement: Placement, j4_start: float, j5_start: float) -> None:
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
    policy = Policy(
        "r", backfill=Backfill.skip, node_placement=Placement.random, gpu_placement=Placement.random
    )
    nodes = make_nodes(2, 2, 2, 2)
    first = run(random_case(), nodes, policy, seed=7)
    again = run(random_case(), nodes, policy, seed=7)
    assert first.jobs.equals(again.jobs) and first.timeline.equals(again.timeline)
    assert first.stats["rng_draws"] == again.stats["rng_draws"] > 0
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
    rows = replay.timeline.rows()
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
    assert one.gpu_milli_seconds == two.gpu_milli_seconds
    assert one.jobs.schema == pl.Schema(JOB_RESULT_SCHEMA)
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


def test_splitmix64_matches_the_reference_sequence_and_skips_exactly() -> None:
    rng = np.array([0, 0], dtype=np.uint64)
    # First outputs of Vigna's splitmix64.c seeded with 0.
    assert int(rng_next(rng)) == 0xE220A8397B1DCDAF
    assert int(rng_next(rng)) == 0x6E789E6AA1B965F4
    stepped = np.array([12345, 0], dtype=np.uint64)
    skipped = stepped.copy()
    for _ in range(1000):
        rng_next(stepped)
    rng_skip(skipped, 1000)
    assert stepped.tolist() == skipped.tolist()


def test_bitset_next_matches_a_plain_scan() -> None:
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


def test_invariant_check_reports_a_corrupted_gpu() -> None:
    jobs = backfill_case()
    nodes = make_nodes(4, 2)
    policy = Policy("b", node_placement=Placement.best_fit)
    c = compile_replay(jobs, nodes, policy)
    node_free, gpu_free, hist, milli, counters = init_cluster(c.node_int, c.num_models, c.hist_width)
    leaf, offset, keys = index_layout(c.node_int, c.num_models, c.hist_width)
    index_build(int(c.policy[S.P_NODE]), c.node_int, node_free, leaf, offset, keys)
    n_jobs, n_classes = c.job_int.shape[1], c.class_int.shape[1]
    class_dyn = np.zeros((S.CLASS_DYN_FIELDS, n_classes), dtype=np.int64)
    class_dyn[S.CD_APOS] = -1

    def check() -> tuple[bool, list[int]]:
        err = np.zeros(2, dtype=np.int64)
        ok = check_state(
            0.0, S.GANG, c.job_int, np.zeros((S.JOB_DYN_FIELDS, n_jobs), dtype=np.int64),
            np.zeros((S.JOB_TIME_FIELDS, n_jobs)), np.zeros(c.num_pods, dtype=np.int64),
            np.zeros(c.num_slots, dtype=np.int64), c.class_int, class_dyn,
            np.zeros(n_classes, dtype=np.int64), np.zeros(int(c.bitset_sizes[0]), dtype=np.uint64),
            c.node_int, node_free, gpu_free, hist, milli, counters, np.zeros((2, n_jobs), dtype=np.int64),
            c.policy, leaf, offset, keys, err,
        )  # fmt: skip
        return bool(ok), err.tolist()

    assert check() == (True, [S.E_OK, 0])
    gpu_free[S.G_MILLI, 5] = 400  # node 1's second GPU loses milli nobody holds
    assert check() == (False, [S.E_GPU_MILLI_SUM, 5])
    gpu_free[S.G_MILLI, 5] = 1000
    node_free[S.F_WHOLE, 0] = 3
    assert check() == (False, [S.E_NODE_WHOLE, 0])


def test_advance_stops_after_the_last_event_time_at_or_before_the_stop_and_resumes_there() -> None:
    # One GPU: job 1 runs 0-10, job 2 arrives at 10 and runs 10-15. Event times 0, 10, 15.
    jobs = make_jobs(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 10.0},
            {"job_id": 2, "submit_time": 10.0, "duration": 5.0},
        ]
    )
    c = compile_replay(jobs, make_nodes(1), GANG_FIFO)
    rng = np.zeros(2, dtype=np.uint64)
    reject = np.ascontiguousarray(
        rejection_codes(c.rclass_int, c.rclass_mask, c.node_type)[c.job_int[S.J_RCLASS]]
    )
    inputs = (
        c.policy, c.session_interval, 100.0, 100_000, np.inf, np.inf, np.inf, True, c.job_int, c.job_float,
        c.job_mask, reject, c.arrival, c.class_int, c.class_mask, c.class_jobs, c.node_int, rng,
    )  # fmt: skip
    state = EngineState(
        *init_state(
            c.policy, c.job_int, c.class_int, c.node_int, c.num_models, c.hist_width, c.num_pods, c.num_slots,
            c.bitset_sizes,
        )
    )  # fmt: skip

    def step(t_stop: float) -> tuple[int, float, float, int, list[int]]:
        status, _tl_time, _tl_rows = advance(*inputs, *state, t_stop)
        clock, counters = state.clock, state.counters
        return (
            int(status), float(clock[S.X_NOW]), float(clock[S.X_NEXT_T]), int(counters[S.K_EVENTS]),
            state.job_dyn[S.D_STATUS].tolist(),
        )  # fmt: skip

    running, finished = S.S_RUNNING, S.S_FINISHED
    # The stop time is inclusive: the completion and the arrival at 10 are both handled.
    assert step(10.0) == (S.ADV_PAUSED, 10.0, 15.0, 2, [finished, running])
    assert step(12.0) == (S.ADV_PAUSED, 10.0, 15.0, 2, [finished, running])  # nothing in (10, 12]
    assert step(np.inf)[:2] == (S.ADV_DONE, 15.0)
    done = step(np.inf)  # a finished run stays finished
    assert (done[0], done[1], done[3]) == (S.ADV_DONE, 15.0, 3)
    assert state.job_dyn[S.D_STATUS].tolist() == [finished, finished]
    assert int(state.cursor[S.L_SAMPLES]) == 1 and state.clock[S.X_INTEGRAL] == 1000 * 15.0
