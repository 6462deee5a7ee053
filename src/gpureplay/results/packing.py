"""Headline metrics of a packing run (the FGD experiment), one row for ``summary.parquet``.

The FGD paper (Weng et al., USENIX ATC'23, Fig. 9) compares policies by the
share of the cluster's GPUs left unallocated when the arrived GPU demand
equals the cluster's capacity (100 %), read from the fill curve
(:func:`gpureplay.replay.packing.fill_curve`); its artifact also reports the
values at the end of the 130 % workload. Both are here, with the
fragmentation measure at the same points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:  # a type only: the packing kernels (numba) load when a packing run needs them
    from gpureplay.replay.packing import Packing

__all__ = ["PACKING_SUMMARY_SCHEMA", "packing_summary"]

#: Columns of a packing run's metrics (after the config columns of ``summary.parquet``).
PACKING_SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "pods": pl.Int64(),
    "placed": pl.Int64(),
    "failed": pl.Int64(),
    "capacity_gpus": pl.Int64(),
    "arrived_gpu_pct": pl.Float64(),
    "typical_pods": pl.Int64(),
    "typical_pods_coverage": pl.Float64(),
    "allocated_gpu_pct_at_100": pl.Float64(),
    "unallocated_gpu_pct_at_100": pl.Float64(),
    "frag_gpu_pct_at_100": pl.Float64(),
    "frag_ratio_pct_at_100": pl.Float64(),
    "failed_pods_at_100": pl.Int64(),
    "allocated_gpu_pct_final": pl.Float64(),
    "unallocated_gpu_pct_final": pl.Float64(),
    "frag_gpu_pct_final": pl.Float64(),
}


def packing_summary(result: Packing) -> pl.DataFrame:
    """One row of :data:`PACKING_SUMMARY_SCHEMA` for a packing run.

    Notes
    -----
    ``*_at_100`` are the fill curve's row ``arrived_pct == 100`` (null when
    the workload's demand never reaches the capacity); ``*_final`` are the
    cluster after the last pod.
    """
    pods = result.pods
    events = result.events
    capacity = result.capacity_milli
    at_100 = result.timeline.filter(pl.col("arrived_pct") == 100)
    row = at_100.row(0, named=True) if at_100.height else {}
    last = events.row(events.height - 1, named=True) if events.height else {}
    scale = 100.0 / capacity if capacity else float("nan")
    allocated_final = last.get("allocated_gpu_milli", 0) * scale
    failed = int(pods.filter(pl.col("state") == "failed").height)
    return pl.DataFrame(
        [
            {
                "pods": pods.height,
                "placed": pods.height - failed,
                "failed": failed,
                "capacity_gpus": capacity // 1000,
                "arrived_gpu_pct": last.get("arrived_gpu_milli", 0) * scale,
                "typical_pods": len(result.tasks),
                "typical_pods_coverage": float(result.tasks.coverage),
                "allocated_gpu_pct_at_100": row.get("allocated_gpu_pct"),
                "unallocated_gpu_pct_at_100": row.get("unallocated_gpu_pct"),
                "frag_gpu_pct_at_100": row.get("frag_gpu_pct"),
                "frag_ratio_pct_at_100": row.get("frag_ratio_pct"),
                "failed_pods_at_100": row.get("failed_pods"),
                "allocated_gpu_pct_final": allocated_final,
                "unallocated_gpu_pct_final": 100.0 - allocated_final,
                "frag_gpu_pct_final": last.get("frag_gpu_milli", 0.0) * scale,
            }
        ],
        schema=PACKING_SUMMARY_SCHEMA,
    )
