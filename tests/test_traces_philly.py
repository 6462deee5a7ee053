"""Philly adapters (Pollux-derived CSV, raw ``cluster_job_log`` JSON) and the pod split."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpureplay.errors import InputError
from gpureplay.traces.adapted import AdaptedTrace
from gpureplay.traces.philly import load_philly, split_reason
from gpureplay.traces.philly_raw import (
    CENSORED,
    NEGATIVE_RUN,
    NO_ATTEMPTS,
    NO_FIRST_START,
    NO_SUBMIT,
    ZERO_GPU,
    load_philly_raw,
)
from gpureplay.traces.pods import split_gpus_into_pods

# traces/philly/SOURCE.md: GPUs per job in philly_jobs_pollux.csv.gz.
PHILLY_GPU_HISTOGRAM = {1: 76_627, 2: 1_818, 4: 1_870, 8: 1_643, 12: 7, 16: 199, 24: 7, 32: 67, 64: 6, 128: 3}
PHILLY_FIRST = dt.datetime(2017, 9, 4, 10, 30, 41)
PHILLY_LAST = dt.datetime(2017, 12, 22, 8, 2, 11)


# --- split_gpus_into_pods ---------------------------------------------------------------------


def _split(gpus: list[int | None], max_gpus_per_pod: int) -> list[tuple[int | None, int | None]]:
    pods, milli = split_gpus_into_pods(pl.col("g"), max_gpus_per_pod)
    frame = pl.DataFrame({"g": gpus}, schema={"g": pl.Int64})
    out = frame.select(pods.alias("p"), milli.alias("m"))
    assert out.schema == pl.Schema({"p": pl.Int32(), "m": pl.Int32()})
    return list(out.iter_rows())


def test_split_examples_from_the_brief() -> None:
    assert _split([12, 16, 1, 0, 8, 24, 128], 8) == [
        (2, 6000), (2, 8000), (1, 1000), (1, 0), (1, 8000), (3, 8000), (16, 8000),
    ]  # fmt: skip


def test_split_prime_count_falls_back_to_one_gpu_pods() -> None:
    assert _split([13, 9, 10], 8) == [(13, 1000), (3, 3000), (2, 5000)]


def test_split_one_gpu_per_pod() -> None:
    assert _split([1, 2, 12, 0], 1) == [(1, 1000), (2, 1000), (12, 1000), (1, 0)]


def test_split_passes_null_and_negative_through_for_validation() -> None:
    assert _split([None, -2], 8) == [(None, None), (1, -2000)]


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_split_rejects_bad_max(bad: Any) -> None:
    with pytest.raises(InputError) as err:
        split_gpus_into_pods(pl.col("g"), bad)
    assert "trace.max_gpus_per_pod" in str(err.value)


@given(st.lists(st.integers(0, 600), min_size=1, max_size=30), st.integers(1, 16))
def test_split_is_the_fewest_equal_pods(gpus: list[int], max_gpus_per_pod: int) -> None:
    for g, (pods, milli) in zip(gpus, _split(list(gpus), max_gpus_per_pod), strict=True):
        assert pods is not None and milli is not None
        if g == 0:
            assert (pods, milli) == (1, 0)
            continue
        per_pod = milli // 1000
        assert milli % 1000 == 0 and pods * per_pod == g and per_pod <= max_gpus_per_pod
        # No smaller pod count gives equal pods within the limit.
        assert not any(g % p == 0 and g // p <= max_gpus_per_pod for p in range(1, pods))


# --- load_philly on the bundled file ------------------------------------------------------------


@pytest.fixture(scope="module")
def philly() -> AdaptedTrace:
    return load_philly()


def test_bundled_philly_job_count_and_queues(philly: AdaptedTrace) -> None:
    jobs = philly.jobs
    assert jobs.height == 82_247
    assert jobs["queue"].n_unique() == 15
    assert jobs.filter(pl.col("queue") == "6214e9").height == 41_226
    assert jobs["user"].null_count() == jobs.height
    assert jobs["job_id"].to_list() == jobs["source_row"].cast(pl.Int64).to_list()
    assert sorted(jobs["job_id"].to_list()) == list(range(1, 82_248))
    assert len(philly.sha256) == 64 and philly.source.endswith("philly_jobs_pollux.csv.gz")


def test_bundled_philly_gpu_histogram(philly: AdaptedTrace) -> None:
    jobs = philly.jobs
    raw = dict(jobs.group_by("source_num_gpus").len().iter_rows())
    assert raw == PHILLY_GPU_HISTOGRAM
    total = jobs.select((pl.col("num_pods").cast(pl.Int64) * pl.col("gpu_milli") // 1000).alias("g"))
    assert dict(total.group_by("g").len().iter_rows()) == PHILLY_GPU_HISTOGRAM
    assert jobs.filter(pl.col("source_num_gpus") == 12)["gpu_milli"].unique().to_list() == [6000]
    assert jobs.filter(pl.col("source_num_gpus") == 128)["num_pods"].unique().to_list() == [16]
    assert jobs["gpu_milli"].max() == 8000
    split = sum(n for g, n in PHILLY_GPU_HISTOGRAM.items() if g > 8)
    assert philly.changes == {split_reason(8): split}


def test_bundled_philly_times(philly: AdaptedTrace) -> None:
    jobs = philly.jobs
    assert jobs["submit_time"][0] == 0.0
    assert jobs["submit_time"].max() == (PHILLY_LAST - PHILLY_FIRST).total_seconds()
    assert jobs["source_timestamp"].min() == PHILLY_FIRST
    assert jobs["source_timestamp"].max() == PHILLY_LAST
    assert jobs.equals(jobs.sort("submit_time", "job_id"))
    assert jobs["duration"].min() == 1.0
    # gpu_time is kept as written; in this file it is exactly duration * num_gpus.
    assert (jobs["source_gpu_time"] == jobs["duration"] * jobs["source_num_gpus"]).all()


def test_bundled_philly_one_gpu_pods() -> None:
    jobs = load_philly(max_gpus_per_pod=1).jobs
    assert (jobs["gpu_milli"] == 1000).all()
    assert (jobs["num_pods"] == jobs["source_num_gpus"]).all()


# --- load_philly on small files -----------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_philly_csv_sorts_unsorted_rows_and_shifts_time(tmp_path: Path) -> None:
    csv = _write(
        tmp_path / "p.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,66.0,1,66.0,aa\n"
        "2017-10-09 06:13:03,2951.0,12,35412.0,bb\n"
        "2017-10-09 07:01:55,5.0,2,10.0,aa\n",
    )
    trace = load_philly(csv)
    assert trace.jobs.select("job_id", "submit_time", "num_pods", "gpu_milli", "queue").rows() == [
        (2, 0.0, 2, 6000, "bb"),
        (1, 2932.0, 1, 1000, "aa"),
        (3, 2932.0, 1, 2000, "aa"),
    ]
    assert trace.changes == {split_reason(8): 1}


def test_philly_csv_bad_timestamp_names_row_and_column(tmp_path: Path) -> None:
    csv = _write(
        tmp_path / "p.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,66.0,1,66.0,aa\n"
        "2017-10-09T25:00,66.0,1,66.0,aa\n",
    )
    with pytest.raises(InputError) as err:
        load_philly(csv)
    assert str(err.value).startswith(f"{csv}, row 2, column 'timestamp': cannot read '2017-10-09T25:00'")


def test_philly_csv_missing_column(tmp_path: Path) -> None:
    csv = _write(
        tmp_path / "p.csv", "timestamp,duration,num_gpus,gpu_time\n2017-10-09 07:01:55,66.0,1,66.0\n"
    )
    with pytest.raises(InputError, match="missing column\\(s\\) cluster"):
        load_philly(csv)


def test_philly_csv_missing_duration_is_reported(tmp_path: Path) -> None:
    csv = _write(
        tmp_path / "p.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,,1,66.0,aa\n",
    )
    with pytest.raises(InputError, match=r"row 1, column 'duration': missing value"):
        load_philly(csv)


# --- load_philly_raw on small JSON logs ---------------------------------------------------------


def _attempt(start: str | None, end: str | None, *machines: int) -> dict[str, Any]:
    return {
        "start_time": start,
        "end_time": end,
        "detail": [{"ip": f"m{i}", "gpus": [f"gpu{g}" for g in range(n)]} for i, n in enumerate(machines)],
    }


def _job(jobid: str, submitted: str | None, *attempts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "status": "Pass",
        "vc": "vc1",
        "jobid": jobid,
        "attempts": list(attempts),
        "user": "u1",
    }
    job["submitted_time"] = submitted
    job.update(extra)
    return job


def _t(seconds: int) -> str:
    """A log time stamp ``seconds`` after 2017-10-07 00:00:00."""
    return (dt.datetime(2017, 10, 7) + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def _log(tmp_path: Path, jobs: list[dict[str, Any]], name: str = "cluster_job_log") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(jobs, indent=1))
    return path


def test_philly_raw_multi_attempt_multi_machine(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        [
            # Two attempts with a gap: run time spans first start .. last end, gap included.
            _job("app_1", "2017-10-07 01:11:39",
                 _attempt("2017-10-07 01:12:09", "2017-10-07 01:13:23", 8, 8),
                 _attempt("2017-10-07 01:13:30", "2017-10-07 02:13:23", 8)),
            _job("app_2", "2017-10-07 01:00:00", _attempt("2017-10-07 01:00:30", "2017-10-07 01:01:30", 2, 2),
                 vc="vc2", user="u2", status="Killed"),
        ],
    )  # fmt: skip
    trace = load_philly_raw(log)
    jobs = trace.jobs
    assert jobs.select(
        "job_id", "submit_time", "duration", "num_pods", "gpu_milli", "queue", "user",
        "source_jobid", "source_status", "source_attempts", "source_queueing_delay",
    ).rows() == [
        (2, 0.0, 60.0, 1, 4000, "vc2", "u2", "app_2", "Killed", 1, 30.0),
        (1, 699.0, 3674.0, 2, 8000, "vc1", "u1", "app_1", "Pass", 2, 30.0),
    ]  # fmt: skip
    assert trace.changes == {split_reason(8): 1}
    assert len(trace.sha256) == 64


def test_philly_raw_drops_are_counted(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        [
            _job("kept", _t(0), _attempt(_t(10), _t(20), 1)),
            _job("never", _t(1)),
            _job("running", _t(2), _attempt(_t(10), "None", 1)),
            _job("running2", _t(2), _attempt(_t(10), _t(11), 1), _attempt(_t(12), None, 1)),
            _job("nostart", _t(3), _attempt("None", _t(20), 1)),
            _job("nosubmit", "", _attempt(_t(10), _t(20), 1)),
            _job("backwards", _t(4), _attempt(_t(30), _t(20), 1)),
            _job("nogpu", _t(5), _attempt(_t(10), _t(20))),
            {"status": "Failed", "vc": "vc1", "jobid": "nokeys", "submitted_time": _t(6)},
        ],
    )
    trace = load_philly_raw(log)
    assert trace.jobs["source_jobid"].to_list() == ["kept", "nogpu"]
    assert trace.jobs.filter(pl.col("source_jobid") == "nogpu").select("num_pods", "gpu_milli").row(0) == (
        1,
        0,
    )
    assert trace.changes == {
        NO_ATTEMPTS: 2,
        CENSORED: 2,
        NO_FIRST_START: 1,
        NO_SUBMIT: 1,
        NEGATIVE_RUN: 1,
        ZERO_GPU: 1,
    }


def test_philly_raw_reads_gzip(tmp_path: Path) -> None:
    jobs = [_job("a", "2017-10-07 00:00:00", _attempt("2017-10-07 00:00:10", "2017-10-07 00:00:20", 1))]
    path = tmp_path / "cluster_job_log.gz"
    path.write_bytes(gzip.compress(json.dumps(jobs).encode()))
    assert load_philly_raw(path).jobs.height == 1


def test_philly_raw_bad_submitted_time_names_row_and_field(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        [
            _job("a", "2017-10-07 00:00:00", _attempt("2017-10-07 00:00:10", "2017-10-07 00:00:20", 1)),
            _job("b", "07/10/2017 00:00", _attempt("2017-10-07 00:00:10", "2017-10-07 00:00:20", 1)),
        ],
    )
    with pytest.raises(InputError) as err:
        load_philly_raw(log)
    assert str(err.value).startswith(f"{log}, row 2, column 'submitted_time': cannot read '07/10/2017 00:00'")


def test_philly_raw_bad_attempt_time_names_the_attempt(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        [
            _job("a", _t(0), _attempt(_t(10), _t(20), 1)),
            _job("b", _t(0), _attempt(_t(10), _t(20), 1)),
            _job("c", _t(0), _attempt(_t(10), _t(20), 1), _attempt(_t(30), "soon", 1)),
        ],
    )
    with pytest.raises(InputError) as err:
        load_philly_raw(log)
    assert str(err.value) == (
        f"{log}, row 3, column 'attempts[1].end_time': cannot read 'soon' as a date-time "
        "in format '%Y-%m-%d %H:%M:%S'"
    )


@pytest.mark.parametrize(
    "text",
    ['[{"jobid": "a", "attempts": [}]', '{"jobid": "a"}', '[{"jobid": "a", "attempts": "x"}]', ""],
    ids=["syntax", "not-an-array", "wrong-type", "empty-file"],
)
def test_philly_raw_malformed_json_names_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cluster_job_log"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_philly_raw(path)
    assert str(err.value).startswith(f"{path}: malformed JSON")


def test_philly_raw_all_dropped_is_an_empty_trace(tmp_path: Path) -> None:
    log = _log(tmp_path, [_job("never", "2017-10-07 00:00:01")])
    with pytest.raises(InputError, match="no jobs"):
        load_philly_raw(log)


def test_adapters_check_max_gpus_per_pod_before_reading() -> None:
    with pytest.raises(InputError, match=r"trace\.max_gpus_per_pod"):
        load_philly("does-not-exist.csv", max_gpus_per_pod=0)
    with pytest.raises(InputError, match=r"trace\.max_gpus_per_pod"):
        load_philly_raw("does-not-exist.json", max_gpus_per_pod=0)
