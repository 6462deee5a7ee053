"""One compiler per variant at a time: processes that need the same compiled replay wait for it.

A replay's kernels are compiled for the types of its bundles, and the
policy's mechanisms decide those types (a work space that is ``None`` is a
type of its own: :func:`gpureplay.engine.jit.config.when_given`), so a policy
compiles one *variant* of the engine. On a cold cache, the points of a
parallel sweep, pytest-xdist workers, or two runs started at once that need
the same variant each compiled it in full, side by side: minutes of work
done twice, and on a 2-core machine each copy took twice as long. numba has
no such lock (its cache only keeps concurrent *writes* apart:
:mod:`gpureplay.engine.jit.cache_writes`).

:func:`compiled_for` compiles (or loads from numba's cache) an entry kernel
for the types of the coming call while holding an exclusive ``flock`` named
after those types, in the engine's cache folder: a second process asking for
the same variant waits, then loads what the first one saved. Different
variants compile in parallel. A process that already holds the variant
returns at once, without touching the lock.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, each process compiles its own
    fcntl = None  # type: ignore[assignment]

from numba import typeof

from gpureplay.engine.jit.config import cache_folder

#: Whether :func:`compiled_for` raises :class:`VariantBusy` instead of waiting (:func:`without_waiting`).
_NO_WAIT: ContextVar[bool] = ContextVar("gpureplay_compile_no_wait", default=False)


class VariantBusy(Exception):
    """Another process is compiling the variant asked for (raised only inside :func:`without_waiting`)."""


@contextlib.contextmanager
def without_waiting() -> Iterator[None]:
    """Within the block, a call for a variant another process is compiling raises :class:`VariantBusy`.

    For a warm-up that compiles many variants in several processes: rather than
    wait with its core idle, a process moves on to a variant nobody is compiling
    and comes back to the busy one later (by then, mostly, a cache load).
    """
    token = _NO_WAIT.set(True)
    try:
        yield
    finally:
        _NO_WAIT.reset(token)


def variant_key(args: tuple[Any, ...]) -> str:
    """A short name of the numba types of a call's arguments (the lock file's name).

    Examples
    --------
    >>> import numpy as np
    >>> variant_key((np.zeros(2), 1.0)) == variant_key((np.ones(3), 2.0))
    True
    >>> variant_key((np.zeros(2), 1.0)) == variant_key((np.zeros((2, 2)), 1.0))
    False
    """
    return _key(_signature(args))


def _signature(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(typeof(a) for a in args)  # type: ignore[no-untyped-call]


def _key(signature: tuple[Any, ...]) -> str:
    return hashlib.sha256(", ".join(map(str, signature)).encode()).hexdigest()[:16]


def compiled_for(dispatcher: Any, args: tuple[Any, ...]) -> None:
    """Ready ``dispatcher`` (an entry kernel) for a call with ``args``, one process per variant at a time.

    Parameters
    ----------
    dispatcher
        A numba dispatcher decorated with :func:`gpureplay.engine.jit.config.entry_kernel`.
    args
        The arguments of the coming call; only their types matter.

    Notes
    -----
    ``Dispatcher.compile`` looks in numba's on-disk cache before compiling, so
    the process that waited loads the other's work in a fraction of a second.
    The lock is released when its file closes, also when compiling fails.
    """
    signature = _signature(args)
    if signature in dispatcher.overloads:
        return
    if fcntl is None:  # pragma: no cover
        dispatcher.compile(signature)
        return
    folder = Path(cache_folder()) / "compiling"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{dispatcher.py_func.__name__}-{_key(signature)}.lock"
    with open(folder / name, "a+b") as lock:
        if _NO_WAIT.get():
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise VariantBusy(name) from None
        else:
            fcntl.flock(lock, fcntl.LOCK_EX)
        dispatcher.compile(signature)
