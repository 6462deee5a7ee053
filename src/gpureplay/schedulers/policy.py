"""The scheduling policy a replay runs under, as plain typed fields.

:class:`Policy` is both the Hydra structured-config schema of the
``scheduler`` group (``conf/scheduler/*.yaml`` extend it) and what the engine
boundary turns into integer codes. Enums keep a bad value (``queue_order=lifo``)
a compose-time error with Hydra's own message.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class QueueOrder(Enum):
    """Order in which pending jobs are considered each cycle.

    ``fifo``: submit time, then job id. ``sjf``: trace duration (an oracle
    baseline, as in Tiresias/Gandiva comparisons), then FIFO. ``priority``:
    higher ``priority`` first, then FIFO (kube-scheduler's PrioritySort).
    """

    fifo = 0
    sjf = 1
    priority = 2


class Placement(Enum):
    """How a pod picks a node (and a GPU on it).

    ``first_fit``: lowest index that fits. ``best_fit``: least free capacity
    left after placing (binpack; Volcano ``binpack``, KAI ``gpupack``).
    ``worst_fit``: most free capacity left (spread; KAI ``gpuspread``).
    ``random``: uniformly among fitting candidates, seeded.
    """

    first_fit = 0
    best_fit = 1
    worst_fit = 2
    random = 3


class GangMode(Enum):
    """How a multi-pod job is placed.

    ``gang``: all pods at once or none (Volcano minMember, Kueue all-or-nothing).
    ``pod_by_pod``: kube-scheduler default, pods placed one at a time in the
    pod queue's order; a partly placed job holds what it got and runs only
    when all its pods are placed (the classic gang deadlock).
    """

    gang = 0
    pod_by_pod = 1


class Backfill(Enum):
    """What happens behind a head-of-line job that cannot start.

    ``none``: strict head-of-line blocking. ``easy``: EASY backfill (Lifka 1995;
    Slurm ``sched/backfill``): the head gets a reservation at its earliest
    start and later jobs start only if they do not delay it. ``skip``: later
    jobs may start whenever they fit (kube-scheduler behaviour, no reservation).
    """

    none = 0
    easy = 1
    skip = 2


@dataclass
class Policy:
    """A scheduler configuration (the ``scheduler`` config group).

    Parameters
    ----------
    name
        Preset name, copied into results.
    queue_order
        See :class:`QueueOrder`.
    gang
        See :class:`GangMode`.
    node_placement, gpu_placement
        Node-level and GPU-level choice, see :class:`Placement`.
    backfill
        See :class:`Backfill`.
    backfill_depth
        How many jobs behind the head are tried per cycle (Slurm
        ``bf_max_job_test``-style bound); 0 means unbounded.
    session_interval
        Seconds between periodic scheduling cycles (Volcano ``schedulePeriod``,
        default 1 s there); 0 runs a cycle at every arrival and completion.
    """

    name: str = "fifo"
    queue_order: QueueOrder = QueueOrder.fifo
    gang: GangMode = GangMode.gang
    node_placement: Placement = Placement.first_fit
    gpu_placement: Placement = Placement.first_fit
    backfill: Backfill = Backfill.none
    backfill_depth: int = 0
    session_interval: float = 0.0
