"""Hand-computed scenarios for GPU sharing by replicas, run on the engine and on the reference simulator.

docs/engine/devices.md, "GPU sharing by replicas": each GPU
is R replica devices, a GPU pod asks whole devices, and the active pods on one physical GPU slow each
other down (time-slicing: water-filling of the GPU's capacity; MPS: a fixed SM cap per client). Every
expected number is derived in the comments. Default restart overheads only apply to restarts, so the
first attempts here start progressing at once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl
import pytest
import tests.reference.simulator as reference
from tests.reference.simulator import Node, empty_cluster, whole_gpus
from tests.reference.strategies import PRESETS, jobs_frame, nodes_frame, preemptive

from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.schedulers.policy import (
    Backfill,
    GpuSharing,
    Policy,
    Preemption,
    QueueOrder,
    ReplicaAllocation,
    SharedGpuMemory,
    SharingDemand,
)

FIFO = PRESETS["fifo"]
#: FIFO's rules in the gang + preemption replay: with equal priorities nothing is evicted and the
#: priority order is submit time then job id, as FIFO's. One compiled variant for the scenarios and
#: the eviction cases (a variant per mechanism set costs the suite a minute of compilation).
BASE = replace(
    FIFO, name="fifo+preempt-ready", queue_order=QueueOrder.priority, preemption=Preemption.priority
)
IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = reference.simulate


#: Every scenario runs on both: the numba engine and the plain-Python reference (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("implementation")


def sharing(
    mode: GpuSharing = GpuSharing.time_slicing, replicas: int = 2, base: Policy = BASE, **extra: Any
) -> Policy:
    return replace(base, name=f"{base.name}+{mode.name}", gpu_sharing=mode, replicas=replicas, **extra)


TS2 = sharing()
MPS2 = sharing(GpuSharing.mps)


def job(job_id: int, submit: float, duration: float, pods: int, milli: int, **extra: Any) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "submit_time": submit,
        "duration": duration,
        "num_pods": pods,
        "gpu_milli": milli,
        **extra,
    }


def gpus(num_gpus: int, **extra: Any) -> pl.DataFrame:
    return nodes_frame([{"gpu_model": "V100", "num_gpus": num_gpus, **extra}])


def rows(result: Any) -> dict[int, dict[str, Any]]:
    return {row["job_id"]: row for row in result.jobs.iter_rows(named=True)}


def run(
    jobs: list[dict[str, Any]], nodes: pl.DataFrame, policy: Policy, **kw: Any
) -> dict[int, dict[str, Any]]:
    return rows(simulate(jobs_frame(jobs), nodes, policy, sample_interval=10.0, debug=True, **kw))


def summary(out: dict[int, dict[str, Any]]) -> dict[int, tuple[Any, ...]]:
    """job_id -> (finish_time, sharing_delay, sharing_slowdown)."""
    return {k: (r["finish_time"], r["sharing_delay"], r["sharing_slowdown"]) for k, r in out.items()}


# --------------------------------------------------------------------------------------------------
# Time-slicing
# --------------------------------------------------------------------------------------------------


def test_time_slicing_two_sharers_from_the_start() -> None:
    # 1 GPU = 2 replicas; A and B (1 replica, 100 s) start at 0 and share it: each at 1/2 -> both end at
    # 200, each stretched by 200 * (1 - 1/2) = 100 s; slowdown (100 + 100) / 100 = 2.
    out = run([job(1, 0.0, 100.0, 1, 1000), job(2, 0.0, 100.0, 1, 1000)], gpus(1), TS2)
    assert summary(out) == {1: (200.0, 100.0, 2.0), 2: (200.0, 100.0, 2.0)}


def test_time_slicing_staggered_sharers_move_each_others_finish() -> None:
    # A alone on 0..50 at rate 1 (50 done); B joins at 50: both at 1/2, A ends at 50 + 50 / 0.5 = 150.
    # B then has 50 done and speeds up to 1: ends at 150 + 50 = 200. Delays: A 100 * 0.5, B 100 * 0.5.
    out = run([job(1, 0.0, 100.0, 1, 1000), job(2, 50.0, 100.0, 1, 1000)], gpus(1), TS2)
    assert summary(out) == {1: (150.0, 50.0, 1.5), 2: (200.0, 50.0, 1.5)}


def test_mps_caps_each_client_alone_or_not() -> None:
    # MPS, R = 2: each client capped at floor(100 / 2) / 100 = 0.5 even alone: A 0..200, B 50..250.
    out = run([job(1, 0.0, 100.0, 1, 1000), job(2, 50.0, 100.0, 1, 1000)], gpus(1), MPS2)
    assert summary(out) == {1: (200.0, 100.0, 2.0), 2: (250.0, 100.0, 2.0)}


def test_mps_cap_floors_the_percentage() -> None:
    # R = 3: s = floor(100 / 3) / 100 = 0.33 -> a 33 s job takes 100 s (33 / 0.33, up to float noise).
    out = run([job(1, 0.0, 33.0, 1, 1000)], gpus(1), sharing(GpuSharing.mps, 3))
    assert out[1]["finish_time"] == pytest.approx(100.0)
    assert out[1]["sharing_delay"] == pytest.approx(67.0)


def test_distributed_spreads_and_packed_packs_replicas() -> None:
    # 2 GPUs x 2 replicas (4 devices). distributed: B's replica from the GPU with fewest in use (GPU 1):
    # both alone at rate 1. packed: the GPU with the most in use that has a free replica (GPU 0): sharers.
    jobs = [job(1, 0.0, 100.0, 1, 1000), job(2, 0.0, 100.0, 1, 1000)]
    spread = run(jobs, gpus(2), TS2)
    assert summary(spread) == {1: (100.0, 0.0, 1.0), 2: (100.0, 0.0, 1.0)}
    packed = run(jobs, gpus(2), sharing(replica_allocation=ReplicaAllocation.packed))
    assert summary(packed) == {1: (200.0, 100.0, 2.0), 2: (200.0, 100.0, 2.0)}


def test_replica_device_choice() -> None:
    # 2 GPUs x 3 replicas: devices 0-2 are GPU 0, 3-5 GPU 1.
    [distributed] = empty_cluster(
        [{"gpu_model": "V100", "gpu_mem_mib": 16384, "num_gpus": 2, "cpu_milli": 1000, "mem_mib": 1000}],
        replicas=3,
    )
    packed: Node = distributed.copy()
    packed.packed = True
    # Empty: distributed alternates GPUs (0, then GPU 1 with 0 in use < 1); packed fills GPU 0 first.
    assert whole_gpus(distributed, 2) == (0, 3)
    assert whole_gpus(packed, 2) == (0, 1)
    assert whole_gpus(packed, 4) == (0, 1, 2, 3)
    # Devices 0 and 4 in use (one each): distributed ties -> GPU 0 (device 1), then GPU 1 (1 < 2): device 3.
    # packed: GPU 0 first (tie, lowest), then GPU 0 has 2 in use > 1: device 2, then GPU 1: device 3.
    for node in (distributed, packed):
        node.gpus[0].free_milli = node.gpus[4].free_milli = 0
    assert whole_gpus(distributed, 2) == (1, 3)
    assert whole_gpus(packed, 3) == (1, 2, 3)
    # Only device 3 in use (GPU 1): distributed takes GPU 0 (0 < 1): device 0. Now both have 1 in use;
    # the tie goes to the GPU this pod picked from least (allocate.go pickedFrom): GPU 1, device 4.
    for node in (distributed, packed):
        node.gpus[0].free_milli = node.gpus[4].free_milli = 1000
        node.gpus[3].free_milli = 0
    assert whole_gpus(distributed, 2) == (0, 4)
    # Without replicas: the k lowest-index wholly free GPUs.
    [plain] = empty_cluster(
        [{"gpu_model": "V100", "gpu_mem_mib": 16384, "num_gpus": 4, "cpu_milli": 1000, "mem_mib": 1000}]
    )
    plain.gpus[1].free_milli = 0
    assert whole_gpus(plain, 2) == (0, 2)


def test_distributed_ties_go_to_the_gpu_this_pod_used_least() -> None:
    # 2 GPUs x 3 replicas. A (1 replica, 100 s) takes GPU 0, B (1 replica, 300 s) GPU 1 (0 < 1 in use);
    # both alone at rate 1. A ends at 100; C (2 replicas, 100 s) arrives then: its first pick is GPU 0
    # (0 < 1 in use); now both GPUs have 1 in use and the tie goes to the one C picked from least
    # (allocate.go pickedFrom): GPU 1, beside B. C alone on GPU 0 and sharing GPU 1 runs at 1/2 -> ends
    # at 100 + 100 / (1/2) = 300; B at 1/2 from 100 to 300 (100 done), then its last 100 alone -> 400.
    # (Ties to the lowest index would put both of C's replicas on GPU 0: B alone, done at 300.)
    jobs = [job(1, 0.0, 100.0, 1, 1000), job(2, 0.0, 300.0, 1, 1000), job(3, 100.0, 100.0, 1, 2000)]
    out = run(jobs, gpus(2), sharing(replicas=3))
    assert {k: r["finish_time"] for k, r in out.items()} == {1: 100.0, 2: 400.0, 3: 300.0}


def test_two_replicas_of_one_gpu_do_not_double_the_compute() -> None:
    # One pod asking 2 replicas on a 1-GPU node (R = 2): both on GPU 0, weight w = 2, D = 2; alone the
    # GPU's capacity 1 goes to it: rate min(1, 1 / 2) = 1/2 -> 100 s of work end at 200. It holds 2 devices.
    result = simulate(
        jobs_frame([job(1, 0.0, 100.0, 1, 2000)]), gpus(1), TS2, sample_interval=10.0, debug=True
    )
    assert summary(rows(result)) == {1: (200.0, 100.0, 2.0)}
    assert result.attempts["gpus"].to_list() == [2.0]
    assert result.timeline.filter(pl.col("time") == 100.0)["allocated_gpus"].to_list() == [2]


def test_fractional_pod_takes_one_whole_replica() -> None:
    # Under sharing a 300-milli pod is a 1-device whole pod: 3 of them on 1 GPU x 2 replicas -> 2 run
    # (1/2 each), the third waits for a device. Results report devices: gpus 1.0, held 1000 milli.
    result = simulate(
        jobs_frame([job(i, 0.0, 100.0, 1, 300) for i in (1, 2, 3)]),
        gpus(1),
        TS2,
        sample_interval=10.0,
        debug=True,
    )
    out = rows(result)
    assert {k: (r["start_time"], r["finish_time"]) for k, r in out.items()} == {
        1: (0.0, 200.0),
        2: (0.0, 200.0),
        3: (200.0, 300.0),
    }
    assert result.attempts["gpus"].to_list() == [1.0, 1.0, 1.0]
    assert result.gpu_milli_seconds == 1000.0 * (200 + 200 + 100)


def test_trace_demand_fits_small_sharers_side_by_side() -> None:
    # sharing_demand: trace, R = 4. Two 300-milli pods: D = 0.3 each, water-filling gives each
    # min(0.3, 1 / 2) = 0.3, then min(0.3, 0.7 / 1) = 0.3: rate 1, no slowdown.
    trace = sharing(replicas=4, sharing_demand=SharingDemand.trace)
    small = run([job(1, 0.0, 100.0, 1, 300), job(2, 0.0, 100.0, 1, 300)], gpus(1), trace)
    assert summary(small) == {1: (100.0, 0.0, 1.0), 2: (100.0, 0.0, 1.0)}
    # Two 700-milli pods: each min(0.7, 1/2) = 0.5 -> rate 0.5 / 0.7: 100 s of work take 140 s.
    big = run([job(1, 0.0, 100.0, 1, 700), job(2, 0.0, 100.0, 1, 700)], gpus(1), trace)
    for r in big.values():
        assert r["finish_time"] == pytest.approx(140.0)
        assert r["sharing_delay"] == pytest.approx(40.0)
        assert r["sharing_slowdown"] == pytest.approx(1.4)


def test_trace_demand_water_fills_unequal_sharers() -> None:
    # R = 4, demands 0.2, 0.9, 0.9 (pods of 200, 900, 900 milli): the 0.2 process gets 0.2 (< 1/3), the
    # two others (1 - 0.2) / 2 = 0.4 each -> rates 1, 0.4 / 0.9, 0.4 / 0.9.
    trace = sharing(replicas=4, sharing_demand=SharingDemand.trace)
    out = run(
        [job(1, 0.0, 100.0, 1, 200), job(2, 0.0, 40.0, 1, 900), job(3, 0.0, 40.0, 1, 900)], gpus(1), trace
    )
    # Jobs 2 and 3 end at 40 / (0.4 / 0.9) = 90; job 1 alone after that, never slowed: ends at 100.
    assert out[1]["finish_time"] == 100.0 and out[1]["sharing_delay"] == 0.0
    for k in (2, 3):
        assert out[k]["finish_time"] == pytest.approx(90.0)
        assert out[k]["sharing_delay"] == pytest.approx(50.0)


def test_switch_overhead_costs_only_while_shared() -> None:
    # switch_overhead 0.1: two sharers split 1 - 0.1 = 0.9 -> 0.45 each: 90 s of work take 200 s.
    both = run(
        [job(1, 0.0, 90.0, 1, 1000), job(2, 0.0, 90.0, 1, 1000)], gpus(1), sharing(switch_overhead=0.1)
    )
    for r in both.values():
        assert r["finish_time"] == pytest.approx(200.0)
        assert r["sharing_delay"] == pytest.approx(110.0)
    # Alone the capacity is 1: no overhead.
    alone = run([job(1, 0.0, 90.0, 1, 1000)], gpus(1), sharing(switch_overhead=0.1))
    assert summary(alone) == {1: (90.0, 0.0, 1.0)}


def test_sharing_only_between_processes_on_the_same_physical_gpu() -> None:
    # A gang of 2 pods x 1 replica, distributed over GPUs 0 and 1 of a 2-GPU node (R = 2): devices 0, 2.
    # B (1 replica) then takes GPU 0 (fewest in use: tie, lowest index): device 1. On GPU 0: A's pod and B
    # (1/2 each); on GPU 1: A alone (1). A's rate = the least = 1/2: both end at 200.
    out = run([job(1, 0.0, 100.0, 2, 1000), job(2, 0.0, 100.0, 1, 1000)], gpus(2), TS2)
    assert summary(out) == {1: (200.0, 100.0, 2.0), 2: (200.0, 100.0, 2.0)}


# --------------------------------------------------------------------------------------------------
# Eviction, restarts, results
# --------------------------------------------------------------------------------------------------


def test_eviction_re_rates_the_remaining_sharer() -> None:
    # 1 GPU x 2 replicas, time-slicing, priority preemption (first fit, grace 2 s, requeue back).
    # A (prio 0, 100 s, restart overhead 5) and B (prio 1, 100 s) share from 0 at 1/2 each.
    # t=20: H (prio 9, 10 s) arrives, no free device: victims A and B, B reprieved (most important),
    #       A evicted with progress 20 * 0.5 = 10 (all kept: checkpoint 0) -> 90 left, delay 10.
    #       B (10 done) alone: rate 1 -> finish 20 + 90 = 110.
    # t=22: A's grace ends, H starts on its device: B (12 done) and H at 1/2: B -> 22 + 88 / 0.5 = 198,
    #       H -> 22 + 10 / 0.5 = 42.
    # t=42: H ends (delay 10): B (22 done) alone -> 42 + 78 = 120; then A restarts: active during its
    #       overhead (progress from 47), B back to 1/2 -> 42 + 78 / 0.5 = 198; A -> 47 + 90 / 0.5 = 227.
    # t=198: B ends (delay 10 + 10 + 78 = 98); A (75.5 done) alone -> 198 + 14.5 = 212.5.
    # A's delay: 10 + 151 * 0.5 = 85.5 over 100 of work.
    base = replace(PRESETS["gang-binpack"], node_placement="first_fit", gpu_placement="first_fit")
    policy = sharing(base=preemptive(base, graceful_termination=2.0))
    jobs = [
        job(1, 0.0, 100.0, 1, 1000, priority=0, restart_overhead=5.0),
        job(2, 0.0, 100.0, 1, 1000, priority=1),
        job(3, 20.0, 10.0, 1, 1000, priority=9),
    ]
    result = simulate(jobs_frame(jobs), gpus(1), policy, sample_interval=10.0, debug=True)
    out = rows(result)
    assert summary(out) == {1: (212.5, 85.5, 1.855), 2: (198.0, 98.0, 1.98), 3: (42.0, 10.0, 2.0)}
    assert out[1]["preemptions"] == 1
    # Lost GPU-seconds of A: 1 device x (0 lost + 0 overhead + 2 grace) + 1 x 5 restart overhead.
    assert out[1]["lost_gpu_seconds"] == 7.0
    first, second = (r for r in result.attempts.iter_rows(named=True) if r["job_id"] == 1)
    assert (first["end_reason"], first["progress"], first["work_lost"]) == ("preempted", 10.0, 0.0)
    assert (second["start"], second["end"], second["progress"], second["restart_overhead"]) == (
        42.0,
        212.5,
        90.0,
        5.0,
    )


def test_lost_work_counts_in_the_slowdown() -> None:
    # As above but A checkpoints never (inf): its 10 s of progress are lost at 20 and it restarts with all
    # 100 s left. Work done over its attempts 10 + 100 = 110 (the rolled-back part included).
    base = replace(PRESETS["gang-binpack"], node_placement="first_fit", gpu_placement="first_fit")
    policy = sharing(base=preemptive(base, graceful_termination=2.0))
    jobs = [
        job(1, 0.0, 100.0, 1, 1000, priority=0, restart_overhead=5.0, checkpoint_interval=float("inf")),
        job(2, 0.0, 100.0, 1, 1000, priority=1),
        job(3, 20.0, 10.0, 1, 1000, priority=9),
    ]
    out = run(jobs, gpus(1), policy)
    # t=42: A restarts, progress from 47 at 1/2 until B ends at 198 (75.5 done, delay 75.5), then alone:
    # 198 + 24.5 = 222.5. Delay 10 + 75.5 = 85.5; slowdown (110 + 85.5) / 110.
    assert out[1]["finish_time"] == 222.5
    assert out[1]["sharing_delay"] == 85.5
    assert out[1]["sharing_slowdown"] == pytest.approx(195.5 / 110.0)


def test_unstarted_and_rejected_jobs_have_no_slowdown() -> None:
    # 1 GPU x 2 replicas, horizon 50: A (1 device, 100 s) runs alone at rate 1 (50 done, no delay); B
    # (3 devices of 2) is rejected; C (2 devices) does not fit beside A: never started by 50.
    jobs = [job(1, 0.0, 100.0, 1, 1000), job(2, 0.0, 10.0, 1, 3000), job(3, 0.0, 10.0, 1, 2000)]
    out = run(jobs, gpus(1), TS2, horizon=50.0)
    assert out[2]["state"] == "rejected"
    assert (out[1]["state"], out[1]["sharing_delay"], out[1]["sharing_slowdown"]) == ("unfinished", 0.0, 1.0)
    for k in (2, 3):
        assert (out[k]["sharing_delay"], out[k]["sharing_slowdown"]) == (0.0, None)


def test_a_running_job_at_the_horizon_counts_its_stretch_so_far() -> None:
    # Two sharers from 0 at 1/2, horizon 60: 30 s of work, 30 s of delay each so far.
    out = run([job(1, 0.0, 100.0, 1, 1000), job(2, 0.0, 100.0, 1, 1000)], gpus(1), TS2, horizon=60.0)
    assert {k: (r["sharing_delay"], r["sharing_slowdown"]) for k, r in out.items()} == {
        1: (30.0, 2.0),
        2: (30.0, 2.0),
    }


def test_without_sharing_nothing_is_slowed() -> None:
    # gpu_sharing none: HAMi-style fractional sharing does not slow pods down (rate 1 always).
    # Job 3 (a whole GPU, 0 s) waits for the GPU to be wholly free: it runs at 100 without doing any work.
    out = run(
        [job(1, 0.0, 100.0, 1, 500), job(2, 0.0, 100.0, 1, 500), job(3, 0.0, 0.0, 1, 1000)], gpus(1), FIFO
    )
    assert summary(out) == {1: (100.0, 0.0, 1.0), 2: (100.0, 0.0, 1.0), 3: (100.0, 0.0, None)}


def test_mps_device_memory_is_a_share_of_the_gpu() -> None:
    # A 16 GiB GPU as 2 MPS replicas: each device has 8192 MiB; a pod asking 10000 MiB fits no device
    # (rejected, pod_too_large). Under time-slicing a device has the whole GPU's memory: it runs.
    jobs = [job(1, 0.0, 10.0, 1, 1000, gpu_mem_mib=10000)]
    nodes = gpus(1, gpu_mem_mib=16384)
    assert run(jobs, nodes, MPS2)[1]["reject_reason"] == "pod_too_large"
    assert run(jobs, nodes, TS2)[1]["state"] == "finished"


@pytest.mark.parametrize(
    "changes",
    [
        {"gpu_sharing": GpuSharing.time_slicing, "replicas": 2, "device_split_count": 4},
        {"gpu_sharing": GpuSharing.time_slicing, "replicas": 2, "shared_gpu_memory": SharedGpuMemory.full},
        {"gpu_sharing": GpuSharing.time_slicing, "replicas": 2, "gpu_placement": "best_fit"},
        {"gpu_sharing": GpuSharing.time_slicing, "replicas": 2, "node_placement": "fgd"},
        {"gpu_sharing": GpuSharing.mps, "replicas": 2, "node_placement": "hami_binpack"},
        {"gpu_sharing": GpuSharing.mps, "replicas": 2, "node_placement": "kai_binpack"},
        {"gpu_sharing": GpuSharing.mps, "replicas": 2, "node_placement": "best_fit_memory"},
        {"gpu_sharing": GpuSharing.time_slicing, "replicas": 1},
        {"gpu_sharing": GpuSharing.time_slicing, "replicas": 2, "backfill": Backfill.easy},
        {"gpu_sharing": GpuSharing.mps, "replicas": 2, "switch_overhead": 0.1},
        {"gpu_sharing": GpuSharing.time_slicing, "replicas": 2, "switch_overhead": 1.0},
        {"gpu_sharing": GpuSharing.time_slicing, "replicas": 2, "switch_overhead": -0.1},
        {"replicas": 2},
        {"replica_allocation": ReplicaAllocation.packed},
        {"sharing_demand": SharingDemand.trace},
        {"switch_overhead": 0.1},
    ],
)
def test_refused_combinations(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        simulate(jobs_frame([job(1, 0.0, 1.0, 1, 1000)]), gpus(1), replace(FIFO, **changes))


def test_allowed_node_scorers_with_sharing() -> None:
    # The baselines and kube's CPU/memory scorer take replicas: 4 one-replica jobs on 2 nodes of 1 GPU.
    jobs = [job(i, 0.0, 10.0, 1, 1000) for i in range(1, 5)]
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 1}] * 2)
    for scorer in ("first_fit", "best_fit", "worst_fit", "random", "balanced_allocation", "kube_cpu_mem"):
        out = run(jobs, nodes, sharing(node_placement=scorer))
        assert all(r["state"] == "finished" for r in out.values())
        # Every device is used by one job; each GPU holds two sharers at 1/2: all end at 20.
        assert {r["finish_time"] for r in out.values()} == {20.0}


# --------------------------------------------------------------------------------------------------
# failRequestsGreaterThanOne (device plugin): a pod asking k > 1 replicas fails admission
# --------------------------------------------------------------------------------------------------


def test_multi_replica_requests_run_under_time_slicing_by_default_and_fail_when_refused() -> None:
    # 2 GPUs x 2 replicas; job 1 asks 2000 milli = 2 replicas, job 2 one. Time-slicing's default (off): job 1
    # takes one replica of each GPU (distributed), job 2 shares GPU 0 with it: job 1 runs at 1/2 there, so
    # both end at 200. With fail_requests_greater_than_one, job 1 is rejected at submission
    # (shared_request_too_large) and job 2 runs alone: 0..100.
    jobs = [job(1, 0.0, 100.0, 1, 2000), job(2, 0.0, 100.0, 1, 1000)]
    out = run(jobs, gpus(2), TS2)
    assert (out[1]["state"], out[1]["finish_time"], out[2]["finish_time"]) == ("finished", 200.0, 200.0)
    refused = run(jobs, gpus(2), sharing(fail_requests_greater_than_one=True))
    assert (refused[1]["state"], refused[1]["reject_reason"]) == ("rejected", "shared_request_too_large")
    assert (refused[2]["state"], refused[2]["finish_time"]) == ("finished", 100.0)


def test_mps_refuses_multi_replica_requests_unless_told_not_to() -> None:
    # MPS, R = 2 (cap 0.5 per client): the device plugin turns failRequestsGreaterThanOne on when unset, so
    # the 2-replica job is rejected. Turned off, it runs on one replica of each GPU at the cap: 0..200.
    jobs = [job(1, 0.0, 100.0, 1, 2000)]
    assert run(jobs, gpus(2), MPS2)[1]["reject_reason"] == "shared_request_too_large"
    allowed = run(jobs, gpus(2), sharing(GpuSharing.mps, fail_requests_greater_than_one=False))
    assert (allowed[1]["state"], allowed[1]["finish_time"]) == ("finished", 200.0)


def test_a_request_no_node_can_hold_keeps_its_scheduling_reason() -> None:
    # 3 replicas on a node of 1 GPU x 2 replicas: the scheduler never places it, so it never reaches
    # kubelet admission: pod_too_large, not shared_request_too_large.
    out = run([job(1, 0.0, 10.0, 1, 3000)], gpus(1), MPS2)
    assert out[1]["reject_reason"] == "pod_too_large"


def test_fail_requests_greater_than_one_without_sharing_is_refused() -> None:
    with pytest.raises(ValueError, match="fail_requests_greater_than_one"):
        policy = replace(FIFO, fail_requests_greater_than_one=True)
        simulate(jobs_frame([job(1, 0.0, 1.0, 1, 1000)]), gpus(1), policy)
