"""duetime's own Redis client keeps to its cap on connections (``max_connections``): a
burst of calls far beyond it waits for free connections, and every call is answered."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import duetime
from duetime.stores.redis.resp.address import parse_url
from duetime.stores.redis.resp.client import MAX_CONNECTIONS, Fixed, RespClient
from tests.helpers import eventually
from tests.servers import RedisServer

#: Calls at once: a hundred times the cap.
BURST = 5_000
#: Schedules at once through an App (each costs more of the test's own CPU than a call).
APP_BURST = 1_000


@pytest.fixture
def own_server() -> Iterator[RedisServer]:
    """A server of the test's own: its CLIENT LIST holds the test's connections only."""
    with RedisServer() as server:
        yield server


def _clients(server: RedisServer) -> int:
    """The server's client connections, but the one asking."""
    with server.client() as admin:
        return len(admin.client_list(_type="normal")) - 1


async def test_a_burst_of_calls_waits_for_connections_within_the_cap(
    own_server: RedisServer,
) -> None:
    link = RespClient(Fixed(parse_url(own_server.url)), max_connections=50)
    peak = 0

    async def incr() -> int:
        nonlocal peak
        reply = await link.call("INCR", "n")
        peak = max(peak, link.opened)
        return int(reply)

    try:
        replies = await asyncio.gather(*(incr() for _ in range(BURST)))
        assert sorted(replies) == list(range(1, BURST + 1))  # every call answered once
        assert peak <= 50
        assert await asyncio.to_thread(_clients, own_server) <= 50
    finally:
        await link.aclose()


async def test_the_url_sets_the_cap_of_an_apps_store(own_server: RedisServer) -> None:
    app = duetime.App(f"{own_server.url}?max_connections=4", namespace="pool")
    app.declare("mail")
    async with app:
        await asyncio.gather(*(app.schedule("mail", f"m{i}", delay=60) for i in range(APP_BURST)))
        assert (await app.counts("mail"))["due"] == APP_BURST
        # Its own client's four, and the listings' (redis-py, which reads the option too).
        assert await asyncio.to_thread(_clients, own_server) <= 4 + 4


def test_the_cap_has_a_default() -> None:
    link = RespClient(Fixed(parse_url("redis://h")))
    assert link.max_connections == MAX_CONNECTIONS == 50


async def test_a_call_cancelled_while_it_waits_gives_up_its_turn(own_server: RedisServer) -> None:
    link = RespClient(Fixed(parse_url(own_server.url)), max_connections=2)
    try:
        # Both connections held by calls that block until a value is pushed.
        held = [asyncio.create_task(link.call("BLPOP", f"q{i}", 0)) for i in range(2)]
        await eventually(lambda: link.opened == 2, what="both connections held")
        waiting = asyncio.create_task(link.call("PING"))
        await eventually(lambda: len(link._waiting) == 1, what="a call waiting")
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await asyncio.to_thread(_push, own_server)
        assert [r[1] for r in await asyncio.gather(*held)] == [b"v", b"v"]
        # The cancelled call took no place: the cap's two serve the next burst.
        assert await asyncio.gather(*(link.call("PING") for _ in range(500))) == [b"PONG"] * 500
        assert link.opened <= 2
    finally:
        await link.aclose()


async def test_connections_lost_in_a_burst_free_their_places(own_server: RedisServer) -> None:
    link = RespClient(Fixed(parse_url(own_server.url)), max_connections=10)
    try:
        first = [asyncio.create_task(link.call("INCR", "n")) for _ in range(BURST)]
        await eventually(lambda: link.opened == 10, what="the cap reached")
        with own_server.client() as admin:
            admin.client_kill_filter(_type="normal", skipme=True)
        second = [asyncio.create_task(link.call("INCR", "n")) for _ in range(BURST)]
        replies = await asyncio.gather(*first, *second)
        assert len(replies) == 2 * BURST  # every call answered, after the kill too
        assert link.opened <= 10
        assert await asyncio.to_thread(_clients, own_server) <= 10
    finally:
        await link.aclose()


def _push(server: RedisServer) -> None:
    with server.client() as admin:
        admin.rpush("q0", "v")
        admin.rpush("q1", "v")
