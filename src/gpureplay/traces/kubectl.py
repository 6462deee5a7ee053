"""Your own jobs, exported with ``kubectl get <kind> -A -o json``.

The file is what kubectl prints: a ``v1`` ``List`` (``{"apiVersion": "v1", "kind": "List", "items":
[...]}``; ``kubectl get jobs,pytorchjobs,workloads,priorityclasses -A -o json`` prints one List of them
all), a typed list as the API server returns it (``JobList``, ``WorkloadList``: items without a kind
take the list's), or a single object (``kubectl get job NAME -o json``). Several such documents one
after the other (JSON lines, or two exports concatenated) are read in turn; a ``.gz`` file is read
transparently. Objects read, by ``apiVersion`` and ``kind``:

==============================================  =========================================================
``batch/v1`` ``Job``                            Kubernetes API ``batch/v1`` ``JobSpec`` / ``JobStatus``
``kubeflow.org/v1`` ``PyTorchJob``              Kubeflow training-operator ``PyTorchJobSpec``,
                                                common ``JobStatus`` / ``RunPolicy``
``batch.volcano.sh/v1alpha1`` ``Job``           Volcano ``JobSpec`` / ``TaskSpec`` / ``JobStatus``
``scheduling.volcano.sh/v1beta1`` ``PodGroup``  Volcano ``PodGroupSpec`` / ``PodGroupStatus``
``kueue.x-k8s.io/v1beta1|v1beta2`` ``Workload``  Kueue ``WorkloadSpec`` / ``PodSet`` / ``WorkloadStatus``
``scheduling.k8s.io/v1`` ``PriorityClass``      its ``value`` and ``globalDefault`` (priorities by name)
``kueue.x-k8s.io/v1beta1|v1beta2``              its ``value`` (Kueue's ``kueue.x-k8s.io/priority-class``
``WorkloadPriorityClass``                       label)
==============================================  =========================================================

Any other kind (Pods, Services, LocalQueues, ...) is skipped and counted. What a job becomes, field by
field, and what is assumed or left out, is said in :func:`load_kubectl` and docs/inputs.md ("Your own
jobs").
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import polars as pl

from gpureplay.cluster import catalog
from gpureplay.cluster.kubectl import GPU_RESOURCE, MIG_RESOURCE_PREFIX, parse_quantity
from gpureplay.errors import CONFIG, InputError, Problem
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import AdaptedTrace, file_sha256
from gpureplay.traces.schema import MAX_SHOWN, validate_jobs

__all__ = [
    "DEFAULT_MAX_FILE_MIB",
    "PodOwner",
    "load_kubectl",
    "parse_time",
    "read_json_values",
]

#: Largest file read (``trace.max_file_mib``): ``json`` holds a whole document in memory as Python
#: objects (measured: a 100 MiB export of 20,000 jobs and a 17 MiB scrape peaked at 433 MiB resident,
#: 14 s), so the default bounds a read to about 1 GiB.
DEFAULT_MAX_FILE_MIB = 256.0

# apiVersion and kind of each object read.
_JOB = ("batch/v1", "Job")
_PYTORCH = ("kubeflow.org/v1", "PyTorchJob")
_VOLCANO = ("batch.volcano.sh/v1alpha1", "Job")
_PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")
_WORKLOADS = (("kueue.x-k8s.io/v1beta1", "Workload"), ("kueue.x-k8s.io/v1beta2", "Workload"))
_PRIORITY_CLASS = ("scheduling.k8s.io/v1", "PriorityClass")
_WORKLOAD_PRIORITY_CLASSES = (
    ("kueue.x-k8s.io/v1beta1", "WorkloadPriorityClass"),
    ("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass"),
)
_JOB_KINDS = frozenset({_JOB, _PYTORCH, _VOLCANO, _PODGROUP, *_WORKLOADS})
_CLASS_KINDS = frozenset({_PRIORITY_CLASS, *_WORKLOAD_PRIORITY_CLASSES})
#: Kinds read under one apiVersion only; another version of them is refused rather than misread.
_KNOWN_KINDS = {
    "PyTorchJob": "kubeflow.org/v1",
    "PodGroup": "scheduling.volcano.sh/v1beta1",
    "Workload": "kueue.x-k8s.io/v1beta1 or v1beta2",
    "PriorityClass": "scheduling.k8s.io/v1",
    "WorkloadPriorityClass": "kueue.x-k8s.io/v1beta1 or v1beta2",
}

#: Kueue's labels on a job it manages (kueue ``pkg/controller/constants``).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
#: Volcano's annotation naming the queue of a plain Job's pods (``scheduling.volcano.sh/queue-name``).
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
#: GPU Feature Discovery's product label, when a pod template selects nodes by it.
_PRODUCT_LABEL = "nvidia.com/gpu.product"
#: HAMi's per-vGPU resources (Project-HAMi ``docs/config.md``): device memory in MiB, percent of the cores.
HAMI_MEMORY = "nvidia.com/gpumem"
HAMI_CORES = "nvidia.com/gpucores"
#: Built-in PriorityClasses every cluster has (kube-apiserver ``scheduling/v1`` defaults).
_SYSTEM_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}

#: Volcano Job phases after which the job holds no GPUs (``JobPhase``), and those before it ran.
_VOLCANO_ENDED = ("Completed", "Failed", "Terminated", "Aborted")
_VOLCANO_PENDING = ("Pending", "")
#: The change reasons of unfinished jobs (also named in docs/inputs.md).
NEVER_STARTED = "never started (pending, suspended or not admitted at export): dropped"
RUNNING_KEPT = "still running at export (censored): kept, duration = observed_at - start, a lower bound"
RUNNING_DROPPED = "still running at export (censored): dropped (trace.running=drop)"
_PODGROUP_ENDED = "PodGroup Completed: its status holds no end time (export its owner job instead): dropped"


def parse_time(value: object) -> float:
    """Seconds since the Unix epoch of a Kubernetes timestamp.

    Parameters
    ----------
    value
        A ``metav1.Time`` or ``metav1.MicroTime`` as the API serialises it: RFC 3339 with a zone,
        ``"2024-06-03T11:02:41Z"``, ``"2024-06-03T11:02:41.123456Z"``, ``"2024-06-03T13:02:41+02:00"``.

    Raises
    ------
    ValueError
        Saying why ``value`` is not such a time (a number, no zone, not a date).

    Examples
    --------
    >>> parse_time("1970-01-01T00:01:00Z"), parse_time("1970-01-01T02:01:00.5+02:00")
    (60.0, 60.5)
    """
    if not isinstance(value, str):
        raise ValueError(f"a time is an RFC 3339 string such as '2024-06-03T11:02:41Z' (found {value!r})")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an RFC 3339 time such as '2024-06-03T11:02:41Z'") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone (the API writes UTC with a trailing Z)")
    return parsed.timestamp()


def read_json_values(path: Path, source: str, max_mib: float, hint: str) -> list[Any]:
    """Every JSON value of a file: one document, or several one after the other (JSON lines).

    Parameters
    ----------
    path, source
        The file and its name for messages.
    max_mib
        Largest size read, MiB (uncompressed for a ``.gz`` file); ``json`` holds it all in memory.
    hint
        How to produce the file, for the message when it is not JSON.

    Raises
    ------
    InputError
        Naming the file: larger than ``max_mib`` (naming its size), not UTF-8, not JSON (line and column).
    """
    limit = int(max_mib * 2**20)
    gz = path.name.lower().endswith(".gz")
    try:
        size = path.stat().st_size
        if not gz and size > limit:
            raise InputError.single(_too_large(f"{size / 2**20:,.1f} MiB", max_mib), source)
        opener = gzip.open if gz else open
        with opener(path, "rb") as raw:
            data = raw.read(limit + 1)
    except (OSError, EOFError) as err:
        raise InputError.single(f"cannot read the file: {err}", source) from err
    if len(data) > limit:
        raise InputError.single(_too_large("more than that uncompressed", max_mib), source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError.single(f"not UTF-8 text ({err.reason} at byte {err.start})", source) from err
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at = 0
    try:
        while True:
            while at < len(text) and text[at] in " \t\r\n":
                at += 1
            if at == len(text):
                break
            value, at = decoder.raw_decode(text, at)
            values.append(value)
    except json.JSONDecodeError as err:
        raise InputError.single(
            f"not JSON ({err.msg} at line {err.lineno}, column {err.colno}); {hint}", source
        ) from err
    if not values:
        raise InputError.single(f"the file is empty; {hint}", source)
    return values


def _too_large(size: str, max_mib: float) -> str:
    return (
        f"the file is {size}, above trace.max_file_mib = {max_mib:g} MiB (JSON is read whole, about four "
        "times its size in memory); export fewer objects per file, or raise trace.max_file_mib"
    )


@dataclass(frozen=True)
class PodOwner:
    """Whose pods a job's are, for joining per-pod samples to it (:mod:`gpureplay.traces.dcgm`).

    Parameters
    ----------
    namespace
        The pods' namespace.
    kind
        ``Job``, ``PyTorchJob``, ``VolcanoJob`` or ``None`` (pods not named after their owner: a
        stand-alone PodGroup or Workload).
    name
        The owner's name: its pods are ``<name>-<suffix>`` (a Job), ``<name>-master-0`` /
        ``<name>-worker-<i>`` (a PyTorchJob), ``<name>-<task>-<i>`` (a Volcano Job).
    tasks
        A Volcano Job's task names.
    start, end
        When the job ran, seconds since the epoch (samples outside are someone else's: a name reused).
    """

    namespace: str
    kind: str | None
    name: str
    tasks: tuple[str, ...] = ()
    start: float = -math.inf
    end: float = math.inf


@dataclass(frozen=True)
class _Demand:
    """What one pod asks for, in the jobs table's terms."""

    gpu_milli: int
    gpu_mem_mib: int | None
    mig_profile: str | None
    cpu_milli: int
    mem_mib: int
    gpu_models: tuple[str, ...] | None


@dataclass
class _Job:
    """One job object as read, before the table is built."""

    row: int
    where: str
    kind: str
    namespace: str
    name: str
    uid: str | None
    owners: list[tuple[str, str, str | None]]
    created: float
    started: float | None
    ended: float | None
    state: str
    num_pods: int
    demand: _Demand
    queue: str
    priority_class: str | None
    priority: int | None = None
    workload_class: str | None = None
    past: float = 0.0
    pod_owner: tuple[str | None, str] | None = None
    tasks: tuple[str, ...] = ()
    times: list[float] = field(default_factory=list)
    notes: Counter[str] = field(default_factory=Counter)


def _label(kind: str, namespace: str, name: str) -> str:
    return f"{kind} '{namespace}/{name}'"


class _Reader:
    """Reads the objects of one file, collecting every problem with the file, the object and the field."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[Problem] = []
        self.changes: Counter[str] = Counter()
        self.classes: dict[str, int] = dict(_SYSTEM_CLASSES)
        self.default_class: tuple[str, int] | None = None
        self.workload_classes: dict[str, int] = {}

    def problem(self, where: str, who: str | None, message: str) -> None:
        """Record ``message`` about the field at ``where`` (``items[2].spec.parallelism``) of ``who``."""
        self.problems.append(Problem(f"{who}: {message}" if who else message, self.source, key=where))


class _ObjectReader:
    """The fields of one object, each problem naming the object and the field's path."""

    def __init__(self, reader: _Reader, item: dict[str, Any], prefix: str, kind: str, who: str) -> None:
        self.reader = reader
        self.item = item
        self.prefix = prefix
        self.kind = kind
        self.who = who
        self.start = len(reader.problems)
        self.times: list[float] = []
        self.notes: Counter[str] = Counter()

    def problem(self, where: str, message: str) -> None:
        self.reader.problem(f"{self.prefix}{where}", self.who, message)

    def failed(self) -> bool:
        return len(self.reader.problems) > self.start

    def note(self, reason: str) -> None:
        """Count an assumption about this object (added to the trace's changes if the job is kept)."""
        self.notes[reason] += 1

    # --- plain fields ---------------------------------------------------------------------------

    def get(self, where: str, default: Any = None) -> Any:
        """The value at the dotted path ``where`` (``spec.runPolicy.schedulingPolicy``), or ``default``."""
        at: Any = self.item
        for part in where.split("."):
            name, _, index = part.partition("[")  # "tasks[0]": a list's element
            if not isinstance(at, dict) or name not in at:
                return default
            at = at[name]
            if index:
                position = int(index.rstrip("]"))
                if not isinstance(at, list) or position >= len(at):
                    return default
                at = at[position]
        return default if at is None else at

    def mapping(self, where: str) -> dict[str, Any]:
        value = self.get(where, {})
        if not isinstance(value, dict):
            self.problem(where, f"must be a mapping (found {value!r})")
            return {}
        return value

    def listing(self, where: str) -> list[Any]:
        value = self.get(where, [])
        if not isinstance(value, list):
            self.problem(where, f"must be a list (found {value!r})")
            return []
        return value

    def text(self, where: str) -> str | None:
        value = self.get(where)
        if value is not None and (not isinstance(value, str) or not value):
            self.problem(where, f"must be a non-empty string (found {value!r})")
            return None
        return value

    def count(self, where: str, default: int, minimum: int = 0) -> int | None:
        value = self.get(where, default)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= 2**31 - 1:
            self.problem(where, f"must be a whole number >= {minimum} (found {value!r})")
            return None
        return value

    def time(self, where: str, value: object) -> float | None:
        try:
            seconds = parse_time(value)
        except ValueError as err:
            self.problem(where, str(err))
            return None
        self.times.append(seconds)
        return seconds

    def time_at(self, where: str) -> float | None:
        value = self.get(where)
        return None if value is None else self.time(where, value)

    def condition(
        self, where: str, kind: str, *, key: str = "type", status: str | None = "True"
    ) -> float | None:
        """``lastTransitionTime`` of the condition whose ``key`` is ``kind`` (and ``status``), if any."""
        for i, cond in enumerate(self.listing(where)):
            if not isinstance(cond, dict):
                self.problem(f"{where}[{i}]", f"a condition is a mapping (found {cond!r})")
                continue
            if cond.get(key) != kind or (status is not None and cond.get("status") != status):
                continue
            stamp = cond.get("lastTransitionTime")
            if stamp is None:
                self.problem(f"{where}[{i}].lastTransitionTime", f"missing in the {kind} condition")
                return None
            return self.time(f"{where}[{i}].lastTransitionTime", stamp)
        return None

    # --- pod templates --------------------------------------------------------------------------

    def template(self, where: str) -> tuple[_Demand, str | None] | None:
        """One pod's demand and PriorityClass name from the pod template at ``where`` (``spec.template``)."""
        tpl = self.get(where)
        if not isinstance(tpl, dict):
            self.problem(
                where, f"missing: a pod template is needed to know what each pod asks for (found {tpl!r})"
            )
            return None
        spec = tpl.get("spec")
        if not isinstance(spec, dict):
            self.problem(f"{where}.spec", f"missing: the pod spec (found {spec!r})")
            return None
        containers = spec.get("containers")
        if not isinstance(containers, list) or not containers:
            self.problem(
                f"{where}.spec.containers", f"a pod needs at least one container (found {containers!r})"
            )
            return None
        total: dict[str, Fraction] = {}
        for i, container in enumerate(containers):
            for key, value in self.container(f"{where}.spec.containers[{i}]", container).items():
                total[key] = total.get(key, Fraction(0)) + value
        # kube-scheduler's effective request: the larger of the containers' sum and each init container.
        inits = spec.get("initContainers") or []
        if not isinstance(inits, list):
            self.problem(f"{where}.spec.initContainers", f"must be a list (found {inits!r})")
            inits = []
        for i, container in enumerate(inits):
            for key, value in self.container(f"{where}.spec.initContainers[{i}]", container).items():
                total[key] = max(total.get(key, Fraction(0)), value)
        models = self.models(f"{where}.spec", spec)
        demand = self.demand(f"{where}.spec.containers[*].resources", total, models)
        priority_class = spec.get("priorityClassName")
        if priority_class is not None and not isinstance(priority_class, str):
            self.problem(f"{where}.spec.priorityClassName", f"must be a string (found {priority_class!r})")
            priority_class = None
        return (demand, priority_class) if demand is not None else None

    def container(self, where: str, container: object) -> dict[str, Fraction]:
        """A container's requests (a request defaults to its limit when only the limit is given)."""
        if not isinstance(container, dict):
            self.problem(where, f"a container is a mapping (found {container!r})")
            return {}
        resources = container.get("resources") or {}
        if not isinstance(resources, dict):
            self.problem(f"{where}.resources", f"must be a mapping (found {resources!r})")
            return {}
        found: dict[str, dict[str, Fraction]] = {}
        for part in ("requests", "limits"):
            given = resources.get(part) or {}
            if not isinstance(given, dict):
                self.problem(
                    f"{where}.resources.{part}", f"must be a mapping of quantities (found {given!r})"
                )
                continue
            found[part] = {}
            for key, text in given.items():
                try:
                    value = parse_quantity(text)
                except ValueError as err:
                    self.problem(f'{where}.resources.{part}["{key}"]', str(err))
                    continue
                if value < 0:
                    self.problem(f'{where}.resources.{part}["{key}"]', f"negative quantity {text!r}")
                    continue
                found[part][key] = value
        requests, limits = found.get("requests", {}), found.get("limits", {})
        for key in requests.keys() & limits.keys():
            # The API server refuses an extended resource (a device) whose request differs from its limit.
            if _extended(key) and requests[key] != limits[key]:
                self.problem(
                    f'{where}.resources.requests["{key}"]',
                    f"request {requests[key]} differs from limit {limits[key]}; a device resource's request "
                    "must equal its limit",
                )
        return {**limits, **requests}

    def models(self, where: str, spec: Mapping[str, Any]) -> tuple[str, ...] | None:
        """GPU models a pod template's node selection allows (GFD's product label), or None: any."""
        values: list[str] | None = None
        selector = spec.get("nodeSelector") or {}
        if isinstance(selector, dict) and isinstance(selector.get(_PRODUCT_LABEL), str):
            values = [selector[_PRODUCT_LABEL]]
            at = f'{where}.nodeSelector["{_PRODUCT_LABEL}"]'
        else:
            products = [_product_values(t) for t in _affinity_terms(spec)]
            # Terms are ORed: the product is constrained only when every term names it.
            if products and all(p is not None for p in products):
                values = [v for p in products for v in (p or [])]
            at = f"{where}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        if values is None:
            return None
        models: list[str] = []
        for value in values:
            model = catalog.label_model(value) if isinstance(value, str) else None
            if model is None:
                known = ", ".join(sorted(catalog.gpu_models()))
                self.problem(
                    at,
                    f"selects GPU product {value!r}, which the catalog does not know (add its spelling to a "
                    f"model's aliases in gpu_models.toml); known models: {known}",
                )
                return None
            if model not in models:
                models.append(model)
        return tuple(models)

    def demand(
        self, at: str, total: Mapping[str, Fraction], models: tuple[str, ...] | None
    ) -> _Demand | None:
        """The jobs table's view of one pod's summed requests (see :func:`load_kubectl`); ``at`` names
        where the requests are (``spec.template.spec.containers[*].resources``) in messages."""
        cpu = total.get("cpu", Fraction(0))
        memory = total.get("memory", Fraction(0))
        gpus = total.get(GPU_RESOURCE, Fraction(0))
        mig = {
            k.removeprefix(MIG_RESOURCE_PREFIX): v
            for k, v in total.items()
            if k.startswith(MIG_RESOURCE_PREFIX) and v
        }
        for key in sorted(total):
            if key in ("cpu", "memory", GPU_RESOURCE, HAMI_MEMORY, HAMI_CORES) or key.startswith(
                MIG_RESOURCE_PREFIX
            ):
                continue
            if total[key]:
                self.note(f"resource {key} requested: not modelled, not read")
        if gpus.denominator != 1 or gpus > 2**20:
            self.problem(f'{at}["{GPU_RESOURCE}"]', f"a GPU count is a whole number (found {float(gpus):g})")
            return None
        whole = int(gpus)
        mig_profile: str | None = None
        gpu_milli = whole * 1000
        gpu_mem: int | None = None
        if mig:
            mig_profile, milli = self.mig(at, whole, mig) or (None, 0)
            if mig_profile is None:
                return None
            gpu_milli = milli
        hami_mem, hami_cores = total.get(HAMI_MEMORY), total.get(HAMI_CORES)
        if (hami_mem or hami_cores) and not mig:
            if whole == 0:
                self.problem(
                    f'{at}["{HAMI_MEMORY if hami_mem else HAMI_CORES}"]',
                    f"HAMi's per-vGPU resources need {GPU_RESOURCE} (the number of vGPUs)",
                )
                return None
            if hami_mem:
                gpu_mem = math.ceil(hami_mem)  # HAMi counts device memory in MiB
            if hami_cores:
                if not 0 < hami_cores <= 100:
                    self.problem(
                        f'{at}["{HAMI_CORES}"]',
                        f"a percent of the GPU's cores, 1..100 (found {float(hami_cores):g})",
                    )
                    return None
                if whole == 1:
                    gpu_milli = math.ceil(hami_cores * 10)
                    self.note(f"HAMi vGPU: gpu_milli = {HAMI_CORES} x 10, gpu_mem_mib = {HAMI_MEMORY}")
                elif hami_cores < 100:
                    self.note(f"HAMi: several vGPUs of {HAMI_CORES} < 100 each: replayed as whole GPUs")
            elif whole == 1:
                self.note(
                    f"HAMi vGPU without {HAMI_CORES}: all the GPU's cores (gpu_milli 1000), shared by memory"
                )
        return _Demand(
            gpu_milli=gpu_milli,
            gpu_mem_mib=gpu_mem,
            mig_profile=mig_profile,
            cpu_milli=math.ceil(cpu * 1000),  # Quantity.MilliValue rounds up
            mem_mib=math.ceil(memory / 2**20),  # a pod needs at least what it requests
            gpu_models=models,
        )

    def mig(self, at: str, whole: int, mig: Mapping[str, Fraction]) -> tuple[str, int] | None:
        """``(mig_profile, gpu_milli)`` of a pod asking one MIG instance (``nvidia.com/mig-<profile>: 1``)."""
        first = f'{at}["{MIG_RESOURCE_PREFIX}{next(iter(mig))}"]'
        if whole:
            self.problem(first, f"a pod asking whole GPUs ({GPU_RESOURCE}) and MIG instances is not modelled")
            return None
        if len(mig) > 1 or next(iter(mig.values())) != 1:
            asked = ", ".join(f"{float(c):g} x {p}" for p, c in mig.items())
            self.problem(first, f"a pod of the jobs table holds one MIG instance (found {asked})")
            return None
        spelling = next(iter(mig))
        shares = _mig_shares(spelling)
        if shares is None:
            self.problem(
                first,
                f"{spelling!r} is not a MIG profile of any catalog model, or has media extensions (+me), "
                "which the replay does not model",
            )
            return None
        return shares


def _extended(resource: str) -> bool:
    """Whether a resource is an extended one (a device), whose request must equal its limit."""
    return "/" in resource and not resource.startswith(("kubernetes.io/", "requests.", "hugepages-"))


def _affinity_terms(spec: Mapping[str, Any]) -> list[Any]:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    return terms if isinstance(terms, list) else []


def _product_values(term: object) -> list[str] | None:
    """The products one node selector term allows (``In``), or None when it does not constrain them."""
    if not isinstance(term, dict):
        return None
    for expression in term.get("matchExpressions") or []:
        if (
            isinstance(expression, dict)
            and expression.get("key") == _PRODUCT_LABEL
            and expression.get("operator") == "In"
            and isinstance(expression.get("values"), list)
        ):
            return [str(v) for v in expression["values"]]
    return None


def _mig_shares(spelling: str) -> tuple[str, int] | None:
    """``(profile, gpu_milli)``: the profile's catalog name and the largest share it is the smallest fit of.

    ``gpu_milli`` = floor(1000 * compute slices / the GPU's compute slices), at most 999 (the engine reads a
    MIG pod as a fractional one), so ``scheduler.mig_demand: smallest_fit`` picks this profile again.

    Examples
    --------
    >>> _mig_shares("1g.10gb"), _mig_shares("3g.40gb"), _mig_shares("7g.80gb"), _mig_shares("9g.1gb")
    (('1g.10gb', 142), ('3g.40gb', 428), ('7g.80gb', 999), None)
    """
    best: tuple[str, int] | None = None
    for model in catalog.gpu_models():
        for name, profile in catalog.mig_model_profiles(model).items():
            if (
                spelling not in (name, name.replace("+", "."), name.replace("+", ""))
                or profile.media_extensions
            ):
                continue
            total = catalog.mig_slices(model)[1]
            milli = min(999, 1000 * profile.compute_slices // total)
            best = (name, milli) if best is None else (name, min(best[1], milli))
    return best


# --- the objects ---------------------------------------------------------------------------------


def _metadata(obj: _ObjectReader) -> tuple[str, str | None, list[tuple[str, str, str | None]], float] | None:
    """``(namespace, uid, owners, created)``; the name was read by the caller."""
    namespace = obj.get("metadata.namespace", "default")
    if not isinstance(namespace, str) or not namespace:
        obj.problem("metadata.namespace", f"must be a non-empty string (found {namespace!r})")
        return None
    uid = obj.get("metadata.uid")
    owners: list[tuple[str, str, str | None]] = []
    for i, ref in enumerate(obj.listing("metadata.ownerReferences")):
        if isinstance(ref, dict) and isinstance(ref.get("kind"), str) and isinstance(ref.get("name"), str):
            owners.append((_owner_kind(ref), ref["name"], ref.get("uid")))
        else:
            obj.problem(
                f"metadata.ownerReferences[{i}]",
                f"an owner reference names a kind and a name (found {ref!r})",
            )
    created = obj.get("metadata.creationTimestamp")
    if created is None:
        obj.problem("metadata.creationTimestamp", "missing: the job's submission time")
        return None
    stamp = obj.time("metadata.creationTimestamp", created)
    return None if stamp is None else (namespace, uid if isinstance(uid, str) else None, owners, stamp)


def _owner_kind(ref: Mapping[str, Any]) -> str:
    """An owner reference's kind, a Volcano Job told apart from a batch/v1 one."""
    if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch.volcano.sh/"):
        return "VolcanoJob"
    return str(ref["kind"])


def _combine(obj: _ObjectReader, sets: Sequence[tuple[str, int, _Demand]]) -> tuple[int, _Demand] | None:
    """One gang of identical pods from several pod sets (replica types, tasks, podSets)."""
    sets = [s for s in sets if s[1] > 0]
    if not sets:
        obj.problem(_sets_where(obj), "no pods: every replica count is 0")
        return None
    demands = {d for _, _, d in sets}
    if len(demands) == 1:
        return sum(n for _, n, _ in sets), sets[0][2]
    gpu_sets = [s for s in sets if s[2].gpu_milli > 0]
    if gpu_sets and len(gpu_sets) < len(sets) and len({d for _, _, d in gpu_sets}) == 1:
        obj.note("pods without GPUs beside GPU pods (a launcher, a parameter server): left out")
        return sum(n for _, n, _ in gpu_sets), gpu_sets[0][2]
    kept = gpu_sets or sets
    obj.note("pod sets ask for different resources: every pod replayed with the largest request of each")
    models = {d.gpu_models for _, _, d in kept}
    profiles = {d.mig_profile for _, _, d in kept}
    if len(profiles) > 1:
        obj.problem(
            _sets_where(obj),
            f"pod sets ask for different MIG profiles ({', '.join(sorted(str(p) for p in profiles))}): "
            "one job holds one profile",
        )
        return None
    mems = [d.gpu_mem_mib for _, _, d in kept if d.gpu_mem_mib is not None]
    return sum(n for _, n, _ in kept), _Demand(
        gpu_milli=max(d.gpu_milli for _, _, d in kept),
        gpu_mem_mib=max(mems) if mems else None,
        mig_profile=next(iter(profiles)),
        cpu_milli=max(d.cpu_milli for _, _, d in kept),
        mem_mib=max(d.mem_mib for _, _, d in kept),
        gpu_models=next(iter(models)) if len(models) == 1 else None,
    )


def _sets_where(obj: _ObjectReader) -> str:
    """Where an object lists its pod sets, for messages."""
    return {
        "PyTorchJob": "spec.pytorchReplicaSpecs",
        "VolcanoJob": "spec.tasks",
        "Workload": "spec.podSets",
    }.get(obj.kind, "spec")


def _batch_job(obj: _ObjectReader, base: _Job) -> _Job | None:
    """A ``batch/v1`` Job: ``parallelism`` pods of ``spec.template``; ``status.startTime`` to completion."""
    parallelism = obj.count("spec.parallelism", 1)
    completions = obj.get("spec.completions")
    read = obj.template("spec.template")
    if parallelism is None or read is None:
        return None
    demand, pod_class = read
    pods = parallelism
    if isinstance(completions, int) and not isinstance(completions, bool):
        if completions < parallelism:
            pods = max(completions, 1)  # the controller never runs more pods than completions remain
        elif completions > parallelism:
            obj.note("Job of more completions than parallelism (pods in waves): one gang for the whole run")
    if pods == 0:
        obj.reader.changes["Job with parallelism 0: dropped"] += 1
        return None
    base.num_pods, base.demand = pods, demand
    base.priority_class = pod_class
    base.pod_owner = ("Job", base.name)
    labels = obj.mapping("metadata.labels")
    base.queue = _kueue_queue(obj, labels, base) or _volcano_queue(obj) or "default"
    base.workload_class = labels.get(WORKLOAD_PRIORITY_LABEL)
    base.started = obj.time_at("status.startTime")
    complete = obj.condition("status.conditions", "Complete")
    failed = obj.condition("status.conditions", "Failed")
    if complete is not None:
        base.ended, base.state = obj.time_at("status.completionTime") or complete, "Succeeded"
    elif failed is not None:
        base.ended, base.state = failed, "Failed"
    elif base.started is not None:
        base.state = "Running"
    return base


def _kueue_queue(obj: _ObjectReader, labels: Mapping[str, Any], base: _Job) -> str | None:
    queue = labels.get(QUEUE_LABEL)
    if queue is None:
        return None
    if not isinstance(queue, str) or not queue:
        obj.problem(f'metadata.labels["{QUEUE_LABEL}"]', f"must name a LocalQueue (found {queue!r})")
        return None
    return f"{base.namespace}/{queue}"


def _volcano_queue(obj: _ObjectReader) -> str | None:
    for where in ("metadata.annotations", "spec.template.metadata.annotations"):
        annotations = obj.get(where, {})
        if isinstance(annotations, dict) and isinstance(annotations.get(VOLCANO_QUEUE_ANNOTATION), str):
            return str(annotations[VOLCANO_QUEUE_ANNOTATION])
    return None


def _pytorch_job(obj: _ObjectReader, base: _Job) -> _Job | None:
    """A Kubeflow PyTorchJob: Master and Worker replicas; the Running condition to completion."""
    specs = obj.mapping("spec.pytorchReplicaSpecs")
    if not specs:
        obj.problem("spec.pytorchReplicaSpecs", "missing: a PyTorchJob's replica specs (Master, Worker)")
        return None
    sets: list[tuple[str, int, _Demand]] = []
    classes: set[str] = set()
    for rtype in specs:
        where = f"spec.pytorchReplicaSpecs.{rtype}"
        replicas = obj.count(f"{where}.replicas", 1)
        read = obj.template(f"{where}.template")
        if replicas is None or read is None:
            continue
        sets.append((rtype, replicas, read[0]))
        if read[1]:
            classes.add(read[1])
    if obj.failed():
        return None
    gang = _combine(obj, sets)
    if gang is None:
        return None
    base.num_pods, base.demand = gang
    policy = obj.mapping("spec.runPolicy.schedulingPolicy")
    base.priority_class = policy.get("priorityClass") or (min(classes) if classes else None)
    labels = obj.mapping("metadata.labels")
    base.queue = _kueue_queue(obj, labels, base) or policy.get("queue") or "default"
    base.workload_class = labels.get(WORKLOAD_PRIORITY_LABEL)
    base.pod_owner = ("PyTorchJob", base.name)
    # training-operator keeps the Running condition's transition time when the job ends (it only
    # flips its status), so it is when the pods started; status.startTime is when the operator saw it.
    # Only a Running condition says the pods ran: startTime alone (set at the first reconcile) does not.
    running = obj.condition("status.conditions", "Running", status=None)
    base.started = running or obj.time_at("status.startTime")
    succeeded = obj.condition("status.conditions", "Succeeded")
    failed = obj.condition("status.conditions", "Failed")
    if succeeded is not None or failed is not None:
        base.state = "Succeeded" if succeeded is not None else "Failed"
        base.ended = obj.time_at("status.completionTime") or succeeded or failed
    elif running is not None and obj.condition("status.conditions", "Suspended") is None:
        base.state = "Running"
    return base


def _volcano_job(obj: _ObjectReader, base: _Job) -> _Job | None:
    """A Volcano Job: its tasks' replicas; the Running condition to the terminal phase."""
    sets: list[tuple[str, int, _Demand]] = []
    classes: set[str] = set()
    tasks: list[str] = []
    for i in range(len(obj.listing("spec.tasks"))):
        where = f"spec.tasks[{i}]"
        replicas = obj.count(f"{where}.replicas", 0)
        read = obj.template(f"{where}.template")
        name = obj.get(f"{where}.name", "")
        if replicas is None or read is None:
            continue
        tasks.append(str(name))
        sets.append((str(name), replicas, read[0]))
        if read[1]:
            classes.add(read[1])
    if not sets and not obj.failed():
        obj.problem("spec.tasks", "missing: a Volcano Job needs at least one task")
    if obj.failed():
        return None
    gang = _combine(obj, sets)
    if gang is None:
        return None
    base.num_pods, base.demand = gang
    min_available = obj.get("spec.minAvailable")
    if isinstance(min_available, int) and 0 < min_available < base.num_pods:
        obj.note("Volcano minAvailable below the job's pods: replayed as a gang of all its pods")
    base.priority_class = obj.text("spec.priorityClassName") or (min(classes) if classes else None)
    base.queue = obj.text("spec.queue") or "default"
    base.pod_owner, base.tasks = ("VolcanoJob", base.name), tuple(tasks)
    phase = obj.get("status.state.phase", "")
    # JobStatus.conditions holds one entry per phase (merge key: status), with its last transition.
    base.started = obj.condition("status.conditions", "Running", key="status", status=None)
    if phase in _VOLCANO_ENDED:
        base.ended = obj.condition("status.conditions", phase, key="status", status=None) or obj.time_at(
            "status.state.lastTransitionTime"
        )
        base.state = "Succeeded" if phase == "Completed" else "Failed"
        if base.ended is None:
            obj.problem("status.state.lastTransitionTime", f"missing: when the job became {phase}")
    elif phase not in _VOLCANO_PENDING and base.started is not None:
        base.state = "Running"
    return base


def _podgroup(obj: _ObjectReader, base: _Job) -> _Job | None:
    """A Volcano PodGroup: ``minMember`` pods sharing ``minResources``; scheduled to (unknown) end."""
    members = obj.count("spec.minMember", 1, minimum=1)
    resources = obj.mapping("spec.minResources")
    if members is None or obj.failed():
        return None
    total: dict[str, Fraction] = {}
    for key, text in resources.items():
        try:
            total[key] = parse_quantity(text) / members
        except ValueError as err:
            obj.problem(f'spec.minResources["{key}"]', str(err))
    gpus = total.get(GPU_RESOURCE)
    if gpus is not None and gpus.denominator != 1:
        obj.problem(
            f'spec.minResources["{GPU_RESOURCE}"]',
            f"{float(gpus * members):g} GPUs do not split evenly over minMember = {members} pods",
        )
    if obj.failed():
        return None
    demand = obj.demand("spec.minResources", total, None)
    if demand is None:
        return None
    obj.note("PodGroup: each pod asks minResources / minMember")
    base.num_pods, base.demand = members, demand
    base.priority_class = obj.text("spec.priorityClassName")
    base.queue = obj.text("spec.queue") or "default"
    base.pod_owner = None
    phase = obj.get("status.phase", "")
    base.started = obj.condition("status.conditions", "Scheduled")
    if phase == "Completed":
        base.state = "Completed"
    elif phase == "Running" and base.started is not None:
        base.state = "Running"
    return base


def _workload(obj: _ObjectReader, base: _Job) -> _Job | None:
    """A Kueue Workload: its podSets; Admitted (else QuotaReserved) to Finished, plus past admissions."""
    sets: list[tuple[str, int, _Demand]] = []
    classes: set[str] = set()
    for i in range(len(obj.listing("spec.podSets"))):
        where = f"spec.podSets[{i}]"
        count = obj.count(f"{where}.count", 1)
        read = obj.template(f"{where}.template")
        if count is None or read is None:
            continue
        sets.append((str(obj.get(f"{where}.name", "main")), count, read[0]))
        if read[1]:
            classes.add(read[1])
    if not sets and not obj.failed():
        obj.problem("spec.podSets", "missing: a Workload has at least one podSet")
    if obj.failed():
        return None
    gang = _combine(obj, sets)
    if gang is None:
        return None
    base.num_pods, base.demand = gang
    labels = obj.mapping("metadata.labels")
    queue = obj.text("spec.queueName") or labels.get(QUEUE_LABEL)
    base.queue = f"{base.namespace}/{queue}" if queue else "default"
    base.priority_class = (
        obj.text("spec.priorityClassName")
        or obj.get("spec.priorityClassRef.name")
        or (min(classes) if classes else None)
    )
    priority = obj.get("spec.priority")
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int) or not -(2**31) <= priority < 2**31:
            obj.problem("spec.priority", f"must be an int32 (found {priority!r})")
            return None
        base.priority = priority
    # Kueue names a Workload after its owner job, whose pods carry the owner's name (set again when
    # the owner is in the file, see _owned).
    base.pod_owner = (base.owners[0][0], base.owners[0][1]) if base.owners else None
    base.started = obj.condition("status.conditions", "Admitted") or obj.condition(
        "status.conditions", "QuotaReserved"
    )
    finished = obj.condition("status.conditions", "Finished")
    for spelling in ("accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds"):
        past = obj.get(f"status.{spelling}")
        if past is not None:
            if isinstance(past, bool) or not isinstance(past, int) or past < 0:
                obj.problem(f"status.{spelling}", f"must be whole seconds >= 0 (found {past!r})")
                return None
            base.past = float(past)
            if past:
                obj.note(
                    "Workload admitted before (evicted, re-admitted): duration adds its past admitted time"
                )
    if finished is not None:
        reason = next(
            (
                c.get("reason")
                for c in obj.listing("status.conditions")
                if isinstance(c, dict) and c.get("type") == "Finished"
            ),
            None,
        )
        base.state = "Failed" if reason == "Failed" else "Succeeded"
        base.ended = finished
        if base.started is None:
            obj.reader.changes[
                "finished Workload with no Admitted or QuotaReserved condition still true: start unknown, "
                "dropped"
            ] += 1
            return None
    elif base.started is not None and obj.get("spec.active", True) is not False:
        base.state = "Running"
    return base


_BUILDERS = {
    _JOB: ("Job", _batch_job),
    _PYTORCH: ("PyTorchJob", _pytorch_job),
    _VOLCANO: ("VolcanoJob", _volcano_job),
    _PODGROUP: ("PodGroup", _podgroup),
    _WORKLOADS[0]: ("Workload", _workload),
    _WORKLOADS[1]: ("Workload", _workload),
}


def _objects(values: Sequence[Any], source: str) -> list[tuple[str, Any, tuple[str, str] | None]]:
    """``(field path prefix, object, default (apiVersion, kind))`` of every object of the file's documents."""
    many = len(values) > 1
    found: list[tuple[str, Any, tuple[str, str] | None]] = []
    for d, value in enumerate(values):
        head = f"document[{d}]." if many else ""
        if not isinstance(value, dict):
            raise InputError.single(
                f"expected a JSON object (a List or one Kubernetes object), found a JSON "
                f"{type(value).__name__}",
                source,
                key=head.rstrip(".") or None,
            )
        kind = value.get("kind")
        if isinstance(kind, str) and kind.endswith("List"):
            items = value.get("items")
            if not isinstance(items, list):
                raise InputError.single(
                    f"a {kind} holds a list of objects (found {items!r})", source, key=f"{head}items"
                )
            default = None
            if kind != "List" and isinstance(value.get("apiVersion"), str):
                default = (str(value["apiVersion"]), kind.removesuffix("List"))
            found += [(f"{head}items[{i}].", item, default) for i, item in enumerate(items)]
        else:
            found.append((head, value, None))
    return found


def _read_class(reader: _Reader, prefix: str, item: dict[str, Any], version_kind: tuple[str, str]) -> None:
    name = (item.get("metadata") or {}).get("name")
    value = item.get("value")
    if not isinstance(name, str) or isinstance(value, bool) or not isinstance(value, int):
        reader.problem(
            f"{prefix}value",
            f"{version_kind[1]} {name!r}",
            f"needs a name and an integer value (found {value!r})",
        )
        return
    if version_kind == _PRIORITY_CLASS:
        reader.classes[name] = value
        if item.get("globalDefault") is True:
            reader.default_class = (name, value)
    else:
        reader.workload_classes[name] = value


def _read_job(
    reader: _Reader, prefix: str, item: dict[str, Any], version_kind: tuple[str, str], row: int
) -> _Job | None:
    kind, build = _BUILDERS[version_kind]
    metadata = item.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        reader.problem(f"{prefix}metadata.name", None, f"missing: every {kind} has a name (found {name!r})")
        return None
    namespace = (metadata.get("namespace") if isinstance(metadata, dict) else None) or "default"
    obj = _ObjectReader(reader, item, prefix, kind, _label(version_kind[1], str(namespace), name))
    meta = _metadata(obj)
    if meta is None:
        return None
    namespace, uid, owners, created = meta
    base = _Job(
        row=row,
        where=prefix,
        kind=kind,
        namespace=namespace,
        name=name,
        uid=uid,
        owners=owners,
        created=created,
        started=None,
        ended=None,
        state="Pending",
        num_pods=0,
        demand=_Demand(0, None, None, 0, 0, None),
        queue="default",
        priority_class=None,
    )
    job = build(obj, base)
    if job is None or obj.failed():
        return None
    if job.ended is not None and job.started is not None and job.ended < job.started:
        obj.problem("status", f"ends ({_iso(job.ended)}) before it starts ({_iso(job.started)})")
        return None
    job.times, job.notes = obj.times, obj.notes
    return job


def _iso(seconds: float) -> str:
    from datetime import UTC

    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _priority(reader: _Reader, job: _Job) -> tuple[int, str | None]:
    """The job's priority value and class name (Kueue's own value first, then the classes of the file)."""
    if job.priority is not None:
        return job.priority, job.priority_class
    if job.workload_class is not None:
        if job.workload_class in reader.workload_classes:
            return reader.workload_classes[job.workload_class], job.workload_class
        reader.changes[
            f"WorkloadPriorityClass {job.workload_class} not in the file: priority from the PriorityClass"
        ] += 1
    name = job.priority_class
    if name is None:
        if reader.default_class is not None:
            return reader.default_class[1], reader.default_class[0]
        return 0, None
    if name in reader.classes:
        return reader.classes[name], name
    reader.changes[
        f"PriorityClass {name} not in the file: priority 0 (add `kubectl get priorityclasses -o json`)"
    ] += 1
    return 0, name


def _owned(jobs: Sequence[_Job], changes: Counter[str]) -> list[_Job]:
    """The jobs left once owners and owned objects of the same file are merged.

    A Kueue Workload replaces the job that owns it (it holds the queue, the priority value and the
    admission times); a Volcano PodGroup owned by a job of the file is left out (the job holds more).
    """
    by_uid = {j.uid: j for j in jobs if j.uid}
    by_name = {(j.kind, j.namespace, j.name): j for j in jobs}

    def owner_of(job: _Job) -> _Job | None:
        for kind, name, uid in job.owners:
            found = by_uid.get(uid) if uid else None
            found = found or by_name.get((kind, job.namespace, name))
            if found is not None and found is not job:
                return found
        return None

    dropped: set[int] = set()
    for job in jobs:
        owner = owner_of(job)
        if owner is None:
            continue
        if job.kind == "Workload":
            dropped.add(owner.row)
            changes[f"{owner.kind} managed by Kueue: replaced by its Workload"] += 1
            job.pod_owner = (owner.kind, owner.name)
            job.tasks = owner.tasks
        elif job.kind == "PodGroup":
            dropped.add(job.row)
            changes[f"PodGroup of a {owner.kind} in the file: left out (the {owner.kind} is the job)"] += 1
    return [j for j in jobs if j.row not in dropped]


def load_kubectl(
    path: str | Path,
    running: Literal["keep", "drop"] = "keep",
    observed_at: str | None = None,
    dcgm: str | Path | None = None,
    max_file_mib: float = DEFAULT_MAX_FILE_MIB,
) -> AdaptedTrace:
    """Read exported Kubernetes job objects as canonical jobs, one job per object.

    Parameters
    ----------
    path
        The export (``trace.path``; ``.json``, ``.json.gz``, JSON lines), found as other traces are
        (:func:`gpureplay.paths.resolve_data_path`).
    running
        ``"keep"`` (default, as openb keeps the pods still running at its end): a job that started and
        has not ended is replayed for ``observed_at - start`` seconds, a lower bound, flagged in
        ``source_censored``; ``"drop"``: left out (as the Philly and PAI adapters do).
    observed_at
        When the export was taken (RFC 3339); null: the latest time the file records (kubectl writes
        no export time). Only read for running jobs.
    dcgm
        A DCGM exporter scrape of the jobs' pods (``trace.dcgm``): each job's mean GPU utilisation
        becomes its ``source_gpu_util`` (:mod:`gpureplay.traces.dcgm`).
    max_file_mib
        Largest file read, MiB (``trace.max_file_mib``), for this file and the scrape.

    Returns
    -------
    AdaptedTrace
        ``job_id`` = the object's 1-based position in the file (over every document), ``job_name`` =
        ``namespace/name``, sorted by ``(submit_time, job_id)``:

        - ``submit_time``: ``metadata.creationTimestamp``, seconds after the earliest kept job's;
        - ``duration``: end - start, where start and end are, per kind: a Job ``status.startTime`` to
          ``status.completionTime`` (the ``Complete`` condition's time when absent) or the ``Failed``
          condition's time; a PyTorchJob its ``Running`` condition's transition time (else
          ``status.startTime``) to ``status.completionTime`` (else the ``Succeeded`` / ``Failed``
          condition's); a Volcano Job the ``conditions`` entry of status ``Running`` to the entry (else
          ``status.state.lastTransitionTime``) of its terminal phase (Completed, Failed, Terminated,
          Aborted); a Workload its ``Admitted`` condition (else ``QuotaReserved``, status True) to
          ``Finished``, plus ``accumulatedPastExexcutionTimeSeconds`` (its earlier admissions); a
          PodGroup its ``Scheduled`` condition, and no end (running only). Failed jobs are kept: they
          held their GPUs until they failed;
        - ``num_pods``: a Job's ``parallelism`` (default 1; ``completions`` when fewer); the sum of a
          PyTorchJob's ``pytorchReplicaSpecs.*.replicas`` (default 1), of a Volcano Job's
          ``tasks[].replicas``, of a Workload's ``podSets[].count``; a PodGroup's ``minMember``;
        - per pod, from the pod template's containers (requests, a request defaulting to its limit;
          the larger of the containers' sum and any init container, as kube-scheduler counts):
          ``gpu_milli`` = 1000 x ``nvidia.com/gpu``; ``cpu_milli``, ``mem_mib`` from ``cpu`` and
          ``memory`` (rounded up); a MIG instance ``nvidia.com/mig-<profile>: 1`` gives
          ``mig_profile`` and ``gpu_milli`` = floor(1000 x its compute slices / the GPU's), at most
          999; HAMi's ``nvidia.com/gpumem`` gives ``gpu_mem_mib`` and ``nvidia.com/gpucores`` (percent)
          ``gpu_milli`` = 10 x cores for one vGPU; any other resource is counted as not read. A PodGroup's
          pods each ask ``minResources / minMember``. Replica types asking different things: GPU-less
          ones beside identical GPU ones are left out, otherwise every pod gets the largest request;
        - ``gpu_models``: from the template's ``nodeSelector`` or required node affinity (``In``) on
          GFD's ``nvidia.com/gpu.product``, through the catalog;
        - ``queue``: Kueue's LocalQueue as ``namespace/name`` (a Workload's ``spec.queueName``, a job's
          ``kueue.x-k8s.io/queue-name`` label), a Volcano queue (a Volcano Job's or PodGroup's
          ``spec.queue``, a PyTorchJob's ``runPolicy.schedulingPolicy.queue``, a Job's
          ``scheduling.volcano.sh/queue-name`` annotation), else ``default``;
        - ``priority``: a Workload's ``spec.priority``; else the value of the WorkloadPriorityClass
          (``kueue.x-k8s.io/priority-class`` label) or PriorityClass (``priorityClassName`` of the job
          or its template; a PyTorchJob's ``runPolicy.schedulingPolicy.priorityClass``) of that name
          in the file, the built-in ``system-*`` classes, or the ``globalDefault`` class; 0 when none
          is found (counted). Its name is kept in ``source_priority_class``, which the results'
          ``priority_class`` shows when the workload gives no PriorityClass mix;
        - ``user``: the namespace (the tenant); ``preemptible``: true.

        Kept raw: ``source_kind``, ``source_namespace``, ``source_name``, ``source_state``
        (Succeeded, Failed, Running), ``source_priority_class``, ``source_queueing_delay`` (start -
        creation, s), ``source_censored``, ``source_gpu_util`` (with ``dcgm``). ``changes`` counts
        every job dropped or assumed: never started (Pending, suspended, not admitted: dropped, as
        the Helios and Philly adapters drop them), still running (kept or dropped), a Job replaced by
        its Workload, a PodGroup whose owner is in the file, a Completed PodGroup (no end time),
        other kinds skipped, resources not read.

    Raises
    ------
    FileNotFoundError
        When the file is not found.
    InputError
        For a file that is not JSON or too large, an unsupported apiVersion of a known kind, no job
        at all, and for each object a missing name or creation time, a bad time, quantity or count, a
        request differing from its limit for a device, two MIG profiles or instances in one pod, an
        unknown MIG profile or GPU product, a job that ends before it starts, or one listed twice:
        each names the file, the object (``items[i]``, kind and ``namespace/name``) and the field
        (``items[3].spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]``). A bad
        config value names its key.

    Notes
    -----
    Kubernetes API ``batch/v1`` ``Job`` (``JobStatus``: ``startTime``, "when the job controller
    started processing a job", reset when a suspended job resumes; ``completionTime``, set on success
    only; conditions ``Complete`` / ``Failed``), ``core/v1`` ``PodSpec`` and ``ResourceRequirements``
    (requests default to limits; extended resources need equal requests and limits), kube-scheduler's
    effective pod request (init containers); Kubeflow training-operator ``kubeflow.org/v1``
    ``PyTorchJob`` (``pytorchReplicaSpecs``, ``runPolicy.schedulingPolicy``, ``JobCondition`` types
    Created, Running, Restarting, Succeeded, Failed, Suspended); Volcano ``batch.volcano.sh/v1alpha1``
    ``Job`` (``JobStatus.state.phase`` of ``JobPhase``, ``conditions`` as ``JobCondition{status,
    lastTransitionTime}``) and ``scheduling.volcano.sh/v1beta1`` ``PodGroup``; Kueue
    ``kueue.x-k8s.io/v1beta1`` ``Workload`` (``apis/kueue/v1beta1/workload_types.go``: ``podSets``,
    ``queueName``, ``priority`` "populated from PriorityClassName", conditions QuotaReserved,
    Admitted, Finished, ``accumulatedPastExexcutionTimeSeconds`` sic) and ``v1beta2``
    (``priorityClassRef``); NVIDIA k8s-device-plugin resources (``nvidia.com/gpu``,
    ``nvidia.com/mig-<profile>`` under the mixed strategy); HAMi's ``nvidia.com/gpumem`` and
    ``nvidia.com/gpucores``.
    """
    if running not in ("keep", "drop"):
        raise InputError.config(f"must be keep or drop (found {running!r})", "trace.running")
    if not (isinstance(max_file_mib, int | float) and 0 < max_file_mib < math.inf):
        raise InputError.config(f"must be a number of MiB > 0 (found {max_file_mib!r})", "trace.max_file_mib")
    observed: float | None = None
    if observed_at is not None:
        try:
            observed = parse_time(observed_at)
        except ValueError as err:
            raise InputError.config(str(err), "trace.observed_at") from err
    file = resolve_data_path(path, "trace file")
    source = str(file)
    hint = "export the jobs with `kubectl get jobs,pytorchjobs,workloads -A -o json`"
    values = read_json_values(file, source, max_file_mib, hint)
    reader = _Reader(source)
    jobs: list[_Job] = []
    seen: dict[tuple[str, str, str], str] = {}
    kinds: Counter[str] = Counter()
    objects = _objects(values, source)
    pending_jobs: list[tuple[str, dict[str, Any], tuple[str, str], int]] = []
    for row, (prefix, item, default) in enumerate(objects, start=1):
        if not isinstance(item, dict):
            reader.problem(
                prefix.rstrip(".") or "kind", None, f"an object is a JSON mapping (found {item!r})"
            )
            continue
        version_kind = (
            str(item.get("apiVersion", default[0] if default else "")),
            str(item.get("kind", default[1] if default else "")),
        )
        kinds[version_kind[1]] += 1
        if version_kind in _CLASS_KINDS:
            _read_class(reader, prefix, item, version_kind)
        elif version_kind in _JOB_KINDS:
            pending_jobs.append((prefix, item, version_kind, row))
        elif version_kind[1] in _KNOWN_KINDS:
            reader.problem(
                f"{prefix}apiVersion",
                f"{version_kind[1]} {(item.get('metadata') or {}).get('name')!r}",
                f"apiVersion {version_kind[0]!r} is not read; {version_kind[1]} is read as "
                f"{_KNOWN_KINDS[version_kind[1]]}",
            )
        else:
            reader.changes[
                f"{version_kind[1] or 'object without a kind'} ({version_kind[0]}): not a job, skipped"
            ] += 1
    for prefix, item, version_kind, row in pending_jobs:
        job = _read_job(reader, prefix, item, version_kind, row)
        if job is None:
            continue
        key = (job.kind, job.namespace, job.name)
        if key in seen:
            reader.problem(
                f"{prefix}metadata.name",
                _label(version_kind[1], job.namespace, job.name),
                f"listed twice (also at {seen[key]})",
            )
            continue
        seen[key] = prefix.rstrip(".") or "the document"
        jobs.append(job)
    if reader.problems:
        raise InputError(reader.problems[:MAX_SHOWN], total=len(reader.problems))
    if not pending_jobs:
        found = ", ".join(f"{n} {k or '(no kind)'}" for k, n in kinds.most_common()) or "nothing"
        raise InputError.single(
            f"no Job, PyTorchJob, Volcano Job, PodGroup or Workload in the file (found {found}); {hint}",
            source,
        )
    jobs = _owned(jobs, reader.changes)
    if observed is None:
        observed = max(t for j in jobs for t in (*j.times, j.created))
    kept = _finished_or_running(jobs, running, observed, reader.changes, source)
    utilization: dict[int, float] = {}
    sha = file_sha256(file)
    if dcgm is not None:
        from gpureplay.traces.dcgm import dcgm_utilization

        owners = {j.row: _pod_owner(j, observed) for j in kept}
        found_util, dcgm_file, dcgm_changes = dcgm_utilization(dcgm, owners, max_file_mib)
        utilization = found_util
        reader.changes.update(dcgm_changes)
        sha = file_sha256(file, dcgm_file)
    table = _table(reader, kept, observed, utilization)
    with_names = validate_jobs(table, str(file), _RAW_NAMES)
    return AdaptedTrace(with_names, source, sha, reader.changes)


#: Canonical column -> where the value comes from, for messages of the shared checks.
_RAW_NAMES = {
    "submit_time": "metadata.creationTimestamp",
    "duration": "status (start and end times)",
    "num_pods": "spec (replicas)",
    "gpu_milli": 'resources["nvidia.com/gpu"]',
    "priority": "priority (PriorityClass value)",
}


def _pod_owner(job: _Job, observed: float) -> PodOwner:
    kind, name = job.pod_owner if job.pod_owner is not None else (None, job.name)
    start = job.started if job.started is not None else job.created
    return PodOwner(
        job.namespace, kind, name, job.tasks, start, job.ended if job.ended is not None else observed
    )


def _finished_or_running(
    jobs: Sequence[_Job], running: str, observed: float, changes: Counter[str], source: str
) -> list[_Job]:
    kept: list[_Job] = []
    problems: list[Problem] = []
    for job in jobs:
        if job.state == "Completed":  # a PodGroup: no end time
            changes[_PODGROUP_ENDED] += 1
        elif job.state == "Pending" or job.started is None:
            changes[NEVER_STARTED] += 1
        elif job.state == "Running":
            if running == "drop":
                changes[RUNNING_DROPPED] += 1
                continue
            if observed < job.started:
                problems.append(
                    Problem(
                        f"{_label(job.kind, job.namespace, job.name)}: started at {_iso(job.started)}, after "
                        f"observed_at = {_iso(observed)}",
                        CONFIG,
                        key="trace.observed_at",
                    )
                )
                continue
            changes[RUNNING_KEPT] += 1
            kept.append(job)
        else:
            kept.append(job)
    if problems:
        raise InputError(problems[:MAX_SHOWN], total=len(problems))
    if not kept:
        why = "; ".join(f"{n} {r}" for r, n in changes.most_common())
        raise InputError.single(f"no job is left to replay ({why})", source)
    for job in kept:
        changes.update(job.notes)  # what was assumed about the jobs replayed, not about those left out
    return kept


def _table(
    reader: _Reader, jobs: Sequence[_Job], observed: float, utilization: Mapping[int, float]
) -> pl.DataFrame:
    first = min(j.created for j in jobs)
    rows: list[dict[str, Any]] = []
    for job in jobs:
        assert job.started is not None  # _finished_or_running kept started jobs only
        censored = job.state == "Running"
        end = observed if censored else job.ended
        assert end is not None
        priority, priority_class = _priority(reader, job)
        demand = job.demand
        rows.append(
            {
                "job_id": job.row,
                "job_name": f"{job.namespace}/{job.name}",
                "submit_time": job.created - first,
                "duration": job.past + end - job.started,
                "num_pods": job.num_pods,
                "gpu_milli": demand.gpu_milli,
                "gpu_mem_mib": demand.gpu_mem_mib,
                "gpu_models": list(demand.gpu_models) if demand.gpu_models else None,
                "mig_profile": demand.mig_profile,
                "cpu_milli": demand.cpu_milli,
                "mem_mib": demand.mem_mib,
                "queue": job.queue,
                "user": job.namespace,
                "priority": priority,
                "preemptible": True,
                "source_row": job.row,
                "source_kind": job.kind,
                "source_namespace": job.namespace,
                "source_name": job.name,
                "source_state": job.state,
                "source_priority_class": priority_class,
                "source_queueing_delay": max(0.0, job.started - job.created),
                "source_censored": censored,
                "source_gpu_util": utilization.get(job.row),
            }
        )
    if any(j.created > first for j in jobs):
        reader.changes["submit_time shifted so the first job arrives at 0"] += len(jobs)
    schema = {
        "gpu_mem_mib": pl.Int64(),
        "gpu_models": pl.List(pl.String()),
        "mig_profile": pl.String(),
        "source_priority_class": pl.String(),
        "source_gpu_util": pl.Float64(),
    }
    return pl.DataFrame(rows, schema_overrides=schema).sort("submit_time", "job_id")
