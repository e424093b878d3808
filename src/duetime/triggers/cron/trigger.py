"""The cron trigger kind: a schedule's definition and counters in its record, and its runs.

A cron schedule is a task whose id is the schedule's name and whose record carries this
trigger under ``"c"``; it is due at its next tick (plus jitter), and its record's occurrence
is that tick. Claiming it decides which tick runs under the missed-tick policy, or runs
the tick again when its run crashed (the claim has stalls: its lease expired). With
overlap "allow" the tick is handed off as a task of its own, atomically with moving on to
the next tick; under every other policy the handler runs under the schedule's own lease,
and the policy says what follows a run that outlasted its period: "skip" waits for the
next tick; "buffer_one" and "buffer_all" keep the ticks that came due meanwhile in the
record (``waiting``) and run them, oldest first, as soon as the run ends; "cancel_other"
aborts the run as the next tick comes due, and that tick runs once the run has ended.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, replace
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from duetime.clock import NEVER_MS, iso
from duetime.errors import SchemaError, ValidationError
from duetime.stores.base import Outcome
from duetime.triggers.base import Job, Next
from duetime.triggers.cron import stored
from duetime.triggers.cron.expression import CronExpr, parse_cron
from duetime.triggers.cron.policy import (
    BUFFERED,
    MISSED,
    MISSED_AFTER_MS,
    OVERLAP,
    Missed,
    Overlap,
    Plan,
    abort_at,
    after_overlap,
    next_for_allow,
    plan_claim,
)
from duetime.validate import dump_json

log = logging.getLogger(__name__)

#: Missed ticks are logged one by one up to this many per claim, then summed up.
_LOG_MISSED = 10


@dataclass(frozen=True, slots=True)
class CronTrigger:
    """A cron schedule's definition and counters, as its stored record keeps them.

    Attributes:
        jitter_ms: each tick is due up to this much after its time, at random (its
            occurrence id keeps the tick's own time).
        catchup_ms: missed ticks older than this are not caught up (None: no limit).
        missed_count: ticks missed so far (every worker was down past them, or a
            crashed run's lease held the schedule).
        skipped_count: ticks skipped so far because the previous run was still running.
        start_ms, end_ms: no tick before the one, nor after the other.
        limit: the most runs (done or dead) the schedule makes; ``run_count`` so far.
        grace_ms: how late a tick may start and still run (see the missed policy).
        finished: past its end or its limit, it waits for nothing (and stays listed).
        immediate: a run is due at once, before the ticks: the one ``immediately`` asks
            for when the schedule is first written.
        waiting: under overlap "buffer_one" or "buffer_all", the ticks that came due during
            a run and wait to run, oldest first: the first is the occurrence the schedule
            is due for (at once).
        since_ms: with ``waiting``, when the run they waited for ended: the ticks up to
            then are accounted for.
    """

    KEY: ClassVar[str] = "c"
    NAME: ClassVar[str] = "cron"
    expr: CronExpr
    missed: Missed = "skip"
    overlap: Overlap = "skip"
    jitter_ms: int = 0
    catchup_ms: int | None = None
    paused: bool = False
    missed_count: int = 0
    skipped_count: int = 0
    start_ms: int | None = None
    end_ms: int | None = None
    limit: int | None = None
    grace_ms: int = MISSED_AFTER_MS
    run_count: int = 0
    finished: bool = False
    immediate: bool = False
    waiting: tuple[int, ...] = ()
    since_ms: int | None = None

    def definition(self) -> tuple[object, ...]:
        """What the user declared: two triggers with the same definition are the same
        schedule, whatever their counters."""
        return (
            self.expr.text,
            self.expr.tz.key,
            self.missed,
            self.overlap,
            self.jitter_ms,
            self.catchup_ms,
            self.start_ms,
            self.end_ms,
            self.limit,
            self.grace_ms,
        )

    def carried_from(self, old: Any, waiting: bool = True) -> CronTrigger:
        """This definition with ``old``'s paused state and counters: a schedule updated in
        place keeps them, and its immediate run while it still waits (not once it runs)."""
        return replace(
            self,
            paused=old.paused,
            missed_count=old.missed_count,
            skipped_count=old.skipped_count,
            run_count=old.run_count,
            immediate=old.immediate and waiting,
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
            "s": (self.start_ms, None),
            "e": (self.end_ms, None),
            "l": (self.limit, None),
            "g": (self.grace_ms, MISSED_AFTER_MS),
            "nr": (self.run_count, 0),
            "f": (self.finished, False),
            "i": (self.immediate, False),
            "b": (list(self.waiting), []),
            "bs": (self.since_ms, None),
        }
        for key, (value, default) in optional.items():
            if value != default:
                doc[key] = value
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> CronTrigger:
        """Raises ValidationError when the stored definition cannot be used."""
        missed, overlap = doc.get("m", "skip"), doc.get("v", "skip")
        if missed not in MISSED or overlap not in OVERLAP:
            raise ValidationError("cron", f"unknown policy {missed!r} or {overlap!r}")
        jitter, missed_count, skipped_count, run_count = (
            stored.whole(doc, key) for key in ("j", "nm", "ns", "nr")
        )
        catchup, limit, grace = (stored.positive(doc, key) for key in ("w", "l", "g"))
        return cls(
            parse_cron(doc.get("x"), doc.get("z")),
            missed,
            overlap,
            jitter,
            catchup,
            bool(doc.get("q", False)),
            missed_count,
            skipped_count,
            start_ms=stored.time_ms(doc, "s"),
            end_ms=stored.time_ms(doc, "e"),
            limit=limit,
            grace_ms=MISSED_AFTER_MS if grace is None else grace,
            run_count=run_count,
            finished=bool(doc.get("f", False)),
            immediate=bool(doc.get("i", False)),
            waiting=stored.ticks(doc.get("b", [])),
            since_ms=None if doc.get("bs") is None else stored.whole(doc, "bs"),
        )

    @classmethod
    def from_record(cls, doc: dict[str, Any]) -> CronTrigger:
        value = doc.get(cls.KEY)
        if type(value) is not dict:
            raise SchemaError("field 'c' of the record is not an object")
        try:
            return cls.from_json(value)
        except ValidationError as exc:
            raise SchemaError(f"the cron schedule in the record cannot be used: {exc}") from None

    def fields(self) -> str:
        return ',"c":' + dump_json(self.to_json())

    def shown(self) -> dict[str, Any]:
        return {}

    def start(self, payload_json: str, now_ms: int, immediately: bool = False) -> Next:
        """The schedule waiting for its first tick after ``now_ms`` and not before its
        start (never, while paused; nothing once past its end or limit); with
        ``immediately`` (or an immediate run still pending), for a run at once first (at
        its start, if that is later). Ticks that waited (buffer_one, buffer_all) are given
        up."""
        spec = replace(
            self,
            finished=False,
            immediate=self.immediate or immediately,
            waiting=(),
            since_ms=None,
        )
        if spec.paused:
            return spec.waiting_for(payload_json, NEVER_MS)
        begin = now_ms if self.start_ms is None else max(now_ms, self.start_ms)
        if spec.immediate:
            if not spec.over(begin):
                return Next(begin, payload_json, spec, begin)
            spec = replace(spec, immediate=False)
        after = now_ms if begin == now_ms else begin - 1  # a tick at the start is its first
        return spec.waiting_for(payload_json, spec.expr.next_after(after))

    def over(self, tick_ms: int) -> bool:
        """Whether the schedule ends before the tick at ``tick_ms``: past its end, or its
        limit of runs reached."""
        if self.end_ms is not None and tick_ms > self.end_ms:
            return True
        return self.limit is not None and self.run_count >= self.limit

    def waiting_for(self, payload_json: str, tick_ms: int) -> Next:
        """The schedule waiting for the tick at ``tick_ms``: due then, plus jitter unless
        paused, with the tick as its occurrence; finished instead, waiting for nothing,
        when it ends before that tick."""
        if not self.paused and self.over(tick_ms):
            return Next(NEVER_MS, payload_json, replace(self, finished=True), NEVER_MS)
        jitter = random.randint(0, self.jitter_ms) if self.jitter_ms and not self.paused else 0
        return Next(tick_ms + jitter, payload_json, self, tick_ms)

    def upcoming(self, pending_ms: int, now_ms: int, count: int, *, running: bool) -> list[int]:
        """The next ``count`` ticks (fewer when the schedule ends first): from the one it
        waits for at ``pending_ms`` (the ticks that wait, under buffer_one or buffer_all,
        first), or after ``now_ms`` while a run holds it."""
        if self.paused or self.finished:
            return []
        left = count
        if self.limit is not None:
            left = min(count, self.limit - self.run_count - (1 if running else 0))
        if left <= 0:
            return []
        ticks = self.expr.ticks(now_ms, left) if running else [pending_ms]
        if not running and self.waiting and self.waiting[0] == pending_ms:
            after = max(now_ms, self.waiting[-1])
            ticks = [*self.waiting, *self.expr.ticks(after, left)][:left]
        elif not running:
            ticks += self.expr.ticks(pending_ms, left - 1)
        return [t for t in ticks if self.end_ms is None or t <= self.end_ms]

    def zone(self) -> ZoneInfo:
        """The schedule's time zone."""
        return self.expr.tz

    async def run(self, job: Job) -> Outcome:
        now = job.now_ms()
        spec, tick = self, job.occurrence_ms
        waiting: tuple[int, ...] = ()
        since: int | None = None
        if spec.immediate:
            # The run asked for as the schedule was created: it runs however late, and the
            # ticks that came due meanwhile are planned after it, as after a re-run.
            run, again = tick, True
            spec = replace(spec, immediate=False)
        elif spec.waiting and spec.waiting[0] == tick:
            # A tick that waited for the run before it (buffer_one, buffer_all): it runs
            # now, however late, and the ticks behind it keep waiting.
            run, again = tick, job.claim.stalls > 0
            waiting, since = spec.waiting[1:], spec.since_ms
            spec = replace(spec, waiting=(), since_ms=None)
        elif job.failures:
            # A retry of a tick that failed: run it again, no planning, and go on as a
            # tick's re-run after a crash does: the ticks that came due since the tick (in
            # its failed run and its back-off) are late ticks, planned next under the
            # missed policy, each run or counted once.
            run, again = tick, True
        else:
            plan = _planned(spec, tick, now, job.claim.stalls)
            spec = _noted(job, spec, plan, tick)
            if plan.run_ms is None:
                return job.done(spec.waiting_for(job.payload_json, plan.next_ms))
            run, again = plan.run_ms, plan.again
        if spec.overlap == "allow":
            # The tick handed off counts as run: it runs (done or dead) as a task of its own.
            ran = replace(spec, run_count=spec.run_count + 1)
            following = ran.waiting_for(job.payload_json, next_for_allow(spec, run, now, again))
            return job.done(following, hand_off_ms=run)
        last = spec.limit is not None and spec.run_count + 1 >= spec.limit
        # The run that reaches the limit is the last: no tick after it aborts it.
        error = await job.call(run, abort_at_ms=None if last else abort_at(spec, run, now))
        if error is None:
            # Schedules often tick together: let the other handlers of this tick start
            # before the bookkeeping of this one.
            await asyncio.sleep(0)
        end = job.now_ms()
        after = after_overlap(spec, run, now, end, again, waiting, since)
        skipped = after.skipped
        counted = replace(spec, skipped_count=spec.skipped_count + skipped) if skipped else spec
        if after.waiting:
            counted = replace(counted, waiting=after.waiting, since_ms=end)
        # Counted once the tick is over (done or dead), not in the state a retry keeps.
        ran = replace(counted, run_count=counted.run_count + 1)
        following = ran.waiting_for(job.payload_json, after.next_ms)
        # A retry goes on from the tick after the one it runs, and so plans the ticks that
        # came due during this run once more (but under a buffering policy, where they wait
        # behind it): they count only if the tick is given up.
        counts_now = error is None or spec.overlap in BUFFERED
        if counts_now:
            _log_skipped(job, skipped, spec.overlap)
        if error is None:
            return job.done(following)

        async def follow() -> Next:
            if not counts_now:
                _log_skipped(job, skipped, spec.overlap)
            return following

        return await job.failed(error, run, _retried(spec, counted, run, end), follow)


def _retried(spec: CronTrigger, counted: CronTrigger, run_ms: int, end_ms: int) -> CronTrigger:
    """The schedule's state in the record of a retry of ``run_ms``: under a buffering
    policy, the tick heads the ticks that wait (those that came due during the failed run
    included), so that they run after it; else ``spec``: the retry plans the ticks that came
    due since, so none is counted here."""
    if spec.overlap in BUFFERED:
        return replace(counted, waiting=(run_ms, *counted.waiting), since_ms=end_ms)
    return spec


def _planned(spec: CronTrigger, tick_ms: int, now_ms: int, stalls: int) -> Plan:
    """plan_claim, for a tick read from the store: one the expression cannot be stepped
    from (at the very edge of the years datetime can hold) is bad data."""
    try:
        return plan_claim(spec, tick_ms, now_ms, stalls)
    except (OverflowError, ValueError) as exc:
        raise SchemaError(
            f"the cron schedule cannot step from its tick {iso(tick_ms)}: {exc}"
        ) from None


def _noted(job: Job, spec: CronTrigger, plan: Plan, tick_ms: int) -> CronTrigger:
    """Log what the plan of a claim gives up or runs again; ``spec`` with its missed ticks
    counted."""
    if plan.again:
        log.warning(
            "%s/%s: the run of tick %s did not finish (its lease expired); it runs again",
            job.task_name,
            job.claim.id,
            _shown_tick(tick_ms),
        )
    if not plan.missed_total:
        return spec
    _log_missed(job, plan.missed, plan.missed_total)
    job.missed_ticks(plan.missed[-1] if plan.missed else tick_ms, plan.missed_total)
    return replace(spec, missed_count=spec.missed_count + plan.missed_total)


def _shown_tick(tick_ms: int) -> str:
    return iso(tick_ms)


def _log_skipped(job: Job, skipped: int, overlap: Overlap) -> None:
    if skipped:
        log.warning(
            "%s/%s: %d ticks came due while the previous run was still running; "
            "skipped (overlap=%s)",
            job.task_name,
            job.claim.id,
            skipped,
            overlap,
        )


def _log_missed(job: Job, missed: list[int], total: int) -> None:
    for tick in missed[:_LOG_MISSED]:
        log.warning("%s/%s: missed tick %s", job.task_name, job.claim.id, _shown_tick(tick))
    if total > _LOG_MISSED:
        log.warning("%s/%s: %d ticks missed in all", job.task_name, job.claim.id, total)
