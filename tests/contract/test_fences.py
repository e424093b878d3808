"""Fenced writes on each store. A poller's call raises its handler type's fence to the token
of its claim before it reads anything, and the tasks it writes carry that token: a write
under a token below the fence is refused whole and writes nothing, one under the fence's
token goes through. A call whose lease a later call took over calls nothing, and what an
overtaken call found is not dispatched."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

import duetime
from duetime.features.pollers.dispatch import instruction_task
from duetime.partitions.layout import partition_of
from duetime.stores.base import Claim, Store

EMPTY = {"due": 0, "running": 0, "dead": 0}


async def test_a_write_under_a_token_below_the_fence_is_refused_and_writes_nothing(
    app: duetime.App, store: Store
) -> None:
    now = app.clock.now_ms()
    assert await store.raise_fence("mail", 5) is True
    assert await store.raise_fence("mail", 3) is False  # never lowered
    assert await store.raise_fence("mail", 5) is True  # the token that holds it, again
    tasks = [instruction_task(i, now) for i in ("a", "b", "c")]

    with pytest.raises(duetime.LeaseLost) as caught:
        await store.schedule("mail", tasks, only_new=True, fence=4)
    assert (caught.value.task_type, caught.value.token) == ("mail", 4)
    assert isinstance(caught.value, duetime.DuetimeError)
    with pytest.raises(duetime.LeaseLost):
        await store.schedule("mail", tasks[:1], fence=3)  # a plain write too
    assert await store.count("mail") == EMPTY

    assert await store.schedule("mail", tasks, only_new=True, fence=5) == []
    assert (await store.count("mail"))["due"] == 3
    assert await store.schedule("mail", tasks, only_new=True, fence=5) == []  # sent again
    # Not fenced: a write without a token, one above the fence, and another type's.
    await store.schedule("mail", [instruction_task("d", now)])
    assert await store.schedule("mail", [instruction_task("e", now)], fence=6) == []
    assert await store.schedule("report", [instruction_task("a", now)], fence=1) == []
    assert (await store.count("mail"))["due"] == 5
    assert (await store.count("report"))["due"] == 1


async def test_a_fence_holds_over_every_partition_of_a_type(app: duetime.App, store: Store) -> None:
    app.declare("spread", partitions=3)
    ids = [f"item-{n}" for n in range(12)]
    assert len({partition_of(i, 3) for i in ids}) == 3  # a task in every partition
    tasks = [instruction_task(i, app.clock.now_ms()) for i in ids]
    assert await store.raise_fence("spread", 8) is True
    assert await store.raise_fence("spread", 7) is False

    with pytest.raises(duetime.LeaseLost) as caught:
        await store.schedule("spread", tasks, only_new=True, fence=7)
    assert (caught.value.task_type, caught.value.token) == ("spread", 7)
    assert await store.count("spread") == EMPTY
    assert await store.schedule("spread", tasks, only_new=True, fence=8) == []
    assert (await store.count("spread"))["due"] == 12


TICK = "duetime.poller.fenced"


async def _claim_call(store: Store, now_ms: int) -> Claim:
    """Claim the poller's call at ``now_ms`` (as a worker does; an expired lease is reaped
    on the way)."""
    batch = await store.claim(
        TICK, now_ms=now_ms, limit=1, lease_ms=60_000, max_stalls=100, at_most_once=False
    )
    (claim,) = batch.claims
    return claim


def _context(app: duetime.App, claim: Claim) -> duetime.Context:
    """The context the worker gives the poller's call for ``claim``."""
    due = datetime.fromtimestamp(claim.due_ms / 1000, UTC)
    return duetime.Context(TICK, claim.id, due, 1, f"{claim.id}@{claim.due_ms}", claim.token, app)


@pytest.mark.parametrize("partitions", [1, 3])
async def test_a_call_overtaken_by_a_later_one_calls_nothing_and_dispatches_nothing(
    app: duetime.App, partitions: int
) -> None:
    store = await app.open()
    calls: list[duetime.PollContext] = []
    later: list[Claim] = []

    @app.poller("fenced", concurrency=5, lease=1)
    async def find(ctx: duetime.PollContext) -> list[str]:
        calls.append(ctx)
        if len(calls) == 1:
            # While this call runs, its worker is paused past the lease: another claims
            # the call and begins it (raising the handler type's fence to its token).
            later.append(await _claim_call(store, await app.now_ms() + 120_000))
            assert await store.raise_fence("fenced", later[0].token)
        return [f"item-{n}" for n in range(ctx.limit)]

    @find.handler(partitions=partitions)
    async def work(instruction: str) -> None:
        pass

    payload: dict[str, Any] = {"attempt": 0}
    # Claimed 70 s ago, and claimed again now (the first lease of 60 s ran out).
    ago = await app.now_ms() - 70_000
    await store.schedule(TICK, [find.first_tick(ago)])
    first = await _claim_call(store, ago)
    overtaking = await _claim_call(store, await app.now_ms())

    # A call whose lease was taken over before it began is not made. (A call tells what
    # went wrong in its Step; its task tells the worker's listeners, app.events among them.)
    step = await find.poll(payload, _context(app, first))
    assert calls == []
    assert [type(e) for e in step.errors] == [duetime.LeaseLost]

    # One overtaken while the scheduler ran: what it found is refused, nothing is written.
    step = await find.poll(payload, _context(app, overtaking))
    assert len(calls) == 1 and later
    assert [type(e) for e in step.errors] == [duetime.LeaseLost]
    assert step.errors[0].task_type == "fenced"  # type: ignore[attr-defined]
    assert step.dispatched == ()
    assert await app.counts("fenced") == EMPTY

    # The call that holds the lease now dispatches.
    step = await find.poll(payload, _context(app, later[0]))
    assert len(calls) == 2 and step.errors == ()
    assert len(step.dispatched) == 5
    assert (await app.counts("fenced"))["due"] == 5
