"""Generic CSV / Parquet adapter: round trips, column mapping, defaults and located errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.traces.generic import load_table
from gpureplay.traces.openb import load_openb
from gpureplay.traces.schema import JOBS_SCHEMA

MAPPED_HEADER = "id,arrival,runtime,workers,gpu_share,allowed,team,row,prio"
MAPPED_ROWS = [
    "7,2.0,1.5,2,500,A100;H100,vision,a,1",
    "3,1.0,0.5,1,1000,,speech,b,",
    "5,1.0,3.0,4,8000,V100M32,vision,c,2",
]
MAPPING = {
    "job_id": "id", "submit_time": "arrival", "duration": "runtime", "num_pods": "workers",
    "gpu_milli": "gpu_share", "gpu_models": "allowed", "priority": "prio",
}  # fmt: skip


def _write(tmp_path: Path, header: str, rows: list[str], name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def openb_jobs() -> pl.DataFrame:
    """Canonical columns of a real trace (openb, timed), as written by ``trace convert``."""
    return load_openb().jobs.select(list(JOBS_SCHEMA))


def test_csv_with_canonical_names_round_trips(tmp_path: Path, openb_jobs: pl.DataFrame) -> None:
    path = tmp_path / "openb.csv"
    openb_jobs.with_columns(pl.col("gpu_models").list.join("|")).write_csv(path)
    trace = load_table(path)
    assert trace.jobs.drop("source_row").equals(openb_jobs)
    assert not trace.changes
    assert trace.jobs["source_row"].to_list() == list(range(1, openb_jobs.height + 1))


def test_parquet_with_canonical_names_round_trips(tmp_path: Path, openb_jobs: pl.DataFrame) -> None:
    path = tmp_path / "openb.parquet"
    openb_jobs.with_columns(pl.col("job_id").alias("source_row")).write_parquet(path)
    trace = load_table(path)
    assert trace.jobs.select(list(JOBS_SCHEMA)).equals(openb_jobs)
    # The file's own source_row is kept, renamed, beside this file's row numbers.
    assert trace.jobs["source_original_row"].equals(openb_jobs["job_id"].alias("source_original_row"))


def test_gzipped_csv_is_read(tmp_path: Path, tiny_jobs_csv: Path) -> None:
    import gzip

    path = tmp_path / "jobs.csv.gz"
    path.write_bytes(gzip.compress(tiny_jobs_csv.read_bytes()))
    assert load_table(path).jobs.height == 4


def test_mapped_csv(tmp_path: Path) -> None:
    path = _write(tmp_path, MAPPED_HEADER, MAPPED_ROWS)
    trace = load_table(path, columns=MAPPING, time_unit="min", model_separator=";")
    jobs = trace.jobs
    assert jobs["job_id"].to_list() == [3, 5, 7]
    assert jobs["submit_time"].to_list() == [0.0, 0.0, 60.0]
    assert jobs["duration"].to_list() == [30.0, 180.0, 90.0]
    assert jobs["num_pods"].to_list() == [1, 4, 2]
    assert jobs["gpu_models"].to_list() == [None, ["V100-32GB"], ["A100-40GB", "H100-80GB"]]
    assert jobs["priority"].to_list() == [0, 2, 1]
    assert jobs["source_team"].to_list() == ["speech", "vision", "vision"]
    assert jobs["source_original_row"].to_list() == ["b", "c", "a"]
    assert jobs["source_row"].to_list() == [2, 3, 1]
    assert trace.changes == {
        "empty priority: set to the default 0": 1,
        "submit_time shifted so the first job arrives at 0": 3,
    }


def test_defaults_fill_absent_columns_and_empty_cells(tmp_path: Path) -> None:
    path = _write(tmp_path, "job_id,submit_time,duration,num_pods,gpu_milli,queue",
                  ["1,0,10,1,250,", "2,5,10,1,1000,prod"])  # fmt: skip
    trace = load_table(
        path, defaults={"queue": "batch", "priority": 5, "gpu_models": "A100|H100", "user": "ann"}
    )
    jobs = trace.jobs
    assert jobs["queue"].to_list() == ["batch", "prod"]
    assert jobs["priority"].to_list() == [5, 5]
    assert jobs["gpu_models"].to_list() == [["A100-40GB", "H100-80GB"]] * 2
    assert jobs["user"].to_list() == ["ann", "ann"]
    assert jobs["preemptible"].to_list() == [True, True]
    assert jobs["cpu_milli"].to_list() == [0, 0]
    assert trace.changes == {"empty queue: set to the default 'batch'": 1}


def test_datetime_submit_times(tmp_path: Path) -> None:
    path = _write(tmp_path, "job_id,submit_time,duration,num_pods,gpu_milli",
                  ["1,2017-10-09 07:01:55,66,1,1000", "2,2017-10-09 06:00:00,5,2,2000"])  # fmt: skip
    trace = load_table(path, datetime_format="%Y-%m-%d %H:%M:%S")
    assert trace.jobs.select("job_id", "submit_time").rows() == [(2, 0.0), (1, 3715.0)]


def test_parquet_datetime_and_bool_columns(tmp_path: Path) -> None:
    from datetime import datetime

    path = tmp_path / "jobs.parquet"
    pl.DataFrame({
        "job_id": [1, 2], "submit_time": [datetime(2020, 1, 1, 0, 0, 30), datetime(2020, 1, 1)],
        "duration": [1.0, 2.0], "num_pods": [1, 1], "gpu_milli": [100, 200], "preemptible": [False, True],
    }).write_parquet(path)  # fmt: skip
    jobs = load_table(path).jobs
    assert jobs.select("job_id", "submit_time", "preemptible").rows() == [(2, 0.0, True), (1, 30.0, False)]


HEADER = "job_id,submit_time,duration,num_pods,gpu_milli,gpu_models,preemptible,cpu_milli"
OK = ["1,0,10,1,500,A100,true,1000", "2,1,10,2,2000,,no,0"]


@pytest.mark.parametrize(
    ("bad_row", "column"),
    [
        (",2,10,1,500,,yes,0", "job_id"),  # text ids are names (see below): an empty one is missing
        ("3,soon,10,1,500,,yes,0", "submit_time"),
        ("3,2,-5,1,500,,yes,0", "duration"),
        ("3,2,10,0,500,,yes,0", "num_pods"),
        ("3,2,10,1,1500,,yes,0", "gpu_milli"),
        ("3,2,10,1,500,TPUv4,yes,0", "gpu_models"),
        ("3,2,10,1,500,,maybe,0", "preemptible"),
        ("3,2,10,1,500,,yes,1.5", "cpu_milli"),
    ],
)
def test_bad_values_name_file_row_and_column(tmp_path: Path, bad_row: str, column: str) -> None:
    path = _write(tmp_path, HEADER, [*OK, bad_row])
    with pytest.raises(InputError) as err:
        load_table(path)
    problem = err.value.problems[0]
    assert (problem.source, problem.row, problem.column) == (str(path), 3, column)


def test_duplicate_job_ids_name_both_rows(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER, [*OK, "1,2,10,1,500,,yes,0"])
    with pytest.raises(InputError) as err:
        load_table(path)
    assert {(p.row, p.column) for p in err.value.problems} == {(1, "job_id"), (3, "job_id")}


def test_errors_use_the_file_spelling_of_mapped_columns(tmp_path: Path) -> None:
    path = _write(tmp_path, MAPPED_HEADER, [*MAPPED_ROWS, "9,later,1,1,1,,x,d,1"])
    with pytest.raises(InputError) as err:
        load_table(path, columns=MAPPING)
    assert (err.value.problems[0].row, err.value.problems[0].column) == (4, "arrival")
    path = _write(tmp_path, "job_id,submit_time,duration,num_pods,gpu_milli,when",
                  ["1,a,1,1,1,x", "2,2020-01-01,1,1,1,y"])  # fmt: skip
    with pytest.raises(InputError) as err:
        load_table(path, datetime_format="%Y-%m-%d")
    assert (err.value.problems[0].row, err.value.problems[0].column) == (1, "submit_time")


def test_parquet_fractional_integer_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "jobs.parquet"
    pl.DataFrame({"job_id": [1, 2], "submit_time": [0.0, 1.0], "duration": [1.0, 1.0], "num_pods": [1.0, 2.5],
                  "gpu_milli": [0, 0]}).write_parquet(path)  # fmt: skip
    with pytest.raises(InputError) as err:
        load_table(path)
    assert (err.value.problems[0].row, err.value.problems[0].column) == (2, "num_pods")


@pytest.mark.parametrize(
    ("column", "values", "found", "expected"),
    [
        ("gpu_milli", [[1000], [2000]], "List(Int64)", "whole numbers (Int32)"),
        ("gpu_milli", [True, False], "Boolean", "whole numbers (Int32)"),
        ("duration", [True, True], "Boolean", "numbers (Float64)"),
        ("queue", [[1], [2]], "List(Int64)", "text (String)"),
        ("priority", [{"a": 1}, {"a": 2}], "Struct", "whole numbers (Int32)"),
        ("preemptible", [0.5, 1.0], "Float64", "true/false (Boolean)"),
        ("gpu_models", [[1], [2]], "List(Int64)", "lists of text"),
    ],
)
def test_parquet_column_of_the_wrong_type_is_refused_naming_it(
    tmp_path: Path, column: str, values: list[object], found: str, expected: str
) -> None:
    # A list gpu_milli used to end in a polars traceback; a Boolean one was read as 1 milli-GPU.
    base: dict[str, list[object]] = {"job_id": [1, 2], "submit_time": [0.0, 1.0], "duration": [1.0, 1.0],
                                     "num_pods": [1, 1], "gpu_milli": [1000, 1000]}  # fmt: skip
    path = tmp_path / "jobs.parquet"
    pl.DataFrame({**base, column: values}).write_parquet(path)
    with pytest.raises(InputError) as err:
        load_table(path)
    (problem,) = err.value.problems
    assert (problem.source, problem.row, problem.column) == (str(path), None, column)
    assert problem.message.startswith(f"the column holds {found}")
    assert expected in problem.message


def test_integer_preemptible_reads_zero_and_one_only(tmp_path: Path) -> None:
    path = tmp_path / "jobs.parquet"
    pl.DataFrame({"job_id": [1, 2, 3], "submit_time": [0.0, 1.0, 2.0], "duration": [1.0, 1.0, 1.0],
                  "num_pods": [1, 1, 1], "gpu_milli": [0, 0, 0],
                  "preemptible": [1, 0, 1]}).write_parquet(path)  # fmt: skip
    assert load_table(path).jobs["preemptible"].to_list() == [True, False, True]
    pl.DataFrame({"job_id": [1, 2], "submit_time": [0.0, 1.0], "duration": [1.0, 1.0], "num_pods": [1, 1],
                  "gpu_milli": [0, 0], "preemptible": [1, 5]}).write_parquet(path)  # fmt: skip
    with pytest.raises(InputError) as err:
        load_table(path)
    assert (err.value.problems[0].row, err.value.problems[0].column) == (2, "preemptible")


def test_priority_names_hint_that_priority_is_an_integer(tmp_path: Path) -> None:
    path = _write(tmp_path, "job_id,submit_time,duration,num_pods,gpu_milli,priority", ["1,0,1,1,0,high"])
    with pytest.raises(InputError) as err:
        load_table(path)
    assert "cannot read 'high' as Int32; priority is the integer value of a PriorityClass" in str(err.value)


def test_times_rounded_when_read_are_refused_before_the_shift_to_zero(tmp_path: Path) -> None:
    # 1e20 and 1e20 + 100 read as the same float64: shifted to 0 they would look fine.
    path = _write(tmp_path, "job_id,submit_time,duration,num_pods,gpu_milli",
                  ["1,100000000000000000000,10,1,0", "2,100000000000000000100,10,1,0"])  # fmt: skip
    with pytest.raises(InputError) as err:
        load_table(path)
    assert [(p.row, p.column) for p in err.value.problems] == [(1, "submit_time"), (2, "submit_time")]
    assert "float64 steps by 16384 s" in str(err.value)


def test_missing_columns_list_what_was_looked_for_and_found(tmp_path: Path) -> None:
    path = _write(tmp_path, "id,arrival,gpus", ["1,0,1"])
    with pytest.raises(InputError) as err:
        load_table(path, columns={"job_id": "id", "submit_time": "arrival", "user": "owner"})
    message = str(err.value)
    assert "duration, num_pods, gpu_milli, user (as 'owner')" in message
    assert "found id, arrival, gpus" in message


def test_bad_arguments(tmp_path: Path, tiny_jobs_csv: Path) -> None:
    other = tmp_path / "jobs.json"
    other.write_text("{}")
    with pytest.raises(InputError, match="unsupported file type"):
        load_table(other)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="the file is empty"):
        load_table(empty)
    with pytest.raises(InputError, match="unknown canonical column"):
        load_table(tiny_jobs_csv, columns={"arrival": "submit_time"})
    with pytest.raises(InputError, match="is required"):
        load_table(tiny_jobs_csv, defaults={"num_pods": 1})
    with pytest.raises(InputError) as err:
        load_table(tiny_jobs_csv, defaults={"priority": "high"})
    assert err.value.problems[0].column == "priority"
    with pytest.raises(InputError, match="time_unit"):
        load_table(tiny_jobs_csv, time_unit="days")  # type: ignore[arg-type]


def test_text_job_ids_become_names_and_the_file_row_the_key(tmp_path: Path) -> None:
    rows = ["jobB,0,10,1,1000", "jobA,0,20,1,500", "7,5,20,1,500", " job C ,1,1,1,0"]
    trace = load_table(_write(tmp_path, "job_id,submit_time,duration,num_pods,gpu_milli", rows))
    jobs = trace.jobs.sort("job_id")
    assert jobs["job_id"].to_list() == [1, 2, 3, 4]
    assert jobs["job_name"].to_list() == ["jobB", "jobA", "7", "job C"]  # one text id: every id is a name
    assert trace.jobs["job_name"].to_list()[:2] == ["jobB", "jobA"]  # same submit time: file order
    assert sum(trace.changes.values()) == 4


def test_integer_job_ids_are_read_exactly_as_before(tmp_path: Path, tiny_jobs_csv: Path) -> None:
    jobs = load_table(tiny_jobs_csv).jobs
    assert jobs["job_id"].to_list() == [1, 2, 3, 4] and jobs["job_name"].null_count() == 4


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (["jobA,0,1,1,1000", "jobA,1,1,1,1000"], ["row 1, column 'id': duplicate job_id (found 'jobA')",
                                                  "row 2, column 'id': duplicate job_id (found 'jobA')"]),
        (["jobA,0,1,1,1000", ",1,1,1,1000"], ["row 2, column 'id': missing value (found None)"]),
    ],
)  # fmt: skip
def test_bad_text_job_ids_name_row_and_column(tmp_path: Path, rows: list[str], expected: list[str]) -> None:
    path = _write(tmp_path, "id,submit_time,duration,num_pods,gpu_milli", rows)
    with pytest.raises(InputError) as err:
        load_table(path, columns={"job_id": "id"})
    assert str(err.value).splitlines() == [f"{path}, {line}" for line in expected]


def test_text_ids_beside_a_job_name_column_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "job_id,job_name,submit_time,duration,num_pods,gpu_milli", ["a,x,0,1,1,1000"])
    with pytest.raises(InputError, match="job_name"):
        load_table(path)


def test_job_names_round_trip_through_parquet(tmp_path: Path) -> None:
    trace = load_table(_write(tmp_path, "job_id,submit_time,duration,num_pods,gpu_milli", ["x,0,1,1,1000"]))
    trace.jobs.write_parquet(tmp_path / "named.parquet")  # as `trace convert` writes it
    again = load_table(tmp_path / "named.parquet").jobs
    assert again.select("job_id", "job_name").equals(trace.jobs.select("job_id", "job_name"))


@pytest.mark.parametrize("name", ["twice.csv", "twice.csv.gz"])
def test_a_column_named_twice_is_refused(tmp_path: Path, name: str) -> None:
    text = "job_id,submit_time,duration,num_pods,gpu_milli,duration\n1,0,10,1,1000,20\n"
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    with pytest.raises(InputError) as err:
        load_table(path)
    assert str(err.value) == (
        f"{path}, column 'duration': the header names this column 2 times (fields 3, 6); "
        "each column must be named once"
    )
