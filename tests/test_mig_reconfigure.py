"""Hand-computed scenarios for re-partitioning idle MIG GPUs (``mig_reconfigure: idle``): engine, reference.

docs/engine/devices.md, "Re-partitioning idle GPUs" (and step 1b of "Time and events"). Under
``mig_strategy: mixed`` each GPU of a MIG node holds its own mig-parted config (initially the node's
``mig_layout``), product ``<model>-MIG``. Right after every scheduling cycle the controller computes, per MIG
model, R[P] = pods of pending jobs that get profile P there and S[P] = free instances of P outside downtime
plus the instances of P in the configs being applied; while some R[P] > S[P] it visits the GPUs in order: an
idle GPU (no slice held, not in downtime) of config C goes to the candidate L of greatest
served(L) = sum_P min(instances of P in L, max(0, R[P] - S'[P])) (S' = S minus C's instances; ties the
earlier candidate) when served(L) > served(C), and serves nothing for ``mig_reconfigure_s`` (default 60 s).
The downtime's end is step 1b (a change: a cycle follows).

A100-40GB throughout (8 memory slices, 7 compute slices). Default candidates, in order: all-1g.5gb (7 x 1g.5gb
at 0..6), all-1g.10gb (4 x 1g.10gb), all-2g.10gb (3 x 2g at 0, 2, 4), all-3g.20gb (2 x 3g at 0, 4),
all-4g.20gb (4g at 0), all-7g.40gb (7g at 0), all-balanced (2g@0, 1g.5gb@2, 1g.5gb@3, 3g@4). Smallest fits:
100 milli -> 1g.5gb (1/7 >= 0.1), 300 or 400 milli -> 3g.20gb (2/7 < 0.3 <= 3/7). sharing_demand trace, so
every pod here runs at rate min(1, (c / 7) / d) = 1 (3/7 >= 0.4, 1/7 >= 0.1). FIFO gang, backfill none
(head-of-line blocking): a blocked head keeps every later job pending too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import tests.reference.simulator as reference
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_mig_dynamic import HAMI, MIXED, a100
from tests.test_replicas import job

from gpureplay.errors import InputError
from gpureplay.replay.simulate import Replay
from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.schedulers.policy import Backfill, GangMode, MigReconfigure, Policy, QueueOrder

#: The mixed strategy (FIFO gang, trace demand, smallest fit) with idle GPUs re-partitioned (60 s downtime).
IDLE = replace(MIXED, name="fifo+mixed-mig+reconfigure", mig_reconfigure=MigReconfigure.idle)
IMPLEMENTATIONS = {"engine": engine_simulate, "reference": reference.simulate}
simulate = reference.simulate

HOUR = 3600.0


#: Every scenario runs on both: the numba engine and the plain-Python reference (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("implementation")


def engine_only() -> None:
    if simulate is reference.simulate:
        pytest.skip("config errors and the summary figures are the engine's (compile step, stats)")


def replay(
    jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], policy: Policy = IDLE, **kw: Any
) -> Replay:
    kw.setdefault("sample_interval", 10.0)
    return simulate(jobs_frame(jobs), nodes_frame(nodes), policy, debug=True, **kw)


def states(result: Replay) -> dict[int, tuple[Any, ...]]:
    """job_id -> (state, start_time, finish_time)."""
    return {
        r["job_id"]: (r["state"], r["start_time"], r["finish_time"])
        for r in result.jobs.iter_rows(named=True)
    }


def downtime(result: Replay) -> tuple[Any, Any]:
    """(mig_reconfigurations, mig_reconfigure_gpu_h)."""
    return (result.stats["mig_reconfigurations"], result.stats["mig_reconfigure_gpu_h"])


# --- the spec's example ------------------------------------------------------------------------------------


def test_spec_example_3g_job_on_all_1g_gpu() -> None:
    # One A100 all-1g.5gb; a 400-milli job (3g.20gb, 100 s) at 0 does not fit. R = {3g: 1}, S = {3g: 0}.
    # The GPU is idle: C = all-1g.5gb, S' = {3g: 0}; served: all-1g.5gb 0, all-1g.10gb 0, all-2g.10gb 0,
    # all-3g.20gb min(2, 1) = 1, all-4g.20gb 0, all-7g.40gb 0, all-balanced min(1, 1) = 1 -> all-3g.20gb (the
    # earlier of the two) serves 1 > served(C) = 0: down 0-60. At 60 (step 1b) it gets 3g@0 and 3g@4, the
    # cycle starts the job on 3g@0: 60-160. One re-partitioning, 60 s of downtime = 60/3600 GPU-hours.
    result = replay([job(1, 0.0, 100.0, 1, 400)], [a100("all-1g.5gb")])
    assert states(result) == {1: ("finished", 60.0, 160.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))


def test_spec_example_named_profile() -> None:
    # The same job naming 3g.20gb (instead of the smallest fit): the same story.
    result = replay([job(1, 0.0, 100.0, 1, 400, mig_profile="3g.20gb")], [a100("all-1g.5gb")])
    assert states(result) == {1: ("finished", 60.0, 160.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))


def test_gpu_in_downtime_counts_8_stranded_slices() -> None:
    # The spec example sampled every 30 s. The only wanted shape is 3g.20gb. The controller runs right after
    # the cycle at 0, before the sample: at 0 and 30 the GPU is down (no instance): 8 stranded slices, 0
    # allocated. At 60, 90, 120, 150 the job holds 3g@0 (slices 0-3, 4 x 125 = 500 milli); slices 4-7 are
    # 3g@4's, free and usable: 0 stranded. The run ends at 160 (no sample there).
    result = replay([job(1, 0.0, 100.0, 1, 400)], [a100("all-1g.5gb")], sample_interval=30.0)
    assert result.timeline["time"].to_list() == [0.0, 30.0, 60.0, 90.0, 120.0, 150.0]
    assert result.timeline["mig_stranded_slices"].to_list() == [8, 8, 0, 0, 0, 0]
    assert result.timeline["allocated_milli"].to_list() == [0, 0, 500, 500, 500, 500]


def test_summary_figures_under_reconfigure() -> None:
    # Engine summary: mig_instances = 0 (layouts change); mig_stranded_pct = mean over the rows of
    # stranded / (8 x 1 GPU) x 100 = (8 + 8 + 0 x 4) / 8 / 6 x 100 = 100 / 3.
    engine_only()
    result = replay([job(1, 0.0, 100.0, 1, 400)], [a100("all-1g.5gb")], sample_interval=30.0)
    assert result.stats["mig_instances"] == 0.0
    assert result.stats["mig_stranded_pct"] == pytest.approx(100.0 / 3.0)


# --- which config ------------------------------------------------------------------------------------------


def test_all_balanced_serves_1_3g_and_2_1g() -> None:
    # One A100 all-7g.40gb; at 0 job 1 (300 milli: 3g.20gb) heads the queue and does not fit (no 3g); jobs 2
    # and 3 (100 milli: 1g.5gb) wait behind it. R = {3g: 1, 1g.5gb: 2}, S = {3g: 0, 1g: 0} (the 7g instance is
    # no profile anyone asks). C = all-7g.40gb, S' = {0, 0}: served(all-1g.5gb) = min(7, 2) = 2,
    # all-3g.20gb min(2, 1) = 1, all-balanced min(1, 1) + min(2, 2) = 3, the others 0; C serves 0 ->
    # all-balanced, down 0-60. At 60: 3g@4, 1g@2, 1g@3 free, all three start: 60-160. (Only all-balanced
    # holds both a 3g and two 1g.5gb: any other choice would leave one of them waiting.)
    jobs = [job(1, 0.0, 100.0, 1, 300), job(2, 0.0, 100.0, 1, 100), job(3, 0.0, 100.0, 1, 100)]
    result = replay(jobs, [a100("all-7g.40gb")])
    assert states(result) == {i: ("finished", 60.0, 160.0) for i in (1, 2, 3)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))


def test_busy_gpu_waits_for_its_pod_to_end() -> None:
    # One A100 all-1g.5gb. Job 1 (1g.5gb, 100 s) starts at 0 on 1g@0. Job 2 (3g.20gb, 50 s) arrives at 1 and
    # does not fit: R = {3g: 1} > S = 0, but the GPU holds slice 0 (job 1): it does not qualify, nothing
    # changes. At 100 job 1 ends; the cycle still cannot place job 2; the controller: the GPU is idle now,
    # all-3g.20gb serves 1 > 0 -> down 100-160; job 2 runs 160-210.
    jobs = [job(1, 0.0, 100.0, 1, 100), job(2, 1.0, 50.0, 1, 300)]
    result = replay(jobs, [a100("all-1g.5gb")])
    assert states(result) == {1: ("finished", 0.0, 100.0), 2: ("finished", 160.0, 210.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))


def test_tie_goes_to_the_earlier_candidate() -> None:
    # One A100 all-1g.5gb. Job 1 (3g, 100 s) at 0: R = {3g: 1}; all-3g.20gb and all-balanced both serve 1.
    # Default order: all-3g.20gb (earlier), down 0-60. Job 2 (3g, 100 s) arrives at 10, during the downtime:
    # R = {3g: 2}, S = the config being applied's 3g instances = 2: no R > S, nothing. At 60 both start
    # (3g@0, 3g@4): 60-160.
    jobs = [job(1, 0.0, 100.0, 1, 300), job(2, 10.0, 100.0, 1, 300)]
    result = replay(jobs, [a100("all-1g.5gb")])
    assert states(result) == {1: ("finished", 60.0, 160.0), 2: ("finished", 60.0, 160.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))
    # Candidates listed as all-balanced, all-3g.20gb (then the initial all-1g.5gb, not listed): the tie at 0
    # goes to all-balanced (earlier now), down 0-60. At 10: R = {3g: 2} > S = 1, but the only GPU is in
    # downtime: nothing. At 60 job 1 takes the 3g (slices 4-7), job 2 does not fit; R = {3g: 1} > S = 0, the
    # GPU is busy: nothing. At 160 job 1 ends and job 2 takes the 3g: 160-260.
    listed = replace(IDLE, mig_reconfigure_layouts=["all-balanced", "all-3g.20gb"])
    result = replay(jobs, [a100("all-1g.5gb")], listed)
    assert states(result) == {1: ("finished", 60.0, 160.0), 2: ("finished", 160.0, 260.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))


def test_listed_layouts_restrict_the_choice() -> None:
    # Two 3g jobs (100 s) at 0 on one A100 all-1g.5gb. Default candidates: R = {3g: 2}; all-3g.20gb serves
    # min(2, 2) = 2, all-balanced 1 -> all-3g.20gb, down 0-60, both run 60-160.
    jobs = [job(1, 0.0, 100.0, 1, 300), job(2, 0.0, 100.0, 1, 300)]
    result = replay(jobs, [a100("all-1g.5gb")])
    assert states(result) == {1: ("finished", 60.0, 160.0), 2: ("finished", 60.0, 160.0)}
    # Only all-balanced listed: candidates all-balanced, then the initial all-1g.5gb. all-balanced serves 1 >
    # 0: down 0-60; at 60 job 1 takes its 3g, job 2 waits (R = {3g: 1} > S = 0, GPU busy) until job 1 ends at
    # 160: 160-260. One re-partitioning.
    only_balanced = replace(IDLE, mig_reconfigure_layouts=["all-balanced"])
    result = replay(jobs, [a100("all-1g.5gb")], only_balanced)
    assert states(result) == {1: ("finished", 60.0, 160.0), 2: ("finished", 160.0, 260.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))


def test_profile_in_no_candidate_is_rejected() -> None:
    # Candidates all-1g.10gb (listed) and all-1g.5gb (initial): no 3g.20gb in either, so the product is not
    # allowed for a 3g pod: rejected at arrival (no node allows it: no_model); nothing is re-partitioned.
    listed = replace(IDLE, mig_reconfigure_layouts=["all-1g.10gb"])
    result = replay([job(1, 0.0, 100.0, 1, 300)], [a100("all-1g.5gb")], listed)
    assert states(result) == {1: ("rejected", None, None)}
    assert result.jobs["reject_reason"].to_list() == ["no_model"]
    assert downtime(result) == (0, 0.0)


def test_gang_pods_count_one_by_one() -> None:
    # One job of 2 pods of 3g at 0 on one A100 all-1g.5gb, candidates all-balanced, all-3g.20gb (then the
    # initial all-1g.5gb). R = {3g: 2} (its two pods): all-balanced serves min(1, 2) = 1, all-3g.20gb
    # min(2, 2) = 2 -> all-3g.20gb, down 0-60; both pods start at 60 (3g@0, 3g@4): 60-160.
    listed = replace(IDLE, mig_reconfigure_layouts=["all-balanced", "all-3g.20gb"])
    result = replay([job(1, 0.0, 100.0, 2, 300)], [a100("all-1g.5gb")], listed)
    assert states(result) == {1: ("finished", 60.0, 160.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))


def test_pod_by_pod_counts_unplaced_pods() -> None:
    # Pod by pod (priority queue, backfill skip), candidates all-balanced, all-3g.20gb (then the initial
    # all-1g.5gb). One job of 2 pods of 3g (100 s) at 0 on one A100 all-1g.5gb: no pod fits; R = {3g: 2}
    # (both pods, each once): all-balanced serves min(1, 2) = 1, all-3g.20gb min(2, 2) = 2 -> all-3g.20gb,
    # down 0-60; at 60 both pods take 3g@0 and 3g@4: 60-160.
    pod_by_pod = replace(
        IDLE,
        gang=GangMode.pod_by_pod,
        queue_order=QueueOrder.priority,
        backfill=Backfill.skip,
        mig_reconfigure_layouts=["all-balanced", "all-3g.20gb"],
    )
    result = replay([job(1, 0.0, 100.0, 2, 300)], [a100("all-1g.5gb")], pod_by_pod)
    assert states(result) == {1: ("finished", 60.0, 160.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))
    # 3 pods on node 0 (all-balanced: one 3g, at 4) and node 1 (all-1g.5gb). At 0 pod 0 takes node 0's 3g,
    # pods 1 and 2 do not fit: R = {3g: 2} (the unplaced pods), S = 0. Node 0's GPU is busy; node 1's is idle,
    # S' = 0: all-balanced serves 1, all-3g.20gb 2 -> all-3g.20gb, down 0-60. At 60 pods 1 and 2 take its 3g@0
    # and 3g@4: the job runs 60-160.
    result = replay([job(1, 0.0, 100.0, 3, 300)], [a100("all-balanced"), a100("all-1g.5gb")], pod_by_pod)
    assert states(result) == {1: ("finished", 60.0, 160.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))


def test_no_change_without_strict_improvement() -> None:
    # One A100 all-3g.20gb on a node of 2000 milli-CPU. Job 1 (CPU only, 2000 milli-CPU) runs 0-10; jobs 2-4
    # (3g, 500 milli-CPU, 100 s) at 0 wait (no CPU left). R = {3g: 3} > S = {3g: 2}: the idle GPU is visited.
    # C = all-3g.20gb, S' = {3g: 0}: served(C) = min(2, 3) = 2; best candidate all-3g.20gb itself (2;
    # all-balanced 1, the others 0): not more than served(C), nothing changes. At 10 jobs 2 and 3 start on
    # 3g@0 and 3g@4 (10-110), job 4 waits for one: 110-210. No re-partitioning.
    cpu_job = job(1, 0.0, 10.0, 1, 0, cpu_milli=2000)
    jobs = [cpu_job, *(job(i, 0.0, 100.0, 1, 300, cpu_milli=500) for i in (2, 3, 4))]
    result = replay(jobs, [{**a100("all-3g.20gb"), "cpu_milli": 2000}])
    assert states(result) == {
        1: ("finished", 0.0, 10.0),
        2: ("finished", 10.0, 110.0),
        3: ("finished", 10.0, 110.0),
        4: ("finished", 110.0, 210.0),
    }
    assert downtime(result) == (0, 0.0)


def test_no_change_when_free_instances_cover_the_demand() -> None:
    # One A100 all-balanced on a node of 2000 milli-CPU. Job 1 (CPU only, 2000 milli-CPU) runs 0-100; job 2
    # (1g.5gb, 1000 milli-CPU) and job 3 (3g, 1000 milli-CPU) at 0 wait for CPU. R = {1g: 1, 3g: 1} <=
    # S = {1g: 2, 3g: 1}: nothing to do. At 100 both start (1g@2, 3g@4): 100-150.
    cpu_job = job(1, 0.0, 100.0, 1, 0, cpu_milli=2000)
    jobs = [cpu_job, job(2, 0.0, 50.0, 1, 100, cpu_milli=1000), job(3, 0.0, 50.0, 1, 300, cpu_milli=1000)]
    result = replay(jobs, [{**a100("all-balanced"), "cpu_milli": 2000}])
    assert states(result) == {
        1: ("finished", 0.0, 100.0),
        2: ("finished", 100.0, 150.0),
        3: ("finished", 100.0, 150.0),
    }
    assert downtime(result) == (0, 0.0)


# --- two GPUs ----------------------------------------------------------------------------------------------


def test_only_the_first_gpu_changes_when_it_suffices() -> None:
    # One node of 2 A100s, both all-1g.5gb. Job 1 (3g, 100 s) at 0: R = {3g: 1} > S = 0. GPU 0 (first in GPU
    # order) goes to all-3g.20gb (serves 1), S = {3g: 2}: no R > S left, GPU 1 is not visited. Down 0-60 (one
    # GPU): 60/3600 GPU-hours. Job 1 runs 60-160 on GPU 0's 3g@0. Job 2 (1g.5gb, 10 s) arrives at 200 and
    # takes GPU 1's 1g@0 (GPU 0 has no 1g instance): 200-210.
    # Timeline (every 30 s; wanted shapes 1g.5gb and 3g.20gb): at 0 and 30 GPU 0 is down (8) and GPU 1
    # (all-1g.5gb) strands slice 7 (no 1g starts there, no 3g instance in its layout): 9. From 60 on GPU 0's
    # free slices are 3g instances (0), GPU 1 strands slice 7: 1 (at 60 ... 180, and at 210 after job 2 ends).
    jobs = [job(1, 0.0, 100.0, 1, 300), job(2, 200.0, 10.0, 1, 100)]
    result = replay(jobs, [a100("all-1g.5gb", num_gpus=2)], sample_interval=30.0)
    assert states(result) == {1: ("finished", 60.0, 160.0), 2: ("finished", 200.0, 210.0)}
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))
    assert result.timeline["time"].to_list() == [30.0 * k for k in range(8)]
    assert result.timeline["mig_stranded_slices"].to_list() == [9, 9, 1, 1, 1, 1, 1, 1]


def test_second_gpu_changes_when_the_first_does_not_suffice() -> None:
    # The same node, three 3g jobs (100 s) at 0: R = {3g: 3}. GPU 0 -> all-3g.20gb, S = 2 < 3; GPU 1: S' = 2,
    # all-3g.20gb serves min(2, 3 - 2) = 1 > 0 -> all-3g.20gb, S = 4. Both down 0-60: 2 x 60 s = 120/3600
    # GPU-hours. At 60 jobs 1 and 2 take GPU 0's 3g@0 and 3g@4, job 3 GPU 1's 3g@0: all 60-160.
    jobs = [job(i, 0.0, 100.0, 1, 300) for i in (1, 2, 3)]
    result = replay(jobs, [a100("all-1g.5gb", num_gpus=2)])
    assert states(result) == {i: ("finished", 60.0, 160.0) for i in (1, 2, 3)}
    assert downtime(result) == (2, pytest.approx(120.0 / HOUR))


def test_gpus_of_two_nodes_in_node_order() -> None:
    # Node 0 all-3g.20gb (busy: job 1, 3g, 0-1000), node 1 all-1g.5gb. Job 2 (3g, 100 s) at 0 takes node 0's
    # second 3g (3g@4). Job 3 (3g, 100 s) at 1: R = {3g: 1} > S = 0; node 0's GPU is busy; node 1's is idle:
    # all-3g.20gb, down 1-61; job 3 runs 61-161 there.
    jobs = [job(1, 0.0, 1000.0, 1, 300), job(2, 0.0, 100.0, 1, 300), job(3, 1.0, 100.0, 1, 300)]
    result = replay(jobs, [a100("all-3g.20gb"), a100("all-1g.5gb")])
    assert states(result)[2] == ("finished", 0.0, 100.0)
    assert states(result)[3] == ("finished", 61.0, 161.0)
    assert downtime(result) == (1, pytest.approx(60.0 / HOUR))


# --- downtime ----------------------------------------------------------------------------------------------


def test_zero_downtime() -> None:
    # mig_reconfigure_s = 0: the controller after the cycle at 0 re-partitions the GPU (all-3g.20gb) with
    # downtime until 0; the next pass at 0 ends it (step 1b, a change) and runs the cycle: the job runs 0-100.
    # One re-partitioning, 0 GPU-hours. The sample at 0 is taken in the first pass (after the first cycle and
    # the controller): the GPU is then in downtime: 8 stranded slices, 0 allocated; at 30, 60, 90 the job
    # holds 3g@0 and 3g@4 is free: 0 stranded, 500 allocated.
    zero = replace(IDLE, mig_reconfigure_s=0.0)
    result = replay([job(1, 0.0, 100.0, 1, 400)], [a100("all-1g.5gb")], zero, sample_interval=30.0)
    assert states(result) == {1: ("finished", 0.0, 100.0)}
    assert downtime(result) == (1, 0.0)
    assert result.timeline["mig_stranded_slices"].to_list() == [8, 0, 0, 0]
    assert result.timeline["allocated_milli"].to_list() == [0, 500, 500, 500]


def test_custom_downtime() -> None:
    # mig_reconfigure_s = 45: the spec example's job runs 45-145; 45/3600 GPU-hours.
    result = replay([job(1, 0.0, 100.0, 1, 400)], [a100("all-1g.5gb")], replace(IDLE, mig_reconfigure_s=45.0))
    assert states(result) == {1: ("finished", 45.0, 145.0)}
    assert downtime(result) == (1, pytest.approx(45.0 / HOUR))


def test_run_does_not_end_during_a_downtime() -> None:
    # After the cycle at 0 nothing runs, nothing terminates and no arrival is left, but the GPU is down until
    # 60: the run goes on to 60 (step 1b, then the cycle) and the 3g job runs 60-70; end_time 70. (Samples
    # every hour: 60 is no sample time, the downtime's end alone makes it an event time.)
    result = replay([job(1, 0.0, 10.0, 1, 400)], [a100("all-1g.5gb")], sample_interval=3600.0)
    assert states(result) == {1: ("finished", 60.0, 70.0)}
    assert result.stats["end_time"] == 70.0


def test_downtime_cut_at_the_end_of_the_run() -> None:
    # Horizon 30 (samples every 10 s, so 30 is an event time and the last one processed): the downtime 0-60
    # counts up to 30 only: 30/3600 GPU-hours; the job never started: unfinished.
    result = replay([job(1, 0.0, 100.0, 1, 400)], [a100("all-1g.5gb")], horizon=30.0)
    assert states(result) == {1: ("unfinished", None, None)}
    assert result.stats["end_time"] == 30.0
    assert downtime(result) == (1, pytest.approx(30.0 / HOUR))


def test_no_reconfigure_keeps_static_layouts() -> None:
    # mig_reconfigure none (plain mixed): the 3g pod finds no 3g instance in all-1g.5gb: rejected.
    result = replay([job(1, 0.0, 100.0, 1, 400)], [a100("all-1g.5gb")], MIXED)
    assert states(result) == {1: ("rejected", None, None)}


# --- config errors (compile step: engine only) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "key"),
    [
        (replace(HAMI, mig_reconfigure=MigReconfigure.idle), "scheduler.mig_reconfigure"),
        (replace(IDLE, mig_reconfigure_s=-1.0), "scheduler.mig_reconfigure_s"),
        (replace(IDLE, mig_reconfigure_s=float("inf")), "scheduler.mig_reconfigure_s"),
        (replace(MIXED, mig_reconfigure_s=30.0), "scheduler.mig_reconfigure_s"),
        (replace(MIXED, mig_reconfigure_layouts=["all-balanced"]), "scheduler.mig_reconfigure_layouts"),
        (replace(IDLE, mig_reconfigure_layouts=["all-9g.99gb"]), "scheduler.mig_reconfigure_layouts"),
        (replace(IDLE, mig_reconfigure_layouts=["all-1g.5gb.me"]), "scheduler.mig_reconfigure_layouts"),
    ],
    ids=[
        "idle-without-mixed",
        "negative-s",
        "infinite-s",
        "s-without-idle",
        "layouts-without-idle",
        "unknown-config",
        "media-extension-config",
    ],
)
def test_refused_settings_name_the_key(policy: Policy, key: str) -> None:
    engine_only()
    nodes = [a100("all-enabled")] if policy.mig_strategy is HAMI.mig_strategy else [a100("all-1g.5gb")]
    with pytest.raises(InputError, match=key):
        engine_simulate(jobs_frame([job(1, 0.0, 10.0, 1, 100)]), nodes_frame(nodes), policy)
