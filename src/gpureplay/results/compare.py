"""A side-by-side table of headline metrics from finished run folders."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from gpureplay.results.writer import DONE_MARKER, is_done

#: Columns shown, with their headers: what a scheduling comparison looks at first.
HEADLINE: dict[str, str] = {
    "trace.name": "trace",
    "cluster.name": "cluster",
    "scheduler.name": "scheduler",
    "workload.name": "workload",
    "seed": "seed",
    "jobs": "jobs",
    "finished": "finished",
    "deadlocked": "deadlocked",
    "rejected": "rejected",
    "wait_mean": "mean wait (h)",
    "wait_p95": "p95 wait (h)",
    "jct_mean": "mean JCT (h)",
    "jct_p95": "p95 JCT (h)",
    "gpu_allocation_rate": "GPU alloc",
    "replay_seconds": "replay (s)",
}

_HOURS = ("wait_mean", "wait_p95", "jct_mean", "jct_p95")


def run_folders(roots: Iterable[Path]) -> list[Path]:
    """Every run folder with a ``DONE`` marker at or under the given roots, sorted.

    Callers check that the files the marker promises are there (see :func:`is_done`)
    and report a folder where they are not, rather than skipping it quietly.
    """
    found: set[Path] = set()
    for root in roots:
        for marker in [Path(root) / DONE_MARKER, *Path(root).rglob(DONE_MARKER)]:
            if marker.is_file():
                found.add(marker.parent)
    return sorted(found)


def compare_table(roots: Iterable[Path]) -> pl.DataFrame:
    """Headline metrics of every complete run under ``roots``, one row per run.

    Raises
    ------
    FileNotFoundError
        When no complete run is found.
    """
    folders = [f for f in run_folders(roots) if is_done(f)]
    if not folders:
        raise FileNotFoundError("no complete run (folder with a DONE marker) found")
    summaries = pl.concat([pl.read_parquet(f / "summary.parquet") for f in folders], how="diagonal_relaxed")
    return summaries.select(
        *(
            (pl.col(c) / 3600.0).round(2).alias(h)
            if c in _HOURS
            else pl.col(c).round(3).alias(h)
            if c in ("gpu_allocation_rate", "replay_seconds")
            else pl.col(c).alias(h)
            for c, h in HEADLINE.items()
            if c in summaries.columns
        )
    )
