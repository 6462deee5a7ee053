"""Hand-computed scenarios for the plain-Python reference simulator.

The reference is the oracle of the differential tests, so it is itself pinned
down here on cases small enough to work out on paper. Each expected number is
derived in the test's comments from the engine semantics spec.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl
import pytest
from tests.reference.simulator import SplitMix64, simulate
from tests.reference.strategies import PRESETS, jobs_frame, nodes_frame

from gpureplay.schedulers.policy import Backfill, GangMode, Placement, Policy, QueueOrder

FIFO = PRESETS["fifo"]
SKIP = replace(FIFO, name="fifo-skip", backfill=Backfill.skip)
EASY = PRESETS["easy-backfill"]
KUBE = PRESETS["kube-default"]


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


def one_node(num_gpus: int = 8, model: str = "V100", **extra: Any) -> pl.DataFrame:
    return nodes_frame([{"gpu_model": model, "num_gpus": num_gpus, **extra}])


# --------------------------------------------------------------------------------------------------
# RNG
# --------------------------------------------------------------------------------------------------


def test_splitmix64_matches_published_reference_values() -> None:
    # Vigna's splitmix64.c seeded with 0 (the values quoted with the algorithm).
    rng = SplitMix64(0)
    assert [rng(), rng(), rng()] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    assert rng.calls == 3


def test_splitmix64_wraps_modulo_2_64() -> None:
    rng = SplitMix64(2**64 - 1)
    values = [rng() for _ in range(100)]
    assert all(0 <= v < 2**64 for v in values)
    assert SplitMix64(2**64 + 5)() == SplitMix64(5)()


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
    # Nothing runs and nothing arrives after t=0: the run ends at 0 with one sample.
    assert result.timeline.rows() == [(0.0, 8, 8000, 2, 0, 0)]
    assert result.gpu_milli_seconds == 0.0


def test_gang_runs_the_same_jobs_one_after_the_other() -> None:
    result = simulate(jobs_frame(TWO_FULL_NODE_JOBS), one_node(8), FIFO, sample_interval=5.0, debug=True)
    assert spans(result.jobs) == {1: (0.0, 10.0), 2: (10.0, 20.0)}
    assert result.jobs["state"].to_list() == ["finished", "finished"]
    assert result.jobs["held_milli"].to_list() == [0, 0]
    assert result.timeline.rows() == [
        (0.0, 8, 8000, 1, 1, 0),
        (5.0, 8, 8000, 1, 1, 0),
        (10.0, 8, 8000, 0, 1, 0),
        (15.0, 8, 8000, 0, 1, 0),
        (20.0, 0, 0, 0, 0, 0),
    ]
    assert result.gpu_milli_seconds == 8000 * 20


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
    assert at_20 == [(20.0, 8, 8000, 2, 1, 0)]
    # Accounting: X 5000*100, A's first 3 pods 3000*(150-10), A3 1000*50, B 3000*50.
    assert result.gpu_milli_seconds == 500_000 + 420_000 + 50_000 + 150_000


def test_pod_by_pod_partial_job_at_horizon_is_deadlocked() -> None:
    result = simulate(
        jobs_frame(THREE_FREE), one_node(8), KUBE, sample_interval=10.0, horizon=50.0, debug=True
    )
    rows = by_id(result.jobs)
    assert (rows[1]["state"], rows[1]["start_time"], rows[1]["finish_time"]) == ("unfinished", 0.0, None)
    assert rows[1]["nodes_spanned"] == 1
    assert (rows[2]["state"], rows[2]["held_milli"], rows[2]["nodes_spanned"]) == ("deadlocked", 3000, 1)
    assert (rows[3]["state"], rows[3]["start_time"], rows[3]["nodes_spanned"]) == ("unfinished", None, 0)
    # The last event processed is the sample at t=50: X 5000*50 + A's pods 3000*40.
    assert result.timeline["time"].to_list() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    assert result.gpu_milli_seconds == 250_000 + 120_000


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


def test_pod_by_pod_orders_pods_by_priority_then_submit_then_index() -> None:
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
    reasons = dict(zip(result.jobs["job_id"], result.jobs["reject_reason"], strict=True))
    assert reasons == {
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
        (Placement.first_fit, 1, 0.0),  # 300+300+300 on GPU 0
        (Placement.best_fit, 1, 0.0),  # always the GPU left with least
        (Placement.worst_fit, 2, 10.0),  # spread: 0, 1, then 0 (tie) -> no whole GPU left
    ],
)
def test_fractional_gpu_placement(gpu_placement: Placement, gpus_used: int, second_start: float) -> None:
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
    assert result.timeline.row(0) == (0.0, 2, 500, 0, 1, 0)


def test_whole_gpu_pod_takes_memory_per_gpu() -> None:
    # gpu_mem_mib is per GPU: 2 GPUs x 16384 MiB do not satisfy a 20000 MiB request.
    rows = [job(1, 0.0, 10.0, 1, 2000, gpu_mem_mib=20000), job(2, 0.0, 10.0, 1, 2000, gpu_mem_mib=16384)]
    result = simulate(jobs_frame(rows), one_node(2), FIFO, debug=True)
    assert result.jobs["reject_reason"].to_list() == ["pod_too_large", None]


@pytest.mark.parametrize(
    ("node_placement", "wide_start"), [(Placement.best_fit, 0.0), (Placement.worst_fit, 10.0)]
)
def test_node_placement_binpack_vs_spread(node_placement: Placement, wide_start: float) -> None:
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 4}, {"gpu_model": "V100", "num_gpus": 4}])
    rows = [job(1, 0.0, 10.0, 1, 1000), job(2, 0.0, 10.0, 1, 1000), job(3, 0.0, 10.0, 1, 4000)]
    # binpack puts jobs 1 and 2 on node 0 and keeps node 1 whole; spread puts one on each.
    policy = replace(SKIP, node_placement=node_placement)
    result = simulate(jobs_frame(rows), nodes, policy, debug=True)
    assert spans(result.jobs)[3] == (wide_start, wide_start + 10.0)


def test_gang_may_put_several_pods_on_one_node_and_counts_nodes_spanned() -> None:
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 4}, {"gpu_model": "V100", "num_gpus": 4}])
    rows = [job(1, 0.0, 10.0, 3, 2000)]  # 2 pods on node 0, 1 on node 1 (first fit)
    result = simulate(jobs_frame(rows), nodes, FIFO, debug=True)
    assert result.jobs["nodes_spanned"].to_list() == [2]


def test_random_node_choice_uses_rng_modulo_candidates() -> None:
    nodes = nodes_frame(
        [
            {"gpu_model": "V100", "num_gpus": 1},
            {"gpu_model": "T4", "num_gpus": 1},
            {"gpu_model": "A10", "num_gpus": 1},
        ]
    )
    chosen = 0xE220A8397B1DCDAF % 3  # first splitmix64 output for seed 0, three candidates
    models = ["V100", "T4", "A10"]
    rows = [job(1, 0.0, 10.0, 1, 1000)] + [
        job(10 + i, 0.0, 1.0, 1, 1000, gpu_models=[m]) for i, m in enumerate(models)
    ]
    policy = replace(SKIP, node_placement=Placement.random)
    result = simulate(jobs_frame(rows), nodes, policy, seed=0, debug=True)
    starts = dict(zip(result.jobs["job_id"], result.jobs["start_time"], strict=True))
    for i in range(3):
        assert starts[10 + i] == (10.0 if i == chosen else 0.0)
    # t=0: job 1 draws among 3 nodes, two model-bound jobs among 1 each (no draw without a
    # candidate); t=10: the blocked one draws once more.
    assert result.stats["rng_calls"] == 4.0


def test_failed_gang_consumes_rng_without_rewinding() -> None:
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 1}, {"gpu_model": "V100", "num_gpus": 1}])
    rows = [job(1, 0.0, 10.0, 1, 1000), job(2, 0.0, 10.0, 2, 1000)]
    policy = replace(SKIP, node_placement=Placement.random)
    result = simulate(jobs_frame(rows), nodes, policy, seed=7, debug=True)
    # t=0: job 1 draws (2 candidates); job 2 draws for pod 0 (1 candidate), pod 1 has no
    # candidate (no draw) and the job is undone. t=10: job 2 draws twice.
    assert result.stats["rng_calls"] == 4.0
    assert spans(result.jobs) == {1: (0.0, 10.0), 2: (10.0, 20.0)}


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
        (0.0, 1, 1000, 0, 1, 0),
        (10.0, 1, 1000, 1, 1, 1),
        (20.0, 1, 1000, 1, 1, 1),
        (30.0, 2, 2000, 0, 1, 0),
    ]
    assert result.gpu_milli_seconds == 25 * 1000 + 10 * 2000
    assert result.timeline.schema == pl.Schema(
        {
            "time": pl.Float64(),
            "allocated_gpus": pl.Int32(),
            "allocated_milli": pl.Int64(),
            "pending_jobs": pl.Int32(),
            "running_jobs": pl.Int32(),
            "fragmented_gpus": pl.Int32(),
        }
    )


def test_timeline_periodic_cycles() -> None:
    policy = replace(FIFO, session_interval=4.0)
    result = simulate(jobs_frame(TIMELINE_JOBS), one_node(2), policy, sample_interval=10.0, debug=True)
    # Job 2 arrives at 5 and job 1 ends at 25, but cycles run only at multiples of 4.
    assert spans(result.jobs) == {1: (0.0, 25.0), 2: (28.0, 38.0)}
    # The last change is at 38; the run goes on to the cycle at 40 (and its sample).
    assert result.timeline["time"].to_list() == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert result.timeline.row(4) == (40.0, 0, 0, 0, 0, 0)
    assert result.stats["end_time"] == 40.0
    assert result.gpu_milli_seconds == 25 * 1000 + 10 * 2000


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
    assert result.timeline.rows() == [(0.0, 1, 1000, 1, 1, 0)]
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
    assert (rows_out[2]["state"], rows_out[2]["start_time"]) == ("unfinished", None)
    assert spans(result.jobs)[3] == (5.0, 6.0)
    assert result.timeline["time"].to_list() == [0.0, 20.0, 40.0]
    assert result.gpu_milli_seconds == 40 * 1000


def test_input_order_is_kept_and_completions_are_by_job_id() -> None:
    rows = [job(9, 0.0, 5.0, 1, 1000), job(3, 0.0, 5.0, 1, 1000), job(5, 1.0, 1.0, 1, 1000)]
    result = simulate(jobs_frame(rows), one_node(2), FIFO, debug=True)
    assert result.jobs["job_id"].to_list() == [9, 3, 5]
    # FIFO ties by job id: job 3 before job 9; job 5 waits for both to end at 5.
    assert spans(result.jobs) == {9: (0.0, 5.0), 3: (0.0, 5.0), 5: (5.0, 6.0)}
    assert result.jobs.schema == pl.Schema(
        {
            "job_id": pl.Int64(),
            "start_time": pl.Float64(),
            "finish_time": pl.Float64(),
            "state": pl.String(),
            "reject_reason": pl.String(),
            "nodes_spanned": pl.Int32(),
            "held_milli": pl.Int64(),
            "preemptions": pl.Int32(),
        }
    )


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


def test_policy_gang_mode_pod_by_pod_ignores_queue_order_and_backfill() -> None:
    base = Policy(
        "x", QueueOrder.sjf, GangMode.pod_by_pod, Placement.first_fit, Placement.first_fit, Backfill.none
    )
    other = replace(base, queue_order=QueueOrder.fifo, backfill=Backfill.easy, backfill_depth=1)
    jobs = jobs_frame(BACKFILL + [{**r, "job_id": r["job_id"] + 10} for r in ORDERING])
    a = simulate(jobs, one_node(8), base, debug=True)
    b = simulate(jobs, one_node(8), other, debug=True)
    assert a.jobs.equals(b.jobs)
    assert a.timeline.equals(b.timeline)
