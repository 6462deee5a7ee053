"""Every declared sweep (conf/sweep/*.yaml) compares something: its schedulers (or layouts) differ.

A sweep whose points all give the same numbers (every scheduler at 0 wait on a
cluster that is never busy) makes a report that compares nothing. For each
declared sweep and each of its settings (what the points hold equal: load,
experiment), the points of fifo and gang-binpack are composed exactly as
``gpureplay run -m sweep=NAME`` composes them and replayed in-process on the
real bundled traces; their mean waits must differ, and not be nothing. A sweep
over seeds must also give different results per seed.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from gpureplay.config import register_configs
from gpureplay.experiment import prepare_inputs, run_experiment

REPO = Path(__file__).resolve().parents[1]
SWEEPS = sorted(p.stem for p in (REPO / "conf" / "sweep").glob("*.yaml"))

#: The pair of schedulers every sweep compares; each sweep must hold both.
PAIR = ("fifo", "gang-binpack")
#: Sweeps comparing other schedulers: their pair, and the summary column that must differ between them.
OWN_PAIRS: dict[str, tuple[tuple[str, str], str]] = {
    # preemption needs the priority order (no fifo): with and without it, the same binpack gang
    "philly-preemption": (("gang-binpack", "gang-binpack-preempt"), "wait_mean"),
    # the FGD paper's packing runs: FGD against its Random baseline, GPUs left unallocated
    "fgd-openb": (("fgd", "fgd-random"), "unallocated_gpu_pct_at_100"),
    "fgd-openb-variants": (("fgd", "fgd-random"), "unallocated_gpu_pct_at_100"),
    "fgd-openb-timed": (("fgd", "fgd-random"), "wait_mean"),
    # the same policies on Philly's whole-GPU gangs: FGD against BestFit, which leaves fewer GPUs stranded
    "fgd-philly-timed": (("fgd", "fgd-bestfit"), "wait_mean"),
    # GPU-sharing systems: HAMi's vGPU slots and memory against plain shares under kube's queue
    "sharing-openb": (("kube-default", "hami-binpack"), "wait_mean"),
    # MIG layouts under one scheduler: whole GPUs against 7 small instances per GPU
    "mig-openb": (("all-disabled", "all-1g.10gb"), "wait_mean"),
    # dynamic MIG's node rule: LeastAllocated spread against FGD's score over slices
    "mig-openb-dynamic": (("worst_fit", "fgd"), "wait_mean"),
    # mixed MIG layouts kept static against idle GPUs re-partitioned to what pending pods need
    "mig-openb-repartition": (("mig-mixed", "mig-repartition"), "wait_mean"),
    # topology-aware placement keeps the big jobs in one spine, the binpack baseline does not
    "philly-tas": (("topology-blind", "kueue-tas"), "one_spine_pct"),
    # the kubelets' single-numa-node policy fails the pods no NUMA node holds; the blind baseline has none
    "philly-numa": (("topology-blind", "kubelet-single-numa"), "failed"),
    # Philly at its own rate: nothing waits without quotas; VCs held to their own quotas wait
    "philly-queues": (("gang-binpack", "kueue-philly-vcs-isolated"), "wait_mean"),
    # idle notebooks' GPUs reclaimed (ReclaimIdleResource) against kube-default, which never evicts
    "philly-reclaim-idle": (("kube-default", "reclaim-idle"), "wait_mean"),
}

#: Sweeps that compare something else than schedulers: the key their pair is values of.
COMPARED_KEY: dict[str, str] = {
    "mig-openb": "cluster.mig_layout",
    "mig-openb-dynamic": "scheduler.node_placement",
}

#: Sweeps too large to check every setting of: the key and the values checked (a sample across the
#: variant kinds; for the load sweep its lightest and heaviest load).
SAMPLED_SETTINGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "fgd-openb-variants": (
        "experiment",
        ("fgd-openb-gpushare40", "fgd-openb-multigpu50", "fgd-openb-cpu050"),
    ),
    "load": ("workload.load", ("4.0", "10.0")),
}

#: Smallest mean wait (s) that counts as "jobs waited" and smallest relative difference.
MIN_WAIT = 60.0
MIN_DIFFERENCE = 0.10

_RESULTS: dict[tuple[str, ...], dict[str, Any]] = {}
_FOLDERS: dict[tuple[str, ...], Path] = {}


def grid(name: str) -> list[dict[str, str]]:
    """The points of a declared sweep: every combination of its ``hydra.sweeper.params``."""
    params = OmegaConf.load(REPO / "conf" / "sweep" / f"{name}.yaml").hydra.sweeper.params
    keys = list(params)
    values = [str(params[k]).split(",") for k in keys]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def replay(overrides: tuple[str, ...], tmp: Path) -> dict[str, Any]:
    """The summary row of one point (each distinct point replayed once per session)."""
    if overrides not in _RESULTS:
        register_configs()
        with initialize_config_module(config_module="gpureplay.conf", version_base="1.3"):
            cfg = compose("config", overrides=list(overrides))
        folder = tmp / f"point{len(_RESULTS)}"
        _RESULTS[overrides] = run_experiment(cfg, folder).summary
        _FOLDERS[overrides] = folder
    return _RESULTS[overrides]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sweeps")


def test_every_declared_sweep_is_checked() -> None:
    assert SWEEPS == [
        "fgd-openb",
        "fgd-openb-timed",
        "fgd-openb-variants",
        "fgd-philly-timed",
        "load",
        "mig-openb",
        "mig-openb-dynamic",
        "mig-openb-repartition",
        "philly-example",
        "philly-numa",
        "philly-preemption",
        "philly-queues",
        "philly-reclaim-idle",
        "philly-schedulers",
        "philly-spread",
        "philly-tas",
        "schedulers",
        "schedulers-traces",
        "seeds",
        "sharing-openb",
    ]


#: Sweeps checked by a test of their own, which also runs the check below on them (a full replay each
#: point: one test, so the replay is not repeated on another xdist worker).
OWN_TESTS = ("philly-reclaim-idle",)


@pytest.mark.slow
@pytest.mark.parametrize("name", [s for s in SWEEPS if s not in OWN_TESTS])
def test_schedulers_differ_in_every_setting_of_a_declared_sweep(name: str, scratch: Path) -> None:
    assert_schedulers_differ(name, scratch)


def assert_schedulers_differ(name: str, scratch: Path) -> None:
    """In every setting of sweep ``name`` its pair of schedulers gives different numbers, and jobs wait."""
    points = grid(name)
    compared = COMPARED_KEY.get(name, "scheduler")
    assert all(compared in p for p in points), f"sweep={name} does not compare {compared}"
    settings: dict[tuple[tuple[str, str], ...], set[str]] = {}
    first_seed = min((p["seed"] for p in points if "seed" in p), key=int, default="0")
    for point in points:
        if point.get("seed", "0") != first_seed:
            continue  # seeds are checked below; one seed shows whether the schedulers differ
        if name in SAMPLED_SETTINGS:
            key, values = SAMPLED_SETTINGS[name]
            if point.get(key) not in values:
                continue
        setting = tuple(sorted((k, v) for k, v in point.items() if k != compared))
        settings.setdefault(setting, set()).add(point[compared])
    pair, metric = OWN_PAIRS.get(name, (PAIR, "wait_mean"))
    for setting, schedulers in settings.items():
        assert set(pair) <= schedulers, (name, setting)
        waits = [
            replay((f"sweep={name}", *(f"{k}={v}" for k, v in setting), f"{compared}={s}"), scratch)[metric]
            for s in pair
        ]
        if metric == "wait_mean":
            assert max(waits) >= MIN_WAIT, f"sweep={name} {setting}: no job waits ({waits})"
        assert abs(waits[0] - waits[1]) >= MIN_DIFFERENCE * max(waits), f"sweep={name} {setting}: {waits}"


@pytest.mark.slow
def test_the_reclaim_idle_sweep_evicts_only_idle_notebooks(scratch: Path) -> None:
    """``sweep=philly-reclaim-idle``'s reclaim-idle point (Philly at 6x, ``notebooks-idle``, one priority),
    written by ``gpureplay run`` itself: only ReclaimIdleResource lets a job take another's GPUs there, so
    every eviction is of a notebook that went idle, at least its toleration (1 h) after the attempt began.

    Also the sweep's comparison with kube-default (the check every other sweep gets above): the reclaim-idle
    replay takes half a minute, run once here for both.
    """
    assert_schedulers_differ("philly-reclaim-idle", scratch)
    point = ("sweep=philly-reclaim-idle", "scheduler=reclaim-idle")
    replay(point, scratch)
    register_configs()
    with initialize_config_module(config_module="gpureplay.conf", version_base="1.3"):
        jobs = prepare_inputs(compose("config", overrides=list(point))).jobs
    folder = _FOLDERS[point]
    assert (pl.read_parquet(folder / "jobs.parquet")["state"] == "finished").all()
    attempts = pl.read_parquet(folder / "attempts.parquet")
    evicted = attempts.filter(pl.col("end_reason") == "preempted").join(jobs, on="job_id")
    assert evicted.height > 0
    assert (evicted["priority_class"] == "notebook").all() and evicted["idle_after"].is_finite().all()
    assert (evicted["evicted"] - evicted["start"] >= 3600.0 - 1e-6).all()  # start + 3600, rounded


@pytest.mark.slow
def test_seeds_sweep_gives_different_results_per_seed(scratch: Path) -> None:
    seeds = sorted({p["seed"] for p in grid("seeds")})
    assert len(seeds) >= 5
    rows = [replay(("sweep=seeds", f"seed={s}", "scheduler=fifo"), scratch) for s in seeds[:2]]
    assert rows[0]["jobs"] != rows[1]["jobs"] or rows[0]["wait_mean"] != rows[1]["wait_mean"]
