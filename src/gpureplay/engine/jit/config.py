"""The one place numba flags are set.

Every kernel of the engine is decorated with :func:`kernel` (or
:func:`inline_kernel` for the few one-line predicates hot loops call), so the
compilation options (on-disk cache, no fast-math) cannot drift between
modules. Fast-math stays off: event times are compared with ``==`` (a job
finishing at a sample time must be seen at that time), which reassociation
would break.

The compiled code is cached on disk under ``$NUMBA_CACHE_DIR``; when it is
unset, importing this module sets it to a per-user folder
(:func:`default_cache_dir`) before numba is imported, so that an installed
gpureplay never writes into its own package folder. Inside it, each version
of the engine's sources gets its own subfolder (:func:`engine_digest`):
numba keys a cached kernel on its own file only, so a kernel in an unchanged
file would otherwise keep a stale copy of a changed callee (numba issue 1833)
after an upgrade or a ``git pull``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

#: Environment variable numba reads for the folder of its on-disk cache.
CACHE_ENV = "NUMBA_CACHE_DIR"


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user folder for compiled kernels when ``$NUMBA_CACHE_DIR`` is not set.

    Parameters
    ----------
    environ
        Environment to read (default ``os.environ``).

    Returns
    -------
    Path
        ``$XDG_CACHE_HOME/gpureplay/numba``, or ``~/.cache/gpureplay/numba``
        when ``XDG_CACHE_HOME`` is unset or not absolute (XDG Base Directory
        specification).

    Examples
    --------
    >>> default_cache_dir({"XDG_CACHE_HOME": "/var/cache/me", "HOME": "/home/me"}).as_posix()
    '/var/cache/me/gpureplay/numba'
    >>> default_cache_dir({"XDG_CACHE_HOME": "relative", "HOME": "/home/me"}).as_posix()
    '/home/me/.cache/gpureplay/numba'
    """
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    else:
        home = env.get("HOME") or os.path.expanduser("~")
        base = Path(home) / ".cache"
    return base / "gpureplay" / "numba"


def _use_user_cache() -> None:
    """Point numba's cache at :func:`default_cache_dir` unless the user chose a folder.

    Without this numba writes ``.nbi``/``.nbc`` files into ``__pycache__`` beside
    the sources: inside the installed package (often read-only) or the source
    tree. Set before numba is imported, as numba reads the variable then; the
    environment carries it to sweep workers. A folder that cannot be created
    (a read-only home) falls back to one under the temporary directory.
    """
    if os.environ.get(CACHE_ENV):
        return
    folder = default_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = Path(tempfile.gettempdir()) / f"gpureplay-{os.getuid()}" / "numba"
    os.environ[CACHE_ENV] = str(folder)


def engine_digest(folder: Path | None = None) -> str:
    """Hash of every source file of the engine (``folder``: another copy of it): its cache subfolder's name.

    Returns 12 hex digits of the SHA-256 of the ``*.py`` files' paths (relative to the engine's folder,
    its wings included) and contents, in path order.
    """
    digest = hashlib.sha256()
    top = folder or Path(__file__).parents[1]
    for path in sorted(top.rglob("*.py"), key=lambda p: p.relative_to(top).as_posix()):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(top).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def cache_folder() -> Path:
    """Where this engine's compiled kernels are cached: ``$NUMBA_CACHE_DIR/engine-<digest>[-O<level>]``.

    numba's cache index does not record LLVM's optimisation level (``$NUMBA_OPT``), so code compiled
    at another level than the default 3 (the test suite's 1: half the compile time) gets a folder
    of its own and is never loaded by a benchmark or a user's run.
    """
    from numba import config as numba_config

    level = int(numba_config.OPT)  # type: ignore[attr-defined]
    suffix = "" if level == 3 else f"-O{level}"
    return Path(os.environ[CACHE_ENV]) / f"engine-{engine_digest()}{suffix}"


_use_user_cache()

from numba import config as _numba_config  # noqa: E402  (after the cache folder is set)
from numba import njit  # noqa: E402
from numba.core import types  # noqa: E402
from numba.core.errors import TypingError  # noqa: E402
from numba.extending import overload  # noqa: E402

from gpureplay.engine.jit.cache_writes import serialize_cache_writes  # noqa: E402

serialize_cache_writes()

# Set after numba read the variable (whenever it was imported): this engine's own subfolder.
_numba_config.CACHE_DIR = str(cache_folder())  # type: ignore[attr-defined]

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


#: Extra options of kernels called only from other kernels: no CPython or C
#: entry point is generated for them. Those wrappers unbox every array of
#: every bundle argument and were a seventh of the cold compile.
INTERNAL_OPTIONS: dict[str, Any] = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


def _python_calls_refused(dispatcher: Any) -> Any:
    """Keep a wrapper-less kernel out of the Python call path: a call from Python raises ``TypeError``.

    numba would otherwise jump to the missing entry point (a crash): compiled
    versions are kept for typing and linking only, never registered as
    callable from Python, so every Python call reaches ``_compile_for_args``.
    """
    name = dispatcher.py_func.__qualname__

    def add_overload(cres: Any) -> None:
        dispatcher.overloads[tuple(cres.signature.args)] = cres

    def refuse(*args: Any, **kws: Any) -> Any:
        raise TypeError(
            f"{name} is an internal engine kernel, callable from kernels only; "
            "use gpureplay.engine.jit.config.python_callable(kernel) to call it from Python"
        )

    dispatcher.add_overload = add_overload
    dispatcher._compile_for_args = refuse
    return dispatcher


def _internal(fn: Callable[..., Any], **options: Any) -> Any:
    dispatcher = njit(**JIT_OPTIONS, **INTERNAL_OPTIONS, **options)(fn)
    return _python_calls_refused(_one_signature_per_type(dispatcher))


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode with :data:`JIT_OPTIONS`, callable from other kernels only.

    See :func:`entry_kernel` for the few the replay calls from Python.
    """
    return cast(F, _internal(fn))


def entry_kernel(fn: F) -> F:
    """Like :func:`kernel`, and callable from Python too (the replay's entry points)."""
    return cast(F, _one_signature_per_type(njit(**JIT_OPTIONS)(fn)))


def inline_kernel(fn: F) -> F:
    """Like :func:`kernel`, inlined into every caller at numba-IR level.

    For the rules written once and called from hot loops (the fit rule), where
    a call per node would cost more than the rule itself.
    """
    return cast(F, _internal(fn, inline="always"))


def python_callable(fn: Any) -> Any:
    """A Python-callable compiled copy of kernel ``fn`` (for tests and notebooks).

    The copy is compiled on first call (not cached); kernels it calls are the
    engine's own.
    """
    return njit(**{**JIT_OPTIONS, "cache": False})(fn.py_func)


def when_given(
    body: Callable[..., Any], otherwise: Any = None, *, none_body: Callable[..., Any] | None = None
) -> Any:
    """A kernel-callable that runs ``body(*args)`` when its first argument (an optional bundle) is given.

    When the first argument is ``None`` the call is ``otherwise`` (a constant)
    or ``none_body(*args)``, decided by numba at compile time from the
    argument's type: the code behind an unused mechanism (preemption, EASY
    backfill, FGD's task classes, the other placement mode) is never typed,
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


def by_bundle(
    name: str,
    bodies: Mapping[type, Callable[..., Any] | None],
    otherwise: Any = None,
    *,
    none_body: Callable[..., Any] | None = None,
) -> Any:
    """A kernel-callable that runs the body registered for its first argument's bundle type.

    The first argument is one of several bundles (each queue system's state:
    :class:`gpureplay.engine.state.bundles.KueueState`, ``VolcanoState``,
    ``KaiState``) or ``None``. numba picks the body at compile time from the
    argument's type, so a replay types, compiles and links only its own
    system's kernels, each over its own bundle. A type registered with
    ``None``, and ``None`` itself, give ``otherwise`` (a constant); a type not
    registered at all is a typing error naming ``name``: nothing falls through
    to another system's body. :func:`when_given` is the case of one bundle.

    Parameters
    ----------
    name
        What the call does (in the error for an unregistered type).
    bodies
        Per bundle class, the kernel to run (``None``: return ``otherwise``).
    otherwise
        The value returned for ``None`` and for types registered with ``None``.
    none_body
        A kernel to run instead when the first argument is ``None``.
    """

    def stub(*args):  # type: ignore[no-untyped-def]
        raise TypeError(f"{name} is callable from kernels only")

    stub.__name__ = stub.__qualname__ = f"{name}_by_bundle"

    @overload(stub, jit_options=JIT_OPTIONS)  # type: ignore[arg-type]
    def _choose(*args):  # type: ignore[no-untyped-def]
        kind = args[0]
        if isinstance(kind, types.NoneType):
            if none_body is not None:
                return lambda *args: none_body(*args)
            return lambda *args: otherwise
        cls = getattr(kind, "instance_class", None)
        if cls is None or cls not in bodies:
            known = ", ".join(sorted(c.__name__ for c in bodies))
            raise TypingError(f"{name}: no body for a {kind} bundle (registered: {known})")
        body = bodies[cls]
        if body is None:
            return lambda *args: otherwise
        return lambda *args: body(*args)

    return stub


def is_cached(dispatcher: Any) -> bool:
    """True unless compiling ``dispatcher`` is ahead: its on-disk cache has no entry for its current source.

    Parameters
    ----------
    dispatcher
        A function decorated with :func:`kernel`.

    Returns
    -------
    bool
        False when numba's cache index for the function is missing, from
        another numba version, or stale (its source changed); True otherwise,
        also when caching or the JIT is off (nothing will be compiled then)
        or the cache cannot be read (nothing is known).

    Notes
    -----
    Reads numba's index file the way numba does before compiling
    (``numba.core.caching.IndexDataCacheFile``). It says whether an entry for
    the current source exists, not whether it matches the argument types of
    the coming call.
    """
    index = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if index is None:
        return True
    try:
        return bool(index._load_index())
    except Exception:  # an unreadable or foreign index: numba will cope; we cannot tell
        return True
