"""Report figures: one panel per setting, curves named by what differs, no repeated style, legends
inside the image, and a sentence instead of an empty frame when there is nothing to draw.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from tests.test_report import HEADLINES, run_config, write_run

from gpureplay.report import build_report
from gpureplay.report.collect import collect
from gpureplay.report.figures import Drawn, draw_figures, layout, styles

SCHEDULERS = ("fifo", "sjf", "kube-default", "gang-binpack", "gang-spread", "easy-backfill")

#: Each trace's queues (itp has one: no per-queue panel for it).
QUEUES = {"philly": ("prod", "research", "vision"), "openb": ("alpha", "beta"), "itp": ("all",)}


@pytest.fixture(scope="module")
def eighteen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`sweep=schedulers-traces`: six schedulers on each of three traces, 18 configurations."""
    root = tmp_path_factory.mktemp("st")
    rng = np.random.default_rng(18)
    headline = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    for trace, queues in QUEUES.items():
        for i, scheduler in enumerate(SCHEDULERS):
            folder = root / f"trace={trace},scheduler={scheduler}"
            write_run(folder, run_config(scheduler, 0, trace), headline, rng, 600.0 * (i + 1), queues=queues)
    return root


def drawn(collection_root: Path) -> dict[str, Drawn | str]:
    items = draw_figures(collect([collection_root]))
    return {item if isinstance(item, str) else item.name: item for item in items}


def legend_inside(fig: Figure) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    [legend] = fig.legends
    box, frame = legend.get_window_extent(renderer), fig.bbox
    assert frame.x0 - 0.5 <= box.x0 and box.x1 <= frame.x1 + 0.5, (box, frame)
    assert frame.y0 - 0.5 <= box.y0 and box.y1 <= frame.y1 + 0.5, (box, frame)
    # Nothing of the legend overlaps an axes' drawing area.
    for ax in fig.axes:
        if ax.axison:
            assert not box.overlaps(ax.get_window_extent(renderer)), ax.get_title()


def line_styles(ax: Axes) -> list[tuple[object, object, object]]:
    return [(tuple(line.get_color()), line.get_linestyle(), line.get_marker()) for line in ax.get_lines()]


def test_eighteen_configurations_get_a_panel_per_trace_and_a_legend_of_schedulers(eighteen: Path) -> None:
    lay = layout(collect([eighteen]))
    assert sorted(lay.panels) == ["itp", "openb", "philly"]
    assert sorted(lay.names) == sorted(SCHEDULERS)  # curves named by the scheduler alone
    figures = drawn(eighteen)
    for name in ("wait_cdf.png", "jct_cdf.png", "timeline.png", "queues.png"):
        item = figures[name]
        assert isinstance(item, Drawn)
        legend_inside(item.figure)
        labels = [t.get_text() for t in item.figure.legends[0].get_texts()]
        assert sorted(labels) == sorted(SCHEDULERS)
    cdf = figures["wait_cdf.png"]
    assert isinstance(cdf, Drawn)
    titled = [ax for ax in cdf.figure.axes if ax.get_title()]
    assert sorted(ax.get_title() for ax in titled) == ["itp", "openb", "philly"]
    for ax in titled:
        found = line_styles(ax)
        assert len(found) == 6 and len(set(found)) == 6


def test_timeline_shades_the_measurement_window(eighteen: Path) -> None:
    item = drawn(eighteen)["timeline.png"]
    assert isinstance(item, Drawn)
    tops = [ax for ax in item.figure.axes if ax.get_title()]
    assert len(tops) == 3
    for ax in tops:
        assert [t.get_text() for t in ax.texts] == [" measurement window"]
        assert len(ax.patches) == 1  # the shaded span: the written runs' window is the first day
    assert item.caption.endswith("the shaded span is the measurement window.")


def test_queues_of_different_traces_never_share_an_axis(eighteen: Path) -> None:
    item = drawn(eighteen)["queues.png"]
    assert isinstance(item, Drawn)
    axes = [ax for ax in item.figure.axes if ax.axison]
    titles = [ax.get_title() for ax in axes if ax.get_title()]
    assert sorted(titles) == ["openb", "philly"]  # itp has a single queue: no panel
    for top, bottom in zip(axes[::2], axes[1::2], strict=True):
        queues = {t.get_text() for t in bottom.get_xticklabels()}
        assert queues == set(QUEUES[top.get_title()])


def test_many_treatments_in_one_panel_never_repeat_a_style(tmp_path: Path) -> None:
    # 18 configurations compared in one setting: scheduler x backfill depth.
    rng = np.random.default_rng(3)
    headline = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    for scheduler in SCHEDULERS:
        for depth in ("0", "8", "100"):
            config = run_config(scheduler, 0) | {"scheduler.backfill_depth": depth}
            write_run(tmp_path / f"{scheduler}-{depth}", config, headline, rng)
    lay = layout(collect([tmp_path]))
    assert lay.panels == [""] and len(lay.names) == 18
    assert "scheduler=easy-backfill, scheduler.backfill_depth=100" in lay.names
    figures = drawn(tmp_path)
    for name in ("wait_cdf.png", "timeline.png"):
        item = figures[name]
        assert isinstance(item, Drawn)
        legend_inside(item.figure)
        for ax in item.figure.axes:
            if ax.get_lines():
                assert len(set(line_styles(ax))) == len(ax.get_lines()) == 18


def test_styles_are_distinct_beyond_the_palette() -> None:
    for n in (1, 10, 11, 40, 41, 90):
        found = styles(n)
        assert len({(s.colour, s.linestyle, s.marker) for s in found}) == n
        assert len({(s.colour, s.hatch) for s in found}) == min(n, 60)


def test_no_job_waited_is_said_not_drawn(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    for scheduler in ("fifo", "gang-binpack"):
        write_run(tmp_path / "idle" / scheduler, run_config(scheduler, 0, "openb"), {}, rng, wait_scale=0.0)
    report = build_report([tmp_path / "idle"], tmp_path / "out")
    md = (report.parent / "report.md").read_text()
    assert not (report.parent / "wait_cdf.png").exists() and "wait_cdf.png" not in md
    assert "- Wait time CDF: no job waited in any run (every job started on arrival)." in md
    # Beside a trace where jobs waited, the idle trace's panel says so instead of an empty frame.
    for scheduler in ("fifo", "gang-binpack"):
        write_run(tmp_path / "busy" / scheduler, run_config(scheduler, 0, "philly"), {}, rng)
    item = drawn(tmp_path)["wait_cdf.png"]
    assert isinstance(item, Drawn)
    idle = next(ax for ax in item.figure.axes if ax.get_title() == "openb")
    assert not idle.axison and [t.get_text() for t in idle.texts] == [
        "no job waited\n(every job started on arrival)"
    ]
    busy = next(ax for ax in item.figure.axes if ax.get_title() == "philly")
    assert busy.get_xlim()[0] >= 1.0 and len(busy.get_lines()) == 2


def test_one_sample_timeline_is_said_not_drawn(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    for scheduler in ("fifo", "gang-binpack"):
        write_run(tmp_path / "short" / scheduler, run_config(scheduler, 0), {}, rng, samples=1)
    report = build_report([tmp_path / "short"], tmp_path / "out")
    md = (report.parent / "report.md").read_text()
    assert not (report.parent / "timeline.png").exists()
    assert "- GPU allocation over time: every run has a single timeline sample" in md
    # Two samples draw, on an axis that starts at zero.
    for scheduler in ("fifo", "gang-binpack"):
        write_run(tmp_path / "two" / scheduler, run_config(scheduler, 0), {}, rng, samples=2)
    item = drawn(tmp_path / "two")["timeline.png"]
    assert isinstance(item, Drawn)
    for ax in item.figure.axes:
        if ax.axison:
            assert ax.get_xlim()[0] == 0.0 and ax.get_xlim()[1] > 0.0
