"""What belongs to one event loop (duetime.loops): a lock waited on in one loop serves the
next, and the first loop seen is not a move."""

from __future__ import annotations

import asyncio

from duetime.loops import LoopBound, LoopLock


async def _contend(lock: LoopLock) -> int:
    ran = 0

    async def hold() -> None:
        nonlocal ran
        async with lock():
            await asyncio.sleep(0)
            ran += 1

    await asyncio.gather(*(hold() for _ in range(3)))  # the others wait: bound to this loop
    return ran


def test_a_lock_waited_on_in_one_loop_serves_the_next() -> None:
    lock = LoopLock()
    assert asyncio.run(_contend(lock)) == 3
    assert asyncio.run(_contend(lock)) == 3  # a plain asyncio.Lock raises here


def test_a_move_is_a_loop_after_another() -> None:
    bound = LoopBound()
    assert bound.moved() is False  # outside a loop

    async def moved() -> bool:
        return bound.moved()

    assert asyncio.run(moved()) is False  # the first loop
    assert asyncio.run(moved()) is True
    runner = asyncio.Runner()
    with runner:
        assert runner.run(moved()) is True
        assert runner.run(moved()) is False  # the same loop again
