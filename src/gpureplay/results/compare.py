"""A side-by-side table of headline metrics from finished run folders (``gpureplay compare``).

One row per complete run. Packing runs (``mode=packing``, the FGD experiment)
show their own headline metrics (:data:`PACKING_METRICS`: unallocated,
allocated and fragmented GPUs at 100 % arrived demand, failed pods) instead
of waits and JCTs; with both kinds, each row's other kind's columns read
"n/a". Beside the metrics, each row shows its run folder
and the config keys that differ between the runs (plus the seed, and the
input checksums when the same keys read different files), so no two rows
look alike. Waits and JCTs carry their count of censored values (jobs that
never started or never finished, counted up to the run's end); the
measurement-window figures stand beside the whole-run ones; compile and
replay wall-clock times come apart from each run's ``timing.json``.

Runs that failed, were killed or hold an unreadable file are not in the
table: :class:`Comparison` lists them with the reason.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from gpureplay.report.collect import (
    CHECKSUM_DIGITS,
    CHECKSUM_KEYS,
    RUN_COLUMN,
    complete_runs,
    config_columns,
    label_keys,
    short_key,
)
from gpureplay.report.folders import LeftOut, scan

#: Per-run wall-clock timings written beside the results (seconds).
TIMING_FILE = "timing.json"

#: Metrics shown, with headers and how to show them: (column, header, scale, censored column).
#: Times are stored in seconds and shown in hours; allocation as a percentage.
METRICS: tuple[tuple[str, str, float, str | None], ...] = (
    ("jobs", "jobs", 1.0, None),
    ("finished", "finished", 1.0, None),
    ("never_started", "never started", 1.0, None),
    ("wait_mean", "mean wait (h)", 3600.0, "wait_censored"),
    ("wait_p95", "p95 wait (h)", 3600.0, "wait_censored"),
    ("jct_mean", "mean JCT (h)", 3600.0, "jct_censored"),
    ("gpu_allocation_rate", "GPU alloc (%)", 0.01, None),
    ("window_wait_mean", "window: mean wait (h)", 3600.0, "window_wait_censored"),
    ("window_jct_mean", "window: mean JCT (h)", 3600.0, "window_jct_censored"),
    ("window_gpu_allocation_rate", "window: GPU alloc (%)", 0.01, None),
)

#: Metrics shown for packing runs (``mode=packing``, the FGD experiment), as :data:`METRICS`:
#: percentages of the cluster's GPU capacity at 100 % arrived GPU demand and after the last pod.
PACKING_METRICS: tuple[tuple[str, str, float, str | None], ...] = (
    ("pods", "pods", 1.0, None),
    ("failed", "failed pods", 1.0, None),
    ("unallocated_gpu_pct_at_100", "unalloc. GPU @100% (%)", 1.0, None),
    ("allocated_gpu_pct_at_100", "alloc. GPU @100% (%)", 1.0, None),
    ("frag_gpu_pct_at_100", "frag. GPU @100% (%)", 1.0, None),
    ("failed_pods_at_100", "failed pods @100%", 1.0, None),
    ("unallocated_gpu_pct_final", "unalloc. GPU at end (%)", 1.0, None),
)

NOT_AVAILABLE = "n/a"


@dataclass(frozen=True)
class Comparison:
    """The compared runs and those left out.

    Attributes
    ----------
    table
        One row per run, every cell display text: the differing keys, the
        metrics of :data:`METRICS`, ``compile (s)``, ``replay (s)`` and ``run`` (the folder).
    keys
        The config keys shown as columns (those that differ between the runs).
    left_out
        Run folders under the inputs that are not compared, with the reason.
    notes
        Remarks on the table (e.g. replay times that include compilation).
    """

    table: pl.DataFrame
    keys: tuple[str, ...]
    left_out: tuple[LeftOut, ...]
    notes: tuple[str, ...] = ()


#: Sort column of the rows: replays ("0") before packing runs ("1"); not shown.
_KIND = "_packing"


def run_folders(roots: Iterable[Path]) -> list[Path]:
    """Every complete run folder at or under the given roots, sorted.

    See :func:`gpureplay.report.folders.scan` for what complete means and for the others.
    """
    return scan(roots).complete


def read_timing(folder: Path) -> dict[str, float]:
    """A run's ``timing.json`` (compile_seconds, replay_seconds, total_seconds).

    Empty when absent or unreadable (runs written before the file existed).
    """
    try:
        raw = json.loads((Path(folder) / TIMING_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        str(k): float(v) for k, v in raw.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }


#: Columns of whole numbers (job and pod counts).
COUNTS = frozenset({"jobs", "finished", "never_started", "pods", "failed", "failed_pods_at_100"})


def _number(value: float | None, scale: float = 1.0, count: bool = False) -> str:
    """Three significant digits (none from 100 up); whole numbers for counts."""
    if value is None or not math.isfinite(value):
        return NOT_AVAILABLE
    shown = value / scale
    if count:
        return f"{shown:,.0f}"
    size = abs(shown)
    decimals = 0 if size == 0.0 or size >= 100.0 else max(0, min(4, 2 - math.floor(math.log10(size))))
    return f"{shown:,.{decimals}f}"


def _shown_folder(folder: Path, roots: Sequence[Path]) -> str:
    for root in roots:
        try:
            rel = folder.relative_to(root)
        except ValueError:
            continue
        return str(Path(root.name) / rel) if str(rel) != "." else root.name or str(folder)
    return str(folder)


def _sorted(rows: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    # Numbers sort as numbers (load 0.5 < 2.0 < 10), names alphabetically; replays before packing runs.
    exprs: list[pl.Expr] = [pl.col(_KIND)] if _KIND in rows.columns else []
    for key in keys:
        exprs += [pl.col(key).cast(pl.Float64, strict=False), pl.col(key)]
    return rows.sort([*exprs, RUN_COLUMN], nulls_last=True)


def compare_runs(roots: Iterable[Path]) -> Comparison:
    """Headline metrics of every complete run under ``roots``, one row per run.

    Raises
    ------
    FileNotFoundError
        When an input does not exist or no complete, readable run is found
        (the message lists the folders left out and why).
    gpureplay.errors.InputError
        When an input is not a folder.
    """
    roots = [Path(r) for r in roots]
    summaries, left_out = complete_runs(roots)

    keys_table = pl.DataFrame(
        [{RUN_COLUMN: str(s.folder), **s.keys} for s in summaries], infer_schema_length=None
    ).select(pl.all().cast(pl.String))
    keys_table = keys_table.with_columns(pl.exclude(RUN_COLUMN).fill_null("null"))
    candidates = [*config_columns(keys_table), *(["seed"] if "seed" in keys_table.columns else [])]
    shown_keys = label_keys(keys_table, candidates) if len(summaries) > 1 else []
    kinds = {s.packing for s in summaries}
    mixed = len(kinds) == 2
    if mixed and "mode" in keys_table.columns and "mode" not in shown_keys:
        # Two kinds of run with different columns: say which row is which.
        shown_keys = ["mode", *shown_keys]
    metrics_shown = [*(METRICS if False in kinds else ()), *(PACKING_METRICS if True in kinds else ())]

    rows: list[dict[str, str]] = []
    old_timing = False
    for summary, key_row in zip(summaries, keys_table.iter_rows(named=True), strict=True):
        metrics = summary.metrics.row(0, named=True)
        row = {RUN_COLUMN: _shown_folder(summary.folder, roots), _KIND: str(int(summary.packing))}
        for key in shown_keys:
            value = key_row[key]
            row[key] = value[:CHECKSUM_DIGITS] if key in CHECKSUM_KEYS else value
        own = PACKING_METRICS if summary.packing else METRICS
        for column, _, scale, censored in metrics_shown:
            if (column, _, scale, censored) not in own:
                row[column] = NOT_AVAILABLE
                continue
            text = _number(metrics.get(column), scale, column in COUNTS)
            n = metrics.get(censored) if censored else None
            if text != NOT_AVAILABLE and n:
                text += f" ({n:,} censored)"
            row[column] = text
        timing = read_timing(summary.folder)
        if timing:
            row["compile (s)"] = _number(timing.get("compile_seconds"))
            row["replay (s)"] = _number(timing.get("replay_seconds"))
        else:
            # Older runs kept one wall-clock figure in the summary, numba's compilation included.
            old = metrics.get("replay_seconds")
            old_timing = old_timing or old is not None
            row["compile (s)"] = NOT_AVAILABLE
            row["replay (s)"] = _number(old) + ("*" if old is not None else "")
        rows.append(row)
    table = _sorted(pl.DataFrame(rows, schema=dict.fromkeys(rows[0], pl.String())), shown_keys).drop(_KIND)
    headers = {
        RUN_COLUMN: "run",
        **{k: short_key(k) for k in shown_keys},
        **{c: h for c, h, _, _ in metrics_shown},
    }
    # The folder last: it is long, and the keys before it already tell the rows apart.
    table = table.select(pl.exclude(RUN_COLUMN), RUN_COLUMN).rename(headers)
    notes: tuple[str, ...] = (
        ("* no timing.json (an older run): replay time includes numba's compilation.",) if old_timing else ()
    )
    if mixed:
        notes += (
            "Timed replays and packing runs (mode=packing) together: wait, JCT and allocation columns are "
            "n/a for packing runs, the packing columns (% of GPU capacity at 100% arrived demand) n/a "
            "for replays.",
        )
    return Comparison(table, tuple(shown_keys), tuple(left_out), notes)


def compare_table(roots: Iterable[Path]) -> pl.DataFrame:
    """The table of :func:`compare_runs` alone (display text, one row per run)."""
    return compare_runs(roots).table


def format_text(table: pl.DataFrame) -> str:
    """The table as aligned plain text: names left, numbers right, nothing cut short.

    Examples
    --------
    >>> print(format_text(pl.DataFrame({"run": ["a", "bb"], "jobs": ["1", "20"]})))
    run  jobs
    a       1
    bb     20
    """
    columns = table.columns
    cells = [[str(v) for v in table.get_column(c).to_list()] for c in columns]
    widths = [
        max(len(c), *(len(v) for v in col)) if col else len(c) for c, col in zip(columns, cells, strict=True)
    ]

    def numeric(col: list[str]) -> bool:
        return all(v == NOT_AVAILABLE or v[:1].isdigit() or v[:1] == "-" for v in col)

    right = [numeric(col) for col in cells]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True)]
        return "  ".join(parts).rstrip()

    out = [line([c.rjust(w) if r else c for c, w, r in zip(columns, widths, right, strict=True)])]
    out += [line([col[i] for col in cells]) for i in range(table.height)]
    return "\n".join(out)


__all__ = [
    "METRICS",
    "PACKING_METRICS",
    "TIMING_FILE",
    "Comparison",
    "compare_runs",
    "compare_table",
    "format_text",
    "read_timing",
    "run_folders",
]
