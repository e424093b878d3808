"""duetime.admin.bulk on Redis and SQLite: thousands of tasks retried or cancelled a page at a
time, with the listing changing under the run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta

import pytest
from click.testing import CliRunner

import duetime
from duetime.admin import bulk
from duetime.cli import main
from duetime.stores.base import Store
from tests.helpers import file_bad_id, file_occurrence, make_dead

MANY = 3000


@pytest.fixture
async def app(redis_or_sqlite_url: str, namespace: str) -> AsyncIterator[duetime.App]:
    app = duetime.App(redis_or_sqlite_url, namespace=namespace)
    app.declare("mail", "report")
    app.declare("split", partitions=4)
    yield app
    await app.close()


async def test_every_dead_task_is_retried_with_progress(app: duetime.App) -> None:
    await make_dead(app, "mail", MANY)
    await app.schedule("mail", "waiting", delay=timedelta(hours=1))
    seen: list[tuple[int, int]] = []

    retried = await bulk.retry_all(app, "mail", progress=lambda d, t: seen.append((d, t)))

    assert retried == MANY
    assert await app.counts("mail") == {"due": MANY + 1, "running": 0, "dead": 0}
    assert seen[-1] == (MANY, MANY) and len(seen) >= MANY // bulk.BATCH
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    info = await app.get("mail", "d1234")
    assert info is not None and info.state == "due" and info.attempts == 0 and not info.error


async def test_every_dead_task_of_a_partitioned_type_is_cancelled(app: duetime.App) -> None:
    await make_dead(app, "split", 1000)
    await app.schedule_many(
        duetime.Task("split", f"w{n}", delay=timedelta(hours=1)) for n in range(50)
    )

    assert await bulk.cancel_all(app, "split", "dead") == 1000
    assert await app.counts("split") == {"due": 50, "running": 0, "dead": 0}
    assert await bulk.cancel_all(app, "split", "dead") == 0


async def test_due_and_running_tasks_are_cancelled_and_dead_ones_kept(app: duetime.App) -> None:
    await make_dead(app, "mail", 300)
    await app.schedule_many(duetime.Task("mail", f"r{n}") for n in range(450))
    store: Store = await app.open()
    batch = await store.claim(
        "mail",
        now_ms=await app.now_ms(),
        limit=450,
        lease_ms=60_000,
        max_stalls=0,
        at_most_once=False,
    )
    assert len(batch.claims) == 450
    await app.schedule_many(
        duetime.Task("mail", f"f{n}", delay=timedelta(hours=1)) for n in range(700)
    )

    assert await bulk.cancel_all(app, "mail", "running") == 450
    assert await bulk.cancel_all(app, "mail", "due") == 700
    # Cancelled running tasks keep their lease until their run ends, with no record.
    assert await app.counts("mail") == {"due": 0, "running": 450, "dead": 300}
    assert await bulk.cancel_all(app, "mail", "running") == 0


async def test_tasks_dying_during_a_retry_all_are_left_dead(app: duetime.App) -> None:
    """The listing changes under the run: every task is either retried once or still dead,
    none twice, and the run ends although tasks keep dying."""
    await make_dead(app, "mail", MANY)
    retried, _ = await asyncio.gather(
        bulk.retry_all(app, "mail"), make_dead(app, "mail", 500, prefix="late")
    )

    counts = await app.counts("mail")
    assert counts["due"] == retried and counts["due"] + counts["dead"] == MANY + 500
    assert MANY <= retried <= MANY + 500
    for n in range(0, MANY, 97):
        info = await app.get("mail", f"d{n}")
        assert info is not None and info.state == "due"


async def test_bad_arguments_change_nothing(app: duetime.App) -> None:
    await make_dead(app, "mail", 3)
    with pytest.raises(duetime.ValidationError, match="state"):
        await bulk.cancel_all(app, "mail", "lost")  # type: ignore[arg-type]
    with pytest.raises(duetime.UnknownTaskType):
        await bulk.retry_all(app, "mial")
    assert (await app.counts("mail"))["dead"] == 3


#: The longest id a user may pick: its occurrences' ids are longer.
LONGEST = "é" * 100


async def test_occurrence_ids_over_200_bytes_are_retried_and_cancelled_with_the_rest(
    app: duetime.App,
) -> None:
    await make_dead(app, "mail", 300)
    long_id = await file_occurrence(app, "mail", LONGEST)
    assert len(long_id.encode()) > 200

    assert await bulk.retry_all(app, "mail") == 301
    info = await app.get("mail", long_id)
    assert info is not None and info.state == "due"
    assert (await app.counts("mail"))["dead"] == 0

    await file_occurrence(app, "report", LONGEST)
    await make_dead(app, "report", 10)
    assert await bulk.cancel_all(app, "report", "dead") == 11
    assert await app.counts("report") == {"due": 1, "running": 0, "dead": 0}  # the series


async def test_an_id_no_call_takes_is_named_and_every_other_task_is_done(
    app: duetime.App,
) -> None:
    await make_dead(app, "mail", 250)
    await file_bad_id(app, "mail", "bad\nid")  # control characters: refused by every call

    with pytest.raises(duetime.BulkIncomplete) as caught:
        await bulk.retry_all(app, "mail")
    assert caught.value.done == 250 and list(caught.value.failed) == ["bad\nid"]
    assert "control characters" in caught.value.failed["bad\nid"]
    assert "'bad\\nid'" in str(caught.value)
    assert await app.counts("mail") == {"due": 250, "running": 0, "dead": 1}

    await make_dead(app, "mail", 30, prefix="late")  # and the 250 due with them
    with pytest.raises(duetime.BulkIncomplete) as caught:
        await bulk.cancel_all(app, "mail", "dead")
    assert caught.value.done == 280 and list(caught.value.failed) == ["bad\nid"]
    assert await app.counts("mail") == {"due": 0, "running": 0, "dead": 1}


def cli(app: duetime.App, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        main, ["--log-level", "WARNING", *args, "--url", app.url, "--namespace", app.namespace]
    )
    return result.exit_code, result.stdout, result.stderr


async def test_the_cli_retries_occurrence_ids_over_200_bytes_and_names_what_it_cannot(
    app: duetime.App,
) -> None:
    await make_dead(app, "mail", 20)
    long_id = await file_occurrence(app, "mail", LONGEST)

    code, out, err = await asyncio.to_thread(cli, app, "retry", "mail", "--all")
    assert (code, out) == (0, "retried 21 dead mail tasks\n"), err
    assert await app.counts("mail") == {"due": 22, "running": 0, "dead": 0}  # and the series

    await file_occurrence(app, "report", LONGEST)
    await file_bad_id(app, "report", "bad\x7fid")
    code, out, err = await asyncio.to_thread(
        cli, app, "cancel", "report", "--all", "--state", "dead"
    )
    assert code == 1 and out == "cancelled 1 dead report task\n"
    assert "'bad\\x7fid'" in err and "1 dead report tasks could not be cancelled" in err
    assert await app.counts("report") == {"due": 1, "running": 0, "dead": 1}
    assert long_id.startswith(LONGEST)


class FailingApp(duetime.App):
    """An app whose store fails one call mid-bulk; the others take a while, and each notes
    when it landed."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.landed: list[float] = []

    async def retry(self, task_type: str, task_id: str, *, at: datetime | None = None) -> datetime:
        if task_id == "d5":
            await asyncio.sleep(0.02)
            raise duetime.StoreUnavailable("the connection dropped")
        await asyncio.sleep(0.1)
        due = await super().retry(task_type, task_id, at=at)
        self.landed.append(time.monotonic())
        return due

    async def cancel(self, task_type: str, task_id: str, *, connection: object = None) -> bool:
        if task_id == "d5":
            await asyncio.sleep(0.02)
            raise duetime.StoreUnavailable("the connection dropped")
        await asyncio.sleep(0.1)
        done = await super().cancel(task_type, task_id)
        self.landed.append(time.monotonic())
        return done


async def test_when_the_store_fails_mid_bulk_nothing_acts_behind_the_error(
    redis_or_sqlite_url: str, namespace: str
) -> None:
    app = FailingApp(redis_or_sqlite_url, namespace=namespace)
    app.declare("mail", "report")
    sweeps: dict[str, Callable[[], Awaitable[int]]] = {
        "mail": lambda: bulk.retry_all(app, "mail"),
        "report": lambda: bulk.cancel_all(app, "report", "dead"),
    }
    try:
        for task_type, sweep in sweeps.items():
            await make_dead(app, task_type, 40)
            app.landed.clear()
            with pytest.raises(duetime.StoreUnavailable):
                await sweep()
            raised = time.monotonic()
            await asyncio.sleep(0.3)  # time for calls left running to land
            assert [t for t in app.landed if t > raised] == [], task_type
            # Every call that acted is one of those seen landing before the error.
            assert (await app.counts(task_type))["dead"] == 40 - len(app.landed), task_type
    finally:
        await app.close()
