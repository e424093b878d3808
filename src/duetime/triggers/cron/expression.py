"""Cron expressions in a time zone, stepped to ticks in epoch milliseconds.

Parsing and stepping are cronsim's (a maintained library that follows Debian cron through
daylight saving time); this module adds the ``@daily``-style aliases, ``?``, an optional
seconds field, error messages naming the bad field, and epoch milliseconds.

The daylight-saving contract, per wall-clock time:

- A time that does not exist (02:30 on a spring-forward day) runs once, at the moment of the
  jump (03:00 new time).
- A time that happens twice (01:30 on a fall-back day in New York, 02:30 in Madrid) runs
  once, at its first occurrence (summer time).
- Expressions that step through the hours (``0 * * * *``, ``*/30 * * * *``) run at every
  real instant that matches, so the repeated hour runs twice and the skipped one not at all.
"""

from __future__ import annotations

import functools
import zoneinfo
from dataclasses import dataclass
from datetime import datetime

from cronsim import CronSim, CronSimError

from duetime.clock import from_ms
from duetime.errors import ValidationError

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
#: How many upcoming ticks are looked at to find a schedule's shortest period.
_PERIOD_SAMPLE = 50
#: Counting ticks stops here; a gap longer than this many ticks is estimated.
_COUNT_CAP = 10_000


@dataclass(frozen=True, slots=True)
class CronExpr:
    """A parsed cron expression in a time zone."""

    text: str
    tz: zoneinfo.ZoneInfo

    def _iter(self, after_ms: int) -> CronSim:
        return CronSim(self.text, from_ms(after_ms).astimezone(self.tz))

    def next_after(self, after_ms: int) -> int:
        """The first tick strictly after ``after_ms``, in epoch ms."""
        return _next_after(self, after_ms)

    def ticks(self, after_ms: int, count: int) -> list[int]:
        """The ``count`` ticks after ``after_ms``."""
        steps = self._iter(after_ms)
        return [_ms(next(steps)) for _ in range(count)]

    def ticks_until(self, after_ms: int, until_ms: int, limit: int) -> list[int]:
        """The ticks after ``after_ms`` up to ``until_ms`` inclusive, oldest first: the last
        ``limit`` of them if there are more. Walks back from ``until_ms``, so a long gap
        costs no more than ``limit`` steps."""
        newest_first: list[int] = []
        start = from_ms(until_ms + 1).astimezone(self.tz)
        for moment in CronSim(self.text, start, reverse=True):
            tick = _ms(moment)
            if tick <= after_ms or len(newest_first) == limit:
                break
            newest_first.append(tick)
        return newest_first[::-1]

    def shortest_period_ms(self, after_ms: int) -> int:
        """The shortest gap between two of the next ticks."""
        ticks = self.ticks(after_ms, _PERIOD_SAMPLE)
        return min(b - a for a, b in zip(ticks, ticks[1:], strict=False))

    def count_between(self, after_ms: int, until_ms: int) -> int:
        """How many ticks lie in (after, until]; estimated from the period past _COUNT_CAP."""
        count = 0
        for moment in self._iter(after_ms):
            if _ms(moment) > until_ms:
                return count
            count += 1
            if count >= _COUNT_CAP:
                return max(count, (until_ms - after_ms) // self.shortest_period_ms(after_ms))
        return count  # pragma: no cover - cron iterators never end


@functools.lru_cache(maxsize=16384)
def _next_after(expr: CronExpr, after_ms: int) -> int:
    # Cached: planning a tick and moving on after it ask for the same next tick.
    return _ms(next(expr._iter(after_ms)))


def _ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def parse_cron(expression: object, tz: object = "UTC") -> CronExpr:
    """Parse a cron expression (5 fields, or 6 with seconds first, or an alias) in a zone.

    Raises:
        ValidationError: naming the bad field (``cron`` or ``tz``) and what is wrong.
    """
    if isinstance(expression, str) and isinstance(tz, str):
        return _parse_cached(expression, tz)  # a worker parses each schedule at every tick
    return _parse(expression, tz)


@functools.lru_cache(maxsize=4096)
def _parse_cached(expression: str, tz: str) -> CronExpr:
    return _parse(expression, tz)


def _parse(expression: object, tz: object) -> CronExpr:
    if not isinstance(expression, str) or not expression.strip():
        raise ValidationError("cron", "must be a non-empty string such as '0 9 * * 1-5'")
    if not isinstance(tz, str) or not tz:
        raise ValidationError("tz", "must be an IANA time zone name such as 'Europe/Madrid'")
    try:
        zone = zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValidationError("tz", f"unknown time zone {tz!r}") from None
    text = " ".join(expression.split())
    text = ALIASES.get(text.lower(), text).replace("?", "*")
    fields = text.split(" ")
    if len(fields) not in (5, 6):
        raise ValidationError(
            "cron",
            f"{expression!r} has {len(fields)} fields: expected 5 (minute hour day-of-month "
            "month day-of-week), 6 with seconds first, or an alias such as @daily",
        )
    names = ("second", *_FIELDS) if len(fields) == 6 else _FIELDS
    try:
        CronSim(text, datetime.now(zone))
    except CronSimError as exc:
        raise ValidationError("cron", _explain(expression, exc, names, fields)) from None
    return CronExpr(text, zone)


def _explain(expression: str, exc: CronSimError, names: tuple[str, ...], fields: list[str]) -> str:
    message = str(exc)
    for name, value in zip(names, fields, strict=True):
        if message.lower().endswith(name):
            return f"{expression!r}: the {name} field {value!r} is not valid"
    return f"{expression!r}: {message}"
