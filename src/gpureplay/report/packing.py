"""The packing section of a report: the FGD experiment's fill curves and headline numbers.

A packing run (``mode=packing``) places each pod of a workload once, in
order, pods never departing, while the arrived GPU demand grows to 130 % of
the cluster's GPU capacity (Weng et al., "Beware of Fragmentation", USENIX
ATC'23). Its folder holds ``timeline.parquet``, one row per whole percent of
arrived demand, and ``summary.parquet`` with the values at 100 % arrived and
at the end (:mod:`gpureplay.results.packing`).

Runs are grouped into configurations as :mod:`gpureplay.report.collect` does
for timed replays (every config key but the seed, plus the input checksums),
labelled by the keys that differ. The section shows:

- the paper's figure (Fig. 9): unallocated GPUs (% of capacity) against
  arrived GPU demand, the median over seeds and the band between the 25th and
  75th percentiles (the artifact plots seaborn's ``estimator='median'``,
  ``errorbar=('pi', 50)``), over the whole workload and zoomed on 75..130 %
  where the policies part, with the ideal line (every arrived GPU allocated);
- the same for the fragmented GPUs (``frag_gpu_pct``);
- a table per configuration: seeds, unallocated GPUs at 100 % arrived (mean,
  median, min-max), at the end, fragmented GPUs and failed pods at 100 %, and
  the published value beside ours when the configuration is the paper's
  setting (:mod:`gpureplay.report.published`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from gpureplay.report.collect import (
    CONFIG_COLUMN,
    RUN_COLUMN,
    RunSummary,
    _label_expr,
    _sort_exprs,
    config_columns,
    drop_repeated_runs,
    label_keys,
    runs_table,
)
from gpureplay.report.figures import LEGEND_FONT, FigureFile, _new_figure, save_png, styles
from gpureplay.report.folders import LeftOut, counts
from gpureplay.report.published import (
    HEADLINE,
    POLICIES,
    POLICY_OF_PLACEMENT,
    SEED_NOTE,
    Published,
    paper_policy,
    policy_of,
    published,
    setting_mismatch,
)
from gpureplay.report.render import _CSS, Table, _data_uri, _e, _html_table, _md_table

#: Files a packing report reads from each run folder (``find_unreadable`` checks them).
PACKING_READ_FILES: tuple[str, ...] = ("timeline.parquet", "summary.parquet")

#: Columns of a packing run's ``timeline.parquet`` that the figures draw.
CURVE_COLUMNS: tuple[str, ...] = ("unallocated_gpu_pct", "frag_gpu_pct")

#: Figure files of the packing section.
PACKING_FIGURE_FILES: tuple[str, ...] = ("packing_unallocated.png", "packing_frag.png")

#: Arrived-demand range of the figure (percent of capacity) and of its zoomed panel.
X_MAX = 130
ZOOM_FROM = 75

#: Percentiles of the band over seeds (seaborn's ``errorbar=('pi', 50)``).
BAND = (0.25, 0.75)

#: Column holding the paper's policy a configuration is compared with (null when none).
PAPER_COLUMN = "paper"

#: Config keys named in the section's opening line when all runs share them.
SETTING_KEYS: tuple[str, ...] = (
    "trace.path",
    "cluster.path",
    "packing.tune",
    "packing.shuffle",
    "packing.max_pct",
)

NOT_AVAILABLE = "n/a"


@dataclass(frozen=True)
class PackingRuns:
    """Packing runs grouped into configurations.

    Attributes
    ----------
    runs
        One row per run, in report order: ``run``, ``config`` (label), ``seed``
        (Int64), every config key as text, the packing metrics
        (:data:`gpureplay.report.collect.PACKING_METRICS`) and ``paper`` (the
        paper's policy the run is compared with, null when not the paper's setting).
    configs
        One row per configuration, in report order: ``config``, ``runs``,
        ``policy`` (the paper's policy its placement stands for, or null),
        ``paper`` (that policy when in the paper's setting, else null),
        ``mismatch`` (why not the paper's setting) and the label keys.
    label_keys
        The config keys that tell configurations apart.
    common
        Config keys with one value across all packing runs.
    timeline
        Every run's fill curve: ``run``, ``config``, ``arrived_pct`` and :data:`CURVE_COLUMNS`.
    notes
        Runs left out on purpose (a configuration and seed repeated).
    """

    runs: pl.DataFrame
    configs: pl.DataFrame
    label_keys: tuple[str, ...]
    common: dict[str, str]
    timeline: pl.DataFrame
    notes: tuple[str, ...] = field(default=())


def _read_curve(folder: Path) -> pl.DataFrame:
    path = folder / "timeline.parquet"
    present = pl.read_parquet_schema(path)
    wanted = [c for c in ("arrived_pct", *CURVE_COLUMNS) if c in present]
    table = pl.read_parquet(path, columns=wanted)
    return table.select(
        pl.col("arrived_pct").cast(pl.Int32)
        if "arrived_pct" in present
        else pl.lit(None, pl.Int32).alias("arrived_pct"),
        *(
            pl.col(c).cast(pl.Float64) if c in present else pl.lit(None, pl.Float64).alias(c)
            for c in CURVE_COLUMNS
        ),
    )


def collect_packing(summaries: Sequence[RunSummary]) -> PackingRuns:
    """Group the packing runs among ``summaries`` into configurations and read their fill curves.

    Raises
    ------
    ValueError
        When no summary is of a packing run.
    polars.exceptions.PolarsError, OSError
        When a run's ``timeline.parquet`` cannot be read.
    """
    summaries = [s for s in summaries if s.packing]
    if not summaries:
        raise ValueError("no packing run among the summaries")
    runs = runs_table(summaries)
    config_keys = config_columns(runs)
    papers = [paper_policy(s.keys) for s in summaries]
    runs = runs.with_columns(pl.Series(PAPER_COLUMN, papers, pl.String))

    notes: list[str] = []
    runs = drop_repeated_runs(runs, config_keys, "packing run(s)", notes)

    labels = label_keys(runs, config_keys)
    if labels:
        label = _label_expr(labels)
    elif "scheduler.name" in config_keys:
        label = _label_expr(["scheduler.name"])
    else:
        label = pl.lit("all packing runs")
    policy = (
        pl.col("scheduler.node_placement") if "scheduler.node_placement" in runs.columns else pl.lit(None)
    )
    rank = policy.replace_strict(
        {p: POLICIES.index(name) for p, name in POLICY_OF_PLACEMENT.items()},
        default=len(POLICIES),
        return_dtype=pl.Int64,
    )
    # The paper's order (least to most allocated, FGD last) when the runs are its policies.
    runs = (
        runs.with_columns(label.alias(CONFIG_COLUMN), rank.alias("_rank"))
        .sort(["_rank", *_sort_exprs(labels), "seed", RUN_COLUMN], nulls_last=True)
        .drop("_rank")
    )
    by_config = runs.group_by(CONFIG_COLUMN, maintain_order=True)
    configs = by_config.agg(
        pl.len().cast(pl.Int64).alias("runs"),
        pl.col(RUN_COLUMN).first().alias("_first"),
        *(pl.col(k).first() for k in labels),
    )
    first_keys = {str(s.folder): s.keys for s in summaries}
    firsts = [first_keys[r] for r in configs.get_column("_first").to_list()]
    configs = configs.with_columns(
        pl.Series("policy", [policy_of(k) for k in firsts], pl.String),
        pl.Series(PAPER_COLUMN, [paper_policy(k) for k in firsts], pl.String),
        pl.Series("mismatch", [setting_mismatch(k) for k in firsts], pl.String),
    ).select(CONFIG_COLUMN, "runs", "policy", PAPER_COLUMN, "mismatch", *labels)
    common = {
        k: v
        for k in config_keys
        if runs.select(pl.col(k).n_unique()).item() == 1
        and (v := runs.get_column(k)[0]) not in (None, "null")
    }
    curves = [
        _read_curve(Path(run)).with_columns(
            pl.lit(run).alias(RUN_COLUMN), pl.lit(config).alias(CONFIG_COLUMN)
        )
        for run, config in runs.select(RUN_COLUMN, CONFIG_COLUMN).iter_rows()
    ]
    timeline = pl.concat(curves, how="vertical").select(
        RUN_COLUMN, CONFIG_COLUMN, "arrived_pct", *CURVE_COLUMNS
    )
    return PackingRuns(runs, configs, tuple(labels), common, timeline, tuple(notes))


def config_table(packing: PackingRuns) -> pl.DataFrame:
    """Statistics over seeds per configuration, in report order.

    Columns: ``config``, ``seeds``, ``unalloc_mean``, ``unalloc_median``,
    ``unalloc_min``, ``unalloc_max`` (unallocated GPUs at 100 % arrived, % of
    capacity), ``unalloc_final_mean`` (after the last pod), ``alloc_mean``
    (allocated at 100 %), ``frag_mean`` (fragmented GPUs at 100 %),
    ``failed_mean`` (pods failed by 100 %) and ``failed_final_mean`` (all failed pods).
    """
    u = pl.col("unallocated_gpu_pct_at_100")
    stats = packing.runs.group_by(CONFIG_COLUMN, maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("seeds"),
        u.mean().alias("unalloc_mean"),
        u.median().alias("unalloc_median"),
        u.min().alias("unalloc_min"),
        u.max().alias("unalloc_max"),
        pl.col("unallocated_gpu_pct_final").mean().alias("unalloc_final_mean"),
        pl.col("allocated_gpu_pct_at_100").mean().alias("alloc_mean"),
        pl.col("frag_gpu_pct_at_100").mean().alias("frag_mean"),
        pl.col("failed_pods_at_100").cast(pl.Float64).mean().alias("failed_mean"),
        pl.col("failed").cast(pl.Float64).mean().alias("failed_final_mean"),
    )
    return packing.configs.select(CONFIG_COLUMN, PAPER_COLUMN).join(stats, on=CONFIG_COLUMN, how="left")


def curve_stats(packing: PackingRuns, column: str) -> pl.DataFrame:
    """Median and 25-75 % band over seeds of a fill-curve column, per configuration and arrived percent.

    Percentiles interpolate linearly between seeds, as numpy's (and so seaborn's) do.
    """
    value = pl.col(column)
    return (
        packing.timeline.filter(value.is_not_null() & pl.col("arrived_pct").is_not_null())
        .group_by(CONFIG_COLUMN, "arrived_pct")
        .agg(
            value.median().alias("median"),
            value.quantile(BAND[0], interpolation="linear").alias("low"),
            value.quantile(BAND[1], interpolation="linear").alias("high"),
            pl.len().alias("seeds"),
        )
        .sort(CONFIG_COLUMN, "arrived_pct")
    )


def _legend_name(packing: PackingRuns, config: str) -> str:
    row = packing.configs.filter(pl.col(CONFIG_COLUMN) == config).row(0, named=True)
    return f"{config} ({row['policy']})" if row["policy"] else config


def curve_figure(packing: PackingRuns, column: str, ylabel: str, ideal: bool) -> Figure:
    """Two panels of ``column`` against arrived demand, 0..130 % and 75..130 %: median and band per config."""
    stats = curve_stats(packing, column)
    names = packing.configs.get_column(CONFIG_COLUMN).to_list()
    look = styles(len(names))
    legend_rows = math.ceil((len(names) + (1 if ideal else 0) + 1) / 3)
    fig = _new_figure(11.0, 4.6 + 0.22 * legend_rows)
    full, zoom = fig.subplots(1, 2, gridspec_kw={"width_ratios": (1.0, 1.0)})
    zoom_top = 0.0
    handles: list[Line2D | Patch] = []
    for name, style in zip(names, look, strict=True):
        curve = stats.filter(pl.col(CONFIG_COLUMN) == name)
        if curve.is_empty():
            continue
        x = curve.get_column("arrived_pct").to_numpy()
        for ax in (full, zoom):
            ax.fill_between(
                x, curve.get_column("low").to_numpy(), curve.get_column("high").to_numpy(),
                color=style.colour, alpha=0.22, linewidth=0,
            )  # fmt: skip
            ax.plot(x, curve.get_column("median").to_numpy(), color=style.colour, linestyle=style.linestyle,
                    linewidth=1.6)  # fmt: skip
        zoomed = curve.filter(pl.col("arrived_pct") >= ZOOM_FROM)
        if zoomed.height:
            zoom_top = max(zoom_top, float(zoomed.get_column("high").max() or 0.0))  # type: ignore[arg-type]
        handles.append(Line2D([], [], color=style.colour, linestyle=style.linestyle, linewidth=1.6,
                              label=_legend_name(packing, name)))  # fmt: skip
    if ideal:
        for ax in (full, zoom):
            ax.plot([0, 100], [100, 0], color="black", linestyle=":", linewidth=1.2)
        handles.append(Line2D([], [], color="black", linestyle=":", linewidth=1.2,
                              label="ideal (every arrived GPU allocated)"))  # fmt: skip
        zoom_top = max(zoom_top, 100.0 - ZOOM_FROM)
    handles.append(Patch(facecolor="grey", alpha=0.3, label="25-75% of seeds"))
    full.set_xlim(0, X_MAX)
    full.set_ylim(bottom=0)
    zoom.set_xlim(ZOOM_FROM, X_MAX)
    zoom.set_ylim(0, zoom_top * 1.05 if zoom_top > 0 else 1.0)
    full.set_title("Whole workload", fontsize=10)
    zoom.set_title(f"Zoom: {ZOOM_FROM}-{X_MAX}% arrived", fontsize=10)
    for ax in (full, zoom):
        _axes(ax, ylabel)
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=LEGEND_FONT, frameon=False)
    return fig


def _axes(ax: Axes, ylabel: str) -> None:
    ax.set_xlabel("Arrived GPU demand (% of cluster GPU capacity)")
    ax.set_ylabel(ylabel)
    ax.axvline(100, color="#9aa3b2", linewidth=0.8, linestyle="--")
    ax.grid(True, color="#e3e6ec", linewidth=0.6)


def make_packing_figures(packing: PackingRuns, out_dir: Path) -> list[FigureFile]:
    """Draw and save the packing figures into ``out_dir``."""
    seeds = packing.configs.get_column("runs").to_list()
    spread = f"{min(seeds)}" if min(seeds) == max(seeds) else f"{min(seeds)}-{max(seeds)}"
    drawn = [
        (
            curve_figure(packing, "unallocated_gpu_pct", "Unallocated GPUs (% of capacity)", ideal=True),
            PACKING_FIGURE_FILES[0],
            "Unallocated GPUs as the workload arrives",
            "The FGD paper's Fig. 9: GPUs left unallocated (100 - allocated, % of the cluster's GPUs) "
            "against the arrived GPU demand; lines are the median over seeds "
            f"({spread} per configuration), bands the "
            "25th-75th percentiles; the dotted line is the ideal, every arrived GPU allocated. Right: zoomed "
            f"on {ZOOM_FROM}-{X_MAX}%, where the policies part.",
        ),
        (
            curve_figure(packing, "frag_gpu_pct", "Fragmented GPUs (% of capacity)", ideal=False),
            PACKING_FIGURE_FILES[1],
            "Fragmented GPUs as the workload arrives",
            "GPU capacity that the typical pods cannot use (FGD's fragmentation measure, % of the cluster's "
            "GPUs) against the arrived GPU demand; median over seeds and 25th-75th percentile band.",
        ),
    ]
    out: list[FigureFile] = []
    for fig, name, title, caption in drawn:
        path = Path(out_dir) / name
        save_png(fig, path)
        out.append(FigureFile(path, title, caption))
    return out


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return NOT_AVAILABLE
    if signed:
        return f"{'−' if value < 0 else '+'}{abs(value):.2f}"
    return f"{value:.2f}"


def _count(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return NOT_AVAILABLE
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def _paper_cell(ref: Published | None) -> str:
    if ref is None:
        return "–"
    low, high = ref.unallocated_at_100_min, ref.unallocated_at_100_max
    return f"{ref.unallocated_at_100:.2f} ({low:.2f}–{high:.2f})"


def headline_table(packing: PackingRuns) -> Table:
    """Per configuration: seeds, unallocated GPUs at 100 % (mean, median, range), at the end, the paper's."""
    header = [
        "configuration",
        "paper policy",
        "seeds",
        "unalloc. @100% mean",
        "median",
        "min-max",
        "paper @100% mean (min-max)",
        "ours − paper (points)",
        "unalloc. at end mean",
        "paper @130%",
        "ours − paper at end (points)",
        "frag. @100% mean",
        "failed pods @100% mean",
    ]
    rows: list[list[tuple[str, str]]] = []
    for row in config_table(packing).iter_rows(named=True):
        paper = row[PAPER_COLUMN]
        ref = published(paper) if paper else None
        cells = [
            row[CONFIG_COLUMN],
            paper or "–",
            str(row["seeds"]),
            _pct(row["unalloc_mean"]),
            _pct(row["unalloc_median"]),
            f"{_pct(row['unalloc_min'])}–{_pct(row['unalloc_max'])}",
            _paper_cell(ref),
            _pct(row["unalloc_mean"] - ref.unallocated_at_100, signed=True)
            if ref and row["unalloc_mean"] is not None
            else "–",
            _pct(row["unalloc_final_mean"]),
            f"{ref.unallocated_at_130:.2f}" if ref else "–",
            _pct(row["unalloc_final_mean"] - ref.unallocated_at_130, signed=True)
            if ref and row["unalloc_final_mean"] is not None
            else "–",
            _pct(row["frag_mean"]),
            _count(row["failed_mean"]),
        ]
        rows.append([(text, "" if i < 2 else "num") for i, text in enumerate(cells)])
    return Table(header, rows, [":--", ":--", *["--:"] * (len(header) - 2)])


def sentences(packing: PackingRuns) -> list[str]:
    """FGD against each baseline in words: how many fewer GPUs it leaves unallocated at 100 % arrived.

    Said only when each of the paper's policies present is one configuration (one
    setting); the paper's own figure follows in parentheses when in its setting.
    """
    table = config_table(packing).join(packing.configs.select(CONFIG_COLUMN, "policy"), on=CONFIG_COLUMN)
    mapped = table.filter(pl.col("policy").is_not_null())
    if mapped.is_empty() or mapped.get_column("policy").n_unique() != mapped.height:
        return []
    by_policy = {r["policy"]: r for r in mapped.iter_rows(named=True)}
    fgd = by_policy.get("FGD")
    if fgd is None or fgd["unalloc_mean"] is None:
        return []
    out: list[str] = []
    for policy in POLICIES:
        base = by_policy.get(policy)
        if policy == "FGD" or base is None or not base["unalloc_mean"]:
            continue
        ours = 1.0 - fgd["unalloc_mean"] / base["unalloc_mean"]
        word = "fewer" if ours >= 0 else "more"
        text = (
            f"FGD leaves {abs(ours) * 100:.0f}% {word} GPUs unallocated at 100% arrived than {policy} "
            f"({fgd['unalloc_mean']:.2f}% vs {base['unalloc_mean']:.2f}% of capacity, mean over seeds)"
        )
        if fgd[PAPER_COLUMN] and base[PAPER_COLUMN]:
            p_fgd, p_base = published("FGD").unallocated_at_100, published(policy).unallocated_at_100
            text += f"; the paper: {(1.0 - p_fgd / p_base) * 100:.0f}% fewer ({p_fgd:.2f}% vs {p_base:.2f}%)"
        out.append(text + ".")
    return out


@dataclass(frozen=True)
class PackingSection:
    """The packing section of a report, ready to render."""

    packing: PackingRuns
    table: Table
    sentences: list[str]
    figures: list[FigureFile]


def packing_section(summaries: Sequence[RunSummary], out_dir: Path) -> PackingSection:
    """Collect the packing runs among ``summaries``, draw their figures into ``out_dir``, tabulate them."""
    packing = collect_packing(summaries)
    return PackingSection(
        packing, headline_table(packing), sentences(packing), make_packing_figures(packing, out_dir)
    )


def _settings_line(section: PackingSection) -> str:
    p = section.packing
    shown = [f"{k}={p.common[k]}" for k in SETTING_KEYS if k in p.common]
    gpus = p.runs.get_column("capacity_gpus").unique().drop_nulls().to_list()
    cap = f" on {gpus[0]:,} GPUs" if len(gpus) == 1 else ""
    text = (
        f"{p.runs.height} packing run(s) in {p.configs.height} configuration(s){cap}: each pod placed once, "
        "none departing, as the arrived GPU demand grows to 130% of the cluster's GPU capacity (the FGD "
        "experiment, Weng et al., USENIX ATC'23)."
    )
    return text + (" Settings: " + ", ".join(shown) + "." if shown else "")


def _paper_lines(section: PackingSection) -> list[str]:
    configs = section.packing.configs
    matched = configs.filter(pl.col(PAPER_COLUMN).is_not_null()).height
    mapped = configs.filter(pl.col("policy").is_not_null())
    if matched:
        lines = [
            f"Published values (the FGD artifact's expected results, analysis_allo_discrete.csv: "
            f"openb_pod_list_default, tune 1.3, seeds 42..51, 6,212 GPUs) stand beside the {matched} "
            "configuration(s) run in the paper's setting; 'ours − paper' is the difference of the means in "
            "percentage points of capacity. The paper's 'at 130%' is its last column, set beside our value "
            "after the last pod.",
            SEED_NOTE,
            HEADLINE,
        ]
    elif mapped.height:
        why = mapped.get_column("mismatch").drop_nulls().to_list()
        lines = [
            "No configuration is the paper's setting (openb_pod_list_default, tune 1.3, shuffled, "
            "openb's GPU nodes), so the published values are not shown" + (f": {why[0]}." if why else ".")
        ]
    else:
        lines = []
    return lines


_TABLE_NOTE = (
    "Unallocated GPUs: 100 − allocated GPUs, % of the cluster's GPU capacity, when the arrived GPU demand "
    "reaches 100% of capacity (the fill curve's row 100) and after the last pod; mean over seeds, the median "
    "and the range beside it. Fragmented GPUs: capacity the typical pods cannot use. Failed pods: pods that "
    "found no place by 100% arrived."
)


def section_markdown(section: PackingSection, level: int = 2) -> list[str]:
    """The section as Markdown lines, headings at ``level`` (figures linked by file name)."""
    h, hh = "#" * level, "#" * (level + 1)
    out = [f"{h} Packing runs (FGD experiment)", "", _settings_line(section), ""]
    if section.sentences:
        out += [f"- {s}" for s in section.sentences] + [""]
    out += [f"{hh} Unallocated GPUs per configuration", "", _TABLE_NOTE, ""]
    for line in _paper_lines(section):
        out += [line, ""]
    out += _md_table(section.table)
    for fig in section.figures:
        out += ["", f"{hh} {fig.title}", "", f"![{fig.title}]({fig.path.name})", "", fig.caption]
    out += ["", f"{hh} Packing runs by configuration", ""]
    for config, runs in _runs_by_config(section.packing):
        out.append(f"- {config.replace('|', chr(92) + '|')}: " + ", ".join(f"`{r}`" for r in runs))
    if section.packing.notes:
        out += [""] + [f"- {n}" for n in section.packing.notes]
    return out


def _runs_by_config(packing: PackingRuns) -> list[tuple[str, list[str]]]:
    grouped = packing.runs.group_by(CONFIG_COLUMN, maintain_order=True).agg(pl.col(RUN_COLUMN))
    return [(c, list(r)) for c, r in grouped.iter_rows()]


def section_html(section: PackingSection) -> list[str]:
    """The section as HTML fragments (figures embedded as data URIs)."""
    parts = [
        "<h2>Packing runs (FGD experiment)</h2>",
        f'<p class="lede">{_e(_settings_line(section))}</p>',
    ]
    if section.sentences:
        parts.append(
            '<ul class="effects">' + "".join(f"<li>{_e(s)}</li>" for s in section.sentences) + "</ul>"
        )
    parts += ["<h3>Unallocated GPUs per configuration</h3>", f'<p class="note">{_e(_TABLE_NOTE)}</p>']
    parts += [f'<p class="note">{_e(line)}</p>' for line in _paper_lines(section)]
    parts.append(_html_table(section.table))
    for fig in section.figures:
        parts.append(
            f"<figure><h3>{_e(fig.title)}</h3>"
            f'<img src="{_data_uri(fig)}" alt="{_e(fig.title)}">'
            f"<figcaption>{_e(fig.caption)}</figcaption></figure>"
        )
    parts.append("<h3>Packing runs by configuration</h3>")
    for config, runs in _runs_by_config(section.packing):
        items = "".join(f"<li><code>{_e(r)}</code></li>" for r in runs)
        parts.append(
            f"<details><summary>{_e(config)} ({len(runs)} run(s))</summary><ul>{items}</ul></details>"
        )
    if section.packing.notes:
        parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in section.packing.notes) + "</ul>")
    return parts


TITLE = "gpureplay packing report"


def render_markdown(section: PackingSection, inputs: Sequence[str], left_out: Sequence[LeftOut]) -> str:
    """A report of packing runs only, as Markdown."""
    out = [f"# {TITLE}", "", "Inputs: " + ", ".join(f"`{p}`" for p in inputs), ""]
    out += section_markdown(section)
    if left_out:
        out += [
            "",
            "## Runs left out",
            "",
            f"Run folders under the inputs that this report does not use ({counts(left_out)}):",
            "",
        ]
        out += [f"- `{item.folder}`: {item.kind}: {item.reason}" for item in left_out]
    return "\n".join(out).rstrip() + "\n"


def render_html(section: PackingSection, inputs: Sequence[str], left_out: Sequence[LeftOut]) -> str:
    """A report of packing runs only, as one self-contained HTML page."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>{_e(TITLE)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(TITLE)}</h1>",
        '<p class="note">Inputs: ' + ", ".join(f"<code>{_e(p)}</code>" for p in inputs) + "</p>",
        *section_html(section),
    ]
    if left_out:
        items = "".join(
            f"<li><code>{_e(item.folder)}</code>: <strong>{_e(item.kind)}</strong>: {_e(item.reason)}</li>"
            for item in left_out
        )
        parts.append(
            '<h2>Runs left out</h2><div class="leftout"><p>Run folders under the inputs that this report '
            f"does not use:</p><ul>{items}</ul></div>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


__all__ = [
    "PACKING_FIGURE_FILES",
    "PACKING_READ_FILES",
    "PackingRuns",
    "PackingSection",
    "collect_packing",
    "config_table",
    "curve_figure",
    "curve_stats",
    "headline_table",
    "make_packing_figures",
    "packing_section",
    "render_html",
    "render_markdown",
    "section_html",
    "section_markdown",
    "sentences",
]
