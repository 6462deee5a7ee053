"""Figures of a comparison report, drawn with matplotlib's Agg renderer and saved as PNG.

Every figure compares configurations, one colour each, the same colour in every
figure. Runs of one configuration (its seeds) are pooled: CDFs pool the jobs of
all seeds, timelines average the seeds at each time bin, per-queue bars show the
mean over seeds.

- Wait-time and JCT CDFs on a log time axis, the usual view of scheduling delay
  since Tiresias (NSDI'19) and Themis (NSDI'20): the y value is the fraction of
  *all* jobs, so a curve that stays below 1 shows jobs that never started or
  never finished. Waits under one second are drawn at one second (log axis).
- GPU allocation and fragmented GPUs over time (FGD, ATC'23, reports
  fragmentation this way).
- GPU-hours and mean wait per queue, when the runs have more than one queue.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import StrMethodFormatter

from gpureplay.report.collect import CONFIG_COLUMN, RUN_COLUMN, Collection

#: Largest number of points drawn per CDF curve (quantiles of the pooled values).
CDF_POINTS = 1500

#: Largest number of time bins drawn per timeline curve.
TIMELINE_BINS = 400

#: Most queues drawn one by one; the rest are summed into "other".
MAX_QUEUES = 12

#: Shortest time drawn on log axes, seconds.
TIME_FLOOR = 1.0

#: Dots per inch of saved figures (8 x 4.5 in -> 880 x 495 px).
DPI = 110

#: Names of the figure files this module writes.
FIGURE_FILES: tuple[str, ...] = ("wait_cdf.png", "jct_cdf.png", "timeline.png", "queues.png")


@dataclass(frozen=True)
class FigureFile:
    """A saved figure: where it is, its title and a one-line caption."""

    path: Path
    title: str
    caption: str


def colours(n: int) -> list[tuple[float, float, float, float]]:
    """``n`` distinguishable colours: tab10 up to 10, tab20 up to 20, then viridis."""
    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [colormaps["tab20"](i) for i in range(n)]
    return [colormaps["viridis"](x) for x in np.linspace(0.0, 0.95, n)]


_LINESTYLES = ("-", "--", "-.", ":")


def _linestyle(i: int, n: int) -> str:
    # Beyond 10 colours the styles cycle too, so neighbours in a long list stay apart.
    return _LINESTYLES[(i // 10) % len(_LINESTYLES)] if n > 10 else "-"


def _new_figure(height: float = 4.5) -> Figure:
    fig = Figure(figsize=(8.0, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Figure, path: Path) -> None:
    """Save ``fig`` as PNG through a temporary file renamed into place."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        # No "Software" chunk: it would carry a URL into a report that must name none.
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _legend(fig: Figure, axes: Axes, n: int) -> None:
    if n <= 1:
        return
    handles, labels = axes.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(n, 2), fontsize="small", frameon=False)


def _cdf_figure(
    collection: Collection, column: str, state: pl.Expr, what: str, path: Path
) -> FigureFile | None:
    configs = collection.configs.get_column(CONFIG_COLUMN).to_list()
    totals = dict(
        collection.jobs.group_by(CONFIG_COLUMN)
        .agg(pl.len())
        .select(pl.col(CONFIG_COLUMN).cast(pl.String), "len")
        .collect()
        .iter_rows()
    )
    rank, count = pl.int_range(pl.len()).over(CONFIG_COLUMN), pl.len().over(CONFIG_COLUMN)
    step = (count // CDF_POINTS).clip(lower_bound=1)
    # Sorted per configuration, then every step-th value (and the last): at most ~CDF_POINTS
    # points a curve leave the query, however many jobs a sweep holds.
    values = (
        collection.jobs.filter(state & pl.col(column).is_not_null())
        .select(CONFIG_COLUMN, pl.col(column).clip(lower_bound=TIME_FLOOR))
        .sort(CONFIG_COLUMN, column)
        .with_columns(rank.alias("_rank"), count.alias("_count"))
        .filter((pl.col("_rank") % step == 0) | (pl.col("_rank") == pl.col("_count") - 1))
        .with_columns(pl.col(CONFIG_COLUMN).cast(pl.String))
        .collect()
    )
    if values.height == 0:
        return None
    parts = values.partition_by(CONFIG_COLUMN, as_dict=True, include_key=False)
    fig = _new_figure(4.8)
    ax = fig.add_subplot()
    for i, config in enumerate(configs):
        part = parts.get((config,))
        if part is None:
            continue
        x = part.get_column(column).to_numpy()
        # Fraction of all jobs at or below x: the curve ends below 1 when jobs never got there.
        y = (part.get_column("_rank").to_numpy() + 1.0) / float(totals[config])
        ax.step(
            x,
            y,
            where="post",
            label=config,
            linewidth=1.6,
            color=colours(len(configs))[i],
            linestyle=_linestyle(i, len(configs)),
        )
    column_values = values.get_column(column).to_numpy()
    human = _time_axis(ax, float(column_values.min()), float(column_values.max()))
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel(f"{what} ({'' if human else 'seconds, '}log scale; under 1 s drawn at 1 s)")
    ax.set_ylabel("fraction of all jobs")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(f"{what}: cumulative distribution")
    _legend(fig, ax, len(configs))
    save_png(fig, path)
    return FigureFile(
        path,
        f"{what} CDF",
        f"{what} per configuration, seeds pooled; y is the fraction of all jobs, so a curve "
        "that stays below 1 shows jobs that never got there.",
    )


#: Tick marks of log time axes: units a reader thinks in, not powers of ten of hours.
TIME_TICKS: tuple[tuple[float, str], ...] = (
    (1.0, "1 s"),
    (10.0, "10 s"),
    (60.0, "1 min"),
    (600.0, "10 min"),
    (3600.0, "1 h"),
    (6 * 3600.0, "6 h"),
    (86400.0, "1 day"),
    (7 * 86400.0, "1 week"),
    (30 * 86400.0, "30 days"),
    (365 * 86400.0, "1 year"),
)


def _time_axis(ax: Axes, smallest: float, largest: float) -> bool:
    """Log time axis in seconds, ticked in human units; False when too narrow for them."""
    left = max(TIME_FLOOR, smallest / 1.5)
    right = max(largest * 1.5, 10.0 * left)
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ticks = [(t, label) for t, label in TIME_TICKS if left <= t <= right]
    if len(ticks) >= 2:
        ax.set_xticks([t for t, _ in ticks], [label for _, label in ticks])
        ax.minorticks_off()
        return True
    return False


def _timeline_figure(collection: Collection, path: Path) -> FigureFile | None:
    configs = collection.configs.get_column(CONFIG_COLUMN).to_list()
    extent = (
        collection.timeline.group_by(RUN_COLUMN)
        .agg(pl.col("time").max().alias("span"), pl.len().alias("samples"))
        .select(
            pl.col("span").max(),
            (pl.col("span") / (pl.col("samples") - 1).cast(pl.Float64))
            .filter(pl.col("samples") > 1)
            .min()
            .alias("spacing"),
        )
        .collect()
    )
    span, spacing = extent.row(0)
    if span is None:
        return None
    span = float(span)
    # Never finer than the sampling itself: a bin holds at least one sample of each run.
    width = max(span / TIMELINE_BINS, float(spacing or 0.0), 1.0)
    days = span > 3 * 86400.0
    unit, unit_seconds = ("days", 86400.0) if days else ("hours", 3600.0)
    binned = (
        collection.timeline.with_columns(((pl.col("time") // width) * width).alias("_bin"))
        # Per run first, then across seeds, so a seed with more samples in a bin does not weigh more.
        .group_by(CONFIG_COLUMN, RUN_COLUMN, "_bin")
        .agg(pl.col("allocated_fraction").mean(), pl.col("fragmented_gpus").cast(pl.Float64).mean())
        .group_by(CONFIG_COLUMN, "_bin")
        .agg(pl.col("allocated_fraction").mean(), pl.col("fragmented_gpus").mean())
        .sort(CONFIG_COLUMN, "_bin")
        .with_columns(pl.col(CONFIG_COLUMN).cast(pl.String))
        .collect()
    )
    parts = binned.partition_by(CONFIG_COLUMN, as_dict=True, include_key=False)
    fig = _new_figure(6.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    for i, config in enumerate(configs):
        part = parts.get((config,))
        if part is None:
            continue
        t = part.get_column("_bin").to_numpy() / unit_seconds
        colour, style = colours(len(configs))[i], _linestyle(i, len(configs))
        allocated = part.get_column("allocated_fraction").to_numpy() * 100.0
        top.plot(t, allocated, label=config, linewidth=1.2, color=colour, linestyle=style)
        bottom.plot(
            t, part.get_column("fragmented_gpus").to_numpy(), linewidth=1.2, color=colour, linestyle=style
        )
    top.set_ylabel("GPUs allocated (%)")
    top.set_ylim(0.0, 105.0)
    top.set_title("GPU allocation and fragmentation over time")
    bottom.set_ylabel("fragmented GPUs")
    bottom.set_ylim(bottom=0.0)
    bottom.set_xlabel(f"simulated time ({unit})")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    _legend(fig, top, len(configs))
    save_png(fig, path)
    return FigureFile(
        path,
        "GPU allocation and fragmentation over time",
        f"Share of GPU capacity allocated and number of fragmented GPUs, mean of seeds per "
        f"{_duration(width)} bin.",
    )


def _duration(seconds: float) -> str:
    if seconds >= 86400.0:
        return f"{seconds / 86400.0:.3g}-day"
    if seconds >= 3600.0:
        return f"{seconds / 3600.0:.3g}-hour"
    if seconds >= 60.0:
        return f"{seconds / 60.0:.3g}-minute"
    return f"{seconds:.3g}-second"


def _queue_figure(collection: Collection, path: Path) -> FigureFile | None:
    queue = pl.col("queue").fill_null("(none)")
    if collection.jobs.select(queue.n_unique()).collect().item() < 2:
        return None
    configs = collection.configs.get_column(CONFIG_COLUMN).to_list()
    per_run = (
        collection.jobs.with_columns(queue.alias("queue"))
        .group_by(CONFIG_COLUMN, RUN_COLUMN, "queue")
        .agg(
            ((pl.col("gpus") * pl.col("run_time")).sum() / 3600.0).alias("gpu_hours"),
            (pl.col("wait_time").sum() / 3600.0).alias("wait_sum"),
            pl.col("wait_time").count().alias("started"),
        )
        .with_columns(pl.col(CONFIG_COLUMN).cast(pl.String), pl.col(RUN_COLUMN).cast(pl.String))
        .collect()
    )
    order = (
        per_run.group_by("queue")
        .agg(pl.col("gpu_hours").sum())
        .sort("gpu_hours", "queue", descending=[True, False])
        .get_column("queue")
        .to_list()
    )
    shown = order[:MAX_QUEUES] if len(order) <= MAX_QUEUES else order[: MAX_QUEUES - 1]
    grouped = (
        per_run.with_columns(
            pl.when(pl.col("queue").is_in(shown))
            .then(pl.col("queue"))
            .otherwise(pl.lit("other"))
            .alias("queue")
        )
        .group_by(CONFIG_COLUMN, RUN_COLUMN, "queue")
        .agg(pl.col("gpu_hours").sum(), pl.col("wait_sum").sum(), pl.col("started").sum())
        .with_columns((pl.col("wait_sum") / pl.col("started")).alias("wait_mean"))
        .group_by(CONFIG_COLUMN, "queue")
        .agg(pl.col("gpu_hours").mean(), pl.col("wait_mean").mean())
    )
    queues = [*shown, "other"] if len(order) > len(shown) else shown
    fig = _new_figure(6.4)
    top, bottom = fig.subplots(2, 1, sharex=True)
    x = np.arange(len(queues), dtype=np.float64)
    width = 0.8 / max(len(configs), 1)
    for i, config in enumerate(configs):
        part = grouped.filter(pl.col(CONFIG_COLUMN) == config)
        lookup = {q: (g, w) for q, g, w in part.select("queue", "gpu_hours", "wait_mean").iter_rows()}
        hours = np.array([lookup.get(q, (0.0, None))[0] or 0.0 for q in queues], dtype=np.float64)
        waits = np.array([lookup.get(q, (0.0, None))[1] or np.nan for q in queues], dtype=np.float64)
        offset = x - 0.4 + width * (i + 0.5)
        colour = colours(len(configs))[i]
        top.bar(offset, hours, width, label=config, color=colour)
        bottom.bar(offset, waits, width, color=colour)
    top.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    top.set_ylabel("GPU-hours per run")
    top.set_title("Per-queue GPU usage and mean wait")
    bottom.set_ylabel("mean wait (h)")
    bottom.set_xticks(
        x, queues, rotation=30 if len(queues) > 5 else 0, ha="right" if len(queues) > 5 else "center"
    )
    bottom.set_xlabel("queue")
    for ax in (top, bottom):
        ax.grid(True, axis="y", alpha=0.3)
    _legend(fig, top, len(configs))
    save_png(fig, path)
    return FigureFile(
        path,
        "Per-queue GPU usage and mean wait",
        "GPU-hours of finished jobs and mean wait of started jobs per queue, mean over seeds"
        + (f"; queues beyond the {len(shown)} largest are summed as 'other'." if "other" in queues else "."),
    )


def make_figures(collection: Collection, out_dir: Path) -> list[FigureFile]:
    """Draw and save every figure that the runs have data for.

    Figure files this module owns that no longer apply (a queue figure from an
    earlier report of multi-queue runs) are removed, so the folder matches the report.
    """
    out_dir = Path(out_dir)
    drawn = [
        _cdf_figure(collection, "wait_time", pl.lit(True), "Wait time", out_dir / "wait_cdf.png"),
        _cdf_figure(
            collection, "jct", pl.col("state") == "finished", "Job completion time", out_dir / "jct_cdf.png"
        ),
        _timeline_figure(collection, out_dir / "timeline.png"),
        _queue_figure(collection, out_dir / "queues.png"),
    ]
    figures = [f for f in drawn if f is not None]
    kept = {f.path.name for f in figures}
    for name in FIGURE_FILES:
        if name not in kept:
            (out_dir / name).unlink(missing_ok=True)
    return figures


__all__ = ["FIGURE_FILES", "FigureFile", "colours", "make_figures", "save_png"]
