"""``duetime dashboard``: serve the dashboard with uvicorn, with the rules of where it
listens (:class:`~duetime.web.guard.Access`)."""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable, Iterable

import uvicorn

from duetime.app import App
from duetime.errors import ConfigError
from duetime.web import create_app, new_token
from duetime.web.guard import Access, host_patterns, is_loopback

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787


class CannotListen(Exception):
    """The dashboard cannot listen where it was asked to (a port in use): one line that
    says so, and what to change."""


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host`` and ``port``, to hand to uvicorn: bound before
    anything is printed, so that a port in use is said at once, and not after a login link
    that leads to another program.

    Raises:
        CannotListen: the port is in use, or the host or port cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # As uvicorn binds: a dashboard restarted at once reuses its port, whose old
    # connections may linger in TIME_WAIT; a port another process listens on still fails.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen()  # the link printed next answers at once (uvicorn accepts later)
    except OSError as exc:
        sock.close()
        raise CannotListen(_why(exc, host, port)) from None
    sock.set_inheritable(True)
    return sock


def _why(exc: OSError, host: str, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is in use: pick another with --port"
    if exc.errno == errno.EACCES:
        return f"cannot listen on port {port}: permission denied: pick another with --port"
    reason = exc.strerror or str(exc)
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}: {reason}: pick another with --host"
    return f"cannot listen on {host} port {port}: {reason}"


def access_for(
    host: str, token: str | None, read_only: bool, allowed_hosts: Iterable[str] = ()
) -> tuple[Access, str | None]:
    """The rules for a dashboard listening on ``host`` and answering requests that name
    ``allowed_hosts`` as well as loopback, and the token to print (a new one when none was
    given and changes are allowed).

    Raises:
        ConfigError: ``host`` is not loopback and no token was given: the dashboard would
            show every payload to the network.
        ValidationError: a bad entry in ``allowed_hosts``.
    """
    allowed = host_patterns(allowed_hosts)
    loopback = is_loopback(host)
    if not loopback and not token:
        raise ConfigError(
            f"refusing to serve the dashboard on {host!r} without a token: anyone who can "
            "reach it would read every task. Give --token (or DUETIME_DASHBOARD_TOKEN), or "
            "listen on 127.0.0.1"
        )
    if token is None and not read_only:
        token = new_token()
    access = Access(
        token=token,
        read_only=read_only,
        reads_need_token=not loopback,
        loopback_only=loopback,
        allowed_hosts=allowed,
    )
    return access, token


def serve(
    app: App,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    read_only: bool = False,
    allowed_hosts: Iterable[str] = (),
    say: Callable[[str], None] = print,
) -> None:
    """Serve ``app``'s dashboard until interrupted, saying where and with which token.

    Raises:
        ConfigError: see :func:`access_for`. CannotListen: see :func:`listen`; both before
            anything is said.
    """
    access, token = access_for(host, token, read_only, allowed_hosts)
    sock = listen(host, port)
    try:
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        base = f"http://{shown}:{port}"
        if token is None:
            say(f"duetime dashboard (read-only) on {base}/")
        else:
            mode = " (read-only)" if read_only else ""
            say(f"duetime dashboard{mode} on {base}/ ; log in at {base}/login?token={token}")
        dashboard = create_app(app, access=access, close_app=True)
        config = uvicorn.Config(dashboard, log_level="warning", lifespan="on")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
