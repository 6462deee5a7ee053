"""gpureplay: trace-replay benchmarking of GPU cluster scheduling.

The Python API (:mod:`gpureplay.api`) is re-exported here and imported on first use, so that
``import gpureplay`` stays cheap (the command line imports this package first): ``gpureplay.run``,
``gpureplay.load``, ``gpureplay.load_sweep``, ``gpureplay.compare``, ``gpureplay.compose`` and the
classes ``Results``, ``Sweep`` and ``ConfigError``.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpureplay.api import ConfigError, Results, Sweep, compare, compose, load, load_sweep, run

    __version__: str

#: Names of :mod:`gpureplay.api` offered here, imported on first use.
_API = ("ConfigError", "Results", "Sweep", "compare", "compose", "load", "load_sweep", "run")


def _installed_version() -> str:
    """The installed distribution's version; ``0+unknown`` in a source tree without an install."""
    # importlib.metadata is a fifth of `gpureplay --help`'s imports: read on first use of __version__.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpureplay")
    except PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = _installed_version()
        globals()["__version__"] = value  # read once per process
        return value
    if name in _API:
        from gpureplay import api

        return getattr(api, name)
    raise AttributeError(f"module 'gpureplay' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API, "__version__"})


__all__ = [
    "ConfigError",
    "Results",
    "Sweep",
    "__version__",
    "compare",
    "compose",
    "load",
    "load_sweep",
    "run",
]
