"""KAI's reclaim and preempt actions (``scheduler.actions: allocate, reclaim, preempt``): hand-computed cases.

docs/systems.md, "KAI Scheduler" (NVIDIA/KAI-Scheduler ``actions/reclaim``, ``actions/preempt``, the job
solver,
``plugins/proportion/reclaimable``); docs/engine/queues/kai.md, "KAI reclaim and preempt". Each end-to-end
case runs on the engine and on its plain twin (``both``); the reclaim rules are also checked on plain queue
states. Nodes have 4 GPUs; the termination grace is the default 30 s.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kai_queues import UNLIMITED, manifests, queue
from tests.test_kueue_quota import both, job, starts
from tests.test_volcano_reclaim import evictions

from gpureplay.errors import InputError
from gpureplay.queues.kai_actions import kai_actions
from gpureplay.queues.kai_order import KaiQueueState, victim_first
from gpureplay.queues.kai_reclaimable import can_reclaim, leveled, reclaimable
from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import Policy

BOTH = "allocate, reclaim, preempt"


def nodes(n: int = 1) -> pl.DataFrame:
    return nodes_frame([{"gpu_model": "V100", "num_gpus": 4}] * n)


def gpu(quota: int, weight: int = 1) -> str:
    return f"{{quota: {quota}, overQuotaWeight: {weight}, limit: -1}}"


def acting(policy: Policy, actions: str | None = BOTH) -> Policy:
    return replace(policy, actions=actions)


def test_a_queue_under_its_fair_share_reclaims_from_one_above_its_allocatable_share(tmp_path: Path) -> None:
    """vc-a and vc-b, quota 2 each. vc-b's four 1-GPU jobs (1-4) fill the node at 0; vc-a's two (5, 6)
    arrive at 10. Fair shares then: 2 and 2 (quotas, nothing left over).

    Reclaim, job 5: vc-a holds 0, 0 + 1 <= 2 (CanReclaimResources). Victims: vc-b's jobs in reverse job
    order (same priority and submit time: the highest id first), job 4; one GPU frees room for job 5's pod;
    MaintainFairShare: vc-b holds 4 > its allocatable share max(2, 2); vc-a's fair-share ratio with the
    job 1/2 is not above 1. Job 4 is evicted; job 6 likewise evicts job 3 (vc-b still holds 3 > 2). Both
    start when the victims' 30-s grace ends, at 40; the victims come back and wait for room (vc-b at its
    fair share cannot reclaim: 2 + 1 > 2). Without the action vc-a waits until 1000.
    """
    policy = manifests(tmp_path, queue("vc-a", gpu(2)), queue("vc-b", gpu(2)))
    rows = [job(i, 0.0, "vc-b", 1, 1, duration=1000.0) for i in (1, 2, 3, 4)]
    rows += [job(5, 10.0, "vc-a", 1, 1), job(6, 10.0, "vc-a", 1, 1)]
    jobs = jobs_frame(rows)
    for replay in both(jobs, nodes(), acting(policy)):
        assert evictions(replay) == {4: 5, 3: 6}
        assert starts(replay)[5] == starts(replay)[6] == 40.0
    for replay in both(jobs, nodes(), policy):
        assert evictions(replay) == {}
        assert starts(replay)[5] == 1000.0


def test_a_queue_that_would_pass_its_fair_share_does_not_reclaim(tmp_path: Path) -> None:
    """vc-a quota 1, vc-b quota 3; vc-b fills the node at 0. A 2-GPU job of vc-a at 10: its fair share is
    its quota 1 (nothing left over), 0 + 2 > 1, so it may not reclaim. A 1-GPU job may (0 + 1 <= 1), and
    vc-b, holding 4 over its allocatable share 3, gives up its newest job (4)."""
    policy = acting(manifests(tmp_path, queue("vc-a", gpu(1)), queue("vc-b", gpu(3))))
    rows = [job(i, 0.0, "vc-b", 1, 1, duration=1000.0) for i in (1, 2, 3, 4)]
    for replay in both(jobs_frame([*rows, job(5, 10.0, "vc-a", 1, 2)]), nodes(), policy):
        assert evictions(replay) == {}
    for replay in both(jobs_frame([*rows, job(5, 10.0, "vc-a", 1, 1)]), nodes(), policy):
        assert evictions(replay) == {4: 5}


def test_preempt_takes_lower_priority_preemptible_jobs_of_the_queue_only(tmp_path: Path) -> None:
    """One queue (quota 4). At 0 jobs 1 and 4 (priority 100: non-preemptible, KAI's rule) and 2 and 3
    (priority 50) take a GPU each; at 10 job 5 (priority 125, non-preemptible, one 2-GPU pod) finds no room.

    Preempt (its queue's non-preemptible allocation 2 + 2 stays within quota 4): victims are the queue's
    preemptible jobs of lower priority, 2 and 3, in reverse job order (3 first). One GPU is not room for
    the pod, two are: both are evicted and job 5 starts at 40. The non-preemptible jobs 1 and 4 are never
    victims; under reclaim alone (another queue's jobs only) nothing is evicted.
    """
    policy = manifests(tmp_path, queue("vc-a", gpu(4)))
    rows = [job(i, 0.0, "vc-a", 1, 1, duration=1000.0) for i in (1, 2, 3, 4)]
    rows.append(job(5, 10.0, "vc-a", 1, 2))
    frame = jobs_frame(rows).with_columns(
        priority=pl.Series([100, 50, 50, 100, 125], dtype=pl.Int32),
        preemptible=pl.Series([False, True, True, False, False]),
    )
    for replay in both(frame, nodes(), acting(policy, "allocate, preempt")):
        assert evictions(replay) == {3: 5, 2: 5}
        assert starts(replay)[5] == 40.0
    for replay in both(frame, nodes(), acting(policy, "allocate, reclaim")):
        assert evictions(replay) == {}


def test_a_gang_over_two_nodes_is_solved_pod_count_by_pod_count(tmp_path: Path) -> None:
    """Two 4-GPU nodes; vc-b (quota 0) runs eight 1-GPU jobs at 0, four per node; vc-a (quota 8) asks at
    10 for a gang of two 4-GPU pods: fair shares 8 and 0, 0 + 8 <= 8.

    The solver probes 1 pod first: victims in reverse job order (8, 7, 6, 5) until one node is empty;
    those recorded, 2 pods: the other node's four jobs are added. Each victim passes MaintainFairShare
    (vc-b's remaining allocation, 8 down to 1, stays above its allocatable share 0). All eight are
    evicted for job 9, which starts at 40."""
    policy = acting(manifests(tmp_path, queue("vc-a", gpu(8)), queue("vc-b", gpu(0))))
    rows = [job(i, 0.0, "vc-b", 1, 1, duration=1000.0) for i in range(1, 9)]
    rows.append(job(9, 10.0, "vc-a", 2, 4))
    for replay in both(jobs_frame(rows), nodes(2), policy):
        assert evictions(replay) == {i: 9 for i in range(1, 9)}
        assert starts(replay)[9] == 40.0


def state(quota: float, fair: float, allocated: float, *, parent: int = -1, np: float = 0.0) -> KaiQueueState:
    """A queue holding GPUs only (CPU and memory unlimited and unused)."""
    return KaiQueueState(
        quota=(quota, -1.0, -1.0),
        limit=(-1.0, -1.0, -1.0),
        fair=(fair, 0.0, 0.0),
        allocated=(allocated, 0.0, 0.0),
        non_preemptible=(np, 0.0, 0.0),
        priority=100,
        created=0,
        parent=parent,
    )


def test_the_reclaim_strategies_on_plain_queue_states() -> None:
    """``reclaimable.go`` with queue 0 reclaiming a 1-GPU job from queue 1's 1-GPU victims.

    MaintainFairShare: queue 1 above its allocatable share max(quota, fair) before each victim leaves.
    GuaranteeDeservedQuota: queue 0 within its quota with the job and queue 1 above its quota, though at
    or below its allocatable share. Each victim is checked before its GPUs leave: from 3 GPUs with
    allocatable 2, the first victim passes (3 > 2) and the second does not (2 > 2 fails).
    """
    one = (1.0, 0.0, 0.0)
    queues = [state(2, 2, 0), state(2, 2, 3)]
    assert reclaimable(queues, 0, one, True, [(1, one)])
    assert not reclaimable(queues, 0, one, True, [(1, one), (1, one)])
    # Queue 1 at its fair share 3 but above quota 1: only GuaranteeDeservedQuota, while queue 0 stays
    # within its quota 1 with the job (0 + 1 <= 1), not with a 2-GPU job.
    queues = [state(1, 1, 0), state(1, 3, 3)]
    assert reclaimable(queues, 0, one, True, [(1, one)])
    assert not reclaimable(queues, 0, (2.0, 0.0, 0.0), True, [(1, one)])
    # A non-preemptible reclaimer keeps its non-preemptible allocation within quota: 1 + 1 > 1.
    queues = [state(1, 1, 0, np=1.0), state(2, 2, 3)]
    assert not reclaimable(queues, 0, one, False, [(1, one)])
    assert reclaimable(queues, 0, one, True, [(1, one)])


def test_the_fair_share_saturation_of_a_reclaimer_above_its_fair_share() -> None:
    """``isFairShareSaturationLowerPerResource``: a reclaimer whose allocation with the job goes above its
    fair share (ratio > 1) must stay strictly below each sibling that loses victims. Queue 0 (fair 2, holds
    2) takes a 1-GPU job: ratio 3/2 = 1.5. Its sibling queue 1 (fair 2, quota 0) keeps 4 - 1 = 3 after the
    victim: 1.5 < 1.5 fails; with 5 held it keeps 4, ratio 2 > 1.5 passes."""
    one = (1.0, 0.0, 0.0)
    assert not reclaimable([state(2, 2, 2), state(0, 2, 4)], 0, one, True, [(1, one)])
    assert reclaimable([state(2, 2, 2), state(0, 2, 5)], 0, one, True, [(1, one)])
    assert can_reclaim(state(2, 2, 1), one, True)
    assert not can_reclaim(state(2, 2, 2), one, True)


def test_the_saturation_check_compares_the_involved_resources_only() -> None:
    """``isFairShareSaturationLowerPerResource`` (KAI v0.8.0 to v0.13.0) compares only the resources the job
    requests or the sibling's victims hold. Queue 0 holds 4 cores over a CPU fair share of 1 (ratio 4);
    queue 1 holds 1 core on a CPU fair share of 1 (ratio 1) and 4 GPUs over a GPU fair share of 2. A 1-GPU
    job of queue 0 (no CPU) taking a GPU-only victim of queue 1 is not compared on CPU: reclaimable. A victim
    holding half a core makes CPU involved: 4 >= (1 - 0.5) / 1, refused."""
    mine = KaiQueueState(
        quota=(2.0, 1000.0, -1.0), limit=(-1.0, -1.0, -1.0), fair=(2.0, 1000.0, 0.0),
        allocated=(0.0, 4000.0, 0.0), non_preemptible=(0.0, 0.0, 0.0), priority=100, created=0, parent=-1,
    )  # fmt: skip
    theirs = replace(mine, quota=(0.0, -1.0, -1.0), fair=(2.0, 1000.0, 0.0), allocated=(4.0, 1000.0, 0.0))
    one = (1.0, 0.0, 0.0)
    assert reclaimable([mine, theirs], 0, one, True, [(1, one)])
    assert not reclaimable([mine, theirs], 0, one, True, [(1, (1.0, 500.0, 0.0))])
    assert not reclaimable([mine, theirs], 0, (1.0, 100.0, 0.0), True, [(1, one)])  # the job's CPU


def test_a_resource_neither_side_uses_does_not_stop_a_reclaim(tmp_path: Path) -> None:
    """dept-a (GPU quota 2; CPU quota 1 core, overQuotaWeight 0) over team-a1 (GPU quota 2, CPU quota 4
    cores), and vc-b (GPU quota 2), CPU otherwise unbounded; one 4-GPU node, its CPU unknown (unbounded). At 0
    team-a1's four preemptible CPU jobs (1-4: no GPU, 1 core each), vc-b's four 1-GPU jobs (5-8) and its
    non-preemptible CPU job 9 (no GPU, 1 core, priority 100) start. At 10 team-a1's 1-GPU job 10 arrives.

    Fair shares at 10: GPUs dept-a 1 (its request), vc-b 2 + floor(1) = 3, team-a1 1; CPU dept-a its quota,
    1 core (nothing over quota at weight 0), team-a1 its quota, 4 cores (a quota is not cut to the parent's
    share), vc-b 1 core (its request). Job 10 may reclaim: team-a1 with it holds 1 <= 1 GPU and 4 <= 4 cores.
    The only victims are vc-b's 1-GPU jobs, newest first: job 8; vc-b holds 4 GPUs > its allocatable 3
    (MaintainFairShare). Saturation at the top level: dept-a's GPU ratio (0 + 1) / 1 is not above 1; its CPU
    ratio 4 cores / 1 is, against vc-b's 1 / 1, but neither job 10 nor job 8 uses CPU, so KAI (v0.8.0 to
    v0.13.0) does not compare it: job 8 is evicted and job 10 starts after the 30-s grace, at 40. (Compared on
    every resource, as in a commit of KAI's pull request #374 before its merge, no scenario passes: job 10
    would wait for vc-b's jobs to end, at 1000.)
    """
    cpu_line = f"cpu: {UNLIMITED}"
    dept = queue("dept-a", gpu(2)).replace(cpu_line, "cpu: {quota: 1000, overQuotaWeight: 0, limit: -1}")
    team = queue("team-a1", gpu(2), parent="dept-a").replace(
        cpu_line, "cpu: {quota: 4000, overQuotaWeight: 1, limit: -1}"
    )
    policy = acting(manifests(tmp_path, dept, team, queue("vc-b", gpu(2))))
    rows = [{**job(i, 0.0, "team-a1", 1, 0, duration=1000.0), "cpu_milli": 1000} for i in (1, 2, 3, 4)]
    rows += [job(i, 0.0, "vc-b", 1, 1, duration=1000.0) for i in (5, 6, 7, 8)]
    rows.append({**job(9, 0.0, "vc-b", 1, 0, duration=1000.0), "cpu_milli": 1000, "priority": 100})
    rows.append(job(10, 10.0, "team-a1", 1, 1))
    for replay in both(jobs_frame(rows), nodes(), policy):
        assert {j: t for j, t in starts(replay).items() if j < 10} == dict.fromkeys(range(1, 10), 0.0)
        assert evictions(replay) == {8: 10}
        assert starts(replay)[10] == 40.0


def test_victims_are_compared_at_the_level_below_the_common_ancestor() -> None:
    """Queues: 2 and 3 top-level parents; leaves 0 (under 2) and 1 (under 3), 4 (under 2). Leaf 0 against
    leaf 1 compares parents 2 and 3; against its sibling 4, the leaves themselves."""
    queues = [state(1, 1, 0, parent=2), state(1, 1, 0, parent=3), state(2, 2, 0), state(2, 2, 0)]
    queues.append(state(1, 1, 0, parent=2))
    assert leveled(queues, 0, 1) == (2, 3)
    assert leveled(queues, 0, 4) == (0, 4)


def test_the_victim_order_reverses_the_queue_order() -> None:
    """A queue above its quota gives victims first (criterion 2 reversed: "over fair share" needs every
    resource, and these queues use no CPU); at equal states, the one whose dominant share without its
    victims stays larger (criterion 5 reversed), then the newer queue (criterion 8)."""
    over, under = state(2, 2, 3), state(2, 2, 1)
    assert victim_first(over, (1.0, 0.0, 0.0), under, (1.0, 0.0, 0.0), (8.0, 0.0, 0.0))
    assert not victim_first(under, (1.0, 0.0, 0.0), over, (1.0, 0.0, 0.0), (8.0, 0.0, 0.0))
    a, b = state(2, 2, 2), state(2, 2, 2)
    assert victim_first(a, (0.0, 0.0, 0.0), b, (1.0, 0.0, 0.0), (8.0, 0.0, 0.0))
    assert victim_first(a, (1.0, 0.0, 0.0), replace(b, created=-1), (1.0, 0.0, 0.0), (8.0, 0.0, 0.0))


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        (None, (False, False)),
        ("allocate", (False, False)),
        ("allocate, reclaim", (True, False)),
        ("allocate, preempt", (False, True)),
        ("allocate, reclaim, preempt, stalegangeviction", (True, True)),
    ],
)
def test_the_modelled_action_lists(actions: str | None, expected: tuple[bool, bool]) -> None:
    assert kai_actions(actions) == expected


@pytest.mark.parametrize(
    ("actions", "says"),
    [
        ("allocate, consolidation, reclaim", "consolidation action is not modelled"),
        ("allocate, preempt, reclaim", "in KAI's order"),
        ("reclaim, allocate", "allocate first"),
        ("allocate, backfill", "'backfill': KAI's actions are"),
    ],
)
def test_unmodelled_action_lists_are_refused(actions: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        kai_actions(actions)


def test_the_actions_refuse_fractional_gpu_pods_naming_the_row(tmp_path: Path) -> None:
    policy = acting(manifests(tmp_path, queue("vc-a", gpu(4))))
    jobs = jobs_frame([job(1, 0.0, "vc-a", 1, 1), {**job(2, 0.0, "vc-a", 1, 1), "gpu_milli": 500}])
    with pytest.raises(InputError, match=r"row 2.*gpu_milli 500 is a fraction"):
        simulate(jobs, nodes(), policy)
