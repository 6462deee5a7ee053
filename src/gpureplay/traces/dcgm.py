"""Per-job GPU utilisation from a DCGM exporter scrape (``trace.dcgm``).

NVIDIA's dcgm-exporter serves DCGM fields as Prometheus gauges, one series per GPU, labelled with
the GPU (``gpu``: its index on the node, ``UUID``, ``device``, ``modelName``, ``Hostname``) and, in
its Kubernetes mode (``DCGM_EXPORTER_KUBERNETES=true``, the GPU Operator's default), with the pod
that holds the GPU: ``pod``, ``namespace``, ``container`` (dcgm-exporter
``internal/pkg/transformation/const.go``; ``pod_name``, ``pod_namespace``, ``container_name`` under
its ``--use-old-namespace`` option). When Prometheus scrapes the exporter through a Service without
``honor_labels``, its own target labels win and the exporter's are renamed ``exported_pod``,
``exported_namespace``, ``exported_container``: those are read first. A GPU no pod holds has no pod
label, and its series is not a job's.

Two metrics are read (DCGM field identifiers, DCGM's ``dcgm_fields.h``):

- ``DCGM_FI_DEV_GPU_UTIL``: the percent (0..100) of time a kernel ran over the sample period
  (what ``nvidia-smi`` shows as GPU-Util);
- ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``: the ratio (0..1) of time the graphics or compute engine was
  active, a profiling metric, which also works on MIG instances. It is what
  :mod:`gpureplay.workload.utilization` calls a job's ``gpu_util``, so a job that has both keeps this one.

The file is either

- the Prometheus HTTP API's answer to a range query, ``GET /api/v1/query_range?query=
  DCGM_FI_DEV_GPU_UTIL&start=...&end=...&step=...`` (Prometheus ``docs/querying/api.md``, "Range
  queries"): ``{"status": "success", "data": {"resultType": "matrix", "result": [{"metric":
  {"__name__": ..., labels}, "values": [[<unix seconds>, "<value>"], ...]}, ...]}}``; an instant
  query's ``"resultType": "vector"`` (``"value": [t, "v"]``) is read too. Each series must keep
  its ``__name__`` (query the raw metric, not an expression of it); or
- a CSV export with a header, one row per sample: ``timestamp`` (or ``time`` / ``Time``: Unix
  seconds, or RFC 3339), ``value`` (or ``Value``), ``__name__`` (or ``metric``: the metric's name),
  and any label as its own column (``namespace``, ``pod``, ``container``, ``gpu``, ``UUID``,
  ``Hostname``, ...), as Grafana's or ``promtool``'s table exports are laid out.

Samples join jobs by pod (:func:`dcgm_utilization`); each job's value is the mean of its samples,
scaled to 0..1: under a range query's fixed step, the mean over the time its GPUs were sampled.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from gpureplay.errors import InputError, Problem
from gpureplay.paths import resolve_data_path
from gpureplay.traces.kubectl import PodOwner, read_json_values
from gpureplay.traces.schema import MAX_SHOWN

__all__ = ["METRICS", "dcgm_utilization", "read_dcgm"]

#: The metrics read, and what a value is divided by to be a ratio of 0..1.
METRICS: dict[str, float] = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 1.0, "DCGM_FI_DEV_GPU_UTIL": 100.0}

#: The pod's identity: each label spelling in the order it is read (Prometheus's ``exported_`` rename
#: first, then dcgm-exporter's current and old names).
_POD = ("exported_pod", "pod", "pod_name")
_NAMESPACE = ("exported_namespace", "namespace", "pod_namespace")

#: Pod labels naming the owner job, as the controllers set them (batch/v1 Job: ``job-name`` and
#: ``batch.kubernetes.io/job-name``; Kubeflow: ``training.kubeflow.org/job-name``; Volcano:
#: ``volcano.sh/job-name``), read as written, as Prometheus sanitises a label name
#: (``[^a-zA-Z0-9_]`` -> ``_``: dcgm-exporter's pod-label option) and with kube-state-metrics'
#: ``label_`` prefix (``kube_pod_labels``).
_OWNER_LABELS: dict[str, str] = {
    "batch.kubernetes.io/job-name": "Job",
    "job-name": "Job",
    "training.kubeflow.org/job-name": "PyTorchJob",
    "volcano.sh/job-name": "VolcanoJob",
}

_PYTORCH_POD = re.compile(r"(?P<name>.+)-(?:master|worker)-[0-9]+")
_INDEXED_POD = re.compile(r"(?P<name>.+)-[0-9]+")
#: A Job's pods: ``<job>-<5 random characters>`` (``generateName``), ``<job>-<index>-<5>`` when Indexed.
_JOB_POD = re.compile(r"(?P<name>.+)-[a-z0-9]{5}")
_INDEXED_JOB_POD = re.compile(r"(?P<name>.+)-[0-9]+-[a-z0-9]{5}")

_TIME_COLUMNS = ("timestamp", "time", "Time")
_VALUE_COLUMNS = ("value", "Value")
_NAME_COLUMNS = ("__name__", "metric")


def _sanitized(label: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", label)


_OWNER_SPELLINGS: list[tuple[str, str]] = [
    (spelling, kind)
    for label, kind in _OWNER_LABELS.items()
    for spelling in (label, _sanitized(label), f"label_{_sanitized(label)}")
]


@dataclass
class Scrape:
    """The samples of a scrape: one row per series and one per sample.

    Attributes
    ----------
    series
        ``series`` (int), ``where`` (the series' place in the file, for messages), ``metric``,
        ``namespace``, ``pod`` (null: no pod), ``owner_kind``, ``owner_name`` (from owner labels).
    samples
        ``series``, ``time`` (Unix seconds), ``value`` (a ratio, 0..1).
    source
        The file.
    skipped
        Reasons samples or series were not read, with counts.
    """

    series: pl.DataFrame
    samples: pl.DataFrame
    source: str
    skipped: Counter[str]


class _Series:
    """Collects series and samples, with every problem naming the file, the series and the field."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.rows: list[dict[str, Any]] = []
        self.ids: list[np.ndarray] = []
        self.times: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        self.problems: list[Problem] = []
        self.skipped: Counter[str] = Counter()

    def problem(
        self, message: str, key: str | None = None, row: int | None = None, column: str | None = None
    ) -> None:
        self.problems.append(Problem(message, self.source, row=row, column=column, key=key))

    def add(self, where: str, labels: Mapping[str, str]) -> tuple[int, float] | None:
        """Register one series; ``(its id, its divisor)``, or None when its metric is not read."""
        metric = labels.get("__name__")
        if metric not in METRICS:
            self.skipped[f"series of metric {metric} not read (only {', '.join(METRICS)})"] += 1
            return None
        owner_kind = owner_name = None
        for spelling, kind in _OWNER_SPELLINGS:
            if labels.get(spelling):
                owner_kind, owner_name = kind, labels[spelling]
                break
        self.rows.append(
            {
                "series": len(self.rows),
                "where": where,
                "metric": metric,
                "namespace": next((labels[k] for k in _NAMESPACE if labels.get(k)), None),
                "pod": next((labels[k] for k in _POD if labels.get(k)), None),
                "owner_kind": owner_kind,
                "owner_name": owner_name,
            }
        )
        return len(self.rows) - 1, METRICS[metric]

    def samples(self, series: int, times: np.ndarray, values: np.ndarray) -> None:
        self.ids.append(np.full(len(times), series, dtype=np.int64))
        self.times.append(times)
        self.values.append(values)

    def scrape(self) -> Scrape:
        if self.problems:
            raise InputError(self.problems[:MAX_SHOWN], total=len(self.problems))
        schema = {
            "series": pl.Int64(),
            "where": pl.String(),
            "metric": pl.String(),
            "namespace": pl.String(),
            "pod": pl.String(),
            "owner_kind": pl.String(),
            "owner_name": pl.String(),
        }
        series = pl.DataFrame(self.rows, schema=schema)
        samples = pl.DataFrame(
            {
                "series": np.concatenate(self.ids) if self.ids else np.empty(0, np.int64),
                "time": np.concatenate(self.times) if self.times else np.empty(0),
                "value": np.concatenate(self.values) if self.values else np.empty(0),
            }
        )
        return Scrape(series, samples, self.source, self.skipped)


def _checked(collect: _Series, values: np.ndarray, divisor: float, where: str) -> np.ndarray | None:
    """``values`` as ratios; out of range: a problem naming the first bad sample (NaN is dropped later)."""
    bad = np.flatnonzero(~np.isnan(values) & ((values < 0) | (values > divisor)))
    if bad.size:
        unit = "a percent, 0..100" if divisor == 100.0 else "a ratio, 0..1"
        collect.problem(
            f"{values[bad[0]]:g} is out of range ({unit}; {bad.size} such samples)",
            key=where.format(int(bad[0])),
        )
        return None
    return values / divisor


def _read_json(collect: _Series, data: Any) -> None:
    """Series of a Prometheus HTTP API answer (``query_range``: a matrix; ``query``: a vector)."""
    if not isinstance(data, dict) or "status" not in data:
        collect.problem('not a Prometheus API answer: expected {"status": ..., "data": {...}}')
        return
    if data["status"] != "success":
        collect.problem(
            f"the query failed ({data.get('errorType')}: {data.get('error')}); export a successful answer",
            key="status",
        )
        return
    body = data.get("data")
    kind = body.get("resultType") if isinstance(body, dict) else None
    if kind not in ("matrix", "vector"):
        collect.problem(
            f"must be matrix (query_range) or vector (query) (found {kind!r})", key="data.resultType"
        )
        return
    result = body.get("result") if isinstance(body, dict) else None
    if not isinstance(result, list):
        collect.problem(f"must be a list of series (found {result!r})", key="data.result")
        return
    for i, entry in enumerate(result):
        where = f"data.result[{i}]"
        labels = entry.get("metric") if isinstance(entry, dict) else None
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            collect.problem(
                f"a series' labels are a mapping of strings (found {labels!r})", key=f"{where}.metric"
            )
            continue
        if "__name__" not in labels:
            collect.problem(
                "no __name__ label: query the raw metric (DCGM_FI_DEV_GPU_UTIL or "
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE), not an expression of it, so each series keeps its name",
                key=f"{where}.metric",
            )
            continue
        points = entry.get("values") if kind == "matrix" else [entry.get("value")]
        field = "values" if kind == "matrix" else "value"
        if not isinstance(points, list):
            collect.problem(
                f"must be a list of [time, value] pairs (found {points!r})", key=f"{where}.{field}"
            )
            continue
        added = collect.add(where, labels)
        if added is None:
            continue
        series, divisor = added
        times = np.empty(len(points))
        values = np.empty(len(points))
        ok = True
        for j, point in enumerate(points):
            at = f"{where}.values[{j}]" if kind == "matrix" else f"{where}.value"
            try:
                if not isinstance(point, list) or len(point) != 2 or not isinstance(point[1], str):
                    raise ValueError
                times[j] = float(point[0])
                values[j] = float(point[1])  # the API writes values as strings ("NaN", "+Inf" too)
            except (TypeError, ValueError):
                collect.problem(f'a sample is [<unix seconds>, "<value>"] (found {point!r})', key=at)
                ok = False
                break
        if not ok:
            continue
        ratios = _checked(
            collect, values, divisor, f"{where}.values[{{}}]" if kind == "matrix" else f"{where}.value"
        )
        if ratios is not None:
            collect.samples(series, times, ratios)


def _read_csv(collect: _Series, text: str) -> None:
    """Series of a CSV export: one row per sample (see the module notes for the columns)."""
    try:
        df = pl.read_csv(text.encode(), infer_schema=False)
    except pl.exceptions.PolarsError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        collect.problem(f"cannot read the CSV: {first}")
        return
    names = {
        "time": next((c for c in _TIME_COLUMNS if c in df.columns), None),
        "value": next((c for c in _VALUE_COLUMNS if c in df.columns), None),
        "__name__": next((c for c in _NAME_COLUMNS if c in df.columns), None),
    }
    missing = [
        " or ".join(spellings)
        for key, spellings in (
            ("time", _TIME_COLUMNS),
            ("value", _VALUE_COLUMNS),
            ("__name__", _NAME_COLUMNS),
        )
        if names[key] is None
    ]
    if missing:
        collect.problem(
            f"missing column(s) {'; '.join(missing)} (found {', '.join(df.columns)}); a CSV export has one "
            "row per sample: timestamp, value, __name__ and the labels"
        )
        return
    time_col, value_col, name_col = str(names["time"]), str(names["value"]), str(names["__name__"])
    df = df.with_row_index("row", offset=1)
    stamps = pl.col(time_col).str.strip_chars()
    df = df.with_columns(
        _t=stamps.cast(pl.Float64, strict=False).fill_null(
            stamps.str.to_datetime(time_zone="UTC", strict=False).dt.epoch("us").cast(pl.Float64) / 1e6
        ),
        _v=pl.col(value_col).str.strip_chars().cast(pl.Float64, strict=False),
    )
    for column, raw, what in (
        ("_t", time_col, "a time (Unix seconds or RFC 3339)"),
        ("_v", value_col, "a number"),
    ):
        bad = df.filter(pl.col(column).is_null())
        if bad.height:
            row, value = bad.row(0, named=True)["row"], bad.row(0, named=True)[raw]
            collect.problem(
                f"cannot read {value!r} as {what} ({bad.height:,} such rows)", row=int(row), column=raw
            )
    if collect.problems:
        return
    labels = [c for c in df.columns if c not in ("row", time_col, value_col, "_t", "_v")]
    # One series per distinct set of labels (the metric's name among them), in order of first appearance.
    for part in df.partition_by(labels, maintain_order=True):
        head_row = part.row(0, named=True)
        given = {
            c if c != name_col else "__name__": head_row[c] for c in labels if head_row[c] not in (None, "")
        }
        added = collect.add(f"row {head_row['row']}", given)
        if added is None:
            continue
        series, divisor = added
        values = part["_v"].to_numpy()
        outside = np.flatnonzero(~np.isnan(values) & ((values < 0) | (values > divisor)))
        if outside.size:
            unit = "a percent, 0..100" if divisor == 100.0 else "a ratio, 0..1"
            collect.problem(
                f"{values[outside[0]]:g} is out of range for {given['__name__']} ({unit})",
                row=int(part["row"][int(outside[0])]),
                column=value_col,
            )
            continue
        collect.samples(series, part["_t"].to_numpy(), values / divisor)


def read_dcgm(path: str | Path, max_file_mib: float) -> Scrape:
    """Read a scrape of ``DCGM_FI_DEV_GPU_UTIL`` / ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (module notes).

    Parameters
    ----------
    path
        A Prometheus API JSON answer or a CSV export (``.gz`` too), found as traces are.
    max_file_mib
        Largest size read, MiB (``trace.max_file_mib``).

    Returns
    -------
    Scrape
        Its series and samples, values as ratios (0..1).

    Raises
    ------
    FileNotFoundError
        When the file is not found.
    InputError
        Naming the file and the series (``data.result[3].values[17]``) or row and column: a failed
        query, a series without ``__name__``, a sample that is not ``[time, "value"]``, a value out of
        range (GPU_UTIL above 100, ENGINE_ACTIVE above 1, or negative), a CSV without its columns or
        with a time or value that does not read.
    """
    file = resolve_data_path(path, "DCGM scrape")
    source = str(file)
    head = _head(file, source)
    collect = _Series(source)
    if head.startswith(("{", "[")):
        values = read_json_values(
            file, source, max_file_mib, "export a Prometheus /api/v1/query_range answer, or a CSV"
        )
        if len(values) != 1:
            raise InputError.single(
                f"expected one Prometheus API answer, found {len(values)} JSON documents", source
            )
        _read_json(collect, values[0])
    else:
        limit = int(max_file_mib * 2**20)
        opener = gzip.open if file.name.lower().endswith(".gz") else open
        with opener(file, "rb") as raw:
            data = raw.read(limit + 1)
        if len(data) > limit:
            raise InputError.single(
                f"the file is larger than trace.max_file_mib = {max_file_mib:g} MiB; export a shorter range "
                "or a coarser step, or raise trace.max_file_mib",
                source,
            )
        _read_csv(collect, data.decode("utf-8-sig", errors="replace"))
    return collect.scrape()


def _head(file: Path, source: str) -> str:
    opener = gzip.open if file.name.lower().endswith(".gz") else open
    try:
        with opener(file, "rb") as raw:
            return raw.read(4096).decode("utf-8-sig", errors="replace").lstrip()
    except (OSError, EOFError) as err:
        raise InputError.single(f"cannot read the file: {err}", source) from err


def _owner_index(owners: Mapping[int, PodOwner]) -> dict[tuple[str, str | None, str], int]:
    """``(namespace, kind, name) -> job row``; a Volcano Job also under ``(namespace, "task", job-task)``."""
    index: dict[tuple[str, str | None, str], int] = {}
    for row, owner in sorted(owners.items()):
        index.setdefault((owner.namespace, owner.kind, owner.name), row)
        for task in owner.tasks:
            index.setdefault((owner.namespace, "task", f"{owner.name}-{task}"), row)
    return index


def _job_of(
    index: Mapping[tuple[str, str | None, str], int],
    namespace: str,
    pod: str,
    owner: tuple[str | None, str | None],
) -> int | None:
    """The job row a pod belongs to: by its owner label, else by the pod-name patterns of each kind."""
    kind, name = owner
    if kind is not None and name is not None:
        return index.get((namespace, kind, name))
    found = _PYTORCH_POD.fullmatch(pod)
    if found and (namespace, "PyTorchJob", found["name"]) in index:
        return index[(namespace, "PyTorchJob", found["name"])]
    found = _INDEXED_POD.fullmatch(pod)
    if found and (namespace, "task", found["name"]) in index:
        return index[(namespace, "task", found["name"])]
    for pattern in (_JOB_POD, _INDEXED_JOB_POD):
        found = pattern.fullmatch(pod)
        if found and (namespace, "Job", found["name"]) in index:
            return index[(namespace, "Job", found["name"])]
    return None


def dcgm_utilization(
    path: str | Path, owners: Mapping[int, PodOwner], max_file_mib: float
) -> tuple[dict[int, float], Path, Counter[str]]:
    """Each job's mean GPU utilisation (0..1) from a DCGM exporter scrape.

    Parameters
    ----------
    path
        The scrape (:func:`read_dcgm`).
    owners
        Job row -> whose pods its are and when it ran (:class:`gpureplay.traces.kubectl.PodOwner`).
    max_file_mib
        Largest size read, MiB.

    Returns
    -------
    tuple
        ``{job row: mean}`` for the jobs with samples (the others keep the workload's utilisation
        model, ``workload.utilization``), the file, and what was skipped or assumed, with counts.

    Notes
    -----
    A series belongs to the job its pod's owner label names (``job-name``,
    ``training.kubeflow.org/job-name``, ``volcano.sh/job-name``, when the export carries pod labels),
    else to the job its pod's name is made from: ``<name>-master-<i>`` / ``<name>-worker-<i>`` (a
    PyTorchJob, training-operator's naming), ``<name>-<task>-<i>`` (a Volcano Job's task), or
    ``<name>-<5 characters>`` and ``<name>-<index>-<5 characters>`` (a batch/v1 Job's
    ``generateName`` pods), in the pod's namespace. A Kueue Workload's pods are its owner job's.
    Samples outside the job's run (start to end, or to the export for a running job) are not its
    own (a later job of the same name) and are left out; NaN samples too. A job's value is the mean
    of its ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` samples, else of ``DCGM_FI_DEV_GPU_UTIL`` / 100.
    """
    scrape = read_dcgm(path, max_file_mib)
    changes: Counter[str] = Counter({f"DCGM: {r}": n for r, n in scrape.skipped.items()})
    index = _owner_index(owners)
    rows: list[int | None] = []
    for series in scrape.series.iter_rows(named=True):
        if series["pod"] is None or series["namespace"] is None:
            changes["DCGM: series without a pod or namespace label (a GPU no pod held): not a job's"] += 1
            rows.append(None)
            continue
        row = _job_of(index, series["namespace"], series["pod"], (series["owner_kind"], series["owner_name"]))
        if row is None:
            changes["DCGM: series of a pod that is no job's of the trace: not read"] += 1
        rows.append(row)
    matched = scrape.series.with_columns(job=pl.Series(rows, dtype=pl.Int64)).filter(
        pl.col("job").is_not_null()
    )
    windows = pl.DataFrame(
        {
            "job": list(owners),
            "start": [o.start for o in owners.values()],
            "end": [o.end for o in owners.values()],
        },
        schema={"job": pl.Int64(), "start": pl.Float64(), "end": pl.Float64()},
    )
    samples = scrape.samples.join(matched.select("series", "job", "metric"), on="series").join(
        windows, on="job"
    )
    nan = samples.filter(pl.col("value").is_nan()).height
    if nan:
        changes["DCGM: NaN samples left out"] += nan
    samples = samples.filter(~pl.col("value").is_nan())
    inside = samples.filter((pl.col("time") >= pl.col("start")) & (pl.col("time") <= pl.col("end")))
    if inside.height < samples.height:
        changes["DCGM: samples outside their job's run (a reused pod name) left out"] += (
            samples.height - inside.height
        )
    # Prefer the engine-active ratio (the gpu_util the reclaim model reads) where a job has it.
    per_job = (
        inside.group_by("job", "metric")
        .agg(pl.col("value").mean().alias("mean"))
        .with_columns(
            rank=pl.col("metric").replace_strict({m: i for i, m in enumerate(METRICS)}, return_dtype=pl.Int32)
        )
        .sort("job", "rank")
        .unique("job", keep="first")
    )
    result = {int(j): float(m) for j, m in per_job.select("job", "mean").iter_rows()}
    if result:
        changes[f"GPU utilisation from DCGM ({Path(scrape.source).name}): source_gpu_util"] += len(result)
    if len(owners) > len(result):
        changes["no DCGM samples: GPU utilisation from workload.utilization"] += len(owners) - len(result)
    return result, Path(scrape.source), changes
