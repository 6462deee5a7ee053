"""Kubernetes job objects as ``kubectl get <kind> -A -o json`` prints them, and DCGM exporter scrapes as
Prometheus's HTTP API answers a range query, for the tests of ``trace=kubectl`` and ``trace.dcgm``.

Each builder writes the fields the API server fills in (uid, resourceVersion, generation, managed
defaults of the pod template, the job controller's conditions), so the files look like real exports:
the adapter must find its fields among them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

#: Every time of the tests is this plus some seconds.
T0 = datetime(2024, 6, 3, 8, 0, 0, tzinfo=UTC)


def ts(seconds: float) -> str:
    """``T0 + seconds`` as the API writes a ``metav1.Time`` (RFC 3339, UTC, ``Z``)."""
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _uid(name: str) -> str:
    digits = f"{sum(map(ord, name)) * 7919 % 10**12:012d}"
    return f"3f1c{digits[:4]}-8a2b-4c1d-9e0f-{digits}"


def container(
    gpus: int | None = None,
    cpu: str = "8",
    memory: str = "32Gi",
    extra: Mapping[str, str] | None = None,
    name: str = "train",
) -> dict[str, Any]:
    """A container asking ``gpus`` whole GPUs (limits, as the device plugin wants) and CPU and memory."""
    limits: dict[str, str] = {}
    if gpus is not None:
        limits["nvidia.com/gpu"] = str(gpus)
    limits.update(extra or {})
    return {
        "command": ["torchrun", "--nproc-per-node=auto", "train.py"],
        "image": "nvcr.io/nvidia/pytorch:24.05-py3",
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": {"limits": limits, "requests": {"cpu": cpu, "memory": memory}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def pod_template(
    *containers: dict[str, Any],
    labels: Mapping[str, str] | None = None,
    priority_class: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    restart: str = "Never",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": list(containers) or [container(1)],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": restart,
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
    }
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    return {"metadata": {"creationTimestamp": None, "labels": dict(labels or {})}, "spec": spec}


def _meta(
    name: str,
    namespace: str,
    created: float,
    labels: Mapping[str, str] | None = None,
    owners: Sequence[Mapping[str, Any]] = (),
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "creationTimestamp": ts(created),
        "generation": 1,
        "name": name,
        "namespace": namespace,
        "resourceVersion": str(48_213_377 + int(created)),
        "uid": _uid(f"{namespace}/{name}"),
    }
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    if owners:
        meta["ownerReferences"] = [dict(o) for o in owners]
    return meta


def owner_ref(kind: str, name: str, namespace: str, api_version: str = "batch/v1") -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "blockOwnerDeletion": True,
        "controller": True,
        "kind": kind,
        "name": name,
        "uid": _uid(f"{namespace}/{name}"),
    }


def _cond(kind: str, at: float, status: str = "True", reason: str = "", message: str = "") -> dict[str, Any]:
    return {
        "lastProbeTime": ts(at),
        "lastTransitionTime": ts(at),
        "message": message,
        "reason": reason or kind,
        "status": status,
        "type": kind,
    }


def batch_job(
    name: str,
    namespace: str = "team-a",
    created: float = 0,
    start: float | None = 5,
    end: float | None = 3605,
    failed: bool = False,
    parallelism: int = 1,
    completions: int | None = None,
    template: dict[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    suspend: bool = False,
) -> dict[str, Any]:
    """A ``batch/v1`` Job: Complete (or Failed) at ``end``, running when ``end`` is None, never started
    when ``start`` is None."""
    uid = _uid(f"{namespace}/{name}")
    tpl = template or pod_template(container(1))
    tpl["metadata"]["labels"].update(
        {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
    )
    status: dict[str, Any] = {"ready": 0, "terminating": 0, "uncountedTerminatedPods": {}}
    if start is not None:
        status["startTime"] = ts(start)
        status["active"] = parallelism if end is None else 0
    if start is not None and end is not None:
        if failed:
            status["failed"] = 7
            status["conditions"] = [
                _cond(
                    "FailureTarget",
                    end,
                    reason="BackoffLimitExceeded",
                    message="Job has reached the specified backoff limit",
                ),
                _cond(
                    "Failed",
                    end,
                    reason="BackoffLimitExceeded",
                    message="Job has reached the specified backoff limit",
                ),
            ]
        else:
            status["succeeded"] = completions or parallelism
            status["completionTime"] = ts(end)
            status["conditions"] = [
                _cond(
                    "SuccessCriteriaMet",
                    end,
                    reason="CompletionsReached",
                    message="Reached expected number of succeeded pods",
                ),
                _cond(
                    "Complete",
                    end,
                    reason="CompletionsReached",
                    message="Reached expected number of succeeded pods",
                ),
            ]
    if suspend:
        status["conditions"] = [_cond("Suspended", created, reason="JobSuspended", message="Job suspended")]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(
            name, namespace, created, labels, annotations={"batch.kubernetes.io/job-tracking": ""}
        ),
        "spec": {
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
            "completions": completions if completions is not None else parallelism,
            "manualSelector": False,
            "parallelism": parallelism,
            "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
            "suspend": suspend,
            "template": tpl,
        },
        "status": status,
    }


def pytorch_job(
    name: str,
    namespace: str = "team-b",
    created: float = 0,
    running: float | None = 60,
    end: float | None = 7260,
    workers: int = 3,
    gpus: int = 8,
    master_gpus: int | None = None,
    queue: str | None = None,
    priority_class: str | None = None,
    failed: bool = False,
) -> dict[str, Any]:
    """A Kubeflow ``kubeflow.org/v1`` PyTorchJob of one Master and ``workers`` Workers, as training-operator
    reports it (conditions Created, Running, then Succeeded or Failed)."""

    def replica(count: int, n: int) -> dict[str, Any]:
        return {
            "replicas": count,
            "restartPolicy": "OnFailure",
            "template": pod_template(container(n, cpu="64", memory="512Gi", name="pytorch")),
        }

    conditions = [
        _cond(
            "Created",
            created,
            reason="PyTorchJobCreated",
            message=f"PyTorchJob {namespace}/{name} is created.",
        )
    ]
    status: dict[str, Any] = {"replicaStatuses": {"Master": {}, "Worker": {}}, "startTime": ts(created + 1)}
    if running is not None:
        conditions.append(
            _cond(
                "Running",
                running,
                "False" if end is not None else "True",
                "PyTorchJobRunning",
                "PyTorchJob is running.",
            )
        )
    if running is not None and end is not None:
        kind = "Failed" if failed else "Succeeded"
        conditions.append(
            _cond(
                kind,
                end,
                reason=f"PyTorchJob{kind}",
                message=f"PyTorchJob {namespace}/{name} {kind.lower()}.",
            )
        )
        status["completionTime"] = ts(end)
    status["conditions"] = conditions
    status["lastReconcileTime"] = ts(end if end is not None else created + 1)
    spec: dict[str, Any] = {
        "pytorchReplicaSpecs": {
            "Master": replica(1, gpus if master_gpus is None else master_gpus),
            "Worker": replica(workers, gpus),
        },
        "runPolicy": {"cleanPodPolicy": "None", "suspend": False},
    }
    policy: dict[str, Any] = {}
    if queue is not None:
        policy["queue"] = queue
    if priority_class is not None:
        policy["priorityClass"] = priority_class
    if policy:
        spec["runPolicy"]["schedulingPolicy"] = {"minAvailable": workers + 1, **policy}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": _meta(name, namespace, created),
        "spec": spec,
        "status": status,
    }


def volcano_job(
    name: str,
    namespace: str = "team-c",
    created: float = 0,
    running: float | None = 30,
    end: float | None = 1830,
    phase: str | None = None,
    tasks: Sequence[tuple[str, int, int]] = (("ps", 1, 0), ("worker", 2, 4)),
    queue: str = "research",
    priority_class: str | None = "high",
) -> dict[str, Any]:
    """A Volcano ``batch.volcano.sh/v1alpha1`` Job: ``tasks`` = (name, replicas, GPUs per pod); its status
    holds one condition per phase it went through (``status``, ``lastTransitionTime``)."""
    if phase is None:
        phase = "Pending" if running is None else ("Running" if end is None else "Completed")
    conditions = [{"lastTransitionTime": ts(created + 1), "status": "Pending"}]
    if running is not None:
        conditions.append({"lastTransitionTime": ts(running), "status": "Running"})
    last = created + 1 if running is None else running
    if end is not None:
        conditions.append({"lastTransitionTime": ts(end), "status": phase})
        last = end
    pods = sum(r for _, r, _ in tasks)
    spec: dict[str, Any] = {
        "maxRetry": 3,
        "minAvailable": pods,
        "plugins": {"env": [], "svc": []},
        "queue": queue,
        "schedulerName": "volcano",
        "tasks": [
            {
                "maxRetry": 3,
                "minAvailable": r,
                "name": t,
                "replicas": r,
                "template": pod_template(
                    container(g if g else None, cpu="16", memory="64Gi", name=t), restart="OnFailure"
                ),
            }
            for t, r, g in tasks
        ],
    }
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": _meta(name, namespace, created),
        "spec": spec,
        "status": {
            "conditions": conditions,
            "minAvailable": pods,
            "running": pods if phase == "Running" else 0,
            "state": {"lastTransitionTime": ts(last), "phase": phase},
            "succeeded": pods if phase == "Completed" else 0,
            "version": 1,
        },
    }


def podgroup(
    name: str,
    namespace: str = "team-c",
    created: float = 0,
    scheduled: float | None = 20,
    phase: str = "Running",
    members: int = 2,
    gpus: str = "8",
    queue: str = "research",
    owners: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A Volcano ``scheduling.volcano.sh/v1beta1`` PodGroup (minMember pods sharing minResources)."""
    conditions = []
    if scheduled is not None:
        conditions.append(
            {
                "lastTransitionTime": ts(scheduled),
                "reason": "tasks in gang are ready to be scheduled",
                "status": "True",
                "transitionID": "6f0a1c4e-3d2b-4a8f-9c7e-1b5d2e3f4a6b",
                "type": "Scheduled",
            }
        )
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": _meta(name, namespace, created, owners=owners),
        "spec": {
            "minMember": members,
            "minResources": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": gpus},
            "minTaskMember": {"worker": members},
            "queue": queue,
        },
        "status": {"conditions": conditions, "phase": phase, "running": members if phase == "Running" else 0},
    }


def workload(
    name: str,
    namespace: str = "team-a",
    created: float = 0,
    admitted: float | None = 120,
    finished: float | None = 3720,
    queue: str = "team-a-queue",
    priority: int | None = 1000,
    priority_class: str | None = "prod",
    count: int = 2,
    template: dict[str, Any] | None = None,
    owner: Mapping[str, Any] | None = None,
    past: int | None = None,
    version: str = "v1beta1",
    failed: bool = False,
) -> dict[str, Any]:
    """A Kueue Workload: QuotaReserved and Admitted at ``admitted``, Finished at ``finished``."""
    conditions = []
    if admitted is not None:
        conditions += [
            {
                "lastTransitionTime": ts(admitted),
                "message": "Quota reserved in ClusterQueue cluster-queue",
                "observedGeneration": 1,
                "reason": "QuotaReserved",
                "status": "True",
                "type": "QuotaReserved",
            },
            {
                "lastTransitionTime": ts(admitted),
                "message": "The workload is admitted",
                "observedGeneration": 1,
                "reason": "Admitted",
                "status": "True",
                "type": "Admitted",
            },
        ]
    if finished is not None:
        conditions.append(
            {
                "lastTransitionTime": ts(finished),
                "message": "Job finished successfully" if not failed else "Job failed",
                "observedGeneration": 1,
                "reason": "Failed" if failed else "Succeeded",
                "status": "True",
                "type": "Finished",
            }
        )
    spec: dict[str, Any] = {
        "active": True,
        "podSets": [
            {
                "count": count,
                "name": "main",
                "template": template or pod_template(container(4, cpu="32", memory="256Gi")),
            }
        ],
        "queueName": queue,
    }
    if priority is not None:
        spec["priority"] = priority
    if priority_class is not None:
        if version == "v1beta1":
            spec["priorityClassName"] = priority_class
            spec["priorityClassSource"] = "kueue.x-k8s.io/workloadpriorityclass"
        else:
            spec["priorityClassRef"] = {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": priority_class,
            }
    status: dict[str, Any] = {"conditions": conditions}
    if admitted is not None:
        status["admission"] = {
            "clusterQueue": "cluster-queue",
            "podSetAssignments": [
                {
                    "count": count,
                    "flavors": {"cpu": "default-flavor", "nvidia.com/gpu": "a100"},
                    "name": "main",
                }
            ],
        }
    if past is not None:
        status["accumulatedPastExexcutionTimeSeconds"] = past
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Workload",
        "metadata": _meta(
            name,
            namespace,
            created,
            labels={"kueue.x-k8s.io/job-uid": _uid(f"{namespace}/{owner['name']}") if owner else "none"},
            owners=[owner] if owner else (),
        ),
        "spec": spec,
        "status": status,
    }


def priority_class(name: str, value: int, default: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "description": f"{name} jobs",
        "globalDefault": default,
        "kind": "PriorityClass",
        "metadata": {
            "creationTimestamp": ts(-86_400),
            "generation": 1,
            "name": name,
            "resourceVersion": "412",
            "uid": _uid(name),
        },
        "preemptionPolicy": "PreemptLowerPriority",
        "value": value,
    }


def kubectl_list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": list(items), "kind": "List", "metadata": {"resourceVersion": ""}}


def write(path: Path, data: Any) -> Path:
    """``data`` as kubectl prints it: keys sorted, four-space indents."""
    path.write_text(json.dumps(data, indent=4, sort_keys=True) + "\n")
    return path


# --- DCGM exporter scrapes -----------------------------------------------------------------------


def dcgm_labels(
    pod: str, namespace: str, gpu: int = 0, host: str = "dgx-a100-01", **extra: str
) -> dict[str, str]:
    """The labels dcgm-exporter puts on a GPU's series in Kubernetes mode, as Prometheus stores them."""
    return {
        "DCGM_FI_DRIVER_VERSION": "550.90.07",
        "Hostname": host,
        "UUID": f"GPU-{sum(map(ord, host + pod)) % 10**8:08d}-d9cf-fef3-62e9-d92044ab{gpu:04d}",
        "container": "train",
        "device": f"nvidia{gpu}",
        "gpu": str(gpu),
        "instance": "10.20.0.17:9400",
        "job": "nvidia-dcgm-exporter",
        "modelName": "NVIDIA A100-SXM4-80GB",
        "namespace": namespace,
        "pci_bus_id": f"00000000:{0x07 + gpu * 8:02X}:00.0",
        "pod": pod,
        **extra,
    }


def series(metric: str, labels: Mapping[str, str], points: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """One series of a range query's matrix: ``points`` = (seconds after T0, value)."""
    base = T0.timestamp()
    return {
        "metric": {"__name__": metric, **labels},
        "values": [[base + t, f"{v:g}" if v == v else "NaN"] for t, v in points],
    }


def prometheus_matrix(*all_series: dict[str, Any]) -> dict[str, Any]:
    """``GET /api/v1/query_range`` as Prometheus answers it."""
    return {"status": "success", "data": {"resultType": "matrix", "result": list(all_series)}}
