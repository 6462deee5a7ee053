"""Sweeps: resumable after SIGKILL, failures (and points the system kills) recorded without stopping the
others, one sweep per folder, bad values refused up front, Ray and Slurm equal joblib."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from tests.cli import gpureplay
from tests.slurm_cluster import (
    PARTITION,
    SlurmCluster,
    SlurmUnavailable,
    processes_of,
    start_one_node_cluster,
)

from gpureplay.replay.progress import COMPILE_NOTICE
from gpureplay.results.writer import DONE_MARKER, is_done
from gpureplay.runfolder import SWEEP_LOCK_FILE, hold_folder
from gpureplay.sweep import ERROR_FILE, read_status

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "NUMBA_CACHE_DIR": str(REPO / ".cache" / "numba"), "PYTHONUNBUFFERED": "1"}

#: Four points, each a real replay of a few seconds: synthetic Philly-mix jobs on a small cluster.
POINTS = ("seed=0,1", "scheduler=fifo,gang-binpack")
BASE = (
    "trace=synthetic",
    "trace.n_jobs=20000",
    "trace.load=4.0",
    "cluster=homogeneous",
    "cluster.nodes=40",
    "cluster.gpus_per_node=8",
    "sample_interval=86400",
)
#: The launchers as docs/sweeps-reports.md shows them, each after the cluster its test starts.
RAY_LAUNCHER = ("hydra/launcher=ray_cluster", "hydra.launcher.ray.init.address=127.0.0.1:6379")
#: The shipped conf/hydra/launcher/slurm.yaml on the test cluster's partition, asking 1 GB a point (a point
#: of this sweep peaks at about 0.3 GB) where the config asks 8 GB, more than a small CI runner may declare.
SLURM_LAUNCHER = ("hydra/launcher=slurm", f"hydra.launcher.partition={PARTITION}", "hydra.launcher.mem_gb=1")


def sweep_cmd(sweep_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gpureplay",
        "run",
        "-m",
        *BASE,
        *POINTS,
        f"hydra.sweep.dir={sweep_dir}",
        *extra,
    ]


def point_dirs(sweep_dir: Path) -> list[Path]:
    """Every point folder Hydra started (it holds `.hydra/`), at any depth: paths in overrides nest."""
    return sorted(p.parent for p in sweep_dir.rglob(".hydra"))


def results_of(sweep_dir: Path) -> dict[str, pl.DataFrame]:
    return {str(p.relative_to(sweep_dir)): pl.read_parquet(p / "jobs.parquet") for p in point_dirs(sweep_dir)}


def leftovers(sweep_dir: Path) -> list[Path]:
    return [p for p in sweep_dir.rglob(".*.tmp-*")]


@pytest.fixture(scope="module")
def reference_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same sweep run without interruption, with the default (joblib) launcher."""
    sweep_dir = tmp_path_factory.mktemp("reference") / "sweep"
    proc = subprocess.run(
        sweep_cmd(sweep_dir), capture_output=True, text=True, env=ENV, cwd=REPO, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "4 points: 4 done, 0 skipped, 0 failed" in proc.stderr
    return sweep_dir


@pytest.mark.slow
def test_sigkill_mid_sweep_then_rerun_gives_identical_results(reference_sweep: Path, tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep"
    # One point at a time (basic launcher) so a kill lands between and inside points.
    cmd = sweep_cmd(sweep_dir, "hydra/launcher=basic")
    proc = subprocess.Popen(
        cmd, env=ENV, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if sweep_dir.exists() and any(is_done(p) for p in point_dirs(sweep_dir)):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be killed; make the points longer"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = [p.name for p in point_dirs(sweep_dir) if is_done(p)]
    assert 1 <= len(done_before) < 4

    rerun = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(done_before)} skipped, 0 failed" in rerun.stderr
    assert f"4 points: {4 - len(done_before)} done" in rerun.stderr
    assert leftovers(sweep_dir) == []
    ours, reference = results_of(sweep_dir), results_of(reference_sweep)
    assert ours.keys() == reference.keys()
    for name, jobs in ours.items():
        assert jobs.equals(reference[name]), name


def test_failed_point_is_recorded_and_others_run(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep"
    missing = tmp_path / "missing.csv"
    cmd = [
        sys.executable,
        "-m",
        "gpureplay",
        "run",
        "-m",
        "trace=csv",
        f"trace.path={tiny_jobs_csv},{missing}",
        "cluster=homogeneous",
        "cluster.nodes=1",
        "scheduler=fifo,gang-binpack",
        f"hydra.sweep.dir={sweep_dir}",
        "hydra/launcher=basic",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, check=False)
    assert proc.returncode == 1
    assert "4 points: 2 done, 0 skipped, 2 failed" in proc.stderr
    failed = [p for p in point_dirs(sweep_dir) if (read_status(p) or {}).get("status") == "failed"]
    assert len(failed) == 2
    for folder in failed:
        error = (folder / ERROR_FILE).read_text()
        assert "missing.csv" in error and "scheduler:" in error  # the error and the point's config
        assert not (folder / "jobs.parquet").exists() and not (folder / DONE_MARKER).exists()


def _can_isolate_network() -> bool:
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False)
    return probe.returncode == 0 and shutil.which("ip") is not None


@pytest.mark.slow
def test_ray_launcher_matches_joblib(reference_sweep: Path, tmp_path: Path) -> None:
    ray = shutil.which("ray", path=str(Path(sys.executable).parent))
    if ray is None:
        pytest.skip("Ray is not installed (pip install 'gpureplay[ray]'); make test installs it")
    if not _can_isolate_network():
        pytest.skip("needs `unshare --net` (root) to keep the Ray cluster on loopback only")
    # Ray picks the host's outward address even when told 127.0.0.1, so the head, its workers and the
    # sweep run in a fresh network namespace whose only interface is loopback: nothing leaves the machine.
    # A short folder: Ray's unix-socket paths must stay under ~107 characters.
    ray_tmp = Path(tempfile.mkdtemp(prefix="gr-ray-", dir="/tmp"))
    sweep_dir = tmp_path / "sweep"
    sweep = shlex.join(sweep_cmd(sweep_dir, *RAY_LAUNCHER))
    script = f"""
set -u
ip link set lo up
{shlex.quote(ray)} start --head --node-ip-address=127.0.0.1 --port=6379 --num-cpus=2 \
    --include-dashboard=false --disable-usage-stats --temp-dir={ray_tmp} >/dev/null || exit 90
{sweep}
rc=$?
{shlex.quote(ray)} stop --force >/dev/null 2>&1
exit $rc
"""
    env = {**ENV, "RAY_USAGE_STATS_ENABLED": "0"}
    try:
        proc = subprocess.run(
            ["unshare", "--net", "bash", "-c", script],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            check=False,
            timeout=900,
        )
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "4 points: 4 done" in proc.stderr
    ours, reference = results_of(sweep_dir), results_of(reference_sweep)
    assert ours.keys() == reference.keys()
    for name, jobs in ours.items():
        assert jobs.equals(reference[name]), name


@pytest.fixture
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A one-node Slurm cluster (tests/slurm_cluster.py) for one test, stopped after it whatever happens.

    Skips, with the reason, when the submitit launcher or Slurm is not installed, or when this machine
    cannot run the daemons (their last log lines are in the reason).
    """
    pytest.importorskip(
        "hydra_plugins.hydra_submitit_launcher",
        reason="hydra-submitit-launcher is not installed (pip install 'gpureplay[slurm]', as make test does)",
    )
    try:
        cluster = start_one_node_cluster()
    except SlurmUnavailable as err:
        pytest.skip(f"no one-node Slurm cluster here: {err}")
    yield cluster
    ended = cluster.stop()
    assert not ended, f"processes of the test's Slurm cluster outlived its daemons and were killed: {ended}"


def test_the_slurm_cluster_stops_with_a_job_running(slurm_cluster: SlurmCluster) -> None:
    # The sweep test's teardown after a failure mid-sweep: jobs still running under slurmstepd, which is
    # in a session of its own, must not outlive the cluster.
    env = slurm_cluster.env
    submit = subprocess.run(
        ["sbatch", "--parsable", "--output=/dev/null", "--wrap", "sleep 300"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert submit.returncode == 0, submit.stderr
    job = submit.stdout.strip()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = subprocess.run(
            ["squeue", "--noheader", "--jobs", job, "--format", "%T"], env=env, capture_output=True, text=True
        ).stdout.strip()
        if state == "RUNNING":
            break
        time.sleep(0.2)
    assert state == "RUNNING"
    # RUNNING is reported once slurmstepd starts, a moment before it forks the job's own process.
    while time.monotonic() < deadline:
        processes = processes_of(slurm_cluster.conf)
        if any("sleep 300" in cmd for cmd in processes.values()):
            break
        time.sleep(0.2)
    assert any("sleep 300" in cmd for cmd in processes.values()), processes

    assert slurm_cluster.stop() == []  # nothing had to be killed
    assert processes_of(slurm_cluster.conf) == {}
    assert not slurm_cluster.folder.exists()


def _submitit_logs(sweep_dir: Path, lines: int = 20) -> str:
    """The last lines of every Slurm job's stdout and stderr (submitit's files), for a failure's message."""
    logs = sorted((sweep_dir / ".submitit").glob("*/*_log.*"))
    return "\n".join(f"--- {p.name}:\n" + "\n".join(p.read_text().splitlines()[-lines:]) for p in logs)


@pytest.mark.slow
def test_slurm_launcher_matches_joblib(
    reference_sweep: Path, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    sweep_dir = tmp_path / "sweep"
    # sbatch passes the submitting process's environment to the job (Slurm's default --export=ALL; submitit
    # sets none): SLURM_CONF finds the test cluster, NUMBA_CACHE_DIR and NUMBA_OPT the kernels the reference
    # sweep compiled. With no slurmdbd, submitit's sacct calls fail (it warns) and it waits on result files.
    env = {**ENV, "SLURM_CONF": str(slurm_cluster.conf)}
    try:
        proc = subprocess.run(
            sweep_cmd(sweep_dir, *SLURM_LAUNCHER),
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            check=False,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the Slurm sweep ran past 600 s\n{_submitit_logs(sweep_dir)}\n{slurm_cluster.logs()}")
    assert proc.returncode == 0, f"{proc.stderr[-4000:]}\n{_submitit_logs(sweep_dir)}"
    assert "4 points: 4 done, 0 skipped, 0 failed" in proc.stderr
    # Each point ran as a task of one Slurm job array: submitit keeps each task's pickled result.
    assert len(list((sweep_dir / ".submitit").glob("*_*/*_result.pkl"))) == 4
    ours, reference = results_of(sweep_dir), results_of(reference_sweep)
    assert ours.keys() == reference.keys()
    for name, jobs in ours.items():
        assert jobs.equals(reference[name]), name
        # The job found the kernels in the shared cache: a point that compiled would say so in its log.
        assert COMPILE_NOTICE not in (sweep_dir / name / "app.log").read_text(), name

    report = gpureplay("report", str(sweep_dir), "-o", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    assert "left out" not in report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "4 run(s) in 2 configuration(s), differing in scheduler.name" in text


def test_the_sweeps_page_shows_the_launcher_commands_these_tests_run() -> None:
    page = (REPO / "docs" / "sweeps-reports.md").read_text()
    # The page wraps long commands with a backslash at the end of a line: read it as one line.
    flat = " ".join(page.replace("\\\n", " ").split())
    sweep = " ".join((*BASE, *POINTS))
    for launcher in (RAY_LAUNCHER, SLURM_LAUNCHER):
        assert f"{sweep} hydra.sweep.dir=" in flat
        assert " ".join(launcher) in flat, launcher


KILLER = '''
"""A Hydra callback that kills the point it runs in when its seed is the one given (a stand-in for OOM)."""
import os
import signal

from hydra.experimental.callback import Callback


class KillPoint(Callback):
    def __init__(self, seed: int) -> None:
        self.seed = seed

    def on_job_start(self, config, **kwargs):
        if config.seed == self.seed:
            os.kill(os.getpid(), signal.SIGKILL)
'''


def test_a_point_killed_by_the_system_is_recorded_and_the_sweep_goes_on(
    tiny_jobs_csv: Path, tmp_path: Path
) -> None:
    (tmp_path / "killer.py").write_text(KILLER)
    sweep_dir = tmp_path / "sweep"
    cmd = [
        sys.executable,
        "-m",
        "gpureplay",
        "run",
        "-m",
        "trace=csv",
        f"trace.path={tiny_jobs_csv}",
        "cluster=homogeneous",
        "cluster.nodes=1",
        "seed=0,1,2,3",
        f"hydra.sweep.dir={sweep_dir}",
        "hydra.sweep.subdir=seed_${seed}",
        "hydra.launcher.n_jobs=2",
        "+hydra.callbacks.killer._target_=killer.KillPoint",
        "+hydra.callbacks.killer.seed=1",
    ]
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, check=False, timeout=600)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "TerminatedWorkerError" not in proc.stderr, proc.stderr
    assert "4 points: 3 done, 0 skipped, 1 failed" in proc.stderr
    killed = sweep_dir / "seed_1"
    assert (read_status(killed) or {}).get("status") == "failed"
    error = (killed / ERROR_FILE).read_text()
    assert "killed by SIGKILL (signal 9)" in error and "out-of-memory" in error and "seed: 1" in error
    assert not (killed / DONE_MARKER).exists()
    for seed in (0, 2, 3):
        assert is_done(sweep_dir / f"seed_{seed}"), seed


def test_a_second_sweep_into_a_busy_sweep_folder_fails_at_once(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep"
    cmd = [
        sys.executable,
        "-m",
        "gpureplay",
        "run",
        "-m",
        "trace=csv",
        f"trace.path={tiny_jobs_csv}",
        "seed=0,1",
        f"hydra.sweep.dir={sweep_dir}",
    ]
    with hold_folder(sweep_dir, SWEEP_LOCK_FILE):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{sweep_dir} is in use by another gpureplay run (pid {os.getpid()}" in proc.stderr
    assert not any(sweep_dir.glob("seed=*"))


def test_a_bad_value_in_a_sweep_fails_before_any_point_runs(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep"
    cmd = [
        sys.executable,
        "-m",
        "gpureplay",
        "run",
        "-m",
        "trace=csv",
        f"trace.path={tiny_jobs_csv}",
        "sample_interval=3600,0",
        f"hydra.sweep.dir={sweep_dir}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "config key 'sample_interval': must be a number of seconds > 0" in proc.stderr
    assert "sample_interval=0" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(sweep_dir.rglob("STATUS"))


def test_a_point_whose_inputs_are_bad_fails_the_sweep_before_any_point_runs(tmp_path: Path) -> None:
    # Issue 43, item 14: Kueue manifests whose flavor selects A100 nodes, on Philly's cluster (it has none).
    # Every key is valid, so only the inputs show it; both points failed one after the other (rc 1).
    sweep_dir = tmp_path / "sweep"
    cmd = [
        sys.executable,
        "-m",
        "gpureplay",
        "run",
        "-m",
        "scheduler=kueue",
        "scheduler.quotas=manifests",
        f"scheduler.manifests={REPO / 'examples' / 'manifests' / 'kueue'}",
        "seed=0,1",
        f"hydra.sweep.dir={sweep_dir}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "flavor 'a100' selects NVIDIA-A100-SXM4-80GB nodes, and the cluster has none" in proc.stderr
    assert "(point #0: " in proc.stderr and "(point #1: " in proc.stderr and "Traceback" not in proc.stderr
    assert not list(sweep_dir.rglob("STATUS"))


def test_point_folders_are_flat_named_by_overrides_and_a_rerun_skips_them(
    tiny_jobs_csv: Path, tmp_path: Path
) -> None:
    # An absolute path among the overrides nested each point as many folders deep as the path.
    sweep_dir = tmp_path / "sweep"
    cmd = [
        sys.executable,
        "-m",
        "gpureplay",
        "run",
        "-m",
        "trace=csv",
        f"trace.path={tiny_jobs_csv}",
        "cluster=homogeneous",
        "cluster.nodes=1",
        "scheduler=fifo",
        "seed=0,1",
        f"hydra.sweep.dir={sweep_dir}",
        "hydra/launcher=basic",
    ]
    first = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, check=False)
    assert first.returncode == 0, first.stderr
    assert "2 points: 2 done, 0 skipped, 0 failed" in first.stderr
    points = point_dirs(sweep_dir)
    assert [p.parent for p in points] == [sweep_dir, sweep_dir]
    for seed, point in enumerate(points):
        expected = (
            f"cluster.nodes=1,cluster=homogeneous,scheduler=fifo,seed={seed},trace.path=jobs.csv,trace=csv~"
        )
        assert point.name.startswith(expected), point.name
        assert "/" not in point.name and len(point.name.encode()) <= 120
    again = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, check=False)
    assert again.returncode == 0, again.stderr
    assert "2 points: 0 done, 2 skipped, 0 failed" in again.stderr
    assert point_dirs(sweep_dir) == points
