"""Fixed seeds and input builders shared by the benchmarks.

Append-only: a benchmark's history is only comparable while its inputs stay the
same, so add new seeds, sizes and builders instead of changing these.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

import polars as pl

from gpureplay.cluster.homogeneous import homogeneous_nodes
from gpureplay.cluster.philly import philly_nodes
from gpureplay.schedulers.policy import Policy, QuotaSource
from gpureplay.schedulers.presets import preset, preset_names
from gpureplay.traces.philly import load_philly
from gpureplay.workload.synthetic import default_mix, poisson_jobs

#: Seed of every synthetic trace and of every replay.
SEED = 20_240_601

#: Synthetic trace sizes: the 1M vs 10k time per job shows whether cost grows with the queue.
SYNTHETIC_SIZES = [10_000, 100_000, 1_000_000]

#: Homogeneous cluster for synthetic traces: 8-GPU servers of the Philly large-server class,
#: as many as keep the offered GPU load at this fraction of capacity.
SYNTHETIC_GPU_MODEL = "PHILLY-24GB"
SYNTHETIC_GPUS_PER_NODE = 8
SYNTHETIC_UTILISATION = 0.8

#: The scheduler presets (conf/scheduler/*.yaml), as Policy objects.
PRESETS: dict[str, Policy] = {name: preset(name) for name in preset_names()}

#: Presets the Philly replay is timed under: head-of-line FIFO, gang binpack, EASY backfill.
PHILLY_PRESETS = ["fifo", "gang-binpack", "easy-backfill"]

#: Preset of the synthetic scaling benchmarks (the default scheduler of conf/config.yaml).
SYNTHETIC_PRESET = "gang-binpack"


def philly_jobs() -> pl.DataFrame:
    """The full bundled Philly job table (82,247 jobs), canonical and validated."""
    return load_philly().jobs


def philly_cluster() -> pl.DataFrame:
    """The Philly cluster from its official machine list (552 nodes, 2,490 GPUs)."""
    return philly_nodes().nodes


def offered_gpus(jobs: pl.DataFrame) -> float:
    """Mean GPUs the trace asks for: GPU-seconds of all jobs over the arrival span."""
    gpu_seconds = (pl.col("num_pods") * pl.col("gpu_milli") / 1000 * pl.col("duration")).sum()
    span = pl.col("submit_time").max() - pl.col("submit_time").min()
    return float(jobs.select(gpu_seconds / pl.max_horizontal(span, pl.lit(1.0))).item())


def cluster_for_load(jobs: pl.DataFrame) -> pl.DataFrame:
    """Homogeneous 8-GPU servers sized so the offered load is ``SYNTHETIC_UTILISATION`` of capacity.

    At least as many servers as the widest job needs.
    """
    gpus_per_job = pl.col("num_pods") * pl.col("gpu_milli") / 1000
    widest = float(jobs.select(gpus_per_job.max()).item())
    needed = offered_gpus(jobs) / SYNTHETIC_UTILISATION
    servers = max(math.ceil(needed / SYNTHETIC_GPUS_PER_NODE), math.ceil(widest / SYNTHETIC_GPUS_PER_NODE), 1)
    return homogeneous_nodes(servers, SYNTHETIC_GPUS_PER_NODE, SYNTHETIC_GPU_MODEL).nodes


def synthetic_inputs(n_jobs: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``n_jobs`` synthetic Philly-like jobs (seed ``SEED``) and a cluster sized for them.

    The jobs arrive at Philly's own rate (``poisson_jobs`` at the mix's rate: the same jobs as before
    ``trace.load`` became offered load on the run's cluster), so this benchmark's history stays comparable.
    """
    jobs = poisson_jobs(n_jobs, SEED, default_mix().rate)
    return jobs, cluster_for_load(jobs)


def warm_engine() -> None:
    """Compile (or load from cache) the engine's kernels with a tiny replay under every preset.

    Call from ``setup()`` so that asv never times numba compilation.
    """
    from gpureplay.replay.simulate import simulate, warm_up

    jobs = poisson_jobs(20, SEED, default_mix().rate)
    nodes = homogeneous_nodes(4, SYNTHETIC_GPUS_PER_NODE, SYNTHETIC_GPU_MODEL).nodes
    for policy in PRESETS.values():
        if policy.preemption.name == "reclaim_idle":
            warm_up(policy)  # its victims' PriorityClasses and usage come with the workload
            continue
        simulate(jobs, nodes, policy, seed=SEED)


#: Presets timed on Philly at 6x with the ``notebooks-idle`` workload: kube's own preemption against
#: ReclaimIdleResource (``reclaim-idle``), which evicts the notebooks that went idle.
PHILLY_IDLE_PRESETS = ["kube-default", "reclaim-idle"]


def philly_with_idle_notebooks(name: str) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """``(jobs, nodes, policy)`` of ``gpureplay run trace=philly cluster=philly scheduler=<name>
    workload=notebooks-idle workload.load=6`` (the ``philly-reclaim-idle`` sweep), as the CLI builds them."""
    from gpureplay.config import compose_config
    from gpureplay.experiment import prepare_inputs

    overrides = ["trace=philly", "cluster=philly", f"scheduler={name}", "workload=notebooks-idle"]
    inputs = prepare_inputs(compose_config([*overrides, "workload.load=6"]))
    return inputs.jobs, inputs.cluster.nodes, inputs.policy


#: Presets with priority preemption, timed on Philly with a 20% high-priority mix (engine v2).
PHILLY_PREEMPT_PRESETS = ["gang-binpack-preempt", "kube-default-preempt", "volcano-preempt"]


def philly_jobs_with_priorities() -> pl.DataFrame:
    """Full Philly at 6x with the ``priority-20pct`` workload's mix and 30-min checkpoints (seed ``SEED``).

    At the trace's own rate nothing waits, so nothing would be preempted.
    """
    from gpureplay.workload.priorities import (
        Checkpointing,
        PriorityClass,
        assign_checkpointing,
        assign_priority_classes,
    )
    from gpureplay.workload.transforms import scale_load

    mix = [PriorityClass("high", 1000, 0.2, preemptible=False), PriorityClass("low", 0, 0.8)]
    jobs = assign_priority_classes(scale_load(philly_jobs(), 6.0), mix, SEED)
    return assign_checkpointing(jobs, Checkpointing(1800.0))


def philly_jobs_with_topology_requests(slices: bool = False) -> pl.DataFrame:
    """Full Philly at 6x with the ``load-6x-block16`` workload's request (jobs of 16+ GPUs: one spine);
    with ``slices``, Kueue PodSet slices of 2 pods per rack too (Philly's 3-pod jobs are then rejected)."""
    from gpureplay.workload.topology_requests import TopologyRequest, assign_topology_requests
    from gpureplay.workload.transforms import scale_load

    rule = TopologyRequest(16, "required", "spine")
    if slices:
        rule = TopologyRequest(16, "required", "spine", slice_level="rack", slice_size=2)
    rules = [rule]
    return assign_topology_requests(scale_load(philly_jobs(), 6.0), rules)


def superpod_cluster() -> pl.DataFrame:
    """312 DGX H100 servers as the ``philly-tas`` sweep: 4 per rack, 8 racks per spine."""
    return homogeneous_nodes(
        312, 8, "H100-80GB", cpu_milli=112_000, mem_mib=2_097_152, rack_size=4, racks_per_spine=8
    ).nodes


#: Presets the multi-tenant queue replay is timed under: no quotas, and Kueue, Volcano and KAI with derived
#: and real quotas (Volcano also with its reclaim action).
PHILLY_QUEUE_PRESETS = [
    "gang-binpack", "kueue", "kueue-fair", "kueue-philly-vcs", "kueue-pods-ready", "volcano",
    "volcano-philly-vcs", "volcano-philly-vcs-reclaim", "kai", "kai-philly-vcs",
]  # fmt: skip

#: Load factor of the queue replay: at the trace's own rate few jobs wait and quotas rarely bind.
PHILLY_QUEUE_LOAD = 6.0


#: Kueue manifests with two ResourceFlavors (one per Philly machine type) timed on Philly at
#: PHILLY_QUEUE_LOAD: Kueue's default whenCanBorrow (MayStopSearch) and TryNextFlavor.
PHILLY_FLAVOR_EXAMPLES = ["kueue-philly-flavors", "kueue-philly-flavors-try-next"]


def kueue_manifest_policy(folder: str) -> Policy:
    """The ``kueue`` preset reading its queue tree from ``examples/manifests/<folder>``."""
    path = Path(__file__).resolve().parents[2] / "examples" / "manifests" / folder
    return dataclasses.replace(PRESETS["kueue"], quotas=QuotaSource.manifests, manifests=str(path))


#: Issue 46's scale shape: 12,500 servers of 8 GPUs (100,000 GPUs) offered all of their capacity by
#: synthetic Philly-mix jobs (``trace.load`` is offered load on the cluster). At 0.8 (the issue's floor) no
#: job of 10M waits on so many GPUs (an M/G/c queue with c = 100,000 is far from heavy traffic at 0.8); at
#: 1.0 43% of 10M jobs wait (44,730 pending at most). 1M jobs span 6 days, too short for Philly's long jobs
#: to fill the GPUs: none waits, and the 1M point is the cost-per-job reference (docs/inputs.md).
SCALE_NODES = 12_500
SCALE_LOAD = 1.0

#: Job counts of the scale replay: the issue's 10M target, and 1M beside it for the cost per job.
SCALE_SIZES = [1_000_000, 10_000_000]

#: Presets of the scale replay: head-of-line FIFO and the default gang binpack.
SCALE_PRESETS = ["fifo", "gang-binpack"]

#: Environment variable that opts ``make bench`` in to the 10M-job sizes (``make bench-scale`` sets it): each
#: takes minutes and about 13 GB, so a plain ``make bench`` reports them as n/a and stays within minutes.
SCALE_ENV = "GPUREPLAY_BENCH_SCALE"

#: Job counts from which a scale benchmark runs only when :data:`SCALE_ENV` is ``1``.
OPT_IN_JOBS = 10_000_000


def skip_unless_opted_in(n_jobs: int) -> None:
    """Skip (``NotImplementedError``: asv's "n/a") a size of at least :data:`OPT_IN_JOBS` jobs unless
    ``$GPUREPLAY_BENCH_SCALE`` is ``1``; checked before the jobs are generated, which alone takes a minute.

    Examples
    --------
    >>> skip_unless_opted_in(1_000_000)
    """
    if n_jobs >= OPT_IN_JOBS and os.environ.get(SCALE_ENV) != "1":
        raise NotImplementedError(f"{n_jobs:,} jobs run only with {SCALE_ENV}=1 (make bench-scale)")


def offered_load_inputs(n_jobs: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``n_jobs`` synthetic jobs (seed ``SEED``) offering ``SCALE_LOAD`` on ``SCALE_NODES`` 8-GPU servers, and
    those servers: ``gpureplay run trace=synthetic trace.n_jobs=N trace.load=1.0 cluster=homogeneous
    cluster.nodes=12500 cluster.gpus_per_node=8`` as the run builds them (with ``seed=20240601``)."""
    from gpureplay.workload.synthetic import synthetic_jobs

    gpus = SCALE_NODES * SYNTHETIC_GPUS_PER_NODE
    jobs = synthetic_jobs(n_jobs, SEED, load=SCALE_LOAD, gpus=gpus)
    return jobs, homogeneous_nodes(SCALE_NODES, SYNTHETIC_GPUS_PER_NODE, SYNTHETIC_GPU_MODEL).nodes


def skip_unless_memory_for(jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy) -> None:
    """Skip the benchmark (``NotImplementedError``, asv's "n/a") when this machine has not the memory the
    replay's estimate asks (:mod:`gpureplay.replay.memory`, as ``gpureplay run`` checks it), rather than
    swap or be killed."""
    from gpureplay.errors import InputError
    from gpureplay.replay.memory import check_memory, cluster_size, estimate_memory, run_sizes

    size = cluster_size(nodes)
    estimate = estimate_memory(run_sizes(jobs, size, policy, 3600.0, 100_000), policy, size.keys)
    try:
        check_memory(estimate, None)
    except InputError as err:
        raise NotImplementedError(f"not enough memory here: {err}") from err


#: The PAI simulator's default cluster (one node of 6,496 GPUs) and the same GPUs as 8-GPU servers.
NODE_SHAPES = {"1x6496": (1, 6_496), "812x8": (812, 8)}

#: Real Philly jobs replayed on each node shape: the first 20,000 by submit time (``workload.max_jobs``).
NODE_SHAPE_JOBS = 20_000


def philly_first_jobs(n_jobs: int = NODE_SHAPE_JOBS) -> pl.DataFrame:
    """The first ``n_jobs`` Philly jobs by submit time, as ``workload.max_jobs=N`` keeps them."""
    from gpureplay.workload.transforms import first_jobs

    return first_jobs(philly_jobs(), n_jobs)


def node_shape_cluster(shape: str) -> pl.DataFrame:
    """``NODE_SHAPES[shape]``: that many nodes of that many Philly large-server GPUs."""
    nodes, per_node = NODE_SHAPES[shape]
    return homogeneous_nodes(nodes, per_node, SYNTHETIC_GPU_MODEL).nodes
