"""Cron expressions and time zones to ticks, and the missed-tick and overlap policies.

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
import random
import zoneinfo
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from cronsim import CronSim, CronSimError

from duetime.codec import encode_record, from_ms
from duetime.errors import ValidationError

Missed = Literal["skip", "once", "all"]
Overlap = Literal["skip", "allow"]
MISSED: tuple[Missed, ...] = ("skip", "once", "all")
OVERLAP: tuple[Overlap, ...] = ("skip", "allow")

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
#: A tick is late, not missed, when it starts within this long of its time (or before the
#: next tick, if that comes sooner).
MISSED_AFTER_MS = 60_000
#: With missed="all", at most this many missed ticks are caught up; older ones are skipped.
MAX_CATCHUP = 100
#: How many upcoming ticks are looked at to find a schedule's shortest period.
_PERIOD_SAMPLE = 50


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


def missed_ticks_ms(tick_ms: int, next_ms: int) -> int:
    """When the tick at ``tick_ms`` counts as missed (its successor is at ``next_ms``)."""
    return tick_ms + min(MISSED_AFTER_MS, next_ms - tick_ms)


@dataclass(frozen=True, slots=True)
class CronSpec:
    """A cron schedule's definition and counters, as its stored record keeps them.

    Attributes:
        jitter_ms: each tick is due up to this much after its time, at random (its
            occurrence id keeps the tick's own time).
        catchup_ms: missed ticks older than this are not caught up (None: no limit).
        missed_count: ticks missed so far (every worker was down past them).
        skipped_count: ticks skipped so far because the previous run was still running.
    """

    expr: CronExpr
    missed: Missed = "skip"
    overlap: Overlap = "skip"
    jitter_ms: int = 0
    catchup_ms: int | None = None
    paused: bool = False
    missed_count: int = 0
    skipped_count: int = 0

    def definition(self) -> tuple[object, ...]:
        """What the user declared: two specs with the same definition are the same schedule."""
        return (
            self.expr.text,
            self.expr.tz.key,
            self.missed,
            self.overlap,
            self.jitter_ms,
            self.catchup_ms,
        )

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"x": self.expr.text, "z": self.expr.tz.key}
        optional = {
            "m": (self.missed, "skip"),
            "v": (self.overlap, "skip"),
            "j": (self.jitter_ms, 0),
            "w": (self.catchup_ms, None),
            "q": (self.paused, False),
            "nm": (self.missed_count, 0),
            "ns": (self.skipped_count, 0),
        }
        for key, (value, default) in optional.items():
            if value != default:
                doc[key] = value
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> CronSpec:
        """Raises ValidationError when the stored definition cannot be used."""
        missed, overlap = doc.get("m", "skip"), doc.get("v", "skip")
        if missed not in MISSED or overlap not in OVERLAP:
            raise ValidationError("cron", f"unknown policy {missed!r} or {overlap!r}")
        jitter, missed_count, skipped_count = (_int(doc, key) for key in ("j", "nm", "ns"))
        catchup = None if doc.get("w") is None else _int(doc, "w")
        return cls(
            parse_cron(doc.get("x"), doc.get("z")),
            missed,
            overlap,
            jitter,
            catchup,
            bool(doc.get("q", False)),
            missed_count,
            skipped_count,
        )


def _int(doc: dict[str, object], key: str) -> int:
    value = doc.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValidationError("cron", f"stored field {key!r} is not an integer")
    return value


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do with a schedule claimed for a tick.

    Attributes:
        run_ms: the tick to run now, or None to run nothing.
        missed: the ticks given up, oldest first (the first MAX_CATCHUP of them).
        missed_total: how many ticks were given up in all.
        next_ms: with nothing to run, the tick to wait for next.
    """

    run_ms: int | None
    missed: list[int]
    missed_total: int
    next_ms: int


def _late(expr: CronExpr, tick_ms: int, now_ms: int) -> bool:
    return now_ms > missed_ticks_ms(tick_ms, expr.next_after(tick_ms))


def plan_claim(spec: CronSpec, tick_ms: int, now_ms: int) -> Plan:
    """Decide which tick runs when the schedule, waiting for ``tick_ms``, is claimed at ``now_ms``.

    Every tick from ``tick_ms`` up to now is a candidate. A tick is missed when it starts
    more than a minute after its time (or after the next tick, if that is sooner).
    ``skip`` runs the latest tick only if it is not missed; ``once`` runs the latest tick
    as one catch-up for all of them; ``all`` runs every candidate in turn, oldest first, at
    most MAX_CATCHUP of them. The catch-up window drops candidates older than it.
    """
    expr = spec.expr
    following = expr.next_after(tick_ms)
    if now_ms < following and now_ms <= missed_ticks_ms(tick_ms, following):
        return Plan(tick_ms, [], 0, following)  # the common case: on time, nothing missed
    total = 1 + _count_between(expr, tick_ms, now_ms)
    ticks = ([tick_ms] + expr.ticks_until(tick_ms, now_ms, MAX_CATCHUP))[-(MAX_CATCHUP + 1) :]
    in_window = [t for t in ticks if spec.catchup_ms is None or now_ms - t <= spec.catchup_ms]
    run: int | None
    if spec.missed == "all":
        kept = in_window[-MAX_CATCHUP:]
        run = kept[0] if kept else None
        given_up = [t for t in ticks if run is None or t < run]  # later ones run in turn
    else:
        latest = ticks[-1]
        if spec.missed == "once":
            run = latest if latest in in_window else None
        else:
            run = None if _late(expr, latest, now_ms) else latest
        given_up = [t for t in ticks if t != run]
    missed_total = total - len(ticks) + len(given_up)
    return Plan(run, given_up, missed_total, expr.next_after(max(now_ms, tick_ms)))


#: Counting missed ticks stops here; a gap longer than this many ticks is estimated.
_COUNT_CAP = 10_000


def _count_between(expr: CronExpr, after_ms: int, until_ms: int) -> int:
    """How many ticks lie in (after, until]; estimated from the period past _COUNT_CAP."""
    count = 0
    for moment in expr._iter(after_ms):
        if _ms(moment) > until_ms:
            return count
        count += 1
        if count >= _COUNT_CAP:
            return max(count, (until_ms - after_ms) // expr.shortest_period_ms(after_ms))
    return count  # pragma: no cover - cron iterators never end


def after_run(spec: CronSpec, run_ms: int, started_ms: int, now_ms: int) -> tuple[int, int]:
    """The next tick to wait for after a run of ``run_ms`` that started at ``started_ms``,
    and how many ticks came due while it ran and are skipped (overlap="skip")."""
    expr = spec.expr
    following = expr.next_after(run_ms)
    if now_ms < following:
        return following, 0  # the common case: nothing came due during the run
    if spec.missed == "all" and following <= started_ms:
        return following, 0  # a backlog tick, due before this run began: caught up next
    skipped = _count_between(expr, max(run_ms, started_ms), now_ms)
    return expr.next_after(max(now_ms, run_ms)), skipped


def next_for_allow(spec: CronSpec, run_ms: int, now_ms: int) -> int:
    """With overlap="allow", the tick to wait for once ``run_ms`` has been handed off."""
    following = spec.expr.next_after(run_ms)
    if spec.missed == "all" and following <= now_ms:
        return following
    return spec.expr.next_after(max(now_ms, run_ms))


def waiting_for(spec: CronSpec, payload_json: str, tick_ms: int) -> tuple[int, str]:
    """A schedule waiting for the tick at ``tick_ms``: when it is due (the tick plus jitter,
    unless paused), and its record."""
    due = tick_ms + (random.randint(0, spec.jitter_ms) if spec.jitter_ms and not spec.paused else 0)
    return due, encode_record(payload_json, occurrence_ms=tick_ms, cron=spec.to_json())
