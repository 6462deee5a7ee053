"""Named scheduler presets, read from the ``scheduler`` config group's YAML files.

The YAML files in ``conf/scheduler/`` are the single source of truth; this
module lets code outside a Hydra run (benchmarks, notebooks, tests) get the
same :class:`Policy` without composing a whole config.
"""

from __future__ import annotations

from importlib.resources import files
from typing import cast

from omegaconf import DictConfig, OmegaConf

from gpureplay.schedulers.policy import Policy


def preset_names() -> list[str]:
    """Names of the presets in ``conf/scheduler/``."""
    folder = files("gpureplay.conf").joinpath("scheduler")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def preset(name: str) -> Policy:
    """The :class:`Policy` of preset ``name`` (e.g. ``"gang-binpack"``).

    Raises
    ------
    KeyError
        For an unknown name; the message lists the known presets.
    """
    if name not in preset_names():
        raise KeyError(f"unknown scheduler preset {name!r}; known: {', '.join(preset_names())}")
    text = files("gpureplay.conf").joinpath("scheduler", f"{name}.yaml").read_text()
    values = OmegaConf.create(text)
    assert isinstance(values, DictConfig)
    values.pop("defaults", None)  # the Hydra defaults list names the schema, which is Policy itself
    merged = OmegaConf.merge(OmegaConf.structured(Policy), values)
    return cast(Policy, OmegaConf.to_object(merged))
