"""``ctx.complete(connection=...)``: a handler writes its task's completion in its own
transaction, so its effect and the completion commit together (docs/transactions.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duetime.calls.transaction import store_on
from duetime.errors import ConfigError, LeaseLost
from duetime.record import Record
from duetime.stores.values import done

if TYPE_CHECKING:
    from duetime.context import Context


async def complete(ctx: Context, connection: object) -> None:
    """Write the run's completion (the task is done) on ``connection``, inside its
    transaction, fenced by the claim's own token; see :meth:`Context.complete`.

    Raises:
        ConfigError: not within a run of a worker, a task that repeats (not yet), or a
            connection the store refuses (see ``connection=`` on ``schedule``).
        LeaseLost: the claim's lease was taken over by a later claim, or the task was
            settled already; nothing was written.
    """
    claim = ctx.claim
    if claim is None:
        raise ConfigError("ctx.complete: only within a handler that a worker runs")
    record = Record.decode(claim.record)
    if record.trigger is not None:
        raise ConfigError(
            f"ctx.complete: {ctx.task_type}/{ctx.task_id} repeats; completing an occurrence "
            "of a series in the handler's transaction is not supported yet"
        )
    app = ctx.app
    store = await store_on(app, connection)
    (kept,) = await store.settle(ctx.task_type, [done(claim, record.unique_ms)], app.clock.now_ms())
    if not kept:
        raise LeaseLost(ctx.task_type, claim.token, "another claim holds the task, or it ended")
