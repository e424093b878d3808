"""Where a Redis server is and how to talk to it: the ``redis://``, ``rediss://`` and
``unix://`` URLs, read into an :class:`Endpoint`.

    redis://[[user]:password@]host[:port][/db][?option=value&...]
    rediss://...                    the same over TLS
    unix://[[user]:password@]/path/to/redis.sock[?db=N&...]

The options: ``db``, ``username``, ``password``, ``socket_connect_timeout`` (seconds),
``max_connections`` (the most a client opens at once: :mod:`.client`), and
for TLS ``ssl_cert_reqs`` (``required``, the default, ``optional`` or ``none``),
``ssl_ca_certs``, ``ssl_ca_path``, ``ssl_certfile``, ``ssl_keyfile`` and
``ssl_check_hostname`` (``true`` by default); redis-py reads them alike. Any other option
is refused, by name, rather than left unused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import parse_qsl, unquote, urlsplit

from duetime.errors import ConfigError

if TYPE_CHECKING:
    import ssl

DEFAULT_PORT = 6379
#: How long making a connection (and its handshake) may take before it counts as lost: a
#: server that does not answer in this long is down or unreachable for a worker's needs.
CONNECT_SECONDS = 5.0
SCHEMES = ("redis", "rediss", "unix")
_CERT_REQS = ("none", "optional", "required")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


class TLS(NamedTuple):
    """How a TLS connection checks the server, and the client's own certificate.

    Values of the client are NamedTuples, not dataclasses: they are made at import in a
    fifth of the time, which is a worker's start."""

    cert_reqs: str = "required"
    ca_certs: str | None = None
    ca_path: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    check_hostname: bool = True

    def context(self) -> ssl.SSLContext:
        import ssl  # only for TLS: some 6 ms of a start

        context = ssl.create_default_context(cafile=self.ca_certs, capath=self.ca_path)
        context.check_hostname = self.check_hostname and self.cert_reqs != "none"
        context.verify_mode = {
            "none": ssl.CERT_NONE,
            "optional": ssl.CERT_OPTIONAL,
            "required": ssl.CERT_REQUIRED,
        }[self.cert_reqs]
        if self.certfile:
            context.load_cert_chain(self.certfile, self.keyfile)
        return context


class Endpoint(NamedTuple):
    """One Redis server: its address (``host`` and ``port``, or a unix socket's ``path``),
    the database, the credentials and TLS."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    path: str | None = None
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: TLS | None = None
    connect_timeout: float = CONNECT_SECONDS
    #: The URL's ``max_connections``, if it sets one.
    max_connections: int | None = None

    @property
    def address(self) -> str:
        """The address, to name it in a message (never the password)."""
        return self.path or f"{self.host}:{self.port}"


def parse_url(url: str) -> Endpoint:
    """The endpoint a ``redis://``, ``rediss://`` or ``unix://`` URL names.

    Raises:
        ConfigError: naming what is wrong with it (the password is never shown).
    """
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise ConfigError(f"bad Redis URL: {exc}") from None
    if scheme not in SCHEMES:
        raise ConfigError(f"a Redis URL begins with redis://, rediss:// or unix://, not {scheme!r}")
    found: dict[str, object] = {}
    if parts.username:
        found["username"] = unquote(parts.username)
    if parts.password:
        found["password"] = unquote(parts.password)
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    if scheme == "unix":
        if not parts.path:
            raise ConfigError("a unix:// Redis URL names the socket: unix:///path/to/redis.sock")
        found["path"] = unquote(parts.path)
    else:
        found.update(host=host or "127.0.0.1", port=port or DEFAULT_PORT)
        db = parts.path.strip("/")
        if db:
            options.setdefault("db", db)
    tls = _tls(options) if scheme == "rediss" else None
    found.update(_options(options))
    if tls is None and any(key.startswith("ssl_") for key in options):
        raise ConfigError("ssl_* options of a Redis URL need rediss://")
    return Endpoint(tls=tls, **found)  # type: ignore[arg-type]


def _options(options: dict[str, str]) -> dict[str, object]:
    found: dict[str, object] = {}
    for key, value in options.items():
        if key == "db":
            if not value.isdigit():
                raise ConfigError(f"the database in a Redis URL is a number, not {value!r}")
            found["db"] = int(value)
        elif key in ("username", "password"):
            found[key] = value
        elif key == "socket_connect_timeout":
            found["connect_timeout"] = _seconds(key, value)
        elif key == "max_connections":
            found["max_connections"] = _count(key, value)
        elif not key.startswith("ssl_"):
            raise ConfigError(
                f"unknown option {key!r} in the Redis URL: duetime takes db, username, "
                "password, socket_connect_timeout, max_connections and, with rediss://, "
                "ssl_cert_reqs, "
                "ssl_ca_certs, ssl_ca_path, ssl_certfile, ssl_keyfile, ssl_check_hostname"
            )
    return found


def _tls(options: dict[str, str]) -> TLS:
    found: dict[str, object] = {}
    for key, value in options.items():
        if key == "ssl_cert_reqs":
            if value.lower() not in _CERT_REQS:
                raise ConfigError(f"ssl_cert_reqs is one of {', '.join(_CERT_REQS)}, not {value!r}")
            found["cert_reqs"] = value.lower()
        elif key == "ssl_check_hostname":
            if value.lower() not in (*_TRUE, *_FALSE):
                raise ConfigError(f"ssl_check_hostname is true or false, not {value!r}")
            found["check_hostname"] = value.lower() in _TRUE
        elif key in ("ssl_ca_certs", "ssl_ca_path", "ssl_certfile", "ssl_keyfile"):
            found[key.removeprefix("ssl_")] = value
        elif key.startswith("ssl_"):
            raise ConfigError(f"unknown TLS option {key!r} in the Redis URL")
    return TLS(**found)  # type: ignore[arg-type]


#: The most connections a URL may ask one client for: Redis' own default maxclients.
MAX_CONNECTIONS_LIMIT = 10_000


def _count(key: str, value: str) -> int:
    count = int(value) if value.isdigit() else 0
    if not 0 < count <= MAX_CONNECTIONS_LIMIT:
        raise ConfigError(
            f"{key} is a whole number from 1 to {MAX_CONNECTIONS_LIMIT:,}, not {value!r}"
        )
    return count


def _seconds(key: str, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 3600:
        raise ConfigError(f"{key} is a number of seconds over 0, not {value!r}")
    return seconds
