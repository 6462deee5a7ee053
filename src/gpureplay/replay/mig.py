"""MIG in the compile step: the devices of MIG nodes and which of them each job may take.

Under NVIDIA k8s-device-plugin's ``single`` strategy (``scheduler.mig_strategy:
single``; scheduler-semantics.md §1.6) a node with a ``mig_layout`` advertises
its MIG instances as ``nvidia.com/gpu`` and carries the product label
``<model>-MIG-<profile>`` (:mod:`gpureplay.mig.devices`). The engine then sees
devices, as with time-slicing replicas: device ``p * I + i`` is instance ``i``
of GPU ``p`` (``I`` instances per GPU), each with the instance's memory and
its share of the SMs (``N_MIG_COMPUTE / N_MIG_SLICES``, the rate rule of
:func:`gpureplay.engine.sharing.mig_rate`). Products play the part of GPU
models for node selection: a job's ``gpu_models`` names base models, its
``mig_profile`` (or, with ``mig_demand: smallest_fit``, the profile its demand
maps to) selects the MIG products of that profile. docs/engine-semantics.md,
"MIG".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

import gpureplay.engine.layout as L
from gpureplay.cluster.catalog import mig_model_profiles
from gpureplay.engine.layout import Int64Array
from gpureplay.errors import InputError, Problem
from gpureplay.mig.devices import MIG_DISABLED, MigDevices, single_strategy_devices, smallest_profile
from gpureplay.mig.geometry import MigError, mig_geometry, mig_models

__all__ = [
    "MigFigures",
    "MigNodes",
    "check_mig_inputs",
    "mig_figures",
    "mig_nodes",
    "refuse_mig",
    "selector_masks",
    "split_mig_devices",
]

#: Shown with refused MIG inputs when ``scheduler.mig_strategy`` is none.
_HOW = "set scheduler.mig_strategy: single to model MIG instances"


def _rows(frame: pl.DataFrame) -> pl.Series:
    """The raw file's row of each table row when the adapter kept it (``source_row``), else 1-based."""
    if "source_row" in frame.columns:
        return frame["source_row"]
    return pl.Series("row", range(1, frame.height + 1))


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
    profiles = jobs["mig_profile"] if "mig_profile" in jobs.columns else pl.Series([None] * jobs.height)
    out = np.zeros(jobs.height, dtype=np.uint64)
    problems: list[Problem] = []
    memo: dict[tuple[object, ...], int] = {}
    for i, (row, job_id, allowed, profile, milli, gmem) in enumerate(
        zip(
            _rows(jobs),
            jobs["job_id"],
            jobs["gpu_models"],
            profiles,
            jobs["gpu_milli"],
            jobs["gpu_mem_mib"],
            strict=True,
        )
    ):
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
    """The static MIG figures of a replay (docs/engine-semantics.md, "MIG instances", Results).

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
    if strategy != "single":
        return
    mig = mig_nodes(nodes)
    models = tuple(sorted(mig.nodes["gpu_model"].drop_nulls().unique().to_list()))
    selector_masks(jobs, mig, models, L.MIG_DEMAND_ANY)
