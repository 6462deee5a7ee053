"""Microsoft ITP cluster traces, as released with ElasticFlow (Gu et al., ASPLOS'23).

github.com/microsoft/elasticflow-traces ships two views of the same 69,351 jobs from ten
ITP clusters (March-May 2021), bundled under ``traces/itp/`` (see its ``SOURCE.md``):

- ``raw-traces/clusterNN.csv.gz``: ``job_id,submission_time,duration,num_gpu``;
- ``elasticflow-traces/clusterNN.csv.gz``: the same rows plus ``num_iteration``,
  ``model_name``, ``deadline`` and ``batch_size``, which the authors generated at random.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Literal

import polars as pl

from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import AdaptedTrace, file_sha256
from gpureplay.traces.philly import read_raw_csv, require_raw_columns, split_reason
from gpureplay.traces.pods import split_gpus_into_pods
from gpureplay.traces.schema import cast_columns, validate_jobs

#: Cluster numbers of the release (``cluster01`` .. ``cluster10``).
CLUSTERS: tuple[int, ...] = tuple(range(1, 11))

_FOLDERS = {"raw": "raw-traces", "elasticflow": "elasticflow-traces"}
_RAW_DTYPES: dict[str, pl.DataType] = {
    "submission_time": pl.Float64(),
    "duration": pl.Float64(),
    "num_gpu": pl.Int32(),
}
_ELASTICFLOW_DTYPES: dict[str, pl.DataType] = {
    **_RAW_DTYPES,
    "num_iteration": pl.Int64(),
    "deadline": pl.Float64(),
    "batch_size": pl.Int32(),
}
_RAW_NAMES = {
    "submit_time": "submission_time",
    "duration": "duration",
    "num_pods": "num_gpu",
    "gpu_milli": "num_gpu",
    "source_job_id": "job_id",
    "source_num_gpu": "num_gpu",
    "source_model_name": "model_name",
    "source_deadline": "deadline",
    "source_batch_size": "batch_size",
    "source_num_iteration": "num_iteration",
}


def cluster_name(cluster_id: int) -> str:
    """``3 -> "cluster03"``, the file stem and the ``queue`` of that cluster's jobs."""
    return f"cluster{cluster_id:02d}"


def _check_args(cluster_id: object, variant: object) -> list[int]:
    if variant not in _FOLDERS:
        raise InputError.single(
            f"unknown variant {variant!r}; known: {', '.join(_FOLDERS)}", "config", key="trace.variant"
        )
    if cluster_id is None:
        return list(CLUSTERS)
    if isinstance(cluster_id, bool) or not isinstance(cluster_id, int) or cluster_id not in CLUSTERS:
        raise InputError.single(
            f"must be one of {CLUSTERS[0]}..{CLUSTERS[-1]} or null (all clusters), got {cluster_id!r}",
            "config",
            key="trace.cluster_id",
        )
    return [cluster_id]


def load_itp(
    cluster_id: int | None = None,
    variant: Literal["raw", "elasticflow"] = "raw",
    root: str | Path = "itp",
    max_gpus_per_pod: int = 8,
) -> AdaptedTrace:
    """Read the ITP traces of one cluster, or of all ten, into canonical jobs.

    Parameters
    ----------
    cluster_id
        1..10 for ``clusterNN``; ``None`` reads all ten clusters into one trace.
    variant
        ``"raw"`` (the observed jobs) or ``"elasticflow"`` (the same jobs with ElasticFlow's
        synthetic model, deadline, batch size and iteration count, kept as ``source_*``).
    root
        Folder holding ``raw-traces/`` and ``elasticflow-traces/``; a relative path is looked up
        with :func:`gpureplay.paths.resolve_data_path` (default: the bundled copy).
    max_gpus_per_pod
        GPUs one pod may hold: a 64-GPU job is 8 pods of 8 GPUs by default.

    Returns
    -------
    AdaptedTrace
        ``job_id`` = 1..n in (cluster, file row) order, sorted by ``(submit_time, job_id)``.
        ``submit_time`` = ``submission_time`` shifted so the earliest job read is at 0; the
        clusters share one clock (seconds since the start of collection), so they are not
        shifted apart. ``queue`` = ``"clusterNN"``; no user (the release has none).
        ``source_row`` is the row in that cluster's file, ``source_cluster`` the cluster. Kept
        raw: ``source_job_id`` (UUID), ``source_num_gpu``, and for ``"elasticflow"``
        ``source_model_name``, ``source_deadline``, ``source_batch_size`` and
        ``source_num_iteration``, which the ElasticFlow authors generated at random: only
        ``submission_time``, ``duration`` and ``num_gpu`` were observed.

    Raises
    ------
    InputError
        For a bad ``cluster_id`` (``trace.cluster_id``) or ``variant`` (``trace.variant``), or
        naming file, row and raw column of a value that cannot be read.

    Notes
    -----
    Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep
    Learning", ASPLOS'23. No job runs under 600 s (per-cluster minimum 600 .. 668 s): jobs under
    ten minutes were apparently removed before release.
    """
    clusters = _check_args(cluster_id, variant)
    num_pods, gpu_milli = split_gpus_into_pods(pl.col("num_gpu"), max_gpus_per_pod)  # checks the limit first
    folder = _FOLDERS[variant]
    dtypes = _ELASTICFLOW_DTYPES if variant == "elasticflow" else _RAW_DTYPES
    required = ("job_id", *dtypes, *(("model_name",) if variant == "elasticflow" else ()))
    files = [
        resolve_data_path(Path(root) / folder / f"{cluster_name(c)}.csv.gz", "trace file") for c in clusters
    ]

    tables: list[pl.DataFrame] = []
    for number, file in zip(clusters, files, strict=True):
        raw = read_raw_csv(file, str(file))
        require_raw_columns(raw, required, str(file))
        raw = cast_columns(raw.select("source_row", *required), dtypes, str(file))
        tables.append(
            raw.with_columns(pl.lit(cluster_name(number)).alias("cluster"), pl.lit(str(file)).alias("_file"))
        )
    raw_all = pl.concat(tables, how="vertical")

    synthetic = (
        [
            pl.col("model_name").alias("source_model_name"),
            pl.col("deadline").alias("source_deadline"),
            pl.col("batch_size").alias("source_batch_size"),
            pl.col("num_iteration").alias("source_num_iteration"),
        ]
        if variant == "elasticflow"
        else []
    )
    jobs = (
        raw_all.lazy()
        .select(
            pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("job_id"),
            (pl.col("submission_time") - pl.col("submission_time").min()).alias("submit_time"),
            pl.col("duration"),
            num_pods.alias("num_pods"),
            gpu_milli.alias("gpu_milli"),
            pl.col("cluster").alias("queue"),
            pl.lit(None, dtype=pl.String).alias("user"),
            pl.col("source_row"),
            pl.col("job_id").alias("source_job_id"),
            pl.col("cluster").alias("source_cluster"),
            pl.col("num_gpu").alias("source_num_gpu"),
            *synthetic,
            pl.col("_file"),
        )
        .sort("submit_time", "job_id", nulls_last=True)
        .collect()
    )
    source = ", ".join(str(f) for f in files)
    if jobs.height == 0:
        validate_jobs(jobs.drop("_file"), source, _RAW_NAMES)  # raises: the trace has no jobs
    # Validate file by file so a message names the file the bad row is in.
    validated = [
        validate_jobs(part.drop("_file"), str(name), _RAW_NAMES)
        for (name,), part in jobs.group_by("_file", maintain_order=True)
    ]
    out = pl.concat(validated, how="vertical").sort("submit_time", "job_id")
    changes: Counter[str] = Counter()
    split = out.filter(pl.col("num_pods") > 1).height
    if split:
        changes[split_reason(max_gpus_per_pod)] += split
    return AdaptedTrace(out, source, file_sha256(*files), changes)
