"""How many generated cases the property and differential tests draw, and whether they are the same each run.

CI replays fixed draws (``derandomize=True``, no example database): the same cases on every run, so a red
build is the change's doing. ``make soak`` sets ``GPUREPLAY_SOAK`` to a scale factor: every test then draws
``scale`` times its examples from a fresh random seed (pytest's ``--hypothesis-seed``, which the soak loop
picks and prints), the way a disagreement the fixed draws never reach is found.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings


def soak_scale() -> int:
    """``GPUREPLAY_SOAK`` as a whole number >= 1, or 0 when unset (fixed draws, as in CI)."""
    raw = os.environ.get("GPUREPLAY_SOAK", "").strip()
    if not raw:
        return 0
    try:
        scale = int(raw)
    except ValueError:
        raise ValueError(
            f"GPUREPLAY_SOAK must be a whole number of times the examples, got {raw!r}"
        ) from None
    if scale < 1:
        raise ValueError(f"GPUREPLAY_SOAK must be >= 1, got {scale}")
    return scale


SOAK = soak_scale()


def draws(max_examples: int, **extra: Any) -> settings:
    """Hypothesis settings for a test drawing ``max_examples`` cases (times the soak scale when soaking).

    Examples
    --------
    >>> draws(10).max_examples == 10 * max(1, SOAK)
    True
    """
    return settings(
        max_examples=max_examples * max(1, SOAK),
        derandomize=SOAK == 0,
        database=None,
        deadline=None,
        print_blob=SOAK > 0,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
        **extra,
    )
