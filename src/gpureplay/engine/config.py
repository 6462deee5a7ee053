"""The one place numba flags are set.

Every kernel of :mod:`gpureplay.engine` is decorated with :func:`kernel`, so the
compilation options (on-disk cache, no fast-math) cannot drift between modules.
Fast-math stays off: event times are compared with ``==`` (a job finishing at a
sample time must be seen at that time), which reassociation would break.

The compiled code is cached on disk under ``$NUMBA_CACHE_DIR``; when it is
unset, importing this module sets it to a per-user folder
(:func:`default_cache_dir`) before numba is imported, so that an installed
gpureplay never writes into its own package folder.
"""

from __future__ import annotations

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


_use_user_cache()

from numba import config as _numba_config  # noqa: E402  (after the cache folder is set)
from numba import njit  # noqa: E402

# numba imported before gpureplay read the variable unset: give it the folder directly.
if not _numba_config.CACHE_DIR:  # type: ignore[attr-defined]
    _numba_config.CACHE_DIR = os.environ[CACHE_ENV]  # type: ignore[attr-defined]

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
