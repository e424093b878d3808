"""The wait before trying again: exponential back-off with jitter, the one formula for all."""

from __future__ import annotations

import math
import random
import sys

#: The natural logarithm of the largest float: a power of the factor past it is too large to
#: hold (``OverflowError``), so the exponent is compared against it before the power is taken.
_LOG_MAX = math.log(sys.float_info.max)


def backoff_delay(
    retry: int, first: float, cap: float, *, factor: float = 2.0, jitter: float = 0.5
) -> float:
    """How long to wait before retry number ``retry`` (1 for the first), in ``first``'s unit.

    The wait is ``min(cap, first * factor ** (retry - 1))``, of which the ``jitter`` fraction
    is random, so that clients failing together do not come back together. Any retry number
    (the millionth, or one too large for a float) gives a wait of at most ``cap``: the cap is
    applied to the exponent before the power is taken. A ``factor`` of 1 or less waits
    ``first`` every time.
    """
    return _unjittered(max(retry - 1, 0), first, cap, factor) * (1 - jitter * random.random())


def _unjittered(exponent: int, first: float, cap: float, factor: float) -> float:
    if first <= 0 or first >= cap:
        return min(cap, first)
    if factor <= 1:  # a factor of 1 (at least 1, as Backoff checks) does not grow
        return first
    log_factor = math.log(factor)
    # Past this exponent first * factor ** exponent is beyond the cap (or beyond a float: a
    # cap more than 1e308 times first counts as reached there). An int compares with a
    # float exactly, so a retry number too large for a float is no error either.
    steps = min(math.log(cap) - math.log(first), _LOG_MAX) / log_factor
    if exponent >= steps:
        return cap
    return min(cap, first * factor**exponent)
