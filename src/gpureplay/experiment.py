"""``run_experiment(cfg, out_dir)``: load → transform → compile → simulate → write.

This is the importable function behind the Hydra entry (``app.py``): keeping
the work here, not in the module that holds ``@hydra.main``, lets joblib/Ray
workers import it and hit numba's on-disk cache instead of recompiling.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import polars as pl
from omegaconf import DictConfig, OmegaConf

from gpureplay import __version__
from gpureplay.cluster.registry import build_cluster
from gpureplay.results.metrics import flatten_config, job_results, summary_metrics, timeline_results
from gpureplay.results.writer import clear_run, mark_done, write_parquet_atomic
from gpureplay.schedulers.policy import Policy
from gpureplay.traces.registry import load_trace
from gpureplay.workload.transforms import apply_workload

log = logging.getLogger(__name__)

#: Result files of one run, in the order they are written (summary last, then the marker).
RESULT_FILES: tuple[str, ...] = ("jobs.parquet", "timeline.parquet", "summary.parquet")


@dataclass(frozen=True)
class RunOutcome:
    """What a run wrote: its folder and the headline row of ``summary.parquet``."""

    out_dir: Path
    summary: dict[str, Any]


def _policy(cfg: DictConfig) -> Policy:
    return cast(Policy, OmegaConf.to_object(cfg.scheduler))


def run_experiment(cfg: DictConfig, out_dir: Path) -> RunOutcome:
    """Replay ``cfg.trace`` on ``cfg.cluster`` under ``cfg.scheduler`` and write results to ``out_dir``.

    Parameters
    ----------
    cfg
        A composed config (schema :class:`gpureplay.config.Config`).
    out_dir
        Folder for ``jobs.parquet``, ``timeline.parquet``, ``summary.parquet``
        and the ``DONE`` marker. Existing result files there are removed first
        (marker first), so a failed run never leaves a folder that looks complete.

    Raises
    ------
    gpureplay.errors.InputError
        On any bad trace, node list or config value; nothing is written then.
    """
    from gpureplay.replay.progress import announce_compilation, progress_for_terminal
    from gpureplay.replay.simulate import (
        kernels_cached,
        simulate,
    )  # numba import deferred: `--help` stays fast

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    clear_run(out_dir, RESULT_FILES)
    resolved = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    seed = int(cfg.seed)

    trace = load_trace(resolved["trace"], seed)
    log.info("trace %s: %s jobs from %s", cfg.trace.name, f"{trace.jobs.height:,}", trace.source)
    for reason, count in trace.changes.most_common():
        log.info("  adapter: %s rows: %s", f"{count:,}", reason)
    jobs = apply_workload(trace.jobs, **_workload_args(resolved["workload"]), seed=seed)
    cluster = build_cluster(resolved["cluster"])
    total_gpus = int(cluster.nodes["num_gpus"].sum())
    log.info(
        "cluster %s: %s nodes, %s GPUs", cfg.cluster.name, f"{cluster.nodes.height:,}", f"{total_gpus:,}"
    )

    if not kernels_cached():
        announce_compilation(os.environ.get("NUMBA_CACHE_DIR"))
    started = time.perf_counter()
    replay = simulate(
        jobs,
        cluster.nodes,
        _policy(cfg),
        seed=seed,
        sample_interval=float(cfg.sample_interval),
        horizon=None if cfg.horizon is None else float(cfg.horizon),
        debug=bool(cfg.debug),
        progress=progress_for_terminal(),
    )
    replay_seconds = time.perf_counter() - started

    job_table = job_results(jobs, replay.jobs)
    timeline = timeline_results(replay.timeline, total_gpus)
    metrics = summary_metrics(job_table, timeline, replay.gpu_milli_seconds, total_gpus, replay_seconds)
    flat = flatten_config(resolved)
    summary = pl.DataFrame([flat], schema=dict.fromkeys(flat, pl.String())).hstack(metrics)

    metadata = {
        "config": OmegaConf.to_yaml(cfg, resolve=True),
        "version": __version__,
        "trace_sha256": trace.sha256,
        "trace_source": trace.source,
        "cluster_sha256": cluster.sha256 or "",
        "seed": str(seed),
    }
    tables = {"jobs.parquet": job_table, "timeline.parquet": timeline, "summary.parquet": summary}
    for name in RESULT_FILES:
        write_parquet_atomic(tables[name], out_dir / name, metadata)
    mark_done(out_dir, {name: tables[name].height for name in RESULT_FILES})
    row = summary.row(0, named=True)
    log.info(
        "replayed %s jobs in %.2f s: %s finished, %s rejected, %s deadlocked, %s unfinished -> %s",
        f"{row['jobs']:,}",
        replay_seconds,
        f"{row['finished']:,}",
        f"{row['rejected']:,}",
        f"{row['deadlocked']:,}",
        f"{row['unfinished']:,}",
        out_dir,
    )
    return RunOutcome(out_dir, row)


def load_summary(out_dir: Path) -> dict[str, Any]:
    """The headline row of a complete run folder's ``summary.parquet``."""
    return pl.read_parquet(Path(out_dir) / "summary.parquet").row(0, named=True)


def _workload_args(workload: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("window_start", "window_end", "sample_fraction", "max_jobs", "load")
    return {k: workload[k] for k in keys}


__all__ = ["RESULT_FILES", "RunOutcome", "load_summary", "run_experiment"]
