"""Read Kubernetes manifests (Kueue, Volcano, KAI queues and PriorityClasses) into a :class:`QueueTree`.

Input is a YAML file or a folder of them (``*.yaml``, ``*.yml``, searched recursively,
in sorted order), each a stream of ``---``-separated documents as users apply them with
``kubectl``. The kinds read, by ``apiVersion`` and ``kind``:

============================================  ============================================
``kueue.x-k8s.io/v1beta2``                    ResourceFlavor, ClusterQueue, Cohort, LocalQueue
``kueue.x-k8s.io/v1beta1``                    ResourceFlavor, ClusterQueue, Cohort, LocalQueue
``kueue.x-k8s.io/v1alpha1``                   Cohort
``scheduling.volcano.sh/v1beta1``             Queue (Volcano)
``scheduling.run.ai/v2``                      Queue (KAI; ``docs/queues/README.md``)
``scheduling.k8s.io/v1``                      PriorityClass
============================================  ============================================

Every field is sorted into one of three bins:

- modelled: read into the tree;
- ignored: does not change scheduling (``metadata.labels``, ``annotations``, ``status``,
  ``description``, KAI ``displayName``, ...), listed in :attr:`ManifestSet.ignored`;
- not modelled: changes scheduling but the simulator does not model it (Kueue
  ``admissionChecks``, ``stopPolicy``, flavor ``topologyName``; Volcano ``extendClusters``;
  KAI ``preemptMinRuntime``, ...), or not part of the API at all. Either is an error
  naming the file, the document and the field path, so a what-if never silently drops
  a setting. A not-modelled field written with its API default (``stopPolicy: None``,
  ``dequeueStrategy: traverse``) is accepted: it changes nothing.

Kueue's two versions (``apis/kueue/v1beta1`` and ``apis/kueue/v1beta2``, ``*_types.go``) are
read into the same objects, mixed freely; each document is checked against its own version's
fields (a ClusterQueue's cohort spelled as the other version spells it is refused naming the
right name). v1beta2 differs in:

- ClusterQueue ``spec.cohortName`` (v1beta1 ``spec.cohort``);
- ``flavorFungibility.whenCanBorrow`` / ``whenCanPreempt`` take ``MayStopSearch`` or
  ``TryNextFlavor`` only: v1beta1's ``Borrow`` / ``Preempt``, its old names of
  ``MayStopSearch``, are refused; an unset ``whenCanBorrow`` is ``MayStopSearch`` (v1beta1:
  ``Borrow``, kept as spelled: the two mean the same);
- ClusterQueue ``admissionChecks`` is gone (``admissionChecksStrategy`` is left); the new
  ClusterQueue ``concurrentAdmissionPolicy``, ResourceFlavor ``resourceWeights`` and
  LocalQueue ``wallTimePolicy`` change scheduling and are not modelled.

Cohort (``parentName``, ``resourceGroups``, ``fairSharing``) and the rest are the same.

Examples
--------
>>> text = '''
... apiVersion: scheduling.volcano.sh/v1beta1
... kind: Queue
... metadata: {name: team-a, labels: {owner: ml}}
... spec: {weight: 2, capability: {nvidia.com/gpu: 8}}
... '''
>>> found = parse_manifests(text, "queues.yaml")
>>> found.tree.volcano_queues[0].weight, dict(found.tree.volcano_queues[0].capability)
(2, {'nvidia.com/gpu': 8.0})
>>> [str(i) for i in found.ignored]
["queues.yaml, document 1: Queue 'team-a': metadata.labels"]
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpureplay.errors import InputError, Problem
from gpureplay.queues.tree import (
    GPU_MODEL_LABELS,
    KAI_RESOURCES,
    KUEUE_V1BETA2_WHEN_CAN_BORROW,
    KUEUE_V1BETA2_WHEN_CAN_PREEMPT,
    TAINT_EFFECTS,
    TOLERATION_OPERATORS,
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    KaiQueue,
    KaiResource,
    KueuePreemption,
    LocalQueue,
    Model,
    Origin,
    PriorityClass,
    QueueTree,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Taint,
    Toleration,
    VolcanoQueue,
    validate_tree,
)
from gpureplay.yaml_input import load_documents, read_yaml_files

__all__ = [
    "KINDS",
    "IgnoredField",
    "ManifestSet",
    "parse_duration",
    "parse_manifests",
    "parse_quantity",
    "read_manifests",
]

# Schema markers: a modelled value, a value that does not change scheduling, a value that does
# but is not modelled. ("default", v) marks a not-modelled field that is harmless when equal to v.
LEAF = "leaf"
IGNORE = "ignore"
UNMODELLED = "unmodelled"
# ("elsewhere", hint) marks a field that is not part of this API version but of another one, so the
# refusal can say where it went.
ELSEWHERE = "elsewhere"

Schema = Any  # dict[str, Schema] | list[Schema] (one item: every element) | str marker | tuple

KUEUE_V1BETA1 = "kueue.x-k8s.io/v1beta1"
KUEUE_V1BETA2 = "kueue.x-k8s.io/v1beta2"

_METADATA: dict[str, Schema] = {"name": LEAF, "namespace": LEAF, "*": IGNORE}

_QUOTAS: Schema = [
    {
        "coveredResources": LEAF,
        "flavors": [
            {
                "name": LEAF,
                "resources": [
                    {"name": LEAF, "nominalQuota": LEAF, "borrowingLimit": LEAF, "lendingLimit": LEAF}
                ],
            }
        ],
    }
]

_KUEUE_FAIR: Schema = {"weight": LEAF}

_CLUSTER_QUEUE: dict[str, Schema] = {
    "cohort": LEAF,
    "cohortName": (ELSEWHERE, f"{KUEUE_V1BETA1} names it cohort"),
    "resourceGroups": _QUOTAS,
    "queueingStrategy": LEAF,
    "preemption": {
        "withinClusterQueue": LEAF,
        "reclaimWithinCohort": LEAF,
        "borrowWithinCohort": {"policy": LEAF, "maxPriorityThreshold": LEAF},
    },
    "fairSharing": _KUEUE_FAIR,
    "flavorFungibility": {"whenCanBorrow": LEAF, "whenCanPreempt": LEAF, "preference": LEAF},
    # namespaceSelector picks which namespaces' LocalQueues may submit; the replay maps jobs to
    # queues itself, so it never changes which job is admitted.
    "namespaceSelector": IGNORE,
    "stopPolicy": ("default", "None"),
    "admissionChecks": UNMODELLED,
    "admissionChecksStrategy": UNMODELLED,
    "admissionScope": UNMODELLED,
}

# apis/kueue/v1beta2/clusterqueue_types.go: the cohort is cohortName, admissionChecks is gone, and
# concurrentAdmissionPolicy (a workload pursuing several flavors at once, then migrating) is new.
_CLUSTER_QUEUE_V1BETA2: dict[str, Schema] = {
    **{k: v for k, v in _CLUSTER_QUEUE.items() if k not in ("cohort", "cohortName", "admissionChecks")},
    "cohortName": LEAF,
    "cohort": (ELSEWHERE, f"{KUEUE_V1BETA2} names it cohortName"),
    "admissionChecks": (ELSEWHERE, f"{KUEUE_V1BETA2} has admissionChecksStrategy only, not modelled either"),
    "concurrentAdmissionPolicy": UNMODELLED,
}

# v1beta1 and v1beta2 name the parent parentName (apis/kueue/v1beta1/cohort_types.go,
# apis/kueue/v1beta2/cohort_types.go: the same fields); v1alpha1 named it parent.
_COHORT: dict[str, Schema] = {
    "parentName": LEAF,
    "resourceGroups": _QUOTAS,
    "fairSharing": _KUEUE_FAIR,
}
_COHORT_V1ALPHA1: dict[str, Schema] = {
    "parent": LEAF,
    "resourceGroups": _QUOTAS,
    "fairSharing": _KUEUE_FAIR,
}

_LOCAL_QUEUE: dict[str, Schema] = {
    "clusterQueue": LEAF,
    "stopPolicy": ("default", "None"),
    "fairSharing": UNMODELLED,  # admission fair sharing: the LocalQueue's usage weight
}
# apis/kueue/v1beta2/localqueue_types.go adds a wall-time budget that holds the queue once spent.
_LOCAL_QUEUE_V1BETA2: dict[str, Schema] = {**_LOCAL_QUEUE, "wallTimePolicy": UNMODELLED}

_FLAVOR: dict[str, Schema] = {
    "nodeLabels": LEAF,
    # Taints the flavor's pods must tolerate, and the tolerations Kueue adds to them (flavor assignment).
    "nodeTaints": [{"key": LEAF, "value": LEAF, "effect": LEAF, "timeAdded": IGNORE}],
    "tolerations": [
        {"key": LEAF, "operator": LEAF, "value": LEAF, "effect": LEAF, "tolerationSeconds": IGNORE}
    ],
    "topologyName": UNMODELLED,
}
# apis/kueue/v1beta2/resourceflavor_types.go adds per-resource multipliers of fair sharing's dominant
# resource share.
_FLAVOR_V1BETA2: dict[str, Schema] = {**_FLAVOR, "resourceWeights": UNMODELLED}

_AMOUNTS: dict[str, Schema] = {"*": LEAF}

_VOLCANO_QUEUE: dict[str, Schema] = {
    "weight": LEAF,
    "capability": _AMOUNTS,
    "guarantee": {"resource": _AMOUNTS},
    "deserved": _AMOUNTS,
    "reclaimable": LEAF,
    "priority": LEAF,
    "parent": LEAF,
    "dequeueStrategy": ("default", "traverse"),
    "extendClusters": UNMODELLED,
    "affinity": UNMODELLED,
}

_KAI_RESOURCE: dict[str, Schema] = {
    "quota": LEAF,
    "overQuotaWeight": LEAF,
    "limit": LEAF,
    "lendingLimit": UNMODELLED,
}

_KAI_QUEUE: dict[str, Schema] = {
    "parentQueue": LEAF,
    "priority": LEAF,
    "displayName": IGNORE,
    "resources": {name: _KAI_RESOURCE for name in KAI_RESOURCES},
    "preemptMinRuntime": LEAF,
    "reclaimMinRuntime": LEAF,
}

_PRIORITY_CLASS: dict[str, Schema] = {
    "value": LEAF,
    "globalDefault": LEAF,
    "preemptionPolicy": LEAF,
    "description": IGNORE,
}

#: (apiVersion, kind) -> (model, schema of ``spec`` (or of the top level for PriorityClass)).
KINDS: dict[tuple[str, str], tuple[Model | None, dict[str, Schema]]] = {
    (KUEUE_V1BETA1, "ResourceFlavor"): ("kueue", _FLAVOR),
    (KUEUE_V1BETA1, "ClusterQueue"): ("kueue", _CLUSTER_QUEUE),
    (KUEUE_V1BETA1, "Cohort"): ("kueue", _COHORT),
    ("kueue.x-k8s.io/v1alpha1", "Cohort"): ("kueue", _COHORT_V1ALPHA1),
    (KUEUE_V1BETA1, "LocalQueue"): ("kueue", _LOCAL_QUEUE),
    (KUEUE_V1BETA2, "ResourceFlavor"): ("kueue", _FLAVOR_V1BETA2),
    (KUEUE_V1BETA2, "ClusterQueue"): ("kueue", _CLUSTER_QUEUE_V1BETA2),
    (KUEUE_V1BETA2, "Cohort"): ("kueue", _COHORT),
    (KUEUE_V1BETA2, "LocalQueue"): ("kueue", _LOCAL_QUEUE_V1BETA2),
    ("scheduling.volcano.sh/v1beta1", "Queue"): ("volcano", _VOLCANO_QUEUE),
    ("scheduling.run.ai/v2", "Queue"): ("kai", _KAI_QUEUE),
    ("scheduling.k8s.io/v1", "PriorityClass"): (None, _PRIORITY_CLASS),
}

_TOP_KEYS = ("apiVersion", "kind", "metadata", "spec", "status")


@dataclass(frozen=True)
class IgnoredField:
    """A field that was read past because it does not change scheduling."""

    origin: Origin
    kind: str
    name: str
    path: str

    def __str__(self) -> str:
        return f"{self.origin.where()}: {self.kind} {self.name!r}: {self.path}"


@dataclass(frozen=True)
class ManifestSet:
    """What :func:`read_manifests` understood: the validated tree, the ignored fields, the files read."""

    tree: QueueTree
    ignored: tuple[IgnoredField, ...] = ()
    files: tuple[str, ...] = ()


# Kubernetes resource.Quantity suffixes (k8s.io/apimachinery/pkg/api/resource/suffix.go).
_SUFFIXES = {
    "": 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


#: The largest magnitude of a Kubernetes quantity (``resource.Quantity``: 2^63-1).
MAX_QUANTITY = float(2**63 - 1)

#: Go's ``time.ParseDuration`` units, in seconds.
_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration(value: object) -> float:
    """A Kubernetes ``metav1.Duration`` (Go's ``time.ParseDuration``: ``"90s"``, ``"1h30m"``, ``"0"``) in
    seconds.

    Raises
    ------
    ValueError
        When ``value`` is not a duration string.

    Examples
    --------
    >>> parse_duration("1h30m"), parse_duration("250ms"), parse_duration("0"), parse_duration("-2m")
    (5400.0, 0.25, 0.0, -120.0)
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"not a duration: {value!r}")
    text = value
    sign = 1.0
    if text[0] in "+-":
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    if text == "0":
        return 0.0
    total = 0.0
    at = 0
    while at < len(text):
        part = _DURATION_PART.match(text, at)
        if part is None:
            raise ValueError(f"not a duration: {value!r}")
        total += float(part.group(1)) * _DURATION_UNITS[part.group(2)]
        at = part.end()
    if at == 0:
        raise ValueError(f"not a duration: {value!r}")
    return sign * total


def parse_quantity(value: object) -> float:
    """A Kubernetes quantity (``8``, ``"500m"``, ``"64Gi"``, ``"1e3"``) as a float.

    Parameters
    ----------
    value
        A YAML number or a quantity string.

    Returns
    -------
    float
        The amount in base units (cores, bytes, devices).

    Raises
    ------
    ValueError
        When ``value`` is not a quantity: not a number, NaN or infinite (YAML's ``.nan``,
        ``.inf``, or ``1e400``, which reads as infinite), or beyond :data:`MAX_QUANTITY`.

    Notes
    -----
    The grammar of ``k8s.io/apimachinery/pkg/api/resource/quantity.go`` (``ParseQuantity``):
    a signed decimal, then a binary suffix (``Ki``..``Ei``), a decimal suffix
    (``n u m k M G T P E``) or a decimal exponent. It has no NaN or infinity, and "no
    quantity may represent a number greater than 2^63-1 in magnitude" (the ``Quantity``
    type's documentation; Kubernetes caps a larger one, which here would change the
    manifest's meaning silently, so it is refused).

    Examples
    --------
    >>> parse_quantity("500m"), parse_quantity("2Gi"), parse_quantity(16), parse_quantity("1e3")
    (0.5, 2147483648.0, 16.0, 1000.0)
    >>> parse_quantity(float("nan"))
    Traceback (most recent call last):
    ValueError: not a quantity: nan (a quantity is a finite number)
    """
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        amount = float(value)
    elif isinstance(value, str) and (match := _QUANTITY.match(value.strip())) is not None:
        number, exponent, suffix = match.groups()
        amount = float(number + exponent) if exponent is not None else float(number) * _SUFFIXES[suffix or ""]
    else:
        raise ValueError(f"not a quantity: {value!r}")
    if not math.isfinite(amount):
        raise ValueError(f"not a quantity: {value!r} (a quantity is a finite number)")
    if abs(amount) > MAX_QUANTITY:
        raise ValueError(f"{value!r} is beyond the largest Kubernetes quantity, 2^63-1 = {MAX_QUANTITY:.4g}")
    return amount


class _Document:
    """One YAML document being read: its origin, kind, name, and the problems and ignored fields found."""

    def __init__(self, origin: Origin, kind: str, name: str) -> None:
        self.origin = origin
        self.kind = kind
        self.name = name
        self.problems: list[Problem] = []
        self.ignored: list[IgnoredField] = []

    def problem(self, message: str, path: str) -> None:
        self.problems.append(self.origin.problem(message, path))

    def ignore(self, path: str) -> None:
        self.ignored.append(IgnoredField(self.origin, self.kind, self.name, path))

    def check(self, value: Any, schema: Schema, path: str) -> None:
        """Sort every field of ``value`` under ``path`` against ``schema``."""
        if isinstance(schema, tuple) and schema[0] == ELSEWHERE:
            self.problem(f"unknown field: not part of the {self.kind} API as modelled; {schema[1]}", path)
            return
        if isinstance(schema, tuple):
            if value != schema[1]:
                self.problem(
                    f"changes scheduling but is not modelled (only the default {schema[1]!r} is supported)",
                    path,
                )
            return
        if schema == IGNORE:
            self.ignore(path)
            return
        if schema == UNMODELLED:
            self.problem("changes scheduling but is not modelled", path)
            return
        if schema == LEAF:
            return
        if isinstance(schema, list):
            if not isinstance(value, list):
                self.problem(f"must be a list (found {type(value).__name__})", path)
                return
            for i, item in enumerate(value):
                self.check(item, schema[0], f"{path}[{i}]")
            return
        if not isinstance(value, Mapping):
            self.problem(f"must be a mapping (found {type(value).__name__})", path)
            return
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if key in schema:
                self.check(item, schema[key], sub)
            elif "*" in schema:
                self.check(item, schema["*"], sub)
            else:
                self.problem(f"unknown field: not part of the {self.kind} API as modelled", sub)


class _Reader:
    """Typed getters that record a problem (and return a fallback) instead of raising."""

    def __init__(self, doc: _Document) -> None:
        self.doc = doc

    def quantity(self, value: Any, path: str) -> float:
        try:
            return parse_quantity(value)
        except ValueError as err:
            self.doc.problem(str(err), path)
            return 0.0

    def optional_quantity(self, data: Mapping[str, Any], key: str, path: str) -> float | None:
        if data.get(key) is None:
            return None
        return self.quantity(data[key], f"{path}.{key}")

    def number(self, value: Any, path: str, default: float) -> float:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            self.doc.problem(f"must be a number (found {value!r})", path)
            return default
        try:
            found = float(value)
        except ValueError:
            self.doc.problem(f"must be a number (found {value!r})", path)
            return default
        if not math.isfinite(found):
            self.doc.problem(f"must be a finite number (found {value!r})", path)
            return default
        return found

    def duration(self, value: Any, path: str) -> float | None:
        """A ``metav1.Duration`` in seconds (None: unset); a negative or malformed one is a problem."""
        if value is None:
            return None
        try:
            seconds = parse_duration(value)
        except ValueError:
            self.doc.problem(f"must be a duration such as 30s, 10m or 1h30m (found {value!r})", path)
            return None
        if seconds < 0:
            self.doc.problem(f"must not be negative (found {value!r})", path)
            return None
        return seconds

    def integer(self, value: Any, path: str, default: int) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.doc.problem(f"must be an integer (found {value!r})", path)
            return default
        return value

    def string(self, value: Any, path: str, default: str | None = None) -> str | None:
        if value is None:
            return default
        if not isinstance(value, str):
            self.doc.problem(f"must be a string (found {value!r})", path)
            return default
        return value

    def text(self, value: Any, path: str, default: str) -> str:
        """Like :meth:`string` with a default, so never ``None``."""
        found = self.string(value, path, default)
        return default if found is None else found

    def boolean(self, value: Any, path: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            self.doc.problem(f"must be true or false (found {value!r})", path)
            return default
        return value

    def amounts(self, value: Any, path: str) -> dict[str, float]:
        if not isinstance(value, Mapping):
            return {}
        return {str(k): self.quantity(v, f"{path}.{k}") for k, v in value.items()}


def _enum(read: _Reader, value: Any, path: str, default: str, allowed: tuple[str, ...]) -> str:
    found = read.text(value, path, default) or default
    if found not in allowed:
        read.doc.problem(f"must be one of {list(allowed)} (found {found!r})", path)
    return found


def _fungibility(read: _Reader, spec: Mapping[str, Any], api: str) -> tuple[str, str]:
    """``whenCanBorrow`` and ``whenCanPreempt`` as written, or defaulted as ``api`` defaults them."""
    fungibility = _mapping(spec.get("flavorFungibility"))
    base = "spec.flavorFungibility"
    if api != KUEUE_V1BETA2:
        # v1beta1's values are the ones validate_tree checks for every version.
        return (
            read.text(fungibility.get("whenCanBorrow"), f"{base}.whenCanBorrow", "Borrow"),
            read.text(fungibility.get("whenCanPreempt"), f"{base}.whenCanPreempt", "TryNextFlavor"),
        )
    found = []
    for key, default, allowed, old in (
        ("whenCanBorrow", "MayStopSearch", KUEUE_V1BETA2_WHEN_CAN_BORROW, "Borrow"),
        ("whenCanPreempt", "TryNextFlavor", KUEUE_V1BETA2_WHEN_CAN_PREEMPT, "Preempt"),
    ):
        value = read.text(fungibility.get(key), f"{base}.{key}", default)
        if value not in allowed:
            # The v1beta1 name is the likely slip when converting a manifest: say what replaced it.
            hint = f", v1beta1's name of what {KUEUE_V1BETA2} spells MayStopSearch" if value == old else ""
            read.doc.problem(f"must be one of {list(allowed)} (found {value!r}{hint})", f"{base}.{key}")
        found.append(value)
    return found[0], found[1]


def _taints(read: _Reader, value: Any) -> tuple[Taint, ...]:
    found = []
    for i, item in enumerate(_list(value)):
        item = _mapping(item)
        path = f"spec.nodeTaints[{i}]"
        key = read.text(item.get("key"), f"{path}.key", "")
        if not key:
            read.doc.problem("is required", f"{path}.key")
        effect = _enum(read, item.get("effect"), f"{path}.effect", "", TAINT_EFFECTS)
        found.append(Taint(key, read.text(item.get("value"), f"{path}.value", ""), effect))
    return tuple(found)


def _tolerations(read: _Reader, spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    found = []
    for i, item in enumerate(_list(spec.get("tolerations"))):
        item = _mapping(item)
        path = f"spec.tolerations[{i}]"
        effect = read.text(item.get("effect"), f"{path}.effect", "")
        if effect:
            _enum(read, effect, f"{path}.effect", "", TAINT_EFFECTS)
        found.append(
            Toleration(
                key=read.text(item.get("key"), f"{path}.key", ""),
                operator=_enum(read, item.get("operator"), f"{path}.operator", "Equal", TOLERATION_OPERATORS),
                value=read.text(item.get("value"), f"{path}.value", ""),
                effect=effect,
            )
        )
    return tuple(found)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _resource_groups(read: _Reader, groups: Any) -> tuple[ResourceGroup, ...]:
    found = []
    for g, group in enumerate(_list(groups)):
        group = _mapping(group)
        base = f"spec.resourceGroups[{g}]"
        covered = tuple(str(r) for r in _list(group.get("coveredResources")))
        flavors = []
        for f, flavor in enumerate(_list(group.get("flavors"))):
            flavor = _mapping(flavor)
            fbase = f"{base}.flavors[{f}]"
            quotas = []
            for r, res in enumerate(_list(flavor.get("resources"))):
                res = _mapping(res)
                rbase = f"{fbase}.resources[{r}]"
                if res.get("nominalQuota") is None:
                    read.doc.problem("is required", f"{rbase}.nominalQuota")
                quotas.append(
                    ResourceQuota(
                        name=read.text(res.get("name"), f"{rbase}.name", ""),
                        nominal_quota=read.quantity(res.get("nominalQuota", 0), f"{rbase}.nominalQuota"),
                        borrowing_limit=read.optional_quantity(res, "borrowingLimit", rbase),
                        lending_limit=read.optional_quantity(res, "lendingLimit", rbase),
                    )
                )
            name = read.text(flavor.get("name"), f"{fbase}.name", "")
            flavors.append(FlavorQuotas(name, tuple(quotas)))
        found.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(found)


def _fair_weight(read: _Reader, spec: Mapping[str, Any]) -> float:
    weight = _mapping(spec.get("fairSharing")).get("weight")
    if weight is None:
        return 1.0
    return read.quantity(weight, "spec.fairSharing.weight")


def _build(doc: _Document, data: Mapping[str, Any], namespace: str | None) -> object:
    """The tree object of one checked document."""
    read = _Reader(doc)
    spec = _mapping(data.get("spec"))
    origin, name = doc.origin, doc.name
    if doc.kind == "ResourceFlavor":
        labels = {str(k): str(v) for k, v in _mapping(spec.get("nodeLabels")).items()}
        model = next((labels[k] for k in GPU_MODEL_LABELS if k in labels), None)
        return ResourceFlavor(
            name, labels, model, origin, _taints(read, spec.get("nodeTaints")), _tolerations(read, spec)
        )
    if doc.kind == "ClusterQueue":
        pre = _mapping(spec.get("preemption"))
        borrow = _mapping(pre.get("borrowWithinCohort"))
        threshold = borrow.get("maxPriorityThreshold")
        preemption = KueuePreemption(
            within_cluster_queue=read.text(
                pre.get("withinClusterQueue"), "spec.preemption.withinClusterQueue", "Never"
            ),
            reclaim_within_cohort=read.text(
                pre.get("reclaimWithinCohort"), "spec.preemption.reclaimWithinCohort", "Never"
            ),
            borrow_within_cohort=read.text(
                borrow.get("policy"), "spec.preemption.borrowWithinCohort.policy", "Never"
            ),
            max_priority_threshold=None
            if threshold is None
            else read.integer(threshold, "spec.preemption.borrowWithinCohort.maxPriorityThreshold", 0),
        )
        fungibility = _mapping(spec.get("flavorFungibility"))
        api = str(data.get("apiVersion"))
        when_can_borrow, when_can_preempt = _fungibility(read, spec, api)
        cohort_key = "cohortName" if api == KUEUE_V1BETA2 else "cohort"
        return ClusterQueue(
            name=name,
            cohort=read.string(spec.get(cohort_key), f"spec.{cohort_key}"),
            resource_groups=_resource_groups(read, spec.get("resourceGroups")),
            queueing_strategy=read.text(
                spec.get("queueingStrategy"), "spec.queueingStrategy", "BestEffortFIFO"
            ),
            preemption=preemption,
            fair_sharing_weight=_fair_weight(read, spec),
            when_can_borrow=when_can_borrow,
            when_can_preempt=when_can_preempt,
            preference=read.string(fungibility.get("preference"), "spec.flavorFungibility.preference"),
            origin=origin,
        )
    if doc.kind == "Cohort":
        key = "parent" if data.get("apiVersion") == "kueue.x-k8s.io/v1alpha1" else "parentName"
        return Cohort(
            name=name,
            parent=read.string(spec.get(key), f"spec.{key}"),
            parent_key=f"spec.{key}",
            resource_groups=_resource_groups(read, spec.get("resourceGroups")),
            fair_sharing_weight=_fair_weight(read, spec),
            origin=origin,
        )
    if doc.kind == "LocalQueue":
        if namespace is None:
            doc.problem("is required for a LocalQueue", "metadata.namespace")
        target = read.string(spec.get("clusterQueue"), "spec.clusterQueue")
        if target is None:
            doc.problem("is required", "spec.clusterQueue")
        return LocalQueue(namespace or "", name, target or "", origin)
    if doc.kind == "Queue" and data.get("apiVersion") == "scheduling.volcano.sh/v1beta1":
        return VolcanoQueue(
            name=name,
            weight=read.integer(spec.get("weight"), "spec.weight", 1),
            capability=read.amounts(spec.get("capability"), "spec.capability"),
            guarantee=read.amounts(
                _mapping(spec.get("guarantee")).get("resource"), "spec.guarantee.resource"
            ),
            deserved=read.amounts(spec.get("deserved"), "spec.deserved"),
            reclaimable=read.boolean(spec.get("reclaimable"), "spec.reclaimable", True),
            priority=read.integer(spec.get("priority"), "spec.priority", 0),
            parent=read.string(spec.get("parent"), "spec.parent"),
            origin=origin,
        )
    if doc.kind == "Queue":
        resources = _mapping(spec.get("resources"))
        per: dict[str, KaiResource] = {}
        for r in KAI_RESOURCES:
            res = _mapping(resources.get(r))
            base = f"spec.resources.{r}"
            per[r] = KaiResource(
                quota=read.number(res.get("quota"), f"{base}.quota", 0.0),
                over_quota_weight=read.number(res.get("overQuotaWeight"), f"{base}.overQuotaWeight", 0.0),
                limit=read.number(res.get("limit"), f"{base}.limit", 0.0),
            )
        return KaiQueue(
            name=name,
            parent_queue=read.string(spec.get("parentQueue"), "spec.parentQueue"),
            priority=read.integer(spec.get("priority"), "spec.priority", 100),
            gpu=per["gpu"],
            cpu=per["cpu"],
            memory=per["memory"],
            preempt_min_runtime=read.duration(spec.get("preemptMinRuntime"), "spec.preemptMinRuntime"),
            reclaim_min_runtime=read.duration(spec.get("reclaimMinRuntime"), "spec.reclaimMinRuntime"),
            origin=origin,
        )
    # PriorityClass: its fields are at the top level.
    if data.get("value") is None:
        doc.problem("is required", "value")
    return PriorityClass(
        name=name,
        value=read.integer(data.get("value"), "value", 0),
        preemption_policy=read.text(data.get("preemptionPolicy"), "preemptionPolicy", "PreemptLowerPriority"),
        global_default=read.boolean(data.get("globalDefault"), "globalDefault", False),
        origin=origin,
    )


#: The annotation prefix of scheduler-plugins' ReclaimIdleResource (``reclaim_idle_resource_policy.go``).
RECLAIM_IDLE_PREFIX = "reclaim-idle-resource.scheduling.x-k8s.io/"


@dataclass
class _Collected:
    objects: list[tuple[Model | None, object]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    ignored: list[IgnoredField] = field(default_factory=list)


def _read_document(data: Any, origin: Origin, into: _Collected) -> None:
    if not isinstance(data, Mapping):
        into.problems.append(origin.problem(f"a document must be a mapping (found {type(data).__name__})"))
        return
    api, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api, str) or not isinstance(kind, str):
        into.problems.append(origin.problem("every document needs apiVersion and kind"))
        return
    if (api, kind) not in KINDS:
        known = sorted({k for _, k in KINDS})
        versions = sorted(a for a, k in KINDS if k == kind)
        hint = f"read as {', '.join(versions)}" if versions else f"kinds read: {', '.join(known)}"
        into.problems.append(origin.problem(f"unknown kind {kind!r} of apiVersion {api!r} ({hint})", "kind"))
        return
    model, schema = KINDS[(api, kind)]
    metadata = _mapping(data.get("metadata"))
    name = metadata.get("name")
    doc = _Document(origin, kind, name if isinstance(name, str) else "")
    if not isinstance(name, str) or not name:
        doc.problem("is required", "metadata.name")
    namespace = metadata.get("namespace")
    doc.check(data.get("metadata", {}), _METADATA, "metadata")
    if kind == "PriorityClass":
        for key in _mapping(metadata.get("annotations")):
            if str(key).startswith(RECLAIM_IDLE_PREFIX):
                # They change who ReclaimIdleResource may evict: not silently dropped.
                doc.problem(
                    "ReclaimIdleResource annotations are not read from manifests: give them as "
                    "workload.priority_classes[i].reclaim_idle (scheduler.preemption: reclaim_idle)",
                    f"metadata.annotations.{key}",
                )
        for key, item in data.items():
            if key in ("apiVersion", "kind", "metadata"):
                continue
            if key == "status":
                doc.ignore("status")
            elif key in schema:
                doc.check(item, schema[key], str(key))
            else:
                doc.problem("unknown field: not part of the PriorityClass API as modelled", str(key))
    else:
        for key in data:
            if key not in _TOP_KEYS:
                doc.problem(f"unknown field: not part of the {kind} API as modelled", str(key))
        if "status" in data:
            doc.ignore("status")
        doc.check(data.get("spec") or {}, schema, "spec")
    built = _build(doc, data, namespace if isinstance(namespace, str) else None)
    into.problems += doc.problems
    into.ignored += doc.ignored
    if not doc.problems:
        into.objects.append((model, built))


def _load(text: str, source: str, into: _Collected) -> None:
    try:
        documents = load_documents(text, source)
    except InputError as err:
        into.problems += err.problems
        return
    if all(data is None for data in documents):
        into.problems.append(Problem("holds no YAML document: it is empty, or comments and --- only", source))
    for index, data in enumerate(documents, start=1):
        if data is None:
            continue  # an empty document (a trailing or doubled ---) holds nothing
        _read_document(data, Origin(source, index), into)


def _tree(collected: _Collected) -> QueueTree:
    models: dict[Model, Origin] = {}
    for model, obj in collected.objects:
        if model is not None and model not in models:
            models[model] = obj.origin  # type: ignore[attr-defined]
    if len(models) > 1:
        where = "; ".join(f"{m} in {o.where()}" for m, o in models.items())
        raise InputError(
            [
                Problem(
                    f"manifests mix queue models ({where}): give the objects of one scheduler at a time",
                    "manifests",
                )
            ]
        )
    by_type: dict[type, list[Any]] = {}
    for _, obj in collected.objects:
        by_type.setdefault(type(obj), []).append(obj)

    def of(kind: type) -> tuple[Any, ...]:
        return tuple(by_type.get(kind, ()))

    return QueueTree(
        model=next(iter(models), None),
        flavors=of(ResourceFlavor),
        cluster_queues=of(ClusterQueue),
        cohorts=of(Cohort),
        local_queues=of(LocalQueue),
        volcano_queues=of(VolcanoQueue),
        kai_queues=of(KaiQueue),
        priority_classes=of(PriorityClass),
    )


def _finish(collected: _Collected, files: tuple[str, ...]) -> ManifestSet:
    if collected.problems:
        raise InputError(collected.problems, shown=len(collected.problems))
    tree = validate_tree(_tree(collected))
    return ManifestSet(tree, tuple(collected.ignored), files)


def parse_manifests(text: str, source: str = "<text>") -> ManifestSet:
    """Read one YAML stream (see the module docstring); ``source`` names it in messages.

    Raises
    ------
    InputError
        On bad YAML (or YAML nested too deeply, or aliased too far: :mod:`gpureplay.yaml_input`),
        no document at all, an unknown kind, a field not modelled, a bad value, mixed models,
        or a failed :func:`~gpureplay.queues.tree.validate_tree` check; each problem names
        ``source``, the 1-based document index and the field path.
    """
    collected = _Collected()
    _load(text, source, collected)
    return _finish(collected, (source,))


def read_manifests(path: str | Path, on_file: Callable[[Path], None] | None = None) -> ManifestSet:
    """Read a manifest file, or every ``*.yaml`` / ``*.yml`` under a folder, into one validated tree.

    Parameters
    ----------
    path
        A file or a folder (searched recursively, files in sorted order).
    on_file
        Called with each file before it is read (progress output); optional.

    Returns
    -------
    ManifestSet
        The tree, the ignored fields and the files read.

    Raises
    ------
    InputError
        As :func:`parse_manifests`, and when ``path`` is empty, does not exist, cannot be
        read, is a folder without YAML files, holds more YAML than the size cap
        (:func:`gpureplay.yaml_input.yaml_size_limit`), or a file holds no document.
    """
    if not str(path).strip():
        raise InputError.single("no path given: name a manifest file or a folder of them", "manifests")
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml"))
        if not files:
            raise InputError.single("no *.yaml or *.yml files in this folder", str(root))
    elif root.exists():
        files = [root]
    else:
        raise InputError.single("no such file or folder", str(root))
    collected = _Collected()
    for file, text in read_yaml_files(files, str(root)):
        if on_file is not None:
            on_file(file)
        _load(text, str(file), collected)
    return _finish(collected, tuple(str(f) for f in files))
