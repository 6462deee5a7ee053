"""Atomic Parquet writes with run metadata.

A file is written under a temporary name in the same folder and renamed into
place (``os.replace`` is atomic on POSIX), so a killed run never leaves a file
that looks complete. A run folder is complete when its ``DONE`` marker exists;
the marker is written last.

polars is imported by the functions that need it, so that the marker helpers
(:func:`is_done`, :func:`clear_run`) stay cheap to import for the command line.
Parquet is written and its key-value metadata read by polars itself: a run
never imports pyarrow.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gpureplay.results.timing import TIMING_FILE, RunTiming, write_timing

if TYPE_CHECKING:
    import polars as pl

#: Name of the marker written after every result file of a run is in place.
DONE_MARKER = "DONE"

#: Key prefix of gpureplay's entries in Parquet key-value metadata.
META_PREFIX = "gpureplay."

#: Result files of one run, in the order they are written (summary last, then the marker).
RESULT_FILES: tuple[str, ...] = (
    "jobs.parquet",
    "attempts.parquet",
    "timeline.parquet",
    "queues.parquet",
    "queue_summary.parquet",
    "summary.parquet",
)
#: Result files of a packing run (``mode: packing``): pods, the cluster after each pod, the fill curve.
PACKING_FILES: tuple[str, ...] = ("jobs.parquet", "events.parquet", "timeline.parquet", "summary.parquet")


def conform(df: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Return ``df`` with exactly ``schema``'s columns, order and dtypes.

    Raises
    ------
    ValueError
        If a column is missing or a cast would lose values: a bug, not bad input.
    """
    import polars as pl

    missing = [c for c in schema if c not in df.columns]
    if missing:
        raise ValueError(f"result table lacks column(s) {missing}")
    return df.select(pl.col(c).cast(t, strict=True) for c, t in schema.items())


def write_parquet_atomic(df: pl.DataFrame, path: Path, metadata: Mapping[str, str]) -> None:
    """Write ``df`` to ``path`` through a temporary file, with key-value ``metadata``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    meta = {f"{META_PREFIX}{k}": v for k, v in metadata.items()}
    try:
        df.write_parquet(tmp, compression="zstd", metadata=meta)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


#: File suffixes :func:`write_table_atomic` knows, and the format each means.
TABLE_SUFFIXES: dict[str, str] = {".parquet": "Parquet", ".csv": "CSV"}


def write_csv_atomic(df: pl.DataFrame, path: Path, list_separator: str = "|") -> None:
    """Write ``df`` as CSV to ``path`` through a temporary file; list columns become joined text.

    A list cell ``["A100", "H100"]`` is written ``A100|H100`` (an empty or
    null list, an empty cell), which is how ``trace=csv`` reads ``gpu_models``
    back (``trace.model_separator``).
    """
    import polars as pl

    path = Path(path)
    lists = [name for name, dtype in df.schema.items() if isinstance(dtype, pl.List)]
    flat = df.with_columns(pl.col(c).cast(pl.List(pl.String)).list.join(list_separator) for c in lists)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        flat.write_csv(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_table_atomic(df: pl.DataFrame, path: Path, metadata: Mapping[str, str]) -> str:
    """Write ``df`` in the format ``path``'s suffix names (:data:`TABLE_SUFFIXES`); the format's name.

    Parquet keeps ``metadata`` as key-value metadata; CSV has no place for it.

    Raises
    ------
    ValueError
        For a suffix other than ``.parquet`` or ``.csv``.
    """
    kind = TABLE_SUFFIXES.get(Path(path).suffix.lower())
    if kind == "Parquet":
        write_parquet_atomic(df, path, metadata)
    elif kind == "CSV":
        write_csv_atomic(df, path)
    else:
        raise ValueError(
            f"no table format for {Path(path).name!r}; known suffixes: {', '.join(TABLE_SUFFIXES)}"
        )
    return kind


def read_metadata(path: Path) -> dict[str, str]:
    """Return gpureplay's key-value metadata of a result file (prefix stripped)."""
    import polars as pl

    raw = pl.read_parquet_metadata(path)
    return {k[len(META_PREFIX) :]: v for k, v in raw.items() if k.startswith(META_PREFIX)}


def write_results(
    folder: Path,
    tables: Mapping[str, pl.DataFrame],
    metadata: Mapping[str, str],
    compile_seconds: float,
    replay_seconds: float,
    run_started: float,
) -> None:
    """Write a run's tables into ``folder`` in order (summary last), ``timing.json``, then ``DONE``.

    Parameters
    ----------
    folder
        The run folder, cleared of an earlier run's results (:func:`clear_run`).
    tables
        File name -> table (:data:`RESULT_FILES` or :data:`PACKING_FILES`), each written with ``metadata``.
    compile_seconds, replay_seconds
        The run's wall-clock timings (:class:`gpureplay.results.timing.RunTiming`).
    run_started
        The ``time.perf_counter()`` the run's ``total_seconds`` count from (writing included).
    """
    for name, table in tables.items():
        write_parquet_atomic(table, Path(folder) / name, metadata)
    total_seconds = time.perf_counter() - run_started
    write_timing(folder, RunTiming(compile_seconds, replay_seconds, total_seconds))
    mark_done(folder, {**{name: table.height for name, table in tables.items()}, TIMING_FILE: 1})


def mark_done(folder: Path, files: Mapping[str, int]) -> None:
    """Write the completion marker listing the result files and their row counts."""
    marker = Path(folder) / DONE_MARKER
    tmp = marker.with_name(f".{DONE_MARKER}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(dict(files), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, marker)


def is_done(folder: Path) -> bool:
    """True when ``folder`` holds a complete run: its marker and every file the marker lists."""
    marker = Path(folder) / DONE_MARKER
    try:
        listed = json.loads(marker.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return False
    return all((Path(folder) / name).is_file() for name in listed)


def clear_run(folder: Path, names: tuple[str, ...]) -> None:
    """Remove the marker first, then stale result files and temporary files a killed run left.

    After this an interrupted folder holds nothing that looks like a result.
    """
    folder = Path(folder)
    for name in (DONE_MARKER, *names):
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()
    for leftover in folder.glob(".*.tmp-*"):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
