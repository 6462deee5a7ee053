"""Resumable sweeps: per-point status files and the closing count of a multirun.

Every run (a sweep point or a single run) keeps a ``STATUS`` file in its
folder: ``running`` from its start (:func:`gpureplay.runfolder.start_run`), then
``done`` (replayed now), ``skipped`` (already complete from an earlier run of
the same sweep folder), ``failed`` (with ``ERROR.txt`` holding the error and
the point's config) or ``interrupted`` (Ctrl-C or SIGTERM). ``running`` with
nobody holding the folder's lock means the process was killed outright.
:class:`SweepSummary`, a Hydra callback, counts the statuses written during
this invocation and prints one line, whatever the launcher (joblib, Ray,
Slurm): the files are the only channel every launcher shares with the process
that started the sweep. A point left ``running`` by a killed process is
recorded as failed then (:func:`write_killed`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

#: Per-point status file (JSON: status, time, error).
STATUS_FILE = "STATUS"
#: Per-point error report of a failed point.
ERROR_FILE = "ERROR.txt"
STATUSES = ("running", "done", "skipped", "failed", "interrupted")


#: Longest sweep-point folder name kept as Hydra's ``override_dirname`` gives it, in bytes (file names
#: may be 255 bytes on the usual filesystems; the rest of the path counts against PATH_MAX).
MAX_POINT_DIR_BYTES = 120

#: Characters a folder name cannot hold (a slash makes folders) or should not (control characters).
_UNSAFE = re.compile(r"[/\\\x00-\x1f\x7f]+")
#: A value in ``key=value,key=value``: up to the next ``,`` that starts another ``key=``.
_VALUE = re.compile(r"=(.*?)(?=,[^,=]+=|$)")


def point_dir(override_dirname: str) -> str:
    """A sweep point's folder name: Hydra's ``override_dirname``, flat and of bounded length.

    The name Hydra builds (``scheduler=fifo,seed=0``) is kept when it is safe, so that a sweep
    folder written before resumes as it did. A value holding a path keeps its last component
    (``scheduler.manifests=/srv/q/kueue`` gives ``scheduler.manifests=kueue``: a slash made one
    folder level per path component), other unsafe characters become ``_``, a name still too long
    is cut, and a changed name ends with ``~`` and a hash of the whole ``override_dirname``, which
    keeps two points apart whatever was shortened. Registered as the resolver
    ``gpureplay.point_dir`` (``hydra.sweep.subdir`` in ``conf/config.yaml``).

    Examples
    --------
    >>> point_dir("scheduler=fifo,seed=0")
    'scheduler=fifo,seed=0'
    >>> point_dir("scheduler.manifests=/srv/queues/kueue,seed=1")
    'scheduler.manifests=kueue,seed=1~3e209ea772'
    >>> len(point_dir("trace.path=" + "x" * 300).encode()) <= MAX_POINT_DIR_BYTES
    True
    """
    if not _UNSAFE.search(override_dirname) and len(override_dirname.encode()) <= MAX_POINT_DIR_BYTES:
        return override_dirname
    digest = "~" + hashlib.sha256(override_dirname.encode()).hexdigest()[:10]

    def last_component(found: re.Match[str]) -> str:
        value = found[1]
        return "=" + (value.rstrip("/").rsplit("/", 1)[-1] or value) if "/" in value else found[0]

    readable = _UNSAFE.sub("_", _VALUE.sub(last_component, override_dirname))
    room = MAX_POINT_DIR_BYTES - len(digest)
    while len(readable.encode()) > room:
        readable = readable[:-1]
    return readable + digest


def write_status(folder: Path, status: str, error: str | None = None) -> None:
    """Atomically record a point's status (and, when failed, its error)."""
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"status": status, "time": time.time(), "pid": os.getpid(), "error": error}
    tmp = folder / f".{STATUS_FILE}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(payload) + "\n")
    os.replace(tmp, folder / STATUS_FILE)


def write_error(folder: Path, err: BaseException, cfg: DictConfig) -> None:
    """Write the error, its traceback and the point's resolved config to ``ERROR.txt``."""
    text = "".join(traceback.format_exception(err))
    config = OmegaConf.to_yaml(cfg, resolve=False)
    tmp = folder / f".{ERROR_FILE}.tmp-{os.getpid()}"
    tmp.write_text(f"{type(err).__name__}: {err}\n\n{text}\nconfig:\n{config}")
    os.replace(tmp, folder / ERROR_FILE)


def write_killed(folder: Path, how: str, cfg: DictConfig | None) -> None:
    """Record a point whose process died without a word (SIGKILL, a crash) as failed.

    Parameters
    ----------
    folder
        The point's folder.
    how
        How it died, e.g. ``"killed by SIGKILL"``.
    cfg
        The point's config, written into ``ERROR.txt`` (None when unknown).
    """
    folder.mkdir(parents=True, exist_ok=True)
    advice = (
        "The operating system stopped the process: SIGKILL most often comes from the out-of-memory "
        "killer (see `dmesg` or the job scheduler's log); lower the point's memory (fewer jobs, a longer "
        "sample_interval) or run fewer points at once (hydra.launcher.n_jobs=1)."
        if "SIGKILL" in how
        else "The process ended without reporting an error (a crash in native code, or a signal)."
    )
    config = OmegaConf.to_yaml(cfg, resolve=False) if cfg is not None else "(unknown)\n"
    tmp = folder / f".{ERROR_FILE}.tmp-{os.getpid()}"
    tmp.write_text(f"point process {how}\n\n{advice}\n\nconfig:\n{config}")
    os.replace(tmp, folder / ERROR_FILE)
    write_status(folder, "failed", f"point process {how}")


def read_status(folder: Path) -> dict[str, Any] | None:
    """The point's status record, or None if it has none (never started or killed)."""
    try:
        return dict(json.loads((folder / STATUS_FILE).read_text()))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def count_statuses(sweep_dir: Path, since: float) -> dict[str, list[Path]]:
    """Point folders under ``sweep_dir`` by status, counting only statuses written after ``since``."""
    found: dict[str, list[Path]] = {s: [] for s in STATUSES}
    for status_file in sorted(Path(sweep_dir).rglob(STATUS_FILE)):
        record = read_status(status_file.parent)
        if record is not None and record.get("time", 0.0) >= since and record.get("status") in found:
            found[record["status"]].append(status_file.parent)
    return found


class SweepSummary(Callback):
    """Hydra callback: print ``sweep: N points: X done, Y skipped, Z failed`` at the end of a multirun.

    Exits with status 1 after printing when any point failed, so scripts and CI
    notice; the other points have all run by then.
    """

    def __init__(self) -> None:
        self.started = time.time()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # Status files are compared with this moment; a little slack covers clock skew on shared filesystems.
        self.started = time.time() - 1.0

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from gpureplay.runfolder import is_held

        sweep_dir = Path(config.hydra.sweep.dir)
        found = count_statuses(sweep_dir, self.started)
        # A point still `running` whose lock nobody holds died without a word (a launcher that does not
        # isolate worker deaths, e.g. Ray or Slurm): record it as failed so the count adds up.
        for folder in [f for f in found["running"] if not is_held(f)]:
            write_killed(folder, "died without a status (killed, or crashed in native code)", None)
            found["running"].remove(folder)
            found["failed"].append(folder)
        # A point stopped by SIGTERM alone (e.g. a preempted Slurm job) did not complete either.
        found["failed"].extend(found.pop("interrupted"))
        total = sum(len(v) for v in found.values())
        line = (
            f"sweep {sweep_dir}: {total} points: {len(found['done'])} done, "
            f"{len(found['skipped'])} skipped, {len(found['failed'])} failed"
        )
        print(line, file=sys.stderr)
        for folder in found["failed"]:
            record = read_status(folder) or {}
            print(f"  failed: {folder}: {record.get('error')} (see {folder / ERROR_FILE})", file=sys.stderr)
        if found["failed"]:
            sys.exit(1)
