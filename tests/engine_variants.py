"""The compiled variants of the engine the suite uses, compiled once and in parallel before it runs.

numba compiles the engine once per set of mechanisms (pod-by-pod or gang cycle, EASY, preemption,
FGD's task classes, sharing by replicas, debug checks: optional bundles typed ``None`` or not). On a
cold cache each pytest-xdist worker compiled every variant its tests reached, often the same ones at
the same time. ``pytest --precompile`` (``make test``) first compiles :data:`VARIANTS` in as many
processes as there are workers, each into numba's on-disk cache; the workers then load them (under a
second each). A variant missing from the list still works: the first test that needs it compiles it.

Run as ``python -m tests.engine_variants INDEX COUNT`` it compiles every COUNT-th variant from INDEX.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from gpureplay.schedulers.policy import GpuSharing, Policy, Preemption, QueueOrder

REPO = Path(__file__).resolve().parents[1]

#: (preset of tests.reference.strategies.PRESETS, debug checks, what uses it). The shared-GPU gang
#: variant is test_replicas' BASE (FIFO with priority order and preemption) under time-slicing.
VARIANTS: tuple[tuple[str, bool, str], ...] = (
    ("fifo", True, "scenario and differential tests of gang mode"),
    ("kube-default", False, "CLI runs of the default sweep presets"),
    ("kube-default", True, "pod-by-pod scenarios"),
    ("fifo", False, "CLI runs, gang mode"),
    ("gang-binpack-preempt", True, "preemption scenarios"),
    ("gang-binpack-preempt", False, "CLI runs with preemption"),
    ("kube-default-preempt", True, "pod-by-pod preemption scenarios"),
    ("kube-default-preempt", False, "CLI runs, pod-by-pod preemption"),
    ("easy-backfill", True, "EASY scenarios"),
    ("fgd", True, "timed replays scored by FGD (task classes)"),
    ("fgd", False, "CLI timed replays scored by FGD"),
    ("time-slicing", True, "sharing by replicas, pod-by-pod"),
    ("shared-gang", True, "sharing by replicas, gang mode with preemption"),
    ("packing:fgd", False, "the FGD experiment's packing kernel"),
)


def policy(name: str) -> Policy:
    """The policy of a :data:`VARIANTS` entry."""
    from tests.reference.strategies import PRESETS

    if name == "shared-gang":
        base = replace(PRESETS["fifo"], queue_order=QueueOrder.priority, preemption=Preemption.priority)
        return replace(base, gpu_sharing=GpuSharing.time_slicing, replicas=2)
    return PRESETS[name.removeprefix("packing:")]


def compile_share(index: int, count: int) -> None:
    """Compile (or load) every ``count``-th variant from ``index``, in this process."""
    from gpureplay.replay.packing import warm_up_packing
    from gpureplay.replay.simulate import warm_up

    for name, debug, _ in VARIANTS[index::count]:
        started = time.perf_counter()
        if name.startswith("packing:"):
            warm_up_packing(policy(name))
        else:
            warm_up(policy(name), debug=debug)
        print(f"{name} debug={debug}: {time.perf_counter() - started:.1f} s", flush=True)


def precompile(processes: int) -> float:
    """Compile :data:`VARIANTS` in ``processes`` parallel processes; return the wall seconds.

    Raises
    ------
    RuntimeError
        When a process fails (its output is in the message): the engine does not compile.
    """
    started = time.perf_counter()
    count = max(1, min(processes, len(VARIANTS)))
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.engine_variants", str(i), str(count)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(count)
    ]
    failures = []
    for child in children:
        out, _ = child.communicate()
        if child.returncode != 0:
            failures.append(out)
    if failures:
        raise RuntimeError("precompiling the engine failed:\n" + "\n".join(failures))
    return time.perf_counter() - started


if __name__ == "__main__":
    compile_share(int(sys.argv[1]), int(sys.argv[2]))
