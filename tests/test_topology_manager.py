"""The kubelet Topology Manager (``topology_manager``, ``cpu_manager``, ``numa_aware_scheduler``,
``backoff_limit``): engine and reference.

docs/engine/placement.md, "Kubelet Topology Manager". A node's NUMA nodes are 0..U-1 with U = 1 + the
largest ``numa_of_gpu``; its whole CPUs are split evenly over them. Per pod, the device provider (its k whole
GPUs) and, under ``cpu_manager: static``, the CPU provider (its x exclusive CPUs when cpu_milli is a positive
multiple of 1000) give a hint (M, preferred) for every NUMA mask M whose free part holds the request,
preferred when |M| is the fewest NUMA nodes whose whole capacity holds it; no request: "any NUMA,
preferred"; no hint: (none, not preferred). ``single_numa_node`` keeps the preferred one-NUMA hints only.
The merged hints (AND of masks, preferred iff all are and their masks are equal) are ranked preferred
first, then fewer NUMA nodes, then the lower mask (two not preferred: the kubelet's HintMerger rule).
``best_effort`` admits every pod, ``restricted`` and ``single_numa_node`` only a preferred best hint; the GPUs
(and exclusive CPUs) come from the best mask's NUMA nodes first. The scheduler places a gang NUMA-blind; a
rejected pod undoes the whole placement, the job leaves the queue and comes back after min(10 x 2^(f-1), 600)
s (f = its admission failures), or ends ``failed`` once f > ``backoff_limit``.
``numa_aware_scheduler`` (single_numa_node only) filters nodes by one NUMA node holding the pod, so the
kubelet never rejects, and rejects at arrival a job no NUMA node holds even empty (``numa_too_large``).

Scenario tests run on both the numba engine and the plain-Python reference (``on_both``). Unless said
otherwise the node is one of 8 GPUs over 2 NUMA nodes (GPUs 0-3 on NUMA 0, 4-7 on NUMA 1) with 64000
milli-CPU (32 CPUs per NUMA node), unknown memory; jobs are one pod of whole GPUs; the policy is FIFO gang
scheduling, first fit, backfill skip, ``requeue: back``. The hypothesis tests replay generated clusters (NUMA
layouts of 1-4 nodes) and traces on both.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import polars as pl
import pytest
import tests.reference.simulator as reference
from hypothesis import event, given
from hypothesis import strategies as st
from tests.reference.draws import draws
from tests.reference.strategies import CLASSIC_SCORERS, jobs_frame, nodes_frame, sample_intervals, seeds
from tests.test_differential import assert_agree

from gpureplay.errors import InputError
from gpureplay.replay.simulate import Replay
from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.schedulers.policy import (
    Backfill,
    CpuManager,
    GangMode,
    GpuSharing,
    MigStrategy,
    NodeTies,
    Policy,
    Preemption,
    QueueOrder,
    Requeue,
    TopologyAware,
    TopologyManager,
)
from gpureplay.traces.schema import UNKNOWN_CAPACITY

IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = reference.simulate


on_both = pytest.mark.usefixtures("implementation")

#: FIFO gang scheduling, first fit, backfill skip, requeue back; the Topology Manager off.
BASE = Policy(name="tm-test", queue_order=QueueOrder.fifo, gang=GangMode.gang, backfill=Backfill.skip)
SINGLE = replace(BASE, topology_manager=TopologyManager.single_numa_node)
RESTRICTED = replace(BASE, topology_manager=TopologyManager.restricted)
BEST_EFFORT = replace(BASE, topology_manager=TopologyManager.best_effort)
#: The back-offs after failures 1, 2, ...: min(10 x 2^(f-1), 600) s.
BACKOFFS = [10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 600.0, 600.0, 600.0, 600.0]
#: When failure f + 1 happens if every try fails: 0, 10, 30, 70, 150, 310, 630, 990, 1350, 1710.
TRIES = [sum(BACKOFFS[:f]) for f in range(len(BACKOFFS))]


def node(
    gpus: int = 8, numa: list[int] | None = None, cpu_milli: int = 64000, **extra: Any
) -> dict[str, Any]:
    """A V100 node; ``numa``: its ``numa_of_gpu`` (default: GPUs split evenly over 2 NUMA nodes)."""
    if numa is None:
        numa = [i * 2 // gpus for i in range(gpus)]
    return {"gpu_model": "V100", "num_gpus": gpus, "numa_of_gpu": numa, "cpu_milli": cpu_milli, **extra}


def frame(nodes: list[dict[str, Any]]) -> pl.DataFrame:
    """The validated nodes table with each row's ``numa_of_gpu`` (None: a null list)."""
    table = nodes_frame([{k: v for k, v in row.items() if k != "numa_of_gpu"} for row in nodes])
    lists = [row.get("numa_of_gpu") for row in nodes]
    return table.with_columns(pl.Series("numa_of_gpu", lists, dtype=pl.List(pl.Int8())))


def job(
    job_id: int, submit: float, duration: float, gpus: int = 1, pods: int = 1, cpu: int = 0, **extra: Any
) -> dict[str, Any]:
    """A job of ``pods`` pods of ``gpus`` whole GPUs and ``cpu`` milli-CPU each."""
    return {
        "job_id": job_id,
        "submit_time": submit,
        "duration": duration,
        "num_pods": pods,
        "gpu_milli": 1000 * gpus,
        "cpu_milli": cpu,
        **extra,
    }


def run(jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], policy: Policy, **kw: Any) -> Replay:
    kw.setdefault("sample_interval", 10.0)
    return simulate(jobs_frame(jobs), frame(nodes), policy, debug=True, **kw)


def replay(
    jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], policy: Policy, **kw: Any
) -> dict[int, dict[str, Any]]:
    return {r["job_id"]: r for r in run(jobs, nodes, policy, **kw).jobs.iter_rows(named=True)}


def outcome(row: dict[str, Any]) -> tuple[str, float | None, int]:
    """(state, start_time, admission_failures)."""
    return (row["state"], row["start_time"], row["admission_failures"])


#: The split state: job 1 (3 GPUs, 0-``free_at``) takes NUMA 0's GPUs 0-2 (single_numa_node and restricted:
#: the preferred {0} first; best_effort the same hint), job 2 (3 GPUs, 0-5000) NUMA 1's 4-6 ({0} has one free
#: GPU): one free GPU on each NUMA node (3 and 7).
def split(free_at: float) -> list[dict[str, Any]]:
    return [job(1, 0.0, free_at, gpus=3), job(2, 0.0, 5000.0, gpus=3)]


def test_backoff_table() -> None:
    assert [reference.backoff_seconds(f) for f in range(1, 11)] == BACKOFFS
    assert TRIES[:9] == [0.0, 10.0, 30.0, 70.0, 150.0, 310.0, 630.0, 1230.0, 1830.0]


# --------------------------------------------------------------------------------------------------
# single_numa_node: the kubelet rejects what the scheduler placed; the Job controller backs off
# --------------------------------------------------------------------------------------------------


@on_both
def test_single_numa_node_rejects_until_a_numa_node_holds_the_pod() -> None:
    # Job 3 (2 GPUs) at 0: the scheduler sees 2 free GPUs (3 and 7) and places it; its device hints: {0}
    # and {1} hold 1 GPU each (no hint), {0, 1} holds 2, not preferred (NUMA 0 alone could hold 2):
    # single_numa_node keeps nothing -> rejected. Tries at 0, 10, 30, 70 fail (back-offs 10, 20, 40, 80).
    # Job 1 ends at 100 (GPUs 0-2 free: NUMA 0 holds 4); job 3 comes back at 150 and starts, on NUMA 0.
    out = replay([*split(100.0), job(3, 0.0, 10.0, gpus=2)], [node()], SINGLE)
    assert outcome(out[3]) == ("finished", 150.0, 4)
    assert out[3]["finish_time"] == 160.0
    assert out[3]["pending_time"] == 150.0  # the wait goes on through the back-offs
    assert out[3]["attempts"] == 1  # a rejected placement is no attempt
    assert [outcome(out[j]) for j in (1, 2)] == [("finished", 0.0, 0), ("finished", 0.0, 0)]


@on_both
def test_single_numa_node_fails_after_backoff_limit_plus_one_failures() -> None:
    # As above, but job 1 holds NUMA 0 until 1000: tries at 0, 10, 30, 70, 150, 310, 630 all fail; the 7th
    # failure passes backoff_limit 6 -> failed at 630 (start, finish and wait null).
    result = run([*split(1000.0), job(3, 0.0, 10.0, gpus=2)], [node()], SINGLE, sample_interval=5.0)
    out = {r["job_id"]: r for r in result.jobs.iter_rows(named=True)}
    assert outcome(out[3]) == ("failed", None, 7)
    assert (out[3]["finish_time"], out[3]["pending_time"], out[3]["reject_reason"]) == (None, None, None)
    assert out[3]["attempts"] == 0
    # A job backing off is not in the queue: at 5 (between the first two tries) nothing is pending.
    at = {r["time"]: r for r in result.timeline.iter_rows(named=True)}
    assert (at[5.0]["pending_jobs"], at[5.0]["running_jobs"]) == (0, 2)
    assert at[0.0]["allocated_gpus"] == 6  # the rejected placement holds nothing


@on_both
@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # restricted: the only hint {0, 1} is not preferred (one NUMA node could hold 2 GPUs) -> rejected.
        (RESTRICTED, ("finished", 150.0, 4)),
        # best_effort admits it at once (GPUs 3 and 7).
        (BEST_EFFORT, ("finished", 0.0, 0)),
        (SINGLE, ("finished", 150.0, 4)),
        # none: no NUMA is read.
        (BASE, ("finished", 0.0, 0)),
    ],
    ids=["restricted", "best_effort", "single_numa_node", "none"],
)
def test_split_free_gpus_by_policy(policy: Policy, expected: tuple[str, float, int]) -> None:
    out = replay([*split(100.0), job(3, 0.0, 10.0, gpus=2)], [node()], policy)
    assert outcome(out[3]) == expected


@on_both
@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # single_numa_node: the only device hint {0, 1} is preferred (no NUMA node holds 8), but not of one
        # NUMA node: nothing is kept -> every try fails: failed at the 7th, 630 s after the first.
        (SINGLE, ("failed", None, 7)),
        # restricted: {0, 1} is preferred (min affinity 2): admitted.
        (RESTRICTED, ("finished", 0.0, 0)),
        (BEST_EFFORT, ("finished", 0.0, 0)),
    ],
    ids=["single_numa_node", "restricted", "best_effort"],
)
def test_eight_gpu_pod(policy: Policy, expected: tuple[str, float | None, int]) -> None:
    result = run([job(1, 0.0, 10.0, gpus=8)], [node()], policy)
    row = result.jobs.row(0, named=True)
    assert outcome(row) == expected
    # Nothing else runs: the run ends at the failure (630) or at the finish (10).
    assert result.stats["end_time"] == (630.0 if expected[0] == "failed" else 10.0)


@on_both
@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (0, ("failed", None, 1)),
        (2, ("failed", None, 3)),
        (6, ("failed", None, 7)),
        # 100: job 1 frees NUMA 0 at 2000: failures at 0, 10, 30, 70, 150, 310, 630, 1230 (the back-off
        # capped at 600 from the 7th), 1830; back at 2430: admitted.
        (100, ("finished", 2430.0, 9)),
    ],
)
def test_backoff_limit(limit: int, expected: tuple[str, float | None, int]) -> None:
    policy = replace(SINGLE, backoff_limit=limit)
    result = run([*split(2000.0), job(3, 0.0, 10.0, gpus=2)], [node()], policy)
    out = {r["job_id"]: r for r in result.jobs.iter_rows(named=True)}
    assert outcome(out[3]) == expected
    assert TRIES[8] + BACKOFFS[8] == 2430.0


# --------------------------------------------------------------------------------------------------
# The queue after a back-off: requeue back puts it behind the jobs that came meanwhile
# --------------------------------------------------------------------------------------------------


@on_both
@pytest.mark.parametrize(
    ("requeue", "expected"),
    [
        # back: job 3 re-enters at 150 with key 150, behind job 4 (4 GPUs, submitted at 120, waiting: 2
        # GPUs free). Head of line: job 4 does not fit, so job 3 is not tried (no failure). Job 1 ends at 200:
        # job 4 starts (NUMA 0), ends at 210; job 3 then starts (NUMA 0), with 4 failures.
        (Requeue.back, ("finished", 210.0, 4)),
        # original: job 3 keeps its key 0, ahead of job 4: at 150 it is placed (GPUs 3 and 7) and rejected
        # (failure 5, back at 310); job 4 then blocks until 200, runs to 210; job 3 starts at 310.
        (Requeue.original, ("finished", 310.0, 5)),
    ],
)
def test_backed_off_job_requeues_by_the_requeue_rule(
    requeue: Requeue, expected: tuple[str, float, int]
) -> None:
    policy = replace(SINGLE, backfill=Backfill.none, requeue=requeue, backoff_limit=100)
    jobs = [*split(200.0), job(3, 0.0, 10.0, gpus=2), job(4, 120.0, 10.0, gpus=4)]
    out = replay(jobs, [node()], policy)
    assert outcome(out[3]) == expected
    assert outcome(out[4]) == ("finished", 200.0, 0)


@on_both
def test_a_rejected_job_does_not_block_the_head_of_line_cycle() -> None:
    # backfill none: job 3 is placed and rejected at 0; it left the queue, so job 4 (1 GPU) behind it starts
    # at 0 (on GPU 3, NUMA 0: the lower of the preferred {0}, {1}).
    policy = replace(SINGLE, backfill=Backfill.none)
    out = replay([*split(100.0), job(3, 0.0, 10.0, gpus=2), job(4, 0.0, 10.0)], [node()], policy)
    assert outcome(out[4]) == ("finished", 0.0, 0)
    assert out[3]["admission_failures"] >= 1


# --------------------------------------------------------------------------------------------------
# Which GPUs and CPUs the kubelet takes: the best hint's NUMA nodes first
# --------------------------------------------------------------------------------------------------


@on_both
@pytest.mark.parametrize("policy", [RESTRICTED, SINGLE], ids=["restricted", "single_numa_node"])
def test_gpus_follow_the_hint_not_the_lowest_index(policy: Policy) -> None:
    # Job 1 (3 GPUs) takes NUMA 0's GPUs 0-2. Job 2 (2 GPUs): {0} holds 1, {1} holds 4 (preferred) -> GPUs
    # 4, 5 (the lowest indexes would be 3, 4). Job 3 (3 GPUs): NUMA 0 has GPU 3, NUMA 1 GPUs 6, 7: only {0, 1}
    # holds 3, not preferred -> rejected at 0, 10, 30, 70; jobs 1 and 2 end at 100; back at 150: admitted.
    # (Had job 2 taken GPUs 3, 4, NUMA 1 would hold 3 and job 3 would start at 0.)
    jobs = [job(1, 0.0, 100.0, gpus=3), job(2, 0.0, 100.0, gpus=2), job(3, 0.0, 10.0, gpus=3)]
    out = replay(jobs, [node()], policy)
    assert outcome(out[3]) == ("finished", 150.0, 4)


@on_both
def test_gpus_follow_the_numa_layout_not_the_index_order() -> None:
    # numa_of_gpu [1, 1, 0, 0, 1, 0]: NUMA 0 = GPUs 2, 3, 5; NUMA 1 = GPUs 0, 1, 4. Job 1 (2 GPUs): {0} first
    # -> GPUs 2, 3. Job 2 (1 GPU): {0} -> GPU 5. Job 3 (3 GPUs): NUMA 1 holds 3 -> admitted at 0. (Lowest
    # indexes would leave NUMA 1 with 0 free GPUs.)
    layout = node(6, numa=[1, 1, 0, 0, 1, 0])
    jobs = [job(1, 0.0, 100.0, gpus=2), job(2, 0.0, 100.0), job(3, 0.0, 10.0, gpus=3)]
    out = replay(jobs, [layout], SINGLE)
    assert outcome(out[3]) == ("finished", 0.0, 0)


def cpu_jobs(cpu: int) -> list[dict[str, Any]]:
    # Job 1: 3 GPUs + 22 CPUs: {0} -> GPUs 0-2 and 22 exclusive CPUs of NUMA 0 (10 left). Job 2: 3 GPUs + 2
    # CPUs: {1} -> GPUs 4-6, 2 CPUs of NUMA 1 (30 left). Left: GPU 3 (NUMA 0, 10 CPUs), GPU 7 (NUMA 1, 30).
    # Job 3 (1 GPU + ``cpu``, 0-100). Job 1 ends at 50 (NUMA 0: GPUs 0-2 free again). Job 4 (4 GPUs) at 60.
    return [
        job(1, 0.0, 50.0, gpus=3, cpu=22000),
        job(2, 0.0, 1000.0, gpus=3, cpu=2000),
        job(3, 0.0, 100.0, gpus=1, cpu=cpu),
        job(4, 60.0, 10.0, gpus=4),
    ]


@on_both
@pytest.mark.parametrize(
    ("cpu_manager", "cpu", "job4"),
    [
        # static, 20 CPUs: CPU hints {1} (30 free; preferred) and {0, 1}; device hints {0}, {1}: merged {1}
        # preferred -> GPU 7 on NUMA 1. At 60 NUMA 0 holds 4 free GPUs: job 4 starts at once.
        (CpuManager.static, 20000, ("finished", 60.0, 0)),
        # 20.5 CPUs are not whole: shared pool, no CPU hint -> {0} -> GPU 3. At 60 NUMA 0 has 3 free, NUMA 1
        # 1: job 4 is rejected at 60, 70, 90; job 3 ends at 100; back at 130: admitted.
        (CpuManager.static, 20500, ("finished", 130.0, 3)),
        # cpu_manager none: no CPU hint either.
        (CpuManager.none, 20000, ("finished", 130.0, 3)),
    ],
    ids=["static", "static-not-whole", "none"],
)
def test_exclusive_cpus_align_the_gpu(
    cpu_manager: CpuManager, cpu: int, job4: tuple[str, float, int]
) -> None:
    out = replay(cpu_jobs(cpu), [node()], replace(SINGLE, cpu_manager=cpu_manager))
    assert outcome(out[3]) == ("finished", 0.0, 0)
    assert outcome(out[4]) == job4


@on_both
def test_exclusive_cpus_reject_when_no_numa_node_has_them() -> None:
    # static: job 1 (1 GPU + 20 CPUs) takes NUMA 0 (GPU 0, 20 CPUs; 12 left). Job 2 (1 GPU + 20 CPUs): NUMA 0
    # has 12, NUMA 1 32: {1} -> admitted. Job 3 (1 GPU + 20 CPUs): 12 and 12 free: no one NUMA node -> CPU
    # hint {0, 1} only, not preferred -> rejected until job 1 ends at 100: back at 150 (tries 0, 10, 30, 70).
    jobs = [job(1, 0.0, 100.0, cpu=20000), job(2, 0.0, 1000.0, cpu=20000), job(3, 0.0, 10.0, cpu=20000)]
    policy = replace(SINGLE, cpu_manager=CpuManager.static)
    out = replay(jobs, [node()], policy)
    assert outcome(out[2]) == ("finished", 0.0, 0)
    assert outcome(out[3]) == ("finished", 150.0, 4)
    # best_effort admits job 3 at once: its 20 CPUs come from NUMA 0 (12), then NUMA 1 (8).
    out = replay(jobs, [node()], replace(policy, topology_manager=TopologyManager.best_effort))
    assert outcome(out[3]) == ("finished", 0.0, 0)


@on_both
@pytest.mark.parametrize(("cpu", "expected"), [(8000, ("failed", None, 7)), (8500, ("finished", 0.0, 0))])
def test_restricted_rejects_eight_gpus_with_exclusive_cpus(
    cpu: int, expected: tuple[str, float | None, int]
) -> None:
    # restricted, static: an 8-GPU pod's only device hint is {0, 1} (preferred: min affinity 2); 8 exclusive
    # CPUs give {0}, {1} (preferred) and {0, 1} (not). {0, 1} & {0} = {0} is not preferred (the masks
    # differ), nor is {0, 1} & {0, 1} (the CPU hint is not): no preferred hint -> rejected every time (failed
    # after 7).
    # 8.5 CPUs run on the shared pool: no CPU hint -> {0, 1} preferred: admitted.
    out = replay(
        [job(1, 0.0, 10.0, gpus=8, cpu=cpu)], [node()], replace(RESTRICTED, cpu_manager=CpuManager.static)
    )
    assert outcome(out[1]) == expected


@on_both
def test_cpu_only_exclusive_pod_is_aligned_too() -> None:
    # static: a GPU-less pod of 40 CPUs on a node of 32 CPUs per NUMA node: the CPU hint {0, 1} is
    # preferred (min affinity 2) but not of one NUMA node -> single_numa_node fails it (7 failures);
    # restricted admits it.
    jobs = [job(1, 0.0, 10.0, gpus=0, cpu=40000)]
    out = replay(jobs, [node()], replace(SINGLE, cpu_manager=CpuManager.static))
    assert outcome(out[1]) == ("failed", None, 7)
    out = replay(jobs, [node()], replace(RESTRICTED, cpu_manager=CpuManager.static))
    assert outcome(out[1]) == ("finished", 0.0, 0)


@on_both
def test_unknown_cpu_capacity_never_constrains() -> None:
    # CPU capacity unknown: every NUMA node has unbounded CPUs; a 200-CPU exclusive pod is aligned with its
    # GPU.
    jobs = [job(1, 0.0, 10.0, gpus=4, cpu=200000), job(2, 0.0, 10.0, gpus=4, cpu=200000)]
    policy = replace(SINGLE, cpu_manager=CpuManager.static)
    out = replay(jobs, [node(cpu_milli=UNKNOWN_CAPACITY)], policy)
    assert [outcome(out[j]) for j in (1, 2)] == [("finished", 0.0, 0)] * 2


@on_both
def test_null_numa_list_is_one_numa_node() -> None:
    # numa_of_gpu null: one NUMA node, which holds all 8 GPUs: single_numa_node admits an 8-GPU pod.
    out = replay([job(1, 0.0, 10.0, gpus=8)], [{**node(), "numa_of_gpu": None}], SINGLE)
    assert outcome(out[1]) == ("finished", 0.0, 0)


@on_both
def test_gang_pods_are_admitted_on_the_state_the_earlier_ones_left() -> None:
    # A gang of 2 pods of 3 GPUs on one empty node: pod 0 takes NUMA 0's GPUs 0-2 ({0}), pod 1 then sees 1
    # free on NUMA 0 and 4 on NUMA 1 -> {1}: both admitted.
    out = replay([job(1, 0.0, 10.0, gpus=3, pods=2)], [node()], SINGLE)
    assert outcome(out[1]) == ("finished", 0.0, 0)
    # 2 pods of 3 GPUs on a node of 3 NUMA nodes of 2 GPUs each: no one NUMA node ever holds a pod.
    three = node(6, numa=[0, 0, 1, 1, 2, 2])
    out = replay([job(1, 0.0, 10.0, gpus=3, pods=2)], [three], SINGLE)
    assert outcome(out[1]) == ("failed", None, 7)


@on_both
def test_one_rejected_pod_undoes_the_whole_gang() -> None:
    # Node 0 (8 GPUs) holds the split state (jobs 1, 2). Node 1: 4 T4s, 2 per NUMA node. Job 3: 3 pods of 2
    # GPUs (any model), first fit: pod 0 on node 0 (its 2 free GPUs), pods 1 and 2 on node 1 (one per NUMA
    # node: admitted). Node 0's kubelet rejects pod 0 -> the whole gang is undone: node 1 stays free, so job 4
    # (2 pods of 2 T4s, submitted at 5) starts at 5.
    jobs = [
        *split(100.0),
        job(3, 0.0, 10.0, gpus=2, pods=3),
        job(4, 5.0, 10.0, gpus=2, pods=2, gpu_models=["T4"]),
    ]
    out = replay(jobs, [node(), node(4, gpu_model="T4")], SINGLE)
    assert outcome(out[4]) == ("finished", 5.0, 0)
    assert out[3]["admission_failures"] >= 1


# --------------------------------------------------------------------------------------------------
# numa_aware_scheduler: the scheduler's filter keeps the kubelet from rejecting
# --------------------------------------------------------------------------------------------------

NUMA_AWARE = replace(SINGLE, numa_aware_scheduler=True)


@on_both
@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # The filter skips node 0 (no NUMA node holds 2 free GPUs) and takes node 1 (NUMA 0: GPUs 0, 1).
        (NUMA_AWARE, ("finished", 0.0, 0)),
        # Unaware, first fit places it on node 0 every time: rejected until failed at 630.
        (SINGLE, ("failed", None, 7)),
    ],
    ids=["aware", "unaware"],
)
def test_numa_aware_scheduler_skips_the_node_the_kubelet_would_reject(
    policy: Policy, expected: tuple[str, float | None, int]
) -> None:
    out = replay([*split(1000.0), job(3, 0.0, 10.0, gpus=2)], [node(), node(4)], policy)
    assert outcome(out[3]) == expected


@on_both
def test_numa_aware_gang_counts_pods_per_numa_node() -> None:
    # Node 0 in the split state (one free GPU per NUMA node), node 1 (4 GPUs, 2 per NUMA node) empty. Job 3:
    # 3 pods of 2 GPUs. The usual fit holds 1 + 2 = 3 pods, but per NUMA node only 0 + 2: the gang waits
    # (no admission failure) until job 1 ends at 100 (node 0's NUMA 0: 4 free -> 2 pods).
    jobs = [*split(100.0), job(3, 0.0, 10.0, gpus=2, pods=3)]
    out = replay(jobs, [node(), node(4)], NUMA_AWARE)
    assert outcome(out[3]) == ("finished", 100.0, 0)
    assert out[3]["nodes_spanned"] == 2


@on_both
def test_numa_aware_filter_counts_exclusive_cpus() -> None:
    # static: node 0's NUMA nodes have 4 GPUs and 4 CPUs each (8000 milli); node 1: one T4 on one NUMA node of
    # 64 CPUs. Job 1 (1 GPU + 8 CPUs, any model): no NUMA node of node 0 has 8 CPUs -> node 1 (no failure), so
    # job 2 (a T4) waits for it until 10.
    policy = replace(NUMA_AWARE, cpu_manager=CpuManager.static)
    nodes = [node(cpu_milli=8000), node(1, numa=[0], gpu_model="T4")]
    out = replay([job(1, 0.0, 10.0, cpu=8000), job(2, 0.0, 10.0, gpu_models=["T4"])], nodes, policy)
    assert outcome(out[1]) == ("finished", 0.0, 0)
    assert outcome(out[2]) == ("finished", 10.0, 0)


@on_both
@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"gpus": 8}, "numa_too_large"),  # no NUMA node holds 8 GPUs
        ({"gpus": 4}, None),  # NUMA 0 of the node holds 4
        ({"gpus": 1, "cpu": 40000}, "numa_too_large"),  # 40 exclusive CPUs: 32 per NUMA node
        ({"gpus": 1, "cpu": 40500}, None),  # not whole CPUs: the shared pool
        ({"gpus": 9}, "pod_too_large"),  # the earlier reasons first
    ],
)
def test_numa_too_large_at_arrival(spec: dict[str, int], reason: str | None) -> None:
    policy = replace(NUMA_AWARE, cpu_manager=CpuManager.static)
    for implementation in IMPLEMENTATIONS.values():
        jobs = jobs_frame([job(1, 0.0, 10.0, **spec)])
        row = implementation(jobs, frame([node()]), policy, debug=True).jobs.row(0, named=True)
        assert row["reject_reason"] == reason
        assert row["state"] == ("rejected" if reason else "finished")


@on_both
def test_numa_too_large_counts_the_whole_gang() -> None:
    # [Rejection at arrival] 6: "the empty cluster cannot hold the job's pods one NUMA node each". Job 1: 3
    # pods of 3 GPUs on node 0 (4 + 4 GPUs) and node 1 (2 + 2): each NUMA node of node 0 holds one pod, node 1
    # none, so the empty cluster holds 2 of its 3 pods: rejected. Job 2 (2 pods) fits: it runs.
    jobs = [job(1, 0.0, 10.0, gpus=3, pods=3), job(2, 0.0, 10.0, gpus=3, pods=2)]
    out = replay(jobs, [node(), node(4)], NUMA_AWARE, horizon=100.0)
    assert (out[1]["state"], out[1]["reject_reason"], out[1]["admission_failures"]) == (
        "rejected",
        "numa_too_large",
        0,
    )
    assert outcome(out[2]) == ("finished", 0.0, 0)


def test_numa_too_large_only_under_the_numa_aware_scheduler() -> None:
    # Unaware, an 8-GPU pod is not rejected at arrival: it fails at the kubelet (7 failures).
    for implementation in IMPLEMENTATIONS.values():
        out = implementation(jobs_frame([job(1, 0.0, 10.0, gpus=8)]), frame([node()]), SINGLE, debug=True)
        assert outcome(out.jobs.row(0, named=True)) == ("failed", None, 7)


# --------------------------------------------------------------------------------------------------
# Refused settings
# --------------------------------------------------------------------------------------------------

REFUSED: dict[str, tuple[Policy, str]] = {
    "pod_by_pod": (
        replace(SINGLE, gang=GangMode.pod_by_pod, queue_order=QueueOrder.priority),
        "topology_manager",
    ),
    "easy": (replace(RESTRICTED, backfill=Backfill.easy), "topology_manager"),
    "preemption": (replace(BEST_EFFORT, preemption=Preemption.priority), "topology_manager"),
    "time_slicing": (replace(SINGLE, gpu_sharing=GpuSharing.time_slicing, replicas=4), "topology_manager"),
    "mig": (replace(SINGLE, mig_strategy=MigStrategy.single), "topology_manager"),
    "aware-best_effort": (replace(BEST_EFFORT, numa_aware_scheduler=True), "numa_aware_scheduler"),
    "aware-restricted": (replace(RESTRICTED, numa_aware_scheduler=True), "numa_aware_scheduler"),
    "aware-none": (replace(BASE, numa_aware_scheduler=True), "numa_aware_scheduler"),
    "aware-tas": (replace(NUMA_AWARE, topology_aware=TopologyAware.kueue), "numa_aware_scheduler"),
    "aware-random": (replace(NUMA_AWARE, node_placement="random"), "node_placement"),
    "aware-ties": (replace(NUMA_AWARE, node_ties=NodeTies.random), "node_ties"),
    "static-none": (replace(BASE, cpu_manager=CpuManager.static), "cpu_manager"),
    "backoff-none": (replace(BASE, backoff_limit=3), "backoff_limit"),
    "backoff-negative": (replace(SINGLE, backoff_limit=-1), "backoff_limit"),
    "backoff-too-many": (replace(SINGLE, backoff_limit=10_001), "backoff_limit"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_settings(name: str) -> None:
    policy, key = REFUSED[name]
    jobs, nodes = jobs_frame([job(1, 0.0, 10.0)]), frame([node()])
    with pytest.raises(InputError, match=re.escape(f"scheduler.{key}")):
        engine_simulate(jobs, nodes, policy)
    with pytest.raises(ValueError, match=key):
        reference.simulate(jobs, nodes, policy)


@pytest.mark.parametrize("policy", [SINGLE, RESTRICTED, BEST_EFFORT], ids=lambda p: p.topology_manager.name)
def test_fractional_gpus_are_refused(policy: Policy) -> None:
    # Row 2 asks half a GPU: an input error naming the jobs column gpu_milli and the row.
    jobs = jobs_frame([job(1, 0.0, 10.0), {**job(2, 0.0, 10.0), "gpu_milli": 500}])
    with pytest.raises(InputError, match="gpu_milli") as info:
        engine_simulate(jobs, frame([node()]), policy)
    assert (info.value.problems[0].row, info.value.problems[0].column) == (2, "gpu_milli")
    with pytest.raises(ValueError, match=r"row 2 .*gpu_milli"):
        reference.simulate(jobs, frame([node()]), policy)
    # Without a Topology Manager the same trace runs.
    for implementation in IMPLEMENTATIONS.values():
        assert implementation(jobs, frame([node()]), BASE).jobs["state"].to_list() == ["finished"] * 2


def test_more_than_eight_numa_nodes_are_refused() -> None:
    nodes = frame([node(9, numa=list(range(9)))])
    jobs = jobs_frame([job(1, 0.0, 10.0)])
    with pytest.raises(InputError, match=re.escape("cluster.numa_per_node")):
        engine_simulate(jobs, nodes, SINGLE)
    with pytest.raises(ValueError, match="numa_per_node"):
        reference.simulate(jobs, nodes, SINGLE)
    # 8 NUMA nodes are fine; under topology_manager none no NUMA is read.
    for implementation in IMPLEMENTATIONS.values():
        assert (
            implementation(jobs, frame([node(8, numa=list(range(8)))]), SINGLE).jobs["state"][0] == "finished"
        )
        assert implementation(jobs, nodes, BASE).jobs["state"][0] == "finished"


def test_policy_fields_may_be_names() -> None:
    # The fields given as names (as a YAML file gives them) replay as the enum members do.
    named = replace(SINGLE, topology_manager="single_numa_node", cpu_manager="static")  # type: ignore[arg-type]
    members = replace(SINGLE, cpu_manager=CpuManager.static)
    jobs = cpu_jobs(20000)
    for implementation in IMPLEMENTATIONS.values():
        a = implementation(jobs_frame(jobs), frame([node()]), named).jobs
        b = implementation(jobs_frame(jobs), frame([node()]), members).jobs
        assert a.equals(b)


# --------------------------------------------------------------------------------------------------
# The reference's merge, against hand-computed hints
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("providers", "best"),
    [
        # Two preferred: fewer NUMA nodes, then the lower mask.
        ([[(0b01, True), (0b10, True), (0b11, False)], [(None, True)]], (0b01, True)),
        # Not preferred: {1} & {0, 1} = {1}, {0, 1} & {0} = {0}, {0, 1}: the narrowest hints have 1 NUMA node
        # each (B = 1): the 1-NUMA masks first, the lower: {0}.
        ([[(0b10, True), (0b11, False)], [(0b01, True), (0b11, False)]], (0b01, False)),
        # An empty AND is dropped; nothing left: all NUMA nodes, not preferred.
        ([[(0b01, True)], [(0b10, True)]], (0b11, False)),
        ([[(None, False)], [(None, True)]], (0b11, False)),
        ([[], [(None, True)]], (0b11, False)),
        # Preferred beats a narrower not-preferred hint.
        ([[(0b11, True), (0b01, False)], [(None, True)]], (0b11, True)),
        # Both providers fit either NUMA node: {0} & {0}, preferred.
        (
            [[(0b01, True), (0b10, True), (0b11, False)], [(0b01, True), (0b10, True), (0b11, False)]],
            (0b01, True),
        ),
        # The spec's example: a GPU hint {0} and a CPU hint {0, 1}, both preferred, merge to {0}, not
        # preferred.
        ([[(0b01, True)], [(0b11, True)]], (0b01, False)),
        # 8 GPUs ({0, 1} preferred) with CPUs one NUMA node holds: no merged hint is preferred; B = 2 ->
        # {0, 1}.
        ([[(0b11, True)], [(0b01, True), (0b10, True), (0b11, False)]], (0b11, False)),
    ],
)
def test_merge_hints(providers: list[list[tuple[int | None, bool]]], best: tuple[int, bool]) -> None:
    assert reference.merge_hints(providers, 2) == best


def test_merge_two_not_preferred_as_the_kubelet() -> None:
    # HintMerger: B = the largest over providers of its narrowest hint's NUMA count. Devices (3 of 4 NUMA
    # nodes' worth): narrowest 2; CPUs narrowest 1 -> B = 2: a 2-NUMA merged hint beats 1 and 3 NUMA ones.
    devices = [(0b0011, False), (0b0110, False), (0b0111, False)]
    cpus = [(0b0001, True), (0b0010, True), (0b0100, True), (0b0111, False)]
    # Merged: 0011&0001 = 0001 (1), 0011&0010 = 0010 (1), 0011&0111 = 0011 (2), 0110&0010 = 0010, 0110&0100 =
    # 0100, 0110&0111 = 0110 (2), 0111&... = 0001, 0010, 0100, 0111 (3). B = 2 -> 0011 (lower of 0011, 0110).
    assert reference.merge_hints([devices, cpus], 4) == (0b0011, False)


# --------------------------------------------------------------------------------------------------
# Generated cases: whole replays on both
# --------------------------------------------------------------------------------------------------

_CPUS = [64000, UNKNOWN_CAPACITY, 8000, 16000, 32000, 64000, 12500, UNKNOWN_CAPACITY]
_NODE_SCORERS = [s for s in CLASSIC_SCORERS if s != "random"]


@st.composite
def numa_node_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    """1-4 nodes of 2-8 GPUs (rarely none) of one or two models: NUMA layouts split evenly over 1, 2 or 4 NUMA
    nodes (as a built cluster's), drawn GPU by GPU (in any order, gaps allowed), or null; CPU capacities that
    split evenly or not, or unknown."""
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        gpus = draw(st.sampled_from([8, 4, 2, 3, 6, 8, 4, 0]))
        kind = draw(st.sampled_from(["even", "drawn", "even", "null", "even"]))
        numa: list[int] | None = None
        if kind == "even":
            count = draw(st.sampled_from([2, 1, 4, 2, 3]))
            numa = [i * count // gpus for i in range(gpus)]
        elif kind == "drawn":
            numa = draw(st.lists(st.integers(0, 3), min_size=gpus, max_size=gpus))
        rows.append(
            {
                "gpu_model": draw(st.sampled_from(["V100", "V100", "V100", "T4"])),
                "num_gpus": gpus,
                "numa_of_gpu": numa,
                "cpu_milli": draw(st.sampled_from(_CPUS)),
                "mem_mib": draw(st.sampled_from([UNKNOWN_CAPACITY, 131072])),
            }
        )
    return rows


@st.composite
def numa_cases(draw: st.DrawFn, topology: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A NUMA cluster and 1-12 overlapping jobs of whole GPUs (0-8 per pod, 1-3 pods), CPUs whole or not,
    some of one model; ``topology``: Kueue topology requests on some."""
    nodes = draw(numa_node_rows())
    # Most jobs fit some node (rejections at arrival test nothing here): GPUs and CPUs capped by the largest.
    most_gpus = max(row["num_gpus"] for row in nodes)
    most_cpu = max(row["cpu_milli"] for row in nodes)
    cpus = [c for c in (0, 8000, 1000, 2000, 0, 4000, 16000, 24000, 1500, 2500) if c <= most_cpu]
    rows = []
    ids = draw(st.lists(st.integers(0, 1000), min_size=2, max_size=12, unique=True))
    for job_id in ids:
        row = job(
            job_id,
            float(draw(st.integers(0, 40))) / 2,
            float(draw(st.sampled_from([20, 5, 10, 40, 100, 300, 0]))),
            gpus=min(most_gpus, draw(st.sampled_from([2, 1, 3, 1, 2, 4, 0, 1, 8, 2, 3]))),
            pods=draw(st.sampled_from([1, 2, 1, 1, 3, 1])),
            cpu=draw(st.sampled_from(cpus)),
            mem_mib=draw(st.sampled_from([0, 0, 8192])),
            gpu_models=draw(st.sampled_from([None, None, None, None, None, ["T4"]])),
            priority=draw(st.sampled_from([0, 0, 1])),
        )
        if topology:
            row["topology_mode"], row["topology_level"] = draw(
                st.sampled_from(
                    [(None, None), ("required", "node"), ("preferred", "rack"), ("required", "rack")]
                )
            )
        rows.append(row)
    return jobs_frame(rows), frame(nodes)


@st.composite
def contended_numa_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame]:
    """1-3 nodes of 4 or 8 GPUs over 2 NUMA nodes and 4-12 short overlapping jobs of 1-4 GPUs per pod: the
    free GPUs get split across NUMA nodes, so kubelets reject, jobs back off and come back while others
    end."""
    nodes = []
    for _ in range(draw(st.integers(1, 3))):
        gpus = draw(st.sampled_from([8, 8, 4]))
        cpu = draw(st.sampled_from([64000, 16000, UNKNOWN_CAPACITY]))
        nodes.append(node(gpus, numa=[i * 2 // gpus for i in range(gpus)], cpu_milli=cpu))
    rows = [
        job(
            job_id,
            float(draw(st.integers(0, 20))),
            float(draw(st.sampled_from([15, 5, 30, 60, 120]))),
            gpus=draw(st.sampled_from([1, 2, 3, 1, 2, 4])),
            pods=draw(st.sampled_from([1, 1, 2])),
            cpu=draw(st.sampled_from([0, 4000, 1500, 8000, 2000])),
        )
        for job_id in range(draw(st.integers(4, 12)))
    ]
    return jobs_frame(rows), frame(nodes)


@st.composite
def numa_policies(draw: st.DrawFn, manager: TopologyManager, aware: bool) -> Policy:
    """``manager`` (``aware``: with the NUMA-aware scheduler) x cpu_manager x backoff_limit in {0, 2, 6, 40},
    with a random queue order, backfill (none or skip) and depth, requeue rule, cycles, node scorer and ties,
    and (not NUMA-aware) sometimes Kueue's topology-aware placement."""
    cpu, limit = CpuManager.none, 6
    if manager is not TopologyManager.none:
        cpu = draw(st.sampled_from(list(CpuManager)))
        limit = draw(st.sampled_from([6, 40, 2, 0]))
    tas = not aware and draw(st.integers(0, 4)) == 0
    return replace(
        BASE,
        name="tm-random",
        queue_order=draw(st.sampled_from(list(QueueOrder))),
        backfill=draw(st.sampled_from([Backfill.none, Backfill.skip, Backfill.skip])),
        backfill_depth=draw(st.sampled_from([0, 0, 1, 2])),
        requeue=draw(st.sampled_from(list(Requeue))),
        session_interval=draw(st.sampled_from([0.0, 0.0, 0.5, 3.0])),
        node_placement=draw(st.sampled_from(_NODE_SCORERS if aware else list(CLASSIC_SCORERS))),
        node_ties=NodeTies.lowest_index if aware else draw(st.sampled_from(list(NodeTies))),
        topology_aware=TopologyAware.kueue if tas else TopologyAware.none,
        topology_manager=manager,
        cpu_manager=cpu,
        numa_aware_scheduler=aware,
        backoff_limit=limit,
    )


#: The generated policies' Topology Manager settings, each its own test (so each is drawn as often):
#: (topology_manager, numa_aware_scheduler).
GENERATED: dict[str, tuple[TopologyManager, bool]] = {
    "none": (TopologyManager.none, False),
    "best_effort": (TopologyManager.best_effort, False),
    "restricted": (TopologyManager.restricted, False),
    "single_numa_node": (TopologyManager.single_numa_node, False),
    "numa_aware": (TopologyManager.single_numa_node, True),
}


# Per setting (so a failure shrinks under that setting only): 15 cases each, 75 in all.
@pytest.mark.parametrize("name", sorted(GENERATED))
@draws(15)
@given(data=st.data(), contended=st.booleans(), sample_interval=sample_intervals, seed=seeds)
def test_generated_replays_agree(
    name: str, data: st.DataObject, contended: bool, sample_interval: float, seed: int
) -> None:
    policy = data.draw(numa_policies(*GENERATED[name]), label="policy")
    tas = policy.topology_aware is TopologyAware.kueue
    cases = contended_numa_cases() if contended and not tas else numa_cases(tas)
    jobs, nodes = data.draw(cases, label="case")
    horizon = data.draw(st.sampled_from([None, None, 250.0]))
    want = assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval, horizon=horizon)
    if want is not None:  # what the case exercised (pytest --hypothesis-show-statistics)
        event(f"admission failures: {'some' if want.jobs['admission_failures'].sum() else 'none'}")
        event(f"failed jobs: {'some' if 'failed' in want.jobs['state'].to_list() else 'none'}")
