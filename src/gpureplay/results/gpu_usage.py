"""What the GPUs did, not only what was allocated: busy GPU-hours, idle allocations and the alerts they
raise, energy and cost of one run (docs/results.md, "What the GPUs did").

Usage
-----
Each job's usage is the one idle-resource reclaim reads (:mod:`gpureplay.workload.utilization`, one source
of truth): ``gpu_util`` ``u`` (the trace's own ``gpu_util`` / ``source_gpu_util``, e.g. a DCGM scrape's
mean, else ``workload.utilization.gpu_active``) and ``idle_after`` ``a`` (seeded ``idle_share`` of the
jobs; ``inf``: never idle). An attempt of ``attempts.parquet`` holds its GPUs over ``[hold_start, end)``
and runs from ``start`` ``s`` (all pods placed); its usage is piecewise constant:

- 0 on ``[hold_start, s)`` (pods placed, the gang not whole yet: nothing runs);
- ``u`` on ``[s, b)`` with ``b = min(s + a, end)`` (the engine's idle model, docs/engine/preemption.md);
- 0 on ``[b, end)`` (the job went idle: a notebook left open);
- 0 on the whole hold of an attempt that never started (``start`` null).

Busy GPU-equivalents are usage x GPUs. GPU counts in ``attempts.parquet`` are devices (replicas, MIG
instances); here they are turned into physical GPUs by ``total_gpus / devices`` (exact for time-slicing /
MPS replicas, the mean instance size under MIG).

Idle alert
----------
The common idle-GPU rule of DCGM exporter dashboards, a Prometheus alerting rule on a GPU's utilisation
gauge with a ``for:`` clause ("under 20% busy for 30 minutes"): Prometheus fires an alert once its
expression has held at every evaluation for the ``for`` duration (Prometheus docs, "Alerting rules"). Here
one alert is one **allocation** (an attempt's GPUs, whose DCGM series carry the pod's labels) whose usage
stays ``< threshold`` over an unbroken interval longer than ``window``; it fires ``window`` after the
interval began and stays firing to its end. An attempt raises 0, 1 or 2 alerts: one for the idle prefix
(gang waiting) and one for the idle tail, or one for the whole hold when ``u < threshold``. Counted:
``idle_alerts`` (alerts) and ``idle_alert_gpu_hours`` (GPU-hours allocated while one was firing).

Power and energy
----------------
A linear utilisation power model: a GPU draws ``idle_w`` when it does nothing (allocated or not) and
``idle_w + u x (tdp_w - idle_w)`` at usage ``u`` (catalog values with sources in ``gpu_models.toml``).
Linear in ``u``, so the cluster's power is ``sum of idle_w over all GPUs + sum over busy GPU-equivalents of
(tdp_w - idle_w)`` of their model. Attempts do not record which nodes they ran on: a job allowed one model
of the cluster (``gpu_models``) uses that model's figures; a job allowed several takes their GPU-weighted
mean (``energy_estimated_share`` says how much busy time that covers). A cluster holding a model without
power figures gets no energy (null), as the catalog has nothing to give.

Cost
----
``cluster.prices``: the price of one node-hour by node type. ``cost`` = sum over nodes of price x the run
span in hours (nodes are there the whole run: the cluster does not change), and ``cost_per_useful_gpu_hour``
= cost / the useful GPU-hours of ``goodput`` (work the attempts kept x their GPUs). No prices: both null.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from gpureplay.cluster.catalog import alias_table, canonical_model, gpu_models
from gpureplay.errors import CONFIG, InputError, Problem

log = logging.getLogger(__name__)

#: Node type of a node without GPUs (``gpu_model`` null) in ``cluster.prices``.
CPU_ONLY = "cpu-only"

#: Default threshold and window of the idle alert (the "under 20% busy for 30 minutes" rule).
ALERT_THRESHOLD = 0.2
ALERT_WINDOW = 1800.0


@dataclass(frozen=True)
class IdleAlertRule:
    """The idle-GPU alert (module notes, "Idle alert").

    Parameters
    ----------
    threshold
        Usage (0..1] under which an allocation is idle (strictly under: ``DCGM_FI_DEV_GPU_UTIL < 20``).
    window
        Seconds the idle interval must last before the alert fires (a Prometheus rule's ``for:``).
    """

    threshold: float = ALERT_THRESHOLD
    window: float = ALERT_WINDOW


def alert_rule_problems(rule: IdleAlertRule, key: str = "idle_alert") -> list[Problem]:
    """Range problems of the alert rule, each naming its config key."""
    problems = []
    if not (0.0 < rule.threshold <= 1.0):
        problems.append(
            Problem(
                f"must be a share of busy in (0, 1] (0.2 = 20%), found {rule.threshold!r}",
                CONFIG,
                key=f"{key}.threshold",
            )
        )
    if not (math.isfinite(rule.window) and rule.window >= 0.0):
        problems.append(
            Problem(
                f"must be a finite number of seconds >= 0, found {rule.window!r}", CONFIG, key=f"{key}.window"
            )
        )
    return problems


# --- power ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterPower:
    """The power figures of a cluster's GPUs (module notes, "Power and energy").

    Attributes
    ----------
    idle_w
        Watts of every GPU of the cluster idle.
    models
        ``gpu_model``, ``gpus`` (in the cluster) and ``busy_w`` (``tdp_w - idle_w``: the watts one busy
        GPU-equivalent adds), one row per model with figures.
    missing
        Models of the cluster without power figures (then no energy is reported).
    """

    idle_w: float
    models: pl.DataFrame
    missing: tuple[str, ...]

    @property
    def known(self) -> bool:
        """True when every model of the cluster has power figures."""
        return not self.missing


def cluster_power(nodes: pl.DataFrame) -> ClusterPower:
    """The idle watts of ``nodes``' GPUs and each model's busy watts (catalog ``idle_w`` / ``tdp_w``)."""
    catalog = gpu_models()
    per_model = (
        nodes.filter(pl.col("gpu_model").is_not_null() & (pl.col("num_gpus") > 0))
        .group_by("gpu_model")
        .agg(pl.col("num_gpus").cast(pl.Int64).sum().alias("gpus"))
        .sort("gpu_model")
    )
    rows: list[dict[str, Any]] = []
    missing: list[str] = []
    idle = 0.0
    for model, gpus in per_model.iter_rows():
        entry = catalog.get(str(model))
        if entry is None or entry.idle_w is None or entry.tdp_w is None:
            missing.append(str(model))
            continue
        idle += gpus * entry.idle_w
        rows.append({"gpu_model": model, "gpus": gpus, "busy_w": entry.tdp_w - entry.idle_w})
    models = pl.DataFrame(rows, schema={"gpu_model": pl.String(), "gpus": pl.Int64(), "busy_w": pl.Float64()})
    return ClusterPower(idle, models, tuple(missing))


def job_busy_watts(jobs: pl.DataFrame, power: ClusterPower) -> pl.DataFrame:
    """Watts one busy GPU-equivalent of each job adds, and whether that is an estimate.

    A job's allowed models (``gpu_models``; null or none in the cluster: every model) that the cluster
    holds: one distinct ``busy_w`` among them is exact; several give their GPU-weighted mean
    (``estimated`` true), since ``attempts.parquet`` does not say which nodes an attempt used.

    Returns
    -------
    polars.DataFrame
        ``job_id``, ``busy_w``, ``estimated``.
    """
    models = power.models
    total = models.select((pl.col("gpus") * pl.col("busy_w")).sum() / pl.col("gpus").sum()).item()
    everywhere = models["busy_w"].n_unique() > 1
    if "gpu_models" not in jobs.columns or models.height == 0:
        return jobs.select(
            "job_id",
            pl.lit(total, pl.Float64).alias("busy_w"),
            pl.lit(everywhere).alias("estimated"),
        )
    aliases = alias_table()
    allowed = (
        jobs.select("job_id", "gpu_models")
        .explode("gpu_models")
        .drop_nulls("gpu_models")
        .with_columns(
            pl.col("gpu_models")
            .str.strip_chars()
            .str.to_lowercase()
            .replace_strict(aliases, default=None, return_dtype=pl.String)
            .alias("gpu_model")
        )
        .join(models, on="gpu_model", how="inner")
        .unique(["job_id", "gpu_model"])
        .group_by("job_id")
        .agg(
            ((pl.col("gpus") * pl.col("busy_w")).sum() / pl.col("gpus").sum()).alias("busy_w"),
            (pl.col("busy_w").n_unique() > 1).alias("estimated"),
        )
    )
    return (
        jobs.select("job_id")
        .join(allowed, on="job_id", how="left")
        .with_columns(
            pl.col("busy_w").fill_null(total),
            pl.col("estimated").fill_null(everywhere),
        )
    )


# --- prices --------------------------------------------------------------------------------------


def _node_types(nodes: pl.DataFrame) -> pl.DataFrame:
    """Each node's ``model`` (``cpu-only`` without GPUs) and ``sized`` type (``<model>x<num_gpus>``)."""
    model = (
        pl.when(pl.col("gpu_model").is_null() | (pl.col("num_gpus") <= 0))
        .then(pl.lit(CPU_ONLY))
        .otherwise(pl.col("gpu_model"))
    )
    return nodes.select(
        model.alias("model"),
        pl.when(model == CPU_ONLY)
        .then(pl.lit(CPU_ONLY))
        .otherwise(pl.format("{}x{}", pl.col("gpu_model"), pl.col("num_gpus")))
        .alias("sized"),
    )


def _price_key(name: str) -> tuple[str, str] | None:
    """``("model", canonical)`` or ``("sized", "<canonical>x<n>")`` for a price key, None when unknown."""
    if name == CPU_ONLY:
        return ("model", CPU_ONLY)
    sized = re.fullmatch(r"(.+)x(\d+)", name)
    if sized is not None:
        model = canonical_model(sized.group(1))
        if model is not None:
            return ("sized", f"{model}x{int(sized.group(2))}")
    model = canonical_model(name)
    return None if model is None else ("model", model)


def node_prices(
    nodes: pl.DataFrame, prices: Mapping[str, float], key: str = "cluster.prices"
) -> npt.NDArray[np.float64] | None:
    """The price of one node-hour of every node (node order), or None when no prices are given.

    A key names a node type: a GPU model (catalog name or alias: every node of that model), a model and a
    GPU count (``A100-80GBx8``: nodes of 8 of them; wins over the model alone), or ``cpu-only``.

    Raises
    ------
    InputError
        Naming ``cluster.prices.<type>``: a price that is not a finite number >= 0, a key that names no
        model, a type no node has or whose nodes another key prices (a price nothing reads), and, naming
        ``cluster.prices``, node types left without a price (a partial price list would undercount the
        cost).
    """
    if not prices:
        return None
    types = _node_types(nodes)
    problems: list[Problem] = []
    by_model: dict[str, float] = {}
    by_sized: dict[str, float] = {}
    keys: dict[tuple[str, str], str] = {}
    for name, value in prices.items():
        where = f"{key}.{name}"
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and value >= 0)
        ):
            problems.append(
                Problem(f"must be a price per node-hour >= 0, found {value!r}", CONFIG, key=where)
            )
            continue
        parsed = _price_key(str(name))
        if parsed is None:
            problems.append(
                Problem(
                    "names no node type: a GPU model of the catalog, MODELxGPUS (e.g. A100-80GBx8) "
                    f"or {CPU_ONLY}",
                    CONFIG,
                    key=where,
                )
            )
            continue
        keys[parsed] = where
        (by_model if parsed[0] == "model" else by_sized)[parsed[1]] = float(value)
    priced = types.with_columns(
        pl.col("sized").replace_strict(by_sized, default=None, return_dtype=pl.Float64).alias("by_sized"),
        pl.col("model").replace_strict(by_model, default=None, return_dtype=pl.Float64).alias("by_model"),
    )
    present_models = set(types["model"].to_list())
    present_sized = set(types["sized"].to_list())
    read_models = set(priced.filter(pl.col("by_sized").is_null())["model"].to_list())
    for (kind, name), where in keys.items():
        present = present_models if kind == "model" else present_sized
        if name not in present:
            shown = ", ".join(sorted(present_sized))
            problems.append(
                Problem(f"no node of this type in the cluster (its types: {shown})", CONFIG, key=where)
            )
        elif kind == "model" and name not in read_models:
            problems.append(
                Problem(
                    "every node of this model is priced by a MODELxGPUS key: this price is never read",
                    CONFIG,
                    key=where,
                )
            )
    price = pl.coalesce("by_sized", "by_model")
    unpriced = sorted(set(priced.filter(price.is_null())["sized"].to_list()))
    if unpriced and not problems:
        problems.append(
            Problem(
                f"gives no price for node type(s) {', '.join(unpriced)}; price every type or none",
                CONFIG,
                key=key,
            )
        )
    if problems:
        raise InputError(problems)
    return priced.select(price).to_series().to_numpy().astype(np.float64)


# --- per-attempt usage -----------------------------------------------------------------------------


def attempt_usage(
    attempts: pl.DataFrame, jobs: pl.DataFrame, gpus_per_device: float, busy_watts: pl.DataFrame | None
) -> pl.DataFrame:
    """Every attempt that held GPUs, with its usage pieces (module notes, "Usage").

    Parameters
    ----------
    attempts
        ``attempts.parquet`` of the run.
    jobs
        The replayed jobs with ``gpu_util`` and ``idle_after``
        (:func:`gpureplay.workload.utilization.assign_utilization`).
    gpus_per_device
        Physical GPUs per device (``total_gpus / devices``).
    busy_watts
        :func:`job_busy_watts`, or None without power figures.

    Returns
    -------
    polars.DataFrame
        ``job_id``, ``hold``, ``start`` (null: never ran), ``busy_end``, ``end``, ``gpus`` (physical),
        ``util``, ``busy_w`` and ``estimated`` (null without power figures).
    """
    usage = jobs.select("job_id", pl.col("gpu_util").cast(pl.Float64), pl.col("idle_after").cast(pl.Float64))
    if busy_watts is not None:
        usage = usage.join(busy_watts, on="job_id", how="left")
    else:
        usage = usage.with_columns(
            pl.lit(None, pl.Float64).alias("busy_w"), pl.lit(None, pl.Boolean).alias("estimated")
        )
    return (
        attempts.filter(pl.col("gpus") > 0)
        .select(
            "job_id", pl.col("hold_start").alias("hold"), "start", "end", pl.col("gpus") * gpus_per_device
        )
        .join(usage, on="job_id", how="left", validate="m:1")
        .with_columns(
            # A job the model gave no usage (none: gpu_util is filled for every GPU job) counts as busy.
            pl.col("gpu_util").fill_null(1.0).alias("util"),
            pl.min_horizontal(
                pl.col("start") + pl.col("idle_after").fill_null(math.inf), pl.col("end")
            ).alias("busy_end"),
        )
        .select("job_id", "hold", "start", "busy_end", "end", "gpus", "util", "busy_w", "estimated")
    )


def _busy_seconds() -> pl.Expr:
    """Seconds of an attempt at its usage level (0 when it never started)."""
    return pl.max_horizontal(pl.lit(0.0), pl.col("busy_end") - pl.col("start")).fill_null(0.0)


def idle_alerts(usage: pl.DataFrame, rule: IdleAlertRule) -> tuple[int, float]:
    """``(alerts, GPU-hours allocated while one fired)`` of :func:`attempt_usage` (module notes).

    Examples
    --------
    A 2-GPU notebook busy at 0.5 for 10 minutes, then idle to the end of its hour, raises one alert that
    fires for the last 20 minutes:

    >>> one = pl.DataFrame({"hold": [0.0], "start": [0.0], "busy_end": [600.0], "end": [3600.0],
    ...                     "gpus": [2.0], "util": [0.5]})
    >>> idle_alerts(one, IdleAlertRule())
    (1, 0.6666666666666666)
    """
    whole = pl.col("end") - pl.col("hold")
    pre = (pl.col("start") - pl.col("hold")).fill_null(whole)
    post = (pl.col("end") - pl.col("busy_end")).fill_null(0.0)
    # One unbroken idle interval when the level itself is under the threshold or nothing ran between.
    merged = (pl.col("util") < rule.threshold) | (_busy_seconds() <= 0.0)
    runs = usage.select(
        "gpus",
        pl.when(merged).then(whole).otherwise(pre).alias("first"),
        pl.when(merged).then(0.0).otherwise(post).alias("second"),
    )
    alerts = 0
    firing = 0.0
    for column in ("first", "second"):
        # Fires `window` after the interval began, so only an interval longer than the window fires.
        over = runs.filter(pl.col(column) > rule.window)
        alerts += over.height
        firing += float(over.select(((pl.col(column) - rule.window) * pl.col("gpus")).sum()).item() or 0.0)
    return alerts, firing / 3600.0


def busy_at(
    usage: pl.DataFrame, times: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Busy GPU-equivalents and the watts they add over idle at each of ``times`` (exact, by a sweep).

    The busy level is a sum of steps (``+u x gpus`` at ``start``, ``-u x gpus`` at ``busy_end``): its
    value at ``t`` is the cumulative sum of the steps at or before ``t`` over the boundaries sorted once
    (O(attempts log attempts), no per-second array). Watts are 0 where ``busy_w`` is null.
    """
    ran = usage.filter(pl.col("start").is_not_null() & (pl.col("busy_end") > pl.col("start")))
    level = (ran["util"] * ran["gpus"]).to_numpy()
    watts = (ran["util"] * ran["gpus"] * ran["busy_w"].fill_null(0.0)).to_numpy()
    edges = np.concatenate((ran["start"].to_numpy(), ran["busy_end"].to_numpy()))
    order = np.argsort(edges, kind="stable")
    edges = edges[order]
    steps = np.concatenate((level, -level))[order]
    watt_steps = np.concatenate((watts, -watts))[order]
    at = np.asarray(times, dtype=np.float64)
    index = np.searchsorted(edges, at, side="right") - 1
    busy = np.where(index >= 0, np.cumsum(steps)[np.maximum(index, 0)] if steps.size else 0.0, 0.0)
    added = np.where(index >= 0, np.cumsum(watt_steps)[np.maximum(index, 0)] if steps.size else 0.0, 0.0)
    # Summing +x and -x leaves rounding residue: a level that is zero reads as zero, never negative.
    return np.maximum(busy, 0.0), np.maximum(added, 0.0)


# --- the run's figures -----------------------------------------------------------------------------


#: Summary columns this module fills (declared in :data:`gpureplay.results.schemas.SUMMARY_METRICS_SCHEMA`).
USAGE_COLUMNS: tuple[str, ...] = (
    "busy_gpu_hours",
    "gpu_busy_rate",
    "idle_allocated_gpu_hours",
    "idle_alerts",
    "idle_alert_gpu_hours",
    "energy_kwh",
    "power_mean_w",
    "energy_estimated_share",
    "cost",
    "cost_per_useful_gpu_hour",
)


def usage_figures(
    usage: pl.DataFrame,
    attempts: pl.DataFrame,
    *,
    span_seconds: float,
    total_gpus: int,
    gpus_per_device: float,
    rule: IdleAlertRule,
    power: ClusterPower,
    prices: npt.NDArray[np.float64] | None,
) -> dict[str, Any]:
    """The summary's GPU usage, alert, energy and cost columns (:data:`USAGE_COLUMNS`; module notes).

    Parameters
    ----------
    usage
        :func:`attempt_usage` of the run.
    attempts
        ``attempts.parquet`` of the run (allocated GPU-seconds, pod by pod, and the work kept).
    span_seconds
        Length of the run span (first arrival to the end of the run).
    total_gpus
        Physical GPUs of the cluster.
    gpus_per_device
        Physical GPUs per device (``total_gpus / devices``).
    rule
        The idle alert.
    power
        :func:`cluster_power` of the cluster.
    prices
        :func:`node_prices` (one per node), or None without prices.
    """
    busy_seconds = float(
        usage.select((pl.col("util") * pl.col("gpus") * _busy_seconds()).sum()).item() or 0.0
    )
    allocated_seconds = float(attempts["gpu_seconds"].sum() or 0.0) * gpus_per_device
    alerts, alert_hours = idle_alerts(usage, rule)
    energy = share = None
    if power.known and span_seconds > 0:
        added = usage.select(
            (pl.col("util") * pl.col("gpus") * _busy_seconds() * pl.col("busy_w")).sum()
        ).item()
        joules = power.idle_w * span_seconds + float(added or 0.0)
        energy = joules / 3.6e6
        estimated = usage.filter(pl.col("estimated")).select(
            (pl.col("util") * pl.col("gpus") * _busy_seconds()).sum()
        )
        share = float(estimated.item() or 0.0) / busy_seconds if busy_seconds > 0 else 0.0
    cost = per_useful = None
    if prices is not None:
        cost = float(math.fsum(prices)) * span_seconds / 3600.0
        kept = attempts.select(((pl.col("progress") - pl.col("work_lost")) * pl.col("gpus")).sum()).item()
        useful_hours = float(kept or 0.0) * gpus_per_device / 3600.0
        per_useful = cost / useful_hours if useful_hours > 0 else None
    rate = busy_seconds / (total_gpus * span_seconds) if total_gpus > 0 and span_seconds > 0 else None
    return {
        "busy_gpu_hours": busy_seconds / 3600.0,
        "gpu_busy_rate": rate,
        # Held pod by pod (attempts' gpu_seconds) less what worked: the GPU-hours allocated but idle.
        "idle_allocated_gpu_hours": max(0.0, allocated_seconds - busy_seconds) / 3600.0,
        "idle_alerts": alerts,
        "idle_alert_gpu_hours": alert_hours,
        "energy_kwh": energy,
        "power_mean_w": None if energy is None else energy * 3.6e6 / span_seconds,
        "energy_estimated_share": share,
        "cost": cost,
        "cost_per_useful_gpu_hour": per_useful,
    }


@dataclass(frozen=True)
class RunUsage:
    """What the GPUs did in one run: timeline columns (one value per sample) and summary columns."""

    timeline: dict[str, npt.NDArray[np.float64]]
    figures: dict[str, Any]


def run_usage(
    jobs: pl.DataFrame,
    attempts: pl.DataFrame,
    nodes: pl.DataFrame,
    *,
    times: npt.ArrayLike,
    total_gpus: int,
    devices: int,
    span_seconds: float,
    rule: IdleAlertRule,
    prices: Mapping[str, float],
) -> RunUsage:
    """A run's timeline columns (``busy_gpus``, ``busy_fraction``, ``power_w``) and :func:`usage_figures`.

    Parameters
    ----------
    jobs
        The replayed jobs with their usage (``gpu_util``, ``idle_after``).
    attempts
        ``attempts.parquet`` of the run.
    nodes
        The cluster's node table.
    times
        The timeline's sample times.
    total_gpus, devices
        Physical GPUs and ``nvidia.com/gpu`` devices of the cluster.
    span_seconds
        Length of the run span.
    rule
        The idle alert.
    prices
        ``cluster.prices`` (empty: none).

    Raises
    ------
    InputError
        On a bad price (:func:`node_prices`).
    """
    power = cluster_power(nodes)
    if power.missing:
        log.info(
            "energy: not reported: the catalog has no idle / TDP power for %s (gpu_models.toml)",
            ", ".join(power.missing),
        )
    per_device = total_gpus / devices if devices > 0 else 1.0
    usage = attempt_usage(attempts, jobs, per_device, job_busy_watts(jobs, power) if power.known else None)
    busy, added = busy_at(usage, times)
    watts = power.idle_w + added if power.known else np.full(busy.shape, np.nan)
    timeline = {
        "busy_gpus": busy,
        "busy_fraction": busy / total_gpus if total_gpus > 0 else np.full(busy.shape, np.nan),
        "power_w": watts,
    }
    figures = usage_figures(
        usage,
        attempts,
        span_seconds=span_seconds,
        total_gpus=total_gpus,
        gpus_per_device=per_device,
        rule=rule,
        power=power,
        prices=node_prices(nodes, prices),
    )
    return RunUsage(timeline, figures)


def empty_figures() -> dict[str, Any]:
    """The usage columns of a run without usage (a summary built without it): all null."""
    return dict.fromkeys(USAGE_COLUMNS)


__all__ = [
    "ALERT_THRESHOLD",
    "ALERT_WINDOW",
    "CPU_ONLY",
    "USAGE_COLUMNS",
    "ClusterPower",
    "IdleAlertRule",
    "RunUsage",
    "alert_rule_problems",
    "attempt_usage",
    "busy_at",
    "cluster_power",
    "empty_figures",
    "idle_alerts",
    "job_busy_watts",
    "node_prices",
    "run_usage",
    "usage_figures",
]
