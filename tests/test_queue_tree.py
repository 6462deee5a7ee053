"""Queue manifests (Kueue, Volcano, KAI, PriorityClass): the shipped examples, each bad input, the CLI."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from gpureplay.cli import main
from gpureplay.errors import InputError
from gpureplay.queues.manifests import parse_manifests, parse_quantity, read_manifests
from gpureplay.queues.tree import GPU_RESOURCE, KaiResource, describe_tree

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "manifests"

CQ = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: a100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: team-a}}
spec:
  cohort: research
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
{extra}"""


#: ``CQ`` in ``kueue.x-k8s.io/v1beta2``, whose ClusterQueue names its cohort ``cohortName``.
CQ2 = CQ.replace("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2").replace("  cohort: ", "  cohortName: ")


def error_of(text: str, source: str = "q.yaml") -> str:
    with pytest.raises(InputError) as caught:
        parse_manifests(text, source)
    return str(caught.value)


# --------------------------------------------------------------------------- the shipped examples


def test_kueue_example_parses() -> None:
    found = read_manifests(EXAMPLES / "kueue")
    tree = found.tree
    assert tree.model == "kueue"
    assert [f.name for f in tree.flavors] == ["a100", "default-flavor"]
    assert tree.flavors[0].gpu_model == "NVIDIA-A100-SXM4-80GB"
    a, b = tree.cluster_queues
    assert (a.name, a.cohort, b.cohort) == ("team-a-cq", "research", "research")
    gpu_a = a.resource_groups[0].flavors[0].resources[2]
    assert (gpu_a.name, gpu_a.nominal_quota, gpu_a.borrowing_limit, gpu_a.lending_limit) == (
        GPU_RESOURCE,
        8,
        8,
        None,
    )
    assert a.resource_groups[0].flavors[0].resources[1].nominal_quota == 768 * 2**30  # 768Gi
    assert b.resource_groups[0].flavors[0].resources[2].lending_limit == 6
    assert (a.preemption.reclaim_within_cohort, b.queueing_strategy, b.fair_sharing_weight) == (
        "Any",
        "StrictFIFO",
        2,
    )
    assert [(q.namespace, q.name, q.cluster_queue) for q in tree.local_queues] == [
        ("team-a", "user-queue", "team-a-cq"),
        ("team-b", "user-queue", "team-b-cq"),
    ]
    assert {p.name: p.value for p in tree.priority_classes} == {"production": 1000, "research": 100}
    assert sorted(i.path for i in found.ignored) == [
        "description",
        "metadata.labels",
        "spec.namespaceSelector",
        "spec.namespaceSelector",
    ]


def test_volcano_example_parses() -> None:
    found = read_manifests(EXAMPLES / "volcano" / "queues.yaml")
    training, inference, batch = found.tree.volcano_queues
    assert (training.weight, inference.weight, batch.weight) == (4, 2, 1)
    assert dict(inference.capability) == {GPU_RESOURCE: 8, "cpu": 64, "memory": 512 * 2**30}
    assert dict(inference.guarantee) == {GPU_RESOURCE: 2}
    assert (training.reclaimable, batch.reclaimable) == (True, False)
    assert [str(i) for i in found.ignored] == [
        f"{EXAMPLES / 'volcano' / 'queues.yaml'}, document 1: Queue 'training': metadata.annotations",
        f"{EXAMPLES / 'volcano' / 'queues.yaml'}, document 3: Queue 'batch': status",
    ]


def test_kai_example_parses() -> None:
    tree = read_manifests(EXAMPLES / "kai").tree
    research, vision, nlp = tree.kai_queues
    assert (research.parent_queue, vision.parent_queue, nlp.parent_queue) == (None, "research", "research")
    assert vision.gpu == KaiResource(quota=6, over_quota_weight=2, limit=12)
    assert research.cpu == KaiResource(quota=-1, over_quota_weight=1, limit=-1)
    assert nlp.priority == 100


def test_describe_tree_indents_children_under_parents() -> None:
    lines = describe_tree(read_manifests(EXAMPLES / "kai").tree)
    assert lines[0] == "model: kai"
    assert lines[1] == "Queue research: priority 100"
    assert "  Queue team-vision: priority 100" in lines
    assert "      gpu: quota 6, overQuotaWeight 2, limit 12" in lines
    kueue = describe_tree(read_manifests(EXAMPLES / "kueue").tree)
    assert "Cohort research, fairSharing weight 1" in kueue
    assert "      a100/nvidia.com/gpu: nominal 8, borrowingLimit 8, lendingLimit -" in kueue
    assert "      LocalQueue team-b/user-queue" in kueue


def test_defaults_when_fields_are_left_out() -> None:
    tree = parse_manifests(CQ.format(extra="")).tree
    cq = tree.cluster_queues[0]
    assert (cq.queueing_strategy, cq.preemption.within_cluster_queue, cq.fair_sharing_weight) == (
        "BestEffortFIFO",
        "Never",
        1.0,
    )
    volcano = parse_manifests("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n")
    q = volcano.tree.volcano_queues[0]
    assert (q.weight, q.reclaimable, dict(q.capability)) == (1, True, {})
    kai = parse_manifests(
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\n"
    ).tree.kai_queues[0]
    assert (kai.priority, kai.gpu) == (100, KaiResource(0, 0, 0))


def test_default_valued_unmodelled_field_is_accepted() -> None:
    tree = parse_manifests(CQ.format(extra="  stopPolicy: None\n")).tree
    assert tree.cluster_queues[0].name == "team-a"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16", 16.0),
        ("500m", 0.5),
        ("64Gi", 64 * 2**30),
        ("2k", 2000.0),
        ("1e3", 1000.0),
        (8, 8.0),
        (0.5, 0.5),
    ],
)
def test_parse_quantity(text: str | float, expected: float) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "a quantity is a finite number"),
        (float("inf"), "a quantity is a finite number"),
        ("1e400", "a quantity is a finite number"),
        ("1e19", r"beyond the largest Kubernetes quantity, 2\^63-1"),
        ("-9Ei", "beyond the largest Kubernetes quantity"),
    ],
)
def test_parse_quantity_refuses_what_no_quantity_can_be(value: str | float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_quantity(value)


@pytest.mark.parametrize("quota", [".nan", "1e400", ".inf"])
def test_a_quota_that_is_not_finite_names_file_document_and_field(quota: str) -> None:
    # They passed as "nominal nan / inf", then crashed the run (kueue_quota._engine_amount).
    assert error_of(CQ.format(extra="").replace("nominalQuota: 8", f"nominalQuota: {quota}")) == (
        "q.yaml, document 2, key 'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota': not a "
        f"quantity: {parse_quantity_text(quota)} (a quantity is a finite number)"
    )


def parse_quantity_text(quota: str) -> str:
    """How the message shows a YAML value: a float read from YAML, or the text of a quantity string."""
    return {".nan": "nan", ".inf": "inf"}.get(quota, repr(quota))


def test_a_fair_sharing_weight_that_is_not_finite_is_refused() -> None:
    text = CQ.format(extra="  fairSharing: {weight: .nan}\n")
    assert "spec.fairSharing.weight': not a quantity: nan" in error_of(text)


# --------------------------------------------------------------------------- bad input


def test_unknown_kind_names_file_document_and_kind() -> None:
    text = CQ.format(extra="") + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"
    message = error_of(text)
    assert message.startswith(
        "q.yaml, document 3, key 'kind': unknown kind 'Deployment' of apiVersion 'apps/v1'"
    )


def test_known_kind_of_an_unread_version_says_which_versions_are_read() -> None:
    message = error_of("apiVersion: kueue.x-k8s.io/v1alpha1\nkind: LocalQueue\nmetadata: {name: x}\n")
    assert message == (
        "q.yaml, document 1, key 'kind': unknown kind 'LocalQueue' of apiVersion 'kueue.x-k8s.io/v1alpha1' "
        "(read as kueue.x-k8s.io/v1beta1, kueue.x-k8s.io/v1beta2)"
    )


def test_unmodelled_field_names_its_path() -> None:
    message = error_of(CQ.format(extra="  admissionChecks: [prov]\n"))
    assert message == "q.yaml, document 2, key 'spec.admissionChecks': changes scheduling but is not modelled"


def test_unmodelled_field_with_a_non_default_value() -> None:
    message = error_of(CQ.format(extra="  stopPolicy: Hold\n"))
    assert message == (
        "q.yaml, document 2, key 'spec.stopPolicy': changes scheduling but is not modelled "
        "(only the default 'None' is supported)"
    )


def test_nested_unmodelled_and_unknown_fields() -> None:
    kai = (
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\n"
        "spec:\n  resources:\n    gpu: {quota: 4, lendingLimit: 2, burst: 1}\n"
    )
    message = error_of(kai)
    assert (
        "q.yaml, document 1, key 'spec.resources.gpu.lendingLimit': changes scheduling but is not modelled"
        in message
    )
    assert "q.yaml, document 1, key 'spec.resources.gpu.burst': unknown field" in message


def test_dangling_local_queue() -> None:
    text = CQ.format(extra="") + (
        "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
        "metadata: {name: lq, namespace: ns}\nspec: {clusterQueue: team-b}\n"
    )
    assert (
        error_of(text) == "q.yaml, document 3, key 'spec.clusterQueue': ClusterQueue 'team-b' is not defined"
    )


def test_dangling_flavor() -> None:
    text = CQ.format(extra="").replace("    - name: a100", "    - name: h100")
    assert error_of(text) == (
        "q.yaml, document 2, key 'spec.resourceGroups[0].flavors[0].name': "
        "ResourceFlavor 'h100' is not defined"
    )


def test_cohort_cycle() -> None:
    text = "".join(
        "---\napiVersion: kueue.x-k8s.io/v1alpha1\nkind: Cohort\n"
        f"metadata: {{name: {a}}}\nspec: {{parent: {b}}}\n"
        for a, b in (("a", "b"), ("b", "c"), ("c", "a"))
    )
    message = error_of(text)
    assert "q.yaml, document 1, key 'spec.parent': cohort cycle: a -> b -> c -> a" in message
    assert "q.yaml, document 3, key 'spec.parent': cohort cycle: c -> a -> b -> c" in message


def test_implicit_cohort_parent_is_valid() -> None:
    text = CQ.format(extra="") + (
        "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\n"
        "metadata: {name: research}\nspec: {parentName: org}\n"
    )
    tree = parse_manifests(text).tree
    assert tree.cohort_names() == ["research", "org"]
    assert "Cohort org (implicit)" in describe_tree(tree)


def test_unknown_parent_queue_volcano_and_kai() -> None:
    volcano = (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {parent: nope}\n"
    )
    assert error_of(volcano) == "q.yaml, document 1, key 'spec.parent': parent queue 'nope' is not defined"
    kai = "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\nspec: {parentQueue: nope}\n"
    assert error_of(kai) == "q.yaml, document 1, key 'spec.parentQueue': parent queue 'nope' is not defined"


def test_volcano_queue_cycle() -> None:
    text = "".join(
        f"---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {a}}}\n"
        f"spec: {{parent: {b}}}\n"
        for a, b in (("x", "y"), ("y", "x"))
    )
    assert "q.yaml, document 1, key 'spec.parent': queue cycle: x -> y -> x" in error_of(text)


def test_negative_quota_and_limits_the_webhook_rejects() -> None:
    text = CQ.format(extra="").replace("nominalQuota: 8", "nominalQuota: -2\n        lendingLimit: 4")
    message = error_of(text)
    key = "q.yaml, document 2, key 'spec.resourceGroups[0].flavors[0].resources[0]"
    assert f"{key}.nominalQuota': must be >= 0 (found -2)" in message
    assert f"{key}.lendingLimit': must be less than or equal to the nominalQuota (4 > -2)" in message
    no_cohort = (
        CQ.format(extra="")
        .replace("  cohort: research\n", "")
        .replace("nominalQuota: 8", "nominalQuota: 8\n        borrowingLimit: 2")
    )
    assert error_of(no_cohort) == f"{key}.borrowingLimit': must be nil when cohort is empty"


def test_volcano_guarantee_above_capability() -> None:
    text = (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
        "spec:\n  weight: 0\n  capability: {nvidia.com/gpu: 2}\n"
        "  guarantee: {resource: {nvidia.com/gpu: 4}}\n"
    )
    message = error_of(text)
    assert "q.yaml, document 1, key 'spec.weight': must be in 1..65535 (found 0)" in message
    assert (
        "q.yaml, document 1, key 'spec.guarantee.resource.nvidia.com/gpu': "
        "guarantee should less equal than capability (4 > 2)"
    ) in message


def test_kai_limit_below_quota_and_bad_negative() -> None:
    text = (
        "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\n"
        "spec:\n  resources:\n    gpu: {quota: 8, limit: 4}\n    cpu: {quota: -3, limit: -1}\n"
    )
    message = error_of(text)
    assert "key 'spec.resources.gpu.limit': limit 4 is below quota 8" in message
    assert "key 'spec.resources.cpu.quota': must be >= 0 or -1 for unlimited (found -3)" in message


def test_bad_value_types() -> None:
    message = error_of(CQ.format(extra="").replace("nominalQuota: 8", "nominalQuota: lots"))
    assert (
        "key 'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota': not a quantity: 'lots'" in message
    )
    volcano = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
    volcano += "spec: {reclaimable: 1}\n"
    assert error_of(volcano) == "q.yaml, document 1, key 'spec.reclaimable': must be true or false (found 1)"


def test_bad_yaml_names_the_line() -> None:
    message = error_of("apiVersion: v1\nkind: [unclosed\n")
    assert message.startswith("q.yaml: not valid YAML: line 3")


def test_mixed_models_are_refused() -> None:
    text = (
        CQ.format(extra="")
        + "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
    )
    message = error_of(text)
    assert (
        "manifests mix queue models (kueue in q.yaml, document 1; volcano in q.yaml, document 3)" in message
    )


def test_duplicate_names() -> None:
    text = "".join(
        "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n" for _ in range(2)
    )
    assert error_of(text) == (
        "q.yaml, document 2, key 'metadata.name': Queue 'q' is defined twice (first in q.yaml, document 1)"
    )


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or folder"):
        read_manifests(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match=r"no \*\.yaml or \*\.yml files"):
        read_manifests(tmp_path)
    # An empty path is not the current folder (which would be read recursively, run folders and all).
    with pytest.raises(InputError, match="no path given"):
        read_manifests("")


@pytest.mark.parametrize("text", ["", "# nothing here\n", "---\n---\n"])
def test_a_file_with_no_document_is_refused_not_priority_classes_only(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_manifests(path)
    assert str(err.value) == f"{path}: holds no YAML document: it is empty, or comments and --- only"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # libyaml stops at 1,000 levels; below that, the depth check at 100 (the readers recurse per level).
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 100 levels (line 1, column 1001)"),
        ("a: " + "[" * 150 + "]" * 150, "document 1: nested deeper than 100 levels"),
        ("a: &a [*a]", "document 1: an alias makes the document contain itself"),
        (
            "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 8)),
            "excessive aliasing",
        ),
    ],
)
def test_yaml_too_deep_or_self_referring_is_refused_without_recursion_error(
    tmp_path: Path, text: str, message: str
) -> None:
    # 100,000 levels were a RecursionError traceback in `manifests check` and `scheduler.manifests=`.
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_manifests(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_yaml_beyond_the_size_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from gpureplay.yaml_input import yaml_size_limit

    (tmp_path / "a.yaml").write_text(CQ.format(extra="") + "#" * 700_000 + "\n")
    priority = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n"
    (tmp_path / "b.yaml").write_text("#" * 700_000 + "\n" + priority)
    with pytest.raises(InputError) as err, yaml_size_limit(1.0, "the config key max_manifest_mib"):
        read_manifests(tmp_path)  # 1.3 MiB in two files
    assert str(err.value).startswith(
        f"{tmp_path}: its 2 YAML files hold 1.3 MiB of YAML, more than the 1 MiB cap"
    )
    assert str(err.value).endswith("if it is meant, raise the config key max_manifest_mib")
    with yaml_size_limit(2.0, "the config key max_manifest_mib"):
        assert len(read_manifests(tmp_path).files) == 2


# --------------------------------------------------------------------------- CLI


def test_cli_check_prints_the_tree_and_ignored_fields() -> None:
    result = CliRunner().invoke(main, ["manifests", "check", str(EXAMPLES / "volcano")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "model: volcano"
    assert lines[1] == "Queue training: weight 4, priority 0, reclaimable"
    assert lines[2] == (
        "Queue inference: weight 2, priority 0, reclaimable, capability {nvidia.com/gpu: 8, cpu: 64, "
        "memory: 512Gi}, guarantee {nvidia.com/gpu: 2}"
    )
    assert "ignored (2 fields that do not change scheduling):" in lines


def test_cli_check_exits_2_on_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n")
    result = CliRunner().invoke(main, ["manifests", "check", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}, document 1, key 'kind': unknown kind 'Job' of apiVersion 'batch/v1'" in result.output
    assert "Traceback" not in result.output


def test_cli_check_exits_2_on_deep_large_or_empty_input(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    result = CliRunner().invoke(main, ["manifests", "check", str(deep)])
    assert result.exit_code == 2 and "nested deeper than 100 levels" in result.output, result.output
    assert not isinstance(result.exception, RecursionError)
    big = tmp_path / "big.yaml"
    big.write_text(CQ.format(extra="") + "#" * 300_000 + "\n")
    result = CliRunner().invoke(main, ["manifests", "check", str(big), "--max-mib", "0.25"])
    assert (
        result.exit_code == 2
        and "more than the 0.25 MiB cap" in result.output
        and "--max-mib" in result.output
    )
    result = CliRunner().invoke(main, ["manifests", "check", ""])
    assert result.exit_code == 2 and "no path given" in result.output


def test_cohort_parent_field_follows_the_api_version() -> None:
    # v1beta1 calls it parentName; the v1alpha1 name is not part of v1beta1.
    text = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: c}\nspec: {parent: org}\n"
    assert error_of(text) == (
        "q.yaml, document 1, key 'spec.parent': unknown field: not part of the Cohort API as modelled"
    )


def test_cohort_limits_need_a_parent() -> None:
    text = (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: c}\nspec:\n  resourceGroups:\n"
        "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: a100\n      resources:\n"
        "      - {name: nvidia.com/gpu, nominalQuota: 4, lendingLimit: 2}\n"
    )
    assert error_of(text) == (
        "q.yaml, document 1, key 'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit': "
        "must be nil when parent is empty"
    )


def test_flavor_fungibility_is_read_and_checked() -> None:
    extra = "  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: Preempt}\n"
    cq = parse_manifests(CQ.format(extra=extra)).tree.cluster_queues[0]
    assert (cq.when_can_borrow, cq.when_can_preempt) == ("TryNextFlavor", "Preempt")
    # v1beta2 spells v1beta1's Borrow / Preempt MayStopSearch (apis/kueue/v1beta2/clusterqueue_types.go).
    fresh = CQ.format(
        extra="  flavorFungibility: {whenCanBorrow: MayStopSearch, whenCanPreempt: MayStopSearch}\n"
    )
    cq = parse_manifests(fresh).tree.cluster_queues[0]
    assert (cq.when_can_borrow, cq.when_can_preempt) == ("MayStopSearch", "MayStopSearch")
    bad = CQ.format(extra="  flavorFungibility: {whenCanBorrow: Sometimes}\n")
    assert error_of(bad) == (
        "q.yaml, document 2, key 'spec.flavorFungibility.whenCanBorrow': "
        "must be one of ['Borrow', 'TryNextFlavor', 'MayStopSearch'] (found 'Sometimes')"
    )


def test_flavor_fungibility_preference_is_read_and_needs_try_next_flavor_on_both() -> None:
    both = "  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, "
    cq = parse_manifests(
        CQ.format(extra=both + "preference: PreemptionOverBorrowing}\n")
    ).tree.cluster_queues[0]
    assert cq.preference == "PreemptionOverBorrowing"
    assert parse_manifests(CQ.format(extra="")).tree.cluster_queues[0].preference is None
    assert error_of(CQ.format(extra=both + "preference: Cheapest}\n")) == (
        "q.yaml, document 2, key 'spec.flavorFungibility.preference': must be one of "
        "['BorrowingOverPreemption', 'PreemptionOverBorrowing'] (found 'Cheapest')"
    )
    # clusterqueue_types.go's CEL rule: Kueue's API server refuses it with a MayStopSearch policy.
    lone = "  flavorFungibility: {preference: BorrowingOverPreemption}\n"
    assert error_of(CQ.format(extra=lone)) == (
        "q.yaml, document 2, key 'spec.flavorFungibility.preference': preference can only be set when both "
        "whenCanBorrow and whenCanPreempt are TryNextFlavor (found Borrow/TryNextFlavor)"
    )


def test_reclaim_idle_annotations_on_a_priority_class_are_refused_not_dropped() -> None:
    text = (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: notebook\n  annotations:\n"
        '    reclaim-idle-resource.scheduling.x-k8s.io/toleration-seconds: "3600"\nvalue: 100\n'
    )
    message = error_of(text)
    assert "q.yaml, document 1" in message
    assert "metadata.annotations.reclaim-idle-resource.scheduling.x-k8s.io/toleration-seconds" in message
    assert "workload.priority_classes[i].reclaim_idle" in message


def test_kueue_philly_nested_example_names_every_philly_vc_in_a_cohort_tree() -> None:
    """examples/manifests/kueue-philly-nested: Philly's 15 VCs under three department cohorts of one root,
    nominal GPUs = the real node count x 7 (2,464 in all, within the replayed 2,490 GPUs)."""
    tree = read_manifests(EXAMPLES / "kueue-philly-nested").tree
    parents = {c.name: c.parent for c in tree.cohorts}
    assert parents == {"philly": None, "large-vcs": "philly", "medium-vcs": "philly", "small-vcs": "philly"}
    nominal = {
        cq.name: cq.resource_groups[0].flavors[0].resources[0].nominal_quota for cq in tree.cluster_queues
    }
    nodes = pl.read_csv(EXAMPLES.parent.parent / "traces" / "philly" / "philly_vc_nodes.csv")
    for vc, count in nodes.iter_rows():
        assert nominal[vc] == count * 7
    assert sum(nominal.values()) == 2464
    trace = pl.read_csv(EXAMPLES.parent.parent / "traces" / "philly" / "philly_jobs_pollux.csv.gz")
    assert set(trace["cluster"].unique().to_list()) == set(nominal)
    assert all(cq.preemption.reclaim_within_cohort == "Any" for cq in tree.cluster_queues)


# --------------------------------------------------------------------------- kueue.x-k8s.io/v1beta2


def test_v1beta2_cluster_queue_with_cohort_name_reads_like_its_v1beta1_twin() -> None:
    both = "  flavorFungibility: {whenCanBorrow: MayStopSearch, whenCanPreempt: TryNextFlavor}\n"
    assert parse_manifests(CQ2.format(extra=both)).tree == parse_manifests(CQ.format(extra=both)).tree
    assert parse_manifests(CQ2.format(extra=both)).tree.cluster_queues[0].cohort == "research"
    # Left out, whenCanBorrow is each version's own default, kept as spelled: v1beta2's MayStopSearch is the
    # value v1beta1 called Borrow (apis/kueue/v1beta2/clusterqueue_types.go: +kubebuilder:default).
    old = parse_manifests(CQ.format(extra="")).tree.cluster_queues[0]
    new = parse_manifests(CQ2.format(extra="")).tree.cluster_queues[0]
    assert (old.when_can_borrow, old.when_can_preempt) == ("Borrow", "TryNextFlavor")
    assert (new.when_can_borrow, new.when_can_preempt) == ("MayStopSearch", "TryNextFlavor")
    assert dataclasses.replace(old, when_can_borrow="MayStopSearch") == new


def test_v1beta2_refuses_v1beta1_cohort_and_v1beta1_refuses_cohort_name() -> None:
    cohort = CQ2.format(extra="").replace("  cohortName: ", "  cohort: ")
    assert error_of(cohort) == (
        "q.yaml, document 2, key 'spec.cohort': unknown field: not part of the ClusterQueue API as modelled; "
        "kueue.x-k8s.io/v1beta2 names it cohortName"
    )
    cohort_name = CQ.format(extra="").replace("  cohort: ", "  cohortName: ")
    assert error_of(cohort_name) == (
        "q.yaml, document 2, key 'spec.cohortName': unknown field: not part of the ClusterQueue API as "
        "modelled; kueue.x-k8s.io/v1beta1 names it cohort"
    )


def test_v1beta2_refuses_the_v1beta1_flavor_fungibility_names() -> None:
    borrow = CQ2.format(extra="  flavorFungibility: {whenCanBorrow: Borrow}\n")
    assert error_of(borrow) == (
        "q.yaml, document 2, key 'spec.flavorFungibility.whenCanBorrow': must be one of "
        "['MayStopSearch', 'TryNextFlavor'] (found 'Borrow', v1beta1's name of what kueue.x-k8s.io/v1beta2 "
        "spells MayStopSearch)"
    )
    preempt = CQ2.format(extra="  flavorFungibility: {whenCanPreempt: Preempt}\n")
    assert error_of(preempt) == (
        "q.yaml, document 2, key 'spec.flavorFungibility.whenCanPreempt': must be one of "
        "['MayStopSearch', 'TryNextFlavor'] (found 'Preempt', v1beta1's name of what kueue.x-k8s.io/v1beta2 "
        "spells MayStopSearch)"
    )
    other = CQ2.format(extra="  flavorFungibility: {whenCanBorrow: Sometimes}\n")
    assert error_of(other) == (
        "q.yaml, document 2, key 'spec.flavorFungibility.whenCanBorrow': must be one of "
        "['MayStopSearch', 'TryNextFlavor'] (found 'Sometimes')"
    )
    both = "  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: MayStopSearch}\n"
    cq = parse_manifests(CQ2.format(extra=both)).tree.cluster_queues[0]
    assert (cq.when_can_borrow, cq.when_can_preempt) == ("TryNextFlavor", "MayStopSearch")


def test_v1beta2_flavor_fungibility_preference_is_read_and_checked() -> None:
    both = "  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, "
    cq = parse_manifests(
        CQ2.format(extra=both + "preference: PreemptionOverBorrowing}\n")
    ).tree.cluster_queues[0]
    assert cq.preference == "PreemptionOverBorrowing"
    lone = "  flavorFungibility: {preference: BorrowingOverPreemption}\n"
    assert error_of(CQ2.format(extra=lone)) == (
        "q.yaml, document 2, key 'spec.flavorFungibility.preference': preference can only be set when both "
        "whenCanBorrow and whenCanPreempt are TryNextFlavor (found MayStopSearch/TryNextFlavor)"
    )


def test_v1beta2_fields_that_change_scheduling_are_refused() -> None:
    concurrent = "  concurrentAdmissionPolicy:\n    migration: {mode: TryPreferredFlavors}\n"
    assert error_of(CQ2.format(extra=concurrent)) == (
        "q.yaml, document 2, key 'spec.concurrentAdmissionPolicy': changes scheduling but is not modelled"
    )
    # v1beta2 drops the plain list (apis/kueue/v1beta2/clusterqueue_types.go); the strategy stays unmodelled.
    assert error_of(CQ2.format(extra="  admissionChecks: [prov]\n")) == (
        "q.yaml, document 2, key 'spec.admissionChecks': unknown field: not part of the ClusterQueue API as "
        "modelled; kueue.x-k8s.io/v1beta2 has admissionChecksStrategy only, not modelled either"
    )
    strategy = "  admissionChecksStrategy:\n    admissionChecks: [{name: prov}]\n"
    assert error_of(CQ2.format(extra=strategy)) == (
        "q.yaml, document 2, key 'spec.admissionChecksStrategy': changes scheduling but is not modelled"
    )
    flavor = CQ2.format(extra="").replace(
        "metadata: {name: a100}\n", "metadata: {name: a100}\nspec:\n  resourceWeights: {nvidia.com/gpu: 2}\n"
    )
    assert error_of(flavor) == (
        "q.yaml, document 1, key 'spec.resourceWeights': changes scheduling but is not modelled"
    )
    local = CQ2.format(extra="") + (
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: lq, namespace: ns}\n"
        "spec:\n  clusterQueue: team-a\n  wallTimePolicy: {wallTimeAllocatedHours: 10}\n"
    )
    assert error_of(local) == (
        "q.yaml, document 3, key 'spec.wallTimePolicy': changes scheduling but is not modelled"
    )
    # Neither is part of v1beta1.
    assert error_of(CQ.format(extra=concurrent)) == (
        "q.yaml, document 2, key 'spec.concurrentAdmissionPolicy': unknown field: not part of the "
        "ClusterQueue API as modelled"
    )


def test_v1beta2_cohort_with_parent_name_and_quota() -> None:
    text = CQ2.format(extra="") + (
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: research}\nspec:\n"
        "  parentName: org\n  fairSharing: {weight: 2}\n  resourceGroups:\n"
        "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: a100\n      resources:\n"
        "      - {name: nvidia.com/gpu, nominalQuota: 4, lendingLimit: 2}\n"
    )
    tree = parse_manifests(text).tree
    (cohort,) = tree.cohorts
    assert (cohort.parent, cohort.parent_key, cohort.fair_sharing_weight) == ("org", "spec.parentName", 2.0)
    assert cohort.resource_groups[0].flavors[0].resources[0].lending_limit == 2
    assert tree.cohort_names() == ["research", "org"]
    v1alpha1_name = (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec: {parent: org}\n"
    )
    assert error_of(v1alpha1_name) == (
        "q.yaml, document 1, key 'spec.parent': unknown field: not part of the Cohort API as modelled"
    )
    cycle = "".join(
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\n"
        f"metadata: {{name: {a}}}\nspec: {{parentName: {b}}}\n"
        for a, b in (("a", "b"), ("b", "a"))
    )
    assert "q.yaml, document 1, key 'spec.parentName': cohort cycle: a -> b -> a" in error_of(cycle)


def test_v1beta1_and_v1beta2_documents_mix_in_one_folder(tmp_path: Path) -> None:
    (tmp_path / "a-flavors.yaml").write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: a100}\n"
        "spec:\n  nodeLabels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
    )
    old = CQ.format(extra="").split("---\n")[1]
    (tmp_path / "b-old.yaml").write_text(
        old + "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: research}\n"
        "spec: {parentName: org}\n"
    )
    new = CQ2.format(extra="").split("---\n")[1].replace("team-a", "team-b")
    (tmp_path / "c-new.yaml").write_text(
        new + "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        "metadata: {name: lq, namespace: ns}\nspec: {clusterQueue: team-a}\n"
    )
    tree = read_manifests(tmp_path).tree
    assert tree.flavors[0].gpu_model == "NVIDIA-A100-SXM4-80GB"
    assert [(q.name, q.cohort, q.when_can_borrow) for q in tree.cluster_queues] == [
        ("team-a", "research", "Borrow"),
        ("team-b", "research", "MayStopSearch"),
    ]
    assert tree.cohort_parent("research") == "org"
    assert [(q.namespace, q.name, q.cluster_queue) for q in tree.local_queues] == [("ns", "lq", "team-a")]
    lines = describe_tree(tree)
    assert "  Cohort research, fairSharing weight 1" in lines
    assert (
        "    ClusterQueue team-b: BestEffortFIFO, fairSharing weight 1, preemption withinClusterQueue Never, "
        "reclaimWithinCohort Never, borrowWithinCohort Never, flavorFungibility MayStopSearch/TryNextFlavor"
        in lines
    )


@pytest.mark.parametrize("folder", ["kueue-philly-flavors", "kueue-philly-flavors-try-next"])
def test_the_v1beta2_philly_flavor_examples_read_as_their_v1beta1_twins(folder: str) -> None:
    """The two flavor examples are written in v1beta2; spelled in v1beta1 (cohort for cohortName, nothing
    else) they give the same tree, so both versions are exercised by the tests and runs that use them."""
    path = EXAMPLES / folder / "queues.yaml"
    text = path.read_text()
    assert "kueue.x-k8s.io/v1beta1" not in text and text.count("apiVersion: kueue.x-k8s.io/v1beta2") == 17
    twin = text.replace("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1").replace("cohortName:", "cohort:")
    assert parse_manifests(text, "q.yaml").tree == parse_manifests(twin, "q.yaml").tree
    assert read_manifests(path).ignored == ()


def test_cli_check_exits_2_on_bad_v1beta2_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(CQ2.format(extra="  flavorFungibility: {whenCanBorrow: Borrow}\n  cohort: research\n"))
    result = CliRunner().invoke(main, ["manifests", "check", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}, document 2, key 'spec.cohort': unknown field" in result.output
    assert f"{bad}, document 2, key 'spec.flavorFungibility.whenCanBorrow': must be one of" in result.output
    assert "Traceback" not in result.output
