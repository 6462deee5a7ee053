"""Fractional GPU sharing: HAMi, KAI Scheduler and gpushare placements worked by hand.

Each scenario places pods one by one in arrival order (packing mode: nothing departs, a pod that
fits nowhere fails at once), so every placement follows from the ones before it; the node each
pod got is the result. docs/systems.md, "HAMi", "KAI Scheduler", "gpushare-scheduler-extender"; the
engine's scorers are in ``gpureplay.engine.fit.scoring``, their twins in ``tests/reference/scoring.py``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.reference import packing as ref_packing
from tests.reference.draws import draws
from tests.reference.simulator import simulate as reference_simulate
from tests.reference.strategies import SHARING_PRESETS, cases, jobs_frame, nodes_frame, seeds
from tests.test_differential import assert_agree

from gpureplay.errors import InputError
from gpureplay.replay.packing import Packing, pack_pods
from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import GangMode, NodeTies, Policy, SharedGpuMemory
from gpureplay.schedulers.presets import preset


def pod(job_id: int, milli: int, cpu: int = 0, **extra: Any) -> dict[str, Any]:
    """A single-pod job submitted at ``job_id`` seconds (arrival order = job id order)."""
    row = {"job_id": job_id, "submit_time": float(job_id), "duration": 1.0, "num_pods": 1}
    return row | {"gpu_milli": milli, "cpu_milli": cpu} | extra


def sharing(
    node: str,
    gpu: str,
    *,
    split: int = 0,
    memory: SharedGpuMemory = SharedGpuMemory.none,
) -> Policy:
    return Policy(
        f"{node}/{gpu}",
        node_placement=node,
        gpu_placement=gpu,
        device_split_count=split,
        shared_gpu_memory=memory,
    )


def placed(rows: list[dict[str, Any]], node_rows: list[dict[str, Any]], pol: Policy) -> list[int | None]:
    """The node of each pod in arrival order (None: failed); the reference must agree."""
    jobs, nodes = jobs_frame(rows), nodes_frame(node_rows)
    result: Packing = pack_pods(jobs, nodes, pol, seed=0)
    got = result.pods.sort("arrival")["node"].to_list()
    twin = ref_packing.pack_pods(jobs, nodes, pol, seed=0)
    assert [p["node"] for p in twin.pods] == got
    return got


# Two nodes of two 10,000 MiB GPUs; HAMi's chart settings: 10 slots per GPU, memory as a percentage.
HAMI_NODES = [{"gpu_model": "V100", "num_gpus": 2, "gpu_mem_mib": 10000}] * 2
HAMI_PODS = [pod(1, 500), pod(2, 300), pod(3, 400), pod(4, 1000), pod(5, 1000)]


def test_hami_binpack_fills_the_fullest_node_and_card() -> None:
    """Node score 10 (used/slots + cores/total + memory/total) before the pod; device score with it.

    P1 (500): both nodes 0 -> node 0, GPU 0. P2 (300): node 0 = 10 (1/20 + 500/2000 + 5000/20000)
    = 5.5 against 0 -> node 0; GPU 0 = 10 ((1+1)/10 + 800/1000 + 5000/10000) = 15 (the pod's
    percentage memory scores 0), GPU 1 = 10 (1/10 + 300/1000 + 0) = 4 -> GPU 0 (200 left).
    P3 (400): node 0 = 10 (2/20 + 800/2000 + 8000/20000) = 9 -> node 0, GPU 0 is too full -> GPU 1.
    P4, P5 (whole GPUs): node 0 has none left -> node 1 twice.
    """
    pol = sharing("hami_binpack", "hami_binpack", split=10, memory=SharedGpuMemory.proportional)
    assert placed(HAMI_PODS, HAMI_NODES, pol) == [0, 0, 0, 1, 1]


def test_hami_spread_spreads_over_nodes_and_cards() -> None:
    """The lowest scores win. P1 -> node 0 GPU 0. P2: node 1 (0 against 5.5), GPU 0.
    P3 (400): node 0 = 5.5, node 1 = 10 (1/20 + 300/2000 + 3000/20000) = 3.5 -> node 1; GPU 0 =
    10 (2/10 + 700/1000 + 3000/10000) = 12, GPU 1 = 10 (1/10 + 400/1000) = 5 -> GPU 1.
    P4 (1 GPU): only node 0's GPU 1 is wholly free -> node 0. P5 finds no free GPU and fails.
    """
    pol = sharing("hami_spread", "hami_spread", split=10, memory=SharedGpuMemory.proportional)
    assert placed(HAMI_PODS, HAMI_NODES, pol) == [0, 1, 1, 0, None]


def test_the_split_count_caps_the_pods_on_one_gpu() -> None:
    """One GPU, 3 slots: the fourth 100-milli pod fails though 600 milli are free; no limit: all fit."""
    rows = [pod(j, 100) for j in range(1, 5)]
    one = [{"gpu_model": "V100", "num_gpus": 1}]
    assert placed(rows, one, sharing("best_fit", "best_fit", split=3)) == [0, 0, 0, None]
    assert placed(rows, one, sharing("best_fit", "best_fit")) == [0, 0, 0, 0]


def test_the_shared_memory_rule_books_memory_for_pods_that_name_none() -> None:
    """Two 16,000 MiB GPUs, three 300-milli pods (best fit on milli).

    ``full`` (HAMi's default: 100 % of the card): P1 takes GPU 0's memory, P2 GPU 1's, P3 fails.
    ``proportional``: 4,800 MiB each, all three share GPU 0. A pod that names its memory (P4,
    2,000 MiB) takes that under any rule: after ``full`` filled both cards it still fails; with
    ``none`` it shares GPU 0 (100 milli left, memory not booked for the others).
    """
    rows = [pod(1, 300), pod(2, 300), pod(3, 300), pod(4, 100, gpu_mem_mib=2000)]
    two = [{"gpu_model": "V100", "num_gpus": 2, "gpu_mem_mib": 16000}]
    full = sharing("best_fit", "best_fit", memory=SharedGpuMemory.full)
    assert placed(rows, two, full) == [0, 0, None, None]
    proportional = sharing("best_fit", "best_fit", memory=SharedGpuMemory.proportional)
    assert placed(rows, two, proportional) == [0, 0, 0, 0]
    assert placed(rows, two, sharing("best_fit", "best_fit")) == [0, 0, 0, 0]


def test_kai_prefers_a_node_with_a_shared_gpu_that_fits_then_the_fewest_free_gpus() -> None:
    """Node 0: 2 V100; node 1: 4 T4.

    P1 (500, T4 only) -> node 1, GPU 0 shared (3 GPUs wholly free there).
    P2 (300): node 0 has no shared GPU: -2 wholly free; node 1 fits GPU 0 (500 left):
    gpusharingorder 1000 - 3 -> node 1, although node 0 has fewer free GPUs. Plain best fit on
    milli would take node 0 (1,700 left against 3,200).
    P3 (1 GPU): no sharing bonus for whole GPUs: node 0 (2 free) against node 1 (3) -> node 0.
    """
    rows = [pod(1, 500, gpu_models=["T4"]), pod(2, 300), pod(3, 1000)]
    nodes = [{"gpu_model": "V100", "num_gpus": 2}, {"gpu_model": "T4", "num_gpus": 4}]
    assert placed(rows, nodes, sharing("kai_binpack", "best_fit")) == [1, 1, 0]
    assert placed(rows, nodes, sharing("best_fit", "best_fit")) == [1, 0, 0]


def test_kube_cpu_mem_spreads_by_cpu_and_memory() -> None:
    """kube's LeastAllocated + BalancedAllocation over CPU and memory (gpushare's node choice).

    Nodes of 8 and 16 cores, 64 GiB each. P1 (2 cores, 4 GiB): node 0: LeastAllocated
    (75 + 93) // 2 = 84, fractions (0.25, 0.0625): int((1 - 0.09375) 100) = 90 -> 174; node 1:
    (87 + 93) // 2 = 90, (0.125, 0.0625) -> 96 -> 186: node 1. P2 (1 core, 4 GiB): node 0: 87, 93
    -> 90, (0.125, 0.0625) -> 96: 186; node 1: (81 + 87) // 2 = 84, (0.1875, 0.125) -> 96: 180:
    node 0.
    """
    rows = [pod(1, 500, 2000, mem_mib=4096), pod(2, 300, 1000, mem_mib=4096)]
    nodes = [
        {"gpu_model": "V100", "num_gpus": 2, "cpu_milli": cpu, "mem_mib": 65536} for cpu in (8000, 16000)
    ]
    assert placed(rows, nodes, sharing("kube_cpu_mem", "best_fit")) == [1, 0]


def test_most_allocated_packs_gpus_cpu_and_memory_where_least_allocated_spreads() -> None:
    """kube-scheduler's MostAllocated over nvidia.com/gpu, CPU and memory + BalancedAllocation (CPU, memory).

    Node 0: 4 GPUs, node 1: 8; 32 cores and 128 GiB each. P1 (2 GPUs, 8 cores, 16 GiB): node 0:
    (2000 * 100 // 4000 = 50 + 25 + 12) // 3 = 29, fractions (0.25, 0.125): int((1 - 0.0625) 100) = 93
    -> 122; node 1: (25 + 25 + 12) // 3 = 20 + 93 = 113: node 0. P2 (the same): node 0: (100 + 50 +
    25) // 3 = 58, (0.5, 0.25) -> 87: 145; node 1 still 113: node 0. P3 (1 GPU): only node 1 fits.
    kube-default's LeastAllocated on GPUs (worst_fit) spreads: P1, P2 to node 1, P3 ties (3,000 free
    after on both) to the lowest index.
    """
    gib = 1024
    rows = [pod(1, 2000, 8000, mem_mib=16 * gib), pod(2, 2000, 8000, mem_mib=16 * gib), pod(3, 1000)]
    nodes = [
        {"gpu_model": "V100", "num_gpus": gpus, "cpu_milli": 32000, "mem_mib": 128 * gib} for gpus in (4, 8)
    ]
    assert placed(rows, nodes, sharing("most_allocated", "best_fit")) == [0, 0, 1]
    assert placed(rows, nodes, sharing("worst_fit", "best_fit")) == [1, 1, 0]
    assert preset("kube-most-allocated").node_placement == "most_allocated"


def test_gpushare_binds_to_the_gpu_with_the_least_free_memory() -> None:
    """One node, two 16,000 MiB GPUs; pods name their memory.

    P1 (700 milli, 1,000 MiB) -> GPU 0: (300, 15,000). P2 (400, 12,000) does not fit GPU 0 ->
    GPU 1: (600, 4,000). P3 (200, 1,000): least free memory after -> GPU 1 (3,000 against 14,000):
    (400, 3,000); best fit on milli would take GPU 0 (100 left). P4 (500, 500) then fits nowhere;
    after best fit on milli GPU 1 (600, 4,000) still takes it.
    """
    rows = [
        pod(1, 700, gpu_mem_mib=1000),
        pod(2, 400, gpu_mem_mib=12000),
        pod(3, 200, gpu_mem_mib=1000),
        pod(4, 500, gpu_mem_mib=500),
    ]
    two = [{"gpu_model": "V100", "num_gpus": 2, "gpu_mem_mib": 16000}]
    assert placed(rows, two, sharing("first_fit", "best_fit_memory")) == [0, 0, 0, None]
    assert placed(rows, two, sharing("first_fit", "best_fit")) == [0, 0, 0, 0]


def test_a_full_gpu_slot_makes_a_pod_wait_in_a_timed_replay() -> None:
    """Timed replay, one GPU with 2 slots: the third 100-milli pod starts when the first ends (t=10)."""
    jobs = jobs_frame(
        [
            {"job_id": j, "submit_time": float(j), "duration": 10.0, "num_pods": 1, "gpu_milli": 100}
            for j in range(3)
        ]
    )
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 1}])
    pol = replace(preset("kube-default"), name="slots", device_split_count=2)
    engine = simulate(jobs, nodes, pol, debug=True)
    twin = reference_simulate(jobs, nodes, pol, debug=True)
    for replay in (engine, twin):
        assert replay.jobs.sort("job_id")["start_time"].to_list() == [0.0, 1.0, 10.0]


@pytest.mark.parametrize("name", SHARING_PRESETS)
def test_the_sharing_presets_agree_with_the_reference(name: str) -> None:
    """Each preset on a mixed timed case (shares, whole GPUs, CPU-only pods, GPU memory, two models)."""
    rows = [
        {
            "job_id": j,
            "submit_time": float(3 * j),
            "duration": float(20 + 7 * (j % 5)),
            "num_pods": 1 + (j % 3 == 0),
            "gpu_milli": (300, 500, 1000, 0, 250, 2000)[j % 6],
            "cpu_milli": 1000 * (j % 4),
            "mem_mib": 2048 * (j % 3),
        }
        | ({"gpu_mem_mib": 6000} if j % 7 == 2 else {})
        for j in range(40)
    ]
    jobs = jobs_frame(rows)
    nodes = nodes_frame(
        [
            {"gpu_model": "V100", "num_gpus": 4, "cpu_milli": 16000, "mem_mib": 65536},
            {"gpu_model": "T4", "num_gpus": 2, "cpu_milli": 8000, "mem_mib": 32768},
            {"gpu_model": "V100", "num_gpus": 2, "cpu_milli": 32000, "mem_mib": 65536},
        ]
    )
    pol = preset(name)
    engine = simulate(jobs, nodes, pol, seed=3, debug=True)
    twin = reference_simulate(jobs, nodes, pol, seed=3, debug=True)
    columns = ["job_id", "state", "start_time", "finish_time", "nodes_spanned"]
    assert engine.jobs.sort("job_id").select(columns).equals(twin.jobs.sort("job_id").select(columns))
    assert engine.jobs["state"].to_list().count("finished") == len(rows)


def test_a_negative_split_count_is_an_input_error() -> None:
    jobs = jobs_frame([pod(1, 100)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 1}])
    with pytest.raises(InputError, match=r"scheduler\.device_split_count"):
        simulate(jobs, nodes, Policy("bad", device_split_count=-1))


def test_presets_name_the_sharing_settings() -> None:
    hami = preset("hami-binpack")
    assert (hami.device_split_count, hami.shared_gpu_memory) == (10, SharedGpuMemory.proportional)
    assert preset("hami-spread").node_placement == "hami_spread"
    assert preset("kai-shared").gang is GangMode.gang
    assert preset("gpushare").gpu_placement == "best_fit_memory"
    assert preset("gpushare").node_ties is NodeTies.random


# Generated cases under the sharing presets with few slots per GPU and each memory rule: the slot
# and memory limits bind often (the presets' own settings rarely do on small cases).
@draws(24)
@given(
    case=cases(),
    name=st.sampled_from(SHARING_PRESETS),
    split=st.sampled_from([0, 1, 2, 3]),
    memory=st.sampled_from(list(SharedGpuMemory)),
    seed=seeds,
)
def test_sharing_settings_agree_with_the_reference(
    case: tuple[pl.DataFrame, pl.DataFrame], name: str, split: int, memory: SharedGpuMemory, seed: int
) -> None:
    jobs, nodes = case
    policy = replace(preset(name), device_split_count=split, shared_gpu_memory=memory)
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=10.0)
