"""The reference twin of ``gpureplay.engine.scoring``: one plain function per scorer name.

The engine names its scorers in ``gpureplay.engine.scoring.SCORERS``; the
policy refers to them by name (``node_placement``, ``gpu_placement``). Each
scorer here chooses one candidate, from the candidates that fit, written the
most obvious way; the spec's rules (``docs/engine-semantics.md``, Resources):

- ``first_fit``: the lowest index that fits;
- ``best_fit``: the smallest free GPU milli left on the node (GPU) after placing, ties lowest index;
- ``worst_fit``: the largest, ties lowest index;
- ``random``: candidate number ``draw % count`` in index order;
- ``balanced_allocation``: kube-scheduler's NodeResourcesBalancedAllocation,
  ``int((1 - std) * 100)`` of the used fractions, ties lowest index.

Adding a scorer means adding it to the engine's ``scoring.py`` and a function
plus its :data:`SCORERS` entry here (``tests/test_reference.py`` checks that
the two name lists agree).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "SCORERS",
    "Candidate",
    "Scorer",
    "balanced_allocation",
    "best_fit",
    "first_fit",
    "random",
    "worst_fit",
]


@dataclass(frozen=True)
class Candidate:
    """A node (or a GPU of a node) the pod fits.

    Attributes
    ----------
    index
        Node index (row of the nodes table), or GPU index within its node.
    free_after
        Free GPU milli left on the node (the GPU) if the pod went there.
    used_after
        Each resource in use on the candidate if the pod went there: for a
        node (GPU milli, CPU milli, memory MiB), for a GPU (milli, GPU memory
        MiB).
    capacity
        The candidate's capacity of the same resources (``inf``: not known,
        never limiting).
    """

    index: int
    free_after: int
    used_after: tuple[float, ...]
    capacity: tuple[float, ...]


#: A scorer: the candidates (index order, never empty) and a function giving the decision's
#: 64-bit draw (called only by scorers that need randomness) -> the chosen index.
Scorer = Callable[[Sequence[Candidate], Callable[[], int]], int]


def first_fit(candidates: Sequence[Candidate], draw: Callable[[], int]) -> int:
    """The lowest index that fits."""
    return candidates[0].index


def best_fit(candidates: Sequence[Candidate], draw: Callable[[], int]) -> int:
    """Least free milli left after placing (binpack); ties go to the lowest index."""
    return min(candidates, key=lambda c: (c.free_after, c.index)).index


def worst_fit(candidates: Sequence[Candidate], draw: Callable[[], int]) -> int:
    """Most free milli left after placing (spread); ties go to the lowest index."""
    return min(candidates, key=lambda c: (-c.free_after, c.index)).index


def random(candidates: Sequence[Candidate], draw: Callable[[], int]) -> int:
    """Candidate number ``draw % count``, candidates in index order."""
    return candidates[draw() % len(candidates)].index


def balanced_allocation(candidates: Sequence[Candidate], draw: Callable[[], int]) -> int:
    """kube-scheduler's NodeResourcesBalancedAllocation; ties go to the lowest index.

    The fraction of each resource in use after placing (capped at 1; a resource
    of capacity 0 or unknown left out); the score is ``int((1 - std) * 100)``
    with ``std`` the population standard deviation of the fractions
    (``|f0 - f1| / 2`` for two, 0 for fewer), as kube computes it.
    """

    def score(c: Candidate) -> int:
        pairs = zip(c.used_after, c.capacity, strict=True)
        fractions = [min(used / cap, 1.0) for used, cap in pairs if 0 < cap < math.inf]
        if len(fractions) < 2:
            std = 0.0
        elif len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)  # kube's shortcut for two resources
        else:
            mean = sum(fractions) / len(fractions)
            std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
        return int((1.0 - std) * 100.0)

    return min(candidates, key=lambda c: (-score(c), c.index)).index


#: Scorer functions by the name a policy uses.
SCORERS: dict[str, Scorer] = {
    "first_fit": first_fit,
    "best_fit": best_fit,
    "worst_fit": worst_fit,
    "random": random,
    "balanced_allocation": balanced_allocation,
}
