"""Every validation rule of the canonical tables, fed from small bad files.

Each case writes a CSV in ``tmp_path``, reads it the way an adapter does (all text, a 1-based
``source_row``), and checks that the error names the file, the data row and the column. The
last tests run one bad raw value through each real-trace adapter.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.traces.helios import load_helios
from gpureplay.traces.itp import load_itp
from gpureplay.traces.philly import load_philly
from gpureplay.traces.philly_raw import load_philly_raw
from gpureplay.traces.schema import (
    JOBS_SCHEMA,
    NODES_SCHEMA,
    max_time_limit,
    validate_jobs,
    validate_nodes,
)

JOBS_HEADER = "job_id,submit_time,duration,num_pods,gpu_milli,gpu_models,cpu_milli,mem_mib,gpu_mem_mib,queue"
GOOD_JOBS = [
    "1,0,10,1,1000,,4000,1024,,q1",
    "2,5,20,2,8000,V100M32,8000,2048,,q1",
    "3,7,30,1,250,A100-80GB|V100,1000,512,4096,q2",
]
NODES_HEADER = ",".join(NODES_SCHEMA)
GOOD_NODES = [
    "0,n0,V100,8,16384,64000,512000,0|0|0|0|1|1|1|1,0,0,0,",
    "1,n1,A100-40GB,2,40960,32000,256000,0|1,1,0,0,",
    "2,n2,,0,0,16000,64000,,2,1,0,",
]


def _read(path: Path, list_columns: dict[str, pl.DataType]) -> pl.DataFrame:
    """Read as an adapter does; ``a|b`` cells become lists (CSV has no list type)."""
    df = pl.read_csv(path, infer_schema=False).with_row_index("source_row", offset=1)
    return df.with_columns(
        pl.col(c).str.split("|").list.eval(pl.element().cast(t.inner, strict=False)).alias(c)  # type: ignore[attr-defined]
        for c, t in list_columns.items()
        if c in df.columns
    )


def _write(tmp_path: Path, header: str, rows: list[str], name: str) -> Path:
    path = tmp_path / name
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def jobs_from(tmp_path: Path, rows: list[str], header: str = JOBS_HEADER) -> tuple[Path, pl.DataFrame]:
    path = _write(tmp_path, header, rows, "jobs.csv")
    return path, _read(path, {"gpu_models": JOBS_SCHEMA["gpu_models"]})


def nodes_from(tmp_path: Path, rows: list[str], header: str = NODES_HEADER) -> tuple[Path, pl.DataFrame]:
    path = _write(tmp_path, header, rows, "nodes.csv")
    return path, _read(path, {"numa_of_gpu": NODES_SCHEMA["numa_of_gpu"]})


def _replace(rows: list[str], row: int, column: str, value: str, header: str) -> list[str]:
    """``rows`` with the cell at 1-based ``row`` and ``column`` set to ``value``."""
    index = header.split(",").index(column)
    cells = rows[row - 1].split(",")
    cells[index] = value
    return [*rows[: row - 1], ",".join(cells), *rows[row:]]


def _error(call: object) -> str:
    with pytest.raises(InputError) as err:
        call()  # type: ignore[operator]
    return str(err.value)


# --- jobs ---------------------------------------------------------------------------------------


def test_good_jobs_pass_with_defaults(tmp_path: Path) -> None:
    path, df = jobs_from(tmp_path, GOOD_JOBS)
    jobs = validate_jobs(df, str(path))
    assert list(jobs.columns[: len(JOBS_SCHEMA)]) == list(JOBS_SCHEMA)
    assert dict(jobs.schema) | dict(JOBS_SCHEMA) == dict(jobs.schema)
    assert jobs["priority"].to_list() == [0, 0, 0] and jobs["preemptible"].all()
    assert jobs["user"].null_count() == 3 and jobs["mig_profile"].null_count() == 3


def test_gpu_model_aliases_resolve(tmp_path: Path) -> None:
    path, df = jobs_from(tmp_path, GOOD_JOBS)
    jobs = validate_jobs(df, str(path))
    assert jobs["gpu_models"].to_list() == [None, ["V100-32GB"], ["A100-80GB", "V100"]]


JOB_CASES = [
    # (row, column, bad cell, message start)
    (2, "duration", "abc", "cannot read 'abc' as Float64"),
    (3, "num_pods", "two", "cannot read 'two' as Int32"),
    (2, "submit_time", "", "missing value"),
    (1, "gpu_milli", "", "missing value"),
    (3, "submit_time", "-1", "must be a finite number >= 0 (found -1.0)"),
    (1, "duration", "-5", "must be a finite number >= 0 (found -5.0)"),
    (2, "duration", "NaN", "must be a finite number >= 0 (found nan)"),
    (3, "duration", "inf", "must be a finite number >= 0 (found inf)"),
    (1, "submit_time", "-inf", "must be a finite number >= 0 (found -inf)"),
    (2, "num_pods", "0", "a job needs at least one pod (found 0)"),
    (2, "gpu_milli", "1500", "gpu_milli above 1000 must be a whole multiple of 1000"),
    (1, "gpu_milli", "-250", "gpu_milli must be >= 0 (found -250)"),
    (3, "gpu_mem_mib", "-1", "gpu_mem_mib must be >= 0 (found -1)"),
    (1, "cpu_milli", "-1000", "cpu_milli must be >= 0 (found -1000)"),
    (2, "mem_mib", "-1", "mem_mib must be >= 0 (found -1)"),
    (2, "gpu_models", "V100|TPUv4", "unknown GPU model; known models: "),
]


@pytest.mark.parametrize(
    ("row", "column", "value", "message"), JOB_CASES, ids=[f"{c[1]}={c[2]!r}" for c in JOB_CASES]
)
def test_each_job_rule_names_file_row_and_column(
    tmp_path: Path, row: int, column: str, value: str, message: str
) -> None:
    path, df = jobs_from(tmp_path, _replace(GOOD_JOBS, row, column, value, JOBS_HEADER))
    text = _error(lambda: validate_jobs(df, str(path)))
    assert text.startswith(f"{path}, row {row}, column '{column}': {message}")
    assert "\n" not in text  # one problem only


def test_raw_names_are_used_in_messages(tmp_path: Path) -> None:
    path, df = jobs_from(tmp_path, _replace(GOOD_JOBS, 2, "duration", "abc", JOBS_HEADER))
    text = _error(lambda: validate_jobs(df, str(path), {"duration": "runtime_s"}))
    assert text.startswith(f"{path}, row 2, column 'runtime_s': cannot read 'abc'")


def test_duplicate_job_id_reports_every_copy(tmp_path: Path) -> None:
    path, df = jobs_from(tmp_path, _replace(GOOD_JOBS, 3, "job_id", "1", JOBS_HEADER))
    assert _error(lambda: validate_jobs(df, str(path))) == (
        f"{path}, row 1, column 'job_id': duplicate job_id (found 1)\n"
        f"{path}, row 3, column 'job_id': duplicate job_id (found 1)"
    )


def test_empty_trace(tmp_path: Path) -> None:
    path, df = jobs_from(tmp_path, [])
    assert _error(lambda: validate_jobs(df, str(path))) == f"{path}: the trace has no jobs"


def test_missing_required_column(tmp_path: Path) -> None:
    header = JOBS_HEADER.replace("duration,", "")
    rows = [",".join(c for i, c in enumerate(r.split(",")) if i != 2) for r in GOOD_JOBS]
    path, df = jobs_from(tmp_path, rows, header)
    assert _error(lambda: validate_jobs(df, str(path))).startswith(
        f"{path}: missing column(s) duration; found "
    )


def test_more_than_ten_bad_rows_are_summarised(tmp_path: Path) -> None:
    rows = [f"{i},{i},-1,1,1000,,0,0,,q" for i in range(1, 15)]
    path, df = jobs_from(tmp_path, rows)
    lines = _error(lambda: validate_jobs(df, str(path))).splitlines()
    assert len(lines) == 11
    assert lines[0].startswith(f"{path}, row 1, column 'duration'")
    assert lines[9].startswith(f"{path}, row 10, column 'duration'")
    assert lines[10] == "... and 4 more problem(s)"


def test_problems_from_several_rules_are_ordered_by_row(tmp_path: Path) -> None:
    rows = _replace(_replace(GOOD_JOBS, 3, "num_pods", "0", JOBS_HEADER), 1, "duration", "-1", JOBS_HEADER)
    path, df = jobs_from(tmp_path, rows)
    lines = _error(lambda: validate_jobs(df, str(path))).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        f"{path}, row 1, column 'duration'",
        f"{path}, row 3, column 'num_pods'",
    ]


def test_times_beyond_max_time_name_file_row_and_column(tmp_path: Path) -> None:
    # 100 years by default: 1e18 s durations and 1e20 s submit times (the repros) exhausted memory.
    # Those are beyond float64's whole seconds too, which says more (test_times_too_large_for_float64...).
    rows = _replace(
        _replace(GOOD_JOBS, 1, "duration", "1e12", JOBS_HEADER), 2, "submit_time", "1e14", JOBS_HEADER
    )
    rows = _replace(rows, 3, "submit_time", "3e9", JOBS_HEADER)
    rows = _replace(rows, 3, "duration", "2e8", JOBS_HEADER)  # each fine alone, the end is beyond
    path, df = jobs_from(tmp_path, rows)
    lines = _error(lambda: validate_jobs(df, str(path))).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        f"{path}, row 1, column 'duration'",
        f"{path}, row 2, column 'submit_time'",
        f"{path}, row 3, column 'duration'",
    ]
    assert "beyond max_time = 3.15576e+09 s (100 years)" in lines[0] and "(found 1000000000000.0)" in lines[0]
    assert "submit_time + duration" in lines[2] and "(found 3200000000.0)" in lines[2]


@pytest.mark.parametrize("max_time", [2.0**53, 1e21])
def test_times_too_large_for_float64_seconds_name_file_row_and_column(
    tmp_path: Path, max_time: float
) -> None:
    # At 1e20 s float64 steps by 16384 s: a job of 100 s submitted there finished at its submit time.
    # Raising max_time does not let such times in.
    rows = _replace(GOOD_JOBS, 2, "submit_time", "1e20", JOBS_HEADER)
    rows = _replace(rows, 1, "duration", "1e16", JOBS_HEADER)
    rows = _replace(rows, 3, "submit_time", str(2**53 - 60), JOBS_HEADER)
    rows = _replace(rows, 3, "duration", "100", JOBS_HEADER)
    path, df = jobs_from(tmp_path, rows)
    lines = _error(lambda: validate_jobs(df, str(path), max_time=max_time)).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        f"{path}, row 1, column 'duration'",
        f"{path}, row 2, column 'submit_time'",
        f"{path}, row 3, column 'duration'",
    ]
    assert "duration is too large to replay to the second" in lines[0]
    assert "(found 1e+20; at 1e+20 s float64 steps by 16384 s" in lines[1]
    assert "times must stay below 2**53 s = 9.0072e+15 s" in lines[1]
    assert "submit_time + duration (the job's end) is too large" in lines[2] and "steps by 2 s" in lines[2]
    # Just below 2**53 s a float64 still counts whole seconds.
    ok = _replace(GOOD_JOBS, 2, "submit_time", str(2**53 - 200), JOBS_HEADER)
    assert validate_jobs(jobs_from(tmp_path, ok)[1], str(path), max_time=max_time).height == 3


def test_a_time_too_large_for_float64_is_not_also_beyond_max_time(tmp_path: Path) -> None:
    path, df = jobs_from(tmp_path, _replace(GOOD_JOBS, 2, "submit_time", "1e20", JOBS_HEADER))
    (line,) = _error(lambda: validate_jobs(df, str(path))).splitlines()
    assert "too large to replay to the second" in line and "max_time" not in line


def test_max_time_is_configurable(tmp_path: Path) -> None:
    rows = _replace(GOOD_JOBS, 1, "duration", "1e11", JOBS_HEADER)
    path, df = jobs_from(tmp_path, rows)
    assert "max_time" in _error(lambda: validate_jobs(df, str(path)))
    assert validate_jobs(df, str(path), max_time=1e12).height == 3
    with max_time_limit(1e12):
        assert validate_jobs(df, str(path)).height == 3
    text = _error(lambda: validate_jobs(df, str(path), max_time=25.0))
    assert text.startswith(f"{path}, row 1, column 'duration'") and "row 3" in text


# --- nodes --------------------------------------------------------------------------------------


def test_good_nodes_pass_and_aliases_resolve(tmp_path: Path) -> None:
    path, df = nodes_from(tmp_path, _replace(GOOD_NODES, 1, "gpu_model", "V100M32", NODES_HEADER))
    nodes = validate_nodes(df, str(path))
    assert list(nodes.columns[: len(NODES_SCHEMA)]) == list(NODES_SCHEMA)
    assert nodes["gpu_model"].to_list() == ["V100-32GB", "A100-40GB", None]
    assert nodes["numa_of_gpu"].to_list()[1] == [0, 1]


NODE_CASES = [
    (2, "num_gpus", "eight", "cannot read 'eight' as Int32"),
    (1, "cpu_milli", "", "missing value"),
    (3, "num_gpus", "-1", "num_gpus must be >= 0 (found -1)"),
    (1, "gpu_model", "", "a node with GPUs needs a gpu_model (found None)"),
    (2, "gpu_model", "TPUv4", "unknown GPU model; known models: "),
    (1, "gpu_mem_mib", "-1", "gpu_mem_mib must be >= 0 (found -1)"),
    (2, "cpu_milli", "-1", "cpu_milli must be >= 0 (found -1)"),
    (3, "mem_mib", "-1", "mem_mib must be >= 0 (found -1)"),
    (2, "numa_of_gpu", "0|0|1", "numa_of_gpu must list one NUMA node per GPU"),
]


@pytest.mark.parametrize(
    ("row", "column", "value", "message"),
    NODE_CASES,
    ids=[f"{c[1]}={c[2]!r}" for c in NODE_CASES],
)
def test_each_node_rule_names_file_row_and_column(
    tmp_path: Path, row: int, column: str, value: str, message: str
) -> None:
    path, df = nodes_from(tmp_path, _replace(GOOD_NODES, row, column, value, NODES_HEADER))
    text = _error(lambda: validate_nodes(df, str(path)))
    assert text.startswith(f"{path}, row {row}, column '{column}': {message}")
    assert "\n" not in text


def test_duplicate_node_id(tmp_path: Path) -> None:
    path, df = nodes_from(tmp_path, _replace(GOOD_NODES, 2, "node_id", "0", NODES_HEADER))
    assert _error(lambda: validate_nodes(df, str(path))).splitlines() == [
        f"{path}, row 1, column 'node_id': duplicate node_id (found 0)",
        f"{path}, row 2, column 'node_id': duplicate node_id (found 0)",
    ]


def test_empty_node_list_and_missing_column(tmp_path: Path) -> None:
    path, df = nodes_from(tmp_path, [])
    assert _error(lambda: validate_nodes(df, str(path))) == f"{path}: the node list has no nodes"
    path, df = nodes_from(tmp_path, GOOD_NODES)
    assert _error(lambda: validate_nodes(df.drop("rack"), str(path))).startswith(
        f"{path}: missing column(s) rack"
    )


# --- one bad raw value through each adapter -----------------------------------------------------


def test_philly_adapter_reports_raw_value(tmp_path: Path) -> None:
    path = tmp_path / "philly.csv"
    path.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,66.0,1,66.0,aa\n"
        "2017-10-09 07:02:55,66.0,1,66.0,aa\n"
        "2017-10-09 07:03:55,abc,1,66.0,aa\n"
    )
    assert (
        _error(lambda: load_philly(path)) == f"{path}, row 3, column 'duration': cannot read 'abc' as Float64"
    )


def test_philly_raw_adapter_reports_raw_value(tmp_path: Path) -> None:
    job = {
        "status": "Pass", "vc": "v", "jobid": "j", "user": "u", "submitted_time": "2017-10-07 00:00:00",
        "attempts": [{"start_time": "2017-10-07 00:00:10", "end_time": "2017-10-07 00:00:20",
                      "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}],
    }  # fmt: skip
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps([job, job, {**job, "submitted_time": "abc"}]))
    assert _error(lambda: load_philly_raw(path)) == (
        f"{path}, row 3, column 'submitted_time': "
        "cannot read 'abc' as a date-time in format '%Y-%m-%d %H:%M:%S'"
    )


def test_itp_adapter_reports_raw_value(tmp_path: Path) -> None:
    path = tmp_path / "raw-traces" / "cluster07.csv.gz"
    path.parent.mkdir()
    path.write_bytes(
        gzip.compress(b"job_id,submission_time,duration,num_gpu\na,1,600,1\nb,2,600,2\nc,3,600,x\n")
    )
    assert (
        _error(lambda: load_itp(7, root=tmp_path))
        == f"{path}, row 3, column 'num_gpu': cannot read 'x' as Int32"
    )


def test_helios_adapter_reports_raw_value(tmp_path: Path) -> None:
    path = tmp_path / "cluster_log.csv"
    good = "1,u,vc,1,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:01,2020-04-01 00:00:11,10,1"
    path.write_text(
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
        f"{good}\n{good}\n{good.replace(',1,4,1,', ',abc,4,1,')}\n"
    )
    assert _error(lambda: load_helios(path)) == f"{path}, row 3, column 'gpu_num': cannot read 'abc' as Int32"
