"""Volcano's queues (``scheduler.queues: volcano``): hand-computed sessions on the engine and its reference.

docs/systems.md, "Volcano" (volcano-sh/volcano ``plugins/proportion/proportion.go``,
``plugins/overcommit/overcommit.go``, ``actions/enqueue/enqueue.go``, ``actions/allocate/allocate.go``);
docs/engine/queues/volcano.md, "Volcano queues". Jobs run 100 s; nodes have 8 GPUs.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_quota import both, job, starts

from gpureplay.errors import InputError
from gpureplay.queues.fair_share import volcano_proportion
from gpureplay.queues.volcano_queues import generated_volcano_queues
from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import Backfill, Policy, QueueModel, QueueOrder, QuotaSource

VOLCANO = Policy(
    name="volcano",
    queue_order=QueueOrder.priority,
    backfill=Backfill.skip,
    node_placement="best_fit",
    gpu_placement="best_fit",
    queues=QueueModel.volcano,
    quotas=QuotaSource.manifests,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "manifests" / "volcano" / "queues.yaml"


def queue(name: str, **spec: object) -> str:
    """A Volcano ``Queue`` manifest; ``spec`` values are YAML text (``capability="{nvidia.com/gpu: 8}"``)."""
    lines = "".join(f"  {k}: {v}\n" for k, v in spec.items()) or "  weight: 1\n"
    return (
        f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: {name}\nspec:\n{lines}"
    )


def manifests(tmp_path: Path, *queues: str, **policy: object) -> Policy:
    path = tmp_path / "queues.yaml"
    path.write_text("---\n".join(queues))
    return replace(VOLCANO, manifests=str(path), **policy)  # type: ignore[arg-type]


def at(replay_queues: pl.DataFrame, t: float) -> dict[str, tuple[float, float, float]]:
    """``queue -> (usage_gpu, nominal_gpu, share)`` at sample time ``t``."""
    rows = replay_queues.filter(pl.col("time") == t).select("queue", "usage_gpu", "nominal_gpu", "share")
    return {name: (used, deserved, share) for name, used, deserved, share in rows.iter_rows()}


def test_the_example_queues_divide_the_cluster_by_weight_capability_and_guarantee() -> None:
    """The shipped example (training 4, inference 2 capped at 8 GPUs with 2 guaranteed, batch 1) on 32 GPUs.

    Requests at 0: training ten 4-GPU jobs (40), inference three (12), batch one 2-GPU job. realCapability:
    training and batch 32 - 2 = 30, inference min(8, 32) = 8. Water-filling (remaining 32, weights 7):
    round 1 training 32 x 4/7 = 18.29, inference min(9.14, 8) = 8, batch min(4.57, 2) = 2 (met);
    remaining 3.71; round 2 (weights 6) training + 2.48 = 20.76, inference stays 8 (met); remaining 1.24;
    round 3 training + 1.24 = 22. Deserved: training 22, inference 8, batch 2.

    Enqueue (overcommit 1.2: 38.4 GPUs; queues tie at share 0, so by name): batch's job; inference's first
    two (a third would take it to 12 > its realCapability 8); training's first seven (4 + 8 + 28 = 40 >
    38.4 for the eighth). Allocate, lowest share first: batch (2 of 2: overused), inference 4 (share 0.5),
    training 4, 8, 12 (0.55), inference 8 (overused), training 16, 20; a sixth training job would pass
    its deserved 22: dropped. At 0: batch 2, inference 8, training 20 GPUs; 2 GPUs stay idle.
    """
    policy = replace(VOLCANO, manifests=str(EXAMPLE))
    rows = [job(i, 0.0, "training", 1, 4) for i in range(1, 11)]
    rows += [job(i, 0.0, "inference", 1, 4) for i in range(11, 14)] + [job(14, 0.0, "batch", 1, 2)]
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 4)
    for replay in both(jobs_frame(rows), nodes, policy):
        assert at(replay.queues, 0.0) == {
            "batch": (2.0, 2.0, 1.0),
            "inference": (8.0, 8.0, 1.0),
            "training": (20.0, 22.0, 0.909091),
        }
        started = starts(replay)
        assert [j for j, t in started.items() if t == 0.0] == [1, 2, 3, 4, 5, 11, 12, 14]
    # The plain water-filling gives the same deserved shares.
    total = {"nvidia.com/gpu": 32_000.0, "cpu": 0.0, "memory": 0.0}
    deserved = volcano_proportion(
        total,
        [4, 2, 1],
        [{"nvidia.com/gpu": 40_000.0}, {"nvidia.com/gpu": 12_000.0}, {"nvidia.com/gpu": 2_000.0}],
        [None, {"nvidia.com/gpu": 8_000.0}, None],
        [{}, {"nvidia.com/gpu": 2_000.0}, {}],
    )
    assert [round(d["nvidia.com/gpu"], 6) for d in deserved] == [22_000.0, 8_000.0, 2_000.0]


def test_the_overcommit_factor_gates_which_jobs_may_be_allocated(tmp_path: Path) -> None:
    """Queues a (weight 3) and b (weight 1) on 16 GPUs; a submits five 4-GPU jobs, b three, all at 0.

    Deserved: a 12, b 4. With overcommit-factor 1.2 (19.2 GPUs) enqueue takes a first (shares tie at 0,
    then by name): a's four jobs fill 16, the fifth and b's first would pass 19.2. Allocate: a gets 12 and is
    overused; b has no Inqueue job, so 4 GPUs stay idle until a's jobs end at 100. With factor 2 (32 GPUs)
    every job is Inqueue: b's first job starts at 0 beside a's three.
    """
    rows = [job(i, 0.0, "a", 1, 4) for i in range(1, 6)] + [job(i, 0.0, "b", 1, 4) for i in range(6, 9)]
    jobs = jobs_frame(rows)
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    policy = manifests(tmp_path, queue("a", weight=3), queue("b", weight=1))
    for replay in both(jobs, nodes, policy):
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 100.0, 5: 100.0, 6: 100.0, 7: 100.0, 8: 200.0}
        assert at(replay.queues, 0.0) == {"a": (12.0, 12.0, 1.0), "b": (0.0, 4.0, 0.0)}
    for replay in both(jobs, nodes, replace(policy, overcommit_factor=2.0)):
        assert [j for j, t in starts(replay).items() if t == 0.0] == [1, 2, 3, 6]


def test_a_higher_priority_queue_is_enqueued_and_allocated_first(tmp_path: Path) -> None:
    """Queues a and z (weight 1 each; z has priority 1) each submit two 4-GPU jobs at 0 on 8 GPUs.

    Deserved: 4 each. With overcommit-factor 1 (8 GPUs to enqueue) z goes first: both its jobs are Inqueue
    (8), a's are not (12 > 8). Allocate: z's first job (4 of 4: overused); a has nothing Inqueue, so 4 GPUs
    stay idle. At 100: z's second job and a's first are Inqueue; shares tie at 0 and z goes first by
    priority; both start. a's second starts at 200. Without the priority, a (first by name) leads instead.
    """
    rows = [job(1, 0.0, "a", 1, 4), job(2, 0.0, "a", 1, 4), job(3, 0.0, "z", 1, 4), job(4, 0.0, "z", 1, 4)]
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    policy = manifests(
        tmp_path, queue("a", weight=1), queue("z", weight=1, priority=1), overcommit_factor=1.0
    )
    for replay in both(jobs_frame(rows), nodes, policy):
        assert at(replay.queues, 0.0) == {"a": (0.0, 4.0, 0.0), "z": (4.0, 4.0, 1.0)}
        assert starts(replay) == {1: 100.0, 2: 200.0, 3: 0.0, 4: 100.0}
    policy = manifests(tmp_path, queue("a", weight=1), queue("z", weight=1), overcommit_factor=1.0)
    for replay in both(jobs_frame(rows), nodes, policy):
        assert starts(replay) == {1: 0.0, 2: 100.0, 3: 100.0, 4: 200.0}


def test_a_job_beyond_its_queues_deserved_share_is_passed_over(tmp_path: Path) -> None:
    """On 16 GPUs queue a (weight 1) submits 8-GPU then 2-GPU jobs; queue b (weight 3) two 8-GPU jobs.

    Deserved: a 16 x 1/4 = 4, b 12 (nothing left). With overcommit-factor 2 all four are Inqueue (each
    queue's Inqueue requests stay within realCapability 16). Allocate: a's 8-GPU job is beyond its 4:
    dropped for the session, and a's next job (2 GPUs) is taken (Volcano's default dequeue strategy,
    traverse); b's first (8 of 12); b's second would pass 12. At 100 the two 8-GPU jobs are all that is
    asked for: a 8, b 8, and both start.
    """
    rows = [job(1, 0.0, "a", 1, 8), job(2, 0.0, "a", 1, 2), job(3, 0.0, "b", 1, 8), job(4, 0.0, "b", 1, 8)]
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 2)
    policy = manifests(tmp_path, queue("a", weight=1), queue("b", weight=3), overcommit_factor=2.0)
    for replay in both(jobs_frame(rows), nodes, policy):
        assert starts(replay) == {1: 100.0, 2: 0.0, 3: 0.0, 4: 100.0}
        assert at(replay.queues, 0.0) == {"a": (2.0, 4.0, 0.5), "b": (8.0, 12.0, 0.666667)}


def test_a_queues_inqueue_jobs_stay_within_its_real_capability(tmp_path: Path) -> None:
    """On 8 GPUs, queue a submits an 8-GPU job and a 2-GPU job, queue b a 2-GPU job (weights 1, 1).

    Deserved: a 6, b 2. Enqueue (factor 2, so the overcommit plugin allows 16): a's 8-GPU job is Inqueue,
    its 2-GPU job is not: the proportion plugin's enqueue test counts a's Inqueue 8 GPUs against its
    realCapability 8. Allocate: a's 8-GPU job is beyond 6 (dropped); b's starts. At 100 a's 8-GPU job has
    the cluster; the 2-GPU job is enqueued only in the session after it started (its own test ran first,
    with the 8-GPU job still Inqueue) and starts when it ends, at 200.
    """
    rows = [job(1, 0.0, "a", 1, 8), job(2, 0.0, "a", 1, 2), job(3, 0.0, "b", 1, 2)]
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}])
    policy = manifests(tmp_path, queue("a"), queue("b"), overcommit_factor=2.0)
    for replay in both(jobs_frame(rows), nodes, policy):
        assert starts(replay) == {1: 100.0, 2: 200.0, 3: 0.0}


def test_derived_quotas_become_weights() -> None:
    queues = generated_volcano_queues(
        {"vc-a": 655.4, "vc-b": 0.0, "vc-c": 1e6}, overcommit=1.2, source="test"
    )
    assert queues.names == ("vc-a", "vc-b", "vc-c")
    assert queues.weight.tolist() == [655, 1, 65535]


def test_philly_vcs_replay_with_their_node_counts_as_weights(tmp_path: Path) -> None:
    jobs = jobs_frame([job(1, 0.0, "6214e9", 1, 8), job(2, 0.0, "ee9e8c", 2, 8)])
    nodes = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 3)
    policy = replace(VOLCANO, quotas=QuotaSource.philly_vc_nodes, manifests=None)
    for replay in both(jobs, nodes, policy):
        assert starts(replay) == {1: 0.0, 2: 0.0}
        # Deserved in proportion to the VCs' nodes among the two VCs with jobs, capped by their requests.
        shares = at(replay.queues, 0.0)
        assert shares["6214e9"][1] == 8.0 and shares["ee9e8c"][1] == 16.0


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ({"deserved": "{nvidia.com/gpu: 4}"}, "spec.deserved", "capacity plugin"),
        ({"parent": "root"}, "spec.parent", "capacity plugin"),
        ({"weight": 0}, "spec.weight", "must be in 1..65535"),
        ({"capability": "{example.com/fpga: 1}"}, "spec.capability.example.com/fpga", "cannot request"),
    ],
)
def test_unmodelled_or_wrong_queue_fields_are_errors(
    tmp_path: Path, spec: dict[str, object], field: str, words: str
) -> None:
    policy = manifests(tmp_path, queue("a", **spec))
    with pytest.raises(InputError) as raised:
        simulate(
            jobs_frame([job(1, 0.0, "a", 1, 1)]), nodes_frame([{"gpu_model": "V100", "num_gpus": 8}]), policy
        )
    text = str(raised.value)
    assert field in text and words in text and "queues.yaml" in text


def test_a_job_in_an_unknown_queue_names_its_row(tmp_path: Path) -> None:
    policy = manifests(tmp_path, queue("a"))
    jobs = jobs_frame([job(1, 0.0, "a", 1, 1), job(2, 0.0, "b", 1, 1)])
    with pytest.raises(InputError) as raised:
        simulate(jobs, nodes_frame([{"gpu_model": "V100", "num_gpus": 8}]), policy)
    assert "row 2" in str(raised.value) and "'b' names no Volcano Queue" in str(raised.value)


def test_the_default_queue_exists_without_a_manifest(tmp_path: Path) -> None:
    policy = manifests(tmp_path, queue("a", weight=3))
    jobs = jobs_frame([job(1, 0.0, "a", 1, 4), job(2, 0.0, "default", 1, 4)])
    for replay in both(jobs, nodes_frame([{"gpu_model": "V100", "num_gpus": 8}]), policy):
        assert at(replay.queues, 0.0) == {"a": (4.0, 4.0, 1.0), "default": (4.0, 4.0, 1.0)}


def test_kueue_manifests_are_refused_under_volcano(tmp_path: Path) -> None:
    kueue = (Path(__file__).resolve().parents[1] / "examples" / "manifests" / "kueue").resolve()
    policy = replace(VOLCANO, manifests=str(kueue))
    with pytest.raises(InputError, match="needs Volcano Queue manifests"):
        simulate(
            jobs_frame([job(1, 0.0, "a", 1, 1)]), nodes_frame([{"gpu_model": "V100", "num_gpus": 8}]), policy
        )


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"overcommit_factor": 0.5}, "scheduler.overcommit_factor", "must be a number >= 1"),
        ({"fair_sharing": True}, "scheduler.fair_sharing", "Kueue's"),
        ({"reclaim_within_cohort": "any"}, "scheduler.reclaim_within_cohort", "Kueue's"),
        ({"preemption": "priority"}, "scheduler.preemption", "within a queue: 'enqueue, allocate, preempt"),
        (
            {"queues": "kueue", "preemptable_plugins": "priority"},
            "scheduler.preemptable_plugins",
            "is read under queues: volcano only",
        ),
        (
            {"actions": "enqueue, allocate, shuffle, backfill"},
            "scheduler.actions",
            "shuffle action is not modelled",
        ),
        (
            {"queues": "kueue", "overcommit_factor": 2.0},
            "scheduler.overcommit_factor",
            "queues: volcano only",
        ),
        (
            {"queues": "none", "quotas": "none", "overcommit_factor": 2.0},
            "scheduler.overcommit_factor",
            "volcano",
        ),
    ],
)
def test_settings_volcano_does_not_read_are_refused(change: dict[str, object], key: str, words: str) -> None:
    from gpureplay.schedulers.policy import Preemption, QueueModel, ReclaimWithinCohort

    enums = {
        "preemption": Preemption,
        "queues": QueueModel,
        "quotas": QuotaSource,
        "reclaim_within_cohort": ReclaimWithinCohort,
    }
    fields = {k: enums[k][v] if k in enums else v for k, v in change.items()}  # type: ignore[index]
    policy = replace(VOLCANO, **{"quotas": QuotaSource.gpu_time_share, **fields})  # type: ignore[arg-type]
    with pytest.raises(InputError) as raised:
        simulate(
            jobs_frame([job(1, 0.0, "a", 1, 1)]), nodes_frame([{"gpu_model": "V100", "num_gpus": 8}]), policy
        )
    assert key in str(raised.value) and words in str(raised.value)
