"""Kueue's classical preemption: hand-computed scenarios on the engine and its reference twin, and the rule.

docs/engine/queues/kueue.md, "Kueue preemption"; the rule is gpureplay.queues.kueue_preemption (Kueue's
``pkg/scheduler/preemption``). Two 8-GPU nodes, 100 s jobs, grace period 30 s unless said otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_quota import KUEUE, both, cluster_queue, cohort, job, manifests, starts

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


def test_a_nested_cohort_reclaims_within_its_subtree_and_skips_a_subtree_within_quota(tmp_path: Path) -> None:
    """Cohort org holds cohorts research (team-a nominal 8, team-b 0) and ops (team-c 4, team-d 4); two
    8-GPU nodes, every ClusterQueue ``reclaimWithinCohort: LowerPriority``.

    At 0 team-b runs jobs 3, 4 (4 GPUs each, priority 1), borrowing team-a's 8 within research, and team-c
    runs jobs 1, 2 (4 GPUs, priority 0), borrowing team-d's 4 within ops: the cluster is full and both
    cohorts use exactly their subtree quota (8). At 10 team-a's job 5 (4 GPUs, priority 2) finds nothing
    available; 4 <= its nominal 8, so it may preempt. Kueue's hierarchical candidates: team-b's jobs (lowest
    common ancestor research; team-a fits its own quota: a hierarchical reclaim); team-c is above its nominal
    but ops is within its quota, so team-c's jobs are no candidates (``collectCandidatesInSubtree`` skips a
    subtree within quota). Job 3 (tie on admission time, lower id) is evicted at 10, releases at 40, and
    job 5 starts then. With the four ClusterQueues directly in org (flat), team-c's lower-priority job 1 is
    the first candidate instead.
    """

    def reclaiming(name: str, gpus: float, parent: str) -> str:
        return preempting(cluster_queue(name, gpus, cohort=parent), reclaimWithinCohort="LowerPriority")

    rows = [
        job(1, 0.0, "team-c", 1, 4),
        job(2, 0.0, "team-c", 1, 4),
        prio(job(3, 0.0, "team-b", 1, 4), 1),
        prio(job(4, 0.0, "team-b", 1, 4), 1),
        prio(job(5, 10.0, "team-a", 1, 4), 2),
    ]
    jobs = jobs_frame(rows)
    queues = (
        ("team-a", 8, "research"),
        ("team-b", 0, "research"),
        ("team-c", 4, "ops"),
        ("team-d", 4, "ops"),
    )
    nested = manifests(
        tmp_path,
        *(reclaiming(name, gpus, parent) for name, gpus, parent in queues),
        cohort("research", "org"),
        cohort("ops", "org"),
    )
    for replay in both(jobs, NODES, nested):
        assert evictions(replay) == [(3, 10.0, 5)]
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0, 5: 40.0}
    flat = manifests(tmp_path, *(reclaiming(name, gpus, "org") for name, gpus, _ in queues))
    for replay in both(jobs, NODES, flat):
        assert evictions(replay) == [(1, 10.0, 5)]


def test_a_subtree_that_holds_the_request_lets_a_queue_reclaim_beyond_its_nominal_quota(
    tmp_path: Path,
) -> None:
    """Cohort org holds cohort research (team-a nominal 4, team-b 4) and team-c (nominal 8); two 8-GPU nodes.

    At 0 team-c runs jobs 1-3 (4 GPUs each, priority 0): 12, borrowing research's 4. At 10 team-a's job 4
    (2 pods x 4 GPUs, priority 1; ``reclaimWithinCohort: LowerPriority``) finds 4 available. Its request (8)
    is above its nominal quota (4), which in a flat cohort forbids preemption without borrowWithinCohort; but
    research's subtree quota (8) holds it (``FindHeightOfLowestSubtreeThatFits``: a subtree below the root),
    so it may preempt, and team-c's jobs are hierarchical-reclaim candidates (research fits the request):
    reclaimed even though team-a then borrows team-b's quota. Job 1 is evicted at 10 (team-c back to 8, 8
    available), releases at 40, and job 4 starts then. In the flat cohort it waits for job 1 to end at 100.
    """
    team_a = preempting(cluster_queue("team-a", 4, cohort="research"), reclaimWithinCohort="LowerPriority")
    rows = [job(1, 0.0, "team-c", 1, 4), job(2, 0.0, "team-c", 1, 4), job(3, 0.0, "team-c", 1, 4)]
    jobs = jobs_frame([*rows, prio(job(4, 10.0, "team-a", 2, 4), 1)])
    nested = manifests(
        tmp_path,
        team_a,
        cluster_queue("team-b", 4, cohort="research"),
        cluster_queue("team-c", 8, cohort="org"),
        cohort("research", "org"),
    )
    for replay in both(jobs, NODES, nested):
        assert evictions(replay) == [(1, 10.0, 4)]
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 40.0}
    flat = manifests(
        tmp_path,
        team_a.replace("cohort: research", "cohort: org"),
        cluster_queue("team-b", 4, cohort="org"),
        cluster_queue("team-c", 8, cohort="org"),
    )
    for replay in both(jobs, NODES, flat):
        assert evictions(replay) == []
        assert starts(replay)[4] == 100.0


def test_a_preemptor_that_borrows_lower_in_the_tree_is_admitted_before_its_victim(tmp_path: Path) -> None:
    """Cohort org holds cohort research (team-a, team-b: nominal 4 each) and team-c (nominal 8); two 8-GPU
    nodes. team-c runs jobs 1-3 (4 GPUs each, priority 5, 20,000 s) from 0: 12, borrowing research's 4.

    At 10 team-a's job 4 (2 pods x 4 GPUs, priority 1; ``reclaimWithinCohort: Any``) finds 4 available;
    research's subtree quota holds its 8, so it may preempt, and team-c's jobs are hierarchical-reclaim
    candidates: job 1 (equal priorities and admission times: the lowest id) is evicted at 10 and releases
    at 40. At 40 job 4 and the requeued job 1 are both heads, and each fits alone (8 available), not both.
    Job 4 borrows within research (borrowing level 1), job 1 from org (level 2): Kueue admits job 4 first
    although job 1 has the higher priority; job 1 no longer fits and waits for job 4's end (140). Ordered
    by "borrows or not" (both do), job 1 went first by priority, job 4 evicted it again, and so on every
    30 s until the replay stopped with a preemption livelock.
    """
    team_a = preempting(cluster_queue("team-a", 4, cohort="research"), reclaimWithinCohort="Any")
    rows = [prio(job(i, 0.0, "team-c", 1, 4, 20_000.0), 5) for i in (1, 2, 3)]
    jobs = jobs_frame([*rows, prio(job(4, 10.0, "team-a", 2, 4), 1)])
    policy = manifests(
        tmp_path,
        team_a,
        cluster_queue("team-b", 4, cohort="research"),
        cluster_queue("team-c", 8, cohort="org"),
        cohort("research", "org"),
    )
    for replay in both(jobs, NODES, policy):
        assert evictions(replay) == [(1, 10.0, 4)]
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 40.0}
        restart = replay.attempts.filter((pl.col("job_id") == 1) & (pl.col("attempt") == 1))
        assert restart["start"].to_list() == [140.0]


def test_hierarchical_reclaim_candidates_come_before_lower_priority_ones(tmp_path: Path) -> None:
    """Cohort org holds team-c (nominal 4) and cohort research (its own quota 4) with team-a (nominal 4,
    lendingLimit 0: all of it local) and team-s (nominal 4); subtree quotas: research 8, org 12.

    Team-c runs jobs 4 (4 GPUs) and 5 (3) of priority 1 from 0, team-s jobs 2 (3) and 3 (2) of priority 0
    from 1, team-a job 1 (2 GPUs) from 2: org is full. At 10 team-a's job 6 (4 GPUs, priority 2;
    ``reclaimWithinCohort: LowerPriority``, ``borrowWithinCohort: LowerPriority``) finds 2 available (its
    local quota left). Team-s's jobs are priority candidates (common ancestor research; team-a does not fit
    its own quota, 2 + 4 > 4), reclaimable while borrowing; team-c's are hierarchical ones (common ancestor
    org; research fits what team-a's local quota leaves, 5 + 2 <= 8). Kueue takes the hierarchical
    candidates first although team-s's have the lower priority: job 4 (id before job 5) is evicted at 10
    and job 6 starts at 40. (Ordered by priority alone, job 2 would go.)
    """
    team_a = preempting(
        cluster_queue("team-a", 4, cohort="research", lending_limit=0),
        reclaimWithinCohort="LowerPriority",
        borrowWithinCohort="{policy: LowerPriority}",
    )
    policy = manifests(
        tmp_path,
        team_a,
        cluster_queue("team-s", 4, cohort="research"),
        cluster_queue("team-c", 4, cohort="org"),
        cohort("research", "org", gpus=4),
    )
    rows = [
        prio(job(4, 0.0, "team-c", 1, 4), 1),
        prio(job(5, 0.0, "team-c", 1, 3), 1),
        job(2, 1.0, "team-s", 1, 3),
        job(3, 1.0, "team-s", 1, 2),
        prio(job(1, 2.0, "team-a", 1, 2), 2),
        prio(job(6, 10.0, "team-a", 1, 4), 2),
    ]
    for replay in both(jobs_frame(rows), NODES, policy):
        assert evictions(replay) == [(4, 10.0, 6)]
        assert starts(replay) == {1: 2.0, 2: 1.0, 3: 1.0, 4: 0.0, 5: 0.0, 6: 40.0}
