"""Trace config (the ``trace`` group) → adapter call → :class:`AdaptedTrace`.

One dispatch table keyed by the config's ``kind``; adapters are imported on
use so ``gpureplay --help`` stays fast. A generated trace whose arrival rate is
set by the cluster it runs on (``synthetic``: its ``load`` is offered load) is
built by a loader that also takes the cluster's GPU count (:data:`SIZED_LOADERS`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpureplay.errors import InputError
from gpureplay.traces.adapted import AdaptedTrace


def _philly(cfg: Mapping[str, Any], seed: int) -> AdaptedTrace:
    from gpureplay.traces.philly import load_philly

    return load_philly(cfg["path"], max_gpus_per_pod=cfg["max_gpus_per_pod"])


def _philly_raw(cfg: Mapping[str, Any], seed: int) -> AdaptedTrace:
    from gpureplay.traces.philly_raw import load_philly_raw

    return load_philly_raw(cfg["path"])


def _itp(cfg: Mapping[str, Any], seed: int) -> AdaptedTrace:
    from gpureplay.traces.itp import load_itp

    return load_itp(
        cfg["cluster_id"],
        variant=_enum_name(cfg["variant"]),
        root=cfg["root"],
        max_gpus_per_pod=cfg["max_gpus_per_pod"],
    )


def _openb(cfg: Mapping[str, Any], seed: int) -> AdaptedTrace:
    from gpureplay.traces.openb import load_openb

    return load_openb(
        cfg["path"],
        timing=_enum_name(cfg["timing"]),
        pending=_enum_name(cfg["pending"]),
        packing_duration=cfg["packing_duration"],
    )


def _pai2020(cfg: Mapping[str, Any], seed: int) -> AdaptedTrace:
    from gpureplay.traces.pai2020 import load_pai2020

    return load_pai2020(cfg["job_table"], cfg["task_table"], cfg["instance_table"])


def _helios(cfg: Mapping[str, Any], seed: int) -> AdaptedTrace:
    from gpureplay.traces.helios import load_helios

    return load_helios(cfg["path"], gpu_only=cfg["gpu_only"])


def _csv(cfg: Mapping[str, Any], seed: int) -> AdaptedTrace:
    from gpureplay.traces.generic import load_table

    return load_table(
        cfg["path"],
        columns=dict(cfg["columns"]),
        defaults=dict(cfg["column_defaults"]),
        time_unit=_enum_name(cfg["time_unit"]),
        datetime_format=cfg["datetime_format"],
        model_separator=cfg["model_separator"],
    )


def _kubectl(cfg: Mapping[str, Any], seed: int) -> AdaptedTrace:
    from gpureplay.traces.kubectl import load_kubectl

    return load_kubectl(
        cfg["path"],
        running=_enum_name(cfg["running"]),
        observed_at=cfg["observed_at"],
        dcgm=cfg["dcgm"],
        max_file_mib=cfg["max_file_mib"],
    )


def _synthetic(cfg: Mapping[str, Any], seed: int, cluster_gpus: int) -> AdaptedTrace:
    from gpureplay.workload.synthetic import synthetic_jobs

    if cfg["n_jobs"] <= 0:
        raise InputError.single("must be > 0", "config", key="trace.n_jobs")
    jobs = synthetic_jobs(cfg["n_jobs"], seed, load=cfg["load"], gpus=cluster_gpus)
    return AdaptedTrace(
        jobs, source=f"synthetic(n_jobs={cfg['n_jobs']}, seed={seed})", sha256="", changes=Counter()
    )


LOADERS: dict[str, Callable[[Mapping[str, Any], int], AdaptedTrace]] = {
    "philly": _philly,
    "philly_raw": _philly_raw,
    "itp": _itp,
    "openb": _openb,
    "pai2020": _pai2020,
    "helios": _helios,
    "csv": _csv,
    "kubectl": _kubectl,
}

#: Generated traces whose arrival rate is set for the cluster they run on: their loader also takes the
#: cluster's GPU count (``synthetic``: ``trace.load`` is offered load on it).
SIZED_LOADERS: dict[str, Callable[[Mapping[str, Any], int, int], AdaptedTrace]] = {
    "synthetic": _synthetic,
}


def needs_cluster(cfg: Mapping[str, Any]) -> bool:
    """Whether the trace a ``trace`` config describes is generated for its cluster (pass ``cluster_gpus``).

    Examples
    --------
    >>> needs_cluster({"kind": "synthetic"}), needs_cluster({"kind": "philly"})
    (True, False)
    """
    return str(cfg.get("kind")) in SIZED_LOADERS


#: Trace kinds whose files are not bundled but fetched (names of traces/manifest.toml entries).
FETCHED = frozenset({"philly_raw", "pai2020", "helios"})


#: Names in the trace manifest (``gpureplay trace list``) that are read by a trace config of another
#: name: the overrides that select them.
MANIFEST_ALIASES: dict[str, tuple[str, ...]] = {
    "itp_raw": ("trace=itp", "trace.variant=raw"),
    "itp_elasticflow": ("trace=itp", "trace.variant=elasticflow"),
}

_NOT_JOBS = {
    "nodes": "a node or topology list, not jobs (input for a cluster: `gpureplay run --help`, group cluster)",
    "none": "statistics only: there is nothing to replay",
}


def trace_selection(name: str, config_names: Sequence[str]) -> tuple[str, ...] | None:
    """The overrides that select the trace called ``name``, or None when no trace has that name.

    Parameters
    ----------
    name
        A trace config name (``philly``, ``itp``, ...) or a name ``gpureplay trace
        list`` shows (``itp_raw``, ``itp_elasticflow``, ...).
    config_names
        The options of the ``trace`` config group.

    Raises
    ------
    InputError
        When ``name`` is in the manifest but is not a job trace (a node list,
        or statistics only).

    Examples
    --------
    >>> trace_selection("philly", ["philly", "itp"])
    ('trace=philly',)
    >>> trace_selection("itp_elasticflow", ["philly", "itp"])
    ('trace=itp', 'trace.variant=elasticflow')
    >>> trace_selection("jobs.csv", ["philly", "itp"]) is None
    True
    """
    if name in config_names:
        return (f"trace={name}",)
    if name in MANIFEST_ALIASES:
        return MANIFEST_ALIASES[name]
    from gpureplay.traces.manifest import load_manifest

    try:
        entry = load_manifest().get(name)
    except FileNotFoundError:
        return None
    if entry is None:
        return None
    if entry.format in _NOT_JOBS:
        raise InputError.single(
            f"{_NOT_JOBS[entry.format]} (traces/manifest.toml says format = {entry.format!r})",
            f"trace {name!r}",
        )
    if entry.format in config_names:
        return (f"trace={entry.format}",)
    return None


def _enum_name(value: Any) -> Any:
    """Config enums arrive as Enum members (structured) or plain strings (dict configs)."""
    return getattr(value, "name", value)


def load_trace(cfg: Mapping[str, Any], seed: int = 0, *, cluster_gpus: int | None = None) -> AdaptedTrace:
    """Load the trace a ``trace`` config describes.

    Parameters
    ----------
    cfg
        The resolved ``trace`` config.
    seed
        The run's seed (generated traces draw from it).
    cluster_gpus
        GPUs of the cluster the trace is replayed on, needed by the traces generated for it
        (:func:`needs_cluster`) and not read by any other.

    Raises
    ------
    InputError
        For an unknown ``trace.kind`` or any problem in the trace files.
    ValueError
        When a trace generated for its cluster is loaded without ``cluster_gpus``.
    """
    kind = cfg.get("kind")
    sized = SIZED_LOADERS.get(str(kind))
    if sized is not None:
        if cluster_gpus is None:
            raise ValueError(f"a {kind} trace is generated for its cluster: pass cluster_gpus")
        return sized(cfg, seed, cluster_gpus)
    loader = LOADERS.get(str(kind))
    if loader is None:
        known = ", ".join(sorted({*LOADERS, *SIZED_LOADERS}))
        raise InputError.single(f"unknown trace kind {kind!r}; known: {known}", "config", key="trace.kind")
    try:
        return loader(cfg, seed)
    except FileNotFoundError as err:
        if kind in FETCHED:
            raise FileNotFoundError(
                f"{err}\nThe {kind} trace is too large to bundle: `gpureplay trace fetch {kind}` "
                "downloads it (needs network access), or place the files there by hand."
            ) from err
        raise
