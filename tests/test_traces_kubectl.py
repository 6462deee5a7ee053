"""Your own jobs from ``kubectl get ... -o json`` (gpureplay.traces.kubectl) and their GPU utilisation
from a DCGM exporter scrape (gpureplay.traces.dcgm).

The files are written as kubectl and Prometheus print them (tests/kube_objects.py): Jobs with the job
controller's conditions, PyTorchJobs as training-operator reports them, Volcano Jobs and PodGroups,
Kueue Workloads, PriorityClasses, and ``/api/v1/query_range`` answers of dcgm-exporter's series.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any, cast

import polars as pl
import pytest
from omegaconf import OmegaConf
from tests.cli import gpureplay
from tests.kube_objects import (
    T0,
    batch_job,
    container,
    dcgm_labels,
    kubectl_list,
    owner_ref,
    pod_template,
    podgroup,
    priority_class,
    prometheus_matrix,
    pytorch_job,
    series,
    ts,
    volcano_job,
    workload,
    write,
)

from gpureplay.config import compose_config
from gpureplay.errors import InputError
from gpureplay.traces.kubectl import NEVER_STARTED, RUNNING_KEPT, load_kubectl
from gpureplay.traces.registry import load_trace
from gpureplay.workload.utilization import Utilization, assign_utilization

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "jobs"
UTIL, ACTIVE = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


def rows(jobs: pl.DataFrame) -> dict[str, dict[str, Any]]:
    return {r["job_name"]: r for r in jobs.iter_rows(named=True)}


def load(tmp_path: Path, *items: dict[str, Any], **kwargs: Any) -> Any:
    return load_kubectl(write(tmp_path / "jobs.json", kubectl_list(*items)), **kwargs)


# --- each kind --------------------------------------------------------------------------------------


def test_batch_jobs_finished_failed_running_and_pending(tmp_path: Path) -> None:
    trace = load(
        tmp_path,
        priority_class("high", 100_000),
        priority_class("low", 1000, default=True),
        batch_job(
            "resnet", created=0, start=5, end=3605, parallelism=2,
            labels={"kueue.x-k8s.io/queue-name": "team-a-queue"},
            template=pod_template(container(4, cpu="15500m", memory="64Gi"), priority_class="high"),
        ),
        batch_job("crash", created=100, start=110, end=500, failed=True),
        batch_job("still", created=200, start=210, end=None),
        batch_job("held", created=300, start=None, end=None, suspend=True),
    )  # fmt: skip
    jobs = rows(trace.jobs)
    assert list(jobs) == ["team-a/resnet", "team-a/crash", "team-a/still"]
    resnet = jobs["team-a/resnet"]
    assert (resnet["job_id"], resnet["submit_time"], resnet["duration"], resnet["num_pods"]) == (
        3,
        0.0,
        3600.0,
        2,
    )
    assert (resnet["gpu_milli"], resnet["cpu_milli"], resnet["mem_mib"]) == (4000, 15500, 65536)
    assert (resnet["queue"], resnet["user"], resnet["priority"]) == ("team-a/team-a-queue", "team-a", 100_000)
    assert resnet["source_priority_class"] == "high" and resnet["source_queueing_delay"] == 5.0
    crash = jobs["team-a/crash"]  # kept: it held its GPU until it failed
    assert (crash["duration"], crash["source_state"], crash["priority"]) == (390.0, "Failed", 1000)
    assert crash["source_priority_class"] == "low"  # the globalDefault class
    still = jobs["team-a/still"]  # observed_at defaults to the latest time of the file: resnet's end
    assert still["source_censored"] and still["duration"] == 3605 - 210
    assert trace.changes[NEVER_STARTED] == 1 and trace.changes[RUNNING_KEPT] == 1
    assert "no rows" not in trace.describe_changes()


def test_running_jobs_can_be_dropped_or_observed_later(tmp_path: Path) -> None:
    items = (batch_job("done", end=100), batch_job("still", created=10, start=20, end=None))
    dropped = load(tmp_path, *items, running="drop")
    assert dropped.jobs["job_name"].to_list() == ["team-a/done"]
    later = load(tmp_path, *items, observed_at=ts(1020))
    assert rows(later.jobs)["team-a/still"]["duration"] == 1000.0
    with pytest.raises(
        InputError, match=r"config key 'trace.observed_at': Job 'team-a/still': started at .* after"
    ):
        load(tmp_path, *items, observed_at=ts(15))
    with pytest.raises(InputError, match=r"config key 'trace.observed_at': .* has no time zone"):
        load(tmp_path, *items, observed_at="2024-06-03T08:00:00")


def test_pytorch_job_master_and_workers(tmp_path: Path) -> None:
    trace = load(
        tmp_path,
        priority_class("high", 5000),
        pytorch_job(
            "bert",
            created=50,
            running=60,
            end=7260,
            workers=3,
            gpus=8,
            queue="research",
            priority_class="high",
        ),
        pytorch_job("lm", created=70, running=80, end=None, workers=1, gpus=2, master_gpus=1),
        pytorch_job("waiting", created=90, running=None, end=None),
    )
    jobs = rows(trace.jobs)
    bert = jobs["team-b/bert"]  # Running's transition time is the start, though the condition is False now
    assert (bert["num_pods"], bert["gpu_milli"], bert["duration"], bert["queue"]) == (
        4,
        8000,
        7200.0,
        "research",
    )
    assert bert["priority"] == 5000 and bert["submit_time"] == 0.0 and bert["source_queueing_delay"] == 10.0
    lm = jobs["team-b/lm"]  # Master 1 GPU, Worker 2 GPUs: every pod the largest
    assert (lm["num_pods"], lm["gpu_milli"], lm["source_censored"]) == (2, 2000, True)
    assert (
        trace.changes[
            "pod sets ask for different resources: every pod replayed with the largest request of each"
        ]
        == 1
    )
    assert "team-b/waiting" not in jobs


def test_volcano_job_tasks_queue_and_phases(tmp_path: Path) -> None:
    trace = load(
        tmp_path,
        priority_class("high", 900),
        volcano_job("gpt", created=70, running=100, end=1900),
        volcano_job("broken", created=80, running=90, end=300, phase="Failed", tasks=(("worker", 4, 1),)),
        volcano_job("queued", created=90, running=None, end=None),
    )
    jobs = rows(trace.jobs)
    gpt = jobs["team-c/gpt"]  # ps (no GPU) left out beside two 4-GPU workers
    assert (gpt["num_pods"], gpt["gpu_milli"], gpt["duration"], gpt["queue"], gpt["priority"]) == (
        2, 4000, 1800.0, "research", 900,
    )  # fmt: skip
    assert (jobs["team-c/broken"]["num_pods"], jobs["team-c/broken"]["source_state"]) == (4, "Failed")
    assert trace.changes["pods without GPUs beside GPU pods (a launcher, a parameter server): left out"] == 1
    assert trace.changes[NEVER_STARTED] == 1


def test_podgroups_alone_owned_and_completed(tmp_path: Path) -> None:
    owner = volcano_job("gpt", created=0, running=10, end=1000)
    owned = podgroup("gpt-3f1c", owners=[owner_ref("Job", "gpt", "team-c", "batch.volcano.sh/v1alpha1")])
    trace = load(
        tmp_path,
        owner,
        owned,
        podgroup("pg-run", created=5, scheduled=25, members=2, gpus="8"),
        podgroup("pg-done", created=6, scheduled=26, phase="Completed"),
    )
    jobs = rows(trace.jobs)
    assert set(jobs) == {"team-c/gpt", "team-c/pg-run"}
    assert (jobs["team-c/pg-run"]["num_pods"], jobs["team-c/pg-run"]["gpu_milli"]) == (2, 4000)
    assert jobs["team-c/pg-run"]["source_censored"] and jobs["team-c/pg-run"]["duration"] == 1000 - 25
    assert trace.changes["PodGroup of a VolcanoJob in the file: left out (the VolcanoJob is the job)"] == 1
    assert any(r.startswith("PodGroup Completed") for r in trace.changes)
    with pytest.raises(
        InputError, match=r"key 'items\[0\].spec.minResources\[\"nvidia.com/gpu\"\]'.*minMember = 2"
    ):
        load(tmp_path, podgroup("odd", gpus="3"))


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_kueue_workload_replaces_its_job(tmp_path: Path, version: str) -> None:
    job = batch_job("train", created=89, start=125, end=3725, labels={"kueue.x-k8s.io/queue-name": "lq"})
    wl = workload(
        "job-train-3f2a1", created=90, admitted=120, finished=3720, queue="team-a-queue", priority=1000,
        count=2, owner=owner_ref("Job", "train", "team-a"), past=600, version=version,
    )  # fmt: skip
    trace = load(tmp_path, job, wl, workload("pending-wl", created=100, admitted=None, finished=None))
    (only,) = trace.jobs.iter_rows(named=True)
    assert (only["job_name"], only["queue"], only["priority"], only["source_priority_class"]) == (
        "team-a/job-train-3f2a1", "team-a/team-a-queue", 1000, "prod",
    )  # fmt: skip
    # Admitted to Finished, plus the 600 s of an earlier admission (evicted, re-admitted).
    assert (only["duration"], only["num_pods"], only["gpu_milli"]) == (3600.0 + 600.0, 2, 4000)
    assert trace.changes["Job managed by Kueue: replaced by its Workload"] == 1
    assert trace.changes[NEVER_STARTED] == 1


def test_mig_hami_and_gpu_product_selection(tmp_path: Path) -> None:
    mig = pod_template(container(None, extra={"nvidia.com/mig-3g.40gb": "1"}))
    hami = pod_template(container(1, extra={"nvidia.com/gpumem": "10240", "nvidia.com/gpucores": "30"}))
    pinned = pod_template(container(8), node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    trace = load(
        tmp_path,
        batch_job("mig", template=mig),
        batch_job("hami", template=hami),
        batch_job("pinned", template=pinned),
    )
    jobs = rows(trace.jobs)
    assert (jobs["team-a/mig"]["mig_profile"], jobs["team-a/mig"]["gpu_milli"]) == ("3g.40gb", 428)
    assert (jobs["team-a/hami"]["gpu_milli"], jobs["team-a/hami"]["gpu_mem_mib"]) == (300, 10240)
    assert jobs["team-a/pinned"]["gpu_models"] == ["H100-80GB"]


def test_documents_typed_lists_single_objects_and_gzip(tmp_path: Path) -> None:
    one, two = batch_job("a", end=100), volcano_job("b", created=5, running=6, end=50)
    lines = tmp_path / "jobs.jsonl"
    lines.write_text(json.dumps(kubectl_list(one)) + "\n" + json.dumps(two) + "\n")
    assert load_kubectl(lines).jobs["job_name"].to_list() == ["team-a/a", "team-c/b"]
    typed = copy.deepcopy(one)
    del typed["kind"], typed["apiVersion"]  # the API server's JobList: items carry no kind
    path = write(tmp_path / "typed.json", {"apiVersion": "batch/v1", "kind": "JobList", "items": [typed]})
    assert load_kubectl(path).jobs["source_kind"].to_list() == ["Job"]
    zipped = tmp_path / "single.json.gz"
    zipped.write_bytes(gzip.compress(json.dumps(two).encode()))
    assert load_kubectl(zipped).jobs["job_name"].to_list() == ["team-c/b"]


def test_other_kinds_are_skipped_and_counted(tmp_path: Path) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x", "namespace": "team-a"}}
    trace = load(tmp_path, service, batch_job("a"))
    assert trace.changes["Service (v1): not a job, skipped"] == 1


# --- errors: each names the file, the object and the field -------------------------------------------


def _set(item: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """``item`` with the field at ``dotted`` (``=``: a dot in a key, ``#i``: a list index) set, or deleted."""
    *parents, last = [p.replace("=", ".") for p in dotted.split(".")]
    target: Any = item
    for key in parents:
        target = target[int(key[1:])] if key.startswith("#") else target[key]
    if value is None:
        del target[last]
    else:
        target[last] = value
    return item


_LIMITS = "spec.template.spec.containers.#0.resources.limits"


@pytest.mark.parametrize(
    ("field", "value", "key", "fragment"),
    [
        (
            "metadata.creationTimestamp",
            None,
            "metadata.creationTimestamp",
            "missing: the job's submission time",
        ),
        ("metadata.creationTimestamp", "yesterday", "metadata.creationTimestamp", "not an RFC 3339 time"),
        ("status.startTime", "2024-06-03 08:00:05", "status.startTime", "has no time zone"),
        ("spec.parallelism", -1, "spec.parallelism", "must be a whole number >= 0"),
        (
            f"{_LIMITS}.nvidia=com/gpu",
            "one",
            'containers[0].resources.limits["nvidia.com/gpu"]',
            "'one' is not a Kubernetes quantity",
        ),
        (
            f"{_LIMITS}.nvidia=com/gpu",
            "500m",
            'containers[*].resources["nvidia.com/gpu"]',
            "a GPU count is a whole number",
        ),
        (
            f"{_LIMITS}.nvidia=com/mig-1g=10gb",
            "1",
            'resources["nvidia.com/mig-1g.10gb"]',
            "asking whole GPUs",
        ),
        (f"{_LIMITS}.nvidia=com/gpucores", "150", 'resources["nvidia.com/gpucores"]', "1..100"),
        ("spec.template.spec.containers", [], "spec.template.spec.containers", "at least one container"),
        ("spec.template", None, "spec.template", "missing: a pod template"),
        (
            "spec.template.spec.nodeSelector",
            {"nvidia.com/gpu.product": "NVIDIA-B300"},
            "nodeSelector",
            "'NVIDIA-B300'",
        ),
        (
            "status.completionTime",
            "2024-06-03T07:00:00Z",
            "status",
            "ends (2024-06-03T07:00:00Z) before it starts",
        ),
    ],
)
def test_each_problem_names_file_object_and_field(
    tmp_path: Path, field: str, value: Any, key: str, fragment: str
) -> None:
    bad = _set(batch_job("bad", created=1), field, value)
    path = write(tmp_path / "jobs.json", kubectl_list(batch_job("good"), bad))
    with pytest.raises(InputError) as err:
        load_kubectl(path)
    text = str(err.value)
    assert f"{path}, key 'items[1]." in text and key in text, text
    assert "Job 'team-a/bad'" in text and fragment in text, text


def test_request_and_limit_of_a_device_must_agree(tmp_path: Path) -> None:
    bad = batch_job("bad")
    bad["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2"
    with pytest.raises(
        InputError, match=r"requests\[\"nvidia.com/gpu\"\]': Job 'team-a/bad': request 2 differs"
    ):
        load(tmp_path, bad)


def test_listed_twice_and_unsupported_versions(tmp_path: Path) -> None:
    v2 = pytorch_job("bert")
    v2["apiVersion"] = "kubeflow.org/v2"
    with pytest.raises(InputError) as err:
        load(tmp_path, batch_job("a"), batch_job("a"), v2)
    text = str(err.value)
    assert "key 'items[1].metadata.name': Job 'team-a/a': listed twice (also at items[0])" in text
    assert "key 'items[2].apiVersion': PyTorchJob 'bert': apiVersion 'kubeflow.org/v2' is not read" in text


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"apiVersion": "v1", "kind": "List", "items": [', "not JSON (Expecting value at line 1"),
        ("[]", "expected a JSON object (a List or one Kubernetes object), found a JSON list"),
        (
            '{"apiVersion": "v1", "kind": "List", "items": []}',
            "no Job, PyTorchJob, Volcano Job, PodGroup or Workload",
        ),
        ("", "the file is empty"),
    ],
)
def test_unreadable_files(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "jobs.json"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        load_kubectl(path)
    assert str(err.value).startswith(str(path)) and fragment in str(err.value)


def test_a_file_above_max_file_mib_is_refused_by_its_size(tmp_path: Path) -> None:
    path = write(tmp_path / "jobs.json", kubectl_list(*(batch_job(f"j{i}") for i in range(40))))
    with pytest.raises(InputError, match=r"the file is 0\.\d MiB, above trace.max_file_mib = 0.01 MiB"):
        load_kubectl(path, max_file_mib=0.01)
    zipped = tmp_path / "jobs.json.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(InputError, match=r"more than that uncompressed, above trace.max_file_mib"):
        load_kubectl(zipped, max_file_mib=0.01)


def test_nothing_left_to_replay(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no job is left to replay \(1 never started"):
        load(tmp_path, batch_job("held", start=None, end=None, suspend=True))


# --- DCGM: per-job GPU utilisation ----------------------------------------------------------------------


def _jobs_for_dcgm() -> list[dict[str, Any]]:
    return [
        batch_job("resnet", created=0, start=10, end=1010, parallelism=2),
        pytorch_job("bert", created=0, running=20, end=2020, workers=1),
        volcano_job("gpt", created=0, running=30, end=3030),
        batch_job("train", created=0, start=40, end=4040),
        workload(
            "job-train-1a2b3",
            created=0,
            admitted=40,
            finished=4040,
            owner=owner_ref("Job", "train", "team-a"),
        ),
        batch_job("idle", created=0, start=50, end=5050),
    ]


def _scrape() -> dict[str, Any]:
    # Scraped through a Service without honor_labels: Prometheus renamed the exporter's pod labels.
    renamed = dcgm_labels(
        "exporter-0", "gpu-operator", exported_pod="idle-zz9zz", exported_namespace="team-a"
    )
    no_pod = {k: v for k, v in dcgm_labels("", "").items() if k not in ("pod", "namespace")}
    return prometheus_matrix(
        series(UTIL, dcgm_labels("resnet-x7k2p", "team-a", 0), [(100, 50), (400, 70)]),
        series(UTIL, dcgm_labels("resnet-q9m4t", "team-a", 1), [(100, 90), (400, 90)]),
        series(UTIL, dcgm_labels("bert-master-0", "team-b"), [(100, 10)]),
        series(ACTIVE, dcgm_labels("bert-worker-0", "team-b"), [(100, 0.5), (400, 0.7)]),
        series(UTIL, dcgm_labels("gpt-worker-1", "team-c"), [(100, 20), (400, float("nan"))]),
        series(UTIL, dcgm_labels("train-0-abcde", "team-a"), [(100, 40), (99_999, 100)]),
        series(UTIL, renamed, [(100, 5)]),
        series(UTIL, dcgm_labels("stranger-abcde", "team-z"), [(100, 100)]),
        series(UTIL, no_pod, [(100, 0)]),
        series("DCGM_FI_DEV_FB_USED", dcgm_labels("resnet-x7k2p", "team-a"), [(100, 30000)]),
    )  # fmt: skip


def test_dcgm_utilisation_joins_pods_to_jobs(tmp_path: Path) -> None:
    scrape = write(tmp_path / "dcgm.json", _scrape())
    trace = load(tmp_path, *_jobs_for_dcgm(), dcgm=scrape)
    util = dict(zip(trace.jobs["job_name"], trace.jobs["source_gpu_util"], strict=True))
    assert util["team-a/resnet"] == pytest.approx(0.75)  # both GPUs, both samples: (50+70+90+90)/4 %
    assert util["team-b/bert"] == pytest.approx(0.6)  # the engine-active ratio wins over GPU_UTIL
    assert util["team-c/gpt"] == pytest.approx(0.2)  # a Volcano task's pod; NaN left out
    assert util["team-a/job-train-1a2b3"] == pytest.approx(0.4)  # the Workload's owner Job's pod
    assert util["team-a/idle"] == pytest.approx(0.05)  # exported_pod: Prometheus renamed the exporter's label
    changes = trace.changes
    assert changes["DCGM: NaN samples left out"] == 1
    assert changes["DCGM: samples outside their job's run (a reused pod name) left out"] == 1
    assert changes["DCGM: series of a pod that is no job's of the trace: not read"] == 1
    assert changes["DCGM: series without a pod or namespace label (a GPU no pod held): not a job's"] == 1
    assert changes[f"DCGM: series of metric DCGM_FI_DEV_FB_USED not read (only {ACTIVE}, {UTIL})"] == 1


def test_dcgm_owner_labels_and_jobs_without_samples(tmp_path: Path) -> None:
    labelled = dcgm_labels("renamed-pod", "team-a", batch_kubernetes_io_job_name="resnet")
    scrape = write(tmp_path / "dcgm.json", prometheus_matrix(series(UTIL, labelled, [(100, 30)])))
    trace = load(tmp_path, *_jobs_for_dcgm(), dcgm=scrape)
    util = dict(zip(trace.jobs["job_name"], trace.jobs["source_gpu_util"], strict=True))
    assert util["team-a/resnet"] == pytest.approx(0.3) and util["team-b/bert"] is None
    assert trace.changes["no DCGM samples: GPU utilisation from workload.utilization"] == 4
    # The usage model of idle-GPU reclaim reads it; jobs without samples keep the model's value.
    frame = trace.jobs.with_columns(priority_class=pl.lit(None, pl.String))
    used = dict(
        zip(
            frame["job_name"],
            assign_utilization(frame, Utilization(gpu_active=0.9), 0)["gpu_util"],
            strict=True,
        )
    )
    assert used["team-a/resnet"] == pytest.approx(0.3) and used["team-b/bert"] == pytest.approx(0.9)


def test_dcgm_csv_export_reads_as_the_json(tmp_path: Path) -> None:
    answer = _scrape()
    lines = ["timestamp,__name__,namespace,pod,exported_pod,exported_namespace,gpu,Hostname,value"]
    for s in answer["data"]["result"]:
        m = s["metric"]
        for t, v in s["values"]:
            stamp = (
                f"{t:.3f}" if len(lines) % 2 else ts(t - T0.timestamp())
            )  # Unix seconds and RFC 3339 both read
            cells = [
                m.get(k, "")
                for k in (
                    "__name__",
                    "namespace",
                    "pod",
                    "exported_pod",
                    "exported_namespace",
                    "gpu",
                    "Hostname",
                )
            ]
            lines.append(",".join([stamp, *cells, v]))
    csv_path = tmp_path / "dcgm.csv"
    csv_path.write_text("\n".join(lines) + "\n")
    from_csv = load(tmp_path, *_jobs_for_dcgm(), dcgm=csv_path)
    from_json = load(tmp_path, *_jobs_for_dcgm(), dcgm=write(tmp_path / "dcgm.json", answer))
    assert from_csv.jobs["source_gpu_util"].to_list() == pytest.approx(
        from_json.jobs["source_gpu_util"].to_list()
    )


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (
            {"status": "error", "errorType": "bad_data", "error": "parse error"},
            "key 'status': the query failed (bad_data: parse error)",
        ),
        (
            {"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}},
            "key 'data.resultType': must be matrix",
        ),
        (
            prometheus_matrix({"metric": {"pod": "a"}, "values": [[1, "2"]]}),
            "key 'data.result[0].metric': no __name__ label: query the raw metric",
        ),
        (
            prometheus_matrix(series(UTIL, dcgm_labels("a", "b"), [(1, 50), (2, 150)])),
            "key 'data.result[0].values[1]': 150 is out of range (a percent, 0..100",
        ),
        (
            prometheus_matrix(series(ACTIVE, dcgm_labels("a", "b"), [(1, 1.5)])),
            "key 'data.result[0].values[0]': 1.5 is out of range (a ratio, 0..1",
        ),
        (
            prometheus_matrix({"metric": {"__name__": UTIL}, "values": [[1, 2]]}),
            "key 'data.result[0].values[0]': a sample is [<unix seconds>, \"<value>\"] (found [1, 2])",
        ),
    ],
)
def test_dcgm_errors_name_the_series_and_field(tmp_path: Path, answer: dict[str, Any], fragment: str) -> None:
    scrape = write(tmp_path / "dcgm.json", answer)
    with pytest.raises(InputError) as err:
        load(tmp_path, batch_job("a"), dcgm=scrape)
    assert str(err.value).startswith(f"{scrape}, ") and fragment in str(err.value), str(err.value)


def test_dcgm_csv_errors_name_row_and_column(tmp_path: Path) -> None:
    path = tmp_path / "dcgm.csv"
    path.write_text("time,pod,value\n1717401600,a-abcde,50\n")
    with pytest.raises(
        InputError, match=r"missing column\(s\) __name__ or metric \(found time, pod, value\)"
    ):
        load(tmp_path, batch_job("a"), dcgm=path)
    path.write_text(f"Time,__name__,pod,namespace,Value\n1717401600,{UTIL},a-abcde,team-a,busy\n")
    with pytest.raises(InputError, match=r"dcgm.csv, row 1, column 'Value': cannot read 'busy' as a number"):
        load(tmp_path, batch_job("a"), dcgm=path)
    path.write_text(f"timestamp,__name__,pod,namespace,value\nlater,{UTIL},a-abcde,team-a,5\n")
    with pytest.raises(InputError, match=r"row 1, column 'timestamp': cannot read 'later' as a time"):
        load(tmp_path, batch_job("a"), dcgm=path)
    path.write_text(f"timestamp,__name__,pod,namespace,value\n1717401600,{UTIL},a-abcde,team-a,101\n")
    with pytest.raises(
        InputError, match=r"row 1, column 'value': 101 is out of range for DCGM_FI_DEV_GPU_UTIL"
    ):
        load(tmp_path, batch_job("a"), dcgm=path)


# --- the config group, the examples, the command line --------------------------------------------------


def test_trace_kubectl_composes_and_loads_the_examples() -> None:
    cfg = compose_config(
        [
            "trace=kubectl",
            f"trace.path={EXAMPLES / 'kubectl-jobs.json'}",
            f"trace.dcgm={EXAMPLES / 'dcgm-gpu-util.csv'}",
        ]
    )
    trace = load_trace(cast(dict[str, Any], OmegaConf.to_container(cfg.trace, resolve=True)))
    assert trace.jobs.height == 8 and trace.jobs["source_gpu_util"].null_count() == 2
    assert set(trace.jobs["source_kind"]) == {"Job", "Workload", "PyTorchJob", "VolcanoJob", "PodGroup"}
    with pytest.raises(InputError, match=r"config key 'trace.max_file_mib': must be a number of MiB > 0"):
        load_trace({**OmegaConf.to_container(cfg.trace, resolve=True), "max_file_mib": 0})  # type: ignore[dict-item]


def test_unknown_keys_are_refused() -> None:
    from hydra.errors import HydraException

    from gpureplay.config_check import describe_config_error

    with pytest.raises((HydraException, InputError)) as err:
        compose_config(["trace=kubectl", "trace.path=jobs.json", "trace.dcmg=x.json"])
    text = str(err.value) if isinstance(err.value, InputError) else str(describe_config_error(err.value))
    assert "config key 'trace.dcmg': no such key (did you mean 'trace.dcgm'?)" in text, text


def test_run_the_examples_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = gpureplay(
        "run", "trace=kubectl", f"trace.path={EXAMPLES / 'kubectl-jobs.json'}",
        f"trace.dcgm={EXAMPLES / 'dcgm-gpu-util.json'}", "cluster=homogeneous", "cluster.nodes=4",
        "scheduler=fifo", "workload.load=1.0", f"hydra.run.dir={out}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    log = proc.stderr + proc.stdout
    assert "trace kubectl: 8 jobs from" in log and "Job managed by Kueue: replaced by its Workload" in log
    jobs = pl.read_parquet(out / "jobs.parquet")
    assert jobs.height == 8 and set(jobs["state"].cast(pl.String)) == {"finished"}
    named = rows(jobs)
    assert named["team-b/bert-large"]["priority_class"] == "high" and named["team-b/bert-large"]["gpus"] == 32
    assert named["team-a/resnet50-a"]["queue"] == "team-a/team-a-queue"
    assert pl.read_parquet(out / "summary.parquet")["finished"].item() == 8


def test_bad_inputs_exit_2_without_a_traceback(tmp_path: Path) -> None:
    bad = _set(batch_job("bad"), f"{_LIMITS}.nvidia=com/gpu", "two")
    path = write(tmp_path / "jobs.json", kubectl_list(bad))
    scrape = write(
        tmp_path / "dcgm.json", {"status": "error", "errorType": "timeout", "error": "query timed out"}
    )
    common = ("cluster=homogeneous", "cluster.nodes=1", "scheduler=fifo", f"hydra.run.dir={tmp_path / 'out'}")
    proc = gpureplay("run", "trace=kubectl", f"trace.path={path}", *common)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    field = 'spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]'
    where = f"key 'items[0].{field}': Job 'team-a/bad'"
    assert f"{path}, {where}: 'two' is not a Kubernetes quantity" in proc.stderr
    good = write(tmp_path / "good.json", kubectl_list(batch_job("good")))
    proc = gpureplay("run", "trace=kubectl", f"trace.path={good}", f"trace.dcgm={scrape}", *common)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{scrape}, key 'status': the query failed (timeout: query timed out)" in proc.stderr
    proc = gpureplay("run", "trace=kubectl", f"trace.path={good}", "trace.running=later", *common)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "trace.running" in proc.stderr, (
        proc.stderr
    )
