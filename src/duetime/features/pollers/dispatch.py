"""Dispatch: a poller's instructions written as tasks of its handler's type, due now.

The instruction is the task's id, and only ids not taken are written (``only_new``): an
instruction already pending, running or in the dead letters is left alone, so the same
instruction never runs twice at once. The write carries the token of the call's lease, and
the store refuses it once a later call of the poller began (see :mod:`.lease`). A store
that fails is tried again for a while, since the scheduler may have marked the
instructions as taken in its own database already, but only while the call's lease holds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from duetime.errors import LeaseLost, StoreRefused, ValidationError
from duetime.features.pollers.lease import CallLease
from duetime.record import Record
from duetime.stores.base import NewTask, Store
from duetime.validate import check_id, dump_json

log = logging.getLogger("duetime.pollers")

#: A failing store is tried again after waits doubling from the first up to the cap, for
#: about a minute in all: longer than a Redis restart or a failover takes.
DISPATCH_TRIES = 12
FIRST_WAIT_SECONDS = 0.05
MAX_WAIT_SECONDS = 8.0


def instruction_task(instruction: str, due_ms: int) -> NewTask:
    """The task that runs ``instruction``: its id is the instruction, and so is its
    payload's ``instruction`` field, which the handler is given."""
    payload = dump_json({"instruction": instruction})
    return NewTask(instruction, due_ms, Record(payload).encode())


async def dispatch(
    store: Store,
    task_type: str,
    instructions: list[str],
    now_ms: Callable[[], Awaitable[int]],
    lease: CallLease,
) -> tuple[list[str], list[Exception]]:
    """Write ``instructions`` as tasks of ``task_type`` due now, under ``lease``; returns
    the instructions written (or found pending as written), and what was wrong with the
    others.

    Raises:
        LeaseLost: the store refused the write (a later call began), or the lease was lost
            while the store failed: nothing was written, and it is not tried again.
        StoreError: the store kept failing (the instructions were not written).
    """
    problems: list[Exception] = []
    valid: dict[str, None] = {}
    for instruction in instructions:
        try:
            valid[check_id(instruction, "instruction")] = None
        except ValidationError as exc:
            problems.append(exc)
    if not valid:
        return [], problems
    wait = FIRST_WAIT_SECONDS
    for tries in range(1, DISPATCH_TRIES + 1):
        due = await now_ms()
        tasks = [instruction_task(i, due) for i in valid]
        try:
            taken = await store.schedule(task_type, tasks, only_new=True, fence=lease.token)
            break
        except (StoreRefused, LeaseLost):
            raise
        except Exception as exc:
            if tries == DISPATCH_TRIES:
                raise
            log.warning("%s: dispatching failed (%s); trying again in %.2f s", task_type, exc, wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, MAX_WAIT_SECONDS)
            # Never past the lease: another worker's call may have begun by then.
            if not await lease.holds():
                raise lease.lost("taken over, or ran out while the store failed") from exc
    if taken:
        log.info(
            "%s: %d instructions are pending, running or dead already: %s",
            task_type,
            len(taken),
            ", ".join(taken[:10]),
        )
    left = set(taken)
    return [i for i in valid if i not in left], problems
