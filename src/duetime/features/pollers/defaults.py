"""A poller's defaults (:mod:`.poller` names them too): the wait between calls and the
limit of each call, small enough to import with the App."""

from __future__ import annotations

from datetime import timedelta

#: How long a poller's call is held by a worker that stopped answering before another
#: worker takes it over (its lease; renewed while the call runs), unless the poller sets
#: its own ``lease``.
POLLER_LEASE = timedelta(seconds=10)


def default_delay(attempt: int) -> float:
    """The wait before the next call, in seconds: 0.1 after a call that produced
    instructions (``attempt`` 0), then ``attempt`` seconds, at most 60.

    This is what Planton's README example means; its code takes
    ``max(attempt * 1000, 60000)`` ms, which waits at least a minute every time, where its
    comment asks for a back-off that grows: a ``min`` was meant.
    """
    return 0.1 if attempt == 0 else min(attempt, 60)


def default_limit(concurrency: int, active: list[str]) -> int:
    """How many instructions the scheduler may return: the free slots."""
    return concurrency - len(active)
