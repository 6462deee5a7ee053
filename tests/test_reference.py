"""Hand-computed scenarios for the plain-Python reference simulator.

The reference is the oracle of the differential tests, so it is itself pinned
down here on cases small enough to work out on paper. Each expected number is
derived in the test's comments from the engine v2 spec (docs/engine/index.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl
import pytest
from tests.reference.scoring import GPU_SCORERS as REFERENCE_GPU_SCORERS
from tests.reference.scoring import SCORERS as REFERENCE_SCORERS
from tests.reference.simulator import (
    ATTEMPT_SCHEMA,
    JOB_RESULT_SCHEMA,
    TIMELINE_SCHEMA,
    draw,
    mix64,
    simulate,
)
from tests.reference.strategies import PRESETS, jobs_frame, nodes_frame, preemptive

from gpureplay.engine.fit.scoring import GPU_SCORERS as ENGINE_GPU_SCORERS
from gpureplay.engine.fit.scoring import SCORERS as ENGINE_SCORERS
from gpureplay.schedulers.policy import Backfill, QueueOrder, Requeue

FIFO = PRESETS["fifo"]
SKIP = replace(FIFO, name="fifo-skip", backfill=Backfill.skip)
EASY = PRESETS["easy-backfill"]
KUBE = PRESETS["kube-default"]
#: gang-binpack (priority order, gang, best fit, skip) and kube-default with priority preemption, grace 2 s.
GANG_PREEMPT = preemptive(PRESETS["gang-binpack"], graceful_termination=2.0)
KUBE_PREEMPT = preemptive(KUBE, graceful_termination=2.0)


def job(job_id: int, submit: float, duration: float, pods: int, milli: int, **extra: Any) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "submit_time": submit,
        "duration": duration,
        "num_pods": pods,
        "gpu_milli": milli,
        **extra,
    }


def by_id(jobs: pl.DataFrame) -> dict[int, dict[str, Any]]:
    return {row["job_id"]: row for row in jobs.iter_rows(named=True)}


def spans(jobs: pl.DataFrame) -> dict[int, tuple[float | None, float | None]]:
    return {row["job_id"]: (row["start_time"], row["finish_time"]) for row in jobs.iter_rows(named=True)}


def column(jobs: pl.DataFrame, name: str) -> dict[int, Any]:
    return dict(zip(jobs["job_id"], jobs[name], strict=True))


def attempts_of(result: Any, job_id: int) -> list[dict[str, Any]]:
    return list(result.attempts.filter(pl.col("job_id") == job_id).iter_rows(named=True))


def one_node(num_gpus: int = 8, model: str = "V100", **extra: Any) -> pl.DataFrame:
    return nodes_frame([{"gpu_model": model, "num_gpus": num_gpus, **extra}])


def v100s(count: int, gpus: int = 4) -> pl.DataFrame:
    return nodes_frame([{"gpu_model": "V100", "num_gpus": gpus}] * count)


# --------------------------------------------------------------------------------------------------
# Draws and scorers
# --------------------------------------------------------------------------------------------------


def test_mix64_is_splitmix64_output_function() -> None:
    # Vigna's splitmix64.c seeded with 0 returns mix(k * GOLDEN) for k = 1, 2, 3 (published values).
    golden = 0x9E3779B97F4A7C15
    outputs = [mix64(k * golden % 2**64) for k in (1, 2, 3)]
    assert outputs == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_draw_is_the_spec_hash() -> None:
    g, m = 0x9E3779B97F4A7C15, 2**64
    seed, job_id, pod, attempt, decision = 42, 7, 3, 1, 2
    h = mix64((seed + g) % m)
    h = mix64(h ^ ((job_id + 2 * g) % m))
    h = mix64(h ^ ((pod + 3 * g) % m))
    h = mix64(h ^ ((attempt + 4 * g) % m))
    assert draw(seed, job_id, pod, attempt, decision) == mix64(h ^ ((decision + 5 * g) % m))
    # seed is taken mod 2**63; job_id as an unsigned 64-bit word.
    assert draw(2**63 + 42, 7, 3, 1, 2) == draw(42, 7, 3, 1, 2)
    assert draw(0, -1, 0, 0, 0) == draw(0, 2**64 - 1, 0, 0, 0)
    assert all(0 <= draw(s, 1, 2, 3, 0) < 2**64 for s in range(50))


def test_reference_scorers_twin_the_engine_scorers() -> None:
    # Adding a scorer to the engine needs its twin here (and the other way round).
    assert set(REFERENCE_SCORERS) == set(ENGINE_SCORERS)
    assert set(REFERENCE_GPU_SCORERS) == set(ENGINE_GPU_SCORERS)


# --------------------------------------------------------------------------------------------------
# Gang deadlock (the seed scenario)
# --------------------------------------------------------------------------------------------------

TWO_FULL_NODE_JOBS = [job(1, 0.0, 10.0, 8, 1000), job(2, 0.0, 10.0, 8, 1000)]


def test_pod_by_pod_interleaves_pods_into_a_deadlock() -> None:
    # Pod queue A0 B0 A1 B1 ...: each job gets 4 of the 8 GPUs and neither can start.
    result = simulate(jobs_frame(TWO_FULL_NODE_JOBS), one_node(8), KUBE, sample_interval=5.0, debug=True)
    rows = by_id(result.jobs)
    for job_id in (1, 2):
        assert rows[job_id]["state"] == "deadlocked"
        assert rows[job_id]["held_milli"] == 4000
        assert rows[job_id]["nodes_spanned"] == 1
        assert rows[job_id]["start_time"] is None and rows[job_id]["finish_time"] is None
        assert (rows[job_id]["attempts"], rows[job_id]["pending_time"]) == (1, 0.0)
        [attempt] = attempts_of(result, job_id)
        assert (attempt["end_reason"], attempt["pods"], attempt["start"], attempt["nodes"]) == (
            "deadlocked",
            4,
            None,
            0,
        )
    # Nothing runs and nothing arrives after t=0: the run ends at 0 with one sample.
    assert result.timeline.rows() == [(0.0, 8, 8000, 2, 0, 0, 0, 0, 0.0, 0)]
    assert result.gpu_milli_seconds == 0.0


def test_gang_runs_the_same_jobs_one_after_the_other() -> None:
    result = simulate(jobs_frame(TWO_FULL_NODE_JOBS), one_node(8), FIFO, sample_interval=5.0, debug=True)
    assert spans(result.jobs) == {1: (0.0, 10.0), 2: (10.0, 20.0)}
    assert result.jobs["state"].to_list() == ["finished", "finished"]
    assert result.jobs["held_milli"].to_list() == [0, 0]
    assert result.jobs["pending_time"].to_list() == [0.0, 10.0]
    assert result.timeline.rows() == [
        (0.0, 8, 8000, 1, 1, 0, 0, 0, 0.0, 0),
        (5.0, 8, 8000, 1, 1, 0, 0, 0, 0.0, 0),
        (10.0, 8, 8000, 0, 1, 0, 0, 0, 0.0, 0),
        (15.0, 8, 8000, 0, 1, 0, 0, 0, 0.0, 0),
        (20.0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0),
    ]
    assert result.gpu_milli_seconds == 8000 * 20
    # One attempt each, 8 GPUs x 10 s.
    assert result.attempts["gpu_seconds"].to_list() == [80.0, 80.0]


# --------------------------------------------------------------------------------------------------
# Three free GPUs: A (4 pods) queued before B (3 pods)
# --------------------------------------------------------------------------------------------------

THREE_FREE = [
    job(1, 0.0, 100.0, 1, 5000),  # X holds 5 of 8 GPUs until t=100
    job(2, 10.0, 50.0, 4, 1000),  # A
    job(3, 11.0, 50.0, 3, 1000),  # B
]


def test_pod_by_pod_holds_three_of_a_and_b_waits() -> None:
    result = simulate(jobs_frame(THREE_FREE), one_node(8), KUBE, sample_interval=10.0, debug=True)
    # A0-A2 take the 3 free GPUs at t=10; at t=100 A3 (submitted earlier) goes first, then B0-B2.
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (100.0, 150.0), 3: (100.0, 150.0)}
    at_20 = result.timeline.filter(pl.col("time") == 20.0).rows()
    assert at_20 == [(20.0, 8, 8000, 2, 1, 0, 0, 0, 0.0, 0)]
    # Accounting: X 5000*100, A's first 3 pods 3000*(150-10), A3 1000*50, B 3000*50.
    assert result.gpu_milli_seconds == 500_000 + 420_000 + 50_000 + 150_000
    [a] = attempts_of(result, 2)
    assert (a["hold_start"], a["start"], a["gpu_seconds"]) == (10.0, 100.0, 420.0 + 50.0)


def test_pod_by_pod_partial_job_at_horizon_is_deadlocked() -> None:
    result = simulate(
        jobs_frame(THREE_FREE), one_node(8), KUBE, sample_interval=10.0, horizon=50.0, debug=True
    )
    rows = by_id(result.jobs)
    assert (rows[1]["state"], rows[1]["start_time"], rows[1]["finish_time"]) == ("unfinished", 0.0, None)
    assert rows[1]["nodes_spanned"] == 1
    assert (rows[2]["state"], rows[2]["held_milli"], rows[2]["nodes_spanned"]) == ("deadlocked", 3000, 1)
    assert (rows[3]["state"], rows[3]["start_time"], rows[3]["nodes_spanned"]) == ("unfinished", None, 0)
    # Pending until the end (50): A since 10, B since 11.
    assert (rows[2]["pending_time"], rows[3]["pending_time"]) == (40.0, 39.0)
    # The last event processed is the sample at t=50: X 5000*50 + A's pods 3000*40.
    assert result.timeline["time"].to_list() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    assert result.gpu_milli_seconds == 250_000 + 120_000
    # Open attempts: X unfinished (progress 50 of 100), A deadlocked.
    assert [
        (a["job_id"], a["end_reason"], a["end"], a["progress"]) for a in result.attempts.iter_rows(named=True)
    ] == [
        (1, "unfinished", 50.0, 50.0),
        (2, "deadlocked", 50.0, 0.0),
    ]


def test_gang_skip_runs_b_first() -> None:
    result = simulate(jobs_frame(THREE_FREE), one_node(8), SKIP, debug=True)
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (100.0, 150.0), 3: (11.0, 61.0)}


def test_gang_head_of_line_blocks_b() -> None:
    result = simulate(jobs_frame(THREE_FREE), one_node(8), FIFO, debug=True)
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (100.0, 150.0), 3: (100.0, 150.0)}


# --------------------------------------------------------------------------------------------------
# EASY vs none vs skip
# --------------------------------------------------------------------------------------------------

BACKFILL = [
    job(1, 0.0, 100.0, 1, 5000),  # X: 5 of 8 GPUs until 100
    job(2, 10.0, 50.0, 6, 1000),  # A: needs 6, gets a reservation at S=100
    job(3, 11.0, 200.0, 3, 1000),  # B: fits now, but held past S it would leave 5 < 6 for A
    job(4, 12.0, 30.0, 2, 1000),  # C: fits now and ends (42) before S
]


def test_backfill_none_blocks_everything_behind_the_head() -> None:
    result = simulate(jobs_frame(BACKFILL), one_node(8), FIFO, debug=True)
    # t=100: A starts, B does not fit (2 free) and blocks C; t=150: B and C.
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (100.0, 150.0), 3: (150.0, 350.0), 4: (150.0, 180.0)}


def test_backfill_skip_starves_the_wide_job() -> None:
    result = simulate(jobs_frame(BACKFILL), one_node(8), SKIP, debug=True)
    # B takes the 3 free GPUs at 11; C starts when X ends; A waits for B (t=211).
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (211.0, 261.0), 3: (11.0, 211.0), 4: (100.0, 130.0)}


def test_skip_with_depth_one_stops_at_the_first_failure() -> None:
    policy = replace(SKIP, backfill_depth=1)
    result = simulate(jobs_frame(BACKFILL), one_node(8), policy, debug=True)
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (100.0, 150.0), 3: (150.0, 350.0), 4: (150.0, 180.0)}


def test_easy_backfills_only_what_does_not_delay_the_head() -> None:
    result = simulate(jobs_frame(BACKFILL), one_node(8), EASY, debug=True)
    # B would delay A (5 GPUs left at S=100 with B held) so it waits; C ends at 42 <= 100 and runs.
    # At t=100 A starts; B is the new head with S=150.
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (100.0, 150.0), 3: (150.0, 350.0), 4: (12.0, 42.0)}
    # B's placements tried at 11 and 12 and undone do not count: one attempt, numbered 0.
    assert column(result.jobs, "attempts")[3] == 1
    assert [a["attempt"] for a in attempts_of(result, 3)] == [0]


def test_easy_backfill_depth_limits_the_jobs_tried_behind_the_head() -> None:
    policy = replace(EASY, backfill_depth=1)
    result = simulate(jobs_frame(BACKFILL), one_node(8), policy, debug=True)
    # At 12 only B (the first behind A) is tried. At 100 A starts, B is head (S=150), and
    # C (2 GPUs free, ends 130 <= 150) is backfilled.
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (100.0, 150.0), 3: (150.0, 350.0), 4: (100.0, 130.0)}


def test_easy_backfills_a_long_job_that_leaves_room_for_the_head() -> None:
    rows = [
        job(1, 0.0, 100.0, 1, 5000),
        job(2, 10.0, 50.0, 4, 1000),  # A needs 4 at S=100
        job(3, 11.0, 500.0, 3, 1000),  # B ends after S, but 8 - 3 = 5 >= 4 are free at S
    ]
    result = simulate(jobs_frame(rows), one_node(8), EASY, debug=True)
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (100.0, 150.0), 3: (11.0, 511.0)}


def test_easy_shadow_state_releases_running_jobs_only_until_the_head_fits() -> None:
    rows = [
        job(1, 0.0, 100.0, 1, 2000),  # X1 and X2 both end at 100
        job(2, 0.0, 100.0, 1, 2000),
        job(3, 0.0, 200.0, 1, 3000),
        job(4, 10.0, 50.0, 3, 1000),  # H: 1 GPU free now; fits once X1 is released -> S = 100
        job(5, 11.0, 500.0, 1, 1000),  # J: fits now, ends after S
    ]
    # The projected state at S has released X1 only (H fits there), not X2, which ends at the
    # same time: 3 free, minus J's GPU = 2 < 3, so J would delay H and is not backfilled.
    result = simulate(jobs_frame(rows), one_node(8), EASY, debug=True)
    assert spans(result.jobs)[4] == (100.0, 150.0)
    assert spans(result.jobs)[5] == (100.0, 600.0)


# --------------------------------------------------------------------------------------------------
# Queue order
# --------------------------------------------------------------------------------------------------

ORDERING = [
    job(1, 0.0, 10.0, 1, 1000),
    job(2, 1.0, 30.0, 1, 1000, priority=0),
    job(3, 1.0, 10.0, 1, 1000, priority=1),
    job(4, 1.0, 20.0, 1, 1000, priority=2),
]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        (QueueOrder.fifo, {2: (10.0, 40.0), 3: (40.0, 50.0), 4: (50.0, 70.0)}),
        (QueueOrder.sjf, {3: (10.0, 20.0), 4: (20.0, 40.0), 2: (40.0, 70.0)}),
        (QueueOrder.priority, {4: (10.0, 30.0), 3: (30.0, 40.0), 2: (40.0, 70.0)}),
    ],
)
def test_queue_order(order: QueueOrder, expected: dict[int, tuple[float, float]]) -> None:
    result = simulate(jobs_frame(ORDERING), one_node(1), replace(FIFO, queue_order=order), debug=True)
    assert spans(result.jobs) == {1: (0.0, 10.0), **expected}


def test_pod_by_pod_orders_pods_by_priority_then_submit_then_pods_placed() -> None:
    rows = [
        job(1, 0.0, 10.0, 1, 4000),  # all 4 GPUs until 10
        job(2, 1.0, 10.0, 2, 1000, priority=0),
        job(3, 2.0, 10.0, 2, 1000, priority=1),
        job(4, 2.0, 10.0, 2, 1000, priority=1),
        job(5, 2.0, 100.0, 1, 1000, priority=1),
    ]
    result = simulate(jobs_frame(rows), one_node(4), KUBE, debug=True)
    # t=10, pod queue 3:0 4:0 5:0 3:1 4:1 2:0 2:1 with 4 GPUs free: jobs 3 and 5 start, 4 holds one.
    # t=20 (job 3 ends, 2 free): 4:1 -> job 4 starts; 2:0 placed, 2:1 not. t=30: job 2 starts.
    assert spans(result.jobs) == {
        1: (0.0, 10.0),
        2: (30.0, 40.0),
        3: (10.0, 20.0),
        4: (20.0, 30.0),
        5: (10.0, 110.0),
    }


# --------------------------------------------------------------------------------------------------
# Rejection
# --------------------------------------------------------------------------------------------------


def test_rejection_reasons_in_order() -> None:
    nodes = nodes_frame(
        [
            {"gpu_model": "V100", "num_gpus": 4, "cpu_milli": 16000},
            {"gpu_model": "T4", "num_gpus": 2, "cpu_milli": 16000},
            {"gpu_model": None, "num_gpus": 0, "cpu_milli": 64000},
        ]
    )
    rows = [
        job(1, 0.0, 5.0, 1, 1000, gpu_models=["A100-80GB"]),
        job(2, 0.0, 5.0, 1, 8000),  # no node has 8 GPUs
        job(3, 0.0, 5.0, 3, 4000),  # one 4-GPU pod fits (the V100 node), three do not
        job(4, 0.0, 5.0, 1, 1000, gpu_mem_mib=20000),  # per-GPU memory 16384 everywhere
        job(5, 0.0, 5.0, 1, 0, cpu_milli=100_000),
        job(6, 0.0, 5.0, 3, 1000, gpu_models=["T4"]),  # 2 T4s
        job(7, 0.0, 5.0, 1, 0, gpu_models=["A100-80GB"], cpu_milli=32000),  # model ignored, runs on node 2
        job(8, 0.0, 5.0, 4, 500, gpu_models=["T4"]),  # 2 per T4: fits
        job(9, 0.0, 5.0, 3, 600, gpu_models=["T4"]),  # 1 per T4
        job(10, 0.0, 5.0, 3, 250, gpu_mem_mib=10000, gpu_models=["T4"]),  # memory: 1 per T4
        job(11, 0.0, 5.0, 6, 0, cpu_milli=16000),  # 1 + 1 + 4 = 6 fit
        job(12, 0.0, 5.0, 7, 0, cpu_milli=16000),
        job(13, 0.0, 5.0, 1, 250, gpu_models=[]),  # an empty allow-list allows nothing
        job(14, 0.0, 5.0, 1, 1000, gpu_models=["T4", "H100-80GB"]),
    ]
    result = simulate(jobs_frame(rows), nodes, FIFO, debug=True)
    assert column(result.jobs, "reject_reason") == {
        1: "no_model",
        2: "pod_too_large",
        3: "gang_too_large",
        4: "pod_too_large",
        5: "pod_too_large",
        6: "gang_too_large",
        7: None,
        8: None,
        9: "gang_too_large",
        10: "gang_too_large",
        11: None,
        12: "gang_too_large",
        13: "no_model",
        14: None,
    }
    rejected = result.jobs.filter(pl.col("reject_reason").is_not_null())
    assert set(rejected["state"]) == {"rejected"}
    assert rejected["start_time"].null_count() == rejected.height
    assert rejected["finish_time"].null_count() == rejected.height
    assert rejected["pending_time"].null_count() == rejected.height  # never queued
    assert rejected["attempts"].to_list() == [0] * rejected.height
    assert set(result.jobs.filter(pl.col("reject_reason").is_null())["state"]) == {"finished"}


def test_gpu_job_on_a_cluster_without_gpus_has_no_model() -> None:
    nodes = nodes_frame([{"gpu_model": None, "num_gpus": 0}])
    result = simulate(jobs_frame([job(1, 0.0, 1.0, 1, 500), job(2, 0.0, 1.0, 3, 0)]), nodes, FIFO)
    assert result.jobs["reject_reason"].to_list() == ["no_model", None]
    assert spans(result.jobs)[2] == (0.0, 1.0)


def test_rejected_job_is_never_queued() -> None:
    rows = [job(1, 0.0, 10.0, 1, 1000), job(2, 5.0, 1.0, 1, 2000), job(3, 6.0, 1.0, 1, 1000)]
    result = simulate(jobs_frame(rows), one_node(1), FIFO, sample_interval=5.0, debug=True)
    # Job 2 (2 GPUs on a 1-GPU node) never blocks job 3 under head-of-line blocking.
    assert result.jobs["state"].to_list() == ["finished", "rejected", "finished"]
    assert spans(result.jobs)[3] == (10.0, 11.0)
    assert result.timeline.filter(pl.col("time") == 5.0)["pending_jobs"].to_list() == [0]


# --------------------------------------------------------------------------------------------------
# Placement
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu_placement", "gpus_used", "second_start"),
    [
        ("first_fit", 1, 0.0),  # 300+300+300 on GPU 0
        ("best_fit", 1, 0.0),  # always the GPU left with least
        ("worst_fit", 2, 10.0),  # spread: 0, 1, then 0 (tie) -> no whole GPU left
    ],
)
def test_fractional_gpu_placement(gpu_placement: str, gpus_used: int, second_start: float) -> None:
    rows = [job(1, 0.0, 10.0, 3, 300), job(2, 0.0, 10.0, 1, 1000)]
    policy = replace(SKIP, gpu_placement=gpu_placement)
    result = simulate(jobs_frame(rows), one_node(2), policy, sample_interval=100.0, debug=True)
    first_sample = result.timeline.row(0, named=True)
    assert first_sample["allocated_gpus"] == gpus_used + (1 if second_start == 0.0 else 0)
    assert first_sample["allocated_milli"] == 900 + (1000 if second_start == 0.0 else 0)
    assert spans(result.jobs)[2] == (second_start, second_start + 10.0)


def test_fractional_pod_needs_gpu_memory_on_the_same_gpu() -> None:
    # 16384 MiB per V100: after one 10000-MiB pod, GPU 0 has 750 milli but only 6384 MiB left.
    rows = [job(1, 0.0, 10.0, 2, 250, gpu_mem_mib=10000)]
    result = simulate(jobs_frame(rows), one_node(2), FIFO, sample_interval=100.0, debug=True)
    assert result.timeline.row(0) == (0.0, 2, 500, 0, 1, 0, 0, 0, 0.0, 0)


def test_whole_gpu_pod_takes_memory_per_gpu() -> None:
    # gpu_mem_mib is per GPU: 2 GPUs x 16384 MiB do not satisfy a 20000 MiB request.
    rows = [job(1, 0.0, 10.0, 1, 2000, gpu_mem_mib=20000), job(2, 0.0, 10.0, 1, 2000, gpu_mem_mib=16384)]
    result = simulate(jobs_frame(rows), one_node(2), FIFO, debug=True)
    assert result.jobs["reject_reason"].to_list() == ["pod_too_large", None]


@pytest.mark.parametrize(("node_placement", "wide_start"), [("best_fit", 0.0), ("worst_fit", 10.0)])
def test_node_placement_binpack_vs_spread(node_placement: str, wide_start: float) -> None:
    rows = [job(1, 0.0, 10.0, 1, 1000), job(2, 0.0, 10.0, 1, 1000), job(3, 0.0, 10.0, 1, 4000)]
    # binpack puts jobs 1 and 2 on node 0 and keeps node 1 whole; spread puts one on each.
    policy = replace(SKIP, node_placement=node_placement)
    result = simulate(jobs_frame(rows), v100s(2), policy, debug=True)
    assert spans(result.jobs)[3] == (wide_start, wide_start + 10.0)


def test_gang_may_put_several_pods_on_one_node_and_counts_nodes_spanned() -> None:
    rows = [job(1, 0.0, 10.0, 3, 2000)]  # 2 pods on node 0, 1 on node 1 (first fit)
    result = simulate(jobs_frame(rows), v100s(2), FIFO, debug=True)
    assert result.jobs["nodes_spanned"].to_list() == [2]
    assert result.attempts["nodes"].to_list() == [2]


def test_random_node_choice_is_the_keyed_draw_modulo_candidates() -> None:
    nodes = nodes_frame(
        [
            {"gpu_model": "V100", "num_gpus": 1},
            {"gpu_model": "T4", "num_gpus": 1},
            {"gpu_model": "A10", "num_gpus": 1},
        ]
    )
    models = ["V100", "T4", "A10"]
    rows = [job(1, 0.0, 10.0, 1, 1000)] + [
        job(10 + i, 0.0, 1.0, 1, 1000, gpu_models=[m]) for i, m in enumerate(models)
    ]
    policy = replace(SKIP, node_placement="random")
    for seed in range(4):
        # Job 1 (pod 0, attempt 0) draws among the 3 nodes; the job pinned to that node's model waits.
        chosen = draw(seed, 1, 0, 0, 0) % 3
        result = simulate(jobs_frame(rows), nodes, policy, seed=seed, debug=True)
        starts = column(result.jobs, "start_time")
        assert [starts[10 + i] for i in range(3)] == [10.0 if i == chosen else 0.0 for i in range(3)]


def test_random_gpu_choice_is_the_keyed_draw_modulo_fitting_gpus() -> None:
    # Two 500-milli pods of one job on a 3-GPU node: pod 0 draws among 3 GPUs, pod 1 among those
    # with >= 500 free: 3 again (the first pod left 500 on its GPU).
    policy = replace(FIFO, gpu_placement="random")
    for seed in range(6):
        result = simulate(jobs_frame([job(5, 0.0, 1.0, 2, 500)]), one_node(3), policy, seed=seed)
        first = draw(seed, 5, 0, 0, 1) % 3
        second = draw(seed, 5, 1, 0, 1) % 3
        # Same GPU: 1 GPU allocated (1000 milli); different GPUs: 2 GPUs at 500 each.
        assert result.timeline.row(0)[1] == (1 if first == second else 2)


# --------------------------------------------------------------------------------------------------
# Time, samples, accounting
# --------------------------------------------------------------------------------------------------

TIMELINE_JOBS = [job(1, 0.0, 25.0, 1, 1000), job(2, 5.0, 10.0, 1, 2000)]


def test_timeline_event_driven() -> None:
    result = simulate(jobs_frame(TIMELINE_JOBS), one_node(2), FIFO, sample_interval=10.0, debug=True)
    assert spans(result.jobs) == {1: (0.0, 25.0), 2: (25.0, 35.0)}
    # At 10 and 20 job 2 (2 GPUs) is pending; the node cannot fit it, so its one whole free GPU
    # counts as fragmented.
    assert result.timeline.rows() == [
        (0.0, 1, 1000, 0, 1, 0, 0, 0, 0.0, 0),
        (10.0, 1, 1000, 1, 1, 1, 0, 0, 0.0, 0),
        (20.0, 1, 1000, 1, 1, 1, 0, 0, 0.0, 0),
        (30.0, 2, 2000, 0, 1, 0, 0, 0, 0.0, 0),
    ]
    assert result.gpu_milli_seconds == 25 * 1000 + 10 * 2000
    # No window declared, no window integral; the default window (first to last submit, 0..5)
    # holds job 1 alone: 5 * 1000.
    assert result.window_gpu_milli_seconds is None
    windowed = simulate(jobs_frame(TIMELINE_JOBS), one_node(2), FIFO, sample_interval=10.0, window=(0.0, 5.0))
    assert windowed.window_gpu_milli_seconds == 5 * 1000
    assert dict(result.timeline.schema) == TIMELINE_SCHEMA


def test_measurement_window_integral() -> None:
    result = simulate(
        jobs_frame(TIMELINE_JOBS), one_node(2), FIFO, sample_interval=10.0, window=(20.0, 30.0), debug=True
    )
    # 20..25 job 1 (1000), 25..30 job 2 (2000).
    assert result.window_gpu_milli_seconds == 5 * 1000 + 5 * 2000


def test_max_samples_widens_the_grid() -> None:
    result = simulate(
        jobs_frame([job(1, 0.0, 10.0, 1, 1000)]), one_node(1), FIFO, sample_interval=1.0, max_samples=3
    )
    # Rows 0, 1, 2; at t=3 a 4th row would exceed 3: keep k = 0, 2 (t = 0, 2), interval 2, next at 4.
    # Rows 0, 2, 4; at t=6 (k=3): keep 0, 4, interval 4, next k=2 (t=8). Rows 0, 4, 8; t=12 > end 10.
    assert result.timeline["time"].to_list() == [0.0, 4.0, 8.0]
    assert result.sample_interval == 4.0


def test_timeline_periodic_cycles() -> None:
    policy = replace(FIFO, session_interval=4.0)
    result = simulate(jobs_frame(TIMELINE_JOBS), one_node(2), policy, sample_interval=10.0, debug=True)
    # Job 2 arrives at 5 and job 1 ends at 25, but cycles run only at multiples of 4.
    assert spans(result.jobs) == {1: (0.0, 25.0), 2: (28.0, 38.0)}
    # The last change is at 38; the run goes on to the cycle at 40 (and its sample).
    assert result.timeline["time"].to_list() == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert result.timeline.row(4) == (40.0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0)
    assert result.stats["end_time"] == 40.0
    assert result.gpu_milli_seconds == 25 * 1000 + 10 * 2000
    assert column(result.jobs, "pending_time") == {1: 0.0, 2: 23.0}


def test_periodic_cycle_waits_for_the_first_tick_after_arrival() -> None:
    policy = replace(FIFO, session_interval=3.0)
    result = simulate(jobs_frame([job(1, 4.0, 1.0, 1, 1000)]), one_node(1), policy, debug=True)
    assert spans(result.jobs) == {1: (6.0, 7.0)}
    assert result.stats["end_time"] == 9.0  # the cycle after the completion at 7


def test_zero_duration_job_finishes_in_a_second_pass_at_the_same_time() -> None:
    rows = [job(1, 0.0, 0.0, 1, 1000), job(2, 0.0, 5.0, 1, 1000)]
    result = simulate(jobs_frame(rows), one_node(1), FIFO, sample_interval=10.0, debug=True)
    assert spans(result.jobs) == {1: (0.0, 0.0), 2: (0.0, 5.0)}
    # The sample is taken in the first pass, while job 1 still holds the GPU and job 2 waits.
    assert result.timeline.rows() == [(0.0, 1, 1000, 1, 1, 0, 0, 0, 0.0, 0)]
    assert result.gpu_milli_seconds == 5 * 1000


def test_run_ends_when_nothing_runs_and_nothing_will_arrive() -> None:
    rows = [job(1, 100.0, 10.0, 1, 1000)]
    result = simulate(jobs_frame(rows), one_node(1), FIFO, sample_interval=40.0, debug=True)
    # Samples at 0, 40, 80 before the arrival, 0 after (next would be 120 > 110).
    assert result.timeline["time"].to_list() == [0.0, 40.0, 80.0]
    assert result.stats["end_time"] == 110.0


def test_horizon_cuts_the_run() -> None:
    rows = [job(1, 0.0, 100.0, 1, 1000), job(2, 60.0, 10.0, 1, 1000), job(3, 5.0, 1.0, 1, 0)]
    result = simulate(jobs_frame(rows), one_node(1), FIFO, sample_interval=20.0, horizon=50.0, debug=True)
    rows_out = by_id(result.jobs)
    assert (rows_out[1]["state"], rows_out[1]["start_time"], rows_out[1]["finish_time"]) == (
        "unfinished",
        0.0,
        None,
    )
    assert (rows_out[2]["state"], rows_out[2]["start_time"], rows_out[2]["pending_time"]) == (
        "unfinished",
        None,
        0.0,  # never arrived
    )
    assert spans(result.jobs)[3] == (5.0, 6.0)
    assert result.timeline["time"].to_list() == [0.0, 20.0, 40.0]
    # The run ends at the horizon (50), not at its last sample (40): job 1 held its GPU all along.
    assert result.gpu_milli_seconds == 50 * 1000


def test_input_order_is_kept_and_completions_are_by_job_id() -> None:
    rows = [job(9, 0.0, 5.0, 1, 1000), job(3, 0.0, 5.0, 1, 1000), job(5, 1.0, 1.0, 1, 1000)]
    result = simulate(jobs_frame(rows), one_node(2), FIFO, debug=True)
    assert result.jobs["job_id"].to_list() == [9, 3, 5]
    # FIFO ties by job id: job 3 before job 9; job 5 waits for both to end at 5.
    assert spans(result.jobs) == {9: (0.0, 5.0), 3: (0.0, 5.0), 5: (5.0, 6.0)}
    assert dict(result.jobs.schema) == JOB_RESULT_SCHEMA
    assert dict(result.attempts.schema) == ATTEMPT_SCHEMA
    # Attempts are listed in input order of their jobs.
    assert result.attempts["job_id"].to_list() == [9, 3, 5]


def test_cpu_and_memory_limit_placement_and_unknown_capacity_does_not() -> None:
    nodes = nodes_frame(
        [
            {"gpu_model": "V100", "num_gpus": 4, "cpu_milli": 8000, "mem_mib": 32768},
            {"gpu_model": "V100", "num_gpus": 4},  # unknown CPU and memory
        ]
    )
    rows = [job(1, 0.0, 10.0, 2, 1000, cpu_milli=6000), job(2, 0.0, 10.0, 3, 0, mem_mib=20000)]
    result = simulate(jobs_frame(rows), nodes, FIFO, debug=True)
    # Job 1: the second 6000-milli pod does not fit node 0 (2000 left) -> node 1.
    # Job 2: one 20000-MiB pod on node 0, the other two on node 1.
    assert result.jobs["nodes_spanned"].to_list() == [2, 2]
    assert spans(result.jobs) == {1: (0.0, 10.0), 2: (0.0, 10.0)}


def test_pod_by_pod_mode_refuses_a_queue_order_or_backfill_it_would_not_follow() -> None:
    """Pods go in PrioritySort order and never block each other: another order or backfill is an error."""
    jobs = jobs_frame(BACKFILL)
    for bad in (
        replace(KUBE, queue_order=QueueOrder.sjf),
        replace(KUBE, backfill=Backfill.none),
        replace(KUBE, backfill=Backfill.easy),
        replace(KUBE, backfill_depth=1),
    ):
        with pytest.raises(ValueError, match="pod_by_pod"):
            simulate(jobs, one_node(8), bad)


def test_bad_policies_are_refused() -> None:
    jobs = jobs_frame([job(1, 0.0, 1.0, 1, 1000)])
    with pytest.raises(KeyError, match="unknown scorer"):
        simulate(jobs, one_node(1), replace(FIFO, node_placement="tightest"))
    # The FGD paper's baselines rank nodes only, as in the engine.
    with pytest.raises(KeyError, match="unknown scorer 'dot_product' for gpu_placement"):
        simulate(jobs, one_node(1), replace(FIFO, gpu_placement="dot_product"))
    with pytest.raises(ValueError, match="EASY"):
        simulate(jobs, one_node(1), preemptive(EASY))


# --------------------------------------------------------------------------------------------------
# Priority preemption, checkpoints, attempts
# --------------------------------------------------------------------------------------------------


def test_three_job_example_of_the_issue() -> None:
    # 1 node of 8 A100s; (id, submit, duration, 8 GPUs, priority): A (1, 0, 3600, 0), B (2, 1000, 1000,
    # 100), C (3, 1500, 500, 0); checkpoint every 600 s; gang-binpack with preemption, grace 30 s,
    # Lucid's 40 s restart overhead (8 GPUs).
    rows = [
        job(1, 0.0, 3600.0, 1, 8000, priority=0, checkpoint_interval=600.0),
        job(2, 1000.0, 1000.0, 1, 8000, priority=100, checkpoint_interval=600.0),
        job(3, 1500.0, 500.0, 1, 8000, priority=0, checkpoint_interval=600.0),
    ]
    policy = preemptive(PRESETS["gang-binpack"], graceful_termination=30.0)
    result = simulate(jobs_frame(rows), one_node(8, "A100-80GB"), policy, sample_interval=1000.0, debug=True)
    # A runs 0..1000 and is evicted at 1000 (progress 1000: 600 checkpointed, 400 lost); it holds
    # the GPUs until 1030; B runs 1030..2030; A (requeued at 1030, ahead of C submitted at 1500)
    # restarts at 2030: 40 s overhead + 3000 s left -> 5070; C runs 5070..5570.
    assert spans(result.jobs) == {1: (0.0, 5070.0), 2: (1030.0, 2030.0), 3: (5070.0, 5570.0)}
    assert column(result.jobs, "preemptions") == {1: 1, 2: 0, 3: 0}
    assert column(result.jobs, "attempts") == {1: 2, 2: 1, 3: 1}
    # Pending: A 1030..2030, B 1000..1030, C 1500..5070.
    assert column(result.jobs, "pending_time") == {1: 1000.0, 2: 30.0, 3: 3570.0}
    # Lost: 8 GPUs x (400 lost + 30 grace + 40 restart overhead).
    assert column(result.jobs, "lost_gpu_seconds") == {1: 3760.0, 2: 0.0, 3: 0.0}
    [first, second] = attempts_of(result, 1)
    assert (first["start"], first["evicted"], first["end"], first["end_reason"]) == (
        0.0,
        1000.0,
        1030.0,
        "preempted",
    )
    assert (first["progress"], first["work_lost"], first["gpu_seconds"]) == (1000.0, 400.0, 8 * 1030.0)
    assert (second["attempt"], second["start"], second["end"], second["end_reason"]) == (
        1,
        2030.0,
        5070.0,
        "finished",
    )
    assert (second["progress"], second["restart_overhead"], second["gpu_seconds"]) == (
        3000.0,
        40.0,
        8 * 3040.0,
    )
    # At 1000 (after the eviction): B pending, A terminating, 8 x 400 charged; at 2000, the grace too.
    assert result.timeline.filter(pl.col("time") == 1000.0).row(0) == (
        1000.0,
        8,
        8000,
        1,
        0,
        0,
        1,
        1,
        3200.0,
        0,
    )
    assert result.timeline.filter(pl.col("time") == 2000.0).row(0) == (
        2000.0,
        8,
        8000,
        2,
        1,
        0,
        1,
        0,
        3440.0,
        0,
    )
    # Every second of the run (0..5570) has 8 GPUs held.
    assert result.gpu_milli_seconds == 8000 * 5570


def checkpoint_case(interval: float, **extra: Any) -> pl.DataFrame:
    """A (4 GPUs, 20 s, priority 0) from 0; H (4 GPUs, 5 s, priority 9) at 7; restart overhead 1 s."""
    return jobs_frame(
        [
            job(1, 0.0, 20.0, 1, 4000, checkpoint_interval=interval, restart_overhead=1.0, **extra),
            job(2, 7.0, 5.0, 1, 4000, priority=9, checkpoint_interval=interval, restart_overhead=1.0),
        ]
    )


@pytest.mark.parametrize(
    ("interval", "saved", "finish"),
    [
        (0.0, 7.0, 28.0),  # checkpoint at eviction: all 7 s kept, 13 left
        (3.0, 6.0, 29.0),  # checkpoints at 3 and 6: 1 s lost, 14 left
        (float("inf"), 0.0, 35.0),  # never: 7 s lost, 20 left
    ],
)
def test_checkpoint_interval_decides_the_work_kept(interval: float, saved: float, finish: float) -> None:
    # H evicts A at 7 (progress 7); A holds until 9 (grace 2); H runs 9..14; A restarts at 14:
    # 1 s overhead + (20 - saved) -> finish.
    result = simulate(checkpoint_case(interval), one_node(4), GANG_PREEMPT, debug=True)
    assert spans(result.jobs) == {1: (0.0, finish), 2: (9.0, 14.0)}
    lost_work = 7.0 - saved
    [first, second] = attempts_of(result, 1)
    assert (first["progress"], first["work_lost"], first["end"]) == (7.0, lost_work, 9.0)
    assert (second["progress"], second["restart_overhead"]) == (20.0 - saved, 1.0)
    # 4 GPUs x (lost work + grace 2 + restart overhead 1).
    assert column(result.jobs, "lost_gpu_seconds")[1] == 4 * (lost_work + 2.0 + 1.0)
    assert column(result.jobs, "pending_time") == {1: 5.0, 2: 2.0}
    assert result.gpu_milli_seconds == 4000 * finish


def test_grace_period_zero_releases_and_places_in_a_further_pass() -> None:
    policy = replace(GANG_PREEMPT, graceful_termination=0.0)
    result = simulate(checkpoint_case(0.0), one_node(4), policy, sample_interval=7.0, debug=True)
    # Evicted and released at 7 (the timer fires in the next pass at 7), H runs 7..12, A restarts
    # at 12: 12 + 1 + 13 = 26.
    assert spans(result.jobs) == {1: (0.0, 26.0), 2: (7.0, 12.0)}
    assert column(result.jobs, "pending_time") == {1: 5.0, 2: 0.0}
    assert column(result.jobs, "lost_gpu_seconds")[1] == 4 * 1.0  # the restart overhead only
    # The sample at 7 is taken in the first pass: A terminating (holding 4 GPUs), H pending.
    assert result.timeline.rows()[:2] == [
        (0.0, 4, 4000, 0, 1, 0, 0, 0, 0.0, 0),
        (7.0, 4, 4000, 1, 0, 0, 1, 1, 0.0, 0),
    ]


def test_preemption_policy_never_does_not_evict() -> None:
    rows = checkpoint_case(0.0).with_columns(preemption_policy=pl.Series(["PreemptLowerPriority", "Never"]))
    result = simulate(rows, one_node(4), GANG_PREEMPT, debug=True)
    # H waits for A to finish at 20.
    assert spans(result.jobs) == {1: (0.0, 20.0), 2: (20.0, 25.0)}
    assert result.jobs["preemptions"].to_list() == [0, 0]


def test_non_preemptible_jobs_are_not_victims() -> None:
    result = simulate(checkpoint_case(0.0, preemptible=False), one_node(4), GANG_PREEMPT, debug=True)
    assert spans(result.jobs) == {1: (0.0, 20.0), 2: (20.0, 25.0)}
    assert result.stats["preemptions"] == 0.0


def test_horizon_while_terminating_and_while_restarting() -> None:
    # Cut at 8 (a sample time): A evicted at 7 still holds its GPUs; 1 s of grace charged.
    cut = simulate(
        checkpoint_case(0.0), one_node(4), GANG_PREEMPT, sample_interval=4.0, horizon=8.0, debug=True
    )
    rows = by_id(cut.jobs)
    assert (rows[1]["state"], rows[1]["nodes_spanned"], rows[1]["lost_gpu_seconds"]) == ("unfinished", 1, 4.0)
    assert (rows[2]["state"], rows[2]["pending_time"]) == ("unfinished", 1.0)
    [first] = attempts_of(cut, 1)
    assert (first["end_reason"], first["end"], first["gpu_seconds"]) == ("preempted", 8.0, 32.0)
    assert cut.gpu_milli_seconds == 4000 * 8
    # Cut at 14.5: A restarted at 14 and has spent 0.5 s of its 1 s overhead.
    cut = simulate(
        checkpoint_case(0.0), one_node(4), GANG_PREEMPT, sample_interval=0.5, horizon=14.5, debug=True
    )
    assert column(cut.jobs, "lost_gpu_seconds")[1] == 4 * 2.0 + 4 * 0.5
    [_, second] = attempts_of(cut, 1)
    assert (second["end_reason"], second["end"], second["progress"], second["restart_overhead"]) == (
        "unfinished",
        14.5,
        0.0,
        0.5,
    )
    assert second["gpu_seconds"] == 4 * 0.5


@pytest.mark.parametrize(
    ("requeue", "finish_a", "span_b"),
    [(Requeue.back, 23.0, (9.0, 14.0)), (Requeue.original, 18.0, (18.0, 23.0))],
)
def test_requeue_back_or_original(requeue: Requeue, finish_a: float, span_b: tuple[float, float]) -> None:
    rows = [
        job(1, 0.0, 10.0, 1, 4000, restart_overhead=1.0),  # A, priority 0
        job(2, 1.0, 5.0, 1, 4000),  # B, priority 0, waits behind A
        job(3, 2.0, 5.0, 1, 4000, priority=9),  # H evicts A at 2 (2 s kept, 8 left)
    ]
    result = simulate(jobs_frame(rows), one_node(4), replace(GANG_PREEMPT, requeue=requeue), debug=True)
    # A re-enters at 4; H runs 4..9. back: A's queue time is 4, after B's 1 -> B 9..14, A restarts at
    # 14 -> 14 + 1 + 8 = 23. original: A keeps 0 -> A restarts at 9 -> 18, then B 18..23.
    assert spans(result.jobs) == {1: (0.0, finish_a), 2: span_b, 3: (4.0, 9.0)}


def test_victim_node_has_the_lowest_highest_victim_priority() -> None:
    rows = [
        job(1, 0.0, 100.0, 1, 4000, priority=2),  # node 0 (queued first, best fit ties -> lowest)
        job(2, 0.0, 100.0, 1, 4000, priority=1, restart_overhead=1.0),  # node 1
        job(3, 5.0, 10.0, 1, 4000, priority=5),
    ]
    result = simulate(jobs_frame(rows), v100s(2), GANG_PREEMPT, debug=True)
    # Node 1's victim has priority 1 < 2: job 2 is evicted at 5 (progress 5 kept, 95 left) and holds
    # until 7; job 3 runs 7..17; job 2 restarts at 17: 17 + 1 + 95 = 113.
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (0.0, 113.0), 3: (7.0, 17.0)}
    assert column(result.jobs, "pending_time") == {1: 0.0, 2: 10.0, 3: 2.0}
    # 4 GPUs x (grace 2 + overhead 1).
    assert column(result.jobs, "lost_gpu_seconds") == {1: 0.0, 2: 12.0, 3: 0.0}


def test_victim_node_has_the_smallest_priority_sum() -> None:
    rows = [
        job(1, 0.0, 100.0, 1, 2000, priority=1),  # node 0
        job(2, 0.0, 100.0, 1, 2000, priority=1),  # node 0 (best fit)
        job(3, 0.0, 100.0, 1, 2000, priority=1),  # node 1
        job(4, 0.0, 100.0, 1, 2000, priority=0),  # node 1
        job(5, 5.0, 10.0, 1, 4000, priority=5),
    ]
    result = simulate(jobs_frame(rows), v100s(2), GANG_PREEMPT, debug=True)
    # Both nodes must be emptied (no reprieve leaves 4 GPUs); top priority 1 on both; sums
    # 2 + 2 * 2^31 vs 1 + 2 * 2^31: node 1, so jobs 3 and 4 are evicted.
    assert column(result.jobs, "preemptions") == {1: 0, 2: 0, 3: 1, 4: 1, 5: 0}
    assert spans(result.jobs)[5] == (7.0, 17.0)


def test_victim_node_whose_victims_started_latest() -> None:
    rows = [
        job(1, 0.0, 100.0, 1, 4000),  # node 0, started 0
        job(2, 1.0, 100.0, 1, 4000),  # node 1, started 1
        job(3, 5.0, 10.0, 1, 4000, priority=5),
    ]
    result = simulate(jobs_frame(rows), v100s(2), GANG_PREEMPT, debug=True)
    # Same priorities, sums and counts: the node whose highest-priority victims started latest.
    assert column(result.jobs, "preemptions") == {1: 0, 2: 1, 3: 0}


@pytest.mark.parametrize("seed", range(6))
def test_equal_nodes_go_to_the_first_found_from_the_random_offset(seed: int) -> None:
    rows = [job(i, 0.0, 100.0, 1, 4000) for i in (1, 2, 3)]  # job i on node i - 1
    rows.append(job(4, 5.0, 10.0, 1, 4000, priority=5))
    result = simulate(jobs_frame(rows), v100s(3), GANG_PREEMPT, seed=seed, debug=True)
    offset = draw(seed, 4, 0, 0, 2) % 3  # job 4, pod 0, attempt 0, the preemption offset
    evicted = [j for j, n in column(result.jobs, "preemptions").items() if n]
    assert evicted == [offset + 1]


def test_the_offsets_of_those_seeds_differ() -> None:
    # The previous test is not vacuous: its seeds draw more than one offset.
    assert len({draw(seed, 4, 0, 0, 2) % 3 for seed in range(6)}) > 1


@pytest.mark.parametrize(("candidates", "expect_offset_node"), [(1, True), (100, False)])
def test_candidate_node_limit(candidates: int, expect_offset_node: bool) -> None:
    seed = 3
    offset = draw(seed, 4, 0, 0, 2) % 3
    # The job on the offset's node has priority 1, the others 0 (none of them preempts in turn).
    rows = [
        job(i, 0.0, 100.0, 1, 4000, priority=1 if i - 1 == offset else 0, preemption_policy="Never")
        for i in (1, 2, 3)
    ]
    rows.append(job(4, 5.0, 10.0, 1, 4000, priority=5, preemption_policy="PreemptLowerPriority"))
    policy = replace(GANG_PREEMPT, min_candidate_nodes=candidates, candidate_nodes_percent=0)
    result = simulate(jobs_frame(rows), v100s(3), policy, seed=seed, debug=True)
    evicted = [j for j, n in column(result.jobs, "preemptions").items() if n]
    # One candidate: the first feasible node from the offset, whatever its victim's priority. All
    # of them: a node with a priority-0 victim, the first found after the offset (equal otherwise).
    assert evicted == [offset + 1 if expect_offset_node else (offset + 1) % 3 + 1]


def test_reprieve_gives_back_the_most_important_victims_first() -> None:
    rows = [
        job(1, 0.0, 100.0, 1, 2000, priority=2),  # A: GPUs 0-1
        job(2, 1.0, 100.0, 1, 2000, priority=1),  # B: GPUs 2-3
        job(3, 2.0, 100.0, 1, 4000, priority=1, restart_overhead=1.0),  # C: GPUs 4-7
        job(4, 5.0, 10.0, 1, 4000, priority=5),  # H needs 4
    ]
    result = simulate(jobs_frame(rows), one_node(8), GANG_PREEMPT, debug=True)
    # All three removed (8 free); give back A (6 free, fits), B (started before C; 4 free, fits),
    # C (0 free): C is the only victim. H runs 7..17; C restarts at 17: 17 + 1 + (100 - 3) = 115.
    assert column(result.jobs, "preemptions") == {1: 0, 2: 0, 3: 1, 4: 0}
    assert spans(result.jobs) == {1: (0.0, 100.0), 2: (1.0, 101.0), 3: (2.0, 115.0), 4: (7.0, 17.0)}


def test_reprieve_ties_go_to_the_lower_job_id() -> None:
    rows = [
        job(1, 0.0, 50.0, 1, 4000, checkpoint_interval=4.0, restart_overhead=1.0),
        job(2, 0.0, 50.0, 1, 4000, checkpoint_interval=4.0, restart_overhead=1.0),
        job(3, 5.0, 10.0, 1, 4000, priority=10),
    ]
    result = simulate(jobs_frame(rows), one_node(8), GANG_PREEMPT, debug=True)
    # Equal priority and start: job 1 is given back first (fits with 4 free), job 2 is the victim:
    # progress 5, checkpoint at 4 -> 46 left; H 7..17; job 2 restarts at 17: 17 + 1 + 46 = 64.
    assert spans(result.jobs) == {1: (0.0, 50.0), 2: (0.0, 64.0), 3: (7.0, 17.0)}


def test_gang_preemption_is_all_or_nothing_pod_by_pod_evicts_for_the_pods_that_find_room() -> None:
    nodes = nodes_frame([{"gpu_model": "T4", "num_gpus": 2}] * 2)
    rows = [
        job(1, 0.0, 20.0, 1, 2000, restart_overhead=1.0),  # V (priority 0): node 1
        job(2, 0.0, 20.0, 1, 2000, priority=9),  # queued first: node 0, not a victim for H
        job(3, 1.0, 5.0, 2, 2000, priority=5),  # H: needs both nodes
    ]
    gang = simulate(jobs_frame(rows), nodes, GANG_PREEMPT, debug=True)
    # Gang: pod 0 finds room on node 1 by evicting V, pod 1 finds none: nothing is evicted; H waits.
    assert spans(gang.jobs) == {1: (0.0, 20.0), 2: (0.0, 20.0), 3: (20.0, 25.0)}
    assert gang.stats["preemptions"] == 0.0
    pods = simulate(jobs_frame(rows), nodes, KUBE_PREEMPT, debug=True)
    # Pod by pod: V is evicted for pod 0 at 1 (1 s kept, 19 left), releases at 3; H's pod 0 takes
    # node 1 at 3, pod 1 node 0 at 20 -> H runs 20..25; V restarts at 25: 25 + 1 + 19 = 45.
    assert spans(pods.jobs) == {1: (0.0, 45.0), 2: (0.0, 20.0), 3: (20.0, 25.0)}
    [h] = attempts_of(pods, 3)
    assert (h["hold_start"], h["start"], h["nodes"], h["gpu_seconds"]) == (3.0, 20.0, 2, 2 * 22.0 + 2 * 5.0)
    assert column(pods.jobs, "pending_time") == {1: 22.0, 2: 0.0, 3: 19.0}
    assert column(pods.jobs, "lost_gpu_seconds")[1] == 2 * 2.0 + 2 * 1.0


def test_partly_placed_pod_by_pod_job_is_a_victim() -> None:
    rows = [
        job(1, 0.0, 20.0, 1, 1000),  # X: GPU 0 until 20
        job(2, 1.0, 10.0, 4, 1000),  # L: 3 pods placed at 1, the 4th waits (priority 0)
        job(3, 2.0, 10.0, 2, 1000, priority=9),  # H
        job(4, 2.0, 10.0, 1, 1000, priority=9, preemption_policy="Never"),
    ]
    result = simulate(jobs_frame(rows), one_node(4, "T4"), KUBE_PREEMPT, debug=True)
    # t=2: H's pod 0 fits nowhere; X and L removed -> fits; give back X (started 0, before L's hold
    # start 1): 3 free, fits; L: 0 free -> L is the victim (it never ran). Job 4 (Never) waits.
    # t=4: L released; H (4..14) and job 4 (4..14) run. t=14: L takes 3 GPUs again; t=20: its 4th.
    assert spans(result.jobs) == {1: (0.0, 20.0), 2: (20.0, 30.0), 3: (4.0, 14.0), 4: (4.0, 14.0)}
    rows_out = by_id(result.jobs)
    # L: pending 1..2 and 4..20; 3 GPUs held through the grace period; first run: no overhead.
    assert (rows_out[2]["pending_time"], rows_out[2]["lost_gpu_seconds"], rows_out[2]["attempts"]) == (
        17.0,
        6.0,
        2,
    )
    first, second = attempts_of(result, 2)
    assert (first["start"], first["evicted"], first["end"], first["pods"], first["nodes"]) == (
        None,
        2.0,
        4.0,
        3,
        0,
    )
    assert first["gpu_seconds"] == 3 * (4.0 - 1.0)
    assert (second["hold_start"], second["start"], second["pods"], second["nodes"]) == (14.0, 20.0, 4, 1)
    assert second["gpu_seconds"] == 3 * (30.0 - 14.0) + 1 * (30.0 - 20.0)


def test_a_restart_on_its_old_node_spans_it_again() -> None:
    nodes = nodes_frame([{"gpu_model": "T4", "num_gpus": 4}] * 2)
    rows = [
        job(1, 0.0, 5.0, 1, 4000, priority=9),  # A: node 0 until 5
        job(2, 0.0, 50.0, 1, 4000, restart_overhead=1.0),  # V: node 1
        job(3, 1.0, 10.0, 1, 4000, priority=5),  # H evicts V at 1 (grace 30: V holds until 31)
    ]
    result = simulate(
        jobs_frame(rows), nodes, preemptive(PRESETS["fifo"], graceful_termination=30.0), debug=True
    )
    # H starts on node 0 when A ends (5..15); V restarts on node 1 at 31: 31 + 1 + 49 = 81.
    assert spans(result.jobs) == {1: (0.0, 5.0), 2: (0.0, 81.0), 3: (5.0, 15.0)}
    assert result.attempts["nodes"].to_list() == [1, 1, 1, 1]
    assert result.jobs["nodes_spanned"].to_list() == [1, 1, 1]


def test_a_preemptor_waiting_for_its_victims_does_not_preempt_again() -> None:
    rows = [
        job(1, 0.0, 100.0, 1, 4000),  # node 0
        job(2, 0.0, 100.0, 1, 4000),  # node 1
        job(3, 5.0, 10.0, 1, 4000, priority=9),
        job(4, 6.0, 1.0, 1, 0),  # a CPU-only job: cycles at 6 and 7
    ]
    policy = replace(GANG_PREEMPT, graceful_termination=10.0)
    result = simulate(jobs_frame(rows), v100s(2), policy, seed=0, debug=True)
    # At 5 job 3 evicts one job (equal nodes: the one at the offset); at 6 and 7 it still does not
    # fit but waits for that victim (released at 15) instead of evicting the other one.
    assert sum(column(result.jobs, "preemptions").values()) == 1
    assert spans(result.jobs)[3] == (15.0, 25.0)
    evicted = draw(0, 3, 0, 0, 2) % 2 + 1
    assert column(result.jobs, "preemptions")[evicted] == 1
