"""Hardware catalog: GPU models, their memory, MIG geometry and NVLink domain size.

The facts live in ``gpu_models.toml`` next to this module, one table per
model, so they can be read and reviewed without reading code. Trace and node
adapters resolve the model names they meet through :func:`canonical_model`,
which knows the aliases each trace uses (``V100M32``, ``A100-SXM4-80GB``, ...).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files


@dataclass(frozen=True)
class MigProfile:
    """One MIG GPU-instance profile of a geometry.

    Notes
    -----
    Slices and start slots follow the NVIDIA MIG User Guide (v580) tables 6-8
    and ``nvidia-smi mig -lgipp``: a placement uses memory slices
    ``[start, start + memory_slices)`` of an 8-bit mask.
    """

    name: str
    memory_slices: int
    compute_slices: int
    starts: tuple[int, ...]


@dataclass(frozen=True)
class GpuModel:
    """A GPU model of the catalog."""

    name: str
    memory_mib: int
    nvlink_size: int
    mig: str | None
    aliases: tuple[str, ...]
    note: str


@cache
def _load() -> tuple[dict[str, GpuModel], dict[str, dict[str, MigProfile]]]:
    raw = tomllib.loads(files("gpureplay.cluster").joinpath("gpu_models.toml").read_text())
    models = {
        name: GpuModel(
            name=name,
            memory_mib=int(spec["memory_mib"]),
            nvlink_size=int(spec.get("nvlink_size", 1)),
            mig=spec.get("mig"),
            aliases=tuple(spec.get("aliases", ())),
            note=str(spec.get("note", "")),
        )
        for name, spec in raw["models"].items()
    }
    geometries = {
        geo: {
            prof: MigProfile(prof, int(mem), int(comp), tuple(int(s) for s in starts))
            for prof, (mem, comp, starts) in spec["profiles"].items()
        }
        for geo, spec in raw["mig"].items()
    }
    return models, geometries


@cache
def _alias_index() -> dict[str, str]:
    models, _ = _load()
    index: dict[str, str] = {}
    for model in models.values():
        for spelling in (model.name, *model.aliases):
            key = spelling.casefold()
            if key in index and index[key] != model.name:
                raise RuntimeError(f"gpu_models.toml: alias {spelling!r} names two models")
            index[key] = model.name
    return index


def gpu_models() -> dict[str, GpuModel]:
    """Return every catalog model keyed by its canonical name."""
    return dict(_load()[0])


def canonical_model(name: str) -> str | None:
    """Return the canonical catalog name for ``name`` (or an alias), or ``None``.

    Examples
    --------
    >>> canonical_model("V100M32")
    'V100-32GB'
    >>> canonical_model("a100-sxm4-80gb")
    'A100-80GB'
    >>> canonical_model("TPUv4") is None
    True
    """
    return _alias_index().get(name.strip().casefold())


def alias_table() -> dict[str, str]:
    """Return the full ``spelling (casefolded) -> canonical name`` mapping.

    Adapters use it with polars ``replace_strict`` so model names are resolved
    in one vectorised step.
    """
    return dict(_alias_index())


def gpu_model(name: str) -> GpuModel:
    """Return the catalog entry for ``name`` (canonical or alias).

    Raises
    ------
    KeyError
        When the model is not in the catalog; the message lists the known names.
    """
    canonical = canonical_model(name)
    if canonical is None:
        known = ", ".join(sorted(_load()[0]))
        raise KeyError(f"unknown GPU model {name!r}; known models: {known}")
    return _load()[0][canonical]


def mig_profiles(model: str) -> dict[str, MigProfile]:
    """Return the MIG profiles of ``model``, empty when it has no MIG."""
    geometry = gpu_model(model).mig
    return dict(_load()[1][geometry]) if geometry else {}
