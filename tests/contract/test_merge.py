"""``if_exists="merge"`` made by each store: the deep-merge rules of
:func:`duetime.deep_merge` on every store's version, and a merge that never gives up, however
fast the task it merges into changes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

import duetime
from duetime.stores.base import NewTask
from duetime.stores.capabilities import CONDITIONAL, use
from tests.helpers import record_text

AT = datetime(2031, 5, 4, 9, 30, tzinfo=UTC)

CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"a": {"x": 1, "y": [1, 2]}, "b": 1}, {"a": {"y": [3], "z": {"d": 1}}, "b": {"o": 1}}),
    ({"a": 1}, {"__proto__": {"x": 1}, "constructor": 1, "prototype": [], "ok": 2}),
    ({"n": 2**60, "f": 0.1, "e": [], "o": {}}, {"o": {"k": []}, "e": {}, "new": None}),
    ({"ü": {"ß": "✓"}, "k": "v"}, {"ü": {"ß": "x", "é": True}}),
    ({"deep": {"a": {"b": {"c": 1, "d": 2}}}}, {"deep": {"a": {"b": {"c": 3}, "e": [1]}}}),
    ({"a": [{"x": 1}]}, {"a": [{"y": 2}]}),
    ({}, {"a": {"b": {}}}),
]


@pytest.mark.parametrize(("base", "changes"), CASES)
async def test_a_merge_follows_the_deep_merge_rules(
    app: duetime.App, base: dict[str, Any], changes: dict[str, Any]
) -> None:
    await app.schedule("mail", "m1", at=AT, payload=base)

    assert await app.schedule("mail", "m1", payload=changes, if_exists="merge") == AT

    info = await app.get("mail", "m1")
    assert info is not None and info.payload == duetime.deep_merge(base, changes)


async def test_a_merge_into_a_task_that_changes_between_every_look_never_gives_up(
    app: duetime.App,
) -> None:
    """A series written again before each of the merge's sends (faster than two round trips):
    the merge is made inside the store, against what it holds then."""
    inner = await app.open()
    store = use(inner, CONDITIONAL)
    await app.schedule("mail", "s1", at=AT, payload={"n": 0})
    due = int(AT.timestamp() * 1000)
    sends = 0
    original = store.schedule_if

    async def changed_first(task_type: str, tasks: Any, now_ms: int) -> Any:
        nonlocal sends
        sends += 1
        rewrite = NewTask("s1", due, record_text(f'{{"n":{sends},"keep":true}}'))
        await inner.schedule("mail", [rewrite])
        return await original(task_type, tasks, now_ms)

    store.schedule_if = changed_first  # type: ignore[method-assign]
    try:
        await app.schedule("mail", "s1", payload={"m": {"x": 1}}, if_exists="merge")
    finally:
        del store.schedule_if

    info = await app.get("mail", "s1")
    assert info is not None
    assert info.payload == {"n": sends, "keep": True, "m": {"x": 1}}
    assert sends == 1  # merged in the first send's atomic step


async def test_a_merged_payload_over_the_limit_is_refused_and_nothing_is_written(
    store_url: str, namespace: str
) -> None:
    small = duetime.App(store_url, namespace=namespace, max_payload_bytes=64)
    small.declare("mail")
    try:
        await small.schedule("mail", "m1", at=AT, payload={"a": "x" * 40})
        with pytest.raises(duetime.ValidationError, match="merged into the pending one"):
            await small.schedule("mail", "m1", payload={"b": "y" * 30}, if_exists="merge")
        info = await small.get("mail", "m1")
        assert info is not None and info.payload == {"a": "x" * 40}
    finally:
        await small.close()
