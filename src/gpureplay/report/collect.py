"""Collect finished run folders into tidy tables for a comparison report.

A *run* is one complete folder (:mod:`gpureplay.report.folders`): ``jobs.parquet``,
``timeline.parquet``, ``summary.parquet`` and a ``DONE`` marker. A
*configuration* is everything a run was configured with except its seed (and
the debug flag, which does not change results), plus the checksums of the
trace and node-list files it read (``trace_sha256`` and ``cluster_sha256``
in the Parquet metadata): two runs of ``trace=csv trace.path=x.csv`` on
different file contents are two configurations, not two seeds of one. Runs of
one configuration with different seeds are the samples a report averages over.
Configurations are labelled by the config keys that actually differ between
them, so a sweep over schedulers and load reads ``scheduler=gang-binpack,
workload.load=2.0`` rather than the hundred keys every run shares.

Folders may come from different traces or versions, so their summaries need
not have the same columns: metrics a run lacks (an older version wrote none
for the measurement window) are null and shown as "n/a"; config values are
compared as text (``str`` of the value, "null" for none), so a run that stored
``seed`` as "0" and one that stored it as the integer 0 agree. The per-job and
timeline tables are scanned lazily with missing columns inserted as null.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from gpureplay.report.folders import LeftOut, counts, describe, scan
from gpureplay.results.schemas import (
    JOBS_RESULT_SCHEMA,
    QUEUE_SAMPLE_SCHEMA,
    QUEUE_SUMMARY_SCHEMA,
    SUMMARY_METRICS_SCHEMA,
    TIMELINE_SCHEMA,
)
from gpureplay.results.writer import read_metadata

#: Config keys that do not define a configuration: the seed is what a report
#: averages over, and ``debug`` only turns on invariant checks.
NON_CONFIG_KEYS: frozenset[str] = frozenset({"seed", "debug"})

#: Prefixes of keys that describe how Hydra ran a job, not what was replayed.
NON_CONFIG_PREFIXES: tuple[str, ...] = ("hydra.",)

#: Config groups in the order they appear in a configuration's label.
GROUP_ORDER: tuple[str, ...] = ("scheduler", "workload", "trace", "cluster")

#: Checksums of the input files (Parquet metadata of ``summary.parquet``): part of a
#: configuration's identity, shown in a label only when no config key tells the runs apart.
CHECKSUM_KEYS: tuple[str, ...] = ("trace_sha256", "cluster_sha256")

#: Hex digits of a checksum shown in labels.
CHECKSUM_DIGITS = 12

#: Headline metrics of ``summary.parquet`` that a report reads, with their types. The
#: results schema wins where it names the column; the rest are metrics of newer versions
#: (run span, censoring, measurement window) or of older ones (``replay_seconds``), so
#: that a column is never mistaken for a config key whichever version wrote the run.
_COUNT = pl.Int64()
_FLOAT = pl.Float64()
SUMMARY_METRICS: dict[str, pl.DataType] = {
    **dict.fromkeys(("jobs", "finished", "rejected", "deadlocked", "unfinished", "never_started"), _COUNT),
    **dict.fromkeys(("total_gpus", "wait_censored", "jct_censored", "window_jobs"), _COUNT),
    **dict.fromkeys(("window_wait_censored", "window_jct_censored"), _COUNT),
    **dict.fromkeys(("span_start", "span_end", "window_start", "window_end", "makespan"), _FLOAT),
    **{
        f"{scope}{m}_{q}": _FLOAT
        for scope in ("", "window_")
        for m in ("wait", "jct")
        for q in ("mean", "median", "p95", "p99")
    },
    **dict.fromkeys(("bounded_slowdown_mean", "window_bounded_slowdown_mean"), _FLOAT),
    **dict.fromkeys(("gpu_allocation_rate", "window_gpu_allocation_rate", "fragmented_gpus_mean"), _FLOAT),
    **dict.fromkeys(("never_arrived",), _COUNT),
    **dict.fromkeys(("wait_mean_started", "jct_mean_finished", "sample_interval_used"), _FLOAT),
    "replay_seconds": _FLOAT,
    **SUMMARY_METRICS_SCHEMA,
}

#: ``mode`` of a packing run (the FGD experiment: pods placed once, never departing): its
#: folder holds other tables, and :mod:`gpureplay.report.packing` reports it.
PACKING_MODE = "packing"

#: Metrics of a packing run's ``summary.parquet``: the same columns as
#: ``gpureplay.results.packing.PACKING_SUMMARY_SCHEMA``, which is not imported: it would
#: load the engine (a test checks that the two agree).
PACKING_METRICS: dict[str, pl.DataType] = {
    **dict.fromkeys(("pods", "placed", "failed", "capacity_gpus"), _COUNT),
    "arrived_gpu_pct": _FLOAT,
    "typical_pods": _COUNT,
    "typical_pods_coverage": _FLOAT,
    **dict.fromkeys(
        (
            "allocated_gpu_pct_at_100",
            "unallocated_gpu_pct_at_100",
            "frag_gpu_pct_at_100",
            "frag_ratio_pct_at_100",
        ),
        _FLOAT,
    ),
    "failed_pods_at_100": _COUNT,
    **dict.fromkeys(("allocated_gpu_pct_final", "unallocated_gpu_pct_final", "frag_gpu_pct_final"), _FLOAT),
}

#: Columns of ``jobs.parquet`` and ``timeline.parquet`` the report reads, as it reads them
#: (the job state as text, so a version with more states still reads).
JOB_COLUMNS: dict[str, pl.DataType] = {
    **{c: JOBS_RESULT_SCHEMA[c] for c in ("queue", "gpus", "submit_time", "start_time", "finish_time")},
    **{c: JOBS_RESULT_SCHEMA[c] for c in ("wait_time", "jct", "run_time", "duration")},
    **{c: JOBS_RESULT_SCHEMA[c] for c in ("priority", "priority_class", "preemptions", "pending_time")},
    "lost_gpu_seconds": JOBS_RESULT_SCHEMA["lost_gpu_seconds"],
    "state": pl.String(),
}
QUEUE_SAMPLE_COLUMNS: dict[str, pl.DataType] = {
    c: QUEUE_SAMPLE_SCHEMA[c]
    for c in ("time", "queue", "usage_gpu", "pending_jobs", "nominal_gpu", "borrowed_gpu")
}
QUEUE_SUMMARY_COLUMNS: dict[str, pl.DataType] = {
    c: QUEUE_SUMMARY_SCHEMA[c]
    for c in (
        "queue",
        "admitted",
        "wait_mean",
        "quota_share",
        "preemptions",
        "lost_gpu_hours",
        "preemptions_caused",
    )
}
TIMELINE_COLUMNS: dict[str, pl.DataType] = {
    c: TIMELINE_SCHEMA[c]
    for c in (
        "time",
        "allocated_fraction",
        "fragmented_gpus",
        "preemptions",
        "lost_gpu_seconds",
        "busy_fraction",
        "power_w",
    )
}

#: Columns added to every collected table.
RUN_COLUMN = "run"
CONFIG_COLUMN = "config"


@dataclass(frozen=True)
class Collection:
    """What a report is built from.

    Attributes
    ----------
    runs
        One row per run: ``run`` (folder), ``config`` (label), ``seed`` (Int64,
        null when absent), every flattened config key and checksum (String:
        the value as text, "null" for none) and every column of
        :data:`SUMMARY_METRICS` (null where the run lacks it).
    configs
        One row per configuration, in report order: ``config``, ``runs``
        (number of seeds), and the label keys.
    label_keys
        The config keys that vary across configurations, in label order.
    common
        Config keys with one value across all runs (e.g. ``trace.name``).
    jobs, timeline
        Lazy scans of every run's ``jobs.parquet`` / ``timeline.parquet``,
        with ``run`` and ``config`` columns added (Enum dtypes, in the order
        of ``runs`` and ``configs``).
    notes
        Runs left out on purpose (duplicates of another run).
    queue_samples
        Lazy scan of the runs' ``queues.parquet`` (``run`` / ``config`` added as for ``jobs``);
        None when no run has one (written before per-queue samples existed).
    queue_summaries
        Lazy scan of the runs' ``queue_summary.parquet`` (:data:`QUEUE_SUMMARY_COLUMNS`, ``run`` /
        ``config`` added); None when no run has one.
    left_out
        Run folders under the inputs that are not in the report: failed,
        incomplete (killed) or unreadable, each with its reason.
    baseline
        ``(key, value)`` pairs naming the baseline configuration chosen by
        the user (``gpureplay report --baseline``); empty: the default rule
        (:func:`gpureplay.report.stats.baselines`).
    """

    runs: pl.DataFrame
    configs: pl.DataFrame
    label_keys: tuple[str, ...]
    common: dict[str, str]
    jobs: pl.LazyFrame
    timeline: pl.LazyFrame
    notes: tuple[str, ...] = field(default=())
    queue_samples: pl.LazyFrame | None = None
    queue_summaries: pl.LazyFrame | None = None
    left_out: tuple[LeftOut, ...] = field(default=())
    baseline: tuple[tuple[str, str], ...] = field(default=())


def short_key(key: str) -> str:
    """How a key is written in labels: a group's ``name`` stands for the group.

    Examples
    --------
    >>> short_key("scheduler.name"), short_key("workload.load")
    ('scheduler', 'workload.load')
    """
    return key.removesuffix(".name") if key.count(".") == 1 else key


def is_config_key(key: str) -> bool:
    """True for a flattened config key that helps define a configuration.

    Examples
    --------
    >>> [is_config_key(k) for k in ("scheduler.name", "seed", "debug", "hydra.job.num", "wait_mean")]
    [True, False, False, False, False]
    """
    return (
        key not in NON_CONFIG_KEYS
        and key not in SUMMARY_METRICS
        and key not in PACKING_METRICS
        and not key.startswith(NON_CONFIG_PREFIXES)
    )


def config_text(value: Any) -> str:
    """A config value as text, the way configurations are compared and labelled.

    Examples
    --------
    >>> [config_text(v) for v in (None, 0, "0", 2.0, True, [1, 2])]
    ['null', '0', '0', '2.0', 'True', '[1, 2]']
    """
    return "null" if value is None else str(value)


@dataclass(frozen=True)
class RunSummary:
    """One run's summary: its folder, config keys and checksums as text, and its metrics (one row).

    ``metrics`` has the columns of :data:`SUMMARY_METRICS` for a timed replay and
    those of :data:`PACKING_METRICS` for a packing run (:attr:`packing`).
    """

    folder: Path
    keys: dict[str, str]
    metrics: pl.DataFrame

    @property
    def packing(self) -> bool:
        """True for a packing run (``mode=packing``), whose tables a replay report cannot read."""
        return self.keys.get("mode") == PACKING_MODE


def split_modes(summaries: Sequence[RunSummary]) -> tuple[list[RunSummary], list[RunSummary]]:
    """The timed-replay runs and the packing runs among ``summaries``, each in the order given."""
    return [s for s in summaries if not s.packing], [s for s in summaries if s.packing]


def read_summary(folder: Path) -> RunSummary | LeftOut:
    """One run's summary row: config keys and checksums as text, metrics typed; or why it is unreadable."""
    path = folder / "summary.parquet"
    try:
        table = pl.read_parquet(path)
        meta = read_metadata(path)
    except Exception as err:  # polars and pyarrow raise several types for damaged data
        reason = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        return LeftOut(folder, "unreadable", f"summary.parquet cannot be read ({reason})")
    if table.height != 1:
        return LeftOut(folder, "unreadable", f"summary.parquet has {table.height} rows, expected 1")
    row = table.row(0, named=True)
    # A packing run's metrics (placed, failed, ...) must not pass for config keys.
    schema = PACKING_METRICS if row.get("mode") == PACKING_MODE else SUMMARY_METRICS
    keys = {k: config_text(v) for k, v in row.items() if k not in SUMMARY_METRICS and k not in schema}
    for key in CHECKSUM_KEYS:
        keys[key] = meta.get(key) or "null"
    metrics = table.select(
        pl.col(name).cast(dtype, strict=False) if name in table.columns else pl.lit(None, dtype).alias(name)
        for name, dtype in schema.items()
    )
    return RunSummary(folder, keys, metrics)


def config_columns(summaries: pl.DataFrame) -> list[str]:
    """The config keys (and checksums) among a collected table's columns, less seed and debug."""
    return [
        name for name in summaries.columns if name not in (RUN_COLUMN, CONFIG_COLUMN) and is_config_key(name)
    ]


def label_keys(runs: pl.DataFrame, keys: Sequence[str]) -> list[str]:
    """The keys that label configurations: those that vary, less those other label keys imply.

    Keys are taken in order of how a reader names a configuration (the
    scheduler, the trace, the cluster, other groups' names, then single keys,
    the input checksums last), and a key is kept only when the keys kept
    before it do not already fix its value: every run of ``scheduler=fifo``
    has ``scheduler.backfill=none``, and in a sweep of experiments each trace
    brings its own cluster and sample interval, so ``scheduler=fifo,
    trace=itp`` says it all. The kept keys still tell every configuration
    apart. A key overridden independently (two ``backfill_depth`` values
    under one scheduler name) stays, and a checksum shows only when the same
    config keys read different files.

    Examples
    --------
    >>> runs = pl.DataFrame(
    ...     {
    ...         "scheduler.name": ["fifo", "fifo", "gang", "gang"],
    ...         "scheduler.gang": ["gang", "gang", "gang", "gang"],
    ...         "scheduler.backfill": ["none", "none", "easy", "easy"],
    ...         "workload.load": ["1.0", "2.0", "1.0", "2.0"],
    ...         "trace_sha256": ["ab", "ab", "ab", "ab"],
    ...     }
    ... )
    >>> label_keys(runs, runs.columns)
    ['scheduler.name', 'workload.load']
    """
    varying = [k for k in keys if runs.select(pl.col(k).n_unique()).item() > 1]

    def group_rank(key: str) -> int:
        group = key.partition(".")[0]
        return GROUP_ORDER.index(group) if group in GROUP_ORDER else len(GROUP_ORDER)

    def priority(key: str) -> tuple[int, int, int, str]:
        checksum = key in CHECKSUM_KEYS
        is_name = key.count(".") == 1 and key.endswith(".name")
        first = ("scheduler.name", "trace.name", "cluster.name")
        return (int(checksum), first.index(key) if key in first else len(first), int(not is_name), key)

    kept: list[str] = []
    for key in sorted(varying, key=priority):
        implied = bool(kept) and runs.group_by(kept).agg(pl.col(key).n_unique()).get_column(key).max() == 1
        if not implied:
            kept.append(key)

    def order(key: str) -> tuple[int, int, int, str]:
        return (int(key in CHECKSUM_KEYS), group_rank(key), 0 if key.endswith(".name") else 1, key)

    return sorted(kept, key=order)


def _label_value(key: str) -> pl.Expr:
    value = pl.col(key).fill_null("null")
    return value.str.slice(0, CHECKSUM_DIGITS) if key in CHECKSUM_KEYS else value


def _label_expr(keys: Sequence[str]) -> pl.Expr:
    parts = [pl.concat_str(pl.lit(f"{short_key(k)}="), _label_value(k)) for k in keys]
    return pl.concat_str(parts, separator=", ")


def _sort_exprs(keys: Sequence[str]) -> list[pl.Expr]:
    # Numbers sort as numbers (load 0.5 < 2.0 < 10), names alphabetically.
    exprs: list[pl.Expr] = []
    for key in keys:
        exprs += [pl.col(key).cast(pl.Float64, strict=False), pl.col(key)]
    return exprs


def runs_table(summaries: Sequence[RunSummary]) -> pl.DataFrame:
    """One row per run: its folder, config keys as text ("null" where a run lacks one), metrics, seed."""
    keys = pl.DataFrame(
        [{RUN_COLUMN: str(s.folder), **s.keys} for s in summaries], infer_schema_length=None
    ).select(pl.all().cast(pl.String))
    # Keys a run lacks (another trace's options) read "null", as a null value would.
    keys = keys.with_columns(pl.exclude(RUN_COLUMN).fill_null("null"))
    metrics = pl.concat([s.metrics for s in summaries], how="vertical")
    seed = pl.col("seed").cast(pl.Int64, strict=False) if "seed" in keys.columns else pl.lit(None, pl.Int64)
    return keys.hstack(metrics).with_columns(seed.alias("seed"))


def _scan_all(
    pairs: Sequence[tuple[str, str]],
    name: str,
    columns: dict[str, pl.DataType],
    run_enum: pl.Enum,
    config_enum: pl.Enum,
) -> pl.LazyFrame:
    """Lazy scan of one result file of every run: the report's columns, cast, plus ``run`` and ``config``.

    Each file is scanned with its own schema and cast here, so files written by
    other versions (a column missing, an Enum with more states, string job ids)
    stack without a schema error. ``run`` and ``config`` are Enum columns (4
    bytes a row): per-job tables of a sweep reach tens of millions of rows.
    """
    scans = []
    for run, config in pairs:
        path = Path(run) / name
        present = pl.read_parquet_schema(path)
        scans.append(
            pl.scan_parquet(path, glob=False).select(
                *(
                    pl.col(c).cast(t) if c in present else pl.lit(None, t).alias(c)
                    for c, t in columns.items()
                ),
                pl.lit(run).cast(run_enum).alias(RUN_COLUMN),
                pl.lit(config).cast(config_enum).alias(CONFIG_COLUMN),
            )
        )
    return pl.concat(scans, how="vertical")


def complete_runs(
    inputs: Sequence[Path], exclude: Sequence[LeftOut] = ()
) -> tuple[list[RunSummary], list[LeftOut]]:
    """The summaries of every complete, readable run under ``inputs``, and the folders left out (sorted).

    Raises
    ------
    FileNotFoundError
        When an input does not exist or no complete, readable run is found (the
        message lists the folders left out and why).
    gpureplay.errors.InputError
        When an input is not a folder.
    """
    found = scan(inputs)
    skip = {item.folder for item in exclude}
    left_out = [*found.left_out, *exclude]
    summaries: list[RunSummary] = []
    for folder in found.complete:
        if folder in skip:
            continue
        summary = read_summary(folder)
        if isinstance(summary, LeftOut):
            left_out.append(summary)
        else:
            summaries.append(summary)
    left_out.sort(key=lambda item: str(item.folder))
    if not summaries:
        where = ", ".join(str(p) for p in inputs) or "(no folder given)"
        text = f"no complete run (folder with a DONE marker and readable results) under {where}"
        if left_out:
            text += f"; {counts(left_out)}:\n" + "\n".join(describe(left_out, limit=10))
        raise FileNotFoundError(text)
    return summaries, left_out


def collect(inputs: Sequence[Path], exclude: Sequence[LeftOut] = ()) -> Collection:
    """Read every complete run under ``inputs`` into a :class:`Collection`.

    Parameters
    ----------
    inputs
        Run folders and/or sweep folders (searched at any depth).
    exclude
        Runs found unreadable by an earlier attempt (:func:`gpureplay.report.folders.find_unreadable`):
        left out and listed with the others.

    Raises
    ------
    FileNotFoundError
        When an input does not exist or no complete, readable run is found under
        them (the message lists the folders left out and why).
    gpureplay.errors.InputError
        When an input is not a folder.
    """
    summaries, left_out = complete_runs(inputs, exclude)
    return collect_summaries(summaries, left_out)


def drop_repeated_runs(runs: pl.DataFrame, keys: Sequence[str], what: str, notes: list[str]) -> pl.DataFrame:
    """``runs`` sorted by folder, keeping the first of runs with the same config ``keys`` and seed.

    The same configuration and seed twice (a sweep re-run into a new folder)
    would count one sample twice and shrink the interval; a note naming
    ``what`` was left out (up to five folders) is appended to ``notes``.
    """
    identity = [*keys, "seed"]
    runs = runs.sort(RUN_COLUMN)
    dupes = runs.filter(~pl.struct(identity).is_first_distinct())
    if dupes.height:
        runs = runs.filter(pl.struct(identity).is_first_distinct())
        notes.append(
            f"{dupes.height} {what} repeating another run's configuration, input files and seed left out: "
            + ", ".join(dupes.get_column(RUN_COLUMN).to_list()[:5])
            + (", ..." if dupes.height > 5 else "")
        )
    return runs


def collect_summaries(summaries: Sequence[RunSummary], left_out: Sequence[LeftOut] = ()) -> Collection:
    """A :class:`Collection` of the timed-replay runs among ``summaries`` (see :func:`collect`).

    Packing runs are not in it (:mod:`gpureplay.report.packing` reports them).

    Raises
    ------
    FileNotFoundError
        When no summary is of a timed replay.
    """
    summaries, _ = split_modes(summaries)
    if not summaries:
        raise FileNotFoundError("no timed-replay run (mode=replay) among the complete runs")
    runs = runs_table(summaries)
    keys = config_columns(runs)
    notes: list[str] = []
    runs = drop_repeated_runs(runs, keys, "run(s)", notes)

    labels = label_keys(runs, keys)
    if not labels:
        # One configuration: name it by its scheduler, the axis a reader looks for first.
        fallback = "scheduler.name" if "scheduler.name" in keys else None
        label = _label_expr([fallback]) if fallback else pl.lit("all runs")
    else:
        label = _label_expr(labels)
    runs = runs.with_columns(label.alias(CONFIG_COLUMN)).sort([*_sort_exprs(labels), "seed", RUN_COLUMN])
    configs = (
        runs.group_by(CONFIG_COLUMN, maintain_order=True)
        .agg(pl.len().cast(pl.Int64).alias("runs"), *(pl.col(k).first() for k in labels))
        .select(CONFIG_COLUMN, "runs", *labels)
    )
    common = {
        k: v
        for k in keys
        if runs.select(pl.col(k).n_unique()).item() == 1
        and (v := runs.get_column(k)[0]) not in (None, "null")
    }

    run_enum = pl.Enum(runs.get_column(RUN_COLUMN).to_list())
    config_enum = pl.Enum(configs.get_column(CONFIG_COLUMN).to_list())
    pairs = list(runs.select(RUN_COLUMN, CONFIG_COLUMN).iter_rows())
    return Collection(
        runs=runs,
        configs=configs,
        label_keys=tuple(labels),
        common=common,
        jobs=_scan_all(pairs, "jobs.parquet", JOB_COLUMNS, run_enum, config_enum),
        timeline=_scan_all(pairs, "timeline.parquet", TIMELINE_COLUMNS, run_enum, config_enum),
        notes=tuple(notes),
        left_out=tuple(left_out),
        queue_samples=_scan_present(pairs, "queues.parquet", QUEUE_SAMPLE_COLUMNS, run_enum, config_enum),
        queue_summaries=_scan_present(
            pairs, "queue_summary.parquet", QUEUE_SUMMARY_COLUMNS, run_enum, config_enum
        ),
    )


def _scan_present(
    pairs: Sequence[tuple[str, str]],
    name: str,
    columns: dict[str, pl.DataType],
    run_enum: pl.Enum,
    config_enum: pl.Enum,
) -> pl.LazyFrame | None:
    """:func:`_scan_all` of the runs that have the file ``name`` (older runs lack the per-queue ones)."""
    present = [(run, config) for run, config in pairs if (Path(run) / name).is_file()]
    if not present:
        return None
    return _scan_all(present, name, columns, run_enum, config_enum)


__all__ = [
    "CHECKSUM_DIGITS",
    "CHECKSUM_KEYS",
    "CONFIG_COLUMN",
    "PACKING_METRICS",
    "PACKING_MODE",
    "RUN_COLUMN",
    "SUMMARY_METRICS",
    "Collection",
    "RunSummary",
    "collect",
    "collect_summaries",
    "complete_runs",
    "config_columns",
    "config_text",
    "drop_repeated_runs",
    "is_config_key",
    "label_keys",
    "read_summary",
    "runs_table",
    "short_key",
    "split_modes",
]
