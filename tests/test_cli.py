"""The command line: help texts, trace sub-commands, exit codes and messages on bad input."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from gpureplay.cli import main


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], ["run", "trace"]),
        (["run"], ["OVERRIDES", "scheduler", "kube-default", "gang-binpack", "easy-backfill", "-m", "seed"]),
        (["trace"], ["list", "inspect", "convert", "fetch"]),
        (["trace", "inspect"], ["NAME_OR_PATH", "trace.cluster_id"]),
        (["trace", "convert"], ["--output", "Parquet"]),
        (["trace", "fetch"], ["--dest", "PAI 2020"]),
        (["trace", "list"], ["license"]),
    ],
)
def test_help_is_complete(runner: CliRunner, args: list[str], expected: list[str]) -> None:
    result = runner.invoke(main, [*args, "--help"])
    assert result.exit_code == 0, result.output
    for word in expected:
        assert word in result.output


def test_inspect_philly_reports_real_counts(runner: CliRunner) -> None:
    result = runner.invoke(main, ["trace", "inspect", "philly"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "jobs:        82,247" in out
    histogram = {"1": 76_627, "2": 1_818, "4": 1_870, "8": 1_643, "16": 199, "32": 67, "64": 6, "128": 3}
    for gpus, count in histogram.items():
        assert any(line.split() == [gpus, f"{count:,}"] for line in out.splitlines()), (gpus, out)
    assert "queues:      15" in out


def test_inspect_openb_counts_all_pods_and_fractional(runner: CliRunner) -> None:
    result = runner.invoke(main, ["trace", "inspect", "openb"])
    assert result.exit_code == 0, result.output
    assert "jobs:        8,152" in result.output
    assert "fractional:  3,078 jobs" in result.output


def test_inspect_itp_all_clusters(runner: CliRunner) -> None:
    result = runner.invoke(main, ["trace", "inspect", "itp"])
    assert result.exit_code == 0, result.output
    assert "jobs:        69,351" in result.output and "queues:      10" in result.output


def test_inspect_with_override(runner: CliRunner) -> None:
    result = runner.invoke(main, ["trace", "inspect", "itp", "trace.cluster_id=10"])
    assert result.exit_code == 0, result.output
    assert "jobs:        260" in result.output


def test_convert_writes_a_replayable_canonical_table(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "openb.parquet"
    result = runner.invoke(main, ["trace", "convert", "openb", "-o", str(out)])
    assert result.exit_code == 0, result.output
    converted = pl.read_parquet(out)
    assert converted.height == 8_152 and "source_name" in converted.columns
    again = runner.invoke(main, ["trace", "inspect", str(out)])
    assert again.exit_code == 0, again.output
    assert "jobs:        8,152" in again.output


def test_inspect_bad_file_names_row_and_column(runner: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit_time,duration,num_pods,gpu_milli\n1,0,10,1,1000\n2,5,-3,1,1000\n")
    result = runner.invoke(main, ["trace", "inspect", str(bad)])
    assert result.exit_code == 2
    assert "bad.csv, row 2, column 'duration'" in result.output


def test_inspect_unknown_name_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(main, ["trace", "inspect", "no-such-trace"])
    assert result.exit_code == 2 and "neither a trace name" in result.output


def test_trace_list_names_every_bundled_trace(runner: CliRunner) -> None:
    result = runner.invoke(main, ["trace", "list"])
    assert result.exit_code == 0, result.output
    for name in ("philly", "openb", "itp", "pai2020", "helios"):
        assert name in result.output


def test_missing_fetched_trace_says_how_to_fetch(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(main, ["trace", "inspect", "pai2020", f"trace.job_table={tmp_path / 'none.csv'}"])
    assert result.exit_code == 2
    assert "gpureplay trace fetch pai2020" in result.output and "none.csv" in result.output
