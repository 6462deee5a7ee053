"""Hand-computed scenarios for what spreading costs (``spread_rate_nvlink``, ``_rack``, ``_spine``): engine
and reference.

docs/engine/placement.md, "What spreading costs". When an attempt starts, its pods' nodes span d_L distinct
ids of the nodes table's ``nvlink_domain``, ``rack`` and ``spine``; the job runs that whole attempt at
f = product over the levels with d_L > 1 of ``spread_rate_L``: finish = start + overhead + work left / f, an
eviction books work done = f x progress time. Jobs table: ``nvlink_domains_spanned``, ``racks_spanned``,
``spines_spanned`` (d_L when its last attempt started, as ``nodes_spanned``; 0 when it never started) and
``spread_delay`` = progress time x (1 - f) over all attempts (a running one up to the end of the run).
``sharing_delay`` / ``sharing_slowdown`` stay sharing's alone (0 / 1 here). Refused: a factor outside
(0, 1]; a factor below 1 with GPU sharing or MIG.

Nodes are V100 nodes of one GPU unless said otherwise, so a gang of k whole-GPU pods under first_fit takes
nodes 0 .. k-1 (pod i on node i); each node's topology is given as (nvlink_domain, rack, spine). FIFO gang,
backfill none, unless said otherwise. Float figures (1 / 0.8, 0.8 x 0.9, ...) are compared with
``pytest.approx``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import polars as pl
import pytest
import tests.reference.simulator as reference
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_mig_dynamic import HAMI, a100
from tests.test_replicas import job

from gpureplay.errors import InputError
from gpureplay.replay.simulate import Replay
from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.results.metrics import _spread_figures
from gpureplay.schedulers.policy import Backfill, GangMode, GpuSharing, Policy, QueueOrder
from gpureplay.schedulers.presets import preset

FIFO = preset("fifo")
#: Leaving the NVLink domain costs Blox's median penalty, 0.8; racks 0.9, spines 0.5.
SPREAD = replace(
    FIFO, name="fifo+spread", spread_rate_nvlink=0.8, spread_rate_rack=0.9, spread_rate_spine=0.5
)
#: Priority preemption (gang, best_fit, backfill skip, 30 s grace) with the same factors.
PREEMPT = replace(
    preset("gang-binpack-preempt"),
    name="gang-binpack-preempt+spread",
    spread_rate_nvlink=0.8,
    spread_rate_rack=0.9,
    spread_rate_spine=0.5,
)
#: kube-scheduler's pod-by-pod mode (first_fit) with the same factors.
POD_BY_POD = replace(
    SPREAD,
    name="pod-by-pod+spread",
    gang=GangMode.pod_by_pod,
    queue_order=QueueOrder.priority,
    backfill=Backfill.skip,
)
IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = reference.simulate

SPREAD_COLUMNS = ["nodes_spanned", "nvlink_domains_spanned", "racks_spanned", "spines_spanned"]


#: Every scenario runs on both: the numba engine and the plain-Python reference (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("implementation")


def engine_only() -> None:
    if simulate is reference.simulate:
        pytest.skip("config errors are the compile step's (engine side)")


def reference_only() -> None:
    if simulate is not reference.simulate:
        pytest.skip("the reference's own error")


def cluster(
    *topology: tuple[int, int, int], num_gpus: int | list[int] = 1, models: list[str] | None = None
) -> pl.DataFrame:
    """Nodes (V100 unless ``models`` says) of ``num_gpus`` GPUs (one figure, or one per node), node i at
    ``topology[i]`` = (nvlink_domain, rack, spine)."""
    n = len(topology)
    gpus = num_gpus if isinstance(num_gpus, list) else [num_gpus] * n
    names = models or ["V100"] * n
    frame = nodes_frame([{"gpu_model": m, "num_gpus": g} for m, g in zip(names, gpus, strict=True)])
    return frame.with_columns(
        pl.Series(column, [t[level] for t in topology], dtype=pl.Int32)
        for level, column in enumerate(("nvlink_domain", "rack", "spine"))
    )


def replay(jobs: list[dict[str, Any]], nodes: pl.DataFrame, policy: Policy = SPREAD, **kw: Any) -> Replay:
    kw.setdefault("sample_interval", 10.0)
    return simulate(jobs_frame(jobs), nodes, policy, debug=True, **kw)


def rows(result: Replay) -> dict[int, dict[str, Any]]:
    return {r["job_id"]: r for r in result.jobs.iter_rows(named=True)}


def spans(row: dict[str, Any]) -> tuple[int, ...]:
    """(nodes_spanned, nvlink_domains_spanned, racks_spanned, spines_spanned)."""
    return tuple(row[c] for c in SPREAD_COLUMNS)


def approx(value: float) -> Any:
    return pytest.approx(value, rel=1e-12, abs=1e-9)


# --------------------------------------------------------------------------------------------------
# The rate of one attempt
# --------------------------------------------------------------------------------------------------


def test_gang_on_one_node_costs_nothing() -> None:
    # One node of 2 GPUs: both pods on node 0 -> d = (1, 1, 1), no level spanned, f = 1 whatever the
    # factors: finish 0 + 100 / 1 = 100, spread_delay 100 x (1 - 1) = 0.
    out = rows(replay([job(1, 0.0, 100.0, 2, 1000)], cluster((0, 0, 0), num_gpus=2)))[1]
    assert (out["state"], out["start_time"], out["finish_time"]) == ("finished", 0.0, 100.0)
    assert spans(out) == (1, 1, 1, 1)
    assert out["spread_delay"] == 0.0
    assert (out["sharing_delay"], out["sharing_slowdown"]) == (0.0, 1.0)


def test_two_nodes_of_one_nvlink_domain_cost_nothing() -> None:
    # A GB200 NVL72-like rack: two servers of one NVLink domain (and one rack, one spine). Pods on nodes 0
    # and 1: nodes_spanned 2 but d = (1, 1, 1), f = 1: finish 100, no delay.
    out = rows(replay([job(1, 0.0, 100.0, 2, 1000)], cluster((7, 3, 1), (7, 3, 1))))[1]
    assert (out["state"], out["finish_time"]) == ("finished", 100.0)
    assert spans(out) == (2, 1, 1, 1)
    assert out["spread_delay"] == 0.0


def test_two_nvlink_domains_of_one_rack_run_at_0_8() -> None:
    # Nodes 0 and 1 in NVLink domains 0 and 1, rack 0, spine 0: d = (2, 1, 1), f = 0.8.
    # finish = 0 + 100 / 0.8 = 125 (100 s of work takes 125 s); spread_delay = 125 x (1 - 0.8) = 25.
    # Sharing's columns do not see the stretch: sharing_delay 0, sharing_slowdown 1.
    out = rows(replay([job(1, 0.0, 100.0, 2, 1000)], cluster((0, 0, 0), (1, 0, 0))))[1]
    assert (out["state"], out["start_time"]) == ("finished", 0.0)
    assert out["finish_time"] == approx(125.0)
    assert spans(out) == (2, 2, 1, 1)
    assert out["spread_delay"] == approx(25.0)
    assert (out["sharing_delay"], out["sharing_slowdown"]) == (0.0, 1.0)


def test_across_racks_the_factors_multiply() -> None:
    # Domains 0, 1 in racks 0, 1 of spine 0: d = (2, 2, 1), f = 0.8 x 0.9 = 0.72.
    # finish = 100 / 0.72 = 138.888...; spread_delay = (100 / 0.72) x 0.28 = 38.888...
    out = rows(replay([job(1, 0.0, 100.0, 2, 1000)], cluster((0, 0, 0), (1, 1, 0))))[1]
    assert out["finish_time"] == approx(100.0 / 0.72)
    assert spans(out) == (2, 2, 2, 1)
    assert out["spread_delay"] == approx(100.0 / 0.72 * 0.28)


def test_across_spines_all_three_factors_multiply() -> None:
    # Racks 0, 1 in spines 0, 1: d = (2, 2, 2), f = 0.8 x 0.9 x 0.5 = 0.36.
    # finish = 100 / 0.36 = 277.777...; spread_delay = (100 / 0.36) x 0.64 = 177.777...
    out = rows(replay([job(1, 0.0, 100.0, 2, 1000)], cluster((0, 0, 0), (1, 1, 1))))[1]
    assert out["finish_time"] == approx(100.0 / 0.36)
    assert spans(out) == (2, 2, 2, 2)
    assert out["spread_delay"] == approx(100.0 / 0.36 * 0.64)


def test_only_the_spine_factor_set() -> None:
    # nvlink and rack at their default 1, spine 0.5: across spines f = 1 x 1 x 0.5 = 0.5.
    # finish = 100 / 0.5 = 200 (exact), spread_delay = 200 x 0.5 = 100.
    policy = replace(FIFO, name="fifo+spine-cost", spread_rate_spine=0.5)
    out = rows(replay([job(1, 0.0, 100.0, 2, 1000)], cluster((0, 0, 0), (1, 1, 1)), policy))[1]
    assert out["finish_time"] == 200.0
    assert out["spread_delay"] == 100.0


def test_levels_count_independently() -> None:
    # The spec's literal rule: each level whose d_L > 1 contributes its factor, whether or not the level
    # below is spanned. Two nodes of one NVLink domain id (0) but in racks 0 and 1: d = (1, 2, 1), f = 0.9.
    # finish = 100 / 0.9 = 111.111..., spread_delay = (100 / 0.9) x 0.1 = 11.111...
    out = rows(replay([job(1, 0.0, 100.0, 2, 1000)], cluster((0, 0, 0), (0, 1, 0))))[1]
    assert out["finish_time"] == approx(100.0 / 0.9)
    assert spans(out) == (2, 1, 2, 1)
    assert out["spread_delay"] == approx(100.0 / 0.9 * 0.1)


def test_spanned_columns_count_distinct_domains() -> None:
    # 2-GPU nodes at (0,0,0), (1,0,0), (2,1,0); a 5-pod gang under first_fit: pods 0-1 on node 0, 2-3 on
    # node 1, 4 on node 2 -> nodes 3, NVLink domains {0,1,2} = 3, racks {0,1} = 2, spines {0} = 1.
    # f = 0.8 x 0.9 = 0.72: finish = 72 / 0.72 = 100, spread_delay = 100 x 0.28 = 28.
    nodes = cluster((0, 0, 0), (1, 0, 0), (2, 1, 0), num_gpus=2)
    out = rows(replay([job(1, 0.0, 72.0, 5, 1000)], nodes))[1]
    assert spans(out) == (3, 3, 2, 1)
    assert out["finish_time"] == approx(100.0)
    assert out["spread_delay"] == approx(28.0)


def test_single_pod_and_cpu_only_jobs_cost_nothing() -> None:
    # Job 1: one whole-GPU pod on node 0 -> d = (1, 1, 1): finish 100. Job 2: three CPU-only pods (gpu_milli
    # 0, which fit any node), first_fit puts all on node 0 -> d = (1, 1, 1): finish 10 + 50 = 60.
    nodes = cluster((0, 0, 0), (1, 1, 1))
    out = rows(replay([job(1, 0.0, 100.0, 1, 1000), job(2, 10.0, 50.0, 3, 0)], nodes))
    assert (out[1]["finish_time"], spans(out[1]), out[1]["spread_delay"]) == (100.0, (1, 1, 1, 1), 0.0)
    assert (out[2]["finish_time"], spans(out[2]), out[2]["spread_delay"]) == (60.0, (1, 1, 1, 1), 0.0)


def test_defaults_cost_nothing() -> None:
    # The topology-blind default (every factor 1): a 3-pod gang across three NVLink domains, racks and
    # spines still runs at f = 1 (finish 100, spread_delay 0); the spanned columns are reported all the same.
    nodes = cluster((0, 0, 0), (1, 1, 1), (2, 2, 2))
    out = rows(replay([job(1, 0.0, 100.0, 3, 1000)], nodes, FIFO))[1]
    assert (out["state"], out["finish_time"], out["spread_delay"]) == ("finished", 100.0, 0.0)
    assert spans(out) == (3, 3, 3, 3)
    assert (out["sharing_delay"], out["sharing_slowdown"]) == (0.0, 1.0)


def test_spread_job_delays_the_queue_behind_it() -> None:
    # Job 1 across NVLink domains (f = 0.8) ends at 125, not 100; job 2 (2 pods, FIFO head-of-line) waits
    # for it and starts at 125 on the same two nodes: finish 125 + 40 / 0.8 = 175, spread_delay 50 x 0.2 = 10.
    nodes = cluster((0, 0, 0), (1, 0, 0))
    out = rows(replay([job(1, 0.0, 100.0, 2, 1000), job(2, 1.0, 40.0, 2, 1000)], nodes))
    assert out[1]["finish_time"] == approx(125.0)
    assert out[2]["start_time"] == approx(125.0)
    assert out[2]["finish_time"] == approx(175.0)
    assert out[2]["pending_time"] == approx(124.0)
    assert (out[1]["spread_delay"], out[2]["spread_delay"]) == (approx(25.0), approx(10.0))


# --------------------------------------------------------------------------------------------------
# Attempts: the end of the run, evictions, never started
# --------------------------------------------------------------------------------------------------


def test_running_at_the_end_of_the_run() -> None:
    # f = 0.8 from 0; the horizon 50 (a sample time, so the run's last time) stops it running:
    # spread_delay = 50 x 0.2 = 10 (the running attempt up to the end), unfinished, spanned as at its start.
    out = rows(replay([job(1, 0.0, 100.0, 2, 1000)], cluster((0, 0, 0), (1, 0, 0)), horizon=50.0))[1]
    assert (out["state"], out["start_time"], out["finish_time"]) == ("unfinished", 0.0, None)
    assert spans(out) == (2, 2, 1, 1)
    assert out["spread_delay"] == approx(10.0)
    assert out["sharing_delay"] == 0.0


def test_never_started_jobs_span_nothing() -> None:
    # Job 1 (2 pods, f = 0.8) runs 0..125. Job 2 asks 3 GPUs of a 2-GPU cluster: rejected (gang_too_large).
    # Job 3 (2 pods) waits behind job 1 and the horizon 100 ends the run first: unfinished, never started.
    # Both: every spanned column 0, spread_delay 0.
    nodes = cluster((0, 0, 0), (1, 0, 0))
    jobs = [job(1, 0.0, 100.0, 2, 1000), job(2, 1.0, 10.0, 3, 1000), job(3, 2.0, 10.0, 2, 1000)]
    out = rows(replay(jobs, nodes, horizon=100.0))
    assert (out[2]["state"], out[3]["state"]) == ("rejected", "unfinished")
    for j in (2, 3):
        assert spans(out[j]) == (0, 0, 0, 0)
        assert out[j]["spread_delay"] == 0.0


def test_eviction_books_f_times_progress() -> None:
    # Priority preemption, 30 s grace. Nodes 0, 1 in NVLink domains 0, 1 (rack 0). Job 1 (priority 0, 2 pods,
    # 100 s, checkpoint every 25 s of progress, restart overhead 10 s) starts at 0 at f = 0.8.
    # Job 2 (priority 10, 1 pod, 10 s) arrives at 50, fits nowhere and evicts job 1 at 50:
    #   progress time 50 -> work done = 0.8 x 50 = 40 (not 50); saved = floor(40 / 25) x 25 = 25, lost 15;
    #   work left 100 - 25 = 75; spread_delay so far 50 x 0.2 = 10.
    # Grace ends at 80: job 2 starts on node 0 (ends 90); job 1 (2 pods) waits for the second GPU.
    # At 90 job 1 restarts on both nodes, f = 0.8 again: finish = 90 + 10 + 75 / 0.8 = 193.75;
    #   this attempt's progress time 93.75 -> spread_delay 10 + 93.75 x 0.2 = 28.75.
    jobs = [
        job(1, 0.0, 100.0, 2, 1000, priority=0, checkpoint_interval=25.0, restart_overhead=10.0),
        job(2, 50.0, 10.0, 1, 1000, priority=10, checkpoint_interval=0.0, restart_overhead=10.0),
    ]
    result = replay(jobs, cluster((0, 0, 0), (1, 0, 0)), PREEMPT)
    out = rows(result)
    assert (out[1]["state"], out[1]["preemptions"], out[1]["attempts"]) == ("finished", 1, 2)
    assert (out[2]["start_time"], out[2]["finish_time"]) == (80.0, 90.0)
    assert out[1]["finish_time"] == approx(193.75)
    assert out[1]["spread_delay"] == approx(28.75)
    assert spans(out[1]) == (2, 2, 1, 1)
    assert (spans(out[2]), out[2]["spread_delay"]) == ((1, 1, 1, 1), 0.0)
    assert out[1]["sharing_delay"] == 0.0
    first, second = result.attempts.filter(pl.col("job_id") == 1).sort("attempt").iter_rows(named=True)
    assert (first["end_reason"], first["evicted"]) == ("preempted", 50.0)
    assert first["progress"] == approx(40.0)
    assert first["work_lost"] == approx(15.0)
    assert (second["end_reason"], second["start"], second["restart_overhead"]) == ("finished", 90.0, 10.0)
    assert second["progress"] == approx(75.0)


def test_each_attempt_takes_the_rate_of_its_own_placement() -> None:
    # Priority preemption, best_fit nodes. Node 0: 2 V100 at (0,0,0); node 1: 1 T4 at (1,0,0).
    # Job 1 (priority 0, 2 pods, any model, 100 s, checkpoint 0, overhead 10) at 0: pod 0 -> node 1 (0 milli
    # left there vs 1000 on node 0), pod 1 -> node 0: d = (2, 1, 1), f = 0.8.
    # Job 2 (priority 10, 1 pod, T4 only, 100 s) at 40: node 1 is full -> it evicts job 1 at 40: work done
    # 0.8 x 40 = 32, all saved (interval 0), left 68; spread_delay 40 x 0.2 = 8.
    # Grace ends at 70: job 2 takes node 1 (70..170); job 1 restarts at 70 on node 0's two GPUs:
    # d = (1, 1, 1), f = 1: finish = 70 + 10 + 68 = 148, no further delay: spread_delay 8; the spanned
    # columns are the last attempt's: (1, 1, 1, 1).
    jobs = [
        job(1, 0.0, 100.0, 2, 1000, priority=0, restart_overhead=10.0),
        job(2, 40.0, 100.0, 1, 1000, priority=10, restart_overhead=10.0, gpu_models=["T4"]),
    ]
    nodes = cluster((0, 0, 0), (1, 0, 0), num_gpus=[2, 1], models=["V100", "T4"])
    result = replay(jobs, nodes, PREEMPT)
    out = rows(result)
    assert (out[1]["state"], out[1]["preemptions"], out[1]["attempts"]) == ("finished", 1, 2)
    assert (out[2]["start_time"], out[2]["finish_time"]) == (70.0, 170.0)
    assert out[1]["finish_time"] == approx(148.0)
    assert out[1]["spread_delay"] == approx(8.0)
    assert spans(out[1]) == (1, 1, 1, 1)
    first, second = result.attempts.filter(pl.col("job_id") == 1).sort("attempt").iter_rows(named=True)
    assert (first["nodes"], first["progress"]) == (2, approx(32.0))
    assert (second["nodes"], second["progress"]) == (1, approx(68.0))


def test_deadlocked_jobs_count_the_domains_they_hold() -> None:
    # Pod by pod (first_fit): jobs 1 and 2 of 3 pods each on four 1-GPU nodes at (0,0,0), (1,0,0), (2,1,0),
    # (3,1,1). The pod queue interleaves 1/0 -> node 0, 2/0 -> node 1, 1/1 -> node 2, 2/1 -> node 3; the third
    # pods never fit: both deadlocked, never started. As nodes_spanned (the nodes held), the domains held:
    # job 1 nodes {0, 2} -> (2, 2, 2, 1); job 2 nodes {1, 3} -> (2, 2, 2, 2). spread_delay 0 (never ran).
    nodes = cluster((0, 0, 0), (1, 0, 0), (2, 1, 0), (3, 1, 1))
    out = rows(replay([job(1, 0.0, 10.0, 3, 1000), job(2, 0.0, 10.0, 3, 1000)], nodes, POD_BY_POD))
    assert (out[1]["state"], out[2]["state"]) == ("deadlocked", "deadlocked")
    assert spans(out[1]) == (2, 2, 2, 1)
    assert spans(out[2]) == (2, 2, 2, 2)
    assert (out[1]["spread_delay"], out[2]["spread_delay"]) == (0.0, 0.0)


def test_pod_by_pod_rate_from_the_nodes_at_start() -> None:
    # Pod by pod, one job of 2 pods on nodes (0,0,0), (1,1,0): both placed in the cycle at 0, it starts at
    # 0 at f = 0.8 x 0.9 = 0.72: finish 72 / 0.72 = 100, spread_delay 100 x 0.28 = 28.
    out = rows(replay([job(1, 0.0, 72.0, 2, 1000)], cluster((0, 0, 0), (1, 1, 0)), POD_BY_POD))[1]
    assert out["finish_time"] == approx(100.0)
    assert spans(out) == (2, 2, 2, 1)
    assert out["spread_delay"] == approx(28.0)


# --------------------------------------------------------------------------------------------------
# Refused settings
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"spread_rate_nvlink": 0.0}, "scheduler.spread_rate_nvlink"),
        ({"spread_rate_rack": 1.5}, "scheduler.spread_rate_rack"),
        ({"spread_rate_spine": -0.5}, "scheduler.spread_rate_spine"),
        ({"spread_rate_nvlink": float("nan")}, "scheduler.spread_rate_nvlink"),
        (
            {"spread_rate_nvlink": 0.8, "gpu_sharing": GpuSharing.time_slicing, "replicas": 2},
            "scheduler.spread_rate_nvlink",
        ),
        (
            {"spread_rate_rack": 0.8, "gpu_sharing": GpuSharing.mps, "replicas": 2},
            "scheduler.spread_rate_rack",
        ),
    ],
    ids=["nvlink-0", "rack-1.5", "spine-negative", "nvlink-nan", "with-time-slicing", "with-mps"],
)
def test_refused_factors_name_the_key(extra: dict[str, Any], key: str) -> None:
    engine_only()
    policy = replace(FIFO, name="fifo+bad-spread", **extra)
    with pytest.raises(InputError, match=re.escape(key)):
        engine_simulate(jobs_frame([job(1, 0.0, 10.0, 1, 1000)]), cluster((0, 0, 0)), policy)


def test_refused_with_dynamic_mig() -> None:
    engine_only()
    policy = replace(HAMI, name="fifo+dynamic-mig+spread", spread_rate_nvlink=0.8)
    with pytest.raises(InputError, match=r"scheduler\.spread_rate_nvlink"):
        engine_simulate(jobs_frame([job(1, 0.0, 10.0, 1, 100)]), nodes_frame([a100()]), policy)


def test_factor_1_is_allowed_with_sharing() -> None:
    # The defaults (1) are no cost: allowed with time-slicing, which sets the rates alone (a lone job at 1).
    policy = replace(FIFO, name="fifo+ts", gpu_sharing=GpuSharing.time_slicing, replicas=2)
    out = rows(replay([job(1, 0.0, 100.0, 1, 1000)], cluster((0, 0, 0)), policy))[1]
    assert (out["finish_time"], out["spread_delay"]) == (100.0, 0.0)


def test_the_reference_refuses_them_too() -> None:
    reference_only()
    jobs, nodes = jobs_frame([job(1, 0.0, 10.0, 1, 1000)]), cluster((0, 0, 0))
    for policy in (replace(FIFO, spread_rate_nvlink=0.0), replace(FIFO, spread_rate_rack=1.5)):
        with pytest.raises(ValueError, match="spread_rate_"):
            reference.simulate(jobs, nodes, policy)
    sharing = replace(FIFO, gpu_sharing=GpuSharing.time_slicing, replicas=2, spread_rate_spine=0.8)
    with pytest.raises(ValueError, match="spread_rate_spine"):
        reference.simulate(jobs, nodes, sharing)
    mig = replace(HAMI, spread_rate_nvlink=0.8)
    with pytest.raises(ValueError, match="spread_rate_nvlink"):
        reference.simulate(jobs_frame([job(1, 0.0, 10.0, 1, 100)]), nodes_frame([a100()]), mig)


def test_summary_figures_count_multi_node_jobs_and_spread_gpu_hours() -> None:
    """The summary's topology figures (src/gpureplay/results/metrics.py, "Topology"), by hand: three jobs
    over two nodes or more, one of them within one rack and one spine; 2 GPUs x 25 s + 4 GPUs x 9 s. The
    multi-pod jobs (2, 2 and 4 pods) waited 30, 60 and 90 s (censored waits): mean 60 s."""
    admitted = pl.DataFrame(
        {
            "num_pods": [1, 2, 2, 4],
            "wait_c": [1000.0, 30.0, 60.0, 90.0],
            "nodes_spanned": [1, 2, 2, 4],
            "nvlink_domains_spanned": [1, 2, 2, 4],
            "racks_spanned": [1, 1, 2, 2],
            "spines_spanned": [1, 1, 1, 2],
            "gpus": [1.0, 2.0, 2.0, 4.0],
            "spread_delay": [0.0, 25.0, 0.0, 9.0],
        }
    )
    figures = _spread_figures(admitted)
    assert figures["multi_node_jobs"] == 3
    assert figures["one_nvlink_pct"] == 0.0
    assert figures["one_rack_pct"] == pytest.approx(100.0 / 3)
    assert figures["one_spine_pct"] == pytest.approx(200.0 / 3)
    assert figures["spread_gpu_hours"] == pytest.approx((2 * 25.0 + 4 * 9.0) / 3600.0)
    assert figures["multi_pod_wait_mean"] == pytest.approx(60.0)
    none = _spread_figures(admitted.filter(pl.col("nodes_spanned") == 1))
    assert none["multi_node_jobs"] == 0 and none["one_rack_pct"] is None
    assert none["multi_pod_wait_mean"] is None
