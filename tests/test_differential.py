"""Differential tests: the numba engine and the plain-Python reference agree job by job.

Hypothesis draws small clusters and traces aimed at the corners of the
semantics (see :mod:`tests.reference.strategies`); each drawn case is replayed
by both simulators under every preset-shaped policy, under random policies
(random placement, periodic cycles, backfill depths) and with a horizon, a
measurement window and small timeline bounds (``max_samples``). The two must
agree on every job's start, finish, state, rejection reason, nodes spanned and
held milli-GPU, on every timeline row, on the sample interval used, and on the
GPU milli-seconds of the whole run and of the window.
On a mismatch the failure message prints the (shrunk) case as tables and the
rows that differ.

Runs are derandomized, so CI sees the same ~2,100 cases every time.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import replace
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.reference.simulator import JOB_RESULT_SCHEMA, TIMELINE_SCHEMA, Replay
from tests.reference.simulator import simulate as reference_simulate
from tests.reference.strategies import (
    CORNER_CASES,
    PRESETS,
    cases,
    jobs_frame,
    max_samples_choices,
    nodes_frame,
    policies,
    sample_intervals,
    seeds,
    windows,
)

from gpureplay.schedulers.policy import GangMode, Placement, Policy


def _engine_missing() -> bool:
    try:
        return importlib.util.find_spec("gpureplay.replay.simulate") is None
    except ModuleNotFoundError:  # the gpureplay.replay package itself is missing
        return True


if _engine_missing():
    pytest.skip(
        "the numba engine gpureplay.replay.simulate does not exist yet: nothing to compare with",
        allow_module_level=True,
    )

engine = pytest.importorskip("gpureplay.replay.simulate")

#: Per-job columns both simulators must agree on (preemptions is always 0 in v1).
COMPARED_JOB_COLUMNS = [
    "job_id",
    "start_time",
    "finish_time",
    "state",
    "reject_reason",
    "nodes_spanned",
    "held_milli",
]

#: Differing timeline rows printed on a mismatch.
MAX_SHOWN_ROWS = 20

SETTINGS: dict[str, Any] = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


def _table(df: pl.DataFrame) -> str:
    with pl.Config(
        tbl_rows=-1, tbl_cols=-1, tbl_width_chars=300, fmt_str_lengths=60, fmt_table_cell_list_len=6
    ):
        return str(df)


def describe_case(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    policy: Policy,
    seed: int,
    sample_interval: float,
    horizon: float | None,
    window: tuple[float, float] | None = None,
    max_samples: int | None = None,
) -> str:
    job_cols = ["job_id", "submit_time", "duration", "num_pods", "gpu_milli", "gpu_mem_mib", "gpu_models"]
    job_cols += ["cpu_milli", "mem_mib", "priority"]
    node_cols = ["node_id", "gpu_model", "num_gpus", "gpu_mem_mib", "cpu_milli", "mem_mib"]
    return (
        f"policy={policy!r}\nseed={seed} sample_interval={sample_interval} horizon={horizon} "
        f"window={window} max_samples={max_samples}\n"
        f"jobs:\n{_table(jobs.select(job_cols))}\nnodes:\n{_table(nodes.select(node_cols))}"
    )


def differences(got: Replay, want: Replay) -> list[str]:
    """Human-readable differences between the engine's result ``got`` and the reference's ``want``."""
    problems: list[str] = []
    if dict(got.jobs.schema) != JOB_RESULT_SCHEMA:
        problems.append(f"engine jobs schema {dict(got.jobs.schema)} != {JOB_RESULT_SCHEMA}")
    if dict(got.timeline.schema) != TIMELINE_SCHEMA:
        problems.append(f"engine timeline schema {dict(got.timeline.schema)} != {TIMELINE_SCHEMA}")
    if problems:
        return problems
    if got.sample_interval != want.sample_interval:
        problems.append(
            f"sample interval used: engine {got.sample_interval!r}, reference {want.sample_interval!r}"
        )
    if (got.window_gpu_milli_seconds is None) != (want.window_gpu_milli_seconds is None) or (
        got.window_gpu_milli_seconds is not None
        and want.window_gpu_milli_seconds is not None
        and not math.isclose(
            got.window_gpu_milli_seconds, want.window_gpu_milli_seconds, rel_tol=1e-9, abs_tol=1e-6
        )
    ):
        problems.append(
            f"window_gpu_milli_seconds: engine {got.window_gpu_milli_seconds!r}, "
            f"reference {want.window_gpu_milli_seconds!r}"
        )
    if (
        not problems
        and got.jobs.select(COMPARED_JOB_COLUMNS).equals(want.jobs.select(COMPARED_JOB_COLUMNS))
        and got.timeline.equals(want.timeline)
        and math.isclose(got.gpu_milli_seconds, want.gpu_milli_seconds, rel_tol=1e-9, abs_tol=1e-6)
    ):
        return []  # the common case, without building the row-by-row report

    if got.jobs.height != want.jobs.height:
        problems.append(f"engine returned {got.jobs.height} job rows, reference {want.jobs.height}")
    else:
        left = got.jobs.select(COMPARED_JOB_COLUMNS).with_row_index("row")
        right = want.jobs.select(COMPARED_JOB_COLUMNS).with_row_index("row")
        both = left.join(right, on="row", suffix="_ref")
        differs = pl.any_horizontal(~pl.col(c).eq_missing(pl.col(f"{c}_ref")) for c in COMPARED_JOB_COLUMNS)
        bad = both.filter(differs)
        if bad.height:
            columns = ["row"] + [x for c in COMPARED_JOB_COLUMNS for x in (c, f"{c}_ref")]
            problems.append(f"job rows differ (engine vs *_ref):\n{_table(bad.select(columns))}")

    # One sample per time, so matching rows by time shows missing, extra and differing samples alike.
    both = got.timeline.join(want.timeline, on="time", how="full", suffix="_ref", coalesce=False)
    differs = pl.any_horizontal(~pl.col(c).eq_missing(pl.col(f"{c}_ref")) for c in TIMELINE_SCHEMA)
    bad = both.filter(differs).sort(pl.coalesce("time", "time_ref"))
    if bad.height:
        columns = [x for c in TIMELINE_SCHEMA for x in (c, f"{c}_ref")]
        shown = MAX_SHOWN_ROWS
        more = f"\n... and {bad.height - shown} more" if bad.height > shown else ""
        problems.append(
            f"timeline: engine {got.timeline.height} rows, reference {want.timeline.height}; "
            f"rows that differ (engine vs *_ref):\n{_table(bad.select(columns).head(shown))}{more}"
        )

    if not math.isclose(got.gpu_milli_seconds, want.gpu_milli_seconds, rel_tol=1e-9, abs_tol=1e-6):
        problems.append(
            f"gpu_milli_seconds: engine {got.gpu_milli_seconds!r}, reference {want.gpu_milli_seconds!r}"
        )
    return problems


def assert_agree(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    policy: Policy,
    *,
    seed: int,
    sample_interval: float,
    horizon: float | None = None,
    window: tuple[float, float] | None = None,
    max_samples: int = 100_000,
) -> None:
    kwargs: dict[str, Any] = {
        "seed": seed,
        "sample_interval": sample_interval,
        "horizon": horizon,
        "window": window,
        "max_samples": max_samples,
        "debug": True,
    }
    case = describe_case(jobs, nodes, policy, seed, sample_interval, horizon, window, max_samples)
    try:
        want = reference_simulate(jobs, nodes, policy, **kwargs)
    except Exception as exc:
        raise AssertionError(f"reference raised {exc!r}\n{case}") from exc
    try:
        got = engine.simulate(jobs, nodes, policy, **kwargs)
    except Exception as exc:
        raise AssertionError(f"engine raised {exc!r}\n{case}") from exc
    problems = differences(got, want)
    if problems:
        raise AssertionError("engine and reference disagree\n" + case + "\n" + "\n".join(problems))


@pytest.fixture(scope="module", autouse=True)
def _warm_engine() -> None:
    """Compile the kernels once, outside hypothesis' timing."""
    jobs = jobs_frame([{"job_id": 1, "submit_time": 0.0, "duration": 1.0, "num_pods": 1, "gpu_milli": 1000}])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 1}])
    for policy in PRESETS.values():
        engine.simulate(jobs, nodes, policy, debug=True)


# 200 cases x 7 presets = 1,400 replays per simulator.
@settings(max_examples=200, **SETTINGS)
@given(
    case=cases(),
    sample_interval=sample_intervals,
    seed=seeds,
    window=windows(),
    max_samples=max_samples_choices,
)
def test_presets_agree(
    case: tuple[pl.DataFrame, pl.DataFrame],
    sample_interval: float,
    seed: int,
    window: tuple[float, float] | None,
    max_samples: int,
) -> None:
    jobs, nodes = case
    for policy in PRESETS.values():
        assert_agree(
            jobs, nodes, policy, seed=seed, sample_interval=sample_interval, window=window,
            max_samples=max_samples,
        )  # fmt: skip


# 75 cases x 8 random policies = 600 replays: random placement, periodic cycles, any mode/backfill mix.
@settings(max_examples=75, **SETTINGS)
@given(
    case=cases(),
    policy_list=st.lists(policies(), min_size=8, max_size=8),
    sample_interval=sample_intervals,
    seed=seeds,
)
def test_random_policies_agree(
    case: tuple[pl.DataFrame, pl.DataFrame], policy_list: list[Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes = case
    for policy in policy_list:
        assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


# 40 cases x 3 policies = 120 replays cut by a horizon (partly placed, running and unarrived jobs at the end).
@settings(max_examples=40, **SETTINGS)
@given(
    case=cases(),
    preset=st.sampled_from(sorted(PRESETS)),
    policy_list=st.lists(policies(), min_size=2, max_size=2),
    horizon=st.sampled_from([0.0, 3.0, 7.5, 12.0, 20.0]),
    sample_interval=sample_intervals,
    seed=seeds,
    window=windows(),
    max_samples=max_samples_choices,
)
def test_horizon_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame],
    preset: str,
    policy_list: list[Policy],
    horizon: float,
    sample_interval: float,
    seed: int,
    window: tuple[float, float] | None,
    max_samples: int,
) -> None:
    jobs, nodes = case
    for chosen in (PRESETS[preset], *policy_list):
        assert_agree(
            jobs, nodes, chosen, seed=seed, sample_interval=sample_interval, horizon=horizon, window=window,
            max_samples=max_samples,
        )  # fmt: skip


#: Policies the corner cases run under: every preset, plus random placement and periodic cycles.
CORNER_POLICIES: list[Policy] = [
    *PRESETS.values(),
    replace(PRESETS["gang-binpack"], node_placement=Placement.random, gpu_placement=Placement.random),
    replace(PRESETS["kube-default"], name="kube-random", node_placement=Placement.random),
    replace(PRESETS["easy-backfill"], name="easy-periodic", session_interval=4.0),
    replace(PRESETS["kube-default"], name="kube-periodic", session_interval=3.0, gang=GangMode.pod_by_pod),
]


@pytest.mark.parametrize("name", sorted(CORNER_CASES))
def test_corner_cases_agree(name: str) -> None:
    job_rows, node_rows = CORNER_CASES[name]
    jobs, nodes = jobs_frame(job_rows), nodes_frame(node_rows)
    for policy in CORNER_POLICIES:
        for horizon in (None, 11.0, 100.0):
            assert_agree(
                jobs, nodes, policy, seed=3, sample_interval=10.0, horizon=horizon, window=(5.0, 30.0)
            )
