"""A task's metadata without a store: what is accepted, its place in the record (old records
without it), and that every outcome of a run keeps it."""

from __future__ import annotations

import math
from typing import Any

import pytest

import duetime
from duetime.calls.newtask import new_task
from duetime.errors import SchemaError
from duetime.meta import MAX_META_BYTES, encode_meta
from duetime.model import Task
from duetime.record import Record, plain_payload
from duetime.stores.base import Claim
from duetime.triggers.base import Next
from duetime.triggers.periodic import Periodic
from duetime.worker import outcome


def test_metadata_is_a_small_json_object_and_an_empty_one_is_none() -> None:
    assert encode_meta({"tenant": "t7", "n": [1, {"x": None}]}) == (
        '{"tenant":"t7","n":[1,{"x":null}]}'
    )
    assert encode_meta(None) is None and encode_meta({}) is None
    assert encode_meta({"k": "x" * (MAX_META_BYTES - 8)}) is not None  # 4096 bytes exactly


@pytest.mark.parametrize(
    ("meta", "problem"),
    [
        ([1], "must be a dict"),
        ({1: "x"}, "is not a string"),
        ({"deep": {2: "x"}}, "at meta.deep"),
        ({"nan": math.nan}, "cannot be written as JSON"),
        ({"o": object()}, "cannot be written as JSON"),
        ({"k": "x" * MAX_META_BYTES}, "over the limit of 4096"),
    ],
)
def test_anything_else_is_refused_naming_meta(meta: Any, problem: str) -> None:
    with pytest.raises(duetime.ValidationError, match=problem) as caught:
        encode_meta(meta)
    assert caught.value.field == "meta"
    with pytest.raises(duetime.ValidationError):
        new_task(Task("t", "i", meta=meta), 0, 1000)


def test_a_record_keeps_it_under_md_and_an_old_record_has_none() -> None:
    new = new_task(Task("t", "i", payload={"a": 1}, meta={"tenant": "t7"}), 5, 1000)
    assert new.record == '{"p":{"a":1},"md":{"tenant":"t7"}}'
    record = Record.decode(new.record)
    assert record.meta_json == '{"tenant":"t7"}' and record.payload == {"a": 1}
    assert Record.decode(record.encode()) == record
    assert plain_payload(new.record) is None  # not the hot path's plain record
    assert Record.decode('{"p":{"a":1}}').meta_json is None  # a record of before
    assert new_task(Task("t", "i", meta={}), 5, 1000).record == '{"p":{}}'
    with pytest.raises(SchemaError, match="field 'md'"):
        Record.decode('{"p":{},"md":[1]}')


def test_every_outcome_of_a_run_keeps_the_metadata() -> None:
    claim = Claim("i", 1, 0, 100, '{"p":{},"md":{"k":1}}')
    record = Record.decode(claim.record)
    meta = '{"k":1}'
    retried = outcome.retry(claim, record, 100, None, 1, 200, "boom")
    dead = outcome.given_up(claim, record, 100, 3, "boom", series=False)
    following = Next(300, "{}", Periodic(200))
    series = outcome.given_up(claim, record, 100, 3, "boom", series=True, following=following)
    nxt = outcome.success(claim, following, None, 0, record.meta_json)
    spawn = outcome.hand_off(claim, record, 100, 150)
    for text in (retried.record, dead.record, series.record, series.dead_record, nxt.record):
        assert text is not None and Record.decode(text).meta_json == meta
    assert Record.decode(spawn.record).meta_json == meta
