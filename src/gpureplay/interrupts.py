"""Stopping a run on Ctrl-C (SIGINT) or SIGTERM: where the signal is seen and what it raises.

Two rules. Outside the engine, SIGTERM raises :class:`Interrupted` at once, as
Ctrl-C raises :class:`KeyboardInterrupt`, so the run folder can be marked
``interrupted`` on the way out. Inside the engine (:func:`deferred`), both only
set a flag that the replay checks between chunks of simulated time: an
exception raised in the middle of numba's dispatch machinery comes out as a
chained ``SystemError``, never as a clean stop. A second Ctrl-C while one is
pending stops at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["Interrupted", "PendingSignal", "deferred", "exit_status", "terminate_raises"]

_Handler = Callable[[int, FrameType | None], Any] | int | None


class Interrupted(BaseException):
    """The run was asked to stop by a signal other than SIGINT (SIGTERM, SIGHUP).

    A :class:`BaseException`, like :class:`KeyboardInterrupt`, so that no
    ``except Exception`` on the way out mistakes it for a failure.

    Parameters
    ----------
    signum
        The signal received.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    def __reduce__(self) -> tuple[type[Interrupted], tuple[int]]:
        return (type(self), (self.signum,))

    def __str__(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}"


def exit_status(stop: BaseException) -> int:
    """The shell's exit status for a run stopped by ``stop``: 128 + the signal number (130 for Ctrl-C)."""
    if isinstance(stop, Interrupted):
        return 128 + stop.signum
    return 128 + signal.SIGINT


def _on_main_thread() -> bool:
    # signal.signal may only be called from the main thread (a Ray actor or a test runner thread is not).
    return threading.current_thread() is threading.main_thread()


@contextmanager
def terminate_raises() -> Iterator[None]:
    """While active, SIGTERM raises :class:`Interrupted` (the previous handler comes back after).

    Does nothing off the main thread, where Python cannot install handlers.
    """
    if not _on_main_thread():
        yield
        return

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signum)

    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:  # the parent asked us to ignore it: keep that
        yield
        return
    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class PendingSignal:
    """The signal received while :func:`deferred` was active, if any."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def check(self) -> None:
        """Raise the stop a pending signal asks for: :class:`KeyboardInterrupt` or :class:`Interrupted`."""
        signum, self.signum = self.signum, None
        if signum is None:
            return
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Interrupted(signum)


@contextmanager
def deferred() -> Iterator[PendingSignal]:
    """Hold SIGINT and SIGTERM as a flag while compiled code runs; the caller checks it between calls.

    Yields
    ------
    PendingSignal
        Call :meth:`PendingSignal.check` at each safe point (between chunks of
        simulated time). A signal still pending at the end is raised on exit.

    Notes
    -----
    Handlers that only raise when Python code runs (the default SIGINT handler
    and :func:`terminate_raises`) fire at whatever bytecode comes next, which
    may be inside numba's dispatcher, called from C: the interpreter then
    reports a ``SystemError`` chained to the ``KeyboardInterrupt``. A flag set
    by the handler and checked by the chunk loop never fires there. A second
    SIGINT while one is pending raises at once, so a stuck run can still be
    stopped. Off the main thread this does nothing, and a signal the process
    ignores (``SIG_IGN``, e.g. SIGINT of a job started in the background)
    stays ignored.
    """
    pending = PendingSignal()
    if not _on_main_thread():
        yield pending
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and pending.signum == signal.SIGINT:
            raise KeyboardInterrupt
        pending.signum = signum

    previous: dict[int, _Handler] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # e.g. SIGINT of a job started with `&`
            previous[sig] = signal.signal(sig, on_signal)
    try:
        yield pending
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler)
    pending.check()
