"""Packing mode (the FGD experiment), the FGD paper's scorers, the node tie rules and workload tuning.

Hand-computed scenarios (the expected placements are worked out in the
comments), then engine-vs-reference agreement on small generated packing cases
(:mod:`tests.reference.packing`) for every node scorer under every tie rule,
then :func:`gpureplay.workload.tune.tune_pods`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import Phase, given
from hypothesis import strategies as st
from tests.reference import packing as ref_packing
from tests.reference.draws import draws
from tests.reference.scoring import GPU_SCORERS, SCORERS, tie_key
from tests.reference.simulator import DECISION_NODE, DECISION_NODE_ORDER, draw
from tests.reference.strategies import jobs_frame, nodes_frame

from gpureplay.errors import InputError
from gpureplay.replay.packing import Packing, pack_pods
from gpureplay.schedulers.policy import NodeTies, Policy
from gpureplay.workload.tune import tune_pods


def pod(job_id: int, milli: int, cpu: int = 0, **extra: Any) -> dict[str, Any]:
    """A single-pod job submitted at ``job_id`` seconds (arrival order = job id order)."""
    row = {"job_id": job_id, "submit_time": float(job_id), "duration": 1.0, "num_pods": 1}
    return row | {"gpu_milli": milli, "cpu_milli": cpu} | extra


def policy(node: str, gpu: str = "best_fit", ties: NodeTies = NodeTies.lowest_index) -> Policy:
    return Policy(f"{node}/{gpu}/{ties.name}", node_placement=node, gpu_placement=gpu, node_ties=ties)


def packed(
    rows: list[dict[str, Any]], node_rows: list[dict[str, Any]], pol: Policy, seed: int = 0
) -> Packing:
    return pack_pods(jobs_frame(rows), nodes_frame(node_rows), pol, seed=seed)


def nodes_by_arrival(result: Packing) -> list[int | None]:
    return result.pods.sort("arrival")["node"].to_list()


def column(result: Packing, name: str) -> list[Any]:
    return result.events.sort("arrival")[name].to_list()


# --------------------------------------------------------------------------------------------------
# Hand-computed scenarios
# --------------------------------------------------------------------------------------------------

# One 2-GPU node; pods A, B (0.5 GPU), C, D (1 GPU). Task classes (typical pods of the four):
# 0.5 GPU and 1 GPU, popularity 0.5 each.
FGD_PODS = [pod(1, 500), pod(2, 500), pod(3, 1000), pod(4, 1000)]
ONE_TWO_GPU_NODE = [{"gpu_model": "V100", "num_gpus": 2, "cpu_milli": 64000}]


def test_fgd_puts_the_second_share_on_the_used_gpu() -> None:
    """F = Σ_m p_m F(m); FGD scores int(100 sigmoid((F_before - F_after) / 1000)).

    A on (1000, 1000): F = 0 before; on either GPU (500, 1000): the 1-GPU class still fits (GPU 1)
    and counts the 500 left on GPU 0, F = 0.5 * 500 = 250: both GPUs score int(100 / (1 + e^0.25))
    = 43, GPU 0 (lowest). B on (500, 1000), F = 250: GPU 0 -> (0, 1000), F = 0, score
    int(100 / (1 + e^-0.25)) = 56; GPU 1 -> (500, 500), no GPU left for the 1-GPU class, F = 0.5 *
    1000 = 500, score 43: FGD takes GPU 0, the used one. C then takes GPU 1; D fails.
    A spreading GPU choice (worst_fit) puts B on GPU 1, and C and D both fail.
    """
    fgd = packed(FGD_PODS, ONE_TWO_GPU_NODE, policy("fgd", "fgd"))
    assert nodes_by_arrival(fgd) == [0, 0, 0, None]
    assert column(fgd, "frag_gpu_milli") == [250.0, 0.0, 0.0, 0.0]
    assert column(fgd, "allocated_gpu_milli") == [500, 1000, 2000, 2000]
    assert column(fgd, "failed_pods") == [0, 0, 0, 1]
    spread = packed(FGD_PODS, ONE_TWO_GPU_NODE, policy("fgd", "worst_fit"))
    assert nodes_by_arrival(spread) == [0, 0, None, None]
    # After B on GPU 1: (500, 500): the 1-GPU class lacks a GPU, F = 0.5 * 1000.
    assert column(spread, "frag_gpu_milli") == [250.0, 500.0, 500.0, 500.0]


def test_gpu_packing_prefers_a_used_gpu_then_a_used_node_then_an_empty_node() -> None:
    """Nodes: 0 V100 x2, 1 T4 x2, 2 V100 x2 (GPU choice best_fit).

    P1 (600, T4 only) -> node 1 GPU 0: node 1 = (400, 1000).
    P2 (1 GPU, V100 only): nodes 0 and 2 are empty, max(33 - 2, 2) = 31 each -> node 0 = (0, 1000).
    P3 (300): node 0 takes its free GPU 1: max(50 - 1, 33) = 49; node 1 shares GPU 0 (the least
    free that fits, 400): max(100 - (400 * 100 // 1000) // 10, 50) = 96; node 2 empty: 31 -> node 1,
    GPU 0 (best fit) = (100, 1000).
    P4 (500): node 0: a whole free GPU, 49; node 1: only GPU 1 fits, whole, 49; node 2: 31 -> the
    tie goes to node 0 = (0, 500).
    P5 (1 GPU): node 0 has no free GPU; node 1: 49; node 2: 31 -> node 1.
    """
    rows = [
        pod(1, 600, gpu_models=["T4"]),
        pod(2, 1000, gpu_models=["V100"]),
        pod(3, 300),
        pod(4, 500),
        pod(5, 1000),
    ]
    nodes = [{"gpu_model": m, "num_gpus": 2} for m in ("V100", "T4", "V100")]
    assert nodes_by_arrival(packed(rows, nodes, policy("gpu_packing"))) == [1, 0, 1, 0, 1]


def test_gpu_clustering_prefers_nodes_running_only_the_pods_kind() -> None:
    """Nodes: 0 V100 x4, 1 T4 x4; B = 25 * (8000 - free milli) // 8000.

    P1 (1 GPU, T4 only), P2 (500, T4 only) -> node 1: kinds {1 GPU, shared}, free 2500.
    P3 (1 GPU): node 0 runs no GPU pod: 25 + B(4000) = 25 + 12 = 37; node 1 runs some 1-GPU pods
    and others: 50 + B(2500) = 50 + 17 = 67 -> node 1 (free 1500).
    P4 (500, V100 only) -> node 0: {shared}, free 3500.
    P5 (500): node 0 runs shared pods only: 75 + B(3500) = 75 + 14 = 89; node 1: 50 + B(1500) = 50 +
    20 = 70 -> node 0 (free 3000, GPU 0 full).
    P6 (2 GPUs): node 0 runs only other kinds: 0 + B(3000) = 15; node 1 has one wholly free GPU and
    does not fit -> node 0.
    """
    rows = [
        pod(1, 1000, gpu_models=["T4"]),
        pod(2, 500, gpu_models=["T4"]),
        pod(3, 1000),
        pod(4, 500, gpu_models=["V100"]),
        pod(5, 500),
        pod(6, 2000),
    ]
    nodes = [{"gpu_model": "V100", "num_gpus": 4}, {"gpu_model": "T4", "num_gpus": 4}]
    assert nodes_by_arrival(packed(rows, nodes, policy("gpu_clustering"))) == [1, 1, 1, 0, 0, 0]


# Node 0: 8 GPUs, 4 cores; node 1: 1 GPU, 128 cores. One pod of 1 GPU and 1 core.
DOT_NODES = [
    {"gpu_model": "V100", "num_gpus": 8, "cpu_milli": 4000},
    {"gpu_model": "V100", "num_gpus": 1, "cpu_milli": 128000},
]


def test_dot_product_prefers_the_smaller_dot_product() -> None:
    """Node . pod, normalised by 128 cores and 8 GPUs; score int(100 (1 - dot / 2)).

    Node 0: (4000/128000) (1000/128000) + (8000/8000) (1000/8000) = 0.000244 + 0.125 -> 93.
    Node 1: (128000/128000) (1000/128000) + (1000/8000) (1000/8000) = 0.0078 + 0.0156 -> 98: node 1.
    """
    assert nodes_by_arrival(packed([pod(1, 1000, 1000)], DOT_NODES, policy("dot_product"))) == [1]


def test_best_fit_cpu_gpu_prefers_the_least_left_over() -> None:
    """Score int(100 (1 - s)), s = mean of the CPU and GPU left after placing, normalised.

    Node 0: 0.5 * 3000 / 128000 + 0.5 * 7000 / 8000 = 0.0117 + 0.4375 -> 55.
    Node 1: 0.5 * 127000 / 128000 + 0.5 * 0 / 8000 = 0.4961 -> 50: node 0 (unlike dot_product).
    On two 4-GPU nodes of 64 and 32 cores a 1-GPU, 8-core pod goes to the smaller node 1:
    0.5 * 56000/128000 + 0.5 * 3000/8000 = 0.406 -> 59 against 0.281 -> 71.
    """
    assert nodes_by_arrival(packed([pod(1, 1000, 1000)], DOT_NODES, policy("best_fit_cpu_gpu"))) == [0]
    two = [{"gpu_model": "V100", "num_gpus": 4, "cpu_milli": c} for c in (64000, 32000)]
    assert nodes_by_arrival(packed([pod(1, 1000, 8000)], two, policy("best_fit_cpu_gpu"))) == [1]


SIX_NODES = [{"gpu_model": "V100", "num_gpus": 1, "cpu_milli": 4000}] * 6


def seeded_order(seed: int, count: int) -> list[int]:
    """The nodes in ``seeded_order``: by tie_key of the replay's one draw, smallest first."""
    base = draw(seed, 0, 0, 0, DECISION_NODE_ORDER)
    return sorted(range(count), key=lambda n: tie_key(base, n))


@pytest.mark.parametrize("seed", [0, 7])
def test_seeded_order_ties_fill_the_nodes_in_one_fixed_order(seed: int) -> None:
    """CPU-only pods score 0 under gpu_clustering on every node: all nodes tie for every pod.

    Two 2-core pods fill a 4-core node, so pods 2i and 2i + 1 go to the i-th node of the seeded order.
    """
    rows = [pod(j, 0, 2000) for j in range(12)]
    got = nodes_by_arrival(
        packed(rows, SIX_NODES, policy("gpu_clustering", ties=NodeTies.seeded_order), seed)
    )
    order = seeded_order(seed, 6)
    assert got == [order[j // 2] for j in range(12)]


def test_seeded_orders_of_different_seeds_differ_and_lowest_index_ignores_the_seed() -> None:
    assert seeded_order(0, 6) != seeded_order(7, 6)
    rows = [pod(j, 0, 2000) for j in range(4)]
    lowest = policy("gpu_clustering")
    assert nodes_by_arrival(packed(rows, SIX_NODES, lowest, seed=7)) == [0, 0, 1, 1]


def test_random_ties_are_drawn_afresh_for_each_pod() -> None:
    """``random``: each pod takes the tied node with the smallest tie_key(draw(seed, job, 0, 0, NODE), n)."""
    rows = [pod(j, 0, 100) for j in range(10)]  # 40 such pods fit a node: every node always ties
    got = nodes_by_arrival(packed(rows, SIX_NODES, policy("dot_product", ties=NodeTies.random), seed=3))
    expected = [
        min(range(6), key=lambda n, j=j: tie_key(draw(3, j, 0, 0, DECISION_NODE), n)) for j in range(10)
    ]
    assert got == expected
    assert len(set(got)) > 1


def test_a_pod_that_does_not_fit_fails_at_once_and_later_pods_still_place() -> None:
    """One 2-GPU node. 1 GPU -> placed; 4 GPUs -> fails (larger than any node); 1 GPU -> placed;
    1 GPU -> fails (the node is full); a CPU-only pod -> placed. Arrived counts the failed pods.

    Classes: 1 GPU (3 pods), 4 GPUs, CPU-only: popularity 0.6, 0.2, 0.2. After the first pod,
    (0, 1000): the 1-GPU class fits and leaves no fragment; the 4-GPU class lacks GPUs and the
    CPU-only class never uses one, both count the 1000 free: F = 0.2 * 1000 + 0.2 * 1000 = 400.
    """
    rows = [pod(1, 1000), pod(2, 4000), pod(3, 1000), pod(4, 1000), pod(5, 0)]
    result = packed(rows, [{"gpu_model": "V100", "num_gpus": 2}], policy("best_fit"))
    assert nodes_by_arrival(result) == [0, None, 0, None, 0]
    assert result.pods.sort("arrival")["state"].to_list() == [
        "placed",
        "failed",
        "placed",
        "failed",
        "placed",
    ]
    assert column(result, "arrived_gpu_milli") == [1000, 5000, 6000, 7000, 7000]
    assert column(result, "allocated_gpu_milli") == [1000, 1000, 2000, 2000, 2000]
    assert column(result, "failed_pods") == [0, 1, 1, 2, 2]
    assert column(result, "failed_gpu_milli") == [0, 4000, 4000, 5000, 5000]
    assert column(result, "frag_gpu_milli") == [400.0, 400.0, 0.0, 0.0, 0.0]
    assert result.capacity_milli == 2000


def test_packing_refuses_multi_pod_jobs_and_baselines_as_gpu_placement() -> None:
    nodes = nodes_frame(ONE_TWO_GPU_NODE)
    with pytest.raises(InputError, match="single pods"):
        pack_pods(jobs_frame([pod(1, 1000) | {"num_pods": 2}]), nodes, policy("fgd", "fgd"))
    with pytest.raises(InputError, match=r"gpu_placement.*scores nodes only"):
        pack_pods(jobs_frame(FGD_PODS), nodes, policy("fgd", "gpu_packing"))


# --------------------------------------------------------------------------------------------------
# Engine vs reference on generated packing cases
# --------------------------------------------------------------------------------------------------

_MODELS = ("V100", "T4", "A100-80GB")


@st.composite
def packing_cases(draw_: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame]:
    """1-5 nodes of 0-8 GPUs (CPU finite, sometimes unknown) and 1-25 single pods of openb-like shapes."""
    node_rows = []
    for _ in range(draw_(st.integers(1, 5))):
        node_rows.append(
            {
                "gpu_model": draw_(st.sampled_from(_MODELS)),
                "num_gpus": draw_(st.sampled_from([0, 1, 2, 4, 4, 8])),
                "cpu_milli": draw_(st.sampled_from([8000, 32000, 64000, 96000, -1])),
            }
        )
    if all(row["num_gpus"] == 0 for row in node_rows):
        node_rows[0]["num_gpus"] = 2  # a cluster without GPU has no fill curve (capacity 0)
    for row in node_rows:
        if row["cpu_milli"] == -1:
            del row["cpu_milli"]  # unknown capacity
    rows = []
    for j in range(draw_(st.integers(1, 25))):
        milli = draw_(st.sampled_from([0, 100, 250, 300, 500, 500, 700, 1000, 1000, 2000, 4000, 8000]))
        extra: dict[str, Any] = {}
        if draw_(st.integers(0, 5)) == 0:
            extra["gpu_models"] = draw_(
                st.lists(st.sampled_from([*_MODELS, "P100"]), max_size=2, unique=True)
            )
        if draw_(st.integers(0, 5)) == 0:
            extra["gpu_mem_mib"] = draw_(st.sampled_from([4096, 20000]))
        cpu = draw_(st.sampled_from([0, 1000, 2000, 4000, 8000, 32000]))
        rows.append(pod(draw_(st.integers(0, 3)) * 100 + j, milli, cpu, **extra))
    return jobs_frame(rows), nodes_frame(node_rows)


def assert_packing_agrees(jobs: pl.DataFrame, nodes: pl.DataFrame, pol: Policy, seed: int) -> None:
    got = pack_pods(jobs, nodes, pol, seed=seed)
    want = ref_packing.pack_pods(jobs, nodes, pol, seed=seed)
    where = f"policy {pol.name}, seed {seed}\n{jobs}\n{nodes}"
    pods = got.pods.sort("arrival")
    assert pods["job_id"].to_list() == [p["job_id"] for p in want.pods], where
    assert pods["node"].to_list() == [p["node"] for p in want.pods], where
    assert pods["state"].to_list() == [p["state"] for p in want.pods], where
    events = got.events.sort("arrival")
    for name in ("arrived_gpu_milli", "allocated_gpu_milli", "failed_pods", "failed_gpu_milli"):
        assert events[name].to_list() == [e[name] for e in want.events], (name, where)
    for a, b in zip(
        events["frag_gpu_milli"].to_list(), [e["frag_gpu_milli"] for e in want.events], strict=True
    ):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (a, b, where)
    assert got.capacity_milli == want.capacity_milli


def check_policies(
    jobs: pl.DataFrame, nodes: pl.DataFrame, combos: list[tuple[str, NodeTies, str]], seed: int
) -> None:
    for node, ties, gpu in combos:
        assert_packing_agrees(jobs, nodes, policy(node, gpu, ties), seed)


# Each example runs every node scorer once, under the tie rule (i + offset) % 3 for the i-th scorer,
# so the examples together cover scorers x tie rules (pack_pods costs ~60 ms a call, so not all 30
# per example); FGD picks its own GPUs under seeded_order, as the fgd preset.
@draws(8, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(
    case=packing_cases(),
    seed=st.sampled_from([0, 1, 42, 2**63 - 1]),
    gpu=st.sampled_from(GPU_SCORERS),
    offset=st.integers(0, 2),
)
def test_packing_agrees_with_the_reference(
    case: tuple[pl.DataFrame, pl.DataFrame], seed: int, gpu: str, offset: int
) -> None:
    jobs, nodes = case
    rules = list(NodeTies)
    combos = []
    for i, node in enumerate(SCORERS):
        ties = rules[(i + offset) % 3]
        combos.append((node, ties, "fgd" if node == "fgd" and ties is NodeTies.seeded_order else gpu))
    check_policies(jobs, nodes, combos, seed)


# A fixed mixed case (shares, whole GPUs, CPU-only pods, model constraints, GPU memory, finite and
# unknown CPU) under every node scorer x every tie rule.
MIXED_NODES = [
    {"gpu_model": "V100", "num_gpus": 4, "cpu_milli": 32000},
    {"gpu_model": "T4", "num_gpus": 2, "cpu_milli": 16000},
    {"gpu_model": "V100", "num_gpus": 4},
    {"gpu_model": "A100-80GB", "num_gpus": 8, "cpu_milli": 96000},
    {"gpu_model": "T4", "num_gpus": 2, "cpu_milli": 16000},
]
_SHAPES = [(500, 2000), (1000, 4000), (250, 1000), (0, 8000), (2000, 0), (700, 2000), (4000, 16000), (500, 0)]
MIXED_PODS = [
    pod(j, *_SHAPES[j % len(_SHAPES)], **({"gpu_models": ["T4"]} if j % 7 == 3 else {}))
    | ({"gpu_mem_mib": 20000} if j % 11 == 5 else {})
    for j in range(30)
]


def test_packing_agrees_with_the_reference_under_every_scorer_and_tie_rule() -> None:
    combos = [(node, ties, gpu) for node in SCORERS for ties in NodeTies for gpu in ("best_fit",)]
    combos += [("fgd", NodeTies.seeded_order, "fgd"), ("random", NodeTies.random, "random")]
    check_policies(jobs_frame(MIXED_PODS), nodes_frame(MIXED_NODES), combos, seed=5)


@pytest.mark.parametrize("node", ["best_fit", "worst_fit"])
def test_indexed_scorers_follow_the_tie_rule(node: str) -> None:
    """Four empty 1-GPU nodes tie for one 1-GPU pod; ``random`` ties at seed 0 pick node 1.

    tie_key(draw(0, 1, 0, 0, NODE), n) is smallest for n = 1. A pod without CPU, memory or GPU
    memory is one the fit trees could answer, but they only know the lowest-index rule: the
    engine must not use them under another tie rule.
    """
    expected = min(range(4), key=lambda n: tie_key(draw(0, 1, 0, 0, DECISION_NODE), n))
    assert expected == 1
    nodes = [{"gpu_model": "V100", "num_gpus": 1}] * 4
    pol = policy(node, ties=NodeTies.random)
    assert nodes_by_arrival(packed([pod(1, 1000, cpu=1)], nodes, pol)) == [1]
    assert nodes_by_arrival(packed([pod(1, 1000)], nodes, pol)) == [1]


# --------------------------------------------------------------------------------------------------
# tune_pods
# --------------------------------------------------------------------------------------------------

# Ids out of order; demands 1 GPU, 0.5 GPU, 2 GPUs (per GPU: 1000), CPU only, 0.25 GPU.
TUNE_ROWS = [pod(40, 1000), pod(10, 500), pod(30, 2000), pod(20, 0, 1000), pod(50, 250)]


def tune_twin(milli: list[int], capacity: int, ratio: float, seed: int) -> tuple[list[int], int]:
    """tune_pods' rules on the numpy generator: (rows of the pods sorted by job_id, clones count)."""
    rng = np.random.default_rng(seed)
    order = [int(i) for i in rng.permutation(len(milli))]
    total, target = sum(milli), ratio * capacity
    if total > target:
        kept = list(order)
        while total > target and kept:
            total -= milli[kept.pop(int(rng.integers(len(kept))))]
        return kept, 0
    clones = []
    while True:
        pick = int(rng.integers(len(milli)))
        if total + min(milli[pick], 1000) > target:  # tested with the milli per GPU
            return order + clones, len(clones)
        clones.append(pick)
        total += milli[pick]


@pytest.mark.parametrize("seed", [0, 42, 51])
def test_tune_pods_inflates_to_the_target_with_clones_after_the_shuffled_originals(seed: int) -> None:
    jobs = jobs_frame(TUNE_ROWS)
    out, counts = tune_pods(jobs, capacity_milli=4000, ratio=1.3, seed=seed)
    ordered = jobs.sort("job_id")
    milli = ordered["gpu_milli"].to_list()
    rows, cloned = tune_twin(milli, 4000, 1.3, seed)
    assert counts == {"original": 5, "cloned": cloned, "removed": 0}
    assert out["gpu_milli"].to_list() == [milli[r] for r in rows]
    # The originals keep their ids, shuffled; the clones are numbered after the largest id.
    ids = ordered["job_id"].to_list()
    assert out["job_id"].to_list()[:5] == [ids[r] for r in rows[:5]]
    assert sorted(out["job_id"].to_list()[:5]) == sorted(ids)
    assert out["job_id"].to_list()[5:] == list(range(51, 51 + cloned))
    assert out["cpu_milli"].to_list() == [ordered["cpu_milli"][r] for r in rows]
    assert out["submit_time"].to_list() == [float(i) for i in range(out.height)]
    # The demand reached the target rule: each clone passed it, the next draw would not.
    total = sum(milli)
    for m in out["gpu_milli"].to_list()[5:]:
        assert total + min(m, 1000) <= 1.3 * 4000
        total += m
    assert total == sum(out["gpu_milli"].to_list())
    assert cloned > 0


def test_a_multi_gpu_clone_may_end_above_the_target() -> None:
    """The test adds 1000 (per GPU) for an 8-GPU pod, the total adds 8000: the demand ends above."""
    jobs = jobs_frame([pod(1, 8000)])
    out, counts = tune_pods(jobs, capacity_milli=10_000, ratio=1.0, seed=0)
    # 8000 + 1000 <= 10000: one clone, total 16000; then 16000 + 1000 > 10000: stop.
    assert counts["cloned"] == 1
    assert out["gpu_milli"].sum() == 16000
    assert out["job_id"].to_list() == [1, 2]


@pytest.mark.parametrize("seed", [0, 3])
def test_tune_pods_trims_random_pods_when_above_the_target(seed: int) -> None:
    jobs = jobs_frame(TUNE_ROWS)  # 3750 milli in all
    out, counts = tune_pods(jobs, capacity_milli=4000, ratio=0.5, seed=seed)
    ordered = jobs.sort("job_id")
    milli = ordered["gpu_milli"].to_list()
    rows, _ = tune_twin(milli, 4000, 0.5, seed)
    assert counts == {"original": 5, "cloned": 0, "removed": 5 - len(rows)}
    assert out["job_id"].to_list() == [ordered["job_id"][r] for r in rows]
    assert out["gpu_milli"].sum() <= 2000
    assert counts["removed"] > 0


def test_tune_pods_is_reproducible_by_seed_and_keeps_order_without_shuffle() -> None:
    jobs = jobs_frame(TUNE_ROWS)
    a, _ = tune_pods(jobs, 4000, 1.3, seed=42)
    b, _ = tune_pods(jobs, 4000, 1.3, seed=42)
    assert a.equals(b)
    orders = {tuple(tune_pods(jobs, 4000, 1.3, seed=s)[0]["job_id"].to_list()[:5]) for s in range(5)}
    assert len(orders) > 1
    kept, counts = tune_pods(jobs, 4000, None, seed=1, shuffle=False)
    assert kept["job_id"].to_list() == [10, 20, 30, 40, 50]
    assert counts == {"original": 5, "cloned": 0, "removed": 0}
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(InputError, match=r"packing\.tune"):
            tune_pods(jobs, 4000, bad, seed=0)


def test_packing_refuses_a_cluster_without_gpus() -> None:
    nodes = nodes_frame([{"gpu_model": None, "num_gpus": 0, "cpu_milli": 8000}])
    with pytest.raises(InputError, match="no GPUs"):
        pack_pods(jobs_frame([pod(1, 0, cpu=1000)]), nodes, policy("best_fit"))
