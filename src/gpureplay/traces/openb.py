"""Alibaba ``cluster-trace-gpu-v2023`` ("openb") pod lists → canonical jobs.

The openb pod lists come with the FGD paper (Weng et al., "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent", USENIX ATC'23). Each row is one Kubernetes pod of a production
cluster: CPU and memory requests, ``num_gpu`` whole GPUs or a share of one GPU
(``gpu_milli``), the GPU models it may run on (``gpu_spec``), its QoS class, and
its creation / scheduling / deletion times in seconds from the trace start.
See ``traces/openb/SOURCE.md`` for the file's caveats.

Two readings are supported:

``timed``
    A replay of the real arrivals: a pod arrives at ``creation_time`` and runs
    for ``deletion_time - scheduled_time`` seconds once placed.
``packing``
    What the FGD paper does (hkust-adsl/kubernetes-scheduler-simulator): the
    times are ignored, pods arrive one after the other in file order and never
    leave, and the question is how full the cluster gets before pods no longer
    fit. This is the only reading of the ``multigpuNN`` variants, which carry no
    QoS and no times.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Literal

import polars as pl

from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import AdaptedTrace, file_sha256
from gpureplay.traces.generic import drop_blank_rows, model_list_expr, reading
from gpureplay.traces.schema import Rule, cast_columns, check_rules, validate_jobs

#: Columns every openb pod list has (the ``multigpuNN`` variants have only these).
BASE_COLUMNS: tuple[str, ...] = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
#: Time columns of the full pod lists, seconds from the trace start.
TIME_COLUMNS: tuple[str, ...] = ("creation_time", "deletion_time", "scheduled_time")

#: QoS class → canonical priority (higher is more important).
#:
#: openb mixes Alibaba's colocation classes (LS = latency-sensitive online
#: service, BE = best-effort batch, as in Koordinator's QoS model) with the
#: Kubernetes QoS classes Guaranteed and Burstable. LS pods are the online
#: services that colocation protects first; Guaranteed pods reserve exactly what
#: they request and Kubernetes evicts them last among the native classes;
#: Burstable may be throttled or evicted before them; BE runs on leftover
#: capacity and is the first to be suppressed or evicted. Hence
#: LS 3 > Guaranteed 2 > Burstable 1 > BE 0, and only BE is preemptible.
QOS_PRIORITY: dict[str, int] = {"LS": 3, "Guaranteed": 2, "Burstable": 1, "BE": 0}

#: The QoS class whose pods may be preempted.
PREEMPTIBLE_QOS = "BE"

#: Canonical column → raw openb column, so messages name the file's column.
RAW_NAMES: dict[str, str] = {
    "mem_mib": "memory_mib",
    "submit_time": "creation_time",
    "duration": "deletion_time",
    "gpu_models": "gpu_spec",
    "priority": "qos",
}

_RAW_DTYPES: dict[str, pl.DataType] = {
    "cpu_milli": pl.Int64(),
    "memory_mib": pl.Int64(),
    "num_gpu": pl.Int64(),
    "gpu_milli": pl.Int64(),
    "creation_time": pl.Float64(),
    "deletion_time": pl.Float64(),
    "scheduled_time": pl.Float64(),
}

_OPTIONAL_TEXT = ("gpu_spec", "qos", "pod_phase")


def load_openb(
    path: str | Path = "openb/openb_pod_list_default.csv.gz",
    timing: Literal["timed", "packing"] = "timed",
    pending: Literal["drop", "keep"] = "drop",
    packing_duration: float = 1e9,
) -> AdaptedTrace:
    """Read an openb pod list as canonical jobs, one single-pod job per row.

    Parameters
    ----------
    path
        A pod list (``.csv`` or ``.csv.gz``); relative paths are looked up with
        :func:`gpureplay.paths.resolve_data_path`. The default is the real
        trace of 8,152 pods.
    timing
        ``"timed"``: ``submit_time = creation_time`` (shifted so the first kept
        pod arrives at 0) and ``duration = deletion_time - scheduled_time``.
        ``"packing"``: pod ``k`` (1-based file row) arrives at ``k - 1`` seconds
        and never departs (``duration = packing_duration``), as in the FGD
        experiments.
    pending
        Timed mode only. ``"drop"`` removes the pods that were never scheduled
        (empty ``scheduled_time``, phase Pending); ``"keep"`` replays them with
        ``duration = deletion_time - creation_time``, the time they stayed in
        the real cluster. Packing mode keeps every pod, as FGD does.
    packing_duration
        Run time given to every pod in packing mode: long enough that no pod
        leaves during the replay.

    Returns
    -------
    AdaptedTrace
        ``job_id`` is the 1-based file row, ``num_pods`` is 1, ``queue`` is
        ``"default"`` (openb has no queue or tenant field) and ``user`` is null.
        Every drop and change is counted in ``changes``.

    Raises
    ------
    InputError
        For a missing column, a value that is not a number, ``num_gpu > 1`` with
        ``gpu_milli != 1000``, ``num_gpu == 1`` with ``gpu_milli`` outside
        1..1000, an unknown QoS class or GPU model, a pod deleted before it was
        scheduled (negative duration), or ``timing="timed"`` on a file without
        time columns; each names the file, row and column.

    Notes
    -----
    Demand: ``num_gpu`` 0 is a CPU-only pod (``gpu_milli`` 0); ``num_gpu`` 1
    asks for ``gpu_milli`` thousandths of one GPU (below 1000 it shares the GPU,
    the case FGD is about); ``num_gpu`` k > 1 asks for k whole GPUs of one node
    (``gpu_milli = k * 1000``). ``gpu_spec`` "A|B" lists the GPU models the pod
    accepts; names go through the GPU catalog (``V100M16`` → ``V100``,
    ``V100M32`` → ``V100-32GB``). QoS maps to priority and preemption as in
    :data:`QOS_PRIORITY`.

    Pods still running when the trace ends have ``deletion_time`` equal to the
    file's largest deletion time; they are kept (their duration is a lower
    bound), flagged in ``source_censored`` and counted.
    """
    if timing not in ("timed", "packing"):
        raise InputError.single(
            f"timing must be 'timed' or 'packing', not {timing!r}", "load_openb", column="timing"
        )
    if pending not in ("drop", "keep"):
        raise InputError.single(
            f"pending must be 'drop' or 'keep', not {pending!r}", "load_openb", column="pending"
        )
    if not (math.isfinite(packing_duration) and packing_duration > 0):
        raise InputError.single(
            f"packing_duration must be a finite number > 0, not {packing_duration!r}",
            "load_openb",
            column="packing_duration",
        )
    file = resolve_data_path(path, "trace file")
    source = str(file)
    with reading(source):
        raw = pl.scan_csv(file, infer_schema=False).with_row_index("source_row", offset=1).collect()

    found = [c for c in raw.columns if c != "source_row"]
    missing = [c for c in BASE_COLUMNS if c not in found]
    present_times = [c for c in TIME_COLUMNS if c in found]
    if present_times and len(present_times) != len(TIME_COLUMNS):
        missing += [c for c in TIME_COLUMNS if c not in found]
    if missing:
        raise InputError.single(f"missing column(s) {', '.join(missing)}; found {', '.join(found)}", source)
    has_times = bool(present_times)
    if timing == "timed" and not has_times:
        raise InputError.single(
            "this pod list has no time columns (creation_time, deletion_time, scheduled_time): it is a "
            "packing-only variant (like the multigpuNN lists); load it with timing='packing'",
            source,
        )

    raw = raw.with_columns(
        pl.lit(None, dtype=pl.String()).alias(c)
        for c in (*_OPTIONAL_TEXT, *TIME_COLUMNS)
        if c not in raw.columns
    )
    changes: Counter[str] = Counter()
    raw = drop_blank_rows(raw, changes)
    raw = cast_columns(raw, _RAW_DTYPES, source)
    raw = raw.with_columns(pl.col(*_OPTIONAL_TEXT).str.strip_chars())
    check_rules(raw, _demand_rules(has_qos="qos" in found), source)

    pods = _with_demand(raw.lazy(), has_qos="qos" in found)
    if has_times:
        last = raw.get_column("deletion_time").max()
        pods = pods.with_columns(
            (pl.col("source_deletion_time") == pl.lit(last, dtype=pl.Float64()))
            .fill_null(False)
            .alias("source_censored"),
            pl.col("source_scheduled_time").is_null().alias("_pending"),
        )
    else:
        pods = pods.with_columns(
            pl.lit(None, dtype=pl.Boolean()).alias("source_censored"), _pending=pl.lit(False)
        )

    if timing == "timed":
        pods = _timed(pods, pending, changes, source)
    else:
        pods = _packing(pods, packing_duration, changes)

    if "qos" not in found:
        changes["no qos column: priority 0 and preemptible for every pod"] += raw.height
    flagged = pods.select(
        pl.col("_cpu_with_milli").sum().alias("cpu_with_milli"),
        pl.col("_duplicate_models").sum().alias("dup"),
    ).collect()
    if flagged["cpu_with_milli"][0]:
        changes["num_gpu 0 with gpu_milli > 0: gpu_milli set to 0"] += int(flagged["cpu_with_milli"][0])
    if flagged["dup"][0]:
        changes["gpu_spec names a model twice: duplicate removed"] += int(flagged["dup"][0])

    jobs = (
        pods.drop("_cpu_with_milli", "_duplicate_models", "_pending").sort("submit_time", "job_id").collect()
    )
    return AdaptedTrace(validate_jobs(jobs, source, RAW_NAMES), source, file_sha256(file), changes)


def _demand_rules(*, has_qos: bool) -> list[Rule]:
    num_gpu, milli = pl.col("num_gpu"), pl.col("gpu_milli")
    rules = [
        Rule("num_gpu", num_gpu < 0, "num_gpu must be >= 0"),
        Rule("gpu_milli", milli < 0, "gpu_milli must be >= 0"),
        Rule("gpu_milli", (num_gpu > 1) & (milli != 1000),
             "a pod with num_gpu > 1 asks for whole GPUs, so gpu_milli must be 1000",
             pl.format("num_gpu={} gpu_milli={}", num_gpu, milli)),
        Rule("gpu_milli", (num_gpu == 1) & ((milli < 1) | (milli > 1000)),
             "a pod with num_gpu 1 needs gpu_milli in 1..1000 (its share of one GPU)"),
    ]  # fmt: skip
    if has_qos:
        known = ", ".join(QOS_PRIORITY)
        rules.append(Rule("qos", pl.col("qos").is_in(list(QOS_PRIORITY)).not_() | pl.col("qos").is_null(),
                          f"unknown QoS class; known: {known}"))  # fmt: skip
    return rules


def _with_demand(raw: pl.LazyFrame, *, has_qos: bool) -> pl.LazyFrame:
    """Canonical demand, priority and source columns; one pod per row."""
    num_gpu, milli = pl.col("num_gpu"), pl.col("gpu_milli")
    models = model_list_expr(pl.col("gpu_spec"), "|")
    if has_qos:
        priority = pl.col("qos").replace_strict(QOS_PRIORITY, default=None, return_dtype=pl.Int32())
        preemptible = pl.col("qos") == PREEMPTIBLE_QOS
    else:
        priority = pl.lit(0, dtype=pl.Int32())
        preemptible = pl.lit(True)
    return raw.with_columns(
        pl.col("source_row").cast(pl.Int64()).alias("job_id"),
        pl.lit(1, dtype=pl.Int32()).alias("num_pods"),
        # Int64 until validate_jobs, which reports a value too large for Int32 with its row.
        pl.when(num_gpu == 0).then(0).when(num_gpu == 1).then(milli).otherwise(num_gpu * 1000)
        .alias("gpu_milli"),
        pl.when(models.list.len() > 0).then(models.list.unique(maintain_order=True)).alias("gpu_models"),
        (models.list.len() > models.list.n_unique()).fill_null(False).alias("_duplicate_models"),
        ((num_gpu == 0) & (milli > 0)).alias("_cpu_with_milli"),
        pl.col("memory_mib").alias("mem_mib"),
        pl.lit("default").alias("queue"),
        pl.lit(None, dtype=pl.String()).alias("user"),
        priority.alias("priority"),
        preemptible.alias("preemptible"),
        pl.col("name").alias("source_name"),
        pl.col("qos").alias("source_qos"),
        pl.col("pod_phase").alias("source_pod_phase"),
        pl.col("gpu_spec").alias("source_gpu_spec"),
        num_gpu.alias("source_num_gpu"),
        milli.alias("source_gpu_milli"),
        pl.col("creation_time").alias("source_creation_time"),
        pl.col("deletion_time").alias("source_deletion_time"),
        pl.col("scheduled_time").alias("source_scheduled_time"),
    ).drop("name", "memory_mib", "num_gpu", "gpu_spec", "qos", "pod_phase", *TIME_COLUMNS)  # fmt: skip


def _timed(pods: pl.LazyFrame, pending: str, changes: Counter[str], source: str) -> pl.LazyFrame:
    """Real arrivals: creation → submit, scheduled..deletion → run time."""
    n_pending = int(pods.select(pl.col("_pending").sum()).collect().item())
    if pending == "drop":
        pods = pods.filter(~pl.col("_pending"))
        if n_pending:
            changes["never scheduled (Pending, empty scheduled_time): dropped"] += n_pending
    elif n_pending:
        changes["never scheduled (Pending): kept, duration = deletion_time - creation_time"] += n_pending
    start = (
        pl.when(pl.col("_pending"))
        .then(pl.col("source_creation_time"))
        .otherwise(pl.col("source_scheduled_time"))
    )
    pods = pods.with_columns(
        pl.col("source_creation_time").alias("submit_time"),
        (pl.col("source_deletion_time") - start).alias("duration"),
    )
    kept = pods.collect()
    check_rules(kept, [
        Rule("deletion_time", pl.col("duration") < 0,
             "the pod was deleted before it started (negative duration)",
             pl.format("start={} deletion_time={}", start, pl.col("source_deletion_time"))),
    ], source)  # fmt: skip
    censored = int(kept.get_column("source_censored").sum())
    if censored:
        changes["still running at the trace end (censored): kept, duration is a lower bound"] += censored
    first = kept.get_column("submit_time").min()
    if isinstance(first, float) and first > 0:
        changes["submit_time shifted so the first pod arrives at 0"] += kept.height
    return kept.lazy().with_columns(pl.col("submit_time") - pl.col("submit_time").min())


def _packing(pods: pl.LazyFrame, packing_duration: float, changes: Counter[str]) -> pl.LazyFrame:
    """FGD reading: arrivals in file order one second apart, nobody leaves."""
    n = int(pods.select(pl.len()).collect().item())
    changes["packing: submit_time = file row - 1 (arrival order, 1 s apart)"] += n
    changes["packing: pod never departs (duration = packing_duration)"] += n
    return pods.with_columns(
        (pl.col("source_row") - 1).cast(pl.Float64()).alias("submit_time"),
        pl.lit(packing_duration, dtype=pl.Float64()).alias("duration"),
    )
