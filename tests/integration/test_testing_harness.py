"""duetime.testing.harness: an app on a store and a clock of the test's own, and what is due
run by the worker's own pieces: one-off tasks, retries after their back-off, periodic tasks,
cron ticks, expiring entries and pollers, all following the moved clock; the app's own
store is never touched and the app is restored on exit."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

import duetime
from duetime.testing import Harness, Run, harness
from tests.servers import RedisServer

START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)  # a Monday, on the hour


@pytest.fixture(autouse=True)
def in_tmp_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test runs in an empty working directory without DUETIME_URL: an app given no
    URL would write ./duetime.db there, which no test may leave behind."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DUETIME_URL", raising=False)
    yield tmp_path
    assert list(tmp_path.iterdir()) == [], "the app's own store was written"


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest) -> str | None:
    """The harness's store: its own SQLite file (None), or the session's Redis."""
    if request.param == "sqlite":
        return None
    server: RedisServer = request.getfixturevalue("redis_server")
    return server.url


def outcomes(runs: list[Run]) -> list[tuple[str, str, int, str]]:
    return [(r.task_type, r.task_id, r.attempt, r.outcome) for r in runs]


# -- the example ---------------------------------------------------------------


async def test_a_welcome_mail_scheduled_at_signup_runs_an_hour_later() -> None:
    app = duetime.App()  # no URL: ./duetime.db, were it not for the harness
    sent: list[str] = []

    @app.task("sendWelcome")
    async def send_welcome(payload: dict[str, Any]) -> None:
        sent.append(payload["to"])

    async def signup(email: str) -> None:  # the code under test
        await app.schedule("sendWelcome", email, delay=timedelta(hours=1), payload={"to": email})

    async with harness(app) as h:
        await signup("ana@example.com")
        assert [t.task_id for t in await h.due()] == []
        assert await h.run_due() == []
        h.advance(timedelta(minutes=59, seconds=59))
        assert await h.run_due() == []
        h.advance(timedelta(seconds=1))
        assert [t.task_id for t in await h.due()] == ["ana@example.com"]
        runs = await h.run_due()
        assert [(r.task_type, r.outcome) for r in runs] == [("sendWelcome", "done")]
        assert runs[0] == Run("sendWelcome", "ana@example.com", 1, "done", None, None)
        assert sent == ["ana@example.com"]
        assert await h.due() == [] and await app.get("sendWelcome", "ana@example.com") is None
        folder = Path(h.url.removeprefix("sqlite:///")).parent
        assert folder.is_dir()
    assert not folder.exists()  # the temporary store is gone with the harness


async def test_the_clock_starts_where_asked_or_now_to_the_second() -> None:
    app = duetime.App()
    async with harness(app, start=START) as h:
        assert h.now == START
        assert await app.now_ms() == int(START.timestamp() * 1000)
        assert h.advance(90) == START + timedelta(seconds=90)
        assert h.advance(timedelta(0)) == START + timedelta(seconds=90)
        with pytest.raises(duetime.ValidationError, match="delta"):
            h.advance(timedelta(seconds=-1))
        assert h.now == START + timedelta(seconds=90)
    before = datetime.now(UTC).replace(microsecond=0)
    async with harness(app) as h:
        assert h.now.microsecond == 0
        assert before <= h.now <= datetime.now(UTC)
    with pytest.raises(duetime.ValidationError, match="start"):
        harness(app, start=datetime(2026, 1, 1))  # naive: refused at the door


async def test_plain_def_handlers_run_in_a_thread_as_in_a_worker() -> None:
    app = duetime.App()
    threads: list[str] = []

    @app.task("sync")
    def sync(payload: dict[str, Any]) -> None:
        threads.append(threading.current_thread().name)

    async with harness(app) as h:
        await app.schedule("sync", "one")
        assert outcomes(await h.run_due()) == [("sync", "one", 1, "done")]
    assert threads and threads[0] != threading.current_thread().name


# -- failures ----------------------------------------------------------------------------


def raise_for(attempt: int) -> None:
    raise ConnectionError(f"mail server down (attempt {attempt})")


async def test_retries_come_due_only_once_the_clock_passes_their_back_off(
    url: str | None,
) -> None:
    app = duetime.App()
    attempts: list[int] = []

    @app.task("mail", retries=2, backoff=duetime.Backoff.fixed(timedelta(minutes=10)))
    async def mail(payload: dict[str, Any], ctx: duetime.Context) -> None:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise_for(ctx.attempt)

    async with harness(app, url=url, start=START) as h:
        await app.schedule("mail", "m1")
        [first] = await h.run_due()
        assert (first.outcome, first.attempt) == ("retry", 1)
        assert first.error == "ConnectionError: mail server down (attempt 1)"
        assert first.traceback is not None
        assert first.traceback.startswith("Traceback (most recent call last):")
        assert "in raise_for" in first.traceback and first.traceback.rstrip().endswith(
            "ConnectionError: mail server down (attempt 1)"
        )
        assert await h.run_due() == []  # the retry is due in ten minutes
        retry = await app.get("mail", "m1")
        assert retry is not None and retry.due == START + timedelta(minutes=10)
        h.advance(timedelta(minutes=9, seconds=59))
        assert await h.run_due() == []
        h.advance(timedelta(seconds=1))
        assert outcomes(await h.run_due()) == [("mail", "m1", 2, "retry")]
        h.advance(timedelta(minutes=10))
        [last] = await h.run_due()
        assert (last.outcome, last.attempt, last.error, last.traceback) == ("done", 3, None, None)
    assert attempts == [1, 2, 3]


async def test_a_task_out_of_retries_is_dead_with_its_error_and_traceback() -> None:
    app = duetime.App()

    @app.task("charge", retries=1)
    def charge(payload: dict[str, Any], ctx: duetime.Context) -> None:
        if ctx.attempt == 1:  # asks for a retry at once: it runs in the same run_due
            raise duetime.Retry(after=timedelta(0), reason="card network busy")
        raise ValueError(f"card {payload['card']} declined")

    async with harness(app) as h:
        await app.schedule("charge", "c1", payload={"card": "4242"})
        runs = await h.run_due()
        assert outcomes(runs) == [("charge", "c1", 1, "retry"), ("charge", "c1", 2, "dead")]
        assert runs[0].error == "card network busy"
        dead = runs[1]
        assert dead.error == "ValueError: card 4242 declined"
        assert dead.traceback is not None and "in charge" in dead.traceback
        [letter] = await app.list("charge", "dead")
        assert letter.task_id == "c1" and letter.error == dead.error


# -- what comes due again -------------------------------------------------------------------


async def test_an_aborted_run_is_reported_as_aborted_and_not_retried(url: str | None) -> None:
    app = duetime.App()
    cleaned: list[str] = []

    @app.task("report", retries=3)
    async def report(payload: dict[str, Any], ctx: duetime.Context) -> None:
        try:
            # Itself, say. The cancellation may come before abort() returns: the wake-up
            # that carries it can be read before the call's own reply.
            assert await ctx.app.abort("report", ctx.task_id) == "aborted"
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cleaned.append(ctx.task_id)
            raise

    async with harness(app, url=url, start=START) as h:
        await app.schedule("report", "r1")
        runs = await asyncio.wait_for(h.run_due(), 10)  # the burst hears the abort signal
        assert outcomes(runs) == [("report", "r1", 1, "aborted")]
        assert runs[0].error is not None and "abort" in runs[0].error
        h.advance(timedelta(hours=1))
        assert await h.run_due() == []
    assert cleaned == ["r1"]


async def test_a_periodic_task_runs_once_per_period_as_the_clock_moves() -> None:
    app = duetime.App()
    seen: list[datetime] = []

    @app.task("report")
    async def report(payload: dict[str, Any], ctx: duetime.Context) -> None:
        seen.append(ctx.due)

    async with harness(app, start=START) as h:
        await app.schedule("report", "daily", delay=timedelta(hours=1), every=timedelta(hours=1))
        for hour in (1, 2, 3):
            assert await h.run_due() == []
            h.advance(timedelta(hours=1))
            assert outcomes(await h.run_due()) == [("report", "daily", 1, "done")]
            assert seen[-1] == START + timedelta(hours=hour)
        h.advance(timedelta(hours=3))  # the occurrences passed meanwhile fold into the latest
        assert outcomes(await h.run_due()) == [("report", "daily", 1, "done")]
        assert seen[-1] == START + timedelta(hours=6)
        info = await app.get("report", "daily")
        assert info is not None and info.due == START + timedelta(hours=7)


async def test_a_cron_schedule_ticks_as_the_clock_moves_with_its_missed_policy() -> None:
    app = duetime.App()
    ticks: list[datetime] = []

    @app.cron("0 * * * *", name="hourly")
    async def hourly(ctx: duetime.Context) -> None:
        ticks.append(ctx.due)

    async with harness(app, start=START) as h:
        # Written as a worker starting at the harness's start would write it.
        [schedule] = await app.list("hourly")
        assert schedule.due == START + timedelta(hours=1) and schedule.kind == "cron"
        h.advance(timedelta(minutes=59))
        assert await h.run_due() == []
        h.advance(timedelta(minutes=1))
        assert outcomes(await h.run_due()) == [("hourly", "hourly", 1, "done")]
        assert ticks == [START + timedelta(hours=1)]
        h.advance(timedelta(hours=1, seconds=30))  # 30 s late: late, not missed
        assert outcomes(await h.run_due()) == [("hourly", "hourly", 1, "done")]
        h.advance(timedelta(hours=3))  # 15:00:30: 13:00 and 14:00 missed (skipped), 15:00 late
        assert outcomes(await h.run_due()) == [("hourly", "hourly", 1, "done")]
        assert ticks == [START + timedelta(hours=n) for n in (1, 2, 5)]
        [schedule] = await app.list("hourly")
        assert schedule.due == START + timedelta(hours=6)
        h.advance(timedelta(minutes=59))
        assert await h.run_due() == []


async def test_an_expiring_entry_goes_to_its_handler_once_the_clock_passes_its_ttl() -> None:
    app = duetime.App()
    sessions = app.expiring("session", ttl=timedelta(minutes=30))
    ended: list[tuple[str, Any]] = []

    @sessions.on_expire
    async def session_ended(key: str, value: Any) -> None:
        ended.append((key, value))

    async with harness(app, start=START) as h:
        expires = await sessions.put("u1", {"cart": 3})
        assert expires == START + timedelta(minutes=30)
        h.advance(timedelta(minutes=20))
        await sessions.put("u1", {"cart": 4}, keep_ttl=True)
        assert await h.run_due() == []
        assert await sessions.get("u1") == {"cart": 4}
        h.advance(timedelta(minutes=10))
        assert await sessions.get("u1") is None  # expired, by the harness's clock
        runs = await h.run_due()  # the entry is handed off, then its expiry handled
        expiry = f"u1@{int((START + timedelta(minutes=30)).timestamp() * 1000)}"
        assert outcomes(runs) == [("session", expiry, 1, "done")]
        assert ended == [("u1", {"cart": 4})]
        assert await h.run_due() == []


async def test_a_poller_dispatches_and_its_next_call_follows_the_clock(url: str | None) -> None:
    app = duetime.App()
    waiting = ["a", "b"]
    handled: list[str] = []

    @app.poller("feed", concurrency=2, delay=lambda attempt: 60)
    async def feed(ctx: duetime.PollContext) -> list[str]:
        chosen = [i for i in waiting if i not in ctx.active_instructions][: ctx.limit]
        for instruction in chosen:
            waiting.remove(instruction)
        return chosen

    @feed.handler
    async def handle(instruction: str) -> None:
        handled.append(instruction)

    # On Redis too, where the claims and the hastener's writes take different connections:
    # each round waits for the hastener, so the runs come in the same order every time.
    async with harness(app, url=url, start=START) as h:
        assert [(t.task_type, t.task_id) for t in await h.due()] == [
            ("duetime.poller.feed", "feed")
        ]
        runs = await h.run_due()
        # The call dispatches a and b; each ends and brings the next call forward, which
        # finds nothing and waits its delay, a minute.
        assert outcomes(runs) == [
            ("duetime.poller.feed", "feed", 1, "done"),
            ("feed", "a", 1, "done"),
            ("feed", "b", 1, "done"),
            ("duetime.poller.feed", "feed", 1, "done"),
        ]
        assert handled == ["a", "b"]
        waiting.append("c")
        assert await h.run_due() == []
        h.advance(timedelta(seconds=59))
        assert await h.run_due() == []
        h.advance(timedelta(seconds=1))
        assert [(r.task_type, r.task_id) for r in await h.run_due()] == [
            ("duetime.poller.feed", "feed"),
            ("feed", "c"),
            ("duetime.poller.feed", "feed"),
        ]
        assert handled == ["a", "b", "c"]


async def test_max_runs_stops_a_task_that_keeps_coming_due() -> None:
    app = duetime.App()

    @app.task("again")
    async def again(payload: dict[str, Any]) -> None:
        await app.schedule("again", f"n{payload['n'] + 1}", payload={"n": payload["n"] + 1})

    async with harness(app) as h:
        await app.schedule("again", "n0", payload={"n": 0})
        runs = await h.run_due(max_runs=5)
        assert [r.task_id for r in runs] == ["n0", "n1", "n2", "n3", "n4"]
        assert [t.task_id for t in await h.due()] == ["n5"]
        with pytest.raises(duetime.ValidationError, match="max_runs"):
            await h.run_due(max_runs=0)


# -- the app's own state ------------------------------------------------------------------


async def test_the_app_is_restored_exactly_also_after_an_exception(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    own = tmp_path_factory.mktemp("own")  # the app's own store, outside the working directory
    app = duetime.App(f"sqlite:///{own / 'app.db'}")

    @app.task("mail")
    async def mail(payload: dict[str, Any]) -> None: ...

    await app.schedule("mail", "before", delay=60)  # the app is open on its own store
    own_clock = app.clock
    h = harness(app)
    with pytest.raises(RuntimeError, match="the test failed"):
        async with h:
            assert app.clock is h.clock and app.url == h.url
            await app.schedule("mail", "inside")
            assert [t.task_id for t in await app.list("mail")] == ["inside"]
            raise RuntimeError("the test failed")
    assert app.clock is own_clock
    assert app.url == f"sqlite:///{own / 'app.db'}"
    assert [t.task_id for t in await app.list("mail")] == ["before"]  # still open, as it was
    assert not Path(h.url.removeprefix("sqlite:///")).parent.exists()
    with pytest.raises(RuntimeError, match="async with"):
        await h.run_due()
    await app.close()


async def test_an_app_never_opened_is_left_unopened() -> None:
    app = duetime.App()

    @app.task("mail")
    async def mail(payload: dict[str, Any]) -> None: ...

    async with harness(app) as h:
        await app.schedule("mail", "m")
        assert outcomes(await h.run_due()) == [("mail", "m", 1, "done")]
    assert not app.store_known()  # DUETIME_URL is still read when the store is first needed
    with pytest.raises(duetime.DuetimeError, match="not open"):
        app.clock  # noqa: B018 - the property raises


async def test_a_feature_the_store_cannot_serve_is_refused_as_the_harness_starts() -> None:
    app = duetime.App()

    @app.on_key_expired("session:*")
    async def gone(key: str) -> None: ...

    h = harness(app)
    with pytest.raises(duetime.ConfigError, match="need a Redis store"):
        await h.__aenter__()
    assert not Path(h.url.removeprefix("sqlite:///")).parent.exists()
    assert not app.store_known()


# -- another store ------------------------------------------------------------------------


async def test_a_redis_url_gets_a_fresh_namespace_each_time(redis_server: RedisServer) -> None:
    app = duetime.App(namespace="shop")
    ran: list[str] = []

    @app.task("sendWelcome")
    async def send_welcome(payload: dict[str, Any]) -> None:
        ran.append(payload["to"])

    raw = redis.Redis.from_url(redis_server.url)
    try:
        async with harness(app, url=redis_server.url, start=START) as first:
            assert first.namespace.startswith("shop.test-") and first.url == redis_server.url
            await app.schedule("sendWelcome", "w", delay=3600, payload={"to": "ana"})
            assert any(first.namespace.encode() in key for key in raw.keys("*"))
            first.advance(3600)
            assert outcomes(await first.run_due()) == [("sendWelcome", "w", 1, "done")]
        async with harness(app, url=redis_server.url) as second:
            assert second.namespace != first.namespace
            assert await second.due() == [] and await app.get("sendWelcome", "w") is None
        assert not any(b"{shop}" in key for key in raw.keys("*"))  # the app's own: untouched
    finally:
        raw.close()
    assert ran == ["ana"]


def test_the_harness_needs_an_app() -> None:
    with pytest.raises(duetime.ValidationError, match="app"):
        Harness(object())  # type: ignore[arg-type]
