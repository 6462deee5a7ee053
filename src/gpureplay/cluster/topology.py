"""A cluster's network topology from a file: which spine, rack and NVLink domain each node is in.

The node builders number racks and spines themselves when their source has no
topology (consecutive servers share a rack of ``rack_size``, consecutive racks
a spine: :mod:`gpureplay.cluster.nodes`). ``cluster.topology=PATH`` replaces
that numbering with a real one, in one of two formats:

- **gpureplay's own** (levels as columns, as Kueue's ``Topology`` object lists
  node labels from the outermost level in): a ``node_name`` column and one or
  more of ``spine``, ``rack``, ``nvlink_domain`` (any values: labels or
  numbers). A domain is named by its value *and the values of the levels above
  it* (Kueue's domain ID), so rack ``r1`` under two spines is two racks.
- **Crux** (Alibaba Lingjun 2023, Cao et al., SIGCOMM'24, ``data/topo.csv``):
  columns ``ip``, ``DSW`` (core), ``PSW`` (aggregation), ``ASW`` (top of
  rack). A host's spine is its PSW and its rack its (PSW, ASW): ASW names
  repeat under each PSW. The DSW level (one switch in the published file) has
  no column of its own here.

Rows match the cluster's nodes by ``node_name`` (``cluster.topology_match:
name``, every node must be listed once) or, for a file whose host names the
cluster does not use (Crux's hashed IPs), in file order (``order``: as many
rows as nodes). Either way every problem names the file, the row and the column.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from gpureplay.errors import InputError, Problem
from gpureplay.traces.generic import reading

__all__ = ["LEVELS", "TOPOLOGY_MATCHES", "apply_topology", "read_topology"]

#: The levels a topology file may give, outermost first (the node table's columns).
LEVELS: tuple[str, ...] = ("spine", "rack", "nvlink_domain")
#: How rows find their nodes (``cluster.topology_match``).
TOPOLOGY_MATCHES: tuple[str, ...] = ("name", "order")
#: Crux's columns, and the levels its switches give.
_CRUX_COLUMNS = ("ip", "DSW", "PSW", "ASW")


def read_topology(path: Path) -> pl.DataFrame:
    """Read a topology file into ``node_name`` plus the levels it gives (strings), in file order.

    Raises
    ------
    InputError
        For an unreadable file, a file of neither format, a column that is not
        a level, an empty or missing value, or a node listed twice; each names
        the file, and the row and column where there is one.
    """
    source = str(path)
    try:
        with reading(source, path):
            raw = pl.read_csv(path, infer_schema=False)
    except OSError as err:
        raise InputError.single(f"cannot read the topology file: {err}", source) from err
    if set(_CRUX_COLUMNS) <= set(raw.columns):
        table = raw.select(
            pl.col("ip").alias("node_name"),
            pl.col("PSW").alias("spine"),
            # ASW names repeat under each PSW: a rack is the pair.
            pl.concat_str("PSW", "ASW", separator="/").alias("rack"),
        )
    else:
        problems: list[Problem] = []
        if "node_name" not in raw.columns:
            problems.append(
                Problem(
                    "no node_name column: a topology file has node_name and one or more of "
                    f"{', '.join(LEVELS)} (or Crux's {', '.join(_CRUX_COLUMNS)})",
                    source,
                )
            )
        unknown = [c for c in raw.columns if c != "node_name" and c not in LEVELS]
        for column in unknown:
            message = f"not a topology level; levels are {', '.join(LEVELS)} (outermost first)"
            problems.append(Problem(message, source, column=column))
        if "node_name" in raw.columns and not any(c in raw.columns for c in LEVELS):
            problems.append(Problem(f"no level column ({', '.join(LEVELS)})", source))
        if problems:
            raise InputError(problems)
        table = raw.select("node_name", *(c for c in LEVELS if c in raw.columns))
    problems = []
    for column in table.columns:
        empty = table.with_row_index("row", offset=1).filter(
            pl.col(column).is_null() | (pl.col(column).str.strip_chars() == "")
        )
        for row in empty["row"].head(5):
            problems.append(Problem("empty value", source, row=int(row), column=column))
    repeated = table.with_row_index("row", offset=1).filter(pl.col("node_name").is_duplicated())
    for row, name in repeated.select("row", "node_name").head(5).iter_rows():
        problems.append(
            Problem(f"node {name!r} is listed more than once", source, row=int(row), column="node_name")
        )
    if problems:
        raise InputError(problems[:10], total=len(problems))
    return table


def apply_topology(nodes: pl.DataFrame, topology: pl.DataFrame, match: str, source: str) -> pl.DataFrame:
    """``nodes`` with ``spine``, ``rack`` and ``nvlink_domain`` from ``topology`` where it gives them.

    Parameters
    ----------
    nodes
        The canonical node table (``node_name``, ``spine``, ``rack``, ``nvlink_domain``).
    topology
        From :func:`read_topology`.
    match
        ``name`` (rows find nodes by ``node_name``) or ``order`` (row i is node i).
    source
        The file, for error messages.

    Returns
    -------
    polars.DataFrame
        The same table; each given level as dense ids (0, 1, ... in order of
        first appearance) of the domain's path from the outermost given level
        down, so equal labels under different parents stay apart. Levels the
        file does not give keep the builder's numbers.

    Raises
    ------
    InputError
        For an unknown ``match``, a row count that is not the node count
        (``order``), or nodes missing from the file or not in the cluster
        (``name``).
    """
    if match not in TOPOLOGY_MATCHES:
        raise InputError.single(
            f"must be one of {', '.join(TOPOLOGY_MATCHES)} (found {match!r})",
            "config",
            key="cluster.topology_match",
        )
    if match == "order":
        if topology.height != nodes.height:
            raise InputError.single(
                f"{topology.height:,} rows for {nodes.height:,} nodes: topology_match: order needs one row "
                "per node, in node order",
                source,
            )
        aligned = topology
    else:
        names = set(nodes["node_name"].to_list())
        listed = set(topology["node_name"].to_list())
        problems = [
            Problem(f"node {name!r} is not in the cluster", source, row=int(row), column="node_name")
            for row, name in topology.with_row_index("row", offset=1).select("row", "node_name").iter_rows()
            if name not in names
        ]
        missing = [name for name in nodes["node_name"].to_list() if name not in listed]
        if missing:
            shown = ", ".join(repr(n) for n in missing[:5])
            problems.append(
                Problem(f"{len(missing):,} node(s) of the cluster are not listed (e.g. {shown})", source)
            )
        if problems:
            raise InputError(problems[:10], total=len(problems))
        aligned = nodes.select("node_name").join(topology, on="node_name", how="left", maintain_order="left")
    given = [level for level in LEVELS if level in aligned.columns]
    out = nodes
    for depth, level in enumerate(given):
        path = pl.concat_str(given[: depth + 1], separator="\x1f")
        ids = aligned.select(path.alias("path"))["path"]
        # Number in order of first appearance, not alphabetically: file order reads as the fabric's.
        first = {value: i for i, value in enumerate(dict.fromkeys(ids.to_list()))}
        dense = pl.Series([first[v] for v in ids.to_list()], dtype=pl.Int32)
        out = out.with_columns(dense.alias(level))
    return out
