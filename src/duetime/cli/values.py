"""The values ``duetime`` options take that click's own types do not check: numbers of
seconds, refused when they are not finite or too large, so that a bad option exits 2
naming it before anything is read or written."""

from __future__ import annotations

import math
from typing import Any

import click

#: The longest span an option may give: 10,000 years, in seconds. Any longer one reaches
#: past the year 9999, the last time duetime keeps, so the App would refuse it anyway;
#: checked here because some (1e300) do not even fit a timedelta.
MAX_SECONDS = 10_000 * 365.25 * 86_400
#: The most items an option may ask a store for: its counts are 64-bit integers.
MAX_COUNT = 2**63 - 1
#: The most run times ``cron --next`` computes: each takes about 10 µs, so a count in the
#: billions would keep the command busy for hours, printing more than anyone reads.
MAX_NEXT_RUNS = 1000


class Seconds(click.types.FloatParamType):
    """A finite number of seconds, at most :data:`MAX_SECONDS` either way.

    Args:
        minimum: the smallest value taken (None: the App checks the sign).
    """

    name = "seconds"

    def __init__(self, minimum: float | None = None) -> None:
        self.minimum = minimum

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r}: must be a finite number of seconds", param, ctx)
        if abs(seconds) > MAX_SECONDS:
            limit = f"must be at most {MAX_SECONDS:.0f} seconds (10,000 years)"
            self.fail(f"{value!r}: {limit}", param, ctx)
        if self.minimum is not None and seconds < self.minimum:
            self.fail(f"{value!r}: must be {self.minimum:g} or more", param, ctx)
        return seconds
