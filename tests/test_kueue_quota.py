"""Kueue quota admission (``scheduler.queues: kueue``): hand-computed scenarios on both simulators.

docs/systems.md, "Kueue" (kubernetes-sigs/kueue ``resource_node.go``, ``scheduler.go``, ``fair_sharing.go``);
docs/engine/queues/kueue.md, "Kueue quotas". Every scenario runs on the engine and on its reference twin.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from tests.reference.simulator import simulate as reference_simulate
from tests.reference.strategies import jobs_frame, nodes_frame

from gpureplay.errors import InputError
from gpureplay.queues.fair_share import KueueNode, kueue_drs
from gpureplay.queues.kueue_quota import (
    available,
    borrow_level,
    generated_quotas,
    manifest_quotas,
    model_columns,
    node_usage,
)
from gpureplay.queues.kueue_quota import share as kueue_share
from gpureplay.queues.manifests import read_manifests
from gpureplay.replay.simulate import Replay, simulate, warm_up
from gpureplay.results.metrics import admitted_jobs, attempt_results, job_results, run_span
from gpureplay.results.queue_summary import queue_summary
from gpureplay.schedulers.policy import (
    Backfill,
    BorrowWithinCohort,
    FairSharingStrategies,
    GangMode,
    Policy,
    Preemption,
    QueueModel,
    QueueOrder,
    QuotaSource,
    ReclaimWithinCohort,
    WithinClusterQueue,
)

RECLAIM_LOWER = ReclaimWithinCohort.lower_priority

KUEUE = Policy(
    name="kueue",
    queue_order=QueueOrder.priority,
    backfill=Backfill.skip,
    node_placement="best_fit",
    gpu_placement="best_fit",
    queues=QueueModel.kueue,
    quotas=QuotaSource.manifests,
)

CQ = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: {name}
spec:
{cohort}  queueingStrategy: {strategy}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu", "cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - name: nvidia.com/gpu
        nominalQuota: {gpus}
{limits}      - name: cpu
        nominalQuota: 1000
      - name: memory
        nominalQuota: 10Ti
"""


def cluster_queue(
    name: str,
    gpus: float,
    cohort: str | None = "research",
    strategy: str = "BestEffortFIFO",
    borrowing_limit: float | None = None,
    lending_limit: float | None = None,
) -> str:
    limits = ""
    if borrowing_limit is not None:
        limits += f"        borrowingLimit: {borrowing_limit}\n"
    if lending_limit is not None:
        limits += f"        lendingLimit: {lending_limit}\n"
    return CQ.format(
        name=name,
        cohort=f"  cohort: {cohort}\n" if cohort else "",
        strategy=strategy,
        gpus=gpus,
        limits=limits,
    )


FLAVOR = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: default-flavor
"""


def cohort(name: str, parent: str | None = None, gpus: float | None = None) -> str:
    """A Kueue ``Cohort`` manifest, nested under ``parent`` when given, with a GPU quota of its own when
    ``gpus`` is given."""
    text = f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata:\n  name: {name}\nspec:\n"
    if parent is not None:
        text += f"  parentName: {parent}\n"
    if gpus is not None:
        text += (
            '  resourceGroups:\n  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n'
            "    - name: default-flavor\n      resources:\n      - name: nvidia.com/gpu\n"
            f"        nominalQuota: {gpus}\n"
        )
    return text


def manifests(tmp_path: Path, *queues: str) -> Policy:
    path = tmp_path / "queues.yaml"
    path.write_text("---\n".join([FLAVOR, *queues]))
    return Policy(**{**KUEUE.__dict__, "manifests": str(path)})


def both(jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy, **kwargs: Any) -> list[Replay]:
    kwargs.setdefault("sample_interval", 10.0)
    return [
        simulate(jobs, nodes, policy, debug=True, **kwargs),
        reference_simulate(jobs, nodes, policy, debug=True, **kwargs),
    ]


def starts(replay: Replay) -> dict[int, float | None]:
    return dict(replay.jobs.select("job_id", "start_time").iter_rows())


def job(job_id: int, t: float, queue: str, pods: int, gpus_per_pod: int, duration: float = 100.0) -> dict:
    return {
        "job_id": job_id,
        "submit_time": t,
        "duration": duration,
        "num_pods": pods,
        "gpu_milli": gpus_per_pod * 1000,
        "queue": queue,
        "priority": 0,
    }


def test_a_borrowing_queue_has_the_references_dominant_resource_share(tmp_path: Path) -> None:
    """Kueue's own example (docs/systems.md, "Kueue"): two ClusterQueues of nominal 8 GPUs in one cohort, one
    using 12.

    At 0 team-b's 4-GPU job goes first (not borrowing), then team-a's 12-GPU job borrows 4 of team-b's
    idle GPUs: team-a's DRS = 4 x 1000 / 16 lendable = 250, team-b's 0; team-b lends the 4 GPUs.
    """
    policy = manifests(tmp_path, cluster_queue("team-a", 8), cluster_queue("team-b", 8))
    jobs = jobs_frame([job(1, 0.0, "team-a", 3, 4), job(2, 0.0, "team-b", 1, 4)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    for replay in both(jobs, nodes, policy):
        assert starts(replay) == {1: 0.0, 2: 0.0}
        first = replay.queues.filter(pl.col("time") == 0.0)
        columns = ("queue", "usage_gpu", "nominal_gpu", "borrowed_gpu", "lent_gpu", "share")
        assert first.select(columns).rows() == [
            ("team-a", 12.0, 8.0, 4.0, 0.0, 250.0),
            ("team-b", 4.0, 8.0, 0.0, 4.0, 0.0),
        ]


def test_a_lending_limit_bounds_what_the_cohort_may_borrow(tmp_path: Path) -> None:
    """team-b lends at most 2 of its 8 GPUs: team-a (nominal 8) may use 10, so its 1-GPU job waits.

    Without the lending limit the 1-GPU job starts at once (8 + 2 + 4 + 1 <= 16 GPUs).
    """
    jobs = jobs_frame([job(1, 0.0, "team-b", 1, 4), job(2, 1.0, "team-a", 5, 2), job(3, 1.0, "team-a", 1, 1)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    limited = manifests(tmp_path, cluster_queue("team-a", 8), cluster_queue("team-b", 8, lending_limit=2))
    for replay in both(jobs, nodes, limited):
        assert starts(replay) == {1: 0.0, 2: 1.0, 3: 101.0}
    unlimited = manifests(tmp_path, cluster_queue("team-a", 8), cluster_queue("team-b", 8))
    for replay in both(jobs, nodes, unlimited):
        assert starts(replay) == {1: 0.0, 2: 1.0, 3: 1.0}


def test_a_borrowing_limit_bounds_what_a_queue_takes(tmp_path: Path) -> None:
    """team-a (nominal 4, borrowingLimit 2) may use 6 GPUs of the idle cohort's 12: its second 4-GPU job
    waits for the first."""
    policy = manifests(tmp_path, cluster_queue("team-a", 4, borrowing_limit=2), cluster_queue("team-b", 8))
    jobs = jobs_frame([job(1, 0.0, "team-a", 1, 4), job(2, 0.0, "team-a", 1, 2), job(3, 0.0, "team-a", 1, 1)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    for replay in both(jobs, nodes, policy):
        # 4 + 2 = 6 = nominal + borrowingLimit: the 1-GPU job waits for the first to end.
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 100.0}


def test_strict_fifo_blocks_behind_its_head_best_effort_passes_it(tmp_path: Path) -> None:
    """One ClusterQueue of 4 GPUs, no cohort: job 1 holds 2; job 2 (3 GPUs) does not fit; job 3 (2) does.

    BestEffortFIFO sets job 2 aside and starts job 3 at 2; StrictFIFO keeps job 2 at the head: job 2
    starts when job 1 ends (100), job 3 when job 2 ends (200).
    """
    jobs = jobs_frame([job(1, 0.0, "q", 1, 2), job(2, 1.0, "q", 1, 3), job(3, 2.0, "q", 1, 2)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    best_effort = manifests(tmp_path, cluster_queue("q", 4, cohort=None))
    for replay in both(jobs, nodes, best_effort):
        assert starts(replay) == {1: 0.0, 2: 102.0, 3: 2.0}
    strict = manifests(tmp_path, cluster_queue("q", 4, cohort=None, strategy="StrictFIFO"))
    for replay in both(jobs, nodes, strict):
        assert starts(replay) == {1: 0.0, 2: 100.0, 3: 200.0}


def test_non_borrowing_heads_go_first(tmp_path: Path) -> None:
    """At 10 team-a's job 2 (would borrow team-b's 4 GPUs) and team-b's job 3 (within nominal) are heads.

    Kueue's classical iterator takes the non-borrowing head first although job 2 is first by FIFO:
    job 3 starts at 10, job 2 borrows team-b's quota once job 3 ends (110). Without quotas (gang-binpack)
    job 2 would start first and job 3 wait for it.
    """
    policy = manifests(tmp_path, cluster_queue("team-a", 4), cluster_queue("team-b", 4))
    jobs = jobs_frame(
        [job(1, 0.0, "team-a", 1, 4, 1000.0), job(2, 10.0, "team-a", 1, 4), job(3, 10.0, "team-b", 1, 4)]
    )
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    for replay in both(jobs, nodes, policy):
        assert starts(replay) == {1: 0.0, 2: 110.0, 3: 10.0}
    no_quotas = Policy(**{**KUEUE.__dict__, "queues": QueueModel.none, "quotas": QuotaSource.none})
    assert starts(simulate(jobs, nodes, no_quotas)) == {1: 0.0, 2: 10.0, 3: 110.0}


def test_a_head_that_borrows_lower_in_the_tree_goes_first_whatever_its_priority(tmp_path: Path) -> None:
    """Cohort org holds cohorts research (team-a, team-b: nominal 4 each) and ops (team-c, team-d: nominal 4
    each); two 8-GPU nodes. team-d's job 1 (4 GPUs, 1000 s) runs from 0.

    At 10 team-a's job 2 (2 pods x 4 GPUs, priority 0) and team-c's job 3 (2 x 4, priority 5) are heads; 12
    GPUs are free, so each fits alone, not both. Job 2 borrows team-b's idle 4 within research: borrowing
    level 1, research's height. Job 3 needs 8 where ops has 4 left, so it borrows from org: level 2, org's
    height. Kueue's classical iterator compares the borrowing level before the priority: job 2 starts at
    10, and job 3 when job 2 ends (110; org then has 12 left). Ordered by "borrows or not" (both do), job
    3's priority would win: job 3 at 10, job 2 at 110.
    """
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", 4, cohort="research"),
        cluster_queue("team-b", 4, cohort="research"),
        cluster_queue("team-c", 4, cohort="ops"),
        cluster_queue("team-d", 4, cohort="ops"),
        cohort("research", "org"),
        cohort("ops", "org"),
    )
    rows = [job(1, 0.0, "team-d", 1, 4, 1000.0), job(2, 10.0, "team-a", 2, 4), job(3, 10.0, "team-c", 2, 4)]
    jobs = jobs_frame([*rows[:2], {**rows[2], "priority": 5}])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    for replay in both(jobs, nodes, policy):
        assert starts(replay) == {1: 0.0, 2: 10.0, 3: 110.0}


def test_kueues_hierarchical_cohort_case_borrowing_less_is_scheduled_first(tmp_path: Path) -> None:
    """Kueue's own ``TestSchedule`` case "in a hierarchical cohort, workload borrowing less is scheduled
    first" (``pkg/scheduler/scheduler_test.go``, since v0.12.0), its CPUs as GPUs here::

                  ROOT
               /        \\
        GUARANTEED (4)   best-effort (0)
           |
        guaranteed (0)

    Workload guaranteed (4, priority 0) fits GUARANTEED's quota: borrowing level 1, that cohort's height.
    Workload best-effort (4, priority 3) borrows from ROOT: level 2, ROOT's height (its longest path down
    to a ClusterQueue), though ROOT is only one step above best-effort. Kueue admits guaranteed; best-effort
    "no longer fits after processing another workload" and starts when guaranteed ends (100). Counting the
    steps up from the ClusterQueue instead of the height, both would borrow at level 1 and best-effort's
    priority would win.
    """
    policy = manifests(
        tmp_path,
        cohort("root"),
        cohort("guaranteed", "root", gpus=4),
        cluster_queue("guaranteed", 0, cohort="guaranteed"),
        cluster_queue("best-effort", 0, cohort="root"),
    )
    jobs = jobs_frame([job(1, 0.0, "guaranteed", 1, 4), {**job(2, 0.0, "best-effort", 1, 4), "priority": 3}])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    for replay in both(jobs, nodes, policy):
        assert starts(replay) == {1: 0.0, 2: 100.0}


def test_the_borrowing_level_is_the_height_of_the_lowest_subtree_holding_it(tmp_path: Path) -> None:
    """The plain statement on an uneven tree: org holds research (holding team-a, team-b and cohort deep,
    which holds team-d) and team-c. Heights: deep 1, research 2, org 3. A request within a ClusterQueue's
    nominal quota borrows at level 0; one that research holds at 2 (also for team-d, two steps below); one
    only org holds at 3 (also for team-c, one step below it); a ClusterQueue without a cohort: 0."""
    path = tmp_path / "queues.yaml"
    path.write_text(
        "---\n".join(
            [
                FLAVOR,
                cluster_queue("team-a", 4, cohort="research"),
                cluster_queue("team-b", 4, cohort="research"),
                cluster_queue("team-c", 4, cohort="org"),
                cluster_queue("team-d", 2, cohort="deep"),
                cluster_queue("alone", 4, cohort=None),
                cohort("research", "org"),
                cohort("deep", "research", gpus=2),
            ]
        )
    )
    jobs = jobs_frame([job(1, 0.0, "team-a", 1, 1)])
    quotas = manifest_quotas(read_manifests(path), jobs, ["V100"], str(path))
    index = {name: n for n, name in enumerate(quotas.names)}
    assert [quotas.heights()[index[n]] for n in ("team-a", "deep", "research", "org")] == [0, 1, 2, 3]
    idle = [[0] * quotas.num_cluster_queues for _ in range(quotas.rows)]
    a, c, d, alone = index["team-a"], index["team-c"], index["team-d"], index["alone"]
    # Requests per quota row (one flavor: GPU, CPU, memory), in milli-GPU.
    assert [borrow_level(quotas, idle, a, (n * 1000, 0, 0)) for n in (4, 8, 12, 14)] == [
        0,
        2,  # team-b's 4, within research
        2,  # research's subtree quota: 4 + 4 + deep's 4
        3,  # beyond research's 12: org's 16
    ]
    assert borrow_level(quotas, idle, d, (4000, 0, 0)) == 1  # within deep (2 + 2)
    assert borrow_level(quotas, idle, d, (6000, 0, 0)) == 2
    assert borrow_level(quotas, idle, c, (6000, 0, 0)) == 3
    assert borrow_level(quotas, idle, alone, (4000, 0, 0)) == 0
    busy = [row[:] for row in idle]
    busy[0][index["team-b"]] = 4000  # research still holds team-a's 8 (4 + 8 = 12) ...
    assert borrow_level(quotas, busy, a, (8000, 0, 0)) == 2
    busy[0][d] = 4000  # ... and with deep's 4 used too, only org does (8 + 8 = 16)
    assert borrow_level(quotas, busy, a, (8000, 0, 0)) == 3


def test_a_gang_that_cannot_be_placed_takes_no_quota(tmp_path: Path) -> None:
    """team-a's 2 x 4-GPU gang fits its quota (8) but only one 4-GPU pod fits the nodes at 1: nothing of it
    is admitted (usage 0 at 10), and it starts whole when team-b's job ends at 50."""
    policy = manifests(
        tmp_path, cluster_queue("team-a", 8, cohort=None), cluster_queue("team-b", 8, cohort=None)
    )
    jobs = jobs_frame([job(1, 0.0, "team-b", 1, 2, 50.0), job(2, 1.0, "team-a", 2, 4)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 4}] * 2)
    for replay in both(jobs, nodes, policy):
        assert starts(replay) == {1: 0.0, 2: 50.0}
        at_10 = replay.queues.filter(pl.col("time") == 10.0).select("queue", "usage_gpu", "pending_jobs")
        assert at_10.rows() == [("team-a", 0.0, 1), ("team-b", 2.0, 0)]


def test_local_queues_map_jobs_to_their_cluster_queue(tmp_path: Path) -> None:
    """Jobs name LocalQueues (``namespace/name`` or a unique name); results count them per ClusterQueue.

    A ClusterQueue no job uses still lends: team-a borrows idle's 4 GPUs.
    """
    local = """apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: ns-a
  name: user-queue
spec:
  clusterQueue: team-a
"""
    policy = manifests(tmp_path, cluster_queue("team-a", 4), cluster_queue("idle", 4), local)
    jobs = jobs_frame([job(1, 0.0, "ns-a/user-queue", 1, 8)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    for replay in both(jobs, nodes, policy):
        assert starts(replay) == {1: 0.0}
        first = replay.queues.filter(pl.col("time") == 0.0)
        assert first.select("queue", "usage_gpu", "borrowed_gpu", "lent_gpu").rows() == [
            ("idle", 0.0, 0.0, 4.0),
            ("team-a", 8.0, 4.0, 0.0),
        ]


def test_generated_quotas_from_gpu_time_shares() -> None:
    """quotas: gpu_time_share: each queue's share of the GPU-time of 8 GPUs (3:1 -> 6 and 2), one cohort."""
    policy = Policy(**{**KUEUE.__dict__, "quotas": QuotaSource.gpu_time_share})
    jobs = jobs_frame([job(1, 0.0, "a", 1, 3), job(2, 0.0, "b", 1, 1), job(3, 0.5, "a", 1, 6)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    for replay in both(jobs, nodes, policy):
        nominal = replay.queues.filter(pl.col("time") == 0.0).select("queue", "nominal_gpu").rows()
        # GPU-time: a = 3 x 100 + 6 x 100 = 900, b = 100: 7.2 and 0.8 GPUs -> 7 and 1 (largest remainder).
        assert nominal == [("a", 7.0), ("b", 1.0)]
        assert starts(replay)[3] == 100.0
        # queue_summary.parquet sets each queue's quota share beside its GPU-time share.
        table = job_results(jobs, replay.jobs)
        admitted = admitted_jobs(table, run_span(jobs, replay.stats["end_time"]))
        per_queue = queue_summary(table, admitted, attempt_results(replay.attempts), replay.queues)
        assert per_queue.select("queue", "nominal_gpu", "quota_share").rows() == [
            ("a", 7.0, 7.0 / 8.0),
            ("b", 1.0, 1.0 / 8.0),
        ]
        assert per_queue["gpu_time_share"].to_list() == pytest.approx([0.9, 0.1])


def test_the_share_column_is_kueues_dominant_resource_share() -> None:
    """model_columns' and share()'s DRS equal fair_share.kueue_drs (an independent statement)."""
    rng = np.random.default_rng(7)
    quotas = generated_quotas({"a": 8.0, "b": 8.0, "c": 0.0}, cohort=True, source="test")
    usage = np.zeros((3, 3, 50), dtype=np.int64)
    usage[0] = rng.integers(0, 20, size=(3, 50)) * 1000
    share = model_columns(quotas, usage)["share"]
    for s in range(50):
        nodes = [KueueNode("all", is_cohort=True)] + [
            KueueNode(
                name,
                parent="all",
                nominal={("f", "gpu"): float(quotas.nominal[0, q])},
                usage={("f", "gpu"): float(usage[0, q, s])},
            )
            for q, name in enumerate(("a", "b", "c"))
        ]
        for q, name in enumerate(("a", "b", "c")):
            assert share[q, s] == pytest.approx(kueue_drs(nodes, name).weighted)
        # share(): the scalar statement the reference's tournament uses, at the same usage.
        used = node_usage(quotas, usage[:, :, s].tolist())
        for q in range(3):
            assert kueue_share(quotas, used, q)[0] == pytest.approx(share[q, s])


def test_available_follows_the_lending_and_borrowing_limits() -> None:
    """resource_node.go ``available`` on a hand-computed cohort (GPU milli)."""
    quotas = generated_quotas({"a": 8.0, "b": 8.0}, cohort=True, source="test")
    quotas.lending_limit[0, 1] = 2000  # b keeps 6 GPUs
    quotas.borrowing_limit[0, 0] = 1000
    usage = [[3000, 1000], [0, 0], [0, 0]]
    # a: local 0, cohort 8 + 2 = 10 GPUs of which 3 used; a's borrowing limit caps the parent part at
    # (8 - 0) - 3 + 1 = 6.
    assert available(quotas, usage, 0, 0) == 6000
    # b: local 6 - 1 used = 5, plus the cohort's 10 - 3 = 7.
    assert available(quotas, usage, 1, 0) == 12000


@pytest.mark.parametrize(
    ("change", "key", "message"),
    [
        (
            {"gang": GangMode.pod_by_pod, "queue_order": QueueOrder.priority},
            "scheduler.gang",
            "whole workloads",
        ),
        ({"preemption": Preemption.priority}, "scheduler.preemption", "reclaim_within_cohort"),
        (
            {"queues": QueueModel.none, "quotas": QuotaSource.none, "reclaim_within_cohort": RECLAIM_LOWER},
            "scheduler.reclaim_within_cohort",
            "queue model only",
        ),
        (
            {"fair_sharing_strategies": FairSharingStrategies.less_than_initial_share},
            "scheduler.fair_sharing_strategies",
            "fair_sharing: true only",
        ),
        ({"borrow_max_priority": 5}, "scheduler.borrow_max_priority", "lower_priority only"),
        (
            {"borrow_within_cohort": BorrowWithinCohort.lower_priority},
            "scheduler.borrow_within_cohort",
            "needs reclaimWithinCohort",
        ),
        ({"queue_order": QueueOrder.fifo}, "scheduler.queue_order", "priority"),
        ({"quotas": QuotaSource.none}, "scheduler.quotas", "needs quotas"),
        ({"queues": QueueModel.none}, "scheduler.quotas", "queue model only"),
        (
            {"queues": QueueModel.none, "quotas": QuotaSource.none, "fair_sharing": True},
            "scheduler.fair_sharing",
            "only",
        ),
    ],
)
def test_unmodelled_settings_are_refused(change: dict[str, Any], key: str, message: str) -> None:
    policy = Policy(**{**KUEUE.__dict__, "quotas": QuotaSource.gpu_time_share, **change})
    jobs = jobs_frame([job(1, 0.0, "a", 1, 1)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    with pytest.raises(InputError, match=message) as err:
        simulate(jobs, nodes, policy)
    assert key in str(err.value)


def test_a_queue_missing_from_the_manifests_names_the_trace_file_and_its_row(tmp_path: Path) -> None:
    # It said "jobs, row 2": the row is the trace file's, so the run names the file.
    from gpureplay.experiment import rows_of
    from gpureplay.traces.generic import load_table

    trace_file = tmp_path / "trace.csv"
    trace_file.write_text("job_id,submit_time,duration,num_pods,gpu_milli,queue\n1,0,100,1,1000,team-a\n"
                          "2,0,100,1,1000,nobody\n")  # fmt: skip
    trace = load_table(trace_file)
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    with pytest.raises(InputError) as err, rows_of(trace):
        simulate(trace.jobs, nodes, manifests(tmp_path, cluster_queue("team-a", 8)))
    assert str(err.value).startswith(
        f"{trace_file}, row 2, column 'queue': queue 'nobody' names no ClusterQueue or LocalQueue of "
        f"{tmp_path / 'queues.yaml'}"
    )


def test_a_quota_beyond_the_engines_integers_names_file_document_and_field(tmp_path: Path) -> None:
    # 1e18 GPUs is a Kubernetes quantity (below 2^63-1), but 1e21 milli-GPU overflowed int64: an
    # OverflowError traceback. Refused with the largest amount the replay counts.
    jobs = jobs_frame([job(1, 0.0, "team-a", 1, 1)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    with pytest.raises(InputError) as err:
        simulate(jobs, nodes, manifests(tmp_path, cluster_queue("team-a", 1e18, borrowing_limit=2e15)))
    assert str(err.value).splitlines() == [
        f"{tmp_path / 'queues.yaml'}, document 2, key 'spec.resourceGroups[0].flavors[0].resources[{k}]."
        f"{field}': {amount} is more than the replay counts: at most 9.007e+12 nvidia.com/gpu (it counts "
        "milli-GPU in 64-bit integers, summed over the cohort tree)"
        for k, field, amount in [(0, "nominalQuota", "1e+18"), (0, "borrowingLimit", "2e+15")]
    ]


def test_manifest_errors_name_file_document_and_field(tmp_path: Path) -> None:
    preempting = cluster_queue("team-a", 8).replace(
        "  queueingStrategy",
        "  preemption:\n    borrowWithinCohort:\n      policy: LowerPriority\n  queueingStrategy",
    )
    policy = manifests(tmp_path, preempting)
    jobs = jobs_frame([job(1, 0.0, "team-a", 1, 1)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    with pytest.raises(InputError, match=r"queues\.yaml.*spec\.preemption.*reclaimWithinCohort=Never"):
        simulate(jobs, nodes, policy)
    # A preemption key of derived quotas beside manifests: they state their own.
    with pytest.raises(InputError, match=r"scheduler\.within_cluster_queue.*derived quotas only"):
        simulate(jobs, nodes, replace(policy, within_cluster_queue=WithinClusterQueue.lower_priority))
    policy = manifests(tmp_path, cluster_queue("team-a", 8))
    unknown = jobs_frame([job(1, 0.0, "team-a", 1, 1), job(2, 0.0, "nobody", 1, 1)])
    with pytest.raises(InputError, match=r"row 2.*'nobody' names no ClusterQueue or LocalQueue"):
        simulate(unknown, nodes, policy)
    gpu_only = cluster_queue("team-a", 8).replace('"nvidia.com/gpu", "cpu", "memory"', '"nvidia.com/gpu"')
    gpu_only = gpu_only.split("      - name: cpu")[0]
    policy = manifests(tmp_path, gpu_only)
    cpu_job = jobs_frame([{**job(1, 0.0, "team-a", 1, 1), "cpu_milli": 2000}])
    with pytest.raises(InputError, match=r"does not cover 'cpu'.*never admit"):
        simulate(cpu_job, nodes, policy)


def weighted(queue: str, weight: float) -> str:
    return queue.replace("  queueingStrategy", f"  fairSharing:\n    weight: {weight}\n  queueingStrategy")


def test_fair_sharing_admits_the_lower_dominant_resource_share_first(tmp_path: Path) -> None:
    """Cohort of team-a (4 GPUs), team-b (4) and an idle team-c (8): 16 GPUs lendable.

    At 10, with team-a's job 1 on 8 GPUs, team-a's job 2 (4 GPUs) and team-b's job 3 (6 GPUs) both borrow
    and only one fits. Classical: equal footing, job 2 first by id. Fair sharing: team-a with job 2 would
    borrow 8 (DRS 8 x 1000 / 16 = 500), team-b with job 3 borrows 2 (125): job 3 goes first and job 2 waits
    for job 1. With team-a's weight 8 its share is 500 / 8 = 62.5 < 125: job 2 first again.
    """
    jobs = jobs_frame(
        [job(1, 0.0, "team-a", 1, 8), job(2, 10.0, "team-a", 1, 4), job(3, 10.0, "team-b", 1, 6)]
    )
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    queues = [cluster_queue("team-a", 4), cluster_queue("team-b", 4), cluster_queue("team-c", 8)]
    classical = manifests(tmp_path, *queues)
    for replay in both(jobs, nodes, classical):
        assert starts(replay) == {1: 0.0, 2: 10.0, 3: 100.0}
    fair = Policy(**{**classical.__dict__, "fair_sharing": True})
    for replay in both(jobs, nodes, fair):
        assert starts(replay) == {1: 0.0, 2: 100.0, 3: 10.0}
        at_10 = replay.queues.filter(pl.col("time") == 10.0)
        assert at_10.select("queue", "share").rows() == [
            ("team-a", 250.0),
            ("team-b", 125.0),
            ("team-c", 0.0),
        ]
    heavy = manifests(tmp_path, weighted(queues[0], 8), *queues[1:])
    for replay in both(jobs, nodes, Policy(**{**heavy.__dict__, "fair_sharing": True})):
        assert starts(replay) == {1: 0.0, 2: 10.0, 3: 100.0}


def test_a_folder_of_manifests_is_read_whole(tmp_path: Path) -> None:
    """scheduler.manifests may name a folder (as `gpureplay manifests check` takes one)."""
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "flavors.yaml").write_text(FLAVOR)
    (folder / "queues.yaml").write_text(
        "---\n".join([cluster_queue("team-a", 4), cluster_queue("team-b", 4)])
    )
    policy = Policy(**{**KUEUE.__dict__, "manifests": str(folder)})
    jobs = jobs_frame([job(1, 0.0, "team-a", 1, 6)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    for replay in both(jobs, nodes, policy):
        assert starts(replay) == {1: 0.0}  # 4 nominal + 2 borrowed from team-b


def test_kernels_warm_up_on_manifests_that_name_no_default_queue() -> None:
    """The CLI compiles the kernels on a one-job replay before the real one; with Kueue manifests (which need
    not name the warm-up job's queue) the job joins their first ClusterQueue covering GPUs instead of
    failing the run with "queue 'default' names no ClusterQueue"; with flavors of several GPU models, on one
    node of each (a flavor that selects no node of the cluster is refused)."""
    examples = Path(__file__).resolve().parents[1] / "examples" / "manifests"
    for folder in ("kueue", "kueue-philly-nested", "kueue-philly-flavors"):
        warm_up(replace(KUEUE, manifests=str(examples / folder)))
