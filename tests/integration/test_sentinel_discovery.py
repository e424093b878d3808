"""Where a redis+sentinel:// client connects while a failover ends: never to the old
primary, which the sentinel leading the failover still names once it is back up (duetime's
one Sentinel discovery, for every call behind Sentinel); and discoveries made at once
(every connection reconnecting after a failover) share one and keep each sentinel."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from duetime.stores.redis.sentinel import SentinelSource, parse_sentinel_url
from tests.servers import RedisServer, SentinelGroup, SentinelServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]


def _master_state(sentinel_port: int, service: str) -> dict[str, Any]:
    with redis.Redis(port=sentinel_port, decode_responses=True) as client:
        found: dict[str, Any] = client.sentinel_master(service)
        return found


async def _leader_state(group: SentinelGroup, leader: int) -> dict[str, Any]:
    return await asyncio.to_thread(_master_state, leader, group.service)


def _leader(group: SentinelGroup, timeout: float = 20) -> int:
    """The port of the sentinel leading the failover now under way."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for sentinel in group.sentinels:
            if "failover_in_progress" in _master_state(sentinel.port, group.service)["flags"]:
                return sentinel.port
        time.sleep(0.01)
    raise AssertionError("no sentinel started a failover")


#: Failovers tried until one shows the window (the leader may end its failover before the
#: old primary is back up: about half the time on a 2-core host, so ten all miss about once
#: in a thousand runs; the test then fails saying so, rather than passing untried).
ATTEMPTS = 10


async def _named_in_the_window(group: SentinelGroup) -> tuple[int, set[int]] | None:
    """Kill the primary, restart it once every sentinel names the new one, and while the
    leader still names the old one as a healthy primary, ask a new client where the
    primary is. The old port and what the client named; None if the window was missed."""
    old = await asyncio.to_thread(group.kill_primary)
    leader = await asyncio.to_thread(_leader, group)
    await asyncio.to_thread(group.wait_failover, old)  # every sentinel names the new one...
    await asyncio.to_thread(group.start, old)  # ... and the old one is back, with its data
    # The leader first in the list, as when it answered the client's last discovery.
    others = [s.port for s in group.sentinels if s.port != leader]
    hosts = ",".join(f"127.0.0.1:{port}" for port in [leader, *others])
    url = f"redis+sentinel://{hosts}/{group.service}/0"
    # Until the leader ends its failover (about a second after the old primary is up).
    while "failover_in_progress" in (state := await _leader_state(group, leader))["flags"]:
        if state["port"] == old and not (state["is_sdown"] or state["is_odown"]):
            # A client's first discovery: the leader is asked first (an answer that can be
            # used moves its sentinel to the head of the list).
            ours = SentinelSource(parse_sentinel_url(url))
            return old, {(await ours.discover()).port}
        await asyncio.sleep(0.005)
    return None


@pytest.mark.timeout(ATTEMPTS * 20)
async def test_the_old_primary_back_up_is_not_named_by_the_failovers_leader(
    fresh_sentinel_group: SentinelGroup,
) -> None:
    group = fresh_sentinel_group
    for _ in range(ATTEMPTS):
        seen = await _named_in_the_window(group)
        if seen is not None:
            old, named = seen
            assert old not in named, f"a connection would have gone to the old primary {old}"
            return
        await asyncio.to_thread(group.wait_ready)  # the old primary a replica again
    pytest.fail(
        f"the leader ended each of {ATTEMPTS} failovers before the old primary was up: the "
        "window the test needs never opened (a very slow or very loaded machine)"
    )


#: Discoveries made at once, as by the connections the script runner sends again on after
#: a failover.
AT_ONCE = 10


@contextlib.contextmanager
def _stranger_first(group: SentinelGroup) -> Iterator[str]:
    """The group's URL with a sentinel named first whose answer is passed over (it watches
    another service), as one in the middle of a failover is."""
    with RedisServer() as other, SentinelServer("elsewhere", other.port, quorum=1) as stranger:
        ports = [stranger.port, *(s.port for s in group.sentinels)]
        hosts = ",".join(f"127.0.0.1:{port}" for port in ports)
        yield f"redis+sentinel://{hosts}/{group.service}/0"


async def test_duetimes_own_discoveries_at_once_share_one_and_keep_every_sentinel(
    sentinel_group: SentinelGroup,
) -> None:
    group = sentinel_group
    with _stranger_first(group) as url:
        source = SentinelSource(parse_sentinel_url(url))
        asked = list(source.sentinels)
        found = await asyncio.gather(*(source.endpoint() for _ in range(AT_ONCE)))
        assert {endpoint.port for endpoint in found} == {group.primary_port()}
        assert len({id(endpoint) for endpoint in found}) == 1, "one discovery for all"
        assert sorted(source.sentinels) == sorted(asked)
        assert source.sentinels[0] != asked[0], "the sentinel that answered goes first"
        source.lost()  # a connection failed: the next one asks again, the answering one first
        assert (await source.endpoint()).port == group.primary_port()
        assert source.sentinels[0] != asked[0]
