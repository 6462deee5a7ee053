"""SenseTime Helios (Hu et al., SC'21): a cluster's Slurm job log, ``cluster_log.csv``.

The logs of the four Helios clusters (Earth, Saturn, Uranus, Venus) ship in
S-Lab-System-Group/HeliosData's ``data.zip`` and are not bundled; point ``path`` at one
``<cluster>/cluster_log.csv``. Columns (HeliosData README)::

    job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue

with times ``YYYY-MM-DD HH:MM:SS``, ``duration`` = end - start and ``queue`` = start - submit
in seconds, ``user`` and ``vc`` hashed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import AdaptedTrace, count_dropped, file_sha256
from gpureplay.traces.philly import (
    parse_timestamps,
    read_raw_csv,
    require_raw_columns,
    seconds_since_first,
)
from gpureplay.traces.pods import split_gpus_into_pods
from gpureplay.traces.schema import cast_columns, validate_jobs

#: GPUs per Helios node (the SC'21 paper: 8 GPUs per server in every cluster).
HELIOS_GPUS_PER_NODE = 8

_RAW_COLUMNS = (
    "job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
    "submit_time", "start_time", "end_time", "duration", "queue",
)  # fmt: skip
_DTYPES: dict[str, pl.DataType] = {
    "gpu_num": pl.Int32(),
    "cpu_num": pl.Int32(),
    "node_num": pl.Int32(),
    "duration": pl.Float64(),
    "queue": pl.Float64(),
}
_RAW_NAMES = {
    "submit_time": "submit_time",
    "duration": "duration",
    "num_pods": "node_num",
    "gpu_milli": "gpu_num",
    "cpu_milli": "cpu_num",
    "queue": "vc",
    "user": "user",
    "source_job_id": "job_id",
    "source_state": "state",
    "source_queue": "queue",
    "source_node_num": "node_num",
}

CPU_ONLY = "CPU-only job dropped (gpu_only=True)"
NEVER_STARTED = "never started (no start_time or duration)"
NO_NODE_NUM = "node_num 0 or missing: taken as 1 node"
UNEVEN = f"gpu_num not divisible by node_num: split into pods of <= {HELIOS_GPUS_PER_NODE} GPUs"
CPU_ROUNDED = "cpu_num not divisible among pods: rounded up to whole milli-CPUs per pod"


def load_helios(path: str | Path, gpu_only: bool = True) -> AdaptedTrace:
    """Read a Helios ``cluster_log.csv`` into canonical jobs.

    Parameters
    ----------
    path
        The CSV (plain or gzip); a relative path is looked up with
        :func:`gpureplay.paths.resolve_data_path`.
    gpu_only
        Drop jobs with ``gpu_num == 0`` (Helios logs CPU jobs too; most GPU-scheduling studies,
        the SC'21 paper's included, study the GPU jobs).

    Returns
    -------
    AdaptedTrace
        ``job_id`` = the 1-based data row, sorted by ``(submit_time, job_id)``;
        ``submit_time`` = seconds since the earliest kept ``submit_time``; ``duration`` as
        recorded; ``queue`` = ``vc``; ``user`` = ``user``. A job is ``node_num`` pods (0 or
        missing: 1) of ``gpu_num / node_num`` GPUs when that divides evenly, otherwise it is
        split with :func:`~gpureplay.traces.pods.split_gpus_into_pods` at 8 GPUs per pod;
        ``cpu_milli`` = ``cpu_num * 1000 / pods``, rounded up. Kept raw: ``source_job_id``,
        ``source_state``, ``source_queue`` (the recorded queueing delay, s) and
        ``source_node_num``. ``changes`` counts dropped CPU-only jobs (checked first), dropped
        jobs that never started, and each re-interpretation above.

    Raises
    ------
    InputError
        Naming file, row and raw column of a value that cannot be read, or a missing column.

    Notes
    -----
    Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
    Datacenters", SC'21; schema from the S-Lab-System-Group/HeliosData README. Slurm
    allocates ``node_num`` nodes with the same number of GPUs on each, which is why an even
    split follows ``node_num``.
    """
    file = resolve_data_path(path, "trace file")
    source = str(file)
    raw = read_raw_csv(file, source)
    require_raw_columns(raw, _RAW_COLUMNS, source)
    # The raw ``queue`` (a delay) is renamed first so it cannot be taken for the canonical queue.
    raw = raw.rename({"queue": "source_queue"})
    raw = cast_columns(raw, {**_DTYPES, "source_queue": _DTYPES["queue"]}, source, {"source_queue": "queue"})
    raw = parse_timestamps(raw, ["submit_time", "start_time", "end_time"], source)

    changes: Counter[str] = Counter()
    kept = raw
    if gpu_only:
        kept = raw.filter(pl.col("gpu_num").is_null() | (pl.col("gpu_num") != 0))
        count_dropped(changes, raw, kept, CPU_ONLY)
    started = kept.filter(pl.col("start_time").is_not_null() & pl.col("duration").is_not_null())
    count_dropped(changes, kept, started, NEVER_STARTED)

    nodes = (
        pl.when(pl.col("node_num").is_null() | (pl.col("node_num") == 0))
        .then(1)
        .otherwise(pl.col("node_num"))
    )
    even = (pl.col("_nodes") != 0) & (pl.col("gpu_num") % pl.col("_nodes") == 0)
    split_pods, split_milli = split_gpus_into_pods(pl.col("gpu_num"), HELIOS_GPUS_PER_NODE)
    shaped = (
        started.lazy()
        .with_columns(nodes.cast(pl.Int32).alias("_nodes"))
        .with_columns(
            pl.when(even).then(pl.col("_nodes")).otherwise(split_pods).alias("num_pods"),
            pl.when(even)
            .then((pl.col("gpu_num").cast(pl.Int64) * 1000 // pl.col("_nodes")).cast(pl.Int32, strict=False))
            .otherwise(split_milli)
            .alias("gpu_milli"),
            even.alias("_even"),
        )
        .with_columns(
            # Ceiling so a pod never asks for less CPU than its share of the job's request.
            (-(-(pl.col("cpu_num").cast(pl.Int64) * 1000) // pl.col("num_pods")))
            .cast(pl.Int32, strict=False)
            .alias("cpu_milli"),
            ((pl.col("cpu_num").cast(pl.Int64) * 1000) % pl.col("num_pods") != 0).alias("_cpu_rounded"),
        )
        .collect()
    )
    for flag, reason in (
        (pl.col("node_num").is_null() | (pl.col("node_num") == 0), NO_NODE_NUM),
        (pl.col("gpu_num").is_not_null() & ~pl.col("_even"), UNEVEN),
        (pl.col("_cpu_rounded"), CPU_ROUNDED),
    ):
        count = shaped.filter(flag.fill_null(False)).height
        if count:
            changes[reason] += count

    jobs = (
        shaped.lazy()
        .select(
            pl.col("source_row").cast(pl.Int64).alias("job_id"),
            seconds_since_first(pl.col("submit_time")).alias("submit_time"),
            pl.col("duration"),
            pl.col("num_pods"),
            pl.col("gpu_milli"),
            pl.col("cpu_milli"),
            pl.col("vc").alias("queue"),
            pl.col("user"),
            pl.col("source_row"),
            pl.col("job_id").alias("source_job_id"),
            pl.col("state").alias("source_state"),
            pl.col("source_queue"),
            pl.col("node_num").alias("source_node_num"),
        )
        .sort("submit_time", "job_id", nulls_last=True)
        .collect()
    )
    if jobs.height == 0 and raw.height > 0:
        raise InputError.single(f"no job left after dropping: {dict(changes)}", source)
    return AdaptedTrace(validate_jobs(jobs, source, _RAW_NAMES), source, file_sha256(file), changes)
