"""Every key of a task type lives in one Redis Cluster slot."""

from __future__ import annotations

from redis.crc import key_slot

from duetime.stores.redis.keys import TypeKeys, type_keys, wake_channel


def test_all_keys_of_a_type_share_one_slot_and_types_spread() -> None:
    keys = type_keys("shop", "sendEmail")
    slots = {key_slot(getattr(keys, kind).encode()) for kind in TypeKeys._fields}
    assert len(slots) == 1
    others = {key_slot(type_keys("shop", f"type{n}").due.encode()) for n in range(50)}
    assert len(others) > 10  # types of one namespace spread over the cluster


def test_key_names_are_readable() -> None:
    keys = type_keys("shop", "sendEmail")
    assert keys.due == "duetime:{shop:sendEmail}:due"
    assert wake_channel("shop") == "duetime:{shop}:wake"
