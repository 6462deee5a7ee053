"""Synthetic jobs: reproducible, faithful to the source mix, arrivals that offer ``load`` on the cluster."""

from __future__ import annotations

import time

import numpy as np
import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.traces.schema import JOBS_SCHEMA, validate_jobs
from gpureplay.workload.synthetic import SyntheticMix, fit_philly_mix, poisson_jobs, synthetic_jobs

#: GPUs of the cluster the fixture's jobs are offered to (8 nodes of 8: the widest fixture job, 16, fits).
GPUS = 64


@pytest.fixture(scope="module")
def source_jobs() -> pl.DataFrame:
    """2,000 canonical jobs with a Philly-like skew: mostly 1 GPU, a few gangs, size tied to duration."""
    rng = np.random.default_rng(123)
    n = 2000
    size = rng.choice([1, 2, 4, 8, 16], size=n, p=[0.85, 0.05, 0.05, 0.04, 0.01])
    # Bigger jobs run longer, so a sampler that broke the pairing would show in the joint check.
    duration = np.round(rng.lognormal(6.0, 1.5, size=n) * size)
    return validate_jobs(
        pl.DataFrame(
            {
                "job_id": np.arange(1, n + 1),
                "submit_time": np.sort(rng.uniform(0, 100_000, size=n)),
                "duration": duration,
                "num_pods": np.where(size > 8, size // 8, 1).astype(np.int32),
                "gpu_milli": (np.minimum(size, 8) * 1000).astype(np.int32),
                "queue": rng.choice(["vc-a", "vc-b", "vc-c"], size=n, p=[0.6, 0.3, 0.1]),
                "source_row": np.arange(1, n + 1),
            }
        ),
        "fixture",
    )


def _span(jobs: pl.DataFrame) -> float:
    return float(jobs.select(pl.col("submit_time").max() - pl.col("submit_time").min()).item())


@pytest.fixture(scope="module")
def mix(source_jobs: pl.DataFrame) -> SyntheticMix:
    return fit_philly_mix(source_jobs, source="fixture")


def test_fit(source_jobs: pl.DataFrame, mix: SyntheticMix) -> None:
    span = _span(source_jobs)
    assert mix.rate == pytest.approx((source_jobs.height - 1) / span)
    assert mix.pool.height == source_jobs.height
    assert mix.pool["source_job_id"].to_list() == source_jobs["job_id"].to_list()


def test_canonical_and_validated(mix: SyntheticMix) -> None:
    jobs = synthetic_jobs(500, 1, mix, gpus=GPUS)
    assert list(jobs.columns[: len(JOBS_SCHEMA)]) == list(JOBS_SCHEMA)
    assert jobs["job_id"].to_list() == list(range(1, 501))
    assert jobs["source_row"].to_list() == list(range(1, 501))
    assert jobs["submit_time"][0] == 0.0
    assert jobs["submit_time"].is_sorted()
    assert jobs["submit_time"].diff().drop_nulls().min() > 0  # type: ignore[operator]


def test_deterministic_per_seed(mix: SyntheticMix) -> None:
    assert synthetic_jobs(1000, 7, mix, gpus=GPUS).equals(synthetic_jobs(1000, 7, mix, gpus=GPUS))
    a, b = synthetic_jobs(1000, 7, mix, gpus=GPUS), synthetic_jobs(1000, 8, mix, gpus=GPUS)
    assert not a["submit_time"].equals(b["submit_time"])
    assert not a["source_job_id"].equals(b["source_job_id"])


def test_pairs_are_resampled_jointly(source_jobs: pl.DataFrame, mix: SyntheticMix) -> None:
    jobs = synthetic_jobs(5000, 3, mix, gpus=GPUS)
    columns = ["num_pods", "gpu_milli", "duration", "queue"]
    copied = jobs.select("source_job_id", *columns).join(
        source_jobs.select(pl.col("job_id").alias("source_job_id"), *columns),
        on="source_job_id",
        suffix="_real",
    )
    assert copied.height == 5000
    for column in columns:
        assert (copied[column] == copied[f"{column}_real"]).all()


def test_marginals_match_source(source_jobs: pl.DataFrame, mix: SyntheticMix) -> None:
    jobs = synthetic_jobs(50_000, 11, mix, gpus=GPUS)

    def one_gpu(df: pl.DataFrame) -> float:
        return float(df.select(((pl.col("num_pods") == 1) & (pl.col("gpu_milli") == 1000)).mean()).item())

    assert one_gpu(jobs) == pytest.approx(one_gpu(source_jobs), abs=0.01)
    assert jobs["duration"].median() == pytest.approx(source_jobs["duration"].median(), rel=0.05)
    gpus = pl.col("num_pods") * pl.col("gpu_milli")
    big = float(jobs.select((gpus >= 8000).mean()).item())
    assert big == pytest.approx(float(source_jobs.select((gpus >= 8000).mean()).item()), abs=0.01)
    queues = jobs["queue"].value_counts(normalize=True).sort("queue")["proportion"].to_numpy()
    real = source_jobs["queue"].value_counts(normalize=True).sort("queue")["proportion"].to_numpy()
    np.testing.assert_allclose(queues, real, atol=0.01)


def test_mean_gpu_seconds_is_the_mean_work_per_job(source_jobs: pl.DataFrame, mix: SyntheticMix) -> None:
    gpus = source_jobs["num_pods"].cast(pl.Float64) * source_jobs["gpu_milli"] / 1000.0
    assert mix.mean_gpu_seconds == pytest.approx(float((gpus * source_jobs["duration"]).mean()))  # type: ignore[arg-type]


def test_rate_offers_load_on_the_cluster(mix: SyntheticMix) -> None:
    n = 50_000

    def mean_gap(load: float, gpus: int) -> float:
        jobs = synthetic_jobs(n, 5, mix, load, gpus=gpus)
        return float(jobs["submit_time"].max()) / (n - 1)  # type: ignore[arg-type]

    # Offered load rho = lambda * E[S] / c: the mean gap 1 / lambda is E[S] / (rho * c).
    # The mean of 50k exponential gaps is within ~0.45% (one standard error) of 1 / rate.
    assert mean_gap(0.8, GPUS) == pytest.approx(mix.mean_gpu_seconds / (0.8 * GPUS), rel=0.02)
    assert mean_gap(1.6, GPUS) == pytest.approx(mix.mean_gpu_seconds / (1.6 * GPUS), rel=0.02)
    # The same load on a cluster ten times larger: ten times the arrivals.
    assert mean_gap(0.8, 10 * GPUS) == pytest.approx(mix.mean_gpu_seconds / (8 * GPUS), rel=0.02)
    gaps = np.diff(synthetic_jobs(n, 6, mix, gpus=GPUS)["submit_time"].to_numpy())
    # Exponential gaps: standard deviation equals the mean (coefficient of variation 1).
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)


def test_poisson_jobs_arrive_at_the_rate_given(mix: SyntheticMix) -> None:
    n = 50_000
    jobs = poisson_jobs(n, 5, mix.rate, mix)
    assert float(jobs["submit_time"].max()) / (n - 1) == pytest.approx(1 / mix.rate, rel=0.02)  # type: ignore[arg-type]
    # The same draws as synthetic_jobs at the load that asks that rate: only the gap scale differs.
    same = synthetic_jobs(n, 5, mix, mix.rate * mix.mean_gpu_seconds / GPUS, gpus=GPUS)
    assert same["source_job_id"].equals(jobs["source_job_id"])
    np.testing.assert_allclose(same["submit_time"].to_numpy(), jobs["submit_time"].to_numpy(), rtol=1e-9)
    with pytest.raises(InputError, match="arrival rate"):
        poisson_jobs(10, 0, 0.0, mix)


def _replay_fifo(mix: SyntheticMix, load: float, seed: int) -> tuple[float, np.ndarray]:
    """(allocated share of the GPUs from the first to the last arrival, each job's wait) under ``fifo``."""
    from gpureplay.cluster.homogeneous import homogeneous_nodes
    from gpureplay.replay.simulate import simulate
    from gpureplay.schedulers.presets import preset

    jobs = synthetic_jobs(20_000, seed, mix, load, gpus=GPUS)
    nodes = homogeneous_nodes(GPUS // 8, 8, "A100-80GB").nodes
    last = float(jobs["submit_time"].max())  # type: ignore[arg-type]
    replay = simulate(jobs, nodes, preset("fifo"), seed=seed, window=(0.0, last))
    assert replay.window_gpu_milli_seconds is not None
    assert (replay.jobs["state"] == "finished").all()
    waits = (replay.jobs["start_time"] - jobs["submit_time"]).to_numpy()
    return replay.window_gpu_milli_seconds / (1000.0 * GPUS * last), waits


@pytest.mark.parametrize("load", [0.3, 0.6])
@pytest.mark.parametrize("seed", [0, 1])
def test_below_saturation_the_cluster_is_allocated_at_the_offered_load(
    mix: SyntheticMix, load: float, seed: int
) -> None:
    utilisation, _ = _replay_fifo(mix, load, seed)
    # 20,000 heavy-tailed jobs (lognormal durations): the work offered in one run is within a few
    # percent of its mean, and below saturation all of it is served inside the arrival window.
    assert utilisation == pytest.approx(load, rel=0.1)


def test_above_saturation_queues_form_and_grow(mix: SyntheticMix) -> None:
    utilisation, waits = _replay_fifo(mix, 1.5, 0)
    below, below_waits = _replay_fifo(mix, 0.3, 0)
    # More is offered than the GPUs can serve: the cluster stays busy and the queue grows for as long as
    # jobs arrive, so the last jobs wait far longer than the first (their work is hours, not days).
    assert utilisation > 0.8 > below
    last, first = waits[-2000:].mean(), waits[:2000].mean()
    assert last > 10 * first and last > 10 * mix.pool["duration"].mean()  # type: ignore[operator]
    assert below_waits[-2000:].mean() < mix.pool["duration"].mean()  # type: ignore[operator]


def test_a_million_jobs_is_fast(mix: SyntheticMix) -> None:
    start = time.perf_counter()
    jobs = synthetic_jobs(1_000_000, 0, mix, gpus=GPUS)
    elapsed = time.perf_counter() - start
    assert jobs.height == 1_000_000
    assert elapsed < 10.0, f"1M synthetic jobs took {elapsed:.1f} s"


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"n_jobs": 0}, "trace.n_jobs"),
        ({"seed": -1}, "seed"),
        ({"load": 0.0}, "trace.load"),
        ({"load": float("nan")}, "trace.load"),
        ({"load": -2}, "trace.load"),
        ({"gpus": 0}, "cluster"),
    ],
)
def test_bad_settings_name_config_key(mix: SyntheticMix, kwargs: dict[str, object], key: str) -> None:
    args: dict[str, object] = {"n_jobs": 10, "seed": 0, "mix": mix, "gpus": GPUS, **kwargs}
    with pytest.raises(InputError, match=rf"config key '{key}'"):
        synthetic_jobs(**args)  # type: ignore[arg-type]


def test_fit_needs_an_arrival_rate(source_jobs: pl.DataFrame) -> None:
    with pytest.raises(InputError, match="at least 2 jobs"):
        fit_philly_mix(source_jobs.head(1))
    with pytest.raises(InputError, match="same time"):
        fit_philly_mix(source_jobs.head(5).with_columns(pl.lit(3.0).alias("submit_time")))
    with pytest.raises(InputError, match=r"missing column\(s\) duration"):
        fit_philly_mix(source_jobs.drop("duration"))


def test_default_mix_is_the_bundled_philly_trace() -> None:
    philly = pytest.importorskip("gpureplay.traces.philly", reason="the Philly adapter is not importable")
    from gpureplay.workload.synthetic import default_mix

    real = philly.load_philly().jobs
    mix = default_mix()
    assert mix.pool.height == 82_247
    span = _span(real)
    assert mix.rate == pytest.approx(82_246 / span)
    jobs = synthetic_jobs(20_000, 0, gpus=GPUS)
    assert jobs.equals(synthetic_jobs(20_000, 0, mix, gpus=GPUS))
    # Philly: 76,627 of 82,247 jobs ask for one GPU (SOURCE.md).
    one_gpu = float(jobs.select(((pl.col("num_pods") == 1) & (pl.col("gpu_milli") == 1000)).mean()).item())
    assert one_gpu == pytest.approx(76_627 / 82_247, abs=0.01)
    assert set(jobs["queue"].unique()) <= set(real["queue"].unique())


def test_a_run_offers_its_load_on_the_cluster_of_its_config() -> None:
    """``trace=synthetic`` is given the GPUs of the run's cluster: a generated one from its config, a node
    list once built; the same load on a larger cluster arrives faster."""
    pytest.importorskip("gpureplay.traces.philly", reason="the Philly adapter is not importable")
    from gpureplay.config import compose_config
    from gpureplay.experiment import cluster_gpus, load_trace_of

    base = ["trace=synthetic", "trace.n_jobs=1000", "trace.load=0.5", "seed=3"]
    small = compose_config([*base, "cluster=homogeneous", "cluster.nodes=10", "cluster.gpus_per_node=8"])
    assert cluster_gpus(small) == 80
    assert load_trace_of(small).jobs.equals(synthetic_jobs(1000, 3, load=0.5, gpus=80))
    philly = compose_config([*base, "cluster=philly"])
    assert cluster_gpus(philly) == 2490  # Philly's machine list
    assert load_trace_of(philly).jobs.equals(synthetic_jobs(1000, 3, load=0.5, gpus=2490))


def test_a_synthetic_trace_needs_its_cluster() -> None:
    from gpureplay.traces.registry import load_trace

    with pytest.raises(ValueError, match="pass cluster_gpus"):
        load_trace({"kind": "synthetic", "n_jobs": 10, "load": 0.8})
