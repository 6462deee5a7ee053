"""Generated clusters of identical servers (``nodes`` x ``gpus_per_node`` GPUs of one model).

For capacity planning and for hardware that no public node list describes
(DGX H100 SuperPODs, GB200 NVL72 racks, MIG-partitioned A100 fleets).
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from gpureplay.cluster import catalog
from gpureplay.cluster.nodes import ClusterNodes, check_positive, fill_unknown_capacity, finish_nodes
from gpureplay.errors import InputError, Problem


def homogeneous_nodes(
    nodes: int,
    gpus_per_node: int,
    gpu_model: str,
    cpu_milli: int | None = None,
    mem_mib: int | None = None,
    numa_per_node: int = 2,
    nvlink_domain_size: int | None = None,
    rack_size: int = 32,
    racks_per_spine: int = 8,
    mig_layout: str | None = None,
    mig_nodes: int | None = None,
) -> ClusterNodes:
    """Build ``nodes`` identical servers.

    Parameters
    ----------
    nodes
        Number of servers (``cluster.nodes``), >= 1.
    gpus_per_node
        GPUs per server (``cluster.gpus_per_node``), >= 1.
    gpu_model
        Catalog name or alias (``cluster.gpu_model``), e.g. ``H100-80GB`` or ``H100``.
    cpu_milli, mem_mib
        Per-server CPU (millicores) and memory (MiB); ``None`` means not
        modelled: ``UNKNOWN_CAPACITY``, which never constrains (counted in ``changes``).
    numa_per_node
        CPU sockets the GPUs are split over (``cluster.numa_per_node``).
    nvlink_domain_size
        GPUs in one NVLink domain (``cluster.nvlink_domain_size``). ``None``:
        the catalog's ``nvlink_size`` capped to one server, i.e. one domain per
        node. A size up to ``gpus_per_node`` stays within a server (one domain
        per node: the nodes table has no sub-node domains). A larger size must
        be a whole number of servers: 72 with 4 GPUs per node gives 18-node
        domains, as in GB200 NVL72 (NVIDIA GB200 NVL72 reference architecture).
        When ``nodes`` is not a multiple, the last domain holds the remainder.
    rack_size, racks_per_spine
        Servers per rack (32: two 1U/2U half-racks of 16, a usual leaf switch
        fan-out) and racks per spine; DGX SuperPOD builds use 4 per rack.
    mig_layout
        A mig-parted config of the model (``all-1g.10gb``, ``all-3g.40gb``,
        ``all-balanced``, ...; ``gpureplay mig layouts MODEL``) applied to every
        GPU, as the GPU Operator's ``nvidia.com/mig.config`` node label does;
        ``None``: MIG off. The replay models it under ``scheduler.mig_strategy``.
    mig_nodes
        How many servers (the first ones) get ``mig_layout``; the others keep
        whole GPUs. ``None``: all of them.

    Returns
    -------
    ClusterNodes
        Nodes named ``node-00000``, ..., ``source`` describing the generator,
        ``sha256`` None.

    Raises
    ------
    InputError
        Naming the config key of a bad value: ``cluster.nodes``,
        ``cluster.gpus_per_node``, ``cluster.cpu_milli``, ``cluster.mem_mib``,
        ``cluster.numa_per_node``, ``cluster.rack_size``,
        ``cluster.racks_per_spine``, ``cluster.nvlink_domain_size``,
        ``cluster.gpu_model`` for a model not in the catalog (listing the known
        ones), ``cluster.mig_layout`` for a config the model does not have, or
        ``cluster.mig_nodes`` outside 0 .. ``nodes`` or without a layout.
    """
    check_positive(
        {
            "cluster.nodes": nodes,
            "cluster.gpus_per_node": gpus_per_node,
            "cluster.numa_per_node": numa_per_node,
            "cluster.rack_size": rack_size,
            "cluster.racks_per_spine": racks_per_spine,
            "cluster.nvlink_domain_size": nvlink_domain_size,
        },
        maximum={
            "cluster.nodes": 2**31 - 1,
            "cluster.numa_per_node": 127,
            "cluster.gpus_per_node": 2**31 - 1,
        },
    )
    _check_capacity({"cluster.cpu_milli": cpu_milli, "cluster.mem_mib": mem_mib})
    # The parameter shadows catalog.gpu_model, hence the module-qualified calls.
    name = catalog.canonical_model(gpu_model) if isinstance(gpu_model, str) else None
    if name is None:
        known = ", ".join(sorted(catalog.gpu_models()))
        raise InputError.single(
            f"unknown GPU model {gpu_model!r}; known models: {known}", "config", key="cluster.gpu_model"
        )
    model = catalog.gpu_model(name)
    size = min(model.nvlink_size, gpus_per_node) if nvlink_domain_size is None else nvlink_domain_size
    if size > gpus_per_node and size % gpus_per_node:
        raise InputError.single(
            f"an NVLink domain of {size} GPUs larger than one node must be a whole number of nodes of "
            f"{gpus_per_node} GPUs (e.g. {gpus_per_node * max(2, size // gpus_per_node)})",
            "config",
            key="cluster.nvlink_domain_size",
        )
    nodes_per_domain = max(1, size // gpus_per_node)
    if mig_layout is not None:
        _check_mig_layout(name, mig_layout)
    if mig_nodes is not None:
        if mig_layout is None:
            raise InputError.single(
                "partitions the first servers with cluster.mig_layout, which is not set", "config",
                key="cluster.mig_nodes",
            )  # fmt: skip
        if not 0 <= mig_nodes <= nodes:
            raise InputError.single(
                f"must be between 0 and cluster.nodes ({nodes}), found {mig_nodes}", "config",
                key="cluster.mig_nodes",
            )  # fmt: skip

    source = f"homogeneous({nodes} x {gpus_per_node} {name})"
    changes: Counter[str] = Counter()
    index = pl.int_range(nodes, dtype=pl.Int64(), eager=True)
    df = pl.DataFrame({"source_row": index + 1}).with_columns(
        pl.format("node-{}", pl.col("source_row").sub(1).cast(pl.String()).str.zfill(5)).alias("node_name"),
        pl.lit(name, dtype=pl.String()).alias("gpu_model"),
        pl.lit(gpus_per_node, dtype=pl.Int64()).alias("num_gpus"),
        pl.lit(model.memory_mib, dtype=pl.Int64()).alias("gpu_mem_mib"),
    )
    for column, value in (("cpu_milli", cpu_milli), ("mem_mib", mem_mib)):
        if value is None:
            df = fill_unknown_capacity(df, column, changes, "the cluster config")
        else:
            df = df.with_columns(pl.lit(value, dtype=pl.Int64()).alias(column))
    table = finish_nodes(
        df,
        source,
        numa_per_node=numa_per_node,
        rack_size=rack_size,
        racks_per_spine=racks_per_spine,
        nodes_per_nvlink_domain=nodes_per_domain,
    )
    if mig_layout is not None:
        count = nodes if mig_nodes is None else mig_nodes
        source = f"homogeneous({nodes} x {gpus_per_node} {name}, MIG {mig_layout} on {count})"
        layouts = pl.Series("mig_layout", [mig_layout] * count + [None] * (nodes - count), dtype=pl.String())
        table = table.with_columns(layouts)
    return ClusterNodes(table, source, None, changes)


def _check_mig_layout(model: str, layout: str) -> None:
    """Raise :class:`InputError` (``cluster.mig_layout``) unless ``layout`` is a mig-parted config of it."""
    from gpureplay.mig.geometry import MigError, mig_geometry
    from gpureplay.mig.parted import standard_configs

    try:
        configs = standard_configs(mig_geometry(model)).configs
    except MigError as err:
        raise InputError.single(str(err), "config", key="cluster.mig_layout") from None
    if layout not in configs:
        raise InputError.single(
            f"{layout!r} is not a mig-parted config of {model}; its configs: {', '.join(configs)}",
            "config",
            key="cluster.mig_layout",
        )


def _check_capacity(values: dict[str, int | None]) -> None:
    problems = [
        Problem(
            f"must be a whole number from 0 to {2**31 - 1}, or null for unknown (found {value!r})",
            "config",
            key=key,
        )
        for key, value in values.items()
        if value is not None
        and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31)
    ]
    if problems:
        raise InputError(problems)
