"""Cluster config (the ``cluster`` group) → node-table builder → :class:`ClusterNodes`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from gpureplay.cluster.nodes import ClusterNodes
from gpureplay.errors import InputError


def _philly(cfg: Mapping[str, Any]) -> ClusterNodes:
    from gpureplay.cluster.philly import philly_nodes

    return philly_nodes(
        cfg["machine_list"],
        revised=cfg["revised"],
        revised_list=cfg["revised_list"],
        rack_size=cfg["rack_size"],
        racks_per_spine=cfg["racks_per_spine"],
    )


def _openb(cfg: Mapping[str, Any]) -> ClusterNodes:
    from gpureplay.cluster.openb import openb_nodes

    return openb_nodes(cfg["path"])


def _pai(cfg: Mapping[str, Any]) -> ClusterNodes:
    from gpureplay.cluster.pai import pai_nodes

    return pai_nodes(cfg["path"])


def _spot(cfg: Mapping[str, Any]) -> ClusterNodes:
    from gpureplay.cluster.spot import spot_nodes

    return spot_nodes(cfg["path"])


def _kubectl(cfg: Mapping[str, Any]) -> ClusterNodes:
    from gpureplay.cluster.kubectl import kubectl_nodes

    return kubectl_nodes(
        cfg["path"],
        numa_per_node=cfg["numa_per_node"],
        rack_size=cfg["rack_size"],
        racks_per_spine=cfg["racks_per_spine"],
        spine_label=cfg["spine_label"],
        rack_label=cfg["rack_label"],
        nvlink_label=cfg["nvlink_label"],
        tolerated_taints=cfg["tolerated_taints"],
    )


def _homogeneous(cfg: Mapping[str, Any]) -> ClusterNodes:
    from gpureplay.cluster.homogeneous import homogeneous_nodes

    return homogeneous_nodes(
        cfg["nodes"],
        cfg["gpus_per_node"],
        cfg["gpu_model"],
        cpu_milli=cfg["cpu_milli"],
        mem_mib=cfg["mem_mib"],
        numa_per_node=cfg["numa_per_node"],
        nvlink_domain_size=cfg["nvlink_domain_size"],
        rack_size=cfg["rack_size"],
        racks_per_spine=cfg["racks_per_spine"],
        mig_layout=cfg.get("mig_layout"),
        mig_nodes=cfg.get("mig_nodes"),
    )


BUILDERS: dict[str, Callable[[Mapping[str, Any]], ClusterNodes]] = {
    "philly": _philly,
    "openb": _openb,
    "pai": _pai,
    "spot": _spot,
    "kubectl": _kubectl,
    "homogeneous": _homogeneous,
}


def build_cluster(cfg: Mapping[str, Any]) -> ClusterNodes:
    """Build the node table a ``cluster`` config describes.

    Raises
    ------
    InputError
        For an unknown ``cluster.kind`` or any problem in the node list.
    """
    kind = cfg.get("kind")
    builder = BUILDERS.get(str(kind))
    if builder is None:
        raise InputError.single(
            f"unknown cluster kind {kind!r}; known: {', '.join(sorted(BUILDERS))}",
            "config",
            key="cluster.kind",
        )
    cluster = builder(cfg)
    if cfg.get("topology") is not None:
        cluster = _with_topology(cluster, str(cfg["topology"]), str(cfg.get("topology_match", "name")))
    return cluster


def _with_topology(cluster: ClusterNodes, path: str, match: str) -> ClusterNodes:
    """The cluster with its spines, racks and NVLink domains from a topology file (``cluster.topology``)."""
    from gpureplay.cluster.topology import apply_topology, read_topology
    from gpureplay.paths import resolve_data_path

    try:
        found = resolve_data_path(path, "topology file")
    except FileNotFoundError as err:
        raise InputError.single(str(err), "config", key="cluster.topology") from err
    nodes = apply_topology(cluster.nodes, read_topology(found), match, str(found))
    changes = cluster.changes.copy()
    changes[f"spine / rack / NVLink domain from {found.name}"] += nodes.height
    return dataclasses.replace(
        cluster, nodes=nodes, source=f"{cluster.source}; topology {found}", changes=changes
    )
