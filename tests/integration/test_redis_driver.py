"""Every connection duetime opens to Redis names itself to the server as duetime's
(``CLIENT SETINFO``, seen in ``CLIENT LIST`` on Redis 7.2 and later): duetime's own client
as ``lib-name=duetime``, in the round trip that introduces a connection (an older server
refuses it, which is ignored); redis-py's (a cluster's) as
``lib-name=redis-py(duetime_v<version>)``, a name that, given, spares each new connection
redis-py's look-up of its own version."""

from __future__ import annotations

import asyncio

import redis

import duetime
from duetime.stores.redis.cluster import connect_cluster
from duetime.stores.redis.resp.address import parse_url
from duetime.stores.redis.resp.client import Fixed, RespClient
from tests.servers import RedisCluster, RedisServer

NAME = f"redis-py(duetime_v{duetime.__version__})"


def _named(kwargs: dict[str, object]) -> tuple[object, object]:
    info = kwargs["driver_info"]
    return getattr(info, "formatted_name", None), getattr(info, "lib_version", None)


async def test_duetimes_own_connections_name_duetime(redis_server: RedisServer) -> None:
    sent = bytearray()
    writers: list[asyncio.StreamWriter] = []
    pumps: list[asyncio.Task[None]] = []

    async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, log: bool) -> None:
        while data := await src.read(65536):
            if log:
                sent.extend(data)
            dst.write(data)

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", redis_server.port)
        writers.extend((writer, up_writer))
        pumps.append(asyncio.create_task(pump(reader, up_writer, True)))
        pumps.append(asyncio.create_task(pump(up_reader, writer, False)))

    proxy = await asyncio.start_server(relay, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    link = RespClient(Fixed(parse_url(f"redis://127.0.0.1:{port}/0")))
    try:
        assert await link.call("PING") == b"PONG"  # whatever the server said to SETINFO
    finally:
        await link.aclose()
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        for writer in writers:
            writer.close()
            await writer.wait_closed()
        proxy.close()
        await proxy.wait_closed()
    setinfo = b"$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n"
    assert setinfo + b"$8\r\nLIB-NAME\r\n$7\r\nduetime\r\n" in sent
    assert setinfo + b"$7\r\nLIB-VER\r\n" + f"${len(duetime.__version__)}".encode() in sent


async def test_the_connections_to_a_cluster_name_duetime(redis_cluster: RedisCluster) -> None:
    client = connect_cluster(redis_cluster.cluster_url)
    try:
        assert await client.ping()
        assert _named(client.connection_kwargs) == (NAME, redis.__version__)
        for node in client.get_nodes():
            assert _named(node.connection_kwargs) == (NAME, redis.__version__)
    finally:
        await client.aclose()
