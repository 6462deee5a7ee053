"""The one place numba flags are set.

Every kernel of :mod:`gpureplay.engine` is decorated with :func:`kernel`, so the
compilation options (on-disk cache, no fast-math) cannot drift between modules.
Fast-math stays off: event times are compared with ``==`` (a job finishing at a
sample time must be seen at that time), which reassociation would break.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from numba import njit

#: Options passed to ``numba.njit`` for every kernel. ``cache=True`` keeps the
#: compiled code under ``$NUMBA_CACHE_DIR``; ``error_model="numpy"`` drops the
#: Python zero-division checks (kernels never divide by a value that can be 0).
JIT_OPTIONS: dict[str, Any] = {
    "cache": True,
    "nogil": True,
    "fastmath": False,
    "error_model": "numpy",
    "boundscheck": False,
}

F = TypeVar("F", bound=Callable[..., Any])


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode with :data:`JIT_OPTIONS`."""
    return cast(F, njit(**JIT_OPTIONS)(fn))
