"""The Redis store's deep merge (``_merge.lua``), held to :func:`duetime.deep_merge` by the
property tests' objects: the same result, and the very text duetime's Python code writes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duetime import deep_merge
from duetime.stores.packaged import folder as package_folder
from duetime.stores.redis.assemble import assemble
from duetime.validate import dump_json
from tests.servers import RedisServer
from tests.unit.test_merge import objects

_CALL = """
local record, size = merged_record(ARGV[1], ARGV[2], ARGV[3] == '1', tonumber(ARGV[4]))
if ARGV[5] == 'payload' then
  return deep_merge(ARGV[1], ARGV[2]) or false
end
return record and {record, size} or false
"""


@pytest.fixture(scope="module")
def merge_lua(redis_server: RedisServer) -> Iterator[Any]:
    folder = package_folder("duetime.stores.redis", "lua")
    source = assemble([(folder / "_merge.lua").read_text()], _CALL)
    client = redis.Redis(port=redis_server.port, decode_responses=True)
    try:
        yield client.register_script(source)
    finally:
        client.close()


# Keys of more than ASCII and escapes: the text must still come out as Python writes it.
keys = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=3)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=objects, changes=objects)
def test_the_lua_merge_is_deep_merge_to_the_byte(
    merge_lua: Any, base: dict[str, Any], changes: dict[str, Any]
) -> None:
    got = merge_lua(args=[dump_json(base), dump_json(changes), "0", 0, "payload"])

    assert got == dump_json(deep_merge(base, changes))


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.dictionaries(keys, objects, max_size=3), changes=st.dictionaries(keys, objects))
def test_nested_objects_of_any_keys_merge_as_in_python(
    merge_lua: Any, base: dict[str, Any], changes: dict[str, Any]
) -> None:
    got = merge_lua(args=[dump_json(base), dump_json(changes), "0", 0, "payload"])

    assert got == dump_json(deep_merge(base, changes))


def test_a_record_keeps_its_series_and_a_running_one_loses_its_occurrence(
    merge_lua: Any,
) -> None:
    record = '{"p":{"a":{"x":1}},"e":60000,"o":123,"f":2,"t":"Trace","q":5}'

    waits = merge_lua(args=[record, '{"a":{"y":2}}', "0", 0, "record"])
    runs = merge_lua(args=[record, '{"a":{"y":2}}', "1", 9, "record"])

    assert waits == ['{"p":{"a":{"x":1,"y":2}},"e":60000,"o":123,"f":2,"t":"Trace","q":5}', 19]
    assert runs == ['{"p":{"a":{"x":1,"y":2}},"e":60000,"q":9}', 19]
    assert merge_lua(args=['{"p":{}}', "{}", "0", 7, "record"]) == ['{"p":{},"q":7}', 2]


@pytest.mark.parametrize("bad", ['{"p":[1]}', '{"e":1}', "not json", '{"p":{"a":}', ""])
def test_a_record_it_cannot_read_is_left_to_python(merge_lua: Any, bad: str) -> None:
    assert merge_lua(args=[bad, '{"a":1}', "0", 0, "record"]) is None
