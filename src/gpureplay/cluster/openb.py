"""Alibaba openb node lists (cluster-trace-gpu-v2023; Weng et al., "Beware of Fragmentation", ATC'23).

``openb_node_list_gpu_node.csv`` holds the 1,213 GPU nodes (6,212 GPUs:
G2 4,392, T4 842, G3 312, P100 265, V100M32 204, V100M16 195, A10 2) and
``openb_node_list_all_node.csv`` all 1,523 nodes (310 CPU-only). Columns:
``sn`` (node name), ``cpu_milli``, ``memory_mib``, ``gpu`` (count), ``model``
(empty on CPU-only nodes). G1/G2/G3 are undisclosed internal codes; the
catalog assumes their memory (see ``gpu_models.toml``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from gpureplay.cluster.nodes import ClusterNodes, finish_nodes, read_node_csv, resolve_models
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import file_sha256
from gpureplay.traces.schema import cast_columns

_COLUMNS = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
_RAW_NAMES = {
    "node_name": "sn",
    "cpu_milli": "cpu_milli",
    "mem_mib": "memory_mib",
    "num_gpus": "gpu",
    "gpu_model": "model",
}


def openb_nodes(
    path: str | Path = "openb/openb_node_list_gpu_node.csv.gz",
    numa_per_node: int = 2,
    rack_size: int = 16,
    racks_per_spine: int = 8,
) -> ClusterNodes:
    """Build an openb cluster from its node list.

    Parameters
    ----------
    path
        ``openb_node_list_gpu_node.csv(.gz)`` or ``openb_node_list_all_node.csv(.gz)``.
    numa_per_node
        CPU sockets the GPUs of a node are split over.
    rack_size, racks_per_spine
        Nodes per rack and racks per spine. The trace gives no topology; the
        FGD simulator ignores it. 16 nodes per rack and 8 racks per spine are
        assumptions that only matter to topology-aware policies.

    Returns
    -------
    ClusterNodes
        One node per row, GPU models resolved through the catalog aliases
        (``V100M16`` -> ``V100``, ``V100M32`` -> ``V100-32GB``), GPU memory from
        the catalog (the list does not give it).

    Raises
    ------
    InputError
        On an unreadable file, a missing column, a value that is not a whole
        number, an unknown model, a GPU node without a model, or a duplicate
        ``sn``; each names file, row and column.
    """
    resolved = resolve_data_path(path, "node list")
    source = str(resolved)
    changes: Counter[str] = Counter()
    raw = read_node_csv(resolved, source, _COLUMNS)
    df = cast_columns(
        raw.select(
            "source_row",
            pl.col("sn").alias("node_name"),
            pl.col("gpu").alias("num_gpus"),
            pl.col("model").alias("raw_model"),
            pl.col("cpu_milli"),
            pl.col("memory_mib").alias("mem_mib"),
            pl.col("model").alias("source_model"),
        ),
        {"num_gpus": pl.Int64(), "cpu_milli": pl.Int64(), "mem_mib": pl.Int64()},
        source,
        _RAW_NAMES,
    )
    df = resolve_models(df, source, "model", changes)
    nodes = finish_nodes(
        df,
        source,
        numa_per_node=numa_per_node,
        rack_size=rack_size,
        racks_per_spine=racks_per_spine,
        raw_names=_RAW_NAMES,
    )
    return ClusterNodes(nodes, source, file_sha256(resolved), changes)
