"""`gpureplay compare`: rows that tell runs apart (differing keys, folder), censored counts, timings apart."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from tests.cli import gpureplay
from tests.test_report import HEADLINES, run_config, typed, write_run

from gpureplay.cli import main
from gpureplay.results.compare import compare_runs

REPO = Path(__file__).resolve().parents[1]


def rows(text: str) -> list[list[str]]:
    """The printed table, split on runs of two or more spaces."""
    import re

    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_rows_show_the_keys_that_differ_and_the_folder(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    headline = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    for nodes in (4, 8):
        config = typed(run_config("fifo", 0)) | {"cluster.nodes": nodes}
        write_run(tmp_path / f"nodes{nodes}", config, headline, rng)
        (tmp_path / f"nodes{nodes}" / "timing.json").write_text(
            json.dumps(
                {"compile_seconds": 38.5 if nodes == 4 else 0.0, "replay_seconds": 0.25, "total_seconds": 40}
            )
        )
    result = CliRunner().invoke(main, ["compare", str(tmp_path)])
    assert result.exit_code == 0, result.output
    table = rows(result.stdout)
    header = table[0]
    assert header[0] == "cluster.nodes" and header[-1] == "run"
    assert header[-3:-1] == ["compile (s)", "replay (s)"]
    assert "window: GPU alloc (%)" in header and "never started" in header
    body = {row[0]: dict(zip(header, row, strict=True)) for row in table[1:]}
    assert set(body) == {"4", "8"}
    assert body["4"]["run"] == f"{tmp_path.name}/nodes4" and body["8"]["run"] == f"{tmp_path.name}/nodes8"
    assert body["4"]["compile (s)"] == "38.5" and body["8"]["compile (s)"] == "0"
    assert body["4"]["replay (s)"] == body["8"]["replay (s)"] == "0.250"
    assert body["4"]["mean wait (h)"] == "0.500" and body["4"]["GPU alloc (%)"] == "50.0"


def test_censored_counts_and_older_runs(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    base = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    write_run(tmp_path / "old", run_config("fifo", 0), base, rng, window=False)
    starving = base | {"wait_censored": 12, "window_wait_censored": 3, "never_started": 12}
    write_run(tmp_path / "new", run_config("sjf", 0), starving, rng)
    result = compare_runs([tmp_path])
    assert result.keys == ("scheduler.name",)
    table = {row["scheduler"]: row for row in result.table.iter_rows(named=True)}
    assert table["sjf"]["mean wait (h)"] == "0.500 (12 censored)"
    assert table["sjf"]["window: mean wait (h)"] == "0.500 (3 censored)"
    assert table["sjf"]["never started"] == "12"
    # An older run: no window, no censoring count, one wall-clock figure with compilation in it.
    assert table["fifo"]["window: mean wait (h)"] == "n/a" and table["fifo"]["never started"] == "n/a"
    assert table["fifo"]["compile (s)"] == "n/a" and table["fifo"]["replay (s)"] == "41.0*"
    assert result.notes == ("* no timing.json (an older run): replay time includes numba's compilation.",)


def test_compare_of_nothing_readable_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["compare", str(tmp_path)])
    assert result.exit_code == 2 and "no complete run" in result.stderr
    result = CliRunner().invoke(main, ["compare", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "no such file or folder" in result.stderr


def csv_run(trace: Path, out: Path, *extra: str) -> None:
    proc = gpureplay(
        "run",
        "trace=csv",
        f"trace.path={trace}",
        "cluster=homogeneous",
        "cluster.gpus_per_node=8",
        "scheduler=fifo",
        f"hydra.run.dir={out}",
        *extra,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_issue_commands_nodes_and_trace_contents(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    # Runs that differ only in cluster.nodes: compare shows the key and the folders.
    csv_run(tiny_jobs_csv, tmp_path / "nodes" / "a", "cluster.nodes=1")
    csv_run(tiny_jobs_csv, tmp_path / "nodes" / "b", "cluster.nodes=2")
    proc = gpureplay("compare", str(tmp_path / "nodes"))
    assert proc.returncode == 0, proc.stderr
    table = rows(proc.stdout)
    assert table[0][0] == "cluster.nodes" and table[0][-1] == "run"
    assert [(r[0], r[-1]) for r in table[1:]] == [("1", "nodes/a"), ("2", "nodes/b")]
    # The same `trace=csv trace.path=x.csv` twice, the file rewritten in between: two runs.
    csv_run(tiny_jobs_csv, tmp_path / "csv" / "first", "cluster.nodes=1")
    jobs = pl.read_csv(tiny_jobs_csv).with_columns(pl.col("duration") * 10)
    jobs.write_csv(tiny_jobs_csv)
    csv_run(tiny_jobs_csv, tmp_path / "csv" / "second", "cluster.nodes=1")
    proc = gpureplay("report", str(tmp_path / "csv"), "-o", str(tmp_path / "report"))
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "report" / "report.md").read_text()
    assert "2 run(s) in 2 configuration(s), differing in trace_sha256" in md
