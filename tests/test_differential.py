"""Differential tests: the numba engine and the plain-Python reference agree job by job, attempt by attempt.

Hypothesis draws clusters and traces aimed at the corners of the v2 semantics
(:mod:`tests.reference.strategies`): from one node and a few jobs up to about
fifty nodes and three hundred jobs, and a few clusters with more than 64
nodes of one model. Each case is replayed by both simulators under every
scheduler preset read from the shipped YAML files, under preemption variants
of the gang and pod-by-pod presets, and under random policies (random
scorers, periodic cycles, backfill depths, grace periods, requeue rules,
candidate-node limits), with horizons, measurement windows, small
``max_samples`` (the timeline widens) and engine chunk sizes. The two must
agree on every job row, every attempt row, every timeline row and both GPU
integrals; on a mismatch the failure message prints the (shrunk) case as
tables and the rows that differ.

The engine runs with ``debug=True`` (its invariants are checked after every
cycle). CI replays fixed draws (no example database), so it sees the same
cases every time; ``make soak`` draws fresh ones (:mod:`tests.reference.draws`).
The tests fail, never skip, when the engine cannot be imported.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import pickle
import tempfile
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.reference.draws import SOAK, draws
from tests.reference.simulator import (
    ATTEMPT_SCHEMA,
    JOB_RESULT_SCHEMA,
    QUEUE_SAMPLE_SCHEMA,
    TIMELINE_SCHEMA,
    Replay,
)
from tests.reference.simulator import draw as reference_draw
from tests.reference.simulator import simulate as reference_simulate
from tests.reference.strategies import (
    CORNER_CASES,
    KAI_TAS_REQUESTS,
    PREEMPT_VARIANTS,
    PRESETS,
    QUEUE_TAS_VARIANTS,
    QUOTA_VARIANTS,
    SHARING_PRESETS,
    TAS_REQUESTS,
    VOLCANO_TAS_REQUESTS,
    as_taken_by,
    big_cases,
    cases,
    dynamic_mig_cases,
    dynamic_mig_policies,
    flavor_fungibility,
    horizons,
    jobs_frame,
    kueue_manifests,
    max_samples,
    mig_cases,
    mig_policies,
    nodes_frame,
    policies,
    sample_intervals,
    seeds,
    sharing_policies,
    tas_nodes,
    windows,
)

from gpureplay.engine.jit.compile_once import VariantBusy, without_waiting
from gpureplay.errors import InputError
from gpureplay.schedulers.policy import (
    Backfill,
    FairSharingStrategies,
    GangMode,
    GpuSharing,
    KueueAdmission,
    MigStrategy,
    Policy,
    Preemption,
    QueueModel,
    QueueOrder,
    QuotaSource,
    Requeue,
    TasProfile,
    TopologyAware,
)
from gpureplay.workload.utilization import ReclaimIdlePolicy, policy_columns

try:
    _engine_module: ModuleType | None = importlib.import_module("gpureplay.replay.simulate")
except Exception as exc:  # any import failure must fail the tests, not skip them
    _engine_module = None
    ENGINE_IMPORT_ERROR: Exception | None = exc
else:
    ENGINE_IMPORT_ERROR = None


def engine() -> ModuleType:
    """The engine module; fails the calling test (never skips) when it cannot be imported."""
    if _engine_module is None:
        pytest.fail(f"the numba engine gpureplay.replay.simulate cannot be imported: {ENGINE_IMPORT_ERROR!r}")
    return _engine_module


#: Columns holding event times: compared exactly (the inputs are dyadic, so both sides are exact).
EXACT_FLOATS = {"start_time", "finish_time", "hold_start", "start", "evicted", "end", "time"}
#: Differing rows printed on a mismatch.
MAX_SHOWN_ROWS = 20


#: Every shipped preset plus the preemption variants and the one queue-model-with-topology variant, by name.
ALL_POLICIES: dict[str, Policy] = {**PRESETS, **PREEMPT_VARIANTS, **QUEUE_TAS_VARIANTS}


def _table(df: pl.DataFrame) -> str:
    with pl.Config(
        tbl_rows=-1, tbl_cols=-1, tbl_width_chars=400, fmt_str_lengths=60, fmt_table_cell_list_len=6
    ):
        return str(df)


def describe_case(jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy, kwargs: dict[str, Any]) -> str:
    job_cols = ["job_id", "submit_time", "duration", "num_pods", "gpu_milli", "gpu_mem_mib", "gpu_models"]
    job_cols += ["cpu_milli", "mem_mib", "priority", "preemptible"]
    job_cols += [
        c
        for c in ("checkpoint_interval", "restart_overhead", "preemption_policy", "mig_profile")
        if c in jobs.columns
    ]
    node_cols = ["node_id", "gpu_model", "num_gpus", "gpu_mem_mib", "cpu_milli", "mem_mib"]
    node_cols += [c for c in ("mig_layout",) if c in nodes.columns]
    return (
        f"policy={policy!r}\n{kwargs}\n"
        f"jobs:\n{_table(jobs.select(job_cols))}\nnodes:\n{_table(nodes.select(node_cols))}"
    )


def _close(column: str, exact_times: bool) -> pl.Expr:
    """Per-row: the engine's value (``column``) equals the reference's (``column_ref``)."""
    left, right = pl.col(column), pl.col(f"{column}_ref")
    same = left.eq_missing(right)
    if exact_times and column in EXACT_FLOATS:
        return same
    if isinstance(left, pl.Expr):
        close = (left - right).abs() <= 1e-6 + 1e-9 * right.abs()
        return same | close.fill_null(False)
    return same


def _near_event_times(got: Replay, want: Replay) -> list[float]:
    """Sample times of either replay within rounding (1e-6 s) of an attempt's event (placement to end)."""
    columns = ("hold_start", "start", "evicted", "end")
    events = pl.concat([r.attempts.select(pl.col(c).alias("event")) for r in (got, want) for c in columns])
    events = events.drop_nulls()
    samples = pl.concat([got.timeline.select("time"), want.timeline.select("time")]).unique()
    near = samples.join(events, how="cross").filter((pl.col("time") - pl.col("event")).abs() <= 1e-6)
    return near["time"].unique().to_list()


def _row_differences(
    name: str, got: pl.DataFrame, want: pl.DataFrame, schema: dict[str, pl.DataType], exact_times: bool
) -> list[str]:
    """Rows of two same-schema tables (compared in order) that differ, as printable tables."""
    if got.height != want.height:
        return [
            f"{name}: engine {got.height} rows, reference {want.height}\n"
            f"engine:\n{_table(got.head(MAX_SHOWN_ROWS))}\nreference:\n{_table(want.head(MAX_SHOWN_ROWS))}"
        ]
    left = got.with_row_index("row")
    right = want.with_row_index("row")
    both = left.join(right, on="row", suffix="_ref")
    checks = []
    for column, dtype in schema.items():
        if dtype == pl.Float64:
            checks.append(~_close(column, exact_times))
        else:
            checks.append(~pl.col(column).eq_missing(pl.col(f"{column}_ref")))
    bad = both.filter(pl.any_horizontal(checks))
    if not bad.height:
        return []
    columns = ["row"] + [x for c in schema for x in (c, f"{c}_ref")]
    more = f"\n... and {bad.height - MAX_SHOWN_ROWS} more" if bad.height > MAX_SHOWN_ROWS else ""
    return [
        f"{name} rows differ (engine vs *_ref):\n{_table(bad.select(columns).head(MAX_SHOWN_ROWS))}{more}"
    ]


def differences(got: Replay, want: Replay, *, exact_times: bool = True) -> list[str]:
    """Human-readable differences between the engine's result ``got`` and the reference's ``want``.

    Event times must be equal to the bit unless ``exact_times`` is False: under GPU sharing by
    replicas a finish time is ``t + work left / rate``, computed in a different order by each.
    """
    problems: list[str] = []
    for name, table, schema in (
        ("jobs", got.jobs, JOB_RESULT_SCHEMA),
        ("attempts", got.attempts, ATTEMPT_SCHEMA),
        ("timeline", got.timeline, TIMELINE_SCHEMA),
        ("queues", got.queues, QUEUE_SAMPLE_SCHEMA),
    ):
        if dict(table.schema) != schema:
            problems.append(f"engine {name} schema {dict(table.schema)} != {schema}")
    if problems:
        return problems
    problems += _row_differences("jobs", got.jobs, want.jobs, JOB_RESULT_SCHEMA, exact_times)
    problems += _row_differences("attempts", got.attempts, want.attempts, ATTEMPT_SCHEMA, exact_times)
    timelines = (got.timeline, want.timeline, got.queues, want.queues)
    if not exact_times:
        # A sample at an event time that each simulator computes in its own order (t + left / rate)
        # sees the event on one side and not the other: those rows are not comparable.
        near = _near_event_times(got, want)
        timelines = tuple(t.filter(~pl.col("time").is_in(near)) for t in timelines)
    problems += _row_differences("timeline", timelines[0], timelines[1], TIMELINE_SCHEMA, exact_times)
    problems += _row_differences("queues", timelines[2], timelines[3], QUEUE_SAMPLE_SCHEMA, exact_times)
    for name in ("gpu_milli_seconds", "window_gpu_milli_seconds", "sample_interval"):
        a, b = getattr(got, name), getattr(want, name)
        if a is None or b is None:  # no window declared: both must say so
            if a is not b:
                problems.append(f"{name}: engine {a!r}, reference {b!r}")
        elif not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6):
            problems.append(f"{name}: engine {a!r}, reference {b!r}")
    return problems


def queue_usage_differences(replay: Replay, reserving: bool = False) -> list[str]:
    """Samples at which the queues' usage does not sum to the allocated milli-GPU (whole GPUs, fractions).

    Without replicas or MIG instances a pod's request is what it holds, so the
    per-queue accounting and the cluster's must agree at every sample. With
    ``reserving`` (Kueue admitting by quota alone) the usage also counts the
    admitted jobs' unplaced pods: it is at least the allocated milli-GPU.
    """
    summed = replay.queues.group_by("time").agg((pl.col("usage_gpu") * 1000).round().cast(pl.Int64).sum())
    usage = pl.col("usage_gpu").fill_null(0)
    wrong = usage < pl.col("allocated_milli") if reserving else usage != pl.col("allocated_milli")
    both = replay.timeline.join(summed, on="time", how="left").filter(wrong)
    if not both.height:
        return []
    return [f"queues' usage_gpu does not sum to allocated_milli:\n{_table(both.head(MAX_SHOWN_ROWS))}"]


#: Where a disagreement's case is saved whole (``make soak`` sets it): the tables printed are cut short.
CASE_DIR_ENV = "GPUREPLAY_CASE_DIR"


def save_case(jobs: pl.DataFrame, nodes: pl.DataFrame, policy: Policy, kwargs: dict[str, Any]) -> str:
    """Pickle a disagreeing case into ``$GPUREPLAY_CASE_DIR`` (if set); the line saying where, or nothing.

    Replay it with ``jobs, nodes, policy, kwargs = pickle.load(f)`` and
    ``assert_agree(jobs, nodes, policy, **kwargs)``.
    """
    folder = os.environ.get(CASE_DIR_ENV)
    if not folder:
        return ""
    blob = pickle.dumps((jobs, nodes, policy, kwargs))
    path = Path(folder) / f"case-{hashlib.sha256(blob).hexdigest()[:16]}.pickle"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return f"\ncase saved: {path}"


def assert_agree(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    policy: Policy,
    *,
    chunk_seconds: float | None = None,
    **kwargs: Any,
) -> Replay | None:
    """Replay with both simulators (``kwargs``: seed, sample_interval, horizon, window, max_samples).

    Returns the reference's replay, or ``None`` for a preemption livelock (both stopped it)."""
    simulate = engine().simulate
    kwargs.setdefault("seed", 0)
    kwargs.setdefault("sample_interval", 10.0)
    shown = {**kwargs, "chunk_seconds": chunk_seconds}
    try:
        want = reference_simulate(jobs, nodes, policy, debug=True, **kwargs)
    except RuntimeError as exc:
        if "preemption livelock" not in str(exc):
            raise
        # A case on which the spec's preemption evicts without end (both stop it after 100 evictions
        # per job; tests/test_preemption_runs.py holds one): the engine must stop it too, not hang.
        with pytest.raises(InputError, match="preemption livelock"):
            simulate(jobs, nodes, policy, debug=True, chunk_seconds=chunk_seconds, **kwargs)
        return None
    except Exception as exc:
        raise AssertionError(
            f"reference raised {exc!r}\n{describe_case(jobs, nodes, policy, shown)}"
        ) from exc
    try:
        got = simulate(jobs, nodes, policy, debug=True, chunk_seconds=chunk_seconds, **kwargs)
    except Exception as exc:
        raise AssertionError(f"engine raised {exc!r}\n{describe_case(jobs, nodes, policy, shown)}") from exc
    # Rates below 1 (sharing, MIG instances) compute finish = t + left / rate in each simulator's order.
    exact = policy.gpu_sharing is GpuSharing.none and policy.mig_strategy is MigStrategy.none
    problems = differences(got, want, exact_times=exact)
    if exact and not problems:
        problems = queue_usage_differences(got, policy.kueue_admission is KueueAdmission.quota)
    if problems:
        case = describe_case(jobs, nodes, policy, shown)
        saved = save_case(jobs, nodes, policy, {**kwargs, "chunk_seconds": chunk_seconds})
        raise AssertionError("engine and reference disagree\n" + case + "\n" + "\n".join(problems) + saved)
    return want


def warm_every_variant() -> None:
    """Compile the engine's variants (every preset and preemption variant) outside hypothesis.

    ``tests/conftest.py`` calls this first thing in every worker of a session that runs this module,
    so that the workers compile the variants side by side before any test waits for one.
    """
    if _engine_module is None:
        return  # each test fails with the import error
    jobs = jobs_frame([{"job_id": 1, "submit_time": 0.0, "duration": 1.0, "num_pods": 1, "gpu_milli": 1000}])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 1}])
    # Each queue system's variant costs the most (Kueue's most of all): they head the list and end it.
    # Worker 0 walks the list forward, worker 1 backward and any other from its own share onward, so two
    # workers compile different variants until they meet; a variant another worker is compiling is left
    # for later (compile_once.without_waiting) rather than waited for with a core idle, and loaded from
    # numba's cache (or waited for) once the worker's own share is done.
    first = {QueueModel.kueue: 0, QueueModel.kai: 1, QueueModel.none: 2, QueueModel.volcano: 3}
    policies = sorted(ALL_POLICIES.values(), key=lambda p: first[p.queues])
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if worker == 1:
        policies.reverse()
    elif worker > 1:
        start = len(policies) * worker // workers
        policies = policies[start:] + policies[:start]
    busy = []
    with without_waiting():
        for policy in policies:
            try:
                _engine_module.simulate(as_taken_by(jobs, policy), nodes, policy, debug=True)
            except VariantBusy:
                busy.append(policy)
    for policy in busy:
        _engine_module.simulate(as_taken_by(jobs, policy), nodes, policy, debug=True)


@pytest.fixture(scope="module", autouse=True)
def _warm_engine() -> None:
    """Every variant compiled (or loaded) before this module's tests (at once when conftest did it)."""
    warm_every_variant()


def test_engine_is_importable() -> None:
    assert engine().simulate is not None


def test_policies_cover_every_shipped_preset_and_preemption_in_both_modes() -> None:
    """The differential policies include the YAML presets and preemption in gang and pod-by-pod mode."""
    assert set(PRESETS) >= {"fifo", "sjf", "kube-default", "gang-binpack", "gang-spread", "easy-backfill"}
    preempting = [p for p in ALL_POLICIES.values() if p.preemption is Preemption.priority]
    assert {p.gang for p in preempting} == {GangMode.gang, GangMode.pod_by_pod}
    assert any(p.node_placement == "random" for p in preempting)


#: The FGD paper's presets differ from each other only in their scorer (FIFO gang placement, no
#: backfill), the GPU-sharing systems' from gang-binpack / kube-default in their scorers and sharing
#: settings: fewer cases each (the reference replays the paper's scorers slowly in plain Python;
#: ``tests/test_sharing.py`` draws the sharing settings on their own).
PAPER_PRESETS: frozenset[str] = frozenset(
    name
    for name in ALL_POLICIES
    if name.startswith("fgd") or name in SHARING_PRESETS or name in QUOTA_VARIANTS
)


# Per policy (so a failure shrinks under that policy only): 16 small cases x every preset and variant
# (`make soak` draws SOAK_SCALE times as many, fresh each round; test_random_policies_agree adds more).
@pytest.mark.parametrize("name", sorted(set(ALL_POLICIES) - PAPER_PRESETS))
@draws(16)
@given(case=cases(), sample_interval=sample_intervals, seed=seeds)
def test_presets_agree(
    name: str, case: tuple[pl.DataFrame, pl.DataFrame], sample_interval: float, seed: int
) -> None:
    jobs, nodes = case
    policy = ALL_POLICIES[name]
    assert_agree(as_taken_by(jobs, policy), nodes, policy, seed=seed, sample_interval=sample_interval)


@pytest.mark.parametrize("name", sorted(PAPER_PRESETS))
@draws(12)
@given(case=cases(), sample_interval=sample_intervals, seed=seeds)
def test_paper_presets_agree(
    name: str, case: tuple[pl.DataFrame, pl.DataFrame], sample_interval: float, seed: int
) -> None:
    jobs, nodes = case
    assert_agree(jobs, nodes, ALL_POLICIES[name], seed=seed, sample_interval=sample_interval)


# 80 small cases x 6 random policies, with horizons, windows, small max_samples and engine chunks.
@draws(80)
@given(
    case=cases(),
    policy_list=st.lists(policies(), min_size=6, max_size=6),
    sample_interval=sample_intervals,
    seed=seeds,
    horizon=horizons,
    window=windows,
    rows=max_samples,
    chunk=st.sampled_from([None, None, 0.5, 3.0, 7.0]),
)
def test_random_policies_agree(
    case: tuple[pl.DataFrame, pl.DataFrame],
    policy_list: list[Policy],
    sample_interval: float,
    seed: int,
    horizon: float | None,
    window: tuple[float, float] | None,
    rows: int,
    chunk: float | None,
) -> None:
    jobs, nodes = case
    for policy in policy_list:
        assert_agree(
            jobs,
            nodes,
            policy,
            seed=seed,
            sample_interval=sample_interval,
            horizon=horizon,
            window=window,
            max_samples=rows,
            chunk_seconds=chunk,
        )


@draws(40)
@given(
    case=cases(), policy=sharing_policies(), sample_interval=sample_intervals, seed=seeds, horizon=horizons
)
def test_sharing_by_replicas_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame],
    policy: Policy,
    sample_interval: float,
    seed: int,
    horizon: float | None,
) -> None:
    """Time-slicing and MPS (random replicas, allocation, demand and overhead): rates and finishes agree."""
    jobs, nodes = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval, horizon=horizon)


@draws(30)
@given(
    case=mig_cases(), policy=mig_policies(), sample_interval=sample_intervals, seed=seeds, horizon=horizons
)
def test_mig_instances_agree(
    case: tuple[pl.DataFrame, pl.DataFrame],
    policy: Policy,
    sample_interval: float,
    seed: int,
    horizon: float | None,
) -> None:
    """MIG instances (random single-strategy layouts, named profiles, both demand rules): results agree."""
    jobs, nodes = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval, horizon=horizon)


@draws(30)
@given(
    data=st.data(),
    sample_interval=sample_intervals,
    seed=seeds,
    horizon=horizons,
)
def test_slice_mask_mig_agrees(
    data: st.DataObject, sample_interval: float, seed: int, horizon: float | None
) -> None:
    """Slice-mask MIG: dynamic (instances per pod, both start rules, creation time) or the mixed strategy
    (a layout's instances, one resource per profile), named profiles, MIG and whole-GPU nodes, gang and
    pod by pod: results agree job by job."""
    mixed = data.draw(st.booleans(), label="mixed")
    jobs, nodes = data.draw(dynamic_mig_cases(mixed=mixed), label="case")
    policy = data.draw(dynamic_mig_policies(mixed=mixed), label="policy")
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval, horizon=horizon)


# A few big cases (6-50 nodes, up to 300 jobs), each under a preset and two random policies.
@draws(6)
@given(
    case=big_cases(),
    name=st.sampled_from(sorted(ALL_POLICIES)),
    policy_list=st.lists(policies(), min_size=2, max_size=2),
    seed=seeds,
)
def test_big_cases_agree(
    case: tuple[pl.DataFrame, pl.DataFrame], name: str, policy_list: list[Policy], seed: int
) -> None:
    jobs, nodes = case
    for policy in (ALL_POLICIES[name], *policy_list):
        assert_agree(as_taken_by(jobs, policy), nodes, policy, seed=seed, sample_interval=25.0, max_samples=8)


# More than 64 nodes of one model (the engine's per-model fit tree and node scans at that width).
@draws(2)
@given(case=big_cases(max_jobs=120, wide=True), policy=policies(), seed=seeds)
def test_wide_cluster_agrees(case: tuple[pl.DataFrame, pl.DataFrame], policy: Policy, seed: int) -> None:
    jobs, nodes = case
    for chosen in (PRESETS["gang-binpack"], PREEMPT_VARIANTS["kube-default+preempt"], policy):
        assert_agree(jobs, nodes, chosen, seed=seed, sample_interval=50.0)


#: Policies the corner cases run under: every preset and preemption variant, plus periodic cycles.
CORNER_POLICIES: list[Policy] = [
    *ALL_POLICIES.values(),
    replace(PRESETS["easy-backfill"], name="easy-periodic", session_interval=4.0),
    replace(PREEMPT_VARIANTS["kube-default+preempt"], name="kube-preempt-periodic", session_interval=3.0),
    replace(PREEMPT_VARIANTS["gang-binpack+preempt"], name="gang-preempt-periodic", session_interval=0.5),
]


#: The horizons each corner case is replayed to: none, one cutting most cases short, one past most ends.
CORNER_HORIZONS: tuple[float | None, ...] = (None, 11.0, 100.0)


@pytest.mark.parametrize("name", sorted(CORNER_CASES))
def test_corner_cases_agree(name: str) -> None:
    job_rows, node_rows = CORNER_CASES[name]
    jobs, nodes = jobs_frame(job_rows), nodes_frame(node_rows)
    case = sorted(CORNER_CASES).index(name)
    for k, policy in enumerate(CORNER_POLICIES):
        taken = as_taken_by(jobs, policy)
        # CI replays each (case, policy) pair to one horizon, turning with the case, so that every policy
        # meets every horizon over the cases; `make soak` replays every pair to all three.
        chosen = CORNER_HORIZONS if SOAK else (CORNER_HORIZONS[(case + k) % len(CORNER_HORIZONS)],)
        for horizon in chosen:
            assert_agree(taken, nodes, policy, seed=3, sample_interval=10.0, horizon=horizon)


def test_engine_draw_matches_the_reference_hash() -> None:
    """The engine's counter-based draw and the reference's (written from the spec) are one function."""
    from gpureplay.engine.jit.config import python_callable
    from gpureplay.engine.state import rng

    engine_draw = python_callable(rng.draw)
    engine()
    keys = [(0, 0, 0, 0, 0), (42, 7, 3, 1, 2), (2**63 - 1, 10_000, 15, 4, 1), (123_456_789, 2**40, 0, 9, 0)]
    for key in keys:
        assert int(engine_draw(*key)) == reference_draw(*key), key


# --------------------------------------------------------------------------------------------------
# Accounting between events
# --------------------------------------------------------------------------------------------------


def test_timeline_lost_gpu_seconds_accrue_while_spent() -> None:
    """Grace periods and restart overheads count in the timeline's lost GPU-seconds as they are spent.

    So the timeline's running total equals the job table's at every sample, the last one included.
    """
    jobs = jobs_frame(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 20.0, "num_pods": 1, "gpu_milli": 4000,
             "restart_overhead": 1.0},
            {"job_id": 2, "submit_time": 7.0, "duration": 5.0, "num_pods": 1, "gpu_milli": 4000,
             "priority": 9, "restart_overhead": 1.0},
        ]
    )  # fmt: skip
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 4}])
    policy = PREEMPT_VARIANTS["gang-binpack+preempt"]  # grace 2 s
    # Job 1 is evicted at 7 (nothing lost: checkpoint 0), holds until 9, restarts at 14 and spends
    # 1 s of overhead; cut at 14.5 it has lost 4 x (2 + 0.5) = 10 GPU-seconds, as its job row says.
    result = assert_agree(jobs, nodes, policy, sample_interval=0.5, horizon=14.5)
    assert result is not None
    assert result.jobs["lost_gpu_seconds"].to_list() == [10.0, 0.0]
    assert result.timeline.filter(pl.col("time") == 8.0)["lost_gpu_seconds"].to_list() == [4.0]
    assert result.timeline["lost_gpu_seconds"].to_list()[-1] == 10.0


def test_a_preemption_livelock_stops_both_simulators() -> None:
    """A generated case (shrunk to 8 jobs) on which the spec's preemption evicts without end.

    At t=100 job 551 (8 whole GPUs, priority 5) is nominated to the V100 and 7 GPUs of the A10, evicts
    860 (two 300-milli pods on A10 GPUs 6-7); while 860 terminates, 4397 (four 100-milli pods, priority
    -5) passes the nominated-room check, which compares milli-GPU only, and takes A10 GPUs 0-3 whole-GPU
    pods needed; 551 evicts 4397, 860 comes back on GPUs 4-5, and so on every 30 s. Both simulators stop
    it after 100 evictions per job instead of running forever (the model gap is in the note).
    """
    jobs = jobs_frame(
        [
            {"job_id": 399, "submit_time": 0.0, "duration": 100.0, "num_pods": 2, "gpu_milli": 3000,
             "gpu_mem_mib": 16384, "priority": -5, "preemptible": False},
            {"job_id": 272, "submit_time": 1.0, "duration": 100.0, "num_pods": 8, "gpu_milli": 300,
             "gpu_mem_mib": 4096, "cpu_milli": 2000, "priority": -5},
            {"job_id": 3225, "submit_time": 2.0, "duration": 0.0, "num_pods": 3, "gpu_milli": 500,
             "cpu_milli": 8000, "mem_mib": 1024, "priority": 5, "preemptible": False},
            {"job_id": 4805, "submit_time": 9.5, "duration": 19.0, "num_pods": 2, "gpu_milli": 300,
             "gpu_mem_mib": 4096, "mem_mib": 8192, "preemptible": False},
            {"job_id": 0, "submit_time": 12.0, "duration": 38.0, "num_pods": 1, "gpu_milli": 1000,
             "gpu_mem_mib": 4096, "cpu_milli": 8000},
            {"job_id": 4397, "submit_time": 12.0, "duration": 100.0, "num_pods": 4, "gpu_milli": 100,
             "gpu_mem_mib": 20000, "mem_mib": 65536, "priority": -5},
            {"job_id": 860, "submit_time": 20.5, "duration": 100.0, "num_pods": 2, "gpu_milli": 300,
             "gpu_mem_mib": 16384, "mem_mib": 65536, "priority": -5},
            {"job_id": 551, "submit_time": 21.5, "duration": 100.0, "num_pods": 8, "gpu_milli": 1000,
             "cpu_milli": 2000, "mem_mib": 65536, "priority": 5},
        ]
    )  # fmt: skip
    nodes = nodes_frame(
        [
            {"gpu_model": "V100", "num_gpus": 1, "gpu_mem_mib": 16384, "cpu_milli": 16000},
            {"gpu_model": "A10", "num_gpus": 8, "gpu_mem_mib": 24576, "cpu_milli": 64000},
        ]
    )
    policy = PRESETS["gang-binpack-preempt"]
    with pytest.raises(RuntimeError, match="preemption livelock"):
        reference_simulate(jobs, nodes, policy, seed=1, sample_interval=4.0)
    stopped = r"scheduler.preemption.*preemption livelock: 801 evictions for 8 jobs"
    with pytest.raises(InputError, match=stopped):
        engine().simulate(jobs, nodes, policy, debug=True, seed=1, sample_interval=4.0)
    # With no grace period the evictions all happen at one instant: the engine stops inside its chunk.
    instant = replace(policy, graceful_termination=0.0)
    with pytest.raises(RuntimeError, match="preemption livelock"):
        reference_simulate(jobs, nodes, instant, seed=1, sample_interval=4.0)
    with pytest.raises(InputError, match=r"preemption livelock: 801 evictions for 8 jobs by t=100 s"):
        engine().simulate(jobs, nodes, instant, debug=True, seed=1, sample_interval=4.0)


def test_preemption_without_the_priority_order_is_refused() -> None:
    """A FIFO queue with preemption would evict forever; it is refused, naming the key.

    A lower-priority job ahead of the preemptor in FIFO order retakes its
    victims' resources at every release; kube-scheduler avoids this with
    PrioritySort (and the preemptor's nominated node), so preemption requires
    the priority order.
    """
    from gpureplay.errors import InputError

    jobs = jobs_frame(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 100.0, "num_pods": 1, "gpu_milli": 1000},
            {
                "job_id": 2,
                "submit_time": 1.0,
                "duration": 10.0,
                "num_pods": 1,
                "gpu_milli": 1000,
                "priority": 9,
            },
        ]
    )
    nodes = nodes_frame([{"gpu_model": "T4", "num_gpus": 1}])
    policy = replace(
        PRESETS["fifo"], preemption=Preemption.priority, graceful_termination=2.0, requeue=Requeue.original
    )
    with pytest.raises(InputError, match="queue_order"):
        engine().simulate(jobs, nodes, policy, horizon=50.0)


_MANIFEST_DIR = Path(tempfile.mkdtemp(prefix="gpureplay-kueue-"))


def _manifest_file(text: str) -> str:
    path = _MANIFEST_DIR / f"{hashlib.sha1(text.encode()).hexdigest()}.yaml"
    path.write_text(text)
    return str(path)


def _in_queues(draw: st.DrawFn, jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs`` spread over two or three queues, with coarse submit times: several queues' heads meet in one
    cycle, where the queue model's order (Kueue: borrowing level first; Volcano: share) and quotas decide."""
    names = ("vc-a", "vc-b", "vc-c")[: draw(st.integers(2, 3))]
    picks = draw(st.lists(st.sampled_from(names), min_size=jobs.height, max_size=jobs.height))
    grain = draw(st.sampled_from([None, 4.0, 16.0, 64.0]))
    jobs = jobs.with_columns(pl.Series("queue", picks, dtype=pl.String))
    if grain is not None:
        jobs = jobs.with_columns(((pl.col("submit_time") / grain).floor() * grain).alias("submit_time"))
    return jobs


#: The ``spec.preemption`` fields that let a ClusterQueue preempt (with a value other than ``Never``).
_PREEMPTING = ("withinClusterQueue", "reclaimWithinCohort")


def _kueue_policy(draw: st.DrawFn, text: str, name: str = "kueue", **change: Any) -> Policy:
    # A Kueue policy over manifests ``text``: a drawn scorer, periodic cycles or not, and ``change``.
    return Policy(
        name=name,
        queue_order=QueueOrder.priority,
        backfill=Backfill.skip,
        node_placement=draw(st.sampled_from(["best_fit", "first_fit", "worst_fit", "random"])),
        gpu_placement=draw(st.sampled_from(["best_fit", "first_fit"])),
        session_interval=draw(st.sampled_from([0.0, 0.0, 2.0])),
        queues=QueueModel.kueue,
        quotas=QuotaSource.manifests,
        manifests=_manifest_file(text),
        **change,
    )


@st.composite
def kueue_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """A small case with a Kueue quota tree over its queues and a Kueue policy (scorer, periodic or not)."""
    jobs, nodes = draw(cases(max_jobs=40))
    jobs = _in_queues(draw, jobs)
    # Half the cases preempt by the ClusterQueues' spec.preemption (classical, or fair sharing's strategies).
    preempting = draw(st.booleans())
    fair = draw(st.booleans())
    queues = tuple(sorted(set(jobs["queue"].to_list())))
    text = draw(kueue_manifests(queues, preemption=preempting))
    policy = _kueue_policy(
        draw,
        text,
        fair_sharing=fair,
        # A strategy is read (and may be chosen) only where some ClusterQueue may preempt.
        fair_sharing_strategies=draw(st.sampled_from(list(FairSharingStrategies)))
        if fair and any(f"{key}: {value}" in text for key in _PREEMPTING for value in ("Lower", "Any"))
        else FairSharingStrategies.both,
        graceful_termination=draw(st.sampled_from([0.0, 2.5, 30.0])),
        requeue=draw(st.sampled_from(list(Requeue))),
    )
    return jobs, nodes, policy


# Kueue's quota admission and classical cycle (tests/test_kueue_quota.py holds the hand-computed cases).
@draws(60)
@given(case=kueue_cases(), sample_interval=sample_intervals, seed=seeds)
def test_kueue_quotas_agree(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


def _gpu_quota(gpus: int, lend: int | None = None) -> str:
    # A ClusterQueue's or Cohort's spec lines: GPUs only, in flavor f, with a lendingLimit when given.
    return (
        '  resourceGroups:\n  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n    - name: f\n'
        f"      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: {gpus}\n"
        + ("" if lend is None else f"        lendingLimit: {lend}\n")
    )


@st.composite
def borrowing_level_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """Kueue's classical iterator in an uneven cohort tree, where a round's heads borrow at different levels.

    Root cohort org (its own GPU quota drawn) holds vc-c and cohort research (own quota drawn), which holds
    vc-a and vc-b, or vc-a and cohort deep holding vc-b: heights research 1 (or 2), org 2 (or 3), so a
    ClusterQueue in org borrows at a higher level than one borrowing within research, though both borrow
    from their parent. Jobs arrive in batches (several queues' heads meet in a round) with mixed priorities,
    sized so that two heads often fit alone but not together: the borrowing level, not the priority,
    decides which goes first. Half the cases preempt (``reclaimWithinCohort`` Any or LowerPriority, sometimes
    ``withinClusterQueue`` and ``borrowWithinCohort``): a preemptor reclaiming within its subtree meets its
    requeued victim, which must borrow from higher up.
    """
    deep = draw(st.booleans())
    cohort = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata:\n  name: {}\nspec:\n"
    docs = ["apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: f\n"]
    org = draw(st.sampled_from([0, 0, 2]))
    docs.append(cohort.format("org") + (_gpu_quota(org) if org else ""))
    research = draw(st.sampled_from([0, 2, 4]))
    research_quota = _gpu_quota(research) if research else ""
    docs.append(cohort.format("research") + "  parentName: org\n" + research_quota)
    inner = draw(st.sampled_from([0, 2])) if deep else 0
    if deep:
        docs.append(cohort.format("deep") + "  parentName: research\n" + (_gpu_quota(inner) if inner else ""))
    preempting = draw(st.booleans())
    names = ("vc-a", "vc-b", "vc-c")
    total = org + research + inner
    for name, parent in zip(names, ("research", "deep" if deep else "research", "org"), strict=True):
        gpus = draw(st.sampled_from([0, 2, 4, 8]))
        total += gpus
        lend = draw(st.sampled_from([None, None, 0, gpus // 2]))
        preempt = ""
        if preempting:
            within = draw(st.sampled_from(["Never", "LowerPriority"]))
            reclaim = draw(st.sampled_from(["Any", "Any", "LowerPriority"]))
            preempt = f"  preemption:\n    withinClusterQueue: {within}\n    reclaimWithinCohort: {reclaim}\n"
            if draw(st.booleans()):
                preempt += "    borrowWithinCohort:\n      policy: LowerPriority\n"
        docs.append(
            f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n"
            f"  cohort: {parent}\n{preempt}" + _gpu_quota(gpus, lend)
        )
    # Room for the whole tree's quota (8-GPU nodes): admissions fail on quota, seldom on placement.
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * max(1, -(-total // 8)))
    sizes = st.sampled_from([(1, 2000), (1, 4000), (2, 2000), (2, 4000), (1, 8000)])
    rows = []
    for i in range(draw(st.integers(4, 14))):
        pods, milli = draw(sizes)
        rows.append(
            {
                "job_id": i + 1,
                "submit_time": float(draw(st.sampled_from([0, 0, 10, 10, 40]))),
                "duration": float(draw(st.sampled_from([30, 80, 200]))),
                "num_pods": pods,
                "gpu_milli": milli,
                "queue": draw(st.sampled_from(names)),
                "priority": draw(st.integers(0, 3)),
            }
        )
    policy = _kueue_policy(
        draw,
        "---\n".join(docs),
        name="kueue-preempt" if preempting else "kueue",
        graceful_termination=draw(st.sampled_from([0.0, 5.0, 30.0])),
        requeue=draw(st.sampled_from(list(Requeue))),
    )
    return jobs_frame(rows), nodes, policy


# Kueue's borrowing levels in an uneven cohort tree (tests/test_kueue_quota.py and
# tests/test_kueue_preemption.py hold the hand-computed cases).
@draws(40)
@given(case=borrowing_level_cases(), sample_interval=sample_intervals, seed=seeds)
def test_kueue_borrowing_levels_agree(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


@st.composite
def kueue_flavor_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """:func:`kueue_cases` with several ResourceFlavors selecting the cluster's GPU models (or any node), each
    ClusterQueue drawing 1-3 of them for its GPUs in its own order and its flavor fungibility; a third of
    the time preemption (``spec.preemption`` drawn: the flavor assigner weighs preemption modes); fair
    sharing or not. Admission by quota half the time."""
    jobs, nodes = draw(cases(max_jobs=40))
    jobs = _in_queues(draw, jobs)
    models = tuple(sorted(set(nodes.filter(pl.col("num_gpus") > 0)["gpu_model"].drop_nulls().to_list())))
    queues = tuple(sorted(set(jobs["queue"].to_list())))
    preempting = draw(st.sampled_from([False, False, True]))
    fair = draw(st.booleans())
    text = draw(kueue_manifests(queues, preemption=preempting, models=models))
    policy = _kueue_policy(
        draw,
        text,
        kueue_admission=draw(st.sampled_from([KueueAdmission.placement, KueueAdmission.quota])),
        fair_sharing=fair,
        graceful_termination=draw(st.sampled_from([0.0, 2.5, 30.0])),
    )
    return jobs, nodes, policy


# Kueue's flavor assignment and node selection by flavor (tests/test_kueue_flavors.py: hand-computed).
@draws(40)
@given(case=kueue_flavor_cases(), sample_interval=sample_intervals, seed=seeds)
def test_kueue_flavors_agree(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


@st.composite
def pods_ready_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """:func:`kueue_cases` admitting by quota alone (kube-scheduler then places the admitted pods one by one),
    with or without waitForPodsReady: drawn timeouts (0 too), back-offs, backoffLimitCount and blockAdmission.
    The generated quotas often exceed the nodes, so admitted jobs hold parts of their pods."""
    jobs, nodes, policy = draw(kueue_cases())
    timeout = draw(st.sampled_from([None, 0.0, 5.0, 30.0, 200.0]))
    ready: dict[str, Any] = {}
    if timeout is not None:
        ready = {
            "pods_ready_timeout": timeout,
            "pods_ready_block_admission": draw(st.booleans()),
            "pods_ready_backoff_limit": draw(st.sampled_from([None, 0, 1, 3])),
            # (A timeout of 0 with no back-off is refused: it would requeue without end at one instant.)
            "pods_ready_backoff_base": draw(st.sampled_from([0.0, 10.0, 60.0] if timeout else [10.0, 60.0])),
            "pods_ready_backoff_max": draw(st.sampled_from([30.0, 3600.0])),
        }
    return jobs, nodes, replace(policy, kueue_admission=KueueAdmission.quota, **ready)


# Kueue's admission by quota and waitForPodsReady (tests/test_pods_ready.py holds the hand-computed cases).
@draws(40)
@given(case=pods_ready_cases(), sample_interval=sample_intervals, seed=seeds)
def test_pods_ready_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


@st.composite
def cohort_preemption_cases(
    draw: st.DrawFn, flavored: bool = False
) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """Kueue where preemption happens: three ClusterQueues in a cohort (weights drawn, some 0), one of
    which fills the cohort at 0 (borrowing the others' quota), then the others' jobs of mixed priority
    arrive and preempt, under fair sharing's strategies or (a third of the cases) the classical targets,
    sometimes with borrowWithinCohort; sometimes within a queue too. Half the cases are a cohort tree:
    each ClusterQueue in the root or in one of two inner cohorts (weights drawn under fair sharing),
    sometimes with lending limits and a root quota (Kueue's hierarchical candidates and advantage; fair
    sharing's walk of the tree and almost-LCA shares). ``flavored``: V100 and A100
    nodes, and each ClusterQueue's quota in one or two of three flavors (V100 nodes, A100 nodes, any node)
    with its flavor fungibility drawn: quotas and candidates per flavor, the flavor
    assigner's preemption modes, victims freeing their flavor's nodes."""
    fair = draw(st.integers(0, 2)) > 0
    nested = draw(st.booleans())
    names = ("vc-a", "vc-b", "vc-c")
    v100 = [{"gpu_model": "V100", "num_gpus": 8}] * draw(st.integers(1, 3))
    a100 = [{"gpu_model": "A100-80GB", "num_gpus": 8}] * (draw(st.integers(1, 2)) if flavored else 0)
    nodes = nodes_frame(v100 + a100)
    docs = ["apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: f\n"]
    flavor_names = ["f"]
    if flavored:
        for name, label in (("fv", "V100"), ("fa", "A100-80GB")):
            docs.append(
                f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: {name}\n"
                f"spec:\n  nodeLabels:\n    nvidia.com/gpu.product: {label}\n"
            )
        flavor_names = ["fv", "fa", "f"]
    if nested:
        root = draw(st.sampled_from([0, 0, 2, 4]))
        docs.append(
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata:\n  name: c\nspec:\n"
            + (
                '  resourceGroups:\n  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n    - name: f\n'
                f"      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: {root}\n"
                if root
                else ""
            )
        )
        for inner in ("x", "y"):
            # Under fair sharing the inner cohorts' weights scale their shares at the root's level.
            weight = draw(st.sampled_from([1, 1, 2, 0.5, 0]))
            weight = f"  fairSharing:\n    weight: {weight}\n" if fair else ""
            docs.append(
                f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata:\n  name: {inner}\n"
                f"spec:\n  parentName: c\n{weight}"
            )
    for name in names:
        cohort = draw(st.sampled_from(["c", "x", "x", "y"])) if nested else "c"
        gpus = draw(st.sampled_from([2, 4, 8]))
        lend = draw(st.sampled_from([None, None, 0, gpus // 2])) if nested else None
        within = draw(st.sampled_from(["Never", "LowerPriority"]))
        reclaim = draw(st.sampled_from(["Any", "Any", "LowerPriority"]))
        borrow = ""
        if not fair and draw(st.booleans()):
            borrow = "    borrowWithinCohort:\n      policy: LowerPriority\n"
        docs.append(
            f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n"
            f"  cohort: {cohort}\n  preemption:\n    withinClusterQueue: {within}\n"
            f"    reclaimWithinCohort: {reclaim}\n{borrow}"
            f"  fairSharing:\n    weight: {draw(st.sampled_from([1, 1, 2, 0.5, 0]))}\n"
            '  resourceGroups:\n  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n    - name: f\n'
            "      resources:\n      - name: nvidia.com/gpu\n"
            f"        nominalQuota: {gpus}\n" + ("" if lend is None else f"        lendingLimit: {lend}\n")
        )
        if flavored:
            # One or two flavors (Kueue weighs each one's preemption mode), with the fungibility drawn.
            chosen = draw(st.lists(st.sampled_from(flavor_names), min_size=1, max_size=2, unique=True))
            head = docs[-1][: docs[-1].index("    - name: f\n")]
            quota = docs[-1][docs[-1].index("      resources:") :]
            head = head.replace("  fairSharing:", draw(flavor_fungibility()) + "  fairSharing:")
            docs[-1] = head + "".join(f"    - name: {flavor}\n{quota}" for flavor in chosen)
    hog = draw(st.sampled_from(names))
    if flavored and draw(st.booleans()):
        # The hog does not preempt and holds quota in two flavors: its jobs, the victims, in either.
        i = 1 + 2 + names.index(hog) + (3 if nested else 0)
        quota = docs[i][docs[i].index("      resources:") :]
        if "\n    - name:" in quota:  # the CQ lists two flavors: keep the first one's quota
            quota = quota[: quota.index("\n    - name:") + 1]
        head = docs[i][: docs[i].index("  preemption:")]
        groups = '  resourceGroups:\n  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n'
        docs[i] = f"{head}{groups}    - name: fv\n{quota}    - name: fa\n{quota}"
    rows = []
    sizes = st.sampled_from([(1, 1000), (1, 2000), (1, 4000), (2, 2000), (1, 500)])
    for _ in range(draw(st.integers(3, 10))):
        pods, milli = draw(sizes)
        rows.append((0.0, hog, pods, milli))
    for _ in range(draw(st.integers(2, 10))):
        pods, milli = draw(sizes)
        rows.append((float(draw(st.integers(1, 60))), draw(st.sampled_from(names)), pods, milli))
    jobs = jobs_frame(
        [
            {
                "job_id": i + 1,
                "submit_time": t,
                "duration": float(draw(st.sampled_from([30, 80, 200]))),
                "num_pods": pods,
                "gpu_milli": milli,
                "queue": queue,
                "priority": draw(st.integers(0, 2)),
                "preemptible": draw(st.sampled_from([True, True, True, False])),
            }
            for i, (t, queue, pods, milli) in enumerate(rows)
        ]
    )
    policy = Policy(
        name="kueue-fair-preempt" if fair else "kueue-preempt",
        queue_order=QueueOrder.priority,
        backfill=Backfill.skip,
        node_placement=draw(st.sampled_from(["best_fit", "first_fit"])),
        gpu_placement="best_fit",
        session_interval=draw(st.sampled_from([0.0, 0.0, 2.0])),
        queues=QueueModel.kueue,
        quotas=QuotaSource.manifests,
        manifests=_manifest_file("---\n".join(docs)),
        fair_sharing=fair,
        fair_sharing_strategies=draw(st.sampled_from(list(FairSharingStrategies)))
        if fair
        else FairSharingStrategies.both,
        graceful_termination=draw(st.sampled_from([0.0, 5.0])),
        requeue=draw(st.sampled_from(list(Requeue))),
    )
    return jobs, nodes, policy


# Kueue's preemption in a cohort, fair sharing's and classical (tests/test_kueue_fair_preemption.py and
# tests/test_kueue_preemption.py hold the hand-computed cases).
@draws(40)
@given(case=cohort_preemption_cases(), sample_interval=sample_intervals, seed=seeds)
def test_kueue_cohort_preemption_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


# Kueue's preemption (classical and fair sharing's) with quotas in several flavors.
@draws(25)
@given(case=cohort_preemption_cases(flavored=True), sample_interval=sample_intervals, seed=seeds)
def test_kueue_flavor_preemption_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


@st.composite
def quota_admitted_preemption_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """:func:`cohort_preemption_cases` (contended cohorts that evict often) admitting by quota alone, with or
    without waitForPodsReady: victims may be admitted jobs whose pods are not all placed."""
    jobs, nodes, policy = draw(cohort_preemption_cases())
    timeout = draw(st.sampled_from([None, 5.0, 60.0]))
    return jobs, nodes, replace(policy, kueue_admission=KueueAdmission.quota, pods_ready_timeout=timeout)


@draws(30)
@given(case=quota_admitted_preemption_cases(), sample_interval=sample_intervals, seed=seeds)
def test_preemption_of_quota_admitted_jobs_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


@st.composite
def volcano_manifests(draw: st.DrawFn, queues: tuple[str, ...]) -> str:
    """Volcano ``Queue`` manifests: weights, sometimes a GPU (and CPU) capability, a GPU guarantee, a
    priority; a queue with no jobs sometimes, whose guarantee still reserves capacity."""
    docs = []
    for name in (*queues, *(["idle"] if draw(st.booleans()) else [])):
        spec = [f"  weight: {draw(st.integers(1, 5))}"]
        most = 6
        if draw(st.integers(0, 3)) == 0:
            most = draw(st.integers(1, 12))
            cap = [f"    nvidia.com/gpu: {most}"]
            if draw(st.booleans()):
                cap.append(f'    cpu: "{draw(st.integers(1, 64))}"')
            spec.append("  capability:\n" + "\n".join(cap))
        if draw(st.integers(0, 3)) == 0:
            # Volcano's webhook refuses a guarantee above the capability.
            given = draw(st.integers(1, min(6, most)))
            spec.append(f"  guarantee:\n    resource:\n      nvidia.com/gpu: {given}")
        if draw(st.integers(0, 3)) == 0:
            spec.append(f"  priority: {draw(st.integers(0, 2))}")
        if draw(st.integers(0, 4)) == 0:
            spec.append("  reclaimable: false")
        docs.append(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
            f"metadata:\n  name: {name}\nspec:\n" + "\n".join(spec) + "\n"
        )
    return "---\n".join(docs)


@st.composite
def volcano_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """A small case under Volcano's queues (weights, capability, guarantee, priority, overcommit factor)."""
    jobs, nodes = draw(cases(max_jobs=40))
    jobs = _in_queues(draw, jobs)
    return jobs, nodes, _volcano_policy(draw, jobs, None)


def _volcano_policy(draw: st.DrawFn, jobs: pl.DataFrame, actions: str | None) -> Policy:
    queues = tuple(sorted(set(jobs["queue"].to_list())))
    return Policy(
        name="volcano",
        queue_order=QueueOrder.priority,
        backfill=Backfill.skip,
        node_placement=draw(st.sampled_from(["best_fit", "first_fit", "worst_fit", "random"])),
        gpu_placement=draw(st.sampled_from(["best_fit", "first_fit"])),
        session_interval=draw(st.sampled_from([0.0, 0.0, 2.0])),
        queues=QueueModel.volcano,
        quotas=QuotaSource.manifests,
        manifests=_manifest_file(draw(volcano_manifests(queues))),
        overcommit_factor=draw(
            st.sampled_from([1.0, 1.2, 1.2, 2.0] if actions is None else [1.2, 2.0, 4.0, 4.0])
        ),
        actions=actions,
        graceful_termination=draw(st.sampled_from([0.0, 30.0])),
    )


@st.composite
def volcano_reclaim_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """A small contended case under Volcano's queues with the reclaim action: the first queues' jobs come
    first and fill the cluster, the other queues' later arrivals cut their deserved shares. Whole-GPU pods,
    sometimes CPU requests, priorities, non-preemptible jobs, ``preemptionPolicy: Never``, checkpoints."""
    per_node = draw(st.sampled_from([4, 8]))
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": per_node}] * draw(st.integers(1, 3)))
    names = ("vc-a", "vc-b", "vc-c")[: draw(st.integers(2, 3))]
    early = names[: draw(st.integers(1, len(names) - 1))]
    rows = []
    for i in range(draw(st.integers(3, 24))):
        queue = draw(st.sampled_from((early[0], *names)))
        first = queue in early
        rows.append(
            {
                "job_id": i + 1,
                "submit_time": float(draw(st.integers(0, 3) if first else st.integers(2, 60))),
                "duration": float(draw(st.sampled_from([100, 300, 1000] if first else [20, 50, 100, 300]))),
                "num_pods": draw(st.sampled_from([1, 1, 2, 3, 4])),
                "gpu_milli": 1000 * draw(st.sampled_from([1, 1, 2, per_node])),
                "cpu_milli": draw(st.sampled_from([0, 0, 0, 2000, 8000])),
                "queue": queue,
                "priority": draw(st.sampled_from([0, 0, 1, 2])),
                "preemptible": draw(st.sampled_from([True, True, True, True, False])),
                "checkpoint_interval": draw(st.sampled_from([0.0, 10.0, math.inf])),
                "preemption_policy": "Never" if draw(st.integers(0, 7)) == 0 else "PreemptLowerPriority",
            }
        )
    jobs = jobs_frame(rows)
    return jobs, nodes, _volcano_policy(draw, jobs, "enqueue, allocate, reclaim, backfill")


# Volcano's reclaim action (tests/test_volcano_reclaim.py holds the hand-computed cases).
@draws(60)
@given(case=volcano_reclaim_cases(), sample_interval=sample_intervals, seed=seeds)
def test_volcano_reclaim_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


def _contended(
    draw: st.DrawFn, early_priorities: list[int], late_priorities: list[int]
) -> tuple[pl.DataFrame, list[str], list[dict[str, object]]]:
    """1-4 nodes of 4 or 8 GPUs, 1-3 queues, and 3-24 jobs: early ones often alike (victim-order ties), long
    and of several small pods (a victim's pods on one node), later ones of mixed sizes; whole-GPU pods,
    sometimes CPU requests, checkpoints; priorities drawn from the lists given."""
    per_node = draw(st.sampled_from([4, 8]))
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": per_node}] * draw(st.integers(1, 4)))
    names = ["vc-a", "vc-b", "vc-c"][: draw(st.integers(1, 3))]
    rows: list[dict[str, object]] = []
    for i in range(draw(st.integers(3, 24))):
        early = draw(st.booleans())
        rows.append(
            {
                "job_id": i + 1,
                "submit_time": float(draw(st.sampled_from([0, 0, 0, 1, 3]) if early else st.integers(2, 60))),
                "duration": float(draw(st.sampled_from([300, 1000] if early else [20, 50, 100, 300]))),
                "num_pods": draw(st.sampled_from([1, 2, 2, 4] if early else [1, 1, 1, 2, 3])),
                "gpu_milli": 1000 * draw(st.sampled_from([1, 2, 3] if early else [1, 2, 3, 5, per_node])),
                "cpu_milli": draw(st.sampled_from([0, 0, 0, 2000, 8000])),
                "queue": draw(st.sampled_from(names)),
                "priority": draw(st.sampled_from(early_priorities if early else late_priorities)),
                "checkpoint_interval": draw(st.sampled_from([0.0, 10.0, math.inf])),
            }
        )
    return nodes, names, rows


@st.composite
def volcano_preempt_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """A small contended case under Volcano's queues with the preempt action (and sometimes reclaim after
    it): one to three queues whose early, long jobs fill (and fragment) the cluster, later jobs of mixed
    priorities and sizes; the preemptable plugins Volcano's built-in set, the Helm chart's, or any subset.
    Whole-GPU pods, sometimes CPU requests, non-preemptible jobs, ``preemptionPolicy: Never``, checkpoints."""
    nodes, _, rows = _contended(draw, early_priorities=[0, 0, 1], late_priorities=[0, 1, 2, 10, 10])
    for row in rows:
        row["preemptible"] = draw(st.sampled_from([True, True, True, True, False]))
        row["preemption_policy"] = "Never" if draw(st.integers(0, 7)) == 0 else "PreemptLowerPriority"
    jobs = jobs_frame(rows)
    actions = draw(
        st.sampled_from(
            ["enqueue, allocate, preempt, backfill", "enqueue, allocate, preempt, reclaim, backfill"]
        )
    )
    plugins = draw(
        st.one_of(
            st.sampled_from([None, "priority, conformance"]),
            st.lists(st.sampled_from(["priority", "gang", "conformance", "drf"]), unique=True).map(", ".join),
        )
    )
    return jobs, nodes, replace(_volcano_policy(draw, jobs, actions), preemptable_plugins=plugins)


# Volcano's preempt action (tests/test_volcano_preempt.py holds the hand-computed cases).
@draws(50)
@given(case=volcano_preempt_cases(), sample_interval=sample_intervals, seed=seeds)
def test_volcano_preempt_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


# Volcano's proportion, enqueue and allocate (tests/test_volcano_queues.py holds the hand-computed cases).
@draws(60)
@given(case=volcano_cases(), sample_interval=sample_intervals, seed=seeds)
def test_volcano_queues_agree(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


@st.composite
def kai_manifests(draw: st.DrawFn, queues: tuple[str, ...], min_runtime: bool = False) -> str:
    """KAI ``Queue`` manifests: GPU quota, overQuotaWeight and limit (sometimes -1), a priority; the leaf
    queues top-level or under one or two parents (with quotas and limits of their own), sometimes an idle
    leaf; CPU sometimes bounded too (a quota, a weight, a limit). ``min_runtime``: each queue sometimes sets
    ``preemptMinRuntime`` and ``reclaimMinRuntime`` (the minruntime plugin)."""

    def amounts(most: int) -> str:
        quota = draw(st.sampled_from([-1, 0, *range(1, most + 1)]))
        weight = draw(st.sampled_from([0, 1, 1, 2, 3]))
        low = max(quota, 0)
        limit = draw(st.sampled_from([-1, -1, *range(max(low, 1), most + 4)]))
        return f"{{quota: {quota}, overQuotaWeight: {weight}, limit: {limit}}}"

    unlimited = "{quota: -1, overQuotaWeight: 1, limit: -1}"
    leaves = (*queues, *(["idle"] if draw(st.booleans()) else []))
    parents = ("dept-x", "dept-y")[: draw(st.integers(0, 2))]
    docs = []
    for name in (*parents, *leaves):
        spec = []
        if name in leaves and parents:
            spec.append(f"  parentQueue: {draw(st.sampled_from(parents))}")
        if draw(st.integers(0, 2)) == 0:
            spec.append(f"  priority: {draw(st.sampled_from([50, 100, 200]))}")
        if min_runtime:
            for key in ("preemptMinRuntime", "reclaimMinRuntime"):
                value = draw(st.sampled_from([None, None, "0s", "5s", "30s", "1m40s"]))
                if value is not None:
                    spec.append(f"  {key}: {value}")
        # CPU sometimes with a quota of its own and sometimes no over-quota weight: the division, the capacity
        # policy (non-preemptible use within quota) and the reclaim validator see CPU bounds too.
        cpu_quota = draw(st.sampled_from([-1, -1, -1, 0, 2000, 8000]))
        cpu_weight = draw(st.sampled_from([0, 1, 1]))
        cpu_limit = draw(st.sampled_from([-1, -1, 8000, 64000]))
        cpu = f"{{quota: {cpu_quota}, overQuotaWeight: {cpu_weight}, limit: {cpu_limit}}}"
        spec.append(f"  resources:\n    gpu: {amounts(12)}\n    cpu: {cpu}\n    memory: {unlimited}")
        docs.append(
            f"apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata:\n  name: {name}\nspec:\n"
            + "\n".join(spec)
            + "\n"
        )
    order = draw(st.permutations(range(len(docs))))
    return "---\n".join(docs[i] for i in order)


@st.composite
def kai_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """A small case under KAI's queues (quota, overQuotaWeight, limit, priority, a parent level), jobs of
    drawn priorities (100 and above are non-preemptible)."""
    jobs, nodes = draw(cases(max_jobs=40))
    jobs = _in_queues(draw, jobs)
    priorities = draw(
        st.lists(st.sampled_from([0, 50, 100, 125]), min_size=jobs.height, max_size=jobs.height)
    )
    jobs = jobs.with_columns(pl.Series("priority", priorities, dtype=pl.Int32))
    queues = tuple(sorted(set(jobs["queue"].to_list())))
    policy = Policy(
        name="kai",
        queue_order=QueueOrder.priority,
        backfill=Backfill.skip,
        node_placement=draw(st.sampled_from(["best_fit", "first_fit", "worst_fit", "random", "kai_binpack"])),
        gpu_placement=draw(st.sampled_from(["best_fit", "first_fit"])),
        session_interval=draw(st.sampled_from([0.0, 0.0, 2.0])),
        queues=QueueModel.kai,
        quotas=QuotaSource.manifests,
        manifests=_manifest_file(draw(kai_manifests(queues))),
    )
    return jobs, nodes, policy


# KAI's division, queue order, capacity policy and allocate (tests/test_kai_queues.py holds the hand-computed
# cases).
@draws(60)
@given(case=kai_cases(), sample_interval=sample_intervals, seed=seeds)
def test_kai_queues_agree(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


@st.composite
def kai_evict_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """A small contended case under KAI's queues with the reclaim and/or preempt action: early, long jobs of
    several small pods fill (and fragment) the cluster, later jobs of mixed priorities (100 and above are
    non-preemptible) and sizes; the queues as :func:`kai_manifests` draws them (quotas, weights, limits,
    priorities, parent levels; half the time min-runtimes). Whole-GPU pods (the actions' scope), sometimes
    CPU requests."""
    nodes, names, rows = _contended(draw, early_priorities=[0, 0, 50], late_priorities=[0, 50, 50, 100, 125])
    jobs = jobs_frame(rows)
    policy = Policy(
        name="kai-reclaim",
        queue_order=QueueOrder.priority,
        backfill=Backfill.skip,
        node_placement=draw(st.sampled_from(["best_fit", "first_fit", "kai_binpack"])),
        gpu_placement=draw(st.sampled_from(["best_fit", "first_fit"])),
        session_interval=draw(st.sampled_from([0.0, 0.0, 2.0])),
        graceful_termination=draw(st.sampled_from([0.0, 0.0, 30.0])),
        queues=QueueModel.kai,
        quotas=QuotaSource.manifests,
        manifests=_manifest_file(draw(kai_manifests(tuple(names), min_runtime=draw(st.booleans())))),
        actions=draw(
            st.sampled_from(["allocate, reclaim", "allocate, preempt", "allocate, reclaim, preempt"])
        ),
    )
    return jobs, nodes, policy


# KAI's reclaim and preempt actions (tests/test_kai_evict.py holds the hand-computed cases).
@draws(40)
@given(case=kai_evict_cases(), sample_interval=sample_intervals, seed=seeds)
def test_kai_evict_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)


@st.composite
def reclaim_idle_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """A small case under ReclaimIdleResource: two or three PriorityClasses with drawn annotations (short
    tolerations and windows, thresholds, raised minimum preemptable priorities) and drawn per-job usage."""
    jobs, nodes = draw(cases(max_jobs=40))
    names = ("a", "b", "c")[: draw(st.integers(2, 3))]
    values = {name: draw(st.sampled_from([0, 10, 10, 20])) for name in names}
    policies_by_class = {
        name: ReclaimIdlePolicy(
            minimum_preemptable_priority=draw(st.sampled_from([None, None, 15, 1000])),
            toleration_seconds=draw(st.sampled_from([0, 0, 3, 20, -1])),
            cpu_idle_seconds=draw(st.sampled_from([0, 2, 5])),
            gpu_idle_seconds=draw(st.sampled_from([0, 2, 5, 10])),
            cpu_idle_usage_threshold=draw(st.sampled_from([0.0, 0.0, 1.0])),
            gpu_idle_usage_threshold=draw(st.sampled_from([0.0, 0.0, 0.3])),
        )
        for name in names
    }
    n = jobs.height
    picks = [draw(st.sampled_from(names)) for _ in range(n)]
    jobs = jobs.with_columns(
        priority_class=pl.Series(picks, dtype=pl.String),
        priority=pl.Series([values[p] for p in picks], dtype=pl.Int32),
        gpu_util=pl.Series([draw(st.sampled_from([0.0, 0.5, 1.0])) for _ in range(n)]),
        cpu_util=pl.Series([draw(st.sampled_from([0.0, 0.0, 2.0])) for _ in range(n)]),
        idle_after=pl.Series([draw(st.sampled_from([math.inf, 0.0, 1.5, 4.0, 9.0])) for _ in range(n)]),
    ).with_columns(policy_columns(policies_by_class, values))
    base = draw(policies())
    if base.backfill is Backfill.easy:
        base = replace(base, backfill=Backfill.skip, backfill_depth=0)
    policy = replace(
        base,
        name="random+reclaim-idle",
        preemption=Preemption.reclaim_idle,
        queue_order=QueueOrder.priority,
    )
    return jobs, nodes, policy


# ReclaimIdleResource's victims and wakes (tests/test_reclaim_idle.py holds the hand-computed cases).
@draws(60)
@given(
    case=reclaim_idle_cases(),
    sample_interval=sample_intervals,
    seed=seeds,
    chunk=st.sampled_from([None, 3.0]),
)
def test_reclaim_idle_agrees(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int, chunk: float | None
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval, chunk_seconds=chunk)


def test_an_easy_reservation_is_recomputed_when_a_backfilled_job_outlives_its_estimate() -> None:
    # Found by `make soak` (issue 43, item 6: a zero-duration job started at 182 in the engine, 181.5 in the
    # reference). Two 8-GPU servers. A holds 6 GPUs of node 0 until 100; H (2 x 8 GPUs) is blocked: shadow
    # time 100. B (2 x 2 GPUs, 95 s) is backfilled at 2 because its estimate ends by 100 (at 97), but it
    # spans both servers, runs at a spread rate below 1 and ends after 100. At 100 H still does not fit (B
    # holds 2 GPUs of each node). The engine kept the reservation whose shadow time had passed, so C (1 GPU,
    # 0 s) at 101 was tested as a job outliving the reservation and refused until H had run; recomputed, as
    # the reference does every cycle, the shadow time is B's end and C starts on arrival.
    jobs = jobs_frame(
        [
            {"job_id": 1, "submit_time": 0.0, "duration": 100.0, "num_pods": 1, "gpu_milli": 6000},
            {"job_id": 2, "submit_time": 1.0, "duration": 10.0, "num_pods": 2, "gpu_milli": 8000},
            {"job_id": 3, "submit_time": 2.0, "duration": 95.0, "num_pods": 2, "gpu_milli": 2000},
            {"job_id": 4, "submit_time": 101.0, "duration": 0.0, "num_pods": 1, "gpu_milli": 1000},
        ]
    )
    nodes = nodes_frame([{"gpu_model": "A100-80GB", "num_gpus": 8}] * 2)
    # Spanning two NVLink domains halves a job's speed (Blox's placement penalty; "What spreading costs").
    policy = replace(PRESETS["easy-backfill"], spread_rate_nvlink=0.5)
    replay = assert_agree(jobs, nodes, policy, sample_interval=50.0)
    assert replay is not None
    starts = dict(replay.jobs.select("job_id", "start_time").iter_rows())
    finishes = dict(replay.jobs.select("job_id", "finish_time").iter_rows())
    assert finishes[3] == 2.0 + 95.0 / 0.5
    assert starts == {1: 0.0, 2: finishes[3], 3: 2.0, 4: 101.0}  # H waits for B, not for its shadow time


@st.composite
def queue_tas_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, Policy]:
    """A queue model with its own system's topology-aware placement and, where modelled, its evictions.

    Kueue quotas (over one or several flavors, half of them preempting by ``spec.preemption``, fair sharing
    or classical) with Kueue TAS (a drawn profile); Volcano queues with HyperNode placement and its preempt
    and reclaim actions (each drawn); KAI queues with KAI's topology plugin (allocate alone: KAI's reclaim and
    preempt with topology are refused). Small topologies of known CPU and memory, early long jobs that
    fragment the racks, later jobs of mixed priorities and sizes, each with that system's topology request
    (tests/test_queues_tas.py holds the hand-computed cases).
    """
    system = draw(st.sampled_from([QueueModel.kueue, QueueModel.volcano, QueueModel.kai]))
    nodes = nodes_frame(draw(tas_nodes(known=True)))
    requests = {
        QueueModel.kueue: TAS_REQUESTS,
        QueueModel.volcano: VOLCANO_TAS_REQUESTS,
        QueueModel.kai: KAI_TAS_REQUESTS,
    }
    rows = []
    for job_id in range(draw(st.integers(2, 14))):
        mode, level = draw(requests[system])
        early = job_id < 3
        rows.append(
            {
                "job_id": job_id,
                "submit_time": float(draw(st.integers(0, 2) if early else st.integers(0, 12))),
                "duration": float(draw(st.sampled_from([40, 80] if early else [5, 10, 20, 40]))),
                "num_pods": draw(st.integers(1, 4)),
                "gpu_milli": draw(st.sampled_from([1000, 1000, 1000, 2000, 0])),
                "cpu_milli": draw(st.sampled_from([0, 0, 2000])),
                "mem_mib": 0,
                "priority": draw(st.sampled_from([0, 0] if early else [0, 1, 5, 10])),
                "topology_mode": mode,
                "topology_level": level,
            }
        )
    jobs = _in_queues(draw, jobs_frame(rows))
    queues = tuple(sorted(set(jobs["queue"].to_list())))
    scorer = draw(st.sampled_from(["best_fit", "first_fit", "worst_fit"]))
    if system is QueueModel.kueue:
        models = tuple(sorted(set(nodes.filter(pl.col("num_gpus") > 0)["gpu_model"].drop_nulls().to_list())))
        flavored = draw(st.booleans())
        text = draw(
            kueue_manifests(queues, preemption=draw(st.booleans()), models=models if flavored else None)
        )
        policy = _kueue_policy(
            draw,
            text,
            name="kueue-tas",
            topology_aware=TopologyAware.kueue,
            tas_profile=draw(st.sampled_from(list(TasProfile))),
            fair_sharing=draw(st.booleans()),
            graceful_termination=draw(st.sampled_from([0.0, 2.5, 30.0])),
        )
    elif system is QueueModel.volcano:
        actions = draw(
            st.sampled_from(
                [
                    None,
                    "enqueue, allocate, preempt, backfill",
                    "enqueue, allocate, reclaim, backfill",
                    "enqueue, allocate, preempt, reclaim, backfill",
                ]
            )
        )
        policy = _volcano_policy(draw, jobs, actions)
        plugins = (
            draw(st.sampled_from([None, "priority, conformance"]))
            if actions and "preempt" in actions
            else None
        )
        policy = replace(policy, topology_aware=TopologyAware.volcano, preemptable_plugins=plugins)
    else:
        policy = Policy(
            name="kai",
            queue_order=QueueOrder.priority,
            backfill=Backfill.skip,
            node_placement=scorer,
            gpu_placement=draw(st.sampled_from(["best_fit", "first_fit"])),
            session_interval=draw(st.sampled_from([0.0, 0.0, 2.0])),
            queues=QueueModel.kai,
            quotas=QuotaSource.manifests,
            manifests=_manifest_file(draw(kai_manifests(queues))),
            topology_aware=TopologyAware.kai,
        )
    # KAI's and Volcano's topology plugins rank nodes by score: not the random scorer.
    return jobs, nodes, replace(policy, node_placement=scorer)


# Each queue model with its own system's topology-aware placement (and its evictions where modelled).
@draws(60)
@given(case=queue_tas_cases(), sample_interval=sample_intervals, seed=seeds)
def test_queue_models_with_topology_agree(
    case: tuple[pl.DataFrame, pl.DataFrame, Policy], sample_interval: float, seed: int
) -> None:
    jobs, nodes, policy = case
    assert_agree(jobs, nodes, policy, seed=seed, sample_interval=sample_interval)
