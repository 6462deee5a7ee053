"""The Hydra config tree: every option of every group composes; bad keys and types fail at compose time."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import pytest
from hydra import compose, initialize_config_module
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig, OmegaConf

from gpureplay.config import register_configs
from gpureplay.schedulers.policy import Policy

GROUPS = ("trace", "cluster", "scheduler", "workload", "experiment", "sweep")


def options(group: str) -> list[str]:
    folder = files("gpureplay.conf").joinpath(group)
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


@pytest.fixture(scope="module", autouse=True)
def hydra_context() -> Iterator[None]:
    register_configs()
    with initialize_config_module(config_module="gpureplay.conf", version_base="1.3"):
        yield


def make(*overrides: str) -> DictConfig:
    return compose("config", overrides=list(overrides), return_hydra_config=True)


@pytest.mark.parametrize(("group", "option"), [(g, o) for g in GROUPS for o in options(g)])
def test_every_option_composes(group: str, option: str) -> None:
    cfg = make(f"{group}={option}")
    container = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(container, dict)
    if group == "scheduler":
        policy = OmegaConf.to_object(cfg.scheduler)
        assert isinstance(policy, Policy) and policy.name == option
    if group in ("trace", "cluster"):
        assert cfg[group].kind and cfg[group].name
    if group == "sweep":
        assert cfg.hydra.sweeper.params, f"sweep {option} declares no grid"


@pytest.mark.parametrize("launcher", ["local", "ray_cluster", "slurm", "basic"])
def test_every_launcher_composes(launcher: str) -> None:
    cfg = make(f"hydra/launcher={launcher}", "sweep=schedulers")
    assert cfg.hydra.launcher._target_.startswith("hydra")


def test_every_group_has_options() -> None:
    for group in GROUPS:
        assert options(group), group


def test_presets_required_by_the_engine_issue_exist() -> None:
    assert {"kube-default", "fifo", "sjf", "gang-binpack", "gang-spread", "easy-backfill"} <= set(
        options("scheduler")
    )
    assert {"philly", "openb", "itp", "pai2020", "csv"} <= set(options("trace"))
    assert {"philly", "openb", "homogeneous"} <= set(options("cluster"))


def test_defaults_are_philly_gang_binpack() -> None:
    cfg = make()
    assert (cfg.trace.name, cfg.cluster.name, cfg.scheduler.name) == ("philly", "philly", "gang-binpack")


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("seed=abc", "seed"),
        ("trace.foo=1", "trace.foo"),
        ("scheduler.queue_order=lifo", "queue_order"),
        ("scheduler.backfill_depth=deep", "backfill_depth"),
        ("sample_interval=often", "sample_interval"),
        ("workload.load=fast", "load"),
        ("trace=nonexistent", "nonexistent"),
    ],
)
def test_bad_key_or_type_fails_at_compose_time(override: str, fragment: str) -> None:
    with pytest.raises(ConfigCompositionException) as info:
        make(override)
    text = str(info.value) + str(info.value.__cause__)
    assert fragment in text


def test_cluster_key_types_are_checked() -> None:
    with pytest.raises(ConfigCompositionException, match=r"cluster\.nodes"):
        make("cluster=homogeneous", "cluster.nodes=many")
    with pytest.raises(ConfigCompositionException, match=r"cluster\.revised"):
        make("cluster=philly", "cluster.revised=maybe")


def test_experiment_overrides_groups() -> None:
    cfg = make("experiment=itp-cluster04")
    assert cfg.trace.kind == "itp" and cfg.trace.cluster_id == 4
    assert cfg.cluster.kind == "homogeneous" and cfg.cluster.gpu_model == "V100-32GB"


def test_csv_trace_contract_overrides() -> None:
    cfg = make(
        "trace=csv",
        "trace.path=jobs.csv",
        "cluster=homogeneous",
        "cluster.nodes=2",
        "cluster.gpus_per_node=8",
        "cluster.gpu_model=A100-80GB",
        "scheduler=fifo",
    )
    assert cfg.trace.path == "jobs.csv" and cfg.cluster.nodes == 2 and cfg.scheduler.name == "fifo"


def test_no_config_sets_hydra_mode() -> None:
    """``gpureplay run`` takes the run mode from ``-m`` alone (app._mode_from_flags skips Hydra's first
    composition, which only reads ``hydra.mode``): a shipped config that set it would be overlooked."""
    conf = files("gpureplay.conf")
    setting = []
    for path in _yaml_files(conf):
        node = OmegaConf.load(str(path))
        hydra_node = node.get("hydra") if isinstance(node, DictConfig) else None
        if isinstance(hydra_node, DictConfig) and "mode" in hydra_node:
            setting.append(str(path))
    assert setting == []


def _yaml_files(folder: Any) -> Iterator[Any]:
    for entry in folder.iterdir():
        if entry.is_dir():
            yield from _yaml_files(entry)
        elif entry.name.endswith(".yaml"):
            yield entry


def test_hydra_reads_the_mode_from_the_flag_unless_an_override_may_set_it() -> None:
    from hydra._internal.hydra import Hydra

    from gpureplay.app import _mode_from_flags

    original = Hydra.get_mode
    with _mode_from_flags(["trace=csv", "scheduler=fifo,gang-binpack"]):
        assert Hydra.get_mode(None, "config", []) is None  # type: ignore[arg-type]
    assert Hydra.get_mode is original
    for override in ("hydra.mode=MULTIRUN", "+hydra.searchpath=[file:///tmp]"):
        with _mode_from_flags([override]):
            assert Hydra.get_mode is original
