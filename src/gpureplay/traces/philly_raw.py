"""Microsoft Philly's raw job log, ``cluster_job_log`` of msr-fiddle/philly-traces.

The file is one JSON array of job objects (philly-traces README, "cluster_job_log")::

    {"status": "Pass", "vc": "ee9e8c", "jobid": "application_1506638472019_14199",
     "submitted_time": "2017-10-07 01:11:39", "user": "ce2f4c",
     "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
                   "detail": [{"ip": "m47", "gpus": ["gpu0", "gpu1"]}]}, ...]}

It is not bundled (the 1 GB trace archive is a Git-LFS object); point ``path`` at your copy.
"""

from __future__ import annotations

import gzip
import io
from collections import Counter
from pathlib import Path

import polars as pl

from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import AdaptedTrace, file_sha256
from gpureplay.traces.philly import parse_timestamps, seconds_since_first, split_reason
from gpureplay.traces.pods import split_gpus_into_pods
from gpureplay.traces.schema import validate_jobs

#: Spellings of "no time recorded" in the log (the official notebook's ``parse_date``).
MISSING_TIME: tuple[str, ...] = ("", "None")

_DETAIL = pl.List(pl.Struct({"ip": pl.String(), "gpus": pl.List(pl.String())}))
_ATTEMPT = pl.Struct({"start_time": pl.String(), "end_time": pl.String(), "detail": _DETAIL})
_JOB_SCHEMA: dict[str, pl.DataType] = {
    "status": pl.String(),
    "vc": pl.String(),
    "jobid": pl.String(),
    "attempts": pl.List(_ATTEMPT),
    "submitted_time": pl.String(),
    "user": pl.String(),
}
_RAW_NAMES = {
    "submit_time": "submitted_time",
    "duration": "attempts",
    "num_pods": "attempts",
    "gpu_milli": "attempts",
    "queue": "vc",
    "user": "user",
}

NO_ATTEMPTS = "no scheduling attempt recorded (never ran)"
NO_FIRST_START = "first attempt has no start_time"
CENSORED = "censored: last attempt has no end_time (still running when the log was taken)"
NO_SUBMIT = "no submitted_time"
NEGATIVE_RUN = "last attempt ends before the first one starts"
ZERO_GPU = "first attempt used no GPUs (kept as a 0-GPU job)"


def _seconds(interval: pl.Expr) -> pl.Expr:
    return interval.dt.total_microseconds().cast(pl.Float64) / 1_000_000


def _read_json_array(file: Path, source: str) -> pl.DataFrame:
    """Parse the job array with an explicit schema; keys the log lacks read as null."""
    try:
        data = file.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (OSError, EOFError) as exc:
        raise InputError.single(f"cannot read file: {exc}", source) from exc
    if not data.lstrip().startswith(b"["):
        raise InputError.single("malformed JSON: expected an array of job objects", source)
    try:
        return pl.read_json(io.BytesIO(data), schema=_JOB_SCHEMA)
    except pl.exceptions.PolarsError as exc:
        raise InputError.single(f"malformed JSON: {exc}", source) from exc


def load_philly_raw(path: str | Path, max_gpus_per_pod: int = 8) -> AdaptedTrace:
    """Read Philly's raw ``cluster_job_log`` into canonical jobs.

    Parameters
    ----------
    path
        The JSON array (plain or gzip); a relative path is looked up with
        :func:`gpureplay.paths.resolve_data_path`.
    max_gpus_per_pod
        GPUs one pod may hold (Philly's largest servers had 8), as in
        :func:`gpureplay.traces.philly.load_philly`.

    Returns
    -------
    AdaptedTrace
        One job per replayable array element, ``job_id`` = its 1-based position in the array,
        sorted by ``(submit_time, job_id)``. ``submit_time`` = seconds since the earliest kept
        ``submitted_time``; ``duration`` = last attempt's ``end_time`` - first attempt's
        ``start_time``; GPUs = the first attempt's GPUs summed over its machines, split into
        pods of at most ``max_gpus_per_pod``; ``queue`` = ``vc``; ``user`` = ``user``.
        Kept raw: ``source_jobid``, ``source_status``, ``source_attempts`` (count) and
        ``source_queueing_delay`` (first start - submission, s).

        ``changes`` counts, in this order of precedence, jobs dropped for having no attempt,
        no first ``start_time``, no last ``end_time`` (still running: censored), no
        ``submitted_time``, or a last end before the first start (e.g. clocks around the
        2017-11-05 daylight-saving change); 0-GPU jobs kept; multi-node jobs split.

    Raises
    ------
    InputError
        Naming the file for malformed JSON, or file, array position (row) and field
        (``submitted_time``, ``attempts[i].start_time``, ...) for a time that is neither
        missing (null, ``""``, ``"None"``) nor ``YYYY-MM-DD HH:MM:SS``.

    Notes
    -----
    GPU count, run time (retry gaps included) and queueing delay follow the official
    "Philly Trace Analysis" notebook of msr-fiddle/philly-traces (Jeon et al., ATC'19), whose
    ``Job`` class also treats a missing last ``end_time`` as "still running". Times are naive
    local time, as in the log.
    """
    num_pods, gpu_milli = split_gpus_into_pods(
        pl.col("first_gpus"), max_gpus_per_pod
    )  # checks the limit first
    file = resolve_data_path(path, "trace file")
    source = str(file)
    raw = _read_json_array(file, source).with_row_index("source_row", offset=1)
    jobs = parse_timestamps(raw.drop("attempts"), ["submitted_time"], source, missing=MISSING_TIME)

    # One row per attempt, numbered from 0 within its job as in the JSON, so errors can say
    # which attempt holds a bad time.
    attempts = (
        raw.lazy()
        .select("source_row", "attempts")
        .explode("attempts", empty_as_null=False, keep_nulls=False)
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("source_row").alias("attempt"))
        .select(
            "source_row",
            "attempt",
            pl.col("attempts").struct.field("start_time"),
            pl.col("attempts").struct.field("end_time"),
            pl.col("attempts")
            .struct.field("detail")
            .list.eval(pl.element().struct.field("gpus").list.len())
            .list.sum()
            .fill_null(0)
            .alias("gpus"),
        )
        .collect()
    )
    attempts = parse_timestamps(
        attempts,
        ["start_time", "end_time"],
        source,
        missing=MISSING_TIME,
        label=lambda field: pl.format("attempts[{}].{}", pl.col("attempt"), pl.lit(field)),
    )
    per_job = (
        attempts.lazy()
        .group_by("source_row")
        .agg(
            pl.len().cast(pl.Int32).alias("n_attempts"),
            pl.col("start_time").filter(pl.col("attempt") == 0).first().alias("first_start"),
            pl.col("gpus").filter(pl.col("attempt") == 0).first().alias("first_gpus"),
            pl.col("end_time").sort_by("attempt").last().alias("last_end"),
        )
    )
    table = (
        jobs.lazy()
        .join(per_job, on="source_row", how="left")
        .with_columns(pl.col("n_attempts").fill_null(0))
        .with_columns(
            pl.when(pl.col("n_attempts") == 0)
            .then(pl.lit(NO_ATTEMPTS))
            .when(pl.col("first_start").is_null())
            .then(pl.lit(NO_FIRST_START))
            .when(pl.col("last_end").is_null())
            .then(pl.lit(CENSORED))
            .when(pl.col("submitted_time").is_null())
            .then(pl.lit(NO_SUBMIT))
            .when(pl.col("last_end") < pl.col("first_start"))
            .then(pl.lit(NEGATIVE_RUN))
            .otherwise(pl.lit(None, dtype=pl.String))
            .alias("_drop")
        )
        .collect()
    )
    changes: Counter[str] = Counter()
    for reason, count in table.filter(pl.col("_drop").is_not_null()).group_by("_drop").len().iter_rows():
        changes[str(reason)] += int(count)
    kept = table.filter(pl.col("_drop").is_null())

    out = (
        kept.lazy()
        .select(
            pl.col("source_row").cast(pl.Int64).alias("job_id"),
            seconds_since_first(pl.col("submitted_time")).alias("submit_time"),
            _seconds(pl.col("last_end") - pl.col("first_start")).alias("duration"),
            num_pods.alias("num_pods"),
            gpu_milli.alias("gpu_milli"),
            pl.col("vc").alias("queue"),
            pl.col("user"),
            pl.col("source_row"),
            pl.col("jobid").alias("source_jobid"),
            pl.col("status").alias("source_status"),
            pl.col("n_attempts").alias("source_attempts"),
            _seconds(pl.col("first_start") - pl.col("submitted_time")).alias("source_queueing_delay"),
        )
        .sort("submit_time", "job_id")
        .collect()
    )
    zero_gpu = out.filter(pl.col("gpu_milli") == 0).height
    if zero_gpu:
        changes[ZERO_GPU] += zero_gpu
    split = out.filter(pl.col("num_pods") > 1).height
    if split:
        changes[split_reason(max_gpus_per_pod)] += split
    return AdaptedTrace(validate_jobs(out, source, _RAW_NAMES), source, file_sha256(file), changes)
