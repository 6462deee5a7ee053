"""Progress of a long replay: what :func:`gpureplay.replay.simulate.simulate` reports between chunks.

The engine runs in chunks of simulated time (:func:`gpureplay.engine.loop.advance`)
and hands a :class:`Progress` to a callback after each. :class:`ProgressLine`
is the terminal callback: one line on stderr that rewrites itself in place
(a carriage return and the ANSI "erase to end of line", like pip's and
tqdm's bars) and disappears when the replay ends. :func:`progress_for_terminal`
decides whether to show it: only on an interactive terminal, never in CI.
:func:`announce_compilation` logs, in every mode, that a first run is compiling
the engine and for about how long.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO

__all__ = [
    "COMPILE_ESTIMATES",
    "COMPILE_NOTICE",
    "Progress",
    "ProgressLine",
    "announce_compilation",
    "compile_estimate",
    "compile_notice",
    "format_progress",
    "progress_for_terminal",
    "someone_watches",
]

#: ANSI "erase in line" (EL, ECMA-48 8.3.41) from the cursor to the end of the line.
ERASE_TO_END = "\x1b[K"

#: Environment variable that forces the progress line on (``1``) or off (``0``).
PROGRESS_ENV = "GPUREPLAY_PROGRESS"

_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a replay stands after one chunk of simulated time.

    Attributes
    ----------
    sim_time
        Last simulated time processed, in seconds from the trace start.
    sim_end_estimate
        A lower bound of the end time: the last submit time (capped at the
        horizon), or ``sim_time`` once past it.
    jobs_done
        Jobs that have left the system: finished or rejected.
    jobs_total
        Jobs in the trace.
    events
        Distinct event times processed so far.
    wall_seconds
        Wall-clock seconds spent in the engine so far.
    finished
        True on the last call of a replay (the run ended or stopped on an error).
    """

    sim_time: float
    sim_end_estimate: float
    jobs_done: int
    jobs_total: int
    events: int
    wall_seconds: float
    finished: bool = False


def _sim_time(seconds: float) -> str:
    """Simulated seconds as days and hours: ``12d 04h``."""
    days, rest = divmod(int(max(seconds, 0.0)), 86_400)
    return f"{days}d {rest // 3600:02d}h"


def _clock(seconds: float) -> str:
    """Wall seconds as ``m:ss`` or ``h:mm:ss``."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_progress(progress: Progress) -> str:
    """One line: simulated time, jobs done / total (%), rate in jobs per wall second, ETA.

    Parameters
    ----------
    progress
        The state to show.

    Returns
    -------
    str
        E.g. ``replay 12d 04h / ~120d 00h | 41,234/82,247 jobs (50.1%) | 98,765 jobs/s | ETA 0:01``.

    Notes
    -----
    The ETA assumes the remaining jobs go at the rate of those done so far
    (the fraction of jobs done is a better clock than simulated time, whose
    busy stretches cost far more than idle ones).
    """
    p = progress
    share = p.jobs_done / p.jobs_total if p.jobs_total else 1.0
    rate = p.jobs_done / p.wall_seconds if p.wall_seconds > 0 else 0.0
    if p.jobs_done >= p.jobs_total:
        eta = _clock(0.0)
    elif p.jobs_done > 0:
        eta = _clock(p.wall_seconds * (p.jobs_total - p.jobs_done) / p.jobs_done)
    else:
        eta = "?"
    return (
        f"replay {_sim_time(p.sim_time)} / ~{_sim_time(p.sim_end_estimate)} | "
        f"{p.jobs_done:,}/{p.jobs_total:,} jobs ({100 * share:.1f}%) | {rate:,.0f} jobs/s | ETA {eta}"
    )


class ProgressLine:
    """A progress callback that keeps one self-overwriting line on a terminal.

    Parameters
    ----------
    stream
        Where to write (default: ``sys.stderr`` at call time).
    min_interval
        Least wall seconds between two redraws (0.2 s: at most ~5 per second,
        so a fast replay spends nothing on its terminal).
    clock
        Monotonic clock used for the throttle (a parameter for tests).
    width
        Columns of the line; default: the width of the terminal ``stream`` is on.

    Notes
    -----
    Each redraw is ``\\r`` + the line + erase-to-end-of-line, cut to the
    terminal width so that it never wraps (a wrapped line cannot be
    overwritten with ``\\r``). The call with ``finished=True`` erases the line.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        min_interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
        width: int | None = None,
    ) -> None:
        self._stream = stream
        self._width = width
        self._min_interval = min_interval
        self._clock = clock
        self._last: float | None = None
        self._shown = False

    @property
    def stream(self) -> TextIO:
        """The stream written to."""
        return sys.stderr if self._stream is None else self._stream

    def columns(self) -> int:
        """Width of the line: the one given, else the terminal's (at least 20)."""
        if self._width is not None:
            return self._width
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):  # not a real terminal (a test double, a closed fd)
            columns = 0
        if columns <= 0:  # size unknown (a fresh pseudo-terminal reports 0): $COLUMNS, stdout's, or a guess
            columns = shutil.get_terminal_size(fallback=(100, 24)).columns
        return max(columns, 20)

    def __call__(self, progress: Progress) -> None:
        """Redraw the line (at most every ``min_interval`` seconds), or erase it at the end."""
        if progress.finished:
            if self._shown:
                self.stream.write("\r" + ERASE_TO_END)
                self.stream.flush()
                self._shown = False
            self._last = None
            return
        now = self._clock()
        if self._last is not None and now - self._last < self._min_interval:
            return
        self._last = now
        self.stream.write("\r" + format_progress(progress)[: self.columns() - 1] + ERASE_TO_END)
        self.stream.flush()
        self._shown = True


def progress_for_terminal(
    stream: TextIO | None = None, environ: Mapping[str, str] | None = None
) -> ProgressLine | None:
    """A :class:`ProgressLine` on ``stream`` when a person is watching it, else None (quiet).

    Parameters
    ----------
    stream
        The stream to watch and write (default ``sys.stderr``).
    environ
        Environment to read (default ``os.environ``).

    Returns
    -------
    ProgressLine or None
        None when ``GPUREPLAY_PROGRESS`` is ``0`` (or false/no/off), or, unless
        it is ``1`` (or true/yes/on), when ``CI`` is set to anything non-empty
        or the stream is not a TTY.

    Notes
    -----
    ``CI`` is the variable GitHub Actions, GitLab CI, Travis and most other CI
    services set; like pip and tqdm-based tools, no progress is drawn into
    logs that are not a terminal.
    """
    return ProgressLine(stream) if someone_watches(stream, environ) else None


def someone_watches(stream: TextIO | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a person watches ``stream``: the rule of :func:`progress_for_terminal`, for any notice.

    Parameters
    ----------
    stream
        The stream (default ``sys.stderr``).
    environ
        Environment to read (default ``os.environ``).

    Returns
    -------
    bool
        False when ``GPUREPLAY_PROGRESS`` is off; True when it is on; else
        False when ``CI`` is set, and whether ``stream`` is a TTY otherwise.
    """
    env = os.environ if environ is None else environ
    out = sys.stderr if stream is None else stream
    flag = env.get(PROGRESS_ENV, "").strip().lower()
    if flag in _OFF or out is None:
        return False
    if flag in _ON:
        return True
    if env.get("CI", ""):
        return False
    isatty = getattr(out, "isatty", None)
    return bool(callable(isatty) and isatty())


#: How long a first run compiles the engine, by queue model, from an empty cache on a 2-core machine, one
#: process alone (``make bench``'s cold starts; a two-job trace, so the replay itself takes under a
#: second): fifo 142 s; each queue system compiles only its own wing, kueue 321 s, kai 245 s, volcano
#: 225 s (all three 819 s while one bundle held the three systems).
COMPILE_ESTIMATES: dict[str, str] = {
    "none": "2-3 min",
    "kueue": "5-6 min",
    "volcano": "3-4 min",
    "kai": "4-5 min",
}

#: The start of the line a run logs before it compiles the engine.
COMPILE_NOTICE = "compiling the engine's kernels, first run only"


def compile_estimate(queue_model: str) -> str:
    """How long compiling takes for a queue model, in words (:data:`COMPILE_ESTIMATES`).

    Examples
    --------
    >>> compile_estimate("kueue")
    '5-6 min'
    """
    return COMPILE_ESTIMATES[queue_model]


#: Seconds a warm-up may take before a run that looked cached says it is compiling after all.
COMPILE_NOTICE_AFTER = 3.0


@contextmanager
def compile_notice(cache_dir: str | None, queue_model: str, cold: bool) -> Iterator[None]:
    """Around the engine's warm-up: log that kernels compile, and for about how long, whenever they do.

    A ``cold`` cache (the entry kernels are not cached) is announced at once. A cache that holds the entry
    kernels may still lack the variant this preset compiles (its mechanisms' kernels): a timer announces it
    when the warm-up runs past :data:`COMPILE_NOTICE_AFTER` seconds (numba's compiler spends most of its time
    in LLVM calls that release the GIL, so the timer's thread gets to run). Either way, the time it took is
    logged after.
    """
    announced = threading.Event()

    def announce() -> None:
        announced.set()
        announce_compilation(cache_dir, queue_model)

    if cold:
        announce()
    timer = threading.Timer(COMPILE_NOTICE_AFTER, announce)
    timer.daemon = True
    started = time.perf_counter()
    if not cold:
        timer.start()
    try:
        yield
    finally:
        timer.cancel()
    if announced.is_set():
        logging.getLogger("gpureplay").info("kernels ready in %.0f s", time.perf_counter() - started)


def announce_compilation(cache_dir: str | None, queue_model: str) -> str:
    """Log, in every mode (terminal, pipe, CI, a sweep's worker), that the kernels compile now.

    numba says nothing while it compiles; without this line a first run looks hung for minutes.

    Parameters
    ----------
    cache_dir
        Where the compiled code will be kept, shown in the line (None: not shown).
    queue_model
        The run's queue model (``scheduler.queues``), which sets the estimate.

    Returns
    -------
    str
        The line logged.
    """
    where = f"; cached in {cache_dir} for later runs" if cache_dir else ""
    line = f"{COMPILE_NOTICE} (about {compile_estimate(queue_model)} on 2 cores{where})"
    logging.getLogger("gpureplay").info(line)
    return line
