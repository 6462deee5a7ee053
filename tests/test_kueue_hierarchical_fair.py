"""Kueue's fair sharing's preemption in cohort trees (nested cohorts, cohorts with quotas and weights).

The rule is gpureplay.queues.kueue_fair_preemption (docs/engine/queues/kueue.md, "Kueue preemption"): target
ClusterQueues are found by walking the tree from the root (kubernetes-sigs/kueue
``pkg/scheduler/preemption/fairsharing/ordering.go``), and the strategies compare the shares of the two
queues' *almost lowest common ancestors* (``fairsharing/least_common_ancestor.go``, ``target.go``). The
plain cases are Kueue's own (``preemption_fair_test.go`` ``TestFairPreemptions`` and
``fairsharing/ordering_test.go`` ``TestMakeClusterQueueOrdering``, their hierarchical cases) with Kueue's
CPUs read as GPUs; the replays run on the engine and its reference twin.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_fair_preemption import usage_of, workloads
from tests.test_kueue_preemption import evictions
from tests.test_kueue_quota import KUEUE, both, job, starts

from gpureplay.queues.kueue_fair_preemption import _Search, fair_preemption_targets
from gpureplay.queues.kueue_preemption import Admitted
from gpureplay.queues.kueue_quota import KueueQuotas, manifest_quotas
from gpureplay.queues.manifests import read_manifests

HEAD = "apiVersion: kueue.x-k8s.io/v1beta1\n"
FLAVOR = HEAD + "kind: ResourceFlavor\nmetadata:\n  name: default\n"


def _weight(weight: float | None) -> str:
    return "" if weight is None else f"  fairSharing:\n    weight: {weight}\n"


def _quota(gpus: float) -> str:
    return (
        '  resourceGroups:\n  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n    - name: default\n'
        f"      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: {gpus}\n"
    )


def cq(name: str, cohort: str, gpus: float, weight: float | None = None, **preemption: str) -> str:
    """A ClusterQueue of ``gpus`` nominal GPUs in ``cohort``; ``preemption`` as ``spec.preemption``."""
    policy = "".join(f"    {key}: {value}\n" for key, value in preemption.items())
    policy = f"  preemption:\n{policy}" if policy else ""
    body = f"  cohort: {cohort}\n{_weight(weight)}{policy}{_quota(gpus)}"
    return f"{HEAD}kind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n{body}"


def cohort(
    name: str, parent: str | None = None, gpus: float | None = None, weight: float | None = None
) -> str:
    """A Cohort under ``parent`` with a quota of its own when ``gpus`` is given."""
    body = (f"  parentName: {parent}\n" if parent else "") + _weight(weight)
    body += _quota(gpus) if gpus is not None else ""
    return f"{HEAD}kind: Cohort\nmetadata:\n  name: {name}\n" + (f"spec:\n{body}" if body else "")


def tree(tmp_path: Path, *documents: str) -> Path:
    path = tmp_path / "queues.yaml"
    path.write_text("---\n".join([FLAVOR, *documents]))
    return path


def quotas_of(path: Path, queues: list[str]) -> KueueQuotas:
    jobs = jobs_frame([job(i + 1, 0.0, q, 1, 1) for i, q in enumerate(queues)])
    return replace(manifest_quotas(read_manifests(path), jobs, ["V100"], str(path)), fair_sharing=True)


def admitted(quotas: KueueQuotas, spec: str) -> list[Admitted]:
    """``"a1:1@-1 b1:4@100"``: name (its ClusterQueue: the name less its digits), GPUs, priority."""
    return workloads(quotas, spec, lambda name: name.rstrip("0123456789"))


def targets(quotas: KueueQuotas, spec: str, queue: str, gpus: float) -> set[str]:
    """The names Kueue's fair sharing evicts for a workload of ``gpus`` GPUs (priority 0) of ``queue``."""
    held = admitted(quotas, spec)
    q = quotas.names.index(queue)
    found = fair_preemption_targets(
        quotas, usage_of(quotas, held), q, (round(gpus * 1000), 0, 0), 0, 1.0, held
    )
    names = spec.split()
    return {names[t.job_id - 1].partition(":")[0] for t in found}


ANY = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
LOWER = {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority"}


@pytest.mark.parametrize(
    ("right_quota", "policy", "spec", "gpus"),
    [(1, ANY, "a1:1@-1 a2:1@-1 a3:1@-1 b1:1@-1", 5), (3, LOWER, "a1:1@-1 a2:1@-1 a3:1@-1 b1:4@100", 4)],
    ids=["borrowing cq in non-borrowing cohort is protected", "forced to preempt within clusterqueue"],
)
def test_a_borrowing_queue_out_of_reach_leaves_the_preemptor_its_own(
    tmp_path: Path, right_quota: int, policy: dict[str, str], spec: str, gpus: int
) -> None:
    """Kueue's "borrowing cq in non-borrowing cohort is protected" and "forced to preempt within
    clusterqueue because borrowing workload too important": ROOT holds a (nominal 5, weight 10) and cohort
    RIGHT (weight 0.1) with b (nominal 0, weight 0.1). With RIGHT's quota 1, b1 borrows RIGHT's GPU but RIGHT
    does not borrow (share 0): it is dropped from the walk. With RIGHT's quota 3, b1 (4 GPUs, priority 100)
    borrows one, but under ``reclaimWithinCohort: LowerPriority`` it is no candidate. Either way a's workload
    preempts a's own three (priority -1)."""
    path = tree(
        tmp_path,
        cohort("ROOT"),
        cohort("RIGHT", "ROOT", gpus=right_quota, weight=0.1),
        cq("a", "ROOT", 5, weight=10, **policy),
        cq("b", "RIGHT", 0, weight=0.1),
    )
    assert targets(quotas_of(path, ["a", "b"]), spec, "a", gpus) == {"a1", "a2", "a3"}


def deep(tmp_path: Path, weight_a: float, weight_b: float, gpus: float = 1) -> Path:
    """Kueue's "deep preemption" tree: ROOT over A > AA > AAA > a, B > BB > BBB > b, C > CC > CCC > CCCC
    (quota ``gpus``); a and b have nominal 0, a may reclaim (``Any``); A and B weigh ``weight_a``,
    ``weight_b``."""
    return tree(
        tmp_path,
        cohort("ROOT"),
        cohort("A", "ROOT", weight=weight_a),
        cohort("AA", "A"),
        cohort("AAA", "AA"),
        cohort("B", "ROOT", weight=weight_b),
        cohort("BB", "B"),
        cohort("BBB", "BB"),
        cohort("C", "ROOT"),
        cohort("CC", "C"),
        cohort("CCC", "CC"),
        cohort("CCCC", "CCC", gpus=gpus),
        cq("a", "AAA", 0, reclaimWithinCohort="Any"),
        cq("b", "BBB", 0),
    )


def test_deep_preemption_compares_the_almost_lowest_common_ancestors(tmp_path: Path) -> None:
    """Kueue's "deep preemption": b1 borrows CCCC's only GPU; a's 1-GPU workload would make A borrow it.

    The walk enters B (share 1000 / 0.99 = 1010 above A's 1000 / 1.01 = 990; C borrows nothing and is
    dropped) down to b. The shares compared are A's and B's (the children of ROOT, the lowest common
    ancestor): S2-a fails (990 > 0, B's share without b1), S2-b passes (990 < 1010): b1 is evicted. With
    the weights the other way round (A 1010, B 990) both fail: nothing is evicted.
    """
    assert targets(quotas_of(deep(tmp_path, 1.01, 0.99), ["a", "b"]), "b1:1", "a", 1) == {"b1"}
    assert targets(quotas_of(deep(tmp_path, 0.99, 1.01), ["a", "b"]), "b1:1", "a", 1) == set()


def test_a_cohort_of_weight_zero_reclaims_its_nominal_quota(tmp_path: Path) -> None:
    """Kueue's "cohort with zero weight can reclaim nominal quota": ROOT holds cohort A (quota 1, weight 0)
    with a (nominal 0, weight 0) and b (nominal 0). b1 borrows A's GPU; a's 1-GPU workload leaves A within
    its quota (share 0, not a zero-weight borrower), b's share is 1000: S2-a passes (0 <= 0)."""
    path = tree(
        tmp_path,
        cohort("ROOT"),
        cohort("A", "ROOT", gpus=1, weight=0),
        cq("a", "A", 0, weight=0, reclaimWithinCohort="Any"),
        cq("b", "ROOT", 0, weight=1),
    )
    assert targets(quotas_of(path, ["a", "b"]), "b1:1", "a", 1) == {"b1"}


def test_the_walk_visits_the_subtree_with_the_higher_share_first(tmp_path: Path) -> None:
    """Kueue's ordering case "hierarchical cohorts: higher-DRS subtree visited first": root holds
    preemptor-cq (nominal 4), left-cohort with left-cq (nominal 2, using 5) and right-cohort with right-cq
    (nominal 2, using 3). left-cohort borrows 3 of root's 8 (375), right-cohort 1 (125): left-cq first, then
    (its one candidate popped, left-cohort pruned) right-cq; the preemptor, with no candidate, is pruned."""
    path = tree(
        tmp_path,
        cohort("root"),
        cohort("left-cohort", "root"),
        cohort("right-cohort", "root"),
        cq("preemptor-cq", "root", 4),
        cq("left-cq", "left-cohort", 2),
        cq("right-cq", "right-cohort", 2),
    )
    quotas = quotas_of(path, ["preemptor-cq", "left-cq", "right-cq"])
    held = admitted(quotas, "left-cq1:5 right-cq1:3")
    search = _Search(quotas, usage_of(quotas, held), quotas.names.index("preemptor-cq"), (0, 0, 0))
    by_queue = {c.cluster_queue: [c] for c in held}
    dropped: set[int] = set()
    order = []
    while (found := search.next_queue(by_queue, dropped)) is not None:
        order.append(quotas.names[found])
        by_queue[found].pop(0)
    assert order == ["left-cq", "right-cq"]


NODES = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])


@pytest.mark.parametrize(
    ("weight_a", "weight_b", "evicted", "start"),
    [(1.01, 0.99, [(1, 10.0, 2)], 40.0), (0.99, 1.01, [], 100.0)],
)
def test_deep_preemption_replays_on_both_simulators(
    tmp_path: Path, weight_a: float, weight_b: float, evicted: list, start: float
) -> None:
    """The deep tree with CCCC's quota 8 on one 8-GPU node: b's 8-GPU job runs from 0 to 100; a's 8-GPU job
    arrives at 10. With A weighing more, S2-b evicts b's job at 10 and a's starts at 40 (grace 30); with B
    weighing more nothing is evicted and a's job waits for b's to end (100)."""
    policy = replace(KUEUE, manifests=str(deep(tmp_path, weight_a, weight_b, gpus=8)), fair_sharing=True)
    jobs = jobs_frame([job(1, 0.0, "b", 1, 8), job(2, 10.0, "a", 1, 8)])
    for replay in both(jobs, NODES, policy):
        assert evictions(replay) == evicted
        assert starts(replay)[2] == start
        if evicted:
            shares = replay.queues.filter(pl.col("time") == 0.0).select("queue", "share")
            assert dict(shares.iter_rows())["b"] == 1000


def test_the_walk_enters_the_cohort_that_borrows_most_not_the_queue_that_does(tmp_path: Path) -> None:
    """Root R holds p (nominal 8, ``reclaimWithinCohort: Any``) and cohorts X (x1, x2) and Y (y1), all of
    nominal 0, on one 8-GPU node. At 0 x1 and x2 run 2-GPU jobs 1 and 2, y1 a 3-GPU job 3. At 10 p's 2-GPU
    job 4 needs one more GPU than is free; p stays within nominal, so the walk's first candidate is taken.

    At R: X borrows 4 of R's 8 (500), Y 3 (375): the walk enters X, where x1 and x2 tie (250 each) and
    x1's job (the lower id at equal priority and admission) comes first: job 1 is evicted at 10 and job 4
    starts at 40 (grace 30). Looking at the queues alone, y1 (375) would lose job 3 instead."""
    path = tree(
        tmp_path,
        cohort("R"),
        cohort("X", "R"),
        cohort("Y", "R"),
        cq("p", "R", 8, reclaimWithinCohort="Any"),
        cq("x1", "X", 0),
        cq("x2", "X", 0),
        cq("y1", "Y", 0),
    )
    policy = replace(KUEUE, manifests=str(path), fair_sharing=True)
    jobs = jobs_frame(
        [job(1, 0.0, "x1", 1, 2), job(2, 0.0, "x2", 1, 2), job(3, 0.0, "y1", 1, 3), job(4, 10.0, "p", 1, 2)]
    )
    for replay in both(jobs, NODES, policy):
        assert evictions(replay) == [(1, 10.0, 4)]
        assert starts(replay)[4] == 40.0
