"""KAI's and Volcano's topology-aware gangs (``topology_aware: kai | volcano``): engine and reference.

docs/engine/placement.md, "KAI topology" and "Volcano HyperNodes"; the tree, the counts (each
node's pods of the job, at most 2**40, summed up the tree) and the refusals are Kueue's (tests/test_tas.py).

KAI: a ``required`` L request may use one domain of L; ``preferred`` L tries L, every level above, then the
whole cluster. Each domain's share = max over the resources the pod asks of pods x ask / free (free GPU = 1000
per wholly free GPU for whole-GPU pods); the tree is sorted share descending (least free first), ties by id,
parent by parent, and the first candidate (lowest level first, tree order inside a level) whose nodes hold the
gang is the node set. Each pod then goes to the node with the highest (topology score, node scorer's score),
ties to the first in path order; the topology score (preferred only) is floor(10 (i + 1) / n) for the node's
level-L domain i of n in tree order. No request or ``unconstrained``: the node scorer, topology-blind.

Volcano (hard mode): a ``required`` L request searches the HyperNode tiers nvlink_domain (1), rack (2), spine
(3) upward to tier(L); the first tier with a HyperNode holding the gang decides, the highest binpack score
(mean over the asked resources of (used + asked) / allocatable) first, ties to the lowest id; pods go to its
nodes by the node scorer. Soft mode (``preferred``, any level: Volcano's master overwrites its tier)
searches every tier, then the whole cluster. ``required node`` and slices (Kueue's) are refused. Both refuse
``node_placement: random`` and a ``tas_profile`` other than ``mixed``; a CPU or memory capacity the nodes
table does not give is unbounded (no KAI share of it; a Volcano s_r of 0, its weight kept).

Scenario tests run on both the numba engine and the plain-Python reference (``on_both``). Nodes are V100
nodes of whole GPUs (CPU and memory unknown) and jobs ask 1 whole GPU per pod unless said otherwise. The
policies are the ``kai-tas`` preset (kai_binpack nodes: the fewest wholly free GPUs first) and the
``volcano-hypernode`` preset (best_fit nodes: the least free GPU milli left), priority queue (equal priorities
in (submit, job_id) order), gang, backfill skip. A node is (spine, rack, nvlink_domain); the nvlink_domain
defaults to the node's index. The hypothesis tests replay generated clusters and traces on both.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import polars as pl
import pytest
import tests.reference.simulator as reference
from hypothesis import given
from hypothesis import strategies as st
from tests.reference.draws import draws
from tests.reference.strategies import (
    CLASSIC_SCORERS,
    KAI_TAS_REQUESTS,
    VOLCANO_TAS_REQUESTS,
    job_rows,
    jobs_frame,
    nodes_frame,
    sample_intervals,
    seeds,
    tas_nodes,
)
from tests.test_differential import assert_agree
from tests.test_tas import job, node, spans

from gpureplay.errors import InputError
from gpureplay.replay.simulate import Replay
from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.schedulers.policy import (
    Backfill,
    GangMode,
    Policy,
    Preemption,
    QueueOrder,
    TasProfile,
)
from gpureplay.schedulers.presets import preset
from gpureplay.traces.schema import UNKNOWN_CAPACITY

KAI = preset("kai-tas")
VOLCANO = preset("volcano-hypernode")
IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = reference.simulate


on_both = pytest.mark.usefixtures("implementation")


def replay(
    jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], policy: Policy, **kw: Any
) -> dict[int, dict[str, Any]]:
    kw.setdefault("sample_interval", 10.0)
    result: Replay = simulate(jobs_frame(jobs), nodes_frame(nodes), policy, debug=True, **kw)
    return {r["job_id"]: r for r in result.jobs.iter_rows(named=True)}


def starts(out: dict[int, dict[str, Any]]) -> dict[int, float | None]:
    return {j: r["start_time"] for j, r in out.items()}


# --------------------------------------------------------------------------------------------------
# KAI: the docs' example (docs/topology/README.md), and which rack the third pod takes
# --------------------------------------------------------------------------------------------------

#: Zone A = spine 0: rack A1 (rack 0) = nodes 0, 1; A2 (rack 1) = node 2 (an A10); A3 (rack 2) = node 3;
#: A4 (rack 3) = node 4 (a T4). Zone B = spine 1: racks B1, B2, B3 (racks 4, 5, 6) of two nodes each (nodes
#: 5-10). One GPU per node. The A10 and the T4 tell which of A2 / A4 is taken.
KAI_DOCS = [
    node(1, 0, 0),
    node(1, 0, 0),
    node(1, 0, 1, model="A10"),
    node(1, 0, 2),
    node(1, 0, 3, model="T4"),
    *[node(1, 1, rack) for rack in (4, 4, 5, 5, 6, 6)],
]


@on_both
def test_kai_docs_example_third_pod_on_a4() -> None:
    # Job 1: 3 pods (any model), preferred rack, 100 s. Counts: 1 per node; racks A1 2, A2-A4 1, B1-B3 2:
    # no rack holds 3. Spines: A 5 >= 3 -> the node set is zone A (nodes 0-4).
    # Sorted tree (share = 3 x 1000 / free GPU milli): spines A 3000/5000 = 0.6, B 3000/6000 = 0.5 -> A, B.
    # Racks of A: A1 3000/2000 = 1.5, A2, A3, A4 3.0 -> A2, A3, A4 (ties by id), A1; of B: 1.5 each -> B1,
    # B2, B3. Rack list (n = 7): A2, A3, A4, A1, B1, B2, B3: topology scores floor(10 (i + 1) / 7) = 1, 2, 4,
    # 5, ... Pods: A1's nodes (5) first: node 0 (kai_binpack: -1 wholly free each, tie -> path order), node 1;
    # then A4 (4) before A3 (2) and A2 (1): node 4, the T4.
    # -> 3 nodes, 3 NVLink domains, 2 racks, 1 spine (the README's "2 racks"; it names A2, the code ranks A4).
    # Job 2 (1 T4 pod, no request): only node 4 has a T4: it waits for job 1's end at 100.
    # Job 3 (1 A10 pod, no request): node 2 (A2) is free: starts at 0.
    jobs = [
        job(1, 0.0, 100.0, 3, "preferred", "rack"),
        job(2, 0.0, 10.0, 1, gpu_models=["T4"]),
        job(3, 0.0, 10.0, 1, gpu_models=["A10"]),
    ]
    out = replay(jobs, KAI_DOCS, KAI)
    assert (out[1]["state"], out[1]["start_time"], out[1]["finish_time"]) == ("finished", 0.0, 100.0)
    assert spans(out[1]) == (3, 3, 2, 1)
    assert (out[2]["start_time"], out[2]["pending_time"]) == (100.0, 100.0)
    assert (out[3]["start_time"], out[3]["finish_time"]) == (0.0, 10.0)


@on_both
def test_kai_docs_example_required_spine_has_no_topology_score() -> None:
    # The same job required in a spine: candidates = spines only, A first (0.6 before 0.5) and it holds 3
    # -> nodes 0-4. No topology score (required): kai_binpack ties (one GPU each) -> path order: nodes 0, 1,
    # 2 (the A10). So job 3 (A10) waits for 100 and job 2 (T4) starts at 0.
    jobs = [
        job(1, 0.0, 100.0, 3, "required", "spine"),
        job(2, 0.0, 10.0, 1, gpu_models=["T4"]),
        job(3, 0.0, 10.0, 1, gpu_models=["A10"]),
    ]
    out = replay(jobs, KAI_DOCS, KAI)
    assert spans(out[1]) == (3, 3, 2, 1)
    assert (out[2]["start_time"], out[3]["start_time"]) == (0.0, 100.0)


#: Research notes 1.6: zone X (spine 0): rack x1 (rack 0) = nodes 0-3 (A10s), rack x2 (rack 1) = node 4;
#: zone Y (spine 1): racks y1, y2 (racks 2, 3) of three nodes each (nodes 5-10). One GPU per node.
PARENT_MAJOR = [
    *[node(1, 0, 0, model="A10") for _ in range(4)],
    node(1, 0, 1),
    *[node(1, 1, rack) for rack in (2, 2, 2, 3, 3, 3)],
]


@on_both
def test_kai_sorts_parent_by_parent() -> None:
    # Job 1: 3 pods, preferred rack, 100 s. Racks holding 3: x1 (4), y1 (3), y2 (3). Spines: X 3000/5000 =
    # 0.6, Y 3000/6000 = 0.5 -> X, Y. Racks of X: x2 3.0, x1 0.75; of Y: y1 1.0, y2 1.0. Rack list: x2, x1,
    # y1, y2: the first that holds 3 is x1, though y1 and y2 are tighter (1.0 > 0.75): parent-major order.
    # In x1 every node scores the same (one rack): nodes 0, 1, 2 in path order.
    # Job 2 (2 A10 pods, no request): x1 has one A10 left: it waits until 100.
    jobs = [job(1, 0.0, 100.0, 3, "preferred", "rack"), job(2, 0.0, 10.0, 2, gpu_models=["A10"])]
    out = replay(jobs, PARENT_MAJOR, KAI)
    assert (out[1]["start_time"], spans(out[1])) == (0.0, (3, 3, 1, 1))
    assert out[2]["start_time"] == 100.0


# --------------------------------------------------------------------------------------------------
# KAI: required bin-packs the domains; preferred falls back to the whole cluster
# --------------------------------------------------------------------------------------------------

#: Spine 0: nodes 0, 1 of 4 GPUs (racks 0, 1); spine 1: node 2 of 3 GPUs (rack 2); spine 2: node 3 of 4
#: GPUs (rack 3) and node 4 of 2 GPUs (rack 4).
SPINES = [node(4, 0, 0), node(4, 0, 1), node(3, 1, 2), node(4, 2, 3), node(2, 2, 4)]


@on_both
def test_kai_required_spine_takes_the_least_free_spine_that_holds_it() -> None:
    # Job 1: 4 pods, required spine, 100 s. Shares 4000 / free: spine 0 4000/8000 = 0.5, spine 1 4000/3000 =
    # 1.33, spine 2 4000/6000 = 0.67 -> spine 1, spine 2, spine 0. Spine 1 holds 3 < 4; spine 2 holds 6 -> the
    # node set (nodes 3, 4). kai_binpack (fewest wholly free first): node 4 (2) twice, then node 3 (4) twice:
    # 2 nodes, 2 racks, 1 spine.
    # Job 2: 8 pods, required spine: spine 0 is whole (8): starts at 0 (had job 1 taken spine 0, the most
    # free, job 2 would wait until 100).
    # Job 3: 3 pods, required node: node 2 (3) holds it (node 3 has 2 left): starts at 0.
    jobs = [
        job(1, 0.0, 100.0, 4, "required", "spine"),
        job(2, 0.0, 10.0, 8, "required", "spine"),
        job(3, 0.0, 10.0, 3, "required", "node"),
    ]
    out = replay(jobs, SPINES, KAI)
    assert spans(out[1]) == (2, 2, 2, 1)
    assert starts(out) == {1: 0.0, 2: 0.0, 3: 0.0}
    assert spans(out[2]) == (2, 2, 2, 1)
    assert spans(out[3]) == (1, 1, 1, 1)


@on_both
def test_kai_required_waits_for_its_domain() -> None:
    # Job 1 (4 pods, required spine) takes spine 2 as above; job 2 (5 pods, required spine): spine 0 holds 8
    # -> starts at 0 on nodes 0 (4, kai_binpack ties at 4 -> path order) and 1 (1). Job 3 (4 pods, required
    # spine, at 1): spine 0 has 3 left, spine 1 3, spine 2 2: no spine holds 4 now (each does empty) -> it
    # waits; at 10 job 2 ends: spine 0 (8) is the only one that holds 4 -> starts at 10.
    jobs = [
        job(1, 0.0, 100.0, 4, "required", "spine"),
        job(2, 0.0, 10.0, 5, "required", "spine"),
        job(3, 1.0, 10.0, 4, "required", "spine"),
    ]
    out = replay(jobs, SPINES, KAI)
    assert starts(out) == {1: 0.0, 2: 0.0, 3: 10.0}
    assert (out[3]["reject_reason"], out[3]["pending_time"]) == (None, 9.0)


#: Spine 0: rack 0 = node 0 (2 GPUs); spine 1: rack 1 = node 1, rack 2 = node 2 (1 GPU each).
FALLBACK = [node(2, 0, 0), node(1, 1, 1), node(1, 1, 2)]


@on_both
@pytest.mark.parametrize(
    ("mode", "level", "state", "reason", "expected"),
    [
        # 3 pods, preferred rack: racks hold 2, 1, 1, spines 2, 2: none holds 3 -> the whole cluster (4).
        # Sorted tree: spines 3000/2000 = 1.5 each -> spine 0, spine 1; racks rack 0 (1.5), then rack 1,
        # rack 2 (3.0 each). Scores floor(10 (i + 1) / 3): rack 0 3, rack 1 6, rack 2 10 -> pods on node 2,
        # node 1, then node 0: 3 nodes, 3 racks, 2 spines.
        ("preferred", "rack", "finished", None, (3, 3, 3, 2)),
        ("preferred", "nvlink_domain", "finished", None, (3, 3, 3, 2)),
        ("preferred", "spine", "finished", None, (3, 3, 3, 2)),
        # Required: no domain of the level holds 3 even empty -> topology_too_large.
        ("required", "spine", "rejected", "topology_too_large", (0, 0, 0, 0)),
        ("required", "rack", "rejected", "topology_too_large", (0, 0, 0, 0)),
    ],
)
def test_kai_preferred_falls_back_to_the_whole_cluster(
    mode: str, level: str, state: str, reason: str | None, expected: tuple[int, ...]
) -> None:
    out = replay([job(1, 0.0, 10.0, 3, mode, level)], FALLBACK, KAI)[1]
    assert (out["state"], out["reject_reason"], spans(out)) == (state, reason, expected)


#: Spine 0: rack 0 = node 0 (1 T4), rack 1 = node 1 (1 GPU); spine 1: rack 2 = node 2 (2 GPUs).
FALLBACK_T4 = [node(1, 0, 0, model="T4"), node(1, 0, 1), node(2, 1, 2)]


@on_both
@pytest.mark.parametrize(
    ("level", "t4_start"),
    [
        # 3 pods: spines hold 2 and 2 < 3 -> the whole cluster (4). Spines 3000/2000 = 1.5 each -> spine 0,
        # spine 1; racks rack 0, rack 1 (3.0 each), then rack 2 (1.5): scores floor(10 (i + 1) / 3) = 3, 6,
        # 10 -> node 2 twice, then node 1 (6) before the T4 (3): 2 nodes, the T4 free. (kai_binpack alone
        # would take node 0, the T4, and node 1 first: 3 nodes.)
        ("rack", 0.0),
        ("nvlink_domain", 0.0),
        ("node", 0.0),
        # Preferred spine: spine 0 scores floor(10 / 2) = 5, spine 1 10 -> node 2 twice, then nodes 0 and 1
        # tie at 5 and kai_binpack ties (1 GPU each): path order, node 0, the T4.
        ("spine", 100.0),
    ],
)
def test_kai_whole_cluster_fallback_ranks_nodes_by_their_domain(level: str, t4_start: float) -> None:
    jobs = [job(1, 0.0, 100.0, 3, "preferred", level), job(2, 0.0, 10.0, 1, gpu_models=["T4"])]
    out = replay(jobs, FALLBACK_T4, KAI)
    assert (out[1]["start_time"], spans(out[1])) == (0.0, (2, 2, 2, 2))
    assert out[2]["start_time"] == t4_start


#: One spine: rack 0 = node 0 (2 GPUs), rack 1 = node 1 (1 T4), rack 2 = node 2 (1 GPU).
THREE_RACKS = [node(2, 0, 0), node(1, 0, 1, model="T4"), node(1, 0, 2)]


@on_both
@pytest.mark.parametrize(
    ("mode", "level", "expected", "t4_start"),
    [
        # 3 pods, preferred rack: racks hold 2, 1, 1: none holds 3; the spine (4) does: the node set is all
        # three nodes. Racks sorted by share: rack 1, rack 2 (3000/1000 = 3.0, ties by id), rack 0
        # (3000/2000 = 1.5): topology scores floor(10 (i + 1) / 3) = 3, 6, 10. Pods: node 0 (10) twice, then
        # node 2 (6): 2 nodes, the T4 untouched, though kai_binpack alone would start with the 1-GPU nodes.
        ("preferred", "rack", (2, 2, 2, 1), 0.0),
        # Required spine: no topology score: kai_binpack (fewest wholly free GPUs): node 1 and node 2 (1
        # each, path order), then node 0: 3 nodes, the T4 taken.
        ("required", "spine", (3, 3, 3, 1), 100.0),
    ],
)
def test_kai_topology_score_outranks_the_node_scorer(
    mode: str, level: str, expected: tuple[int, ...], t4_start: float
) -> None:
    # Job 2: 1 T4 pod, no request: starts at 0 if node 1 is free, else when job 1 ends at 100.
    jobs = [job(1, 0.0, 100.0, 3, mode, level), job(2, 0.0, 10.0, 1, gpu_models=["T4"])]
    out = replay(jobs, THREE_RACKS, KAI)
    assert (out[1]["start_time"], spans(out[1])) == (0.0, expected)
    assert out[2]["start_time"] == t4_start


@on_both
def test_kai_preferred_waits_when_the_cluster_cannot_hold_it() -> None:
    # Racks 0 (node 0, 4 GPUs) and 1 (node 1, 1 GPU), one spine. Job 1: 4 pods, preferred node: nodes hold 4
    # and 1. Tree order: racks by share, rack 1 (4000/1000 = 4.0) then rack 0 (1.0), so nodes 1, 0: the first
    # that holds 4 is node 0. Job 2 at 1: 2 pods, preferred node: node 0 holds 0, node 1 1; NVLink domains,
    # racks, the spine and the whole cluster hold 1 < 2: it waits until 100, then node 1 (1) is passed over
    # for node 0 (4).
    jobs = [job(1, 0.0, 100.0, 4, "preferred", "node"), job(2, 1.0, 10.0, 2, "preferred", "node")]
    out = replay(jobs, [node(4, 0, 0), node(1, 0, 1)], KAI)
    assert starts(out) == {1: 0.0, 2: 100.0}
    assert spans(out[1]) == spans(out[2]) == (1, 1, 1, 1)


@on_both
@pytest.mark.parametrize(
    ("mode", "level"), [(None, None), ("unconstrained", "node"), ("unconstrained", None)]
)
def test_kai_without_a_request_uses_the_node_scorer(mode: str | None, level: str | None) -> None:
    # Nodes 0 (4 GPUs) and 1 (2 GPUs). Job 1: 2 pods, no request: kai_binpack (fewest wholly free GPUs) puts
    # both on node 1. Job 2: 4 pods, required node: node 0 is whole -> starts at 0.
    jobs = [job(1, 0.0, 100.0, 2, mode, level), job(2, 0.0, 10.0, 4, "required", "node")]
    out = replay(jobs, [node(4), node(2)], KAI)
    assert starts(out) == {1: 0.0, 2: 0.0}
    assert spans(out[1]) == (1, 1, 1, 1)
    # Under worst_fit nodes job 1 spreads most free first: node 0, then node 0 again (3 left vs 2): job 2
    # waits for 100.
    out = replay(jobs, [node(4), node(2)], replace(KAI, name="kai-worst", node_placement="worst_fit"))
    assert starts(out) == {1: 0.0, 2: 100.0}


@on_both
def test_kai_share_counts_cpu() -> None:
    # Racks 0 (node 0: 2 GPUs, 64000 CPU) and 1 (node 1: 2 GPUs, 6000 CPU), one spine. Job 1: 1 pod of 1 GPU
    # + 4000 CPU, required rack. Shares: rack 0 max(1000/2000, 4000/64000) = 0.5, rack 1 max(0.5, 4000/6000)
    # = 0.67 -> rack 1 first (GPU alone would tie, and rack 0 would win by id); it holds 1: node 1.
    # Job 2 (1 GPU + 60000 CPU, no request): only node 0 can hold it, still whole: starts at 0.
    nodes = [
        {"gpu_model": "V100", "num_gpus": 2, "rack": 0, "cpu_milli": 64000},
        {"gpu_model": "V100", "num_gpus": 2, "rack": 1, "cpu_milli": 6000},
    ]
    jobs = [
        job(1, 0.0, 100.0, 1, "required", "rack", cpu_milli=4000),
        job(2, 0.0, 10.0, 1, cpu_milli=60000),
    ]
    out = replay(jobs, nodes, KAI)
    assert starts(out) == {1: 0.0, 2: 0.0}


# --------------------------------------------------------------------------------------------------
# Volcano: the design doc's example, binpack, ties
# --------------------------------------------------------------------------------------------------

#: The design doc: tier 1 s0 = {n0, n1}, s1 = {n2, n3}, s2 = {n4, n5}, s3 = {n6, n7} (NVLink domains 0-3);
#: tier 2 s4 = {s0, s1} (rack 0), s5 = {s2, s3} (rack 1); one spine. 8 GPUs per node.
DESIGN = [node(8, 0, i // 4, i // 2) for i in range(8)]


@on_both
@pytest.mark.parametrize("level", ["rack", "spine"])
def test_volcano_design_doc_example(level: str) -> None:
    # Job 0: 1 pod of 8 GPUs, no request: best_fit nodes, all equal -> n0 (full).
    # Job 1: 3 pods of 8 GPUs, required rack (highestTierAllowed 2) or spine (3: tier 2 decides first).
    # Tier 1: s0 holds 1, s1-s3 2: none holds 3. Tier 2: s4 (n1, n2, n3) holds 3, s5 4. Binpack (GPU only):
    # s4 (8000 used + 24000) / 32000 = 1.0, s5 (0 + 24000) / 32000 = 0.75 -> s4: 3 nodes, 2 NVLink domains,
    # 1 rack.
    # Job 2: 4 pods of 8 GPUs, required rack: s5 is whole: starts at 0 (it would wait had job 1 taken s5).
    # Job 3: 2 pods of 8 GPUs, required nvlink_domain: everything is full at 0: it waits; at 10 job 2 ends:
    # tier 1: s2, s3 hold 2, both score 16000 / 16000 = 1.0 -> the lowest id, s2: starts at 10.
    # Job 4: 3 pods of 8 GPUs, required nvlink_domain (highestTierAllowed 1): no tier-1 HyperNode holds 3
    # even empty -> topology_too_large (the design doc's "the job waits", at arrival here).
    jobs = [
        job(0, 0.0, 100.0, 1, milli=8000),
        job(1, 0.0, 100.0, 3, "required", level, milli=8000),
        job(2, 0.0, 10.0, 4, "required", "rack", milli=8000),
        job(3, 0.0, 10.0, 2, "required", "nvlink_domain", milli=8000),
        job(4, 0.0, 10.0, 3, "required", "nvlink_domain", milli=8000),
    ]
    out = replay(jobs, DESIGN, VOLCANO)
    assert starts(out) == {0: 0.0, 1: 0.0, 2: 0.0, 3: 10.0, 4: None}
    assert spans(out[1]) == (3, 2, 1, 1)
    assert spans(out[2]) == (4, 2, 1, 1)
    assert spans(out[3]) == (2, 1, 1, 1)
    assert (out[4]["state"], out[4]["reject_reason"]) == ("rejected", "topology_too_large")


@on_both
def test_volcano_binpack_takes_the_fuller_hypernode_by_cpu() -> None:
    # Nodes 0 (V100) and 1 (T4): 4 GPUs, 32000 CPU each, own NVLink domains, racks 0 and 1. Job 0a (1 V100,
    # no request) -> node 0; job 0b (1 T4 + 24000 CPU, no request) -> node 1. Job 1: 2 pods of 1 GPU + 2000
    # CPU (any model), required rack: tier 1 (NVLink domains = nodes) holds it: both nodes hold 3.
    # Binpack: GPU (1000 used + 2000) / 4000 = 0.75 on both; CPU node 0 (0 + 4000) / 32000 = 0.125, node 1
    # (24000 + 4000) / 32000 = 0.875 -> node 0 0.4375, node 1 0.8125 -> node 1 (GPU alone: a tie, node 0).
    # Job 2 (3 V100 pods, no request): node 0 still has 3: starts at 0.
    nodes = [
        {"gpu_model": "V100", "num_gpus": 4, "rack": 0, "cpu_milli": 32000},
        {"gpu_model": "T4", "num_gpus": 4, "rack": 1, "cpu_milli": 32000},
    ]
    jobs = [
        job(1, 0.0, 100.0, 1, gpu_models=["V100"]),
        job(2, 0.0, 100.0, 1, gpu_models=["T4"], cpu_milli=24000),
        job(3, 0.0, 100.0, 2, "required", "rack", cpu_milli=2000),
        job(4, 0.0, 10.0, 3, gpu_models=["V100"]),
    ]
    out = replay(jobs, nodes, VOLCANO)
    assert starts(out) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0}
    assert spans(out[3]) == (1, 1, 1, 1)


@on_both
def test_volcano_binpack_ties_go_to_the_lowest_id_not_the_lowest_index() -> None:
    # Nodes 0, 1, 2 (2 GPUs each) in NVLink domains 5, 3, 4 (one rack): ids in path order are node 1 (3),
    # node 2 (4), node 0 (5). Job 1: 2 pods, required nvlink_domain: all three hold 2 and score 2000 / 2000 =
    # 1.0 -> the lowest id: node 1 (the T4). Job 2 (1 T4 pod, no request): waits for job 1's end at 100.
    nodes = [node(2, 0, 0, 5), node(2, 0, 0, 3, model="T4"), node(2, 0, 0, 4)]
    jobs = [job(1, 0.0, 100.0, 2, "required", "nvlink_domain"), job(2, 0.0, 10.0, 1, gpu_models=["T4"])]
    out = replay(jobs, nodes, VOLCANO)
    assert starts(out) == {1: 0.0, 2: 100.0}


@on_both
@pytest.mark.parametrize(("scorer", "t4_start"), [("best_fit", 0.0), ("worst_fit", 100.0)])
def test_volcano_nodes_inside_the_hypernode_go_by_the_node_scorer(scorer: str, t4_start: float) -> None:
    # One rack: node 0 (2 V100), node 1 (2 T4), node 2 (1 V100), own NVLink domains. Job 1: 3 pods (any
    # model), required rack: tier 1 holds at most 2; tier 2: the rack (5) -> its nodes by the node scorer.
    # best_fit (least milli left): node 2 (0 left), then node 0 (1000, tied with node 1: path order), node 0
    # again (0): the T4s untouched. worst_fit (most left): node 0 (1000, tied with node 1), node 1 (1000),
    # then node 0 (all 0: path order): one T4 taken.
    # Job 2: 2 T4 pods, no request.
    nodes = [node(2), node(2, model="T4"), node(1)]
    jobs = [job(1, 0.0, 100.0, 3, "required", "rack"), job(2, 0.0, 10.0, 2, gpu_models=["T4"])]
    out = replay(jobs, nodes, replace(VOLCANO, name=f"volcano-{scorer}", node_placement=scorer))
    assert (out[1]["start_time"], spans(out[1])) == (0.0, (2, 2, 1, 1))
    assert out[2]["start_time"] == t4_start


@on_both
@pytest.mark.parametrize(
    ("mode", "level"), [(None, None), ("unconstrained", "node"), ("unconstrained", None)]
)
def test_volcano_without_a_request_uses_the_node_scorer(mode: str | None, level: str | None) -> None:
    # Nodes 0 (4 GPUs) and 1 (2 GPUs). Job 1: 2 pods, no request: best_fit (least milli left) -> node 1
    # twice. Job 2: 4 pods, required nvlink_domain: node 0 is whole -> starts at 0.
    jobs = [job(1, 0.0, 100.0, 2, mode, level), job(2, 0.0, 10.0, 4, "required", "nvlink_domain")]
    out = replay(jobs, [node(4), node(2)], VOLCANO)
    assert starts(out) == {1: 0.0, 2: 0.0}


# --------------------------------------------------------------------------------------------------
# Refused settings and requests
# --------------------------------------------------------------------------------------------------

REFUSED: dict[str, tuple[Policy, str]] = {
    "kai-random": (replace(KAI, node_placement="random"), "node_placement"),
    "volcano-random": (replace(VOLCANO, node_placement="random"), "node_placement"),
    **{
        f"{system.name}-{profile.name}": (replace(system, tas_profile=profile), "tas_profile")
        for system in (KAI, VOLCANO)
        for profile in TasProfile
        if profile is not TasProfile.mixed
    },
    **{
        f"{system.name}-{name}": (replace(system, **changes), "topology_aware")
        for system in (KAI, VOLCANO)
        for name, changes in (
            ("pod_by_pod", {"gang": GangMode.pod_by_pod}),
            ("easy", {"backfill": Backfill.easy}),
            ("preemption", {"preemption": Preemption.priority, "graceful_termination": 2.0}),
        )
    },
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_settings(name: str) -> None:
    policy, key = REFUSED[name]
    jobs, nodes = jobs_frame([job(1, 0.0, 10.0, 1)]), nodes_frame([node(1)])
    with pytest.raises(InputError, match=re.escape(f"scheduler.{key}")):
        engine_simulate(jobs, nodes, policy)
    with pytest.raises(ValueError, match=key):
        reference.simulate(jobs, nodes, policy)


def test_kueue_takes_what_kai_and_volcano_refuse() -> None:
    # node_placement: random and a tas_profile other than mixed are refused under kai and volcano only.
    jobs, nodes = jobs_frame([job(1, 0.0, 10.0, 1)]), nodes_frame([node(1)])
    policy = replace(preset("kueue-tas"), node_placement="random", tas_profile=TasProfile.best_fit)
    for run in (engine_simulate, reference.simulate):
        assert run(jobs, nodes, policy).jobs["state"].to_list() == ["finished"]


def test_volcano_refuses_the_node_tier() -> None:
    # Row 2 of the table asks what hard mode cannot express: an input error naming the column and the row.
    jobs = jobs_frame([job(1, 0.0, 10.0, 1, "required", "rack"), job(2, 0.0, 10.0, 1, "required", "node")])
    nodes = nodes_frame([node(1)])
    with pytest.raises(InputError, match="topology_level") as info:
        engine_simulate(jobs, nodes, VOLCANO)
    assert (info.value.problems[0].row, info.value.problems[0].column) == (2, "topology_level")
    with pytest.raises(ValueError, match=r"row 2 .*topology_level"):
        reference.simulate(jobs, nodes, VOLCANO)
    # KAI takes both requests.
    for run in (engine_simulate, reference.simulate):
        assert run(jobs, nodes, KAI).jobs["state"].to_list() == ["finished", "finished"]


@pytest.mark.parametrize("preset_name", ["volcano-hypernode", "kai-tas"])
def test_slices_are_kueues(preset_name: str) -> None:
    # Row 2 asks PodSet slices: Kueue's, refused naming the column and the row.
    jobs = jobs_frame(
        [
            job(1, 0.0, 10.0, 2, "required", "rack", topology_slice_level=None, topology_slice_size=None),
            job(2, 0.0, 10.0, 2, "required", "rack", topology_slice_level="node", topology_slice_size=2),
        ]
    )
    with pytest.raises(InputError, match="Kueue's") as info:
        engine_simulate(jobs, nodes_frame([node(2)]), preset(preset_name))
    assert (info.value.problems[0].row, info.value.problems[0].column) == (2, "topology_slice_level")


# --------------------------------------------------------------------------------------------------
# Volcano's soft mode: every tier, then the whole cluster (master's soft -> hard at the virtual top tier)
# --------------------------------------------------------------------------------------------------


@on_both
@pytest.mark.parametrize("level", ["node", "nvlink_domain", "rack", "spine"])
def test_volcano_soft_mode_searches_every_tier_then_the_cluster(level: str) -> None:
    # The design doc's cluster (8 GPUs a node), n0 full (job 0). Whatever level the soft spec names
    # (Volcano overwrites its tier): job 1, 2 pods of 8 GPUs: tier 1: s1, s2, s3 hold 2; binpack 16000 /
    # 16000 = 1.0 each -> the lowest id, s1 (n2, n3). Job 2, 5 pods of 8 GPUs: no tier-1 (2 at most), no
    # tier-2 (s4 holds n1 only = 1, s5 4) HyperNode holds 5; tier 3, the spine, holds n1 + s5 = 5 -> runs
    # at 0 over 2 racks. Job 3, 1 pod at 0: nothing left: waits for job 1 (10 s).
    jobs = [
        job(0, 0.0, 100.0, 1, milli=8000),
        job(1, 0.0, 10.0, 2, "preferred", level, milli=8000),
        job(2, 0.0, 100.0, 5, "preferred", level, milli=8000),
        job(3, 0.0, 10.0, 1, "preferred", level, milli=8000),
    ]
    out = replay(jobs, DESIGN, VOLCANO)
    assert starts(out) == {0: 0.0, 1: 0.0, 2: 0.0, 3: 10.0}
    assert spans(out[1]) == (2, 1, 1, 1)
    assert spans(out[2]) == (5, 3, 2, 1)


@on_both
def test_volcano_hard_mode_waits_where_soft_mode_spreads() -> None:
    # Two spines of one 4-GPU node each. Job 1: 5 one-GPU pods. Required spine or rack: no HyperNode holds 5
    # even empty: topology_too_large. Preferred (any level): no tier holds it, the virtual top tier (the
    # whole cluster, 8) does: it runs on both nodes.
    nodes = [node(4, 0, 0), node(4, 1, 1)]
    for mode, level, state in (
        ("required", "spine", "rejected"),
        ("required", "rack", "rejected"),
        ("preferred", "rack", "finished"),
        ("preferred", "node", "finished"),
    ):
        out = replay([job(1, 0.0, 10.0, 5, mode, level)], nodes, VOLCANO)
        assert out[1]["state"] == state, (mode, level)
        if state == "finished":
            assert spans(out[1]) == (2, 2, 2, 2)


# --------------------------------------------------------------------------------------------------
# Unknown CPU or memory: unbounded, no share (KAI), s_r = 0 with its weight kept (Volcano)
# --------------------------------------------------------------------------------------------------


@on_both
def test_kai_unknown_cpu_gives_no_share() -> None:
    # Node 0: 1 GPU, 32000 CPU (NVLink domain 0); nodes 1, 2: no GPU, unknown CPU (NVLink domain 1). Job 1:
    # a GPU-less pod of 32000 CPU, required nvlink_domain. Shares (CPU only): domain 0 32000/32000 = 1.0,
    # domain 1 holds nodes of unknown CPU: no CPU share, so 0 -> domain 0 first; it holds 1: node 0, whose
    # CPU job 2 (1 GPU + 1000 CPU, no request) then waits for until 100.
    # (The engine once summed 2**62 per unknown node in int64: 2 x 2**62 wrapped to -2**63 <= 0, share 1000,
    # domain 1 first, and job 2 started at 0.)
    nodes = [
        {"gpu_model": "V100", "num_gpus": 1, "cpu_milli": 32000, "nvlink_domain": 0},
        {"gpu_model": "V100", "num_gpus": 0, "nvlink_domain": 1},
        {"gpu_model": "V100", "num_gpus": 0, "nvlink_domain": 1},
    ]
    jobs = [
        job(1, 0.0, 100.0, 1, "required", "nvlink_domain", milli=0, cpu_milli=32000),
        job(2, 0.0, 10.0, 1, cpu_milli=1000),
    ]
    assert starts(replay(jobs, nodes, KAI)) == {1: 0.0, 2: 100.0}


@on_both
def test_volcano_unknown_cpu_scores_zero_with_two_nodes() -> None:
    # NVLink domain 0: nodes 0, 1 (1 GPU each, unknown CPU); domain 1: node 2 (4 GPUs, 32000 CPU); one rack.
    # Job 1: 2 pods of 1 GPU + 1000 CPU, required nvlink_domain: both domains hold 2. Binpack: domain 0 GPU
    # (0 + 2000) / 2000 = 1.0, CPU unbounded: s = 0, weight kept -> 0.5; domain 1 GPU 2000 / 4000 = 0.5, CPU
    # 2000 / 32000 = 0.0625 -> 0.28125 -> domain 0: 2 nodes.
    # (The engine once summed 2**62 per unknown node in int64: the sum wrapped negative, "capacity <= 0" gave
    # domain 0 the score 0, and domain 1 won: 1 node.)
    nodes = [
        {"gpu_model": "V100", "num_gpus": 1, "nvlink_domain": 0},
        {"gpu_model": "V100", "num_gpus": 1, "nvlink_domain": 0},
        {"gpu_model": "V100", "num_gpus": 4, "cpu_milli": 32000, "nvlink_domain": 1},
    ]
    out = replay([job(1, 0.0, 100.0, 2, "required", "nvlink_domain", cpu_milli=1000)], nodes, VOLCANO)
    assert spans(out[1]) == (2, 1, 1, 1)


@on_both
def test_volcano_unknown_cpu_scores_zero_with_one_node() -> None:
    # Node 0: 1 T4 (NVLink domain 1), node 1: 1 V100 (domain 0), unknown CPU, one rack; first_fit nodes.
    # Job 1 (GPU-less, 32000 CPU, no request): first_fit -> node 0. Job 2: 1 pod of 1 GPU + 32000 CPU,
    # required nvlink_domain: both domains hold 1; binpack GPU 1000 / 1000 = 1.0 on both, CPU unbounded (s =
    # 0) on both -> a tie: the lowest id, domain 0 = node 1 (the V100). Job 3 (1 T4, no request): starts at 0.
    # (With s_cpu = (used + asked) / 2**62, as the engine once had, node 0's 64000 / 2**62 beat node 1's
    # 32000 / 2**62: the T4, and job 3 waited until 100.)
    nodes = [
        {"gpu_model": "T4", "num_gpus": 1, "nvlink_domain": 1},
        {"gpu_model": "V100", "num_gpus": 1, "nvlink_domain": 0},
    ]
    jobs = [
        job(1, 0.0, 100.0, 1, milli=0, cpu_milli=32000),
        job(2, 0.0, 100.0, 1, "required", "nvlink_domain", cpu_milli=32000),
        job(3, 0.0, 10.0, 1, gpu_models=["T4"]),
    ]
    out = replay(jobs, nodes, replace(VOLCANO, name="volcano-first-fit", node_placement="first_fit"))
    assert starts(out) == {1: 0.0, 2: 0.0, 3: 0.0}


# --------------------------------------------------------------------------------------------------
# Generated cases: whole replays on both
# --------------------------------------------------------------------------------------------------

#: KAI's requests in contended cases: preferred ones weighted up (they climb levels and rank nodes by the
#: topology score).
_KAI_CONTENDED_REQUESTS = st.sampled_from(
    [(None, None), ("unconstrained", "node")]
    + [(mode, level) for mode in ("required", "preferred", "preferred") for level in reference.TAS_LEVELS]
)
#: Node scorers the generated policies draw: the classic ones but random (refused) and KAI's binpack.
_NODE_SCORERS = [s for s in CLASSIC_SCORERS if s != "random"] + ["kai_binpack"]


@st.composite
def tas_cases(
    draw: st.DrawFn, requests: st.SearchStrategy[tuple[str | None, str | None]], known: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A small topology (:func:`tests.reference.strategies.tas_nodes`; ``known``: finite CPU and memory on
    every node) and up to 15 generated jobs (:func:`tests.reference.strategies.job_rows`) with requests."""
    nodes = draw(tas_nodes(known=known))
    rows = draw(job_rows(max_jobs=15))
    for row in rows:
        row["topology_mode"], row["topology_level"] = draw(requests)
    return jobs_frame(rows), nodes_frame(nodes)


@st.composite
def tas_policies(draw: st.DrawFn, base: Policy) -> Policy:
    """``base`` with a random queue order, backfill (none or skip) and depth, cycles, scorers and
    spreading cost."""
    return replace(
        base,
        name=f"{base.name}-random",
        queue_order=draw(st.sampled_from(list(QueueOrder))),
        backfill=draw(st.sampled_from([Backfill.none, Backfill.skip, Backfill.skip])),
        backfill_depth=draw(st.sampled_from([0, 0, 1, 2])),
        session_interval=draw(st.sampled_from([0.0, 0.0, 0.5, 3.0])),
        gpu_placement=draw(st.sampled_from(CLASSIC_SCORERS)),
        node_placement=draw(st.sampled_from(_NODE_SCORERS)),
        spread_rate_nvlink=draw(st.sampled_from([0.8, 1.0])),
        spread_rate_rack=draw(st.sampled_from([0.5, 1.0])),
    )


@st.composite
def contended_cases(
    draw: st.DrawFn, requests: st.SearchStrategy[tuple[str | None, str | None]], known: bool
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """3-10 GPU nodes in a few spines / racks / NVLink domains (ids repeating across parents) and 2-12
    overlapping multi-pod jobs with requests: gangs that no one domain holds, domains of different
    shares, so where the pods go shows in the spans and the later starts. A few jobs ask one model only.
    ``known``: finite CPU and memory on every node."""
    cpus = [8000, 32000, 64000] if known else [UNKNOWN_CAPACITY, UNKNOWN_CAPACITY, 32000]
    nodes = [
        {
            "gpu_model": draw(st.sampled_from(["V100", "V100", "T4"])),
            "num_gpus": draw(st.sampled_from([1, 1, 2, 2, 3, 4, 4, 8])),
            "spine": draw(st.integers(0, 1)),
            "rack": draw(st.integers(0, 3)),
            "nvlink_domain": draw(st.integers(0, 3)),
            "cpu_milli": draw(st.sampled_from(cpus)),
            "mem_mib": draw(st.sampled_from([65536, 131072] if known else [UNKNOWN_CAPACITY, 65536])),
        }
        for _ in range(draw(st.integers(3, 10)))
    ]
    rows = []
    for job_id in range(draw(st.integers(2, 12))):
        mode, level = draw(requests)
        rows.append(
            job(
                job_id,
                float(draw(st.integers(0, 6))),
                float(draw(st.sampled_from([5, 10, 20, 40]))),
                draw(st.integers(1, 6)),
                mode,
                level,
                milli=draw(st.sampled_from([1000, 1000, 1000, 2000, 4000, 500, 0])),
                cpu_milli=draw(st.sampled_from([0, 0, 2000, 8000, 16000])),
                mem_mib=draw(st.sampled_from([0, 0, 8192])),
                gpu_models=draw(st.sampled_from([None, None, None, ["V100"], ["T4"]])),
            )
        )
    return jobs_frame(rows), nodes_frame(nodes)


#: The generated cases by kind: (strategy, KAI's requests, Volcano's requests).
_CASES = {
    "varied": (tas_cases, KAI_TAS_REQUESTS, VOLCANO_TAS_REQUESTS),
    "contended": (contended_cases, _KAI_CONTENDED_REQUESTS, VOLCANO_TAS_REQUESTS),
}


@draws(150)
@given(
    data=st.data(),
    kind=st.sampled_from(sorted(_CASES)),
    known=st.booleans(),
    policy=tas_policies(KAI),
    sample_interval=sample_intervals,
    seed=seeds,
)
def test_generated_kai_replays_agree(
    data: st.DataObject, kind: str, known: bool, policy: Policy, sample_interval: float, seed: int
) -> None:
    cases, requests, _ = _CASES[kind]
    jobs, nodes = data.draw(cases(requests, known), label="case")
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


@draws(150)
@given(
    data=st.data(),
    kind=st.sampled_from(sorted(_CASES)),
    known=st.booleans(),
    policy=tas_policies(VOLCANO),
    sample_interval=sample_intervals,
    seed=seeds,
)
def test_generated_volcano_replays_agree(
    data: st.DataObject, kind: str, known: bool, policy: Policy, sample_interval: float, seed: int
) -> None:
    cases, _, requests = _CASES[kind]
    jobs, nodes = data.draw(cases(requests, known), label="case")
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)
