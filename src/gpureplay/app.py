"""The Hydra entry point: compose the config, hand it to :func:`run_experiment`.

Kept thin on purpose (see STYLE.md): joblib/Ray workers pickle this module's
task function, so nothing numba-compiled may live here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from gpureplay.config import register_configs
from gpureplay.errors import InputError

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> Any:
    """Run one replay into Hydra's output folder; return its summary row."""
    from gpureplay.experiment import run_experiment

    try:
        return run_experiment(cfg, Path(HydraConfig.get().runtime.output_dir)).summary
    except (InputError, FileNotFoundError) as err:
        print(f"gpureplay: error:\n{err}", file=sys.stderr)
        sys.exit(2)
