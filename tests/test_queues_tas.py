"""Queue models with their own system's topology-aware placement: Kueue, Volcano and KAI.

docs/engine/placement.md, "Queues with topology-aware placement". Each system's topology-aware placement runs
inside its own scheduler, so it pairs with that system's queues (a mismatched pair is refused):

- Kueue admits a workload when its quota **and** its TAS assignment fit; a ClusterQueue that may preempt
  evicts, when the quota fits but the topology does not, targets whose removal makes both fit
  (kubernetes-sigs/kueue ``flavorassigner.go`` / ``preemption.go`` ``workloadFits``, v0.11.0+, #4171);
- Volcano's preempt action skips a job with a network topology (``preempt.go``, v1.14.0+, issue #4374);
- KAI's allocate places by its topology plugin; its reclaim and preempt with topology are refused (its
  solvers run allocate with the plugin's ``SubsetNodesFn``, which the replay's solver does not).

The cluster, unless said otherwise: two racks of two 2-GPU V100 nodes, rack 0 = nodes A, B and rack 1 = nodes
C, D (one spine; each node its own NVLink domain). Pods ask one whole GPU. Scenario tests run on the numba
engine and the plain-Python reference (the ``implementation`` fixture).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import tests.reference.simulator as reference
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_preemption import preempting
from tests.test_kueue_quota import KUEUE, cluster_queue
from tests.test_kueue_quota import manifests as kueue_manifests
from tests.test_tas import node
from tests.test_volcano_queues import manifests as volcano_manifests
from tests.test_volcano_queues import queue as volcano_queue

from gpureplay.errors import InputError
from gpureplay.queues.volcano_actions import HELM_PREEMPTABLE
from gpureplay.replay.simulate import Replay
from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.schedulers.policy import KueueAdmission, Policy, QueueModel, QuotaSource, TopologyAware

IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = engine_simulate
on_both = pytest.mark.usefixtures("implementation")

#: Rack 0: nodes A, B; rack 1: nodes C, D; 2 GPUs each.
RACKS = nodes_frame([node(2, 0, 0), node(2, 0, 0), node(2, 0, 1), node(2, 0, 1)])


def row(job_id: int, submit: float, pods: int, *, queue: str = "team-a", **extra: Any) -> dict[str, Any]:
    """A job of ``pods`` one-GPU pods (100 s) asking ``required`` rack placement unless ``extra`` says."""
    return {
        "job_id": job_id,
        "submit_time": submit,
        "duration": 100.0,
        "num_pods": pods,
        "gpu_milli": 1000,
        "cpu_milli": 0,
        "mem_mib": 0,
        "queue": queue,
        "topology_mode": "required",
        "topology_level": "rack",
        **extra,
    }


def run(jobs: list[dict[str, Any]], policy: Policy) -> Replay:
    return simulate(jobs_frame(jobs), RACKS, policy, debug=True, sample_interval=10.0)


def starts(replay: Replay) -> dict[int, float | None]:
    return dict(replay.jobs.select("job_id", "start_time").iter_rows())


def evictions(replay: Replay) -> dict[int, int]:
    """``victim job -> the job it was evicted for``."""
    rows = replay.attempts.filter(pl.col("evicted_by").is_not_null()).select("job_id", "evicted_by")
    return dict(rows.iter_rows())


def restarts(replay: Replay, job_id: int) -> list[float]:
    attempts = replay.attempts.filter(pl.col("job_id") == job_id).sort("attempt")
    return attempts.get_column("start").to_list()


def kueue_tas(tmp_path: Path, *queues: str) -> Policy:
    return replace(kueue_manifests(tmp_path, *queues), topology_aware=TopologyAware.kueue)


#: Jobs 1 (3 pods, 100 s) at 0 and 2 (3 pods, 200 s) at 1, each required in one rack, then job 3 (2 pods,
#: priority 5, required rack) at 10.
FRAGMENTED = [
    row(1, 0.0, 3),
    row(2, 1.0, 3, duration=200.0),
    row(3, 10.0, 2, priority=5),
]


@on_both
def test_kueue_admits_only_when_quota_and_topology_fit(tmp_path: Path) -> None:
    """team-a's ClusterQueue has 8 GPUs of nominal quota and no cohort.

    Job 1 (3 pods, required rack): both racks hold 4 (state 4 each, tie by id): rack 0; inside it BestFit
    takes A (2, most free first) and the tightest node for the last pod, B (1). Job 2 (3 pods) at 1: rack 0
    holds 1, rack 1 holds 4: rack 1, nodes C (2) and D (1). Free: B 1, D 1.

    Job 3 (2 pods) at 10: quota 6 + 2 <= 8 fits, but no rack holds 2 pods: Kueue's TAS does not admit it
    (the assignment fails, the ClusterQueue preempts nothing: ``withinClusterQueue: Never``). At 100 job 1
    ends: rack 0 holds 4 and job 3 starts there. Topology-blind (jobs 1 and 2 packed by the node scorer), the
    same quota admits it at 10.
    """
    policy = kueue_tas(tmp_path, cluster_queue("team-a", 8, cohort=None))
    replay = run(FRAGMENTED, policy)
    assert starts(replay) == {1: 0.0, 2: 1.0, 3: 100.0}
    assert evictions(replay) == {}
    assert replay.jobs.filter(pl.col("job_id") == 3)["racks_spanned"].to_list() == [1]
    blind = run(FRAGMENTED, replace(policy, topology_aware=TopologyAware.none))
    assert starts(blind)[3] == 10.0


@on_both
def test_kueue_preempts_for_a_topology_that_does_not_fit_although_the_quota_does(tmp_path: Path) -> None:
    """As above, with ``withinClusterQueue: LowerPriority`` (job 3 has priority 5, jobs 1 and 2 priority 0).

    Job 3's quota fits but its topology does not: Kueue's Preempt mode. Candidates (same ClusterQueue, lower
    priority) in Kueue's order, most recently admitted first: job 2 (admitted at 1), then job 1. Removing
    job 2 leaves rack 1 with 4 free: quota and topology fit, so the targets are [job 2] alone (nothing to
    fill back). Job 2 is evicted at 10 and releases at 40 (grace 30); job 3 starts at 40 in rack 1 (rack 0
    holds 1). Job 2 (3 pods) then finds rack 0 with 1 and rack 1 with 2 free: it restarts when job 1 ends,
    at 100, in rack 0. A quota-only Kueue never preempts here (the quota fits): topology-blind, job 3 starts
    at 10 and nothing is evicted.
    """
    policy = kueue_tas(
        tmp_path, preempting(cluster_queue("team-a", 8, cohort=None), withinClusterQueue="LowerPriority")
    )
    replay = run(FRAGMENTED, policy)
    assert evictions(replay) == {2: 3}
    assert starts(replay)[3] == 40.0
    assert restarts(replay, 2) == [1.0, 100.0]
    blind = run(FRAGMENTED, replace(policy, topology_aware=TopologyAware.none))
    assert evictions(blind) == {}
    assert starts(blind)[3] == 10.0


@on_both
def test_kueue_evicts_nothing_when_no_victim_set_makes_the_topology_fit(tmp_path: Path) -> None:
    """``withinClusterQueue: LowerPriority``, 8 GPUs of nominal quota, no cohort; every job asks ``required``
    rack placement.

    Job 1 (3 pods, priority 10) at 0: both racks hold 4 (tie by id): rack 0, A (2) and B (1). Job 2 (1 pod,
    priority 0) at 1: rack 0 holds 1, rack 1 holds 4; BestFit takes the tightest rack that holds it: rack 0,
    node B (rack 0 now full). Job 3 (3 pods, priority 10, 200 s) at 2: rack 1, C (2) and D (1). Used: 7 of 8;
    free: D 1.

    Job 4 (2 pods, priority 5) at 10: its quota needs preemption (7 + 2 > 8), and so does its topology (no
    rack holds 2 pods): Preempt mode; the empty cluster holds it (no rejection at arrival). Its only candidate
    (same ClusterQueue, lower priority) is job 2. With job 2 removed the quota fits (6 + 2 <= 8) but the
    topology still does not: rack 0 holds 1 (B), rack 1 holds 1 (D). Kueue's ``workloadFits`` needs both, so
    no victim set makes job 4 fit and nothing is evicted (a quota-only check would evict job 2). At 100 job 1
    ends: rack 0 holds 3 (A 2, B 1), the quota 4 + 2 <= 8, and job 4 starts in rack 0.

    Contrast, job 1 at priority 0 (same placements): the candidates are jobs 2 and 1, most recently admitted
    first. Job 2 removed: the quota fits, the topology does not; job 1 removed too: rack 0 holds 4, both fit.
    Filled back from the next-to-last: with job 2 returned rack 0 still holds 3 and the quota 4 + 2 <= 8, so
    job 2 is dropped from the targets (it keeps running); the targets are [job 1] alone. Job 1 is evicted at
    10 and releases at 40 (grace 30): job 4 starts at 40 in rack 0.
    """
    policy = kueue_tas(
        tmp_path, preempting(cluster_queue("team-a", 8, cohort=None), withinClusterQueue="LowerPriority")
    )
    jobs = [
        row(1, 0.0, 3, priority=10),
        row(2, 1.0, 1),
        row(3, 2.0, 3, priority=10, duration=200.0),
        row(4, 10.0, 2, priority=5),
    ]
    replay = run(jobs, policy)
    assert evictions(replay) == {}
    assert starts(replay) == {1: 0.0, 2: 1.0, 3: 2.0, 4: 100.0}
    placed = replay.jobs.filter(pl.col("job_id") == 4)["racks_spanned"].to_list()
    assert placed == [1]
    contrast = run([row(1, 0.0, 3), *jobs[1:]], policy)
    assert evictions(contrast) == {1: 4}
    assert starts(contrast)[4] == 40.0


VOLCANO_PREEMPT = "enqueue, allocate, preempt, backfill"


@on_both
def test_volcano_preempt_skips_a_job_with_a_network_topology(tmp_path: Path) -> None:
    """One Volcano queue; the preempt action with the Helm chart's plugins (priority and conformance decide).

    Jobs 1 and 2 (3 pods each, hard mode at the rack tier) take one rack each (3 of its 4 GPUs: 2 + 1), so
    every rack keeps one node with 1 free GPU. Job 3 (one 2-GPU pod, priority 10) at 10 is enqueued (6 + 2 <=
    8) but fits no node. With a network topology (hard, rack) Volcano's preempt action skips it: it waits
    for job 1's end and starts at 100. Without one it preempts: on the first node the lower-priority job 1
    is the victim; it is evicted at 10 and job 3 starts at 40 (grace 30).
    """
    policy = replace(
        volcano_manifests(
            tmp_path,
            volcano_queue("team-a"),
            actions=VOLCANO_PREEMPT,
            preemptable_plugins=", ".join(HELM_PREEMPTABLE),
        ),
        topology_aware=TopologyAware.volcano,
    )
    jobs = [row(1, 0.0, 3), row(2, 1.0, 3, duration=200.0)]
    hard = run([*jobs, row(3, 10.0, 1, gpu_milli=2000, priority=10)], policy)
    assert evictions(hard) == {}
    assert starts(hard)[3] == 100.0
    blind = row(3, 10.0, 1, gpu_milli=2000, priority=10, topology_mode=None, topology_level=None)
    replay = run([*jobs, blind], policy)
    assert evictions(replay) == {1: 3}
    assert starts(replay)[3] == 40.0


@on_both
def test_kai_places_a_queued_gang_only_in_one_required_domain(tmp_path: Path) -> None:
    """One KAI queue without limits (allocate alone). Jobs 1 and 2 (3 pods each, required rack) take one rack
    each: every rack keeps 1 free GPU. Job 3 (2 pods, required rack) at 10 is within its queue's fair share
    but no rack holds 2 pods: it waits for job 1's end (100). Topology-blind it starts at 10 on the two free
    GPUs."""
    from tests.test_kai_queues import UNLIMITED
    from tests.test_kai_queues import manifests as kai_manifests
    from tests.test_kai_queues import queue as kai_queue

    policy = replace(
        kai_manifests(tmp_path, kai_queue("team-a", UNLIMITED)), topology_aware=TopologyAware.kai
    )
    replay = run(FRAGMENTED, policy)
    assert starts(replay) == {1: 0.0, 2: 1.0, 3: 100.0}
    blind = run(FRAGMENTED, replace(policy, topology_aware=TopologyAware.none))
    assert starts(blind)[3] == 10.0


@pytest.mark.parametrize(
    ("queues", "topology", "change", "key", "message"),
    [
        (QueueModel.kueue, TopologyAware.kai, {}, "scheduler.topology_aware", "KAI's topology plugin runs"),
        (QueueModel.kueue, TopologyAware.volcano, {}, "scheduler.topology_aware", "HyperNode"),
        (QueueModel.volcano, TopologyAware.kueue, {}, "scheduler.topology_aware", "Kueue's own admission"),
        (QueueModel.kai, TopologyAware.kueue, {}, "scheduler.topology_aware", "Kueue's own admission"),
        (QueueModel.kai, TopologyAware.volcano, {}, "scheduler.topology_aware", "HyperNode"),
        (QueueModel.volcano, TopologyAware.kai, {}, "scheduler.topology_aware", "KAI's topology plugin"),
        (
            QueueModel.kueue,
            TopologyAware.kueue,
            {"kueue_admission": KueueAdmission.quota},
            "scheduler.kueue_admission",
            "assigns the pods' nodes at admission",
        ),
        (
            QueueModel.kai,
            TopologyAware.kai,
            {"actions": "allocate, reclaim"},
            "scheduler.actions",
            "SubsetNodesFn",
        ),
        (
            QueueModel.kai,
            TopologyAware.kai,
            {"actions": "allocate, preempt"},
            "scheduler.actions",
            "SubsetNodesFn",
        ),
    ],
)
def test_pairs_the_real_systems_do_not_run_together_are_refused(
    queues: QueueModel, topology: TopologyAware, change: dict[str, Any], key: str, message: str
) -> None:
    policy = replace(
        KUEUE, queues=queues, quotas=QuotaSource.gpu_time_share, topology_aware=topology, **change
    )
    with pytest.raises(InputError, match=message) as err:
        engine_simulate(jobs_frame([row(1, 0.0, 1, queue="a")]), RACKS, policy)
    assert key in str(err.value)
