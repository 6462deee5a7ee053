"""Run folders under a report's inputs: which are complete, and why the others are left out.

A run folder is complete when it has a ``DONE`` marker, every file the marker
lists, and result files that can be read (``gpureplay.results.writer``): the
timed replay's, or a packing run's (``mode=packing``: ``events.parquet``
instead of ``attempts.parquet``; every Parquet file the marker lists is checked). Every
other folder that looks like a run (it has a ``STATUS``, ``ERROR.txt``, a Hydra
``.hydra/`` folder, a result file or a temporary file of one) is *left out*,
and the report says which and why, so a comparison never silently misses a
configuration that failed or was killed:

- ``failed``: the run recorded an error (``STATUS`` says failed, or ``ERROR.txt``);
- ``incomplete``: no ``DONE`` marker and no error (killed, or still running);
- ``unreadable``: a marker, but a result file is missing, truncated or corrupt.

A truncated Parquet file is caught here by its footer (cheap); a file whose
footer reads but whose data does not is caught when the report reads it
(:func:`find_unreadable`), and that run is then left out the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl
import pyarrow.parquet as pq

from gpureplay.errors import InputError
from gpureplay.results.writer import DONE_MARKER
from gpureplay.sweep import ERROR_FILE, STATUS_FILE

#: The result files a report reads of a complete run (of ``gpureplay.results.writer.RESULT_FILES``; the
#: marker is written after them).
RESULT_FILES: tuple[str, ...] = ("jobs.parquet", "timeline.parquet", "summary.parquet")

#: Names whose presence makes a folder a run folder (complete or not).
_RUN_SIGNS: tuple[str, ...] = (DONE_MARKER, STATUS_FILE, ERROR_FILE, ".hydra", *RESULT_FILES)

Kind = Literal["failed", "incomplete", "unreadable"]


@dataclass(frozen=True)
class LeftOut:
    """A run folder a report or comparison does not use, and why.

    Attributes
    ----------
    folder
        The run folder.
    kind
        ``"failed"``, ``"incomplete"`` or ``"unreadable"`` (see the module docstring).
    reason
        What was found, naming the file when one is at fault.
    """

    folder: Path
    kind: Kind
    reason: str

    def __str__(self) -> str:
        return f"{self.folder}: {self.kind}: {self.reason}"


@dataclass(frozen=True)
class RunFolders:
    """The run folders under some inputs: complete ones (sorted) and those left out (sorted)."""

    complete: list[Path]
    left_out: list[LeftOut]


def _first_line(text: str, limit: int = 200) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _status(folder: Path) -> dict[str, object] | None:
    try:
        record = json.loads((folder / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _marker(folder: Path) -> dict[str, int] | None:
    """The ``DONE`` marker's listing {file: rows}, or None when it is missing or unreadable."""
    try:
        listed = json.loads((folder / DONE_MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(listed, dict):
        return None
    return {str(k): int(v) for k, v in listed.items() if isinstance(v, int)}


def _arrow_reason(err: Exception) -> str:
    return f"{type(err).__name__}: {_first_line(str(err), 160)}"


def check_footers(folder: Path, listed: dict[str, int], names: Sequence[str] = RESULT_FILES) -> str | None:
    """Why a complete-looking folder's result files cannot be used, or None when they can.

    Checks that each file exists, that its Parquet footer reads (a truncated
    file fails here) and that its row count is the one the ``DONE`` marker
    recorded.
    """
    for name in names:
        path = folder / name
        if not path.is_file():
            return f"has a DONE marker but no {name}"
        try:
            rows = pq.read_metadata(path).num_rows
        except Exception as err:  # pyarrow raises several types for a damaged file
            return f"{name} is truncated or not a Parquet file ({_arrow_reason(err)})"
        if name in listed and listed[name] != rows:
            return f"{name} has {rows:,} rows but the DONE marker recorded {listed[name]:,}"
    return None


def _why_not_done(folder: Path) -> LeftOut:
    status = _status(folder)
    error = folder / ERROR_FILE
    if (status is not None and status.get("status") == "failed") or error.is_file():
        said = status.get("error") if status is not None else None
        if not said and error.is_file():
            try:
                said = _first_line(error.read_text(errors="replace"))
            except OSError:
                said = None
        return LeftOut(folder, "failed", str(said) if said else f"see {ERROR_FILE}")
    return LeftOut(folder, "incomplete", "no DONE marker (killed, or still running)")


def scan(inputs: Iterable[Path]) -> RunFolders:
    """Sort every run folder at or under ``inputs`` into complete and left out.

    Raises
    ------
    FileNotFoundError
        When an input does not exist.
    gpureplay.errors.InputError
        When an input is not a folder.
    """
    roots = [Path(p) for p in inputs]
    for root in roots:
        if not root.exists():
            raise FileNotFoundError(f"{root}: no such file or folder")
        if not root.is_dir():
            raise InputError.single("not a folder (give a run or sweep folder)", str(root))
    folders: set[Path] = set()
    for root in roots:
        for name in _RUN_SIGNS:
            folders.update(hit.parent for hit in [root / name, *root.rglob(name)] if hit.exists())
        folders.update(hit.parent for hit in root.rglob(".*.tmp-*") if hit.is_file())
    complete: list[Path] = []
    left_out: list[LeftOut] = []
    for folder in sorted(folders):
        if not (folder / DONE_MARKER).is_file():
            left_out.append(_why_not_done(folder))
            continue
        listed = _marker(folder)
        if listed is None:
            left_out.append(LeftOut(folder, "unreadable", f"its {DONE_MARKER} marker is not a file listing"))
            continue
        missing = [name for name in listed if not (folder / name).is_file()]
        # Every Parquet file the marker lists is checked, not only the replay's: a packing run
        # (mode=packing) writes events.parquet and no attempts.parquet.
        listed_parquet = [name for name in listed if name.endswith(".parquet") and name not in RESULT_FILES]
        problem = (
            f"the DONE marker lists {missing[0]} but it is missing"
            if missing
            else check_footers(folder, listed, (*RESULT_FILES, *listed_parquet))
        )
        if problem is None:
            complete.append(folder)
        else:
            left_out.append(LeftOut(folder, "unreadable", problem))
    return RunFolders(complete, left_out)


def find_unreadable(folders: Iterable[Path], names: Sequence[str] = RESULT_FILES) -> list[LeftOut]:
    """Read each folder's result files in full; the folders where one fails, with the file named.

    Used after a read over many runs failed, to say which file was at fault
    (a lazy scan over a sweep does not name it).
    """
    bad: list[LeftOut] = []
    for folder in folders:
        for name in names:
            try:
                pl.read_parquet(folder / name)
            except Exception as err:  # polars and pyarrow raise several types for damaged data
                bad.append(LeftOut(folder, "unreadable", f"{name} cannot be read ({_arrow_reason(err)})"))
                break
    return bad


def describe(left_out: Sequence[LeftOut], limit: int | None = None) -> list[str]:
    """One line per left-out run (``folder: kind: reason``), at most ``limit`` then a count."""
    shown = list(left_out if limit is None else left_out[:limit])
    lines = [str(item) for item in shown]
    if len(left_out) > len(shown):
        lines.append(f"... and {len(left_out) - len(shown)} more")
    return lines


def counts(left_out: Sequence[LeftOut]) -> str:
    """``"2 failed, 1 incomplete"``: the left-out runs by kind, in a fixed order."""
    parts = []
    for kind in ("failed", "incomplete", "unreadable"):
        n = sum(1 for item in left_out if item.kind == kind)
        if n:
            parts.append(f"{n} {kind}")
    return ", ".join(parts)


__all__ = [
    "DONE_MARKER",
    "ERROR_FILE",
    "RESULT_FILES",
    "STATUS_FILE",
    "LeftOut",
    "RunFolders",
    "check_footers",
    "counts",
    "describe",
    "find_unreadable",
    "scan",
]
