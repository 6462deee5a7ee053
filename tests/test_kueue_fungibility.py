"""Kueue flavor fungibility with preemption: ``whenCanPreempt``, ``preference`` and the preemption modes.

docs/systems.md, "Kueue" (kubernetes-sigs/kueue ``flavorassigner.go`` ``findFlavorForPodSets``,
``fitsResourceQuota``,
``isPreferred``, ``shouldTryNextFlavor``; ``preemption_oracle.go`` ``SimulatePreemption``);
docs/engine/queues/kueue.md, "Kueue quotas". Every scenario is hand-computed and runs on the engine and on its
reference twin. Nodes: one A100 and one V100 node of 8 GPUs (``tests.test_kueue_flavors.NODES``); an
evicted job leaves its node after the 30 s grace period.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame
from tests.test_kueue_flavors import (
    PLAIN_FLAVORS,
    both,
    cluster_queue,
    job,
    limited_queue,
    manifests,
    spread,
    starts,
)

from gpureplay.queues.kueue_fungibility import (
    FIT,
    NO_CANDIDATES,
    NO_FIT,
    PREEMPT,
    RECLAIM,
    Mode,
    assign_with_modes,
    preferred,
    tries_next,
)
from gpureplay.queues.kueue_quota import manifest_quotas
from gpureplay.queues.manifests import read_manifests

WITHIN = "  preemption:\n    withinClusterQueue: LowerPriority\n"
RECLAIM_LOWER = (
    "  preemption:\n    withinClusterQueue: LowerPriority\n    reclaimWithinCohort: LowerPriority\n"
)


def fungibility(borrow: str = "MayStopSearch", preempt: str = "TryNextFlavor", preference: str = "") -> str:
    text = f"  flavorFungibility:\n    whenCanBorrow: {borrow}\n    whenCanPreempt: {preempt}\n"
    return text + (f"    preference: {preference}\n" if preference else "")


def preemptions(replay: object) -> dict[int, int]:
    return dict(replay.jobs.select("job_id", "preemptions").iter_rows())  # type: ignore[attr-defined]


@pytest.mark.parametrize(("when", "expected"), [("TryNextFlavor", 10.0), ("MayStopSearch", 40.0)])
def test_when_can_preempt_decides_between_preempting_and_the_next_flavor(
    tmp_path: Path, when: str, expected: float
) -> None:
    """team: a100 8 then v100 8, withinClusterQueue LowerPriority. Job 1 (priority 0) takes a100 at 0. At 10
    job 2 (priority 10) needs preemption in a100 (job 1 is a candidate: mode Preempt). Under
    ``whenCanPreempt: TryNextFlavor`` (Kueue's default) the search goes on to v100, where it fits: job 2
    starts at 10 and nobody is evicted. Under ``MayStopSearch`` it stops at a100 and evicts job 1; job 2
    starts when job 1 has left the A100 node (40)."""
    policy = manifests(
        tmp_path, cluster_queue("team", {"a100": 8, "v100": 8}, extra=WITHIN + fungibility(preempt=when))
    )
    rows = [
        {**job(1, 0.0, "team", 8, duration=1000.0), "priority": 0},
        {**job(2, 10.0, "team", 8), "priority": 10},
    ]
    for replay in both(jobs_frame(rows), policy):
        assert starts(replay)[2] == expected
        assert preemptions(replay) == {1: 0 if when == "TryNextFlavor" else 1, 2: 0}


@pytest.mark.parametrize(
    ("preference", "expected", "evicted"),
    [("BorrowingOverPreemption", 10.0, 0), ("PreemptionOverBorrowing", 40.0, 1)],
)
def test_preference_ranks_borrowing_against_preemption(
    tmp_path: Path, preference: str, expected: float, evicted: int
) -> None:
    """team-a: a100 8, v100 0, withinClusterQueue LowerPriority, both policies TryNextFlavor; team-b: v100
    8, idle; one cohort. Job 1 (team-a, priority 0) takes a100 at 0. At 10 job 2 (team-a, priority 10): a100
    is (Preempt, borrowing level 0), v100 (Fit, level 1: team-b's quota). BorrowingOverPreemption compares the
    mode first: v100, job 2 starts at 10 borrowing. PreemptionOverBorrowing compares the borrowing level
    first: a100, job 1 is evicted and job 2 starts at 40."""
    extra = WITHIN + fungibility("TryNextFlavor", "TryNextFlavor", preference)
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", {"a100": 8, "v100": 0}, cohort="c", extra=extra),
        cluster_queue("team-b", {"v100": 8}, cohort="c"),
    )
    rows = [
        {**job(1, 0.0, "team-a", 8, duration=1000.0), "priority": 0},
        {**job(2, 10.0, "team-a", 8), "priority": 10},
    ]
    for replay in both(jobs_frame(rows), policy):
        assert starts(replay)[2] == expected
        assert preemptions(replay)[1] == evicted


@pytest.mark.parametrize(("when", "victim"), [("TryNextFlavor", 3), ("MayStopSearch", 1)])
def test_reclaiming_a_borrowed_flavor_is_preferred_to_preempting_in_the_queue(
    tmp_path: Path, when: str, victim: int
) -> None:
    """team-a: a100 8, v100 8, withinClusterQueue and reclaimWithinCohort LowerPriority; team-b: v100 0; one
    cohort. At 0 job 1 (team-a, priority 0) takes a100 and job 3 (team-b, priority 3) borrows team-a's v100
    quota. At 10 job 2 (team-a, priority 5) fits no flavor: a100 needs preemption in team-a (Preempt), v100
    takes back what team-b borrows (Reclaim). Under TryNextFlavor both are seen and Reclaim ranks above
    Preempt: job 3 is evicted (the first flavor would have cost job 1). Under MayStopSearch the search stops
    at a100: job 1 is evicted (back at 40 it cannot take job 3's place: priority 0 < 3). Either way job 2
    starts at 40."""
    extra = RECLAIM_LOWER
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", {"a100": 8, "v100": 8}, cohort="c", extra=extra + fungibility(preempt=when)),
        cluster_queue("team-b", {"v100": 0}, cohort="c"),
    )
    rows = [
        {**job(1, 0.0, "team-a", 8, duration=1000.0), "priority": 0},
        {**job(3, 0.0, "team-b", 8, duration=1000.0), "priority": 3},
        {**job(2, 10.0, "team-a", 8), "priority": 5},
    ]
    for replay in both(jobs_frame(rows), policy):
        assert starts(replay)[2] == 40.0
        assert preemptions(replay) == {1: 1 if victim == 1 else 0, 2: 0, 3: 1 if victim == 3 else 0}


def test_a_flavor_without_preemption_candidates_ranks_below_one_with_them(tmp_path: Path) -> None:
    """As above with job 1 at priority 10 (above job 2's 5): a100 needs preemption but has no candidate
    ("no candidates" never stops the search and ranks below a viable mode), so job 2 reclaims v100 from
    job 3 even under MayStopSearch."""
    extra = RECLAIM_LOWER
    policy = manifests(
        tmp_path,
        cluster_queue(
            "team-a", {"a100": 8, "v100": 8}, cohort="c", extra=extra + fungibility(preempt="MayStopSearch")
        ),
        cluster_queue("team-b", {"v100": 0}, cohort="c"),
    )
    rows = [
        {**job(1, 0.0, "team-a", 8, duration=1000.0), "priority": 10},
        {**job(3, 0.0, "team-b", 8, duration=1000.0), "priority": 0},
        {**job(2, 10.0, "team-a", 8), "priority": 5},
    ]
    for replay in both(jobs_frame(rows), policy):
        assert starts(replay)[2] == 40.0
        assert preemptions(replay) == {1: 0, 2: 0, 3: 1}


def test_is_preferred_orders_modes_as_kueue_does() -> None:
    """``isPreferred``: NoFit is never preferred; "no candidates" ranks below any viable mode whatever the
    borrowing; BorrowingOverPreemption compares modes first (Fit > Reclaim > Preempt), then the borrowing
    level; PreemptionOverBorrowing the level first; equal modes are not preferred (first of equals kept)."""
    for over in (False, True):
        assert not preferred(Mode(NO_FIT, 0), Mode(NO_CANDIDATES, 9), over)
        assert preferred(Mode(NO_CANDIDATES, 9), Mode(NO_FIT, 0), over)
        assert preferred(Mode(PREEMPT, 5), Mode(NO_CANDIDATES, 0), over)
        assert not preferred(Mode(RECLAIM, 1), Mode(RECLAIM, 1), over)
    assert preferred(Mode(FIT, 2), Mode(RECLAIM, 0), False)
    assert preferred(Mode(RECLAIM, 0), Mode(FIT, 2), True)
    assert preferred(Mode(RECLAIM, 1), Mode(PREEMPT, 1), True)
    assert preferred(Mode(RECLAIM, 1), Mode(PREEMPT, 0), False)
    assert not preferred(Mode(RECLAIM, 1), Mode(PREEMPT, 0), True)


def test_should_try_next_flavor_follows_the_two_policies() -> None:
    """``shouldTryNextFlavor``: always past NoFit and "no candidates"; past a preemption mode under
    ``whenCanPreempt: TryNextFlavor``; past a borrowing level above 0 under
    ``whenCanBorrow: TryNextFlavor``."""
    assert tries_next(Mode(NO_CANDIDATES, 0), False, False)
    assert tries_next(Mode(PREEMPT, 0), False, True)
    assert not tries_next(Mode(PREEMPT, 0), True, False)
    assert tries_next(Mode(RECLAIM, 1), True, False)
    assert not tries_next(Mode(FIT, 1), False, True)
    assert tries_next(Mode(FIT, 1), True, False)
    assert not tries_next(Mode(FIT, 0), True, True)


@pytest.mark.parametrize(
    ("when", "expected"), [("Preempt", ((0, 0, 0), PREEMPT)), ("TryNextFlavor", ((1, 0, 0), FIT))]
)
def test_kueues_preempt_try_next_flavor(
    tmp_path: Path, when: str, expected: tuple[tuple[int, ...], int]
) -> None:
    """Kueue's flavorassigner_test cases "preempt try next flavor" and the one before it (CPUs read as GPUs,
    pods not modelled): flavors one and two of 10 each; one already uses 2. A 9-GPU request needs preemption
    in one (9 > 8 left; the simulation finds targets: mode Preempt). ``whenCanPreempt: Preempt`` keeps one
    in Preempt mode; ``TryNextFlavor`` goes on to two, where it fits (Kueue: ``wantRepMode: Fit``)."""
    path = tmp_path / "queues.yaml"
    fungibility = f"  flavorFungibility:\n    whenCanBorrow: Borrow\n    whenCanPreempt: {when}\n"
    path.write_text(
        "---\n".join(
            [
                PLAIN_FLAVORS,
                limited_queue("test-clusterqueue", [("one", 10, None), ("two", 10, None)], fungibility),
            ]
        )
    )
    jobs = jobs_frame([spread(1, 0.0, "test-clusterqueue", 9)])
    quotas = manifest_quotas(read_manifests(path), jobs, ["V100"], str(path))
    usage = [[0] for _ in range(quotas.rows)]
    usage[0][0] = 2000  # row 0: GPUs of flavor slot 0 ("one")
    simulated: list[tuple[int, int]] = []

    def simulate(row: int, amount: int) -> Mode:
        simulated.append((row, amount))
        return Mode(PREEMPT, 0)

    assert assign_with_modes(quotas, usage, 0, (9000, 0, 0), simulate) == expected
    assert simulated == [(0, 9000)]


def test_fair_sharing_preemption_weighs_each_flavor_too(tmp_path: Path) -> None:
    """Fair sharing, team-a and team-b with a100 4 and v100 4 each in one cohort, team-a reclaiming from
    lower priorities. At 0 team-b's four 4-GPU jobs take a100 (1, priority 5), a100 by borrowing (2,
    priority 5; MayStopSearch stops there), v100 (3, priority 0) and v100 by borrowing (4, priority 0):
    team-b borrows 4 + 4 GPUs of the cohort's 16, DRS 8 x 1000 / 16 = 500 (a resource's borrowing summed over
    its flavors). At 10 team-a's job 5 (priority 2): in a100 fair sharing's search finds no candidate (jobs 1
    and 2 outrank it), in v100 it takes job 3 (the lowest priority, then the lowest id): mode Reclaim beats
    "no candidates", so v100 is assigned, job 3 is evicted and job 5 starts on the V100 node at 40 (the
    first flavor alone would have found nothing to reclaim)."""
    reclaim = "  preemption:\n    reclaimWithinCohort: LowerPriority\n"
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", {"a100": 4, "v100": 4}, cohort="c", extra=reclaim),
        cluster_queue("team-b", {"a100": 4, "v100": 4}, cohort="c"),
        fair_sharing=True,
    )
    rows = [
        {**job(1, 0.0, "team-b", 4, duration=1000.0), "priority": 5},
        {**job(2, 0.0, "team-b", 4, duration=1000.0), "priority": 5},
        {**job(3, 0.0, "team-b", 4, duration=1000.0), "priority": 0},
        {**job(4, 0.0, "team-b", 4, duration=1000.0), "priority": 0},
        {**job(5, 10.0, "team-a", 4), "priority": 2},
    ]
    for replay in both(jobs_frame(rows), policy):
        assert starts(replay)[5] == 40.0
        assert preemptions(replay) == {1: 0, 2: 0, 3: 1, 4: 0, 5: 0}
        at0 = replay.queues.filter((pl.col("time") == 0.0) & (pl.col("queue") == "team-b"))
        assert at0["share"].to_list() == [500.0]
