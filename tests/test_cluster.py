"""Canonical node tables from the real node lists (exact counts from SOURCE.md) and the generator."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from gpureplay.cluster.homogeneous import homogeneous_nodes
from gpureplay.cluster.nodes import ClusterNodes
from gpureplay.cluster.openb import openb_nodes
from gpureplay.cluster.pai import pai_nodes
from gpureplay.cluster.philly import philly_nodes
from gpureplay.cluster.spot import spot_nodes
from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import file_sha256
from gpureplay.traces.schema import NODES_SCHEMA, UNKNOWN_CAPACITY


def _gpus(cluster: ClusterNodes) -> dict[str | None, int]:
    return {m: g for m, _, g in cluster.gpus_by_model().iter_rows()}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _assert_canonical(cluster: ClusterNodes) -> None:
    nodes = cluster.nodes
    assert list(nodes.columns[: len(NODES_SCHEMA)]) == list(NODES_SCHEMA)
    assert dict(nodes.schema) | dict(NODES_SCHEMA) == dict(nodes.schema)
    assert nodes["node_id"].to_list() == list(range(nodes.height))
    # One NUMA entry per GPU, null exactly for GPU-less nodes.
    assert nodes.filter(pl.col("numa_of_gpu").is_null() != (pl.col("num_gpus") == 0)).height == 0
    assert nodes.filter(pl.col("gpu_model").is_null() != (pl.col("num_gpus") == 0)).height == 0


# --- Philly ------------------------------------------------------------------------------------


def test_philly_official_list() -> None:
    cluster = philly_nodes()
    nodes = cluster.nodes
    _assert_canonical(cluster)
    assert nodes.height == 552
    assert cluster.total_gpus == 2490
    assert _gpus(cluster) == {"PHILLY-24GB": 1848, "PHILLY-12GB": 642}
    by_model = nodes.group_by("gpu_model", "num_gpus", "gpu_mem_mib").len().sort("gpu_model")
    assert by_model.rows() == [("PHILLY-12GB", 2, 12288, 321), ("PHILLY-24GB", 8, 24576, 231)]
    # The header's leading spaces are stripped, values too.
    assert nodes["node_name"][0] == "m0"
    assert nodes["source_gpu_mem"].unique().sort().to_list() == ["12GB", "24GB"]
    assert (nodes["cpu_milli"] == UNKNOWN_CAPACITY).all()
    assert (nodes["mem_mib"] == UNKNOWN_CAPACITY).all()
    assert sum(cluster.changes.values()) == 2 * 552
    assert nodes["source_row"].to_list() == list(range(1, 553))
    assert (nodes["nvlink_domain"] == nodes["node_id"]).all()
    assert (nodes["rack"] == nodes["node_id"] // 16).all()
    assert (nodes["spine"] == nodes["node_id"] // 128).all()
    assert nodes.filter(pl.col("num_gpus") == 2)["numa_of_gpu"][0].to_list() == [0, 1]
    assert nodes.filter(pl.col("num_gpus") == 8)["numa_of_gpu"][0].to_list() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert cluster.sha256 == file_sha256(resolve_data_path("philly/cluster_machine_list.csv.gz"))


def test_philly_revised_counts() -> None:
    cluster = philly_nodes(revised=True)
    nodes = cluster.nodes
    _assert_canonical(cluster)
    assert nodes.height == 552
    assert cluster.total_gpus == 3205
    counts = dict(nodes.group_by("num_gpus").len().iter_rows())
    assert counts == {4: 271, 8: 264, 0: 13, 2: 3, 3: 1}
    revisions = {r: c for r, c in cluster.changes.items() if r.startswith("revised list: GPU count")}
    # Every machine whose count differs from the official list, by transition.
    assert sum(revisions.values()) == 526
    assert revisions["revised list: GPU count 2 -> 8 (official GPU memory class kept)"] == 238
    # The memory class follows the machine's official entry: m0 was "2 x 12GB", now 8 GPUs of 12 GB.
    m0 = nodes.filter(pl.col("node_name") == "m0").row(0, named=True)
    assert (m0["num_gpus"], m0["gpu_model"], m0["gpu_mem_mib"], m0["source_gpus"]) == (
        8,
        "PHILLY-12GB",
        12288,
        "2",
    )
    gpu_less = nodes.filter(pl.col("num_gpus") == 0)
    assert gpu_less["gpu_model"].null_count() == 13 and (gpu_less["gpu_mem_mib"] == 0).all()
    assert nodes.filter(pl.col("num_gpus") == 3)["numa_of_gpu"][0].to_list() == [0, 0, 1]
    assert "GPU counts" in cluster.source and "GPU memory" in cluster.source


def test_philly_topology_parameters() -> None:
    cluster = philly_nodes(rack_size=4, racks_per_spine=2)
    assert cluster.nodes["rack"].max() == 551 // 4
    assert cluster.nodes["spine"].max() == 551 // 8
    with pytest.raises(InputError, match=r"config key 'cluster.rack_size': must be a whole number >= 1"):
        philly_nodes(rack_size=0)


def test_philly_bad_values_name_row_and_column(tmp_path: Path) -> None:
    header = "machineId, number of GPUs, single GPU mem\n"
    bad_count = _write(tmp_path / "a.csv", header + "m0,2, 12GB\nm1,two, 12GB\n")
    with pytest.raises(InputError, match=r"a.csv, row 2, column 'number of GPUs': cannot read 'two'"):
        philly_nodes(bad_count)
    bad_mem = _write(tmp_path / "b.csv", header + "m0,2, 12GB\nm1,2, 12GB\nm2,4, 16GB\n")
    with pytest.raises(
        InputError, match=r"b.csv, row 3, column 'single GPU mem': unknown GPU memory class '16GB'"
    ):
        philly_nodes(bad_mem)
    negative = _write(tmp_path / "c.csv", header + "m0,-2, 12GB\n")
    with pytest.raises(InputError, match=r"c.csv, row 1, column 'number of GPUs': num_gpus must be >= 0"):
        philly_nodes(negative)
    missing = _write(tmp_path / "d.csv", "machineId, number of GPUs\nm0,2\n")
    with pytest.raises(InputError, match=r"missing column\(s\) single GPU mem"):
        philly_nodes(missing)


def test_philly_revised_join(tmp_path: Path) -> None:
    official = _write(
        tmp_path / "official.csv",
        "machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm1,8, 24GB\nm2,8, 24GB\n",
    )
    revised = _write(tmp_path / "revised.csv", ",machineId,number of GPUs\n0,m1,4\n1,m0,2\n2,m9,0\n")
    cluster = philly_nodes(official, revised=True, revised_list=revised)
    nodes = cluster.nodes
    # Order and source_row follow the revised list; the official row is kept.
    assert nodes["node_name"].to_list() == ["m1", "m0", "m9"]
    assert nodes["source_official_row"].to_list() == [2, 1, None]
    assert nodes["gpu_model"].to_list() == ["PHILLY-24GB", "PHILLY-12GB", None]
    assert cluster.changes["revised list: GPU count 8 -> 4 (official GPU memory class kept)"] == 1
    assert cluster.changes["official list: machine not in the revised list, dropped"] == 1
    assert cluster.changes["revised list: GPU-less machine not in the official list"] == 1

    orphan = _write(tmp_path / "orphan.csv", ",machineId,number of GPUs\n0,m1,4\n1,m7,8\n")
    with pytest.raises(InputError, match=r"orphan.csv, row 2, column 'machineId': machine 'm7' has GPUs"):
        philly_nodes(official, revised=True, revised_list=orphan)
    dup = _write(tmp_path / "dup.csv", ",machineId,number of GPUs\n0,m1,4\n1,m1,8\n")
    with pytest.raises(InputError, match=r"dup.csv, row 1, column 'machineId': duplicate machineId 'm1'"):
        philly_nodes(official, revised=True, revised_list=dup)


# --- openb -------------------------------------------------------------------------------------

OPENB_GPUS: dict[str | None, int] = {
    "G2": 4392,
    "T4": 842,
    "G3": 312,
    "P100": 265,
    "V100-32GB": 204,
    "V100": 195,
    "A10": 2,
}


def test_openb_gpu_nodes() -> None:
    cluster = openb_nodes()
    nodes = cluster.nodes
    _assert_canonical(cluster)
    assert nodes.height == 1213
    assert cluster.total_gpus == 6212
    assert _gpus(cluster) == OPENB_GPUS
    assert not cluster.changes
    # Aliases resolved through the catalog, the raw spelling kept.
    v100 = nodes.filter(pl.col("source_model") == "V100M16")
    assert v100.height == 55 and v100["gpu_model"].unique().to_list() == ["V100"]
    assert (v100["gpu_mem_mib"] == 16384).all()
    assert nodes.filter(pl.col("gpu_model") == "V100-32GB")["gpu_mem_mib"].unique().to_list() == [32768]
    first = nodes.row(0, named=True)
    assert (first["node_name"], first["cpu_milli"], first["mem_mib"]) == ("openb-node-0000", 64000, 262144)


def test_openb_all_nodes() -> None:
    cluster = openb_nodes("openb/openb_node_list_all_node.csv.gz")
    _assert_canonical(cluster)
    assert cluster.nodes.height == 1523
    assert cluster.nodes.filter(pl.col("num_gpus") == 0).height == 310
    assert _gpus(cluster) == {**OPENB_GPUS, None: 0}
    assert "CPU-only             310 nodes" in cluster.describe()


def test_openb_bad_rows(tmp_path: Path) -> None:
    header = "sn,cpu_milli,memory_mib,gpu,model\n"
    unknown = _write(tmp_path / "a.csv", header + "n0,1000,1024,1,T4\nn1,1000,1024,2,TPUv4\n")
    with pytest.raises(
        InputError, match=r"a.csv, row 2, column 'model': unknown GPU model 'TPUv4'; known models: "
    ):
        openb_nodes(unknown)
    not_number = _write(tmp_path / "b.csv", header + "n0,lots,1024,1,T4\n")
    with pytest.raises(InputError, match=r"b.csv, row 1, column 'cpu_milli': cannot read 'lots'"):
        openb_nodes(not_number)
    no_model = _write(tmp_path / "c.csv", header + "n0,1000,1024,1,T4\nn1,1000,1024,4,\n")
    with pytest.raises(InputError, match=r"c.csv, row 2, column 'model': a node with GPUs needs a gpu_model"):
        openb_nodes(no_model)
    dup = _write(tmp_path / "d.csv", header + "n0,1000,1024,1,T4\nn0,1000,1024,1,T4\n")
    with pytest.raises(InputError, match=r"d.csv, row 1, column 'sn': duplicate node name"):
        openb_nodes(dup)
    empty = _write(tmp_path / "e.csv", header)
    with pytest.raises(InputError, match=r"e.csv: the node list has no nodes"):
        openb_nodes(empty)


def test_openb_model_on_gpu_less_node_is_counted(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,0,T4\nn1,1000,1024,1,t4\n"
    )
    cluster = openb_nodes(path)
    assert cluster.nodes["gpu_model"].to_list() == [None, "T4"]
    assert cluster.nodes["gpu_mem_mib"].to_list() == [0, 16384]
    assert cluster.changes == {"node has no GPUs: GPU model in 'model' ignored, gpu_model null": 1}


# --- PAI 2020 ----------------------------------------------------------------------------------


def test_pai_machine_spec() -> None:
    cluster = pai_nodes()
    nodes = cluster.nodes
    _assert_canonical(cluster)
    # SOURCE.md says 1,896 machines, but its per-type counts (and the file) add up to 1,897.
    assert nodes.height == 1897
    assert cluster.total_gpus == 6742
    per_type = {
        t: (n, g)
        for t, n, g in nodes.group_by("source_gpu_type").agg(pl.len(), pl.col("num_gpus").first()).iter_rows()
    }
    assert per_type == {
        "P100": (798, 2),
        "T4": (497, 2),
        "MISC": (280, 8),
        "V100M32": (135, 8),
        "V100": (104, 8),
        "CPU": (83, 0),
    }
    assert nodes.filter(pl.col("source_gpu_type") == "CPU")["gpu_model"].null_count() == 83
    first = nodes.row(0, named=True)
    assert (first["cpu_milli"], first["mem_mib"]) == (96_000, 512 * 1024)
    assert set(nodes["cpu_milli"].unique().to_list()) <= {64_000, 96_000}


def test_pai_wrong_field_count(tmp_path: Path) -> None:
    path = tmp_path / "spec.csv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("abc,P100,64,384\n")
    with pytest.raises(InputError, match=r"expected 5 columns"):
        pai_nodes(path)
    bad = _write(tmp_path / "spec.csv", "abc,P100,64,384,2\ndef,T4,64,lots,2\n")
    with pytest.raises(InputError, match=r"spec.csv, row 2, column 'cap_mem': cannot read 'lots'"):
        pai_nodes(bad)


# --- spot-GPU ----------------------------------------------------------------------------------


def _spot_path() -> Path | None:
    try:
        return resolve_data_path("alibaba-v2026-spot-gpu/node_info_df.csv.gz")
    except FileNotFoundError:
        return None


@pytest.mark.skipif(
    _spot_path() is None,
    reason="node_info_df.csv.gz is not bundled (license unstated); put it under "
    "../shared/traces/alibaba-v2026-spot-gpu or $GPUREPLAY_DATA",
)
def test_spot_real_file() -> None:
    cluster = spot_nodes()
    _assert_canonical(cluster)
    assert cluster.nodes.height == 4278
    assert cluster.total_gpus == 10412
    assert _gpus(cluster) == {
        "A10": 2494,
        "GPU-series-1": 1558,
        "A100-80GB": 3456,
        "H800": 1752,
        "GPU-series-2": 976,
        "A800-80GB": 176,
    }
    assert (
        cluster.changes["mem_mib not given by the spot-GPU node list: UNKNOWN_CAPACITY (never constrains)"]
        == 4278
    )


def test_spot_fixture(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "node_info_df.csv",
        "gpu_model,gpu_capacity_num,cpu_num,node_name\nA100-SXM4-80GB,8,128,0\nA10,1,126,1\n"
        "GPU-series-1,4,192,2\n",
    )
    cluster = spot_nodes(path)
    _assert_canonical(cluster)
    assert cluster.nodes["gpu_model"].to_list() == ["A100-80GB", "A10", "GPU-series-1"]
    assert cluster.nodes["cpu_milli"].to_list() == [128_000, 126_000, 192_000]
    assert (cluster.nodes["mem_mib"] == UNKNOWN_CAPACITY).all()
    assert cluster.nodes["node_name"].to_list() == ["0", "1", "2"]
    assert cluster.total_gpus == 13
    bad = _write(tmp_path / "bad.csv", "gpu_model,gpu_capacity_num,cpu_num,node_name\nB300,8,128,0\n")
    with pytest.raises(InputError, match=r"bad.csv, row 1, column 'gpu_model': unknown GPU model 'B300'"):
        spot_nodes(bad)


def test_spot_missing_file_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="looked in"):
        spot_nodes("no-such-folder/node_info_df.csv.gz")


# --- homogeneous -------------------------------------------------------------------------------


def test_homogeneous_defaults() -> None:
    cluster = homogeneous_nodes(40, 8, "H100")
    nodes = cluster.nodes
    _assert_canonical(cluster)
    assert nodes.height == 40 and cluster.total_gpus == 320
    assert nodes["gpu_model"].unique().to_list() == ["H100-80GB"]
    assert (nodes["gpu_mem_mib"] == 81920).all()
    assert (nodes["cpu_milli"] == UNKNOWN_CAPACITY).all() and (nodes["mem_mib"] == UNKNOWN_CAPACITY).all()
    assert sum(cluster.changes.values()) == 80
    assert nodes["node_name"][:2].to_list() == ["node-00000", "node-00001"]
    assert (nodes["nvlink_domain"] == nodes["node_id"]).all()
    assert nodes["rack"].to_list() == [0] * 32 + [1] * 8
    assert cluster.sha256 is None
    assert cluster.describe().startswith("homogeneous(40 x 8 H100-80GB): 40 nodes, 320 GPUs")


def test_homogeneous_topology() -> None:
    cluster = homogeneous_nodes(
        40,
        4,
        "GB200",
        cpu_milli=72_000,
        mem_mib=480 * 1024,
        numa_per_node=4,
        nvlink_domain_size=72,
        rack_size=18,
        racks_per_spine=2,
    )
    nodes = cluster.nodes
    assert not cluster.changes
    # 72 GPUs = 18 nodes of 4 per NVLink domain (NVL72); the last domain holds the 4 remaining nodes.
    assert nodes.group_by("nvlink_domain").len().sort("nvlink_domain").rows() == [(0, 18), (1, 18), (2, 4)]
    assert nodes["numa_of_gpu"][0].to_list() == [0, 1, 2, 3]
    assert nodes["spine"].to_list() == [0] * 36 + [1] * 4
    assert (nodes["cpu_milli"] == 72_000).all()
    single = homogeneous_nodes(2, 1, "T4")
    assert single.nodes["numa_of_gpu"].to_list() == [[0], [0]]
    # A size within one node keeps one domain per node.
    assert homogeneous_nodes(3, 8, "A100-80GB", nvlink_domain_size=4).nodes["nvlink_domain"].to_list() == [
        0,
        1,
        2,
    ]


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"nodes": 0}, "cluster.nodes"),
        ({"gpus_per_node": -1}, "cluster.gpus_per_node"),
        ({"numa_per_node": 0}, "cluster.numa_per_node"),
        ({"rack_size": 0}, "cluster.rack_size"),
        ({"racks_per_spine": 0}, "cluster.racks_per_spine"),
        ({"cpu_milli": -5}, "cluster.cpu_milli"),
        ({"mem_mib": 2**31}, "cluster.mem_mib"),
        ({"nvlink_domain_size": 0}, "cluster.nvlink_domain_size"),
        ({"nvlink_domain_size": 12}, "cluster.nvlink_domain_size"),
        ({"gpu_model": "TPUv4"}, "cluster.gpu_model"),
    ],
)
def test_homogeneous_bad_config_names_key(kwargs: dict[str, object], key: str) -> None:
    args: dict[str, object] = {"nodes": 4, "gpus_per_node": 8, "gpu_model": "A100-80GB", **kwargs}
    with pytest.raises(InputError, match=rf"config key '{key}'"):
        homogeneous_nodes(**args)  # type: ignore[arg-type]


def test_homogeneous_unknown_model_lists_known() -> None:
    with pytest.raises(InputError) as info:
        homogeneous_nodes(4, 8, "TPUv4")
    message = str(info.value)
    assert "unknown GPU model 'TPUv4'" in message
    assert "H200-141GB" in message and "A100-80GB" in message
