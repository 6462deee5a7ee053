"""Replay speed: the full Philly trace under three presets, and synthetic traces of growing size.

Kernels are compiled (or loaded from numba's cache) in ``setup()`` by a tiny replay,
so the timings are of the replay alone. ``track_seconds_per_job`` makes the cost per
job of a 1M-job replay directly comparable with a 10k-job one: it should stay flat
if no per-event cost grows with the queue (docs/engine/index.md).

Issue 46's targets: ``ScaleReplay`` (10M jobs on 100,000 GPUs at >= 80% offered load with queues
forming: <= 60 s, <= 4 GB) and ``PhillyNodeShape`` (the same 20,000 Philly jobs on one node of 6,496 GPUs and
on 812 x 8: the same cost per job); a one-job whole process is ``bench_startup.WarmStart``.
"""

from __future__ import annotations

import dataclasses
import time
from typing import ClassVar

import polars as pl

from gpureplay.replay.simulate import simulate
from gpureplay.workload.transforms import scale_load

from .common import (
    NODE_SHAPE_JOBS,
    NODE_SHAPES,
    PHILLY_FLAVOR_EXAMPLES,
    PHILLY_IDLE_PRESETS,
    PHILLY_PREEMPT_PRESETS,
    PHILLY_PRESETS,
    PHILLY_QUEUE_LOAD,
    PHILLY_QUEUE_PRESETS,
    PRESETS,
    SCALE_PRESETS,
    SCALE_SIZES,
    SEED,
    SYNTHETIC_PRESET,
    SYNTHETIC_SIZES,
    kueue_manifest_policy,
    node_shape_cluster,
    offered_load_inputs,
    philly_cluster,
    philly_first_jobs,
    philly_jobs,
    philly_jobs_with_priorities,
    philly_jobs_with_topology_requests,
    philly_with_idle_notebooks,
    skip_unless_memory_for,
    skip_unless_opted_in,
    superpod_cluster,
    synthetic_inputs,
    warm_engine,
)


class PhillyReplay:
    """82,247 Philly jobs on the 552-node Philly cluster (2,490 GPUs)."""

    params: ClassVar[list[list[str]]] = [PHILLY_PRESETS]
    param_names: ClassVar[list[str]] = ["preset"]
    timeout = 900
    number = 1
    repeat = (1, 5, 120.0)
    warmup_time = 0.0

    def setup(self, preset: str) -> None:
        self.jobs = philly_jobs()
        self.nodes = philly_cluster()
        self.policy = PRESETS[preset]
        warm_engine()

    def time_replay(self, preset: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def peakmem_replay(self, preset: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)


class PhillyQueueReplay:
    """Full Philly at 6x with its VCs as queues: no quotas vs Kueue (GPU-time-share quotas, classical and
    fair sharing; real VC quotas; admission by quota alone with waitForPodsReady), Volcano (GPU-time-share
    weights; real VC quotas as weights) and KAI (GPU-time-share quotas; real VC quotas).

    The issue's target: each queue model within 3x of ``gang-binpack`` on the same jobs.
    """

    params: ClassVar[list[list[str]]] = [PHILLY_QUEUE_PRESETS]
    param_names: ClassVar[list[str]] = ["preset"]
    timeout = 900
    number = 1
    repeat = (1, 5, 120.0)
    warmup_time = 0.0

    def setup(self, preset: str) -> None:
        self.jobs = scale_load(philly_jobs(), PHILLY_QUEUE_LOAD)
        self.nodes = philly_cluster()
        self.policy = PRESETS[preset]
        warm_engine()

    def time_replay(self, preset: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def peakmem_replay(self, preset: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)


class PhillyKueueFlavorReplay:
    """Full Philly at 6x with its VCs as Kueue ClusterQueues holding quota in two ResourceFlavors, one per
    machine type (examples/manifests/kueue-philly-flavors*): the flavor assigner and node selection by
    flavor, beside ``PhillyQueueReplay``'s one-flavor ``kueue-philly-vcs`` and ``gang-binpack``."""

    params: ClassVar[list[list[str]]] = [PHILLY_FLAVOR_EXAMPLES]
    param_names: ClassVar[list[str]] = ["manifests"]
    timeout = 900
    number = 1
    repeat = (1, 5, 120.0)
    warmup_time = 0.0

    def setup(self, manifests: str) -> None:
        self.jobs = scale_load(philly_jobs(), PHILLY_QUEUE_LOAD)
        self.nodes = philly_cluster()
        self.policy = kueue_manifest_policy(manifests)
        warm_engine()

    def time_replay(self, manifests: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def track_mean_wait_hours(self, manifests: str) -> float:
        replay = simulate(self.jobs, self.nodes, self.policy, seed=SEED)
        submitted = self.jobs.select("job_id", "submit_time")
        waits = replay.jobs.join(submitted, on="job_id").select(pl.col("start_time") - pl.col("submit_time"))
        return float(waits.to_series().mean() or 0.0) / 3600.0

    track_mean_wait_hours.unit = "hours"  # type: ignore[attr-defined]


class PhillyPreemptReplay:
    """Full Philly at 6x with 20% high-priority jobs under the preemption presets (evictions, restarts),
    Volcano's preempt action (within a VC) among them."""

    params: ClassVar[list[list[str]]] = [PHILLY_PREEMPT_PRESETS]
    param_names: ClassVar[list[str]] = ["preset"]
    timeout = 900
    number = 1
    repeat = (1, 5, 120.0)
    warmup_time = 0.0

    def setup(self, preset: str) -> None:
        self.jobs = philly_jobs_with_priorities()
        self.nodes = philly_cluster()
        self.policy = PRESETS[preset]
        warm_engine()

    def time_replay(self, preset: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def track_preemptions(self, preset: str) -> float:
        return float(simulate(self.jobs, self.nodes, self.policy, seed=SEED).stats["preemptions"])

    track_preemptions.unit = "evictions"  # type: ignore[attr-defined]


class PhillyReclaimIdleReplay(PhillyPreemptReplay):
    """Full Philly at 6x with 30% notebooks, half of them idle 30 min into each attempt (``notebooks-idle``):
    kube-default against ``reclaim-idle`` (ReclaimIdleResource), whose wakes at each notebook's reclaim time
    run preemption searches that kube-default never does."""

    params: ClassVar[list[list[str]]] = [PHILLY_IDLE_PRESETS]
    repeat = (1, 3, 120.0)

    def setup(self, preset: str) -> None:
        self.jobs, self.nodes, self.policy = philly_with_idle_notebooks(preset)
        warm_engine()


class PhillySpreadReplay:
    """Full Philly under gang-binpack with and without what spreading costs (domains counted per start)."""

    params: ClassVar[list[list[str]]] = [["blind", "spread-cost"]]
    param_names: ClassVar[list[str]] = ["topology"]
    timeout = 900
    number = 1
    repeat = (1, 5, 120.0)
    warmup_time = 0.0

    def setup(self, topology: str) -> None:
        self.jobs = philly_jobs()
        self.nodes = philly_cluster()
        policy = PRESETS["gang-binpack"]
        if topology == "spread-cost":
            policy = dataclasses.replace(policy, spread_rate_nvlink=0.8, spread_rate_rack=0.9)
        self.policy = policy
        warm_engine()

    def time_replay(self, topology: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def track_spread_gpu_hours(self, topology: str) -> float:
        jobs = simulate(self.jobs, self.nodes, self.policy, seed=SEED).jobs.join(
            self.jobs.select("job_id", "num_pods", "gpu_milli"), on="job_id"
        )
        gpus = jobs["num_pods"].cast(float) * jobs["gpu_milli"] / 1000.0
        return float((gpus * jobs["spread_delay"]).sum()) / 3600.0

    track_spread_gpu_hours.unit = "GPU-hours"  # type: ignore[attr-defined]


class PhillyTopologyReplay:
    """Full Philly at 6x on a SuperPOD-shaped cluster (312 x 8 H100, 4 per rack, 8 racks per spine), jobs of
    16+ GPUs required in one spine: Kueue TAS, KAI's topology plugin and Volcano's HyperNodes against the
    topology-blind baseline (binpack).

    Issue 10's target: topology-aware placement within 2x of the blind replay's time. kai-tas places the jobs
    without a request by KAI's binpack node order (``kai_binpack``, a scan of every node), not the fit trees.
    ``kueue-tas-slices``: Kueue TAS with the same jobs in PodSet slices of 2 pods per rack (the comparison
    sort of the sliced search).
    """

    params: ClassVar[list[list[str]]] = [
        ["topology-blind", "kueue-tas", "kueue-tas-slices", "kai-tas", "volcano-hypernode"]
    ]
    param_names: ClassVar[list[str]] = ["preset"]
    timeout = 900
    number = 1
    repeat = (1, 5, 120.0)
    warmup_time = 0.0

    def setup(self, preset: str) -> None:
        sliced = preset == "kueue-tas-slices"
        self.jobs = philly_jobs_with_topology_requests(slices=sliced)
        self.nodes = superpod_cluster()
        base = PRESETS["kueue-tas" if sliced else preset]
        self.policy = dataclasses.replace(base, spread_rate_nvlink=0.8, spread_rate_rack=0.9)
        warm_engine()

    def time_replay(self, preset: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def track_one_spine_pct(self, preset: str) -> float:
        jobs = simulate(self.jobs, self.nodes, self.policy, seed=SEED).jobs
        multi = jobs.filter(jobs["nodes_spanned"] > 1)
        return 100.0 * float((multi["spines_spanned"] == 1).mean() or 0.0)

    track_one_spine_pct.unit = "%"  # type: ignore[attr-defined]


class PhillyNumaReplay:
    """Full Philly at 6x on 312 DGX H100 servers (two NUMA nodes of 4 GPUs each): the kubelet Topology
    Manager's restricted and single-numa-node policies behind a NUMA-blind scheduler, and single-numa-node
    behind a NUMA-aware one (NodeResourceTopologyMatch), against the blind baseline (sweep ``philly-numa``).

    Kubelet admission re-picks each placed pod's GPUs by NUMA hint; a rejection undoes the gang and backs it
    off. The NUMA-aware scheduler scans every node per pod (no fit trees).
    """

    params: ClassVar[list[list[str]]] = [
        ["topology-blind", "kubelet-restricted", "kubelet-single-numa", "numa-aware"]
    ]
    param_names: ClassVar[list[str]] = ["preset"]
    timeout = 900
    number = 1
    repeat = (1, 5, 120.0)
    warmup_time = 0.0

    def setup(self, preset: str) -> None:
        self.jobs = scale_load(philly_jobs(), 6.0)
        self.nodes = superpod_cluster()
        self.policy = PRESETS[preset]
        warm_engine()

    def time_replay(self, preset: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def track_admission_failures(self, preset: str) -> int:
        jobs = simulate(self.jobs, self.nodes, self.policy, seed=SEED).jobs
        return int(jobs["admission_failures"].sum())

    track_admission_failures.unit = "rejections"  # type: ignore[attr-defined]


class SyntheticReplay:
    """Synthetic Philly-like traces (Poisson arrivals, resampled demands) on a cluster sized for them."""

    params: ClassVar[list[list[int]]] = [SYNTHETIC_SIZES]
    param_names: ClassVar[list[str]] = ["n_jobs"]
    timeout = 1800
    number = 1
    repeat = (1, 3, 60.0)
    rounds = 1
    warmup_time = 0.0

    def setup(self, n_jobs: int) -> None:
        self.jobs, self.nodes = synthetic_inputs(n_jobs)
        self.policy = PRESETS[SYNTHETIC_PRESET]
        warm_engine()

    def time_replay(self, n_jobs: int) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def track_seconds_per_job(self, n_jobs: int) -> float:
        start = time.perf_counter()
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)
        return (time.perf_counter() - start) / n_jobs

    track_seconds_per_job.unit = "seconds"  # type: ignore[attr-defined]


class ScaleReplay:
    """Synthetic Philly-mix jobs offering all of 12,500 x 8 GPUs (100,000): at 10M queues form (issue 46: 10M
    jobs in <= 60 s and <= 4 GB under ``fifo`` and ``gang-binpack``); 1M beside it for the cost per job
    (``common.SCALE_LOAD`` says why 1.0, not 0.8).

    ``peakmem_replay`` is the benchmark process's peak (the jobs table made in ``setup`` included). A size
    this machine has not the memory for (the run's own estimate, :mod:`gpureplay.replay.memory`) is skipped,
    and so is 10M unless ``GPUREPLAY_BENCH_SCALE=1`` (``make bench-scale``): it takes minutes per preset.
    No ``track_seconds_per_job``: ``time_replay`` / ``n_jobs`` is that figure, and a third 10M replay per
    preset would add minutes to ``make bench``.
    """

    params: ClassVar[list[list[int] | list[str]]] = [SCALE_SIZES, SCALE_PRESETS]
    param_names: ClassVar[list[str]] = ["n_jobs", "preset"]
    timeout = 3600
    number = 1
    repeat = (1, 1, 60.0)
    rounds = 1
    warmup_time = 0.0

    def setup(self, n_jobs: int, preset: str) -> None:
        skip_unless_opted_in(n_jobs)
        self.policy = PRESETS[preset]
        self.jobs, self.nodes = offered_load_inputs(n_jobs)
        skip_unless_memory_for(self.jobs, self.nodes, self.policy)
        warm_engine()

    def time_replay(self, n_jobs: int, preset: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def peakmem_replay(self, n_jobs: int, preset: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)


class PhillyNodeShape:
    """The first 20,000 Philly jobs under ``fifo`` on the PAI simulator's default cluster (one node of 6,496
    GPUs) and on the same GPUs as 812 8-GPU servers (issue 46: the cost per job independent of the GPUs per
    node and the node count)."""

    params: ClassVar[list[list[str]]] = [list(NODE_SHAPES)]
    param_names: ClassVar[list[str]] = ["shape"]
    timeout = 900
    number = 1
    repeat = (1, 5, 60.0)
    warmup_time = 0.0

    def setup(self, shape: str) -> None:
        self.jobs = philly_first_jobs()
        self.nodes = node_shape_cluster(shape)
        self.policy = PRESETS["fifo"]
        warm_engine()

    def time_replay(self, shape: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def peakmem_replay(self, shape: str) -> None:
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)

    def track_seconds_per_job(self, shape: str) -> float:
        start = time.perf_counter()
        simulate(self.jobs, self.nodes, self.policy, seed=SEED)
        return (time.perf_counter() - start) / NODE_SHAPE_JOBS

    track_seconds_per_job.unit = "seconds"  # type: ignore[attr-defined]
