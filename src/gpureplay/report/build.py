"""``build_report(inputs, out_dir)``: result folders in, ``report.md`` + ``report.html`` + PNGs out."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from gpureplay.errors import InputError
from gpureplay.report.collect import Collection, RunSummary, collect_summaries, complete_runs, split_modes
from gpureplay.report.figures import FIGURE_FILES, make_figures
from gpureplay.report.folders import LeftOut, find_unreadable
from gpureplay.report.packing import (
    PACKING_FIGURE_FILES,
    PACKING_READ_FILES,
    PackingSection,
    packing_section,
    section_html,
    section_markdown,
)
from gpureplay.report.packing import render_html as packing_html
from gpureplay.report.packing import render_markdown as packing_markdown
from gpureplay.report.render import ReportData, render_html, render_markdown
from gpureplay.report.stats import (
    choose_baseline,
    delay_scope,
    effect_sentences,
    effects,
    summarize,
    window_bounds,
)

#: File names of the report in its output folder.
REPORT_MD = "report.md"
REPORT_HTML = "report.html"


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed into place."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _report_data(
    inputs: Sequence[Path], collection: Collection, out_dir: Path, packing: PackingSection | None = None
) -> ReportData:
    stats = summarize(collection)
    scope = delay_scope(collection)
    table = effects(collection, stats, scope)
    figures, notes = make_figures(collection, out_dir)
    return ReportData(
        inputs=tuple(str(p) for p in inputs),
        collection=collection,
        stats=stats,
        effects=table,
        sentences=effect_sentences(table, scope=scope),
        scope=scope,
        windows=window_bounds(collection),
        figures=figures,
        figure_notes=notes,
        extra_markdown=section_markdown(packing) if packing else [],
        extra_html=section_html(packing) if packing else [],
    )


def _render(
    inputs: Sequence[Path],
    summaries: Sequence[RunSummary],
    left_out: Sequence[LeftOut],
    out_dir: Path,
    baseline: Sequence[tuple[str, str]] = (),
) -> tuple[str, str, tuple[LeftOut, ...]]:
    """The report's Markdown and HTML, and the runs left out: replay sections, packing section, or both."""
    replay, packing = split_modes(summaries)
    section = packing_section(packing, out_dir) if packing else None
    if not section:
        for name in PACKING_FIGURE_FILES:
            (out_dir / name).unlink(missing_ok=True)
    if replay:
        collection = choose_baseline(collect_summaries(replay, left_out), baseline)
        data = _report_data(inputs, collection, out_dir, section)
        return render_markdown(data), render_html(data), collection.left_out
    # Packing runs only: their section is the report; no replay figure of an earlier report stays.
    assert section is not None
    if baseline:
        # The packing section compares every policy with FGD and the paper: no baseline to choose.
        raise InputError.single("applies to replay runs only (these are packing runs)", "report --baseline")
    for name in FIGURE_FILES:
        (out_dir / name).unlink(missing_ok=True)
    shown = [str(p) for p in inputs]
    return (
        packing_markdown(section, shown, left_out),
        packing_html(section, shown, left_out),
        tuple(left_out),
    )


def _unreadable(summaries: Sequence[RunSummary]) -> list[LeftOut]:
    replay, packing = split_modes(summaries)
    return [
        *find_unreadable([s.folder for s in replay]),
        *find_unreadable([s.folder for s in packing], PACKING_READ_FILES),
    ]


@dataclass(frozen=True)
class BuiltReport:
    """A written report: the path of ``report.html`` and the run folders it left out."""

    html: Path
    left_out: tuple[LeftOut, ...]


def build_report(inputs: Sequence[Path], out_dir: Path, baseline: Sequence[tuple[str, str]] = ()) -> Path:
    """Build the comparison report of every complete run under ``inputs``; return ``report.html``'s path.

    See :func:`build` (which also says which runs were left out).
    """
    return build(inputs, out_dir, baseline).html


def build(inputs: Sequence[Path], out_dir: Path, baseline: Sequence[tuple[str, str]] = ()) -> BuiltReport:
    """Build the comparison report of every complete run under ``inputs``.

    Writes ``report.md`` (figures linked), ``report.html`` (self-contained:
    figures embedded, no external URL, no script) and the figures as PNG into
    ``out_dir``, each through a temporary file renamed into place, so an
    interrupted build never leaves a half-written file.

    Packing runs (``mode=packing``, the FGD experiment) get their own section
    (:mod:`gpureplay.report.packing`): the whole report when there are only
    packing runs, a section beside the replay's otherwise.

    Run folders that failed, were killed (no ``DONE`` marker) or hold a
    missing, truncated or corrupt result file are left out and listed in the
    report with the reason; the others are reported. A corrupt file that only
    shows when its data is read is found then: the report is rebuilt without
    that run.

    Parameters
    ----------
    inputs
        Run folders and/or sweep folders (searched at any depth).
    out_dir
        Folder for the report; created if missing.
    baseline
        ``(key, value)`` pairs naming the configuration every other one is
        compared with (:func:`gpureplay.report.stats.choose_baseline`); empty:
        the default rule.

    Returns
    -------
    BuiltReport
        The path of ``report.html`` and the run folders left out.

    Raises
    ------
    FileNotFoundError
        When an input is missing or no complete, readable run is found (the
        message lists the folders left out and why).
    gpureplay.errors.InputError
        When an input is not a folder, or ``baseline`` names no configuration.
    """
    paths = [Path(p) for p in inputs]
    summaries, left_out = complete_runs(paths)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        markdown, html, reported_left_out = _render(inputs, summaries, left_out, out_dir, baseline)
    except (pl.exceptions.PolarsError, OSError) as err:
        # A data page that does not decode: find the file (a scan over many runs does not
        # name it), leave its run out, and build again from the others.
        bad = _unreadable(summaries)
        if not bad:
            raise
        summaries, left_out = complete_runs(paths, exclude=bad)
        try:
            markdown, html, reported_left_out = _render(inputs, summaries, left_out, out_dir, baseline)
        except (pl.exceptions.PolarsError, OSError):
            raise err from None
    write_text_atomic(out_dir / REPORT_MD, markdown)
    html_path = out_dir / REPORT_HTML
    write_text_atomic(html_path, html)
    return BuiltReport(html_path, reported_left_out)


__all__ = ["REPORT_HTML", "REPORT_MD", "BuiltReport", "build", "build_report", "write_text_atomic"]
