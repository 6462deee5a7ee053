"""A slow, obviously-correct replay simulator: the oracle the numba engine is tested against.

Every rule of the engine's v1 semantics is written here in the plainest way
Python allows: the cluster is a list of :class:`Node` objects, the queue is
re-sorted every cycle, every node is scanned for every pod, and "undo" or
"project into the future" means copying the whole cluster state. Section
names in the comments (``[Resources]``, ``[Gang mode]``, ...) are the headings
of the engine semantics spec (``docs/engine-semantics.md``), so a reader can check each line against it.

Speed is not a goal; it only has to be fast enough for clusters of a few
nodes and traces of a few dozen jobs (the hypothesis differential tests).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from gpureplay.replay.simulate import Replay  # the result type both simulators return
from gpureplay.schedulers.policy import Backfill, GangMode, Placement, Policy, QueueOrder
from gpureplay.traces.schema import UNKNOWN_CAPACITY

__all__ = [
    "JOB_RESULT_SCHEMA",
    "TIMELINE_SCHEMA",
    "Replay",
    "SplitMix64",
    "rejection_reason",
    "simulate",
]

WHOLE_GPU = 1000  # milli-GPU of one whole card

JOB_RESULT_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "start_time": pl.Float64(),
    "finish_time": pl.Float64(),
    "state": pl.String(),
    "reject_reason": pl.String(),
    "nodes_spanned": pl.Int32(),
    "held_milli": pl.Int64(),
    "preemptions": pl.Int32(),
}

TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "time": pl.Float64(),
    "allocated_gpus": pl.Int32(),
    "allocated_milli": pl.Int64(),
    "pending_jobs": pl.Int32(),
    "running_jobs": pl.Int32(),
    "fragmented_gpus": pl.Int32(),
}

MASK64 = (1 << 64) - 1

DEFAULT_MAX_SAMPLES = 100_000  # [Timeline row (sampled)] most rows before the interval doubles


class SplitMix64:
    """The splitmix64 generator of [RNG] (Steele, Lea & Flood 2014; Vigna's reference C code).

    Python integers are unbounded, so every step is reduced modulo 2**64 by hand.
    """

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


# --------------------------------------------------------------------------------------------------
# Cluster state  [Resources]
# --------------------------------------------------------------------------------------------------


def _capacity(value: int) -> float:
    """UNKNOWN_CAPACITY never constrains: model it as infinitely large."""
    return math.inf if value == UNKNOWN_CAPACITY else float(value)


@dataclass
class Gpu:
    free_milli: int
    free_mem: float


@dataclass
class Node:
    index: int
    model: str | None
    gpu_mem: float  # memory of one GPU (node gpu_mem_mib)
    free_cpu: float
    free_mem: float  # node memory, MiB
    gpus: list[Gpu]

    def free_gpu_milli(self) -> int:
        return sum(g.free_milli for g in self.gpus)

    def wholly_free(self) -> list[int]:
        return [i for i, g in enumerate(self.gpus) if g.free_milli == WHOLE_GPU]


Cluster = list[Node]


@dataclass(frozen=True)
class Pod:
    """What one pod of a job asks for (all pods of a job are identical)."""

    milli: int
    gpu_mem: int  # per GPU; null in the trace means 0
    cpu: int
    mem: int
    models: frozenset[str] | None  # None: any model


@dataclass(frozen=True)
class PodPlacement:
    """Where one pod went, with what it took, so it can be released exactly."""

    node: int
    gpus: tuple[int, ...]  # whole pod: its k GPUs; fractional: one GPU; gpu_milli 0: none
    milli: int  # taken from each GPU in ``gpus``
    gpu_mem: float  # taken from each GPU in ``gpus``
    cpu: int
    mem: int
    time: float  # when it was placed (for the accounting invariant)


def empty_cluster(nodes: list[dict[str, Any]]) -> Cluster:
    """The cluster with nothing allocated; node index = row of the nodes table."""
    cluster: Cluster = []
    for index, row in enumerate(nodes):
        gpu_mem = float(row["gpu_mem_mib"])
        cluster.append(
            Node(
                index=index,
                model=row["gpu_model"],
                gpu_mem=gpu_mem,
                free_cpu=_capacity(row["cpu_milli"]),
                free_mem=_capacity(row["mem_mib"]),
                gpus=[Gpu(WHOLE_GPU, gpu_mem) for _ in range(row["num_gpus"])],
            )
        )
    return cluster


def model_allowed(node: Node, pod: Pod) -> bool:
    return pod.models is None or node.model in pod.models


def fitting_gpus(node: Node, pod: Pod) -> list[int]:
    """GPUs of ``node`` one GPU-using pod could use, lowest index first."""
    if pod.milli >= WHOLE_GPU:
        return node.wholly_free()
    return [i for i, g in enumerate(node.gpus) if g.free_milli >= pod.milli and g.free_mem >= pod.gpu_mem]


def pod_fits(node: Node, pod: Pod) -> bool:
    """[Resources] "A pod ... fits node n iff ..."."""
    if node.free_cpu < pod.cpu or node.free_mem < pod.mem:
        return False
    if pod.milli == 0:
        return True  # GPU model constraint ignored, GPU-less nodes allowed
    if not model_allowed(node, pod):
        return False
    if pod.milli < WHOLE_GPU:
        return len(fitting_gpus(node, pod)) > 0
    k = pod.milli // WHOLE_GPU
    # A whole GPU is wholly free, so its memory is the node's per-GPU memory.
    return len(node.wholly_free()) >= k and node.gpu_mem >= pod.gpu_mem


def choose_gpu(node: Node, pod: Pod, gpu_policy: Placement, rng: SplitMix64 | None) -> int:
    """[Resources] GPU choice for a fractional pod among the GPUs that fit."""
    candidates = fitting_gpus(node, pod)
    if gpu_policy is Placement.first_fit:
        return candidates[0]
    if gpu_policy is Placement.best_fit:
        # min() keeps the first of equal keys, i.e. the lowest index.
        return min(candidates, key=lambda i: node.gpus[i].free_milli - pod.milli)
    if gpu_policy is Placement.worst_fit:
        return max(candidates, key=lambda i: (node.gpus[i].free_milli - pod.milli, -i))
    assert rng is not None
    return candidates[rng() % len(candidates)]


def choose_node(cluster: Cluster, pod: Pod, node_policy: Placement, rng: SplitMix64 | None) -> int | None:
    """[Resources] Node choice among the nodes the pod fits; None when it fits nowhere."""
    candidates = [n.index for n in cluster if pod_fits(n, pod)]
    if not candidates:
        return None
    if node_policy is Placement.first_fit:
        return candidates[0]

    def free_after(i: int) -> int:
        # Every kind of pod removes exactly ``milli`` from its node's free GPU milli.
        return cluster[i].free_gpu_milli() - pod.milli

    if node_policy is Placement.best_fit:
        return min(candidates, key=free_after)
    if node_policy is Placement.worst_fit:
        return max(candidates, key=lambda i: (free_after(i), -i))
    assert rng is not None
    # Drawn whenever the policy is random and some node fits, even a single one.
    return candidates[rng() % len(candidates)]


def place_pod(
    cluster: Cluster,
    pod: Pod,
    node_policy: Placement,
    gpu_policy: Placement,
    rng: SplitMix64 | None,
    time: float,
) -> PodPlacement | None:
    """Place one pod (node choice first, then GPU choice), mutating ``cluster``."""
    index = choose_node(cluster, pod, node_policy, rng)
    if index is None:
        return None
    node = cluster[index]
    gpus: tuple[int, ...]
    if pod.milli == 0:
        gpus, milli, gpu_mem = (), 0, 0.0
    elif pod.milli >= WHOLE_GPU:
        # The k lowest-index wholly free GPUs, whatever gpu_placement says.
        gpus = tuple(node.wholly_free()[: pod.milli // WHOLE_GPU])
        milli, gpu_mem = WHOLE_GPU, node.gpu_mem
    else:
        gpus = (choose_gpu(node, pod, gpu_policy, rng),)
        milli, gpu_mem = pod.milli, float(pod.gpu_mem)
    placement = PodPlacement(index, gpus, milli, gpu_mem, pod.cpu, pod.mem, time)
    take(cluster, placement)
    return placement


def take(cluster: Cluster, placement: PodPlacement) -> None:
    """Subtract a placement's resources (whole GPUs end at free_milli 0, free_mem 0)."""
    node = cluster[placement.node]
    node.free_cpu -= placement.cpu
    node.free_mem -= placement.mem
    for g in placement.gpus:
        node.gpus[g].free_milli -= placement.milli
        node.gpus[g].free_mem -= placement.gpu_mem


def release(cluster: Cluster, placement: PodPlacement) -> None:
    node = cluster[placement.node]
    node.free_cpu += placement.cpu
    node.free_mem += placement.mem
    for g in placement.gpus:
        node.gpus[g].free_milli += placement.milli
        node.gpus[g].free_mem += placement.gpu_mem


def clone(cluster: Cluster) -> Cluster:
    """An independent copy of the cluster state (``copy.deepcopy`` is the same, only slower)."""
    return [
        Node(
            n.index,
            n.model,
            n.gpu_mem,
            n.free_cpu,
            n.free_mem,
            [Gpu(g.free_milli, g.free_mem) for g in n.gpus],
        )
        for n in cluster
    ]


def place_gang(
    cluster: Cluster,
    pod: Pod,
    num_pods: int,
    node_policy: Placement,
    gpu_policy: Placement,
    rng: SplitMix64 | None,
    time: float,
) -> list[PodPlacement] | None:
    """[Gang mode] All pods or none; on failure the cluster is restored exactly (the RNG is not)."""
    before = clone(cluster)
    placements: list[PodPlacement] = []
    for _ in range(num_pods):
        placement = place_pod(cluster, pod, node_policy, gpu_policy, rng, time)
        if placement is None:
            cluster[:] = before
            return None
        placements.append(placement)
    return placements


def gang_fits(cluster: Cluster, pod: Pod, num_pods: int) -> bool:
    """Would the whole job fit on ``cluster``? (first_fit on a copy; never touches an RNG)."""
    trial = clone(cluster)
    return place_gang(trial, pod, num_pods, Placement.first_fit, Placement.first_fit, None, 0.0) is not None


def rejection_reason(empty: Cluster, pod: Pod, num_pods: int) -> str | None:
    """[Rejection at arrival] The first check the job fails on the EMPTY cluster, or None."""
    if pod.milli > 0 and not any(len(n.gpus) > 0 and model_allowed(n, pod) for n in empty):
        return "no_model"
    if not any(pod_fits(n, pod) for n in empty):
        return "pod_too_large"
    total = 0
    for node in empty:
        # Greedy packing of identical pods on this empty node (capped: a 0-GPU pod
        # on a node with unknown CPU/memory would fit forever).
        alone = clone([node])
        alone[0].index = 0
        count = 0
        while count < num_pods and place_pod(alone, pod, Placement.first_fit, Placement.first_fit, None, 0.0):
            count += 1
        total += count
    if total < num_pods:
        return "gang_too_large"
    return None


# --------------------------------------------------------------------------------------------------
# Jobs
# --------------------------------------------------------------------------------------------------


@dataclass
class Job:
    row: int  # position in the input table
    job_id: int
    submit: float
    duration: float
    num_pods: int
    priority: int
    pod: Pod
    state: str = "future"  # future -> pending -> running -> finished, or rejected
    reject_reason: str | None = None
    start: float | None = None
    finish: float | None = None
    placements: list[PodPlacement] = field(default_factory=list)
    nodes_spanned: int = 0


def _jobs_from_table(jobs: pl.DataFrame) -> list[Job]:
    out = []
    for row, r in enumerate(jobs.iter_rows(named=True)):
        models = r["gpu_models"]
        pod = Pod(
            milli=int(r["gpu_milli"]),
            gpu_mem=int(r["gpu_mem_mib"] or 0),  # [Inputs] null gpu_mem_mib -> 0
            cpu=int(r["cpu_milli"]),
            mem=int(r["mem_mib"]),
            models=None if models is None else frozenset(models),  # null -> any model
        )
        out.append(
            Job(
                row=row,
                job_id=int(r["job_id"]),
                submit=float(r["submit_time"]),
                duration=float(r["duration"]),
                num_pods=int(r["num_pods"]),
                priority=int(r["priority"]),
                pod=pod,
            )
        )
    return out


def queue_key(job: Job, order: QueueOrder) -> tuple[float, ...]:
    """[Queue order (gang mode, per cycle)]."""
    if order is QueueOrder.fifo:
        return (job.submit, job.job_id)
    if order is QueueOrder.sjf:
        return (job.duration, job.submit, job.job_id)
    return (-job.priority, job.submit, job.job_id)


# --------------------------------------------------------------------------------------------------
# The replay
# --------------------------------------------------------------------------------------------------


class _Replay:
    def __init__(
        self,
        jobs: list[Job],
        nodes: list[dict[str, Any]],
        policy: Policy,
        seed: int,
        debug: bool,
    ) -> None:
        self.jobs = jobs
        self.empty = empty_cluster(nodes)
        self.cluster = empty_cluster(nodes)
        self.policy = policy
        self.rng = SplitMix64(seed)
        self.debug = debug
        self.now = 0.0
        self.cycles = 0

    # -- views ---------------------------------------------------------------------------------

    def with_state(self, state: str) -> list[Job]:
        return [j for j in self.jobs if j.state == state]

    def pending_in_queue_order(self) -> list[Job]:
        return sorted(self.with_state("pending"), key=lambda j: queue_key(j, self.policy.queue_order))

    def pod_queue(self) -> list[tuple[Job, int]]:
        """[Pod-by-pod mode] Unplaced pods of pending jobs, (-priority, submit_time, pod_index, job_id)."""
        pods = [
            (job, i) for job in self.with_state("pending") for i in range(len(job.placements), job.num_pods)
        ]
        return sorted(pods, key=lambda p: (-p[0].priority, p[0].submit, p[1], p[0].job_id))

    # -- state changes -------------------------------------------------------------------------

    def start(self, job: Job) -> None:
        job.state = "running"
        job.start = self.now
        job.finish = self.now + job.duration
        job.nodes_spanned = len({p.node for p in job.placements})

    def complete(self, job: Job) -> None:
        for placement in job.placements:
            release(self.cluster, placement)
        job.state = "finished"

    def admit(self, job: Job) -> None:
        reason = rejection_reason(self.empty, job.pod, job.num_pods)
        if reason is None:
            job.state = "pending"
        else:
            job.state = "rejected"
            job.reject_reason = reason

    def try_gang(self, job: Job) -> list[PodPlacement] | None:
        p = self.policy
        return place_gang(
            self.cluster, job.pod, job.num_pods, p.node_placement, p.gpu_placement, self.rng, self.now
        )

    # -- scheduling cycle ----------------------------------------------------------------------

    def cycle(self) -> None:
        self.cycles += 1
        if self.policy.gang is GangMode.pod_by_pod:
            self.pod_by_pod_cycle()
        elif self.policy.backfill is Backfill.none:
            self.head_of_line_cycle()
        elif self.policy.backfill is Backfill.skip:
            self.skip_cycle(self.pending_in_queue_order(), failed=0)
        else:
            self.easy_cycle()
        if self.debug:
            self.check_capacity()

    def head_of_line_cycle(self) -> None:
        """[Gang mode] backfill none: stop at the first job that does not fit."""
        for job in self.pending_in_queue_order():
            placements = self.try_gang(job)
            if placements is None:
                return
            job.placements = placements
            self.start(job)

    def skip_cycle(self, order: list[Job], failed: int) -> None:
        """[Gang mode] backfill skip: start every job that fits; stop after ``backfill_depth`` failures."""
        depth = self.policy.backfill_depth
        for job in order:
            if depth > 0 and failed >= depth:
                return
            placements = self.try_gang(job)
            if placements is None:
                failed += 1
                continue
            job.placements = placements
            self.start(job)

    def easy_cycle(self) -> None:
        """[Gang mode] EASY backfill (Lifka 1995): only the first blocked job H holds a reservation."""
        order = self.pending_in_queue_order()
        for position, head in enumerate(order):
            placements = self.try_gang(head)
            if placements is not None:
                head.placements = placements
                self.start(head)
                continue
            rest = order[position + 1 :]
            shadow, projected = self.reservation(head)
            if shadow is None or projected is None:
                # H cannot fit even on the projected empty state: no reservation, like skip.
                self.skip_cycle(rest, failed=1)
                return
            if self.policy.backfill_depth > 0:
                rest = rest[: self.policy.backfill_depth]
            for job in rest:
                before = clone(self.cluster)
                placements = self.try_gang(job)
                if placements is None:
                    continue
                if self.now + job.duration <= shadow:
                    job.placements = placements
                    self.start(job)
                    continue
                # J ends after S: its resources count as held at S on the projected state.
                with_job = clone(projected)
                for placement in placements:
                    take(with_job, placement)
                if gang_fits(with_job, head.pod, head.num_pods):
                    projected = with_job
                    job.placements = placements
                    self.start(job)
                else:
                    self.cluster[:] = before  # undo J; the RNG is not rewound
            return

    def reservation(self, head: Job) -> tuple[float | None, Cluster | None]:
        """Shadow time S and the projected state at S for the blocked head job H."""
        projected = clone(self.cluster)
        running = sorted(self.with_state("running"), key=lambda j: (j.finish, j.job_id))
        for job in running:
            for placement in job.placements:
                release(projected, placement)
            # Stop at the first release that lets H fit: other jobs ending at the same time
            # stay held in the projected state.
            if gang_fits(projected, head.pod, head.num_pods):
                return job.finish, projected
        return None, None

    def pod_by_pod_cycle(self) -> None:
        """[Pod-by-pod mode] One pass over the pod queue; placed pods stay placed."""
        p = self.policy
        for job, _pod_index in self.pod_queue():
            placement = place_pod(
                self.cluster, job.pod, p.node_placement, p.gpu_placement, self.rng, self.now
            )
            if placement is None:
                continue
            job.placements.append(placement)
            if len(job.placements) == job.num_pods:
                self.start(job)

    # -- measurements --------------------------------------------------------------------------

    def allocated_milli(self) -> int:
        return sum(WHOLE_GPU - g.free_milli for n in self.cluster for g in n.gpus)

    def sample(self) -> dict[str, float | int]:
        """[Timeline row (sampled)]."""
        gpus = [g for n in self.cluster for g in n.gpus]
        pending = self.with_state("pending")
        if self.policy.gang is GangMode.pod_by_pod:
            queued = [job for job, _ in self.pod_queue()]
        else:
            queued = self.pending_in_queue_order()
        gpu_pods = [job.pod for job in queued if job.pod.milli > 0]
        fragmented = 0
        if gpu_pods:
            smallest = min(gpu_pods, key=lambda pod: pod.milli)  # first of equals = queue order
            fragmented = sum(len(n.wholly_free()) for n in self.cluster if not pod_fits(n, smallest))
        return {
            "time": self.now,
            "allocated_gpus": sum(1 for g in gpus if g.free_milli < WHOLE_GPU),
            "allocated_milli": self.allocated_milli(),
            "pending_jobs": len(pending),
            "running_jobs": len(self.with_state("running")),
            "fragmented_gpus": fragmented,
        }

    def check_capacity(self) -> None:
        """Nothing allocated twice or beyond capacity."""
        for node in self.cluster:
            assert node.free_cpu >= 0 and node.free_mem >= 0, node
            for g in node.gpus:
                assert 0 <= g.free_milli <= WHOLE_GPU and 0 <= g.free_mem <= node.gpu_mem, node

    # -- event loop  [Time and events] -------------------------------------------------------------

    def run(
        self,
        sample_interval: float,
        horizon: float | None,
        max_samples: int,
        window: tuple[float, float] | None,
    ) -> tuple[list[dict[str, float | int]], float, float, float]:
        """The event loop: (timeline rows, GPU milli-seconds, the same inside ``window``, interval used)."""
        periodic = self.policy.session_interval > 0
        arrivals = sorted(self.jobs, key=lambda j: (j.submit, j.job_id))
        next_arrival = 0  # index into ``arrivals``
        interval = sample_interval  # [Sample times] doubled when the timeline would exceed max_samples
        tick = 0  # next periodic cycle at tick * session_interval
        cycle_owed = False  # periodic: a change happened that no cycle has seen yet
        rows: list[dict[str, float | int]] = []
        gpu_milli_seconds = 0.0
        window_milli_seconds = 0.0

        while True:
            next_sample = len(rows) * interval  # [Sample times] sample k at k * interval, never +=
            candidates = [next_sample]
            if next_arrival < len(arrivals):
                candidates.append(arrivals[next_arrival].submit)
            candidates += [j.finish for j in self.with_state("running") if j.finish is not None]
            if periodic:
                candidates.append(tick * self.policy.session_interval)
            t = min(candidates)
            if horizon is not None and t > horizon:
                break  # the run ends at the last time processed, not at the horizon
            # allocated_milli is constant between events: integrate exactly.
            gpu_milli_seconds += self.allocated_milli() * (t - self.now)
            if window is not None:
                inside = min(t, window[1]) - max(self.now, window[0])
                window_milli_seconds += self.allocated_milli() * max(0.0, inside)
            self.now = t

            first_pass = True
            while True:
                changed = False
                # 1. completions, in job_id order
                for job in sorted(self.with_state("running"), key=lambda j: j.job_id):
                    if job.finish == t:
                        self.complete(job)
                        changed = True
                # 2. arrivals, in (submit_time, job_id) order
                while next_arrival < len(arrivals) and arrivals[next_arrival].submit == t:
                    self.admit(arrivals[next_arrival])
                    next_arrival += 1
                    changed = True  # a rejected arrival counts too
                cycle_owed = cycle_owed or changed
                # 3. scheduling cycle
                if periodic:
                    if t == tick * self.policy.session_interval:
                        self.cycle()
                        cycle_owed = False
                elif changed:
                    self.cycle()
                # 4. sample (once per time, in the first pass)
                if first_pass and t == next_sample and len(rows) == max_samples:
                    # One more row would exceed max_samples: keep the samples of the doubled grid.
                    interval *= 2
                    rows = rows[::2]
                    next_sample = len(rows) * interval
                if first_pass and t == next_sample:
                    rows.append(self.sample())
                first_pass = False
                # Jobs started now with duration 0 finish now: one more pass at the same t.
                if not any(j.finish == t for j in self.with_state("running")):
                    break

            if periodic and t == tick * self.policy.session_interval:
                tick += 1
            done = not self.with_state("running") and next_arrival == len(arrivals)
            if done and not (periodic and cycle_owed):
                break
        return rows, gpu_milli_seconds, window_milli_seconds, interval


def _final_state(job: Job) -> str:
    """[Time and events] Final states."""
    if job.state in ("finished", "rejected"):
        return job.state
    if job.state == "pending" and 0 < len(job.placements) < job.num_pods:
        return "deadlocked"
    return "unfinished"


def _accounted_milli_seconds(jobs: Iterable[Job], end: float) -> float:
    """[Accounting invariant] the per-job side: each placed pod holds from placement to its job's end."""
    total = 0.0
    for job in jobs:
        until = job.finish if job.state == "finished" and job.finish is not None else end
        total += sum((until - p.time) * job.pod.milli for p in job.placements)
    return total


def simulate(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    policy: Policy,
    *,
    seed: int = 0,
    sample_interval: float = 3600.0,
    horizon: float | None = None,
    window: tuple[float, float] | None = None,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    debug: bool = False,
) -> Replay:
    """Replay ``jobs`` on ``nodes`` under ``policy`` -- the reference semantics, slowly.

    Same signature and result as ``gpureplay.replay.simulate.simulate``.
    ``debug`` checks capacities after every cycle and the accounting invariant at the end.
    """
    if sample_interval <= 0 or max_samples < 1:
        raise ValueError("sample_interval must be > 0 and max_samples >= 1")
    job_list = _jobs_from_table(jobs)
    replay = _Replay(job_list, list(nodes.iter_rows(named=True)), policy, seed, debug)
    rows, gpu_milli_seconds, window_milli_seconds, interval = replay.run(
        sample_interval, horizon, max_samples, window
    )
    if debug:
        accounted = _accounted_milli_seconds(job_list, replay.now)
        assert math.isclose(gpu_milli_seconds, accounted, rel_tol=1e-9, abs_tol=1e-6), (
            gpu_milli_seconds,
            accounted,
        )

    result_rows = []
    for job in job_list:  # input order
        state = _final_state(job)
        deadlocked = state == "deadlocked"
        result_rows.append(
            {
                "job_id": job.job_id,
                "start_time": job.start,
                "finish_time": job.finish if state == "finished" else None,
                "state": state,
                "reject_reason": job.reject_reason,
                "nodes_spanned": len({p.node for p in job.placements}) if deadlocked else job.nodes_spanned,
                "held_milli": len(job.placements) * job.pod.milli if deadlocked else 0,
                "preemptions": 0,
            }
        )
    stats = {
        "end_time": replay.now,
        "cycles": float(replay.cycles),
        "rng_calls": float(replay.rng.calls),
    }
    return Replay(
        jobs=pl.DataFrame(result_rows, schema=JOB_RESULT_SCHEMA),
        timeline=pl.DataFrame(rows, schema=TIMELINE_SCHEMA),
        gpu_milli_seconds=float(gpu_milli_seconds),
        window_gpu_milli_seconds=None if window is None else float(window_milli_seconds),
        sample_interval=float(interval),
        stats=stats,
    )
