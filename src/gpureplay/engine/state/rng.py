"""A counter-based random generator: every draw is a pure function of its key.

A random decision of the engine is keyed by ``(seed, job, pod, attempt,
decision)``; the draw is a hash of that key. Nothing is consumed, so a failed
gang attempt, a cycle that is skipped or repeated, or a chunk boundary can
never shift later draws, and the engine and the reference simulator agree by
construction on every draw they both make.
"""

from __future__ import annotations

import numpy as np

from gpureplay.engine.jit.config import kernel

#: Decision codes: which choice of a pod's placement a draw is for.
DRAW_NODE = 0
DRAW_GPU = 1
DRAW_PREEMPT_OFFSET = 2
DRAW_NODE_ORDER = 3  # the replay's one random order of the nodes (job, pod and attempt 0)

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@kernel
def mix64(z: np.uint64) -> np.uint64:
    """SplitMix64's output function: a bijection of 64-bit words with full avalanche.

    Notes
    -----
    Steele, Lea & Flood, "Fast splittable pseudorandom number generators"
    (OOPSLA 2014); constants of Vigna's reference ``splitmix64.c``. All
    arithmetic wraps modulo 2**64.
    """
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@kernel
def tie_key(base: np.uint64, n: int) -> np.uint64:
    """Candidate ``n``'s key in a draw among tied candidates: the smallest key wins (uniformly).

    Parameters
    ----------
    base
        The decision's :func:`draw`.
    n
        The candidate (node index).

    Notes
    -----
    Element ``n + 1`` of the SplitMix64 stream started at ``base``: the keys
    of one decision are distinct and independent, so the candidate with the
    smallest is a uniform choice whatever the order they are met in.
    """
    return mix64(base + np.uint64(n + 1) * _GAMMA)


@kernel
def draw(seed: int, job: int, pod: int, attempt: int, decision: int) -> np.uint64:
    """The 64-bit draw of one decision.

    Parameters
    ----------
    seed
        The replay's seed (its low 63 bits).
    job
        Job id (``jobs.ints[J_ID, j]``).
    pod
        Pod index within the job.
    attempt
        Run attempt of the job (0 for the first; +1 after each eviction).
    decision
        ``DRAW_*`` code.

    Returns
    -------
    numpy.uint64
        A choice among ``count`` candidates is ``draw(...) % count`` (in
        candidate index order).

    Notes
    -----
    Counter-based generation in the sense of Salmon et al., "Parallel random
    numbers: as easy as 1, 2, 3" (SC'11): the key is absorbed one word at a
    time, each followed by SplitMix64's finalizer (:func:`mix64`), whose
    avalanche makes neighbouring keys independent.
    """
    h = mix64(np.uint64(seed) + _GAMMA)
    h = mix64(h ^ (np.uint64(job) + _GAMMA * np.uint64(2)))
    h = mix64(h ^ (np.uint64(pod) + _GAMMA * np.uint64(3)))
    h = mix64(h ^ (np.uint64(attempt) + _GAMMA * np.uint64(4)))
    return mix64(h ^ (np.uint64(decision) + _GAMMA * np.uint64(5)))
