"""Alibaba spot-GPU node inventory (cluster-trace-v2026-spot-gpu; GFS, ASPLOS'26).

``node_info_df.csv``: 4,278 GPU nodes, 10,412 GPUs (A10 2,494,
GPU-series-1 1,558, A100-SXM4-80GB 3,456, H800 1,752, GPU-series-2 976,
A800-SXM4-80GB 176). Columns ``gpu_model``, ``gpu_capacity_num`` (GPUs),
``cpu_num`` (vCPU), ``node_name`` (an integer id). Host memory is not given.

The file's license is not stated, so it is not bundled: the default path is
found under ``../shared/traces`` or ``$GPUREPLAY_DATA`` by
:func:`gpureplay.paths.resolve_data_path`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from gpureplay.cluster.nodes import (
    ClusterNodes,
    fill_unknown_capacity,
    finish_nodes,
    read_node_csv,
    resolve_models,
)
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import file_sha256
from gpureplay.traces.schema import cast_columns

_COLUMNS = ["gpu_model", "gpu_capacity_num", "cpu_num", "node_name"]
_RAW_NAMES = {
    "node_name": "node_name",
    "num_gpus": "gpu_capacity_num",
    "cpu_milli": "cpu_num",
    "cpu_vcpu": "cpu_num",
    "gpu_model": "gpu_model",
}


def spot_nodes(
    path: str | Path = "alibaba-v2026-spot-gpu/node_info_df.csv.gz",
    numa_per_node: int = 2,
    rack_size: int = 16,
    racks_per_spine: int = 8,
) -> ClusterNodes:
    """Build the spot-GPU cluster from ``node_info_df.csv``.

    Parameters
    ----------
    path
        The node file (not bundled; see the module docstring).
    numa_per_node
        CPU sockets the GPUs of a node are split over.
    rack_size, racks_per_spine
        Nodes per rack and racks per spine: not published; 16 and 8 are
        assumptions that only matter to topology-aware policies.

    Returns
    -------
    ClusterNodes
        ``cpu_milli`` = ``cpu_num`` x 1000; ``mem_mib`` = ``UNKNOWN_CAPACITY``
        (counted in ``changes``); GPU memory from the catalog.

    Raises
    ------
    FileNotFoundError
        When the file is not found under any data root.
    InputError
        On an unreadable file, a missing column, a value that is not a number,
        an unknown model, or a duplicate node name; each names file, row and column.
    """
    resolved = resolve_data_path(path, "node list")
    source = str(resolved)
    changes: Counter[str] = Counter()
    raw = read_node_csv(resolved, source, _COLUMNS)
    df = cast_columns(
        raw.select(
            "source_row",
            pl.col("node_name"),
            pl.col("gpu_capacity_num").alias("num_gpus"),
            pl.col("gpu_model").alias("raw_model"),
            pl.col("cpu_num").alias("cpu_vcpu"),
            pl.col("gpu_model").alias("source_gpu_model"),
        ),
        {"num_gpus": pl.Int64(), "cpu_vcpu": pl.Float64()},
        source,
        _RAW_NAMES,
    )
    df = df.with_columns((pl.col("cpu_vcpu") * 1000).round().cast(pl.Int64()).alias("cpu_milli"))
    df = resolve_models(df, source, "gpu_model", changes)
    df = fill_unknown_capacity(df, "mem_mib", changes, "the spot-GPU node list")
    nodes = finish_nodes(
        df,
        source,
        numa_per_node=numa_per_node,
        rack_size=rack_size,
        racks_per_spine=racks_per_spine,
        raw_names=_RAW_NAMES,
    )
    return ClusterNodes(nodes, source, file_sha256(resolved), changes)
