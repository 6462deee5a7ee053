"""The Python API: replay from a notebook or a script, load run and sweep folders, compare runs.

Four calls cover what the command line does, with polars frames in and out:

- :func:`run` replays a config in memory, as ``gpureplay run OVERRIDES`` would, and returns its
  :class:`Results` (one frame per result file) without writing anything;
- :func:`load` reads one run folder into the same :class:`Results`, :func:`load_sweep` a sweep folder
  into a :class:`Sweep` (its points' summaries in one frame, each point's :class:`Results` by name);
- :func:`compare` is the table ``gpureplay compare`` prints, as a frame.

``gpureplay run`` and :func:`run` share one code path
(:func:`gpureplay.experiment.replay_tables` builds the tables; the command line then writes them), so
the frames :func:`run` returns are those a run folder holds. The package re-exports these names
lazily: ``import gpureplay`` imports none of this module, and numba with the engine is imported when a
replay is first asked for.

Examples
--------
A notebook session, on a three-job trace written for the example:

>>> import tempfile
>>> from pathlib import Path
>>> import gpureplay
>>> work = Path(tempfile.mkdtemp())
>>> trace = work / "jobs.csv"
>>> _ = trace.write_text(
...     "job_id,submit_time,duration,num_pods,gpu_milli\\n1,0,100,1,8000\\n2,0,50,1,4000\\n3,10,30,1,8000\\n"
... )
>>> base = ["trace=csv", f"trace.path={trace}", "cluster=homogeneous", "cluster.nodes=1"]
>>> fifo = gpureplay.run([*base, "scheduler=fifo"])
>>> fifo.jobs.select("job_id", "submit_time", "start_time", "finish_time")
shape: (3, 4)
┌────────┬─────────────┬────────────┬─────────────┐
│ job_id ┆ submit_time ┆ start_time ┆ finish_time │
│ ---    ┆ ---         ┆ ---        ┆ ---         │
│ i64    ┆ f64         ┆ f64        ┆ f64         │
╞════════╪═════════════╪════════════╪═════════════╡
│ 1      ┆ 0.0         ┆ 0.0        ┆ 100.0       │
│ 2      ┆ 0.0         ┆ 100.0      ┆ 150.0       │
│ 3      ┆ 10.0        ┆ 150.0      ┆ 180.0       │
└────────┴─────────────┴────────────┴─────────────┘
>>> sorted(work.iterdir()) == [trace]  # nothing written
True

One figure from the frames (matplotlib, as ``gpureplay report`` draws):

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import matplotlib.pyplot as plt
>>> fig, ax = plt.subplots()
>>> _ = ax.step(fifo.timeline["time"], fifo.timeline["allocated_fraction"], where="post")
>>> _ = ax.set(xlabel="time (s)", ylabel="GPUs allocated (fraction)")
>>> plt.close(fig)

Kept in a folder, a run is what ``gpureplay run`` leaves, for :func:`load`, :func:`compare` and
``gpureplay report``:

>>> fifo.write(work / "fifo")
>>> gpureplay.load(work / "fifo").jobs.equals(fifo.jobs)
True
>>> import shutil
>>> shutil.rmtree(work)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig, ListConfig, OmegaConf

from gpureplay.errors import InputError, Problem
from gpureplay.results.timing import RunTiming

__all__ = [
    "ConfigError",
    "Results",
    "Sweep",
    "compare",
    "compose",
    "load",
    "load_sweep",
    "run",
]

log = logging.getLogger("gpureplay")

#: Result files of a timed replay and of a packing run, by the :class:`Results` attribute holding each.
_FILES: dict[str, str] = {
    "jobs.parquet": "jobs",
    "attempts.parquet": "attempts",
    "timeline.parquet": "timeline",
    "queues.parquet": "queues",
    "queue_summary.parquet": "queue_summary",
    "events.parquet": "events",
    "summary.parquet": "summary",
}


class ConfigError(ValueError):
    """A config that does not compose: a group without that option, a misspelt key, a value of the wrong type.

    The message is the one ``gpureplay run`` prints for the same overrides
    (:func:`gpureplay.config_check.describe_config_error`); the error Hydra or OmegaConf raised is its
    ``__cause__``. Values that compose but are out of range raise :class:`gpureplay.errors.InputError`,
    naming the key, as on the command line.
    """


@dataclass(frozen=True)
class Results:
    """One run's results: a polars frame per result file, the resolved config, and where it came from.

    Each frame has the columns and types of the Parquet file of that name (docs/results.md;
    :mod:`gpureplay.results.schemas`). A timed replay has ``attempts``, ``queues`` and
    ``queue_summary`` and no ``events``; a packing run (``mode=packing``) the other way round
    (:data:`gpureplay.results.writer.PACKING_FILES`).

    Attributes
    ----------
    jobs
        ``jobs.parquet``: one row per job (per pod in a packing run).
    timeline
        ``timeline.parquet``: the cluster sampled every ``sample_interval`` (a packing run: the fill curve).
    summary
        ``summary.parquet``: one row, the flattened config keys then the headline metrics.
    attempts
        ``attempts.parquet``: one row per attempt of a job to run (None for a packing run).
    queues
        ``queues.parquet``: per-queue samples (None for a packing run).
    queue_summary
        ``queue_summary.parquet``: one row per queue (None for a packing run).
    events
        ``events.parquet``: a packing run's cluster after each pod (None for a timed replay).
    config
        The resolved config the run replayed (every interpolation filled in).
    metadata
        The key-value metadata every result file carries (config, version, input checksums, seed).
    timing
        Wall-clock seconds (:class:`gpureplay.results.timing.RunTiming`); None for a folder written
        without ``timing.json``.
    folder
        The run folder it was read from (:func:`load`); None for a run in memory (:func:`run`).
    """

    jobs: pl.DataFrame
    timeline: pl.DataFrame
    summary: pl.DataFrame
    attempts: pl.DataFrame | None
    queues: pl.DataFrame | None
    queue_summary: pl.DataFrame | None
    events: pl.DataFrame | None
    config: DictConfig
    metadata: Mapping[str, str]
    timing: RunTiming | None
    folder: Path | None

    @property
    def packing(self) -> bool:
        """True for a packing run (``mode=packing``, the FGD experiment)."""
        return self.events is not None

    @property
    def row(self) -> dict[str, Any]:
        """The summary's one row as a dict (config keys and headline metrics by name)."""
        return self.summary.row(0, named=True)

    @property
    def tables(self) -> dict[str, pl.DataFrame]:
        """Every frame by the name of its file (``"jobs.parquet"``, ...), in the order a run writes them."""
        found = {name: getattr(self, attribute) for name, attribute in _FILES.items()}
        ordered = {
            name: table for name, table in found.items() if table is not None and name != "summary.parquet"
        }
        return {**ordered, "summary.parquet": self.summary}

    def write(self, folder: str | Path) -> None:
        """Write these results into ``folder`` as ``gpureplay run`` does: the Parquet files, ``timing.json``,
        ``STATUS`` and the ``DONE`` marker, so :func:`load`, :func:`compare` and ``gpureplay report`` read it.

        The folder is locked while it is written and cleared of an earlier run's results first, as a
        run of the command line does (:mod:`gpureplay.runfolder`).

        Raises
        ------
        gpureplay.runfolder.FolderBusyError
            When another run holds the folder.
        """
        from gpureplay.results.timing import TIMING_FILE
        from gpureplay.results.writer import PACKING_FILES, RESULT_FILES, write_results
        from gpureplay.runfolder import hold_folder, start_run
        from gpureplay.sweep import write_status

        target = Path(folder)
        timing = self.timing or RunTiming(0.0, 0.0, 0.0)
        with hold_folder(target):
            start_run(target, (*RESULT_FILES, *PACKING_FILES, TIMING_FILE))
            # total_seconds: the run's own, and the time writing it takes, as the command line counts it.
            started = time.perf_counter() - timing.total_seconds
            write_results(
                target, self.tables, self.metadata, timing.compile_seconds, timing.replay_seconds, started
            )
            write_status(target, "done")


def compose(overrides: Sequence[str] = ()) -> DictConfig:
    """The config ``gpureplay run OVERRIDES`` replays, composed and checked, for a look or a change.

    Parameters
    ----------
    overrides
        Hydra overrides, e.g. ``["trace=openb", "cluster=openb", "scheduler=fgd"]``; sweeps
        (``scheduler=fifo,kai``) are refused: :func:`run` replays one config.

    Returns
    -------
    DictConfig
        The typed config (schema :class:`gpureplay.config.Config`): a value set on it is checked
        against its type at once. Pass it to :func:`run` as ``config=``.

    Raises
    ------
    ConfigError
        When the overrides do not compose (the message ``gpureplay run`` prints).
    gpureplay.errors.InputError
        For a value that composes but is out of range, naming the key.

    Examples
    --------
    >>> cfg = compose(["scheduler=fifo", "seed=3"])
    >>> cfg.scheduler.name, cfg.seed, cfg.trace.name
    ('fifo', 3, 'philly')
    >>> compose(["scheduler=fiffo"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpureplay.api.ConfigError: config group 'scheduler' has no option 'fiffo' (did you mean 'fifo'?); ...
    >>> compose(["trace=csv"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpureplay.errors.InputError: config key 'trace.path': is required and has no default; ...
    """
    from gpureplay.config import compose_config
    from gpureplay.config_check import describe_config_error

    try:
        return compose_config(list(overrides))
    except InputError:
        raise
    except Exception as err:
        message = describe_config_error(err)
        if message is None:
            raise
        raise ConfigError(message) from err


def _typed(config: DictConfig | Mapping[str, Any]) -> DictConfig:
    """``config`` under its schema (:class:`gpureplay.config.Config` with its trace's and cluster's), checked.

    A config from :func:`compose` is typed already; one read back from a run (:attr:`Results.config`,
    plain YAML) or written as a dict takes its types here, so that it replays, and writes its summary
    columns, as the composed config would.
    """
    from gpureplay.config import CLUSTER_SCHEMAS, TRACE_SCHEMAS, Config, register_configs
    from gpureplay.config_check import check_config, describe_config_error

    register_configs()
    try:
        typed: DictConfig | ListConfig
        if isinstance(config, DictConfig) and OmegaConf.get_type(config) is Config:
            typed = config.copy()
        else:
            given = config if isinstance(config, DictConfig) else OmegaConf.create(dict(config))
            schema = OmegaConf.structured(Config)
            for group, schemas in (("trace", TRACE_SCHEMAS), ("cluster", CLUSTER_SCHEMAS)):
                kind = OmegaConf.select(given, f"{group}.kind")
                if kind not in schemas:
                    raise InputError.config(
                        f"names no {group} kind {kind!r}; kinds: {', '.join(schemas)}", f"{group}.kind"
                    )
                schema[group] = OmegaConf.structured(schemas[kind])
            typed = OmegaConf.merge(schema, given)
    except InputError:
        raise
    except Exception as err:
        message = describe_config_error(err)
        if message is None:
            raise
        raise ConfigError(message) from err
    assert isinstance(typed, DictConfig)
    check_config(typed)
    return typed


def run(overrides: Sequence[str] = (), *, config: DictConfig | Mapping[str, Any] | None = None) -> Results:
    """Replay one config in memory, as ``gpureplay run OVERRIDES`` would, and return its results.

    Nothing is written: no run folder, no ``.hydra/``, no log file (``hydra.run.dir`` is not read). The
    kernels come from numba's cache as on the command line (``NUMBA_CACHE_DIR``); the first replay of a
    scheduler family on an empty cache compiles them, which takes minutes.

    Parameters
    ----------
    overrides
        Hydra overrides, e.g. ``["trace=openb", "cluster=openb", "scheduler=fgd", "seed=3"]``, composed
        on ``conf/config.yaml``'s defaults exactly as ``gpureplay run`` composes them.
    config
        Instead of overrides: a whole config, from :func:`compose` (perhaps changed since), or the
        :attr:`Results.config` of an earlier run, or a mapping of the same keys.

    Returns
    -------
    Results
        One frame per result file the command line would write (``folder`` None).

    Raises
    ------
    ConfigError
        When the overrides do not compose (the message ``gpureplay run`` prints).
    gpureplay.errors.InputError
        For a config value out of range (naming the key) or bad input data (naming file, row and
        column), with the command line's message.
    TypeError
        When both ``overrides`` and ``config`` are given.

    Examples
    --------
    Two jobs of 8 GPUs on one 8-GPU node: the second waits for the first.

    >>> import tempfile
    >>> from pathlib import Path
    >>> trace = Path(tempfile.mkdtemp()) / "jobs.csv"
    >>> _ = trace.write_text(
    ...     "job_id,submit_time,duration,num_pods,gpu_milli\\n1,0,100,1,8000\\n2,0,50,1,8000\\n"
    ... )
    >>> one_node = ["trace=csv", f"trace.path={trace}", "cluster=homogeneous", "cluster.nodes=1"]
    >>> res = run([*one_node, "scheduler=fifo"])
    >>> res.jobs["wait_time"].to_list()
    [0.0, 100.0]
    >>> res.row["finished"], res.config.scheduler.name, res.folder is None
    (2, 'fifo', True)

    The same config with another seed:

    >>> cfg = compose([*one_node, "scheduler=fifo"])
    >>> cfg.seed = 7
    >>> run(config=cfg).row["seed"]
    7

    Errors name the key, as on the command line:

    >>> run([*one_node, "scheduler=fifo", "cluster.nodez=1"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpureplay.api.ConfigError: config key 'cluster.nodez': no such key (did you mean 'cluster.nodes'?)...
    >>> import shutil
    >>> shutil.rmtree(trace.parent)
    """
    started = time.perf_counter()
    if config is not None and overrides:
        raise TypeError("give overrides or config=, not both (change the config itself: cfg.seed = 3)")
    cfg = compose(overrides) if config is None else _typed(config)
    # Imported here, after the config is checked: a bad key never waits for the engine's import.
    from gpureplay.experiment import replay_tables

    result = replay_tables(cfg)
    log.info("%s (in memory)", result.outcome)
    timing = RunTiming(result.compile_seconds, result.replay_seconds, time.perf_counter() - started)
    return _results(result.tables, result.metadata, timing, None)


def _results(
    tables: Mapping[str, pl.DataFrame],
    metadata: Mapping[str, str],
    timing: RunTiming | None,
    folder: Path | None,
    config: DictConfig | None = None,
) -> Results:
    """:class:`Results` of a run's tables by file name; its config from the metadata unless given."""
    if config is None:
        loaded = OmegaConf.create(metadata.get("config") or "{}")
        assert isinstance(loaded, DictConfig)
        config = loaded
    return Results(
        jobs=tables["jobs.parquet"],
        timeline=tables["timeline.parquet"],
        summary=tables["summary.parquet"],
        attempts=tables.get("attempts.parquet"),
        queues=tables.get("queues.parquet"),
        queue_summary=tables.get("queue_summary.parquet"),
        events=tables.get("events.parquet"),
        config=config,
        metadata=dict(metadata),
        timing=timing,
        folder=folder,
    )


def _not_one_run(folder: Path) -> InputError:
    """Why ``folder`` is not a complete run folder, naming it (a sweep, a failed or killed run, nothing)."""
    from gpureplay.report.folders import scan

    found = scan([folder])
    own = next((item for item in found.left_out if item.folder == folder), None)
    if own is not None:
        return InputError.single(f"not a complete run: {own.kind}: {own.reason}", str(folder))
    below = len(found.complete) + len(found.left_out)
    if below:
        return InputError.single(
            f"holds {below} run folders, not one run: load a sweep with gpureplay.load_sweep", str(folder)
        )
    return InputError.single("not a run folder (no DONE marker, STATUS or result files)", str(folder))


def _read_run(folder: Path) -> Results:
    """Every result file a complete run folder's ``DONE`` marker lists, read whole; errors name the file."""
    import json

    from gpureplay.results.timing import read_timing
    from gpureplay.results.writer import DONE_MARKER, read_metadata

    listed = json.loads((folder / DONE_MARKER).read_text())
    tables: dict[str, pl.DataFrame] = {}
    for name in _FILES:
        if name not in listed:
            continue
        try:
            tables[name] = pl.read_parquet(folder / name)
        except Exception as err:  # polars and pyarrow raise several types for damaged data
            first = str(err).splitlines()[0] if str(err) else ""
            raise InputError.single(
                f"cannot be read ({type(err).__name__}: {first})", str(folder / name)
            ) from err
    metadata = read_metadata(folder / "summary.parquet")
    config = None
    if "config" not in metadata:  # written by hand, or by a version without the metadata: Hydra's copy
        hydra_config = folder / ".hydra" / "config.yaml"
        if not hydra_config.is_file():
            raise InputError.single(
                "summary.parquet names no config, and .hydra/config.yaml is missing", str(folder)
            )
        loaded = OmegaConf.load(hydra_config)
        assert isinstance(loaded, DictConfig)
        config = loaded
    return _results(tables, metadata, read_timing(folder), folder, config)


def load(folder: str | Path) -> Results:
    """Read one complete run folder (``gpureplay run``'s ``hydra.run.dir``, or a sweep's point) whole.

    Parameters
    ----------
    folder
        The run folder: a ``DONE`` marker, every file it lists, and result files whose footers read.

    Returns
    -------
    Results
        Every result file as a frame, the resolved config from the files' metadata, the timings.

    Raises
    ------
    FileNotFoundError
        When ``folder`` does not exist.
    gpureplay.errors.InputError
        Naming the folder, when it is not one complete run: a run that failed, was killed or is still
        running, a folder whose marker lists a missing, truncated or corrupt file, a sweep folder
        (:func:`load_sweep` reads those), or a folder that holds no run. Nothing is half-read.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> empty = Path(tempfile.mkdtemp())
    >>> load(empty)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpureplay.errors.InputError: ...: not a run folder (no DONE marker, STATUS or result files)
    >>> empty.rmdir()
    """
    from gpureplay.report.folders import scan

    folder = Path(folder)
    found = scan([folder])
    if folder not in found.complete:
        raise _not_one_run(folder)
    return _read_run(folder)


class Sweep(Mapping[str, Results]):
    """The complete points of a sweep folder: their summaries in one frame, each point's :class:`Results`.

    A mapping from point name (the point's folder under the sweep folder, e.g.
    ``"scheduler=fifo,seed=0"``) to its :class:`Results`, each read when first asked for and kept.

    Attributes
    ----------
    folder
        The sweep folder.
    summary
        One row per point: ``point``, then its ``summary.parquet`` row (runs stacked with
        ``how="diagonal_relaxed"``, so points of different schedulers keep every column).
    left_out
        Points not read (failed, killed, unreadable) with the reason, when
        :func:`load_sweep` was asked to skip them; else empty.
    """

    def __init__(self, folder: Path, points: Mapping[str, Path], left_out: Sequence[Any]) -> None:
        self.folder = folder
        self._points = dict(points)
        self._loaded: dict[str, Results] = {}
        self.left_out = tuple(left_out)
        summaries = [
            pl.read_parquet(path / "summary.parquet").select(pl.lit(name).alias("point"), pl.all())
            for name, path in self._points.items()
        ]
        self.summary = pl.concat(summaries, how="diagonal_relaxed")

    def __getitem__(self, point: str) -> Results:
        if point not in self._loaded:
            self._loaded[point] = _read_run(self._points[point])
        return self._loaded[point]

    def __iter__(self) -> Iterator[str]:
        return iter(self._points)

    def __len__(self) -> int:
        return len(self._points)

    def __repr__(self) -> str:
        return f"Sweep({str(self.folder)!r}: {len(self)} points)"

    def table(self, name: str) -> pl.DataFrame:
        """One result table of every point, stacked, with a first column ``point``.

        Parameters
        ----------
        name
            A :class:`Results` attribute: ``"jobs"``, ``"timeline"``, ``"attempts"``, ...; points
            without that table (a packing run has no ``attempts``) add no rows.
        """
        if name not in _FILES.values():
            raise ValueError(f"no result table {name!r}; tables: {', '.join(_FILES.values())}")
        frames = [
            table.select(pl.lit(point).alias("point"), pl.all())
            for point in self
            if (table := getattr(self[point], name)) is not None
        ]
        return (
            pl.concat(frames, how="diagonal_relaxed")
            if frames
            else pl.DataFrame({"point": []}, {"point": pl.String})
        )


def _refuse_left_out(left_out: Sequence[Any], what: str) -> None:
    """Raise naming every run folder left out, unless there is none."""
    if left_out:
        problems = [Problem(f"{item.kind}: {item.reason}", str(item.folder)) for item in left_out]
        problems.append(Problem(f"{what} reads complete runs only (skip_incomplete=True leaves these out)"))
        raise InputError(problems)


def load_sweep(folder: str | Path, *, skip_incomplete: bool = False) -> Sweep:
    """Read a sweep folder (``gpureplay run -m``'s ``hydra.sweep.dir``): its points' summaries, each point.

    Parameters
    ----------
    folder
        The sweep folder; its run folders are found at any depth, as ``gpureplay report`` finds them.
    skip_incomplete
        Leave out points that failed, were killed, are still running or hold an unreadable file, listing
        them in :attr:`Sweep.left_out` (and in a warning). By default such a point is an error.

    Raises
    ------
    FileNotFoundError
        When ``folder`` does not exist, or holds no complete run.
    gpureplay.errors.InputError
        Naming every point that is not complete (unless ``skip_incomplete``), or when ``folder`` is one
        run (:func:`load` reads those).
    """
    from gpureplay.report.folders import describe, scan

    folder = Path(folder)
    found = scan([folder])
    if folder in found.complete or any(item.folder == folder for item in found.left_out):
        raise InputError.single("one run, not a sweep: read it with gpureplay.load", str(folder))
    if not skip_incomplete:
        _refuse_left_out(found.left_out, "load_sweep")
    elif found.left_out:
        log.warning(
            "load_sweep: %d points left out:\n%s", len(found.left_out), "\n".join(describe(found.left_out))
        )
    if not found.complete:
        raise FileNotFoundError(f"{folder}: no complete run under it")
    points = {path.relative_to(folder).as_posix(): path for path in found.complete}
    return Sweep(folder, points, found.left_out)


def compare(runs: str | Path | Iterable[str | Path], *, skip_incomplete: bool = False) -> pl.DataFrame:
    """The table ``gpureplay compare RUNS`` prints, as a frame: one row per complete run under ``runs``.

    Columns: the config keys that differ between the runs, the headline metrics (waits and JCTs in
    hours with their censored counts, GPU allocation in %, the same over the measurement window; a
    packing run's at 100 % arrived demand), ``compile (s)``, ``replay (s)`` and ``run`` (the folder).
    Every cell is the display text the command prints; for numbers, read :attr:`Results.summary`
    or :attr:`Sweep.summary`.

    Parameters
    ----------
    runs
        Run folders and sweep folders (run folders are found at any depth).
    skip_incomplete
        Leave out runs that failed, were killed or cannot be read (the command line lists them
        after the table; here a warning does). By default such a run is an error naming it.

    Raises
    ------
    FileNotFoundError
        When an input does not exist or holds no complete run.
    gpureplay.errors.InputError
        Naming every run that is not complete (unless ``skip_incomplete``).
    """
    from gpureplay.report.folders import describe
    from gpureplay.results.compare import compare_runs

    roots = [Path(runs)] if isinstance(runs, str | Path) else [Path(r) for r in runs]
    result = compare_runs(roots)
    if not skip_incomplete:
        _refuse_left_out(result.left_out, "compare")
    elif result.left_out:
        log.warning(
            "compare: %d runs left out:\n%s", len(result.left_out), "\n".join(describe(result.left_out))
        )
    for note in result.notes:
        log.info("compare: %s", note)
    return result.table
