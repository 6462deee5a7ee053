"""Microsoft Philly (Jeon et al., ATC'19): the job table Pollux derived from ``cluster_job_log``.

The bundled ``philly/philly_jobs_pollux.csv.gz`` is ``simulator/traces/philly.csv`` of the
Pollux OSDI'21 artifact (petuum/adaptdl, branch ``osdi21-artifact``): 82,247 jobs with
columns ``timestamp,duration,num_gpus,gpu_time,cluster`` (see ``traces/philly/SOURCE.md``).
The raw JSON job log is read by :mod:`gpureplay.traces.philly_raw`.

This module also holds the small readers the other real-trace adapters share
(:func:`read_raw_csv`, :func:`require_raw_columns`, :func:`parse_timestamps`): every one of
them reports a bad value by file, 1-based data row and raw column.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

import polars as pl

from gpureplay.errors import InputError, Problem
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import AdaptedTrace, file_sha256
from gpureplay.traces.pods import split_gpus_into_pods
from gpureplay.traces.schema import MAX_SHOWN, cast_columns, validate_jobs

#: Wall-clock format of Philly's and Helios' time stamps (local time, no zone).
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"

#: Bundled Pollux-derived Philly job table, resolved with :func:`gpureplay.paths.resolve_data_path`.
DEFAULT_PATH = "philly/philly_jobs_pollux.csv.gz"

_RAW_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
_RAW_NAMES = {
    "submit_time": "timestamp",
    "duration": "duration",
    "num_pods": "num_gpus",
    "gpu_milli": "num_gpus",
    "queue": "cluster",
    "source_timestamp": "timestamp",
    "source_num_gpus": "num_gpus",
    "source_gpu_time": "gpu_time",
    "source_cluster": "cluster",
}


def split_reason(max_gpus_per_pod: int) -> str:
    """The ``changes`` reason under which adapters count jobs split into several pods."""
    return f"multi-node job split into pods of <= {max_gpus_per_pod} GPUs"


def read_raw_csv(file: Path, source: str) -> pl.DataFrame:
    """Read a CSV (plain or gzip) with every column as text, plus a 1-based ``source_row``.

    Reading as text keeps each raw value intact, so a value that does not convert later is
    reported as it was written (see :func:`gpureplay.traces.schema.cast_columns`).

    Raises
    ------
    InputError
        Naming ``source`` when the file is not readable as CSV.
    """
    try:
        return pl.scan_csv(file, infer_schema=False).with_row_index("source_row", offset=1).collect()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError.single(f"cannot read as CSV: {exc}", source) from exc


def require_raw_columns(df: pl.DataFrame, columns: Iterable[str], source: str) -> None:
    """Raise :class:`InputError` naming ``source`` and every raw column ``df`` lacks."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        found = ", ".join(c for c in df.columns if c != "source_row") or "none"
        raise InputError.single(f"missing column(s) {', '.join(missing)}; found {found}", source)


def parse_timestamps(
    df: pl.DataFrame,
    columns: Iterable[str],
    source: str,
    raw_names: Mapping[str, str] | None = None,
    *,
    fmt: str = TIME_FORMAT,
    missing: Collection[str] = ("",),
    label: Callable[[str], pl.Expr] | None = None,
) -> pl.DataFrame:
    """Parse text columns as naive date-times (microseconds), reporting every unreadable value.

    Parameters
    ----------
    df
        Table with a ``source_row`` column.
    columns
        Text columns to parse in place.
    source
        File name used in messages.
    raw_names
        Column → raw name for messages.
    fmt
        ``strftime`` format of the values.
    missing
        Spellings (after trimming blanks) that mean "no time recorded" and become null, e.g.
        ``"None"`` in Philly's job log.
    label
        Builds, per column, a text expression naming the raw field of each row (used where one
        table row stands for a nested value, e.g. ``attempts[2].end_time``). Defaults to the
        column's raw name.

    Raises
    ------
    InputError
        Naming file, row and column of each value that is neither missing nor in ``fmt``.
    """
    raw_names = raw_names or {}
    columns = list(columns)
    missing_values = list(missing)
    cleaned = {
        c: pl.when(pl.col(c).cast(pl.String).str.strip_chars().is_in(missing_values))
        .then(pl.lit(None, dtype=pl.String))
        .otherwise(pl.col(c).cast(pl.String).str.strip_chars())
        for c in columns
    }
    parsed = df.with_columns(
        expr.str.to_datetime(fmt, time_unit="us", strict=False).alias(c) for c, expr in cleaned.items()
    )
    problems: list[Problem] = []
    total = 0
    for c in columns:
        where = label(c) if label is not None else pl.lit(raw_names.get(c, c))
        bad = df.with_columns(cleaned[c].alias("_clean"), where.alias("_where")).filter(
            pl.col("_clean").is_not_null() & parsed[c].is_null()
        )
        total += bad.height
        for row, value, column in bad.select("source_row", c, "_where").head(MAX_SHOWN).iter_rows():
            problems.append(
                Problem(
                    f"cannot read {value!r} as a date-time in format {fmt!r}", source, int(row), str(column)
                )
            )
    if total:
        problems.sort(key=lambda p: p.row or 0)
        raise InputError(problems, total=total)
    return parsed


def seconds_since_first(times: pl.Expr) -> pl.Expr:
    """Float64 seconds from the earliest non-null time of ``times`` (so the first one is 0)."""
    return (times - times.min()).dt.total_microseconds().cast(pl.Float64) / 1_000_000


def load_philly(path: str | Path = DEFAULT_PATH, max_gpus_per_pod: int = 8) -> AdaptedTrace:
    """Read Pollux's Philly job table into canonical jobs.

    Parameters
    ----------
    path
        The CSV (plain or gzip); a relative path is looked up with
        :func:`gpureplay.paths.resolve_data_path` (default: the bundled copy).
    max_gpus_per_pod
        GPUs one pod may hold. Philly's large servers had 8 GPUs, so a 16-GPU job becomes two
        8-GPU pods and a 12-GPU job two 6-GPU pods (:func:`~gpureplay.traces.pods.split_gpus_into_pods`).

    Returns
    -------
    AdaptedTrace
        One job per row, ``job_id`` = the 1-based data row, sorted by ``(submit_time, job_id)``.
        ``submit_time`` = seconds since the earliest ``timestamp``; ``duration`` as recorded;
        ``queue`` = the virtual cluster (``cluster``); no user (the table has none). Raw values
        stay as ``source_timestamp``, ``source_num_gpus``, ``source_gpu_time``, ``source_cluster``.
        ``changes`` counts jobs split into several pods.

    Raises
    ------
    InputError
        Naming file, row and raw column of a value that cannot be read, or a missing column.

    Notes
    -----
    Columns and caveats follow Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters
    for DNN Training Workloads", USENIX ATC'19, and the Pollux artifact (Qiao et al., OSDI'21),
    which treats ``timestamp`` as the arrival. How Pollux filtered the 117,325 logged jobs down
    to 82,247 is not documented. Time stamps are naive local time: arrivals within the hour
    repeated when daylight saving time ended (2017-11-05) may be out of order by up to an hour.
    """
    num_pods, gpu_milli = split_gpus_into_pods(pl.col("num_gpus"), max_gpus_per_pod)  # checks the limit first
    file = resolve_data_path(path, "trace file")
    source = str(file)
    raw = read_raw_csv(file, source)
    require_raw_columns(raw, _RAW_COLUMNS, source)
    raw = cast_columns(
        raw, {"duration": pl.Float64(), "num_gpus": pl.Int32(), "gpu_time": pl.Float64()}, source
    )
    raw = parse_timestamps(raw, ["timestamp"], source)

    jobs = (
        raw.lazy()
        .select(
            pl.col("source_row").cast(pl.Int64).alias("job_id"),
            seconds_since_first(pl.col("timestamp")).alias("submit_time"),
            pl.col("duration"),
            num_pods.alias("num_pods"),
            gpu_milli.alias("gpu_milli"),
            pl.col("cluster").alias("queue"),
            pl.lit(None, dtype=pl.String).alias("user"),
            pl.col("source_row"),
            pl.col("timestamp").alias("source_timestamp"),
            pl.col("num_gpus").alias("source_num_gpus"),
            pl.col("gpu_time").alias("source_gpu_time"),
            pl.col("cluster").alias("source_cluster"),
        )
        .sort("submit_time", "job_id", nulls_last=True)
        .collect()
    )
    changes: Counter[str] = Counter()
    split = jobs.filter(pl.col("num_pods") > 1).height
    if split:
        changes[split_reason(max_gpus_per_pod)] += split
    return AdaptedTrace(validate_jobs(jobs, source, _RAW_NAMES), source, file_sha256(file), changes)
