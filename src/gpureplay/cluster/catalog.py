"""Hardware catalog: GPU models, their memory, MIG geometry and NVLink domain size.

The facts live in ``gpu_models.toml`` next to this module, one table per
model, so they can be read and reviewed without reading code. Trace and node
adapters resolve the model names they meet through :func:`canonical_model`,
which knows the aliases each trace uses (``V100M32``, ``A100-SXM4-80GB``, ...).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from typing import Any


@dataclass(frozen=True)
class MigProfile:
    """One MIG GPU-instance profile: a shape of a geometry, or a model's named profile.

    ``name`` is the shape (``"3g"``) in :func:`mig_profiles` and the model's
    profile name (``"3g.20gb"``) in :func:`mig_model_profiles`.

    Notes
    -----
    Slices and start slots follow the NVIDIA MIG User Guide (v580) tables 6-8
    and ``nvidia-smi mig -lgipp``: a placement uses memory slices
    ``[start, start + width)`` of the GPU's memory-slice mask, and NVML defines
    a placement's size as the number of memory slices it occupies
    (``nvmlGpuInstancePlacement_t``), so ``width == memory_slices``.
    """

    name: str
    memory_slices: int
    compute_slices: int
    starts: tuple[int, ...]
    width: int
    media_extensions: bool = False


@dataclass(frozen=True)
class GpuModel:
    """A GPU model of the catalog."""

    name: str
    memory_mib: int
    nvlink_size: int
    mig: str | None
    aliases: tuple[str, ...]
    note: str
    #: ``(profile name, geometry shape)`` pairs, e.g. ``("3g.20gb", "3g")``; empty when MIG is not modelled.
    mig_names: tuple[tuple[str, str], ...] = ()
    #: PCI device ids, e.g. ``0x20B010DE`` (matched against a mig-parted ``device-filter``).
    pci_ids: tuple[int, ...] = ()
    #: Board power of one GPU, watts: idle (no work, clocks down) and peak (the datasheet's TDP / max
    #: board power); None for a model whose part is not published (``power_note`` says why).
    idle_w: float | None = None
    tdp_w: float | None = None
    #: Where the two power figures come from and how sure they are.
    power_note: str = ""


@dataclass(frozen=True)
class _Geometry:
    memory_slices: int
    compute_slices: int
    shapes: dict[str, MigProfile]


def _shape(geometry: str, name: str, spec: dict[str, Any]) -> MigProfile:
    where = f"gpu_models.toml: [mig.{geometry}.profiles] {name!r}"
    required = {"memory", "compute", "starts", "width"}
    if not required <= set(spec) <= required | {"media_extensions"}:
        raise RuntimeError(f"{where}: needs memory, compute, starts, width (media_extensions optional)")
    profile = MigProfile(
        name=name,
        memory_slices=int(spec["memory"]),
        compute_slices=int(spec["compute"]),
        starts=tuple(int(s) for s in spec["starts"]),
        width=int(spec["width"]),
        media_extensions=bool(spec.get("media_extensions", False)),
    )
    if profile.width != profile.memory_slices:
        # NVML: a placement's size is the number of memory slices it occupies.
        raise RuntimeError(f"{where}: width {profile.width} != memory {profile.memory_slices}")
    if not profile.starts or list(profile.starts) != sorted(set(profile.starts)):
        raise RuntimeError(f"{where}: starts must be a non-empty increasing list")
    return profile


def _geometry(name: str, spec: dict[str, Any]) -> _Geometry:
    memory, compute = int(spec["memory_slices"]), int(spec["compute_slices"])
    shapes = {shape: _shape(name, shape, body) for shape, body in spec["profiles"].items()}
    for shape in shapes.values():
        if shape.starts[0] < 0 or shape.starts[-1] + shape.width > memory or shape.compute_slices > compute:
            raise RuntimeError(
                f"gpu_models.toml: [mig.{name}.profiles] {shape.name!r} does not fit "
                f"{memory} memory / {compute} compute slices"
            )
    return _Geometry(memory, compute, shapes)


def power_fields(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A model's ``idle_w``, ``tdp_w`` and ``power_note`` from its catalog table, checked.

    Both figures or neither (a model whose part is unpublished has none); when given, finite, with
    ``0 <= idle_w < tdp_w``, and a ``power_note`` naming their source.

    Raises
    ------
    RuntimeError
        Naming the model and the field: the catalog is package data, so a bad value is a bug.

    Examples
    --------
    >>> power_fields("X", {"idle_w": 50, "tdp_w": 400, "power_note": "datasheet"})
    {'idle_w': 50.0, 'tdp_w': 400.0, 'power_note': 'datasheet'}
    """
    where = f"gpu_models.toml: [models.{name}]"
    given = [key for key in ("idle_w", "tdp_w") if key in spec]
    note = str(spec.get("power_note", ""))
    if not given:
        return {"idle_w": None, "tdp_w": None, "power_note": note}
    if len(given) == 1:
        raise RuntimeError(f"{where}: gives {given[0]} without {({'idle_w', 'tdp_w'} - set(given)).pop()}")
    values: dict[str, float] = {}
    for key in ("idle_w", "tdp_w"):
        value = spec[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise RuntimeError(f"{where}: {key} must be a finite number of watts, found {value!r}")
        values[key] = float(value)
    if not 0.0 <= values["idle_w"] < values["tdp_w"]:
        raise RuntimeError(
            f"{where}: needs 0 <= idle_w < tdp_w, "
            f"found idle_w {values['idle_w']:g}, tdp_w {values['tdp_w']:g}"
        )
    if not note:
        raise RuntimeError(f"{where}: idle_w and tdp_w need a power_note naming their source")
    return {**values, "power_note": note}


@cache
def _load() -> tuple[dict[str, GpuModel], dict[str, _Geometry]]:
    raw = tomllib.loads(files("gpureplay.cluster").joinpath("gpu_models.toml").read_text())
    geometries = {geo: _geometry(geo, spec) for geo, spec in raw["mig"].items()}
    models = {
        name: GpuModel(
            name=name,
            memory_mib=int(spec["memory_mib"]),
            nvlink_size=int(spec.get("nvlink_size", 1)),
            mig=spec.get("mig"),
            aliases=tuple(spec.get("aliases", ())),
            note=str(spec.get("note", "")),
            mig_names=tuple((str(k), str(v)) for k, v in spec.get("mig_profiles", {}).items()),
            pci_ids=tuple(int(str(i), 16) for i in spec.get("pci_ids", ())),
            **power_fields(name, spec),
        )
        for name, spec in raw["models"].items()
    }
    for model in models.values():
        if model.mig is not None and model.mig not in geometries:
            raise RuntimeError(f"gpu_models.toml: model {model.name}: unknown MIG geometry {model.mig!r}")
        if model.mig_names and model.mig is None:
            raise RuntimeError(f"gpu_models.toml: model {model.name} names MIG profiles but has no geometry")
        for profile, shape in model.mig_names:
            if model.mig is not None and shape not in geometries[model.mig].shapes:
                raise RuntimeError(
                    f"gpu_models.toml: model {model.name} profile {profile!r} names unknown shape {shape!r}"
                )
    owners: dict[int, str] = {}
    for model in models.values():
        for pci in model.pci_ids:
            if owners.setdefault(pci, model.name) != model.name:
                raise RuntimeError(f"gpu_models.toml: pci id 0x{pci:08X} names two models")
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


def label_model(value: str) -> str | None:
    """Return the catalog model a node label's value names, or ``None``.

    GPU Feature Discovery's ``nvidia.com/gpu.product`` prefixes the part name with its vendor brand
    (``NVIDIA-A100-SXM4-80GB``, ``Tesla-V100-SXM2-16GB``); the brand is dropped before the alias lookup.

    Examples
    --------
    >>> label_model("NVIDIA-A100-SXM4-80GB")
    'A100-80GB'
    >>> label_model("Tesla-V100-SXM2-16GB")
    'V100'
    """
    found = canonical_model(value)
    if found is not None:
        return found
    for brand in ("nvidia-", "tesla-"):
        if value.strip().casefold().startswith(brand):
            return canonical_model(value.strip()[len(brand) :])
    return None


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
    """Return the MIG profile shapes of ``model``'s geometry (``"1g"``, ``"3g"``, ...), empty without MIG."""
    geometry = gpu_model(model).mig
    return dict(_load()[1][geometry].shapes) if geometry else {}


def mig_slices(model: str) -> tuple[int, int]:
    """Return ``(memory slices, compute slices)`` of ``model``'s MIG geometry, ``(0, 0)`` without MIG."""
    geometry = gpu_model(model).mig
    if geometry is None:
        return (0, 0)
    spec = _load()[1][geometry]
    return (spec.memory_slices, spec.compute_slices)


def mig_model_profiles(model: str) -> dict[str, MigProfile]:
    """Return ``model``'s named MIG profiles (``"3g.20gb"``, ...) in catalog order, empty when not modelled.

    Examples
    --------
    >>> p = mig_model_profiles("A100-40GB")["1g.10gb"]
    >>> (p.memory_slices, p.compute_slices, p.starts)
    (2, 1, (0, 2, 4, 6))
    """
    entry = gpu_model(model)
    if entry.mig is None:
        return {}
    shapes = _load()[1][entry.mig].shapes
    return {name: replace(shapes[shape], name=name) for name, shape in entry.mig_names}
