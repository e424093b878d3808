"""Fenced writes on each store. A poller's call raises its handler type's fence to the token
of its claim before it reads anything, and the tasks it writes carry that token: a write
under a token below the fence is refused whole and writes nothing, one under the fence's
token goes through."""

from __future__ import annotations

import pytest

import duetime
from duetime.stores.base import Store
from duetime.stores.layout import partition_of
from duetime.triggers.poller.dispatch import instruction_task

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
