"""Nominated nodes: while a preemptor's victims terminate, lower-priority pods cannot take its room.

Rules: docs/engine/preemption.md "Nominated nodes" (kube-scheduler's nominatedNodeName and
``RunFilterPluginsWithNominatedPods``). Hand-computed scenarios, checked on the engine and its
reference twin, and the case that never ended before the rule was modelled.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import polars as pl
import pytest
from tests.reference.simulator import simulate as reference_simulate
from tests.reference.strategies import PREEMPT_VARIANTS, jobs_frame, nodes_frame
from tests.test_differential import assert_agree

from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import Backfill, Policy, Preemption, QueueOrder

KUBE = PREEMPT_VARIANTS["kube-default+preempt"]  # pod by pod, grace 2 s
GANG = PREEMPT_VARIANTS["gang-binpack+preempt"]
BIG = 2**31 - 1


def job(
    job_id: int, submit: float, duration: float, milli: int, priority: int, cpu: int = 0
) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "submit_time": submit,
        "duration": duration,
        "num_pods": 1,
        "gpu_milli": milli,
        "cpu_milli": cpu,
        "priority": priority,
    }


def starts(rows: list[dict[str, Any]], policy: Policy) -> list[float | None]:
    """Each job's first start on one 4-GPU node, from the engine and the reference (which must agree)."""
    jobs = jobs_frame(rows)
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 4}])
    engine = simulate(jobs, nodes, policy, debug=True).jobs.sort("job_id")["start_time"].to_list()
    twin = reference_simulate(jobs, nodes, policy, debug=True).jobs.sort("job_id")["start_time"].to_list()
    assert engine == twin
    return engine


@pytest.mark.parametrize("policy", [KUBE, GANG], ids=lambda p: p.name)
def test_a_lower_priority_pod_waits_while_the_preemptor_holds_a_nomination(policy: Policy) -> None:
    """One 4-GPU node. A (priority 0, 3 GPUs) runs; H (priority 10, 2 GPUs) arrives at t=5, evicts A
    (grace 10 s) and is nominated to the node. L (priority 0, 1 GPU) arrives at t=6: one GPU is free,
    but free 1 - nominated 2 < 1, so L waits. At t=15 A's GPUs come back: H starts, then L (queued
    before the requeued A) on one of the two left; A waits for 3 GPUs until H ends at t=115.
    Without the nomination L would take the free GPU at t=6."""
    rows = [job(1, 0.0, 1000.0, 3000, 0), job(2, 5.0, 100.0, 2000, 10), job(3, 6.0, 50.0, 1000, 0)]
    pol = replace(policy, graceful_termination=10.0)
    assert starts(rows, pol) == [0.0, 15.0, 15.0]
    jobs = jobs_frame(rows)
    replay = simulate(jobs, nodes_frame([{"gpu_model": "V100", "num_gpus": 4}]), pol)
    a = replay.attempts.filter(pl.col("job_id") == 1).sort("attempt")
    assert a["start"].to_list() == [0.0, 115.0]


def test_a_higher_priority_pod_ignores_a_lower_nomination() -> None:
    """H1 (priority 5, 2 GPUs) evicts A (priority 0, 3 GPUs) at t=5 and is nominated; H2 (priority 10,
    1 GPU) arriving at t=6 outranks the nomination and takes the free GPU at once. At t=15 H1 starts on
    two of A's three GPUs."""
    rows = [job(1, 0.0, 1000.0, 3000, 0), job(2, 5.0, 100.0, 2000, 5), job(3, 6.0, 50.0, 1000, 10)]
    assert starts(rows, replace(KUBE, graceful_termination=10.0)) == [0.0, 15.0, 6.0]


def test_a_cpu_only_pod_is_not_held_back_by_a_gpu_nomination() -> None:
    """The filter checks only what the pod requests: L asks for no GPU, so H's nomination on the GPUs
    does not stop it (the node's CPU is unknown, so it never binds)."""
    rows = [job(1, 0.0, 1000.0, 3000, 0), job(2, 5.0, 100.0, 2000, 10), job(3, 6.0, 50.0, 0, 0, cpu=1000)]
    assert starts(rows, replace(KUBE, graceful_termination=10.0)) == [0.0, 15.0, 6.0]


#: The case that never ended before nominations were modelled (one 4-GPU V100 node): job 280 holds one
#: 2-GPU pod, evicts a lower-priority pod for the second, and in the same pass lower-priority pods took
#: the GPU it counted on; when the victim's grace ended it evicted again, for ever.
LIVELOCK_JOBS: list[tuple[Any, ...]] = [
    # job_id, submit, duration, pods, gpu_milli, gpu_mem_mib, cpu_milli, mem_mib, priority, gpu_models
    (156, 11.0, 0.0, 3, 1000, None, 0, 0, -5, None),
    (9999, 7.0, 7.0, 1, 1000, None, 0, 8192, -5, None),
    (4920, 27.5, 5.0, 4, 700, None, 500, 8192, -5, []),
    (280, 0.0, 17.0, 2, 2000, 0, 8000, 0, 0, None),
    (141, 4.0, 0.0, 3, 8000, 4096, 0, 1024, 0, None),
    (82, 22.5, 0.0, 1, 300, 40960, 0, 0, -5, None),
    (1000, 8.0, 10.0, 1, 300, 12000, 500, 65536, 0, None),
    (3067, 10.0, 0.0, 1, 3000, 0, 2000, 0, -5, None),
    (2151, 9.0, 0.0, 3, 700, 4096, 32000, 0, -5, None),
    (200, 3.0, 100.0, 2, 8000, 4096, 32000, 0, -5, None),
    (4253, 18.0, 0.0, 3, 2000, None, 500, 0, -5, []),
    (3902, 6.0, 0.0, 1, 100, 16384, 500, 0, 0, None),
    (288, 11.0, 0.0, 2, 4000, 40960, 2000, 0, 0, None),
    (7486, 9.0, 0.5, 8, 0, 4096, 0, 0, -5, ["A100-40GB", "A10"]),
    (4042, 8.5, 100.0, 8, 3000, 40960, 0, 0, 0, []),
    (1538, 0.0, 9.0, 1, 1000, 12000, 0, 0, 0, None),
    (2842, 22.0, 0.5, 1, 8000, 40960, 0, 0, -5, None),
    (972, 2.5, 0.0, 4, 3000, 0, 2000, 0, -5, None),
]


def test_the_preemption_case_that_never_ended_now_ends_and_agrees() -> None:
    names = ("job_id", "submit_time", "duration", "num_pods", "gpu_milli", "gpu_mem_mib", "cpu_milli")
    names += ("mem_mib", "priority", "gpu_models")
    jobs = jobs_frame([dict(zip(names, row, strict=True)) for row in LIVELOCK_JOBS])
    nodes = nodes_frame(
        [
            {
                "gpu_model": None,
                "num_gpus": 0,
                "gpu_mem_mib": 0,
                "cpu_milli": 2**31 - 1,
                "mem_mib": 2**31 - 1,
            },
            {
                "gpu_model": "V100",
                "num_gpus": 4,
                "gpu_mem_mib": 16384,
                "cpu_milli": 2**31 - 1,
                "mem_mib": 16384,
            },
        ]
    )
    # Before the rule: 26 evictions by t=60 and no end; the horizon keeps a regression finite.
    replay = assert_agree(jobs, nodes, KUBE, seed=0, sample_interval=1.0, horizon=10_000.0)
    table = replay.jobs.sort("job_id")
    assert table["preemptions"].sum() == 1  # job 9999, for job 280 at t=9
    assert table.filter(pl.col("job_id") == 280)["start_time"].item() == 11.0  # the victim's grace ends
    assert set(table["state"]) == {"finished", "rejected"}


def test_a_nomination_ending_wakes_the_next_periodic_cycle() -> None:
    """A generated case (21 jobs, its row order kept): a stale nomination's room is used at the next tick.

    Periodic cycles every 3 s, priority preemption with 30 s grace. At t=192 the last victim of job 128
    (priority 1, 6 pods) has terminated, 128 still cannot bind and nothing else starts or is evicted, so
    its nomination ends with that cycle; at the tick of t=195 jobs 2255 and 180 (priority 0), which
    128's nominated pods kept out, start. The engine counted the t=192 cycle as one that changed nothing
    and jumped over the idle ticks to the next event, starting them later.
    """
    columns = ("job_id", "submit_time", "duration", "num_pods", "gpu_milli", "gpu_mem_mib", "priority")
    columns += ("preemptible",)
    rows = [
        (2409, 4.0, 2.5, 2, 250, None, 0, True),
        (291, 132.0, 100.0, 3, 2000, None, 3, True),
        (1144, 92.0, 0.0, 3, 1000, None, 2, True),
        (2255, 35.0, 100.0, 2, 700, None, 0, True),
        (646, 105.5, 18.0, 6, 1000, None, 3, False),
        (149, 100.0, 0.0, 4, 1000, None, 3, True),
        (3515, 126.5, 100.0, 2, 250, None, 0, True),
        (199, 20.5, 2.5, 3, 3000, None, 2, False),
        (1000, 67.0, 39.0, 1, 1000, None, 3, True),
        (7553, 59.0, 23.0, 8, 300, None, 2, True),
        (180, 88.5, 100.0, 3, 500, None, 0, True),
        (4903, 6.5, 19.0, 8, 300, None, 1, True),
        (346, 13.0, 32.0, 1, 250, None, 0, True),
        (327, 9.0, 100.0, 2, 1000, None, 1, True),
        (113, 94.5, 39.0, 2, 250, 4096, 3, True),
        (3954, 92.0, 100.0, 1, 500, None, 1, True),
        (1657, 31.0, 21.0, 6, 1000, None, 0, False),
        (174, 34.0, 38.0, 3, 250, 16384, 0, True),
        (1386, 84.0, 2.5, 3, 1000, None, 2, True),
        (7454, 24.0, 15.0, 1, 250, None, 0, True),
        (128, 91.0, 0.0, 6, 700, None, 1, True),
    ]  # fmt: skip
    jobs = jobs_frame([dict(zip(columns, row, strict=True)) for row in rows])
    jobs = jobs.with_columns(
        pl.lit(0.0).alias("checkpoint_interval"), pl.lit("PreemptLowerPriority").alias("preemption_policy")
    )
    # The generated case's node ids (the rng keys of its random GPU choice) and NVLink domains.
    nodes = nodes_frame([{"gpu_model": "T4", "num_gpus": 4, "gpu_mem_mib": 16384} for _ in range(4)])
    nodes = nodes.with_columns(
        (pl.col("node_id") + 2).alias("node_id"),
        (pl.col("node_id") + 2).alias("nvlink_domain"),
        ("node-" + (pl.col("node_id") + 2).cast(pl.String)).alias("node_name"),
    )
    policy = Policy(
        name="periodic-preempt",
        queue_order=QueueOrder.priority,
        node_placement="worst_fit",
        gpu_placement="random",
        backfill=Backfill.skip,
        session_interval=3.0,
        preemption=Preemption.priority,
        candidate_nodes_percent=50,
        spread_rate_nvlink=0.5,
        spread_rate_rack=0.9,
    )
    want = assert_agree(jobs, nodes, policy, seed=42, sample_interval=25.0, max_samples=8)
    assert want is not None
    started = want.attempts.filter(pl.col("hold_start") == 195.0)["job_id"].sort().to_list()
    assert started == [180, 2255]
