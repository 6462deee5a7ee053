"""Hand-computed scenarios for MIG instances (device plugin single strategy), on the engine and the reference.

docs/engine/devices.md, "MIG instances": a node's mig_layout makes each GPU I instances of one profile
(devices), products ``<model>-MIG-<profile>`` select nodes, and a pod on an instance of c of the GPU's
S = 7 compute slices runs at min(1, (c / S) / d). A100-40GB throughout: 40960 MiB, 8 memory slices, so
1g.5gb has 5120 MiB, 2g.10gb 10240, 3g.20gb 20480 (and 4g.20gb: 4 compute, 4 memory slices). Every
number is derived in the comments.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import tests.reference.simulator as reference
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_replicas import BASE, job

from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.schedulers.policy import (
    MigDemand,
    MigStrategy,
    Policy,
    SharingDemand,
)

#: test_replicas' BASE: its compiled variant (FIFO rules in the gang + preemption replay, shared devices)
#: serves MIG too, which needs only other codes and node rows.
MIG = replace(BASE, name="fifo+mig", mig_strategy=MigStrategy.single)
TRACE = replace(MIG, sharing_demand=SharingDemand.trace)
FIT = replace(MIG, mig_demand=MigDemand.smallest_fit)
IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = reference.simulate


#: Every scenario runs on both: the numba engine and the plain-Python reference (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("implementation")


def a100(layout: str | None, num_gpus: int = 1, **extra: Any) -> dict[str, Any]:
    return {"gpu_model": "A100-40GB", "num_gpus": num_gpus, "mig_layout": layout, **extra}


def run(
    jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], policy: Policy
) -> dict[int, tuple[Any, ...]]:
    """job_id -> (state, start_time, finish_time, sharing_delay, sharing_slowdown)."""
    result = simulate(jobs_frame(jobs), nodes_frame(nodes), policy, sample_interval=10.0, debug=True)
    return {
        r["job_id"]: (
            r["state"],
            r["start_time"],
            r["finish_time"],
            r["sharing_delay"],
            r["sharing_slowdown"],
        )
        for r in result.jobs.iter_rows(named=True)
    }


def test_a_1g_instance_gives_a_seventh_of_the_gpu() -> None:
    # all-1g.5gb: 7 instances of c = 1; a whole-GPU job (d = 1) runs at 1/7: 70 s of work end at 490,
    # stretched by 490 - 70 = 420 s, slowdown 7.
    out = run([job(1, 0.0, 70.0, 1, 1000)], [a100("all-1g.5gb")], MIG)
    assert out[1] == ("finished", 0.0, pytest.approx(490.0), pytest.approx(420.0), pytest.approx(7.0))


def test_two_3g_instances_hold_two_jobs_and_the_third_waits() -> None:
    # all-3g.20gb: 2 instances (c = 3) per GPU. Jobs 1 and 2 start at 0 at rate 3/7: 30 s end at 70;
    # job 3 takes a freed instance at 70 and ends at 140. Instances do not slow each other.
    jobs = [job(i, 0.0, 30.0, 1, 1000) for i in (1, 2, 3)]
    out = run(jobs, [a100("all-3g.20gb")], MIG)
    assert [out[i][1:3] for i in (1, 2, 3)] == [
        (0.0, pytest.approx(70.0)),
        (0.0, pytest.approx(70.0)),
        (pytest.approx(70.0), pytest.approx(140.0)),
    ]


def test_trace_demand_that_fits_the_instance_runs_at_full_speed() -> None:
    # sharing_demand: trace. d = 0.3 <= 3/7 on a 3g instance: rate 1, 60 s end at 60. d = 0.5 > 3/7:
    # rate (3/7) / 0.5 = 6/7, 60 s take 70.
    out = run([job(1, 0.0, 60.0, 1, 300), job(2, 0.0, 60.0, 1, 500)], [a100("all-3g.20gb")], TRACE)
    assert out[1][2:] == (60.0, 0.0, 1.0)
    assert out[2][2] == pytest.approx(70.0)
    assert out[2][4] == pytest.approx(7.0 / 6.0)


def test_instance_memory_bounds_what_fits() -> None:
    # A 1g.5gb instance has 40960 * 1 // 8 = 5120 MiB: a pod asking 6000 MiB never fits there and is
    # rejected on a cluster of 1g nodes; with a 2g.10gb node (10240 MiB) beside it, it runs there at 2/7.
    big = job(1, 0.0, 20.0, 1, 1000, gpu_mem_mib=6000)
    assert run([big], [a100("all-1g.5gb")], MIG)[1][0] == "rejected"
    out = run([big], [a100("all-1g.5gb"), a100("all-2g.10gb")], MIG)
    assert out[1][2] == pytest.approx(70.0)  # 20 / (2/7)


def test_a_pod_of_two_gpus_takes_two_instances() -> None:
    # 2000 milli = 2 devices: both 3g instances of the GPU; rate 3/7 (each pod's instances alike): 30 s
    # end at 70. A second such job waits for them.
    out = run([job(1, 0.0, 30.0, 1, 2000), job(2, 0.0, 30.0, 1, 2000)], [a100("all-3g.20gb")], MIG)
    assert out[1][1:3] == (0.0, pytest.approx(70.0))
    assert out[2][1:3] == (pytest.approx(70.0), pytest.approx(140.0))


def test_a_gang_spans_instances_and_runs_at_its_slowest_pod() -> None:
    # 3 pods of 1000 on a 1g node (7 instances) and a 3g node (2): first fit puts the gang on node 0
    # (lowest index, 7 free): rate 1/7, 10 s end at 70. With 9 pods it needs both nodes: still 1/7.
    nodes = [a100("all-1g.5gb"), a100("all-3g.20gb")]
    assert run([job(1, 0.0, 10.0, 3, 1000)], nodes, MIG)[1][2] == pytest.approx(70.0)
    assert run([job(1, 0.0, 10.0, 9, 1000)], nodes, MIG)[1][2] == pytest.approx(70.0)


def test_a_named_profile_selects_its_nodes() -> None:
    # Node 0 is 1g, node 1 is 3g. Job 1 names 3g.20gb: it runs on node 1 at 3/7 (30 s -> 70) although
    # first fit prefers node 0; job 2 names none and takes node 0 at 1/7 (10 s -> 70).
    nodes = [a100("all-1g.5gb"), a100("all-3g.20gb")]
    out = run([job(1, 0.0, 30.0, 1, 1000, mig_profile="3g.20gb"), job(2, 0.0, 10.0, 1, 1000)], nodes, MIG)
    assert (out[1][2], out[2][2]) == (pytest.approx(70.0), pytest.approx(70.0))


def test_a_named_profile_no_node_has_is_rejected() -> None:
    out = run([job(1, 0.0, 30.0, 1, 1000, mig_profile="2g.10gb")], [a100("all-1g.5gb")], MIG)
    assert out[1][0] == "rejected"


def test_smallest_fit_maps_the_demand_to_a_profile() -> None:
    # mig_demand: smallest_fit, sharing_demand whole. 300 milli -> 3g.20gb (3/7 >= 0.3 > 2/7): node 1,
    # rate 3/7, 30 s -> 70. 100 milli -> 1g.5gb: node 0, 1/7, 10 s -> 70. 500 milli -> 4g.20gb: no node,
    # rejected.
    nodes = [a100("all-1g.5gb"), a100("all-3g.20gb")]
    jobs = [job(1, 0.0, 30.0, 1, 300), job(2, 0.0, 10.0, 1, 100), job(3, 0.0, 10.0, 1, 500)]
    out = run(jobs, nodes, FIT)
    assert (out[1][2], out[2][2], out[3][0]) == (pytest.approx(70.0), pytest.approx(70.0), "rejected")


def test_fits_allows_every_instance_big_enough() -> None:
    # mig_demand: fits. Nodes: 1g (c = 1), 3g (c = 3), 7g (c = 7). 300 milli needs c / 7 >= 0.3: the 3g
    # and 7g nodes, first fit takes the 3g (node 1): 30 s at 3/7 -> 70. 100 milli fits all three: node 0
    # (1g) at 1/7, 10 s -> 70. 500 milli: only the 7g node (4g absent), rate 1: 10 s -> 10.
    nodes = [a100("all-1g.5gb"), a100("all-3g.20gb"), a100("all-7g.40gb")]
    jobs = [job(1, 0.0, 30.0, 1, 300), job(2, 0.0, 10.0, 1, 100), job(3, 0.0, 10.0, 1, 500)]
    out = run(jobs, nodes, replace(MIG, mig_demand=MigDemand.fits))
    assert (out[1][2], out[2][2], out[3][2]) == (pytest.approx(70.0), pytest.approx(70.0), 10.0)


def test_fits_reads_instance_memory() -> None:
    # 100 milli asking 8000 MiB: the 1g.5gb instance (5120 MiB) is too small (for the selector and for the
    # fit itself), the 3g.20gb one fits: node 1, 30 s at 3/7 -> 70.
    nodes = [a100("all-1g.5gb"), a100("all-3g.20gb")]
    out = run([job(1, 0.0, 30.0, 1, 100, gpu_mem_mib=8000)], nodes, replace(MIG, mig_demand=MigDemand.fits))
    assert out[1][2] == pytest.approx(70.0)


def test_smallest_fit_keeps_whole_gpu_nodes_and_reads_memory() -> None:
    # 100 milli asking 8000 MiB: 1g.5gb (5120) is too small, 1g.10gb (1 compute, 2 memory slices) fits
    # -- no node has it, so of the MIG nodes none is allowed; the whole V100-32GB node runs it at 1.
    nodes = [a100("all-1g.5gb"), {"gpu_model": "V100-32GB", "num_gpus": 1}]
    out = run([job(1, 0.0, 10.0, 1, 100, gpu_mem_mib=8000)], nodes, FIT)
    assert out[1][2:] == (10.0, 0.0, 1.0)


def test_gpu_models_name_base_models() -> None:
    # gpu_models [A100-40GB] allows the A100's MIG product; [V100] on a MIG-only cluster is rejected.
    nodes = [a100("all-7g.40gb")]
    out = run(
        [
            job(1, 0.0, 10.0, 1, 1000, gpu_models=["A100-40GB"]),
            job(2, 0.0, 10.0, 1, 1000, gpu_models=["V100"]),
        ],
        nodes,
        MIG,
    )
    # 7g.40gb: one instance of all 7 slices, rate 1.
    assert (out[1][2], out[2][0]) == (10.0, "rejected")


def test_whole_and_mig_nodes_side_by_side() -> None:
    # A V100 (whole, rate 1) and an A100 all-1g.5gb. First fit: job 1 on node 0 (the V100), 10 s -> 10;
    # job 2 on the 1g node at 1/7 -> 70; job 3 waits for nothing (6 instances left) -> 70 too.
    nodes = [{"gpu_model": "V100", "num_gpus": 1}, a100("all-1g.5gb")]
    out = run([job(i, 0.0, 10.0, 1, 1000) for i in (1, 2, 3)], nodes, MIG)
    assert [out[i][2] for i in (1, 2, 3)] == [10.0, pytest.approx(70.0), pytest.approx(70.0)]


def test_all_disabled_is_whole_gpus() -> None:
    out = run([job(1, 0.0, 10.0, 1, 1000)], [a100("all-disabled")], MIG)
    assert out[1][2:] == (10.0, 0.0, 1.0)


def test_preemption_on_instances() -> None:
    # One 7g instance (rate 1). Job 1 (priority 0) runs from 0; job 2 (priority 10) arrives at 10 and
    # evicts it (30 s grace: the instance is free at 40); job 2 runs 40..60. Job 1 restarts at 60 with
    # Lucid's 40 s overhead and its checkpoint (interval 0: nothing lost): 100 - 10 = 90 s left -> 190.
    jobs = [job(1, 0.0, 100.0, 1, 1000, priority=0), job(2, 10.0, 20.0, 1, 1000, priority=10)]
    out = run(jobs, [a100("all-7g.40gb")], MIG)
    assert out[2][1:3] == (40.0, 60.0)
    assert out[1][2] == pytest.approx(190.0)
