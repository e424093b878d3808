"""The poller trigger kind: a poller's next call, as a task that one worker at a time runs.

Each poller has a task of its own (type ``duetime.poller.<name>``, id ``<name>``) whose
record carries the mark ``"l"`` and the payload ``{"attempt": <n>}``: the calls in a row that
produced nothing. Claiming it is what lets a worker call the poller's scheduler: the lease
makes that call one at a time across every worker, is renewed while the call runs, and
passes to another worker when this one dies. The task's handler (the poller's
:meth:`~duetime.features.pollers.poller.Poller.poll`) makes the call and returns a
:class:`Step`; this kind then hands the task on, due again after the step's delay, in the
same settle that ends the run. A finished instruction brings the task forward
(``Store.hasten``), so a free slot is filled at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from duetime.errors import SchemaError
from duetime.stores.base import Outcome
from duetime.triggers.base import Job, Next

log = logging.getLogger("duetime.pollers")

#: The task type of a poller's calls is this prefix and the poller's name.
TICK_PREFIX = "duetime.poller."
#: When the call itself failed (a failure of duetime's own, logged), the next one comes
#: after this long: the poller goes on, without spinning on a fault.
FAILED_CALL_DELAY_MS = 1000


def tick_type(name: str) -> str:
    """The task type of the poller ``name``'s calls."""
    return TICK_PREFIX + name


class Step(NamedTuple):
    """What one call of a poller decided: the attempt count from now on and the wait before
    the next call, and what the call did: the instructions it dispatched, and what went
    wrong (each told to the worker's listeners as ``dispatched`` and ``poll_failed``)."""

    attempt: int
    delay_ms: int
    dispatched: tuple[str, ...] = ()
    errors: tuple[BaseException, ...] = ()


def tick_payload(attempt: int) -> str:
    """The payload of a poller's task: the calls in a row that produced nothing."""
    return f'{{"attempt":{attempt}}}'


def read_attempt(payload: dict[str, Any]) -> int:
    """The attempt count a poller's task carries."""
    attempt = payload.get("attempt")
    if type(attempt) is not int or attempt < 0:
        raise SchemaError("a poller's payload is not {attempt: <count>}")
    return attempt


@dataclass(frozen=True, slots=True)
class PollTick:
    """The mark of a poller's task (its state is the payload's attempt count)."""

    KEY: ClassVar[str] = "l"
    NAME: ClassVar[str] = "poller"

    @classmethod
    def from_record(cls, doc: dict[str, Any]) -> PollTick:
        if doc.get(cls.KEY) != 1:
            raise SchemaError("field 'l' of the record is not 1")
        return POLL_TICK

    def fields(self) -> str:
        return ',"l":1'

    def shown(self) -> dict[str, Any]:
        return {}

    async def run(self, job: Job) -> Outcome:
        attempt = read_attempt(job.payload)
        error = await job.call(job.occurrence_ms)
        step = job.result
        if isinstance(step, Step):
            for instruction in step.dispatched:
                job.tell("dispatched", instruction=instruction)
            for problem in step.errors:
                job.tell("poll_failed", error=repr(problem), exception=problem)
        if error is not None or not isinstance(step, Step):
            log.error(
                "%s: the call failed (%r); next call in %d ms",
                job.claim.id,
                error,
                FAILED_CALL_DELAY_MS,
                exc_info=error,
            )
            step = Step(attempt, FAILED_CALL_DELAY_MS)
        due = job.now_ms() + step.delay_ms
        return job.done(Next(due, tick_payload(step.attempt), self))


POLL_TICK = PollTick()
