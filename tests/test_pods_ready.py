"""Kueue's admission by quota alone and ``waitForPodsReady``: hand-computed scenarios on both simulators.

docs/systems.md, "Kueue" (``setup_wait_for_pods_ready.md``, KEP-1282 "Pods Ready Requeue Strategy");
docs/engine/queues/kueue.md, "Kueue waitForPodsReady". Every scenario runs on the engine and on its reference
twin.

The scenario of the first tests: two nodes of 4 GPUs, one ClusterQueue of 16 GPUs (more than the nodes
hold, as in Kueue's own example of the deadlock). A (0 s, 1 x 2 GPUs), B (1 s, 2 x 3 GPUs) and C (2 s,
2 x 2 GPUs), each running 100 s. B's first pod fits only the empty node 1, its second nowhere; C's first
takes node 0's two free GPUs, its second fits nowhere: both hold GPUs they cannot use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_preemption import evictions, preempting
from tests.test_kueue_quota import KUEUE, both, cluster_queue, job, manifests, starts

from gpureplay.errors import InputError
from gpureplay.replay.simulate import Replay, simulate
from gpureplay.schedulers.policy import KueueAdmission, Policy, QueueModel, QuotaSource

NODES = nodes_frame([{"gpu_model": "V100", "num_gpus": 4}] * 2)
JOBS = jobs_frame([job(1, 0.0, "team", 1, 2), job(2, 1.0, "team", 2, 3), job(3, 2.0, "team", 2, 2)])


def policy(tmp_path: Path, **change: Any) -> Policy:
    base = manifests(tmp_path, cluster_queue("team", 16, cohort=None))
    return Policy(**{**base.__dict__, **change})


def quota_only(tmp_path: Path, **change: Any) -> Policy:
    return policy(tmp_path, kueue_admission=KueueAdmission.quota, **change)


def column(replay: Replay, name: str) -> dict[int, Any]:
    return dict(replay.jobs.select("job_id", name).iter_rows())


def test_placement_at_admission_sets_the_gang_aside(tmp_path: Path) -> None:
    """Quota and placement at one instant: B's gang fits nowhere at 1 and takes nothing; C starts at 2 on
    node 0's two free GPUs and node 1; B starts whole when C ends at 102."""
    for replay in both(JOBS, NODES, policy(tmp_path)):
        assert starts(replay) == {1: 0.0, 2: 102.0, 3: 2.0}


def test_admission_by_quota_holds_partly_placed_pods(tmp_path: Path) -> None:
    """Admitted by quota, B holds 3 GPUs of node 1 from 1 s and C 2 of node 0 from 2 s. When A ends at 100
    kube-scheduler tries B first (admitted earlier): its 3-GPU pod does not fit node 0's 2 free GPUs; C's
    second pod does: C starts at 100, B only at 200. Usage counts the reservations: 2 + 6 + 4 GPUs at 10 s,
    though the nodes hold 7 GPUs of pods."""
    for replay in both(JOBS, NODES, quota_only(tmp_path), sample_interval=10.0):
        assert starts(replay) == {1: 0.0, 2: 200.0, 3: 100.0}
        at_10 = replay.queues.filter(pl.col("time") == 10.0)
        assert at_10.select("usage_gpu", "pending_jobs", "running_jobs").row(0) == (12.0, 0, 1)
        assert column(replay, "pods_ready_timeouts") == {1: 0, 2: 0, 3: 0}


def test_wait_for_pods_ready_evicts_and_requeues_after_the_backoff(tmp_path: Path) -> None:
    """Timeout 60 s: B is evicted at 61 (admitted at 1), its pod on node 1 released; C's second pod takes
    node 1 at once and C starts at 61 (its own timeout at 62 never fires). B comes back after the 60 s
    back-off at 121, is admitted again, fits nowhere until C ends at 161 and starts then (its second
    timeout would be at 181). Its first attempt held 3 GPUs for 60 s: 180 GPU-seconds, lost."""
    for replay in both(JOBS, NODES, quota_only(tmp_path, pods_ready_timeout=60.0)):
        assert starts(replay) == {1: 0.0, 2: 161.0, 3: 61.0}
        assert column(replay, "pods_ready_timeouts") == {1: 0, 2: 1, 3: 0}
        assert column(replay, "lost_gpu_seconds")[2] == pytest.approx(180.0)
        assert column(replay, "pending_time")[2] == pytest.approx(160.0)
        b = replay.attempts.filter(pl.col("job_id") == 2).sort("attempt")
        rows = b.select("attempt", "end_reason", "pods", "hold_start", "end", "gpu_seconds").rows()
        assert rows[0] == (0, "pods_ready_timeout", 1, 1.0, 61.0, 180.0)
        assert rows[1][:2] == (1, "finished")


def test_a_backoff_limit_of_zero_deactivates_at_the_first_timeout(tmp_path: Path) -> None:
    """backoffLimitCount 0: B's first timeout at 61 deactivates it (failed, no wait counted)."""
    change = {"pods_ready_timeout": 60.0, "pods_ready_backoff_limit": 0}
    for replay in both(JOBS, NODES, quota_only(tmp_path, **change)):
        assert starts(replay) == {1: 0.0, 2: None, 3: 61.0}
        assert column(replay, "state")[2] == "failed"
        assert column(replay, "pending_time")[2] is None


def test_block_admission_admits_one_job_at_a_time(tmp_path: Path) -> None:
    """blockAdmission: B, admitted at 1 with one pod placed, blocks C. When A ends at 100 B's second pod
    takes node 0 and B starts; C is admitted at once, fits nowhere (one free GPU per node) and starts when
    B ends at 200: B goes first, where without the block C overtook it (previous tests)."""
    change = {"pods_ready_timeout": 1000.0, "pods_ready_block_admission": True}
    for replay in both(JOBS, NODES, quota_only(tmp_path, **change)):
        assert starts(replay) == {1: 0.0, 2: 100.0, 3: 200.0}
        assert column(replay, "pods_ready_timeouts") == {1: 0, 2: 0, 3: 0}


def test_a_lender_reclaims_quota_an_admitted_job_holds_before_its_pods_are_placed(tmp_path: Path) -> None:
    """team-a and team-b (4 GPUs each, one cohort; team-a reclaimWithinCohort: Any) on one 4-GPU node. B1
    (team-b, 0 s) runs; B2 (team-b, 1 s) is admitted by quota, borrowing team-a's 4 GPUs, but fits no node.
    A1 (team-a, 2 s) does not fit its quota: it reclaims from team-b, above its nominal quota, the most
    recently admitted first: B2, whose pods were never placed (no attempt). B2 holds its quota through the
    30 s grace; A1 is admitted at 32, placed when B1 ends at 100; B2, requeued, starts when A1 ends."""
    policy = manifests(
        tmp_path,
        preempting(cluster_queue("team-a", 4, cohort="c"), reclaimWithinCohort="Any"),
        cluster_queue("team-b", 4, cohort="c"),
    )
    policy = Policy(**{**policy.__dict__, "kueue_admission": KueueAdmission.quota})
    jobs = jobs_frame([job(1, 0.0, "team-b", 1, 4), job(2, 1.0, "team-b", 1, 4), job(3, 2.0, "team-a", 1, 4)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 4}])
    for replay in both(jobs, nodes, policy, sample_interval=2.0):
        assert starts(replay) == {1: 0.0, 2: 200.0, 3: 100.0}
        assert column(replay, "preemptions") == {1: 0, 2: 1, 3: 0}
        assert column(replay, "attempts") == {1: 1, 2: 1, 3: 1}
        at_30 = replay.queues.filter(pl.col("time") == 30.0).select("queue", "usage_gpu").rows()
        assert at_30 == [("team-a", 0.0), ("team-b", 8.0)]  # B2's reservation held through its grace
        at_40 = replay.queues.filter(pl.col("time") == 40.0).select("queue", "usage_gpu").rows()
        assert at_40 == [("team-a", 4.0), ("team-b", 4.0)]


def test_preemption_takes_the_most_recently_admitted_not_the_latest_started(tmp_path: Path) -> None:
    """One ClusterQueue of 11 GPUs (withinClusterQueue: LowerPriority) on two 4-GPU nodes. Z (4 GPUs, 0-49 s)
    and W (2 GPUs) start at 0; X (3 GPUs) is admitted at 1 but placed only when Z ends (start 49); Y (2 GPUs),
    admitted at 10, starts at once on node 1. H (priority 1, 2 x 3 GPUs) at 60 needs 13 > 11: Kueue takes the
    most recently *admitted* first, Y (admitted 10), which alone makes room (11); ordering by start would
    have taken X (started 49)."""
    policy = manifests(
        tmp_path, preempting(cluster_queue("team", 11, cohort=None), withinClusterQueue="LowerPriority")
    )
    policy = Policy(**{**policy.__dict__, "kueue_admission": KueueAdmission.quota})
    rows = [
        job(1, 0.0, "team", 1, 4, 49.0),
        job(2, 0.0, "team", 1, 2, 10_000.0),
        job(3, 1.0, "team", 1, 3, 1000.0),
        job(4, 10.0, "team", 1, 2, 1000.0),
        {**job(5, 60.0, "team", 2, 3), "priority": 1},
    ]
    for replay in both(jobs_frame(rows), NODES, policy):
        assert {k: v for k, v in starts(replay).items() if k != 5} == {1: 0.0, 2: 0.0, 3: 49.0, 4: 10.0}
        assert evictions(replay) == [(4, 60.0, 5)]


@pytest.mark.parametrize(("limit", "expected"), [(None, (1000.0, 4, "finished")), (3, (None, 4, "failed"))])
def test_the_backoff_doubles_up_to_its_maximum(
    tmp_path: Path, limit: int | None, expected: tuple[float | None, int, str]
) -> None:
    """One node of 4 GPUs held by A until 1000 s; B (1 x 4 GPUs) is admitted at 1 and times out every 60 s
    after each admission; requeued after 60, 120, 240, then 300 s (backoffMaxSeconds 300, not 480): admitted
    at 1, 121, 301, 601 and 961, timed out at 61, 181, 361 and 661; it starts at 1000 when A ends. With
    backoffLimitCount 3 its fourth timeout (at 661, three requeues done) deactivates it."""
    jobs = jobs_frame([job(1, 0.0, "team", 1, 4, 1000.0), job(2, 1.0, "team", 1, 4)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 4}])
    change = {"pods_ready_timeout": 60.0, "pods_ready_backoff_max": 300.0, "pods_ready_backoff_limit": limit}
    for replay in both(jobs, nodes, quota_only(tmp_path, **change)):
        b = replay.jobs.filter(pl.col("job_id") == 2).row(0, named=True)
        assert (b["start_time"], b["pods_ready_timeouts"], b["state"]) == expected


@pytest.mark.parametrize(
    ("change", "key", "message"),
    [
        ({"pods_ready_timeout": 60.0}, "scheduler.pods_ready_timeout", "needs kueue_admission: quota"),
        (
            {"kueue_admission": KueueAdmission.quota, "pods_ready_block_admission": True},
            "scheduler.pods_ready_block_admission",
            "with pods_ready_timeout set only",
        ),
        (
            {"kueue_admission": KueueAdmission.quota, "pods_ready_timeout": -1.0},
            "scheduler.pods_ready_timeout",
            ">= 0",
        ),
        (
            {
                "kueue_admission": KueueAdmission.quota,
                "pods_ready_timeout": 0.0,
                "pods_ready_backoff_base": 0.0,
            },
            "scheduler.pods_ready_timeout",
            "without end at one instant",
        ),
        (
            {
                "kueue_admission": KueueAdmission.quota,
                "pods_ready_timeout": 60.0,
                "pods_ready_backoff_limit": -2,
            },
            "scheduler.pods_ready_backoff_limit",
            ">= 0",
        ),
        (
            {"queues": QueueModel.none, "quotas": QuotaSource.none, "kueue_admission": KueueAdmission.quota},
            "scheduler.kueue_admission",
            "queue model only",
        ),
    ],
)
def test_unmodelled_or_wrong_settings_are_refused(change: dict[str, Any], key: str, message: str) -> None:
    settings = Policy(**{**KUEUE.__dict__, "quotas": QuotaSource.gpu_time_share, **change})
    jobs = jobs_frame([job(1, 0.0, "a", 1, 1)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    with pytest.raises(InputError, match=message) as err:
        simulate(jobs, nodes, settings)
    assert key in str(err.value)
