"""Local sweeps that outlive a point the system kills: Hydra's joblib launcher, one death per point.

Hydra's joblib launcher runs the points in loky worker processes. When the
kernel kills a worker (out of memory: SIGKILL), loky breaks the whole pool:
every point in flight is lost, joblib raises ``TerminatedWorkerError`` and
the sweep ends with a traceback and no summary. :func:`launch`, the work of
the ``hydra/launcher=local`` plugin
(:class:`hydra_plugins.gpureplay_launcher.local_launcher.GpureplayJoblibLauncher`), keeps
joblib and loky and adds three things:

- before any point runs, it composes every point's config in this process and
  checks it (:func:`gpureplay.config_check.check_config`): a bad value fails
  the sweep at once with one message, not point by point;
- it holds the sweep folder's lock (:data:`gpureplay.runfolder.SWEEP_LOCK_FILE`),
  so a second sweep into the same folder fails at once;
- when a worker dies, the points that were running (their ``STATUS`` says
  ``running``) are run again one at a time, each alone in the pool, so a
  death there belongs to that point: it is recorded as failed (``STATUS``
  failed, ``ERROR.txt`` naming the signal) and the sweep goes on.

Selected by ``hydra/launcher=local`` (the default, ``conf/hydra/launcher/local.yaml``).
"""

from __future__ import annotations

import copy
import logging
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, setup_globals
from hydra.types import HydraContext, TaskFunction
from hydra_plugins.hydra_joblib_launcher._core import execute_job, process_joblib_cfg
from joblib import Parallel, delayed
from joblib.externals.loky.process_executor import TerminatedWorkerError
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from gpureplay.config_check import check_config
from gpureplay.errors import InputError, Problem
from gpureplay.runfolder import SWEEP_LOCK_FILE, hold_folder
from gpureplay.sweep import write_killed

__all__ = ["describe_death", "launch"]

log = logging.getLogger(__name__)

_EXIT_CODES = re.compile(r"exit codes of the workers are \{(?P<codes>[^}]*)\}")
_SIGNAL = re.compile(r"(?P<name>SIG[A-Z0-9]+)\((?P<code>-?\d+)\)")


def describe_death(err: BaseException) -> str:
    """How a worker died, from loky's ``TerminatedWorkerError``: ``killed by SIGKILL (signal 9)``.

    Examples
    --------
    >>> describe_death(Exception("... The exit codes of the workers are {SIGKILL(-9)}"))
    'killed by SIGKILL (signal 9)'
    >>> describe_death(Exception("... The exit codes of the workers are {EXIT(3)}"))
    'died with exit code EXIT(3)'
    >>> describe_death(Exception("terminated abruptly"))
    'died (no exit code known)'
    """
    found = _EXIT_CODES.search(str(err))
    if found is None:
        return "died (no exit code known)"
    signalled = _SIGNAL.search(found["codes"])
    if signalled is not None:
        return f"killed by {signalled['name']} (signal {abs(int(signalled['code']))})"
    return f"died with exit code {found['codes'].strip()}"


@dataclass(frozen=True)
class _Point:
    """One sweep point, composed in the launching process."""

    idx: int
    overrides: tuple[str, ...]
    folder: Path
    task_cfg: DictConfig
    hydra_cfg: DictConfig


def _run_point(
    idx: int,
    marks: str,
    overrides: Sequence[str],
    hydra_context: HydraContext,
    config: DictConfig,
    task_function: TaskFunction,
    singleton_state: dict[Any, Any],
) -> tuple[int, JobReturn]:
    """In a worker: mark the point started, run Hydra's job runner; the index matches results in any order."""
    (Path(marks) / str(idx)).touch()
    return idx, execute_job(idx, overrides, hydra_context, config, task_function, singleton_state)


def launch(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
    """Run the points of a sweep for ``launcher`` (the plugin); one :class:`JobReturn` per point, in order.

    Parameters
    ----------
    launcher
        The :class:`~hydra_plugins.gpureplay_launcher.local_launcher.GpureplayJoblibLauncher`
        Hydra set up: its ``config``, ``task_function``, ``hydra_context`` and
        ``joblib`` options.
    job_overrides
        The overrides of each point.
    initial_job_idx
        Index of the first point (Hydra numbers points across batches).

    Raises
    ------
    gpureplay.errors.InputError
        Before any point runs, when a point's config is bad.
    gpureplay.runfolder.FolderBusyError
        When another process holds the sweep folder.
    """
    setup_globals()
    config, hydra_context = launcher.config, launcher.hydra_context
    assert config is not None and launcher.task_function is not None and hydra_context is not None
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    points = [
        _compose(hydra_context, config, initial_job_idx + i, overrides)
        for i, overrides in enumerate(job_overrides)
    ]
    _check(points)
    joblib_cfg = dict(launcher.joblib)
    joblib_cfg["backend"] = "loky"  # as Hydra's launcher: threads are incompatible with Hydra
    process_joblib_cfg(joblib_cfg)
    log.info(
        "Launching %d points with joblib (n_jobs=%s) into %s",
        len(points),
        joblib_cfg.get("n_jobs"),
        sweep_dir,
    )
    for point in points:
        log.info("\t#%d : %s", point.idx, " ".join(filter_overrides(point.overrides)))
    runner = _Runner(launcher, joblib_cfg)
    with hold_folder(sweep_dir, SWEEP_LOCK_FILE):
        returns = runner.run(points)
    return [returns[p.idx] for p in points]


def _compose(hydra_context: HydraContext, config: DictConfig, idx: int, overrides: Sequence[str]) -> _Point:
    """Compose a point's config here, as the worker will (same overrides, same time stamps)."""
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    folder = Path(str(sweep_config.hydra.sweep.dir)) / str(sweep_config.hydra.sweep.subdir)
    task_cfg = copy.deepcopy(sweep_config)
    with read_write(task_cfg), open_dict(task_cfg):
        del task_cfg["hydra"]
    return _Point(idx, tuple(overrides), folder.absolute(), task_cfg, sweep_config.hydra)


class _Runner:
    """Runs points through joblib; isolates the points a dead worker may have held."""

    def __init__(self, launcher: Any, joblib_cfg: dict[str, Any]) -> None:
        self.launcher = launcher
        self.joblib_cfg = joblib_cfg
        self.marks = ""

    def run(self, points: list[_Point]) -> dict[int, JobReturn]:
        """Run ``points`` in parallel; after a worker's death, run the points it may have held alone.

        Each task first leaves a mark (an empty file named by its index) in a
        folder of this launch: the points with a mark and no result are the
        ones the dead worker's pool was running.
        """
        results: dict[int, JobReturn] = {}
        queue = list(points)
        with tempfile.TemporaryDirectory(prefix="gpureplay-launch-") as marks:
            self.marks = marks
            while queue:
                try:
                    for idx, ret in Parallel(**self.joblib_cfg, return_as="generator_unordered")(
                        self._tasks(queue)
                    ):
                        results[idx] = ret
                    break
                except TerminatedWorkerError as crash:
                    queue = self._after_crash(crash, queue, results)
        return results

    def _after_crash(
        self, crash: TerminatedWorkerError, queue: list[_Point], results: dict[int, JobReturn]
    ) -> list[_Point]:
        """Run the points in flight at a worker's death alone; the points still to run."""
        unfinished = [p for p in queue if p.idx not in results]
        started = [p for p in unfinished if (Path(self.marks) / str(p.idx)).exists()]
        suspects = started or unfinished
        log.warning(
            "a sweep worker %s; running the %d point(s) it may have held one at a time",
            describe_death(crash),
            len(suspects),
        )
        for point in suspects:
            results[point.idx] = self._run_alone(point)
        return [p for p in unfinished if p.idx not in results]

    def _tasks(self, points: Sequence[_Point]) -> Iterator[Any]:
        state = Singleton.get_state()
        launcher = self.launcher
        for p in points:
            yield delayed(_run_point)(
                p.idx,
                self.marks,
                p.overrides,
                launcher.hydra_context,
                launcher.config,
                launcher.task_function,
                state,
            )

    def _run_alone(self, point: _Point) -> JobReturn:
        """Run one point as the only task of the pool: if a worker dies now, it was this point's."""
        # n_jobs=2, not 1: joblib runs a one-job Parallel in this very process.
        alone = {**self.joblib_cfg, "n_jobs": 2}
        try:
            ((_, ret),) = Parallel(**alone)(self._tasks([point]))
        except TerminatedWorkerError as death:
            how = describe_death(death)
            log.error("point #%d %s: %s", point.idx, how, point.folder)
            with hold_folder(point.folder):
                write_killed(point.folder, how, point.task_cfg)
            return JobReturn(
                overrides=list(point.overrides),
                cfg=point.task_cfg,
                hydra_cfg=point.hydra_cfg,
                working_dir=str(point.folder),
                task_name=str(point.hydra_cfg.job.name),
                status=JobStatus.COMPLETED,  # like a point that failed on its own: recorded, sweep goes on
                _return_value=None,
            )
        assert isinstance(ret, JobReturn)
        return ret


def _check(points: Sequence[_Point]) -> None:
    """Refuse the sweep, before any point runs, when any point's config or inputs are bad.

    First every point's config (:func:`gpureplay.config_check.check_config`), then, when all pass, every
    point's inputs as its run would check them before compiling (:func:`gpureplay.experiment.check_inputs`:
    trace, cluster, MIG layouts, manifests against the cluster), each distinct trace loaded once. Points
    already complete are skipped by the sweep, so they are not checked.
    """
    problems: list[Problem] = []
    for point in points:
        problems.extend(_point_problems(point, check_config))
    if problems:
        raise InputError(problems)
    from gpureplay.experiment import check_inputs, load_trace_of
    from gpureplay.results.writer import is_done
    from gpureplay.traces.adapted import AdaptedTrace

    traces: dict[str, AdaptedTrace] = {}

    def inputs_of(cfg: DictConfig) -> None:
        key = OmegaConf.to_yaml(cfg.trace, resolve=True) + f"seed={cfg.seed}, max_time={cfg.max_time}"
        if key not in traces:
            traces.clear()  # one trace held at a time: a sweep's points come grouped by trace
            traces[key] = load_trace_of(cfg)
        check_inputs(cfg, traces[key])

    quiet = logging.getLogger("gpureplay")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # the points' runs log their inputs; the check says only what is wrong
    try:
        for point in points:
            if not is_done(point.folder):
                problems.extend(_point_problems(point, inputs_of))
    finally:
        quiet.setLevel(level)
    if problems:
        raise InputError(problems)


def _point_problems(point: _Point, check: Callable[[DictConfig], object]) -> list[Problem]:
    """What ``check`` refuses in a point's config, each message naming the point."""
    try:
        check(point.task_cfg)
    except InputError as err:
        found = err.problems
    except FileNotFoundError as err:  # a missing input file, as a run reports it (app.py)
        found = [Problem(str(err))]
    else:
        return []
    shown = " ".join(filter_overrides(point.overrides)) or "(no overrides)"
    return [
        Problem(f"{p.message} (point #{point.idx}: {shown})", p.source, p.row, p.column, p.key) for p in found
    ]
