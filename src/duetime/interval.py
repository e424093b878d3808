"""Calendar intervals: a period counted in days, weeks, months or years of a time zone, and
the arithmetic of a series stepped by one from its first occurrence's wall-clock time.

A series every 7 days in Madrid keeps its 09:00 across daylight saving time, where a fixed
``timedelta(days=7)`` drifts an hour twice a year. Occurrence ``k`` of a series is the
anchor (the first occurrence's local wall-clock time) plus ``k`` steps, so month steps
never drift either: Jan 31, Feb 28 (29), Mar 31, Apr 30. A wall-clock time the zone skips
(spring forward) is due at the moment of the jump; one it repeats (fall back), at the first
of the two, as cron schedules do (:mod:`duetime.triggers.cron.expression`).
"""

from __future__ import annotations

import calendar
import functools
import zoneinfo
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from duetime.clock import MAX_MS, epoch_ms, from_ms
from duetime.errors import ValidationError

#: The most days and months a step may have: the span of the years 1 to 9999.
MAX_DAYS = (datetime.max - datetime.min).days
MAX_MONTHS = 9999 * 12 - 1
_UNITS = ("days", "weeks", "months", "years")


@dataclass(frozen=True, slots=True)
class CalendarInterval:
    """A period in calendar units of a time zone, for ``every`` of a periodic task.

    Each occurrence is the first occurrence's local wall-clock time in ``tz``, that many
    units later: ``CalendarInterval(days=7, tz="Europe/Madrid")`` keeps 09:00 in Madrid
    across daylight saving time. Month and year steps are counted from the first occurrence
    and clamped to the month's last day (Jan 31, Feb 28, Mar 31, Apr 30). A local time that
    does not exist (spring forward) is due at the moment of the jump; one that happens twice
    (fall back), once, at the first.

    Days and weeks add up, and so do months and years; a mix of the two kinds is refused,
    as it would mean nothing definite (a month is not a number of days).

    Attributes:
        days: days per step.
        weeks: weeks per step (7 days each).
        months: months per step.
        years: years per step (12 months each).
        tz: the IANA time zone the wall-clock time is kept in (default ``"UTC"``).

    Raises:
        ValidationError: a count that is not a whole number of 0 or more (naming it), a
            step of zero or a mix of days with months (``every``), an unknown zone (``tz``).
    """

    days: int = 0
    weeks: int = 0
    months: int = 0
    years: int = 0
    tz: str = "UTC"

    def __post_init__(self) -> None:
        for unit in _UNITS:
            value = getattr(self, unit)
            if type(value) is not int or value < 0:
                raise ValidationError(unit, f"must be a whole number of 0 or more, not {value!r}")
        step_days, step_months = self.step_days, self.step_months
        if step_days and step_months:
            raise ValidationError(
                "every",
                "mixes days or weeks with months or years, which means nothing definite: "
                "give one kind",
            )
        if not step_days and not step_months:
            raise ValidationError("every", "is zero: give days, weeks, months or years")
        if step_days > MAX_DAYS or step_months > MAX_MONTHS:
            raise ValidationError("every", "is longer than anything before the year 10000")
        zone(self.tz)

    @property
    def step_days(self) -> int:
        """Days per step (0 for a step in months)."""
        return self.days + 7 * self.weeks

    @property
    def step_months(self) -> int:
        """Months per step (0 for a step in days)."""
        return self.months + 12 * self.years

    def __str__(self) -> str:
        counts = [
            f"{value} {unit if value != 1 else unit[:-1]}"
            for unit in _UNITS
            if (value := getattr(self, unit))
        ]
        return f"{' '.join(counts)} in {self.tz}"

    def to_json(self) -> dict[str, Any]:
        """As a record stores it: the counts given (not zero) and the zone."""
        doc: dict[str, Any] = {
            unit[0]: getattr(self, unit) for unit in _UNITS if getattr(self, unit)
        }
        doc["z"] = self.tz
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> CalendarInterval:
        """Raises ValidationError when the stored interval cannot be used."""
        counts = {unit: doc.get(unit[0], 0) for unit in _UNITS}
        return cls(**counts, tz=doc.get("z"))  # type: ignore[arg-type]


def zone(tz: object) -> zoneinfo.ZoneInfo:
    """The time zone named ``tz``.

    Raises:
        ValidationError: not an IANA zone name (field ``tz``).
    """
    if not isinstance(tz, str) or not tz:
        raise ValidationError("tz", "must be an IANA time zone name such as 'Europe/Madrid'")
    return _zone(tz)


@functools.lru_cache(maxsize=256)
def _zone(tz: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValidationError("tz", f"unknown time zone {tz!r}") from None


def wall_clock(ms: int, tz: zoneinfo.ZoneInfo) -> datetime:
    """The local wall-clock time (naive) of the instant ``ms`` in ``tz``."""
    return from_ms(ms).astimezone(tz).replace(tzinfo=None)


def instant(wall: datetime, tz: zoneinfo.ZoneInfo) -> int:
    """The epoch ms at which the wall-clock time ``wall`` (naive) comes in ``tz``: the first
    of two when the zone repeats it; the moment of the jump when the zone skips it.

    Raises:
        OverflowError: the instant falls outside the years 1 to 9999.
    """
    first = epoch_ms(wall.replace(tzinfo=tz, fold=0))
    if wall_clock(first, tz) == wall:
        return first  # it exists; fold=0 is the earlier of two
    # In a gap, fold=1 reads the wall time with the offset after the jump (an instant
    # before the jump), fold=0 with the offset before it (after the jump). The jump is the
    # first instant between the two whose wall-clock time is not before ``wall``.
    low, high = epoch_ms(wall.replace(tzinfo=tz, fold=1)), first
    while low < high:
        middle = (low + high) // 2
        if wall_clock(middle, tz) >= wall:
            high = middle
        else:
            low = middle + 1
    return high


@dataclass(frozen=True, slots=True)
class CalendarSeries:
    """A series stepped by a :class:`CalendarInterval` from its anchor, the wall-clock time
    (naive, in the interval's zone) of its first occurrence: occurrence ``k`` is the anchor
    plus ``k`` steps."""

    interval: CalendarInterval
    anchor: datetime

    @classmethod
    def starting(cls, interval: CalendarInterval, first_ms: int) -> CalendarSeries:
        """The series whose first occurrence is due at ``first_ms``."""
        return cls(interval, wall_clock(first_ms, zone(interval.tz)))

    def occurrence(self, k: int) -> int | None:
        """When occurrence ``k`` (0 or more) is due; None past the year 9999."""
        anchor, interval = self.anchor, self.interval
        try:
            if interval.step_days:
                wall = anchor + timedelta(days=k * interval.step_days)
            else:
                month = anchor.year * 12 + anchor.month - 1 + k * interval.step_months
                year, month = divmod(month, 12)
                last = calendar.monthrange(year, month + 1)[1]
                wall = anchor.replace(year=year, month=month + 1, day=min(anchor.day, last))
            due = instant(wall, zone(interval.tz))
        except (OverflowError, ValueError):  # past the years a datetime can hold
            return None
        return due if due <= MAX_MS else None

    def index(self, at_ms: int) -> int:
        """The last occurrence due by ``at_ms``: its number (-1 when none is)."""
        interval = self.interval
        wall = wall_clock(at_ms, zone(interval.tz))
        # A guess from the calendar, off by at most one either way (the time of day, a
        # clamped month end, an offset change), then corrected.
        if interval.step_days:
            k = (wall.date() - self.anchor.date()).days // interval.step_days
        else:
            months = (wall.year - self.anchor.year) * 12 + wall.month - self.anchor.month
            k = months // interval.step_months
        k = max(k, -1)
        while k >= 0 and _after(self.occurrence(k), at_ms):
            k -= 1
        while not _after(self.occurrence(k + 1), at_ms):
            k += 1
        return k

    def after(self, ms: int) -> int | None:
        """The first occurrence due strictly after ``ms``; None past the year 9999."""
        return self.occurrence(self.index(ms) + 1)

    def latest(self, occurrence_ms: int, by_ms: int) -> tuple[int, int]:
        """The last occurrence due by ``by_ms``, and how many steps it is past the one due
        at ``occurrence_ms`` (at least one occurrence after it must be due by ``by_ms``)."""
        k, latest = self.index(occurrence_ms), self.index(by_ms)
        due = self.occurrence(latest)
        assert due is not None and latest > k
        return due, latest - k

    def anchor_text(self) -> str:
        """The anchor as a record stores it: ISO 8601, without an offset."""
        timespec = "milliseconds" if self.anchor.microsecond else "seconds"
        return self.anchor.isoformat(timespec=timespec)


def _after(due: int | None, ms: int) -> bool:
    return due is None or due > ms
