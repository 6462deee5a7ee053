"""The documentation site builds in strict mode, and its reference pages name what the code declares.

``mkdocs build --strict`` fails on a link to a page or anchor that does not exist and on a page left out of
the navigation, so a broken link fails the suite, not a reader. The Results page must name every column of
every result file, and no page may point at the team's internal references (they are not in the repository).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"

try:
    import material  # noqa: F401
    import mkdocs  # noqa: F401
except ImportError:  # pragma: no cover - the dev extra installs both
    HAVE_MKDOCS = False
else:
    HAVE_MKDOCS = True

needs_mkdocs = pytest.mark.skipif(
    not HAVE_MKDOCS, reason="mkdocs or mkdocs-material not installed (pip install -e '.[dev]')"
)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``."""
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config)]
    return subprocess.run(
        [*command, "--site-dir", str(site)],
        capture_output=True,
        text=True,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )


@needs_mkdocs
def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    result = build(REPO / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "engine" / "queues" / "kueue" / "index.html").is_file()


@needs_mkdocs
def test_a_broken_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text() + "\nSee [a rule](engine/fit.md#no-such-rule).\n")
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-rule" in result.stdout + result.stderr


def test_every_page_is_in_the_navigation() -> None:
    nav = (REPO / "mkdocs.yml").read_text()
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    missing = [p for p in pages if p not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def test_the_results_page_names_every_column_of_every_result_file() -> None:
    from gpureplay.replay.packing import PACKING_EVENT_SCHEMA, PACKING_POD_SCHEMA, PACKING_TIMELINE_SCHEMA
    from gpureplay.results import schemas
    from gpureplay.results.packing import PACKING_SUMMARY_SCHEMA
    from gpureplay.results.writer import PACKING_FILES, RESULT_FILES

    text = (DOCS / "results.md").read_text()
    tables = {
        "jobs": schemas.JOBS_RESULT_SCHEMA,
        "attempts": schemas.ATTEMPTS_RESULT_SCHEMA,
        "timeline": schemas.TIMELINE_SCHEMA,
        "queues": schemas.QUEUE_SAMPLE_SCHEMA,
        "queue_summary": schemas.QUEUE_SUMMARY_SCHEMA,
        "summary": schemas.SUMMARY_METRICS_SCHEMA,
        "packing jobs": PACKING_POD_SCHEMA,
        "packing events": PACKING_EVENT_SCHEMA,
        "packing timeline": PACKING_TIMELINE_SCHEMA,
        "packing summary": PACKING_SUMMARY_SCHEMA,
    }
    missing = {name: [c for c in schema if f"| `{c}` |" not in text] for name, schema in tables.items()}
    assert not any(missing.values()), f"docs/results.md lacks columns: {missing}"
    files = [f for f in (*RESULT_FILES, *PACKING_FILES, "timing.json") if f"`{f}`" not in text]
    assert not files, f"docs/results.md lacks files: {files}"


def test_no_page_points_at_files_the_repository_lacks() -> None:
    # The team's internal references are not shipped: the docs must stand alone.
    for page in [REPO / "README.md", *DOCS.rglob("*.md")]:
        text = page.read_text()
        for name in ("scheduler-semantics", "DESIGN.md", "engine-semantics.md"):
            assert name not in text, f"{page.relative_to(REPO)} cites {name}"
