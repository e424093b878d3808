"""Rate: at most so many starts of a task type per period, across every worker, and the
strings (``"100/s"``) that name one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from duetime.clock import MS
from duetime.errors import ValidationError
from duetime.validate import check_int, duration_ms

#: The periods a rate string may name.
PERIODS = {"s": timedelta(seconds=1), "m": timedelta(minutes=1), "h": timedelta(hours=1)}
_RATE = re.compile(r"\s*(\d+)\s*/\s*([smh])\s*")
#: Why a string is not a rate (the field is the option's, ``rate``).
_FORMS = "must be 'N/s', 'N/m' or 'N/h' (N a whole number of 1 or more), or a duetime.Rate"


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``n`` starts of a task type per ``per``, across every worker of the store.

    The store keeps the limit as a GCRA (the generic cell rate algorithm, a token bucket
    kept as one time) by its own clock: starts are spaced ``per / n`` apart on average,
    and up to ``burst`` may start at once after a quiet spell.

    Args:
        n: starts per period (1 or more).
        per: the period (one second by default).
        burst: how many may start at once; ``n`` by default.

    Raises:
        ValidationError: a bad field, named (``rate``, ``rate.per``, ``rate.burst``).
    """

    n: int
    per: timedelta = timedelta(seconds=1)
    burst: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n < 1:
            raise ValidationError("rate", f"must allow 1 start or more per period, not {self.n!r}")
        if not isinstance(self.per, timedelta):
            raise ValidationError("rate.per", f"must be a timedelta, not {type(self.per).__name__}")
        duration_ms("rate.per", self.per)
        if self.burst is not None:
            check_int("rate.burst", self.burst)

    @property
    def interval_ms(self) -> float:
        """The time between two starts at the steady rate, in milliseconds."""
        return self.per / MS / self.n

    @property
    def bucket(self) -> int:
        """How many may start at once: ``burst``, or ``n``."""
        return self.n if self.burst is None else self.burst

    def __str__(self) -> str:
        for unit, period in PERIODS.items():
            if self.per == period:
                shown = f"{self.n}/{unit}"
                break
        else:
            shown = f"{self.n} per {self.per}"
        return shown if self.burst is None else f"{shown} (burst {self.burst})"


def as_rate(value: object, field: str = "rate") -> Rate | None:
    """``value`` as a Rate: one already, a string ``"N/s"``, ``"N/m"`` or ``"N/h"``, or None.

    Raises:
        ValidationError: anything else (naming ``field``: ``rate`` or ``group_rate``).
    """
    if value is None or isinstance(value, Rate):
        return value
    if isinstance(value, str):
        match = _RATE.fullmatch(value)
        if match is None:
            raise ValidationError(field, f"{value!r} is not a rate: {_FORMS}")
        try:
            return Rate(int(match[1]), PERIODS[match[2]])
        except ValidationError as exc:  # a count of 0: named as the option that gave it
            raise ValidationError(field, exc.problem) from None
    raise ValidationError(field, f"{_FORMS}, not {type(value).__name__}")
