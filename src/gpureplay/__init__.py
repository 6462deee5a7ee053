"""gpureplay: trace-replay benchmarking of GPU cluster scheduling."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gpureplay")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0+unknown"

__all__ = ["__version__"]
