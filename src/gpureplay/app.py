"""The Hydra entry point: compose the config, hand it to :func:`run_experiment`.

Kept thin on purpose (see STYLE.md): joblib/Ray workers pickle this module's
task function, so nothing numba-compiled may live here.

In a multirun, a point whose folder is already complete is skipped, and a
point that fails records its error and returns, so the other points go on.
A single run recomputes always and exits non-zero on error.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from gpureplay.config import register_configs
from gpureplay.errors import InputError

register_configs()
log = logging.getLogger("gpureplay")


@hydra.main(version_base="1.3", config_path="pkg://gpureplay.conf", config_name="config")
def main(cfg: DictConfig) -> Any:
    """Run one replay into Hydra's output folder; return its summary row (None if it failed)."""
    from gpureplay.experiment import load_summary, run_experiment
    from gpureplay.results.writer import is_done
    from gpureplay.sweep import write_error, write_status

    out = Path(HydraConfig.get().runtime.output_dir)
    sweeping = HydraConfig.get().mode == RunMode.MULTIRUN
    if sweeping and is_done(out):
        write_status(out, "skipped")
        log.info("complete already, skipped: %s", out)
        return load_summary(out)
    try:
        summary = run_experiment(cfg, out).summary
    except Exception as err:
        write_error(out, err, cfg)
        write_status(out, "failed", f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
        if sweeping:
            log.error("point failed: %s: %s", out, err)
            return None
        if isinstance(err, InputError | FileNotFoundError):
            print(f"gpureplay: error:\n{err}", file=sys.stderr)
            sys.exit(2)
        raise
    write_status(out, "done")
    return summary
