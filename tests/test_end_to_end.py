"""`gpureplay run` end to end, as a user calls it (a subprocess), on real and written traces."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl
import pytest
from tests.cli import gpureplay

from gpureplay.report.build import build_report
from gpureplay.results.writer import DONE_MARKER, read_metadata

REPO = Path(__file__).resolve().parents[1]
CONTRACT = [
    "job_id",
    "queue",
    "num_pods",
    "gpu_milli",
    "submit_time",
    "start_time",
    "finish_time",
    "wait_time",
    "jct",
    "run_time",
    "preemptions",
    "state",
]


def csv_overrides(trace: Path, out: Path, *extra: str) -> list[str]:
    """The overrides of a run of CSV ``trace`` into ``out`` on one 8-GPU A100 node, with the debug checks."""
    return [
        "trace=csv",
        f"trace.path={trace}",
        "cluster=homogeneous",
        "cluster.nodes=1",
        "cluster.gpus_per_node=8",
        "cluster.gpu_model=A100-80GB",
        f"hydra.run.dir={out}",
        "debug=true",
        *extra,
    ]


def csv_run(trace: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return gpureplay("run", *csv_overrides(trace, out, *extra))


def test_csv_contract_run_writes_all_results(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = csv_run(tiny_jobs_csv, out, "scheduler=fifo", "seed=5")
    assert proc.returncode == 0, proc.stderr
    jobs = pl.read_parquet(out / "jobs.parquet")
    assert set(CONTRACT) <= set(jobs.columns)
    assert jobs.height == 4 and set(jobs["state"].cast(pl.String)) == {"finished"}
    first = jobs.filter(pl.col("job_id") == 1).row(0, named=True)
    assert first["start_time"] == 0.0 and first["finish_time"] == 100.0
    assert pl.read_parquet(out / "summary.parquet").height == 1
    assert pl.read_parquet(out / "timeline.parquet").height >= 1
    meta = read_metadata(out / "jobs.parquet")
    assert meta["seed"] == "5" and "scheduler:" in meta["config"] and len(meta["trace_sha256"]) == 64
    assert (out / DONE_MARKER).is_file()


def test_results_are_identical_across_two_runs(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert csv_run(tiny_jobs_csv, tmp_path / name, "scheduler=kube-default").returncode == 0
    a, b = (pl.read_parquet(tmp_path / n / "jobs.parquet") for n in ("a", "b"))
    assert a.equals(b)


def test_bad_trace_exits_nonzero_and_leaves_no_results(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit_time,duration,num_pods,gpu_milli\n1,0,10,1,1000\n2,abc,10,1,1000\n")
    out = tmp_path / "out"
    proc = csv_run(bad, out)
    assert proc.returncode != 0
    assert "bad.csv, row 2, column 'submit_time'" in proc.stderr
    assert not (out / "jobs.parquet").exists() and not (out / DONE_MARKER).exists()


def test_bad_config_value_fails_before_reading(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    proc = csv_run(tiny_jobs_csv, tmp_path / "out", "seed=abc")
    assert proc.returncode != 0 and "seed" in proc.stderr
    assert not (tmp_path / "out" / "jobs.parquet").exists()


def test_unknown_gpu_model_names_the_config_key(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    proc = csv_run(tiny_jobs_csv, tmp_path / "out", "cluster.gpu_model=TPUv9")
    assert proc.returncode == 2 and "cluster.gpu_model" in proc.stderr


@pytest.mark.slow
def test_real_openb_timed_replay_with_fractional_pods(tmp_path: Path) -> None:
    out = tmp_path / "openb"
    proc = gpureplay("run", "trace=openb", "cluster=openb", "scheduler=gang-binpack", f"hydra.run.dir={out}")
    assert proc.returncode == 0, proc.stderr
    jobs = pl.read_parquet(out / "jobs.parquet")
    assert jobs.height == 8_152
    fractional = jobs.filter((pl.col("gpu_milli") > 0) & (pl.col("gpu_milli") < 1000))
    assert fractional.height == 3_078 and fractional["start_time"].is_not_null().sum() > 0


def test_a_horizon_run_is_the_same_for_any_sample_interval_and_its_report_counts_the_starved(
    tmp_path: Path,
) -> None:
    # Issue 43, items 1-2: job 1 holds the 8 GPUs 0-100, job 2 arrives at 10 and waits; horizon 50. With
    # hourly samples the run used to stop at 10 (the last event) and the report said every job started on
    # arrival, where job 2 never started.
    trace = tmp_path / "two.csv"
    pl.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 10.0], "duration": [100.0, 5.0], "num_pods": [1, 1]}
        | {"gpu_milli": [8000, 8000]}
    ).write_csv(trace)
    rows = {}
    for interval in ("3600", "5"):
        out = tmp_path / "runs" / f"every-{interval}"
        proc = csv_run(trace, out, "scheduler=fifo", "horizon=50", f"sample_interval={interval}")
        assert proc.returncode == 0, proc.stderr
        rows[interval] = pl.read_parquet(out / "summary.parquet").row(0, named=True)
        attempt = pl.read_parquet(out / "attempts.parquet").row(0, named=True)
        assert (attempt["end"], attempt["gpu_seconds"]) == (50.0, 400.0)
    for row in rows.values():
        assert (row["span_end"], row["wait_mean"], row["never_started"]) == (50.0, 20.0, 1)
    report = build_report([tmp_path / "runs"], tmp_path / "report")
    md = (report.parent / "report.md").read_text()
    assert "every job started on arrival" not in md
    assert (
        "Wait time CDF: no started job waited in any run; 2 jobs never started (in 2 of 2 configurations)."
        in md
    )
