"""The Hydra entry point: compose the config, hand it to :func:`run_experiment`.

Kept thin on purpose (see STYLE.md): joblib/Ray workers pickle this module's
task function, so nothing numba-compiled may live here.

:func:`main` is Hydra's task function: one run into one folder, which it locks
for the run's duration (:mod:`gpureplay.runfolder`). In a multirun, a point
whose folder is already complete is skipped, and a point that fails records
its error and returns, so the other points go on. A single run recomputes
always. :func:`run` is what ``gpureplay run`` calls: it turns every way a run
can end into one exit status and at most one short message.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from gpureplay.config import register_configs

register_configs()
log = logging.getLogger("gpureplay")

#: Exit statuses of ``gpureplay run`` (an interrupted run exits with 128 + the signal number).
EXIT_FAILED = 1  # an unexpected error (a bug: the traceback is printed), or a sweep with failed points
EXIT_USAGE = 2  # bad input, bad config, or a folder another run holds: a message, no traceback


@hydra.main(version_base="1.3", config_path="pkg://gpureplay.conf", config_name="config")
def main(cfg: DictConfig) -> Any:
    """Run one replay into Hydra's output folder; return its summary row (None if it failed).

    A single run that meets bad input prints the message and exits with
    :data:`EXIT_USAGE` from here (a ``SystemExit`` passes Hydra's job runner
    without its "Error executing job" banner); any other error propagates.
    """
    from gpureplay.errors import InputError
    from gpureplay.runfolder import FolderBusyError, hold_folder

    hydra_cfg = HydraConfig.get()
    out = Path(hydra_cfg.runtime.output_dir)
    sweeping = hydra_cfg.mode == RunMode.MULTIRUN
    try:
        with hold_folder(out):
            return _run_in_folder(cfg, out, sweeping)
    except (InputError, FileNotFoundError, FolderBusyError) as err:
        if sweeping:  # only a busy folder gets here from a sweep: other errors are the point's own
            raise
        _usage_exit(str(err))


def _run_in_folder(cfg: DictConfig, out: Path, sweeping: bool) -> Any:
    """The run proper, with ``out`` locked: skip, or clear, replay, and record how it ended.

    The config is checked before the replay's modules (the engine among them) are imported, so a bad
    key is reported in the time Hydra takes to compose, not after loading every kernel.
    """
    from gpureplay.config_check import check_config
    from gpureplay.interrupts import Interrupted, terminate_raises
    from gpureplay.results.writer import RESULT_FILES, is_done
    from gpureplay.runfolder import start_run, write_hydra_files
    from gpureplay.sweep import write_error, write_status

    hydra_cfg = HydraConfig.get()
    if sweeping and is_done(out):
        from gpureplay.experiment import load_summary

        write_status(out, "skipped")
        log.info("complete already, skipped: %s", out)
        return load_summary(out)
    with terminate_raises():
        start_run(out, RESULT_FILES)
        write_hydra_files(out, cfg, hydra_cfg, list(hydra_cfg.overrides.task))
        try:
            check_config(cfg)
            from gpureplay.experiment import run_experiment

            summary = run_experiment(cfg, out).summary
        except (KeyboardInterrupt, Interrupted) as stop:
            write_status(out, "interrupted", str(stop) or "stopped by SIGINT (Ctrl-C)")
            raise
        except Exception as err:
            write_error(out, err, cfg)
            first = str(err).splitlines()[0] if str(err) else ""
            write_status(out, "failed", f"{type(err).__name__}: {first}")
            if sweeping:
                log.error("point failed: %s: %s", out, err)
                return None
            raise
        write_status(out, "done")
        return summary


def _usage_exit(message: str) -> NoReturn:
    print(f"gpureplay: error:\n{message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def _output_folder_error(err: OSError) -> str | None:
    """The message for Hydra failing to create the run or sweep folder, else None.

    Before the task function runs, the only files Hydra and its launchers
    create are the output folders (and the log file in them), so an
    ``OSError`` naming a file and raised outside :func:`main` is about them.
    """
    import traceback

    if err.filename is None:
        return None
    if any(f.name == "main" and f.filename == __file__ for f in traceback.extract_tb(err.__traceback__)):
        return None  # raised by the run itself, not by Hydra's folder set-up
    key = "hydra.sweep.dir" if "-m" in sys.argv or "--multirun" in sys.argv else "hydra.run.dir"
    if isinstance(err, FileExistsError | NotADirectoryError):
        what = "a file is in the way (the path, or a folder above it, is a file)"
    else:
        what = err.strerror or type(err).__name__
    return f"config key {key!r}: cannot create the output folder {err.filename}: {what}"


def _message(err: BaseException) -> str | None:
    """The user-facing message for a usage error (exit status 2), or None for a bug."""
    from gpureplay.config_check import describe_config_error
    from gpureplay.errors import InputError
    from gpureplay.runfolder import FolderBusyError

    if isinstance(err, InputError | FolderBusyError | FileNotFoundError):
        return str(err)
    if isinstance(err, OSError) and (message := _output_folder_error(err)) is not None:
        return message
    return describe_config_error(err)


def _register_launcher() -> None:
    """Make sure Hydra knows the ``hydra/launcher=local`` plugin class.

    A wheel puts it into the ``hydra_plugins`` namespace that Hydra scans; an
    editable install (``make``) maps the module by name only, out of the scan's
    sight, hence the explicit registration (``Plugins.register``, Hydra's API for it).
    """
    from hydra.core.plugins import Plugins

    from hydra_plugins.gpureplay_launcher.local_launcher import GpureplayJoblibLauncher

    Plugins.instance().register(GpureplayJoblibLauncher)


#: Overrides that can set ``hydra.mode`` (directly, or by bringing config files that may): with any of
#: them Hydra reads the mode from the composed config itself (:func:`_mode_from_flags`).
_MODE_KEYS = ("hydra.mode", "hydra.searchpath")


@contextlib.contextmanager
def _mode_from_flags(overrides: Sequence[str]) -> Iterator[None]:
    """Let Hydra take the run mode from ``-m`` alone, composing the config once instead of twice.

    Before running, Hydra composes the whole config a first time only to read ``hydra.mode``
    (``Hydra.get_mode``, called by ``hydra._internal.utils._run_hydra``; about 0.7 s here) and,
    when that is unset, chooses RUN or MULTIRUN from the ``-m`` flag. No config of gpureplay sets
    ``hydra.mode`` (tests/test_config.py checks), so unless an override names it (or adds a search
    path that might), the answer is known: ``None``, as that first composition would give. When
    Hydra has no such method (another version), nothing is changed.
    """
    from hydra._internal.hydra import Hydra

    original = getattr(Hydra, "get_mode", None)
    if original is None or any(o.lstrip("+~").startswith(_MODE_KEYS) for o in overrides):
        yield
        return

    def unset_mode(self: Any, config_name: str | None, overrides: list[str]) -> None:
        return None

    Hydra.get_mode = unset_mode  # type: ignore[method-assign]
    try:
        yield
    finally:
        Hydra.get_mode = original  # type: ignore[method-assign]


def run(overrides: Sequence[str]) -> NoReturn:
    """``gpureplay run OVERRIDES``: one replay, or a sweep with ``-m``; never returns.

    Exit statuses: 0 done; 1 a sweep with failed points, or an unexpected error
    (a bug: its traceback is printed); 2 a bad input or config, or a folder
    that another run holds (one message, no traceback); 130 Ctrl-C and 143
    SIGTERM (``gpureplay: interrupted``), leaving the folder without ``DONE``.
    With ``HYDRA_FULL_ERROR=1`` every error shows its traceback.
    """
    from gpureplay.interrupts import Interrupted, exit_status, terminate_raises

    _register_launcher()
    full_error = os.environ.get("HYDRA_FULL_ERROR") == "1"
    # Hydra prints its own errors and exits with 1 unless HYDRA_FULL_ERROR=1, which lets them reach us.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    sys.argv = ["gpureplay run", *overrides]
    try:
        # SIGTERM to a sweep's parent ends it like Ctrl-C (workers are stopped)
        with terminate_raises(), _mode_from_flags(overrides):
            main()
    except (KeyboardInterrupt, Interrupted) as stop:
        # After the terminal's echoed ^C, start a line of our own.
        print(("\n" if sys.stderr.isatty() else "") + "gpureplay: interrupted", file=sys.stderr)
        sys.exit(exit_status(stop))
    except Exception as err:
        message = _message(err)
        if message is None or full_error:
            raise
        _usage_exit(message)
    sys.exit(0)


__all__ = ["EXIT_FAILED", "EXIT_USAGE", "main", "run"]
