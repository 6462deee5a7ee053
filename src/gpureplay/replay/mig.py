"""MIG in the compile step: the devices of MIG nodes and which of them each job may take.

Under NVIDIA k8s-device-plugin's ``single`` strategy (``scheduler.mig_strategy:
single``; docs/systems.md, "NVIDIA k8s-device-plugin") a node with a ``mig_layout`` advertises
its MIG instances as ``nvidia.com/gpu`` and carries the product label
``<model>-MIG-<profile>`` (:mod:`gpureplay.mig.devices`). The engine then sees
devices, as with time-slicing replicas: device ``p * I + i`` is instance ``i``
of GPU ``p`` (``I`` instances per GPU), each with the instance's memory and
its share of the SMs (``N_MIG_COMPUTE / N_MIG_SLICES``, the rate rule of
:func:`gpureplay.engine.devices.sharing.mig_rate`). Products play the part of GPU
models for node selection: a job's ``gpu_models`` names base models, its
``mig_profile`` (or, with ``mig_demand: smallest_fit``, the profile its demand
maps to) selects the MIG products of that profile. docs/engine/devices.md,
"MIG instances".

Under ``mig_strategy: dynamic`` (HAMi's dynamic MIG) a node whose layout is
``all-enabled`` (MIG on, no instance) is a *dynamic* node, product
``<model>-MIG``: each GPU pod placed there gets an instance made for it
(:mod:`gpureplay.engine.devices.mig`). :func:`dynamic_shapes` gives each job the
instance shape it gets on each product (``classes.mig``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

import gpureplay.engine.state.layout as L
from gpureplay.cluster.catalog import mig_model_profiles
from gpureplay.engine.state.layout import Int64Array
from gpureplay.errors import InputError, Problem
from gpureplay.mig.devices import MIG_DISABLED, MigDevices, single_strategy_devices, smallest_profile
from gpureplay.mig.geometry import MigError, MigGeometry, MigProfile, mig_geometry, mig_models
from gpureplay.mig.parted import find_placement, standard_configs

__all__ = [
    "MIG_ENABLED",
    "DynamicMigNodes",
    "MigFigures",
    "MigNodes",
    "check_mig_inputs",
    "dynamic_mig_nodes",
    "dynamic_shapes",
    "mig_figures",
    "mig_nodes",
    "mixed_product",
    "refuse_mig",
    "selector_masks",
    "shape_code",
    "split_mig_devices",
    "wanted_shapes",
]

#: Shown with refused MIG inputs when ``scheduler.mig_strategy`` is none.
_HOW = "set scheduler.mig_strategy: single (or dynamic) to model MIG instances"

#: The mig-parted config of a dynamic-MIG node: MIG on, no instance until a pod needs one.
MIG_ENABLED = "all-enabled"


def _rows(frame: pl.DataFrame) -> pl.Series:
    """The raw file's row of each table row when the adapter kept it (``source_row``), else 1-based."""
    if "source_row" in frame.columns:
        return frame["source_row"]
    return pl.Series("row", range(1, frame.height + 1))


def _job_demands(jobs: pl.DataFrame) -> Iterator[tuple[Any, ...]]:
    """Per job: (row, job_id, gpu_models, mig_profile, gpu_milli, gpu_mem_mib): what MIG selectors read."""
    profiles = jobs["mig_profile"] if "mig_profile" in jobs.columns else pl.Series([None] * jobs.height)
    return zip(
        _rows(jobs),
        jobs["job_id"],
        jobs["gpu_models"],
        profiles,
        jobs["gpu_milli"],
        jobs["gpu_mem_mib"],
        strict=True,
    )


def refuse_mig(jobs: pl.DataFrame, nodes: pl.DataFrame) -> None:
    """Raise :class:`InputError` for MIG inputs of a replay whose ``mig_strategy`` is none.

    A job naming a ``mig_profile`` or a node with an enabled ``mig_layout``
    would otherwise run on whole GPUs, silently. ``all-disabled`` is MIG off:
    accepted. Each problem names the table, the row, the column and the value.
    """
    problems: list[Problem] = []
    total = 0
    for table, frame, column, ident in (
        ("jobs", jobs, "mig_profile", "job_id"),
        ("nodes", nodes, "mig_layout", "node_name"),
    ):
        if column not in frame.columns:
            continue
        bad = frame.with_columns(_rows(frame).alias("_row")).filter(
            pl.col(column).is_not_null() & (pl.col(column) != MIG_DISABLED)
        )
        total += bad.height
        for row, name, value in bad.select("_row", ident, column).head(10).iter_rows():
            message = f"{ident} {name}: {column} {value!r} - MIG is off in this replay; {_HOW}"
            problems.append(Problem(message, f"{table} table", row=row, column=column))
    if problems:
        raise InputError(problems, total=total)


@dataclass(frozen=True)
class MigNodes:
    """The MIG side of a node table under the ``single`` strategy.

    Parameters
    ----------
    devices
        Per node (table order), its MIG devices, or ``None`` for whole GPUs.
    nodes
        The node table with ``gpu_model`` replaced by the product label of MIG nodes.
    base
        Product (or plain model) -> its base GPU model.
    """

    devices: tuple[MigDevices | None, ...]
    nodes: pl.DataFrame
    base: dict[str, str]


def mig_nodes(nodes: pl.DataFrame) -> MigNodes:
    """Read every node's ``mig_layout`` under the ``single`` strategy.

    Raises
    ------
    InputError
        For a layout the node's model does not have, a layout the single
        strategy refuses (no instance, several profiles), or a layout on a
        node without a MIG-capable model; each names the row and the column.
    """
    problems: list[Problem] = []
    devices: list[MigDevices | None] = []
    layouts = nodes["mig_layout"] if "mig_layout" in nodes.columns else pl.Series([None] * nodes.height)
    for row, name, model, memory, layout in zip(
        _rows(nodes), nodes["node_name"], nodes["gpu_model"], nodes["gpu_mem_mib"], layouts, strict=True
    ):
        if layout is None:
            devices.append(None)
            continue
        try:
            devices.append(single_strategy_devices(str(model), str(layout), int(memory)))
        except MigError as err:
            devices.append(None)
            problems.append(Problem(f"node {name}: {err}", "nodes table", row=row, column="mig_layout"))
    if problems:
        raise InputError(problems[:10], total=len(problems))
    products = [d.product if d is not None else m for d, m in zip(devices, nodes["gpu_model"], strict=True)]
    base = {
        (d.product if d is not None else str(m)): (d.model if d is not None else str(m))
        for d, m in zip(devices, nodes["gpu_model"], strict=True)
        if m is not None
    }
    relabelled = nodes.with_columns(pl.Series("gpu_model", products, dtype=pl.String()))
    return MigNodes(tuple(devices), relabelled, base)


def split_mig_devices(node_int: Int64Array, devices: Sequence[MigDevices | None]) -> int:
    """Advertise every GPU of a MIG node as its instances, in place; the new histogram width.

    Notes
    -----
    Device ``p * I + i`` is instance ``i`` of GPU ``p``; its memory is the
    instance's, its compute share ``compute_slices / gpu_compute_slices``.
    Which free instance a pod gets (the fullest GPU's lowest free one,
    ``REPLICA_PACKED``) changes nothing under isolation.
    """
    for n, d in enumerate(devices):
        if d is None:
            continue
        node_int[L.N_GPUS, n] *= d.per_gpu
        node_int[L.N_REPLICAS, n] = d.per_gpu
        node_int[L.N_REPLICA_ALLOC, n] = L.REPLICA_PACKED
        node_int[L.N_GPU_MEM, n] = d.memory_mib
        node_int[L.N_MIG_COMPUTE, n] = d.compute_slices
        node_int[L.N_MIG_SLICES, n] = d.gpu_compute_slices
    node_int[L.N_GPU0] = np.concatenate(([0], np.cumsum(node_int[L.N_GPUS])[:-1])).astype(np.int64)
    return int(node_int[L.N_GPUS].max(initial=0)) + 1


def selector_masks(jobs: pl.DataFrame, mig: MigNodes, models: tuple[str, ...], rule: int) -> np.ndarray:
    """Per job, the bits of the products (``models``, by code) its pods may run on.

    ``gpu_models`` names base models (null: any); ``mig_profile`` keeps only
    MIG products of that profile; without one, the ``rule`` (``MIG_DEMAND_*``)
    decides: any product; of each MIG model only the product of
    :func:`~gpureplay.mig.devices.smallest_profile` (smallest fit); or every
    MIG product whose instance has the pod's share of the SMs and its GPU
    memory (fits). Whole-GPU nodes stay allowed. A GPU-less job may run anywhere.

    Raises
    ------
    InputError
        For a ``mig_profile`` that is no profile of any catalog model, or set on
        a job that asks no GPU (names the row and the column).
    """
    bit = {name: 1 << i for i, name in enumerate(models)}
    device_of = {d.product: d for d in mig.devices if d is not None}
    profile_of = {product: d.profile for product, d in device_of.items()}
    gpu_memory = {
        d.product: int(m) for d, m in zip(mig.devices, mig.nodes["gpu_mem_mib"], strict=True) if d is not None
    }
    known_profiles = {p for model in mig_models() for p in mig_model_profiles(model)}
    out = np.zeros(jobs.height, dtype=np.uint64)
    problems: list[Problem] = []
    memo: dict[tuple[object, ...], int] = {}
    for i, (row, job_id, allowed, profile, milli, gmem) in enumerate(_job_demands(jobs)):
        if profile is not None and profile not in known_profiles:
            message = f"job {job_id}: {profile!r} is no MIG profile of any GPU model"
            problems.append(Problem(message, "jobs table", row, "mig_profile"))
            continue
        if milli == 0:
            if profile is not None:
                message = f"job {job_id}: mig_profile {profile!r} on a job that asks no GPU"
                problems.append(Problem(message, "jobs table", row, "mig_profile"))
            out[i] = L.ALL_MODELS
            continue
        names = None if allowed is None else tuple(sorted(allowed))
        key = (names, profile, milli if rule != L.MIG_DEMAND_ANY else 0, gmem)
        mask = memo.get(key)
        if mask is None:
            mask = 0
            for product in models:
                if allowed is not None and mig.base[product] not in allowed:
                    continue
                own = profile_of.get(product)
                if profile is not None:
                    ok = own == profile
                elif rule == L.MIG_DEMAND_SMALLEST_FIT and own is not None:
                    geometry = mig_geometry(mig.base[product])
                    ok = own == smallest_profile(geometry, milli, gmem or 0, gpu_memory[product]).name
                elif rule == L.MIG_DEMAND_FITS and own is not None:
                    d = device_of[product]
                    sms = d.compute_slices * 1000 >= min(milli, 1000) * d.gpu_compute_slices
                    ok = sms and d.memory_mib >= (gmem or 0)
                else:
                    ok = True
                if ok:
                    mask |= bit[product]
            memo[key] = mask
        out[i] = mask
    if problems:
        raise InputError(problems[:10], total=len(problems))
    return out


@dataclass(frozen=True)
class MigFigures:
    """The static MIG figures of a replay (docs/engine/devices.md, "MIG instances", Results).

    Parameters
    ----------
    instances
        MIG instances in the cluster.
    slices
        Compute slices of the cluster's MIG GPUs.
    stranded
        Of those, the slices no GPU pod of the workload can ever use.
    """

    instances: int = 0
    slices: int = 0
    stranded: int = 0

    @property
    def stranded_pct(self) -> float | None:
        """``stranded / slices`` in percent; ``None`` without MIG GPUs."""
        return 100.0 * self.stranded / self.slices if self.slices else None


def mig_figures(
    mig: MigNodes, num_gpus: Sequence[int], node_model: Int64Array, masks: np.ndarray, gpu_mem: np.ndarray
) -> MigFigures:
    """Count the instances and the stranded compute slices of the MIG nodes.

    Parameters
    ----------
    mig
        :func:`mig_nodes` of the node table.
    num_gpus
        Physical GPUs per node.
    node_model
        Product code per node.
    masks, gpu_mem
        Per GPU pod shape (GPU jobs only): the allowed-product mask and the GPU memory asked (q).

    Notes
    -----
    A GPU of ``S`` compute slices holding ``I`` instances of ``c`` slices
    strands ``S - I c`` slices outside its instances, and all ``I c`` when no
    job may take its instances: its product is outside every job's selector,
    or its memory is below every such job's q.
    """
    usable: dict[int, bool] = {}
    instances = slices = stranded = 0
    for n, d in enumerate(mig.devices):
        if d is None:
            continue
        code = int(node_model[n])
        if code not in usable:
            bit = np.uint64(1 << code)
            usable[code] = bool(np.any(((masks & bit) != 0) & (gpu_mem <= d.memory_mib)))
        gpus = int(num_gpus[n])
        used = d.per_gpu * d.compute_slices
        instances += gpus * d.per_gpu
        slices += gpus * d.gpu_compute_slices
        stranded += gpus * (d.gpu_compute_slices - (used if usable[code] else 0))
    return MigFigures(instances, slices, stranded)


@dataclass(frozen=True)
class DynamicMigNodes:
    """The MIG side of a node table under the ``dynamic`` strategy.

    Parameters
    ----------
    nodes
        The node table with ``gpu_model`` of dynamic nodes replaced by ``<model>-MIG``.
    base
        Product (or plain model) -> its base GPU model.
    dynamic
        Per node (table order), whether it is a dynamic-MIG node.
    geometry
        Slice-mask product -> its model's MIG geometry.
    gpu_memory
        Slice-mask product -> memory of one of its GPUs (MiB).
    instances
        Mixed strategy: product -> profile -> the start slots of that profile's
        instances in the node's layout (bit per start); empty under dynamic.
        With re-partitioning, the starts of the profile in any candidate config
        (:func:`gpureplay.replay.repartition.repartition_plan`).
    layouts
        Mixed strategy: per node (table order), its config (None: whole GPUs).
    repartition
        ``mig_reconfigure: idle``: mixed nodes are labelled ``<model>-MIG``
        (each GPU's config changes during the replay).
    """

    nodes: pl.DataFrame
    base: dict[str, str]
    dynamic: np.ndarray
    geometry: dict[str, MigGeometry]
    gpu_memory: dict[str, int]
    instances: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    mixed: bool = False
    layouts: tuple[str | None, ...] = ()
    repartition: bool = False


def dynamic_product(model: str) -> str:
    """The product label of a dynamic-MIG node of ``model``: ``<model>-MIG``."""
    return f"{model}-MIG"


def mixed_product(model: str, layout: str) -> str:
    """The product of a mixed-strategy node: ``<model>-MIG-<layout>`` (its instances are the layout's)."""
    return f"{model}-MIG-{layout}"


def dynamic_mig_nodes(
    nodes: pl.DataFrame, *, mixed: bool = False, repartition: bool = False
) -> DynamicMigNodes:
    """Read every node's ``mig_layout`` under the ``dynamic`` (or ``mixed``) strategy.

    Dynamic: ``all-enabled`` makes a dynamic node. Mixed: a config with
    instances makes a node whose GPUs each hold the config's instances at the
    start slots :func:`~gpureplay.mig.parted.find_placement` gives (the
    device plugin's ``mixed`` strategy: one ``nvidia.com/mig-<profile>``
    resource per profile). Null or ``all-disabled`` keeps whole GPUs. With
    ``repartition`` a mixed node's product is ``<model>-MIG`` (its GPUs'
    configs change) and its instances are left to
    :func:`gpureplay.replay.repartition.repartition_plan`.

    Raises
    ------
    InputError
        For a layout on a model without MIG, a config the model does not have,
        under dynamic a config with instances made in advance, under mixed
        ``all-enabled`` (no instance); each names the row and the column.
    """
    problems: list[Problem] = []
    flags: list[bool] = []
    products: list[str | None] = []
    geometry: dict[str, MigGeometry] = {}
    memory: dict[str, int] = {}
    instances: dict[str, dict[str, int]] = {}
    node_layouts: list[str | None] = []
    layouts = nodes["mig_layout"] if "mig_layout" in nodes.columns else pl.Series([None] * nodes.height)
    for row, name, model, gpu_mem, layout in zip(
        _rows(nodes), nodes["node_name"], nodes["gpu_model"], nodes["gpu_mem_mib"], layouts, strict=True
    ):
        products.append(model)
        flags.append(False)
        node_layouts.append(None)
        if layout is None or layout == MIG_DISABLED:
            continue
        try:
            g = mig_geometry(str(model))
        except MigError as err:
            problems.append(Problem(f"node {name}: {err}", "nodes table", row=row, column="mig_layout"))
            continue
        configs = standard_configs(g).configs
        if mixed and layout in configs and layout != MIG_ENABLED:
            counts = {p: c for p, c in configs[layout][0].mig_devices if c > 0}
            placed = find_placement(g, counts) or ()
            product = dynamic_product(g.model) if repartition else mixed_product(g.model, str(layout))
            node_layouts[-1] = str(layout)
            starts: dict[str, int] = {}
            for instance in placed:
                starts[instance.profile] = starts.get(instance.profile, 0) | 1 << instance.start
            products[-1] = product
            flags[-1] = True
            geometry[product] = g
            memory[product] = int(gpu_mem)
            if not repartition:
                instances[product] = starts
            continue
        if mixed and layout == MIG_ENABLED:
            message = (
                f"node {name}: {layout} enables MIG with no instance; under mig_strategy: mixed the device "
                "plugin ignores such GPUs (use a config with instances, or all-disabled)"
            )
            problems.append(Problem(message, "nodes table", row=row, column="mig_layout"))
            continue
        if layout != MIG_ENABLED:
            if layout in configs:
                message = (
                    f"node {name}: {layout} makes its instances in advance; mig_strategy: dynamic starts "
                    f"from GPUs with MIG on and no instance ({MIG_ENABLED}) and makes one per pod"
                )
            else:
                message = (
                    f"node {name}: {layout!r} is not a mig-parted config of {g.model}; its configs: "
                    + (", ".join(configs))
                )
            problems.append(Problem(message, "nodes table", row=row, column="mig_layout"))
            continue
        product = dynamic_product(g.model)
        products[-1] = product
        flags[-1] = True
        geometry[product] = g
        memory[product] = int(gpu_mem)
    if problems:
        raise InputError(problems[:10], total=len(problems))
    base = {str(p): str(m) for p, m in zip(products, nodes["gpu_model"], strict=True) if m is not None}
    for product, g in geometry.items():
        base[product] = g.model
    relabelled = nodes.with_columns(pl.Series("gpu_model", products, dtype=pl.String()))
    flags_array = np.array(flags, dtype=bool)
    return DynamicMigNodes(
        relabelled,
        base,
        flags_array,
        geometry,
        memory,
        instances,
        mixed=mixed,
        layouts=tuple(node_layouts),
        repartition=repartition,
    )


def shape_code(profile: MigProfile, *, hami: bool, starts: int | None = None) -> int:
    """The engine's shape of ``profile`` (:mod:`gpureplay.engine.devices.mig`): starts, slices, start order.

    Examples
    --------
    >>> g = mig_geometry("A100-40GB")
    >>> code = shape_code(g.profile("3g.20gb"), hami=True)
    >>> (code & 0xFF, (code >> 8) & 15, (code >> 12) & 15, bool(code & L.MIG_HIGH_FIRST))
    (17, 4, 3, True)

    ``starts`` (a bit per start) restricts the placements: the instances of a
    mixed-strategy layout.
    """
    if starts is None:
        starts = sum(1 << s for s in profile.starts)
    high = hami and profile.name.startswith(("1g.", "3g."))
    return (
        starts
        | profile.memory_slices << L.MIG_SIZE_SHIFT
        | profile.compute_slices << L.MIG_COMPUTE_SHIFT
        | (L.MIG_HIGH_FIRST if high else 0)
    )


def dynamic_shapes(
    jobs: pl.DataFrame, dyn: DynamicMigNodes, models: tuple[str, ...], *, hami: bool
) -> tuple[np.ndarray, Int64Array]:
    """Per job, the products its pods may run on and the instance shape it gets on each.

    Returns
    -------
    masks
        Allowed-product bits per job (``models`` by code).
    shapes
        ``[job, model]``: the shape code on a dynamic product; ``MIG_WHOLE``
        for a fractional pod on a whole-GPU product (it takes one whole GPU);
        ``MIG_NONE`` otherwise (whole-GPU pods take wholly free GPUs, whose
        slices are all free, on every product).

    Notes
    -----
    A fractional pod (0 < gpu_milli < 1000) gets its ``mig_profile`` or the
    smallest profile that fits its demand on one GPU
    (:func:`~gpureplay.mig.devices.smallest_profile`); a product is allowed
    when that instance has the pod's GPU memory. A job naming a profile runs
    on dynamic products of models that have it only.

    Raises
    ------
    InputError
        For a profile no catalog model has, a media-extension profile, or a
        profile on a job that asks no GPU or whole GPUs (names the row and the
        column).
    """
    bit = {name: 1 << i for i, name in enumerate(models)}
    known_profiles = {p for model in mig_models() for p in mig_model_profiles(model)}
    masks = np.zeros(jobs.height, dtype=np.uint64)
    shapes = np.full((jobs.height, max(len(models), 1)), L.MIG_NONE, dtype=np.int64)
    problems: list[Problem] = []
    memo: dict[tuple[object, ...], tuple[int, Int64Array]] = {}
    for i, (row, job_id, allowed, profile, milli, gmem) in enumerate(_job_demands(jobs)):
        if profile is not None:
            problem = None
            if profile not in known_profiles:
                problem = f"{profile!r} is no MIG profile of any GPU model"
            elif profile.endswith("+me") and not dyn.mixed:
                problem = f"{profile}: media-extension instances are not made by dynamic MIG"
            elif not 0 < milli < L.WHOLE:
                problem = (
                    f"mig_profile {profile!r} on a job of gpu_milli {milli}: under mig_strategy: dynamic a "
                    "pod naming a profile asks one instance (0 < gpu_milli < 1000)"
                )
            if problem is not None:
                problems.append(Problem(f"job {job_id}: {problem}", "jobs table", row, "mig_profile"))
                continue
        if milli == 0:
            masks[i] = L.ALL_MODELS
            continue
        names = None if allowed is None else tuple(sorted(allowed))
        key = (names, profile, milli, gmem)
        hit = memo.get(key)
        if hit is None:
            mask = 0
            row_shapes = np.full(shapes.shape[1], L.MIG_NONE, dtype=np.int64)
            for code, product in enumerate(models):
                if allowed is not None and dyn.base[product] not in allowed:
                    continue
                g = dyn.geometry.get(product)
                if g is None:
                    if profile is None:
                        mask |= bit[product]
                        if milli < L.WHOLE:
                            row_shapes[code] = L.MIG_WHOLE
                    continue
                layout = dyn.instances.get(product)
                if milli >= L.WHOLE:
                    # Mixed: MIG GPUs offer nvidia.com/mig-* only, not nvidia.com/gpu.
                    if layout is None:
                        mask |= bit[product]
                    continue
                gpu_memory = dyn.gpu_memory[product]
                if profile is not None:
                    if profile not in {p.name for p in g.profiles}:
                        continue
                    chosen = g.profile(profile)
                else:
                    chosen = smallest_profile(g, milli, gmem or 0, gpu_memory)
                if gpu_memory * chosen.memory_slices // g.memory_slices < (gmem or 0):
                    continue
                if layout is not None and chosen.name not in layout:
                    continue
                mask |= bit[product]
                starts = None if layout is None else layout[chosen.name]
                row_shapes[code] = shape_code(chosen, hami=hami and layout is None, starts=starts)
            hit = (mask, row_shapes)
            memo[key] = hit
        masks[i] = hit[0]
        shapes[i] = hit[1]
    if problems:
        raise InputError(problems[:10], total=len(problems))
    return masks, shapes


#: The shape of a whole GPU's 8 slices (start 0): what a whole-GPU pod needs of a dynamic-MIG GPU.
WHOLE_GPU_SHAPE = 1 | 8 << L.MIG_SIZE_SHIFT | 7 << L.MIG_COMPUTE_SHIFT


def wanted_shapes(
    job_shapes: Int64Array,
    milli: np.ndarray,
    pods: np.ndarray,
    masks: np.ndarray,
    models: tuple[str, ...],
    dynamic: Collection[str],
) -> tuple[Int64Array, Int64Array]:
    """``classes.mig_wanted`` and ``classes.mig_weight``: per product, the distinct shapes the workload's
    pods get on it (-1 after) and how many pods ask each.

    A fractional pod asks its instance shape; a whole-GPU pod allowed on a
    dynamic product asks all 8 slices (:data:`WHOLE_GPU_SHAPE`). The counts
    are FGD's task popularity over slices (``mig_placement: fgd``).

    Examples
    --------
    ``dynamic`` names the dynamic products.

    >>> g = mig_geometry("A100-40GB")
    >>> two, three = (shape_code(g.profile(p), hami=False) for p in ("2g.10gb", "3g.20gb"))
    >>> shapes, weights = wanted_shapes(np.array([[two], [three], [two]]), np.array([250, 500, 250]),
    ...     np.array([1, 2, 3]), np.array([1, 1, 1], dtype=np.uint64), ("A100-40GB-MIG",), {"A100-40GB-MIG"})
    >>> [hex(v) for v in shapes[0]], weights[0].tolist()
    (['0x2215', '0x3411', '-0x1'], [4, 2, 0])
    """
    per_model: list[list[tuple[int, int]]] = []
    whole = milli >= L.WHOLE
    for code, product in enumerate(models):
        allowed = (masks & np.uint64(1 << code)) != 0
        column = job_shapes[:, code]
        counts = [(int(v), int(pods[allowed & (column == v)].sum())) for v in np.unique(column) if v >= 0]
        if product in dynamic and bool(np.any(whole & allowed)):
            counts.append((WHOLE_GPU_SHAPE, int(pods[whole & allowed].sum())))
        per_model.append(counts)
    width = max((len(s) for s in per_model), default=0) + 1
    shapes = np.full((max(len(models), 1), width), -1, dtype=np.int64)
    weights = np.zeros_like(shapes)
    for code, counts in enumerate(per_model):
        for i, (shape, count) in enumerate(counts):
            shapes[code, i] = shape
            weights[code, i] = count
    return shapes, weights


def check_mig_inputs(jobs: pl.DataFrame, nodes: pl.DataFrame, strategy: str) -> None:
    """Raise the MIG input errors a replay would raise, without compiling anything.

    A run checks its inputs before the kernels compile (a minute on a first
    run), so a bad ``mig_layout`` or ``mig_profile`` fails at once.

    Parameters
    ----------
    strategy
        ``scheduler.mig_strategy`` by name: ``none`` refuses MIG inputs,
        ``single`` checks them; another value is the policy's own config error
        (:func:`gpureplay.replay.compile.policy_params`), raised by the replay.
    """
    if strategy == "none":
        refuse_mig(jobs, nodes)
        return
    if strategy in ("dynamic", "mixed"):
        dyn = dynamic_mig_nodes(nodes, mixed=strategy == "mixed")
        models = tuple(sorted(dyn.nodes["gpu_model"].drop_nulls().unique().to_list()))
        dynamic_shapes(jobs, dyn, models, hami=True)
        return
    if strategy != "single":
        return
    mig = mig_nodes(nodes)
    models = tuple(sorted(mig.nodes["gpu_model"].drop_nulls().unique().to_list()))
    selector_masks(jobs, mig, models, L.MIG_DEMAND_ANY)
