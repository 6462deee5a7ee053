"""One writer at a time per numba cache index: concurrent replays share the on-disk cache safely.

numba stores the compiled versions of a kernel as numbered data files
(``name-N.nbc``) listed in one index (``name.nbi``). Its ``save`` reads the
index, takes the first free number, writes the index, then the data, with no
lock: two processes compiling the same kernel for different argument types at
once (the points of a parallel sweep, pytest-xdist workers, on a cold cache)
can both take number N, and the index then maps one type's signature to the
other type's machine code. Loading it crashes or computes garbage (numba issue
10128, "Race condition in GUFunc caching can lead to segmentation faults";
its maintainers proposed a file lock, which numba does not ship).

:func:`serialize_cache_writes` replaces that ``save`` with one that holds an
exclusive ``flock`` on ``name.nbi.lock`` from reading the index to writing it,
and writes the data file before the index entry that names it, so a reader
never finds an entry whose data is missing or another kernel's. Reads take no
lock: numba writes each file whole under a temporary name and renames it.
"""

from __future__ import annotations

import itertools
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: numba's own save, unlocked
    fcntl = None  # type: ignore[assignment]

from numba.core.caching import IndexDataCacheFile


def _locked_save(self: Any, key: Any, data: Any) -> None:
    """numba's ``IndexDataCacheFile.save``, under an exclusive lock, data before index."""
    with open(f"{self._index_path}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        overloads = self._load_index()
        data_name = overloads.get(key)
        if data_name is None:
            taken = set(overloads.values())
            data_name = next(
                name for name in (self._data_name(i) for i in itertools.count(1)) if name not in taken
            )
        self._save_data(data_name, data)
        if overloads.get(key) != data_name:
            overloads[key] = data_name
            self._save_index(overloads)


def serialize_cache_writes() -> None:
    """Make numba's cache saves safe across processes (idempotent; a no-op where ``flock`` is missing)."""
    if fcntl is None or getattr(IndexDataCacheFile.save, "__gpureplay__", False):
        return
    _locked_save.__gpureplay__ = True  # type: ignore[attr-defined]
    IndexDataCacheFile.save = _locked_save  # type: ignore[method-assign]
