"""Kueue ResourceFlavors: flavor assignment and fungibility, quota per flavor, node selection by flavor.

docs/systems.md, "Kueue" (kubernetes-sigs/kueue ``flavorassigner.go`` ``findFlavorForPodSets``,
``hierarchical_preemption.go`` ``FindHeightOfLowestSubtreeThatFits``); docs/engine/queues/kueue.md, "Kueue
quotas". Every scenario is hand-computed and runs on the engine and on its reference twin.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from tests.reference.simulator import simulate as reference_simulate
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_kueue_quota import KUEUE

from gpureplay.config import compose_config
from gpureplay.errors import InputError
from gpureplay.experiment import prepare_inputs
from gpureplay.queues.kueue_quota import assign_flavors, borrow_height, manifest_quotas
from gpureplay.queues.manifests import read_manifests
from gpureplay.queues.tree import describe_tree
from gpureplay.replay.simulate import Replay, simulate
from gpureplay.schedulers.policy import (
    KueueAdmission,
    Policy,
)

#: GPU Feature Discovery's product labels: the catalog matches them to the node list's A100-80GB and V100.
FLAVORS = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: a100
spec:
  nodeLabels:
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: v100
spec:
  nodeLabels:
    nvidia.com/gpu.product: Tesla-V100-SXM2-16GB
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: default-flavor
"""

#: One A100 node and one V100 node of 8 GPUs each.
NODES = nodes_frame([{"gpu_model": "A100-80GB", "num_gpus": 8}, {"gpu_model": "V100", "num_gpus": 8}])


def cluster_queue(
    name: str, gpus: dict[str, int], cohort: str | None = None, extra: str = "", cpu_group: int | None = None
) -> str:
    """A ClusterQueue whose GPUs come from ``gpus`` (flavor -> nominal GPUs, in the order tried);
    ``cpu_group``: CPUs in a second resource group of the default flavor."""
    text = f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n"
    if cohort:
        text += f"  cohort: {cohort}\n"
    text += extra
    text += '  resourceGroups:\n  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n'
    for flavor, amount in gpus.items():
        text += f"    - name: {flavor}\n      resources:\n      - name: nvidia.com/gpu\n"
        text += f"        nominalQuota: {amount}\n"
    if cpu_group is not None:
        text += '  - coveredResources: ["cpu"]\n    flavors:\n    - name: default-flavor\n      resources:\n'
        text += f"      - name: cpu\n        nominalQuota: {cpu_group}\n"
    return text


def manifests(tmp_path: Path, *queues: str, **change: Any) -> Policy:
    path = tmp_path / "queues.yaml"
    path.write_text("---\n".join([FLAVORS, *queues]))
    return replace(KUEUE, manifests=str(path), **change)


def both(jobs: pl.DataFrame, policy: Policy, nodes: pl.DataFrame = NODES) -> list[Replay]:
    return [
        simulate(jobs, nodes, policy, debug=True, sample_interval=10.0),
        reference_simulate(jobs, nodes, policy, debug=True, sample_interval=10.0),
    ]


def starts(replay: Replay) -> dict[int, float | None]:
    return dict(replay.jobs.select("job_id", "start_time").iter_rows())


def job(job_id: int, t: float, queue: str, gpus: int, duration: float = 100.0, cpu: int = 0) -> dict:
    return {
        "job_id": job_id,
        "submit_time": t,
        "duration": duration,
        "num_pods": 1,
        "gpu_milli": gpus * 1000,
        "cpu_milli": cpu,
        "queue": queue,
        "priority": 0,
    }


def test_a_flavor_places_its_jobs_on_the_nodes_it_selects_only(tmp_path: Path) -> None:
    """team's quota is 16 GPUs of flavor v100 only: its second 8-GPU job waits for the V100 node (100),
    although the A100 node is idle. Kueue puts the flavor's nodeLabels into the pods' node selector."""
    policy = manifests(tmp_path, cluster_queue("team", {"v100": 16}))
    jobs = jobs_frame([job(1, 0.0, "team", 8), job(2, 0.0, "team", 8)])
    for replay in both(jobs, policy):
        assert starts(replay) == {1: 0.0, 2: 100.0}


def test_a_groups_flavors_are_tried_in_order(tmp_path: Path) -> None:
    """team holds 8 A100 then 8 V100 GPUs of quota: job 1 takes a100, job 2 (a100 full) v100, both at 0;
    job 3 waits for a flavor's quota (100, when both end). The usage of every flavor counts in
    queues.parquet: 16 GPUs used of a nominal 16, nothing borrowed."""
    policy = manifests(tmp_path, cluster_queue("team", {"a100": 8, "v100": 8}))
    jobs = jobs_frame([job(1, 0.0, "team", 8), job(2, 0.0, "team", 8), job(3, 0.0, "team", 8)])
    for replay in both(jobs, policy):
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 100.0}
        first = replay.queues.filter(pl.col("time") == 0.0)
        assert first.select("usage_gpu", "nominal_gpu", "borrowed_gpu").rows() == [(16.0, 16.0, 0.0)]


@pytest.mark.parametrize(
    ("when_can_borrow", "expected"),
    [("MayStopSearch", {1: 0.0, 2: 100.0}), ("TryNextFlavor", {1: 0.0, 2: 1.0})],
)
def test_when_can_borrow_decides_between_borrowing_and_the_next_flavor(
    tmp_path: Path, when_can_borrow: str, expected: dict[int, float]
) -> None:
    """team-a: a100 4, v100 8; team-b: a100 4; one cohort. team-a's 8-GPU job fits a100 only by borrowing
    team-b's 4 (borrowing level 1) and v100 without borrowing.

    ``MayStopSearch`` (the default) stops at a100: team-b's 4-GPU job at 1 finds its quota lent and waits
    for job 1 (100). ``TryNextFlavor`` goes on to v100: team-b's job starts at 1.
    """
    fungibility = f"  flavorFungibility:\n    whenCanBorrow: {when_can_borrow}\n"
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", {"a100": 4, "v100": 8}, cohort="c", extra=fungibility),
        cluster_queue("team-b", {"a100": 4}, cohort="c"),
    )
    jobs = jobs_frame([job(1, 0.0, "team-a", 8), job(2, 1.0, "team-b", 4)])
    for replay in both(jobs, policy):
        assert starts(replay) == expected


def test_a_cohort_lends_each_flavors_quota_for_that_flavor_only(tmp_path: Path) -> None:
    """team-a (a100 8) and team-b (v100 8) share a cohort: team-b's idle V100 quota is no quota for
    team-a's A100 jobs, so job 2 waits for job 1 (Kueue's quotas are per flavor and resource)."""
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", {"a100": 8}, cohort="c"),
        cluster_queue("team-b", {"v100": 8}, cohort="c"),
    )
    jobs = jobs_frame([job(1, 0.0, "team-a", 8), job(2, 0.0, "team-a", 8)])
    for replay in both(jobs, policy):
        assert starts(replay) == {1: 0.0, 2: 100.0}


def test_every_resource_group_needs_a_flavor(tmp_path: Path) -> None:
    """GPUs from a100 or v100, CPUs from a second group (10 CPUs of the default flavor): job 2 finds GPU
    quota in v100 but its 6 CPUs do not fit beside job 1's 6, so it waits (100); job 3 (no CPU) starts
    on v100 at 0."""
    policy = manifests(tmp_path, cluster_queue("team", {"a100": 8, "v100": 8}, cpu_group=10))
    jobs = jobs_frame(
        [job(1, 0.0, "team", 8, cpu=6000), job(2, 0.0, "team", 8, cpu=6000), job(3, 1.0, "team", 8)]
    )
    for replay in both(jobs, policy):
        assert starts(replay) == {1: 0.0, 2: 100.0, 3: 1.0}


def test_admission_by_quota_places_pods_on_the_flavors_nodes(tmp_path: Path) -> None:
    """Under ``kueue_admission: quota`` kube-scheduler places the admitted pods: job 2 is admitted at 0 on
    v100 quota (16 GPUs of it), and its pod waits for the V100 node although the A100 node is idle."""
    policy = manifests(tmp_path, cluster_queue("team", {"v100": 16}), kueue_admission=KueueAdmission.quota)
    jobs = jobs_frame([job(1, 0.0, "team", 8), job(2, 0.0, "team", 8)])
    for replay in both(jobs, policy):
        assert starts(replay) == {1: 0.0, 2: 100.0}


def test_the_flavor_assigner_on_hand_computed_usage(tmp_path: Path) -> None:
    """The plain statement: the flavor slot per resource (GPU, CPU, memory) and the borrowing level."""
    path = tmp_path / "queues.yaml"
    path.write_text(
        "---\n".join(
            [
                FLAVORS,
                cluster_queue("team-a", {"a100": 4, "v100": 8}, cohort="c"),
                cluster_queue("team-b", {"a100": 4}, cohort="c"),
            ]
        )
    )
    jobs = jobs_frame([job(1, 0.0, "team-a", 1), job(2, 0.0, "team-b", 1)])
    quotas = manifest_quotas(read_manifests(path), jobs, ["A100-80GB", "V100"], str(path))
    assert quotas.flavors == ("a100", "v100")
    assert quotas.flavor_models == (frozenset({"A100-80GB"}), frozenset({"V100"}))
    idle = [[0, 0] for _ in range(quotas.rows)]
    a100_gpu, v100_gpu = 0, 3  # quota rows: 3 x flavor slot + resource
    assert borrow_height(quotas, idle, 0, a100_gpu, 4000) == 0
    assert borrow_height(quotas, idle, 0, a100_gpu, 8000) == 1
    assert borrow_height(quotas, idle, 0, v100_gpu, 8000) == 0
    assert assign_flavors(quotas, idle, 0, (8000, 0, 0)) == (0, 0, 0)
    try_next = replace(quotas, try_next_flavor=(True, False))
    assert assign_flavors(try_next, idle, 0, (8000, 0, 0)) == (1, 0, 0)
    # team-b lends its a100 quota: with team-a at 8 A100 GPUs, team-b has none left.
    busy = [row[:] for row in idle]
    busy[a100_gpu][0] = 8000
    assert assign_flavors(quotas, busy, 1, (1000, 0, 0)) is None
    assert assign_flavors(quotas, busy, 0, (8000, 0, 0)) == (1, 0, 0)


def test_unmodelled_flavor_configurations_are_refused_naming_the_field(tmp_path: Path) -> None:
    jobs = jobs_frame([job(1, 0.0, "team", 1)])
    (tmp_path / "h100").mkdir()
    (tmp_path / "h100" / "q.yaml").write_text(
        FLAVORS.replace("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3")
        + "---\n"
        + cluster_queue("team", {"a100": 8})
    )
    with pytest.raises(InputError) as info:
        simulate(jobs, NODES, replace(KUEUE, manifests=str(tmp_path / "h100")))
    message = str(info.value)
    assert "spec.resourceGroups[0].flavors[0].name" in message
    assert "flavor 'a100' selects NVIDIA-H100-80GB-HBM3 nodes, and the cluster has none" in message

    # The engine packs a job's flavor per resource in 8 bits: 255 flavors at most.
    names = [f"f{i}" for i in range(256)]
    text = "---\n".join(
        f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: {name}\n"
        for name in names
    )
    queues = [cluster_queue(f"q{k}", {name: 1 for name in names[k * 64 : (k + 1) * 64]}) for k in range(4)]
    (tmp_path / "many.yaml").write_text("---\n".join([text, *queues]))
    many = jobs_frame([job(1, 0.0, "q0", 1)])
    with pytest.raises(InputError) as info:
        simulate(many, NODES, replace(KUEUE, manifests=str(tmp_path / "many.yaml")))
    assert "256 ResourceFlavors hold quota in spec.resourceGroups; the replay models at most 255" in str(
        info.value
    )


@pytest.mark.parametrize("fair", [False, True])
def test_the_dominant_resource_share_sums_a_resource_over_its_flavors(tmp_path: Path, fair: bool) -> None:
    """team-a and team-b: a100 4 and v100 4 each, one cohort. At 0: job 1 (team-a, 4 GPUs) takes its a100
    quota, job 4 (team-b, 1) team-b's, job 2 (team-a, 2) fits a100 by borrowing (MayStopSearch stops there),
    job 3 (team-a, 4) finds 1 a100 GPU left and takes v100. team-a borrows 2 GPUs of a100 and none of v100:
    B_gpu = 2, L_gpu = the cohort's 8 a100 + 8 v100 GPUs = 16 (``calculateLendable`` sums the flavors), so
    DRS = 2 x 1000 / 16 = 125; team-b lends the 2 (its unused a100 quota is the only lender). The same
    under fair sharing (the tournament orders the heads alike)."""
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", {"a100": 4, "v100": 4}, cohort="c"),
        cluster_queue("team-b", {"a100": 4, "v100": 4}, cohort="c"),
        fair_sharing=fair,
    )
    rows = [job(1, 0.0, "team-a", 4), job(2, 0.0, "team-a", 2), job(3, 0.0, "team-a", 4)]
    jobs = jobs_frame([*rows, job(4, 0.0, "team-b", 1)])
    for replay in both(jobs, policy):
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0}
        first = replay.queues.filter(pl.col("time") == 0.0)
        columns = ("queue", "usage_gpu", "nominal_gpu", "borrowed_gpu", "lent_gpu", "share")
        assert first.select(columns).rows() == [
            ("team-a", 10.0, 8.0, 2.0, 0.0, 125.0),
            ("team-b", 1.0, 8.0, 0.0, 2.0, 0.0),
        ]


def test_preemption_looks_for_victims_in_the_flavor_that_needs_it(tmp_path: Path) -> None:
    """One flavor per ClusterQueue, two in the cohort: team-a (v100 8, reclaimWithinCohort Any), team-b
    (v100 0), team-c (a100 0), team-d (a100 8, idle). At 0 team-b borrows team-a's 8 V100 GPUs (job 1,
    priority 1) and team-c team-d's 8 A100 GPUs (job 2, priority 0). At 10 team-a's job 3 needs preemption in
    v100 only: team-c is above its nominal quota too, and its job has the lowest priority, but in a100, so it
    is no candidate; job 1 is evicted and job 3 starts when it has left the V100 node (40, 30 s grace)."""
    reclaim = "  preemption:\n    reclaimWithinCohort: Any\n"
    policy = manifests(
        tmp_path,
        cluster_queue("team-a", {"v100": 8}, cohort="c", extra=reclaim),
        cluster_queue("team-b", {"v100": 0}, cohort="c"),
        cluster_queue("team-c", {"a100": 0}, cohort="c"),
        cluster_queue("team-d", {"a100": 8}, cohort="c"),
    )
    rows = [
        {**job(1, 0.0, "team-b", 8, duration=1000.0), "priority": 1},
        {**job(2, 0.0, "team-c", 8, duration=1000.0), "priority": 0},
        {**job(3, 10.0, "team-a", 8), "priority": 2},
    ]
    for replay in both(jobs_frame(rows), policy):
        assert starts(replay) == {1: 0.0, 2: 0.0, 3: 40.0}
        assert dict(replay.jobs.select("job_id", "preemptions").iter_rows()) == {1: 1, 2: 0, 3: 0}


def test_reclaim_policies_stay_modelled_with_one_flavor(tmp_path: Path) -> None:
    """One flavor (v100, the V100 node only): preemption is modelled. team-b (nominal 0) borrows team-a's
    8 GPUs at 0; team-a's job reclaims them at 10 and starts when the victim has left the V100 node, after
    its 30 s grace period (40); the victim runs again when job 2 ends (140)."""
    policy = manifests(
        tmp_path,
        cluster_queue(
            "team-a", {"v100": 8}, cohort="c", extra="  preemption:\n    reclaimWithinCohort: Any\n"
        ),
        cluster_queue("team-b", {"v100": 0}, cohort="c"),
    )
    jobs = jobs_frame([job(1, 0.0, "team-b", 8, duration=1000.0), job(2, 10.0, "team-a", 8)])
    for replay in both(jobs, policy):
        assert starts(replay) == {1: 0.0, 2: 40.0}
        again = replay.attempts.filter(pl.col("job_id") == 1).sort("attempt")
        assert again["start"].to_list() == [0.0, 140.0]


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "manifests"


@pytest.mark.parametrize("folder", ["kueue-philly-flavors", "kueue-philly-flavors-try-next"])
def test_the_philly_flavor_examples_split_each_vc_between_the_two_machine_types(folder: str) -> None:
    """Every Philly VC, nominal = real node count x 7 split 74.2% / 25.8% between flavors that select the
    8 x 24 GB and 2 x 12 GB machines; each flavor's quotas fit its machines (1,848 and 642 GPUs)."""
    inputs = prepare_inputs(compose_config(["trace=philly", "cluster=philly"]))
    nodes = inputs.cluster.nodes
    models = sorted(set(nodes["gpu_model"].drop_nulls().to_list()))
    quotas = manifest_quotas(read_manifests(EXAMPLES / folder), inputs.jobs, models, folder)
    assert set(quotas.cluster_queues) == set(inputs.jobs["queue"].to_list())
    assert quotas.flavors == ("gpu-24gb", "gpu-12gb")
    assert quotas.flavor_models == (frozenset({"PHILLY-24GB"}), frozenset({"PHILLY-12GB"}))
    per_flavor = quotas.nominal[[0, 3], : quotas.num_cluster_queues].sum(axis=1) // 1000
    assert per_flavor.tolist() == [1827, 637]
    assert quotas.try_next_flavor == (folder.endswith("try-next"),) * quotas.num_cluster_queues


#: Flavors without node labels (quota only): Kueue's own test cases name them so.
PLAIN_FLAVORS = "---\n".join(
    f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: {name}\n"
    for name in ("on-demand", "spot", "one", "two")
)

#: Four 8-GPU nodes: room for every job below, so only quota decides.
ROOMY = nodes_frame([{"gpu_model": "V100", "num_gpus": 8}] * 4)


def spread(job_id: int, t: float, queue: str, gpus: int) -> dict:
    """A job of ``gpus`` one-GPU pods (fits the nodes in any quota outcome)."""
    return {**job(job_id, t, queue, 1), "num_pods": gpus}


def limited_queue(name: str, quotas: list[tuple[str, int, int | None]], extra: str = "") -> str:
    """A ClusterQueue of cohort "all" with (flavor, nominal GPUs, borrowingLimit) in order."""
    text = f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n"
    text += "  cohort: all\n" + extra
    text += '  resourceGroups:\n  - coveredResources: ["nvidia.com/gpu"]\n    flavors:\n'
    for flavor, nominal, borrowing in quotas:
        text += f"    - name: {flavor}\n      resources:\n      - name: nvidia.com/gpu\n"
        text += f"        nominalQuota: {nominal}\n"
        if borrowing is not None:
            text += f"        borrowingLimit: {borrowing}\n"
    return text


@pytest.mark.parametrize(("when_can_borrow", "borrowed"), [("TryNextFlavor", 0.0), ("MayStopSearch", 1.0)])
def test_kueues_try_next_flavor_instead_of_borrowing(
    tmp_path: Path, when_can_borrow: str, borrowed: float
) -> None:
    """Kueue's integration test "Should try next flavor instead of borrowing" (test/integration/scheduler,
    CPUs read as GPUs): prod-cq holds on-demand 10 (borrowingLimit 10); dev-cq on-demand 10 (10) then spot 11,
    whenCanBorrow TryNextFlavor. prod's 9-GPU job takes on-demand; dev's 11-GPU job fits on-demand only by
    borrowing prod's idle 1, so it goes to spot (Kueue expects "spot-tainted"): dev borrows nothing. Under
    MayStopSearch it stays on on-demand and borrows 1."""
    fungibility = f"  flavorFungibility:\n    whenCanBorrow: {when_can_borrow}\n"
    path = tmp_path / "queues.yaml"
    path.write_text(
        "---\n".join(
            [
                PLAIN_FLAVORS,
                limited_queue("prod-cq", [("on-demand", 10, 10)]),
                limited_queue("dev-cq", [("on-demand", 10, 10), ("spot", 11, None)], fungibility),
            ]
        )
    )
    policy = replace(KUEUE, manifests=str(path))
    jobs = jobs_frame([spread(1, 0.0, "prod-cq", 9), spread(2, 1.0, "dev-cq", 11)])
    for replay in both(jobs, policy, ROOMY):
        assert starts(replay) == {1: 0.0, 2: 1.0}
        dev = replay.queues.filter((pl.col("time") == 10.0) & (pl.col("queue") == "dev-cq"))
        assert dev.select("usage_gpu", "nominal_gpu", "borrowed_gpu").rows() == [(11.0, 21.0, borrowed)]


def test_kueues_borrow_try_next_flavor_found_the_first_flavor(tmp_path: Path) -> None:
    """Kueue's flavorassigner_test case "borrow try next flavor, found the first flavor" (CPUs read as GPUs):
    flavor one 10 (borrowingLimit 1), two 1, TryNextFlavor; one already uses 2; the secondary ClusterQueue
    lends one 1. A 9-GPU request fits one only by borrowing (2 + 9 > 10, within 10 + 1) and two not at all,
    so one is kept, borrowing 1 (Kueue's ``Borrowing: 1``)."""
    fungibility = "  flavorFungibility:\n    whenCanBorrow: TryNextFlavor\n"
    path = tmp_path / "queues.yaml"
    path.write_text(
        "---\n".join(
            [
                PLAIN_FLAVORS,
                limited_queue("test-clusterqueue", [("one", 10, 1), ("two", 1, None)], fungibility),
                limited_queue("test-secondary-clusterqueue", [("one", 1, None)]),
            ]
        )
    )
    policy = replace(KUEUE, manifests=str(path))
    jobs = jobs_frame([spread(1, 0.0, "test-clusterqueue", 2), spread(2, 1.0, "test-clusterqueue", 9)])
    for replay in both(jobs, policy, ROOMY):
        assert starts(replay) == {1: 0.0, 2: 1.0}
        mine = replay.queues.filter((pl.col("time") == 10.0) & (pl.col("queue") == "test-clusterqueue"))
        assert mine.select("usage_gpu", "nominal_gpu", "borrowed_gpu").rows() == [(11.0, 11.0, 1.0)]


def tainted(name: str, label: str, tolerations: str = "") -> str:
    """A ResourceFlavor selecting ``label``'s nodes that taints them ``spot=true:NoSchedule``."""
    return (
        f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: {name}\nspec:\n"
        f"  nodeLabels:\n    nvidia.com/gpu.product: {label}\n"
        '  nodeTaints:\n  - key: spot\n    value: "true"\n    effect: NoSchedule\n' + tolerations
    )


@pytest.mark.parametrize("tolerated", [False, True])
def test_a_flavor_whose_taints_the_jobs_do_not_tolerate_is_never_assigned(
    tmp_path: Path, tolerated: bool
) -> None:
    """team tries spot (the V100 node, tainted spot=true:NoSchedule; 8 GPUs of quota) before on-demand (the
    A100 node, 8). The trace's jobs carry no tolerations, so Kueue's flavor check skips spot
    (``FindMatchingUntoleratedTaint``): job 1 takes on-demand, job 2 waits for it (100). A toleration in the
    flavor's own spec.tolerations (added to the pods Kueue admits with it) makes spot usable: job 1 takes
    spot, job 2 on-demand, both at 0."""
    toleration = "  tolerations:\n  - key: spot\n    operator: Exists\n    effect: NoSchedule\n"
    path = tmp_path / "queues.yaml"
    path.write_text(
        "---\n".join(
            [
                tainted("spot", "Tesla-V100-SXM2-16GB", toleration if tolerated else ""),
                FLAVORS.split("---\n")[0].replace("a100", "on-demand"),
                cluster_queue("team", {"spot": 8, "on-demand": 8}),
            ]
        )
    )
    jobs = jobs_frame([job(1, 0.0, "team", 8), job(2, 0.0, "team", 8)])
    for replay in both(jobs, replace(KUEUE, manifests=str(path))):
        assert starts(replay) == ({1: 0.0, 2: 0.0} if tolerated else {1: 0.0, 2: 100.0})
    described = "\n".join(describe_tree(read_manifests(path).tree))
    assert ("untolerated taints spot=true:NoSchedule: never assigned" in described) is not tolerated


def test_a_group_left_with_no_tolerated_flavor_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "queues.yaml"
    # A tainted flavor the group does not list stays out of the message.
    other = tainted("other", "NVIDIA-A100-SXM4-80GB").replace("key: spot", "key: busy")
    spot = tainted("spot", "Tesla-V100-SXM2-16GB")
    path.write_text("---\n".join([spot, cluster_queue("team", {"spot": 8}), other]))
    with pytest.raises(InputError) as info:
        simulate(jobs_frame([job(1, 0.0, "team", 1)]), NODES, replace(KUEUE, manifests=str(path)))
    message = str(info.value)
    assert "document 2, key 'spec.resourceGroups[0].flavors'" in message
    assert "every flavor of this resource group taints its nodes (spot=true:NoSchedule) and" in message
    assert "add a matching toleration to the ResourceFlavor's spec.tolerations" in message
    bad = path.read_text().replace("effect: NoSchedule", "effect: Sometimes")
    path.write_text(bad)
    with pytest.raises(InputError) as info:
        read_manifests(path)
    assert (
        "key 'spec.nodeTaints[0].effect': must be one of ['NoSchedule', 'NoExecute', 'PreferNoSchedule']"
        in (str(info.value))
    )
