"""Kueue's classical preemption: hand-computed scenarios on the engine and its reference twin, and the rule.

docs/engine-semantics.md, "Kueue preemption"; the rule is gpureplay.queues.kueue_preemption (Kueue's
``pkg/scheduler/preemption``). Two 8-GPU nodes, 100 s jobs, grace period 30 s unless said otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_quota import KUEUE, both, cluster_queue, job, manifests, starts

from gpureplay.errors import InputError
from gpureplay.queues.kueue_preemption import Admitted, preemption_targets, uniform_table
from gpureplay.queues.kueue_quota import generated_quotas
from gpureplay.replay.simulate import Replay, simulate
from gpureplay.schedulers.policy import (
    BorrowWithinCohort,
    QuotaSource,
    ReclaimWithinCohort,
    WithinClusterQueue,
)

NODES = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)


def preempting(queue: str, **fields: str) -> str:
    """A ClusterQueue manifest with ``spec.preemption`` fields (``reclaimWithinCohort="LowerPriority"``)."""
    lines = "".join(f"    {k}: {v}\n" for k, v in fields.items())
    return queue.replace("  queueingStrategy", f"  preemption:\n{lines}  queueingStrategy")


def prio(row: dict, priority: int) -> dict:
    return {**row, "priority": priority}


def evictions(replay: Replay) -> list[tuple[int, float, int]]:
    """``(job_id, evicted, evicted_by)`` of each eviction, in time order."""
    evicted = replay.attempts.filter(pl.col("end_reason") == "preempted")
    return sorted(evicted.select("job_id", "evicted", "evicted_by").iter_rows(), key=lambda r: (r[1], r[0]))


def test_a_lender_reclaims_what_a_borrower_took_under_reclaim_within_cohort(tmp_path: Path) -> None:
    """team-a (nominal 8) runs three 4-GPU jobs at 0, borrowing 4 of team-b's 8 GPUs.

    At 10 team-b's 8-GPU job (priority 1; 2 pods x 4) needs its own quota back: only 4 are available. Under
    reclaimWithinCohort: LowerPriority, team-a is above nominal and its jobs have priority 0 < 1: the
    candidates in order (same admission time: by id) are jobs 1, 2, 3; removing job 1 brings team-a back to
    8 and team-b fits. Job 1 is evicted at 10, releases at 40 (grace 30), and team-b's job starts at 40 on
    job 1's GPUs and the 4 idle ones; job 1 waits for team-a's quota (jobs 2, 3 end at 100).
    """
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", 8),
        preempting(cluster_queue("team-b", 8), reclaimWithinCohort="LowerPriority"),
    )
    rows = [job(1, 0.0, "team-a", 1, 4), job(2, 0.0, "team-a", 1, 4), job(3, 0.0, "team-a", 1, 4)]
    jobs = jobs_frame([*rows, prio(job(4, 10.0, "team-b", 2, 4), 1)])
    for replay in both(jobs, NODES, policy):
        assert evictions(replay) == [(1, 10.0, 4)]
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 40.0}
        restart = replay.attempts.filter((pl.col("job_id") == 1) & (pl.col("attempt") == 1))
        assert restart["start"].to_list() == [100.0]
    # Never (Kueue's default): team-b waits for team-a's jobs to end.
    policy = manifests(tmp_path, cluster_queue("team-a", 8), cluster_queue("team-b", 8))
    for replay in both(jobs, NODES, policy):
        assert evictions(replay) == []
        assert starts(replay)[4] == 100.0
    # LowerPriority does not reclaim from an equal priority; Any does.
    equal = jobs.with_columns(pl.lit(0).alias("priority"))
    for value, evicted in (("LowerPriority", []), ("Any", [(1, 10.0, 4)])):
        policy = manifests(
            tmp_path,
            cluster_queue("team-a", 8),
            preempting(cluster_queue("team-b", 8), reclaimWithinCohort=value),
        )
        for replay in both(equal, NODES, policy):
            assert evictions(replay) == evicted


def test_a_queue_within_its_quota_preempts_its_own_lower_priority_jobs(tmp_path: Path) -> None:
    """One ClusterQueue of 8 GPUs without a cohort: job 1 (priority 0) holds all 8 from 0.

    At 10 job 2 (priority 5, 8 GPUs) arrives: withinClusterQueue: LowerPriority evicts job 1, which releases
    at 40; job 2 runs 40-140, job 1 again from 140 (its first start stays 0).
    """
    alone = cluster_queue("team-a", 8, cohort=None)
    jobs = jobs_frame([job(1, 0.0, "team-a", 2, 4), prio(job(2, 10.0, "team-a", 2, 4), 5)])
    policy = manifests(tmp_path, preempting(alone, withinClusterQueue="LowerPriority"))
    for replay in both(jobs, NODES, policy):
        assert evictions(replay) == [(1, 10.0, 2)]
        assert starts(replay) == {1: 0.0, 2: 40.0}
        restart = replay.attempts.filter((pl.col("job_id") == 1) & (pl.col("attempt") == 1))
        assert restart["start"].to_list() == [140.0]
    # LowerOrNewerEqualPriority also evicts an equal-priority job queued after the preemptor: job 3 (4 GPUs,
    # queued at 6) passed job 2 (8 GPUs, queued at 5, no quota until job 1 ends at 100); at 100 job 2 evicts
    # it (released at 130), and job 3 runs again after job 2. LowerPriority leaves it: job 2 starts at 106.
    rows = [job(1, 0.0, "team-a", 1, 4), job(2, 5.0, "team-a", 2, 4), job(3, 6.0, "team-a", 1, 4)]
    for value, evicted, start in (
        ("LowerPriority", [], 106.0),
        ("LowerOrNewerEqualPriority", [(3, 100.0, 2)], 130.0),
    ):
        policy = manifests(tmp_path, preempting(alone, withinClusterQueue=value))
        for replay in both(jobs_frame(rows), NODES, policy):
            assert evictions(replay) == evicted
            assert starts(replay) == {1: 0.0, 2: start, 3: 6.0}


def test_a_preemptor_that_cannot_preempt_or_would_stay_above_its_quota_evicts_nothing(tmp_path: Path) -> None:
    """A job asking more than its nominal quota cannot reclaim without borrowWithinCohort, nor can a job of
    PriorityClass preemptionPolicy Never: team-b's 12-GPU job (nominal 8) waits for team-a's jobs."""
    queues = (
        cluster_queue("team-a", 8),
        preempting(cluster_queue("team-b", 8), reclaimWithinCohort="Any"),
    )
    policy = manifests(tmp_path, *queues)
    rows = [job(1, 0.0, "team-a", 1, 4), job(2, 0.0, "team-a", 1, 4), job(3, 0.0, "team-a", 1, 4)]
    big = jobs_frame([*rows, prio(job(4, 10.0, "team-b", 3, 4), 1)])
    for replay in both(big, NODES, policy):
        assert evictions(replay) == []
    never = jobs_frame([*rows, {**prio(job(4, 10.0, "team-b", 2, 4), 1), "preemption_policy": "Never"}])
    for replay in both(never, NODES, policy):
        assert evictions(replay) == []
        assert starts(replay)[4] == 100.0


def test_a_replay_evicts_only_the_minimised_targets(tmp_path: Path) -> None:
    """One 8-GPU node; team-a (nominal 4) runs jobs 10 (1 GPU, priority 0), 11 (3, priority 1) and 12 (4,
    priority 2) from 0, borrowing 4. At 10 team-b's job 20 (3 GPUs, priority 5; reclaimWithinCohort: Any)
    finds 0 available: greedy removes 10 (1 available) and 11 (4 available); returning 10 still leaves 3, so
    only 11 is evicted (released at 40, when job 20 starts on its GPUs)."""
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", 4),
        preempting(cluster_queue("team-b", 4), reclaimWithinCohort="Any"),
    )
    rows = [prio(job(10, 0.0, "team-a", 1, 1), 0), prio(job(11, 0.0, "team-a", 1, 3), 1)]
    rows += [prio(job(12, 0.0, "team-a", 1, 4), 2), prio(job(20, 10.0, "team-b", 1, 3), 5)]
    one_node = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    for replay in both(jobs_frame(rows), one_node, policy):
        assert evictions(replay) == [(11, 10.0, 20)]
        assert starts(replay) == {10: 0.0, 11: 0.0, 12: 0.0, 20: 40.0}


def test_targets_are_minimised_from_the_next_to_last_back() -> None:
    """The rule on its own: a cohort of a and b (nominal 4 GPUs each); a uses all 8 with three jobs.

    Candidates (a is above its nominal quota), lowest priority first: job 10 (1 GPU), 11 (3), 12 (4).
    b asks for 4 GPUs: removing 10 (a at 7, 1 available) is not enough, removing 11 too is (a at 4);
    returning 10 leaves 3 available < 4: both are targets. b asking 3 GPUs: the same greedy pass, but
    returning 10 still leaves 3 available: 10 is dropped, 11 alone is the target.
    """
    quotas = generated_quotas({"a": 4.0, "b": 4.0}, cohort=True, source="test")
    quotas = replace(
        quotas,
        preemption=uniform_table(
            2, WithinClusterQueue.never, ReclaimWithinCohort.any, BorrowWithinCohort.never, None
        ),
    )
    usage = [[8000, 0], [0, 0], [0, 0]]
    admitted = [
        Admitted(10, 0, 0, 0.0, 0.0, False, (1000, 0, 0)),
        Admitted(11, 0, 1, 0.0, 0.0, False, (3000, 0, 0)),
        Admitted(12, 0, 2, 0.0, 0.0, False, (4000, 0, 0)),
    ]
    ids = lambda targets: [t.job_id for t in targets]  # noqa: E731
    assert ids(preemption_targets(quotas, usage, 1, (4000, 0, 0), 5, 0.0, admitted)) == [10, 11]
    assert ids(preemption_targets(quotas, usage, 1, (3000, 0, 0), 5, 0.0, admitted)) == [11]
    # An already evicted workload is taken first (it costs no new eviction).
    evicted = [*admitted[:2], replace(admitted[2], evicted=True)]
    assert ids(preemption_targets(quotas, usage, 1, (4000, 0, 0), 5, 0.0, evicted)) == [12]


def test_derived_quotas_take_the_preemption_keys(tmp_path: Path) -> None:
    """``reclaim_within_cohort`` on gpu_time_share quotas: the same reclaim as the manifests' scenario."""
    rows = [job(1, 0.0, "team-a", 1, 4), job(2, 0.0, "team-a", 1, 4), job(3, 0.0, "team-a", 1, 4)]
    # GPU-time 50 : 50 of 16 GPUs: nominal 8 each (team-b's long job gives it half the GPU-time).
    jobs = jobs_frame([*rows, {**prio(job(4, 10.0, "team-b", 2, 4), 1), "duration": 150.0}])
    policy = replace(
        KUEUE,
        quotas=QuotaSource.gpu_time_share,
        reclaim_within_cohort=ReclaimWithinCohort.lower_priority,
    )
    for replay in both(jobs, NODES, policy):
        assert replay.queues.filter(pl.col("time") == 0.0)["nominal_gpu"].to_list() == [8.0, 8.0]
        assert evictions(replay) == [(1, 10.0, 4)]
    borrow_alone = replace(
        policy,
        reclaim_within_cohort=ReclaimWithinCohort.never,
        borrow_within_cohort=BorrowWithinCohort.lower_priority,
    )
    with pytest.raises(InputError, match=r"scheduler\.borrow_within_cohort"):
        simulate(jobs, NODES, borrow_alone)
