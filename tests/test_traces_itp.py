"""Microsoft ITP (ElasticFlow release) adapter on the bundled raw and elasticflow traces."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.adapted import AdaptedTrace
from gpureplay.traces.itp import load_itp
from gpureplay.traces.philly import split_reason

# traces/itp/SOURCE.md: rows per cluster.
ITP_ROWS = {
    "cluster01": 1_595, "cluster02": 5_778, "cluster03": 3_011, "cluster04": 15_802, "cluster05": 3_629,
    "cluster06": 2_396, "cluster07": 12_699, "cluster08": 13_047, "cluster09": 11_134, "cluster10": 260,
}  # fmt: skip


@pytest.fixture(scope="module")
def itp_all() -> AdaptedTrace:
    return load_itp()


def test_all_clusters_counts(itp_all: AdaptedTrace) -> None:
    jobs = itp_all.jobs
    assert jobs.height == 69_351 == sum(ITP_ROWS.values())
    assert dict(jobs.group_by("queue").len().iter_rows()) == ITP_ROWS
    assert (jobs["queue"] == jobs["source_cluster"]).all()
    assert set(jobs["source_num_gpu"].to_list()) == {1, 2, 4, 8, 16, 32, 64}
    assert jobs.filter(pl.col("queue") == "cluster09")["source_num_gpu"].unique().to_list() == [1]
    assert jobs["source_job_id"].n_unique() == jobs.height
    assert jobs["duration"].min() == 600.0
    assert len(itp_all.sha256) == 64 and itp_all.source.count("raw-traces/cluster") == 10


def test_all_clusters_job_ids_follow_cluster_then_row(itp_all: AdaptedTrace) -> None:
    by_id = itp_all.jobs.sort("job_id")
    assert by_id["job_id"].to_list() == list(range(1, 69_352))
    assert by_id.select("source_cluster", "source_row").equals(
        by_id.sort("source_cluster", "source_row").select("source_cluster", "source_row")
    )
    first = by_id.filter(pl.col("source_cluster") == "cluster02").row(0, named=True)
    assert (first["job_id"], first["source_row"]) == (ITP_ROWS["cluster01"] + 1, 1)


def test_all_clusters_share_one_clock(itp_all: AdaptedTrace) -> None:
    jobs = itp_all.jobs
    assert jobs["submit_time"][0] == 0.0
    assert jobs.equals(jobs.sort("submit_time", "job_id"))
    raw = {
        name: pl.read_csv(resolve_data_path(f"itp/raw-traces/{name}.csv.gz"))["submission_time"]
        for name in ("cluster04", "cluster10")
    }
    offset = min(
        pl.read_csv(resolve_data_path(f"itp/raw-traces/{name}.csv.gz"))["submission_time"].min()  # type: ignore[type-var]
        for name in ITP_ROWS
    )
    for name, times in raw.items():
        mine = jobs.filter(pl.col("queue") == name).sort("source_row")["submit_time"]
        assert (mine == times.cast(pl.Float64) - float(offset)).all()  # type: ignore[arg-type]


def test_pods_of_at_most_eight_gpus(itp_all: AdaptedTrace) -> None:
    jobs = itp_all.jobs
    shapes = dict(
        jobs.group_by("source_num_gpu").agg(pl.struct("num_pods", "gpu_milli").unique().first()).iter_rows()
    )
    assert shapes[16] == {"num_pods": 2, "gpu_milli": 8000}
    assert shapes[64] == {"num_pods": 8, "gpu_milli": 8000}
    assert shapes[4] == {"num_pods": 1, "gpu_milli": 4000}
    big = jobs.filter(pl.col("source_num_gpu") > 8).height
    assert itp_all.changes == {split_reason(8): big}


def test_one_cluster_raw_and_elasticflow() -> None:
    raw = load_itp(4)
    flow = load_itp(4, variant="elasticflow")
    for trace in (raw, flow):
        jobs = trace.jobs
        assert jobs.height == 15_802
        assert jobs["queue"].unique().to_list() == ["cluster04"]
        assert jobs.filter(pl.col("source_num_gpu") == 8).height == 2_779
        assert jobs.filter(pl.col("source_num_gpu") == 32).height == 254
        assert jobs["submit_time"].min() == 0.0
        assert trace.changes == {split_reason(8): jobs.filter(pl.col("source_num_gpu") > 8).height}
    assert raw.jobs.select("job_id", "source_job_id", "duration").equals(
        flow.jobs.select("job_id", "source_job_id", "duration")
    )
    assert "source_model_name" not in raw.jobs.columns
    assert set(flow.jobs["source_model_name"].unique().to_list()) <= {
        "resnet50", "vgg16", "bert", "inception3", "deepspeech2", "gpt2",
    }  # fmt: skip
    assert (
        flow.jobs.select("source_deadline", "source_batch_size", "source_num_iteration")
        .null_count()
        .sum_horizontal()
        .item()
        == 0
    )


def test_max_gpus_per_pod_one() -> None:
    jobs = load_itp(10, max_gpus_per_pod=1).jobs
    assert (jobs["gpu_milli"] == 1000).all()
    assert (jobs["num_pods"] == jobs["source_num_gpu"]).all()


@pytest.mark.parametrize("bad", [0, 11, -1, "3", True, 2.0])
def test_bad_cluster_id(bad: Any) -> None:
    with pytest.raises(InputError) as err:
        load_itp(bad)
    assert "trace.cluster_id" in str(err.value)


def test_bad_variant() -> None:
    with pytest.raises(InputError, match=r"trace\.variant"):
        load_itp(1, variant="cooked")  # type: ignore[arg-type]


def _write_gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()))


def test_own_root_and_file_level_errors(tmp_path: Path) -> None:
    header = "job_id,submission_time,duration,num_gpu\n"
    _write_gz(tmp_path / "raw-traces" / "cluster02.csv.gz", header + "a,100,600,1\nb,50,700,12\n")
    jobs = load_itp(2, root=tmp_path).jobs
    assert jobs.select("job_id", "submit_time", "num_pods", "gpu_milli", "source_job_id").rows() == [
        (2, 0.0, 2, 6000, "b"),
        (1, 50.0, 1, 1000, "a"),
    ]
    # A rule broken after conversion is reported against the file it came from.
    bad = tmp_path / "raw-traces" / "cluster03.csv.gz"
    _write_gz(bad, header + "a,100,600,1\nb,50,-5,2\n")
    with pytest.raises(InputError) as err:
        load_itp(3, root=tmp_path)
    assert str(err.value).startswith(f"{bad}, row 2, column 'duration': must be a finite number >= 0")
    with pytest.raises(FileNotFoundError):
        load_itp(4, root=tmp_path)


def test_missing_column_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "elasticflow-traces" / "cluster01.csv.gz"
    _write_gz(path, "job_id,submission_time,duration,num_gpu\na,1,600,1\n")
    with pytest.raises(InputError) as err:
        load_itp(1, variant="elasticflow", root=tmp_path)
    assert str(err.value).startswith(
        f"{path}: missing column(s) num_iteration, deadline, batch_size, model_name"
    )
