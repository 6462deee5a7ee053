"""The workload's typical pods: the task classes FGD's fragmentation measure weighs, with their popularity.

FGD (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads
with Fragmentation Gradient Descent", USENIX ATC'23, §3) measures a node's
fragmentation as the expected amount of its idle GPU that a task drawn from
the workload could not use. The tasks are the workload's distinct pod shapes
("typical pods"), each weighted by how often it occurs. This module builds
them from a canonical jobs table the way the public simulator
(hkust-adsl/kubernetes-scheduler-simulator) does in ``GetTypicalPods``
(``pkg/utils/frag.go``); the fragment itself is computed by
:mod:`gpureplay.engine.fit.fragmentation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from gpureplay.engine.state.layout import ALL_MODELS, WHOLE, Float64Array, Int64Array, UInt64Array
from gpureplay.errors import InputError

__all__ = [
    "ARTIFACT_GPU_RES_WEIGHT",
    "ARTIFACT_INCLUDE_CPU_PODS",
    "ARTIFACT_STEP",
    "ARTIFACT_THRESHOLD",
    "GO_DEFAULT_STEP",
    "GO_DEFAULT_THRESHOLD",
    "TypicalPods",
    "typical_pods",
]

#: ``podPopularityThreshold`` of the ATC'23 artifact runs: keep the most popular classes until
#: they cover 95% of the (weighted) pods (``scripts/generate_config_and_run.py``, default of
#: ``--pod-popularity-threshold``, used by every run ``experiments/run_scripts`` generates).
ARTIFACT_THRESHOLD = 95.0
#: ``podIncreaseStep`` of the artifact runs: classes are added one at a time.
ARTIFACT_STEP = 1
#: ``isInvolvedCpuPods`` of the artifact runs: CPU-only pods are task classes too.
ARTIFACT_INCLUDE_CPU_PODS = True
#: ``gpuResWeight`` of the artifact runs: every pod counts once.
ARTIFACT_GPU_RES_WEIGHT = 0.0
#: The Go fallbacks when the config leaves the values at 0 (``pkg/type/resource.go``,
#: ``DefaultTypicalPodPopularityThreshold`` and ``DefaultTypicalPodIncreaseStep``).
GO_DEFAULT_THRESHOLD = 60.0
GO_DEFAULT_STEP = 10

_REQUIRED = ("cpu_milli", "gpu_milli")
_SOURCE = "typical_pods"


@dataclass(frozen=True)
class TypicalPods:
    """Task classes of a workload and their popularity, most popular first.

    Attributes
    ----------
    cpu_milli
        CPU request of one pod of the class, milli-CPU.
    num_gpu
        GPUs per pod (0: a CPU-only class).
    gpu_milli
        Milli-GPU asked of each of those GPUs: 1..1000 for one GPU (below 1000
        a share of it), 1000 for several whole GPUs, 0 for CPU-only classes.
    gpu_type
        The simulator's ``GpuType`` text of the class: the GPU models the pods
        accept, ``"A|B"`` as the trace writes them (``""``: any model). Part of
        the class key, so ``"V100M16|V100M32"`` and ``"V100M16|V100M32|V100M32"``
        are two classes, as in the simulator.
    gpu_models
        The same constraint as catalog model names (None: any model), for
        :meth:`model_mask`.
    weight
        Pods of the class in the workload (weighted, see :func:`typical_pods`).
    popularity
        ``p_m``: share of the kept classes' weight; sums to 1.
    coverage
        Share of the whole workload's weight the kept classes hold (at least
        the threshold, unless every class was kept).
    classes_seen
        Distinct classes in the workload before the threshold cut.
    """

    cpu_milli: Int64Array
    num_gpu: Int64Array
    gpu_milli: Int64Array
    gpu_type: tuple[str, ...]
    gpu_models: tuple[tuple[str, ...] | None, ...]
    weight: Float64Array
    popularity: Float64Array
    coverage: float
    classes_seen: int

    def __len__(self) -> int:
        return int(self.cpu_milli.shape[0])

    def model_mask(self, models: Sequence[str]) -> UInt64Array:
        """Each class's allowed GPU models as a bit mask over model codes, as the engine encodes jobs.

        Parameters
        ----------
        models
            Model names by code (``Compiled.models``: bit ``i`` is ``models[i]``).

        Returns
        -------
        numpy.ndarray
            uint64 per class: ``ALL_MODELS`` for CPU-only classes and classes
            that accept any model; otherwise the bits of the accepted models
            the cluster has (0 when it has none of them: the class can use no
            node, ``NoAccess`` everywhere).
        """
        bits = {name: 1 << i for i, name in enumerate(models)}
        masks = [
            ALL_MODELS if gpus == 0 or names is None else sum(bits.get(n, 0) for n in set(names))
            for gpus, names in zip(self.num_gpu.tolist(), self.gpu_models, strict=True)
        ]
        return np.array(masks, dtype=np.uint64)


def typical_pods(
    jobs: pl.DataFrame,
    *,
    threshold: float = ARTIFACT_THRESHOLD,
    step: int = ARTIFACT_STEP,
    include_cpu_pods: bool = ARTIFACT_INCLUDE_CPU_PODS,
    gpu_res_weight: float = ARTIFACT_GPU_RES_WEIGHT,
) -> TypicalPods:
    """The typical pods of a workload and their popularity, as the FGD simulator builds them.

    Parameters
    ----------
    jobs
        A canonical jobs table (:data:`gpureplay.traces.schema.JOBS_SCHEMA`).
        Needs ``cpu_milli`` and ``gpu_milli``; ``num_pods`` (default 1),
        ``gpu_models`` (default: any model) and ``source_gpu_spec`` (the raw
        openb ``gpu_spec``, kept by :func:`gpureplay.traces.openb.load_openb`)
        are used when present.
    threshold
        ``podPopularityThreshold``, percent in (0, 100]: the most popular
        classes are kept until they hold at least this share of the weight.
    step
        ``podIncreaseStep``: classes are kept in blocks of this many.
    include_cpu_pods
        ``isInvolvedCpuPods``: whether CPU-only pods form classes.
    gpu_res_weight
        ``gpuResWeight``: a whole-GPU pod counts ``1 + num_gpu * gpu_res_weight``
        times (0: every pod once).

    Returns
    -------
    TypicalPods
        The kept classes, most popular first.

    Raises
    ------
    InputError
        (a ``ValueError``) naming the column for a missing column, naming
        ``jobs`` for a table with no pods (or none left without CPU-only pods),
        or naming the parameter for a threshold, step or weight out of range.

    Notes
    -----
    Rules of ``GetTypicalPods`` (``pkg/utils/frag.go``) and the pods it reads:

    - A pod's class is ``PodResource`` (``pkg/type/resource.go``): CPU request,
      milli-GPU per GPU, GPU count and the GPU-model text, from
      ``GetPodResource`` (``pkg/utils/utils.go``). Canonical ``gpu_milli`` is
      per pod, so it is split back: ``m`` in 1..999 or 1000 is one GPU of ``m``,
      ``k * 1000`` is ``k`` GPUs of 1000. CPU-only pods carry no GPU
      annotations in the artifact's pod files, so their model text is empty.
    - The CPU request is taken as given. ``GetPodResource`` reads it through
      ``GetNonzeroRequests``, which substitutes 100 m only for an *unset*
      request; the artifact's CSV-to-YAML converter always sets it (inferred
      from the converter script; openb has no zero requests anyway).
    - The model text is the raw ``gpu_spec`` with empty names dropped (the
      converter's rule; duplicates kept). Tables without ``source_gpu_spec``
      use the catalog names of ``gpu_models`` joined by ``|``.
    - Each pod counts 1 (``1 + num_gpu * gpuResWeight`` for whole-GPU pods
      when the weight is positive); a job of ``num_pods`` pods counts each pod
      (the simulator sees pods; inferred, openb jobs are single pods).
    - Classes are sorted by count, most first; ties by CPU, then milli-GPU,
      then GPU count, then model text, larger first (``TargetPodList.Less``
      reversed). Blocks of ``step`` classes are kept until the kept count
      reaches ``threshold`` percent of all pods; the popularity of a kept
      class is its count over the kept count (``(w / total) / (kept / total)``,
      the simulator's two divisions). If every class is kept, the popularity
      is ``w / total``, as the simulator leaves it.

    Defaults are the artifact's (``scripts/generate_config_and_run.py``:
    threshold 95, step 1, CPU pods included, weight 0), not the Go fallbacks
    :data:`GO_DEFAULT_THRESHOLD` / :data:`GO_DEFAULT_STEP` used when a config
    leaves them at 0. The typical pods are built from the original pod list,
    before the workload is inflated (``Simulate`` in
    ``pkg/simulator/core.go`` calls ``SetTypicalPods`` before tuning).
    """
    _check_params(threshold, step, gpu_res_weight)
    missing = [c for c in _REQUIRED if c not in jobs.columns]
    if missing:
        raise InputError.single(
            f"missing column(s) {', '.join(missing)}; found {', '.join(jobs.columns) or 'none'}",
            _SOURCE,
            column=missing[0],
        )
    if jobs.height == 0:
        raise InputError.single("the jobs table has no rows: no pods to build typical pods from", _SOURCE)
    for column in (*_REQUIRED, *(c for c in ("num_pods",) if c in jobs.columns)):
        if jobs[column].null_count():
            raise InputError.single(f"{column} has null values", _SOURCE, column=column)

    pods = jobs.lazy().select(_class_columns(jobs.columns, gpu_res_weight))
    if not include_cpu_pods:
        pods = pods.filter(pl.col("num_gpu") > 0)
    key = ["cpu_milli", "gpu_milli", "num_gpu", "gpu_type"]
    classes = (
        pods.group_by(key)
        .agg(pl.col("weight").sum(), pl.col("gpu_models").first())
        .sort(["weight", *key], descending=True)
        .collect()
    )
    if classes.height == 0:
        raise InputError.single("no GPU pods to build typical pods from (CPU-only pods excluded)", _SOURCE)

    weight = classes["weight"].to_numpy().astype(np.float64)
    # Sequential sums, as the simulator accumulates (np.cumsum adds left to right).
    cum = np.cumsum(weight)
    total = float(cum[-1])
    kept = _kept_count(cum, total * threshold / 100.0, step)
    kept_weight = float(cum[kept - 1])
    popularity = weight[:kept] / total
    if kept < classes.height:
        popularity = popularity / (kept_weight / total)
    head = classes.head(kept)
    return TypicalPods(
        cpu_milli=_int64(head["cpu_milli"]),
        num_gpu=_int64(head["num_gpu"]),
        gpu_milli=_int64(head["gpu_milli"]),
        gpu_type=tuple(head["gpu_type"].to_list()),
        gpu_models=tuple(None if m is None else tuple(m) for m in head["gpu_models"].to_list()),
        weight=np.ascontiguousarray(weight[:kept]),
        popularity=np.ascontiguousarray(popularity),
        coverage=kept_weight / total,
        classes_seen=classes.height,
    )


def _check_params(threshold: float, step: int, gpu_res_weight: float) -> None:
    if not 0.0 < threshold <= 100.0:
        raise InputError.single(
            f"threshold must be in (0, 100], not {threshold!r}", _SOURCE, column="threshold"
        )
    if step < 1:
        raise InputError.single(f"step must be >= 1, not {step!r}", _SOURCE, column="step")
    if not gpu_res_weight >= 0.0:
        raise InputError.single(
            f"gpu_res_weight must be >= 0, not {gpu_res_weight!r}", _SOURCE, column="gpu_res_weight"
        )


def _class_columns(columns: Sequence[str], gpu_res_weight: float) -> list[pl.Expr]:
    """One row per job: its pods' class key, accepted models and weight (all its pods together)."""
    m = pl.col("gpu_milli").cast(pl.Int64)
    num_gpu = pl.when(m >= WHOLE).then(m // WHOLE).when(m > 0).then(1).otherwise(0)
    per_gpu = pl.when(m >= WHOLE).then(WHOLE).otherwise(m)
    models = pl.col("gpu_models") if "gpu_models" in columns else pl.lit(None, pl.List(pl.String()))
    models = pl.when(models.list.len() > 0).then(models)
    joined = models.list.join("|")
    if "source_gpu_spec" in columns:
        raw = (
            pl.col("source_gpu_spec")
            .str.split("|")
            .list.eval(pl.element().filter(pl.element() != ""))
            .list.join("|")
        )
        joined = pl.coalesce(raw, joined)
    gpu_type = pl.when(num_gpu == 0).then(pl.lit("")).otherwise(joined.fill_null(""))
    per_pod = pl.lit(1.0, pl.Float64)
    if gpu_res_weight > 0:
        per_pod = (
            pl.when(per_gpu == WHOLE).then(1.0 + num_gpu.cast(pl.Float64) * gpu_res_weight).otherwise(1.0)
        )
    pods = pl.col("num_pods").cast(pl.Float64) if "num_pods" in columns else pl.lit(1.0, pl.Float64)
    return [
        pl.col("cpu_milli").cast(pl.Int64).alias("cpu_milli"),
        per_gpu.cast(pl.Int64).alias("gpu_milli"),
        num_gpu.cast(pl.Int64).alias("num_gpu"),
        gpu_type.alias("gpu_type"),
        pl.when(num_gpu > 0).then(models).alias("gpu_models"),
        (per_pod * pods).alias("weight"),
    ]


def _kept_count(cum: Float64Array, expected: float, step: int) -> int:
    """How many classes the simulator keeps: blocks of ``step`` until the running count reaches ``expected``.

    ``cum`` is the running count in class order. The first class at which it
    reaches ``expected`` ends the walk at the end of its block; if rounding
    leaves it short of ``expected`` everywhere, every class is kept.
    """
    n = int(cum.shape[0])
    reached = np.flatnonzero(cum >= expected)
    if reached.shape[0] == 0:
        return n
    first = int(reached[0]) + 1
    return min(n, -(-first // step) * step)


def _int64(series: pl.Series) -> Int64Array:
    # A copy: polars' zero-copy arrays are read-only, and a read-only argument compiles a new
    # kernel signature.
    return np.array(series.to_numpy(), dtype=np.int64)
