"""Alibaba openb 2023 adapter on the real bundled pod lists (counts from traces/openb/SOURCE.md)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.paths import resolve_data_path
from gpureplay.traces.openb import QOS_PRIORITY, load_openb

OPENB = resolve_data_path("openb/openb_pod_list_default.csv.gz").parent
MULTIGPU = {"multigpu20": 8324, "multigpu30": 8508, "multigpu40": 8746, "multigpu50": 9061}
TIMED = {
    "cpu0": 7064, "cpu037": 7336, "cpu050": 7439, "cpu072": 7608, "cpu100": 7853, "cpu200": 8832,
    "cpu235": 9240, "cpu250": 9420, "cpu300": 10094,
    **{f"gpushare{n}": 8152 for n in (20, 40, 60, 80, 100)},
    **{f"gpuspec{n:02d}": 8152 for n in (5, 10, 20, 25, 33)},
}  # fmt: skip
TRACE_END = 12_902_960.0
HEADER = ",".join(
    ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
     "creation_time", "deletion_time", "scheduled_time"]
) + "\n"  # fmt: skip
GOOD = [
    "p0,12000,16384,1,1000,,LS,Running,0,500,0",
    "p1,6000,12288,1,460,V100M16|T4,BE,Failed,10,90,20",
    "p2,8000,32768,4,1000,,Guaranteed,Succeeded,30,400,40",
    "p3,1000,2048,0,0,,Burstable,Pending,50,600,",
]


def _csv(tmp_path: Path, rows: list[str], header: str = HEADER) -> Path:
    path = tmp_path / "pods.csv"
    path.write_text(header + "\n".join(rows) + "\n")
    return path


def test_default_pod_list_demand_and_qos() -> None:
    trace = load_openb(pending="keep")
    jobs = trace.jobs
    assert jobs.height == 8152
    assert (jobs["num_pods"] == 1).all()
    assert jobs["job_id"].sort().to_list() == list(range(1, 8153))
    assert ((jobs["gpu_milli"] > 0) & (jobs["gpu_milli"] < 1000)).sum() == 3078
    mix = dict(jobs.group_by("source_num_gpu").len().iter_rows())
    assert mix == {0: 1088, 1: 6989, 2: 16, 4: 15, 8: 44}
    whole = jobs.filter(pl.col("source_num_gpu") > 1)
    assert (whole["gpu_milli"] == whole["source_num_gpu"] * 1000).all()
    assert (jobs.filter(pl.col("source_num_gpu") == 0)["gpu_milli"] == 0).all()
    qos = dict(jobs.group_by("source_qos").len().iter_rows())
    assert qos == {"LS": 4647, "BE": 3398, "Burstable": 100, "Guaranteed": 7}
    priorities = dict(jobs.group_by("priority").len().iter_rows())
    assert priorities == {QOS_PRIORITY[q]: n for q, n in qos.items()}
    assert jobs["preemptible"].sum() == 3398
    assert (jobs["queue"] == "default").all() and jobs["user"].null_count() == 8152
    phases = dict(jobs.group_by("source_pod_phase").len().iter_rows())
    assert phases == {"Running": 5193, "Failed": 1870, "Pending": 897, "Succeeded": 192}


def test_timed_drops_pending_and_flags_censored_pods() -> None:
    trace = load_openb()
    jobs = trace.jobs
    assert jobs.height == 8152 - 897
    assert trace.changes["never scheduled (Pending, empty scheduled_time): dropped"] == 897
    assert (jobs["source_pod_phase"] != "Pending").all()
    censored = jobs.filter(pl.col("source_censored"))
    assert censored.height == 34
    assert trace.changes["still running at the trace end (censored): kept, duration is a lower bound"] == 34
    assert (censored["source_deletion_time"] == TRACE_END).all()
    assert (censored["source_pod_phase"] == "Running").all()
    assert jobs["submit_time"].min() == 0.0 and (jobs["duration"] >= 0).all()
    assert jobs.select("submit_time", "job_id").rows() == sorted(jobs.select("submit_time", "job_id").rows())
    assert (jobs["submit_time"] == jobs["source_creation_time"]).all()
    assert (jobs["duration"] == jobs["source_deletion_time"] - jobs["source_scheduled_time"]).all()
    # openb-pod-0017: 8 whole GPUs, Burstable, scheduled 9,437,497 s, deleted 10,769,854 s.
    pod = jobs.filter(pl.col("source_name") == "openb-pod-0017").row(0, named=True)
    assert (pod["gpu_milli"], pod["priority"], pod["preemptible"]) == (8000, 1, False)
    assert (pod["submit_time"], pod["duration"], pod["job_id"]) == (9437497.0, 10769854.0 - 9437497.0, 18)


def test_timed_keep_replays_pending_pods_for_their_lifetime() -> None:
    trace = load_openb(pending="keep")
    pending = trace.jobs.filter(pl.col("source_pod_phase") == "Pending")
    assert pending.height == 897
    assert trace.changes["never scheduled (Pending): kept, duration = deletion_time - creation_time"] == 897
    assert (pending["duration"] == pending["source_deletion_time"] - pending["source_creation_time"]).all()


def test_packing_arrives_in_file_order_and_never_departs() -> None:
    trace = load_openb(timing="packing", packing_duration=5e8)
    jobs = trace.jobs
    assert jobs.height == 8152
    assert (jobs["submit_time"] == (jobs["job_id"] - 1).cast(pl.Float64)).all()
    assert (jobs["duration"] == 5e8).all()
    assert trace.changes["packing: submit_time = file row - 1 (arrival order, 1 s apart)"] == 8152
    assert trace.changes["packing: pod never departs (duration = packing_duration)"] == 8152


@pytest.mark.parametrize(("variant", "rows"), sorted(MULTIGPU.items()))
def test_multigpu_variants_load_only_for_packing(variant: str, rows: int) -> None:
    path = OPENB / f"openb_pod_list_{variant}.csv.gz"
    trace = load_openb(path, timing="packing")
    assert trace.jobs.height == rows
    assert trace.jobs["gpu_milli"].max() == 8000
    assert trace.changes["no qos column: priority 0 and preemptible for every pod"] == rows
    with pytest.raises(InputError, match="timing='packing'"):
        load_openb(path)


@pytest.mark.parametrize(("variant", "rows"), sorted(TIMED.items()))
def test_every_other_variant_loads_timed(variant: str, rows: int) -> None:
    trace = load_openb(OPENB / f"openb_pod_list_{variant}.csv.gz", pending="keep")
    assert trace.jobs.height == rows
    assert trace.changes["still running at the trace end (censored): kept, duration is a lower bound"] > 0


def test_gpu_spec_resolves_catalog_aliases() -> None:
    trace = load_openb(OPENB / "openb_pod_list_gpuspec33.csv.gz", timing="packing")
    models = trace.jobs["gpu_models"]
    assert models.null_count() == 8152 - 2388
    seen = set(models.explode().drop_nulls().to_list())
    assert seen == {"A10", "G2", "G3", "P100", "T4", "V100", "V100-32GB"}
    # "V100M16|V100M32|V100M32" (22 pods) and "A10|G2|P100|T4|V100M16|V100M32|V100M32" (3 pods).
    assert trace.changes["gpu_spec names a model twice: duplicate removed"] == 25
    assert (models.drop_nulls().list.n_unique() == models.drop_nulls().list.len()).all()


def test_small_file_mapping(tmp_path: Path) -> None:
    trace = load_openb(_csv(tmp_path, [*GOOD, "p4,500,1024,0,300,,BE,Running,70,80,75"]), pending="keep")
    rows = {r["source_name"]: r for r in trace.jobs.iter_rows(named=True)}
    assert rows["p1"]["gpu_models"] == ["V100", "T4"] and rows["p1"]["gpu_milli"] == 460
    assert (rows["p1"]["duration"], rows["p1"]["preemptible"], rows["p1"]["priority"]) == (70.0, True, 0)
    assert (rows["p2"]["gpu_milli"], rows["p2"]["cpu_milli"], rows["p2"]["mem_mib"]) == (4000, 8000, 32768)
    assert rows["p3"]["duration"] == 550.0 and rows["p3"]["gpu_milli"] == 0
    assert rows["p4"]["gpu_milli"] == 0
    assert trace.changes["num_gpu 0 with gpu_milli > 0: gpu_milli set to 0"] == 1
    assert rows["p4"]["source_censored"] is False and rows["p3"]["source_censored"] is True


@pytest.mark.parametrize(
    ("bad_row", "column"),
    [
        ("q,1000,1024,2,500,,LS,Running,0,10,0", "gpu_milli"),
        ("q,1000,1024,1,1500,,LS,Running,0,10,0", "gpu_milli"),
        ("q,1000,1024,1,500,,Gold,Running,0,10,0", "qos"),
        ("q,1000,1024,1,500,,LS,Running,0,10,20", "deletion_time"),
        ("q,many,1024,1,500,,LS,Running,0,10,0", "cpu_milli"),
        ("q,1000,lots,1,500,,LS,Running,0,10,0", "memory_mib"),
        ("q,1000,1024,1,500,TPUv4,LS,Running,0,10,0", "gpu_spec"),
        ("q,1000,1024,1,500,,LS,Running,never,10,0", "creation_time"),
    ],
)
def test_bad_values_name_file_row_and_column(tmp_path: Path, bad_row: str, column: str) -> None:
    path = _csv(tmp_path, [*GOOD, bad_row])
    with pytest.raises(InputError) as err:
        load_openb(path)
    problem = err.value.problems[0]
    assert (problem.source, problem.row, problem.column) == (str(path), 5, column)


def test_missing_columns_and_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing column.*num_gpu"):
        load_openb(_csv(tmp_path, ["p0,1,1,1"], header="name,cpu_milli,memory_mib,gpu_milli\n"))
    with pytest.raises(InputError, match="timing"):
        load_openb(timing="fast")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="packing_duration"):
        load_openb(timing="packing", packing_duration=float("inf"))


def test_empty_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="the file is empty"):
        load_openb(empty)
    with pytest.raises(InputError, match="the trace has no jobs"):
        load_openb(_csv(tmp_path, []))
    # polars reads a blank line as a row of nulls: it is dropped and counted, not reported as bad.
    trace = load_openb(_csv(tmp_path, [*GOOD, ""]))
    assert trace.changes["blank line: ignored"] == 1 and trace.jobs.height == 3
