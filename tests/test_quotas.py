"""Per-queue GPU quotas derived from a trace (:mod:`gpureplay.queues.quotas`): Philly's real per-VC node
counts (the Helios artifact's ``philly_vc.csv``, bundled) and shares of GPU-time; every queue given one."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from tests.reference.strategies import jobs_frame

from gpureplay.errors import InputError
from gpureplay.paths import bundled_traces_dir
from gpureplay.queues.quotas import (
    HELIOS_GPUS_PER_NODE,
    gpu_time_quotas,
    quota_of_each_queue,
    read_vc_nodes,
    vc_node_quotas,
)

VC_NODES = bundled_traces_dir() / "philly" / "philly_vc_nodes.csv"


def test_the_bundled_philly_vcs_give_helios_quotas() -> None:
    # 11 VCs, 352 nodes of 8 GPUs (Helios's homogeneous VCs): 2,816 GPUs; 6214e9 has 64 nodes -> 512.
    nodes = read_vc_nodes(VC_NODES)
    assert len(nodes) == 11
    assert sum(nodes.values()) == 352
    quotas = vc_node_quotas(nodes)
    assert HELIOS_GPUS_PER_NODE == 8
    assert quotas["6214e9"] == 512.0 and quotas["ed69ec"] == 64.0
    assert sum(quotas.values()) == 2816.0
    assert vc_node_quotas(nodes, gpus_per_node=4)["6214e9"] == 256.0


@pytest.mark.parametrize(
    ("text", "row", "column", "message"),
    [
        ("vc,node num\na,4\na,2\n", 2, "vc", "appears twice"),
        ("vc,node num\na,4\n,2\n", 2, "vc", "empty VC name"),
        ("vc,node num\na,0\n", 1, "node num", "whole number >= 1"),
        ("vc,node num\na,two\n", 1, "node num", "whole number >= 1"),
    ],
)
def test_bad_vc_tables_name_the_row_and_column(
    tmp_path: Path, text: str, row: int, column: str, message: str
) -> None:
    path = tmp_path / "vcs.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(message)) as info:
        read_vc_nodes(path)
    problem = info.value.problems[0]
    assert (problem.source, problem.row, problem.column) == (str(path), row, column)


def test_a_vc_table_without_its_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "vcs.csv"
    path.write_text("name,nodes\na,4\n")
    with pytest.raises(InputError, match="missing column"):
        read_vc_nodes(path)
    with pytest.raises(InputError, match="cannot read"):
        read_vc_nodes(tmp_path / "absent.csv")


def _jobs(rows: list[tuple[str, int, int, float]]) -> pl.DataFrame:
    """Jobs of (queue, pods, gpu_milli, duration), submitted at 0."""
    return jobs_frame(
        [
            {"job_id": i, "submit_time": 0.0, "duration": d, "num_pods": p, "gpu_milli": m, "queue": q}
            for i, (q, p, m, d) in enumerate(rows, start=1)
        ]
    )


def test_gpu_time_shares_round_by_the_largest_remainder() -> None:
    # GPU-seconds: a 2 x 1 x 100 + 1 x 0.5 x 100 = 250; b 1 x 2 x 100 = 200; c 1 x 1 x 50 = 50 (total 500).
    # 10 GPUs: exact 5.0, 4.0, 1.0 -> 5, 4, 1. 7 GPUs: exact 3.5, 2.8, 0.7 -> floors 3, 2, 0 (1 left over
    # 2 GPUs): remainders 0.5, 0.8, 0.7 -> b then c -> 3, 3, 1.
    jobs = _jobs([("a", 2, 1000, 100.0), ("a", 1, 500, 100.0), ("b", 1, 2000, 100.0), ("c", 1, 1000, 50.0)])
    assert gpu_time_quotas(jobs, 10) == {"a": 5.0, "b": 4.0, "c": 1.0}
    assert gpu_time_quotas(jobs, 7) == {"a": 3.0, "b": 3.0, "c": 1.0}
    assert sum(gpu_time_quotas(jobs, 13).values()) == 13.0


def test_gpu_time_ties_go_by_queue_name_and_idle_queues_get_nothing() -> None:
    # a and b hold 100 GPU-seconds each, z none: 3 GPUs -> exact 1.5, 1.5, 0 -> floors 1, 1, 0; the one
    # left goes to the first by name, a.
    jobs = _jobs([("b", 1, 1000, 100.0), ("a", 1, 1000, 100.0), ("z", 1, 0, 100.0)])
    assert gpu_time_quotas(jobs, 3) == {"a": 2.0, "b": 1.0, "z": 0.0}


def test_gpu_time_of_no_gpus_is_refused() -> None:
    with pytest.raises(InputError, match="no GPU-time"):
        gpu_time_quotas(_jobs([("a", 1, 0, 10.0)]), 4)


def test_every_queue_gets_its_quota_or_a_clear_error() -> None:
    jobs = _jobs([("a", 1, 1000, 1.0), ("x", 1, 1000, 1.0), ("a", 1, 1000, 1.0), ("y", 1, 1000, 1.0)])
    with pytest.raises(
        InputError, match=re.escape("queue 'x' has no quota (2 queues without one: x, y)")
    ) as info:
        quota_of_each_queue(jobs, {"a": 8.0})
    assert (info.value.problems[0].row, info.value.problems[0].column) == (2, "queue")
    assert quota_of_each_queue(jobs, {"a": 8.0}, missing="zero") == {"a": 8.0, "x": 0.0, "y": 0.0}


def test_philly_jobs_have_four_vcs_the_node_list_lacks() -> None:
    # Philly's job table names 15 VCs; the Helios node list 11: the other four hold 18 jobs.
    from gpureplay.traces.philly import load_philly

    jobs = load_philly().jobs
    quotas = vc_node_quotas(read_vc_nodes(VC_NODES))
    given = quota_of_each_queue(jobs, quotas, missing="zero")
    absent = [q for q, g in given.items() if g == 0.0]
    assert len(given) == 15 and len(absent) == 4
    assert jobs.filter(pl.col("queue").is_in(absent)).height == 18
