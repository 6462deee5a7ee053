"""SenseTime Helios ``cluster_log.csv`` adapter, on small logs in the documented schema.

The Helios job logs are not bundled (traces/../sensetime-helios/SOURCE.md), so every case is a
fixture written here in the HeliosData README's column order and time format.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.traces.helios import CPU_ONLY, CPU_ROUNDED, NEVER_STARTED, NO_NODE_NUM, UNEVEN, load_helios

HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
LOG = HEADER + (
    "101,u1,vcA,16,12,2,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:01:00,2020-04-01 01:01:00,3600,50\n"
    "102,u2,vcB,0,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:05,2020-04-01 00:00:10,5,5\n"
    "103,u1,vcA,1,2,0,FAILED,2020-04-01 00:00:20,2020-04-01 00:00:30,2020-04-01 00:00:31,1,10\n"
    "104,u3,vcA,2,6,,CANCELLED,2020-04-01 00:00:40,,,,\n"
    "105,u3,vcB,12,5,3,COMPLETED,2020-04-01 00:01:00,2020-04-01 00:02:00,2020-04-01 00:03:00,60,60\n"
    "106,u4,vcC,10,8,3,TIMEOUT,2020-04-01 00:01:30,2020-04-01 00:02:00,2020-04-01 00:12:00,600,30\n"
    "107,u4,vcC,4,8,,NODE_FAIL,2020-04-01 00:01:40,2020-04-01 00:02:00,2020-04-01 00:02:00,0,20\n"
)


def _write(tmp_path: Path, text: str, name: str = "cluster_log.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_gpu_jobs_pods_and_changes(tmp_path: Path) -> None:
    trace = load_helios(_write(tmp_path, LOG))
    jobs = trace.jobs
    assert jobs.select(
        "job_id", "submit_time", "duration", "num_pods", "gpu_milli", "cpu_milli", "queue", "user",
        "source_job_id", "source_state", "source_queue", "source_node_num",
    ).rows() == [
        (1, 0.0, 3600.0, 2, 8000, 6000, "vcA", "u1", "101", "COMPLETED", 50.0, 2),
        (3, 10.0, 1.0, 1, 1000, 2000, "vcA", "u1", "103", "FAILED", 10.0, 0),
        (5, 50.0, 60.0, 3, 4000, 1667, "vcB", "u3", "105", "COMPLETED", 60.0, 3),
        # 10 GPUs on 3 nodes cannot be even: 2 pods of 5 GPUs.
        (6, 80.0, 600.0, 2, 5000, 4000, "vcC", "u4", "106", "TIMEOUT", 30.0, 3),
        (7, 90.0, 0.0, 1, 4000, 8000, "vcC", "u4", "107", "NODE_FAIL", 20.0, None),
    ]  # fmt: skip
    assert trace.changes == {
        CPU_ONLY: 1,
        NEVER_STARTED: 1,
        NO_NODE_NUM: 2,
        UNEVEN: 1,
        CPU_ROUNDED: 1,
    }
    assert len(trace.sha256) == 64 and trace.source.endswith("cluster_log.csv")


def test_cpu_jobs_kept_when_asked(tmp_path: Path) -> None:
    trace = load_helios(_write(tmp_path, LOG), gpu_only=False)
    jobs = trace.jobs
    assert jobs.height == 6
    cpu = jobs.filter(pl.col("source_job_id") == "102").row(0, named=True)
    assert (cpu["submit_time"], cpu["num_pods"], cpu["gpu_milli"], cpu["cpu_milli"]) == (0.0, 1, 0, 4000)
    # The first kept submission is now job 102's, so every time moves by 10 s.
    assert jobs.filter(pl.col("source_job_id") == "101")["submit_time"].item() == 10.0
    assert CPU_ONLY not in trace.changes and trace.changes[NEVER_STARTED] == 1


def test_multi_node_cpu_job_is_one_pod_per_node(tmp_path: Path) -> None:
    text = (
        HEADER + "9,u,vc,0,64,4,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:01,2020-04-01 00:00:11,10,1\n"
    )
    jobs = load_helios(_write(tmp_path, text), gpu_only=False).jobs
    assert jobs.select("num_pods", "gpu_milli", "cpu_milli").row(0) == (4, 0, 16000)


def test_sorted_by_submit_then_job_id(tmp_path: Path) -> None:
    jobs = load_helios(_write(tmp_path, LOG)).jobs
    assert jobs.equals(jobs.sort("submit_time", "job_id"))
    assert jobs["submit_time"][0] == 0.0


def test_bad_time_names_row_and_column(tmp_path: Path) -> None:
    bad = LOG.replace("2020-04-01 00:02:00,2020-04-01 00:03:00", "2020-04-01 00:02:00,April 1st", 1)
    path = _write(tmp_path, bad)
    with pytest.raises(InputError) as err:
        load_helios(path)
    assert str(err.value).startswith(f"{path}, row 5, column 'end_time': cannot read 'April 1st'")


def test_bad_queue_delay_names_the_raw_queue_column(tmp_path: Path) -> None:
    path = _write(tmp_path, LOG.replace(",3600,50\n", ",3600,soon\n"))
    with pytest.raises(InputError) as err:
        load_helios(path)
    assert str(err.value) == f"{path}, row 1, column 'queue': cannot read 'soon' as Float64"


def test_missing_vc_is_reported_against_vc(tmp_path: Path) -> None:
    path = _write(tmp_path, LOG.replace("101,u1,vcA,", "101,u1,,"))
    with pytest.raises(InputError) as err:
        load_helios(path)
    assert str(err.value).startswith(f"{path}, row 1, column 'vc': missing value")


def test_missing_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "job_id,user,vc,gpu_num\n1,u,v,1\n")
    with pytest.raises(InputError, match="missing column\\(s\\) cpu_num, node_num, state"):
        load_helios(path)


def test_nothing_left(tmp_path: Path) -> None:
    text = HEADER + "1,u,vc,0,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:01,2020-04-01 00:00:02,1,1\n"
    with pytest.raises(InputError, match="no job left"):
        load_helios(_write(tmp_path, text))
