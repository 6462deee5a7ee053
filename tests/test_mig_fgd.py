"""Hand-computed scenarios for FGD over MIG slices (``mig_placement: fgd``, the ``fgd`` node scorer), engine
and reference.

docs/engine/devices.md, "Slice-mask MIG", bullets "FGD over MIG slices" and "Node scorer fgd with
dynamic MIG". The wanted shapes of a product are those of ``mig_stranded_slices`` (the instance each
fractional pod gets there; all 8 slices at start 0 for a whole-GPU pod), each weighted by how many of the
replay's pods ask it. A dynamic GPU holding slices h has F(h) = sum_i w_i x (free slices no free allowed
placement of shape i covers), 0 on a GPU taken whole. An instance goes to the free (GPU, start) of least
growth F(h | slices) - F(h), ties lowest GPU then lowest start. The node scorer: a fractional pod on a
dynamic node scores -(least growth), a pod taking k wholly free GPUs of a dynamic node -k x F(empty GPU),
any pod on a whole-GPU node 0; ties as usual.

A100-40GB throughout: 8 memory slices; starts 1g.5gb 0..6 (1 slice), 2g.10gb {0, 2, 4} (2), 3g.20gb
{0, 4} (4), 4g.20gb {0} (4), 7g.40gb {0} (8); a whole-GPU pod's shape is all 8 slices at 0.
sharing_demand trace, so a 100-milli pod on a 1g instance (1/7 >= 0.1) and a whole-GPU pod on a whole GPU
both run at rate 1.

The result tables do not say at which start an instance went: a placement shows in which later job fits
when, and in the timeline's ``mig_stranded_slices``. Where two starts cannot be told apart that way (every
wanted shape fits the same beside either), the reference's own placement is checked directly
(``reference_only``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import tests.reference.simulator as reference
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_mig_dynamic import HAMI, LOWEST, a100
from tests.test_replicas import FIFO, job

from gpureplay.errors import InputError
from gpureplay.mig.geometry import mig_geometry
from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.schedulers.policy import MigPlacement, MigStrategy, Policy

#: Dynamic MIG (FIFO gang, trace demand, first_fit nodes) with FGD over slices placing the instances.
FGD = replace(HAMI, name="fifo+dynamic-mig+fgd", mig_placement=MigPlacement.fgd)
#: The same with FGD also scoring the nodes.
FGD_NODES = replace(FGD, name="fifo+dynamic-mig+fgd-nodes", node_placement="fgd")
IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = reference.simulate

A100 = mig_geometry("A100-40GB")
#: Shapes as (allowed starts, memory slices).
SHAPE_1G = (tuple(range(7)), 1)
SHAPE_2G = ((0, 2, 4), 2)
SHAPE_3G = ((0, 4), 4)
SHAPE_4G = ((0,), 4)


#: Every scenario runs on both: the numba engine and the plain-Python reference (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("implementation")


def reference_only() -> None:
    if simulate is not reference.simulate:
        pytest.skip("the reference's own placement (the engine's shows through the scenarios only)")


def engine_only() -> None:
    if simulate is reference.simulate:
        pytest.skip("config errors are the compile step's (engine side)")


def run(
    jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], policy: Policy
) -> tuple[dict[int, tuple[Any, ...]], dict[float, int]]:
    """(job_id -> (state, start, finish), sample time -> mig_stranded_slices); a sample every 10 s."""
    result = simulate(jobs_frame(jobs), nodes_frame(nodes), policy, sample_interval=10.0, debug=True)
    out = {
        r["job_id"]: (r["state"], r["start_time"], r["finish_time"])
        for r in result.jobs.iter_rows(named=True)
    }
    stranded = dict(zip(result.timeline["time"], result.timeline["mig_stranded_slices"], strict=True))
    return out, stranded


def fgd_node(weights: list[tuple[tuple[tuple[int, ...], int], int]]) -> reference.Node:
    """The reference's dynamic A100-40GB node (one GPU) under mig_placement fgd, with these shape weights."""
    [node] = reference.empty_cluster([nodes_frame([a100()]).row(0, named=True)], dynamic=True)
    node.mig_placement = "fgd"
    node.mig_weights = tuple((starts, size, w) for (starts, size), w in weights)
    return node


def place(node: reference.Node, profile: str) -> int:
    """Put an instance of ``profile`` where the reference's rule says; its start."""
    p = A100.profile(profile)
    g, start = reference.pick_instance(node, p)
    node.gpus[g].mig_mask |= reference.slice_bits(p, start)
    node.gpus[g].free_milli -= reference.SLICE_MILLI * p.memory_slices
    return start


# --- (a) the spec's example: 1g.5gb, 2g.10gb, 3g.20gb, w = 1 each -----------------------------------------
# F(empty) = 1 (slice 7: no 1g start) + 2 (slices 6-7: no 2g start) + 0 (3g at 0 and 4 cover all) = 3.
# 1g at 6: free 0-5, 7; 1g strands 7 (1), 2g covers 0-5 (strands 7: 1), 3g@4 is blocked and 3g@0 covers 0-3
#   (strands 4, 5, 7: 3): F = 5, growth 2. 1g at s in 0-5: 1g strands 7 (1); 2g loses the pair holding s and
#   strands its other slice, 6 and 7 (3); 3g loses the half holding s and strands its 3 other slices (3):
#   F = 7, growth 4. -> start 6.
# 2g with h = {6} (F = 5): at 0 (free 2-5, 7) or 2 (free 0, 1, 4, 5, 7): 1g strands 7 (1), 2g strands 7 (1),
#   3g has no free start (0-3 or 4-7 each hold a slice) and strands all 5 free slices: F = 7, growth 2. At 4
#   (free 0-3, 7): 1g 1, 2g 1, 3g@0 covers 0-3: 1 -> F = 3, growth -2. -> start 4. The 3g then takes 0 (4 is
#   held): free slice 7 only, F = 3 again.
# hami: 1g at 6 (highest), 2g at 0 (lowest): 3g@0 overlaps the 2g, 3g@4 the 1g -- it waits for job 1's end at
# 1000. lowest_start: 1g@0, 2g@2, 3g@4, free slice 1.
SPEC_JOBS = [
    job(1, 0.0, 1000.0, 1, 100, mig_profile="1g.5gb"),
    job(2, 1.0, 1000.0, 1, 200, mig_profile="2g.10gb"),
    job(3, 2.0, 1000.0, 1, 300, mig_profile="3g.20gb"),
]


def test_spec_example_fgd_fits_all_three() -> None:
    # All start on arrival. At t = 10 the one free slice is 7: no 1g start there, so 1 stranded -- and
    # with 1g, 2g and 3g in slices 0-6 that pins the placement: 3g must be at 0 (3g@4 holds 7), then 2g at
    # 4, 1g at 6.
    out, stranded = run(SPEC_JOBS, [a100()], FGD)
    assert [out[i] for i in (1, 2, 3)] == [
        ("finished", 0.0, 1000.0),
        ("finished", 1.0, 1001.0),
        ("finished", 2.0, 1002.0),
    ]
    assert stranded[10.0] == 1


def test_spec_example_hami_leaves_the_3g_waiting() -> None:
    # 3g waits for the 1g (slice 6) to end at 1000: 3g@4 is free then. At t = 10 free slices 2-5 and 7: 1g
    # covers 2-5, 7 is stranded.
    out, stranded = run(SPEC_JOBS, [a100()], HAMI)
    assert out[3] == ("finished", 1000.0, 2000.0)
    assert stranded[10.0] == 1


def test_spec_example_lowest_start_packs_from_0() -> None:
    # 1g@0, 2g@2, 3g@4: all start on arrival; the free slice 1 takes a 1g: nothing stranded.
    out, stranded = run(SPEC_JOBS, [a100()], LOWEST)
    assert out[3] == ("finished", 2.0, 1002.0)
    assert stranded[10.0] == 0


def test_spec_example_numbers_in_the_reference() -> None:
    reference_only()
    node = fgd_node([(SHAPE_1G, 1), (SHAPE_2G, 1), (SHAPE_3G, 1)])
    assert reference.slice_frag(node, 0) == 3
    assert reference.slice_frag(node, 1 << 6) == 5
    assert [reference.slice_frag(node, 1 << s) for s in range(6)] == [7] * 6
    assert [place(node, "1g.5gb"), place(node, "2g.10gb"), place(node, "3g.20gb")] == [6, 4, 0]
    assert reference.slice_frag(node, node.gpus[0].mig_mask) == 3  # slice 7 stranded for each shape


# --- (b) only 1g.5gb and 4g.20gb wanted: a 1g keeps 4g's start 0 free --------------------------------------
# w1 = w4 = 1. F(empty) = 1 (slice 7, for 1g) + 4 (slices 4-7: 4g's only start is 0) = 5.
# 1g at s in 0-3: 4g@0 blocked, all 7 free slices stranded for it: F = 1 + 7 = 8, growth +3.
# 1g at s in 4-6: 4g@0 still covers 0-3, stranded for it 3 (the other free slices of 4-7): F = 1 + 3 = 4,
# growth -1. Ties to the lowest: start 4. hami: 6 (1g.* highest); lowest_start: 0.
# The 4g (job 2, at 1) fits at once under fgd and hami; under lowest_start it waits for job 1's end at 1000.
# (4 and 6 cannot be told apart by these two shapes: a 1g fits any free slice of 0-6 and the 4g needs 0-3.)
ONE_G_FOUR_G = [
    job(1, 0.0, 1000.0, 1, 100, mig_profile="1g.5gb"),
    job(2, 1.0, 100.0, 1, 500, mig_profile="4g.20gb"),
]


@pytest.mark.parametrize(
    ("policy", "start"), [(FGD, 1.0), (HAMI, 1.0), (LOWEST, 1000.0)], ids=["fgd", "hami", "lowest_start"]
)
def test_a_1g_keeps_the_4g_start_free(policy: Policy, start: float) -> None:
    out, _ = run(ONE_G_FOUR_G, [a100()], policy)
    assert out[1] == ("finished", 0.0, 1000.0)
    assert out[2] == ("finished", start, start + 100.0)


def test_a_1g_goes_to_start_4_in_the_reference() -> None:
    reference_only()
    node = fgd_node([(SHAPE_1G, 1), (SHAPE_4G, 1)])
    assert reference.slice_frag(node, 0) == 5
    profile = A100.profile("1g.5gb")
    assert reference.fgd_instance(node, profile) == (-1, 0, 4)
    growth = [reference.slice_frag(node, 1 << s) - 5 for s in range(7)]
    assert growth == [3, 3, 3, 3, -1, -1, -1]
    # The fgd node scorer scores the placement the start rule makes: -(-1) under fgd and hami (start 6),
    # -3 under lowest_start (start 0).
    pod = reference.Pod(milli=100, gpu_mem=0, cpu=0, mem=0, models=None)
    scores = {}
    for rule in ("fgd", "hami", "lowest_start"):
        node.mig_placement = rule
        scores[rule] = reference.mig_fgd_score(node, pod)
    assert scores == {"fgd": 1, "hami": 1, "lowest_start": -3}


# --- (c) the fgd node scorer prefers the node where the instance grows F least ----------------------------
# Two dynamic nodes of one A100. Job 1 (whole GPU, 0-10), job 2 (1g, from 1, long), job 3 (1g, at 20, 100 s),
# job 4 (whole GPU, at 30, 10 s). Wanted: the whole shape (w = 2: jobs 1, 4) and 1g (w = 2: jobs 2, 3).
# F(empty) = 2 x 0 (the whole shape covers all 8) + 2 x 1 (slice 7) = 2.
# Job 1: -1 x F(empty) = -2 on both nodes: tie, node 0. Job 2 at 1: node 0 is taken whole, node 1: any start
#   strands all 7 free slices for the whole shape: F = 2 x 7 + 2 x 1 = 16 at every start, growth +14: start 0.
# Job 3 at 20 (node 0 empty again since 10): node 0 growth 16 - 2 = +14 (score -14); node 1 (h = {0}): at 1-6
#   F = 2 x 6 + 2 x 1 = 14, growth -2 (score +2). -> node 1, so node 0 stays empty and job 4 runs at 30.
# first_fit: job 3 takes node 0 (lowest index), job 4 finds no empty GPU until job 3 ends at 120: 120 -> 130.
# (best_fit would pick node 1 too -- less free milli after -- so worst_fit is the other contrast: node 0.)
# The fgd node scorer under hami scores the placement hami makes: job 2 at 6 (1g.* highest), job 3 on node 0
# at 6 (growth +14, F = 2 x 7 + 2 x 1 = 16) or on node 1 at 5 (F({5, 6}) = 2 x 6 + 2 = 14, growth -2):
# node 1 again, job 4 at 30; hami with first_fit nodes: 120.
NODE_JOBS = [
    job(1, 0.0, 10.0, 1, 1000),
    job(2, 1.0, 1000.0, 1, 100),
    job(3, 20.0, 100.0, 1, 100),
    job(4, 30.0, 10.0, 1, 1000),
]


@pytest.mark.parametrize(
    ("policy", "start"),
    [
        (FGD_NODES, 30.0),
        (replace(FGD, node_placement="first_fit"), 120.0),
        (replace(FGD, node_placement="worst_fit"), 120.0),
        (replace(HAMI, node_placement="fgd"), 30.0),
        (HAMI, 120.0),
    ],
    ids=["fgd", "first_fit", "worst_fit", "fgd-nodes-hami", "hami"],
)
def test_fgd_nodes_put_an_instance_beside_another(policy: Policy, start: float) -> None:
    out, _ = run(NODE_JOBS, [a100(), a100()], policy)
    assert [out[i][1] for i in (1, 2, 3)] == [0.0, 1.0, 20.0]
    assert out[4] == ("finished", start, start + 10.0)


def test_fgd_node_scores_in_the_reference() -> None:
    reference_only()
    empty = fgd_node([(((0,), 8), 2), (SHAPE_1G, 2)])
    held = fgd_node([(((0,), 8), 2), (SHAPE_1G, 2)])
    held.index = 1
    assert place(held, "1g.5gb") == 0
    pod = reference.Pod(milli=100, gpu_mem=0, cpu=0, mem=0, models=None)
    assert (reference.mig_fgd_score(empty, pod), reference.mig_fgd_score(held, pod)) == (-14, 2)
    assert reference.choose_node_mig_fgd([empty, held], pod) == 1


# --- (d) a whole-GPU pod prefers a whole-GPU node to an empty dynamic one ---------------------------------
# Node 0 dynamic, node 1 whole GPUs (all-disabled), one GPU each. Job 1 (1000 milli, 0-100), job 2 (names
# 1g.5gb: dynamic nodes only, at 1). Wanted on node 0: whole (w = 1), 1g (w = 1): F(empty) = 0 + 1
# (slice 7) = 1.
# fgd: job 1 scores -1 x 1 = -1 on node 0 and 0 on node 1 -> node 1; job 2 gets node 0 at once.
# first_fit: job 1 takes node 0 whole; job 2 may not use node 1 and waits for job 1's end at 100.
MIXED_FLEET = [a100(), a100("all-disabled")]
WHOLE_JOBS = [job(1, 0.0, 100.0, 1, 1000), job(2, 1.0, 50.0, 1, 100, mig_profile="1g.5gb")]


@pytest.mark.parametrize(("policy", "start"), [(FGD_NODES, 1.0), (FGD, 100.0)], ids=["fgd", "first_fit"])
def test_a_whole_gpu_pod_avoids_the_dynamic_node(policy: Policy, start: float) -> None:
    out, _ = run(WHOLE_JOBS, MIXED_FLEET, policy)
    assert out[1] == ("finished", 0.0, 100.0)
    assert out[2] == ("finished", start, start + 50.0)


def test_whole_gpu_scores_in_the_reference() -> None:
    reference_only()
    node = fgd_node([(((0,), 8), 1), (SHAPE_1G, 1)])
    pod = reference.Pod(milli=1000, gpu_mem=0, cpu=0, mem=0, models=None)
    assert reference.mig_fgd_score(node, pod) == -1
    two = reference.Pod(milli=2000, gpu_mem=0, cpu=0, mem=0, models=None)
    assert reference.mig_fgd_score(node, two) == -2  # -k x F(empty), k = 2
    whole = reference.empty_cluster([nodes_frame([a100("all-disabled")]).row(0, named=True)], dynamic=True)[0]
    assert reference.mig_fgd_score(whole, pod) == 0


# --- config errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "key"),
    [
        (replace(FIFO, mig_placement=MigPlacement.fgd), "scheduler.mig_placement"),
        (
            replace(HAMI, mig_strategy=MigStrategy.mixed, mig_placement=MigPlacement.fgd),
            "scheduler.mig_placement",
        ),
    ],
    ids=["fgd-without-mig", "fgd-under-mixed"],
)
def test_refused_fgd_settings_name_the_key(policy: Policy, key: str) -> None:
    engine_only()
    layout = "all-balanced" if policy.mig_strategy is MigStrategy.mixed else "all-enabled"
    if policy.mig_strategy is MigStrategy.none:
        layout = None
    with pytest.raises(InputError, match=key):
        engine_simulate(jobs_frame([job(1, 0.0, 10.0, 1, 100)]), nodes_frame([a100(layout)]), policy)


def test_the_reference_refuses_them_too() -> None:
    reference_only()
    jobs, nodes = jobs_frame([job(1, 0.0, 10.0, 1, 100)]), nodes_frame([a100()])
    with pytest.raises(ValueError, match="mig_placement needs"):
        reference.simulate(jobs, nodes_frame([a100(None)]), replace(FIFO, mig_placement=MigPlacement.fgd))
    # The fgd node scorer takes any start rule under dynamic MIG (it scores the placement the rule makes).
    reference.simulate(jobs, nodes, replace(HAMI, node_placement="fgd"))
