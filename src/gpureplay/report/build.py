"""``build_report(inputs, out_dir)``: result folders in, ``report.md`` + ``report.html`` + PNGs out."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from gpureplay.report.collect import collect
from gpureplay.report.figures import make_figures
from gpureplay.report.render import ReportData, render_html, render_markdown
from gpureplay.report.stats import effect_sentences, effects, summarize

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


def build_report(inputs: Sequence[Path], out_dir: Path) -> Path:
    """Build the comparison report of every complete run under ``inputs``.

    Writes ``report.md`` (figures linked), ``report.html`` (self-contained:
    figures embedded, no external URL, no script) and the figures as PNG into
    ``out_dir``, each through a temporary file renamed into place, so an
    interrupted build never leaves a half-written file.

    Parameters
    ----------
    inputs
        Run folders and/or sweep folders (searched at any depth for folders
        with a ``DONE`` marker; incomplete ones are left out and listed).
    out_dir
        Folder for the report; created if missing.

    Returns
    -------
    pathlib.Path
        The path of ``report.html``.

    Raises
    ------
    FileNotFoundError
        When an input is missing or no complete run is found.
    gpureplay.errors.InputError
        When a run folder is malformed (a marker without its files, a
        summary with other than one row).
    """
    collection = collect([Path(p) for p in inputs])
    stats = summarize(collection)
    table = effects(collection, stats)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = ReportData(
        inputs=tuple(str(p) for p in inputs),
        collection=collection,
        stats=stats,
        effects=table,
        sentences=effect_sentences(table),
        figures=make_figures(collection, out_dir),
    )
    write_text_atomic(out_dir / REPORT_MD, render_markdown(data))
    html_path = out_dir / REPORT_HTML
    write_text_atomic(html_path, render_html(data))
    return html_path


__all__ = ["REPORT_HTML", "REPORT_MD", "build_report", "write_text_atomic"]
