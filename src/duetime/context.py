"""What a handler is told about the run it is in."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from duetime.client import Client
    from duetime.stores.values import Claim


class Context(NamedTuple):
    """What a handler is told about the run it is in (a named tuple: cheap to make).

    Attributes:
        task_type: the task type.
        task_id: the task's id.
        due: when this occurrence was due (retries keep it).
        attempt: 1 on the first run of this occurrence, then 2, 3, ...
        occurrence: a stable id of this occurrence, ``"<task id>@<due ms>"``: the same on
            every attempt and on every worker, so handlers can use it to make their side
            effects idempotent.
        token: the fencing token of this claim; later claims of the task get larger ones.
        app: the app, for scheduling more tasks from an async handler.
        claim: the claim of this run (None in a Context made outside a worker).
        meta: the task's metadata (``meta=`` as scheduled), read-only; empty for none.
    """

    task_type: str
    task_id: str
    due: datetime
    attempt: int
    occurrence: str
    token: int
    app: Client
    claim: Claim | None = None
    meta: Mapping[str, Any] = MappingProxyType({})

    async def complete(self, *, connection: object) -> None:
        """Finish this run in the application's transaction open on ``connection`` (as
        ``schedule(..., connection=)`` takes it): the task is done once that transaction
        commits, whatever becomes of the worker; the worker's own outcome of the run then
        changes nothing (an exception the handler raises after the commit is logged). If
        the transaction rolls back, the run's outcome is the handler's, as without it.

        Fenced by this claim's own token: a worker whose lease was taken over cannot
        complete the task.

        Raises:
            LeaseLost: the lease is lost (another claim holds the task) or the task ended;
                nothing was written.
            ConfigError: outside a run of a worker, for a task that repeats (not yet
                supported), on a store without a shared transaction (Redis), or a
                connection the store refuses.
        """
        from duetime.calls.completion import complete

        await complete(self, connection)


#: The metadata of a task without any: one shared, read-only, empty mapping.
NO_META: Mapping[str, Any] = Context._field_defaults["meta"]
