"""MIG geometry of a GPU model and the placement rule on one GPU.

A MIG-enabled A100/H100/H200 has 8 memory slices and 7 compute slices. The
state of one GPU is a :class:`SliceState`: the memory-slice occupancy mask,
the compute slices in use, and whether the media engines are taken.
:func:`fits_slots` is the placement rule on those plain integers (what the
engine keeps per GPU); :class:`MigGeometry` wraps it with a model's profile
names and says why a placement is refused.

Examples
--------
>>> a100 = mig_geometry("A100-40GB")
>>> gpu = a100.place(SliceState(), "4g.20gb", 0)
>>> a100.free_starts(gpu, "3g.20gb")
(4,)
>>> a100.problem(a100.place(SliceState(), "3g.20gb", 0), "4g.20gb", 0)
'4g.20gb@0 needs memory slices 0-3 and 0, 1, 2, 3 are in use'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from gpureplay.cluster.catalog import (
    MigProfile,
    canonical_model,
    gpu_model,
    gpu_models,
    mig_model_profiles,
    mig_slices,
)

__all__ = [
    "Instance",
    "MigError",
    "MigGeometry",
    "MigProfile",
    "SliceState",
    "fits_slots",
    "mig_geometry",
    "mig_models",
]


class MigError(ValueError):
    """A MIG request the geometry does not allow; the message names the model and the profile."""


@dataclass(frozen=True)
class SliceState:
    """What is in use on one MIG-enabled GPU.

    Parameters
    ----------
    mask
        Memory-slice occupancy: bit ``i`` is set when slice ``i`` belongs to an instance.
    compute_used
        Compute (SM) slices owned by the GPU's instances.
    media_used
        Whether a ``+me`` instance holds the GPU's media engines.
    """

    mask: int = 0
    compute_used: int = 0
    media_used: bool = False


@dataclass(frozen=True)
class Instance:
    """One GPU instance of a layout: ``profile`` placed at memory slice ``start``.

    Examples
    --------
    >>> str(Instance("3g.20gb", 4))
    '3g.20gb@4'
    """

    profile: str
    start: int

    def __str__(self) -> str:
        return f"{self.profile}@{self.start}"


def fits_slots(
    mask: int,
    compute_used: int,
    media_used: bool,
    start: int,
    width: int,
    compute: int,
    media: bool,
    start_mask: int,
    memory_slices: int,
    compute_slices: int,
) -> bool:
    """Whether an instance fits on a GPU in the given state: the MIG placement rule on plain ints.

    Only scalar integer operations, so the engine can compile it with numba
    and call it per GPU on its state arrays.

    Parameters
    ----------
    mask, compute_used, media_used
        The GPU's state (see :class:`SliceState`).
    start
        Memory slice the instance would start at.
    width, compute, media
        The profile: memory slices it occupies, compute slices it owns, and
        whether it is a ``+me`` profile.
    start_mask
        The profile's allowed start slots as bits (bit ``s`` set: ``s`` allowed).
    memory_slices, compute_slices
        The GPU's totals (8 and 7 on A100/H100/H200).

    Returns
    -------
    bool
        True when the start is allowed, slices ``[start, start + width)`` are
        inside the GPU and all free, the compute slices in use stay within the
        total, and at most one ``+me`` instance is on the GPU.

    Notes
    -----
    NVIDIA MIG User Guide (v580), "Partitioning" and the profile tables 6-8:
    a GPU instance is created at one of its profile's placements (``nvidia-smi
    mig -lgipp``); NVML ``nvmlDeviceGetGpuInstancePossiblePlacements``: "A
    created GPU instance occupies memory slices described by its placement.
    Creation of new GPU instance will fail if there is overlap with the already
    occupied memory slices." Only one ``+me`` instance per GPU (tables 6-8,
    "Number of Instances Available" 1). The compute check never binds on the
    A100/H100/H200 tables (docs/systems.md, "NVIDIA MIG and mig-parted": each profile has
    compute <= memory slices) but keeps the rule independent of the table.
    """
    if start < 0 or start + width > memory_slices or not (start_mask >> start) & 1:
        return False
    if mask & (((1 << width) - 1) << start):
        return False
    if compute_used + compute > compute_slices:
        return False
    return not (media and media_used)


def _slices(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if (mask >> i) & 1]


def _start_mask(profile: MigProfile) -> int:
    return sum(1 << s for s in profile.starts)


@dataclass(frozen=True)
class MigGeometry:
    """The MIG geometry of one GPU model: its slices and its named profiles.

    Parameters
    ----------
    model
        Canonical catalog model name, e.g. ``"A100-40GB"``.
    memory_slices, compute_slices
        Slices of the GPU (8 and 7 on A100/H100/H200).
    profiles
        The model's profiles in catalog order (``1g.5gb``, ``1g.5gb+me``, ...).
    """

    model: str
    memory_slices: int
    compute_slices: int
    profiles: tuple[MigProfile, ...]

    def profile(self, name: str | MigProfile) -> MigProfile:
        """Return the profile called ``name``.

        Raises
        ------
        MigError
            When the model has no such profile; the message lists its profiles.
        """
        if isinstance(name, MigProfile):
            return name
        for profile in self.profiles:
            if profile.name == name:
                return profile
        known = ", ".join(p.name for p in self.profiles)
        raise MigError(f"{name!r} is not a MIG profile of {self.model}; its profiles: {known}")

    @property
    def base_profiles(self) -> tuple[MigProfile, ...]:
        """The base profiles: no ``+me``, and per compute size the one with the fewest memory slices.

        On A100-40GB: ``1g.5gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb``; ``1g.5gb+me``
        (same slices as ``1g.5gb`` plus the media engines) and ``1g.10gb`` (one
        compute slice with two memory slices) are left out.

        Notes
        -----
        mig-parted ``pkg/mig/builder/balanced.go`` (``isBaseProfile``, and per
        G value the profile with the highest max count, i.e. the smallest
        memory footprint); docs/systems.md, "NVIDIA MIG and mig-parted" counts maximal layouts
        over these five A100 profiles.
        """
        best: dict[int, MigProfile] = {}
        for profile in self.profiles:
            if profile.media_extensions:
                continue
            held = best.get(profile.compute_slices)
            if held is None or profile.memory_slices < held.memory_slices:
                best[profile.compute_slices] = profile
        return tuple(p for p in self.profiles if best.get(p.compute_slices) is p)

    def problem(self, state: SliceState, profile: str | MigProfile, start: int) -> str | None:
        """Why ``profile`` cannot be placed at ``start`` on a GPU in ``state``, or ``None`` when it fits.

        Notes
        -----
        The rule is :func:`fits_slots`; this spells out the first part of it
        that fails, for error messages.
        """
        p = self.profile(profile)
        at = f"{p.name}@{start}"
        if start not in p.starts:
            allowed = ", ".join(map(str, p.starts))
            return f"{p.name} cannot start at memory slice {start} on {self.model} (allowed: {allowed})"
        busy = state.mask & (((1 << p.width) - 1) << start)
        if busy:
            used = ", ".join(map(str, _slices(busy)))
            return f"{at} needs memory slices {start}-{start + p.width - 1} and {used} are in use"
        free = self.compute_slices - state.compute_used
        if p.compute_slices > free:
            return f"{at} needs {p.compute_slices} compute slices; {free} of {self.compute_slices} are free"
        if p.media_extensions and state.media_used:
            return f"{at} needs the media engines and another +me instance holds them (one per GPU)"
        return None

    def fits(self, state: SliceState, profile: str | MigProfile, start: int) -> bool:
        """Whether ``profile`` fits at ``start`` on a GPU in ``state`` (:func:`fits_slots`)."""
        p = self.profile(profile)
        return fits_slots(
            state.mask,
            state.compute_used,
            state.media_used,
            start,
            p.width,
            p.compute_slices,
            p.media_extensions,
            _start_mask(p),
            self.memory_slices,
            self.compute_slices,
        )

    def place(self, state: SliceState, profile: str | MigProfile, start: int) -> SliceState:
        """Return the state after placing ``profile`` at ``start``.

        Raises
        ------
        MigError
            When it does not fit; the message names the model, profile and reason.
        """
        p = self.profile(profile)
        if not self.fits(state, p, start):
            raise MigError(f"{self.model}: {self.problem(state, p, start)}")
        return SliceState(
            mask=state.mask | (((1 << p.width) - 1) << start),
            compute_used=state.compute_used + p.compute_slices,
            media_used=state.media_used or p.media_extensions,
        )

    def release(self, state: SliceState, profile: str | MigProfile, start: int) -> SliceState:
        """Return the state after removing an instance of ``profile`` placed at ``start``.

        Raises
        ------
        MigError
            When the state does not hold such an instance (its slices are not all in use).
        """
        p = self.profile(profile)
        slices = ((1 << p.width) - 1) << start
        if start not in p.starts or state.mask & slices != slices or state.compute_used < p.compute_slices:
            raise MigError(f"{self.model}: no {p.name}@{start} to release")
        return SliceState(
            mask=state.mask & ~slices,
            compute_used=state.compute_used - p.compute_slices,
            media_used=state.media_used and not p.media_extensions,
        )

    def free_starts(self, state: SliceState, profile: str | MigProfile) -> tuple[int, ...]:
        """The start slots where ``profile`` fits on a GPU in ``state``, lowest first."""
        p = self.profile(profile)
        return tuple(s for s in p.starts if self.fits(state, p, s))

    def state_of(self, instances: Iterable[Instance]) -> SliceState:
        """The state of a GPU holding ``instances``.

        Raises
        ------
        MigError
            When they do not fit together.
        """
        state = SliceState()
        for instance in instances:
            state = self.place(state, instance.profile, instance.start)
        return state

    def max_count(self, profile: str | MigProfile) -> int:
        """How many instances of ``profile`` an empty GPU holds (the guide's "Number of Instances Available").

        Examples
        --------
        >>> a100 = mig_geometry("A100-40GB")
        >>> [a100.max_count(p) for p in ("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb")]
        [7, 1, 4, 3, 2]
        """
        p = self.profile(profile)
        state, count = SliceState(), 0
        # All placements of one profile have the same width, so taking the lowest free start each
        # time packs the most (interval scheduling with equal lengths).
        for start in p.starts:
            if self.fits(state, p, start):
                state, count = self.place(state, p, start), count + 1
        return count


def mig_models() -> tuple[str, ...]:
    """Catalog models whose MIG profiles are modelled (named in ``gpu_models.toml``), in catalog order."""
    return tuple(name for name, model in gpu_models().items() if model.mig_names)


@cache
def mig_geometry(model: str) -> MigGeometry:
    """Return the MIG geometry of ``model`` (a catalog name or alias) from the GPU catalog.

    Raises
    ------
    MigError
        When the model is unknown, has no MIG, or its MIG profiles are not
        modelled; the message lists the models that have them.

    Notes
    -----
    The data is ``cluster/gpu_models.toml``: MIG User Guide (v580) tables 6-8
    and ``nvidia-smi mig -lgipp`` placements; H200 placements are assumed equal
    to A100/H100 (no published ``-lgipp`` for the H200 was found).
    """
    name = canonical_model(model)
    known = ", ".join(mig_models())
    if name is None:
        raise MigError(f"unknown GPU model {model!r}; models with MIG: {known}")
    if gpu_model(name).mig is None:
        raise MigError(f"{name} has no MIG; models with MIG: {known}")
    profiles = mig_model_profiles(name)
    if not profiles:
        raise MigError(f"{name}: its MIG profiles are not in the catalog yet; models with MIG: {known}")
    memory, compute = mig_slices(name)
    return MigGeometry(name, memory, compute, tuple(profiles.values()))
