"""Every maximal MIG layout of a GPU model.

A layout is a set of instances, each a (profile, start slot), that fit on one
GPU together. It is maximal when no further instance of the profiles
considered fits. On A100-40GB the base profiles give 19 maximal layouts.

Examples
--------
>>> from gpureplay.mig.geometry import mig_geometry
>>> found = maximal_layouts(mig_geometry("A100-40GB"))
>>> len(found)
19
>>> [format_layout(layout) for layout in found[:2]]
['7g.40gb@0', '4g.20gb@0 3g.20gb@4']
"""

from __future__ import annotations

from collections.abc import Sequence

from gpureplay.mig.geometry import Instance, MigGeometry, MigProfile, SliceState

__all__ = ["Layout", "format_layout", "is_maximal", "maximal_layouts"]

#: Instances ordered by start slot.
Layout = tuple[Instance, ...]


def format_layout(layout: Sequence[Instance]) -> str:
    """Write a layout as ``profile@start`` words by start slot, e.g. ``3g.20gb@0 2g.10gb@4 1g.5gb@6``."""
    return " ".join(str(i) for i in sorted(layout, key=lambda i: (i.start, i.profile)))


def is_maximal(geometry: MigGeometry, state: SliceState, profiles: Sequence[MigProfile]) -> bool:
    """Whether no instance of ``profiles`` fits on a GPU in ``state``."""
    return not any(geometry.fits(state, p, s) for p in profiles for s in p.starts)


def maximal_layouts(geometry: MigGeometry, profiles: Sequence[str] | None = None) -> tuple[Layout, ...]:
    """Every maximal layout of ``profiles`` (default: the base profiles) on one GPU of ``geometry``.

    Parameters
    ----------
    geometry
        The model's geometry (:func:`~gpureplay.mig.geometry.mig_geometry`).
    profiles
        Profile names to build layouts from. The default is
        :attr:`~gpureplay.mig.geometry.MigGeometry.base_profiles`: no ``+me``
        variant (its slices are those of the plain 1g profile; it only adds the
        media engines, one set per GPU) and no 1g profile with two memory
        slices (a duplicate-memory variant of 1g), as mig-parted's
        ``all-balanced`` builder picks them.

    Returns
    -------
    tuple of Layout
        Each layout's instances by start slot. The order is deterministic:
        a walk over the memory slices from 0 that, at each slot, first tries
        the profiles starting there widest first (then most compute slices),
        and last leaves the slot empty; so ``7g`` comes first and all-1g last.

    Notes
    -----
    A layout is valid when its instances' memory slices do not overlap, each
    starts at an allowed slot, and compute slices add up to at most the GPU's
    (:func:`~gpureplay.mig.geometry.fits_slots`; MIG User Guide v580 tables
    6-8 and ``nvidia-smi mig -lgipp``). Every instance is identified by its
    start slot, so deciding for each slot "an instance of profile p starts
    here" or "none starts here" reaches each set of instances exactly once.
    docs/systems.md, "NVIDIA MIG and mig-parted" counts 19 maximal layouts of the five A100
    base profiles and ties it to NVIDIA's 19 supported A100 combinations
    (18 before driver R510 allowed 4g + 3g).
    """
    chosen = geometry.base_profiles if profiles is None else tuple(geometry.profile(p) for p in profiles)
    order = sorted(chosen, key=lambda p: (-p.width, -p.compute_slices, p.name))
    found: list[Layout] = []

    def walk(slot: int, state: SliceState, placed: tuple[Instance, ...]) -> None:
        if slot == geometry.memory_slices:
            if is_maximal(geometry, state, chosen):
                found.append(placed)
            return
        if (state.mask >> slot) & 1:
            walk(slot + 1, state, placed)
            return
        for profile in order:
            if geometry.fits(state, profile, slot):
                walk(slot + 1, geometry.place(state, profile, slot), (*placed, Instance(profile.name, slot)))
        walk(slot + 1, state, placed)

    walk(0, SliceState(), ())
    return tuple(found)
