"""Alibaba PAI ``cluster-trace-gpu-v2020`` job / task / instance tables → canonical jobs.

The trace of Weng et al., "MLaaS in the Wild: Workload Analysis and Scheduling
in Large-Scale Heterogeneous GPU Clusters" (NSDI'22): two months (July-August
2020) of a PAI cluster with over 6,500 GPUs. A *job* is split into *tasks* of
different roles (``ps``, ``worker``, ``evaluator``, ...); each task runs
``inst_num`` identical *instances* (containers) with the same per-instance
request. The CSVs have no header row; their columns are in the ``.header``
files of alibaba/clusterdata ``cluster-trace-gpu-v2020/data/`` (bundled in
``traces/pai2020/headers/``).

Units, from the official README: times are seconds, shifted by a constant
(shifted to UTC+8 they keep the real time of day and weekday); ``plan_cpu`` is
percent of a core (600 = 6 vCPUs); ``plan_mem`` is GB; ``plan_gpu`` is percent
of a GPU (50 = half a GPU, 200 = two GPUs); ``gpu_type`` is the GPU model the
task ran on (``MISC`` = older K40m/K80/M60-class cards).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from gpureplay.cluster.catalog import alias_table
from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import AdaptedTrace, count_dropped, file_sha256
from gpureplay.traces.generic import drop_blank_rows, reading
from gpureplay.traces.schema import Rule, canonical_model_expr, cast_columns, check_rules, validate_jobs

#: Column order of ``pai_job_table.csv`` (``pai_job_table.header``).
JOB_COLUMNS: tuple[str, ...] = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
#: Column order of ``pai_task_table.csv`` (``pai_task_table.header``).
TASK_COLUMNS: tuple[str, ...] = (
    "job_name", "task_name", "inst_num", "status", "start_time", "end_time",
    "plan_cpu", "plan_mem", "plan_gpu", "gpu_type",
)  # fmt: skip
#: Column order of ``pai_instance_table.csv`` (``pai_instance_table.header``).
INSTANCE_COLUMNS: tuple[str, ...] = (
    "job_name", "task_name", "inst_name", "worker_name", "inst_id", "status",
    "start_time", "end_time", "machine",
)  # fmt: skip

#: Canonical column → raw task-table column, for messages.
RAW_NAMES: dict[str, str] = {
    "num_pods": "inst_num",
    "gpu_milli": "plan_gpu",
    "cpu_milli": "plan_cpu",
    "mem_mib": "plan_mem",
    "gpu_models": "gpu_type",
    "duration": "end_time",
}

_TIME = pl.Float64()
_KEY = ("job_name", "task_name")


def load_pai2020(
    job_table: str | Path,
    task_table: str | Path,
    instance_table: str | Path | None = None,
) -> AdaptedTrace:
    """Read the PAI 2020 tables as canonical jobs, one job per task.

    Parameters
    ----------
    job_table
        ``pai_job_table.csv`` (headerless): gives each job's submission time
        (``start_time``) and user.
    task_table
        ``pai_task_table.csv`` (headerless): one row per (job, task) with the
        instance count, per-instance requests, GPU type and launch/end times.
    instance_table
        Optional ``pai_instance_table.csv`` (headerless). When given, a task's
        run time is that of its instances (latest end − earliest start) rather
        than the task row's ``end_time - start_time``.

    Returns
    -------
    AdaptedTrace
        One canonical job per task: ``num_pods = inst_num``,
        ``gpu_milli = plan_gpu * 10``, ``cpu_milli = plan_cpu * 10``,
        ``mem_mib = plan_mem * 1024``, ``gpu_models = [gpu_type]`` when it is a
        catalog model, ``submit_time`` = the job's submission (job table
        ``start_time``, first job at 0), ``user`` = the job's user, ``queue``
        ``"default"``. ``job_id`` numbers the tasks 1..n in
        ``(submit_time, job_name, task_name)`` order. ``source_row`` is the
        task-table row.

    Raises
    ------
    InputError
        For a file with the wrong number of columns, a value that is not a
        number, a negative request, a non-integer ``inst_num``, an end before
        a start, or a job or task listed twice; each names file, row, column.

    Notes
    -----
    Dropped and counted, one reason per task (first that applies): the job is
    not in the job table; the job has no submission time; the task never ran
    (status ``Waiting``); the task was still running at the end of the trace
    (status ``Running``: no end); it has no instances (``inst_num`` 0 or
    empty); it has no start or no end time. Following the official analysis
    notebook (``cluster-trace-gpu-v2020/analysis/utils.py``), a time of 0 means
    "not recorded", like an empty cell.

    Changed and counted: requests that are not whole milli-GPUs, milli-cores or
    MiB are rounded up (a replay should not ask for less than the task did);
    ``plan_gpu`` above 100 that is not whole GPUs (e.g. 150) is rounded up to
    whole GPUs, since a pod above one GPU takes whole cards; empty requests
    read as 0; a ``gpu_type`` that is not in the GPU catalog gives no model
    constraint; with the instance table, a task none of whose instances has
    both times keeps the task row's times.

    ``gpu_type`` is the model the task *ran on*; using it as the allowed model
    keeps the real cluster's placement by model, which a what-if on another
    fleet may want to clear. Tasks of one job become separate canonical jobs
    arriving together (PS and workers are not gang-scheduled as one). The
    task-row start is the task's launch; the README puts the wait for
    resources between the job's submission and its tasks' launch, and the
    instance table shows any further wait before the containers started. The
    group-tag table (workload semantics) is not used, and every job goes to
    queue ``"default"``: PAI's quota groups are not in the trace.
    """
    job_file, task_file = (
        resolve_data_path(job_table, "trace file"),
        resolve_data_path(task_table, "trace file"),
    )
    inst_file = resolve_data_path(instance_table, "trace file") if instance_table is not None else None
    changes: Counter[str] = Counter()

    with reading(str(job_file)):
        jobs = _read_headerless(job_file, JOB_COLUMNS).collect()
    jobs = cast_columns(drop_blank_rows(jobs, changes), {"start_time": _TIME}, str(job_file))
    check_rules(
        jobs, [Rule("job_name", ~pl.col("job_name").is_first_distinct(), "job listed twice")], str(job_file)
    )

    task_source = str(task_file)
    with reading(task_source):
        tasks = _read_headerless(task_file, TASK_COLUMNS).collect()
    tasks = cast_columns(
        drop_blank_rows(tasks, changes),
        {c: pl.Float64() for c in ("inst_num", "start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu")},
        task_source,
    )
    check_rules(tasks, [
        Rule("task_name", ~pl.struct(*_KEY).is_first_distinct(), "task listed twice for its job",
             pl.format("{}/{}", *_KEY)),
        Rule("inst_num", (pl.col("inst_num") < 0) | (pl.col("inst_num") != pl.col("inst_num").round(0)),
             "inst_num must be a whole number >= 0"),
        *(Rule(c, pl.col(c) < 0, f"{c} must be >= 0") for c in ("plan_cpu", "plan_mem", "plan_gpu")),
    ], task_source)  # fmt: skip

    plan = (
        tasks.lazy()
        .join(
            jobs.lazy().select(
                "job_name",
                _recorded(pl.col("start_time")).alias("_submit"),
                pl.col("user").alias("_user"),
                pl.lit(True).alias("_has_job"),
            ),
            on="job_name",
            how="left",
        )
        .with_columns(
            _recorded(pl.col("start_time")).alias("_start"), _recorded(pl.col("end_time")).alias("_end")
        )
    )

    if inst_file is not None:
        plan = _instance_times(plan, inst_file, changes)
    else:
        plan = plan.with_columns(
            pl.lit(None, dtype=_TIME).alias("_i_start"), pl.lit(None, dtype=_TIME).alias("_i_end")
        )
    merged = plan.with_columns(
        pl.when(pl.col("_i_start").is_not_null()).then(pl.lit("instances")).otherwise(pl.lit("task"))
        .alias("source_duration_from"),
        pl.coalesce("_i_start", "_start").alias("_run_start"),
        pl.coalesce("_i_end", "_end").alias("_run_end"),
    ).collect()  # fmt: skip

    for reason, bad in (
        ("task's job is not in the job table: dropped", pl.col("_has_job").is_null()),
        ("job has no submission time (job start_time empty or 0): dropped", pl.col("_submit").is_null()),
        ("task never ran (status Waiting): dropped", pl.col("status") == "Waiting"),
        (
            "task still running at the trace end (status Running, no end): dropped",
            pl.col("status") == "Running",
        ),
        ("task has no instances (inst_num empty or 0): dropped", pl.col("inst_num").fill_null(0) == 0),
        ("task has no start_time (empty or 0): dropped", pl.col("_run_start").is_null()),
        ("task has no end_time (empty or 0): dropped", pl.col("_run_end").is_null()),
    ):
        kept = merged.filter(~bad.fill_null(False))
        count_dropped(changes, merged, kept, reason)
        merged = kept
    fallback = (
        int((merged.get_column("source_duration_from") == "task").sum()) if inst_file is not None else 0
    )
    if fallback:
        changes["no instance with both start and end times: run time from the task row"] += fallback

    check_rules(merged, [
        Rule("end_time", pl.col("_run_end") < pl.col("_run_start"), "task ends before it starts",
             pl.format("start_time={} end_time={}", "_run_start", "_run_end")),
    ], task_source)  # fmt: skip

    table = _demand(merged.lazy(), changes).collect()
    first = table.get_column("submit_time").min()
    if isinstance(first, float) and first > 0:
        changes["submit_time shifted so the first job arrives at 0"] += table.height
    table = (
        table.lazy()
        .with_columns(pl.col("submit_time") - pl.col("submit_time").min())
        .sort("submit_time", "source_job_name", "source_task_name")
        .with_row_index("job_id", offset=1)
        .with_columns(pl.col("job_id").cast(pl.Int64()))
        .collect()
    )
    files = [job_file, task_file, *([inst_file] if inst_file is not None else [])]
    source = " + ".join(str(f) for f in files)
    return AdaptedTrace(validate_jobs(table, task_source, RAW_NAMES), source, file_sha256(*files), changes)


def _read_headerless(file: Path, names: tuple[str, ...]) -> pl.LazyFrame:
    """Scan a headerless PAI CSV with every column as text, numbering data rows from 1.

    A first row that repeats the header (a copy someone gave a header) is skipped.
    """
    lazy = pl.scan_csv(file, has_header=False, infer_schema=False)
    with reading(str(file)):
        width = len(lazy.collect_schema())
    if width != len(names):
        raise InputError.single(
            f"expected {len(names)} columns ({', '.join(names)}) but the file has {width}", str(file)
        )
    lazy = lazy.rename(dict(zip(lazy.collect_schema().names(), names, strict=True)))
    first = lazy.head(1).collect()
    if first.height and first.row(0) == names:
        lazy = lazy.slice(1)
    return lazy.with_row_index("source_row", offset=1)


def _recorded(time: pl.Expr) -> pl.Expr:
    """A PAI time, with 0 read as "not recorded" (the official notebook does the same)."""
    return pl.when(time > 0).then(time)


def _instance_times(merged: pl.LazyFrame, file: Path, changes: Counter[str]) -> pl.LazyFrame:
    """Join each task's earliest instance start and latest instance end (instances with both times).

    The instance table is the largest of the trace (hundreds of millions of
    bytes), so it stays lazy: only the first bad rows, a few counts and the
    per-task spans are collected.
    """
    source = str(file)
    inst = _read_headerless(file, INSTANCE_COLUMNS).select("source_row", *_KEY, "start_time", "end_time")
    typed = inst.with_columns(
        pl.col("start_time").cast(_TIME, strict=False).alias("_s"),
        pl.col("end_time").cast(_TIME, strict=False).alias("_e"),
    )
    unreadable = pl.any_horizontal(
        pl.col(raw).is_not_null() & (pl.col(raw).str.strip_chars() != "") & pl.col(typed_col).is_null()
        for raw, typed_col in (("start_time", "_s"), ("end_time", "_e"))
    )
    both = _recorded(pl.col("_s")).is_not_null() & _recorded(pl.col("_e")).is_not_null()
    backwards = both & (pl.col("_e") < pl.col("_s"))
    with reading(source):
        bad_rows, bad_count, back_rows, back_count, untimed, spans = pl.collect_all([
            typed.filter(unreadable).head(10),
            typed.select(unreadable.sum()),
            typed.filter(backwards).head(10),
            typed.select(backwards.sum()),
            typed.select((~both).sum()),
            typed.filter(both).group_by(*_KEY)
            .agg(pl.col("_s").min().alias("_i_start"), pl.col("_e").max().alias("_i_end")),
        ])  # fmt: skip
    if bad_count.item():
        try:
            cast_columns(bad_rows.select("source_row", "start_time", "end_time"),
                         {"start_time": _TIME, "end_time": _TIME}, source)  # fmt: skip
        except InputError as err:
            raise InputError(err.problems, total=int(bad_count.item())) from None
    if back_count.item():
        try:
            check_rules(back_rows, [
                Rule("end_time", pl.lit(True), "instance ends before it starts",
                     pl.format("start_time={} end_time={}", "_s", "_e")),
            ], source)  # fmt: skip
        except InputError as err:
            raise InputError(err.problems, total=int(back_count.item())) from None
    if untimed.item():
        changes["instance rows without both start and end times: not used for run times"] += int(
            untimed.item()
        )
    orphans = (
        spans.lazy().join(merged.select(*_KEY), on=list(_KEY), how="anti").select(pl.len()).collect().item()
    )
    if orphans:
        changes["tasks seen only in the instance table: ignored"] += int(orphans)
    return merged.join(spans.lazy(), on=list(_KEY), how="left")


def _whole(value: pl.Expr, scale: float) -> tuple[pl.Expr, pl.Expr]:
    """``ceil(value * scale)`` and whether that changed the value (nulls read as 0).

    The product is rounded to 6 decimals first so binary noise (``33.3 * 10``)
    does not round a whole number up.
    """
    exact = (value.fill_null(0.0) * scale).round(6)
    return exact.ceil().cast(pl.Int64()), exact != exact.ceil()


def _demand(tasks: pl.LazyFrame, changes: Counter[str]) -> pl.LazyFrame:
    """Per-instance requests → canonical demand columns (changes counted)."""
    gpu, gpu_rounded = _whole(pl.col("plan_gpu"), 10.0)
    cpu, cpu_rounded = _whole(pl.col("plan_cpu"), 10.0)
    mem, mem_rounded = _whole(pl.col("plan_mem"), 1024.0)
    partial_gpus = (gpu > 1000) & (gpu % 1000 != 0)
    models = set(alias_table().values())
    model = canonical_model_expr(pl.col("gpu_type"))
    known_model = model.is_in(list(models))
    flags = {
        "plan_gpu empty: read as 0 (no GPU)": pl.col("plan_gpu").is_null(),
        "plan_cpu empty: read as 0": pl.col("plan_cpu").is_null(),
        "plan_mem empty: read as 0": pl.col("plan_mem").is_null(),
        "plan_gpu not a whole milli-GPU: rounded up": gpu_rounded,
        "plan_gpu above 100% and not whole GPUs: rounded up to whole GPUs": partial_gpus,
        "plan_cpu not a whole milli-core: rounded up": cpu_rounded,
        "plan_mem not a whole MiB: rounded up": mem_rounded,
        "gpu_type not in the GPU catalog: no GPU-model constraint": pl.col("gpu_type").is_not_null()
        & ~known_model,
    }
    counts = tasks.select(
        *(flag.fill_null(False).sum().alias(reason) for reason, flag in flags.items())
    ).collect()
    for reason in flags:
        if counts[reason][0]:
            changes[reason] += int(counts[reason][0])
    return tasks.select(
        pl.col("_submit").alias("submit_time"),
        (pl.col("_run_end") - pl.col("_run_start")).alias("duration"),
        pl.col("inst_num").cast(pl.Int64()).alias("num_pods"),
        pl.when(partial_gpus)
        .then((gpu / 1000).ceil().cast(pl.Int64()) * 1000)
        .otherwise(gpu)
        .alias("gpu_milli"),
        pl.when(known_model).then(pl.concat_list(model)).alias("gpu_models"),
        cpu.alias("cpu_milli"),
        mem.alias("mem_mib"),
        pl.lit("default").alias("queue"),
        pl.col("_user").alias("user"),
        pl.col("source_row"),
        pl.col("job_name").alias("source_job_name"),
        pl.col("task_name").alias("source_task_name"),
        pl.col("status").alias("source_status"),
        pl.col("gpu_type").alias("source_gpu_type"),
        pl.col("plan_gpu").alias("source_plan_gpu"),
        pl.col("source_duration_from"),
    )
