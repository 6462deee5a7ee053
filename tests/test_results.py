"""Result files: explicit schemas, key-value metadata, atomic writes, metrics definitions."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from omegaconf import OmegaConf

from gpureplay.config import Config
from gpureplay.results.metrics import (
    MeasurementWindow,
    RunSpan,
    config_frame,
    job_results,
    summary_metrics,
    timeline_results,
)
from gpureplay.results.schemas import JOBS_RESULT_SCHEMA, TIMELINE_SCHEMA
from gpureplay.results.writer import (
    clear_run,
    conform,
    is_done,
    mark_done,
    read_metadata,
    write_parquet_atomic,
)


def canonical_jobs() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4],
            "queue": ["a", "a", "b", "b"],
            "user": [None, "u", None, None],
            "priority": [0, 0, 1, 0],
            "preemptible": [True, True, True, False],
            "num_pods": [1, 2, 1, 8],
            "gpu_milli": [1000, 4000, 500, 1000],
            "submit_time": [0.0, 10.0, 20.0, 30.0],
            "duration": [100.0, 50.0, 5.0, 10.0],
        },
        schema_overrides={"num_pods": pl.Int32, "gpu_milli": pl.Int32, "priority": pl.Int32},
    )


def outcome() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4],
            "start_time": [0.0, 100.0, 20.0, None],
            "finish_time": [100.0, 150.0, 25.0, None],
            "state": ["finished", "finished", "finished", "deadlocked"],
            "reject_reason": [None, None, None, None],
            "nodes_spanned": [1, 1, 1, 1],
            "held_milli": [0, 0, 0, 4000],
            "preemptions": [0, 0, 0, 0],
            "attempts": [1, 1, 1, 0],
            "admission_failures": [0, 0, 0, 0],
            "pods_ready_timeouts": [0, 0, 0, 0],
            "pending_time": [0.0, 90.0, 0.0, 130.0],  # job 4: pending to the end of the run
            "lost_gpu_seconds": [0.0, 0.0, 0.0, 0.0],
            # Job 1 ran 100 s for 50 s of work: time-sliced at 1/2 all along.
            "sharing_delay": [50.0, 0.0, 0.0, 0.0],
            "sharing_slowdown": [2.0, 1.0, 1.0, None],
            # Job 2's pods spanned two NVLink domains of one rack; no spreading cost was set.
            "nvlink_domains_spanned": [1, 2, 1, 1],
            "racks_spanned": [1, 1, 1, 1],
            "spines_spanned": [1, 1, 1, 1],
            "spread_delay": [0.0, 0.0, 0.0, 0.0],
        },
        schema_overrides={
            "nodes_spanned": pl.Int32,
            "nvlink_domains_spanned": pl.Int32,
            "racks_spanned": pl.Int32,
            "spines_spanned": pl.Int32,
            "preemptions": pl.Int32,
            "attempts": pl.Int32,
            "admission_failures": pl.Int32,
            "pods_ready_timeouts": pl.Int32,
            "reject_reason": pl.String,
            "pending_time": pl.Float64,
        },
    )


def test_job_results_derive_wait_jct_run_time() -> None:
    jobs = job_results(canonical_jobs(), outcome())
    assert jobs.schema == pl.Schema(JOBS_RESULT_SCHEMA)
    row = jobs.row(1, named=True)
    assert (row["wait_time"], row["jct"], row["run_time"], row["gpus"]) == (90.0, 140.0, 50.0, 8.0)
    last = jobs.row(3, named=True)
    assert last["state"] == "deadlocked" and last["jct"] is None and last["wait_time"] is None


def test_summary_metrics_match_hand_computation() -> None:
    jobs = job_results(canonical_jobs(), outcome())
    timeline = timeline_results(
        pl.DataFrame(
            {
                "time": [0.0],
                "allocated_gpus": [1],
                "allocated_milli": [1000],
                "pending_jobs": [0],
                "running_jobs": [1],
                "fragmented_gpus": [3],
                "preemptions": [0],
                "terminating_jobs": [0],
                "lost_gpu_seconds": [0.0],
                "mig_stranded_slices": [0],
            },
            schema_overrides={
                "allocated_gpus": pl.Int32,
                "pending_jobs": pl.Int32,
                "running_jobs": pl.Int32,
                "fragmented_gpus": pl.Int32,
                "preemptions": pl.Int32,
                "terminating_jobs": pl.Int32,
                "mig_stranded_slices": pl.Int32,
            },
        ),
        total_gpus=16,
    )
    assert timeline.schema == pl.Schema(TIMELINE_SCHEMA)
    assert timeline["allocated_fraction"][0] == pytest.approx(1000 / 16000)
    gpu_ms = 1000 * 100 + 8000 * 50 + 500 * 5 + 4000 * 130
    summary = summary_metrics(
        jobs,
        timeline,
        span=RunSpan(0.0, 160.0),
        window=MeasurementWindow(0.0, 30.0),
        gpu_milli_seconds=float(gpu_ms),
        window_gpu_milli_seconds=1000 * 30 + 4000 * 0 + 500 * 5.0,
        total_gpus=16,
        sample_interval=3600.0,
    ).row(0, named=True)
    assert (summary["jobs"], summary["finished"], summary["deadlocked"]) == (4, 3, 1)
    # Job 4 (deadlocked, submitted at 30) never started: censored at the end of the run, 160.
    assert (summary["never_started"], summary["wait_censored"], summary["jct_censored"]) == (1, 1, 1)
    assert summary["jct_mean"] == pytest.approx((100 + 140 + 5 + 130) / 4)
    assert summary["jct_mean_finished"] == pytest.approx((100 + 140 + 5) / 3)
    assert summary["wait_mean"] == pytest.approx((0 + 90 + 0 + 130) / 4)
    assert summary["wait_mean_started"] == pytest.approx(30.0)
    # No evictions: the pending time is the wait, job 4 censored at the end of the run.
    assert summary["pending_time_mean"] == pytest.approx((0 + 90 + 0 + 130) / 4)
    assert (summary["preemptions"], summary["lost_gpu_hours"]) == (0, 0.0)
    assert summary["wait_median"] == pytest.approx(45.0)
    # Not every admitted job finished: the makespan is censored at the end of the run.
    assert summary["makespan"] == 160.0
    assert summary["gpu_allocation_rate"] == pytest.approx(gpu_ms / 1000 / (16 * 160))
    # bounded slowdown: job 2 (90+50)/50 = 2.8, jobs 1 and 3 -> 1, job 4 130 / max(10 s duration, 10) = 13
    assert summary["bounded_slowdown_mean"] == pytest.approx((1 + 2.8 + 1 + 13) / 4)
    assert summary["fragmented_gpus_mean"] == 3.0
    assert (summary["span_start"], summary["span_end"], summary["sample_interval_used"]) == (
        0.0,
        160.0,
        3600.0,
    )
    # Window [0, 30]: every job; its allocation over 16 GPUs x 30 s.
    assert (summary["window_start"], summary["window_end"], summary["window_jobs"]) == (0.0, 30.0, 4)
    assert summary["window_gpu_allocation_rate"] == pytest.approx(32.5 / (16 * 30))
    # Sharing: over the 3 jobs that did work (job 4 never ran): slowdowns 2, 1, 1.
    assert (summary["replicas_per_gpu"], summary["slowed_jobs"]) == (1, 1)
    assert summary["sharing_slowdown_mean"] == pytest.approx(4 / 3)
    assert summary["sharing_slowdown_p95"] == pytest.approx(1.9)  # linear: 1 + 0.9 x (2 - 1)
    assert summary["sharing_delay_hours"] == pytest.approx(50 / 3600)


def test_allocation_rates_count_replica_devices() -> None:
    # 4 GPUs as 4 replicas each (16 devices); 8 devices held for 100 s of a 100 s span: 50 %.
    jobs = job_results(canonical_jobs(), outcome())
    summary = summary_metrics(
        jobs,
        timeline_results(pl.DataFrame(schema=TIMELINE_SCHEMA).drop("allocated_fraction"), 16),
        span=RunSpan(0.0, 100.0),
        window=MeasurementWindow(0.0, 100.0),
        gpu_milli_seconds=8000 * 100.0,
        window_gpu_milli_seconds=8000 * 100.0,
        total_gpus=4,
        sample_interval=3600.0,
        replicas_per_gpu=4,
    ).row(0, named=True)
    assert (summary["total_gpus"], summary["replicas_per_gpu"]) == (4, 4)
    assert summary["gpu_allocation_rate"] == summary["window_gpu_allocation_rate"] == 0.5


def test_typed_config_columns_stack_across_runs(tmp_path: Path) -> None:
    cfg = OmegaConf.structured(Config)
    cfg.trace = {"name": "philly", "path": "x.csv", "cluster_id": None}
    cfg.cluster = {"name": "homogeneous", "nodes": 4}
    first = config_frame(cfg)
    assert first.schema["seed"] == pl.Int64
    assert first.schema["sample_interval"] == pl.Float64
    assert first.schema["horizon"] == pl.Float64 and first["horizon"][0] is None  # declared float, null
    assert first.schema["debug"] == pl.Boolean
    assert first.schema["scheduler.queue_order"] == pl.String and first["scheduler.queue_order"][0] == "fifo"
    assert first.schema["trace.cluster_id"] == pl.String  # untyped and null
    assert first.schema["cluster.nodes"] == pl.Int64
    assert first.schema["measure.start"] == pl.Float64
    cfg.seed = 7
    cfg.horizon = 50.0
    cfg.trace.cluster_id = 4
    second = config_frame(cfg)
    for i, row in enumerate((first, second)):
        row.write_parquet(tmp_path / f"{i}.parquet")
    stacked = pl.concat([pl.read_parquet(tmp_path / f"{i}.parquet") for i in (0, 1)], how="diagonal_relaxed")
    assert stacked["seed"].to_list() == [0, 7] and stacked.schema["seed"] == pl.Int64
    assert stacked["horizon"].to_list() == [None, 50.0] and stacked.schema["horizon"] == pl.Float64
    assert stacked["debug"].to_list() == [False, False]


def test_conform_rejects_missing_columns_and_lossy_casts() -> None:
    with pytest.raises(ValueError, match="lacks"):
        conform(pl.DataFrame({"time": [1.0]}), TIMELINE_SCHEMA)
    with pytest.raises(pl.exceptions.InvalidOperationError):
        conform(pl.DataFrame({"a": ["x"]}), {"a": pl.Int32()})


def test_atomic_write_keeps_metadata_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "jobs.parquet"
    write_parquet_atomic(pl.DataFrame({"a": [1, 2]}), path, {"seed": "7", "config": "trace: {name: x}\n"})
    assert read_metadata(path) == {"seed": "7", "config": "trace: {name: x}\n"}
    assert pl.read_parquet(path)["a"].to_list() == [1, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.parquet"]


def test_write_killed_half_way_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def half_write(df: object, where: Path, **kwargs: object) -> None:
        Path(where).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", half_write)
    with pytest.raises(OSError, match="disk full"):
        write_parquet_atomic(pl.DataFrame({"a": [1]}), tmp_path / "jobs.parquet", {})
    assert list(tmp_path.iterdir()) == []


def test_done_marker_is_removed_before_results(tmp_path: Path) -> None:
    (tmp_path / "jobs.parquet").write_text("stale")
    mark_done(tmp_path, {"jobs.parquet": 3})
    assert is_done(tmp_path)
    clear_run(tmp_path, ("jobs.parquet",))
    assert not is_done(tmp_path) and not (tmp_path / "jobs.parquet").exists()
