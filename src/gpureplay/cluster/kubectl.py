"""Your own cluster, exported with ``kubectl get nodes -o json``.

The file is what kubectl prints: a ``v1`` ``List`` (``{"apiVersion": "v1",
"kind": "List", "items": [...]}``) of ``Node`` objects (Kubernetes API
``core/v1`` ``Node``); a ``NodeList`` as the API server returns it, and a
single ``Node`` (``kubectl get node NAME -o json``), are read as well; a
``.gz`` file is read transparently. Per node:

- ``metadata.name`` is the node's name;
- ``status.allocatable`` (``NodeStatus.allocatable``: what the scheduler fits
  pods into, capacity less system reservations and unhealthy devices; the API
  defaults it to ``status.capacity``, which is read only when it is absent):
  ``cpu`` and ``memory`` (``resource.Quantity``, see :func:`parse_quantity`),
  ``nvidia.com/gpu`` (whole GPUs) and ``nvidia.com/mig-<profile>`` (MIG
  instances, the device plugin's ``mixed`` strategy);
- the labels of NVIDIA GPU Feature Discovery (GFD): ``nvidia.com/gpu.product``
  (the GPU model, resolved through the catalog, ``gpu_models.toml``),
  ``nvidia.com/gpu.memory`` (MiB per GPU), ``nvidia.com/gpu.count``,
  ``nvidia.com/gpu.replicas`` (time-slicing), ``nvidia.com/mig.strategy``,
  ``nvidia.com/mig.config`` (the GPU Operator's mig-parted config);
- topology: ``topology.kubernetes.io/region`` and ``/zone`` and the labels
  named by ``cluster.spine_label``, ``cluster.rack_label`` and
  ``cluster.nvlink_label`` (as a Kueue ``Topology``'s ``levels[].nodeLabel``
  name them);
- ``spec.unschedulable`` (cordoned) and ``spec.taints``.

What a node becomes, and what is left out, is said in :func:`kubectl_nodes`.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import polars as pl

from gpureplay.cluster import catalog
from gpureplay.cluster.nodes import ClusterNodes, finish_nodes
from gpureplay.cluster.topology import apply_topology
from gpureplay.errors import InputError, Problem
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import file_sha256
from gpureplay.traces.schema import MAX_SHOWN, UNKNOWN_CAPACITY

__all__ = ["GPU_RESOURCE", "MIG_RESOURCE_PREFIX", "kubectl_nodes", "parse_quantity"]

#: The device plugin's whole-GPU resource.
GPU_RESOURCE = "nvidia.com/gpu"
#: The device plugin's MIG resources under the ``mixed`` strategy: ``nvidia.com/mig-<profile>``.
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

_PRODUCT = "nvidia.com/gpu.product"
_MEMORY = "nvidia.com/gpu.memory"
_COUNT = "nvidia.com/gpu.count"
_REPLICAS = "nvidia.com/gpu.replicas"
_STRATEGY = "nvidia.com/mig.strategy"
_MIG_CONFIG = "nvidia.com/mig.config"
_REGION = "topology.kubernetes.io/region"
_ZONE = "topology.kubernetes.io/zone"
#: The taint the node lifecycle controller puts on a cordoned node (``spec.unschedulable``).
_CORDON_TAINT = "node.kubernetes.io/unschedulable"
#: Taint effects that keep a pod that does not tolerate them off a node (``PreferNoSchedule`` only scores).
_HARD_EFFECTS = ("NoSchedule", "NoExecute")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

#: Canonical column -> where the value is in a Node, for messages of the shared checks.
_RAW_NAMES = {
    "node_name": "metadata.name",
    "num_gpus": f'status.allocatable["{GPU_RESOURCE}"]',
    "cpu_milli": 'status.allocatable["cpu"]',
    "mem_mib": 'status.allocatable["memory"]',
    "gpu_mem_mib": f'metadata.labels["{_MEMORY}"]',
}

# resource.Quantity (k8s.io/apimachinery/pkg/api/resource/quantity.go):
#   <quantity>        ::= <signedNumber><suffix>
#   <signedNumber>    ::= <number> | <sign><number>;  <sign> ::= "+" | "-"
#   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
#   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
#   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
#   <decimalSI>       ::= m | "" | k | M | G | T | P | E
#   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>   (ParseInt: an integer)
# The exponent alternative comes before "E" so that "1E3" is 1000 and "1E" one exa.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|m|k|M|G|T|P|E|)"
)
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
#: Largest decimal exponent read (``1e400`` is refused rather than built as a 400-digit number).
_MAX_EXPONENT = 64
#: Largest value of an Int32 column that is not UNKNOWN_CAPACITY.
_MAX_INT32 = UNKNOWN_CAPACITY - 1


def parse_quantity(value: object) -> Fraction:
    """The exact value of a Kubernetes ``resource.Quantity``.

    Parameters
    ----------
    value
        The quantity as kubectl writes it (a string: ``"64"``, ``"63500m"``,
        ``"527958544Ki"``, ``"1e9"``); a JSON number is read as its text, as
        ``Quantity.UnmarshalJSON`` does.

    Returns
    -------
    fractions.Fraction
        The value in base units (cores, bytes, devices), exactly.

    Raises
    ------
    ValueError
        Saying why ``value`` is not a quantity.

    Notes
    -----
    The grammar of ``k8s.io/apimachinery/pkg/api/resource/quantity.go``: an
    optionally signed decimal number (``5``, ``5.``, ``.5``, ``5.25``) and one
    suffix: binary SI (``Ki`` = 2**10 ... ``Ei`` = 2**60), decimal SI (``m`` =
    10**-3, none, ``k``, ``M``, ``G``, ``T``, ``P``, ``E`` = 10**18) or a
    decimal exponent (``e3``, ``E-2``). No spaces; ``K`` (capital) and ``Mb``
    are not suffixes.

    Examples
    --------
    >>> [str(parse_quantity(q)) for q in ("64", "63500m", "1.5Gi", "1e9", "500M", ".5", "1E")]
    ['64', '127/2', '1610612736', '1000000000', '500000000', '1/2', '1000000000000000000']
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"a quantity is a string such as '64' or '512Gi' (found {value!r})")
    text = repr(value) if isinstance(value, float) else str(value)
    found = _QUANTITY.fullmatch(text)
    if found is None or not (found["int"] or found["frac"]):
        raise ValueError(
            f"{text!r} is not a Kubernetes quantity: a number and one of the suffixes Ki Mi Gi Ti Pi Ei, "
            "m k M G T P E, or an exponent e<n>"
        )
    digits = found["int"] + (found["frac"] or "")
    number = Fraction(int(digits or "0"), 10 ** len(found["frac"] or ""))
    suffix = found["suffix"]
    if suffix in _BINARY:
        number *= 2 ** _BINARY[suffix]
    else:
        exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"{text!r}: exponent {exponent} is out of range")
        number *= Fraction(10) ** exponent
    return -number if found["sign"] == "-" else number


@dataclass
class _Node:
    """One node as read, before the table is built."""

    row: int
    name: str
    gpu_model: str | None
    num_gpus: int
    gpu_mem_mib: int
    cpu_milli: int
    mem_mib: int
    mig_layout: str | None
    product: str | None
    zone: str
    levels: dict[str, str | None]


class _Reader:
    """Reads the nodes of one file, collecting every problem with the file, the node and the field."""

    def __init__(self, source: str, levels: Mapping[str, str | None], tolerated: frozenset[str]) -> None:
        self.source = source
        self.levels = levels
        self.tolerated = tolerated
        self.problems: list[Problem] = []
        self.changes: Counter[str] = Counter()

    def problem(self, where: str, node: str | None, message: str) -> None:
        """Record ``message`` about the field at ``where`` (``items[2].metadata.name``) of ``node``."""
        said = f"node {node!r}: {message}" if node is not None else message
        self.problems.append(Problem(said, self.source, key=where))

    def node(self, item: Any, prefix: str, row: int) -> _Node | None:
        """The node of one item, or None when it is left out or has a problem (recorded)."""
        if not isinstance(item, dict):
            self.problem(prefix.rstrip(".") or "kind", None, f"a Node must be a JSON object (found {item!r})")
            return None
        kind = item.get("kind", "Node")  # a NodeList's items carry no kind
        if kind != "Node":
            self.problem(f"{prefix}kind", None, f"must be Node (found {kind!r})")
            return None
        metadata = item.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or not name:
            self.problem(f"{prefix}metadata.name", None, f"missing: every Node has a name (found {name!r})")
            return None
        before = len(self.problems)
        node = _NodeReader(self, item, prefix, name).read(row)
        return node if len(self.problems) == before else None


class _NodeReader:
    """The fields of one Node, each problem naming the node and the field's path."""

    def __init__(self, reader: _Reader, item: dict[str, Any], prefix: str, name: str) -> None:
        self.reader = reader
        self.item = item
        self.prefix = prefix
        self.name = name
        self.base = f"{prefix}status.allocatable"
        self.start = len(reader.problems)

    def problem(self, where: str, message: str) -> None:
        self.reader.problem(where, self.name, message)

    def label_at(self, key: str) -> str:
        return f'{self.prefix}metadata.labels["{key}"]'

    def resource_at(self, key: str) -> str:
        return f'{self.base}["{key}"]'

    def failed(self) -> bool:
        """Whether a problem of this node has been recorded."""
        return len(self.reader.problems) > self.start

    def read(self, row: int) -> _Node | None:
        reason = self.left_out()
        if self.failed():
            return None
        if reason is not None:
            self.reader.changes[reason] += 1
            return None
        labels = self.labels()
        resources = self.resources()
        if labels is None or resources is None:
            return None
        cpu = self.quantity(resources, "cpu", required=True)
        memory = self.quantity(resources, "memory", required=True)
        if cpu is None or memory is None:
            return None
        cpu_milli = self.fits(math.ceil(cpu * 1000), "cpu", "millicores")  # Quantity.MilliValue rounds up
        mem_mib = self.fits(math.floor(memory / 2**20), "memory", "MiB")  # whole MiB the node has
        whole = self.device_count(resources, GPU_RESOURCE)
        mig: dict[str, int] = {}  # profile as the resource spells it -> instances
        for key in sorted(k for k in resources if k.startswith(MIG_RESOURCE_PREFIX)):
            count = self.device_count(resources, key)
            if count:
                mig[key.removeprefix(MIG_RESOURCE_PREFIX)] = count
        gpus = None if self.failed() else self.gpus(labels, whole, mig)
        if gpus is None or cpu_milli is None or mem_mib is None:
            return None
        levels: dict[str, str | None] = {}
        for level, label in self.reader.levels.items():
            levels[level] = None if label is None else labels.get(label)
            if levels[level] is None and label is not None and level != "nvlink_domain":
                self.problem(
                    self.label_at(label),
                    f"missing: cluster.{level}_label names it, so every node needs it (or give a "
                    "cluster.topology file)",
                )
        model, num_gpus, gpu_mem_mib, layout = gpus
        region, zone = labels.get(_REGION, ""), labels.get(_ZONE, "")
        return _Node(
            row=row,
            name=self.name,
            gpu_model=model,
            num_gpus=num_gpus,
            gpu_mem_mib=gpu_mem_mib,
            cpu_milli=cpu_milli,
            mem_mib=mem_mib,
            mig_layout=layout,
            product=labels.get(_PRODUCT),
            zone=f"{region}/{zone}" if region or zone else "",
            levels=levels,
        )

    def left_out(self) -> str | None:
        """Why the scheduler keeps pods off the node (a ``changes`` reason), or None.

        Notes
        -----
        kube-scheduler's ``NodeUnschedulable`` filter refuses a cordoned node to a pod that does not
        tolerate ``node.kubernetes.io/unschedulable:NoSchedule`` (the taint the node lifecycle controller
        adds), and ``TaintToleration`` a node with a ``NoSchedule`` or ``NoExecute`` taint the pod does not
        tolerate. The replayed pods tolerate the keys of ``cluster.tolerated_taints`` (operator Exists).
        """
        spec = self.item.get("spec") or {}
        if not isinstance(spec, dict):
            self.problem(f"{self.prefix}spec", f"must be a mapping (found {spec!r})")
            return None
        tolerated = self.reader.tolerated
        if spec.get("unschedulable") is True and _CORDON_TAINT not in tolerated:
            return f"node left out: cordoned (spec.unschedulable; tolerate {_CORDON_TAINT} to keep it)"
        taints = spec.get("taints") or []
        if not isinstance(taints, list):
            self.problem(f"{self.prefix}spec.taints", f"must be a list of taints (found {taints!r})")
            return None
        for j, taint in enumerate(taints):
            where = f"{self.prefix}spec.taints[{j}]"
            if not isinstance(taint, dict) or not isinstance(taint.get("key"), str):
                self.problem(where, f"a taint needs a key (found {taint!r})")
                return None
            effect = taint.get("effect")
            if effect not in _EFFECTS:
                self.problem(f"{where}.effect", f"must be one of {', '.join(_EFFECTS)} (found {effect!r})")
                return None
        for taint in taints:
            if taint["effect"] in _HARD_EFFECTS and taint["key"] not in tolerated:
                key, effect = taint["key"], taint["effect"]
                return f"node left out: taint {key}:{effect} not tolerated (cluster.tolerated_taints)"
        return None

    def labels(self) -> dict[str, str] | None:
        metadata = self.item["metadata"]
        labels = metadata.get("labels") or {}
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            self.problem(f"{self.prefix}metadata.labels", "must be a mapping of strings to strings")
            return None
        return labels

    def resources(self) -> dict[str, Any] | None:
        """``status.allocatable``, or ``status.capacity`` when it is absent (the API's default)."""
        status = self.item.get("status")
        if not isinstance(status, dict):
            self.problem(f"{self.prefix}status", "missing: a Node's status holds its allocatable resources")
            return None
        for field in ("allocatable", "capacity"):
            found = status.get(field)
            if found is None:
                continue
            self.base = f"{self.prefix}status.{field}"
            if not isinstance(found, dict):
                self.problem(self.base, f"must be a mapping of resources (found {found!r})")
                return None
            if field == "capacity":
                self.reader.changes[
                    "status.allocatable not given: status.capacity used (the API's default)"
                ] += 1
            return found
        self.problem(self.base, "missing (and no status.capacity)")
        return None

    def quantity(self, resources: Mapping[str, Any], key: str, *, required: bool = False) -> Fraction | None:
        if key not in resources:
            if required:
                self.problem(self.resource_at(key), f"missing: every node reports its {key}")
            return None
        try:
            value = parse_quantity(resources[key])
        except ValueError as err:
            self.problem(self.resource_at(key), str(err))
            return None
        if value < 0:
            self.problem(self.resource_at(key), f"negative quantity {resources[key]!r}")
            return None
        return value

    def fits(self, value: int, key: str, unit: str) -> int | None:
        if value > _MAX_INT32:
            self.problem(
                self.resource_at(key), f"{value} {unit} is more than the node table holds ({_MAX_INT32})"
            )
            return None
        return value

    def device_count(self, resources: Mapping[str, Any], key: str) -> int:
        """A device resource (``nvidia.com/gpu``, ``nvidia.com/mig-*``): a whole number; 0 when absent."""
        value = self.quantity(resources, key)
        if value is None:
            return 0
        if value.denominator != 1 or value > _MAX_INT32:
            self.problem(
                self.resource_at(key), f"a device count must be a whole number (found {resources[key]!r})"
            )
            return 0
        return int(value)

    def int_label(self, labels: Mapping[str, str], key: str, minimum: int = 0) -> int | None:
        """A GFD label holding a whole number; None when absent (a problem when it is not one)."""
        text = labels.get(key)
        if text is None:
            return None
        if not (text.isascii() and text.isdigit()) or not minimum <= int(text) <= _MAX_INT32:
            self.problem(self.label_at(key), f"must be a whole number >= {minimum} (found {text!r})")
            return None
        return int(text)

    def model(self, product: str) -> str | None:
        model = catalog.label_model(product)
        if model is None:
            known = ", ".join(sorted(catalog.gpu_models()))
            self.problem(
                self.label_at(_PRODUCT),
                f"unknown GPU product {product!r} (add its spelling to a model's aliases in "
                f"gpu_models.toml); known models: {known}",
            )
        return model

    def gpus(
        self, labels: Mapping[str, str], whole: int, mig: Mapping[str, int]
    ) -> tuple[str | None, int, int, str | None] | None:
        """``(gpu_model, num_gpus, gpu_mem_mib, mig_layout)`` of the node; None on a problem."""
        product = labels.get(_PRODUCT)
        if product is not None:
            product = product.removesuffix("-SHARED")  # GFD's mark of a time-sliced product
        if not whole and not mig:
            if product is not None:
                self.reader.changes[f"no allocatable GPU despite {_PRODUCT}: a CPU-only node"] += 1
            return None, 0, 0, None
        if product is None:
            self.problem(
                self.label_at(_PRODUCT),
                "missing: a GPU node needs GPU Feature Discovery's product label to name its GPU model",
            )
            return None
        physical = self.int_label(labels, _COUNT)
        memory = self.int_label(labels, _MEMORY, minimum=1)
        replicas = self.int_label(labels, _REPLICAS)
        if self.failed():
            return None
        changes = self.reader.changes
        model: str | None
        layout: str | None
        if "-MIG-" in product:
            single = self.single(product, whole, mig)
            if single is None:
                return None
            model, gpus, layout = single
            memory = None  # under the single strategy the label gives one instance's memory
            changes["MIG node, device plugin single strategy: replay with scheduler.mig_strategy=single"] += 1
        else:
            model = self.model(product)
            if model is None:
                return None
            gpus, layout = whole, None
            if mig:
                mixed = self.mixed(model, whole, mig, physical, labels.get(_MIG_CONFIG))
                if mixed is None:
                    return None
                gpus, layout = mixed
                changes[
                    "MIG node, device plugin mixed strategy: replay with scheduler.mig_strategy=mixed"
                ] += 1
            elif replicas is not None and replicas > 1:
                if whole % replicas:
                    self.problem(
                        self.resource_at(GPU_RESOURCE),
                        f"{whole} is not a whole number of GPUs time-sliced into {replicas} replicas "
                        f"({_REPLICAS})",
                    )
                    return None
                gpus = whole // replicas
                changes[f"time-sliced GPUs ({_REPLICAS} > 1): GPUs = allocatable / replicas"] += 1
            elif physical is not None and whole < physical:
                changes[f"fewer allocatable GPUs than the {_COUNT} label (unhealthy GPUs left out)"] += 1
        if memory is None:
            memory = catalog.gpu_model(model).memory_mib
            changes[f"GPU memory not labelled ({_MEMORY}): the catalog's"] += 1
        return model, gpus, memory, layout

    def single(self, product: str, whole: int, mig: Mapping[str, int]) -> tuple[str, int, str] | None:
        """``(model, GPUs, mig_layout)`` under the single strategy: product ``<model>-MIG-<profile>``.

        Each instance is one ``nvidia.com/gpu``. The physical GPUs are not labelled (GFD's
        ``nvidia.com/gpu.count`` counts instances), so every GPU is taken to hold mig-parted's
        ``all-<profile>`` config: as many instances of the profile as fit.
        """
        if mig:
            self.problem(
                self.label_at(_PRODUCT), f"a single-strategy product beside {MIG_RESOURCE_PREFIX}* resources"
            )
            return None
        head, _, spelling = product.partition("-MIG-")
        model = self.model(head)
        if model is None:
            return None
        configs = _standard_configs(model)
        profile = _profile(model, spelling) if configs is not None else None
        if configs is None or profile is None:
            self.problem(
                self.label_at(_PRODUCT),
                f"names MIG profile {spelling!r}, which is not one of {model}'s (the single strategy gives "
                "every GPU of a node instances of one profile)",
            )
            return None
        layout = "all-" + profile.replace("+", ".")
        per_gpu = configs[layout][profile]
        if whole % per_gpu:
            self.problem(
                self.resource_at(GPU_RESOURCE),
                f"{whole} {profile} instances are not {per_gpu} per GPU ({layout}, mig-parted's config of "
                "that profile)",
            )
            return None
        return model, whole // per_gpu, layout

    def mixed(
        self, model: str, whole: int, mig: Mapping[str, int], physical: int | None, wanted: str | None
    ) -> tuple[int, str] | None:
        """``(GPUs, mig_layout)`` of a node offering ``nvidia.com/mig-<profile>`` (the mixed strategy)."""
        first = self.resource_at(MIG_RESOURCE_PREFIX + next(iter(mig)))
        configs = _standard_configs(model)
        if configs is None:
            self.problem(first, f"offers MIG instances, but the catalog models no MIG for {model}")
            return None
        profiles: dict[str, int] = {}
        for spelling, count in mig.items():
            profile = _profile(model, spelling)
            if profile is None:
                known = ", ".join(p for p, _ in catalog.gpu_model(model).mig_names)
                self.problem(
                    self.resource_at(MIG_RESOURCE_PREFIX + spelling),
                    f"{spelling!r} is not a MIG profile of {model}; its profiles: {known}",
                )
                return None
            profiles[profile] = profiles.get(profile, 0) + count
        if whole:
            self.problem(
                first,
                f"offers {whole} whole GPU(s) beside MIG instances; the node table gives all GPUs of a node "
                "one mig_layout, so a node with MIG on only some of its GPUs cannot be replayed",
            )
            return None
        if not physical:
            self.problem(
                self.label_at(_COUNT),
                "missing: under the mixed MIG strategy GPU Feature Discovery's label counts the node's GPUs "
                "(the MIG resources count instances)",
            )
            return None
        per_gpu = {p: c // physical for p, c in profiles.items()}
        found = [
            layout
            for layout, counts in configs.items()
            if counts == per_gpu
            and layout != "all-enabled"
            and all(c % physical == 0 for c in profiles.values())
        ]
        if not found:
            offered = " + ".join(f"{c} x {p}" for p, c in profiles.items())
            standard = ", ".join(c for c in configs if c not in ("all-disabled", "all-enabled"))
            self.problem(
                first,
                f"{offered} on {physical} GPU(s) is not one of mig-parted's standard configs of {model} on "
                f"every GPU ({standard}); the node table gives every GPU of a node one standard config",
            )
            return None
        if wanted is not None and wanted != found[0]:
            self.reader.changes[
                f"{_MIG_CONFIG} label differs from the MIG resources offered: the resources"
            ] += 1
        return physical, found[0]


def _profile(model: str, spelling: str) -> str | None:
    """The model's MIG profile a resource or product names; its ``+`` may be written ``.`` or dropped.

    Examples
    --------
    >>> [_profile("A100-80GB", s) for s in ("3g.40gb", "1g.10gb.me", "1g.10gbme", "3g.20gb")]
    ['3g.40gb', '1g.10gb+me', '1g.10gb+me', None]
    """
    for name, _ in catalog.gpu_model(model).mig_names:
        if spelling in (name, name.replace("+", "."), name.replace("+", "")):
            return name
    return None


def _standard_configs(model: str) -> dict[str, dict[str, int]] | None:
    """mig-parted's standard configs of ``model``, ``name -> {profile: count per GPU}``; None without MIG."""
    from gpureplay.mig.geometry import MigError, mig_geometry
    from gpureplay.mig.parted import standard_configs

    try:
        configs = standard_configs(mig_geometry(model)).configs
    except MigError:
        return None
    return {name: {p: c for p, c in entries[0].mig_devices if c > 0} for name, entries in configs.items()}


def _load(path: Path, source: str) -> Any:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as text:
            return json.load(text)
    except json.JSONDecodeError as err:
        raise InputError.single(
            f"not JSON ({err.msg} at line {err.lineno}, column {err.colno}); export the nodes with "
            "`kubectl get nodes -o json`",
            source,
        ) from err
    except (OSError, UnicodeDecodeError, EOFError) as err:
        raise InputError.single(f"cannot read the node file: {err}", source) from err


def _items(data: Any, source: str) -> list[tuple[str, Any]]:
    """``(field path prefix, item)`` of each node of the file, after checking ``apiVersion`` and ``kind``."""
    if not isinstance(data, dict):
        raise InputError.single(
            f"expected a JSON object of kind List, NodeList or Node (found a JSON {type(data).__name__})",
            source,
        )
    kind, version = data.get("kind"), data.get("apiVersion")
    if kind not in ("List", "NodeList", "Node"):
        raise InputError.single(
            f"must be List, NodeList or Node, as `kubectl get nodes -o json` writes (found {kind!r})",
            source,
            key="kind",
        )
    if version != "v1":
        raise InputError.single(f"must be v1 (found {version!r})", source, key="apiVersion")
    if kind == "Node":
        return [("", data)]
    items = data.get("items")
    if not isinstance(items, list) or not items:
        raise InputError.single(
            f"a {kind} needs a non-empty list of nodes (found {items!r})", source, key="items"
        )
    return [(f"items[{i}].", item) for i, item in enumerate(items)]


def _check_keys(labels: Mapping[str, str | None], tolerated: object) -> frozenset[str]:
    problems = [
        Problem(f"must be a node label's name, or null (found {value!r})", "config", key=f"cluster.{key}")
        for key, value in labels.items()
        if value is not None and (not isinstance(value, str) or not value.strip())
    ]
    names = list(tolerated) if isinstance(tolerated, Sequence) and not isinstance(tolerated, str) else None
    if names is None or not all(isinstance(n, str) and n for n in names):
        problems.append(
            Problem(
                f"must be a list of taint keys (found {tolerated!r})",
                "config",
                key="cluster.tolerated_taints",
            )
        )
        names = []
    if problems:
        raise InputError(problems)
    return frozenset(names)


def kubectl_nodes(
    path: str | Path,
    numa_per_node: int = 2,
    rack_size: int = 16,
    racks_per_spine: int = 8,
    spine_label: str | None = None,
    rack_label: str | None = None,
    nvlink_label: str | None = "nvidia.com/gpu.clique",
    tolerated_taints: Sequence[str] = (GPU_RESOURCE,),
) -> ClusterNodes:
    """Build a cluster from the output of ``kubectl get nodes -o json``.

    Parameters
    ----------
    path
        The exported file (``cluster.path``; ``.json`` or ``.json.gz``), found
        as other node lists are (:func:`gpureplay.paths.resolve_data_path`).
    numa_per_node
        CPU sockets the GPUs of a node are split over (a Node does not say).
    rack_size, racks_per_spine
        Nodes per rack (in file order: kubectl sorts nodes by name) where
        ``rack_label`` is null, and racks per spine where ``spine_label`` is null.
    spine_label, rack_label
        Node labels naming each node's spine and rack, as a Kueue ``Topology``'s
        ``levels[].nodeLabel`` do (``cloud.provider.com/topology-block``,
        ``cloud.provider.com/topology-rack``); every node kept must carry them.
    nvlink_label
        Node label naming a multi-node NVLink domain; by default GFD's
        ``nvidia.com/gpu.clique`` (GPU fabric ClusterUUID.CliqueID, on GB200
        NVL72 nodes). A node without it is its own NVLink domain.
    tolerated_taints
        Taint keys the replayed pods tolerate (as ``operator: Exists``). By
        default ``nvidia.com/gpu``, which GPU node pools carry (GKE) and the
        ``ExtendedResourceToleration`` admission plugin makes GPU pods tolerate.

    Returns
    -------
    ClusterNodes
        One node per Node the scheduler could place pods on, in file order:

        - ``cpu_milli`` from ``cpu`` (rounded up to a millicore, as
          ``Quantity.MilliValue``), ``mem_mib`` from ``memory`` (rounded down
          to a MiB), both of ``status.allocatable``, which is what
          kube-scheduler's ``NodeResourcesFit`` compares requests with;
        - ``num_gpus`` from ``nvidia.com/gpu``; a Node without GPUs is kept as
          a CPU-only node (``gpu_model`` null), as openb's full node list is;
          a time-sliced node (``nvidia.com/gpu.replicas`` > 1) counts its GPUs,
          not its replicas;
        - ``gpu_model`` from ``nvidia.com/gpu.product`` through the catalog's
          aliases (:func:`gpureplay.cluster.catalog.label_model`);
          ``gpu_mem_mib`` from ``nvidia.com/gpu.memory``, else the catalog's;
        - ``mig_layout``: MIG instances become the mig-parted standard config
          every GPU of the node holds. Mixed strategy: the
          ``nvidia.com/mig-<profile>`` counts divided by ``nvidia.com/gpu.count``
          must be one standard config (``all-1g.10gb``, ``all-balanced``, ...).
          Single strategy (product ``<model>-MIG-<profile>``): each GPU holds
          ``all-<profile>``. Replay with the matching ``scheduler.mig_strategy``;
        - ``spine``, ``rack``: from the labels, else numbered; a domain is
          named by its path (region, zone, spine, rack), so racks and spines
          never span zones. ``nvlink_domain`` from ``nvlink_label`` within the
          zone (a numbered rack does not cut it), else the node.

        Left out, each counted in ``changes``: cordoned nodes
        (``spec.unschedulable``) unless ``node.kubernetes.io/unschedulable`` is
        tolerated, and nodes with a ``NoSchedule`` or ``NoExecute`` taint whose
        key is not tolerated (a control plane's, a not-ready node's); a
        ``PreferNoSchedule`` taint keeps the node.

    Raises
    ------
    FileNotFoundError
        When the file is not found.
    InputError
        For a file that is not JSON, a ``kind`` other than List, NodeList or
        Node, and for each node a missing field, a bad quantity, an unknown GPU
        product or MIG profile, MIG on only some GPUs or in a layout that is not
        a standard config, a missing topology label, or a name listed twice:
        each names the file, the node (``items[i]`` and its name) and the field
        (``items[3].status.allocatable["nvidia.com/gpu"]``). A bad config value
        names its key.

    Notes
    -----
    Kubernetes API ``core/v1`` ``Node`` and ``NodeStatus`` (allocatable:
    "Defaults to Capacity"); quantities as :func:`parse_quantity`; NVIDIA GPU
    Feature Discovery's labels (k8s-device-plugin
    ``docs/gpu-feature-discovery/README.md``, "Generated Labels", and its MIG
    single and mixed strategies); mig-parted's standard configs
    (:func:`gpureplay.mig.parted.standard_configs`).
    """
    levels = {"spine": spine_label, "rack": rack_label, "nvlink_domain": nvlink_label}
    tolerated = _check_keys(
        {"spine_label": spine_label, "rack_label": rack_label, "nvlink_label": nvlink_label}, tolerated_taints
    )
    resolved = resolve_data_path(path, "node list")
    source = str(resolved)
    items = _items(_load(resolved, source), source)
    reader = _Reader(source, levels, tolerated)
    nodes: list[_Node] = []
    seen: dict[str, str] = {}
    for row, (prefix, item) in enumerate(items, start=1):
        node = reader.node(item, prefix, row)
        if node is None:
            continue
        if node.name in seen:
            reader.problem(f"{prefix}metadata.name", node.name, f"listed twice (also at {seen[node.name]})")
        seen.setdefault(node.name, f"items[{row - 1}]")
        nodes.append(node)
    if reader.problems:
        raise InputError(reader.problems[:MAX_SHOWN], total=len(reader.problems))
    if not nodes:
        why = "; ".join(f"{count} {reason}" for reason, count in reader.changes.most_common())
        raise InputError.single(f"no node is left to schedule on ({why})", source)
    df = pl.DataFrame(
        {
            "source_row": [n.row for n in nodes],
            "node_name": [n.name for n in nodes],
            "gpu_model": [n.gpu_model for n in nodes],
            "num_gpus": [n.num_gpus for n in nodes],
            "gpu_mem_mib": [n.gpu_mem_mib for n in nodes],
            "cpu_milli": [n.cpu_milli for n in nodes],
            "mem_mib": [n.mem_mib for n in nodes],
            "source_gpu_product": [n.product for n in nodes],
            "source_zone": [n.zone or None for n in nodes],
        },
        schema_overrides={
            "gpu_model": pl.String(),
            "source_gpu_product": pl.String(),
            "source_zone": pl.String(),
        },
    )
    table = finish_nodes(
        df,
        source,
        numa_per_node=numa_per_node,
        rack_size=rack_size,
        racks_per_spine=racks_per_spine,
        raw_names=_RAW_NAMES,
    )
    table = table.with_columns(pl.Series("mig_layout", [n.mig_layout for n in nodes], dtype=pl.String()))
    table = _labelled_topology(table, nodes, levels, racks_per_spine, reader.changes, source)
    return ClusterNodes(table, source, file_sha256(resolved), reader.changes)


def _first_seen(values: Sequence[str]) -> list[int]:
    """Dense ids of ``values`` in order of first appearance."""
    ids: dict[str, int] = {}
    return [ids.setdefault(v, len(ids)) for v in values]


def _labelled_topology(
    table: pl.DataFrame,
    nodes: Sequence[_Node],
    levels: Mapping[str, str | None],
    racks_per_spine: int,
    changes: Counter[str],
    source: str,
) -> pl.DataFrame:
    """``table`` with spine, rack and NVLink domain from the node labels where they are named.

    The numbered levels of :func:`~gpureplay.cluster.nodes.finish_nodes` fill in the others; each
    domain is named by its path from the region and zone down (:func:`~gpureplay.cluster.topology.
    apply_topology`), so equal labels in two zones are two domains.
    """
    zones = [n.zone for n in nodes]
    if levels["rack"] is not None:
        racks = [str(n.levels["rack"]) for n in nodes]
        changes[f"rack from node label {levels['rack']}"] += len(nodes)
    else:
        racks = [str(r) for r in table["rack"].to_list()]
    if levels["spine"] is not None:
        spines = [str(n.levels["spine"]) for n in nodes]
        changes[f"spine from node label {levels['spine']}"] += len(nodes)
    elif levels["rack"] is not None:
        # Labelled racks, numbered spines: consecutive racks (in order of first appearance) share one.
        rack_ids = _first_seen([f"{z}\x1f{r}" for z, r in zip(zones, racks, strict=True)])
        spines = [str(r // racks_per_spine) for r in rack_ids]
    else:
        spines = [str(s) for s in table["spine"].to_list()]
    if len(set(zones)) > 1:
        changes["spines and racks split by topology.kubernetes.io/region and /zone"] += len(nodes)
    topology = pl.DataFrame(
        {
            "node_name": [n.name for n in nodes],
            "spine": [f"{z}\x1f{s}" for z, s in zip(zones, spines, strict=True)],
            "rack": racks,
        }
    )
    table = apply_topology(table, topology, "name", source)
    cliques = [n.levels["nvlink_domain"] for n in nodes]
    if any(c is not None for c in cliques):
        changes[f"NVLink domain from node label {levels['nvlink_domain']}"] += sum(
            c is not None for c in cliques
        )
        domains = [
            f"{z}\x1f{c}" if c is not None else f"\x00{n.name}"
            for z, c, n in zip(zones, cliques, nodes, strict=True)
        ]
        table = table.with_columns(pl.Series("nvlink_domain", _first_seen(domains), dtype=pl.Int32()))
    return table
