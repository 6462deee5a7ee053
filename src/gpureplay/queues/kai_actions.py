"""KAI's session actions as the replay runs them (``scheduler.actions`` under ``queues: kai``).

KAI's scheduler configuration lists its actions (``actions: "allocate, consolidation, reclaim, preempt,
stalegangeviction"``, its default, in that order: docs/systems.md, "KAI Scheduler"). The replay models
``allocate``, then
``reclaim`` (between queues) and ``preempt`` (within a queue), each optional, in KAI's order
(:mod:`gpureplay.engine.queues.kai.evict`). ``stalegangeviction`` is accepted and has nothing to do: the
engine places and evicts gangs whole, so no gang ever runs below its minMember. ``consolidation`` (moving
running pods to make room) is not modelled and refused. Without ``scheduler.actions`` a KAI session runs
``allocate`` alone.
"""

from __future__ import annotations

from gpureplay.queues.volcano_actions import action_names

__all__ = ["KAI_ACTION_ORDER", "kai_action_bits", "kai_actions"]

#: KAI's actions in their order (``pkg/scheduler/actions/factory.go``, the default configuration).
KAI_ACTION_ORDER: tuple[str, ...] = ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction")

#: ``kai_evict.KA_RECLAIM`` and ``KA_PREEMPT``.
_BITS = {"reclaim": 1, "preempt": 2}


def kai_actions(actions: str | None) -> tuple[bool, bool]:
    """Whether KAI's action list ``actions`` (None: ``allocate`` alone) runs reclaim and preempt.

    Raises
    ------
    ValueError
        When the list is not one the replay models (the message says which are).
    """
    if actions is None:
        return False, False
    names = action_names(str(actions))
    unknown = [name for name in names if name not in KAI_ACTION_ORDER]
    if unknown:
        raise ValueError(
            f"{', '.join(repr(n) for n in unknown)}: KAI's actions are {', '.join(KAI_ACTION_ORDER)} "
            f"(found {actions!r})"
        )
    if "consolidation" in names:
        raise ValueError(
            f"KAI's consolidation action is not modelled yet (found {actions!r}); the replay models "
            "'allocate, reclaim, preempt' (reclaim and preempt each optional; stalegangeviction accepted)"
        )
    positions = [KAI_ACTION_ORDER.index(name) for name in names]
    if not names or names[0] != "allocate" or positions != sorted(set(positions)):
        raise ValueError(
            "list allocate first, then reclaim, preempt and stalegangeviction (each optional, once, in KAI's "
            f"order), e.g. 'allocate, reclaim, preempt' (found {actions!r})"
        )
    return "reclaim" in names, "preempt" in names


def kai_action_bits(actions: str | None) -> int:
    """The ``KA_*`` bits of :func:`kai_actions` for the engine."""
    reclaim, preempt = kai_actions(actions)
    return (_BITS["reclaim"] if reclaim else 0) | (_BITS["preempt"] if preempt else 0)
