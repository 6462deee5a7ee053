"""A run folder's life: one run at a time (an OS lock), a clean start, a status at the end.

Order matters, so that a folder never looks more complete than it is:

1. :func:`hold_folder` takes an exclusive ``flock`` on ``.lock`` in the folder.
   A second run into the same folder fails at once with :class:`FolderBusyError`
   naming the holder. The kernel drops the lock when the holder's process ends,
   however it ends (SIGKILL included), so a stale lock never blocks a re-run.
2. :func:`start_run` removes the ``DONE`` marker first, records ``STATUS``
   ``running``, then removes what an earlier run left: ``ERROR.txt``, result
   files and temporaries of a killed writer.
3. The run ends by writing ``DONE`` (all results in place) and ``STATUS``
   ``done``, or ``STATUS`` ``failed`` with ``ERROR.txt``, or ``STATUS``
   ``interrupted`` (Ctrl-C, SIGTERM). A folder whose ``STATUS`` says
   ``running`` while no process holds its lock was killed outright.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from gpureplay.results.writer import DONE_MARKER, clear_run
from gpureplay.sweep import ERROR_FILE, write_status

__all__ = [
    "HYDRA_SUBDIR",
    "LOCK_FILE",
    "SWEEP_LOCK_FILE",
    "FolderBusyError",
    "hold_folder",
    "is_held",
    "start_run",
    "write_hydra_files",
]

#: Lock file of a run folder.
LOCK_FILE = ".lock"
#: Lock file of a sweep folder, held by the process that launches the sweep's points.
SWEEP_LOCK_FILE = ".sweep.lock"
#: Where a run keeps its composed config, as Hydra names it.
HYDRA_SUBDIR = ".hydra"


class FolderBusyError(Exception):
    """Another process holds the run (or sweep) folder's lock.

    Parameters
    ----------
    folder
        The folder.
    holder
        What the holder wrote into the lock file (pid, host, start time,
        command), or an empty dict when it could not be read.
    """

    def __init__(self, folder: Path, holder: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.holder = holder
        super().__init__(str(self))

    def __reduce__(self) -> tuple[type[FolderBusyError], tuple[Path, dict[str, Any]]]:
        return (type(self), (self.folder, self.holder))

    def __str__(self) -> str:
        h = self.holder
        if h.get("pid") is not None:
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(h.get("started", 0.0))))
            who = f"pid {h['pid']} on host {h.get('host', '?')}, since {since}"
            if h.get("command"):
                who += f": {h['command']}"
        else:
            who = "a process that has not said who it is yet"
        return (
            f"{self.folder} is in use by another gpureplay run ({who}). Two runs into one folder would mix "
            "their files: wait for it to end, or write elsewhere (hydra.run.dir=... / hydra.sweep.dir=...)."
        )


def _holder_record() -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.time(),
        "command": " ".join(["gpureplay" if i == 0 else a for i, a in enumerate(sys.argv)]),
    }


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 65_536, 0)
        record = json.loads(raw.decode()) if raw else {}
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


@contextlib.contextmanager
def hold_folder(folder: Path, lock_name: str = LOCK_FILE) -> Iterator[None]:
    """Hold ``folder``'s lock (created with the folder if needed) for the duration of the block.

    Parameters
    ----------
    folder
        The run or sweep folder.
    lock_name
        Lock file inside it: :data:`LOCK_FILE` for a run, :data:`SWEEP_LOCK_FILE` for a sweep.

    Raises
    ------
    FolderBusyError
        At once, when another process (or another open of the file in this
        one) holds it.

    Notes
    -----
    ``flock(2)`` locks belong to the open file and vanish with the process,
    whatever kills it. The lock file stays (removing it would let two runs
    lock two different files of one name); it holds the last holder's pid,
    host, start time and command, which the error message quotes. On network
    filesystems ``flock`` may only lock against processes of the same host.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / lock_name, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusyError(folder, _read_holder(fd)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(_holder_record()) + "\n").encode(), 0)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_held(folder: Path, lock_name: str = LOCK_FILE) -> bool:
    """True when a process holds ``folder``'s lock now (e.g. to tell a running run from a killed one)."""
    path = Path(folder) / lock_name
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def start_run(folder: Path, result_files: Iterable[str]) -> None:
    """Clear what an earlier run left in ``folder`` and mark it ``running``; call with its lock held.

    The ``DONE`` marker goes first, so that from the first step on the folder
    reads as incomplete; then ``STATUS`` says ``running``; then ``ERROR.txt``,
    the result files and temporaries go.
    """
    folder = Path(folder)
    with contextlib.suppress(FileNotFoundError):
        (folder / DONE_MARKER).unlink()
    write_status(folder, "running")
    clear_run(folder, (ERROR_FILE, *result_files))


def write_hydra_files(folder: Path, task_cfg: DictConfig, hydra_cfg: Any, overrides: list[str]) -> None:
    """Write ``.hydra/config.yaml``, ``hydra.yaml`` and ``overrides.yaml`` as Hydra would, each atomically.

    gpureplay's config sets ``hydra.output_subdir: null`` so that Hydra writes
    nothing into a folder before the run holds its lock; the run writes these
    files itself once it does.
    """
    target = Path(folder) / HYDRA_SUBDIR
    target.mkdir(parents=True, exist_ok=True)
    documents = {
        "config.yaml": OmegaConf.to_yaml(task_cfg),
        "hydra.yaml": OmegaConf.to_yaml(OmegaConf.create({"hydra": hydra_cfg})),
        "overrides.yaml": OmegaConf.to_yaml(OmegaConf.create(list(overrides))),
    }
    for name, text in documents.items():
        tmp = target / f".{name}.tmp-{os.getpid()}"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target / name)
