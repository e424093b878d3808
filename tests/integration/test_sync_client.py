"""The blocking client: calls from many threads, and a close() that leaves no thread hanging."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import duetime
from tests.servers import RedisServer

THREADS = 8


def _hammer(client: duetime.SyncClient, n: int, outcomes: list[str]) -> None:
    """Schedule until the client is closed; note how each thread's calls ended."""
    try:
        for k in range(10_000):
            client.schedule("job", f"t{n}-{k}", delay=3600)
    except duetime.ClientClosed:
        outcomes.append("closed")
    except Exception as exc:  # any other ending is what the test looks for
        outcomes.append(f"{type(exc).__name__}: {exc}")
    else:
        outcomes.append("done")


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_close_while_threads_call_ends_every_call_with_a_clear_error(
    kind: str, tmp_path: Path, redis_url: str, namespace: str
) -> None:
    url = f"sqlite:///{tmp_path / 'sync.db'}" if kind == "sqlite" else redis_url
    app = duetime.App(url, namespace=namespace)
    app.declare("job")
    client = app.sync()
    outcomes: list[str] = []
    threads = [
        threading.Thread(target=_hammer, args=(client, n, outcomes), daemon=True)
        for n in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.3)  # every thread is calling
    client.close()
    for thread in threads:
        thread.join(10)

    assert not [t for t in threads if t.is_alive()], "a thread is still blocked in a call"
    assert outcomes == ["closed"] * THREADS
    with pytest.raises(duetime.ClientClosed, match="closed"):
        client.get("job", "t0-0")


def test_close_with_calls_stuck_on_the_server_returns_within_its_bound(namespace: str) -> None:
    with RedisServer() as server:
        app = duetime.App(server.url, namespace=namespace)
        app.declare("job")
        client = app.sync()
        client.counts("job")  # connected
        outcomes: list[str] = []
        admin = server.client()
        try:
            admin.client_pause(5000)  # the server answers no one for 5 s
            threads = [
                threading.Thread(target=_hammer, args=(client, n, outcomes), daemon=True)
                for n in range(THREADS)
            ]
            for thread in threads:
                thread.start()
            time.sleep(0.2)
            started = time.monotonic()
            client.close(timeout=0.5)
            took = time.monotonic() - started
            for thread in threads:
                thread.join(5)
        finally:
            admin.client_unpause()
            admin.close()

    assert took < 3, took
    assert not [t for t in threads if t.is_alive()], "a thread is still blocked in a call"
    assert outcomes == ["closed"] * THREADS
