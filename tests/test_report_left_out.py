"""Runs a report or comparison leaves out: failed, killed and unreadable (truncated, corrupt) run folders.

``gpureplay report`` lists every such folder with its reason (on the terminal,
in report.md and report.html) and reports the others; with no readable run
left it exits with status 2 and a message naming the file, never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from tests.test_report import HEADLINES, run_config, write_run

from gpureplay.cli import main
from gpureplay.report.build import build
from gpureplay.report.folders import scan


def truncate(path: Path) -> None:
    """Cut a file in half, as a full disk or a killed copy leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def corrupt_column(path: Path, column: str) -> None:
    """Overwrite the header of a column's first data page: the footer still reads, the data does not."""
    meta = pq.read_metadata(path)
    group = meta.row_group(0)
    index = next(i for i in range(group.num_columns) if group.column(i).path_in_schema == column)
    offset = group.column(index).data_page_offset
    data = bytearray(path.read_bytes())
    data[offset : offset + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))


def failed_point(folder: Path, error: str) -> None:
    """A sweep point that failed: STATUS says so, ERROR.txt holds the error, .hydra/ its config."""
    (folder / ".hydra").mkdir(parents=True)
    (folder / "STATUS").write_text(json.dumps({"status": "failed", "time": 0.0, "error": error}) + "\n")
    (folder / "ERROR.txt").write_text(f"{error}\n\nTraceback (most recent call last): ...\n")


@pytest.fixture
def damaged_sweep(tmp_path: Path) -> Path:
    """Two good runs, then one failed, one killed, one truncated and one corrupt point."""
    rng = np.random.default_rng(11)
    sweep = tmp_path / "sweep"
    for scheduler in ("fifo", "gang-binpack"):
        headline = {k: v[0] for k, v in HEADLINES[scheduler].items()}
        write_run(sweep / f"scheduler={scheduler},seed=0", run_config(scheduler, 0), headline, rng)
    failed_point(sweep / "scheduler=sjf,seed=0", "InputError: jobs.csv, row 3, column 'duration': negative")
    (sweep / "scheduler=sjf,seed=1" / ".hydra").mkdir(parents=True)  # killed while loading the trace
    truncated = sweep / "scheduler=fifo,seed=1"
    write_run(truncated, run_config("fifo", 1), {k: v[1] for k, v in HEADLINES["fifo"].items()}, rng)
    truncate(truncated / "jobs.parquet")
    corrupt = sweep / "scheduler=gang-binpack,seed=1"
    write_run(corrupt, run_config("gang-binpack", 1), {k: v[1] for k, v in HEADLINES["fifo"].items()}, rng)
    corrupt_column(corrupt / "jobs.parquet", "wait_time")
    return sweep


def test_scan_sorts_folders_by_what_is_wrong(damaged_sweep: Path) -> None:
    found = scan([damaged_sweep])
    assert [p.name for p in found.complete] == [
        "scheduler=fifo,seed=0",
        "scheduler=gang-binpack,seed=0",
        # Its footer reads: the damage shows only when the data is read (see the report test).
        "scheduler=gang-binpack,seed=1",
    ]
    reasons = {item.folder.name: (item.kind, item.reason) for item in found.left_out}
    assert reasons == {
        "scheduler=fifo,seed=1": (
            "unreadable",
            reasons["scheduler=fifo,seed=1"][1],
        ),
        "scheduler=sjf,seed=0": ("failed", "InputError: jobs.csv, row 3, column 'duration': negative"),
        "scheduler=sjf,seed=1": ("incomplete", "no DONE marker (killed, or still running)"),
    }
    assert reasons["scheduler=fifo,seed=1"][1].startswith("jobs.parquet is truncated or not a Parquet file")


def test_report_lists_runs_left_out_and_reports_the_others(damaged_sweep: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(damaged_sweep), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "left out: 1 failed, 1 incomplete, 2 unreadable" in result.stderr
    assert "scheduler=sjf,seed=0: failed: InputError: jobs.csv, row 3" in result.stderr
    assert "scheduler=gang-binpack,seed=1: unreadable: jobs.parquet cannot be read" in result.stderr
    md = (tmp_path / "out" / "report.md").read_text()
    assert md.splitlines()[2] == (
        "2 run(s) in 2 configuration(s), differing in scheduler.name; same for all: trace.name=philly, "
        "cluster.name=philly, workload.name=none, workload.load=1.0, sample_interval=3600.0. "
        "4 run folder(s) left out (1 failed, 1 incomplete, 2 unreadable): see “Runs left out”."
    )
    left = md.split("## Runs left out")[1]
    for name, kind in (
        ("scheduler=fifo,seed=1", "unreadable: jobs.parquet is truncated"),
        ("scheduler=gang-binpack,seed=1", "unreadable: jobs.parquet cannot be read"),
        ("scheduler=sjf,seed=0", "failed: InputError"),
        ("scheduler=sjf,seed=1", "incomplete: no DONE marker"),
    ):
        assert f"{name}`: {kind}" in left
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Runs left out</h2>" in page and "scheduler=sjf,seed=1</code>: <strong>incomplete" in page


@pytest.mark.parametrize("name", ["jobs.parquet", "timeline.parquet", "summary.parquet"])
def test_report_on_a_lone_truncated_run_exits_2_naming_the_file(tmp_path: Path, name: str) -> None:
    run = tmp_path / "run"
    write_run(run, run_config("fifo", 0), {}, np.random.default_rng(1))
    truncate(run / name)
    result = CliRunner().invoke(main, ["report", str(run), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.exception is not None
    assert f"{run}: unreadable: {name} is truncated or not a Parquet file" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_corrupt_page_found_while_reading_leaves_that_run_out(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    for scheduler in ("fifo", "gang-binpack"):
        write_run(tmp_path / scheduler, run_config(scheduler, 0), {}, rng)
    corrupt_column(tmp_path / "gang-binpack" / "timeline.parquet", "allocated_fraction")
    built = build([tmp_path], tmp_path / "out")
    [bad] = built.left_out
    assert bad.folder.name == "gang-binpack" and bad.kind == "unreadable"
    assert bad.reason.startswith("timeline.parquet cannot be read (ComputeError")
    assert "1 run(s) in 1 configuration(s)" in (tmp_path / "out" / "report.md").read_text()


def test_compare_lists_runs_left_out(damaged_sweep: Path) -> None:
    result = CliRunner().invoke(main, ["compare", str(damaged_sweep)])
    assert result.exit_code == 0, result.output
    assert "left out: 1 failed, 1 incomplete, 1 unreadable" in result.stderr
    # The corrupt page is in per-job data, which compare does not read: that run is compared.
    assert len(result.stdout.strip().splitlines()) == 1 + 3
