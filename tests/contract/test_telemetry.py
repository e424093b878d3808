"""Store.telemetry: the workers' heartbeat records and the per-minute counts, on every
store. Records lapse by time; counts add up, and an hour later they are gone."""

from __future__ import annotations

import duetime
from duetime.features.telemetry.presence import read_workers, seen_since
from duetime.stores.capabilities import HasTelemetry
from duetime.stores.telemetry import KEEP_MINUTES, MINUTE_MS, minute_of
from tests.helpers import eventually, running

T0 = minute_of(1_900_000_000_000)


async def test_a_record_is_live_until_it_lapses_and_forgotten_by_a_later_beat(
    store: HasTelemetry,
) -> None:
    t = store.telemetry
    assert await t.workers(T0) == []
    await t.beat("w1", '{"id": "w1", "n": 1}', T0 + 15_000, T0)
    await t.beat("w2", '{"id": "w2", "é": "ü"}', T0 + 5_000, T0)
    assert await t.workers(T0) == ['{"id": "w1", "n": 1}', '{"id": "w2", "é": "ü"}']
    await t.beat("w1", '{"id": "w1", "n": 2}', T0 + 25_000, T0 + 10_000)  # beats again
    # w2 did not beat again: it lapsed.
    assert await t.workers(T0 + 10_000) == ['{"id": "w1", "n": 2}']
    # w1 stops: its record written once more, lapsed (Heartbeat.finish), still read back
    # as of a moment before, and forgotten by the next beat of any worker after.
    await t.beat("w1", '{"id": "w1", "n": 3}', T0 + 11_000, T0 + 12_000)
    assert await t.workers(T0 + 12_000) == []
    assert await t.workers(T0 + 10_000) == ['{"id": "w1", "n": 3}']
    await t.beat("w3", '{"id": "w3"}', T0 + 30_000, T0 + 12_000)
    assert await t.workers(T0) == ['{"id": "w3"}']


async def test_a_worker_counts_as_seen_for_the_types_it_runs_only(app: duetime.App) -> None:
    """``duetime worker app --type other`` is no worker of ``mail`` (``duetime schedule
    mail ...`` warns that none ran), while it runs and after it stopped."""
    worker_app = duetime.App(store=(await app.open()).copy(), namespace=app.namespace)

    @worker_app.task("mail")
    async def mail(payload: object) -> None: ...

    @worker_app.task("other")
    async def other(payload: object) -> None: ...

    store = await app.open()
    since = await app.now_ms() - 60_000  # as the CLI asks: a stopped worker lapses 1 s back
    assert not await seen_since(store, since)
    try:
        async with running(worker_app, types=["other"]):
            await eventually(lambda: seen_since(store, since), within=25, what="the beat")
            assert await seen_since(store, since, "other")
            assert not await seen_since(store, since, "mail")
        assert await seen_since(store, since, "other")  # stopped: seen a moment ago
        assert not await seen_since(store, since, "mail")
        (info,) = await read_workers(store, since)
        assert info.types == ("other",)
    finally:
        await worker_app.close()


async def test_counts_add_up_per_minute_type_and_kind(store: HasTelemetry) -> None:
    t = store.telemetry
    now = T0 + 30_000
    await t.add_counts({(T0, "mail", "fired"): 3, (T0, "mail", "late.5"): 2}, now)
    await t.add_counts(
        {(T0, "mail", "fired"): 4, (T0 - MINUTE_MS, "mail", "failed"): 1, (T0, "ré", "x"): 1},
        now,
    )
    assert await t.counts_since(T0 - MINUTE_MS) == {
        (T0, "mail", "fired"): 7,
        (T0, "mail", "late.5"): 2,
        (T0 - MINUTE_MS, "mail", "failed"): 1,
        (T0, "ré", "x"): 1,
    }
    assert await t.counts_since(T0) == {
        (T0, "mail", "fired"): 7,
        (T0, "mail", "late.5"): 2,
        (T0, "ré", "x"): 1,
    }
    assert await t.counts_since(T0 + MINUTE_MS) == {}


async def test_counts_older_than_the_hour_kept_are_not_added(store: HasTelemetry) -> None:
    t = store.telemetry
    now = T0
    old = T0 - KEEP_MINUTES * MINUTE_MS
    await t.add_counts({(old, "mail", "fired"): 5, (T0, "mail", "fired"): 1}, now)
    assert await t.counts_since(old) == {(T0, "mail", "fired"): 1}
