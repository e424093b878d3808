"""Cron schedules in the store: declared in code or added at run time, managed by name.

A schedule is a task of its target type whose id is the schedule's name and whose record
holds its definition (see :class:`duetime.cron.CronSpec`); it is due at its next tick. So it
survives restarts with the store, one worker at a time holds it (once per tick), and it
lives in its type's keys (one Redis Cluster slot). A namespace-wide index maps names to
types, so that names are unique and schedules can be found by name alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from duetime.codec import (
    check_id,
    decode_record,
    dump_json,
    duration_ms,
    encode_payload,
    encode_record,
    from_ms,
)
from duetime.cron import MISSED, OVERLAP, CronSpec, Missed, Overlap, parse_cron, waiting_for
from duetime.errors import ScheduleNotFound, SchemaError, ValidationError
from duetime.stores.base import NewTask, StoredTask

if TYPE_CHECKING:
    from duetime.app import App

#: A paused schedule is due at the end of 9999: never.
PAUSED_MS = 253_402_300_799_000


@dataclass(frozen=True, slots=True)
class Declared:
    """A cron schedule as code declares it."""

    name: str
    task_type: str
    spec: CronSpec
    payload_json: str


@dataclass(frozen=True, slots=True)
class CronInfo:
    """A cron schedule as :meth:`App.crons` shows it.

    Attributes:
        next_run: when the next tick is due (None while paused or not yet in the store).
        stored: False for a schedule declared in code that no worker has written yet.
        missed_count: ticks missed because every worker was down past them.
        skipped_count: ticks skipped because the previous run was still running.
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


def build_declared(
    name: str,
    task_type: str,
    expression: str,
    *,
    tz: str,
    payload: dict[str, Any] | None,
    missed: Missed,
    overlap: Overlap,
    jitter: timedelta | float | None,
    catchup: timedelta | float | None,
    max_payload_bytes: int,
) -> Declared:
    """Check a schedule's definition; raises ValidationError naming the bad field."""
    check_id(name, "name")
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
    spec = CronSpec(expr, missed, overlap, jitter_ms, catchup_ms)
    return Declared(name, task_type, spec, encode_payload(payload, max_payload_bytes))


class Schedules:
    """The cron schedules of one app: those its code declares, and those in its store."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.declared: dict[str, Declared] = {}

    def declare(self, declared: Declared) -> None:
        other = self.declared.get(declared.name)
        if other is not None and other.task_type != declared.task_type:
            raise ValidationError(
                "name", f"cron schedule {declared.name!r} already runs {other.task_type!r}"
            )
        self.declared[declared.name] = declared

    async def upsert(self, declared: Declared) -> bool:
        """Write a schedule unless the store holds it with the same definition and payload.

        Returns whether it was written. A changed schedule starts again from its next tick;
        its counters and paused state are kept.
        """
        store = await self.app.open()
        owner = await store.add_schedule_name(declared.name, declared.task_type)
        if owner != declared.task_type:
            raise ValidationError(
                "name", f"cron schedule {declared.name!r} belongs to task type {owner!r}"
            )
        stored = await store.get(declared.task_type, declared.name)
        spec = declared.spec
        old = _spec_of(stored)
        if old is not None and stored is not None and stored.record is not None:
            same_payload = dump_json(decode_record(stored.record).payload) == declared.payload_json
            if old.definition() == spec.definition() and same_payload:
                return False
            spec = replace(
                spec,
                paused=old.paused,
                missed_count=old.missed_count,
                skipped_count=old.skipped_count,
            )
        due, record = self._record(spec, declared.payload_json, await self.app.now_ms())
        # Never seen: write it only if no other process did meanwhile, so that a tick is
        # not written twice by workers starting together.
        await store.schedule(
            declared.task_type, [NewTask(declared.name, due, record)], only_new=stored is None
        )
        return True

    async def sync_declared(self) -> None:
        """Write every schedule the code declares (a worker does this as it starts)."""
        for declared in self.declared.values():
            await self.upsert(declared)

    def _record(self, spec: CronSpec, payload_json: str, now_ms: int) -> tuple[int, str]:
        tick = PAUSED_MS if spec.paused else spec.expr.next_after(now_ms)
        return waiting_for(spec, payload_json, tick)

    async def locate(self, name: str) -> tuple[str, StoredTask | None]:
        """The task type of the schedule ``name``, and its stored task (None if not stored)."""
        check_id(name, "name")
        store = await self.app.open()
        task_type = (await store.schedule_names()).get(name)
        if task_type is None:
            declared = self.declared.get(name)
            if declared is None:
                raise ScheduleNotFound(name)
            return declared.task_type, None
        return task_type, await store.get(task_type, name)

    async def set_paused(self, name: str, paused: bool) -> None:
        task_type, stored = await self.locate(name)
        spec = _spec_of(stored)
        if spec is None or stored is None or stored.record is None:
            raise ScheduleNotFound(name)
        if spec.paused == paused:
            return
        payload_json = dump_json(decode_record(stored.record).payload)
        due, record = self._record(
            replace(spec, paused=paused), payload_json, await self.app.now_ms()
        )
        store = await self.app.open()
        await store.schedule(task_type, [NewTask(name, due, record)])

    async def remove(self, name: str) -> bool:
        task_type, stored = await self.locate(name)
        store = await self.app.open()
        removed = await store.cancel(task_type, name)
        await store.remove_schedule_name(name)
        return removed

    async def next_runs(self, name: str, count: int) -> list[datetime]:
        if not isinstance(count, int) or count < 1:
            raise ValidationError("count", "must be an integer of 1 or more")
        task_type, stored = await self.locate(name)
        spec = _spec_of(stored)
        now = await self.app.now_ms()
        if spec is None:
            spec = self.declared[name].spec if name in self.declared else None
            if spec is None:
                raise ScheduleNotFound(name)
            ticks = spec.expr.ticks(now, count)
        elif spec.paused:
            return []
        else:
            assert stored is not None and stored.record is not None
            pending = decode_record(stored.record).occurrence_ms
            if stored.state == "due" and pending is not None:
                ticks = [pending, *spec.expr.ticks(pending, count - 1)]
            else:
                ticks = spec.expr.ticks(now, count)
        return [from_ms(t).astimezone(spec.expr.tz) for t in ticks]

    async def list(self) -> list[CronInfo]:
        store = await self.app.open()
        names = await store.schedule_names()
        out = []
        for name, task_type in sorted(names.items()):
            stored = await store.get(task_type, name)
            spec = _spec_of(stored)
            if spec is None or stored is None or stored.record is None:
                continue
            record = decode_record(stored.record)
            tick = record.occurrence_ms
            next_run = None if spec.paused or tick is None else from_ms(tick)
            out.append(_info(name, task_type, spec, record.payload, next_run, True))
        for name, declared in sorted(self.declared.items()):
            if name not in names:
                out.append(
                    _info(
                        name,
                        declared.task_type,
                        declared.spec,
                        decode_record(encode_record(declared.payload_json)).payload,
                        None,
                        False,
                    )
                )
        return out


def _spec_of(stored: StoredTask | None) -> CronSpec | None:
    if stored is None or stored.record is None:
        return None
    try:
        record = decode_record(stored.record)
        return None if record.cron is None else CronSpec.from_json(record.cron)
    except (SchemaError, ValidationError):
        return None


def _info(
    name: str,
    task_type: str,
    spec: CronSpec,
    payload: dict[str, Any],
    next_run: datetime | None,
    stored: bool,
) -> CronInfo:
    return CronInfo(
        name,
        task_type,
        spec.expr.text,
        spec.expr.tz.key,
        None if next_run is None else next_run.astimezone(spec.expr.tz),
        spec.paused,
        spec.missed,
        spec.overlap,
        spec.missed_count,
        spec.skipped_count,
        payload,
        stored,
    )
