"""Running one claimed task: call its handler and decide what follows, as an Outcome.

A cron schedule (a task whose record holds a cron definition) first decides which tick to
run under its missed-tick policy; with overlap "skip" it runs the handler under its own
lease, with overlap "allow" it hands the tick off as a task of its own, atomically with
moving on to the next tick.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from concurrent.futures import Executor as ThreadPool
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from duetime.codec import (
    Record,
    decode_record,
    dump_json,
    duration_ms,
    encode_record,
    from_ms,
    to_ms,
)
from duetime.cron import CronSpec, after_run, next_for_allow, plan_claim, waiting_for
from duetime.errors import Abort, Retry, SchemaError, ValidationError
from duetime.model import Context
from duetime.outcome import (
    Following,
    apply_hook,
    attempt,
    failure,
    next_occurrence,
    occurrence_id,
    occurrence_ms,
    periodic_following,
    success,
)
from duetime.stores.base import Claim, NewTask, Outcome

if TYPE_CHECKING:
    from duetime.app import App
    from duetime.tasktype import TaskType

log = logging.getLogger(__name__)

#: Missed ticks are logged one by one up to this many per claim, then summed up.
_LOG_MISSED = 10


class _TimedOut(Exception):
    pass


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _context(
    app: App, task_type: str, task_id: str, attempt_no: int, occ_ms: int, token: int
) -> Context:
    return Context(
        task_type, task_id, from_ms(occ_ms), attempt_no, occurrence_id(task_id, occ_ms), token, app
    )


class Executor:
    """Runs claims of an app's task types; plain ``def`` handlers go to ``pool``."""

    def __init__(self, app: App, pool: ThreadPool | None) -> None:
        self.app = app
        self.pool = pool

    async def run(self, task_type: TaskType, time_limit: float | None, claim: Claim) -> Outcome:
        """Run one claim and return its outcome. Raises CancelledError if cut short."""
        try:
            record = decode_record(claim.record)
            spec = None if record.cron is None else CronSpec.from_json(record.cron)
        except (SchemaError, ValidationError) as exc:
            log.error(
                "%s/%s: corrupt record, sent to the dead letters: %s", task_type.name, claim.id, exc
            )
            return Outcome("dead", claim, None, claim.record, f"corrupt record: {exc}")
        if spec is not None:
            return await self._cron(task_type, time_limit, claim, record, spec)
        occ = occurrence_ms(claim, record)
        ctx = _context(self.app, task_type.name, claim.id, attempt(claim, record), occ, claim.token)
        try:
            if task_type.is_async and time_limit is None:  # the shortest path
                await task_type.handler(*task_type.args(record.payload, ctx))  # type: ignore[misc]
            else:
                await self._call(task_type, time_limit, record.payload, ctx)
        except Exception as exc:
            return await self._failed(task_type, claim, record, ctx, exc, None)
        following = None
        if record.every_ms is not None:
            following = await self._following(task_type, claim, occ, ctx)
        return success(claim, following)

    async def _call(
        self, task_type: TaskType, time_limit: float | None, payload: dict[str, Any], ctx: Context
    ) -> None:
        handler = task_type.handler
        assert handler is not None
        args = task_type.args(payload, ctx)
        if task_type.is_async:
            if time_limit is None:
                await handler(*args)
                return
            async with asyncio.timeout(time_limit) as scope:
                try:
                    await handler(*args)
                except asyncio.CancelledError:
                    if scope.expired():
                        raise _TimedOut(f"timed out after {time_limit:g} s") from None
                    raise
            return
        future = asyncio.get_running_loop().run_in_executor(
            self.pool, functools.partial(handler, *args)
        )
        try:
            await asyncio.wait_for(future, time_limit)
        except TimeoutError:
            if not future.done() or future.cancelled():
                raise _TimedOut(f"timed out after {time_limit:g} s (its thread runs on)") from None
            raise

    async def _failed(
        self,
        task_type: TaskType,
        claim: Claim,
        record: Record,
        ctx: Context,
        exc: Exception,
        following: Following | None,
    ) -> Outcome:
        now = self.app.clock.now_ms()
        retry_at = None
        give_up = isinstance(exc, Abort)
        error = exc.reason if isinstance(exc, Abort | Retry) else _describe(exc)
        if isinstance(exc, Retry) and isinstance(exc.after, datetime):
            retry_at = to_ms("Retry.after", exc.after)
        elif isinstance(exc, Retry) and exc.after is not None:
            retry_at = now + duration_ms("Retry.after", exc.after, allow_zero=True)
        out_of_retries = give_up or record.failures + 1 > task_type.policy.retries
        if out_of_retries and record.every_ms is not None and following is None:
            occ = occurrence_ms(claim, record)
            following = await self._following(task_type, claim, occ, ctx)
        outcome = failure(
            claim,
            record,
            task_type.policy,
            now,
            error,
            retry_at_ms=retry_at,
            give_up=give_up,
            following=following,
        )
        if outcome.op == "retry":
            log.info(
                "%s/%s attempt %d failed (%s); retry at %d",
                task_type.name,
                claim.id,
                ctx.attempt,
                error,
                outcome.due_ms,
            )
        else:
            log.warning(
                "%s/%s attempt %d failed (%s); sent to the dead letters",
                task_type.name,
                claim.id,
                ctx.attempt,
                error,
            )
        return outcome

    async def _following(
        self, task_type: TaskType, claim: Claim, occ: int, ctx: Context
    ) -> Following | None:
        # A fresh copy: the handler may have changed the dict it was given.
        record = decode_record(claim.record)
        following = next_occurrence(record, occ, self.app.clock.now_ms())
        if following is None:
            return None
        if following.skipped:
            log.warning(
                "%s/%s: %d missed occurrences skipped; the latest runs now",
                task_type.name,
                claim.id,
                following.skipped,
            )
        payload_json, due = dump_json(record.payload), following.due_ms
        if task_type.hook is not None:
            try:
                args = (record.payload, ctx) if task_type.hook_takes_ctx else (record.payload,)
                answer = task_type.hook(*args)
                if inspect.isawaitable(answer):
                    answer = await answer
                applied = apply_hook(answer, record.payload, due, self.app.max_payload_bytes)
            except Exception:
                log.exception(
                    "%s/%s: reschedule hook failed; the series goes on unchanged",
                    task_type.name,
                    claim.id,
                )
            else:
                if applied is None:
                    return None
                payload_json, due = applied
        return periodic_following(record, payload_json, due)

    # -- cron ---------------------------------------------------------------------------

    async def _cron(
        self,
        task_type: TaskType,
        time_limit: float | None,
        claim: Claim,
        record: Record,
        spec: CronSpec,
    ) -> Outcome:
        name = claim.id
        now = self.app.clock.now_ms()
        tick = occurrence_ms(claim, record)
        payload_json = dump_json(record.payload)
        if record.failures:
            run = tick  # a retry of a tick that failed: run it again, no planning
        else:
            plan = plan_claim(spec, tick, now)
            if plan.missed_total:
                _log_missed(task_type.name, name, plan.missed, plan.missed_total)
                spec = replace(spec, missed_count=spec.missed_count + plan.missed_total)
            if plan.run_ms is None:
                return Outcome("next", claim, *waiting_for(spec, payload_json, plan.next_ms))
            run = plan.run_ms
        if spec.overlap == "allow":
            occurrence = NewTask(
                f"{name}@{run}", now, encode_record(payload_json, occurrence_ms=run)
            )
            nxt = next_for_allow(spec, run, now)
            return Outcome("next", claim, *waiting_for(spec, payload_json, nxt), spawn=occurrence)
        ctx = _context(self.app, task_type.name, name, attempt(claim, record), run, claim.token)
        try:
            await self._call(task_type, time_limit, record.payload, ctx)
            # Schedules often tick together: let the other handlers of this tick start
            # before the bookkeeping of this one.
            await asyncio.sleep(0)
        except Exception as exc:
            after = self.app.clock.now_ms()
            nxt, skipped = after_run(spec, run, now, after)
            spec = _count_skipped(task_type.name, name, spec, skipped)
            following = waiting_for(spec, payload_json, nxt)
            retrying = record._replace(occurrence_ms=run, cron=spec.to_json())
            return await self._failed(task_type, claim, retrying, ctx, exc, following)
        nxt, skipped = after_run(spec, run, now, self.app.clock.now_ms())
        spec = _count_skipped(task_type.name, name, spec, skipped)
        return success(claim, waiting_for(spec, payload_json, nxt))


def _count_skipped(type_name: str, name: str, spec: CronSpec, skipped: int) -> CronSpec:
    if not skipped:
        return spec
    log.warning(
        "%s/%s: %d ticks came due while the previous run was still running; skipped (overlap=skip)",
        type_name,
        name,
        skipped,
    )
    return replace(spec, skipped_count=spec.skipped_count + skipped)


def _log_missed(type_name: str, name: str, missed: list[int], total: int) -> None:
    for tick in missed[:_LOG_MISSED]:
        log.warning(
            "%s/%s: missed tick %s",
            type_name,
            name,
            datetime.fromtimestamp(tick / 1000).astimezone().isoformat(),
        )
    if total > _LOG_MISSED:
        log.warning("%s/%s: %d ticks missed in all", type_name, name, total)
