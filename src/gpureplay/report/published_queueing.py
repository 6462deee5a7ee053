"""The real Philly cluster's queueing delays, to set beside a replay of the Philly trace at its own rate.

Hu et al., "Characterization of Large Language Model Development in the Datacenter" (USENIX NSDI 2024),
AcmeTrace ``data/cluster_summary.csv`` (bundled: ``traces/acme_summary/``): for Philly, 112,956 GPU jobs
with a mean queueing delay of 3,760.6 s and a median of 189 s. Those figures cover every GPU job the
cluster ran (completed 60.4 %, cancelled 9.0 %, failed 30.5 % of them), under Philly's own scheduler (YARN
with per-VC quotas and locality constraints); a replay only compares with them when it replays the Philly
trace unscaled (no load factor, no sample, no window), which is what :func:`comparable_runs` checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import polars as pl

from gpureplay.errors import InputError
from gpureplay.paths import bundled_traces_dir

__all__ = ["RealQueueing", "comparable_runs", "philly_queueing"]

#: Where the bundled AcmeTrace summary lies, under ``traces/``.
SUMMARY_PATH = "acme_summary/cluster_summary.csv"

#: Workload keys that must be unset (or neutral) for a run to be the trace at its own rate.
_NEUTRAL_WORKLOAD: dict[str, tuple[str, ...]] = {
    "workload.load": ("null", "1.0", "1"),
    "workload.sample_fraction": ("null", "1.0", "1"),
    "workload.window_start": ("null",),
    "workload.window_end": ("null",),
    "workload.max_jobs": ("null",),
}


@dataclass(frozen=True)
class RealQueueing:
    """One cluster's measured queueing delays of GPU jobs (seconds)."""

    cluster: str
    gpu_jobs: int
    mean_s: float
    median_s: float
    source: str


@cache
def philly_queueing() -> RealQueueing:
    """The Philly row of the bundled AcmeTrace cluster summary.

    Raises
    ------
    InputError
        When the bundled file is missing or has no Philly row.
    """
    path = bundled_traces_dir() / SUMMARY_PATH
    try:
        table = pl.read_csv(path)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise InputError.single(f"cannot read the AcmeTrace summary: {err}", str(path)) from err
    rows = table.filter(pl.col("id") == "Philly")
    if rows.height != 1:
        raise InputError.single("no Philly row", str(path), column="id")
    row = rows.row(0, named=True)
    return RealQueueing(
        cluster="Philly",
        gpu_jobs=int(row["gpu_job_num"]),
        mean_s=float(row["avg_que_time_gpu"]),
        median_s=float(row["med_que_time_gpu"]),
        source="AcmeTrace cluster summary (Hu et al., NSDI 2024)",
    )


def comparable_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs that replay the Philly trace as recorded: trace kind ``philly``, workload unscaled."""
    if "trace.kind" not in runs.columns:
        return runs.clear()
    keep = pl.col("trace.kind") == "philly"
    for key, neutral in _NEUTRAL_WORKLOAD.items():
        if key in runs.columns:
            keep = keep & pl.col(key).is_in(list(neutral))
    return runs.filter(keep)
