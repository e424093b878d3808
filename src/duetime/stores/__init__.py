"""The stores behind the Store protocol, and which one a URL names."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from duetime.errors import ConfigError

if TYPE_CHECKING:
    from duetime.stores.base import Durability, Store
    from duetime.stores.redis.resp.credentials import Credentials

#: The environment variable App() reads when it is given no URL.
URL_ENV = "DUETIME_URL"
#: The embedded default: a SQLite file in the working directory.
DEFAULT_URL = "sqlite:///duetime.db"
REDIS_SCHEMES = (
    "redis",
    "rediss",
    "unix",
    "redis+sentinel",
    "rediss+sentinel",
    "redis+cluster",
    "rediss+cluster",
)
POSTGRES_SCHEMES = ("postgresql", "postgres")


def resolve_url(url: str | None) -> str:
    """``url``, else ``$DUETIME_URL``, else the SQLite default."""
    if url is None:
        url = os.environ.get(URL_ENV) or DEFAULT_URL
    if not isinstance(url, str) or not url.strip():
        raise ConfigError("the store URL must be a non-empty string")
    return url.strip()


def open_store(
    url: str,
    *,
    namespace: str,
    allow_eviction: bool = False,
    durability: Durability = "local",
    create: bool = True,
    redis_credentials: Credentials | None = None,
) -> Store:
    """A store object for ``url`` (not yet opened), picked by the URL's scheme; with
    ``create`` off, opening it does not create a SQLite file that does not exist (it fails,
    naming the path): for reads, which must not leave an empty database behind a typo.

    Raises:
        ConfigError: an unknown scheme, a durability the store cannot give, or
            ``redis_credentials`` for a store that is not Redis.
    """
    scheme = urlsplit(url).scheme.lower()
    if scheme in REDIS_SCHEMES:
        from duetime.stores.redis.config import RedisConfig
        from duetime.stores.redis.store import RedisStore

        config = RedisConfig(
            url=url,
            namespace=namespace,
            allow_eviction=allow_eviction,
            durability=durability,
            credentials=redis_credentials,
        )
        return RedisStore(config)
    if redis_credentials is not None:
        raise ConfigError(f"redis_credentials needs a Redis URL, not {redact(url)!r}")
    if durability != "local":
        raise ConfigError(
            f"durability={durability!r} needs a store with replicas (Redis); "
            f"{redact(url)!r} has none"
        )
    if scheme == "sqlite":
        from dataclasses import replace

        from duetime.stores.sqlite.store import SqliteStore, parse_sqlite_url

        return SqliteStore(replace(parse_sqlite_url(url, namespace=namespace), create=create))
    if scheme in POSTGRES_SCHEMES:
        return _postgres(url, namespace)
    raise _unknown_scheme(url)


def check_scheme(url: str) -> str:
    """``url``, if its scheme names a store duetime has (nothing is imported or parsed
    beyond the scheme): what ``App(url)`` checks as it is made.

    Raises:
        ConfigError: an unknown scheme (``redsi://``), named with the schemes there are.
    """
    if urlsplit(url).scheme.lower() not in (*REDIS_SCHEMES, *POSTGRES_SCHEMES, "sqlite"):
        raise _unknown_scheme(url)
    return url


def _unknown_scheme(url: str) -> ConfigError:
    scheme = urlsplit(url).scheme.lower()
    return ConfigError(
        f"unknown store URL scheme {scheme or '(none)'!r} in {redact(url)!r}: use redis://, "
        "rediss://, unix://, redis+sentinel://, redis+cluster://, postgresql:// or "
        "sqlite:///path"
    )


def _postgres(url: str, namespace: str) -> Store:
    try:
        from duetime.stores.postgres.store import PostgresStore, parse_postgres_url
    except ImportError as exc:
        raise ConfigError(
            f"the PostgreSQL store needs psycopg 3 and its pool ({exc}): install duetime's "
            "postgres extra, pip install 'duetime[postgres]'"
        ) from exc
    return PostgresStore(parse_postgres_url(url, namespace=namespace))


def redact(url: str) -> str:
    """The URL with any password replaced by ***, for logs and errors."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def shown_url(url: str) -> str:
    """The URL as a message names the store: any password hidden, and a SQLite file's path
    made absolute (a relative one names another file in another working directory, the
    way a worker and a producer end up on two stores)."""
    if urlsplit(url).scheme.lower() != "sqlite":
        return redact(url)
    from duetime.stores.sqlite.config import parse_sqlite_url

    try:
        path = parse_sqlite_url(url, namespace="default").path
    except ConfigError:
        return url
    return f"sqlite:///{path.as_posix()}"
