"""Where a Redis server is and how to talk to it: the ``redis://``, ``rediss://`` and
``unix://`` URLs, read into an :class:`Endpoint`.

    redis://[[user]:password@]host[:port][/db][?option=value&...]
    rediss://...                    the same over TLS
    unix://[[user]:password@]/path/to/redis.sock[?db=N&...]

The options: ``db``, ``username``, ``password``, ``socket_connect_timeout`` (seconds),
``max_connections`` (the most a client opens at once: :mod:`.client`), and
for TLS ``ssl_cert_reqs`` (``required``, the default, ``optional`` or ``none``),
``ssl_ca_certs``, ``ssl_ca_path``, ``ssl_certfile``, ``ssl_keyfile`` and
``ssl_check_hostname`` (``true`` by default). Any other option is refused, by name,
rather than left unused. :func:`read_options` reads them for every kind of Redis URL (a
Sentinel's and a Cluster's too).
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
    found: dict[str, object] = userinfo(parts.username, parts.password)
    options = query(parts.query)
    if scheme == "unix":
        if not parts.path:
            raise ConfigError("a unix:// Redis URL names the socket: unix:///path/to/redis.sock")
        found["path"] = unquote(parts.path)
    else:
        found.update(host=host or "127.0.0.1", port=port or DEFAULT_PORT)
        db = parts.path.strip("/")
        if db:
            options.setdefault("db", db)
    found.update(read_options(options, tls=scheme == "rediss"))
    return Endpoint(**found)  # type: ignore[arg-type]


def userinfo(username: str | None, password: str | None) -> dict[str, object]:
    """The credentials before a URL's ``@``, as Endpoint fields."""
    found: dict[str, object] = {}
    if username:
        found["username"] = unquote(username)
    if password:
        found["password"] = unquote(password)
    return found


def query(text: str) -> dict[str, str]:
    """A URL's query as options (the last value of a repeated one)."""
    return dict(parse_qsl(text, keep_blank_values=True))


#: The options of every Redis URL (a Cluster's take no ``db`` but 0), then TLS's.
OPTIONS = ("db", "username", "password", "socket_connect_timeout", "max_connections")
TLS_OPTIONS = (
    "ssl_cert_reqs",
    "ssl_ca_certs",
    "ssl_ca_path",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_check_hostname",
)


def read_options(
    options: dict[str, str],
    *,
    tls: bool,
    allowed: tuple[str, ...] = OPTIONS,
    prefix: str = "",
    tls_needs: str = "rediss://",
    others: str = "",
) -> dict[str, object]:
    """The Endpoint fields that a URL's ``options`` give (``tls``: TLS on, with the ssl_*
    options; ``prefix``, which every option here starts with, as ``sentinel_``; ``others``,
    the URL's other options, for the message): the one reader of every kind of Redis URL's
    options (:mod:`..topology`, :mod:`..sentinel`).

    Raises:
        ConfigError: an option unknown, refused where it is, or of a bad value, by name.
    """
    found: dict[str, object] = {}
    plain = {key.removeprefix(prefix): value for key, value in options.items()}
    for key, value in plain.items():
        if key == "db" and key in allowed:
            if not value.isdigit():
                raise ConfigError(f"the database in a Redis URL is a number, not {value!r}")
            found["db"] = int(value)
        elif key in ("username", "password") and key in allowed:
            found[key] = value
        elif key == "socket_connect_timeout" and key in allowed:
            found["connect_timeout"] = _seconds(prefix + key, value)
        elif key == "max_connections" and key in allowed:
            found["max_connections"] = _count(prefix + key, value)
        elif key.startswith("ssl_"):
            if not tls:
                raise ConfigError(f"{prefix}ssl_* options of a Redis URL need {tls_needs}")
        else:
            names = ", ".join(prefix + name for name in (*allowed, *TLS_OPTIONS))
            raise ConfigError(
                f"unknown option {prefix + key!r} in the Redis URL: duetime takes {names} "
                f"(the {prefix}ssl_* ones with {tls_needs}){others}"
            )
    if tls:
        found["tls"] = _tls(plain, prefix)
    return found


def _tls(options: dict[str, str], prefix: str) -> TLS:
    found: dict[str, object] = {}
    for key, value in options.items():
        if key == "ssl_cert_reqs":
            if value.lower() not in _CERT_REQS:
                choices = ", ".join(_CERT_REQS)
                raise ConfigError(f"{prefix}ssl_cert_reqs is one of {choices}, not {value!r}")
            found["cert_reqs"] = value.lower()
        elif key == "ssl_check_hostname":
            found["check_hostname"] = flag(prefix + key, value)
        elif key in ("ssl_ca_certs", "ssl_ca_path", "ssl_certfile", "ssl_keyfile"):
            found[key.removeprefix("ssl_")] = value
        elif key.startswith("ssl_"):
            raise ConfigError(f"unknown TLS option {prefix + key!r} in the Redis URL")
    return TLS(**found)  # type: ignore[arg-type]


def flag(key: str, value: str) -> bool:
    """An option that is on or off."""
    if value.lower() not in (*_TRUE, *_FALSE):
        raise ConfigError(f"{key} is true or false, not {value!r}")
    return value.lower() in _TRUE


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
