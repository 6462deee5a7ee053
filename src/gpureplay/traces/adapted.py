"""What every trace adapter returns: the canonical jobs plus an account of changes."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl


@dataclass
class AdaptedTrace:
    """A trace in canonical form.

    Parameters
    ----------
    jobs
        The validated canonical jobs table (see :mod:`gpureplay.traces.schema`).
    source
        The raw file(s) it was read from, for messages and result metadata.
    sha256
        Checksum of the raw file content (uncompressed bytes are not needed:
        the checksum identifies the input file exactly as read).
    changes
        What the adapter dropped or changed, ``reason -> count``. Adapters
        never drop or alter a row silently: every such row is counted here.
    """

    jobs: pl.DataFrame
    source: str
    sha256: str
    changes: Counter[str] = field(default_factory=Counter)

    def describe_changes(self) -> str:
        """One line per reason, largest first; ``"no rows dropped or changed"`` if none."""
        if not self.changes:
            return "no rows dropped or changed"
        return "\n".join(f"{count:>9,}  {reason}" for reason, count in self.changes.most_common())


def file_sha256(*paths: Path) -> str:
    """Return the sha256 of the given files' bytes, concatenated in order."""
    digest = hashlib.sha256()
    for path in paths:
        with Path(path).open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def count_dropped(changes: Counter[str], before: pl.DataFrame, after: pl.DataFrame, reason: str) -> None:
    """Record ``before.height - after.height`` rows dropped for ``reason`` (when any)."""
    dropped = before.height - after.height
    if dropped:
        changes[reason] += dropped
