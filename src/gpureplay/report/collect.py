"""Collect finished run folders into tidy tables for a comparison report.

A *run* is one folder with ``jobs.parquet``, ``timeline.parquet``,
``summary.parquet`` and a ``DONE`` marker (``gpureplay.results.writer``). A
*configuration* is everything a run was configured with except its seed (and
the debug flag, which does not change results): runs of one configuration with
different seeds are the samples a report averages over. Configurations are
labelled by the config keys that actually differ between them, so a sweep
over schedulers and load reads ``scheduler=gang-binpack, workload.load=2.0``
rather than the hundred keys every run shares.

Folders may come from different traces or versions, so their summaries need
not have the same columns: they are stacked with a diagonal concat (missing
columns are null), and the per-job and timeline tables are scanned lazily
with missing columns inserted as null.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from gpureplay.errors import InputError, Problem
from gpureplay.results.compare import run_folders
from gpureplay.results.schemas import JOBS_RESULT_SCHEMA, SUMMARY_METRICS_SCHEMA, TIMELINE_SCHEMA

#: Result files every complete run folder holds (the marker is written after them).
RESULT_FILES: tuple[str, ...] = ("jobs.parquet", "timeline.parquet", "summary.parquet")

#: Config keys that do not define a configuration: the seed is what a report
#: averages over, and ``debug`` only turns on invariant checks.
NON_CONFIG_KEYS: frozenset[str] = frozenset({"seed", "debug"})

#: Prefixes of keys that describe how Hydra ran a job, not what was replayed.
NON_CONFIG_PREFIXES: tuple[str, ...] = ("hydra.",)

#: Config groups in the order they appear in a configuration's label.
GROUP_ORDER: tuple[str, ...] = ("scheduler", "workload", "trace", "cluster")

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
        null when absent), every flattened config key (String) and every
        column of ``SUMMARY_METRICS_SCHEMA``.
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
        What was left out and why (incomplete folders, duplicate runs).
    """

    runs: pl.DataFrame
    configs: pl.DataFrame
    label_keys: tuple[str, ...]
    common: dict[str, str]
    jobs: pl.LazyFrame
    timeline: pl.LazyFrame
    notes: tuple[str, ...] = field(default=())


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
    >>> [is_config_key(k) for k in ("scheduler.name", "seed", "debug", "hydra.job.num")]
    [True, False, False, False]
    """
    return key not in NON_CONFIG_KEYS and not key.startswith(NON_CONFIG_PREFIXES)


def find_runs(inputs: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """Return the complete run folders under ``inputs`` and the incomplete ones.

    A folder is incomplete when it holds some result file but no ``DONE``
    marker (a run that was killed or is still running): it is left out.

    Raises
    ------
    FileNotFoundError
        When an input does not exist.
    InputError
        When an input is not a folder, or a folder with a ``DONE`` marker lacks
        a result file (the marker promises they are all there).
    """
    roots = [Path(p) for p in inputs]
    for root in roots:
        if not root.exists():
            raise FileNotFoundError(f"{root}: no such file or folder")
        if not root.is_dir():
            raise InputError.single("not a folder (give a run or sweep folder)", str(root))
    complete = run_folders(roots)
    missing = [
        Problem(f"has a DONE marker but no {name}", str(folder))
        for folder in complete
        for name in RESULT_FILES
        if not (folder / name).is_file()
    ]
    if missing:
        raise InputError(missing)
    done = set(complete)
    partial = {
        hit.parent
        for root in roots
        for name in RESULT_FILES
        for hit in [root / name, *root.rglob(name)]
        if hit.is_file() and hit.parent not in done
    }
    return complete, sorted(partial)


def _read_summaries(folders: Sequence[Path]) -> pl.DataFrame:
    scans = [
        pl.scan_parquet(folder / "summary.parquet", glob=False).with_columns(
            pl.lit(str(folder)).alias(RUN_COLUMN)
        )
        for folder in folders
    ]
    summaries = pl.concat(scans, how="diagonal_relaxed").collect()
    counts = summaries.group_by(RUN_COLUMN).len().filter(pl.col("len") != 1)
    if counts.height:
        raise InputError(
            [
                Problem(f"summary has {n} rows, expected 1", str(Path(run) / "summary.parquet"))
                for run, n in counts.sort(RUN_COLUMN).iter_rows()
            ]
        )
    # Older or foreign summaries may lack a metric: add it as null so every table has every column.
    return summaries.with_columns(
        pl.lit(None, dtype).alias(name)
        for name, dtype in SUMMARY_METRICS_SCHEMA.items()
        if name not in summaries
    ).with_columns(pl.col(name).cast(dtype) for name, dtype in SUMMARY_METRICS_SCHEMA.items())


def config_columns(summaries: pl.DataFrame) -> list[str]:
    """The flattened config keys among a summary table's columns (every column but the metrics).

    Summaries keep each key's type (``seed`` Int64, ``workload.load`` Float64, ...);
    :func:`collect` compares and labels them as text.
    """
    return [
        name
        for name in summaries.columns
        if name not in SUMMARY_METRICS_SCHEMA and name != RUN_COLUMN and is_config_key(name)
    ]


def label_keys(runs: pl.DataFrame, keys: Sequence[str]) -> list[str]:
    """The keys that label configurations: those that vary, less those a group's name implies.

    A key that varies is dropped when its group's ``name`` varies too and fixes
    its value (every run of ``scheduler=fifo`` has ``scheduler.backfill=none``):
    the name already says it. A key overridden independently of the name
    (two ``backfill_depth`` values under one scheduler name) stays.

    Examples
    --------
    >>> runs = pl.DataFrame(
    ...     {
    ...         "scheduler.name": ["fifo", "fifo", "gang", "gang"],
    ...         "scheduler.gang": ["gang", "gang", "gang", "gang"],
    ...         "scheduler.backfill": ["none", "none", "easy", "easy"],
    ...         "workload.load": ["1.0", "2.0", "1.0", "2.0"],
    ...     }
    ... )
    >>> label_keys(runs, runs.columns)
    ['scheduler.name', 'workload.load']
    """
    varying = [k for k in keys if runs.select(pl.col(k).n_unique()).item() > 1]
    names = {k.partition(".")[0]: k for k in varying if k.count(".") == 1 and k.endswith(".name")}
    kept: list[str] = []
    for key in varying:
        group = key.partition(".")[0]
        name = names.get(group)
        if name is not None and name != key:
            implied = runs.group_by(name).agg(pl.col(key).n_unique()).get_column(key).max() == 1
            if implied:
                continue
        kept.append(key)

    def order(key: str) -> tuple[int, int, str]:
        group = key.partition(".")[0]
        rank = GROUP_ORDER.index(group) if group in GROUP_ORDER else len(GROUP_ORDER)
        return (rank, 0 if key.endswith(".name") else 1, key)

    return sorted(kept, key=order)


def _label_expr(keys: Sequence[str]) -> pl.Expr:
    parts = [pl.concat_str(pl.lit(f"{short_key(k)}="), pl.col(k).fill_null("null")) for k in keys]
    return pl.concat_str(parts, separator=", ")


def _sort_exprs(keys: Sequence[str]) -> list[pl.Expr]:
    # Numbers sort as numbers (load 0.5 < 2.0 < 10), names alphabetically.
    exprs: list[pl.Expr] = []
    for key in keys:
        exprs += [pl.col(key).cast(pl.Float64, strict=False), pl.col(key)]
    return exprs


def collect(inputs: Sequence[Path]) -> Collection:
    """Read every complete run under ``inputs`` into a :class:`Collection`.

    Parameters
    ----------
    inputs
        Run folders and/or sweep folders (searched at any depth).

    Raises
    ------
    FileNotFoundError
        When an input does not exist or no complete run is found under them.
    InputError
        On a malformed run folder (see :func:`find_runs`) or summary.
    """
    folders, partial = find_runs(inputs)
    if not folders:
        where = ", ".join(str(p) for p in inputs) or "(no folder given)"
        hint = f" ({len(partial)} incomplete folder(s) without a DONE marker)" if partial else ""
        raise FileNotFoundError(f"no complete run (folder with a DONE marker) under {where}{hint}")
    notes: list[str] = []
    if partial:
        shown = ", ".join(str(p) for p in partial[:5]) + (", ..." if len(partial) > 5 else "")
        notes.append(f"{len(partial)} incomplete run folder(s) without a DONE marker left out: {shown}")

    summaries = _read_summaries(folders)
    keys = config_columns(summaries)
    seed = (
        pl.col("seed").cast(pl.Int64, strict=False) if "seed" in summaries.columns else pl.lit(None, pl.Int64)
    )
    # Typed config keys (Int64, Float64, Boolean) are labelled and compared as text, like older summaries.
    runs = summaries.with_columns(seed.alias("seed"), *(pl.col(k).cast(pl.String) for k in keys))

    # The same configuration and seed twice (a sweep re-run into a new folder) would count one
    # sample twice and shrink the interval: keep the first folder, say which were left out.
    identity = [*keys, "seed"]
    runs = runs.sort(RUN_COLUMN)
    dupes = runs.filter(~pl.struct(identity).is_first_distinct())
    if dupes.height:
        runs = runs.filter(pl.struct(identity).is_first_distinct())
        notes.append(
            f"{dupes.height} run(s) repeating another run's configuration and seed left out: "
            + ", ".join(dupes.get_column(RUN_COLUMN).to_list()[:5])
            + (", ..." if dupes.height > 5 else "")
        )

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
        if runs.select(pl.col(k).n_unique()).item() == 1 and (v := runs.get_column(k)[0]) is not None
    }

    # Per-job tables of a sweep reach tens of millions of rows: label them with Enum columns
    # (4 bytes a row) rather than repeating each folder and label string.
    index = runs.select(
        pl.col(RUN_COLUMN).alias("_file"),
        pl.col(RUN_COLUMN).cast(pl.Enum(runs.get_column(RUN_COLUMN).to_list())),
        pl.col(CONFIG_COLUMN).cast(pl.Enum(configs.get_column(CONFIG_COLUMN).to_list())),
    )

    def scan(name: str, schema: dict[str, pl.DataType]) -> pl.LazyFrame:
        files = index.with_columns(pl.concat_str(pl.col("_file"), pl.lit(f"/{name}")).alias("_file"))
        lazy = pl.scan_parquet(
            files.get_column("_file").to_list(),
            schema=schema,
            missing_columns="insert",
            extra_columns="ignore",
            include_file_paths="_file",
            glob=False,
        )
        return lazy.join(files.lazy(), on="_file", how="inner").drop("_file")

    return Collection(
        runs=runs,
        configs=configs,
        label_keys=tuple(labels),
        common=common,
        jobs=scan("jobs.parquet", JOBS_RESULT_SCHEMA),
        timeline=scan("timeline.parquet", TIMELINE_SCHEMA),
        notes=tuple(notes),
    )


__all__ = [
    "CONFIG_COLUMN",
    "RESULT_FILES",
    "RUN_COLUMN",
    "Collection",
    "collect",
    "config_columns",
    "find_runs",
    "is_config_key",
    "label_keys",
    "short_key",
]
