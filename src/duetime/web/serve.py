"""``duetime dashboard``: serve the dashboard with uvicorn, with the rules of where it
listens (:class:`~duetime.web.guard.Access`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import uvicorn

from duetime.app import App
from duetime.errors import ConfigError
from duetime.web import create_app, new_token
from duetime.web.guard import Access, host_patterns, is_loopback

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787


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
    """Serve ``app``'s dashboard until interrupted, saying where and with which token."""
    access, token = access_for(host, token, read_only, allowed_hosts)
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    if token is None:
        say(f"duetime dashboard (read-only) on {base}/")
    else:
        mode = " (read-only)" if read_only else ""
        say(f"duetime dashboard{mode} on {base}/ ; log in at {base}/login?token={token}")
    dashboard = create_app(app, access=access, close_app=True)
    uvicorn.run(dashboard, host=host, port=port, log_level="warning", lifespan="on")
