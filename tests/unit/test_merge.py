"""deep_merge: the rule of periodic reschedules (objects merge, lists and scalars are replaced)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from duetime import deep_merge

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=10,
)
objects = st.dictionaries(st.text(max_size=3), json_values, max_size=4)


def test_nested_objects_merge_and_lists_are_replaced() -> None:
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 1, "keep": True}
    changes = {"a": {"y": [3], "z": {"deep": 1}}, "b": {"now": "an object"}}

    assert deep_merge(base, changes) == {
        "a": {"x": 1, "y": [3], "z": {"deep": 1}},
        "b": {"now": "an object"},
        "keep": True,
    }


def test_keys_the_javascript_merge_skips_are_skipped() -> None:
    assert deep_merge({}, {"__proto__": {"x": 1}, "constructor": 1, "ok": 2}) == {"ok": 2}


@given(objects, objects)
def test_neither_argument_is_changed_and_nothing_is_shared(
    base: dict[str, Any], changes: dict[str, Any]
) -> None:
    base_before, changes_before = copy.deepcopy(base), copy.deepcopy(changes)

    merged = deep_merge(base, changes)

    assert base == base_before and changes == changes_before
    for value in _containers(merged):
        assert all(value is not other for other in _containers(base) + _containers(changes))


@given(objects, objects)
def test_every_key_of_the_changes_wins_unless_both_sides_are_objects(
    base: dict[str, Any], changes: dict[str, Any]
) -> None:
    merged = deep_merge(base, changes)
    for key, value in changes.items():
        if key in ("__proto__", "constructor", "prototype"):
            continue
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            assert merged[key] == deep_merge(base[key], value)
        else:
            assert merged[key] == value
    for key, value in base.items():
        if key not in changes:
            assert merged[key] == value


@given(objects)
def test_merging_nothing_or_itself_changes_nothing(base: dict[str, Any]) -> None:
    clean = {k: v for k, v in base.items() if k not in ("__proto__", "constructor", "prototype")}
    assert deep_merge(base, {}) == base
    assert deep_merge(clean, clean) == clean


def _containers(value: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(value, dict):
        found.append(value)
        for item in value.values():
            found += _containers(item)
    elif isinstance(value, list):
        found.append(value)
        for item in value:
            found += _containers(item)
    return found
