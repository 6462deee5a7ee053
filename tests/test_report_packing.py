"""Reports and comparisons of packing runs (``mode=packing``, the FGD experiment).

Packing run folders are written here by hand as ``_run_packing`` writes them
(jobs, events, timeline, summary, timing.json, then ``DONE``), with the
headline metrics set so that every expected table cell is known exactly.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tests.test_report import write_sweep

from gpureplay.report import build_report
from gpureplay.report.collect import PACKING_METRICS, complete_runs
from gpureplay.report.folders import scan
from gpureplay.report.packing import collect_packing, config_table, curve_stats
from gpureplay.report.published import (
    ALLOCATED_AT_100,
    MEAN_ALLOCATED_AT_100,
    POLICIES,
    published,
    setting_mismatch,
)
from gpureplay.results.compare import compare_runs
from gpureplay.results.writer import mark_done, write_parquet_atomic

#: The paper's setting (trace, cluster, tune, shuffle), as the fgd-openb experiment writes it.
PAPER_SETTING: dict[str, object] = {
    "trace.name": "openb_packing",
    "trace.path": "openb/openb_pod_list_default.csv.gz",
    "cluster.name": "openb",
    "cluster.path": "openb/openb_node_list_gpu_node.csv.gz",
    "mode": "packing",
    "packing.tune": 1.3,
    "packing.shuffle": True,
    "packing.max_pct": 130,
}

#: Node placement of each scheduler preset written here.
PLACEMENT = {"fgd": "fgd", "fgd-random": "random"}

#: Per scheduler, per seed (42, 43): unallocated % at 100 and at the end, frag % at 100, failed pods at 100.
VALUES: dict[str, dict[str, tuple[float, float]]] = {
    "fgd": {"unalloc": (4.0, 6.0), "final": (3.0, 5.0), "frag": (3.5, 4.5), "failed": (10, 21)},
    "fgd-random": {
        "unalloc": (12.0, 15.0),
        "final": (11.0, 14.0),
        "frag": (11.0, 13.0),
        "failed": (100, 200),
    },
}


def write_packing_run(folder: Path, scheduler: str, seed: int, tune: float = 1.3) -> None:
    """One packing run folder: tables with the packing schemas' columns, timing.json, then DONE."""
    folder.mkdir(parents=True, exist_ok=True)
    i = seed - 42
    v = {k: values[i] for k, values in VALUES[scheduler].items()}
    config = {
        **PAPER_SETTING,
        "packing.tune": tune,
        "scheduler.name": scheduler,
        "scheduler.node_placement": PLACEMENT[scheduler],
        "seed": seed,
        "debug": False,
    }
    metrics = {
        "pods": 100,
        "placed": 100 - int(v["failed"]) - 5,
        "failed": int(v["failed"]) + 5,
        "capacity_gpus": 64,
        "arrived_gpu_pct": 130.0,
        "typical_pods": 3,
        "typical_pods_coverage": 0.96,
        "allocated_gpu_pct_at_100": 100.0 - v["unalloc"],
        "unallocated_gpu_pct_at_100": v["unalloc"],
        "frag_gpu_pct_at_100": v["frag"],
        "frag_ratio_pct_at_100": 90.0,
        "failed_pods_at_100": int(v["failed"]),
        "allocated_gpu_pct_final": 100.0 - v["final"],
        "unallocated_gpu_pct_final": v["final"],
        "frag_gpu_pct_final": v["frag"],
    }
    summary = pl.DataFrame([config]).hstack(
        [pl.Series(k, [x]).cast(PACKING_METRICS[k]) for k, x in metrics.items()]
    )
    arrived = np.arange(0, 131, dtype=np.int32)
    # Every arrived GPU placed until the cluster is full, then the unallocated share stays at its value.
    unallocated = np.maximum(100.0 - arrived, v["unalloc"])
    timeline = pl.DataFrame(
        {
            "arrived_pct": arrived,
            "pods_in_bin": np.ones(arrived.size, dtype=np.int32),
            "allocated_gpu_pct": 100.0 - unallocated,
            "unallocated_gpu_pct": unallocated,
            "frag_gpu_pct": np.minimum(unallocated, v["frag"]),
            "frag_ratio_pct": np.full(arrived.size, 90.0),
            "failed_pods": np.where(arrived >= 100, int(v["failed"]), 0).astype(np.int64),
            "failed_gpu_pct": np.zeros(arrived.size),
        }
    )
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(100, dtype=np.int64),
            "arrival": np.arange(100, dtype=np.int64),
            "state": ["placed"] * 95 + ["failed"] * 5,
            "node": np.zeros(100, dtype=np.int32),
            "gpu_milli": np.full(100, 1000, dtype=np.int64),
        }
    )
    events = jobs.select("arrival", pl.col("gpu_milli").cum_sum().alias("arrived_gpu_milli"))
    meta = {"seed": str(seed), "trace_sha256": "b" * 64, "cluster_sha256": "c" * 64, "mode": "packing"}
    tables = {
        "jobs.parquet": jobs,
        "events.parquet": events,
        "timeline.parquet": timeline,
        "summary.parquet": summary,
    }
    for name, table in tables.items():
        write_parquet_atomic(table, folder / name, meta)
    (folder / "timing.json").write_text(json.dumps({"compile_seconds": 0.5, "replay_seconds": 1.5}))
    mark_done(folder, {**{n: t.height for n, t in tables.items()}, "timing.json": 1})


def write_packing_sweep(root: Path, random_tune: float = 1.0) -> Path:
    """fgd (the paper's setting) and fgd-random (tune ``random_tune``) x seeds 42, 43."""
    for scheduler in ("fgd", "fgd-random"):
        for seed in (42, 43):
            tune = 1.3 if scheduler == "fgd" else random_tune
            write_packing_run(root / f"scheduler={scheduler},seed={seed}", scheduler, seed, tune)
    return root


@pytest.fixture(scope="module")
def packing_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("packing")
    sweep = write_packing_sweep(root / "sweep")
    return build_report([sweep], root / "out")


def test_packing_metrics_match_the_results_schema() -> None:
    from gpureplay.results.packing import PACKING_SUMMARY_SCHEMA

    assert PACKING_METRICS == PACKING_SUMMARY_SCHEMA


def test_scan_accepts_a_packing_folder_and_checks_its_events(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    write_packing_run(good, "fgd", 42)
    write_packing_run(bad, "fgd", 43)
    (bad / "events.parquet").write_bytes((bad / "events.parquet").read_bytes()[:40])
    found = scan([tmp_path])
    assert found.complete == [good]
    assert [(x.folder, x.kind) for x in found.left_out] == [(bad, "unreadable")]
    assert "events.parquet" in found.left_out[0].reason


def test_configurations_and_statistics_over_seeds(tmp_path: Path) -> None:
    summaries, _ = complete_runs([write_packing_sweep(tmp_path)])
    packing = collect_packing(summaries)
    # The paper's order: Random before FGD; labelled by the keys that differ.
    assert packing.configs.get_column("config").to_list() == [
        "scheduler=fgd-random",
        "scheduler=fgd",
    ]
    assert packing.configs.get_column("paper").to_list() == [None, "FGD"]
    table = {r["config"]: r for r in config_table(packing).iter_rows(named=True)}
    fgd = table["scheduler=fgd"]
    assert fgd["seeds"] == 2
    assert fgd["unalloc_mean"] == pytest.approx(5.0)
    assert (fgd["unalloc_min"], fgd["unalloc_max"]) == (4.0, 6.0)
    assert fgd["unalloc_final_mean"] == pytest.approx(4.0)
    assert fgd["frag_mean"] == pytest.approx(4.0)
    assert fgd["failed_mean"] == pytest.approx(15.5)
    # Median and 25-75% band over two seeds (4 and 6) at 100% arrived: linear interpolation.
    curve = curve_stats(packing, "unallocated_gpu_pct").filter(
        (pl.col("config") == "scheduler=fgd") & (pl.col("arrived_pct") == 100)
    )
    assert curve.select("median", "low", "high").row(0) == pytest.approx((5.0, 4.5, 5.5))


def test_packing_report_files_table_and_paper_column(packing_report: Path) -> None:
    out = packing_report.parent
    md = (out / "report.md").read_text()
    html = packing_report.read_text()
    for name in ("packing_unallocated.png", "packing_frag.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in md
    assert html.count('src="data:image/png;base64,') == 2
    # Only the packing section: no replay tables or figures.
    assert "## Headline metrics" not in md and not (out / "wait_cdf.png").exists()
    rows = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ")
        for line in md.splitlines()
        if "scheduler=" in line and line.startswith("|")
    }
    fgd = rows["scheduler=fgd"]
    # config, paper policy, seeds, mean, median, range, paper, ours-paper, end, paper@130, diff, frag, failed
    assert fgd[1:8] == ["FGD", "2", "5.00", "5.00", "4.00–6.00", "4.77 (4.62–4.94)", "+0.23"]
    assert fgd[8:13] == ["4.00", "4.61", "−0.61", "4.00", "15.5 |"]
    random = rows["scheduler=fgd-random"]
    # Not the paper's setting (tune 1.0): no published value beside it.
    assert random[1:8] == ["–", "2", "13.50", "13.50", "12.00–15.00", "–", "–"]
    assert random[8:13] == ["12.50", "–", "–", "12.00", "150 |"]
    assert "numpy" in md and "Go's math/rand" in md


def test_paper_setting_and_published_numbers() -> None:
    keys = {k: str(v) for k, v in PAPER_SETTING.items()}
    assert setting_mismatch(keys) is None
    assert setting_mismatch({**keys, "packing.shuffle": "False"}) is not None
    assert setting_mismatch({**keys, "trace.path": "openb/openb_pod_list_gpushare20.csv.gz"}) is not None
    for policy in POLICIES:
        # The published means are the means of the per-seed columns, to two decimals.
        assert statistics.mean(ALLOCATED_AT_100[policy]) == pytest.approx(
            MEAN_ALLOCATED_AT_100[policy], abs=0.006
        )
    assert published("FGD").unallocated_at_100 == pytest.approx(4.77)
    assert 1 - published("FGD").unallocated_at_100 / published("DotProd").unallocated_at_100 == pytest.approx(
        0.49, abs=0.005
    )


def test_sentences_compare_fgd_with_the_paper(tmp_path: Path) -> None:
    out = build_report([write_packing_sweep(tmp_path / "sweep", random_tune=1.3)], tmp_path / "out")
    md = (out.parent / "report.md").read_text()
    # (1 - 5/13.5) = 63%; the paper: 1 - 4.77/13.70 = 65%.
    assert "FGD leaves 63% fewer GPUs unallocated at 100% arrived than Random" in md
    assert "the paper: 65% fewer (4.77% vs 13.70%)" in md


def test_compare_shows_packing_columns(tmp_path: Path) -> None:
    table = compare_runs([write_packing_sweep(tmp_path)]).table
    assert "unalloc. GPU @100% (%)" in table.columns and "mean wait (h)" not in table.columns
    row = table.filter(pl.col("scheduler") == "fgd", pl.col("seed") == "42").row(0, named=True)
    assert row["unalloc. GPU @100% (%)"] == "4.00"
    assert row["alloc. GPU @100% (%)"] == "96.0"
    assert row["failed pods @100%"] == "10"


def test_mixed_replay_and_packing_inputs(tmp_path: Path) -> None:
    replay = write_sweep(tmp_path / "replay")
    packing = write_packing_sweep(tmp_path / "packing")
    html = build_report([replay, packing], tmp_path / "out")
    md = (html.parent / "report.md").read_text()
    assert "## Headline metrics" in md and "## Packing runs (FGD experiment)" in md
    assert (html.parent / "wait_cdf.png").exists() and (html.parent / "packing_unallocated.png").exists()
    # The replay tables hold the replay configurations only.
    headline = md.split("## Headline metrics")[1].split("## ")[0]
    assert "fgd" not in headline
    result = compare_runs([replay, packing])
    table = result.table
    assert {"mode", "mean wait (h)", "unalloc. GPU @100% (%)"} <= set(table.columns)
    packing_rows = table.filter(pl.col("mode") == "packing")
    assert packing_rows.height == 4
    assert set(packing_rows.get_column("mean wait (h)").to_list()) == {"n/a"}
    assert any("packing" in note for note in result.notes)
