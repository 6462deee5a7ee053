"""Kueue's preemption under fair sharing: Kueue's own test table, and replays on the engine and its twin.

The rule is gpureplay.queues.kueue_fair_preemption (docs/engine/queues/kueue.md, "Kueue preemption"). The
table is kubernetes-sigs/kueue ``pkg/scheduler/preemption/preemption_fair_test.go`` ``TestFairPreemptions``
(the cases of a flat cohort), with Kueue's CPU units read as GPUs: ClusterQueues a, b, c of nominal 3 and
``preemptible`` of nominal 0 in cohort ``all`` (lendable 9), ``withinClusterQueue: LowerPriority``,
``reclaimWithinCohort: Any``; workloads admitted at the same time, so candidates of one priority go by
name (Kueue: UID), which the job ids below follow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_preemption import evictions, preempting
from tests.test_kueue_quota import both, cluster_queue, job, manifests, starts

from gpureplay.engine.queues.kueue.preempt import FS_BOTH, FS_INITIAL_SHARE
from gpureplay.errors import InputError
from gpureplay.queues.kueue_fair_preemption import fair_preemption_targets
from gpureplay.queues.kueue_preemption import Admitted, uniform_table
from gpureplay.queues.kueue_quota import KueueQuotas, generated_quotas
from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import (
    BorrowWithinCohort,
    FairSharingStrategies,
    QuotaSource,
    ReclaimWithinCohort,
    WithinClusterQueue,
)

QUEUES = {"a": 0, "b": 1, "c": 2, "preemptible": 3}


def cohort(
    weights: dict[str, float] | None = None, queues: tuple[str, ...] = ("a", "b", "c", "preemptible")
) -> KueueQuotas:
    """Kueue's ``baseCQs`` (or those of ``queues``) with fair sharing on, as the test table builds them."""
    quotas = generated_quotas(
        {q: 0.0 if q == "preemptible" else 3.0 for q in queues}, cohort=True, source="test"
    )
    table = uniform_table(
        len(queues),
        WithinClusterQueue.lower_priority,
        ReclaimWithinCohort.any,
        BorrowWithinCohort.lower_priority,
        -3,
    )
    weight = np.ones(len(quotas.names))
    for name, value in (weights or {}).items():
        weight[quotas.names.index(name)] = value
    return replace(quotas, preemption=table, fair_sharing=True, weight=weight)


def usage_of(quotas: KueueQuotas, admitted: list[Admitted]) -> list[list[int]]:
    usage = [[0] * quotas.num_cluster_queues for _ in range(3)]
    for c in admitted:
        for r in range(3):
            usage[r][c.cluster_queue] += c.request[r]
    return usage


def workloads(quotas: KueueQuotas, spec: str, queue_of: Callable[[str], str] | None = None) -> list[Admitted]:
    """``"a1:3 b_low:5@0"``: name (queue = its first letter, or ``preemptible``; or ``queue_of(name)``),
    GPUs, priority."""
    found = []
    for i, item in enumerate(spec.split()):
        name, _, rest = item.partition(":")
        amount, _, priority = rest.partition("@")
        if queue_of is not None:
            queue = queue_of(name)
        else:
            queue = "preemptible" if name.startswith("preemptible") else name[0]
        found.append(
            Admitted(
                job_id=i + 1,
                cluster_queue=quotas.names.index(queue),
                priority=int(priority or 0),
                timestamp=0.0,
                admitted=0.0,
                evicted=False,
                request=(round(float(amount) * 1000), 0, 0),
            )
        )
    return found


UNITS9 = "a1:1 a2:1 a3:1 b1:1 b2:1 b3:1 b4:1 b5:1 c1:1"

#: (Kueue's case name, admitted, incoming queue, incoming GPUs, incoming priority, strategies, weights,
#: the names Kueue preempts).
CASES = [
    ("reclaim nominal from user using the most", UNITS9, "c", 1, 0, "both", None, {"b1"}),
    (
        "can reclaim from queue using less, if taking the latest workload from user using the most "
        "isn't enough",
        "a1:3 a2:1 b1:2 b2:3",
        "c",
        3,
        0,
        "both",
        None,
        {"a1"},
    ),
    ("reclaim borrowable quota from user using the most", UNITS9, "a", 1, 0, "both", None, {"b1"}),
    (
        "preempt one from each CQ borrowing",
        "a1:0.5 a2:0.5 a3:3 b1:0.5 b2:0.5 b3:3",
        "c",
        2,
        0,
        "both",
        None,
        {"a1", "b1"},
    ),
    (
        "can't preempt when everyone under nominal",
        "a1:1 a2:1 a3:1 b1:1 b2:1 b3:1 c1:1 c2:1 c3:1",
        "c",
        1,
        0,
        "both",
        None,
        set(),
    ),
    (
        "can't preempt when it would switch the imbalance",
        "a1:1 a2:1 a3:1 b1:1 b2:1 b3:1 b4:1 b5:1",
        "a",
        2,
        0,
        "both",
        None,
        set(),
    ),
    (
        "can preempt lower priority workloads from same CQ",
        "a1_low:1@-1 a2_low:1@-1 a3:1 a4:1 b1:1 b2:1 b3:1 b4:1 b5:1",
        "a",
        2,
        0,
        "both",
        None,
        {"a1_low", "a2_low"},
    ),
    (
        "can preempt a combination of same CQ and highest user",
        "a_low:1@-1 a2:1 a3:1 b1:1 b2:1 b3:1 b4:1 b5:1 b6:1",
        "a",
        2,
        0,
        "both",
        None,
        {"a_low", "b1"},
    ),
    (
        "preempt huge workload if there is no other option, as long as the target CQ gets a lower share",
        "b1:9",
        "a",
        2,
        0,
        "both",
        None,
        {"b1"},
    ),
    ("can't preempt huge workload if the incoming is also huge", "a1:2 b1:7", "a", 5, 0, "both", None, set()),
    (
        "can't preempt 2 smaller workloads if the incoming is huge",
        "b1:2 b2:2 b3:3",
        "a",
        6,
        0,
        "both",
        None,
        set(),
    ),
    (
        "preempt from target and others even if over nominal",
        "a1_low:2@-1 a2_low:1@-1 b1:3 b2:3",
        "a",
        4,
        0,
        "both",
        None,
        {"a1_low", "b1"},
    ),
    (
        "prefer to preempt workloads that don't make the target CQ have the biggest share",
        "b1:2 b2:1 b3:2 c1:1",
        "a",
        3.5,
        0,
        "both",
        None,
        {"b2"},
    ),
    (
        "preempt from different cluster queues if the end result has a smaller max share",
        "b1:2 b2:2.5 c1:2 c2:2.5",
        "a",
        3.5,
        0,
        "both",
        None,
        {"b1", "c1"},
    ),
    ("scenario above does not flap", "a1:3.5 b2:2.5 c2:2.5", "b", 2, 0, "both", None, set()),
    (
        "cannot preempt if it would make the candidate CQ go under nominal after preempting one element",
        "b1:3 b2:3 c1:3",
        "a",
        4,
        0,
        "both",
        None,
        set(),
    ),
    (
        "workloads under priority threshold not capriciously preempted",
        "a1:1 a2:1 a3:1 b1:1 b2:1 b3:1 preemptible1:1@-3 preemptible2:1@-3 preemptible3:1@-3",
        "a",
        2,
        0,
        "both",
        None,
        set(),
    ),
    (
        "preempt lower priority first, even if big",
        "a1:3 b_low:5@0 b_high:1@1",
        "a",
        1,
        0,
        "less_than_initial_share",
        None,
        {"b_low"},
    ),
    (
        "preempt workload that doesn't transfer the imbalance, even if high priority",
        "a1:3 b_low:5@0 b_high:1@1",
        "a",
        1,
        0,
        "less_than_or_equal_to_final_share",
        None,
        {"b_high"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kueues_own_fair_preemption_table(case: tuple) -> None:
    _, spec, queue, gpus, priority, strategies, weights, expected = case
    quotas = cohort(weights)
    admitted = workloads(quotas, spec)
    names = {c.job_id: spec.split()[c.job_id - 1].partition(":")[0] for c in admitted}
    targets = fair_preemption_targets(
        quotas,
        usage_of(quotas, admitted),
        quotas.names.index(queue),
        (round(gpus * 1000), 0, 0),
        priority,
        1.0,
        admitted,
        FairSharingStrategies[strategies],
    )
    assert {names[t.job_id] for t in targets} == expected


@pytest.mark.parametrize(
    ("name", "weights", "spec", "gpus", "expected"),
    [
        (
            "CQ with higher weight can preempt more",
            {"a": 2.0},
            "a1:1 a2:1 a3:1 " + " ".join(f"b{i}:1" for i in range(1, 7)),
            2,
            {"b1", "b2"},
        ),
        (
            "can preempt anything borrowing from CQ with 0 weight",
            {"b": 0.0},
            "a1:1 a2:1 a3:1 " + " ".join(f"b{i}:1" for i in range(1, 7)),
            3,
            {"b1", "b2", "b3"},
        ),
        (
            "can't preempt nominal from CQ with 0 weight",
            {"b": 0.0},
            "a1:1 a2:1 a3:1 b1:1 b2:1 b3:1",
            1,
            set(),
        ),
    ],
)
def test_kueues_weighted_cases(
    name: str, weights: dict[str, float], spec: str, gpus: float, expected: set[str]
) -> None:
    """Kueue's cases with ``fairSharing.weight``: ClusterQueues a, b, c of nominal 3 (no ``preemptible``)."""
    quotas = cohort(weights, queues=("a", "b", "c"))
    admitted = workloads(quotas, spec)
    names = {c.job_id: spec.split()[c.job_id - 1].partition(":")[0] for c in admitted}
    targets = fair_preemption_targets(
        quotas, usage_of(quotas, admitted), 0, (round(gpus * 1000), 0, 0), 0, 1.0, admitted
    )
    assert {names[t.job_id] for t in targets} == expected, name


def test_a_queue_without_a_cohort_preempts_within_itself() -> None:
    """Kueue's "can preempt within cluster queue when no cohort": a (nominal 1) holds a1; 1000 evicts it."""
    quotas = replace(
        generated_quotas({"a": 1.0}, cohort=False, source="test"),
        preemption=uniform_table(
            1, WithinClusterQueue.lower_priority, ReclaimWithinCohort.never, BorrowWithinCohort.never, None
        ),
        fair_sharing=True,
    )
    admitted = workloads(quotas, "a1:1")
    targets = fair_preemption_targets(
        quotas, usage_of(quotas, admitted), 0, (1000, 0, 0), 1000, 1.0, admitted
    )
    assert [t.job_id for t in targets] == [1]


NODES = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)


def fair(policy_path: Path, *queues: str, strategies: str = "both"):
    return replace(
        manifests(policy_path, *queues),
        fair_sharing=True,
        fair_sharing_strategies=FairSharingStrategies[strategies],
    )


def test_fair_sharing_reclaims_from_the_queue_with_the_highest_share(tmp_path: Path) -> None:
    """Three ClusterQueues of nominal 4 GPUs on 16 GPUs: at 0 team-a holds 4, team-b 8 (2-GPU jobs).

    At 10 team-a's 4-GPU job asks for more (team-a would use 8, borrowing 4: share 4 x 1000 / 12 = 333);
    team-b borrows 4 (333). S2-a: after removing one 2-GPU job team-b would use 6 (167) < 333: fails for
    every job; S2-b: 333 < 333 fails: nothing is evicted, team-a's job waits for team-b's first job (100).
    A 2-GPU job instead (team-a at 6: 167): team-b's first candidate (same priority and start: lowest id,
    job 2) passes S2-a (167 <= 167) and is evicted at 10; the preemptor starts when it is gone (40).
    Classical preemption (fair sharing off) evicts nothing for either: team-a would borrow, and without
    borrowWithinCohort a preemptor at or above its nominal quota reclaims only without borrowing.
    """
    queues = [
        preempting(cluster_queue(name, 4), reclaimWithinCohort="Any")
        for name in ("team-a", "team-b", "team-c")
    ]
    policy = fair(tmp_path, *queues)
    held = [job(1, 0.0, "team-a", 1, 4)] + [job(i, 0.0, "team-b", 1, 2) for i in range(2, 6)]
    for gpus, evicted, start in ((4, [], 100.0), (2, [(2, 10.0, 6)], 40.0)):
        jobs = jobs_frame([*held, job(6, 10.0, "team-a", 1, gpus)])
        for replay in both(jobs, NODES, policy):
            assert evictions(replay) == evicted
            assert starts(replay)[6] == start
    classical = manifests(tmp_path, *queues)
    for gpus in (4, 2):
        for replay in both(jobs_frame([*held, job(6, 10.0, "team-a", 1, gpus)]), NODES, classical):
            assert evictions(replay) == []


def test_strategies_are_refused_where_nothing_reads_them(tmp_path: Path) -> None:
    policy = replace(
        manifests(tmp_path, cluster_queue("team-a", 4)),
        fair_sharing_strategies=FairSharingStrategies.less_than_initial_share,
    )
    jobs = jobs_frame([job(1, 0.0, "team-a", 1, 1)])
    with pytest.raises(InputError, match=r"scheduler\.fair_sharing_strategies.*fair_sharing: true"):
        simulate(jobs, NODES, policy)
    derived = replace(policy, quotas=QuotaSource.gpu_time_share, manifests=None)
    with pytest.raises(InputError, match=r"scheduler\.fair_sharing_strategies"):
        simulate(jobs.with_columns(pl.lit("team-a").alias("queue")), NODES, derived)
    # With fair sharing but no ClusterQueue that may preempt, a chosen strategy would change nothing.
    idle = replace(policy, fair_sharing=True)
    with pytest.raises(InputError, match=r"scheduler\.fair_sharing_strategies.*none does here"):
        simulate(jobs, NODES, idle)
    preempting_queue = preempting(cluster_queue("team-a", 4), withinClusterQueue="LowerPriority")
    simulate(jobs, NODES, fair(tmp_path, preempting_queue, strategies="less_than_initial_share"))


def test_the_second_strategy_evicts_what_the_first_refuses(tmp_path: Path) -> None:
    """team-a holds 4 GPUs, team-b one 8-GPU job (borrowing 4: share 4 x 1000 / 12 = 333); at 10 team-a's
    2-GPU job would take team-a to 6 (share 167).

    S2-a: without its job team-b's share is 0 < 167: refused. S2-b: 167 < 333: team-b's job is evicted at 10
    and the preemptor starts at 40 (grace 30). With ``less_than_or_equal_to_final_share`` alone nothing is
    evicted (the preemptor waits for team-a's job to end at 100); with ``less_than_initial_share`` alone the
    first pass evicts it.
    """
    queues = [
        preempting(cluster_queue(name, 4), reclaimWithinCohort="Any")
        for name in ("team-a", "team-b", "team-c")
    ]
    jobs = jobs_frame(
        [job(1, 0.0, "team-a", 1, 4), job(2, 0.0, "team-b", 1, 8), job(3, 10.0, "team-a", 1, 2)]
    )
    for strategies, evicted, start in (
        ("both", [(2, 10.0, 3)], 40.0),
        ("less_than_initial_share", [(2, 10.0, 3)], 40.0),
        ("less_than_or_equal_to_final_share", [], 100.0),
    ):
        for replay in both(jobs, NODES, fair(tmp_path, *queues, strategies=strategies)):
            assert evictions(replay) == evicted, strategies
            assert starts(replay)[3] == start, strategies


def test_the_kernel_reads_the_strategies_as_the_config_numbers_them() -> None:
    """The engine takes ``fair_sharing_strategies`` as its enum value (``KueueState.fair[1]``) without
    importing the config: its constants must stay those values."""
    assert (
        FairSharingStrategies.both.value,
        FairSharingStrategies.less_than_initial_share.value,
    ) == (FS_BOTH, FS_INITIAL_SHARE)
