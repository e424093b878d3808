"""Several processes on one file: claims, and wake-ups within and across processes."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

import duetime
from duetime.stores.base import NewTask, Outcome
from duetime.stores.sqlite import wake
from duetime.stores.sqlite.store import SqliteStore
from tests.helpers import eventually, running
from tests.integration.sqlite.support import PAST, REC, ROOT, T0, make_store, url_of

CLAIMER = """
import asyncio, json, sys, time
from duetime.stores.base import NewTask, Outcome
from duetime.stores.sqlite.store import SqliteStore, parse_sqlite_url

async def main(url, name, extra):
    store = SqliteStore(parse_sqlite_url(url, namespace="ns"))
    await store.open()
    claimed, tokens, mine = [], [], [f"{name}-{i}" for i in range(extra)]
    while True:
        if mine:  # schedule a few of its own between claims, to mix writers
            batch, mine = mine[:20], mine[20:]
            now = int(time.time() * 1000)
            await store.schedule("job", [NewTask(i, now, '{"p":{}}') for i in batch])
        now = int(time.time() * 1000)
        got = await store.claim(
            "job", now_ms=now, limit=10, lease_ms=60_000, max_stalls=0, at_most_once=False
        )
        if got.claims:
            kept = await store.settle("job", [Outcome("done", c) for c in got.claims], now)
            assert all(kept), kept
            claimed += [c.id for c in got.claims]
            tokens += [c.token for c in got.claims]
        elif not mine:
            counts = await store.count("job")
            if counts["due"] == 0:
                break
    await store.close()
    print(json.dumps({"claimed": claimed, "tokens": tokens}))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


@pytest.mark.slow
async def test_processes_claiming_from_one_file_claim_each_task_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    store = make_store(path)
    await store.open()
    await store.schedule("job", [NewTask(f"t{i}", PAST, REC) for i in range(3000)])
    await store.close()

    procs = [
        await asyncio.create_subprocess_exec(
            *(sys.executable, "-c", CLAIMER, url_of(path), f"p{n}", "200"),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for n in range(3)
    ]
    try:
        done = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in procs)), 50)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    results = [(out.decode(), err.decode()) for out, err in done]

    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err
    outputs = [json.loads(out) for out, _ in results]
    claimed = [i for o in outputs for i in o["claimed"]]
    tokens = [t for o in outputs for t in o["tokens"]]
    expected = {f"t{i}" for i in range(3000)} | {f"p{n}-{i}" for n in range(3) for i in range(200)}
    assert len(claimed) == len(expected) and set(claimed) == expected
    assert len(set(tokens)) == len(tokens)
    assert all(len(o["claimed"]) > 0 for o in outputs)  # every process got a share


WAKER = """
import asyncio, sys, time
from duetime.stores.base import NewTask
from duetime.stores.sqlite.store import SqliteStore, parse_sqlite_url

async def main(url, t0):
    store = SqliteStore(parse_sqlite_url(url, namespace="ns"))
    await store.open()
    for k in range(5):
        await asyncio.sleep(0.1)
        await store.schedule("job", [NewTask(f"w{k}", t0 - k, '{"p":{}}')])
        print(time.time(), flush=True)
    await store.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


class Wakes:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int, float]] = []
        self.changed = asyncio.Event()

    def __call__(self, task_type: str, due_ms: int) -> None:
        self.seen.append((task_type, due_ms, time.time()))
        self.changed.set()

    async def first(self) -> None:
        await asyncio.wait_for(self.changed.wait(), 5)
        assert self.seen[0][:2] == ("*", 0)


async def test_a_task_another_process_schedules_wakes_listen_within_50_ms(
    store: SqliteStore, tmp_path: Path
) -> None:
    wakes = Wakes()
    listener = asyncio.create_task(store.listen(wakes))
    try:
        await wakes.first()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WAKER,
            url_of(tmp_path / "duetime.db"),
            str(T0),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
        await asyncio.sleep(0.1)
    finally:
        listener.cancel()
        with pytest.raises(asyncio.CancelledError):
            await listener
    assert proc.returncode == 0
    committed = [float(line) for line in out.decode().split()]
    woken = {due: at for task_type, due, at in wakes.seen if task_type == "job"}
    assert sorted(woken) == [T0 - k for k in range(4, -1, -1)]
    latencies = [woken[T0 - k] - committed[k] for k in range(5)]
    assert max(latencies) < 0.05, latencies


async def test_a_producer_in_the_same_process_wakes_listen_at_once(
    store: SqliteStore, tmp_path: Path
) -> None:
    wakes = Wakes()
    listener = asyncio.create_task(store.listen(wakes))
    producer = make_store(tmp_path / "duetime.db")
    other_ns = make_store(tmp_path / "duetime.db", "elsewhere")
    await producer.open()
    await other_ns.open()
    try:
        await wakes.first()
        await producer.schedule("job", [NewTask("a", T0, REC)])
        await asyncio.sleep(0)  # the wake-up is handed over by call_soon_threadsafe
        await asyncio.sleep(0)
        assert wakes.seen[1:] == [("job", T0, wakes.seen[1][2])]

        # Nothing earlier, another namespace, claims and settles: no wake-ups.
        await producer.schedule("job", [NewTask("later", T0 + 1000, REC)])
        await other_ns.schedule("job", [NewTask("b", T0 - 1000, REC)])
        got = await producer.claim(
            "job", now_ms=T0, limit=1, lease_ms=60_000, max_stalls=0, at_most_once=False
        )
        await producer.settle("job", [Outcome("done", got.claims[0])], T0)
        await asyncio.sleep(0.15)  # several polls
        assert len(wakes.seen) == 2

        # A retry that comes first wakes; the poll does not deliver it a second time.
        got = await producer.claim(
            "job", now_ms=T0 + 1000, limit=1, lease_ms=60_000, max_stalls=0, at_most_once=False
        )
        await producer.settle("job", [Outcome("retry", got.claims[0], T0 + 500, REC, "x")], T0)
        await asyncio.sleep(0.15)
        assert [w[:2] for w in wakes.seen[2:]] == [("job", T0 + 500)]
    finally:
        listener.cancel()
        with pytest.raises(asyncio.CancelledError):
            await listener
        await producer.close()
        await other_ns.close()


def _key(path: Path) -> str:
    return os.path.realpath(path)  # as the store keys its process's listeners


async def test_a_wake_up_the_poll_delivered_first_is_not_delivered_again(
    store: SqliteStore, tmp_path: Path
) -> None:
    """A writer hands its wake-up to its own process's listeners once its commit is back;
    on a busy machine the poll may have read that commit first. The wake-up's serial
    tells them apart: each is delivered once."""
    path = tmp_path / "duetime.db"
    wakes = Wakes()
    listener = asyncio.create_task(store.listen(wakes))
    producer = make_store(path)
    await producer.open()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        await wakes.first()
        await producer.schedule("job", [NewTask("a", T0, REC)])
        await eventually(lambda: len(wakes.seen) == 2, 5, "the schedule's wake-up")
        # A commit whose writer has not yet handed its wake-up over: the poll finds it.
        conn.execute(
            "UPDATE duetime_queues SET wake_serial = wake_serial + 1, wake_due_ms = ?"
            " WHERE namespace = 'ns' AND type = 'job'",
            (T0 - 5,),
        )
        await eventually(lambda: len(wakes.seen) == 3, 5, "the poll's wake-up")
        (serial,) = conn.execute(
            "SELECT wake_serial FROM duetime_queues WHERE namespace = 'ns' AND type = 'job'"
        ).fetchone()
        wake.notify(_key(path), "ns", [("job", T0 - 5, serial)])  # the writer's, late
        await asyncio.sleep(0.1)
        assert [w[:2] for w in wakes.seen[1:]] == [("job", T0), ("job", T0 - 5)]
    finally:
        conn.close()
        listener.cancel()
        with pytest.raises(asyncio.CancelledError):
            await listener
        await producer.close()


async def test_an_app_and_a_worker_in_one_process_run_a_task_without_waiting_to_poll(
    tmp_path: Path,
) -> None:
    url = url_of(tmp_path / "app.db")
    worker_app, producer = duetime.App(url, namespace="ns"), duetime.App(url, namespace="ns")
    ran = asyncio.Event()
    idle = duetime.Pacing(max_idle=timedelta(seconds=30))  # no backstop within the test

    @worker_app.task("job", pacing=idle)
    async def job(payload: dict[str, object]) -> None:
        ran.set()

    producer.declare("job")
    await producer.open()
    try:
        async with running(worker_app):
            await asyncio.sleep(0.1)  # the worker is asleep: nothing is due
            # The wake-up is timed precisely above; here the worker must act on it.
            await asyncio.wait_for(producer.schedule("job", "a"), 5)
            await asyncio.wait_for(ran.wait(), 5)
    finally:
        await worker_app.close()
        await producer.close()
