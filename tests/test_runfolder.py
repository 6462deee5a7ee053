"""Run folders: one run at a time, a clean start, an honest status after SIGTERM, Ctrl-C or a failure."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpureplay.results.writer import DONE_MARKER
from gpureplay.runfolder import LOCK_FILE, FolderBusyError, hold_folder, is_held, start_run
from gpureplay.sweep import ERROR_FILE, STATUS_FILE, read_status

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "NUMBA_CACHE_DIR": str(REPO / ".cache" / "numba"), "PYTHONUNBUFFERED": "1"}
ENV.pop("HYDRA_FULL_ERROR", None)
ENV.pop("GPUREPLAY_PROGRESS", None)

#: A replay that stays in the engine for many seconds (invariants checked every cycle on 20,000 nodes:
#: about 16 s on a quiet 2-core machine).
LONG = (
    "trace=synthetic",
    "trace.n_jobs=100000",
    "cluster=homogeneous",
    "cluster.nodes=20000",
    "debug=true",
    "sample_interval=86400",
)


def gpureplay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpureplay", *args],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=REPO,
        check=False,
    )


def _default_sigint() -> None:
    # A test run in the background inherits SIGINT ignored; a user's terminal never does.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_long_run(out: Path, *extra: str) -> subprocess.Popen[str]:
    """Start LONG into ``out`` and return once its replay is under way (the engine is running)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpureplay", "run", *LONG, f"hydra.run.dir={out}", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=REPO,
        preexec_fn=_default_sigint,
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # the log line printed just before the replay starts
        if "cluster homogeneous:" in line:
            break
    assert proc.poll() is None, proc.communicate()
    time.sleep(1.5)  # into the engine (the cached kernels load in well under that)
    assert proc.poll() is None, "the long replay ended before the test could stop it"
    return proc


@pytest.fixture
def long_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    out = tmp_path / "run"
    proc = start_long_run(out, "seed=1")
    yield proc, out
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


def no_traceback(stderr: str) -> None:
    for word in ("Traceback", "KeyboardInterrupt", "SystemError", "TerminatedWorkerError"):
        assert word not in stderr, stderr


# --- 11: one run per folder ---------------------------------------------------------------------


def test_a_held_folder_refuses_a_second_holder_naming_the_first(tmp_path: Path) -> None:
    with hold_folder(tmp_path):
        assert is_held(tmp_path)
        with pytest.raises(FolderBusyError) as busy, hold_folder(tmp_path):
            pass
    text = str(busy.value)
    assert str(tmp_path) in text and f"pid {os.getpid()}" in text and "on host" in text
    assert not is_held(tmp_path)
    with hold_folder(tmp_path):  # released: taken again at once
        pass


def test_a_killed_holder_releases_its_folder(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import sys, time
                from gpureplay.runfolder import hold_folder
                with hold_folder({str(tmp_path)!r}):
                    print("held", flush=True)
                    time.sleep(120)
            """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(FolderBusyError, match=f"pid {holder.pid}"), hold_folder(tmp_path):
        pass
    holder.kill()  # SIGKILL: no clean-up runs, the kernel drops the lock
    holder.wait()
    with hold_folder(tmp_path):
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()


def test_second_run_into_a_busy_folder_fails_at_once_and_mixes_nothing(
    long_run: tuple[subprocess.Popen[str], Path], tiny_jobs_csv: Path
) -> None:
    first, out = long_run
    overrides_before = (out / ".hydra" / "overrides.yaml").read_text()
    assert "seed=1" in overrides_before
    second = gpureplay(
        "run",
        "trace=csv",
        f"trace.path={tiny_jobs_csv}",
        "cluster=homogeneous",
        "seed=2",
        f"hydra.run.dir={out}",
    )
    assert second.returncode == 2, second.stderr
    no_traceback(second.stderr)
    assert (
        str(out) in second.stderr
        and f"pid {first.pid}" in second.stderr
        and "in use by another" in second.stderr
    )
    assert (out / ".hydra" / "overrides.yaml").read_text() == overrides_before
    assert "seed: 1" in (out / ".hydra" / "config.yaml").read_text()
    assert (read_status(out) or {}).get("status") == "running"
    assert first.poll() is None, "the first run must go on"


# --- 12: stale files and SIGTERM ----------------------------------------------------------------


def test_start_run_clears_marker_first_then_everything_an_earlier_run_left(tmp_path: Path) -> None:
    for name in (DONE_MARKER, ERROR_FILE, "jobs.parquet", "timeline.parquet", ".jobs.parquet.tmp-99"):
        (tmp_path / name).write_text("old\n")
    (tmp_path / STATUS_FILE).write_text(json.dumps({"status": "done", "time": 0.0}) + "\n")
    start_run(tmp_path, ("jobs.parquet", "timeline.parquet", "summary.parquet"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATUS_FILE]
    assert (read_status(tmp_path) or {}).get("status") == "running"


def test_sigterm_after_a_complete_run_leaves_an_interrupted_folder(
    tmp_path: Path, tiny_jobs_csv: Path
) -> None:
    out = tmp_path / "run"
    done = gpureplay(
        "run", "trace=csv", f"trace.path={tiny_jobs_csv}", "cluster=homogeneous", f"hydra.run.dir={out}"
    )
    assert done.returncode == 0, done.stderr
    assert (out / DONE_MARKER).is_file() and (read_status(out) or {}).get("status") == "done"

    rerun = start_long_run(out)
    rerun.send_signal(signal.SIGTERM)
    _, stderr = rerun.communicate(timeout=120)
    assert rerun.returncode == 128 + signal.SIGTERM, stderr
    assert stderr.strip().endswith("gpureplay: interrupted")
    no_traceback(stderr)
    assert (read_status(out) or {}).get("status") == "interrupted"
    assert not (out / DONE_MARKER).exists() and not (out / "jobs.parquet").exists()
    assert not (out / ERROR_FILE).exists() and not list(out.glob(".*.tmp-*"))


def test_a_later_success_removes_the_error_of_a_failed_run(tmp_path: Path, tiny_jobs_csv: Path) -> None:
    out = tmp_path / "run"
    failed = gpureplay("run", "trace=csv", f"trace.path={tmp_path / 'missing.csv'}", f"hydra.run.dir={out}")
    assert failed.returncode == 2 and (out / ERROR_FILE).is_file()
    assert (read_status(out) or {}).get("status") == "failed"
    ok = gpureplay(
        "run", "trace=csv", f"trace.path={tiny_jobs_csv}", "cluster=homogeneous", f"hydra.run.dir={out}"
    )
    assert ok.returncode == 0, ok.stderr
    assert (out / DONE_MARKER).is_file() and not (out / ERROR_FILE).exists()
    assert (read_status(out) or {}).get("status") == "done"


# --- 13: Ctrl-C ---------------------------------------------------------------------------------


def test_ctrl_c_during_a_replay_prints_one_line_and_exits_130(
    long_run: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, out = long_run
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "gpureplay: interrupted"
    no_traceback(stderr)
    assert not (out / DONE_MARKER).exists() and not (out / "jobs.parquet").exists()
    assert (read_status(out) or {}).get("status") == "interrupted"
