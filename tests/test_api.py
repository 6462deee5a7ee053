"""The Python API (issue 47, item 3) against the command line: the same frames, errors and tables.

Every claim is checked against a real ``gpureplay run`` (a subprocess, as a user calls it): ``api.run``
returns the frames the command writes for the same overrides, written back they are the same bytes,
nothing lands on disk, a bad override fails with the message the command prints; ``load``,
``load_sweep`` and ``compare`` read the command's own run and sweep folders, and refuse a folder
that is not complete, naming it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl
import pytest
from tests.cli import REPO, gpureplay
from tests.test_end_to_end import csv_overrides, csv_run

import gpureplay as gr
from gpureplay.errors import InputError
from gpureplay.results.compare import format_text
from gpureplay.results.writer import DONE_MARKER, RESULT_FILES, read_metadata
from gpureplay.sweep import write_status

#: The overrides of the run every test compares with: a 4-job trace on one 8-GPU node, fifo.
EXTRA = ("scheduler=fifo", "seed=3", "horizon=1000")


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "jobs.csv"
    pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4],
            "submit_time": [0.0, 0.0, 10.0, 20.0],
            "duration": [100.0, 50.0, 30.0, 5.0],
            "num_pods": [1, 2, 1, 1],
            "gpu_milli": [1000, 4000, 500, 0],
            "queue": ["a", "b", "a", "b"],
        }
    ).write_csv(path)
    return path


@pytest.fixture(scope="module")
def cli_run(trace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder written by ``gpureplay run``."""
    out = tmp_path_factory.mktemp("cli") / "run"
    proc = csv_run(trace, out, *EXTRA)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def cli_sweep(trace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep folder written by ``gpureplay run -m``: two seeds."""
    out = tmp_path_factory.mktemp("sweep") / "sweep"
    args = csv_overrides(trace, out, "scheduler=fifo", "horizon=1000", "seed=0,1")
    args = [a.replace("hydra.run.dir", "hydra.sweep.dir") for a in args]
    proc = gpureplay("run", "-m", *args, "hydra.launcher.n_jobs=1")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def in_memory(trace: Path, tmp_path_factory: pytest.TempPathFactory) -> gr.Results:
    """``api.run`` of the overrides the CLI run got (its ``hydra.run.dir`` included: not read)."""
    return gr.run(csv_overrides(trace, tmp_path_factory.mktemp("unused") / "never", *EXTRA))


def test_run_returns_every_table_the_command_writes(in_memory: gr.Results, cli_run: Path) -> None:
    assert list(in_memory.tables) == list(RESULT_FILES)
    assert not in_memory.packing and in_memory.events is None and in_memory.folder is None
    for name, table in in_memory.tables.items():
        written = pl.read_parquet(cli_run / name)
        assert table.schema == written.schema, name
        assert table.equals(written), name
        assert dict(in_memory.metadata) == read_metadata(cli_run / name), name
    assert in_memory.row["seed"] == 3 and in_memory.config.scheduler.name == "fifo"
    assert in_memory.timing is not None and in_memory.timing.total_seconds > 0


def test_written_back_the_results_are_the_commands_bytes(
    in_memory: gr.Results, cli_run: Path, tmp_path: Path
) -> None:
    in_memory.write(tmp_path / "kept")
    for name in RESULT_FILES:
        assert (tmp_path / "kept" / name).read_bytes() == (cli_run / name).read_bytes(), name
    assert json.loads((tmp_path / "kept" / DONE_MARKER).read_text()) == json.loads(
        (cli_run / DONE_MARKER).read_text()
    )
    assert json.loads((tmp_path / "kept" / "STATUS").read_text())["status"] == "done"
    assert gr.load(tmp_path / "kept").jobs.equals(in_memory.jobs)


def test_run_writes_nothing(trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cwd, tmp, out = tmp_path / "cwd", tmp_path / "tmp", tmp_path / "out"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    before = sorted(trace.parent.iterdir())
    res = gr.run(csv_overrides(trace, out, *EXTRA))
    assert res.jobs.height == 4
    assert list(cwd.iterdir()) == [] and list(tmp.iterdir()) == [] and not out.exists()
    assert sorted(trace.parent.iterdir()) == before


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (["cluster.nodez=2"], gr.ConfigError),  # a misspelt key
        (["scheduler=fiffo"], gr.ConfigError),  # a group without that option
        (["seed=abc"], gr.ConfigError),  # a value of the wrong type
        (["+workload.foo=1"], InputError),  # a key composition lets through, refused by the check
        (["max_samples=0"], InputError),  # out of range, found before the trace is read
    ],
)
def test_bad_overrides_fail_with_the_commands_message(
    trace: Path, tmp_path: Path, extra: list[str], error: type[Exception]
) -> None:
    args = csv_overrides(trace, tmp_path / "out", *extra)
    proc = gpureplay("run", *args)
    assert proc.returncode == 2, proc.stderr
    said = proc.stderr.split("gpureplay: error:\n", 1)[1].strip()
    with pytest.raises(error) as caught:
        gr.run(args)
    assert str(caught.value).strip() == said
    key = extra[0].lstrip("+").split("=")[0]
    assert key.split(".")[0] in said  # the message names the key or group
    assert not (tmp_path / "out" / "summary.parquet").exists()


def test_a_bad_trace_row_names_file_row_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit_time,duration,num_pods,gpu_milli\n1,0,-5,1,1000\n")
    args = csv_overrides(bad, tmp_path / "out")
    proc = gpureplay("run", *args)
    assert proc.returncode == 2
    with pytest.raises(InputError) as caught:
        gr.run(args)
    assert str(caught.value).strip() == proc.stderr.split("gpureplay: error:\n", 1)[1].strip()
    assert str(bad) in str(caught.value) and "duration" in str(caught.value)


def test_a_config_read_back_replays_the_same(in_memory: gr.Results, cli_run: Path) -> None:
    loaded = gr.load(cli_run)
    assert loaded.config == in_memory.config and loaded.folder == cli_run
    again = gr.run(config=loaded.config)
    for name, table in in_memory.tables.items():
        assert again.tables[name].equals(table), name
    changed = loaded.config.copy()
    changed.seed = 5
    with pytest.raises(TypeError, match="not both"):
        gr.run(["seed=1"], config=changed)


def test_load_reads_the_commands_folder_whole(in_memory: gr.Results, cli_run: Path) -> None:
    loaded = gr.load(str(cli_run))
    assert list(loaded.tables) == list(RESULT_FILES)
    for name, table in loaded.tables.items():
        assert table.equals(pl.read_parquet(cli_run / name)), name
    assert loaded.timing is not None and loaded.timing.compile_seconds >= 0
    assert loaded.metadata == in_memory.metadata


def _copy(folder: Path, to: Path) -> Path:
    to.mkdir(parents=True)
    for item in folder.iterdir():
        if item.is_file():
            (to / item.name).write_bytes(item.read_bytes())
    return to


def test_load_refuses_what_is_not_one_complete_run(cli_run: Path, cli_sweep: Path, tmp_path: Path) -> None:
    killed = _copy(cli_run, tmp_path / "killed")
    (killed / DONE_MARKER).unlink()
    with pytest.raises(InputError, match=r"killed: not a complete run: incomplete: no DONE marker"):
        gr.load(killed)
    failed = _copy(cli_run, tmp_path / "failed")
    (failed / DONE_MARKER).unlink()
    write_status(failed, "failed", "InputError: bad row")
    with pytest.raises(InputError, match=r"failed: not a complete run: failed: InputError: bad row"):
        gr.load(failed)
    truncated = _copy(cli_run, tmp_path / "truncated")
    (truncated / "jobs.parquet").write_bytes((cli_run / "jobs.parquet").read_bytes()[:100])
    with pytest.raises(
        InputError, match=r"truncated: not a complete run: unreadable: jobs.parquet is truncated"
    ):
        gr.load(truncated)
    with pytest.raises(InputError, match=r"holds 2 run folders, not one run: .*load_sweep"):
        gr.load(cli_sweep)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="empty: not a run folder"):
        gr.load(tmp_path / "empty")
    with pytest.raises(FileNotFoundError):
        gr.load(tmp_path / "missing")


def _points(sweep_dir: Path) -> dict[int, str]:
    """The sweep's point folders by seed (Hydra names them by every override, shortened with a hash)."""
    return {
        pl.read_parquet(done.parent / "summary.parquet")["seed"][0]: done.parent.name
        for done in sweep_dir.glob(f"*/{DONE_MARKER}")
    }


def test_load_sweep_reads_every_point(cli_sweep: Path) -> None:
    points = _points(cli_sweep)
    sweep = gr.load_sweep(cli_sweep)
    assert sorted(sweep) == sorted(points.values()) and len(sweep) == 2
    assert sweep.summary.columns[0] == "point"
    assert dict(sweep.summary.select("seed", "point").iter_rows()) == points
    for point in sweep:
        assert sweep[point].jobs.equals(pl.read_parquet(cli_sweep / point / "jobs.parquet"))
        assert sweep[point].folder == cli_sweep / point
    jobs = sweep.table("jobs")
    assert jobs.columns[0] == "point" and jobs.height == 8
    with pytest.raises(ValueError, match="no result table 'job'"):
        sweep.table("job")
    with pytest.raises(InputError, match="one run, not a sweep"):
        gr.load_sweep(cli_sweep / points[0])


def test_load_sweep_refuses_a_failed_point_unless_asked(cli_sweep: Path, tmp_path: Path) -> None:
    points = _points(cli_sweep)
    sweep_dir = tmp_path / "sweep"
    for point in points.values():
        _copy(cli_sweep / point, sweep_dir / point)
    (sweep_dir / points[1] / DONE_MARKER).unlink()
    write_status(sweep_dir / points[1], "failed", "InputError: bad row")
    with pytest.raises(InputError, match=r"~[0-9a-f]+: failed: InputError: bad row"):
        gr.load_sweep(sweep_dir)
    sweep = gr.load_sweep(sweep_dir, skip_incomplete=True)
    assert list(sweep) == [points[0]]
    assert [(item.folder.name, item.kind) for item in sweep.left_out] == [(points[1], "failed")]


def test_compare_is_the_commands_table(cli_run: Path, cli_sweep: Path, tmp_path: Path) -> None:
    roots = [cli_run, cli_sweep]
    proc = gpureplay("compare", *map(str, roots))
    assert proc.returncode == 0, proc.stderr
    table = gr.compare(roots)
    assert format_text(table) == proc.stdout.rstrip("\n")
    assert table.height == 3 and table.columns[-1] == "run"
    assert gr.compare(cli_sweep).height == 2  # one folder, not a list
    # A failed run among them is an error naming it, or left out when asked.
    failed = _copy(cli_run, tmp_path / "broken")
    (failed / DONE_MARKER).unlink()
    write_status(failed, "failed", "InputError: bad row")
    with pytest.raises(InputError, match="broken: failed"):
        gr.compare([cli_sweep, failed])
    assert gr.compare([cli_sweep, failed], skip_incomplete=True).height == 2


def test_import_gpureplay_loads_neither_the_api_nor_the_engine() -> None:
    code = (
        "import sys, gpureplay; "
        "assert not {'polars', 'numba', 'hydra', 'gpureplay.api'} & set(sys.modules), sys.modules.keys(); "
        "gpureplay.compose(['scheduler=fifo']); "
        # compose checks the scheduler against the scorers' registry (engine/fit/scorers.py, plain Python): no
        # kernel module (each imports engine.jit.config) and no numba
        "assert 'numba' not in sys.modules and 'gpureplay.engine.jit.config' not in sys.modules; "
        "print(sorted(n for n in gpureplay.__all__ if not n.startswith('_')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "'load_sweep'" in proc.stdout and "'run'" in proc.stdout
