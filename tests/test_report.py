"""Comparison reports: collection of run folders, across-seed statistics, effect sentences, files.

Run folders are written here the way ``run_experiment`` writes them (explicit
schemas, atomic writes, ``DONE`` last). Per-job tables and timelines come from
the real metric functions on generated jobs; the headline metrics of each
summary are set by hand so every expected cell and sentence is known exactly.
"""

from __future__ import annotations

import base64
import math
import re
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.report import build_report
from gpureplay.report.collect import collect, label_keys
from gpureplay.report.stats import effect_sentences, effects, summarize, t_quantile
from gpureplay.results.metrics import (
    MeasurementWindow,
    RunSpan,
    job_results,
    summary_metrics,
    timeline_results,
)
from gpureplay.results.schemas import SUMMARY_METRICS_SCHEMA
from gpureplay.results.writer import mark_done, write_parquet_atomic

#: t(0.975, 1) from printed tables (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
T_975_DF1 = 12.706204736

#: Policy keys that each scheduler preset fixes (so its name implies them).
PRESETS: dict[str, dict[str, str]] = {
    "fifo": {"scheduler.queue_order": "fifo", "scheduler.backfill": "none"},
    "gang-binpack": {"scheduler.queue_order": "fifo", "scheduler.backfill": "none"},
    "sjf": {"scheduler.queue_order": "sjf", "scheduler.backfill": "none"},
}

#: Headline metrics per scheduler, one value per seed (seeds 0 and 1). Times in seconds.
HEADLINES: dict[str, dict[str, tuple[float, float]]] = {
    "fifo": {
        "finished": (40, 40),
        "deadlocked": (0, 0),
        "wait_p95": (3600.0, 7200.0),
        "jct_mean": (36000.0, 36000.0),
        "makespan": (360000.0, 360000.0),
        "gpu_allocation_rate": (0.50, 0.54),
        "fragmented_gpus_mean": (4.0, 4.0),
    },
    "gang-binpack": {
        "finished": (40, 40),
        "deadlocked": (0, 0),
        "wait_p95": (1800.0, 2700.0),
        "jct_mean": (28800.0, 32400.0),
        "makespan": (360000.0, 360000.0),
        "gpu_allocation_rate": (0.62, 0.66),
        "fragmented_gpus_mean": (2.0, 2.0),
    },
    "sjf": {
        "finished": (38, 38),
        "deadlocked": (2, 2),
        "wait_p95": (5400.0, 9000.0),
        "jct_mean": (36000.0, 37800.0),
        "makespan": (540000.0, 540000.0),
        "gpu_allocation_rate": (0.52, 0.52),
        "fragmented_gpus_mean": (4.0, 4.0),
    },
}

#: The same for every configuration: no effect to state.
SAME: dict[str, float] = {
    "jobs": 40,
    "rejected": 0,
    "wait_mean": 1800.0,
    "jct_p95": 72000.0,
    "bounded_slowdown_mean": 2.0,
}

N_JOBS = 40
TOTAL_GPUS = 32


def run_config(scheduler: str, seed: int, trace: str = "philly", load: str = "1.0") -> dict[str, str]:
    """Flattened config of one run, as ``flatten_config`` writes it."""
    config = {
        "trace.name": trace,
        "trace.kind": trace,
        "cluster.name": trace,
        "scheduler.name": scheduler,
        **PRESETS[scheduler],
        "workload.name": "none",
        "workload.load": load,
        "seed": str(seed),
        "sample_interval": "3600.0",
        "horizon": "null",
        # Varies between runs but never defines a configuration.
        "debug": "True" if seed == 1 else "False",
    }
    if trace == "philly":
        config["trace.max_gpus_per_pod"] = "8"  # only Philly has it: summaries differ in columns
    return config


def write_run(
    folder: Path,
    config: dict[str, str],
    headline: dict[str, float],
    rng: np.random.Generator,
    wait_scale: float = 1800.0,
    done: bool = True,
) -> None:
    """Write one run folder: jobs, timeline and summary (+ DONE unless ``done`` is False)."""
    folder.mkdir(parents=True, exist_ok=True)
    submit = np.sort(rng.uniform(0.0, 86400.0, N_JOBS))
    duration = rng.lognormal(8.0, 1.2, N_JOBS)
    wait = rng.exponential(wait_scale, N_JOBS)
    wait[:8] = 0.0  # some jobs start at once, as on a real cluster
    start = submit + wait
    finish = start + duration
    canonical = pl.DataFrame(
        {
            "job_id": np.arange(1, N_JOBS + 1),
            "queue": np.where(np.arange(N_JOBS) % 3 == 0, "prod", "research"),
            "user": [f"u{i % 5}" for i in range(N_JOBS)],
            "priority": np.zeros(N_JOBS, dtype=np.int32),
            "num_pods": np.where(np.arange(N_JOBS) % 4 == 0, 2, 1).astype(np.int32),
            "gpu_milli": np.where(np.arange(N_JOBS) % 5 == 0, 4000, 1000).astype(np.int32),
            "submit_time": submit,
            "duration": duration,
        }
    )
    outcome = pl.DataFrame(
        {
            "job_id": np.arange(1, N_JOBS + 1),
            "start_time": start,
            "finish_time": finish,
            "state": ["finished"] * N_JOBS,
            "reject_reason": [None] * N_JOBS,
            "nodes_spanned": np.ones(N_JOBS, dtype=np.int32),
            "held_milli": np.zeros(N_JOBS, dtype=np.int64),
            "preemptions": np.zeros(N_JOBS, dtype=np.int32),
        },
        schema_overrides={"reject_reason": pl.String},
    )
    jobs = job_results(canonical, outcome)
    times = np.arange(0.0, 48 * 3600.0, 3600.0)
    allocated = np.clip(np.round(TOTAL_GPUS * (0.5 + 0.4 * np.sin(times / 20000.0))), 0, TOTAL_GPUS)
    timeline = timeline_results(
        pl.DataFrame(
            {
                "time": times,
                "allocated_gpus": allocated.astype(np.int32),
                "allocated_milli": (allocated * 1000).astype(np.int64),
                "pending_jobs": rng.integers(0, 10, times.size).astype(np.int32),
                "running_jobs": rng.integers(0, 10, times.size).astype(np.int32),
                "fragmented_gpus": rng.integers(0, 6, times.size).astype(np.int32),
            }
        ),
        TOTAL_GPUS,
    )
    metrics = summary_metrics(
        jobs,
        timeline,
        span=RunSpan(0.0, float(finish.max())),
        window=MeasurementWindow(float(submit.min()), float(submit.max())),
        gpu_milli_seconds=float(jobs["gpus"].sum()) * 1000.0 * 3600.0,
        window_gpu_milli_seconds=None,
        total_gpus=TOTAL_GPUS,
        sample_interval=3600.0,
    )
    metrics = metrics.with_columns(
        pl.lit(v).cast(SUMMARY_METRICS_SCHEMA[k]).alias(k) for k, v in {**SAME, **headline}.items()
    )
    summary = pl.DataFrame([config], schema=dict.fromkeys(config, pl.String())).hstack(metrics)
    meta = {"seed": config["seed"]}
    tables = {"jobs.parquet": jobs, "timeline.parquet": timeline, "summary.parquet": summary}
    for name, table in tables.items():
        write_parquet_atomic(table, folder / name, meta)
    if done:
        mark_done(folder, {name: t.height for name, t in tables.items()})


def write_sweep(root: Path) -> Path:
    """3 schedulers x 2 seeds in Hydra's multirun layout, plus one killed run without DONE."""
    rng = np.random.default_rng(7)
    scale = {"fifo": 3600.0, "gang-binpack": 1200.0, "sjf": 5400.0}
    for scheduler, metrics in HEADLINES.items():
        for seed in (0, 1):
            headline = {k: v[seed] for k, v in metrics.items()}
            folder = root / "sweep" / f"scheduler={scheduler},seed={seed}"
            write_run(folder, run_config(scheduler, seed), headline, rng, scale[scheduler])
    # A run killed before its marker: wild numbers that must not reach the report.
    wild = {k: v[0] * 1000 for k, v in HEADLINES["fifo"].items()}
    write_run(root / "sweep" / "scheduler=fifo,seed=2", run_config("fifo", 2), wild, rng, done=False)
    return root / "sweep"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    sweep = write_sweep(root)
    return build_report([sweep], root / "out")


def test_collect_labels_configurations_by_varying_keys_only(tmp_path: Path) -> None:
    collection = collect([write_sweep(tmp_path)])
    assert collection.label_keys == ("scheduler.name",)
    assert collection.configs.get_column("config").to_list() == [
        "scheduler=fifo",
        "scheduler=gang-binpack",
        "scheduler=sjf",
    ]
    assert collection.configs.get_column("runs").to_list() == [2, 2, 2]
    assert collection.common["trace.name"] == "philly"
    assert "debug" not in collection.common and "seed" not in collection.common
    assert collection.runs.height == 6
    assert collection.notes and "1 incomplete run folder" in collection.notes[0]
    assert "seed=2" in collection.notes[0]
    jobs = collection.jobs.group_by("config").len().collect()
    assert dict(jobs.iter_rows()) == {c: 2 * N_JOBS for c in collection.configs["config"]}


def test_label_keeps_a_key_set_independently_of_the_name() -> None:
    runs = pl.DataFrame(
        {
            "scheduler.name": ["fifo", "fifo", "gang-binpack", "gang-binpack"],
            "scheduler.backfill_depth": ["0", "8", "0", "0"],
            "scheduler.queue_order": ["fifo", "fifo", "priority", "priority"],
            "trace.name": ["philly"] * 4,
        }
    )
    assert label_keys(runs, runs.columns) == ["scheduler.name", "scheduler.backfill_depth"]


def test_table_holds_means_and_student_t_intervals(tmp_path: Path) -> None:
    stats = summarize(collect([write_sweep(tmp_path)]))
    for scheduler, metrics in HEADLINES.items():
        for metric, values in metrics.items():
            row = stats.filter((pl.col("config") == f"scheduler={scheduler}") & (pl.col("metric") == metric))
            mean = statistics.mean(values)
            half = T_975_DF1 * statistics.stdev(values) / math.sqrt(2)
            assert row["n"].item() == 2
            assert row["mean"].item() == pytest.approx(mean, rel=1e-12)
            assert row["half_width"].item() == pytest.approx(half, rel=1e-9, abs=1e-9)
            assert row["low"].item() == pytest.approx(mean - half, rel=1e-9, abs=1e-9)
    assert t_quantile(0.975, 1) == pytest.approx(T_975_DF1, rel=1e-9)


def test_markdown_table_cells(report: Path) -> None:
    md = (report.parent / "report.md").read_text()
    table = md.split("## Headline metrics")[1].split("\n## ")[0]
    rows = {
        line.split(" | ")[0].lstrip("| "): line for line in table.splitlines() if line.startswith("| sch")
    }
    assert list(rows) == ["scheduler=fifo", "scheduler=gang-binpack", "scheduler=sjf"]
    # fifo p95 wait: mean 5400 s = 1.50 h, half-width 12.7062 * 2545.58 / sqrt(2) s = 6.35 h.
    assert "| 1.50 ± 6.35 |" in rows["scheduler=fifo"]
    # gang-binpack p95 wait: 2250 s = 0.625 h ± 5717.8 s = 1.588 h; mean JCT 8.50 ± 6.35 h.
    assert "| 0.625 ± 1.588 |" in rows["scheduler=gang-binpack"]
    assert "| 8.50 ± 6.35 |" in rows["scheduler=gang-binpack"]
    # GPU allocation in percent: 52.0 ± 25.4; a metric equal in both seeds shows its mean alone.
    assert "| 52.0 ± 25.4 |" in rows["scheduler=fifo"]
    assert "| 10.0 |" in rows["scheduler=fifo"]  # mean JCT 36000 s both seeds
    assert rows["scheduler=sjf"].startswith("| scheduler=sjf | 2 | 40 | 38 | 2 | 0 |")  # whole numbers


def test_effect_sentences_direction_and_size(tmp_path: Path) -> None:
    collection = collect([write_sweep(tmp_path)])
    table = effects(collection, summarize(collection))
    assert set(table["baseline"]) == {"scheduler=fifo"}
    # deadlocked and rejected have a zero baseline: no relative change.
    assert table.filter(pl.col("metric").is_in(["deadlocked", "rejected"]))["relative"].null_count() == 4
    assert effect_sentences(table) == [
        "gang-binpack cuts p95 wait by 58% vs fifo on philly (better, though the 95% intervals overlap).",
        "gang-binpack cuts fragmented GPUs by 50% vs fifo on philly (better).",
        "sjf raises makespan by 50% vs fifo on philly (worse).",
        "sjf raises p95 wait by 33% vs fifo on philly (worse, though the 95% intervals overlap).",
        "gang-binpack raises GPU allocation by 23% vs fifo on philly "
        "(better, though the 95% intervals overlap).",
        "gang-binpack cuts mean JCT by 15% vs fifo on philly (better, though the 95% intervals overlap).",
        "sjf cuts finished jobs by 5.0% vs fifo on philly (worse).",
        "sjf raises mean JCT by 2.5% vs fifo on philly (worse, though the 95% intervals overlap).",
    ]
    # Fewer places: one each first, so the stronger configuration cannot take them all.
    assert effect_sentences(table, limit=2) == [
        "gang-binpack cuts p95 wait by 58% vs fifo on philly (better, though the 95% intervals overlap).",
        "sjf raises makespan by 50% vs fifo on philly (worse).",
    ]


def test_baseline_is_first_config_without_fifo_and_settings_stay_apart(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    for trace in ("philly", "openb"):
        for scheduler, p95 in (("gang-binpack", 3600.0), ("sjf", 1800.0 if trace == "philly" else 7200.0)):
            headline = {k: v[0] for k, v in HEADLINES["fifo"].items()} | {"wait_p95": p95}
            write_run(tmp_path / trace / scheduler, run_config(scheduler, 0, trace), headline, rng)
    collection = collect([tmp_path / "philly", tmp_path / "openb"])
    # cluster.name varies with the trace but is a group of its own: it stays in the label.
    assert collection.label_keys == ("scheduler.name", "trace.name", "cluster.name")
    stats = summarize(collection)
    assert stats["half_width"].null_count() == stats.height  # one seed: no interval
    assert effect_sentences(effects(collection, stats)) == [
        "sjf raises p95 wait by 100% vs gang-binpack on openb (worse).",
        "sjf cuts p95 wait by 50% vs gang-binpack on philly (better).",
    ]
    md = (build_report([tmp_path], tmp_path / "out").parent / "report.md").read_text()
    assert "| scheduler=gang-binpack, trace=openb, cluster=openb | 1 | 40 |" in md
    table = md.split("## Headline metrics")[1].split("\n## ")[0]
    assert "| 1.00 |" in table and "±" not in table.split("\n|:---")[1]  # a single seed: the mean alone


def test_schedulers_are_compared_at_equal_load(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    base = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    p95 = {("fifo", "1.0"): 3600.0, ("gang-binpack", "1.0"): 2700.0, ("fifo", "2.0"): 7200.0}
    p95[("gang-binpack", "2.0")] = 3600.0
    for (scheduler, load), value in p95.items():
        config = run_config(scheduler, 0, load=load)
        write_run(tmp_path / f"{scheduler}-{load}", config, base | {"wait_p95": value}, rng)
    collection = collect([tmp_path])
    assert collection.configs["config"].to_list() == [
        "scheduler=fifo, workload.load=1.0",
        "scheduler=fifo, workload.load=2.0",
        "scheduler=gang-binpack, workload.load=1.0",
        "scheduler=gang-binpack, workload.load=2.0",
    ]
    # Not load 2.0 vs load 1.0: each scheduler against fifo at the same load.
    assert effect_sentences(effects(collection, summarize(collection))) == [
        "gang-binpack cuts p95 wait by 50% vs fifo on philly at workload.load=2.0 (better).",
        "gang-binpack cuts p95 wait by 25% vs fifo on philly at workload.load=1.0 (better).",
    ]


def test_report_files_link_and_embed_every_figure(report: Path) -> None:
    out = report.parent
    md = (out / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert sorted(links) == ["jct_cdf.png", "queues.png", "timeline.png", "wait_cdf.png"]
    for link in links:
        assert (out / link).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = report.read_text()
    assert "http://" not in page and "https://" not in page and "<script" not in page
    embedded = re.findall(r'<img src="data:image/png;base64,([^"]+)"', page)
    assert len(embedded) == len(links)
    assert {base64.b64decode(e) for e in embedded} == {(out / link).read_bytes() for link in links}
    assert "Largest differences" in page and "gang-binpack cuts p95 wait by 58% vs fifo on philly" in page
    assert not list(out.glob(".*tmp*"))  # no temporary file left behind


def test_single_queue_runs_have_no_queue_figure(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    folder = tmp_path / "run"
    write_run(folder, run_config("fifo", 0), {k: v[0] for k, v in HEADLINES["fifo"].items()}, rng)
    jobs = pl.read_parquet(folder / "jobs.parquet").with_columns(pl.lit("only").alias("queue"))
    write_parquet_atomic(jobs, folder / "jobs.parquet", {})
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "queues.png").write_bytes(b"stale")
    report = build_report([folder], tmp_path / "out")
    md = (report.parent / "report.md").read_text()
    assert "queues.png" not in md and not (report.parent / "queues.png").exists()
    assert "Only one configuration: nothing to compare." in md
    assert "| scheduler=fifo | 1 |" in md


def test_duplicate_run_is_counted_once(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    headline = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    for copy in ("a", "b"):
        write_run(tmp_path / copy, run_config("fifo", 0), headline, rng)
    collection = collect([tmp_path])
    assert collection.runs.height == 1
    assert any("repeating another run's configuration and seed" in n for n in collection.notes)


def test_bad_inputs_give_clear_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no complete run"):
        build_report([empty], tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        build_report([tmp_path / "missing"], tmp_path / "out")
    rng = np.random.default_rng(1)
    partial = tmp_path / "partial"
    write_run(partial, run_config("fifo", 0), {}, rng, done=False)
    with pytest.raises(FileNotFoundError, match=r"1 incomplete folder\(s\) without a DONE marker"):
        build_report([partial], tmp_path / "out")
    broken = tmp_path / "broken"
    write_run(broken, run_config("fifo", 0), {}, rng)
    (broken / "timeline.parquet").unlink()
    with pytest.raises(InputError, match=r"broken: has a DONE marker but no timeline\.parquet"):
        build_report([broken], tmp_path / "out")
    assert not (tmp_path / "out").exists()
