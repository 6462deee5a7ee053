"""``gpureplay warmup``: compile the kernels of every preset, or of a sweep's points, once, on all cores.

A replay's first run compiles the kernels its policy needs into numba's on-disk cache
(:mod:`gpureplay.engine.jit.config`); later runs, and every process that shares that cache folder
(``$NUMBA_CACHE_DIR``: the points of a sweep, pytest workers, Ray or Slurm workers on a shared
filesystem), load them in about a second. Warming up before a sweep moves that cost out of the points and
spreads it over the machine's cores: one process per distinct policy, the queue models (the longest
compiles) first; processes whose policies share a compiled variant wait for the one compiling it
(:mod:`gpureplay.engine.jit.compile_once`) and load it.

The policies come from the same Hydra overrides ``gpureplay run -m`` takes, so that
``gpureplay warmup sweep=philly-queues`` readies exactly what ``gpureplay run -m sweep=philly-queues``
will replay; with no override, every preset of ``conf/scheduler/``.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from omegaconf import OmegaConf

from gpureplay.errors import InputError, Problem
from gpureplay.schedulers.policy import Policy, QueueModel

__all__ = ["Warmed", "default_workers", "sweep_policies", "warm_up_policies"]

log = logging.getLogger(__name__)

#: Peak resident memory of one process compiling the largest variant (a queue model), measured with
#: ``farm-bench`` on ``scheduler=kai``: about 0.9 GB; rounded up so a machine is never oversubscribed.
WORKER_MEMORY_BYTES = 1_500_000_000


@dataclass(frozen=True)
class Warmed:
    """One policy readied: the sweep points that replay it and how long readying it took."""

    points: tuple[str, ...]
    seconds: float | None
    error: str | None = None


def default_workers(available_bytes: int | None = None, cores: int | None = None) -> int:
    """One worker per core, no more than the free memory holds (:data:`WORKER_MEMORY_BYTES` each).

    Examples
    --------
    >>> default_workers(available_bytes=24 * 10**9, cores=2)
    2
    >>> default_workers(available_bytes=2 * 10**9, cores=16)
    1
    """
    cores = cores if cores is not None else len(os.sched_getaffinity(0))
    if available_bytes is None:
        available_bytes = _available_memory()
    return max(1, min(cores, available_bytes // WORKER_MEMORY_BYTES))


def _available_memory() -> int:
    # MemAvailable (Linux): what can be allocated without swapping; elsewhere, no memory limit is applied.
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


def _points(overrides: Sequence[str]) -> list[list[str]]:
    """The override lists of every point ``gpureplay run -m OVERRIDES`` would run, as Hydra expands them.

    The sweep's own ``hydra.sweeper.params`` (a ``sweep=`` config) come first and the command line's
    overrides replace them key by key, as Hydra's basic sweeper does; a command line that names no
    scheduler sweeps every preset.
    """
    from hydra import compose, initialize_config_module
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from gpureplay.config import register_configs

    parser = OverridesParser.create()
    given = parser.parse_overrides(list(overrides))
    register_configs()
    with initialize_config_module(config_module="gpureplay.conf", version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[str(o.input_line) for o in given if not o.is_sweep_override()],
            return_hydra_config=True,
        )
    declared = cfg.hydra.sweeper.params
    params = {} if declared is None else OmegaConf.to_container(declared)
    assert isinstance(params, dict)
    lines = [f"{k!s}={v!s}" for k, v in params.items()] + list(overrides)
    if "scheduler" not in params and not any(o.get_key_element() == "scheduler" for o in given):
        from gpureplay.schedulers.presets import preset_names

        lines.append("scheduler=" + ",".join(preset_names()))
    (grid,) = BasicSweeper.split_arguments(parser.parse_overrides(lines), None)
    return grid


def sweep_policies(overrides: Sequence[str]) -> list[tuple[Policy, tuple[str, ...]]]:
    """The distinct policies of a sweep's points, each with the points (their sweep overrides) that use it.

    Raises
    ------
    gpureplay.errors.InputError
        When a point's config does not compose or is refused (:func:`gpureplay.config.compose_config`),
        naming the point; every point is checked before any is compiled.
    """
    from hydra.errors import HydraException

    from gpureplay.config import compose_config
    from gpureplay.config_check import describe_config_error

    by_policy: dict[str, tuple[Policy, list[str]]] = {}
    problems: list[Problem] = []
    try:
        points = _points(overrides)
    except HydraException as err:
        raise InputError([Problem(describe_config_error(err) or str(err))]) from None
    for point in points:
        shown = " ".join(point) or "(no overrides)"
        try:
            cfg = compose_config(point)
        except HydraException as err:
            problems.append(Problem(f"{describe_config_error(err) or err} (point: {shown})"))
            continue
        except InputError as err:
            problems.extend(
                Problem(f"{p.message} (point: {shown})", p.source, p.row, p.column, p.key)
                for p in err.problems
            )
            continue
        policy = OmegaConf.to_object(cfg.scheduler)
        assert isinstance(policy, Policy)
        key = repr(policy)  # Policy is a mutable dataclass: equal by value, not hashable
        by_policy.setdefault(key, (policy, []))[1].append(shown)
    if problems:
        raise InputError(problems)
    return [(policy, tuple(points)) for policy, points in by_policy.values()]


def _longest_first(policy: Policy) -> int:
    # A queue model compiles three to four times longer than a replay without one (replay/progress.py).
    return 0 if policy.queues is not QueueModel.none else 1


def _warm(policy: Policy) -> float:
    """Ready ``policy``'s kernels in this (worker) process; the seconds it took."""
    from gpureplay.replay.simulate import warm_up

    started = time.perf_counter()
    warm_up(policy)
    return time.perf_counter() - started


def warm_up_policies(
    policies: Sequence[tuple[Policy, tuple[str, ...]]],
    workers: int,
    on_done: Callable[[Warmed], None] | None = None,
) -> list[Warmed]:
    """Ready every policy's kernels, ``workers`` processes at a time, each policy in a fresh process.

    A fresh process per policy (``max_tasks_per_child=1``) keeps one policy's compile from being
    timed as another's cache load, and frees each compiler's memory when it ends. The workers share
    ``$NUMBA_CACHE_DIR`` with this process and with every later run; numba's cache writes are made
    safe across processes by :func:`gpureplay.engine.jit.cache_writes.serialize_cache_writes`.
    """
    ordered = sorted(policies, key=lambda item: _longest_first(item[0]))
    done: list[Warmed] = []
    context = multiprocessing.get_context("spawn")  # no fork of a process holding polars' threads
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, max_tasks_per_child=1) as pool:
        futures: dict[Future[float], tuple[str, ...]] = {
            pool.submit(_warm, policy): points for policy, points in ordered
        }
        for future in as_completed(futures):
            points = futures[future]
            try:
                warmed = Warmed(points, future.result())
            except InputError as err:  # a policy the replay refuses (its inputs): said, the others go on
                warmed = Warmed(points, None, str(err))
            done.append(warmed)
            if on_done is not None:
                on_done(warmed)
    return done
