"""Fractional GPU sharing on openb's timed replay (experiment ``openb-fractional``).

openb's 8,152 pods (shares of a GPU and whole GPUs) arriving 8x faster on 16 of openb's G2
servers (128 GPUs), under the GPU-sharing presets (HAMi binpack / spread with 10 vGPU slots per
GPU, KAI's shared-GPU binpack, gpushare; the device plugin's time-slicing and MPS with 4 replicas
per GPU) and the kube-default baseline; and on 16 x 8 A100-80GB under MIG layouts (experiment
``mig-openb``). Inputs are built exactly
as ``gpureplay run experiment=openb-fractional scheduler=NAME`` builds them; the kernels are
compiled (or loaded from numba's cache) in ``setup()``. ``track_wait_mean`` keeps the result
next to the speed.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from gpureplay.cluster.registry import build_cluster
from gpureplay.config import register_configs
from gpureplay.replay.simulate import simulate, warm_up
from gpureplay.schedulers.policy import Policy
from gpureplay.traces.registry import load_trace
from gpureplay.workload.transforms import apply_workload

SHARING_PRESETS = [
    "kube-default",
    "hami-binpack",
    "hami-spread",
    "kai-shared",
    "gpushare",
    "time-slicing",
    "mps",
]
SEED = 42


def inputs(overrides: list[str]) -> tuple[Any, Any, Policy, float]:
    """(jobs, nodes, policy, sample interval) as ``gpureplay run OVERRIDES`` builds them."""
    register_configs()
    with initialize_config_module(config_module="gpureplay.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    resolved = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True, enum_to_str=True))
    trace = load_trace(resolved["trace"], SEED)
    jobs = apply_workload(trace.jobs, load=float(resolved["workload"]["load"]), seed=SEED)
    nodes = build_cluster(resolved["cluster"]).nodes
    return jobs, nodes, cast(Policy, OmegaConf.to_object(cfg.scheduler)), float(cfg.sample_interval)


class OpenbSharingReplay:
    """openb at 8x on 16 G2 servers under the GPU-sharing presets."""

    params: ClassVar[list[list[str]]] = [SHARING_PRESETS]
    param_names: ClassVar[list[str]] = ["preset"]
    timeout = 600
    number = 1
    repeat = (1, 5, 60.0)
    warmup_time = 0.0

    def setup(self, name: str) -> None:
        self.jobs, self.nodes, self.policy, self.sample_interval = inputs(
            ["experiment=openb-fractional", f"scheduler={name}"]
        )
        warm_up(self.policy)

    def _replay(self) -> Any:
        return simulate(self.jobs, self.nodes, self.policy, seed=SEED, sample_interval=self.sample_interval)

    def time_replay(self, name: str) -> None:
        self._replay()

    def peakmem_replay(self, name: str) -> None:
        self._replay()

    def track_wait_mean(self, name: str) -> float:
        return float(self._replay().jobs["pending_time"].mean() or 0.0) / 3600.0

    track_wait_mean.unit = "hours"  # type: ignore[attr-defined]


class OpenbMigReplay(OpenbSharingReplay):
    """openb at 8x on 16 x 8 A100-80GB under MIG layouts (experiment ``mig-openb``, preset ``mig-single``).

    ``all-enabled`` runs HAMi's dynamic MIG (preset ``mig-dynamic``): an instance made per pod on the slice
    masks, the one layout whose placement work grows with the pods on a GPU. ``all-enabled+fgd`` runs FGD
    over slices (preset ``mig-fgd``): every GPU's placements scored by the fragmentation they leave.
    ``all-balanced+mixed`` and ``all-balanced+repartition`` are the sweep ``mig-openb-repartition``'s
    points (half the nodes MIG under the mixed strategy, binpack): static layouts, and idle GPUs
    re-partitioned after every scheduling cycle (preset ``mig-repartition``).
    """

    params: ClassVar[list[list[str]]] = [
        [
            "all-disabled",
            "all-1g.10gb",
            "all-3g.40gb",
            "all-enabled",
            "all-enabled+fgd",
            "all-balanced+mixed",
            "all-balanced+repartition",
        ]
    ]
    param_names: ClassVar[list[str]] = ["layout"]

    def setup(self, name: str) -> None:
        layout, _, variant = name.partition("+")
        if variant in ("mixed", "repartition"):
            half = ["cluster.mig_nodes=8", "scheduler.node_placement=best_fit"]
            scheduler = [f"scheduler=mig-{variant}", *half]
        elif layout == "all-enabled":
            scheduler = [f"scheduler=mig-{'fgd' if variant else 'dynamic'}"]
        else:
            scheduler = []
        self.jobs, self.nodes, self.policy, self.sample_interval = inputs(
            ["experiment=mig-openb", *scheduler, f"cluster.mig_layout={layout}"]
        )
        warm_up(self.policy)
