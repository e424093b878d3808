"""The missed-tick and overlap policies of a cron schedule: which tick runs, and which next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from duetime.triggers.cron.expression import CronExpr

Missed = Literal["skip", "once", "all"]
Overlap = Literal["skip", "allow", "buffer_one", "buffer_all", "cancel_other"]
MISSED: tuple[Missed, ...] = ("skip", "once", "all")
OVERLAP: tuple[Overlap, ...] = ("skip", "allow", "buffer_one", "buffer_all", "cancel_other")
#: The overlap policies under which ticks that come due during a run wait for it to end.
BUFFERED: frozenset[Overlap] = frozenset({"buffer_one", "buffer_all"})
#: With overlap="buffer_all", at most this many ticks wait; later ones are skipped.
MAX_BUFFERED = 100
#: A tick is late, not missed, when it starts within this long of its time (or before the
#: next tick, if that comes sooner), unless the schedule gives its own ``grace``.
MISSED_AFTER_MS = 60_000
#: With missed="all", at most this many missed ticks are caught up; older ones are skipped.
MAX_CATCHUP = 100


class Policies(Protocol):
    """What the policies read of a schedule (a :class:`~.trigger.CronTrigger`)."""

    @property
    def expr(self) -> CronExpr: ...

    @property
    def missed(self) -> Missed: ...

    @property
    def overlap(self) -> Overlap: ...

    @property
    def catchup_ms(self) -> int | None: ...

    @property
    def grace_ms(self) -> int:
        """How late a tick may start and still run (MISSED_AFTER_MS unless given)."""
        ...

    @property
    def end_ms(self) -> int | None:
        """No tick after this one runs."""
        ...


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do with a schedule claimed for a tick.

    Attributes:
        run_ms: the tick to run now, or None to run nothing.
        missed: the ticks given up, oldest first (the first MAX_CATCHUP of them).
        missed_total: how many ticks were given up in all.
        next_ms: with nothing to run, the tick to wait for next.
        again: the tick runs again because its run crashed (the claim has stalls); the
            ticks that came due since wait behind it (see :func:`after_run`).
    """

    run_ms: int | None
    missed: list[int]
    missed_total: int
    next_ms: int
    again: bool = False


def missed_ticks_ms(tick_ms: int, next_ms: int, grace_ms: int = MISSED_AFTER_MS) -> int:
    """When the tick at ``tick_ms`` counts as missed (its successor is at ``next_ms``)."""
    return tick_ms + min(grace_ms, next_ms - tick_ms)


def _within(spec: Policies, now_ms: int) -> int:
    """``now_ms``, or the schedule's end if that is sooner: a tick after the end is none of
    the schedule's, so no policy runs, buffers, skips or aborts for it."""
    return now_ms if spec.end_ms is None else min(now_ms, spec.end_ms)


def _late(spec: Policies, tick_ms: int, now_ms: int) -> bool:
    return now_ms > missed_ticks_ms(tick_ms, spec.expr.next_after(tick_ms), spec.grace_ms)


def plan_claim(spec: Policies, tick_ms: int, now_ms: int, stalls: int = 0) -> Plan:
    """Decide which tick runs when the schedule, waiting for ``tick_ms``, is claimed at ``now_ms``.

    A claim with ``stalls`` finds the tick's run crashed (its worker died and its lease
    expired): that tick runs again, whatever its lateness (at-least-once), and the ticks
    that came due since are planned after it (:func:`after_run`).

    Otherwise every tick from ``tick_ms`` up to now (and up to the schedule's end) is a
    candidate. A tick is missed when it starts more than its grace (a minute unless given)
    after its time (or after the next tick, if that is sooner).
    ``skip`` runs the latest tick only if it is not missed; ``once`` runs the latest tick
    as one catch-up for all of them; ``all`` runs every candidate in turn, oldest first, at
    most MAX_CATCHUP of them. The catch-up window drops candidates older than it.
    """
    expr = spec.expr
    following = expr.next_after(tick_ms)
    if stalls:
        return Plan(tick_ms, [], 0, following, again=True)
    if now_ms < following and now_ms <= missed_ticks_ms(tick_ms, following, spec.grace_ms):
        return Plan(tick_ms, [], 0, following)  # the common case: on time, nothing missed
    # Ticks after the schedule's end are none of its own: neither run nor missed.
    horizon = now_ms if spec.end_ms is None else max(tick_ms, min(now_ms, spec.end_ms))
    total = 1 + expr.count_between(tick_ms, horizon)
    ticks = ([tick_ms] + expr.ticks_until(tick_ms, horizon, MAX_CATCHUP))[-(MAX_CATCHUP + 1) :]
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
            run = None if _late(spec, latest, now_ms) else latest
        given_up = [t for t in ticks if t != run]
    missed_total = total - len(ticks) + len(given_up)
    return Plan(run, given_up, missed_total, expr.next_after(max(now_ms, tick_ms)))


def after_run(
    spec: Policies, run_ms: int, started_ms: int, now_ms: int, again: bool = False
) -> tuple[int, int]:
    """The next tick to wait for after a run of ``run_ms`` that started at ``started_ms``,
    and how many ticks came due while it ran and are skipped (overlap="skip").

    After a tick run ``again`` (its first run crashed), the ticks that came due before
    this run began are late ticks: the schedule waits for the first of them, at once, and
    the next claim plans them under the missed policy (so do missed="all" catch-ups).
    """
    expr = spec.expr
    following = expr.next_after(run_ms)
    if now_ms < following:
        return following, 0  # the common case: nothing came due during the run
    if (again or spec.missed == "all") and following <= started_ms:
        return following, 0  # a backlog tick, due before this run began: planned next
    skipped = expr.count_between(max(run_ms, started_ms), _within(spec, now_ms))
    return expr.next_after(max(now_ms, run_ms)), skipped


@dataclass(frozen=True, slots=True)
class After:
    """What follows a run under the schedule's lease (every overlap policy but "allow").

    Attributes:
        next_ms: the tick to wait for (due at once when it has passed).
        skipped: how many ticks that came due during the run are skipped.
        waiting: under "buffer_one" and "buffer_all", the ticks that wait, oldest first
            (``next_ms`` is the first); empty otherwise.
    """

    next_ms: int
    skipped: int
    waiting: tuple[int, ...] = ()


def after_overlap(
    spec: Policies,
    run_ms: int,
    started_ms: int,
    now_ms: int,
    again: bool = False,
    waiting: tuple[int, ...] = (),
    since_ms: int | None = None,
) -> After:
    """What follows a run of ``run_ms`` that started at ``started_ms`` and ended at
    ``now_ms``, by the schedule's overlap policy.

    "skip": :func:`after_run`. "buffer_one": the first tick that came due during the run
    waits and runs when it ends, the others are skipped; "buffer_all": every one waits, in
    order, up to :data:`MAX_BUFFERED` waiting in all (the rest are skipped). A run of a tick
    that waited gives ``waiting`` (the ticks still waiting behind it) and ``since_ms`` (the
    ticks up to then are accounted for: they came due after it). "cancel_other": the latest
    tick that came due (the run was aborted when the first did) runs at once, the others
    are skipped. A backlog tick (see :func:`after_run`) comes first under every policy.
    Ticks after the schedule's end are no ticks: none waits, none is skipped, none runs.
    """
    expr = spec.expr
    following = expr.next_after(run_ms)
    backlog = (again or spec.missed == "all") and following <= started_ms and since_ms is None
    if spec.overlap in BUFFERED and not backlog:
        lo = max(run_ms, started_ms) if since_ms is None else since_ms
        queue, skipped = _buffered(spec, waiting, lo, _within(spec, now_ms))
        if queue:
            return After(queue[0], skipped, queue)
        return After(expr.next_after(max(now_ms, run_ms)), skipped)
    if spec.overlap == "cancel_other" and not backlog and following <= now_ms:
        lo, hi = max(run_ms, started_ms), _within(spec, now_ms)
        came = expr.ticks_until(lo, hi, 1)
        if came:
            return After(came[-1], expr.count_between(lo, hi) - 1)
    nxt, skipped = after_run(spec, run_ms, started_ms, now_ms, again)
    return After(nxt, skipped)


def _buffered(
    spec: Policies, waiting: tuple[int, ...], after_ms: int, now_ms: int
) -> tuple[tuple[int, ...], int]:
    """``waiting`` with the ticks in (``after_ms``, ``now_ms``] added as the policy allows,
    and how many of those are skipped."""
    came = spec.expr.count_between(after_ms, now_ms)
    if not came:
        return waiting, 0
    room = (1 if spec.overlap == "buffer_one" else MAX_BUFFERED) - len(waiting)
    taken: tuple[int, ...] = ()
    if room > 0:  # the oldest wait (a count past its cap is estimated: look at each)
        taken = tuple(t for t in spec.expr.ticks(after_ms, min(room, came)) if t <= now_ms)
    return waiting + taken, max(0, came - len(taken))


def abort_at(spec: Policies, run_ms: int, started_ms: int) -> int | None:
    """With overlap="cancel_other", when the run of ``run_ms`` that started at
    ``started_ms`` is aborted: as the next tick comes due (None under other policies, and
    when the next tick is past the schedule's end: no tick after it aborts its last run)."""
    if spec.overlap != "cancel_other":
        return None
    following = spec.expr.next_after(max(run_ms, started_ms))
    return None if spec.end_ms is not None and following > spec.end_ms else following


def next_for_allow(spec: Policies, run_ms: int, now_ms: int, again: bool = False) -> int:
    """With overlap="allow", the tick to wait for once ``run_ms`` has been handed off (run
    ``again`` when the claim that was to hand it off crashed)."""
    following = spec.expr.next_after(run_ms)
    if (again or spec.missed == "all") and following <= now_ms:
        return following
    return spec.expr.next_after(max(now_ms, run_ms))
