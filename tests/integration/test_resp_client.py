"""duetime's own Redis client (stores/redis/resp) against real servers: calls sent again
over a dropped connection and to a server still loading its data, error replies, text that
is not UTF-8, passwords and ACL users, databases, unix sockets, TLS, and subscriptions made
again after a kill and found lost when the server goes silent."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import duetime
from duetime.stores.redis import wake
from duetime.stores.redis.keys import type_keys
from duetime.stores.redis.resp import subscription
from duetime.stores.redis.resp.address import parse_url
from duetime.stores.redis.resp.client import Fixed, RespClient
from duetime.stores.redis.resp.errors import ConnectionLost, ReplyError
from tests.helpers import eventually
from tests.servers import RedisServer, free_port
from tests.tls import make_certificates


def _client(url: str) -> RespClient:
    return RespClient(Fixed(parse_url(url)))


async def test_a_call_after_the_server_dropped_the_connection_is_sent_again(
    redis_server: RedisServer, namespace: str
) -> None:
    link = _client(redis_server.url)
    try:
        await link.call("SET", namespace, "1")
        with redis_server.client() as admin:
            assert admin.client_kill_filter(_type="normal", skipme=True) >= 1
        assert await link.call("GET", namespace) == b"1"
    finally:
        await link.aclose()


async def test_error_replies_are_raised_or_kept_in_place(
    redis_server: RedisServer, namespace: str
) -> None:
    link = _client(redis_server.url)
    try:
        await link.call("HSET", namespace, "a", "1")
        with pytest.raises(ReplyError, match="^WRONGTYPE") as caught:
            await link.call("GET", namespace)
        assert caught.value.code == "WRONGTYPE"
        # Several commands in one round trip: each error in its place, the rest answered.
        replies = await link.call_many([("HGET", namespace, "a"), ("GET", namespace), ("PING",)])
        assert replies[0] == b"1" and replies[2] == b"PONG"
        assert isinstance(replies[1], ReplyError) and replies[1].code == "WRONGTYPE"
        # An error inside a reply (EXEC's), read by hiredis as the same class.
        replies = await link.call_many(
            [("MULTI",), ("INCR", namespace), ("HGET", namespace, "a"), ("EXEC",)]
        )
        assert isinstance(replies[3][0], ReplyError) and replies[3][1] == b"1"
    finally:
        await link.aclose()


async def test_text_that_is_not_utf8_goes_back_as_its_bytes(
    redis_server: RedisServer, namespace: str
) -> None:
    raw = b"caf\xe9 \xff"
    link = _client(redis_server.url)
    try:
        await link.call("SET", namespace, raw.decode("utf-8", "surrogateescape"))
        assert await link.call("GET", namespace) == raw
    finally:
        await link.aclose()


@pytest.fixture
def guarded_server() -> Iterator[RedisServer]:
    """A server of the test's own with a password, and an ACL user ``app``."""
    with RedisServer() as server:
        with server.client() as admin:
            admin.execute_command("ACL", "SETUSER", "app", "on", ">app-pw", "~*", "&*", "+@all")
            admin.config_set("requirepass", "s3cret")
        yield server


async def _round_trip(url: str, namespace: str) -> None:
    async with duetime.App(url, namespace=namespace) as app:
        app.declare("mail")
        await app.schedule("mail", "a", delay=60)
        info = await app.get("mail", "a")
        assert info is not None and info.task_id == "a"


async def test_a_password_and_an_acl_user_open_the_store(
    guarded_server: RedisServer, namespace: str
) -> None:
    port = guarded_server.port
    await _round_trip(f"redis://:s3cret@127.0.0.1:{port}/0", namespace)
    await _round_trip(f"redis://app:app-pw@127.0.0.1:{port}/0", namespace)


@pytest.mark.parametrize(
    ("userinfo", "refusal"), [(":wrong@", "WRONGPASS"), ("", "NOAUTH")], ids=["wrong", "none"]
)
async def test_refused_credentials_fail_at_once_naming_the_refusal(
    guarded_server: RedisServer, namespace: str, userinfo: str, refusal: str
) -> None:
    started = time.monotonic()
    with pytest.raises(duetime.StoreError, match=refusal) as caught:
        await _round_trip(f"redis://{userinfo}127.0.0.1:{guarded_server.port}/0", namespace)
    assert not isinstance(caught.value, duetime.StoreUnavailable)  # no use trying again
    assert time.monotonic() - started < 2, "not sent again and again"


async def test_a_database_other_than_0_holds_the_tasks(
    redis_server: RedisServer, namespace: str
) -> None:
    await _round_trip(f"redis://127.0.0.1:{redis_server.port}/5", namespace)
    due = type_keys(namespace, "mail").due
    with redis_server.client() as db0, redis.Redis(port=redis_server.port, db=5) as db5:
        assert not db0.exists(due)
        assert db5.zcard(due) == 1


async def test_a_unix_socket(tmp_path: Path, namespace: str) -> None:
    sock = tmp_path / "redis.sock"
    with RedisServer("--unixsocket", str(sock), "--unixsocketperm", "700"):
        await _round_trip(f"unix://{sock}?db=2", namespace)


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[RedisServer, int, Path]]:
    """A server that also speaks TLS on a port of its own; its CA certificate."""
    certs = make_certificates(tmp_path)
    tls_port = free_port()
    args = ["--tls-port", str(tls_port), "--tls-auth-clients", "no"]
    args += ["--tls-cert-file", str(certs.cert), "--tls-key-file", str(certs.key)]
    args += ["--tls-ca-cert-file", str(certs.ca)]
    with RedisServer(*args) as server:
        yield server, tls_port, certs.ca


async def test_tls_checks_the_server_and_carries_a_worker(
    tls_server: tuple[RedisServer, int, Path], namespace: str
) -> None:
    _, port, ca = tls_server
    url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={ca}"
    app = duetime.App(url, namespace=namespace)
    ran: list[str] = []

    @app.task("mail")
    async def mail(payload: dict[str, str]) -> None:
        ran.append(payload["to"])

    async with app:
        await app.schedule("mail", "a", payload={"to": "x"})
        await app.serve(burst=True)
    assert ran == ["x"]
    # The same server unchecked on request, and refused without its CA.
    await _round_trip(f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=none", namespace)
    with pytest.raises(duetime.StoreUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
        await _round_trip(f"rediss://127.0.0.1:{port}/0", namespace)


async def test_a_subscription_to_a_server_gone_silent_is_found_lost(
    monkeypatch: pytest.MonkeyPatch, namespace: str
) -> None:
    """A server that stops answering (SIGSTOP: no FIN, no RST, as a host that vanished)
    is found by the PING after a silence: the subscription raises, and its owner connects
    again. Messages before it arrive; a handler that fails does not end it."""
    monkeypatch.setattr(subscription, "HEALTH_SECONDS", 0.2)
    heard: list[bytes] = []

    def on_message(data: bytes) -> None:
        heard.append(data)
        if data == b"boom":
            raise ValueError("the handler's own bug")

    with RedisServer() as server:
        sub = await subscription.subscribed(parse_url(server.url), namespace, on_message)
        watching = asyncio.ensure_future(sub.watch())
        try:
            with server.client() as admin:
                admin.publish(namespace, "boom")
                admin.publish(namespace, "one")
            for _ in range(100):
                if len(heard) == 2:
                    break
                await asyncio.sleep(0.01)
            assert heard == [b"boom", b"one"]
            await asyncio.sleep(0.5)  # PINGs answered: still subscribed
            assert not watching.done()
            assert server.proc is not None
            os.kill(server.proc.pid, signal.SIGSTOP)
            try:
                with pytest.raises(ConnectionLost, match="no answer to PING"):
                    await asyncio.wait_for(watching, 5)
            finally:
                os.kill(server.proc.pid, signal.SIGCONT)
        finally:
            watching.cancel()
            sub.abort()


async def test_a_killed_subscription_is_made_again_and_says_so(
    redis_server: RedisServer, namespace: str
) -> None:
    """wake.subscribe connects again after its connection is killed, calls on_connect each
    time (the worker then looks for what was published meanwhile), and hears on."""
    heard: list[bytes] = []
    connected: list[int] = []
    source = Fixed(parse_url(redis_server.url))
    listener = asyncio.create_task(
        wake.subscribe(
            source, namespace, heard.append, on_connect=lambda: connected.append(1), what="t"
        )
    )
    try:
        await eventually(lambda: len(connected) == 1, 5, "subscribed")
        with redis_server.client() as admin:
            assert admin.client_kill_filter(_type="pubsub") >= 1
            await eventually(lambda: len(connected) == 2, 5, "subscribed again")
            admin.publish(namespace, "after")
        await eventually(lambda: heard == [b"after"], 5, "heard after the kill")
        assert not listener.done()
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)


async def test_a_call_to_a_server_loading_its_data_waits_for_it(namespace: str) -> None:
    """A server that restarted answers LOADING until its data is read back: the call is
    sent again until it is, and gets the data (not an error)."""
    server = RedisServer()
    server.start()
    try:
        with server.client() as admin:
            admin.execute_command("DEBUG", "POPULATE", 2000)
            admin.save()
        server.stop()
        proc = _restarted_slowly(server)
        try:
            assert await _loading(server.port), "the server never answered LOADING"
            link = _client(server.url)
            try:
                assert await link.call("GET", "key:1") == b"value:1"
            finally:
                await link.aclose()
        finally:
            proc.terminate()
            proc.wait(10)
    finally:
        server.cleanup()


def _restarted_slowly(server: RedisServer) -> subprocess.Popen[bytes]:
    """``server`` started again on its data, reading its 2,000 keys at 250 µs each: half a
    second of LOADING, answered as it goes (not once it is done)."""
    slow = ["--key-load-delay", "250", "--loading-process-events-interval-bytes", "1024"]
    return subprocess.Popen(
        [*server.command(), *slow], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


async def _loading(port: int) -> bool:
    """Wait until the server at ``port`` answers LOADING; False if it never does in 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.01)
            continue
        try:
            writer.write(b"*1\r\n$4\r\nPING\r\n")
            reply = await reader.readline()
        finally:
            writer.close()
            await writer.wait_closed()
        if reply.startswith(b"-LOADING"):
            return True
        await asyncio.sleep(0.01)
    return False
