"""Wall-clock timings of a run, kept out of the Parquet results.

Timings differ on every run, so writing them into ``summary.parquet`` would
make two runs of the same configuration differ byte for byte. They go to a
small ``timing.json`` in the run folder instead, written (atomically) before
the ``DONE`` marker.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

#: Name of the timing file in a run folder.
TIMING_FILE = "timing.json"


@dataclass(frozen=True)
class RunTiming:
    """Wall-clock seconds of one run.

    Attributes
    ----------
    compile_seconds
        Loading (or, the first time, compiling) the numba kernels: a one-job
        warm-up replay under the run's policy, ~0 when numba's cache is warm.
    replay_seconds
        The replay itself (compile to arrays, event loop, result tables), kernels ready.
    total_seconds
        The whole run: reading the trace and the cluster, warm-up, replay, metrics and writing.
    """

    compile_seconds: float
    replay_seconds: float
    total_seconds: float


def write_timing(folder: Path, timing: RunTiming) -> None:
    """Write ``timing.json`` into ``folder`` through a temporary file."""
    path = Path(folder) / TIMING_FILE
    tmp = path.with_name(f".{TIMING_FILE}.tmp-{os.getpid()}")
    try:
        tmp.write_text(json.dumps(asdict(timing), indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def read_timing(folder: Path) -> RunTiming | None:
    """The timings of a run folder; None when it has no readable ``timing.json`` (e.g. an older run)."""
    try:
        data = json.loads((Path(folder) / TIMING_FILE).read_text())
        values = {k: float(data[k]) for k in ("compile_seconds", "replay_seconds", "total_seconds")}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(math.isfinite(v) and v >= 0 for v in values.values()):
        return None
    return RunTiming(**values)
