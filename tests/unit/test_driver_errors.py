"""The Redis store's one map of driver errors: an AttributeError from inside redis-py (its
cluster client closing itself under calls in flight during a failover) is StoreUnavailable;
one from anywhere else is a bug and passes as it is."""

from __future__ import annotations

import pytest
from redis._parsers.helpers import parse_info

import duetime
from duetime.stores.redis.config import errors


async def test_an_attribute_error_inside_redis_py_is_store_unavailable() -> None:
    with pytest.raises(duetime.StoreUnavailable, match="during list"):
        async with errors("list"):
            parse_info(None)  # type: ignore[no-untyped-call]  # fails inside redis-py


async def test_an_attribute_error_of_our_own_passes() -> None:
    with pytest.raises(AttributeError):
        async with errors("list"):
            None.missing  # type: ignore[attr-defined]  # noqa: B018
