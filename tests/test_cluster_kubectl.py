"""A cluster from ``kubectl get nodes -o json`` (gpureplay.cluster.kubectl).

The files are written in the shape kubectl prints (a ``v1`` ``List`` of ``Node`` objects with metadata,
spec, status.capacity, status.allocatable, conditions and nodeInfo), with GPU Feature Discovery's labels
as the NVIDIA GPU Operator sets them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import polars as pl
import pytest
from omegaconf import OmegaConf
from tests.cli import gpureplay

from gpureplay.cluster.kubectl import kubectl_nodes, parse_quantity
from gpureplay.cluster.registry import build_cluster
from gpureplay.config import compose_config
from gpureplay.errors import InputError

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "clusters" / "kubectl-nodes.json"

# --- files in kubectl's shape --------------------------------------------------------------------

_BASE_LABELS = {
    "beta.kubernetes.io/arch": "amd64",
    "beta.kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
}


def gfd_labels(product: str, count: int, memory: int, **extra: str) -> dict[str, str]:
    """GPU Feature Discovery's labels of a node (k8s-device-plugin docs/gpu-feature-discovery)."""
    return {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/cuda.driver-version.full": "550.90.07",
        "nvidia.com/cuda.driver-version.major": "550",
        "nvidia.com/cuda.runtime-version.full": "12.4",
        "nvidia.com/gfd.timestamp": "1717411200",
        "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.family": "ampere",
        "nvidia.com/gpu.machine": "DGXA100-920-23687-2530-000",
        "nvidia.com/gpu.memory": str(memory),
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "single",
        **extra,
    }


def node(
    name: str,
    allocatable: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One Node as ``kubectl get nodes -o json`` prints it."""
    allocatable = {"ephemeral-storage": "1698474219528", "hugepages-1Gi": "0", "hugepages-2Mi": "0"} | {
        "pods": "110",
        **allocatable,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": "2024-05-02T09:14:27Z",
            "labels": {**_BASE_LABELS, "kubernetes.io/hostname": name, **(labels or {})},
            "name": name,
            "resourceVersion": "48213377",
            "uid": f"5f0c9a2e-{sum(map(ord, name)) % 10**4:04d}-4bb1-9c1e-2a7d3f1c0b9e",
        },
        "spec": {"podCIDR": "10.244.3.0/24", "podCIDRs": ["10.244.3.0/24"], **(spec or {})},
        "status": {
            "addresses": [
                {"address": f"10.20.0.{sum(map(ord, name)) % 250 + 2}", "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": allocatable,
            "capacity": dict(capacity) if capacity is not None else dict(allocatable),
            "conditions": [
                {
                    "lastHeartbeatTime": "2024-06-03T11:02:41Z",
                    "lastTransitionTime": "2024-05-02T09:14:27Z",
                    "message": f"kubelet has sufficient {what}",
                    "reason": f"KubeletHasSufficient{reason}",
                    "status": "False",
                    "type": kind,
                }
                for kind, what, reason in (
                    ("MemoryPressure", "memory available", "Memory"),
                    ("DiskPressure", "disk", "Disk"),
                    ("PIDPressure", "PID available", "PID"),
                )
            ]
            + [
                {
                    "lastHeartbeatTime": "2024-06-03T11:02:41Z",
                    "lastTransitionTime": "2024-05-02T09:15:03Z",
                    "message": "kubelet is posting ready status",
                    "reason": "KubeletReady",
                    "status": "True",
                    "type": "Ready",
                }
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "c1b0f0a4-8f49-4a64-a6b1-2a0f8c5b6d11",
                "containerRuntimeVersion": "containerd://1.7.13",
                "kernelVersion": "5.15.0-105-generic",
                "kubeProxyVersion": "v1.29.4",
                "kubeletVersion": "v1.29.4",
                "machineID": "0d3c7f5c2f7d4a0c9b8e6f1a2b3c4d5e",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.4 LTS",
                "systemUUID": "4c4c4544-0042-3510-8052-b4c04f4e3133",
            },
        },
    }


def dgx_a100(name: str, **extra: str) -> dict[str, Any]:
    """A DGX A100 640GB: 8 A100-SXM4-80GB, 256 threads, 2 TiB, system reservations taken off."""
    return node(
        name,
        {"cpu": "254", "memory": "2113091808Ki", "nvidia.com/gpu": "8"},
        gfd_labels("NVIDIA-A100-SXM4-80GB", 8, 81920, **extra),
        capacity={"cpu": "256", "memory": "2113608928Ki", "nvidia.com/gpu": "8", "pods": "110"},
    )


def v100_node(name: str) -> dict[str, Any]:
    """A DGX-1V-class server: 8 Tesla V100-SXM2-32GB, 80 threads, 512 GiB."""
    return node(
        name,
        {"cpu": "79500m", "memory": "512Gi", "nvidia.com/gpu": "8"},
        gfd_labels("Tesla-V100-SXM2-32GB", 8, 32768, **{"nvidia.com/gpu.family": "volta"}),
    )


def cpu_node(name: str) -> dict[str, Any]:
    return node(name, {"cpu": "63500m", "memory": "257634112Ki"})


def control_plane(name: str) -> dict[str, Any]:
    return node(
        name,
        {"cpu": "8", "memory": "32Gi"},
        {"node-role.kubernetes.io/control-plane": ""},
        {"taints": [{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}]},
    )


def kubectl_list(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": list(nodes), "kind": "List", "metadata": {"resourceVersion": ""}}


def write(path: Path, data: Any) -> Path:
    """``data`` as kubectl prints it: keys sorted, four-space indents."""
    path.write_text(json.dumps(data, indent=4, sort_keys=True) + "\n")
    return path


def messages(err: pytest.ExceptionInfo[InputError]) -> str:
    return str(err.value)


# --- quantities ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("64", 64),
        ("63500m", Fraction(127, 2)),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("+3", 3),
        ("-3", -3),
        ("527958544Ki", 527958544 * 2**10),
        ("512Mi", 512 * 2**20),
        ("512Gi", 512 * 2**30),
        ("1.5Ti", 3 * 2**39),
        ("2Pi", 2 * 2**50),
        ("1Ei", 2**60),
        ("1k", 1000),
        ("500M", 500 * 10**6),
        ("2G", 2 * 10**9),
        ("1T", 10**12),
        ("1P", 10**15),
        ("1E", 10**18),
        ("1e9", 10**9),
        ("1E3", 1000),
        ("5e-3", Fraction(5, 1000)),
        ("12e+2", 1200),
        (8, 8),
        (1e9, 10**9),
    ],
)
def test_quantity_grammar(text: object, value: Fraction | int) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text", ["", "Gi", "1 Gi", "1K", "1Mb", "1e", "1.2.3", "1gi", "abc", "0x10", None, True, "1e99"]
)
def test_not_a_quantity(text: object) -> None:
    with pytest.raises(ValueError, match=r"quantity|exponent"):
        parse_quantity(text)


# --- whole-GPU nodes, CPU-only nodes, quantities of every kind ------------------------------------


def test_two_models_cpu_only_and_allocatable(tmp_path: Path) -> None:
    path = write(
        tmp_path / "nodes.json",
        kubectl_list(
            dgx_a100("dgx-a100-01"), dgx_a100("dgx-a100-02"), v100_node("v100-01"), cpu_node("cpu-01")
        ),
    )
    cluster = kubectl_nodes(path)
    nodes = cluster.nodes
    assert nodes["node_name"].to_list() == ["dgx-a100-01", "dgx-a100-02", "v100-01", "cpu-01"]
    assert nodes["gpu_model"].to_list() == ["A100-80GB", "A100-80GB", "V100-32GB", None]
    assert nodes["num_gpus"].to_list() == [8, 8, 8, 0]
    assert nodes["gpu_mem_mib"].to_list() == [81920, 81920, 32768, 0]
    # allocatable, not capacity: 254 of 256 cores; 2113091808Ki = 2063566 MiB (rounded down).
    assert nodes["cpu_milli"].to_list() == [254000, 254000, 79500, 63500]
    assert nodes["mem_mib"].to_list() == [
        2113091808 // 1024,
        2113091808 // 1024,
        512 * 1024,
        257634112 // 1024,
    ]
    assert nodes["source_gpu_product"].to_list()[2] == "Tesla-V100-SXM2-32GB"
    assert cluster.total_gpus == 24 and cluster.sha256 is not None and cluster.source == str(path)
    assert nodes["mig_layout"].null_count() == 4
    assert not cluster.changes  # every value came from the file
    # No topology labels: numbered as every adapter does (16 per rack), each node its NVLink domain.
    assert nodes["rack"].to_list() == [0, 0, 0, 0] and nodes["nvlink_domain"].to_list() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("cpu", "memory", "cpu_milli", "mem_mib"),
    [
        ("64", "527958544Ki", 64000, 515584),
        ("63500m", "512Gi", 63500, 524288),
        ("0.25", "1e9", 250, 953),  # 10**9 bytes = 953.67 MiB: a pod fits in 953
        ("1k", "500M", 1000000, 476),
        ("2.0005", "1Ti", 2001, 1048576),  # 2000.5 millicores round up, as Quantity.MilliValue
        ("96", "1.5Gi", 96000, 1536),
        ("4e1", "3G", 40000, 2861),
        ("12", "2097152k", 12000, 2000),
    ],
)
def test_quantities_become_millicores_and_mib(
    tmp_path: Path, cpu: str, memory: str, cpu_milli: int, mem_mib: int
) -> None:
    path = write(tmp_path / "nodes.json", kubectl_list(node("n1", {"cpu": cpu, "memory": memory})))
    row = kubectl_nodes(path).nodes.row(0, named=True)
    assert (row["cpu_milli"], row["mem_mib"]) == (cpu_milli, mem_mib)


def test_single_node_nodelist_and_gzip(tmp_path: Path) -> None:
    single = write(tmp_path / "node.json", dgx_a100("dgx-a100-01"))
    assert kubectl_nodes(single).nodes["num_gpus"].to_list() == [8]
    # The API server's NodeList: items carry no kind or apiVersion.
    items = [
        {k: v for k, v in n.items() if k not in ("kind", "apiVersion")}
        for n in (v100_node("a"), cpu_node("b"))
    ]
    listed = write(
        tmp_path / "list.json", {"apiVersion": "v1", "kind": "NodeList", "items": items, "metadata": {}}
    )
    assert kubectl_nodes(listed).nodes["num_gpus"].to_list() == [8, 0]
    packed = tmp_path / "nodes.json.gz"
    packed.write_bytes(gzip.compress(json.dumps(kubectl_list(v100_node("a"))).encode()))
    assert kubectl_nodes(packed).nodes["gpu_model"].to_list() == ["V100-32GB"]


def test_gfd_products_of_the_catalog(tmp_path: Path) -> None:
    products = {
        "NVIDIA-H100-80GB-HBM3": "H100-80GB",
        "NVIDIA-A100-SXM4-40GB": "A100-40GB",
        "NVIDIA-A100-80GB-PCIe": "A100-80GB",
        "Tesla-V100-SXM2-16GB": "V100",
        "Tesla-T4": "T4",
        "Tesla-P100-PCIE-16GB": "P100",
        "NVIDIA-A10": "A10",
        "NVIDIA-H200": "H200-141GB",
        "NVIDIA-A100-SXM4-80GB-SHARED": "A100-80GB",  # GFD's mark of a time-sliced product
    }
    nodes = [
        node(f"n{i}", {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}, {"nvidia.com/gpu.product": p})
        for i, p in enumerate(products)
    ]
    cluster = kubectl_nodes(write(tmp_path / "nodes.json", kubectl_list(*nodes)))
    assert cluster.nodes["gpu_model"].to_list() == list(products.values())
    # No nvidia.com/gpu.memory label: the catalog's memory, counted.
    assert cluster.nodes["gpu_mem_mib"][0] == 81920
    assert cluster.changes["GPU memory not labelled (nvidia.com/gpu.memory): the catalog's"] == len(products)


def test_allocatable_below_the_gpu_count_and_time_slicing(tmp_path: Path) -> None:
    unhealthy = dgx_a100("dgx-a100-01")
    unhealthy["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    sliced = dgx_a100(
        "dgx-a100-02", **{"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    )
    sliced["status"]["allocatable"]["nvidia.com/gpu"] = "32"
    sliced["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB-SHARED"
    cluster = kubectl_nodes(write(tmp_path / "nodes.json", kubectl_list(unhealthy, sliced)))
    assert cluster.nodes["num_gpus"].to_list() == [7, 8]
    assert (
        cluster.changes[
            "fewer allocatable GPUs than the nvidia.com/gpu.count label (unhealthy GPUs left out)"
        ]
        == 1
    )
    assert (
        cluster.changes["time-sliced GPUs (nvidia.com/gpu.replicas > 1): GPUs = allocatable / replicas"] == 1
    )


def test_a_labelled_gpu_node_without_allocatable_gpus_is_cpu_only(tmp_path: Path) -> None:
    # GFD labelled the node, but the device plugin advertises no GPU (not running, or every GPU unhealthy).
    down = dgx_a100("dgx-a100-01")
    down["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    cluster = kubectl_nodes(write(tmp_path / "nodes.json", kubectl_list(down)))
    row = cluster.nodes.row(0, named=True)
    assert (row["num_gpus"], row["gpu_model"], row["gpu_mem_mib"]) == (0, None, 0)
    assert cluster.changes["no allocatable GPU despite nvidia.com/gpu.product: a CPU-only node"] == 1


def test_capacity_when_allocatable_is_absent(tmp_path: Path) -> None:
    bare = cpu_node("cpu-01")
    bare["status"]["capacity"] = {"cpu": "16", "memory": "64Gi"}
    del bare["status"]["allocatable"]
    cluster = kubectl_nodes(write(tmp_path / "nodes.json", kubectl_list(bare)))
    assert cluster.nodes.row(0, named=True)["cpu_milli"] == 16000
    assert cluster.changes["status.allocatable not given: status.capacity used (the API's default)"] == 1


# --- MIG ------------------------------------------------------------------------------------------


def mig_mixed(
    name: str, resources: Mapping[str, str], gpus: int = 8, config: str | None = None
) -> dict[str, Any]:
    """An A100 node under the device plugin's mixed strategy (``config``: the nvidia.com/mig.config label)."""
    extra = {"nvidia.com/mig.strategy": "mixed"} | (
        {} if config is None else {"nvidia.com/mig.config": config}
    )
    labels = gfd_labels("NVIDIA-A100-SXM4-80GB", gpus, 81920, **extra)
    return node(name, {"cpu": "254", "memory": "2063566Mi", "nvidia.com/gpu": "0", **resources}, labels)


def test_mig_mixed_strategy_becomes_a_standard_config(tmp_path: Path) -> None:
    nodes = [
        mig_mixed("mig-1g", {"nvidia.com/mig-1g.10gb": "56"}, config="all-1g.10gb"),
        mig_mixed(
            "mig-balanced",
            {"nvidia.com/mig-1g.10gb": "16", "nvidia.com/mig-2g.20gb": "8", "nvidia.com/mig-3g.40gb": "8"},
            config="all-balanced",
        ),
        mig_mixed("mig-3g", {"nvidia.com/mig-3g.40gb": "4", "nvidia.com/mig-1g.10gb": "0"}, gpus=2),
        dgx_a100("whole"),
    ]
    cluster = kubectl_nodes(write(tmp_path / "nodes.json", kubectl_list(*nodes)))
    assert cluster.nodes["mig_layout"].to_list() == ["all-1g.10gb", "all-balanced", "all-3g.40gb", None]
    assert cluster.nodes["num_gpus"].to_list() == [8, 8, 2, 8]
    assert cluster.nodes["gpu_model"].to_list() == ["A100-80GB"] * 4
    assert (
        cluster.changes["MIG node, device plugin mixed strategy: replay with scheduler.mig_strategy=mixed"]
        == 3
    )


def test_mig_mixed_layout_replays_under_the_mixed_strategy(tmp_path: Path) -> None:
    from gpureplay.replay.mig import dynamic_mig_nodes

    path = write(tmp_path / "nodes.json", kubectl_list(mig_mixed("mig-1g", {"nvidia.com/mig-3g.40gb": "16"})))
    read = dynamic_mig_nodes(kubectl_nodes(path).nodes, mixed=True)
    assert read.nodes["gpu_model"].to_list() == ["A100-80GB-MIG-all-3g.40gb"]


def test_mig_single_strategy(tmp_path: Path) -> None:
    single = node(
        "mig-single",
        {"cpu": "254", "memory": "2063566Mi", "nvidia.com/gpu": "24"},
        gfd_labels("NVIDIA-A100-SXM4-80GB-MIG-2g.20gb", 24, 19968),
    )
    cluster = kubectl_nodes(write(tmp_path / "nodes.json", kubectl_list(single)))
    row = cluster.nodes.row(0, named=True)
    # all-2g.20gb: 3 instances per GPU, so 24 instances are 8 GPUs; the memory label is one instance's.
    assert (row["num_gpus"], row["mig_layout"], row["gpu_mem_mib"]) == (8, "all-2g.20gb", 81920)


@pytest.mark.parametrize(
    ("resources", "gpus", "field", "fragment"),
    [
        # MIG on some GPUs only: whole GPUs beside instances.
        (
            {"nvidia.com/gpu": "4", "nvidia.com/mig-1g.10gb": "28"},
            8,
            "nvidia.com/mig-1g.10gb",
            "only some of its GPUs",
        ),
        # Per GPU 7 x 1g + 1 x 7g: no standard config.
        (
            {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-7g.80gb": "1"},
            2,
            "nvidia.com/mig-1g.10gb",
            "standard configs",
        ),
        # 5 instances on 2 GPUs: not the same config on every GPU.
        (
            {"nvidia.com/mig-3g.40gb": "3"},
            2,
            "nvidia.com/mig-3g.40gb",
            "not one of mig-parted's standard configs",
        ),
        ({"nvidia.com/mig-5g.50gb": "8"}, 8, "nvidia.com/mig-5g.50gb", "is not a MIG profile of A100-80GB"),
    ],
)
def test_mig_combinations_the_table_cannot_express_are_refused(
    tmp_path: Path, resources: dict[str, str], gpus: int, field: str, fragment: str
) -> None:
    path = write(
        tmp_path / "nodes.json", kubectl_list(cpu_node("cpu-01"), mig_mixed("mig-01", resources, gpus))
    )
    with pytest.raises(InputError) as err:
        kubectl_nodes(path)
    text = messages(err)
    assert f"{path}, key 'items[1].status.allocatable[\"{field}\"]': node 'mig-01': " in text
    assert fragment in text


def test_mig_mixed_needs_the_gpu_count_label(tmp_path: Path) -> None:
    item = mig_mixed("mig-01", {"nvidia.com/mig-1g.10gb": "56"})
    del item["metadata"]["labels"]["nvidia.com/gpu.count"]
    with pytest.raises(
        InputError, match=r"items\[0\]\.metadata\.labels\[\"nvidia.com/gpu.count\"\]'.*'mig-01'"
    ):
        kubectl_nodes(write(tmp_path / "nodes.json", kubectl_list(item)))


# --- topology -------------------------------------------------------------------------------------


def test_topology_labels(tmp_path: Path) -> None:
    def placed(name: str, zone: str, block: str, rack: str, clique: str | None = None) -> dict[str, Any]:
        extra = {
            "topology.kubernetes.io/region": "eu-west4",
            "topology.kubernetes.io/zone": zone,
            "cloud.provider.com/topology-block": block,
            "cloud.provider.com/topology-rack": rack,
        }
        if clique is not None:
            extra["nvidia.com/gpu.clique"] = clique
        return dgx_a100(name, **extra)

    nodes = [
        placed("n1", "eu-west4-a", "b1", "r1", "7b968a6d.1"),
        placed("n2", "eu-west4-a", "b1", "r1", "7b968a6d.1"),
        placed("n3", "eu-west4-a", "b1", "r2"),
        placed("n4", "eu-west4-a", "b2", "r1"),  # rack r1 under another block: another rack
        placed("n5", "eu-west4-b", "b1", "r1", "7b968a6d.1"),  # the same labels in another zone: apart
    ]
    path = write(tmp_path / "nodes.json", kubectl_list(*nodes))
    cluster = kubectl_nodes(
        path, spine_label="cloud.provider.com/topology-block", rack_label="cloud.provider.com/topology-rack"
    )
    t = cluster.nodes
    assert t["spine"].to_list() == [0, 0, 0, 1, 2]
    assert t["rack"].to_list() == [0, 0, 1, 2, 3]
    assert t["nvlink_domain"].to_list() == [0, 0, 1, 2, 3]
    assert t["source_zone"].to_list()[4] == "eu-west4/eu-west4-b"
    assert cluster.changes["rack from node label cloud.provider.com/topology-rack"] == 5
    assert cluster.changes["NVLink domain from node label nvidia.com/gpu.clique"] == 3

    # Labelled racks, numbered spines: two racks per spine in order of first appearance (without the
    # block level, n4's r1 is n1's rack).
    spines = kubectl_nodes(path, rack_label="cloud.provider.com/topology-rack", racks_per_spine=2).nodes
    assert spines["rack"].to_list() == [0, 0, 1, 0, 2] and spines["spine"].to_list() == [0, 0, 0, 0, 1]

    # No labels named: zones still split the numbered racks.
    numbered = kubectl_nodes(path, rack_size=2).nodes
    assert numbered["rack"].to_list() == [0, 0, 1, 1, 2]


def test_a_named_topology_label_is_required(tmp_path: Path) -> None:
    path = write(tmp_path / "nodes.json", kubectl_list(dgx_a100("n1", **{"rack": "r1"}), dgx_a100("n2")))
    with pytest.raises(InputError) as err:
        kubectl_nodes(path, rack_label="rack")
    assert (
        f"{path}, key 'items[1].metadata.labels[\"rack\"]': node 'n2': missing: cluster.rack_label"
        in messages(err)
    )


# --- cordoned and tainted nodes -------------------------------------------------------------------

CORDONED = (
    "node left out: cordoned (spec.unschedulable; tolerate node.kubernetes.io/unschedulable to keep it)"
)
TAINTED = "node left out: taint {} not tolerated (cluster.tolerated_taints)"


def test_cordoned_and_tainted_nodes_are_left_out_and_counted(tmp_path: Path) -> None:
    cordoned = dgx_a100("cordoned")
    cordoned["spec"]["unschedulable"] = True
    cordoned["spec"]["taints"] = [
        {
            "effect": "NoSchedule",
            "key": "node.kubernetes.io/unschedulable",
            "timeAdded": "2024-06-01T08:00:00Z",
        }
    ]
    gke_gpu = dgx_a100("gke-gpu-pool")
    gke_gpu["spec"]["taints"] = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}]
    preferred = v100_node("prefer-not")
    preferred["spec"]["taints"] = [{"effect": "PreferNoSchedule", "key": "dedicated", "value": "batch"}]
    not_ready = v100_node("not-ready")
    not_ready["spec"]["taints"] = [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready"}]
    path = write(
        tmp_path / "nodes.json",
        kubectl_list(control_plane("cp-01"), cordoned, gke_gpu, preferred, not_ready, cpu_node("cpu-01")),
    )
    cluster = kubectl_nodes(path)
    assert cluster.nodes["node_name"].to_list() == ["gke-gpu-pool", "prefer-not", "cpu-01"]
    changes = cluster.changes
    assert changes[CORDONED] == 1
    assert changes[TAINTED.format("node-role.kubernetes.io/control-plane:NoSchedule")] == 1
    assert changes[TAINTED.format("node.kubernetes.io/not-ready:NoExecute")] == 1
    # Tolerating the cordon's taint keeps the cordoned node; tolerating nothing drops the GPU pool too.
    kept = kubectl_nodes(path, tolerated_taints=["nvidia.com/gpu", "node.kubernetes.io/unschedulable"])
    assert "cordoned" in kept.nodes["node_name"].to_list()
    strict = kubectl_nodes(path, tolerated_taints=[])
    assert strict.nodes["node_name"].to_list() == ["prefer-not", "cpu-01"]


def test_nothing_left_to_schedule_on(tmp_path: Path) -> None:
    path = write(tmp_path / "nodes.json", kubectl_list(control_plane("cp-01")))
    with pytest.raises(InputError, match=r"no node is left to schedule on .*control-plane:NoSchedule"):
        kubectl_nodes(path)


# --- errors: each names the file, the node and the field ------------------------------------------


def _with(item: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """``item`` with the field at ``dotted`` (``status.allocatable.cpu``; ``=`` for a dot in a key) set,
    or deleted when ``value`` is None."""
    *parents, last = [p.replace("=", ".") for p in dotted.split(".")]
    target = item
    for key in parents:
        target = target[key]
    if value is None:
        del target[last]
    else:
        target[last] = value
    return item


@pytest.mark.parametrize(
    ("field", "value", "key", "fragment"),
    [
        (
            "metadata.labels.nvidia=com/gpu=product",
            "NVIDIA-B300",
            'metadata.labels["nvidia.com/gpu.product"]',
            "unknown GPU product 'NVIDIA-B300'",
        ),
        (
            "metadata.labels.nvidia=com/gpu=product",
            None,
            'metadata.labels["nvidia.com/gpu.product"]',
            "missing: a GPU node needs",
        ),
        (
            "metadata.labels.nvidia=com/gpu=memory",
            "80GB",
            'metadata.labels["nvidia.com/gpu.memory"]',
            "must be a whole number >= 1 (found '80GB')",
        ),
        (
            "status.allocatable.nvidia=com/gpu",
            "8.5",
            'status.allocatable["nvidia.com/gpu"]',
            "a device count must be a whole number",
        ),
        (
            "status.allocatable.nvidia=com/gpu",
            "-1",
            'status.allocatable["nvidia.com/gpu"]',
            "negative quantity",
        ),
        ("status.allocatable.cpu", "64 cores", 'status.allocatable["cpu"]', "is not a Kubernetes quantity"),
        ("status.allocatable.cpu", None, 'status.allocatable["cpu"]', "missing: every node reports its cpu"),
        (
            "status.allocatable.memory",
            "512GB",
            'status.allocatable["memory"]',
            "'512GB' is not a Kubernetes quantity",
        ),
        (
            "status.allocatable.memory",
            "4Ei",
            'status.allocatable["memory"]',
            "more than the node table holds",
        ),
        (
            "status.allocatable",
            None,
            'status.capacity["nvidia.com/gpu"]',
            "'eight' is not a Kubernetes quantity",
        ),
        ("status", None, "status", "missing"),
        (
            "spec.taints",
            [{"key": "x", "effect": "NoRun"}],
            "spec.taints[0].effect",
            "must be one of NoSchedule",
        ),
        ("metadata.labels", ["a"], "metadata.labels", "mapping of strings"),
        ("kind", "Pod", "kind", "must be Node (found 'Pod')"),
    ],
)
def test_each_problem_names_file_node_and_field(
    tmp_path: Path, field: str, value: Any, key: str, fragment: str
) -> None:
    bad = _with(dgx_a100("dgx-a100-02"), field, value)
    if field == "status.allocatable":  # capacity is read instead: make it bad too
        bad["status"]["capacity"]["nvidia.com/gpu"] = "eight"
    path = write(tmp_path / "nodes.json", kubectl_list(dgx_a100("dgx-a100-01"), bad))
    with pytest.raises(InputError) as err:
        kubectl_nodes(path)
    text = messages(err)
    assert f"{path}, key 'items[1].{key}': " in text, text
    if field != "kind":
        assert "node 'dgx-a100-02'" in text
    assert fragment in text, text


def test_every_bad_node_is_listed(tmp_path: Path) -> None:
    nodes = [_with(cpu_node(f"cpu-{i:02d}"), "status.allocatable.cpu", "x") for i in range(12)]
    with pytest.raises(InputError) as err:
        kubectl_nodes(write(tmp_path / "nodes.json", kubectl_list(*nodes)))
    assert "node 'cpu-09'" in messages(err) and "... and 2 more problem(s)" in messages(err)


def test_duplicate_and_missing_names(tmp_path: Path) -> None:
    nameless = cpu_node("x")
    del nameless["metadata"]["name"]
    path = write(tmp_path / "nodes.json", kubectl_list(cpu_node("cpu-01"), cpu_node("cpu-01"), nameless))
    with pytest.raises(InputError) as err:
        kubectl_nodes(path)
    text = messages(err)
    assert "key 'items[1].metadata.name': node 'cpu-01': listed twice (also at items[0])" in text
    assert "key 'items[2].metadata.name': missing: every Node has a name" in text


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"apiVersion": "v1", "kind": "List", "items": [', "not JSON (Expecting value at line 1"),
        ("[]", "expected a JSON object of kind List, NodeList or Node"),
        (
            '{"apiVersion": "v1", "kind": "PodList", "items": []}',
            "key 'kind': must be List, NodeList or Node",
        ),
        ('{"apiVersion": "v2", "kind": "List", "items": []}', "key 'apiVersion': must be v1"),
        ('{"apiVersion": "v1", "kind": "List", "items": []}', "key 'items': a List needs a non-empty list"),
    ],
)
def test_unreadable_or_wrong_kind(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        kubectl_nodes(path)
    assert messages(err).startswith(str(path)) and fragment in messages(err)


def test_bad_config_values_name_their_key(tmp_path: Path) -> None:
    path = write(tmp_path / "nodes.json", kubectl_list(cpu_node("cpu-01")))
    with pytest.raises(
        InputError, match=r"config key 'cluster\.tolerated_taints': must be a list of taint keys"
    ):
        kubectl_nodes(path, tolerated_taints="nvidia.com/gpu")
    with pytest.raises(InputError, match=r"config key 'cluster\.rack_label'"):
        kubectl_nodes(path, rack_label=" ")
    with pytest.raises(InputError, match=r"config key 'cluster\.rack_size'"):
        kubectl_nodes(path, rack_size=0)


# --- the config group and the registry ------------------------------------------------------------


def test_cluster_kubectl_composes_and_builds(tmp_path: Path) -> None:
    path = write(tmp_path / "nodes.json", kubectl_list(dgx_a100("a"), cpu_node("b")))
    cfg = compose_config(
        ["trace=csv", "trace.path=x.csv", "cluster=kubectl", f"cluster.path={path}", "cluster.rack_size=1"]
    )
    cluster = build_cluster(cast(dict[str, Any], OmegaConf.to_container(cfg.cluster, resolve=True)))
    assert cluster.nodes["rack"].to_list() == [0, 1] and cluster.total_gpus == 8


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        (
            "cluster.rack_lable=rack",
            "config key 'cluster.rack_lable': no such key (did you mean 'cluster.rack_label'?)",
        ),
        ("+cluster.zone_label=zone", "config key 'cluster.zone_label': no such key"),
    ],
)
def test_unknown_keys_are_refused(override: str, fragment: str) -> None:
    from hydra.errors import HydraException

    from gpureplay.config_check import describe_config_error

    with pytest.raises((HydraException, InputError)) as err:
        compose_config(["cluster=kubectl", "cluster.path=nodes.json", override])
    text = str(err.value) if isinstance(err.value, InputError) else str(describe_config_error(err.value))
    assert fragment in text, text


def test_the_bundled_example(tmp_path: Path) -> None:
    cluster = kubectl_nodes(EXAMPLE)
    # kubectl lists nodes by name; the control plane (cp-01) is left out.
    assert cluster.nodes["node_name"].to_list() == ["cpu-01", "dgx-a100-01", "dgx-a100-02", "v100-01"]
    assert cluster.total_gpus == 24
    assert sum(n for r, n in cluster.changes.items() if r.startswith("node left out")) == 1


# --- through the command line ---------------------------------------------------------------------


def test_run_on_a_kubectl_cluster(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    # One V100 node of 8 GPUs beside a cordoned A100 node and the control plane: the 4-GPU job and the
    # 1-GPU job run side by side on the V100 node only.
    cordoned = dgx_a100("dgx-a100-01")
    cordoned["spec"]["unschedulable"] = True
    path = write(
        tmp_path / "nodes.json", kubectl_list(control_plane("cp-01"), cordoned, v100_node("v100-01"))
    )
    out = tmp_path / "out"
    proc = gpureplay(
        "run",
        "trace=csv",
        f"trace.path={tiny_jobs_csv}",
        "cluster=kubectl",
        f"cluster.path={path}",
        "scheduler=fifo",
        f"hydra.run.dir={out}",
    )
    assert proc.returncode == 0, proc.stderr
    log = proc.stderr + proc.stdout
    assert "cluster kubectl: 1 nodes, 8 GPUs" in log
    assert f"cluster: 1 nodes: {CORDONED}" in log  # what was left out is said
    summary = pl.read_parquet(out / "summary.parquet").row(0, named=True)
    assert summary["total_gpus"] == 8 and summary["finished"] == 4
    jobs = pl.read_parquet(out / "jobs.parquet")
    assert set(jobs["state"].cast(pl.String)) == {"finished"}


def test_a_bad_node_file_exits_2_without_a_traceback(tmp_path: Path, tiny_jobs_csv: Path) -> None:
    bad = _with(v100_node("v100-01"), "status.allocatable.memory", "lots")
    path = write(tmp_path / "nodes.json", kubectl_list(bad))
    proc = gpureplay(
        "run", "trace=csv", f"trace.path={tiny_jobs_csv}", "cluster=kubectl", f"cluster.path={path}",
        "scheduler=fifo", f"hydra.run.dir={tmp_path / 'out'}",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    where = "key 'items[0].status.allocatable[\"memory\"]': node 'v100-01'"
    assert f"{path}, {where}: 'lots' is not a Kubernetes quantity" in proc.stderr
