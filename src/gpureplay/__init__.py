"""gpureplay: trace-replay benchmarking of GPU cluster scheduling.

The Python API (:mod:`gpureplay.api`) is re-exported here and imported on first use, so that
``import gpureplay`` stays cheap (the command line imports this package first): ``gpureplay.run``,
``gpureplay.load``, ``gpureplay.load_sweep``, ``gpureplay.compare``, ``gpureplay.compose`` and the
classes ``Results``, ``Sweep`` and ``ConfigError``.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("gpureplay")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from gpureplay.api import ConfigError, Results, Sweep, compare, compose, load, load_sweep, run

#: Names of :mod:`gpureplay.api` offered here, imported on first use.
_API = ("ConfigError", "Results", "Sweep", "compare", "compose", "load", "load_sweep", "run")


def __getattr__(name: str) -> Any:
    if name in _API:
        from gpureplay import api

        return getattr(api, name)
    raise AttributeError(f"module 'gpureplay' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])


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
