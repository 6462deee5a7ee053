"""Atomic Parquet writes with run metadata.

A file is written under a temporary name in the same folder and renamed into
place (``os.replace`` is atomic on POSIX), so a killed run never leaves a file
that looks complete. A run folder is complete when its ``DONE`` marker exists;
the marker is written last.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

#: Name of the marker written after every result file of a run is in place.
DONE_MARKER = "DONE"

#: Key prefix of gpureplay's entries in Parquet key-value metadata.
META_PREFIX = "gpureplay."


def conform(df: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Return ``df`` with exactly ``schema``'s columns, order and dtypes.

    Raises
    ------
    ValueError
        If a column is missing or a cast would lose values: a bug, not bad input.
    """
    missing = [c for c in schema if c not in df.columns]
    if missing:
        raise ValueError(f"result table lacks column(s) {missing}")
    return df.select(pl.col(c).cast(t, strict=True) for c, t in schema.items())


def write_parquet_atomic(df: pl.DataFrame, path: Path, metadata: Mapping[str, str]) -> None:
    """Write ``df`` to ``path`` through a temporary file, with key-value ``metadata``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    table = df.to_arrow()
    meta = dict(table.schema.metadata or {})
    meta.update({f"{META_PREFIX}{k}".encode(): v.encode() for k, v in metadata.items()})
    try:
        pq.write_table(table.replace_schema_metadata(meta), tmp, compression="zstd")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def read_metadata(path: Path) -> dict[str, str]:
    """Return gpureplay's key-value metadata of a result file (prefix stripped)."""
    raw = pq.read_schema(path).metadata or {}
    return {
        k.decode()[len(META_PREFIX) :]: v.decode()
        for k, v in raw.items()
        if k.decode().startswith(META_PREFIX)
    }


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
