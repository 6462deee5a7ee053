"""What the GPUs did (gpureplay.results.gpu_usage): busy GPU-hours, idle alerts, energy and cost, by hand.

The scenario of most tests: one node of 8 A100-80GB (catalog: idle_w 60 W, tdp_w 400 W, so one busy
GPU-equivalent adds 340 W), a run span of [0, 3600) s, and

- job 1: 4 GPUs from 0 to 3600 s at usage 0.5, never idle;
- job 2: a 2-GPU notebook from 0 to 3600 s at usage 1.0 that goes idle 600 s in (``idle_after``).

By hand:

- busy GPU-seconds = 4 x 0.5 x 3600 + 2 x 1.0 x 600 = 7200 + 1200 = 8400 -> 2.3333 GPU-hours;
  gpu_busy_rate = 8400 / (8 x 3600) = 0.2916667;
- allocated GPU-seconds = 4 x 3600 + 2 x 3600 = 21600 -> 6 GPU-hours; idle allocated = 6 - 2.3333 =
  3.6667 GPU-hours;
- alerts ("under 20% busy for 30 minutes"): job 1 is at 0.5, never under; job 2 is idle from 600 s to
  3600 s, 3000 s > 1800 s: one alert, firing from 2400 s to 3600 s on 2 GPUs = 2400 GPU-seconds =
  0.6667 GPU-hours;
- energy = 8 x 60 W x 3600 s + 8400 x 340 W s = 1,728,000 + 2,856,000 = 4,584,000 J = 1.273333 kWh;
  mean power = 4,584,000 / 3600 = 1273.333 W;
- cost at 32 per node-hour = 32.0; useful GPU-hours (work kept x GPUs) = 4 + 2 = 6 -> 5.3333 each.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tests.cli import gpureplay

from gpureplay.cluster.catalog import gpu_models, power_fields
from gpureplay.errors import InputError
from gpureplay.results.gpu_usage import (
    IdleAlertRule,
    alert_rule_problems,
    attempt_usage,
    busy_at,
    cluster_power,
    idle_alerts,
    job_busy_watts,
    node_prices,
    run_usage,
)
from gpureplay.workload.utilization import Utilization, assign_utilization

HOUR = 3600.0


def node(model: str | None = "A100-80GB", gpus: int = 8, name: str = "n0") -> dict[str, object]:
    return {"node_name": name, "gpu_model": model, "num_gpus": gpus}


def nodes(*rows: dict[str, object]) -> pl.DataFrame:
    return pl.DataFrame(
        list(rows) or [node()], schema={"node_name": pl.String, "gpu_model": pl.String, "num_gpus": pl.Int32}
    )


def attempts(rows: list[tuple[int, float, float | None, float, float]]) -> pl.DataFrame:
    """Attempts ``(job_id, hold_start, start, end, gpus)``, each finished with its work kept."""
    frame = pl.DataFrame(
        rows,
        schema={
            "job_id": pl.Int64,
            "hold_start": pl.Float64,
            "start": pl.Float64,
            "end": pl.Float64,
            "gpus": pl.Float64,
        },
        orient="row",
    )
    ran = (pl.col("end") - pl.col("start")).fill_null(0.0)
    return frame.with_columns(
        progress=ran,
        work_lost=pl.lit(0.0),
        gpu_seconds=(pl.col("end") - pl.col("hold_start")) * pl.col("gpus"),
    )


def jobs(util: list[float], after: list[float], models: list[list[str] | None] | None = None) -> pl.DataFrame:
    n = len(util)
    frame = pl.DataFrame({"job_id": list(range(1, n + 1)), "gpu_util": util, "idle_after": after})
    if models is not None:
        frame = frame.with_columns(pl.Series("gpu_models", models, dtype=pl.List(pl.String)))
    return frame


def scenario(prices: dict[str, float] | None = None, times: list[float] | None = None):  # type: ignore[no-untyped-def]
    return run_usage(
        jobs([0.5, 1.0], [math.inf, 600.0]),
        attempts([(1, 0.0, 0.0, HOUR, 4.0), (2, 0.0, 0.0, HOUR, 2.0)]),
        nodes(),
        times=times or [0.0, 600.0, 3600.0],
        total_gpus=8,
        devices=8,
        span_seconds=HOUR,
        rule=IdleAlertRule(),
        prices=prices or {},
    )


def test_hand_computed_scenario() -> None:
    """The module docstring's numbers, exactly."""
    got = scenario({"A100-80GBx8": 32.0}).figures
    assert got["busy_gpu_hours"] == pytest.approx(8400 / HOUR, rel=1e-12)
    assert got["gpu_busy_rate"] == pytest.approx(8400 / (8 * HOUR), rel=1e-12)
    assert got["idle_allocated_gpu_hours"] == pytest.approx(13200 / HOUR, rel=1e-12)
    assert got["idle_alerts"] == 1
    assert got["idle_alert_gpu_hours"] == pytest.approx(2400 / HOUR, rel=1e-12)
    assert got["energy_kwh"] == pytest.approx(4_584_000 / 3.6e6, rel=1e-12)
    assert got["power_mean_w"] == pytest.approx(1273.3333333333333, rel=1e-12)
    assert got["energy_estimated_share"] == 0.0  # one model: every busy second's watts are known
    assert got["cost"] == 32.0
    assert got["cost_per_useful_gpu_hour"] == pytest.approx(32.0 / 6.0, rel=1e-12)


def test_timeline_is_the_exact_level_at_each_sample() -> None:
    """Busy at 0: 4 x 0.5 + 2 x 1 = 4; from 600 s the notebook is idle: 2; after the end: 0."""
    timeline = scenario(times=[0.0, 599.0, 600.0, 3599.0, 3600.0]).timeline
    assert timeline["busy_gpus"].tolist() == [4.0, 4.0, 2.0, 2.0, 0.0]
    assert timeline["busy_fraction"].tolist() == [0.5, 0.5, 0.25, 0.25, 0.0]
    # 8 x 60 W idle + busy x 340 W.
    assert timeline["power_w"].tolist() == [480.0 + 4 * 340.0, 1840.0, 480.0 + 2 * 340.0, 1160.0, 480.0]


def test_no_prices_no_cost() -> None:
    got = scenario().figures
    assert got["cost"] is None and got["cost_per_useful_gpu_hour"] is None


def test_alert_rule_edges() -> None:
    """Strictly under the threshold, strictly longer than the window; a gang's idle prefix counts too."""
    rule = IdleAlertRule(threshold=0.2, window=1800.0)
    rows = [
        # usage exactly at the threshold for 2 h: never under 20%, no alert
        (1, 0.0, 0.0, 2 * HOUR, 1.0),
        # usage 0.1 for exactly 30 min: not longer than the window, no alert
        (2, 0.0, 0.0, 1800.0, 1.0),
        # usage 0.1 for 31 min on 4 GPUs: fires for 60 s -> 240 GPU-seconds
        (3, 0.0, 0.0, 1860.0, 4.0),
        # a gang held 40 min before it starts (0), then busy 20 min at 0.9, then idle 40 min: two alerts,
        # 600 s each on 2 GPUs
        (4, 0.0, 2400.0, 6000.0, 2.0),
        # never started (deadlocked pods) held 1 h on 1 GPU: one alert, 1800 s
        (5, 0.0, None, HOUR, 1.0),
    ]
    usage = attempt_usage(
        attempts(rows),
        jobs([0.2, 0.1, 0.1, 0.9, 1.0], [math.inf, math.inf, math.inf, 1200.0, math.inf]),
        1.0,
        None,
    )
    alerts, hours = idle_alerts(usage, rule)
    assert alerts == 4
    assert hours * HOUR == pytest.approx(240.0 + 2 * 600.0 * 2 + 1800.0)
    # Usage 0 from the start (idle_after 0) merges the prefix and tail into one idle interval.
    merged = attempt_usage(attempts([(1, 0.0, 1000.0, 3000.0, 1.0)]), jobs([0.9], [0.0]), 1.0, None)
    assert idle_alerts(merged, rule) == (1, pytest.approx(1200.0 / HOUR))


def test_model_path_and_trace_column_path() -> None:
    """The usage comes from workload.utilization (seeded idle share) or a trace's gpu_util, one source."""
    base = pl.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 0.0], "gpu_milli": [4000, 2000], "cpu_milli": [0, 0]},
        schema={"job_id": pl.Int64, "submit_time": pl.Float64, "gpu_milli": pl.Int32, "cpu_milli": pl.Int32},
    ).with_columns(priority_class=pl.lit(None, pl.String))
    modelled = assign_utilization(base, Utilization(gpu_active=0.5, idle_share=1.0, idle_after=600.0), 0)
    traced = assign_utilization(
        base.with_columns(source_gpu_util=pl.Series(["0.25", None])), Utilization(), 0
    )
    rows = [(1, 0.0, 0.0, HOUR, 4.0), (2, 0.0, 0.0, HOUR, 2.0)]
    for frame, busy_seconds, alerts in (
        # model: both at 0.5 until 600 s, then idle 3000 s (> 1800 s): two alerts
        (modelled, 0.5 * 600 * 6, 2),
        # trace: job 1 at 0.25 (its own column), job 2 at the model's default 1.0; never idle
        (traced, 0.25 * HOUR * 4 + 1.0 * HOUR * 2, 0),
    ):
        got = run_usage(
            frame,
            attempts(rows),
            nodes(),
            times=[0.0],
            total_gpus=8,
            devices=8,
            span_seconds=HOUR,
            rule=IdleAlertRule(),
            prices={},
        ).figures
        assert got["busy_gpu_hours"] * HOUR == pytest.approx(busy_seconds)
        assert got["idle_alerts"] == alerts


def test_replicas_count_physical_gpus() -> None:
    """Under time-slicing with 4 replicas a device is a quarter GPU: 8 devices busy at 1.0 = 2 GPUs."""
    usage = attempt_usage(attempts([(1, 0.0, 0.0, HOUR, 8.0)]), jobs([1.0], [math.inf]), 0.25, None)
    assert busy_at(usage, [0.0])[0].tolist() == [2.0]


def test_heterogeneous_power_is_exact_for_one_model_and_estimated_for_several() -> None:
    """H100 (tdp 700, idle 65: 635 W busy) x 8 and T4 (70, 10: 60 W busy) x 8."""
    cluster = nodes(node("H100-80GB", 8, "h"), node("T4", 8, "t"))
    power = cluster_power(cluster)
    assert power.idle_w == 8 * 65 + 8 * 10
    watts = job_busy_watts(jobs([1.0, 1.0, 1.0], [math.inf] * 3, [["H100"], None, ["A100-80GB"]]), power)
    assert watts["busy_w"].to_list() == [635.0, (635.0 + 60.0) / 2, (635.0 + 60.0) / 2]
    assert watts["estimated"].to_list() == [False, True, True]


def test_unknown_power_gives_no_energy() -> None:
    """A model without catalog power (openb's undisclosed G2) leaves energy null, not guessed."""
    got = run_usage(
        jobs([1.0], [math.inf]),
        attempts([(1, 0.0, 0.0, HOUR, 1.0)]),
        nodes(node("G2", 8)),
        times=[0.0],
        total_gpus=8,
        devices=8,
        span_seconds=HOUR,
        rule=IdleAlertRule(),
        prices={},
    )
    assert got.figures["energy_kwh"] is None and got.figures["power_mean_w"] is None
    assert got.figures["busy_gpu_hours"] == 1.0
    assert np.isnan(got.timeline["power_w"]).all()


def test_prices_by_model_and_by_size() -> None:
    cluster = nodes(node("A100-80GB", 8, "a"), node("A100-80GB", 4, "b"), node(None, 0, "c"))
    # The sized key wins over the model's; cpu-only prices nodes without GPUs; aliases resolve.
    got = node_prices(cluster, {"A100-SXM4-80GBx8": 30.0, "A100-80GB": 16.0, "cpu-only": 1.5})
    assert got is not None and got.tolist() == [30.0, 16.0, 1.5]
    assert node_prices(cluster, {}) is None


@pytest.mark.parametrize(
    ("prices", "key", "fragment"),
    [
        (
            {"A100-80GB": -1.0, "cpu-only": 1.0},
            "cluster.prices.A100-80GB",
            "must be a price per node-hour >= 0",
        ),
        ({"A100-80GB": float("nan"), "cpu-only": 1.0}, "cluster.prices.A100-80GB", ">= 0"),
        ({"TPUv4": 3.0}, "cluster.prices.TPUv4", "names no node type"),
        ({"A100-80GB": 1.0, "H100": 2.0, "cpu-only": 1.0}, "cluster.prices.H100", "no node of this type"),
        ({"A100-80GB": 1.0}, "cluster.prices", "gives no price for node type(s) cpu-only"),
        (
            {"A100-80GBx8": 1.0, "A100-80GBx4": 1.0, "A100-80GB": 2.0, "cpu-only": 1.0},
            "cluster.prices.A100-80GB",
            "never read",
        ),
    ],
)
def test_bad_prices_name_their_key(prices: dict[str, float], key: str, fragment: str) -> None:
    cluster = nodes(node("A100-80GB", 8, "a"), node("A100-80GB", 4, "b"), node(None, 0, "c"))
    with pytest.raises(InputError) as err:
        node_prices(cluster, prices)
    text = str(err.value)
    assert f"'{key}'" in text and fragment in text, text


def test_alert_rule_ranges() -> None:
    assert alert_rule_problems(IdleAlertRule()) == []
    keys = [p.key for p in alert_rule_problems(IdleAlertRule(threshold=20.0, window=-1.0))]
    assert keys == ["idle_alert.threshold", "idle_alert.window"]


def test_catalog_power_figures() -> None:
    """Every model has both figures or neither, and a note naming their source."""
    models = gpu_models()
    assert (models["A100-80GB"].idle_w, models["A100-80GB"].tdp_w) == (60.0, 400.0)
    assert (models["H100-80GB"].idle_w, models["H100-80GB"].tdp_w) == (65.0, 700.0)
    for model in models.values():
        assert model.power_note, model.name
        assert (model.idle_w is None) == (model.tdp_w is None), model.name
    for bad, fragment in (
        ({"idle_w": 500, "tdp_w": 400, "power_note": "x"}, "0 <= idle_w < tdp_w"),
        ({"idle_w": 50, "power_note": "x"}, "gives idle_w without tdp_w"),
        ({"idle_w": 50, "tdp_w": "400", "power_note": "x"}, "tdp_w must be a finite number"),
        ({"idle_w": 50, "tdp_w": 400}, "need a power_note"),
    ):
        with pytest.raises(RuntimeError, match=fragment):
            power_fields("X", bad)


@pytest.fixture
def one_node_jobs(tmp_path: Path) -> Path:
    """Job 1: 4 GPUs for 1 h at its own gpu_util 0.5; job 2: 2 GPUs for 1 h, no gpu_util (the model's)."""
    path = tmp_path / "jobs.csv"
    path.write_text(
        "job_id,submit_time,duration,num_pods,gpu_milli,gpu_util\n1,0,3600,1,4000,0.5\n2,0,3600,1,2000,\n"
    )
    return path


def test_cli_run_writes_the_usage_columns(one_node_jobs: Path, tmp_path: Path) -> None:
    """`gpureplay run` on one 8-GPU A100-80GB node, job 2 at workload.utilization.gpu_active 0.1.

    By hand: busy = 4 x 0.5 + 2 x 0.1 = 2.2 GPU-equivalents for 1 h; idle allocated = 6 - 2.2 = 3.8
    GPU-hours; job 2 is under 20% for its whole hour: one alert firing 1800 s on 2 GPUs = 1 GPU-hour;
    energy = 8 x 60 x 3600 + 2.2 x 3600 x 340 = 1,728,000 + 2,692,800 J = 1.228 kWh; cost 32.
    """
    out = tmp_path / "out"
    proc = gpureplay(
        "run",
        "trace=csv",
        f"trace.path={one_node_jobs}",
        "cluster=homogeneous",
        "cluster.nodes=1",
        "workload.utilization.gpu_active=0.1",
        "+cluster.prices.A100-80GBx8=32.0",
        f"hydra.run.dir={out}",
    )
    assert proc.returncode == 0, proc.stderr
    row = pl.read_parquet(out / "summary.parquet").row(0, named=True)
    assert row["busy_gpu_hours"] == pytest.approx(2.2, rel=1e-12)
    assert row["idle_allocated_gpu_hours"] == pytest.approx(3.8, rel=1e-12)
    assert row["idle_alerts"] == 1
    assert row["idle_alert_gpu_hours"] == pytest.approx(1.0, rel=1e-12)
    assert row["energy_kwh"] == pytest.approx(1.228, rel=1e-12)
    assert row["cost"] == 32.0
    assert row["cost_per_useful_gpu_hour"] == pytest.approx(32.0 / 6.0, rel=1e-12)
    timeline = pl.read_parquet(out / "timeline.parquet")
    assert timeline.filter(pl.col("time") == 0.0)["busy_gpus"].to_list() == [pytest.approx(2.2)]


def test_cli_bad_price_and_threshold_are_usage_errors(one_node_jobs: Path, tmp_path: Path) -> None:
    """A bad price names its key (exit 2, no traceback), before any kernel compiles; so does the rule."""
    common = ["run", "trace=csv", f"trace.path={one_node_jobs}", "cluster=homogeneous", "cluster.nodes=1"]
    for extra, key in (
        (["+cluster.prices.H100=2.0", "+cluster.prices.A100-80GB=1.0"], "config key 'cluster.prices.H100'"),
        (["idle_alert.threshold=20"], "config key 'idle_alert.threshold'"),
    ):
        proc = gpureplay(*common, *extra, f"hydra.run.dir={tmp_path / 'bad'}")
        assert proc.returncode == 2, proc.stderr
        assert key in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_packing_runs_refuse_the_usage_keys(one_node_jobs: Path, tmp_path: Path) -> None:
    """A packing run writes no usage: an alert rule or prices given to one would be read by nothing."""
    proc = gpureplay(
        "run",
        "mode=packing",
        "trace=csv",
        f"trace.path={one_node_jobs}",
        "cluster=homogeneous",
        "scheduler=fgd",
        "idle_alert.window=60",
        "+cluster.prices.A100-80GB=1.0",
        f"hydra.run.dir={tmp_path / 'pack'}",
    )
    assert proc.returncode == 2, proc.stderr
    for key in ("config key 'idle_alert.window'", "config key 'cluster.prices'"):
        assert key in proc.stderr and "is not used by a packing run" in proc.stderr, proc.stderr
