"""The SQLite store's settings, and the ``sqlite:///path`` URL they are parsed from."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from duetime.errors import ConfigError

Synchronous = Literal["full", "normal"]

#: Durable by default: with FULL, SQLite syncs the WAL at every commit, and a simulated
#: power cut lost no acknowledged commit; with NORMAL it lost every one since the last
#: checkpoint, for many more commits a second (docs/performance.md).
DEFAULT_SYNCHRONOUS: Synchronous = "full"
#: How long a write waits for another connection's write lock before the store gives up
#: with StoreUnavailable. A write holds the lock briefly, even a big batch for well under a
#: second, so five seconds means something is wrong rather than busy.
DEFAULT_BUSY_TIMEOUT_MS = 5000
#: The longest wait accepted: beyond it a worker would look hung rather than failed.
MAX_BUSY_TIMEOUT_MS = 600_000

_OPTIONS = ("synchronous", "busy_timeout_ms")


@dataclass(frozen=True, slots=True, kw_only=True)
class SqliteConfig:
    """Where the SQLite file is and how to write it.

    Attributes:
        path: the database file, made absolute when the URL was parsed.
        namespace: keeps several apps apart in one file.
        synchronous: ``"full"`` (the default: an acknowledged write survives a power cut)
            or ``"normal"`` (many more commits a second, but a power cut or OS
            crash may lose what was written since the last checkpoint; a crash of the
            process alone loses nothing).
        busy_timeout_ms: how long a write waits for the lock held by another connection
            before failing with :class:`~duetime.errors.StoreUnavailable`.
        url: the URL it was parsed from (empty when made by hand).
        create: whether opening may create the file; when not (a read: the CLI's and the
            dashboard's), a file that does not exist is a ConfigError naming its path,
            rather than an empty database made where a typo pointed.
    """

    path: Path
    namespace: str = "default"
    synchronous: Synchronous = DEFAULT_SYNCHRONOUS
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS
    url: str = ""
    create: bool = True


def parse_sqlite_url(url: str, *, namespace: str) -> SqliteConfig:
    """Parse ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``.

    A relative path is taken from the working directory at the time of the call. Options
    go in the query string: ``synchronous=full|normal`` and ``busy_timeout_ms=<int>``.

    Args:
        url: the URL.
        namespace: the namespace of the tasks in the file.

    Returns:
        The settings, with an absolute path.

    Raises:
        ConfigError: the URL is not a ``sqlite:`` URL with a path, or an option is unknown,
            repeated or has a bad value; the message names it.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() != "sqlite":
        raise ConfigError(f"not a SQLite URL: {url!r} (expected sqlite:///path/to/file.db)")
    if parts.netloc:
        raise ConfigError(
            f"SQLite URL {url!r} names a host ({parts.netloc!r}): use three slashes for a "
            "relative path (sqlite:///data/duetime.db) and four for an absolute one "
            "(sqlite:////var/lib/duetime.db)"
        )
    if parts.fragment:
        raise ConfigError(f"SQLite URL {url!r} has a fragment (#...), which means nothing here")
    raw = unquote(parts.path)
    if not raw.startswith("/") or len(raw) < 2:
        raise ConfigError(f"SQLite URL {url!r} has no file path (expected sqlite:///file.db)")
    name = raw[1:]
    if name == ":memory:" or name.startswith("file:"):
        raise ConfigError(
            f"SQLite URL {url!r}: duetime needs a database file that several connections "
            "share, not an in-memory or URI database"
        )
    if "\0" in name:
        raise ConfigError(f"SQLite URL {url!r}: the path holds a NUL character")
    if name.endswith("/"):
        raise ConfigError(f"SQLite URL {url!r}: the path names a directory, not a file")
    options = _options(url, parts.query)
    return SqliteConfig(
        path=Path(os.path.abspath(name)),
        namespace=namespace,
        synchronous=_synchronous(options.get("synchronous", DEFAULT_SYNCHRONOUS)),
        busy_timeout_ms=_busy_timeout(options.get("busy_timeout_ms")),
        url=url,
    )


def _options(url: str, query: str) -> dict[str, str]:
    options: dict[str, str] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConfigError(f"SQLite URL {url!r}: cannot parse the query {query!r}") from None
    for key, value in pairs:
        if key not in _OPTIONS:
            raise ConfigError(
                f"SQLite URL option {key!r} is unknown: the options are {', '.join(_OPTIONS)}"
            )
        if key in options:
            raise ConfigError(f"SQLite URL option {key!r} is given twice")
        options[key] = value
    return options


def _synchronous(value: str) -> Synchronous:
    mode = value.strip().lower()
    if mode == "full":
        return "full"
    if mode == "normal":
        return "normal"
    if mode in ("off", "0", "extra", "1", "2", "3"):
        raise ConfigError(
            f"SQLite URL option synchronous={value}: duetime supports full (the default, "
            "nothing acknowledged is lost on a power cut) and normal (faster, may lose the "
            "latest writes on a power cut); write the name"
        )
    raise ConfigError(f"SQLite URL option synchronous={value!r}: expected full or normal")


def _busy_timeout(value: str | None) -> int:
    if value is None:
        return DEFAULT_BUSY_TIMEOUT_MS
    try:
        ms = int(value)
    except ValueError:
        raise ConfigError(
            f"SQLite URL option busy_timeout_ms={value!r}: expected a whole number of ms"
        ) from None
    if not 0 <= ms <= MAX_BUSY_TIMEOUT_MS:
        raise ConfigError(
            f"SQLite URL option busy_timeout_ms={ms}: expected 0 to {MAX_BUSY_TIMEOUT_MS}"
        )
    return ms
