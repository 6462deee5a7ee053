"""Fairness arithmetic of Volcano, Kueue and KAI (docs/systems.md, "Volcano", "Kueue", "KAI Scheduler"),
hand-computed examples.

Every expected number below is worked out by hand in the comments, round by round, from the
upstream code the functions follow (named in gpureplay.queues.fair_share).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from gpureplay.queues.fair_share import (
    KaiQueueShare,
    KueueNode,
    kai_fair_share,
    kai_fair_share_tree,
    kueue_drs,
    kueue_potential_available,
    kueue_subtree,
    volcano_proportion,
    volcano_real_capability,
    volcano_share,
)

GPU = "nvidia.com/gpu"
A100 = ("a100", GPU)

# --------------------------------------------------------------------------- Volcano proportion


def test_volcano_capped_queue_surplus_goes_to_the_others_by_weight() -> None:
    # 24 GPUs; A weight 3 asks 20, B weight 2 asks 10 but capability 4, C weight 1 asks 6.
    # Round 1 (W = 6, remaining 24): A 12; B 8 -> cap 4; C 4. Nobody met (B changed 0 -> 4).
    #   remaining = 24 - 20 = 4.
    # Round 2 (W = 6): A 12 + 2 = 14; B 4 + 1.33 -> cap 4 = unchanged -> met; C 4 + 0.67 = 4.67.
    #   remaining = 4 - 2.67 = 1.33.
    # Round 3 (W = 4: A, C): A 14 + 1.33*3/4 = 15; C 4.67 + 0.33 = 5. remaining 0 -> stop.
    deserved = volcano_proportion(
        {GPU: 24.0},
        weights=[3, 2, 1],
        requests=[{GPU: 20.0}, {GPU: 10.0}, {GPU: 6.0}],
        capabilities=[None, {GPU: 4.0}, None],
    )
    assert [d[GPU] for d in deserved] == pytest.approx([15.0, 4.0, 5.0], abs=1e-9)


def test_volcano_plain_weights_split_in_proportion() -> None:
    # 12 GPUs, weights 2:1, both ask for more than the cluster: round 1 gives 8 and 4, remaining 0.
    deserved = volcano_proportion({GPU: 12.0}, [2, 1], [{GPU: 100.0}, {GPU: 100.0}])
    assert [d[GPU] for d in deserved] == [8.0, 4.0]


def test_volcano_request_below_share_is_met_and_its_rest_redistributed() -> None:
    # 12 GPUs, weights 1:1:1, requests 2, 20, 20.
    # Round 1 (W 3): 4 each -> A min(4, request 2) = 2, met; B 4, C 4. remaining 12 - 10 = 2.
    # Round 2 (W 2): B 5, C 5. remaining 0.
    deserved = volcano_proportion({GPU: 12.0}, [1, 1, 1], [{GPU: 2.0}, {GPU: 20.0}, {GPU: 20.0}])
    assert [d[GPU] for d in deserved] == [2.0, 5.0, 5.0]


def test_volcano_guarantee_is_reserved_and_caps_the_others() -> None:
    # 10 GPUs; Q1 weight 1 asks 10; Q2 weight 1 asks 1 with guarantee 3.
    # realCapability Q1 = 10 - 3 + 0 = 7, Q2 = 10 - 3 + 3 = 10.
    # Round 1 (W 2): Q1 5; Q2 5 -> request 1 -> met -> max(guarantee 3) = 3. remaining 10 - 8 = 2.
    # Round 2 (W 1): Q1 5 + 2 = 7 (= realCapability). remaining 0.
    deserved = volcano_proportion({GPU: 10.0}, [1, 1], [{GPU: 10.0}, {GPU: 1.0}], guarantees=[{}, {GPU: 3.0}])
    assert [d[GPU] for d in deserved] == [7.0, 3.0]


def test_volcano_real_capability_quirks() -> None:
    total = {"cpu": 64.0, "memory": 512.0, GPU: 16.0, "rdma/hca": 8.0}
    # cpu/memory left out of a capability are unbounded; the GPU left out too when no scalar is named.
    real = volcano_real_capability(total, [{}], 0, {"cpu": 8.0})
    assert real == {"cpu": 8.0, "memory": 512.0, GPU: 16.0, "rdma/hca": 8.0}
    # Naming one scalar resource (the GPU) makes the other scalars 0 (helpers.Min reads missing as 0).
    real = volcano_real_capability(total, [{}], 0, {GPU: 4.0})
    assert real == {"cpu": 64.0, "memory": 512.0, GPU: 4.0, "rdma/hca": 0.0}
    # A cpu capability of 0 reads as unset (the plugin's "<= 0 -> MaxFloat64"); guarantees of others cap it.
    real = volcano_real_capability(total, [{}, {"cpu": 16.0}], 0, {"cpu": 0.0})
    assert real == {"cpu": 48.0, "memory": 512.0, GPU: 16.0, "rdma/hca": 8.0}


def test_volcano_share() -> None:
    assert volcano_share({GPU: 6.0, "cpu": 10.0}, {GPU: 8.0, "cpu": 40.0}) == 0.75
    assert volcano_share({GPU: 0.0}, {GPU: 0.0}) == 0.0  # 0/0 -> 0
    assert volcano_share({GPU: 2.0}, {GPU: 0.0}) == 1.0  # x/0 -> 1


# --------------------------------------------------------------------------- Kueue DRS


def _two_queues(usage_a: float, usage_b: float, **b: dict[tuple[str, str], float]) -> list[KueueNode]:
    return [
        KueueNode("research", is_cohort=True),
        KueueNode("team-a", "research", nominal={A100: 8.0}, usage={A100: usage_a}),
        KueueNode("team-b", "research", nominal={A100: 8.0}, usage={A100: usage_b}, **b),  # type: ignore[arg-type]
    ]


def test_kueue_drs_reference_example_250_and_0() -> None:
    # docs/systems.md, "Kueue": two CQs of nominal 8 GPUs in one cohort (lendable 8 + 8 = 16). A uses 12, so
    # it borrows 4: DRS = 4 * 1000 / 16 = 250. B uses 4, below nominal: DRS 0.
    nodes = _two_queues(12.0, 4.0)
    a, b = kueue_drs(nodes, "team-a"), kueue_drs(nodes, "team-b")
    assert (a.ratio, a.weighted, a.rounded, a.dominant_resource, a.borrowing) == (
        250.0,
        250.0,
        250,
        GPU,
        True,
    )
    assert (b.ratio, b.weighted, b.rounded, b.borrowing) == (0.0, 0.0, 0, False)


def test_kueue_drs_with_the_candidate_workload() -> None:
    # B uses 4 and a candidate asks 6: 4 + 6 - 8 = 2 borrowed -> 2 * 1000 / 16 = 125.
    assert kueue_drs(_two_queues(12.0, 4.0), "team-b", {A100: 6.0}).ratio == 125.0


def test_kueue_drs_divides_by_the_fair_sharing_weight() -> None:
    # A borrows 4 of 16 -> 250; weight 2 -> 125; weight 3 -> 83.33, reported as ceil = 84.
    nodes = _two_queues(12.0, 4.0)
    for weight, weighted, rounded in ((2.0, 125.0, 125), (3.0, 250.0 / 3.0, 84)):
        nodes[1] = KueueNode("team-a", "research", nominal={A100: 8.0}, usage={A100: 12.0}, weight=weight)
        drs = kueue_drs(nodes, "team-a")
        assert (drs.weighted, drs.rounded) == (pytest.approx(weighted), rounded)
    # Weight 0 while borrowing: +inf (roundedWeightedShare MaxInt64).
    nodes[1] = KueueNode("team-a", "research", nominal={A100: 8.0}, usage={A100: 12.0}, weight=0.0)
    assert kueue_drs(nodes, "team-a").weighted == math.inf


def test_kueue_lending_limit_shrinks_the_lendable_pool() -> None:
    # B keeps 8 - 4 = 4 GPUs it never lends (lendingLimit 4): cohort subtree quota = 8 + (8 - 4) = 12.
    # A borrows 12 - 8 = 4 -> 4 * 1000 / 12 = 333.33, reported as 334.
    nodes = _two_queues(12.0, 0.0, lending_limit={A100: 4.0})
    subtree, usage = kueue_subtree(nodes)
    assert subtree["research"] == {A100: 12.0}
    assert usage["research"] == {A100: 12.0}  # A: max(0, 12 - local 0); B: max(0, 0 - local 4) = 0
    drs = kueue_drs(nodes, "team-a")
    assert drs.ratio == pytest.approx(1000.0 / 3.0)
    assert drs.rounded == 334


def test_kueue_potential_available_respects_borrowing_limit() -> None:
    # A has borrowingLimit 2: at most its subtree quota 8 + 2 = 10, though the cohort holds 16.
    nodes = [
        KueueNode("research", is_cohort=True),
        KueueNode("team-a", "research", nominal={A100: 8.0}, borrowing_limit={A100: 2.0}),
        KueueNode("team-b", "research", nominal={A100: 8.0}),
    ]
    subtree, _ = kueue_subtree(nodes)
    assert kueue_potential_available(nodes, subtree, "team-a", A100) == 10.0
    assert kueue_potential_available(nodes, subtree, "team-b", A100) == 16.0


def test_kueue_drs_sums_flavors_of_one_resource() -> None:
    # Two flavors of GPU; A (nominal 4 a100 + 4 h100) uses 6 a100 + 5 h100: borrows 2 + 1 = 3 GPUs.
    # Lendable GPUs = a100 (4 + 4) + h100 (4 + 4) = 16 -> 3 * 1000 / 16 = 187.5, reported as 188.
    h100 = ("h100", GPU)
    nodes = [
        KueueNode("research", is_cohort=True),
        KueueNode("team-a", "research", nominal={A100: 4.0, h100: 4.0}, usage={A100: 6.0, h100: 5.0}),
        KueueNode("team-b", "research", nominal={A100: 4.0, h100: 4.0}),
    ]
    drs = kueue_drs(nodes, "team-a")
    assert (drs.ratio, drs.rounded) == (187.5, 188)


def test_kueue_hierarchical_cohorts() -> None:
    # org (root) -> cohort X (CQ a nominal 4, CQ b nominal 4) and cohort Y (CQ c nominal 8).
    # a uses 10. Subtree quotas: X 8, Y 8, org 16; usage X = 10, org = 10.
    # DRS(a): borrows 10 - 4 = 6 over potentialAvailable(X) = 0 + potentialAvailable(org) = 16 -> 375.
    # DRS(X): borrows 10 - 8 = 2 over potentialAvailable(org) = 16 -> 125. DRS(Y) = 0.
    def tree(x_limit: dict[tuple[str, str], float]) -> list[KueueNode]:
        return [
            KueueNode("org", is_cohort=True),
            KueueNode("X", "org", is_cohort=True, borrowing_limit=x_limit),
            KueueNode("Y", "org", is_cohort=True),
            KueueNode("a", "X", nominal={A100: 4.0}, usage={A100: 10.0}),
            KueueNode("b", "X", nominal={A100: 4.0}),
            KueueNode("c", "Y", nominal={A100: 8.0}),
        ]

    nodes = tree({})
    assert [kueue_drs(nodes, n).ratio for n in ("a", "X", "Y")] == [375.0, 125.0, 0.0]
    # X may borrow at most 1 from org: potentialAvailable(X) = min(8 + 1, 16) = 9 -> 6000 / 9 = 666.7 -> 667.
    drs = kueue_drs(tree({A100: 1.0}), "a")
    assert (drs.ratio, drs.rounded) == (pytest.approx(6000.0 / 9.0), 667)


def test_kueue_root_and_queue_without_cohort_have_no_share() -> None:
    nodes = [*_two_queues(12.0, 4.0), KueueNode("alone", nominal={A100: 2.0}, usage={A100: 5.0})]
    assert kueue_drs(nodes, "research").ratio == 0.0
    assert kueue_drs(nodes, "alone").borrowing is False


# --------------------------------------------------------------------------- KAI division


def test_kai_quota_then_weighted_over_quota_with_flooring_and_leftovers() -> None:
    # 20 GPUs, one priority level, no usage history (k = 1, so sw is proportional to OQW).
    #   A: quota 4, OQW 2, asks 20;  B: quota 4, OQW 1, asks 20;  C: quota 2, OQW 1, asks 3.
    # Phase 1: A 4, B 4, C 2; remaining 10.
    # Phase 2, round 1 (R0 = 10): all want more; weights 2:1:1 -> shares 5, 2.5, 2.5.
    #   A: floor(5) = 5. B: floor(2.5) = 2, leftover 0.5. C wants only 1 <= 2.5: gets 1, satisfied.
    #   remaining 10 - 8 = 2; C got less than its share -> another round.
    # Round 2 (R0 = 2): A and B want more; weights 2:1 -> shares 1.33, 0.67.
    #   A: floor 1, leftover 0.33. B: floor(0.67) = 0, leftover 0.67. remaining 1; nobody was given
    #   less than its share -> stop.
    # Phase 3: leftovers B 0.67 > A 0.33: B gets min(1, 1) = 1. remaining 0.
    # Result: A 4 + 5 + 1 = 10, B 4 + 2 + 1 = 7, C 3.
    queues = [
        KaiQueueShare("A", 4, 2, -1, 20),
        KaiQueueShare("B", 4, 1, -1, 20),
        KaiQueueShare("C", 2, 1, -1, 3),
    ]
    assert kai_fair_share(20, queues) == {"A": 10.0, "B": 7.0, "C": 3.0}


def test_kai_equal_leftovers_go_to_the_older_queue() -> None:
    # 10 GPUs, no quota, three queues of OQW 1 asking 10 each: shares 3.33 -> 3 each, leftovers 0.33 each.
    # The last GPU goes to the oldest queue (created 0), whatever its name.
    queues = [
        KaiQueueShare("x", 0, 1, -1, 10, created=2.0),
        KaiQueueShare("y", 0, 1, -1, 10, created=0.0),
        KaiQueueShare("z", 0, 1, -1, 10, created=1.0),
    ]
    assert kai_fair_share(10, queues) == {"x": 3.0, "y": 4.0, "z": 3.0}


def test_kai_usage_term_shifts_the_over_quota_split() -> None:
    # 9 GPUs, OQW 1 each, k = 1; A used half the cluster recently, B nothing.
    # nW = 0.5 each; sw_A = 0.5 + (0.5 - 0.5) = 0.5, sw_B = 0.5 + (0.5 - 0) = 1 -> shares 3 and 6.
    queues = [KaiQueueShare("A", 0, 1, -1, 100, usage=0.5), KaiQueueShare("B", 0, 1, -1, 100, usage=0.0)]
    assert kai_fair_share(9, queues) == {"A": 3.0, "B": 6.0}
    # k = 0 drops the usage term: 4.5 each -> floor 4 each, leftovers 0.5 tie -> older (same), name A.
    assert kai_fair_share(9, queues, k_value=0.0) == {"A": 5.0, "B": 4.0}


def test_kai_limit_caps_the_share_and_higher_priority_goes_first() -> None:
    # 12 GPUs. H (priority 200) and H2 (priority 200) ask 10 each, H limited to 3; L (priority 100) asks 10.
    # Phase 1: no quotas -> remaining 12.
    # Priority 200, round 1 (R0 12): OQW 1 each -> shares 6, 6. H wants 3 <= 6: gets 3, satisfied.
    #   H2: floor(6) = 6. remaining 3; H got less than its share -> another round.
    # Round 2 (R0 3): only H2 unsatisfied -> share 3 <= its remaining 4? no: 4 > 3 -> floor 3. remaining 0.
    # Priority 100: nothing left for L.
    queues = [
        KaiQueueShare("H", 0, 1, 3, 10, priority=200),
        KaiQueueShare("H2", 0, 1, -1, 10, priority=200),
        KaiQueueShare("L", 0, 1, -1, 10, priority=100),
    ]
    assert kai_fair_share(12, queues) == {"H": 3.0, "H2": 9.0, "L": 0.0}


def test_kai_a_queue_alone_at_its_level_gets_no_more_than_it_requests() -> None:
    # resource_division.go divideUpToFairShare (KAI v0.13.0): a level with one queue is divided as any other.
    # 10 GPUs, no quotas: P (priority 200) asks 2, L (priority 100) asks 10.
    # Priority 200, round 1 (R0 10): P alone, share 10 >= its 2 -> gets 2, satisfied; remaining 8. Round 2:
    #   nobody unsatisfied -> stop.
    # Priority 100 (R0 8): L's share 8 < its 10 -> floor 8 (no fraction left). P 2, L 8.
    # (An unreleased commit gave P all 10, leaving L nothing.)
    queues = [KaiQueueShare("P", 0, 1, -1, 2, priority=200), KaiQueueShare("L", 0, 1, -1, 10, priority=100)]
    assert kai_fair_share(10, queues) == {"P": 2.0, "L": 8.0}


def test_kai_quota_beyond_the_total_leaves_nothing_over_quota() -> None:
    # Quotas 8 + 8 on 10 GPUs: phase 1 gives 8 and 8 (deserved is not scaled down), remaining < 0 -> stop.
    queues = [KaiQueueShare("A", 8, 1, -1, 20), KaiQueueShare("B", 8, 1, -1, 20)]
    assert kai_fair_share(10, queues) == {"A": 8.0, "B": 8.0}


def test_kai_two_level_tree() -> None:
    # 24 GPUs. Departments D1 (quota 16) and D2 (quota 4), OQW 1 each; teams under D1:
    # T1 quota 6 OQW 2 asks 12, T2 quota 10 OQW 1 asks 20 (D1 asks 32); D2's team T3 asks 2 (D2 asks 2).
    # Top: D1 min(16, 32) = 16, D2 min(4, 2) = 2; remaining 6. Round 1: D2 is satisfied -> only D1 has
    #   weight: share 6 -> D1 wants 16 more -> floor 6. remaining 0. D1 = 22, D2 = 2.
    # Under D1 (22): T1 6, T2 10; remaining 6; weights 2:1 -> shares 4, 2; T1 wants 6 > 4 -> 4;
    #   T2 wants 10 > 2 -> 2. T1 = 10, T2 = 12.
    # Under D2 (2): T3 gets min(quota 0, 2) = 0; over quota, alone at its level, its share 2 covers its
    #   remaining request 2 -> 2.
    queues = [
        KaiQueueShare("D1", 16, 1, -1, 0),
        KaiQueueShare("D2", 4, 1, -1, 0),
        KaiQueueShare("T1", 6, 2, -1, 12),
        KaiQueueShare("T2", 10, 1, -1, 20),
        KaiQueueShare("T3", 0, 1, -1, 2),
    ]
    parents = {"D1": None, "D2": None, "T1": "D1", "T2": "D1", "T3": "D2"}
    assert kai_fair_share_tree(24, queues, parents) == {
        "D1": 22.0,
        "D2": 2.0,
        "T1": 10.0,
        "T2": 12.0,
        "T3": 2.0,
    }


# --------------------------------------------------------------------------- KAI's own division tests


def _case(name: str, total: float, spec: list[tuple], expected: list[float], remaining: float) -> object:
    """One case of KAI's ``resource_division_test.go``: ``spec`` rows are (name, quota, overQuotaWeight,
    limit, request[, priority]), in creation order; ``expected`` the fair shares, ``remaining`` what KAI
    returns as left undivided."""
    return pytest.param(total, spec, expected, remaining, id=name)


#: Cases of NVIDIA/KAI-Scheduler ``pkg/scheduler/plugins/proportion/resource_division/``
#: ``resource_division_test.go`` at v0.13.0, each named by its Describe/Context/It text. A test there calling
#: ``divideOverQuotaResource`` with the fair share preset to the quota is ported as ``setResourceShare``
#: with that quota added to the total (phase 1 gives exactly that preset).
KAI_DIVISION_CASES = [
    _case("within quota: gives requested GPUs with remaining", 3, [("1", 3, 0, -1, 2)], [2], 1),
    _case("within quota: doesn't give more GPUs than allowed", 3, [("1", 3, 0, 2, 2)], [2], 1),
    _case("within quota: gives up to full quota", 7, [("1", 3, 0, -1, 5)], [3], 4),
    _case("within quota: gives with fraction, if stated in deserved", 2, [("1", 1.5, 0, -1, 2)], [1.5], 0.5),
    _case("within quota: doesn't give if deserved is zero", 2, [("1", 0, 0, -1, 2)], [0], 2),
    _case("over quota: gives requested GPUs with remaining", 3 + 3, [("1", 3, 1, -1, 5)], [5], 1),
    _case("over quota: doesn't give more GPUs than allowed", 2 + 3, [("1", 3, 1, 4, 5)], [4], 1),
    _case("over quota: gives with fraction if requested", 2 + 3, [("1", 3, 1, -1, 4.5)], [4.5], 0.5),
    _case("over quota: gives remainder fraction", 0.5 + 3, [("1", 3, 1, -1, 5)], [3.5], 0),
    _case("over quota: gives when deserved is zero", 6, [("1", 0, 1, -1, 5)], [5], 1),
    _case(
        "two queues: allocates many available gpus", 15, [("1", 2, 2, -1, 6), ("2", 2, 2, -1, 6)], [6] * 2, 3
    ),
    _case(
        "two queues: allocates GPUs proportionally", 8, [("1", 2, 1, -1, 6), ("2", 2, 3, -1, 6)], [3, 5], 0
    ),
    _case(
        "two queues: doesn't allocate more than allowed",
        12,
        [("1", 2, 2, 5, 6), ("2", 2, 2, -1, 6)],
        [5, 6],
        1,
    ),
    _case(
        "two queues: distributes remainder between queues based on largest remaining",
        11,
        [("1", 2, 1, -1, 10), ("2", 2, 4, -1, 10)],
        [3, 8],
        0,
    ),
    _case(
        "two queues: distributes remainder between queues based on creation time",
        11,
        [("1", 2, 2, -1, 6), ("2", 2, 2, -1, 6)],
        [6, 5],
        0,
    ),
    _case(
        "two queues: priority does affect over-quota, even when overQuotaWeight is set",
        6,
        [("1", 2, 100, -1, 6, 1), ("2", 2, 1, -1, 6, 2)],
        [2, 4],
        0,
    ),
    _case(
        "divides the remainder even when using priorities",
        5,
        [("1", 2, 2, -1, 5, 2), ("2", 2, 2, -1, 5, 2), ("3", 1, 2, -1, 0, 1)],
        [3, 2, 0],
        0,
    ),
    _case(
        "CPU, three queues: one queue request more than it deserves and allowed",
        10000,
        [("1", 5000, 5000, 7000, 7000), ("2", 5000, 5000, -1, 2000), ("3", 5000, 5000, -1, 2000)],
        [6000, 2000, 2000],
        0,
    ),
    _case("SetResourcesShare, one queue: Enough resources (GPU)", 10, [("1", 1, 1, -1, 1)], [1], 9),
    _case("SetResourcesShare, one queue: Not enough (memory)", 3000, [("1", 1000, 1, -1, 5000)], [3000], 0),
    _case(
        "SetResourcesShare, two queues: Request more than total with different Over Quota and max allowed",
        1000,
        [("1", 250, 1, -1, 5000), ("2", 150, 2, 400, 5000)],
        [600, 400],
        0,
    ),
    _case(
        "SetResourcesShare, three queues: divide resource between queues with different over quota",
        9999,
        [("1", 0, 6, -1, 10000), ("2", 0, 2, -1, 10000), ("3", 0, 1, -1, 10000)],
        [6666, 2222, 1111],
        0,
    ),
    _case(
        "SetResourcesShare, advanced scenarios: fractional fair share",
        45,
        [("1", 12, 12, -1, 32.54999999999996), ("2", 7, 7, -1, 9.5), ("3", 2, 2, 2, 1.65)],
        [32.54999999999996, 9.5, 1.65],
        45 - 32.54999999999996 - 9.5 - 1.65,
    ),
    _case(
        "SetResourcesShare, advanced scenarios: divide last remaining GPU based to similar queues",
        5,
        [("1", 2, 2, -1, 3), ("2", 2, 2, -1, 3)],
        [3, 2],
        0,
    ),
]


#: :func:`gpureplay.engine.queues.kai.session.divide` compiled for calls from Python, on first use.
_DIVIDE: Any = None


def _kernel_fair_share(total: float, queues: list[KaiQueueShare]) -> dict[str, float]:
    """The engine kernel :func:`gpureplay.engine.queues.kai.session.divide` over top-level queues (resource
    row 0)."""
    from gpureplay.engine.jit.config import python_callable
    from gpureplay.engine.queues.kai.session import divide
    from gpureplay.engine.state.bundles import kai_state

    global _DIVIDE
    if _DIVIDE is None:
        _DIVIDE = python_callable(divide)

    n = len(queues)
    quota, limit, weight = np.full((3, n), -1.0), np.full((3, n), -1.0), np.zeros((3, n))
    quota[0] = [q.deserved for q in queues]
    limit[0] = [q.max_allowed for q in queues]
    weight[0] = [q.over_quota_weight for q in queues]
    qt = kai_state(
        np.full(n, -1, dtype=np.int64), n, np.array([q.priority for q in queues], dtype=np.int64), quota,
        weight, limit, np.arange(n, dtype=np.int64), np.array([float(total), 0.0, 0.0]),
        np.zeros(0, dtype=np.int64),
    )  # fmt: skip
    qt.v_req[0, :n] = [q.request for q in queues]
    _DIVIDE(qt, 0, n, float(total))
    return {q.name: float(qt.v_des[0, i]) for i, q in enumerate(queues)}


@pytest.mark.parametrize(("total", "spec", "expected", "remaining"), KAI_DIVISION_CASES)
def test_kai_resource_division_agrees_with_kais_own_tests(
    total: float, spec: list[tuple], expected: list[float], remaining: float
) -> None:
    """KAI's ``resource_division_test.go`` (v0.13.0) on the plain statement, with KAI's kValue 0 there, and
    on the engine kernel (k = 1, usage 0: weights 2 nW for nW, the same shares to the bit): the same fair
    shares exactly, and what is left undivided as KAI returns it. Queues are created in list order (KAI's
    tests give equal timestamps or none, and then the UID decides, in the same order)."""
    queues = [
        KaiQueueShare(q[0], q[1], q[2], q[3], q[4], priority=q[5] if len(q) > 5 else 100, created=float(i))
        for i, q in enumerate(spec)
    ]
    want = {q.name: float(x) for q, x in zip(queues, expected, strict=True)}
    plain = kai_fair_share(total, queues, k_value=0.0)
    assert plain == want
    assert _kernel_fair_share(total, queues) == want
    assert max(0.0, total - sum(plain.values())) == pytest.approx(remaining, abs=1e-9)
