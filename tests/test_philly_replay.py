"""The full real Philly table on Philly's machines under every preset (issue: engine v1, done-when).

Every job ends in a final state, the engine's invariants hold at every cycle
(debug=True) and two runs give identical results. Run at 6x arrival rate so
queues form (at 1x no Philly job ever waits on the pooled 2,490 GPUs).
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest
from tests.reference.strategies import SHARING_PRESETS

from gpureplay.cluster.philly import philly_nodes
from gpureplay.paths import bundled_traces_dir
from gpureplay.queues.quotas import read_vc_nodes
from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import GangMode
from gpureplay.schedulers.presets import preset, preset_names
from gpureplay.traces.philly import load_philly
from gpureplay.workload.transforms import apply_workload


@pytest.fixture(scope="module")
def philly() -> tuple[pl.DataFrame, pl.DataFrame]:
    jobs = apply_workload(load_philly().jobs, load=6.0)
    return jobs, philly_nodes().nodes


#: The FGD paper's and the GPU-sharing systems' presets are left out: their scorers and sharing
#: settings are for shared-GPU pods (openb), checked against the reference, in packing mode and on
#: openb's timed replay (tests/test_sweep_examples.py); Philly's whole-GPU gangs go through the same
#: gang / pod-by-pod mechanics as the presets kept here, and add nothing but minutes.
#: sjf, kube-most-allocated and gang-spread differ from fifo, kube-default and gang-binpack only in queue
#: key and scorer, kueue-fair and
#: kueue-philly-vcs from kueue and kueue-philly-vcs-isolated in head order and cohort, kai from
#: kai-philly-vcs in its quotas only, volcano-reclaim from volcano-philly-vcs-reclaim in its weights only,
#: all checked on generated cases against the reference: left out of the full replays too (suite time).
#: volcano-preempt's Helm plugins let only lower-priority jobs go, and Philly has one priority: on Philly it
#: is volcano-reclaim; its preempt action runs on Philly under Volcano's built-in plugins below.
SAME_MECHANICS = (
    "sjf",
    "kube-most-allocated",
    "gang-spread",
    "kueue-fair",
    "kueue-philly-vcs",
    "kai",
    "volcano-reclaim",
    "volcano-preempt",
)
#: Presets that need a workload of their own: reclaim-idle's notebooks (its full replay, as sweep
#: philly-reclaim-idle runs it, is in tests/test_sweep_examples.py) and kai-reclaim, whose full replay takes
#: minutes (its reclaim churns on Philly: docs/families/kai.md): a tenth of it runs below (31 evictions in
#: 1.6 s; a fifth: 838 in 50 s on 2 cores).
OWN_WORKLOAD = ("reclaim-idle", "kai-reclaim")
PHILLY_PRESETS = [
    name
    for name in preset_names()
    if not name.startswith("fgd")
    and name not in SHARING_PRESETS
    and name not in SAME_MECHANICS
    and name not in OWN_WORKLOAD
]


@pytest.mark.slow
@pytest.mark.parametrize("name", PHILLY_PRESETS)
def test_full_philly_replays_under_every_preset(philly: tuple[pl.DataFrame, pl.DataFrame], name: str) -> None:
    jobs, nodes = philly
    checked = simulate(jobs, nodes, preset(name), debug=True)  # raises on any invariant violation
    assert checked.jobs.height == 82_247
    assert checked.jobs["state"].is_in(["finished", "rejected", "deadlocked", "unfinished", "failed"]).all()
    # Every Philly job fits the official machine list, and nothing is left at the end of an uncapped replay;
    # MPS's device plugin fails the pods that ask more than one replica (failRequestsGreaterThanOne).
    finished = checked.jobs["state"] == "finished"
    if name == "mps":
        multi = set(jobs.filter(pl.col("gpu_milli") > 1000)["job_id"])
        refused = checked.jobs.filter(pl.col("reject_reason") == "shared_request_too_large")
        assert multi and set(refused["job_id"]) == multi and finished.sum() == jobs.height - len(multi)
    policy = preset(name)
    numa = str(getattr(policy.topology_manager, "name", policy.topology_manager)) != "none"
    if numa:
        # Philly's servers are two NUMA nodes: kubelets fail (a NUMA-aware scheduler rejects at arrival) the
        # pods no NUMA node can align, never anything else; under single-numa-node every 8-GPU pod is one.
        lost = checked.jobs.filter(~finished)
        assert (lost["state"] == ("rejected" if policy.numa_aware_scheduler else "failed")).all()
        single = str(getattr(policy.topology_manager, "name", "")) == "single_numa_node"
        assert lost.height > 0 or not single
    if name == "kueue-philly-vcs-isolated":
        # The 4 VCs the node list does not name get 0 GPUs of quota and no cohort to borrow from: their
        # 18 jobs never start, and nothing else is left.
        quota = set(read_vc_nodes(bundled_traces_dir() / "philly" / "philly_vc_nodes.csv"))
        left = jobs.join(checked.jobs.filter(~finished), on="job_id")
        assert left.height == 18 and not set(left["queue"]) & quota
        return
    assert finished.all() or name in ("kube-default", "mps") or numa
    if name in ("gang-binpack", "kube-default-preempt"):
        # Without the checks, the same replay (one gang and one pod-by-pod preset: suite time).
        again = simulate(jobs, nodes, preset(name))
        assert again.jobs.equals(checked.jobs) and again.timeline.equals(checked.timeline)
        assert again.gpu_milli_seconds == checked.gpu_milli_seconds
    demand = jobs.select(
        (pl.col("num_pods").cast(pl.Float64) * pl.col("gpu_milli") * pl.col("duration")).sum()
    ).item()
    if name == "volcano-philly-vcs-reclaim":
        # Volcano's reclaim evicts only other queues' jobs, for an Inqueue job of a queue below its share.
        queue_of = dict(jobs.select("job_id", "queue").iter_rows())
        evicted = checked.attempts.filter(pl.col("evicted_by").is_not_null())
        assert evicted.height > 0
        assert all(
            queue_of[v] != queue_of[by] for v, by in evicted.select("job_id", "evicted_by").iter_rows()
        )
        return
    if name == "kueue-pods-ready":
        # After a Kueue admission by quota pods hold GPUs from their placement, waiting for their siblings:
        # every allocated GPU-second is an attempt's, more than the demand; waitForPodsReady evicted some
        # partly placed jobs (attempts ending pods_ready_timeout; a job evicted with no pod placed has none).
        held = checked.attempts["gpu_seconds"].sum() * 1000.0
        assert checked.gpu_milli_seconds == pytest.approx(held, rel=1e-9)
        assert checked.gpu_milli_seconds > demand
        timed_out = checked.attempts.filter(pl.col("end_reason") == "pods_ready_timeout").height
        assert 0 < timed_out <= checked.jobs["pods_ready_timeouts"].sum()
        return
    if preset(name).gang == GangMode.gang and (checked.jobs["state"] == "finished").all():
        # Gang jobs hold GPUs exactly while they run; pod-by-pod pods also hold them waiting for siblings.
        assert checked.gpu_milli_seconds == pytest.approx(demand, rel=1e-9)


@pytest.mark.slow
def test_full_philly_preempts_within_queues_by_drf(philly: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """Philly at 6x under ``volcano-preempt`` with Volcano's built-in plugins (every ``enablePreemptable``
    on): the gang plugin ends tier 1 for whole gangs, so drf names the preempt action's victims, all of one
    priority here. Some jobs are evicted by a job of their own queue (preempt), and each such victim held a
    larger drf share, less one pod, than its evictor's one pod."""
    jobs, nodes = philly
    policy = replace(preset("volcano-preempt"), preemptable_plugins=None)
    checked = simulate(jobs, nodes, policy, debug=True)
    assert (checked.jobs["state"] == "finished").all()
    evicted = checked.attempts.filter(pl.col("evicted_by").is_not_null()).select("job_id", "evicted_by")
    shape = jobs.select("job_id", "queue", "num_pods", "gpu_milli")
    pairs = evicted.join(shape, on="job_id").join(
        shape.rename(lambda c: f"{c}_by"), left_on="evicted_by", right_on="job_id_by"
    )
    within = pairs.filter(pl.col("queue") == pl.col("queue_by"))
    assert within.height > 0
    # The GPU is the dominant resource of every Philly job (no CPU or memory requests).
    assert (((within["num_pods"] - 1) * within["gpu_milli"]) >= within["gpu_milli_by"]).all()


@pytest.mark.slow
def test_philly_reclaims_between_kai_queues(philly: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """The first tenth of Philly's jobs (by submit time) at 6x under ``kai-reclaim``, with the debug checks:
    Philly has one priority, so KAI's preempt action finds no victim and every eviction is reclaim's, of a
    job of another queue; every job finishes."""
    jobs, nodes = philly
    jobs = jobs.sort("submit_time").head(jobs.height // 10)
    checked = simulate(jobs, nodes, preset("kai-reclaim"), debug=True)
    assert (checked.jobs["state"] == "finished").all()
    queue_of = dict(jobs.select("job_id", "queue").iter_rows())
    evicted = checked.attempts.filter(pl.col("evicted_by").is_not_null())
    assert evicted.height > 0
    assert all(queue_of[v] != queue_of[by] for v, by in evicted.select("job_id", "evicted_by").iter_rows())
