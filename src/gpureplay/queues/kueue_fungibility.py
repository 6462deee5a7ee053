"""Kueue's flavor assigner with preemption modes: which flavor a preempting ClusterQueue's workload takes.

Plain Python, the rule as Kueue states it (kubernetes-sigs/kueue
``pkg/scheduler/flavorassigner/flavorassigner.go``: ``findFlavorForPodSets``, ``fitsResourceQuota``,
``isPreferred``, ``shouldTryNextFlavor``; ``pkg/scheduler/preemption/preemption_oracle.go``
``SimulatePreemption``; docs/systems.md, "Kueue"). The reference simulator calls it; the engine's kernel
(:mod:`gpureplay.engine.queues.kueue.flavor_modes`) states it again on arrays.

:func:`gpureplay.queues.kueue_quota.assign_flavors` is the same search when only ``Fit`` can end it: it is
exact for a ClusterQueue that does not preempt (every other flavor's mode is then ``NoFit`` or "no
candidates", which never stops the search and always ranks below ``Fit``) and for a ClusterQueue with one
flavor per resource group (the flavor is the group's only one). For a preempting ClusterQueue whose resource
group lists several flavors, each flavor's mode per requested resource of the group is:

- ``NoFit`` when the request exceeds ``potentialAvailable``, or when it exceeds ``available`` and may not
  preempt (:func:`gpureplay.queues.kueue_preemption.needs_preemption` on that one flavor-resource);
- ``Fit`` at its borrowing level (``FindHeightOfLowestSubtreeThatFits``) when within ``available``;
- else what ``SimulatePreemption`` finds: the target search (classical, or fair sharing's under fair
  sharing) for that flavor-resource alone; no
  targets: "no candidates" (borrowing level now); else ``Preempt`` when a target is in the ClusterQueue
  itself, ``Reclaim`` when all are in others (borrowing level once the targets' usage is removed).

A flavor's mode is the worst of its resources' (by :func:`preferred`). The search stops at a flavor unless
(``shouldTryNextFlavor``) its mode is ``NoFit`` or "no candidates", or it needs preemption under
``whenCanPreempt: TryNextFlavor`` (Kueue's default), or borrows under ``whenCanBorrow: TryNextFlavor``; the
best flavor seen (first of equals) is kept otherwise. A group where every flavor is ``NoFit`` fails the
workload (``NoFit``: no preemption).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpureplay.queues.kueue_preemption import needs_preemption
from gpureplay.queues.kueue_quota import (
    RESOURCES,
    KueueQuotas,
    available,
    borrow_height,
    potential_available,
)

__all__ = [
    "FIT",
    "NO_CANDIDATES",
    "NO_FIT",
    "PREEMPT",
    "RECLAIM",
    "Mode",
    "Simulate",
    "assign_with_modes",
    "preferred",
    "tries_next",
]

#: ``flavorassigner.go`` ``preemptionMode``, worst to best.
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)


@dataclass(frozen=True)
class Mode:
    """``granularMode``: a preemption mode and the borrowing level (0: within the ClusterQueue's quota)."""

    preemption: int
    borrow: int


#: ``worstGranularMode``: what a search that found nothing holds.
WORST = Mode(NO_FIT, 1 << 62)

#: ``SimulatePreemption`` for one quota row and amount: the preemption mode and the borrowing level after.
Simulate = Callable[[int, int], Mode]


def preferred(a: Mode, b: Mode, preemption_over_borrowing: bool) -> bool:
    """``isPreferred``: whether mode ``a`` is better than ``b``.

    ``NoFit`` is never better, a mode without preemption candidates ranks below every viable one; then
    ``BorrowingOverPreemption`` (the default) compares the preemption mode first (``Fit`` over ``Reclaim``
    over ``Preempt``) and the borrowing level second, ``PreemptionOverBorrowing`` the other way round.
    """
    if a.preemption == NO_FIT:
        return False
    if b.preemption == NO_FIT:
        return True
    if (a.preemption == NO_CANDIDATES) != (b.preemption == NO_CANDIDATES):
        return b.preemption == NO_CANDIDATES
    if preemption_over_borrowing and a.borrow != b.borrow:
        return a.borrow < b.borrow
    if a.preemption != b.preemption:
        return a.preemption > b.preemption
    return a.borrow < b.borrow


def tries_next(mode: Mode, borrow_try_next: bool, preempt_try_next: bool) -> bool:
    """``shouldTryNextFlavor``: whether the search goes past a flavor of this mode."""
    if mode.preemption in (NO_FIT, NO_CANDIDATES):
        return True
    if mode.preemption in (PREEMPT, RECLAIM) and preempt_try_next:
        return True
    return mode.borrow > 0 and borrow_try_next


def _row_mode(
    quotas: KueueQuotas,
    usage: Sequence[Sequence[int]],
    q: int,
    row: int,
    amount: int,
    simulate: Simulate,
) -> Mode:
    # fitsResourceQuota for one flavor-resource.
    subtree = quotas.subtree_quota()
    if amount > potential_available(quotas, subtree, q, row):
        return Mode(NO_FIT, 0)
    borrow = borrow_height(quotas, usage, q, row, amount)
    if amount <= available(quotas, usage, q, row):
        return Mode(FIT, borrow)
    one = [0] * quotas.rows
    one[row] = amount
    if needs_preemption(quotas, usage, q, one):
        return simulate(row, amount)
    return Mode(NO_FIT, borrow)


def assign_with_modes(
    quotas: KueueQuotas,
    usage: Sequence[Sequence[int]],
    q: int,
    request: Sequence[int],
    simulate: Simulate,
) -> tuple[tuple[int, ...] | None, int]:
    """The flavor slot per resource of ``request`` (:func:`gpureplay.queues.kueue_quota.request_of`) in
    ClusterQueue ``q``, and the assignment's representative mode: :data:`FIT`, :data:`PREEMPT` (preemption
    may admit it, targets or not) or :data:`NO_FIT` (flavors None).

    ``simulate(row, amount)`` is ``SimulatePreemption`` on the current ``usage`` (``[row][cluster queue]``).
    """
    chosen = [0] * len(RESOURCES)
    borrow_next = bool(quotas.try_next_flavor[q]) if quotas.try_next_flavor else False
    preempt_next = bool(quotas.try_next_on_preempt[q]) if quotas.try_next_on_preempt else True
    over = bool(quotas.preemption_over_borrowing[q]) if quotas.preemption_over_borrowing else False
    representative = FIT
    for resources, slots in quotas.flavor_groups(q):
        asked = [r for r in resources if request[r] > 0]
        if not asked:
            continue
        best, best_mode = -1, WORST
        for f in slots:
            mode = Mode(FIT, 0)
            for r in asked:
                found = _row_mode(quotas, usage, q, f * len(RESOURCES) + r, request[r], simulate)
                if preferred(mode, found, over):
                    mode = found  # the flavor is as good as its worst resource
                if mode.preemption == NO_FIT:
                    break
            if not tries_next(mode, borrow_next, preempt_next):
                best, best_mode = f, mode
                break
            if preferred(mode, best_mode, over):
                best, best_mode = f, mode
        if best < 0:
            return None, NO_FIT
        for r in asked:
            chosen[r] = best
        if best_mode.preemption != FIT:
            representative = PREEMPT
    return tuple(chosen), representative
