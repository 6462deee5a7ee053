"""Volcano's reclaim action (``scheduler.actions: enqueue, allocate, reclaim, backfill``): hand-computed
sessions on the engine and its reference.

docs/systems.md, "Volcano" (volcano-sh/volcano ``actions/reclaim/reclaim.go``,
``plugins/proportion/proportion.go``
``ReclaimableFn`` / ``Preemptive``, ``framework/session_plugins.go`` ``BuildVictimsPriorityQueue``);
docs/engine/queues/volcano.md, "Volcano reclaim". Jobs run 100 s; the termination grace period is 30 s and a
restart costs the default overhead; nodes have 8 GPUs; the overcommit factor is 2 so that later jobs enter
Inqueue on a full cluster.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_quota import both, job, starts
from tests.test_volcano_queues import VOLCANO, manifests, queue

from gpureplay.errors import InputError
from gpureplay.queues.volcano_actions import volcano_actions
from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import Policy, QueueModel, QuotaSource

RECLAIM = "enqueue, allocate, reclaim, backfill"


def evictions(replay: object) -> dict[int, int]:
    """``victim job -> the job it was evicted for``."""
    attempts: pl.DataFrame = replay.attempts  # type: ignore[attr-defined]
    rows = attempts.filter(pl.col("evicted_by").is_not_null()).select("job_id", "evicted_by")
    return dict(rows.iter_rows())


def two_queues(tmp_path: Path, **spec: object) -> Policy:
    return manifests(
        tmp_path, queue("a", weight=1, **spec), queue("b", weight=1), overcommit_factor=2.0, actions=RECLAIM
    )


def test_a_queue_below_its_deserved_share_reclaims_a_gangs_room(tmp_path: Path) -> None:
    """Queue a fills 16 GPUs (four 1-pod 4-GPU jobs at 0: jobs 1, 2 on node 0, 3, 4 on node 1); b's gang
    of two 4-GPU pods (job 5) arrives at 10.

    Deserved at 10 (weights 1:1, requests a 16, b 8): 8 each, so a is above its share. Allocate cannot
    place job 5. Reclaim, b's first pod (0 + 4 <= 8 GPUs): node 0's reclaimees are a's jobs 2 and 1 (reverse
    job order: same priority and drf share, then the later id); the proportion plugin takes both (a's copy
    16 > 8, then 12 > 8); job 2's 4 GPUs cover the pod, which is pipelined (a's allocation 12, b's 4). The
    second pod (4 + 4 <= 8): job 1 (a still 12 > 8) covers it; job 5 is pipelined whole, so its statement
    commits: jobs 1 and 2 are evicted at 10 for job 5, which starts when their grace ends (40).
    Without the reclaim action, job 5 waits for a's jobs to end (100).
    """
    rows = [job(i, 0.0, "a", 1, 4) for i in range(1, 5)] + [job(5, 10.0, "b", 2, 4)]
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    policy = two_queues(tmp_path)
    for replay in both(jobs_frame(rows), nodes, policy):
        assert evictions(replay) == {1: 5, 2: 5}
        assert starts(replay)[5] == 40.0
        shares = replay.queues.filter(pl.col("time") == 40.0).select("queue", "usage_gpu", "nominal_gpu")
        assert sorted(shares.iter_rows()) == [("a", 8.0, 8.0), ("b", 8.0, 8.0)]
    for replay in both(jobs_frame(rows), nodes, replace(policy, actions=None)):
        assert evictions(replay) == {}
        assert starts(replay)[5] == 100.0


def test_a_gang_that_cannot_be_pipelined_whole_evicts_nothing(tmp_path: Path) -> None:
    """As above, but b's gang has three 4-GPU pods (12 GPUs; deserved still 8 each: b's request 12, a's 16).

    Pods one and two are pipelined on jobs 2 and 1 as before; the third would take b to 12 > 8 GPUs
    (``Preemptive`` fails): the job leaves the action unpipelined and its statement is discarded, so no job
    is evicted, and job 5 starts when a's jobs end (100). A gang is never partly admitted, nor are victims
    evicted for one that cannot run.
    """
    rows = [job(i, 0.0, "a", 1, 4) for i in range(1, 5)] + [job(5, 10.0, "b", 3, 4)]
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    for replay in both(jobs_frame(rows), nodes, two_queues(tmp_path)):
        assert evictions(replay) == {}
        assert starts(replay)[5] == 100.0


def test_a_queue_that_is_not_reclaimable_keeps_its_pods(tmp_path: Path) -> None:
    """The first case with ``reclaimable: false`` on queue a: no reclaimee anywhere; job 5 waits until 100."""
    rows = [job(i, 0.0, "a", 1, 4) for i in range(1, 5)] + [job(5, 10.0, "b", 2, 4)]
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    for replay in both(jobs_frame(rows), nodes, two_queues(tmp_path, reclaimable="false")):
        assert evictions(replay) == {}
        assert starts(replay)[5] == 100.0


def test_a_job_that_never_preempts_does_not_reclaim(tmp_path: Path) -> None:
    """The first case with job 5's PriorityClass ``preemptionPolicy: Never``: its queue leaves the action."""
    rows = [job(i, 0.0, "a", 1, 4) for i in range(1, 5)]
    rows.append({**job(5, 10.0, "b", 2, 4), "preemption_policy": "Never"})
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    for replay in both(jobs_frame(rows), nodes, two_queues(tmp_path)):
        assert evictions(replay) == {}
        assert starts(replay)[5] == 100.0


def test_victims_come_from_the_queue_last_in_queue_order_and_only_above_deserved(tmp_path: Path) -> None:
    """One 8-GPU node. Queue a (weight 2) runs job 1 (4 GPUs) and job 2 (1 GPU); queue c (weight 1) runs
    jobs 3, 4, 5 (1 GPU each), all from 0. Queue b (weight 1) submits job 6 (one 2-GPU pod) at 10.

    Deserved at 10 (requests a 5, c 3, b 2; weights 2:1:1 of 8 GPUs): a 4, c 2, b 2. Shares: a 5/4 = 1.25,
    c 3/2 = 1.5, so c comes last in queue order and its pods are the first victims, newest job first; then
    a's, the larger drf share (job 1) first. The proportion plugin walks them on copies of the queues'
    allocations: job 5 (c 3 > 2, then 2), job 4 (c at 2 = deserved: kept), job 3 (kept), job 1 (a 5 > 4,
    then 1), job 2 (a 1 <= 4: kept). Evicted in that order until the pod is covered: job 5 gives 1 GPU, job 1
    four more. Reclaim takes a 4-GPU job for a 2-GPU pod: it evicts whole victims in order, not the smallest
    set. Job 6 starts at 40; jobs 1 and 5 cannot come back before others end (a at 1 + 4 > 4, c at 2 + 1 > 2
    GPUs: not ``Allocatable``), so 3 GPUs stay idle meanwhile.
    """
    rows = [job(1, 0.0, "a", 1, 4), job(2, 0.0, "a", 1, 1)]
    rows += [job(i, 0.0, "c", 1, 1) for i in (3, 4, 5)] + [job(6, 10.0, "b", 1, 2)]
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    policy = manifests(
        tmp_path,
        queue("a", weight=2),
        queue("b", weight=1),
        queue("c", weight=1),
        overcommit_factor=2.0,
        actions=RECLAIM,
    )
    for replay in both(jobs_frame(rows), nodes, policy):
        assert evictions(replay) == {1: 6, 5: 6}
        assert starts(replay)[6] == 40.0
        used = replay.queues.filter(pl.col("time") == 50.0).select("queue", "usage_gpu")
        assert sorted(used.iter_rows()) == [("a", 1.0), ("b", 2.0), ("c", 2.0)]


@pytest.mark.parametrize(
    ("actions", "runs", "words"),
    [
        (None, (False, False), ""),
        ("enqueue, allocate, backfill", (False, False), ""),
        ("enqueue,allocate,reclaim,backfill", (False, True), ""),
        ("enqueue, allocate, backfill, reclaim", (False, True), ""),
        ("enqueue, allocate, preempt, backfill", (True, False), ""),
        ("enqueue, allocate, preempt, reclaim, backfill", (True, True), ""),
        ("enqueue, allocate, backfill, preempt, reclaim", (True, True), ""),
        ("enqueue, allocate, reclaim, preempt, backfill", None, "reclaim before preempt is not modelled"),
        ("enqueue, allocate, gangpreempt, backfill", None, "gangpreempt action is not modelled"),
        ("enqueue, reserve, allocate, backfill", None, "reserve action is not modelled"),
        ("enqueue, reclaim, allocate, backfill", None, "the replay models enqueue, allocate, then"),
        ("allocate, backfill", None, "the replay models enqueue, allocate, then"),
    ],
)
def test_action_lists(actions: str | None, runs: tuple[bool, bool] | None, words: str) -> None:
    if runs is None:
        with pytest.raises(ValueError, match=words):
            volcano_actions(actions)
    else:
        assert volcano_actions(actions) == runs


def test_actions_are_refused_outside_volcano_and_when_not_modelled() -> None:
    rows = jobs_frame([job(1, 0.0, "a", 1, 1)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    kueue = Policy(name="k", queues=QueueModel.kueue, quotas=QuotaSource.gpu_time_share, actions=RECLAIM)
    with pytest.raises(InputError, match=r"'scheduler\.actions': is read under queues: volcano or kai only"):
        simulate(rows, nodes, kueue)
    wrong = replace(
        VOLCANO, quotas=QuotaSource.gpu_time_share, actions="enqueue, allocate, gangpreempt, backfill"
    )
    with pytest.raises(InputError, match=r"'scheduler\.actions': Volcano's gangpreempt action is not"):
        simulate(rows, nodes, wrong)
