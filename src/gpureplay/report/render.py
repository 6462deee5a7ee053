"""Render a comparison report as Markdown (figures linked) and self-contained HTML.

The HTML page needs nothing but itself: CSS is inline, figures are embedded as
base64 PNG data URIs, there is no script and no URL, so it opens the same
offline, attached to a mail, or from a CI artifact.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from gpureplay.report.collect import CONFIG_COLUMN, Collection
from gpureplay.report.figures import FigureFile
from gpureplay.report.stats import HEADLINE_METRICS, METRICS_BY_COLUMN, Metric

#: Metrics that count jobs: whole numbers when every seed agrees.
COUNT_METRICS: frozenset[str] = frozenset({"jobs", "finished", "deadlocked", "rejected"})

#: Constant config keys worth naming in the report's opening line, when present.
SETTING_KEYS: tuple[str, ...] = (
    "trace.name",
    "cluster.name",
    "scheduler.name",
    "workload.name",
    "workload.load",
    "sample_interval",
    "horizon",
)

MISSING = "–"

#: Smallest relative change coloured better/worse in the HTML change table (as for sentences).
COLOUR_THRESHOLD = 0.01


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows.

    Attributes
    ----------
    inputs
        The folders the report was built from, as given.
    collection
        The runs (:func:`gpureplay.report.collect.collect`).
    stats
        :func:`gpureplay.report.stats.summarize`.
    effects
        :func:`gpureplay.report.stats.effects`.
    sentences
        :func:`gpureplay.report.stats.effect_sentences`.
    figures
        Saved figures, in the order shown.
    """

    inputs: tuple[str, ...]
    collection: Collection
    stats: pl.DataFrame
    effects: pl.DataFrame
    sentences: list[str]
    figures: list[FigureFile] = field(default_factory=list)
    title: str = "gpureplay comparison report"


def significant_decimals(value: float, digits: int = 3) -> int:
    """Decimals that show ``value`` with ``digits`` significant digits (none from 100 up, at most 4).

    Examples
    --------
    >>> [significant_decimals(v) for v in (1234.0, 12.3, 1.5, 0.625, 0.0123, 0.0)]
    [0, 1, 2, 3, 4, 0]
    """
    size = abs(value)
    if size == 0.0 or size >= 100.0 or not math.isfinite(size):
        return 0
    return max(0, min(4, digits - 1 - math.floor(math.log10(size))))


def format_cell(metric: Metric, n: int, mean: float | None, half_width: float | None) -> str:
    """A table cell: ``mean ± half-width`` in display units; the mean alone for one seed or agreeing seeds.

    Examples
    --------
    >>> from gpureplay.report.stats import METRICS_BY_COLUMN
    >>> format_cell(METRICS_BY_COLUMN["wait_p95"], 2, 5400.0, 22871.17)
    '1.50 ± 6.35'
    >>> format_cell(METRICS_BY_COLUMN["finished"], 1, 97.0, None)
    '97'
    >>> format_cell(METRICS_BY_COLUMN["jobs"], 2, 40.0, 0.0)
    '40'
    """
    if mean is None or not math.isfinite(mean):
        return MISSING
    shown = mean / metric.scale
    decimals = 0 if metric.column in COUNT_METRICS and shown == round(shown) else significant_decimals(shown)
    text = f"{shown:,.{decimals}f}"
    # Seeds that agree give a zero-width interval: the bare mean says the same in less room.
    if n >= 2 and half_width is not None and math.isfinite(half_width) and half_width != 0.0:
        text += f" ± {half_width / metric.scale:,.{decimals}f}"
    return text


def format_change(relative: float | None) -> str:
    """A signed relative change in percent, with a real minus sign.

    Examples
    --------
    >>> format_change(-0.4137), format_change(0.05), format_change(1e-12), format_change(None)
    ('−41.4%', '+5.0%', '0%', '–')
    """
    if relative is None or not math.isfinite(relative):
        return MISSING
    pct = relative * 100.0
    if round(pct, 1) == 0.0:
        # Float noise between equal runs (1e-12) would otherwise read "+0.0%".
        return "0%"
    return f"{'−' if pct < 0 else '+'}{abs(pct):,.1f}%"


def headline_table(data: ReportData) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the headline table: one row per configuration."""
    cells = {
        (c, m): format_cell(METRICS_BY_COLUMN[m], n, mean, half)
        for c, m, n, mean, half in data.stats.select(
            CONFIG_COLUMN, "metric", "n", "mean", "half_width"
        ).iter_rows()
    }
    header = ["configuration", "seeds", *(m.title for m in HEADLINE_METRICS)]
    rows = [
        [config, str(runs), *(cells.get((config, m.column), MISSING) for m in HEADLINE_METRICS)]
        for config, runs in data.collection.configs.select(CONFIG_COLUMN, "runs").iter_rows()
    ]
    return header, rows


def change_table(data: ReportData) -> tuple[list[str], list[list[tuple[str, bool | None]]]]:
    """Header and rows of the change-vs-baseline table; each cell is (text, better)."""
    metrics = [m for m in HEADLINE_METRICS if m.better is not None]
    found = {
        (c, m): (rel, better)
        for c, m, rel, better in data.effects.select(
            CONFIG_COLUMN, "metric", "relative", "better"
        ).iter_rows()
    }
    pairs = data.effects.select(CONFIG_COLUMN, "baseline").unique(maintain_order=True).iter_rows()
    header = [
        "configuration",
        "baseline",
        *(f"{m.phrase} ({'↓' if m.better == 'lower' else '↑'} better)" for m in metrics),
    ]
    rows: list[list[tuple[str, bool | None]]] = []
    for config, baseline in pairs:
        row: list[tuple[str, bool | None]] = [(config, None), (baseline, None)]
        for m in metrics:
            rel, better = found.get((config, m.column), (None, None))
            # Colour only changes a sentence could state, not noise a reader would over-read.
            marked = rel is not None and abs(rel) >= COLOUR_THRESHOLD
            row.append((format_change(rel), better if marked else None))
        rows.append(row)
    return header, rows


def _settings(collection: Collection) -> str:
    pairs = [f"{k}={collection.common[k]}" for k in SETTING_KEYS if k in collection.common]
    return ", ".join(pairs)


def _summary_line(data: ReportData) -> str:
    runs, configs = data.collection.runs.height, data.collection.configs.height
    text = f"{runs} run(s) in {configs} configuration(s)"
    if data.collection.label_keys:
        text += ", differing in " + ", ".join(data.collection.label_keys)
    settings = _settings(data.collection)
    if settings:
        text += f"; same for all: {settings}"
    return text + "."


_INTERVAL_NOTE = (
    "Each cell is the mean over seeds ± the half-width of the two-sided 95% Student-t interval "
    "(no ± for a single seed or when all seeds agree). Times in hours."
)


def _no_effects(data: ReportData) -> str:
    if data.collection.configs.height < 2:
        return "Only one configuration: nothing to compare."
    if data.effects.height == 0:
        return "No two configurations share a trace and setting to compare."
    return "No configuration differs from its baseline by 1% or more in a headline metric."


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(data: ReportData) -> str:
    """The report as Markdown, linking figures by file name (they sit next to it)."""
    out = [f"# {data.title}", "", _summary_line(data), ""]
    out += ["Inputs: " + ", ".join(f"`{p}`" for p in data.inputs), ""]
    out += ["## Largest differences", ""]
    out += [f"- {s}" for s in data.sentences] if data.sentences else [_no_effects(data)]
    out += ["", "## Headline metrics", "", _INTERVAL_NOTE, ""]
    header, rows = headline_table(data)
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "|".join([":---", "---:", *(["---:"] * (len(header) - 2))]) + "|")
    out += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    change_header, change_rows = change_table(data)
    if change_rows:
        out += ["", "## Change vs baseline", "", "Relative difference of the means from the baseline.", ""]
        out.append("| " + " | ".join(change_header) + " |")
        out.append("|" + "|".join([":---", ":---", *(["---:"] * (len(change_header) - 2))]) + "|")
        out += ["| " + " | ".join(_md_escape(text) for text, _ in row) + " |" for row in change_rows]
    if data.figures:
        out += ["", "## Figures", ""]
        for fig in data.figures:
            out += [f"### {fig.title}", "", f"![{fig.title}]({fig.path.name})", "", fig.caption, ""]
    out += ["", "## Runs", ""]
    for config, runs in _runs_by_config(data):
        out.append(f"- {_md_escape(config)}: " + ", ".join(f"`{r}`" for r in runs))
    if data.collection.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in data.collection.notes]
    return "\n".join(out).rstrip() + "\n"


def _runs_by_config(data: ReportData) -> list[tuple[str, list[str]]]:
    grouped = data.collection.runs.group_by(CONFIG_COLUMN, maintain_order=True).agg(pl.col("run"))
    runs = dict(grouped.iter_rows())
    return [(c, list(runs.get(c, []))) for c in data.collection.configs.get_column(CONFIG_COLUMN).to_list()]


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 2rem auto; max-width: 1240px; padding: 0 1rem; color: #1d2330; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .3rem; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #d8dde6; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; }
.lede { color: #3d4659; }
code { background: #f1f3f7; padding: 0 .25rem; border-radius: 3px; font-size: .9em; }
ul.effects li { margin: .25rem 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: .88rem; margin: .5rem 0; }
th, td { border: 1px solid #d8dde6; padding: .3rem .5rem; }
th { background: #eef1f6; text-align: center; vertical-align: bottom; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #f8f9fb; }
td.better { color: #11643a; background: #e6f4ea; }
td.worse { color: #8a1c1c; background: #fbeaea; }
figure { margin: 1rem 0 2rem; }
figure img { max-width: 100%; height: auto; border: 1px solid #e3e6ec; }
figcaption { color: #4a5467; font-size: .9rem; }
.note { color: #4a5467; font-size: .9rem; }
details { margin: .5rem 0; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _data_uri(fig: FigureFile) -> str:
    return "data:image/png;base64," + base64.b64encode(fig.path.read_bytes()).decode("ascii")


def _html_table(header: Sequence[str], rows: Sequence[Sequence[tuple[str, str]]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{cls}">{_e(text)}</td>' if cls else f"<td>{_e(text)}</td>" for text, cls in row
        )
        + "</tr>"
        for row in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def render_html(data: ReportData) -> str:
    """The report as one self-contained HTML page (inline CSS, figures as data URIs, no script)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # An empty data icon stops the browser from asking for /favicon.ico.
        '<link rel="icon" href="data:,">',
        f"<title>{_e(data.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(data.title)}</h1>",
        f'<p class="lede">{_e(_summary_line(data))}</p>',
        '<p class="note">Inputs: ' + ", ".join(f"<code>{_e(p)}</code>" for p in data.inputs) + "</p>",
        "<h2>Largest differences</h2>",
    ]
    if data.sentences:
        parts.append('<ul class="effects">' + "".join(f"<li>{_e(s)}</li>" for s in data.sentences) + "</ul>")
    else:
        parts.append(f"<p>{_e(_no_effects(data))}</p>")
    header, rows = headline_table(data)
    parts += ["<h2>Headline metrics</h2>", f'<p class="note">{_e(_INTERVAL_NOTE)}</p>']
    parts.append(_html_table(header, [[(row[0], ""), *((c, "num") for c in row[1:])] for row in rows]))
    change_header, change_rows = change_table(data)
    if change_rows:
        parts += [
            "<h2>Change vs baseline</h2>",
            '<p class="note">Relative difference of the means from the baseline; '
            "green is better, red worse.</p>",
        ]
        styled = [
            [
                (
                    text,
                    ""
                    if i < 2
                    else "num " + ("better" if better else "worse" if better is False else "").strip(),
                )
                for i, (text, better) in enumerate(row)
            ]
            for row in change_rows
        ]
        parts.append(_html_table(change_header, styled))
    if data.figures:
        parts.append("<h2>Figures</h2>")
        for fig in data.figures:
            parts.append(
                f"<figure><h3>{_e(fig.title)}</h3>"
                f'<img src="{_data_uri(fig)}" alt="{_e(fig.title)}">'
                f"<figcaption>{_e(fig.caption)}</figcaption></figure>"
            )
    parts.append("<h2>Runs</h2>")
    for config, runs in _runs_by_config(data):
        items = "".join(f"<li><code>{_e(r)}</code></li>" for r in runs)
        parts.append(
            f"<details><summary>{_e(config)} ({len(runs)} run(s))</summary><ul>{items}</ul></details>"
        )
    common = "".join(
        f"<li><code>{_e(k)}={_e(v)}</code></li>" for k, v in sorted(data.collection.common.items())
    )
    if common:
        parts.append(f"<details><summary>Settings shared by all runs</summary><ul>{common}</ul></details>")
    if data.collection.notes:
        parts.append(
            "<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in data.collection.notes) + "</ul>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


__all__ = [
    "ReportData",
    "change_table",
    "format_cell",
    "format_change",
    "headline_table",
    "render_html",
    "render_markdown",
    "significant_decimals",
]
