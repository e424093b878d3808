"""Cron schedules by name: their options and definition checked at the door, pausing,
upcoming runs and the listing (the App's cron calls, :mod:`.calls`, are made of these)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Unpack

from duetime.clock import from_ms
from duetime.errors import ScheduleNotFound, ValidationError
from duetime.features.cron.named import Declared, NamedTriggers, Stored
from duetime.features.cron.options import CRON_OPTIONS as CRON_OPTIONS
from duetime.features.cron.options import CronOptions as CronOptions
from duetime.record import Record
from duetime.triggers.cron.expression import parse_cron
from duetime.triggers.cron.policy import MISSED, MISSED_AFTER_MS, OVERLAP
from duetime.triggers.cron.trigger import CronTrigger
from duetime.validate import check_id, check_int, duration_ms, encode_payload, to_ms


@dataclass(frozen=True, slots=True)
class CronInfo:
    """A cron schedule as :meth:`App.crons` shows it.

    Attributes:
        next_run: when the next tick is due (None while paused or not yet in the store).
        stored: False for a schedule declared in code that no worker has written yet.
        missed_count: ticks missed because no run could start in time (every worker was
            down past them, or a crashed run's lease held the schedule).
        skipped_count: ticks skipped because the previous run was still running.
        finished: past its ``end`` or its ``limit``: it runs no more, and stays listed
            until removed (declaring it again with a later end or a higher limit revives
            it).
        start, end: its bounds: no tick before the one, nor after the other.
        limit: the most runs it makes (done or dead); ``run_count``: runs so far (a run
            asked for by :meth:`~duetime.App.trigger_cron` is not one of them).
        grace: how late a tick may start and still run.
    """

    name: str
    task_type: str
    expression: str
    tz: str
    next_run: datetime | None
    paused: bool
    missed: str
    overlap: str
    missed_count: int
    skipped_count: int
    payload: dict[str, Any]
    stored: bool = True
    finished: bool = False
    start: datetime | None = None
    end: datetime | None = None
    limit: int | None = None
    run_count: int = 0
    grace: timedelta = timedelta(milliseconds=MISSED_AFTER_MS)


def define(
    name: str,
    task_type: str,
    expression: str,
    *,
    max_payload_bytes: int,
    **options: Unpack[CronOptions],
) -> Declared:
    """Check a schedule's definition; raises ValidationError naming the bad field."""
    check_id(name, "name")
    unknown = sorted(set(options) - CRON_OPTIONS)
    if unknown:
        raise ValidationError(unknown[0], "is not an option of a cron schedule")
    tz = options.get("tz", "UTC")
    missed = options.get("missed", "skip")
    overlap = options.get("overlap", "skip")
    jitter, catchup = options.get("jitter"), options.get("catchup")
    expr = parse_cron(expression, tz)
    if missed not in MISSED:
        raise ValidationError("missed", f"must be one of {', '.join(MISSED)}")
    if overlap not in OVERLAP:
        raise ValidationError("overlap", f"must be one of {', '.join(OVERLAP)}")
    jitter_ms = 0 if jitter is None else duration_ms("jitter", jitter, allow_zero=True)
    period = expr.shortest_period_ms(int(datetime.now().timestamp() * 1000))
    if jitter_ms >= period:
        raise ValidationError(
            "jitter", f"{jitter_ms} ms is not shorter than the schedule's period ({period} ms)"
        )
    catchup_ms = None if catchup is None else duration_ms("catchup", catchup)
    trigger = _bounded(CronTrigger(expr, missed, overlap, jitter_ms, catchup_ms), options)
    payload_json = encode_payload(options.get("payload"), max_payload_bytes)
    immediately = options.get("immediately", False)
    if not isinstance(immediately, bool):
        raise ValidationError("immediately", "must be True or False")
    return Declared(name, task_type, trigger, payload_json, immediately)


def _bounded(trigger: CronTrigger, options: CronOptions) -> CronTrigger:
    """``trigger`` with the bounds and grace ``options`` give, checked."""
    start, end = options.get("start"), options.get("end")
    limit, grace = options.get("limit"), options.get("grace")
    start_ms = None if start is None else to_ms("start", start)
    end_ms = None if end is None else to_ms("end", end)
    if start_ms is not None and end_ms is not None and end_ms < start_ms:
        raise ValidationError("end", "is before start")
    if limit is not None:
        check_int("limit", limit)
    grace_ms = MISSED_AFTER_MS if grace is None else duration_ms("grace", grace)
    return replace(trigger, start_ms=start_ms, end_ms=end_ms, limit=limit, grace_ms=grace_ms)


async def _cron(named: NamedTriggers, name: str) -> tuple[Stored, CronTrigger]:
    stored = await named.stored(name)
    if not isinstance(stored.trigger, CronTrigger):
        raise ScheduleNotFound(name)
    return stored, stored.trigger


async def set_paused(named: NamedTriggers, name: str, paused: bool) -> None:
    """Pause or resume the schedule ``name``; a resumed one goes on from its next tick."""
    stored, trigger = await _cron(named, name)
    if trigger.paused != paused:
        await named.rewrite(stored, replace(trigger, paused=paused))


async def next_runs(named: NamedTriggers, name: str, count: int, now_ms: int) -> list[datetime]:
    """The next ``count`` ticks of the schedule ``name``, in its time zone."""
    if not isinstance(count, int) or count < 1:
        raise ValidationError("count", "must be an integer of 1 or more")
    try:
        stored, trigger = await _cron(named, name)
    except ScheduleNotFound:
        declared = named.declared.get(name)
        if declared is None or not isinstance(declared.trigger, CronTrigger):
            raise
        # As the first worker will write it.
        first = declared.trigger.start(declared.payload_json, now_ms, declared.immediately)
        assert isinstance(first.trigger, CronTrigger) and first.occurrence_ms is not None
        trigger = first.trigger
        ticks = trigger.upcoming(first.occurrence_ms, now_ms, count, running=False)
    else:
        pending = stored.record.occurrence_ms
        running = stored.task.state != "due" or pending is None
        ticks = trigger.upcoming(pending or now_ms, now_ms, count, running=running)
    return [from_ms(t).astimezone(trigger.expr.tz) for t in ticks]


async def trigger_now(named: NamedTriggers, name: str, now_ms: int) -> str:
    """One extra run of the schedule ``name`` now, as a task of its own (its ticks stay as
    they are); returns its id, ``"<name>@<now ms>"``."""
    await _cron_known(named, name)
    return await named.hand_off(name, now_ms, now_ms)


async def _cron_known(named: NamedTriggers, name: str) -> None:
    """Refuse a name that is not a cron schedule's, stored or declared."""
    try:
        await _cron(named, name)
    except ScheduleNotFound:
        declared = named.declared.get(name)
        if declared is None or not isinstance(declared.trigger, CronTrigger):
            raise


async def infos(named: NamedTriggers) -> list[CronInfo]:
    """Every cron schedule: those in the store, then those only declared in code."""
    out = []
    names = await named.names()
    for stored in await named.all_stored():
        if isinstance(stored.trigger, CronTrigger):
            tick = stored.record.occurrence_ms
            waits = not (stored.trigger.paused or stored.trigger.finished)
            next_run = None if not waits or tick is None else from_ms(tick)
            info = _info(stored.name, stored.task_type, stored.trigger, stored.record, next_run)
            out.append(info)
    for name, declared in sorted(named.declared.items()):
        if name not in names and isinstance(declared.trigger, CronTrigger):
            record = Record(declared.payload_json)
            out.append(_info(name, declared.task_type, declared.trigger, record, None, False))
    return out


def _info(
    name: str,
    task_type: str,
    trigger: CronTrigger,
    record: Record,
    next_run: datetime | None,
    stored: bool = True,
) -> CronInfo:
    return CronInfo(
        name,
        task_type,
        trigger.expr.text,
        trigger.expr.tz.key,
        None if next_run is None else next_run.astimezone(trigger.expr.tz),
        trigger.paused,
        trigger.missed,
        trigger.overlap,
        trigger.missed_count,
        trigger.skipped_count,
        record.payload,
        stored,
        trigger.finished,
        _moment(trigger.start_ms, trigger),
        _moment(trigger.end_ms, trigger),
        trigger.limit,
        trigger.run_count,
        timedelta(milliseconds=trigger.grace_ms),
    )


def _moment(ms: int | None, trigger: CronTrigger) -> datetime | None:
    return None if ms is None else from_ms(ms).astimezone(trigger.expr.tz)
