"""KAI's queues (``scheduler.queues: kai``): hand-computed sessions on the engine and its reference.

docs/systems.md, "KAI Scheduler" (NVIDIA/KAI-Scheduler ``plugins/proportion/resource_division``,
``queue_order``,
``capacity_policy``, ``actions/allocate``); docs/engine/queues/kai.md, "KAI queues". Jobs run 100 s and
request no CPU or memory; nodes have 8 GPUs.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_quota import both, job, starts

from gpureplay.errors import InputError
from gpureplay.queues.kai_order import KaiQueueState, queue_before, within_capacity
from gpureplay.queues.kai_queues import generated_kai_queues, kai_preemptibility
from gpureplay.replay.simulate import simulate, warm_up
from gpureplay.schedulers.policy import Backfill, Policy, QueueModel, QueueOrder, QuotaSource

KAI = Policy(
    name="kai",
    queue_order=QueueOrder.priority,
    backfill=Backfill.skip,
    node_placement="best_fit",
    gpu_placement="best_fit",
    queues=QueueModel.kai,
    quotas=QuotaSource.manifests,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "manifests" / "kai" / "queues.yaml"
UNLIMITED = "{quota: -1, overQuotaWeight: 1, limit: -1}"


def queue(name: str, gpu: str, *, parent: str | None = None, priority: int | None = None) -> str:
    """A KAI ``Queue``; ``gpu`` is its ``resources.gpu`` as YAML (CPU and memory unlimited)."""
    spec = f"  parentQueue: {parent}\n" if parent else ""
    spec += f"  priority: {priority}\n" if priority is not None else ""
    return (
        f"apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata:\n  name: {name}\nspec:\n{spec}"
        f"  resources:\n    gpu: {gpu}\n    cpu: {UNLIMITED}\n    memory: {UNLIMITED}\n"
    )


def manifests(tmp_path: Path, *queues: str) -> Policy:
    path = tmp_path / "queues.yaml"
    path.write_text("---\n".join(queues))
    return replace(KAI, manifests=str(path))


def at(replay_queues: pl.DataFrame, t: float) -> dict[str, tuple[float, float, float, float]]:
    """``queue -> (usage_gpu, fair share GPUs, over-quota GPUs, dominant share)`` at sample time ``t``."""
    rows = replay_queues.filter(pl.col("time") == t).select(
        "queue", "usage_gpu", "fair_gpu", "borrowed_gpu", "share"
    )
    return {name: (used, fair, over, round(share, 6)) for name, used, fair, over, share in rows.iter_rows()}


def gpus(n: int) -> pl.DataFrame:
    return nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * n)


def test_the_example_tree_divides_with_flooring_and_allocates_by_kai_queue_order() -> None:
    """The shipped example (research: quota 16; team-vision quota 6, overQuotaWeight 2, limit 12; team-nlp
    quota 10, weight 1) on 24 GPUs, ten 2-GPU jobs in each team at 0.

    Division: research, alone at the top, asks 40: quota 16, then over quota its share of the 8 left (all of
    them: it is alone) is below its remaining request of 24, so floor(8) = 8: fair share 24. Its children:
    vision min(6, 12) = 6, nlp 10; 8 over quota, weights 2:1 with k = 1 give shares 8 x 4/6 = 5.33 and
    8 x 2/6 = 2.67: vision floor 5 (leftover 0.33), nlp 2 (0.67); the last GPU goes to the larger leftover,
    nlp. Fair shares: vision 11, nlp 13.

    Allocate (dominant share with the job: allocated + 2 over the allocatable share max(quota, fair)):
    nlp 2/13 < vision 2/11, then vision, nlp, vision, nlp, vision (4/11 < ... each time the smaller);
    at vision 6 its next job would pass its quota (8 > 6) while nlp's stays within (8 <= 10): nlp 8, 10;
    then neither within quota: vision 8/11 < nlp 12/13, vision 8, 10; then nlp 14/13 < vision 12/11:
    nlp 12, 14. The cluster is full: vision 10 GPUs, nlp 14, each over its fair share by 1 GPU only for
    nlp. Over quota: vision 10 - 6 = 4, nlp 14 - 10 = 4.
    """
    policy = replace(KAI, manifests=str(EXAMPLE))
    rows = [job(i, 0.0, "team-vision", 1, 2) for i in range(1, 11)]
    rows += [job(i, 0.0, "team-nlp", 1, 2) for i in range(11, 21)]
    for replay in both(jobs_frame(rows), gpus(3), policy):
        started = {j for j, t in starts(replay).items() if t == 0.0}
        assert started == {1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16, 17}
        assert at(replay.queues, 0.0) == {
            "team-nlp": (14.0, 13.0, 4.0, round(14 / 13, 6)),
            "team-vision": (10.0, 11.0, 4.0, round(10 / 11, 6)),
        }
        # nominal_gpu is the GPU quota (KAI's deserved share).
        quotas = replay.queues.filter(pl.col("time") == 0.0).select("queue", "nominal_gpu").rows()
        assert quotas == [("team-nlp", 10.0), ("team-vision", 6.0)]


def test_a_limit_holds_a_queue_back_on_an_idle_cluster(tmp_path: Path) -> None:
    """Queue a (quota 2, limit 4) alone on 16 GPUs: two 2-GPU jobs run, the third waits for one to end."""
    policy = manifests(tmp_path, queue("a", "{quota: 2, overQuotaWeight: 1, limit: 4}"))
    jobs = jobs_frame([job(i, 0.0, "a", 1, 2) for i in (1, 2, 3)])
    for replay in both(jobs, gpus(2), policy):
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 100.0}
        # Its fair share: quota 2, then over quota its requestable (6 capped by the limit: 4) less 2 fits
        # its share of the 14 left, so it gets 2 more: 4, not the cluster (KAI v0.13.0 gives a queue alone
        # at its level no more than it may request); the limit binds allocation too.
        assert at(replay.queues, 0.0)["a"][1] == 4.0


def test_non_preemptible_jobs_stay_within_the_quota(tmp_path: Path) -> None:
    """Queue a (quota 4) on 16 GPUs: three non-preemptible 2-GPU jobs (priority 125, KAI's inference) and
    a preemptible one (50). The third non-preemptible job would take non-preemptible use to 6 > 4: it
    waits, while the preemptible job runs over quota."""
    policy = manifests(tmp_path, queue("a", "{quota: 4, overQuotaWeight: 1, limit: -1}"))
    rows = [{**job(i, 0.0, "a", 1, 2), "priority": 125} for i in (1, 2, 3)]
    rows.append({**job(4, 0.0, "a", 1, 2), "priority": 50})
    for replay in both(jobs_frame(rows), gpus(2), policy):
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 100.0, 4: 0.0}


def test_a_higher_priority_level_takes_the_over_quota_resources_first(tmp_path: Path) -> None:
    """Top-level queues hi (priority 200) and lo (100), quota 2 each, on 16 GPUs; each asks for 10.

    Phase 1 gives each its quota (2); the 12 left go to the highest level first, where hi, alone, is given
    its remaining request (8 <= its share 12) and no more; lo, at the level below, gets floor(4) of the 4
    left: fair shares hi 10, lo 6. Allocate: both within quota with their first job, hi first by priority;
    then lo, the one still within quota; then neither is, and hi goes first by priority until its five jobs
    run; lo takes the rest. hi 10 GPUs, lo 6.
    """
    policy = manifests(
        tmp_path,
        queue("hi", "{quota: 2, overQuotaWeight: 1, limit: -1}", priority=200),
        queue("lo", "{quota: 2, overQuotaWeight: 1, limit: -1}", priority=100),
    )
    rows = [job(i, 0.0, "hi", 1, 2) for i in range(1, 6)] + [job(i, 0.0, "lo", 1, 2) for i in range(6, 11)]
    for replay in both(jobs_frame(rows), gpus(2), policy):
        shares = at(replay.queues, 0.0)
        assert shares["hi"][:2] == (10.0, 10.0) and shares["lo"][:2] == (6.0, 6.0)
        assert starts(replay) == {
            1: 0.0,
            2: 0.0,
            3: 0.0,
            4: 0.0,
            5: 0.0,
            6: 0.0,
            7: 0.0,
            8: 0.0,
            9: 100.0,
            10: 100.0,
        }


def test_the_queue_order_criteria_in_turn() -> None:
    """Each criterion of ``GetQueueOrderResult`` decides when the ones before it tie (GPU only)."""
    total = (100.0, 1e9, 1e9)

    def state(
        quota: float, fair: float, allocated: float, priority: int = 100, created: int = 0
    ) -> KaiQueueState:
        return KaiQueueState(
            quota=(quota, -1.0, -1.0),
            limit=(-1.0, -1.0, -1.0),
            fair=(fair, 0.0, 0.0),
            allocated=(allocated, 0.0, 0.0),
            non_preemptible=(0.0, 0.0, 0.0),
            priority=priority,
            created=created,
            parent=-1,
        )

    job = (2.0, 0.0, 0.0)
    # 1: over its fair share in every resource goes last, even at a higher priority; with CPU and memory
    # unused (0 < 0 is false) no queue is ever "over".
    over = replace(state(4, 10, 12, priority=200), fair=(10.0, 1.0, 1.0), allocated=(12.0, 2.0, 2.0))
    assert queue_before(state(4, 10, 12), job, over, job, total)
    # Over its fair share in GPUs only is not "over": priority decides (neither is within quota).
    assert queue_before(state(4, 10, 12, priority=200), job, state(4, 10, 8), job, total)
    # 2: within quota with the job first, even at a higher dominant share.
    assert queue_before(state(10, 10, 8), job, state(4, 20, 3), job, total)
    # 3: priority, when both are within (or both beyond) quota.
    assert queue_before(state(4, 10, 6, priority=200), job, state(4, 10, 4), job, total)
    # 5: the lower dominant share with the job: 4/20 < 4/10.
    assert queue_before(state(2, 20, 2), job, state(2, 10, 2), job, total)
    # 8: all equal: the older queue.
    assert queue_before(state(2, 10, 4, created=0), job, state(2, 10, 4, created=1), job, total)
    assert not queue_before(state(2, 10, 4, created=1), job, state(2, 10, 4, created=0), job, total)


def test_the_capacity_policy_walks_up_the_tree() -> None:
    """A parent's limit binds its children; a non-preemptible job keeps non-preemptible use within each
    quota; a parent's quota below the request binds nothing else (KAI v0.13.0 ``IsJobOverQueueCapacity``)."""

    def state(quota: float, limit: float, fixed: float, parent: int) -> KaiQueueState:
        return KaiQueueState(
            quota=(quota, -1.0, -1.0),
            limit=(limit, -1.0, -1.0),
            fair=(10.0, 0.0, 0.0),
            allocated=(8.0, 0.0, 0.0),
            non_preemptible=(fixed, 0.0, 0.0),
            priority=100,
            created=parent + 1,
            parent=parent,
        )

    queues = [state(4.0, -1.0, 3.0, 1), state(8.0, 10.0, 3.0, -1)]
    assert within_capacity(queues, 0, (2.0, 0.0, 0.0), True)
    assert not within_capacity(queues, 0, (4.0, 0.0, 0.0), True)  # the parent's limit: 8 + 4 > 10
    assert within_capacity(queues, 0, (1.0, 0.0, 0.0), False)  # 3 + 1 <= 4, and <= 8 at the parent
    assert not within_capacity(queues, 0, (2.0, 0.0, 0.0), False)  # the child's quota: 3 + 2 > 4
    queues[1] = state(1.0, -1.0, 0.0, -1)
    assert within_capacity(queues, 0, (2.0, 0.0, 0.0), True)  # larger than the parent's quota: preemptible
    assert not within_capacity(queues, 0, (2.0, 0.0, 0.0), False)  # non-preemptible: 0 + 2 > 1 at the parent


def test_a_department_quota_below_a_preemptible_job_does_not_hold_it(tmp_path: Path) -> None:
    """Department dept (quota 1 GPU) over team t (quota 1 GPU) on an idle 16-GPU cluster: two preemptible
    2-GPU jobs (priority 0) start at once; a non-preemptible one (priority 125) never does, its
    non-preemptible use 0 + 2 being above t's quota of 1 (KAI v0.13.0 ``IsJobOverQueueCapacity``: limits,
    and non-preemptible use within quota, nothing else; a parent's quota below the request refuses a job only
    in KAI's unmerged pull request #112).

    Fair shares (each alone at its level): dept asks 6, gets its quota 1, then its remaining 5 (<= its share
    of the 15 left): 6; t the same of dept's 6.
    """
    policy = manifests(
        tmp_path,
        queue("dept", "{quota: 1, overQuotaWeight: 1, limit: -1}"),
        queue("t", "{quota: 1, overQuotaWeight: 1, limit: -1}", parent="dept"),
    )
    rows = [job(1, 0.0, "t", 1, 2), {**job(2, 0.0, "t", 1, 2), "priority": 125}, job(3, 0.0, "t", 1, 2)]
    for replay in both(jobs_frame(rows), gpus(2), policy):
        assert starts(replay) == {1: 0.0, 2: None, 3: 0.0}
        assert at(replay.queues, 0.0)["t"][:3] == (4.0, 6.0, 3.0)


def test_derived_queues_are_top_level_with_gpu_quotas() -> None:
    queues = generated_kai_queues({"vc-b": 16.0, "vc-a": 8.0}, source="test")
    assert queues.names == ("vc-a", "vc-b") and queues.num_leaves == 2
    assert queues.quota[0].tolist() == [8.0, 16.0] and queues.quota[1].tolist() == [-1.0, -1.0]
    assert queues.limit.tolist() == [[-1.0, -1.0]] * 3 and queues.parent.tolist() == [-1, -1]


def test_preemptibility_follows_kais_priority_rule(caplog: pytest.LogCaptureFixture) -> None:
    jobs = jobs_frame(
        [{**job(1, 0.0, "a", 1, 1), "priority": 100}, {**job(2, 0.0, "a", 1, 1), "priority": 99}]
    )
    found = kai_preemptibility(jobs)
    assert found["preemptible"].to_list() == [False, True]
    assert "1 jobs' preemptible column disagrees" in caplog.text


def test_philly_vcs_replay_with_their_node_counts_as_quotas() -> None:
    jobs = jobs_frame([job(1, 0.0, "6214e9", 1, 8), job(2, 0.0, "ee9e8c", 2, 8)])
    policy = replace(KAI, quotas=QuotaSource.philly_vc_nodes, manifests=None)
    for replay in both(jobs, gpus(3), policy):
        assert starts(replay) == {1: 0.0, 2: 0.0}
        # Their quotas: 64 nodes each (x 8 GPUs).
        quotas = dict(replay.queues.filter(pl.col("time") == 0.0).select("queue", "nominal_gpu").rows())
        assert quotas == {"6214e9": 512.0, "ee9e8c": 512.0}


def test_an_unlimited_quota_has_no_nominal_gpus(tmp_path: Path) -> None:
    """Quota -1: no nominal GPUs, nothing over quota; the fair share is min(the cluster's 8, the request 2)
    and the 6 GPUs nobody asks for stay undivided (KAI v0.13.0 ``setDeservedResource``)."""
    policy = manifests(tmp_path, queue("a", "{quota: -1, overQuotaWeight: 1, limit: -1}"))
    for replay in both(jobs_frame([job(1, 0.0, "a", 1, 2)]), gpus(1), policy):
        row = replay.queues.filter(pl.col("time") == 0.0).row(0, named=True)
        assert row["nominal_gpu"] is None and row["borrowed_gpu"] == 0.0 and row["fair_gpu"] == 2.0


def test_a_job_in_a_parent_queue_or_an_unknown_queue_names_its_row(tmp_path: Path) -> None:
    policy = replace(KAI, manifests=str(EXAMPLE))
    jobs = jobs_frame([job(1, 0.0, "team-nlp", 1, 1), job(2, 0.0, "research", 1, 1), job(3, 0.0, "x", 1, 1)])
    with pytest.raises(InputError) as raised:
        simulate(jobs, gpus(1), policy)
    text = str(raised.value)
    assert "row 2" in text and "'research' is a parent queue" in text
    assert "row 3" in text and "'x' names no KAI Queue" in text


def test_volcano_manifests_are_refused_under_kai(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: a\nspec:\n  weight: 1\n"
    )
    with pytest.raises(InputError, match="needs KAI Queue manifests"):
        simulate(jobs_frame([job(1, 0.0, "a", 1, 1)]), gpus(1), replace(KAI, manifests=str(path)))


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"preemption": "priority"}, "scheduler.preemption", "KAI evicts by its own actions"),
        ({"fair_sharing": True}, "scheduler.fair_sharing", "Kueue's"),
        ({"overcommit_factor": 2.0}, "scheduler.overcommit_factor", "queues: volcano only"),
        ({"backfill_depth": 3}, "scheduler.backfill", "KAI's allocate action drops"),
    ],
)
def test_settings_kai_does_not_read_are_refused(change: dict[str, object], key: str, words: str) -> None:
    from gpureplay.schedulers.policy import Preemption

    fields = {k: Preemption[v] if k == "preemption" else v for k, v in change.items()}  # type: ignore[index]
    policy = replace(KAI, **{"quotas": QuotaSource.gpu_time_share, **fields})  # type: ignore[arg-type]
    with pytest.raises(InputError) as raised:
        simulate(jobs_frame([job(1, 0.0, "a", 1, 1)]), gpus(1), policy)
    assert key in str(raised.value) and words in str(raised.value)


def test_the_warm_up_replay_runs_under_kai_manifests() -> None:
    """The one-job warm-up (queue ``default``, which the manifests do not name) stands in derived queues: an
    error about the real jobs' queues must not be pre-empted by one about the warm-up's."""
    warm_up(replace(KAI, manifests=str(EXAMPLE)))
