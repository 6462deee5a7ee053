"""Microsoft Philly machines (Jeon et al., ATC'19) as a canonical nodes table.

Two node lists exist (see ``microsoft-philly/SOURCE.md`` in the shared traces):

- the official ``cluster_machine_list`` from the trace tarball: 552 machines,
  321 x 2 GPUs of 12 GB and 231 x 8 GPUs of 24 GB (2,490 GPUs);
- Qinghao Hu's revised list, re-derived from ``cluster_gpu_util`` because the
  official list contradicts the job log (philly-traces issue #8: 8-GPU jobs
  placed on "2-GPU" machines): 271 x 4, 264 x 8, 13 x 0, 3 x 2, 1 x 3 (3,205 GPUs).
  It is a third party's inference, not an official statement.

The GPU model is not published; the catalog names the two memory classes
``PHILLY-12GB`` and ``PHILLY-24GB``. The lists give no CPU, memory or
topology, so CPU and memory are ``UNKNOWN_CAPACITY`` and racks are numbered
from file order.
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
from gpureplay.errors import InputError, Problem
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import file_sha256
from gpureplay.traces.schema import MAX_SHOWN, cast_columns

_OFFICIAL_COLUMNS = ["machineId", "number of GPUs", "single GPU mem"]
_REVISED_COLUMNS = ["machineId", "number of GPUs"]
_RAW_NAMES = {
    "node_name": "machineId",
    "num_gpus": "number of GPUs",
    "gpu_model": "single GPU mem",
    "gpu_mem_mib": "single GPU mem",
}


def _read_official(path: Path, source: str) -> pl.DataFrame:
    """The official list: ``num_gpus`` (Int64), ``raw_model``, ``gpu_mem_mib`` parsed from e.g. ``12GB``."""
    raw = read_node_csv(path, source, _OFFICIAL_COLUMNS)
    df = raw.select(
        "source_row",
        pl.col("machineId").alias("node_name"),
        pl.col("number of GPUs").alias("num_gpus"),
        pl.col("single GPU mem").alias("raw_model"),
        pl.col("number of GPUs").alias("source_gpus"),
        pl.col("single GPU mem").alias("source_gpu_mem"),
    )
    df = cast_columns(df, {"num_gpus": pl.Int64()}, source, _RAW_NAMES)
    # "12GB" is a memory class, which the catalog maps to a model (alias) and which gives the memory.
    gb = pl.col("raw_model").str.extract(r"(?i)^(\d+)\s*GB$", 1).cast(pl.Int64())
    return df.with_columns((gb * 1024).alias("gpu_mem_mib"))


def philly_nodes(
    machine_list: str | Path = "philly/cluster_machine_list.csv.gz",
    revised: bool = False,
    revised_list: str | Path = "philly/revised_machine_list_qhu.csv.gz",
    rack_size: int = 16,
    racks_per_spine: int = 8,
    numa_per_node: int = 2,
) -> ClusterNodes:
    """Build the Philly cluster from its official machine list, optionally with revised GPU counts.

    Parameters
    ----------
    machine_list
        The official list (columns ``machineId, number of GPUs, single GPU mem``,
        padded with spaces, which are stripped).
    revised
        Take each machine's GPU count from ``revised_list`` instead.
    revised_list
        Qinghao Hu's list (columns: unnamed index, ``machineId``, ``number of GPUs``).
    rack_size, racks_per_spine
        Nodes per rack and racks per spine. Philly's topology is not published;
        16 machines per rack (a 42U rack of 2U servers) and 8 racks per spine
        are assumptions, not facts about Philly.
    numa_per_node
        CPU sockets the GPUs of a machine are split over.

    Returns
    -------
    ClusterNodes
        552 nodes in file order (of the revised list when ``revised``):
        2,490 GPUs from the official list, 3,205 with ``revised``.

    Notes
    -----
    GPU memory class with revised counts. The official list ties the memory
    class to the GPU count (every 2-GPU machine is 12 GB, every 8-GPU one
    24 GB). Hu's counts come from per-GPU utilisation records, which say how
    many GPUs a machine reported but nothing about their memory, and they break
    that tie for 526 of 552 machines (e.g. 238 official "2 x 12GB" machines
    report 8 GPUs, 189 official "8 x 24GB" ones report 4). For those machines
    the memory class is ambiguous: it could follow the machine (its official
    entry) or the new count (8 GPUs looks like a 24 GB server). We keep each
    machine's official class, joined on ``machineId``: it is the only
    per-machine evidence of memory there is, while inferring it from the count
    would assume a hardware pairing that the revised counts themselves
    contradict. Every machine whose count changed is counted in ``changes`` by
    transition (``official -> revised``); a machine with 0 revised GPUs becomes
    a GPU-less node (also counted).

    Raises
    ------
    InputError
        On an unreadable file, a missing column, a GPU count that is not a
        whole number, an unknown memory class, duplicate machines, or (revised)
        a GPU machine that is not in the official list, naming file, row and column.
    """
    official_path = resolve_data_path(machine_list, "node list")
    official_source = str(official_path)
    changes: Counter[str] = Counter()
    official = _read_official(official_path, official_source)

    if not revised:
        df = resolve_models(official, official_source, "single GPU mem", changes, what="GPU memory class")
        df = fill_unknown_capacity(df, "cpu_milli", changes, "the Philly machine list")
        df = fill_unknown_capacity(df, "mem_mib", changes, "the Philly machine list")
        nodes = finish_nodes(
            df,
            official_source,
            numa_per_node=numa_per_node,
            rack_size=rack_size,
            racks_per_spine=racks_per_spine,
            raw_names=_RAW_NAMES,
        )
        return ClusterNodes(nodes, official_source, file_sha256(official_path), changes)

    revised_path = resolve_data_path(revised_list, "node list")
    revised_source = str(revised_path)
    _reject_duplicates(official, official_source)
    raw = read_node_csv(revised_path, revised_source, _REVISED_COLUMNS)
    rev = cast_columns(
        raw.select(
            "source_row",
            pl.col("machineId").alias("node_name"),
            pl.col("number of GPUs").alias("num_gpus"),
            pl.col("number of GPUs").alias("source_revised_gpus"),
        ),
        {"num_gpus": pl.Int64()},
        revised_source,
        _RAW_NAMES,
    )
    _reject_duplicates(rev, revised_source)
    joined = rev.join(
        official.select(
            "node_name",
            pl.col("source_row").alias("source_official_row"),
            pl.col("num_gpus").alias("official_gpus"),
            "raw_model",
            "gpu_mem_mib",
            "source_gpus",
            "source_gpu_mem",
        ),
        on="node_name",
        how="left",
        maintain_order="left",
    )
    orphans = joined.filter(pl.col("source_official_row").is_null() & (pl.col("num_gpus") > 0))
    if orphans.height:
        problems = [
            Problem(
                f"machine {name!r} has GPUs but is not in the official list {official_source}, "
                "which is the only source of its GPU memory class",
                revised_source,
                int(row),
                "machineId",
            )
            for row, name in orphans.select("source_row", "node_name").head(MAX_SHOWN).iter_rows()
        ]
        raise InputError(problems, total=orphans.height)
    _count_revisions(joined, official, rev, changes)
    df = resolve_models(
        joined.drop("official_gpus"), revised_source, "single GPU mem", changes, what="GPU memory class"
    )
    df = fill_unknown_capacity(df, "cpu_milli", changes, "the Philly machine list")
    df = fill_unknown_capacity(df, "mem_mib", changes, "the Philly machine list")
    nodes = finish_nodes(
        df,
        revised_source,
        numa_per_node=numa_per_node,
        rack_size=rack_size,
        racks_per_spine=racks_per_spine,
        raw_names=_RAW_NAMES,
    )
    return ClusterNodes(
        nodes,
        f"{revised_source} (GPU counts) + {official_source} (GPU memory)",
        file_sha256(revised_path, official_path),
        changes,
    )


def _reject_duplicates(df: pl.DataFrame, source: str) -> None:
    # A duplicate would make the join on machineId multiply rows.
    dup = df.filter(pl.col("node_name").is_duplicated())
    if dup.height:
        problems = [
            Problem(f"duplicate machineId {name!r}", source, int(row), "machineId")
            for row, name in dup.select("source_row", "node_name").head(MAX_SHOWN).iter_rows()
        ]
        raise InputError(problems, total=dup.height)


def _count_revisions(
    joined: pl.DataFrame, official: pl.DataFrame, rev: pl.DataFrame, changes: Counter[str]
) -> None:
    """Count machines whose GPU count the revised list changed, by transition, and official-only machines."""
    transitions = (
        joined.filter(pl.col("official_gpus").is_not_null() & (pl.col("official_gpus") != pl.col("num_gpus")))
        .group_by("official_gpus", "num_gpus")
        .len()
        .sort("official_gpus", "num_gpus")
    )
    for before, after, count in transitions.iter_rows():
        changes[f"revised list: GPU count {before} -> {after} (official GPU memory class kept)"] += int(count)
    unlisted = joined.filter(pl.col("source_official_row").is_null()).height
    if unlisted:
        changes["revised list: GPU-less machine not in the official list"] += unlisted
    missing = official.join(rev.select("node_name"), on="node_name", how="anti").height
    if missing:
        # The revised list is the node list in this mode: a machine it lacks is not in the cluster.
        changes["official list: machine not in the revised list, dropped"] += missing
