"""The wait before trying again: exponential back-off with jitter, the one formula for all."""

from __future__ import annotations

import random


def backoff_delay(
    retry: int, first: float, cap: float, *, factor: float = 2.0, jitter: float = 0.5
) -> float:
    """How long to wait before retry number ``retry`` (1 for the first), in ``first``'s unit.

    The wait is ``min(cap, first * factor ** (retry - 1))``, of which the ``jitter`` fraction
    is random, so that clients failing together do not come back together.
    """
    raw = min(cap, first * factor ** max(retry - 1, 0))
    return raw * (1 - jitter * random.random())
