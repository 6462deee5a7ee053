"""Kueue's preemption under fair sharing: which admitted workloads a pending one evicts.

Plain Python, the rule as Kueue states it (kubernetes-sigs/kueue ``pkg/scheduler/preemption``:
``preemption.go`` ``fairPreemptions``, ``fair_strategy.go``, ``fairsharing/ordering.go``,
``fairsharing/target.go``, ``fairsharing/strategy.go``; KEP-1714 rules S2-a and S2-b; docs/systems.md,
"Kueue"), as
released in v0.17.0 to v0.19.2 at their feature-gate defaults: ``FairSharingPreemptWithinNominal`` on (beta
since v0.17.0; a ``FairSharingReevaluatePreemptionCandidates`` gate is in no release). The engine's kernel
(:mod:`gpureplay.engine.queues.kueue.preempt`) states it again on arrays; the differential tests compare the
two. Modelled in any cohort tree (nested cohorts, cohorts with quotas and weights of their own) and with any
number of ResourceFlavors: usage and requests are per quota row (flavor and resource), shares sum a resource's
borrowing over its flavors (:func:`gpureplay.queues.kueue_quota.share`); a cohort's usage is what its children
use beyond their local quotas.

A workload ``W`` of ClusterQueue ``q`` that needs preemption (:func:`~gpureplay.queues.kueue_preemption.
needs_preemption`; under fair sharing ``reclaimWithinCohort`` also lets it preempt while borrowing) takes its
candidates (:func:`~gpureplay.queues.kueue_preemption.candidates_of` with ``fair``: ``q``'s own as
``withinClusterQueue`` allows, and those ``reclaimWithinCohort`` allows of every ClusterQueue of ``q``'s
cohort tree that borrows on a resource that needs preemption; in ``CandidatesOrdering``), adds its request to
``q``'s usage, then:

1. **First strategy.** Repeatedly pick the target ClusterQueue (``TargetClusterQueueOrdering``, walked from
   the root of ``q``'s tree: :meth:`_Search.next_queue`): at each cohort, the child with the highest share
   (``CompareDRS``: a zero-weight borrower above all others) among those not dropped; a ClusterQueue with no
   candidate left or not borrowing (share 0; ``q`` itself only once out of candidates) and a cohort not
   borrowing that is not above ``q`` are dropped, and so is a cohort left with no child; ties between
   ClusterQueues go to the one whose next candidate comes first, between cohorts to the later, and between
   the best cohort and the best ClusterQueue to the cohort, which is entered. If the target is ``q``, its next
   candidate is a target. Else, if ``q`` (with ``W``) is within its nominal quota on every resource that
   needs preemption, the next candidate is a target. Else the shares compared are those of the *almost
   lowest common ancestors* (``getAlmostLCAs``: the children of the lowest cohort above both queues on
   their paths; in a flat cohort the queues themselves): ``P`` = share of ``q``'s, ``T`` = share of the
   target's. If ``P`` is a zero-weight borrower's and ``T`` is not, all the target queue's candidates are set
   aside for the second strategy; otherwise its candidates are tried in order: the first that passes the
   strategy (``LessThanOrEqualToFinalShare``: ``P <=`` the target's almost-LCA share without that candidate;
   ``LessThanInitialShare``: ``P < T``) is a target and the walk starts again; each that fails is set aside.
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
    TopologyFit,
    ancestors,
    candidate_rank,
    candidates_of,
    fits_with,
    lowest_common_ancestor,
    minimised,
    needs_preemption,
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

    def __init__(
        self,
        quotas: KueueQuotas,
        usage: Sequence[Sequence[int]],
        q: int,
        request: Sequence[int],
        topology: TopologyFit | None = None,
    ):
        self.quotas = quotas
        self.topology = topology
        self.q = q
        self.request = request
        self.left = [list(row) for row in usage]
        for r in range(quotas.rows):
            self.left[r][q] += request[r]
        self.targets: list[Admitted] = []
        self.ancestors = ancestors(quotas, q)

    def share(self, node: int) -> Share:
        found = share(self.quotas, node_usage(self.quotas, self.left), node)
        # DRS.IsZero: a node borrowing only what no one lends has ratio 0 and counts as not borrowing.
        return (0.0, 0.0) if found[1] == 0 else found

    def almost_lcas(self, cq: int) -> tuple[int, int]:
        """``getAlmostLCAs``: the children of the lowest cohort above ``q`` and ``cq`` on their paths."""
        lca = lowest_common_ancestor(self.quotas, self.q, cq)
        return _child_towards(self.quotas, self.q, lca), _child_towards(self.quotas, cq, lca)

    def share_without(self, c: Admitted, node: int) -> Share:
        """``node``'s share with ``c``'s usage removed (``ComputeTargetShareAfterRemoval``)."""
        self._move(c, -1)
        found = self.share(node)
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
        fits = fits_with(self.quotas, self.left, self.q, self.request, True, self.targets, self.topology)
        for r in range(self.quotas.rows):
            self.left[r][self.q] += self.request[r]
        return fits

    def rank(self, c: Admitted) -> tuple[bool, int, int, float, int]:
        """``c``'s place in ``CandidatesOrdering`` (other ClusterQueues' candidates form one group)."""
        return candidate_rank(c, SAME_QUEUE if c.cluster_queue == self.q else PRIORITY)

    def next_queue(self, by_queue: dict[int, list[Admitted]], dropped: set[int]) -> int | None:
        """``TargetClusterQueueOrdering`` (``nextTarget``, from the root of ``q``'s tree): the ClusterQueue
        whose candidates come next, None once the root is dropped. ``dropped`` holds pruned nodes.

        At a cohort: of its ClusterQueues not dropped, one with no candidate left or not borrowing (share 0;
        ``q`` itself only once out of candidates) is dropped, the others' highest share wins (ties: the one
        whose next candidate comes first); of its child cohorts not dropped, one not borrowing and not above
        ``q`` is dropped, the others' highest share wins (ties: the later). A cohort with neither is dropped
        and the walk starts again from the root; the cohort winner is entered when its share is at least the
        ClusterQueue winner's, else that ClusterQueue is the answer.
        """
        quotas, q = self.quotas, self.q
        if not self.ancestors:
            return q if by_queue.get(q) and q not in dropped else None
        root = self.ancestors[-1]
        num_cq = quotas.num_cluster_queues
        while root not in dropped:
            node = root
            while True:
                best_cq: int | None = None
                best_cq_share: Share = (-1.0, -1.0)
                best_cohort: int | None = None
                best_cohort_share: Share = (-1.0, -1.0)
                for child in range(len(quotas.names)):
                    if int(quotas.parent[child]) != node or child in dropped:
                        continue
                    found = self.share(child)
                    if child < num_cq:
                        if (found[1] == 0 and child != q) or not by_queue.get(child):
                            dropped.add(child)
                        elif best_cq is None or compare_shares(found, best_cq_share) > 0:
                            best_cq, best_cq_share = child, found
                        elif compare_shares(found, best_cq_share) == 0 and self.rank(
                            by_queue[child][0]
                        ) < self.rank(by_queue[best_cq][0]):
                            best_cq = child
                    elif found[1] == 0 and child not in self.ancestors:
                        dropped.add(child)
                    elif best_cohort is None or compare_shares(found, best_cohort_share) >= 0:
                        best_cohort, best_cohort_share = child, found
                if best_cq is None and best_cohort is None:
                    dropped.add(node)
                    break
                if best_cohort is not None and (
                    best_cq is None or compare_shares(best_cohort_share, best_cq_share) >= 0
                ):
                    node = best_cohort
                    continue
                return best_cq
        return None


def _child_towards(quotas: KueueQuotas, node: int, lca: int) -> int:
    # getAlmostLCA: the node on the path from node up to lca whose parent is lca.
    while int(quotas.parent[node]) != lca:
        node = int(quotas.parent[node])
    return node


def _grouped(candidates: Sequence[Admitted]) -> dict[int, list[Admitted]]:
    by_queue: dict[int, list[Admitted]] = {}
    for c in candidates:
        by_queue.setdefault(c.cluster_queue, []).append(c)
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
    topology: TopologyFit | None = None,
) -> list[Admitted]:
    """The workloads a pending workload of ClusterQueue ``q`` evicts under fair sharing (empty: none will do).

    Parameters as :func:`gpureplay.queues.kueue_preemption.preemption_targets`; ``strategies``: Kueue's
    ``fairSharing.preemptionStrategies``; ``topology``: under Kueue TAS, whether the topology assignment is
    found with the given targets removed (``workloadFitsForFairSharing`` calls ``workloadFits``, which checks
    it). The rule is this module's docstring.
    """
    need = needs_preemption(quotas, usage, q, request, topology is not None)
    if not need:
        return []
    candidates = [
        c for c, _ in candidates_of(quotas, usage, q, request, priority, timestamp, admitted, need, fair=True)
    ]
    if not candidates:
        return []
    search = _Search(quotas, usage, q, request, topology)
    first = (
        FairSharingStrategies.less_than_initial_share
        if strategies is FairSharingStrategies.less_than_initial_share
        else FairSharingStrategies.less_than_or_equal_to_final_share
    )
    # FairSharingPreemptWithinNominal: q stays within nominal (W included) where it needs preemption.
    within_nominal = all(search.left[r][q] <= quotas.nominal[r, q] for r in need)
    by_queue = _grouped(candidates)
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
        mine, theirs = search.almost_lcas(cq)
        preemptor, target_old = search.share(mine), search.share(theirs)
        if preemptor[0] == float("inf") and target_old[0] != float("inf"):
            retry += by_queue[cq]  # fsStrategyUnsatisfiable: no candidate here can pass
            by_queue[cq] = []
            continue
        while by_queue[cq]:
            c = by_queue[cq].pop(0)
            if _passes(first, preemptor, target_old, search.share_without(c, theirs)):
                fits = search.take(c)
                break
            retry.append(c)
    if not fits and strategies is FairSharingStrategies.both:
        # Each queue's set-aside candidates are still in candidate order (popped in it).
        by_queue = _grouped(retry)
        dropped = set()
        while not fits:
            cq = search.next_queue(by_queue, dropped)
            if cq is None:
                break
            mine, theirs = search.almost_lcas(cq)
            passed = compare_shares(search.share(mine), search.share(theirs)) < 0
            c = by_queue[cq].pop(0)
            if passed:
                fits = search.take(c)
            dropped.add(cq)
    if not fits:
        return []
    for r in range(quotas.rows):
        search.left[r][q] -= request[r]
    return minimised(quotas, search.left, q, request, True, search.targets, topology)


__all__ = ["compare_shares", "fair_preemption_targets"]
