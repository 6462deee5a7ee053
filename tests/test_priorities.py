"""Priority-class mixes and checkpointing settings (workload/priorities.py)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from gpureplay.errors import InputError
from gpureplay.traces.philly import load_philly
from gpureplay.workload.priorities import (
    Checkpointing,
    PriorityClass,
    assign_checkpointing,
    assign_priority_classes,
)

MIX = [PriorityClass("high", 1000, 0.2, preemptible=False), PriorityClass("low", 0, 0.8)]


@pytest.fixture(scope="module")
def philly() -> pl.DataFrame:
    return load_philly().jobs


def test_mix_follows_the_shares_and_is_seeded(philly: pl.DataFrame) -> None:
    out = assign_priority_classes(philly, MIX, seed=3)
    share = out.filter(pl.col("priority_class") == "high").height / out.height
    assert abs(share - 0.2) < 0.01  # 82,247 draws: sd of the share ~0.0014
    high = out.filter(pl.col("priority_class") == "high")
    assert set(high["priority"].to_list()) == {1000} and not high["preemptible"].any()
    assert out.filter(pl.col("priority_class") == "low")["preemptible"].all()
    assert out.equals(assign_priority_classes(philly, MIX, seed=3))
    assert not out.equals(assign_priority_classes(philly, MIX, seed=4))
    # The draw of a job does not depend on the table's row order.
    shuffled = assign_priority_classes(philly.reverse(), MIX, seed=3).reverse()
    assert shuffled["priority_class"].equals(out["priority_class"])


def test_no_mix_keeps_the_trace_and_a_trace_with_priorities_needs_an_override(philly: pl.DataFrame) -> None:
    kept = assign_priority_classes(philly, [], seed=0)
    assert kept["priority"].equals(philly["priority"]) and kept["priority_class"].null_count() == kept.height
    assert set(kept["preemption_policy"].to_list()) == {"PreemptLowerPriority"}
    tiered = philly.with_columns(priority=(pl.col("job_id") % 3).cast(pl.Int32))
    with pytest.raises(InputError, match="priority_override"):
        assign_priority_classes(tiered, MIX, seed=0)
    assert assign_priority_classes(tiered, MIX, seed=0, override=True)["priority"].n_unique() == 2


@pytest.mark.parametrize(
    ("mix", "key"),
    [
        ([PriorityClass("a", 1, 0.5), PriorityClass("b", 0, 0.4)], "workload.priority_classes"),
        ([PriorityClass("a", 1, 0.5), PriorityClass("a", 0, 0.5)], "workload.priority_classes[1].name"),
        ([PriorityClass("a", 2_000_000_000, 1.0)], "workload.priority_classes[0].value"),
        ([PriorityClass("a", 1, 1.0, preemption_policy="Sometimes")], "preemption_policy"),
    ],
)
def test_bad_mixes_name_their_config_key(philly: pl.DataFrame, mix: list[PriorityClass], key: str) -> None:
    with pytest.raises(InputError) as caught:
        assign_priority_classes(philly.head(10), mix, seed=0)
    assert key in str(caught.value)


def test_checkpointing_defaults_to_lucid_overheads_and_queues_override(philly: pl.DataFrame) -> None:
    jobs = philly.head(2000)
    queue = jobs["queue"][0]
    out = assign_checkpointing(jobs, Checkpointing(), {queue: Checkpointing(600.0, 5.0)})
    gpus = out["num_pods"] * out["gpu_milli"] / 1000
    theirs = out.filter(pl.col("queue") == queue)
    others = out.filter(pl.col("queue") != queue)
    assert set(theirs["checkpoint_interval"].to_list()) == {600.0} and set(theirs["restart_overhead"]) == {
        5.0
    }
    assert set(others["checkpoint_interval"].to_list()) == {0.0}
    lucid = out.filter(pl.col("queue") != queue).with_columns(g=gpus.filter(out["queue"] != queue))
    assert (lucid.filter(pl.col("g") <= 8)["restart_overhead"] == 40.0).all()
    assert (lucid.filter(pl.col("g") > 8)["restart_overhead"] == 60.0).all()
    never = assign_checkpointing(jobs, Checkpointing(math.inf, 0.0))
    assert math.isinf(never["checkpoint_interval"][0]) and never["restart_overhead"][0] == 0.0


@pytest.mark.parametrize(
    ("setting", "key"),
    [
        (Checkpointing(-1.0), "workload.checkpoint.interval"),
        (Checkpointing(math.nan), "workload.checkpoint.interval"),
        (Checkpointing(0.0, math.inf), "workload.checkpoint.restart_overhead"),
        (Checkpointing(0.0, -5.0), "workload.checkpoint.restart_overhead"),
    ],
)
def test_bad_checkpointing_names_its_config_key(
    philly: pl.DataFrame, setting: Checkpointing, key: str
) -> None:
    with pytest.raises(InputError, match=key.replace(".", r"\.")):
        assign_checkpointing(philly.head(5), setting)
