"""splitmix64: the engine's only source of randomness.

The state lives in a ``uint64[2]`` array (state, number of draws) so a kernel
can advance it in place. Because splitmix64 advances its state by a constant
per draw, skipping ``k`` draws is one multiplication (:func:`rng_skip`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gpureplay.engine.config import kernel

GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)


@kernel
def rng_next(rng: npt.NDArray[np.uint64]) -> np.uint64:
    """Draw the next 64-bit value and advance the state.

    A random choice among ``count`` candidates is ``rng_next(rng) % count``
    (candidates in index order); the modulo bias is kept because the spec
    (and the reference simulator) draw exactly that way.

    Parameters
    ----------
    rng
        ``[state, draws]``; both are updated.

    Returns
    -------
    numpy.uint64
        The splitmix64 output.

    Notes
    -----
    Steele, Lea & Flood, "Fast splittable pseudorandom number generators"
    (OOPSLA 2014); constants of Vigna's reference ``splitmix64.c``. All
    arithmetic wraps modulo 2**64.
    """
    s = rng[0] + GAMMA
    rng[0] = s
    rng[1] += np.uint64(1)
    z = s
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    return np.uint64(z ^ (z >> np.uint64(31)))


@kernel
def rng_skip(rng: npt.NDArray[np.uint64], draws: int) -> None:
    """Advance the generator by ``draws`` draws without computing them.

    Notes
    -----
    splitmix64's state after ``k`` draws is ``state + k * GAMMA`` (mod 2**64),
    so a gang placement that is known to fail after placing ``k`` pods can
    consume exactly the draws the pod-by-pod attempt would have made.
    """
    rng[0] += GAMMA * np.uint64(draws)
    rng[1] += np.uint64(draws)
