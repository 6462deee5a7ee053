"""Priority preemption end to end: real Philly jobs, 20% of them high-priority (engine v2, done-when).

The summary, ``attempts.parquet`` and the report all show the evictions, the
GPU-hours they cost and the goodput; the same run without preemption shows none.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from gpureplay.report.build import build_report

GPUREPLAY = [sys.executable, "-m", "gpureplay"]


def run_point(out: Path, scheduler: str) -> Path:
    folder = out / scheduler
    subprocess.run(
        [
            *GPUREPLAY, "run", "trace=philly", "cluster=philly", f"scheduler={scheduler}",
            "workload=priority-20pct", "workload.load=40", "workload.sample_fraction=0.25", "seed=3",
            f"hydra.run.dir={folder}",
        ],
        check=True,
        capture_output=True,
        text=True,
    )  # fmt: skip
    return folder


@pytest.mark.slow
def test_philly_with_20pct_high_priority_shows_preemption_everywhere(tmp_path: Path) -> None:
    preempt = run_point(tmp_path / "sweep", "gang-binpack-preempt")
    plain = run_point(tmp_path / "sweep", "gang-binpack")
    s = pl.read_parquet(preempt / "summary.parquet").row(0, named=True)
    assert s["preemptions"] > 0 and s["preempted_jobs"] > 0 and s["lost_gpu_hours"] > 0
    assert 0.99 < s["goodput"] < 1.0
    base = pl.read_parquet(plain / "summary.parquet").row(0, named=True)
    assert (base["preemptions"], base["lost_gpu_hours"]) == (0, 0.0)

    attempts = pl.read_parquet(preempt / "attempts.parquet")
    evicted = attempts.filter(pl.col("end_reason") == "preempted")
    assert evicted.height == s["preemptions"]
    assert (evicted["end"] - evicted["evicted"]).unique().to_list() == [30.0]  # the grace period
    assert (evicted["work_lost"] < 1800.0).all()  # never more than one checkpoint interval
    jobs = pl.read_parquet(preempt / "jobs.parquet")
    assert jobs.filter(pl.col("priority_class") == "high")["preemptions"].sum() == 0  # not preemptible
    assert jobs["lost_gpu_seconds"].sum() / 3600.0 == pytest.approx(s["lost_gpu_hours"])
    # Every job's attempts: one per eviction, plus the one that finished.
    per_job = attempts.group_by("job_id").len().join(jobs.select("job_id", "preemptions"), on="job_id")
    assert (per_job["len"] == per_job["preemptions"] + 1).all()

    report = tmp_path / "report"
    build_report([tmp_path / "sweep"], report)
    text = (report / "report.md").read_text()
    section = text[text.index("## Preemption") :]
    assert "lost GPU-hours" in section and "goodput" in section and "| high |" in section
    assert (report / "preemption.png").stat().st_size > 10_000
