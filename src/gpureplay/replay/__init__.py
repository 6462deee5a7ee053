"""From canonical tables to a finished replay: compile the inputs, run the engine, read the results.

The replay itself is :func:`gpureplay.replay.simulate.simulate`. This package imports nothing on its own:
:mod:`gpureplay.replay.simulate` imports numba and the engine, which the memory check before a run
(:mod:`gpureplay.replay.memory`), a run that stops on its inputs and the command line's help do not need.
The result schemas and :class:`~gpureplay.replay.simulate.Replay` are still read from here, loaded on
first use (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpureplay.replay.simulate import ATTEMPT_SCHEMA, JOB_RESULT_SCHEMA, TIMELINE_SCHEMA, Replay

__all__ = ["ATTEMPT_SCHEMA", "JOB_RESULT_SCHEMA", "TIMELINE_SCHEMA", "Replay"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("gpureplay.replay.simulate"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
