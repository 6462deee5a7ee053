"""Volcano's session actions and preemptable plugins as the replay runs them.

``scheduler.actions`` is the action string of Volcano's scheduler configuration (``volcano-scheduler.conf``
``actions:``); ``scheduler.preemptable_plugins`` names the plugins whose ``enablePreemptable`` is on, in
the tiers the replay models (tier 1 ``priority, gang, conformance``; tier 2 ``drf``: docs/systems.md,
"Volcano",
docs/engine/queues/volcano.md "Volcano preempt"). Volcano's built-in configuration (``pkg/scheduler/util.go``)
leaves every flag on; its Helm chart (``installer/helm/chart/volcano/config/volcano-scheduler.conf``)
turns ``enablePreemptable`` off for ``gang`` and ``drf``, so there the priority plugin picks the victims.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEFAULT_ACTIONS",
    "HELM_PREEMPTABLE",
    "PREEMPTABLE_PLUGINS",
    "VOLCANO_ACTIONS",
    "VolcanoActions",
    "action_names",
    "volcano_actions",
    "volcano_preemptable",
]

#: The plugins with a ``PreemptableFn`` in the configuration the replay models, in tier order.
PREEMPTABLE_PLUGINS: tuple[str, ...] = ("priority", "gang", "conformance", "drf")

#: The Helm chart's choice: ``enablePreemptable: false`` on ``gang`` and ``drf``.
HELM_PREEMPTABLE: tuple[str, ...] = ("priority", "conformance")

#: Volcano's other actions (``pkg/scheduler/actions``), named in the refusal.
_UNMODELLED = ("gangpreempt", "gangreclaim", "shuffle", "reserve", "elect")


def _lists() -> dict[tuple[str, ...], tuple[bool, bool]]:
    # enqueue, allocate, then preempt before reclaim (each optional), backfill anywhere after allocate:
    # backfill places only BestEffort pods, which no action after it touches.
    found: dict[tuple[str, ...], tuple[bool, bool]] = {}
    for preempt in (False, True):
        for reclaim in (False, True):
            after = [a for a, on in (("preempt", preempt), ("reclaim", reclaim)) if on]
            for at in range(len(after) + 1):
                names = ("enqueue", "allocate", *after[:at], "backfill", *after[at:])
                found[names] = (preempt, reclaim)
    return found


#: The Volcano action lists the replay models: whether each runs (preempt, reclaim).
VOLCANO_ACTIONS: dict[tuple[str, ...], tuple[bool, bool]] = _lists()


@dataclass(frozen=True)
class VolcanoActions:
    """What a Volcano session runs after ``allocate``, and which plugins may name preemption victims.

    Attributes
    ----------
    preempt
        The ``preempt`` action (within a queue) runs, before ``reclaim``.
    reclaim
        The ``reclaim`` action (between queues) runs.
    preemptable
        The plugins whose ``enablePreemptable`` is on (a subset of :data:`PREEMPTABLE_PLUGINS`, in that
        order); read by the preempt action only.
    """

    preempt: bool = False
    reclaim: bool = False
    preemptable: tuple[str, ...] = PREEMPTABLE_PLUGINS

    def bits(self) -> int:
        """``ACT_PREEMPT | ACT_RECLAIM`` as :mod:`gpureplay.engine.queues.volcano.preempt` reads them."""
        return (2 if self.preempt else 0) | (1 if self.reclaim else 0)

    def plugin_bits(self) -> int:
        """The ``PF_*`` bits of :attr:`preemptable` (priority 1, gang 2, conformance 4, drf 8)."""
        return sum(1 << PREEMPTABLE_PLUGINS.index(name) for name in self.preemptable)

    def describe(self) -> str:
        """The action list, as Volcano's configuration writes it."""
        middle = [a for a, on in (("preempt", self.preempt), ("reclaim", self.reclaim)) if on]
        return ", ".join(("enqueue", "allocate", *middle, "backfill"))


#: Volcano's default session: no action after allocate.
DEFAULT_ACTIONS = VolcanoActions()


def action_names(text: str) -> tuple[str, ...]:
    """The comma-separated names of a scheduler configuration's list (actions, plugins), blanks dropped."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def volcano_actions(actions: str | None) -> tuple[bool, bool]:
    """Whether Volcano's action list ``actions`` (``scheduler.actions``; None: the default ``enqueue,
    allocate, backfill``) runs the preempt and the reclaim action.

    Raises
    ------
    ValueError
        When the list is not one the replay models (the message says which are).
    """
    if actions is None:
        return False, False
    names = action_names(str(actions))
    if names in VOLCANO_ACTIONS:
        return VOLCANO_ACTIONS[names]
    unmodelled = [name for name in names if name in _UNMODELLED]
    if unmodelled:
        raise ValueError(
            f"Volcano's {', '.join(unmodelled)} action is not modelled yet (found {actions!r}); the replay "
            "models enqueue, allocate, then preempt and reclaim (each optional, preempt first), and backfill"
        )
    if "reclaim" in names and "preempt" in names and names.index("reclaim") < names.index("preempt"):
        raise ValueError(
            f"reclaim before preempt is not modelled (found {actions!r}): list preempt first (enqueue, "
            "allocate, preempt, reclaim, backfill)"
        )
    raise ValueError(
        "the replay models enqueue, allocate, then preempt and reclaim (each optional, preempt first), and "
        f"backfill after allocate, e.g. 'enqueue, allocate, preempt, reclaim, backfill' (found {actions!r})"
    )


def volcano_preemptable(plugins: str | None) -> tuple[str, ...]:
    """The plugins named by ``scheduler.preemptable_plugins`` (None: Volcano's built-in configuration,
    every one), in tier order.

    Raises
    ------
    ValueError
        On a name that is not one of :data:`PREEMPTABLE_PLUGINS`, or a repeated one.
    """
    if plugins is None:
        return PREEMPTABLE_PLUGINS
    names = action_names(str(plugins))
    unknown = [name for name in names if name not in PREEMPTABLE_PLUGINS]
    if unknown:
        raise ValueError(
            f"{', '.join(repr(n) for n in unknown)}: the plugins with a PreemptableFn in the modelled "
            f"configuration are {', '.join(PREEMPTABLE_PLUGINS)} (found {plugins!r}; the Helm chart's "
            f"choice is '{', '.join(HELM_PREEMPTABLE)}')"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"a plugin is named twice (found {plugins!r})")
    return tuple(name for name in PREEMPTABLE_PLUGINS if name in names)
