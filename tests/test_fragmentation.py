"""FGD's fragmentation measure (engine/fit/fragmentation.py) and typical pods (workload/typical_pods.py).

Hand-computed cases from the rules of the public simulator
(hkust-adsl/kubernetes-scheduler-simulator ``pkg/utils/frag.go``), the kernels
against their plain twin ``tests/reference/fragmentation.py`` on random
nodes, and the typical pods of the bundled openb pod lists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl
import pytest
from tests.reference import fragmentation as ref

from gpureplay.engine.fit import fragmentation as frag
from gpureplay.engine.jit.config import python_callable
from gpureplay.engine.state.layout import ALL_MODELS
from gpureplay.traces.openb import load_openb
from gpureplay.workload.typical_pods import TypicalPods, typical_pods

BIG_CPU = 1 << 40
ANY = np.uint64(ALL_MODELS)


@pytest.fixture(scope="module")
def kernels() -> dict[str, Callable[..., Any]]:
    """Python-callable copies of the internal kernels (compiled once for the module)."""
    return {
        "quadrant": python_callable(frag.frag_quadrant),
        "pod": python_callable(frag.pod_frag),
        "node": python_callable(frag.node_frag),
    }


def _class_arrays(tasks: Sequence[ref.TaskClass]) -> tuple[np.ndarray, ...]:
    """Reference classes as the kernels' arrays (model sets become masks)."""
    masks = [ALL_MODELS if t.models is None else sum(1 << m for m in t.models) for t in tasks]
    return (
        np.array([t.cpu_milli for t in tasks], dtype=np.int64),
        np.array([t.num_gpu for t in tasks], dtype=np.int64),
        np.array([t.gpu_milli for t in tasks], dtype=np.int64),
        np.array(masks, dtype=np.uint64),
        np.array([t.popularity for t in tasks], dtype=np.float64),
    )


def _engine_pod(kernels: dict[str, Callable[..., Any]], node: ref.Node, task: ref.TaskClass) -> int:
    gpus = np.array(node.gpu_free, dtype=np.int64)
    cpu, num, milli, mask, _ = (a[0] for a in _class_arrays([task]))
    return int(kernels["pod"](node.cpu_free, gpus, 0, gpus.shape[0], node.model, cpu, num, milli, mask))


def _engine_quadrant(kernels: dict[str, Callable[..., Any]], node: ref.Node, task: ref.TaskClass) -> str:
    gpus = np.array(node.gpu_free, dtype=np.int64)
    cpu, num, milli, mask, _ = (a[0] for a in _class_arrays([task]))
    code = kernels["quadrant"](node.cpu_free, gpus, 0, gpus.shape[0], node.model, cpu, num, milli, mask)
    return frag.QUADRANTS[int(code)]


def _engine_node(
    kernels: dict[str, Callable[..., Any]], node: ref.Node, tasks: Sequence[ref.TaskClass]
) -> float:
    gpus = np.array(node.gpu_free, dtype=np.int64)
    return float(kernels["node"](node.cpu_free, gpus, 0, gpus.shape[0], node.model, *_class_arrays(tasks)))


# --------------------------------------------------------------------------------------------------
# (a) Hand-computed cases
# --------------------------------------------------------------------------------------------------

NODE = ref.Node(cpu_free=BIG_CPU, gpu_free=(1000, 500, 200, 0), model=0)
WHOLE_ONE = ref.TaskClass(cpu_milli=4000, num_gpu=1, gpu_milli=1000, popularity=0.5)
SHARE_300 = ref.TaskClass(cpu_milli=4000, num_gpu=1, gpu_milli=300, popularity=0.5)


def test_worked_example(kernels: dict[str, Callable[..., Any]]) -> None:
    # GPUs free [1000, 500, 200, 0], CPU plentiful.
    # 1 GPU x 1000: GPU 0 has free 1000 >= 1000, so the class fits (q3); its fragment is the
    #   free milli of the GPUs with free < 1000: 500 + 200 + 0 = 700.
    # 1 GPU x 300: GPU 0 (and 1) fit, q3; GPUs with free < 300: 200 + 0 = 200.
    # F_n = 0.5 * 700 + 0.5 * 200 = 350 + 100 = 450 (both terms land in the q2 bucket).
    for fn in (ref.quadrant, lambda n, t: _engine_quadrant(kernels, n, t)):
        assert fn(NODE, WHOLE_ONE) == fn(NODE, SHARE_300) == "q3_satisfied"
    for pod in (ref.pod_frag, lambda n, t: _engine_pod(kernels, n, t)):
        assert pod(NODE, WHOLE_ONE) == 700
        assert pod(NODE, SHARE_300) == 200
    assert ref.node_frag(NODE, [WHOLE_ONE, SHARE_300]) == 450.0
    assert _engine_node(kernels, NODE, [WHOLE_ONE, SHARE_300]) == 450.0


def test_cpu_starved_node_counts_every_idle_gpu(kernels: dict[str, Callable[..., Any]]) -> None:
    # 3000 milli-CPU free < 4000 asked: the GPUs fit but the CPU does not (q4), so all
    # 1000 + 500 + 200 + 0 = 1700 idle milli is a fragment for both classes: F_n = 1700.
    starved = ref.Node(cpu_free=3000, gpu_free=NODE.gpu_free, model=0)
    assert ref.quadrant(starved, WHOLE_ONE) == _engine_quadrant(kernels, starved, WHOLE_ONE) == "q4_lack_cpu"
    assert ref.pod_frag(starved, SHARE_300) == _engine_pod(kernels, starved, SHARE_300) == 1700
    assert ref.node_frag(starved, [WHOLE_ONE, SHARE_300]) == 1700.0
    assert _engine_node(kernels, starved, [WHOLE_ONE, SHARE_300]) == 1700.0
    # A class neither the GPUs nor the CPU can take: q1, still all 1700.
    too_big = ref.TaskClass(cpu_milli=4000, num_gpu=2, gpu_milli=1000)
    assert ref.quadrant(starved, too_big) == _engine_quadrant(kernels, starved, too_big) == "q1_lack_both"
    assert ref.pod_frag(starved, too_big) == _engine_pod(kernels, starved, too_big) == 1700


def test_model_mismatch_is_no_access(kernels: dict[str, Callable[..., Any]]) -> None:
    # The node's model is code 0; a class accepting only model 1 cannot use it at all: 1700.
    picky = ref.TaskClass(cpu_milli=0, num_gpu=1, gpu_milli=100, models=frozenset({1}))
    assert ref.quadrant(NODE, picky) == _engine_quadrant(kernels, NODE, picky) == "no_access"
    assert ref.pod_frag(NODE, picky) == _engine_pod(kernels, NODE, picky) == 1700
    # Accepting model 0 as well, it fits (GPUs 0, 1, 2 have >= 100 free): only GPU 3's 0 is left.
    both = ref.TaskClass(cpu_milli=0, num_gpu=1, gpu_milli=100, models=frozenset({0, 1}))
    assert ref.pod_frag(NODE, both) == _engine_pod(kernels, NODE, both) == 0
    # A node without a GPU model is out of reach of any class naming models, not of one naming none.
    cpu_node = ref.Node(cpu_free=BIG_CPU, gpu_free=(), model=-1)
    assert _engine_quadrant(kernels, cpu_node, picky) == "no_access"
    assert _engine_quadrant(kernels, cpu_node, SHARE_300) == "q2_lack_gpu"
    assert _engine_pod(kernels, cpu_node, SHARE_300) == 0


def test_multi_gpu_class_needs_that_many_big_enough_gpus(kernels: dict[str, Callable[..., Any]]) -> None:
    two_whole = ref.TaskClass(cpu_milli=0, num_gpu=2, gpu_milli=1000)
    # [1000, 500, 200, 0]: one GPU with 1000 free, two needed -> q2, all 1700 is a fragment.
    assert ref.quadrant(NODE, two_whole) == _engine_quadrant(kernels, NODE, two_whole) == "q2_lack_gpu"
    assert ref.pod_frag(NODE, two_whole) == _engine_pod(kernels, NODE, two_whole) == 1700
    # [1000, 1000, 300, 0]: it fits; the fragment is the GPUs below 1000: 300 + 0 = 300.
    roomy = ref.Node(cpu_free=BIG_CPU, gpu_free=(1000, 1000, 300, 0), model=0)
    assert ref.quadrant(roomy, two_whole) == _engine_quadrant(kernels, roomy, two_whole) == "q3_satisfied"
    assert ref.pod_frag(roomy, two_whole) == _engine_pod(kernels, roomy, two_whole) == 300


def test_cpu_only_class_counts_all_idle_gpu_even_where_it_fits(
    kernels: dict[str, Callable[..., Any]],
) -> None:
    cpu_task = ref.TaskClass(cpu_milli=2000, num_gpu=0, gpu_milli=0, models=frozenset({5}))
    # The model constraint does not apply to a CPU-only class: xl by CPU alone, fragment 1700.
    assert ref.quadrant(NODE, cpu_task) == _engine_quadrant(kernels, NODE, cpu_task) == "xl_satisfied"
    assert ref.pod_frag(NODE, cpu_task) == _engine_pod(kernels, NODE, cpu_task) == 1700
    starved = ref.Node(cpu_free=1000, gpu_free=NODE.gpu_free, model=0)
    assert _engine_quadrant(kernels, starved, cpu_task) == "xr_lack_cpu"
    # Mixed workload: 0.25 * 1700 (CPU-only) + 0.75 * 200 (the 300-milli class) = 425 + 150 = 575.
    tasks = [
        ref.TaskClass(cpu_milli=2000, num_gpu=0, gpu_milli=0, popularity=0.25),
        ref.TaskClass(cpu_milli=4000, num_gpu=1, gpu_milli=300, popularity=0.75),
    ]
    assert ref.node_frag(NODE, tasks) == _engine_node(kernels, NODE, tasks) == 575.0


def test_cluster_frag_sums_the_nodes() -> None:
    # Two nodes of the flat layout: node 0 is NODE (GPUs 0-3), node 1 has GPUs 4-5 free [300, 1000],
    # model 1, no CPU left. Classes: the worked example's two, accepting any model.
    # Node 0: 450 (worked example). Node 1: both classes' GPUs fit but the CPU does not (q4):
    # 0.5 * 1300 + 0.5 * 1300 = 1300. Total 1750.
    gpu_free = np.array([1000, 500, 200, 0, 300, 1000], dtype=np.int64)
    out = frag.cluster_frag(
        gpu_free,
        np.array([0, 4], dtype=np.int64),
        np.array([4, 2], dtype=np.int64),
        np.array([BIG_CPU, 0], dtype=np.int64),
        np.array([0, 1], dtype=np.int64),
        *_class_arrays([WHOLE_ONE, SHARE_300]),
    )
    assert out == 1750.0
    nodes = [NODE, ref.Node(cpu_free=0, gpu_free=(300, 1000), model=1)]
    assert ref.cluster_frag(nodes, [WHOLE_ONE, SHARE_300]) == 1750.0


# --------------------------------------------------------------------------------------------------
# (b) Kernels against the reference on random nodes and class sets
# --------------------------------------------------------------------------------------------------


def _random_case(rng: np.random.Generator) -> tuple[list[ref.Node], list[ref.TaskClass]]:
    millis = [100, 200, 250, 300, 460, 500, 700, 810, 1000]  # shared with the GPUs: ties on purpose
    tasks = []
    for _ in range(int(rng.integers(1, 7))):
        shape = int(rng.integers(0, 4))
        if shape == 0:
            num, milli = 0, 0
        elif shape == 1:
            num, milli = 1, int(rng.choice(millis)) if rng.random() < 0.7 else int(rng.integers(1, 1001))
        else:
            num, milli = int(rng.choice([2, 4, 8])), 1000
        pick = rng.random()
        models = None if pick < 0.5 else frozenset(int(m) for m in rng.choice(4, size=rng.integers(0, 3)))
        tasks.append(ref.TaskClass(int(rng.choice([0, 2000, 4000, 8000])), num, milli, models))
    weights = rng.random(len(tasks))
    tasks = [
        ref.TaskClass(t.cpu_milli, t.num_gpu, t.gpu_milli, t.models, float(w / weights.sum()))
        for t, w in zip(tasks, weights, strict=True)
    ]
    nodes = []
    for _ in range(int(rng.integers(1, 6))):
        ngpu = int(rng.choice([0, 1, 2, 4, 8]))
        free = [
            int(rng.choice([0, *millis])) if rng.random() < 0.6 else int(rng.integers(0, 1001))
            for _ in range(ngpu)
        ]
        model = int(rng.integers(-1, 3)) if ngpu else -1
        nodes.append(ref.Node(int(rng.choice([0, 1999, 2000, 4000, 8000, BIG_CPU])), tuple(free), model))
    return nodes, tasks


def test_kernels_match_the_reference(kernels: dict[str, Callable[..., Any]]) -> None:
    rng = np.random.default_rng(20230710)
    for _ in range(300):
        nodes, tasks = _random_case(rng)
        for node in nodes:
            for task in tasks:
                assert _engine_quadrant(kernels, node, task) == ref.quadrant(node, task), (node, task)
                assert _engine_pod(kernels, node, task) == ref.pod_frag(node, task), (node, task)
            assert _engine_node(kernels, node, tasks) == ref.node_frag(node, tasks), (node, tasks)
        gpu0 = np.cumsum([0] + [len(n.gpu_free) for n in nodes[:-1]]).astype(np.int64)
        flat = np.array([f for n in nodes for f in n.gpu_free], dtype=np.int64)
        engine = frag.cluster_frag(
            flat,
            gpu0,
            np.array([len(n.gpu_free) for n in nodes], dtype=np.int64),
            np.array([n.cpu_free for n in nodes], dtype=np.int64),
            np.array([n.model for n in nodes], dtype=np.int64),
            *_class_arrays(tasks),
        )
        assert engine == ref.cluster_frag(nodes, tasks)


# --------------------------------------------------------------------------------------------------
# (c) Typical pods
# --------------------------------------------------------------------------------------------------


def _reference_pods(jobs: pl.DataFrame) -> list[ref.PodShape]:
    """The pods of a canonical table as the simulator's PodResource (one per pod)."""
    shapes = []
    spec = jobs["source_gpu_spec"].to_list() if "source_gpu_spec" in jobs.columns else [None] * jobs.height
    rows = zip(
        jobs["cpu_milli"].to_list(),
        jobs["gpu_milli"].to_list(),
        jobs["num_pods"].to_list(),
        spec,
        strict=True,
    )
    for cpu, milli, pods, raw in rows:
        num = milli // 1000 if milli >= 1000 else int(milli > 0)
        text = "" if num == 0 or raw is None else "|".join(x for x in raw.split("|") if x)
        shapes += [ref.PodShape(cpu, min(milli, 1000), num, text)] * pods
    return shapes


def _as_pairs(tp: TypicalPods) -> list[tuple[ref.PodShape, float]]:
    return [
        (ref.PodShape(int(c), int(m), int(n), t), float(p))
        for c, m, n, t, p in zip(
            tp.cpu_milli, tp.gpu_milli, tp.num_gpu, tp.gpu_type, tp.popularity, strict=True
        )
    ]


def test_openb_default_typical_pods() -> None:
    jobs = load_openb(timing="packing").jobs  # every pod of the list, as the simulator reads it
    tp = typical_pods(jobs)
    # 91 distinct shapes; the 35 most frequent hold 7,766 of the 8,152 pods (95.3% >= 95%).
    assert tp.classes_seen == 91
    assert len(tp) == 35
    assert tp.weight.sum() == 7766.0
    assert tp.coverage == pytest.approx(7766 / 8152)
    assert tp.popularity.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.diff(tp.weight) <= 0)
    arrays = (tp.cpu_milli, tp.num_gpu, tp.gpu_milli, tp.weight, tp.popularity)
    assert all(a.flags.writeable and a.flags.c_contiguous for a in arrays)  # one kernel signature
    # The most frequent class: 1,047 pods of 3.152 CPUs and 0.81 of one GPU.
    assert (tp.cpu_milli[0], tp.num_gpu[0], tp.gpu_milli[0], tp.weight[0]) == (3152, 1, 810, 1047.0)
    assert tp.popularity[0] == 1047 / 7766
    assert _as_pairs(tp) == ref.typical_classes(_reference_pods(jobs))
    # The Go fallback threshold (60%) in blocks of 10 keeps 10 classes.
    assert len(typical_pods(jobs, threshold=60, step=10)) == 10


def test_openb_gpuspec_classes_keep_the_raw_model_text() -> None:
    jobs = load_openb("openb/openb_pod_list_gpuspec33.csv.gz", timing="packing").jobs
    tp = typical_pods(jobs, threshold=100)
    assert _as_pairs(tp) == ref.typical_classes(_reference_pods(jobs), threshold=100)
    # "V100M16|V100M32" and "V100M16|V100M32|V100M32" are distinct classes, as in the simulator,
    # with the same catalog models.
    both = [i for i, t in enumerate(tp.gpu_type) if t in ("V100M16|V100M32", "V100M16|V100M32|V100M32")]
    assert {tp.gpu_type[i] for i in both} == {"V100M16|V100M32", "V100M16|V100M32|V100M32"}
    assert {tp.gpu_models[i] for i in both} == {("V100", "V100-32GB")}


def _table(rows: Sequence[tuple[int, int, int, list[str] | None]]) -> pl.DataFrame:
    cpu, milli, pods, models = zip(*rows, strict=True)
    return pl.DataFrame(
        {"cpu_milli": cpu, "gpu_milli": milli, "num_pods": pods, "gpu_models": list(models)},
        schema={
            "cpu_milli": pl.Int32,
            "gpu_milli": pl.Int32,
            "num_pods": pl.Int32,
            "gpu_models": pl.List(pl.String),
        },
    )


# 10 pods: A = 1 GPU x 500 (5 pods, two of them one job of 2 pods), B = 2 whole GPUs on a T4 (3),
# C = 1 GPU x 1000 (1), D = CPU only (1).
HAND = _table(
    [
        (4000, 500, 3, None),
        (4000, 500, 2, None),
        (8000, 2000, 3, ["T4"]),
        (2000, 1000, 1, None),
        (1000, 0, 1, None),
    ]
)


def test_hand_made_table() -> None:
    # Threshold 80%: A (5) then B (3) make 8 >= 0.8 * 10 -> p = 5/8, 3/8.
    tp = typical_pods(HAND, threshold=80)
    assert len(tp) == 2 and tp.classes_seen == 4
    assert tp.cpu_milli.tolist() == [4000, 8000]
    assert tp.num_gpu.tolist() == [1, 2] and tp.gpu_milli.tolist() == [500, 1000]
    assert tp.gpu_type == ("", "T4") and tp.gpu_models == (None, ("T4",))
    assert tp.popularity.tolist() == [(5 / 10) / (8 / 10), (3 / 10) / (8 / 10)]
    assert tp.coverage == 0.8
    # Blocks of 10 keep every class, the popularity then is the share of all pods; the tie of
    # C and D (1 pod each) goes to the larger CPU request (C) first.
    every = typical_pods(HAND, threshold=80, step=10)
    assert every.cpu_milli.tolist() == [4000, 8000, 2000, 1000]
    assert every.popularity.tolist() == [0.5, 0.3, 0.1, 0.1]
    # Without CPU-only pods: 9 pods; 80% is 7.2, reached by A + B = 8.
    gpu_only = typical_pods(HAND, threshold=80, include_cpu_pods=False)
    assert gpu_only.classes_seen == 3
    assert gpu_only.popularity.tolist() == [(5 / 9) / (8 / 9), (3 / 9) / (8 / 9)]
    # gpuResWeight 1: whole-GPU pods count 1 + num_gpu: B = 3 * 3 = 9, C = 2, A = 5, D = 1 (17).
    weighted = typical_pods(HAND, threshold=100, gpu_res_weight=1.0)
    assert weighted.weight.tolist() == [9.0, 5.0, 2.0, 1.0]
    # The model mask against the cluster's model codes, as the engine encodes jobs.
    assert every.model_mask(["A100-80GB", "T4"]).tolist() == [ALL_MODELS, 0b10, ALL_MODELS, ALL_MODELS]
    assert every.model_mask(["V100"]).tolist() == [ALL_MODELS, 0, ALL_MODELS, ALL_MODELS]


def test_hand_made_table_matches_the_reference() -> None:
    shapes = _reference_pods(HAND.with_columns(source_gpu_spec=pl.Series(["", "", "T4", "", ""])))
    for threshold, step in ((50, 1), (80, 1), (95, 2), (100, 3)):
        assert _as_pairs(typical_pods(HAND, threshold=threshold, step=step)) == ref.typical_classes(
            shapes, threshold=threshold, step=step
        )


def test_bad_input_names_the_column() -> None:
    with pytest.raises(ValueError, match="cpu_milli"):
        typical_pods(HAND.drop("cpu_milli"))
    with pytest.raises(ValueError, match="gpu_milli"):
        typical_pods(pl.DataFrame({"cpu_milli": [1000]}))
    with pytest.raises(ValueError, match="no rows"):
        typical_pods(HAND.clear())
    with pytest.raises(ValueError, match="CPU-only pods excluded"):
        typical_pods(_table([(1000, 0, 1, None)]), include_cpu_pods=False)
    with pytest.raises(ValueError, match="num_pods"):
        typical_pods(HAND.with_columns(pl.lit(None, pl.Int32).alias("num_pods")))
    with pytest.raises(ValueError, match="threshold"):
        typical_pods(HAND, threshold=0)
    with pytest.raises(ValueError, match="step"):
        typical_pods(HAND, step=0)
