"""The ``gpureplay`` command line: ``run``, ``trace list|inspect|convert|fetch``.

Thin by design: each command parses arguments and calls one function.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

import click

from gpureplay.errors import InputError
from gpureplay.errors import exit_with as _fail
from gpureplay.manifests_cli import manifests
from gpureplay.mig_cli import mig


def _options(group: str) -> list[str]:
    folder = files("gpureplay.conf").joinpath(group)
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def _run_help() -> str:
    groups = "\n".join(
        f"  {g:<10} {', '.join(_options(g))}"
        for g in ("trace", "cluster", "scheduler", "workload", "experiment", "sweep")
    )
    return f"""Replay a trace on a cluster under a scheduler (a Hydra app).

OVERRIDES are Hydra overrides, e.g.:
  gpureplay run trace=openb cluster=openb scheduler=kube-default seed=3
  gpureplay run trace=csv trace.path=jobs.csv cluster=homogeneous cluster.nodes=4 \\
      cluster.gpus_per_node=8 cluster.gpu_model=A100-80GB scheduler=fifo hydra.run.dir=out
  gpureplay run -m scheduler=fifo,gang-binpack        (multirun: one replay per point)
  gpureplay run --cfg job                             (print the composed config and stop)

Config groups and their options:
{groups}

Top-level keys: seed (int), sample_interval (s), horizon (s or null), debug (bool),
max_time (s), memory_budget_gib (GiB or null: the memory available), max_manifest_mib.
Writes jobs.parquet, attempts.parquet, timeline.parquet, queues.parquet, summary.parquet
and a DONE marker into hydra.run.dir (default results/runs/<time>_<trace>_<scheduler>),
which the run locks (a second run into it fails at once) and keeps a STATUS in.

Exit status: 0 done; 2 bad input or config (a message naming the file, row and
column, or the config key; no traceback), or a folder another run holds; 130 on
Ctrl-C, 143 on SIGTERM (the folder is left without DONE); 1 a sweep with failed
points, or an unexpected error. Hydra's own options: gpureplay run --hydra-help."""


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: click's own message, the version read only when asked (see gpureplay.__version__)."""
    if not value or ctx.resilient_parsing:
        return
    from gpureplay import __version__

    click.echo(f"gpureplay, version {__version__}")
    ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def main() -> None:
    """gpureplay: replay real GPU-cluster job traces through scheduler models.

    Traces (Philly, Alibaba openb/PAI, Microsoft ITP, Helios, any CSV) are read
    into one canonical jobs table, replayed on a cluster (real node lists or a
    generated one) by a numba-compiled engine under a scheduler preset, and the
    results are written as Parquet.
    """


class _RunCommand(click.Command):
    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("gpureplay run", "[-m] [OVERRIDES]...")
        formatter.write_paragraph()
        for line in _run_help().splitlines():
            formatter.write(line + "\n")


@main.command(
    "run",
    cls=_RunCommand,
    context_settings={
        "ignore_unknown_options": True,
        "allow_extra_args": True,
        "help_option_names": ["--help", "-h"],
    },
)
@click.argument("overrides", nargs=-1, type=click.UNPROCESSED)
def run(overrides: Sequence[str]) -> None:
    """Replay a trace (Hydra app; see `gpureplay run --help`)."""
    from gpureplay import app

    app.run(overrides)


@main.command(
    "warmup",
    context_settings={"ignore_unknown_options": True, "help_option_names": ["--help", "-h"]},
)
@click.argument("overrides", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes at once (default: one per core, as many as the free memory holds).",
)
def warmup(overrides: Sequence[str], jobs: int | None) -> None:
    """Compile the kernels of every preset, or of the points OVERRIDES sweep, into numba's cache.

    OVERRIDES are those of `gpureplay run -m`: `gpureplay warmup sweep=philly-queues` readies what
    `gpureplay run -m sweep=philly-queues` replays, `gpureplay warmup scheduler=fifo,kai` two presets;
    with none, every preset. Each distinct policy compiles in a process of its own, the longest first,
    into $NUMBA_CACHE_DIR (default: a per-user cache), which every later run and every sweep worker
    that sees the same folder loads from. Run it once on a fresh machine, a CI runner, or before a
    Ray or Slurm sweep whose workers share that folder.
    """
    from gpureplay.engine.jit.config import cache_folder
    from gpureplay.warmup import Warmed, default_workers, sweep_policies, warm_up_policies

    try:
        policies = sweep_policies(overrides)
    except InputError as err:
        _fail(err)
    workers = min(jobs or default_workers(), len(policies))
    click.echo(f"readying {len(policies)} policies in {workers} processes into {cache_folder()}", err=True)

    def said(warmed: Warmed) -> None:
        shown = ", ".join(warmed.points[:3]) + (
            f" (+{len(warmed.points) - 3})" if len(warmed.points) > 3 else ""
        )
        outcome = f"refused: {warmed.error}" if warmed.error else f"ready in {warmed.seconds:.1f} s"
        click.echo(f"  {shown}: {outcome}", err=True)

    started = time.perf_counter()
    done = warm_up_policies(policies, workers, on_done=said)
    ready = sum(1 for w in done if not w.error)
    click.echo(f"{ready} policies ready in {time.perf_counter() - started:.0f} s", err=True)
    if any(w.error for w in done):
        _fail(f"{sum(1 for w in done if w.error)} of {len(done)} policies were refused (above)")


@main.command("compare")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
def compare(run_dirs: Sequence[Path]) -> None:
    """Print headline metrics of every complete run found under RUN_DIRS side by side.

    One row per run: its folder, the config keys that differ between the runs,
    jobs, waits and JCTs (with their censored counts), GPU allocation over the
    whole run and the measurement window, and compile and replay times apart;
    for packing runs (mode=packing) pods, failed pods and the GPUs unallocated,
    allocated and fragmented at 100% arrived demand instead. Runs that failed,
    were killed or cannot be read are listed after the table.
    """
    from gpureplay.report.folders import counts, describe
    from gpureplay.results.compare import compare_runs, format_text

    try:
        result = compare_runs(run_dirs)
    except (InputError, FileNotFoundError) as err:
        _fail(err)
    click.echo(format_text(result.table))
    for note in result.notes:
        click.echo(note, err=True)
    if result.left_out:
        click.echo(f"left out: {counts(result.left_out)}", err=True)
        for line in describe(result.left_out, limit=20):
            click.echo(f"  {line}", err=True)


@main.command("report")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for report.md, report.html and the PNG figures (default: reports/<first input name>).",
)
@click.option(
    "--baseline",
    "baseline",
    multiple=True,
    metavar="KEY=VALUE",
    help="The configuration every other one is compared with, by the keys that differ between them "
    "(repeat for several keys, e.g. --baseline scheduler.node_placement=worst_fit). Default: whole GPUs "
    "where MIG layouts are compared, else the fifo scheduler, else the first configuration.",
)
def report(inputs: Sequence[Path], out_dir: Path | None, baseline: Sequence[str]) -> None:
    """Build a comparison report from sweep or run folders (SWEEP_OR_RUN_DIR...).

    Reads every complete run (a folder with a DONE marker) under INPUTS and writes
    report.md and a self-contained report.html with headline metrics per configuration
    (mean and 95% interval across seeds, over the measurement window and the whole
    run), the largest differences in words, wait and JCT CDFs, GPU allocation and
    fragmentation over time and per-queue usage. Packing runs (mode=packing, the FGD
    experiment) get their own section: unallocated GPUs and fragmentation against the
    arrived workload (median and 25-75% band over seeds), the values at 100% arrived,
    and the FGD paper's published numbers where the setting is the paper's. Runs that
    failed, were killed, or hold a missing, truncated or corrupt result file are left
    out, listed here and in the report; with no readable run left the command fails
    (status 2).
    """
    from gpureplay.report.build import build
    from gpureplay.report.folders import counts, describe

    target = out_dir if out_dir is not None else Path("reports") / Path(inputs[0]).resolve().name
    pairs: list[tuple[str, str]] = []
    for item in baseline:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            _fail(f"--baseline {item!r}: expected KEY=VALUE, e.g. scheduler.node_placement=worst_fit")
        pairs.append((key.strip(), value.strip()))
    try:
        built = build(list(inputs), target, pairs)
    except (InputError, FileNotFoundError) as err:
        _fail(err)
    left_out = built.left_out
    if left_out:
        click.echo(f"left out: {counts(left_out)}", err=True)
        for line in describe(left_out, limit=20):
            click.echo(f"  {line}", err=True)
    click.echo(f"report: {built.html.resolve()}")


@main.group("trace")
def trace() -> None:
    """List, inspect, convert and fetch traces."""


def _load_named_or_path(name_or_path: str, overrides: Sequence[str]) -> Any:
    from gpureplay.traces.registry import load_trace, needs_cluster, trace_selection

    selection = trace_selection(name_or_path, _options("trace"))
    if selection is not None:
        from omegaconf import OmegaConf

        from gpureplay.config import compose_config

        cfg = compose_config([*selection, *overrides])
        resolved = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
        assert isinstance(resolved, dict)
        gpus = None
        if needs_cluster(resolved["trace"]):  # a synthetic trace's load is offered on the config's cluster
            from gpureplay.experiment import cluster_gpus

            gpus = cluster_gpus(cfg)
        return load_trace(resolved["trace"], int(cfg.seed), cluster_gpus=gpus)
    path = Path(name_or_path)
    if not path.exists():
        raise click.BadParameter(
            f"{name_or_path!r} is neither a trace name ({', '.join(_options('trace'))}, or a name "
            "`gpureplay trace list` shows) nor a file",
            param_hint="NAME_OR_PATH",
        )
    if overrides:
        raise click.BadParameter(
            f"overrides ({' '.join(overrides)}) apply to a trace name, not to a file", param_hint="OVERRIDES"
        )
    if path.suffix == ".json" or path.name.startswith("cluster_job_log"):
        from gpureplay.traces.philly_raw import load_philly_raw

        return load_philly_raw(path)
    from gpureplay.traces.generic import load_table

    return load_table(path)


def _load_or_fail(name_or_path: str, overrides: Sequence[str]) -> Any:
    """:func:`_load_named_or_path`, exiting with status 2 and a message on bad input or config."""
    from gpureplay.config_check import describe_config_error

    try:
        return _load_named_or_path(name_or_path, overrides)
    except (InputError, FileNotFoundError) as err:
        _fail(err)
    except Exception as err:
        message = describe_config_error(err)
        if message is None:
            raise
        _fail(message)


@trace.command("list")
def trace_list() -> None:
    """Known public traces: source, license, rows, and whether they are bundled."""
    from gpureplay.traces.manifest import load_manifest

    try:
        entries = load_manifest()
    except (InputError, FileNotFoundError) as err:
        _fail(err)
    click.echo(f"{'name':<20} {'rows':>11}  {'bundled':<8} {'adapter':<11} {'license':<28} origin")
    for entry in entries.values():
        rows = f"{entry.rows:,}" if entry.rows is not None else "-"
        bundled = "yes" if entry.bundled else "fetch"
        click.echo(
            f"{entry.name:<20} {rows:>11}  {bundled:<8} {entry.format:<11} {entry.license:<28} {entry.origin}"
        )


@trace.command("inspect", context_settings={"ignore_unknown_options": True})
@click.argument("name_or_path")
@click.argument("overrides", nargs=-1, type=click.UNPROCESSED)
def trace_inspect(name_or_path: str, overrides: Sequence[str]) -> None:
    """Schema, counts, demand histogram and time span of a trace.

    NAME_OR_PATH is a trace config name (philly, openb, itp, ...) or a CSV/Parquet
    file with canonical column names. OVERRIDES are Hydra overrides of the trace
    group, e.g. `gpureplay trace inspect itp trace.cluster_id=4`.
    """
    from gpureplay.traces.inspect import describe

    click.echo(describe(_load_or_fail(name_or_path, overrides)))


@trace.command("convert", context_settings={"ignore_unknown_options": True})
@click.argument("name_or_path")
@click.argument("overrides", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File to write, by its suffix: .parquet (with the trace's source and checksum as metadata) "
    "or .csv (list columns joined with '|').",
)
def trace_convert(name_or_path: str, overrides: Sequence[str], output: Path) -> None:
    """Write a trace as a canonical jobs table, Parquet or CSV (replayable with trace=csv trace.path=FILE)."""
    from gpureplay.results.writer import TABLE_SUFFIXES, write_table_atomic

    if output.suffix.lower() not in TABLE_SUFFIXES:
        raise click.BadParameter(
            f"cannot tell which format to write from {output.name!r}: name it *.parquet or *.csv",
            param_hint="-o/--output",
        )
    from gpureplay import __version__

    adapted = _load_or_fail(name_or_path, overrides)
    output.parent.mkdir(parents=True, exist_ok=True)
    written = write_table_atomic(
        adapted.jobs,
        output,
        {
            "version": __version__,
            "trace_source": adapted.source,
            "trace_sha256": adapted.sha256,
            "adapter_changes": adapted.describe_changes(),
        },
    )
    click.echo(f"wrote {adapted.jobs.height:,} jobs to {output} ({written})")


@trace.command("fetch")
@click.argument("name")
@click.option(
    "--dest",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder to download into (default: the project's traces/<name>/).",
)
def trace_fetch(name: str, dest: Path | None) -> None:
    """Download and verify a trace too large to bundle (raw Philly, PAI 2020, Helios)."""
    from gpureplay.traces.fetch import FetchError, fetch

    try:
        paths = fetch(name, dest)
    except (FetchError, InputError, KeyError) as err:
        _fail(err)
    for path in paths:
        click.echo(str(path))


main.add_command(mig)
main.add_command(manifests)
