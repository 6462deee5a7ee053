"""`gpureplay run` results a user can trust (issue 7, items 1, 5, 10 and 16), as a user calls it.

Each test is one of the issue's commands run as a subprocess: the allocation
rate of two jobs cut by a horizon, byte-identical re-runs with typed summary
columns and timings in ``timing.json``, a bounded timeline for a huge
duration, times beyond ``max_time`` refused with file, row and column, text
job ids kept in ``jobs.parquet``, and a CSV naming a column twice refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from tests.test_end_to_end import csv_run

from gpureplay.report.collect import collect
from gpureplay.results.schemas import SUMMARY_METRICS_SCHEMA
from gpureplay.results.timing import TIMING_FILE, read_timing
from gpureplay.results.writer import DONE_MARKER, read_metadata

HEADER = "job_id,submit_time,duration,num_pods,gpu_milli\n"


def write_csv(path: Path, rows: str, header: str = HEADER) -> Path:
    path.write_text(header + rows)
    return path


def test_two_jobs_with_a_horizon_never_exceed_full_allocation(tmp_path: Path) -> None:
    trace = write_csv(tmp_path / "two.csv", "1,0,10,1,4000\n2,0,1000,1,4000\n")
    out = tmp_path / "out"
    proc = csv_run(trace, out, "horizon=50", "sample_interval=10")
    assert proc.returncode == 0, proc.stderr
    row = pl.read_parquet(out / "summary.parquet").row(0, named=True)
    assert row["gpu_allocation_rate"] == 0.6  # (4 GPUs x 10 s + 4 x 50 s) / (8 GPUs x 50 s); it was 3.0
    assert (row["span_start"], row["span_end"], row["jct_censored"]) == (0.0, 50.0, 1)


def test_reruns_are_byte_identical_typed_and_time_themselves_apart(
    tiny_jobs_csv: Path, tmp_path: Path
) -> None:
    for name in ("a", "b"):
        proc = csv_run(tiny_jobs_csv, tmp_path / name, "scheduler=fifo", "seed=3", "horizon=1000")
        assert proc.returncode == 0, proc.stderr
    parquet = sorted(p.name for p in (tmp_path / "a").glob("*.parquet"))
    tables = ["attempts.parquet", "jobs.parquet", "queue_summary.parquet", "queues.parquet"]
    tables += ["summary.parquet", "timeline.parquet"]
    assert parquet == tables
    for name in parquet:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name

    summary = pl.read_parquet(tmp_path / "a" / "summary.parquet")
    assert "replay_seconds" not in summary.columns
    types = summary.schema
    assert (types["seed"], types["horizon"], types["debug"]) == (pl.Int64, pl.Float64, pl.Boolean)
    assert (types["cluster.nodes"], types["scheduler.name"], types["measure.end"]) == (
        pl.Int64,
        pl.String,
        pl.Float64,
    )
    assert summary["seed"][0] == 3 and summary["horizon"][0] == 1000.0
    assert {k: types[k] for k in SUMMARY_METRICS_SCHEMA} == SUMMARY_METRICS_SCHEMA
    stacked = pl.concat(
        [pl.read_parquet(tmp_path / n / "summary.parquet") for n in ("a", "b")], how="diagonal_relaxed"
    )
    assert stacked.schema == types and stacked.height == 2

    timing = read_timing(tmp_path / "a")
    assert timing is not None and timing.total_seconds >= timing.compile_seconds + timing.replay_seconds
    assert set(json.loads((tmp_path / "a" / TIMING_FILE).read_text())) == {
        "compile_seconds",
        "replay_seconds",
        "total_seconds",
    }
    assert TIMING_FILE in json.loads((tmp_path / "a" / DONE_MARKER).read_text())


def test_a_huge_duration_gives_a_bounded_timeline_with_a_warning(tmp_path: Path) -> None:
    # The repro wrote 27,777,778 rows (61 MB, 16 s). 1e11 s is beyond the default max_time (100
    # years), so the test raises it to see the timeline bound at work.
    trace = write_csv(tmp_path / "long.csv", "1,0,1e11,1,1000\n2,0,60,1,1000\n")
    out = tmp_path / "out"
    proc = csv_run(trace, out, "max_time=1e12")
    assert proc.returncode == 0, proc.stderr
    timeline = pl.read_parquet(out / "timeline.parquet")
    assert timeline.height == 54_254 <= 100_000
    logged = proc.stdout + proc.stderr  # Hydra's log handler writes to stdout
    assert logged.count("sampled every 1.8432e+06 s instead") == 1 and "WARNING" in logged
    assert pl.read_parquet(out / "summary.parquet")["sample_interval_used"][0] == 3600.0 * 512
    assert read_metadata(out / "timeline.parquet")["sample_interval"] == "1843200.0"


def test_times_beyond_max_time_are_refused_with_file_row_and_column(tmp_path: Path) -> None:
    # (1e18 and 1e20 s, the first repros, are refused as too large for float64's whole seconds: test_schema.)
    for rows, column, row in (
        ("1,0,1e12,1,1000\n2,0,60,1,1000\n", "duration", 1),
        ("1,0,60,1,1000\n2,1e14,60,1,1000\n", "submit_time", 2),
    ):
        trace = write_csv(tmp_path / "huge.csv", rows)
        out = tmp_path / f"out-{column}"
        proc = csv_run(trace, out)
        assert proc.returncode == 2, proc.stderr
        assert f"huge.csv, row {row}, column '{column}'" in proc.stderr and "max_time" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert not (out / "jobs.parquet").exists()


def test_bad_run_keys_name_the_key(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    for override, key in (
        ("max_time=-5", "max_time"),
        ("max_samples=0", "max_samples"),
        ("measure.end=-1", "measure.end"),
    ):
        proc = csv_run(tiny_jobs_csv, tmp_path / "out", override)
        assert proc.returncode == 2 and key in proc.stderr and "Traceback" not in proc.stderr, override
    proc = csv_run(tiny_jobs_csv, tmp_path / "out", "measure.start=50", "measure.end=10")
    assert proc.returncode == 2 and "measure.end" in proc.stderr
    assert not (tmp_path / "out" / "jobs.parquet").exists()


def test_text_job_ids_are_replayed_and_kept(tmp_path: Path) -> None:
    trace = write_csv(tmp_path / "named.csv", "jobB,0,10,1,1000\njobA,0,20,1,8000\n")
    out = tmp_path / "out"
    proc = csv_run(trace, out, "scheduler=fifo")
    assert proc.returncode == 0, proc.stderr
    jobs = pl.read_parquet(out / "jobs.parquet").sort("job_id")
    assert jobs["job_name"].to_list() == ["jobB", "jobA"]
    assert jobs["job_id"].to_list() == [1, 2]  # the file rows: equal submit times queue in file order
    assert jobs["start_time"].to_list() == [0.0, 10.0]


def test_a_csv_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    trace = write_csv(tmp_path / "twice.csv", "1,0,10,1,1000,20\n", header=HEADER.strip() + ",duration\n")
    proc = csv_run(trace, tmp_path / "out")
    assert proc.returncode == 2
    assert "twice.csv, column 'duration'" in proc.stderr and "2 times" in proc.stderr


def test_runs_differing_in_a_typed_key_stay_two_configurations(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    # workload.load is Float64 in summary.parquet now: the report must still tell the runs apart by it.
    for load in ("1.0", "2.0"):
        proc = csv_run(tiny_jobs_csv, tmp_path / "sweep" / load, f"workload.load={load}")
        assert proc.returncode == 0, proc.stderr
    collection = collect([tmp_path / "sweep"])
    assert collection.configs.height == 2
    assert collection.configs["workload.load"].to_list() == ["1.0", "2.0"]
