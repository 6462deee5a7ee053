"""MIG re-partitioning in the compile step: each GPU's initial layout word and each model's candidate configs.

Under ``scheduler.mig_reconfigure: idle`` (with ``mig_strategy: mixed``) the
engine gives idle MIG GPUs new mig-parted configs while it replays
(:mod:`gpureplay.engine.devices.repartition`). A config travels as a *layout word*:
byte ``s`` is the instance that begins at memory slice ``s`` (its memory
slices | compute slices << 4; 0 where none begins), at the starts
:func:`~gpureplay.mig.parted.find_placement` gives (as the mixed strategy
places a node's config). docs/engine/devices.md, "Re-partitioning idle GPUs".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import gpureplay.engine.state.layout as L
from gpureplay.engine.state.layout import Int64Array
from gpureplay.errors import InputError, Problem
from gpureplay.mig.geometry import Instance, MigGeometry
from gpureplay.mig.parted import find_placement, standard_configs
from gpureplay.replay.mig import DynamicMigNodes

__all__ = ["RepartitionPlan", "config_starts", "default_layouts", "layout_word", "repartition_plan"]

#: The config key the candidate configs come from (named in errors).
LAYOUTS_KEY = "scheduler.mig_reconfigure_layouts"


@dataclass(frozen=True)
class RepartitionPlan:
    """What the engine needs to re-partition MIG GPUs.

    Attributes
    ----------
    dyn
        The MIG nodes, with ``instances`` set per product to the starts each
        profile has in some candidate config (so a pod's shape allows every
        start its GPU's config may give it).
    node_words
        Per node (table order): the layout word of its initial config, -1 on
        nodes of whole GPUs.
    candidates
        Product -> its candidate configs as ``(name, layout word)``, in order.
    """

    dyn: DynamicMigNodes
    node_words: Int64Array
    candidates: dict[str, tuple[tuple[str, int], ...]]

    def layouts_array(self, models: Sequence[str]) -> Int64Array:
        """``classes.mig_layouts``: per model code, the candidate words in order, -1 after the last."""
        width = max((len(c) for c in self.candidates.values()), default=0) + 1
        out = np.full((max(len(models), 1), width), -1, dtype=np.int64)
        for code, product in enumerate(models):
            for i, (_, word) in enumerate(self.candidates.get(product, ())):
                out[code, i] = word
        return out

    def rejection_shapes(self, shapes: Int64Array, models: Sequence[str]) -> Int64Array:
        """``shapes`` (``[row, model code]``) with each instance shape's starts cut to the candidate config
        holding the most instances of it (ties the earlier): what a job is checked against at arrival."""
        out = shapes.copy()
        for code, product in enumerate(models):
            words = [word for _, word in self.candidates.get(product, ())]
            if not words:
                continue
            column = out[:, code]
            for shape in np.unique(column[column >= 0]):
                best = max(words, key=lambda w: bin(config_starts(w, int(shape))).count("1"))
                column[column == shape] = (int(shape) & ~0xFF) | config_starts(best, int(shape))
        return out


def config_starts(word: int, shape: int) -> int:
    """The allowed starts of ``shape`` where layout ``word`` holds an instance of its profile
    (:func:`gpureplay.engine.devices.mig.layout_starts`, cut to the shape's own starts).

    Examples
    --------
    >>> config_starts(0x3400000022, 0x3411)  # 3g.20gb (starts 0 and 4) in 2g@0 + 3g@4
    16
    """
    code = (shape >> L.MIG_SIZE_SHIFT & 15) | (shape >> L.MIG_COMPUTE_SHIFT & 15) << 4
    starts = sum(1 << s for s in range(L.MIG_MEMORY_SLICES) if (word >> (8 * s)) & 0xFF == code)
    return shape & 0xFF & starts


def layout_word(geometry: MigGeometry, instances: Sequence[Instance]) -> int:
    """The layout word of a set of placed instances.

    Examples
    --------
    >>> from gpureplay.mig.geometry import mig_geometry
    >>> hex(layout_word(mig_geometry("A100-40GB"), [Instance("3g.20gb", 4), Instance("2g.10gb", 0)]))
    '0x3400000022'
    """
    word = 0
    for instance in instances:
        profile = geometry.profile(instance.profile)
        word |= (profile.memory_slices | profile.compute_slices << 4) << (8 * instance.start)
    return word


def default_layouts(geometry: MigGeometry) -> list[str]:
    """The standard mig-parted configs of a model that make instances, media extensions left out.

    Examples
    --------
    >>> from gpureplay.mig.geometry import mig_geometry
    >>> default_layouts(mig_geometry("A100-40GB"))  # doctest: +NORMALIZE_WHITESPACE
    ['all-1g.5gb', 'all-1g.10gb', 'all-2g.10gb', 'all-3g.20gb', 'all-4g.20gb', 'all-7g.40gb',
     'all-balanced']
    """
    out = []
    for name, entries in standard_configs(geometry).configs.items():
        counts = [(p, c) for p, c in entries[0].mig_devices if c > 0]
        if counts and not any("+" in p for p, _ in counts):
            out.append(name)
    return out


def _placed(geometry: MigGeometry, name: str) -> tuple[Instance, ...]:
    counts = {p: c for p, c in standard_configs(geometry).configs[name][0].mig_devices if c > 0}
    return find_placement(geometry, counts) or ()


def repartition_plan(dyn: DynamicMigNodes, names: Sequence[str] | None) -> RepartitionPlan:
    """Each MIG model's candidate configs and each node's initial layout word.

    Parameters
    ----------
    dyn
        From :func:`gpureplay.replay.mig.dynamic_mig_nodes` with ``mixed`` and
        ``repartition``.
    names
        ``scheduler.mig_reconfigure_layouts``: the configs a GPU may be given,
        in order of preference on ties (None: :func:`default_layouts`). A
        model's candidates are the listed names it has, then every node's
        initial config of that model not listed.

    Raises
    ------
    InputError
        For a name no MIG model of the cluster has as a config, or a config of
        media-extension instances (``scheduler.mig_reconfigure_layouts``).
    """
    problems: list[Problem] = []
    candidates: dict[str, tuple[tuple[str, int], ...]] = {}
    instances: dict[str, dict[str, int]] = {}
    initial: dict[str, list[str]] = {}
    for product, layout in zip(dyn.nodes["gpu_model"], dyn.layouts, strict=True):
        if layout is not None and layout not in initial.setdefault(str(product), []):
            initial[str(product)].append(layout)
    known: set[str] = set()
    for product, geometry in dyn.geometry.items():
        configs = standard_configs(geometry).configs
        known |= set(configs)
        chosen = default_layouts(geometry) if names is None else [n for n in names if n in configs]
        for layout in initial.get(product, []):
            if layout not in chosen:
                chosen.append(layout)
        words: list[tuple[str, int]] = []
        starts: dict[str, int] = {}
        for name in chosen:
            placed = _placed(geometry, name)
            if not placed:
                message = (
                    f"{name} makes no MIG instance; GPUs are re-partitioned between configs with instances "
                    "(a GPU going whole would change the node's nvidia.com/gpu count: not modelled)"
                )
                problems.append(Problem(message, "config", column=LAYOUTS_KEY))
                continue
            if any("+" in instance.profile for instance in placed):
                message = f"{name} makes media-extension instances ({placed[0].profile}); not modelled here"
                problems.append(Problem(message, "config", column=LAYOUTS_KEY))
                continue
            words.append((name, layout_word(geometry, placed)))
            for instance in placed:
                starts[instance.profile] = starts.get(instance.profile, 0) | 1 << instance.start
        candidates[product] = tuple(words)
        instances[product] = starts
    for name in names or ():
        if name not in known:
            models = ", ".join(sorted({g.model for g in dyn.geometry.values()})) or "none"
            message = f"{name!r} is no mig-parted config of the cluster's MIG models ({models})"
            problems.append(Problem(message, "config", column=LAYOUTS_KEY))
    if problems:
        raise InputError(problems[:10], total=len(problems))
    node_words = np.full(len(dyn.layouts), -1, dtype=np.int64)
    for i, (product, layout) in enumerate(zip(dyn.nodes["gpu_model"], dyn.layouts, strict=True)):
        if layout is not None:
            node_words[i] = layout_word(
                dyn.geometry[str(product)], _placed(dyn.geometry[str(product)], layout)
            )
    return RepartitionPlan(dataclasses.replace(dyn, instances=instances), node_words, candidates)
