"""What a MIG-partitioned node advertises to the scheduler under the device plugin's ``single`` strategy.

A node's ``mig_layout`` names one of mig-parted's configs for its GPU model
(:func:`gpureplay.mig.parted.standard_configs`: ``all-1g.5gb``, ``all-3g.20gb``,
``all-disabled``, ...), applied to every GPU of the node as the GPU Operator
applies the ``nvidia.com/mig.config`` label. Under NVIDIA k8s-device-plugin's
``single`` strategy (docs/systems.md, "NVIDIA k8s-device-plugin") every GPU of a MIG node must
hold instances of one identical profile; each instance is one
``nvidia.com/gpu`` and GPU feature discovery labels the node's product
``<model>-MIG-<profile>``. The engine and the reference simulator both read
the node's devices from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpureplay.mig.geometry import MigError, MigGeometry, MigProfile, mig_geometry
from gpureplay.mig.parted import find_placement, standard_configs

__all__ = [
    "MIG_DISABLED",
    "MigDevices",
    "mig_product",
    "single_strategy_devices",
    "smallest_profile",
]

#: The mig-parted config that turns MIG off: the node keeps its whole GPUs.
MIG_DISABLED = "all-disabled"


@dataclass(frozen=True)
class MigDevices:
    """The MIG instances every GPU of a node holds under the ``single`` strategy.

    Parameters
    ----------
    model
        Canonical catalog model.
    profile
        The one profile of the node's instances.
    per_gpu
        Instances on each GPU (each one ``nvidia.com/gpu``).
    memory_mib
        Memory of one instance: the GPU's memory times the profile's share of the
        memory slices (the driver reports slightly less, e.g. 4864 MiB for
        ``1g.5gb``; the slice share is what the profile name rounds).
    compute_slices, gpu_compute_slices
        The instance's compute slices and the GPU's (7 on A100/H100/H200): an
        instance has ``compute_slices / gpu_compute_slices`` of the GPU's SMs.
    """

    model: str
    profile: str
    per_gpu: int
    memory_mib: int
    compute_slices: int
    gpu_compute_slices: int

    @property
    def product(self) -> str:
        """GPU feature discovery's product label of the node, e.g. ``A100-40GB-MIG-1g.5gb``."""
        return mig_product(self.model, self.profile)


def mig_product(model: str, profile: str) -> str:
    """GPU feature discovery's product label of a ``single``-strategy MIG node: ``<model>-MIG-<profile>``."""
    return f"{model}-MIG-{profile}"


def single_strategy_devices(model: str, layout: str, gpu_memory_mib: int) -> MigDevices | None:
    """The devices a node of ``model`` GPUs configured with mig-parted config ``layout`` advertises.

    Parameters
    ----------
    model
        The node's GPU model (catalog name or alias).
    layout
        A mig-parted config name of the model's standard configs.
    gpu_memory_mib
        The node's memory of one GPU.

    Returns
    -------
    MigDevices or None
        ``None`` for ``all-disabled`` (whole GPUs).

    Raises
    ------
    MigError
        When the model has no MIG, the config is unknown for it, or the config
        breaks the ``single`` strategy: no instance (``all-enabled``: "none may
        be empty") or more than one profile (``all-balanced``: the device
        plugin's "more than one MIG device type present on node").

    Examples
    --------
    >>> d = single_strategy_devices("A100-40GB", "all-3g.20gb", 40960)
    >>> (d.product, d.per_gpu, d.memory_mib, d.compute_slices, d.gpu_compute_slices)
    ('A100-40GB-MIG-3g.20gb', 2, 20480, 3, 7)
    """
    geometry = mig_geometry(model)
    configs = standard_configs(geometry).configs
    entries = configs.get(layout)
    if entries is None:
        known = ", ".join(configs)
        raise MigError(f"{layout!r} is not a mig-parted config of {geometry.model}; its configs: {known}")
    if layout == MIG_DISABLED:
        return None
    counts = dict(entries[0].mig_devices)
    if not counts:
        raise MigError(
            f"{layout} enables MIG with no instance; the single strategy needs every GPU to hold some"
        )
    if len(counts) > 1:
        raise MigError(
            f"{layout} mixes profiles ({', '.join(counts)}); the single strategy takes one profile per node "
            "(device plugin: more than one MIG device type present on node)"
        )
    ((name, per_gpu),) = counts.items()
    if find_placement(geometry, counts) is None:  # the standard configs always fit; kept as a guard
        raise MigError(f"{layout}: {per_gpu} x {name} does not fit on one {geometry.model}")
    profile = geometry.profile(name)
    return MigDevices(
        geometry.model,
        profile.name,
        per_gpu,
        gpu_memory_mib * profile.memory_slices // geometry.memory_slices,
        profile.compute_slices,
        geometry.compute_slices,
    )


def smallest_profile(
    geometry: MigGeometry, gpu_milli: int, gpu_mem_mib: int, gpu_memory_mib: int
) -> MigProfile:
    """The smallest profile of ``geometry`` (media extensions aside) that fits a pod's demand on one GPU.

    A profile fits when its compute share ``compute_slices / gpu_compute_slices``
    is at least ``gpu_milli / 1000`` (a whole-GPU pod needs all the slices) and
    its memory (the slice share of ``gpu_memory_mib``) at least ``gpu_mem_mib``.
    Smallest: fewest compute slices, then fewest memory slices; the full-GPU
    profile fits every demand of one GPU.

    Examples
    --------
    >>> g = mig_geometry("A100-40GB")
    >>> [smallest_profile(g, m, 0, 40960).name for m in (100, 143, 300, 500, 1000)]
    ['1g.5gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb']
    >>> smallest_profile(g, 100, 8000, 40960).name
    '1g.10gb'
    """
    need = min(gpu_milli, 1000)
    plain = (p for p in geometry.profiles if not p.media_extensions)
    candidates = sorted(plain, key=lambda p: (p.compute_slices, p.memory_slices))
    for profile in candidates:
        memory = gpu_memory_mib * profile.memory_slices // geometry.memory_slices
        if profile.compute_slices * 1000 >= need * geometry.compute_slices and memory >= gpu_mem_mib:
            return profile
    return candidates[-1]
