"""Alibaba PAI machines (cluster-trace-gpu-v2020; Weng et al., "MLaaS in the Wild", NSDI'22).

``pai_machine_spec.csv`` has no header; its columns (``headers/pai_machine_spec.header``)
are ``machine, gpu_type, cap_cpu`` (vCPU cores), ``cap_mem`` (GB), ``cap_gpu``
(GPU count). 1,896 machines, 6,742 GPUs: P100 798 x 2, T4 497 x 2, MISC 280 x 8
(older K40m/K80/M60 class), V100M32 135 x 8, V100 104 x 8, and 83 CPU machines
(``gpu_type`` ``CPU``, which is not a GPU model).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from gpureplay.cluster.nodes import ClusterNodes, finish_nodes, read_node_csv, resolve_models
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import file_sha256
from gpureplay.traces.schema import cast_columns

_COLUMNS = ["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"]
_RAW_NAMES = {
    "node_name": "machine",
    "cpu_milli": "cap_cpu",
    "mem_mib": "cap_mem",
    "num_gpus": "cap_gpu",
    "gpu_model": "gpu_type",
    "cpu_cores": "cap_cpu",
    "mem_gb": "cap_mem",
}

#: ``gpu_type`` value that marks a machine without GPUs.
CPU_TYPE = "CPU"


def pai_nodes(
    path: str | Path = "pai2020/pai_machine_spec.csv.gz",
    numa_per_node: int = 2,
    rack_size: int = 16,
    racks_per_spine: int = 8,
) -> ClusterNodes:
    """Build the PAI 2020 cluster from its machine spec.

    Parameters
    ----------
    path
        The headerless ``pai_machine_spec.csv(.gz)``.
    numa_per_node
        CPU sockets the GPUs of a machine are split over.
    rack_size, racks_per_spine
        Nodes per rack and racks per spine: not published; 16 and 8 are
        assumptions that only matter to topology-aware policies.

    Returns
    -------
    ClusterNodes
        ``cpu_milli`` = ``cap_cpu`` x 1000, ``mem_mib`` = ``cap_mem`` x 1024,
        GPU memory from the catalog; ``CPU`` machines have no GPU model.

    Raises
    ------
    InputError
        On an unreadable file, a row that does not have 5 fields, a value that
        is not a number, an unknown GPU type, or a duplicate machine; each
        names file, row and column.
    """
    resolved = resolve_data_path(path, "node list")
    source = str(resolved)
    changes: Counter[str] = Counter()
    raw = read_node_csv(resolved, source, _COLUMNS, header=False)
    df = cast_columns(
        raw.select(
            "source_row",
            pl.col("machine").alias("node_name"),
            pl.col("cap_gpu").alias("num_gpus"),
            pl.when(pl.col("gpu_type").str.to_uppercase() == CPU_TYPE)
            .then(None)
            .otherwise(pl.col("gpu_type"))
            .alias("raw_model"),
            pl.col("cap_cpu").alias("cpu_cores"),
            pl.col("cap_mem").alias("mem_gb"),
            pl.col("gpu_type").alias("source_gpu_type"),
            pl.col("cap_cpu").alias("source_cap_cpu"),
            pl.col("cap_mem").alias("source_cap_mem"),
        ),
        {"num_gpus": pl.Int64(), "cpu_cores": pl.Float64(), "mem_gb": pl.Float64()},
        source,
        _RAW_NAMES,
    )
    df = df.with_columns(
        (pl.col("cpu_cores") * 1000).round().cast(pl.Int64()).alias("cpu_milli"),
        (pl.col("mem_gb") * 1024).round().cast(pl.Int64()).alias("mem_mib"),
    )
    df = resolve_models(df, source, "gpu_type", changes)
    nodes = finish_nodes(
        df,
        source,
        numa_per_node=numa_per_node,
        rack_size=rack_size,
        racks_per_spine=racks_per_spine,
        raw_names=_RAW_NAMES,
    )
    return ClusterNodes(nodes, source, file_sha256(resolved), changes)
