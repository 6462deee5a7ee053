"""What every cluster builder returns, and the steps all builders share.

A builder reads a node list (or generates one), resolves GPU models through the
catalog, then calls :func:`finish_nodes`, which numbers the nodes, adds the
topology columns (NUMA node of each GPU, NVLink domain, rack, spine) and
validates the table. Those columns are computed here and nowhere else, so
every cluster follows the same conventions:

- ``node_id`` = 0..n-1 in file order;
- ``numa_of_gpu`` splits a node's GPUs evenly over ``numa_per_node`` sockets
  in index order (GPU ``i`` of ``g`` sits on socket ``i * numa_per_node // g``),
  as in dual-socket servers where GPUs 0..g/2-1 hang off the first CPU's PCIe
  root complex; null for GPU-less nodes;
- ``nvlink_domain`` = ``node_id // nodes_per_nvlink_domain`` (one domain per
  node unless a multi-node NVLink domain such as GB200 NVL72 is modelled);
- ``rack`` = ``node_id // rack_size`` and ``spine`` = ``rack // racks_per_spine``:
  consecutive nodes share a rack (top-of-rack switch) and consecutive racks a
  spine, the usual leaf-spine numbering when a node list gives no topology.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from gpureplay.cluster.catalog import alias_table, gpu_models
from gpureplay.errors import InputError, Problem
from gpureplay.traces.schema import (
    MAX_SHOWN,
    NODES_SCHEMA,
    UNKNOWN_CAPACITY,
    Rule,
    check_rules,
    validate_nodes,
)


@dataclass
class ClusterNodes:
    """A cluster in canonical form.

    Parameters
    ----------
    nodes
        The validated canonical nodes table (``NODES_SCHEMA`` in
        :mod:`gpureplay.traces.schema`, then ``source_row`` and ``source_*``).
    source
        The node list(s) it was read from, or a description of the generator.
    sha256
        Checksum of the raw node list bytes; ``None`` for generated clusters.
    changes
        Every value the builder filled in or changed, ``reason -> count``
        (e.g. CPU not given, so ``UNKNOWN_CAPACITY``).
    """

    nodes: pl.DataFrame
    source: str
    sha256: str | None
    changes: Counter[str] = field(default_factory=Counter)

    @property
    def total_gpus(self) -> int:
        """Number of GPUs over all nodes."""
        return int(self.nodes["num_gpus"].sum())

    def gpus_by_model(self) -> pl.DataFrame:
        """Nodes and GPUs per GPU model (``gpu_model`` null = CPU-only nodes), most GPUs first."""
        return (
            self.nodes.group_by("gpu_model")
            .agg(
                pl.len().cast(pl.Int64).alias("nodes"), pl.col("num_gpus").sum().cast(pl.Int64).alias("gpus")
            )
            .sort(["gpus", "gpu_model"], descending=[True, False], nulls_last=True)
        )

    def describe(self) -> str:
        """A short text: node and GPU totals, GPUs by model, CPU-only nodes, changes."""
        lines = [f"{self.source}: {self.nodes.height:,} nodes, {self.total_gpus:,} GPUs"]
        by_model = self.gpus_by_model()
        for model, nodes, gpus in by_model.filter(pl.col("gpu_model").is_not_null()).iter_rows():
            lines.append(f"  {model:<16} {nodes:>7,} nodes {gpus:>8,} GPUs")
        cpu_only = int(self.nodes["num_gpus"].eq(0).sum())
        lines.append(f"  {'CPU-only':<16} {cpu_only:>7,} nodes")
        if self.changes:
            lines.append("changes:")
            lines.extend(f"  {count:>9,}  {reason}" for reason, count in self.changes.most_common())
        else:
            lines.append("changes: none")
        return "\n".join(lines)


def read_node_csv(path: Path, source: str, columns: list[str], *, header: bool = True) -> pl.DataFrame:
    """Read a node list as text, cells and header names stripped, with ``source_row``.

    Every cell is read as a string so that :func:`gpureplay.traces.schema.cast_columns`
    can later report each value that is not a number with its row and column.

    Parameters
    ----------
    path
        The file (gzip is read transparently).
    source
        Name used in messages.
    columns
        Columns the file must have (as spelled in the file, without padding);
        for a headerless file, the names given to its columns in order.
    header
        Whether the first line is a header.

    Raises
    ------
    InputError
        When the file is not CSV, has no rows, or lacks a column.
    """
    try:
        raw = pl.read_csv(path, infer_schema=False, has_header=header)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError.single(f"cannot read as CSV: {exc}", source) from exc
    if header:
        raw = raw.rename({c: c.strip() for c in raw.columns})
    elif raw.width != len(columns):
        raise InputError.single(
            f"expected {len(columns)} columns ({', '.join(columns)}), found {raw.width}", source
        )
    else:
        raw.columns = columns
    missing = [c for c in columns if c not in raw.columns]
    if missing:
        raise InputError.single(
            f"missing column(s) {', '.join(missing)}; found {', '.join(raw.columns) or 'none'}", source
        )
    if raw.height == 0:
        raise InputError.single("the node list has no nodes", source)
    return raw.with_row_index("source_row", offset=1).with_columns(
        pl.col(c).str.strip_chars() for c in raw.columns
    )


def catalog_frame() -> pl.DataFrame:
    """The catalog as a table: ``gpu_model``, ``catalog_mem_mib``, ``catalog_nvlink_size``."""
    models = gpu_models()
    return pl.DataFrame(
        {
            "gpu_model": list(models),
            "catalog_mem_mib": [m.memory_mib for m in models.values()],
            "catalog_nvlink_size": [m.nvlink_size for m in models.values()],
        },
        schema={"gpu_model": pl.String(), "catalog_mem_mib": pl.Int64(), "catalog_nvlink_size": pl.Int64()},
    )


def resolve_models(
    df: pl.DataFrame,
    source: str,
    raw_column: str,
    changes: Counter[str],
    *,
    what: str = "GPU model",
) -> pl.DataFrame:
    """Turn the raw model spelling in ``raw_model`` into a catalog ``gpu_model`` and fill ``gpu_mem_mib``.

    ``df`` needs ``source_row``, ``raw_model`` (string, null or empty = no GPU
    model) and ``num_gpus`` (integer). A node with no GPUs gets a null
    ``gpu_model`` even when the file names one (counted in ``changes``).
    ``gpu_mem_mib`` is kept where the caller already set it (the file says),
    otherwise taken from the catalog; 0 for GPU-less nodes.

    Raises
    ------
    InputError
        For every spelling the catalog does not know, naming row and ``raw_column``.
    """
    resolved = df.with_columns(
        pl.col("raw_model")
        .str.strip_chars()
        .str.to_lowercase()
        .replace_strict(alias_table(), default=None, return_dtype=pl.String())
        .alias("gpu_model")
    )
    named = pl.col("raw_model").is_not_null() & (pl.col("raw_model").str.strip_chars() != "")
    unknown = resolved.filter(named & pl.col("gpu_model").is_null())
    if unknown.height:
        known = ", ".join(sorted(gpu_models()))
        problems = [
            Problem(f"unknown {what} {value!r}; known models: {known}", source, int(row), raw_column)
            for row, value in unknown.select("source_row", "raw_model").head(MAX_SHOWN).iter_rows()
        ]
        raise InputError(problems, total=unknown.height)
    dropped = int(
        resolved.select((pl.col("gpu_model").is_not_null() & (pl.col("num_gpus") == 0)).sum()).item()
    )
    if dropped:
        changes[f"node has no GPUs: {what} in {raw_column!r} ignored, gpu_model null"] += dropped
    resolved = resolved.with_columns(
        pl.when(pl.col("num_gpus") > 0).then(pl.col("gpu_model")).otherwise(None).alias("gpu_model")
    ).join(
        catalog_frame().select("gpu_model", "catalog_mem_mib"),
        on="gpu_model",
        how="left",
        maintain_order="left",
    )
    given = pl.col("gpu_mem_mib") if "gpu_mem_mib" in resolved.columns else pl.lit(None, dtype=pl.Int64())
    return resolved.with_columns(
        pl.when(pl.col("num_gpus") > 0)
        .then(pl.coalesce(given.cast(pl.Int64()), pl.col("catalog_mem_mib")))
        .otherwise(0)
        .alias("gpu_mem_mib")
    ).drop("catalog_mem_mib")


def fill_unknown_capacity(df: pl.DataFrame, column: str, changes: Counter[str], why: str) -> pl.DataFrame:
    """Set ``column`` to ``UNKNOWN_CAPACITY`` on every node (the list does not give it) and count it."""
    changes[f"{column} not given by {why}: UNKNOWN_CAPACITY (never constrains)"] += df.height
    return df.with_columns(pl.lit(UNKNOWN_CAPACITY, dtype=pl.Int64()).alias(column))


def check_positive(values: Mapping[str, int | None], *, maximum: Mapping[str, int] | None = None) -> None:
    """Raise :class:`InputError` naming the config key (as the column of source ``config``) of every
    value that is not a whole number >= 1 or above its ``maximum``.

    ``None`` values are skipped (meaning "use the default").
    """
    maximum = maximum or {}
    problems = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            problems.append(Problem(f"must be a whole number >= 1 (found {value!r})", "config", key=key))
        elif key in maximum and value > maximum[key]:
            problems.append(Problem(f"must be at most {maximum[key]} (found {value!r})", "config", key=key))
    if problems:
        raise InputError(problems)


def _numa_table(gpu_counts: pl.Series, numa_per_node: int) -> pl.DataFrame:
    # One row per distinct GPU count (a handful per cluster), not per node.
    counts = sorted(int(g) for g in gpu_counts.unique().drop_nulls() if g > 0)
    return pl.DataFrame(
        {"num_gpus": counts, "numa_of_gpu": [[i * numa_per_node // g for i in range(g)] for g in counts]},
        schema={"num_gpus": pl.Int64(), "numa_of_gpu": pl.List(pl.Int8())},
    )


def finish_nodes(
    df: pl.DataFrame,
    source: str,
    *,
    numa_per_node: int,
    rack_size: int,
    racks_per_spine: int,
    nodes_per_nvlink_domain: int = 1,
    raw_names: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Number the nodes, add the topology columns and validate (see module docstring).

    Parameters
    ----------
    df
        One row per node in file order with ``source_row``, ``node_name``,
        ``gpu_model`` (catalog name or null), ``num_gpus``, ``gpu_mem_mib``,
        ``cpu_milli``, ``mem_mib`` and any ``source_*`` columns.
    source
        Name used in messages.
    numa_per_node, rack_size, racks_per_spine
        Topology parameters (config keys ``cluster.<name>``), each >= 1.
    nodes_per_nvlink_domain
        Consecutive nodes sharing one NVLink domain (1 = one domain per node).
    raw_names
        Canonical → raw column names for messages.

    Returns
    -------
    polars.DataFrame
        The canonical nodes table (validated by
        :func:`gpureplay.traces.schema.validate_nodes`).

    Raises
    ------
    InputError
        On a bad topology parameter (naming its config key), a negative GPU
        count, a duplicate node name, or anything ``validate_nodes`` rejects.
    """
    check_positive(
        {
            "cluster.numa_per_node": numa_per_node,
            "cluster.rack_size": rack_size,
            "cluster.racks_per_spine": racks_per_spine,
        },
        maximum={"cluster.numa_per_node": 127},  # numa_of_gpu is Int8
    )
    if nodes_per_nvlink_domain < 1:
        raise ValueError(f"nodes_per_nvlink_domain must be >= 1, got {nodes_per_nvlink_domain}")
    df = df.with_columns(pl.col("num_gpus").cast(pl.Int64()))
    # Checked before the NUMA lists are built from num_gpus, so a bad count is one clear problem.
    check_rules(
        df,
        [
            Rule("num_gpus", pl.col("num_gpus") < 0, "num_gpus must be >= 0"),
            Rule(
                "node_name",
                pl.col("node_name").is_duplicated() & pl.col("node_name").is_not_null(),
                "duplicate node name",
            ),
        ],
        source,
        raw_names,
    )
    node_id = pl.int_range(pl.len(), dtype=pl.Int64())
    df = (
        df.with_columns(
            node_id.alias("node_id"),
            (node_id // nodes_per_nvlink_domain).alias("nvlink_domain"),
            (node_id // rack_size).alias("rack"),
            (node_id // rack_size // racks_per_spine).alias("spine"),
            pl.lit(None, dtype=pl.String()).alias("mig_layout"),
        )
        .drop("numa_of_gpu", strict=False)
        .join(_numa_table(df["num_gpus"], numa_per_node), on="num_gpus", how="left", maintain_order="left")
    )
    keep = [
        *NODES_SCHEMA,
        "source_row",
        *(c for c in df.columns if c.startswith("source_") and c != "source_row"),
    ]
    return validate_nodes(df.select(keep), source, raw_names)
