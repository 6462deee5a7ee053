"""KAI's minruntime plugin: ``preemptMinRuntime`` / ``reclaimMinRuntime`` protect a job from eviction.

NVIDIA/KAI-Scheduler ``pkg/scheduler/plugins/minruntime`` (``minruntime.go``: a victim is filtered out while
now is before its last start plus the min-runtime; ``resolver.go``: which queue's value applies);
docs/engine/queues/kai.md, "KAI reclaim and preempt". End-to-end cases run on the engine and on its plain
twin; nodes have 4 GPUs, the termination grace is 30 s.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame
from tests.test_kai_evict import BOTH, acting, gpu, nodes
from tests.test_kai_queues import manifests, queue
from tests.test_kueue_quota import both, job, starts
from tests.test_queue_tree import error_of
from tests.test_volcano_reclaim import evictions

from gpureplay.errors import InputError
from gpureplay.queues.kai_queues import MinRuntimeArgs, min_runtimes
from gpureplay.queues.manifests import read_manifests
from gpureplay.queues.tree import KaiQueue
from gpureplay.replay.simulate import simulate
from gpureplay.schedulers.policy import KaiReclaimResolveMethod, QueueModel, QuotaSource


def guarded(text: str, preempt: str | None = None, reclaim: str | None = None) -> str:
    """A KAI queue manifest with ``preemptMinRuntime`` / ``reclaimMinRuntime`` added to its spec."""
    extra = (f"  preemptMinRuntime: {preempt}\n" if preempt else "") + (
        f"  reclaimMinRuntime: {reclaim}\n" if reclaim else ""
    )
    return text.replace("spec:\n", "spec:\n" + extra, 1)


@pytest.mark.parametrize(
    ("on", "evicted_at", "start"),
    [(None, 10.0, 40.0), ("vc-b", 60.0, 90.0), ("vc-a", 10.0, 40.0)],
)
def test_reclaim_waits_for_the_victims_queue_min_runtime(
    tmp_path: Path, on: str | None, evicted_at: float, start: float
) -> None:
    """vc-a and vc-b, quota 2 each (test_kai_evict's first case): vc-b's four jobs fill the node at 0,
    vc-a's jobs 5 and 6 reclaim jobs 4 and 3 at 10 and start at 40. With ``reclaimMinRuntime: 60s`` on
    vc-b, the victims' top-level queue (the two queues have different top-level queues: KAI's LCA method
    takes the victim's), jobs 3 and 4 are protected until 60: reclaim finds no victim at 10, the replay
    runs a session when the protection ends (KAI's periodic sessions would), and the jobs start at 90.
    Set on vc-a, the reclaimer, it protects nothing here."""
    a, b = queue("vc-a", gpu(2)), queue("vc-b", gpu(2))
    if on == "vc-a":
        a = guarded(a, reclaim="60s")
    elif on == "vc-b":
        b = guarded(b, reclaim="1m")
    policy = acting(manifests(tmp_path, a, b))
    rows = [job(i, 0.0, "vc-b", 1, 1, duration=1000.0) for i in (1, 2, 3, 4)]
    rows += [job(5, 10.0, "vc-a", 1, 1), job(6, 10.0, "vc-a", 1, 1)]
    for replay in both(jobs_frame(rows), nodes(), policy):
        assert evictions(replay) == {4: 5, 3: 6}
        assert starts(replay)[5] == starts(replay)[6] == start
        first = replay.attempts.filter(pl.col("job_id") == 4).sort("attempt").row(0, named=True)
        assert (first["evicted"], first["end"]) == (evicted_at, evicted_at + 30.0)


def test_preempt_waits_for_the_queues_preempt_min_runtime(tmp_path: Path) -> None:
    """test_kai_evict's preempt case with ``preemptMinRuntime: 100s`` on the queue: jobs 2 and 3 (started
    at 0) are protected until 100, so job 5 (at 10) evicts them at 100 and starts at 130; job 1 and 4 are
    never victims (non-preemptible). A ``reclaimMinRuntime`` does not protect against preempt."""
    rows = [job(i, 0.0, "vc-a", 1, 1, duration=1000.0) for i in (1, 2, 3, 4)]
    rows.append(job(5, 10.0, "vc-a", 1, 2))
    frame = jobs_frame(rows).with_columns(
        priority=pl.Series([100, 50, 50, 100, 125], dtype=pl.Int32),
        preemptible=pl.Series([False, True, True, False, False]),
    )
    protected = acting(
        manifests(tmp_path, guarded(queue("vc-a", gpu(4)), preempt="100s")), "allocate, preempt"
    )
    for replay in both(frame, nodes(), protected):
        assert evictions(replay) == {3: 5, 2: 5}
        assert starts(replay)[5] == 130.0
    other = acting(manifests(tmp_path, guarded(queue("vc-a", gpu(4)), reclaim="100s")), BOTH)
    for replay in both(frame, nodes(), other):
        assert starts(replay)[5] == 40.0


def tree(*queues: KaiQueue) -> tuple[list[float], list[list[float]]]:
    preempt, reclaim = min_runtimes(list(queues), sum(1 for q in queues if q.name.startswith("leaf")))
    return preempt.tolist(), reclaim.tolist()


def test_the_resolver_walks_the_tree_as_kai_does() -> None:
    """``resolver.go``. Leaves leaf-a, leaf-b under dept (reclaim 60 s, preempt 30 s), leaf-c top-level
    (reclaim 10 s). Preempt: the victim's queue, else its nearest ancestor (a, b: dept's 30; c: none, 0).
    Reclaim between a and b: their lowest common ancestor is dept; from its child on the victim's path (the
    victim's leaf, unset) up, dept's 60. Reclaim of c's jobs by a: different top-level queues, c's own 10;
    of a's jobs by c: a's top-level queue dept, 60. With leaf-b setting 0 explicitly, a reclaims b freely."""
    dept = KaiQueue("dept", reclaim_min_runtime=60.0, preempt_min_runtime=30.0)
    a = KaiQueue("leaf-a", parent_queue="dept")
    b = KaiQueue("leaf-b", parent_queue="dept")
    c = KaiQueue("leaf-c", reclaim_min_runtime=10.0)
    preempt, reclaim = tree(a, b, c, dept)
    assert preempt == [30.0, 30.0, 0.0]
    assert reclaim[0][1] == reclaim[1][0] == 60.0
    assert reclaim[0][2] == 10.0
    assert reclaim[2][0] == 60.0
    free_b = KaiQueue("leaf-b", parent_queue="dept", reclaim_min_runtime=0.0)
    assert tree(a, free_b, c, dept)[1][0][1] == 0.0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("5 minutes", "must be a duration such as 30s, 10m or 1h30m (found '5 minutes')"),
        ("-1m", "must not be negative (found '-1m')"),
        ("30", "must be a duration such as 30s, 10m or 1h30m (found 30)"),  # YAML reads a number
    ],
)
def test_bad_min_runtimes_are_refused_naming_the_field(value: str, says: str) -> None:
    text = guarded(queue("vc-a", gpu(2)), reclaim=value)
    assert error_of(text) == f"q.yaml, document 1, key 'spec.reclaimMinRuntime': {says}"


def test_the_philly_example_is_the_vc_quotas_with_an_hour_of_reclaim_protection() -> None:
    """examples/manifests/kai-philly-vcs-min-runtime: every Philly VC of the trace as a top-level queue,
    GPU quota = its real node count x 8 (0 for the 4 VCs the node list lacks), reclaimMinRuntime 1 h."""
    root = Path(__file__).resolve().parents[1]
    tree = read_manifests(root / "examples" / "manifests" / "kai-philly-vcs-min-runtime").tree
    nodes = dict(pl.read_csv(root / "traces" / "philly" / "philly_vc_nodes.csv").iter_rows())
    assert len(tree.kai_queues) == 15
    for q in tree.kai_queues:
        assert q.parent_queue is None
        assert (q.reclaim_min_runtime, q.preempt_min_runtime) == (3600.0, None)
        assert q.gpu.quota == nodes.get(q.name, 0) * 8


def test_the_plugins_defaults_fill_what_no_queue_sets() -> None:
    """The minruntime plugin's arguments (``resolver.go``): leaf-a, leaf-b under dept, leaf-c top-level,
    none setting a min-runtime; ``defaultPreemptMinRuntime`` 5 s, ``defaultReclaimMinRuntime`` 7 s.

    Preempt: 5 everywhere. Reclaim, ``lca``: across top-level queues (a or b vs c) the default reclaim 7; in
    dept's tree, where no queue from the child of the lowest common ancestor up sets one, the default
    reclaim 7 too (every KAI release from v0.6.0 to v0.13.0; the plugin's first commit fell back to the
    default *preempt* min-runtime there). ``queue``: the victim's path, else the default reclaim, 7
    everywhere; with dept's 60 s, 60 for its leaves' jobs and 7 for leaf-c's. Under ``lca`` with dept's 60 s
    too: within dept's tree the walk from the child of the lowest common ancestor up reaches dept (60), and
    from leaf-c, across top-level queues, the victim's top-level queue is dept (60); leaf-c's jobs 7."""
    dept = KaiQueue("dept")
    a, b = KaiQueue("leaf-a", parent_queue="dept"), KaiQueue("leaf-b", parent_queue="dept")
    c = KaiQueue("leaf-c")
    args = MinRuntimeArgs(default_preempt=5.0, default_reclaim=7.0)
    preempt, reclaim = min_runtimes([a, b, c, dept], 3, args)
    assert preempt.tolist() == [5.0, 5.0, 5.0]
    assert reclaim.tolist() == [[7.0] * 3] * 3
    _, reclaim = min_runtimes([a, b, c, KaiQueue("dept", reclaim_min_runtime=60.0)], 3, args)
    assert reclaim.tolist() == [[60.0, 60.0, 7.0]] * 3
    by_queue = replace(args, method=KaiReclaimResolveMethod.queue)
    assert min_runtimes([a, b, c, dept], 3, by_queue)[1].tolist() == [[7.0] * 3] * 3
    guarded_dept = KaiQueue("dept", reclaim_min_runtime=60.0)
    _, reclaim = min_runtimes([a, b, c, guarded_dept], 3, by_queue)
    assert reclaim[:, 0].tolist() == reclaim[:, 1].tolist() == [60.0] * 3
    assert reclaim[:, 2].tolist() == [7.0] * 3


@pytest.mark.parametrize("quotas", ["manifests", "derived"])
def test_a_default_reclaim_min_runtime_protects_as_a_queues_own_would(tmp_path: Path, quotas: str) -> None:
    """The first case with no queue setting one but ``kai_default_reclaim_min_runtime: 60``: vc-b's jobs 3
    and 4 are protected until 60, evicted then, and vc-a's jobs start at 90 — from manifests, and from
    derived quotas (GPU-time shares: every queue top-level, quota 2 each here), which set none."""
    policy = acting(manifests(tmp_path, queue("vc-a", gpu(2)), queue("vc-b", gpu(2))))
    if quotas == "derived":
        policy = replace(policy, quotas=QuotaSource.gpu_time_share, manifests=None)
    policy = replace(policy, kai_default_reclaim_min_runtime=60.0)
    rows = [job(i, 0.0, "vc-b", 1, 1, duration=100.0) for i in (1, 2, 3, 4)]
    rows += [job(5, 10.0, "vc-a", 1, 1, duration=200.0), job(6, 10.0, "vc-a", 1, 1, duration=200.0)]
    for replay in both(jobs_frame(rows), nodes(), policy):
        assert evictions(replay) == {4: 5, 3: 6}
        assert starts(replay)[5] == starts(replay)[6] == 90.0


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            {"kai_default_preempt_min_runtime": 30.0},
            "is read by KAI's preempt action: add it to scheduler.actions",
        ),
        ({"kai_default_reclaim_min_runtime": -1.0}, "must be seconds >= 0 (found -1)"),
        (
            {"kai_reclaim_resolve_method": KaiReclaimResolveMethod.queue, "actions": "allocate, preempt"},
            "is read by KAI's reclaim action: add it to scheduler.actions",
        ),
        (
            {"queues": QueueModel.kueue, "actions": None, "kai_default_reclaim_min_runtime": 60.0},
            "is KAI's minruntime plugin argument: read under queues: kai only",
        ),
    ],
)
def test_plugin_arguments_nothing_reads_are_refused(tmp_path: Path, change: dict, says: str) -> None:
    policy = replace(acting(manifests(tmp_path, queue("vc-a", gpu(2))), "allocate, reclaim"), **change)
    with pytest.raises(InputError) as caught:
        simulate(jobs_frame([job(1, 0.0, "vc-a", 1, 1)]), nodes(), policy)
    assert says in str(caught.value)
    key = next(k for k in change if k.startswith("kai_"))
    assert f"scheduler.{key}" in str(caught.value)
