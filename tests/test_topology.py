"""Topology files (gpureplay.cluster.topology): our own format, Crux's, matching and every bad input."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf
from tests.reference.strategies import nodes_frame

from gpureplay.cluster.registry import build_cluster
from gpureplay.cluster.topology import apply_topology, read_topology
from gpureplay.config import register_configs
from gpureplay.errors import InputError


def write(tmp_path: Path, text: str, name: str = "topology.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def homogeneous(**overrides: object) -> dict[str, object]:
    """A homogeneous cluster config (the ``cluster`` group's fields), with ``overrides``."""
    config: dict[str, object] = {
        "name": "h",
        "kind": "homogeneous",
        "nodes": 4,
        "gpus_per_node": 8,
        "gpu_model": "A100-80GB",
        "cpu_milli": None,
        "mem_mib": None,
        "numa_per_node": 2,
        "nvlink_domain_size": None,
        "rack_size": 32,
        "racks_per_spine": 8,
    }
    return config | overrides


def four_nodes() -> pl.DataFrame:
    return nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 4)


def test_own_format_names_a_domain_by_its_path(tmp_path: Path) -> None:
    # Rack r1 appears under spines a and b: two racks (Kueue's domain ID is the path of level values).
    path = write(
        tmp_path,
        "node_name,spine,rack\nnode-0,a,r1\nnode-1,a,r1\nnode-2,b,r1\nnode-3,b,r2\n",
    )
    nodes = apply_topology(four_nodes(), read_topology(path), "name", str(path))
    assert nodes["spine"].to_list() == [0, 0, 1, 1]
    assert nodes["rack"].to_list() == [0, 0, 1, 2]
    # Not given: the builder's numbering stays (one NVLink domain per server here).
    assert nodes["nvlink_domain"].to_list() == [0, 1, 2, 3]


def test_rows_match_by_name_in_any_order(tmp_path: Path) -> None:
    path = write(tmp_path, "node_name,rack\nnode-3,x\nnode-0,y\nnode-2,x\nnode-1,y\n")
    nodes = apply_topology(four_nodes(), read_topology(path), "name", str(path))
    # Ids in order of first appearance in node order: node-0 is y (0), node-2 is x (1).
    assert nodes["rack"].to_list() == [0, 0, 1, 1]


def test_crux_format_spine_is_the_psw_and_a_rack_the_psw_asw_pair(tmp_path: Path) -> None:
    path = write(tmp_path, "ip,DSW,PSW,ASW\nh0,G6,P10,S1\nh1,G6,P10,S1\nh2,G6,P12,S1\nh3,G6,P12,S2\n")
    table = read_topology(path)
    assert table.columns == ["node_name", "spine", "rack"]
    nodes = apply_topology(four_nodes(), table, "order", str(path))
    assert nodes["spine"].to_list() == [0, 0, 1, 1]
    assert nodes["rack"].to_list() == [0, 0, 1, 2]  # S1 under P10 and S1 under P12 are two racks


def test_the_bundled_crux_topology_builds_its_cluster() -> None:
    cluster = build_cluster(
        homogeneous(nodes=847, topology="crux_topology/topo.csv.gz", topology_match="order")
    )
    nodes = cluster.nodes
    # The published file: 3 aggregation switches (179 / 306 / 362 hosts), 119 (PSW, ASW) racks of 2-8 hosts.
    assert nodes["spine"].n_unique() == 3
    assert sorted(nodes.group_by("spine").len()["len"].to_list()) == [179, 306, 362]
    racks = nodes.group_by("rack").len()["len"]
    assert (racks.len(), racks.min(), racks.max()) == (119, 2, 8)
    assert "topology" in cluster.source


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("name,rack\nnode-0,a\n", "no node_name column", None),
        ("node_name,rack,zone\nnode-0,a,z\n", "not a topology level", "zone"),
        ("node_name\nnode-0\n", "no level column", None),
        ("node_name,rack\nnode-0,\nnode-1,a\n", "empty value", "rack"),
        ("node_name,rack\nnode-0,a\nnode-0,b\n", "listed more than once", "node_name"),
    ],
)
def test_bad_files_name_the_problem_and_where(
    tmp_path: Path, text: str, message: str, column: str | None
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=message) as err:
        read_topology(path)
    assert str(path) in str(err.value)
    if column is not None:
        assert f"column '{column}'" in str(err.value)


@pytest.mark.parametrize(
    ("text", "row", "message"),
    [
        ("node_name,rack\nnode-0,a\nnode-1,b,extra\n", 2, "3 fields, where the header names 2 columns"),
        ('node_name,rack\nnode-0,a\nnode-1,"b\nnode-2,c\n', 2, "cannot split the row"),
    ],
)
def test_a_row_that_does_not_split_is_named(tmp_path: Path, text: str, row: int, message: str) -> None:
    # polars' own message gave no row and advised its infer_schema_length / truncate_ragged_lines options.
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_topology(path)
    (problem,) = err.value.problems
    assert (problem.source, problem.row) == (str(path), row)
    assert (
        message in problem.message and "infer_schema" not in str(err.value) and "ragged" not in str(err.value)
    )


def test_nodes_must_match_the_cluster(tmp_path: Path) -> None:
    path = write(tmp_path, "node_name,rack\nnode-0,a\nnode-1,a\nnode-9,b\n")
    with pytest.raises(InputError) as err:
        apply_topology(four_nodes(), read_topology(path), "name", str(path))
    text = str(err.value)
    assert "'node-9' is not in the cluster" in text and "row 3" in text
    assert "2 node(s) of the cluster are not listed" in text
    with pytest.raises(InputError, match="3 rows for 4 nodes"):
        apply_topology(four_nodes(), read_topology(path), "order", str(path))
    with pytest.raises(InputError, match=r"cluster\.topology_match"):
        apply_topology(four_nodes(), read_topology(path), "fuzzy", str(path))


def test_a_missing_file_is_a_config_error() -> None:
    with pytest.raises(InputError, match=r"cluster\.topology"):
        build_cluster(homogeneous(nodes=2, topology="no/such/topology.csv"))
    # An absolute path was "trace file not found".
    with pytest.raises(InputError) as err:
        build_cluster(homogeneous(nodes=2, topology="/no/such/topology.csv"))
    assert str(err.value) == "config key 'cluster.topology': topology file not found: /no/such/topology.csv"


@pytest.mark.parametrize(
    ("preset", "nodes", "racks", "spines", "nvlink_domains"),
    [
        # 32 DGX H100 of 8 GPUs, 4 per rack, 8 racks per spine: one spine, 8 racks, one NVLink domain each.
        ("dgx-h100-superpod", 32, 8, 1, 32),
        # 20 DGX A100, 4 per rack: 5 racks.
        ("dgx-a100-superpod", 20, 5, 1, 20),
    ],
)
def test_superpod_presets_have_their_declared_shape(
    preset: str, nodes: int, racks: int, spines: int, nvlink_domains: int
) -> None:
    register_configs()
    with initialize_config_module(config_module="gpureplay.conf", version_base="1.3"):
        cfg = compose("config", overrides=[f"cluster={preset}"])
    table = build_cluster(OmegaConf.to_container(cfg.cluster, resolve=True)).nodes  # type: ignore[arg-type]
    assert table.height == nodes
    assert (table["rack"].n_unique(), table["spine"].n_unique()) == (racks, spines)
    assert table["nvlink_domain"].n_unique() == nvlink_domains
    assert (table["num_gpus"] == 8).all()
