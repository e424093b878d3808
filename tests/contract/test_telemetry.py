"""Store.telemetry: the workers' heartbeat records and the per-minute counts, on every
store. Records lapse by time; counts add up, and an hour later they are gone."""

from __future__ import annotations

from duetime.stores.capabilities import HasTelemetry
from duetime.stores.telemetry import KEEP_MINUTES, MINUTE_MS, minute_of

T0 = minute_of(1_900_000_000_000)


async def test_a_record_is_live_until_it_lapses_and_gone_once_its_worker_leaves(
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
    await t.leave("w1")
    await t.leave("w1")  # twice: no error
    assert await t.workers(T0 + 10_000) == []


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
