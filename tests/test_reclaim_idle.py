"""Idle-resource reclaim (``preemption: reclaim_idle``): hand-computed cases on the engine and its reference.

scheduler-plugins' ReclaimIdleResource (docs/systems.md, "scheduler-plugins"; docs/engine/preemption.md
"Idle-resource reclaim"). One node of 1 GPU unless said; the grace period is 30 s, so a preemptor that evicts
at t starts at
t + 30. Jobs "nb" (a notebook) hold the GPU first; "train" jobs arrive later and wait for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl
import pytest
from tests.reference.simulator import IdleUse, eligible_from, mean_usage
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_quota import both, starts

from gpureplay.errors import InputError
from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import Backfill, GangMode, Policy, Preemption, QueueOrder
from gpureplay.workload.priorities import PriorityClass, assign_priority_classes
from gpureplay.workload.utilization import (
    ReclaimIdlePolicy,
    Utilization,
    assign_utilization,
    check_usage,
    check_utilization,
    policy_columns,
)

RECLAIM = Policy(
    name="reclaim-idle",
    queue_order=QueueOrder.priority,
    gang=GangMode.gang,
    node_placement="best_fit",
    gpu_placement="best_fit",
    backfill=Backfill.skip,
    preemption=Preemption.reclaim_idle,
    graceful_termination=30.0,
)

#: The notebook class of the scenarios: kept 600 s after it is scheduled, idle over 300 s windows.
NOTEBOOK = ReclaimIdlePolicy(toleration_seconds=600, gpu_idle_seconds=300, cpu_idle_seconds=300)


def jobs(
    rows: Sequence[Mapping[str, Any]], policies: Mapping[str, tuple[int, ReclaimIdlePolicy]]
) -> pl.DataFrame:
    """Rows with ``cls`` (a key of ``policies``: value, annotations), ``gpu``, ``cpu``, ``after`` usage."""
    frame = jobs_frame([{**r, "priority": policies[r["cls"]][0]} for r in rows])
    frame = frame.with_columns(
        priority_class=pl.Series([r["cls"] for r in rows], dtype=pl.String),
        gpu_util=pl.Series([float(r.get("gpu", 1.0)) for r in rows]),
        cpu_util=pl.Series([float(r.get("cpu", 0.0)) for r in rows]),
        idle_after=pl.Series([float(r.get("after", math.inf)) for r in rows]),
    )
    return frame.with_columns(
        policy_columns({k: v[1] for k, v in policies.items()}, {k: v[0] for k, v in policies.items()})
    )


def row(job_id: int, t: float, cls: str, duration: float = 10_000.0, **use: float) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "submit_time": t,
        "duration": duration,
        "num_pods": 1,
        "gpu_milli": 1000,
        "cls": cls,
        **use,
    }


ONE_GPU = nodes_frame([{"gpu_model": "V100", "num_gpus": 1}])


def evictions(replay: Any) -> dict[int, int]:
    return dict(replay.jobs.select("job_id", "preemptions").iter_rows())


def test_an_idle_job_is_reclaimed_only_after_its_toleration_window() -> None:
    """The notebook (job 1) starts at 0 and goes idle at 100; training (job 2, same priority) arrives at 50.

    eligible = max(0 + max(300, 300, 600), quiet_gpu = 0 + 100 + 300 - 0 = 400, quiet_cpu = -inf (no CPU
    used)) = 600: job 2 evicts job 1 at 600 and starts at 630 (30 s grace); job 1 runs again after job 2.
    """
    frame = jobs(
        [row(1, 0.0, "nb", after=100.0), row(2, 50.0, "train", 1000.0)],
        {"nb": (100, NOTEBOOK), "train": (100, NOTEBOOK)},
    )
    for replay in both(frame, ONE_GPU, RECLAIM):
        assert starts(replay) == {1: 0.0, 2: 630.0}
        assert evictions(replay) == {1: 1, 2: 0}


def test_the_idle_window_not_the_toleration_can_set_the_time() -> None:
    """A notebook idle from 500 with a 300 s window: quiet from 500 + 300 = 800 > 600: evicted at 800."""
    frame = jobs(
        [row(1, 0.0, "nb", after=500.0), row(2, 50.0, "train", 1000.0)],
        {"nb": (100, NOTEBOOK), "train": (100, NOTEBOOK)},
    )
    for replay in both(frame, ONE_GPU, RECLAIM):
        assert starts(replay) == {1: 0.0, 2: 830.0}


def test_a_usage_threshold_lets_a_partly_busy_window_through() -> None:
    """GPU at 0.8 until 500, threshold 0.2 over 300 s: 0.8 x (800 - now) / 300 <= 0.2 from now = 725."""
    policy = replace(NOTEBOOK, gpu_idle_usage_threshold=0.2)
    frame = jobs(
        [row(1, 0.0, "nb", gpu=0.8, after=500.0), row(2, 50.0, "train", 1000.0)],
        {"nb": (100, policy), "train": (100, policy)},
    )
    for replay in both(frame, ONE_GPU, RECLAIM):
        assert starts(replay) == {1: 0.0, 2: 755.0}


def test_a_busy_job_is_never_reclaimed_at_equal_priority() -> None:
    """A notebook that never idles keeps the GPU: job 2 waits for it to end at 10,000."""
    frame = jobs(
        [row(1, 0.0, "nb"), row(2, 50.0, "train", 1000.0)], {"nb": (100, NOTEBOOK), "train": (100, NOTEBOOK)}
    )
    for replay in both(frame, ONE_GPU, RECLAIM):
        assert starts(replay) == {1: 0.0, 2: 10_000.0}
        assert evictions(replay) == {1: 0, 2: 0}


def test_cpu_use_keeps_an_unused_gpu() -> None:
    """Rule 7 asks both resources: a job that never touches its GPU (level 0) but keeps 2 cores busy is
    exempt for good under a CPU threshold of 0; with a threshold of 4 cores it is reclaimed at 600."""
    for threshold, start in ((0.0, 10_000.0), (4.0, 630.0)):
        policy = replace(NOTEBOOK, cpu_idle_usage_threshold=threshold)
        frame = jobs(
            [row(1, 0.0, "nb", gpu=0.0, cpu=2.0), row(2, 50.0, "train", 1000.0)],
            {"nb": (100, policy), "train": (100, NOTEBOOK)},
        )
        for replay in both(frame, ONE_GPU, RECLAIM):
            assert starts(replay) == {1: 0.0, 2: start}


def test_a_negative_toleration_keeps_the_job_for_good() -> None:
    forever = replace(NOTEBOOK, toleration_seconds=-1)
    frame = jobs(
        [row(1, 0.0, "nb", after=0.0), row(2, 50.0, "train", 1000.0)],
        {"nb": (100, forever), "train": (100, NOTEBOOK)},
    )
    for replay in both(frame, ONE_GPU, RECLAIM):
        assert starts(replay) == {1: 0.0, 2: 10_000.0}


def test_a_preemptor_at_the_minimum_preemptable_priority_evicts_at_once() -> None:
    """Rule 3: a preemptor of priority >= minimum-preemptable-priority (default value + 1) ignores usage."""
    frame = jobs(
        [row(1, 0.0, "nb"), row(2, 50.0, "urgent", 1000.0)],
        {"nb": (100, NOTEBOOK), "urgent": (101, NOTEBOOK)},
    )
    for replay in both(frame, ONE_GPU, RECLAIM):
        assert starts(replay) == {1: 0.0, 2: 80.0}
    raised = replace(NOTEBOOK, minimum_preemptable_priority=1000)
    frame = jobs(
        [row(1, 0.0, "nb", after=100.0), row(2, 50.0, "urgent", 1000.0)],
        {"nb": (100, raised), "urgent": (101, NOTEBOOK)},
    )
    for replay in both(frame, ONE_GPU, RECLAIM):
        assert starts(replay) == {1: 0.0, 2: 630.0}  # below 1000: only once idle past its toleration


def test_windows_of_zero_read_no_usage() -> None:
    """The plugin's query over a 0 s window reads 0: with default annotations a job is reclaimable at once."""
    frame = jobs(
        [row(1, 0.0, "nb"), row(2, 50.0, "train", 1000.0)],
        {"nb": (100, ReclaimIdlePolicy()), "train": (100, NOTEBOOK)},
    )
    for replay in both(frame, ONE_GPU, RECLAIM):
        assert starts(replay) == {1: 0.0, 2: 80.0}


def test_priority_preemption_takes_no_equal_priority_victim() -> None:
    """The same idle notebook under plain DefaultPreemption: job 2 (equal priority) waits for its end."""
    frame = jobs(
        [row(1, 0.0, "nb", after=100.0), row(2, 50.0, "train", 1000.0)],
        {"nb": (100, NOTEBOOK), "train": (100, NOTEBOOK)},
    )
    for replay in both(frame, ONE_GPU, replace(RECLAIM, preemption=Preemption.priority)):
        assert starts(replay) == {1: 0.0, 2: 10_000.0}


def test_the_wake_reaches_a_periodic_scheduler_at_its_next_tick() -> None:
    """Cycles every 100 s: job 2 arrives at 50 and first searches at 100. Job 1 eligible at 600 (a tick):
    evicted then, released at 630, job 2 binds at the tick at 700. With toleration 650 the wake at 650 is
    seen by the tick at 700 (evicted), job 2 binds at 800."""
    late = replace(NOTEBOOK, toleration_seconds=650)
    for policy, start in ((NOTEBOOK, 700.0), (late, 800.0)):
        frame = jobs(
            [row(1, 0.0, "nb", after=100.0), row(2, 50.0, "train", 1000.0)],
            {"nb": (100, policy), "train": (100, NOTEBOOK)},
        )
        for replay in both(frame, ONE_GPU, replace(RECLAIM, session_interval=100.0)):
            assert starts(replay)[2] == start


def test_quiet_time_is_where_the_mean_usage_meets_the_threshold() -> None:
    """``eligible_from`` solves the mean-usage definition: mean <= threshold iff t >= eligible."""
    rng = np.random.default_rng(7)
    for _ in range(500):
        use = IdleUse(
            gpu=float(rng.uniform(0.01, 1.0)),
            cpu=float(rng.uniform(0.0, 4.0)),
            after=float(rng.uniform(0, 1000)),
            policy=True,
            min_prio=1.0,
            toleration=float(rng.choice([0.0, 200.0])),
            cpu_window=float(rng.choice([0.0, 60.0, 300.0])),
            gpu_window=float(rng.choice([0.0, 60.0, 300.0])),
            cpu_threshold=float(rng.uniform(0, 2)),
            gpu_threshold=float(rng.uniform(0, 0.5)),
        )
        start = float(rng.uniform(0, 100))
        at = eligible_from(use, start)
        for now in rng.uniform(start, start + 3000, 20):
            if abs(now - at) < 1e-6:
                continue
            ready = now >= start + max(use.cpu_window, use.gpu_window, use.toleration)
            quiet = mean_usage(use.cpu, use.cpu_window, start, use.after, now) <= use.cpu_threshold
            quiet = quiet and mean_usage(use.gpu, use.gpu_window, start, use.after, now) <= use.gpu_threshold
            assert (now >= at) == (ready and quiet)


def test_the_usage_model_draws_idle_jobs_by_class_and_keeps_a_traces_own_usage() -> None:
    frame = jobs_frame(
        [
            {
                "job_id": i,
                "submit_time": float(i),
                "duration": 10.0,
                "num_pods": 1,
                "gpu_milli": 1000,
                "cpu_milli": 2000,
            }
            for i in range(2000)
        ]
    )
    classes = [PriorityClass("notebook", 100, 0.5), PriorityClass("train", 100, 0.5)]
    frame = assign_priority_classes(frame, classes, seed=3)
    model = Utilization(gpu_active=0.7, idle_share=0.4, idle_after=900.0, idle_classes=("notebook",))
    out = assign_utilization(frame, model, seed=3)
    idle = out.filter(pl.col("idle_after").is_finite())
    assert set(idle["priority_class"]) == {"notebook"}
    share = idle.height / out.filter(pl.col("priority_class") == "notebook").height
    assert 0.35 < share < 0.45
    assert set(idle["idle_after"]) == {900.0}
    assert set(out["gpu_util"]) == {0.7} and set(out["cpu_util"]) == {2.0}  # cpu: the request
    own = assign_utilization(frame.with_columns(gpu_util=pl.lit(0.25)), model, seed=3)
    assert set(own["gpu_util"]) == {0.25}
    again = assign_utilization(frame.reverse(), model, seed=3).sort("job_id")
    assert again["idle_after"].to_list() == out.sort("job_id")["idle_after"].to_list()


@pytest.mark.parametrize(
    ("model", "key"),
    [
        (Utilization(gpu_active=0.0), "workload.utilization.gpu_active"),
        (Utilization(cpu_active=-1.0), "workload.utilization.cpu_active"),
        (Utilization(idle_share=1.5), "workload.utilization.idle_share"),
        (Utilization(idle_after=math.inf), "workload.utilization.idle_after"),
        (Utilization(idle_classes=("notebooks",)), "workload.utilization.idle_classes"),
    ],
)
def test_a_bad_usage_model_names_its_key(model: Utilization, key: str) -> None:
    with pytest.raises(InputError, match=key.replace(".", r"\.")):
        check_utilization(model, ["notebook"])


def test_reclaim_idle_without_priority_classes_is_refused() -> None:
    frame = jobs_frame(
        [{"job_id": 1, "submit_time": 0.0, "duration": 10.0, "num_pods": 1, "gpu_milli": 1000}]
    )
    frame = assign_utilization(frame.with_columns(priority_class=pl.lit(None, pl.String)), Utilization(), 0)
    with pytest.raises(InputError, match=r"workload\.priority_classes"):
        simulate(frame, ONE_GPU, RECLAIM)
    with pytest.raises(InputError, match=r"workload\.utilization"):
        simulate(
            jobs_frame(
                [{"job_id": 1, "submit_time": 0.0, "duration": 10.0, "num_pods": 1, "gpu_milli": 1000}]
            ),
            ONE_GPU,
            RECLAIM,
        )


def test_a_generic_traces_usage_columns_are_read_and_checked() -> None:
    """A generic CSV keeps ``gpu_util`` as ``source_gpu_util``: read; bad values name their row."""
    base = jobs_frame(
        [
            {"job_id": i, "submit_time": 0.0, "duration": 10.0, "num_pods": 1, "gpu_milli": 1000}
            for i in (1, 2)
        ]
    )
    classed = assign_priority_classes(base, [PriorityClass("all", 100, 1.0)], seed=0)
    given = classed.with_columns(source_gpu_util=pl.Series(["0.25", None]))
    out = assign_utilization(given, Utilization(gpu_active=0.9), seed=0)
    assert out["gpu_util"].to_list() == [0.25, 0.9]  # an empty cell takes the model's level
    with pytest.raises(InputError, match=r"row 2, column 'source_gpu_util': not a number: 'busy'"):
        assign_utilization(classed.with_columns(source_gpu_util=pl.Series(["0.5", "busy"])), Utilization(), 0)
    too_busy = assign_utilization(classed.with_columns(gpu_util=pl.Series([0.5, 1.5])), Utilization(), 0)
    with pytest.raises(InputError, match=r"row 2, column 'gpu_util': must be in \[0, 1\], found 1.5"):
        check_usage(too_busy)
