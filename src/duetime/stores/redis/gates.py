"""A task type's gates on Redis: pause, resume and hold (``pause.lua``, ``hold.lua``), and
the namespace's index of paused types for listings. Claims and settles read and write the
gates in their own scripts (``claim_due.lua`` and ``settle.lua``, with ``_gate.lua``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from duetime.stores import wire
from duetime.stores.redis import names
from duetime.stores.redis.config import RedisConfig, errors
from duetime.stores.redis.keys import TypeKeys, paused_index

if TYPE_CHECKING:
    from duetime.stores.redis.calls import RedisCalls


class _Core(Protocol):
    """What the gates use of the store."""

    config: RedisConfig
    _replicas: tuple[int, int] | None

    @property
    def calls(self) -> RedisCalls: ...

    def keys(self, task_type: str) -> TypeKeys: ...

    def _wake(self, task_type: str) -> str: ...

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any: ...


class RedisGates:
    """The Redis store's gates, as a part of :class:`~.store.RedisStore`.

    The gate hash (in the type's slot) is what claims read; the index of paused types (in
    the namespace's slot: on Redis Cluster another one) is for listings. The two are
    written one after the other, never together: a type is added to the index before it is
    paused and removed after it is resumed, and a listing keeps only those whose gate says
    paused, so that an interruption between the two writes never lists a wrong state.
    """

    async def set_paused(self: _Core, task_type: str, paused: bool) -> bool:
        index = paused_index(self.config.namespace)
        if paused:
            async with errors("set_paused"):
                await names.write(self.calls, self._replicas, ("SADD", index, task_type))
        args = ["1" if paused else "0", self._wake(task_type), task_type, 0]
        changed = (await self._run("pause", [self.keys(task_type).gate], args))[0]
        if not paused:
            async with errors("set_paused"):
                await names.write(self.calls, self._replicas, ("SREM", index, task_type))
        return bool(changed)

    async def paused_types(self: _Core) -> list[str]:
        async with errors("paused_types"):
            index = paused_index(self.config.namespace)
            listed = [wire.text(t) for t in await self.calls.smembers(index)]
            # A gate key another program made something else is not paused: that read
            # fails alone (WRONGTYPE), and the listing goes on.
            flags = await asyncio.gather(
                *(self.calls.call("HGET", self.keys(t).gate, "paused") for t in listed),
                return_exceptions=True,
            )
        return sorted(t for t, flag in zip(listed, flags, strict=True) if flag == b"1")

    async def hold(self: _Core, task_type: str, until_ms: int) -> None:
        await self._run("hold", [self.keys(task_type).gate], [until_ms])
