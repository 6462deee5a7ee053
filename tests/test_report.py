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
from gpureplay.report.collect import SUMMARY_METRICS, collect, label_keys
from gpureplay.report.figures import layout, quota_figure
from gpureplay.report.published_queueing import philly_queueing
from gpureplay.report.queue_waits import longest_waits, why
from gpureplay.report.stats import choose_baseline, effect_sentences, effects, summarize, t_quantile
from gpureplay.results.schemas import JOB_STATES
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
        **PRESETS.get(scheduler, {}),
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


def typed(config: dict[str, str]) -> dict[str, object]:
    """The same config with typed values, as summaries keep them now (seed Int64, load Float64, ...)."""
    kinds: dict[str, type] = {
        "seed": int,
        "workload.load": float,
        "sample_interval": float,
        "trace.max_gpus_per_pod": int,
    }
    out: dict[str, object] = {}
    for key, value in config.items():
        if value == "null":
            out[key] = None
        elif key == "debug":
            out[key] = value == "True"
        else:
            out[key] = kinds.get(key, str)(value)
    return out


#: Measurement window of the written runs: the first to the last arrival (submits span one day).
WINDOW = (0.0, 86400.0)


def summary_row(config: dict[str, object], headline: dict[str, float], window: bool = True) -> pl.DataFrame:
    """A one-row summary: config keys as given, then metrics (SAME, then ``headline``).

    With ``window``, the measurement-window metrics equal the whole-run ones unless
    ``headline`` sets them, and censored counts are zero unless set; without it, the
    summary is the one an older version wrote: no window, no censoring, ``replay_seconds``.
    """
    values: dict[str, float] = {
        "total_gpus": TOTAL_GPUS,
        "unfinished": 0,
        "wait_median": 900.0,
        "wait_p99": 9000.0,
        "jct_median": 20000.0,
        "jct_p99": 90000.0,
        **SAME,
        **headline,
    }
    if window:
        values = {
            "never_started": 0,
            "wait_censored": 0,
            "jct_censored": 0,
            "span_start": 0.0,
            "span_end": values.get("makespan", 360000.0),
            "window_start": WINDOW[0],
            "window_end": WINDOW[1],
            **values,
        }
        whole = {k: v for k, v in values.items() if not k.startswith("window_")}
        for name in [*SUMMARY_METRICS]:
            if name.startswith("window_") and name not in values:
                source = name.removeprefix("window_")
                if source == "jobs" or source in whole:
                    values[name] = whole[source]
    else:
        values["replay_seconds"] = 41.0
        values = {k: v for k, v in values.items() if not k.startswith("window_")}
    metrics = {k: pl.Series(k, [v]).cast(SUMMARY_METRICS[k]) for k, v in values.items()}
    return pl.DataFrame([pl.Series(k, [v]) for k, v in config.items()]).hstack(list(metrics.values()))


def write_run(
    folder: Path,
    config: dict[str, object],
    headline: dict[str, float],
    rng: np.random.Generator,
    wait_scale: float = 1800.0,
    done: bool = True,
    window: bool = True,
    meta: dict[str, str] | None = None,
    queues: tuple[str, ...] = ("prod", "research"),
    samples: int = 48,
) -> None:
    """Write one run folder as ``run_experiment`` does: jobs, timeline, summary, then DONE (if ``done``).

    Tables are written by hand with the result schemas' column names, so these
    tests do not depend on how the metrics are computed, only on the files.
    """
    folder.mkdir(parents=True, exist_ok=True)
    submit = np.sort(rng.uniform(0.0, 86400.0, N_JOBS))
    duration = rng.lognormal(8.0, 1.2, N_JOBS)
    wait = rng.exponential(wait_scale, N_JOBS) if wait_scale > 0 else np.zeros(N_JOBS)
    wait[:8] = 0.0  # some jobs start at once, as on a real cluster
    start = submit + wait
    finish = start + duration
    num_pods = np.where(np.arange(N_JOBS) % 4 == 0, 2, 1).astype(np.int32)
    gpu_milli = np.where(np.arange(N_JOBS) % 5 == 0, 4000, 1000).astype(np.int32)
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(1, N_JOBS + 1, dtype=np.int64),
            "queue": [queues[i % len(queues)] for i in range(N_JOBS)],
            "user": [f"u{i % 5}" for i in range(N_JOBS)],
            "priority": np.zeros(N_JOBS, dtype=np.int32),
            "num_pods": num_pods,
            "gpu_milli": gpu_milli,
            "gpus": num_pods * gpu_milli / 1000.0,
            "submit_time": submit,
            "duration": duration,
            "start_time": start,
            "finish_time": finish,
            "wait_time": wait,
            "jct": finish - submit,
            "run_time": duration,
            "state": pl.Series(["finished"] * N_JOBS, dtype=pl.Enum(JOB_STATES)),
        }
    )
    times = np.arange(0.0, samples * 3600.0, 3600.0)
    allocated = np.clip(np.round(TOTAL_GPUS * (0.5 + 0.4 * np.sin(times / 20000.0))), 0, TOTAL_GPUS)
    timeline = pl.DataFrame(
        {
            "time": times,
            "allocated_gpus": allocated.astype(np.int32),
            "allocated_milli": (allocated * 1000).astype(np.int64),
            "allocated_fraction": allocated / TOTAL_GPUS,
            "pending_jobs": rng.integers(0, 10, times.size).astype(np.int32),
            "running_jobs": rng.integers(0, 10, times.size).astype(np.int32),
            "fragmented_gpus": rng.integers(0, 6, times.size).astype(np.int32),
        }
    )
    summary = summary_row(config, headline, window)
    metadata = {"seed": str(config.get("seed")), "trace_sha256": "a" * 64, "cluster_sha256": ""}
    metadata.update(meta or {})
    tables = {"jobs.parquet": jobs, "timeline.parquet": timeline, "summary.parquet": summary}
    for name, table in tables.items():
        write_parquet_atomic(table, folder / name, metadata)
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
    assert not collection.notes
    [killed] = collection.left_out
    assert killed.folder.name == "scheduler=fifo,seed=2" and killed.kind == "incomplete"
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
    # Two rows per configuration: the measurement window, then the whole run.
    scoped = {
        (line.split(" | ")[0].lstrip("| "), line.split(" | ")[2]): line
        for line in table.splitlines()
        if line.startswith("| sch")
    }
    assert list(scoped) == [
        (config, scope)
        for config in ("scheduler=fifo", "scheduler=gang-binpack", "scheduler=sjf")
        for scope in ("window", "whole run")
    ]
    rows = {config: line for (config, scope), line in scoped.items() if scope == "whole run"}
    for (config, scope), line in scoped.items():
        if scope == "window":  # the written window metrics equal the whole-run ones
            assert line.replace("| window |", "| whole run |") == rows[config]
    # fifo p95 wait: mean 5400 s = 1.50 h, half-width 12.7062 * 2545.58 / sqrt(2) s = 6.35 h.
    assert "| 1.50 ± 6.35 |" in rows["scheduler=fifo"]
    # gang-binpack p95 wait: 2250 s = 0.625 h ± 5717.8 s = 1.588 h; mean JCT 8.50 ± 6.35 h.
    assert "| 0.625 ± 1.588 |" in rows["scheduler=gang-binpack"]
    assert "| 8.50 ± 6.35 |" in rows["scheduler=gang-binpack"]
    # GPU allocation in percent: 52.0 ± 25.4; a metric equal in both seeds shows its mean alone.
    assert "| 52.0 ± 25.4 |" in rows["scheduler=fifo"]
    assert "| 10.0 |" in rows["scheduler=fifo"]  # mean JCT 36000 s both seeds
    outcomes = md.split("## Job outcomes")[1].split("\n## ")[0]
    # jobs, finished, never started, deadlocked, rejected: whole numbers.
    assert "| scheduler=sjf | 2 | 40 | 38 | 0 | 2 | 0 |" in outcomes


def test_effect_sentences_direction_and_size(tmp_path: Path) -> None:
    collection = collect([write_sweep(tmp_path)])
    table = effects(collection, summarize(collection))
    assert set(table["baseline"]) == {"scheduler=fifo"}
    # deadlocked has a zero baseline: no relative change, an absolute one.
    deadlocked = table.filter(pl.col("metric") == "deadlocked")
    assert deadlocked["relative"].null_count() == 2 and deadlocked["change"].to_list() == [0.0, 2.0]
    # Sentences compare the window (these runs have one); rejections are never compared.
    assert set(table["metric"]) >= {"window_wait_p95", "window_gpu_allocation_rate", "deadlocked"}
    assert not set(table["metric"]) & {"wait_p95", "rejected"}
    assert effect_sentences(table) == [
        "sjf raises deadlocked jobs from 0 to 2 vs fifo on philly (worse).",
        "gang-binpack cuts p95 wait by 58% vs fifo on philly (better, though the 95% intervals overlap).",
        "gang-binpack cuts fragmented GPUs by 50% vs fifo on philly (better).",
        "sjf raises makespan by 50% vs fifo on philly (worse).",
        "sjf raises p95 wait by 33% vs fifo on philly (worse, though the 95% intervals overlap).",
        "gang-binpack raises GPU allocation by 23% vs fifo on philly "
        "(better, though the 95% intervals overlap).",
        "gang-binpack cuts mean JCT by 15% vs fifo on philly (better, though the 95% intervals overlap).",
        "sjf cuts finished jobs by 5.0% vs fifo on philly (worse).",
    ]
    # Fewer places: one each first, so the stronger configuration cannot take them all.
    assert effect_sentences(table, limit=2) == [
        "sjf raises deadlocked jobs from 0 to 2 vs fifo on philly (worse).",
        "gang-binpack cuts p95 wait by 58% vs fifo on philly (better, though the 95% intervals overlap).",
    ]


def test_baseline_is_first_config_without_fifo_and_settings_stay_apart(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    for trace in ("philly", "openb"):
        for scheduler, p95 in (("gang-binpack", 3600.0), ("sjf", 1800.0 if trace == "philly" else 7200.0)):
            headline = {k: v[0] for k, v in HEADLINES["fifo"].items()} | {"wait_p95": p95}
            write_run(tmp_path / trace / scheduler, run_config(scheduler, 0, trace), headline, rng)
    collection = collect([tmp_path / "philly", tmp_path / "openb"])
    # cluster.name varies with the trace, which names it already: only the keys that differ label.
    assert collection.label_keys == ("scheduler.name", "trace.name")
    stats = summarize(collection)
    assert stats["half_width"].null_count() == stats.height  # one seed: no interval
    assert effect_sentences(effects(collection, stats)) == [
        "sjf raises p95 wait by 100% vs gang-binpack on openb (worse).",
        "sjf cuts p95 wait by 50% vs gang-binpack on philly (better).",
    ]
    md = (build_report([tmp_path], tmp_path / "out").parent / "report.md").read_text()
    assert "| scheduler=gang-binpack, trace=openb | 1 | window | 40 |" in md
    table = md.split("## Headline metrics")[1].split("\n## ")[0]
    assert "| 1.00 |" in table and "±" not in table.split("\n|:---")[1]  # a single seed: the mean alone


def test_a_chosen_baseline_replaces_the_default_one(tmp_path: Path) -> None:
    # fifo would be the baseline; --baseline scheduler.name=gang-binpack makes every sentence compare with it,
    # in each setting. A key that does not vary, or a value no configuration has, is an input error.
    rng = np.random.default_rng(5)
    base = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    for scheduler, p95 in (("fifo", 3600.0), ("gang-binpack", 1800.0), ("sjf", 900.0)):
        write_run(tmp_path / scheduler, run_config(scheduler, 0), base | {"wait_p95": p95}, rng)
    collection = choose_baseline(collect([tmp_path]), [("scheduler", "gang-binpack")])  # as labels write it
    assert effect_sentences(effects(collection, summarize(collection))) == [
        "fifo raises p95 wait by 100% vs gang-binpack on philly (worse).",
        "sjf cuts p95 wait by 50% vs gang-binpack on philly (better).",
    ]
    assert collection.baseline == (("scheduler.name", "gang-binpack"),)
    with pytest.raises(InputError, match=r"'workload.load' is not a key that differs.*: scheduler\)"):
        choose_baseline(collect([tmp_path]), [("workload.load", "1.0")])
    with pytest.raises(InputError, match=r"no configuration has scheduler.name=kai.*fifo, gang-binpack, sjf"):
        build_report([tmp_path], tmp_path / "out", [("scheduler.name", "kai")])
    assert not (tmp_path / "out" / "report.md").exists()


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
    assert any("repeating another run's configuration, input files and seed" in n for n in collection.notes)


def test_runs_on_different_trace_files_are_two_configurations(tmp_path: Path) -> None:
    # `trace=csv trace.path=x.csv` twice, the file's contents changed in between: same config and
    # seed, different trace_sha256. They are two configurations, labelled by the checksum.
    rng = np.random.default_rng(9)
    headline = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    for copy, digest in (("a", "1" * 64), ("b", "2" * 64)):
        meta = {"trace_sha256": digest}
        write_run(tmp_path / copy, run_config("fifo", 0), headline, rng, meta=meta)
    collection = collect([tmp_path])
    assert collection.runs.height == 2 and not collection.notes
    assert collection.label_keys == ("trace_sha256",)
    assert collection.configs["config"].to_list() == [
        "trace_sha256=111111111111",
        "trace_sha256=222222222222",
    ]
    md = (build_report([tmp_path], tmp_path / "out").parent / "report.md").read_text()
    assert md.startswith("# gpureplay comparison report\n\n2 run(s) in 2 configuration(s)")
    # Different trace files are different settings: never compared with each other.
    assert "No two configurations share a trace and setting to compare." in md
    # When a config key already tells the files apart, the checksum stays out of the label.
    other = run_config("fifo", 0, load="2.0")
    write_run(tmp_path / "c", other, headline, rng, meta={"trace_sha256": "3" * 64})
    assert collect([tmp_path / "b", tmp_path / "c"]).label_keys == ("workload.load",)


def test_censored_counts_stand_beside_figures_and_temper_sentences(tmp_path: Path) -> None:
    # sjf starves 312 jobs: censored at the run's end, its mean wait is lower, but not a fair win.
    rng = np.random.default_rng(2)
    base = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    fifo = base | {"wait_mean": 30600.0, "window_wait_mean": 30600.0}
    sjf = base | {
        "wait_mean": 10800.0,
        "window_wait_mean": 10800.0,
        "wait_censored": 312,
        "window_wait_censored": 312,
        "jct_censored": 312,
        "window_jct_censored": 312,
        "never_started": 312,
        "jct_mean": 30000.0,
        "window_jct_mean": 30000.0,
    }
    write_run(tmp_path / "fifo", run_config("fifo", 0), fifo, rng)
    write_run(tmp_path / "sjf", run_config("sjf", 0), sjf, rng)
    collection = collect([tmp_path])
    sentences = effect_sentences(effects(collection, summarize(collection)))
    assert "sjf raises jobs never started from 0 to 312 vs fifo on philly (worse)." in sentences
    assert (
        "sjf cuts mean wait by 65% vs fifo on philly "
        "(better on paper only: 312 censored waits vs 0 for fifo)." in sentences
    )
    assert (
        "sjf cuts mean JCT by 17% vs fifo on philly (better on paper only: 312 censored JCTs vs 0 for fifo)."
        in sentences
    )
    md = (build_report([tmp_path], tmp_path / "out").parent / "report.md").read_text()
    table = md.split("## Headline metrics")[1].split("\n## ")[0]
    sjf_rows = [line for line in table.splitlines() if line.startswith("| scheduler=sjf")]
    assert len(sjf_rows) == 2
    for row in sjf_rows:
        assert "| 3.00 (312 censored) |" in row and "| 8.33 (312 censored) |" in row
    assert all("censored" not in line for line in table.splitlines() if line.startswith("| scheduler=fifo"))


def test_sentences_compare_the_window_and_state_its_bounds(tmp_path: Path) -> None:
    # The drain tail makes whole-run allocation alike (22%); over the window the schedulers differ.
    rng = np.random.default_rng(3)
    base = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    for scheduler, window_alloc, window_p95 in (("fifo", 0.80, 30600.0), ("gang-binpack", 0.92, 3600.0)):
        headline = base | {
            "gpu_allocation_rate": 0.22,
            "wait_p95": 3600.0,
            "window_gpu_allocation_rate": window_alloc,
            "window_wait_p95": window_p95,
            "window_start": 0.0,
            "window_end": 9.12 * 86400.0,
        }
        write_run(tmp_path / scheduler, run_config(scheduler, 0), headline, rng)
    collection = collect([tmp_path])
    sentences = effect_sentences(effects(collection, summarize(collection)))
    assert sentences == [
        "gang-binpack cuts p95 wait by 88% vs fifo on philly (better).",
        "gang-binpack raises GPU allocation by 15% vs fifo on philly (better).",
    ]
    md = (build_report([tmp_path], tmp_path / "out").parent / "report.md").read_text()
    intro = md.split("## Largest differences")[1].split("\n- ")[0]
    assert "over the measurement window (on philly: 0.00 to 9.12 days)" in intro
    table = md.split("## Headline metrics")[1].split("\n## ")[0]
    assert "| scheduler=fifo | 1 | window | 40 | 0.500 | 8.50 | 10.0 | 20.0 | 2.00 | 80.0 |" in table
    assert "| scheduler=fifo | 1 | whole run | 40 | 0.500 | 1.00 | 10.0 | 20.0 | 2.00 | 22.0 |" in table
    change = md.split("## Change vs baseline")[1].split("\n## ")[0]
    assert "GPU allocation, window (↑ better)" in change


def test_older_runs_without_window_or_typed_keys_are_read(tmp_path: Path) -> None:
    # One run from an older version (config as strings, no window, no censoring, replay_seconds) and
    # one from now (typed config keys): the same configuration, seeds 0 and 1.
    rng = np.random.default_rng(4)
    headline = {k: v[0] for k, v in HEADLINES["fifo"].items()}
    write_run(tmp_path / "old", run_config("fifo", 0), headline, rng, window=False)
    write_run(tmp_path / "new", typed(run_config("fifo", 1)), headline, rng)
    assert pl.read_parquet(tmp_path / "new" / "summary.parquet").schema["seed"] == pl.Int64
    collection = collect([tmp_path])
    assert collection.configs["runs"].to_list() == [2]
    assert collection.runs["seed"].to_list() == [0, 1]
    assert "replay_seconds" not in collection.label_keys and not collection.label_keys
    md = (build_report([tmp_path], tmp_path / "out").parent / "report.md").read_text()
    assert "Compared over the whole run: some of these runs were written by an older version" in md
    window_row = next(line for line in md.splitlines() if "| window |" in line)
    assert window_row.endswith("| n/a | n/a | n/a | n/a | n/a | n/a |")  # one seed of two has no window
    # With old runs alone, the window rows are left out and never-started reads n/a.
    write_run(tmp_path / "only-old" / "run", run_config("fifo", 0), headline, rng, window=False)
    md = (build_report([tmp_path / "only-old"], tmp_path / "out2").parent / "report.md").read_text()
    assert "| window |" not in md and "| whole run |" in md
    assert "| scheduler=fifo | 1 | 40 | 40 | n/a | 0 |" in md


def test_change_table_tells_zero_to_zero_from_zero_to_many(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    base = {k: v[0] for k, v in HEADLINES["fifo"].items()} | {"fragmented_gpus_mean": 0.0}
    write_run(tmp_path / "fifo", run_config("fifo", 0), base, rng)
    write_run(tmp_path / "gb", run_config("gang-binpack", 0), base | {"fragmented_gpus_mean": 179.0}, rng)
    write_run(tmp_path / "sjf", run_config("sjf", 0), base, rng)
    md = (build_report([tmp_path], tmp_path / "out").parent / "report.md").read_text()
    change = md.split("## Change vs baseline")[1].split("\n## ")[0]
    header = next(line for line in change.splitlines() if line.startswith("| configuration"))
    column = header.rstrip(" |").split(" | ").index("fragmented GPUs (↓ better)")
    cells = {
        line.split(" | ")[0].lstrip("| "): line.rstrip(" |").split(" | ")[column]
        for line in change.splitlines()
        if line.startswith("| scheduler=")
    }
    assert cells == {"scheduler=gang-binpack": "+179 (from 0)", "scheduler=sjf": "0"}
    assert "gang-binpack raises fragmented GPUs from 0 to 179 vs fifo on philly (worse)." in md
    page = (tmp_path / "out" / "report.html").read_text()
    assert '<td class="num worse">+179 (from 0)</td>' in page


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
    with pytest.raises(FileNotFoundError, match=r"1 incomplete:\n.*partial: incomplete: no DONE marker"):
        build_report([partial], tmp_path / "out")
    broken = tmp_path / "broken"
    write_run(broken, run_config("fifo", 0), {}, rng)
    (broken / "timeline.parquet").unlink()
    with pytest.raises(
        FileNotFoundError,
        match=r"broken: unreadable: the DONE marker lists timeline\.parquet but it is missing",
    ):
        build_report([broken], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_runs_with_several_queues_get_the_fairness_table(tmp_path: Path) -> None:
    """Jain's index and the worst queue's mean wait, per configuration, and in the change table."""
    rng = np.random.default_rng(11)
    for scheduler, jain, worst in (("fifo", 0.5, 7200.0), ("gang-binpack", 0.9, 3600.0)):
        headline = {k: v[0] for k, v in HEADLINES[scheduler].items()}
        headline |= {"queues": 2, "queue_slowdown_jain": jain, "queue_wait_mean_max": worst}
        write_run(tmp_path / "runs" / scheduler, run_config(scheduler, 0), headline, rng)
    md = (build_report([tmp_path / "runs"], tmp_path / "out").parent / "report.md").read_text()
    section = md.split("## Queues: fairness across tenants", 1)[1].split("##", 1)[0]
    assert "| scheduler=fifo | 1 | 2 | 0.500 | 2.00 |" in section
    assert "| scheduler=gang-binpack | 1 | 2 | 0.900 | 1.00 |" in section
    change = md.split("## Change vs baseline", 1)[1]
    assert "Jain's index of the queues' slowdowns" in change and "worst queue's mean wait" in change


def test_single_queue_runs_have_no_fairness_table(report: Path) -> None:
    assert "Queues: fairness" not in (report.parent / "report.md").read_text()


def test_queue_samples_draw_usage_by_queue_over_time(tmp_path: Path) -> None:
    """Runs with queues.parquet get the stacked usage figure; runs written before it existed are skipped."""
    rng = np.random.default_rng(13)
    times = np.arange(0.0, 48 * 3600.0, 3600.0)
    for scheduler in ("fifo", "gang-binpack"):
        folder = tmp_path / "runs" / scheduler
        write_run(folder, run_config(scheduler, 0), {k: v[0] for k, v in HEADLINES[scheduler].items()}, rng)
        samples = pl.DataFrame(
            {
                "time": np.repeat(times, 2),
                "queue": ["prod", "research"] * times.size,
                "usage_gpu": rng.uniform(0.0, 8.0, 2 * times.size),
                "pending_jobs": np.zeros(2 * times.size, dtype=np.int32),
                "running_jobs": np.ones(2 * times.size, dtype=np.int32),
            }
        )
        write_parquet_atomic(samples, folder / "queues.parquet", {})
    old = tmp_path / "runs" / "sjf"
    write_run(old, run_config("sjf", 0), {k: v[0] for k, v in HEADLINES["sjf"].items()}, rng)
    out = build_report([tmp_path / "runs"], tmp_path / "out").parent
    md = (out / "report.md").read_text()
    assert "![GPU usage by queue over time](queue_usage.png)" in md
    assert (out / "queue_usage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (old / "DONE").unlink()
    for run in ("fifo", "gang-binpack"):
        (tmp_path / "runs" / run / "queues.parquet").unlink()
    build_report([tmp_path / "runs"], out)
    assert not (out / "queue_usage.png").exists()  # no run has samples any more: the stale figure goes


def test_queue_model_runs_draw_each_queues_usage_against_its_nominal_quota(tmp_path: Path) -> None:
    """quota_usage.png: per queue, usage (solid) and nominal quota (dashed) of queue-model runs only."""
    rng = np.random.default_rng(17)
    times = np.arange(0.0, 48 * 3600.0, 3600.0)
    nominal = {"prod": 6.0, "research": 2.0, "idle": 0.0}
    for scheduler, quota in (("fifo", False), ("gang-binpack", True)):
        folder = tmp_path / "runs" / scheduler
        write_run(folder, run_config(scheduler, 0), {k: v[0] for k, v in HEADLINES[scheduler].items()}, rng)
        queues = ["prod", "research", "idle"] * times.size
        usage = np.tile([5.0, 3.0, 0.0], times.size)  # research borrows 1 GPU from prod's quota
        samples = pl.DataFrame(
            {
                "time": np.repeat(times, 3),
                "queue": queues,
                "usage_gpu": usage,
                "nominal_gpu": [nominal[q] for q in queues] if quota else [None] * len(queues),
                "pending_jobs": np.zeros(3 * times.size, dtype=np.int32),
                "running_jobs": np.ones(3 * times.size, dtype=np.int32),
            },
            schema_overrides={"nominal_gpu": pl.Float64},
        )
        write_parquet_atomic(samples, folder / "queues.parquet", {})
    collection = collect([tmp_path / "runs"])
    drawn = quota_figure(collection, layout(collection))
    assert drawn is not None
    axes = [ax for ax in drawn.figure.axes if ax.lines]
    # One panel per queue with usage, largest first; in each, gang-binpack's usage and nominal lines only.
    assert [ax.get_title() for ax in axes] == ["queue prod", "queue research", "queue idle"]
    for ax, (usage_value, quota_value) in zip(axes, [(5.0, 6.0), (3.0, 2.0), (0.0, 0.0)], strict=True):
        solid, dashed = ax.lines
        assert set(solid.get_ydata()) == {usage_value} and set(dashed.get_ydata()) == {quota_value}
        assert dashed.get_linestyle() == "--"
    out = build_report([tmp_path / "runs"], tmp_path / "out").parent
    title = "GPU usage against nominal quota / deserved share, by queue"
    assert f"![{title}](quota_usage.png)" in (out / "report.md").read_text()
    (tmp_path / "runs" / "gang-binpack" / "queues.parquet").unlink()
    build_report([tmp_path / "runs"], out)
    assert not (out / "quota_usage.png").exists()  # no run under a queue model any more


def test_unscaled_philly_runs_stand_beside_the_real_clusters_queueing_delays(tmp_path: Path) -> None:
    """The Philly trace at its own rate gets the AcmeTrace comparison; a scaled one does not."""
    rng = np.random.default_rng(17)
    for scheduler, mean, median in (("fifo", 5400.0, 60.0), ("gang-binpack", 1800.0, 0.0)):
        headline = {k: v[0] for k, v in HEADLINES[scheduler].items()} | {
            "wait_mean": mean,
            "wait_median": median,
        }
        write_run(tmp_path / "runs" / scheduler, run_config(scheduler, 0), headline, rng)
    md = (build_report([tmp_path / "runs"], tmp_path / "out").parent / "report.md").read_text()
    section = md.split("## Queueing delay beside the real Philly cluster", 1)[1].split("##", 1)[0]
    jobs = pl.read_parquet(tmp_path / "runs" / "fifo" / "summary.parquet")["jobs"].item()
    assert f"| scheduler=fifo | 1 | 5,400 | 60 | {jobs:,} |" in section
    assert "| scheduler=gang-binpack | 1 | 1,800 | 0 |" in section
    real = "| Philly, real cluster: AcmeTrace cluster summary (Hu et al., NSDI 2024) |  | 3,761 | 189 |"
    assert f"{real} 112,956 |" in section
    scaled = tmp_path / "scaled"
    write_run(
        scaled / "fifo",
        run_config("fifo", 0, load="6.0"),
        {k: v[0] for k, v in HEADLINES["fifo"].items()},
        rng,
    )
    md = (build_report([scaled], tmp_path / "out6").parent / "report.md").read_text()
    assert "beside the real Philly cluster" not in md


def test_the_published_philly_figures_come_from_the_bundled_summary() -> None:
    real = philly_queueing()
    assert (real.gpu_jobs, real.mean_s, real.median_s) == (112_956, 3760.604, 189.0)


def test_the_queues_that_wait_longest_are_named_with_what_held_them(tmp_path: Path) -> None:
    """Per configuration the queues by mean wait (tiny ones left out), each read as quota- or GPU-bound.

    Hand-computed from the samples: prod waits with 2, 1 and 3 jobs pending at 0 h, 2 h and 3 h; its
    quota of 6 GPUs has no room for its smallest job (1 GPU) at 0 h and 3 h (weights 2 + 3 of 6: 5/6 of
    its waiting), when it borrows 0 and 4 GPUs (12/6 = 2 GPUs while waiting); research (quota 2, using 1)
    always has room: it waits for free GPUs. A queue of no admitted jobs is left out.
    """
    rng = np.random.default_rng(19)
    for scheduler, quota in (("fifo", False), ("gang-binpack", True)):
        folder = tmp_path / "runs" / scheduler
        headline = {k: v[0] for k, v in HEADLINES[scheduler].items()} | {"queues": 2}
        write_run(folder, run_config(scheduler, 0), headline, rng)
        per_queue = pl.DataFrame(
            {
                "queue": ["prod", "research", "tiny"],
                "admitted": [30, 30, 0],
                "wait_mean": [7200.0, 3600.0, 99_999.0],
                "quota_share": [0.75, 0.25, 0.0] if quota else [None, None, None],
                "preemptions": [4, 0, 0],
                "lost_gpu_hours": [10.0, 0.0, 0.0],
                "preemptions_caused": [0, 4, 0],
            },
            schema_overrides={"quota_share": pl.Float64},
        )
        write_parquet_atomic(per_queue, folder / "queue_summary.parquet", {})
        samples = pl.DataFrame(
            {
                "time": np.repeat(np.arange(4) * 3600.0, 2),
                "queue": ["prod", "research"] * 4,
                "usage_gpu": [6.0, 1.0, 6.0, 1.0, 5.0, 1.0, 7.0, 1.0],
                "pending_jobs": np.array([2, 1, 0, 1, 1, 0, 3, 2], dtype=np.int32),
                "running_jobs": np.ones(8, dtype=np.int32),
                "nominal_gpu": [6.0, 2.0] * 4 if quota else [None] * 8,
                "borrowed_gpu": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0] if quota else [None] * 8,
            },
            schema_overrides={"nominal_gpu": pl.Float64, "borrowed_gpu": pl.Float64},
        )
        write_parquet_atomic(samples, folder / "queues.parquet", {})
    jobs = pl.read_parquet(tmp_path / "runs" / "gang-binpack" / "jobs.parquet")
    asked = jobs.group_by("queue").agg((pl.col("gpus") * pl.col("duration")).sum())
    demand = {q: a / float(asked["gpus"].sum()) for q, a in asked.iter_rows()}
    mean_gpus = dict(jobs.group_by("queue").agg(pl.col("gpus").mean()).iter_rows())
    timeline = pl.read_parquet(tmp_path / "runs" / "gang-binpack" / "timeline.parquet")
    allocated = dict(timeline.select("time", "allocated_fraction").iter_rows())

    waits = longest_waits(collect([tmp_path / "runs"]))
    assert waits.select("config", "queue").rows() == [
        ("scheduler=fifo", "prod"),
        ("scheduler=fifo", "research"),
        ("scheduler=gang-binpack", "prod"),
        ("scheduler=gang-binpack", "research"),
    ]
    prod = waits.row(2, named=True)
    assert prod["at_quota"] == pytest.approx(5 / 6)
    assert prod["borrowed_waiting"] == pytest.approx(2.0)
    assert prod["allocated_waiting"] == pytest.approx(
        (2 * allocated[0.0] + allocated[7200.0] + 3 * allocated[10800.0]) / 6
    )
    assert prod["demand_share"] == pytest.approx(demand["prod"])
    assert why(prod) == (
        f"quota: asks {100 * demand['prod']:.0f}% of the GPU-time on 75% of the quota; "
        "at its quota in 83% of its waiting (borrowing 2 GPUs then); evicted 4 times, 10 GPU-h lost"
    )
    research = waits.row(3, named=True)
    assert research["at_quota"] == 0.0
    assert research["others_borrowed_waiting"] == pytest.approx(2.0)  # prod's 4 GPUs at 3 h, weight 2 of 4
    research_allocated = (allocated[0.0] + allocated[3600.0] + 2 * allocated[10800.0]) / 4
    assert why(research) == (
        f"free GPUs: cluster {100 * research_allocated:.0f}% allocated while it waited; "
        f"asks {100 * demand['research']:.0f}% of the GPU-time on 25% of the quota; "
        "below its quota in 100% of its waiting, while other queues held 2 GPUs above theirs; "
        f"its jobs ask {mean_gpus['research']:.1f} GPUs on average (all queues' {jobs['gpus'].mean():.1f})"
    )
    assert why(waits.row(0, named=True)).startswith("free GPUs (no quotas): cluster ")

    md = (build_report([tmp_path / "runs"], tmp_path / "out").parent / "report.md").read_text()
    section = md.split("### Which queues wait longest, and why", 1)[1].split("##", 1)[0]
    assert (
        f"| scheduler=gang-binpack | prod | 30 | 2.00 | {100 * demand['prod']:.1f}% | 75.0% | 83.3% | 4 |"
        in (section)
    )
    assert "tiny" not in section
