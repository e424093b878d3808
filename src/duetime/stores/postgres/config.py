"""The PostgreSQL store's settings, and the ``postgresql://`` URL they are parsed from."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from duetime.errors import ConfigError

#: The schema that holds duetime's tables unless the URL names another (``?schema=``).
DEFAULT_SCHEMA = "duetime"
#: Connections of one store's pool: a worker's claims, settles and lease renewals run side
#: by side, each a short statement, so a handful serves hundreds of running tasks.
DEFAULT_POOL_SIZE = 10
MAX_POOL_SIZE = 1000
#: libpq settings unless the URL sets them. connect_timeout (s): an unreachable server
#: fails the call rather than hanging it. TCP keepalives: a connection whose server
#: vanished without closing it (a network cut, a dead host) is found dead within about
#: 10 + 3 * 5 s, rather than the system's two hours, so a worker's call fails and retries.
LIBPQ_DEFAULTS = (
    ("connect_timeout", "5"),
    ("keepalives", "1"),
    ("keepalives_idle", "10"),
    ("keepalives_interval", "5"),
    ("keepalives_count", "3"),
)
#: A plain identifier: lower case, so that it needs no quoting in psql either, and short
#: enough for PostgreSQL's 63-byte names.
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: Options duetime reads from the query string; the others go to libpq as they are.
_OPTIONS = ("schema", "pool_size")


@dataclass(frozen=True, slots=True, kw_only=True)
class PostgresConfig:
    """Where the PostgreSQL database is and how duetime uses it.

    Attributes:
        conninfo: the URL for libpq, without duetime's own options.
        schema: the schema that holds duetime's tables (created if missing).
        namespace: keeps several apps apart in one schema.
        pool_size: the most connections the store's pool opens (its LISTEN connection,
            for wake-ups, comes on top).
        shown: the URL with its password hidden, for messages.
        url: the URL it was parsed from (empty when made by hand).
    """

    conninfo: str
    schema: str = DEFAULT_SCHEMA
    namespace: str = "default"
    pool_size: int = DEFAULT_POOL_SIZE
    shown: str = ""
    url: str = ""

    @property
    def channel(self) -> str:
        """The NOTIFY channel of this schema and namespace: a hash, since a channel name
        is an identifier of at most 63 bytes and NOTIFY reaches the whole database."""
        digest = hashlib.sha256(f"{self.schema}\0{self.namespace}".encode()).hexdigest()
        return f"duetime_{digest[:24]}"


def parse_postgres_url(url: str, *, namespace: str) -> PostgresConfig:
    """Parse ``postgresql://user:password@host:port/database?schema=duetime``.

    ``postgres://`` is taken too. duetime's options go in the query string: ``schema``
    (default ``duetime``) and ``pool_size`` (default 10); any other option (``sslmode``,
    ``application_name``, ...) is passed to libpq.

    Raises:
        ConfigError: not a PostgreSQL URL, or one of duetime's options is repeated or has
            a bad value; the message names it.
    """
    from duetime.stores import redact

    parts = urlsplit(url)
    shown = redact(url)
    if parts.scheme.lower() not in ("postgresql", "postgres"):
        raise ConfigError(f"not a PostgreSQL URL: {shown!r} (expected postgresql://...)")
    if parts.fragment:
        raise ConfigError(f"PostgreSQL URL {shown!r} has a fragment (#...), which means nothing")
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise ConfigError(f"PostgreSQL URL {shown!r}: cannot parse its query string") from None
    ours: dict[str, str] = {}
    rest: list[tuple[str, str]] = []
    for key, value in pairs:
        if key not in _OPTIONS:
            rest.append((key, value))
        elif key in ours:
            raise ConfigError(f"PostgreSQL URL option {key!r} is given twice")
        else:
            ours[key] = value
    given = {key for key, _ in rest}
    rest += [(key, value) for key, value in LIBPQ_DEFAULTS if key not in given]
    conninfo = parts._replace(query=urlencode(rest, quote_via=quote)).geturl()
    return PostgresConfig(
        conninfo=conninfo,
        schema=_schema(ours.get("schema", DEFAULT_SCHEMA)),
        namespace=namespace,
        pool_size=_pool_size(ours.get("pool_size")),
        shown=shown,
        url=url,
    )


def _schema(value: str) -> str:
    if not _SCHEMA.fullmatch(value):
        raise ConfigError(
            f"PostgreSQL URL option schema={value!r}: expected a lower-case name of letters, "
            "digits and underscores, not starting with a digit, at most 63 characters"
        )
    if value.startswith("pg_"):
        raise ConfigError(f"PostgreSQL URL option schema={value!r}: pg_ names are PostgreSQL's")
    return value


def _pool_size(value: str | None) -> int:
    if value is None:
        return DEFAULT_POOL_SIZE
    try:
        size = int(value)
    except ValueError:
        raise ConfigError(
            f"PostgreSQL URL option pool_size={value!r}: expected a whole number"
        ) from None
    if not 2 <= size <= MAX_POOL_SIZE:
        raise ConfigError(f"PostgreSQL URL option pool_size={size}: expected 2 to {MAX_POOL_SIZE}")
    return size
