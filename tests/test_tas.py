"""Kueue Topology-Aware Scheduling (``topology_aware: kueue``, ``tas_profile``): engine and reference.

docs/engine/placement.md, "Kueue TAS". The domain tree has the levels spine, rack,
nvlink_domain and node; a domain is its path from the top. Each node's state is the pods of the job it
holds now (not capped at the job's pods), summed up the tree. A ``required`` L request takes one domain of
L or waits; ``preferred`` L climbs to the first level with a domain that holds the job, and at the top
spreads greedily; ``unconstrained`` (and no request: Kueue's implied one) spreads at the node level.
Domains are sorted by state, most first (ties by id), or least first under LeastFreeCapacity (which takes
the least free domain that holds the job, if one does); BestFit swaps the domain that completes the count
for the tightest that still holds the rest. ``mixed`` (default): BestFit for required / preferred,
LeastFreeCapacity for unconstrained. A required job no domain of its level holds even on the empty cluster
is rejected at arrival (``topology_too_large``).

Scenario tests run on both the numba engine and the plain-Python reference (the ``on_both`` mark). Nodes
are V100 nodes of whole GPUs and jobs ask 1 whole GPU per pod unless said otherwise, so a node's state is
its free GPUs. The policy is the ``kueue-tas`` preset (priority queue, so equal
priorities run in (submit, job_id) order, gang, backfill skip) unless said otherwise. Each node's place in
the tree is given as (spine, rack, nvlink_domain); the nvlink_domain defaults to the node's index.

The kernel tests call ``gpureplay.engine.placement.kueue_tas.kueue_assign`` directly on a compiled replay and
compare its per-node counts with the hand-computed ones and with the reference's
:func:`tests.reference.simulator.kueue_assignment`; the hypothesis tests compare the two on generated trees,
and whole replays on generated clusters and traces.
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
    TAS_REQUESTS,
    job_rows,
    jobs_frame,
    nodes_frame,
    sample_intervals,
    seeds,
    tas_nodes,
)
from tests.test_differential import assert_agree

from gpureplay.engine.jit.config import python_callable
from gpureplay.engine.placement.kueue_tas import kueue_assign
from gpureplay.engine.state import layout as L
from gpureplay.engine.state.bundles import topology_tree
from gpureplay.errors import InputError
from gpureplay.replay.compile import compile_replay, policy_params
from gpureplay.replay.simulate import Replay
from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.schedulers.policy import (
    Backfill,
    GangMode,
    GpuSharing,
    Policy,
    Preemption,
    QueueOrder,
    TasProfile,
    TopologyAware,
)
from gpureplay.schedulers.presets import preset
from gpureplay.workload.topology_requests import TopologyRequest, assign_topology_requests

#: Kueue TAS under the default profile (mixed): priority queue, gang, backfill skip.
TAS = preset("kueue-tas")
#: The same queue, topology-blind (requests not read).
BLIND = preset("topology-blind")
IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = reference.simulate

SPANS = ["nodes_spanned", "nvlink_domains_spanned", "racks_spanned", "spines_spanned"]


#: Runs a scenario on both implementations (the engine-only and reference-only tests go without it).
on_both = pytest.mark.usefixtures("implementation")


def node(
    gpus: int, spine: int = 0, rack: int = 0, nvlink: int | None = None, model: str = "V100"
) -> dict[str, Any]:
    """A node row at (spine, rack, nvlink_domain); the nvlink_domain defaults to the node's index."""
    row: dict[str, Any] = {"gpu_model": model, "num_gpus": gpus, "spine": spine, "rack": rack}
    if nvlink is not None:
        row["nvlink_domain"] = nvlink
    return row


def job(
    job_id: int,
    submit: float,
    duration: float,
    pods: int,
    mode: str | None = None,
    level: str | None = None,
    milli: int = 1000,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "submit_time": submit,
        "duration": duration,
        "num_pods": pods,
        "gpu_milli": milli,
        "topology_mode": mode,
        "topology_level": level,
        **extra,
    }


def sliced(slices: tuple[str, int] | None) -> dict[str, Any]:
    """A job row's slice columns for (slice level, slice size), or none."""
    if slices is None:
        return {}
    return {"topology_slice_level": slices[0], "topology_slice_size": slices[1]}


def replay(
    jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], policy: Policy = TAS, **kw: Any
) -> dict[int, dict[str, Any]]:
    kw.setdefault("sample_interval", 10.0)
    result: Replay = simulate(jobs_frame(jobs), nodes_frame(nodes), policy, debug=True, **kw)
    return {r["job_id"]: r for r in result.jobs.iter_rows(named=True)}


def spans(row: dict[str, Any]) -> tuple[int, ...]:
    """(nodes_spanned, nvlink_domains_spanned, racks_spanned, spines_spanned)."""
    return tuple(row[c] for c in SPANS)


def profiled(profile: TasProfile) -> Policy:
    return replace(TAS, name=f"kueue-tas-{profile.name}", tas_profile=profile)


# --------------------------------------------------------------------------------------------------
# The KEP's example: one rack, nodes of 3, 3, 2, 1 free GPUs, 7 pods
# --------------------------------------------------------------------------------------------------

#: One rack (spine 0, rack 0), each node its own NVLink domain: nodes 0, 1: 3 V100; node 2: 2 T4; node 3:
#: 1 V100. Job 1 (any model) sees states 3, 3, 2, 1 (rack 9); job 2 asks T4 only, so only node 2 holds it.
KEP_NODES = [node(3), node(3), node(2, model="T4"), node(1)]


@on_both
@pytest.mark.parametrize(
    ("profile", "mode", "level", "nodes_used", "second_start"),
    [
        # BestFit, required rack: rack 9 >= 7 -> the rack. Descent (desc, ties id) 3, 3, 2, 1: node 0 3 (rem
        # 4), node 1 3 (rem 1), then state 2 >= 1 -> bf: the first of the smallest states >= 1 -> node 3 (1).
        # Nodes 0, 1, 3 = 3, 3, 1: node 2 untouched, job 2 (2 T4 pods) starts at 0.
        (TasProfile.mixed, "required", "rack", 3, 0.0),
        (TasProfile.best_fit, "required", "rack", 3, 0.0),
        # MostFreeCapacity: desc, no swap: 3, 3 then node 2 takes the last 1 -> node 2 has 1 T4 left: job 2
        # waits for job 1's end at 100.
        (TasProfile.most_free_capacity, "required", "rack", 3, 100.0),
        # LeastFreeCapacity: the rack (9) holds 7; descent ascending 1 (node 3), 2 (node 2), 3 (node 0),
        # 3 (node 1): 1 + 2 + 3, then 1 of node 1 -> 3, 1, 2, 1 by node: four nodes, node 2 full, job 2 waits
        # until 100.
        (TasProfile.least_free_capacity, "required", "rack", 4, 100.0),
        # mixed, unconstrained: LeastFreeCapacity at the node level: no node holds 7, so greedily from the
        # least free: 1, 2, 3 (remaining 1), 3 >= 1 -> counts to minimum give node 1 its last 1: as above.
        (TasProfile.mixed, "unconstrained", "node", 4, 100.0),
        # No request: Kueue's implied unconstrained request, the same.
        (TasProfile.mixed, None, None, 4, 100.0),
        # best_fit, implied unconstrained: BestFit at the node level, greedy: 3 (node 0), 3 (node 1), then
        # state 2 >= 1 -> bf picks node 3 (1): 3, 3, 0, 1 again.
        (TasProfile.best_fit, None, None, 3, 0.0),
        # most_free_capacity, implied: greedy 3, 3, then node 2 (its state 2 covers the last 1): 3, 3, 1.
        (TasProfile.most_free_capacity, None, None, 3, 100.0),
    ],
    ids=[
        "mixed-required",
        "best_fit-required",
        "most_free-required",
        "least_free-required",
        "mixed-unconstrained",
        "mixed-implied",
        "best_fit-implied",
        "most_free-implied",
    ],
)
def test_kep_example_by_profile(
    profile: TasProfile, mode: str | None, level: str | None, nodes_used: int, second_start: float
) -> None:
    jobs = [
        job(1, 0.0, 100.0, 7, mode, level),
        job(2, 0.0, 10.0, 2, gpu_models=["T4"]),
    ]
    out = replay(jobs, KEP_NODES, profiled(profile))
    assert (out[1]["state"], out[1]["start_time"], out[1]["finish_time"]) == ("finished", 0.0, 100.0)
    # Each node its own NVLink domain; one rack, one spine.
    assert spans(out[1]) == (nodes_used, nodes_used, 1, 1)
    assert (out[2]["start_time"], out[2]["finish_time"]) == (second_start, second_start + 10.0)
    assert out[2]["pending_time"] == second_start
    assert spans(out[2]) == (1, 1, 1, 1)


@on_both
def test_node_scorer_is_not_used_for_gangs() -> None:
    # The same BestFit case under worst_fit node placement (which would spread 7 pods over all four nodes,
    # most free first): TAS places the gang, so job 1 still takes nodes 0, 1, 3 and job 2 starts at 0.
    policy = replace(TAS, name="kueue-tas-worst-nodes", node_placement="worst_fit")
    out = replay(
        [job(1, 0.0, 100.0, 7, "required", "rack"), job(2, 0.0, 10.0, 2, gpu_models=["T4"])],
        KEP_NODES,
        policy,
    )
    assert spans(out[1]) == (3, 3, 1, 1)
    assert out[2]["start_time"] == 0.0


# --------------------------------------------------------------------------------------------------
# BestFit picks the tightest domain
# --------------------------------------------------------------------------------------------------


@on_both
@pytest.mark.parametrize(
    ("profile", "second_start"),
    [
        # Racks: rack 0 = nodes 0, 1 of 4 GPUs (state 8), rack 1 = node 2 of 4 (state 4). Job 1 (4 pods,
        # required rack): sorted desc [rack 0 (8), rack 1 (4)]; BestFit: bf -> the smallest that holds 4 =
        # rack 1. Job 2 (8 pods, required rack) then finds rack 0 whole: starts at 0.
        (TasProfile.mixed, 0.0),
        (TasProfile.best_fit, 0.0),
        # LeastFreeCapacity: ascending [rack 1 (4), rack 0 (8)]: the least free that holds 4 is rack 1.
        (TasProfile.least_free_capacity, 0.0),
        # MostFreeCapacity: the top is rack 0 (8), no swap; descent: node 0 (4, first by id) takes all 4.
        # Rack 0 has 4 left, rack 1 4: job 2 waits until job 1 ends at 100, then takes rack 0.
        (TasProfile.most_free_capacity, 100.0),
    ],
    ids=lambda v: v.name if isinstance(v, TasProfile) else str(v),
)
def test_best_fit_takes_the_tightest_rack(profile: TasProfile, second_start: float) -> None:
    nodes = [node(4, rack=0), node(4, rack=0), node(4, rack=1)]
    jobs = [job(1, 0.0, 100.0, 4, "required", "rack"), job(2, 0.0, 10.0, 8, "required", "rack")]
    out = replay(jobs, nodes, profiled(profile))
    assert spans(out[1]) == (1, 1, 1, 1)
    assert (out[2]["state"], out[2]["start_time"]) == ("finished", second_start)
    assert spans(out[2]) == (2, 2, 1, 1)


# --------------------------------------------------------------------------------------------------
# Required: wait for a domain, or be rejected when none can ever hold the job
# --------------------------------------------------------------------------------------------------

#: Rack 0: nodes 0, 1 of 2 V100; rack 1: nodes 2, 3 of 2 T4 (spine 0).
TWO_RACKS = [node(2, rack=0), node(2, rack=0), node(2, rack=1, model="T4"), node(2, rack=1, model="T4")]


@on_both
@pytest.mark.parametrize(
    ("mode", "level", "start", "racks"),
    [
        # Required rack: racks hold 2 and 2 < 3 -> no fit, the job waits. At 10 job 1 ends: rack 0 holds 4 >=
        # 3 (bf: the only one) -> starts at 10 in rack 0: node 0 2, then node 1 (bf: 2 >= 1) 1.
        ("required", "rack", 10.0, 1),
        # Preferred rack: no rack holds 3 -> the spine (4 >= 3): at 0, rack 0 2 (remaining 1), rack 1 1.
        ("preferred", "rack", 0.0, 2),
        # Unconstrained / none: node level, no node holds 3: greedily node 1 (2), node 3 (1), at 0.
        ("unconstrained", "node", 0.0, 2),
        (None, None, 0.0, 2),
    ],
    ids=["required", "preferred", "unconstrained", "none"],
)
def test_required_rack_waits_for_a_rack(
    mode: str | None, level: str | None, start: float, racks: int
) -> None:
    # Job 1 (2 V100 pods, required node): nodes 0, 1 hold 2 each -> bf: node 0 (first of the smallest).
    # Job 2 (2 T4 pods, required node): node 2. Now rack 0 holds 2 (node 1), rack 1 holds 2 (node 3).
    # Job 3: 3 pods of any model, 30 s. Job 2 runs until 20, job 1 until 10.
    jobs = [
        job(1, 0.0, 10.0, 2, "required", "node", gpu_models=["V100"]),
        job(2, 0.0, 20.0, 2, "required", "node", gpu_models=["T4"]),
        job(3, 0.0, 30.0, 3, mode, level),
    ]
    out = replay(jobs, TWO_RACKS)
    assert (out[1]["start_time"], out[2]["start_time"]) == (0.0, 0.0)
    assert spans(out[1]) == spans(out[2]) == (1, 1, 1, 1)
    assert (out[3]["state"], out[3]["start_time"], out[3]["finish_time"]) == ("finished", start, start + 30.0)
    assert out[3]["pending_time"] == start
    assert spans(out[3]) == (2, 2, racks, 1)


#: Rack 0: nodes 0, 1 of 2 GPUs in NVLink domain 0; rack 1: nodes 2, 3 in NVLink domain 1 (spine 0).
FOUR_BY_TWO = [node(2, 0, 0, 0), node(2, 0, 0, 0), node(2, 0, 1, 1), node(2, 0, 1, 1)]


@on_both
@pytest.mark.parametrize(
    ("pods", "mode", "level", "state", "reason"),
    [
        # Racks (and NVLink domains) hold 4 on the empty cluster; nodes 2; the spine 8.
        (5, "required", "rack", "rejected", "topology_too_large"),
        (5, "required", "nvlink_domain", "rejected", "topology_too_large"),
        (3, "required", "node", "rejected", "topology_too_large"),
        (4, "required", "rack", "finished", None),
        (4, "required", "nvlink_domain", "finished", None),
        (2, "required", "node", "finished", None),
        (8, "required", "spine", "finished", None),
        # The earlier reasons come first: 9 pods on 8 GPUs is gang_too_large.
        (9, "required", "spine", "rejected", "gang_too_large"),
        (9, "required", "node", "rejected", "gang_too_large"),
        # Preferred and unconstrained requests are never topology_too_large: 5 pods spread over the spine.
        (5, "preferred", "rack", "finished", None),
        (5, "preferred", "node", "finished", None),
        (5, "unconstrained", "node", "finished", None),
    ],
)
def test_rejection_at_arrival(pods: int, mode: str, level: str, state: str, reason: str | None) -> None:
    out = replay([job(1, 0.0, 10.0, pods, mode, level)], FOUR_BY_TWO)[1]
    assert (out["state"], out["reject_reason"]) == (state, reason)
    if state == "rejected":
        assert (out["start_time"], out["pending_time"], spans(out)) == (None, None, (0, 0, 0, 0))
    else:
        assert (out["start_time"], out["finish_time"]) == (0.0, 10.0)


@on_both
def test_topology_blind_ignores_requests() -> None:
    # topology_aware: none reads no request: the 5-pod required-rack job is not rejected; best_fit nodes put
    # it on nodes 0, 1, 2 (2, 2, 1): two racks.
    out = replay([job(1, 0.0, 10.0, 5, "required", "rack")], FOUR_BY_TWO, BLIND)[1]
    assert (out["state"], out["reject_reason"], out["finish_time"]) == ("finished", None, 10.0)
    assert spans(out) == (3, 2, 2, 1)


@on_both
def test_rejection_uses_the_empty_cluster_not_the_current_state() -> None:
    # Job 1 (4 pods, required rack) takes rack 0 (bf among 4, 4: the first); job 2 (4 pods, required rack)
    # takes rack 1; job 3 (4 pods, required rack, at 1) finds no rack now but one holds it when empty: it
    # waits (not rejected) and starts at 10 when job 1 ends, in rack 0.
    jobs = [
        job(1, 0.0, 10.0, 4, "required", "rack"),
        job(2, 0.0, 20.0, 4, "required", "rack"),
        job(3, 1.0, 5.0, 4, "required", "rack"),
    ]
    out = replay(jobs, FOUR_BY_TWO)
    assert (out[3]["state"], out[3]["reject_reason"]) == ("finished", None)
    assert (out[3]["start_time"], out[3]["finish_time"], out[3]["pending_time"]) == (10.0, 15.0, 9.0)
    assert spans(out[3]) == (2, 1, 1, 1)


# --------------------------------------------------------------------------------------------------
# Preferred: its level, then the levels above, then spread over the top level
# --------------------------------------------------------------------------------------------------

#: Spine 0: rack 0 (nodes 0, 1), rack 1 (nodes 2, 3); spine 1: rack 2 (nodes 4, 5). 2 GPUs per node, each
#: node its own NVLink domain. Racks hold 4, spines 8 and 4.
SPINES = [node(2, 0, 0), node(2, 0, 0), node(2, 0, 1), node(2, 0, 1), node(2, 1, 2), node(2, 1, 2)]


@on_both
@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        # 4 pods: racks 4, 4, 4 (desc, ties id) -> bf: rack 0. Descent: nodes 0, 1: 2, then bf 2 >= 2 -> node
        # 1: 2 nodes, 1 rack.
        (4, (2, 2, 1, 1)),
        # 6 pods: no rack holds 6 -> spines [spine 0 (8), spine 1 (4)]: bf -> spine 0. Racks of spine 0: 4
        # (remaining 2), then rack 1 (bf: 4 >= 2) 2. Nodes (children of racks 0, 1, all 2; ties id): node 0 2,
        # node 1 2, node 2 (bf: the first 2) 2 -> nodes 0, 1, 2: 3 nodes, 2 racks, 1 spine.
        (6, (3, 3, 2, 1)),
        # 10 pods: no spine holds 10, the spine is the top -> greedily spine 0 (8, remaining 2), then spine 1
        # (bf: 4 >= 2). Counts to minimum: 8, 2. Racks 0, 1, 2 (4 each): 4, 4, then rack 2 2. Nodes 0-3 (2
        # each), then node 4 2: 5 nodes, 3 racks, 2 spines.
        (10, (5, 5, 3, 2)),
        # 12 pods: the whole cluster: 6 nodes.
        (12, (6, 6, 3, 2)),
    ],
)
def test_preferred_rack_climbs_then_spreads(pods: int, expected: tuple[int, ...]) -> None:
    out = replay([job(1, 0.0, 10.0, pods, "preferred", "rack")], SPINES)[1]
    assert (out["state"], out["start_time"]) == ("finished", 0.0)
    assert spans(out) == expected


@on_both
def test_required_rack_of_six_is_rejected_where_preferred_runs() -> None:
    # The same 6 pods required in a rack: no rack holds 6 even empty -> topology_too_large; required in a
    # spine: spine 0 holds 8 -> runs on nodes 0, 1, 2 as the preferred request did.
    out = replay(
        [job(1, 0.0, 10.0, 6, "required", "rack"), job(2, 0.0, 10.0, 6, "required", "spine")], SPINES
    )
    assert (out[1]["state"], out[1]["reject_reason"]) == ("rejected", "topology_too_large")
    assert (out[2]["state"], spans(out[2])) == ("finished", (3, 3, 2, 1))


@on_both
def test_a_rack_id_under_two_spines_is_two_racks() -> None:
    # Nodes 0 and 1 (1 GPU each) have rack id 0 but spines 0 and 1: two racks (paths (0, 0) and (1, 0)),
    # each holding 1.
    # Job 1 (2 pods, required rack): no rack holds 2, even empty -> topology_too_large.
    # Job 2 (2 pods, preferred rack): racks 1, 1 -> spines 1, 1 -> the top: greedily spine 0 (1), then spine 1
    # (bf: 1 >= 1): both nodes. The spanned columns count ids as given: one rack id, two spines.
    nodes = [node(1, spine=0, rack=0), node(1, spine=1, rack=0)]
    out = replay([job(1, 0.0, 10.0, 2, "required", "rack"), job(2, 0.0, 10.0, 2, "preferred", "rack")], nodes)
    assert (out[1]["state"], out[1]["reject_reason"]) == ("rejected", "topology_too_large")
    assert (out[2]["state"], out[2]["start_time"]) == ("finished", 0.0)
    assert spans(out[2]) == (2, 2, 1, 2)


@on_both
@pytest.mark.parametrize(
    ("profile", "second_start"),
    [
        # Nodes of 1, 3 and 2 GPUs; job 1: 2 pods required on a node. BestFit: [node 1 (3), node 2 (2),
        # node 0 (1)] -> bf: the smallest that holds 2, node 2.
        (TasProfile.mixed, 0.0),
        (TasProfile.best_fit, 0.0),
        # LeastFreeCapacity: [node 0 (1), node 2 (2), node 1 (3)]: "the first domain of S (the least free)
        # whose state >= pods" -> node 2.
        (TasProfile.least_free_capacity, 0.0),
        # MostFreeCapacity: the top, node 1 (3), takes it (1 left there).
        (TasProfile.most_free_capacity, 100.0),
    ],
    ids=lambda v: v.name if isinstance(v, TasProfile) else str(v),
)
def test_required_node_takes_the_least_free_node_that_holds_it(
    profile: TasProfile, second_start: float
) -> None:
    # Job 2 (3 pods required on a node, at 0) fits node 1 only if job 1 left it whole; else it waits for
    # job 1's end at 100.
    nodes = [node(1), node(3), node(2)]
    out = replay(
        [job(1, 0.0, 100.0, 2, "required", "node"), job(2, 0.0, 10.0, 3, "required", "node")],
        nodes,
        profiled(profile),
    )
    assert (out[1]["start_time"], spans(out[1])) == (0.0, (1, 1, 1, 1))
    assert (out[2]["state"], out[2]["start_time"]) == ("finished", second_start)


@on_both
def test_fractional_pods_count_per_gpu_capacity() -> None:
    # Pods of 500 milli: a 1-GPU node holds 2, a 2-GPU node 4. Rack 0: node 0 (1 GPU); rack 1: node 1 (2).
    # Job 1 (3 pods, required rack): racks hold 2 and 4: bf (the smallest that holds 3) -> rack 1,
    # all 3 on node 1 (best_fit GPUs: GPU 0 twice, GPU 1 once: 500 milli left there).
    # Job 2 (2 pods of 500, required node): node 0 holds 2, node 1 only 1 -> node 0, at 0.
    nodes = [node(1, rack=0), node(2, rack=1)]
    jobs = [
        job(1, 0.0, 10.0, 3, "required", "rack", milli=500),
        job(2, 0.0, 10.0, 2, "required", "node", milli=500),
    ]
    out = replay(jobs, nodes)
    assert (out[1]["start_time"], spans(out[1])) == (0.0, (1, 1, 1, 1))
    assert (out[2]["start_time"], spans(out[2])) == (0.0, (1, 1, 1, 1))


# --------------------------------------------------------------------------------------------------
# Refused settings and bad request columns
# --------------------------------------------------------------------------------------------------

REFUSED = {
    "pod_by_pod": replace(
        TAS,
        gang=GangMode.pod_by_pod,
        queue_order=QueueOrder.priority,
        backfill=Backfill.skip,
        backfill_depth=0,
    ),
    "easy": replace(TAS, backfill=Backfill.easy),
    "preemption": replace(TAS, preemption=Preemption.priority, graceful_termination=2.0),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_engine_refuses_topology_aware_with(name: str) -> None:
    jobs, nodes = jobs_frame([job(1, 0.0, 10.0, 1)]), nodes_frame([node(1)])
    with pytest.raises(InputError, match=re.escape("scheduler.topology_aware")):
        engine_simulate(jobs, nodes, REFUSED[name])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_reference_refuses_topology_aware_with(name: str) -> None:
    jobs, nodes = jobs_frame([job(1, 0.0, 10.0, 1)]), nodes_frame([node(1)])
    with pytest.raises(ValueError, match="topology_aware"):
        reference.simulate(jobs, nodes, REFUSED[name])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_topology_blind_takes_those_settings(name: str) -> None:
    # The same settings with topology_aware: none are not refused (by the topology rule).
    policy = replace(REFUSED[name], topology_aware=TopologyAware.none)
    out = engine_simulate(jobs_frame([job(1, 0.0, 10.0, 1)]), nodes_frame([node(1)]), policy)
    assert out.jobs["state"].to_list() == ["finished"]


@pytest.mark.parametrize(("column", "value"), [("topology_mode", "sometimes"), ("topology_level", "row")])
def test_unknown_request_values_are_refused(column: str, value: str) -> None:
    row = job(1, 0.0, 10.0, 1, "required", "rack") | {column: value}
    jobs, nodes = jobs_frame([row]), nodes_frame([node(1)])
    with pytest.raises(InputError, match=re.escape(column)):
        engine_simulate(jobs, nodes, TAS)
    with pytest.raises(ValueError, match=column):
        reference.simulate(jobs, nodes, TAS)
    # Topology-blind, the columns are not read.
    assert engine_simulate(jobs, nodes, BLIND).jobs["state"].to_list() == ["finished"]


@pytest.mark.parametrize(
    ("mode", "level", "message"),
    [
        ("required", None, "a required request needs a topology_level"),
        ("preferred", None, "a preferred request needs a topology_level"),
        (None, "rack", "a topology_level needs a topology_mode"),
    ],
)
def test_half_a_request_is_refused(mode: str | None, level: str | None, message: str) -> None:
    # Job 2 is row 2 of the table (source_row): the workload's check, the engine's compile step (which runs
    # the same check when topology_aware is on) and the reference all refuse it.
    jobs = jobs_frame([job(1, 0.0, 10.0, 2), job(2, 0.0, 10.0, 2, mode, level)])
    nodes = nodes_frame([node(2), node(2)])
    with pytest.raises(InputError, match=message) as info:
        assign_topology_requests(jobs, [])
    assert info.value.problems[0].row == 2
    with pytest.raises(InputError, match=message):
        engine_simulate(jobs, nodes, TAS)
    with pytest.raises(ValueError, match=message):
        reference.simulate(jobs, nodes, TAS)
    # Topology-blind, the columns are not read.
    assert engine_simulate(jobs, nodes, BLIND).jobs["state"].to_list() == ["finished", "finished"]


@on_both
def test_unconstrained_needs_no_level() -> None:
    # (unconstrained, null) is a whole request: 3 pods on nodes of 2 GPUs, least free first -> 2 + 1.
    out = replay([job(1, 0.0, 10.0, 3, "unconstrained", None)], [node(2), node(2)])[1]
    assert (out["state"], spans(out)) == ("finished", (2, 2, 1, 1))


@on_both
def test_shared_request_too_large_comes_before_topology_too_large() -> None:
    # MPS, 2 replicas per GPU (failRequestsGreaterThanOne on by default): two 1-GPU nodes, 2 devices each.
    # Job 1: 2 pods of 2 devices (k = 2 > 1) required on one node: each node holds 1 pod (2 devices), so
    # both check 4 (shared_request_too_large) and check 5 (topology_too_large) apply; 4 comes first.
    policy = replace(
        TAS, gpu_sharing=GpuSharing.mps, replicas=2, node_placement="first_fit", gpu_placement="first_fit"
    )
    out = replay([job(1, 0.0, 10.0, 2, "required", "node", milli=2000)], [node(1), node(1)], policy)[1]
    assert (out["state"], out["reject_reason"]) == ("rejected", "shared_request_too_large")


@on_both
@pytest.mark.parametrize("nodes", [1, 2, 3, 4])
def test_gpu_less_pods_asking_nothing_fit_any_rack(nodes: int) -> None:
    # One rack of 1-4 nodes (unknown CPU and memory). A pod asking no GPU, CPU or memory fits a node without
    # bound ("UNKNOWN_CAPACITY never constrains"), counted 2**40 per node ("Counts (phase 1)"): sums of those
    # cannot overflow as sums of BIG = 2**62 once did in the engine (two such nodes made a rack state of
    # 2**63, a negative int64, and the job was rejected topology_too_large). So the rack holds the job:
    # required rack and preferred rack both start at 0, on one node (the first, 2**40 >= 3).
    jobs = [
        job(1, 0.0, 10.0, 3, "required", "rack", milli=0),
        job(2, 0.0, 10.0, 3, "preferred", "rack", milli=0),
    ]
    out = replay(jobs, [node(1)] * nodes)
    for j in (1, 2):
        assert (out[j]["state"], out[j]["reject_reason"], out[j]["start_time"]) == ("finished", None, 0.0)
        assert spans(out[j]) == (1, 1, 1, 1)


#: Node 0: 1 V100, 32000 milli-CPU (rack 0); node 1: no GPU, unknown CPU (rack 0); node 2: no GPU, unknown
#: CPU (rack 1). Job 1: 2 GPU-less pods of 32000 milli-CPU, required rack, 100 s; job 2: 1 GPU + 32000 CPU,
#: which only node 0 can ever hold.
UNBOUNDED_NODES = [
    {"gpu_model": "V100", "num_gpus": 1, "rack": 0, "cpu_milli": 32000},
    {"gpu_model": "V100", "num_gpus": 0, "rack": 0},
    {"gpu_model": "V100", "num_gpus": 0, "rack": 1},
]
UNBOUNDED_JOBS = [
    job(1, 0.0, 100.0, 2, "required", "rack", milli=0, cpu_milli=32000),
    job(2, 0.0, 10.0, 1, cpu_milli=32000),
]


@on_both
def test_unknown_cpu_counts_are_capped_at_two_to_the_forty() -> None:
    # least_free_capacity. Node states for job 1 ("Counts (phase 1)": at most 2**40): node 0 holds 1 (its
    # 32000 CPU), nodes 1 and 2 (unknown CPU: "UNKNOWN_CAPACITY never constrains") 2**40 each. Racks: rack 0
    # = 1 + 2**40, rack 1 = 2**40: ascending, rack 1 is the least free that holds 2, so the assignment is
    # made on it: node 2 (its only node) takes both pods. Without the cap (rack 0 = rack 1 = inf, a tie by
    # id) rack 0 would win and node 0 would take one pod, its whole CPU.
    # Node 0 stays free: job 2 (1 GPU + 32000 CPU, only node 0 holds it) starts at 0.
    policy = profiled(TasProfile.least_free_capacity)
    out = replay(UNBOUNDED_JOBS, UNBOUNDED_NODES, policy)
    assert (out[1]["state"], out[1]["start_time"]) == ("finished", 0.0)
    assert (out[1]["nodes_spanned"], out[1]["racks_spanned"]) == (1, 1)
    assert (out[2]["start_time"], out[2]["finish_time"]) == (0.0, 10.0)


# --------------------------------------------------------------------------------------------------
# The workload's rules: assign_topology_requests
# --------------------------------------------------------------------------------------------------

RULES = [
    TopologyRequest(16, "required", "spine"),
    TopologyRequest(0, "unconstrained"),
    TopologyRequest(8, "preferred", "rack"),
]


def _requests(jobs: pl.DataFrame) -> dict[int, tuple[str | None, str | None]]:
    return {r["job_id"]: (r["topology_mode"], r["topology_level"]) for r in jobs.iter_rows(named=True)}


def test_rules_by_size_largest_min_gpus_at_or_below_wins() -> None:
    # GPUs = num_pods x gpu_milli / 1000. Rules (given in any order): 0 -> unconstrained, 8 -> preferred rack,
    # 16 -> required spine.
    jobs = jobs_frame(
        [
            job(1, 0.0, 1.0, 1, milli=0),  # 0 GPUs: min_gpus 0 applies
            job(2, 0.0, 1.0, 1, milli=500),  # 0.5
            job(3, 0.0, 1.0, 7, milli=1000),  # 7
            job(4, 0.0, 1.0, 2, milli=4000),  # 8: exactly 8
            job(5, 0.0, 1.0, 3, milli=5000),  # 15
            job(6, 0.0, 1.0, 16, milli=1000),  # 16
            job(7, 0.0, 1.0, 4, milli=8000),  # 32
        ]
    )
    got = _requests(assign_topology_requests(jobs, RULES))
    assert got == {
        1: ("unconstrained", "node"),
        2: ("unconstrained", "node"),
        3: ("unconstrained", "node"),
        4: ("preferred", "rack"),
        5: ("preferred", "rack"),
        6: ("required", "spine"),
        7: ("required", "spine"),
    }


def test_jobs_below_every_rule_get_no_request() -> None:
    jobs = jobs_frame([job(1, 0.0, 1.0, 1), job(2, 0.0, 1.0, 8)])
    got = _requests(assign_topology_requests(jobs, [TopologyRequest(8, "required", "rack")]))
    assert got == {1: (None, None), 2: ("required", "rack")}
    assert _requests(assign_topology_requests(jobs, [])) == {1: (None, None), 2: (None, None)}


def test_a_traces_own_requests_are_kept() -> None:
    # Job 2 carries its own (preferred, nvlink_domain): kept, though the 16-GPU rule would apply. Job 1 has
    # none: the rule fills it.
    jobs = jobs_frame([job(1, 0.0, 1.0, 16), job(2, 0.0, 1.0, 16, "preferred", "nvlink_domain")])
    got = _requests(assign_topology_requests(jobs, RULES))
    assert got == {1: ("required", "spine"), 2: ("preferred", "nvlink_domain")}
    out = assign_topology_requests(jobs, RULES)
    assert out.schema["topology_mode"] == pl.String and out.schema["topology_level"] == pl.String


def test_a_table_without_the_columns_gets_them() -> None:
    jobs = jobs_frame([job(1, 0.0, 1.0, 16)]).drop("topology_mode", "topology_level")
    assert _requests(assign_topology_requests(jobs, RULES)) == {1: ("required", "spine")}


@pytest.mark.parametrize(
    ("rules", "column"),
    [
        ([TopologyRequest(-1, "required", "rack")], "workload.topology_requests[0].min_gpus"),
        ([TopologyRequest(float("nan"), "required", "rack")], "workload.topology_requests[0].min_gpus"),
        (
            [TopologyRequest(0, "unconstrained"), TopologyRequest(4, "always", "rack")],
            "workload.topology_requests[1].mode",
        ),
        ([TopologyRequest(4, "required", "pod")], "workload.topology_requests[0].level"),
        (
            [TopologyRequest(4, "required", "rack"), TopologyRequest(4, "preferred", "spine")],
            "workload.topology_requests[1].min_gpus",
        ),
    ],
    ids=["negative", "nan", "mode", "level", "duplicate"],
)
def test_bad_rules_name_the_key(rules: list[TopologyRequest], column: str) -> None:
    with pytest.raises(InputError, match=re.escape(column)):
        assign_topology_requests(jobs_frame([job(1, 0.0, 1.0, 1)]), rules)


@pytest.mark.parametrize(("column", "value"), [("topology_mode", "maybe"), ("topology_level", "row")])
def test_bad_trace_values_name_the_column_and_row(column: str, value: str) -> None:
    rows = [
        job(1, 0.0, 1.0, 1, "required", "rack"),
        job(2, 0.0, 1.0, 1, "required", "rack") | {column: value},
    ]
    with pytest.raises(InputError, match=re.escape(column)) as info:
        assign_topology_requests(jobs_frame(rows), [])
    assert (info.value.problems[0].row, info.value.problems[0].column) == (2, column)  # source_row


def test_one_column_without_the_other_is_refused() -> None:
    jobs = jobs_frame([job(1, 0.0, 1.0, 1, "required", "rack")]).drop("topology_level")
    with pytest.raises(InputError, match="topology_level"):
        assign_topology_requests(jobs, [])


def _slices(jobs: pl.DataFrame) -> dict[int, tuple[str | None, int | None]]:
    return {
        r["job_id"]: (r["topology_slice_level"], r["topology_slice_size"]) for r in jobs.iter_rows(named=True)
    }


def test_rules_give_slices_and_a_traces_own_request_wins_whole() -> None:
    # 16+ GPUs: required spine in slices of 2 pods per NVLink domain; 8+: slice-only, 4 pods per rack. Job 3
    # gives its own request (preferred rack, no slices): all of it is kept, no rule's slices added. Job 4
    # gives slices alone (slice-only): kept whole.
    rules = [
        TopologyRequest(16, "required", "spine", slice_level="nvlink_domain", slice_size=2),
        TopologyRequest(8, "unconstrained", slice_level="rack", slice_size=4),
    ]
    jobs = jobs_frame(
        [
            job(1, 0.0, 1.0, 16),
            job(2, 0.0, 1.0, 8),
            job(3, 0.0, 1.0, 16, "preferred", "rack"),
            job(4, 0.0, 1.0, 16, **sliced(("node", 8))),
            job(5, 0.0, 1.0, 1),
        ]
    )
    out = assign_topology_requests(jobs, rules)
    assert _requests(out) == {
        1: ("required", "spine"),
        2: ("unconstrained", "node"),
        3: ("preferred", "rack"),
        4: (None, None),
        5: (None, None),
    }
    assert _slices(out) == {
        1: ("nvlink_domain", 2),
        2: ("rack", 4),
        3: (None, None),
        4: ("node", 8),
        5: (None, None),
    }
    assert out.schema["topology_slice_size"] == pl.Int32


@pytest.mark.parametrize(
    ("rule", "key"),
    [
        (TopologyRequest(4, "required", "rack", slice_level="node"), "slice_size"),
        (TopologyRequest(4, "required", "rack", slice_size=2), "slice_level"),
        (TopologyRequest(4, "required", "rack", slice_level="pod", slice_size=2), "slice_level"),
        (TopologyRequest(4, "required", "rack", slice_level="node", slice_size=0), "slice_size"),
        (TopologyRequest(4, "required", "rack", slice_level="spine", slice_size=2), "slice_level"),
    ],
    ids=["no-size", "no-level", "unknown-level", "size-0", "above"],
)
def test_bad_slice_rules_name_the_key(rule: TopologyRequest, key: str) -> None:
    with pytest.raises(InputError, match=re.escape(f"workload.topology_requests[0].{key}")):
        assign_topology_requests(jobs_frame([job(1, 0.0, 1.0, 1)]), [rule])


@pytest.mark.parametrize(
    ("request_", "column", "message"),
    [
        (("required", "rack", "spine", 2), "topology_slice_level", "above the request's level"),
        (("required", "rack", "row", 2), "topology_slice_level", "unknown value 'row'"),
        (("required", "rack", "node", 0), "topology_slice_size", "at least 1 pod"),
        (("required", "rack", None, 2), "topology_slice_level", "needs a topology_slice_level"),
        (("required", "rack", "node", None), "topology_slice_size", "needs a topology_slice_size"),
    ],
)
def test_bad_trace_slices_name_the_column_and_row(
    request_: tuple[str, str, str | None, int | None], column: str, message: str
) -> None:
    mode, level, slice_level, size = request_
    rows = [
        job(1, 0.0, 1.0, 2, "required", "rack"),
        job(2, 0.0, 1.0, 2, mode, level, topology_slice_level=slice_level, topology_slice_size=size),
    ]
    with pytest.raises(InputError, match=re.escape(message)) as info:
        engine_simulate(jobs_frame(rows), nodes_frame([node(2)]), TAS)
    assert (info.value.problems[0].row, info.value.problems[0].column) == (2, column)


# --------------------------------------------------------------------------------------------------
# The engine's kernel, directly: exact per-node counts
# --------------------------------------------------------------------------------------------------

_ASSIGN: Any = None


def engine_assignment(
    nodes: list[dict[str, Any]],
    pods: int,
    milli: int,
    mode: str | None,
    level: str | None,
    profile: TasProfile,
    slices: tuple[str, int] | None = None,
) -> dict[int, int] | None:
    """``kueue_assign`` for one job on the empty cluster: node index -> pods (None: no fit); ``slices``:
    (slice level, slice size)."""
    global _ASSIGN
    if _ASSIGN is None:
        _ASSIGN = python_callable(kueue_assign)
    jobs = jobs_frame([job(1, 0.0, 10.0, pods, mode, level, milli=milli, **sliced(slices))])
    policy = replace(TAS, tas_profile=profile)
    params = policy_params(
        policy, seed=0, sample_interval=10.0, horizon=None, window=(0.0, 1.0), max_samples=100, debug=False
    )
    compiled = compile_replay(jobs, nodes_frame(nodes), params)
    tree = topology_tree(compiled.cluster.node_int)
    c = int(compiled.jobs.ints[L.J_CLASS, 0])
    # exact: the one-pod shortcut the engine takes without GPU sharing (as _topology_gang passes it).
    k = _ASSIGN(tree, compiled.cluster, compiled.classes, c, int(params.codes[L.P_TAS_PROFILE]), True)
    if k == 0:
        return None
    return {int(tree.leaf_node[d]): int(tree.state[L.LEVEL_NODE, d]) for d in tree.cur[:k]}


def reference_assignment(
    nodes: list[dict[str, Any]],
    pods: int,
    milli: int,
    mode: str | None,
    level: str | None,
    profile: TasProfile,
    slices: tuple[str, int] | None = None,
) -> dict[int, int] | None:
    """The reference's :func:`kueue_assignment` for the same job on the empty cluster."""
    rows = list(nodes_frame(nodes).iter_rows(named=True))
    cluster = reference.empty_cluster(rows)
    pod = reference.Pod(milli=milli, gpu_mem=0, cpu=0, mem=0, models=None)
    counts = [reference.tas_count(n, pod) for n in cluster]
    request = reference.topology_request(mode, level, 1, *(slices or (None, None)))
    return reference.kueue_assignment(reference.domain_tree(rows), counts, request, pods, profile)


KEP_RACK = [node(3), node(3), node(2), node(1)]
#: Rack 0: nodes 0, 1; rack 1: nodes 2, 3; 2 GPUs each (spine 0).
RACKS_OF_FOUR = [node(2, 0, 0), node(2, 0, 0), node(2, 0, 1), node(2, 0, 1)]


@pytest.mark.parametrize(
    ("nodes", "pods", "milli", "mode", "level", "profile", "expected"),
    [
        # The KEP: 3, 3, 2, 1 in one rack, 7 pods required rack, BestFit: 3, 3, 0, 1.
        (KEP_RACK, 7, 1000, "required", "rack", TasProfile.mixed, {0: 3, 1: 3, 3: 1}),
        (KEP_RACK, 7, 1000, "required", "rack", TasProfile.best_fit, {0: 3, 1: 3, 3: 1}),
        # LeastFreeCapacity: 1, 2, 3 then 1 of the last 3 (node 1) -> 3, 1, 2, 1.
        (KEP_RACK, 7, 1000, "required", "rack", TasProfile.least_free_capacity, {0: 3, 1: 1, 2: 2, 3: 1}),
        (KEP_RACK, 7, 1000, "unconstrained", "node", TasProfile.mixed, {0: 3, 1: 1, 2: 2, 3: 1}),
        (KEP_RACK, 7, 1000, None, None, TasProfile.mixed, {0: 3, 1: 1, 2: 2, 3: 1}),
        # MostFreeCapacity: 3, 3, then 1 of node 2.
        (KEP_RACK, 7, 1000, "required", "rack", TasProfile.most_free_capacity, {0: 3, 1: 3, 2: 1}),
        # Required node, BestFit: the tightest node that holds the job (states 3, 3, 2, 1, not capped at
        # the job's pods): 3 pods -> node 0 (the first of the 3s), 2 pods -> node 2, 1 pod -> node 3.
        (KEP_RACK, 3, 1000, "required", "node", TasProfile.mixed, {0: 3}),
        (KEP_RACK, 2, 1000, "required", "node", TasProfile.mixed, {2: 2}),
        (KEP_RACK, 1, 1000, "required", "node", TasProfile.mixed, {3: 1}),
        # ... MostFreeCapacity: the first of the most free, node 0.
        (KEP_RACK, 2, 1000, "required", "node", TasProfile.most_free_capacity, {0: 2}),
        (KEP_RACK, 1, 1000, "required", "node", TasProfile.most_free_capacity, {0: 1}),
        # ... LeastFreeCapacity: the first of [node 3 (1), node 2 (2), node 0 (3), node 1 (3)] that holds the
        # job: 2 pods -> node 2; 1 pod -> node 3.
        (KEP_RACK, 2, 1000, "required", "node", TasProfile.least_free_capacity, {2: 2}),
        (KEP_RACK, 1, 1000, "required", "node", TasProfile.least_free_capacity, {3: 1}),
        # One unconstrained pod (the engine's one-pod shortcut): the least free node that holds it (mixed,
        # least_free) or BestFit's swap (best_fit) -> node 3; most free first -> node 0.
        (KEP_RACK, 1, 1000, None, None, TasProfile.mixed, {3: 1}),
        (KEP_RACK, 1, 1000, None, None, TasProfile.best_fit, {3: 1}),
        (KEP_RACK, 1, 1000, "unconstrained", "node", TasProfile.least_free_capacity, {3: 1}),
        (KEP_RACK, 1, 1000, None, None, TasProfile.most_free_capacity, {0: 1}),
        # Pods of 2 GPUs (capacities 1, 1, 1, 0), one unconstrained: the least free that holds it -> node 0.
        (KEP_RACK, 1, 2000, None, None, TasProfile.mixed, {0: 1}),
        # No node holds 4: no fit now (the rejection check is compile's, not the kernel's).
        (KEP_RACK, 4, 1000, "required", "node", TasProfile.mixed, None),
        # More pods than the cluster holds (9): no fit whatever the request.
        (KEP_RACK, 10, 1000, None, None, TasProfile.mixed, None),
        (KEP_RACK, 10, 1000, "preferred", "node", TasProfile.best_fit, None),
        # Pods of 2 GPUs: states 1, 1, 1, 0; 2 pods required rack -> node 0: 1, then bf among the 1s from
        # node 1 on -> node 1: 1.
        (KEP_RACK, 2, 2000, "required", "rack", TasProfile.mixed, {0: 1, 1: 1}),
        # Preferred rack, 6 pods, racks of 4: the spine (8); racks: rack 0 4 (rem 2), rack 1 (bf: 4 >= 2) 2;
        # nodes (2 each, ties id): node 0 2, node 1 2, then bf from node 2 -> node 2: 2.
        (RACKS_OF_FOUR, 6, 1000, "preferred", "rack", TasProfile.mixed, {0: 2, 1: 2, 2: 2}),
        # The same, most free first without the swap: the same nodes (all states equal).
        (RACKS_OF_FOUR, 6, 1000, "preferred", "rack", TasProfile.most_free_capacity, {0: 2, 1: 2, 2: 2}),
        # Required rack, 3 pods: racks 4, 4 -> bf: rack 0; nodes 0 (2, rem 1), then bf from node 1 -> 1.
        (RACKS_OF_FOUR, 3, 1000, "required", "rack", TasProfile.mixed, {0: 2, 1: 1}),
        # Unconstrained, 3 pods, least free first: all nodes 2 -> nodes 0 (2) and 1 (1).
        (RACKS_OF_FOUR, 3, 1000, "unconstrained", "node", TasProfile.mixed, {0: 2, 1: 1}),
    ],
)
def test_kernel_counts(
    nodes: list[dict[str, Any]],
    pods: int,
    milli: int,
    mode: str | None,
    level: str | None,
    profile: TasProfile,
    expected: dict[int, int] | None,
) -> None:
    assert engine_assignment(nodes, pods, milli, mode, level, profile) == expected
    assert reference_assignment(nodes, pods, milli, mode, level, profile) == expected


#: KEP-2724's two-level example: one rack of nodes with room for 6, 5, 4, 3 and 2 pods.
KEP_SLICES = [node(6), node(5), node(4), node(3), node(2)]
#: Racks A (nodes 0, 1: 3 + 3), B (nodes 2, 3: 4 + 2) and C (nodes 4, 5: 1 + 1) in one spine.
THREE_RACKS = [node(3, 0, 0), node(3, 0, 0), node(4, 0, 1), node(2, 0, 1), node(1, 0, 2), node(1, 0, 2)]


@pytest.mark.parametrize(
    ("nodes", "pods", "mode", "level", "profile", "slices", "expected"),
    [
        # The KEP, slices of 2 pods at the node level (units 3, 2, 2, 1, 1). BestFit, 12 pods (6 slices)
        # required in the rack: units descending, pods ascending: 6 (3), 4 (2), 5 (2), 2 (1), 3 (1): the 6
        # (rem 3), the 4 (rem 1), then bf for 1 slice from the 5 on: the first of the 1s, the 2.
        (KEP_SLICES, 12, "required", "rack", TasProfile.mixed, ("node", 2), {0: 6, 2: 4, 4: 2}),
        # LeastFreeCapacity, 10 pods (5 slices), slice-only (no mode): from the spine, ascending: 2 (1),
        # 3 (1), 4 (2), then 1 slice of the 5.
        (KEP_SLICES, 10, None, None, TasProfile.mixed, ("node", 2), {1: 2, 2: 4, 3: 2, 4: 2}),
        (KEP_SLICES, 10, "unconstrained", None, TasProfile.mixed, ("node", 2), {1: 2, 2: 4, 3: 2, 4: 2}),
        (
            KEP_SLICES,
            10,
            "required",
            "rack",
            TasProfile.least_free_capacity,
            ("node", 2),
            {1: 2, 2: 4, 3: 2, 4: 2},
        ),
        # Without slices the same 12 pods: 6, 5, then bf for 1: the 2 -> 6, 5, 0, 0, 1.
        (KEP_SLICES, 12, "required", "rack", TasProfile.mixed, None, {0: 6, 1: 5, 4: 1}),
        # 3 slices of 3 at the node level: units 2, 1, 1, 1, 0: the 6 (2 slices), then bf for 1 from the 5:
        # the first of the 1s with fewest pods, the 3 -> 6, 0, 0, 3, 0.
        (KEP_SLICES, 9, "required", "rack", TasProfile.mixed, ("node", 3), {0: 6, 3: 3}),
        # Slices of 4 pods at the rack level, 8 pods required in the spine: racks A (6 -> 1 slice), B (6 ->
        # 1), C (2 -> 0): A then B (equal units and pods: id). Inside each rack its own 4 pods, least room
        # first: A's nodes 3, 3 -> 3 then 1; B's 2 then 4 -> 2, 2.
        (THREE_RACKS, 8, "required", "spine", TasProfile.mixed, ("rack", 4), {0: 3, 1: 1, 2: 2, 3: 2}),
        # Without slices: racks 6, 6, 2: A (rem 2), then bf for 2 from B: C -> nodes 3, 3, then C's 1, 1.
        (THREE_RACKS, 8, "required", "spine", TasProfile.mixed, None, {0: 3, 1: 3, 4: 1, 5: 1}),
        # Slices of 4 at the rack level, 12 pods: only 2 slices fit the spine: no fit.
        (THREE_RACKS, 12, "required", "spine", TasProfile.mixed, ("rack", 4), None),
        # Slices of 2 at the NVLink level (each node its own domain): units 1, 1, 2, 1, 0, 0; 6 pods
        # (3 slices) preferred rack: no rack holds 3 slices (A 2, B 3!): B holds 3 -> B: node 2 (2 slices)
        # then node 3 (1) -> 0, 0, 4, 2.
        (THREE_RACKS, 6, "preferred", "rack", TasProfile.mixed, ("nvlink_domain", 2), {2: 4, 3: 2}),
    ],
)
def test_kernel_counts_with_slices(
    nodes: list[dict[str, Any]],
    pods: int,
    mode: str | None,
    level: str | None,
    profile: TasProfile,
    slices: tuple[str, int] | None,
    expected: dict[int, int] | None,
) -> None:
    assert engine_assignment(nodes, pods, 1000, mode, level, profile, slices) == expected
    assert reference_assignment(nodes, pods, 1000, mode, level, profile, slices) == expected


@on_both
@pytest.mark.parametrize(
    ("pods", "mode", "level", "slices", "state", "reason"),
    [
        # A slice size that does not divide the pods: Kueue deactivates the workload.
        (3, "required", "rack", ("node", 2), "rejected", "slice_size_invalid"),
        (3, None, None, ("node", 2), "rejected", "slice_size_invalid"),
        # Slices of 4 pods at the node level on 3-GPU nodes: no node holds a slice, even empty.
        (4, None, None, ("node", 4), "rejected", "topology_too_large"),
        (4, "preferred", "spine", ("node", 4), "rejected", "topology_too_large"),
        # Slices of 3 at the node level: two nodes hold one each.
        (6, "required", "rack", ("node", 3), "finished", None),
        # Slices of 6 at the rack level: the rack holds one.
        (6, "required", "rack", ("rack", 6), "finished", None),
    ],
)
def test_slice_rejection_at_arrival(
    pods: int, mode: str | None, level: str | None, slices: tuple[str, int], state: str, reason: str | None
) -> None:
    nodes = [node(3, 0, 0), node(3, 0, 0)]
    out = replay([job(1, 0.0, 10.0, pods, mode, level, **sliced(slices))], nodes)
    assert (out[1]["state"], out[1]["reject_reason"]) == (state, reason)


@on_both
def test_slices_keep_each_slice_in_its_domain_over_time() -> None:
    # Racks 0 (nodes 0, 1) and 1 (nodes 2, 3), 2 GPUs a node. Job 1 (1 pod, 100 s, no request) takes node 0
    # (least free first: all 2, id). Job 2: 4 pods in slices of 2 at the NVLink level (each node), slice-only:
    # from the spine, LeastFreeCapacity. Slices: nodes 0, 1, 2, 3 hold 0, 1, 1, 1; racks 1, 2; spine 3.
    # Racks ascending: rack 0 (1 slice, rem 1), rack 1 (1). Their NVLink domains together, ascending (units
    # 1, 1, 1; pods 2, 2, 2; id): nodes 1, 2 -> racks 0 and 1. Job 3 (2 pods, required node, slices of 2 at
    # the node level) at 1: node 0 holds 0 slices, node 3 one -> runs at 1 on node 3.
    nodes = [node(2, 0, 0), node(2, 0, 0), node(2, 0, 1), node(2, 0, 1)]
    jobs = [
        job(1, 0.0, 100.0, 1),
        job(2, 0.0, 100.0, 4, **sliced(("nvlink_domain", 2))),
        job(3, 1.0, 10.0, 2, "required", "node", **sliced(("node", 2))),
    ]
    out = replay(jobs, nodes)
    assert [out[j]["start_time"] for j in (1, 2, 3)] == [0.0, 0.0, 1.0]
    assert spans(out[2]) == (2, 2, 2, 1)
    assert spans(out[3]) == (1, 1, 1, 1)


# --------------------------------------------------------------------------------------------------
# Generated cases: the kernel against the reference's assignment, whole replays against each other
# --------------------------------------------------------------------------------------------------


def slices_for(
    draw: st.DrawFn, request: tuple[str | None, str | None], pods: int | None
) -> tuple[str, int] | None:
    """No slices (most often), or a slice level at or below a required / preferred request's and a size
    (one that divides ``pods`` when given, else 1-4: a size that does not divide is rejected at arrival)."""
    if draw(st.integers(0, 2)) > 0:
        return None
    mode, level = request
    top = reference.TAS_LEVELS.index(level) if mode in ("required", "preferred") and level else 0
    slice_level = draw(st.sampled_from(reference.TAS_LEVELS[top:]))
    sizes = [d for d in range(1, pods + 1) if pods % d == 0] if pods else [1, 2, 3, 4]
    return slice_level, draw(st.sampled_from(sizes))


@draws(150)
@given(
    nodes=tas_nodes(),
    pods=st.integers(1, 12),
    # A GPU-less pod asking nothing fits every node 2**40 times ("Counts (phase 1)").
    milli=st.sampled_from([0, 300, 500, 1000, 1000, 2000, 3000]),
    request=TAS_REQUESTS,
    profile=st.sampled_from(list(TasProfile)),
    data=st.data(),
)
def test_kernel_agrees_with_the_reference_assignment(
    nodes: list[dict[str, Any]],
    pods: int,
    milli: int,
    request: tuple[str | None, str | None],
    profile: TasProfile,
    data: st.DataObject,
) -> None:
    mode, level = request
    slices = slices_for(data.draw, request, pods)
    got = engine_assignment(nodes, pods, milli, mode, level, profile, slices)
    want = reference_assignment(nodes, pods, milli, mode, level, profile, slices)
    assert got == want, (nodes, pods, milli, request, profile, slices)


@st.composite
def tas_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A small topology (:func:`tas_nodes`) and up to 15 generated jobs, each with a random request."""
    nodes = draw(tas_nodes())
    rows = draw(job_rows(max_jobs=15))
    for row in rows:
        request = draw(TAS_REQUESTS)
        row["topology_mode"], row["topology_level"] = request
        row.update(sliced(slices_for(draw, request, None)))
    return jobs_frame(rows), nodes_frame(nodes)


@st.composite
def tas_policies(draw: st.DrawFn) -> Policy:
    """``kueue-tas`` with a random profile, queue order, backfill (none or skip) and depth, cycles, GPU
    scorer and spreading cost."""
    return replace(
        TAS,
        name="kueue-tas-random",
        tas_profile=draw(st.sampled_from(list(TasProfile))),
        queue_order=draw(st.sampled_from(list(QueueOrder))),
        backfill=draw(st.sampled_from([Backfill.none, Backfill.skip, Backfill.skip])),
        backfill_depth=draw(st.sampled_from([0, 0, 1, 2])),
        session_interval=draw(st.sampled_from([0.0, 0.0, 0.5, 3.0])),
        gpu_placement=draw(st.sampled_from(CLASSIC_SCORERS)),
        node_placement=draw(st.sampled_from(CLASSIC_SCORERS)),
        spread_rate_nvlink=draw(st.sampled_from([0.8, 1.0])),
        spread_rate_rack=draw(st.sampled_from([0.5, 1.0])),
    )


@draws(100)
@given(case=tas_cases(), policy=tas_policies(), sample_interval=sample_intervals, seed=seeds)
def test_generated_replays_agree(
    case: tuple[pl.DataFrame, pl.DataFrame], policy: Policy, sample_interval: float, seed: int
) -> None:
    jobs, nodes = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)
