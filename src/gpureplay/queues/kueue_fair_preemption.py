"""Kueue's preemption under fair sharing: which admitted workloads a pending one evicts.

Plain Python, the rule as Kueue states it (kubernetes-sigs/kueue ``pkg/scheduler/preemption``:
``preemption.go`` ``fairPreemptions``, ``fair_strategy.go``, ``fairsharing/ordering.go``,
``fairsharing/target.go``, ``fairsharing/strategy.go``; KEP-1714 rules S2-a and S2-b; reference §4.2), read
at the v0.20 feature-gate defaults: ``FairSharingPreemptWithinNominal`` on (beta since v0.17),
``FairSharingReevaluatePreemptionCandidates`` off (alpha). The engine's kernel
(:mod:`gpureplay.engine.kueue_preempt`) states it again on arrays; the differential tests compare the two.
Modelled for ClusterQueues without a cohort or in a root cohort without a quota of its own (there the
"almost least common ancestors" of two ClusterQueues are the queues themselves), with any number of
ResourceFlavors: usage and requests are per quota row (flavor and resource), shares sum a resource's
borrowing over its flavors (:func:`gpureplay.queues.kueue_quota.share`).

A workload ``W`` of ClusterQueue ``q`` that needs preemption (:func:`~gpureplay.queues.kueue_preemption.
needs_preemption`; under fair sharing ``reclaimWithinCohort`` also lets it preempt while borrowing) takes its
candidates (:func:`~gpureplay.queues.kueue_preemption.candidates_of`, in ``CandidatesOrdering``), adds its
request to ``q``'s usage, then:

1. **First strategy.** Repeatedly pick the target ClusterQueue: among the cohort's ClusterQueues with
   candidates left, not dropped, and borrowing (share > 0; ``q`` itself even at share 0), the highest share
   (``CompareDRS``: a zero-weight borrower above all others), ties to the one whose next candidate comes
   first. If it is ``q``, its next candidate is a target. Else, if ``q`` (with ``W``) is within its nominal
   quota on every resource that needs preemption, the next candidate is a target. Else, with
   ``P`` = share of ``q`` and ``T`` = share of the target queue: if ``q`` borrows at weight 0 and the target
   does not, all its candidates are set aside for the second strategy; otherwise its candidates are tried
   in order: the first that passes the strategy (``LessThanOrEqualToFinalShare``: ``P <=`` the target's
   share without that candidate; ``LessThanInitialShare``: ``P < T``) is a target and the queue is picked
   again; each that fails is set aside.
2. **Second strategy** (``LessThanInitialShare``, when both are configured): over the candidates set aside,
   pick target queues the same way; each is tried once: if ``P < T`` its first candidate is a target; the
   queue is then dropped.
3. After each target (removed from the usage), ``W`` is checked: it fits when its request is within
   ``available(q)`` on every covered resource (borrowing allowed). If it never fits, nothing is preempted.
   Else, from the next-to-last target back to the first, a target whose return still lets ``W`` fit is
   dropped (``fillBackWorkloads``).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpureplay.queues.kueue_preemption import (
    PRIORITY,
    SAME_QUEUE,
    Admitted,
    candidate_rank,
    candidates_of,
    minimised,
    needs_preemption,
    workload_fits,
)
from gpureplay.queues.kueue_quota import KueueQuotas, node_usage, share
from gpureplay.schedulers.policy import FairSharingStrategies

#: A share as Kueue compares them (``DRS``): (weighted, unweighted); weighted ``inf``: a zero-weight borrower.
Share = tuple[float, float]


def compare_shares(a: Share, b: Share) -> int:
    """Kueue's ``CompareDRS``: -1, 0 or 1; zero-weight borrowers above all, among themselves by ratio.

    Examples
    --------
    >>> compare_shares((250.0, 250.0), (float("inf"), 10.0))
    -1
    >>> compare_shares((float("inf"), 20.0), (float("inf"), 10.0))
    1
    """
    a_inf, b_inf = a[0] == float("inf"), b[0] == float("inf")
    if a_inf and b_inf:
        x, y = a[1], b[1]
    elif a_inf or b_inf:
        return 1 if a_inf else -1
    else:
        x, y = a[0], b[0]
    return (x > y) - (x < y)


class _Search:
    """One preemptor's search: the simulated usage (``W`` added to ``q``) and the targets so far."""

    def __init__(self, quotas: KueueQuotas, usage: Sequence[Sequence[int]], q: int, request: Sequence[int]):
        self.quotas = quotas
        self.q = q
        self.request = request
        self.left = [list(row) for row in usage]
        for r in range(quotas.rows):
            self.left[r][q] += request[r]
        self.targets: list[Admitted] = []

    def share(self, node: int) -> Share:
        found = share(self.quotas, node_usage(self.quotas, self.left), node)
        # DRS.IsZero: a node borrowing only what no one lends has ratio 0 and counts as not borrowing.
        return (0.0, 0.0) if found[1] == 0 else found

    def share_without(self, c: Admitted) -> Share:
        self._move(c, -1)
        found = self.share(c.cluster_queue)
        self._move(c, 1)
        return found

    def _move(self, c: Admitted, sign: int) -> None:
        for r in range(self.quotas.rows):
            self.left[r][c.cluster_queue] += sign * c.request[r]

    def take(self, c: Admitted) -> bool:
        """``c`` is a target; whether ``W`` now fits (``workloadFitsForFairSharing``)."""
        self._move(c, -1)
        self.targets.append(c)
        for r in range(self.quotas.rows):
            self.left[r][self.q] -= self.request[r]
        fits = workload_fits(self.quotas, self.left, self.q, self.request, True)
        for r in range(self.quotas.rows):
            self.left[r][self.q] += self.request[r]
        return fits

    def rank(self, c: Admitted) -> tuple[bool, int, int, float, int]:
        """``c``'s place in the candidate order (in a flat cohort, other ClusterQueues' form one group)."""
        return candidate_rank(c, SAME_QUEUE if c.cluster_queue == self.q else PRIORITY)

    def next_queue(self, by_queue: dict[int, list[Admitted]], dropped: set[int]) -> int | None:
        """``TargetClusterQueueOrdering.nextTarget`` over a flat cohort (None: every queue is dropped)."""
        best: int | None = None
        best_share: Share = (-1.0, -1.0)
        for cq in sorted(by_queue):
            if cq in dropped:
                continue
            found = self.share(cq)
            if (found[1] == 0 and cq != self.q) or not by_queue[cq]:
                dropped.add(cq)
                continue
            if best is None or compare_shares(found, best_share) > 0:
                best, best_share = cq, found
            elif compare_shares(found, best_share) == 0 and self.rank(by_queue[cq][0]) < self.rank(
                by_queue[best][0]
            ):
                best = cq
        return best


def _grouped(candidates: Sequence[Admitted], members: Sequence[int]) -> dict[int, list[Admitted]]:
    by_queue: dict[int, list[Admitted]] = {cq: [] for cq in members}
    for c in candidates:
        by_queue[c.cluster_queue].append(c)
    return by_queue


def _passes(strategy: FairSharingStrategies, preemptor: Share, target_old: Share, target_new: Share) -> bool:
    # fairsharing/strategy.go: S2-a LessThanOrEqualToFinalShare, S2-b LessThanInitialShare.
    if strategy is FairSharingStrategies.less_than_initial_share:
        return compare_shares(preemptor, target_old) < 0
    return compare_shares(preemptor, target_new) <= 0


def fair_preemption_targets(
    quotas: KueueQuotas,
    usage: Sequence[Sequence[int]],
    q: int,
    request: Sequence[int],
    priority: int,
    timestamp: float,
    admitted: Sequence[Admitted],
    strategies: FairSharingStrategies = FairSharingStrategies.both,
) -> list[Admitted]:
    """The workloads a pending workload of ClusterQueue ``q`` evicts under fair sharing (empty: none will do).

    Parameters as :func:`gpureplay.queues.kueue_preemption.preemption_targets`; ``strategies``: Kueue's
    ``fairSharing.preemptionStrategies``. The rule is this module's docstring.
    """
    need = needs_preemption(quotas, usage, q, request)
    if not need:
        return []
    candidates = [c for c, _ in candidates_of(quotas, usage, q, request, priority, timestamp, admitted, need)]
    if not candidates:
        return []
    cohort = int(quotas.parent[q])
    members = (
        [q]
        if cohort < 0
        else [c for c in range(quotas.num_cluster_queues) if int(quotas.parent[c]) == cohort]
    )
    search = _Search(quotas, usage, q, request)
    first = (
        FairSharingStrategies.less_than_initial_share
        if strategies is FairSharingStrategies.less_than_initial_share
        else FairSharingStrategies.less_than_or_equal_to_final_share
    )
    # FairSharingPreemptWithinNominal: q stays within nominal (W included) where it needs preemption.
    within_nominal = all(search.left[r][q] <= quotas.nominal[r, q] for r in need)
    by_queue = _grouped(candidates, members)
    dropped: set[int] = set()
    retry: list[Admitted] = []
    fits = False
    while not fits:
        cq = search.next_queue(by_queue, dropped)
        if cq is None:
            break
        if cq == q or within_nominal:
            fits = search.take(by_queue[cq].pop(0))
            continue
        preemptor, target_old = search.share(q), search.share(cq)
        if preemptor[0] == float("inf") and target_old[0] != float("inf"):
            retry += by_queue[cq]  # fsStrategyUnsatisfiable: no candidate here can pass
            by_queue[cq] = []
            continue
        while by_queue[cq]:
            c = by_queue[cq].pop(0)
            if _passes(first, preemptor, target_old, search.share_without(c)):
                fits = search.take(c)
                break
            retry.append(c)
    if not fits and strategies is FairSharingStrategies.both:
        # Each queue's set-aside candidates are still in candidate order (popped in it).
        by_queue = _grouped(retry, members)
        dropped = set()
        while not fits:
            cq = search.next_queue(by_queue, dropped)
            if cq is None:
                break
            passed = compare_shares(search.share(q), search.share(cq)) < 0
            c = by_queue[cq].pop(0)
            if passed:
                fits = search.take(c)
            dropped.add(cq)
    if not fits:
        return []
    for r in range(quotas.rows):
        search.left[r][q] -= request[r]
    return minimised(quotas, search.left, q, request, True, search.targets)


__all__ = ["compare_shares", "fair_preemption_targets"]
