"""Credentials asked for on each new connection: a hook for passwords that rotate (a
secrets manager's, a cloud's short-lived tokens), in place of the URL's."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from duetime.errors import ConfigError
from duetime.stores.redis.resp.address import Endpoint
from duetime.stores.redis.resp.client import Source

#: A callable (plain or async) that returns ``(username, password)``; ``username`` None
#: for the default user.
Credentials: TypeAlias = Callable[[], "tuple[str | None, str] | Awaitable[tuple[str | None, str]]"]


async def ask(credentials: Credentials) -> tuple[str | None, str]:
    """The hook's answer, checked.

    Raises:
        ConfigError: it is not ``(username or None, password)``.
    """
    found = credentials()
    if inspect.isawaitable(found):
        found = await found
    if (
        not isinstance(found, tuple)
        or len(found) != 2
        or not isinstance(found[1], str)
        or not isinstance(found[0], str | None)
    ):
        raise ConfigError(
            f"redis_credentials must return (username or None, password), not {found!r:.40}"
        )
    return found


class Credentialed:
    """A :class:`~.client.Source` whose endpoints carry the credentials the hook gives at
    each new connection (the client's and the subscriptions')."""

    def __init__(self, source: Source, credentials: Credentials) -> None:
        self.source = source
        self.follows_primary = source.follows_primary
        self.max_connections = source.max_connections
        self._credentials = credentials

    async def endpoint(self) -> Endpoint:
        endpoint = await self.source.endpoint()
        username, password = await ask(self._credentials)
        return endpoint._replace(username=username, password=password)

    def lost(self) -> None:
        self.source.lost()


def redis_py_provider(credentials: Credentials) -> object:
    """The hook as redis-py's ``credential_provider``, for the store's redis-py clients (the
    listings, a Cluster): asked on each of their new connections too."""
    from redis.credentials import CredentialProvider  # loaded only with redis-py's clients

    class Provider(CredentialProvider):
        def get_credentials(self) -> tuple[str] | tuple[str, str]:
            raise NotImplementedError("duetime's hook is asked from asyncio only")

        async def get_credentials_async(self) -> tuple[str] | tuple[str, str]:
            username, password = await ask(credentials)
            return (password,) if username is None else (username, password)

    return Provider()
