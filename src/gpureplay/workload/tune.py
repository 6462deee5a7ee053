"""The FGD artifact's workload tuning: a seeded pod order, inflated by resampling to a share of cluster GPU.

Weng et al. (USENIX ATC'23) run every policy on a workload *tuned* to a target
GPU demand: the public simulator (hkust-adsl/kubernetes-scheduler-simulator,
``Simulate`` in ``pkg/simulator/core.go``, ``SortClusterPods`` and
``TunePodsByNodeTotalResource`` in ``pkg/simulator/simulator.go``) shuffles the
pod list with a seed, then appends clones of pods drawn with replacement from
the original list until the total GPU demand reaches ``tune`` times the
cluster's GPU capacity (``-tune 1.3 -tuneseed 42..51`` in the artifact's run
scripts). :func:`tune_pods` does the same with numpy's seeded generator: the
rules are the simulator's, the draws are not Go's ``math/rand`` stream, so one
seed here is not the same order as the same seed there (compare means over
seeds, not single runs).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from gpureplay.engine.state.layout import WHOLE
from gpureplay.errors import InputError

__all__ = ["tune_pods"]


def tune_pods(
    jobs: pl.DataFrame, capacity_milli: int, ratio: float | None, seed: int, *, shuffle: bool = True
) -> tuple[pl.DataFrame, dict[str, int]]:
    """The pods of ``jobs`` in a seeded order, inflated (or trimmed) to ``ratio`` x ``capacity_milli`` GPU.

    Parameters
    ----------
    jobs
        Canonical single-pod jobs; their ``job_id`` order is the simulator's
        name order (openb's pod names sort as its rows).
    capacity_milli
        The cluster's GPU milli.
    ratio
        Target GPU demand as a multiple of the capacity (the artifact's
        ``tune``); None keeps the workload as it is.
    seed
        Seed of the order and the draws (the artifact's ``tuneseed``).
    shuffle
        Shuffle the original pods (``--shuffle-pod=true`` in every artifact
        run); False keeps ``job_id`` order.

    Returns
    -------
    tuple of (polars.DataFrame, dict)
        The jobs in arrival order, ``submit_time`` 0, 1, 2, ... seconds, the
        clones numbered after the largest ``job_id``; and counts:
        ``original``, ``cloned``, ``removed``.

    Raises
    ------
    InputError
        For a ratio that is not a finite number > 0, or no pods.

    Notes
    -----
    Rules of ``TunePodsByNodeTotalResource``: the demand of a pod is its GPU
    milli (``gpu_milli``, all its GPUs); the target is ``ratio *
    capacity_milli``. Below it, pods are drawn uniformly with replacement from
    the original list (CPU-only pods too), cloned and appended after the
    shuffled originals, until a draw would pass the target; the simulator
    tests that with the pod's milli *per GPU* while it adds the pod's total,
    so a multi-GPU clone may end above the target, as here. Above the target,
    random pods are removed until the demand is at most the target.
    """
    if jobs.height == 0:
        raise InputError.single("no pods to tune", "jobs")
    if ratio is not None and not (math.isfinite(ratio) and ratio > 0):
        raise InputError.single(
            f"must be a finite number > 0 or null, not {ratio!r}", "config", column="packing.tune"
        )
    rng = np.random.default_rng(seed)
    original = jobs.sort("job_id")
    n = original.height
    order = rng.permutation(n) if shuffle else np.arange(n)
    demand = original["gpu_milli"].to_numpy().astype(np.int64)
    total = int(demand.sum())
    counts = {"original": n, "cloned": 0, "removed": 0}
    picked = [order]
    if ratio is not None:
        target = ratio * capacity_milli
        if total > target:
            kept = list(order)
            while total > target and kept:
                gone = kept.pop(int(rng.integers(len(kept))))
                total -= int(demand[gone])
                counts["removed"] += 1
            picked = [np.asarray(kept, dtype=np.int64)]
        else:
            per_gpu = _milli_per_gpu(demand)
            clones: list[int] = []
            while True:
                draw = int(rng.integers(n))
                if total + per_gpu[draw] > target:
                    break
                clones.append(draw)
                total += int(demand[draw])
            picked.append(np.asarray(clones, dtype=np.int64))
            counts["cloned"] = len(clones)
    rows = np.concatenate(picked)
    out = original[rows]
    first_clone = n - counts["removed"]
    next_id = int(original["job_id"].max()) + 1  # type: ignore[arg-type]
    ids = out["job_id"].to_numpy().copy()
    ids[first_clone:] = np.arange(next_id, next_id + (ids.shape[0] - first_clone))
    out = out.with_columns(
        pl.Series("job_id", ids, dtype=pl.Int64),
        pl.Series("submit_time", np.arange(out.height, dtype=np.float64)),
    )
    return out, counts


def _milli_per_gpu(demand: np.ndarray) -> np.ndarray:
    """A pod's milli per GPU from its total: ``m`` for one GPU (shared or whole), 1000 for several."""
    return np.where(demand > WHOLE, WHOLE, demand)
