"""The reference twin of packing mode (``gpureplay.replay.packing.pack_pods``), written the obvious way.

The FGD experiment (Weng et al., ATC'23, §5): single-pod jobs arrive in
``(submit_time, job_id)`` order on an empty cluster; each pod is placed once,
by the policy's node scorer (with its ``node_ties`` rule) and GPU scorer, or
fails at once when it fits no node; nothing departs. After each pod the
arrived GPU milli (failed pods included), the allocated GPU milli, the failed
pods and their GPU milli, and the cluster's FGD fragmentation (``Σ_n F_n``
over the task classes, :func:`tests.reference.fragmentation.cluster_frag`) are
recorded.

Draws: a pod's node draw is ``draw(seed, job_id, 0, 0, DECISION_NODE)`` and its
GPU draw ``draw(seed, job_id, 0, 0, DECISION_GPU)`` (pod 0 of attempt 0).
The cluster model, the scorers and the tie rules are those of
:mod:`tests.reference.simulator` and :mod:`tests.reference.scoring`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl
from tests.reference.fragmentation import Node as FragNode
from tests.reference.fragmentation import cluster_frag
from tests.reference.scoring import GPU_SCORERS, SCORERS
from tests.reference.simulator import (
    DECISION_GPU,
    DECISION_NODE,
    WHOLE_GPU,
    _jobs_from_table,
    choose_node,
    draw,
    empty_cluster,
    node_tie,
    place_on,
    task_classes,
)

from gpureplay.schedulers.policy import Policy

__all__ = ["PackResult", "pack_pods"]


@dataclass
class PackResult:
    """Per pod (arrival order): job_id, state (placed / failed), node (None when failed), GPU (shared
    pods) and GPU milli; per event (after each pod): the ``PACKING_EVENT_SCHEMA`` columns."""

    pods: list[dict[str, Any]]
    events: list[dict[str, Any]]
    capacity_milli: int


def pack_pods(
    jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy, *, seed: int = 0, tasks: Any = None
) -> PackResult:
    """Place each pod once, in order; ``tasks`` as ``typical_classes`` gives them (default: the jobs')."""
    if (jobs["num_pods"] != 1).any():
        raise ValueError("packing mode places single pods")
    if policy.node_placement not in SCORERS or policy.gpu_placement not in GPU_SCORERS:
        raise KeyError(f"unknown scorer in {policy.node_placement!r} / {policy.gpu_placement!r}")
    classes = task_classes(jobs, nodes, tasks)
    cluster = empty_cluster(
        list(nodes.iter_rows(named=True)), policy.device_split_count, policy.shared_gpu_memory.name
    )
    node_scorer = SCORERS[policy.node_placement]
    gpu_scorer = SCORERS[policy.gpu_placement]
    arrived = failed = failed_milli = 0
    pods: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for i, job in enumerate(sorted(_jobs_from_table(jobs), key=lambda j: (j.submit, j.job_id))):
        demand = job.pod.milli

        def node_draw(job_id: int = job.job_id) -> int:
            return draw(seed, job_id, 0, 0, DECISION_NODE)

        def gpu_draw(job_id: int = job.job_id) -> int:
            return draw(seed, job_id, 0, 0, DECISION_GPU)

        tie = node_tie(policy.node_ties, seed, node_draw)
        n = choose_node(cluster, job.pod, node_scorer, node_draw, tie, classes)
        gpu = None
        if n is None:
            failed += 1
            failed_milli += demand
        else:
            placement = place_on(cluster, n, job.pod, gpu_scorer, gpu_draw, job.submit, classes)
            if 0 < demand < WHOLE_GPU:
                gpu = placement.gpus[0]
        arrived += demand
        pods.append(
            {
                "job_id": job.job_id,
                "arrival": i,
                "state": "failed" if n is None else "placed",
                "node": n,
                "gpu": gpu,
                "gpu_milli": demand,
            }
        )
        frag_nodes = [
            FragNode(node.free_cpu, tuple(g.free_milli for g in node.gpus), node.model_code)  # type: ignore[arg-type]
            for node in cluster
        ]
        events.append(
            {
                "arrival": i,
                "arrived_gpu_milli": arrived,
                "allocated_gpu_milli": sum(WHOLE_GPU - g.free_milli for node in cluster for g in node.gpus),
                "frag_gpu_milli": cluster_frag(frag_nodes, classes),
                "failed_pods": failed,
                "failed_gpu_milli": failed_milli,
            }
        )
    capacity = WHOLE_GPU * sum(len(node.gpus) for node in cluster)
    return PackResult(pods, events, capacity)
