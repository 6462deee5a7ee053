"""Volcano's preempt action (``scheduler.actions: enqueue, allocate, preempt, backfill``): hand-computed
sessions on the engine and its reference.

docs/systems.md, "Volcano" (volcano-sh/volcano ``actions/preempt/preempt.go`` ``normalPreempt``,
``framework/session_plugins.go`` ``Preemptable``, the priority, gang and drf plugins' ``PreemptableFn``,
``plugins/proportion`` ``Allocatable``); docs/engine/queues/volcano.md, "Volcano preempt". Jobs run 100 s; the
termination grace period is 30 s; nodes have 8 GPUs. ``HELM`` is the Helm chart's plugin configuration
(``enablePreemptable: false`` on gang and drf); the default is Volcano's built-in one (every plugin on).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_quota import both, job, starts
from tests.test_volcano_queues import VOLCANO, manifests, queue
from tests.test_volcano_reclaim import evictions

from gpureplay.errors import InputError
from gpureplay.queues.volcano_actions import HELM_PREEMPTABLE, PREEMPTABLE_PLUGINS, volcano_preemptable
from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import Policy, QuotaSource

PREEMPT = "enqueue, allocate, preempt, backfill"
HELM = ", ".join(HELM_PREEMPTABLE)
TWO_NODES = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)


def one_queue(tmp_path: Path, plugins: str | None = HELM, actions: str | None = PREEMPT) -> Policy:
    return manifests(tmp_path, queue("a", weight=1), actions=actions, preemptable_plugins=plugins)


def test_a_higher_priority_job_preempts_a_fragmented_queue_under_the_helm_plugins(tmp_path: Path) -> None:
    """Queue a runs jobs 1 and 2 (one 6-GPU pod each, priority 0) on nodes 0 and 1; job 3 (one 4-GPU pod,
    priority 10) arrives at 10.

    Job 3 enters Inqueue (4 + 12 <= 16 GPUs) and is ``Allocatable`` (deserved 16), but no node has 4 free
    GPUs. Preempt (priority and conformance decide): node 0's preemptee job 1 has a lower priority; the
    node qualifies (FutureIdle 2 + 6 >= 4); the queue can take the pod but it does not fit 2 free GPUs, so
    job 1 is evicted (FutureIdle 8) and the pod is pipelined. The statement commits: job 1 is evicted at 10
    and job 3 starts when its grace ends (40). Under Volcano's built-in plugins the gang plugin's empty list
    leaves tier 1 undecided and drf decides: job 1's share after losing its pod (0) is below job 3's after
    gaining it (4/16), so nothing is evicted and job 3 waits for job 1's end (100); so it does without the
    action.
    """
    rows = [job(1, 0.0, "a", 1, 6), job(2, 0.0, "a", 1, 6), {**job(3, 10.0, "a", 1, 4), "priority": 10}]
    for replay in both(jobs_frame(rows), TWO_NODES, one_queue(tmp_path)):
        assert evictions(replay) == {1: 3}
        assert starts(replay)[3] == 40.0
    for policy in (one_queue(tmp_path, None), one_queue(tmp_path, None, None)):
        for replay in both(jobs_frame(rows), TWO_NODES, policy):
            assert evictions(replay) == {}
            assert starts(replay)[3] == 100.0


def test_the_drf_plugin_evicts_a_larger_share_of_equal_priority(tmp_path: Path) -> None:
    """Queue a runs job 1 (two 6-GPU pods, one per node) from 0; job 3 (one 4-GPU pod) arrives at 5; all
    priority 0.

    Built-in plugins: drf decides; job 3's share with its pod is 4/16 = 0.25, job 1's after losing its
    node-0 pod 6/16 = 0.375 >= 0.25: a victim. Node 0 qualifies (2 + 6 >= 4); job 1 is evicted whole and
    job 3 pipelined: it starts at 35. Job 1, requeued at 5 (after job 3's submission), comes after it and
    cannot evict it (drf: job 3 would be left with 0 < 6/16), so it restarts when job 3 ends (135). Under the
    Helm chart's plugins the priority plugin finds no lower-priority job: nothing happens until 100.
    """
    rows = [job(1, 0.0, "a", 2, 6), job(3, 5.0, "a", 1, 4)]
    for replay in both(jobs_frame(rows), TWO_NODES, one_queue(tmp_path, None)):
        assert evictions(replay) == {1: 3}
        assert starts(replay)[3] == 35.0
        restarts = replay.attempts.filter(pl.col("job_id") == 1).sort("attempt").get_column("start").to_list()
        assert restarts == [0.0, 135.0]
    for replay in both(jobs_frame(rows), TWO_NODES, one_queue(tmp_path)):
        assert evictions(replay) == {}
        assert starts(replay)[3] == 100.0


def test_a_gang_whose_second_pod_finds_no_victim_evicts_nothing(tmp_path: Path) -> None:
    """The first case with job 3 a gang of two 4-GPU pods, and job 2 at priority 10 too.

    Pod one is pipelined on node 0 after evicting job 1 (as before). Pod two: node 0 has room left
    (FutureIdle 2 + 6 - 4 = 4) but no preemptee, and ``ValidateVictims`` refuses a node without victims;
    node 1's job 2 is not of lower priority. The job is not pipelined whole, so its statement is discarded:
    job 1 keeps running and job 3 starts when jobs 1 and 2 end (100).
    """
    rows = [
        job(1, 0.0, "a", 1, 6),
        {**job(2, 0.0, "a", 1, 6), "priority": 10},
        {**job(3, 10.0, "a", 2, 4), "priority": 10},
    ]
    for replay in both(jobs_frame(rows), TWO_NODES, one_queue(tmp_path)):
        assert evictions(replay) == {}
        assert starts(replay)[3] == 100.0


def two_queues(tmp_path: Path, **policy: object) -> Policy:
    return manifests(
        tmp_path,
        queue("a", weight=1),
        queue("b", weight=1),
        overcommit_factor=2.0,
        actions=PREEMPT,
        preemptable_plugins=HELM,
        **policy,
    )


QUOTA_ROWS = [
    job(1, 0.0, "a", 1, 4),
    job(2, 0.0, "a", 1, 4),
    job(3, 0.0, "b", 1, 4),
    {**job(4, 10.0, "a", 1, 4), "priority": 10},
    job(5, 10.0, "b", 1, 8),
]


def test_a_job_preempts_within_its_queue_for_quota_not_for_room(tmp_path: Path) -> None:
    """Queue a runs jobs 1 and 2 (4 GPUs each), queue b job 3 (4 GPUs), from 0: allocate alternates the
    queues and places best-fit, so node 0 holds jobs 1 and 3, node 1 job 2. At 10 a's job 4 (4 GPUs,
    priority 10) and b's job 5 (8 GPUs) arrive.

    Deserved (requests a 12, b 12, weights 1:1 of 16): 8 each. Node 1 has 4 free GPUs, but a holds 8 of its
    8: job 4 is not ``Allocatable``. Preempt, node 0: job 1 (lower priority; job 3 is b's) is evicted (a
    4 + 4 <= 8 and FutureIdle 4 >= 4), job 4 pipelined there. Event-driven sessions: the next session is at
    the grace's end (40), where job 4 starts. With a session every second (Volcano's schedule period) the
    session at 11 already counts job 1 as Releasing, not allocated: job 4 is ``Allocatable`` and starts at
    11 on node 1's free GPUs.
    """
    for replay in both(jobs_frame(QUOTA_ROWS), TWO_NODES, two_queues(tmp_path)):
        assert evictions(replay) == {1: 4}
        assert starts(replay)[4] == 40.0
    for replay in both(jobs_frame(QUOTA_ROWS), TWO_NODES, two_queues(tmp_path, session_interval=1.0)):
        assert evictions(replay) == {1: 4}
        assert starts(replay)[4] == 11.0


def test_a_job_that_never_preempts_waits(tmp_path: Path) -> None:
    """The last case with job 4's PriorityClass ``preemptionPolicy: Never``: not eligible to preempt."""
    rows = [*QUOTA_ROWS[:3], {**QUOTA_ROWS[3], "preemption_policy": "Never"}, QUOTA_ROWS[4]]
    for replay in both(jobs_frame(rows), TWO_NODES, two_queues(tmp_path)):
        assert evictions(replay) == {}
        assert starts(replay)[4] == 100.0


def test_preemptable_plugins_are_read_in_tier_order_and_checked() -> None:
    assert volcano_preemptable(None) == PREEMPTABLE_PLUGINS
    assert volcano_preemptable("drf, priority") == ("priority", "drf")
    assert volcano_preemptable("") == ()
    with pytest.raises(ValueError, match="'proportion': the plugins with a PreemptableFn"):
        volcano_preemptable("priority, proportion")
    with pytest.raises(ValueError, match="named twice"):
        volcano_preemptable("gang, gang")


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"preemptable_plugins": HELM}, "is read by Volcano's preempt action only"),
        ({"actions": PREEMPT, "preemptable_plugins": "binpack"}, "'binpack': the plugins with"),
    ],
)
def test_preemptable_plugins_without_the_action_or_unknown_are_refused(settings: dict, words: str) -> None:
    rows = jobs_frame([job(1, 0.0, "a", 1, 1)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    policy = replace(VOLCANO, quotas=QuotaSource.gpu_time_share, **settings)
    with pytest.raises(InputError, match=rf"'scheduler\.preemptable_plugins': .*{words}"):
        simulate(rows, nodes, policy)
