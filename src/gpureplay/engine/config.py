"""The one place numba flags are set.

Every kernel of the engine is decorated with :func:`kernel` (or
:func:`inline_kernel` for the few one-line predicates hot loops call), so the
compilation options (on-disk cache, no fast-math) cannot drift between
modules. Fast-math stays off: event times are compared with ``==`` (a job
finishing at a sample time must be seen at that time), which reassociation
would break.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from numba import njit
from numba.core import types
from numba.extending import overload

#: Options passed to ``numba.njit`` for every kernel. ``cache=True`` keeps the
#: compiled code under ``$NUMBA_CACHE_DIR``; ``error_model="numpy"`` drops the
#: Python zero-division checks (kernels never divide by a value that can be 0).
JIT_OPTIONS: dict[str, Any] = {
    "cache": True,
    "nogil": True,
    "fastmath": False,
    "error_model": "numpy",
    "boundscheck": False,
    "_nrt": False,
}

F = TypeVar("F", bound=Callable[..., Any])


def _one_signature_per_type(dispatcher: Any) -> Any:
    """Make calls from other kernels type constant arguments by their type, not their value.

    numba types a module constant passed to a kernel (``E_NODE_CPU``, ``True``,
    ``0``) as a literal and compiles the callee once per distinct value; the
    engine passes codes and flags that way at dozens of call sites, which
    more than doubled its cold compile time. Widening the argument types at
    the call site keeps one compiled version per kernel and type.
    """
    resolve = dispatcher.get_call_template

    def get_call_template(args: Any, kws: Any) -> Any:
        widen = types.unliteral
        return resolve(tuple(widen(a) for a in args), {k: widen(v) for k, v in kws.items()})  # type: ignore[no-untyped-call]

    dispatcher.get_call_template = get_call_template
    return dispatcher


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode with :data:`JIT_OPTIONS`."""
    return cast(F, _one_signature_per_type(njit(**JIT_OPTIONS)(fn)))


def inline_kernel(fn: F) -> F:
    """Like :func:`kernel`, inlined into every caller at numba-IR level.

    For the rules written once and called from hot loops (the fit rule), where
    a call per node would cost more than the rule itself.
    """
    return cast(F, _one_signature_per_type(njit(inline="always", **JIT_OPTIONS)(fn)))


def when_given(
    body: Callable[..., Any], otherwise: Any = None, *, none_body: Callable[..., Any] | None = None
) -> Any:
    """A kernel-callable that runs ``body(*args)`` when its first argument (an optional bundle) is given.

    When the first argument is ``None`` the call is ``otherwise`` (a constant)
    or ``none_body(*args)``, decided by numba at compile time from the
    argument's type: the code behind an unused mechanism (preemption, EASY
    backfill, the debug checks, the other placement mode) is never typed,
    compiled or linked into the replay that does not use it, so a replay
    compiles only what its policy needs.

    Parameters
    ----------
    body
        The kernel to run when the bundle is given.
    otherwise
        The value returned when it is ``None`` (ignored with ``none_body``).
    none_body
        A kernel to run instead when it is ``None``.
    """

    # numba matches overloads by signature, annotations included: the stub and
    # its implementations take plain ``*args``.
    def stub(*args):  # type: ignore[no-untyped-def]
        raise TypeError(f"{body.__name__} is callable from kernels only")

    stub.__name__ = stub.__qualname__ = f"{getattr(body, '__name__', 'body')}_when_given"

    @overload(stub, jit_options=JIT_OPTIONS)  # type: ignore[arg-type]
    def _choose(*args):  # type: ignore[no-untyped-def]
        if isinstance(args[0], types.NoneType):
            if none_body is not None:
                return lambda *args: none_body(*args)
            return lambda *args: otherwise
        return lambda *args: body(*args)

    return stub
