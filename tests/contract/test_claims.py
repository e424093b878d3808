"""Claims, leases, tokens and outcomes: the store operations a worker relies on.

These drive the Store protocol directly with explicit times, so each rule is checked
without waiting for a clock.
"""

from __future__ import annotations

import duetime
from duetime.record import Record
from duetime.stores.base import Claim, NewTask, Outcome, Store
from tests.helpers import record_text

T0 = 1_900_000_000_000  # an arbitrary "now", in epoch ms
LEASE = 10_000
REC = record_text('{"n":1}')


async def put(store: Store, *tasks: tuple[str, int]) -> None:
    await store.schedule("mail", [NewTask(task_id, due, REC) for task_id, due in tasks])


async def claim(store: Store, now: int = T0, limit: int = 100, **options: object) -> list[Claim]:
    kw: dict[str, object] = {"lease_ms": LEASE, "max_stalls": 2, "at_most_once": False}
    kw.update(options)
    batch = await store.claim("mail", now_ms=now, limit=limit, **kw)  # type: ignore[arg-type]
    return batch.claims


async def test_due_tasks_are_claimed_earliest_first_up_to_the_limit(store: Store) -> None:
    await put(store, ("c", T0 - 1), ("a", T0 - 3), ("b", T0 - 2), ("later", T0 + 1))

    first = await claim(store, limit=2)
    rest = await claim(store, limit=10)

    assert [c.id for c in first] == ["a", "b"]
    assert [c.id for c in rest] == ["c"]
    assert [c.due_ms for c in first + rest] == [T0 - 3, T0 - 2, T0 - 1]
    assert all(c.record == REC and c.stalls == 0 for c in first + rest)


async def test_tokens_are_unique_and_increasing(store: Store) -> None:
    await put(store, *((f"t{i}", T0) for i in range(5)))
    tokens = [c.token for c in await claim(store, limit=2)] + [c.token for c in await claim(store)]
    assert tokens == sorted(tokens) and len(set(tokens)) == 5


async def test_a_claimed_task_is_running_and_claimed_only_once(store: Store) -> None:
    await put(store, ("a", T0))
    (c,) = await claim(store)

    assert await claim(store) == []
    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms, got.score_ms) == ("running", T0, T0 + LEASE)
    assert [t.id for t in await store.list_tasks("mail", "running", 10)] == ["a"]
    assert await store.count("mail") == {"due": 0, "running": 1, "dead": 0}


async def test_next_ms_is_the_earliest_due_time_or_lease_deadline(store: Store) -> None:
    await put(store, ("now", T0), ("later", T0 + 5000))
    batch = await store.claim(
        "mail", now_ms=T0, limit=10, lease_ms=LEASE, max_stalls=2, at_most_once=False
    )
    assert batch.next_ms == T0 + 5000
    await store.cancel("mail", "later")
    batch = await store.claim(
        "mail", now_ms=T0, limit=10, lease_ms=LEASE, max_stalls=2, at_most_once=False
    )
    assert batch.next_ms == T0 + LEASE  # the running task's lease deadline


async def test_done_ends_the_task(store: Store) -> None:
    await put(store, ("a", T0))
    (c,) = await claim(store)

    assert await store.settle("mail", [Outcome("done", c)], T0) == [True]
    assert await store.get("mail", "a") is None
    assert await store.count("mail") == {"due": 0, "running": 0, "dead": 0}


async def test_settling_twice_is_harmless(store: Store) -> None:
    await put(store, ("a", T0))
    (c,) = await claim(store)
    outcome = Outcome("next", c, T0 + 60_000, record_text('{"n":2}', every_ms=60_000))

    assert await store.settle("mail", [outcome], T0) == [True]
    assert await store.settle("mail", [outcome], T0) == [False]

    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms) == ("due", T0 + 60_000)


async def test_an_expired_lease_is_reaped_and_the_old_token_is_refused(store: Store) -> None:
    await put(store, ("a", T0))
    (old,) = await claim(store)

    (new,) = await claim(store, now=T0 + LEASE + 1)

    assert new.id == "a" and new.token > old.token and new.stalls == 1
    assert await store.settle("mail", [Outcome("done", old)], T0 + LEASE + 2) == [False]
    assert await store.extend("mail", [old], T0 + 99_999) == [old]
    got = await store.get("mail", "a")
    assert got is not None and got.state == "running"
    assert await store.settle("mail", [Outcome("done", new)], T0 + LEASE + 3) == [True]


async def test_a_renewed_lease_is_not_reaped(store: Store) -> None:
    await put(store, ("a", T0))
    (c,) = await claim(store)

    assert await store.extend("mail", [c], T0 + 3 * LEASE) == []
    assert await claim(store, now=T0 + 2 * LEASE) == []
    got = await store.get("mail", "a")
    assert got is not None and got.score_ms == T0 + 3 * LEASE


async def test_a_task_that_stalls_too_often_goes_to_the_dead_letters(store: Store) -> None:
    await put(store, ("a", T0))
    now = T0
    for _ in range(3):  # max_stalls=2: two stalls are survived, the third is not
        assert [c.id for c in await claim(store, now=now)] == ["a"]
        now += LEASE + 1

    assert await claim(store, now=now) == []
    got = await store.get("mail", "a")
    assert got is not None and got.state == "dead" and got.stalls == 3
    assert got.error is not None and "stalled" in got.error and got.record == REC


async def test_at_most_once_never_runs_a_task_twice(store: Store) -> None:
    await put(store, ("a", T0))
    assert len(await claim(store, at_most_once=True)) == 1

    assert await claim(store, now=T0 + LEASE + 1, at_most_once=True) == []
    got = await store.get("mail", "a")
    assert got is not None and got.state == "dead"
    assert got.error is not None and "at-most-once" in got.error


async def test_release_hands_a_task_back_as_it_was(store: Store) -> None:
    await put(store, ("a", T0 - 500))
    (c,) = await claim(store)

    assert await store.settle("mail", [Outcome("release", c, c.due_ms)], T0) == [True]

    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms, got.record) == ("due", T0 - 500, REC)
    (again,) = await claim(store)
    assert again.stalls == 0 and again.token > c.token


async def test_retry_moves_the_task_with_its_new_record_and_error(store: Store) -> None:
    await put(store, ("a", T0))
    (c,) = await claim(store)
    record = record_text('{"n":1}', occurrence_ms=T0, failures=1)

    await store.settle("mail", [Outcome("retry", c, T0 + 2000, record, "boom")], T0)

    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms, got.error) == ("due", T0 + 2000, "boom")
    assert got.record is not None and Record.decode(got.record).failures == 1
    assert await claim(store, now=T0 + 1999) == []
    assert [x.id for x in await claim(store, now=T0 + 2000)] == ["a"]


async def test_dead_letters_keep_record_and_error_and_can_be_revived(store: Store) -> None:
    await put(store, ("a", T0))
    (c,) = await claim(store)
    record = record_text('{"n":1}', failures=4)

    await store.settle("mail", [Outcome("dead", c, None, record, "ValueError: bad")], T0 + 5)

    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.score_ms) == ("dead", T0 + 5)
    assert (got.record, got.error) == (record, "ValueError: bad")
    assert [t.id for t in await store.list_tasks("mail", "dead", 10)] == ["a"]
    assert await store.revive("mail", "a", T0 + 10) is True
    assert await store.revive("mail", "a", T0 + 10) is False
    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms, got.error) == ("due", T0 + 10, None)


async def test_a_failed_occurrence_is_filed_and_the_series_goes_on(store: Store) -> None:
    await put(store, ("weekly", T0))
    (c,) = await claim(store)
    nxt = record_text('{"n":1}', every_ms=1000)
    failed = record_text('{"n":1}', occurrence_ms=T0, failures=3)

    outcome = Outcome("next", c, T0 + 1000, nxt, "boom", f"weekly@{T0}", failed)
    assert await store.settle("mail", [outcome], T0 + 1) == [True]

    series, filed = await store.get("mail", "weekly"), await store.get("mail", f"weekly@{T0}")
    assert series is not None and (series.state, series.due_ms) == ("due", T0 + 1000)
    assert filed is not None and (filed.state, filed.record, filed.error) == (
        "dead",
        failed,
        "boom",
    )


async def test_a_task_rescheduled_while_running_keeps_its_new_occurrence(store: Store) -> None:
    await put(store, ("a", T0))
    (c,) = await claim(store)
    moved = record_text('{"n":2}')
    await store.schedule("mail", [NewTask("a", T0 + 9000, moved)])

    # The old run ends, whatever it says; the new occurrence stays as scheduled.
    retry = Outcome("retry", c, T0 + 10, record_text('{"n":1}', failures=1), "boom")
    assert await store.settle("mail", [retry], T0) == [True]

    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms, got.record) == ("due", T0 + 9000, moved)
    assert await store.count("mail") == {"due": 1, "running": 0, "dead": 0}


async def test_done_of_a_rescheduled_task_keeps_the_new_occurrence(store: Store) -> None:
    await put(store, ("a", T0))
    (c,) = await claim(store)
    await store.schedule("mail", [NewTask("a", T0 + 9000, REC)])

    await store.settle("mail", [Outcome("done", c)], T0)

    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms) == ("due", T0 + 9000)


async def test_claiming_a_rescheduled_task_again_takes_its_lease_over(store: Store) -> None:
    await put(store, ("a", T0))
    (first,) = await claim(store)
    await store.schedule("mail", [NewTask("a", T0 + 1, REC)])

    (second,) = await claim(store, now=T0 + 1)

    assert second.token > first.token
    assert await store.settle("mail", [Outcome("done", first)], T0 + 2) == [False]
    assert await store.settle("mail", [Outcome("done", second)], T0 + 3) == [True]
    assert await store.get("mail", "a") is None


async def test_a_task_cancelled_while_running_stays_cancelled(store: Store) -> None:
    await put(store, ("a", T0), ("b", T0))
    ca, cb = await claim(store)
    assert await store.cancel("mail", "a") is True
    assert await store.cancel("mail", "b") is True

    kept = await store.settle(
        "mail",
        [
            Outcome("next", ca, T0 + 1000, record_text("{}", every_ms=1000)),
            Outcome("retry", cb, T0 + 1000, REC, "boom"),
        ],
        T0,
    )

    assert kept == [True, True]  # the runs ended...
    assert await store.get("mail", "a") is None  # ...and nothing came back
    assert await store.get("mail", "b") is None
    assert await store.count("mail") == {"due": 0, "running": 0, "dead": 0}


async def test_scheduling_a_dead_task_again_revives_it(store: Store) -> None:
    await put(store, ("a", T0))
    (c,) = await claim(store)
    await store.settle("mail", [Outcome("dead", c, None, REC, "boom")], T0)

    await put(store, ("a", T0 + 100))

    got = await store.get("mail", "a")
    assert got is not None and (got.state, got.due_ms, got.error) == ("due", T0 + 100, None)
    assert await store.count("mail") == {"due": 1, "running": 0, "dead": 0}


async def test_a_batch_of_outcomes_is_settled_in_one_call(store: Store) -> None:
    await put(store, *((f"t{i}", T0) for i in range(1200)))
    claims = await claim(store, limit=1200)
    assert len(claims) == 1200

    outcomes = [Outcome("done", c) for c in claims[:1000]]
    outcomes += [Outcome("retry", c, T0 + 5, REC, "x") for c in claims[1000:1100]]
    outcomes += [Outcome("done", c) for c in claims[1100:]]
    kept = await store.settle("mail", outcomes, T0)

    assert kept == [True] * 1200
    assert await store.count("mail") == {"due": 100, "running": 0, "dead": 0}


async def test_stale_and_live_outcomes_in_one_batch_are_told_apart(store: Store) -> None:
    await put(store, ("a", T0))
    (old,) = await claim(store)
    await put(store, ("b", T0 + LEASE))
    # a was reaped and is due again at T0, the time it was claimed at: before b.
    a_again, b = await claim(store, now=T0 + LEASE + 1)
    assert (a_again.id, b.id) == ("a", "b")

    kept = await store.settle("mail", [Outcome("done", old), Outcome("done", b)], T0 + LEASE + 2)

    assert kept == [False, True]
    got = await store.get("mail", "a")
    assert got is not None and got.state == "running"
    assert await store.get("mail", "b") is None


async def test_the_store_clock_is_close_to_real_time(store: Store) -> None:
    import time

    assert abs(await store.time_ms() - time.time() * 1000) < 5_000


async def test_an_app_on_this_store_sees_what_the_store_wrote(app: duetime.App) -> None:
    store = await app.open()
    await store.schedule("mail", [NewTask("raw", T0, record_text('{"k":"v"}', every_ms=5))])
    info = await app.get("mail", "raw")
    assert info is not None and info.payload == {"k": "v"} and info.every is not None


async def test_a_reaped_task_keeps_the_due_time_it_was_claimed_at(store: Store) -> None:
    await put(store, ("a", T0 - 5000))
    (first,) = await claim(store)

    (again,) = await claim(store, now=T0 + LEASE + 1)

    # Same occurrence: a crash must not change the handler's idempotency key.
    assert (again.due_ms, again.stalls) == (T0 - 5000, 1)
