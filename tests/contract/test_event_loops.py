"""One App used from successive event loops (a script's ``asyncio.run`` calls, a test suite's
fresh loop per test): each call uses connections of its own loop, on every store."""

from __future__ import annotations

import asyncio
import gc
from datetime import UTC, datetime

import pytest

import duetime

AT = datetime(2031, 5, 4, 9, 30, tzinfo=UTC)
#: Calls at once in each loop: enough that the opening and the connections are contended.
AT_ONCE = 8


async def _schedule(app: duetime.App) -> None:
    await asyncio.gather(
        *(app.schedule("mail", f"m{i}", at=AT, payload={"i": i}) for i in range(AT_ONCE))
    )


async def _read(app: duetime.App) -> list[duetime.TaskInfo | None]:
    return list(await asyncio.gather(*(app.get("mail", f"m{i}") for i in range(AT_ONCE))))


async def _list_and_cancel(app: duetime.App) -> tuple[int, list[bool]]:
    listed = await app.list("mail")
    cancelled = await asyncio.gather(*(app.cancel("mail", f"m{i}") for i in range(AT_ONCE)))
    return len(listed), list(cancelled)


async def _counts_and_close(app: duetime.App) -> int:
    try:
        return (await app.counts("mail"))["due"]
    finally:
        await app.close()


@pytest.mark.timeout(240)  # four loops, each opening the store anew: slow on a busy machine
def test_one_app_answers_from_successive_event_loops(store_url: str, namespace: str) -> None:
    app = duetime.App(store_url, namespace=namespace)
    app.declare("mail")

    asyncio.run(_schedule(app))
    infos = asyncio.run(_read(app))
    assert [info.payload if info else None for info in infos] == [{"i": i} for i in range(AT_ONCE)]
    assert asyncio.run(_list_and_cancel(app)) == (AT_ONCE, [True] * AT_ONCE)
    assert asyncio.run(_counts_and_close(app)) == 0
    gc.collect()  # a connection of a closed loop left open would warn (ResourceWarning) here


@pytest.mark.timeout(240)
def test_an_app_closed_in_one_loop_opens_again_in_the_next(store_url: str, namespace: str) -> None:
    app = duetime.App(store_url, namespace=namespace)
    app.declare("mail")

    async def schedule_and_close() -> None:
        async with app:
            await _schedule(app)

    asyncio.run(schedule_and_close())
    assert asyncio.run(_counts_and_close(app)) == AT_ONCE
    # The blocking client, made after: on a loop (and a store object) of its own.
    with app.sync() as client:
        assert client.counts("mail")["due"] == AT_ONCE
    assert asyncio.run(_counts_and_close(app)) == AT_ONCE
    gc.collect()
