"""The Redis store's index of cron schedule names (one hash per namespace: name -> the task
type the schedule lives in), written outside the scripts because it spans types."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from duetime.errors import StoreUnavailable
from duetime.stores import wire
from duetime.stores.redis.keys import cron_index

if TYPE_CHECKING:
    from duetime.stores.redis.calls import RedisCalls


async def add(
    client: RedisCalls, namespace: str, name: str, task_type: str, replicas: tuple[int, int] | None
) -> str:
    """Give ``name`` to ``task_type`` unless it is taken; the type it belongs to."""
    index = cron_index(namespace)
    owner = (await write(client, replicas, ("HSETNX", index, name, task_type), (index, name)))[1]
    return wire.text(owner) if owner else task_type


async def remove(
    client: RedisCalls, namespace: str, name: str, replicas: tuple[int, int] | None
) -> None:
    """Forget ``name``."""
    await write(client, replicas, ("HDEL", cron_index(namespace), name))


async def read(client: RedisCalls, namespace: str) -> dict[str, str]:
    """Every name, with its task type."""
    found = await client.hgetall(cron_index(namespace))
    return {wire.text(name): wire.text(owner) for name, owner in found.items()}


async def write(
    client: RedisCalls,
    replicas: tuple[int, int] | None,
    command: tuple[Any, ...],
    then_read: tuple[str, str] | None = None,
) -> list[Any]:
    """``command``, then an HGET of ``then_read``, then (replicated durability) ``WAIT
    replicas timeout``, on one connection."""
    commands: list[tuple[Any, ...]] = [command]
    if then_read is not None:
        commands.append(("HGET", *then_read))
    if replicas is not None:
        commands.append(("WAIT", *replicas))
    replies = await client.pipeline(commands)
    if replicas is not None and replies[-1] < replicas[0]:
        raise StoreUnavailable("no replica acknowledged the write: durability='replicated'")
    return replies
