"""The command line as the tests run it: ``python -m gpureplay`` in a subprocess, on the suite's cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def gpureplay(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run ``gpureplay ARGS`` in ``cwd`` as a user would, on the suite's numba cache (any exit status).

    ``HYDRA_FULL_ERROR`` is dropped from the environment, so errors print as a user sees them (one
    message, no traceback).
    """
    env = {**os.environ, "NUMBA_CACHE_DIR": str(REPO / ".cache" / "numba")}
    env.pop("HYDRA_FULL_ERROR", None)
    return subprocess.run(
        [sys.executable, "-m", "gpureplay", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )
