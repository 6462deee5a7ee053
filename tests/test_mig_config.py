"""MIG inputs and settings the engine refuses, and its static MIG figures.

docs/engine/devices.md, "MIG instances".

The error messages are the product's, so these run on the engine only; the scenarios on both simulators are in
tests/test_mig_instances.py.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hydra import compose, initialize_config_module
from tests.reference.strategies import jobs_frame, nodes_frame
from tests.test_mig_instances import BASE, MIG, a100, job

from gpureplay.config import register_configs
from gpureplay.errors import InputError
from gpureplay.experiment import run_experiment
from gpureplay.replay.simulate import simulate as engine_simulate
from gpureplay.report.build import build_report
from gpureplay.schedulers.policy import Backfill, GpuSharing, MigDemand, MigStrategy, Policy


def engine_error(jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], policy: Policy) -> str:
    with pytest.raises(InputError) as err:
        engine_simulate(jobs_frame(jobs), nodes_frame(nodes), policy)
    return str(err.value)


@pytest.mark.parametrize(
    ("layout", "says"),
    [
        ("all-balanced", "more than one MIG device type present on node"),
        ("all-enabled", "no instance"),
        ("all-1g.10gb.x", "not a mig-parted config of A100-40GB"),
    ],
)
def test_layouts_the_single_strategy_refuses(layout: str, says: str) -> None:
    message = engine_error([job(1, 0.0, 1.0, 1, 1000)], [a100("all-1g.5gb"), a100(layout)], MIG)
    assert says in message and "row 2" in message and "mig_layout" in message


def test_a_layout_on_a_gpu_without_mig() -> None:
    message = engine_error(
        [job(1, 0.0, 1.0, 1, 1000)], [{"gpu_model": "V100", "num_gpus": 1, "mig_layout": "all-1g.5gb"}], MIG
    )
    assert "has no MIG" in message and "mig_layout" in message


def test_mig_inputs_without_the_strategy_are_refused() -> None:
    message = engine_error([job(1, 0.0, 1.0, 1, 1000)], [a100("all-1g.5gb")], BASE)
    assert "mig_strategy: single" in message and "row 1" in message
    message = engine_error([job(1, 0.0, 1.0, 1, 1000, mig_profile="1g.5gb")], [a100(None)], BASE)
    assert "mig_profile" in message


def test_an_unknown_profile_name() -> None:
    message = engine_error([job(1, 0.0, 1.0, 1, 1000, mig_profile="1g.6gb")], [a100("all-1g.5gb")], MIG)
    assert "'1g.6gb' is no MIG profile" in message and "mig_profile" in message


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"mig_strategy": MigStrategy.mixed}, "scheduler.mig_demand"),
        ({"gpu_sharing": GpuSharing.time_slicing, "replicas": 2}, "scheduler.gpu_sharing"),
        ({"device_split_count": 4}, "scheduler.device_split_count"),
        ({"gpu_placement": "best_fit"}, "scheduler.gpu_placement"),
        ({"node_placement": "fgd"}, "scheduler.node_placement"),
        ({"backfill": Backfill.easy}, "scheduler.backfill"),
    ],
)
def test_config_the_mig_model_refuses(change: dict[str, Any], key: str) -> None:
    assert key in engine_error([job(1, 0.0, 1.0, 1, 1000)], [a100("all-1g.5gb")], replace(MIG, **change))


def test_mig_demand_without_mig_is_refused() -> None:
    message = engine_error(
        [job(1, 0.0, 1.0, 1, 1000)], [a100(None)], replace(BASE, mig_demand=MigDemand.smallest_fit)
    )
    assert "scheduler.mig_demand" in message


# --------------------------------------------------------------------------------------------------
# Static figures
# --------------------------------------------------------------------------------------------------


def test_instances_and_stranded_slices() -> None:
    # Node 0: 2 GPUs all-3g.20gb -> 4 instances, each GPU strands 7 - 2*3 = 1 slice. Node 1: 1 GPU
    # all-1g.5gb -> 7 instances; every job asks 6000 MiB > 5120, so all 7 of its slices are stranded.
    # 2 + 7 = 9 stranded of 21 slices = 42.86 %; 11 instances; devices 4 + 7 + the V100's 1 = 12.
    nodes = [a100("all-3g.20gb", 2), a100("all-1g.5gb"), {"gpu_model": "V100", "num_gpus": 1}]
    result = engine_simulate(
        jobs_frame([job(1, 0.0, 1.0, 1, 1000, gpu_mem_mib=6000)]), nodes_frame(nodes), MIG
    )
    assert result.stats["mig_instances"] == 11.0
    assert result.stats["devices"] == 12.0
    assert result.stats["mig_stranded_pct"] == pytest.approx(100.0 * 9 / 21)


def test_no_mig_has_no_figures() -> None:
    result = engine_simulate(jobs_frame([job(1, 0.0, 1.0, 1, 1000)]), nodes_frame([a100(None, 2)]), BASE)
    assert result.stats["mig_instances"] == 0.0 and result.stats["devices"] == 2.0
    assert result.stats["mig_stranded_pct"] != result.stats["mig_stranded_pct"]  # NaN


def test_a_layout_sweep_reports_against_whole_gpus(tmp_path: Path) -> None:
    # Three points of sweep mig-openb on a quarter of openb's pods, composed and run as `gpureplay run`
    # does (in-process: the kernels are this worker's); the report compares each layout with whole GPUs
    # (all-disabled), and only a report with MIG runs shows the MIG columns.
    sweep = tmp_path / "sweep"
    register_configs()
    for layout in ("all-disabled", "all-3g.40gb", "all-7g.80gb"):
        overrides = ["experiment=mig-openb", f"cluster.mig_layout={layout}", "workload.sample_fraction=0.25"]
        with initialize_config_module(config_module="gpureplay.conf", version_base="1.3"):
            run_experiment(compose("config", overrides=overrides), sweep / layout)
    summary = pl.read_parquet(sweep / "all-3g.40gb" / "summary.parquet").row(0, named=True)
    # 128 A100-80GB, 2 x 3g.40gb each: 256 instances; each GPU strands 7 - 2 * 3 = 1 of 7 slices.
    assert summary["mig_instances"] == 256
    assert summary["mig_stranded_pct"] == pytest.approx(100.0 / 7.0)
    assert summary["slowed_jobs"] > 0
    whole = pl.read_parquet(sweep / "all-7g.80gb" / "summary.parquet").row(0, named=True)
    plain = pl.read_parquet(sweep / "all-disabled" / "summary.parquet").row(0, named=True)
    # One 7g instance per GPU is the whole GPU: the same replay.
    assert (whole["wait_mean"], whole["jct_mean"]) == (plain["wait_mean"], plain["jct_mean"])
    assert plain["mig_instances"] == 0 and plain["mig_stranded_pct"] is None

    text = (build_report([sweep], tmp_path / "report").parent / "report.md").read_text()
    section = text[text.index("## GPU sharing") : text.index("## Change vs baseline")]
    assert "| MIG instances | MIG slices stranded (%) |" in section
    assert "| cluster.mig_layout=all-3g.40gb | 1 |" in section and "| 256 | 14.3 |" in section
    change = text[text.index("## Change vs baseline") :]
    assert "| cluster.mig_layout=all-3g.40gb | cluster.mig_layout=all-disabled |" in change

    no_mig = tmp_path / "no-mig"
    no_mig.mkdir()
    shutil.copytree(sweep / "all-disabled", no_mig / "all-disabled")
    only = (build_report([no_mig], tmp_path / "report2").parent / "report.md").read_text()
    assert "MIG instances" not in only


def test_mig_nodes_partition_the_first_servers() -> None:
    from gpureplay.cluster.homogeneous import homogeneous_nodes

    nodes = homogeneous_nodes(4, 8, "A100-80GB", mig_layout="all-3g.40gb", mig_nodes=3).nodes
    assert nodes["mig_layout"].to_list() == ["all-3g.40gb"] * 3 + [None]
    # Three MIG servers of 8 GPUs x 2 instances, one whole: 48 + 8 devices.
    result = engine_simulate(jobs_frame([job(1, 0.0, 1.0, 1, 1000)]), nodes, MIG)
    assert (result.stats["mig_instances"], result.stats["devices"]) == (48.0, 56.0)


@pytest.mark.parametrize(
    ("cluster", "key", "says"),
    [
        ({"gpu_model": "V100", "mig_layout": "all-1g.10gb"}, "cluster.mig_layout", "has no MIG"),
        ({"mig_layout": "all-1g.10gb", "mig_nodes": 5}, "cluster.mig_nodes", "between 0 and cluster.nodes"),
        ({"mig_nodes": 1}, "cluster.mig_nodes", "cluster.mig_layout, which is not set"),
    ],
)
def test_cluster_mig_keys_are_checked(cluster: dict[str, Any], key: str, says: str) -> None:
    from gpureplay.cluster.homogeneous import homogeneous_nodes

    args = {"gpu_model": "A100-80GB", **cluster}
    with pytest.raises(InputError) as err:
        homogeneous_nodes(4, 8, **args)
    assert f"config key '{key}'" in str(err.value) and says in str(err.value)


def test_a_node_layout_without_the_strategy_is_refused_before_compiling() -> None:
    from gpureplay.replay.mig import check_mig_inputs

    nodes = nodes_frame([a100("all-1g.5gb")])
    with pytest.raises(InputError, match=r"scheduler\.mig_strategy: single"):
        check_mig_inputs(jobs_frame([job(1, 0.0, 1.0, 1, 1000)]), nodes, "none")
    # Under mixed a config with instances is a valid node (one resource per profile).
    check_mig_inputs(jobs_frame([job(1, 0.0, 1.0, 1, 1000)]), nodes, "mixed")
    with pytest.raises(InputError, match="no instance"):
        check_mig_inputs(jobs_frame([job(1, 0.0, 1.0, 1, 1000)]), nodes_frame([a100("all-enabled")]), "mixed")
