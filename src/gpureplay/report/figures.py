"""Figures of a comparison report, drawn with matplotlib's Agg renderer and saved as PNG.

Figures compare configurations the way the sentences do: one panel per
*setting* (trace, cluster and whatever else is held equal: runs on different
traces are never drawn on one axis), and within a panel one curve per
*treatment* (the scheduler, or what else varies), labelled by the keys that
differ only. A treatment keeps its style in every panel and figure; styles
combine ten colours with line styles (and, past forty, markers), so no two
treatments look alike. The legend sits below the axes, inside the image,
with as many columns as fit and the figure grown to hold its rows.

Runs of one configuration (its seeds) are pooled: CDFs pool the jobs of
all seeds, timelines average the seeds at each time bin, per-queue bars show the
mean over seeds.

- Wait-time and JCT CDFs on a log time axis, the usual view of scheduling delay
  since Tiresias (NSDI'19) and Themis (NSDI'20): the y value is the fraction of
  *all* jobs, so a curve that stays below 1 shows jobs that never started or
  never finished. Waits under one second are drawn at one second (log axis).
  A panel where no job waited says so instead of drawing an empty frame.
- GPU allocation and fragmented GPUs over time (FGD, ATC'23, reports
  fragmentation this way). A run with a single sample is stated, not drawn.
- GPU-hours and mean wait per queue, one panel per setting, when a setting
  has more than one queue.
- Under a queue model (Kueue quotas), each large queue's GPU usage against its
  nominal quota over time: where a queue borrows, and which queues wait while
  under their quota (the view of Kueue's own per-ClusterQueue dashboards).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import StrMethodFormatter

from gpureplay.report.collect import CONFIG_COLUMN, RUN_COLUMN, Collection
from gpureplay.report.stats import baselines

#: Largest number of points drawn per CDF curve (quantiles of the pooled values).
CDF_POINTS = 1500

#: Largest number of time bins drawn per timeline curve.
TIMELINE_BINS = 400

#: Most queues drawn one by one per panel; the rest are summed into "other".
MAX_QUEUES = 12

#: Queues stacked in the usage figure (the rest summed as "other") and configurations drawn in it.
MAX_STACKED = 10
MAX_USAGE_PANELS = 6

#: Queues drawn side by side in the quota figure (the largest by usage) and settings stacked in it.
MAX_QUOTA_QUEUES = 4
MAX_QUOTA_SETTINGS = 3

#: Shortest time drawn on log axes, seconds.
TIME_FLOOR = 1.0

#: Dots per inch of saved figures (8 x 4.5 in -> 880 x 495 px).
DPI = 110

#: Width of a one-panel figure and of each panel beside others, inches; most panels side by side.
WIDTH = 8.0
PANEL_WIDTH = 4.6
MAX_COLUMNS = 3

#: Font size of legends, points, and the height of one legend row, inches.
LEGEND_FONT = 8.0
LEGEND_ROW = 0.2

#: Names of the figure files this module writes.
FIGURE_FILES: tuple[str, ...] = (
    "wait_cdf.png",
    "jct_cdf.png",
    "timeline.png",
    "queues.png",
    "queue_usage.png",
    "quota_usage.png",
    "preemption.png",
    "gpu_busy.png",
)

LineStyle = Literal["-", "--", "-.", ":"]
_LINESTYLES: tuple[LineStyle, ...] = ("-", "--", "-.", ":")
_MARKERS = ("", "o", "s", "^", "D", "v")
_HATCHES = ("", "//", "..", "xx", "\\\\", "++")
_PALETTE = 10


@dataclass(frozen=True)
class FigureFile:
    """A saved figure: where it is, its title and a one-line caption."""

    path: Path
    title: str
    caption: str


@dataclass(frozen=True)
class Drawn:
    """A drawn figure not yet saved: the figure, its file name, title and caption."""

    figure: Figure
    name: str
    title: str
    caption: str


@dataclass(frozen=True)
class Style:
    """How one treatment is drawn: colour, line style, marker (lines) and hatch (bars)."""

    colour: tuple[float, float, float, float]
    linestyle: LineStyle
    marker: str
    hatch: str
    width: float = 1.6


def styles(n: int) -> list[Style]:
    """``n`` styles, no two alike: ten colours, then line styles (hatches for bars), then markers.

    Examples
    --------
    >>> s = styles(18)
    >>> len({(x.colour, x.linestyle, x.marker) for x in s}), s[0].linestyle, s[12].linestyle
    (18, '-', '--')
    """
    palette = [colormaps["tab10"](i) for i in range(_PALETTE)]
    out: list[Style] = []
    for i in range(n):
        variant = i // _PALETTE
        out.append(
            Style(
                colour=palette[i % _PALETTE],
                linestyle=_LINESTYLES[variant % len(_LINESTYLES)],
                marker=_MARKERS[(variant // len(_LINESTYLES)) % len(_MARKERS)],
                hatch=_HATCHES[variant % len(_HATCHES)],
                # Earlier curves are drawn wider, so a curve drawn later on top of an equal one
                # (two schedulers that place alike) leaves its edges showing.
                width=2.6 - 1.4 * i / (n - 1) if n > 1 else 1.6,
            )
        )
    return out


@dataclass(frozen=True)
class Layout:
    """Which panel each configuration is drawn in and how its curve is named and styled.

    Attributes
    ----------
    panels
        Panel titles in order ("" when there is one panel).
    panel_of
        Configuration label -> panel title.
    name_of
        Configuration label -> legend entry (the treatment keys only).
    names
        Legend entries in order; one style each.
    style_of
        Legend entry -> its style.
    """

    panels: list[str]
    panel_of: dict[str, str]
    name_of: dict[str, str]
    names: list[str]
    style_of: dict[str, Style]

    def configs_in(self, panel: str, order: Sequence[str]) -> list[str]:
        """The configurations of ``panel``, in report order."""
        return [c for c in order if self.panel_of[c] == panel]


def layout(collection: Collection) -> Layout:
    """Panels by setting (what sentences hold equal), curves by treatment (what they compare)."""
    table = baselines(collection).select(CONFIG_COLUMN, "subject", "setting")
    panel_of: dict[str, str] = {}
    name_of: dict[str, str] = {}
    for config, subject, setting in table.iter_rows():
        panel_of[config] = (setting or "").strip().removeprefix("on ")
        name_of[config] = subject or config
    panels = list(dict.fromkeys(panel_of.values()))
    if len(panels) == 1:
        panel_of = dict.fromkeys(panel_of, "")
        panels = [""]
    names = list(dict.fromkeys(name_of[c] for c in table.get_column(CONFIG_COLUMN).to_list()))
    return Layout(panels, panel_of, name_of, names, dict(zip(names, styles(len(names)), strict=True)))


def _grid(n: int) -> tuple[int, int]:
    cols = min(n, MAX_COLUMNS)
    return math.ceil(n / cols), cols


def _legend_rows(names: Sequence[str], width: float) -> tuple[int, int]:
    """Columns and rows of a legend of ``names`` across ``width`` inches at LEGEND_FONT."""
    if len(names) <= 1:
        return 0, 0
    # An average character is about 0.55 em wide; the handle and the gaps take about 4 em.
    entry = (max(len(n) for n in names) * 0.55 + 4.0) * LEGEND_FONT / 72.0
    cols = max(1, min(len(names), int((width - 0.3) // entry)))
    return cols, math.ceil(len(names) / cols)


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _figure_for(lay: Layout, panel_height: float, blocks: int = 1) -> tuple[Figure, int, int]:
    """A figure for every panel (``blocks`` stacked axes each) with room for the legend below."""
    rows, cols = _grid(len(lay.panels))
    width = WIDTH if cols == 1 else PANEL_WIDTH * cols
    _, legend_rows = _legend_rows(lay.names, width)
    height = panel_height * rows * blocks + 0.6 + LEGEND_ROW * legend_rows
    return _new_figure(width, height), rows, cols


def _legend(fig: Figure, lay: Layout, kind: str = "line") -> None:
    if len(lay.names) <= 1:
        return
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Line2D | Patch] = []
    for name in lay.names:
        style = lay.style_of[name]
        if kind == "bar":
            handles.append(Patch(facecolor=style.colour, hatch=style.hatch, edgecolor="white", label=name))
        else:
            handles.append(
                Line2D(
                    [],
                    [],
                    color=style.colour,
                    linestyle=style.linestyle,
                    marker=style.marker or None,
                    linewidth=style.width,
                    label=name,
                )
            )
    cols, _ = _legend_rows(lay.names, fig.get_figwidth())
    fig.legend(handles=handles, loc="outside lower center", ncols=cols, fontsize=LEGEND_FONT, frameon=False)


def save_png(fig: Figure, path: Path) -> None:
    """Save ``fig`` as PNG through a temporary file renamed into place."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        # No "Software" chunk: it would carry a URL into a report that must name none.
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _say(ax: Axes, text: str) -> None:
    """Write ``text`` where a panel has nothing to draw, with no axes to misread."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=10, wrap=True)


def _panel_title(ax: Axes, title: str) -> None:
    if title:
        ax.set_title(title, fontsize=10)


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


def _thin_line(style: Style, points: int) -> dict[str, object]:
    """Plot options for a configuration's binned time series: its style, thinner, about 8 markers."""
    return {
        "linewidth": style.width * 0.75,
        "color": style.colour,
        "linestyle": style.linestyle,
        "marker": style.marker or None,
        "markevery": max(1, points // 8),
        "markersize": 3,
    }


def _cdf_values(collection: Collection, column: str, state: pl.Expr) -> pl.DataFrame:
    rank, count = pl.int_range(pl.len()).over(CONFIG_COLUMN), pl.len().over(CONFIG_COLUMN)
    step = (count // CDF_POINTS).clip(lower_bound=1)
    # Sorted per configuration, then every step-th value (and the last): at most ~CDF_POINTS
    # points a curve leave the query, however many jobs a sweep holds.
    return (
        collection.jobs.filter(state & pl.col(column).is_not_null())
        .select(CONFIG_COLUMN, pl.col(column).alias("_raw"), pl.col(column).clip(lower_bound=TIME_FLOOR))
        .sort(CONFIG_COLUMN, column)
        .with_columns(rank.alias("_rank"), count.alias("_count"), pl.col("_raw").max().over(CONFIG_COLUMN))
        .filter((pl.col("_rank") % step == 0) | (pl.col("_rank") == pl.col("_count") - 1))
        .with_columns(pl.col(CONFIG_COLUMN).cast(pl.String))
        .collect()
    )


def _never_started(never: dict[str, int]) -> str:
    """ ", N jobs never started (in K of M configurations)", or nothing when every admitted job started."""
    total = sum(never.values())
    if not total:
        return ""
    hit = sum(1 for n in never.values() if n)
    jobs = "1 job" if total == 1 else f"{total:,} jobs"
    where = "" if len(never) == 1 else f" (in {hit} of {len(never)} configurations)"
    return f"; {jobs} never started{where}"


def cdf_figure(
    collection: Collection, lay: Layout, column: str, state: pl.Expr, what: str, name: str
) -> Drawn | str:
    """The CDF figure, or a sentence saying why there is none."""
    configs = collection.configs.get_column(CONFIG_COLUMN).to_list()
    totals = dict(
        collection.jobs.group_by(CONFIG_COLUMN)
        .agg(pl.len())
        .select(pl.col(CONFIG_COLUMN).cast(pl.String), "len")
        .collect()
        .iter_rows()
    )
    values = _cdf_values(collection, column, state)
    waits = column == "wait_time"
    # Admitted jobs that never started (a horizon cut them off, or they deadlocked): a curve of started
    # jobs alone would hide them, so every sentence about waits counts them.
    never = dict(
        collection.runs.group_by(CONFIG_COLUMN)
        .agg(pl.col("never_started").fill_null(0).sum())
        .select(pl.col(CONFIG_COLUMN).cast(pl.String), "never_started")
        .iter_rows()
    )
    if values.height == 0:
        return f"{what} CDF: no job {'started' if waits else 'finished'} in any run{_never_started(never)}."
    # The largest raw value per configuration: zero means every job got there at once.
    largest = dict(values.group_by(CONFIG_COLUMN).agg(pl.col("_raw").max()).iter_rows())
    if waits and all((largest.get(c) or 0.0) <= 0.0 for c in configs):
        if not any(never.values()):
            return f"{what} CDF: no job waited in any run (every job started on arrival)."
        return f"{what} CDF: no started job waited in any run{_never_started(never)}."
    parts = values.partition_by(CONFIG_COLUMN, as_dict=True, include_key=False)
    fig, rows, cols = _figure_for(lay, 3.6)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, panel in zip(axes, lay.panels, strict=False):
        members = [c for c in lay.configs_in(panel, configs) if (c,) in parts]
        _panel_title(ax, panel)
        if not members:
            _say(ax, f"no job {'started' if waits else 'finished'}")
            continue
        if waits and all((largest.get(c) or 0.0) <= 0.0 for c in members):
            starved = sum(never.get(c, 0) for c in members)
            _say(
                ax,
                f"no started job waited\n({starved} never started)"
                if starved
                else "no job waited\n(every job started on arrival)",
            )
            continue
        for config in members:
            part = parts[(config,)]
            style = lay.style_of[lay.name_of[config]]
            x = part.get_column(column).to_numpy()
            # Fraction of all jobs at or below x: the curve ends below 1 when jobs never got there.
            y = (part.get_column("_rank").to_numpy() + 1.0) / float(totals[config])
            ax.step(
                x,
                y,
                where="post",
                linewidth=style.width,
                color=style.colour,
                linestyle=style.linestyle,
                marker=style.marker or None,
                markevery=max(1, len(x) // 8),
                markersize=4,
            )
        shown = pl.concat([parts[(c,)] for c in members]).get_column(column)
        human = _time_axis(ax, float(shown.min()), float(shown.max()))  # type: ignore[arg-type]
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel(f"{what.lower()} ({'' if human else 'seconds, '}log scale)", fontsize=9)
        ax.set_ylabel("fraction of all jobs", fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes[len(lay.panels) :]:
        ax.set_axis_off()
    fig.suptitle(f"{what}: cumulative distribution", fontsize=11)
    _legend(fig, lay)
    return Drawn(
        fig,
        name,
        f"{what} CDF",
        f"{what} per configuration, seeds pooled, one panel per setting; y is the fraction of all jobs, "
        "so a curve that stays below 1 shows jobs that never got there. Values under 1 s are drawn at 1 s.",
    )


def _window(collection: Collection, configs: Sequence[str]) -> tuple[float, float] | None:
    """The measurement window spanning the given configurations' runs (seconds), if they have one."""
    runs = collection.runs.filter(pl.col(CONFIG_COLUMN).is_in(list(configs)))
    start, end = runs.select(pl.col("window_start").min(), pl.col("window_end").max()).row(0)
    if start is None or end is None or not end > start:
        return None
    return float(start), float(end)


def _duration(seconds: float) -> str:
    if seconds >= 86400.0:
        return f"{seconds / 86400.0:.3g}-day"
    if seconds >= 3600.0:
        return f"{seconds / 3600.0:.3g}-hour"
    if seconds >= 60.0:
        return f"{seconds / 60.0:.3g}-minute"
    return f"{seconds:.3g}-second"


def _bin_width(sizes: pl.DataFrame) -> tuple[float, float]:
    """A panel's time span and bin width from its runs' ``span`` and ``samples``: :data:`TIMELINE_BINS` bins,
    never finer than the sampling itself (a bin holds at least one sample of each run)."""
    span = float(sizes.get_column("span").max())  # type: ignore[arg-type]
    spacing = float((sizes.get_column("span") / (sizes.get_column("samples") - 1)).min())  # type: ignore[arg-type]
    return span, max(span / TIMELINE_BINS, spacing, 1.0)


def _binned_means(
    timeline: pl.LazyFrame, shown: Sequence[str], width: float, columns: Sequence[str]
) -> dict[str, pl.DataFrame]:
    """Each shown configuration's ``columns`` averaged over time bins of ``width`` seconds (column ``_bin``).

    Per run first, then across seeds, so that a seed with more samples in a bin does not weigh more.
    A configuration without a sample is left out; the rest keep the order of ``shown``.
    """
    binned = (
        timeline.filter(pl.col(CONFIG_COLUMN).is_in(shown))
        .with_columns(((pl.col("time") // width) * width).alias("_bin"))
        .group_by(CONFIG_COLUMN, RUN_COLUMN, "_bin")
        .agg([pl.col(c).cast(pl.Float64).mean() for c in columns])
        .group_by(CONFIG_COLUMN, "_bin")
        .agg([pl.col(c).mean() for c in columns])
        .sort(CONFIG_COLUMN, "_bin")
        .collect()
    )
    parts = binned.partition_by(CONFIG_COLUMN, as_dict=True, include_key=False)
    return {config: parts[(config,)] for config in shown if (config,) in parts}


def timeline_figure(collection: Collection, lay: Layout) -> Drawn | str:
    configs = collection.configs.get_column(CONFIG_COLUMN).to_list()
    per_run = (
        collection.timeline.group_by(CONFIG_COLUMN, RUN_COLUMN)
        .agg(pl.col("time").max().alias("span"), pl.len().alias("samples"))
        .with_columns(pl.col(CONFIG_COLUMN).cast(pl.String))
        .collect()
    )
    if per_run.height == 0:
        return "GPU allocation over time: the runs have no timeline samples."
    drawable = per_run.filter(pl.col("samples") > 1)
    if drawable.height == 0:
        return (
            "GPU allocation over time: every run has a single timeline sample (the run is shorter than "
            "its sample interval), so there is no curve to draw; see the headline allocation instead."
        )
    drawn_configs = set(drawable.get_column(CONFIG_COLUMN).to_list())
    shaded = False
    fig, rows, cols = _figure_for(lay, 2.4, blocks=2)
    grid = fig.subplots(2 * rows, cols, squeeze=False)
    widths: list[float] = []
    for p, panel in enumerate(lay.panels):
        top, bottom = grid[2 * (p // cols), p % cols], grid[2 * (p // cols) + 1, p % cols]
        members = lay.configs_in(panel, configs)
        _panel_title(top, panel)
        shown = [c for c in members if c in drawn_configs]
        if not shown:
            single = collection.timeline.filter(pl.col(CONFIG_COLUMN).cast(pl.String).is_in(members)).select(
                pl.col("allocated_fraction").mean() * 100.0
            )
            value = single.collect().item()
            _say(top, f"one sample per run ({value:.1f}% allocated)" if value is not None else "no sample")
            bottom.set_axis_off()
            continue
        span, width = _bin_width(drawable.filter(pl.col(CONFIG_COLUMN).is_in(shown)))
        widths.append(width)
        days = span > 3 * 86400.0
        unit, unit_seconds = ("days", 86400.0) if days else ("hours", 3600.0)
        timeline = collection.timeline.with_columns(pl.col(CONFIG_COLUMN).cast(pl.String))
        parts = _binned_means(timeline, shown, width, ["allocated_fraction", "fragmented_gpus"])
        for config, part in parts.items():
            style = lay.style_of[lay.name_of[config]]
            t = part.get_column("_bin").to_numpy() / unit_seconds
            kwargs = _thin_line(style, len(t))
            top.plot(t, part.get_column("allocated_fraction").to_numpy() * 100.0, **kwargs)
            bottom.plot(t, part.get_column("fragmented_gpus").to_numpy(), **kwargs)
        # Head room above 100% for the window's label, clear of the curves.
        top.set_ylim(0.0, 115.0)
        top.set_yticks([0, 20, 40, 60, 80, 100])
        top.set_ylabel("GPUs allocated (%)", fontsize=9)
        bottom.set_ylim(bottom=0.0)
        bottom.set_ylabel("fragmented GPUs", fontsize=9)
        bottom.set_xlabel(f"simulated time ({unit})", fontsize=9)
        window = _window(collection, shown)
        for ax in (top, bottom):
            # Time starts at the first arrival: never a negative axis, even for a short run.
            ax.set_xlim(0.0, max(span / unit_seconds, 1e-9))
            ax.grid(True, alpha=0.3)
            if window is not None:
                ax.axvspan(window[0] / unit_seconds, window[1] / unit_seconds, color="0.5", alpha=0.08, lw=0)
        if window is not None:
            shaded = True
            top.text(
                window[0] / unit_seconds,
                113.0,
                " measurement window",
                fontsize=7,
                color="0.35",
                va="top",
                ha="left",
            )
        top.tick_params(labelbottom=False)
    for p in range(len(lay.panels), rows * cols):
        grid[2 * (p // cols), p % cols].set_axis_off()
        grid[2 * (p // cols) + 1, p % cols].set_axis_off()
    fig.suptitle("GPU allocation and fragmentation over time", fontsize=11)
    _legend(fig, lay)
    bins = ", ".join(sorted({_duration(w) for w in widths}))
    return Drawn(
        fig,
        "timeline.png",
        "GPU allocation and fragmentation over time",
        "Share of GPU capacity allocated and number of fragmented GPUs, one panel per setting, "
        f"mean of seeds per {bins} bin" + ("; the shaded span is the measurement window." if shaded else "."),
    )


def busy_figure(collection: Collection, lay: Layout) -> Drawn | None:
    """GPUs allocated against GPUs busy, and the GPUs' power, over time: one panel per setting.

    Busy is the timeline's ``busy_fraction`` (usage x GPUs over the cluster's GPUs,
    :mod:`gpureplay.results.gpu_usage`), drawn in each configuration's style; its allocation
    (``allocated_fraction``) is the faint line of the same colour. None when no run has the column (older
    versions) or every run has a single sample.
    """
    timeline = collection.timeline.with_columns(pl.col(CONFIG_COLUMN).cast(pl.String))
    per_run = (
        timeline.filter(pl.col("busy_fraction").is_not_null())
        .group_by(CONFIG_COLUMN, RUN_COLUMN)
        .agg(pl.col("time").max().alias("span"), pl.len().alias("samples"))
        .filter(pl.col("samples") > 1)
        .collect()
    )
    if per_run.height == 0:
        return None
    configs = collection.configs.get_column(CONFIG_COLUMN).to_list()
    drawn_configs = set(per_run.get_column(CONFIG_COLUMN).to_list())
    powered = False
    fig, rows, cols = _figure_for(lay, 2.4, blocks=2)
    grid = fig.subplots(2 * rows, cols, squeeze=False)
    for p, panel in enumerate(lay.panels):
        top, bottom = grid[2 * (p // cols), p % cols], grid[2 * (p // cols) + 1, p % cols]
        _panel_title(top, panel)
        shown = [c for c in lay.configs_in(panel, configs) if c in drawn_configs]
        if not shown:
            _say(top, "no usage samples")
            bottom.set_axis_off()
            continue
        span, width = _bin_width(per_run.filter(pl.col(CONFIG_COLUMN).is_in(shown)))
        unit, unit_seconds = ("days", 86400.0) if span > 3 * 86400.0 else ("hours", 3600.0)
        parts = _binned_means(timeline, shown, width, ["allocated_fraction", "busy_fraction", "power_w"])
        for config, part in parts.items():
            style = lay.style_of[lay.name_of[config]]
            t = part.get_column("_bin").to_numpy() / unit_seconds
            kwargs = _thin_line(style, len(t))
            top.plot(
                t,
                part.get_column("allocated_fraction").to_numpy() * 100.0,
                color=style.colour,
                lw=0.8,
                alpha=0.35,
            )
            top.plot(t, part.get_column("busy_fraction").to_numpy() * 100.0, **kwargs)
            watts = part.get_column("power_w")
            if watts.is_not_null().any():
                powered = True
                bottom.plot(t, watts.to_numpy() / 1000.0, **kwargs)
        top.set_ylim(0.0, 105.0)
        top.set_ylabel("GPUs busy (%)", fontsize=9)
        bottom.set_ylim(bottom=0.0)
        bottom.set_ylabel("GPU power (kW)", fontsize=9)
        bottom.set_xlabel(f"simulated time ({unit})", fontsize=9)
        for ax in (top, bottom):
            ax.set_xlim(0.0, max(span / unit_seconds, 1e-9))
            ax.grid(True, alpha=0.3)
        if not powered:
            _say(bottom, "no power figures for a GPU model of the cluster")
        top.tick_params(labelbottom=False)
    for p in range(len(lay.panels), rows * cols):
        grid[2 * (p // cols), p % cols].set_axis_off()
        grid[2 * (p // cols) + 1, p % cols].set_axis_off()
    fig.suptitle("What the GPUs did: busy against allocated, and power", fontsize=11)
    _legend(fig, lay)
    return Drawn(
        fig,
        "gpu_busy.png",
        "What the GPUs did: busy against allocated, and power",
        "Share of the cluster's GPUs busy (usage x GPUs; faint line: allocated) and the GPUs' power by the "
        "catalog's idle and TDP figures, one panel per setting, mean of seeds per time bin.",
    )


def preemption_figure(collection: Collection, lay: Layout) -> Drawn | None:
    """Evictions and the GPU-hours they cost, accumulated over time: one panel per setting.

    None when no run evicted anything (the report then has no preemption section).
    """
    configs = collection.configs.get_column(CONFIG_COLUMN).to_list()
    timeline = collection.timeline.with_columns(pl.col(CONFIG_COLUMN).cast(pl.String))
    totals = timeline.group_by(CONFIG_COLUMN).agg(pl.col("preemptions").max()).collect()
    evicting = set(totals.filter(pl.col("preemptions").fill_null(0) > 0).get_column(CONFIG_COLUMN).to_list())
    if not evicting:
        return None
    fig, rows, cols = _figure_for(lay, 2.2, blocks=2)
    grid = fig.subplots(2 * rows, cols, squeeze=False)
    for p, panel in enumerate(lay.panels):
        top, bottom = grid[2 * (p // cols), p % cols], grid[2 * (p // cols) + 1, p % cols]
        members = lay.configs_in(panel, configs)
        _panel_title(top, panel)
        span = (
            timeline.filter(pl.col(CONFIG_COLUMN).is_in(members))
            .select(pl.col("time").max())
            .collect()
            .item()
        )
        if span is None or span <= 0:
            _say(top, "no timeline samples")
            bottom.set_axis_off()
            continue
        width = max(float(span) / TIMELINE_BINS, 1.0)
        days = span > 3 * 86400.0
        unit, unit_seconds = ("days", 86400.0) if days else ("hours", 3600.0)
        binned = (
            timeline.filter(pl.col(CONFIG_COLUMN).is_in(members))
            .with_columns(((pl.col("time") // width) * width).alias("_bin"))
            # Cumulative counters: the last sample of each bin, per run, then the mean of seeds.
            .group_by(CONFIG_COLUMN, RUN_COLUMN, "_bin")
            .agg(pl.col("preemptions").max().cast(pl.Float64), (pl.col("lost_gpu_seconds").max() / 3600.0))
            .group_by(CONFIG_COLUMN, "_bin")
            .agg(pl.col("preemptions").mean(), pl.col("lost_gpu_seconds").mean())
            .sort(CONFIG_COLUMN, "_bin")
            .collect()
        )
        parts = binned.partition_by(CONFIG_COLUMN, as_dict=True, include_key=False)
        for config in members:
            part = parts.get((config,))
            if part is None:
                continue
            style = lay.style_of[lay.name_of[config]]
            t = part.get_column("_bin").to_numpy() / unit_seconds
            kwargs = _thin_line(style, len(t))
            top.plot(t, part.get_column("preemptions").fill_null(0.0).to_numpy(), **kwargs)
            bottom.plot(t, part.get_column("lost_gpu_seconds").fill_null(0.0).to_numpy(), **kwargs)
        top.set_ylabel("evictions so far", fontsize=9)
        bottom.set_ylabel("lost GPU-hours so far", fontsize=9)
        bottom.set_xlabel(f"simulated time ({unit})", fontsize=9)
        for ax in (top, bottom):
            ax.set_xlim(0.0, float(span) / unit_seconds)
            ax.set_ylim(bottom=0.0)
            ax.grid(True, alpha=0.3)
        top.tick_params(labelbottom=False)
    for p in range(len(lay.panels), rows * cols):
        grid[2 * (p // cols), p % cols].set_axis_off()
        grid[2 * (p // cols) + 1, p % cols].set_axis_off()
    fig.suptitle("Evictions and the GPU-hours they cost", fontsize=11)
    _legend(fig, lay)
    return Drawn(
        fig,
        "preemption.png",
        "Evictions and the GPU-hours they cost",
        "Evictions by priority preemption and GPU-hours lost to them (work rolled back to the last "
        "checkpoint, restart overheads, termination grace), accumulated over simulated time; mean of seeds.",
    )


def queue_figure(collection: Collection, lay: Layout) -> Drawn | None:
    queue = pl.col("queue").fill_null("(none)")
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
        .with_columns(pl.col(CONFIG_COLUMN).replace_strict(lay.panel_of).alias("_panel"))
    )
    # Queues belong to a trace: only settings with more than one queue get a panel.
    panels = [
        p for p in lay.panels if per_run.filter(pl.col("_panel") == p).get_column("queue").n_unique() > 1
    ]
    if not panels:
        return None
    fig = _new_figure(WIDTH if len(panels) == 1 else WIDTH + 1.0, 1.0)
    _, legend_rows = _legend_rows(lay.names, fig.get_figwidth())
    fig.set_figheight(4.6 * len(panels) + 0.6 + LEGEND_ROW * legend_rows)
    grid = fig.subplots(2 * len(panels), 1, squeeze=False)[:, 0]
    summed = False
    for i, panel in enumerate(panels):
        top, bottom = grid[2 * i], grid[2 * i + 1]
        members = lay.configs_in(panel, configs)
        mine = per_run.filter(pl.col("_panel") == panel)
        order = (
            mine.group_by("queue")
            .agg(pl.col("gpu_hours").sum())
            .sort("gpu_hours", "queue", descending=[True, False])
            .get_column("queue")
            .to_list()
        )
        shown = order[:MAX_QUEUES] if len(order) <= MAX_QUEUES else order[: MAX_QUEUES - 1]
        queues = [*shown, "other"] if len(order) > len(shown) else shown
        summed = summed or "other" in queues
        grouped = (
            mine.with_columns(
                pl.when(pl.col("queue").is_in(shown)).then(pl.col("queue")).otherwise(pl.lit("other"))
            )
            .group_by(CONFIG_COLUMN, RUN_COLUMN, "queue")
            .agg(pl.col("gpu_hours").sum(), pl.col("wait_sum").sum(), pl.col("started").sum())
            .with_columns((pl.col("wait_sum") / pl.col("started")).alias("wait_mean"))
            .group_by(CONFIG_COLUMN, "queue")
            .agg(pl.col("gpu_hours").mean(), pl.col("wait_mean").mean())
        )
        x = np.arange(len(queues), dtype=np.float64)
        width = 0.8 / max(len(members), 1)
        for j, config in enumerate(members):
            part = grouped.filter(pl.col(CONFIG_COLUMN) == config)
            lookup = {q: (g, w) for q, g, w in part.select("queue", "gpu_hours", "wait_mean").iter_rows()}
            hours = np.array([lookup.get(q, (0.0, None))[0] or 0.0 for q in queues], dtype=np.float64)
            waits = np.array([lookup.get(q, (0.0, None))[1] or np.nan for q in queues], dtype=np.float64)
            offset = x - 0.4 + width * (j + 0.5)
            style = lay.style_of[lay.name_of[config]]
            bar = {"color": style.colour, "hatch": style.hatch or None, "edgecolor": "white", "linewidth": 0}
            top.bar(offset, hours, width, **bar)
            bottom.bar(offset, waits, width, **bar)
        top.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        top.set_ylabel("GPU-hours per run", fontsize=9)
        _panel_title(top, panel)
        bottom.set_ylabel("mean wait (h)", fontsize=9)
        rotate = len(queues) > 5
        bottom.set_xticks(
            x, queues, rotation=30 if rotate else 0, ha="right" if rotate else "center", fontsize=8
        )
        top.set_xticks(x, [""] * len(queues))
        for ax in (top, bottom):
            ax.grid(True, axis="y", alpha=0.3)
            ax.set_xlim(-0.6, len(queues) - 0.4)
    fig.suptitle("Per-queue GPU usage and mean wait", fontsize=11)
    _legend(fig, lay, "bar")
    return Drawn(
        fig,
        "queues.png",
        "Per-queue GPU usage and mean wait",
        "GPU-hours of finished jobs and mean wait of started jobs per queue, mean over seeds, one panel "
        "per setting with more than one queue"
        + (f"; queues beyond the {MAX_QUEUES - 1} largest are summed as 'other'." if summed else "."),
    )


def queue_usage_figure(collection: Collection) -> Drawn | None:
    """GPUs each queue's placed pods request over time, stacked, one panel per configuration.

    From ``queues.parquet`` (runs written before it existed are left out); only
    drawn when some run has more than one queue.
    """
    samples = collection.queue_samples
    if samples is None:
        return None
    samples = samples.with_columns(pl.col(CONFIG_COLUMN).cast(pl.String))
    sizes = (
        samples.group_by(CONFIG_COLUMN, RUN_COLUMN)
        .agg(
            pl.col("queue").n_unique().alias("queues"),
            pl.col("time").max().alias("span"),
            pl.col("time").n_unique().alias("samples"),
        )
        .collect()
    )
    if sizes.height == 0 or int(sizes.get_column("queues").max()) < 2 or int(sizes["samples"].max()) < 2:  # type: ignore[arg-type]
        return None
    configs = [
        c for c in collection.configs.get_column(CONFIG_COLUMN).to_list() if c in set(sizes[CONFIG_COLUMN])
    ]
    shown = configs[:MAX_USAGE_PANELS]
    order = (
        samples.filter(pl.col(CONFIG_COLUMN).is_in(shown))
        .group_by("queue")
        .agg(pl.col("usage_gpu").sum())
        .sort("usage_gpu", "queue", descending=[True, False])
        .collect()
        .get_column("queue")
        .to_list()
    )
    top = order[:MAX_STACKED] if len(order) <= MAX_STACKED else order[: MAX_STACKED - 1]
    names = [*top, "other"] if len(order) > len(top) else top
    span, width, unit, unit_seconds = _time_bins(sizes.filter(pl.col(CONFIG_COLUMN).is_in(shown)))
    binned = (
        samples.filter(pl.col(CONFIG_COLUMN).is_in(shown))
        .with_columns(
            pl.when(pl.col("queue").is_in(top))
            .then(pl.col("queue"))
            .otherwise(pl.lit("other"))
            .alias("queue"),
            ((pl.col("time") // width) * width).alias("_bin"),
        )
        # Sum the queues folded into "other" at each sample, then average per run and bin, then over seeds.
        .group_by(CONFIG_COLUMN, RUN_COLUMN, "queue", "time", "_bin")
        .agg(pl.col("usage_gpu").sum())
        .group_by(CONFIG_COLUMN, RUN_COLUMN, "queue", "_bin")
        .agg(pl.col("usage_gpu").mean())
        .group_by(CONFIG_COLUMN, "queue", "_bin")
        .agg(pl.col("usage_gpu").mean())
        .collect()
    )
    cols = min(len(shown), 2)
    rows = math.ceil(len(shown) / cols)
    fig = _new_figure(
        WIDTH if cols == 1 else 2 * PANEL_WIDTH, 2.6 * rows + 0.8 + LEGEND_ROW * math.ceil(len(names) / 6)
    )
    grid = fig.subplots(rows, cols, squeeze=False)
    colours = [colormaps["tab20"](k) for k in range(20)]
    bins = np.sort(binned.get_column("_bin").unique().to_numpy())
    for i, config in enumerate(shown):
        ax = grid[i // cols, i % cols]
        part = binned.filter(pl.col(CONFIG_COLUMN) == config)
        stack = []
        for name in names:
            one = part.filter(pl.col("queue") == name)
            lookup = dict(
                zip(one.get_column("_bin").to_list(), one.get_column("usage_gpu").to_list(), strict=True)
            )
            stack.append(np.array([lookup.get(b, 0.0) for b in bins], dtype=np.float64))
        ax.stackplot(
            bins / unit_seconds, *stack, colors=[colours[k % len(colours)] for k in range(len(names))], lw=0
        )
        _panel_title(ax, config)
        ax.set_xlim(0.0, max(span / unit_seconds, 1e-9))
        ax.set_ylim(bottom=0.0)
        ax.grid(True, alpha=0.3)
        ax.set_ylabel("GPUs requested", fontsize=9)
        ax.set_xlabel(f"simulated time ({unit})", fontsize=9)
    for p in range(len(shown), rows * cols):
        grid[p // cols, p % cols].set_axis_off()
    handles = [Patch(color=colours[k % len(colours)], label=name) for k, name in enumerate(names)]
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(len(names), 6),
        fontsize=LEGEND_FONT,
        frameon=False,
    )
    fig.suptitle("GPU usage by queue over time", fontsize=11)
    left = (
        f"; the first {MAX_USAGE_PANELS} of {len(configs)} configurations"
        if len(configs) > len(shown)
        else ""
    )
    folded = (
        f"; queues beyond the {MAX_STACKED - 1} largest are summed as 'other'" if "other" in names else ""
    )
    return Drawn(
        fig,
        "queue_usage.png",
        "GPU usage by queue over time",
        "GPUs each queue's placed pods request, and what Kueue's admissions by quota reserve for pods not"
        " yet placed (queues.parquet usage_gpu), stacked, one panel per configuration, "
        f"mean of seeds per {_duration(width)} bin{left}{folded}.",
    )


def _time_bins(sizes: pl.DataFrame) -> tuple[float, float, str, float]:
    """``(span, bin width, unit, unit seconds)`` of timelines of runs ``sizes`` (``span``, ``samples``)."""
    span = float(sizes.get_column("span").max())  # type: ignore[arg-type]
    spacing = float((sizes.get_column("span") / (sizes.get_column("samples") - 1).clip(1)).min())  # type: ignore[arg-type]
    unit, unit_seconds = ("days", 86400.0) if span > 3 * 86400.0 else ("hours", 3600.0)
    return span, max(span / TIMELINE_BINS, spacing, 1.0), unit, unit_seconds


def quota_figure(collection: Collection, lay: Layout) -> Drawn | None:
    """Each large queue's GPU usage against its nominal quota over time, under a queue model.

    One row of panels per setting (at most ``MAX_QUOTA_SETTINGS``), one panel per queue (the
    ``MAX_QUOTA_QUEUES`` with most GPU usage in that setting), one solid curve per treatment (its usage,
    mean of seeds per time bin) and a dashed one of the same style (its nominal quota; under Volcano its
    deserved share, which moves with the queues' requests). Usage above the dashed line is borrowed from
    the cohort (Kueue ``borrowingLimit``) or kept after the deserved share fell (Volcano); a queue waiting
    while below it is held back by placement or by another queue's use (no preemption reclaims it).
    """
    samples = collection.queue_samples
    if samples is None:
        return None
    samples = samples.filter(pl.col("nominal_gpu").is_not_null()).with_columns(
        pl.col(CONFIG_COLUMN).cast(pl.String)
    )
    sizes = (
        samples.group_by(CONFIG_COLUMN, RUN_COLUMN)
        .agg(pl.col("time").max().alias("span"), pl.col("time").n_unique().alias("samples"))
        .collect()
    )
    if sizes.height == 0 or int(sizes["samples"].max()) < 2:  # type: ignore[arg-type]
        return None
    configs = [
        c for c in collection.configs.get_column(CONFIG_COLUMN).to_list() if c in set(sizes[CONFIG_COLUMN])
    ]
    settings = [p for p in lay.panels if any(lay.panel_of[c] == p for c in configs)]
    shown_settings = settings[:MAX_QUOTA_SETTINGS]
    span, width, unit, unit_seconds = _time_bins(sizes)
    binned = (
        samples.with_columns(((pl.col("time") // width) * width).alias("_bin"))
        .group_by(CONFIG_COLUMN, RUN_COLUMN, "queue", "_bin")
        .agg(pl.col("usage_gpu").mean(), pl.col("nominal_gpu").mean())
        .group_by(CONFIG_COLUMN, "queue", "_bin")
        .agg(pl.col("usage_gpu").mean(), pl.col("nominal_gpu").mean())
        .sort("_bin")
        .collect()
        .with_columns(pl.col(CONFIG_COLUMN).replace_strict(lay.panel_of).alias("_setting"))
    )
    columns = min(MAX_QUOTA_QUEUES, int(binned.get_column("queue").n_unique()))
    fig = _new_figure(PANEL_WIDTH * min(columns, 2) if columns <= 2 else 3.4 * columns, 1.0)
    # The legend names the treatments drawn (runs without a queue model have no quota to show).
    drawn = {lay.name_of[c] for c in configs}
    drawn_lay = replace(lay, names=[n for n in lay.names if n in drawn])
    _, legend_rows = _legend_rows(drawn_lay.names, fig.get_figwidth())
    fig.set_figheight(2.6 * len(shown_settings) + 0.9 + LEGEND_ROW * legend_rows)
    grid = fig.subplots(len(shown_settings), columns, squeeze=False)
    for row, setting in enumerate(shown_settings):
        mine = binned.filter(pl.col("_setting") == setting)
        queues = (
            mine.group_by("queue")
            .agg(pl.col("usage_gpu").sum())
            .sort("usage_gpu", "queue", descending=[True, False])
            .get_column("queue")
            .to_list()[:columns]
        )
        for col in range(columns):
            ax = grid[row, col]
            if col >= len(queues):
                ax.set_axis_off()
                continue
            queue = queues[col]
            for config in lay.configs_in(setting, configs):
                part = mine.filter((pl.col(CONFIG_COLUMN) == config) & (pl.col("queue") == queue))
                if part.height == 0:
                    continue
                style = lay.style_of[lay.name_of[config]]
                x = part.get_column("_bin").to_numpy() / unit_seconds
                ax.plot(x, part.get_column("usage_gpu").to_numpy(), color=style.colour, lw=style.width * 0.7)
                ax.plot(x, part.get_column("nominal_gpu").to_numpy(), color=style.colour, lw=1.0, ls="--")
            ax.set_title(f"{setting}\nqueue {queue}" if setting else f"queue {queue}", fontsize=9)
            # Each setting on its own time span (a scaled load ends sooner).
            row_span = min(span, float(mine.get_column("_bin").max()) + width)  # type: ignore[arg-type]
            ax.set_xlim(0.0, max(row_span / unit_seconds, 1e-9))
            ax.set_ylim(bottom=0.0)
            ax.grid(True, alpha=0.3)
            if col == 0:
                ax.set_ylabel("GPUs", fontsize=9)
            if row == len(shown_settings) - 1:
                ax.set_xlabel(f"simulated time ({unit})", fontsize=9)
    fig.suptitle("GPU usage against nominal quota / deserved share, by queue", fontsize=11)
    _legend(fig, drawn_lay)
    left = (
        f"; the first {MAX_QUOTA_SETTINGS} of {len(settings)} settings"
        if len(settings) > len(shown_settings)
        else ""
    )
    return Drawn(
        fig,
        "quota_usage.png",
        "GPU usage against nominal quota / deserved share, by queue",
        f"Runs under a queue model only: the {columns} queues with most GPU usage per setting; solid: GPUs "
        "the queue's placed pods request, dashed: its nominal quota (Kueue) or deserved share (Volcano; "
        f"queues.parquet nominal_gpu), mean of seeds per {_duration(width)} bin{left}. Above the dashed line "
        "a Kueue queue borrows its cohort's unused quota; a Volcano queue holds what it took before its "
        "deserved share fell.",
    )


def draw_figures(collection: Collection) -> list[Drawn | str]:
    """Every figure of the report, drawn but not saved, or a sentence saying why one is not drawn."""
    lay = layout(collection)
    finished = pl.col("state") == "finished"
    drawn: list[Drawn | str | None] = [
        cdf_figure(collection, lay, "wait_time", pl.lit(True), "Wait time", "wait_cdf.png"),
        cdf_figure(collection, lay, "jct", finished, "Job completion time", "jct_cdf.png"),
        timeline_figure(collection, lay),
        busy_figure(collection, lay),
        preemption_figure(collection, lay),
        queue_figure(collection, lay),
        queue_usage_figure(collection),
        quota_figure(collection, lay),
    ]
    return [d for d in drawn if d is not None]


def make_figures(collection: Collection, out_dir: Path) -> tuple[list[FigureFile], list[str]]:
    """Draw and save every figure that the runs have data for.

    Returns the figures saved and, for those not drawn, a sentence saying why
    ("no job waited in any run"). Figure files this module owns that no longer
    apply (a queue figure from an earlier report of multi-queue runs) are
    removed, so the folder matches the report.
    """
    out_dir = Path(out_dir)
    figures: list[FigureFile] = []
    notes: list[str] = []
    for item in draw_figures(collection):
        if isinstance(item, str):
            notes.append(item)
            continue
        path = out_dir / item.name
        save_png(item.figure, path)
        figures.append(FigureFile(path, item.title, item.caption))
    kept = {f.path.name for f in figures}
    for name in FIGURE_FILES:
        if name not in kept:
            (out_dir / name).unlink(missing_ok=True)
    return figures, notes


__all__ = [
    "FIGURE_FILES",
    "Drawn",
    "FigureFile",
    "Layout",
    "Style",
    "busy_figure",
    "cdf_figure",
    "draw_figures",
    "layout",
    "make_figures",
    "preemption_figure",
    "queue_figure",
    "queue_usage_figure",
    "quota_figure",
    "save_png",
    "styles",
    "timeline_figure",
]
