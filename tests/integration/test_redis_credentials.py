"""A credential hook (``redis_credentials``) for passwords that rotate: asked on each new
connection, so that after a rotation new connections use the new password."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import duetime
from duetime.errors import ConfigError, StoreError
from tests.servers import RedisCluster, RedisServer, SentinelGroup


@pytest.fixture
def acl_server() -> Iterator[RedisServer]:
    """A server of the test's own, with an ACL user ``app`` (password ``first``)."""
    with RedisServer() as server:
        with server.client() as admin:
            admin.acl_setuser("app", enabled=True, passwords=["+first"], keys=["*"])
            admin.execute_command("ACL", "SETUSER", "app", "&*", "+@all")
        yield server


def _app_connections(server: RedisServer) -> int:
    with server.client() as admin:
        return sum(1 for c in admin.client_list(_type="normal") if c["user"] == "app")


async def test_new_connections_use_the_password_the_hook_gives_now(
    acl_server: RedisServer, namespace: str
) -> None:
    current = {"password": "first"}
    asked: list[str] = []

    def credentials() -> tuple[str, str]:
        asked.append(current["password"])
        return "app", current["password"]

    app = duetime.App(acl_server.url, namespace=namespace, redis_credentials=credentials)
    app.declare("mail")
    async with app:
        await app.schedule("mail", "m1", delay=60)
        assert asked and set(asked) == {"first"}
        assert await asyncio.to_thread(_app_connections, acl_server) >= 1

        # The rotation: the server takes the new password only, and the old connections go.
        with acl_server.client() as admin:
            admin.execute_command("ACL", "SETUSER", "app", "resetpass", ">second")
            admin.execute_command("CLIENT", "KILL", "USER", "app")
        current["password"] = "second"

        await app.schedule("mail", "m2", delay=60)
        assert asked[-1] == "second"
        assert (await app.counts("mail"))["due"] == 2  # the listings' client too
        assert await asyncio.to_thread(_app_connections, acl_server) >= 1


async def test_an_async_hook_is_awaited_and_a_bad_answer_named(
    acl_server: RedisServer, namespace: str
) -> None:
    async def credentials() -> tuple[str, str]:
        return "app", "first"

    app = duetime.App(acl_server.url, namespace=namespace, redis_credentials=credentials)
    app.declare("mail")
    async with app:
        await app.schedule("mail", "m1", delay=60)

    not_a_pair: Any = lambda: "first"  # noqa: E731 - what a typo'd hook returns
    wrong = duetime.App(acl_server.url, namespace=namespace, redis_credentials=not_a_pair)
    with pytest.raises(ConfigError, match=r"must return \(username or None, password\)"):
        await wrong.open()
    stale = duetime.App(acl_server.url, namespace=namespace, redis_credentials=lambda: ("app", "x"))
    with pytest.raises(StoreError, match="WRONGPASS"):
        await stale.open()


def test_the_hook_needs_a_redis_url(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match="redis_credentials needs a Redis URL"):
        duetime.App(f"sqlite:///{tmp_path}/x.db", redis_credentials=lambda: (None, "x")).store()


def _on_every_node(nodes: RedisCluster | SentinelGroup, *command: str) -> None:
    for port in nodes.running_ports():
        with nodes.client(port) as node:
            node.execute_command(*command)


@pytest.fixture(params=["cluster", "sentinel"])
def topology(request: pytest.FixtureRequest) -> tuple[str, RedisCluster | SentinelGroup]:
    """A Cluster or a Sentinel group of the session, its URL and its data nodes."""
    if request.param == "cluster":
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        return cluster.cluster_url, cluster
    group: SentinelGroup = request.getfixturevalue("sentinel_group")
    return group.sentinel_url, group


async def test_behind_sentinel_and_on_a_cluster_new_connections_use_the_rotated_password(
    topology: tuple[str, RedisCluster | SentinelGroup], namespace: str
) -> None:
    url, nodes = topology
    user = f"u{namespace}"  # a user of the test's own on the shared servers
    setuser = ("ACL", "SETUSER", user)
    await asyncio.to_thread(_on_every_node, nodes, *setuser, "on", ">first", "~*", "&*", "+@all")
    current = {"password": "first"}
    asked: list[str] = []

    def credentials() -> tuple[str, str]:
        asked.append(current["password"])
        return user, current["password"]

    try:
        app = duetime.App(url, namespace=namespace, redis_credentials=credentials)
        app.declare("mail")
        async with app:
            await app.schedule("mail", "m1", delay=60)
            assert set(asked) == {"first"}
            await asyncio.to_thread(_on_every_node, nodes, *setuser, "resetpass", ">second")
            await asyncio.to_thread(_on_every_node, nodes, "CLIENT", "KILL", "USER", user)
            current["password"] = "second"
            await app.schedule("mail", "m2", delay=60)
            assert (await app.counts("mail"))["due"] == 2
            assert asked[-1] == "second"
    finally:
        await asyncio.to_thread(_on_every_node, nodes, "ACL", "DELUSER", user)
