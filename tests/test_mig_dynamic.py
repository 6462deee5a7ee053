"""Hand-computed scenarios for slice-mask MIG (HAMi dynamic MIG; the mixed strategy), engine and reference.

docs/engine/devices.md, "Slice-mask MIG": a node whose mig_layout is all-enabled has MIG on and no instance;
each fractional pod placed there gets an instance of its mig_profile (or of the smallest profile that fits
its demand) at a free allowed start of the lowest-index GPU that has one; ``hami`` puts 1g.* and 3g.*
instances at the highest free start and the others at the lowest, ``lowest_start`` always at the lowest.
A100-40GB throughout: 8 memory slices of 5120 MiB; starts 1g.5gb 0..6 (1 slice), 1g.10gb {0, 2, 4, 6}
(2 slices), 2g.10gb {0, 2, 4} (2), 3g.20gb {0, 4} (4), 4g.20gb {0} (4), 7g.40gb {0} (8). A pod on an
instance of c compute slices runs at min(1, (c / 7) / d). Every number is derived in the comments.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl
import pytest
import tests.reference.simulator as reference
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_replicas import FIFO, job

from gpureplay.errors import InputError
from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.schedulers.policy import (
    MigDemand,
    MigPlacement,
    MigStrategy,
    Policy,
    Preemption,
    QueueOrder,
    SharingDemand,
)

#: FIFO gang replay (a compiled variant the suite has anyway), dynamic MIG, trace demand.
HAMI = replace(
    FIFO,
    name="fifo+dynamic-mig",
    mig_strategy=MigStrategy.dynamic,
    mig_demand=MigDemand.smallest_fit,
    sharing_demand=SharingDemand.trace,
)
LOWEST = replace(HAMI, mig_placement=MigPlacement.lowest_start)
WHOLE_DEMAND = replace(HAMI, sharing_demand=SharingDemand.whole)
IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = reference.simulate


#: Every scenario runs on both: the numba engine and the plain-Python reference (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("implementation")


def a100(layout: str | None = "all-enabled", num_gpus: int = 1) -> dict[str, Any]:
    return {"gpu_model": "A100-40GB", "num_gpus": num_gpus, "mig_layout": layout}


def run(
    jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], policy: Policy
) -> dict[int, tuple[Any, ...]]:
    """job_id -> (state, start_time, finish_time)."""
    result = simulate(jobs_frame(jobs), nodes_frame(nodes), policy, sample_interval=10.0, debug=True)
    return {
        r["job_id"]: (r["state"], r["start_time"], r["finish_time"])
        for r in result.jobs.iter_rows(named=True)
    }


def test_3g_then_4g_fit_under_hami_and_not_lowest_start() -> None:
    # The example. Job 1 (300 milli, 3g.20gb: 3/7 >= 0.3, rate 1) at 0; job 2 names 4g.20gb (start 0
    # only) at 1. hami puts 3g at 4 (slices 4-7): 4g@0 is free, both run: 2 ends at 1 + 100.
    # lowest_start puts 3g at 0: 4g@0 overlaps, job 2 waits for job 1's end at 100 and ends at 200.
    jobs = [
        job(1, 0.0, 100.0, 1, 300, mig_profile="3g.20gb"),
        job(2, 1.0, 100.0, 1, 500, mig_profile="4g.20gb"),
    ]
    assert run(jobs, [a100()], HAMI)[2] == ("finished", 1.0, 101.0)
    assert run(jobs, [a100()], LOWEST)[2] == ("finished", 100.0, 200.0)


@pytest.mark.parametrize("policy", [HAMI, LOWEST], ids=["hami", "lowest_start"])
def test_4g_then_3g_fit_under_both_rules(policy: Policy) -> None:
    # 4g takes slices 0-3 (its only start); 3g's start 4 (slices 4-7) stays free under either rule.
    jobs = [
        job(1, 0.0, 100.0, 1, 500, mig_profile="4g.20gb"),
        job(2, 1.0, 100.0, 1, 300, mig_profile="3g.20gb"),
    ]
    assert run(jobs, [a100()], policy)[2] == ("finished", 1.0, 101.0)


def test_seven_1g_instances_fill_a_gpu_and_the_eighth_waits() -> None:
    # 100 milli -> 1g.5gb (1/7 >= 0.1; 5120 MiB): seven instances on one GPU (starts 6, 5, ..., 0 under hami),
    # all at rate 1 (d = 0.1 <= 1/7): 50 s end at 50. The eighth waits for a slice and ends at 100.
    jobs = [job(i, 0.0, 50.0, 1, 100) for i in range(1, 9)]
    out = run(jobs, [a100()], HAMI)
    assert [out[i][1] for i in range(1, 8)] == [0.0] * 7
    assert out[8] == ("finished", 50.0, 100.0)


def test_the_start_rule_decides_whether_a_3g_fits_beside_two_1g() -> None:
    # Two 1g.10gb pods (100 milli, 6000 MiB: 1g.5gb's 5120 MiB is too small, 1g.10gb has 10240) then a 3g
    # pod (300 milli), all at 0 in job order. hami: 1g.10gb at 6, then 4 (slices 6-7, 4-5): 3g@4 is blocked
    # and 3g@0 (0-3) free, it runs at 0. lowest_start: 1g.10gb at 0 and 2 (slices 0-3): 3g@4 is free too.
    # A second 3g (job 4) fits nowhere in either case until a 1g ends at 40 -- under hami job 1 (slices 6-7)
    # and job 2 (4-5) both end at 40, freeing 3g@4; under lowest_start slices 0-3 free up: 3g@0.
    jobs = [
        job(1, 0.0, 40.0, 1, 100, gpu_mem_mib=6000),
        job(2, 0.0, 40.0, 1, 100, gpu_mem_mib=6000),
        job(3, 0.0, 60.0, 1, 300),
        job(4, 0.0, 60.0, 1, 300),
    ]
    for policy in (HAMI, LOWEST):
        out = run(jobs, [a100()], policy)
        assert out[3] == ("finished", 0.0, 60.0)
        assert out[4] == ("finished", 40.0, 100.0)


def test_the_smallest_profile_that_fits_is_made_and_sets_the_rate() -> None:
    # sharing_demand whole (d = 1): the rate is the instance's SM share. 500 milli -> 4g.20gb (4/7 >= 0.5 >
    # 3/7) at 0 (slices 0-3): 40 s at 4/7 end at 70. 100 -> 1g.5gb at 7 under hami: 10 s at 1/7 -> 70.
    # 200 -> 2g.10gb (2/7 >= 0.2 > 1/7), lowest free start 4 (slices 4-5): 20 s at 2/7 -> 70. 900 -> 7g.40gb
    # needs all 8 slices: it waits for the three, 70 -> 140 at rate 1.
    jobs = [
        job(1, 0.0, 40.0, 1, 500),
        job(2, 0.0, 10.0, 1, 100),
        job(3, 0.0, 20.0, 1, 200),
        job(4, 0.0, 70.0, 1, 900),
    ]
    out = run(jobs, [a100()], WHOLE_DEMAND)
    assert [out[i][1:] for i in (1, 2, 3)] == [(0.0, pytest.approx(70.0))] * 3
    assert out[4][1:] == (pytest.approx(70.0), pytest.approx(140.0))


def test_a_4g_behind_a_2g_at_start_0_waits() -> None:
    # 2g.10gb (200 milli) is not 1g/3g: hami puts it at the lowest start, 0, which 4g.20gb (start 0 only)
    # needs: the 4g (500 milli) waits for the 2g's end at 20 although 6 slices are free.
    out = run([job(1, 0.0, 20.0, 1, 200), job(2, 0.0, 20.0, 1, 500)], [a100()], HAMI)
    assert out[2] == ("finished", 20.0, 40.0)


def test_a_whole_gpu_pod_needs_a_gpu_with_no_instance() -> None:
    # A 1000-milli pod takes a wholly free GPU: job 1's 1g instance (0-50) on the only GPU keeps it waiting.
    out = run([job(1, 0.0, 50.0, 1, 100), job(2, 0.0, 10.0, 1, 1000)], [a100()], HAMI)
    assert out[2] == ("finished", 50.0, 60.0)


def test_a_fractional_pod_on_a_whole_gpu_node_takes_the_whole_gpu() -> None:
    # Node 0 keeps whole GPUs (all-disabled), node 1 is dynamic. First fit puts job 1 (100 milli) on node 0:
    # it takes the whole GPU, so job 2 goes to node 1 as a 1g instance; job 3 finds node 0 full and takes a
    # second instance on node 1. All three run at 0.
    nodes = [a100("all-disabled"), a100()]
    out = run([job(i, 0.0, 30.0, 1, 100) for i in (1, 2, 3)], nodes, HAMI)
    assert [out[i][1] for i in (1, 2, 3)] == [0.0, 0.0, 0.0]
    result = simulate(jobs_frame([job(1, 0.0, 30.0, 1, 100)]), nodes_frame(nodes), HAMI, sample_interval=10.0)
    # GPU-seconds: the whole GPU for 30 s.
    assert result.attempts["gpu_seconds"].to_list() == [pytest.approx(30.0)]


def test_gpu_seconds_count_the_instance_slices() -> None:
    # A 3g.20gb instance holds 4 of 8 slices = 500 milli: 100 s hold 50 GPU-seconds (not 300 milli's 30).
    result = simulate(
        jobs_frame([job(1, 0.0, 100.0, 1, 300)]), nodes_frame([a100()]), HAMI, sample_interval=10.0
    )
    assert result.attempts["gpu_seconds"].to_list() == [pytest.approx(50.0)]


def test_instance_creation_time_delays_the_job_on_dynamic_nodes_only() -> None:
    # mig_create_s 30: job 1 takes the whole-GPU node (node 0, first fit) and ends at 60; job 2 gets an
    # instance on node 1 and runs from 30: 60 s of work end at 90. Creation is not lost work.
    nodes = [a100("all-disabled"), a100()]
    result = simulate(
        jobs_frame([job(1, 0.0, 60.0, 1, 100), job(2, 0.0, 60.0, 1, 300)]),
        nodes_frame(nodes),
        replace(HAMI, mig_create_s=30.0),
        sample_interval=10.0,
    )
    rows = {r["job_id"]: r for r in result.jobs.iter_rows(named=True)}
    assert (rows[1]["start_time"], rows[1]["finish_time"]) == (0.0, 60.0)
    assert (rows[2]["start_time"], rows[2]["finish_time"]) == (0.0, 90.0)
    assert result.jobs["lost_gpu_seconds"].sum() == 0.0


def test_a_gang_counts_instances_per_gpu() -> None:
    # 3 pods of 3g.20gb: one GPU holds two (starts 0 and 4), so a one-GPU cluster can never run the gang
    # (rejected); two GPUs hold four and it runs.
    gang = [job(1, 0.0, 10.0, 3, 300)]
    assert run(gang, [a100()], HAMI)[1][0] == "rejected"
    assert run(gang, [a100(num_gpus=2)], HAMI)[1] == ("finished", 0.0, 10.0)


def test_memory_beyond_every_instance_is_rejected() -> None:
    # 50000 MiB exceeds even 7g.40gb (40960 MiB): no node may take the job.
    assert run([job(1, 0.0, 10.0, 1, 100, gpu_mem_mib=50000)], [a100()], HAMI)[1][0] == "rejected"


@pytest.mark.parametrize(
    ("profile", "milli", "needle"),
    [
        ("9g.99gb", 100, "no MIG profile of any GPU model"),
        ("1g.5gb+me", 100, "media-extension"),
        ("3g.20gb", 1000, "asks one instance"),
    ],
)
def test_refused_profiles_name_the_row_and_column(profile: str, milli: int, needle: str) -> None:
    if simulate is reference.simulate:
        pytest.skip("input errors are the compile step's (engine side)")
    with pytest.raises(InputError) as err:
        engine_simulate(
            jobs_frame([job(7, 0.0, 10.0, 1, milli, mig_profile=profile)]), nodes_frame([a100()]), HAMI
        )
    text = str(err.value)
    assert needle in text and "mig_profile" in text and "job 7" in text


def test_layouts_with_instances_made_in_advance_are_refused() -> None:
    if simulate is reference.simulate:
        pytest.skip("input errors are the compile step's (engine side)")
    with pytest.raises(InputError, match="makes its instances in advance"):
        engine_simulate(jobs_frame([job(1, 0.0, 10.0, 1, 100)]), nodes_frame([a100("all-1g.5gb")]), HAMI)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"preemption": Preemption.priority, "queue_order": QueueOrder.priority}, "scheduler.preemption"),
        ({"mig_demand": MigDemand.any}, "scheduler.mig_demand"),
        ({"mig_create_s": -1.0}, "scheduler.mig_create_s"),
    ],
)
def test_refused_settings_name_the_key(change: dict[str, Any], key: str) -> None:
    if simulate is reference.simulate:
        pytest.skip("config errors are the compile step's (engine side)")
    with pytest.raises(InputError, match=key):
        engine_simulate(
            jobs_frame([job(1, 0.0, 10.0, 1, 100)]), nodes_frame([a100()]), replace(HAMI, **change)
        )


def test_placement_settings_without_dynamic_mig_are_refused() -> None:
    if simulate is reference.simulate:
        pytest.skip("config errors are the compile step's (engine side)")
    nodes = nodes_frame([a100(None)])
    for change, key in (
        ({"mig_placement": MigPlacement.lowest_start}, "scheduler.mig_placement"),
        ({"mig_create_s": 5.0}, "scheduler.mig_create_s"),
    ):
        with pytest.raises(InputError, match=key):
            engine_simulate(jobs_frame([job(1, 0.0, 10.0, 1, 100)]), nodes, replace(FIFO, **change))


def test_timeline_counts_the_slices_held() -> None:
    # One 3g instance (4 slices = 500 milli) from 0 to 100: the sample at 50 shows 500 allocated milli.
    if simulate is reference.simulate:
        pytest.skip("the engine's timeline")
    result = engine_simulate(
        jobs_frame([job(1, 0.0, 100.0, 1, 300)]), nodes_frame([a100()]), HAMI, sample_interval=50.0
    )
    row = result.timeline.filter(pl.col("time") == 50.0)
    assert row["allocated_milli"].to_list() == [500]


def test_stranded_slices_are_free_slices_no_wanted_instance_fits() -> None:
    # Jobs 1-3 (200 milli -> 2g.10gb, starts {0, 2, 4}) fill GPU 0 at 0, 2 and 4 until 100; job 4 (whole
    # GPU) takes GPU 1 until 200. The workload asks 2g.10gb and whole GPUs (all 8 slices at 0). At 50 GPU 0's
    # free slices 6 and 7 fit no 2g (no start 6) and no whole GPU: 2 stranded; GPU 1 is taken whole. At 150
    # GPU 0 is empty and a whole-GPU pod could take every slice: 0.
    jobs = [job(i, 0.0, 100.0, 1, 200) for i in (1, 2, 3)] + [job(4, 0.0, 200.0, 1, 1000)]
    result = simulate(jobs_frame(jobs), nodes_frame([a100(num_gpus=2)]), HAMI, sample_interval=50.0)
    stranded = dict(zip(result.timeline["time"], result.timeline["mig_stranded_slices"], strict=True))
    assert (stranded[50.0], stranded[150.0]) == (2, 0)


def test_an_empty_gpu_strands_what_the_wanted_shapes_leave() -> None:
    # Only 2g.10gb pods: even an empty GPU strands slices 6-7 (the 7th compute slice of 3 x 2g), like the
    # static all-2g layout; over the run (samples at 0, 50, 100: 2 each) the summary figure is 2 / 8 = 25 %.
    if simulate is reference.simulate:
        pytest.skip("the summary figure is the engine's stats")
    result = engine_simulate(
        jobs_frame([job(1, 0.0, 100.0, 1, 200)]), nodes_frame([a100()]), HAMI, sample_interval=50.0
    )
    assert result.timeline["mig_stranded_slices"].to_list() == [2, 2, 2]
    assert result.stats["mig_stranded_pct"] == pytest.approx(25.0)


# --- mixed strategy: a layout's instances, one resource per profile ---------------------------------------
# all-balanced on an A100-40GB is 2 x 1g.5gb + 2g.10gb + 3g.20gb; find_placement places the widest first at
# the lowest start that lets the rest fit: 3g@0 would leave slices 4-7, where the two 1g (starts 0..6) and
# the 2g cannot all go, so 3g@4, 2g@0, 1g@2 and 1g@3.
MIXED = replace(HAMI, name="fifo+mixed-mig", mig_strategy=MigStrategy.mixed)


def test_mixed_pods_take_free_instances_of_their_own_profile() -> None:
    # Jobs 1, 2 and 4 (100 milli) ask nvidia.com/mig-1g.5gb and job 3 (200) nvidia.com/mig-2g.10gb: 1, 2 and
    # 3 start at 0; two 1g instances exist, so job 4 waits for one (50 -> 100) although the 3g one is free.
    jobs = [job(1, 0.0, 50.0, 1, 100), job(2, 0.0, 50.0, 1, 100), job(3, 0.0, 50.0, 1, 200)]
    out = run([*jobs, job(4, 0.0, 50.0, 1, 100)], [a100("all-balanced")], MIXED)
    assert [out[i][1] for i in (1, 2, 3)] == [0.0, 0.0, 0.0]
    assert out[4] == ("finished", 50.0, 100.0)


def test_mixed_offers_no_whole_gpu_and_no_profile_outside_the_layout() -> None:
    # A whole-GPU pod asks nvidia.com/gpu, which MIG GPUs under mixed do not offer; a 500-milli pod's
    # smallest profile (4g.20gb) is not in all-balanced: both are rejected. On a whole-GPU node beside it the
    # whole pod runs.
    jobs = [job(1, 0.0, 10.0, 1, 1000), job(2, 0.0, 10.0, 1, 500)]
    out = run(jobs, [a100("all-balanced")], MIXED)
    assert (out[1][0], out[2][0]) == ("rejected", "rejected")
    assert run(jobs[:1], [a100("all-balanced"), a100("all-disabled")], MIXED)[1] == ("finished", 0.0, 10.0)


def test_mixed_named_profile_and_rate() -> None:
    # A 300-milli pod named 3g.20gb takes the 3g instance (start 4); with sharing_demand whole it runs at
    # 3/7: 30 s of work end at 70.
    out = run(
        [job(1, 0.0, 30.0, 1, 300, mig_profile="3g.20gb")],
        [a100("all-balanced")],
        replace(MIXED, sharing_demand=SharingDemand.whole),
    )
    assert out[1] == ("finished", 0.0, pytest.approx(70.0))


def test_mixed_strands_instances_no_pod_asks_for() -> None:
    # Only 1g.5gb pods: of the 8 slices of an all-balanced GPU, only the two 1g instances (slices 2 and 3)
    # can ever be used: 6 stranded, empty or not.
    result = simulate(
        jobs_frame([job(1, 0.0, 100.0, 1, 100)]),
        nodes_frame([a100("all-balanced")]),
        MIXED,
        sample_interval=50.0,
    )
    assert result.timeline["mig_stranded_slices"].to_list() == [6, 6, 6]


def test_mixed_refuses_a_gpu_without_instances() -> None:
    if simulate is reference.simulate:
        pytest.skip("input errors are the compile step's (engine side)")
    with pytest.raises(InputError, match="no instance"):
        engine_simulate(jobs_frame([job(1, 0.0, 10.0, 1, 100)]), nodes_frame([a100("all-enabled")]), MIXED)
