"""Alibaba PAI 2020 adapter on small headerless tables written in the official format."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.pai2020 import INSTANCE_COLUMNS, JOB_COLUMNS, TASK_COLUMNS, load_pai2020

JOBS = """\
j1,i1,u1,Terminated,1000.0,2000.0
j2,i2,u2,Terminated,1500.0,3000.0
j3,i3,u3,Waiting,1600.0,
j4,i4,u1,Running,1700.0,0.0
j5,i5,u2,Terminated,0.0,0.0
"""

# Rows: 1 fractional 2-instance worker; 2 CPU-only ps (plan_gpu empty); 3 two whole GPUs;
# 4 150 % of a GPU; 5 never ran; 6 still running; 7 orphan; 8 job without submission time;
# 9 no end time; 10 a quarter GPU, 33.3 % of a core, 1.0001 GB and a gpu_type outside the catalog.
TASKS = """\
j1,worker,2.0,Terminated,1010.0,1510.0,600.0,29.296875,50.0,T4
j1,ps,1.0,Terminated,1005.0,1600.0,400.0,10.0,,
j2,tensorflow,1.0,Failed,1600.0,2600.0,800.0,60.0,200.0,V100M32
j2,evaluator,1.0,Terminated,1700.0,1800.0,100.0,1.5,150.0,MISC
j3,worker,1.0,Waiting,0.0,0.0,600.0,20.0,100.0,P100
j4,worker,1.0,Running,1710.0,0.0,600.0,20.0,100.0,V100
j9,worker,1.0,Terminated,100.0,200.0,600.0,20.0,100.0,T4
j5,worker,1.0,Terminated,100.0,200.0,600.0,20.0,100.0,T4
j2,w2,1.0,Terminated,1700.0,,600.0,20.0,100.0,T4
j1,cpu,1.0,Terminated,1000.0,1100.0,33.3,1.0001,25.0,CPU
"""

INSTANCES = """\
j1,worker,inst_a,w_a,i1,Terminated,1020.0,1400.0,m1
j1,worker,inst_b,w_b,i1,Terminated,1030.0,1450.0,m2
j2,tensorflow,inst_c,w_c,i2,Terminated,0.0,0.0,m3
j8,worker,inst_d,w_d,i8,Terminated,100.0,200.0,m4
"""


FILES = {"jobs": "pai_job_table.csv", "tasks": "pai_task_table.csv", "instances": "pai_instance_table.csv"}


def _write(tmp_path: Path, jobs: str = JOBS, tasks: str = TASKS, instances: str | None = None) -> list[Path]:
    paths = [tmp_path / FILES["jobs"], tmp_path / FILES["tasks"]]
    paths[0].write_text(jobs)
    paths[1].write_text(tasks)
    if instances is not None:
        paths.append(tmp_path / FILES["instances"])
        paths[2].write_text(instances)
    return paths


def _by_task(jobs: pl.DataFrame) -> dict[tuple[str, str], dict[str, object]]:
    return {(r["source_job_name"], r["source_task_name"]): r for r in jobs.iter_rows(named=True)}


def test_column_orders_match_the_official_header_files() -> None:
    for name, columns in (("job", JOB_COLUMNS), ("task", TASK_COLUMNS), ("instance", INSTANCE_COLUMNS)):
        header = resolve_data_path(f"pai2020/headers/pai_{name}_table.header").read_text().strip()
        assert tuple(header.split(",")) == columns


def test_tasks_become_canonical_jobs(tmp_path: Path) -> None:
    trace = load_pai2020(*_write(tmp_path))
    jobs = trace.jobs
    assert jobs.height == 5
    assert jobs["job_id"].to_list() == [1, 2, 3, 4, 5]
    assert jobs.select("submit_time", "job_id").rows() == sorted(jobs.select("submit_time", "job_id").rows())
    rows = _by_task(jobs)

    worker = rows[("j1", "worker")]
    assert [worker[c] for c in ("num_pods", "gpu_milli", "cpu_milli", "mem_mib")] == [2, 500, 6000, 30000]
    assert worker["gpu_models"] == ["T4"]
    assert worker["submit_time"] == 0.0 and worker["duration"] == 500.0
    assert worker["user"] == "u1" and worker["queue"] == "default"
    assert worker["source_row"] == 1 and worker["source_duration_from"] == "task"

    ps = rows[("j1", "ps")]
    assert (ps["gpu_milli"], ps["gpu_models"], ps["source_plan_gpu"]) == (0, None, None)

    tf = rows[("j2", "tensorflow")]
    assert (tf["gpu_milli"], tf["gpu_models"]) == (2000, ["V100-32GB"])
    assert (tf["submit_time"], tf["duration"]) == (500.0, 1000.0)
    assert tf["source_status"] == "Failed"

    evaluator = rows[("j2", "evaluator")]
    assert [evaluator[c] for c in ("gpu_milli", "gpu_models", "source_plan_gpu")] == [2000, ["MISC"], 150.0]

    cpu = rows[("j1", "cpu")]
    assert (cpu["gpu_milli"], cpu["cpu_milli"], cpu["mem_mib"], cpu["gpu_models"]) == (250, 333, 1025, None)
    assert cpu["source_gpu_type"] == "CPU"


def test_every_drop_and_change_is_counted(tmp_path: Path) -> None:
    changes = load_pai2020(*_write(tmp_path)).changes
    assert changes == {
        "task's job is not in the job table: dropped": 1,
        "job has no submission time (job start_time empty or 0): dropped": 1,
        "task never ran (status Waiting): dropped": 1,
        "task still running at the trace end (status Running, no end): dropped": 1,
        "task has no end_time (empty or 0): dropped": 1,
        "plan_gpu empty: read as 0 (no GPU)": 1,
        "plan_gpu above 100% and not whole GPUs: rounded up to whole GPUs": 1,
        "plan_mem not a whole MiB: rounded up": 1,
        "gpu_type not in the GPU catalog: no GPU-model constraint": 1,
        "submit_time shifted so the first job arrives at 0": 5,
    }


def test_instance_table_overrides_task_durations(tmp_path: Path) -> None:
    trace = load_pai2020(*_write(tmp_path, instances=INSTANCES))
    rows = _by_task(trace.jobs)
    assert rows[("j1", "worker")]["duration"] == 1450.0 - 1020.0
    assert rows[("j1", "worker")]["source_duration_from"] == "instances"
    assert rows[("j2", "tensorflow")]["duration"] == 1000.0  # its only instance has no times
    assert trace.changes["instance rows without both start and end times: not used for run times"] == 1
    assert trace.changes["tasks seen only in the instance table: ignored"] == 1
    assert trace.changes["no instance with both start and end times: run time from the task row"] == 4
    assert "pai_instance_table.csv" in trace.source


@pytest.mark.parametrize(
    ("which", "row", "column", "text"),
    [
        ("tasks", 3, "plan_gpu", TASKS.replace("800.0,60.0,200.0", "800.0,60.0,abc")),
        ("tasks", 2, "inst_num", TASKS.replace("j1,ps,1.0", "j1,ps,1.5")),
        ("tasks", 1, "end_time", TASKS.replace("1010.0,1510.0", "1010.0,1009.0")),
        ("tasks", 4, "plan_cpu", TASKS.replace("1800.0,100.0", "1800.0,-100.0")),
        ("tasks", 11, "task_name", TASKS + "j1,worker,1.0,Terminated,1.0,2.0,1.0,1.0,1.0,T4\n"),
        ("jobs", 2, "start_time", JOBS.replace("1500.0", "yesterday")),
        ("jobs", 5, "job_name", JOBS.replace("j5,", "j1,")),
        ("instances", 2, "end_time", INSTANCES.replace("1030.0,1450.0", "1030.0,soon")),
        ("instances", 1, "end_time", INSTANCES.replace("1020.0,1400.0", "1020.0,1010.0")),
    ],
)
def test_bad_values_name_file_row_and_column(
    tmp_path: Path, which: str, row: int, column: str, text: str
) -> None:
    kwargs = {"jobs": JOBS, "tasks": TASKS, which: text}
    with pytest.raises(InputError) as err:
        load_pai2020(*_write(tmp_path, **kwargs))
    problem = err.value.problems[0]
    assert problem.source.endswith(FILES[which])
    assert (problem.row, problem.column) == (row, column)


def test_wrong_column_count_and_empty_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="expected 10 columns"):
        load_pai2020(*_write(tmp_path, tasks="j1,worker,1.0,Terminated,1010.0,1510.0\n"))
    with pytest.raises(InputError, match="the file is empty") as err:
        load_pai2020(*_write(tmp_path, tasks=""))
    assert err.value.problems[0].source.endswith(FILES["tasks"])


def test_a_header_row_is_skipped(tmp_path: Path) -> None:
    paths = _write(tmp_path, tasks=",".join(TASK_COLUMNS) + "\n" + TASKS)
    trace = load_pai2020(*paths)
    assert trace.jobs.height == 5
    assert _by_task(trace.jobs)[("j1", "worker")]["source_row"] == 1
