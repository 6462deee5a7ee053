"""Bad config and bad arguments as a user types them: exit status 2, one message naming the key, no traceback.

Each case runs the real command line in a subprocess. None of them gets as far as the engine, so
none compiles anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from tests.cli import gpureplay

from gpureplay.cli import main
from gpureplay.errors import InputError
from gpureplay.traces.registry import trace_selection

REPO = Path(__file__).resolve().parents[1]


def assert_usage_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr, proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, (fragment, proc.stderr)


@pytest.fixture
def csv_args(tiny_jobs_csv: Path, tmp_path: Path) -> list[str]:
    return [
        "run",
        "trace=csv",
        f"trace.path={tiny_jobs_csv}",
        "cluster=homogeneous",
        "cluster.nodes=1",
        f"hydra.run.dir={tmp_path / 'out'}",
    ]


@pytest.mark.parametrize(
    ("override", "fragments"),
    [
        (
            "scheduler=fiffo",
            [
                "config group 'scheduler' has no option 'fiffo'",
                "did you mean 'fifo'",
                # every preset, sorted; the structured schema is not offered
                "options: " + ", ".join(sorted(p.stem for p in (REPO / "conf" / "scheduler").glob("*.yaml"))),
            ],
        ),
        ("cluster.node=4", ["config key 'cluster.node'", "did you mean 'cluster.nodes'", "gpus_per_node"]),
        ("cluster.nodes=abc", ["config key 'cluster.nodes'", "'abc' is not an integer"]),
        ("seed=abc", ["config key 'seed'", "'abc' is not an integer"]),
        ("scheduler.queue_order=lifo", ["config key 'scheduler.queue_order'", "fifo, sjf, priority"]),
        ("x==", ["cannot read the override 'x=='"]),
        # An unquoted letter outside ASCII: named, with Hydra's advice to quote the value.
        (
            "trace.path=/data/täglich.csv",
            [
                "cannot read the override 'trace.path=/data/täglich.csv': 'ä' (character 19) is not allowed "
                "in an unquoted value; quote the value: \"trace.path='/data/täglich.csv'\"",
                "override_grammar",
            ],
        ),
    ],
)
def test_config_errors_caught_by_hydra_exit_2_naming_the_key(
    csv_args: list[str], tmp_path: Path, override: str, fragments: list[str]
) -> None:
    proc = gpureplay(*csv_args, override)
    assert_usage_error(proc, *fragments)
    assert "Set the environment variable" not in proc.stderr and "search path" not in proc.stderr.lower()
    assert not (tmp_path / "out" / "jobs.parquet").exists()


def test_schema_nodes_are_neither_offered_nor_accepted(csv_args: list[str]) -> None:
    proc = gpureplay(*csv_args, "scheduler=schema")
    assert_usage_error(proc, "config group 'scheduler' has no option 'schema'")
    assert "options: easy-backfill, fgd, fgd-bestfit" in proc.stderr and ", schema" not in proc.stderr
    listed = gpureplay("run", "--help")
    assert listed.returncode == 0 and "schema" not in listed.stdout
    for group in ("trace=schema_csv", "cluster=schema_homogeneous", "workload=schema"):
        assert_usage_error(gpureplay(*csv_args, group), "has no option")


def test_a_key_added_with_plus_to_a_schema_is_refused(csv_args: list[str], tmp_path: Path) -> None:
    proc = gpureplay(*csv_args, "+cluster.node=4")
    assert_usage_error(proc, "config key 'cluster.node': no such key", "did you mean 'cluster.nodes'")
    assert not (tmp_path / "out" / "DONE").exists()


def test_plus_into_a_free_mapping_is_still_allowed(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "renamed.csv"
    pl.read_csv(tiny_jobs_csv).rename({"submit_time": "arrival"}).write_csv(renamed)
    proc = gpureplay(
        "run",
        "trace=csv",
        f"trace.path={renamed}",
        "+trace.columns.submit_time=arrival",
        "cluster=homogeneous",
        "cluster.nodes=1",
        f"hydra.run.dir={tmp_path / 'out'}",
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "DONE").is_file()


@pytest.mark.parametrize(
    ("override", "fragments"),
    [
        ("sample_interval=0", ["config key 'sample_interval'", "> 0", "found 0.0"]),
        ("horizon=-1", ["config key 'horizon'", ">= 0", "found -1.0"]),
        (
            "max_time=1e21",
            ["config key 'max_time'", "too large to replay to the second", "steps by 131072 s"],
        ),
        ("horizon=1e17", ["config key 'horizon'", "too large to replay to the second", "steps by 16 s"]),
        ("workload.window_end=1e300", ["config key 'workload.window_end'", "too large to replay"]),
        ("memory_budget_gib=0", ["config key 'memory_budget_gib'", "must be a number > 0"]),
        ("max_manifest_mib=-1", ["config key 'max_manifest_mib'", "must be a number > 0"]),
    ],
)
def test_values_out_of_range_name_the_key(csv_args: list[str], override: str, fragments: list[str]) -> None:
    assert_usage_error(gpureplay(*csv_args, override), *fragments)


def test_idle_reclaim_without_its_workload_is_refused_before_compiling(csv_args: list[str]) -> None:
    proc = gpureplay(*csv_args, "scheduler=reclaim-idle")
    assert_usage_error(proc, "config key 'workload.priority_classes'", "reclaim_idle")
    proc = gpureplay(
        *csv_args, "scheduler=reclaim-idle", "workload=notebooks-idle", "workload.utilization.idle_share=2"
    )
    assert_usage_error(proc, "config key 'workload.utilization.idle_share'", "found 2.0")
    assert "compil" not in proc.stderr.lower()


def test_scheduler_settings_the_engine_refuses_are_reported_before_the_trace_is_read(tmp_path: Path) -> None:
    # The trace file does not exist: the refusal of the settings comes first, from the config alone.
    missing = tmp_path / "nowhere.csv"
    proc, modules = _imported(
        "run",
        "trace=csv",
        f"trace.path={missing}",
        "scheduler=easy-backfill",
        "scheduler.preemption=priority",
        "scheduler.queue_order=priority",
        "scheduler.backfill_depth=-1",
        f"hydra.run.dir={tmp_path / 'out'}",
    )
    assert_usage_error(
        proc,
        "config key 'scheduler.preemption': EASY backfill with preemption is not modelled",
        "config key 'scheduler.backfill_depth': must be >= 0 (found -1)",
    )
    assert "nowhere.csv" not in proc.stderr and not (tmp_path / "out" / "DONE").exists()
    assert (
        not {"numba", "gpureplay.engine.loop", "gpureplay.experiment"} & modules
    )  # nothing read, nothing compiled


def test_compose_refuses_the_scheduler_settings_without_reading_any_input(tmp_path: Path) -> None:
    from gpureplay import api

    with pytest.raises(InputError) as err:
        api.compose(
            ["trace=csv", f"trace.path={tmp_path / 'nowhere.csv'}", "scheduler=mps", "scheduler.replicas=0"]
        )
    assert [p.key for p in err.value.problems] == ["scheduler.replicas"]


@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        (["cluster.mig_layout=all-9g.99gb"], ["config key 'cluster.mig_layout'", "not a mig-parted config"]),
        (
            ["cluster.mig_layout=all-1g.10gb", "scheduler=mig-single", "scheduler.mig_strategy=mixed"],
            ["scheduler.mig_demand", "set mig_demand: smallest_fit (found any)"],
        ),
        (
            ["scheduler=mig-single", "cluster.mig_layout=all-balanced"],
            ["row 1, column 'mig_layout'", "more than one MIG device type present on node"],
        ),
    ],
)
def test_mig_errors_name_the_key_or_the_row(
    csv_args: list[str], overrides: list[str], fragments: list[str]
) -> None:
    # A config key, a policy key and a node row, on the command line; all fail before the kernels
    # compile (experiment.check_mig_inputs). The other MIG refusals: tests/test_mig_config.py.
    assert_usage_error(gpureplay(*csv_args, *overrides), *fragments)


def test_run_folder_that_is_a_file(csv_args: list[str], tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder\n")
    proc = gpureplay(*csv_args, f"hydra.run.dir={blocker}")
    assert_usage_error(proc, "config key 'hydra.run.dir'", str(blocker), "a file is in the way")
    assert blocker.read_text() == "not a folder\n"
    assert_usage_error(gpureplay(*csv_args, f"hydra.run.dir={blocker / 'sub'}"), "config key 'hydra.run.dir'")


def test_sweep_folder_that_is_a_file(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x\n")
    proc = gpureplay(
        "run", "-m", "trace=csv", f"trace.path={tiny_jobs_csv}", "seed=0,1", f"hydra.sweep.dir={blocker}"
    )
    assert_usage_error(proc, "config key 'hydra.sweep.dir'", "a file is in the way")


def test_csv_trace_without_path_says_trace_path_is_required(tmp_path: Path) -> None:
    proc = gpureplay("run", "trace=csv", f"hydra.run.dir={tmp_path / 'out'}")
    assert_usage_error(proc, "config key 'trace.path'", "is required", "trace.path=FILE")
    assert "???" not in proc.stderr


@pytest.mark.parametrize(
    ("override", "key", "file"),
    [
        ("trace=kubectl", "trace.path", "`kubectl get <kind> -A -o json` export of the jobs"),
        ("cluster=kubectl", "cluster.path", "`kubectl get nodes -o json` export of the nodes"),
        ("trace=csv", "trace.path", "CSV or Parquet file"),
    ],
)
def test_a_missing_path_says_what_file_its_option_reads(override: str, key: str, file: str) -> None:
    from gpureplay import api

    with pytest.raises(InputError) as err:
        api.compose([override, *(["trace=csv", "trace.path=x.csv"] if key == "cluster.path" else [])])
    (problem,) = err.value.problems
    assert problem.key == key and file in str(problem) and f"add {key}=FILE" in str(problem), str(problem)


def test_config_key_problems_say_config_key_not_column(csv_args: list[str]) -> None:
    proc = gpureplay(*csv_args, "cluster.nodes=0")
    assert_usage_error(proc, "config key 'cluster.nodes': must be a whole number >= 1")
    assert "column" not in proc.stderr


def test_missing_file_message_lists_the_current_directory(tmp_path: Path) -> None:
    proc = gpureplay(
        "run", "trace=csv", "trace.path=nowhere.csv", f"hydra.run.dir={tmp_path / 'o'}", cwd=tmp_path
    )
    assert_usage_error(proc, "'nowhere.csv' not found", f"{tmp_path / 'nowhere.csv'} (the current directory)")


def test_a_folder_given_as_trace_path_is_refused(tmp_path: Path) -> None:
    proc = gpureplay("run", "trace=csv", f"trace.path={tmp_path}", f"hydra.run.dir={tmp_path / 'o'}")
    assert_usage_error(proc, f"{tmp_path} is a folder; a trace or node list is a file")


def test_inspect_with_a_misspelt_key_names_it() -> None:
    proc = gpureplay("trace", "inspect", "itp", "trace.clusterid=4")
    assert_usage_error(proc, "config key 'trace.clusterid'", "did you mean 'trace.cluster_id'")
    assert_usage_error(
        gpureplay("trace", "inspect", "itp", "trace.cluster_id=abc"), "'abc' is not an integer"
    )


def test_every_name_trace_list_shows_is_understood_by_inspect() -> None:
    listed = gpureplay("trace", "list")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()[1:] if line.strip()]
    assert {"itp_raw", "itp_elasticflow", "philly", "openb"} <= set(names)
    elastic = gpureplay("trace", "inspect", "itp_elasticflow", "trace.cluster_id=10")
    assert elastic.returncode == 0, elastic.stderr
    assert "elasticflow-traces" in elastic.stdout and "jobs:        260" in elastic.stdout
    config_names = [p.stem for p in (REPO / "conf" / "trace").glob("*.yaml")]
    for name in names:  # each selects a trace config, or is refused with its reason (not a job trace)
        try:
            selection = trace_selection(name, config_names)
        except InputError as err:
            assert "nothing to replay" in str(err) or "not jobs" in str(err), name
        else:
            assert selection is not None and selection[0].removeprefix("trace=") in config_names, name
    runner = CliRunner()
    raw = runner.invoke(main, ["trace", "inspect", "itp_raw", "trace.cluster_id=10"])
    assert "raw-traces" in raw.output and "jobs:        260" in raw.output
    refused = runner.invoke(main, ["trace", "inspect", "dlrm"])
    assert refused.exit_code == 2 and "nothing to replay" in refused.output


def test_convert_writes_csv_for_csv_and_parquet_for_parquet(tiny_jobs_csv: Path, tmp_path: Path) -> None:
    as_csv, as_parquet = tmp_path / "out.csv", tmp_path / "out.parquet"
    assert gpureplay("trace", "convert", str(tiny_jobs_csv), "-o", str(as_csv)).returncode == 0
    assert gpureplay("trace", "convert", str(tiny_jobs_csv), "-o", str(as_parquet)).returncode == 0
    header = as_csv.read_text().splitlines()[0].split(",")
    assert header[0] == "job_id" and {"submit_time", "duration", "num_pods"} <= set(header)
    assert as_parquet.read_bytes()[:4] == b"PAR1"
    assert pl.read_csv(as_csv)["job_id"].to_list() == pl.read_parquet(as_parquet)["job_id"].to_list()
    refused = gpureplay("trace", "convert", str(tiny_jobs_csv), "-o", str(tmp_path / "out.txt"))
    assert refused.returncode == 2 and "*.parquet or *.csv" in refused.stderr
    assert not (tmp_path / "out.txt").exists()


def test_converted_csv_keeps_model_lists_readable(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(
        "job_id,submit_time,duration,num_pods,gpu_milli,gpu_models\n1,0,10,1,1000,A100-80GB|H100-80GB\n2,5,10,1,1000,\n"
    )
    out = tmp_path / "again.csv"
    assert gpureplay("trace", "convert", str(jobs), "-o", str(out)).returncode == 0
    assert "A100-80GB|H100-80GB" in out.read_text()
    back = gpureplay("trace", "inspect", str(out))
    assert back.returncode == 0, back.stderr
    assert "gpu_models             List(String)" in back.stdout


def test_report_baseline_must_be_key_equals_value_and_name_a_configuration(tmp_path: Path) -> None:
    # In-process (no subprocess start): a malformed --baseline stops before any run is read; a well-formed
    # one naming no run folder reaches the report's own input error. Both exit 2 with one message.
    runner = CliRunner()
    bad = runner.invoke(main, ["report", str(tmp_path), "--baseline", "scheduler"])
    assert bad.exit_code == 2 and "--baseline 'scheduler': expected KEY=VALUE" in bad.output
    assert bad.exception is None or isinstance(bad.exception, SystemExit)
    empty = runner.invoke(main, ["report", str(tmp_path), "-o", str(tmp_path / "out"), "--baseline", "a=b"])
    assert empty.exit_code == 2 and "no complete run" in empty.output


def test_a_list_typed_parquet_column_exits_2_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "jobs.parquet"
    pl.DataFrame({"job_id": [1], "submit_time": [0.0], "duration": [1.0], "num_pods": [1],
                  "gpu_milli": [[1000]]}).write_parquet(path)  # fmt: skip
    proc = gpureplay("trace", "inspect", str(path))
    assert_usage_error(proc, f"{path}, column 'gpu_milli': the column holds List(Int64) values")


def test_a_trace_time_too_large_for_float64_seconds_exits_2_and_the_run_failed(tmp_path: Path) -> None:
    # The case: a 100 s job at 1e20 s finished at its submit time (max_time raised to let it in).
    trace = tmp_path / "T.csv"
    trace.write_text("job_id,submit_time,duration,num_pods,gpu_milli\n1,0,100,1,1000\n2,1e20,100,1,1000\n")
    out = tmp_path / "out"
    proc = gpureplay("run", "trace=csv", f"trace.path={trace}", "cluster=homogeneous", "cluster.nodes=1",
                     "scheduler=fifo", f"hydra.run.dir={out}")  # fmt: skip
    assert_usage_error(proc, f"{trace}, row 2, column 'submit_time'", "at 1e+20 s float64 steps by 16384 s")
    assert '"status": "failed"' in (out / "STATUS").read_text() and not (out / "DONE").exists()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        # Each said "trace file not found"; an empty manifests path read the current folder recursively.
        ("scheduler.manifests=/no/such/manifests", "manifest file or folder not found: /no/such/manifests"),
        ("scheduler.manifests=", "is empty: give a manifest file or a folder of them"),
    ],
)
def test_manifest_paths_that_name_nothing_exit_2_naming_the_key(
    csv_args: list[str], tmp_path: Path, override: str, message: str
) -> None:
    proc = gpureplay(*csv_args, "scheduler=kueue", "scheduler.quotas=manifests", override)
    assert_usage_error(proc, f"config key 'scheduler.manifests': {message}")
    assert '"status": "failed"' in (tmp_path / "out" / "STATUS").read_text()


def test_a_missing_topology_file_is_not_called_a_trace_file(csv_args: list[str]) -> None:
    proc = gpureplay(*csv_args, "cluster.topology=/no/such/topology.csv")
    assert_usage_error(proc, "config key 'cluster.topology': topology file not found: /no/such/topology.csv")
    assert "trace file" not in proc.stderr


NAN_QUOTA = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default
      resources:
      - {name: nvidia.com/gpu, nominalQuota: .nan}
"""


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        # A ValueError traceback from the run before (kueue_quota._engine_amount).
        (NAN_QUOTA, [], "document 2, key 'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota': "
                        "not a quantity: nan"),
        ("[" * 100_000 + "]" * 100_000, [], "nested deeper than 100 levels"),  # a RecursionError before
        (NAN_QUOTA + "#" * 200_000, ["max_manifest_mib=0.1"], "more than the 0.1 MiB cap"),
    ],
)  # fmt: skip
def test_bad_manifests_exit_2_before_anything_compiles(
    csv_args: list[str], tmp_path: Path, text: str, extra: list[str], message: str
) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(text)
    kueue = ["scheduler=kueue", "scheduler.quotas=manifests", f"scheduler.manifests={path}"]
    proc = gpureplay(*csv_args, *kueue, *extra)
    assert_usage_error(proc, f"{path}", message)
    assert '"status": "failed"' in (tmp_path / "out" / "STATUS").read_text()


def test_a_cluster_too_large_for_the_memory_exits_2_and_the_run_failed(
    csv_args: list[str], tmp_path: Path
) -> None:
    # It grew to 20.5 GB, the kernel killed it (rc 137) and its STATUS stayed `running`.
    proc = gpureplay(*csv_args, "cluster.nodes=100000000")
    assert_usage_error(
        proc, "config key 'cluster.nodes': the replay would need about", "memory available now"
    )
    assert '"status": "failed"' in (tmp_path / "out" / "STATUS").read_text()


def _imported(*args: str, cwd: Path = REPO) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``gpureplay ARGS`` with ``-X importtime``: the process and the modules it imported."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(REPO / ".cache" / "numba")}
    env.pop("HYDRA_FULL_ERROR", None)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpureplay", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )
    modules = {
        line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")
    }
    return proc, modules


def test_a_run_refused_on_its_trace_never_imports_the_engine(tmp_path: Path) -> None:
    """numba and the engine are imported when the kernels are needed, not by a run that stops on its inputs
    (nor by ``--help``, which reads no installed metadata either)."""
    proc, modules = _imported(
        "run", "trace=csv", f"trace.path={tmp_path / 'missing.csv'}", f"hydra.run.dir={tmp_path / 'out'}"
    )
    assert proc.returncode == 2 and "missing.csv" in proc.stderr, proc.stderr
    assert "gpureplay.experiment" in modules and "polars" in modules  # it got as far as reading the trace
    assert not {"numba", "gpureplay.engine.loop", "gpureplay.replay.simulate"} & modules
    proc, modules = _imported("--help")
    assert proc.returncode == 0 and "Usage:" in proc.stdout
    assert not {"importlib.metadata", "polars", "hydra", "numba"} & modules
